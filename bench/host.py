#!/usr/bin/python3
"""bench/host.py — host stores (SPEC §3a) against file stores.

Usage: /usr/bin/python3 bench/host.py EXTENSION.so OUTDIR [SCALE]   (SCALE default xs)

1. The file store OUTDIR/store-SCALE.db as bench/run.py loads it (loaded here when
   missing), and a copy of it made with SQLite's backup API as the host database
   OUTDIR/host-SCALE.db (the same data; a host store is the same layout).
2. Every BENCH.md query scenario, ours through the edn_q table (native columns) and the
   scalar form, on the file store (db_path the file, a host connection in memory) and on
   the host store (db_path ':main' on a connection to the host database), interleaved call
   by call with fresh random inputs; warm-up 3; each repetition >= 30 samples and >= 1 s;
   median of 3 repetitions; ratio host / file of the p50s.
3. One-datom edn_t ([:db/add issue :issue/state s]) at synchronous=FULL: the file store
   (its writer's FULL default), the host store in autocommit (one transaction each), and
   batched by the host (BEGIN, 100 edn_t, COMMIT), the host database in WAL mode.
Writes OUTDIR/host-SCALE.json and prints a markdown table.
"""
import json
import os
import random
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as R  # noqa: E402
from common import HERE, STATES, connect, ext_path, paths, percentile, remove_db, write_json  # noqa: E402


def host_connect(ext, path):
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    con.enable_load_extension(True)
    con.load_extension(ext_path(ext))
    return con


def measure(forms, gen, min_samples=30, min_secs=1.0):
    """forms: [(name, prepare(x) -> call)]; p50/p95 of each, median of 3 repetitions."""
    def timed(prepare, x):
        call = prepare(x)
        t0 = time.perf_counter()
        call()
        return (time.perf_counter() - t0) * 1000.0
    reps = []
    for _ in range(3):
        samples = {f: [] for f, _ in forms}
        for _ in range(3):
            x = gen()
            for _, fn in forms:
                fn(x)()
        t0 = time.perf_counter()
        while len(samples[forms[0][0]]) < min_samples or time.perf_counter() - t0 < min_secs:
            k = len(samples[forms[0][0]]) % len(forms)
            for f, fn in forms[k:] + forms[:k]:
                samples[f].append(timed(fn, gen()))
        reps.append({f: [percentile(v, 50), percentile(v, 95), len(v)] for f, v in samples.items()})
    return {f: sorted(reps, key=lambda r: r[f][0])[1][f] for f, _ in forms}


def copy_store(src_path, dst_path):
    """A fresh copy of the store at src_path in dst_path (SQLite's backup API), in WAL mode."""
    remove_db(dst_path)
    src = sqlite3.connect(src_path)
    dst = sqlite3.connect(dst_path)
    src.backup(dst)
    src.close()
    dst.execute('PRAGMA journal_mode=WAL')
    dst.close()


def writes(ext, P, host_db, st, rnd):
    issues = st['issue_eids']

    def tx():
        return '[[:db/add %d :issue/state %s]]' % (rnd.choice(issues), rnd.choice(STATES))
    out = {}
    # The file store's writes go to a copy: the bench's store must keep the state its
    # writes log replays (run.py's checks, `make -C bench retime`).
    fdb = os.path.join(os.path.dirname(host_db), 'hostfile-' + os.path.basename(host_db))
    copy_store(P['db'], fdb)
    fcon = connect(ext)
    hcon = host_connect(ext, host_db)
    hcon.execute('PRAGMA synchronous=FULL')
    for _ in range(20):
        fcon.execute('SELECT edn_t(?, ?)', (fdb, tx())).fetchone()
        hcon.execute("SELECT edn_t(':main', ?)", (tx(),)).fetchone()
    n = 300

    def rate(fn, count):
        """(wall tx/s, CPU tx/s): the CPU figure leaves out the time this process sat
        preempted on a loaded machine; fsync waits count in neither."""
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        return count / (time.perf_counter() - t0), count / max(time.process_time() - c0, 1e-9)

    def single(c, db):
        def go():
            for _ in range(n):
                c.execute('SELECT edn_t(?, ?)', (db, tx())).fetchone()
        return go

    def batched(c, batches):
        def go():
            for _ in range(batches):
                c.execute('BEGIN')
                for _ in range(100):
                    c.execute("SELECT edn_t(':main', ?)", (tx(),)).fetchone()
                c.execute('COMMIT')
        return go
    out['file_single'] = rate(single(fcon, fdb), n)
    out['host_single'] = rate(single(hcon, ':main'), n)
    out['host_batched'] = rate(batched(hcon, 30), 3000)
    # The host's own choices (not ours to make, SPEC §3a): SAVEPOINT's statement journal in
    # memory and a page cache that holds the indexes' hot pages, as the file store's writer has.
    hcon.execute('PRAGMA temp_store=MEMORY')
    hcon.execute('PRAGMA cache_size=-65536')
    out['host_batched_temp_memory_cache_64m'] = rate(batched(hcon, 30), 3000)
    out['host_journal_mode'] = hcon.execute('PRAGMA journal_mode').fetchone()[0]
    out['host_synchronous'] = hcon.execute('PRAGMA synchronous').fetchone()[0]
    fcon.close()
    hcon.close()
    return out


def main():
    ext, out = sys.argv[1], sys.argv[2]
    scale = sys.argv[3] if len(sys.argv) > 3 else 'xs'
    os.makedirs(out, exist_ok=True)
    P = paths(out, scale)
    if not os.path.exists(os.path.join(P['data'], 'ds.json')):
        subprocess.check_call([sys.executable, os.path.join(HERE, 'gen.py'), scale, P['data']])
    exp = json.load(open(os.path.join(P['data'], 'expect.json')))
    if not (os.path.exists(P['db']) and os.path.exists(P['state'])):
        con, st, raw, res, bad = R.fresh_load(ext, scale, out, P, exp, P['db'])
        con.close()
        raw.close()
    st = json.load(open(P['state']))
    host_db = os.path.join(out, 'host-%s.db' % scale)
    copy_store(P['db'], host_db)
    fcon = connect(ext)
    hcon = host_connect(ext, host_db)
    A, scs = R.scenarios(P['db'], st, exp, random.Random(7))
    res = {'scale': scale, 'scenarios': {}, 'build': R.build_id(ext)}
    for name, query, opts, gen, _ in scs:
        ft, fs = R.ours_args(P['db'], query, opts)
        ht, hs = R.ours_args(':main', query, opts)
        fetch = R.one_row if query is None else R.all_rows
        # the same answers first
        x = gen()
        a = fetch(fcon.execute(*ft(x)))
        b = fetch(hcon.execute(*ht(x)))
        if sorted(map(repr, a if isinstance(a, list) else [a])) != sorted(map(repr, b if isinstance(b, list) else [b])):
            print('MISMATCH %s: file %r host %r' % (name, a, b))
        forms = [('file_table', R.runner(fcon, ft, fetch)), ('host_table', R.runner(hcon, ht, fetch)),
                 ('file_scalar', R.runner(fcon, fs, R.one_row)), ('host_scalar', R.runner(hcon, hs, R.one_row))]
        m = measure(forms, gen)
        m['ratio_table'] = m['host_table'][0] / m['file_table'][0]
        m['ratio_scalar'] = m['host_scalar'][0] / m['file_scalar'][0]
        res['scenarios'][name] = m
        print('%-15s file %.4f / host %.4f ms (table, ratio %.2f); file %.4f / host %.4f ms (scalar, '
              'ratio %.2f)' % (name, m['file_table'][0], m['host_table'][0], m['ratio_table'],
                               m['file_scalar'][0], m['host_scalar'][0], m['ratio_scalar']), flush=True)
        write_json(os.path.join(out, 'host-%s.json' % scale), res)
    fcon.close()
    hcon.close()
    res['writes'] = writes(ext, P, host_db, st, random.Random(13))
    print(json.dumps(res['writes']))
    write_json(os.path.join(out, 'host-%s.json' % scale), res)
    return 0


if __name__ == '__main__':
    sys.exit(main())
