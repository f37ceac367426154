"""The README's first example through the installed mentat_sqlite package.

Usage: python readme_example.py   (in a scratch directory: it creates people.db)
Prints PASS/FAIL lines and 'N passed, M failed'; exits 1 on any failure. Expected values
are the README's: the second transaction's tempids and tx_id, Ann|30, {"result":2}.
"""
import json
import os
import sqlite3
import sys

import mentat_sqlite

results = []


def check(name, got, want):
    ok = got == want
    results.append(ok)
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": got %r, want %r" % (got, want)))


here = os.path.dirname(os.path.abspath(mentat_sqlite.__file__))
check("loadable_path", mentat_sqlite.loadable_path(), os.path.join(here, "libmentat_sqlite"))
con = sqlite3.connect(":memory:")
mentat_sqlite.load(con)
r1 = json.loads(con.execute("""SELECT edn_t('people.db', '[{:db/ident :person/name :db/valueType :db.type/string
                            :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
                           {:db/ident :person/age :db/valueType :db.type/long
                            :db/cardinality :db.cardinality/one}]')""").fetchone()[0])
check("schema tx", (r1["tx_id"], r1["tempids"]), (268435457, {}))
r2 = json.loads(con.execute("""SELECT edn_t('people.db', '[{:db/id "ann" :person/name "Ann" :person/age 30}
                           {:person/name "Bob" :person/age 25}]')""").fetchone()[0])
check("data tx", (r2["tx_id"], r2["tempids"]), (268435458, {"ann": 65538}))
rows = con.execute("""SELECT c0, c1 FROM edn_q('people.db',
  '[:find ?n ?a :where [?e :person/name ?n] [?e :person/age ?a] [(> ?a 26)]]')""").fetchall()
check("table query", rows, [("Ann", 30)])
doc = con.execute("SELECT edn_q('people.db', '[:find (count ?e) :where [?e :person/name _]]')").fetchone()[0]
check("scalar query", doc, '{"result":2}')
v = json.loads(con.execute("SELECT mentat_version('json')").fetchone()[0])
check("version", v["version"], mentat_sqlite.__version__)
print("%d passed, %d failed" % (results.count(True), results.count(False)))
sys.exit(0 if all(results) else 1)
