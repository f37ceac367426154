/*
** tuquery.h — a test helper shared by the query suites (test_qcompile.c,
** test_qlang.c): a query's rows as one comparable string, and one round of
** a query run under an injected allocation failure (testutil.h's
** tuOomLeft). Include after testutil.h.
*/
#ifndef MENTAT_TUQUERY_H
#define MENTAT_TUQUERY_H
#include "query.h"

static inline int tuCmpStr(const void *a, const void *b) {
  return strcmp(*(char *const*)a, *(char *const*)b);
}

/* Runs zQuery (opts JSON zOpts, may be NULL) on a reader of pStore and
** returns its rows (qRunRowJson) joined by ";" — sorted unless bOrdered —
** or "ERROR: <message>" (a column function's message when the run gives
** no other). sqlite3_malloc'd. */
static inline char *tuRunQuery(Store *pStore, const char *zQuery, const char *zOpts, int bOrdered) {
  QueryOpts opts;
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  QueryRun *pRun = NULL;
  char *zErr = NULL, *zOut = NULL;
  char **azRow = NULL;
  int nRow = 0, nAlloc = 0, rc, i;
  sqlite3_str *pAll;
  qOptsInit(&opts);
  rc = qOptsParse(&opts, zOpts, zOpts ? (int)strlen(zOpts) : 0, &zErr);
  if (rc == SQLITE_OK) rc = storeReader(pStore, &pConn, &pSchema, &zErr);
  if (rc == SQLITE_OK) rc = qRunOpen(pConn, pSchema, zQuery, (int)strlen(zQuery), &opts, &pRun, &zErr);
  while (rc == SQLITE_OK) {
    sqlite3_str *pRow;
    rc = qRunStep(pRun, &zErr);
    if (rc != SQLITE_ROW) break;
    pRow = sqlite3_str_new(NULL);
    rc = qRunRowJson(pRun, pRow);
    if (nRow == nAlloc) {
      nAlloc = nAlloc ? nAlloc * 2 : 16;
      azRow = sqlite3_realloc64(azRow, sizeof(char*) * (size_t)nAlloc);
      ck_assert_ptr_nonnull(azRow);
    }
    azRow[nRow++] = sqlite3_str_finish(pRow);
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc != SQLITE_OK && zErr == NULL && qRunErrMsg(pRun)) zErr = sqlite3_mprintf("%s", qRunErrMsg(pRun));
  qRunClose(pRun);
  if (pConn) storeReaderDone(pStore, pConn);
  schemaUnref(pSchema);
  qOptsReset(&opts);
  if (!bOrdered && nRow > 1) qsort(azRow, (size_t)nRow, sizeof(char*), tuCmpStr);
  pAll = sqlite3_str_new(NULL);
  if (rc != SQLITE_OK) {
    sqlite3_str_appendf(pAll, "ERROR: %s", zErr ? zErr : "?");
  } else {
    for (i = 0; i < nRow; i++) sqlite3_str_appendf(pAll, "%s%s", i ? ";" : "", azRow[i]);
  }
  for (i = 0; i < nRow; i++) sqlite3_free(azRow[i]);
  sqlite3_free(azRow);
  sqlite3_free(zErr);
  zOut = sqlite3_str_finish(pAll);
  return zOut ? zOut : sqlite3_mprintf("%s", "");
}

/* Runs zQuery (opts JSON zOpts, may be NULL) on a reader of pStore with the
** n-th allocation from now failing, after dropping the connection's cached
** plans so the round compiles again, and steps every row into JSON. Returns
** the final code (SQLITE_DONE when it ran to the end); sets *pbDone when it
** ran to the end before the failure point was reached. *pzErr (the caller
** frees it) holds the error message, if any. When it ran to the end,
** *pzRows gets the rows as tuRunQuery gives them (sorted, joined by ";";
** malloc'd, the caller frees it with free), else NULL: a round that
** "succeeds" must still give the whole answer. */
static inline int tuOomQueryRound(Store *pStore, const char *zQuery, const char *zOpts, int n,
                                  int *pbDone, char **pzErr, char **pzRows) {
  QueryOpts opts;
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  QueryRun *pRun = NULL;
  char **azRow = NULL;
  int nRow = 0, i, rc;
  size_t nAll = 1;
  *pzRows = NULL;
  qOptsInit(&opts);
  rc = qOptsParse(&opts, zOpts, zOpts ? (int)strlen(zOpts) : 0, pzErr);
  ck_assert_int_eq(rc, SQLITE_OK);
  rc = storeReader(pStore, &pConn, &pSchema, pzErr);
  ck_assert_int_eq(rc, SQLITE_OK);
  if (pConn->pQueryCache) {
    pConn->xQueryCacheFree(pConn->pQueryCache);
    pConn->pQueryCache = NULL;
  }
  tuOomLeft = n;
  rc = qRunOpen(pConn, pSchema, zQuery, (int)strlen(zQuery), &opts, &pRun, pzErr);
  while (rc == SQLITE_OK) {
    sqlite3_str *pRow = sqlite3_str_new(NULL);
    char *zRow;
    rc = qRunStep(pRun, pzErr);
    if (rc == SQLITE_ROW) rc = qRunRowJson(pRun, pRow);
    zRow = sqlite3_str_finish(pRow);
    if (rc == SQLITE_OK) {
      /* kept with libc's allocator, outside the failures being injected */
      azRow = realloc(azRow, sizeof(char *) * (size_t)(nRow + 1));
      ck_assert_ptr_nonnull(azRow);
      azRow[nRow] = strdup(zRow ? zRow : "<no text>");
      nAll += strlen(azRow[nRow]) + 1;
      nRow++;
    }
    sqlite3_free(zRow);
  }
  if (tuOomLeft > 0 && rc == SQLITE_DONE) *pbDone = 1;
  tuOomLeft = -1;
  qRunClose(pRun);
  storeReaderDone(pStore, pConn);
  schemaUnref(pSchema);
  qOptsReset(&opts);
  if (rc == SQLITE_DONE) {
    char *z = malloc(nAll);
    ck_assert_ptr_nonnull(z);
    z[0] = 0;
    if (nRow > 1) qsort(azRow, (size_t)nRow, sizeof(char *), tuCmpStr);
    for (i = 0; i < nRow; i++) {
      if (i) strcat(z, ";");
      strcat(z, azRow[i]);
    }
    *pzRows = z;
  }
  for (i = 0; i < nRow; i++) free(azRow[i]);
  free(azRow);
  return rc;
}

/* One allocation-failure sweep of zQuery (see tuOomQueryRound), in the
** manner of SQLite's do_malloc_test: the n-th allocation fails for n = 0,
** 1, ... until a round runs to the end untouched, first with every later
** allocation failing too (persistent), then with only that one (transient:
** whatever absorbs the failure must still give the whole answer). Each round
** must give exactly zWant (the answer worked out by hand) or an
** out-of-memory code; after each failed round the same query, run without
** failures, must give zWant again (nothing cached or left behind). */
static inline void tuOomSweep1(Store *pStore, const char *zQuery, const char *zOpts,
                               const char *zWant, int nMax) {
  int n, bDone = 0, nFail = 0, nRound = 0;
  char zSweep[64];
  for (n = 0; n < nMax && !bDone; n += (n < 400 ? 1 : 7)) {
    char *zErr = NULL, *zRows = NULL;
    int rc = tuOomQueryRound(pStore, zQuery, zOpts, n, &bDone, &zErr, &zRows);
    nRound++;
    if (rc == SQLITE_DONE) {
      ck_assert_msg(strcmp(zRows, zWant) == 0, "%s, failing allocation %d: got %s, want %s",
                    zQuery, n, zRows, zWant);
    } else {
      char *zAgain;
      ck_assert_msg(tuIsNomem(rc), "%s, failing allocation %d: rc %d %s", zQuery, n, rc,
                    zErr ? zErr : "");
      nFail++;
      zAgain = tuRunQuery(pStore, zQuery, zOpts, 0);
      ck_assert_msg(strcmp(zAgain, zWant) == 0, "%s, after failing allocation %d: got %s, want %s",
                    zQuery, n, zAgain, zWant);
      sqlite3_free(zAgain);
    }
    free(zRows);
    sqlite3_free(zErr);
  }
  ck_assert_msg(bDone, "%s never completed within %d allocations", zQuery, nMax);
  ck_assert_msg(nFail > 0 || tuOomOnce, "%s: no round failed", zQuery);
  snprintf(zSweep, sizeof zSweep, "query %.40s", zQuery);
  tuFaultSummary(zSweep, tuOomOnce ? "transient" : "persistent", nRound, nFail);
}

static inline void tuOomSweep(Store *pStore, const char *zQuery, const char *zOpts,
                              const char *zWant, int nMax) {
  int bOnce = tuOomOnce;
  tuOomOnce = 0;
  tuOomSweep1(pStore, zQuery, zOpts, zWant, nMax);
  tuOomOnce = 1;
  tuOomSweep1(pStore, zQuery, zOpts, zWant, nMax);
  tuOomOnce = bOnce;
}

#endif /* MENTAT_TUQUERY_H */
