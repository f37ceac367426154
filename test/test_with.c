/*
** test_with.c — opts "with" (Datomic's d/with) where data cases cannot
** reach: a with-span on a file store holds the store's write lock for at
** most MENTAT_BUSY_TIMEOUT_MS (the wait any other writer is allowed), so a
** with-query that runs longer stops with a message saying so, writes
** nothing, and leaves the store usable. The busy timeout is set through
** configSetBusyTimeoutMs (it is read once per process from the
** environment). The query's cost is by construction: a three-way cross
** join of 200 entities is 8 million rows, seconds of work against a bound
** of 50 ms (the scalar form keeps ?b and ?c with :with: patterns that
** share no variable with the result would be one existence check each);
** the same join on 3 entities finishes at once.
*/
#include "tuhost.h"
#include "config.h"

START_TEST(test_with_span_bounded) {
  sqlite3 *db = tuOpenHost();
  const char *zPath = tuTempPath("with_bound.db");
  sqlite3_str *pTx = sqlite3_str_new(NULL);
  char *zTx, *z;
  int i, msOld;
  unlink(zPath);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath,
              "[{:db/ident :p/n :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]");
  ck_assert_str_eq(z, "268435457");
  free(z);
  sqlite3_str_appendall(pTx, "[");
  for (i = 0; i < 200; i++) sqlite3_str_appendf(pTx, "{:p/n %d}", i);
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, zTx);
  ck_assert_str_eq(z, "268435458");
  free(z);
  sqlite3_free(zTx);
  msOld = configSetBusyTimeoutMs(50);
  z = tuQuery(db, "SELECT edn_q(?1, '[:find (count ?a) . :with ?b ?c :where [?a :p/n] [?b :p/n] [?c :p/n]]', ?2)",
              zPath, "{\"with\": \"[{:p/n 1000}]\"}");
  ck_assert_str_eq(z, "ERROR: edn_q: \"with\": the transaction and its query held the store's write"
                      " lock past MENTAT_BUSY_TIMEOUT_MS (50 ms), the wait other writers are allowed;"
                      " nothing was written");
  free(z);
  /* the table form too */
  z = tuQuery(db, "SELECT count(*) FROM edn_q(?1, '[:find ?a ?b ?c :where [?a :p/n] [?b :p/n]"
                  " [?c :p/n]]', ?2)", zPath, "{\"with\": \"[{:p/n 1000}]\"}");
  ck_assert_str_eq(z, "ERROR: edn_q: \"with\": the transaction and its query held the store's write"
                      " lock past MENTAT_BUSY_TIMEOUT_MS (50 ms), the wait other writers are allowed;"
                      " nothing was written");
  free(z);
  /* a short with-query is not bound by it, and the same long query
  ** without "with" holds no write lock and runs on */
  z = tuQuery(db, "SELECT edn_q(?1, '[:find (count ?e) . :where [?e :p/n]]', ?2)", zPath,
              "{\"with\": \"[{:p/n 1000}]\"}");
  ck_assert_str_eq(z, "{\"result\":201}");
  free(z);
  z = tuQuery(db, "SELECT edn_q(?1, '[:find (count ?a) . :where [?a :p/n] [?b :p/n ?x] [(< ?x 20)]"
                  " [?c :p/n ?y] [(< ?y 20)]]')", zPath, NULL);
  ck_assert_str_eq(z, "{\"result\":200}");
  free(z);
  configSetBusyTimeoutMs(msOld);
  /* nothing was written; the store takes writes */
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, '[{:p/n 5000}]'), '$.tx_id')", zPath, NULL);
  ck_assert_str_eq(z, "268435459");
  free(z);
  z = tuQuery(db, "SELECT edn_q(?1, '[:find (count ?e) . :where [?e :p/n]]')", zPath, NULL);
  ck_assert_str_eq(z, "{\"result\":201}");
  free(z);
  sqlite3_close(db);
}
END_TEST

static Suite *withSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("with");
  TCase *tc = tcase_create("span");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_with_span_bounded);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(withSuite)
