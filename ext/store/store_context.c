/*
** store_context.c — the helpers every file of the store stage shares
** (store_context.h): error replacement and one-integer statements.
**
** Takes in statements and messages; gives out SQLite codes; calls only
** SQLite. Below every other store file, so none of them calls up.
*/
#include "store_context.h"

void storeErr(char **pzErr, char *zMsg) {
  if (pzErr == NULL) { sqlite3_free(zMsg); return; }
  sqlite3_free(*pzErr);
  *pzErr = zMsg;
}

int storeStepInt(sqlite3_stmt *pStmt, sqlite3_int64 *piOut) {
  int rc = sqlite3_step(pStmt);
  *piOut = (rc == SQLITE_ROW) ? sqlite3_column_int64(pStmt, 0) : 0;
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) rc = SQLITE_OK;
  sqlite3_reset(pStmt);
  return rc;
}
