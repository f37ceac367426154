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
** frees it) holds the error message, if any. */
static inline int tuOomQueryRound(Store *pStore, const char *zQuery, const char *zOpts, int n,
                                  int *pbDone, char **pzErr) {
  QueryOpts opts;
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  QueryRun *pRun = NULL;
  int rc;
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
    rc = qRunStep(pRun, pzErr);
    if (rc == SQLITE_ROW) rc = qRunRowJson(pRun, pRow);
    sqlite3_free(sqlite3_str_finish(pRow));
  }
  if (tuOomLeft > 0 && rc == SQLITE_DONE) *pbDone = 1;
  tuOomLeft = -1;
  qRunClose(pRun);
  storeReaderDone(pStore, pConn);
  schemaUnref(pSchema);
  qOptsReset(&opts);
  return rc;
}

#endif /* MENTAT_TUQUERY_H */
