#!/usr/bin/python3
"""smoke/follow_log.py — the README's change feed (section "edn_log"), run for real: this
process follows a store that another process writes, waking when `PRAGMA data_version` on a
plain connection to the store file moves (another connection committed) and reading
edn_log(db, last + 1), the transactions after the last one it saw (Datomic's tx-range).

Usage: /usr/bin/python3 smoke/follow_log.py /abs/path/libmentat_sqlite.so
The writer is this script again (--writer EXT DB N): N transactions, a few ms apart, each
printing its tx id. The check: the follower saw exactly the writer's transactions, each once,
in tx order, each with its own datom and its :db/txInstant. Prints 'N passed, M failed'.
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

N_TX = 40


def connect(ext):
    con = sqlite3.connect(':memory:', isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(ext[:-3] if ext.endswith('.so') else ext)
    return con


def writer(ext, db, n):
    con = connect(ext)
    for i in range(n):
        r = con.execute('SELECT edn_t(?, ?)', (db, '[{:ev/n %d}]' % i)).fetchone()[0]
        print(r.split('"tx_id":')[1].split(',')[0], flush=True)
        time.sleep(0.005 * (i % 3))


def follow(ext, db, stop):
    """The README's loop: yields (tx, tx_instant, e, a, v, added) as transactions arrive,
    until stop() says enough."""
    con = connect(ext)
    watch = sqlite3.connect(db, isolation_level=None)   # its data_version moves on others' commits
    last, version = 0, None
    while not stop():
        v = watch.execute('PRAGMA data_version').fetchone()[0]
        if v != version:                                  # read after the check: nothing is missed
            version = v
            for row in con.execute('SELECT tx, tx_instant, e, a, v, added FROM edn_log(?, ?)',
                                   (db, last + 1)):
                yield row
                last = row[0]
        time.sleep(0.002)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--writer':
        writer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    ext = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix='mentat-follow.')
    db = os.path.join(tmp, 'feed.db')
    results = []

    def check(name, got, want):
        results.append(got == want)
        print('%s %s%s' % ('PASS' if got == want else 'FAIL', name, '' if got == want else
                           ': got %r, want %r' % (got, want)))
    try:
        con = connect(ext)
        con.execute('SELECT edn_t(?, ?)', (db, '[{:db/ident :ev/n :db/valueType :db.type/long '
                                               ':db/cardinality :db.cardinality/one}]'))
        schema_tx = con.execute("SELECT max(tx) FROM edn_log(?)", (db,)).fetchone()[0]
        w = subprocess.Popen([sys.executable, __file__, '--writer', ext, db, str(N_TX)],
                             stdout=subprocess.PIPE)
        seen, by_tx = [], {}
        deadline = time.time() + 60
        for tx, inst, e, a, v, added in follow(ext, db, lambda: (len([t for t in by_tx if t > schema_tx]) >= N_TX
                                                                  or time.time() > deadline)):
            if not seen or seen[-1] != tx:
                seen.append(tx)
            by_tx.setdefault(tx, []).append((a, v, inst, added))
        out, _ = w.communicate(timeout=60)
        written = [int(x) for x in out.split()]
        check('writer committed %d transactions' % N_TX, (w.returncode, len(written)), (0, N_TX))
        new = [t for t in seen if t > schema_tx]
        check('follower saw every transaction once, in tx order', new, written)
        ok = all(sorted(a for a, _, _, _ in by_tx[t]) == [':db/txInstant', ':ev/n'] for t in written)
        check('each transaction: its datom and its :db/txInstant', ok, True)
        ok = all(v == i for i, t in enumerate(written) for a, v, _, _ in by_tx[t] if a == ':ev/n')
        check('the values in commit order', ok, True)
        ok = all(len({inst for _, _, inst, _ in by_tx[t]}) == 1 for t in written)
        check('one tx_instant per transaction', ok, True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('%d passed, %d failed' % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
