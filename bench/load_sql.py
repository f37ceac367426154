#!/usr/bin/python3
"""bulk_load's baseline: the issues of the load inserted by hand-written SQL into the format's
tables, so the report can put ours/SQL beside the datoms/s target.

Usage: /usr/bin/python3 bench/load_sql.py EXT SCALE OUTDIR

A fresh store (OUTDIR/store-SCALE-sql.db, removed at the end) gets the schema and the users and
labels through edn_t, so it has the format's DDL and its `idx_auto_avet_<a>` indexes (none of
the extension's managed ones); then each 500-issue load file's datoms go in as the format's
rows: `datoms` and `timelined_transactions` by `executemany`, the tx's instant, the partitions'
`idx` in `known_parts`, one SQLite transaction per file, as in ours. The rows (entity ids, user
and label ids, instants in µs) are built from ds.json before the timer starts, so the figure is
SQLite's own insert rate on this store, not Python's. The connection matches our writer's for
bulk transactions: synchronous=FULL, 64 MiB page cache, SQLite's default autocheckpoint.
Writes OUTDIR/load-sql-SCALE.json. Checked: the store's log holds exactly the datoms of ours'
initial load (results-SCALE.json's load_datoms), a second count of the same data.

It also measures the format's floor (the least a load into our layout can cost): the same datoms and log rows as ours' initial
load (read from ours' log: every row after the schema tx up to t_mid) copied by
`INSERT ... SELECT` into a fresh store with the format's DDL (made by the schema tx through
edn_t, so it has the `idx_auto_avet_<a>` indexes and none of the extension's managed ones), in
one transaction, synchronous=FULL and the 64 MiB cache of our bulk writer: SQLite's own rate
for these rows, which no loader on this format beats. FLOOR_REPS copies (default 3; 1 at m),
the median reported as `floor_datoms_per_s` beside ours (`ours_datoms_per_s`) and their ratio.
`--floor-only` skips the hand-written load (scale m, where it takes minutes).
"""
import calendar
import json
import os
import sqlite3
import sys
import time

from common import connect, paths, read_result, remove_db, write_json

ISSUE_ATTRS = ('title', 'state', 'priority', 'assignee', 'reporter', 'created-at', 'label')


def iso_us(iso):
    """'2025-01-16T04:16:00.000Z' -> µs since the epoch (the generator's instants are whole minutes)."""
    return calendar.timegm(time.strptime(iso[:19], '%Y-%m-%dT%H:%M:%S')) * 1000000


def issue_rows(raw, issues):
    """Per 500-issue file: (issues, [(entity offset, a, v, value_type_tag, index_avet, index_vaet)])."""
    ident = dict(raw.execute('SELECT v, e FROM idents'))
    user = {int(v[4:v.index('@')]): e for e, v in raw.execute(
        'SELECT e, v FROM datoms WHERE a = ?', (ident[':user/email'],))}
    label = {int(v[6:]): e for e, v in raw.execute(
        'SELECT e, v FROM datoms WHERE a = ?', (ident[':label/name'],))}
    a = {k: ident[':issue/' + k] for k in ISSUE_ATTRS}
    files = []
    for k in range(0, len(issues), 500):
        rows = []
        chunk = issues[k:k + 500]
        for j, (_, title, state, prio, asg, rep, labels, created) in enumerate(chunk):
            rows += [(j, a['title'], title, 10, 0, 0), (j, a['state'], state, 13, 1, 0),
                     (j, a['priority'], prio, 5, 1, 0), (j, a['assignee'], user[asg], 0, 1, 1),
                     (j, a['reporter'], user[rep], 0, 1, 1), (j, a['created-at'], iso_us(created), 4, 0, 0)]
            rows += [(j, a['label'], label[n], 0, 1, 1) for n in labels]
        files.append((len(chunk), rows))
    return files, ident[':db/txInstant']


def transact(raw, n_issues, rows, a_inst):
    """One file's transaction; returns the datoms written (with the tx's instant)."""
    x = raw.execute
    x('BEGIN IMMEDIATE')
    tx = x("SELECT idx FROM known_parts WHERE part = ':db.part/tx'").fetchone()[0]
    e0 = x("SELECT idx FROM known_parts WHERE part = ':db.part/user'").fetchone()[0]
    x("UPDATE known_parts SET idx = ? WHERE part = ':db.part/tx'", (tx + 1,))
    x("UPDATE known_parts SET idx = ? WHERE part = ':db.part/user'", (e0 + n_issues,))
    d = [(e0 + j, a, v, tx, tag, avet, vaet) for j, a, v, tag, avet, vaet in rows]
    d.append((tx, a_inst, time.time_ns() // 1000, tx, 4, 1, 0))
    raw.executemany('INSERT INTO datoms (e, a, v, tx, value_type_tag, index_avet, index_vaet) '
                    'VALUES (?, ?, ?, ?, ?, ?, ?)', d)
    raw.executemany('INSERT INTO timelined_transactions (e, a, v, tx, added, value_type_tag) '
                    'VALUES (?, ?, ?, ?, 1, ?)', [r[:5] for r in d])
    x('COMMIT')
    return len(d)


def floor(ext, P, data, out, scale):
    """One copy of ours' initial load into a fresh store by INSERT ... SELECT; datoms/s."""
    db = os.path.join(out, 'store-%s-floor.db' % scale)
    remove_db(db)
    con = connect(ext)
    con.execute('SELECT edn_t(?, ?)', (db, open(os.path.join(data, 'schema.edn')).read())).fetchone()
    con.close()
    st = json.load(open(P['state']))
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute('PRAGMA synchronous=FULL')
    raw.execute('PRAGMA cache_size=-65536')
    raw.execute('ATTACH ? AS src', (P['db'],))
    # ours' schema tx: the first after the bootstrap one
    t_schema = raw.execute('SELECT min(tx) FROM src.timelined_transactions WHERE tx > '
                           '(SELECT min(tx) FROM src.timelined_transactions)').fetchone()[0]
    raw.execute('CREATE TEMP TABLE flags AS SELECT DISTINCT a, index_avet, index_vaet, index_fulltext, '
                'unique_value FROM src.datoms')
    os.sync()
    t0 = time.perf_counter()
    raw.execute('BEGIN IMMEDIATE')
    raw.execute('INSERT INTO datoms (e, a, v, tx, value_type_tag, index_avet, index_vaet, index_fulltext, '
                'unique_value) SELECT t.e, t.a, t.v, t.tx, t.value_type_tag, f.index_avet, f.index_vaet, '
                'f.index_fulltext, f.unique_value FROM src.timelined_transactions t JOIN flags f ON f.a = t.a '
                'WHERE t.tx > ? AND t.tx <= ? AND t.added = 1 ORDER BY t.rowid', (t_schema, st['t_mid']))
    n = raw.execute('SELECT changes()').fetchone()[0]
    raw.execute('INSERT INTO timelined_transactions (e, a, v, tx, added, value_type_tag, timeline) '
                'SELECT e, a, v, tx, added, value_type_tag, timeline FROM src.timelined_transactions '
                'WHERE tx > ? AND tx <= ? ORDER BY rowid', (t_schema, st['t_mid']))
    raw.execute('COMMIT')
    el = time.perf_counter() - t0
    raw.close()
    remove_db(db)
    return n, el


def main():
    ext, scale, out = sys.argv[1], sys.argv[2], sys.argv[3]
    P = paths(out, scale)
    data = P['data']
    ours = read_result(P['results'])
    reps = int(os.environ.get('FLOOR_REPS', '1' if scale == 'm' else '3'))
    runs = [floor(ext, P, data, out, scale) for _ in range(reps)]
    n_floor = runs[0][0]
    rates = sorted(n / el for n, el in runs)
    res_floor = {'floor_datoms': n_floor, 'floor_runs_datoms_per_s': rates,
                 'floor_datoms_per_s': rates[len(rates) // 2]}
    if ours:
        res_floor['ours_datoms_per_s'] = ours['bulk_datoms_per_s']
        res_floor['ours_vs_floor'] = ours['bulk_datoms_per_s'] / res_floor['floor_datoms_per_s']
        res_floor['floor_check'] = ('ok' if n_floor == ours['load_datoms'] else
                                    'the floor copied %d datoms, ours loaded %d' % (n_floor, ours['load_datoms']))
    print('bulk_load, the format\'s floor (INSERT ... SELECT of the same %d rows into a fresh store, median of '
          '%d): %.0f datoms/s; ours %s datoms/s, ours/floor %s' % (
              n_floor, reps, res_floor['floor_datoms_per_s'],
              '%.0f' % ours['bulk_datoms_per_s'] if ours else '?',
              '%.2f' % res_floor['ours_vs_floor'] if ours else '?'), flush=True)
    if '--floor-only' in sys.argv:
        res_floor.update({'scale': scale, 'check': res_floor.get('floor_check', 'ok')})
        write_json(os.path.join(out, 'load-sql-%s.json' % scale), res_floor)
        return 0 if res_floor['check'] == 'ok' else 1
    db = os.path.join(out, 'store-%s-sql.db' % scale)
    remove_db(db)
    loads = sorted(f for f in os.listdir(data) if f.startswith('load-'))
    texts = [open(os.path.join(data, f)).read() for f in loads]
    con = connect(ext)
    t_schema = json.loads(con.execute('SELECT edn_t(?, ?)', (db, open(os.path.join(
        data, 'schema.edn')).read())).fetchone()[0])['tx_id']
    first = [i for i, t in enumerate(texts) if ':issue/title' in t][0]
    t0 = time.perf_counter()
    for t in texts[:first]:  # users and labels, through edn_t (lookup refs need them)
        con.execute('SELECT edn_t(?, ?)', (db, t)).fetchone()
    t_entities = time.perf_counter() - t0
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute('PRAGMA synchronous=FULL')
    raw.execute('PRAGMA cache_size=-65536')
    files, a_inst = issue_rows(raw, json.load(open(os.path.join(data, 'ds.json')))['issues'])
    os.sync()  # the load before this left the disk busy: do not bill its writeback here
    n, t0 = 0, time.perf_counter()
    for n_issues, rows in files:
        n += transact(raw, n_issues, rows, a_inst)
    t_issues = time.perf_counter() - t0
    n_log = raw.execute('SELECT count(*) FROM transactions WHERE tx > ?', (t_schema,)).fetchone()[0]
    raw.close()
    con.close()
    remove_db(db)
    expect = ours['load_datoms'] if ours else None
    res = {'scale': scale, 'issue_datoms': n, 'issue_seconds': t_issues, 'datoms_per_s': n / t_issues,
           'entity_seconds': t_entities, 'log_datoms': n_log, 'ours_load_datoms': expect,
           'check': 'ok' if n_log == expect else 'the log holds %d datoms, ours loaded %s' % (n_log, expect)}
    res.update(res_floor)
    if res['check'] == 'ok' and res_floor.get('floor_check', 'ok') != 'ok':
        res['check'] = res_floor['floor_check']
    print('bulk_load, hand-written SQL: %d issue datoms in %.1f s = %.0f datoms/s (users and labels '
          'through edn_t, %.1f s, not counted); check: %s' % (n, t_issues, n / t_issues, t_entities, res['check']))
    write_json(os.path.join(out, 'load-sql-%s.json' % scale), res)
    return 0 if res['check'] == 'ok' else 1


if __name__ == '__main__':
    sys.exit(main())
