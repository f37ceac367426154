/*
** query_compile_not_or.c — not/not-join and or/or-join/and: takes the
** clause and the scope it runs in, gives a WHERE term (NOT EXISTS, EXISTS)
** or a FROM item (a UNION of the branches) and the variables it binds.
** Calls the scope helpers and compiles each body with qcwClauses
** (query_compile_scope.h explains scopes and variables).
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
** qcwClauses defers it until they are, as Datomic pushes it down.
** qcoNextFail tells qcwClauses which clauses of a list can fail at run
** time, a not holding a failing function among them.
*/
#include <string.h>
#include "query_compile_scope.h"

static int qcoNotIn(QCtx *pX, const QClause *pCl, int iDepth);
static int qcoIsBound(QCtx *pX, const char *zName);

/* ($2 not ...) reads $2 in its body. */
int qcoNot(QCtx *pX, const QClause *pCl, int iDepth) {
  QSrcSave sv;
  if (qcsEnter(pX->pC, pCl, &sv) == SQLITE_OK) qcoNotIn(pX, pCl, iDepth);
  qcsLeave(pX->pC, &sv);
  return pX->pC->rc;
}

/* A plain not must share a variable with the scope around it, bound there
** by the time it runs (it runs after every binding clause): one that shares
** none would remove all rows or none. DataScript: "Insufficient bindings:
** none of #{?y} is bound in (not [?y :a 1])"; Datomic unifies a not's
** variables with the query around it. An error (pC->rc) names them. */
static int qcoNotShares(QCtx *pX, const QClause *pCl, int iDepth) {
  const char *az[64];
  int nV = qcClauseVars(pCl, az, 64, iDepth), i;
  sqlite3_str *pList;
  char *zList;
  if (nV > 64) return SQLITE_OK;
  for (i = 0; i < nV; i++) if (qcoIsBound(pX, az[i])) return SQLITE_OK;
  pList = sqlite3_str_new(NULL);
  for (i = 0; i < nV; i++) sqlite3_str_appendf(pList, "%s%s", i ? " " : "", az[i]);
  zList = sqlite3_str_finish(pList);
  if (zList == NULL && nV) return qcNoMem(pX->pC);
  if (nV == 0) {
    qcErr(pX->pC, pCl->pForm, "insufficient bindings: not uses no variable (a not must share a"
          " variable with the query around it)");
  } else {
    qcErr(pX->pC, pCl->pForm, "insufficient bindings: none of %s is bound in not (a not must share a"
          " variable with the query around it)", zList);
  }
  sqlite3_free(zList);
  return pX->pC->rc;
}

static int qcoNotIn(QCtx *pX, const QClause *pCl, int iDepth) {
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
  qcwClauses(&sub, pCl->aSub, pCl->nSub, iDepth + 1);
  /* (after the body, whose own errors come first) */
  if (pC->rc == SQLITE_OK && pCl->kind == QC_NOT) qcoNotShares(pX, pCl, iDepth);
  if (pC->rc == SQLITE_OK) {
    zBody = qcBody(&sub);
    /* its body's run-time errors only for rows the clauses before it pass */
    if (zBody) qcWhere(pX, qcGuardRaising(pX, sqlite3_mprintf("NOT EXISTS (SELECT 1%s)", zBody)));
    sqlite3_free(zBody);
  }
  qcCtxReset(&sub);
  return pC->rc;
}

/* The clauses of branch i of an or: an (and ...) body or the one clause. */
static void qcoBranch(const QClause *pOr, int i, QClause *const **paSub, int *pnSub) {
  const QClause *pB = pOr->aSub[i];
  if (pB->kind == QC_AND) {
    *paSub = pB->aSub;
    *pnSub = pB->nSub;
  } else {
    *paSub = &pOr->aSub[i];
    *pnSub = 1;
  }
}

static int qcoIsBound(QCtx *pX, const char *zName) {
  QVar *pV = qcVarFind(pX, zName);
  return pV && (pV->zExpr || pV->zInList);
}

int qcoOrReady(QCtx *pX, const QClause *pCl) {
  int i;
  if (pCl->kind != QC_OR_JOIN) return 1;
  for (i = 0; i < pCl->nReq; i++) if (!qcoIsBound(pX, pCl->aJoin[i]->u.s.z)) return 0;
  return 1;
}

/* "[?a ?b]": or-join's required variables, for messages. */
static char *qcoReqList(const QClause *pCl) {
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
static int qcoOrVars(QCtx *pX, const QClause *pCl, const EdnValue **aJoin, int *pnJoin,
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
      if (m == nFirst && !qcoIsBound(pX, azVar[k])) {
        sqlite3_str_appendf(pDiff, "%s%s", nDiff++ ? ", " : "", azVar[k]);
      }
    }
    for (m = 0; m < nFirst; m++) {
      for (k = 0; k < n && strcmp(azVar[k], azFirst[m]); k++) {}
      if (k == n && !qcoIsBound(pX, azFirst[m])) {
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

/* Every join variable is bound: or as a correlated EXISTS over the
** branches, each seeing only the join variables. */
static int qcoOrExists(QCtx *pX, const QClause *pCl, const EdnValue **aJoin, int nJoin,
                       int iDepth) {
  QComp *pC = pX->pC;
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  char *zOut;
  int i;
  sqlite3_str_appendall(pOut, "EXISTS (");
  for (i = 0; i < pCl->nSub && qcPoll(pC) == SQLITE_OK; i++) {
    QCtx sub;
    QClause *const *aSub;
    int nSub;
    char *zBody;
    qcoBranch(pCl, i, &aSub, &nSub);
    qcCtxInit(&sub, pC, pX);
    sub.nVisible = nJoin;
    sub.aVisible = aJoin;
    qcwClauses(&sub, aSub, nSub, iDepth + 1);
    zBody = pC->rc == SQLITE_OK ? qcBody(&sub) : NULL;
    if (zBody) sqlite3_str_appendf(pOut, "%sSELECT 1%s", i ? " UNION ALL " : "", zBody);
    sqlite3_free(zBody);
    qcCtxReset(&sub);
  }
  sqlite3_str_appendall(pOut, ")");
  zOut = sqlite3_str_finish(pOut);
  if (pC->rc == SQLITE_OK) qcWhere(pX, qcGuardRaising(pX, zOut));
  else sqlite3_free(zOut);
  return pC->rc;
}

/* Do the branches of a derived-table or start from a copy of scope pX
** (some join variables are bound already)? A scope that holds earlier
** calls or or branches (copies themselves) SQLite would expand
** exponentially when copied: then branches that need nothing from the
** scope run on their own, joined on the variables after, and others read
** the rows so far named once: extended by the branches inside one
** recursive CTE when every branch fits (*pbPhase set, *pPh started,
** qcPhaseStart), else collapsed (qcCollapse). */
/* May one of clauses a[0..n), or a clause nested in them, fail at run
** time for some row (qcfMayFail)? */
static int qcoMayFail(QClause *const *a, int n) {
  int i;
  for (i = 0; i < n; i++) {
    const QClause *p = a[i];
    if (p->kind == QC_FN || p->kind == QC_PRED) {
      if (qcfMayFail(p->zName)) return 1;
    } else if (p->nSub > 0 && qcoMayFail(p->aSub, p->nSub)) {
      return 1;
    }
  }
  return 0;
}

static int qcoOrSeeded(QCtx *pX, const QClause *pCl, const EdnValue **aJoin, int nJoin,
                       int *pbPhase, QPhase *pPh) {
  int i, j, bSeed = 0;
  for (j = 0; j < nJoin; j++) {
    QVar *pV = qcVarFind(pX, aJoin[j]->u.s.z);
    if (pV && pV->zExpr) bSeed = 1;
  }
  if (bSeed && (pX->nFrom != pX->nPatternFrom || pX->nFrom >= QC_COLLAPSE_FROM)) {
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
      qcoBranch(pCl, i, &aSub, &nSub);
      bOwn = qcwClausesUnseeded(aSub, nSub, azVar, nVar);
      /* computed whole, a branch would fail for rows the clauses before
      ** the or drop (Datomic passes it the rows so far) */
      if (bOwn && qcoMayFail(aSub, nSub)) bOwn = 0;
    }
    if (bOwn) {
      bSeed = 0;
    } else {
      int bFits = 1;
      for (i = 0; i < pCl->nSub && bFits; i++) {
        QClause *const *aSub;
        int nSub;
        qcoBranch(pCl, i, &aSub, &nSub);
        bFits = qcPhaseFits(aSub, nSub, 0);
      }
      if (bFits) *pbPhase = qcPhaseStart(pX, pPh);
      else qcCollapse(pX);
    }
  }
  return bSeed;
}

/* Some join variable is unbound: or as a derived table of the branches'
** rows, joined on the variables. A derived table cannot see its siblings
** in FROM (no LATERAL in SQLite), so when some join variables are bound
** already, each branch starts from a copy of the enclosing scope so far
** (qcCopyScope): the branch's functions and patterns see those variables,
** as Datomic passes bindings into or. */
static int qcoOrTable(QCtx *pX, const QClause *pCl, const EdnValue **aJoin, int nJoin,
                      int iDepth) {
  QComp *pC = pX->pC;
  sqlite3_str *pOut;
  char *zOut;
  char zAlias[24];
  int i, j, bSeed, bPhase = 0;
  QPhase ph;
  ValueType *aVt = sqlite3_malloc64(sizeof(ValueType) * (nJoin + 1));
  unsigned char abSeq[64];   /* qcSeqBits of its branches */
  unsigned char abColl[64];  /* collection kinds (qcSeqBits) of its branches */
  if (aVt == NULL) return qcNoMem(pC);
  for (j = 0; j < nJoin; j++) aVt[j] = (ValueType)-1;
  memset(abSeq, 0, sizeof abSeq);
  memset(abColl, 0, sizeof abColl);
  bSeed = qcoOrSeeded(pX, pCl, aJoin, nJoin, &bPhase, &ph);
  pOut = sqlite3_str_new(NULL);
  if (pC->rc) { sqlite3_free(aVt); sqlite3_free(sqlite3_str_finish(pOut)); return pC->rc; }
  if (!bPhase) sqlite3_str_appendall(pOut, "(");
  for (i = 0; i < pCl->nSub && qcPoll(pC) == SQLITE_OK; i++) {
    QCtx sub;
    QClause *const *aSub;
    int nSub;
    char *zBody;
    qcoBranch(pCl, i, &aSub, &nSub);
    qcCtxInit(&sub, pC, pX);
    sub.nVisible = 0;      /* uncorrelated: a derived table cannot see outside */
    if (bSeed && qcCopyScope(&sub, pX)) {
      if (bPhase) sub.bRecRef = 1;
      for (j = 0; j < nJoin; j++) {
        QVar *pV = qcVarFind(pX, aJoin[j]->u.s.z);
        if (pV && pV->zExpr) qcCopyVar(&sub, aJoin[j]->u.s.z, pV, 0);
      }
    }
    qcwClauses(&sub, aSub, nSub, iDepth + 1);
    if (i) sqlite3_str_appendall(pOut, " UNION ");
    if (bPhase) qcPhaseBranch(&ph, pOut);
    else sqlite3_str_appendall(pOut, "SELECT ");
    for (j = 0; j < nJoin && pC->rc == SQLITE_OK; j++) {
      QVar *pV = qcVarFind(&sub, aJoin[j]->u.s.z);
      if (pV == NULL || pV->zExpr == NULL) {
        qcErr(pC, pCl->aSub[i]->pForm, "or branch does not bind %s", aJoin[j]->u.s.z);
        break;
      }
      qcSetColumns(pC, pOut, j == 0 && !bPhase, j, pV, &aVt[j]);
      if (j < 64) abSeq[j] |= (unsigned char)qcSeqBits(&sub, pV, &abColl[j]);
    }
    zBody = pC->rc == SQLITE_OK ? qcBody(&sub) : NULL;
    if (zBody) sqlite3_str_appendall(pOut, zBody);
    sqlite3_free(zBody);
    qcCtxReset(&sub);
  }
  if (bPhase) {
    unsigned char abCol[64];
    memset(abCol, 1, sizeof abCol);
    zOut = sqlite3_str_finish(pOut);
    if (zOut == NULL) qcNoMem(pC);
    sqlite3_snprintf(sizeof zAlias, zAlias, "%s", ph.zAlias);
    qcPhaseEnd(pX, &ph, pC->rc == SQLITE_OK ? zOut : NULL, abCol, nJoin);
    sqlite3_free(zOut);
  } else {
    sqlite3_snprintf(sizeof zAlias, zAlias, "o%d", ++pC->nAlias);
    sqlite3_str_appendf(pOut, ") %s", zAlias);
    zOut = sqlite3_str_finish(pOut);
    if (pC->rc == SQLITE_OK) qcFrom(pX, zOut);
    else sqlite3_free(zOut);
  }
  for (j = 0; j < nJoin && pC->rc == SQLITE_OK; j++) {
    ValueType vt = aVt[j] == (ValueType)-1 ? VT_NONE : aVt[j];
    QVar *pN;
    qcBindVar(pX, aJoin[j]->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, j), vt,
              sqlite3_mprintf("%s.t%d", zAlias, j), 0);
    pN = j < 64 && abSeq[j] ? qcVarFind(pX, aJoin[j]->u.s.z) : NULL;
    if (pN && pN->zExpr && strncmp(pN->zExpr, zAlias, strlen(zAlias)) == 0) {
      pN->bSeq = abSeq[j] & 4 ? 3 : abSeq[j] == 2 ? 1 : abSeq[j] & 2 ? 2 : 0;
      pN->mColl = abColl[j];
    }
  }
  sqlite3_free(aVt);
  return pC->rc;
}

static int qcoOrIn(QCtx *pX, const QClause *pCl, int iDepth);

/* ($2 or ...) reads $2 in its branches. */
int qcoOr(QCtx *pX, const QClause *pCl, int iDepth) {
  QSrcSave sv;
  if (qcsEnter(pX->pC, pCl, &sv) == SQLITE_OK) qcoOrIn(pX, pCl, iDepth);
  qcsLeave(pX->pC, &sv);
  return pX->pC->rc;
}

static int qcoOrIn(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  const EdnValue *aJoinLocal[64];
  const EdnValue **aJoin;
  int nJoin = 0, i, bAllBound = 1;
  if (qcCompoundLimit(pC, pCl->pForm, pCl->nSub, "the %s has %d branches",
                      pCl->kind == QC_OR ? "or" : "or-join", pCl->nSub)) {
    return pC->rc;
  }
  if (pCl->kind == QC_OR_JOIN) {
    aJoin = pCl->aJoin;
    nJoin = pCl->nJoin;
    for (i = 0; i < pCl->nReq; i++) {
      if (!qcoIsBound(pX, aJoin[i]->u.s.z)) {
        char *zReq = qcoReqList(pCl);
        qcErr(pC, pCl->pForm, "or-join needs %s bound where it is used (it is required: %s)",
              aJoin[i]->u.s.z, zReq ? zReq : "?");
        sqlite3_free(zReq);
        return pC->rc;
      }
    }
  } else {
    if (qcoOrVars(pX, pCl, aJoinLocal, &nJoin, iDepth)) return pC->rc;
    aJoin = aJoinLocal;
  }
  for (i = 0; i < nJoin; i++) {
    QVar *pV = qcVarFind(pX, aJoin[i]->u.s.z);
    if (pV == NULL || pV->zExpr == NULL) bAllBound = 0;
  }
  if (bAllBound) return qcoOrExists(pX, pCl, aJoin, nJoin, iDepth);
  return qcoOrTable(pX, pCl, aJoin, nJoin, iDepth);
}

/* May clause list a[0..n) hold a function that can fail (qcfMayFail)? */
static int qcoSubFails(QClause *const *a, int n) {
  int i;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_FN && qcfMayFail(a[i]->zName)) return 1;
    if (a[i]->nSub > 0 && qcoSubFails(a[i]->aSub, a[i]->nSub)) return 1;
  }
  return 0;
}

/* Is a variable of predicate a[i] the value of a pattern of a[] whose
** attribute is not a constant ([?e ?a ?v]): of a type only the row knows,
** which the predicate may not take (compare of a string and a long)? */
static int qcoUnknownArg(QClause *const *a, int n, int i) {
  int j, k;
  for (k = 0; k < a[i]->nArg; k++) {
    const EdnValue *pArg = a[i]->aArg[k];
    if (!ednIsVar(pArg)) continue;
    for (j = 0; j < n; j++) {
      const QClause *p = a[j];
      if (p->kind != QC_PATTERN || p->nArg < 3 || !ednIsVar(p->aArg[2])) continue;
      if (p->aArg[1]->type == EDN_KEYWORD) continue;
      if (p->aArg[2]->u.s.n == pArg->u.s.n
          && memcmp(p->aArg[2]->u.s.z, pArg->u.s.z, (size_t)pArg->u.s.n) == 0) {
        return 1;
      }
    }
  }
  return 0;
}

/* A clause that can fail at run time for some row, which Datomic runs on
** exactly the rows the clauses before it give: a function that may fail
** (qcfMayFail), a not holding one, a predicate that may fail over a value
** of a type only the row knows (eOrder 2: a[] has such a pattern; with
** known types a predicate compiles to SQL that cannot fail). */
static int qcoClauseFails(QClause *const *a, int n, int i, int eOrder) {
  /* these fail only for an argument of the wrong type: with the types
  ** known they compile to SQL that cannot fail, and so do the range
  ** predicates given a constant (a value of another class is not in the
  ** range: right14b.test) */
  static const char *const azTyped[] = {
    "compare", "tx-ids", "tx-data", "count", "<", ">", "<=", ">=", "==", "=", "!=",
  };
  const QClause *pCl = a[i];
  size_t k;
  int bTyped = pCl->kind == QC_PRED, bRange = 0;
  if (pCl->kind == QC_NOT || pCl->kind == QC_NOT_JOIN) return qcoSubFails(pCl->aSub, pCl->nSub);
  if ((pCl->kind != QC_FN && pCl->kind != QC_PRED) || !qcfMayFail(pCl->zName)) return 0;
  for (k = 0; k < sizeof azTyped / sizeof azTyped[0]; k++) {
    if (strcmp(pCl->zName, azTyped[k]) == 0) {
      bTyped = 1;
      bRange = k >= 4;
      break;
    }
  }
  if (strncmp(pCl->zName, "clojure.string/", 15) == 0) bTyped = 1;
  if (!bTyped) return 1;
  if (bRange && pCl->nArg == 2) {
    if (!ednIsVar(pCl->aArg[0]) || !ednIsVar(pCl->aArg[1])) return 0;
  }
  return eOrder == 2 && qcoUnknownArg(a, n, i);
}

int qcoNextFail(QClause *const *a, int n, const unsigned char *aDone, int i, int eOrder) {
  while (i < n && (aDone[i] || !qcoClauseFails(a, n, i, eOrder))) i++;
  return i;
}

int qcoClauseOrder(QClause *const *a, int n) {
  int i;
  for (i = 0; i < n; i++) {
    const QClause *p = a[i];
    if (p->kind == QC_PATTERN && p->nArg >= 3 && p->aArg[1]->type != EDN_KEYWORD) return 2;
  }
  return 1;
}
