/*
** query_compile_rules_ctx.c — what the rule-call compilers share: the rule
** set's heads and recursion groups (QRuleInfo, built once per query by
** qcxPrepare, which also splits an or that calls back into its recursion
** into definitions of its own) and the questions asked of them (which head
** a call names, whether a body calls a head, the one self call, the
** transitive-closure form, the required places), and a call's arguments
** (bound or not, constants as SQL, joined to answer columns). Takes the
** parsed rule set and scopes; gives QRuleInfo and SQL terms. Calls only the
** scope context (query_compile_scope.h): nothing in the rule compilers it
** serves, nor the clause list they compile bodies with.
*/
#include <string.h>
#include "query_compile_rules_ctx.h"

void qcxFree(QComp *pC) {
  if (pC->pRi) {
    sqlite3_free(pC->pRi->aHead);
    sqlite3_free(pC->pRi->aiHeadOf);
    sqlite3_free(pC->pRi);
    pC->pRi = NULL;
  }
}

int qcxHeadFind(const QRuleInfo *pRi, const char *zName, int nArity, int *pbArity) {
  int i;
  if (pbArity) *pbArity = 0;
  for (i = 0; i < pRi->nHead; i++) {
    if (strcmp(pRi->aHead[i].zName, zName) == 0) {
      if (pRi->aHead[i].nArity == nArity) return i;
      if (pbArity) *pbArity = 1;
    }
  }
  return -1;
}

/* Marks in aReach[iFrom * n + callee] every head the clauses call. */
static void qcxCalls(const QRuleInfo *pRi, QClause *const *a, int n, int iFrom,
                     unsigned char *aReach, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      int h = qcxHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL);
      if (h >= 0) aReach[iFrom * pRi->nHead + h] = 1;
    } else if (a[i]->nSub) {
      qcxCalls(pRi, a[i]->aSub, a[i]->nSub, iFrom, aReach, iDepth + 1);
    }
  }
}

/* Does clause list a[0..n) call (at any depth) a head from which head hTo
** is reached (aReach over the heads), hTo itself included? */
static int qcxCallsBack(const QRuleInfo *pRi, QClause *const *a, int n, int hTo,
                        const unsigned char *aReach, int iDepth) {
  int i, nH = pRi->nHead;
  if (iDepth > EDN_MAX_DEPTH) return 1;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      int h = qcxHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL);
      if (h >= 0 && (h == hTo || aReach[h * nH + hTo])) return 1;
    } else if (a[i]->nSub && qcxCallsBack(pRi, a[i]->aSub, a[i]->nSub, hTo, aReach, iDepth + 1)) {
      return 1;
    }
  }
  return 0;
}

/* May or-join pOr, a clause of definition pR, give way to its branches:
** does no variable of a branch that is not a join variable (the branch's
** own) also appear in pR's head or other clauses? A plain or always may
** (its branches' variables are the or's). */
static int qcxOrSplits(const QRule *pR, const QClause *pOr) {
  int b, i, j, k;
  if (pOr->kind == QC_OR) return 1;
  for (b = 0; b < pOr->nSub; b++) {
    const char *az[128];
    int n = qcClauseVars(pOr->aSub[b], az, 128, 0);
    if (n > 128) return 0;
    for (i = 0; i < n; i++) {
      for (j = 0; j < pOr->nJoin && strcmp(pOr->aJoin[j]->u.s.z, az[i]); j++) {}
      if (j < pOr->nJoin) continue;
      for (j = 0; j < pR->nHead; j++) if (strcmp(pR->aHead[j]->u.s.z, az[i]) == 0) return 0;
      for (k = 0; k < pR->nClause; k++) {
        const char *azC[128];
        int m, nC;
        if (pR->aClause[k] == pOr) continue;
        nC = qcClauseVars(pR->aClause[k], azC, 128, 0);
        if (nC > 128) return 0;
        for (m = 0; m < nC; m++) if (strcmp(azC[m], az[i]) == 0) return 0;
      }
    }
  }
  return 1;
}

/* The first top-level or / or-join of definition i that calls back into
** its recursion, or -1. */
static int qcxOrBack(const QRuleInfo *pRi, const QRule *pR, int h, const unsigned char *aReach) {
  int j;
  for (j = 0; j < pR->nClause; j++) {
    const QClause *pCl = pR->aClause[j];
    if ((pCl->kind == QC_OR || pCl->kind == QC_OR_JOIN)
        && qcxCallsBack(pRi, pCl->aSub, pCl->nSub, h, aReach, 0)) {
      return j;
    }
  }
  return -1;
}

/* A definition whose or (or or-join) calls back into its own recursion
** becomes one definition per branch, the branch's clauses in the or's
** place: the union of the definitions is the or's (Datomic: an or holds
** when any branch does), and SQLite's recursive CTE may name itself in no
** subquery, which the or would be. A call back inside not is recursion
** through negation, which has no fixpoint to compute: an error. Returns 1
** when it split a definition (pC->rules is then a new set, in the plan's
** arena), 0 when none or on error (pC->rc). */
static int qcxSplit(QComp *pC, const unsigned char *aReach) {
  const QRuleInfo *pRi = pC->pRi;
  QRule **aNew;
  int i, j, b, nNew = 0, bSplit = 0;
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int h = pRi->aiHeadOf[i], iOr;
    for (j = 0; j < pR->nClause; j++) {
      const QClause *pCl = pR->aClause[j];
      if ((pCl->kind == QC_NOT || pCl->kind == QC_NOT_JOIN)
          && qcxCallsBack(pRi, pCl->aSub, pCl->nSub, h, aReach, 0)) {
        qcErr(pC, pCl->pForm, "unsupported recursion: rule %s calls its own recursion inside"
              " not (recursion through negation has no fixpoint to compute)", pR->zName);
        return 0;
      }
    }
    iOr = qcxOrBack(pRi, pR, h, aReach);
    if (iOr >= 0 && !qcxOrSplits(pR, pR->aClause[iOr])) {
      qcErr(pC, pR->aClause[iOr]->pForm, "unsupported recursion: rule %s calls its own"
            " recursion inside an or-join whose branches have variables of their own that its"
            " other clauses use too; rename them", pR->zName);
      return 0;
    }
    nNew += iOr < 0 ? 1 : pR->aClause[iOr]->nSub;
    bSplit |= iOr >= 0;
  }
  if (!bSplit) return 0;
  aNew = ednArenaAlloc(pC->pArena, sizeof(QRule*) * (size_t)nNew);
  if (aNew == NULL) return qcNoMem(pC), 0;
  nNew = 0;
  for (i = 0; i < pC->rules.nRule; i++) {
    QRule *pR = pC->rules.aRule[i];
    int iOr = qcxOrBack(pRi, pR, pRi->aiHeadOf[i], aReach);
    if (iOr < 0) {
      aNew[nNew++] = pR;
      continue;
    }
    for (b = 0; b < pR->aClause[iOr]->nSub; b++) {
      QClause *pB = pR->aClause[iOr]->aSub[b];
      QClause *const *aB = pB->kind == QC_AND ? pB->aSub : &pB;
      int nB = pB->kind == QC_AND ? pB->nSub : 1, k, m = 0, q;
      QRule *pN = ednArenaAlloc(pC->pArena, sizeof(QRule));
      QClause **aCl = ednArenaAlloc(pC->pArena, sizeof(QClause*) * (size_t)(pR->nClause + nB));
      if (pN == NULL || aCl == NULL) return qcNoMem(pC), 0;
      *pN = *pR;
      for (k = 0; k < pR->nClause; k++) {
        if (k != iOr) aCl[m++] = pR->aClause[k];
        else for (q = 0; q < nB; q++) aCl[m++] = aB[q];
      }
      pN->aClause = aCl;
      pN->nClause = m;
      aNew[nNew++] = pN;
    }
  }
  pC->rules.aRule = aNew;
  pC->rules.nRule = nNew;
  return 1;
}

/* Is head h a group of its own that does not call itself (compiled into
** each call, qciHead)? */
static int qcxSingle(const QRuleInfo *pRi, int h, const unsigned char *aReach) {
  int i;
  for (i = 0; i < pRi->nHead; i++) if (i != h && pRi->aHead[i].iGroup == pRi->aHead[h].iGroup) return 0;
  return !aReach[h * pRi->nHead + h];
}

#define QCX_SHARE_SIZE 16
#define QCX_SIZE_CAP (1 << 24)

/* Is every variable of form p among those of the forms a[0..n) (the
** patterns and calls that bind them)? */
static int qcxVarsBound(const EdnValue *p, const EdnValue *const *a, int n) {
  const char *az[QCX_MAXV], *azB[QCX_MAXV];
  int nv = 0, nb, bOver = 0, i, j, k;
  qcxFormVars(p, az, &nv, &bOver, 0);
  if (bOver) return 0;
  for (i = 0; i < nv; i++) {
    int bFound = 0;
    for (j = 0; j < n && !bFound; j++) {
      nb = 0;
      qcxFormVars(a[j], azB, &nb, &bOver, 0);
      for (k = 0; k < nb; k++) if (strcmp(az[i], azB[k]) == 0) bFound = 1;
    }
    if (!bFound) return 0;
  }
  return 1;
}

static int qcxShareInfo(QComp *pC, int h, const unsigned char *aReach, int iDepth);

/* Adds to *pn the expansion size of clauses a[0..n) (a call of a
** non-recursive head its own, any other clause 0) and returns whether they
** need nothing from outside: patterns, calls of heads that need nothing,
** functions and predicates over what the patterns and calls of the same
** list (or aBound, the lists around it) bind, and not/or of such. */
static int qcxClausesClosed(QComp *pC, const unsigned char *aReach, QClause *const *a, int n,
                            const EdnValue **aBound, int nBound, int *pn, int iDepth) {
  const QRuleInfo *pRi = pC->pRi;
  const EdnValue *aB[QCX_MAXV];
  int i, nB = 0, bClosed = 1;
  if (iDepth > EDN_MAX_DEPTH) return 0;
  for (i = 0; i < nBound && nB < QCX_MAXV; i++) aB[nB++] = aBound[i];
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_PATTERN || a[i]->kind == QC_RULE) {
      if (nB == QCX_MAXV) return 0;
      aB[nB++] = a[i]->pForm;
    }
  }
  for (i = 0; i < n; i++) {
    const QClause *pCl = a[i];
    if (pCl->kind == QC_RULE) {
      int h2 = qcxHeadFind(pRi, pCl->zName, pCl->nArg, NULL);
      if (h2 < 0 || !qcxSingle(pRi, h2, aReach)) {
        bClosed = 0;
        *pn += 1;
      } else {
        if (!qcxShareInfo(pC, h2, aReach, iDepth + 1)) bClosed = 0;
        *pn += pRi->aHead[h2].nInline;
      }
    } else if (pCl->kind == QC_PRED || pCl->kind == QC_FN) {
      if (!qcxVarsBound(pCl->pForm, aB, nB)) bClosed = 0;
    } else if (pCl->nSub) {
      if (!qcxClausesClosed(pC, aReach, pCl->aSub, pCl->nSub, aB, nB, pn, iDepth + 1)) bClosed = 0;
    } else if (pCl->kind != QC_PATTERN) {
      bClosed = 0;
    }
    if (*pn > QCX_SIZE_CAP) *pn = QCX_SIZE_CAP;
  }
  return bClosed;
}

/* Works out head h's nInline and whether it needs nothing from the
** caller; returns 1 when it does not need anything. */
static int qcxShareInfo(QComp *pC, int h, const unsigned char *aReach, int iDepth) {
  QRuleHead *pH = &pC->pRi->aHead[h];
  int i, n = 0, bClosed = 1;
  if (pH->eShare == 3 || iDepth > EDN_MAX_DEPTH) return 0;
  if (pH->eShare) return pH->eShare == 4;
  pH->eShare = 3;
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    if (pC->pRi->aiHeadOf[i] != h) continue;
    n += 1;
    if (pR->nReq) bClosed = 0;
    if (!qcxClausesClosed(pC, aReach, pR->aClause, pR->nClause, NULL, 0, &n, iDepth)) bClosed = 0;
    if (n > QCX_SIZE_CAP) n = QCX_SIZE_CAP;
  }
  pH->nInline = n;
  pH->eShare = (unsigned char)(bClosed ? 4 : 2);
  return bClosed;
}


/* Does clause list a[0..n) call, at any depth, a head that is in aIn or
** reaches one (bNested: only calls nested in not/or count, and every call
** there)? */
static int qcxReachesSet(const QRuleInfo *pRi, const unsigned char *aReach,
                         const unsigned char *aIn, QClause *const *a, int n, int iDepth) {
  int i, k, nH = pRi->nHead;
  if (iDepth > EDN_MAX_DEPTH) return 1;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      int h2 = qcxHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL);
      if (h2 < 0) continue;
      if (aIn[h2]) return 1;
      for (k = 0; k < nH; k++) if (aIn[k] && aReach[h2 * nH + k]) return 1;
    } else if (a[i]->nSub && qcxReachesSet(pRi, aReach, aIn, a[i]->aSub, a[i]->nSub, iDepth + 1)) {
      return 1;
    }
  }
  return 0;
}

/* Does definition pR keep the shared group one linear recursion: at most
** one call into aIn, at the top of its body, and no other call (at any
** depth) that reaches aIn? */
static int qcxShareFits(const QRuleInfo *pRi, const unsigned char *aReach,
                        const unsigned char *aIn, const QRule *pR) {
  int i, nIn = 0;
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    if (pCl->kind == QC_RULE) {
      int h2 = qcxHeadFind(pRi, pCl->zName, pCl->nArg, NULL);
      if (h2 >= 0 && aIn[h2]) { nIn++; continue; }
    }
    if (qcxReachesSet(pRi, aReach, aIn, &pR->aClause[i], 1, 0)) return 0;
  }
  return nIn <= 1;
}

/* Heads of several definitions that need nothing from the caller and
** whose inlined expansion passes QCX_SHARE_SIZE (a chain of rules of two
** definitions each calling the next doubles at every step) are made one
** recursion group: its CTE holds each head's rows once and every call
** into it reads that CTE. SQLite copies a CTE's SELECT at every place
** that names it, so a CTE per head, named by each definition of the head
** above it, would expand exponentially too; a recursive CTE's step names
** itself without a copy. Positive rules have the same fixpoint however
** they are grouped. Each definition must call the group at most once, at
** its top (qcxShareFits). A head that does not fit (its definitions call
** the next head several times: non-linear) stays a group of its own,
** computed once as that group's CTE (bShared) rather than inlined: inlined,
** each call copies the rows before it into every definition of the head it
** calls, exponential in the levels at run time too (5 levels of 2 calls:
** 30 KB of SQL, 11 s; 4 levels of 3 calls: over a minute), while each
** level's CTE is its whole relation, made once per statement run (SQLite
** still copies a CTE's SELECT at each name, so w calls a level parse w^L
** copies: 14 levels of 2 calls, 1.3 s). */
static void qcxShareMerge(QComp *pC, const unsigned char *aReach) {
  QRuleInfo *pRi = pC->pRi;
  int h, i, g = -1, nIn = 0, bChange = 1, n = pRi->nHead;
  unsigned char *aIn = sqlite3_malloc64((sqlite3_uint64)n + 1);
  if (aIn == NULL) { qcNoMem(pC); return; }
  for (h = 0; h < n; h++) {
    int nDef = 0;
    for (i = 0; i < pC->rules.nRule; i++) nDef += pRi->aiHeadOf[i] == h;
    aIn[h] = (unsigned char)(qcxSingle(pRi, h, aReach) && qcxShareInfo(pC, h, aReach, 0)
                             && nDef > 1 && pRi->aHead[h].nInline > QCX_SHARE_SIZE);
    pRi->aHead[h].bShared = aIn[h];
  }
  while (bChange) {
    bChange = 0;
    for (i = 0; i < pC->rules.nRule; i++) {
      h = pRi->aiHeadOf[i];
      if (aIn[h] && !qcxShareFits(pRi, aReach, aIn, pC->rules.aRule[i])) {
        aIn[h] = 0;
        bChange = 1;
      }
    }
  }
  for (h = 0; h < n; h++) {
    if (!aIn[h]) continue;
    if (g < 0) g = h;
    nIn++;
  }
  if (nIn > 1) {
    for (h = 0; h < n; h++) {
      if (!aIn[h]) continue;
      pRi->aHead[h].iGroup = g;
      if (pRi->aHead[h].nArity > pRi->aHead[g].nCols) pRi->aHead[g].nCols = pRi->aHead[h].nArity;
    }
  }
  sqlite3_free(aIn);
}

/* Turns aReach, the n heads' direct calls, into which heads each reaches
** by one call or more (aReach[h * n + h]: h is recursive): a search from
** each head along the calls, n * (n + calls) steps, at most quadratic in
** the query (closing the matrix head by head, Warshall's way, is n^3). */
static void qcxClosure(QComp *pC, unsigned char *aReach, int n) {
  int *aiStart = sqlite3_malloc64(sizeof(int) * ((sqlite3_uint64)n + 1));
  int *aiQueue = sqlite3_malloc64(sizeof(int) * ((sqlite3_uint64)n + 1));
  int *aiCallee = NULL;
  sqlite3_int64 nEdge = 0;
  int h, i, k;
  if (aiStart == NULL || aiQueue == NULL) goto no_mem;
  for (h = 0; h < n; h++) for (k = 0; k < n; k++) nEdge += aReach[(size_t)h * n + k];
  aiCallee = sqlite3_malloc64(sizeof(int) * ((sqlite3_uint64)nEdge + 1));
  if (aiCallee == NULL) goto no_mem;
  nEdge = 0;
  for (h = 0; h < n; h++) {
    unsigned char *pRow = aReach + (size_t)h * n;
    aiStart[h] = (int)nEdge;
    for (k = 0; k < n; k++) if (pRow[k]) aiCallee[nEdge++] = k;
    memset(pRow, 0, (size_t)n);
  }
  aiStart[n] = (int)nEdge;
  for (h = 0; h < n && pC->rc == SQLITE_OK; h++) {
    unsigned char *pRow = aReach + (size_t)h * n;
    int nQ = 0, iQ = 0, u = h;
    for (;;) {
      for (i = aiStart[u]; i < aiStart[u + 1] && qcPoll(pC) == SQLITE_OK; i++) {
        k = aiCallee[i];
        if (!pRow[k]) { pRow[k] = 1; aiQueue[nQ++] = k; }
      }
      if (iQ == nQ || pC->rc != SQLITE_OK) break;
      u = aiQueue[iQ++];
    }
  }
  goto done;
no_mem:
  qcNoMem(pC);
done:
  sqlite3_free(aiStart);
  sqlite3_free(aiQueue);
  sqlite3_free(aiCallee);
}

static int qcxBuild(QComp *pC);

int qcxPrepare(QComp *pC) {
  /* A context left half-built by an error or an interrupt must not be
  ** read by the calls that go on to report it: it is freed here, so
  ** pC->pRi is either whole or NULL. */
  if (qcxBuild(pC) != SQLITE_OK) qcxFree(pC);
  return pC->rc;
}

/* qcxPrepare's work: heads, reachability, groups, splits, sharing. */
static int qcxBuild(QComp *pC) {
  QRuleInfo *pRi;
  unsigned char *aReach;
  int i, j, n, nPass = 0;
again:
  qcxFree(pC);
  pRi = sqlite3_malloc64(sizeof(QRuleInfo));
  if (pRi == NULL) return qcNoMem(pC);
  memset(pRi, 0, sizeof *pRi);
  pC->pRi = pRi;
  pRi->aHead = sqlite3_malloc64(sizeof(QRuleHead) * (pC->rules.nRule + 1));
  pRi->aiHeadOf = sqlite3_malloc64(sizeof(int) * (pC->rules.nRule + 1));
  if (pRi->aHead == NULL || pRi->aiHeadOf == NULL) return qcNoMem(pC);
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int h;
    if (qcPoll(pC)) return pC->rc;
    h = qcxHeadFind(pRi, pR->zName, pR->nHead, NULL);
    if (h < 0) {
      h = pRi->nHead++;
      memset(&pRi->aHead[h], 0, sizeof(QRuleHead));
      pRi->aHead[h].zName = pR->zName;
      pRi->aHead[h].nArity = pR->nHead;
    }
    pRi->aiHeadOf[i] = h;
  }
  n = pRi->nHead;
  aReach = sqlite3_malloc64((sqlite3_uint64)n * n + 1);
  if (aReach == NULL) return qcNoMem(pC);
  memset(aReach, 0, (size_t)n * n);
  for (i = 0; i < pC->rules.nRule && qcPoll(pC) == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    qcxCalls(pRi, pR->aClause, pR->nClause, pRi->aiHeadOf[i], aReach, 0);
  }
  if (pC->rc == SQLITE_OK) qcxClosure(pC, aReach, n);
  for (i = 0; i < n; i++) {
    pRi->aHead[i].iGroup = i;
    for (j = 0; j < i; j++) {
      if (aReach[i * n + j] && aReach[j * n + i]) { pRi->aHead[i].iGroup = j; break; }
    }
    if (pRi->aHead[i].nArity > pRi->aHead[pRi->aHead[i].iGroup].nCols) {
      pRi->aHead[pRi->aHead[i].iGroup].nCols = pRi->aHead[i].nArity;
    }
  }
  /* An or calling back into its recursion becomes definitions of its own
  ** (one nesting level per pass). */
  if (pC->rc == SQLITE_OK && nPass++ < EDN_MAX_DEPTH && qcxSplit(pC, aReach)) {
    sqlite3_free(aReach);
    goto again;
  }
  if (pC->rc == SQLITE_OK) qcxShareMerge(pC, aReach);
  sqlite3_free(aReach);
  return pC->rc;
}

/* The places *pi0 (?a) and *pi1 (?b) of a transitive-closure definition
** [(r ?a ?b) (r ?a ?c) (r ?c ?b)] (in either clause order) in a group of one
** head, whose other places (r ?a ?b ?lim) both calls hand on unchanged:
** non-linear, but its fixpoint equals the linear [(r ?a ?b) (base ?a ?c)
** (r ?c ?b)] where base is r's non-recursive definitions, which SQLite can
** iterate. Returns 0 when pR is no such definition. */
/* Do calls c1, c2 of pR's own head form the chain (r ?a ?c) (r ?c ?b) of
** head (r ?a ?b), other places handed on unchanged? *pi0, *pi1 get the
** places of ?a and ?b, *piFirst 0 when c1 is the call from ?a, 1 when c2. */
static int qcxChainMatch(const QRule *pR, const QClause *c1, const QClause *c2, int *pi0,
                         int *pi1, int *piFirst) {
  int i, j, k, i0, i1;
  if (c1->kind != QC_RULE || c2->kind != QC_RULE || c1->nArg != pR->nHead
      || c2->nArg != pR->nHead) {
    return 0;
  }
  if (strcmp(c1->zName, pR->zName) || strcmp(c2->zName, pR->zName)) return 0;
  for (i = 0; i < pR->nHead; i++) {
    if (!ednIsVar(c1->aArg[i]) || !ednIsVar(c2->aArg[i])) return 0;
    for (j = 0; j < i; j++) if (strcmp(pR->aHead[i]->u.s.z, pR->aHead[j]->u.s.z) == 0) return 0;
  }
  for (k = 0; k < 2; k++) {
    const QClause *a = k ? c2 : c1, *b = k ? c1 : c2;
    for (i0 = 0; i0 < pR->nHead; i0++) {
      for (i1 = 0; i1 < pR->nHead; i1++) {
        const char *zZ = a->aArg[i1]->u.s.z;
        int bOk = i0 != i1 && strcmp(a->aArg[i0]->u.s.z, pR->aHead[i0]->u.s.z) == 0
                  && strcmp(b->aArg[i1]->u.s.z, pR->aHead[i1]->u.s.z) == 0
                  && strcmp(b->aArg[i0]->u.s.z, zZ) == 0;
        for (j = 0; bOk && j < pR->nHead; j++) {
          if (strcmp(pR->aHead[j]->u.s.z, zZ) == 0) bOk = 0;
          if (j == i0 || j == i1) continue;
          if (strcmp(a->aArg[j]->u.s.z, pR->aHead[j]->u.s.z) != 0
              || strcmp(b->aArg[j]->u.s.z, pR->aHead[j]->u.s.z) != 0) {
            bOk = 0;
          }
        }
        if (bOk) {
          if (pi0) *pi0 = i0;
          if (pi1) *pi1 = i1;
          if (piFirst) *piFirst = k;
          return 1;
        }
      }
    }
  }
  return 0;
}

/* Is group g one head, named zName? */
static int qcxGroupOfOne(const QRuleInfo *pRi, int g, const char *zName) {
  int i;
  for (i = 0; i < pRi->nHead; i++) {
    if (pRi->aHead[i].iGroup == g && strcmp(pRi->aHead[i].zName, zName) != 0) return 0;
  }
  return 1;
}

int qcxChainPlaces(const QRuleInfo *pRi, int g, const QRule *pR, int *pi0, int *pi1) {
  if (!qcxGroupOfOne(pRi, g, pR->zName) || pR->nHead < 2 || pR->nClause != 2) return 0;
  return qcxChainMatch(pR, pR->aClause[0], pR->aClause[1], pi0, pi1, NULL);
}

void qcxFormVars(const EdnValue *p, const char **az, int *pn, int *pbOver, int iDepth) {
  int i;
  if (p == NULL || iDepth > EDN_MAX_DEPTH) { *pbOver = 1; return; }
  if (p->type == EDN_SYMBOL && ednIsVar(p)) {
    for (i = 0; i < *pn; i++) if (strcmp(az[i], p->u.s.z) == 0) return;
    if (*pn == QCX_MAXV) { *pbOver = 1; return; }
    az[(*pn)++] = p->u.s.z;
  } else if (p->type == EDN_LIST || p->type == EDN_VECTOR || p->type == EDN_MAP
             || p->type == EDN_SET) {
    for (i = 0; i < p->u.c.n; i++) qcxFormVars(p->u.c.a[i], az, pn, pbOver, iDepth + 1);
  } else if (p->type == EDN_TAGGED) {
    qcxFormVars(p->u.t.p, az, pn, pbOver, iDepth + 1);
  }
}

/* Which of the chain's ?a (bit 1), ?c (2), ?b (4) the clause variables
** az[0..n) name; the places handed on unchanged (aHead[j], j not i0 or i1)
** are the same in every step and name none. */
static int qcxChainBits(const QRule *pR, int i0, int i1, const char *zMid, const char *const *az,
                        int n, const char **azLocal, int *pnLocal) {
  int i, j, m = 0;
  *pnLocal = 0;
  for (i = 0; i < n; i++) {
    int bHead = 0;
    if (strcmp(az[i], pR->aHead[i0]->u.s.z) == 0) { m |= 1; continue; }
    if (strcmp(az[i], zMid) == 0) { m |= 2; continue; }
    if (strcmp(az[i], pR->aHead[i1]->u.s.z) == 0) { m |= 4; continue; }
    for (j = 0; j < pR->nHead; j++) if (strcmp(az[i], pR->aHead[j]->u.s.z) == 0) bHead = 1;
    if (!bHead) azLocal[(*pnLocal)++] = az[i];
  }
  return m;
}

int qcxChainFilter(const QRuleInfo *pRi, int g, const QRule *pR, int *piBase,
                   const char **pzA, const char **pzB) {
  int i, j, k, n = 0, i0 = 0, i1 = 1, iFirst = 0, iC1 = -1, iC2 = -1, mAll = 0;
  int aiComp[QCX_MAXV], amComp[QCX_MAXV];
  const char *aaz[QCX_MAXV][QCX_MAXV];
  int anLocal[QCX_MAXV];
  const QClause *a;
  if (!qcxGroupOfOne(pRi, g, pR->zName) || pR->nHead < 2 || pR->nClause < 3
      || pR->nClause - 2 > QCX_MAXV) {
    return 0;
  }
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    int h = pCl->kind == QC_RULE ? qcxHeadFind(pRi, pCl->zName, pCl->nArg, NULL) : -1;
    if (h >= 0 && pRi->aHead[h].iGroup == g) {
      if (iC2 >= 0) return 0;
      if (iC1 >= 0) iC2 = i; else iC1 = i;
    } else if (pCl->nSub) {
      for (h = 0; h < pRi->nHead; h++) {
        if (pRi->aHead[h].iGroup == g && qcxCallsHead(pRi, pCl->aSub, pCl->nSub, h, 1)) return 0;
      }
    }
  }
  if (iC2 < 0 || pR->aClause[iC1]->pSrc || pR->aClause[iC2]->pSrc
      || !qcxChainMatch(pR, pR->aClause[iC1], pR->aClause[iC2], &i0, &i1, &iFirst)) {
    return 0;
  }
  a = pR->aClause[iFirst ? iC2 : iC1];
  /* the other clauses, grouped by the variables of their own they share:
  ** each group is one condition, on at most one of ?a ?c ?b */
  for (i = 0; i < pR->nClause; i++) {
    const char *az[QCX_MAXV];
    int nv = 0, bOver = 0;
    if (i == iC1 || i == iC2) continue;
    qcxFormVars(pR->aClause[i]->pForm, az, &nv, &bOver, 0);
    if (bOver) return 0;
    amComp[n] = qcxChainBits(pR, i0, i1, a->aArg[i1]->u.s.z, az, nv, aaz[n],
                             &anLocal[n]);
    aiComp[n] = n;
    n++;
  }
  for (i = 0; i < n; i++) {
    for (j = 0; j < i; j++) {
      int bShare = 0, p, q;
      for (p = 0; p < anLocal[i] && !bShare; p++) {
        for (q = 0; q < anLocal[j]; q++) if (strcmp(aaz[i][p], aaz[j][q]) == 0) bShare = 1;
      }
      if (bShare && aiComp[i] != aiComp[j]) {
        int from = aiComp[i], to = aiComp[j];
        for (k = 0; k < n; k++) if (aiComp[k] == from) aiComp[k] = to;
      }
    }
  }
  for (i = 0; i < n; i++) {
    int m = 0;
    for (k = 0; k < n; k++) if (aiComp[k] == i) m |= amComp[k];
    if (m & (m - 1)) {
      /* one condition on two of them: name the first two */
      const char *az3[3];
      int n3 = 0;
      az3[0] = pR->aHead[i0]->u.s.z;
      az3[1] = a->aArg[i1]->u.s.z;
      az3[2] = pR->aHead[i1]->u.s.z;
      for (k = 0; k < 3; k++) {
        if (m & (1 << k)) {
          if (n3++ == 0) *pzA = az3[k]; else if (n3 == 2) *pzB = az3[k];
        }
      }
      return 2;
    }
    mAll |= m;
  }
  if ((mAll & 5) == 5) {
    *pzA = pR->aHead[i0]->u.s.z;
    *pzB = pR->aHead[i1]->u.s.z;
    return 3;
  }
  /* a condition on ?b: right-linear, (base ?a ?c) (r ?c ?b); on ?a:
  ** left-linear, (r ?a ?c) (base ?c ?b) */
  if (mAll & 1) *piBase = iFirst ? iC1 : iC2;
  else *piBase = iFirst ? iC2 : iC1;
  return (mAll & 5) ? 4 : 1;
}

int qcxIsChain(const QRuleInfo *pRi, int g, const QRule *pR) {
  return qcxChainPlaces(pRi, g, pR, NULL, NULL);
}

/* Does clause list a[0..n) call head h (at any depth)? */
int qcxCallsHead(const QRuleInfo *pRi, QClause *const *a, int n, int h, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return 1;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      if (qcxHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL) == h) return 1;
    } else if (a[i]->nSub && qcxCallsHead(pRi, a[i]->aSub, a[i]->nSub, h, iDepth + 1)) {
      return 1;
    }
  }
  return 0;
}

/* The index of the one top-level self call of definition pR, -1 for none,
** -2 when the shape does not fit (several, or one nested in not/or). */
int qcxSelfCall(const QRuleInfo *pRi, const QRule *pR, int h) {
  int i, iRec = -1;
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    if (pCl->kind == QC_RULE && qcxHeadFind(pRi, pCl->zName, pCl->nArg, NULL) == h) {
      if (iRec >= 0) return -2;
      iRec = i;
    } else if (pCl->nSub && qcxCallsHead(pRi, pCl->aSub, pCl->nSub, h, 1)) {
      return -2;
    }
  }
  return iRec;
}

/* The text that decides whether two definitions of group g compile alike
** but for their heads (SAME BODIES, query_compile_rules_magic.c): their
** head variables and clauses as written, a call into the group without
** its name. NULL when a clause nests others (such definitions are never
** merged) or on OOM (neither: the text is only a shortcut). */
char *qcxDefKey(const QRuleInfo *pRi, const QRule *pR, int g) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  int i, j, iRec = -1;
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    int hc = pCl->kind == QC_RULE ? qcxHeadFind(pRi, pCl->zName, pCl->nArg, NULL) : -1;
    if (hc >= 0 && pRi->aHead[hc].iGroup == g) iRec = i;
  }
  sqlite3_str_appendf(p, "%d %d", pR->nHead, pR->nClause);
  for (i = 0; i < pR->nHead; i++) {
    sqlite3_str_appendf(p, " %s%s", pR->abReq && pR->abReq[i] ? "!" : "", pR->aHead[i]->u.s.z);
  }
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    if (pCl->nSub || pCl->nJoin) {
      sqlite3_free(sqlite3_str_finish(p));
      return NULL;
    }
    sqlite3_str_appendf(p, " | %d %d %s ", (int)pCl->kind, pCl->nArg,
                        i == iRec ? "@" : pCl->zName ? pCl->zName : "-");
    if (pCl->pSrc) ednPrint(p, pCl->pSrc);
    for (j = 0; j < pCl->nArg; j++) {
      sqlite3_str_appendchar(p, 1, ' ');
      ednPrint(p, pCl->aArg[j]);
    }
    sqlite3_str_appendf(p, " : %d %d", (int)pCl->bind.kind, pCl->bind.nVar);
    for (j = 0; j < pCl->bind.nVar; j++) {
      sqlite3_str_appendchar(p, 1, ' ');
      ednPrint(p, pCl->bind.aVar[j]);
    }
  }
  if (sqlite3_str_errcode(p)) {
    sqlite3_free(sqlite3_str_finish(p));
    return NULL;
  }
  return sqlite3_str_finish(p);
}

/* The head definition pR calls in group g when it calls the group once,
** at the top of its body; -1 otherwise. */
static int qcxOneGroupCall(const QRuleInfo *pRi, const QRule *pR, int g) {
  int i, n = 0, hTo = -1;
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    int hc = pCl->kind == QC_RULE ? qcxHeadFind(pRi, pCl->zName, pCl->nArg, NULL) : -1;
    if (hc >= 0 && pRi->aHead[hc].iGroup == g) {
      n++;
      hTo = hc;
    }
  }
  return n == 1 ? hTo : -1;
}

/* What must differ among definitions compiled as one (SAME BODIES): with
** bSeeds (seeds map their head to the callee) the head of one that calls
** the group, -1 for one that does not; else (the group's CTE maps a row's
** head back to the reader's) the head it calls. */
static int qcxMergeValue(const QRuleInfo *pRi, const QRuleSet *pRules, int j, int g, int bSeeds) {
  if (!bSeeds) return qcxOneGroupCall(pRi, pRules->aRule[j], g);
  return qcxOneGroupCall(pRi, pRules->aRule[j], g) < 0 ? -1 : pRi->aiHeadOf[j];
}

unsigned char *qcxMergePlan(QComp *pC, int g, char ***pazKey, int bSeeds) {
  const QRuleInfo *pRi = pC->pRi;
  int n = pC->rules.nRule, i, j;
  unsigned char *aPlan = sqlite3_malloc64((sqlite3_uint64)n + 1);
  char **azKey = sqlite3_malloc64(sizeof(char*) * ((sqlite3_uint64)n + 1));
  *pazKey = azKey;
  if (aPlan == NULL || azKey == NULL) {
    sqlite3_free(aPlan);
    qcNoMem(pC);
    return NULL;
  }
  memset(aPlan, 0, (size_t)n + 1);
  for (i = 0; i < n; i++) {
    const QRule *pR = pC->rules.aRule[i];
    azKey[i] = pRi->aHead[pRi->aiHeadOf[i]].iGroup != g
               || (!bSeeds && qcxOneGroupCall(pRi, pR, g) < 0) ? NULL : qcxDefKey(pRi, pR, g);
  }
  for (i = 0; i < n; i++) {
    int nSame = 0, bDistinct = 1;
    if (azKey[i] == NULL || aPlan[i]) continue;
    for (j = i + 1; j < n; j++) {
      int k, v = qcxMergeValue(pRi, &pC->rules, j, g, bSeeds);
      if (azKey[j] == NULL || strcmp(azKey[i], azKey[j])) continue;
      nSame++;
      for (k = i; k < j && v >= 0; k++) {
        if (azKey[k] && strcmp(azKey[i], azKey[k]) == 0
            && qcxMergeValue(pRi, &pC->rules, k, g, bSeeds) == v) {
          bDistinct = 0;
        }
      }
    }
    if (nSame == 0 || !bDistinct) continue;
    aPlan[i] = 1;
    for (j = i + 1; j < n; j++) if (azKey[j] && strcmp(azKey[i], azKey[j]) == 0) aPlan[j] = 2;
  }
  return aPlan;
}

int qcxMergeArms(QComp *pC, int g, int i, char *const *azKey, char **pzIn, char **pzArms) {
  const QRuleInfo *pRi = pC->pRi;
  sqlite3_str *pIn = sqlite3_str_new(NULL), *pArms = sqlite3_str_new(NULL);
  int j, n = 0;
  for (j = i; j < pC->rules.nRule; j++) {
    if (j != i && (azKey[j] == NULL || strcmp(azKey[i], azKey[j]))) continue;
    sqlite3_str_appendf(pIn, "%s%d", n++ ? ", " : "", qcxOneGroupCall(pRi, pC->rules.aRule[j], g));
    sqlite3_str_appendf(pArms, " WHEN %d THEN %d", qcxOneGroupCall(pRi, pC->rules.aRule[j], g),
                        pRi->aiHeadOf[j]);
  }
  *pzIn = sqlite3_mprintf("IN (%s)", sqlite3_str_value(pIn));
  *pzArms = sqlite3_mprintf("%s", sqlite3_str_value(pArms));
  if (*pzIn == NULL || *pzArms == NULL || sqlite3_str_errcode(pIn) || sqlite3_str_errcode(pArms)) {
    qcNoMem(pC);
  }
  sqlite3_free(sqlite3_str_finish(pIn));
  sqlite3_free(sqlite3_str_finish(pArms));
  return pC->rc;
}

void qcxMarkArg(QCtx *pSub, const char *zName) {
  QVar *pV = qcVarFind(pSub, zName);
  if (pV) pV->bIdent = 1;
}

/* A constant argument of a rule call as SQL: a lookup ref names its entity
** (resolved in the database the query reads; *pvt VT_REF), any other
** constant is itself. NULL on error. */
char *qcxConst(QCtx *pX, const EdnValue *pA, ValueType *pvt) {
  if (qcIsEntityLookup(pX->pC, pA)) {
    *pvt = VT_REF;
    return qcEntityLookupSql(pX->pC, pA);
  }
  return qcConstExpr(pX, pA, VT_NONE, pvt);
}

/* The WHERE term joining rule answer column zCol (tag zTag) to argument pA
** of the call, a constant or a variable bound to zExpr: a keyword constant
** or a keyword input no place has typed yet matches the keyword value, or
** the entity whose ident it is where the rule puts it in an entity place
** (tag 0), as Datomic reads an ident wherever an entity goes; a lookup ref
** matches its entity. Variables of other types: the plain equality (their
** tag is the caller's business). NULL on error. */
static char *qcxArgTerm(QCtx *pX, const EdnValue *pA, const char *zCol, const char *zTag) {
  ValueType vt = VT_NONE;
  char *zE, *zTerm;
  if (ednIsVar(pA)) {
    QVar *pV = qcVarFind(pX, pA->u.s.z);
    zE = sqlite3_mprintf("%s", pV->zExpr);
    /* an input not yet typed by a place, or a keyword read as an ident */
    if (pV->nParam > 0 || qcVarIdent(pV)) vt = pV->vt;
  } else {
    zE = qcxConst(pX, pA, &vt);
  }
  if (zE == NULL) {
    qcNoMem(pX->pC);
    return NULL;
  }
  if (vt == VT_KEYWORD) {
    zTerm = sqlite3_mprintf("((%s = %d AND %s = %s) OR (%s = %d AND %s = (SELECT e FROM %s"
                            " WHERE a = %d AND v = %s AND value_type_tag = %d)))", zTag,
                            TAG_KEYWORD, zCol, zE, zTag, TAG_REF, zCol, pX->pC->zDatoms,
                            ENTID_DB_IDENT, zE, TAG_KEYWORD);
  } else if (!ednIsVar(pA) && vt == VT_REF) {
    zTerm = sqlite3_mprintf("(%s = %s AND %s IN (%d, %d))", zCol, zE, zTag, TAG_REF, TAG_NUMBER);
  } else {
    zTerm = sqlite3_mprintf("%s = %s", zCol, zE);
  }
  sqlite3_free(zE);
  if (zTerm == NULL) qcNoMem(pX->pC);
  return zTerm;
}

/* Joins argument i of a call to its answer columns <zAlias>.c<i>/.t<i>. */
void qcxArgWhere(QCtx *pX, const EdnValue *pA, const char *zAlias, int i) {
  char zCol[40], zTag[40];
  char *zTerm;
  sqlite3_snprintf(sizeof zCol, zCol, "%s.c%d", zAlias, i);
  sqlite3_snprintf(sizeof zTag, zTag, "%s.t%d", zAlias, i);
  zTerm = qcxArgTerm(pX, pA, zCol, zTag);
  if (zTerm) qcWhere(pX, zTerm);
}

/* Is place j of head h required ([?a] in the head of any definition)? *ppR
** gets that definition. */
int qcxReqPlace(QComp *pC, int h, int j, const QRule **ppR) {
  int i;
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    if (pC->pRi->aiHeadOf[i] == h && j < pR->nHead && pR->abReq[j]) {
      if (ppR) *ppR = pR;
      return 1;
    }
  }
  return 0;
}

/* Is argument pA bound at the call: a constant, or a variable pX binds? */
int qcxArgBound(QCtx *pX, const EdnValue *pA) {
  QVar *pV;
  if (qpIsBlank(pA)) return 0;
  if (!ednIsVar(pA)) return 1;
  pV = qcVarFind(pX, pA->u.s.z);
  return pV && (pV->zExpr || pV->zInList);
}
