/*
** query_compile_agg.c — find specs with aggregates: takes the query's
** scope once :where is compiled, gives the whole SELECT and the plan's
** columns. Calls the scope and SQL helpers and qcwRowsUnique. Each
** aggregate is a row of one table (aQcaAgg: name, arity, kind, SQL).
**
** HOW IT WORKS
** Datomic aggregates over the SET of bindings of the find and :with
** variables, so the body becomes an inner
**   SELECT DISTINCT <grouping vars, :with vars, aggregated vars> FROM ...
** and the outer query groups by the non-aggregate find elements:
**   SELECT g, count(v1), ... FROM (inner) GROUP BY g
** With no grouping element, `HAVING count(*) > 0` keeps an aggregate over no
** rows from producing a row (Datomic returns nothing). SQLite's own
** aggregates serve count, min and max; sum, avg, median, variance, stddev
** (population), distinct, (min n ?x), (max n ?x), (sample n ?x), (rand n ?x)
** and (rand ?x) are SQL functions registered by qfRegister (query_funcs.c).
** Mentat's (the ?x) is a bare column: with exactly one min/max aggregate
** SQLite takes it from the row that holds the extreme value.
**
** One shape gets its own plan: [:find ?v (count ?e) :where [?e :a ?v]] on
** the current database, :a having a covering value index (a, v, e). The
** general plan walks every datom of :a and compares each row's v with the
** group's; instead the distinct values are found by skip-scan (one seek per
** value: min(v) > the previous) and each value's datoms are counted by a
** range count, which steps the index without decoding rows (bench/findings.md,
** "aggregate"). (e, v) pairs are unique in datoms, so the count is Datomic's
** count over the set.
*/
#include <string.h>
#include "query_compile_scope.h"

/* The SQL shape of an aggregate. */
typedef enum QcaKind {
  QCA_COUNT = 1,       /* count(v), count(*) over a store column */
  QCA_COUNT_DISTINCT,  /* count(DISTINCT v), under Clojure's = when kinds mix */
  QCA_SUM,             /* mentat_sum(v, place): a long overflow is an error */
  QCA_NUMERIC,         /* zSql(v, place) over numbers: a double (median: a long or a double) */
  QCA_EXTREME,         /* min(v), max(v) in the value's collation */
  QCA_JSON,            /* mentat_agg_json(mode, v, t[, n]): a JSON array */
  QCA_RAND,            /* (rand ?x): mentat_rand_one, one element at random */
  QCA_THE              /* (the ?x): a bare column beside one min or max */
} QcaKind;

/* One aggregate of :find: Datomic's documented set and Mentat's
** (the ?x), one row per arity (the parser refuses any other: query_parse.c). */
typedef struct QcaAgg {
  const char *zName;
  signed char nArity;      /* 1: (f ?x), 2: (f n ?x) */
  unsigned char eKind;     /* QcaKind */
  unsigned char bNumeric;  /* numbers only: a known type checked when the query
                           ** compiles, an unknown one value by value (mentat_num) */
  const char *zSql;        /* the SQL aggregate (QCA_NUMERIC, QCA_EXTREME) */
  signed char iMode;       /* QCA_JSON: mentat_agg_json's mode, -1 without an n */
  ValueType vtOut;         /* QCA_NUMERIC: the result type (VT_NONE: the median's rule) */
} QcaAgg;

static const QcaAgg aQcaAgg[] = {
  { "count", 1, QCA_COUNT, 0, 0, 0, VT_LONG },
  { "count-distinct", 1, QCA_COUNT_DISTINCT, 0, 0, 0, VT_LONG },
  { "sum", 1, QCA_SUM, 1, 0, 0, VT_NONE },
  { "avg", 1, QCA_NUMERIC, 1, "mentat_avg", 0, VT_DOUBLE },
  /* median (DataScript's: the middle value, or (/ (+ a b) 2) of the two
  ** middle ones: over longs a long or a double, the row says), population
  ** variance and stddev */
  { "median", 1, QCA_NUMERIC, 1, "mentat_median", 0, VT_NONE },
  { "variance", 1, QCA_NUMERIC, 1, "mentat_variance", 0, VT_DOUBLE },
  { "stddev", 1, QCA_NUMERIC, 1, "mentat_stddev", 0, VT_DOUBLE },
  { "min", 1, QCA_EXTREME, 0, "min", 0, VT_NONE },
  { "max", 1, QCA_EXTREME, 0, "max", 0, VT_NONE },
  /* distinct values; (min n), (max n); sample n (distinct), rand n (with
  ** replacement) */
  { "distinct", 1, QCA_JSON, 0, 0, -1, VT_NONE },
  { "min", 2, QCA_JSON, 0, 0, 1, VT_NONE },
  { "max", 2, QCA_JSON, 0, 0, 2, VT_NONE },
  { "sample", 2, QCA_JSON, 0, 0, 3, VT_NONE },
  { "rand", 2, QCA_JSON, 0, 0, 4, VT_NONE },
  /* (rand ?x): one value, "a random element" (Datomic), DataScript's rand-nth */
  { "rand", 1, QCA_RAND, 0, 0, 0, VT_NONE },
  { "the", 1, QCA_THE, 0, 0, 0, VT_NONE },
};

/* The row of aggregate element pE, or NULL when there is none. */
static const QcaAgg *qcaAggFind(const QFindElem *pE) {
  size_t i;
  int nArity = pE->pAggN ? 2 : 1;
  if (pE->kind != QFIND_AGG || pE->zAgg == NULL) return NULL;
  for (i = 0; i < sizeof aQcaAgg / sizeof aQcaAgg[0]; i++) {
    const QcaAgg *p = &aQcaAgg[i];
    if (p->nArity == nArity && strcmp(p->zName, pE->zAgg) == 0) return p;
  }
  return NULL;
}

/* Is pE an aggregate of kind eKind? */
static int qcaIs(const QFindElem *pE, int eKind) {
  const QcaAgg *p = qcaAggFind(pE);
  return p != NULL && p->eKind == eKind;
}

/* Index of variable zName among the inner columns, adding it if new. */
static int qcaInnerCol(QComp *pC, QCtx *pX, sqlite3_str *pInner, const char **azCol,
                       QVar **apVar, int *pnCol, const EdnValue *pVar, const char *zWhat) {
  int i;
  QVar *pV;
  for (i = 0; i < *pnCol; i++) if (strcmp(azCol[i], pVar->u.s.z) == 0) return i;
  pV = qcVarFind(pX, pVar->u.s.z);
  if (pV == NULL || pV->zExpr == NULL) {
    qcErr(pC, pVar, "unbound variable %s in %s", pVar->u.s.z, zWhat);
    return -1;
  }
  sqlite3_str_appendf(pInner, "%s%s AS v%d", *pnCol ? ", " : "", pV->zExpr, *pnCol);
  {
    /* The inner DISTINCT's key is Clojure's =: a ref and a long of one
    ** number are one element, 1 and 1.0 two (k: the storage class). */
    char *zTag = qcVarSetTag(pV);
    if (zTag == NULL) { qcNoMem(pC); return -1; }
    sqlite3_str_appendf(pInner, ", %s AS t%d", zTag, *pnCol);
    sqlite3_free(zTag);
    if (qcVarMixesKinds(pV)) sqlite3_str_appendf(pInner, ", typeof(%s) AS k%d", pV->zExpr, *pnCol);
  }
  azCol[*pnCol] = pVar->u.s.z;
  apVar[*pnCol] = pV;
  return (*pnCol)++;
}

/* min, max, (min n), (max n) of inner column k, a value whose type only
** the row knows: its own tag beside the set key's as rK, for the
** comparison class (mentat_one_class), where a ref is no number (peer
** fault B13, as > has it); once per column. */
static void qcaRawTag(sqlite3_str *pInner, const QFindElem *pE, const QVar *pV, int k,
                      unsigned char *abRaw) {
  const QcaAgg *p = qcaAggFind(pE);
  if (p == NULL || pV->vt != VT_NONE || pV->zTag == NULL || abRaw[k]) return;
  if (p->eKind != QCA_EXTREME && !(p->eKind == QCA_JSON && (p->iMode == 1 || p->iMode == 2))) return;
  sqlite3_str_appendf(pInner, ", %s AS r%d", pV->zTag, k);
  abRaw[k] = 1;
}

/* Inner column k (of type vt) as a numeric aggregate's argument: as it is,
** or checked value by value (mentat_num, failing at zPlace, an SQL
** literal) when its type is unknown. */
static void qcaAggValue(sqlite3_str *pOut, int k, ValueType vt, const char *zPlace) {
  if (vt == VT_NONE) sqlite3_str_appendf(pOut, "mentat_num(v%d, t%d, %s)", k, k, zPlace);
  else sqlite3_str_appendf(pOut, "v%d", k);
}

/* The parameter of n in (min n ?x) and the like: the constant, or the
** value of a scalar :in variable ((max ?k ?x)), checked when bound. 0 with
** pC->rc set on error. */
static int qcaAggCount(QComp *pC, QCtx *pX, const QFindElem *pE) {
  const EdnValue *pN = pE->pAggN;
  QVar *pV;
  const QParam *pSrc;
  if (!ednIsVar(pN)) return qcParam(pC, pN, -1, -1, -1, QV_INT, VT_LONG);
  pV = qcVarFind(pX, pN->u.s.z);
  if (pV == NULL || pV->nParam != 1) {
    qcErr(pC, pN, "%s in %s must be an integer or a scalar :in variable", pN->u.s.z, pE->zName);
    return 0;
  }
  pSrc = &pC->aParam[pV->aParam[0] - 1];
  return qcParam(pC, pE->pForm, pSrc->iInput, pSrc->i1, pSrc->i2, QV_AGG_N, VT_LONG);
}

/* The value-count plan of HOW IT WORKS, when pQ has that shape: 1 and the
** SQL in pSql, else 0 and nothing written. */
static int qcaValueCounts(QComp *pC, QueryPlan *pPlan, sqlite3_str *pSql) {
  const QQuery *pQ = pC->pQ;
  const QClause *pCl;
  const QFindElem *pVal = NULL, *pCount = NULL;
  const Attr *pAttr;
  const EdnValue *pA;
  int i;
  if (pC->zAsOfTx || pC->zSinceTx || pC->bHistory || pC->nSrc > 1 || pC->nCte || pQ->eFind != FIND_REL || pQ->nFind != 2 || pQ->nWith
      || pQ->nOrder || pQ->nWhere != 1 || pQ->nIn > 1) {
    return 0;
  }
  if (pQ->nIn == 1 && pQ->aIn[0].kind != QIN_SRC) return 0;
  pCl = pQ->aWhere[0];
  /* (one source only: the query's own, as $) */
  if (pCl->kind != QC_PATTERN || pCl->nArg != 3) return 0;
  for (i = 0; i < 2; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    if (pE->kind == QFIND_VAR) pVal = pE;
    else if (qcaIs(pE, QCA_COUNT) && pE->pAggN == NULL) pCount = pE;
  }
  if (pVal == NULL || pCount == NULL) return 0;
  pA = pCl->aArg[1];
  if (qpVarName(pCl->aArg[0]) == NULL || qpVarName(pCl->aArg[2]) == NULL || pA->type != EDN_KEYWORD
      || strcmp(qpVarName(pCl->aArg[0]), pCount->pVar->u.s.z) != 0
      || strcmp(qpVarName(pCl->aArg[2]), pVal->pVar->u.s.z) != 0
      || strcmp(pCount->pVar->u.s.z, pVal->pVar->u.s.z) == 0) {
    return 0;
  }
  pAttr = schemaAttrByIdent(pC->pSchema, pA->u.s.z, pA->u.s.n);
  /* (fulltext values are rowids: their counts would be by rowid) */
  if (pAttr == NULL || pAttr->bFulltext || !qcAttrValueIndexed(pAttr)) return 0;
  for (i = 0; i < 2; i++) {
    QPlanCol *pCol = &pPlan->aCol[i];
    pCol->iCol = i;
    pCol->iTagCol = -1;
    pCol->vt = &pQ->aFind[i] == pVal ? pAttr->type : VT_LONG;
  }
  sqlite3_str_appendf(pSql,
      "WITH RECURSIVE vs(v) AS (SELECT (SELECT min(v) FROM datoms WHERE a = %lld)"
      " UNION ALL SELECT (SELECT min(v) FROM datoms WHERE a = %lld AND v > vs.v)"
      " FROM vs WHERE vs.v IS NOT NULL) SELECT ", pAttr->e, pAttr->e);
  for (i = 0; i < 2; i++) {
    if (&pQ->aFind[i] == pVal) {
      sqlite3_str_appendf(pSql, "%sv AS c%d", i ? ", " : "", i);
    } else {
      sqlite3_str_appendf(pSql, "%s(SELECT count(*) FROM datoms WHERE a = %lld AND v = vs.v) AS c%d",
                          i ? ", " : "", pAttr->e, i);
    }
  }
  sqlite3_str_appendall(pSql, " FROM vs WHERE v IS NOT NULL");
  return 1;
}

/* Is aggregate pAgg a min over pV, a column that may hold nil, to be nil
** once a row holds it (compare puts nil first; SQL's min skips NULL)?
** Not beside (the ?x): that rides on SQLite's bare column of the one min
** row, which a nil cannot be, so min keeps the least other value there
** (README, "A nil a variable holds"). */
static int qcaMinNil(const QQuery *pQ, const QcaAgg *pAgg, const QVar *pV) {
  int i;
  if (pAgg->eKind != QCA_EXTREME || strcmp(pAgg->zSql, "min") != 0 || qcVarNotNull(pV)) return 0;
  for (i = 0; i < pQ->nFind; i++) if (qcaIs(&pQ->aFind[i], QCA_THE)) return 0;
  return 1;
}

/* Aggregate element pE over inner column k (variable pV) as an SQL
** aggregate into pOut, setting pCol's type or kind. SQLite code. */
static int qcaAggExpr(QComp *pC, QCtx *pX, const QFindElem *pE, int k, const QVar *pV,
                      QPlanCol *pCol, sqlite3_str *pOuter) {
  const QcaAgg *pAgg = qcaAggFind(pE);
  char *zPlace = NULL;    /* numeric aggregates: the element's place */
  ValueType vt = pV->vt;
  int bMinNil = 0;        /* min of a column that may hold nil */
  if (pAgg == NULL || pAgg->eKind == QCA_THE) {
    qcErr(pC, pE->pForm, "unsupported aggregate %s", pE->zAgg);
    goto done;
  }
  if (pAgg->bNumeric) {
    /* Datomic's numeric aggregates throw on other values; SQLite's would
    ** read a string as 0 and an instant as its microseconds. A known
    ** type is checked here, an unknown one value by value. */
    if (vt != VT_NONE && vt != VT_LONG && vt != VT_DOUBLE && vt != VT_REF && !qcNoRows(pX)) {
      qcErr(pC, pE->pForm, "%s: %s is a %s, not a number", pE->zName, qpVarName(pE->pVar), qcVtName(vt));
      goto done;
    }
    zPlace = qcPlaceSql(pE->pForm, pE->zName);
    if (zPlace == NULL) { qcNoMem(pC); goto done; }
  } else if (vt == VT_NONE && (pAgg->eKind == QCA_EXTREME
                               || (pAgg->eKind == QCA_JSON && (pAgg->iMode == 1 || pAgg->iMode == 2)))) {
    /* min, max, (min n), (max n) order by Clojure's compare, which throws
    ** across types: checked value by value when the type is unknown */
    zPlace = qcPlaceSql(pE->pForm, pE->zName);
    if (zPlace == NULL) { qcNoMem(pC); goto done; }
  }
  bMinNil = qcaMinNil(pC->pQ, pAgg, pV);
  switch (pAgg->eKind) {
    case QCA_COUNT:
      /* Every row counts: a NULL is nil, a value Clojure's count counts
      ** (count(*) reads no column, as a hand-written GROUP BY would). */
      sqlite3_str_appendall(pOuter, "count(*)");
      pCol->vt = VT_LONG;
      break;
    case QCA_COUNT_DISTINCT:
      /* One key per value under Clojure's = (mentat_set_key): true is
      ** not 1, ":x/y" not :x/y, 1 not 1.0; nil (NULL, which count(DISTINCT)
      ** skips) is one more value. */
      if (qcVarMixesKinds(pV)) sqlite3_str_appendf(pOuter, "count(DISTINCT mentat_set_key(v%d, t%d))", k, k);
      else sqlite3_str_appendf(pOuter, "count(DISTINCT v%d)", k);
      if (!qcVarNotNull(pV)) sqlite3_str_appendf(pOuter, " + (sum(v%d IS NULL) > 0)", k);
      pCol->vt = VT_LONG;
      break;
    case QCA_SUM:
      sqlite3_str_appendf(pOuter, "mentat_sum(");
      qcaAggValue(pOuter, k, vt, zPlace);
      sqlite3_str_appendf(pOuter, ", %s)", zPlace);
      pCol->vt = vt == VT_DOUBLE ? VT_DOUBLE : VT_LONG;
      break;
    case QCA_NUMERIC:
      /* the place: a NaN result is an error there (qfResultDouble) */
      sqlite3_str_appendf(pOuter, "%s(", pAgg->zSql);
      qcaAggValue(pOuter, k, vt, zPlace);
      sqlite3_str_appendf(pOuter, ", %s)", zPlace);
      pCol->vt = pAgg->vtOut != VT_NONE ? pAgg->vtOut : vt == VT_LONG ? VT_LONG : VT_DOUBLE;
      break;
    case QCA_EXTREME:
      /* SQLite's min/max take their argument's collation. Values of
      ** unknown type must share a comparison class (mentat_one_class). */
      if (zPlace) sqlite3_str_appendf(pOuter, "coalesce(mentat_one_class(%c%d, %s), ",
                                      pV->zTag ? 'r' : 't', k, zPlace);
      /* max skips nil, which is below every value */
      if (bMinNil) sqlite3_str_appendf(pOuter, "(CASE WHEN sum(v%d IS NULL) > 0 THEN NULL ELSE ", k);
      if (vt == VT_UUID || vt == VT_TUPLE) {
        /* uuids (alone or in tuples) by Java's UUID order, keywords in
        ** tuples by Clojure's: by the key, the value back from it */
        sqlite3_str_appendf(pOuter, "%s(%s(%s(v%d)))", vt == VT_UUID ? "mentat_uuid_ord"
                            : "mentat_tuple_unord", pAgg->zSql, vt == VT_UUID ? "mentat_uuid_ord"
                            : "mentat_tuple_ord", k);
      } else if (vt == VT_NONE) {
        /* one class per group (mentat_one_class): its tags say uuid or tuple */
        sqlite3_str_appendf(pOuter, "(CASE min(t%d) WHEN %d THEN mentat_uuid_ord(%s(mentat_uuid_ord(v%d)))"
                            " WHEN %d THEN mentat_tuple_unord(%s(mentat_tuple_ord(v%d))) ELSE %s(v%d%s) END)",
                            k, TAG_UUID, pAgg->zSql, k, TAG_TUPLE, pAgg->zSql, k, pAgg->zSql, k,
                            qcOrderCollate(vt));
      } else {
        sqlite3_str_appendf(pOuter, "%s(v%d%s)", pAgg->zSql, k, qcOrderCollate(vt));
      }
      if (bMinNil) sqlite3_str_appendall(pOuter, " END)");
      if (zPlace) sqlite3_str_appendall(pOuter, ")");
      pCol->vt = vt;
      break;
    case QCA_RAND:
      /* The element's index keeps two (rand ?x) apart (SQLite computes
      ** an aggregate written twice alike once); of unknown type the value
      ** and its tag come from one draw (below, in qcaAggregateSets). */
      if (vt == VT_NONE) {
        sqlite3_str_appendf(pOuter, "mentat_unpack(mentat_rand_one(v%d, t%d, %d), 0)", k, k,
                            (int)(pE - pC->pQ->aFind));
      } else {
        sqlite3_str_appendf(pOuter, "mentat_rand_one(v%d, %d)", k, (int)(pE - pC->pQ->aFind));
      }
      pCol->vt = vt;
      break;
    default: {  /* QCA_JSON */
      int iP = 0;
      if (pAgg->iMode < 0) {
        sqlite3_str_appendf(pOuter, "mentat_agg_json(%d, v%d, t%d)", pAgg->iMode, k, k);
      } else {
        iP = pE->pAggN ? qcaAggCount(pC, pX, pE) : 0;
        if (pC->rc) goto done;
        if (zPlace) sqlite3_str_appendf(pOuter, "coalesce(mentat_one_class(%c%d, %s), ",
                                        pV->zTag ? 'r' : 't', k, zPlace);
        if (iP) sqlite3_str_appendf(pOuter, "mentat_agg_json(%d, v%d, t%d, ?%d)", pAgg->iMode, k, k, iP);
        else sqlite3_str_appendf(pOuter, "mentat_agg_json(%d, v%d, t%d, 1)", pAgg->iMode, k, k);
        if (zPlace) sqlite3_str_appendall(pOuter, ")");
      }
      pCol->kind = QCOL_JSON;
      break;
    }
  }
done:
  sqlite3_free(zPlace);
  return pC->rc;
}

/* See query_compile_scope.h: " ORDER BY " first when bFirst, then zExpr
** (type vt, tag zTag or NULL) as qcUuidOrd and qcOrderCollate order it,
** DESC when bDesc. */
int qcOrderTerm(sqlite3_str *pSql, int bFirst, const char *zExpr, ValueType vt, const char *zTag,
                int bDesc) {
  char *zKey = qcUuidOrd(zExpr, vt, zTag);
  const char *zDir = bDesc ? " DESC" : "";
  if (zKey == NULL) return SQLITE_NOMEM;
  sqlite3_str_appendall(pSql, bFirst ? " ORDER BY " : ", ");
  /* a ref only the row's tag says is one is no number in an ordering
  ** (peer fault B13): a class of its own, first, as a ref's tag is the
  ** least in Mentat's order of a value by its type tag, then its value */
  if (vt == VT_NONE && zTag) sqlite3_str_appendf(pSql, "(%s IS NOT %d)%s, ", zTag, TAG_REF, zDir);
  sqlite3_str_appendf(pSql, "%s%s%s", zKey, qcOrderCollate(vt), zDir);
  sqlite3_free(zKey);
  return SQLITE_OK;
}

/* The :order of an aggregate query: by find columns that are not
** aggregates (c<N> of the outer SELECT). */
static void qcaOrderBy(QComp *pC, const QueryPlan *pPlan, sqlite3_str *pSql) {
  const QQuery *pQ = pC->pQ;
  int i;
  for (i = 0; i < pQ->nOrder && pC->rc == SQLITE_OK; i++) {
    int j, iCol = -1, iTagCol = -1;
    ValueType vtOrder = VT_NONE;
    char zCol[24], zTag[24];
    for (j = 0; j < pQ->nFind; j++) {
      if (pQ->aFind[j].kind != QFIND_AGG
          && strcmp(pQ->aFind[j].pVar->u.s.z, pQ->aOrder[i].pVar->u.s.z) == 0) {
        iCol = pPlan->aCol[j].iCol;
        iTagCol = pPlan->aCol[j].iTagCol;
        vtOrder = pPlan->aCol[j].vt;
      }
    }
    if (iCol < 0) {
      /* (qcdOrderCheck refuses it first) */
      qcErr(pC, pQ->aOrder[i].pVar, "%s in :order must be a variable of :find",
            pQ->aOrder[i].pVar->u.s.z);
      break;
    }
    /* uuids (alone, in tuples, of unknown type) by Java's UUID order */
    sqlite3_snprintf(sizeof zCol, zCol, "c%d", iCol);
    sqlite3_snprintf(sizeof zTag, zTag, "c%d", iTagCol);
    if (qcOrderTerm(pSql, i == 0, zCol, vtOrder, iTagCol >= 0 ? zTag : NULL, pQ->aOrder[i].bDesc)) {
      qcNoMem(pC);
      break;
    }
  }
}

/* The general plan of HOW IT WORKS. */
static int qcaAggregateSets(QComp *pC, QCtx *pX, QueryPlan *pPlan, sqlite3_str *pSql) {
  const QQuery *pQ = pC->pQ;
  sqlite3_str *pInner = sqlite3_str_new(NULL);
  sqlite3_str *pOuter = sqlite3_str_new(NULL);
  sqlite3_str *pGroup = sqlite3_str_new(NULL);
  const char **azCol = NULL;
  QVar **apVar = NULL;
  int *aiElem = NULL;
  unsigned char *abRaw = NULL;   /* inner column k has its own tag rK */
  int nCol = 0, nOut = 0, nGroup = 0, nExtreme = 0, bThe = 0, i;
  int nMax = pQ->nFind + pQ->nWith + 1;
  char *zBody = NULL;

  azCol = sqlite3_malloc64(sizeof(char*) * nMax);
  apVar = sqlite3_malloc64(sizeof(QVar*) * nMax);
  aiElem = sqlite3_malloc64(sizeof(int) * nMax);
  abRaw = sqlite3_malloc64((size_t)nMax);
  if (azCol == NULL || apVar == NULL || aiElem == NULL || abRaw == NULL) { qcNoMem(pC); goto cleanup; }
  memset(abRaw, 0, (size_t)nMax);

  for (i = 0; i < pQ->nFind && pC->rc == SQLITE_OK; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    aiElem[i] = qcaInnerCol(pC, pX, pInner, azCol, apVar, &nCol, pE->pVar, ":find");
    if (aiElem[i] >= 0) qcaRawTag(pInner, pE, apVar[aiElem[i]], aiElem[i], abRaw);
    if (qcaIs(pE, QCA_EXTREME)) nExtreme++;
    if (qcaIs(pE, QCA_THE)) bThe = 1;
  }
  for (i = 0; i < pQ->nWith && pC->rc == SQLITE_OK; i++) {
    qcaInnerCol(pC, pX, pInner, azCol, apVar, &nCol, pQ->aWith[i], ":with");
  }
  if (pC->rc) goto cleanup;
  if (bThe && nExtreme != 1) {
    qcErr(pC, pQ->pForm, "(the ?x) needs exactly one (min ?y) or (max ?y) beside it");
    goto cleanup;
  }

  for (i = 0; i < pQ->nFind && pC->rc == SQLITE_OK; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    QPlanCol *pCol = &pPlan->aCol[i];
    int k = aiElem[i];
    const QVar *pV = apVar[k];
    ValueType vt = pV->vt;
    if (nOut) sqlite3_str_appendall(pOuter, ", ");
    pCol->iTagCol = -1;
    if (pE->kind != QFIND_AGG || qcaIs(pE, QCA_THE)) {
      sqlite3_str_appendf(pOuter, "v%d AS c%d", k, nOut);
      pCol->iCol = nOut++;
      pCol->vt = vt;
      if (vt == VT_NONE) {
        sqlite3_str_appendf(pOuter, ", t%d AS c%d", k, nOut);
        pCol->iTagCol = nOut++;
      }
      if (pE->kind == QFIND_PULL && qcPullColumn(pC, pE, pCol)) break;
      if (pE->kind != QFIND_AGG) {
        sqlite3_str_appendf(pGroup, "%sv%d", nGroup++ ? ", " : "", k);
        if (vt == VT_NONE) sqlite3_str_appendf(pGroup, ", t%d", k);
        if (qcVarMixesKinds(pV)) sqlite3_str_appendf(pGroup, ", k%d", k);
      }
      continue;
    }
    pCol->iCol = nOut;
    if (qcaAggExpr(pC, pX, pE, k, pV, pCol, pOuter)) break;
    sqlite3_str_appendf(pOuter, " AS c%d", nOut++);
    if (pCol->kind == QCOL_VALUE && pCol->vt == VT_NONE && qcaIs(pE, QCA_RAND)) {
      /* (rand ?x) of unknown type: the same aggregate as the value, which
      ** SQLite computes once (one draw: the value's own tag) */
      sqlite3_str_appendf(pOuter, ", mentat_unpack(mentat_rand_one(v%d, t%d, %d), 1) AS c%d", k, k,
                          i, nOut);
      pCol->iTagCol = nOut++;
    } else if (pCol->kind == QCOL_VALUE && pCol->vt == VT_NONE) {
      /* min/max over mixed types: a bare column gives the tag of the row
      ** holding the extreme value. */
      sqlite3_str_appendf(pOuter, ", t%d AS c%d", k, nOut);
      pCol->iTagCol = nOut++;
    }
  }
  if (pC->rc) goto cleanup;
  zBody = qcBody(pX);
  if (zBody == NULL) { qcNoMem(pC); goto cleanup; }
  if (pC->nCte && sqlite3_str_errcode(pC->pCte) != SQLITE_OK) qcNoMem(pC);
  if (pC->nCte && pC->rc == SQLITE_OK) {
    sqlite3_str_appendf(pSql, "WITH %s%s ", pC->bRecursive ? "RECURSIVE " : "",
                        sqlite3_str_value(pC->pCte));
  }
  sqlite3_str_appendf(pSql, "SELECT %s FROM (SELECT %s%s%s)",
                      sqlite3_str_value(pOuter),
                      qcwRowsUnique(pX, azCol, nCol) ? "" : "DISTINCT ",
                      sqlite3_str_value(pInner), zBody);
  if (nGroup) sqlite3_str_appendf(pSql, " GROUP BY %s", sqlite3_str_value(pGroup));
  else sqlite3_str_appendall(pSql, " HAVING count(*) > 0");
  qcaOrderBy(pC, pPlan, pSql);
cleanup:
  if (pC->rc == SQLITE_OK && (sqlite3_str_errcode(pInner) || sqlite3_str_errcode(pOuter)
                              || sqlite3_str_errcode(pGroup))) {
    qcNoMem(pC);
  }
  sqlite3_free(zBody);
  sqlite3_free(sqlite3_str_finish(pInner));
  sqlite3_free(sqlite3_str_finish(pOuter));
  sqlite3_free(sqlite3_str_finish(pGroup));
  sqlite3_free(azCol);
  sqlite3_free(apVar);
  sqlite3_free(aiElem);
  sqlite3_free(abRaw);
  return pC->rc;
}

int qcaAggregate(QComp *pC, QCtx *pX, QueryPlan *pPlan, sqlite3_str *pSql) {
  if (qcaValueCounts(pC, pPlan, pSql)) return pC->rc;
  return qcaAggregateSets(pC, pX, pPlan, pSql);
}
