/*
** func_pull.c — the SQL function edn_pull(db_path, pattern, entity): the
** JSON map of one entity under a Datomic pull pattern (SPEC §2.2):
**
**   SELECT edn_pull('/data/app.db', '[:person/name {:person/friend [*]}]', 65536);
**   -> {":person/name":"Ann",":person/friend":[{...}],":db/id":65536}
**
** pull.c reads the pattern (one EDN vector) and walks it on a reader
** connection checked out from the store's pool, keeping the compiled
** pattern and the statements in that connection's pull cache, so a
** repeated call parses and prepares nothing.
*/
#include <string.h>
#include "func_common.h"
#include "pull.h"
#include "query.h"

void funcEdnPull(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const char *zPath, *zPat;
  int nPath, nPat, rc, eTypePath;
  sqlite3_int64 e;
  char *zErr = NULL;
  Store *pStore = NULL;
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  sqlite3_str *pOut = NULL, **ppBuf = NULL;
  int iStart = 0;
  FuncWatch watch;
  (void)argc;

  memset(&watch, 0, sizeof watch);
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL
      || sqlite3_value_type(argv[2]) == SQLITE_NULL)
    return;
  /* No silent conversion of '65536' or 65536.0: an entity id is an INTEGER. */
  if (sqlite3_value_type(argv[2]) != SQLITE_INTEGER) {
    rc = SQLITE_ERROR;
    zErr = sqlite3_mprintf("entity must be an INTEGER");
    goto cleanup;
  }
  e = sqlite3_value_int64(argv[2]);
  eTypePath = sqlite3_value_type(argv[0]);   /* before text conversion */
  zPath = (const char *)sqlite3_value_text(argv[0]);
  nPath = sqlite3_value_bytes(argv[0]);
  zPat = (const char *)sqlite3_value_text(argv[1]);
  nPat = sqlite3_value_bytes(argv[1]);
  if (zPath == NULL || zPat == NULL) {
    rc = SQLITE_NOMEM;
    goto cleanup;
  }
  rc = funcCheckDbPath(sqlite3_context_db_handle(pCtx), eTypePath, zPath, nPath, &zErr);
  if (rc != SQLITE_OK) goto cleanup;
  rc = storeAcquire(zPath, &pStore, &zErr);
  if (rc != SQLITE_OK) goto cleanup;
  rc = storeReader(pStore, &pConn, &pSchema, &zErr);
  if (rc != SQLITE_OK) goto cleanup;
  funcWatchBegin(&watch, sqlite3_context_db_handle(pCtx), pConn->db);
  ppBuf = qConnOutBuf(pConn);
  pOut = funcOutBegin(ppBuf, &iStart);
  if (pOut == NULL) {
    rc = SQLITE_NOMEM;
    goto cleanup;
  }
  /* PULL_WITH_DBID: edn_pull's map always carries :db/id (SPEC §2.2). The
  ** connection's pull cache is kept with its compiled plans (query.h). */
  rc = pullEntityText(pConn->db, pSchema, zPat, nPat, e, PULL_WITH_DBID, qConnPullCache(pConn),
                      pOut, &zErr);
  if (rc != SQLITE_OK) goto cleanup;
  funcOutResultJson(pCtx, "edn_pull", ppBuf, iStart);

cleanup:
  if (rc != SQLITE_OK) funcResultError(pCtx, "edn_pull", rc, zErr);
  funcWatchEnd(&watch);
  if (pConn) storeReaderDone(pStore, pConn);
  schemaUnref(pSchema);
  if (pStore) storeRelease(pStore);
  sqlite3_free(zErr);
}
