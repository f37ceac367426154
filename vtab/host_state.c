/*
** host_state.c — the eponymous-only virtual table mentat_host_state: the
** per-connection hook that frees a connection's host-store state (its
** prepared statements on the host, ext/store/store_host.h) when the
** connection closes.
**
** Takes nothing and gives no rows; calls the store stage's storeHostClose.
** No query needs the table: the call context (call.c) prepares a statement
** that names it when a connection first uses a host store, which connects
** it once per connection, and SQLite disconnects every virtual table,
** eponymous ones included, before sqlite3_close checks for unfinalized
** statements (disconnectAllVtab in sqlite3Close: "the v-table
** implementation may be storing some prepared statements internally"). Its
** xDisconnect frees the state, so a plain sqlite3_close returns SQLITE_OK
** after host-store calls.
*/
#include <string.h>
#include "host_state.h"
#include "store_host.h"

typedef struct HostTab {
  sqlite3_vtab base;
  sqlite3 *db;
} HostTab;

static int hostConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                       sqlite3_vtab **ppVtab, char **pzErr) {
  HostTab *p;
  int rc;
  (void)pAux; (void)argc; (void)argv; (void)pzErr;
  rc = sqlite3_declare_vtab(db, "CREATE TABLE x(unused)");
  if (rc != SQLITE_OK) return rc;
  p = sqlite3_malloc64(sizeof *p);
  if (p == NULL) return SQLITE_NOMEM;
  memset(p, 0, sizeof *p);
  p->db = db;
  *ppVtab = &p->base;
  return SQLITE_OK;
}

static int hostDisconnect(sqlite3_vtab *pVtab) {
  HostTab *p = (HostTab *)pVtab;
  storeHostClose(p->db);
  sqlite3_free(p);
  return SQLITE_OK;
}

static int hostBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  (void)pVtab;
  pInfo->estimatedCost = 1;
  return SQLITE_OK;
}

static int hostOpenCur(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCur) {
  sqlite3_vtab_cursor *p = sqlite3_malloc64(sizeof *p);
  (void)pVtab;
  if (p == NULL) return SQLITE_NOMEM;
  memset(p, 0, sizeof *p);
  *ppCur = p;
  return SQLITE_OK;
}

static int hostCloseCur(sqlite3_vtab_cursor *pCur) {
  sqlite3_free(pCur);
  return SQLITE_OK;
}

static int hostFilter(sqlite3_vtab_cursor *pCur, int idxNum, const char *idxStr, int argc,
                      sqlite3_value **argv) {
  (void)pCur; (void)idxNum; (void)idxStr; (void)argc; (void)argv;
  return SQLITE_OK;
}

static int hostNext(sqlite3_vtab_cursor *pCur) {
  (void)pCur;
  return SQLITE_OK;
}

static int hostEof(sqlite3_vtab_cursor *pCur) {
  (void)pCur;
  return 1;
}

static int hostColumn(sqlite3_vtab_cursor *pCur, sqlite3_context *pCtx, int i) {
  (void)pCur; (void)pCtx; (void)i;
  return SQLITE_OK;
}

static int hostRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid) {
  (void)pCur;
  *pRowid = 0;
  return SQLITE_OK;
}

static sqlite3_module hostModule = {
  0, NULL, hostConnect, hostBestIndex, hostDisconnect, NULL, hostOpenCur, hostCloseCur,
  hostFilter, hostNext, hostEof, hostColumn, hostRowid, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL
};

int hostStateRegister(sqlite3 *db) {
  return sqlite3_create_module_v2(db, "mentat_host_state", &hostModule, NULL, NULL);
}
