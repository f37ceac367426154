/*
** query_compile_rules_inline.c — a rule head that is a group of its own and
** calls no rule of its group, compiled into each call (CALLS PASS THEIR
** BINDINGS IN, query_compile_rules.c): its definitions the branches of an
** or-join on the arguments, the head's variables pre-bound to the caller's
** bound arguments and constants. Takes a call; gives the or-join's FROM
** item or WHERE term in the caller's scope. Calls the scope helpers and
** the rules context (query_compile_rules_ctx.h).
*/
#include <string.h>
#include "query_compile_rules_ctx.h"

/* Is head h compiled into each call (qciCall): a recursion group of
** its own that it does not call back into? */
int qciHead(QComp *pC, int h) {
  const QRuleInfo *pRi = pC->pRi;
  int g = pRi->aHead[h].iGroup, i;
  for (i = 0; i < pRi->nHead; i++) if (i != h && pRi->aHead[i].iGroup == g) return 0;
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    if (pRi->aiHeadOf[i] == h && qcxCallsHead(pRi, pR->aClause, pR->nClause, h, 0)) return 0;
  }
  return 1;
}

/* Pre-binds the head variables of definition pR in pSub (a body scope) to
** call pCl's bound arguments (aeArg 1) and constants (2), as qciCall
** describes; with bNoVars the bound variables are left free. */
static void qciPrebind(QCtx *pSub, QCtx *pX, const QClause *pCl, const QRule *pR,
                       const unsigned char *aeArg, int bNoVars) {
  QComp *pC = pX->pC;
  int j;
  for (j = 0; j < pCl->nArg && pC->rc == SQLITE_OK; j++) {
    const EdnValue *pA = pCl->aArg[j];
    const EdnValue *pHead = pR->aHead[j];
    if (aeArg[j] == 1 && bNoVars) {
      continue;              /* joined on the answer columns instead */
    } else if (aeArg[j] == 1) {
      /* the caller's variable as it is there (substitution): a keyword
      ** an input, constant or function gave names its ident in an entity
      ** place, one a pattern bound is a value (qcCopyVar keeps which) */
      qcCopyVar(pSub, pHead->u.s.z, qcVarFind(pX, pA->u.s.z), 1);
    } else if (aeArg[j] == 2 && qcIsEntityLookup(pC, pA)) {
      /* A lookup ref names its entity, in the database the query reads. */
      qcBindVar(pSub, pHead->u.s.z, qcEntityLookupSql(pC, pA), VT_REF, NULL, 0);
    } else if (aeArg[j] == 2) {
      /* As ground binds it: typed by the first place that uses it (a
      ** keyword in an entity place is the ident's entity). */
      QBinding b;
      char zWhat[64];
      b.kind = QB_SCALAR;
      b.nVar = 1;
      b.aVar = &pHead;
      sqlite3_snprintf(sizeof zWhat, zWhat, "rule %s argument %d", pCl->zName, j + 1);
      qcbBind(pSub, &b, pA, -1, zWhat);
      qcVarLit(pSub, pHead->u.s.z, pA);
    }
  }
}

/* Can call pCl of head h (argument kinds aeArg, as qciCall) run its
** definitions without the caller's bound variables, joined on them after:
** every body binds each such head variable by its own patterns before any
** function or predicate reads it, and nothing else (not, or, rule calls,
** required places) mentions one, and none may be a keyword naming an
** ident? Then they need no copy of the caller. */
static int qciUnseeded(QCtx *pX, int h, const QClause *pCl, const unsigned char *aeArg) {
  QComp *pC = pX->pC;
  int i, j;
  for (j = 0; j < pCl->nArg; j++) {
    const QVar *pV;
    if (aeArg[j] != 1) continue;
    if (qcxReqPlace(pC, h, j, NULL)) return 0;
    /* A keyword (or a value of no known type) may name an ident where the
    ** body puts it in an entity place: only a passed-in value says so. */
    pV = qcVarFind(pX, pCl->aArg[j]->u.s.z);
    if (pV->nParam || pV->vt == VT_NONE || pV->vt == VT_KEYWORD || pV->vt == QVT_JSON) return 0;
  }
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    const char *azVar[64];
    int nVar = 0;
    if (pC->pRi->aiHeadOf[i] != h) continue;
    for (j = 0; j < pCl->nArg; j++) if (aeArg[j] == 1) azVar[nVar++] = pR->aHead[j]->u.s.z;
    if (!qcwClausesUnseeded(pR->aClause, pR->nClause, azVar, nVar)) return 0;
  }
  return 1;
}

/* Call pCl of the one-definition head h with bound and free arguments:
** the body's clauses join the caller's own FROM and WHERE (a scope of its
** own for the names, pre-bound to the caller's arguments), so no copy of
** the scope is made and a chain of such calls is linear. The body's scope
** starts from the caller's FROM and WHERE and replaces them when done: its
** pre-bound variables name the caller's tables, so whatever the body copies
** its scope into (a recursive call's origins, a seeded branch of or or of
** a rule) must carry those tables, a derived table in FROM seeing no
** sibling of its own FROM. Always 1. */
static int qciJoin(QCtx *pX, const QClause *pCl, int h, const unsigned char *aeArg,
                   int iDepth) {
  QComp *pC = pX->pC;
  const QRule *pR = NULL;
  QCtx sub;
  int i, j;
  for (i = 0; i < pC->rules.nRule; i++) if (pC->pRi->aiHeadOf[i] == h) pR = pC->rules.aRule[i];
  if (pX->nFrom >= QC_MAX_JOIN) {
    /* refused at the call that passes the limit, before the calls inside
    ** it copy the rows again (a chain of 2,048 such rules) */
    qcErr(pC, pCl->pForm, "rule %s joins its body into the rows before the call, which already join"
          " %d tables (each call of a rule of one definition joins its body into them); SQLite"
          " joins at most %d tables in one SELECT", pCl->zName, pX->nFrom, QC_MAX_JOIN);
    return 1;
  }
  if (qcTextBudget(pC, (sqlite3_int64)sqlite3_str_length(pX->pFrom) + sqlite3_str_length(pX->pWhere))) {
    return 1;
  }
  qcCtxInit(&sub, pC, pX);
  sub.nVisible = 0;          /* the body's variables are its own */
  sqlite3_str_appendall(sub.pFrom, sqlite3_str_value(pX->pFrom));
  sqlite3_str_appendall(sub.pWhere, sqlite3_str_value(pX->pWhere));
  sub.nFrom = pX->nFrom;
  sub.bCross = pX->bCross;
  sub.nWhere = pX->nWhere;
  sub.nPatternFrom = pX->nPatternFrom;
  sub.bUnlinked = pX->bUnlinked;
  sub.bRecRef = pX->bRecRef;
  sub.bTopRows = pX->pParent == NULL || pX->bTopRows;
  sub.bSemi = pX->bSemi;
  qcTermsCopy(&sub, pX);
  qciPrebind(&sub, pX, pCl, pR, aeArg, 0);
  /* A pre-bound argument keeps how deep the functions inlined in it nest,
  ** so the body's own functions bind it once (mentat_one, in the FROM
  ** the body shares with the caller) instead of nesting it further: a
  ** chain of calls stays within SQLite's parser stack. */
  for (j = 0; j < pCl->nArg && pC->rc == SQLITE_OK; j++) {
    QVar *pV, *pA;
    if (aeArg[j] != 1) continue;
    pV = qcVarFind(&sub, pR->aHead[j]->u.s.z);
    pA = qcVarFind(pX, pCl->aArg[j]->u.s.z);
    if (pV && pA && pV->nFnDepth < pA->nFnDepth) pV->nFnDepth = pA->nFnDepth;
  }
  qcwClauses(&sub, pR->aClause, pR->nClause, iDepth + 1);
  for (j = 0; j < pCl->nArg && pC->rc == SQLITE_OK; j++) {
    QVar *pV;
    if (aeArg[j] != 0) continue;
    pV = qcVarFind(&sub, pR->aHead[j]->u.s.z);
    if (pV == NULL || pV->zExpr == NULL) {
      qcErr(pC, pR->aHead[j], "rule %s does not bind %s", pR->zName, pR->aHead[j]->u.s.z);
    }
  }
  if (pC->rc == SQLITE_OK && (sqlite3_str_errcode(sub.pFrom) || sqlite3_str_errcode(sub.pWhere))) {
    qcNoMem(pC);
  }
  if (pC->rc == SQLITE_OK) {
    sqlite3_str_reset(pX->pFrom);
    sqlite3_str_appendall(pX->pFrom, sqlite3_str_value(sub.pFrom));
    pX->nFrom = sub.nFrom;
    pX->bCross = sub.bCross;
    qcWhereReset(pX);
    sqlite3_str_appendall(pX->pWhere, sqlite3_str_value(sub.pWhere));
    pX->nWhere = sub.nWhere;
    qcTermsTake(pX, &sub);
    if (sqlite3_str_errcode(pX->pFrom) || sqlite3_str_errcode(pX->pWhere)) qcNoMem(pC);
    if (sub.bUnlinked) pX->bUnlinked = 1;
  }
  if (sub.bRecRef) pX->bRecRef = 1;
  for (j = 0; j < pCl->nArg && pC->rc == SQLITE_OK; j++) {
    QVar *pV;
    if (aeArg[j] != 0) continue;
    pV = qcVarFind(&sub, pR->aHead[j]->u.s.z);
    qcBindVar(pX, pCl->aArg[j]->u.s.z, sqlite3_mprintf("%s", pV->zExpr), pV->vt,
              pV->zTag ? sqlite3_mprintf("%s", pV->zTag) : NULL, pV->bIntCol);
    /* and a result the body's functions computed inline says so */
    if (pC->rc == SQLITE_OK && (pV->bHetero || pV->bSeq)) {
      QVar *pN = qcVarFind(pX, pCl->aArg[j]->u.s.z);
      if (pN && pV->bHetero) pN->bHetero = 1;
      if (pN && pV->bSeq && pN->zExpr && strcmp(pN->zExpr, pV->zExpr) == 0) {
        pN->bSeq = pV->bSeq;
        pN->mColl = pV->mColl;
      }
    }
    if (pC->rc == SQLITE_OK && pV->nFnDepth > 0) {
      QVar *pN = qcVarFind(pX, pCl->aArg[j]->u.s.z);
      if (pN && pN->nFnDepth < pV->nFnDepth) pN->nFnDepth = pV->nFnDepth;
    }
  }
  qcCtxReset(&sub);
  return 1;
}

/* Compiles call pCl of the non-recursive head h in the caller's scope, as
** Datomic evaluates a rule: with the bindings the caller has passed in
** (its bound arguments and constants pre-bind the head's variables), so
** the body's functions and predicates see them. The definitions are the
** branches of an or-join on the arguments: a correlated EXISTS when every
** argument is bound, else a UNION derived table of the free arguments (and
** the bound ones, each branch then starting from a copy of the caller's
** scope). Returns 1 when compiled (or failed: pC->rc), 0 when the call
** keeps the rule's CTE: bound variables the derived table cannot see
** (qcCopyScope), or a collection input not yet in FROM. */
/* Sorts call pCl's arguments into aeArg (0 free, 1 bound variable, 2
** constant, 3 _), counting the free and bound ones. Returns 0 when an
** argument is a collection input still pending (not yet in FROM). */
static int qciClassify(QCtx *pX, const QClause *pCl, unsigned char *aeArg, ValueType *aVt,
                       int *pnFree, int *pnBound) {
  int j, nArity = pCl->nArg;
  for (j = 0; j < nArity; j++) {
    const EdnValue *pA = pCl->aArg[j];
    aVt[j] = (ValueType)-1;
    if (qpIsBlank(pA)) {
      aeArg[j] = 3;
    } else if (!ednIsVar(pA)) {
      aeArg[j] = 2;
    } else if (qcxArgBound(pX, pA)) {
      if (qcVarFind(pX, pA->u.s.z)->zExpr == NULL) return 0;   /* a pending IN list */
      aeArg[j] = 1;
      (*pnBound)++;
    } else {
      aeArg[j] = 0;
      (*pnFree)++;
    }
  }
  return 1;
}

/* Ends the or-join of the definitions written in pOut: a phase CTE, an
** EXISTS term (no free argument) or a derived table, then binds the free
** and bound arguments to its columns. */
static void qciFinish(QCtx *pX, const QClause *pCl, sqlite3_str *pOut, QPhase *pPh, int bPhase,
                      int nFree, const unsigned char *aeArg, const ValueType *aVt) {
  QComp *pC = pX->pC;
  int j, nArity = pCl->nArg;
  char *zOut, zAlias[24];
  if (bPhase) {
    unsigned char abCol[64];
    for (j = 0; j < nArity; j++) abCol[j] = aeArg[j] == 0 || aeArg[j] == 1;
    zOut = sqlite3_str_finish(pOut);
    if (zOut == NULL) qcNoMem(pC);
    sqlite3_snprintf(sizeof zAlias, zAlias, "%s", pPh->zAlias);
    qcPhaseEnd(pX, pPh, pC->rc == SQLITE_OK ? zOut : NULL, abCol, nArity);
    sqlite3_free(zOut);
  } else if (!nFree) {
    sqlite3_str_appendall(pOut, ")");
    zOut = sqlite3_str_finish(pOut);
    if (zOut == NULL) qcNoMem(pC);
    if (pC->rc == SQLITE_OK) qcWhere(pX, qcGuardRaising(pX, zOut));
    else sqlite3_free(zOut);
    return;
  } else {
    sqlite3_snprintf(sizeof zAlias, zAlias, "r%d", ++pC->nAlias);
    sqlite3_str_appendf(pOut, ") %s", zAlias);
    zOut = sqlite3_str_finish(pOut);
    if (zOut == NULL) qcNoMem(pC);
    if (pC->rc == SQLITE_OK) qcFrom(pX, zOut);
    else sqlite3_free(zOut);
  }
  for (j = 0; j < nArity && pC->rc == SQLITE_OK; j++) {
    if (aeArg[j] == 0 || aeArg[j] == 1) {
      ValueType vt = aVt[j] == (ValueType)-1 ? VT_NONE : aVt[j];
      qcBindVar(pX, pCl->aArg[j]->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, j), vt,
                sqlite3_mprintf("%s.t%d", zAlias, j), 0);
    }
  }
}

int qciCall(QCtx *pX, const QClause *pCl, int h, int iDepth) {
  QComp *pC = pX->pC;
  unsigned char aeArg[64];    /* 0 free, 1 bound variable, 2 constant, 3 _ */
  ValueType aVt[64];
  unsigned char abSeq[64];   /* qcSeqBits of its definitions */
  unsigned char abColl[64];  /* collection kinds (qcSeqBits) of its definitions */
  int i, j, nFree = 0, nBound = 0, nArity = pCl->nArg, nDef = 0, bSeed, bPhase = 0;
  QPhase ph;
  sqlite3_str *pOut;
  if (nArity > 64) return 0;
  if (!qciClassify(pX, pCl, aeArg, aVt, &nFree, &nBound)) return 0;
  for (i = 0; i < pC->rules.nRule; i++) if (pC->pRi->aiHeadOf[i] == h) nDef++;
  if (qcCompoundLimit(pC, pCl->pForm, nDef, "rule %s has %d definitions", pCl->zName, nDef)) return 1;
  /* One definition with free arguments (bound ones or not): its body
  ** joins the caller's rows, so a chain of such rules r1 -> r2 -> ...
  ** nests no subquery a level (issue 19: past SQLite's parser stack at 13-19). */
  if (nFree && nDef == 1) return qciJoin(pX, pCl, h, aeArg, iDepth);
  /* Binding nothing inside an EXISTS, whose rows only count by being
  ** there: joined in, not an EXISTS nested in it (a chain of such rules
  ** nested one subquery a level, past SQLite's parser stack at 10). */
  if (!nFree && nDef == 1 && pX->bSemi && !pX->bRecRef) return qciJoin(pX, pCl, h, aeArg, iDepth);
  if (nFree && nBound && pX->bRecRef) return 0;
  nDef = 0;
  /* Each branch starts from a copy of the scope so far. When that holds
  ** earlier calls (whose branches copied it too), SQLite would expand the
  ** copies of copies exponentially, so bodies that need nothing from the
  ** caller are not seeded (a UNION of their own, joined on the
  ** arguments); others read the rows so far named once (qcCollapse). */
  bSeed = nFree && nBound;
  if (bSeed && (pX->nFrom != pX->nPatternFrom || pX->nFrom >= QC_COLLAPSE_FROM)
      && qciUnseeded(pX, h, pCl, aeArg)) {
    bSeed = 0;
  }
  /* A chain of such calls: the rows so far seed a phase CTE (qcPhaseStart)
  ** the branches extend, so no CTE is named once per branch. */
  if (bSeed && (pX->nFrom != pX->nPatternFrom || pX->nFrom >= QC_COLLAPSE_FROM)) {
    int bFits = 1;
    for (i = 0; i < pC->rules.nRule && bFits; i++) {
      const QRule *pR = pC->rules.aRule[i];
      if (pC->pRi->aiHeadOf[i] == h) bFits = qcPhaseFits(pR->aClause, pR->nClause, 0);
    }
    if (bFits) bPhase = qcPhaseStart(pX, &ph);
    else qcCollapseHeavy(pX);
  }
  if (pC->rc) return 1;
  memset(abSeq, 0, sizeof abSeq);
  memset(abColl, 0, sizeof abColl);
  pOut = sqlite3_str_new(NULL);
  if (!bPhase) sqlite3_str_appendall(pOut, nFree ? "(" : "EXISTS (");
  for (i = 0; i < pC->rules.nRule && qcPoll(pC) == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    QCtx sub;
    char *zBody;
    int nCol = 0;
    if (pC->pRi->aiHeadOf[i] != h) continue;
    qcCtxInit(&sub, pC, pX);
    sub.nVisible = 0;        /* the body's variables are its own */
    sub.bSemi = !nFree;
    if (bSeed && qcCopyScope(&sub, pX) && bPhase) sub.bRecRef = 1;
    qciPrebind(&sub, pX, pCl, pR, aeArg, nFree && !bSeed);
    qcwClauses(&sub, pR->aClause, pR->nClause, iDepth + 1);
    if (nDef++) sqlite3_str_appendall(pOut, nFree ? " UNION " : " UNION ALL ");
    if (bPhase) {
      qcPhaseBranch(&ph, pOut);
      nCol = 1;
    } else {
      sqlite3_str_appendall(pOut, "SELECT ");
    }
    if (!nFree) sqlite3_str_appendall(pOut, "1");
    for (j = 0; j < nArity && nFree && pC->rc == SQLITE_OK; j++) {
      QVar *pV;
      /* Constants and _ are not joined; bound arguments are, to the copy
      ** of the caller's rows the branch started from. */
      if (aeArg[j] != 0 && aeArg[j] != 1) continue;
      pV = qcVarFind(&sub, pR->aHead[j]->u.s.z);
      if (pV == NULL || pV->zExpr == NULL) {
        qcErr(pC, pR->aHead[j], "rule %s does not bind %s", pR->zName, pR->aHead[j]->u.s.z);
        break;
      }
      qcSetColumns(pC, pOut, nCol++ == 0, j, pV, &aVt[j]);
      abSeq[j] |= (unsigned char)qcSeqBits(&sub, pV, &abColl[j]);
    }
    zBody = pC->rc == SQLITE_OK ? qcBody(&sub) : NULL;
    if (zBody) sqlite3_str_appendall(pOut, zBody);
    sqlite3_free(zBody);
    qcCtxReset(&sub);
  }
  qciFinish(pX, pCl, pOut, &ph, bPhase, nFree, aeArg, aVt);
  for (j = 0; j < nArity && nFree && nDef && pC->rc == SQLITE_OK; j++) {
    /* a free argument every definition bound to re-seq's seq is one (2:
    ** some definitions only; 3: maybe a set, map or list literal) */
    QVar *pN = aeArg[j] == 0 && abSeq[j] & 6 ? qcVarFind(pX, pCl->aArg[j]->u.s.z) : NULL;
    if (pN) pN->bSeq = abSeq[j] & 4 ? 3 : abSeq[j] == 2 ? 1 : 2;
    if (pN) pN->mColl = abColl[j];
  }
  return 1;
}

