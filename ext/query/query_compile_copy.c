/*
** query_compile_copy.c — a scope copied into a subquery, and the rows of a
** scope named once so that copies stay small: qcCopyVar and qcCopyScope
** start an or branch or a seeded rule body from the scope so far;
** qcCollapse names the rows so far as a CTE (keeping only the variables
** still needed); the qcPhase functions extend them inside one recursive
** CTE, so a chain of seeded or/rule calls stays linear. Takes and gives
** QCtx scopes; calls the scope helpers (query_compile_scope.h).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "query_compile_scope.h"

void qcCopyVar(QCtx *pSub, const char *zName, const QVar *pV, int bShare) {
  QVar *pN;
  const QCtx *pP = pSub->pParent;
  int bNew = qcVarFind(pSub, zName) == NULL;
  /* only the scope that binds pV may type it: elsewhere a place compares */
  if (pP == NULL || pP->nVar == 0 || pV < pP->aVar || pV >= pP->aVar + pP->nVar) bShare = 0;
  qcBindVar(pSub, zName, sqlite3_mprintf("%s", pV->zExpr), pV->vt,
            pV->zTag ? sqlite3_mprintf("%s", pV->zTag) : NULL, pV->bIntCol);
  if (bNew && pSub->pC->rc == SQLITE_OK && (pV->bIdent || pV->bHetero || pV->bGiven
                                            || pV->nParam)) {
    pN = qcVarFind(pSub, zName);
    if (pN && pV->bIdent) pN->bIdent = 1;
    if (pN && pV->bHetero) pN->bHetero = 1;
    /* the copy is the query's value still, whose numbers convert */
    if (pN && (pV->bGiven || pV->nParam)) pN->bGiven = 1;
  }
  if (bNew && pSub->pC->rc == SQLITE_OK && (pV->bSeedKind || pV->bSeq)) {
    pN = qcVarFind(pSub, zName);
    if (pN && pV->bSeedKind) pN->bSeedKind = 1;
    if (pN && pV->bSeq) pN->bSeq = pV->bSeq;   /* 2, 3: still maybe */
    if (pN && pV->bSeq) pN->mColl = pV->mColl;
  }
  if (bNew && pSub->pC->rc == SQLITE_OK && pV->pLit) {
    pN = qcVarFind(pSub, zName);
    if (pN) pN->pLit = pV->pLit;   /* handed on to a rule it calls */
  }
  if (!bNew || pV->nParam == 0 || pSub->pC->rc) return;
  pN = qcVarFind(pSub, zName);
  if (!bShare) {
    if (pN && pV->vt == VT_KEYWORD) pN->bIdent = 1;
    return;
  }
  if (pN == NULL || pN->nParam) return;
  pN->aParam = sqlite3_malloc64(sizeof(int) * pV->nParam);
  if (pN->aParam == NULL) { qcNoMem(pSub->pC); return; }
  memcpy(pN->aParam, pV->aParam, sizeof(int) * pV->nParam);
  pN->nParam = pV->nParam;
}

/* The kinds of collection pV may be: 1 a vector (a tuple, a vector or list
** literal, a value of unknown type), 2 a set literal, 4 a map literal, 0
** none (a type no collection has); a variable a union marked (bSeq 3) its
** own (QVar.mColl, all three when not known). */
static int qcCollBits(const QCtx *pX, const QVar *pV) {
  const QComp *pC = pX->pC;
  const EdnValue *p = NULL;
  char *zEnd = NULL;
  long iP = pV->vt == QVT_JSON && pV->zExpr && pV->zExpr[0] == '?'
            ? strtol(pV->zExpr + 1, &zEnd, 10) : 0;
  if (pV->bSeq == 3) return pV->mColl ? pV->mColl : 7;
  if (pV->vt != VT_NONE && pV->vt != VT_TUPLE && pV->vt != QVT_JSON) return 0;
  if (iP >= 1 && iP <= pC->nParam && *zEnd == 0 && pC->aParam[iP - 1].eConv == QV_JSON) {
    p = qParamValue(&pC->aParam[iP - 1], pC->pOpts);
  }
  return p && p->type == EDN_SET ? 2 : p && p->type == EDN_MAP ? 4 : 1;
}

/* See query_compile_scope.h: 2 for re-seq's seq, 3 for maybe one, 4 (5)
** for a set, map or list literal (a "?N" collection parameter) or maybe
** one, whose kind a union's rows do not keep (its JSON is an array or an
** object), else 1. */
int qcSeqBits(const QCtx *pX, const QVar *pV, unsigned char *pmColl) {
  const QComp *pC = pX->pC;
  const EdnValue *p = NULL;
  char *zEnd = NULL;
  long iP = pV->vt == QVT_JSON && pV->zExpr && pV->zExpr[0] == '?'
            ? strtol(pV->zExpr + 1, &zEnd, 10) : 0;
  *pmColl |= (unsigned char)qcCollBits(pX, pV);
  if (pV->bSeq) return pV->bSeq == 1 ? 2 : pV->bSeq == 2 ? 3 : 5;
  if (iP >= 1 && iP <= pC->nParam && *zEnd == 0 && pC->aParam[iP - 1].eConv == QV_JSON) {
    p = qParamValue(&pC->aParam[iP - 1], pC->pOpts);
  }
  return p && (p->type == EDN_SET || p->type == EDN_MAP || p->type == EDN_LIST) ? 4 : 1;
}

/* Does a clause of aCl, nested too, bind variable zVar to re-seq's result,
** or pass it to a rule call a definition of which does (a recursive rule's
** definition may bind it through another rule: its CTE's rows do not say
** which)? abSeen (a flag per definition k and head place j < 64, nRule *
** 64) walks each definition's place once, so recursive rules end. */
static int qcBindsSeq(const QComp *pC, QClause *const *aCl, int nCl, const char *zVar,
                      unsigned char *abSeen) {
  int i, j, k;
  for (i = 0; i < nCl; i++) {
    const QClause *p = aCl[i];
    if (p->kind == QC_FN && strcmp(p->zName, "re-seq") == 0 && p->bind.kind == QB_SCALAR
        && ednIsVar(p->bind.aVar[0]) && strcmp(p->bind.aVar[0]->u.s.z, zVar) == 0) {
      return 1;
    }
    if (p->nSub && qcBindsSeq(pC, p->aSub, p->nSub, zVar, abSeen)) return 1;
    for (j = 0; p->kind == QC_RULE && j < p->nArg && j < 64; j++) {
      if (!ednIsVar(p->aArg[j]) || strcmp(p->aArg[j]->u.s.z, zVar) != 0) continue;
      for (k = 0; k < pC->rules.nRule; k++) {
        const QRule *pR = pC->rules.aRule[k];
        if (strcmp(pR->zName, p->zName) != 0 || pR->nHead != p->nArg || abSeen[k * 64 + j]) continue;
        abSeen[k * 64 + j] = 1;
        if (ednIsVar(pR->aHead[j])
            && qcBindsSeq(pC, pR->aClause, pR->nClause, pR->aHead[j]->u.s.z, abSeen)) {
          return 1;
        }
      }
    }
  }
  return 0;
}

/* See query_compile_scope.h. abFree holds 64 flags. A variable the call
** bound that a definition binds by re-seq, itself or through the rules it
** calls, is marked 2 (str refuses it) unless the path that bound it said it
** is a seq on every row (1): the recursive forms' CTE rows do not say which
** definition made them. */
void qcSeqCall(QCtx *pX, const QClause *pCl, unsigned char *abFree, int bAfter) {
  QComp *pC = pX->pC;
  unsigned char *abSeen = NULL;
  int i, k;
  for (i = 0; i < pCl->nArg && i < 64; i++) {
    const EdnValue *pA = pCl->aArg[i];
    QVar *pV = ednIsVar(pA) ? qcVarFind(pX, pA->u.s.z) : NULL;
    if (!bAfter) { abFree[i] = ednIsVar(pA) && (pV == NULL || pV->zExpr == NULL); continue; }
    if (!abFree[i] || pV == NULL || pV->zExpr == NULL || pV->bSeq) continue;
    if (abSeen == NULL) abSeen = sqlite3_malloc64((sqlite3_uint64)pC->rules.nRule * 64 + 1);
    if (abSeen == NULL) { qcNoMem(pC); return; }
    for (k = 0; k < pC->rules.nRule; k++) {
      const QRule *pR = pC->rules.aRule[k];
      if (strcmp(pR->zName, pCl->zName) != 0 || pR->nHead != pCl->nArg) continue;
      memset(abSeen, 0, (size_t)pC->rules.nRule * 64 + 1);
      if (ednIsVar(pR->aHead[i])
          && qcBindsSeq(pC, pR->aClause, pR->nClause, pR->aHead[i]->u.s.z, abSeen)) {
        pV->bSeq = 2;
      }
    }
  }
  sqlite3_free(abSeen);
}

int qcVarSeedKind(const QVar *pV, char *zBuf, int nBuf) {
  char zCol[40];
  int iN = 0, iK = 0;
  if (!pV->bSeedKind || pV->zExpr == NULL) return 0;
  /* rebound since (a CTE's column, a function's result): not a seed's;
  ** the shape is checked by writing it again */
  if (sscanf(pV->zExpr, "m.s%d", &iK) == 1) {
    sqlite3_snprintf(sizeof zCol, zCol, "m.s%d", iK);
    if (strcmp(zCol, pV->zExpr) != 0) return 0;
    sqlite3_snprintf(nBuf, zBuf, "m.sk%d", iK);
    return 1;
  }
  if (sscanf(pV->zExpr, "s%d.o%d", &iN, &iK) == 2) {
    sqlite3_snprintf(sizeof zCol, zCol, "s%d.o%d", iN, iK);
    if (strcmp(zCol, pV->zExpr) != 0) return 0;
    sqlite3_snprintf(nBuf, zBuf, "s%d.ok%d", iN, iK);
    return 1;
  }
  return 0;
}

char *qcVarKind(const QVar *pV) {
  char zKind[24];
  char *zBase, *z;
  if (qcVarSeedKind(pV, zKind, (int)sizeof zKind)) return sqlite3_mprintf("%s", zKind);
  if (qcVarIdent(pV)) return sqlite3_mprintf("'ident'");
  if (pV->bGiven || pV->nParam > 0 || pV->bHetero) {
    zBase = sqlite3_mprintf("CASE typeof(%s) WHEN 'integer' THEN 'given' ELSE typeof(%s) END",
                            pV->zExpr, pV->zExpr);
  } else {
    zBase = sqlite3_mprintf("typeof(%s)", pV->zExpr);
  }
  if (zBase == NULL || pV->vt != VT_NONE || pV->zTag == NULL || !pV->bIdent) return zBase;
  /* values of several types, a keyword among them read as an ident */
  z = sqlite3_mprintf("CASE WHEN %s = %d THEN 'ident' ELSE %s END", pV->zTag, TAG_KEYWORD, zBase);
  sqlite3_free(zBase);
  return z;
}

int qcVarIdent(const QVar *pV) {
  return pV->vt == VT_KEYWORD && (pV->nParam > 0 || pV->bIdent);
}

void qcVarLit(QCtx *pX, const char *zName, const EdnValue *pA) {
  QVar *pV = qcVarFind(pX, zName);
  if (pV && pV->zInList == NULL) pV->pLit = pA;
}

const Attr *qcVarLitAttr(QCtx *pX, const EdnValue *pA) {
  const QVar *pV = pA && ednIsVar(pA) ? qcVarFind(pX, pA->u.s.z) : NULL;
  if (pV == NULL || pV->pLit == NULL) return NULL;
  if (pV->pLit->type == EDN_KEYWORD) {
    return schemaAttrByIdent(pX->pC->pSchema, pV->pLit->u.s.z, pV->pLit->u.s.n);
  }
  return pV->pLit->type == EDN_INT ? schemaAttr(pX->pC->pSchema, pV->pLit->u.i) : NULL;
}

int qcCopyScope(QCtx *pSub, QCtx *pX) {
  if (pX->bRecRef) return 0;
  if (qcTextBudget(pSub->pC, (sqlite3_int64)sqlite3_str_length(pX->pFrom) + sqlite3_str_length(pX->pWhere))) {
    return 0;
  }
  sqlite3_str_appendall(pSub->pFrom, sqlite3_str_value(pX->pFrom));
  pSub->nFrom = pX->nFrom;
  pSub->bCross = pX->bCross;
  if (pX->nWhere) {
    sqlite3_str_appendall(pSub->pWhere, sqlite3_str_value(pX->pWhere));
    pSub->nWhere = pX->nWhere;
  }
  /* The planner orders the copied joins. */
  pSub->bUnlinked = 1;
  return qcTermsCopy(pSub, pX);
}

/* Is z a bare parameter "?N" (valid anywhere in the statement)? */
static int qcIsParam(const char *z) {
  if (z == NULL || z[0] != '?' || z[1] == 0) return 0;
  for (z++; *z; z++) if (*z < '0' || *z > '9') return 0;
  return 1;
}

static int qcIsVarNamed(const EdnValue *p, const char *zName) {
  return p && ednIsVar(p) && strcmp(p->u.s.z, zName) == 0;
}

/* The variables the clauses of the query's own scope not yet done name
** (qcwClauses' frames, pC->pLive), sorted, gathered once per collapse: a
** scan of those clauses per variable would make a long chain cubic. */
typedef struct QcLiveSet {
  const char **az;
  int n;
  int bAll;                /* unsure (a clause naming more variables than are
                           ** counted, or no memory): every variable lives */
} QcLiveSet;

static int qcLiveCmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void qcLiveGather(QComp *pC, QcLiveSet *pSet) {
  const QLive *pL;
  int i, j, n, nAlloc = 0;
  memset(pSet, 0, sizeof *pSet);
  for (pL = pC->pLive; pL && !pSet->bAll; pL = pL->pUp) {
    for (i = 0; i < pL->n && !pSet->bAll; i++) {
      const char *az[128];
      if (pL->aDone[i]) continue;
      n = qcClauseVars(pL->a[i], az, 128, 0);
      if (n > 128 || qcPoll(pC)) {
        pSet->bAll = 1;
        break;
      }
      if (pSet->n + n > nAlloc) {
        int nNew = 2 * (pSet->n + n) + 16;
        const char **azNew = sqlite3_realloc64(pSet->az, sizeof(char *) * (size_t)nNew);
        if (azNew == NULL) {
          pSet->bAll = 1;
          break;
        }
        pSet->az = azNew;
        nAlloc = nNew;
      }
      for (j = 0; j < n; j++) pSet->az[pSet->n++] = az[j];
    }
  }
  if (!pSet->bAll && pSet->n > 1) qsort(pSet->az, (size_t)pSet->n, sizeof(char *), qcLiveCmp);
}

/* Does the query still need variable zName after the clause being
** compiled: :find, :with, :order, :limit or :offset name it, or a clause
** of pSet does? */
static int qcVarLive(const QComp *pC, const QcLiveSet *pSet, const char *zName) {
  const QQuery *pQ = pC->pQ;
  int i;
  for (i = 0; i < pQ->nFind; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    if (qcIsVarNamed(pE->pVar, zName) || qcIsVarNamed(pE->pAggN, zName)
        || qcIsVarNamed(pE->pPattern, zName)) {
      return 1;
    }
  }
  for (i = 0; i < pQ->nWith; i++) if (qcIsVarNamed(pQ->aWith[i], zName)) return 1;
  for (i = 0; i < pQ->nOrder; i++) if (qcIsVarNamed(pQ->aOrder[i].pVar, zName)) return 1;
  if (qcIsVarNamed(pQ->pLimit, zName) || qcIsVarNamed(pQ->pOffset, zName)) return 1;
  if (pSet->bAll) return 1;
  return pSet->n > 0 && bsearch(&zName, pSet->az, (size_t)pSet->n, sizeof(char *), qcLiveCmp) != NULL;
}

int qcCollapse(QCtx *pX) {
  QComp *pC = pX->pC;
  sqlite3_str *pSel;
  char *zBody, *zSel;
  int i, k = 0, n;
  if (pC->rc || pX->bRecRef || pX->bFixed || pX->pParent || pC->nLocal) return 0;
  if (pX->nFrom == 0) return 1;
  if (pX == pC->pMain) {
    /* A variable no clause to come, nor :find, names is left out of the
    ** rows so far: the query's answer is a set over the :find and :with
    ** variables, so it changes nothing, and DISTINCT then keeps one row
    ** per binding that matters (a chain of two-definition calls stays
    ** linear instead of carrying every path taken so far). */
    QcLiveSet live;
    qcLiveGather(pC, &live);
    for (i = 0; i < pX->nVar; i++) {
      QVar *pV = &pX->aVar[i];
      if (pV->zExpr == NULL || qcIsParam(pV->zExpr) || qcVarLive(pC, &live, pV->zName)) continue;
      sqlite3_free(pV->zExpr);
      sqlite3_free(pV->zTag);
      pV->zExpr = NULL;
      pV->zTag = NULL;
    }
    sqlite3_free(live.az);
  }
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
  qcWhereReset(pX);
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

int qcPhaseFits(QClause *const *a, int n, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return 0;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE || a[i]->kind == QC_OR || a[i]->kind == QC_OR_JOIN) return 0;
    if (a[i]->nSub && !qcPhaseFits(a[i]->aSub, a[i]->nSub, iDepth + 1)) return 0;
  }
  return 1;
}

/* The phase CTE of a seeded or / rule call (qcPhaseStart). */
int qcPhaseStart(QCtx *pX, QPhase *pPh) {
  QComp *pC = pX->pC;
  sqlite3_str *pSel;
  char *zBody;
  int i, k = 0, n;
  memset(pPh, 0, sizeof *pPh);
  if (pC->rc || !qcCollapse(pX) || pC->rc || pX->nFrom == 0 || pX->pParent || pC->nLocal) {
    return 0;
  }
  n = ++pC->nAlias;
  pPh->iN = n;
  pSel = sqlite3_str_new(NULL);
  pPh->pCols = sqlite3_str_new(NULL);
  pPh->pCarry = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pSel, "SELECT 0");
  sqlite3_str_appendall(pPh->pCols, "p");
  for (i = 0; i < pX->nVar; i++) {
    QVar *pV = &pX->aVar[i];
    char *zExpr;
    if (pV->zExpr == NULL || qcIsParam(pV->zExpr)) continue;
    sqlite3_str_appendf(pSel, ", %s", pV->zExpr);
    sqlite3_str_appendf(pPh->pCols, ", v%d", k);
    sqlite3_str_appendf(pPh->pCarry, ", x%d.v%d", n, k);
    zExpr = sqlite3_mprintf("x%d.v%d", n, k);
    if (zExpr == NULL) { qcNoMem(pC); break; }
    sqlite3_free(pV->zExpr);
    pV->zExpr = zExpr;
    if (pV->zTag) {
      char *zTag = sqlite3_mprintf("x%d.w%d", n, k);
      if (zTag == NULL) { qcNoMem(pC); break; }
      sqlite3_str_appendf(pSel, ", %s", pV->zTag);
      sqlite3_str_appendf(pPh->pCols, ", w%d", k);
      sqlite3_str_appendf(pPh->pCarry, ", x%d.w%d", n, k);
      sqlite3_free(pV->zTag);
      pV->zTag = zTag;
    }
    pV->nFnDepth = 0;
    k++;
  }
  zBody = qcBody(pX);
  pPh->zSeed = sqlite3_str_finish(pSel);
  pPh->zSeedBody = zBody;
  if (pPh->zSeed == NULL || zBody == NULL) qcNoMem(pC);
  sqlite3_str_reset(pX->pFrom);
  sqlite3_str_appendf(pX->pFrom, "xs%d x%d", n, n);
  qcWhereReset(pX);
  sqlite3_str_appendf(pX->pWhere, "x%d.p = 0", n);
  pX->nFrom = 1;
  pX->nWhere = 1;
  pX->nPatternFrom = 0;
  pX->nKey = 0;
  pX->bUnlinked = 0;
  if (sqlite3_str_errcode(pX->pFrom) || sqlite3_str_errcode(pX->pWhere)) qcNoMem(pC);
  sqlite3_snprintf(sizeof pPh->zAlias, pPh->zAlias, "x%d", n);
  if (pC->rc) {
    qcPhaseEnd(pX, pPh, NULL, NULL, 0);
    return 0;
  }
  return 1;
}

void qcPhaseBranch(const QPhase *pPh, sqlite3_str *pOut) {
  sqlite3_str_appendf(pOut, "SELECT 1%s", sqlite3_str_value(pPh->pCarry));
}

void qcPhaseEnd(QCtx *pX, QPhase *pPh, const char *zBranches, const unsigned char *abCol,
                int nCol) {
  QComp *pC = pX->pC;
  int j, nOut = 0;
  if (pC->rc == SQLITE_OK && zBranches) {
    sqlite3_str *pNull = sqlite3_str_new(NULL);
    for (j = 0; j < nCol; j++) {
      if (!abCol[j]) continue;
      sqlite3_str_appendf(pPh->pCols, ", c%d, t%d, k%d", j, j, j);
      nOut++;
    }
    for (j = 0; j < nOut * 3; j++) sqlite3_str_appendall(pNull, ", NULL");
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    /* UNION: a branch's row met twice is one binding. */
    sqlite3_str_appendf(pC->pCte, "xs%d(%s) AS (%s%s%s UNION %s)", pPh->iN,
                        sqlite3_str_value(pPh->pCols), pPh->zSeed,
                        sqlite3_str_value(pNull), pPh->zSeedBody, zBranches);
    pC->bRecursive = 1;
    sqlite3_free(sqlite3_str_finish(pNull));
    qcWhereReset(pX);
    sqlite3_str_appendf(pX->pWhere, "%s.p = 1", pPh->zAlias);
    pX->nWhere = 1;
    if (sqlite3_str_errcode(pC->pCte) || sqlite3_str_errcode(pX->pWhere)) qcNoMem(pC);
  }
  sqlite3_free(pPh->zSeed);
  sqlite3_free(pPh->zSeedBody);
  sqlite3_free(sqlite3_str_finish(pPh->pCols));
  sqlite3_free(sqlite3_str_finish(pPh->pCarry));
  memset(pPh, 0, sizeof *pPh);
}

int qcCollapseHeavy(QCtx *pX) {
  if (pX->nFrom == pX->nPatternFrom && pX->nFrom < QC_COLLAPSE_FROM) return 1;
  return qcCollapse(pX);
}

/* The entids of the current source's :db/fulltext string attributes (with
** bUnique only the :db/unique ones) as "a,b", "" when there are none; NULL
** out of memory. */
static char *qcFulltextList(const QComp *pC, int bUnique) {
  sqlite3_str *pList = sqlite3_str_new(NULL);
  char *z;
  int i, n = schemaAttrCount(pC->pSchema);
  for (i = 0; i < n; i++) {
    const Attr *pA = schemaAttrAt(pC->pSchema, i);
    if (!pA->bFulltext || pA->type != VT_STRING || (bUnique && pA->eUnique == UNIQUE_NONE)) continue;
    sqlite3_str_appendf(pList, "%s%lld", sqlite3_str_length(pList) ? "," : "", pA->e);
  }
  /* an empty sqlite3_str finishes as NULL, as out of memory does */
  if (sqlite3_str_errcode(pList) == SQLITE_OK && sqlite3_str_length(pList) == 0) {
    sqlite3_free(sqlite3_str_finish(pList));
    return sqlite3_mprintf("%s", "");
  }
  z = sqlite3_str_finish(pList);
  return z;
}

char *qcDatomValueExpr(const QComp *pC, const char *zAlias) {
  char *zList = qcFulltextList(pC, 0), *z;
  if (zList == NULL) return NULL;
  /* No parentheses around the CASE: a variable's expression opening with
  ** "(" reads as bound to one value (qcwKeyPlace). */
  z = zList[0] ? sqlite3_mprintf("CASE WHEN %s.a IN (%s) THEN (SELECT text FROM %s WHERE rowid = %s.v)"
                                 " ELSE %s.v END", zAlias, zList, pC->zFulltext, zAlias, zAlias)
               : sqlite3_mprintf("%s.v", zAlias);
  sqlite3_free(zList);
  return z;
}

char *qcLookupValueExpr(const QComp *pC, const char *zA, const char *zV) {
  char *zList = qcFulltextList(pC, 1), *z;
  if (zList == NULL) return NULL;
  z = zList[0] ? sqlite3_mprintf("(CASE WHEN %s IN (%s) THEN (SELECT rowid FROM %s WHERE text = %s)"
                                 " ELSE %s END)", zA, zList, pC->zFulltext, zV, zV)
               : sqlite3_mprintf("%s", zV);
  sqlite3_free(zList);
  return z;
}
