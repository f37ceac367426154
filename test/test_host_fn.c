/*
** test_host_fn.c — which names a query on a host store may call as the
** host's SQL functions (query_compile_host.c): a real function registered
** on the host, never an SQL keyword whose call syntax is an operator
** (not(x) is SQL's NOT: "unknown function not", as a file store says), and
** never a function that acts outside the store (loading a library, files,
** an editor, SQL text run as SQL): an error naming it and why. Expected
** messages worked out by hand from the query texts' columns.
*/
#include <stdio.h>
#include <string.h>
#include "tuhost.h"

/* A host function that must never run: its argument back. */
static void hostSame(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  sqlite3_result_value(pCtx, argv[0]);
}

static const char *zSchema =
    "SELECT edn_t(':main', '[{:db/ident :p/name :db/valueType :db.type/string}]')";

/* A keyword is no function: not, and, or, is, in, case, cast, exists ...
** each "unknown function", a binding clause and a predicate alike, as on a
** file store; a function SQLite's parser reads as a call (like, glob) and
** a registered one run as before. */
START_TEST(host_fn_keywords) {
  sqlite3 *db = tuOpenHost();
  static const char *azKw[] = {"not", "and", "or", "is", "in", "case", "cast", "exists",
                               "between", "collate", "isnull", "notnull", "select", "current_date"};
  tuExecOk(db, zSchema);
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/name \"Ann\"} {:p/name \"Bob\"}]')");
  for (size_t i = 0; i < sizeof azKw / sizeof azKw[0]; i++) {
    char zSql[200], zWant[200];
    /* the clause's [ at col 20 */
    snprintf(zSql, sizeof zSql, "SELECT edn_q(':main', '[:find ?c . :where [(%s false) ?c]]')", azKw[i]);
    snprintf(zWant, sizeof zWant, "ERROR: edn_q: line 1 col 20: unknown function %s", azKw[i]);
    tuExpectQuery(db, zSql, zWant);
  }
  /* a predicate: [_ :p/name ?n] is cols 18-31, the clause at 33 */
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n :where [_ :p/name ?n] [(not ?n)]]')",
                "ERROR: edn_q: line 1 col 33: unknown function not");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n ?c :where [_ :p/name ?n] [(not ?n) ?c]]')",
                "ERROR: edn_q: line 1 col 36: unknown function not");
  /* like(pattern, text) and glob are SQLite's functions, called as such */
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/name ?n] [(like \"a%\" ?n)]]')",
                "{\"result\":\"Ann\"}");
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/name ?n] [(glob \"B*\" ?n)]]')",
                "{\"result\":\"Bob\"}");
  /* regexp only once registered */
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [_ :p/name ?n] [(regexp \"B\" ?n)]]')",
                "ERROR: edn_q: line 1 col 35: unknown function regexp");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A function that would let a query act outside the store is refused,
** registered or not, each naming itself and why. */
START_TEST(host_fn_outside_store) {
  sqlite3 *db = tuOpenHost();
  static const char *azFn[][2] = {
      {"load_extension", "it loads a shared library into the process"},
      {"fts3_tokenizer", "it reads and installs tokenizers by pointer"},
      {"fts5", "it hands out the FTS5 API's pointer"},
      {"readfile", "it reads a file"},
      {"writefile", "it writes a file"},
      {"edit", "it runs an editor"},
      {"eval", "it runs SQL text"},
  };
  tuExecOk(db, zSchema);
  for (size_t i = 0; i < sizeof azFn / sizeof azFn[0]; i++) {
    char zSql[200], zWant[300];
    if (strcmp(azFn[i][0], "load_extension") != 0 && strcmp(azFn[i][0], "fts3_tokenizer") != 0
        && strcmp(azFn[i][0], "fts5") != 0) {
      ck_assert_int_eq(sqlite3_create_function(db, azFn[i][0], 1, SQLITE_UTF8, NULL, hostSame, NULL, NULL),
                       SQLITE_OK);
    }
    snprintf(zSql, sizeof zSql, "SELECT edn_q(':main', '[:find ?c . :where [(%s \"x\") ?c]]')", azFn[i][0]);
    snprintf(zWant, sizeof zWant,
             "ERROR: edn_q: line 1 col 20: %s is not callable from a query: %s, outside the store",
             azFn[i][0], azFn[i][1]);
    tuExpectQuery(db, zSql, zWant);
  }
  /* the case of the name does not matter to SQL */
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?c . :where [(ReadFile \"x\") ?c]]')",
                "ERROR: edn_q: line 1 col 20: ReadFile is not callable from a query: it reads a file,"
                " outside the store");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

static Suite *hostFnSuite(void) {
  Suite *s = suite_create("host_fn");
  TCase *tc = tcase_create("host_fn");
  tuNoFsync();
  tcase_add_test(tc, host_fn_keywords);
  tcase_add_test(tc, host_fn_outside_store);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(hostFnSuite)
