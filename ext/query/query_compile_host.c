/*
** query_compile_host.c — the host's own SQL functions in queries on a host
** store (SPEC.md §3a): Datomic calls any function on the
** classpath; in SQLite's terms, a query on a host store may call any SQL
** function registered on the host connection
** (`[(my_score ?title ?n) ?s]` after `con.create_function("my_score", 2, ...)`).
**
** Only for names no built-in has, only on host stores (the query's SQL runs
** on the host connection there; a file store's connections have none of the
** host's functions), and only plain SQL identifiers. The extension's own
** functions (edn_*, mentat_*) are not callable this way. The function is
** looked up by preparing a call with the clause's argument count on the
** host, so "no such function" and a wrong count both leave the name
** unknown. An SQL keyword is no function name, as its call may parse as
** an operator (not(x) is NOT x): unknown too, except like, glob, match,
** regexp and replace, which SQLite's parser reads as function calls. A
** function that would let a query act outside the store (load a library,
** read or write files, run SQL text) is refused with an error naming it. The result's type follows its SQL type: integer and real are
** numbers, text a string, blob bytes, NULL no binding (a predicate holds
** when the result is neither NULL nor 0, SQL's own truth, since SQL
** functions return no booleans). Before the first edn_t a host database
** holds no store, and the read runs on the private in-memory store's
** reader: the plan records the functions it calls, and qchProxies
** registers there proxies that call the host's.
*/
#include <stdlib.h>
#include <string.h>
#include "query_compile_host.h"
#include "query_compile_scope.h"

/* A plain SQL identifier that is not one of the extension's own names. */
static int qchName(const char *z) {
  int i;
  if (z == NULL || !((z[0] >= 'a' && z[0] <= 'z') || (z[0] >= 'A' && z[0] <= 'Z') || z[0] == '_')) {
    return 0;
  }
  for (i = 1; z[i]; i++) {
    char c = z[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
      return 0;
    }
  }
  if (sqlite3_strnicmp(z, "edn_", 4) == 0 || sqlite3_strnicmp(z, "mentat_", 7) == 0) return 0;
  return i <= 64;
}

/* Keywords SQLite's parser reads as a function's name before "(": the
** rest (not, and, is, in, case, cast, exists, ...) make an operator or
** other syntax of the call. */
static int qchKeywordFn(const char *z) {
  static const char *const azFn[] = {"like", "glob", "match", "regexp", "replace"};
  for (size_t i = 0; i < sizeof azFn / sizeof azFn[0]; i++) {
    if (sqlite3_stricmp(z, azFn[i]) == 0) return 1;
  }
  return 0;
}

/* Why zName, a function known to SQLite or its shell, would act outside
** the store, or NULL: it is refused even when registered, as a query's
** text may come from someone other than the host. */
static const char *qchOutside(const char *z) {
  static const char *const az[][2] = {
      {"load_extension", "it loads a shared library into the process"},
      {"fts3_tokenizer", "it reads and installs tokenizers by pointer"},
      {"fts5", "it hands out the FTS5 API's pointer"},
      {"readfile", "it reads a file"},
      {"writefile", "it writes a file"},
      {"edit", "it runs an editor"},
      {"eval", "it runs SQL text"},
      {"sqlite_dbpage", "it reads and writes database pages"},
      {"shell_add_schema", "it belongs to the shell"},
  };
  for (size_t i = 0; i < sizeof az / sizeof az[0]; i++) {
    if (sqlite3_stricmp(z, az[i][0]) == 0) return az[i][1];
  }
  return NULL;
}

/* Is zName(nArg arguments) callable on host? */
static int qchHas(sqlite3 *host, const char *zName, int nArg) {
  sqlite3_str *pSql = sqlite3_str_new(NULL);
  sqlite3_stmt *pStmt = NULL;
  char *zSql;
  int rc;
  sqlite3_str_appendf(pSql, "SELECT %s(", zName);
  for (int i = 0; i < nArg; i++) sqlite3_str_appendall(pSql, i ? ",NULL" : "NULL");
  sqlite3_str_appendall(pSql, ")");
  zSql = sqlite3_str_finish(pSql);
  if (zSql == NULL) return 0;
  rc = sqlite3_prepare_v2(host, zSql, -1, &pStmt, NULL);
  sqlite3_finalize(pStmt);
  sqlite3_free(zSql);
  return rc == SQLITE_OK;
}

int qchCall(QCtx *pX, const QClause *pCl, int bPredicate, char **pzExpr, char **pzTag) {
  QComp *pC = pX->pC;
  sqlite3 *host = pC->pOpts ? pC->pOpts->pHostDb : NULL;
  const EdnValue *const *aArg;
  sqlite3_str *pOut;
  char *zCall;
  int nArg;
  const char *zWhy;
  *pzExpr = NULL;
  *pzTag = NULL;
  if (host == NULL || !qchName(pCl->zName)) return 0;
  if (sqlite3_keyword_check(pCl->zName, (int)strlen(pCl->zName)) && !qchKeywordFn(pCl->zName)) {
    return 0;
  }
  zWhy = qchOutside(pCl->zName);
  if (zWhy) {
    qcErr(pC, pCl->pForm, "%s is not callable from a query: %s, outside the store", pCl->zName, zWhy);
    return 1;
  }
  qcSkipSrc(pCl, &aArg, &nArg);
  if (!qchHas(host, pCl->zName, nArg)) return 0;
  if (pC->pHostFns == NULL) pC->pHostFns = sqlite3_str_new(NULL);
  sqlite3_str_appendf(pC->pHostFns, "%s\x01%d\x01", pCl->zName, nArg);
  pOut = sqlite3_str_new(NULL);
  sqlite3_str_appendf(pOut, "%s(", pCl->zName);
  for (int i = 0; i < nArg; i++) {
    ValueType vt;
    char *zTag = NULL;
    char *zA = qcTermExpr(pX, aArg[i], &vt, &zTag, "function");
    sqlite3_free(zTag);
    if (zA == NULL) {
      sqlite3_free(sqlite3_str_finish(pOut));
      return 1;
    }
    sqlite3_str_appendf(pOut, "%s%s", i ? ", " : "", zA);
    sqlite3_free(zA);
  }
  sqlite3_str_appendall(pOut, ")");
  zCall = sqlite3_str_finish(pOut);
  if (zCall == NULL) {
    qcNoMem(pC);
    return 1;
  }
  if (bPredicate) {
    *pzExpr = sqlite3_mprintf("coalesce(%s, 0) != 0", zCall);
  } else {
    *pzExpr = sqlite3_mprintf("%s", zCall);
    *pzTag = sqlite3_mprintf("(CASE typeof(%s) WHEN 'integer' THEN %d WHEN 'real' THEN %d"
                             " WHEN 'text' THEN %d WHEN 'blob' THEN %d END)",
                             zCall, TAG_NUMBER, TAG_NUMBER, TAG_STRING, TAG_BYTES);
    if (*pzTag == NULL && *pzExpr) {
      sqlite3_free(*pzExpr);
      *pzExpr = NULL;
    }
  }
  sqlite3_free(zCall);
  if (*pzExpr == NULL) qcNoMem(pC);
  return 1;
}

/* A proxy's function: its name and argument count, and the slot naming the
** host of the call being served. */
typedef struct QcProxy {
  sqlite3 **ppHost;
  int nArg;
  char zName[1];
} QcProxy;

/* Calls the host's function of the proxy's name with the arguments. */
static void qcProxyFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const QcProxy *pP = sqlite3_user_data(pCtx);
  sqlite3 *host = *pP->ppHost;
  sqlite3_stmt *pStmt = NULL;
  sqlite3_str *pSql;
  char *zSql;
  int rc, i;
  if (host == NULL) {
    /* a step of the reader from another thread (a writer setting rows aside) */
    char *z = sqlite3_mprintf("the host's function %s cannot run here", pP->zName);
    sqlite3_result_error(pCtx, z ? z : "out of memory", -1);
    sqlite3_free(z);
    return;
  }
  pSql = sqlite3_str_new(NULL);
  sqlite3_str_appendf(pSql, "SELECT %s(", pP->zName);
  for (i = 0; i < argc; i++) sqlite3_str_appendall(pSql, i ? ",?" : "?");
  sqlite3_str_appendall(pSql, ")");
  zSql = sqlite3_str_finish(pSql);
  if (zSql == NULL) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  rc = sqlite3_prepare_v2(host, zSql, -1, &pStmt, NULL);
  sqlite3_free(zSql);
  for (i = 0; rc == SQLITE_OK && i < argc; i++) rc = sqlite3_bind_value(pStmt, i + 1, argv[i]);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    sqlite3_result_value(pCtx, sqlite3_column_value(pStmt, 0));
  } else if (rc == SQLITE_NOMEM) {
    sqlite3_result_error_nomem(pCtx);
  } else {
    sqlite3_result_error(pCtx, sqlite3_errmsg(host), -1);
    sqlite3_result_error_code(pCtx, rc == SQLITE_DONE ? SQLITE_ERROR : rc);
  }
  sqlite3_finalize(pStmt);
}

int qchProxies(sqlite3 *db, sqlite3 **ppHost, const char *zFns, char **pzErr) {
  const char *z = zFns;
  while (z && *z) {
    const char *zName = z, *zSep = strchr(z, '\x01');
    int nName = (int)(zSep - z), nArg = atoi(zSep + 1), rc;
    QcProxy *pP;
    z = strchr(zSep + 1, '\x01') + 1;
    pP = sqlite3_malloc64(sizeof(QcProxy) + (size_t)nName);
    if (pP == NULL) return SQLITE_NOMEM;
    pP->ppHost = ppHost;
    pP->nArg = nArg;
    memcpy(pP->zName, zName, (size_t)nName);
    pP->zName[nName] = 0;
    /* Registered once per reader: replacing a function would expire every
    ** statement the reader has prepared. */
    if (qchHas(db, pP->zName, nArg)) {
      sqlite3_free(pP);
      continue;
    }
    rc = sqlite3_create_function_v2(db, pP->zName, nArg, SQLITE_UTF8, pP, qcProxyFunc, NULL, NULL,
                                    sqlite3_free);
    if (rc != SQLITE_OK) {
      sqlite3_free(*pzErr);
      *pzErr = sqlite3_mprintf("cannot call the host's function %s: %s", pP->zName, sqlite3_errmsg(db));
      return rc;
    }
  }
  return SQLITE_OK;
}
