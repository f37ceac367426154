/*
** query_compile_where.c — a :where clause list into a scope: data
** patterns, and the order in which the clauses compile (ground and
** bindings, patterns most selective first, functions and predicates once
** their arguments are bound, not/or/rules when they can run). Takes the
** clauses (query_ast.h); gives FROM
** items and WHERE terms in the QCtx. Calls the scope and SQL helpers and
** the clause compilers declared in query_compile_scope.h.
**
** HOW IT WORKS
** Each data pattern is a `datoms dN` alias. Attribute constants are
** INLINED as integers (`dN.a = 65537`) so the per-attribute partial indexes
** `idx_auto_avet_<a> ... WHERE a = <a>` match; an unknown attribute makes the
** pattern empty (`0` in WHERE), never an error. Every other constant and
** every input is a parameter. A variable met again becomes an equality; when
** one side is the BLOB-declared `v` and the other an INTEGER column (e, tx),
** the integer side is written `+dI.e` — with plain `dJ.v = dI.e` SQLite
** applies numeric affinity to v and cannot use the (a, v, e) index — and
** the reverse term `dI.e = dJ.v` is added so the planner may drive the
** join from either side. Patterns are emitted
** most selective first (constant entity, then constant value of an indexed
** attribute, then input-bound ones). When every pattern is reached through
** an index from what precedes it (qcwPatternLinked), the scope joins them
** with CROSS JOIN in that order, so statistics (stale after a new managed
** index, absent on a small store) cannot make SQLite drive from a whole
** attribute; otherwise they are plain inner joins the planner orders.
*/
#include <stdlib.h>
#include <string.h>
#include "query_compile_scope.h"

int qcwClausesUnseeded(QClause *const *a, int n, const char *const *azVar, int nVar) {
  const char *azB[64];
  int nB = 0, i, j, k, m;
  for (i = 0; i < n; i++) {
    const char *az[64];
    int nV;
    if (a[i]->kind != QC_PATTERN) continue;
    nV = qcClauseVars(a[i], az, 64, 1);
    if (nV > 64) return 0;
    for (m = 0; m < nV; m++) {
      for (k = 0; k < nB && strcmp(azB[k], az[m]); k++) {}
      if (k == nB && nB < 64) azB[nB++] = az[m];
    }
  }
  for (i = 0; i < n; i++) {
    const char *az[64];
    int nV;
    if (a[i]->kind == QC_PATTERN) continue;
    nV = qcClauseVars(a[i], az, 64, 1);
    if (nV > 64) return 0;
    for (m = 0; m < nV; m++) {
      for (j = 0; j < nVar && strcmp(azVar[j], az[m]); j++) {}
      if (j == nVar) continue;
      /* a function or predicate reads it after the patterns bound it */
      if (a[i]->kind != QC_FN && a[i]->kind != QC_PRED) return 0;
      for (k = 0; k < nB && strcmp(azB[k], az[m]); k++) {}
      if (k == nB) return 0;
    }
  }
  for (j = 0; j < nVar; j++) {
    for (k = 0; k < nB && strcmp(azB[k], azVar[j]); k++) {}
    if (k == nB) return 0;
  }
  return 1;
}

/* Constant pTerm in a place of type vt at column zCol (VT_NONE with zTag:
** the attribute is not known, so the constant matches only its natural
** type, peer fault B13). */
static void qcwPlaceConst(QCtx *pX, const EdnValue *pTerm, const char *zCol, ValueType vt,
                          const char *zTag, const Attr *pAttr) {
  QComp *pC = pX->pC;
  int iP;
  if (vt == VT_REF) {
    if (pTerm->type == EDN_INT) {
      iP = qcParam(pC, pTerm, -1, -1, -1, QV_TYPED, VT_REF);
      qcWhere(pX, sqlite3_mprintf("%s = ?%d", zCol, iP));
    } else if (pTerm->type == EDN_KEYWORD) {
      if (schemaEntid(pC->pSchema, pTerm->u.s.z, pTerm->u.s.n) == 0) {
        qcWhere(pX, sqlite3_mprintf("0"));
      } else {
        iP = qcParam(pC, pTerm, -1, -1, -1, QV_TYPED, VT_REF);
        qcWhere(pX, sqlite3_mprintf("%s = ?%d", zCol, iP));
      }
    } else if (qcIsLookupRef(pTerm)) {
      const EdnValue *pK = pTerm->u.c.a[0];
      const Attr *pA = schemaAttrByIdent(pC->pSchema, pK->u.s.z, pK->u.s.n);
      if (pA == NULL) {
        qcWhere(pX, sqlite3_mprintf("0"));
      } else if (pA->eUnique == UNIQUE_NONE) {
        qcErr(pC, pTerm, "lookup ref attribute %s is not :db/unique", pA->zIdent);
      } else {
        char *zLookup = qcLookupConst(pC, pTerm);
        if (zLookup) qcWhere(pX, sqlite3_mprintf("%s = %s", zCol, zLookup));
        sqlite3_free(zLookup);
      }
    } else if (qcNoRows(pX)) {
      qcWhere(pX, sqlite3_mprintf("0"));
    } else {
      /* a string, double, boolean ... names no entity: an error, as
      ** get-else and pull say of it, not a silent empty pattern */
      qcNotEntity(pC, pTerm, NULL);
    }
    return;
  }
  if (vt == VT_NONE && zTag && qcIsEntityLookup(pC, pTerm)) {
    /* [:attr v] on a unique attribute names an entity, as the same pair
    ** given as an input does (README "opts"): a ref value, an entity id,
    ** which meets a long too; one that names nothing matches nothing */
    char *zLookup = qcLookupConst(pC, pTerm);
    if (zLookup == NULL) return;
    qcWhere(pX, sqlite3_mprintf("%s = %s", zCol, zLookup));
    qcWhere(pX, qcTagIs(zTag, VT_REF));
    qcWhere(pX, sqlite3_mprintf("typeof(%s) = 'integer'", zCol));
    sqlite3_free(zLookup);
    return;
  }
  if (vt == VT_NONE && qcIsTupleConst(pTerm, &pC->rc)) {
    /* a tuple of its elements' natural types, against tuple values only
    ** (zTag says TAG_TUPLE for the tuple attributes', qcDatomTagExpr) */
    iP = qcParam(pC, pTerm, -1, -1, -1, QV_TYPED, VT_TUPLE);
    qcWhere(pX, sqlite3_mprintf("%s = ?%d", zCol, iP));
    qcWhere(pX, qcTagIs(zTag, VT_TUPLE));
    return;
  }
  if (vt == VT_NONE) {
    ValueType nt = valueNaturalType(pTerm);
    if (nt == VT_NONE) {
      qcErr(pC, pTerm, "unsupported constant in data pattern");
      return;
    }
    iP = qcParam(pC, pTerm, -1, -1, -1, QV_NATURAL, nt);
    qcWhere(pX, sqlite3_mprintf("%s = ?%d", zCol, iP));
    qcWhere(pX, qcTagIs(zTag, nt));
    /* Long 12 and double 12.0 share tag 5; Datomic keeps them apart. */
    if (nt == VT_LONG) qcWhere(pX, sqlite3_mprintf("typeof(%s) = 'integer'", zCol));
    if (nt == VT_DOUBLE) qcWhere(pX, sqlite3_mprintf("typeof(%s) = 'real'", zCol));
    return;
  }
  if (vt == VT_TUPLE && pAttr && pAttr->type == VT_TUPLE) {
    /* a tuple constant: converted by the attribute's element types, as
    ** edn_t stores it (1 is 1.0 in a double element) */
    EdnArena arena;
    TypedValue tv;
    const EdnValue *pAt = NULL;
    char *zErr = NULL;
    int rc;
    ednArenaInit(&arena);
    rc = valueTupleFromEdn(pTerm, &pAttr->tuple, &arena, &tv, &zErr, &pAt);
    sqlite3_free(zErr);
    ednArenaReset(&arena);
    if (rc == SQLITE_NOMEM) { qcNoMem(pC); return; }
    if (rc != SQLITE_OK) {
      qcWhere(pX, sqlite3_mprintf("0"));
      return;
    }
    iP = qcParam(pC, pTerm, -1, -1, -1, QV_TYPED, VT_TUPLE);
    if (iP) pC->aParam[iP - 1].eTuple = pAttr->e;
    qcWhere(pX, sqlite3_mprintf("%s = ?%d", zCol, iP));
    return;
  }
  {
    /* Check the conversion now: a constant of the wrong type matches nothing. */
    TypedValue tv;
    char *zErr = NULL;
    int rc = valueFromEdn(pTerm, vt, &tv, &zErr);
    sqlite3_free(zErr);
    if (rc == SQLITE_NOMEM) { qcNoMem(pC); return; }
    if (rc != SQLITE_OK) {
      qcWhere(pX, sqlite3_mprintf("0"));
      return;
    }
    iP = qcParam(pC, pTerm, -1, -1, -1, QV_TYPED, vt);
    qcWhere(pX, sqlite3_mprintf("%s = ?%d", zCol, iP));
  }
}

/* The attribute of the input pair [:attr v] variable pV stands for when
** :attr is not :db/unique (qPlanNotLookup), else NULL. */
static const Attr *qcwInputNotLookup(QCtx *pX, const QVar *pV) {
  QComp *pC = pX->pC;
  int iP;
  if (pV->zExpr[0] != '?' || pC->pOpts == NULL) return NULL;
  iP = atoi(pV->zExpr + 1);
  if (iP < 1 || iP > pC->nParam || pC->aParam[iP - 1].iInput < 0) return NULL;
  return qPlanNotLookup(pC->pSchema, qParamValue(&pC->aParam[iP - 1], pC->pOpts));
}

static void qcwPlace(QCtx *pX, const EdnValue *pTerm, const char *zAlias, const char *zCol,
                     ValueType vt, const char *zTagCol, int bIntCol, const Attr *pAttr) {
  char *zExpr;
  if (pTerm == NULL || qpIsBlank(pTerm)) return;
  /* the value of an unknown attribute: a fulltext one's is its text */
  zExpr = vt == VT_NONE && strcmp(zCol, "v") == 0 ? qcDatomValueExpr(pX->pC, zAlias)
                                                  : sqlite3_mprintf("%s.%s", zAlias, zCol);
  if (zExpr == NULL) { qcNoMem(pX->pC); return; }
  if (ednIsVar(pTerm)) {
    char *zTag;
    QVar *pV = qcVarFind(pX, pTerm->u.s.z);
    if (vt == VT_REF && pV && pV->zExpr && pV->nParam == 0
        && (pV->vt == QVT_JSON || (pV->vt == VT_TUPLE && qcIsMadeTuple(pV->zExpr)))) {
      /* a collection a function bound names no entity: an error, as
      ** get-else says of it, not a silent empty join; an input pair on a
      ** non-unique attribute is the lookup ref edn_t refuses */
      const Attr *pNot = qcwInputNotLookup(pX, pV);
      sqlite3_free(zExpr);
      if (pNot) {
        /* the input's fault, said as binding it says it: no place */
        const EdnValue *pAt = pX->pC->pAt;
        pX->pC->pAt = NULL;
        qcErr(pX->pC, NULL, "lookup ref attribute %s is not :db/unique", pNot->zIdent);
        pX->pC->pAt = pAt;
      } else {
        qcErr(pX->pC, pTerm, "%s is a collection, not an entity id, ident or lookup ref",
              pTerm->u.s.z);
      }
      return;
    }
    if (pV && pV->pLit && pV->pLit->type == EDN_VECTOR && vt == VT_TUPLE && pAttr
        && pAttr->type == VT_TUPLE) {
      /* a rule's constant tuple: as the literal written here, converted
      ** by the attribute ([?e :g/at [1 2]] finds [1 2.0]) */
      qcwPlaceConst(pX, pV->pLit, zExpr, vt, NULL, pAttr);
      sqlite3_free(zExpr);
      return;
    }
    zTag = zTagCol ? qcDatomTagExpr(pX, zAlias, zTagCol) : NULL;
    if (zTagCol && zTag == NULL) { sqlite3_free(zExpr); qcNoMem(pX->pC); return; }
    qcBindVar(pX, pTerm->u.s.z, zExpr, vt, zTag, bIntCol);
    return;
  }
  {
    char *zTag = zTagCol == NULL ? NULL : pTerm->type == EDN_VECTOR
        ? qcDatomTagExpr(pX, zAlias, zTagCol) : sqlite3_mprintf("%s.%s", zAlias, zTagCol);
    if (zTagCol && zTag == NULL) { sqlite3_free(zExpr); qcNoMem(pX->pC); return; }
    qcwPlaceConst(pX, pTerm, zExpr, vt, zTag, pAttr);
    sqlite3_free(zTag);
  }
  sqlite3_free(zExpr);
}

/* How a place determines the datom: see QKey. */
static const char *qcwKeyPlace(QCtx *pX, const EdnValue *p) {
  QVar *pV;
  if (p == NULL || qpIsBlank(p)) return "";
  if (!ednIsVar(p)) return NULL;
  pV = qcVarFind(pX, p->u.s.z);
  /* Already bound to a parameter or lookup: one value per row. An IN list
  ** of several values is not: an entity whose cardinality-many attribute
  ** holds two of them matches two datoms, so the variable keeps its name
  ** and DISTINCT stays unless the find set fixes it. */
  if (pV && pV->zInList && pV->nInElem <= 1) return NULL;
  if (pV && !pV->zInList && pV->zExpr && (pV->zExpr[0] == '?' || pV->zExpr[0] == '(')) {
    return NULL;
  }
  return p->u.s.z;
}

/* Records pattern pCl's key places (QKey); pAttr is its constant attribute
** or NULL. Called before its places are bound, so a variable already bound
** to a parameter or an IN list counts as a constant. */
static void qcwRecordKey(QCtx *pX, const QClause *pCl, const Attr *pAttr) {
  const EdnValue *pE = pCl->aArg[0];
  const EdnValue *pA = pCl->nArg > 1 ? pCl->aArg[1] : NULL;
  const EdnValue *pV = pCl->nArg > 2 ? pCl->aArg[2] : NULL;
  /* History rows repeat a datom (asserted, retracted, asserted again):
  ** only all five places tell them apart. */
  int bHist = pX->pC->bHistory;
  QKey *pK;
  if (pX->nKey == pX->nKeyAlloc) {
    int nNew = pX->nKeyAlloc ? pX->nKeyAlloc * 2 : 8;
    QKey *aNew = sqlite3_realloc64(pX->aKey, sizeof(QKey) * nNew);
    if (aNew == NULL) { qcNoMem(pX->pC); return; }
    pX->aKey = aNew;
    pX->nKeyAlloc = nNew;
  }
  pK = &pX->aKey[pX->nKey++];
  memset(pK, 0, sizeof(*pK));
  pK->az[0] = qcwKeyPlace(pX, pE);
  pK->az[1] = qcwKeyPlace(pX, pA);
  pK->az[2] = qcwKeyPlace(pX, pV);
  /* A fulltext variable is the text, which two values may share: it does
  ** not tell datoms apart. */
  if (pAttr && pAttr->bFulltext && pK->az[2] && pK->az[2][0]) pK->az[2] = "";
  pK->bHist = (unsigned char)bHist;
  if (bHist) {
    pK->az[3] = qcwKeyPlace(pX, pCl->nArg > 3 ? pCl->aArg[3] : NULL);
    pK->az[4] = qcwKeyPlace(pX, pCl->nArg > 4 ? pCl->aArg[4] : NULL);
  } else if (pCl->nArg > 3) {
    /* The tx of a current (or as-of live) datom is the datom's: it is
    ** determined once e, a and v are. */
    pK->az[3] = qcwKeyPlace(pX, pCl->aArg[3]);
    if (pK->az[3] && pK->az[3][0] == 0) pK->az[3] = NULL;
  }
  if (pAttr && !bHist) {
    pK->bOne = !pAttr->bMany;
    pK->bUniq = pAttr->eUnique != UNIQUE_NONE;
  }
}

/* Is variable z in the set (or a constant: NULL)? */
static int qcwInSet(const char *z, const char *const *az, int n) {
  int k;
  if (z == NULL) return 1;
  if (z[0] == 0) return 0;
  for (k = 0; k < n; k++) if (strcmp(az[k], z) == 0) return 1;
  return 0;
}

int qcwRowsUnique(const QCtx *pX, const char *const *azVar, int nVar) {
  const char **azSet;
  int nSet = nVar, i, j, bGrew, bUnique = 1;
  if (pX->nFrom != pX->nPatternFrom || pX->nKey != pX->nPatternFrom) return 0;
  /* The variables the find set determines: the find variables, then by
  ** functional dependency (Datomic's schema, as DataScript's and Mentat's
  ** planners know it): e fixes a cardinality-one attribute's v, a unique
  ** attribute's v fixes e, and a datom fixes its tx. */
  azSet = sqlite3_malloc64(sizeof(char*) * (sqlite3_uint64)(nVar + 5 * pX->nKey + 1));
  if (azSet == NULL) return 0;   /* DISTINCT is always correct */
  for (i = 0; i < nVar; i++) azSet[i] = azVar[i];
  do {
    bGrew = 0;
    for (i = 0; i < pX->nKey; i++) {
      const QKey *pK = &pX->aKey[i];
      const char *zAdd[2] = {NULL, NULL};
      int bE = qcwInSet(pK->az[0], azSet, nSet), bA = qcwInSet(pK->az[1], azSet, nSet);
      int bV = qcwInSet(pK->az[2], azSet, nSet);
      if (pK->bOne && bE && !bV && pK->az[2][0]) zAdd[0] = pK->az[2];
      if (pK->bUniq && bV && !bE && pK->az[0][0]) zAdd[0] = pK->az[0];
      if (!pK->bHist && bE && bA && bV && !qcwInSet(pK->az[3], azSet, nSet)) zAdd[1] = pK->az[3];
      for (j = 0; j < 2; j++) {
        if (zAdd[j]) {
          azSet[nSet++] = zAdd[j];
          bGrew = 1;
        }
      }
    }
  } while (bGrew);
  /* Unique when every pattern's datom (log row for history) is fixed. */
  for (i = 0; i < pX->nKey && bUnique; i++) {
    const QKey *pK = &pX->aKey[i];
    int nPlace = pK->bHist ? 5 : 3;
    for (j = 0; j < nPlace && bUnique; j++) {
      if (qcwInSet(pK->az[j], azSet, nSet)) continue;
      /* A blank v of a cardinality-one attribute is fixed by e. */
      if (j == 2 && pK->bOne && pK->az[2][0] == 0 && qcwInSet(pK->az[0], azSet, nSet)) continue;
      bUnique = 0;
    }
  }
  sqlite3_free(azSet);
  return bUnique;
}

/* Is a place bound before its pattern is placed: a constant, or a variable
** with an expression (a parameter, an IN list, an earlier column)? */
static int qcwPlaceBound(QCtx *pX, const EdnValue *p) {
  QVar *pV;
  if (p == NULL || qpIsBlank(p)) return 0;
  if (!ednIsVar(p)) return 1;
  pV = qcVarFind(pX, p->u.s.z);
  return pV != NULL && (pV->zExpr != NULL || pV->zInList != NULL);
}

/* Can pattern pCl be read through an index from what is bound before it:
** its entity (EAVT/AEVT), or its value where a value index serves it (the
** attribute is unique or indexed, or a ref read through VAET)? Patterns
** that are not (a scan of a whole attribute, or a value place without an
** index) leave the join order to SQLite. */
static int qcwPatternLinked(QCtx *pX, const QClause *pCl) {
  const EdnValue *pE = pCl->aArg[0];
  const EdnValue *pA = pCl->nArg > 1 ? pCl->aArg[1] : NULL;
  const EdnValue *pV = pCl->nArg > 2 ? pCl->aArg[2] : NULL;
  const Attr *pAttr = NULL;
  if (qcwPlaceBound(pX, pE)) return 1;
  if (pA && pA->type == EDN_KEYWORD) {
    pAttr = schemaAttrByIdent(qcsSchemaOf(pX->pC, pCl), pA->u.s.z, pA->u.s.n);
  }
  if (pAttr == NULL || pX->pC->bHistory || (pAttr->bFulltext && pAttr->type == VT_STRING)) return 0;
  if (!qcwPlaceBound(pX, pV)) return 0;
  return pAttr->eUnique != UNIQUE_NONE || pAttr->bIndex || pAttr->bValueIndex
         || pAttr->type == VT_REF;
}

static int qcwPatternIn(QCtx *pX, const QClause *pCl);

/* A data pattern, on the source it names (query_compile_src.c). */
static int qcwPattern(QCtx *pX, const QClause *pCl) {
  QSrcSave sv;
  if (qcsEnter(pX->pC, pCl, &sv) == SQLITE_OK) qcwPatternIn(pX, pCl);
  qcsLeave(pX->pC, &sv);
  return pX->pC->rc;
}

static int qcwPatternIn(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  char zAlias[24];
  const EdnValue *pE = pCl->aArg[0];
  const EdnValue *pA = pCl->nArg > 1 ? pCl->aArg[1] : NULL;
  const EdnValue *pV = pCl->nArg > 2 ? pCl->aArg[2] : NULL;
  const EdnValue *pTx = pCl->nArg > 3 ? pCl->aArg[3] : NULL;
  const EdnValue *pAdded = pCl->nArg > 4 ? pCl->aArg[4] : NULL;
  const Attr *pAttr = NULL;
  int bEmpty = 0;

  if (!qcwPatternLinked(pX, pCl)) pX->bUnlinked = 1;
  sqlite3_snprintf(sizeof zAlias, zAlias, "d%d", ++pC->nAlias);
  {
    const char *zTable = NULL;
    char *zCond = qcView(pC, zAlias, &zTable);
    if (zCond == NULL) return qcNoMem(pC);
    qcFrom(pX, sqlite3_mprintf("%s %s", zTable, zAlias));
    if (zCond[0]) qcWhere(pX, zCond);
    else sqlite3_free(zCond);
  }
  pX->nPatternFrom++;

  if (pA && !qpIsBlank(pA) && !ednIsVar(pA)) {
    if (pA->type == EDN_KEYWORD) {
      pAttr = schemaAttrByIdent(pC->pSchema, pA->u.s.z, pA->u.s.n);
    } else if (pA->type == EDN_INT) {
      pAttr = schemaAttr(pC->pSchema, pA->u.i);
    } else {
      return qcErr(pC, pA, "expected an attribute keyword in data pattern");
    }
    if (pAttr == NULL) bEmpty = 1;
    else qcWhere(pX, sqlite3_mprintf("%s.a = %lld", zAlias, pAttr->e));
    qcwRecordKey(pX, pCl, pAttr);
  } else {
    qcwRecordKey(pX, pCl, NULL);
    qcwPlace(pX, pA, zAlias, "a", VT_REF, NULL, 1, NULL);
    pAttr = qcVarLitAttr(pX, pA);
  }
  if (pAttr && pV && !qpIsBlank(pV) && pC->zAsOfTx == NULL && !pC->bHistory
      && (!ednIsVar(pV) || qcVarValueBound(pX, pV->u.s.z, pAttr->type))) {
    /* The value is bound (or a collection of longs will be its rows, each
    ** looked up by value): state the flags that make the format's partial
    ** value indexes usable when no per-attribute index serves (format
    ** "Per-attribute value indexes"). Other :db/index attributes get
    ** idx_mentat_avet_<a> once the store is big enough to need it
    ** (store_tune.c, Attr.bValueIndex); there the flags would steer
    ** SQLite to idx_datoms_avet, which reads every matching table row on
    ** SQLite 3.40, or make the covering index read them to test the flag. */
    int bAuto = qcAttrValueIndexed(pAttr);
    if (!bAuto && pAttr->type == VT_REF) {
      qcWhere(pX, sqlite3_mprintf("%s.index_vaet IS NOT 0", zAlias));
    } else if (!bAuto && pAttr->bIndex && !pAttr->bFulltext) {
      qcWhere(pX, sqlite3_mprintf("%s.index_avet IS NOT 0 AND %s.value_type_tag = %d",
                                  zAlias, zAlias, vtTag(pAttr->type)));
    }
  } else if (pAttr && pAttr->type == VT_REF && pV && ednIsVar(pV) && pC->zAsOfTx == NULL
             && !pC->bHistory && !qcAttrValueIndexed(pAttr)) {
    /* A ref value a later clause binds (a recursive rule's step reading
    ** its CTE row: [?a :g/e ?x] (even ?x ?b)) is looked up through VAET
    ** too, walking the graph backwards; every ref datom carries the flag. */
    qcWhere(pX, sqlite3_mprintf("%s.index_vaet IS NOT 0", zAlias));
  }
  qcwPlace(pX, pE, zAlias, "e", VT_REF, NULL, 1, NULL);
  if (ednIsVar(pE)) {
    /* an entity id of another store names nothing in $: pull reads $ */
    QVar *pEv = qcVarFind(pX, pE->u.s.z);
    int bOther = pC->aSrc && pC->aSrc[pC->iSrc].zDatoms[0] != 'd';
    if (pEv) pEv->bEntitySrc |= (unsigned char)(bOther ? 2 : 1);
    if (pEv && bOther) pEv->iEntitySrc = pC->iSrc;
  }
  if (pV && pAttr && pAttr->bFulltext && pAttr->type == VT_STRING) {
    /* Fulltext values are rowids into fulltext_values. */
    if (ednIsVar(pV)) {
      qcBindVar(pX, pV->u.s.z,
                sqlite3_mprintf("(SELECT text FROM %s WHERE rowid = %s.v)", pC->zFulltext, zAlias),
                VT_STRING, NULL, 0);
    } else if (!qpIsBlank(pV)) {
      int iP = qcParam(pC, pV, -1, -1, -1, QV_TYPED, VT_STRING);
      qcWhere(pX, sqlite3_mprintf(
          "%s.v IN (SELECT rowid FROM %s WHERE text = ?%d)", zAlias, pC->zFulltext, iP));
    }
  } else if (pAttr) {
    qcwPlace(pX, pV, zAlias, "v", pAttr->type, NULL, 0, pAttr);
  } else {
    qcwPlace(pX, pV, zAlias, "v", VT_NONE, "value_type_tag", 0, NULL);
  }
  qcwPlace(pX, pTx, zAlias, "tx", VT_REF, NULL, 1, NULL);
  if (pAdded && !qpIsBlank(pAdded)) {
    /* The current, as-of and since databases hold assertions only: there
    ** added is true (SPEC.md §6). */
    if (ednIsVar(pAdded)) {
      qcBindVar(pX, pAdded->u.s.z, pC->bHistory ? sqlite3_mprintf("%s.added", zAlias)
                                                : sqlite3_mprintf("1"), VT_BOOLEAN, NULL, 0);
    } else if (pAdded->type == EDN_BOOL) {
      if (pC->bHistory) qcWhere(pX, sqlite3_mprintf("%s.added = %d", zAlias, pAdded->u.b ? 1 : 0));
      else if (!pAdded->u.b) qcWhere(pX, sqlite3_mprintf("0"));
    } else {
      return qcErr(pC, pAdded, "the added place takes true, false or a variable");
    }
  }
  if (bEmpty) qcWhere(pX, sqlite3_mprintf("0"));
  return pC->rc;
}

/* Lower is more selective (the brief's join order). */
static int qcwPatternScore(QCtx *pX, const QClause *pCl) {
  const EdnValue *pE = pCl->aArg[0];
  const EdnValue *pA = pCl->nArg > 1 ? pCl->aArg[1] : NULL;
  const EdnValue *pV = pCl->nArg > 2 ? pCl->aArg[2] : NULL;
  const Attr *pAttr = NULL;
  if (!ednIsVar(pE) && !qpIsBlank(pE)) return 0;
  if (pA && pA->type == EDN_KEYWORD) {
    pAttr = schemaAttrByIdent(qcsSchemaOf(pX->pC, pCl), pA->u.s.z, pA->u.s.n);
  }
  if (pV && !ednIsVar(pV) && !qpIsBlank(pV)) {
    if (pAttr && (pAttr->eUnique || pAttr->bIndex)) return 1;
    return 3;
  }
  if (ednIsVar(pE) && qcVarFind(pX, pE->u.s.z)) return 2;
  if (pV && ednIsVar(pV) && qcVarFind(pX, pV->u.s.z)) return 2;
  return 4;
}

static int qcwFnReady(QCtx *pX, const QClause *pCl) {
  int i;
  for (i = 0; i < pCl->nArg; i++) {
    if (ednIsVar(pCl->aArg[i])) {
      QVar *pV = qcVarFind(pX, pCl->aArg[i]->u.s.z);
      if (pV == NULL || pV->zExpr == NULL) return 0;
    }
  }
  return 1;
}

/* Does pattern pPat complete a predicate among a[] (not yet done): one
** whose variables are all bound once pPat's are, at least one by pPat? */
static int qcwPatternFilters(QCtx *pX, QClause *const *a, int n, const unsigned char *aDone,
                             const QClause *pPat) {
  const char *azPat[8], *azPred[16];
  int nPat = qcClauseVars(pPat, azPat, 8, 0);
  int i, j, k;
  if (nPat > 8) nPat = 8;
  for (i = 0; i < n; i++) {
    int nPred, bNew = 0, bAll = 1;
    if (aDone[i] || a[i]->kind != QC_PRED) continue;
    nPred = qcClauseVars(a[i], azPred, 16, 0);
    if (nPred > 16) continue;
    for (j = 0; j < nPred && bAll; j++) {
      QVar *pV = qcVarFind(pX, azPred[j]);
      if (pV && (pV->zExpr || pV->zInList)) continue;
      for (k = 0; k < nPat && strcmp(azPat[k], azPred[j]) != 0; k++) {}
      if (k < nPat) bNew = 1;
      else bAll = 0;
    }
    if (bAll && bNew) return 1;
  }
  return 0;
}

/* May pattern pPat wait until the binding clauses among a[] ran: does none
** of them want its variables bound first (an or, or a function, that
** mentions one; a rule call with one in a place that seeds it)? */
static int qcwPatternCanWait(QCtx *pX, QClause *const *a, int n, const unsigned char *aDone,
                             const QClause *pPat) {
  const char *azPat[8], *azCl[64];
  int nPat = qcClauseVars(pPat, azPat, 8, 0);
  int i, j, k;
  if (nPat > 8) return 0;
  for (i = 0; i < n; i++) {
    if (aDone[i]) continue;
    if (a[i]->kind == QC_RULE) {
      for (k = 0; k < nPat; k++) if (qcrSeedPlace(pX, a[i], azPat[k])) return 0;
    } else if (a[i]->kind == QC_OR || a[i]->kind == QC_OR_JOIN || a[i]->kind == QC_FN) {
      int nCl = qcClauseVars(a[i], azCl, 64, 0);
      if (nCl > 64) return 0;
      for (j = 0; j < nCl; j++) {
        for (k = 0; k < nPat; k++) if (strcmp(azCl[j], azPat[k]) == 0) return 0;
      }
    }
  }
  return 1;
}

/* Clause i of the innermost qcwClauses frame open on pX is the one being
** compiled: the place for errors, and for qcGuard the clause the terms
** it makes belong to. */
static void qcwAt(QCtx *pX, QClause *const *a, int i) {
  QClauseKind k = a[i]->kind;
  pX->pC->pAt = a[i]->pForm;
  pX->bGuardNow = 0;
  sqlite3_free(pX->zGuardFirst);
  pX->zGuardFirst = NULL;
  pX->bFilterNow = k == QC_PRED || k == QC_FN || k == QC_NOT || k == QC_NOT_JOIN;
  if (pX->nPath > 0 && pX->nPath <= QC_PATH_MAX) pX->aPath[pX->nPath - 1] = i;
}

/* Emits the data patterns of a[] one at a time: the most selective given
** what is bound so far, and among equals one that lets a predicate filter
** the rows early, then clause order (the joins are emitted in this order,
** and CROSS JOIN keeps it: see qcBody). With bDefer, once the scope has a
** pattern, patterns joined to nothing bound (score 4) that no binding
** clause needs (qcwPatternCanWait) are left for later: emitted now they
** would be a cartesian product, in a rule's origins too (a 100,000-datom
** scan for a 3-answer reach in test_qlang's chain). Only patterns before
** a[iLimit] (a failing function still to come, qcwSegments). */
static void qcwEmitPatterns(QCtx *pX, QClause *const *a, int n, unsigned char *aDone, int bDefer,
                            int iLimit) {
  QComp *pC = pX->pC;
  int i, iScore;
  while (pC->rc == SQLITE_OK) {
    int iBest = -1, iBestScore = 0, nTie = 0;
    for (i = 0; i < n && i < iLimit; i++) {
      if (aDone[i] || a[i]->kind != QC_PATTERN) continue;
      if (qcPoll(pC)) return;
      iScore = 2 * qcwPatternScore(pX, a[i]);
      if (bDefer && iScore >= 8 && pX->nPatternFrom > 0 && qcwPatternCanWait(pX, a, n, aDone, a[i])) {
        continue;
      }
      iScore += !qcwPatternFilters(pX, a, n, aDone, a[i]);
      if (iBest < 0 || iScore / 2 < iBestScore / 2) nTie = 0;
      else if (iScore / 2 == iBestScore / 2) nTie++;
      if (iBest < 0 || iScore < iBestScore) {
        iBest = i;
        iBestScore = iScore;
      }
    }
    if (iBest < 0) break;
    /* Two equally good places to start (two constant values, say): which
    ** selects fewer rows is the statistics' business, so the planner
    ** orders this scope (qcBody). */
    if (pX->nPatternFrom == 0 && nTie > 0) pX->bUnlinked = 1;
    qcwAt(pX, a, iBest);
    qcwPattern(pX, a[iBest]);
    aDone[iBest] = 1;
  }
}

/* Refuses, before the quadratic ordering of qcwEmitPatterns, a clause
** list with more data patterns than SQLite can join: every pattern is one
** FROM item of the scope's SELECT, and SQLite joins at most QC_MAX_JOIN
** tables in one (its Bitmask; the parser's own 200 FROM terms come after).
** Patterns are emitted in at most two batches, a binding clause between
** them able to name the rows so far once (qcCollapse), so with binding
** clauses only more than twice the limit surely fails. 1 with the error
** set. */
static int qcwJoinLimit(QCtx *pX, QClause *const *a, int n, int bBinders) {
  int i, nPat = 0, nMax;
  const EdnValue *pAt = NULL;
  nMax = bBinders ? 2 * QC_MAX_JOIN - 1 : QC_MAX_JOIN - pX->nFrom;
  for (i = 0; i < n; i++) {
    if (a[i]->kind != QC_PATTERN) continue;
    if (++nPat == nMax + 1) pAt = a[i]->pForm;
  }
  if (nPat <= nMax) return 0;
  if (pX->nFrom > 0 && !bBinders) {
    /* a rule body joined into its caller's rows (qciJoin): their tables count */
    qcErr(pX->pC, pAt, "the query joins %d data patterns in one clause list after %d tables of the rows"
          " before it (each call of a rule of one definition joins its body into them); SQLite"
          " joins at most %d tables in one SELECT", nPat, pX->nFrom, QC_MAX_JOIN);
    return 1;
  }
  qcErr(pX->pC, pAt, "the query joins %d data patterns in one clause list; SQLite joins at most %d tables"
        " in one SELECT (a rule or an or-join joins its own)", nPat, QC_MAX_JOIN);
  return 1;
}

/* May the not a[j] compile now, before a function after it: every variable
** it shares with another clause of a[] is bound already (one only it names
** is its own either way), a not-join's join variables too. */
static int qcwNotReady(QCtx *pX, QClause *const *a, int n, int j) {
  const QClause *pNot = a[j];
  const char *az[32], *azO[64];
  int nV, i, k, m, nO;
  if (pNot->kind == QC_NOT_JOIN) {
    for (k = 0; k < pNot->nJoin; k++) {
      QVar *pV = qcVarFind(pX, pNot->aJoin[k]->u.s.z);
      if (pV == NULL || pV->zExpr == NULL) return 0;
    }
    return 1;
  }
  nV = qcClauseVars(pNot, az, 32, 0);
  if (nV > 32) return 0;
  for (k = 0; k < nV; k++) {
    QVar *pV = qcVarFind(pX, az[k]);
    if (pV && pV->zExpr) continue;
    for (i = 0; i < n; i++) {
      if (i == j) continue;
      nO = qcClauseVars(a[i], azO, 64, 0);
      if (nO > 64) return 0;
      for (m = 0; m < nO; m++) if (strcmp(azO[m], az[k]) == 0) return 0;
    }
  }
  return 1;
}

/* Is a[i] a predicate or a not: a filter step 4 would compile, which a
** function after it waits for when it can (qcwBinders)? */
static int qcwIsFilter(const QClause *pCl) {
  return pCl->kind == QC_PRED || pCl->kind == QC_NOT || pCl->kind == QC_NOT_JOIN;
}

/* Is every clause before a[i] done, or a filter ready to compile now (the
** loop in qcwBinders compiles those first)? A failing function waits for
** that: its guard holds the terms of the clauses before it only once they
** are compiled ([?x :f/n ?m] [(< ?m ?n)] before [(/ 10 ?n) ?w] were left
** for later, the pattern joined to nothing bound). *piFrom: the first
** clause not done, kept by the caller so a chain stays linear. */
static int qcwBeforeDone(QCtx *pX, QClause *const *a, int n, const unsigned char *aDone, int i,
                         int *piFrom) {
  int j;
  while (*piFrom < i && aDone[*piFrom]) (*piFrom)++;
  for (j = *piFrom; j < i; j++) {
    if (aDone[j]) continue;
    if (!qcwIsFilter(a[j])) return 0;
    if (a[j]->kind == QC_PRED ? !qcwFnReady(pX, a[j]) : !qcwNotReady(pX, a, n, j)) return 0;
  }
  return 1;
}

/* Compiles the binding clauses of a[] not yet done (aDone) as they become
** ready: functions once their arguments are bound, rule calls and or-joins
** once their required variables are (Datomic pushes such a clause down
** until they are bound), other rules and ors at once. With eOrder, none
** after the first failing clause not done (qcwSegments), which waits for
** the clauses before it; once it raised (qcGuard), the FROM items after it
** are joined CROSS JOIN (QCtx.bCross). */
static void qcwBinders(QCtx *pX, QClause *const *a, int n, unsigned char *aDone, int iDepth,
                       int eOrder) {
  QComp *pC = pX->pC;
  int i, bProgress, iPred0 = 0, iUndone = 0;
  int iFail = eOrder ? qcoNextFail(a, n, aDone, 0, eOrder) : n;
  /* The first predicate not yet done: each function scans the predicates
  ** before it from there, not the whole list before it (a chain of n
  ** functions would take n^2 / 2 steps). */
  while (iPred0 < n && (aDone[iPred0] || !qcwIsFilter(a[iPred0]))) iPred0++;
  do {
    bProgress = 0;
    for (i = 0; i < n && i <= iFail && pC->rc == SQLITE_OK; i++) {
      if (aDone[i] || qcPoll(pC)) continue;
      /* SQLite joins at most 64 tables in one SELECT: a long chain of
      ** functions (each deep result one mentat_one) or of calls goes on
      ** from the rows so far, named once. */
      if (pX->nFrom >= QC_COLLAPSE_FROM && qcCollapse(pX) && pC->rc) break;
      {
        QClauseKind k = a[i]->kind;
        int j, bReady;
        qcwAt(pX, a, i);
        bReady = k == QC_RULE ? qcrReady(pX, a[i])
               : k == QC_OR || k == QC_OR_JOIN ? qcoOrReady(pX, a[i])
               : k == QC_FN ? qcwFnReady(pX, a[i]) : 0;
        if (bReady && i == iFail && k == QC_FN) bReady = qcwBeforeDone(pX, a, n, aDone, i, &iUndone);
        if (!bReady) continue;
        /* A predicate or a not written before the clause filters its rows
        ** first, as Datomic runs clauses in order: [(pos? ?d)] and
        ** (not [(zero? ?d)]) guard [(/ 1 ?d) ?x] (qcGuard reads the terms
        ** of the clauses before a function, so they must be there), and
        ** an or or a rule call seeded with the rows so far sees them. */
        for (j = iPred0; j < i && qcPoll(pC) == SQLITE_OK; j++) {
          if (aDone[j] || !qcwIsFilter(a[j])) continue;
          if (a[j]->kind == QC_PRED ? !qcwFnReady(pX, a[j]) : !qcwNotReady(pX, a, n, j)) continue;
          qcwAt(pX, a, j);
          if (a[j]->kind == QC_PRED) qcfPredicate(pX, a[j]);
          else qcoNot(pX, a[j], iDepth);
          aDone[j] = 1;
        }
        while (iPred0 < n && (aDone[iPred0] || !qcwIsFilter(a[iPred0]))) iPred0++;
        qcwAt(pX, a, i);
        if (pC->rc != SQLITE_OK) break;
        if (k == QC_RULE) qcrCall(pX, a[i], iDepth);
        else if (k == QC_FN) qcfFunction(pX, a[i]);
        else qcoOr(pX, a[i], iDepth);
      }
      aDone[i] = 1;
      bProgress = 1;
      if (i == iFail) {
        if (pX->bGuardNow) pX->bCross = 1;
        iFail = qcoNextFail(a, n, aDone, i + 1, eOrder);
      }
    }
  } while (bProgress && pC->rc == SQLITE_OK);
}

/* Compiles filter a[iF], a failing clause of qcwSegments, when the clauses
** before it are done or are filters ready now (compiled first, in order):
** the patterns after it then join after it. 1 when it compiled. */
static int qcwFilterAt(QCtx *pX, QClause *const *a, int n, unsigned char *aDone, int iF,
                       int iDepth) {
  int j, nTerm0;
  for (j = 0; j <= iF && pX->pC->rc == SQLITE_OK; j++) {
    if (aDone[j]) continue;
    if (!qcwIsFilter(a[j])) return 0;
    if (a[j]->kind == QC_PRED ? !qcwFnReady(pX, a[j]) : !qcwNotReady(pX, a, n, j)) return 0;
    nTerm0 = pX->nTerm;
    qcwAt(pX, a, j);
    if (a[j]->kind == QC_PRED) qcfPredicate(pX, a[j]);
    else qcoNot(pX, a[j], iDepth);
    aDone[j] = 1;
    if (j == iF && (pX->bGuardNow || pX->iLastRaise >= nTerm0)) pX->bCross = 1;
  }
  return pX->pC->rc == SQLITE_OK;
}

/* Steps 2 and 3 of qcwClauses, a segment at a time: a failing clause
** runs in Datomic on every row the clauses before it give, so the
** patterns and binding clauses after it wait until it is compiled, then
** join after it (bCross): a later [?a :db/ident :x/n] must not keep
** [(inc ?v) ?w] from the string values of [?e ?a ?v]. Without a failing
** clause this is the one pass it always was (the same SQL). */
static void qcwSegments(QCtx *pX, QClause *const *a, int n, unsigned char *aDone, int bBinders,
                        int iDepth) {
  QComp *pC = pX->pC;
  int iFail, bFirst = 1, eOrder = qcoClauseOrder(a, n);
  iFail = qcoNextFail(a, n, aDone, 0, eOrder);
  for (;;) {
    qcwEmitPatterns(pX, a, n, aDone, bBinders, iFail);
    if (bFirst && pX->pParent == NULL) qcMaterialize(pX);
    bFirst = 0;
    qcwBinders(pX, a, n, aDone, iDepth, eOrder);
    if (bBinders) {
      qcwEmitPatterns(pX, a, n, aDone, 0, iFail);
      qcwBinders(pX, a, n, aDone, iDepth, eOrder);
    }
    if (pC->rc != SQLITE_OK || iFail >= n) break;
    if (!aDone[iFail] && qcwIsFilter(a[iFail])) qcwFilterAt(pX, a, n, aDone, iFail, iDepth);
    if (!aDone[iFail]) break;
    iFail = qcoNextFail(a, n, aDone, iFail + 1, eOrder);
  }
  /* A failing clause that cannot run in order (an argument only a later
  ** clause binds): the rest as before, the error its own. */
  if (pC->rc == SQLITE_OK && iFail < n) {
    qcwEmitPatterns(pX, a, n, aDone, 0, n);
    qcwBinders(pX, a, n, aDone, iDepth, 0);
  }
}

int qcwClauses(QCtx *pX, QClause *const *a, int n, int iDepth) {
  QComp *pC = pX->pC;
  QLive live;
  unsigned char *aDone;
  int i, bBinders = 0;
  if (n == 0) {
    if (pX->pParent == NULL) qcMaterialize(pX);
    return pC->rc;
  }
  if (iDepth > EDN_MAX_DEPTH) return qcErr(pC, NULL, "clauses nested too deep");
  aDone = sqlite3_malloc64(n);
  if (aDone == NULL) return qcNoMem(pC);
  memset(aDone, 0, n);
  /* a frame: until a clause starts, terms are the enclosing clause's */
  if (pX->nPath < QC_PATH_MAX) pX->aPath[pX->nPath] = -1;
  pX->nPath++;
  if (pX == pC->pMain) {
    live.a = a;
    live.n = n;
    live.aDone = aDone;
    live.pUp = pC->pLive;
    pC->pLive = &live;
  }
  /* 1. ground: constant bindings, like inputs. (ground ?v) is identity
  ** and waits for ?v with the other functions (step 3). */
  for (i = 0; i < n && qcPoll(pC) == SQLITE_OK; i++) {
    if (a[i]->kind == QC_FN && strcmp(a[i]->zName, "ground") == 0
        && !(a[i]->nArg == 1 && ednIsVar(a[i]->aArg[0]))) {
      qcwAt(pX, a, i);
      qcfFunction(pX, a[i]);
      aDone[i] = 1;
    }
  }
  /* 2. data patterns (qcwEmitPatterns), those joined to nothing bound
  ** waiting while a rule, or, or function may bind their variables. */
  for (i = 0; i < n && !bBinders; i++) {
    bBinders = a[i]->kind == QC_RULE || a[i]->kind == QC_OR || a[i]->kind == QC_OR_JOIN
               || (a[i]->kind == QC_FN && !aDone[i]);
  }
  if (qcwJoinLimit(pX, a, n, bBinders)) goto done;
  /* 3. binding clauses (rules, or, functions) as their inputs are bound.
  ** 2'. the patterns that waited, now joined to what those bound, and the
  ** binding clauses that waited for them (required variables). */
  qcwSegments(pX, a, n, aDone, bBinders, iDepth);
  /* 4. filters; anything left unbound now is an error naming it. */
  for (i = 0; i < n && pC->rc == SQLITE_OK; i++) {
    if (aDone[i] || qcPoll(pC)) continue;
    if (pX->nFrom >= QC_COLLAPSE_FROM && qcCollapse(pX) && pC->rc) break;
    qcwAt(pX, a, i);
    switch (a[i]->kind) {
      case QC_PRED: qcfPredicate(pX, a[i]); break;
      case QC_FN: qcfFunction(pX, a[i]); break;
      case QC_NOT: case QC_NOT_JOIN: qcoNot(pX, a[i], iDepth); break;
      case QC_AND: qcwClauses(pX, a[i]->aSub, a[i]->nSub, iDepth + 1); break;
      /* Required variables still unbound: the call reports them. */
      case QC_RULE: qcrCall(pX, a[i], iDepth); break;
      case QC_OR: case QC_OR_JOIN: qcoOr(pX, a[i], iDepth); break;
      default: break;
    }
    aDone[i] = 1;
  }
done:
  pX->nPath--;
  if (pX == pC->pMain) pC->pLive = live.pUp;
  sqlite3_free(aDone);
  return pC->rc;
}
