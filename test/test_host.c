/*
** test_host.c — host stores (SPEC.md §3a) through the C API: what a
** data case cannot say. A plain sqlite3_close (v1) after host-store calls
** returns SQLITE_OK (the cached statements are finalized when SQLite
** disconnects mentat_host_state, before its busy check); edn_t commits and
** rolls back with the host's transaction; a rolled-back schema change and
** tx counter leave no cached trace; interrupts stop a host-store edn_t with
** nothing stored. Expected answers are worked out by hand from SPEC.md §3a.
*/
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include "tuhost.h"
#include "config.h"
#include "store.h"
#include "query.h"
#include "query_funcs.h"
#include "interrupt.h"

/* A host on the file zName in the test's temporary directory. */
static sqlite3 *openFile(const char *zName) {
  return tuOpenHostAt(tuTempPath(zName));
}

static const char zSchema[] =
  "SELECT edn_t(':main', '[{:db/ident :p/name :db/valueType :db.type/string"
  " :db/unique :db.unique/identity} {:db/ident :p/n :db/valueType :db.type/long}]')";

START_TEST(close_v1_after_host_calls) {
  sqlite3 *db = openFile("close.db");
  tuExecOk(db, zSchema);
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"a\" :p/n 1}]')");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/n ?n]]')", "{\"result\":1}");
  tuExpectQuery(db, "SELECT count(*) FROM edn_q(':main', '[:find ?e :where [?e :p/n]]')", "1");
  tuExpectQuery(db, "SELECT edn_pull(':main', '[:p/n]', '[:p/name \"a\"]') IS NOT NULL", "1");
  /* Cached plans and transactor statements live on this connection. */
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

START_TEST(close_v1_twice_used) {
  /* State freed at close and made anew on the next connection. */
  sqlite3 *db = openFile("close2.db");
  tuExecOk(db, zSchema);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  db = openFile("close2.db");
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"b\" :p/n 2}]')");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/n ?n]]')", "{\"result\":2}");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

START_TEST(rollback_schema_and_tx) {
  sqlite3 *db = openFile("rb.db");
  tuExecOk(db, zSchema);
  /* tx ids: bootstrap 268435456, schema 268435457. */
  tuExecOk(db, "BEGIN");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:db/ident :a/x :db/valueType :db.type/long}]') ->> 'tx_id'",
                "268435458");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"x\" :a/x 7}]') ->> 'tx_id'", "268435459");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?v . :where [_ :a/x ?v]]')", "{\"result\":7}");
  tuExecOk(db, "ROLLBACK");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"y\" :a/x 8}]')",
                "ERROR: edn_t: line 1 col 15: unknown attribute :a/x");
  /* The tx counter went back with the rollback: the next tx reuses it. */
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"y\" :p/n 8}]') ->> 'tx_id'", "268435458");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?v . :where [_ :a/x ?v]]')", "{\"result\":null}");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

START_TEST(savepoint_nests_in_host_savepoint) {
  sqlite3 *db = openFile("sp.db");
  tuExecOk(db, zSchema);
  tuExecOk(db, "BEGIN");
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"k\" :p/n 1}]')");
  tuExecOk(db, "SAVEPOINT s");
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"k\" :p/n 2}]')");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/n ?n]]')", "{\"result\":2}");
  tuExecOk(db, "ROLLBACK TO s");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/n ?n]]')", "{\"result\":1}");
  tuExecOk(db, "COMMIT");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/n ?n]]')", "{\"result\":1}");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* The progress handler interrupts the host in the middle of a big edn_t. */
static int interruptNow(void *p) {
  sqlite3_interrupt((sqlite3 *)p);
  return 0;
}

START_TEST(interrupt_leaves_nothing) {
  sqlite3 *db = openFile("intr.db");
  sqlite3_str *pTx = sqlite3_str_new(NULL);
  char *zTx;
  sqlite3_stmt *pStmt = NULL;
  int rc;
  tuExecOk(db, zSchema);
  tuExecOk(db, "CREATE TABLE side(x)");
  tuExecOk(db, "BEGIN");
  tuExecOk(db, "INSERT INTO side VALUES (1)");
  sqlite3_str_appendall(pTx, "[");
  for (int i = 0; i < 2000; i++) sqlite3_str_appendf(pTx, "{:p/name \"n%d\" :p/n %d}", i, i);
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT edn_t(':main', ?1)", -1, &pStmt, NULL), SQLITE_OK);
  sqlite3_bind_text(pStmt, 1, zTx, -1, sqlite3_free);
  sqlite3_progress_handler(db, 20000, interruptNow, db);
  rc = sqlite3_step(pStmt);
  sqlite3_progress_handler(db, 0, NULL, NULL);
  sqlite3_finalize(pStmt);
  ck_assert_int_eq(rc & 0xff, SQLITE_INTERRUPT);
  /* An interrupt ends the host's transaction; nothing of the edn_t stays. */
  if (!sqlite3_get_autocommit(db)) tuExecOk(db, "ROLLBACK");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find (count ?e) . :where [?e :p/n]]')",
                /* Datomic: an aggregate over no rows is nil */ "{\"result\":null}");
  tuExpectQuery(db, "SELECT count(*) FROM side", "0");
  tuExpectQuery(db, "PRAGMA integrity_check", "ok");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  /* the first call creates the store's tables inside the statement */
  db = openFile("inswrite2.db");
  tuExecOk(db, "CREATE TABLE src(x); CREATE TABLE t(r)");
  tuExecOk(db, "INSERT INTO src VALUES ('[{:db/ident :q/n :db/valueType :db.type/long}]')");
  tuExecOk(db, "BEGIN");
  tuExecOk(db, "INSERT INTO t SELECT edn_t(':main', x) FROM src");
  tuExecOk(db, "INSERT INTO t VALUES (edn_t(':main', '[{:q/n 1}]'))");
  tuExecOk(db, "ROLLBACK");
  tuExpectQuery(db, "SELECT count(*) FROM sqlite_master WHERE name = 'datoms'", "0");
  tuExecOk(db, "INSERT INTO t SELECT edn_t(':main', x) FROM src");
  tuExecOk(db, "INSERT INTO t VALUES (edn_t(':main', '[{:q/n 1}]'))");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :q/n ?n]]')", "{\"result\":1}");
  tuExpectQuery(db, "PRAGMA integrity_check", "ok");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* sqlite3_interrupt from another thread, after a delay: how Python's
** con.interrupt() from a timer and Go's context cancel reach a call. */
typedef struct IntrLater { sqlite3 *db; long ms; } IntrLater;
static void *interruptLater(void *p) {
  IntrLater *pL = p;
  struct timespec ts = {pL->ms / 1000, (pL->ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  sqlite3_interrupt(pL->db);
  return NULL;
}

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A query whose compile alone takes seconds: a chain of n functions
** written last-first, so each pass over the clauses finds one ready. */
static char *slowCompileQuery(int n) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  sqlite3_str_appendall(p, "[:find ?x0 :where [?e :p/n ?x0]");
  for (int i = n - 1; i >= 0; i--) sqlite3_str_appendf(p, " [(+ ?x%d 1) ?x%d]", i, i + 1);
  sqlite3_str_appendall(p, "]");
  return sqlite3_str_finish(p);
}

/* The compile polls the host's interrupt: a query that compiles for
** seconds stops within a moment of sqlite3_interrupt, with the same
** error as an interrupt while it runs, on a file store and on a host
** store, in both forms; the connection then works. */
START_TEST(interrupt_stops_compile) {
  static const char *azSql[] = {"SELECT edn_q(?1, ?2)", "SELECT count(*) FROM edn_q(?1, ?2)"};
  sqlite3 *db = openFile("intrc.db");
  char *zQuery = slowCompileQuery(20000);
  const char *azStore[2];
  tuExecOk(db, zSchema);
  azStore[0] = ":main";
  azStore[1] = tuTempPath("intrc-file.db");
  {
    char *z = tuQuery(db, "SELECT edn_t(?1, ?2) IS NOT NULL", azStore[1],
                      "[{:db/ident :p/n :db/valueType :db.type/long}]");
    ck_assert_str_eq(z, "1");
    free(z);
  }
  for (int iStore = 0; iStore < 2; iStore++) {
    for (int iForm = 0; iForm < 2; iForm++) {
      sqlite3_stmt *pStmt = NULL;
      pthread_t th;
      IntrLater later = {db, 200};
      double t0, dt;
      int rc;
      char *z;
      ck_assert_int_eq(sqlite3_prepare_v2(db, azSql[iForm], -1, &pStmt, NULL), SQLITE_OK);
      sqlite3_bind_text(pStmt, 1, azStore[iStore], -1, SQLITE_STATIC);
      sqlite3_bind_text(pStmt, 2, zQuery, -1, SQLITE_STATIC);
      ck_assert_int_eq(pthread_create(&th, NULL, interruptLater, &later), 0);
      t0 = nowSec();
      rc = sqlite3_step(pStmt);
      dt = nowSec() - t0;
      pthread_join(th, NULL);
      ck_assert_msg((rc & 0xff) == SQLITE_INTERRUPT, "%s on %s: rc %d %s", azSql[iForm], azStore[iStore],
                    rc, sqlite3_errmsg(db));
      ck_assert_str_eq(sqlite3_errmsg(db), "edn_q: interrupted");
      /* Uninterrupted, this compile takes several seconds. */
      ck_assert_msg(dt < 2.5, "%s on %s: stopped after %.2f s", azSql[iForm], azStore[iStore], dt);
      sqlite3_finalize(pStmt);
      z = tuQuery(db, "SELECT edn_q(?1, '[:find ?n . :where [_ :p/n ?n]]')", azStore[iStore], NULL);
      ck_assert_str_eq(z, "{\"result\":null}");
      free(z);
    }
  }
  sqlite3_free(zQuery);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* Six rules, each with a base definition and one that calls the next rule
** twice, the first argument required ([?a]): such rules are inlined, and
** every call copies the rows before it into each definition it calls, so
** the SQL grows doubly exponentially with the levels (before the compiler
** counted it: 40 s, then out of memory). Without the required argument
** each rule is computed once as a CTE of its own. */
static char *fanRules(int n) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  sqlite3_str_appendall(p, "[");
  for (int i = 0; i < n; i++) {
    sqlite3_str_appendf(p, "[(r%d [?a] ?b) [?a :n/next ?b]]", i);
    if (i + 1 < n) sqlite3_str_appendf(p, " [(r%d [?a] ?b) (r%d ?a ?x) (r%d ?x ?b)]", i, i + 1, i + 1);
  }
  sqlite3_str_appendall(p, "]");
  return sqlite3_str_finish(p);
}

/* A legal rule set whose compile takes seconds: rule r0 of nDef definitions,
** each a chain of nPat patterns (SQL of a few MB, within every limit). */
static char *wideRules(int nDef, int nPat) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  sqlite3_str_appendall(p, "[");
  for (int i = 0; i < nDef; i++) {
    sqlite3_str_appendall(p, "[(r0 ?a ?b) [?a :n/next ?x0]");
    for (int j = 1; j + 1 < nPat; j++) sqlite3_str_appendf(p, " [?x%d :n/next ?x%d]", j - 1, j);
    sqlite3_str_appendf(p, " [?x%d :n/next ?b]]", nPat - 2);
  }
  sqlite3_str_appendall(p, "]");
  return sqlite3_str_finish(p);
}

/* The six-level set of fanRules is refused at once, before the compiler
** builds what it would expand to: the error names the call and the limit,
** and the compile's allocations stay bounded (SQLite's memory high-water
** mark, a check that does not depend on the machine's speed). */
START_TEST(rule_expansion_refused_fast) {
  static const char *azSql[] = {"SELECT edn_q(?1, ?2, ?3)", "SELECT count(*) FROM edn_q(?1, ?2, ?3)"};
  sqlite3 *db = openFile("expand.db");
  const char *zStore = tuTempPath("expand-file.db");
  char *zRules = fanRules(6), *zOpts, *z;
  z = tuQuery(db, "SELECT edn_t(?1, ?2) IS NOT NULL", zStore,
              "[{:db/ident :n/next :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}]");
  ck_assert_str_eq(z, "1");
  free(z);
  zOpts = sqlite3_mprintf("{\"inputs\": [{\"edn\": \"%s\"}, 1]}", zRules);
  for (int iForm = 0; iForm < 2; iForm++) {
    sqlite3_stmt *pStmt = NULL;
    sqlite3_int64 nBefore = sqlite3_memory_used(), nPeak;
    ck_assert_int_eq(sqlite3_prepare_v2(db, azSql[iForm], -1, &pStmt, NULL), SQLITE_OK);
    sqlite3_bind_text(pStmt, 1, zStore, -1, SQLITE_STATIC);
    sqlite3_bind_text(pStmt, 2, "[:find ?b :in $ % ?a :where (r0 ?a ?b)]", -1, SQLITE_STATIC);
    sqlite3_bind_text(pStmt, 3, zOpts, -1, SQLITE_STATIC);
    sqlite3_memory_highwater(1);
    ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ERROR);
    nPeak = sqlite3_memory_highwater(0) - nBefore;
    ck_assert_str_eq(sqlite3_errmsg(db),
                     "edn_q: line 1 col 29: rule r0 expands to more than 16777216 bytes of SQL, the most "
                     "the compiler builds for one statement (SQLite's limit: 1000000000 bytes, and its "
                     "parser stack); its calls copy the rows before them into every definition of the "
                     "rules they call");
    ck_assert_msg(nPeak < ((sqlite3_int64)256 << 20), "%s: %lld bytes at the peak", azSql[iForm],
                  (long long)nPeak);
    sqlite3_finalize(pStmt);
  }
  sqlite3_free(zOpts);
  sqlite3_free(zRules);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A rule set whose compile takes seconds (wideRules: 400 definitions of 60
** patterns). The compile polls the host's interrupt, so sqlite3_interrupt
** stops it within a moment, in both forms, on a file store; the connection
** then works. The interrupt comes 20 ms in, inside our compile: most of the
** uninterrupted call's time is SQLite's own planning of the compiled SQL,
** which polls no interrupt, so a later one (on a loaded machine, where the
** compile passes sooner in wall time than the interrupting thread wakes)
** would time the planner instead. */
START_TEST(interrupt_stops_rule_compile) {
  static const char *azSql[] = {"SELECT edn_q(?1, ?2, ?3)", "SELECT count(*) FROM edn_q(?1, ?2, ?3)"};
  sqlite3 *db = openFile("intrr.db");
  const char *zStore = tuTempPath("intrr-file.db");
  char *zRules = wideRules(400, 60), *zOpts, *z;
  z = tuQuery(db, "SELECT edn_t(?1, ?2) IS NOT NULL", zStore,
              "[{:db/ident :n/next :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}]");
  ck_assert_str_eq(z, "1");
  free(z);
  ck_assert_ptr_null(strchr(zRules, '"'));      /* a JSON string as it is */
  zOpts = sqlite3_mprintf("{\"inputs\": [{\"edn\": \"%s\"}, 1]}", zRules);
  for (int iForm = 0; iForm < 2; iForm++) {
    sqlite3_stmt *pStmt = NULL;
    pthread_t th;
    IntrLater later = {db, 20};
    double t0, dt;
    int rc;
    ck_assert_int_eq(sqlite3_prepare_v2(db, azSql[iForm], -1, &pStmt, NULL), SQLITE_OK);
    sqlite3_bind_text(pStmt, 1, zStore, -1, SQLITE_STATIC);
    sqlite3_bind_text(pStmt, 2, "[:find ?b :in $ % ?a :where (r0 ?a ?b)]", -1, SQLITE_STATIC);
    sqlite3_bind_text(pStmt, 3, zOpts, -1, SQLITE_STATIC);
    ck_assert_int_eq(pthread_create(&th, NULL, interruptLater, &later), 0);
    t0 = nowSec();
    rc = sqlite3_step(pStmt);
    dt = nowSec() - t0;
    pthread_join(th, NULL);
    ck_assert_msg((rc & 0xff) == SQLITE_INTERRUPT, "%s: rc %d %s", azSql[iForm], rc, sqlite3_errmsg(db));
    ck_assert_str_eq(sqlite3_errmsg(db), "edn_q: interrupted");
    ck_assert_msg(dt < 5.0, "%s: stopped after %.2f s", azSql[iForm], dt);
    sqlite3_finalize(pStmt);
    z = tuQuery(db, "SELECT edn_q(?1, '[:find ?n . :where [_ :n/next ?n]]')", zStore, NULL);
    ck_assert_str_eq(z, "{\"result\":null}");
    free(z);
  }
  sqlite3_free(zOpts);
  sqlite3_free(zRules);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* edn_t inside a statement that writes (INSERT ... SELECT edn_t(...)):
** SQLite opens no savepoint while such a statement runs, so the calls'
** writes join that statement's and stand or fall with it, as its own rows
** do (SQL's statement atomicity); the host's ROLLBACK removes them all.
** Expected answers worked out by hand from SPEC.md §3a. */
START_TEST(edn_t_inside_writing_statement) {
  static const TuStep aStep[] = {
    {zSchema, NULL},
    {"CREATE TABLE src(x); CREATE TABLE t(r)", NULL},
    {"INSERT INTO src VALUES ('[{:p/name \"a\" :p/n 1}]'), ('[{:p/name \"b\" :p/n 2}]')", NULL},
    /* autocommit: every call lands, one tx each */
    {"INSERT INTO t SELECT edn_t(':main', x) FROM src", NULL},
    {"SELECT count(DISTINCT r ->> 'tx_id') FROM t", "2"},
    {"SELECT edn_q(':main', '[:find (sum ?n) . :where [_ :p/n ?n]]')", "{\"result\":3}"},
    /* inside BEGIN: the host's ROLLBACK removes the rows and the datoms */
    {"UPDATE src SET x = replace(replace(x, '\"a\"', '\"c\"'), '\"b\"', '\"d\"')", NULL},
    {"BEGIN", NULL},
    {"INSERT INTO t SELECT edn_t(':main', x) FROM src", NULL},
    {"SELECT edn_q(':main', '[:find (count ?e) . :where [?e :p/n]]')", "{\"result\":4}"},
    {"ROLLBACK", NULL},
    {"SELECT count(*) FROM t", "2"},
    {"SELECT edn_q(':main', '[:find (count ?e) . :where [?e :p/n]]')", "{\"result\":2}"},
    /* ... and COMMIT keeps them; UPDATE and single-row INSERT write too */
    {"BEGIN", NULL},
    {"INSERT INTO t SELECT edn_t(':main', x) FROM src", NULL},
    {"INSERT INTO t VALUES (edn_t(':main', '[{:p/name \"e\" :p/n 5}]'))", NULL},
    {"UPDATE t SET r = edn_t(':main', '[{:p/name \"f\" :p/n 6}]') WHERE rowid = 1", NULL},
    {"COMMIT", NULL},
    {"SELECT count(*) FROM t", "5"},
    {"SELECT edn_q(':main', '[:find (sum ?n) . :with ?e :where [?e :p/n ?n]]')", "{\"result\":17}"},
    /* A failed call fails the statement: none of its rows nor datoms stay,
    ** in autocommit and inside BEGIN, where the earlier statement stays. */
    {"DELETE FROM src", NULL},
    {"INSERT INTO src VALUES ('[{:p/name \"g\" :p/n 7}]'), ('[{:p/name \"h\" :p/bad 8}]')", NULL},
    {"INSERT INTO t SELECT edn_t(':main', x) FROM src RETURNING 1",
     "ERROR: edn_t: line 1 col 15: unknown attribute :p/bad"},
    {"SELECT count(*) FROM t", "5"},
    {"SELECT edn_q(':main', '[:find ?n . :where [_ :p/name \"g\"] [_ :p/n ?n]]') ->> 'result'",
     "NULL"},
    {"BEGIN", NULL},
    {"INSERT INTO t VALUES ('before')", NULL},
    {"INSERT INTO t SELECT edn_t(':main', x) FROM src RETURNING 1",
     "ERROR: edn_t: line 1 col 15: unknown attribute :p/bad"},
    {"COMMIT", NULL},
    {"SELECT count(*) FROM t", "6"},
    {"SELECT edn_q(':main', '[:find (count ?e) . :where [?e :p/name \"g\"]]')", "{\"result\":null}"},
  };
  sqlite3 *db = openFile("inswrite.db");
  TU_RUN_STEPS(db, aStep);
  /* a unique value already taken, found while writing: the call's own
  ** datoms go too, in a multi-row and in a single-row statement */
  tuExecOk(db, "SELECT edn_t(':main', '[{:db/ident :p/u :db/valueType :db.type/long"
               " :db/unique :db.unique/value}]')");
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"u\" :p/u 1}]')");
  tuExecOk(db, "DELETE FROM src");
  tuExecOk(db, "INSERT INTO src VALUES ('[{:p/name \"i\" :p/n 9}]'),"
               " ('[{:p/name \"j\" :p/n 10} {:p/name \"j2\" :p/u 1}]')");
  for (int iForm = 0; iForm < 2; iForm++) {
    char *z;
    tuExecOk(db, "BEGIN");
    tuExecOk(db, "INSERT INTO t VALUES ('before2')");
    z = tuQuery(db, iForm ? "INSERT INTO t VALUES (edn_t(':main', (SELECT x FROM src WHERE rowid = 2)))"
                          : "INSERT INTO t SELECT edn_t(':main', x) FROM src", NULL, NULL);
    /* SQLite opens no savepoint there, so the call's datoms written
    ** before the conflict go with the host's whole transaction */
    static const char zWant[] = "ERROR: edn_t: line 1 col 38: unique value conflict: :p/u 1 is already held";
    ck_assert_msg(strncmp(z, zWant, strlen(zWant)) == 0
                  && strstr(z, "; inside a statement that writes, a failed edn_t rolls the host's transaction"
                               " back") != NULL, "got %s", z);
    free(z);
    ck_assert_int_eq(sqlite3_get_autocommit(db), 1);
    tuExpectQuery(db, "SELECT count(*) FROM t WHERE r = 'before2'", "0");
    tuExpectQuery(db, "SELECT edn_q(':main', '[:find (count ?e) . :where (or [?e :p/name \"i\"]"
                      " [?e :p/name \"j\"] [?e :p/name \"j2\"])]')", "{\"result\":null}");
    tuExpectQuery(db, "SELECT edn_q(':main', '[:find (sum ?n) . :with ?e :where [?e :p/n ?n]]')",
                  "{\"result\":17}");
  }
  /* the next call works and gets the next tx id */
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"k\" :p/n 12}]') IS NOT NULL", "1");
  tuExpectQuery(db, "PRAGMA integrity_check", "ok");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A host function: the length of its text argument. */
static void hostLen(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  sqlite3_result_int(pCtx, sqlite3_value_bytes(argv[0]));
}

/* The host's functions in a query before the first edn_t, when the host
** database holds no store yet and reads see an empty store (SPEC.md §3a):
** they are callable as after it. Expected answers worked out by hand. */
START_TEST(host_function_before_first_edn_t) {
  sqlite3 *db = openFile("hostfn.db"), *db2;
  ck_assert_int_eq(sqlite3_create_function(db, "my_len", 1, SQLITE_UTF8, NULL, hostLen, NULL, NULL),
                   SQLITE_OK);
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?s . :where [(ground \"abcd\") ?n] [(my_len ?n) ?s]]')",
                "{\"result\":4}");
  tuExpectQuery(db, "SELECT c0 FROM edn_q(':main', '[:find ?s :where [(ground \"abc\") ?n] [(my_len ?n) ?s]]')",
                "3");
  /* as a predicate, over the bootstrap's idents */
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?i . :where [?e :db/ident ?i] [(= ?i :db/ident)]"
                    " [(my_len \"x\")]]')", "{\"result\":\":db/ident\"}");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?s . :where [(ground \"a\") ?n] [(nope ?n) ?s]]')",
                "ERROR: edn_q: line 1 col 38: unknown function nope");
  /* nothing was written */
  tuExpectQuery(db, "SELECT count(*) FROM sqlite_master", "0");
  /* another connection without the function: unknown there, though the
  ** same query text ran on the same empty store */
  db2 = openFile("hostfn2.db");
  tuExpectQuery(db2, "SELECT edn_q(':main', '[:find ?s . :where [(ground \"abcd\") ?n] [(my_len ?n) ?s]]')",
                "ERROR: edn_q: line 1 col 41: unknown function my_len");
  ck_assert_int_eq(sqlite3_close(db2), SQLITE_OK);
  /* and after the first edn_t, as before */
  tuExecOk(db, zSchema);
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"abcde\"}]')");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?s . :where [_ :p/name ?n] [(my_len ?n) ?s]]')",
                "{\"result\":5}");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* "db_path is the host's own database" (vtab/call.c) is remembered per
** host connection for configPathCheckMs(), as the store cache remembers a
** path; these are the cases a remembered verdict could get wrong, each
** worked out from SPEC.md §4 (a file moved over a path is a new file): the
** host's own file moved over a store's path is refused by the next write
** at once, and by the next read once the bound has passed (0: at once);
** another connection's verdict for the same path is not this one's; an
** ATTACH or DETACH on the host does not change which file is its own. */
static void expectOwn(sqlite3 *db, const char *zPath, int bOwn, int bWrite) {
  char zWant[700];
  char *z = tuQuery(db, bWrite ? "SELECT edn_t(?1, '[]') IS NOT NULL"
                               : "SELECT count(*) >= 0"
                                 " FROM edn_q(?1, '[:find ?e :where [?e :db/ident]]')",
                    zPath, NULL);
  if (bOwn) {
    snprintf(zWant, sizeof zWant, "ERROR: %s: db_path %s is the host's own database",
             bWrite ? "edn_t" : "edn_q", zPath);
  } else {
    snprintf(zWant, sizeof zWant, "1");
  }
  ck_assert_msg(strcmp(z, zWant) == 0, "%s on %s\n got:  %s\n want: %s", bWrite ? "write" : "read",
                zPath, z, zWant);
  free(z);
}

START_TEST(own_db_verdict_remembered) {
  char zStore[512], zOwn[512], zOther[512], zAttach[600];
  sqlite3 *host, *host2;
  int nOld = configSetPathCheckMs(60000);
  snprintf(zStore, sizeof zStore, "%s", tuTempPath("own-store.db"));
  snprintf(zOwn, sizeof zOwn, "%s", tuTempPath("own-host.db"));
  snprintf(zOther, sizeof zOther, "%s", tuTempPath("own-other.db"));
  host = openFile("own-host.db");
  tuExecOk(host, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
  expectOwn(host, zStore, 0, 1);
  expectOwn(host, zStore, 0, 0);
  expectOwn(host, zOwn, 1, 0);
  expectOwn(host, zOwn, 1, 1);

  /* Another connection whose own file is the store: its verdict is its own. */
  host2 = openFile("own-store.db");
  expectOwn(host2, zStore, 1, 0);
  sqlite3_close(host2);

  /* ATTACH and DETACH leave main alone. */
  snprintf(zAttach, sizeof zAttach, "ATTACH '%s' AS other", zOther);
  tuExecOk(host, zAttach);
  expectOwn(host, zOwn, 1, 0);
  expectOwn(host, zStore, 0, 0);
  tuExecOk(host, "DETACH other");
  expectOwn(host, zOwn, 1, 0);
  expectOwn(host, zStore, 0, 0);

  /* The host's own file moved over the store's path: the path now names
  ** the host's file (same inode, still open by the host). */
  ck_assert_int_eq(rename(zOwn, zStore), 0);
  expectOwn(host, zStore, 1, 1);     /* a write checks every call */
  configSetPathCheckMs(0);
  expectOwn(host, zStore, 1, 0);     /* a read once the bound has passed */
  tuExpectQuery(host, "SELECT x FROM t", "1");
  sqlite3_close(host);

  /* A new connection (maybe at the old one's address, which remembered
  ** zStore as not its own) whose own file is the one now at zStore. */
  configSetPathCheckMs(60000);
  host = openFile("own-store.db");
  expectOwn(host, zStore, 1, 0);
  sqlite3_close(host);
  configSetPathCheckMs(nOld);
}
END_TEST

/* edn_pull reads one snapshot although it runs a statement per entity and
** may start without a read transaction (storeReaderLazy): a commit by
** another connection between its statements (here, right before the
** nested entity's read) gives the state before or the state after, never
** the parent from one and the child from the other (SPEC.md §4: a call sees
** one database value). The commit changes both names at once. */
static sqlite3 *gPullRaw;
static int gPullArmed, gPullSeen;

static int pullTrace(unsigned eType, void *pCtx, void *pStmt, void *pX) {
  sqlite3_stmt *p = pStmt;
  const char *zSql = sqlite3_sql(p);
  int bPar = 0;
  (void)pCtx; (void)pX;
  if (!gPullArmed || eType != SQLITE_TRACE_ROW || zSql == NULL
      || strstr(zSql, "FROM datoms WHERE e = ?1") == NULL) {
    return 0;
  }
  for (int i = 0; i < sqlite3_column_count(p) && !bPar; i++) {
    bPar = sqlite3_column_type(p, i) == SQLITE_TEXT
           && strcmp((const char *)sqlite3_column_text(p, i), "par") == 0;
  }
  if (!bPar) return 0;
  gPullArmed = 0;
  gPullSeen = 1;
  ck_assert_int_eq(sqlite3_exec(gPullRaw, "BEGIN IMMEDIATE; UPDATE datoms SET v = v || '2'"
                                " WHERE v IN ('par', 'kid'); COMMIT", NULL, NULL, NULL), SQLITE_OK);
  return 0;
}

static int pullConnHook(sqlite3 *db) {
  int rc = qfRegister(db);
  if (rc == SQLITE_OK) intrInstall(db);
  sqlite3_trace_v2(db, SQLITE_TRACE_ROW, pullTrace, NULL);
  return rc;
}

START_TEST(pull_one_snapshot_under_commit) {
  char zStore[512];
  sqlite3 *host = tuOpenHost();
  const char *azPat[] = { "[* {:p/friend [*]}]", "[:p/name {:p/friend [:p/name]}]" };
  snprintf(zStore, sizeof zStore, "%s", tuTempPath("pull-snap.db"));
  storeSetConnHook(pullConnHook);
  ck_assert_int_eq(sqlite3_open(zStore, &gPullRaw), SQLITE_OK);
  {
    char *z = tuQuery(host, "SELECT edn_t(?1, '[{:db/ident :p/name :db/valueType :db.type/string"
                      " :db/cardinality :db.cardinality/one}"
                      " {:db/ident :p/friend :db/valueType :db.type/ref"
                      " :db/cardinality :db.cardinality/one}]')"
                      " IS NOT NULL", zStore, NULL);
    ck_assert_str_eq(z, "1");
    free(z);
  }
  for (int i = 0; i < 2; i++) {
    char *z, *zEnt;
    ck_assert_int_eq(sqlite3_exec(gPullRaw, "BEGIN IMMEDIATE; UPDATE datoms SET v = substr(v, 1, 3)"
                                  " WHERE v IN ('par2', 'kid2'); COMMIT", NULL, NULL, NULL),
                     SQLITE_OK);
    if (i == 0) {
      z = tuQuery(host, "SELECT edn_t(?1, '[{:db/id \"p\" :p/name \"par\" :p/friend \"k\"}"
                  " {:db/id \"k\" :p/name \"kid\"}]') IS NOT NULL", zStore, NULL);
      ck_assert_str_eq(z, "1");
      free(z);
    }
    zEnt = tuQuery(host, "SELECT c0 FROM edn_q(?1, '[:find ?e :where [?e :p/name \"par\"]]')",
                   zStore, NULL);
    /* A first pull warms the reader (its check sees the last commit). */
    free(tuQuery(host, "SELECT edn_pull(?1, '[*]', CAST(?2 AS INTEGER))", zStore, zEnt));
    gPullSeen = 0;
    gPullArmed = 1;
    z = tuQuery(host, i == 0
                ? "SELECT edn_pull(?1, '[* {:p/friend [*]}]', CAST(?2 AS INTEGER))"
                : "SELECT edn_pull(?1, '[:p/name {:p/friend [:p/name]}]', CAST(?2 AS INTEGER))",
                zStore, zEnt);
    ck_assert_msg(gPullSeen, "the commit did not run during the pull");
    ck_assert_msg((strstr(z, "\"par\"") && strstr(z, "\"kid\""))
                  || (strstr(z, "\"par2\"") && strstr(z, "\"kid2\"")),
                  "pattern %s: %s", azPat[i], z);
    free(z);
    free(zEnt);
  }
  gPullArmed = 0;
  sqlite3_close(gPullRaw);
  sqlite3_close(host);
}
END_TEST

/* THE READ STAMP (store_host.c): a read whose state a read validated last
** skips the revalidation while the store database's data version, file and
** schema_version, and temp's version, are unchanged. Each case below
** changes what a stale schema would get wrong, a rename (the old name
** then matches nothing, the new one is unknown), through the scalar form,
** the table form and edn_pull, each asked twice before the change. */
static const char zOneN[] = "SELECT edn_q(':main', '[:find ?n . :where [_ :p/n ?n]]')";
static const char zOneNTable[] = "SELECT c0 FROM edn_q(':main', '[:find ?n :where [_ :p/n ?n]]')";
static const char zOneNPull[] =
  "SELECT edn_pull(':main', '[:p/n]', '[:p/name \"a\"]') ->> '$.\":p/n\"'";

static void readTwice(sqlite3 *db, const char *zScalar, const char *zTable, const char *zPull) {
  for (int i = 0; i < 2; i++) {
    tuExpectQuery(db, zOneN, zScalar);
    tuExpectQuery(db, zOneNTable, zTable);
    tuExpectQuery(db, zOneNPull, zPull);
  }
}

/* Another connection's commits (the pager learns of them when a read
** transaction begins), in both journal modes: a rename of :p/n, then back. */
START_TEST(read_stamp_sees_other_connection) {
  const char *azMode[] = { "PRAGMA journal_mode=DELETE", "PRAGMA journal_mode=WAL" };
  for (int m = 0; m < 2; m++) {
    char zName[32];
    sqlite3 *a, *b;
    snprintf(zName, sizeof zName, "stamp-other%d.db", m);
    a = openFile(zName);
    tuExecOk(a, azMode[m]);
    tuExecOk(a, zSchema);
    tuExecOk(a, "SELECT edn_t(':main', '[{:p/name \"a\" :p/n 1}]')");
    b = openFile(zName);
    readTwice(a, "{\"result\":1}", "1", "1");
    tuExecOk(b, "SELECT edn_t(':main', '[{:db/id :p/n :db/ident :p/m}]')");
    tuExpectQuery(a, zOneN, "{\"result\":null}");
    tuExpectQuery(a, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/m ?n]]')", "{\"result\":1}");
    tuExecOk(b, "SELECT edn_t(':main', '[{:db/id :p/m :db/ident :p/n}]')");
    tuExpectQuery(a, zOneNTable, "1");
    tuExecOk(b, "SELECT edn_t(':main', '[{:db/id :p/n :db/ident :p/m}]')");
    tuExpectQuery(a, "SELECT edn_pull(':main', '[:p/m]', '[:p/name \"a\"]') ->> '$.\":p/m\"'", "1");
    sqlite3_close(b);
    ck_assert_int_eq(sqlite3_close(a), SQLITE_OK);
  }
}
END_TEST

/* No stamp is taken inside a write transaction (its changes move no data
** version, and a rollback undoes them): reads between a rename inside
** BEGIN and its ROLLBACK, then the name from before. Also a rename rolled
** back to the host's savepoint, and a read-only BEGIN (a stamp may hold
** there: what it reads is committed). */
START_TEST(read_stamp_not_inside_write) {
  sqlite3 *db = openFile("stamp-rb.db");
  tuExecOk(db, zSchema);
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"a\" :p/n 1}]')");
  readTwice(db, "{\"result\":1}", "1", "1");
  tuExecOk(db, "BEGIN");
  readTwice(db, "{\"result\":1}", "1", "1");
  tuExecOk(db, "SELECT edn_t(':main', '[{:db/id :p/n :db/ident :p/m}]')");
  for (int i = 0; i < 2; i++) {
    tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/m ?n]]')", "{\"result\":1}");
    tuExpectQuery(db, zOneN, "{\"result\":null}");
  }
  tuExecOk(db, "ROLLBACK");
  readTwice(db, "{\"result\":1}", "1", "1");
  tuExecOk(db, "BEGIN; SAVEPOINT s");
  tuExecOk(db, "SELECT edn_t(':main', '[{:db/id :p/n :db/ident :p/m}]')");
  tuExpectQuery(db, zOneN, "{\"result\":null}");
  tuExpectQuery(db, zOneN, "{\"result\":null}");
  tuExecOk(db, "ROLLBACK TO s");
  tuExpectQuery(db, zOneNPull, "1");
  readTwice(db, "{\"result\":1}", "1", "1");
  tuExecOk(db, "COMMIT");
  /* The host's own raw write inside BEGIN (a new idents row, which the
  ** signature sees), then its rollback. */
  tuExecOk(db, "BEGIN; INSERT INTO idents SELECT e, a, ':p/m', value_type_tag FROM idents"
           " WHERE v = ':p/n'; DELETE FROM idents WHERE v = ':p/n'");
  tuExpectQuery(db, zOneN, "{\"result\":null}");
  tuExpectQuery(db, zOneN, "{\"result\":null}");
  tuExecOk(db, "ROLLBACK");
  readTwice(db, "{\"result\":1}", "1", "1");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A TEMP table of the store's names, made after a stamp (temp's own data
** version), refuses the next read; dropped, reads work again. */
START_TEST(read_stamp_temp_shadow) {
  sqlite3 *db = openFile("stamp-temp.db");
  tuExecOk(db, zSchema);
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"a\" :p/n 1}]')");
  tuExecOk(db, "CREATE TEMP TABLE other(x)");
  readTwice(db, "{\"result\":1}", "1", "1");
  tuExecOk(db, "CREATE TEMP TABLE datoms(x)");
  tuExpectQuery(db, zOneN, "ERROR: edn_q: db_path ':main': database temp also holds tables named "
                "like the store's (datoms, ...), and unqualified names find those first; rename "
                "them or use ':temp'");
  tuExecOk(db, "DROP TABLE temp.datoms");
  readTwice(db, "{\"result\":1}", "1", "1");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* Another file ATTACHed under the store's name after a DETACH: two stores
** with as many transactions and idents (the same signature), whose
** attribute 65536 is :p/n in one and :q/k in the other. */
START_TEST(read_stamp_reattached_file) {
  char zA[512], zB[512], zSql[600];
  sqlite3 *db;
  const char *azStore[] = { "stamp-att-a.db", "stamp-att-b.db" };
  const char *azIdent[] = { ":p/n", ":q/k" };
  for (int i = 0; i < 2; i++) {
    char zTx[200];
    db = openFile(azStore[i]);
    snprintf(zTx, sizeof zTx, "SELECT edn_t(':main', '[{:db/ident %s :db/valueType :db.type/long}]')",
             azIdent[i]);
    tuExecOk(db, zTx);
    snprintf(zTx, sizeof zTx, "SELECT edn_t(':main', '[{%s %d}]')", azIdent[i], i + 1);
    tuExecOk(db, zTx);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  }
  snprintf(zA, sizeof zA, "%s", tuTempPath(azStore[0]));
  snprintf(zB, sizeof zB, "%s", tuTempPath(azStore[1]));
  db = tuOpenHost();
  snprintf(zSql, sizeof zSql, "ATTACH '%s' AS aux", zA);
  tuExecOk(db, zSql);
  for (int i = 0; i < 2; i++) {
    tuExpectQuery(db, "SELECT edn_q(':aux', '[:find ?n . :where [_ :p/n ?n]]')", "{\"result\":1}");
    tuExpectQuery(db, "SELECT c0 FROM edn_q(':aux', '[:find ?n :where [_ :p/n ?n]]')", "1");
  }
  snprintf(zSql, sizeof zSql, "DETACH aux; ATTACH '%s' AS aux", zB);
  tuExecOk(db, zSql);
  tuExpectQuery(db, "SELECT edn_q(':aux', '[:find ?n . :where [_ :q/k ?n]]')", "{\"result\":2}");
  tuExpectQuery(db, "SELECT edn_q(':aux', '[:find ?n . :where [_ :p/n ?n]]')", "{\"result\":null}");
  snprintf(zSql, sizeof zSql, "DETACH aux; ATTACH '%s' AS aux", zA);
  tuExecOk(db, zSql);
  tuExpectQuery(db, "SELECT c0 FROM edn_q(':aux', '[:find ?n :where [_ :p/n ?n]]')", "1");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* THE WRITE WITNESS (store_host.c): inside the host's BEGIN an edn_t that
** follows an edn_t skips the revalidation while nothing moved. A rollback
** to the host's savepoint that undid a schema change (and then one that
** undid a data tx): the next edn_t knows neither the attribute nor the tx
** id. tx ids: bootstrap 268435456, schema 268435457. */
START_TEST(write_witness_rollback_to_savepoint) {
  sqlite3 *db = openFile("wit-sp.db");
  tuExecOk(db, zSchema);
  tuExecOk(db, "BEGIN; SAVEPOINT s");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:db/ident :a/x :db/valueType :db.type/long}]') ->> 'tx_id'",
                "268435458");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"x\" :a/x 1}]') ->> 'tx_id'", "268435459");
  tuExecOk(db, "ROLLBACK TO s");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"y\" :a/x 2}]')",
                "ERROR: edn_t: line 1 col 15: unknown attribute :a/x");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"k\" :p/n 1}]') ->> 'tx_id'", "268435458");
  tuExecOk(db, "SAVEPOINT t");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"k\" :p/n 2}]') ->> 'tx_id'", "268435459");
  tuExecOk(db, "ROLLBACK TO t");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"k\" :p/n 3}]') ->> 'tx_id'", "268435459");
  tuExecOk(db, "COMMIT");
  tuExpectQuery(db, zOneN, "{\"result\":3}");
  /* A whole rollback, then a write transaction with no change before the
  ** edn_t (BEGIN IMMEDIATE): the attribute is gone with it. */
  tuExecOk(db, "BEGIN");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:db/ident :a/x :db/valueType :db.type/long}]') ->> 'tx_id'",
                "268435460");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"x\" :a/x 1}]') ->> 'tx_id'", "268435461");
  tuExecOk(db, "ROLLBACK; BEGIN IMMEDIATE");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"y\" :a/x 2}]')",
                "ERROR: edn_t: line 1 col 15: unknown attribute :a/x");
  tuExecOk(db, "COMMIT");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* The host's own raw write between two edn_t of one transaction (the
** ident renamed in the idents mirror, a delete and an insert), and a TEMP
** table of the store's names made there: the next edn_t sees each. */
START_TEST(write_witness_host_statements) {
  sqlite3 *db = openFile("wit-raw.db");
  tuExecOk(db, zSchema);
  tuExecOk(db, "BEGIN");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"a\" :p/n 1}]') ->> 'tx_id'", "268435458");
  tuExecOk(db, "INSERT INTO idents SELECT e, a, ':p/m', value_type_tag FROM idents"
           " WHERE v = ':p/n'; DELETE FROM idents WHERE v = ':p/n'");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"c\" :p/n 3}]')",
                "ERROR: edn_t: line 1 col 15: unknown attribute :p/n");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"b\" :p/m 2}]') ->> 'tx_id'", "268435459");
  tuExecOk(db, "ROLLBACK; BEGIN");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"a\" :p/n 1}]') ->> 'tx_id'", "268435458");
  tuExecOk(db, "CREATE TEMP TABLE datoms(x)");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"b\" :p/n 2}]')",
                "ERROR: edn_t: db_path ':main': database temp also holds tables named like the "
                "store's (datoms, ...), and unqualified names find those first; rename them or "
                "use ':temp'");
  tuExecOk(db, "DROP TABLE temp.datoms");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"b\" :p/n 2}]') ->> 'tx_id'", "268435459");
  tuExecOk(db, "COMMIT");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find (sum ?n) . :where [_ :p/n ?n]]')", "{\"result\":3}");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* Another connection's commit between two host transactions, a raw rename
** that moves no tx mark, and then a write transaction that changed nothing
** before its edn_t (BEGIN IMMEDIATE): the edn_t sees the rename. */
START_TEST(write_witness_other_connection) {
  sqlite3 *a = openFile("wit-other.db"), *b;
  tuExecOk(a, "PRAGMA journal_mode=WAL");
  tuExecOk(a, zSchema);
  tuExecOk(a, "BEGIN");
  tuExecOk(a, "SELECT edn_t(':main', '[{:p/name \"a\" :p/n 1}]')");
  tuExecOk(a, "COMMIT");
  b = openFile("wit-other.db");
  tuExecOk(b, "INSERT INTO idents SELECT e, a, ':p/m', value_type_tag FROM idents"
           " WHERE v = ':p/n'; DELETE FROM idents WHERE v = ':p/n'");
  tuExecOk(a, "BEGIN IMMEDIATE");
  tuExpectQuery(a, "SELECT edn_t(':main', '[{:p/name \"b\" :p/m 2}]') ->> 'tx_id'", "268435459");
  tuExecOk(a, "COMMIT");
  ck_assert_int_eq(sqlite3_close(b), SQLITE_OK);
  ck_assert_int_eq(sqlite3_close(a), SQLITE_OK);
}
END_TEST

/* A constraint of the host's own on the store's tables (here a unique
** index on one attribute's values, which our layout does not have) fails
** an edn_t whose new datoms go in through the multi-row INSERT (16 or
** more new datoms of attributes that are not :db/unique). As a failed SQL
** statement does (SPEC §3a, issue 16 item 2), it undoes only its own
** work: the host's earlier INSERT of the same transaction stays and
** COMMITs; nothing of the failed edn_t is stored. */
START_TEST(host_constraint_in_batch_insert) {
  sqlite3 *db = openFile("hostcons.db");
  sqlite3_str *pTx = sqlite3_str_new(NULL);
  char *zTx, *zSql;
  tuExecOk(db, zSchema);
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"five\" :p/n 5}]')");
  tuExecOk(db, "CREATE TABLE side(x)");
  {
    /* A partial index's WHERE takes no subquery: the entid, read first. */
    char *zA = tuQuery(db, "SELECT e FROM idents WHERE v = ':p/n'", NULL, NULL);
    zSql = sqlite3_mprintf("CREATE UNIQUE INDEX host_n ON datoms (v) WHERE a = %s", zA);
    free(zA);
    tuExecOk(db, zSql);
    sqlite3_free(zSql);
  }
  sqlite3_str_appendall(pTx, "SELECT edn_t(':main', '[");
  for (int i = 0; i < 20; i++) sqlite3_str_appendf(pTx, "{:p/n %d}", i);
  sqlite3_str_appendall(pTx, "]')");
  zTx = sqlite3_str_finish(pTx);
  tuExecOk(db, "BEGIN");
  tuExecOk(db, "INSERT INTO side VALUES (1)");
  {
    char *z = tuQuery(db, zTx, NULL, NULL);
    ck_assert_msg(strncmp(z, "ERROR: edn_t: ", 14) == 0, "got %s", z);
    free(z);
  }
  /* Still the host's transaction, its row in it. */
  ck_assert_int_eq(sqlite3_get_autocommit(db), 0);
  tuExpectQuery(db, "SELECT count(*) FROM side", "1");
  tuExecOk(db, "COMMIT");
  tuExpectQuery(db, "SELECT count(*) FROM side", "1");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find (count ?e) . :where [?e :p/n]]')", "{\"result\":1}");
  sqlite3_free(zTx);
  tuExpectQuery(db, "PRAGMA integrity_check", "ok");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* Every kind of failed edn_t inside the host's BEGIN undoes only its own
** work (issue 16 item 2, as a failed SQL statement): after each, the
** host's transaction is still open with its rows, the next edn_t works on
** the state before the failure, and COMMIT keeps all but the failed calls.
** The failures, each found at a different stage: the reader, expansion
** (unknown attribute), tempid resolution (one tempid upserted to two
** entities: Datomic's :db.error/datoms-conflict... here a resolve error),
** :db/cas, the write's checks after it has written (a card-one value
** replaced, then :db/txInstant of a past transaction refused: Datomic lets
** only the running transaction's be set), and the unique-value index. */
START_TEST(failures_inside_begin_keep_host_rows) {
  static const char *azBad[] = {
    "[{:p/name \"r\" :p/n",
    "[{:p/name \"c\" :p/bad 1}]",
    "[[:db/add \"t\" :p/name \"a\"] [:db/add \"t\" :p/name \"b\"]]",
    "[[:db/cas [:p/name \"a\"] :p/n 99 100]]",
    "[[:db/add [:p/name \"a\"] :p/n 2] [:db/add 268435457 :db/txInstant #inst \"2020-01-01\"]]",
    "[{:p/name \"d\" :p/u \"x\"} {:p/name \"e\" :p/n 4}]",
  };
  sqlite3 *db = openFile("failbegin.db");
  char zSql[160];
  tuExecOk(db, zSchema);
  tuExecOk(db, "SELECT edn_t(':main', '[{:db/ident :p/u :db/valueType :db.type/string"
               " :db/unique :db.unique/value}]')");
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"a\" :p/n 1 :p/u \"x\"} {:p/name \"b\" :p/n 10}]')");
  tuExecOk(db, "CREATE TABLE side(x)");
  tuExecOk(db, "BEGIN");
  for (int i = 0; i < (int)(sizeof azBad / sizeof azBad[0]); i++) {
    sqlite3_stmt *pStmt = NULL;
    int rc;
    sqlite3_snprintf(sizeof zSql, zSql, "INSERT INTO side VALUES (%d)", i);
    tuExecOk(db, zSql);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT edn_t(':main', ?1)", -1, &pStmt, NULL), SQLITE_OK);
    sqlite3_bind_text(pStmt, 1, azBad[i], -1, SQLITE_STATIC);
    rc = sqlite3_step(pStmt);
    ck_assert_msg(rc == SQLITE_ERROR && strncmp(sqlite3_errmsg(db), "edn_t: ", 7) == 0,
                  "case %d: rc %d %s", i, rc, sqlite3_errmsg(db));
    sqlite3_finalize(pStmt);
    ck_assert_msg(sqlite3_get_autocommit(db) == 0, "case %d ended the host's transaction", i);
    sqlite3_snprintf(sizeof zSql, zSql, "SELECT count(*) FROM side");
    {
      char *z = tuQuery(db, zSql, NULL, NULL), zWant[16];
      sqlite3_snprintf(sizeof zWant, zWant, "%d", i + 1);
      ck_assert_msg(strcmp(z, zWant) == 0, "case %d: %s host rows", i, z);
      free(z);
    }
    /* The next call sees the state before the failed one: a's :p/n is 1
    ** plus the i good calls before. */
    sqlite3_snprintf(sizeof zSql, zSql, "SELECT edn_t(':main', '[[:db/add [:p/name \"a\"] :p/n %d]]')",
                     i + 2);
    tuExecOk(db, zSql);
  }
  tuExecOk(db, "COMMIT");
  tuExpectQuery(db, "SELECT count(*) FROM side", "6");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [?e :p/name \"a\"] [?e :p/n ?n]]')",
                "{\"result\":7}");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find (count ?e) . :where [?e :p/name]]')", "{\"result\":2}");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [?e :p/name \"b\"] [?e :p/n ?n]]')",
                "{\"result\":10}");
  tuExpectQuery(db, "PRAGMA integrity_check", "ok");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* Statements the host's trace callback saw, as one string. */
typedef struct TraceLog { char az[4096]; int n; } TraceLog;
static int traceStmt(unsigned mask, void *pCtx, void *pStmt, void *pX) {
  TraceLog *pLog = pCtx;
  (void)mask;
  (void)pX;
  int n = snprintf(pLog->az + pLog->n, sizeof pLog->az - (size_t)pLog->n, "%s;",
                   sqlite3_sql((sqlite3_stmt *)pStmt));
  if (n > 0 && pLog->n + n < (int)sizeof pLog->az) pLog->n += n;
  return 0;
}

static int countProgress(void *p) {
  ++*(int *)p;
  return 0;
}

/* Short calls on a file store run nothing on the host: a host's trace
** callback (Python's set_trace_callback, Go's hooks) sees only its own
** statements around writes, whose interrupt check is the commit hook's,
** and short queries. Expected: exactly the statements the test stepped.
** A long query still reaches the host's own progress handler (README
** "Interrupts": the probe is stepped about once a millisecond of the store
** statement's work, so 65,536 rows, tens of milliseconds, step it dozens of
** times). */
START_TEST(interrupt_probe_not_traced) {
  sqlite3 *db = openFile("trace.db");
  const char *zStore = tuTempPath("trace-file.db");
  char *z;
  int nTick = 0;
  TraceLog log = {{0}, 0};
  z = tuQuery(db, "SELECT edn_t(?1, ?2) IS NOT NULL", zStore,
              "[{:db/ident :p/n :db/valueType :db.type/long}]");
  ck_assert_str_eq(z, "1");
  free(z);
  sqlite3_trace_v2(db, SQLITE_TRACE_STMT, traceStmt, &log);
  z = tuQuery(db, "SELECT edn_t(?1, ?2) IS NOT NULL", zStore, "[{:p/n 1} {:p/n 2} {:p/n 3} {:p/n 4}]");
  ck_assert_str_eq(z, "1");
  free(z);
  z = tuQuery(db, "SELECT edn_q(?1, ?2)", zStore, "[:find (sum ?a) . :where [_ :p/n ?a]]");
  ck_assert_str_eq(z, "{\"result\":10}");
  free(z);
  z = tuQuery(db, "SELECT count(*) FROM edn_q(?1, ?2)", zStore, "[:find ?a ?b :where [_ :p/n ?a] [_ :p/n ?b]]");
  ck_assert_str_eq(z, "16");
  free(z);
  sqlite3_trace_v2(db, 0, NULL, NULL);
  ck_assert_str_eq(log.az, "SELECT edn_t(?1, ?2) IS NOT NULL;SELECT edn_q(?1, ?2);"
                           "SELECT count(*) FROM edn_q(?1, ?2);");
  /* 4^8 = 65,536 rows of a cross join. */
  sqlite3_progress_handler(db, 1, countProgress, &nTick);
  z = tuQuery(db, "SELECT edn_q(?1, ?2)", zStore,
              "[:find (count ?a) . :with ?b ?c ?d ?e ?f ?g ?h :where [_ :p/n ?a] [_ :p/n ?b]"
              " [_ :p/n ?c] [_ :p/n ?d] [_ :p/n ?e] [_ :p/n ?f] [_ :p/n ?g] [_ :p/n ?h]]");
  sqlite3_progress_handler(db, 0, NULL, NULL);
  ck_assert_str_eq(z, "{\"result\":65536}");
  free(z);
  ck_assert_int_gt(nTick, 20);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* sqlite3_interrupt from another thread in the middle of a big edn_t on a
** file store: the call fails as interrupted and the store holds nothing of
** it (peer fault B32); the store then takes the same transaction. */
START_TEST(interrupt_file_store_write) {
  sqlite3 *db = openFile("intrw.db");
  const char *zStore = tuTempPath("intrw-file.db");
  sqlite3_str *pTx = sqlite3_str_new(NULL);
  sqlite3_stmt *pStmt = NULL;
  pthread_t th;
  IntrLater later = {db, 30};
  char *zTx, *z;
  int rc;
  z = tuQuery(db, "SELECT edn_t(?1, ?2) IS NOT NULL", zStore,
              "[{:db/ident :p/n :db/valueType :db.type/long}]");
  ck_assert_str_eq(z, "1");
  free(z);
  sqlite3_str_appendall(pTx, "[");
  for (int i = 0; i < 200000; i++) sqlite3_str_appendf(pTx, "{:p/n %d}", i);
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT edn_t(?1, ?2) IS NOT NULL", -1, &pStmt, NULL),
                   SQLITE_OK);
  sqlite3_bind_text(pStmt, 1, zStore, -1, SQLITE_STATIC);
  sqlite3_bind_text(pStmt, 2, zTx, -1, SQLITE_STATIC);
  ck_assert_int_eq(pthread_create(&th, NULL, interruptLater, &later), 0);
  rc = sqlite3_step(pStmt);
  pthread_join(th, NULL);
  ck_assert_int_ne(rc, SQLITE_ROW);
  ck_assert_ptr_nonnull(strstr(sqlite3_errmsg(db), "interrupt"));
  sqlite3_finalize(pStmt);
  z = tuQuery(db, "SELECT edn_q(?1, ?2)", zStore, "[:find (count ?e) . :where [?e :p/n]]");
  ck_assert_str_eq(z, "{\"result\":null}");
  free(z);
  z = tuQuery(db, "SELECT edn_t(?1, ?2) IS NOT NULL", zStore, "[{:p/n 1} {:p/n 2}]");
  ck_assert_str_eq(z, "1");
  free(z);
  z = tuQuery(db, "SELECT edn_q(?1, ?2)", zStore, "[:find (count ?e) . :where [?e :p/n]]");
  ck_assert_str_eq(z, "{\"result\":2}");
  free(z);
  sqlite3_free(zTx);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

static Suite *hostSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("host");
  TCase *tc = tcase_create("host");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, close_v1_after_host_calls);
  tcase_add_test(tc, close_v1_twice_used);
  tcase_add_test(tc, rollback_schema_and_tx);
  tcase_add_test(tc, savepoint_nests_in_host_savepoint);
  tcase_add_test(tc, interrupt_leaves_nothing);
  tcase_add_test(tc, interrupt_stops_compile);
  tcase_add_test(tc, interrupt_stops_rule_compile);
  tcase_add_test(tc, rule_expansion_refused_fast);
  tcase_add_test(tc, edn_t_inside_writing_statement);
  tcase_add_test(tc, host_function_before_first_edn_t);
  tcase_add_test(tc, own_db_verdict_remembered);
  tcase_add_test(tc, pull_one_snapshot_under_commit);
  tcase_add_test(tc, read_stamp_sees_other_connection);
  tcase_add_test(tc, read_stamp_not_inside_write);
  tcase_add_test(tc, read_stamp_temp_shadow);
  tcase_add_test(tc, read_stamp_reattached_file);
  tcase_add_test(tc, write_witness_rollback_to_savepoint);
  tcase_add_test(tc, write_witness_host_statements);
  tcase_add_test(tc, write_witness_other_connection);
  tcase_add_test(tc, host_constraint_in_batch_insert);
  tcase_add_test(tc, failures_inside_begin_keep_host_rows);
  tcase_add_test(tc, interrupt_probe_not_traced);
  tcase_add_test(tc, interrupt_file_store_write);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(hostSuite)
