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
**
** CALLS PASS THEIR BINDINGS IN. A head that is a group of its own and does
** not call itself is compiled into each call instead (qcInlineCall), its
** definitions the branches of an or-join on the arguments, with the head's
** variables pre-bound to the caller's bound arguments and constants: the
** body's functions and predicates see them, as Datomic evaluates a rule
** with the caller's bindings. Required head variables ([?a]) must be bound
** where the rule is called: qcwClauses defers such a call until they are,
** then the call is an error naming them.
**
** BOUND ARGUMENTS. A call in the query's own scope whose arguments are
** partly bound (constants, inputs, variables the patterns bound) and whose
** rule fits the "pass-through" shape is specialised instead (a magic-set
** rewrite, qcMagicCall): the rule is one head whose recursive definitions
** call it once, handing every unbound head variable through unchanged —
** (reach ?x ?y) :- [?x :follow ?z] (reach ?z ?y). Then reach(S, y) is
** base(z, y) for every z in seeds(S), seeds(S) = {S} ∪ step(seeds(S)), so
**   ruleso<N>(o.., ot..)           the caller's bound values (origins)
**   rulesm<N>(o.., ot.., s.., st..) recursive: seeds per origin
**   rulesa<N>(c.., t..)            base definitions applied to the seeds
** and only the part of the closure reachable from the bound values is
** computed (a 100,000-node chain from its head: 100,000 seeds, not 5e9
** pairs). Integer and keyword constants (and inputs still untyped) may
** name an entity or be a value: both readings seed, as Datomic's places
** decide per use. A call in a not/or or rule body does the same inside a
** subquery of that scope (its own WITH). Calls whose changing places are
** not all bound seed from the bodies; rules of other shapes and the
** transitive form keep the whole-closure CTE. A place the self call hands
** on unchanged but the body also reads ([(> ?y 0)] after (path ?m ?y)) is
** invariant: the rewrite takes the call only when the caller binds it (the
** seeds carry its value); else the whole-closure CTE, whose recursive step
** reads it from the row the recursive call gave, as Datomic runs a body's
** clauses in order.
*/
#include <string.h>
#include "query_compile_scope.h"

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

void qcrFree(QComp *pC) {
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
  for (i = 0; i < pC->rules.nRule && pC->rc == SQLITE_OK; i++) {
    /* Two calls into the recursion at the top of one body: said before
    ** any body compiles, so it is the error the user sees. */
    const QRule *pR = pC->rules.aRule[i];
    int nTop = 0;
    if (pRi->aHead[pRi->aiHeadOf[i]].iGroup != g || qcIsChain(pRi, g, pR)) continue;
    for (j = 0; j < pR->nClause; j++) {
      const QClause *pCl = pR->aClause[j];
      int hc = pCl->kind == QC_RULE ? qcHeadFind(pRi, pCl->zName, pCl->nArg, NULL) : -1;
      if (hc >= 0 && pRi->aHead[hc].iGroup == g) nTop++;
    }
    if (nTop > 1) {
      qcErr(pC, pR->pForm, "unsupported recursion: a definition of rule %s calls its own"
            " recursion %d times (non-linear); write it with one recursive call, e.g."
            " [(r ?a ?b) [?a :x ?c] (r ?c ?b)]", pR->zName, nTop);
    }
  }
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
    {
      const QRule *pWholeSave = pC->pWhole;
      pC->pWhole = pR;
      qcwClauses(&sub, pR->aClause, pR->nClause, iDepth + 1);
      pC->pWhole = pWholeSave;
    }
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
    /* kN: the storage class, so that UNION keeps 1 and 1.0 apart (SQLite's
    ** 1 = 1.0; Clojure's (= 1 1.0) is false). */
    for (j = 0; j < nMax && pC->rc == SQLITE_OK; j++) {
      if (j < pR->nHead) {
        sqlite3_str_appendf(pSel, ", typeof(%s)", qcVarFind(&sub, pR->aHead[j]->u.s.z)->zExpr);
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
    sqlite3_str_appendf(pC->pCte, "rulesb%d(r, c0, c1, t0, t1, k0, k1) AS (%s)", g,
                        sqlite3_str_value(pBase));
    sqlite3_str_reset(pBase);
    sqlite3_str_appendf(pBase, "SELECT * FROM rulesb%d", g);
    sqlite3_str_appendf(pRec, "SELECT %d, b.c0, x.c1, b.t0, x.t1, b.k0, x.k1 FROM rulesb%d b, rules%d x"
                        " WHERE b.r = %d AND x.r = %d AND x.c0 = b.c1 AND x.t0 IS b.t1"
                        " AND x.k0 IS b.k1",
                        iChainHead, g, g, iChainHead, iChainHead);
    nRec = 1;
  }
  if (pC->rc == SQLITE_OK) {
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    sqlite3_str_appendf(pC->pCte, "rules%d(r", g);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", c%d", j);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", t%d", j);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", k%d", j);
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

/* ------------------------------------------------- bound-argument calls */

/* Is any rule body being compiled (a call from a rule body)? */
static int qcRulesBuilding(const QRuleInfo *pRi) {
  int i;
  for (i = 0; i < pRi->nHead; i++) if (pRi->aHead[i].eState == 1) return 1;
  return 0;
}

/* Does clause list a[0..n) call head h (at any depth)? */
static int qcCallsHead(const QRuleInfo *pRi, QClause *const *a, int n, int h, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return 1;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      if (qcHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL) == h) return 1;
    } else if (a[i]->nSub && qcCallsHead(pRi, a[i]->aSub, a[i]->nSub, h, iDepth + 1)) {
      return 1;
    }
  }
  return 0;
}

/* The index of the one top-level self call of definition pR, -1 for none,
** -2 when the shape does not fit (several, or one nested in not/or). */
static int qcSelfCall(const QRuleInfo *pRi, const QRule *pR, int h) {
  int i, iRec = -1;
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    if (pCl->kind == QC_RULE && qcHeadFind(pRi, pCl->zName, pCl->nArg, NULL) == h) {
      if (iRec >= 0) return -2;
      iRec = i;
    } else if (pCl->nSub && qcCallsHead(pRi, pCl->aSub, pCl->nSub, h, 1)) {
      return -2;
    }
  }
  return iRec;
}

/* Is place j of recursive definition pR (self call at clause iRec) a
** pass-through: the self call hands head variable j on unchanged, and
** nothing else in the definition mentions it? */
static int qcPassThrough(const QRule *pR, int iRec, int j) {
  const char *zVar = pR->aHead[j]->u.s.z;
  const QClause *pRec = pR->aClause[iRec];
  int k, m;
  if (!ednIsVar(pRec->aArg[j]) || strcmp(pRec->aArg[j]->u.s.z, zVar) != 0) return 0;
  for (k = 0; k < pR->nHead; k++) {
    if (k != j && strcmp(pR->aHead[k]->u.s.z, zVar) == 0) return 0;
    if (k != j && ednIsVar(pRec->aArg[k]) && strcmp(pRec->aArg[k]->u.s.z, zVar) == 0) return 0;
  }
  for (k = 0; k < pR->nClause; k++) {
    const char *az[64];
    int n;
    if (k == iRec) continue;
    n = qcwClauseVars(pR->aClause[k], az, 64, 1);
    if (n > 64) return 0;
    for (m = 0; m < n; m++) if (strcmp(az[m], zVar) == 0) return 0;
  }
  return 1;
}

static int qcMagicStepBinds(const QRule *pR, int iRec, const unsigned char *aePlace,
                            const unsigned char *abInv);

/* Is place j of recursive definition pR (self call at clause iRec)
** invariant: the self call hands head variable j on unchanged, in place j
** only, though other clauses may read it ([(path ?x ?y) [?x :up ?m] (path
** ?m ?y) [(> ?y 0)]]: ?y)? */
static int qcInvariantPlace(const QRule *pR, int iRec, int j) {
  const char *zVar = pR->aHead[j]->u.s.z;
  const QClause *pRec = pR->aClause[iRec];
  int k;
  if (!ednIsVar(pRec->aArg[j]) || strcmp(pRec->aArg[j]->u.s.z, zVar) != 0) return 0;
  for (k = 0; k < pR->nHead; k++) {
    if (k != j && strcmp(pR->aHead[k]->u.s.z, zVar) == 0) return 0;
    if (k != j && ednIsVar(pRec->aArg[k]) && strcmp(pRec->aArg[k]->u.s.z, zVar) == 0) return 0;
  }
  return 1;
}

/* The variables among terms aT[0..nT) into a[] (no duplicates). */
static int qcTermsVarsOf(const EdnValue *const *aT, int nT, const char **a, int nMax) {
  int i, k, n = 0;
  for (i = 0; i < nT; i++) {
    if (!ednIsVar(aT[i])) continue;
    for (k = 0; k < n && strcmp(a[k], aT[i]->u.s.z); k++) {}
    if (k == n && n < nMax) a[n++] = aT[i]->u.s.z;
  }
  return n;
}

/* Classifies head h for the rewrite. Returns 0 when it does not fit (other
** heads in its recursion group, the transitive form, several or nested self
** calls, no recursive or no base definition); else 1, with aePlace[j] = 1
** for the places every recursive definition passes through and 0 for the
** places the recursion changes. abInv (when not NULL) gets 1 for the
** places of aePlace 1 that some recursive definition reads besides
** handing them on (qcInvariantPlace): the seeds must carry the caller's
** value there, so the rewrite takes a call only where it binds them. */
static int qcMagicShape(QComp *pC, int h, unsigned char *aePlace, unsigned char *abInv) {
  const QRuleInfo *pRi = pC->pRi;
  unsigned char aInv[64];
  int g = pRi->aHead[h].iGroup, i, j, nBase = 0, nRec = 0;
  for (i = 0; i < pRi->nHead; i++) if (i != h && pRi->aHead[i].iGroup == g) return 0;
  if (pRi->aHead[h].nArity > 64) return 0;
  for (j = 0; j < pRi->aHead[h].nArity; j++) aePlace[j] = 1;
  memset(aInv, 0, sizeof aInv);
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int iRec;
    if (pRi->aiHeadOf[i] != h) continue;
    if (qcIsChain(pRi, g, pR)) return 0;
    iRec = qcSelfCall(pRi, pR, h);
    if (iRec == -2) return 0;
    if (iRec == -1) { nBase++; continue; }
    nRec++;
    for (j = 0; j < pR->nHead; j++) {
      if (!qcPassThrough(pR, iRec, j)) {
        if (qcInvariantPlace(pR, iRec, j)) {
          aInv[j] = 1;
          continue;
        }
        if (qpIsBlank(pR->aClause[iRec]->aArg[j])) return 0;
        aePlace[j] = 0;
      }
    }
  }
  if (nBase == 0 || nRec == 0) return 0;
  for (j = 0; j < pRi->aHead[h].nArity; j++) if (!aePlace[j]) aInv[j] = 0;
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    if (pRi->aiHeadOf[i] != h) continue;
    if (!qcMagicStepBinds(pR, qcSelfCall(pRi, pR, h), aePlace, aInv)) return 0;
  }
  if (abInv) memcpy(abInv, aInv, (size_t)pRi->aHead[h].nArity);
  return 1;
}

/* A step of the seeds evaluates recursive definition pR without its self
** call (clause iRec, -1 none) from the head's changing places: can it bind
** every variable the self call takes in those places? Not when one comes
** only from the self call's answer ([(depth ?e ?d) [?e :parent ?p] (depth
** ?p ?pd) [(inc ?pd) ?d]]: ?pd): such a rule keeps the whole-closure CTE,
** whose recursive step computes from the previous row. */
static int qcMagicStepBinds(const QRule *pR, int iRec, const unsigned char *aePlace,
                            const unsigned char *abInv) {
  const char *azB[128];
  int nB = 0, i, j, k, bGrew;
  unsigned char aDone[64];
  const QClause *pRec;
  if (iRec < 0) return 1;
  if (pR->nClause > 64) return 0;
  pRec = pR->aClause[iRec];
  for (j = 0; j < pR->nHead; j++) if (!aePlace[j] || abInv[j]) azB[nB++] = pR->aHead[j]->u.s.z;
  memset(aDone, 0, sizeof aDone);
  do {
    bGrew = 0;
    for (i = 0; i < pR->nClause; i++) {
      const QClause *pCl = pR->aClause[i];
      const char *az[64];
      int n;
      if (i == iRec || aDone[i]) continue;
      if (pCl->kind == QC_PRED || pCl->kind == QC_NOT || pCl->kind == QC_NOT_JOIN) continue;
      if (pCl->kind == QC_FN) {
        /* binds its outputs once its arguments are bound */
        for (k = 0; k < pCl->nArg; k++) {
          const EdnValue *pA = pCl->aArg[k];
          int m;
          if (!ednIsVar(pA)) continue;
          for (m = 0; m < nB && strcmp(azB[m], pA->u.s.z); m++) {}
          if (m == nB) break;
        }
        if (k < pCl->nArg) continue;
        n = qcTermsVarsOf(pCl->bind.aVar, pCl->bind.nVar, az, 64);
      } else {
        n = qcwClauseVars(pCl, az, 64, 1);
      }
      if (n > 64) return 0;
      aDone[i] = 1;
      bGrew = 1;
      for (k = 0; k < n && nB < 128; k++) {
        int m;
        for (m = 0; m < nB && strcmp(azB[m], az[k]); m++) {}
        if (m == nB) azB[nB++] = az[k];
      }
    }
  } while (bGrew);
  for (j = 0; j < pRec->nArg && j < pR->nHead; j++) {
    const EdnValue *pA = pRec->aArg[j];
    int m;
    if (aePlace[j] || !ednIsVar(pA)) continue;
    for (m = 0; m < nB && strcmp(azB[m], pA->u.s.z); m++) {}
    if (m == nB) return 0;
  }
  return 1;
}

/* Marks head variable zName of a rule body as an argument the caller gave
** (QVar.bIdent): a keyword it holds names its ident's entity where the body
** puts it in an entity place. */
static void qcMarkArg(QCtx *pSub, const char *zName) {
  QVar *pV = qcVarFind(pSub, zName);
  if (pV) pV->bIdent = 1;
}

/* Binds head variable pHead of a rule body pSub to argument pA of the call
** in scope pX: a variable's value (an input, or a caller's value the body
** may read), or a constant typed by the first place that uses it. */
static void qcBindArg(QCtx *pX, QCtx *pSub, const EdnValue *pA, const EdnValue *pHead) {
  if (ednIsVar(pA)) {
    qcCopyVar(pSub, pHead->u.s.z, qcVarFind(pX, pA->u.s.z));
  } else {
    QBinding b;
    b.kind = QB_SCALAR;
    b.nVar = 1;
    b.aVar = &pHead;
    qcbBind(pSub, &b, pA, -1, "rule argument");
  }
  qcMarkArg(pSub, pHead->u.s.z);
}

/* A definition body with the bound head places pre-bound to the seed
** columns m.sK/m.stK (K counts bound places), skipping clause iSkip. */
static void qcMagicBody(QComp *pC, QCtx *pSub, int iN, const QRule *pR,
                        const unsigned char *abBound, int iSkip, int iDepth, QCtx *pX,
                        const QClause *pCl, const unsigned char *abDirect) {
  QClause *aLocal[16];
  QClause **a = aLocal;
  int i, k = 0, n = 0;
  qcFrom(pSub, sqlite3_mprintf("rulesm%d m", iN));
  pSub->bFixed = 1;                    /* the branch selects m.oK itself */
  if (iSkip >= 0) pSub->bRecRef = 1;   /* a step of the recursive seeds */
  for (i = 0; i < pR->nHead && pC->rc == SQLITE_OK; i++) {
    if (!abBound[i]) continue;
    qcBindVar(pSub, pR->aHead[i]->u.s.z, sqlite3_mprintf("m.s%d", k),
              VT_NONE, sqlite3_mprintf("m.st%d", k), 0);
    qcMarkArg(pSub, pR->aHead[i]->u.s.z);
    k++;
  }
  for (i = 0; abDirect && i < pR->nHead && pC->rc == SQLITE_OK; i++) {
    if (abDirect[i]) qcBindArg(pX, pSub, pCl->aArg[i], pR->aHead[i]);
  }
  if (pR->nClause > 16) {
    a = sqlite3_malloc64(sizeof(QClause*) * pR->nClause);
    if (a == NULL) { qcNoMem(pC); return; }
  }
  for (i = 0; i < pR->nClause; i++) if (i != iSkip) a[n++] = pR->aClause[i];
  if (pC->rc == SQLITE_OK) qcwClauses(pSub, a, n, iDepth + 1);
  if (a != aLocal) sqlite3_free(a);
}

/* Ends one branch of a magic-set UNION: appends "SELECT <values><tags>
** <body of pSub>" to pTo (" UNION " before all but the first, counted in
** *pn; pVal starts with ", "), then frees pVal, pTag and pSub's state. */
static void qcMagicBranch(QComp *pC, QCtx *pSub, sqlite3_str *pVal, sqlite3_str *pTag,
                          sqlite3_str *pTo, int *pn) {
  char *zBody = pC->rc == SQLITE_OK ? qcBody(pSub) : NULL;
  if (zBody && !sqlite3_str_errcode(pVal) && !sqlite3_str_errcode(pTag)) {
    sqlite3_str_appendf(pTo, "%sSELECT %s%s%s", (*pn)++ ? " UNION " : "",
                        sqlite3_str_value(pVal) + 2, sqlite3_str_value(pTag), zBody);
  } else if (pC->rc == SQLITE_OK) {
    qcNoMem(pC);
  }
  sqlite3_free(zBody);
  sqlite3_free(sqlite3_str_finish(pVal));
  sqlite3_free(sqlite3_str_finish(pTag));
  qcCtxReset(pSub);
}

/* Appends ", <value>" to pVal and ", <tag>, <kind>" to pTag for a term of
** scope pSub (a rule body). The kind (typeof) beside each tag keeps 1 and
** 1.0 two rows of the UNIONs (SQLite's 1 = 1.0; Clojure's = says no). */
static void qcMagicTerm(QCtx *pSub, sqlite3_str *pVal, sqlite3_str *pTag, const EdnValue *p,
                        const char *zRule) {
  QComp *pC = pSub->pC;
  if (ednIsVar(p)) {
    QVar *pV = qcVarFind(pSub, p->u.s.z);
    char *zTag;
    if (pV == NULL || pV->zExpr == NULL) {
      qcErr(pC, p, "rule %s does not bind %s", zRule, p->u.s.z);
      return;
    }
    zTag = qcVarTag(pV);
    sqlite3_str_appendf(pVal, ", %s", pV->zExpr);
    sqlite3_str_appendf(pTag, ", %s, typeof(%s)", zTag ? zTag : "NULL", pV->zExpr);
    if (zTag == NULL) qcNoMem(pC);
    sqlite3_free(zTag);
  } else {
    ValueType vt;
    char *zC = qcConstExpr(pSub, p, VT_NONE, &vt);
    if (zC == NULL) return;
    sqlite3_str_appendf(pVal, ", %s", zC);
    sqlite3_str_appendf(pTag, ", %d, typeof(%s)", vt == QVT_JSON ? TAG_JSON : vtTag(vt), zC);
    sqlite3_free(zC);
  }
}

/* A constant argument of a rule call as SQL: a lookup ref names its entity
** (resolved in the database the query reads; *pvt VT_REF), any other
** constant is itself. NULL on error. */
static char *qcRuleConst(QCtx *pX, const EdnValue *pA, ValueType *pvt) {
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
static char *qcRuleArgTerm(QCtx *pX, const EdnValue *pA, const char *zCol, const char *zTag) {
  ValueType vt = VT_NONE;
  char *zE, *zTerm;
  if (ednIsVar(pA)) {
    QVar *pV = qcVarFind(pX, pA->u.s.z);
    zE = sqlite3_mprintf("%s", pV->zExpr);
    if (pV->nParam > 0) vt = pV->vt;   /* an input not yet typed by a place */
  } else {
    zE = qcRuleConst(pX, pA, &vt);
  }
  if (zE == NULL) {
    qcNoMem(pX->pC);
    return NULL;
  }
  if (vt == VT_KEYWORD) {
    zTerm = sqlite3_mprintf("((%s = %d AND %s = %s) OR (%s = %d AND %s = (SELECT e FROM datoms"
                            " WHERE a = %d AND v = %s AND value_type_tag = %d)))", zTag,
                            TAG_KEYWORD, zCol, zE, zTag, TAG_REF, zCol, ENTID_DB_IDENT, zE,
                            TAG_KEYWORD);
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
static void qcRuleArgWhere(QCtx *pX, const EdnValue *pA, const char *zAlias, int i) {
  char zCol[40], zTag[40];
  char *zTerm;
  sqlite3_snprintf(sizeof zCol, zCol, "%s.c%d", zAlias, i);
  sqlite3_snprintf(sizeof zTag, zTag, "%s.t%d", zAlias, i);
  zTerm = qcRuleArgTerm(pX, pA, zCol, zTag);
  if (zTerm) qcWhere(pX, zTerm);
}

/* Origins from the caller: "SELECT DISTINCT <bound values>, <tags> FROM
** <the scope's rows>" into pOut. Integer values, which may be an entity id,
** get both readings (abAmb[i] = 1). */
static void qcOriginsCaller(QCtx *pX, const QClause *pCl, const unsigned char *abBound,
                            unsigned char *abAmb, sqlite3_str *pOut) {
  QComp *pC = pX->pC;
  sqlite3_str *pVal = sqlite3_str_new(NULL), *pTag = sqlite3_str_new(NULL);
  sqlite3_str *pAlt = sqlite3_str_new(NULL);
  int i, nAmb = 0;
  for (i = 0; i < pCl->nArg && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pA = pCl->aArg[i];
    char *zE = NULL, *zTag = NULL;
    ValueType vt = VT_NONE;
    if (!abBound[i]) continue;
    if (ednIsVar(pA)) {
      QVar *pV = qcVarFind(pX, pA->u.s.z);
      zE = sqlite3_mprintf("%s", pV->zExpr);
      zTag = qcVarTag(pV);
      if (pV->nParam > 0) vt = pV->vt;   /* an input not yet typed by a place */
    } else {
      zE = qcRuleConst(pX, pA, &vt);
      if (zE) zTag = sqlite3_mprintf("%d", vtTag(vt));
    }
    if (zE == NULL || zTag == NULL) {
      qcNoMem(pC);
    } else if (vt == VT_LONG) {
      /* Both readings: the number, and the entity id it is. A keyword
      ** has one, the keyword: where the body puts it in an entity place
      ** it names its ident's entity (qcBindVar), elsewhere it is itself. */
      abAmb[i] = 1;
      nAmb++;
      sqlite3_str_appendf(pAlt, ", (SELECT 0 AS k UNION ALL SELECT 1) a%d", i);
      sqlite3_str_appendf(pVal, ", %s", zE);
      sqlite3_str_appendf(pTag, ", CASE a%d.k WHEN 0 THEN %s ELSE 0 END, typeof(%s)", i, zTag, zE);
    } else {
      sqlite3_str_appendf(pVal, ", %s", zE);
      sqlite3_str_appendf(pTag, ", %s, typeof(%s)", zTag, zE);
    }
    sqlite3_free(zE);
    sqlite3_free(zTag);
  }
  if (sqlite3_str_errcode(pVal) || sqlite3_str_errcode(pTag) || sqlite3_str_errcode(pAlt)) {
    qcNoMem(pC);
  }
  if (pC->rc == SQLITE_OK) {
    const char *zAlt = nAmb ? sqlite3_str_value(pAlt) : "";
    sqlite3_str_appendf(pOut, "SELECT DISTINCT %s%s", sqlite3_str_value(pVal) + 2,
                        sqlite3_str_value(pTag));
    if (pX->nFrom) sqlite3_str_appendf(pOut, " FROM %s%s", sqlite3_str_value(pX->pFrom), zAlt);
    else if (nAmb) sqlite3_str_appendf(pOut, " FROM %s", zAlt + 2);
    if (pX->nWhere) sqlite3_str_appendf(pOut, " WHERE %s", sqlite3_str_value(pX->pWhere));
  }
  sqlite3_free(sqlite3_str_finish(pVal));
  sqlite3_free(sqlite3_str_finish(pTag));
  sqlite3_free(sqlite3_str_finish(pAlt));
}

/* Origins from the rule itself, when the caller binds nothing useful:
** every value a definition's body (without its self call) accepts in the
** changing places — a superset of the places' values in any answer. With
** bScope the bodies start from a copy of the caller's rows (a top-level
** scope, whose tables any CTE may read), so a pass-through place may hold
** a variable the caller's patterns bound. */
static void qcOriginsBodies(QCtx *pX, const QClause *pCl, int h, const unsigned char *abBound,
                            const unsigned char *abDirect, int bScope, int iDepth,
                            sqlite3_str *pOut) {
  QComp *pC = pX->pC;
  QRuleInfo *pRi = pC->pRi;
  unsigned char aePlace[64];
  int i, j, n = 0;
  if (pCl->nArg > 64 || !qcMagicShape(pC, h, aePlace, NULL)) return;
  for (i = 0; i < pC->rules.nRule && pC->rc == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int iRec, m = 0;
    QClause *aLocal[16];
    QClause **a = aLocal;
    sqlite3_str *pVal, *pTag;
    QCtx sub;
    if (pRi->aiHeadOf[i] != h) continue;
    iRec = qcSelfCall(pRi, pR, h);
    if (pR->nClause > 16) {
      a = sqlite3_malloc64(sizeof(QClause*) * pR->nClause);
      if (a == NULL) { qcNoMem(pC); return; }
    }
    for (j = 0; j < pR->nClause; j++) if (j != iRec) a[m++] = pR->aClause[j];
    pVal = sqlite3_str_new(NULL);
    pTag = sqlite3_str_new(NULL);
    qcCtxInit(&sub, pC, NULL);
    if (bScope) qcCopyScope(&sub, pX);
    /* A seeded pass-through place holds the caller's value (a constant, an
    ** input, or with bScope a caller's variable), which the seeds carry
    ** unchanged. */
    for (j = 0; j < pR->nHead && pC->rc == SQLITE_OK; j++) {
      const EdnValue *pA = pCl->aArg[j];
      const EdnValue *pHead = pR->aHead[j];
      if ((!abBound[j] || !aePlace[j]) && !(abDirect && abDirect[j])) continue;
      qcBindArg(pX, &sub, pA, pHead);
    }
    qcwClauses(&sub, a, m, iDepth + 1);
    for (j = 0; j < pR->nHead && pC->rc == SQLITE_OK; j++) {
      if (abBound[j]) qcMagicTerm(&sub, pVal, pTag, pR->aHead[j], pR->zName);
    }
    qcMagicBranch(pC, &sub, pVal, pTag, pOut, &n);
    if (a != aLocal) sqlite3_free(a);
  }
}

/* The call pCl of head h with the places abBound seeded: from the caller's
** rows (bCaller 1 or 2), from the rule's bodies (0), or from the bodies
** joined to the caller's rows (3 or 4; abDirect: places bound to the call's
** constant in every body). Emits the origins, seeds and answers CTEs of the
** file comment, then joins the answers. With bCaller 2 or 4 the call is in
** a nested scope (a not/or or rule body), whose
** rows only a subquery there sees: the CTEs are that subquery's own WITH,
** their origins read from a copy of the scope's FROM and WHERE (correlated
** with the enclosing scopes, which SQLite allows in a subquery's WITH). */
static int qcMagicCall(QCtx *pX, const QClause *pCl, int h, const unsigned char *abBound,
                       const unsigned char *abDirect, int bCaller, int iDepth) {
  QComp *pC = pX->pC;
  QRuleInfo *pRi = pC->pRi;
  sqlite3_str *pOrig = sqlite3_str_new(NULL);
  sqlite3_str *pSeed = sqlite3_str_new(NULL), *pAns = sqlite3_str_new(NULL);
  sqlite3_str *pLoc = sqlite3_str_new(NULL), *pW = pC->pCte;
  unsigned char *abAmb = NULL;
  int i, k, nB = 0, nRec = 0, nBase = 0, iN, nArity = pCl->nArg, bLocal = 0;
  unsigned char eSave = pRi->aHead[h].eState;
  int nSelfSave = pC->nSelfRef;
  char zAlias[24];

  abAmb = sqlite3_malloc64(nArity + 1);
  if (abAmb == NULL) { qcNoMem(pC); goto cleanup; }
  memset(abAmb, 0, nArity + 1);
  for (i = 0; i < nArity; i++) nB += abBound[i];
  /* 1. origins; they copy the scope so far, whose rows are first named
  ** once when it holds earlier calls (qcCollapse) */
  if (bCaller == 1) {
    qcCollapseHeavy(pX);
    if (pC->rc) goto cleanup;
  }
  if (bCaller == 2) {
    pC->nLocal++;
    bLocal = 1;
  }
  pRi->aHead[h].eState = 1;
  if (bCaller == 1 || bCaller == 2) qcOriginsCaller(pX, pCl, abBound, abAmb, pOrig);
  else qcOriginsBodies(pX, pCl, h, abBound, abDirect, bCaller >= 3, iDepth, pOrig);
  if (pC->rc) goto cleanup;
  iN = ++pC->nAlias;

  /* 2. seeds and 3. answers, one definition at a time */
  for (i = 0; i < pC->rules.nRule && pC->rc == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int iRec;
    QCtx sub;
    sqlite3_str *pVal, *pTag;
    if (pRi->aiHeadOf[i] != h) continue;
    iRec = qcSelfCall(pRi, pR, h);
    pVal = sqlite3_str_new(NULL);
    pTag = sqlite3_str_new(NULL);
    qcCtxInit(&sub, pC, NULL);
    qcMagicBody(pC, &sub, iN, pR, abBound, iRec, iDepth, pX, pCl, abDirect);
    if (iRec >= 0) {
      /* step: (origin, next seed) */
      const QClause *pRec = pR->aClause[iRec];
      for (k = 0; k < nB; k++) sqlite3_str_appendf(pVal, ", m.o%d", k);
      for (k = 0; k < nB; k++) sqlite3_str_appendf(pVal, ", m.ot%d, m.ok%d", k, k);
      for (k = 0; k < nArity && pC->rc == SQLITE_OK; k++) {
        if (abBound[k]) qcMagicTerm(&sub, pVal, pTag, pRec->aArg[k], pR->zName);
      }
    } else {
      /* answer: the origins in seeded places, the body's values elsewhere */
      int kb = 0;
      for (k = 0; k < nArity && pC->rc == SQLITE_OK; k++) {
        if (abBound[k]) {
          sqlite3_str_appendf(pVal, ", m.o%d", kb);
          sqlite3_str_appendf(pTag, ", m.ot%d, m.ok%d", kb, kb);
          kb++;
        } else {
          qcMagicTerm(&sub, pVal, pTag, pR->aHead[k], pR->zName);
        }
      }
    }
    qcMagicBranch(pC, &sub, pVal, pTag, iRec >= 0 ? pSeed : pAns, iRec >= 0 ? &nRec : &nBase);
  }
  if (pC->rc) goto cleanup;
  if (sqlite3_str_errcode(pOrig) || sqlite3_str_errcode(pSeed) || sqlite3_str_errcode(pAns)) {
    qcNoMem(pC);
    goto cleanup;
  }
  if (bCaller == 2 || bCaller == 4) pW = pLoc;
  else if (pC->nCte++) sqlite3_str_appendall(pW, ", ");
  /* Each tag column tK is followed by kK, its value's storage class. */
  sqlite3_str_appendf(pW, "ruleso%d(", iN);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, "%so%d", k ? ", " : "", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", ot%d, ok%d", k, k);
  sqlite3_str_appendf(pW, ") AS (%s), rulesm%d(", sqlite3_str_value(pOrig), iN);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, "%so%d", k ? ", " : "", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", ot%d, ok%d", k, k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", s%d", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", st%d, sk%d", k, k);
  sqlite3_str_appendf(pW, ") AS (SELECT ");
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, "%so%d", k ? ", " : "", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", ot%d, ok%d", k, k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", o%d", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", ot%d, ok%d", k, k);
  /* UNION: a seed met again (a cycle) is not followed twice. */
  sqlite3_str_appendf(pW, " FROM ruleso%d UNION %s)", iN, sqlite3_str_value(pSeed));
  pC->bRecursive = 1;
  sqlite3_str_appendf(pW, ", rulesa%d(", iN);
  for (k = 0; k < nArity; k++) sqlite3_str_appendf(pW, "%sc%d", k ? ", " : "", k);
  for (k = 0; k < nArity; k++) sqlite3_str_appendf(pW, ", t%d, k%d", k, k);
  sqlite3_str_appendf(pW, ") AS (%s)", sqlite3_str_value(pAns));
  if (bCaller != 2 && bCaller != 4) pC->nCte += 2;
  if (sqlite3_str_errcode(pW)) { qcNoMem(pC); goto cleanup; }

  /* 4. the call: a join with the answers */
  sqlite3_snprintf(sizeof zAlias, zAlias, "r%d", ++pC->nAlias);
  if (bCaller == 2 || bCaller == 4) {
    qcFrom(pX, sqlite3_mprintf("(WITH RECURSIVE %s SELECT * FROM rulesa%d) %s",
                               sqlite3_str_value(pLoc), iN, zAlias));
  } else {
    qcFrom(pX, sqlite3_mprintf("rulesa%d %s", iN, zAlias));
  }
  for (i = 0; i < nArity && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pA = pCl->aArg[i];
    QVar *pV = ednIsVar(pA) ? qcVarFind(pX, pA->u.s.z) : NULL;
    if (qpIsBlank(pA)) continue;
    if (!ednIsVar(pA)) {
      /* A constant: the caller's origins are it already. */
      if (bCaller && abBound[i]) continue;
      qcRuleArgWhere(pX, pA, zAlias, i);
    } else if (pV && pV->zExpr) {
      qcRuleArgWhere(pX, pA, zAlias, i);
      if (!abAmb[i] && pV->nParam == 0 && (pV->vt == VT_REF || pV->vt == VT_LONG)) {
        /* an entity id is a long */
        qcWhere(pX, sqlite3_mprintf("%s.t%d IN (%d, %d)", zAlias, i, TAG_REF, TAG_NUMBER));
      } else if (!abAmb[i] && pV->nParam == 0 && pV->vt != VT_NONE && pV->vt != QVT_JSON) {
        qcWhere(pX, sqlite3_mprintf("%s.t%d = %d", zAlias, i, vtTag(pV->vt)));
      } else if (!abAmb[i] && pV->zTag) {
        qcWhere(pX, sqlite3_mprintf("%s.t%d = %s", zAlias, i, pV->zTag));
      }
    } else {
      qcBindVar(pX, pA->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, i), VT_NONE,
                sqlite3_mprintf("%s.t%d", zAlias, i), 0);
    }
  }
cleanup:
  if (bLocal) pC->nLocal--;
  pRi->aHead[h].eState = eSave;
  pC->nSelfRef = nSelfSave;
  sqlite3_free(abAmb);
  sqlite3_free(sqlite3_str_finish(pOrig));
  sqlite3_free(sqlite3_str_finish(pSeed));
  sqlite3_free(sqlite3_str_finish(pAns));
  sqlite3_free(sqlite3_str_finish(pLoc));
  return pC->rc;
}

/* ------------------------------------------------------ inlined calls */

/* Is place j of head h required ([?a] in the head of any definition)? *ppR
** gets that definition. */
static int qcReqPlace(QComp *pC, int h, int j, const QRule **ppR) {
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

/* "[?a ?b]": the required variables of pR's head, for messages. */
static char *qcHeadReqList(const QRule *pR) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  int i, n = 0;
  sqlite3_str_appendchar(p, 1, '[');
  for (i = 0; i < pR->nHead; i++) {
    if (pR->abReq[i]) sqlite3_str_appendf(p, "%s%s", n++ ? " " : "", pR->aHead[i]->u.s.z);
  }
  sqlite3_str_appendchar(p, 1, ']');
  return sqlite3_str_finish(p);
}

/* Is argument pA bound at the call: a constant, or a variable pX binds? */
static int qcArgBound(QCtx *pX, const EdnValue *pA) {
  QVar *pV;
  if (qpIsBlank(pA)) return 0;
  if (!ednIsVar(pA)) return 1;
  pV = qcVarFind(pX, pA->u.s.z);
  return pV && (pV->zExpr || pV->zInList);
}

int qcrReady(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  int h, i;
  if (!pC->bRules) return 1;
  if (pC->pRi == NULL && qcRulesPrepare(pC)) return 1;
  h = qcHeadFind(pC->pRi, pCl->zName, pCl->nArg, NULL);
  if (h < 0) return 1;
  for (i = 0; i < pCl->nArg; i++) {
    if (qcReqPlace(pC, h, i, NULL) && !qcArgBound(pX, pCl->aArg[i])) return 0;
  }
  return 1;
}

/* Is head h compiled into each call (qcInlineCall): a recursion group of
** its own that it does not call back into? */
static int qcInlineHead(QComp *pC, int h) {
  const QRuleInfo *pRi = pC->pRi;
  int g = pRi->aHead[h].iGroup, i;
  for (i = 0; i < pRi->nHead; i++) if (i != h && pRi->aHead[i].iGroup == g) return 0;
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    if (pRi->aiHeadOf[i] == h && qcCallsHead(pRi, pR->aClause, pR->nClause, h, 0)) return 0;
  }
  return 1;
}

/* Pre-binds the head variables of definition pR in pSub (a body scope) to
** call pCl's bound arguments (aeArg 1) and constants (2), as qcInlineCall
** describes; with bNoVars the bound variables are left free. */
static void qcInlinePrebind(QCtx *pSub, QCtx *pX, const QClause *pCl, const QRule *pR,
                            const unsigned char *aeArg, int bNoVars) {
  QComp *pC = pX->pC;
  int j;
  for (j = 0; j < pCl->nArg && pC->rc == SQLITE_OK; j++) {
    const EdnValue *pA = pCl->aArg[j];
    const EdnValue *pHead = pR->aHead[j];
    if (aeArg[j] == 1 && bNoVars) {
      continue;              /* joined on the answer columns instead */
    } else if (aeArg[j] == 1) {
      qcCopyVar(pSub, pHead->u.s.z, qcVarFind(pX, pA->u.s.z));
      qcMarkArg(pSub, pHead->u.s.z);
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
    }
  }
}

/* Can call pCl of head h (argument kinds aeArg, as qcInlineCall) run its
** definitions without the caller's bound variables, joined on them after:
** every body binds each such head variable by its own patterns before any
** function or predicate reads it, and nothing else (not, or, rule calls,
** required places) mentions one, and none may be a keyword naming an
** ident? Then they need no copy of the caller. */
static int qcInlineUnseeded(QCtx *pX, int h, const QClause *pCl, const unsigned char *aeArg) {
  QComp *pC = pX->pC;
  int i, j;
  for (j = 0; j < pCl->nArg; j++) {
    const QVar *pV;
    if (aeArg[j] != 1) continue;
    if (qcReqPlace(pC, h, j, NULL)) return 0;
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
static int qcInlineJoin(QCtx *pX, const QClause *pCl, int h, const unsigned char *aeArg,
                        int iDepth) {
  QComp *pC = pX->pC;
  const QRule *pR = NULL;
  QCtx sub;
  int i, j;
  for (i = 0; i < pC->rules.nRule; i++) if (pC->pRi->aiHeadOf[i] == h) pR = pC->rules.aRule[i];
  qcCtxInit(&sub, pC, pX);
  sub.nVisible = 0;          /* the body's variables are its own */
  sqlite3_str_appendall(sub.pFrom, sqlite3_str_value(pX->pFrom));
  sqlite3_str_appendall(sub.pWhere, sqlite3_str_value(pX->pWhere));
  sub.nFrom = pX->nFrom;
  sub.nWhere = pX->nWhere;
  sub.nPatternFrom = pX->nPatternFrom;
  sub.bUnlinked = pX->bUnlinked;
  sub.bRecRef = pX->bRecRef;
  qcInlinePrebind(&sub, pX, pCl, pR, aeArg, 0);
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
    sqlite3_str_reset(pX->pWhere);
    sqlite3_str_appendall(pX->pWhere, sqlite3_str_value(sub.pWhere));
    pX->nWhere = sub.nWhere;
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
static int qcInlineCall(QCtx *pX, const QClause *pCl, int h, int iDepth) {
  QComp *pC = pX->pC;
  unsigned char aeArg[64];    /* 0 free, 1 bound variable, 2 constant, 3 _ */
  ValueType aVt[64];
  int i, j, nFree = 0, nBound = 0, nArity = pCl->nArg, nDef = 0, bSeed, bPhase = 0;
  QPhase ph;
  sqlite3_str *pOut;
  char *zOut, zAlias[24];
  if (nArity > 64) return 0;
  for (j = 0; j < nArity; j++) {
    const EdnValue *pA = pCl->aArg[j];
    aVt[j] = (ValueType)-1;
    if (qpIsBlank(pA)) {
      aeArg[j] = 3;
    } else if (!ednIsVar(pA)) {
      aeArg[j] = 2;
    } else if (qcArgBound(pX, pA)) {
      if (qcVarFind(pX, pA->u.s.z)->zExpr == NULL) return 0;   /* a pending IN list */
      aeArg[j] = 1;
      nBound++;
    } else {
      aeArg[j] = 0;
      nFree++;
    }
  }
  for (i = 0; i < pC->rules.nRule; i++) if (pC->pRi->aiHeadOf[i] == h) nDef++;
  if (nFree && nBound && nDef == 1) return qcInlineJoin(pX, pCl, h, aeArg, iDepth);
  if (nFree && nBound && pX->bRecRef) return 0;
  nDef = 0;
  /* Each branch starts from a copy of the scope so far. When that holds
  ** earlier calls (whose branches copied it too), SQLite would expand the
  ** copies of copies exponentially, so bodies that need nothing from the
  ** caller are not seeded (a UNION of their own, joined on the
  ** arguments); others read the rows so far named once (qcCollapse). */
  bSeed = nFree && nBound;
  if (bSeed && (pX->nFrom != pX->nPatternFrom || pX->nFrom >= QC_COLLAPSE_FROM)
      && qcInlineUnseeded(pX, h, pCl, aeArg)) {
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
  pOut = sqlite3_str_new(NULL);
  if (!bPhase) sqlite3_str_appendall(pOut, nFree ? "(" : "EXISTS (");
  for (i = 0; i < pC->rules.nRule && pC->rc == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    QCtx sub;
    char *zBody;
    int nCol = 0;
    if (pC->pRi->aiHeadOf[i] != h) continue;
    qcCtxInit(&sub, pC, pX);
    sub.nVisible = 0;        /* the body's variables are its own */
    if (bSeed && qcCopyScope(&sub, pX) && bPhase) sub.bRecRef = 1;
    qcInlinePrebind(&sub, pX, pCl, pR, aeArg, nFree && !bSeed);
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
    }
    zBody = pC->rc == SQLITE_OK ? qcBody(&sub) : NULL;
    if (zBody) sqlite3_str_appendall(pOut, zBody);
    sqlite3_free(zBody);
    qcCtxReset(&sub);
  }
  if (bPhase) {
    unsigned char abCol[64];
    for (j = 0; j < nArity; j++) abCol[j] = aeArg[j] == 0 || aeArg[j] == 1;
    zOut = sqlite3_str_finish(pOut);
    if (zOut == NULL) qcNoMem(pC);
    sqlite3_snprintf(sizeof zAlias, zAlias, "%s", ph.zAlias);
    qcPhaseEnd(pX, &ph, pC->rc == SQLITE_OK ? zOut : NULL, abCol, nArity);
    sqlite3_free(zOut);
  } else if (!nFree) {
    sqlite3_str_appendall(pOut, ")");
    zOut = sqlite3_str_finish(pOut);
    if (zOut == NULL) qcNoMem(pC);
    if (pC->rc == SQLITE_OK) qcWhere(pX, zOut);
    else sqlite3_free(zOut);
    return 1;
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
  return 1;
}

/* Does the seeding abBound/abDirect carry the caller's value into every
** invariant place abInv (qcMagicShape)? Else the call keeps the rule's
** whole-closure CTE, whose recursive step reads such a place from the
** row the recursive call gave. */
static int qcInvSeeded(const unsigned char *abInv, const unsigned char *abBound,
                       const unsigned char *abDirect, int n) {
  int i;
  for (i = 0; i < n; i++) {
    if (abInv[i] && !abBound[i] && !(abDirect && abDirect[i])) return 0;
  }
  return 1;
}

int qcrSeedPlace(QCtx *pX, const QClause *pCl, const char *zVar) {
  QComp *pC = pX->pC;
  int h, bArity, i;
  unsigned char aePlace[64], abInv[64];
  if (!pC->bRules || pCl->nArg > 64) return 1;
  if (pC->pRi == NULL && qcRulesPrepare(pC)) return 1;
  h = qcHeadFind(pC->pRi, pCl->zName, pCl->nArg, &bArity);
  /* Not a rule the rewrite takes (or an error qcrCall will report):
  ** every argument may matter. */
  if (h < 0 || !qcMagicShape(pC, h, aePlace, abInv)) return 1;
  for (i = 0; i < pCl->nArg; i++) {
    if (qcReqPlace(pC, h, i, NULL) && ednIsVar(pCl->aArg[i])
        && strcmp(pCl->aArg[i]->u.s.z, zVar) == 0) {
      return 1;
    }
  }
  for (i = 0; i < pCl->nArg; i++) {
    if ((!aePlace[i] || abInv[i]) && ednIsVar(pCl->aArg[i])
        && strcmp(pCl->aArg[i]->u.s.z, zVar) == 0) {
      return 1;
    }
  }
  return 0;
}

int qcrCall(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  int h, g, bArity, i;
  char zAlias[24];
  if (!pC->bRules) {
    return qcErr(pC, pCl->pForm, "unknown rule %s (no rule set is bound to %% in :in)", pCl->zName);
  }
  if (pC->pRi == NULL && qcRulesPrepare(pC)) return pC->rc;
  h = qcHeadFind(pC->pRi, pCl->zName, pCl->nArg, &bArity);
  if (h < 0) {
    if (!bArity) return qcErr(pC, pCl->pForm, "unknown rule %s", pCl->zName);
    for (i = 0; i < pC->pRi->nHead; i++) {
      if (strcmp(pC->pRi->aHead[i].zName, pCl->zName) == 0) break;
    }
    return qcErr(pC, pCl->pForm, "rule %s takes %d argument(s), called with %d", pCl->zName,
                 pC->pRi->aHead[i].nArity, pCl->nArg);
  }
  for (i = 0; i < pCl->nArg; i++) {
    const QRule *pR;
    const EdnValue *pA = pCl->aArg[i];
    if (!qcReqPlace(pC, h, i, &pR) || qcArgBound(pX, pA)) continue;
    {
      char *zReq = qcHeadReqList(pR);
      if (qpIsBlank(pA)) {
        qcErr(pC, pCl->pForm, "rule %s needs argument %d bound where it is called, not _"
              " (it is required: %s in the rule's head)", pCl->zName, i + 1, zReq ? zReq : "?");
      } else {
        qcErr(pC, pCl->pForm, "rule %s needs %s bound where it is called (it is required:"
              " %s in the rule's head)", pCl->zName, pA->u.s.z, zReq ? zReq : "?");
      }
      sqlite3_free(zReq);
      return pC->rc;
    }
  }
  if (qcInlineHead(pC, h) && qcInlineCall(pX, pCl, h, iDepth)) return pC->rc;
  g = pC->pRi->aHead[h].iGroup;
  if (pCl->nArg <= 64) {
    unsigned char aePlace[64], abBound[64], abDirect[64], abInv[64];
    int nBound = 0, nChange = 0, bScope = 0;
    if (qcMagicShape(pC, h, aePlace, abInv)) {
      /* Bound arguments in the changing places seed the rule, the caller's
      ** rows the origins: in the query's own scope as top-level CTEs, in a
      ** not/or or rule body as a subquery's own (unless that scope names a
      ** recursive CTE being built). Bound pass-through places are seeded
      ** too (each seed carries its value unchanged), so the base
      ** definitions' functions see them as the caller bound them. */
      int bTop = pX->pParent == NULL && !qcRulesBuilding(pC->pRi);
      for (i = 0; i < pCl->nArg; i++) {
        const EdnValue *pA = pCl->aArg[i];
        QVar *pV = ednIsVar(pA) ? qcVarFind(pX, pA->u.s.z) : NULL;
        abBound[i] = (unsigned char)(!aePlace[i] && (pV ? pV->zExpr != NULL
                                     : !ednIsVar(pA) && !qpIsBlank(pA)
                                       && (valueNaturalType(pA) != VT_NONE
                                           || qcIsEntityLookup(pC, pA))));
        nBound += abBound[i];
        nChange += !aePlace[i];
      }
      if ((bTop || !pX->bRecRef) && nBound == nChange) {
        int nSeed = nBound;
        for (i = 0; i < pCl->nArg; i++) {
          const EdnValue *pA = pCl->aArg[i];
          QVar *pV = ednIsVar(pA) ? qcVarFind(pX, pA->u.s.z) : NULL;
          if (aePlace[i] && (pV ? pV->zExpr != NULL : !ednIsVar(pA) && !qpIsBlank(pA)
                             && valueNaturalType(pA) != VT_NONE)) {
            abBound[i] = 1;
            nSeed++;
          }
        }
        /* Every place pass-through and none bound: the caller's rows give
        ** no origin values, so the rule is evaluated whole below. */
        if (nSeed > 0 && qcInvSeeded(abInv, abBound, NULL, pCl->nArg)) {
          return qcMagicCall(pX, pCl, h, abBound, NULL, bTop ? 1 : 2, iDepth);
        }
      }
      /* Seeds from the bodies; bound pass-through places whose value any
      ** CTE can hold (a constant, an input) are seeded too, when it can be
      ** read one way only: each body would type an untyped integer on its
      ** own (an entity in one, a long in another), and seeds of mixed
      ** readings would miss each other. A keyword stays a keyword. Such an
      ** integer is bound in every body directly instead (abDirect), each
      ** typing it by its own places: the recursion hands it on unchanged. */
      for (i = 0; i < pCl->nArg; i++) {
        const EdnValue *pA = pCl->aArg[i];
        QVar *pV = ednIsVar(pA) ? qcVarFind(pX, pA->u.s.z) : NULL;
        ValueType vt = pV ? (pV->nParam ? pV->vt : VT_NONE)
                          : ednIsVar(pA) || qpIsBlank(pA) ? VT_LONG : valueNaturalType(pA);
        int bValue = aePlace[i] && (pV ? pV->zExpr && pV->zExpr[0] == '?'
                                       : pA->type != EDN_VECTOR && !ednIsVar(pA)
                                         && !qpIsBlank(pA));
        abBound[i] = (unsigned char)!aePlace[i];
        abDirect[i] = (unsigned char)(bValue && vt == VT_LONG);
        if (bValue && vt != VT_LONG && (pV || vt != VT_NONE)) abBound[i] = 1;
        if (aePlace[i] && !bValue && pV && pV->zExpr && (bTop || !pX->bRecRef)) {
          /* A variable the caller's clauses bound: the origins start from
          ** the caller's rows (bCaller 3, or 4 in a nested scope), so the
          ** seeds carry its value. */
          abBound[i] = 1;
          bScope = 1;
        }
      }
      if (nChange && qcInvSeeded(abInv, abBound, abDirect, pCl->nArg)) {
        return qcMagicCall(pX, pCl, h, abBound, abDirect, bScope ? (bTop ? 3 : 4) : 0, iDepth);
      }
    }
  }
  if (pC->pRi->aHead[h].eState == 0) {
    if (qcRulesGroup(pC, g, iDepth)) return pC->rc;
  } else if (pC->pRi->aHead[h].eState == 1) {
    pC->nSelfRef++;     /* a call back into the group being built */
    pX->bRecRef = 1;
  }
  sqlite3_snprintf(sizeof zAlias, zAlias, "r%d", ++pC->nAlias);
  qcFrom(pX, sqlite3_mprintf("rules%d %s", g, zAlias));
  qcWhere(pX, sqlite3_mprintf("%s.r = %d", zAlias, h));
  for (i = 0; i < pCl->nArg && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pA = pCl->aArg[i];
    if (qpIsBlank(pA)) continue;
    if (ednIsVar(pA)) {
      QVar *pV = qcVarFind(pX, pA->u.s.z);
      if (pV && pV->zExpr && pV->nParam > 0 && pV->vt == VT_KEYWORD) {
        qcRuleArgWhere(pX, pA, zAlias, i);   /* a keyword input: value or ident */
        continue;
      }
      qcBindVar(pX, pA->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, i), VT_NONE,
                sqlite3_mprintf("%s.t%d", zAlias, i), 0);
    } else {
      qcRuleArgWhere(pX, pA, zAlias, i);
    }
  }
  return pC->rc;
}
