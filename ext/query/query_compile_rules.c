/*
** query_compile_rules.c — rule calls, with the rule set bound to `%`: the
** rule set's heads and recursion groups, the whole-closure CTE of a group,
** and the choice, per call, among the three ways to compile it (inlined
** with the caller's bindings, query_compile_rules_inline.c; specialised to
** the bound arguments, query_compile_rules_magic.c; or a join with the
** group's CTE). Takes a rule-call clause and the scope it runs in; gives
** FROM items, WHERE terms and the variables the call binds. Calls the
** scope helpers and compiles bodies with qcwClauses.
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
** rewrite, qcmCall): the rule is one head whose recursive definitions
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
#include "query_compile_rules.h"

void qcrFree(QComp *pC) {
  if (pC->pRi) {
    sqlite3_free(pC->pRi->aHead);
    sqlite3_free(pC->pRi->aiHeadOf);
    sqlite3_free(pC->pRi);
    pC->pRi = NULL;
  }
}

static int qcrHeadFind(const QRuleInfo *pRi, const char *zName, int nArity, int *pbArity) {
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
static void qcrCalls(const QRuleInfo *pRi, QClause *const *a, int n, int iFrom,
                     unsigned char *aReach, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      int h = qcrHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL);
      if (h >= 0) aReach[iFrom * pRi->nHead + h] = 1;
    } else if (a[i]->nSub) {
      qcrCalls(pRi, a[i]->aSub, a[i]->nSub, iFrom, aReach, iDepth + 1);
    }
  }
}

static int qcrPrepare(QComp *pC) {
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
    int h = qcrHeadFind(pRi, pR->zName, pR->nHead, NULL);
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
    qcrCalls(pRi, pR->aClause, pR->nClause, pRi->aiHeadOf[i], aReach, 0);
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
int qcrIsChain(const QRuleInfo *pRi, int g, const QRule *pR) {
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

/* Refuses a definition of group g that calls its own recursion twice at
** the top of its body: said before any body compiles, so it is the error
** the user sees. */
static void qcrCheckLinear(QComp *pC, int g) {
  QRuleInfo *pRi = pC->pRi;
  int i, j;
  for (i = 0; i < pC->rules.nRule && pC->rc == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int nTop = 0;
    if (pRi->aHead[pRi->aiHeadOf[i]].iGroup != g || qcrIsChain(pRi, g, pR)) continue;
    for (j = 0; j < pR->nClause; j++) {
      const QClause *pCl = pR->aClause[j];
      int hc = pCl->kind == QC_RULE ? qcrHeadFind(pRi, pCl->zName, pCl->nArg, NULL) : -1;
      if (hc >= 0 && pRi->aHead[hc].iGroup == g) nTop++;
    }
    if (nTop > 1) {
      qcErr(pC, pR->pForm, "unsupported recursion: a definition of rule %s calls its own"
            " recursion %d times (non-linear); write it with one recursive call, e.g."
            " [(r ?a ?b) [?a :x ?c] (r ?c ?b)]", pR->zName, nTop);
    }
  }
}

/* The SELECT of definition pR (of head h) as one branch of its group's CTE:
** "SELECT h, <values>, <tags>, <storage classes>" over nMax columns, then
** its body. pC->nSelfRef counts its calls into its own group. NULL on
** error. */
static char *qcrDefinitionSelect(QComp *pC, const QRule *pR, int h, int nMax, int iDepth) {
  QCtx sub;
  sqlite3_str *pSel;
  char *zBody = NULL, *zSel;
  int j;
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
  qcCtxReset(&sub);
  if (pC->rc) { sqlite3_free(zSel); return NULL; }
  return zSel;
}

/* Writes group g's CTE rules<g> from its base branches pBase and
** recursive ones pRec (nRec of them), a transitive definition of head
** iChainHead (nChain) rewritten to its linear form. */
static void qcrGroupCte(QComp *pC, int g, sqlite3_str *pBase, sqlite3_str *pRec, int nRec,
                        int nChain, int iChainHead, int nMax) {
  int j;
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
}

/* Compiles every definition of group g into the CTE rules<g>. */
static int qcrGroup(QComp *pC, int g, int iDepth) {
  QRuleInfo *pRi = pC->pRi;
  sqlite3_str *pBase = sqlite3_str_new(NULL);
  sqlite3_str *pRec = sqlite3_str_new(NULL);
  int i, nBase = 0, nRec = 0, nChain = 0, iChainHead = 0, nMax = pRi->aHead[g].nCols;
  int nSelfSave = pC->nSelfRef;
  const char *zFirst = pRi->aHead[g].zName;
  if (iDepth > EDN_MAX_DEPTH) return qcErr(pC, NULL, "rules nested too deep");
  qcrCheckLinear(pC, g);
  for (i = 0; i < pRi->nHead; i++) if (pRi->aHead[i].iGroup == g) pRi->aHead[i].eState = 1;
  for (i = 0; i < pC->rules.nRule && pC->rc == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int h = pRi->aiHeadOf[i];
    char *zSel;
    if (pRi->aHead[h].iGroup != g) continue;
    if (qcrIsChain(pRi, g, pR)) {
      nChain++;
      iChainHead = h;
      continue;
    }
    zSel = qcrDefinitionSelect(pC, pR, h, nMax, iDepth);
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
  if (pC->rc == SQLITE_OK && nChain && nRec) {
    qcErr(pC, NULL, "unsupported recursion: rule %s mixes a transitive definition with other"
          " recursive ones", zFirst);
  }
  qcrGroupCte(pC, g, pBase, pRec, nRec, nChain, iChainHead, nMax);
  for (i = 0; i < pRi->nHead; i++) if (pRi->aHead[i].iGroup == g) pRi->aHead[i].eState = 2;
  sqlite3_free(sqlite3_str_finish(pBase));
  sqlite3_free(sqlite3_str_finish(pRec));
  return pC->rc;
}

/* Is any rule body being compiled (a call from a rule body)? */
static int qcrBuilding(const QRuleInfo *pRi) {
  int i;
  for (i = 0; i < pRi->nHead; i++) if (pRi->aHead[i].eState == 1) return 1;
  return 0;
}

/* Does clause list a[0..n) call head h (at any depth)? */
int qcrCallsHead(const QRuleInfo *pRi, QClause *const *a, int n, int h, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return 1;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      if (qcrHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL) == h) return 1;
    } else if (a[i]->nSub && qcrCallsHead(pRi, a[i]->aSub, a[i]->nSub, h, iDepth + 1)) {
      return 1;
    }
  }
  return 0;
}

/* The index of the one top-level self call of definition pR, -1 for none,
** -2 when the shape does not fit (several, or one nested in not/or). */
int qcrSelfCall(const QRuleInfo *pRi, const QRule *pR, int h) {
  int i, iRec = -1;
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    if (pCl->kind == QC_RULE && qcrHeadFind(pRi, pCl->zName, pCl->nArg, NULL) == h) {
      if (iRec >= 0) return -2;
      iRec = i;
    } else if (pCl->nSub && qcrCallsHead(pRi, pCl->aSub, pCl->nSub, h, 1)) {
      return -2;
    }
  }
  return iRec;
}

/* Marks head variable zName of a rule body as an argument the caller gave
** (QVar.bIdent): a keyword it holds names its ident's entity where the body
** puts it in an entity place. */
void qcrMarkArg(QCtx *pSub, const char *zName) {
  QVar *pV = qcVarFind(pSub, zName);
  if (pV) pV->bIdent = 1;
}

/* Binds head variable pHead of a rule body pSub to argument pA of the call
** in scope pX: a variable's value (an input, or a caller's value the body
** may read), or a constant typed by the first place that uses it. */
void qcrBindArg(QCtx *pX, QCtx *pSub, const EdnValue *pA, const EdnValue *pHead) {
  if (ednIsVar(pA)) {
    qcCopyVar(pSub, pHead->u.s.z, qcVarFind(pX, pA->u.s.z));
  } else {
    QBinding b;
    b.kind = QB_SCALAR;
    b.nVar = 1;
    b.aVar = &pHead;
    qcbBind(pSub, &b, pA, -1, "rule argument");
  }
  qcrMarkArg(pSub, pHead->u.s.z);
}

/* A constant argument of a rule call as SQL: a lookup ref names its entity
** (resolved in the database the query reads; *pvt VT_REF), any other
** constant is itself. NULL on error. */
char *qcrConst(QCtx *pX, const EdnValue *pA, ValueType *pvt) {
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
static char *qcrArgTerm(QCtx *pX, const EdnValue *pA, const char *zCol, const char *zTag) {
  ValueType vt = VT_NONE;
  char *zE, *zTerm;
  if (ednIsVar(pA)) {
    QVar *pV = qcVarFind(pX, pA->u.s.z);
    zE = sqlite3_mprintf("%s", pV->zExpr);
    if (pV->nParam > 0) vt = pV->vt;   /* an input not yet typed by a place */
  } else {
    zE = qcrConst(pX, pA, &vt);
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
void qcrArgWhere(QCtx *pX, const EdnValue *pA, const char *zAlias, int i) {
  char zCol[40], zTag[40];
  char *zTerm;
  sqlite3_snprintf(sizeof zCol, zCol, "%s.c%d", zAlias, i);
  sqlite3_snprintf(sizeof zTag, zTag, "%s.t%d", zAlias, i);
  zTerm = qcrArgTerm(pX, pA, zCol, zTag);
  if (zTerm) qcWhere(pX, zTerm);
}

/* Is place j of head h required ([?a] in the head of any definition)? *ppR
** gets that definition. */
int qcrReqPlace(QComp *pC, int h, int j, const QRule **ppR) {
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

/* Is argument pA bound at the call: a constant, or a variable pX binds? */
int qcrArgBound(QCtx *pX, const EdnValue *pA) {
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
  if (pC->pRi == NULL && qcrPrepare(pC)) return 1;
  h = qcrHeadFind(pC->pRi, pCl->zName, pCl->nArg, NULL);
  if (h < 0) return 1;
  for (i = 0; i < pCl->nArg; i++) {
    if (qcrReqPlace(pC, h, i, NULL) && !qcrArgBound(pX, pCl->aArg[i])) return 0;
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
  if (pC->pRi == NULL && qcrPrepare(pC)) return 1;
  h = qcrHeadFind(pC->pRi, pCl->zName, pCl->nArg, &bArity);
  /* Not a rule the rewrite takes (or an error qcrCall will report):
  ** every argument may matter. */
  if (h < 0 || !qcmShape(pC, h, aePlace, abInv)) return 1;
  for (i = 0; i < pCl->nArg; i++) {
    if (qcrReqPlace(pC, h, i, NULL) && ednIsVar(pCl->aArg[i])
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
    if (!qcrReqPlace(pC, h, i, &pR) || qcrArgBound(pX, pA)) continue;
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

/* Compiles call pCl of head h by the magic-set rewrite when its shape and
** its bound arguments allow (query_compile_rules_magic.c): returns 1 when
** done (or failed: pC->rc), 0 when the call joins the whole-closure CTE. */
static int qcrTryMagic(QCtx *pX, const QClause *pCl, int h, int iDepth) {
  QComp *pC = pX->pC;
  int i;
  unsigned char aePlace[64], abBound[64], abDirect[64], abInv[64];
  int nBound = 0, nChange = 0, bScope = 0;
  if (qcmShape(pC, h, aePlace, abInv)) {
    /* Bound arguments in the changing places seed the rule, the caller's
    ** rows the origins: in the query's own scope as top-level CTEs, in a
    ** not/or or rule body as a subquery's own (unless that scope names a
    ** recursive CTE being built). Bound pass-through places are seeded
    ** too (each seed carries its value unchanged), so the base
    ** definitions' functions see them as the caller bound them. */
    int bTop = pX->pParent == NULL && !qcrBuilding(pC->pRi);
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
      if (nSeed > 0 && qcrInvSeeded(abInv, abBound, NULL, pCl->nArg)) {
        qcmCall(pX, pCl, h, abBound, NULL, bTop ? 1 : 2, iDepth);
        return 1;
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
    if (nChange && qcrInvSeeded(abInv, abBound, abDirect, pCl->nArg)) {
      qcmCall(pX, pCl, h, abBound, abDirect, bScope ? (bTop ? 3 : 4) : 0, iDepth);
      return 1;
    }
  }
  return 0;
}

/* Call pCl of head h (group g) as a join with the group's CTE rules<g>,
** compiled first when not yet emitted. */
static int qcrJoinGroup(QCtx *pX, const QClause *pCl, int h, int g, int iDepth) {
  QComp *pC = pX->pC;
  char zAlias[24];
  int i;
  if (pC->pRi->aHead[h].eState == 0) {
    if (qcrGroup(pC, g, iDepth)) return pC->rc;
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
        qcrArgWhere(pX, pA, zAlias, i);   /* a keyword input: value or ident */
        continue;
      }
      qcBindVar(pX, pA->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, i), VT_NONE,
                sqlite3_mprintf("%s.t%d", zAlias, i), 0);
    } else {
      qcrArgWhere(pX, pA, zAlias, i);
    }
  }
  return pC->rc;
}

int qcrCall(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  int h, bArity, i;
  if (!pC->bRules) {
    return qcErr(pC, pCl->pForm, "unknown rule %s (no rule set is bound to %% in :in)", pCl->zName);
  }
  if (pC->pRi == NULL && qcrPrepare(pC)) return pC->rc;
  h = qcrHeadFind(pC->pRi, pCl->zName, pCl->nArg, &bArity);
  if (h < 0) {
    if (!bArity) return qcErr(pC, pCl->pForm, "unknown rule %s", pCl->zName);
    for (i = 0; i < pC->pRi->nHead; i++) {
      if (strcmp(pC->pRi->aHead[i].zName, pCl->zName) == 0) break;
    }
    return qcErr(pC, pCl->pForm, "rule %s takes %d argument(s), called with %d", pCl->zName,
                 pC->pRi->aHead[i].nArity, pCl->nArg);
  }
  if (qcrCheckRequired(pX, pCl, h)) return pC->rc;
  if (qciHead(pC, h) && qciCall(pX, pCl, h, iDepth)) return pC->rc;
  if (pCl->nArg <= 64 && qcrTryMagic(pX, pCl, h, iDepth)) return pC->rc;
  return qcrJoinGroup(pX, pCl, h, pC->pRi->aHead[h].iGroup, iDepth);
}
