/*
** query_compile_clause.c — not/not-join, or/or-join/and, and the variables
** a clause mentions (query_compile.h explains scopes and variables).
**
** HOW IT WORKS
** not/not-join are NOT EXISTS subqueries correlated with the enclosing
** scope; only the listed variables of not-join unify with it (Datomic), the
** others are the subquery's own. or/or-join are an EXISTS over a UNION ALL
** of the branches when every join variable is already bound, else a UNION
** derived table joined on its variables (with a tag column each, since
** branches may bind different types), each branch starting from a copy of
** the scope so far when some join variables are bound. A plain `or`
** requires every branch to use the same free variables, as Datomic does;
** variables bound before it (inputs, earlier clauses) every branch sees.
** or-join's required variables ([[?e] ...]) must be bound where it runs:
** qcClauses defers it until they are, as Datomic pushes it down.
*/
#include <string.h>
#include "query_compile.h"

/* ----------------------------------------------------------- variables */

static int qcAddName(const char **a, int n, int nMax, const char *z) {
  int i;
  for (i = 0; i < n && i < nMax; i++) if (strcmp(a[i], z) == 0) return n;
  if (n < nMax) a[n] = z;
  return n + 1;
}

static int qcTermsVars(const EdnValue *const *aT, int nT, const char **a, int n, int nMax) {
  int i;
  for (i = 0; i < nT; i++) {
    if (ednIsVar(aT[i])) n = qcAddName(a, n, nMax, aT[i]->u.s.z);
  }
  return n;
}

int qcClauseVars(const QClause *pCl, const char **a, int nMax, int iDepth) {
  int n = 0, i, j;
  if (iDepth > EDN_MAX_DEPTH) return 0;
  switch (pCl->kind) {
    case QC_PATTERN: case QC_PRED: case QC_RULE:
      return qcTermsVars(pCl->aArg, pCl->nArg, a, 0, nMax);
    case QC_FN:
      n = qcTermsVars(pCl->aArg, pCl->nArg, a, 0, nMax);
      return qcTermsVars(pCl->bind.aVar, pCl->bind.nVar, a, n, nMax);
    case QC_NOT_JOIN: case QC_OR_JOIN:
      return qcTermsVars(pCl->aJoin, pCl->nJoin, a, 0, nMax);
    default: {
      const char *aSub[64];
      for (i = 0; i < pCl->nSub; i++) {
        int nSub = qcClauseVars(pCl->aSub[i], aSub, 64, iDepth + 1);
        for (j = 0; j < nSub && j < 64; j++) n = qcAddName(a, n, nMax, aSub[j]);
      }
      return n;
    }
  }
}

/* ----------------------------------------------------------------- not */

int qcNot(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  QCtx sub;
  char *zBody;
  int i;
  if (pCl->kind == QC_NOT_JOIN) {
    for (i = 0; i < pCl->nJoin; i++) {
      QVar *pV = qcVarFind(pX, pCl->aJoin[i]->u.s.z);
      if (pV == NULL || pV->zExpr == NULL) {
        return qcErr(pC, pCl->aJoin[i], "unbound variable %s in not-join", pCl->aJoin[i]->u.s.z);
      }
    }
  }
  qcCtxInit(&sub, pC, pX);
  if (pCl->kind == QC_NOT_JOIN) {
    sub.nVisible = pCl->nJoin;
    sub.aVisible = pCl->aJoin;
  }
  qcClauses(&sub, pCl->aSub, pCl->nSub, iDepth + 1);
  if (pC->rc == SQLITE_OK) {
    zBody = qcBody(&sub);
    if (zBody) qcWhere(pX, sqlite3_mprintf("NOT EXISTS (SELECT 1%s)", zBody));
    sqlite3_free(zBody);
  }
  qcCtxReset(&sub);
  return pC->rc;
}

/* ------------------------------------------------------------------ or */

/* The clauses of branch i of an or: an (and ...) body or the one clause. */
static void qcBranch(const QClause *pOr, int i, QClause *const **paSub, int *pnSub) {
  const QClause *pB = pOr->aSub[i];
  if (pB->kind == QC_AND) {
    *paSub = pB->aSub;
    *pnSub = pB->nSub;
  } else {
    *paSub = &pOr->aSub[i];
    *pnSub = 1;
  }
}

static int qcIsBound(QCtx *pX, const char *zName) {
  QVar *pV = qcVarFind(pX, zName);
  return pV && (pV->zExpr || pV->zInList);
}

void qcCopyVar(QCtx *pSub, const char *zName, const QVar *pV) {
  QVar *pN;
  int bNew = qcVarFind(pSub, zName) == NULL;
  qcBindVar(pSub, zName, sqlite3_mprintf("%s", pV->zExpr), pV->vt,
            pV->zTag ? sqlite3_mprintf("%s", pV->zTag) : NULL, pV->bIntCol);
  if (bNew && pSub->pC->rc == SQLITE_OK && pV->bIdent) {
    pN = qcVarFind(pSub, zName);
    if (pN) pN->bIdent = 1;
  }
  if (!bNew || pV->nParam == 0 || pSub->pC->rc) return;
  pN = qcVarFind(pSub, zName);
  if (pN == NULL || pN->nParam) return;
  pN->aParam = sqlite3_malloc64(sizeof(int) * pV->nParam);
  if (pN->aParam == NULL) { qcNoMem(pSub->pC); return; }
  memcpy(pN->aParam, pV->aParam, sizeof(int) * pV->nParam);
  pN->nParam = pV->nParam;
}

int qcCopyScope(QCtx *pSub, QCtx *pX) {
  if (pX->bRecRef) return 0;
  sqlite3_str_appendall(pSub->pFrom, sqlite3_str_value(pX->pFrom));
  pSub->nFrom = pX->nFrom;
  if (pX->nWhere) {
    sqlite3_str_appendall(pSub->pWhere, sqlite3_str_value(pX->pWhere));
    pSub->nWhere = pX->nWhere;
  }
  /* The planner orders the copied joins. */
  pSub->bUnlinked = 1;
  return 1;
}

/* Is z a bare parameter "?N" (valid anywhere in the statement)? */
static int qcIsParam(const char *z) {
  if (z == NULL || z[0] != '?' || z[1] == 0) return 0;
  for (z++; *z; z++) if (*z < '0' || *z > '9') return 0;
  return 1;
}

int qcCollapse(QCtx *pX) {
  QComp *pC = pX->pC;
  sqlite3_str *pSel;
  char *zBody, *zSel;
  int i, k = 0, n;
  if (pC->rc || pX->bRecRef || pX->bFixed || pX->pParent || pC->nLocal) return 0;
  if (pX->nFrom == 0) return 1;
  n = ++pC->nAlias;
  pSel = sqlite3_str_new(NULL);
  /* DISTINCT: the scope's rows are a set of bindings (Datomic's relations
  ** are sets), and it keeps SQLite from flattening the CTE back into its
  ** reader, which would join every table again. */
  sqlite3_str_appendall(pSel, "SELECT DISTINCT ");
  for (i = 0; i < pX->nVar; i++) {
    QVar *pV = &pX->aVar[i];
    if (pV->zExpr == NULL || qcIsParam(pV->zExpr)) continue;
    sqlite3_str_appendf(pSel, "%s%s AS c%d", k ? ", " : "", pV->zExpr, k);
    if (pV->zTag) sqlite3_str_appendf(pSel, ", %s AS t%d", pV->zTag, k);
    k++;
  }
  if (k == 0) sqlite3_str_appendall(pSel, "1 AS c0");
  zBody = qcBody(pX);
  if (zBody) sqlite3_str_appendall(pSel, zBody);
  sqlite3_free(zBody);
  zSel = sqlite3_str_finish(pSel);
  if (zSel == NULL || pC->rc) {
    sqlite3_free(zSel);
    return qcNoMem(pC), 0;
  }
  if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
  sqlite3_str_appendf(pC->pCte, "qs%d AS (%s)", n, zSel);
  sqlite3_free(zSel);
  sqlite3_str_reset(pX->pFrom);
  sqlite3_str_appendf(pX->pFrom, "qs%d q%d", n, n);
  pX->nFrom = 1;
  pX->nPatternFrom = 0;
  pX->nKey = 0;
  pX->bUnlinked = 0;
  sqlite3_str_reset(pX->pWhere);
  pX->nWhere = 0;
  for (i = 0, k = 0; i < pX->nVar; i++) {
    QVar *pV = &pX->aVar[i];
    char *zExpr;
    if (pV->zExpr == NULL || qcIsParam(pV->zExpr)) continue;
    zExpr = sqlite3_mprintf("q%d.c%d", n, k);
    if (zExpr == NULL) return qcNoMem(pC), 0;
    sqlite3_free(pV->zExpr);
    pV->zExpr = zExpr;
    if (pV->zTag) {
      char *zTag = sqlite3_mprintf("q%d.t%d", n, k);
      if (zTag == NULL) return qcNoMem(pC), 0;
      sqlite3_free(pV->zTag);
      pV->zTag = zTag;
    }
    pV->nFnDepth = 0;
    k++;
  }
  return 1;
}

int qcCollapseHeavy(QCtx *pX) {
  if (pX->nFrom == pX->nPatternFrom && pX->nFrom < QC_COLLAPSE_FROM) return 1;
  return qcCollapse(pX);
}

int qcClausesUnseeded(QClause *const *a, int n, const char *const *azVar, int nVar) {
  const char *azB[64];
  int nB = 0, i, j, k, m;
  for (i = 0; i < n; i++) {
    const char *az[64];
    int nV;
    if (a[i]->kind != QC_PATTERN) continue;
    nV = qcClauseVars(a[i], az, 64, 1);
    if (nV > 64) return 0;
    for (m = 0; m < nV; m++) {
      for (k = 0; k < nB && strcmp(azB[k], az[m]); k++) {}
      if (k == nB && nB < 64) azB[nB++] = az[m];
    }
  }
  for (i = 0; i < n; i++) {
    const char *az[64];
    int nV;
    if (a[i]->kind == QC_PATTERN) continue;
    nV = qcClauseVars(a[i], az, 64, 1);
    if (nV > 64) return 0;
    for (m = 0; m < nV; m++) {
      for (j = 0; j < nVar && strcmp(azVar[j], az[m]); j++) {}
      if (j == nVar) continue;
      /* a function or predicate reads it after the patterns bound it */
      if (a[i]->kind != QC_FN && a[i]->kind != QC_PRED) return 0;
      for (k = 0; k < nB && strcmp(azB[k], az[m]); k++) {}
      if (k == nB) return 0;
    }
  }
  for (j = 0; j < nVar; j++) {
    for (k = 0; k < nB && strcmp(azB[k], azVar[j]); k++) {}
    if (k == nB) return 0;
  }
  return 1;
}

int qcOrReady(QCtx *pX, const QClause *pCl) {
  int i;
  if (pCl->kind != QC_OR_JOIN) return 1;
  for (i = 0; i < pCl->nReq; i++) if (!qcIsBound(pX, pCl->aJoin[i]->u.s.z)) return 0;
  return 1;
}

/* "[?a ?b]": or-join's required variables, for messages. */
static char *qcReqList(const QClause *pCl) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  int i;
  sqlite3_str_appendchar(p, 1, '[');
  for (i = 0; i < pCl->nReq; i++) {
    sqlite3_str_appendf(p, "%s%s", i ? " " : "", pCl->aJoin[i]->u.s.z);
  }
  sqlite3_str_appendchar(p, 1, ']');
  return sqlite3_str_finish(p);
}

/* Plain or: the branches' variables into aJoin (their union, as symbols).
** Branches may differ only in variables bound before the or (inputs,
** earlier clauses), which every branch then sees; a difference in a free
** variable is an error naming the free ones (Datomic requires one set). */
static int qcOrVars(QCtx *pX, const QClause *pCl, const EdnValue **aJoin, int *pnJoin,
                    int iDepth) {
  QComp *pC = pX->pC;
  const char *azFirst[64], *azVar[64], *azAll[64];
  int nFirst = qcClauseVars(pCl->aSub[0], azFirst, 64, iDepth + 1);
  int nAll = 0, i, j, k, m;
  if (nFirst > 64) return qcErr(pC, pCl->pForm, "or uses too many variables");
  for (j = 0; j < nFirst; j++) azAll[nAll++] = azFirst[j];
  for (i = 1; i < pCl->nSub; i++) {
    int n = qcClauseVars(pCl->aSub[i], azVar, 64, iDepth + 1);
    sqlite3_str *pDiff;
    char *zDiff;
    int nDiff = 0;
    if (n > 64) return qcErr(pC, pCl->pForm, "or uses too many variables");
    pDiff = sqlite3_str_new(NULL);
    /* Name the free variables that differ between the first branch and this one. */
    for (k = 0; k < n; k++) {
      for (m = 0; m < nFirst && strcmp(azVar[k], azFirst[m]); m++) {}
      if (m == nFirst && !qcIsBound(pX, azVar[k])) {
        sqlite3_str_appendf(pDiff, "%s%s", nDiff++ ? ", " : "", azVar[k]);
      }
    }
    for (m = 0; m < nFirst; m++) {
      for (k = 0; k < n && strcmp(azVar[k], azFirst[m]); k++) {}
      if (k == n && !qcIsBound(pX, azFirst[m])) {
        sqlite3_str_appendf(pDiff, "%s%s", nDiff++ ? ", " : "", azFirst[m]);
      }
    }
    zDiff = sqlite3_str_finish(pDiff);
    if (nDiff) {
      qcErr(pC, pCl->pForm,
            "all branches of or must use the same variables, but %s %s not in every branch"
            " (use or-join to name the shared ones)", zDiff ? zDiff : "?",
            nDiff == 1 ? "is" : "are");
      sqlite3_free(zDiff);
      return pC->rc;
    }
    sqlite3_free(zDiff);
    for (k = 0; k < n; k++) {
      for (m = 0; m < nAll && strcmp(azVar[k], azAll[m]); m++) {}
      if (m < nAll) continue;
      if (nAll == 64) return qcErr(pC, pCl->pForm, "or uses too many variables");
      azAll[nAll++] = azVar[k];
    }
  }
  /* The variables as EDN symbols, for the same code path as or-join. */
  for (j = 0; j < nAll; j++) {
    EdnValue *pSym = ednNewString(pC->pArena, EDN_SYMBOL, azAll[j], (int)strlen(azAll[j]));
    if (pSym == NULL) return qcNoMem(pC);
    aJoin[j] = pSym;
  }
  *pnJoin = nAll;
  return SQLITE_OK;
}

int qcOr(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  const EdnValue *aJoinLocal[64];
  const EdnValue **aJoin;
  int nJoin = 0, i, j, bAllBound = 1;
  sqlite3_str *pOut;
  char *zOut;
  if (pCl->kind == QC_OR_JOIN) {
    aJoin = pCl->aJoin;
    nJoin = pCl->nJoin;
    for (i = 0; i < pCl->nReq; i++) {
      if (!qcIsBound(pX, aJoin[i]->u.s.z)) {
        char *zReq = qcReqList(pCl);
        qcErr(pC, pCl->pForm, "or-join needs %s bound where it is used (it is required: %s)",
              aJoin[i]->u.s.z, zReq ? zReq : "?");
        sqlite3_free(zReq);
        return pC->rc;
      }
    }
  } else {
    if (qcOrVars(pX, pCl, aJoinLocal, &nJoin, iDepth)) return pC->rc;
    aJoin = aJoinLocal;
  }
  for (i = 0; i < nJoin; i++) {
    QVar *pV = qcVarFind(pX, aJoin[i]->u.s.z);
    if (pV == NULL || pV->zExpr == NULL) bAllBound = 0;
  }
  pOut = sqlite3_str_new(NULL);
  if (bAllBound) {
    /* Every join variable is bound: a correlated EXISTS over the branches. */
    sqlite3_str_appendall(pOut, "EXISTS (");
    for (i = 0; i < pCl->nSub && pC->rc == SQLITE_OK; i++) {
      QCtx sub;
      QClause *const *aSub;
      int nSub;
      char *zBody;
      qcBranch(pCl, i, &aSub, &nSub);
      qcCtxInit(&sub, pC, pX);
      sub.nVisible = nJoin;
      sub.aVisible = aJoin;
      qcClauses(&sub, aSub, nSub, iDepth + 1);
      zBody = pC->rc == SQLITE_OK ? qcBody(&sub) : NULL;
      if (zBody) sqlite3_str_appendf(pOut, "%sSELECT 1%s", i ? " UNION ALL " : "", zBody);
      sqlite3_free(zBody);
      qcCtxReset(&sub);
    }
    sqlite3_str_appendall(pOut, ")");
    zOut = sqlite3_str_finish(pOut);
    if (pC->rc == SQLITE_OK) qcWhere(pX, zOut);
    else sqlite3_free(zOut);
    return pC->rc;
  } else {
    /* A derived table of the branches' rows, joined on the variables. A
    ** derived table cannot see its siblings in FROM (no LATERAL in SQLite),
    ** so when some join variables are bound already, each branch starts
    ** from a copy of the enclosing scope so far (qcCopyScope): the branch's
    ** functions and patterns see those variables, as Datomic passes
    ** bindings into or (helper-25: "unbound variable ?v in function"). */
    char zAlias[24];
    int bSeed = 0;
    ValueType *aVt = sqlite3_malloc64(sizeof(ValueType) * (nJoin + 1));
    if (aVt == NULL) { sqlite3_free(sqlite3_str_finish(pOut)); return qcNoMem(pC); }
    for (j = 0; j < nJoin; j++) {
      QVar *pV = qcVarFind(pX, aJoin[j]->u.s.z);
      aVt[j] = (ValueType)-1;
      if (pV && pV->zExpr) bSeed = 1;
    }
    /* The branches copy the scope so far: a copy of earlier calls and or
    ** branches (themselves copies) would grow the SQL exponentially, so
    ** the rows so far are named once (qcCollapse). */
    if (bSeed && (pX->nFrom != pX->nPatternFrom || pX->nFrom >= QC_COLLAPSE_FROM)) {
      /* Copies of a scope that holds earlier or branches (copies
      ** themselves) SQLite expands exponentially: branches that need
      ** nothing from the scope run on their own, joined on the variables
      ** after; others read the rows so far named once (qcCollapse). */
      const char *azVar[64];
      int nVar = 0, bOwn = 1;
      for (j = 0; j < nJoin && bOwn; j++) {
        QVar *pV = qcVarFind(pX, aJoin[j]->u.s.z);
        if (pV == NULL || pV->zExpr == NULL) continue;
        if (pV->nParam || pV->vt == VT_NONE || pV->vt == VT_KEYWORD || pV->vt == QVT_JSON) bOwn = 0;
        azVar[nVar++] = aJoin[j]->u.s.z;
      }
      for (i = 0; i < pCl->nSub && bOwn; i++) {
        QClause *const *aSub;
        int nSub;
        qcBranch(pCl, i, &aSub, &nSub);
        bOwn = qcClausesUnseeded(aSub, nSub, azVar, nVar);
      }
      if (bOwn) bSeed = 0;
      else qcCollapse(pX);
    }
    if (pC->rc) { sqlite3_free(aVt); sqlite3_free(sqlite3_str_finish(pOut)); return pC->rc; }
    sqlite3_str_appendall(pOut, "(");
    for (i = 0; i < pCl->nSub && pC->rc == SQLITE_OK; i++) {
      QCtx sub;
      QClause *const *aSub;
      int nSub;
      char *zBody;
      qcBranch(pCl, i, &aSub, &nSub);
      qcCtxInit(&sub, pC, pX);
      sub.nVisible = 0;      /* uncorrelated: a derived table cannot see outside */
      if (bSeed && qcCopyScope(&sub, pX)) {
        for (j = 0; j < nJoin; j++) {
          QVar *pV = qcVarFind(pX, aJoin[j]->u.s.z);
          if (pV && pV->zExpr) qcCopyVar(&sub, aJoin[j]->u.s.z, pV);
        }
      }
      qcClauses(&sub, aSub, nSub, iDepth + 1);
      sqlite3_str_appendf(pOut, "%sSELECT ", i ? " UNION " : "");
      for (j = 0; j < nJoin && pC->rc == SQLITE_OK; j++) {
        QVar *pV = qcVarFind(&sub, aJoin[j]->u.s.z);
        if (pV == NULL || pV->zExpr == NULL) {
          qcErr(pC, pCl->aSub[i]->pForm, "or branch does not bind %s", aJoin[j]->u.s.z);
          break;
        }
        qcSetColumns(pC, pOut, j == 0, j, pV, &aVt[j]);
      }
      zBody = pC->rc == SQLITE_OK ? qcBody(&sub) : NULL;
      if (zBody) sqlite3_str_appendall(pOut, zBody);
      sqlite3_free(zBody);
      qcCtxReset(&sub);
    }
    sqlite3_snprintf(sizeof zAlias, zAlias, "o%d", ++pC->nAlias);
    sqlite3_str_appendf(pOut, ") %s", zAlias);
    zOut = sqlite3_str_finish(pOut);
    if (pC->rc == SQLITE_OK) qcFrom(pX, zOut);
    else sqlite3_free(zOut);
    for (j = 0; j < nJoin && pC->rc == SQLITE_OK; j++) {
      ValueType vt = aVt[j] == (ValueType)-1 ? VT_NONE : aVt[j];
      qcBindVar(pX, aJoin[j]->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, j), vt,
                sqlite3_mprintf("%s.t%d", zAlias, j), 0);
    }
    sqlite3_free(aVt);
  }
  return pC->rc;
}
