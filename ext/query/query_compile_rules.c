/*
** query_compile_rules.c — rule calls, with the rule set bound to `%`: the
** rule set's heads and recursion groups, the whole-closure CTE of a group,
** and the choice, per call, among the three ways to compile it (inlined
** with the caller's bindings, query_compile_rules_inline.c; specialised to
** the bound arguments, query_compile_rules_magic.c; or a join with the
** group's CTE). Takes a rule-call clause and the scope it runs in; gives
** FROM items, WHERE terms and the variables the call binds. Calls the
** rule set and argument helpers (query_compile_rules_ctx.c), the inline
** and seeded compilers (their entry points in query_compile_rules_ctx.h),
** the scope helpers, and compiles bodies with qcwClauses.
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
** not call itself is compiled into each call instead (qciCall), its
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
** rewrite, qcmCall): the rule's recursive definitions call it once,
** handing every unbound head variable through unchanged —
** (reach ?x ?y) :- [?x :follow ?z] (reach ?z ?y). Then reach(S, y) is
** base(z, y) for every z in seeds(S), seeds(S) = {S} ∪ step(seeds(S)), so
**   ruleso<N>(o.., ot..)           the caller's bound values (origins)
**   rulesm<N>(o.., ot.., s.., st..) recursive: seeds per origin
**   rulesa<N>(c.., t..)            base definitions applied to the seeds
** and only the part of the closure reachable from the bound values is
** computed (a 100,000-node chain from its head: 100,000 seeds, not 5e9
** pairs). Mutually recursive heads of one arity whose definitions each
** call the group once in that way (a cycle (r0 ?x ?y) :- edge (r1 ?z ?y)
** ...) are the same with a seed's head beside it, the tag column:
** rulesm<N>(.., sr) holds (origin, head, values), each definition of head
** sr steps to the head it calls, each base definition reads the seeds of
** its own head and its answers are rows of rulesm<N> too (sr -1), so a
** bound-start call costs heads x nodes x degree, not the group's whole
** closure (issue 19, B6); definitions alike but for their heads share one
** branch (SAME BODIES, query_compile_rules_magic.c). A group takes the
** rewrite only for a call that binds every changing place and no place
** the group hands on (such a call seeds the group's instance, below),
** and never from a recursive CTE's own step. Integer and keyword
** constants (and inputs still untyped) may
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
**
** CALLER'S ARGUMENTS IN OTHER RECURSION. For mutual recursion the
** rewrite does not take, the transitive form and the rest, the places every call into the group hands
** on unchanged (qcrGroupInvariant) take the call's bound values: a seed CTE
** ruless<N> of their distinct values and an instance rulesi<N> of the
** group whose base definitions start from it (qcrSeedGroup, qcrGroupAs),
** so the bodies' functions and predicates see them. An or that calls back
** into the recursion becomes one definition per branch (qcxPrepare):
** SQLite's recursive CTE may not name itself in a subquery; a call back
** inside not is an error.
*/
#include <string.h>
#include "query_compile_rules_ctx.h"

/* Refuses a definition of group g that calls its own recursion twice at
** the top of its body: said before any body compiles, so it is the error
** the user sees. */
static void qcrCheckLinear(QComp *pC, int g) {
  QRuleInfo *pRi = pC->pRi;
  int i, j, nPure = 0, nFilt = 0, nDir = 0;
  for (i = 0; i < pC->rules.nRule && qcPoll(pC) == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    const char *zA = "", *zB = "";
    int nTop = 0, iBase, e;
    if (pRi->aHead[pRi->aiHeadOf[i]].iGroup != g) continue;
    if (qcxIsChain(pRi, g, pR)) { nPure++; continue; }
    e = qcxChainFilter(pRi, g, pR, &iBase, &zA, &zB);
    if (e == 1 || e == 4) {
      nFilt++;
      nDir += e == 4;
      continue;
    }
    for (j = 0; j < pR->nClause; j++) {
      const QClause *pCl = pR->aClause[j];
      int hc = pCl->kind == QC_RULE ? qcxHeadFind(pRi, pCl->zName, pCl->nArg, NULL) : -1;
      if (hc >= 0 && pRi->aHead[hc].iGroup == g) nTop++;
    }
    if (nTop > 1) {
      qcErr(pC, pR->pForm, "unsupported recursion: a definition of rule %s calls its own"
            " recursion %d times (non-linear)%s%s%s%s%s; write it with one recursive call, e.g."
            " [(r ?a ?b) [?a :x ?c] (r ?c ?b)]", pR->zName, nTop,
            e == 2 ? " and its other clauses relate " : e == 3 ? " and its other clauses read"
            " both " : "", e ? zA : "", e ? " and " : "", e ? zB : "",
            e ? ", so it has no linear form that gives the same answer" : "");
      return;
    }
  }
  /* Several chains with conditions: a derivation may take each split from
  ** another definition, which one linear order cannot follow when one
  ** reads an end; a chain without conditions makes the whole closure,
  ** which holds every other definition's pairs. */
  if (pC->rc == SQLITE_OK && nPure == 0 && nFilt > 1 && nDir > 0) {
    qcErr(pC, NULL, "unsupported recursion: rule %s has %d transitive definitions ((r ?a ?c)"
          " (r ?c ?b)) with other clauses, and one of them reads ?a or ?b; a set of such"
          " definitions has a linear form only when their clauses read only the middle"
          " variable; write it with one recursive call, e.g. [(r ?a ?b) [?a :x ?c] (r ?c ?b)]",
          pRi->aHead[g].zName, nFilt);
  }
}

/* The SELECT of definition pR (of head h) as one branch of its group's CTE:
** "SELECT h, <values>, <tags>, <storage classes>" over nMax columns, then
** its body. pC->nSelfRef counts its calls into its own group. NULL on
** error. */
static char *qcrDefinitionSelect(QComp *pC, const QRule *pR, int h, int nMax, int iDepth,
                                 const unsigned char *abSeed, int iInst) {
  QCtx sub;
  sqlite3_str *pSel;
  char *zBody = NULL, *zSel;
  int j;
  pSel = sqlite3_str_new(NULL);
  qcCtxInit(&sub, pC, NULL);
  pC->nSelfRef = 0;
  if (abSeed) {
    /* a base definition of an instance: its seeded places start from the
    ** seed CTE's columns (in place order) */
    int k = 0;
    qcFrom(&sub, sqlite3_mprintf("ruless%d s%d", iInst, iInst));
    for (j = 0; j < nMax && pC->rc == SQLITE_OK; j++) {
      if (!abSeed[j]) continue;
      if (j < pR->nHead) {
        qcBindVar(&sub, pR->aHead[j]->u.s.z, sqlite3_mprintf("s%d.o%d", iInst, k),
                  VT_NONE, sqlite3_mprintf("s%d.ot%d", iInst, k), 0);
        qcxMarkArg(&sub, pR->aHead[j]->u.s.z);
        if (pC->rc == SQLITE_OK) {
          QVar *pV = qcVarFind(&sub, pR->aHead[j]->u.s.z);
          if (pV) pV->bSeedKind = 1;   /* its kind is sN.okK (qcVarSeedKind) */
        }
      }
      k++;
    }
  }
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
  if (pC->zGroupIn && pC->rc == SQLITE_OK && pC->zGroupAlias[0] == 0) {
    qcErr(pC, pR->pForm, "rule %s: definitions compiled together lost their call", pR->zName);
  }
  if (pC->zGroupIn) sqlite3_str_appendf(pSel, "SELECT CASE %s.r%s END", pC->zGroupAlias, pC->zGroupArms);
  else sqlite3_str_appendf(pSel, "SELECT %d", h);
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
  qcCtxReset(&sub);
  if (pC->rc) { sqlite3_free(zSel); return NULL; }
  return zSel;
}

/* Writes group g's CTE rules<g> from its base branches pBase and
** recursive ones pRec (nRec of them), a transitive definition of head
** iChainHead (nChain) rewritten to its linear form. */
static void qcrGroupCte(QComp *pC, const char *zCte, const char *zB, sqlite3_str *pBase,
                        sqlite3_str *pRec, int nRec, int nChain, int iChainHead, int i0, int i1,
                        int nMax, int nFilt) {
  static const char *const azPre[3] = { "c", "t", "k" };
  int j, q;
  if (pC->rc == SQLITE_OK && (nChain || nFilt)) {
    /* rulesb<g>: the base relation; the chain becomes base ∘ rules: x
    ** starts where b ends, the places both hand on are equal, and the row
    ** runs from b's start (place i0) to x's end (i1). */
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    sqlite3_str_appendf(pC->pCte, "%s(r", zB);
    for (q = 0; q < 3; q++) {
      for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", %s%d", azPre[q], j);
    }
    sqlite3_str_appendf(pC->pCte, ") AS (%s)", sqlite3_str_value(pBase));
    sqlite3_str_reset(pBase);
    sqlite3_str_appendf(pBase, "SELECT * FROM %s", zB);
  }
  if (pC->rc == SQLITE_OK && nChain) {
    sqlite3_str_appendf(pRec, "%sSELECT %d", nRec ? " UNION " : "", iChainHead);
    for (q = 0; q < 3; q++) {
      for (j = 0; j < nMax; j++) {
        sqlite3_str_appendf(pRec, ", %s.%s%d", j == i1 ? "x" : "b", azPre[q], j);
      }
    }
    sqlite3_str_appendf(pRec, " FROM %s b, %s x WHERE b.r = %d AND x.r = %d", zB, zCte,
                        iChainHead, iChainHead);
    for (q = 0; q < 3; q++) {
      sqlite3_str_appendf(pRec, " AND x.%s%d %s b.%s%d", azPre[q], i0, q ? "IS" : "=",
                          azPre[q], i1);
    }
    for (j = 0; j < nMax; j++) {
      if (j == i0 || j == i1) continue;
      for (q = 0; q < 3; q++) {
        sqlite3_str_appendf(pRec, " AND x.%s%d %s b.%s%d", azPre[q], j, q ? "IS" : "=",
                            azPre[q], j);
      }
    }
    nRec++;
  }
  if (pC->rc == SQLITE_OK) {
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    sqlite3_str_appendf(pC->pCte, "%s(r", zCte);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", c%d", j);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", t%d", j);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", k%d", j);
    /* UNION (not UNION ALL): set semantics make cyclic data terminate. */
    sqlite3_str_appendf(pC->pCte, ") AS (%s%s%s)", sqlite3_str_value(pBase),
                        nRec ? " UNION " : "", nRec ? sqlite3_str_value(pRec) : "");
    if (nRec) pC->bRecursive = 1;
  }
}

/* Does clause list a[0..n) call a head of recursion group g (at any
** depth)? */
static int qcrCallsGroup(const QRuleInfo *pRi, QClause *const *a, int n, int g, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return 1;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      int h = qcxHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL);
      if (h >= 0 && pRi->aHead[h].iGroup == g) return 1;
    } else if (a[i]->nSub && qcrCallsGroup(pRi, a[i]->aSub, a[i]->nSub, g, iDepth + 1)) {
      return 1;
    }
  }
  return 0;
}

/* Refuses group g when its definitions, one UNION in its CTE (the chain
** ones one step together), pass SQLite's compound limit: 1 then. */
static int qcrGroupUnionLimit(QComp *pC, int g) {
  const QRuleInfo *pRi = pC->pRi;
  int i, i0, i1, nSel = 0, bChain = 0;
  for (i = 0; i < pC->rules.nRule; i++) {
    if (pRi->aHead[pRi->aiHeadOf[i]].iGroup != g) continue;
    if (qcxChainPlaces(pRi, g, pC->rules.aRule[i], &i0, &i1)) bChain = 1;
    else nSel++;
  }
  for (i = 0, i0 = 0; i < pRi->nHead; i++) i0 += pRi->aHead[i].iGroup == g;
  if (i0 > 1) {
    /* mutually recursive rules are one CTE: name them all, not one */
    return qcCompoundLimit(pC, NULL, nSel + bChain, "the %d mutually recursive rules of %s (one"
                           " recursive CTE) have %d definitions together", i0,
                           pRi->aHead[g].zName, nSel + bChain);
  }
  return qcCompoundLimit(pC, NULL, nSel + bChain, "rule %s has %d definitions",
                         pRi->aHead[g].zName, nSel + bChain);
}

/* Compiles every definition of group g into the CTE rules<g>; with abSeed
** (iInst > 0) into an instance rulesi<iInst> whose definitions that do not
** call back into the group (its base) start from the seed CTE
** ruless<iInst>(o0.., ot0, ok0, ..): head place j with abSeed[j] is
** pre-bound to the next seed column. Every call into the group hands such
** a place on unchanged (qcrGroupInvariant), so every row of the group
** carries a seed value there, and the instance holds exactly the group's
** rows with the caller's values in those places: the bodies' functions
** and predicates see them, as Datomic evaluates a rule with the caller's
** bindings. */
static int qcrGroupAs(QComp *pC, int g, int iDepth, const unsigned char *abSeed, int iInst) {
  QRuleInfo *pRi = pC->pRi;
  sqlite3_str *pBase = sqlite3_str_new(NULL);
  sqlite3_str *pRec = sqlite3_str_new(NULL);
  int i, nBase = 0, nRec = 0, nChain = 0, iChainHead = 0, nMax = pRi->aHead[g].nCols;
  int i0 = 0, i1 = 1, nFilt = 0;
  int nSelfSave = pC->nSelfRef;
  const char *zFirst = pRi->aHead[g].zName;
  unsigned char *aeSave = NULL, *aPlan = NULL;
  char **azKey = NULL;
  char zCte[32], zB[32];
  if (iDepth > EDN_MAX_DEPTH) return qcErr(pC, NULL, "rules nested too deep");
  if (iInst) {
    sqlite3_snprintf(sizeof zCte, zCte, "rulesi%d", iInst);
    sqlite3_snprintf(sizeof zB, zB, "rulesbi%d", iInst);
    aeSave = sqlite3_malloc64((sqlite3_uint64)pRi->nHead + 1);
    if (aeSave == NULL) return qcNoMem(pC);
    for (i = 0; i < pRi->nHead; i++) aeSave[i] = pRi->aHead[i].eState;
  } else {
    sqlite3_snprintf(sizeof zCte, zCte, "rules%s%d", pC->zRuleTag, g);
    sqlite3_snprintf(sizeof zB, zB, "rulesb%s%d", pC->zRuleTag, g);
  }
  qcrCheckLinear(pC, g);
  if (qcrGroupUnionLimit(pC, g)) {
    sqlite3_free(sqlite3_str_finish(pBase));
    sqlite3_free(sqlite3_str_finish(pRec));
    sqlite3_free(aeSave);
    return pC->rc;
  }
  for (i = 0; i < pRi->nHead; i++) {
    if (pRi->aHead[i].iGroup != g) continue;
    pRi->aHead[i].eState = 1;
    pRi->aHead[i].iInst = iInst;
  }
  aPlan = qcxMergePlan(pC, g, &azKey, 0);
  for (i = 0; aPlan && i < pC->rules.nRule && qcPoll(pC) == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int h = pRi->aiHeadOf[i];
    char *zSel, *zIn = NULL, *zArms = NULL;
    const char *zA, *zB2;
    int iBase, e;
    if (pRi->aHead[h].iGroup != g || aPlan[i] == 2) continue;
    if (aPlan[i] == 1 && qcxMergeArms(pC, g, i, azKey, &zIn, &zArms) == SQLITE_OK) {
      /* SAME BODIES (query_compile_rules_magic.c): one branch for them all */
      pC->zGroupIn = zIn;
      pC->zGroupArms = zArms;
      pC->zGroupAlias[0] = 0;
    }
    if (qcxChainPlaces(pRi, g, pR, &i0, &i1)) {
      nChain++;
      iChainHead = h;
      continue;
    }
    /* a chain with conditions: one of its calls reads the base CTE
    ** (qcxChainFilter), the other the recursion */
    e = qcxChainFilter(pRi, g, pR, &iBase, &zA, &zB2);
    if (e == 1 || e == 4) {
      pC->pChainBase = pR->aClause[iBase];
      nFilt++;
    }
    zSel = qcrDefinitionSelect(pC, pR, h, nMax, iDepth,
                               abSeed && !qcrCallsGroup(pRi, pR->aClause, pR->nClause, g, 0)
                               ? abSeed : NULL, iInst);
    pC->pChainBase = NULL;
    pC->zGroupIn = pC->zGroupArms = NULL;
    sqlite3_free(zIn);
    sqlite3_free(zArms);
    if (zSel) {
      if (pC->nSelfRef) sqlite3_str_appendf(pRec, "%s%s", nRec++ ? " UNION " : "", zSel);
      else sqlite3_str_appendf(pBase, "%s%s", nBase++ ? " UNION " : "", zSel);
    }
    sqlite3_free(zSel);
  }
  pC->nSelfRef = nSelfSave;
  if (pC->rc == SQLITE_OK && nBase == 0) {
    qcErr(pC, NULL, "unsupported recursion: rule %s has no definition without recursion"
          " (it could never produce a row)", zFirst);
  }
  if (pC->rc == SQLITE_OK && (nChain || nFilt) && nRec > nFilt) {
    qcErr(pC, NULL, "unsupported recursion: rule %s mixes a transitive definition with other"
          " recursive ones", zFirst);
  }
  qcrGroupCte(pC, zCte, zB, pBase, pRec, nRec, nChain, iChainHead, i0, i1, nMax, nFilt);
  for (i = 0; i < pRi->nHead; i++) {
    if (pRi->aHead[i].iGroup != g) continue;
    pRi->aHead[i].eState = aeSave ? aeSave[i] : 2;
    pRi->aHead[i].iInst = 0;
  }
  sqlite3_free(aeSave);
  for (i = 0; azKey && i < pC->rules.nRule; i++) sqlite3_free(azKey[i]);
  sqlite3_free(azKey);
  sqlite3_free(aPlan);
  sqlite3_free(sqlite3_str_finish(pBase));
  sqlite3_free(sqlite3_str_finish(pRec));
  return pC->rc;
}

static int qcrGroup(QComp *pC, int g, int iDepth) {
  return qcrGroupAs(pC, g, iDepth, NULL, 0);
}

/* Clears aInv[j] for every place j that a call into group g among a[0..n)
** (at any depth) of definition pR does not hand on as pR's head variable j. */
static void qcrInvariantCalls(const QRuleInfo *pRi, const QRule *pR, QClause *const *a, int n,
                              int g, unsigned char *aInv, int iDepth) {
  int i, j;
  if (iDepth > EDN_MAX_DEPTH) return;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      int h = qcxHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL);
      if (h < 0 || pRi->aHead[h].iGroup != g) continue;
      for (j = 0; j < pRi->aHead[g].nCols; j++) {
        if (!aInv[j]) continue;
        if (j >= a[i]->nArg || j >= pR->nHead || !ednIsVar(a[i]->aArg[j])
            || strcmp(a[i]->aArg[j]->u.s.z, pR->aHead[j]->u.s.z) != 0) {
          aInv[j] = 0;
        }
      }
    } else if (a[i]->nSub) {
      qcrInvariantCalls(pRi, pR, a[i]->aSub, a[i]->nSub, g, aInv, iDepth + 1);
    }
  }
}

/* The places of recursion group g that every call into the group, in
** every definition of its heads, hands on unchanged (the head's own
** variable j in place j; every head of the group has a place j): aInv[j]
** = 1 for those, over the group's nCols places (at most nMaxPlace).
** Returns how many. */
static int qcrGroupInvariant(QComp *pC, int g, unsigned char *aInv, int nMaxPlace) {
  const QRuleInfo *pRi = pC->pRi;
  int i, j, n = 0, nCols = pRi->aHead[g].nCols;
  if (nCols > nMaxPlace) return 0;
  for (j = 0; j < nCols; j++) aInv[j] = 1;
  for (i = 0; i < pRi->nHead; i++) {
    if (pRi->aHead[i].iGroup != g) continue;
    for (j = pRi->aHead[i].nArity; j < nCols; j++) aInv[j] = 0;
  }
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    if (pRi->aHead[pRi->aiHeadOf[i]].iGroup != g) continue;
    qcrInvariantCalls(pRi, pR, pR->aClause, pR->nClause, g, aInv, 0);
  }
  for (j = 0; j < nCols; j++) n += aInv[j];
  return n;
}

/* Is any rule body being compiled (a call from a rule body)? */
static int qcrBuilding(const QRuleInfo *pRi) {
  int i;
  for (i = 0; i < pRi->nHead; i++) if (pRi->aHead[i].eState == 1) return 1;
  return 0;
}

/* "[?a ?b]": the required variables of pR's head, for messages. */
static char *qcrHeadReqList(const QRule *pR) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  int i, n = 0;
  sqlite3_str_appendchar(p, 1, '[');
  for (i = 0; i < pR->nHead; i++) {
    if (pR->abReq[i]) sqlite3_str_appendf(p, "%s%s", n++ ? " " : "", pR->aHead[i]->u.s.z);
  }
  sqlite3_str_appendchar(p, 1, ']');
  return sqlite3_str_finish(p);
}

int qcrReady(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  int h, i;
  if (!pC->bRules) return 1;
  if (pC->pRi == NULL && qcxPrepare(pC)) return 1;
  h = qcxHeadFind(pC->pRi, pCl->zName, pCl->nArg, NULL);
  if (h < 0) return 1;
  for (i = 0; i < pCl->nArg; i++) {
    if (qcxReqPlace(pC, h, i, NULL) && !qcxArgBound(pX, pCl->aArg[i])) return 0;
  }
  return 1;
}

/* Does the seeding abBound/abDirect carry the caller's value into every
** invariant place abInv (qcmShape)? Else the call keeps the rule's
** whole-closure CTE, whose recursive step reads such a place from the
** row the recursive call gave. */
static int qcrInvSeeded(const unsigned char *abInv, const unsigned char *abBound,
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
  if (pC->pRi == NULL && qcxPrepare(pC)) return 1;
  h = qcxHeadFind(pC->pRi, pCl->zName, pCl->nArg, &bArity);
  /* Not a rule the rewrite takes (or an error qcrCall will report):
  ** every argument may matter. */
  if (h < 0 || qcmShape(pC, h, aePlace, abInv) != 1) return 1;
  for (i = 0; i < pCl->nArg; i++) {
    if (qcxReqPlace(pC, h, i, NULL) && ednIsVar(pCl->aArg[i])
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

/* Refuses call pCl of head h when an argument in a required place ([?a]
** in the head) is not bound where it is called. */
static int qcrCheckRequired(QCtx *pX, const QClause *pCl, int h) {
  QComp *pC = pX->pC;
  int i;
  for (i = 0; i < pCl->nArg; i++) {
    const QRule *pR;
    const EdnValue *pA = pCl->aArg[i];
    if (!qcxReqPlace(pC, h, i, &pR) || qcxArgBound(pX, pA)) continue;
    {
      char *zReq = qcrHeadReqList(pR);
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
  return SQLITE_OK;
}

/* Is head variable pVar of rule pR in an entity place of a data pattern
** of its body: the e or tx place, or the value of a ref attribute? */
static int qcrEntityPlace(QComp *pC, const QRule *pR, const EdnValue *pVar) {
  int i;
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    const Attr *pA;
    if (pCl->kind != QC_PATTERN || pCl->pSrc) continue;
    if (ednIsSymbol(pCl->aArg[0], pVar->u.s.z)) return 1;
    if (pCl->nArg > 3 && ednIsSymbol(pCl->aArg[3], pVar->u.s.z)) return 1;
    if (pCl->nArg < 3 || !ednIsSymbol(pCl->aArg[2], pVar->u.s.z)) continue;
    if (pCl->aArg[1]->type != EDN_KEYWORD) continue;
    pA = schemaAttrByIdent(pC->pSchema, pCl->aArg[1]->u.s.z, pCl->aArg[1]->u.s.n);
    if (pA && pA->type == VT_REF) return 1;
  }
  return 0;
}

/* The arguments of call pCl of head h that go to an entity place of one
** of its definitions: a constant that names no entity (a string, a
** double ...) is an error, as it is in a pattern (the recursive forms
** would only find no rows), and an input not yet typed is read as an
** entity there, so a scalar input that names none is an error when bound
** (query_plan.c). */
static int qcrEntityArgs(QCtx *pX, const QClause *pCl, int h) {
  QComp *pC = pX->pC;
  int i, j;
  for (i = 0; i < pC->rules.nRule && pC->rc == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    if (pC->pRi->aiHeadOf[i] != h) continue;
    for (j = 0; j < pCl->nArg && j < pR->nHead && pC->rc == SQLITE_OK; j++) {
      const EdnValue *pA = pCl->aArg[j];
      QVar *pV;
      if (qpIsBlank(pA) || !qcrEntityPlace(pC, pR, pR->aHead[j])) continue;
      if (!ednIsVar(pA)) {
        if (pA->type != EDN_INT && pA->type != EDN_KEYWORD && !qcIsLookupRef(pA)
            && !qcNoRows(pX)) {
          qcNotEntity(pC, pA, NULL);
        }
        continue;
      }
      pV = qcVarFind(pX, pA->u.s.z);
      if (pV && pV->zExpr && pV->nParam && pV->vt != VT_KEYWORD) qcTypeParams(pX, pV, VT_REF, 0);
    }
  }
  return pC->rc;
}

/* How many heads recursion group g has. */
static int qcrGroupSize(const QRuleInfo *pRi, int g) {
  int i, n = 0;
  for (i = 0; i < pRi->nHead; i++) n += pRi->aHead[i].iGroup == g;
  return n;
}

/* Compiles call pCl of head h by the magic-set rewrite when its shape and
** its bound arguments allow (query_compile_rules_magic.c): returns 1 when
** done (or failed: pC->rc), 0 when the call joins the whole-closure CTE. */
static int qcrTryMagic(QCtx *pX, const QClause *pCl, int h, int iDepth) {
  QComp *pC = pX->pC;
  int i;
  unsigned char aePlace[64], abBound[64], abDirect[64], abInv[64];
  int nBound = 0, nChange = 0, bScope = 0, eShape;
  int bMulti = qcrGroupSize(pC->pRi, pC->pRi->aHead[h].iGroup) > 1;
  /* A call back into a group of several heads while its whole-closure CTE
  ** is built joins that CTE (qcrJoinGroup): it is the CTE's recursion. */
  if (pC->pRi->aHead[h].eState == 1 && bMulti) return 0;
  eShape = qcmShape(pC, h, aePlace, abInv);
  if (eShape) {
    /* Bound arguments in the changing places seed the rule, the caller's
    ** rows the origins: in the query's own scope as top-level CTEs, in a
    ** not/or or rule body as a subquery's own (unless that scope names a
    ** recursive CTE being built). Bound pass-through places are seeded
    ** too (each seed carries its value unchanged), so the base
    ** definitions' functions see them as the caller bound them. */
    /* A rule body's call (qcrBuilding) goes to the statement's WITH too
    ** when the body's rows are the statement's own tables (no enclosing
    ** scope, no recursive CTE being built, no subquery's WITH around it):
    ** each level of a chain of recursive rules nested in the one before
    ** would nest a subquery deeper, and SQLite's parser stack takes about
    ** eight. */
    int bTop = pX->pParent == NULL && !pC->nLocal && !pX->bRecRef
               && (!qcrBuilding(pC->pRi) || pX->bFixed);
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
        abDirect[i] = (unsigned char)(aePlace[i] && qcmDirectLit(pC, pA));
        if (aePlace[i] && !abDirect[i] && (pV ? pV->zExpr != NULL : !ednIsVar(pA)
                                           && !qpIsBlank(pA) && valueNaturalType(pA) != VT_NONE)) {
          abBound[i] = 1;
          nSeed++;
        }
      }
      /* Every place pass-through and none bound: the caller's rows give
      ** no origin values, so the rule is evaluated whole below. */
      /* A group of several heads takes the rewrite only from its changing
      ** places: a bound place that every call hands on is better served by
      ** the group's instance seeded with it (qcrSeedGroup: heads x the rows
      ** that reach the value, one branch per definition), and seeds from
      ** the bodies would be its whole closure once per origin (issue 19,
      ** B6: 100 nodes x 5 edges, 32 heads, the end bound: 102 s against
      ** 0.06 s). */
      if (bMulti && nSeed > nBound) return 0;
      if (nSeed > 0 && qcrInvSeeded(abInv, abBound, abDirect, pCl->nArg)) {
        qcmCall(pX, pCl, h, abBound, abDirect, bTop ? 1 : 2, iDepth);
        return 1;
      }
    }
    /* Seeds from the bodies; bound pass-through places whose value any
    ** CTE can hold (a constant, an input) are seeded too, when it can be
    ** read one way only: each body would type an untyped integer on its
    ** own (an entity in one, a long in another), and seeds of mixed
    ** readings would miss each other. Such an integer is bound in every
    ** body directly instead (abDirect), each typing it by its own places:
    ** the recursion hands it on unchanged; so are a tuple literal and a
    ** keyword constant, read as written in each place (qcrDirectLit). */
    for (i = 0; i < pCl->nArg; i++) {
      const EdnValue *pA = pCl->aArg[i];
      QVar *pV = ednIsVar(pA) ? qcVarFind(pX, pA->u.s.z) : NULL;
      ValueType vt = pV ? (pV->nParam ? pV->vt : VT_NONE)
                        : ednIsVar(pA) || qpIsBlank(pA) ? VT_LONG : valueNaturalType(pA);
      int bValue = aePlace[i] && (pV ? pV->zExpr && pV->zExpr[0] == '?'
                                     : pA->type != EDN_VECTOR && !ednIsVar(pA)
                                       && !qpIsBlank(pA));
      int bLit = aePlace[i] && qcmDirectLit(pC, pA);
      abBound[i] = (unsigned char)!aePlace[i];
      abDirect[i] = (unsigned char)((bValue && vt == VT_LONG) || bLit);
      if (bValue && !bLit && vt != VT_LONG && (pV || vt != VT_NONE)) abBound[i] = 1;
      if (aePlace[i] && !bValue && pV && pV->zExpr && (bTop || !pX->bRecRef)) {
        /* A variable the caller's clauses bound: the origins start from
        ** the caller's rows (bCaller 3, or 4 in a nested scope), so the
        ** seeds carry its value. */
        abBound[i] = 1;
        bScope = 1;
      }
    }
    /* (eShape 2: some definition's body need not bind a changing place;
    ** bMulti: see above) */
    if (bMulti) return 0;
    if (eShape == 1 && nChange && qcrInvSeeded(abInv, abBound, abDirect, pCl->nArg)) {
      qcmCall(pX, pCl, h, abBound, abDirect, bScope ? (bTop ? 3 : 4) : 0, iDepth);
      return 1;
    }
  }
  return 0;
}

/* The caller's bound values in the invariant places of group g
** (qcrGroupInvariant) that call pCl binds: constants and inputs anywhere,
** variables the caller's clauses bound only in the query's own scope
** (where a CTE may read the caller's rows). When there are some, emits the
** seed CTE ruless<N> of their distinct values and the group's instance
** rulesi<N> (qcrGroupAs) and returns N; 0 when there are none (the call
** reads the group's one CTE) or on error (pC->rc). */
static int qcrSeedGroup(QCtx *pX, const QClause *pCl, int g, int iDepth) {
  QComp *pC = pX->pC;
  QRuleInfo *pRi = pC->pRi;
  unsigned char aInv[64], abSeed[64], abAmb[64];
  int i, nSeed = 0, bScope = 0, iN, k;
  int bTopScope = (pX->pParent == NULL || pX->bTopRows) && !qcrBuilding(pRi) && !pC->nLocal
                  && !pX->bRecRef && !pX->bFixed;
  QCtx *pRoot = pX, *pOrigX = pX;
  sqlite3_str *pOrig;
  if (pCl->nArg > 64 || !qcrGroupInvariant(pC, g, aInv, 64)) return 0;
  /* In a not/or of the query's own scope, a variable the query's clauses
  ** bound before it seeds from the query's rows so far: a superset of the
  ** values the not/or sees, and the instance's rows for each seed value
  ** are that value's rows, joined to the call's own below. */
  while (pRoot->pParent) pRoot = pRoot->pParent;
  if (!bTopScope && pRoot != pX && !qcrBuilding(pRi) && !pC->nLocal && !pRoot->bRecRef
      && !pRoot->bFixed) {
    int bAll = 1;
    for (i = 0; i < pCl->nArg && i < pRi->aHead[g].nCols; i++) {
      const EdnValue *pA = pCl->aArg[i];
      QVar *pV, *pVR;
      if (!aInv[i] || !ednIsVar(pA)) continue;
      pV = qcVarFind(pX, pA->u.s.z);
      if (pV == NULL || pV->zExpr == NULL || pV->zExpr[0] == '?') continue;
      pVR = qcVarFind(pRoot, pA->u.s.z);
      if (pVR == NULL || pVR->zExpr == NULL) bAll = 0;
    }
    if (bAll) pOrigX = pRoot;
  }
  if (pOrigX != pX) bTopScope = 1;
  memset(abSeed, 0, sizeof abSeed);
  memset(abAmb, 0, sizeof abAmb);
  for (i = 0; i < pCl->nArg && i < pRi->aHead[g].nCols; i++) {
    const EdnValue *pA = pCl->aArg[i];
    if (!aInv[i] || qpIsBlank(pA)) continue;
    if (!ednIsVar(pA)) {
      if (valueNaturalType(pA) == VT_NONE && !qcIsEntityLookup(pC, pA)) continue;
    } else {
      QVar *pV = qcVarFind(pX, pA->u.s.z);
      if (pV == NULL || pV->zExpr == NULL) continue;
      if (pV->zExpr[0] != '?') {
        if (!bTopScope) continue;
        bScope = 1;
      }
    }
    abSeed[i] = 1;
    nSeed++;
  }
  if (nSeed == 0) return 0;
  if (bScope && pX->pParent == NULL) qcCollapseHeavy(pX);
  if (pC->rc) return 0;
  pOrig = sqlite3_str_new(NULL);
  qcmOrigins(pOrigX, pCl, abSeed, abAmb, pOrig, !bScope);
  iN = ++pC->nAlias;
  if (pC->rc == SQLITE_OK && sqlite3_str_errcode(pOrig) == SQLITE_OK) {
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    sqlite3_str_appendf(pC->pCte, "ruless%d(", iN);
    for (k = 0; k < nSeed; k++) sqlite3_str_appendf(pC->pCte, "%so%d", k ? ", " : "", k);
    for (k = 0; k < nSeed; k++) sqlite3_str_appendf(pC->pCte, ", ot%d, ok%d", k, k);
    sqlite3_str_appendf(pC->pCte, ") AS (%s)", sqlite3_str_value(pOrig));
  } else if (pC->rc == SQLITE_OK) {
    qcNoMem(pC);
  }
  sqlite3_free(sqlite3_str_finish(pOrig));
  if (pC->rc || qcrGroupAs(pC, g, iDepth, abSeed, iN)) return 0;
  return iN;
}

/* Call pCl of head h (group g) as a join with the group's CTE rules<g>,
** compiled first when not yet emitted, or with an instance of it that
** takes the call's arguments (qcrSeedGroup). */
static int qcrJoinGroup(QCtx *pX, const QClause *pCl, int h, int g, int iDepth) {
  QComp *pC = pX->pC;
  char zAlias[24];
  int i, iInst = 0, bBase = 0, bBack = 0;
  if (pC->pRi->aHead[h].eState != 1) {
    iInst = qcrSeedGroup(pX, pCl, g, iDepth);
    if (pC->rc) return pC->rc;
  }
  if (iInst == 0 && pC->pRi->aHead[h].eState == 0) {
    if (qcrGroup(pC, g, iDepth)) return pC->rc;
  } else if (iInst == 0 && pC->pRi->aHead[h].eState == 1 && pCl == pC->pChainBase) {
    bBase = 1;          /* the chain's call that reads the base CTE */
    iInst = pC->pRi->aHead[h].iInst;
  } else if (iInst == 0 && pC->pRi->aHead[h].eState == 1) {
    pC->nSelfRef++;     /* a call back into the group being built */
    pX->bRecRef = 1;
    iInst = pC->pRi->aHead[h].iInst;
    bBack = 1;
  }
  sqlite3_snprintf(sizeof zAlias, zAlias, "r%d", ++pC->nAlias);
  if (bBase && iInst) qcFrom(pX, sqlite3_mprintf("rulesbi%d %s", iInst, zAlias));
  else if (bBase) qcFrom(pX, sqlite3_mprintf("rulesb%s%d %s", pC->zRuleTag, g, zAlias));
  else if (iInst) qcFrom(pX, sqlite3_mprintf("rulesi%d %s", iInst, zAlias));
  else qcFrom(pX, sqlite3_mprintf("rules%s%d %s", pC->zRuleTag, g, zAlias));
  if (bBack && pC->zGroupIn) {
    /* definitions alike compiled as one (SAME BODIES): each one's callee */
    qcWhere(pX, sqlite3_mprintf("%s.r %s", zAlias, pC->zGroupIn));
    memcpy(pC->zGroupAlias, zAlias, sizeof zAlias);
  } else {
    qcWhere(pX, sqlite3_mprintf("%s.r = %d", zAlias, h));
  }
  for (i = 0; i < pCl->nArg && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pA = pCl->aArg[i];
    if (qpIsBlank(pA)) continue;
    if (ednIsVar(pA)) {
      QVar *pV = qcVarFind(pX, pA->u.s.z);
      if (pV && pV->zExpr && qcVarIdent(pV)) {
        qcxArgWhere(pX, pA, zAlias, i);   /* a keyword input: value or ident */
        continue;
      }
      qcBindVar(pX, pA->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, i), VT_NONE,
                sqlite3_mprintf("%s.t%d", zAlias, i), 0);
    } else {
      qcxArgWhere(pX, pA, zAlias, i);
    }
  }
  return pC->rc;
}

static int qcrCallIn(QCtx *pX, const QClause *pCl, int iDepth);

/* ($2 rule ...) runs the rule on $2 (its body reads $2). */
int qcrCall(QCtx *pX, const QClause *pCl, int iDepth) {
  QSrcSave sv;
  unsigned char abFree[64];
  int bTop = pX->pC->pTopCall == NULL;
  if (bTop) pX->pC->pTopCall = pCl;
  qcSeqCall(pX, pCl, abFree, 0);
  if (qcsEnter(pX->pC, pCl, &sv) == SQLITE_OK) qcrCallIn(pX, pCl, iDepth);
  if (pX->pC->rc == SQLITE_OK) qcSeqCall(pX, pCl, abFree, 1);
  qcsLeave(pX->pC, &sv);
  if (bTop) pX->pC->pTopCall = NULL;
  return pX->pC->rc;
}

static int qcrCallIn(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  int h, bArity, i;
  if (pC->rc) return pC->rc;
  if (!pC->bRules) {
    return qcErr(pC, pCl->pForm, "unknown rule %s (no rule set is bound to %% in :in)", pCl->zName);
  }
  if (pC->pRi == NULL && qcxPrepare(pC)) return pC->rc;
  h = qcxHeadFind(pC->pRi, pCl->zName, pCl->nArg, &bArity);
  if (h < 0) {
    if (!bArity) return qcErr(pC, pCl->pForm, "unknown rule %s", pCl->zName);
    for (i = 0; i < pC->pRi->nHead; i++) {
      if (strcmp(pC->pRi->aHead[i].zName, pCl->zName) == 0) break;
    }
    return qcErr(pC, pCl->pForm, "rule %s takes %d argument(s), called with %d", pCl->zName,
                 pC->pRi->aHead[i].nArity, pCl->nArg);
  }
  if (qcrCheckRequired(pX, pCl, h) || qcrEntityArgs(pX, pCl, h)) return pC->rc;
  if (!qciHead(pC, h)) {
    /* The recursive forms seed and join their arguments by one type per
    ** variable; a collection of values of several types would lose rows
    ** there, so it is refused rather than answered wrongly. */
    for (i = 0; i < pCl->nArg; i++) {
      const EdnValue *pA = pCl->aArg[i];
      const QVar *pV = pA->type == EDN_SYMBOL ? qcVarFind(pX, pA->u.s.z) : NULL;
      if (pV && pV->bHetero) {
        return qcErr(pC, pA, "rule %s: argument %s is bound to a collection of values of several "
                     "types, which a recursive rule does not take (pass one type at a time)",
                     pCl->zName, pA->u.s.z);
      }
    }
  }
  if (qciHead(pC, h) && !pC->pRi->aHead[h].bShared && qciCall(pX, pCl, h, iDepth)) return pC->rc;
  if (pCl->nArg <= 64 && qcrTryMagic(pX, pCl, h, iDepth)) return pC->rc;
  return qcrJoinGroup(pX, pCl, h, pC->pRi->aHead[h].iGroup, iDepth);
}
