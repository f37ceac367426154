/*
** entry.c — the extension's entry point and the registration of its SQL
** surface on a host connection (its header is the public mentat.h).
**
**   sqlite3> .load ./libmentat_sqlite
**   >>> con.load_extension("./libmentat_sqlite")
**
** Takes a host connection; gives it edn_t, edn_q (scalar and table),
** edn_pull, edn_datoms, edn_log, mentat_version and the edn_view module,
** and sets the hook every new store connection runs. Calls the SQL objects'
** files, the query stage's store functions and the store cache.
**
** SQLite derives the entry point from the file name ("libmentat_sqlite" →
** sqlite3_mentatsqlite_init). It is the only symbol the library exports
** (the rest is built with -fvisibility=hidden), so a copy under another
** name loads with the entry point given explicitly:
**   .load ./edn.so sqlite3_mentatsqlite_init
**
** HOW IT WORKS
** The entry point checks the host's version, then mentatRegister() adds
** the functions of mentatFuncs and the edn_q table. Loading twice on one
** connection must be harmless even while a statement of the first load is
** running (peer fault B29): SQLite refuses to replace a function
** in use ("unable to delete/modify user-function due to active
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
#include "edn_datoms.h"
#include "edn_log.h"
#include "edn_pull.h"
#include "edn_q.h"
#include "edn_t.h"
#include "edn_view.h"
#include "host_state.h"
#include "mentat_version.h"
#include "call.h"
#include "interrupt.h"
#include "query.h"
#include "query_funcs.h"
#include "store.h"

/* The SQL functions, in the order they are registered. The store functions
** read and write files, so they are never deterministic and DIRECTONLY:
** views and triggers cannot call them (../shared/SPEC.md §2). edn_q takes
** 2 and 3 arguments (opts optional), like the table; SQLite then reports a
** wrong argument count itself. */
static const struct MentatFunc {
  const char *zName;
  int nArg;
  int flags;                /* besides SQLITE_UTF8 and the subtype flag */
  void (*xFunc)(sqlite3_context *, int, sqlite3_value **);
} mentatFuncs[] = {
  {"edn_t", 2, SQLITE_DIRECTONLY, edntFunc},
  {"edn_q", 2, SQLITE_DIRECTONLY, ednqScalarFunc},
  {"edn_q", 3, SQLITE_DIRECTONLY, ednqScalarFunc},
  {"edn_pull", 3, SQLITE_DIRECTONLY, ednpullFunc},
  {"edn_pull", 4, SQLITE_DIRECTONLY, ednpullFunc},
  {"mentat_version", 0, SQLITE_DETERMINISTIC, versionFunc},
  {"mentat_version", 1, SQLITE_DETERMINISTIC, versionFunc},
};

static pthread_once_t mentatHookOnce = PTHREAD_ONCE_INIT;

/* Host connections that have the extension registered. When the last one
** closes, the cached stores are closed too: the host may unload the library
** right after (sqlite3_close dlcloses extensions), and stores left open
** would be leaked connections holding files, with function pointers into
** unmapped code. A host that keeps one connection keeps its cache. */
static pthread_mutex_t mentatMutex = PTHREAD_MUTEX_INITIALIZER;
static int mentatHosts = 0;

/* The edn_q module's destructor: runs when a host connection closes (or
** the module is replaced, which we avoid; see mentatRegistered). */
static void mentatHostGone(void *pHost) {
  int n;
  vcallHostGone((sqlite3 *)pHost);
  pthread_mutex_lock(&mentatMutex);
  n = --mentatHosts;
  pthread_mutex_unlock(&mentatMutex);
  /* Only stores no caller holds are dropped, so a connection opened
  ** meanwhile loses nothing but a warm cache. */
  if (n == 0) storeCacheClear();
}

/* Runs on every new store connection: the query layer's helper functions,
** and the progress handler through which host interrupts reach it. */
static int mentatConnHook(sqlite3 *db) {
  int rc = qfRegister(db);
  if (rc == SQLITE_OK) intrInstall(db);
  return rc;
}

/* The hook is process-wide state, so it is set exactly once. */
static void mentatSetHook(void) {
  storeSetConnHook(mentatConnHook);
  storeSetCommitVeto(intrThreadInterrupted);
}

/* True when edn_t and the edn_q module are already on db. Any failure of
** the probe (an authorizer denying pragmas, OOM) answers "no", and the
** caller registers, which is the safe default. */
static int mentatRegistered(sqlite3 *db) {
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

/* Registers mentatFuncs on db; the first failing code (SQLITE_BUSY when a
** function of that name is in use). */
static int mentatRegisterFuncs(sqlite3 *db) {
  int base = SQLITE_UTF8;
  size_t i;
  int rc = SQLITE_OK;
  /* The results carry the JSON subtype, which 3.45+ wants declared. Before
  ** 3.45 the flag does not exist and older hosts reject unknown flag bits,
  ** so it is only passed to hosts that define it. */
  if (sqlite3_libversion_number() >= 3045000) base |= SQLITE_RESULT_SUBTYPE;
  for (i = 0; rc == SQLITE_OK && i < sizeof mentatFuncs / sizeof mentatFuncs[0]; i++) {
    const struct MentatFunc *pF = &mentatFuncs[i];
    rc = sqlite3_create_function_v2(db, pF->zName, pF->nArg, base | pF->flags, NULL, pF->xFunc,
                                    NULL, NULL, NULL);
  }
  return rc;
}

int mentatRegister(sqlite3 *db, char **pzErr) {
  int rc;
  if (sqlite3_libversion_number() < MENTAT_MIN_SQLITE) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("libmentat_sqlite needs SQLite 3.30.0 or newer; this host has %s",
                             sqlite3_libversion());
    return SQLITE_ERROR;
  }
  if (pthread_once(&mentatHookOnce, mentatSetHook) != 0) return SQLITE_ERROR;
  if (mentatRegistered(db)) return SQLITE_OK;
  rc = mentatRegisterFuncs(db);
  /* BUSY: the functions exist and a statement is running (a host without
  ** the introspection pragmas). Then the module is left alone as well:
  ** replacing it would drop the eponymous table under a running cursor. */
  if (rc == SQLITE_BUSY) return SQLITE_OK;
  if (rc == SQLITE_OK) {
    pthread_mutex_lock(&mentatMutex);
    mentatHosts++;
    pthread_mutex_unlock(&mentatMutex);
    /* On failure SQLite calls mentatHostGone itself, undoing the count. */
    rc = ednqTableRegister(db, mentatHostGone);
  }
  if (rc == SQLITE_OK) rc = eddRegister(db);
  if (rc == SQLITE_OK) rc = ednlRegister(db);
  /* Host stores run the query layer's SQL on the host connection itself,
  ** so its helper functions are registered there too, now, before any of
  ** our statements runs there (a function created later must not replace
  ** one in use). */
  if (rc == SQLITE_OK) rc = hostStateRegister(db);
  if (rc == SQLITE_OK) rc = eviewRegister(db);
  if (rc == SQLITE_OK) rc = qfRegister(db);
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
  ** only the first load writes it: a rewrite would race with their reads. */
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
