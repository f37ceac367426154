// ds.js — the query scenarios of BENCH.md on DataScript (npm `datascript`, in memory) in Node,
// the engine a JavaScript user would otherwise pick, on the data bench/gen.py generated.
//
// Usage: node bench/ds.js DATADIR OUT.json   (NODE_PATH must reach the datascript package)
//
// HOW IT WORKS: reads DATADIR/ds.json (gen.py's JSON copy of the load: no EDN parsing here),
// transacts the same txs as the loader (users+labels in txs of 2,000 entities, issues in txs
// of 500 with lookup refs, then the history txs), checks a few answers against expect.json,
// then times each scenario as run.py does: warm-up 3 calls, each repetition at least 30
// samples and 2 s (BENCH_CAP seconds stops a repetition at 5 samples or more), median of 3
// repetitions by p50, nearest-rank percentiles. Inputs come from a fixed-seed generator.
// DataScript keeps no history, so as_of and since are reported as n/a. Attributes in the
// JS API are strings ("user/email"), so the queries name them as strings; states are stored
// as the keyword text (":state/open") as the JSON columns of edn_q show them.
'use strict';
const fs = require('fs');
const path = require('path');
const d = require('datascript');

const dataDir = process.argv[2];
const outPath = process.argv[3];
const quick = process.argv.includes('--quick');
const cap = parseFloat(process.env.BENCH_CAP || '20');
const src = JSON.parse(fs.readFileSync(path.join(dataDir, 'ds.json'), 'utf8'));
const exp = JSON.parse(fs.readFileSync(path.join(dataDir, 'expect.json'), 'utf8'));

const schema = {
  'user/email': {':db/unique': ':db.unique/identity'},
  'label/name': {':db/unique': ':db.unique/identity'},
  'issue/state': {':db/index': true},
  'issue/priority': {':db/index': true},
  'issue/assignee': {':db/valueType': ':db.type/ref', ':db/index': true},
  'issue/reporter': {':db/valueType': ':db.type/ref', ':db/index': true},
  'issue/label': {':db/valueType': ':db.type/ref', ':db/cardinality': ':db.cardinality/many'},
};

function now() { return Number(process.hrtime.bigint()) / 1e6; }

function pct(xs, p) {
  const s = xs.slice().sort((a, b) => a - b);
  const k = Math.max(0, Math.min(s.length - 1, Math.ceil(p * s.length / 100) - 1));
  return s[k];
}

// Deterministic PRNG (mulberry32) for the inputs.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- load ----
const conn = d.create_conn(schema);
const t0 = now();
let ents = [];
for (let u = 0; u < src.users; u++) {
  ents.push({':db/id': 'u' + u, 'user/email': 'user' + u + '@example.com', 'user/name': 'User ' + u});
}
for (let l = 0; l < src.labels; l++) ents.push({':db/id': 'l' + l, 'label/name': 'label-' + l});
for (let i = 0; i < ents.length; i += 2000) d.transact(conn, ents.slice(i, i + 2000));
const issueEid = new Array(src.issues.length);
let datoms = ents.length * 2 - src.labels;
for (let i = 0; i < src.issues.length; i += 500) {
  const batch = src.issues.slice(i, i + 500).map(([n, title, state, prio, a, r, labels, created]) => {
    const m = {':db/id': 'i' + n, 'issue/title': title, 'issue/state': state, 'issue/priority': prio,
      'issue/assignee': ['user/email', 'user' + a + '@example.com'],
      'issue/reporter': ['user/email', 'user' + r + '@example.com'], 'issue/created-at': new Date(created)};
    if (labels.length) m['issue/label'] = labels.map((l) => ['label/name', 'label-' + l]);
    datoms += 6 + labels.length;
    return m;
  });
  const rep = d.transact(conn, batch);
  for (const [n] of src.issues.slice(i, i + 500)) issueEid[n] = rep.tempids['i' + n];
}
const loadMs = now() - t0;
for (const h of src.history) {
  d.transact(conn, h.map(([n, s]) => [':db/add', issueEid[n], 'issue/state', s]));
}
const db = d.db(conn);

// ---- queries ----
const PL = '[:find ?e ?name :in $ ?email :where [?e "user/email" ?email] [?e "user/name" ?name]]';
const RT = '[:find ?i ?title ?state :in $ ?email :where [?u "user/email" ?email] [?i "issue/assignee" ?u] ' +
  '[?i "issue/title" ?title] [?i "issue/state" ?state]]';
const AG = '[:find ?state (count ?i) :where [?i "issue/state" ?state]]';
const PS = '[:find ?i ?title ?priority :in $ ?min :where [?i "issue/state" ":state/open"] ' +
  '[?i "issue/priority" ?priority] [?i "issue/title" ?title] [(>= ?priority ?min)]]';
const IB = '[:find ?e ?name :in $ [?email ...] :where [?e "user/email" ?email] [?e "user/name" ?name]]';
const PULLQ = '[:find (pull ?e [*]) . :in $ ?e]';

// ---- checks (the same facts run.py checks, on the generator's final states) ----
const bad = [];
for (const u of [0, exp.users >> 1, exp.users - 1]) {
  const r = d.q(PL, db, 'user' + u + '@example.com');
  if (r.length !== 1 || r[0][1] !== 'User ' + u) bad.push('point_lookup user ' + u);
}
const ag = Object.fromEntries(d.q(AG, db));
for (const [s, c] of Object.entries(exp.per_state)) if (ag[s] !== c) bad.push('aggregate ' + s);
if (d.q(PS, db, 4).length !== exp.open_prio_ge4) bad.push('predicate_scan count');
const rt0 = d.q(RT, db, 'user0@example.com');
const want0 = exp.assignee.filter((a) => a === 0).length;
if (rt0.length !== want0) bad.push('ref_traversal user 0: ' + rt0.length + ' want ' + want0);
const p0 = d.pull(db, '["*"]', issueEid[0]);
if (p0['issue/state'] !== exp.final_state[0] || !p0['issue/title'] || !p0['issue/priority']) bad.push('pull');

// ---- timing ----
const rnd = rng(7);
const email = () => 'user' + Math.floor(rnd() * exp.users) + '@example.com';
const scen = {
  point_lookup: [email, (x) => d.q(PL, db, x), null],
  ref_traversal: [email, (x) => d.q(RT, db, x), null],
  aggregate: [() => null, () => d.q(AG, db), null],
  predicate_scan: [() => 4, (x) => d.q(PS, db, x), null],
  input_bindings: [() => Array.from({length: 100}, email), (x) => d.q(IB, db, x), null],
  pull: [() => issueEid[Math.floor(rnd() * issueEid.length)], (x) => d.pull(db, '["*"]', x),
    (x) => d.q(PULLQ, db, x)],
};
const minSamples = quick ? 10 : 30;
const minSecs = quick ? 0.3 : 2.0;
const results = {};
for (const [name, [gen, fn, fn2]] of Object.entries(scen)) {
  const reps = [];
  for (let r = 0; r < 3; r++) {
    for (let w = 0; w < 3; w++) fn(gen());
    const xs = [];
    const xs2 = [];
    const start = now();
    for (;;) {
      const el = (now() - start) / 1000;
      if (xs.length >= minSamples && el >= minSecs) break;
      if (el >= cap && xs.length >= 5) break;
      const x = gen();
      let a = now();
      fn(x);
      xs.push(now() - a);
      if (fn2) {
        a = now();
        fn2(x);
        xs2.push(now() - a);
      }
    }
    reps.push({p: [pct(xs, 50), pct(xs, 95), pct(xs, 99), xs.length],
      p2: fn2 ? [pct(xs2, 50), pct(xs2, 95), pct(xs2, 99), xs2.length] : null});
  }
  reps.sort((a, b) => a.p[0] - b.p[0]);
  results[name] = reps[1].p;
  if (fn2) {
    const r2 = reps.map((r) => r.p2).sort((a, b) => a[0] - b[0]);
    results[name + '_query'] = r2[1];
  }
  console.log(name.padEnd(15) + ' datascript p50 ' + results[name][0].toFixed(4) + ' ms (n=' + results[name][3] + ')');
}
results.as_of = null;
results.since = null;
const out = {engine: 'datascript ' + require('datascript/package.json').version, node: process.version,
  load_ms: loadMs, load_datoms: datoms, load_datoms_per_s: datoms / (loadMs / 1000), scenarios: results,
  checks_failed: bad};
fs.writeFileSync(outPath, JSON.stringify(out, null, 1));
for (const b of bad) console.log('DATASCRIPT CHECK FAILED: ' + b);
process.exit(bad.length ? 1 : 0);
