'use strict';
/*
 * smoke/hosts/host.js HOST SO DB SCRIPT — the hosts script (script.txt) in one of the
 * JavaScript hosts: better-sqlite3 (Node), libsql (Node), node:sqlite (Node 22+), bun:sqlite
 * (Bun). HOST names which. Each loads the extension with its own loadExtension(path).
 */
const fs = require('fs');
const [host, so, dbPath, script] = process.argv.slice(2);

function open() {
  if (host === 'better-sqlite3' || host === 'libsql') {
    const Database = require(host);
    const db = new Database(':memory:');
    db.loadExtension(so);
    return (sql) => db.prepare(sql).raw(true).all();
  }
  if (host === 'node:sqlite') {
    const { DatabaseSync } = require('node:sqlite');
    const db = new DatabaseSync(':memory:', { allowExtension: true });
    db.loadExtension(so);
    return (sql) => db.prepare(sql).all().map((r) => Object.values(r));
  }
  if (host === 'bun:sqlite') {
    const { Database } = require('bun:sqlite');
    const db = new Database(':memory:');
    db.loadExtension(so);
    return (sql) => db.query(sql).values();
  }
  throw new Error('unknown host ' + host);
}

const all = open();
const lit = "'" + dbPath.replace(/'/g, "''") + "'";
for (const line of fs.readFileSync(script, 'utf8').split('\n')) {
  if (line === '' || line.startsWith('#')) continue;
  const tab = line.indexOf('\t');
  const name = line.slice(0, tab);
  try {
    for (const row of all(line.slice(tab + 1).split('@DB@').join(lit))) {
      console.log(name + '=' + row.map(String).join('|'));
    }
  } catch (e) {
    console.log(name + '=ERROR ' + e.message);
  }
}
