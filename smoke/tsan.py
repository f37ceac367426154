#!/usr/bin/python3
"""smoke/tsan.py — threads sharing one cached store, for ThreadSanitizer (`make tsan`).

Usage: LD_PRELOAD=<libtsan.so> /usr/bin/python3 smoke/tsan.py /abs/path/libmentat_sqlite.so

One writer thread alternates bulk transactions (300 entities, which defer the managed indexes
to the next read) and one-entity ones; three reader threads load the extension on their own
connections and run joined edn_q tables, scalar counts (current and as-of, checked against the
counts the writer recorded), and edn_pull; a holder thread keeps an edn_q cursor open while the
writer grows the WAL past 4 MiB, so the writer's thread asks it to let go of its snapshot
(B25), and then reads the rest of its rows. Under TSan a data race ends the process with
TSan's exit code; without it this is a plain consistency check. Prints PASS/FAIL lines and
exits non-zero on any failure.
"""
import json
import os
import sqlite3
import sys
import tempfile
import threading

SO = sys.argv[1]
os.environ.setdefault('MENTAT_TUNE_MIN_DATOMS', '1000')   # read when the .so first loads
SCHEMA = ('[{:db/ident :p/id :db/valueType :db.type/string :db/cardinality :db.cardinality/one'
          ' :db/unique :db.unique/identity}'
          ' {:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one'
          ' :db/index true}'
          ' {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one'
          ' :db/index true}]')
ROUNDS = 30
BULK = 300
COUNT_Q = '[:find (count ?e) . :where [?e :p/name _]]'


def conn():
    c = sqlite3.connect(':memory:', isolation_level=None, check_same_thread=False)
    c.enable_load_extension(True)
    c.load_extension(SO)
    return c


def edn_t(c, db, edn):
    return json.loads(c.execute('SELECT edn_t(?, ?)', (db, edn)).fetchone()[0])


def count(c, db, opts=None):
    return json.loads(c.execute('SELECT edn_q(?, ?, ?)', (db, COUNT_Q, opts)).fetchone()[0])['result']


def people(lo, hi):
    return '[' + ' '.join('{:p/id "id%d" :p/name "n%d" :p/age %d}' % (i, i % 97, i % 50)
                          for i in range(lo, hi)) + ']'


def main():
    tmp = tempfile.mkdtemp(prefix='mentat-tsan.')
    db = os.path.join(tmp, 'store.db')
    c = conn()
    edn_t(c, db, SCHEMA)
    edn_t(c, db, people(0, 10))
    e0 = json.loads(c.execute('SELECT edn_q(?, ?, NULL)', (
        db, '[:find ?e . :where [?e :p/id "id0"]]')).fetchone()[0])['result']
    lock = threading.Lock()
    after_tx = {}                 # tx id -> entities with a name after it
    total = [10]
    done = threading.Event()
    errors = []

    def writer():
        cw, lo = conn(), 10
        try:
            for k in range(ROUNDS):
                if k % 3 == 2:
                    r, n = edn_t(cw, db, people(lo, lo + 1)), 1
                else:
                    r, n = edn_t(cw, db, people(lo, lo + BULK)), BULK
                lo += n
                with lock:
                    total[0] += n
                    after_tx[r['tx_id']] = total[0]
        except Exception as e:                      # noqa: BLE001 (reported below)
            errors.append('writer: %r' % e)
        done.set()

    def reader(i):
        cr, last = conn(), 0
        try:
            while not done.is_set():
                joined = cr.execute(
                    'SELECT count(*) FROM edn_q(?1, \'[:find ?e ?n :where [?e :p/name ?n]]\') a '
                    'JOIN edn_q(?1, \'[:find ?e ?a :where [?e :p/age ?a]]\') b ON a.c0 = b.c0',
                    (db,)).fetchone()[0]
                now = count(cr, db)
                if joined > now or now < last:
                    errors.append('reader %d: joined %d, count %d after %d' % (i, joined, now, last))
                last = now
                with lock:
                    items = list(after_tx.items())
                if items:
                    tx, expect = items[(i + now) % len(items)]
                    got = count(cr, db, json.dumps({'asOf': tx}))
                    if got != expect:
                        errors.append('reader %d: asOf %d counted %s, expected %d' % (i, tx, got, expect))
                pulled = json.loads(cr.execute('SELECT edn_pull(?, \'[*]\', ?)', (db, e0)).fetchone()[0])
                if pulled.get(':p/id') != 'id0':
                    errors.append('reader %d: pull %r' % (i, pulled))
        except Exception as e:                      # noqa: BLE001
            errors.append('reader %d: %r' % (i, e))

    def holder():
        ch = conn()
        try:
            before = count(ch, db)
            cur = ch.execute('SELECT c0 FROM edn_q(?, \'[:find ?e :where [?e :p/name _]]\')', (db,))
            rows = [cur.fetchone()]
            done.wait(120)
            rows += cur.fetchall()
            if len(rows) < before or len(set(rows)) != len(rows):
                errors.append('holder: %d rows (%d distinct), %d before it opened'
                              % (len(rows), len(set(rows)), before))
        except Exception as e:                      # noqa: BLE001
            errors.append('holder: %r' % e)

    threads = ([threading.Thread(target=writer), threading.Thread(target=holder)]
               + [threading.Thread(target=reader, args=(i,)) for i in range(3)])
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    if any(t.is_alive() for t in threads):
        errors.append('a thread is still running after 300 s')
    final = count(c, db)
    if final != total[0]:
        errors.append('final count %s, expected %d' % (final, total[0]))
    managed = sqlite3.connect(db).execute(
        "SELECT count(*) FROM sqlite_master WHERE name LIKE 'idx_mentat_%'").fetchone()[0]
    if managed == 0:
        errors.append('no managed index after the bulk writes and reads')
    for e in errors:
        print('FAIL', e)
    if not errors:
        print('PASS tsan.py: 1 writer, 3 readers, 1 holder; %d entities, %d managed indexes'
              % (final, managed))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
