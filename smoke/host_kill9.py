#!/usr/bin/python3
"""smoke/host_kill9.py — a host-store transaction killed by SIGKILL: a child
process runs BEGIN; INSERT an order row; SELECT edn_t(':main',
<50,000 datoms>) and is killed in the middle of the edn_t; the host database
must then be exactly as before that transaction (integrity ok, no order row,
none of its datoms, the next edn_t gets the next tx id), in the host's own
journal mode (rollback journal, then WAL).

Usage: /usr/bin/python3 smoke/host_kill9.py build/libmentat_sqlite.so
"""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

SO = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/libmentat_sqlite.so")
TMP = tempfile.mkdtemp(prefix="mentat-host-kill9.")
FAILS = []

CHILD = r"""
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.enable_load_extension(True)
con.load_extension(sys.argv[2])
tx = "[" + " ".join('{:k/n %d :k/s "v%d"}' % (i, i) for i in range(1000, 51000)) + "]"
con.execute("BEGIN")
con.execute("INSERT INTO orders (what) VALUES ('killed')")
print("go", flush=True)
con.execute("SELECT edn_t(':main', ?)", (tx,)).fetchone()
print("done", flush=True)
con.execute("COMMIT")
"""


def connect(path):
    con = sqlite3.connect(path, isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(SO)
    return con


def state(con):
    return (con.execute("SELECT count(*) FROM orders").fetchone()[0],
            con.execute("SELECT count(*) FROM datoms").fetchone()[0],
            con.execute("SELECT count(*) FROM timelined_transactions").fetchone()[0],
            con.execute("SELECT group_concat(part || '=' || idx) FROM known_parts").fetchone()[0])


def trial(journal, delay):
    path = os.path.join(TMP, "%s-%s.db" % (journal, delay))
    con = connect(path)
    con.execute("PRAGMA journal_mode=%s" % journal)
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, what TEXT)")
    con.execute("SELECT edn_t(':main', '[{:db/ident :k/n :db/valueType :db.type/long :db/unique :db.unique/identity}"
                " {:db/ident :k/s :db/valueType :db.type/string}]')").fetchone()
    for i in range(5):
        con.execute("INSERT INTO orders (what) VALUES ('ok')")
        con.execute("SELECT edn_t(':main', ?)", ('[{:k/n %d :k/s "x"}]' % i,)).fetchone()
    before = state(con)
    last_tx = con.execute("SELECT max(tx) FROM timelined_transactions").fetchone()[0]
    con.close()
    p = subprocess.Popen([sys.executable, "-c", CHILD, path, SO], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()                      # "go": inside BEGIN, the order row written
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    out = p.stdout.read()
    p.wait()
    if "done" in out:
        return None                          # finished before the kill: proves nothing
    con = connect(path)
    name = "%s, killed %.2f s into edn_t" % (journal, delay)
    got = (con.execute("PRAGMA integrity_check").fetchone()[0], state(con))
    want = ("ok", before)
    if got != want:
        FAILS.append(name)
        print("FAIL %s\n  got:  %r\n  want: %r" % (name, got, want))
    else:
        print("ok   %s: as before (%d order rows, %d datoms)" % (name, before[0], before[1]))
    r = json.loads(con.execute("SELECT edn_t(':main', '[{:k/n 99}]')").fetchone()[0])
    if r["tx_id"] != last_tx + 1:
        FAILS.append(name + ": next tx id")
        print("FAIL %s: next tx id %d, want %d" % (name, r["tx_id"], last_tx + 1))
    con.close()
    return True


def main():
    for journal in ("delete", "wal"):
        for delay in (0.3, 0.8):
            d = delay
            for _ in range(4):
                if trial(journal, d):
                    break
                d /= 2
            else:
                FAILS.append("%s %.2f: the transaction always finished before the kill" % (journal, delay))
    shutil.rmtree(TMP, ignore_errors=True)
    print("%d failure(s)" % len(FAILS) if FAILS else "all ok")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
