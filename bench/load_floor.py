#!/usr/bin/python3
"""bulk_load against the format's floor alone, for A/B runs of two builds (what a
bulk load costs over the same rows written by bare SQL, bench/load_sql.py).

Usage: /usr/bin/python3 bench/load_floor.py EXT SCALE OUTDIR [FLOORS]

Loads OUTDIR/data-SCALE (bench/gen.py) into a fresh OUTDIR/store-SCALE.db timed exactly as
run.py's Loader.load times bulk_load (the schema tx untimed, then every load file through edn_t
and the first query, which runs the managed-index build the bulk commits deferred), then copies
it FLOORS times (default 0) by load_sql.floor, the same INSERT ... SELECT the report's
`ours_vs_floor` divides by. Prints wall and process CPU (user/sys) for each, since on a shared
machine the wall figures move with the other processes' load while CPU does much less; writes
OUTDIR/state-SCALE.json with t_mid for the floor. NFILES=N loads only the first N load files.
"""
import json
import os
import resource
import sqlite3
import sys
import time

from common import connect, paths, remove_db
import load_sql


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def main():
    ext, scale, out = sys.argv[1], sys.argv[2], sys.argv[3]
    floors = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    P = paths(out, scale)
    remove_db(P['db'])
    con = connect(ext)

    def tx(edn):
        return json.loads(con.execute('SELECT edn_t(?, ?)', (P['db'], edn)).fetchone()[0])

    tx(open(os.path.join(P['data'], 'schema.edn')).read())
    loads = sorted(f for f in os.listdir(P['data']) if f.startswith('load-'))
    if os.environ.get('NFILES'):
        loads = loads[:int(os.environ['NFILES'])]
    texts = [open(os.path.join(P['data'], f)).read() for f in loads]
    u0, s0 = cpu()
    t0 = time.perf_counter()
    reports = [tx(t) for t in texts]
    con.execute('SELECT count(*) FROM edn_q(?, ?)',
                (P['db'], '[:find ?e . :where [?e :db/ident :db.part/db]]')).fetchall()
    el = time.perf_counter() - t0
    u1, s1 = cpu()
    raw = sqlite3.connect(P['db'])
    n = raw.execute('SELECT count(*) FROM transactions WHERE tx >= ? AND tx <= ?',
                    (reports[0]['tx_id'], reports[-1]['tx_id'])).fetchone()[0]
    raw.close()
    con.close()
    rate = n / el
    print('ours: %d datoms in %.2f s = %.0f datoms/s; CPU user %.2f s, sys %.2f s' % (
        n, el, rate, u1 - u0, s1 - s0), flush=True)
    json.dump({'t_mid': reports[-1]['tx_id']}, open(P['state'], 'w'))
    for _ in range(floors):
        u0, s0 = cpu()
        nf, fe = load_sql.floor(ext, P, P['data'], out, scale)
        u1, s1 = cpu()
        print('floor: %d datoms in %.2f s = %.0f datoms/s (CPU with its setup: user %.2f s, sys %.2f s); '
              'ours/floor %.2f' % (nf, fe, nf / fe, u1 - u0, s1 - s0, rate / (nf / fe)), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
