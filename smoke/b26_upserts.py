#!/usr/bin/python3
"""b26_upserts.py — peer fault B26 (SQLITE_BUSY on a read-then-write transaction).

Usage: /usr/bin/python3 smoke/b26_upserts.py SO [WORKDIR]

A fresh store gets S = [:c/key string one unique-identity] [:c/n long many]. Then four writer
processes each run 250 upserts  edn_t(db, '[{:c/key "shared" :c/n <unique i>}]')  (a read —
resolving the upsert — then a write), while a fifth process loops over
  [:find (count ?n) :where [?e :c/key "shared"] [?e :c/n ?n]]
and a variant that also counts the distinct transactions of those values and requires each
to have its :db/txInstant. Every assertion of the fault's "Right answer" is checked:
  1. all 1000 edn_t calls succeed (no "database is locked" or any other error);
  2. at the end exactly one entity has :c/key "shared", and it has 1000 :c/n values, which
     are exactly the 1000 values sent;
  3. the 1000 tx ids are distinct, each process's are strictly increasing, and in the log
     they are strictly increasing in commit order (tx id order = :db/txInstant order, each
     tx holds exactly one :c/n assertion, and the first tx also made the entity);
  4. the reader's counts only ever go up, never exceed 1000, and never show part of a
     transaction (every :c/n value it sees comes with its transaction's :db/txInstant, one
     value per transaction), and the reader saw at least one intermediate state.
Exit 0 = pass. Used by smoke/b26.sh (a few seconds).
"""
import json
import multiprocessing as mp
import os
import shutil
import sqlite3
import sys
import tempfile
import time

SCHEMA = ('[{:db/ident :c/key :db/valueType :db.type/string :db/cardinality :db.cardinality/one'
          ' :db/unique :db.unique/identity}'
          ' {:db/ident :c/n :db/valueType :db.type/long :db/cardinality :db.cardinality/many}]')
COUNT_Q = '[:find (count ?n) . :where [?e :c/key "shared"] [?e :c/n ?n]]'
WHOLE_Q = ('[:find (count ?n) (count-distinct ?t) :where [?e :c/key "shared"] [?e :c/n ?n ?t]'
           ' [?t :db/txInstant _]]')
WRITERS, CALLS = 4, 250


def host(so):
    con = sqlite3.connect(':memory:', isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(so)
    return con


def scalar(con, db, q):
    """The scalar edn_q's "result"."""
    return json.loads(con.execute('SELECT edn_q(?, ?)', (db, q)).fetchone()[0])['result']


def writer(so, db, k, start, q):
    con = host(so)
    txs, errs = [], []
    start.wait()
    for j in range(CALLS):
        n = k * CALLS + j
        try:
            r = con.execute('SELECT edn_t(?, ?)', (db, '[{:c/key "shared" :c/n %d}]' % n)).fetchone()[0]
            txs.append([n, json.loads(r)['tx_id']])
        except Exception as e:  # every failure is the test's failure
            errs.append(str(e))
    q.put(('writer', k, txs, errs))


def reader(so, db, start, stop, q):
    con = host(so)
    counts, errs, bad = [], [], []
    start.wait()
    i = 0
    while not stop.is_set():
        try:
            if i % 2:
                c = scalar(con, db, COUNT_Q)
                counts.append(0 if c is None else c)
            else:
                rows = con.execute('SELECT value FROM edn_q(?, ?)', (db, WHOLE_Q)).fetchall()
                if rows:
                    n, t = json.loads(rows[0][0])
                    if n != t:
                        bad.append('saw %d :c/n values from %d transactions' % (n, t))
                    counts.append(n)
                else:
                    counts.append(0)
        except Exception as e:
            errs.append(str(e))
        i += 1
    q.put(('reader', 0, counts, errs + bad))


def check(so, db, got):
    fails = []
    wr = [g for g in got if g[0] == 'writer']
    rd = [g for g in got if g[0] == 'reader'][0]
    errs = [e for g in wr for e in g[3]]
    if errs:
        fails.append('%d edn_t calls failed, e.g. %s' % (len(errs), errs[0]))
    all_tx = []
    for _, k, txs, _ in wr:
        ids = [t for _, t in txs]
        if any(b <= a for a, b in zip(ids, ids[1:])):
            fails.append('writer %d: tx ids not strictly increasing' % k)
        all_tx += txs
    if len(all_tx) != WRITERS * CALLS:
        fails.append('%d of %d calls returned a tx id' % (len(all_tx), WRITERS * CALLS))
    if len(set(t for _, t in all_tx)) != len(all_tx):
        fails.append('tx ids are not distinct')
    con = host(so)
    ents = scalar(con, db, '[:find [?e ...] :where [?e :c/key "shared"]]') or []
    if len(ents) != 1:
        fails.append('%d entities have :c/key "shared", expected exactly 1' % len(ents))
    c = scalar(con, db, COUNT_Q)
    if c != WRITERS * CALLS:
        fails.append('count is %s, expected %d' % (c, WRITERS * CALLS))
    vals = sorted(scalar(con, db, '[:find [?n ...] :where [?e :c/key "shared"] [?e :c/n ?n]]') or [])
    if vals != list(range(WRITERS * CALLS)):
        fails.append('the :c/n values are not exactly 0..999')
    # The log, in commit order (rowid): each tx id's one :c/n assertion, the tx ids rising.
    raw = sqlite3.connect(db)
    a_n = raw.execute("SELECT e FROM idents WHERE v = ':c/n'").fetchone()[0]
    a_key = raw.execute("SELECT e FROM idents WHERE v = ':c/key'").fetchone()[0]
    log = raw.execute('SELECT tx, v FROM timelined_transactions WHERE a = ? AND added = 1 ORDER BY rowid',
                      (a_n,)).fetchall()
    by_call = dict((n, t) for n, t in all_tx)
    if [t for t, _ in log] != sorted(t for t, _ in log) or len(set(t for t, _ in log)) != len(log):
        fails.append('the log\'s :c/n transactions are not strictly increasing in commit order')
    if any(by_call.get(v) != t for t, v in log) or len(log) != WRITERS * CALLS:
        fails.append('the log does not hold exactly one :c/n per reported tx id')
    inst = raw.execute('SELECT e, v FROM datoms WHERE a = 3 AND e IN (SELECT tx FROM timelined_transactions'
                       ' WHERE a = ?) ORDER BY e', (a_n,)).fetchall()
    if len(inst) != len(log) or any(b[1] < a[1] for a, b in zip(inst, inst[1:])):
        fails.append(':db/txInstant does not rise with the tx ids')
    first = raw.execute('SELECT min(tx) FROM timelined_transactions WHERE a = ? AND added = 1',
                        (a_key,)).fetchone()[0]
    if log and first != log[0][0]:
        fails.append('the entity was not made by the first upsert')
    raw.close()
    counts, rerrs = rd[2], rd[3]
    if rerrs:
        fails.append('reader: %d problems, e.g. %s' % (len(rerrs), rerrs[0]))
    if any(b < a for a, b in zip(counts, counts[1:])):
        fails.append('the reader\'s count went down')
    if any(x > WRITERS * CALLS for x in counts):
        fails.append('the reader counted more than %d' % (WRITERS * CALLS))
    if not any(0 < x < WRITERS * CALLS for x in counts):
        fails.append('the reader never saw an intermediate count (%d reads)' % len(counts))
    return fails, len(counts)


def main():
    so = os.path.abspath(sys.argv[1])
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix='b26.')
    db = os.path.join(work, 'b26.db')
    for f in (db, db + '-wal', db + '-shm'):
        if os.path.exists(f):
            os.remove(f)
    con = host(so)
    con.execute('SELECT edn_t(?, ?)', (db, SCHEMA)).fetchone()
    con.close()
    ctx = mp.get_context('fork')
    q, start, stop = ctx.Queue(), ctx.Event(), ctx.Event()
    ws = [ctx.Process(target=writer, args=(so, db, k, start, q)) for k in range(WRITERS)]
    rp = ctx.Process(target=reader, args=(so, db, start, stop, q))
    for p in ws + [rp]:
        p.start()
    t0 = time.time()
    start.set()
    got = [q.get() for _ in ws]
    el = time.time() - t0
    stop.set()
    got.append(q.get())
    for p in ws + [rp]:
        p.join()
    fails, nreads = check(so, db, got)
    if len(sys.argv) <= 2:
        shutil.rmtree(work, ignore_errors=True)
    for f in fails:
        print('FAIL b26: ' + f)
    if not fails:
        print('b26: ok (%d upserts from %d processes in %.1f s, %d reads)' % (
            WRITERS * CALLS, WRITERS, el, nreads))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
