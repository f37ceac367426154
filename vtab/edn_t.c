/*
** edn_t.c — the SQL function edn_t(db_path, tx_edn): transacts EDN tx-data
** on a store and returns the JSON tx report (../shared/SPEC.md §2, §5):
**
**   SELECT edn_t('/data/app.db', '[{:person/name "Ann"}]');
**   -> {"tx_id":268435457,"tx_instant":"2025-...Z","tempids":{}}
**
** Takes the two arguments; gives the report or an error with the "edn_t: "
** prefix. The transactor (tx.h) does the work on a store the call context
** (call.h) opens; a failed transaction leaves the store unchanged (the
** transactor rolls back), so there is nothing to undo here.
*/
#include <string.h>
#include "edn_t.h"
#include "call.h"
#include "sqlio.h"
#include "tx.h"

void edntFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  sqlite3 *host = sqlite3_context_db_handle(pCtx);
  const char *zEdn;
  int nEdn, rc;
  char *zErr = NULL;
  sqlite3_str *pOut = NULL;
  VCall call;
  (void)argc;

  memset(&call, 0, sizeof call);
  /* SQL NULL in a required argument gives NULL, as SQL functions do. */
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL)
    return;
  rc = sqlioText(argv[1], &zEdn, &nEdn);
  if (rc != SQLITE_OK) goto cleanup;
  /* An interrupt of the host rolls the transaction back. */
  rc = vcallBegin(&call, host, argv[0], VCALL_WRITE, NULL, NULL, &zErr);
  if (rc != SQLITE_OK) goto cleanup;
  pOut = sqlite3_str_new(host);
  rc = txTransact(call.pStore, zEdn, nEdn, pOut, &zErr);
  if (rc != SQLITE_OK && vcallInterrupted(&call)) {
    /* The store rolled back (its commit hook saw the interrupt). */
    rc = SQLITE_INTERRUPT;
    sqlite3_free(zErr);
    zErr = sqlite3_mprintf("interrupted; nothing was stored");
  }
  if (rc != SQLITE_OK) goto cleanup;
  sqlioJson(pCtx, "edn_t", pOut);
  pOut = NULL;

cleanup:
  if (rc != SQLITE_OK) sqlioError(pCtx, "edn_t", rc, zErr);
  sqlite3_free(sqlite3_str_finish(pOut));
  vcallEnd(&call);
  sqlite3_free(zErr);
}
