'use strict';
/*
 * smoke/node/node.js — the built extension in Node through better-sqlite3 12.
 *
 * Core checks of the SQL surface (SPEC §2): schema and data through edn_t,
 * the edn_q table and the scalar JSON document, a join with a host table,
 * pull, and errors reaching JavaScript as exceptions with the function's
 * text. Then what this host adds (peer faults in ../shared/acceptance):
 *   B29  db.loadExtension twice with an edn_q iterator open in between.
 *        better-sqlite3 itself refuses any loadExtension while an iterator
 *        is open (TypeError "This database connection is busy executing a
 *        query", src/util/macros.cpp REQUIRE_DATABASE_NO_ITERATORS), so the
 *        second load fails clearly before SQLite sees it; the iterator must
 *        go on undisturbed and a load after it closes must succeed.
 *   B31  the four longs through `SELECT c0, typeof(c0) FROM edn_q(...)`:
 *        with .safeIntegers(true) exact BigInts; without it better-sqlite3
 *        hands every INTEGER to JS as sqlite3_column_double (no error), so
 *        the values are the nearest doubles: 2^31 stays exact, 2^53+1
 *        becomes 2^53, 2^63-1 becomes 2^63, -2^63 stays exact. Doubles come
 *        back REAL with the infinities and the smallest subnormal exact;
 *        NaN is refused.
 * Expected values are worked out by hand from the data below.
 *
 * Usage: node smoke/node/node.js /abs/path/libmentat_sqlite.so
 * (better-sqlite3 must be resolvable: NODE_PATH=<dir>/node_modules, see
 * smoke/node/run.sh). Prints one PASS/FAIL line per check and ends with
 * 'N passed, M failed'; exits 1 on any failure.
 */
const fs = require('fs');
const os = require('os');
const path = require('path');
const assert = require('assert');

let Database;
try {
  Database = require('better-sqlite3');
} catch (e) {
  console.log('FAIL better-sqlite3 is not installed (' + e.message.split('\n')[0] + ')');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const results = [];

function show(v) {
  return JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? x.toString() + 'n'
    : x === Infinity ? 'Infinity' : x === -Infinity ? '-Infinity' : x));
}

function check(name, got, want) {
  let ok = true;
  try {
    assert.deepStrictEqual(got, want);
  } catch (e) {
    ok = false;
  }
  results.push(ok);
  console.log((ok ? 'PASS ' : 'FAIL ') + name + (ok ? '' : ': got ' + show(got) + ', want ' + show(want)));
}

// checkThrows: fn must throw an Error whose message is exactly want.
function checkThrows(name, fn, want) {
  let got = 'no error';
  try {
    fn();
  } catch (e) {
    got = String(e && e.message);
  }
  const ok = got === want;
  results.push(ok);
  console.log((ok ? 'PASS ' : 'FAIL ') + name + (ok ? '' : ': got ' + show(got) + ', want ' + show(want)));
}

// guard: a check that threw unexpectedly counts as one failure, and the
// rest of the run goes on.
function guard(name, fn) {
  try {
    fn();
  } catch (e) {
    results.push(false);
    console.log('FAIL ' + name + ': threw ' + show(String(e && e.message)));
  }
}

const S = `[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
 {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
 {:db/ident :p/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]`;
const T1 = `[{:db/id "ann" :p/name "Ann" :p/age 30}
 {:db/id "bob" :p/name "Bob" :p/age 25 :p/friend ["ann"]}
 {:db/id "cy" :p/name "Cy" :p/age 41 :p/friend ["ann" "bob"]}]`;
const QNA = '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]]';

function connect(ext) {
  const db = new Database(':memory:');
  db.loadExtension(ext);
  return db;
}

function core(db, store) {
  let ann = -1;
  guard('core', () => {
    const r1 = JSON.parse(db.prepare('SELECT edn_t(?, ?)').pluck().get(store, S));
    check('tx schema id', r1.tx_id, 268435457);
    const r2 = JSON.parse(db.prepare('SELECT edn_t(?, ?)').pluck().get(store, T1));
    check('tx data tempids', Object.keys(r2.tempids).sort(), ['ann', 'bob', 'cy']);
    check('tx report shape', [r2.tx_id, /^\d{4}-\d\d-\d\dT.*Z$/.test(r2.tx_instant)], [268435458, true]);
    ann = r2.tempids.ann;
    const rows = db.prepare('SELECT c0, c1, value FROM edn_q(?, ?) ORDER BY c0').all(store, QNA);
    check('table rows', rows, [
      { c0: 'Ann', c1: 30, value: '["Ann",30]' },
      { c0: 'Bob', c1: 25, value: '["Bob",25]' },
      { c0: 'Cy', c1: 41, value: '["Cy",41]' }]);
    const types = db.prepare('SELECT typeof(c0), typeof(c1), c2 IS NULL, c15 IS NULL FROM edn_q(?, ?) LIMIT 1')
      .raw().get(store, QNA);
    check('table column types', types, ['text', 'integer', 1, 1]);
    const doc = JSON.parse(db.prepare('SELECT edn_q(?, ?, ?)').pluck().get(store,
      '[:find ?a . :in $ ?n :where [?e :p/name ?n] [?e :p/age ?a]]', JSON.stringify({ inputs: ['Bob'] })));
    check('scalar document', doc, { result: 25 });
    const rel = JSON.parse(db.prepare('SELECT edn_q(?, ?)').pluck().get(store, QNA));
    check('relation document', [rel.columns, rel.results.slice().sort(), show(rel.results) === show(rel.result)],
      [['?n', '?a'], [['Ann', 30], ['Bob', 25], ['Cy', 41]], true]);
    check('count document', JSON.parse(db.prepare('SELECT edn_q(?, ?)').pluck()
      .get(store, '[:find (count ?e) :where [?e :p/name _]]')), { result: 3 });
    check('JSON subtype nests', db.prepare("SELECT json_type(json_object('r', edn_q(?, ?)), '$.r')").pluck()
      .get(store, '[:find ?a . :where [?e :p/name "Ann"] [?e :p/age ?a]]'), 'object');
    // friends of Cy: Ann and Bob (hand-worked from T1).
    check('ref join in Datalog', db.prepare('SELECT c0 FROM edn_q(?, ?) ORDER BY c0').pluck().all(store,
      '[:find ?fn :where [?c :p/name "Cy"] [?c :p/friend ?f] [?f :p/name ?fn]]'), ['Ann', 'Bob']);
    // better-sqlite3 binds every JS Number with sqlite3_bind_double, so an
    // entid passed as a Number arrives as REAL, which SPEC §2.2 refuses;
    // a BigInt binds as INTEGER.
    checkThrows('pull with a Number entid (bound as REAL)', () => db.prepare('SELECT edn_pull(?, ?, ?)')
      .get(store, '[:p/name]', ann), 'edn_pull: entity must be an INTEGER entity id, or TEXT holding a lookup ref or ident');
    const p = JSON.parse(db.prepare('SELECT edn_pull(?, ?, ?)').pluck().get(store, '[:p/name :p/age]', BigInt(ann)));
    check('pull with a BigInt entid', p, { ':p/name': 'Ann', ':p/age': 30, ':db/id': ann });

    // A join with a host table, and the correlated form (one query per row).
    db.exec("CREATE TEMP TABLE want(name TEXT, note TEXT); INSERT INTO want VALUES ('Ann','x'),('Cy','y'),('Zed','z')");
    check('join with a host table', db.prepare(`SELECT w.note, q.c1 FROM want w JOIN edn_q(?, ?) q
        ON q.c0 = w.name ORDER BY w.name`).raw().all(store, QNA), [['x', 30], ['y', 41]]);
    check('correlated LEFT JOIN with inputs', db.prepare(`SELECT w.name, r.c0 FROM want w LEFT JOIN
        edn_q(?, '[:find ?a . :in $ ?n :where [?e :p/name ?n] [?e :p/age ?a]]',
              json_object('inputs', json_array(w.name))) r ORDER BY w.name`).raw().all(store),
    [['Ann', 30], ['Cy', 41], ['Zed', null]]);

    check('int64 through opts', db.prepare('SELECT c0 FROM edn_q(?, ?, ?)').safeIntegers(true).pluck().get(store,
      '[:find ?x . :in $ ?x :where [_ :p/name _]]', '{"inputs":[9007199254740993]}'), 9007199254740993n);
    check('NULL argument gives NULL', db.prepare('SELECT edn_t(NULL, ?)').pluck().get('[]'), null);

    checkThrows('unknown attribute', () => db.prepare('SELECT edn_t(?, ?)').get(store, '[{:p/nmae "X"}]'),
      'edn_t: line 1 col 3: unknown attribute :p/nmae');
    checkThrows('unknown option', () => db.prepare('SELECT * FROM edn_q(?, ?, ?)').all(store,
      '[:find ?n :where [_ :p/name ?n]]', '{"limit":1}'), 'edn_q: unknown option "limit"');
    checkThrows('missing query', () => db.prepare('SELECT * FROM edn_q WHERE db_path = ?').all(store),
      'edn_q: missing argument query');
    checkThrows('unbound find variable', () => db.prepare('SELECT * FROM edn_q(?, ?)').all(store,
      '[:find ?x :where [?e :p/name ?n]]'), 'edn_q: line 1 col 8: unbound variable ?x in :find');
    checkThrows('pull entity type', () => db.prepare('SELECT edn_pull(?, ?, ?)').get(store, '[*]', 'x'),
      'edn_pull: entity: line 1 col 1: x is not a lookup ref [:attr value] or an ident');
    checkThrows('failed tx is an SqliteError', () => {
      try {
        db.prepare('SELECT edn_t(?, ?)').get(store, '[{:p/name "Eve" :p/age "old"}]');
      } catch (e) {
        throw new Error(e.constructor.name + ': ' + e.message);
      }
    }, 'SqliteError: edn_t: line 1 col 24: :p/age: expected :db.type/long, got a string');
    check('failed tx stored nothing', db.prepare('SELECT count(*) FROM edn_q(?, ?)').pluck()
      .get(store, '[:find ?e :where [?e :p/name "Eve"]]'), 0);
  });
  return ann;
}

// B29: a second loadExtension while an edn_q iterator is open.
function loadTwice(ext, store) {
  guard('load twice', () => {
    const db = connect(ext);
    const it = db.prepare('SELECT c0 FROM edn_q(?, ?) ORDER BY c0').pluck().iterate(store,
      '[:find ?n :where [_ :p/name ?n]]');
    const first = it.next().value;
    let second = 'ok';
    try {
      db.loadExtension(ext);
    } catch (e) {
      second = e.constructor.name + ': ' + e.message;
    }
    check('second load with an open iterator fails clearly',
      second, 'TypeError: This database connection is busy executing a query');
    const rest = [...it];
    check('open iterator undisturbed', [first, ...rest], ['Ann', 'Bob', 'Cy']);
    let third = 'ok';
    try {
      db.loadExtension(ext);
    } catch (e) {
      third = e.message;
    }
    check('second load after the iterator closed', third, 'ok');
    check('functions work after the second load', db.prepare('SELECT count(*) FROM edn_q(?, ?)').pluck()
      .get(store, '[:find ?n :where [_ :p/name ?n]]'), 3);
    // The iterator's store connection went back to the pool: writing works.
    check('write after the iterator', Object.keys(JSON.parse(db.prepare('SELECT edn_t(?, ?)').pluck()
      .get(store, '[{:db/id "d" :p/name "Dee"}]')).tempids), ['d']);
    // Loading on a second connection is independent of the first.
    const db2 = connect(ext);
    check('second connection sees the store', db2.prepare('SELECT count(*) FROM edn_q(?, ?)').pluck()
      .get(store, '[:find ?n :where [_ :p/name ?n]]'), 4);
    db2.close();
    db.close();
  });
}

// B31: 64-bit integers and doubles through result columns.
function numbers(db, store) {
  guard('numbers', () => {
    db.prepare('SELECT edn_t(?, ?)').get(store, `[
      {:db/ident :m/i :db/valueType :db.type/long :db/cardinality :db.cardinality/many}
      {:db/ident :m/d :db/valueType :db.type/double :db/cardinality :db.cardinality/many}]`);
    db.prepare('SELECT edn_t(?, ?)').get(store, `[{:db/id "a"
      :m/i [2147483648 9007199254740993 9223372036854775807 -9223372036854775808]
      :m/d [-0.0 1e308 ##Inf ##-Inf 5e-324]}]`);
    const qi = [store, '[:find ?v :where [_ :m/i ?v]]'];
    const safe = db.prepare('SELECT c0, typeof(c0) FROM edn_q(?, ?) ORDER BY c0').raw().safeIntegers(true).all(...qi);
    check('longs exact as BigInt (safeIntegers)', safe, [
      [-9223372036854775808n, 'integer'], [2147483648n, 'integer'],
      [9007199254740993n, 'integer'], [9223372036854775807n, 'integer']]);
    // Without safe integers better-sqlite3 converts with sqlite3_column_double:
    // no error, nearest double (2^53+1 -> 2^53, 2^63-1 -> 2^63).
    const lossy = db.prepare('SELECT c0, typeof(c0) FROM edn_q(?, ?) ORDER BY c0').raw().all(...qi);
    check('longs without safeIntegers are the nearest doubles', lossy, [
      [-(2 ** 63), 'integer'], [2 ** 31, 'integer'], [2 ** 53, 'integer'], [2 ** 63, 'integer']]);
    // The text form keeps every digit either way (a relation row is an array).
    check('longs exact through value text', db.prepare('SELECT value FROM edn_q(?, ?) ORDER BY c0').pluck().all(...qi),
      ['[-9223372036854775808]', '[2147483648]', '[9007199254740993]', '[9223372036854775807]']);
    check('longs exact through the scalar JSON', JSON.parse(db.prepare('SELECT edn_q(?, ?)').pluck()
      .get(store, '[:find (max ?v) :where [_ :m/i ?v]]').replace(/(-?\d{16,})/g, '"$1"')), { result: '9223372036854775807' });

    const d = db.prepare('SELECT c0, typeof(c0) FROM edn_q(?, ?) ORDER BY c0').raw()
      .all(store, '[:find ?v :where [_ :m/d ?v]]');
    // -0.0 and 0.0 are one value; either sign reads as zero.
    check('doubles REAL, infinities and subnormal exact', d.map(([v, t]) => [v === 0 ? 0 : v, t]), [
      [-Infinity, 'real'], [0, 'real'], [5e-324, 'real'], [1e308, 'real'], [Infinity, 'real']]);
    checkThrows('NaN refused', () => db.prepare('SELECT edn_t(?, ?)').get(store, '[{:m/d ##NaN}]'),
      'edn_t: line 1 col 8: :m/d: NaN cannot be stored');
    check('NaN: nothing stored', db.prepare('SELECT count(*) FROM edn_q(?, ?)').pluck()
      .get(store, '[:find ?v :where [_ :m/d ?v]]'), 5);
  });
}

function main() {
  let ext = process.argv[2];
  if (!ext) {
    console.log('usage: node node.js /abs/path/libmentat_sqlite.so');
    process.exit(2);
  }
  ext = path.resolve(ext).replace(/\.so$/, '');
  const version = require('better-sqlite3/package.json').version;
  const probe = new Database(':memory:');
  console.log('host=better-sqlite3 ' + version + ' sqlite ' + probe.prepare('SELECT sqlite_version()').pluck().get() +
    ' node ' + process.version);
  probe.close();
  // 13.x crashes on Node 20; package.json pins 12.
  check('better-sqlite3 major version', version.split('.')[0], '12');
  let db;
  try {
    db = connect(ext);
  } catch (e) {
    check('load the extension', e.message, 'ok');
    db = null;
  }
  if (db) {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mentat-node.'));
    try {
      const store = path.join(tmp, 'store.db');
      core(db, store);
      loadTwice(ext, store);
      numbers(db, path.join(tmp, 'numbers.db'));
      db.close();
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  const passed = results.filter(Boolean).length;
  console.log(passed + ' passed, ' + (results.length - passed) + ' failed');
  process.exit(passed === results.length && passed > 0 ? 0 : 1);
}

main();
