#!/usr/bin/python3
"""Peer faults: the inputs of ../shared/acceptance/peer-faults.md, each a test.

Each entry Bnn restates a fault another Datalog store or SQLite extension
shipped; the checks assert the right answer stated there (computed by hand
from the entry's data, never from our own output).

Usage: /usr/bin/python3 smoke/peer_faults.py EXTENSION.so [B01 B02 ...]
Prints one line per entry and ends with 'N passed, M failed'.
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import traceback

EXT = None
TMP = tempfile.mkdtemp(prefix='peer-faults.')


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def connect():
    con = sqlite3.connect(':memory:')
    con.enable_load_extension(True)
    con.load_extension(EXT)
    return con


def store(name):
    p = os.path.join(TMP, name + '.db')
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(p + suffix):
            os.unlink(p + suffix)
    return p


def schema(short):
    """`:p/name string one unique-id` lines (peer-faults notation) → EDN."""
    out = []
    for item in short.split('[')[1:]:
        words = item.split(']')[0].split()
        ident, typ = words[0], words[1]
        m = '{:db/ident %s :db/valueType :db.type/%s :db/cardinality :db.cardinality/%s' % (
            ident, typ, 'many' if 'many' in words else 'one')
        if 'unique-id' in words:
            m += ' :db/unique :db.unique/identity'
        if 'unique-val' in words:
            m += ' :db/unique :db.unique/value'
        if 'component' in words:
            m += ' :db/isComponent true'
        out.append(m + '}')
    return '[' + ' '.join(out) + ']'


def tx(con, db, edn):
    return json.loads(con.execute('SELECT edn_t(?, ?)', (db, edn)).fetchone()[0])


def tx_err(con, db, edn, want=None):
    """edn must be refused with an edn_t error: exactly want, when given."""
    try:
        con.execute('SELECT edn_t(?, ?)', (db, edn)).fetchone()
    except sqlite3.Error as e:
        msg = str(e)
        check(msg.startswith('edn_t: '), 'error does not name edn_t: %s' % msg)
        check(want is None or msg == want, 'error %r, want %r' % (msg, want))
        return msg
    raise Fail('transaction was accepted but must be rejected: %s' % edn[:80])


def q(con, db, query, inputs=None, **opts):
    if inputs is not None:
        opts['inputs'] = inputs
    o = json.dumps(opts) if opts else None
    return [tuple(json.loads(r[0]) if isinstance(json.loads(r[0]), list) else [json.loads(r[0])])
            for r in con.execute('SELECT value FROM edn_q(?, ?, ?)', (db, query, o))]


def qset(con, db, query, inputs=None, **opts):
    return set(q(con, db, query, inputs, **opts))


def q_err(con, db, query, inputs=None, want=None):
    """query must be refused with an edn_q error: exactly want, when given."""
    o = json.dumps({'inputs': inputs}) if inputs is not None else None
    try:
        con.execute('SELECT * FROM edn_q(?, ?, ?)', (db, query, o)).fetchall()
    except sqlite3.Error as e:
        check(str(e).startswith('edn_q: '), 'error does not name edn_q: %s' % e)
        check(want is None or str(e) == want, 'error %r, want %r' % (str(e), want))
        return str(e)
    raise Fail('query was accepted but must be rejected: %s' % query)


def raw(db, sql, args=()):
    c = sqlite3.connect(db)
    try:
        return c.execute(sql, args).fetchall()
    finally:
        c.close()


def dump(db):
    """The store's content (datoms, log, partitions) to compare before/after."""
    return (raw(db, 'SELECT e,a,quote(v),tx,value_type_tag FROM datoms ORDER BY 1,2,3,4'),
            raw(db, 'SELECT e,a,quote(v),tx,added FROM timelined_transactions ORDER BY rowid'),
            raw(db, 'SELECT part, idx FROM known_parts ORDER BY part'))


# ---------------------------------------------------------------------------

def B01(con):
    db = store('b01')
    tx(con, db, schema('[:p/name string one] [:p/nick string one] [:p/age long one]'))
    tx(con, db, '''[{:db/id "a", :p/name "x" ; comment to end of line
        #_#_ :p/age 41
        :p/nick #_ #inst "not-a-date" "new",,,}]''')
    check(qset(con, db, '[:find ?n ?k :where [?e :p/name ?n] [?e :p/nick ?k]]') == {('x', 'new')},
          'T1 did not store name/nick')
    check(qset(con, db, '[:find ?e :where [?e :p/age _]]') == set(), 'discarded :p/age was stored')
    before = dump(db)
    tx_err(con, db, '[{:db/id "b" :p/name "y" :p/name "z"}]',
           'edn_t: line 1 col 26: duplicate key :p/name in map')
    check(dump(db) == before, 'T2 changed the store')
    q_err(con, db, '[:find ?x :in $ [?x ...]]', [{'edn': '#{1 1}'}],
          want='edn_q: "inputs" value 1: line 1 col 5: duplicate element 1 in set')
    tx_err(con, db, '[[:db/add "c" :p/name "w" #_]]', 'edn_t: line 1 col 27: #_ with nothing to discard')
    tx_err(con, db, '#_ [[:db/add "d" :p/name "v"]]', 'edn_t: line 1 col 1: no EDN form in input')
    check(dump(db) == before, 'a rejected transaction changed the store')


def B02(con):
    db = store('b02')
    tx(con, db, schema('[:my-app.core/first-name string one] [:a->b/c? long one] [:foo_bar keyword one]'))
    tx(con, db, '[{:db/id "x" :my-app.core/first-name "Ann" :a->b/c? 5 :foo_bar :x.y/z-1}]')
    got = qset(con, db, '[:find ?n ?v ?k :where [?e :my-app.core/first-name ?n] [?e :a->b/c? ?v] [?e :foo_bar ?k]]')
    check(got == {('Ann', 5, ':x.y/z-1')}, 'Q1 got %r' % got)
    # Q4: -1 and +1 are numbers; the rest are symbols, which we refuse as inputs, naming the symbol.
    try:
        rows = qset(con, db, '[:find ?x :in $ [?x ...]]', [{'edn': '[-1 +1 -a +b - + .]'}])
        check((-1,) in rows and (1,) in rows, 'Q4 numbers misread: %r' % rows)
    except sqlite3.Error as e:
        # the binding [?x ...] is column 17; -1 and +1 went through as numbers
        check(str(e) == 'edn_q: line 1 col 17: input 1: unsupported value -a (a symbol)',
              'Q4 error must name the symbol: %s' % e)
    tx_err(con, db, '[{:db/id "y" :foo/ 1}]', 'edn_t: line 1 col 14: invalid keyword :foo/: empty name')
    tx_err(con, db, '[{:db/id "y" :/x 1}]', 'edn_t: line 1 col 14: invalid keyword :/x: empty namespace')


def B03(con):
    db = store('b03')
    tx(con, db, schema('[:n/v long many]'))
    tx(con, db, '[{:db/id "a" :n/v [9223372036854775807 -9223372036854775808 0 -0 +7]}]')
    rows = con.execute("SELECT c0, typeof(c0) FROM edn_q(?, '[:find ?v :where [_ :n/v ?v]]')", (db,)).fetchall()
    check(sorted(rows) == sorted([(9223372036854775807, 'integer'), (-9223372036854775808, 'integer'),
                                  (0, 'integer'), (7, 'integer')]), 'Q1 got %r' % rows)
    before = dump(db)
    # the value is column 19 of each
    for bad, why in (('9223372036854775808', 'integer 9223372036854775808 out of range'),
                     ('-9223372036854775809', 'integer -9223372036854775809 out of range'),
                     ('0644', 'invalid number 0644 (leading zeros are not allowed)'),
                     ('12N', 'arbitrary-precision literal 12N is not supported'),
                     ('1.0', ':n/v: expected :db.type/long, got a double'),
                     ('99999999999999999999999N',
                      'arbitrary-precision literal 99999999999999999999999N is not supported')):
        tx_err(con, db, '[{:db/id "b" :n/v %s}]' % bad, 'edn_t: line 1 col 19: ' + why)
        check(dump(db) == before, 'rejected %s changed the store' % bad)


def B05(con):
    db = store('b05')
    tx(con, db, schema('[:p/name string one] [:p/id string one unique-id]'))
    before = dump(db)
    # "x" and "k" are the first new entity, 65538; :p/name is 65536
    for t, at, datoms in (('[[:db/add "x" :p/name "a"] [:db/add "x" :p/name "b"]]', 41,
                           '[65538 :p/name "a"] and [65538 :p/name "b"]'),
                          ('[{:p/id "k" :p/name "a"} {:p/id "k" :p/name "b"}]', 37,
                           '[65538 :p/name "a"] and [65538 :p/name "b"]'),
                          ('[{:db/ident :p/name :db/doc "one"} {:db/ident :p/name :db/doc "two"}]', 55,
                           '[65536 :db/doc "one"] and [65536 :db/doc "two"]')):
        tx_err(con, db, t, 'edn_t: line 1 col %d: conflicting datoms for a cardinality-one attribute: %s'
               % (at, datoms))
        check(dump(db) == before, 'rejected conflict changed the store: %s' % t)
    r = tx(con, db, '[[:db/add "y" :p/name "same"] [:db/add "y" :p/name "same"] {:db/id "y" :p/name "same"}]')
    y = r['tempids']['y']
    check(qset(con, db, '[:find ?e ?v :where [?e :p/name ?v]]') == {(y, 'same')}, 'T4 result')
    n = raw(db, 'SELECT count(*) FROM datoms WHERE e = ? AND a = (SELECT e FROM idents WHERE v = ?)', (y, ':p/name'))[0][0]
    check(n == 1, 'T4 must write exactly one datom, wrote %d' % n)


def B07(con):
    db = store('b07')
    S = schema('[:p/name string one] [:p/tags string many] [:p/key string one unique-id]')
    tx(con, db, S)
    r1 = tx(con, db, '[{:db/id "e" :p/name "A" :p/tags ["t1"] :p/key "One"}]')
    E = r1['tempids']['e']
    txs = [r1['tx_id']]
    txs.append(tx(con, db, '[[:db/add %d :p/name "A"] [:db/add %d :p/tags "t1"]]' % (E, E))['tx_id'])
    txs.append(tx(con, db, '[[:db/add %d :p/name "B"]]' % E)['tx_id'])
    txs.append(tx(con, db, '[[:db/add %d :p/key "Two"] [:db/retract %d :p/key "One"]]' % (E, E))['tx_id'])
    txs.append(tx(con, db, '[[:db/retract %d :p/name "Nope"] [:db/retract %d :p/tags "zzz"]]' % (E, E))['tx_id'])
    schema_before = raw(db, 'SELECT * FROM schema ORDER BY 1,2,3')
    for _ in range(3):
        tx(con, db, S)
    check(raw(db, 'SELECT * FROM schema ORDER BY 1,2,3') == schema_before, 're-running S changed the schema')

    def log(t):
        return sorted(raw(db, "SELECT i.v, quote(l.v), l.added FROM timelined_transactions l "
                              "JOIN idents i ON i.e = l.a WHERE l.tx = ? AND l.e = ?", (t, E)))
    for t in (txs[1], txs[4]):
        check(log(t) == [], 'tx %d must hold only its txInstant: %r' % (t, log(t)))
        n = raw(db, 'SELECT count(*) FROM timelined_transactions WHERE tx = ?', (t,))[0][0]
        check(n == 1, 'tx %d must have exactly one log row (its :db/txInstant), has %d' % (t, n))
    check(log(txs[2]) == sorted([(':p/name', "'A'", 0), (':p/name', "'B'", 1)]), 'tx3 log %r' % log(txs[2]))
    check(log(txs[3]) == sorted([(':p/key', "'One'", 0), (':p/key', "'Two'", 1)]), 'tx4 log %r' % log(txs[3]))
    tags_tx = raw(db, "SELECT tx FROM datoms WHERE e = ? AND v = 't1'", (E,))
    check(tags_tx == [(txs[0],)], ':p/tags "t1" must stay dated tx1: %r' % tags_tx)


def B09(con):
    db = store('b09')
    tx(con, db, schema('[:e/id string one unique-id] [:e/child ref one] [:e/name string one] '
                       '[:m/id long one unique-id] [:m/user ref one]'))
    r = tx(con, db, '[{:db/id "u1" :e/id "u1" :e/name "one"} {:db/id "u2" :e/id "u2" :e/child "u1"}]')
    U2 = r['tempids']['u2']
    tx(con, db, '[[:db/retract [:e/id "u1"] :e/id "u1"] [:db/retract [:e/id "u2"] :e/child [:e/id "u1"]]]')
    check(qset(con, db, '[:find ?e :where [?e :e/id "u1"]]') == set(), 'T2 did not retract :e/id "u1"')
    check(qset(con, db, '[:find ?c :where [_ :e/child ?c]]') == set(), 'T2 did not retract the child ref')
    r3 = tx(con, db, '[{:db/id "user" :e/id "u2"} {:m/id 1234 :m/user "user"}]')
    check(r3['tempids'].get('user') == U2, '"user" must upsert to u2: %r' % r3)
    check(qset(con, db, '[:find ?u :where [?m :m/id 1234] [?m :m/user ?u]]') == {(U2,)}, 'T3 message ref')
    before = dump(db)
    tx_err(con, db, '[[:db/add "parent" :e/name "p"] [:db/add "other" :e/child "nobody"]]',
           'edn_t: line 1 col 59: tempid "nobody" is used only as a value')
    tx_err(con, db, '[[:db/add [:e/id "missing"] :e/name "x"]]',
           'edn_t: line 1 col 11: lookup ref [:e/id "missing"] does not resolve')
    check(dump(db) == before, 'rejected T4/T5 changed the store')
    a = qset(con, db, '[:find ?n :where [[:e/id "ghost"] :e/name ?n]]')
    b = qset(con, db, '[:find ?n :in $ ?x :where [?x :e/name ?n]]', [{'edn': '[:e/id "ghost"]'}])
    check(a == b == set(), 'Q1/Q2 must both be empty: %r %r' % (a, b))


def B27(con):
    a, b = store('b27a'), store('b27b')
    tx(con, a, schema('[:p/name string one] [:p/nick string one]'))
    tx(con, a, '[{:p/name "x"} {:p/name "y" :p/nick "z"}]')
    tx(con, b, schema('[:p/name string one]'))
    con.execute('CREATE TEMP TABLE jobs(id INTEGER PRIMARY KEY, db TEXT, q TEXT)')
    qn, qk = '[:find ?n :where [_ :p/name ?n]]', '[:find ?n :where [_ :p/nick ?n]]'
    con.executemany('INSERT INTO jobs VALUES (?,?,?)', [(1, a, qn), (2, b, qn), (3, a, qk)])
    want = [(1, 'x'), (1, 'y'), (3, 'z')]
    r1 = con.execute('SELECT j.id, r.c0 FROM jobs j, edn_q(j.db, j.q) r ORDER BY j.id, r.c0').fetchall()
    check(r1 == want, '(1) got %r' % r1)
    try:
        r2 = con.execute('SELECT j.id, r.c0 FROM edn_q(j.db, j.q) r, jobs j ORDER BY j.id, r.c0').fetchall()
        check(r2 == want, '(2) got %r' % r2)
    except sqlite3.OperationalError as e:
        check('malfunction' not in str(e), '(2) xBestIndex malfunction: %s' % e)
    r3 = con.execute('SELECT j.id, r.c0 FROM jobs j LEFT JOIN edn_q(j.db, j.q) r ORDER BY j.id, r.c0').fetchall()
    check(r3 == [(1, 'x'), (1, 'y'), (2, None), (3, 'z')], '(3) got %r' % r3)
    r4 = con.execute('SELECT c0 FROM edn_q WHERE db_path = ? AND query IN (?, ?) ORDER BY c0', (a, qn, qk)).fetchall()
    check(r4 == [('x',), ('y',), ('z',)], '(4) got %r' % r4)
    try:
        con.execute('SELECT * FROM edn_q').fetchall()
        raise Fail('(5) must fail')
    except sqlite3.Error as e:
        check(str(e) == 'edn_q: missing arguments db_path and query', '(5) must name the missing arguments: %s' % e)
    r6 = con.execute('SELECT a.c0, b.c0 FROM edn_q(?1, ?2) a JOIN edn_q(?1, ?2) b ON a.c0 = b.c0 ORDER BY 1',
                     (a, qn)).fetchall()
    check(r6 == [('x', 'x'), ('y', 'y')], '(6) got %r' % r6)


def B29(con):
    db = store('b29')
    tx(con, db, schema('[:p/name string one]'))
    tx(con, db, '[{:p/name "x"} {:p/name "y"}]')
    cur = con.execute('SELECT c0 FROM edn_q(?, ?)', (db, '[:find ?n :where [_ :p/name ?n]]'))
    cur.fetchone()
    try:
        con.load_extension(EXT)   # a second load with a statement open: succeeds or errors clearly
    except sqlite3.Error as e:
        check(str(e), 'second load failed without a message')
    rest = cur.fetchall()
    check(len(rest) == 1, 'open cursor disturbed by the second load: %r' % rest)
    con2 = connect()
    check(len(q(con2, db, '[:find ?n :where [_ :p/name ?n]]')) == 2, 'second connection')
    con2.close()


def B31(con):
    db = store('b31')
    tx(con, db, schema('[:m/i long many] [:m/d double many] [:m/key double one unique-id] [:m/tag string one]'))
    r = tx(con, db, '[{:db/id "a" :m/i [2147483648 9007199254740993 9223372036854775807 -9223372036854775808] '
                    ':m/d [-0.0 1e308 ##Inf ##-Inf 5e-324]}]')
    A = r['tempids']['a']
    rows = con.execute("SELECT c0, typeof(c0) FROM edn_q(?, '[:find ?v :where [_ :m/i ?v]]')", (db,)).fetchall()
    check(sorted(rows) == sorted((v, 'integer') for v in (2147483648, 9007199254740993,
                                                         9223372036854775807, -9223372036854775808)),
          'longs %r' % rows)
    rows = con.execute("SELECT c0, typeof(c0) FROM edn_q(?, '[:find ?v :where [_ :m/d ?v]]')", (db,)).fetchall()
    check(all(t == 'real' for _, t in rows), 'doubles must be REAL: %r' % rows)
    vals = sorted(v for v, _ in rows)
    check(vals == sorted([0.0, 1e308, float('inf'), float('-inf'), 5e-324]), 'doubles %r' % vals)
    tx_err(con, db, '[{:m/d ##NaN}]', 'edn_t: line 1 col 8: :m/d: NaN cannot be stored')
    check(qset(con, db, '[:find ?e :where [?e :m/d 0.0]]') == {(A,)}, 'Q1')
    tx(con, db, '[{:m/key 0.0 :m/tag "pos"}]')
    tx(con, db, '[{:m/key -0.0 :m/tag "neg"}]')
    got = qset(con, db, '[:find ?e ?t :where [?e :m/key _] [?e :m/tag ?t]]')
    check(len(got) == 1 and list(got)[0][1] == 'neg', '-0.0 must upsert into 0.0: %r' % got)


def B33(con):
    db = store('b33')
    tx(con, db, schema('[:p/name string one]'))
    before = dump(db)
    tx_err(con, db, '[{:p/name "ok"}]\x00[{:p/name "smuggled"}]',
           'edn_t: line 1 col 17: NUL byte outside a string')
    check(dump(db) == before, 'NUL outside a string: something was stored')
    r = tx(con, db, '[{:db/id "n" :p/name "a\\u0000b"}]')
    h = con.execute("SELECT hex(c0) FROM edn_q(?, '[:find ?n . :in $ ?e :where [?e :p/name ?n]]', ?)",
                    (db, json.dumps({'inputs': [r['tempids']['n']]}))).fetchall()
    check(h == [('610062',)], 'escaped NUL must be stored intact: %r' % h)
    try:
        con.execute("SELECT edn_t(?, CAST(x'5b7b3a702f6e616d652022ff227d5d' AS TEXT))", (db,)).fetchone()
        raise Fail('invalid UTF-8 accepted')
    except sqlite3.Error as e:
        check(str(e) == 'edn_t: line 1 col 12: invalid UTF-8 in string',
              'invalid UTF-8 error must say so, where: %s' % e)
    r = tx(con, db, '[{:db/id "s" :p/name "\\uD83D\\uDE00"}]')
    h = con.execute("SELECT hex(c0) FROM edn_q(?, '[:find ?n . :in $ ?e :where [?e :p/name ?n]]', ?)",
                    (db, json.dumps({'inputs': [r['tempids']['s']]}))).fetchall()
    check(h == [('F09F9880',)], 'surrogate pair must be 4-byte UTF-8: %r' % h)
    tx_err(con, db, '[{:p/name "\\uD800"}]', 'edn_t: line 1 col 12: lone surrogate \\uD800 in string')
    q_err(con, db, '[:find ?c :in $ [?c ...]]', [{'edn': '[\\ ]'}],
          want='edn_q: "inputs" value 1: line 1 col 2: a backslash followed by whitespace is not a character')


def B34(con):
    db = store('b34')
    tx(con, db, schema('[:p/n string one]'))
    before = dump(db)
    # level 257 opens at column 257 of '[[[...', and at 8 + 4 x 254 = 1024 of
    # '[{:p/n {:a {:a ...' (the '[' and the first '{' are levels 1 and 2)
    tx_err(con, db, '[' * 200000 + ']' * 200000, 'edn_t: line 1 col 257: nesting too deep (limit 256)')
    q_err(con, db, '[:find ?x :in $ ?x]', [{'edn': '[' * 200000 + ']' * 200000}],
          want='edn_q: "inputs" value 1: line 1 col 257: nesting too deep (limit 256)')
    tx_err(con, db, '[{:p/n ' + '{:a ' * 100000 + '1' + '}' * 100000 + '}]',
           'edn_t: line 1 col 1024: nesting too deep (limit 256)')
    check(dump(db) == before, 'deep inputs changed the store')
    try:
        con.execute('SELECT edn_pull(?, ?, 1)', (db, '[' + '{:p/n ' * 50000 + '[:p/n]' + '}' * 50000 + ']')).fetchone()
        raise Fail('deep pull pattern accepted')
    except sqlite3.Error as e:
        # level 257 is the 256th '{' after the '[': column 2 + 6 x 255 = 1532
        check(str(e) == 'edn_pull: pattern: line 1 col 1532: nesting too deep (limit 256)',
              'deep pull pattern: %s' % e)
    big = '[' + ' '.join('{:p/n "v%d"}' % i for i in range(20000)) + ']'
    tx(con, db, big)
    n = len(q(con, db, '[:find ?e :where [?e :p/n _]]'))
    check(n == 20000, 'large flat tx: %d entities' % n)


def B10(con):
    db = store('b10')
    tx(con, db, schema('[:n/type keyword one] [:n/ref long one] [:b/id long one] [:p/age long one] [:p/knows string many]'))
    F = tx(con, db, '[{:db/id "f" :n/type :foo :n/ref 123}]')['tempids']['f']
    q1 = '[:find ?f ?id :where [?f :n/ref ?id] (not-join [?id] [?b :n/type :bar] [?b :b/id ?id])]'
    check(qset(con, db, q1) == {(F, 123)}, 'Q1 after T1')
    tx(con, db, '[{:n/type :bar :b/id 456}]')
    check(qset(con, db, q1) == {(F, 123)}, 'Q1 after T2')
    tx(con, db, '[{:n/type :bar :b/id 123}]')
    check(qset(con, db, q1) == set(), 'Q1 after T3')
    r = tx(con, db, '[{:db/id "p1" :p/age 20 :p/knows ["John"]} {:db/id "p2" :p/age 21 :p/knows ["John" "Daphne"]}'
                    ' {:db/id "p3" :p/age 22 :p/knows ["Daphne"]} {:db/id "p4" :p/age 40}]')['tempids']
    got = qset(con, db, '[:find ?x :where [?x :p/age ?a] [(< ?a 30)] (not [?x :p/knows "John"] [?x :p/knows "Daphne"])]')
    check(got == {(r['p1'],), (r['p3'],)}, 'Q2 got %r' % got)


def B11(con):
    db = store('b11')
    tx(con, db, schema('[:a/name string one] [:r/artists ref many] [:r/year long one] [:x/id keyword one unique-id] [:x/n long one]'))
    t = tx(con, db, '[{:db/id "sussi" :a/name "Sussi"} {:db/id "leo" :a/name "Leo"}'
                    ' {:db/id "r1" :r/artists ["sussi"] :r/year 1969} {:db/id "r2" :r/artists ["leo"] :r/year 1970}'
                    ' {:db/id "xa" :x/id :a :x/n 1} {:db/id "xb" :x/id :b}]')['tempids']
    got = qset(con, db, '[:find ?n :in $ ?rel :where [?ar :a/name ?n] (not-join [?ar] [?rel :r/artists ?ar] [?rel :r/year 1970])]',
               [t['r1']])
    check(got == {('Sussi',)}, 'Q1 got %r' % got)
    got = qset(con, db, '[:find ?id :in $ ?max :where [?e :x/id ?id] (or-join [?e ?max] (not [?e :x/n _]) '
                        '(and [?e :x/n ?n] [(< ?n ?max)]))]', [1000])
    check(got == {(':a',), (':b',)}, 'Q2 got %r' % got)
    q3 = '[:find ?e :where (or-join [?e] (and [?pg :a/name "Nobody"] [?e :x/id _]))]'
    check(qset(con, db, q3) == set(), 'Q3 before Nobody')
    got = qset(con, db, '[:find ?e :where [?e :x/id _] (or [?e :x/n 999] [?e :x/n 1])]')
    check(got == {(t['xa'],)}, 'Q4 got %r' % got)
    q_err(con, db, '[:find ?e :where (or [?e :x/n 1] [?f :x/n 2])]',
          want='edn_q: line 1 col 18: all branches of or must use the same variables, but ?f, ?e are not'
               ' in every branch (use or-join to name the shared ones)')
    tx(con, db, '[{:a/name "Nobody"}]')
    check(qset(con, db, q3) == {(t['xa'],), (t['xb'],)}, 'Q3 after Nobody')


def B13(con):
    db = store('b13')
    tx(con, db, schema('[:t/name string one] [:t/weight double one] [:t/key keyword one] [:t/count long one] '
                       '[:t/id uuid one] [:t/date instant one] [:t/flag boolean one] [:t/ref ref one]'))
    A = tx(con, db, '[{:db/id "a" :t/name "foo" :t/weight 0.3 :t/key :foo/bar :t/count 12'
                    ' :t/id #uuid "ff62d552-6569-4d1b-b667-04703041dfc4" :t/date #inst "2018-01-01T11:00:00Z"'
                    ' :t/flag true :t/ref "b"} {:db/id "b" :t/name "bar"}]')['tempids']['a']
    check(qset(con, db, '[:find ?v :in $ ?e :where [?e _ ?v] [(> ?v 0)]]', [A]) == {(0.3,), (12,)}, 'Q1')
    check(qset(con, db, '[:find ?v :in $ ?e :where [?e _ ?v] [(< ?v 1)]]', [A]) == {(0.3,)}, 'Q2')
    # an attribute variable yields the attribute's entid, as in Datomic
    count_attr = raw(db, "SELECT e FROM idents WHERE v = ':t/count'")[0][0]
    check(qset(con, db, '[:find ?a :in $ ?e :where [?e ?a 12]]', [A]) in ({(count_attr,)}, {(':t/count',)}), 'Q3')
    check(qset(con, db, '[:find ?a :in $ ?e :where [?e ?a 1]]', [A]) == set(), 'Q4')


B15_RULES = ('[[(friends ?a ?b) [?i :e/left ?a] [?i :e/right ?b]]'
             ' [(friends ?a ?b) (friends ?a ?c) (friends ?c ?b)]'
             ' [(reach ?s ?e) [?s :n/next ?e]]'
             ' [(reach ?s ?e) [?s :n/next ?m] (reach ?m ?e)]'
             ' [(peer ?a ?b) [?g :g/member ?a] [?g :g/member ?b]]'
             ' [(flag-is ?e ?v) [?e :f/on ?v]]]')


def B15(con):
    db = store('b15')
    tx(con, db, schema('[:e/left string one] [:e/right string one] [:n/id keyword one unique-id] [:n/next ref one] '
                       '[:g/name string one] [:g/member string many] [:f/on boolean one]'))
    t = tx(con, db, '[{:e/left "aaron" :e/right "barbara"} {:e/left "aaron" :e/right "chris"} {:e/left "barbara" :e/right "dora"}'
                    ' {:db/id "a1" :n/id :a1 :n/next "a2"} {:db/id "a2" :n/id :a2 :n/next "a3"} {:db/id "a3" :n/id :a3 :n/next "a1"}'
                    ' {:db/id "b1" :n/id :b1 :n/next "b2"} {:db/id "b2" :n/id :b2 :n/next "b1"}'
                    ' {:g/name "G1" :g/member ["x"]} {:g/name "G2" :g/member ["x" "y"]}'
                    ' {:db/id "on" :f/on true} {:db/id "off" :f/on false}]')['tempids']
    r = {'edn': B15_RULES}
    got = qset(con, db, '[:find ?a ?b :in $ % :where (friends ?a ?b)]', [r])
    check(got == {('aaron', 'barbara'), ('aaron', 'chris'), ('barbara', 'dora'), ('aaron', 'dora')}, 'Q1 got %r' % got)
    got = qset(con, db, '[:find ?id :in $ % :where [?end :n/id :a1] (reach ?n ?end) [?n :n/id ?id]]', [r])
    check(got == {(':a1',), (':a2',), (':a3',)}, 'Q2 got %r' % got)
    got = qset(con, db, '[:find ?y :in $ % :where [?g :g/name "G1"] [?g :g/member "x"] (peer "x" ?y)]', [r])
    check(got == {('x',), ('y',)}, 'Q3 got %r' % got)
    got = qset(con, db, '[:find ?e :in $ % :where (flag-is ?e false)]', [r])
    check(got == {(t['off'],)}, 'Q4 got %r' % got)
    # an integer input passed to a rule's entity place is an entid (SPEC 2.4)
    got = qset(con, db, '[:find ?e :in $ % ?s :where (step ?s ?e)]',
               [{'edn': '[[(step ?s ?e) [?s :n/next ?e]]]'}, t['a1']])
    check(got == {(t['a2'],)}, 'integer input into a rule got %r' % got)


def B16(con):
    db = store('b16')
    tx(con, db, schema('[:h/x long one] [:h/g keyword one]'))
    t = tx(con, db, '[{:db/id "e1" :h/x 3 :h/g :g1} {:db/id "e2" :h/x 3 :h/g :g1} {:db/id "e3" :h/x 2 :h/g :g2}]')['tempids']
    check(q(con, db, '[:find (sum ?x) :where [?e :h/x ?x]]') == [(5,)], 'Q1')
    check(q(con, db, '[:find (sum ?x) :with ?e :where [?e :h/x ?x]]') == [(8,)], 'Q2')
    check(q(con, db, '[:find (count ?x) :where [?e :h/x ?x]]') == [(2,)], 'Q3')
    check(q(con, db, '[:find (count ?x) (count-distinct ?x) :with ?e :where [?e :h/x ?x]]') == [(3, 2)], 'Q4')
    got = qset(con, db, '[:find ?e (count ?e) :where [?e :h/x _]]')
    check(got == {(t['e1'], 1), (t['e2'], 1), (t['e3'], 1)}, 'Q5 got %r' % got)
    got = qset(con, db, '[:find ?g (sum ?x) (avg ?x) :with ?e :where [?e :h/g ?g] [?e :h/x ?x]]')
    check(got == {(':g1', 6, 3.0), (':g2', 2, 2.0)}, 'Q6 got %r' % got)


def B18(con):
    db = store('b18')
    tx(con, db, schema('[:name string one unique-id] [:part ref one] [:spec ref one] [:friend ref many] [:c/child ref one component]'))
    t = tx(con, db, '[{:db/id "one" :name "one" :part "two" :spec "two"} {:db/id "two" :name "two" :part "three" :spec "one"}'
                    ' {:db/id "three" :name "three" :part "one"}'
                    ' {:db/id "lucy" :name "lucy" :friend ["eliz"]} {:db/id "eliz" :name "eliz" :friend ["matt"]}'
                    ' {:db/id "matt" :name "matt" :friend ["eunan"]} {:db/id "eunan" :name "eunan" :friend ["kerri"]}'
                    ' {:db/id "kerri" :name "kerri" :friend ["lucy"]}'
                    ' {:db/id "c1" :name "c1" :c/child "c2"} {:db/id "c2" :name "c2" :c/child "c1"}]')['tempids']

    def pull1(query):
        rows = q(con, db, query)
        check(len(rows) == 1, '%s: %r' % (query, rows))
        return rows[0][0]
    p = pull1('[:find (pull ?e [:db/id {:part ...} {:spec ...}]) :where [?e :name "one"]]')
    check(p[':part'][':part'][':part'] == {':db/id': t['one']}, 'Q1 part chain: %r' % p)
    p = pull1('[:find (pull ?e [:name {:friend 2}]) :where [?e :name "lucy"]]')
    # Past the depth the friends are left out (DataScript's test-recursion).
    l2 = p[':friend'][0][':friend'][0]
    check(p[':friend'][0][':name'] == 'eliz' and l2 == {':name': 'matt'}, 'Q2: %r' % p)
    p = pull1('[:find (pull ?e [:name {:friend ...}]) :where [?e :name "lucy"]]')
    k = p[':friend'][0][':friend'][0][':friend'][0][':friend'][0]
    check(k[':name'] == 'kerri' and k[':friend'] == [{':db/id': t['lucy']}], 'Q3: %r' % p)
    p = pull1('[:find (pull ?e [*]) :where [?e :name "c1"]]')
    check(p[':c/child'][':name'] == 'c2' and p[':c/child'][':c/child'] == {':db/id': t['c1']}, 'Q4: %r' % p)
    p = pull1('[:find (pull ?e [* {:friend 1}]) :where [?e :name "lucy"]]')
    check(p[':name'] == 'lucy' and p[':friend'][0][':name'] == 'eliz', 'Q5: %r' % p)


def B20(con):
    db = store('b20')
    tx(con, db, schema('[:item/id string one unique-id] [:item/count long one]'))
    r1 = tx(con, db, '[{:item/id "D" :item/count 100} {:item/id "X"}]')
    r2 = tx(con, db, '[{:item/id "D" :item/count 250}]')
    r3 = tx(con, db, '[[:db/retractEntity [:item/id "X"]]]')
    t1, t2, t3 = r1['tx_id'], r2['tx_id'], r3['tx_id']
    qd = '[:find ?c :where [?e :item/id "D"] [?e :item/count ?c]]'
    check(qset(con, db, qd, asOf=t1) == {(100,)}, 'Q1')
    # pull in :find sees the same as-of database as the patterns
    got = q(con, db, '[:find (pull ?e [:item/count]) . :where [?e :item/id "D"]]', asOf=t1)
    check(got == [({':item/count': 100},)], 'Q1 pull as of tx1: %r' % got)
    check(qset(con, db, qd, asOf=t2) == {(250,)}, 'Q2 tx')
    check(qset(con, db, qd, asOf={'edn': '#inst "%s"' % r2['tx_instant']}) == {(250,)}, 'Q2 inst')
    qc = '[:find ?c :where [_ :item/count ?c]]'
    check(qset(con, db, qc, since=t1) == {(250,)}, 'Q3 since tx1')
    check(qset(con, db, qc, since=t2) == set(), 'Q3 since tx2')
    check(qset(con, db, qd, since=t1) == set(), 'Q4 the since trap')
    qx = '[:find ?e :where [?e :item/id "X"]]'
    check(len(qset(con, db, qx, asOf=t2)) == 1, 'Q6 X as of tx2')
    check(qset(con, db, qx, asOf=t3) == set(), 'Q6 X as of tx3')
    check(qset(con, db, qx, asOf={'edn': '#inst "2999-01-01"'}) == set(), 'Q6 far future')
    check(qset(con, db, '[:find ?e :where [?e :item/id _]]', asOf={'edn': '#inst "2000-01-01"'}) == set(), 'Q7')


def B22(con):
    db = store('b22')
    tx(con, db, schema('[:item/id string one unique-id] [:item/count long one]'))
    t1 = tx(con, db, '[{:item/id "D" :item/count 100}]')['tx_id']
    t2 = tx(con, db, '[{:item/id "D" :item/count 250}]')['tx_id']
    t3 = tx(con, db, '[{:item/id "D" :item/count 50}]')['tx_id']
    q1 = '[:find ?c ?tx ?added :where [?e :item/id "D"] [?e :item/count ?c ?tx ?added]]'
    want = {(100, t1, True), (100, t2, False), (250, t2, True), (250, t3, False), (50, t3, True)}
    check(qset(con, db, q1, history=True) == want, 'Q1 got %r' % qset(con, db, q1, history=True))
    # the current database holds assertions only
    check(qset(con, db, q1) == {(50, t3, True)}, 'Q1 current %r' % qset(con, db, q1))
    rows = q(con, db, '[:find ?inst ?c :where [?e :item/count ?c ?tx true] [?tx :db/txInstant ?inst]]',
             history=True)
    check(sorted(rows) == sorted(rows, key=lambda r: [100, 250, 50].index(r[1])) and len(rows) == 3, 'Q2 %r' % rows)
    got = qset(con, db, q1, history=True, asOf=t2)
    check(got == {(100, t1, True), (100, t2, False), (250, t2, True)}, 'Q3 history of as-of %r' % got)
    got = qset(con, db, '[:find ?c ?tx ?added :where [_ :item/count ?c ?tx ?added]]', since=t1, history=True)
    check(got == {(100, t2, False), (250, t2, True), (250, t3, False), (50, t3, True)}, 'Q4 since-of-history %r' % got)


def B24(con):
    db = store('b24')
    tx(con, db, schema('[:p/name string one unique-id] [:p/tags string many]'))
    tx(con, db, '[{:p/name "A" :p/tags ["x" "y"]}]')
    q1 = '[:find (pull ?e [:p/tags]) :where [?e :p/name "A"]]'
    q(con, db, q1), q(con, db, q1)
    tx(con, db, '[[:db/retract [:p/name "A"] :p/tags "x"]]')
    check(q(con, db, q1) == [({':p/tags': ['y']},)], 'Q1 after retraction: %r' % q(con, db, q1))
    before = dump(db)
    tx_err(con, db, '[{:db/ident :q/new :db/valueType :db.type/string :db/cardinality :db.cardinality/one}'
                    ' {:p/name "B" :q/new "v"} [:db/add [:p/name "nobody"] :p/tags "z"]]',
           'edn_t: line 1 col 100: attribute :q/new is defined in this same transaction; transact the schema'
           ' first')
    check(dump(db) == before, 'T3 left something behind')
    check(qset(con, db, '[:find ?e :where [?e :p/name "B"]]') == set(), 'Q2')
    tx_err(con, db, '[{:p/name "C" :q/new "v"}]', 'edn_t: line 1 col 15: unknown attribute :q/new')
    other = connect()
    tx(other, db, '[{:db/ident :q/new :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]')
    other.close()
    tx(con, db, '[{:p/name "C" :q/new "v"}]')
    q3 = '[:find ?t :in $ ?n :where [?e :p/name ?n] [?e :p/tags ?t]]'
    check(qset(con, db, q3, ['A']) == {('y',)}, 'Q3 A')
    check(qset(con, db, q3, ['B']) == set(), 'Q3 B')



B32_REACH = ('[[(reach ?s ?e) [?s :n/next ?e]]'
             ' [(reach ?s ?e) [?s :n/next ?m] (reach ?m ?e)]]')


def _rss_anon_kib():
    """Anonymous resident memory of this process (the store file's mmap'd pages are
    file-backed and would hide a leak behind the pages a query touched)."""
    for line in open('/proc/self/status'):
        if line.startswith('RssAnon:'):
            return int(line.split()[1])
    return 0


def _sqlite_memory_used():
    """sqlite3_memory_used() of the libsqlite3 this process runs (the extension allocates
    with sqlite3_malloc, so its leaks show here), or None when it cannot be reached."""
    try:
        import ctypes
        lib = ctypes.CDLL('libsqlite3.so.0')
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        return lib.sqlite3_memory_used()
    except (OSError, AttributeError):
        return None


def _interrupted(con, sql, args, delay):
    """Runs sql with con.interrupt() fired after delay seconds, and again every 5 ms until
    the statement returns: an interrupt that fires before the host statement has started
    is a no-op in SQLite, and on a loaded machine the main thread can be late by more
    than a short delay. Returns (error text or 'finished', seconds from the first
    interrupt to the return, or None when it returned before any interrupt)."""
    import threading
    import time
    done = threading.Event()
    first = []

    def fire():
        if done.wait(delay):
            return
        while not done.is_set():
            if not first:
                first.append(time.time())
            con.interrupt()
            done.wait(0.005)
    t = threading.Thread(target=fire)
    t.start()
    try:
        con.execute(sql, args).fetchall()
        got = 'finished'
    except sqlite3.Error as e:
        got = str(e)
    t_end = time.time()
    done.set()
    t.join()
    return got, (t_end - first[0]) if first else None


def _busy_after_truncate(db):
    c = sqlite3.connect(db)
    try:
        return c.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()[0]
    finally:
        c.close()


def B32(con):
    """Interrupt and cancel release everything: a recursive query over a 200,000-link
    chain, interrupted after 0.2 s, fails with "interrupted" within about a second; the
    next query on the same connection succeeds; after each cancel a TRUNCATE checkpoint
    from a raw connection reports busy = 0; memory stays flat over 200 repetitions; an
    interrupted 100,000-datom edn_t leaves nothing and the next tx id is fresh."""
    db = store('b32')
    tx(con, db, schema('[:n/id long one unique-id] [:n/next ref one]'))
    n = 200000
    step = 20000
    for lo in range(0, n, step):
        # each batch links its last node to the next batch's first by lookup ref,
        # which the next batch then names with its :n/id (upsert)
        forms = ['{:db/id "n%d" :n/id %d :n/next "n%d"}' % (i, i, i + 1) for i in range(lo, lo + step - 1)]
        last = lo + step - 1
        if last + 1 < n:
            forms.append('{:db/id "n%d" :n/id %d :n/next "nx"} {:db/id "nx" :n/id %d}' % (last, last, last + 1))
        else:
            forms.append('{:db/id "n%d" :n/id %d}' % (last, last))
        tx(con, db, '[' + ' '.join(forms) + ']')
    chain = q(con, db, '[:find (count ?e) :where [?e :n/next _]]')
    check(chain == [(n - 1,)], 'chain of %d links expected, got %r' % (n - 1, chain))
    long_sql = 'SELECT count(*) FROM edn_q(?, ?, ?)'
    long_args = (db, '[:find ?e :in $ % ?start :where [?s :n/id ?start] (reach ?s ?e)]',
                 json.dumps({'inputs': [{'edn': B32_REACH}, 0]}))
    small_sql = 'SELECT c0 FROM edn_q(?, ?, ?)'
    small_args = (db, '[:find ?e :in $ ?id :where [?e :n/id ?id]]', json.dumps({'inputs': [7]}))
    want_small = con.execute(small_sql, small_args).fetchall()
    check(want_small == raw(db, "SELECT e FROM datoms WHERE a = (SELECT e FROM idents WHERE v = ':n/id')"
                             " AND v = 7"), 'the small query finds node 7: %r' % want_small)
    check(len(want_small) == 1, 'the small query finds node 7 once: %r' % want_small)

    mem0 = rss0 = None
    for k in range(200):
        # the entry's 0.2 s for the first ones; shorter later so 200 rounds stay quick
        delay = 0.2 if k < 5 else 0.02
        got, secs = _interrupted(con, long_sql, long_args, delay)
        # The table form has two documented texts (README Decisions): ours when the interrupt
        # stops the store's statement, SQLite's own when it lands between two rows.
        check(got in ('edn_q: interrupted', 'interrupted'),
              'round %d: the recursive query must be interrupted, got %r' % (k, got))
        check(secs is not None and secs < 1.0, 'round %d: stopped %r s after the interrupt, not within ~1 s'
              % (k, secs))
        small = con.execute(small_sql, small_args).fetchall()
        check(small == want_small, 'round %d: next query after the interrupt got %r' % (k, small))
        if k < 5 or k % 50 == 49:
            busy = _busy_after_truncate(db)
            check(busy == 0, 'round %d: TRUNCATE checkpoint busy = %r after the cancel' % (k, busy))
        if k == 19:
            mem0, rss0 = _sqlite_memory_used(), _rss_anon_kib()
    mem1, rss1 = _sqlite_memory_used(), _rss_anon_kib()
    if mem0 is not None:
        check(mem1 - mem0 < 1 << 20, 'sqlite3_memory_used grew %d bytes over 180 interrupted queries'
              % (mem1 - mem0))
    check(rss1 - rss0 < 8 * 1024, 'anonymous RSS grew %d KiB over 180 interrupted queries' % (rss1 - rss0))

    # An interrupted 100,000-datom transaction: all or nothing, and the tx id of the
    # next transaction is one never handed out before.
    before = dump(db)
    tx_before = raw(db, 'SELECT max(tx) FROM timelined_transactions')[0][0]
    big = '[' + ' '.join('{:n/id %d}' % (1000000 + i) for i in range(100000)) + ']'
    interrupted = 0
    for delay in (0.02, 0.1, 0.3):
        got, secs = _interrupted(con, 'SELECT edn_t(?, ?)', (db, big), delay)
        if got == 'finished':
            # it beat the interrupt: the whole transaction is there; take it back out
            # of the comparison by starting again from the new state
            have = raw(db, 'SELECT count(*) FROM datoms WHERE a = (SELECT e FROM idents WHERE v = ?)'
                           ' AND v >= 1000000', (':n/id',))[0][0]
            check(have == 100000, 'a finished edn_t stored %d of 100000 datoms' % have)
            break
        interrupted += 1
        check(got == 'edn_t: interrupted; nothing was stored', 'edn_t error: %r' % got)
        check(secs is not None and secs < 1.0, 'edn_t stopped %r s after the interrupt' % secs)
        check(dump(db) == before, 'an interrupted edn_t (at %.2f s) changed the store' % delay)
        busy = _busy_after_truncate(db)
        check(busy == 0, 'TRUNCATE checkpoint busy = %r after the interrupted edn_t' % busy)
    check(interrupted >= 1, 'no interrupt landed inside a 100,000-datom edn_t')
    tx_mid = raw(db, 'SELECT max(tx) FROM timelined_transactions')[0][0]
    r = tx(con, db, '[{:n/id -1}]')
    check(r['tx_id'] > tx_mid >= tx_before, 'next tx id %r is not fresh (log max %r)' % (r['tx_id'], tx_mid))
    used = raw(db, 'SELECT count(DISTINCT tx) FROM timelined_transactions WHERE tx = ?', (r['tx_id'],))[0][0]
    check(used == 1, 'tx id %r appears in the log as %d transactions' % (r['tx_id'], used))
    small = con.execute(small_sql, small_args).fetchall()
    check(small == want_small, 'query after the interrupted edn_t got %r' % small)


ENTRIES = {name: fn for name, fn in globals().items() if name[0] == 'B' and name[1:].isdigit()}


def run_one(name):
    con = connect()
    try:
        ENTRIES[name](con)
        return None
    except Fail as e:
        return str(e)
    except Exception:
        return traceback.format_exc().strip().splitlines()[-1]
    finally:
        con.close()


def main():
    global EXT
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    EXT = os.path.abspath(sys.argv[1])
    if EXT.endswith('.so'):
        EXT = EXT[:-3]
    if len(sys.argv) > 2 and sys.argv[2] == '--one':
        why = run_one(sys.argv[3])
        print(json.dumps(why))
        return 0
    names = sys.argv[2:] or sorted(ENTRIES)
    passed = failed = 0
    for name in names:
        # each entry in its own process: a crash fails that entry only
        p = subprocess.run([sys.executable, os.path.abspath(__file__), EXT, '--one', name],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            why = 'crashed (exit %d): %s' % (p.returncode, p.stderr.strip()[-300:])
        else:
            why = json.loads(p.stdout.strip().splitlines()[-1])
        if why is None:
            passed += 1
            print('PASS %s' % name)
        else:
            failed += 1
            print('FAIL %s: %s' % (name, why))
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
