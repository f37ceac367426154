"""smoke/hosts/host.py SO DB SCRIPT — the hosts script (script.txt) in Python's sqlite3
(/usr/bin/python3: Debian's build can load extensions). Also run by sqlite-utils' Python."""
import sqlite3
import sys

so, db, script = sys.argv[1:4]
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension(so)
lit = "'" + db.replace("'", "''") + "'"
for line in open(script, encoding="utf-8"):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    name, sql = line.split("\t", 1)
    try:
        for row in con.execute(sql.replace("@DB@", lit)):
            print(name + "=" + "|".join(str(v) for v in row))
    except sqlite3.Error as e:
        print(name + "=ERROR " + str(e))
