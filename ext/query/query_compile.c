/*
** query_compile.c — the compile driver: a query's text and the shape of its
** inputs → a QueryPlan (one SQL statement, its parameters, its result
** columns). It parses, binds the :in inputs, compiles :where into the
** query's scope (query_compile_where.c), then writes the SELECT: the find
** columns, :with, :order, :limit and :offset, asOf/since and history, or
** hands aggregate finds to query_compile_agg.c. The result is
** `SELECT DISTINCT` over the find (and :with) variables — Datalog results
** are sets, and DISTINCT streams, so LIMIT 1 costs one row — unless the
** schema proves the rows distinct (qcwRowsUnique). Calls only what
** query_compile_scope.h declares; exports only qCompile (query_compile.h).
*/
#include <string.h>
#include "query_compile.h"
#include "query_compile_scope.h"

/* True if the scalar :in variable pVar names a pull pattern of :find (it
** then binds no query variable). */
static int qcdIsPatternVar(const QQuery *pQ, const EdnValue *pVar) {
  int i;
  for (i = 0; i < pQ->nFind; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    if (pE->kind == QFIND_PULL && pE->pPattern->type == EDN_SYMBOL
        && ednIsSymbol(pVar, pE->pPattern->u.s.z)) {
      return 1;
    }
  }
  return 0;
}

/* A deep copy of p into pArena (rule sets outlive the call's inputs). */
static EdnValue *qcdCopy(EdnArena *pArena, const EdnValue *p, int iDepth) {
  EdnValue *pNew;
  int i;
  if (iDepth > EDN_MAX_DEPTH) return NULL;
  pNew = ednArenaAlloc(pArena, sizeof(EdnValue));
  if (pNew == NULL) return NULL;
  *pNew = *p;
  switch (p->type) {
    case EDN_STRING: case EDN_KEYWORD: case EDN_SYMBOL:
      pNew->u.s.z = ednArenaStrdup(pArena, p->u.s.z, p->u.s.n);
      if (pNew->u.s.z == NULL) return NULL;
      break;
    case EDN_LIST: case EDN_VECTOR: case EDN_MAP: case EDN_SET:
      pNew->u.c.a = ednArenaAlloc(pArena, sizeof(EdnValue*) * (p->u.c.n ? p->u.c.n : 1));
      if (pNew->u.c.a == NULL) return NULL;
      for (i = 0; i < p->u.c.n; i++) {
        pNew->u.c.a[i] = qcdCopy(pArena, p->u.c.a[i], iDepth + 1);
        if (pNew->u.c.a[i] == NULL) return NULL;
      }
      break;
    case EDN_TAGGED:
      pNew->u.t.zTag = ednArenaStrdup(pArena, p->u.t.zTag, (int)strlen(p->u.t.zTag));
      pNew->u.t.p = qcdCopy(pArena, p->u.t.p, iDepth + 1);
      if (pNew->u.t.zTag == NULL || pNew->u.t.p == NULL) return NULL;
      break;
    default:
      break;
  }
  return pNew;
}

static int qcdInputs(QCtx *pX) {
  QComp *pC = pX->pC;
  const QQuery *pQ = pC->pQ;
  int i, nNeed = 0, iInput = 0;
  int nHave = pC->pOpts ? pC->pOpts->nInput : 0;
  for (i = 0; i < pQ->nIn; i++) if (pQ->aIn[i].kind != QIN_SRC) nNeed++;
  if (nNeed != nHave) {
    return qcErr(pC, NULL, "query has %d :in binding(s) but \"inputs\" has %d value(s)",
                 nNeed, nHave);
  }
  for (i = 0; i < pQ->nIn && pC->rc == SQLITE_OK; i++) {
    const QIn *pIn = &pQ->aIn[i];
    const EdnValue *pVal;
    char zWhat[32];
    if (pIn->kind == QIN_SRC) continue;   /* checked by qcsInit */
    if (pIn->kind == QIN_PATTERN
        || (pIn->kind == QIN_BIND && pIn->bind.kind == QB_SCALAR
            && qcdIsPatternVar(pQ, pIn->bind.aVar[0]))) {
      iInput++;      /* a pull pattern, read by the run (qcPullColumn) */
      continue;
    }
    pVal = pC->pOpts->aInput[iInput];
    sqlite3_snprintf(sizeof zWhat, zWhat, "input %d", iInput + 1);
    if (pIn->kind == QIN_RULES) {
      EdnValue *pCopy = qcdCopy(pC->pArena, pVal, 0);
      if (pCopy == NULL) return qcNoMem(pC);
      if (pC->bRules) return qcErr(pC, pIn->pForm, "only one rule set (%%) is supported");
      pC->rc = qpParseRules(pC->pArena, pCopy, &pC->rules, pC->pzErr);
      pC->bRules = 1;
    } else {
      pC->pAt = pIn->pForm;
      qcbBind(pX, &pIn->bind, pVal, iInput, zWhat);
    }
    iInput++;
  }
  return pC->rc;
}

/* A column of the select list: value and, when the type is not static, tag. */
/* With bDistinct the select list is a set key (qcSetTag): the tag of a
** ref reads as a long's and the storage class tells 1 from 1.0, so
** DISTINCT keeps Clojure's = (a ref and a long of one number are one
** element, 1 and 1.0 two). */
static void qcdSelectVar(QComp *pC, sqlite3_str *pSel, int *pnCol, const QVar *pV,
                         QPlanCol *pCol, int bDistinct) {
  if (*pnCol) sqlite3_str_appendall(pSel, ", ");
  sqlite3_str_appendf(pSel, "%s AS c%d", pV->zExpr, *pnCol);
  pCol->iCol = (*pnCol)++;
  pCol->vt = pV->vt;
  pCol->iTagCol = -1;
  if (pV->vt == VT_NONE) {
    if (bDistinct && pV->zTag) {
      char *zSet = qcSetTag(pV->zTag);
      if (zSet == NULL) { qcNoMem(pC); return; }
      sqlite3_str_appendf(pSel, ", %s AS c%d", zSet, *pnCol);
      sqlite3_free(zSet);
    } else {
      sqlite3_str_appendf(pSel, ", %s AS c%d", pV->zTag ? pV->zTag : "NULL", *pnCol);
    }
    pCol->iTagCol = (*pnCol)++;
  }
  if (bDistinct && qcVarMixesKinds(pV)) {
    sqlite3_str_appendf(pSel, ", typeof(%s) AS c%d", pV->zExpr, (*pnCol)++);
  }
}

static int qcdFindVar(QComp *pC, QCtx *pX, const EdnValue *pVar, const char *zWhat,
                      QVar **ppV) {
  QVar *pV = qcVarFind(pX, pVar->u.s.z);
  if (pV == NULL || pV->zExpr == NULL) {
    return qcErr(pC, pVar, "unbound variable %s in %s", pVar->u.s.z, zWhat);
  }
  *ppV = pV;
  return SQLITE_OK;
}

/* :limit / :offset as a parameter. */
static int qcdLimitParam(QComp *pC, QCtx *pX, const EdnValue *p) {
  if (p->type == EDN_INT) return qcParam(pC, p, -1, -1, -1, QV_INT, VT_LONG);
  {
    QVar *pV = qcVarFind(pX, p->u.s.z);
    QParam *pSrc;
    if (pV == NULL || pV->nParam != 1) {
      qcErr(pC, p, "%s must be an integer or a scalar :in variable", p->u.s.z);
      return 0;
    }
    pSrc = &pC->aParam[pV->aParam[0] - 1];
    return qcParam(pC, NULL, pSrc->iInput, pSrc->i1, pSrc->i2, QV_INT, VT_LONG);
  }
}

static int qcdHasAggregate(const QQuery *pQ) {
  int i;
  for (i = 0; i < pQ->nFind; i++) if (pQ->aFind[i].kind == QFIND_AGG) return 1;
  return 0;
}

/* Refuses a result of nCol columns past the connection's
** SQLITE_LIMIT_COLUMN (SQLite's default 2000 when it is not known), naming
** the :find element whose columns pass it, instead of handing SQLite a
** statement it refuses as "too many columns in result set". A find
** variable of no static type takes a tag column too, :with ones count, and
** a set key may add a storage-class column. iFind < 0: the elements alone
** (one column each), the error at the first past the limit. 1 with the
** error set. */
static int qcdColumnLimit(QComp *pC, int nCol, int iFind) {
  const QQuery *pQ = pC->pQ;
  int nMax = pC->pOpts && pC->pOpts->pDb ? sqlite3_limit(pC->pOpts->pDb, SQLITE_LIMIT_COLUMN, -1)
                                          : 2000;
  if (pC->rc != SQLITE_OK) return 1;
  if (nCol <= nMax) return 0;
  if (iFind < 0) iFind = nMax;
  qcErr(pC, iFind < pQ->nFind ? pQ->aFind[iFind].pForm : NULL, "the query's %d :find and :with "
        "elements take %d or more result columns (each a value, with its type tag or its kind of "
        "number where the type does not say); SQLite returns at most %d columns "
        "(SQLITE_LIMIT_COLUMN)", pQ->nFind + pQ->nWith,
        nCol, nMax);
  return 1;
}

/* The finished statement zSql (NULL: out of memory) against what SQLite's
** parser may be given (qcExpandedText): SQLite copies a CTE into every
** place that names it, and its prepare does not poll the interrupt. */
static void qcdParseBudget(QComp *pC, const char *zSql) {
  sqlite3_int64 nParse = zSql ? qcExpandedText(zSql, QC_EXPAND_CAP) : -1;
  if (nParse < 0) {
    qcNoMem(pC);
  } else if (nParse > QC_EXPAND_CAP) {
    qcErr(pC, NULL, "the query's rules expand to more than %lld bytes of SQL inside SQLite, "
          "the most the compiler gives its parser: SQLite copies a rule computed once as a "
          "common table expression into every place that names it, so rules with several "
          "definitions that each call the next double the copies at every level",
          QC_EXPAND_CAP);
  }
}

/* Each :order variable is bound and a variable of :find (a plain or a
** pulled one, not an aggregate's): a row holds one value of each, while
** any other variable may have had several values for the row, of which
** SQLite would order by an arbitrary one. */
static int qcdOrderCheck(QComp *pC, QCtx *pX) {
  const QQuery *pQ = pC->pQ;
  int i, j;
  for (i = 0; i < pQ->nOrder; i++) {
    const EdnValue *pVar = pQ->aOrder[i].pVar;
    QVar *pV = NULL;
    int bFind = 0;
    if (qcdFindVar(pC, pX, pVar, ":order", &pV)) return pC->rc;
    for (j = 0; j < pQ->nFind; j++) {
      const QFindElem *pE = &pQ->aFind[j];
      if (pE->kind != QFIND_AGG && strcmp(pE->pVar->u.s.z, pVar->u.s.z) == 0) bFind = 1;
    }
    if (!bFind) return qcErr(pC, pVar, "%s in :order must be a variable of :find", pVar->u.s.z);
  }
  return SQLITE_OK;
}

/* The query's :order as " ORDER BY ...": uuids (alone, in tuples, of
** unknown type) by Java's UUID order (qcUuidOrd), keywords by Clojure's. */
static void qcdOrderBy(QComp *pC, QCtx *pX, sqlite3_str *pSql) {
  const QQuery *pQ = pC->pQ;
  int i;
  for (i = 0; i < pQ->nOrder && pC->rc == SQLITE_OK; i++) {
    QVar *pV = NULL;
    if (qcdFindVar(pC, pX, pQ->aOrder[i].pVar, ":order", &pV)) break;
    if (qcOrderTerm(pSql, i == 0, pV->zExpr, pV->vt, pV->zTag, pQ->aOrder[i].bDesc)) {
      qcNoMem(pC);
      break;
    }
  }
}

/* One row at most: the scope holds data patterns only (no function, rule,
** not or or: nothing that joins another table or evaluates an expression
** that could fail on a later candidate row) and the schema's functional
** dependencies fix every pattern's datom from the constants and
** single-valued inputs alone (qcwRowsUnique from no variable), so the join
** has one combination of datoms at most. */
static int qcdAtMostOne(const QComp *pC, const QCtx *pX) {
  const QQuery *pQ = pC->pQ;
  int i;
  if (pC->nCte || qcdHasAggregate(pQ)) return 0;
  for (i = 0; i < pQ->nWhere; i++) {
    if (pQ->aWhere[i]->kind != QC_PATTERN) return 0;
  }
  return pQ->nWhere > 0 && qcwRowsUnique(pX, NULL, 0);
}

static int qcdAssemble(QComp *pC, QCtx *pX, QueryPlan *pPlan) {
  const QQuery *pQ = pC->pQ;
  sqlite3_str *pSql = sqlite3_str_new(NULL);
  int i, nCol = 0, bDistinct = 0;
  char *zBody = NULL;

  pPlan->eFind = pQ->eFind;
  pPlan->nCol = pQ->nFind;
  pPlan->aCol = ednArenaAlloc(&pPlan->arena, sizeof(QPlanCol) * pQ->nFind);
  if (pPlan->aCol == NULL) { qcNoMem(pC); goto cleanup; }
  memset(pPlan->aCol, 0, sizeof(QPlanCol) * pQ->nFind);
  for (i = 0; i < pQ->nFind; i++) {
    QPlanCol *pCol = &pPlan->aCol[i];
    pCol->zName = pQ->aFind[i].zName;
    if (pQ->eKeys != QK_NONE) {
      pCol->zKey = ednArenaAlloc(&pPlan->arena, strlen(pQ->azKey[i]) + 2);
      if (pCol->zKey == NULL) { qcNoMem(pC); goto cleanup; }
      sqlite3_snprintf((int)strlen(pQ->azKey[i]) + 2, pCol->zKey, "%s%s",
                       pQ->eKeys == QK_KEYS ? ":" : "", pQ->azKey[i]);
      pPlan->bKeys = 1;
    }
  }
  pPlan->bSingleAgg = pQ->eFind == FIND_REL && pQ->nFind == 1 && pQ->aFind[0].kind == QFIND_AGG;
  if (qcdColumnLimit(pC, pQ->nFind + pQ->nWith, -1)) goto cleanup;
  if (qcdOrderCheck(pC, pX)) goto cleanup;

  if (qcdHasAggregate(pQ)) {
    qcaAggregate(pC, pX, pPlan, pSql);
    goto finish;
  }
  if (pC->nCte && sqlite3_str_errcode(pC->pCte) != SQLITE_OK) qcNoMem(pC);
  if (pC->nCte && pC->rc == SQLITE_OK) {
    sqlite3_str_appendf(pSql, "WITH %s%s ", pC->bRecursive ? "RECURSIVE " : "",
                        sqlite3_str_value(pC->pCte));
  }
  {
    /* DISTINCT only when rows could repeat: it costs a temp b-tree. */
    const char *azVar[64];
    int nVar = 0, bUnique;
    for (i = 0; i < pQ->nFind && nVar < 64; i++) azVar[nVar++] = pQ->aFind[i].pVar->u.s.z;
    for (i = 0; i < pQ->nWith && nVar < 64; i++) azVar[nVar++] = pQ->aWith[i]->u.s.z;
    bUnique = nVar < 64 && qcwRowsUnique(pX, azVar, nVar);
    pPlan->bAtMostOne = qcdAtMostOne(pC, pX);
    sqlite3_str_appendall(pSql, bUnique ? "SELECT " : "SELECT DISTINCT ");
    bDistinct = !bUnique;
  }
  for (i = 0; i < pQ->nFind && qcPoll(pC) == SQLITE_OK; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    QVar *pV = NULL;
    if (qcdFindVar(pC, pX, pE->pVar, ":find", &pV)) break;
    if (pE->kind == QFIND_PULL) {
      /* Pull takes entity ids, idents and lookup refs (Datomic): an input
      ** no place typed is read as an entity; a value of another type is an
      ** error naming the binding (query_run.c checks values of unknown
      ** type row by row). */
      if (pV->nParam) qcTypeParams(pX, pV, VT_REF, 0);
      if (pE->pForm->type == EDN_LIST && pE->pForm->u.c.n == 4 && qpIsSrc(pE->pForm->u.c.a[1])
          && !ednIsSymbol(pE->pForm->u.c.a[1], "$")) {
        qcErr(pC, pE->pForm->u.c.a[1], "pull reads $ only: (pull %s ...) is not supported",
              pE->pForm->u.c.a[1]->u.s.z);
        break;
      }
      if (pV->bEntitySrc == 2) {
        qcErr(pC, pE->pForm, "pull %s: %s is an entity of source %s, another store; pull reads $"
              " (read that store's attributes with patterns on %s)", pE->pVar->u.s.z,
              pE->pVar->u.s.z, pC->aSrc[pV->iEntitySrc].zName, pC->aSrc[pV->iEntitySrc].zName);
        break;
      }
      if (pV->vt != VT_NONE && pV->vt != VT_REF && pV->vt != VT_LONG && pV->vt != VT_KEYWORD
          && !qcNoRows(pX)) {
        qcErr(pC, pE->pVar, "pull %s: %s is a %s, not an entity id, ident or lookup ref",
              pE->pVar->u.s.z, pE->pVar->u.s.z, qcVtName(pV->vt));
        break;
      }
    }
    qcdSelectVar(pC, pSql, &nCol, pV, &pPlan->aCol[i], bDistinct);
    if (qcdColumnLimit(pC, nCol, i)) break;
    if (pE->kind == QFIND_PULL && qcPullColumn(pC, pE, &pPlan->aCol[i])) break;
  }
  for (i = 0; i < pQ->nWith && pC->rc == SQLITE_OK; i++) {
    QVar *pV = NULL;
    QPlanCol tmp;
    if (qcdFindVar(pC, pX, pQ->aWith[i], ":with", &pV)) break;
    qcdSelectVar(pC, pSql, &nCol, pV, &tmp, bDistinct);
    if (qcdColumnLimit(pC, nCol, pQ->nFind)) break;
  }
  if (pC->rc) goto cleanup;
  zBody = qcBody(pX);
  if (zBody == NULL) { qcNoMem(pC); goto cleanup; }
  sqlite3_str_appendall(pSql, zBody);
  qcdOrderBy(pC, pX, pSql);
finish:
  if (pC->rc) goto cleanup;
  if (pQ->pLimit) {
    int iP = qcdLimitParam(pC, pX, pQ->pLimit);
    sqlite3_str_appendf(pSql, " LIMIT ?%d", iP);
  } else if ((pQ->eFind == FIND_TUPLE || pQ->eFind == FIND_SCALAR)
             && qcRaises(sqlite3_str_value(pSql))) {
    /* a failing function must meet every row, not only the first */
    pPlan->bDrainOne = 1;
  } else if (pQ->eFind == FIND_TUPLE || pQ->eFind == FIND_SCALAR) {
    sqlite3_str_appendall(pSql, " LIMIT 1");
  } else if (pQ->pOffset) {
    sqlite3_str_appendall(pSql, " LIMIT -1");
  }
  if (pQ->pOffset) {
    int iP = qcdLimitParam(pC, pX, pQ->pOffset);
    sqlite3_str_appendf(pSql, " OFFSET ?%d", iP);
  }
cleanup:
  sqlite3_free(zBody);
  if (pC->rc == SQLITE_OK) {
    pPlan->zSql = sqlite3_str_finish(pSql);
    qcdParseBudget(pC, pPlan->zSql);
  } else {
    sqlite3_free(sqlite3_str_finish(pSql));
  }
  return pC->rc;
}

int qCompile(Schema *pSchema, const char *zQuery, int nQuery, const QueryOpts *pOpts,
             QueryPlan **ppPlan, char **pzErr) {
  QueryPlan *pPlan;
  QQuery *pQ = NULL;
  QComp c;
  QCtx x;
  int rc, i;
  *ppPlan = NULL;
  pPlan = sqlite3_malloc64(sizeof(QueryPlan));
  if (pPlan == NULL) return SQLITE_NOMEM;
  memset(pPlan, 0, sizeof *pPlan);
  ednArenaInit(&pPlan->arena);
  rc = qpParse(&pPlan->arena, zQuery, nQuery, &pQ, pzErr);
  if (rc != SQLITE_OK) {
    qPlanFree(pPlan);
    return rc;
  }
  memset(&c, 0, sizeof c);
  c.pQ = pQ;
  c.pSchema = pSchema;
  c.pOpts = pOpts;
  c.pArena = &pPlan->arena;
  c.pzErr = pzErr;
  c.pCte = sqlite3_str_new(NULL);
  /* SQLite's default when the connection is not known (the tests). */
  c.nMaxCompound = pOpts && pOpts->pDb ? sqlite3_limit(pOpts->pDb, SQLITE_LIMIT_COMPOUND_SELECT, -1) : 500;
  c.nMaxText = QC_TEXT_CAP;
  if (pOpts && pOpts->pDb && sqlite3_limit(pOpts->pDb, SQLITE_LIMIT_SQL_LENGTH, -1) < c.nMaxText) {
    c.nMaxText = sqlite3_limit(pOpts->pDb, SQLITE_LIMIT_SQL_LENGTH, -1);
  }
  qcCtxInit(&x, &c, NULL);
  c.pMain = &x;
  for (i = 0; i < pQ->nIn; i++) if (pQ->aIn[i].kind != QIN_SRC) pPlan->nInputNeeded++;
  c.iSrc = -1;
  qcsInit(&c);     /* $ and the opts' sources, with their asOf/since/history */
  if (c.rc == SQLITE_OK) qcxExists(&c, pQ);
  if (c.rc == SQLITE_OK && qcdInputs(&x) == SQLITE_OK && qcwClauses(&x, pQ->aWhere, pQ->nWhere, 0) == SQLITE_OK) {
    qcdAssemble(&c, &x, pPlan);
  }
  if (c.rc == SQLITE_OK && sqlite3_str_errcode(c.pCte)) c.rc = SQLITE_NOMEM;
  rc = c.rc;
  qcCtxReset(&x);
  sqlite3_free(c.aShare);
  sqlite3_free(sqlite3_str_finish(c.pCte));
  qcsFree(&c);
  if (rc == SQLITE_OK && c.pHostFns && sqlite3_str_errcode(c.pHostFns)) rc = SQLITE_NOMEM;
  if (rc != SQLITE_OK) {
    sqlite3_free(c.aParam);
    sqlite3_free(sqlite3_str_finish(c.pHostFns));
    qPlanFree(pPlan);
    return rc;
  }
  pPlan->aParam = c.aParam;
  pPlan->nParam = c.nParam;
  pPlan->zHostFns = c.pHostFns ? sqlite3_str_finish(c.pHostFns) : NULL;
  qPlanColDirect(pPlan);
  *ppPlan = pPlan;
  return SQLITE_OK;
}
