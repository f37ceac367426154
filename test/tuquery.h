/*
** tuquery.h — a test helper shared by the query suites (test_qcompile.c,
** test_qlang.c): one round of a query run under an injected allocation
** failure (testutil.h's tuOomLeft). Include after testutil.h and query.h.
*/
#ifndef MENTAT_TUQUERY_H
#define MENTAT_TUQUERY_H
#include "query.h"

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
