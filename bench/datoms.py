#!/usr/bin/python3
"""bench/datoms.py — the raw-index tables against hand-written SQL on the same store:
edn_datoms' point lookup (`:eavt` e a: one user's :user/name) and edn_log's tx range (one
history transaction of 500 state changes, tx_instant included), each beside the SQL a person
would write on the format's tables for the same rows (README "edn_datoms", "edn_log").

Usage: /usr/bin/python3 bench/datoms.py EXTENSION.so SCALE OUTDIR [--quick]
Uses OUTDIR/store-SCALE.db and its state (run.py makes them; loaded here the same way when
missing). Each baseline is checked against ours first (same rows); then both are timed
interleaved, call by call, on their own connections: warm-up 3 calls, each repetition at
least 30 samples and 2 s, median of 3 repetitions by p50, nearest-rank percentiles of wall
time and of the thread's CPU time. Writes OUTDIR/datoms-SCALE.json; the target is ours/SQL
p50 <= 1.25 (the datoms/SQL target of README "Performance").
"""
import json
import os
import random
import sqlite3
import subprocess
import sys
import time

from common import HERE, connect, paths, percentile, write_json

TARGET = 1.25


def ensure_store(ext, scale, out):
    P = paths(out, scale)
    if not (os.path.exists(P['db']) and os.path.exists(P['state'])):
        os.makedirs(out, exist_ok=True)
        if not os.path.exists(os.path.join(P['data'], 'ds.json')):
            subprocess.check_call([sys.executable, os.path.join(HERE, 'gen.py'), scale, P['data']])
        import run
        con, st, raw, res, bad = run.fresh_load(ext, scale, out, P, json.load(
            open(os.path.join(P['data'], 'expect.json'))), P['db'])
        con.close()
        raw.close()
    return P, json.load(open(P['state']))


def scenarios(db, raw, st, rnd):
    """name, ours (x -> sql, args), baseline (x -> sql, args), input generator, row normaliser."""
    name_a = raw.execute("SELECT e FROM idents WHERE v = ':user/name'").fetchone()[0]
    users = [e for (e,) in raw.execute('SELECT e FROM datoms WHERE a = ?', (name_a,))]
    # the history transactions: each changes the state of up to 500 issues
    state_a = raw.execute("SELECT e FROM idents WHERE v = ':issue/state'").fetchone()[0]
    hist = [t for (t,) in raw.execute(
        'SELECT DISTINCT tx FROM timelined_transactions WHERE timeline = 0 AND a = ? AND added = 0 '
        'ORDER BY tx', (state_a,))]
    pl_sql = 'SELECT e, a, v, tx FROM datoms WHERE e = ? AND a = %d' % name_a
    # the log read through its tx index, as a person tuning this SQL would name it
    lr_sql = ('SELECT d.tx, i.v, d.e, d.a, d.v, d.added FROM timelined_transactions d '
              'INDEXED BY idx_mentat_log_tx CROSS JOIN datoms i ON i.e = d.tx AND i.a = 3 '
              'WHERE d.timeline IS 0 AND d.tx >= ? AND d.tx < ? ORDER BY d.tx, d.rowid')
    return [
        ('datoms_point_lookup',
         lambda e: ("SELECT e, a, v, tx FROM edn_datoms(?, ':eavt', ?, ':user/name')", (db, e)),
         lambda e: (pl_sql, (e,)), lambda: rnd.choice(users),
         lambda rows, ours: [(r[0], r[2], r[3]) for r in rows]),
        ('log_tx_range',
         lambda t: ('SELECT tx, tx_instant, e, a, v, added FROM edn_log(?, ?, ?)', (db, t, t + 1)),
         lambda t: (lr_sql, (t, t + 1)), lambda: rnd.choice(hist),
         lambda rows, ours: [(r[0], r[2], r[5]) for r in rows]),
    ], hist


def timed(c, make, x):
    s, args = make(x)
    c0, t0 = time.thread_time(), time.perf_counter()
    c.execute(s, args).fetchall()
    return (time.perf_counter() - t0) * 1000.0, (time.thread_time() - c0) * 1000.0


def measure(con, raw, sc, min_samples, min_secs):
    name, ours, sql, gen, _ = sc
    forms = (('ours', con, ours), ('sql', raw, sql))
    reps = []
    for _ in range(3):
        samples = {k: [] for f, _, _ in forms for k in (f, f + '_cpu')}
        for _ in range(3):
            x = gen()
            for _, c, mk in forms:
                timed(c, mk, x)
        t0 = time.perf_counter()
        while len(samples['sql']) < min_samples or time.perf_counter() - t0 < min_secs:
            k = len(samples['sql']) % 2
            for f, c, mk in forms[k:] + forms[:k]:
                w, cpu = timed(c, mk, gen())
                samples[f].append(w)
                samples[f + '_cpu'].append(cpu)
        reps.append({k: [percentile(v, 50), percentile(v, 95), percentile(v, 99), len(v)]
                     for k, v in samples.items()})
    out = {}
    for k in reps[0]:
        out[k] = sorted(reps, key=lambda r: r[k][0])[1][k]
    return out


def main():
    ext, scale, out = sys.argv[1], sys.argv[2], sys.argv[3]
    quick = '--quick' in sys.argv
    P, st = ensure_store(ext, scale, out)
    db = P['db']
    con = connect(ext)
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute('PRAGMA mmap_size=1073741824')
    rnd = random.Random(17)
    scs, hist = scenarios(db, raw, st, rnd)
    res = {'scale': scale, 'scenarios': {}, 'problems': [], 'history_txs': len(hist),
           'plans': {}}
    for sc in scs:
        name, ours, sql, gen, norm = sc
        for x in [gen() for _ in range(3)]:
            s1, a1 = ours(x)
            s2, a2 = sql(x)
            mine = norm(con.execute(s1, a1).fetchall(), True)
            theirs = norm(raw.execute(s2, a2).fetchall(), False)
            if mine != theirs or not mine:
                res['problems'].append('%s input %r: ours %d rows, SQL %d rows (or they differ)'
                                       % (name, x, len(mine), len(theirs)))
                break
        s2, a2 = sql(gen())
        res['plans'][name] = [r[3] for r in raw.execute('EXPLAIN QUERY PLAN ' + s2, a2)]
        m = measure(con, raw, sc, 10 if quick else 30, 0.3 if quick else 2.0)
        ratio = m['ours'][0] / max(m['sql'][0], 1e-9)
        m['ratio'] = ratio
        m['ratio_cpu'] = m['ours_cpu'][0] / max(m['sql_cpu'][0], 1e-9)
        res['scenarios'][name] = m
        print('%-20s ours p50 %.4f ms  sql p50 %.4f ms  ratio %.2f (cpu %.2f)  target %.2f %s  (n=%d)' % (
            name, m['ours'][0], m['sql'][0], ratio, m['ratio_cpu'], TARGET,
            'pass' if ratio <= TARGET else 'miss', m['sql'][3]), flush=True)
    write_json(os.path.join(out, 'datoms-%s.json' % scale), res)
    for p in res['problems']:
        print('BASELINE PROBLEM: ' + p)
    return 1 if res['problems'] else 0


if __name__ == '__main__':
    sys.exit(main())
