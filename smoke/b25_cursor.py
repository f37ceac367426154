"""smoke/b25_cursor.py — peer fault B25: a host cursor left open must not pin the WAL.

Runs the input of ../shared/acceptance/peer-faults.md B25 and checks its right answer:
  * connection A opens `SELECT * FROM edn_q(...)`, fetches one row and keeps the cursor open;
  * connection B commits 2,000 small transactions meanwhile;
  * the -wal file stays a few MiB (bound asserted: 8 MiB; without the fix it grows past 60 MiB
    here, about 30 KiB per transaction) and does not grow with the transaction count (the
    size after 2,000 is not more than 2x the size after 1,000 plus 1 MiB);
  * the open cursor still returns exactly the rows of its snapshot (all the entities that
    existed when it started, none of the 2,000 new ones), as if it had streamed;
  * after cur.close() a TRUNCATE checkpoint from a plain connection reports busy = 0 and the
    -wal file is 0 bytes; between calls no cached store connection holds a transaction.
Also the same with the cursor's rows including a pull (their JSON is set aside too), a
second open cursor on another thread, and a cursor left open on a 9M-row cross product (the
writer copies only a bounded part of it, so no commit waits seconds for it).
Usage: /usr/bin/python3 smoke/b25_cursor.py <absolute .so path>
"""
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time

SO = sys.argv[1]
fails = 0


def check(name, got, want):
    global fails
    if got == want:
        print('PASS', name)
    else:
        fails += 1
        print('FAIL %s: got %r, want %r' % (name, got, want))


def host():
    c = sqlite3.connect(':memory:', isolation_level=None, check_same_thread=False)
    c.enable_load_extension(True)
    c.load_extension(SO)
    return c


def wal(db):
    try:
        return os.path.getsize(db + '-wal')
    except OSError:
        return 0


def run(tag, query, n0, check_row):
    d = tempfile.mkdtemp(prefix='b25.')
    db = os.path.join(d, 'b25.db')
    A, B = host(), host()
    B.execute('SELECT edn_t(?, ?)', (db, '[{:db/ident :p/name :db/valueType :db.type/string '
                                          ':db/cardinality :db.cardinality/one}]'))
    B.execute('SELECT edn_t(?, ?)', (db, '[%s]' % ' '.join('{:p/name "start%d"}' % i for i in range(n0))))
    cur = A.execute('SELECT * FROM edn_q(?, ?)', (db, query))
    first = cur.fetchone()
    sizes = {}
    for i in range(2000):
        B.execute('SELECT edn_t(?, ?)', (db, '[{:p/name "n%d"}]' % i))
        if i + 1 in (1000, 2000):
            sizes[i + 1] = wal(db)
    print('[%s] WAL after 1000 txs %d bytes, after 2000 %d bytes' % (tag, sizes[1000], sizes[2000]))
    check('[%s] WAL a few MiB with the cursor open' % tag, sizes[2000] < 8 * 1024 * 1024, True)
    check('[%s] WAL does not grow with the tx count' % tag,
          sizes[2000] <= 2 * sizes[1000] + 1024 * 1024, True)
    rows = [first] + cur.fetchall()
    check('[%s] the open cursor returns its snapshot: row count' % tag, len(rows), n0)
    check('[%s] the open cursor returns its snapshot: rows' % tag, all(check_row(r) for r in rows), True)
    cur.close()
    raw = sqlite3.connect(db)
    busy, log, ckpt = raw.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()
    check('[%s] TRUNCATE checkpoint after close: busy' % tag, busy, 0)
    check('[%s] -wal file after TRUNCATE' % tag, wal(db), 0)
    raw.close()
    A.close()
    B.close()
    return db


# Plain rows: ?e ?n for every entity that existed when the cursor started.
run('rows', '[:find ?e ?n :where [?e :p/name ?n]]', 300,
    lambda r: json.loads(r[0])[1].startswith('start'))
# Pull in :find: the pull JSON is computed before the snapshot is let go.
run('pull', '[:find (pull ?e [:p/name]) :where [?e :p/name _]]', 300,
    lambda r: json.loads(r[0])[0][':p/name'].startswith('start'))

# Two cursors open on two threads while a third commits.
d = tempfile.mkdtemp(prefix='b25.')
db = os.path.join(d, 't.db')
W = host()
W.execute('SELECT edn_t(?, ?)', (db, '[{:db/ident :p/name :db/valueType :db.type/string '
                                      ':db/cardinality :db.cardinality/one}]'))
W.execute('SELECT edn_t(?, ?)', (db, '[%s]' % ' '.join('{:p/name "s%d"}' % i for i in range(500))))
results, errors = {}, []
started = threading.Barrier(3)
done = threading.Event()


def reader(k):
    try:
        c = host()
        cur = c.execute('SELECT c1 FROM edn_q(?, ?)', (db, '[:find ?e ?n :where [?e :p/name ?n]]'))
        got = [cur.fetchone()]
        started.wait()
        while not done.is_set():
            r = cur.fetchone()
            if r is None:
                break
            got.append(r)
            done.wait(0.001)
        got += cur.fetchall()
        results[k] = got
        cur.close()
        c.close()
    except Exception as e:  # reported below
        errors.append(repr(e))


ts = [threading.Thread(target=reader, args=(k,)) for k in range(2)]
for t in ts:
    t.start()
started.wait()
for i in range(1500):
    W.execute('SELECT edn_t(?, ?)', (db, '[{:p/name "w%d"}]' % i))
done.set()
for t in ts:
    t.join()
check('threads: no error', errors, [])
for k in range(2):
    names = sorted(r[0] for r in results.get(k, []))
    check('threads: reader %d saw exactly its snapshot' % k, names, sorted('s%d' % i for i in range(500)))
print('threads: WAL after 1500 txs with two open cursors: %d bytes' % wal(db))
check('threads: WAL a few MiB', wal(db) < 8 * 1024 * 1024, True)
W.close()

# A wide join (10 attributes, 20,000 rows) left open while another connection commits large
# values: its rest takes longer to set aside than one commit's budget, so the
# writer copies a part per commit and asks again at the next one, until the cursor lets its
# snapshot go; the WAL stays a few MiB (it grew past 160 MiB when the copy stopped at the
# first budget and the cursor kept its snapshot), and no commit waits long.
d = tempfile.mkdtemp(prefix='b25.')
db = os.path.join(d, 'w.db')
A, B = host(), host()
NA, NW = 10, 20000
B.execute('SELECT edn_t(?, ?)', (db, '[%s {:db/ident :w/blob :db/valueType :db.type/string '
                                      ':db/cardinality :db.cardinality/one}]' % ' '.join(
    '{:db/ident :w/a%d :db/valueType :db.type/long :db/cardinality :db.cardinality/one}' % k
    for k in range(NA))))
for c0 in range(0, NW, 2000):
    B.execute('SELECT edn_t(?, ?)', (db, '[%s]' % ' '.join(
        '{%s}' % ' '.join(':w/a%d %d' % (k, i * NA + k) for k in range(NA)) for i in range(c0, c0 + 2000))))
wq = '[:find %s :where %s]' % (' '.join('?v%d' % k for k in range(NA)),
                              ' '.join('[?e :w/a%d ?v%d]' % (k, k) for k in range(NA)))
# The first read after a bulk load tunes the store (ext/store/store_tune.c: its managed
# indexes and statistics, ~6.8 MiB of WAL here), so one read comes first and the checkpoint
# takes the load's WAL and the tuning's out of the way: the bound is then the open cursor's
# alone, about 0.4 MiB a commit until it lets its snapshot go (with the tuning left in, the
# bound measured the tuning plus whether the copy took 3 or 4 commits' budgets).
B.execute('SELECT count(*) FROM edn_q(?, ?)', (db, '[:find ?e :where [?e :w/a0 0]]')).fetchall()
raw = sqlite3.connect(db)
raw.execute('PRAGMA wal_checkpoint(TRUNCATE)')
raw.close()
cur = A.execute('SELECT value FROM edn_q(?, ?)', (db, wq))
got = [cur.fetchone()]
worst, worst_cpu, wmax = 0.0, 0.0, 0
for i in range(300):
    t0, c0 = time.perf_counter(), time.thread_time()
    B.execute('SELECT edn_t(?, ?)', (db, '[{:w/blob "%d%s"}]' % (i, 'y' * 65536)))
    worst = max(worst, time.perf_counter() - t0)
    worst_cpu = max(worst_cpu, time.thread_time() - c0)
    wmax = max(wmax, wal(db))
print('wide join left open: WAL at most %d bytes over 300 commits of 64 KiB, slowest commit %.3f s'
      ' (%.3f s of its thread\'s CPU)' % (wmax, worst, worst_cpu))
check('wide join left open: WAL a few MiB', wmax < 8 * 1024 * 1024, True)
# The set-aside's budget is the writer thread's CPU time (100 ms a commit), so that the WAL
# bound above holds at any load; a commit's wall time then grows with the load like any
# other work, so the latency is checked in the budget's own unit (idle, wall and CPU agree),
# with a loose wall-clock bound that still catches a commit that waits for the whole rest.
check('wide join left open: no commit waits long (< 0.5 s of CPU, < 5 s)',
      (worst_cpu < 0.5, worst < 5.0), (True, True))
got += cur.fetchall()
check('wide join left open: its snapshot\'s rows', len(got), NW)
check('wide join left open: rows whole', all(json.loads(r[0])[1] == json.loads(r[0])[0] + 1 for r in got), True)
cur.close()
A.close()
B.close()

# A cursor left open on a cross product (9M rows): the writer that passes the WAL bound must
# not copy the whole rest on its own thread (helper-24: one commit took 8.4 s, and 26.6 s
# with a 36M-row rest). It copies a bounded part; the cursor keeps its snapshot for the rest
# and still gives its snapshot's rows.
d = tempfile.mkdtemp(prefix='b25.')
db = os.path.join(d, 'x.db')
A, B = host(), host()
B.execute('SELECT edn_t(?, ?)', (db, '[{:db/ident :p/age :db/valueType :db.type/long '
                                      ':db/cardinality :db.cardinality/one}'
                                      '{:db/ident :p/bio :db/valueType :db.type/string '
                                      ':db/cardinality :db.cardinality/one}]'))
N = 3000
B.execute('SELECT edn_t(?, ?)', (db, '[%s]' % ' '.join('{:p/age 1}' for i in range(N))))
cur = A.execute('SELECT c0, c1 FROM edn_q(?, ?)',
                (db, '[:find ?a ?b :where [?a :p/age ?x] [?b :p/age ?x]]'))
ents = set(e for (e,) in A.execute('SELECT c0 FROM edn_q(?, ?)', (db, '[:find ?e :where [?e :p/age _]]')))
check('cross product left open: %d entities' % N, len(ents), N)
got = [cur.fetchone()]
worst, worst_cpu = 0.0, 0.0
for i in range(10):
    t0, c0 = time.perf_counter(), time.thread_time()
    B.execute('SELECT edn_t(?, ?)', (db, '[%s]' % ' '.join('{:p/age 2 :p/bio "%s"}' % ('x' * 2000)
                                                               for _ in range(200))))
    worst = max(worst, time.perf_counter() - t0)
    worst_cpu = max(worst_cpu, time.thread_time() - c0)
print('cross product left open: slowest of 10 commits of 400 KB %.3f s (%.3f s of CPU)' % (worst, worst_cpu))
check('cross product left open: no commit waits for its rest (< 1 s of CPU, < 10 s)',
      (worst_cpu < 1.0, worst < 10.0), (True, True))
got += cur.fetchmany(300000)
check('cross product left open: rows still those of its snapshot',
      all(a in ents and b in ents for a, b in got), True)
check('cross product left open: 300,001 rows read', len(got), 300001)
cur.close()
A.close()
B.close()

print('%d failed' % fails)
sys.exit(1 if fails else 0)
