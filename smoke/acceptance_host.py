#!/usr/bin/python3
"""smoke/acceptance_host.py — the public acceptance cases on a host store
(SPEC.md §3a): each case runs with db_path ':main' on a fresh host
database file, through the shared runner's own comparison logic (imported
from ../shared/acceptance/run.py, which we do not change).

Usage: /usr/bin/python3 smoke/acceptance_host.py EXTENSION [RUN.py] [-k SUBSTRING]
Prints one line per failure and ends with 'N passed, M failed'.
"""
import importlib.util
import json
import os
import shutil
import sqlite3
import sys
import tempfile


def load_runner(path):
    spec = importlib.util.spec_from_file_location("acceptance_run", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_case(R, ext, case, d):
    """run.py's run_case, with db ':main' on a host connection of its own."""
    path = os.path.join(d, "host.db")
    con = sqlite3.connect(path, isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(ext)
    db = ":main"
    try:
        for i, tx in enumerate([case["schema"]] + list(case.get("tx", []))):
            try:
                con.execute("SELECT edn_t(?, ?)", (db, tx)).fetchone()
            except sqlite3.Error as e:
                if case.get("expect_error") and i > 0:
                    return "PASS", "error as expected in tx %d: %s" % (i, e)
                return "FAIL", "tx %d failed: %s" % (i, e)
        if "query" not in case:
            return ("FAIL", "expected an error, none came") if case.get("expect_error") else ("PASS", "")
        kind = R.find_kind(case["query"])
        opts = R.opts_for(case)
        try:
            doc = json.loads(con.execute("SELECT edn_q(?, ?, ?)", (db, case["query"], opts)).fetchone()[0])
            rows = con.execute("SELECT value FROM edn_q(?, ?, ?)", (db, case["query"], opts)).fetchall()
        except sqlite3.Error as e:
            if case.get("expect_error"):
                return "PASS", "error as expected: %s" % e
            return "FAIL", "query failed: %s" % e
        if case.get("expect_error"):
            return "FAIL", "expected an error, got %s" % json.dumps(doc)[:200]
        why = R.compare(case, R.scalar_result(doc, kind))
        if why:
            return "FAIL", "edn_q scalar: %s; got %s" % (why, json.dumps(doc)[:300])
        why = R.compare(case, R.table_result(rows, kind))
        if why:
            return "FAIL", "edn_q table: %s; got %s" % (why, json.dumps([r[0] for r in rows])[:300])
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        if integrity != "ok":
            return "FAIL", "integrity_check: %s" % integrity
        return "PASS", ""
    finally:
        con.close()


def main():
    args = sys.argv[1:]
    key = None
    if "-k" in args:
        key = args[args.index("-k") + 1]
        del args[args.index("-k"):args.index("-k") + 2]
    if not args:
        print(__doc__)
        return 2
    ext = os.path.abspath(args[0])
    if ext.endswith(".so"):
        ext = ext[:-3]
    here = os.path.dirname(os.path.abspath(__file__))
    run_py = args[1] if len(args) > 1 else os.path.join(here, "..", "..", "shared", "acceptance", "run.py")
    if not os.path.exists(run_py):
        run_py = "/work/shared/acceptance/run.py"
    R = load_runner(run_py)
    cases_file = os.path.join(os.path.dirname(os.path.abspath(run_py)), "cases.jsonl")
    cases = [json.loads(line) for line in open(cases_file) if line.strip()]
    if key:
        cases = [c for c in cases if key in c["id"] or key in c.get("feature", "")]
    passed = failed = 0
    for c in cases:
        d = tempfile.mkdtemp(prefix="mentat-acc-host.")
        try:
            status, why = run_case(R, ext, c, d)
        except Exception as e:  # a harness error fails the case, not the run
            status, why = "FAIL", "raised %r" % e
        finally:
            shutil.rmtree(d, ignore_errors=True)
        if status == "PASS":
            passed += 1
        else:
            failed += 1
            print("FAIL %s [%s]: %s" % (c["id"], c.get("feature", ""), why))
    print("%d passed, %d failed (host store ':main')" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
