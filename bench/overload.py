#!/usr/bin/python3
"""overload: OVERLOAD_WRITERS (default 64) writer threads in one process on one store, each its
own host connection committing one-datom edn_t calls in a loop, while a reader process times
point lookups (edn_q scalar); the same reader alone first, as the baseline.

Usage: /usr/bin/python3 bench/overload.py EXT [OUT.json]

Each phase lasts OVERLOAD_SECONDS (default 10). Printed and written to OUT.json: the reader's
p50/p99/max latency alone and under the writers; each edn_t call's time (its wait for the
write lock included) for the calls that committed and for those that failed, the failures by
kind (`busy`: README "Errors"' busy errors; `error`: anything else) and the error rate. The
writers' wait is bounded by MENTAT_BUSY_TIMEOUT_MS (README "Limits and settings"): run with
e.g. MENTAT_BUSY_TIMEOUT_MS=200 to see writers refused. Exit status 1 if an error other than
busy occurred.
"""
import json
import multiprocessing as mp
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import connect, percentile  # noqa: E402

SCHEMA = '''[{:db/ident :p/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one
              :db/unique :db.unique/identity}
             {:db/ident :p/n :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]'''
Q = '[:find ?n . :in $ ?id :where [?e :p/id ?id] [?e :p/n ?n]]'
N_ENT = 1000


def reader(ext, db, secs, q):
    con = connect(ext)
    rnd = random.Random(5)
    lat = []
    t_end = time.time() + secs
    while time.time() < t_end:
        t0 = time.perf_counter()
        con.execute('SELECT edn_q(?, ?, ?)', (db, Q, json.dumps({'inputs': [rnd.randrange(N_ENT)]}))).fetchone()
        lat.append((time.perf_counter() - t0) * 1000.0)
    q.put(('reader', lat))


def writers(ext, db, n, secs, q):
    ok, failed, kinds, msgs = [], [], {'busy': 0, 'error': 0}, []
    lock = threading.Lock()

    def one(k):
        con = connect(ext)
        rnd = random.Random(k)
        t_end = time.time() + secs
        while time.time() < t_end:
            t0 = time.perf_counter()
            try:
                con.execute('SELECT edn_t(?, ?)', (db, '[{:p/id %d :p/n %d}]' % (rnd.randrange(N_ENT), rnd.randrange(1 << 30)))).fetchone()
                with lock:
                    ok.append((time.perf_counter() - t0) * 1000.0)
            except sqlite3.Error as e:
                m = str(e)
                kind = 'busy' if ('is busy' in m or 'database is locked' in m) else 'error'
                with lock:
                    failed.append((time.perf_counter() - t0) * 1000.0)
                    kinds[kind] += 1
                    if len(msgs) < 3:
                        msgs.append(m)
        con.close()

    ts = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    q.put(('writers', ok, failed, kinds, msgs))


def stats(xs):
    if not xs:
        return None
    return {'n': len(xs), 'p50_ms': percentile(xs, 50), 'p99_ms': percentile(xs, 99), 'max_ms': max(xs)}


def run_phase(ext, db, secs, nwriters):
    q = mp.Queue()
    procs = [mp.Process(target=reader, args=(ext, db, secs, q))]
    if nwriters:
        procs.append(mp.Process(target=writers, args=(ext, db, nwriters, secs, q)))
    for p in procs:
        p.start()
    got = [q.get() for _ in procs]
    for p in procs:
        p.join()
    return {g[0]: g[1:] for g in got}


def main():
    ext = sys.argv[1]
    out_path = sys.argv[2] if len(sys.argv) > 2 else None
    secs = float(os.environ.get('OVERLOAD_SECONDS', '10'))
    nw = int(os.environ.get('OVERLOAD_WRITERS', '64'))
    tmp = tempfile.mkdtemp(prefix='mentat-overload.')
    db = os.path.join(tmp, 'overload.db')
    con = connect(ext)
    con.execute('SELECT edn_t(?, ?)', (db, SCHEMA)).fetchone()
    con.execute('SELECT edn_t(?, ?)', (db, '[%s]' % ' '.join('{:p/id %d :p/n 0}' % i for i in range(N_ENT)))).fetchone()
    con.close()

    alone = run_phase(ext, db, secs, 0)
    loaded = run_phase(ext, db, secs, nw)
    ok, failed, kinds, msgs = loaded['writers']
    calls = len(ok) + len(failed)
    res = {'seconds': secs, 'writers': nw, 'busy_timeout_ms': os.environ.get('MENTAT_BUSY_TIMEOUT_MS', 'default'),
           'reader_alone': stats(alone['reader'][0]), 'reader_under_writers': stats(loaded['reader'][0]),
           'writer_ok': stats(ok), 'writer_failed': stats(failed), 'writer_calls': calls,
           'commits_per_s': len(ok) / secs, 'failures': kinds,
           'error_rate': (len(failed) / calls) if calls else 0.0, 'error_messages': msgs}
    if out_path:
        with open(out_path, 'w') as f:
            json.dump(res, f, indent=1)
    ra, rl, wo, wf = res['reader_alone'], res['reader_under_writers'], res['writer_ok'], res['writer_failed']
    print('overload %d writers, %.0f s per phase, busy timeout %s ms' % (nw, secs, res['busy_timeout_ms']))
    print('  reader alone:          p50 %.3f  p99 %.3f  max %.1f ms (%d calls)' % (ra['p50_ms'], ra['p99_ms'], ra['max_ms'], ra['n']))
    print('  reader under writers:  p50 %.3f  p99 %.3f  max %.1f ms (%d calls)' % (rl['p50_ms'], rl['p99_ms'], rl['max_ms'], rl['n']))
    if wo:
        print('  writers committed:     p50 %.1f  p99 %.1f  max %.1f ms (%d, %.0f/s)' % (wo['p50_ms'], wo['p99_ms'], wo['max_ms'], wo['n'], res['commits_per_s']))
    if wf:
        print('  writers failed:        p50 %.1f  p99 %.1f  max %.1f ms (%d)' % (wf['p50_ms'], wf['p99_ms'], wf['max_ms'], wf['n']))
    print('  error rate %.1f %% (busy %d, other %d)' % (100 * res['error_rate'], kinds['busy'], kinds['error']))
    for m in msgs:
        print('  error: ' + m)
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if kinds['error'] else 0


if __name__ == '__main__':
    sys.exit(main())
