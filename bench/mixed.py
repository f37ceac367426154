#!/usr/bin/python3
"""mixed: 8 reader processes (point_lookup, ref_traversal) and 1 writer (transact_one) on one
store for MIXED_SECONDS (default 60), then BENCH.md's checks again.

Usage: /usr/bin/python3 bench/mixed.py EXT SCALE OUTDIR

Each process loads the extension into its own host connection (so each has its own store
cache and pool, as separate application processes would). The parent samples the size of
the store's -wal file every 100 ms. Every error a process sees is counted (and the first
few kept). Results: OUTDIR/mixed-SCALE.json with reads/s, writes/s, errors, WAL max, and
the checks after the run (replaying the writes log, see common.py).
"""
import json
import multiprocessing as mp
import os
import random
import sys
import time

from common import connect, current_states, load_state, write_json
from run import PL_Q, RT_Q, checks
from write import Writer


def reader(ext, db, nu, k, secs, q):
    con = connect(ext)
    rnd = random.Random(1000 + k)
    n = errs = 0
    msgs = []
    t_end = time.time() + secs
    while time.time() < t_end:
        em = 'user%d@example.com' % rnd.randrange(nu)
        try:
            con.execute('SELECT value FROM edn_q(?, ?, ?)', (db, PL_Q if n % 2 else RT_Q,
                                                             json.dumps({'inputs': [em]}))).fetchall()
            n += 1
        except Exception as e:  # counted, never fatal: the figure is the error count
            errs += 1
            if len(msgs) < 3:
                msgs.append(str(e))
    q.put(('reader', n, errs, msgs))


def writer(ext, out, scale, secs, q):
    P, st, exp = load_state(out, scale)
    con = connect(ext)
    w = Writer(con, P, st, exp, 'mixed')
    n = errs = 0
    msgs = []
    t_end = time.time() + secs
    while time.time() < t_end:
        try:
            w.one()
            n += 1
        except Exception as e:
            errs += 1
            if len(msgs) < 3:
                msgs.append(str(e))
    q.put(('writer', n, errs, msgs))


def main():
    ext, scale, out = sys.argv[1], sys.argv[2], sys.argv[3]
    secs = float(os.environ.get('MIXED_SECONDS', '60'))
    P, st, exp = load_state(out, scale)
    db = P['db']
    q = mp.Queue()
    procs = [mp.Process(target=reader, args=(ext, db, exp['users'], k, secs, q)) for k in range(8)]
    procs.append(mp.Process(target=writer, args=(ext, out, scale, secs, q)))
    wal = db + '-wal'
    samples = []
    t0 = time.time()
    for p in procs:
        p.start()
    while any(p.is_alive() for p in procs):
        try:
            samples.append((time.time() - t0, os.path.getsize(wal)))
        except OSError:
            samples.append((time.time() - t0, 0))
        time.sleep(0.1)
    el = time.time() - t0
    got = [q.get() for _ in procs]
    for p in procs:
        p.join()
    reads = sum(g[1] for g in got if g[0] == 'reader')
    writes = sum(g[1] for g in got if g[0] == 'writer')
    errs = sum(g[2] for g in got)
    msgs = [m for g in got for m in g[3]][:5]
    cur, touched = current_states(P, exp)
    con = connect(ext)
    bad = checks(con, db, st, exp, cur, touched)
    wal_max = max(s for _, s in samples) if samples else 0
    res = {'seconds': el, 'readers': 8, 'reads': reads, 'reads_per_s': reads / el, 'writes': writes,
           'writes_per_s': writes / el, 'errors': errs, 'error_messages': msgs,
           'wal_max_bytes': wal_max, 'wal_samples': samples, 'checks_after_mixed': bad}
    write_json(os.path.join(out, 'mixed-%s.json' % scale), res)
    print('mixed %.0f s: %.0f reads/s, %.0f writes/s, %d errors, WAL max %.1f MiB' % (
        el, reads / el, writes / el, errs, wal_max / 1048576.0))
    for b in bad:
        print('CHECK FAILED (after mixed): ' + b)
    for m in msgs:
        print('error: ' + m)
    return 1 if bad or errs or wal_max >= 64 * 1048576 else 0


if __name__ == '__main__':
    sys.exit(main())
