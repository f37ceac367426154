'use strict';
// smoke/pkg/npm_check.cjs VERSION — mentat-sqlite from an installed tarball, through
// CommonJS require, in better-sqlite3 12 and libsql. Prints PASS/FAIL lines.
const path = require('path');
const mentat = require('mentat-sqlite');
const want = process.argv[2];
let bad = 0;
function check(name, got, exp) {
  const ok = JSON.stringify(got) === JSON.stringify(exp);
  if (!ok) bad++;
  console.log((ok ? 'PASS ' : 'FAIL ') + name + (ok ? '' : ': got ' + JSON.stringify(got) + ', want ' + JSON.stringify(exp)));
}
const p = mentat.getLoadablePath();
check('cjs getLoadablePath', path.relative(process.cwd(), p), path.join('node_modules', 'mentat-sqlite-linux-x64', 'lib', 'libmentat_sqlite.so'));
for (const host of ['better-sqlite3', 'libsql']) {
  const Database = require(host);
  const db = new Database(':memory:');
  mentat.load(db);
  check(host + ' mentat_version', JSON.parse(db.prepare("SELECT mentat_version('json') AS v").get().v).version, want);
  check(host + ' edn_q', db.prepare("SELECT edn_q('', '[:find ?x . :in ?x]', '{\"inputs\":[7]}') AS r").get().r, '{"result":7}');
}
process.exit(bad ? 1 : 0);
