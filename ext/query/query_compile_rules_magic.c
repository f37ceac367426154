/*
** query_compile_rules_magic.c — the magic-set rewrite of a rule call whose
** arguments are partly bound (see BOUND ARGUMENTS in
** query_compile_rules.c): the shape test (qcmShape), the origins the caller
** binds, the seeds they reach, and the base definitions applied to the
** seeds. Takes a call and its rule; gives the CTEs and the join into the
** caller's scope. Calls the scope helpers and the rules context (query_compile_rules_ctx.h).
*/
#include <string.h>
#include "query_compile_rules_ctx.h"

/* Is place j of recursive definition pR (self call at clause iRec) a
** pass-through: the self call hands head variable j on unchanged, and
** nothing else in the definition mentions it? */
static int qcmPassThrough(const QRule *pR, int iRec, int j) {
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
    n = qcClauseVars(pR->aClause[k], az, 64, 1);
    if (n > 64) return 0;
    for (m = 0; m < n; m++) if (strcmp(az[m], zVar) == 0) return 0;
  }
  return 1;
}

static int qcmStepBinds(const QRule *pR, int iRec, const unsigned char *aePlace,
                        const unsigned char *abInv, int bOrigin);

/* Is place j of recursive definition pR (self call at clause iRec)
** invariant: the self call hands head variable j on unchanged, in place j
** only, though other clauses may read it ([(path ?x ?y) [?x :up ?m] (path
** ?m ?y) [(> ?y 0)]]: ?y)? */
static int qcmInvariantPlace(const QRule *pR, int iRec, int j) {
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
static int qcmTermsVarsOf(const EdnValue *const *aT, int nT, const char **a, int nMax) {
  int i, k, n = 0;
  for (i = 0; i < nT; i++) {
    if (!ednIsVar(aT[i])) continue;
    for (k = 0; k < n && strcmp(a[k], aT[i]->u.s.z); k++) {}
    if (k == n && n < nMax) a[n++] = aT[i]->u.s.z;
  }
  return n;
}

/* The index of definition pR's one top-level call into recursion group g,
** -1 for none, -2 when the shape does not fit (several, or one nested in
** not/or); *phTo gets the head it calls. For a group of one head this is
** qcxSelfCall. */
static int qcmGroupCall(const QRuleInfo *pRi, const QRule *pR, int g, int *phTo) {
  int i, k, iRec = -1;
  for (i = 0; i < pR->nClause; i++) {
    const QClause *pCl = pR->aClause[i];
    int hc = pCl->kind == QC_RULE ? qcxHeadFind(pRi, pCl->zName, pCl->nArg, NULL) : -1;
    if (hc >= 0 && pRi->aHead[hc].iGroup == g) {
      if (iRec >= 0) return -2;
      iRec = i;
      if (phTo) *phTo = hc;
    } else if (pCl->nSub) {
      for (k = 0; k < pRi->nHead; k++) {
        if (pRi->aHead[k].iGroup == g && qcxCallsHead(pRi, pCl->aSub, pCl->nSub, k, 1)) return -2;
      }
    }
  }
  return iRec;
}

/* How many heads recursion group g has. */
static int qcmGroupHeads(const QRuleInfo *pRi, int g) {
  int i, n = 0;
  for (i = 0; i < pRi->nHead; i++) n += pRi->aHead[i].iGroup == g;
  return n;
}

/* Classifies head h for the rewrite, over every definition of its
** recursion group (mutually recursive heads: the seeds then carry which
** head they are for). Returns 0 when it does not fit (heads of other
** arities in the group, the transitive form, several or nested calls into
** the group, no recursive or no base definition); else 1, with aePlace[j]
** = 1 for the places every recursive definition passes through and 0 for
** the places the recursion changes; 2 when some recursive definition
** hands on unchanged a place another one changes (the adornments differ:
** [(f ?a ?b) .. (g ?c ?b)] [(g ?a ?b) .. (f ?a ?c)]): its body without
** the call then need not bind that place, so seeds from the bodies
** (qcmOriginsBodies) cannot be had and only a call binding every changing
** place takes the rewrite. abInv (when not NULL) gets 1 for the places of
** aePlace 1 that some recursive definition reads besides handing them on
** (qcmInvariantPlace): the seeds must carry the caller's value there, so
** the rewrite takes a call only where it binds them. */
int qcmShape(QComp *pC, int h, unsigned char *aePlace, unsigned char *abInv) {
  const QRuleInfo *pRi = pC->pRi;
  unsigned char aInv[64], aOwn[64];
  int g = pRi->aHead[h].iGroup, i, j, nBase = 0, nRec = 0, bUniform = 1;
  int nArity = pRi->aHead[h].nArity;
  if (nArity > 64) return 0;
  for (i = 0; i < pRi->nHead; i++) {
    if (pRi->aHead[i].iGroup == g && pRi->aHead[i].nArity != nArity) return 0;
  }
  for (j = 0; j < nArity; j++) aePlace[j] = 1;
  memset(aInv, 0, sizeof aInv);
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int iRec;
    if (pRi->aHead[pRi->aiHeadOf[i]].iGroup != g) continue;
    if (qcxIsChain(pRi, g, pR)) return 0;
    iRec = qcmGroupCall(pRi, pR, g, NULL);
    if (iRec == -2) return 0;
    if (iRec == -1) { nBase++; continue; }
    nRec++;
    for (j = 0; j < pR->nHead; j++) {
      if (!qcmPassThrough(pR, iRec, j)) {
        if (qcmInvariantPlace(pR, iRec, j)) {
          aInv[j] = 1;
          continue;
        }
        if (qpIsBlank(pR->aClause[iRec]->aArg[j])) return 0;
        aePlace[j] = 0;
      }
    }
  }
  if (nBase == 0 || nRec == 0) return 0;
  /* A group of several heads is one recursive CTE of the origins and every
  ** definition (qcmWriteCtes): past SQLite's compound limit the call keeps
  ** the group's CTE, which has no origins' SELECT. */
  if (qcmGroupHeads(pRi, g) > 1 && pC->nMaxCompound > 0 && nBase + nRec + 1 > pC->nMaxCompound) {
    return 0;
  }
  for (j = 0; j < nArity; j++) if (!aePlace[j]) aInv[j] = 0;
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int iRec;
    if (pRi->aHead[pRi->aiHeadOf[i]].iGroup != g) continue;
    iRec = qcmGroupCall(pRi, pR, g, NULL);
    if (!qcmStepBinds(pR, iRec, aePlace, aInv, 0)) return 0;
    if (pRi->aiHeadOf[i] == h && !qcmStepBinds(pR, iRec, aePlace, aInv, 1)) bUniform = 0;
    if (iRec < 0) continue;
    /* the places this definition changes itself */
    for (j = 0; j < nArity; j++) {
      aOwn[j] = (unsigned char)(!qcmPassThrough(pR, iRec, j) && !qcmInvariantPlace(pR, iRec, j));
      if (aOwn[j] != !aePlace[j]) bUniform = 0;
    }
  }
  if (abInv) memcpy(abInv, aInv, (size_t)nArity);
  return bUniform ? 1 : 2;
}

/* A step of the seeds evaluates recursive definition pR without its self
** call (clause iRec, -1 none) from the head's changing places: can it bind
** every variable the self call takes in those places? Not when one comes
** only from the self call's answer ([(depth ?e ?d) [?e :parent ?p] (depth
** ?p ?pd) [(inc ?pd) ?d]]: ?pd): such a rule keeps the whole-closure CTE,
** whose recursive step computes from the previous row. With bOrigin: can
** the body without its call (iRec, -1 none) bind, from nothing, every head
** variable of the changing places (the origins from the bodies,
** qcmOriginsBodies)? Not [(r ?a ?b) [?w :to ?b] (r ?a ?c)] for a changing ?a. */
static int qcmStepBinds(const QRule *pR, int iRec, const unsigned char *aePlace,
                        const unsigned char *abInv, int bOrigin) {
  const char *azB[128];
  int nB = 0, i, j, k, bGrew;
  unsigned char aDone[64];
  const QClause *pRec;
  if (iRec < 0 && !bOrigin) return 1;
  if (pR->nClause > 64) return 0;
  pRec = iRec >= 0 ? pR->aClause[iRec] : NULL;
  for (j = 0; j < pR->nHead && !bOrigin; j++) {
    if (!aePlace[j] || abInv[j]) azB[nB++] = pR->aHead[j]->u.s.z;
  }
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
        n = qcmTermsVarsOf(pCl->bind.aVar, pCl->bind.nVar, az, 64);
      } else {
        n = qcClauseVars(pCl, az, 64, 1);
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
  for (j = 0; bOrigin && j < pR->nHead; j++) {
    int m;
    if (aePlace[j]) continue;
    for (m = 0; m < nB && strcmp(azB[m], pR->aHead[j]->u.s.z); m++) {}
    if (m == nB) return 0;
  }
  for (j = 0; !bOrigin && j < pRec->nArg && j < pR->nHead; j++) {
    const EdnValue *pA = pRec->aArg[j];
    int m;
    if (aePlace[j] || !ednIsVar(pA)) continue;
    for (m = 0; m < nB && strcmp(azB[m], pA->u.s.z); m++) {}
    if (m == nB) return 0;
  }
  return 1;
}

int qcmDirectLit(QComp *pC, const EdnValue *pA) {
  return (pA->type == EDN_VECTOR && !qcIsEntityLookup(pC, pA) && qcIsTupleConst(pA, &pC->rc))
      || pA->type == EDN_KEYWORD;
}

/* Binds head variable pHead of a rule body pSub to argument pA of the call
** in scope pX: a variable's value (an input, or a caller's value the body
** may read), or a constant typed by the first place that uses it. */
static void qcmBindArg(QCtx *pX, QCtx *pSub, const EdnValue *pA, const EdnValue *pHead) {
  if (ednIsVar(pA)) {
    /* read as the caller reads it: a keyword a pattern bound stays a value */
    qcCopyVar(pSub, pHead->u.s.z, qcVarFind(pX, pA->u.s.z), 1);
  } else {
    QBinding b;
    b.kind = QB_SCALAR;
    b.nVar = 1;
    b.aVar = &pHead;
    qcbBind(pSub, &b, pA, -1, "rule argument");
    qcxMarkArg(pSub, pHead->u.s.z);
    qcVarLit(pSub, pHead->u.s.z, pA);
  }
}

/* A definition body with the bound head places pre-bound to the seed
** columns m.sK/m.stK (K counts bound places), skipping clause iSkip; with
** zHeads (a group of several heads: "= 3", "IN (0, 1)") on the seeds of
** those heads only. */
static void qcmBody(QComp *pC, QCtx *pSub, int iN, const QRule *pR,
                    const unsigned char *abBound, int iSkip, int iDepth, QCtx *pX,
                    const QClause *pCl, const unsigned char *abDirect, const char *zHeads) {
  QClause *aLocal[16];
  QClause **a = aLocal;
  int i, k = 0, n = 0;
  qcFrom(pSub, sqlite3_mprintf("rulesm%d m", iN));
  pSub->bFixed = 1;                    /* the branch selects m.oK itself */
  /* a step of the recursive seeds, or a group's answer (rows of the seeds'
  ** recursive CTE, qcmWriteCtes) */
  if (iSkip >= 0 || zHeads) pSub->bRecRef = 1;
  if (zHeads) qcWhere(pSub, sqlite3_mprintf("m.sr %s", zHeads));
  for (i = 0; i < pR->nHead && pC->rc == SQLITE_OK; i++) {
    if (!abBound[i]) continue;
    qcBindVar(pSub, pR->aHead[i]->u.s.z, sqlite3_mprintf("m.s%d", k),
              VT_NONE, sqlite3_mprintf("m.st%d", k), 0);
    qcxMarkArg(pSub, pR->aHead[i]->u.s.z);
    if (pC->rc == SQLITE_OK) {
      QVar *pV = qcVarFind(pSub, pR->aHead[i]->u.s.z);
      if (pV) pV->bSeedKind = 1;   /* its kind is m.skK (qcVarSeedKind) */
    }
    k++;
  }
  for (i = 0; abDirect && i < pR->nHead && pC->rc == SQLITE_OK; i++) {
    if (abDirect[i]) qcmBindArg(pX, pSub, pCl->aArg[i], pR->aHead[i]);
  }
  if (pR->nClause > 16) {
    a = sqlite3_malloc64(sizeof(QClause*) * pR->nClause);
    if (a == NULL) { qcNoMem(pC); return; }
  }
  for (i = 0; i < pR->nClause; i++) if (i != iSkip) a[n++] = pR->aClause[i];
  if (pC->rc == SQLITE_OK) {
    /* in a group, a head variable left unbound is explained as in the
    ** group's CTE (qcTermExpr): the rewrite is taken for mutual recursion
    ** only since issue 19, and its messages stay those of before */
    const QRule *pWholeSave = pC->pWhole;
    if (zHeads) pC->pWhole = pR;
    qcwClauses(pSub, a, n, iDepth + 1);
    pC->pWhole = pWholeSave;
  }
  if (a != aLocal) sqlite3_free(a);
}

/* Ends one branch of a magic-set UNION: appends "SELECT <values><tags>
** <body of pSub>" to pTo (" UNION " before all but the first, counted in
** *pn; pVal starts with ", "), then frees pVal, pTag and pSub's state. */
static void qcmBranch(QComp *pC, QCtx *pSub, sqlite3_str *pVal, sqlite3_str *pTag,
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
static void qcmTerm(QCtx *pSub, sqlite3_str *pVal, sqlite3_str *pTag, const EdnValue *p,
                    const char *zRule) {
  QComp *pC = pSub->pC;
  if (ednIsVar(p)) {
    QVar *pV = qcVarFind(pSub, p->u.s.z);
    char *zTag, *zKind;
    if (pV == NULL || pV->zExpr == NULL) {
      qcErr(pC, p, "rule %s does not bind %s", zRule, p->u.s.z);
      return;
    }
    zTag = qcVarTag(pV);
    zKind = qcVarKind(pV);
    sqlite3_str_appendf(pVal, ", %s", pV->zExpr);
    sqlite3_str_appendf(pTag, ", %s, %s", zTag ? zTag : "NULL", zKind ? zKind : "NULL");
    if (zTag == NULL || zKind == NULL) qcNoMem(pC);
    sqlite3_free(zTag);
    sqlite3_free(zKind);
  } else {
    ValueType vt;
    char *zC = qcConstExpr(pSub, p, VT_NONE, &vt);
    if (zC == NULL) return;
    sqlite3_str_appendf(pVal, ", %s", zC);
    /* a constant is the query's value: an integer's kind says so */
    if (vt == VT_LONG) sqlite3_str_appendf(pTag, ", %d, 'given'", vtOutTag(vt));
    else if (vt == VT_KEYWORD) sqlite3_str_appendf(pTag, ", %d, 'ident'", vtOutTag(vt));
    else sqlite3_str_appendf(pTag, ", %d, typeof(%s)", vt == QVT_JSON ? TAG_JSON : vtOutTag(vt), zC);
    sqlite3_free(zC);
  }
}

/* Origins from the caller: "SELECT DISTINCT <bound values>, <tags> FROM
** <the scope's rows>" into pOut. Integer values, which may be an entity id,
** get both readings (abAmb[i] = 1). */
static void qcmOriginsCarry(QCtx *pX, const QClause *pCl, const unsigned char *abBound,
                            unsigned char *abAmb, sqlite3_str *pOut, int bNoScope,
                            const char *zCarry) {
  QComp *pC = pX->pC;
  sqlite3_str *pVal = sqlite3_str_new(NULL), *pTag = sqlite3_str_new(NULL);
  sqlite3_str *pAlt = sqlite3_str_new(NULL);
  int i, nAmb = 0;
  for (i = 0; i < pCl->nArg && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pA = pCl->aArg[i];
    char *zE = NULL, *zTag = NULL, *zKind = NULL;
    ValueType vt = VT_NONE;
    if (!abBound[i]) continue;
    if (ednIsVar(pA)) {
      QVar *pV = qcVarFind(pX, pA->u.s.z);
      if (pV == NULL) {
        /* bound by a scope this rule call cannot see (a seed from outside a
        ** not/or): refused rather than guessed */
        qcErr(pC, pA, "cannot seed the rule call with %s: it is bound outside this clause",
              pA->u.s.z);
        break;
      }
      zE = sqlite3_mprintf("%s", pV->zExpr);
      zTag = qcVarTag(pV);
      zKind = qcVarKind(pV);
      if (pV->nParam > 0) vt = pV->vt;   /* an input not yet typed by a place */
    } else {
      zE = qcxConst(pX, pA, &vt);
      if (zE) zTag = sqlite3_mprintf("%d", vtOutTag(vt));
      /* the query's constant: an integer's kind says so, and a keyword's
      ** that it names its ident (qcVarKind) */
      if (zE) {
        zKind = vt == VT_LONG ? sqlite3_mprintf("'given'") : vt == VT_KEYWORD
            ? sqlite3_mprintf("'ident'") : sqlite3_mprintf("typeof(%s)", zE);
      }
    }
    if (zE == NULL || zTag == NULL || zKind == NULL) {
      qcNoMem(pC);
    } else if (vt == VT_LONG) {
      /* Both readings: the number, and the entity id it is. A keyword
      ** has one, the keyword: where the body puts it in an entity place
      ** it names its ident's entity (qcBindVar), elsewhere it is itself. */
      abAmb[i] = 1;
      nAmb++;
      sqlite3_str_appendf(pAlt, ", (SELECT 0 AS k UNION ALL SELECT 1) a%d", i);
      sqlite3_str_appendf(pVal, ", %s", zE);
      sqlite3_str_appendf(pTag, ", CASE a%d.k WHEN 0 THEN %s ELSE 0 END, %s", i, zTag, zKind);
    } else {
      sqlite3_str_appendf(pVal, ", %s", zE);
      sqlite3_str_appendf(pTag, ", %s, %s", zTag, zKind);
    }
    sqlite3_free(zE);
    sqlite3_free(zTag);
    sqlite3_free(zKind);
  }
  if (sqlite3_str_errcode(pVal) || sqlite3_str_errcode(pTag) || sqlite3_str_errcode(pAlt)) {
    qcNoMem(pC);
  }
  if (pC->rc == SQLITE_OK) {
    const char *zAlt = nAmb ? sqlite3_str_value(pAlt) : "";
    sqlite3_str_appendf(pOut, "SELECT DISTINCT %s%s%s", sqlite3_str_value(pVal) + 2,
                        sqlite3_str_value(pTag), zCarry ? zCarry : "");
    if (pX->nFrom && !bNoScope) {
      sqlite3_str_appendf(pOut, " FROM %s%s", sqlite3_str_value(pX->pFrom), zAlt);
    } else if (nAmb) {
      sqlite3_str_appendf(pOut, " FROM %s", zAlt + 2);
    }
    if (pX->nWhere && !bNoScope) sqlite3_str_appendf(pOut, " WHERE %s", sqlite3_str_value(pX->pWhere));
  }
  sqlite3_free(sqlite3_str_finish(pVal));
  sqlite3_free(sqlite3_str_finish(pTag));
  sqlite3_free(sqlite3_str_finish(pAlt));
}

void qcmOrigins(QCtx *pX, const QClause *pCl, const unsigned char *abBound,
                unsigned char *abAmb, sqlite3_str *pOut, int bNoScope) {
  qcmOriginsCarry(pX, pCl, abBound, abAmb, pOut, bNoScope, NULL);
}

/* The variables of scope pX a call carries through its CTEs (CARRIED
** ROWS in qcmCall): each bound one but a parameter, in scope order, as
** ", <zPre>vK[, <zPre>wK]" (the value, and its tag when it has one), or
** with zPre NULL as ", <expr>[, <tag>]". NULL on OOM (recorded). */
static char *qcmCarryList(QCtx *pX, const char *zPre) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  char *z;
  int i, k = 0;
  for (i = 0; i < pX->nVar; i++) {
    const QVar *pV = &pX->aVar[i];
    if (pV->zExpr == NULL || pV->zExpr[0] == '?') continue;
    if (zPre) sqlite3_str_appendf(p, ", %sv%d", zPre, k);
    else sqlite3_str_appendf(p, ", %s", pV->zExpr);
    if (pV->zTag && zPre) sqlite3_str_appendf(p, ", %sw%d", zPre, k);
    else if (pV->zTag) sqlite3_str_appendf(p, ", %s", pV->zTag);
    k++;
  }
  z = sqlite3_str_finish(p);
  if (z == NULL) {
    z = k ? NULL : sqlite3_mprintf("%s", "");
    if (z == NULL) qcNoMem(pX->pC);
  }
  return z;
}

/* The scope pX after a carrying call: its rows are the answers zAlias
** alone, each carried variable rebound to its column there. */
static void qcmCarryRebind(QCtx *pX, int iN, const char *zAlias) {
  QComp *pC = pX->pC;
  int i, k = 0;
  sqlite3_str_reset(pX->pFrom);
  sqlite3_str_appendf(pX->pFrom, "rulesa%d %s", iN, zAlias);
  pX->nFrom = 1;
  pX->nPatternFrom = 0;
  pX->nKey = 0;
  pX->bUnlinked = 0;
  qcWhereReset(pX);
  for (i = 0; i < pX->nVar && pC->rc == SQLITE_OK; i++) {
    QVar *pV = &pX->aVar[i];
    if (pV->zExpr == NULL || pV->zExpr[0] == '?') continue;
    sqlite3_free(pV->zExpr);
    pV->zExpr = sqlite3_mprintf("%s.v%d", zAlias, k);
    if (pV->zExpr == NULL) qcNoMem(pC);
    if (pV->zTag) {
      sqlite3_free(pV->zTag);
      pV->zTag = sqlite3_mprintf("%s.w%d", zAlias, k);
      if (pV->zTag == NULL) qcNoMem(pC);
    }
    pV->nFnDepth = 0;
    k++;
  }
  if (sqlite3_str_errcode(pX->pFrom)) qcNoMem(pC);
}

/* Origins from the rule itself, when the caller binds nothing useful:
** every value a definition's body (without its self call) accepts in the
** changing places — a superset of the places' values in any answer. With
** bScope the bodies start from a copy of the caller's rows (a top-level
** scope, whose tables any CTE may read), so a pass-through place may hold
** a variable the caller's patterns bound. */
static void qcmOriginsBodies(QCtx *pX, const QClause *pCl, int h, const unsigned char *abBound,
                             const unsigned char *abDirect, int bScope, int iDepth,
                             sqlite3_str *pOut) {
  QComp *pC = pX->pC;
  QRuleInfo *pRi = pC->pRi;
  unsigned char aePlace[64];
  int i, j, n = 0;
  if (pCl->nArg > 64 || qcmShape(pC, h, aePlace, NULL) != 1) return;
  for (i = 0; i < pC->rules.nRule && qcPoll(pC) == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int iRec, m = 0;
    QClause *aLocal[16];
    QClause **a = aLocal;
    sqlite3_str *pVal, *pTag;
    QCtx sub;
    if (pRi->aiHeadOf[i] != h) continue;
    iRec = qcmGroupCall(pRi, pR, pRi->aHead[h].iGroup, NULL);
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
      qcmBindArg(pX, &sub, pA, pHead);
    }
    qcwClauses(&sub, a, m, iDepth + 1);
    for (j = 0; j < pR->nHead && pC->rc == SQLITE_OK; j++) {
      if (abBound[j]) qcmTerm(&sub, pVal, pTag, pR->aHead[j], pR->zName);
    }
    qcmBranch(pC, &sub, pVal, pTag, pOut, &n);
    if (a != aLocal) sqlite3_free(a);
  }
  qcCompoundLimit(pC, pCl->pForm, n, "rule %s has %d definitions", pCl->zName, n);
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
/* SAME BODIES. Definitions of a group that differ only in their head and
** in which head of the group they call (rules written from one pattern:
** [(r3 ?a ?b) [?a :f ?c] (r4 ?c ?b)]) compile to one branch of the seeds'
** CTE, on the seeds of all their heads (m.sr IN (..)), each stepping to its
** own callee (CASE m.sr ..): SQLite runs every branch of a recursive CTE
** for each row it takes from the queue, opening the branch's cursors anew,
** and closing a cursor walks the list of those open on the database, so n
** heads of a branch each cost about n^2 per seed (issue 19, B6: 32 heads
** on 100 nodes x 5 edges, 0.84 s against 0.005 s for one rule). */

/* Definition i of group g and, when it leads them (aPlan[i] 1,
** qcxMergePlan), those after it of the same text (azKey) as one branch:
** *pzHeads "= h" or "IN (h, ..)" over their heads and *pzTo the head each
** calls, a number or "CASE m.sr WHEN h THEN t .. END" (sqlite3_free both;
** NULL on OOM, recorded). */
static void qcmMergeHeads(QComp *pC, char *const *azKey, const unsigned char *aPlan, int i, int g,
                          char **pzHeads, char **pzTo) {
  const QRuleInfo *pRi = pC->pRi;
  sqlite3_str *pIn = sqlite3_str_new(NULL), *pCase = sqlite3_str_new(NULL);
  int j, n = 0, hTo0 = -1, bSame = 1;
  for (j = i; j < pC->rules.nRule; j++) {
    int hOf = pRi->aiHeadOf[j], hTo = -1;
    if (j != i && (aPlan[i] != 1 || azKey[j] == NULL || strcmp(azKey[j], azKey[i]))) continue;
    qcmGroupCall(pRi, pC->rules.aRule[j], g, &hTo);
    if (n == 0) hTo0 = hTo;
    bSame &= hTo == hTo0;
    sqlite3_str_appendf(pIn, "%s%d", n++ ? ", " : "", hOf);
    sqlite3_str_appendf(pCase, " WHEN %d THEN %d", hOf, hTo);
  }
  *pzHeads = n == 1 ? sqlite3_mprintf("= %s", sqlite3_str_value(pIn))
                    : sqlite3_mprintf("IN (%s)", sqlite3_str_value(pIn));
  *pzTo = bSame ? sqlite3_mprintf("%d", hTo0)
                : sqlite3_mprintf("CASE m.sr%s END", sqlite3_str_value(pCase));
  if (*pzHeads == NULL || *pzTo == NULL || sqlite3_str_errcode(pIn) || sqlite3_str_errcode(pCase)) {
    qcNoMem(pC);
  }
  sqlite3_free(sqlite3_str_finish(pIn));
  sqlite3_free(sqlite3_str_finish(pCase));
}

/* The seeds' recursive step (into pSeed, nRec branches) and the answers
** (into pAns) of call pCl of head h: one branch per definition, the
** recursive ones stepping from seed to seed, the base ones applied to the
** seeds (origin iN, nB seeded places abBound). */
static void qcmDefinitions(QCtx *pX, const QClause *pCl, int h, const unsigned char *abBound,
                           const unsigned char *abDirect, int iN, int nB, int iDepth,
                           const char *zCarry, sqlite3_str *pSeed, sqlite3_str *pAns,
                           int *pnBase) {
  QComp *pC = pX->pC;
  QRuleInfo *pRi = pC->pRi;
  int i, k, nRec = 0, nBase = 0, nArity = pCl->nArg, g = pRi->aHead[h].iGroup;
  int bGroup = qcmGroupHeads(pRi, g) > 1;
  char **azKey = NULL, *zHeads = NULL, *zTo = NULL;
  unsigned char *aPlan = NULL;
  /* SAME BODIES above */
  if (bGroup && (aPlan = qcxMergePlan(pC, g, &azKey, 1)) == NULL) return;
  for (i = 0; i < pC->rules.nRule && qcPoll(pC) == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int iRec, hOf = pRi->aiHeadOf[i];
    QCtx sub;
    sqlite3_str *pVal, *pTag;
    if (pRi->aHead[hOf].iGroup != g) continue;
    iRec = qcmGroupCall(pRi, pR, g, NULL);
    sqlite3_free(zHeads);
    sqlite3_free(zTo);
    zHeads = zTo = NULL;
    if (bGroup && aPlan[i] == 2) continue;
    if (bGroup) qcmMergeHeads(pC, azKey, aPlan, i, g, &zHeads, &zTo);
    if (pC->rc) break;
    pVal = sqlite3_str_new(NULL);
    pTag = sqlite3_str_new(NULL);
    qcCtxInit(&sub, pC, NULL);
    qcmBody(pC, &sub, iN, pR, abBound, iRec, iDepth, pX, pCl, abDirect, zHeads);
    if (iRec >= 0) {
      /* step: (origin, next seed) */
      const QClause *pRec = pR->aClause[iRec];
      for (k = 0; k < nB; k++) sqlite3_str_appendf(pVal, ", m.o%d", k);
      for (k = 0; k < nB; k++) sqlite3_str_appendf(pVal, ", m.ot%d, m.ok%d", k, k);
      for (k = 0; k < nArity && pC->rc == SQLITE_OK; k++) {
        if (abBound[k]) qcmTerm(&sub, pVal, pTag, pRec->aArg[k], pR->zName);
      }
      if (bGroup) {
        /* the next seed's head, and no answer */
        sqlite3_str_appendf(pTag, ", %s", zTo);
        for (k = 0; k < nArity; k++) sqlite3_str_appendall(pTag, ", NULL, NULL, NULL");
      }
    } else {
      /* answer: the origins in seeded places, the body's values elsewhere;
      ** in a group's one CTE (qcmWriteCtes) a row of no seed (sr -1) */
      int kb = 0;
      if (bGroup) {
        for (k = 0; k < nB; k++) sqlite3_str_appendf(pVal, ", m.o%d", k);
        for (k = 0; k < nB; k++) sqlite3_str_appendf(pVal, ", m.ot%d, m.ok%d", k, k);
        for (k = 0; k < nB; k++) sqlite3_str_appendall(pVal, ", NULL, NULL, NULL");
        sqlite3_str_appendall(pVal, ", -1");
      }
      for (k = 0; k < nArity && pC->rc == SQLITE_OK; k++) {
        if (abBound[k]) {
          sqlite3_str_appendf(pVal, ", m.o%d", kb);
          sqlite3_str_appendf(pTag, ", m.ot%d, m.ok%d", kb, kb);
          kb++;
        } else {
          qcmTerm(&sub, pVal, pTag, pR->aHead[k], pR->zName);
        }
      }
    }
    if (zCarry) sqlite3_str_appendall(pTag, zCarry);
    if (bGroup) {
      qcmBranch(pC, &sub, pVal, pTag, pSeed, &nRec);
      nBase += iRec < 0;
    } else {
      qcmBranch(pC, &sub, pVal, pTag, iRec >= 0 ? pSeed : pAns, iRec >= 0 ? &nRec : &nBase);
    }
  }
  sqlite3_free(zHeads);
  sqlite3_free(zTo);
  for (i = 0; azKey && i < pC->rules.nRule; i++) sqlite3_free(azKey[i]);
  sqlite3_free(azKey);
  sqlite3_free(aPlan);
  *pnBase = nBase;
  if (pC->rc) return;
  if (bGroup) {
    qcCompoundLimit(pC, pCl->pForm, nRec + 1, "the %d mutually recursive rules of %s (one"
                    " recursive CTE of its seeds and answers) have %d definitions together",
                    qcmGroupHeads(pRi, g), pCl->zName, nRec);
  } else if (!qcCompoundLimit(pC, pCl->pForm, nBase, "rule %s has %d definitions without recursion",
                       pCl->zName, nBase)) {
    /* the seeds' CTE: the origins, then one step per recursive definition */
    qcCompoundLimit(pC, pCl->pForm, nRec + 1, "rule %s has %d recursive definitions (each a"
                    " step of its seeds)", pCl->zName, nRec);
  }
}

/* The origins, seeds and answers CTEs of call iN into pW: ruleso<N>,
** rulesm<N> (recursive) and rulesa<N> of the file comment. */
static void qcmWriteCtes(sqlite3_str *pW, int iN, int nB, int nArity, sqlite3_str *pOrig,
                         sqlite3_str *pSeed, sqlite3_str *pAns, const char *zCarry,
                         int nBase, int iHead) {
  int k;
  if (zCarry == NULL) zCarry = "";
  /* Each tag column tK is followed by kK, its value's storage class; the
  ** seed's head sr (iHead >= 0: a group of several heads, which a seed is
  ** for; the origins are for the call's head), then the carried columns
  ** (vK, wK) come last. */
  sqlite3_str_appendf(pW, "ruleso%d(", iN);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, "%so%d", k ? ", " : "", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", ot%d, ok%d", k, k);
  sqlite3_str_appendf(pW, "%s) AS (%s), rulesm%d(", zCarry, sqlite3_str_value(pOrig), iN);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, "%so%d", k ? ", " : "", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", ot%d, ok%d", k, k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", s%d", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", st%d, sk%d", k, k);
  if (iHead >= 0) {
    sqlite3_str_appendall(pW, ", sr");
    for (k = 0; k < nArity; k++) sqlite3_str_appendf(pW, ", c%d", k);
    for (k = 0; k < nArity; k++) sqlite3_str_appendf(pW, ", t%d, k%d", k, k);
  }
  sqlite3_str_appendf(pW, "%s) AS (SELECT ", zCarry);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, "%so%d", k ? ", " : "", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", ot%d, ok%d", k, k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", o%d", k);
  for (k = 0; k < nB; k++) sqlite3_str_appendf(pW, ", ot%d, ok%d", k, k);
  if (iHead >= 0) {
    sqlite3_str_appendf(pW, ", %d", iHead);
    for (k = 0; k < nArity; k++) sqlite3_str_appendall(pW, ", NULL, NULL, NULL");
  }
  /* UNION: a seed met again (a cycle) is not followed twice. */
  sqlite3_str_appendf(pW, "%s FROM ruleso%d UNION %s)", zCarry, iN, sqlite3_str_value(pSeed));
  sqlite3_str_appendf(pW, ", rulesa%d(", iN);
  for (k = 0; k < nArity; k++) sqlite3_str_appendf(pW, "%sc%d", k ? ", " : "", k);
  for (k = 0; k < nArity; k++) sqlite3_str_appendf(pW, ", t%d, k%d", k, k);
  if (iHead >= 0) {
    /* A group's answers are rows of its seeds' CTE (sr -1), which each
    ** base definition reads there: its own answers' CTE would name the
    ** seeds once per base definition, and SQLite copies a CTE's SELECT at
    ** every name (n heads: n copies of n steps each). */
    sqlite3_str_appendf(pW, "%s) AS (SELECT DISTINCT ", zCarry);
    for (k = 0; k < nArity; k++) sqlite3_str_appendf(pW, "%sc%d", k ? ", " : "", k);
    for (k = 0; k < nArity; k++) sqlite3_str_appendf(pW, ", t%d, k%d", k, k);
    sqlite3_str_appendf(pW, "%s FROM rulesm%d WHERE sr = -1)", zCarry, iN);
    return;
  }
  /* One definition's answers are DISTINCT (a set, as a UNION's are) so
  ** that SQLite materializes them instead of flattening them into the
  ** query that reads them: a chain of rules whose answers read the next
  ** one's would flatten into one join of every level, which SQLite orders
  ** badly (each level's datoms read by attribute alone), exponential in
  ** the levels (6 levels of recursive rules: 35 s instead of 13 ms). */
  sqlite3_str_appendf(pW, "%s) AS (%s%s)", zCarry, nBase == 1 ? "SELECT DISTINCT " : "",
                      sqlite3_str_value(pAns) + (nBase == 1 ? 7 : 0));
}

/* Joins the answers (alias zAlias) to call pCl's arguments in scope pX:
** constants and bound variables as filters (with their type, unless the
** caller's value may read two ways, abAmb), free variables bound. */
static void qcmJoinAnswers(QCtx *pX, const QClause *pCl, const char *zAlias,
                           const unsigned char *abBound, const unsigned char *abAmb,
                           int bCaller) {
  QComp *pC = pX->pC;
  int i, nArity = pCl->nArg;
  for (i = 0; i < nArity && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pA = pCl->aArg[i];
    QVar *pV = ednIsVar(pA) ? qcVarFind(pX, pA->u.s.z) : NULL;
    if (qpIsBlank(pA)) continue;
    if (!ednIsVar(pA)) {
      /* A constant: the caller's origins are it already. */
      if (bCaller && abBound[i]) continue;
      qcxArgWhere(pX, pA, zAlias, i);
    } else if (pV && pV->zExpr) {
      qcxArgWhere(pX, pA, zAlias, i);
      if (qcVarIdent(pV)) {
        /* the keyword or its ident's entity: qcxArgWhere says which tags */
      } else if (!abAmb[i] && pV->nParam == 0 && (pV->vt == VT_REF || pV->vt == VT_LONG)) {
        /* an entity id is a long */
        qcWhere(pX, sqlite3_mprintf("%s.t%d IN (%d, %d)", zAlias, i, TAG_REF, TAG_NUMBER));
      } else if (!abAmb[i] && pV->nParam == 0 && pV->vt != VT_NONE && pV->vt != QVT_JSON) {
        qcWhere(pX, sqlite3_mprintf("%s.t%d = %d", zAlias, i, vtOutTag(pV->vt)));
      } else if (!abAmb[i] && pV->zTag) {
        qcWhere(pX, sqlite3_mprintf("%s.t%d = %s", zAlias, i, pV->zTag));
      }
    } else {
      qcBindVar(pX, pA->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, i), VT_NONE,
                sqlite3_mprintf("%s.t%d", zAlias, i), 0);
    }
  }
}

int qcmCall(QCtx *pX, const QClause *pCl, int h, const unsigned char *abBound,
            const unsigned char *abDirect, int bCaller, int iDepth) {
  QComp *pC = pX->pC;
  QRuleInfo *pRi = pC->pRi;
  sqlite3_str *pOrig = sqlite3_str_new(NULL);
  sqlite3_str *pSeed = sqlite3_str_new(NULL), *pAns = sqlite3_str_new(NULL);
  sqlite3_str *pLoc = sqlite3_str_new(NULL), *pW = pC->pCte;
  unsigned char *abAmb = NULL;
  int i, nB = 0, iN, nArity = pCl->nArg, bLocal = 0, nBase = 0;
  unsigned char eSave = pRi->aHead[h].eState;
  int nSelfSave = pC->nSelfRef;
  char zAlias[24];
  char *zCarry = NULL, *zCarryM = NULL, *zCarryE = NULL;

  abAmb = sqlite3_malloc64(nArity + 1);
  if (abAmb == NULL) { qcNoMem(pC); goto cleanup; }
  memset(abAmb, 0, nArity + 1);
  for (i = 0; i < nArity; i++) nB += abBound[i];
  /* 1. origins; they copy the scope so far, whose rows are first named
  ** once when it holds earlier calls (qcCollapse). CARRIED ROWS: those
  ** rows, named once, then go through the CTEs whole (each origin with
  ** the row it came from) and the answers alone are the scope's rows
  ** after the call. Joining the answers to the rows instead would name the
  ** rows twice, and SQLite expands a CTE anew at each place that names
  ** it, so a chain of n such calls would expand 2^n copies of the first
  ** rows (12 calls: 2 s to prepare; 16: more than SQLite's 65535
  ** references to datoms). */
  if (bCaller == 1) {
    int bHeavy = pX->nFrom > 0 && !(pX->nFrom == pX->nPatternFrom
                                    && pX->nFrom < QC_COLLAPSE_FROM);
    if (qcCollapseHeavy(pX) && bHeavy && pC->rc == SQLITE_OK) {
      zCarry = qcmCarryList(pX, "");
      zCarryM = qcmCarryList(pX, "m.");
      zCarryE = qcmCarryList(pX, NULL);
    }
    if (pC->rc) goto cleanup;
  }
  if (bCaller == 2) {
    pC->nLocal++;
    bLocal = 1;
  }
  pRi->aHead[h].eState = 1;
  if (bCaller == 1 || bCaller == 2) qcmOriginsCarry(pX, pCl, abBound, abAmb, pOrig, 0, zCarryE);
  else qcmOriginsBodies(pX, pCl, h, abBound, abDirect, bCaller >= 3, iDepth, pOrig);
  if (pC->rc) goto cleanup;
  iN = ++pC->nAlias;

  /* 2. seeds and 3. answers, one definition at a time */
  qcmDefinitions(pX, pCl, h, abBound, abDirect, iN, nB, iDepth, zCarryM, pSeed, pAns, &nBase);
  if (pC->rc) goto cleanup;
  if (sqlite3_str_errcode(pOrig) || sqlite3_str_errcode(pSeed) || sqlite3_str_errcode(pAns)) {
    qcNoMem(pC);
    goto cleanup;
  }
  if (bCaller == 2 || bCaller == 4) pW = pLoc;
  else if (pC->nCte++) sqlite3_str_appendall(pW, ", ");
  qcmWriteCtes(pW, iN, nB, nArity, pOrig, pSeed, pAns, zCarry, nBase,
               qcmGroupHeads(pRi, pRi->aHead[h].iGroup) > 1 ? h : -1);
  pC->bRecursive = 1;
  if (bCaller != 2 && bCaller != 4) pC->nCte += 2;
  if (sqlite3_str_errcode(pW)) { qcNoMem(pC); goto cleanup; }

  /* 4. the call: a join with the answers */
  sqlite3_snprintf(sizeof zAlias, zAlias, "r%d", ++pC->nAlias);
  if (bCaller == 2 || bCaller == 4) {
    qcFrom(pX, sqlite3_mprintf("(WITH RECURSIVE %s SELECT * FROM rulesa%d) %s",
                               sqlite3_str_value(pLoc), iN, zAlias));
  } else if (zCarry) {
    qcmCarryRebind(pX, iN, zAlias);
  } else {
    qcFrom(pX, sqlite3_mprintf("rulesa%d %s", iN, zAlias));
  }
  qcmJoinAnswers(pX, pCl, zAlias, abBound, abAmb, bCaller);
cleanup:
  if (bLocal) pC->nLocal--;
  pRi->aHead[h].eState = eSave;
  pC->nSelfRef = nSelfSave;
  sqlite3_free(abAmb);
  sqlite3_free(zCarry);
  sqlite3_free(zCarryM);
  sqlite3_free(zCarryE);
  sqlite3_free(sqlite3_str_finish(pOrig));
  sqlite3_free(sqlite3_str_finish(pSeed));
  sqlite3_free(sqlite3_str_finish(pAns));
  sqlite3_free(sqlite3_str_finish(pLoc));
  return pC->rc;
}
