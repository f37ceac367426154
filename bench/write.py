#!/usr/bin/python3
"""transact_one: one-datom transactions through edn_t, at the process's MENTAT_SYNCHRONOUS,
against the same change made by hand-written SQL on the same store.

Usage: MENTAT_SYNCHRONOUS=FULL|NORMAL /usr/bin/python3 bench/write.py EXT SCALE OUTDIR [SECONDS]

The extension reads MENTAT_SYNCHRONOUS once per process, so each setting runs in its own
process (the bench Makefile starts this script twice). Each tx is
[[:db/add <random issue> :issue/state <state>]]; the state differs from the issue's current
one so every tx writes a datom (a re-assertion would be a no-op), and each write is logged
(common.py) so the checks after `mixed` know the answers. The baseline is what a person
would write on the format's tables for that change (`Writer.sql`: the tx id from
`known_parts`, the old datom out, the new one and the tx's instant in, three log rows), on its
own connection at the same synchronous setting; it runs in alternating phases with ours
(SECONDS, default 5, each, in 1-s phases), each paying for the checkpoints its commits start.
Warm-up 3 txs each; reports tx/s and per-tx latency percentiles of both and ours/SQL (mean
time per tx) in OUTDIR/transact-SCALE-<setting>.json, with the disk's floor beside them:
plain SQLite one-row commits (WAL, same synchronous setting, a fresh file in OUTDIR) for 2 s
right after, since the FULL figure is mostly this disk's fdatasync latency, which varies
0.2-3.7 ms here with the other sessions' I/O. MENTAT_WAL_GATHER=0 turns off the WAL-gathering
VFS (ext/store/store_vfs.c).
"""
import json
import os
import random
import sqlite3
import sys
import time

from common import STATES, connect, current_states, load_state, percentile, remove_db, write_json


class Writer:
    """Picks issues and new states; makes each change through edn_t (`ours`) or hand-written
    SQL (`sql`); appends each committed write to the writes log."""

    def __init__(self, con, P, st, exp, seed, raw=None):
        self.con, self.raw, self.db = con, raw, P['db']
        self.eids = st['issue_eids']
        self.cur, _ = current_states(P, exp)
        self.rnd = random.Random(seed)
        self.log = open(P['writes'], 'a')
        if raw:  # the hand-written SQL's attribute ids
            ident = dict(raw.execute('SELECT v, e FROM idents'))
            self.a_state, self.a_inst = ident[':issue/state'], ident[':db/txInstant']

    def ours(self, e, state):
        self.con.execute('SELECT edn_t(?, ?)', (self.db, '[[:db/add %d :issue/state %s]]' % (
            e, state))).fetchone()

    def sql(self, e, state):
        """The format's rows for one state change (SPEC.md §3: a tx id from :db.part/tx, persisted
        in the same transaction; datoms' flags from the attribute: :issue/state and
        :db/txInstant are indexed), as a person would write them."""
        x = self.raw.execute
        x('BEGIN IMMEDIATE')
        tx = x("SELECT idx FROM known_parts WHERE part = ':db.part/tx'").fetchone()[0]
        x("UPDATE known_parts SET idx = ? WHERE part = ':db.part/tx'", (tx + 1,))
        old = x('SELECT v FROM datoms WHERE e = ? AND a = ?', (e, self.a_state)).fetchone()[0]
        x('DELETE FROM datoms WHERE e = ? AND a = ?', (e, self.a_state))
        now = time.time_ns() // 1000
        x('INSERT INTO datoms (e, a, v, tx, value_type_tag, index_avet) '
          'VALUES (?, ?, ?, ?, 13, 1), (?, ?, ?, ?, 4, 1)',
          (e, self.a_state, state, tx, tx, self.a_inst, now, tx))
        x('INSERT INTO timelined_transactions (e, a, v, tx, added, value_type_tag) '
          'VALUES (?, ?, ?, ?, 0, 13), (?, ?, ?, ?, 1, 13), (?, ?, ?, ?, 1, 4)',
          (e, self.a_state, old, tx, e, self.a_state, state, tx, tx, self.a_inst, now, tx))
        x('COMMIT')

    def one(self, apply=None):
        apply = apply or self.ours
        n = self.rnd.randrange(len(self.eids))
        s = (self.cur[n] + self.rnd.randint(1, 4)) % 5
        apply(self.eids[n], STATES[s])
        self.cur[n] = s
        self.log.write(json.dumps([n, STATES[s]]) + '\n')
        self.log.flush()


def raw_commit_rate(path, sync, secs=2.0):
    """The same disk's floor: plain SQLite one-row commits in WAL mode at the same synchronous
    setting (a fresh file next to the store), tx/s."""
    remove_db(path)
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
    remove_db(path)
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
    raw = sqlite3.connect(P['db'], isolation_level=None)
    raw.execute('PRAGMA synchronous=%s' % sync)
    raw.execute('PRAGMA busy_timeout=10000')
    raw.execute('PRAGMA cache_size=-8192')  # the writer's own cache for small txs (ext/tx.c)
    w = Writer(con, P, st, exp, 'transact-' + sync, raw)
    forms = {'ours': w.ours, 'sql': w.sql}
    for apply in forms.values():
        for _ in range(3):
            w.one(apply)
    lat = {k: [] for k in forms}
    el = dict.fromkeys(forms, 0.0)
    phases = max(2, int(round(secs)))
    for i in range(phases):
        for k in (('ours', 'sql') if i % 2 == 0 else ('sql', 'ours')):
            t0 = time.perf_counter()
            while len(lat[k]) < 30 * (i + 1) // phases or time.perf_counter() - t0 < secs / phases:
                t1 = time.perf_counter()
                w.one(forms[k])
                lat[k].append((time.perf_counter() - t1) * 1000)
            el[k] += time.perf_counter() - t0
    raw.close()
    rawc = raw_commit_rate(os.path.join(out, 'raw-commit-%s.db' % sync), sync)

    def figures(k):
        return {'txs': len(lat[k]), 'seconds': el[k], 'tx_per_s': len(lat[k]) / el[k],
                'p50_ms': percentile(lat[k], 50), 'p95_ms': percentile(lat[k], 95),
                'p99_ms': percentile(lat[k], 99)}
    res = dict(figures('ours'), synchronous=sync, sql=figures('sql'), raw_sqlite_one_row_tx_per_s=rawc)
    res['ratio'] = res['sql']['tx_per_s'] / res['tx_per_s']
    print('transact_one %s: ours %d txs, %.0f tx/s, p50 %.3f ms; hand SQL %.0f tx/s, p50 %.3f ms; '
          'ours/SQL time per tx %.2f (raw SQLite one-row commit: %.0f tx/s)' % (
              sync, len(lat['ours']), res['tx_per_s'], res['p50_ms'], res['sql']['tx_per_s'],
              res['sql']['p50_ms'], res['ratio'], rawc))
    write_json(os.path.join(out, 'transact-%s-%s.json' % (scale, sync)), res)
    return 0


if __name__ == '__main__':
    sys.exit(main())
