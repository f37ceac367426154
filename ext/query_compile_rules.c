/*
** query_compile_rules.c — rule calls, with the rule set bound to `%`.
**
** HOW IT WORKS
** Rules are grouped by head (name and arity); heads that call each other,
** directly or not, form a recursion group (strongly connected components
** of the call graph, by transitive closure: rule sets are small). Each group
** compiles once per query into ONE CTE `rulesK(r, c0.., t0..)` — r is the
** head's number, cK/tK its arguments' values and tags — recursive when a
** body calls its own group, so recursion, several definitions and mutual
** recursion become UNION branches SQLite iterates to a fixpoint; UNION's
** set semantics make cyclic data terminate. A call is a join with the CTE.
*/
#include <string.h>
#include "query_compile.h"

/* --------------------------------------------------------------- rules */

/* Rules are grouped by head (name and arity). Heads that call each other
** (directly or not) form a recursion group; each group is one CTE
** `rulesK(r, c0.., t0..)`, recursive when a body calls its own group.
** Groups are emitted before the groups that call them, so a body may call
** other groups any number of times, but SQLite lets a recursive SELECT name
** its own CTE only once: a body that calls its own group twice (non-linear
** recursion) is refused with a clear error, never run — except the
** transitive closure (r ?a ?c) (r ?c ?b), rewritten to its linear form. */
typedef struct QRuleHead {
  const char *zName;
  int nArity;
  int iGroup;
  int nCols;              /* widest head in the group (on the group's first) */
  unsigned char eState;   /* 0 not emitted, 1 building, 2 emitted */
} QRuleHead;

typedef struct QRuleInfo {
  int nHead;
  QRuleHead *aHead;
  int *aiHeadOf;          /* per rule definition: its head */
} QRuleInfo;

void qcRulesFree(QComp *pC) {
  if (pC->pRi) {
    sqlite3_free(pC->pRi->aHead);
    sqlite3_free(pC->pRi->aiHeadOf);
    sqlite3_free(pC->pRi);
    pC->pRi = NULL;
  }
}

static int qcHeadFind(const QRuleInfo *pRi, const char *zName, int nArity, int *pbArity) {
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
static void qcCalls(const QRuleInfo *pRi, QClause *const *a, int n, int iFrom,
                    unsigned char *aReach, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      int h = qcHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL);
      if (h >= 0) aReach[iFrom * pRi->nHead + h] = 1;
    } else if (a[i]->nSub) {
      qcCalls(pRi, a[i]->aSub, a[i]->nSub, iFrom, aReach, iDepth + 1);
    }
  }
}

static int qcRulesPrepare(QComp *pC) {
  QRuleInfo *pRi;
  unsigned char *aReach;
  int i, j, k, n;
  pRi = sqlite3_malloc64(sizeof(QRuleInfo));
  if (pRi == NULL) return qcNoMem(pC);
  memset(pRi, 0, sizeof *pRi);
  pC->pRi = pRi;
  pRi->aHead = sqlite3_malloc64(sizeof(QRuleHead) * (pC->rules.nRule + 1));
  pRi->aiHeadOf = sqlite3_malloc64(sizeof(int) * (pC->rules.nRule + 1));
  if (pRi->aHead == NULL || pRi->aiHeadOf == NULL) return qcNoMem(pC);
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int h = qcHeadFind(pRi, pR->zName, pR->nHead, NULL);
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
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    qcCalls(pRi, pR->aClause, pR->nClause, pRi->aiHeadOf[i], aReach, 0);
  }
  /* Transitive closure (Warshall): rule sets are small. */
  for (k = 0; k < n; k++) {
    for (i = 0; i < n; i++) {
      if (!aReach[i * n + k]) continue;
      for (j = 0; j < n; j++) if (aReach[k * n + j]) aReach[i * n + j] = 1;
    }
  }
  for (i = 0; i < n; i++) {
    pRi->aHead[i].iGroup = i;
    for (j = 0; j < i; j++) {
      if (aReach[i * n + j] && aReach[j * n + i]) { pRi->aHead[i].iGroup = j; break; }
    }
    if (pRi->aHead[i].nArity > pRi->aHead[pRi->aHead[i].iGroup].nCols) {
      pRi->aHead[pRi->aHead[i].iGroup].nCols = pRi->aHead[i].nArity;
    }
  }
  sqlite3_free(aReach);
  return pC->rc;
}

/* A transitive-closure definition [(r ?a ?b) (r ?a ?c) (r ?c ?b)] (in
** either clause order) in a group of one binary head: non-linear, but its
** fixpoint equals the linear [(r ?a ?b) (base ?a ?c) (r ?c ?b)] where base
** is r's non-recursive definitions, which SQLite can iterate. */
static int qcIsChain(const QRuleInfo *pRi, int g, const QRule *pR) {
  const QClause *c1, *c2;
  const char *zH0, *zH1;
  int i;
  for (i = 0; i < pRi->nHead; i++) {
    if (pRi->aHead[i].iGroup == g && strcmp(pRi->aHead[i].zName, pR->zName) != 0) return 0;
  }
  if (pR->nHead != 2 || pR->nClause != 2) return 0;
  c1 = pR->aClause[0];
  c2 = pR->aClause[1];
  if (c1->kind != QC_RULE || c2->kind != QC_RULE || c1->nArg != 2 || c2->nArg != 2) return 0;
  if (strcmp(c1->zName, pR->zName) || strcmp(c2->zName, pR->zName)) return 0;
  for (i = 0; i < 2; i++) {
    if (!ednIsVar(c1->aArg[i]) || !ednIsVar(c2->aArg[i])) return 0;
  }
  zH0 = pR->aHead[0]->u.s.z;
  zH1 = pR->aHead[1]->u.s.z;
  if (strcmp(zH0, zH1) == 0) return 0;
  if (strcmp(c2->aArg[0]->u.s.z, zH0) == 0) {   /* written right to left */
    const QClause *t = c1;
    c1 = c2;
    c2 = t;
  }
  return strcmp(c1->aArg[0]->u.s.z, zH0) == 0 && strcmp(c2->aArg[1]->u.s.z, zH1) == 0
      && strcmp(c1->aArg[1]->u.s.z, c2->aArg[0]->u.s.z) == 0
      && strcmp(c1->aArg[1]->u.s.z, zH0) != 0 && strcmp(c1->aArg[1]->u.s.z, zH1) != 0;
}

/* Compiles every definition of group g into the CTE rules<g>. */
static int qcRulesGroup(QComp *pC, int g, int iDepth) {
  QRuleInfo *pRi = pC->pRi;
  sqlite3_str *pBase = sqlite3_str_new(NULL);
  sqlite3_str *pRec = sqlite3_str_new(NULL);
  int i, j, nBase = 0, nRec = 0, nChain = 0, iChainHead = 0, nMax = pRi->aHead[g].nCols;
  int nSelfSave = pC->nSelfRef;
  const char *zFirst = pRi->aHead[g].zName;
  if (iDepth > EDN_MAX_DEPTH) return qcErr(pC, NULL, "rules nested too deep");
  for (i = 0; i < pRi->nHead; i++) if (pRi->aHead[i].iGroup == g) pRi->aHead[i].eState = 1;
  for (i = 0; i < pC->rules.nRule && pC->rc == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int h = pRi->aiHeadOf[i];
    QCtx sub;
    sqlite3_str *pSel;
    char *zBody = NULL, *zSel;
    if (pRi->aHead[h].iGroup != g) continue;
    if (qcIsChain(pRi, g, pR)) {
      nChain++;
      iChainHead = h;
      continue;
    }
    pSel = sqlite3_str_new(NULL);
    qcCtxInit(&sub, pC, NULL);
    pC->nSelfRef = 0;
    qcClauses(&sub, pR->aClause, pR->nClause, iDepth + 1);
    if (pC->rc == SQLITE_OK && pC->nSelfRef > 1) {
      qcErr(pC, pR->pForm, "unsupported recursion: a definition of rule %s calls its own"
            " recursion %d times (non-linear); write it with one recursive call, e.g."
            " [(r ?a ?b) [?a :x ?c] (r ?c ?b)]", pR->zName, pC->nSelfRef);
    }
    sqlite3_str_appendf(pSel, "SELECT %d", h);
    for (j = 0; j < nMax && pC->rc == SQLITE_OK; j++) {
      if (j < pR->nHead) {
        QVar *pV = qcVarFind(&sub, pR->aHead[j]->u.s.z);
        if (pV == NULL || pV->zExpr == NULL) {
          qcErr(pC, pR->aHead[j], "rule %s does not bind %s", pR->zName, pR->aHead[j]->u.s.z);
          break;
        }
        sqlite3_str_appendf(pSel, ", %s", pV->zExpr);
      } else {
        sqlite3_str_appendall(pSel, ", NULL");
      }
    }
    for (j = 0; j < nMax && pC->rc == SQLITE_OK; j++) {
      if (j < pR->nHead) {
        char *zTag = qcVarTag(qcVarFind(&sub, pR->aHead[j]->u.s.z));
        sqlite3_str_appendf(pSel, ", %s", zTag ? zTag : "NULL");
        sqlite3_free(zTag);
      } else {
        sqlite3_str_appendall(pSel, ", NULL");
      }
    }
    if (pC->rc == SQLITE_OK) zBody = qcBody(&sub);
    if (zBody) sqlite3_str_appendall(pSel, zBody);
    sqlite3_free(zBody);
    zSel = sqlite3_str_finish(pSel);
    if (zSel == NULL) qcNoMem(pC);
    if (pC->rc == SQLITE_OK) {
      if (pC->nSelfRef) sqlite3_str_appendf(pRec, "%s%s", nRec++ ? " UNION " : "", zSel);
      else sqlite3_str_appendf(pBase, "%s%s", nBase++ ? " UNION " : "", zSel);
    }
    sqlite3_free(zSel);
    qcCtxReset(&sub);
  }
  pC->nSelfRef = nSelfSave;
  if (pC->rc == SQLITE_OK && nBase == 0) {
    qcErr(pC, NULL, "unsupported recursion: rule %s has no definition without recursion"
          " (it could never produce a row)", zFirst);
  }
  if (pC->rc == SQLITE_OK && nChain && nRec) {
    qcErr(pC, NULL, "unsupported recursion: rule %s mixes a transitive definition with other"
          " recursive ones", zFirst);
  }
  if (pC->rc == SQLITE_OK && nChain) {
    /* rulesb<g>: the base relation; the chain becomes base ∘ rules. */
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    sqlite3_str_appendf(pC->pCte, "rulesb%d(r, c0, c1, t0, t1) AS (%s)", g,
                        sqlite3_str_value(pBase));
    sqlite3_str_reset(pBase);
    sqlite3_str_appendf(pBase, "SELECT * FROM rulesb%d", g);
    sqlite3_str_appendf(pRec, "SELECT %d, b.c0, x.c1, b.t0, x.t1 FROM rulesb%d b, rules%d x"
                        " WHERE b.r = %d AND x.r = %d AND x.c0 = b.c1 AND x.t0 IS b.t1",
                        iChainHead, g, g, iChainHead, iChainHead);
    nRec = 1;
  }
  if (pC->rc == SQLITE_OK) {
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    sqlite3_str_appendf(pC->pCte, "rules%d(r", g);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", c%d", j);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", t%d", j);
    /* UNION (not UNION ALL): set semantics make cyclic data terminate. */
    sqlite3_str_appendf(pC->pCte, ") AS (%s%s%s)", sqlite3_str_value(pBase),
                        nRec ? " UNION " : "", nRec ? sqlite3_str_value(pRec) : "");
    if (nRec) pC->bRecursive = 1;
  }
  for (i = 0; i < pRi->nHead; i++) if (pRi->aHead[i].iGroup == g) pRi->aHead[i].eState = 2;
  sqlite3_free(sqlite3_str_finish(pBase));
  sqlite3_free(sqlite3_str_finish(pRec));
  return pC->rc;
}

int qcRuleCall(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  int h, g, bArity, i;
  char zAlias[24];
  if (!pC->bRules) {
    return qcErr(pC, pCl->pForm, "unknown rule %s (no rule set is bound to %% in :in)", pCl->zName);
  }
  if (pC->pRi == NULL && qcRulesPrepare(pC)) return pC->rc;
  h = qcHeadFind(pC->pRi, pCl->zName, pCl->nArg, &bArity);
  if (h < 0) {
    return qcErr(pC, pCl->pForm, bArity ? "rule %s called with the wrong number of arguments"
                                        : "unknown rule %s", pCl->zName);
  }
  g = pC->pRi->aHead[h].iGroup;
  if (pC->pRi->aHead[h].eState == 0) {
    if (qcRulesGroup(pC, g, iDepth)) return pC->rc;
  } else if (pC->pRi->aHead[h].eState == 1) {
    pC->nSelfRef++;     /* a call back into the group being built */
  }
  sqlite3_snprintf(sizeof zAlias, zAlias, "r%d", ++pC->nAlias);
  qcFrom(pX, sqlite3_mprintf("rules%d %s", g, zAlias));
  qcWhere(pX, sqlite3_mprintf("%s.r = %d", zAlias, h));
  for (i = 0; i < pCl->nArg && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pA = pCl->aArg[i];
    if (qIsBlank(pA)) continue;
    if (ednIsVar(pA)) {
      qcBindVar(pX, pA->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, i), VT_NONE,
                sqlite3_mprintf("%s.t%d", zAlias, i), 0);
    } else {
      ValueType vt;
      char *zC = qcConstExpr(pX, pA, VT_NONE, &vt);
      if (zC) {
        qcWhere(pX, sqlite3_mprintf("%s.c%d = %s", zAlias, i, zC));
        sqlite3_free(zC);
      }
    }
  }
  return pC->rc;
}
