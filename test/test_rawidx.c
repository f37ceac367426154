/*
** test_rawidx.c — the raw-index tables edn_datoms and edn_log (vtab/
** edn_datoms.c, edn_log.c, datoms_cursor.c) left open by the host: peer
** fault B25 (../shared/acceptance/peer-faults.md) for them, as
** test_surface.c's test_surface_open_cursor_spill is for edn_q. A cursor
** stepped partway and kept open while another connection commits must not
** pin the store's WAL: the writer has its rest set aside, and the cursor
** still gives exactly the rows of the snapshot it started on. Their data
** answers are in test/cases/datoms.test and log.test; this suite needs a
** second connection writing while a statement is open, which data cases
** cannot express.
*/
#include <sys/stat.h>
#include "tuhost.h"
#include "config.h"
#include "store.h"

static const char *zSchema =
    "[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
    " :db/unique :db.unique/identity}"
    " {:db/ident :p/nick :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
    " {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}"
    " {:db/ident :p/when :db/valueType :db.type/instant :db/cardinality :db.cardinality/one}]";

/* A growing text (malloc'd). */
typedef struct TBuf { char *z; size_t n, nAlloc; } TBuf;

static void tAppend(TBuf *p, const char *z) {
  size_t n = strlen(z);
  if (p->n + n + 1 > p->nAlloc) {
    p->nAlloc = (p->n + n + 1) * 2;
    p->z = realloc(p->z, p->nAlloc);
    ck_assert_ptr_nonnull(p->z);
  }
  memcpy(p->z + p->n, z, n + 1);
  p->n += n;
}

/* The current row of pStmt, every column as text (typeof:value), "|" between
** columns, ";" after the row. */
static void tRow(TBuf *p, sqlite3_stmt *pStmt) {
  for (int i = 0; i < sqlite3_column_count(pStmt); i++) {
    const char *z = (const char *)sqlite3_column_text(pStmt, i);
    char zType[16];
    snprintf(zType, sizeof zType, "%d:", sqlite3_column_type(pStmt, i));
    tAppend(p, zType);
    tAppend(p, z ? z : "NULL");
    tAppend(p, "|");
  }
  tAppend(p, ";");
}

static sqlite3_stmt *tPrepare(sqlite3 *db, const char *zSql, const char *zPath) {
  sqlite3_stmt *pStmt = NULL;
  ck_assert_msg(sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL) == SQLITE_OK, "%s: %s", zSql,
                sqlite3_errmsg(db));
  sqlite3_bind_text(pStmt, 1, zPath, -1, SQLITE_TRANSIENT);
  return pStmt;
}

/* All the rows of zSql, as tRow writes them. */
static char *tAll(sqlite3 *db, const char *zSql, const char *zPath, int *pnRow) {
  sqlite3_stmt *pStmt = tPrepare(db, zSql, zPath);
  TBuf b = {NULL, 0, 0};
  int rc;
  *pnRow = 0;
  tAppend(&b, "");
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    tRow(&b, pStmt);
    (*pnRow)++;
  }
  ck_assert_msg(rc == SQLITE_DONE, "%s: %s", zSql, sqlite3_errmsg(db));
  sqlite3_finalize(pStmt);
  return b.z;
}

/* A TRUNCATE checkpoint from a plain connection to zPath finds no reader
** holding a snapshot (it returns busy 0). */
static void tCheckpointFree(const char *zPath) {
  sqlite3 *raw = NULL;
  char *z;
  ck_assert_int_eq(sqlite3_open(zPath, &raw), SQLITE_OK);
  z = tuQuery(raw, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL);
  ck_assert_str_eq(z, "0");
  free(z);
  sqlite3_close(raw);
}

static sqlite3_int64 tWalBytes(const char *zPath) {
  char zWal[300];
  struct stat st;
  snprintf(zWal, sizeof zWal, "%s-wal", zPath);
  return stat(zWal, &st) == 0 ? (sqlite3_int64)st.st_size : 0;
}

/* The raw-index reads left open: each is stepped one row, then another host
** connection commits 300 transactions (about 19 MB of WAL when a snapshot
** pins it: the writer checkpoints at 6 MiB and asks open cursors to let go
** past 4 MiB), then the cursor is read to its end. */
static const char *azOpen[] = {
  /* a whole attribute through :aevt; the 300 new names are not in its snapshot */
  "SELECT e, a, v, tx, added FROM edn_datoms(?1, ':aevt', ':p/name')",
  /* values of several types, with the hidden columns echoed */
  "SELECT e, a, v, tx, added, \"index\", c1 FROM edn_datoms(?1, ':eavt')",
  /* the history of an attribute, asserted and retracted datoms */
  "SELECT e, a, v, tx, added FROM edn_datoms(?1, ':aevt', ':p/age', '{\"history\": true}')",
  /* the log, with each transaction's instant */
  "SELECT tx, tx_instant, e, a, v, added FROM edn_log(?1)",
  /* a log range with its bounds echoed */
  "SELECT tx, tx_instant, e, a, v, added, start_tx FROM edn_log(?1, 268435458)",
};

START_TEST(test_rawidx_open_cursor_wal) {
  static int iStore = 0;
  char zName[32];
  const char *zPath;
  sqlite3 *db = tuOpenHost(), *w = tuOpenHost();
  sqlite3_stmt *pCur, *pTx;
  char *zWant, *z;
  TBuf got = {NULL, 0, 0};
  int nWant = 0, nGot = 0, rc;
  snprintf(zName, sizeof zName, "rawidx%d.db", ++iStore);
  zPath = strdup(tuTempPath(zName));
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, zSchema);
  ck_assert_str_eq(z, "268435457");
  free(z);
  {
    /* 200 people with names, ages and instants; then half the ages changed */
    TBuf tx = {NULL, 0, 0};
    tAppend(&tx, "[");
    for (int i = 0; i < 200; i++) {
      char zE[128];
      snprintf(zE, sizeof zE, "{:db/id \"p%d\" :p/name \"s%03d\" :p/age %d"
               " :p/when #inst \"2026-01-01T00:%02d:%02dZ\"}", i, i, i, i / 60, i % 60);
      tAppend(&tx, zE);
    }
    tAppend(&tx, "]");
    z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, tx.z);
    ck_assert_str_eq(z, "268435458");
    free(z);
    free(tx.z);
    z = tuQuery(db, "SELECT edn_t(?1, (SELECT '[' || group_concat('[:db/add ' || e || ' :p/age '"
                    " || (v + 1000) || ']', ' ') || ']' FROM edn_datoms(?1, ':aevt', ':p/age')"
                    " WHERE v % 2 = 0)) IS NOT NULL", zPath, NULL);
    ck_assert_str_eq(z, "1");
    free(z);
  }
  for (int k = 0; k < (int)(sizeof azOpen / sizeof azOpen[0]); k++) {
    const char *zSql = azOpen[k];
    got.n = 0;
    tAppend(&got, "");
    /* what the cursor must give: the rows before any of the writes */
    zWant = tAll(db, zSql, zPath, &nWant);
    ck_assert_msg(nWant > 100, "%s: %d rows", zSql, nWant);
    pCur = tPrepare(db, zSql, zPath);
    ck_assert_int_eq(sqlite3_step(pCur), SQLITE_ROW);
    tRow(&got, pCur);
    nGot = 1;
    pTx = tPrepare(w, "SELECT edn_t(?1, ?2)", zPath);
    for (int i = 0; i < 300; i++) {
      char zTx[160];
      snprintf(zTx, sizeof zTx, "[{:p/name \"n%d-%d\" :p/age %d :p/nick \"%0*d\"}"
               " [:db/add [:p/name \"s%03d\"] :p/age %d]]", k, i, i, 40, i, i % 200, 5000 + i);
      sqlite3_bind_text(pTx, 2, zTx, -1, SQLITE_TRANSIENT);
      ck_assert_msg(sqlite3_step(pTx) == SQLITE_ROW, "%s", sqlite3_errmsg(w));
      sqlite3_reset(pTx);
    }
    sqlite3_finalize(pTx);
    /* The writer's checkpoints kept the WAL small although the cursor's
    ** snapshot predates all 300 commits. */
    ck_assert_msg(tWalBytes(zPath) < 8 * 1024 * 1024, "%s: WAL %lld bytes", zSql,
                  (long long)tWalBytes(zPath));
    while ((rc = sqlite3_step(pCur)) == SQLITE_ROW) {
      tRow(&got, pCur);
      nGot++;
    }
    ck_assert_msg(rc == SQLITE_DONE, "%s: %s", zSql, sqlite3_errmsg(db));
    /* exactly its snapshot's rows, in the same order */
    ck_assert_int_eq(nGot, nWant);
    ck_assert_str_eq(got.z, zWant);
    sqlite3_finalize(pCur);
    free(zWant);
    /* nothing holds a snapshot any more */
    tCheckpointFree(zPath);
  }
  free(got.z);
  sqlite3_close(w);
  sqlite3_close(db);
  free((void *)zPath);
}
END_TEST

/* A cursor that gave its last row keeps nothing: stepping to SQLITE_DONE
** gives the reader back at once (no set-aside needed), and a cursor reset
** or finalized early gives it back too. Either way a TRUNCATE checkpoint
** from a plain connection finds no reader. */
START_TEST(test_rawidx_done_and_early_close) {
  const char *zPath = strdup(tuTempPath("rawidx-done.db"));
  sqlite3 *db = tuOpenHost();
  sqlite3_stmt *pCur;
  char *z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, zSchema);
  ck_assert_str_eq(z, "268435457");
  free(z);
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, '[{:p/name \"a\"} {:p/name \"b\"}]'), '$.tx_id')",
              zPath, NULL);
  ck_assert_str_eq(z, "268435458");
  free(z);
  for (int k = 0; k < 3; k++) {
    pCur = tPrepare(db, k == 2 ? "SELECT tx FROM edn_log(?1)"
                               : "SELECT v FROM edn_datoms(?1, ':aevt', ':p/name')", zPath);
    ck_assert_int_eq(sqlite3_step(pCur), SQLITE_ROW);
    if (k == 0) {
      ck_assert_int_eq(sqlite3_step(pCur), SQLITE_ROW);
      ck_assert_int_eq(sqlite3_step(pCur), SQLITE_DONE);
    } else {
      sqlite3_reset(pCur);
    }
    tCheckpointFree(zPath);
    sqlite3_finalize(pCur);
  }
  sqlite3_close(db);
  free((void *)zPath);
}
END_TEST

/* A rest longer than what one commit lets a writer copy (200,000 rows in
** datoms_cursor.c): the first commit past the bound copies a part, the
** cursor keeps its snapshot for the rest and is asked again after the next
** commit, so it lets go within a few commits; the host reads rows in
** between (the part it has read is dropped from the copy). The rows stay
** exactly the snapshot's. */
START_TEST(test_rawidx_long_rest) {
  const char *zPath = strdup(tuTempPath("rawidx-long.db"));
  sqlite3 *db = tuOpenHost(), *w = tuOpenHost();
  sqlite3_stmt *pCur, *pTx;
  sqlite3_int64 nSum = 0, nLast = -1, nWal = 0;
  int nRow = 0, rc, bOrder = 1;
  enum { N = 230000 };
  char *z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, zSchema);
  ck_assert_str_eq(z, "268435457");
  free(z);
  {
    TBuf tx = {NULL, 0, 0};
    tAppend(&tx, "[");
    for (int i = 0; i < N; i++) {
      char zE[32];
      snprintf(zE, sizeof zE, "{:p/age %d}", i);
      tAppend(&tx, zE);
    }
    tAppend(&tx, "]");
    z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, tx.z);
    ck_assert_str_eq(z, "268435458");
    free(z);
    free(tx.z);
  }
  /* the load's WAL out of the way: a bulk commit leaves the file long
  ** (store_wal.c), and only the commits below are the cursor's to bound */
  tCheckpointFree(zPath);
  pCur = tPrepare(db, "SELECT e, v FROM edn_datoms(?1, ':aevt', ':p/age')", zPath);
  pTx = tPrepare(w, "SELECT edn_t(?1, ?2)", zPath);
  for (int i = 0; i < 600; i++) {
    char zTx[160];
    if (i % 50 == 0) {
      /* the host reads a few rows between commits */
      for (int k = 0; k < 10 && (rc = sqlite3_step(pCur)) == SQLITE_ROW; k++) {
        sqlite3_int64 e = sqlite3_column_int64(pCur, 0);
        if (e <= nLast) bOrder = 0;
        nLast = e;
        nSum += sqlite3_column_int64(pCur, 1);
        nRow++;
      }
    }
    snprintf(zTx, sizeof zTx, "[{:p/age %d :p/nick \"%0*d\"}]", N + i, 80, i);
    sqlite3_bind_text(pTx, 2, zTx, -1, SQLITE_TRANSIENT);
    ck_assert_msg(sqlite3_step(pTx) == SQLITE_ROW, "%s", sqlite3_errmsg(w));
    sqlite3_reset(pTx);
    if (tWalBytes(zPath) > nWal) nWal = tWalBytes(zPath);
  }
  sqlite3_finalize(pTx);
  /* without the set-aside 600 such commits grow it past 50 MB; the copy
  ** runs a budget per commit, so a loaded machine takes a few more of them */
  ck_assert_msg(nWal < 16 * 1024 * 1024, "WAL grew to %lld bytes", (long long)nWal);
  while ((rc = sqlite3_step(pCur)) == SQLITE_ROW) {
    sqlite3_int64 e = sqlite3_column_int64(pCur, 0);
    if (e <= nLast) bOrder = 0;
    nLast = e;
    nSum += sqlite3_column_int64(pCur, 1);
    nRow++;
  }
  ck_assert_int_eq(rc, SQLITE_DONE);
  /* every age 0..N-1 once, none of the 600 written later, in entity order */
  ck_assert_int_eq(nRow, N);
  ck_assert_int_eq(nSum, (sqlite3_int64)N * (N - 1) / 2);
  ck_assert_int_eq(bOrder, 1);
  sqlite3_finalize(pCur);
  tCheckpointFree(zPath);
  sqlite3_close(w);
  sqlite3_close(db);
  free((void *)zPath);
}
END_TEST

/* A rest larger than a cursor's memory for rows set aside
** (MENTAT_SPILL_MEMORY_BYTES, set to 1 MiB here so a few MiB of data
** stand for the default's 64 MiB): an edn_datoms and an edn_log cursor
** left open after their first row while the writer commits about 24 MB
** against a WAL bound of 8 MiB. The cursor must still let go of its
** snapshot: the WAL stays under the bound at every commit (a cursor that
** kept it grew the WAL by every commit's size, issue 19), and the cursor
** gives exactly its snapshot's rows: those read in one go before the
** commits (the log from the load on: its N datoms and its instant; the
** nicks: N, and the 300 the log round committed), the new ones in none. */
START_TEST(test_rawidx_big_rest) {
  const char *zPath = strdup(tuTempPath("rawidx-big.db"));
  sqlite3 *db = tuOpenHost(), *w = tuOpenHost();
  sqlite3_stmt *pCur, *pTx;
  sqlite3_int64 nOldMem = configSetSpillMemoryBytes(1 << 20);
  sqlite3_int64 nOldWal = configSetWalRestartBytes(8 << 20);
  enum { N = 12000 };
  static const char *azBig[] = {
    "SELECT tx, tx_instant, e, a, v, added FROM edn_log(?1, 268435458)",
    "SELECT e, a, v, tx, added FROM edn_datoms(?1, ':aevt', ':p/nick')",
  };
  char *zBig = malloc(16 * 1024 + 1), *z;
  memset(zBig, 'x', 16 * 1024);
  zBig[16 * 1024] = 0;
  z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, zSchema);
  ck_assert_str_eq(z, "268435457");
  free(z);
  {
    /* N nicks of 200 bytes each: about 4 MiB of rows set aside */
    TBuf tx = {NULL, 0, 0};
    tAppend(&tx, "[");
    for (int i = 0; i < N; i++) {
      char zE[256];
      snprintf(zE, sizeof zE, "{:p/nick \"%0*d\"}", 200, i);
      tAppend(&tx, zE);
    }
    tAppend(&tx, "]");
    z = tuQuery(db, "SELECT json_extract(edn_t(?1, ?2), '$.tx_id')", zPath, tx.z);
    ck_assert_str_eq(z, "268435458");
    free(z);
    free(tx.z);
  }
  for (int k = 0; k < 2; k++) {
    TBuf got = {NULL, 0, 0};
    sqlite3_int64 nWal = 0;
    int nWant = 0, nGot = 1, rc;
    char *zWant = tAll(db, azBig[k], zPath, &nWant);
    /* the log: the load's datoms and its instant; the nicks: those and the
    ** log round's 300 */
    ck_assert_int_eq(nWant, (k == 0 ? N + 1 : N + 300));
    tCheckpointFree(zPath);
    tAppend(&got, "");
    pCur = tPrepare(db, azBig[k], zPath);
    ck_assert_int_eq(sqlite3_step(pCur), SQLITE_ROW);
    tRow(&got, pCur);
    pTx = tPrepare(w, "SELECT edn_t(?1, ?2)", zPath);
    for (int i = 0; i < 300; i++) {
      /* 16 KiB values, about 80 KB of WAL a commit */
      char *zTx = sqlite3_mprintf("[{:p/nick \"%d-%d %s\"}]", k, i, zBig);
      sqlite3_bind_text(pTx, 2, zTx, -1, sqlite3_free);
      ck_assert_msg(sqlite3_step(pTx) == SQLITE_ROW, "%s", sqlite3_errmsg(w));
      sqlite3_reset(pTx);
      if (tWalBytes(zPath) > nWal) nWal = tWalBytes(zPath);
    }
    sqlite3_finalize(pTx);
    ck_assert_msg(nWal < 8 << 20, "%s: WAL grew to %lld bytes", azBig[k], (long long)nWal);
    while ((rc = sqlite3_step(pCur)) == SQLITE_ROW) {
      tRow(&got, pCur);
      nGot++;
    }
    ck_assert_msg(rc == SQLITE_DONE, "%s: %s", azBig[k], sqlite3_errmsg(db));
    ck_assert_int_eq(nGot, nWant);
    ck_assert_str_eq(got.z, zWant);
    sqlite3_finalize(pCur);
    tCheckpointFree(zPath);
    free(zWant);
    free(got.z);
  }
  configSetWalRestartBytes(nOldWal);
  configSetSpillMemoryBytes(nOldMem);
  free(zBig);
  sqlite3_close(w);
  sqlite3_close(db);
  free((void *)zPath);
}
END_TEST

/* Issue 19: an edn_q cursor over a cross product (N x N rows) left open
** while another connection commits: its rest is far more than one commit's
** budget sets aside, so past half the WAL bound the writer lets its
** snapshot go and the cursor ends with an error after the rows it set
** aside. The WAL stays under MENTAT_WAL_RESTART_BYTES; the cursor gives
** exactly its snapshot's rows, or a prefix of them followed by that error,
** never fewer rows without an error. */
START_TEST(test_rawidx_cross_rest) {
  const char *zPath = strdup(tuTempPath("rawidx-cross.db"));
  sqlite3 *db = tuOpenHost(), *w = tuOpenHost();
  sqlite3_stmt *pCur, *pTx;
  sqlite3_int64 nOldWal = configSetWalRestartBytes(8 << 20), nWal = 0;
  enum { N = 1500 };
  char *zBig = malloc(64 * 1024 + 1), *z;
  TBuf tx = {NULL, 0, 0};
  long long nGot = 0;
  int rc;
  memset(zBig, 'y', 64 * 1024);
  zBig[64 * 1024] = 0;
  free(tuQuery(db, "SELECT edn_t(?1, ?2)", zPath, zSchema));
  tAppend(&tx, "[");
  for (int i = 0; i < N; i++) tAppend(&tx, "{:p/age 1}");
  tAppend(&tx, "]");
  free(tuQuery(db, "SELECT edn_t(?1, ?2)", zPath, tx.z));
  free(tx.z);
  tCheckpointFree(zPath);
  pCur = tPrepare(db, "SELECT c0, c1 FROM edn_q(?1, "
                  "'[:find ?a ?b :where [?a :p/age ?x] [?b :p/age ?x]]')", zPath);
  ck_assert_int_eq(sqlite3_step(pCur), SQLITE_ROW);
  nGot = 1;
  pTx = tPrepare(w, "SELECT edn_t(?1, ?2)", zPath);
  for (int i = 0; i < 400; i++) {
    char *zTx = sqlite3_mprintf("[{:p/nick \"%d %s\"}]", i, zBig);
    sqlite3_bind_text(pTx, 2, zTx, -1, sqlite3_free);
    ck_assert_msg(sqlite3_step(pTx) == SQLITE_ROW, "%s", sqlite3_errmsg(w));
    sqlite3_reset(pTx);
    if (tWalBytes(zPath) > nWal) nWal = tWalBytes(zPath);
  }
  sqlite3_finalize(pTx);
  ck_assert_msg(nWal < 8 << 20, "WAL grew to %lld bytes", (long long)nWal);
  while ((rc = sqlite3_step(pCur)) == SQLITE_ROW) nGot++;
  if (rc == SQLITE_DONE) {
    ck_assert_int_eq(nGot, (long long)N * N);
  } else {
    z = (char *)sqlite3_errmsg(db);
    ck_assert_msg(strstr(z, "WAL bound") != NULL, "%s", z);
    ck_assert_int_lt(nGot, (long long)N * N);
  }
  sqlite3_finalize(pCur);
  configSetWalRestartBytes(nOldWal);
  free(zBig);
  sqlite3_close(w);
  sqlite3_close(db);
  free((void *)zPath);
}
END_TEST

/* Issue 19: an edn_datoms or edn_log cursor whose rest is far more than one
** commit's budget sets aside (N rows against 200,000 a part, within 100 ms
** of the writer's CPU), left open while another connection commits 256 KiB
** values (1.3 MiB of WAL each) against a WAL bound of 4 MiB: the WAL must
** stay under the bound
** at every commit, as test_rawidx_cross_rest has it for edn_q. Copying the
** rest a part per commit kept the snapshot for as many commits as the rest
** has parts. The cursor gives exactly its snapshot's rows, or a prefix of
** them followed by the error naming the WAL bound: never fewer rows
** without an error. */
START_TEST(test_rawidx_raw_cross_rest) {
  const char *zPath = strdup(tuTempPath("rawidx-rawcross.db"));
  sqlite3 *db = tuOpenHost(), *w = tuOpenHost();
  sqlite3_stmt *pCur, *pTx;
  sqlite3_int64 nOldWal = configSetWalRestartBytes(4 << 20);
  enum { N = 1000000 };
  static const char *azRaw[] = {
    "SELECT e, v FROM edn_datoms(?1, ':aevt', ':p/age')",
    "SELECT e, v FROM edn_log(?1, 268435458, 268435459)",
  };
  char *zBig = malloc(128 * 1024 + 1);
  TBuf tx = {NULL, 0, 0};
  memset(zBig, 'z', 128 * 1024);
  zBig[128 * 1024] = 0;
  free(tuQuery(db, "SELECT edn_t(?1, ?2)", zPath, zSchema));
  tAppend(&tx, "[");
  for (int i = 0; i < N; i++) {
    char zE[32];
    snprintf(zE, sizeof zE, "{:p/age %d}", i);
    tAppend(&tx, zE);
  }
  tAppend(&tx, "]");
  free(tuQuery(db, "SELECT edn_t(?1, ?2)", zPath, tx.z));
  free(tx.z);
  /* the next commit tunes the store (its managed indexes over the N
  ** datoms: 20 MiB of WAL in one commit): made before the cursors */
  free(tuQuery(db, "SELECT edn_t(?1, ?2)", zPath, "[{:p/nick \"tuned\"}]"));
  for (int k = 0; k < 2; k++) {
    sqlite3_int64 nWal = 0, nSum = 0;
    long long nGot = 0;
    int rc;
    tCheckpointFree(zPath);
    pCur = tPrepare(db, azRaw[k], zPath);
    ck_assert_int_eq(sqlite3_step(pCur), SQLITE_ROW);
    nGot = 1;
    nSum = sqlite3_column_int64(pCur, 1);
    pTx = tPrepare(w, "SELECT edn_t(?1, ?2)", zPath);
    for (int i = 0; i < 24; i++) {
      char *zTx = sqlite3_mprintf("[{:p/nick \"%d-%d %s\"}]", k, i, zBig);
      sqlite3_bind_text(pTx, 2, zTx, -1, sqlite3_free);
      ck_assert_msg(sqlite3_step(pTx) == SQLITE_ROW, "%s", sqlite3_errmsg(w));
      sqlite3_reset(pTx);
      if (tWalBytes(zPath) > nWal) nWal = tWalBytes(zPath);
    }
    sqlite3_finalize(pTx);
    ck_assert_msg(nWal < 4 << 20, "%s: WAL grew to %lld bytes", azRaw[k], (long long)nWal);
    while ((rc = sqlite3_step(pCur)) == SQLITE_ROW) {
      nSum += sqlite3_column_int64(pCur, 1);
      nGot++;
    }
    if (rc == SQLITE_DONE) {
      /* the log's range holds the ages and the tx's instant (not a long) */
      ck_assert_int_eq(nGot, k == 0 ? N : N + 1);
      if (k == 0) ck_assert_int_eq(nSum, (sqlite3_int64)N * (N - 1) / 2);
    } else {
      const char *z = sqlite3_errmsg(db);
      ck_assert_msg(strstr(z, k == 0 ? "edn_datoms: " : "edn_log: ") == z
                    && strstr(z, "WAL bound") != NULL, "%s", z);
      ck_assert_int_lt(nGot, N);
    }
    sqlite3_finalize(pCur);
  }
  configSetWalRestartBytes(nOldWal);
  free(zBig);
  sqlite3_close(w);
  sqlite3_close(db);
  free((void *)zPath);
}
END_TEST

static Suite *rawidxSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("rawidx");
  TCase *tc = tcase_create("open cursors");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_rawidx_open_cursor_wal);
  tcase_add_test(tc, test_rawidx_done_and_early_close);
  tcase_add_test(tc, test_rawidx_long_rest);
  tcase_add_test(tc, test_rawidx_big_rest);
  tcase_add_test(tc, test_rawidx_cross_rest);
  tcase_add_test(tc, test_rawidx_raw_cross_rest);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(rawidxSuite)
