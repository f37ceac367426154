// smoke/pkg/npm_check_bun.ts VERSION — mentat-sqlite from an installed tarball in Bun's
// bun:sqlite (TypeScript, run by Bun directly). Prints PASS/FAIL lines.
import { Database } from 'bun:sqlite';
import { load } from 'mentat-sqlite';

const want = process.argv[2];
let bad = 0;
function check(name: string, got: unknown, exp: unknown) {
  const ok = JSON.stringify(got) === JSON.stringify(exp);
  if (!ok) bad++;
  console.log((ok ? 'PASS ' : 'FAIL ') + name + (ok ? '' : ': got ' + JSON.stringify(got) + ', want ' + JSON.stringify(exp)));
}
const db = new Database(':memory:');
load(db);
const v = db.query("SELECT mentat_version('json') AS v").get() as { v: string };
check('bun:sqlite mentat_version', JSON.parse(v.v).version, want);
const r = db.query("SELECT edn_q('', '[:find ?x . :in ?x]', '{\"inputs\":[7]}') AS r").get() as { r: string };
check('bun:sqlite edn_q', r.r, '{"result":7}');
process.exit(bad ? 1 : 0);
