#!/usr/bin/python3
"""Benchmark runner for ../shared/BENCH.md: load, query scenarios vs hand-written SQL, checks.

Usage: /usr/bin/python3 bench/run.py EXTENSION.so SCALE OUTDIR [--quick]

Generates the data set (bench/gen.py), loads it through edn_t, runs every
query scenario through the edn_q table and the scalar edn_q, each interleaved
with the best hand-written SQL on the same store, runs the checks of BENCH.md
(a failed check fails the run), and writes OUTDIR/results.csv and
OUTDIR/results.json for bench/report.py. Timings are wall-clock per call in
milliseconds; ratios ours/SQL come from the same run, so the noise of this
shared machine cancels as far as it can.
"""
import json
import os
import random
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def connect(ext):
    con = sqlite3.connect(':memory:', isolation_level=None, check_same_thread=False)
    con.enable_load_extension(True)
    con.load_extension(ext)
    return con


def percentile(xs, p):
    """Nearest-rank percentile of a list of numbers."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


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
        t0 = time.perf_counter()
        self.tx(open(os.path.join(self.data, 'schema.edn')).read())
        loads = sorted(f for f in os.listdir(self.data) if f.startswith('load-'))
        for f in loads:
            r = self.tx(open(os.path.join(self.data, f)).read())
            for k, v in r['tempids'].items():
                if k[0] == 'i':
                    self.issue_eid[int(k[1:])] = v
        self.t_mid = self.txs[-1]
        load_s = time.perf_counter() - t0
        hist = sorted(f for f in os.listdir(self.data) if f.startswith('history-'))
        for k, f in enumerate(hist):
            if k == len(hist) - 1:
                self.t_since = self.txs[-1]
            pairs = json.load(open(os.path.join(self.data, f)))
            self.tx('[' + ' '.join('[:db/add %d :issue/state %s]' % (self.issue_eid[n], s)
                                   for n, s in pairs) + ']')
        if not hist:
            self.t_since = self.txs[-1]
        return load_s


def scenarios(db, L, exp, rnd):
    """(name, query, opts factory, baseline SQL, baseline args factory)."""
    raw = sqlite3.connect(db)
    A = {k: raw.execute('SELECT e FROM idents WHERE v = ?', (k,)).fetchone()[0] for k in (
        ':user/email', ':user/name', ':issue/title', ':issue/state', ':issue/priority', ':issue/assignee')}
    raw.close()
    nu = exp['users']

    def email():
        return 'user%d@example.com' % rnd.randrange(nu)

    pl_q = '[:find ?e ?name :in $ ?email :where [?e :user/email ?email] [?e :user/name ?name]]'
    pl_sql = ('SELECT d1.e, d2.v FROM datoms d1 JOIN datoms d2 ON d2.e = d1.e AND d2.a = %d '
              'WHERE d1.a = %d AND d1.v = ?' % (A[':user/name'], A[':user/email']))
    rt_q = ('[:find ?i ?title ?state :in $ ?email :where [?u :user/email ?email] [?i :issue/assignee ?u] '
            '[?i :issue/title ?title] [?i :issue/state ?state]]')
    rt_sql = ('SELECT d2.e, d3.v, d4.v FROM datoms d1 JOIN datoms d2 ON d2.a = %d AND d2.v = +d1.e '
              'JOIN datoms d3 ON d3.e = d2.e AND d3.a = %d JOIN datoms d4 ON d4.e = d2.e AND d4.a = %d '
              'WHERE d1.a = %d AND d1.v = ?' % (A[':issue/assignee'], A[':issue/title'], A[':issue/state'],
                                                A[':user/email']))

    def visible(alias, cond):
        # a log assertion at or before T with no retraction of the same datom in (tx, T]
        return ('%s.added = 1 AND %s.tx <= ?T AND %s AND NOT EXISTS (SELECT 1 FROM transactions r '
                'WHERE r.e = %s.e AND r.a = %s.a AND r.v = %s.v AND r.added = 0 AND r.tx > %s.tx AND r.tx <= ?T)'
                % (alias, alias, cond, alias, alias, alias, alias))
    ao_sql = ('SELECT DISTINCT t2.e, t3.v, t4.v FROM transactions t1 '
              'JOIN transactions t2 ON t2.a = %d AND t2.v = +t1.e AND %s '
              'JOIN transactions t3 ON t3.e = t2.e AND t3.a = %d AND %s '
              'JOIN transactions t4 ON t4.e = t2.e AND t4.a = %d AND %s '
              'WHERE t1.a = %d AND t1.v = ?E AND %s' % (
                  A[':issue/assignee'], visible('t2', '1'), A[':issue/title'], visible('t3', '1'),
                  A[':issue/state'], visible('t4', '1'), A[':user/email'], visible('t1', '1')))
    ag_q = '[:find ?state (count ?i) :where [?i :issue/state ?state]]'
    ag_sql = 'SELECT v, count(DISTINCT e) FROM datoms WHERE a = %d GROUP BY v' % A[':issue/state']
    ps_q = ('[:find ?i ?title ?priority :in $ ?min :where [?i :issue/state :state/open] '
            '[?i :issue/priority ?priority] [?i :issue/title ?title] [(>= ?priority ?min)]]')
    ps_sql = ('SELECT d1.e, d3.v, d2.v FROM datoms d1 JOIN datoms d2 ON d2.e = d1.e AND d2.a = %d '
              'AND d2.v >= ? JOIN datoms d3 ON d3.e = d1.e AND d3.a = %d WHERE d1.a = %d AND d1.v = \':state/open\''
              % (A[':issue/priority'], A[':issue/title'], A[':issue/state']))
    si_q = '[:find ?i :where [?i :issue/state _]]'
    si_sql = 'SELECT DISTINCT e FROM datoms WHERE a = %d AND tx > ?' % A[':issue/state']
    ib_q = '[:find ?e ?name :in $ [?email ...] :where [?e :user/email ?email] [?e :user/name ?name]]'

    def ib_sql(n):
        return ('SELECT d1.e, d2.v FROM datoms d1 JOIN datoms d2 ON d2.e = d1.e AND d2.a = %d '
                'WHERE d1.a = %d AND d1.v IN (%s)' % (A[':user/name'], A[':user/email'], ','.join('?' * n)))
    issues = list(L.issue_eid.values())
    out = []
    out.append(('point_lookup', pl_q, lambda e: {'inputs': [e]}, lambda e: (pl_sql, (e,)), email))
    out.append(('ref_traversal', rt_q, lambda e: {'inputs': [e]}, lambda e: (rt_sql, (e,)), email))
    out.append(('as_of', rt_q, lambda e: {'inputs': [e], 'asOf': L.t_mid},
                lambda e: (ao_sql.replace('?T', '?2').replace('?E', '?1'), (e, L.t_mid)), email))
    out.append(('aggregate', ag_q, lambda _: {}, lambda _: (ag_sql, ()), lambda: None))
    out.append(('predicate_scan', ps_q, lambda _: {'inputs': [4]}, lambda _: (ps_sql, (4,)), lambda: None))
    out.append(('since', si_q, lambda _: {'since': L.t_since}, lambda _: (si_sql, (L.t_since,)), lambda: None))
    out.append(('input_bindings', ib_q, lambda es: {'inputs': [es]}, lambda es: (ib_sql(len(es)), tuple(es)),
                lambda: [email() for _ in range(100)]))
    out.append(('pull', None, None, lambda e: ('SELECT a, v, value_type_tag FROM datoms WHERE e = ?', (e,)),
                lambda: rnd.choice(issues)))
    return out


def time_call(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


def measure(con, db, sc, min_samples, min_secs):
    name, query, opts, base, gen = sc
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute('PRAGMA mmap_size=1073741824')

    def ours_table(x):
        if query is None:
            con.execute('SELECT edn_pull(?, ?, ?)', (db, '[*]', x)).fetchone()
        else:
            con.execute('SELECT value FROM edn_q(?, ?, ?)', (db, query, json.dumps(opts(x)))).fetchall()

    def ours_scalar(x):
        if query is None:
            con.execute('SELECT edn_q(?, ?, ?)', (db, '[:find (pull ?e [*]) . :in $ ?e]',
                                                 json.dumps({'inputs': [x]}))).fetchone()
        else:
            con.execute('SELECT edn_q(?, ?, ?)', (db, query, json.dumps(opts(x)))).fetchone()

    def sql(x):
        s, args = base(x)
        raw.execute(s, args).fetchall()
    reps = []
    for _ in range(3):
        samples = {'table': [], 'scalar': [], 'sql': []}
        for _ in range(3):
            x = gen()
            ours_table(x), ours_scalar(x), sql(x)
        t_end = time.perf_counter() + min_secs
        while len(samples['sql']) < min_samples or time.perf_counter() < t_end:
            x = gen()
            samples['table'].append(time_call(lambda: ours_table(x)))
            samples['scalar'].append(time_call(lambda: ours_scalar(x)))
            samples['sql'].append(time_call(lambda: sql(x)))
        reps.append({k: (percentile(v, 50), percentile(v, 95), percentile(v, 99), len(v))
                     for k, v in samples.items()})
    raw.close()
    # median of 3 repetitions, by p50
    out = {}
    for k in ('table', 'scalar', 'sql'):
        rs = sorted(reps, key=lambda r: r[k][0])
        out[k] = rs[1][k]
    return out


def checks(con, db, L, exp):
    bad = []

    def q(query, opts=None):
        return [json.loads(r[0]) for r in con.execute('SELECT value FROM edn_q(?, ?, ?)',
                                                       (db, query, json.dumps(opts or {})))]
    nu = exp['users']
    for u in (0, nu // 2, nu - 1):
        r = q('[:find ?e ?name :in $ ?email :where [?e :user/email ?email] [?e :user/name ?name]]',
              {'inputs': ['user%d@example.com' % u]})
        if len(r) != 1 or r[0][1] != 'User %d' % u:
            bad.append('point_lookup user %d: %r' % (u, r))
    r = dict((s, c) for s, c in q('[:find ?state (count ?i) :where [?i :issue/state ?state]]'))
    if r != exp['per_state']:
        bad.append('aggregate: %r != %r' % (r, exp['per_state']))
    if sum(r.values()) != exp['issues']:
        bad.append('aggregate sum %d != %d issues' % (sum(r.values()), exp['issues']))
    pos = {v: k for k, v in L.issue_eid.items()}
    for u in (0, nu // 2):
        em = 'user%d@example.com' % u
        want_final = {L.issue_eid[n]: exp['final_state'][n] for n, a in enumerate(exp['assignee']) if a == u}
        want_init = {L.issue_eid[n]: exp['initial_state'][n] for n, a in enumerate(exp['assignee']) if a == u}
        rt = '[:find ?i ?title ?state :in $ ?email :where [?u :user/email ?email] [?i :issue/assignee ?u] [?i :issue/title ?title] [?i :issue/state ?state]]'
        got = {i: s for i, _, s in q(rt, {'inputs': [em]})}
        if got != want_final:
            bad.append('ref_traversal user %d: %d rows, want %d' % (u, len(got), len(want_final)))
        got = {i: s for i, _, s in q(rt, {'inputs': [em], 'asOf': L.t_mid})}
        if got != want_init:
            bad.append('as_of user %d: %d rows, want %d' % (u, len(got), len(want_init)))
    n = len(q('[:find ?i ?title ?priority :in $ ?min :where [?i :issue/state :state/open] [?i :issue/priority ?priority] [?i :issue/title ?title] [(>= ?priority ?min)]]', {'inputs': [4]}))
    if n != exp['open_prio_ge4']:
        bad.append('predicate_scan: %d rows, want %d' % (n, exp['open_prio_ge4']))
    got = sorted(pos[i] for i in q('[:find ?i :where [?i :issue/state _]]', {'since': L.t_since}))
    if got != exp['last_history']:
        bad.append('since: %d issues, want %d' % (len(got), len(exp['last_history'])))
    ems = ['user%d@example.com' % u for u in range(0, nu, max(1, nu // 100))][:100]
    got = {e: n for e, n in q('[:find ?e ?name :in $ [?email ...] :where [?e :user/email ?email] [?e :user/name ?name]]', {'inputs': [ems]})}
    if sorted(got.values()) != sorted('User %s' % e[4:e.index('@')] for e in ems):
        bad.append('input_bindings names')
    e = L.issue_eid[0]
    p = json.loads(con.execute('SELECT edn_pull(?, ?, ?)', (db, '[*]', e)).fetchone()[0])
    if p.get(':issue/state') != exp['final_state'][0] or ':issue/title' not in p or ':issue/priority' not in p:
        bad.append('pull: %r' % p)
    return bad


def main():
    ext, scale, out = sys.argv[1], sys.argv[2], sys.argv[3]
    quick = '--quick' in sys.argv
    ext = os.path.abspath(ext)
    ext = ext[:-3] if ext.endswith('.so') else ext
    os.makedirs(out, exist_ok=True)
    data = os.path.join(out, 'data-' + scale)
    if not os.path.exists(os.path.join(data, 'expect.json')):
        subprocess.check_call([sys.executable, os.path.join(HERE, 'gen.py'), scale, data])
    exp = json.load(open(os.path.join(data, 'expect.json')))
    db = os.path.join(out, 'store-%s.db' % scale)
    for s in ('', '-wal', '-shm'):
        if os.path.exists(db + s):
            os.unlink(db + s)
    con = connect(ext)
    L = Loader(con, db, data)
    load_s = L.load()
    n_datoms = sqlite3.connect(db).execute('SELECT count(*) FROM datoms').fetchone()[0]
    results = {'scale': scale, 'datoms': n_datoms, 'load_seconds': load_s,
               'bulk_datoms_per_s': n_datoms / load_s, 'scenarios': {}}
    print('loaded %d datoms in %.1f s (%.0f datoms/s)' % (n_datoms, load_s, n_datoms / load_s))
    bad = checks(con, db, L, exp)
    rnd = random.Random(7)
    for sc in scenarios(db, L, exp, rnd):
        m = measure(con, db, sc, 10 if quick else 30, 0.3 if quick else 2.0)
        results['scenarios'][sc[0]] = m
        print('%-15s table p50 %.4f ms  scalar p50 %.4f ms  sql p50 %.4f ms  ratio %.2f' % (
            sc[0], m['table'][0], m['scalar'][0], m['sql'][0], m['table'][0] / max(m['sql'][0], 1e-9)))
    results['checks_failed'] = bad
    json.dump(results, open(os.path.join(out, 'results-%s.json' % scale), 'w'), indent=1)
    with open(os.path.join(out, 'results-%s.csv' % scale), 'w') as f:
        f.write('scale,scenario,form,p50_ms,p95_ms,p99_ms,samples\n')
        for name, m in results['scenarios'].items():
            for form, v in m.items():
                f.write('%s,%s,%s,%.5f,%.5f,%.5f,%d\n' % ((scale, name, form) + tuple(v)))
    for b in bad:
        print('CHECK FAILED: ' + b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
