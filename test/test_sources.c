/*
** test_sources.c — several sources (opts "sources", Datomic's `:in $ $2`)
** where a data case cannot say it: the files behind the sources change on
** disk between calls. A source file is ATTACHed to the reader connection
** and stays attached for later queries; a file moved over that path is a
** new store (SPEC.md §4), so a later query must read the new file with the
** new file's schema, never the old attachment with the new schema (whose
** attribute entids mean other attributes there). Expected answers worked
** out by hand from the data each test writes.
*/
#include <sys/stat.h>
#include "tuhost.h"
#include "store.h"
#include "config.h"

/* The first column of zSql's first row on db, ?1 = zA, ?2 = zB. */
static void tExpect(sqlite3 *db, const char *zSql, const char *zA, const char *zB,
                    const char *zWant) {
  char *z = tuQuery(db, zSql, zA, zB);
  ck_assert_msg(strcmp(z, zWant) == 0, "%s: got %s, want %s", zSql, z, zWant);
  free(z);
}

/* Writes transactions zTx1 then zTx2 to the store at zPath (the caller
** then closes the cache's copies, so the file is whole without its -wal
** and can be moved). */
static void tMake(sqlite3 *db, const char *zPath, const char *zTx1, const char *zTx2) {
  char *z = tuQuery(db, "SELECT json_type(edn_t(?1, ?2), '$.tx_id')", zPath, zTx1);
  ck_assert_str_eq(z, "integer");
  free(z);
  z = tuQuery(db, "SELECT json_type(edn_t(?1, ?2), '$.tx_id')", zPath, zTx2);
  ck_assert_str_eq(z, "integer");
  free(z);
}

#define QSRC "SELECT group_concat(c0 || '=' || c1, ',') FROM (SELECT c0, c1 FROM edn_q(?1," \
             " '[:find ?n ?v :in $ $2 :where [$2 ?e :p/name ?n] [$2 ?e :p/v ?v]]'," \
             " json_object('sources', json_object('$2', ?2))) ORDER BY 1)"

/* A source file replaced (moved over its path) between two queries: the
** second reads the new file. The old and new files give :p/name other
** entids (the new one declares another attribute first), so reading the
** old attachment with the new schema finds nothing, or the wrong
** attribute. */
START_TEST(test_sources_replaced_file) {
  char zMain[300], zSrc[300], zNew[400];
  sqlite3 *db = tuOpenHost();
  int nOld = configSetPathCheckMs(10);
  snprintf(zMain, sizeof zMain, "%s", tuTempPath("srcmain.db"));
  snprintf(zSrc, sizeof zSrc, "%s", tuTempPath("src.db"));
  snprintf(zNew, sizeof zNew, "%s", tuTempPath("src.db.new"));
  tMake(db, zMain, "[{:db/ident :m/x :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]",
        "[{:m/x 1}]");
  tMake(db, zSrc,
        "[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
        " {:db/ident :p/v :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]",
        "[{:p/name \"old\" :p/v 1}]");
  tMake(db, zNew,
        "[{:db/ident :p/pad :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
        " {:db/ident :p/v :db/valueType :db.type/long :db/cardinality :db.cardinality/one}"
        " {:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]",
        "[{:p/name \"new\" :p/v 2 :p/pad \"old\"}]");
  storeCacheClear();

  tExpect(db, QSRC, zMain, zSrc, "old=1");
  ck_assert_int_eq(rename(zNew, zSrc), 0);
  usleep(30 * 1000);            /* past the path check bound */
  tExpect(db, QSRC, zMain, zSrc, "new=2");
  /* The same text again (a cached plan) and the store itself: the same. */
  tExpect(db, QSRC, zMain, zSrc, "new=2");
  tExpect(db, "SELECT json_extract(edn_q(?1, '[:find ?n . :where [_ :p/name ?n]]'), '$.result')",
          zSrc, NULL, "new");

  /* Deleted: the query refuses it (a source must exist). */
  ck_assert_int_eq(unlink(zSrc), 0);
  usleep(30 * 1000);
  snprintf(zNew, sizeof zNew, "ERROR: edn_q: source $2: no store file at %s", zSrc);
  tExpect(db, "SELECT edn_q(?1, '[:find ?n :in $ $2 :where [$2 _ :p/name ?n]]',"
              " json_object('sources', json_object('$2', ?2)))",
          zMain, zSrc, zNew);
  configSetPathCheckMs(nOld);
  sqlite3_close(db);
  storeCacheClear();
}
END_TEST

static Suite *sourcesSuite(void) {
  Suite *s = suite_create("sources");
  TCase *tc = tcase_create("files");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_sources_replaced_file);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(sourcesSuite)
