"""Helpers shared by the bench scripts: loading the extension, percentiles, the
load state (issue entids, t_mid, t_since) and the log of later writes.

Every script that writes to the store after the load (write.py, mixed.py)
appends its changes to OUTDIR/writes-SCALE.jsonl, one [issue position, state]
per line, in commit order (only one writer runs at a time), and every writer
picks a state different from the issue's current one, so each write adds a
datom. The checks after `mixed` replay that log over the generator's final
states to know the answers.
"""
import json
import os
import sqlite3
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STATES = [':state/open', ':state/in-progress', ':state/closed', ':state/resolved', ':state/reopened']


def ext_path(ext):
    ext = os.path.abspath(ext)
    return ext[:-3] if ext.endswith('.so') else ext


def connect(ext):
    """A host connection with the extension loaded; the store is named per call. The host's own
    database is in memory, or the file BENCH_HOST_FILE names (each call then also asks whether
    the store is the host's own file: vtab/call.c)."""
    con = sqlite3.connect(os.environ.get('BENCH_HOST_FILE') or ':memory:', isolation_level=None,
                          check_same_thread=False)
    con.enable_load_extension(True)
    con.load_extension(ext_path(ext))
    return con


def percentile(xs, p):
    """Nearest-rank percentile of a list of numbers."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def time_call(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


def paths(out, scale):
    return {'db': os.path.join(out, 'store-%s.db' % scale),
            'data': os.path.join(out, 'data-' + scale),
            'state': os.path.join(out, 'state-%s.json' % scale),
            'writes': os.path.join(out, 'writes-%s.jsonl' % scale),
            'results': os.path.join(out, 'results-%s.json' % scale)}


def load_state(out, scale):
    p = paths(out, scale)
    st = json.load(open(p['state']))
    exp = json.load(open(os.path.join(p['data'], 'expect.json')))
    return p, st, exp


def current_states(p, exp):
    """The generator's final states with every logged later write applied, and the set of
    issue positions those writes touched."""
    cur = [STATES.index(s) for s in exp['final_state']]
    touched = set()
    if os.path.exists(p['writes']):
        for line in open(p['writes']):
            if line.strip():
                n, s = json.loads(line)
                cur[n] = STATES.index(s)
                touched.add(n)
    return cur, touched


def remove_db(path):
    """Removes a SQLite file and its -wal and -shm, where they exist."""
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def read_result(path):
    return json.load(open(path)) if os.path.exists(path) else None


def write_json(path, obj):
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)
