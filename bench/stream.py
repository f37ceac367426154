#!/usr/bin/python3
"""Streaming through the edn_q table on a store with a million datoms.

Usage: /usr/bin/python3 bench/stream.py EXTENSION.so OUTDIR [N]

Builds a store with N (default 1,000,000) :movie/title datoms — the schema
through edn_t, the datoms written in bulk with plain SQL in the store's own
format (as the transactor would write them), so building takes seconds —
then measures:
  - SELECT c0 FROM edn_q(db, '[:find ?t :where [_ :movie/title ?t]]') LIMIT 1
    (issue 2: under 5 ms, because rows stream from the store statement);
  - the whole result stepped row by row, and the process's RSS growth while
    doing it (BENCH.md: under 16 MiB, nothing is materialised).
"""
import json
import os
import sqlite3
import sys
import time


def rss_kib():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def main():
    ext, out = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000000
    ext = os.path.abspath(ext)
    ext = ext[:-3] if ext.endswith('.so') else ext
    os.makedirs(out, exist_ok=True)
    db = os.path.join(out, 'stream.db')
    for s in ('', '-wal', '-shm'):
        if os.path.exists(db + s):
            os.unlink(db + s)
    con = sqlite3.connect(':memory:')
    con.enable_load_extension(True)
    con.load_extension(ext)
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
    peak = r0
    for _ in con.execute('SELECT c0 FROM edn_q(?, ?)', (db, q)):
        count += 1
        if count % 50000 == 0:
            peak = max(peak, rss_kib())
    full = time.perf_counter() - t0
    res = {'datoms': n, 'limit1_ms_p50': times[len(times) // 2], 'limit1_ms_max': times[-1],
           'rows': count, 'full_seconds': full, 'rss_growth_mib': (peak - r0) / 1024.0}
    print(json.dumps(res))
    json.dump(res, open(os.path.join(out, 'stream.json'), 'w'))
    ok = count == n and res['limit1_ms_p50'] < 5 and res['rss_growth_mib'] < 16
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
