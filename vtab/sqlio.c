/*
** func_common.c — the SQL functions' shared boundary code (see
** func_common.h) and funcRegister(), which puts edn_t, edn_q, edn_pull and mentat_version
** on a host connection.
*/
#include <string.h>
#include <sys/stat.h>
#include "sqlio.h"
#include "mentat.h"

int funcFlags(void) {
  int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY;
  /* Before 3.45 the flag does not exist and older hosts reject unknown
  ** flag bits, so it is only passed to hosts that define it. */
  if (sqlite3_libversion_number() >= 3045000) flags |= SQLITE_RESULT_SUBTYPE;
  return flags;
}

int funcCheckDbPath(sqlite3 *host, int eType, const char *zPath, int n, char **pzErr) {
  const char *zMain;
  struct stat a, b;
  /* A number or blob would silently become a file named "1" or "Inf". */
  if (eType != SQLITE_TEXT) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("db_path must be TEXT (a file name)");
    return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  /* The store is opened as a plain file name, so these would create files
  ** literally named ":memory:" or "file:..."; say what to use instead. */
  if (strcmp(zPath, ":memory:") == 0 || strncmp(zPath, "file:", 5) == 0) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("db_path %s is not supported: give a file name, or '' for an "
                             "in-memory store", zPath);
    return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if ((int)strlen(zPath) != n) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("db_path contains a NUL byte");
    return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if (n == 0) return SQLITE_OK;   /* the private in-memory store */
  zMain = sqlite3_db_filename(host, "main");
  if (zMain == NULL || zMain[0] == 0) return SQLITE_OK;   /* host in memory */
  /* Same file = same device and inode: robust against relative paths,
  ** symlinks and hard links, which a text comparison would miss. A path
  ** that does not exist yet cannot be the host's (open) database. */
  if (stat(zPath, &a) != 0 || stat(zMain, &b) != 0) return SQLITE_OK;
  if (a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("db_path %s is the host's own database", zPath);
    return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  return SQLITE_OK;
}

void funcResultError(sqlite3_context *pCtx, const char *zFunc, int rc, const char *zErr) {
  char *zMsg;
  if (rc == SQLITE_NOMEM) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  if (rc == SQLITE_TOOBIG) {
    sqlite3_result_error_toobig(pCtx);
    return;
  }
  if (rc == SQLITE_OK) rc = SQLITE_ERROR;
  zMsg = sqlite3_mprintf("%s: %s", zFunc, zErr ? zErr : sqlite3_errstr(rc));
  if (zMsg == NULL) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_error(pCtx, zMsg, -1);
  sqlite3_free(zMsg);
  /* Keeps the message; lets the host see SQLITE_INTERRUPT, SQLITE_BUSY... */
  if (rc != SQLITE_ERROR) sqlite3_result_error_code(pCtx, rc);
}

void funcResultJson(sqlite3_context *pCtx, const char *zFunc, sqlite3_str *pOut) {
  int rc = sqlite3_str_errcode(pOut);
  char *z = sqlite3_str_finish(pOut);
  if (rc != SQLITE_OK || z == NULL) {
    sqlite3_free(z);
    funcResultError(pCtx, zFunc, rc == SQLITE_OK ? SQLITE_NOMEM : rc, NULL);
    return;
  }
  /* Length -1 (JSON has no NUL inside: ednPrintJson escapes it): SQLite
  ** then knows the text is terminated, and the host's sqlite3_column_text()
  ** does not copy the whole document again to add a terminator. */
  sqlite3_result_text(pCtx, z, -1, sqlite3_free);
  sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
}

sqlite3_str *funcOutBegin(sqlite3_str **ppBuf, int *piStart) {
  *piStart = 0;
  if (ppBuf == NULL) return NULL;
  if (*ppBuf && (sqlite3_str_errcode(*ppBuf) != SQLITE_OK
                 || sqlite3_str_length(*ppBuf) > FUNC_OUT_KEEP)) {
    sqlite3_free(sqlite3_str_finish(*ppBuf));
    *ppBuf = NULL;
  }
  if (*ppBuf == NULL) *ppBuf = sqlite3_str_new(NULL);
  *piStart = sqlite3_str_length(*ppBuf);
  return *ppBuf;
}

void funcOutResultJson(sqlite3_context *pCtx, const char *zFunc, sqlite3_str **ppBuf, int iStart) {
  sqlite3_str *pOut = *ppBuf;
  int rc = sqlite3_str_errcode(pOut);
  int n = sqlite3_str_length(pOut) - iStart;
  if (rc != SQLITE_OK) {
    sqlite3_free(sqlite3_str_finish(pOut));
    *ppBuf = NULL;
    funcResultError(pCtx, zFunc, rc, NULL);
    return;
  }
  if (iStart == 0 && n > FUNC_OUT_KEEP) {
    /* Too big to keep around: no copy, the string goes to SQLite. */
    *ppBuf = NULL;
    funcResultJson(pCtx, zFunc, pOut);
    return;
  }
  /* From iStart to the buffer's end, which sqlite3_str_value terminates;
  ** length -1 as in funcResultJson. */
  sqlite3_result_text(pCtx, n > 0 ? sqlite3_str_value(pOut) + iStart : "", -1, SQLITE_TRANSIENT);
  sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
}

/* VM instructions between two looks at the host's interrupt flag: a probe
** costs about as much as a few dozen instructions, so this keeps the
** overhead well under 1% while reacting within microseconds. */
#define FUNC_WATCH_OPS 10000

/* The innermost thread watch of this thread (edn_t during txTransact). */
static _Thread_local FuncWatch *funcThreadWatch = NULL;

/* Whether the watched host was interrupted: a step of "SELECT 1" on the
** host fails with SQLITE_INTERRUPT exactly then (this works on hosts older
** than sqlite3_is_interrupted). The probe is prepared at the first look,
** not when the watch begins: most calls end before the first look, and a
** prepare per call was 5% of a point lookup. */
static int funcWatchProbe(FuncWatch *pWatch) {
  if (pWatch->pProbe == NULL) {
    /* A thread watch (edn_t) has its probe ready or none: see
    ** funcWatchPrepare. */
    if (pWatch->pHost == NULL || pWatch->bProbeFailed || pWatch->bThread) return 0;
    int rc = sqlite3_prepare_v2(pWatch->pHost, "SELECT 1", -1, &pWatch->pProbe, NULL);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(pWatch->pProbe);
      pWatch->pProbe = NULL;
      /* The parser itself stops on an interrupted connection. */
      if (rc == SQLITE_INTERRUPT) return 1;
      pWatch->bProbeFailed = 1;
      return 0;
    }
  }
  sqlite3_step(pWatch->pProbe);
  return sqlite3_reset(pWatch->pProbe) == SQLITE_INTERRUPT;
}

/* pArg: a reader watch, or NULL for the thread's watch. */
static int funcWatchCheck(void *pArg) {
  FuncWatch *pWatch = pArg ? (FuncWatch *)pArg : funcThreadWatch;
  if (pWatch == NULL) return 0;
  return funcWatchProbe(pWatch);
}

/* Hosts whose SQLite is built with SQLITE_OMIT_PROGRESS_CALLBACK (the one
** better-sqlite3 bundles) leave that entry of the API table NULL: calling it
** would jump to address 0, so interrupt polling is simply off there. */
#ifdef MENTAT_STATIC
# define FUNC_HAS_PROGRESS 1
#else
# define FUNC_HAS_PROGRESS (sqlite3_api->progress_handler != 0)
#endif

#ifdef MENTAT_STATIC
# define FUNC_HAS_COMMIT_HOOK 1
#else
# define FUNC_HAS_COMMIT_HOOK (sqlite3_api->commit_hook != 0)
#endif

/* The progress handler fires only inside long statements; a transaction of
** many small statements can run to its COMMIT without one. The commit hook
** is the last word: when the host was interrupted meanwhile, returning
** non-zero turns the COMMIT into a ROLLBACK, so an interrupted edn_t never
** stores anything (peer fault B32). */
static int funcCommitCheck(void *pArg) {
  (void)pArg;
  return funcWatchCheck(NULL);
}

void funcWatchInstall(sqlite3 *pStoreDb) {
  if (FUNC_HAS_COMMIT_HOOK) sqlite3_commit_hook(pStoreDb, funcCommitCheck, NULL);
  if (!FUNC_HAS_PROGRESS) return;
  sqlite3_progress_handler(pStoreDb, FUNC_WATCH_OPS, funcWatchCheck, NULL);
}

void funcWatchPause(FuncWatch *pWatch, int bPause) {
  if (pWatch->pStoreDb == NULL || !FUNC_HAS_PROGRESS) return;
  if (bPause) sqlite3_progress_handler(pWatch->pStoreDb, 0, NULL, NULL);
  else sqlite3_progress_handler(pWatch->pStoreDb, FUNC_WATCH_OPS, funcWatchCheck, pWatch);
}

int funcWatchInterrupted(FuncWatch *pWatch) {
  return funcWatchProbe(pWatch);
}

void funcWatchBegin(FuncWatch *pWatch, sqlite3 *host, sqlite3 *pStoreDb) {
  funcWatchEnd(pWatch);
  pWatch->pHost = host;
  pWatch->bProbeFailed = 0;
  if (pStoreDb) {
    pWatch->pStoreDb = pStoreDb;
    funcWatchPause(pWatch, 0);
  } else {
    pWatch->pPrev = funcThreadWatch;
    pWatch->bThread = 1;
    funcThreadWatch = pWatch;
  }
}

int funcWatchPrepare(FuncWatch *pWatch) {
  int rc;
  if (pWatch->pProbe || pWatch->pHost == NULL) return SQLITE_OK;
  rc = sqlite3_prepare_v2(pWatch->pHost, "SELECT 1", -1, &pWatch->pProbe, NULL);
  if (rc == SQLITE_OK) return SQLITE_OK;
  sqlite3_finalize(pWatch->pProbe);
  pWatch->pProbe = NULL;
  pWatch->bProbeFailed = 1;
  return rc == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_OK;
}

void funcWatchEnd(FuncWatch *pWatch) {
  if (pWatch->pStoreDb) funcWatchInstall(pWatch->pStoreDb);
  pWatch->pStoreDb = NULL;
  if (pWatch->bThread) {
    /* Watches nest like the calls that own them. */
    if (funcThreadWatch == pWatch) funcThreadWatch = pWatch->pPrev;
    pWatch->bThread = 0;
    pWatch->pPrev = NULL;
  }
  sqlite3_finalize(pWatch->pProbe);
  pWatch->pProbe = NULL;
  pWatch->pHost = NULL;
}

/* edn_q is registered for 2 and 3 arguments (opts optional), like the
** table; SQLite then reports a wrong argument count itself. */
int funcRegister(sqlite3 *db) {
  int flags = funcFlags();
  int rc = sqlite3_create_function_v2(db, "edn_t", 2, flags, NULL, funcEdnT, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "edn_q", 2, flags, NULL, funcEdnQ, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "edn_q", 3, flags, NULL, funcEdnQ, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "edn_pull", 3, flags, NULL, funcEdnPull, NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = funcVersionRegister(db);
  return rc;
}
