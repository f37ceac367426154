#!/usr/bin/python3
"""soak: SOAK_PROCS processes x SOAK_THREADS threads (default 4 x 4) on one store for
SOAK_SECONDS (default 600), each thread its own host connection loading the extension:
reads (edn_q as a table and as a scalar, edn_pull), edn_t inserts and :db/cas increments of
SOAK_COUNTERS shared counters (default 4).

Usage: /usr/bin/python3 bench/soak.py EXT [OUT.json]

Checked as it goes (each thread): a counter read never goes below one read before it (table,
scalar and pull alike), a counter read after its own successful cas is at least that value,
and the number of items a thread inserted (edn_q scalar count) is exactly what it counted.
Checked at the end: each counter equals the successful cas increments all threads counted
(no lost update); the reports' tx ids are distinct across processes, and the log holds each
of them once (one :db/txInstant row each) and no other tx past the setup; PRAGMA
integrity_check. Errors: a failed cas (`cas failed`) is the expected conflict and retried;
the documented busy errors (README "Errors": `is busy`, `database is locked`) are counted;
any other error fails the run. The parent samples the -wal size and each process's RSS
every 100 ms: the WAL must stay under MENTAT_WAL_RESTART_BYTES (default 64 MiB), each RSS
under SOAK_RSS_MIB (default 256), and no process's RSS may grow more than SOAK_RSS_GROWTH_MIB
(default 32) from its value at a quarter of the run to its maximum after it (a leak shows as
growth proportional to the run).
Exit status 0 when every check holds; prints one summary line and writes OUT.json.
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
from common import connect  # noqa: E402

SCHEMA = '''[{:db/ident :c/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one
              :db/unique :db.unique/identity}
             {:db/ident :c/n :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
             {:db/ident :item/p :db/valueType :db.type/long :db/cardinality :db.cardinality/one
              :db/index true}
             {:db/ident :item/k :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
             {:db/ident :item/txt :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]'''
Q_ALL = '[:find ?name ?n :where [?c :c/name ?name] [?c :c/n ?n]]'
Q_ONE = '[:find ?n . :in $ ?name :where [?c :c/name ?name] [?c :c/n ?n]]'
Q_ITEMS = '[:find (count ?i) . :in $ ?p :where [?i :item/p ?p]]'
PULL = '[:c/name :c/n]'
BUSY = ('is busy', 'database is locked')


def scalar(con, db, q, arg):
    """edn_q's scalar form with one input: the document's result."""
    return json.loads(con.execute('SELECT edn_q(?, ?, ?)', (db, q, json.dumps({'inputs': [arg]}))).fetchone()[0])['result']


def classify(msg):
    if 'cas failed' in msg:
        return 'cas_conflict'
    if any(b in msg for b in BUSY):
        return 'busy'
    return 'error'


def worker(ext, db, pk, tk, ncounters, secs, seed, out):
    """One thread's loop; fills the dict `out`."""
    con = connect(ext)
    rnd = random.Random(seed)
    tag = pk * 100 + tk
    seen = [0] * ncounters            # the largest value this thread has read per counter
    inc = [0] * ncounters             # successful cas increments of this thread
    tx_ids = []
    ops = {'q_table': 0, 'q_scalar': 0, 'pull': 0, 'insert': 0, 'cas': 0, 'cas_conflict': 0,
           'busy': 0, 'error': 0}
    msgs = []
    bad = []
    inserted = 0

    def saw(c, v, where):
        if v < seen[c]:
            bad.append('%s: counter c%d went back from %d to %d' % (where, c, seen[c], v))
        seen[c] = max(seen[c], v)

    def fail(e):
        kind = classify(str(e))
        ops[kind] += 1
        if kind != 'cas_conflict' and len(msgs) < 5:
            msgs.append(str(e))
        return kind

    t_end = time.time() + secs
    while time.time() < t_end and len(bad) < 5:
        r = rnd.random()
        try:
            if r < 0.35:                        # cas increment
                c = rnd.randrange(ncounters)
                name = 'c%d' % c
                v = scalar(con, db, Q_ONE, name)
                saw(c, v, 'scalar')
                try:
                    rep = con.execute('SELECT edn_t(?, ?)', (db, '[[:db/cas [:c/name "%s"] :c/n %d %d]]'
                                                              % (name, v, v + 1))).fetchone()[0]
                except sqlite3.Error as e:
                    fail(e)
                    continue
                tx_ids.append(json.loads(rep)['tx_id'])
                inc[c] += 1
                ops['cas'] += 1
                saw(c, v + 1, 'after own cas')
            elif r < 0.50:                      # insert
                try:
                    rep = con.execute('SELECT edn_t(?, ?)', (db, '[{:item/p %d :item/k %d :item/txt "t%d-%d"}]'
                                                              % (tag, inserted, tag, inserted))).fetchone()[0]
                except sqlite3.Error as e:
                    fail(e)
                    continue
                tx_ids.append(json.loads(rep)['tx_id'])
                inserted += 1
                ops['insert'] += 1
                if inserted % 16 == 0:
                    n = scalar(con, db, Q_ITEMS, tag)
                    if n != inserted:
                        bad.append('thread %d: %d items found, %d inserted' % (tag, n, inserted))
            elif r < 0.75:                      # edn_q table
                for name, v in con.execute('SELECT c0, c1 FROM edn_q(?, ?)', (db, Q_ALL)):
                    saw(int(name[1:]), v, 'table')
                ops['q_table'] += 1
            elif r < 0.90:                      # edn_q scalar
                c = rnd.randrange(ncounters)
                v = scalar(con, db, Q_ONE, 'c%d' % c)
                saw(c, v, 'scalar')
                ops['q_scalar'] += 1
            else:                               # edn_pull
                c = rnd.randrange(ncounters)
                m = json.loads(con.execute('SELECT edn_pull(?, ?, ?)', (db, PULL, '[:c/name "c%d"]' % c)).fetchone()[0])
                saw(c, m[':c/n'], 'pull')
                ops['pull'] += 1
        except sqlite3.Error as e:              # a read's error
            fail(e)
    con.close()
    out.update({'ops': ops, 'inc': inc, 'tx_ids': tx_ids, 'msgs': msgs, 'bad': bad, 'inserted': inserted})


def process(ext, db, pk, nthreads, ncounters, secs, q):
    outs = [{} for _ in range(nthreads)]
    ts = [threading.Thread(target=worker, args=(ext, db, pk, k, ncounters, secs, 7919 * pk + k, outs[k]))
          for k in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    q.put(outs)


def rss_kib(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main():
    ext = sys.argv[1]
    out_path = sys.argv[2] if len(sys.argv) > 2 else None
    secs = float(os.environ.get('SOAK_SECONDS', '600'))
    nprocs = int(os.environ.get('SOAK_PROCS', '4'))
    nthreads = int(os.environ.get('SOAK_THREADS', '4'))
    ncounters = int(os.environ.get('SOAK_COUNTERS', '4'))
    rss_max_mib = float(os.environ.get('SOAK_RSS_MIB', '256'))
    growth_mib = float(os.environ.get('SOAK_RSS_GROWTH_MIB', '32'))
    wal_bound = int(os.environ.get('MENTAT_WAL_RESTART_BYTES', str(64 << 20)))
    tmp = tempfile.mkdtemp(prefix='mentat-soak.')
    db = os.path.join(tmp, 'soak.db')
    con = connect(ext)
    con.execute('SELECT edn_t(?, ?)', (db, SCHEMA)).fetchone()
    con.execute('SELECT edn_t(?, ?)', (db, '[%s]' % ' '.join('{:c/name "c%d" :c/n 0}' % c for c in range(ncounters)))).fetchone()
    con.close()
    raw = sqlite3.connect(db)
    setup_max_tx = raw.execute('SELECT max(tx) FROM timelined_transactions').fetchone()[0]
    raw.close()

    q = mp.Queue()
    procs = [mp.Process(target=process, args=(ext, db, k, nthreads, ncounters, secs, q)) for k in range(nprocs)]
    t0 = time.time()
    for p in procs:
        p.start()
    wal_max = 0
    rss = {p.pid: [] for p in procs}            # [(t, KiB)]
    results = []
    while len(results) < nprocs:
        try:
            results.append(q.get(timeout=0.1))  # drain as they finish (a full pipe blocks the child)
        except Exception:
            pass
        try:
            wal_max = max(wal_max, os.path.getsize(db + '-wal'))
        except OSError:
            pass
        t = time.time() - t0
        for p in procs:
            v = rss_kib(p.pid)
            if v is not None:
                rss[p.pid].append((t, v))
        if t > secs + 120 and len(results) < nprocs:
            print('soak: a process did not finish')
            break
    el = time.time() - t0
    for p in procs:
        p.join(10)
    outs = [o for r in results for o in r]

    bad = [b for o in outs for b in o['bad']]
    ops = {}
    for o in outs:
        for k, v in o['ops'].items():
            ops[k] = ops.get(k, 0) + v
    msgs = [m for o in outs for m in o['msgs']][:8]
    if len(outs) != nprocs * nthreads:
        bad.append('%d of %d threads reported' % (len(outs), nprocs * nthreads))
    if ops.get('error'):
        bad.append('%d errors other than a documented busy one' % ops['error'])

    con = connect(ext)
    for c in range(ncounters):
        want = sum(o['inc'][c] for o in outs)
        got = scalar(con, db, Q_ONE, 'c%d' % c)
        if got != want:
            bad.append('lost update: counter c%d is %d, %d successful cas increments' % (c, got, want))
    con.close()
    tx_ids = [t for o in outs for t in o['tx_ids']]
    if len(set(tx_ids)) != len(tx_ids):
        bad.append('%d tx ids reported twice' % (len(tx_ids) - len(set(tx_ids))))
    raw = sqlite3.connect(db)
    inst = raw.execute("SELECT e FROM idents WHERE v = ':db/txInstant'").fetchone()[0]
    log_tx = [r[0] for r in raw.execute('SELECT DISTINCT tx FROM timelined_transactions WHERE tx > ?', (setup_max_tx,))]
    inst_rows = raw.execute('SELECT count(*), count(DISTINCT e) FROM timelined_transactions WHERE tx > ? AND a = ? AND e = tx',
                            (setup_max_tx, inst)).fetchone()
    if sorted(log_tx) != sorted(set(tx_ids)):
        bad.append('log has %d txs past the setup, the reports %d distinct' % (len(log_tx), len(set(tx_ids))))
    if inst_rows[0] != len(log_tx) or inst_rows[1] != len(log_tx):
        bad.append('log: %d txInstant rows for %d txs' % (inst_rows[0], len(log_tx)))
    ic = raw.execute('PRAGMA integrity_check').fetchone()[0]
    if ic != 'ok':
        bad.append('integrity_check: ' + ic)
    raw.close()

    rss_max = 0
    growth = 0
    for pid, xs in rss.items():
        if not xs:
            continue
        rss_max = max(rss_max, max(v for _, v in xs))
        base = [v for t, v in xs if t >= secs / 4]
        if base:
            growth = max(growth, max(base) - base[0])
    if wal_max >= wal_bound:
        bad.append('WAL reached %d bytes (bound %d)' % (wal_max, wal_bound))
    if rss_max > rss_max_mib * 1024:
        bad.append('RSS reached %.1f MiB (bound %.0f)' % (rss_max / 1024.0, rss_max_mib))
    if growth > growth_mib * 1024:
        bad.append('RSS grew %.1f MiB after the first quarter (bound %.0f)' % (growth / 1024.0, growth_mib))

    writes = ops.get('cas', 0) + ops.get('insert', 0)
    reads = ops.get('q_table', 0) + ops.get('q_scalar', 0) + ops.get('pull', 0)
    res = {'seconds': el, 'processes': nprocs, 'threads': nthreads, 'ops': ops,
           'operations': writes + reads + ops.get('cas_conflict', 0), 'writes': writes, 'reads': reads,
           'writes_per_s': writes / el, 'reads_per_s': reads / el, 'txs_in_log': len(log_tx),
           'wal_max_bytes': wal_max, 'rss_max_kib': rss_max, 'rss_growth_kib': growth,
           'error_messages': msgs, 'failed': bad}
    if out_path:
        with open(out_path, 'w') as f:
            json.dump(res, f, indent=1)
    print('soak %.0f s, %dx%d: %d operations (%d reads, %d commits: %d cas, %d inserts; %d cas conflicts), '
          '%d busy, %d other errors; WAL max %.1f MiB; RSS max %.1f MiB, growth %.1f MiB' % (
              el, nprocs, nthreads, res['operations'], reads, writes, ops.get('cas', 0), ops.get('insert', 0),
              ops.get('cas_conflict', 0), ops.get('busy', 0), ops.get('error', 0), wal_max / 1048576.0,
              rss_max / 1024.0, growth / 1024.0))
    for m in msgs:
        print('error: ' + m)
    for b in bad:
        print('SOAK FAILED: ' + b)
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
