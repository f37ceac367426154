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
** unknown. The result's type follows its SQL type: integer and real are
** numbers, text a string, blob bytes, NULL no binding (a predicate holds
** when the result is neither NULL nor 0, SQL's own truth, since SQL
** functions return no booleans).
*/
#include <string.h>
#include "query_compile_scope.h"

/* A plain SQL identifier that is not one of the extension's own names. */
static int qcHostName(const char *z) {
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

/* Is zName(nArg arguments) callable on host? */
static int qcHostHas(sqlite3 *host, const char *zName, int nArg) {
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

int qcHostCall(QCtx *pX, const QClause *pCl, int bPredicate, char **pzExpr, char **pzTag) {
  QComp *pC = pX->pC;
  sqlite3 *host = pC->pOpts ? pC->pOpts->pHostDb : NULL;
  const EdnValue *const *aArg;
  sqlite3_str *pOut;
  char *zCall;
  int nArg;
  *pzExpr = NULL;
  *pzTag = NULL;
  if (host == NULL || !qcHostName(pCl->zName)) return 0;
  qcSkipSrc(pCl, &aArg, &nArg);
  if (!qcHostHas(host, pCl->zName, nArg)) return 0;
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
