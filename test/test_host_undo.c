/*
** test_host_undo.c — a failed edn_t on a host store (SPEC.md §3a, issue 16
** item 2) leaves the store's tables and the host's rows exactly as they
** were, inside the host's BEGIN and in autocommit, for failures found
** after the write began: a host index, host foreign keys and host
** triggers on the store's tables, and allocation failures anywhere in the
** call (the undo's own included). The state is compared as a digest of
** every row of every store table (rowids included) and of the host's own
** table, taken on the host connection inside its transaction.
**
** What SQLite decides itself is allowed, never more: an allocation failure
** inside one of the write's SQL statements, which have no statement
** journal, makes SQLite roll the host's whole transaction back (as it
** does for the host's own INSERT that runs out of memory); the state is
** then the last committed one. Never half an edn_t, never a transaction
** left open that holds part of one. Expected states are worked out by
** hand: a failure leaves the digest taken before the call.
*/
#include <string.h>
#include <stdio.h>
#include "tuhost.h"

static sqlite3 *openFile(const char *zName) {
  const char *zPath = tuTempPath(zName);
  unlink(zPath);
  return tuOpenHostAt(zPath);
}

/* Every row of the store's tables and of side, rowids included. */
static const char zDigestSql[] =
  "SELECT (SELECT count(*) || ':' || group_concat(r, ';') FROM (SELECT rowid || ',' || e || ',' || a"
  "   || ',' || quote(v) || ',' || tx || ',' || value_type_tag || index_avet || index_vaet"
  "   || index_fulltext || unique_value AS r FROM datoms ORDER BY rowid))"
  " || '|' || (SELECT count(*) || ':' || group_concat(r, ';') FROM (SELECT rowid || ',' || e || ','"
  "   || a || ',' || quote(v) || ',' || tx || ',' || added || ',' || timeline AS r"
  "   FROM timelined_transactions ORDER BY rowid))"
  " || '|' || (SELECT group_concat(part || '=' || coalesce(idx, '-'), ',') FROM"
  "   (SELECT * FROM known_parts ORDER BY part))"
  " || '|' || (SELECT count(*) || ':' || group_concat(e || '=' || quote(v), ',') FROM"
  "   (SELECT * FROM idents ORDER BY rowid))"
  " || '|' || (SELECT count(*) || ':' || group_concat(e || '/' || a || '=' || quote(v), ',') FROM"
  "   (SELECT * FROM schema ORDER BY rowid))"
  " || '|' || (SELECT count(*) || ':' || coalesce(group_concat(x, ','), '') FROM"
  "   (SELECT x FROM side ORDER BY rowid))";

static char *digest(sqlite3 *db) {
  int nSave = tuOomLeft;
  char *z;
  tuOomLeft = -1;
  z = tuQuery(db, zDigestSql, NULL, NULL);
  tuOomLeft = nSave;
  ck_assert_msg(strncmp(z, "ERROR", 5) != 0, "digest: %s", z);
  return z;
}

static const char zSchema[] =
  "[{:db/ident :p/name :db/valueType :db.type/string :db/unique :db.unique/identity}"
  " {:db/ident :p/n :db/valueType :db.type/long}"
  " {:db/ident :p/s :db/valueType :db.type/keyword :db/index true}"
  " {:db/ident :p/r :db/valueType :db.type/ref}]";
static const char zData[] =
  "[{:p/name \"a\" :p/n 1 :p/s :s/one} {:p/name \"b\" :p/n 10 :p/s :s/two}"
  " {:p/name \"c\" :p/n 100}]";

/* A host database holding a store with zSchema and zData, and side(x). */
static sqlite3 *openStore(const char *zName) {
  sqlite3 *db = openFile(zName);
  char *z;
  tuExecOk(db, "CREATE TABLE side(x)");
  z = tuQuery(db, "SELECT edn_t(':main', ?1) ->> 'tx_id'", zSchema, NULL);
  ck_assert_str_eq(z, "268435457");
  free(z);
  z = tuQuery(db, "SELECT edn_t(':main', ?1) ->> 'tx_id'", zData, NULL);
  ck_assert_str_eq(z, "268435458");
  free(z);
  return db;
}

/* The host's row of a transaction, and (bWarm) an edn_t after it: the
** next edn_t then finds the host's transaction as the last edn_t left it
** (store_host.c's write witness), where its savepoint is put off until
** its first write, or left out. */
static const char zHostRow[] = "BEGIN; INSERT INTO side VALUES ('kept')";
static const char zWarm[] = "SELECT edn_t(':main', '[[:db/add [:p/name \"b\"] :p/s :s/warm]]')";

/* Runs edn_t(':main', zTx), which must fail with an "edn_t: " error that
** holds zWant (NULL: any), in autocommit (eMode 0), inside BEGIN after a
** host row (1), or after a host row and an edn_t (2): the host's
** transaction stays open, with its rows, and the digest is the one before
** the call; a COMMIT then keeps the host row. */
static void expectUndone(sqlite3 *db, const char *zTx, const char *zWant, int eMode) {
  char *zBefore, *zAfter, *z;
  if (eMode) tuExecOk(db, zHostRow);
  if (eMode == 2) tuExecOk(db, zWarm);
  zBefore = digest(db);
  z = tuQuery(db, "SELECT edn_t(':main', ?1)", zTx, NULL);
  ck_assert_msg(strncmp(z, "ERROR: edn_t: ", 14) == 0 && (zWant == NULL || strstr(z, zWant)),
                "%s: got %s", zTx, z);
  free(z);
  ck_assert_msg(sqlite3_get_autocommit(db) == !eMode, "%s (mode %d): the host's transaction %s", zTx,
                eMode, eMode ? "ended" : "stayed open");
  zAfter = digest(db);
  ck_assert_msg(strcmp(zBefore, zAfter) == 0, "%s (mode %d) changed the state:\n  before %s\n  after  %s",
                zTx, eMode, zBefore, zAfter);
  free(zBefore);
  free(zAfter);
  if (eMode) tuExecOk(db, "COMMIT");
}

/* The next edn_t works on the state before the failed one. */
static void expectNextWorks(sqlite3 *db) {
  char *z = tuQuery(db, "SELECT edn_t(':main', '[[:db/add [:p/name \"a\"] :p/n 7]]') ->> 'tx_id'", NULL, NULL);
  ck_assert_msg(strncmp(z, "2684354", 7) == 0, "next edn_t: %s", z);
  free(z);
  tuExpectQuery(db, "SELECT edn_q(':main', '[:find ?n . :where [?e :p/name \"a\"] [?e :p/n ?n]]')",
                "{\"result\":7}");
  tuExpectQuery(db, "PRAGMA integrity_check", "ok");
}

/* A unique index of the host's on one attribute's values: the edn_t's
** first writes (the old value's retraction and its log row, the other
** datoms) are done when the insert of the new value hits it, in the
** single-row path (few datoms) and after a multi-row batch (20 datoms). */
START_TEST(host_index_after_first_write) {
  for (int bBegin = 0; bBegin < 3; bBegin++) {
    sqlite3 *db = openStore("undo-idx.db");
    char *zA = tuQuery(db, "SELECT e FROM idents WHERE v = ':p/n'", NULL, NULL), zSql[160];
    sqlite3_str *pTx = sqlite3_str_new(NULL);
    char *zBatch;
    sqlite3_snprintf(sizeof zSql, zSql, "CREATE UNIQUE INDEX host_n ON datoms (v) WHERE a = %s", zA);
    free(zA);
    tuExecOk(db, zSql);
    expectUndone(db, "[[:db/add [:p/name \"a\"] :p/s :s/three] [:db/add [:p/name \"a\"] :p/n 10]]",
                 "UNIQUE constraint failed", bBegin);
    sqlite3_str_appendall(pTx, "[[:db/add [:p/name \"b\"] :p/n 11]");
    for (int i = 0; i < 19; i++) sqlite3_str_appendf(pTx, " {:p/s :s/x%d}", i);
    sqlite3_str_appendall(pTx, " [:db/add [:p/name \"c\"] :p/n 1]]");
    zBatch = sqlite3_str_finish(pTx);
    expectUndone(db, zBatch, "UNIQUE constraint failed", bBegin);
    sqlite3_free(zBatch);
    expectNextWorks(db);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  }
}
END_TEST

/* The host's foreign keys on the store's tables, enforced: a host row
** that refers to a datom (by the unique EAVT columns) makes the retraction
** of that datom fail after the edn_t's log row of it is written; one that
** refers to a host table from the log makes the log insert fail after the
** datoms. */
START_TEST(host_foreign_keys_after_first_write) {
  for (int bBegin = 0; bBegin < 3; bBegin++) {
    sqlite3 *db = openStore("undo-fk.db");
    tuExecOk(db, "PRAGMA foreign_keys=ON");
    tuExecOk(db, "CREATE TABLE pin(e, a, t, v, FOREIGN KEY (e, a, t, v) REFERENCES"
                 " datoms (e, a, value_type_tag, v))");
    tuExecOk(db, "INSERT INTO pin SELECT e, a, value_type_tag, v FROM datoms WHERE v = 10");
    expectUndone(db, "[[:db/add [:p/name \"c\"] :p/n 101] [:db/add [:p/name \"b\"] :p/n 11]]",
                 "FOREIGN KEY constraint failed", bBegin);
    expectUndone(db, "[[:db/retract [:p/name \"b\"] :p/n 10] {:p/name \"d\" :p/n 4}]",
                 "FOREIGN KEY constraint failed", bBegin);
    expectNextWorks(db);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  }
}
END_TEST

/* Host triggers on the store's tables: one that writes the host's own
** rows for each new datom (its rows go with the failed edn_t), one that
** raises an error at the log row of a given value, after datoms and other
** log rows were written, and a TEMP trigger of the connection on the
** table in main. */
START_TEST(host_triggers_after_first_write) {
  for (int bBegin = 0; bBegin < 3; bBegin++) {
    sqlite3 *db = openStore("undo-trig.db");
    tuExecOk(db, "CREATE TRIGGER host_copy AFTER INSERT ON datoms BEGIN"
                 " INSERT INTO side VALUES ('t' || new.e); END");
    tuExecOk(db, "CREATE TRIGGER host_refuse BEFORE INSERT ON timelined_transactions"
                 " WHEN new.v = 666 BEGIN SELECT RAISE(ABORT, 'host refuses 666'); END");
    expectUndone(db, "[[:db/add [:p/name \"a\"] :p/s :s/three] [:db/add [:p/name \"c\"] :p/n 666]]",
                 "host refuses 666", bBegin);
    expectUndone(db, "[{:p/name \"e\" :p/n 5} {:p/name \"f\" :p/n 666}]", "host refuses 666", bBegin);
    tuExecOk(db, "DROP TRIGGER host_copy");
    tuExecOk(db, "DROP TRIGGER host_refuse");
    /* a TEMP trigger on the store's table in main (the connection's own) */
    tuExecOk(db, "CREATE TEMP TRIGGER temp_refuse BEFORE INSERT ON main.timelined_transactions"
                 " WHEN new.v = 777 BEGIN SELECT RAISE(ABORT, 'temp refuses 777'); END");
    expectUndone(db, "[[:db/add [:p/name \"a\"] :p/s :s/four] [:db/add [:p/name \"c\"] :p/n 777]]",
                 "temp refuses 777", bBegin);
    tuExecOk(db, "DROP TRIGGER temp_refuse");
    expectNextWorks(db);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  }
}
END_TEST

/* A host unique index on the log's assertions of :p/n: a one-datom
** replacement writes its three log rows (the old value's retraction, the
** tx instant, the new value) in one multi-row INSERT, and the third hits
** the index after the statement has inserted the first two; the call's
** undo takes them back with the host's earlier row kept. */
START_TEST(host_log_index_mid_statement) {
  for (int bBegin = 0; bBegin < 3; bBegin++) {
    sqlite3 *db = openStore("undo-logidx.db");
    char *zA = tuQuery(db, "SELECT e FROM idents WHERE v = ':p/n'", NULL, NULL), zSql[200];
    sqlite3_snprintf(sizeof zSql, zSql, "CREATE UNIQUE INDEX host_log_n ON timelined_transactions (v)"
                     " WHERE a = %s AND added = 1", zA);
    free(zA);
    tuExecOk(db, zSql);
    /* b asserted 10: a's new 10 is the log statement's third row */
    expectUndone(db, "[[:db/add [:p/name \"a\"] :p/n 10]]", "UNIQUE constraint failed", bBegin);
    expectNextWorks(db);
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  }
}
END_TEST

/* The log rows of replacements of each storage class (integer, real,
** text, blob) and a retraction, in the order written (rowid): explicit
** retractions, then each replaced value (ops in entity, attribute order),
** then the new datoms by attribute, value, entity (:db/txInstant, entid
** 3, first); the datoms hold the new values only. Worked out by hand from
** that order; the same inside the host's BEGIN. */
START_TEST(rows_path_log_rows) {
  static const char zWantLog[] =
    "1:s/two:0:text;2:1:0:integer;3:1.5:0:real;4:'x':0:text;5:X'01':0:blob;"
    "tx:1:1:integer;2:2:1:integer;3:2.5:1:real;4:'y':1:text;5:X'02':1:blob";
  for (int bBegin = 0; bBegin < 2; bBegin++) {
    sqlite3 *db = openFile("rows-log.db");
    char *z;
    tuExecOk(db, "SELECT edn_t(':main', '[{:db/ident :r/k :db/valueType :db.type/keyword :db/index true"
                 " :db/cardinality :db.cardinality/many}"
                 " {:db/ident :r/l :db/valueType :db.type/long} {:db/ident :r/d :db/valueType :db.type/double}"
                 " {:db/ident :r/s :db/valueType :db.type/string} {:db/ident :r/b :db/valueType :db.type/bytes}]')");
    tuExecOk(db, "SELECT edn_t(':main', '[{:db/id \"e\" :r/k [:s/one :s/two] :r/l 1 :r/d 1.5 :r/s \"x\""
                 " :r/b #bytes \"01\"}]')");
    if (bBegin) tuExecOk(db, "BEGIN");
    tuExpectQuery(db, "SELECT e FROM datoms WHERE v = ':s/one'", "65541");
    z = tuQuery(db, "SELECT edn_t(':main', '[[:db/retract 65541 :r/k :s/two] [:db/add 65541 :r/l 2]"
                    " [:db/add 65541 :r/d 2.5] [:db/add 65541 :r/s \"y\"] [:db/add 65541 :r/b #bytes \"02\"]]')"
                    " ->> 'tx_id'", NULL, NULL);
    ck_assert_str_eq(z, "268435459");
    free(z);
    /* attributes as their rank among :r/k..:r/b, the entity only where it is not e */
    tuExpectQuery(db, "SELECT group_concat(r, ';') FROM (SELECT CASE WHEN t.a = 3 THEN 'tx' ELSE"
                  " t.a - (SELECT e FROM idents WHERE v = ':r/k') + 1 END || ':' ||"
                  " CASE WHEN t.a = 3 THEN '1' WHEN t.a = (SELECT e FROM idents WHERE v = ':r/k')"
                  " THEN substr(t.v, 2) ELSE quote(t.v) END || ':' || t.added || ':' ||"
                  " CASE WHEN t.a = 3 THEN 'integer' ELSE typeof(t.v) END AS r"
                  " FROM timelined_transactions t WHERE t.tx = 268435459 AND (t.a = 3 OR t.e = 65541)"
                  " ORDER BY t.rowid)", zWantLog);
    tuExpectQuery(db, "SELECT group_concat(quote(v), ',') FROM (SELECT v FROM datoms WHERE e = 65541"
                  " ORDER BY a)", "':s/one',2,2.5,'y',X'02'");
    if (bBegin) tuExecOk(db, "COMMIT");
    tuExpectQuery(db, "PRAGMA integrity_check", "ok");
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  }
}
END_TEST

/* Counts the rollbacks of a "ROLLBACK" statement (the extension's
** sqlite3_exec), not SQLite's own rollback inside a failing statement. */
static int gOwnRollback;
static void ownRollback(void *pArg) {
  for (sqlite3_stmt *p = sqlite3_next_stmt(pArg, NULL); p; p = sqlite3_next_stmt(pArg, p)) {
    if (sqlite3_sql(p) && strcmp(sqlite3_sql(p), "ROLLBACK") == 0) gOwnRollback++;
  }
}

/* Allocation failures at every point of one edn_t inside the host's
** BEGIN (transient: the n-th allocation fails; persistent: every one from
** the n-th on, so whatever undoes the failed call fails too). Each
** failure either keeps the host's transaction with the digest before the
** call, or (SQLite's own rollback of a statement without a statement
** journal) ends it with the committed digest; a success is the whole
** transaction. Three transactions: a card-one replacement of an indexed
** keyword (the shape of bench/host.py's writes), an upsert with a new
** entity and a retraction, and 20 new datoms (the multi-row batch). */
START_TEST(nomem_inside_begin) {
  static const char *azTx[] = {
    "[[:db/add [:p/name \"a\"] :p/s :s/three]]",
    "[{:p/name \"a\" :p/n 2 :p/r [:p/name \"b\"]} {:p/name \"g\" :p/n 3} [:db/retract [:p/name \"c\"] :p/n 100]]",
    "[{:p/s :s/x0 :p/n 0} {:p/s :s/x1 :p/n 1} {:p/s :s/x2 :p/n 2} {:p/s :s/x3 :p/n 3}"
    " {:p/s :s/x4 :p/n 4} {:p/s :s/x5 :p/n 5} {:p/s :s/x6 :p/n 6} {:p/s :s/x7 :p/n 7}"
    " {:p/s :s/x8 :p/n 8} {:p/s :s/x9 :p/n 9}]",
  };
  int nKept = 0, nEnded = 0, nPoints = 0;
  tuOomInstall();
  for (int iMode = 0; iMode < 4; iMode++) {
    int bWarm = iMode >= 2;
    for (size_t iTx = 0; iTx < sizeof azTx / sizeof azTx[0]; iTx++) {
      sqlite3 *db = openStore("undo-oom.db");
      char *zCommitted = digest(db);
      int bDone = 0;
      tuOomOnce = iMode % 2 == 0;
      /* the first call creates the cached statements: sweep the second */
      tuExecOk(db, "BEGIN; SELECT edn_t(':main', '[[:db/add [:p/name \"b\"] :p/n 11]]'); ROLLBACK");
      for (int n = 0; n < 100000 && !bDone; n += n < 400 ? 1 : 7) {
        char *zBefore, *zOut = NULL, *zAfter;
        int rc;
        tuExecOk(db, zHostRow);
        if (bWarm) tuExecOk(db, zWarm);
        zBefore = digest(db);
        gOwnRollback = 0;
        sqlite3_rollback_hook(db, ownRollback, db);
        tuOomLeft = n;
        rc = tuStepOnce(db, "SELECT edn_t(':main', ?1)", azTx[iTx], NULL, &zOut);
        bDone = tuOomOnce ? tuOomLeft > 0 : rc == SQLITE_ROW;
        tuOomLeft = -1;
        sqlite3_rollback_hook(db, NULL, NULL);
        nPoints++;
        if (rc == SQLITE_ROW) {
          ck_assert_msg(strncmp(zOut, bWarm ? "{\"tx_id\":268435460," : "{\"tx_id\":268435459,", 19) == 0, "tx %d at %d: %s", (int)iTx, n, zOut);
          bDone = 1;
        } else {
          ck_assert_msg(tuIsNomem(rc) || rc == SQLITE_ERROR, "tx %d at %d: rc %d %s", (int)iTx, n, rc,
                        sqlite3_errmsg(db));
          /* never a ROLLBACK of the extension's own */
          ck_assert_msg(gOwnRollback == 0, "tx %d at %d (%s): the extension rolled the host's"
                        " transaction back", (int)iTx, n, iMode % 2 ? "persistent" : "transient");
          zAfter = digest(db);
          if (sqlite3_get_autocommit(db)) {
            nEnded++;
            ck_assert_msg(strcmp(zAfter, zCommitted) == 0, "tx %d at %d (%s) ended the transaction but"
                          " left\n  %s\n  not %s", (int)iTx, n, iMode % 2 ? "persistent" : "transient",
                          zAfter, zCommitted);
          } else {
            nKept++;
            ck_assert_msg(strcmp(zAfter, zBefore) == 0, "tx %d at %d (%s) changed the state:\n  before %s\n"
                          "  after  %s", (int)iTx, n, iMode % 2 ? "persistent" : "transient", zBefore, zAfter);
          }
          free(zAfter);
        }
        free(zBefore);
        free(zOut);
        if (!sqlite3_get_autocommit(db)) tuExecOk(db, "ROLLBACK");
      }
      ck_assert_msg(bDone, "tx %d never succeeded", (int)iTx);
      free(zCommitted);
      tuExpectQuery(db, "PRAGMA integrity_check", "ok");
      ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
    }
  }
  tuOomRemove();
  fprintf(stderr, "host undo under allocation failures: %d points, %d kept the host's transaction,"
          " %d ended it (SQLite's rollback)\n", nPoints, nKept, nEnded);
}
END_TEST

static Suite *undoSuite(void) {
  Suite *s = suite_create("host_undo");
  TCase *tc = tcase_create("host_undo");
  tuNoFsync();
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, host_index_after_first_write);
  tcase_add_test(tc, host_foreign_keys_after_first_write);
  tcase_add_test(tc, host_triggers_after_first_write);
  tcase_add_test(tc, host_log_index_mid_statement);
  tcase_add_test(tc, rows_path_log_rows);
  suite_add_tcase(s, tc);
  tc = tuFaultCase("host_undo_faults", 600);
  tcase_add_test(tc, nomem_inside_begin);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(undoSuite)
