#!/usr/bin/python3
"""smoke/host_store.py — host stores (SPEC.md §3a): the store inside
a database of the calling connection, in one transaction with the host's
own SQL.

Run: /usr/bin/python3 smoke/host_store.py build/libmentat_sqlite.so
Every expected answer is worked out by hand from SPEC §3a and Datomic's
d/with / transaction semantics (a rolled-back transaction leaves nothing).
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SO = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/libmentat_sqlite.so")
FAILS = []
TMP = tempfile.mkdtemp(prefix="mentat-host-")


def check(name, got, want):
    if got != want:
        FAILS.append(name)
        print(f"FAIL {name}\n  got:  {got!r}\n  want: {want!r}")
    else:
        print(f"ok   {name}")


def err_of(con, sql, *args):
    try:
        con.execute(sql, args).fetchall()
    except sqlite3.Error as e:
        return str(e)
    return None


def connect(path, **kw):
    con = sqlite3.connect(path, isolation_level=None, **kw)
    con.enable_load_extension(True)
    con.load_extension(SO)
    return con


def t(con, tx, db=":main"):
    return json.loads(con.execute("SELECT edn_t(?, ?)", (db, tx)).fetchone()[0])


def q(con, query, db=":main", opts=None):
    return json.loads(con.execute("SELECT edn_q(?, ?, ?)", (db, query, opts)).fetchone()[0])["result"]


SCHEMA = """[{:db/ident :person/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one
              :db/unique :db.unique/identity}
             {:db/ident :person/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]"""


def main():
    path = os.path.join(TMP, "app.db")
    con = connect(path)
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, what TEXT)")

    # A query before any edn_t reads an empty store (the bootstrap's 40
    # idents, as a new file store) and writes nothing to the host database.
    check("query before the store exists",
          q(con, "[:find (count ?e) . :where [?e :db/ident]]"), 40)
    check("and created nothing",
          con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'datoms'").fetchone()[0], 0)

    # Autocommit: atomic by itself, the layout created in the host's own file.
    r = t(con, SCHEMA)
    check("first tx id", r["tx_id"], 268435457)
    check("tables in the host database",
          con.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('datoms','known_parts',"
                      "'timelined_transactions','idents','schema','fulltext_values')").fetchone()[0], 6)
    check("user_version 3 (the file is a store for the Rust engine)",
          con.execute("PRAGMA user_version").fetchone()[0], 3)
    check("journal mode untouched", con.execute("PRAGMA journal_mode").fetchone()[0], "delete")
    t(con, '[{:person/name "Ann" :person/age 30}]')
    check("query through the host", q(con, '[:find ?a . :where [?e :person/name "Ann"] [?e :person/age ?a]]'), 30)

    # One transaction with the host: order row and datoms commit together.
    con.execute("BEGIN")
    con.execute("INSERT INTO orders (what) VALUES ('book')")
    t(con, '[{:person/name "Bob" :person/age 40}]')
    con.execute("COMMIT")
    check("commit keeps both", (con.execute("SELECT count(*) FROM orders").fetchone()[0],
                                q(con, '[:find ?a . :where [?e :person/name "Bob"] [?e :person/age ?a]]')),
          (1, 40))

    # d/with: BEGIN; edn_t; query sees it; ROLLBACK: gone, tx id reused.
    tx_before = q(con, "[:find (max ?tx) . :where [?tx :db/txInstant]]")
    con.execute("BEGIN")
    con.execute("INSERT INTO orders (what) VALUES ('pen')")
    r = t(con, '[{:person/name "Cy" :person/age 50}]')
    seen = q(con, '[:find ?a . :where [?e :person/name "Cy"] [?e :person/age ?a]]')
    seen_table = con.execute("SELECT c0 FROM edn_q(':main', '[:find ?a :where [?e :person/name \"Cy\"] [?e :person/age ?a]]')").fetchall()
    con.execute("ROLLBACK")
    check("d/with: the uncommitted datoms are seen (scalar, table)", (seen, seen_table), (50, [(50,)]))
    check("rolled back: no Cy, no pen",
          (q(con, '[:find ?e . :where [?e :person/name "Cy"]]'),
           con.execute("SELECT count(*) FROM orders").fetchone()[0]), (None, 1))
    r2 = t(con, '[{:person/name "Dee"}]')
    check("the rolled-back tx id is given out again", (r["tx_id"], r2["tx_id"]), (tx_before + 1, tx_before + 1))
    check("the rolled-back entid is given out again",
          r2["tempids"] == {} and q(con, '[:find ?e . :where [?e :person/name "Dee"]]'),
          q(con, '[:find ?e . :where [?e :person/name "Dee"]]'))

    # A rolled-back schema change leaves no cached trace.
    con.execute("BEGIN")
    t(con, "[{:db/ident :a/x :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]")
    t(con, '[{:person/name "Ann" :a/x 1}]')
    check("new attribute usable inside the transaction", q(con, "[:find ?v . :where [_ :a/x ?v]]"), 1)
    con.execute("ROLLBACK")
    check("after rollback :a/x is unknown to edn_t",
          err_of(con, "SELECT edn_t(':main', '[{:person/name \"Ann\" :a/x 2}]')"),
          "edn_t: line 1 col 22: unknown attribute :a/x")
    # A new attribute now takes the entid :a/x had; a plan compiled for :a/x
    # while it existed must not be reused (it would read :a/z's datoms).
    t(con, "[{:db/ident :a/z :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]")
    t(con, '[{:person/name "Ann" :a/z 9}]')
    check("after rollback :a/x matches nothing (cached plan not reused)",
          q(con, "[:find ?v . :where [_ :a/x ?v]]"), None)
    check("and :a/z is seen", q(con, "[:find ?v . :where [_ :a/z ?v]]"), 9)

    # A failed edn_t inside BEGIN undoes only its own work.
    con.execute("BEGIN")
    con.execute("INSERT INTO orders (what) VALUES ('cup')")
    e = err_of(con, "SELECT edn_t(':main', '[{:person/name \"Eve\" :person/age 1} [:db/add \"x\" :person/age \"no\"]]')")
    con.execute("COMMIT")
    check("failed edn_t is an error", e is not None, True)
    check("the host's earlier statement stays, the failed tx's datoms do not",
          (con.execute("SELECT count(*) FROM orders WHERE what = 'cup'").fetchone()[0],
           q(con, '[:find ?e . :where [?e :person/name "Eve"]]')), (1, None))

    # A write from inside a read statement over the store's own tables.
    check("edn_t inside a scan of datoms",
          (err_of(con, "SELECT edn_t(':main', '[{:person/name \"F\"}]') FROM datoms LIMIT 1") or "").split(" (")[0],
          "edn_t: cannot write to host store :main from inside a statement that reads its tables")
    check("edn_t inside an open edn_q cursor over the same store",
          (err_of(con, "SELECT edn_t(':main', '[{:person/name \"F\"}]') FROM edn_q(':main', "
                  "'[:find ?e :where [?e :person/name]]')") or "").split(" (")[0],
          "edn_t: cannot write to host store :main from inside a statement that reads its tables")
    # Inside a writing statement the calls' writes join the statement's.
    con.execute("CREATE TABLE txlog (r TEXT)")
    check("INSERT ... SELECT edn_t(...) works",
          err_of(con, "INSERT INTO txlog SELECT edn_t(':main', '[{:person/name \"Ivy\" :person/age 9}]')"), None)
    check("and stored the row and the datoms",
          (con.execute("SELECT count(*) FROM txlog").fetchone()[0],
           q(con, '[:find ?a . :where [?e :person/name "Ivy"] [?e :person/age ?a]]')), (1, 9))
    check("edn_t inside a scan of another table works",
          len(con.execute("SELECT edn_t(':main', json_array(json_object())) FROM orders LIMIT 0").fetchall()), 0)

    # The host's own functions in a query.
    con.create_function("my_score", 2, lambda name, age: len(name) * 100 + age)
    check("host function in a binding",
          q(con, '[:find ?s . :where [?e :person/name "Ann"] [?e :person/age ?a] [(my_score "Ann" ?a) ?s]]'), 330)
    con.create_function("is_old", 1, lambda age: 1 if age >= 35 else 0)
    check("host function as a predicate",
          q(con, "[:find [?n ...] :where [?e :person/name ?n] [?e :person/age ?a] [(is_old ?a)]]"), ["Bob"])
    check("unknown function stays an error",
          err_of(con, "SELECT edn_q(':main', '[:find ?s :where [?e :person/age ?a] [(no_such_fn ?a) ?s]]')"),
          "edn_q: line 1 col 38: unknown function no_such_fn")
    fpath = os.path.join(TMP, "file.db")
    t(con, SCHEMA, fpath)
    t(con, '[{:person/name "Ann" :person/age 30}]', fpath)
    check("file stores do not call host functions",
          err_of(con, "SELECT edn_q(?, '[:find ?s :where [?e :person/age ?a] [(my_score \"A\" ?a) ?s]]')", fpath),
          "edn_q: line 1 col 38: unknown function my_score")

    # Attached and temp databases.
    # A store in temp would hide main's; a TEMP table named like the store's
    # hides it too, refused until it goes.
    check("a temp store over main's is refused",
          err_of(con, "SELECT edn_t(':temp', '[]')"),
          "edn_t: db_path ':temp': database main holds a store (tables datoms, ...), which a store "
          "in temp would hide from unqualified names; use ':main'")
    con.execute("CREATE TEMP TABLE datoms (x)")
    check("a TEMP table named datoms hides main's store: refused",
          err_of(con, "SELECT edn_q(':main', '[:find ?e . :where [?e :person/name \"Ann\"]]')"),
          "edn_q: db_path ':main': database temp also holds tables named like the store's (datoms, ...), "
          "and unqualified names find those first; rename them or use ':temp'")
    con.execute("DROP TABLE temp.datoms")
    check("and usable again once it is gone",
          q(con, '[:find ?a . :where [?e :person/name "Ann"] [?e :person/age ?a]]'), 30)

    # The store's SQL names its tables unqualified (SQLite looks in temp,
    # main, then attached databases in order), so an attached store is
    # refused while main holds one too (README "Decisions", "Host stores name
    # their tables unqualified").
    con.execute("ATTACH ? AS aux", (os.path.join(TMP, "aux.db"),))
    check("an attached store behind main's is refused",
          err_of(con, "SELECT edn_t(':aux', '[]')"),
          "edn_t: db_path ':aux': database main also holds tables named like the store's (datoms, ...), "
          "and unqualified names find those first; rename them or use ':main'")
    con.execute("DETACH aux")
    main_con = con
    con = connect(os.path.join(TMP, "plain.db"))
    con.execute("ATTACH ? AS aux", (os.path.join(TMP, "aux.db"),))
    t(con, SCHEMA, ":aux")
    t(con, '[{:person/name "Gus" :person/age 7}]', ":aux")
    check("attached host store", q(con, '[:find ?a . :where [?e :person/name "Gus"] [?e :person/age ?a]]', ":aux"), 7)
    check("the attached store is separate",
          q(con, "[:find ?e . :where [?e :db/ident :person/name]]"), None)
    check("datoms live in aux", con.execute("SELECT count(*) FROM aux.sqlite_master WHERE name = 'datoms'").fetchone()[0], 1)
    check("unknown database",
          err_of(con, "SELECT edn_t(':nope', '[]')"),
          "edn_t: db_path ':nope': no database nope on this connection (':main', ':temp' or an ATTACHed name)")
    con.close()
    con = main_con
    con2 = connect(":memory:")
    t(con2, SCHEMA, ":temp")
    t(con2, '[{:person/name "Tim" :person/age 3}]', ":temp")
    check("temp host store", q(con2, '[:find ?a . :where [?e :person/name "Tim"] [?e :person/age ?a]]', ":temp"), 3)
    con2.close()

    # Another connection's commits are seen (data_version), its entids not reused.
    other = connect(path)
    t(other, '[{:person/name "Hal" :person/age 60}]')
    check("another connection's commit is seen", q(con, '[:find ?a . :where [?e :person/name "Hal"] [?e :person/age ?a]]'), 60)
    t(other, "[{:db/ident :b/y :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]")
    t(con, '[{:person/name "Hal" :b/y 5}]')
    check("another connection's schema change is seen", q(con, "[:find ?v . :where [_ :b/y ?v]]", ":main"), 5)
    other.close()

    # Refusals: a foreign layout, a read-only database.
    fpath2 = os.path.join(TMP, "foreign.db")
    f = connect(fpath2)
    f.execute("CREATE TABLE datoms (id INTEGER PRIMARY KEY, stuff TEXT)")
    check("a foreign table named datoms is refused",
          err_of(f, "SELECT edn_t(':main', '[]')"),
          "edn_t: host database main holds tables named like a Mentat store's but not in its v3 layout "
          "(datoms: id,stuff); it is left unchanged")
    check("and left unchanged", f.execute("SELECT sql FROM sqlite_master").fetchall(),
          [("CREATE TABLE datoms (id INTEGER PRIMARY KEY, stuff TEXT)",), ])
    f.close()
    ro = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    ro.enable_load_extension(True)
    ro.load_extension(SO)
    check("read-only host database: edn_t refused",
          err_of(ro, "SELECT edn_t(':main', '[{:person/name \"Ro\"}]')"), "edn_t: host database main is read-only")
    check("read-only host database: queries work",
          q(ro, '[:find ?a . :where [?e :person/name "Ann"] [?e :person/age ?a]]'), 30)
    ro.close()

    # Integrity after all of it.
    check("integrity", con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
    con.close()

    # A plain sqlite3_close (v1) after host-store calls returns SQLITE_OK:
    # tested from C in test/test_host.c; here, a store created by the host
    # opens as a file store (the same layout).
    c3 = connect(":memory:")
    check("the host's file opens as a file store",
          q(c3, '[:find ?a . :where [?e :person/name "Ann"] [?e :person/age ?a]]', path), 30)
    c3.close()

    print(f"{len(FAILS)} failure(s)" if FAILS else "all ok")
    subprocess.run(["rm", "-rf", TMP])
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
