/*
** query_compile_bind.c — binding forms (scalar ?x, tuple [?a ?b],
** collection [?x ...], relation [[?a ?b]]) bound to an :in input or to a
** ground constant. Takes the binding form and the value (a constant, or the
** input's shape at compile time); gives variables bound in the QCtx, to
** parameters that address the input's elements, typed lazily by the first
** typed place they meet. Calls the scope and SQL helpers.
*/
#include <string.h>
#include "query_compile_scope.h"

/* Is input leaf pVal (of input iInput; ground when < 0) a lookup ref? */
static int qcbLeafIsLookup(QCtx *pX, const EdnValue *pVal, int iInput) {
  return iInput >= 0 && qPlanLookupRef(pX->pC->pSchema, pVal);
}

/* An EDN leaf as SQL: lookup ref → subquery, collection → JSON, else a
** parameter typed lazily. *piParam gets the lazy parameter (or 0). A lookup
** ref that names no entity is NULL: callers keep such rows out, since it
** binds nothing. */
static char *qcbLeafExpr(QCtx *pX, const EdnValue *pVal, const EdnValue *pConst, int iInput,
                         int i1, int i2, ValueType *pvt, int *piParam) {
  QComp *pC = pX->pC;
  int iP;
  *piParam = 0;
  /* An input [:attr v] names an entity; ground's value stays as written. */
  if (qcbLeafIsLookup(pX, pVal, iInput)) {
    int iA = qcParam(pC, pConst, iInput, i1, i2, QV_LOOKUP_A, VT_NONE);
    int iV = qcParam(pC, pConst, iInput, i1, i2, QV_LOOKUP_V, VT_NONE);
    int iT = qcParam(pC, pConst, iInput, i1, i2, QV_LOOKUP_TAG, VT_NONE);
    char zA[16], zV[16], zT[16];
    *pvt = VT_REF;
    sqlite3_snprintf(sizeof zA, zA, "?%d", iA);
    sqlite3_snprintf(sizeof zV, zV, "?%d", iV);
    sqlite3_snprintf(sizeof zT, zT, "?%d", iT);
    return qcLookupSql(pC, zA, zV, zT);
  }
  if (qcIsTupleConst(pVal, &pC->rc)) {
    iP = qcParam(pC, pConst, iInput, i1, i2, QV_TYPED, VT_TUPLE);
    *pvt = VT_TUPLE;
    return sqlite3_mprintf("?%d", iP);
  }
  if (pVal->type == EDN_VECTOR || pVal->type == EDN_LIST || pVal->type == EDN_SET
      || pVal->type == EDN_MAP) {
    iP = qcParam(pC, pConst, iInput, i1, i2, QV_JSON, QVT_JSON);
    *pvt = QVT_JSON;
    return sqlite3_mprintf("?%d", iP);
  }
  *pvt = valueNaturalType(pVal);
  if (*pvt == VT_NONE) {
    /* Symbols, nil and unknown tags have no stored form: name the value. */
    sqlite3_str *pTxt = sqlite3_str_new(NULL);
    char *zTxt;
    char zWhere[32];
    ednPrint(pTxt, pVal);
    zTxt = sqlite3_str_finish(pTxt);
    if (iInput >= 0) {
      sqlite3_snprintf(sizeof zWhere, zWhere, "input %d", iInput + 1);
    } else {
      sqlite3_snprintf(sizeof zWhere, zWhere, "ground");
    }
    qcErr(pC, NULL, "%s: unsupported value %s (%s)", zWhere, zTxt ? zTxt : "?",
          pVal->type == EDN_SYMBOL ? "a symbol" : pVal->type == EDN_NIL ? "nil" : "a tagged value");
    sqlite3_free(zTxt);
    return NULL;
  }
  iP = qcParam(pC, pConst, iInput, i1, i2, QV_NATURAL, *pvt);
  *piParam = iP;
  return sqlite3_mprintf("?%d", iP);
}

/* May values of types a and b share one bound variable? The variable gets
** one static type (the first value's), so only numbers and entity ids mix:
** a later string or boolean would be read as a number. */
static int qcbVtMix(ValueType a, ValueType b) {
  if (a == b) return 1;
  /* Beside a lookup ref (an entity), a keyword can only be an ident: the
  ** entity place that types the variable reads it as one. */
  if ((a == VT_REF && b == VT_KEYWORD) || (a == VT_KEYWORD && b == VT_REF)) return 1;
  return (a == VT_LONG || a == VT_DOUBLE || a == VT_REF) && (b == VT_LONG || b == VT_DOUBLE || b == VT_REF);
}

static void qcbBindScalar(QCtx *pX, const EdnValue *pVar, const EdnValue *pVal,
                          const EdnValue *pConst, int iInput, int i1, int i2) {
  ValueType vt;
  int iP;
  char *zExpr;
  QVar *pV;
  if (qpIsBlank(pVar)) return;
  zExpr = qcbLeafExpr(pX, pVal, pConst, iInput, i1, i2, &vt, &iP);
  if (zExpr == NULL) { qcNoMem(pX->pC); return; }
  if (qcbLeafIsLookup(pX, pVal, iInput)) qcWhere(pX, sqlite3_mprintf("%s IS NOT NULL", zExpr));
  pV = qcVarFind(pX, pVar->u.s.z);
  if (pV) {
    qcBindVar(pX, pVar->u.s.z, zExpr, vt, NULL, 0);
    return;
  }
  qcBindVar(pX, pVar->u.s.z, zExpr, vt, NULL, 0);
  pV = qcVarFind(pX, pVar->u.s.z);
  if (pV && iP) {
    pV->aParam = sqlite3_malloc64(sizeof(int));
    if (pV->aParam == NULL) { qcNoMem(pX->pC); return; }
    pV->aParam[0] = iP;
    pV->nParam = 1;
  }
}

static const EdnValue *qcbElem(const EdnValue *p, int i) {
  return p->u.c.a[i];
}

static int qcbIsColl(const EdnValue *p) {
  return p->type == EDN_VECTOR || p->type == EDN_LIST || p->type == EDN_SET;
}

/* The lazy parameters aP[0..nP) (taken over) of a collection that binds
** the already bound pV: typed with pV's lazy ones, or by its static type. */
static void qcbAdoptParams(QCtx *pX, QVar *pV, int *aP, int nP) {
  int i;
  if (pV->nParam > 0 || (pV->zExpr == NULL && pV->zInList)) {
    int *aNew = sqlite3_realloc64(pV->aParam, sizeof(int) * (sqlite3_uint64)(pV->nParam + nP + 1));
    if (aNew == NULL) { sqlite3_free(aP); qcNoMem(pX->pC); return; }
    for (i = 0; i < nP; i++) aNew[pV->nParam + i] = aP[i];
    pV->aParam = aNew;
    pV->nParam += nP;
  } else if (pV->vt != VT_NONE && pV->vt != QVT_JSON) {
    for (i = 0; i < nP; i++) {
      QParam *pP = &pX->pC->aParam[aP[i] - 1];
      if (pP->eConv == QV_NATURAL) {
        pP->eConv = QV_TYPED;
        pP->vt = pV->vt;
      }
    }
  }
  sqlite3_free(aP);
}

/* Collection binding of pB's variable to values of several types (1 and
** "A", an entity id and a keyword): a CTE inN(c0, t0) of the values, each
** with its own tag (pRows: "(v, tag),...", taken over), in FROM, and the
** variable its columns (type VT_NONE, the tag column saying each row's),
** as a variable of a pattern whose attribute is open: each place it meets
** matches the values of its type (Datomic's collection binding is a set
** of values of any types; a keyword there names its ident where an entity
** goes). Already bound, the variable is filtered by it instead. A lookup
** ref naming no entity binds nothing. */
static int qcbBindMixed(QCtx *pX, const QBinding *pB, sqlite3_str *pRows) {
  QComp *pC = pX->pC;
  char zName[24];
  QVar *pV;
  const char *zVar = pB->aVar[0]->u.s.z;
  sqlite3_snprintf(sizeof zName, zName, "in%d", ++pC->nAlias);
  if (sqlite3_str_errcode(pRows) != SQLITE_OK) {
    sqlite3_free(sqlite3_str_finish(pRows));
    return qcNoMem(pC);
  }
  if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
  sqlite3_str_appendf(pC->pCte, "%s(c0, t0) AS (SELECT column1, column2 FROM (VALUES %s)"
                      " WHERE column1 IS NOT NULL)", zName, sqlite3_str_value(pRows));
  sqlite3_free(sqlite3_str_finish(pRows));
  pV = qcVarFind(pX, zVar);
  if (pV && pV->zExpr) {
    char *zTag = qcVarTag(pV), *zMatch;
    char zCol[40];
    sqlite3_snprintf(sizeof zCol, zCol, "%s.t0", zName);
    zMatch = zTag ? qcTagsMatch(zCol, zTag) : NULL;
    if (zMatch == NULL) {
      qcNoMem(pC);
    } else {
      /* typeof too: 3 and 3.0 are two values (Clojure's =) */
      /* +c0: SQLite would put a constant pV (?1) for c0 in typeof(c0) */
      qcWhere(pX, sqlite3_mprintf("EXISTS (SELECT 1 FROM %s WHERE +%s.c0 = %s AND typeof(%s.c0)"
                                  " = typeof(%s) AND %s)", zName, zName, pV->zExpr, zName,
                                  pV->zExpr, zMatch));
    }
    sqlite3_free(zTag);
    sqlite3_free(zMatch);
    return pC->rc;
  }
  /* (a collection still waiting for its place takes this one as that) */
  qcFrom(pX, sqlite3_mprintf("%s %s", zName, zName));
  qcBindVar(pX, zVar, sqlite3_mprintf("%s.c0", zName), VT_NONE,
            sqlite3_mprintf("%s.t0", zName), 0);
  pV = qcVarFind(pX, zVar);
  if (pV && pV->zInList == NULL) {
    pV->bIdent = 1;      /* a keyword value names its ident where an entity goes */
    pV->bInMixed = 1;    /* 1 and 1.0 are two values */
    pV->bHetero = 1;
  }
  return pC->rc;
}

/* Would collection values all of type vt0 (bMixed: numbers of both kinds)
** binding the already bound pV be compared by another type than their
** own? pV's lazy parameters and its IN list take one type, and SQL's IN
** says 1 = 1.0, true = 1 and ":x" (a keyword) = ":x" (a string): such a
** second binding is compared row by row with each value's tag instead
** (qcbBindMixed), as Clojure's = has it. */
static int qcbRetypes(const QVar *pV, ValueType vt0, int bMixed) {
  if (pV == NULL) return 0;
  if (pV->vt == QVT_JSON || vt0 == QVT_JSON) return 0;
  if (bMixed || pV->bInMixed || pV->vt == VT_NONE) return 1;
  if (vt0 == pV->vt) return 0;
  /* an integer beside an entity id is the entity (SPEC.md §2.4) */
  return !((vt0 == VT_LONG || vt0 == VT_REF) && (pV->vt == VT_LONG || pV->vt == VT_REF));
}

/* Collection binding [?x ...] of pVal: a pending IN list the variable's
** first place takes (qcBindVar), or a filter when it is already bound. */
static int qcbBindColl(QCtx *pX, const QBinding *pB, const EdnValue *pVal, int iInput,
                       const char *zWhat) {
  QComp *pC = pX->pC;
  int bConst = iInput < 0;
  int i;
  sqlite3_str *pList;
  QVar *pV;
  int nP = 0, bLookup = 0, bMixed = 0, bHetero = 0;
  int mKind = 0;   /* elements' kinds: 1 vector-like, 2 set, 4 map, 8 list */
  int *aP;
  ValueType vt0 = VT_NONE;
  sqlite3_str *pRows;
  if (!qcbIsColl(pVal)) return qcErr(pC, NULL, "%s: expected a collection", zWhat);
  if (qpIsBlank(pB->aVar[0])) return pC->rc;
  aP = sqlite3_malloc64(sizeof(int) * (pVal->u.c.n + 1));
  pList = sqlite3_str_new(NULL);
  pRows = sqlite3_str_new(NULL);
  if (aP == NULL) {
    sqlite3_free(sqlite3_str_finish(pList));
    sqlite3_free(sqlite3_str_finish(pRows));
    return qcNoMem(pC);
  }
  for (i = 0; i < pVal->u.c.n; i++) {
    ValueType vt;
    int iP;
    const EdnValue *pE = qcbElem(pVal, i);
    char *z = qcbLeafExpr(pX, pE, bConst ? pE : NULL, iInput, i, -1, &vt, &iP);
    if (z == NULL) { qcNoMem(pC); break; }
    if (i > 0 && vt != vt0) bMixed = 1;
    if (i == 0) vt0 = vt;
    else if (!qcbVtMix(vt0, vt)) bHetero = 1;
    if (iP) aP[nP++] = iP;
    if (qcbLeafIsLookup(pX, pE, iInput)) bLookup = 1;
    mKind |= pE->type == EDN_SET ? 2 : pE->type == EDN_MAP ? 4 : pE->type == EDN_LIST ? 9 : 1;
    if (i) sqlite3_str_appendchar(pList, 1, ',');
    sqlite3_str_appendall(pList, z);
    /* each value with its own tag, for a collection of several types */
    sqlite3_str_appendf(pRows, "%s(%s, %d)", i ? "," : "", z,
                        vt == QVT_JSON ? TAG_JSON : vtOutTag(vt));
    sqlite3_free(z);
  }
  if (!bHetero && pC->rc == SQLITE_OK && !bLookup && pVal->u.c.n > 0
      && qcbRetypes(qcVarFind(pX, pB->aVar[0]->u.s.z), vt0, bMixed)) {
    bHetero = 1;
  }
  if (bHetero && pC->rc == SQLITE_OK) {
    sqlite3_free(sqlite3_str_finish(pList));
    sqlite3_free(aP);
    return qcbBindMixed(pX, pB, pRows);
  }
  sqlite3_free(sqlite3_str_finish(pRows));
  if (qcVarFind(pX, pB->aVar[0]->u.s.z)) {
    /* Already bound: the collection filters it (a membership test, or
    ** one more list for a collection still waiting for its place). */
    QVar *pOld = qcVarFind(pX, pB->aVar[0]->u.s.z);
    int bListOom = sqlite3_str_errcode(pList) != SQLITE_OK;
    char *zList = sqlite3_str_finish(pList);
    if (bListOom || (zList == NULL && pVal->u.c.n)) {
      qcNoMem(pC);
    } else if (pOld->zExpr == NULL && pOld->zInList) {
      char *zMore = pOld->zInMore
          ? sqlite3_mprintf("%s\x01%s", pOld->zInMore, zList ? zList : "")
          : sqlite3_mprintf("%s", zList ? zList : "");
      if (zMore == NULL) qcNoMem(pC);
      sqlite3_free(pOld->zInMore);
      pOld->zInMore = zMore;
      if (pVal->u.c.n < pOld->nInElem) pOld->nInElem = pVal->u.c.n;
    } else {
      qcWhere(pX, sqlite3_mprintf("%s IN (%s)", pOld->zExpr ? pOld->zExpr : "NULL",
                                  zList ? zList : ""));
    }
    sqlite3_free(zList);
    qcbAdoptParams(pX, pOld, aP, nP);
    return pC->rc;
  }
  pV = qcVarAdd(pX, pB->aVar[0]->u.s.z);
  if (pV == NULL) {
    sqlite3_free(aP);
    sqlite3_free(sqlite3_str_finish(pList));
    return pC->rc;
  }
  /* A list that ran out of memory is not the empty list (sqlite3_str
  ** gives NULL for both): that would be an IN () matching nothing. */
  if (sqlite3_str_errcode(pList) != SQLITE_OK) qcNoMem(pC);
  pV->zInList = sqlite3_str_finish(pList);
  if (pV->zInList == NULL) pV->zInList = sqlite3_mprintf("%s", "");
  if (pV->zInList == NULL) qcNoMem(pC);
  pV->nInElem = pVal->u.c.n;
  if (mKind & 10) {
    /* a set or list element's rows hold its JSON, an array that reads as a
    ** vector: maybe one of those kinds (QVar.bSeq 3), as a union's column */
    pV->bSeq = 3;
    pV->mColl = (unsigned char)(mKind & 7);
  }
  pV->bInLookup = (unsigned char)bLookup;
  pV->bInMixed = (unsigned char)bMixed;
  pV->vt = vt0 == VT_NONE ? VT_LONG : vt0;
  pV->aParam = aP;
  pV->nParam = nP;
  return pC->rc;
}

/* The cells of relation pVal (row i, column j at azCell[i * nVar + j],
** with its tag), each column's lazy parameters (aaP[j]), first type
** (aVt[j]), whether it holds lookup refs (abLookup[j]) and whether its
** values have several types (abHetero[j]: numbers and entity ids mix, a
** keyword beside a lookup ref is an ident). */
static void qcbRelCells(QCtx *pX, const QBinding *pB, const EdnValue *pVal, int iInput,
                        char **azCell, int *aTag, int **aaP, ValueType *aVt,
                        unsigned char *abLookup, unsigned char *abHetero) {
  QComp *pC = pX->pC;
  int bConst = iInput < 0;
  int i, j;
  for (i = 0; pC->rc == SQLITE_OK && i < pVal->u.c.n; i++) {
    const EdnValue *pRow = qcbElem(pVal, i);
    for (j = 0; j < pB->nVar; j++) {
      ValueType vt;
      int iP;
      const EdnValue *pE = qcbElem(pRow, j);
      char *z = qcbLeafExpr(pX, pE, bConst ? pE : NULL, iInput, i, j, &vt, &iP);
      if (z == NULL) { qcNoMem(pC); break; }
      if (i == 0) aVt[j] = vt;
      else if (!qcbVtMix(aVt[j], vt)) abHetero[j] = 1;
      aaP[j][i] = iP;
      if (qcbLeafIsLookup(pX, pE, iInput)) abLookup[j] = 1;
      azCell[i * pB->nVar + j] = z;
      aTag[i * pB->nVar + j] = vt == QVT_JSON ? TAG_JSON : vtOutTag(vt);
    }
  }
}

/* The VALUES rows of the cells into the CTE being written: a column of
** several types with each value's tag after it (its tJ column), one of
** longs the query gave with each value's double form (its kJ column: how
** a double attribute's place compares it, qcUnifyConv). */
static void qcbRelRows(QComp *pC, int nRow, int nVar, char **azCell, const int *aTag,
                       const unsigned char *abHetero, const unsigned char *abLong) {
  int i, j;
  for (i = 0; i < nRow; i++) {
    sqlite3_str_appendf(pC->pCte, "%s(", i ? "," : "");
    for (j = 0; j < nVar; j++) {
      const char *z = azCell[i * nVar + j];
      sqlite3_str_appendf(pC->pCte, "%s%s", j ? "," : "", z ? z : "NULL");
      if (abHetero[j]) sqlite3_str_appendf(pC->pCte, ",%d", aTag[i * nVar + j]);
      if (abLong[j]) sqlite3_str_appendf(pC->pCte, ",+CAST(%s AS REAL)", z ? z : "NULL");
    }
    sqlite3_str_appendall(pC->pCte, ")");
  }
}

/* Relation column j of pVal, newly bound to pVar (zName.cJ):
** the variable takes the column's lazy parameters (*paP, taken over). */
static void qcbRelAdopt(QCtx *pX, const EdnValue *pVal, const EdnValue *pVar, int j, int **paP) {
  QVar *pV = qcVarFind(pX, pVar->u.s.z);
  int *aP = *paP;
  int k, n = 0, nInt = 0, nReal = 0;
  for (k = 0; k < pVal->u.c.n; k++) {
    const EdnValue *pE = qcbElem(qcbElem(pVal, k), j);
    if (pE && pE->type == EDN_INT) nInt++;
    if (pE && pE->type == EDN_DOUBLE) nReal++;
  }
  /* a column of longs and doubles: 1 and 1.0 are two rows */
  pV->bInMixed = nInt && nReal;
  for (k = 0; k < pVal->u.c.n; k++) if (aP[k]) aP[n++] = aP[k];
  pV->aParam = aP;
  pV->nParam = n;
  *paP = NULL;
}

/* Column j of relation CTE zName bound to pVar: one type, or with several
** its tag column tJ beside it, the variable then of no static type, as a
** collection binding of several types is (qcbBindMixed). */
static void qcbRelBindCol(QCtx *pX, const EdnValue *pVal, const EdnValue *pVar, const char *zName,
                          int j, ValueType vt, int bHetero, int bLong, int **paP) {
  QComp *pC = pX->pC;
  int bNew = qcVarFind(pX, pVar->u.s.z) == NULL;
  QVar *pV;
  if (!bHetero) {
    qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.c%d", zName, j), vt == VT_NONE ? VT_LONG : vt,
              NULL, 0);
    if (bNew && pC->rc == SQLITE_OK) qcbRelAdopt(pX, pVal, pVar, j, paP);
    pV = bNew && pC->rc == SQLITE_OK ? qcVarFind(pX, pVar->u.s.z) : NULL;
    if (pV) pV->bConvCol = (unsigned char)bLong;   /* its kJ column */
    return;
  }
  qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.c%d", zName, j), VT_NONE,
            sqlite3_mprintf("%s.t%d", zName, j), 0);
  pV = bNew && pC->rc == SQLITE_OK ? qcVarFind(pX, pVar->u.s.z) : NULL;
  if (pV) {
    pV->bIdent = 1;      /* a keyword value names its ident where an entity goes */
    pV->bInMixed = 1;    /* 1 and 1.0 are two values */
    pV->bHetero = 1;
  }
}

char *qcbTupleText(const QBinding *pB) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  int i;
  sqlite3_str_appendchar(p, 1, '[');
  for (i = 0; i < pB->nVar; i++) {
    sqlite3_str_appendf(p, "%s%.*s", i ? " " : "", pB->aVar[i]->u.s.n, pB->aVar[i]->u.s.z);
  }
  sqlite3_str_appendchar(p, 1, ']');
  return sqlite3_str_finish(p);
}

/* The error of a collection of n elements, too few for tuple binding pB
** (DataScript's in->rel raises it; a longer one binds its first ones). */
static int qcbShort(QComp *pC, const QBinding *pB, int n, const char *zWhat) {
  char *zB = qcbTupleText(pB);
  if (zB == NULL) return qcNoMem(pC);
  qcErr(pC, NULL, "%s: not enough elements in a collection of %d to bind tuple %s", zWhat, n, zB);
  sqlite3_free(zB);
  return pC->rc;
}

/* The error of a set where tuple binding pB takes its elements in order:
** Clojure destructures a tuple with nth, which a set does not support
** (DataScript's in->rel would bind it in its hash order, so an answer
** that depends on no order the set has). */
static int qcbSetTuple(QComp *pC, const QBinding *pB, const char *zWhat) {
  char *zB = qcbTupleText(pB);
  if (zB == NULL) return qcNoMem(pC);
  qcErr(pC, NULL, "%s: a set cannot bind tuple %s: its elements have no order (bind it as a"
        " collection [?x ...] or a relation [[...]] of its elements)", zWhat, zB);
  sqlite3_free(zB);
  return pC->rc;
}

void qcbFill(QCtx *pX, const QClause *pCl, const QBinding *pB, char *zCount) {
  QComp *pC = pX->pC;
  char *zPlace = qcPlaceSql(pCl->pForm, pCl->zName), *zB = qcbTupleText(pB), *zTerm = NULL;
  if (zCount && zPlace && zB) {
    zTerm = sqlite3_mprintf("mentat_fill(%s, %d, %s, '%q')", zCount, pB->nVar, zPlace, zB);
  }
  if (zTerm == NULL) qcNoMem(pC);
  else qcWhere(pX, qcGuardRaising(pX, zTerm));
  sqlite3_free(zCount);
  sqlite3_free(zPlace);
  sqlite3_free(zB);
}

/* Relation binding [[?a ?b] ...] of pVal: a VALUES CTE inN in FROM, its
** columns bound to the variables. A column whose values have several types
** carries each one's tag (tJ), so each keeps its type, as in a collection. */
static int qcbBindRel(QCtx *pX, const QBinding *pB, const EdnValue *pVal, int iInput,
                      const char *zWhat) {
  QComp *pC = pX->pC;
  sqlite3_str *pCte = pC->pCte;
  char zName[24];
  int i, j, n;
  /* Column j's lazy parameters, typed together by the column's first place. */
  int **aaP;
  ValueType *aVt;
  unsigned char *abLookup, *abHetero, *abLong;
  char **azCell;
  int *aTag;
  sqlite3_snprintf(sizeof zName, zName, "in%d", ++pC->nAlias);
  for (i = 0; i < pVal->u.c.n || !qcbIsColl(pVal); i++) {
    if (!qcbIsColl(pVal) || !qcbIsColl(qcbElem(pVal, i))) {
      return qcErr(pC, NULL, "%s: expected a relation of %d-tuples", zWhat, pB->nVar);
    }
    if (qcbElem(pVal, i)->type == EDN_SET) return qcbSetTuple(pC, pB, zWhat);
    if (qcbElem(pVal, i)->u.c.n < pB->nVar) {
      return qcbShort(pC, pB, qcbElem(pVal, i)->u.c.n, zWhat);
    }
  }
  n = pVal->u.c.n * pB->nVar;
  aaP = sqlite3_malloc64(sizeof(int*) * pB->nVar);
  aVt = sqlite3_malloc64(sizeof(ValueType) * pB->nVar);
  abLookup = sqlite3_malloc64((sqlite3_uint64)pB->nVar * 3);
  azCell = sqlite3_malloc64(sizeof(char*) * (sqlite3_uint64)(n + 1));
  aTag = sqlite3_malloc64(sizeof(int) * (sqlite3_uint64)(n + 1));
  abHetero = abLookup ? abLookup + pB->nVar : NULL;
  abLong = abLookup ? abLookup + 2 * pB->nVar : NULL;
  if (aaP == NULL || aVt == NULL || abLookup == NULL || azCell == NULL || aTag == NULL) {
    sqlite3_free(aaP);
    sqlite3_free(aVt);
    sqlite3_free(abLookup);
    sqlite3_free(azCell);
    sqlite3_free(aTag);
    return qcNoMem(pC);
  }
  memset(azCell, 0, sizeof(char*) * (size_t)(n + 1));
  for (j = 0; j < pB->nVar; j++) {
    aaP[j] = sqlite3_malloc64(sizeof(int) * (pVal->u.c.n + 1));
    aVt[j] = VT_NONE;
    abLookup[j] = abHetero[j] = abLong[j] = 0;
    if (aaP[j] == NULL) qcNoMem(pC);
  }
  if (pC->rc == SQLITE_OK) {
    qcbRelCells(pX, pB, pVal, iInput, azCell, aTag, aaP, aVt, abLookup, abHetero);
    for (j = 0; j < pB->nVar && pC->rc == SQLITE_OK; j++) {
      abLong[j] = !abHetero[j] && qcParamsHaveLong(pC, aaP[j], pVal->u.c.n);
    }
  }
  if (pC->nCte++) sqlite3_str_appendall(pCte, ", ");
  sqlite3_str_appendf(pCte, "%s(", zName);
  for (j = 0; j < pB->nVar; j++) {
    sqlite3_str_appendf(pCte, "%sc%d", j ? "," : "", j);
    if (abHetero[j]) sqlite3_str_appendf(pCte, ",t%d", j);
    if (abLong[j]) sqlite3_str_appendf(pCte, ",k%d", j);
  }
  sqlite3_str_appendall(pCte, ") AS (");
  if (pVal->u.c.n == 0) {
    sqlite3_str_appendall(pCte, "SELECT ");
    for (j = 0; j < pB->nVar; j++) sqlite3_str_appendf(pCte, "%sNULL", j ? "," : "");
    sqlite3_str_appendall(pCte, " WHERE 0");
  } else {
    sqlite3_str_appendall(pCte, "VALUES ");
    qcbRelRows(pC, pVal->u.c.n, pB->nVar, azCell, aTag, abHetero, abLong);
  }
  sqlite3_str_appendall(pCte, ")");
  for (i = 0; i < n; i++) sqlite3_free(azCell[i]);
  sqlite3_free(azCell);
  sqlite3_free(aTag);
  qcFrom(pX, sqlite3_mprintf("%s", zName));
  for (j = 0; j < pB->nVar; j++) {
    const EdnValue *pVar = pB->aVar[j];
    /* a row whose lookup ref names no entity binds nothing */
    if (abLookup[j]) qcWhere(pX, sqlite3_mprintf("%s.c%d IS NOT NULL", zName, j));
    if (pC->rc == SQLITE_OK && !qpIsBlank(pVar)) {
      qcbRelBindCol(pX, pVal, pVar, zName, j, aVt[j], abHetero[j], abLong[j], &aaP[j]);
    }
    sqlite3_free(aaP[j]);
  }
  sqlite3_free(aaP);
  sqlite3_free(aVt);
  sqlite3_free(abLookup);
  return pC->rc;
}

int qcbBind(QCtx *pX, const QBinding *pB, const EdnValue *pVal, int iInput, const char *zWhat) {
  QComp *pC = pX->pC;
  int bConst = iInput < 0;
  int i;
  switch (pB->kind) {
    case QB_SCALAR:
      qcbBindScalar(pX, pB->aVar[0], pVal, bConst ? pVal : NULL, iInput, -1, -1);
      break;
    case QB_TUPLE:
      if (!qcbIsColl(pVal)) {
        return qcErr(pC, NULL, "%s: expected a tuple of %d value(s)", zWhat, pB->nVar);
      }
      if (pVal->type == EDN_SET) return qcbSetTuple(pC, pB, zWhat);
      if (pVal->u.c.n < pB->nVar) return qcbShort(pC, pB, pVal->u.c.n, zWhat);
      for (i = 0; i < pB->nVar; i++) {
        qcbBindScalar(pX, pB->aVar[i], qcbElem(pVal, i), bConst ? qcbElem(pVal, i) : NULL,
                      iInput, i, -1);
      }
      break;
    case QB_COLL:
      return qcbBindColl(pX, pB, pVal, iInput, zWhat);
    case QB_REL:
      return qcbBindRel(pX, pB, pVal, iInput, zWhat);
  }
  return pC->rc;
}
