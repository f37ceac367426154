#!/usr/bin/python3
"""transact_one: one-datom transactions through edn_t, at the process's MENTAT_SYNCHRONOUS.

Usage: MENTAT_SYNCHRONOUS=FULL|NORMAL /usr/bin/python3 bench/write.py EXT SCALE OUTDIR [SECONDS]

The extension reads MENTAT_SYNCHRONOUS once per process, so each setting runs in its own
process (the bench Makefile starts this script twice). Each tx is
[[:db/add <random issue> :issue/state <state>]]; the state differs from the issue's current
one so every tx writes a datom (a re-assertion would be a no-op), and each write is logged
(common.py) so the checks after `mixed` know the answers. Warm-up 3 txs; runs at least 30 txs
and SECONDS (default 5) seconds; reports tx/s and per-tx latency percentiles in
OUTDIR/transact-SCALE-<setting>.json.
"""
import json
import os
import random
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


def main():
    ext, scale, out = sys.argv[1], sys.argv[2], sys.argv[3]
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 5.0
    sync = os.environ.get('MENTAT_SYNCHRONOUS', 'FULL')
    P, st, exp = load_state(out, scale)
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
    res = {'synchronous': sync, 'txs': len(lat), 'seconds': el, 'tx_per_s': len(lat) / el,
           'p50_ms': percentile(lat, 50), 'p95_ms': percentile(lat, 95), 'p99_ms': percentile(lat, 99)}
    print('transact_one %s: %d txs, %.0f tx/s, p50 %.3f ms' % (sync, len(lat), res['tx_per_s'], res['p50_ms']))
    write_json(os.path.join(out, 'transact-%s-%s.json' % (scale, sync)), res)
    return 0


if __name__ == '__main__':
    sys.exit(main())
