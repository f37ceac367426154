#!/usr/bin/python3
"""Streaming through the edn_q table on a store with a million datoms.

Usage: [MENTAT_MMAP_SIZE=0] /usr/bin/python3 bench/stream.py EXTENSION.so OUTDIR [N]

Builds a store with N (default 1,000,000) :movie/title datoms — the schema
through edn_t, the datoms written in bulk with plain SQL in the store's own
format (as the transactor would write them), so building takes seconds —
then measures:
  - SELECT c0 FROM edn_q(db, '[:find ?t :where [_ :movie/title ?t]]') LIMIT 1
    (under 5 ms, because rows stream from the store statement);
  - the whole result stepped row by row, and the process's RSS growth while
    doing it (BENCH.md: under 16 MiB, nothing is materialised).
"""
import json
import os
import sqlite3
import sys
import time


def rss_kib():
    """(VmRSS, RssAnon, RssFile) in KiB."""
    v = {}
    with open('/proc/self/status') as f:
        for line in f:
            k = line.split(':')[0]
            if k in ('VmRSS', 'RssAnon', 'RssFile'):
                v[k] = int(line.split()[1])
    return (v.get('VmRSS', 0), v.get('RssAnon', 0), v.get('RssFile', 0))


def main():
    ext, out = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000000
    ext = os.path.abspath(ext)
    ext = ext[:-3] if ext.endswith('.so') else ext
    os.makedirs(out, exist_ok=True)
    db = os.path.join(out, 'stream-%d.db' % n)
    label = 'mmap-0' if os.environ.get('MENTAT_MMAP_SIZE') == '0' else 'mmap-default'
    con = sqlite3.connect(':memory:')
    con.enable_load_extension(True)
    con.load_extension(ext)
    if not os.path.exists(db):
        build(con, db, n)
        # measure in a fresh process: nothing of the build stays in the store cache or heap
        con.close()
        os.execv(sys.executable, [sys.executable] + sys.argv)
    run(con, db, n, out, label)
    res = json.load(open(os.path.join(out, 'stream-%s.json' % label)))
    # with mmap the store's pages count in VmRSS as they are read (RssFile); the heap (RssAnon)
    # is what materialising rows would grow, so that is the figure judged there
    grow = res['rss_growth_mib'] if label == 'mmap-0' else res['anon_growth_mib']
    ok = res['rows'] == n and res['limit1_ms_p50'] < 5 and grow < 16
    return 0 if ok else 1


def build(con, db, n):
    for s in ('-wal', '-shm'):
        if os.path.exists(db + s):
            os.unlink(db + s)
    con.execute('SELECT edn_t(?, ?)', (db, '[{:db/ident :movie/title :db/valueType :db.type/string '
                                           ':db/cardinality :db.cardinality/one}]')).fetchone()
    raw = sqlite3.connect(db)
    a = raw.execute("SELECT e FROM idents WHERE v = ':movie/title'").fetchone()[0]
    tx = raw.execute("SELECT idx FROM known_parts WHERE part = ':db.part/tx'").fetchone()[0]
    with raw:
        raw.execute('WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < ?) '
                    'INSERT INTO datoms (e, a, v, tx, value_type_tag) '
                    "SELECT 65536 + 1000 + i, ?, 'Title ' || i, ?, 10 FROM k", (n, a, tx))
        raw.execute("UPDATE known_parts SET idx = ? WHERE part = ':db.part/user'", (65536 + 1000 + n,))
        raw.execute("UPDATE known_parts SET idx = ? WHERE part = ':db.part/tx'", (tx + 1,))
    raw.close()


def run(con, db, n, out, label):
    q = '[:find ?t :where [_ :movie/title ?t]]'
    con.execute('SELECT c0 FROM edn_q(?, ?) LIMIT 1', (db, q)).fetchall()  # warm the cache
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        rows = con.execute('SELECT c0 FROM edn_q(?, ?) LIMIT 1', (db, q)).fetchall()
        times.append((time.perf_counter() - t0) * 1000)
    assert len(rows) == 1
    times.sort()
    r0 = rss_kib()
    t0 = time.perf_counter()
    count = 0
    peak = list(r0)
    for _ in con.execute('SELECT c0 FROM edn_q(?, ?)', (db, q)):
        count += 1
        if count % 50000 == 0:
            peak = [max(a, b) for a, b in zip(peak, rss_kib())]
    peak = [max(a, b) for a, b in zip(peak, rss_kib())]
    full = time.perf_counter() - t0
    res = {'setting': label, 'datoms': n, 'limit1_ms_p50': times[len(times) // 2],
           'limit1_ms_max': times[-1], 'rows': count, 'full_seconds': full,
           'rss_growth_mib': (peak[0] - r0[0]) / 1024.0, 'anon_growth_mib': (peak[1] - r0[1]) / 1024.0,
           'file_growth_mib': (peak[2] - r0[2]) / 1024.0}
    print(json.dumps(res))
    json.dump(res, open(os.path.join(out, 'stream-%s.json' % label), 'w'))


if __name__ == '__main__':
    sys.exit(main())
