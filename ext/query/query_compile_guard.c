/*
** query_compile_guard.c — the guards of expressions that can fail at run
** time (qcGuard): the WHERE terms a scope keeps with the clause that made
** each, the terms before a clause in clause order, gates, and the wait of
** a later filter for an earlier failing clause (qcTermWait). Takes a
** scope's terms and its clause path; gives SQL text. Calls only the scope
** helpers (query_compile_scope.h explains why the guards exist).
*/
#include <string.h>
#include "query_compile_scope.h"

/* Frees the terms qcWhere kept and forgets the gate. */
void qcTermsClear(QCtx *pX) {
  int i;
  for (i = 0; i < pX->nTerm; i++) {
    sqlite3_free(pX->aTerm[i].z);
    sqlite3_free(pX->aTerm[i].zCore);
  }
  sqlite3_free(pX->zGuardFirst);
  pX->zGuardFirst = NULL;
  sqlite3_free(pX->aTerm);
  pX->aTerm = NULL;
  pX->nTerm = pX->nTermAlloc = pX->iTerm0 = pX->nTermCopied = 0;
  pX->iLastRaise = -1;
  pX->zGate[0] = 0;
}

/* A free slot at the end of pX->aTerm, or NULL on OOM. */
static QTerm *qcTermNew(QCtx *pX) {
  QTerm *p;
  if (pX->nTerm == pX->nTermAlloc) {
    int nNew = pX->nTermAlloc ? 2 * pX->nTermAlloc : 16;
    QTerm *aNew = sqlite3_realloc64(pX->aTerm, sizeof(QTerm) * (sqlite3_uint64)nNew);
    if (aNew == NULL) return NULL;
    pX->aTerm = aNew;
    pX->nTermAlloc = nNew;
  }
  p = &pX->aTerm[pX->nTerm];
  memset(p, 0, sizeof *p);
  return p;
}

/* Stamps term p as made by the clause pX is compiling. */
static void qcTermStamp(const QCtx *pX, QTerm *p) {
  int n = pX->nPath < QC_PATH_MAX ? pX->nPath : QC_PATH_MAX;
  memcpy(p->aPath, pX->aPath, sizeof(int) * (size_t)n);
  p->nPath = (unsigned char)n;
  p->eRel = QC_REL_PATH;
}

/* Keeps a copy of term z as made by the current clause, for qcGuard. */
void qcTermKeep(QCtx *pX, const char *z) {
  QTerm *p = qcTermNew(pX);
  if (p == NULL || (p->z = sqlite3_mprintf("%s", z)) == NULL) {
    qcNoMem(pX->pC);
    return;
  }
  qcTermStamp(pX, p);
  p->bRaise = (unsigned char)qcRaises(z);
  p->bFull = p->bRaise && pX->bGuardNow;
  if (p->bFull) p->nNest = (unsigned char)pX->nGuardNest;
  if (p->bFull && pX->zGuardFirst && strstr(z, pX->zGuardFirst)) {
    p->zCore = sqlite3_mprintf("%s", pX->zGuardFirst);
    if (p->zCore == NULL) qcNoMem(pX->pC);
  }
  if (p->bRaise) pX->iLastRaise = pX->nTerm;
  pX->nTerm++;
}

/* Was term p made by a clause before the one pX is compiling? A term of
** an enclosing clause made before its body (a rule call's arguments) is. */
static int qcTermBefore(const QCtx *pX, const QTerm *p) {
  int n = pX->nPath < QC_PATH_MAX ? pX->nPath : QC_PATH_MAX;
  int i;
  if (p->eRel != QC_REL_PATH) return p->eRel == QC_REL_BEFORE;
  for (i = 0; i < p->nPath && i < n; i++) {
    if (p->aPath[i] != pX->aPath[i]) return p->aPath[i] < pX->aPath[i];
  }
  return p->nPath < n;
}

/* Does term aTerm[j], guarded by qcGuard (bFull), imply aTerm[i]: made
** before it, by a clause before its own? Its guard held aTerm[i] then. */
static int qcTermImplies(const QCtx *pX, int j, int i) {
  const QTerm *pJ = &pX->aTerm[j], *p = &pX->aTerm[i];
  int k;
  if (i >= j || pJ->eRel != QC_REL_PATH) return 0;
  if (p->eRel != QC_REL_PATH) return p->eRel == QC_REL_BEFORE;
  for (k = 0; k < p->nPath && k < pJ->nPath; k++) {
    if (p->aPath[k] != pJ->aPath[k]) return p->aPath[k] < pJ->aPath[k];
  }
  return p->nPath < pJ->nPath;
}

/* The terms a guard of the current clause needs, " AND "-joined into p
** after the n already there (the count then; *pbSub set when one holds a
** subquery, *pnNest the most guards one nests): the gate, the last
** guarded term before the clause, and the terms before the clause that
** neither holds. bRaiseOnly: only terms that can fail (qcTermWait).
** With bMark each becomes held by a new gate. */
static int qcTermsBefore(QCtx *pX, sqlite3_str *p, int bRaiseOnly, int *pbSub, int bMark, int n,
                         int *pnNest, const char *zHolding, const char *zFor) {
  int i, j = -1, jOne = -1;
  for (i = pX->nTerm - 1; i >= pX->iTerm0; i--) {
    const QTerm *pT = &pX->aTerm[i];
    if (pT->bFull && !pT->bGated && qcTermBefore(pX, pT)) { j = i; break; }
  }
  /* The guarded expression names a guarded term's mentat_one row: SQLite
  ** evaluates it only where that row is, so where the term and all it
  ** implies hold. */
  for (i = pX->nTerm - 1; zFor && !bMark && i >= pX->iTerm0; i--) {
    const QTerm *pT = &pX->aTerm[i];
    char zRef[24];
    const char *q;
    if (!pT->zOne[0] || !pT->bFull || !qcTermBefore(pX, pT)) continue;
    sqlite3_snprintf(sizeof zRef, zRef, "%s.", pT->zOne);
    for (q = strstr(zFor, zRef); q; q = strstr(q + 1, zRef)) {
      /* "f12." is not "f123.": the alias must start a name */
      if (q == zFor || !(q[-1] == '_' || (q[-1] >= 'a' && q[-1] <= 'z') || (q[-1] >= '0' && q[-1] <= '9'))) break;
    }
    if (q) { jOne = i; break; }
  }
  for (i = pX->iTerm0; i < pX->nTerm; i++) {
    QTerm *pT = &pX->aTerm[i];
    if (pT->bGated || !qcTermBefore(pX, pT) || (bRaiseOnly && !pT->bRaise)) continue;
    if (bMark) { pT->bGated = 1; continue; }
    if (j >= 0 && qcTermImplies(pX, j, i)) continue;
    if (jOne >= 0 && (i == jOne || qcTermImplies(pX, jOne, i))) continue;
    /* a term holding its guarded expression evaluates it anyway */
    if (zHolding && pT->zCore && strstr(zHolding, pT->zCore)) continue;
    sqlite3_str_appendf(p, "%s(%s)", n++ ? " AND " : "", pT->z);
    if (pbSub && strstr(pT->z, "SELECT")) *pbSub = 1;
    if (pnNest && pT->nNest > *pnNest) *pnNest = pT->nNest;
  }
  return n;
}

int qcRaises(const char *z) {
  /* the functions of ext/qfunc that fail for some arguments (besides
  ** running out of memory) */
  static const char *const azFail[] = {
    "add(", "sub(", "mul(", "div(", "quot(", "rem(", "mod(", "inc(", "dec(", "abs(",
    "comparable(", "subs(", "re_find(", "re_matches(", "re_seq(", "tx_point(", "num(", "arg(",
    "fill(",
  };
  size_t i;
  if (z == NULL) return 0;
  while ((z = strstr(z, "mentat_")) != NULL) {
    z += 7;
    for (i = 0; i < sizeof azFail / sizeof azFail[0]; i++) {
      if (strncmp(z, azFail[i], strlen(azFail[i])) == 0) return 1;
    }
  }
  return 0;
}

char *qcGuard(QCtx *pX, char *zExpr) {
  QComp *pC = pX->pC;
  sqlite3_str *p;
  char *zCond, *zOut;
  int n, bSub = 0, nNest = 0;
  if (zExpr == NULL) { qcNoMem(pC); return NULL; }
  p = sqlite3_str_new(NULL);
  if (pX->zGate[0]) sqlite3_str_appendf(p, "%s.value", pX->zGate);
  n = qcTermsBefore(pX, p, 0, &bSub, 0, pX->zGate[0] != 0, &nNest, NULL, zExpr);
  pX->bGuardNow = 1;
  pX->nGuardNest = nNest + 1;
  if (n == 0) {
    /* nothing to wait for: guarded as it is */
    sqlite3_free(sqlite3_str_finish(p));
    if (pX->zGuardFirst == NULL && (pX->zGuardFirst = sqlite3_mprintf("%s", zExpr)) == NULL) {
      qcNoMem(pC);
    }
    return zExpr;
  }
  /* A subquery (a not, an or, a rule call) goes to a gate too: written
  ** inline it would run again wherever the guarded value is used. */
  if ((bSub || nNest >= QC_GUARD_NEST || sqlite3_str_length(p) > QC_GUARD_INLINE)
      && sqlite3_str_errcode(p) == SQLITE_OK) {
    /* A gate: one row where the terms hold, none where they fail. Later
    ** guards name it, not its terms again. */
    char zAlias[16];
    sqlite3_snprintf(sizeof zAlias, zAlias, "g%d", ++pC->nAlias);
    qcFrom(pX, sqlite3_mprintf("mentat_one(CASE WHEN %s THEN 1 END) %s", sqlite3_str_value(p),
                               zAlias));
    qcTermsBefore(pX, NULL, 0, NULL, 1, 0, NULL, NULL, NULL);
    pX->nGuardNest = 1;
    while (pX->iTerm0 < pX->nTerm && pX->aTerm[pX->iTerm0].bGated) pX->iTerm0++;
    memcpy(pX->zGate, zAlias, sizeof zAlias);
    sqlite3_str_reset(p);
    sqlite3_str_appendf(p, "%s.value", zAlias);
  }
  zCond = sqlite3_str_finish(p);
  zOut = zCond ? sqlite3_mprintf("(CASE WHEN %s THEN %s END)", zCond, zExpr) : NULL;
  sqlite3_free(zCond);
  sqlite3_free(zExpr);
  /* a guarded expression copied into the next one's guard doubles at each
  ** step: counted in the compiler's text budget, so such a chain ends at
  ** its error instead of gigabytes (fuzz_query) */
  if (zOut && qcTextBudget(pC, (sqlite3_int64)strlen(zOut))) {
    sqlite3_free(zOut);
    return NULL;
  }
  if (zOut == NULL) qcNoMem(pC);
  else if (pX->zGuardFirst == NULL && (pX->zGuardFirst = sqlite3_mprintf("%s", zOut)) == NULL) {
    qcNoMem(pC);
  }
  return zOut;
}

/* Can zExpr fail outside the guarded expressions it holds (a variable a
** failing function bound, whose guard holds the clauses before that one)?
** Those fail only where Datomic fails at their own clause. */
static int qcRaisesUnguarded(const QCtx *pX, const char *zExpr) {
  const QCtx *pS;
  char *z = sqlite3_mprintf("%s", zExpr), *q;
  int i, bRaise;
  if (z == NULL) return 1;
  for (pS = pX; pS; pS = pS->pParent) {
    for (i = 0; i < pS->nTerm; i++) {
      const char *zCore = pS->aTerm[i].zCore;
      size_t n;
      if (zCore == NULL) continue;
      n = strlen(zCore);
      while ((q = strstr(z, zCore)) != NULL) memset(q, ' ', n);
    }
  }
  bRaise = qcRaises(z);
  sqlite3_free(z);
  return bRaise;
}

char *qcGuardRaising(QCtx *pX, char *zExpr) {
  if (zExpr == NULL || !qcRaises(zExpr) || !qcRaisesUnguarded(pX, zExpr)) return zExpr;
  return qcGuard(pX, zExpr);
}

int qcTermsCopy(QCtx *pSub, const QCtx *pX) {
  int i;
  for (i = 0; i < pX->nTerm; i++) {
    QTerm *p = qcTermNew(pSub);
    if (p == NULL || (p->z = sqlite3_mprintf("%s", pX->aTerm[i].z)) == NULL) {
      qcNoMem(pX->pC);
      return 0;
    }
    memcpy(p->aPath, pX->aTerm[i].aPath, sizeof p->aPath);
    p->nPath = pX->aTerm[i].nPath;
    p->bGated = pX->aTerm[i].bGated;
    p->eRelWas = pX->aTerm[i].eRel;
    p->bRaise = pX->aTerm[i].bRaise;
    p->bFull = pX->aTerm[i].bFull;
    memcpy(p->zOne, pX->aTerm[i].zOne, sizeof p->zOne);
    if (pX->aTerm[i].zCore && (p->zCore = sqlite3_mprintf("%s", pX->aTerm[i].zCore)) == NULL) {
      sqlite3_free(p->z);
      qcNoMem(pX->pC);
      return 0;
    }
    p->nNest = pX->aTerm[i].nNest;
    p->eRel = qcTermBefore(pX, &pX->aTerm[i]) ? QC_REL_BEFORE : QC_REL_AFTER;
    if (p->bRaise) pSub->iLastRaise = pSub->nTerm;
    pSub->nTerm++;
  }
  pSub->iTerm0 = pX->iTerm0;
  pSub->nTermCopied = pX->nTerm;
  memcpy(pSub->zGate, pX->zGate, sizeof pX->zGate);
  return 1;
}

void qcTermsTake(QCtx *pX, QCtx *pSub) {
  int i;
  qcTermsClear(pX);
  for (i = 0; i < pSub->nTerm; i++) {
    QTerm *p = qcTermNew(pX);
    if (p == NULL) { qcNoMem(pX->pC); return; }
    *p = pSub->aTerm[i];
    pSub->aTerm[i].z = NULL;
    pSub->aTerm[i].zCore = NULL;
    /* pX's own terms stand as they stood; pSub's are the current clause's */
    if (i < pSub->nTermCopied) p->eRel = p->eRelWas;
    else qcTermStamp(pX, p);
    if (p->bRaise) pX->iLastRaise = pX->nTerm;
    pX->nTerm++;
  }
  pX->iTerm0 = pSub->iTerm0 < pX->nTerm ? pSub->iTerm0 : pX->nTerm;
  memcpy(pX->zGate, pSub->zGate, sizeof pX->zGate);
}

/* zTerm (taken over), a term of a filter clause, made to wait for the
** terms of the clauses before it that can fail at run time: evaluated
** where SQLite tests it, they fail first (see qcWhere). A term that can
** fail itself is guarded already (qcGuard: its guard holds them). */
void qcTermsBoundOnce(QCtx *pX, const char *zExpr, const char *zAlias) {
  int i;
  for (i = pX->iTerm0; i < pX->nTerm; i++) {
    QTerm *pT = &pX->aTerm[i];
    if (pT->zCore && !pT->zOne[0] && strcmp(pT->zCore, zExpr) == 0) {
      sqlite3_snprintf(sizeof pT->zOne, pT->zOne, "%s", zAlias);
    }
  }
}

char *qcTermWait(QCtx *pX, char *zTerm) {
  sqlite3_str *p;
  char *zCond, *zOut;
  int n;
  if (!pX->bFilterNow || pX->bGuardNow || pX->iLastRaise < pX->iTerm0) return zTerm;
  p = sqlite3_str_new(NULL);
  n = qcTermsBefore(pX, p, 1, NULL, 0, 0, NULL, zTerm, NULL);
  if (n == 0) {
    sqlite3_free(sqlite3_str_finish(p));
    return zTerm;
  }
  /* a gate holds the earlier ones (their rows pass it) */
  if (pX->zGate[0]) sqlite3_str_appendf(p, " AND %s.value", pX->zGate);
  zCond = sqlite3_str_finish(p);
  zOut = zCond ? sqlite3_mprintf("(CASE WHEN %s THEN %s END)", zCond, zTerm) : NULL;
  sqlite3_free(zCond);
  sqlite3_free(zTerm);
  if (zOut && qcTextBudget(pX->pC, (sqlite3_int64)strlen(zOut))) {   /* as in qcGuard */
    sqlite3_free(zOut);
    return NULL;
  }
  return zOut;
}

