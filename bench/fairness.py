#!/usr/bin/python3
"""fairness: FAIR_PROCS (default 4) processes write one store through edn_t at once, each one
host connection committing one-datom transactions in a tight loop for FAIR_SECONDS (default
20); counts the commits of each process. Across processes the store's write lock is SQLite's
(BEGIN IMMEDIATE, waiting under the busy timeout), so this measures whether one process
starves the others.

Usage: /usr/bin/python3 bench/fairness.py EXT [OUT.json]

Printed and written to OUT.json: commits per process, their spread (fewest / most, and the
coefficient of variation), each process's slowest commit and busy errors (README "Errors"),
and the total commits/s. Exit status 1 if an error other than busy occurred.
"""
import json
import multiprocessing as mp
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import connect  # noqa: E402

SCHEMA = '''[{:db/ident :f/proc :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
             {:db/ident :f/i :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]'''


def writer(ext, db, k, t_start, secs, q):
    con = connect(ext)
    n, busy, errors, worst, msgs = 0, 0, 0, 0.0, []
    while time.time() < t_start:
        time.sleep(0.001)
    t_end = t_start + secs
    while time.time() < t_end:
        t0 = time.perf_counter()
        try:
            con.execute('SELECT edn_t(?, ?)', (db, '[{:f/proc %d :f/i %d}]' % (k, n))).fetchone()
            n += 1
        except sqlite3.Error as e:
            m = str(e)
            if 'is busy' in m or 'database is locked' in m:
                busy += 1
            else:
                errors += 1
            if len(msgs) < 2:
                msgs.append(m)
        worst = max(worst, time.perf_counter() - t0)
    con.close()
    q.put((k, n, busy, errors, worst, msgs))


def main():
    ext = sys.argv[1]
    out_path = sys.argv[2] if len(sys.argv) > 2 else None
    secs = float(os.environ.get('FAIR_SECONDS', '20'))
    nproc = int(os.environ.get('FAIR_PROCS', '4'))
    tmp = tempfile.mkdtemp(prefix='mentat-fair.')
    db = os.path.join(tmp, 'fair.db')
    con = connect(ext)
    con.execute('SELECT edn_t(?, ?)', (db, SCHEMA)).fetchone()
    con.close()
    q = mp.Queue()
    t_start = time.time() + 1.0
    procs = [mp.Process(target=writer, args=(ext, db, k, t_start, secs, q)) for k in range(nproc)]
    for p in procs:
        p.start()
    got = sorted(q.get() for _ in procs)
    for p in procs:
        p.join()
    # The store's own count per process, to check the counts above.
    con = connect(ext)
    stored = dict(con.execute('SELECT c0, c1 FROM edn_q(?, ?)',
                              (db, '[:find ?p (count ?e) :where [?e :f/proc ?p]]')).fetchall())
    con.close()
    counts = [g[1] for g in got]
    mean = statistics.mean(counts)
    res = {'seconds': secs, 'processes': nproc,
           'busy_timeout_ms': os.environ.get('MENTAT_BUSY_TIMEOUT_MS', 'default'),
           'commits': counts, 'stored': [stored.get(k, 0) for k in range(nproc)],
           'busy': [g[2] for g in got], 'errors': [g[3] for g in got],
           'slowest_call_s': [round(g[4], 3) for g in got],
           'fewest_over_most': (min(counts) / max(counts)) if max(counts) else 0.0,
           'cv': (statistics.pstdev(counts) / mean) if mean else 0.0,
           'commits_per_s': sum(counts) / secs, 'messages': [m for g in got for m in g[5]][:4]}
    if out_path:
        with open(out_path, 'w') as f:
            json.dump(res, f, indent=1)
    print('fairness: %d processes, %.0f s, busy timeout %s ms' % (nproc, secs, res['busy_timeout_ms']))
    print('  commits per process: %s (stored %s)' % (counts, res['stored']))
    print('  fewest/most %.2f, coefficient of variation %.2f, %.0f commits/s in all'
          % (res['fewest_over_most'], res['cv'], res['commits_per_s']))
    print('  slowest call per process (s): %s; busy errors %s' % (res['slowest_call_s'], res['busy']))
    for m in res['messages']:
        print('  error: ' + m)
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if sum(res['errors']) else 0


if __name__ == '__main__':
    sys.exit(main())
