/*
** func_t.c — the SQL function edn_t(db_path, tx_edn): transacts EDN tx-data
** on a store and returns the JSON tx report (SPEC §2, §5):
**
**   SELECT edn_t('/data/app.db', '[{:person/name "Ann"}]');
**   -> {"tx_id":268435457,"tx_instant":"2025-...Z","tempids":{}}
**
** The transactor (tx.c) does the work; this file only checks arguments,
** borrows the store from the process-wide cache and reports errors with the
** "edn_t: " prefix. A failed transaction leaves the store unchanged (the
** transactor rolls back), so there is nothing to undo here.
*/
#include <string.h>
#include "sqlio.h"
#include "tx.h"

void funcEdnT(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const char *zPath, *zEdn;
  int nPath, nEdn, rc, eTypePath;
  char *zErr = NULL;
  Store *pStore = NULL;
  sqlite3_str *pOut = NULL;
  FuncWatch watch;
  (void)argc;

  memset(&watch, 0, sizeof watch);
  /* SQL NULL in a required argument gives NULL, as SQL functions do. */
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL)
    return;
  eTypePath = sqlite3_value_type(argv[0]);   /* before text conversion */
  zPath = (const char *)sqlite3_value_text(argv[0]);
  nPath = sqlite3_value_bytes(argv[0]);
  /* Explicit length: a NUL inside the text reaches the reader, which
  ** rejects it, instead of silently cutting the input (peer fault B33). */
  zEdn = (const char *)sqlite3_value_text(argv[1]);
  nEdn = sqlite3_value_bytes(argv[1]);
  if (zPath == NULL || zEdn == NULL) {
    rc = SQLITE_NOMEM;
    goto cleanup;
  }
  rc = funcCheckDbPath(sqlite3_context_db_handle(pCtx), eTypePath, zPath, nPath, &zErr);
  if (rc != SQLITE_OK) goto cleanup;
  rc = storeAcquire(zPath, &pStore, &zErr);
  if (rc != SQLITE_OK) goto cleanup;
  pOut = sqlite3_str_new(sqlite3_context_db_handle(pCtx));
  /* The transactor picks the writer connection itself, so the watch goes
  ** with this thread: an interrupt of the host rolls the transaction back. */
  funcWatchBegin(&watch, sqlite3_context_db_handle(pCtx), NULL);
  rc = funcWatchPrepare(&watch);
  if (rc != SQLITE_OK) goto cleanup;
  rc = txTransact(pStore, zEdn, nEdn, pOut, &zErr);
  if (rc != SQLITE_OK && funcWatchInterrupted(&watch)) {
    /* The store rolled back (its commit hook saw the interrupt). */
    rc = SQLITE_INTERRUPT;
    sqlite3_free(zErr);
    zErr = sqlite3_mprintf("interrupted; nothing was stored");
  }
  funcWatchEnd(&watch);
  if (rc != SQLITE_OK) goto cleanup;
  funcResultJson(pCtx, "edn_t", pOut);
  pOut = NULL;

cleanup:
  funcWatchEnd(&watch);
  if (rc != SQLITE_OK) funcResultError(pCtx, "edn_t", rc, zErr);
  sqlite3_free(sqlite3_str_finish(pOut));
  if (pStore) storeRelease(pStore);
  sqlite3_free(zErr);
}
