/*
** main.c — the extension's entry point and the registration of its SQL
** surface on a host connection.
**
**   sqlite3> .load ./libmentat_sqlite
**   >>> con.load_extension("./libmentat_sqlite")
**
** SQLite derives the entry point from the file name ("libmentat_sqlite" →
** sqlite3_mentatsqlite_init). It is the only symbol the library exports
** (the rest is built with -fvisibility=hidden), so a copy under another
** name loads with the entry point given explicitly:
**   .load ./edn.so sqlite3_mentatsqlite_init
**
** HOW IT WORKS
** The entry point checks the host's version, then mentatRegister() adds
** edn_t, edn_q, edn_pull (func_*.c) and the edn_q table (vtab/edn_q.c).
** Loading twice on one connection must be harmless even while a statement
** of the first load is running (peer fault B29): SQLite refuses to replace a
** function in use ("unable to delete/modify user-function due to active
** statements") and replacing the module would drop the eponymous table
** under a running cursor, so registration is skipped when the connection
** already has both edn_t and the edn_q module.
*/
#include <pthread.h>
#include "sqlite_api.h"
#ifndef MENTAT_STATIC
SQLITE_EXTENSION_INIT1
#endif
#include "mentat.h"
#include "query.h"
#include "sqlio.h"

static pthread_once_t mainHookOnce = PTHREAD_ONCE_INIT;

/* Host connections that have the extension registered. When the last one
** closes, the cached stores are closed too: the host may unload the library
** right after (sqlite3_close dlcloses extensions), and stores left open
** would be leaked connections holding files, with function pointers into
** unmapped code. A host that keeps one connection keeps its cache. */
static pthread_mutex_t mainMutex = PTHREAD_MUTEX_INITIALIZER;
static int mainHosts = 0;

/* The edn_q module's destructor: runs when a host connection closes (or
** the module is replaced, which we avoid; see mainRegistered). */
static void mainHostGone(void *pUnused) {
  int n;
  (void)pUnused;
  pthread_mutex_lock(&mainMutex);
  n = --mainHosts;
  pthread_mutex_unlock(&mainMutex);
  /* Only stores no caller holds are dropped, so a connection opened
  ** meanwhile loses nothing but a warm cache. */
  if (n == 0) storeCacheClear();
}

/* Runs on every new store connection: the query layer's helper functions,
** and the progress handler through which host interrupts reach it. */
static int mainConnHook(sqlite3 *db) {
  int rc = qRegisterStoreFunctions(db);
  if (rc == SQLITE_OK) funcWatchInstall(db);
  return rc;
}

/* The hook is process-wide state, so it is set exactly once. */
static void mainSetHook(void) {
  storeSetConnHook(mainConnHook);
}

/* True when edn_t and the edn_q module are already on db. Any failure of
** the probe (an authorizer denying pragmas, OOM) answers "no", and the
** caller registers, which is the safe default. */
static int mainRegistered(sqlite3 *db) {
  sqlite3_stmt *pStmt = NULL;
  int bYes = 0;
  int rc = sqlite3_prepare_v2(db,
      "SELECT (SELECT count(*) FROM pragma_function_list WHERE name = 'edn_t')"
      "   AND (SELECT count(*) FROM pragma_module_list WHERE name = 'edn_q')",
      -1, &pStmt, NULL);
  if (rc == SQLITE_OK && sqlite3_step(pStmt) == SQLITE_ROW) bYes = sqlite3_column_int(pStmt, 0);
  sqlite3_finalize(pStmt);
  return bYes;
}

int mentatRegister(sqlite3 *db, char **pzErr) {
  int rc;
  if (sqlite3_libversion_number() < MENTAT_MIN_SQLITE) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("libmentat_sqlite needs SQLite 3.30.0 or newer; this host has %s",
                             sqlite3_libversion());
    return SQLITE_ERROR;
  }
  if (pthread_once(&mainHookOnce, mainSetHook) != 0) return SQLITE_ERROR;
  if (mainRegistered(db)) return SQLITE_OK;
  rc = funcRegister(db);
  /* BUSY: the functions exist and a statement is running (a host without
  ** the introspection pragmas). Then the module is left alone as well:
  ** replacing it would drop the eponymous table under a running cursor. */
  if (rc == SQLITE_BUSY) return SQLITE_OK;
  if (rc == SQLITE_OK) {
    pthread_mutex_lock(&mainMutex);
    mainHosts++;
    pthread_mutex_unlock(&mainMutex);
    /* On failure SQLite calls mainHostGone itself, undoing the count. */
    rc = ednqTableRegister(db, mainHostGone);
  }
  if (rc != SQLITE_OK) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("libmentat_sqlite: cannot register its functions: %s",
                             sqlite3_errmsg(db));
  }
  return rc;
}

/* The entry point (see the file comment). pzErrMsg gets a
** sqlite3_malloc'd message, which the host frees. */
#ifdef _WIN32
__declspec(dllexport)
#endif
__attribute__((visibility("default")))
int sqlite3_mentatsqlite_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  char *zErr = NULL;
  int rc;
#ifndef MENTAT_STATIC
  /* Every host connection loads the extension; other threads may be
  ** running its functions meanwhile. The table is the same each time, so
  ** only the first load writes it (ThreadSanitizer flagged the rewrite). */
  if (sqlite3_api != pApi) SQLITE_EXTENSION_INIT2(pApi);
#else
  (void)pApi;
#endif
  rc = mentatRegister(db, &zErr);
  if (rc != SQLITE_OK && pzErrMsg) {
    *pzErrMsg = zErr;
    zErr = NULL;
  }
  sqlite3_free(zErr);
  return rc;
}
