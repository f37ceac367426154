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

/* A commit by another connection (a plain one, as another process would
** make it) to the query's own store or to a source file is seen by the very
** next call with sources, in both forms: the rename of :p/nick to :p/alias
** in $'s store, then of :q/v to :q/w in the source file (each moves the tx
** mark, as any writer does). A source that is $'s own store (`{}`, a filter
** of it, or its path) reads the new schema too, not the one the call
** started with. The old names then name nothing; the new ones the data. */
#define QF_FILE(a, b) "SELECT count(*) || ':' || ifnull(group_concat(c0 || '=' || c1), '') FROM" \
  " edn_q(?1, '[:find ?n ?v :in $ $2 :where [_ " a " ?n] [$2 _ " b " ?v]]'," \
  " json_object('sources', json_object('$2', ?2)))"
#define QF_SELF(a, src) "SELECT count(*) || ':' || ifnull(group_concat(c0), '') FROM" \
  " edn_q(?1, '[:find ?n :in $ $2 :where [$2 _ " a " ?n]]'," \
  " json_object('sources', json_object('$2', " src ")))"
#define QF_SCALAR(a, b) "SELECT edn_q(?1, '[:find ?n ?v :in $ $2 :where [_ " a " ?n] [$2 _ " b \
  " ?v]]', json_object('sources', json_object('$2', ?2)))"

static void tRename(const char *zPath, const char *zFrom, const char *zTo) {
  sqlite3 *raw = NULL;
  char *zSql = sqlite3_mprintf("BEGIN; UPDATE idents SET v = %Q WHERE v = %Q;"
                               " UPDATE known_parts SET idx = idx + 1 WHERE part = ':db.part/tx';"
                               " COMMIT", zTo, zFrom);
  ck_assert_int_eq(sqlite3_open(zPath, &raw), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(raw, zSql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_free(zSql);
  sqlite3_close(raw);
}

START_TEST(test_sources_foreign_schema_change) {
  char zMain[300], zSrc[300];
  sqlite3 *db = tuOpenHost();
  snprintf(zMain, sizeof zMain, "%s", tuTempPath("fmain.db"));
  snprintf(zSrc, sizeof zSrc, "%s", tuTempPath("fsrc.db"));
  tMake(db, zMain, "[{:db/ident :p/nick :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]",
        "[{:p/nick \"z\"}]");
  tMake(db, zSrc, "[{:db/ident :q/v :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]",
        "[{:q/v 7}]");
  for (int k = 0; k < 2; k++) {   /* plans cached, the readers' versions noted */
    tExpect(db, QF_FILE(":p/nick", ":q/v"), zMain, zSrc, "1:z=7");
    tExpect(db, QF_SCALAR(":p/nick", ":q/v"), zMain, zSrc,
            "{\"columns\":[\"?n\",\"?v\"],\"results\":[[\"z\",7]],\"result\":[[\"z\",7]]}");
    tExpect(db, QF_SELF(":p/nick", "json_object()"), zMain, NULL, "1:z");
    tExpect(db, QF_SELF(":p/nick", "json_object('history', json('true'))"), zMain, NULL, "1:z");
    tExpect(db, QF_SELF(":p/nick", "?1"), zMain, NULL, "1:z");
  }
  /* Each first call after a rename is one with a source that reads $'s
  ** store: its schema must be the one the run is planned again on. */
  {
    static const char *const azSrc[] = {"json_object()", "json_object('history', json('true'))",
                                        "?1"};
    static const char *const azName[] = {":p/nick", ":p/a1", ":p/a2", ":p/alias"};
    for (int k = 0; k < 3; k++) {
      char zOld[200], zNew[200];
      tRename(zMain, azName[k], azName[k + 1]);
      snprintf(zOld, sizeof zOld, QF_SELF("%s", "%s"), azName[k], azSrc[k]);
      snprintf(zNew, sizeof zNew, QF_SELF("%s", "%s"), azName[k + 1], azSrc[k]);
      tExpect(db, zOld, zMain, NULL, "0:");
      tExpect(db, zNew, zMain, NULL, "1:z");
    }
    for (int k = 0; k < 3; k++) {
      char zNew[200];
      snprintf(zNew, sizeof zNew, QF_SELF("%s", "%s"), ":p/alias", azSrc[k]);
      tExpect(db, zNew, zMain, NULL, "1:z");
    }
  }
  tExpect(db, QF_FILE(":p/nick", ":q/v"), zMain, zSrc, "0:");
  tExpect(db, QF_SCALAR(":p/nick", ":q/v"), zMain, zSrc,
          "{\"columns\":[\"?n\",\"?v\"],\"results\":[],\"result\":[]}");
  tExpect(db, QF_FILE(":p/alias", ":q/v"), zMain, zSrc, "1:z=7");
  tRename(zSrc, ":q/v", ":q/w");
  tExpect(db, QF_FILE(":p/alias", ":q/v"), zMain, zSrc, "0:");
  tExpect(db, QF_SCALAR(":p/alias", ":q/w"), zMain, zSrc,
          "{\"columns\":[\"?n\",\"?v\"],\"results\":[[\"z\",7]],\"result\":[[\"z\",7]]}");
  tExpect(db, QF_FILE(":p/alias", ":q/w"), zMain, zSrc, "1:z=7");
  /* Both renamed at once, between two calls of one shape. */
  tRename(zMain, ":p/alias", ":p/nick");
  tRename(zSrc, ":q/w", ":q/v");
  tExpect(db, QF_FILE(":p/nick", ":q/v"), zMain, zSrc, "1:z=7");
  sqlite3_close(db);
  storeCacheClear();
}
END_TEST

static Suite *sourcesSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("sources");
  TCase *tc = tcase_create("files");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_sources_replaced_file);
  tcase_add_test(tc, test_sources_foreign_schema_change);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(sourcesSuite)
