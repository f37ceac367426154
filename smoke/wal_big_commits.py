"""smoke/wal_big_commits.py — the WAL bound with a wide cursor open under commits larger than a
tenth of it (issue 19, B2).

Connection A opens a 10-attribute join of 20,000 rows (`SELECT * FROM edn_q(...)`), fetches one
row and keeps it open; connection B (same process) commits one 8 MiB string per transaction,
six times, with MENTAT_WAL_RESTART_BYTES at 64 MiB. Each such commit writes ~40 MiB of WAL (the
value in the datoms row, the log row and the indexes that hold v: README, Limits), so one
commit is within the bound but two are not. The -wal file may pass the bound by one commit
(README, Limits: the load's own WAL is still there when the first commit comes), not more: the
writer sets the cursor's rest aside within the commit that passes the WAL to it, its budget
grown with the commit's own size (store_hold.c). Before, the cursor took three commits to let
go and the WAL reached 127.6-156.7 MiB. The cursor still gives its 20,000 rows.
Usage: /usr/bin/python3 smoke/wal_big_commits.py <absolute .so path>
"""
import os
import sqlite3
import sys
import tempfile

SO = sys.argv[1]
BOUND = 64 * 1024 * 1024
ONE_COMMIT = 48 * 1024 * 1024      # an 8 MiB value's commit: ~40 MiB of WAL
os.environ['MENTAT_WAL_RESTART_BYTES'] = str(BOUND)
NA = 10


def connect():
    c = sqlite3.connect(':memory:', isolation_level=None, check_same_thread=False)
    c.enable_load_extension(True)
    c.load_extension(SO)
    return c


def main():
    d = tempfile.mkdtemp()
    db = os.path.join(d, 'w.db')
    a, b = connect(), connect()
    schema = ' '.join('{:db/ident :w/a%d :db/valueType :db.type/long :db/cardinality :db.cardinality/one}' % i
                      for i in range(NA))
    a.execute('SELECT edn_t(?, ?)', (db, '[' + schema + ' {:db/ident :w/big :db/valueType :db.type/string'
                                      ' :db/cardinality :db.cardinality/one}]')).fetchone()
    for k in range(0, 20000, 5000):
        ents = ' '.join('{' + ' '.join(':w/a%d %d' % (i, e) for i in range(NA)) + '}' for e in range(k, k + 5000))
        a.execute('SELECT edn_t(?, ?)', (db, '[' + ents + ']')).fetchone()
    q = ('[:find ' + ' '.join('?v%d' % i for i in range(NA)) + ' :where '
         + ' '.join('[?e :w/a%d ?v%d]' % (i, i) for i in range(NA)) + ']')
    cur = a.execute('SELECT * FROM edn_q(?, ?)', (db, q))
    cur.fetchone()
    big = 'x' * (8 * 1024 * 1024)
    most = 0
    for i in range(6):
        b.execute('SELECT edn_t(?, ?)', (db, '[{:w/big "%d%s"}]' % (i, big))).fetchone()
        most = max(most, os.path.getsize(db + '-wal'))
    rows = 1 + len(cur.fetchall())
    cur.close()
    print('wal_big_commits: WAL at most %.1f MiB (bound %.0f MiB + one commit), cursor rows %d'
          % (most / 2**20, BOUND / 2**20, rows))
    for s in ('', '-wal', '-shm'):
        if os.path.exists(db + s):
            os.remove(db + s)
    os.rmdir(d)
    if most > BOUND + ONE_COMMIT or rows != 20000:
        print('FAIL: the WAL passed the bound by more than one commit, or the cursor lost rows')
        return 1
    return 0


sys.exit(main())
