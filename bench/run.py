#!/usr/bin/python3
"""Benchmark runner for ../shared/BENCH.md: load, checks, query scenarios vs hand-written SQL.

Usage: /usr/bin/python3 bench/run.py EXTENSION.so SCALE OUTDIR [--quick]

HOW IT WORKS
1. Generates the data set (bench/gen.py) unless OUTDIR/data-SCALE has it, and loads it
   through edn_t into a fresh OUTDIR/store-SCALE.db: schema, users+labels, issues (the
   initial load, timed: bulk_load datoms/s), then the history txs. t_mid and t_since and the
   issues' entids go to OUTDIR/state-SCALE.json for the later steps. The load's timer stops
   after one query: bulk transactions defer the managed indexes to the first read.
2. Runs the checks of BENCH.md (checks(), also used by mixed.py after its run).
3. For every query scenario, each candidate hand-written SQL baseline is checked against
   ours on three inputs (same set of rows, or the same pulled map); the fastest correct one
   becomes the baseline, and its EXPLAIN QUERY PLAN is kept and checked for a scan of a
   table without an index. Candidates exist where the "best SQL" is not obvious (which
   index, which join order); every baseline fixes its join order with CROSS JOIN, as a
   person tuning SQL would, and compares ref values as `+x.e` (BENCH.md's affinity trap).
4. Times each scenario: ours through the edn_q table, ours through the scalar edn_q, the
   baseline on its own connection to the store, interleaved call by call with the same
   input; warm-up 3 calls; each repetition at least 30 samples and 2 s; median of 3
   repetitions (by p50); nearest-rank p50/p95/p99 of wall time, and the same of the calling
   thread's CPU time (the `*_cpu` forms: robust against preemption on a loaded machine,
   since every call runs synchronously on that thread). A repetition that passes BENCH_CAP
   seconds (default 20) stops at 5 samples or more and the sample count says so.
Writes OUTDIR/results-SCALE.json; exits 1 when a check failed or a baseline disagrees
with ours (after writing the results). Timings are wall-clock per call from Python, so
each includes the same few microseconds of Python call overhead for ours and SQL alike;
each form's arguments (our opts JSON, the baseline's SQL text and parameter tuple) are
built before its timer starts, so the figures compare the calls, not Python's json.dumps
(~2 us for point_lookup's opts, ~15 us for input_bindings' 100 emails).
"""
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import time

from common import (HERE, STATES, connect, current_states, paths, percentile, remove_db, time_call,
                    write_json)


class Loader:
    def __init__(self, con, db, data):
        self.con, self.db, self.data = con, db, data
        self.issue_eid = {}
        self.txs = []

    def tx(self, edn):
        r = json.loads(self.con.execute('SELECT edn_t(?, ?)', (self.db, edn)).fetchone()[0])
        self.txs.append(r['tx_id'])
        return r

    def load(self):
        """The initial load, timed; then the history (not timed)."""
        self.tx(open(os.path.join(self.data, 'schema.edn')).read())
        loads = sorted(f for f in os.listdir(self.data) if f.startswith('load-'))
        texts = [open(os.path.join(self.data, f)).read() for f in loads]
        t0 = time.perf_counter()
        reports = [self.tx(t) for t in texts]
        # Bulk transactions leave the managed indexes to the first read after them
        # (ext/store/store_tune.c, TUNING AFTER BULK WRITES): that build is part of the load.
        self.con.execute('SELECT count(*) FROM edn_q(?, ?)',
                         (self.db, '[:find ?e . :where [?e :db/ident :db.part/db]]')).fetchall()
        load_s = time.perf_counter() - t0
        for r in reports:
            for k, v in r['tempids'].items():
                if k[0] == 'i':
                    self.issue_eid[int(k[1:])] = v
        self.t_mid = self.txs[-1]
        hist = sorted(f for f in os.listdir(self.data) if f.startswith('history-'))
        self.t_since = self.txs[-1]
        for k, f in enumerate(hist):
            if k == len(hist) - 1:
                self.t_since = self.txs[-1]
            pairs = json.load(open(os.path.join(self.data, f)))
            self.tx('[' + ' '.join('[:db/add %d :issue/state %s]' % (self.issue_eid[n], s)
                                   for n, s in pairs) + ']')
        return load_s


def attr_ids(db):
    raw = sqlite3.connect(db)
    A = {k: raw.execute('SELECT e FROM idents WHERE v = ?', (k,)).fetchone()[0] for k in (
        ':user/email', ':user/name', ':issue/title', ':issue/state', ':issue/priority',
        ':issue/assignee')}
    A['names'] = dict(raw.execute('SELECT e, v FROM idents'))
    raw.close()
    return A


PL_Q = '[:find ?e ?name :in $ ?email :where [?e :user/email ?email] [?e :user/name ?name]]'
RT_Q = ('[:find ?i ?title ?state :in $ ?email :where [?u :user/email ?email] [?i :issue/assignee ?u] '
        '[?i :issue/title ?title] [?i :issue/state ?state]]')
AG_Q = '[:find ?state (count ?i) :where [?i :issue/state ?state]]'
PS_Q = ('[:find ?i ?title ?priority :in $ ?min :where [?i :issue/state :state/open] '
        '[?i :issue/priority ?priority] [?i :issue/title ?title] [(>= ?priority ?min)]]')
SI_Q = '[:find ?i :where [?i :issue/state _]]'
IB_Q = '[:find ?e ?name :in $ [?email ...] :where [?e :user/email ?email] [?e :user/name ?name]]'
PULL_SCALAR_Q = '[:find (pull ?e [*]) . :in $ ?e]'


def log_value_index(db, a):
    """An index on the log led by (a, v) serving timeline 0 for attribute a, if the store has
    one (the format has none; the extension adds one per indexed, unique or ref attribute,
    partial on `a = <a> AND timeline IS 0`, and the baseline may use what ours uses)."""
    raw = sqlite3.connect(db)
    try:
        for _, name, _, _, partial in raw.execute("PRAGMA index_list('timelined_transactions')"):
            cols = [r[2] for r in raw.execute('PRAGMA index_info(%s)' % json.dumps(name))]
            sql = raw.execute('SELECT sql FROM sqlite_master WHERE name = ?', (name,)).fetchone()[0] or ''
            where = sql.split(' WHERE ', 1)[1] if ' WHERE ' in sql else ''
            if cols[:2] != ['a', 'v']:
                continue
            if not partial or where == 'timeline IS 0' or where == 'a = %d AND timeline IS 0' % a:
                return name
    finally:
        raw.close()
    return None


def asof_sql(A, log_av):
    """ref_traversal as of ?2 by hand: a datom is visible at T when it is current with
    tx <= T, or its first log event after T is a retraction. Each step takes the previous
    step's entities (a CTE) through IN (SELECT ...) and reads the current datoms and the log.
    Every table names its index (INDEXED BY): with the sqlite_stat1 the extension writes,
    SQLite 3.40 otherwise picked Bloom filters built over the whole log or an (a, tx) index
    (350 ms to 1 s per call at s instead of a few ms). The log is read by value through
    log_av(a) (an index name or None) when the store has such an index for attribute a, else
    through idx_transactions_aevt."""
    def later(r):
        return ('NOT EXISTS (SELECT 1 FROM timelined_transactions x INDEXED BY idx_transactions_aevt '
                'WHERE x.timeline IS 0 AND x.a = %s.a AND x.e = %s.e AND x.value_type_tag = %s.value_type_tag '
                'AND x.v = %s.v AND x.tx > ?2 AND x.tx < %s.tx)' % (r, r, r, r, r))
    em, asg, ti, st = A[':user/email'], A[':issue/assignee'], A[':issue/title'], A[':issue/state']
    def lv(a):
        name = log_av(a)
        return 'INDEXED BY %s' % (name or 'idx_transactions_aevt')
    return (
        'WITH u AS (SELECT d.e FROM datoms d INDEXED BY idx_auto_avet_%(em)d WHERE d.a = %(em)d AND d.v = ?1 '
        '  AND d.tx <= ?2 '
        '  UNION ALL SELECT r.e FROM timelined_transactions r %(lvem)s WHERE r.timeline IS 0 AND r.a = %(em)d '
        '  AND r.v = ?1 AND r.added = 0 AND r.tx > ?2 AND %(lr)s), '
        'i AS (SELECT d.e FROM datoms d INDEXED BY idx_auto_avet_%(asg)d WHERE d.a = %(asg)d '
        '  AND d.v IN (SELECT +e FROM u) AND d.tx <= ?2 '
        '  UNION ALL SELECT r.e FROM timelined_transactions r %(lvasg)s WHERE r.timeline IS 0 AND r.a = %(asg)d '
        '  AND r.v IN (SELECT +e FROM u) AND r.added = 0 AND r.tx > ?2 AND %(lr)s), '
        't AS (SELECT d.e, d.v FROM datoms d INDEXED BY idx_datoms_aevt WHERE d.a = %(ti)d '
        '  AND d.e IN (SELECT e FROM i) AND d.tx <= ?2 '
        '  UNION ALL SELECT r.e, r.v FROM timelined_transactions r INDEXED BY idx_transactions_aevt '
        '  WHERE r.timeline IS 0 AND r.a = %(ti)d AND r.e IN (SELECT e FROM i) AND r.added = 0 AND r.tx > ?2 '
        '  AND %(lr)s), '
        's AS (SELECT d.e, d.v FROM datoms d INDEXED BY idx_datoms_aevt WHERE d.a = %(st)d '
        '  AND d.e IN (SELECT e FROM i) AND d.tx <= ?2 '
        '  UNION ALL SELECT r.e, r.v FROM timelined_transactions r INDEXED BY idx_transactions_aevt '
        '  WHERE r.timeline IS 0 AND r.a = %(st)d AND r.e IN (SELECT e FROM i) AND r.added = 0 AND r.tx > ?2 '
        '  AND %(lr)s) '
        'SELECT DISTINCT t.e, t.v, s.v FROM t CROSS JOIN s ON s.e = t.e'
        % {'em': em, 'asg': asg, 'ti': ti, 'st': st, 'lr': later('r'), 'lvem': lv(em), 'lvasg': lv(asg)})


def asof_log_sql(A):
    """ref_traversal as of ?2 from the log alone, in the order a person would join (email,
    assignee, title, state), each row visible when asserted at or before T with no
    retraction of the same datom in (tx, T] — the formulation our compiler uses."""
    def vis(t):
        return ('%s.timeline IS 0 AND %s.added = 1 AND %s.tx <= ?2 AND NOT EXISTS (SELECT 1 FROM '
                'timelined_transactions x WHERE x.timeline IS 0 AND x.a = %s.a AND x.e = %s.e AND '
                'x.value_type_tag = %s.value_type_tag AND x.v = %s.v AND x.added = 0 AND x.tx > %s.tx '
                'AND x.tx <= ?2)' % ((t,) * 8))
    return ('SELECT DISTINCT t2.e, t3.v, t4.v FROM timelined_transactions t1 '
            'CROSS JOIN timelined_transactions t2 ON t2.a = %d AND t2.v = +t1.e AND %s '
            'CROSS JOIN timelined_transactions t3 ON t3.a = %d AND t3.e = t2.e AND %s '
            'CROSS JOIN timelined_transactions t4 ON t4.a = %d AND t4.e = t2.e AND %s '
            'WHERE t1.a = %d AND t1.v = ?1 AND %s' % (
                A[':issue/assignee'], vis('t2'), A[':issue/title'], vis('t3'), A[':issue/state'], vis('t4'),
                A[':user/email'], vis('t1')))


def point_lookup_sql(A):
    """point_lookup's hand-written SQL (one parameter: the email), A from attr_ids."""
    return ('SELECT d1.e, d2.v FROM datoms d1 CROSS JOIN datoms d2 ON d2.e = d1.e AND d2.a = %d '
            'WHERE d1.a = %d AND d1.v = ?' % (A[':user/name'], A[':user/email']))


def scenarios(db, st, exp, rnd):
    """Each: name, query (None: pull), opts factory, input generator, baseline candidates
    [(label, sql factory(x) -> (sql, args))]."""
    A = attr_ids(db)
    nu = exp['users']
    em, nm, ti, sta, pr, asg = (A[':user/email'], A[':user/name'], A[':issue/title'],
                                A[':issue/state'], A[':issue/priority'], A[':issue/assignee'])
    issues = st['issue_eids']

    def email():
        return 'user%d@example.com' % rnd.randrange(nu)

    pl = point_lookup_sql(A)
    rt = ('SELECT d2.e, d3.v, d4.v FROM datoms d1 CROSS JOIN datoms d2 ON d2.a = %d AND d2.v = +d1.e '
          'CROSS JOIN datoms d3 ON d3.e = d2.e AND d3.a = %d CROSS JOIN datoms d4 ON d4.e = d2.e AND d4.a = %d '
          'WHERE d1.a = %d AND d1.v = ?' % (asg, ti, sta, em))
    ao = asof_sql(A, lambda a: log_value_index(db, a))
    ao2 = asof_log_sql(A)
    ag = [('aevt, count(*)', 'SELECT v, count(*) FROM datoms WHERE a = %d GROUP BY v' % sta),
          ('skip-scan values, count each',
           'WITH RECURSIVE vs(v) AS (SELECT (SELECT min(v) FROM datoms WHERE a = %d) '
           'UNION ALL SELECT (SELECT min(v) FROM datoms WHERE a = %d AND v > vs.v) FROM vs '
           'WHERE vs.v IS NOT NULL) SELECT v, (SELECT count(*) FROM datoms WHERE a = %d AND v = vs.v) '
           'FROM vs WHERE v IS NOT NULL' % (sta, sta, sta)),
          ('avet (index_avet IS NOT 0)', 'SELECT v, count(*) FROM datoms WHERE a = %d AND index_avet IS NOT 0 '
           'AND value_type_tag = 13 GROUP BY v' % sta)]
    ps = [('state then priority',
           'SELECT d1.e, d3.v, d2.v FROM datoms d1 CROSS JOIN datoms d2 ON d2.e = d1.e AND d2.a = %d AND d2.v >= ? '
           'CROSS JOIN datoms d3 ON d3.e = d1.e AND d3.a = %d WHERE d1.a = %d AND d1.v = \':state/open\''
           % (pr, ti, sta)),
          ('state via avet',
           'SELECT d1.e, d3.v, d2.v FROM datoms d1 CROSS JOIN datoms d2 ON d2.e = d1.e AND d2.a = %d AND d2.v >= ? '
           'CROSS JOIN datoms d3 ON d3.e = d1.e AND d3.a = %d WHERE d1.a = %d AND d1.index_avet IS NOT 0 '
           'AND d1.value_type_tag = 13 AND d1.v = \':state/open\'' % (pr, ti, sta)),
          ('priority via avet',
           'SELECT d2.e, d3.v, d2.v FROM datoms d2 CROSS JOIN datoms d1 ON d1.e = d2.e AND d1.a = %d '
           'AND d1.v = \':state/open\' CROSS JOIN datoms d3 ON d3.e = d2.e AND d3.a = %d WHERE d2.a = %d '
           'AND d2.index_avet IS NOT 0 AND d2.value_type_tag = 5 AND d2.v >= ?' % (sta, ti, pr))]
    si = [('datoms by a, tx filter', 'SELECT e FROM datoms WHERE a = %d AND tx > ?' % sta),
          ('log by a, then current',
           'SELECT lg.e FROM transactions lg CROSS JOIN datoms d ON d.e = lg.e AND d.a = lg.a AND '
           'd.value_type_tag = lg.value_type_tag AND d.v = lg.v AND d.tx = lg.tx WHERE lg.a = %d AND lg.added = 1 '
           'AND lg.tx > ?' % sta)]

    def ib(n):
        return ('SELECT d1.e, d2.v FROM datoms d1 CROSS JOIN datoms d2 ON d2.e = d1.e AND d2.a = %d '
                'WHERE d1.a = %d AND d1.v IN (%s)' % (nm, em, ','.join('?' * n)))
    pull = 'SELECT a, v, value_type_tag FROM datoms WHERE e = ?'
    return A, [
        ('point_lookup', PL_Q, lambda e: {'inputs': [e]}, email, [('', lambda e: (pl, (e,)))]),
        ('ref_traversal', RT_Q, lambda e: {'inputs': [e]}, email, [('', lambda e: (rt, (e,)))]),
        ('as_of', RT_Q, lambda e: {'inputs': [e], 'asOf': st['t_mid']}, email,
         [('current datoms + later retractions', lambda e: (ao, (e, st['t_mid']))),
          ('log only, join order fixed', lambda e: (ao2, (e, st['t_mid'])))]),
        ('aggregate', AG_Q, lambda _: {}, lambda: None, [(l, lambda _, s=s: (s, ())) for l, s in ag]),
        ('predicate_scan', PS_Q, lambda _: {'inputs': [4]}, lambda: None,
         [(l, lambda _, s=s: (s, (4,))) for l, s in ps]),
        ('since', SI_Q, lambda _: {'since': st['t_since']}, lambda: None,
         [(l, lambda _, s=s: (s, (st['t_since'],))) for l, s in si]),
        ('input_bindings', IB_Q, lambda es: {'inputs': [es]}, lambda: [email() for _ in range(100)],
         [('', lambda es: (ib(len(es)), tuple(es)))]),
        ('pull', None, None, lambda: rnd.choice(issues), [('', lambda e: (pull, (e,)))]),
    ]


# ---- ours and the baselines as callables -----------------------------------------------

# The table form selects the find elements' native columns (c0, c1, ...): the rows a SQL user
# joins with, and the same shape as the hand-written SQL's rows. (The `value` column gives each
# row as JSON as well; the scalar form is the JSON document.)
FIND_WIDTH = {PL_Q: 2, RT_Q: 3, AG_Q: 2, PS_Q: 3, SI_Q: 1, IB_Q: 2}


def table_sql(query):
    return 'SELECT %s FROM edn_q(?, ?, ?)' % ', '.join('c%d' % i for i in range(FIND_WIDTH[query]))


def ours_args(db, query, opts):
    """(table, scalar) argument makers: x -> (sql, args) for our two forms. Building the
    arguments (json.dumps of the opts) happens before the timer starts, as the baseline's
    SQL text and parameter tuple are built before its own (see measure)."""
    sql = table_sql(query) if query is not None else None

    def table(x):
        if query is None:
            return 'SELECT edn_pull(?, ?, ?)', (db, '[*]', x)
        return sql, (db, query, json.dumps(opts(x)))

    def scalar(x):
        if query is None:
            return 'SELECT edn_q(?, ?, ?)', (db, PULL_SCALAR_Q, json.dumps({'inputs': [x]}))
        return 'SELECT edn_q(?, ?, ?)', (db, query, json.dumps(opts(x)))
    return table, scalar


def all_rows(cur):
    return cur.fetchall()


def one_row(cur):
    return cur.fetchone()


def runner(c, make, fetch):
    """x -> the call to time on connection c: make(x) builds its SQL and parameters here,
    before the timer; fetch reads the rows as they are timed."""
    def prepare(x):
        s, args = make(x)
        return lambda: fetch(c.execute(s, args))
    return prepare


def ours_rows(con, db, query, opts):
    """x -> our table form's rows (edn_pull: its one row), fetched as measure times them."""
    table, _ = ours_args(db, query, opts)
    call = runner(con, table, one_row if query is None else all_rows)
    return lambda x: call(x)()


def norm_ours(rows):
    return sorted(tuple(r) for r in rows)


def norm_sql(rows):
    return sorted(tuple(r) for r in rows)


def pull_from_sql(rows, A):
    """The [*] pull map a baseline's (a, v, tag) rows stand for, in edn_pull's JSON shape."""
    m = {}
    many = {':issue/label'}
    for a, v, tag in rows:
        k = A['names'][a]
        val = {':db/id': v} if tag == 0 else v
        if k in many:
            m.setdefault(k, []).append(val)
        else:
            m[k] = val
    for k in many:
        if k in m:
            m[k] = sorted(m[k], key=lambda d: d[':db/id'])
    return m


def pull_norm(p):
    p = dict(p)
    p.pop(':db/id', None)
    for k, v in p.items():
        if isinstance(v, list):
            p[k] = sorted(v, key=lambda d: d[':db/id'] if isinstance(d, dict) else d)
    return p


def plan_of(raw, sql, args):
    rows = raw.execute('EXPLAIN QUERY PLAN ' + sql, args).fetchall()
    lines = [r[3] for r in rows]
    # a full scan of a store table (by its name or a baseline's alias) without an index;
    # the as_of CTEs u, i, t, s are small intermediate results and may be scanned
    bad = [l for l in lines if re.match(r'SCAN (datoms|timelined_transactions|d\d*|r|x|lg)( |$)', l)
           and 'INDEX' not in l]
    return lines, bad


def pick_baseline(con, raw, db, sc, A, inputs):
    """Checks each candidate against ours; returns (label, factory, plan lines, plan problems,
    candidate report, mismatch messages)."""
    name, query, opts, gen, cands = sc
    table = ours_rows(con, db, query, opts)
    report, ok = [], []
    for label, fac in cands:
        mism = None
        for x in inputs:
            s, args = fac(x)
            got = raw.execute(s, args).fetchall()
            if query is None:
                want = pull_norm(json.loads(table(x)[0]))
                have = pull_from_sql(got, A)
            else:
                want, have = norm_ours(table(x)), norm_sql(got)
            if want != have:
                mism = 'input %r: ours %d rows, SQL %d rows' % (x, len(want), len(have))
                break
        t = None
        if mism is None:
            ts = []
            for x in inputs:
                s, args = fac(x)
                ts.append(time_call(lambda: raw.execute(s, args).fetchall()))
            t = min(ts)
            ok.append((t, label, fac))
        report.append({'label': label, 'mismatch': mism, 'ms': t})
    if not ok:
        return None, None, [], [], report, ['%s: no baseline returns ours rows (%s)' % (
            name, '; '.join('%s: %s' % (r['label'] or 'baseline', r['mismatch']) for r in report))]
    ok.sort(key=lambda c: c[0])
    _, label, fac = ok[0]
    s, args = fac(inputs[0])
    lines, bad = plan_of(raw, s, args)
    return label, fac, lines, bad, report, []


def measure(con, raw, db, sc, fac, min_samples, min_secs, cap):
    name, query, opts, gen, _ = sc
    targs, sargs = ours_args(db, query, opts)
    # as before: the table form's rows (edn_pull: its one row), the scalar's one document,
    # the baseline's rows
    table = runner(con, targs, one_row if query is None else all_rows)
    scalar = runner(con, sargs, one_row)
    sql = runner(raw, fac, all_rows)

    def timed(prepare, x):
        """(wall ms, this thread's CPU ms) of one call, its arguments (opts JSON, SQL text
        and parameters) built before the timer starts. The CPU figure leaves out the time
        the process sat preempted on this shared machine (the call is synchronous, so all
        of the extension's work runs on this thread)."""
        call = prepare(x)
        c0, t0 = time.thread_time(), time.perf_counter()
        call()
        return (time.perf_counter() - t0) * 1000.0, (time.thread_time() - c0) * 1000.0

    forms = (('table', table), ('scalar', scalar), ('sql', sql))
    reps = []
    for _ in range(3):
        samples = {k: [] for f, _ in forms for k in (f, f + '_cpu')}
        for _ in range(3):
            x = gen()
            table(x)(), scalar(x)(), sql(x)()
        t0 = time.perf_counter()
        while True:
            n = len(samples['sql'])
            el = time.perf_counter() - t0
            if n >= min_samples and el >= min_secs:
                break
            if el >= cap and n >= 5:
                break
            # Each form gets its own random input: the first call to touch an input's data
            # pays for bringing it into memory caches (at m, 0.7-0.9 ms of a 0.2 ms
            # ref_traversal), and ours' two forms share a connection's page cache while the
            # SQL has its own, so a shared input favoured whichever of ours ran second.
            k = n % len(forms)
            for f, fn in forms[k:] + forms[:k]:
                x = gen()
                w, c = timed(fn, x)
                samples[f].append(w)
                samples[f + '_cpu'].append(c)
        reps.append({k: [percentile(v, 50), percentile(v, 95), percentile(v, 99), len(v)]
                     for k, v in samples.items()})
    out = {}
    for k in reps[0]:
        rs = sorted(reps, key=lambda r: r[k][0])
        out[k] = rs[1][k]
    return out


# ---- checks ---------------------------------------------------------------------------

def checks(con, db, st, exp, cur=None, touched=()):
    """BENCH.md's checks. cur: current state index per issue position (default: the
    generator's final states); touched: issue positions written after the history."""
    bad = []
    if cur is None:
        cur = [STATES.index(s) for s in exp['final_state']]
    issue_eid = st['issue_eids']

    def q(query, opts=None):
        return [json.loads(r[0]) for r in con.execute('SELECT value FROM edn_q(?, ?, ?)',
                                                       (db, query, json.dumps(opts or {})))]
    nu = exp['users']
    for u in (0, nu // 2, nu - 1):
        r = q(PL_Q, {'inputs': ['user%d@example.com' % u]})
        if len(r) != 1 or r[0][1] != 'User %d' % u:
            bad.append('point_lookup user %d: %r' % (u, r))
    r = dict((s, c) for s, c in q(AG_Q))
    per_state = {STATES[i]: cur.count(i) for i in range(5)}
    if r != per_state:
        bad.append('aggregate: %r != %r' % (r, per_state))
    if sum(r.values()) != exp['issues']:
        bad.append('aggregate sum %d != %d issues' % (sum(r.values()), exp['issues']))
    pos = {v: k for k, v in enumerate(issue_eid)}
    for u in (0, nu // 2, nu - 1):
        em = 'user%d@example.com' % u
        mine = [n for n, a in enumerate(exp['assignee']) if a == u]
        want_final = {issue_eid[n]: STATES[cur[n]] for n in mine}
        want_init = {issue_eid[n]: exp['initial_state'][n] for n in mine}
        got = {i: s for i, _, s in q(RT_Q, {'inputs': [em]})}
        if got != want_final:
            bad.append('ref_traversal user %d: %d rows, want %d (or states differ)' % (u, len(got), len(want_final)))
        got = {i: s for i, _, s in q(RT_Q, {'inputs': [em], 'asOf': st['t_mid']})}
        if got != want_init:
            bad.append('as_of user %d: %d rows, want %d (or states differ)' % (u, len(got), len(want_init)))
    prio = exp.get('priority')
    want = (sum(1 for n in range(exp['issues']) if cur[n] == 0 and prio[n] >= 4) if prio
            else exp['open_prio_ge4'])
    n = len(q(PS_Q, {'inputs': [4]}))
    if n != want:
        bad.append('predicate_scan: %d rows, want %d' % (n, want))
    got = sorted(pos[r[0]] for r in q(SI_Q, {'since': st['t_since']}))
    want = sorted(set(exp['last_history']) | set(touched))
    if got != want:
        bad.append('since: %d issues, want %d' % (len(got), len(want)))
    ems = ['user%d@example.com' % u for u in range(0, nu, max(1, nu // 100))][:100]
    got = {e: n for e, n in q(IB_Q, {'inputs': [ems]})}
    if sorted(got.values()) != sorted('User %s' % e[4:e.index('@')] for e in ems):
        bad.append('input_bindings names')
    for n in (0, exp['issues'] - 1):
        p = json.loads(con.execute('SELECT edn_pull(?, ?, ?)', (db, '[*]', issue_eid[n])).fetchone()[0])
        if (p.get(':issue/state') != STATES[cur[n]] or p.get(':issue/title', '').split(':')[0] != 'Issue %d' % n
                or ':issue/priority' not in p):
            bad.append('pull issue %d: %r' % (n, p))
    return bad


def build_id(ext):
    """The commit and the extension file's hash: other developers change ext/ while benches
    run, so each scale's figures say which build made them."""
    import hashlib
    so = ext if ext.endswith('.so') else ext + '.so'
    try:
        h = hashlib.sha1(open(so, 'rb').read()).hexdigest()[:10]
    except OSError:
        h = '?'
    try:
        head = subprocess.run(['git', '-C', HERE, 'rev-parse', '--short', 'HEAD'], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL).stdout.decode().strip()
        dirty = subprocess.run(['git', '-C', HERE, 'status', '--porcelain', '--', '../ext', '../vtab'],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode().split('\n')
        dirty = len([x for x in dirty if x.strip()])
    except OSError:
        head, dirty = '?', 0
    return '%s%s, .so sha1 %s' % (head, ' + %d uncommitted ext/vtab files' % dirty if dirty else '', h)


# ---- main -----------------------------------------------------------------------------

def fresh_load(ext, scale, out, P, exp, db):
    """A new store, loaded and checked; the later steps' old outputs removed."""
    remove_db(db)
    # a new store: the later steps' outputs of an earlier run at this scale are stale now
    for name in [P['writes'], P['results'], P['state']] + [os.path.join(out, x % scale) for x in (
            'transact-%s-FULL.json', 'transact-%s-NORMAL.json', 'threads-%s-1.json', 'threads-%s-2.json',
            'mixed-%s.json', 'open-%s.json', 'load-sql-%s.json') + (() if os.environ.get('KEEP_DS') else ('ds-%s.json',))]:
        if os.path.exists(name):
            os.unlink(name)
    con = connect(ext)
    L = Loader(con, db, P['data'])
    load_s = L.load()
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute('PRAGMA mmap_size=1073741824')
    n_datoms = raw.execute('SELECT count(*) FROM datoms').fetchone()[0]
    # datoms of the initial load, in the log (the history retracts and adds, so count there)
    n_load = raw.execute('SELECT count(*) FROM transactions WHERE tx > ? AND tx <= ?',
                         (L.txs[0], L.t_mid)).fetchone()[0]
    st = {'issue_eids': [L.issue_eid[n] for n in range(exp['issues'])], 't_mid': L.t_mid,
          't_since': L.t_since, 'txs': len(L.txs)}
    write_json(P['state'], st)
    res = {'scale': scale, 'datoms': n_datoms, 'load_datoms': n_load, 'load_seconds': load_s,
           'bulk_datoms_per_s': n_load / load_s, 'scenarios': {}, 'baselines': {},
           'sqlite': sqlite3.sqlite_version, 'build': build_id(ext)}
    print('loaded %d datoms (initial load, log rows incl. tx instants) in %.1f s: %.0f datoms/s; '
          'store has %d datoms' % (n_load, load_s, n_load / load_s, n_datoms), flush=True)
    bad = checks(con, db, st, exp)
    res['checks_after_load'] = bad
    for b in bad:
        print('CHECK FAILED (after load): ' + b, flush=True)
    return con, st, raw, res, bad


def main():
    ext, scale, out = sys.argv[1], sys.argv[2], sys.argv[3]
    quick = '--quick' in sys.argv
    cap = float(os.environ.get('BENCH_CAP', '20'))
    os.makedirs(out, exist_ok=True)
    P = paths(out, scale)
    if not os.path.exists(os.path.join(P['data'], 'ds.json')):
        subprocess.check_call([sys.executable, os.path.join(HERE, 'gen.py'), scale, P['data']])
    exp = json.load(open(os.path.join(P['data'], 'expect.json')))
    db = P['db']
    if '--reuse' in sys.argv and os.path.exists(P['state']) and os.path.exists(P['results']):
        # Re-time the scenarios on the existing store (after its transact/mixed writes, which
        # the writes log lets the checks account for); load figures and the other steps'
        # outputs are kept.
        con = connect(ext)
        st = json.load(open(P['state']))
        old = json.load(open(P['results']))
        raw = sqlite3.connect(db, isolation_level=None)
        raw.execute('PRAGMA mmap_size=1073741824')
        res = {k: old[k] for k in ('scale', 'datoms', 'load_datoms', 'load_seconds', 'bulk_datoms_per_s',
                                   'checks_after_load', 'sqlite') if k in old}
        res.update({'scenarios': {}, 'baselines': {}, 'build': build_id(ext),
                    'load_build': old.get('load_build', old.get('build')),
                    'retimed': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})
        cur, touched = current_states(P, exp)
        bad = checks(con, db, st, exp, cur, touched)
        res['checks_on_retime'] = bad
    else:
        con, st, raw, res, bad = fresh_load(ext, scale, out, P, exp, db)
    A, scs = scenarios(db, st, exp, random.Random(7))
    prnd = random.Random(11)
    problems = []
    for sc in scs:
        name = sc[0]
        # three fixed probe inputs for the baseline check (not the timed stream)
        saved = sc[3]
        inputs = [saved() for _ in range(3)]
        label, fac, plan, planbad, report, mism = pick_baseline(con, raw, db, sc, A, inputs)
        res['baselines'][name] = {'chosen': label, 'plan': plan, 'plan_problems': planbad,
                                  'candidates': report, 'mismatch': mism}
        problems += mism
        if planbad:
            problems.append('%s: baseline plan scans without an index: %s' % (name, '; '.join(planbad)))
        if fac is None:
            continue
        m = measure(con, raw, db, sc, fac, 10 if quick else 30, 0.3 if quick else 2.0, cap)
        res['scenarios'][name] = m
        print('%-15s table p50 %.4f ms  scalar p50 %.4f ms  sql p50 %.4f ms  ratio %.2f  (n=%d)' % (
            name, m['table'][0], m['scalar'][0], m['sql'][0], m['table'][0] / max(m['sql'][0], 1e-9),
            m['sql'][3]), flush=True)
        write_json(P['results'], dict(res, problems=problems))
    del prnd
    res['problems'] = problems
    write_json(P['results'], res)
    for b in problems:
        print('BASELINE PROBLEM: ' + b)
    return 1 if bad or problems else 0


if __name__ == '__main__':
    sys.exit(main())
