/*
** test_rerun.c — one prepared host statement over the edn_q table run again
** and again, as every host's statement cache does: the table's cursor keeps
** the finished run's store, reader and plan for the next run of the same
** db_path and query (vtab/edn_q_table.c, RunCursor bKeep), so each test here
** changes something between two runs that must change the answer, and
** checks the second run sees it: another connection's commit, a schema
** change made by another connection and by this process, a file moved over
** the store's path (the replaced-file rule: ../shared/SPEC.md §4, README
** "Limits and settings" MENTAT_PATH_CHECK_MS), new opts of the same or
** another shape, another query between two runs, a with-span. The
** edn_datoms table keeps its finished run's call the same way
** (vtab/datoms_cursor.c dcurBeginKept): test_rerun_datoms_* make the same
** changes between two of its runs.
**
** Expected answers are worked out by hand from the data each test writes.
*/
#include <unistd.h>
#include "tuhost.h"
#include "store.h"
#include "config.h"

static const char *zSchema =
    "[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
    " {:db/ident :p/nick :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
    " {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]";
static const char *zData = "[{:p/name \"x\" :p/age 1} {:p/name \"y\" :p/nick \"z\" :p/age 2}]";

#define QN "[:find ?n :where [_ :p/name ?n]]"
#define QK "[:find ?n :where [_ :p/nick ?n]]"

/* Writes zTx to the store at zPath through host db; its tx id is checked. */
static void tTx(sqlite3 *db, const char *zPath, const char *zTx, const char *zWantTx) {
  char *z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, zTx);
  ck_assert_msg(strcmp(z, zWantTx) == 0, "edn_t %s: %s", zTx, z);
  free(z);
}

/* A fresh store file named zName holding the schema and zData. */
static char *tStore(sqlite3 *db, const char *zName) {
  char *zPath = strdup(tuTempPath(zName));
  tTx(db, zPath, zSchema, "268435457");
  tTx(db, zPath, zData, "268435458");
  return zPath;
}

/* Runs pStmt (reset first; ?1 = zPath, ?2 = zQuery, ?3 = zOpts or NULL)
** to its end and returns its first column of every row, joined by ","
** (malloc'd; "ERROR: <message>" when a step fails). */
static char *tRows(sqlite3_stmt *pStmt, const char *zPath, const char *zQuery, const char *zOpts) {
  size_t n = 0;
  char *zOut = malloc(4096);
  int rc;
  zOut[0] = 0;
  sqlite3_reset(pStmt);
  sqlite3_bind_text(pStmt, 1, zPath, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(pStmt, 2, zQuery, -1, SQLITE_TRANSIENT);
  if (zOpts) sqlite3_bind_text(pStmt, 3, zOpts, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(pStmt, 3);
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    const char *z = (const char *)sqlite3_column_text(pStmt, 0);
    n += (size_t)snprintf(zOut + n, 4096 - n, "%s%s", n ? "," : "", z ? z : "NULL");
  }
  if (rc != SQLITE_DONE) {
    snprintf(zOut, 4096, "ERROR: %s", sqlite3_errmsg(sqlite3_db_handle(pStmt)));
  }
  sqlite3_reset(pStmt);
  return zOut;
}

#define EXPECT_ROWS(stmt, path, q, opts, want)                                  \
  do {                                                                          \
    char *zGot_ = tRows((stmt), (path), (q), (opts));                           \
    ck_assert_msg(strcmp(zGot_, (want)) == 0, "%s %s: got %s, want %s", (q),    \
                  (opts) ? (opts) : "", zGot_, (want));                         \
    free(zGot_);                                                                \
  } while (0)

/* Empties zPath's WAL into the file, so moving another file over it leaves
** no frames of the old store for the new one's connections. */
static void tCheckpoint(const char *zPath) {
  sqlite3 *raw = NULL;
  ck_assert_int_eq(sqlite3_open(zPath, &raw), SQLITE_OK);
  char *z = tuQuery(raw, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL);
  ck_assert_str_eq(z, "0");
  free(z);
  sqlite3_close(raw);
}

static void tRemoveStore(const char *zPath) {
  char z[320];
  unlink(zPath);
  snprintf(z, sizeof z, "%s-wal", zPath);
  unlink(z);
  snprintf(z, sizeof z, "%s-shm", zPath);
  unlink(z);
}

/* The names in c0, in order: the outer ORDER BY reads the table to its end
** before the first row, so each run finishes the table's run (and the
** cursor keeps it) inside the first step. */
static sqlite3_stmt *tPrepare(sqlite3 *db) {
  sqlite3_stmt *pStmt = NULL;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT c0 FROM edn_q(?1, ?2, ?3) ORDER BY 1", -1,
                                      &pStmt, NULL), SQLITE_OK);
  return pStmt;
}

/* Another connection's commits between two runs: new data, then a schema
** change (a plain connection renames :p/nick to :p/alias, as another
** process could, moving the tx mark as any writer does). The kept plan
** resolved :p/nick to its entid, which the rename keeps: a run that reused
** it without the check after its first step would still give "z". */
START_TEST(test_rerun_foreign_commit) {
  sqlite3 *db = tuOpenHost(), *db2 = tuOpenHost(), *raw = NULL;
  char *zPath = tStore(db, "rerun1.db");
  sqlite3_stmt *pStmt = tPrepare(db);
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "x,y");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "x,y");
  tTx(db2, zPath, "[{:p/name \"w\"}]", "268435459");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "w,x,y");
  EXPECT_ROWS(pStmt, zPath, QK, NULL, "z");
  EXPECT_ROWS(pStmt, zPath, QK, NULL, "z");
  ck_assert_int_eq(sqlite3_open(zPath, &raw), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(raw, "BEGIN; UPDATE idents SET v = ':p/alias' WHERE v = ':p/nick';"
                                     " UPDATE known_parts SET idx = idx + 1"
                                     " WHERE part = ':db.part/tx'; COMMIT", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(raw);
  EXPECT_ROWS(pStmt, zPath, QK, NULL, "");
  EXPECT_ROWS(pStmt, zPath, "[:find ?n :where [_ :p/alias ?n]]", NULL, "z");
  sqlite3_finalize(pStmt);
  sqlite3_close(db2);
  sqlite3_close(db);
  free(zPath);
}
END_TEST

/* A schema change this process makes (another host connection's edn_t
** installs :p/email and uses it): the run before it found no such
** attribute (no rows), the run after it reads the new attribute. */
START_TEST(test_rerun_own_schema_change) {
  sqlite3 *db = tuOpenHost(), *db2 = tuOpenHost();
  char *zPath = tStore(db, "rerun2.db");
  sqlite3_stmt *pStmt = tPrepare(db);
  const char *zQ = "[:find ?m :where [_ :p/email ?m]]";
  EXPECT_ROWS(pStmt, zPath, zQ, NULL, "");
  EXPECT_ROWS(pStmt, zPath, zQ, NULL, "");
  tTx(db2, zPath, "[{:db/ident :p/email :db/valueType :db.type/string"
                  " :db/cardinality :db.cardinality/one}]", "268435459");
  EXPECT_ROWS(pStmt, zPath, zQ, NULL, "");
  tTx(db2, zPath, "[{:p/email \"a@b\"}]", "268435460");
  EXPECT_ROWS(pStmt, zPath, zQ, NULL, "a@b");
  /* and on the writing connection itself */
  tTx(db, zPath, "[{:p/email \"c@d\"}]", "268435461");
  EXPECT_ROWS(pStmt, zPath, zQ, NULL, "a@b,c@d");
  sqlite3_finalize(pStmt);
  sqlite3_close(db2);
  sqlite3_close(db);
  free(zPath);
}
END_TEST

/* The replaced-file rule between two runs of one statement: a file moved
** over the path may be read as the old store only within
** MENTAT_PATH_CHECK_MS; a write checks at once, and the runs after it
** read the file it wrote; a file deleted is a new, empty store after the
** bound. */
START_TEST(test_rerun_replaced_file) {
  sqlite3 *db = tuOpenHost();
  char *zPath = tStore(db, "rerun3.db");
  char *zNew = strdup(tuTempPath("rerun3.db.new"));
  char *zOther = strdup(tuTempPath("rerun3.db.other"));
  sqlite3_stmt *pStmt = tPrepare(db);
  int nOld = configSetPathCheckMs(60000);
  tTx(db, zNew, zSchema, "268435457");
  tTx(db, zNew, "[{:p/name \"q\"}]", "268435458");
  tTx(db, zOther, zSchema, "268435457");
  tTx(db, zOther, "[{:p/name \"o\"}]", "268435458");
  storeCacheClear();      /* closes the stores at zNew and zOther (no reference left) */
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "x,y");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "x,y");
  tCheckpoint(zPath);
  ck_assert_int_eq(rename(zNew, zPath), 0);
  /* within the bound (a minute): the old store may still be read */
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "x,y");
  /* a write checks the path: it goes to the new file, and so do the reads */
  tTx(db, zPath, "[{:p/name \"w\"}]", "268435459");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "q,w");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "q,w");
  /* moved over again, and the bound passes: the next run reads that file */
  configSetPathCheckMs(10);
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "q,w");
  tCheckpoint(zPath);
  ck_assert_int_eq(rename(zOther, zPath), 0);
  usleep(30 * 1000);
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "o");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "o");
  /* Deleted (the old store's connections keep their unlinked files) and
  ** made anew by a write, which checks the path: the runs after it read
  ** the new store, not the kept one. */
  configSetPathCheckMs(60000);
  tCheckpoint(zPath);
  tRemoveStore(zPath);
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "o");   /* within the bound */
  tTx(db, zPath, zSchema, "268435457");
  tTx(db, zPath, "[{:p/name \"n\"}]", "268435458");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "n");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "n");
  sqlite3_finalize(pStmt);
  configSetPathCheckMs(nOld);
  sqlite3_close(db);
  free(zOther);
  free(zNew);
  free(zPath);
}
END_TEST

/* New opts for the same query on each run: inputs of the same shape, of
** another type (a string is not the long 1: no rows), asOf and since (tx
** 268435457 holds the schema only, 268435458 the data), none (the input
** is missing: an error), "with" (its datom seen by that run only),
** "sources" ($2 the store as of the schema tx: no names) and back; an
** entity given as an ident, then as an entid. */
START_TEST(test_rerun_opts) {
  sqlite3 *db = tuOpenHost();
  char *zPath = tStore(db, "rerun4.db");
  sqlite3_stmt *pStmt = tPrepare(db);
  const char *zQ = "[:find ?n :in $ ?a :where [?e :p/age ?a] [?e :p/name ?n]]";
  const char *zQ2 = "[:find ?n :in $ $2 :where [$2 _ :p/name ?n]]";
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[1]}", "x");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[2]}", "y");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[2]}", "y");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[\"1\"]}", "");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[1]}", "x");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[1],\"asOf\":268435457}", "");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[1],\"asOf\":268435458}", "x");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[1],\"since\":268435458}", "");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[1],\"since\":268435457}", "x");
  EXPECT_ROWS(pStmt, zPath, zQ, NULL,
              "ERROR: edn_q: query has 1 :in binding(s) but \"inputs\" has 0 value(s)");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[3],\"with\":\"[{:p/name \\\"t\\\" :p/age 3}]\"}", "t");
  EXPECT_ROWS(pStmt, zPath, zQ, "{\"inputs\":[3]}", "");
  EXPECT_ROWS(pStmt, zPath, QN, "{\"with\":\"[{:p/name \\\"t\\\"}]\"}", "t,x,y");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "x,y");
  EXPECT_ROWS(pStmt, zPath, zQ2, "{\"sources\":{\"$2\":{}}}", "x,y");
  EXPECT_ROWS(pStmt, zPath, zQ2, "{\"sources\":{\"$2\":{}}}", "x,y");
  EXPECT_ROWS(pStmt, zPath, zQ2, "{\"sources\":{\"$2\":{\"asOf\":268435457}}}", "");
  EXPECT_ROWS(pStmt, zPath, QN, NULL, "x,y");
  /* an entity input as an ident (a keyword), then as its entid: one
  ** letter of shape apart, two plans */
  tTx(db, zPath, "[{:db/ident :p/me :p/name \"m\"}]", "268435459");
  {
    char zOpts[64];
    char *zE = tuQuery(db, "SELECT edn_q(?1, '[:find ?e . :where [?e :db/ident :p/me]]') ->> '$.result'",
                       zPath, NULL);
    const char *zQe = "[:find ?n :in $ ?e :where [?e :p/name ?n]]";
    const char *zById = zOpts;
    snprintf(zOpts, sizeof zOpts, "{\"inputs\":[%s]}", zE);
    EXPECT_ROWS(pStmt, zPath, zQe, "{\"inputs\":[\":p/me\"]}", "m");
    EXPECT_ROWS(pStmt, zPath, zQe, zById, "m");
    EXPECT_ROWS(pStmt, zPath, zQe, "{\"inputs\":[\":p/me\"]}", "m");
    free(zE);
  }
  sqlite3_finalize(pStmt);
  sqlite3_close(db);
  free(zPath);
}
END_TEST

/* Two statements of one host connection take turns (the connection keeps
** one finished cursor), two stores, a nested pair of cursors, and the
** hidden columns echo each run's own arguments. */
START_TEST(test_rerun_turns) {
  sqlite3 *db = tuOpenHost();
  char *zPath = tStore(db, "rerun5.db");
  char *zPath2 = strdup(tuTempPath("rerun5b.db"));
  sqlite3_stmt *pA = tPrepare(db), *pB = tPrepare(db), *pN = NULL, *pEcho = NULL;
  tTx(db, zPath2, zSchema, "268435457");
  tTx(db, zPath2, "[{:p/name \"b\" :p/nick \"n\"}]", "268435458");
  for (int k = 0; k < 3; k++) {
    EXPECT_ROWS(pA, zPath, QN, NULL, "x,y");
    EXPECT_ROWS(pB, zPath, QK, NULL, "z");
    EXPECT_ROWS(pA, zPath2, QN, NULL, "b");
    EXPECT_ROWS(pB, zPath2, QK, NULL, "n");
  }
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT group_concat(x || y) FROM (SELECT a.c0 AS x, b.c0 AS y"
                                          " FROM edn_q(?1, ?2) a, edn_q(?1, ?2) b ORDER BY 1, 2)",
                                      -1, &pN, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT group_concat(c0 || ':' || opts) FROM"
                                          " edn_q(?1, ?2, ?3)", -1, &pEcho, NULL), SQLITE_OK);
  for (int k = 0; k < 2; k++) {
    char *z;
    /* the ordered pairs, each name joined to the other */
    z = tRows(pN, zPath, QN, NULL);
    ck_assert_str_eq(z, "xx,xy,yx,yy");
    free(z);
    z = tRows(pEcho, zPath, "[:find ?n :in $ ?a :where [?e :p/age ?a] [?e :p/name ?n]]",
              k ? "{\"inputs\": [2]}" : "{\"inputs\":[1]}");
    ck_assert_str_eq(z, k ? "y:{\"inputs\": [2]}" : "x:{\"inputs\":[1]}");
    free(z);
  }
  sqlite3_finalize(pEcho);
  sqlite3_finalize(pN);
  sqlite3_finalize(pB);
  sqlite3_finalize(pA);
  sqlite3_close(db);
  free(zPath2);
  free(zPath);
}
END_TEST

/* ---- the edn_datoms table: the cursor keeps a finished run's call (store,
** reader, schema; vtab/datoms_cursor.c dcurBeginKept) for the next run of
** the same db_path and opts text. ?1 the path, ?2 the attribute (c1 of
** :aevt), ?3 the opts; pD2 takes no opts (a NULL argument would be an
** empty result, not "no opts"). */
typedef struct TDatoms { sqlite3_stmt *pD2, *pD3; } TDatoms;

static TDatoms tPrepareDatoms(sqlite3 *db) {
  TDatoms t = {NULL, NULL};
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT v FROM edn_datoms(?1, ':aevt', ?2) ORDER BY 1",
                                      -1, &t.pD2, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT v FROM edn_datoms(?1, ':aevt', ?2, ?3) ORDER BY 1",
                                      -1, &t.pD3, NULL), SQLITE_OK);
  return t;
}

static void tFinalizeDatoms(TDatoms *t) {
  sqlite3_finalize(t->pD2);
  sqlite3_finalize(t->pD3);
}

#define EXPECT_DATOMS(t, path, attr, opts, want) \
  EXPECT_ROWS((opts) ? (t).pD3 : (t).pD2, (path), (attr), (opts), (want))

/* Another connection's commits between two runs: a new name, then a plain
** connection renaming :p/nick to :p/alias (moving the tx mark as any writer
** does): a run that kept the schema it resolved :p/nick on would still
** give "z". */
START_TEST(test_rerun_datoms_foreign_commit) {
  sqlite3 *db = tuOpenHost(), *db2 = tuOpenHost(), *raw = NULL;
  char *zPath = tStore(db, "rerund1.db");
  TDatoms t = tPrepareDatoms(db);
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "x,y");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "x,y");
  tTx(db2, zPath, "[{:p/name \"w\"}]", "268435459");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "w,x,y");
  EXPECT_DATOMS(t, zPath, ":p/nick", NULL, "z");
  EXPECT_DATOMS(t, zPath, ":p/nick", NULL, "z");
  ck_assert_int_eq(sqlite3_open(zPath, &raw), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(raw, "BEGIN; UPDATE idents SET v = ':p/alias' WHERE v = ':p/nick';"
                                     " UPDATE known_parts SET idx = idx + 1"
                                     " WHERE part = ':db.part/tx'; COMMIT", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(raw);
  EXPECT_DATOMS(t, zPath, ":p/nick", NULL, "ERROR: edn_datoms: c1 (a of :aevt): unknown attribute :p/nick");
  EXPECT_DATOMS(t, zPath, ":p/alias", NULL, "z");
  EXPECT_DATOMS(t, zPath, ":p/alias", NULL, "z");
  tFinalizeDatoms(&t);
  sqlite3_close(db2);
  sqlite3_close(db);
  free(zPath);
}
END_TEST

/* A schema change made through another host connection of this process:
** the attribute is unknown (an error, as d/datoms throws), then installed
** (no datoms), then has a datom; and one written on this connection. */
START_TEST(test_rerun_datoms_schema_change) {
  sqlite3 *db = tuOpenHost(), *db2 = tuOpenHost();
  char *zPath = tStore(db, "rerund2.db");
  TDatoms t = tPrepareDatoms(db);
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "x,y");
  EXPECT_DATOMS(t, zPath, ":p/email", NULL, "ERROR: edn_datoms: c1 (a of :aevt): unknown attribute :p/email");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "x,y");
  tTx(db2, zPath, "[{:db/ident :p/email :db/valueType :db.type/string"
                  " :db/cardinality :db.cardinality/one}]", "268435459");
  EXPECT_DATOMS(t, zPath, ":p/email", NULL, "");
  tTx(db2, zPath, "[{:p/email \"a@b\"}]", "268435460");
  EXPECT_DATOMS(t, zPath, ":p/email", NULL, "a@b");
  tTx(db, zPath, "[{:p/email \"c@d\"}]", "268435461");
  EXPECT_DATOMS(t, zPath, ":p/email", NULL, "a@b,c@d");
  tFinalizeDatoms(&t);
  sqlite3_close(db2);
  sqlite3_close(db);
  free(zPath);
}
END_TEST

/* The replaced-file rule between two runs (as test_rerun_replaced_file):
** the old store only within MENTAT_PATH_CHECK_MS, a write checks at once,
** a deleted store made anew by a write is read after it. */
START_TEST(test_rerun_datoms_replaced_file) {
  sqlite3 *db = tuOpenHost();
  char *zPath = tStore(db, "rerund3.db");
  char *zNew = strdup(tuTempPath("rerund3.db.new"));
  char *zOther = strdup(tuTempPath("rerund3.db.other"));
  TDatoms t = tPrepareDatoms(db);
  int nOld = configSetPathCheckMs(60000);
  tTx(db, zNew, zSchema, "268435457");
  tTx(db, zNew, "[{:p/name \"q\"}]", "268435458");
  tTx(db, zOther, zSchema, "268435457");
  tTx(db, zOther, "[{:p/name \"o\"}]", "268435458");
  storeCacheClear();
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "x,y");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "x,y");
  tCheckpoint(zPath);
  ck_assert_int_eq(rename(zNew, zPath), 0);
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "x,y");        /* within the bound */
  tTx(db, zPath, "[{:p/name \"w\"}]", "268435459");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "q,w");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "q,w");
  configSetPathCheckMs(10);
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "q,w");
  tCheckpoint(zPath);
  ck_assert_int_eq(rename(zOther, zPath), 0);
  usleep(30 * 1000);
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "o");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "o");
  configSetPathCheckMs(60000);
  tCheckpoint(zPath);
  tRemoveStore(zPath);
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "o");          /* within the bound */
  tTx(db, zPath, zSchema, "268435457");
  tTx(db, zPath, "[{:p/name \"n\"}]", "268435458");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "n");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "n");
  tFinalizeDatoms(&t);
  configSetPathCheckMs(nOld);
  sqlite3_close(db);
  free(zOther);
  free(zNew);
  free(zPath);
}
END_TEST

/* Opts and argument shapes changing between runs of one statement: asOf
** the schema tx (no names) and the data tx, since, history with a
** retraction, none again; another attribute; a second store; a point
** lookup (e and a of a cardinality-one attribute: one row, the end
** without a second step) resumed for another entity. */
START_TEST(test_rerun_datoms_opts) {
  sqlite3 *db = tuOpenHost();
  char *zPath = tStore(db, "rerund4.db");
  char *zPath2 = strdup(tuTempPath("rerund4b.db"));
  TDatoms t = tPrepareDatoms(db);
  sqlite3_stmt *pE = NULL;
  char *zX = tuQuery(db, "SELECT e FROM edn_datoms(?1, ':aevt', ':p/name') WHERE v = 'x'", zPath, NULL);
  char *zY = tuQuery(db, "SELECT e FROM edn_datoms(?1, ':aevt', ':p/name') WHERE v = 'y'", zPath, NULL);
  char zTx[128];
  EXPECT_DATOMS(t, zPath, ":p/name", "{\"asOf\":268435457}", "");
  EXPECT_DATOMS(t, zPath, ":p/name", "{\"asOf\":268435458}", "x,y");
  EXPECT_DATOMS(t, zPath, ":p/name", "{\"asOf\":268435458}", "x,y");
  EXPECT_DATOMS(t, zPath, ":p/name", "{\"since\":268435458}", "");
  EXPECT_DATOMS(t, zPath, ":p/name", "{\"since\":268435457}", "x,y");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "x,y");
  /* y renamed v: the history holds y twice (asserted, retracted) and v */
  snprintf(zTx, sizeof zTx, "[[:db/add %s :p/name \"v\"]]", zY);
  tTx(db, zPath, zTx, "268435459");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "v,x");
  EXPECT_DATOMS(t, zPath, ":p/name", "{\"history\":true}", "v,x,y,y");
  EXPECT_DATOMS(t, zPath, ":p/name", "{\"history\":true}", "v,x,y,y");
  EXPECT_DATOMS(t, zPath, ":p/name", "{\"asOf\":268435458}", "x,y");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "v,x");
  EXPECT_DATOMS(t, zPath, ":p/age", NULL, "1,2");
  EXPECT_DATOMS(t, zPath, ":p/name", "{\"bogus\":1}",
                "ERROR: edn_datoms: unknown option \"bogus\"");
  EXPECT_DATOMS(t, zPath, ":p/name", NULL, "v,x");
  tTx(db, zPath2, zSchema, "268435457");
  tTx(db, zPath2, "[{:p/name \"b\"}]", "268435458");
  for (int k = 0; k < 2; k++) {
    EXPECT_DATOMS(t, zPath2, ":p/name", NULL, "b");
    EXPECT_DATOMS(t, zPath, ":p/name", NULL, "v,x");
  }
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT v FROM edn_datoms(?1, ':eavt', ?2, ':p/age')", -1,
                                      &pE, NULL), SQLITE_OK);
  for (int k = 0; k < 2; k++) {
    EXPECT_ROWS(pE, zPath, zX, NULL, "1");
    EXPECT_ROWS(pE, zPath, zY, NULL, "2");
  }
  snprintf(zTx, sizeof zTx, "[[:db/add %s :p/age 5]]", zY);
  tTx(db, zPath, zTx, "268435460");
  EXPECT_ROWS(pE, zPath, zY, NULL, "5");
  EXPECT_ROWS(pE, zPath, zX, NULL, "1");
  free(zY);
  free(zX);
  sqlite3_finalize(pE);
  tFinalizeDatoms(&t);
  sqlite3_close(db);
  free(zPath2);
  free(zPath);
}
END_TEST

/* Every test runs with the path check's bound at a minute (unless it sets
** its own), so each second run surely resumes the kept run instead of
** depending on how fast the machine is. */
static void tSetup(void) {
  configSetPathCheckMs(60000);
}

static Suite *rerunSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("rerun");
  TCase *tc = tcase_create("rerun");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, tSetup, NULL);
  tcase_add_test(tc, test_rerun_foreign_commit);
  tcase_add_test(tc, test_rerun_own_schema_change);
  tcase_add_test(tc, test_rerun_replaced_file);
  tcase_add_test(tc, test_rerun_opts);
  tcase_add_test(tc, test_rerun_turns);
  tcase_add_test(tc, test_rerun_datoms_foreign_commit);
  tcase_add_test(tc, test_rerun_datoms_schema_change);
  tcase_add_test(tc, test_rerun_datoms_replaced_file);
  tcase_add_test(tc, test_rerun_datoms_opts);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(rerunSuite)
