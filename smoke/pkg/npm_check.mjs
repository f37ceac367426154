// smoke/pkg/npm_check.mjs VERSION — mentat-sqlite from an installed tarball, through an ES
// module import, in Node 22's node:sqlite. Prints PASS/FAIL lines.
import { DatabaseSync } from 'node:sqlite';
import { load, getLoadablePath } from 'mentat-sqlite';
import mentat from 'mentat-sqlite';

const want = process.argv[2];
let bad = 0;
function check(name, got, exp) {
  const ok = JSON.stringify(got) === JSON.stringify(exp);
  if (!ok) bad++;
  console.log((ok ? 'PASS ' : 'FAIL ') + name + (ok ? '' : ': got ' + JSON.stringify(got) + ', want ' + JSON.stringify(exp)));
}
check('esm default export', mentat.getLoadablePath(), getLoadablePath());
const db = new DatabaseSync(':memory:', { allowExtension: true });
load(db);
check('node:sqlite mentat_version', JSON.parse(db.prepare("SELECT mentat_version('json') AS v").get().v).version, want);
check('node:sqlite edn_q', db.prepare("SELECT edn_q('', '[:find ?x . :in ?x]', '{\"inputs\":[7]}') AS r").get().r, '{"result":7}');
process.exit(bad ? 1 : 0);
