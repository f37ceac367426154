"""bench/rawidx_rest.py — a raw-index cursor (edn_datoms, edn_log) left open with a rest larger
than its memory for rows set aside (MENTAT_SPILL_MEMORY_BYTES, 64 MiB), while another connection
of the same process commits (issue 19, B25): the WAL's largest size and each commit's extra time.

A store of N entities with a 300-byte :p/nick each (about 110 MB of rows as the cursor keeps them
in memory). Rounds, interleaved in one process: no cursor open, an edn_datoms cursor over
:aevt :p/nick, an edn_log cursor from the load's first tx; each cursor is stepped one row, then
COMMITS transactions of one 16 KiB value each are committed and timed (wall and the committing
thread's CPU: the writer sets the cursor's rest aside on its own thread), then the cursor is read
to its end and its rows counted. Prints per round: WAL max, commit p50 / max wall and CPU ms, and
the commits that spent more than 10 ms of CPU (those that set rows aside) and the rows the cursor
gave. Not part of make test.
Usage: /usr/bin/python3 bench/rawidx_rest.py <absolute .so path> [N [COMMITS]]
"""
import os
import sqlite3
import statistics
import sys
import tempfile
import time

SO = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 250000
COMMITS = int(sys.argv[3]) if len(sys.argv) > 3 else 200
CHUNK = 25000


def connect():
    c = sqlite3.connect(':memory:', isolation_level=None, check_same_thread=False)
    c.enable_load_extension(True)
    c.load_extension(SO)
    return c


def wal(db):
    try:
        return os.path.getsize(db + '-wal')
    except OSError:
        return 0


def truncate(db):
    raw = sqlite3.connect(db)
    busy = raw.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()[0]
    raw.close()
    return busy


def main():
    d = tempfile.mkdtemp(prefix='rawidx.')
    db = os.path.join(d, 'r.db')
    a, b = connect(), connect()
    a.execute('SELECT edn_t(?, ?)', (db, '[{:db/ident :p/nick :db/valueType :db.type/string'
                                         ' :db/cardinality :db.cardinality/one}]'))
    first_tx = None
    for k in range(0, N, CHUNK):
        tx = '[%s]' % ' '.join('{:p/nick "%0300d"}' % i for i in range(k, min(N, k + CHUNK)))
        r = a.execute("SELECT json_extract(edn_t(?, ?), '$.tx_id')", (db, tx)).fetchone()[0]
        first_tx = first_tx or r
    big = 'x' * 16384
    queries = {
        'none': None,
        # the nicks committed by the rounds before are in its snapshot: want N + seq
        'edn_datoms': ("SELECT e, v FROM edn_datoms(?, ':aevt', ':p/nick')", (db,), N),
        'edn_log': ('SELECT e, v FROM edn_log(?, ?, ?)', (db, first_tx, first_tx + (N + CHUNK - 1) // CHUNK),
                    N + (N + CHUNK - 1) // CHUNK),
    }
    seq = 0
    for rnd in range(2):
        for name, q in queries.items():
            # the reads before this round (the pages the cursor will read) out of the way
            truncate(db)
            cur = None
            want = q and (q[2] + (seq if name == 'edn_datoms' else 0))
            if q:
                cur = a.execute(q[0], q[1])
                cur.fetchone()
            walls, cpus, wmax = [], [], 0
            for i in range(COMMITS):
                seq += 1
                w0, c0 = time.perf_counter(), time.thread_time()
                b.execute('SELECT edn_t(?, ?)', (db, '[{:p/nick "%d %s"}]' % (seq, big)))
                walls.append((time.perf_counter() - w0) * 1000)
                cpus.append((time.thread_time() - c0) * 1000)
                wmax = max(wmax, wal(db))
            got = 1 + len(cur.fetchall()) if cur else 0
            ok = '' if not q else (' rows %d (want %d)%s' % (got, want, '' if got == want else ' WRONG'))
            ok = ' commits of >10 ms CPU %d' % sum(c > 10 for c in cpus) + ok
            print('round %d %-10s WAL max %6.1f MiB  commit wall p50 %5.2f max %7.2f ms  '
                  'CPU p50 %5.2f max %7.2f ms%s' % (rnd, name, wmax / 1048576, statistics.median(walls),
                                                    max(walls), statistics.median(cpus), max(cpus), ok))
            if cur:
                cur.close()
            sys.stdout.flush()


main()
