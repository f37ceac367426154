/*
** test_surface.c — the SQL surface (vtab/: entry.c, the SQL objects) driven
** through a host connection in-process, so the ASan/UBSan and valgrind
** builds of the unit tests cover it too (smoke/ covers the real .so).
**
** Table-driven: (SQL with ?1 = the store path, expected first column) —
** expected values worked out by hand from SPEC.md §2 and the data below.
*/
#include <sys/stat.h>
#include "tuhost.h"
#include "store.h"
#include "config.h"

static const char *zSchema =
    "[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
    " {:db/ident :p/nick :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
    " {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]";
static const char *zData = "[{:p/name \"x\" :p/age 1} {:p/name \"y\" :p/nick \"z\" :p/age 2}]";

#define QN "'[:find ?n :where [_ :p/name ?n]]'"
#define QK "'[:find ?n :where [_ :p/nick ?n]]'"
#define JOBS "CREATE TEMP TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, db TEXT, q TEXT);" \
             "DELETE FROM jobs; INSERT INTO jobs VALUES (1, ?1, " QN "), (2, ?1 || '.empty', " QN \
             "), (3, ?1, " QK ")"

/* A host with the extension and a store holding zData (and an empty one
** with the schema only, at <path>.empty). */
static sqlite3 *tHost(const char **pzPath) {
  static int iStore = 0;
  char zName[32];
  char *zEmpty, *z;
  sqlite3 *db = tuOpenHost();
  snprintf(zName, sizeof zName, "surface%d.db", ++iStore);
  *pzPath = strdup(tuTempPath(zName));
  zEmpty = malloc(strlen(*pzPath) + 8);
  sprintf(zEmpty, "%s.empty", *pzPath);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", *pzPath, zSchema);
  ck_assert_str_eq(z, "268435457");
  free(z);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", *pzPath, zData);
  ck_assert_str_eq(z, "268435458");
  free(z);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zEmpty, zSchema);
  ck_assert_str_eq(z, "268435457");
  free(z);
  free(zEmpty);
  return db;
}

/* Runs the statements of zSql (all but the last for effect) with ?1 bound
** to the store path; the last one's first column as tuQuery gives it. */
static char *tRun(sqlite3 *db, const char *zSql, const char *zPath) {
  const char *zTail = zSql;
  for (;;) {
    const char *zNext = NULL;
    sqlite3_stmt *pStmt = NULL;
    int rc = sqlite3_prepare_v2(db, zTail, -1, &pStmt, &zNext);
    if (rc != SQLITE_OK || zNext == NULL || zNext[strspn(zNext, " ;\n")] == 0) {
      sqlite3_finalize(pStmt);
      return tuQuery(db, zTail, zPath, NULL);   /* the last one (or the failing one) */
    }
    if (sqlite3_bind_parameter_count(pStmt) > 0) sqlite3_bind_text(pStmt, 1, zPath, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(pStmt) == SQLITE_ROW) {}
    sqlite3_finalize(pStmt);
    zTail = zNext;
  }
}

static const struct {
  const char *zSql;
  const char *zWant;
} aCase[] = {
  /* the table: rows, native columns, value JSON, hidden columns */
  {"SELECT group_concat(c0, ',') FROM (SELECT c0 FROM edn_q(?1, " QN ") ORDER BY 1)", "x,y"},
  {"SELECT group_concat(value, ',') FROM (SELECT value FROM edn_q(?1, " QN ") ORDER BY 1)", "[\"x\"],[\"y\"]"},
  {"SELECT typeof(c0) || typeof(c1) || typeof(c15) || (query = " QN ") || typeof(opts)"
   " FROM edn_q(?1, " QN ") LIMIT 1", "textnullnull1null"},
  {"SELECT count(*) FROM edn_q(?1, " QN ") LIMIT 1", "2"},
  /* hidden columns echo each execution's own arguments with the host's
  ** types, also when two cursors are open at once and when a correlated
  ** argument changes per outer row (cursors are kept for reuse) */
  {"SELECT (db_path = ?1) || '|' || opts || '|' || typeof(opts) FROM edn_q(?1, "
   "'[:find ?a . :in $ ?n :where [?e :p/name ?n] [?e :p/age ?a]]', '{\"inputs\":[\"y\"]}')",
   "1|{\"inputs\":[\"y\"]}|text"},
  {"SELECT count(*) || ',' || sum(a.c0 = b.c0) FROM edn_q(?1, " QN ") a, edn_q(?1, " QN ") b", "4,2"},
  /* opts made by SQLite's JSON functions echo as JSON (subtype kept), so
  ** they nest as an object, not a quoted string */
  {"SELECT json_object('o', opts) FROM edn_q(?1, " QN ", json_object('inputs', json_array())) LIMIT 1",
   "{\"o\":{\"inputs\":[]}}"},
  {"SELECT group_concat(t.n || '=' || b.c0 || ':' || json_extract(b.opts, '$.inputs[0]'), ',')"
   " FROM (SELECT 'x' AS n UNION ALL SELECT 'y' UNION ALL SELECT 'w') t,"
   " edn_q(?1, '[:find ?a :in $ ?n :where [?e :p/name ?n] [?e :p/age ?a]]',"
   " json_object('inputs', json_array(t.n))) b", "x=1:x,y=2:y"},
  {"SELECT count(*) FROM (SELECT * FROM edn_q(?1, " QN ") LIMIT 1)", "1"},
  /* rows numbered in order, from a base the arguments choose (an OR in
  ** WHERE runs each branch on its own cursor and drops repeated rowids) */
  {"SELECT (max(rowid) - min(rowid) + 1) || '|' || count(DISTINCT rowid) FROM edn_q(?1, " QN ")", "2|2"},
  /* NULL arguments: NULL result / no rows; NULL opts = none */
  {"SELECT count(*) FROM edn_q(NULL, " QN ")", "0"},
  {"SELECT count(*) FROM edn_q(?1, NULL)", "0"},
  {"SELECT count(*) FROM edn_q(?1, " QN ", NULL)", "2"},
  {"SELECT edn_t(NULL, '[]') IS NULL AND edn_t(?1, NULL) IS NULL AND edn_q(NULL, 'x') IS NULL"
   " AND edn_q(?1, NULL, '{}') IS NULL AND edn_pull(?1, '[*]', NULL) IS NULL"
   " AND edn_pull(?1, NULL, 1) IS NULL", "1"},
  /* the scalar documents */
  {"SELECT edn_q(?1, '[:find ?a . :where [?e :p/name \"y\"] [?e :p/age ?a]]')", "{\"result\":2}"},
  {"SELECT edn_q(?1, '[:find ?a . :where [?e :p/name \"w\"] [?e :p/age ?a]]')", "{\"result\":null}"},
  {"SELECT edn_q(?1, '[:find [?n ?a] :where [?e :p/nick \"z\"] [?e :p/name ?n] [?e :p/age ?a]]')",
   "{\"result\":[\"y\",2]}"},
  {"SELECT edn_q(?1, '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :order ?a]')",
   "{\"columns\":[\"?n\",\"?a\"],\"results\":[[\"x\",1],[\"y\",2]],\"result\":[[\"x\",1],[\"y\",2]]}"},
  {"SELECT edn_q(?1, '[:find ?n :where [_ :p/name ?n] [(= ?n \"none\")]]')",
   "{\"columns\":[\"?n\"],\"results\":[],\"result\":[]}"},
  /* JSON subtype: the document nests */
  {"SELECT json_object('r', edn_q(?1, '[:find ?a . :where [?e :p/name \"x\"] [?e :p/age ?a]]'))",
   "{\"r\":{\"result\":1}}"},
  {"SELECT json_type(json_object('r', edn_t('', '[]')), '$.r')", "object"},
  /* edn_pull */
  {"SELECT json_extract(edn_pull(?1, '[:p/name :p/age]', c0), '$.\":p/age\"') FROM edn_q(?1, "
   "'[:find ?e . :where [?e :p/name \"y\"]]')", "2"},
  {"SELECT edn_pull(?1, '[:p/name]', 1.5)", "ERROR: edn_pull: entity must be an INTEGER entity id, or TEXT holding a lookup ref or ident"},
  {"SELECT edn_pull(?1, '{:a 1}', 1)", "ERROR: edn_pull: pattern: line 1 col 1: a pull pattern must be a vector"},
  /* missing arguments: planner errors naming them (B27 (5)) */
  {"SELECT * FROM edn_q", "ERROR: edn_q: missing arguments db_path and query"},
  {"SELECT * FROM edn_q(?1)", "ERROR: edn_q: missing argument query"},
  {"SELECT * FROM edn_q WHERE query = " QN, "ERROR: edn_q: missing argument db_path"},
  /* opts errors arrive with the prefix */
  {"SELECT edn_q(?1, " QN ", '{\"x\":1}')", "ERROR: edn_q: unknown option \"x\""},
  {"SELECT * FROM edn_q(?1, " QN ", '[')", "ERROR: edn_q: opts: not valid JSON"},
  {"SELECT * FROM edn_q(?1, " QN ", '[]')", "ERROR: edn_q: opts must be a JSON object"},
  /* B27 (1)-(4), (6) */
  {JOBS "; SELECT group_concat(x, ',') FROM (SELECT j.id || r.c0 AS x FROM jobs j, edn_q(j.db, j.q) r ORDER BY 1)",
   "1x,1y,3z"},
  {JOBS "; SELECT group_concat(x, ',') FROM (SELECT j.id || r.c0 AS x FROM edn_q(j.db, j.q) r, jobs j ORDER BY 1)",
   "1x,1y,3z"},
  {JOBS "; SELECT group_concat(x, ',') FROM (SELECT j.id || coalesce(r.c0, '-') AS x FROM jobs j"
   " LEFT JOIN edn_q(j.db, j.q) r ORDER BY 1)", "1x,1y,2-,3z"},
  {"SELECT group_concat(c0, ',') FROM (SELECT c0 FROM edn_q WHERE db_path = ?1 AND query IN (" QN ", " QK ") ORDER BY 1)",
   "x,y,z"},
  {"SELECT group_concat(a.c0 || b.c0, ',') FROM edn_q(?1, " QN ") a JOIN edn_q(?1, " QN ") b ON a.c0 = b.c0",
   "xx,yy"},
  /* correlated inputs, nested cursors */
  {"SELECT group_concat(a.c0 || b.c0, ',') FROM (SELECT c0 FROM edn_q(?1, " QN ") ORDER BY 1) a,"
   " edn_q(?1, '[:find ?g . :in $ ?n :where [?e :p/name ?n] [?e :p/age ?g]]', json_object('inputs', json_array(a.c0))) b",
   "x1,y2"},
};

START_TEST(test_surface_cases) {
  const char *zPath;
  sqlite3 *db = tHost(&zPath);
  char *z = tRun(db, aCase[_i].zSql, zPath);
  ck_assert_msg(strcmp(z, aCase[_i].zWant) == 0, "%s\n  got  %s\n  want %s", aCase[_i].zSql, z, aCase[_i].zWant);
  free(z);
  free((void *)zPath);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A cursor finalized before its end gives its store connection back: a
** TRUNCATE checkpoint then finds no reader (busy = 0). */
START_TEST(test_surface_early_finalize) {
  const char *zPath;
  sqlite3 *db = tHost(&zPath), *raw = NULL;
  sqlite3_stmt *pStmt = NULL;
  char *z;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT c0 FROM edn_q(?1, " QN ")", -1, &pStmt, NULL), SQLITE_OK);
  sqlite3_bind_text(pStmt, 1, zPath, -1, SQLITE_TRANSIENT);
  ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ROW);
  sqlite3_finalize(pStmt);
  ck_assert_int_eq(sqlite3_open(zPath, &raw), SQLITE_OK);
  z = tuQuery(raw, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL);
  ck_assert_str_eq(z, "0");
  free(z);
  sqlite3_close(raw);
  free((void *)zPath);
  sqlite3_close(db);
}
END_TEST

/* The plan cache key (query text, input shape, schema generation) built in
** a stack buffer, and past it on the heap: a query longer than that buffer
** is cached and rebound like a short one, and a new input shape (string
** instead of long) gets its own plan. Expected rows from zData by hand:
** age 1 -> "x", age 2 -> "y", the string "1" and the vector [1] match no long. */
START_TEST(test_surface_plan_cache_key) {
  const char *zPath;
  sqlite3 *db = tHost(&zPath);
  char zQuery[1200];
  char zSql[1400];
  static const struct { const char *zOpts, *zWant; } a[] = {
    {"{\"inputs\":[1]}", "x"}, {"{\"inputs\":[2]}", "y"}, {"{\"inputs\":[\"1\"]}", "NULL"},
    {"{\"inputs\":[1]}", "x"}, {"{\"inputs\":[[1]]}", "NULL"},
  };
  for (int bLong = 0; bLong < 2; bLong++) {
    snprintf(zQuery, sizeof zQuery, "[:find ?n . :in $ ?a :where [?e :p/age ?a] [?e :p/name ?n]%*s]",
             bLong ? 900 : 0, "");
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
      snprintf(zSql, sizeof zSql, "SELECT json_extract(edn_q(?1, '%s', '%s'), '$.result')", zQuery,
               a[i].zOpts);
      char *z = tuQuery(db, zSql, zPath, NULL);
      ck_assert_msg(strcmp(z, a[i].zWant) == 0, "long=%d case %zu: %s", bLong, i, z);
      free(z);
    }
  }
  free((void *)zPath);
  sqlite3_close(db);
}
END_TEST

/* Results are built in a string kept with the store connection and copied
** out, or handed over whole past 64 KiB (sqlioOutBegin): alternate large and
** small documents on one connection and check each against its hand sum
** (0 + 1 + ... + 19999 = 199990000; 2 + 3 = 5), and edn_pull in between. */
START_TEST(test_surface_result_buffer) {
  const char *zPath;
  sqlite3 *db = tHost(&zPath);
  sqlite3_str *pBig = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pBig, "{\"inputs\":[[");
  for (int i = 0; i < 20000; i++) sqlite3_str_appendf(pBig, "%s%d", i ? "," : "", i);
  sqlite3_str_appendall(pBig, "]]}");
  char *zBig = sqlite3_str_finish(pBig);
  for (int round = 0; round < 3; round++) {
    char *z = tuQuery(db, "SELECT sum(value) FROM json_each(json_extract("
                          "edn_q(?1, '[:find [?x ...] :in $ [?x ...]]', ?2), '$.result'))", zPath, zBig);
    ck_assert_str_eq(z, "199990000");
    free(z);
    z = tuQuery(db, "SELECT sum(value) FROM json_each(json_extract("
                    "edn_q(?1, '[:find [?x ...] :in $ [?x ...]]', '{\"inputs\":[[2,3]]}'), '$.result'))",
                zPath, NULL);
    ck_assert_str_eq(z, "5");
    free(z);
    z = tuQuery(db, "SELECT json_extract(edn_pull(?1, '[:p/name]', "
                    "json_extract(edn_q(?1, '[:find ?e . :where [?e :p/age 2]]'), '$.result')), '$.\":p/name\"')",
                zPath, NULL);
    ck_assert_str_eq(z, "y");
    free(z);
  }
  sqlite3_free(zBig);
  free((void *)zPath);
  sqlite3_close(db);
}
END_TEST

/* B25 in-process: a cursor left open with rows left, plain and with a pull
** column, while another connection commits enough to pass the writer's
** set-aside threshold (4 MiB of WAL): the cursor's rest is set aside, it
** still returns exactly the rows of its snapshot (the two people of zData,
** none of the 300 added), and once it is finished a TRUNCATE checkpoint
** finds no reader (busy = 0). Under ASan/valgrind this covers qSpillRest. */
START_TEST(test_surface_open_cursor_spill) {
  static const char *azQ[] = {
    "[:find ?n :where [_ :p/name ?n]]",
    "[:find ?n (pull ?e [:p/age]) :where [?e :p/name ?n]]",
  };
  for (int k = 0; k < 2; k++) {
    const char *zPath;
    sqlite3 *db = tHost(&zPath), *w = tuOpenHost(), *raw = NULL;
    sqlite3_stmt *pCur = NULL, *pTx = NULL;
    char zRows[256] = "";
    /* A plain cursor (an ORDER BY would make SQLite read every row first). */
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT value FROM edn_q(?1, ?2)", -1, &pCur, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(pCur, 1, zPath, -1, SQLITE_STATIC);
    sqlite3_bind_text(pCur, 2, azQ[k], -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(pCur), SQLITE_ROW);
    strcat(zRows, (const char *)sqlite3_column_text(pCur, 0));
    ck_assert_int_eq(sqlite3_prepare_v2(w, "SELECT edn_t(?1, ?2)", -1, &pTx, NULL), SQLITE_OK);
    sqlite3_bind_text(pTx, 1, zPath, -1, SQLITE_STATIC);
    for (int i = 0; i < 300; i++) {
      char zTx[96];
      snprintf(zTx, sizeof zTx, "[{:p/name \"n%d\" :p/age %d :p/nick \"%0*d\"}]", i, i, 40, i);
      sqlite3_bind_text(pTx, 2, zTx, -1, SQLITE_TRANSIENT);
      ck_assert_int_eq(sqlite3_step(pTx), SQLITE_ROW);
      sqlite3_reset(pTx);
    }
    sqlite3_finalize(pTx);
    /* The set-aside happened: the writer's checkpoints kept the WAL small
    ** although the cursor's snapshot predates all 300 commits (without it
    ** they grow it to 19 MB here; with it the file stays at the 6 MiB the
    ** writer checkpoints at). */
    char zWal[300];
    struct stat st;
    snprintf(zWal, sizeof zWal, "%s-wal", zPath);
    ck_assert_int_eq(stat(zWal, &st), 0);
    ck_assert_msg(st.st_size < 8 * 1024 * 1024, "WAL %lld bytes", (long long)st.st_size);
    int rc;
    while ((rc = sqlite3_step(pCur)) == SQLITE_ROW) {
      strcat(zRows, ";");
      strcat(zRows, (const char *)sqlite3_column_text(pCur, 0));
    }
    ck_assert_int_eq(rc, SQLITE_DONE);
    /* Rows come in the store's order: x (entity 65536) then y. */
    ck_assert_str_eq(zRows, k == 0 ? "[\"x\"];[\"y\"]"
                                   : "[\"x\",{\":p/age\":1}];[\"y\",{\":p/age\":2}]");
    sqlite3_finalize(pCur);
    ck_assert_int_eq(sqlite3_open(zPath, &raw), SQLITE_OK);
    char *z = tuQuery(raw, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL);
    ck_assert_str_eq(z, "0");
    free(z);
    sqlite3_close(raw);
    sqlite3_close(w);
    free((void *)zPath);
    sqlite3_close(db);
  }
}
END_TEST

/* A file replaced at a store's path is a new store (SPEC.md §4): a write
** notices at once, a read within configPathCheckMs() of the replacement
** (README "Limits and settings", MENTAT_PATH_CHECK_MS): reads trust the
** path they checked last for that long instead of a stat() per call. Covered: a store file moved over the
** path between two calls, while another host connection holds a cursor on
** the old store (it keeps reading the old file); the file deleted (the next
** read sees a new, empty store); and a write right after a move. */
static char *tNames(sqlite3 *db, const char *zPath) {
  return tuQuery(db, "SELECT group_concat(c0, ',') FROM (SELECT c0 FROM edn_q(?1, " QN
                     ") ORDER BY 1)", zPath, NULL);
}

/* A closed store at zPath holding zData: schema, then one tx (the cache's
** copy closed, so the file is whole without its -wal). */
static void tStoreFile(sqlite3 *db, const char *zPath, const char *zTx) {
  char *z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, zSchema);
  ck_assert_str_eq(z, "268435457");
  free(z);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, zTx);
  ck_assert_str_eq(z, "268435458");
  free(z);
}

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

START_TEST(test_surface_replaced_file) {
  const char *zPath;
  sqlite3 *db = tHost(&zPath), *db2 = tuOpenHost();
  sqlite3_stmt *pCur = NULL;
  char zNew[300];
  char *z;
  int nOld = configSetPathCheckMs(10);
  snprintf(zNew, sizeof zNew, "%s.new", zPath);
  tStoreFile(db, zNew, "[{:p/name \"q\"}]");
  storeCacheClear();            /* closes the store at zNew; zPath's too */

  z = tNames(db, zPath);
  ck_assert_str_eq(z, "x,y");
  free(z);
  tCheckpoint(zPath);
  /* Another host connection holds the old store: a cursor with rows left. */
  ck_assert_int_eq(sqlite3_prepare_v2(db2, "SELECT c0 FROM edn_q(?1, " QN ")", -1, &pCur, NULL),
                   SQLITE_OK);
  sqlite3_bind_text(pCur, 1, zPath, -1, SQLITE_STATIC);
  ck_assert_int_eq(sqlite3_step(pCur), SQLITE_ROW);
  z = tNames(db, zPath);
  ck_assert_str_eq(z, "x,y");
  free(z);

  /* Moved over the path between two calls: within the bound (here a
  ** minute, so this call surely falls inside it) a read may still see the
  ** old store; once the bound has passed it sees the new file. */
  configSetPathCheckMs(60000);
  ck_assert_int_eq(rename(zNew, zPath), 0);
  z = tNames(db, zPath);
  ck_assert_str_eq(z, "x,y");
  free(z);
  configSetPathCheckMs(10);
  usleep(30 * 1000);
  z = tNames(db, zPath);
  ck_assert_str_eq(z, "q");
  free(z);
  z = tNames(db2, zPath);       /* another host connection: the same */
  ck_assert_str_eq(z, "q");
  free(z);
  /* The held cursor keeps reading the old file to its end. */
  ck_assert_int_eq(sqlite3_step(pCur), SQLITE_ROW);
  ck_assert_int_eq(sqlite3_step(pCur), SQLITE_DONE);
  sqlite3_finalize(pCur);

  /* Deleted: the next read after the bound is of a new, empty store. */
  tCheckpoint(zPath);
  tRemoveStore(zPath);
  usleep(30 * 1000);
  z = tuQuery(db, "SELECT count(*) FROM edn_q(?1, '[:find ?e :where [?e :db/ident]]')", zPath,
              NULL);
  ck_assert_str_eq(z, "40");    /* the bootstrap idents only */
  free(z);

  /* A write checks at once, whatever the bound: moved over the path, the
  ** next edn_t goes to the new file, and the reads after it see that. */
  configSetPathCheckMs(60000);
  tStoreFile(db, zNew, "[{:p/name \"c\"}]");
  z = tuQuery(db, "SELECT count(*) FROM edn_q(?1, '[:find ?e :where [?e :db/ident]]')", zPath,
              NULL);
  ck_assert_str_eq(z, "40");
  free(z);
  storeCacheClear();
  z = tNames(db, zPath);        /* reopened: the path checked again */
  ck_assert_str_eq(z, "NULL");  /* no names */
  free(z);
  tCheckpoint(zPath);
  ck_assert_int_eq(rename(zNew, zPath), 0);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, '[{:p/name \"w\"}]'), '$.tx_id')", zPath, NULL);
  ck_assert_str_eq(z, "268435459");
  free(z);
  z = tNames(db, zPath);
  ck_assert_str_eq(z, "c,w");
  free(z);

  configSetPathCheckMs(nOld);
  sqlite3_close(db2);
  free((void *)zPath);
  sqlite3_close(db);
}
END_TEST

/* Arguments that come from a UTF-16 host database reach the store as
** UTF-8: the table, the scalar form and edn_pull read their text without
** sqlite3_value_text's copy (sqlioTextIn), which must still convert. The
** store holds a name with a non-ASCII letter; the query text and the
** opts' input carry it, a pull pattern and an ident come from the table. */
START_TEST(test_surface_utf16_args) {
  const char *zPath;
  sqlite3 *db = tHost(&zPath), *h = NULL;
  char *zErr = NULL, *z;
  ck_assert_int_eq(sqlite3_open(":memory:", &h), SQLITE_OK);
  ck_assert_int_eq(mentatRegister(h, &zErr), SQLITE_OK);
  z = tuQuery(h, "SELECT json_extract(edn_t(?1, '[{:p/name \"\xc3\xa9t\xc3\xa9\" :p/age 3}]'),"
                 " '$.tx_id')", zPath, NULL);
  ck_assert_str_eq(z, "268435459");
  free(z);
  ck_assert_int_eq(sqlite3_exec(h, "PRAGMA encoding = 'UTF-16le'", NULL, NULL, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(h, "CREATE TABLE j(db TEXT, q TEXT, o TEXT, q2 TEXT, ent TEXT, ident TEXT)",
                                NULL, NULL, NULL), SQLITE_OK);
  z = tuQuery(h, "INSERT INTO j VALUES (?1, '[:find ?a :in $ ?n :where [?e :p/name ?n] [?e :p/age ?a]]',"
                 " '{\"inputs\":[\"\xc3\xa9t\xc3\xa9\"]}',"
                 " '[:find ?a . :where [?e :p/name \"\xc3\xa9t\xc3\xa9\"] [?e :p/age ?a]]',"
                 " '[:p/name]', ':p/age')", zPath, NULL);
  ck_assert_str_eq(z, "");
  free(z);
  z = tuQuery(h, "SELECT encoding FROM pragma_encoding", NULL, NULL);
  ck_assert_str_eq(z, "UTF-16le");
  free(z);
  z = tuQuery(h, "SELECT group_concat(r.c0) FROM j, edn_q(j.db, j.q, j.o) r", NULL, NULL);
  ck_assert_str_eq(z, "3");
  free(z);
  z = tuQuery(h, "SELECT edn_q(db, q, o) FROM j", NULL, NULL);
  ck_assert_str_eq(z, "{\"columns\":[\"?a\"],\"results\":[[3]],\"result\":[[3]]}");
  free(z);
  z = tuQuery(h, "SELECT edn_q(db, q2) || (SELECT c0 FROM j, edn_q(j.db, j.q2)) FROM j", NULL, NULL);
  ck_assert_str_eq(z, "{\"result\":3}3");
  free(z);
  z = tuQuery(h, "SELECT json_extract(edn_pull(db, ent, (SELECT c0 FROM edn_q(j.db,"
                 " '[:find ?e :where [?e :p/age 3]]'))), '$.:p/name') FROM j", NULL, NULL);
  ck_assert_str_eq(z, "\xc3\xa9t\xc3\xa9");
  free(z);
  z = tuQuery(h, "SELECT json_extract(edn_pull(db, '[:db/ident]', ident), '$.:db/ident') FROM j",
              NULL, NULL);
  ck_assert_str_eq(z, ":p/age");
  free(z);
  sqlite3_free(zErr);
  sqlite3_close(h);
  free((void *)zPath);
  sqlite3_close(db);
}
END_TEST

/* A commit by another connection (here a plain one, as another process
** would make it) is seen by the very next call, whichever form: the
** edn_q forms take their reader without a check and check right after
** their first step (storeReaderLazy), so a plan made from the old schema
** must be made again. The other connection renames :p/nick to :p/alias
** (and moves the tx mark, as any writer does): the old name then names
** nothing (no rows), the new one the attribute. */
START_TEST(test_surface_foreign_schema_change) {
  const char *zPath;
  sqlite3 *db = tHost(&zPath), *raw = NULL;
  char *z;
  for (int k = 0; k < 2; k++) {   /* plans cached, the reader's version noted */
    z = tuQuery(db, "SELECT group_concat(c0) FROM edn_q(?1, " QK ")", zPath, NULL);
    ck_assert_str_eq(z, "z");
    free(z);
    z = tuQuery(db, "SELECT edn_q(?1, " QK ")", zPath, NULL);
    ck_assert_str_eq(z, "{\"columns\":[\"?n\"],\"results\":[[\"z\"]],\"result\":[[\"z\"]]}");
    free(z);
  }
  ck_assert_int_eq(sqlite3_open(zPath, &raw), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(raw, "BEGIN; UPDATE idents SET v = ':p/alias' WHERE v = ':p/nick';"
                                     " UPDATE known_parts SET idx = idx + 1"
                                     " WHERE part = ':db.part/tx'; COMMIT", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(raw);
  z = tuQuery(db, "SELECT count(*) FROM edn_q(?1, " QK ")", zPath, NULL);
  ck_assert_str_eq(z, "0");
  free(z);
  z = tuQuery(db, "SELECT edn_q(?1, " QK ")", zPath, NULL);
  ck_assert_str_eq(z, "{\"columns\":[\"?n\"],\"results\":[],\"result\":[]}");
  free(z);
  z = tuQuery(db, "SELECT group_concat(c0) FROM edn_q(?1, '[:find ?n :where [_ :p/alias ?n]]')",
              zPath, NULL);
  ck_assert_str_eq(z, "z");
  free(z);
  free((void *)zPath);
  sqlite3_close(db);
}
END_TEST

/* Registering again, even with a statement running, is harmless (B29). */
START_TEST(test_surface_register_twice) {
  const char *zPath;
  sqlite3 *db = tHost(&zPath);
  sqlite3_stmt *pStmt = NULL;
  char *zErr = NULL, *z;
  ck_assert_int_eq(mentatRegister(db, &zErr), SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT c0 FROM edn_q(?1, " QN ") ORDER BY 1", -1, &pStmt, NULL), SQLITE_OK);
  sqlite3_bind_text(pStmt, 1, zPath, -1, SQLITE_TRANSIENT);
  ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ROW);
  ck_assert_int_eq(mentatRegister(db, &zErr), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ROW);
  ck_assert_str_eq((const char *)sqlite3_column_text(pStmt, 0), "y");
  ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_DONE);
  sqlite3_finalize(pStmt);
  z = tuQuery(db, "SELECT count(*) FROM edn_q(?1, " QN ")", zPath, NULL);
  ck_assert_str_eq(z, "2");
  free(z);
  sqlite3_free(zErr);
  free((void *)zPath);
  sqlite3_close(db);
}
END_TEST

/* Arguments are read with their length: a NUL inside tx text reaches the
** reader and fails the whole call; nothing is stored (B33). The host's own
** database file is refused. */
START_TEST(test_surface_nul_and_own_db) {
  static const char zTx[] = "[{:p/name \"ok\"}]\0[{:p/name \"smuggled\"}]";
  const char *zPath;
  sqlite3 *db = tHost(&zPath), *host = NULL;
  sqlite3_stmt *pStmt = NULL;
  char *z, *zErr = NULL;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT edn_t(?1, ?2)", -1, &pStmt, NULL), SQLITE_OK);
  sqlite3_bind_text(pStmt, 1, zPath, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(pStmt, 2, zTx, (int)sizeof zTx - 1, SQLITE_STATIC);
  ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ERROR);
  /* "[{:p/name \"ok\"}]" is columns 1-16: the NUL is column 17 */
  ck_assert_str_eq(sqlite3_errmsg(db), "edn_t: line 1 col 17: NUL byte outside a string");
  sqlite3_finalize(pStmt);
  z = tuQuery(db, "SELECT count(*) FROM edn_q(?1, '[:find ?e :where [?e :p/name \"ok\"]]')", zPath, NULL);
  ck_assert_str_eq(z, "0");
  free(z);

  ck_assert_int_eq(sqlite3_open(tuTempPath("own.db"), &host), SQLITE_OK);
  ck_assert_int_eq(mentatRegister(host, &zErr), SQLITE_OK);
  {
    char zWant[600];
    z = tuQuery(host, "SELECT edn_t(?1, '[]')", tuTempPath("own.db"), NULL);
    snprintf(zWant, sizeof zWant, "ERROR: edn_t: db_path %s is the host's own database", tuTempPath("own.db"));
    ck_assert_str_eq(z, zWant);
    free(z);
    z = tuQuery(host, "SELECT count(*) FROM edn_q(?1, " QN ")", tuTempPath("own.db"), NULL);
    snprintf(zWant, sizeof zWant, "ERROR: edn_q: db_path %s is the host's own database", tuTempPath("own.db"));
    ck_assert_str_eq(z, zWant);
    free(z);
  }
  sqlite3_close(host);

  /* Only regular files are stores (opening /dev/null as one would fail
  ** with "disk I/O error" and leave /dev/null-journal behind, a write
  ** outside the store); a directory says so instead of "unable to open database file". */
  {
    struct stat st;
    int bJournal = stat("/dev/null-journal", &st) == 0;
    z = tuQuery(db, "SELECT edn_t('/dev/null', '[]')", NULL, NULL);
    ck_assert_str_eq(z, "ERROR: edn_t: cannot open store /dev/null: not a regular file");
    free(z);
    ck_assert_msg(bJournal || stat("/dev/null-journal", &st) != 0, "/dev/null-journal was made");
    z = tuQuery(db, "SELECT edn_q('/tmp', " QN ")", NULL, NULL);
    ck_assert_str_eq(z, "ERROR: edn_q: cannot open store /tmp: a directory");
    free(z);
  }
  free((void *)zPath);
  sqlite3_close(db);
}
END_TEST

/* Native columns take each storage class through the vtab (ints, reals,
** text, blobs), and text survives the next row (max() keeps the value it
** saw: the column is copied, not lent). Collection inputs bind their
** strings without a copy; each call's own inputs must be the ones used,
** also when the cached plan runs again with other inputs and after the
** previous call's opts are gone. Expected values by hand from the data. */
START_TEST(test_surface_native_columns) {
  static const char *zTypes =
    "[{:db/ident :t/s :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}"
    " {:db/ident :t/k :db/valueType :db.type/keyword :db/cardinality :db.cardinality/one}"
    " {:db/ident :t/d :db/valueType :db.type/double :db/cardinality :db.cardinality/one}"
    " {:db/ident :t/b :db/valueType :db.type/bytes :db/cardinality :db.cardinality/one}"
    " {:db/ident :t/r :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}"
    " {:db/ident :t/n :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]";
  static const char *zRows =
    "[{:db/id \"a\" :t/s \"alpha\" :t/k :k/one :t/d 1.5 :t/b #bytes \"00ff\"}"
    " {:t/s \"beta\" :t/k :k/two :t/d -2.5 :t/b #bytes \"\" :t/r \"a\"}"
    " {:t/s \"gamma-longer-than-the-others\" :t/k :k/three :t/d 0.0 :t/n \"x\\u0000y\"}]";
  static const struct { const char *zSql; const char *zWant; } aNative[] = {
    {"SELECT group_concat(typeof(c0) || typeof(c1) || typeof(c2) || typeof(c3), ',') FROM "
     "(SELECT * FROM edn_q(?1, '[:find ?s ?k ?d ?b :where [?e :t/s ?s] [?e :t/k ?k] [?e :t/d ?d] [?e :t/b ?b]]') ORDER BY c0)",
     "texttextrealblob,texttextrealblob"},
    {"SELECT group_concat(c0 || '|' || c1 || '|' || c2 || '|' || hex(c3), ',') FROM "
     "(SELECT * FROM edn_q(?1, '[:find ?s ?k ?d ?b :where [?e :t/s ?s] [?e :t/k ?k] [?e :t/d ?d] [?e :t/b ?b]]') ORDER BY c0)",
     "alpha|:k/one|1.5|00FF,beta|:k/two|-2.5|"},
    {"SELECT max(c0) || ',' || min(c0) || ',' || max(length(c0)) FROM edn_q(?1, '[:find ?s :where [_ :t/s ?s]]')",
     "gamma-longer-than-the-others,alpha,28"},
    {"SELECT group_concat(typeof(r.c0) || ':' || (r.c0 = e.c0), ',') FROM edn_q(?1, '[:find ?r :where [_ :t/r ?r]]') r,"
     " edn_q(?1, '[:find ?e . :where [?e :t/s \"alpha\"]]') e", "integer:1"},
    /* text goes out whole with a NUL inside (the length is then explicit) */
    {"SELECT group_concat(hex(c0) || ':' || typeof(c0), ',') FROM edn_q(?1, '[:find ?n :where [_ :t/n ?n]]')",
     "780079:text"},
  };
  static const char *azIn[][2] = {
    {"{\"inputs\":[[\"beta\",\"alpha\",\"nobody\"]]}", "alpha=1.5,beta=-2.5"},
    {"{\"inputs\":[[\"gamma-longer-than-the-others\"]]}", "gamma-longer-than-the-others=0.0"},
    {"{\"inputs\":[[\"beta\",\"beta\"]]}", "beta=-2.5"},
  };
  const char *zPath;
  sqlite3 *db = tHost(&zPath);
  char zStore[512], *z;
  size_t i;
  int k;
  snprintf(zStore, sizeof zStore, "%s.types", zPath);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zStore, zTypes);
  ck_assert_str_eq(z, "268435457");
  free(z);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zStore, zRows);
  ck_assert_str_eq(z, "268435458");
  free(z);
  for (i = 0; i < sizeof aNative / sizeof aNative[0]; i++) {
    z = tuQuery(db, aNative[i].zSql, zStore, NULL);
    ck_assert_msg(strcmp(z, aNative[i].zWant) == 0, "%s: %s", aNative[i].zSql, z);
    free(z);
  }
  for (k = 0; k < 2; k++) {
    for (i = 0; i < sizeof azIn / sizeof azIn[0]; i++) {
      sqlite3_stmt *pStmt = NULL;
      char *zCopy = strdup(azIn[i][0]);
      ck_assert_int_eq(sqlite3_prepare_v2(db,
        "SELECT group_concat(c0 || '=' || c1, ',') FROM (SELECT * FROM edn_q(?1, "
        "'[:find ?s ?d :in $ [?s ...] :where [?e :t/s ?s] [?e :t/d ?d]]', ?2) ORDER BY 1)", -1, &pStmt, NULL),
        SQLITE_OK);
      sqlite3_bind_text(pStmt, 1, zStore, -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(pStmt, 2, zCopy, -1, SQLITE_STATIC);
      ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ROW);
      z = strdup((const char *)sqlite3_column_text(pStmt, 0));
      sqlite3_finalize(pStmt);
      /* the caller's buffer is scribbled over once its call is done */
      memset(zCopy, 'x', strlen(zCopy));
      free(zCopy);
      ck_assert_msg(strcmp(z, azIn[i][1]) == 0, "round %d input %zu: %s, want %s", k, i, z, azIn[i][1]);
      free(z);
    }
  }
  free((void *)zPath);
  sqlite3_close(db);
}
END_TEST

/* Every SQL object opens its store through one call context (vtab/call.c),
** so each refuses the same db_paths with the same words, in the same
** order: the path's checks first, then opts (before the store is opened, so
** a bad opts creates no file), then the store itself. edn_pull checks its
** entity's type before anything else. */
/* Registration while a statement of the host runs, as a host does that
** loads us by SELECT load_extension(...) (Tcl's smoke host): every function
** is created once, since SQLite refuses to replace one while a statement
** is active ("unable to delete/modify user-function"). */
START_TEST(test_surface_register_in_statement) {
  sqlite3 *db = NULL;
  sqlite3_stmt *pStmt = NULL;
  char *zErr = NULL;
  char *z;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT 1 UNION ALL SELECT 2", -1, &pStmt, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ROW);          /* left running */
  ck_assert_msg(mentatRegister(db, &zErr) == SQLITE_OK, "register: %s", zErr ? zErr : "?");
  sqlite3_free(zErr);
  sqlite3_finalize(pStmt);
  z = tuQuery(db, "SELECT edn_q('', '[:find ?x . :in $ ?x]', '{\"inputs\":[7]}')", NULL, NULL);
  ck_assert_str_eq(z, "{\"result\":7}");
  free(z);
  sqlite3_close(db);
}
END_TEST

START_TEST(test_surface_call_context_checks) {
  static const char *azCall[] = {
    "edn_t", "SELECT edn_t(%s, '[]')",
    "edn_q", "SELECT edn_q(%s, " QN ")",
    "edn_q", "SELECT count(*) FROM edn_q(%s, " QN ")",
    "edn_pull", "SELECT edn_pull(%s, '[*]', 1)",
  };
  static const char *azPath[] = {
    "1", "db_path must be TEXT (a file name)",
    "x'00'", "db_path must be TEXT (a file name)",
    "':memory:'", "db_path :memory: is not supported: give a file name, or '' for an in-memory store",
    "'file:a.db'", "db_path file:a.db is not supported: give a file name, or '' for an in-memory store",
    "'a' || char(0) || 'b'", "db_path contains a NUL byte",
  };
  sqlite3 *db = tuOpenHost();
  char zSql[300], zWant[300], *z;
  const char *zNew = tuTempPath("never-made.db");
  struct stat st;
  size_t i, j;
  for (i = 0; i < sizeof azCall / sizeof azCall[0]; i += 2) {
    for (j = 0; j < sizeof azPath / sizeof azPath[0]; j += 2) {
      snprintf(zSql, sizeof zSql, azCall[i + 1], azPath[j]);
      snprintf(zWant, sizeof zWant, "ERROR: %s: %s", azCall[i], azPath[j + 1]);
      z = tuQuery(db, zSql, NULL, NULL);
      ck_assert_msg(strcmp(z, zWant) == 0, "%s: got %s, want %s", zSql, z, zWant);
      free(z);
    }
  }
  /* The path is checked before opts; opts before the store is opened. */
  z = tuQuery(db, "SELECT edn_q(':memory:', " QN ", 'nope')", NULL, NULL);
  ck_assert_str_eq(z, "ERROR: edn_q: db_path :memory: is not supported: give a file name, or ''"
                      " for an in-memory store");
  free(z);
  z = tuQuery(db, "SELECT edn_q(?1, " QN ", 'nope')", zNew, NULL);
  ck_assert_str_eq(z, "ERROR: edn_q: opts: not valid JSON");
  free(z);
  z = tuQuery(db, "SELECT count(*) FROM edn_q(?1, " QN ", 'nope')", zNew, NULL);
  ck_assert_str_eq(z, "ERROR: edn_q: opts: not valid JSON");
  free(z);
  ck_assert_msg(stat(zNew, &st) != 0, "a bad opts made the store file %s", zNew);
  z = tuQuery(db, "SELECT edn_q('/nonexistent-dir/x.db', " QN ", 'nope')", NULL, NULL);
  ck_assert_str_eq(z, "ERROR: edn_q: opts: not valid JSON");
  free(z);
  /* edn_pull: the entity's type, then the path. */
  z = tuQuery(db, "SELECT edn_pull(1, '[*]', 1.5)", NULL, NULL);
  ck_assert_str_eq(z, "ERROR: edn_pull: entity must be an INTEGER entity id, or TEXT holding a"
                      " lookup ref or ident");
  free(z);
  sqlite3_close(db);
}
END_TEST

/* ---- OOM through the SQL surface (edn_q_scalar.c, edn_t.c, edn_pull.c,
** edn_q_table.c): with the n-th allocation failing, transiently or from
** then on, each statement gives exactly its answer by hand from zData or
** fails with SQLITE_NOMEM, and the host connection goes on working (each
** statement stepped by tuStepOnce). */
START_TEST(test_surface_oom) {
  static const struct { const char *zSql, *zWant; } a[] = {
    {"SELECT edn_q(?1, '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :order ?a]')",
     "{\"columns\":[\"?n\",\"?a\"],\"results\":[[\"x\",1],[\"y\",2]],\"result\":[[\"x\",1],[\"y\",2]]}"},
    {"SELECT group_concat(c0 || '=' || c1, ',') FROM (SELECT c0, c1 FROM edn_q(?1,"
     " '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]]') ORDER BY 1)", "x=1,y=2"},
    {"SELECT json_extract(edn_pull(?1, '[:p/name :p/age]', e), '$.\":p/age\"') FROM"
     " (SELECT c0 AS e FROM edn_q(?1, '[:find ?e . :where [?e :p/name \"y\"]]'))", "2"},
    /* the other shapes of the scalar document, with inputs */
    {"SELECT edn_q(?1, '[:find (count ?e) :where [?e :p/name]]')", "{\"result\":2}"},
    {"SELECT edn_q(?1, '[:find [?n ...] :in $ ?a :where [?e :p/age ?a] [?e :p/name ?n]]',"
     " '{\"inputs\":[2]}')", "{\"result\":[\"y\"]}"},
    /* the table's value column with a pull in :find, and its hidden columns
    ** echoing the arguments */
    {"SELECT group_concat(value, ';') FROM (SELECT value FROM edn_q(?1,"
     " '[:find ?n (pull ?e [:p/age]) :where [?e :p/name ?n]]') ORDER BY 1)",
     "[\"x\",{\":p/age\":1}];[\"y\",{\":p/age\":2}]"},
    {"SELECT typeof(db_path) || '|' || query || '|' || c0 FROM edn_q(?1, " QK ")",
     "text|[:find ?n :where [_ :p/nick ?n]]|z"},
    /* edn_pull of an ident given as TEXT (the entity of :p/name) */
    {"SELECT json_extract(edn_pull(?1, '[:db/ident]', ':p/name'), '$.\":db/ident\"')", ":p/name"},
    /* the same assertion each time: the first success adds the doc, later
    ** ones only their tx */
    {"SELECT json_extract(edn_t(?1, '[{:db/ident :p/nick :db/doc \"a nickname\"}]'), '$.tempids')", "{}"},
  };
  tuOomInstall();
  for (int iMode = 0; iMode < 2; iMode++) {
    const char *zPath;
    sqlite3 *db;
    tuOomOnce = iMode == 0;
    db = tHost(&zPath);
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
      int n, bDone = 0, nFail = 0, nRound = 0;
      for (n = 0; n < 20000 && !bDone; n += (n < 400 ? 1 : 7)) {
        char *zOut = NULL, *zAgain = NULL;
        int rc;
        tuOomLeft = n;
        nRound++;
        rc = tuStepOnce(db, a[i].zSql, zPath, NULL, &zOut);
        bDone = tuOomOnce ? tuOomLeft > 0 : rc == SQLITE_ROW;
        tuOomLeft = -1;
        if (rc == SQLITE_ROW) {
          ck_assert_msg(strcmp(zOut, a[i].zWant) == 0, "%s, %s failing allocation %d: got %s, want %s",
                        a[i].zSql, iMode ? "persistent" : "transient", n, zOut, a[i].zWant);
        } else {
          ck_assert_msg(tuIsNomem(rc), "%s, %s failing allocation %d: rc %d %s", a[i].zSql,
                        iMode ? "persistent" : "transient", n, rc, sqlite3_errmsg(db));
          nFail++;
          /* and the next run, without failures, is right */
          ck_assert_int_eq(tuStepOnce(db, a[i].zSql, zPath, NULL, &zAgain), SQLITE_ROW);
          ck_assert_str_eq(zAgain, a[i].zWant);
        }
        free(zOut);
        free(zAgain);
      }
      ck_assert_msg(bDone && nFail > 0, "%s: mode %d ended at %d with %d failures", a[i].zSql, iMode, n,
                    nFail);
      {
        char zSweep[64];
        snprintf(zSweep, sizeof zSweep, "sql %.44s", a[i].zSql);
        tuFaultSummary(zSweep, iMode ? "persistent" : "transient", nRound, nFail);
      }
    }
    {
      char *z = tuQuery(db, "SELECT json_extract(edn_q(?1, '[:find ?d . :where [:p/nick :db/doc ?d]]'),"
                            " '$.result')", zPath, NULL);
      ck_assert_str_eq(z, "a nickname");
      free(z);
    }
    free((void *)zPath);
    sqlite3_close(db);
    storeCacheClear();
  }
  tuOomOnce = 0;
  tuOomRemove();
}
END_TEST

static Suite *surfaceSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("surface");
  TCase *tc = tcase_create("sql");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_surface_cases, 0, (int)(sizeof aCase / sizeof aCase[0]));
  tcase_add_test(tc, test_surface_early_finalize);
  tcase_add_test(tc, test_surface_register_twice);
  tcase_add_test(tc, test_surface_plan_cache_key);
  tcase_add_test(tc, test_surface_result_buffer);
  tcase_add_test(tc, test_surface_open_cursor_spill);
  tcase_add_test(tc, test_surface_replaced_file);
  tcase_add_test(tc, test_surface_utf16_args);
  tcase_add_test(tc, test_surface_foreign_schema_change);
  tcase_add_test(tc, test_surface_nul_and_own_db);
  tcase_add_test(tc, test_surface_call_context_checks);
  tcase_add_test(tc, test_surface_register_in_statement);
  tcase_add_test(tc, test_surface_native_columns);
  suite_add_tcase(s, tc);
  tc = tuFaultCase("oom", 300);
  tcase_add_test(tc, test_surface_oom);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(surfaceSuite)
