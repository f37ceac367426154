#!/usr/bin/python3
"""transact_one: one-datom transactions through edn_t, at the process's MENTAT_SYNCHRONOUS.

Usage: MENTAT_SYNCHRONOUS=FULL|NORMAL /usr/bin/python3 bench/write.py EXT SCALE OUTDIR [SECONDS]

The extension reads MENTAT_SYNCHRONOUS once per process, so each setting runs in its own
process (the bench Makefile starts this script twice). Each tx is
[[:db/add <random issue> :issue/state <state>]]; the state differs from the issue's current
one so every tx writes a datom (a re-assertion would be a no-op), and each write is logged
(common.py) so the checks after `mixed` know the answers. Warm-up 3 txs; runs at least 30 txs
and SECONDS (default 5) seconds; reports tx/s and per-tx latency percentiles in
OUTDIR/transact-SCALE-<setting>.json, with the disk's floor beside them: plain SQLite one-row
commits (WAL, same synchronous setting, a fresh file in OUTDIR) for 2 s right after, since the
FULL figure is mostly this disk's fdatasync latency, which varies 0.2-3.7 ms here with the other
sessions' I/O. MENTAT_WAL_GATHER=0 turns off the WAL-gathering VFS (ext/store_write_vfs.c).
"""
import json
import os
import random
import sqlite3
import sys
import time

from common import STATES, connect, current_states, load_state, percentile, write_json


class Writer:
    """Picks issues and new states; appends each committed write to the writes log."""

    def __init__(self, con, P, st, exp, seed):
        self.con, self.db = con, P['db']
        self.eids = st['issue_eids']
        self.cur, _ = current_states(P, exp)
        self.rnd = random.Random(seed)
        self.log = open(P['writes'], 'a')

    def one(self):
        n = self.rnd.randrange(len(self.eids))
        s = (self.cur[n] + self.rnd.randint(1, 4)) % 5
        self.con.execute('SELECT edn_t(?, ?)', (self.db, '[[:db/add %d :issue/state %s]]' % (
            self.eids[n], STATES[s]))).fetchone()
        self.cur[n] = s
        self.log.write(json.dumps([n, STATES[s]]) + '\n')
        self.log.flush()


def raw_commit_rate(path, sync, secs=2.0):
    """The same disk's floor: plain SQLite one-row commits in WAL mode at the same synchronous
    setting (a fresh file next to the store), tx/s."""
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute('PRAGMA journal_mode=WAL')
    raw.execute('PRAGMA synchronous=%s' % sync)
    raw.execute('CREATE TABLE t (a INTEGER PRIMARY KEY, b)')
    n, t0 = 0, time.perf_counter()
    while n < 30 or time.perf_counter() - t0 < secs:
        raw.execute('BEGIN IMMEDIATE')
        raw.execute('INSERT INTO t (b) VALUES (?)', (n,))
        raw.execute('COMMIT')
        n += 1
    el = time.perf_counter() - t0
    raw.close()
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return n / el


def main():
    ext, scale, out = sys.argv[1], sys.argv[2], sys.argv[3]
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 5.0
    sync = os.environ.get('MENTAT_SYNCHRONOUS', 'FULL')
    P, st, exp = load_state(out, scale)
    # The phase before (the load, or the other setting's run) leaves the store's checkpointed
    # pages dirty in the OS cache; the first fdatasync here would flush all of them and bill
    # that writeback to these transactions (measured: ~1,200 tx/s for the first seconds after
    # a fresh copy of the s store, ~5,000 after). Flush it before timing.
    os.sync()
    con = connect(ext)
    w = Writer(con, P, st, exp, 'transact-' + sync)
    for _ in range(3):
        w.one()
    lat = []
    t0 = time.perf_counter()
    while len(lat) < 30 or time.perf_counter() - t0 < secs:
        t1 = time.perf_counter()
        w.one()
        lat.append((time.perf_counter() - t1) * 1000)
    el = time.perf_counter() - t0
    raw = raw_commit_rate(os.path.join(out, 'raw-commit-%s.db' % sync), sync)
    res = {'synchronous': sync, 'txs': len(lat), 'seconds': el, 'tx_per_s': len(lat) / el,
           'p50_ms': percentile(lat, 50), 'p95_ms': percentile(lat, 95), 'p99_ms': percentile(lat, 99),
           'raw_sqlite_one_row_tx_per_s': raw}
    print('transact_one %s: %d txs, %.0f tx/s, p50 %.3f ms (raw SQLite one-row commit: %.0f tx/s)' % (
        sync, len(lat), res['tx_per_s'], res['p50_ms'], raw))
    write_json(os.path.join(out, 'transact-%s-%s.json' % (scale, sync)), res)
    return 0


if __name__ == '__main__':
    sys.exit(main())
