<?php
// smoke/hosts/host.php SO DB SCRIPT — the hosts script (script.txt) in PHP's SQLite3 class
// (Debian's php-sqlite3). PHP loads extensions only from sqlite3.extension_dir, so it runs as
// `php -d sqlite3.extension_dir=$(dirname SO) host.php ...` and loads the file by name.
[, $so, $db, $script] = $argv;
$h = new SQLite3(':memory:');
$h->enableExceptions(true);
$h->loadExtension(basename($so));
$lit = "'" . str_replace("'", "''", $db) . "'";
foreach (file($script, FILE_IGNORE_NEW_LINES) as $line) {
    if ($line === '' || $line[0] === '#') continue;
    [$name, $sql] = explode("\t", $line, 2);
    try {
        $r = $h->query(str_replace('@DB@', $lit, $sql));
        while (($row = $r->fetchArray(SQLITE3_NUM)) !== false) echo "$name=", implode('|', $row), "\n";
    } catch (Exception $e) {
        // PHP puts its own words before SQLite's message.
        echo "$name=ERROR ", preg_replace('/^Unable to (prepare|execute) statement: (\d+, )?/', '', $e->getMessage()), "\n";
    }
}
