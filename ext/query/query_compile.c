/*
** query_compile.c — a parsed Datalog query → one SQL statement on the store
** (data patterns, inputs, find columns, :order/:limit/:offset, asOf/since
** and history); predicates and functions are in query_compile_pred.c,
** not/or in query_compile_clause.c, rules in query_compile_rules.c,
** aggregates in query_compile_agg.c.
**
** HOW IT WORKS (see also query_compile.h)
** Each data pattern is a `datoms dN` alias. Attribute constants are
** INLINED as integers (`dN.a = 65537`) so the per-attribute partial indexes
** `idx_auto_avet_<a> ... WHERE a = <a>` match; an unknown attribute makes the
** pattern empty (`0` in WHERE), never an error. Every other constant and
** every input is a parameter. A variable met again becomes an equality; when
** one side is the BLOB-declared `v` and the other an INTEGER column (e, tx),
** the integer side is written `+dI.e` — with plain `dJ.v = dI.e` SQLite
** applies numeric affinity to v and cannot use the (a, v, e) index
** (BENCH.md "affinity trap") — and the reverse term `dI.e = dJ.v` is added
** so the planner may drive the join from either side. Patterns are emitted
** most selective first (constant entity, then constant value of an indexed
** attribute, then input-bound ones). When every pattern is reached through
** an index from what precedes it (qcPatternLinked), the scope joins them
** with CROSS JOIN in that order, so statistics (stale after a new managed
** index, absent on a small store) cannot make SQLite drive from a whole
** attribute; otherwise they are plain inner joins the planner orders. The
** result is `SELECT DISTINCT` over the find (and :with) variables —
** Datalog results are sets, and DISTINCT streams, so LIMIT 1 costs one
** row — unless the schema proves the rows distinct (qcRowsUnique).
*/
#include <string.h>
#include <stdarg.h>
#include "query_compile.h"
#include "pull.h"

/* ------------------------------------------------------------ helpers */

int qcNoMem(QComp *pC) {
  if (pC->rc == SQLITE_OK) pC->rc = SQLITE_NOMEM;
  return pC->rc;
}

int qcErr(QComp *pC, const EdnValue *p, const char *zFmt, ...) {
  va_list ap;
  int rc;
  if (pC->rc != SQLITE_OK) return pC->rc;
  if (p == NULL || p->line <= 0) p = pC->pAt;
  va_start(ap, zFmt);
  rc = ednErrorV(pC->pzErr, "", p ? p->line : 0, p ? p->col : 0, zFmt, ap);
  va_end(ap);
  if (rc == SQLITE_NOMEM) return qcNoMem(pC);
  pC->rc = rc;
  return pC->rc;
}

/* The input (counted as "inputs" counts them) that holds the pull pattern
** named pSym: a plain-symbol :in (Datomic's pattern-var) or a scalar ?var
** binding of that name; -1 when :in has none. */
static int qcPatternInput(const QQuery *pQ, const EdnValue *pSym) {
  int i, iInput = 0;
  for (i = 0; i < pQ->nIn; i++) {
    const QIn *pIn = &pQ->aIn[i];
    if (pIn->kind == QIN_SRC) continue;
    if ((pIn->kind == QIN_PATTERN && ednIsSymbol(pIn->pForm, pSym->u.s.z))
        || (pIn->kind == QIN_BIND && pIn->bind.kind == QB_SCALAR
            && ednIsSymbol(pIn->bind.aVar[0], pSym->u.s.z))) {
      return iInput;
    }
    iInput++;
  }
  return -1;
}

/* True if the scalar :in variable pVar names a pull pattern of :find (it
** then binds no query variable). */
static int qcIsPatternVar(const QQuery *pQ, const EdnValue *pVar) {
  int i;
  for (i = 0; i < pQ->nFind; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    if (pE->kind == QF_PULL && pE->pPattern->type == EDN_SYMBOL
        && ednIsSymbol(pVar, pE->pPattern->u.s.z)) {
      return 1;
    }
  }
  return 0;
}

int qcPullColumn(QComp *pC, const QFindElem *pE, QPlanCol *pCol) {
  char *zErr = NULL;
  int rc;
  if (pC->bHistory) {
    /* Datomic's history database serves queries and datoms, not entity
    ** or pull: there is no one map of an entity across time. */
    return qcErr(pC, pE->pForm, "pull is not supported on the history database");
  }
  if (pE->pPattern->type == EDN_SYMBOL) {
    /* A pattern given as an input: checked when each run binds it
    ** (qRunOpen), since a cached plan serves other patterns of its shape. */
    int iInput = qcPatternInput(pC->pQ, pE->pPattern);
    if (iInput < 0) {
      return qcErr(pC, pE->pPattern, "pull pattern %s is not an :in input", pE->pPattern->u.s.z);
    }
    pCol->kind = QCOL_PULL;
    pCol->bPatInput = 1;
    pCol->iPatInput = iInput;
    pCol->pPullVar = pE->pVar;
    return SQLITE_OK;
  }
  rc = pullValidate(pC->pSchema, pE->pPattern, &zErr);
  if (rc != SQLITE_OK) {
    sqlite3_free(*pC->pzErr);
    *pC->pzErr = zErr;
    pC->rc = rc;
    return rc;
  }
  pCol->kind = QCOL_PULL;
  pCol->pPattern = pE->pPattern;
  pCol->pPullVar = pE->pVar;
  return SQLITE_OK;
}

const char *qcKwCollate(ValueType vt) {
  return vt == VT_KEYWORD || vt == VT_NONE ? " COLLATE mentat_kw" : "";
}

void qcWhere(QCtx *pX, char *zTerm) {
  if (zTerm == NULL) { qcNoMem(pX->pC); return; }
  if (pX->nWhere++) sqlite3_str_appendall(pX->pWhere, " AND ");
  sqlite3_str_appendall(pX->pWhere, zTerm);
  sqlite3_free(zTerm);
}

void qcFrom(QCtx *pX, char *zItem) {
  if (zItem == NULL) { qcNoMem(pX->pC); return; }
  if (pX->nFrom++) sqlite3_str_appendall(pX->pFrom, ", ");
  sqlite3_str_appendall(pX->pFrom, zItem);
  sqlite3_free(zItem);
}

int qcParam(QComp *pC, const EdnValue *pConst, int iInput, int i1, int i2,
            QConv eConv, ValueType vt) {
  QParam *pP;
  if (pC->rc) return 0;
  if (pC->nParam >= 32000) {
    qcErr(pC, NULL, "query has too many values (more than 32000 parameters)");
    return 0;
  }
  if (pC->nParam == pC->nParamAlloc) {
    int nNew = pC->nParamAlloc ? pC->nParamAlloc * 2 : 16;
    QParam *aNew = sqlite3_realloc64(pC->aParam, sizeof(QParam) * nNew);
    if (aNew == NULL) { qcNoMem(pC); return 0; }
    pC->aParam = aNew;
    pC->nParamAlloc = nNew;
  }
  pP = &pC->aParam[pC->nParam++];
  pP->pConst = pConst;
  pP->iInput = iInput;
  pP->i1 = i1;
  pP->i2 = i2;
  pP->eConv = eConv;
  pP->vt = vt;
  return pC->nParam;
}

void qcCtxInit(QCtx *pX, QComp *pC, QCtx *pParent) {
  memset(pX, 0, sizeof *pX);
  pX->pC = pC;
  pX->pParent = pParent;
  pX->nVisible = -1;
  pX->pFrom = sqlite3_str_new(NULL);
  pX->pWhere = sqlite3_str_new(NULL);
}

void qcCtxReset(QCtx *pX) {
  int i;
  for (i = 0; i < pX->nVar; i++) {
    sqlite3_free(pX->aVar[i].zExpr);
    sqlite3_free(pX->aVar[i].zTag);
    sqlite3_free(pX->aVar[i].zInList);
    sqlite3_free(pX->aVar[i].zInMore);
    sqlite3_free(pX->aVar[i].aParam);
  }
  sqlite3_free(pX->aVar);
  sqlite3_free(pX->aKey);
  sqlite3_free(sqlite3_str_finish(pX->pFrom));
  sqlite3_free(sqlite3_str_finish(pX->pWhere));
  memset(pX, 0, sizeof *pX);
}

char *qcBody(QCtx *pX) {
  const char *zFrom = sqlite3_str_value(pX->pFrom);
  const char *zWhere = sqlite3_str_value(pX->pWhere);
  char *zJoin = NULL, *zRet;
  if (sqlite3_str_errcode(pX->pFrom) || sqlite3_str_errcode(pX->pWhere)) {
    qcNoMem(pX->pC);
    return NULL;
  }
  if (pX->nFrom > 1 && pX->nFrom == pX->nPatternFrom && !pX->bUnlinked) {
    /* Every pattern is reached through an index from what comes before it
    ** (qcClauses emits them bound-first): CROSS JOIN keeps that order, so
    ** stale or missing statistics (a new managed index, a small store
    ** without sqlite_stat1) cannot make SQLite drive from a whole
    ** attribute. The items are "datoms dN" / "timelined_transactions dN",
    ** so ", " only ever separates them. */
    sqlite3_str *pJ = sqlite3_str_new(NULL);
    const char *z = zFrom, *zSep;
    while ((zSep = strstr(z, ", ")) != NULL) {
      sqlite3_str_append(pJ, z, (int)(zSep - z));
      sqlite3_str_appendall(pJ, " CROSS JOIN ");
      z = zSep + 2;
    }
    sqlite3_str_appendall(pJ, z);
    zJoin = sqlite3_str_finish(pJ);
    if (zJoin == NULL) {
      qcNoMem(pX->pC);
      return NULL;
    }
    zFrom = zJoin;
  }
  zRet = sqlite3_mprintf("%s%s%s%s", pX->nFrom ? " FROM " : "", pX->nFrom ? zFrom : "",
                         pX->nWhere ? " WHERE " : "", pX->nWhere ? zWhere : "");
  sqlite3_free(zJoin);
  /* Callers may skip a NULL body (an or branch, a rule body): the failure
  ** must stop the compile, or the SQL silently loses that part. */
  if (zRet == NULL) qcNoMem(pX->pC);
  return zRet;
}

int qcTypeClass(ValueType vt) {
  switch (vt) {
    case VT_LONG: case VT_DOUBLE: case VT_REF: return 1;
    case VT_STRING: return 2;
    case VT_INSTANT: return 3;
    case VT_KEYWORD: return 4;
    case VT_BOOLEAN: return 5;
    case VT_UUID: return 6;
    default: return 0;
  }
}

const char *qcVtName(ValueType vt) {
  return vt == QVT_JSON ? "collection" : vtName(vt);
}

char *qcPlaceSql(const EdnValue *p, const char *zWhat) {
  return sqlite3_mprintf("'line %d col %d: %q'", p ? p->line : 0, p ? p->col : 0, zWhat);
}

char *qcVarTag(const QVar *pV) {
  if (pV->zTag) return sqlite3_mprintf("%s", pV->zTag);
  if (pV->vt == QVT_JSON) return sqlite3_mprintf("%d", TAG_JSON);
  if (pV->vt == VT_NONE) return sqlite3_mprintf("NULL");
  return sqlite3_mprintf("%d", vtTag(pV->vt));
}

QVar *qcVarFind(QCtx *pX, const char *zName) {
  int i;
  for (i = 0; i < pX->nVar; i++) {
    if (strcmp(pX->aVar[i].zName, zName) == 0) return &pX->aVar[i];
  }
  if (pX->pParent == NULL) return NULL;
  if (pX->nVisible >= 0) {
    for (i = 0; i < pX->nVisible; i++) {
      if (strcmp(pX->aVisible[i]->u.s.z, zName) == 0) break;
    }
    if (i == pX->nVisible) return NULL;
  }
  return qcVarFind(pX->pParent, zName);
}

static QVar *qcVarAdd(QCtx *pX, const char *zName) {
  QVar *pV;
  if (pX->nVar == pX->nVarAlloc) {
    int nNew = pX->nVarAlloc ? pX->nVarAlloc * 2 : 8;
    QVar *aNew = sqlite3_realloc64(pX->aVar, sizeof(QVar) * nNew);
    if (aNew == NULL) { qcNoMem(pX->pC); return NULL; }
    pX->aVar = aNew;
    pX->nVarAlloc = nNew;
  }
  pV = &pX->aVar[pX->nVar++];
  memset(pV, 0, sizeof *pV);
  pV->zName = zName;
  return pV;
}

/* Is z a plain column reference "dN.v" (so it can drive an index)? */
static int qcIsColumn(const char *z) {
  if (z == NULL || z[0] != 'd') return 0;
  z++;
  while (*z >= '0' && *z <= '9') z++;
  return z[0] == '.' && (strcmp(z, ".v") == 0 || strcmp(z, ".e") == 0 || strcmp(z, ".tx") == 0
                         || strcmp(z, ".a") == 0);
}

int qcVarNotNull(const QVar *pV) {
  return qcIsColumn(pV->zExpr);
}

int qcVarMixesKinds(const QVar *pV) {
  if (pV->vt == VT_NONE) return 1;
  return qcTypeClass(pV->vt) == 1 && (pV->bInMixed || pV->nFnDepth > 0);
}

/* Is one of a and b a double and the other a long or an entity id? */
static int qcNumKindsDiffer(ValueType a, ValueType b) {
  return qcTypeClass(a) == 1 && qcTypeClass(b) == 1 && (a == VT_DOUBLE) != (b == VT_DOUBLE);
}

/* The first typed place a variable meets types its lazy parameters. With
** bKeepKind (the place is not a typed attribute's value column, where a
** literal converts as the transactor converts it, but a second ground or a
** function result) a query constant keeps its kind of number: 1 is not
** 1.0, as Clojure's = has it. Returns 1 when one did, so the caller
** compares the kinds at run time. */
static int qcTypeParams(QCtx *pX, QVar *pV, ValueType vt, int bKeepKind) {
  int i, bKept = 0;
  if (vt == VT_NONE || vt == QVT_JSON) return 0;
  for (i = 0; i < pV->nParam; i++) {
    QParam *pP = &pX->pC->aParam[pV->aParam[i] - 1];
    if (pP->eConv == QV_NATURAL) {
      if (bKeepKind && pP->iInput < 0 && qcNumKindsDiffer(pP->vt, vt)) {
        bKept = 1;
        continue;
      }
      pP->eConv = QV_TYPED;
      pP->vt = vt;
    }
  }
  if (pV->nParam) {
    pV->vt = vt;
    sqlite3_free(pV->aParam);
    pV->aParam = NULL;
    pV->nParam = 0;
  }
  return bKept;
}

/* May a value of static type a equal one of static type b (Clojure's =)?
** The same type, or two kinds of number (a ref is an entity id, a long;
** long against double is settled by the storage class at run time).
** Collections (JSON) are left to the SQL comparison. */
static int qcVtsMayEqual(ValueType a, ValueType b) {
  if (a == b || a == QVT_JSON || b == QVT_JSON) return 1;
  return qcTypeClass(a) == 1 && qcTypeClass(b) == 1;
}

char *qcSetTag(const char *zTag) {
  return sqlite3_mprintf("(CASE WHEN %s = %d THEN %d ELSE %s END)", zTag, TAG_REF, TAG_NUMBER,
                         zTag);
}

char *qcVarSetTag(const QVar *pV) {
  if (pV->vt == VT_REF) return sqlite3_mprintf("%d", TAG_NUMBER);
  if (pV->zTag) return qcSetTag(pV->zTag);
  return qcVarTag(pV);
}

void qcSetColumns(QComp *pC, sqlite3_str *pOut, int bFirst, int j, const QVar *pV,
                  ValueType *pVt) {
  char *zTag = qcVarSetTag(pV);
  if (zTag == NULL) { qcNoMem(pC); return; }
  sqlite3_str_appendf(pOut, "%s%s AS c%d, %s AS t%d, typeof(%s) AS k%d", bFirst ? "" : ", ",
                      pV->zExpr, j, zTag, j, pV->zExpr, j);
  sqlite3_free(zTag);
  if (*pVt == (ValueType)-1) *pVt = pV->vt;
  else if (*pVt != pV->vt) *pVt = VT_NONE;
}

/* The storage class a number of static type vt has in SQL. */
static const char *qcNumClass(ValueType vt) {
  return vt == VT_DOUBLE ? "real" : "integer";
}

/* The tag term for a place of unknown type (its tag SQL zTag) that meets a
** value of static type vt: a ref value is an entity id, which is a long
** (Datomic's datoms hold refs as longs), so a long or a ref meets both. */
static char *qcTagIs(const char *zTag, ValueType vt) {
  if (vt == VT_LONG || vt == VT_REF) {
    return sqlite3_mprintf("%s IN (%d, %d)", zTag, TAG_REF, TAG_NUMBER);
  }
  return sqlite3_mprintf("%s = %d", zTag, vtTag(vt));
}

char *qcTagsMatch(const char *zTagA, const char *zTagB) {
  return sqlite3_mprintf("(%s = %s OR (%s IN (%d, %d) AND %s IN (%d, %d)))", zTagA, zTagB,
                         zTagA, TAG_REF, TAG_NUMBER, zTagB, TAG_REF, TAG_NUMBER);
}

/* The filters of the collections that bound pV before its first place
** (zInList, zInMore), on expression zExpr: "x IN (?1,?2) AND x IN (?3)".
** Two collection bindings of one variable give their intersection. */
static char *qcInTerms(const QVar *pV, const char *zExpr) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  const char *z = pV->zInMore;
  sqlite3_str_appendf(pOut, "%s IN (%s)", zExpr, pV->zInList);
  while (z) {
    const char *zEnd = strchr(z, '\x01');
    int n = zEnd ? (int)(zEnd - z) : (int)strlen(z);
    sqlite3_str_appendf(pOut, " AND %s IN (%.*s)", zExpr, n, z);
    z = zEnd ? zEnd + 1 : NULL;
  }
  return sqlite3_str_finish(pOut);
}

void qcBindVar(QCtx *pX, const char *zName, char *zExpr, ValueType vt, char *zTag,
               int bIntCol) {
  QVar *pV;
  /* A value of no static type always comes with its run-time tag; a NULL
  ** tag there is an allocation that failed (the value would print as
  ** null), not a value without one. */
  if (zExpr == NULL || pX->pC->rc || (vt == VT_NONE && zTag == NULL)) {
    if (zExpr == NULL || (vt == VT_NONE && zTag == NULL)) qcNoMem(pX->pC);
    sqlite3_free(zExpr);
    sqlite3_free(zTag);
    return;
  }
  pV = qcVarFind(pX, zName);
  if (pV == NULL) {
    pV = qcVarAdd(pX, zName);
    if (pV == NULL) { sqlite3_free(zExpr); sqlite3_free(zTag); return; }
    pV->zExpr = zExpr;
    pV->zTag = vt == VT_NONE ? zTag : NULL;
    if (vt != VT_NONE) sqlite3_free(zTag);
    pV->vt = vt;
    pV->bIntCol = (unsigned char)bIntCol;
    return;
  }
  if (pV->zInList && vt == VT_REF && pV->vt == VT_KEYWORD && pV->nParam && !pV->bInLookup) {
    /* A collection of keywords meets an entity place: the entities whose
    ** idents they are (through the index), the variable the keyword. */
    char *zKw = sqlite3_mprintf("(SELECT v FROM datoms WHERE a = %d AND e = %s AND"
                                " value_type_tag = %d)", ENTID_DB_IDENT, zExpr, TAG_KEYWORD);
    char *zIn = zKw ? qcInTerms(pV, "v") : NULL;
    if (zIn) {
      qcWhere(pX, sqlite3_mprintf("%s IN (SELECT e FROM datoms WHERE a = %d AND"
                                  " value_type_tag = %d AND %s)", zExpr, ENTID_DB_IDENT,
                                  TAG_KEYWORD, zIn));
    }
    if (zKw == NULL || zIn == NULL) qcNoMem(pX->pC);
    sqlite3_free(zIn);
    sqlite3_free(pV->zInList);
    sqlite3_free(pV->zInMore);
    pV->zInList = NULL;
    pV->zInMore = NULL;
    qcTypeParams(pX, pV, VT_KEYWORD, 0);
    pV->zExpr = zKw;
    pV->bIntCol = 0;
    sqlite3_free(zExpr);
    sqlite3_free(zTag);
    return;
  }
  if (pV->zInList) {
    /* A pending collection input meets its first place: an IN list on the
    ** column, so the column's index serves every element. */
    qcWhere(pX, qcInTerms(pV, zExpr));
    sqlite3_free(pV->zInList);
    sqlite3_free(pV->zInMore);
    pV->zInList = NULL;
    pV->zInMore = NULL;
    if (vt != VT_NONE) qcTypeParams(pX, pV, vt, 0);
    else if (zTag && pV->vt != VT_NONE) {
      qcWhere(pX, qcTagIs(zTag, pV->vt));
      /* numbers of one kind: 1.0 does not find a long 1 (Clojure's =) */
      if (qcTypeClass(pV->vt) == 1 && !pV->bInMixed) {
        qcWhere(pX, sqlite3_mprintf("typeof(%s) = '%s'", zExpr, qcNumClass(pV->vt)));
      }
    }
    pV->zExpr = zExpr;
    pV->bIntCol = (unsigned char)bIntCol;
    sqlite3_free(zTag);
    return;
  }
  if (vt == VT_REF && ((pV->vt == VT_KEYWORD && (pV->nParam || pV->bIdent))
                       || (pV->vt == VT_NONE && pV->zTag && pV->bIdent))) {
    /* A keyword input, or a keyword a rule call passed in, in an entity
    ** place is the entity whose ident it is, as Datomic reads an ident
    ** wherever an entity goes; the variable keeps the keyword, so a
    ** function or :find sees one reading per row. (A keyword a pattern
    ** bound is a value like any other: joins compare values, so a join
    ** never depends on which clause runs first.) */
    char *zId = qcIdentSql(pV->zExpr);
    if (zId == NULL) {
      qcNoMem(pX->pC);
    } else if (pV->vt == VT_KEYWORD) {
      qcWhere(pX, sqlite3_mprintf("%s = %s", zExpr, zId));
      if (pV->nParam) qcTypeParams(pX, pV, VT_KEYWORD, 0);
    } else {
      qcWhere(pX, sqlite3_mprintf("%s = (CASE %s WHEN %d THEN %s ELSE %s END)", zExpr, pV->zTag,
                                  TAG_KEYWORD, zId, pV->zExpr));
      qcWhere(pX, sqlite3_mprintf("(%s = %d OR (%s IN (%d, %d) AND typeof(%s) = 'integer'))",
                                  pV->zTag, TAG_KEYWORD, pV->zTag, TAG_REF, TAG_NUMBER,
                                  pV->zExpr));
    }
    sqlite3_free(zId);
    sqlite3_free(zExpr);
    sqlite3_free(zTag);
    return;
  }
  if (!bIntCol && pV->bIntCol) {
    qcWhere(pX, sqlite3_mprintf("%s = +%s", zExpr, pV->zExpr));
  } else if (bIntCol && !pV->bIntCol && qcIsColumn(pV->zExpr)) {
    /* The value column was bound first. Both directions are stated so the
    ** planner may drive from either side: `v = +e` keeps the value index
    ** usable (no affinity on v), `e = v` lets it look the entity up by e. */
    qcWhere(pX, sqlite3_mprintf("%s = +%s", pV->zExpr, zExpr));
    qcWhere(pX, sqlite3_mprintf("%s = %s", zExpr, pV->zExpr));
  } else {
    qcWhere(pX, sqlite3_mprintf("%s = %s", zExpr, pV->zExpr));
  }
  /* Types must agree too, and a long never equals a double (Datomic
  ** stores 1 and 1.0 as different values; SQLite's = would not tell). */
  if (vt != VT_NONE && pV->nParam) {
    if (qcTypeParams(pX, pV, vt, !qcIsColumn(zExpr))) {
      qcWhere(pX, sqlite3_mprintf("typeof(%s) = typeof(%s)", zExpr, pV->zExpr));
    }
  } else if (vt != VT_NONE && vt != QVT_JSON && pV->vt == VT_NONE && pV->zTag) {
    qcWhere(pX, qcTagIs(pV->zTag, vt));
    if (qcTypeClass(vt) == 1) {
      qcWhere(pX, sqlite3_mprintf("typeof(%s) = '%s'", pV->zExpr, qcNumClass(vt)));
    }
  } else if (vt == VT_NONE && zTag && pV->nParam && pV->vt == VT_LONG) {
    /* An integer input meeting a column of unknown type (a rule's output)
    ** before any typed place: an entid or a long, as SPEC 2.4 reads an
    ** integer in an entity place "including inside rules". */
    qcWhere(pX, sqlite3_mprintf("%s IN (%d, %d) AND typeof(%s) = 'integer'", zTag, TAG_REF,
                                TAG_NUMBER, zExpr));
  } else if (vt == VT_NONE && zTag && pV->vt != VT_NONE && pV->vt != QVT_JSON) {
    qcWhere(pX, qcTagIs(zTag, pV->vt));
    if (qcTypeClass(pV->vt) == 1) {
      qcWhere(pX, sqlite3_mprintf("typeof(%s) = '%s'", zExpr, qcNumClass(pV->vt)));
    }
  } else if (vt == VT_NONE && zTag && pV->zTag) {
    qcWhere(pX, qcTagsMatch(zTag, pV->zTag));
    qcWhere(pX, sqlite3_mprintf("typeof(%s) = typeof(%s)", zExpr, pV->zExpr));
  } else if (vt != VT_NONE && pV->vt != VT_NONE && !qcVtsMayEqual(vt, pV->vt)) {
    /* Both types are known and no value of one equals a value of the
    ** other under Clojure's = (true is not 1, ":x/y" is not :x/y, an
    ** #inst is not its microseconds): the join is empty, although SQLite
    ** stores the two alike. */
    qcWhere(pX, sqlite3_mprintf("0"));
  } else if (qcNumKindsDiffer(vt, pV->vt)) {
    qcWhere(pX, sqlite3_mprintf("typeof(%s) = typeof(%s)", zExpr, pV->zExpr));
  }
  sqlite3_free(zExpr);
  sqlite3_free(zTag);
}

/* A literal as an SQL parameter of its natural type (predicates, rules). */
char *qcConstExpr(QCtx *pX, const EdnValue *p, ValueType vt, ValueType *pvt) {
  int iP;
  char *z;
  ValueType nt = vt != VT_NONE ? vt : valueNaturalType(p);
  if (p->type == EDN_VECTOR || p->type == EDN_LIST || p->type == EDN_MAP
      || p->type == EDN_SET) {
    iP = qcParam(pX->pC, p, -1, -1, -1, QV_JSON, QVT_JSON);
    *pvt = QVT_JSON;
    z = iP ? sqlite3_mprintf("?%d", iP) : NULL;
    if (iP && z == NULL) qcNoMem(pX->pC);   /* NULL must not pass for a lost term */
    return z;
  }
  if (nt == VT_NONE) {
    qcErr(pX->pC, p, "unsupported constant %s", p->type == EDN_NIL ? "nil" : "value");
    return NULL;
  }
  iP = qcParam(pX->pC, p, -1, -1, -1, vt != VT_NONE ? QV_TYPED : QV_NATURAL, nt);
  *pvt = nt;
  z = iP ? sqlite3_mprintf("?%d", iP) : NULL;
  if (iP && z == NULL) qcNoMem(pX->pC);
  return z;
}

/* Function results nested deeper, or longer, than this are bound once
** through mentat_one (query_one.c) instead of being written into the
** next expression: SQLite's parser stack takes about 15 nested str calls,
** and a result used twice doubles the text at each step. Shallow ones
** stay inline, so short chains keep their plans. */
#define QC_FN_INLINE_DEPTH 3
#define QC_FN_INLINE_BYTES 1000

/* Is pV one of scope pX's own variables (not a parent's)? */
static int qcOwnVar(const QCtx *pX, const QVar *pV) {
  return pV >= pX->aVar && pV < pX->aVar + pX->nVar;
}

void qcFnResult(QCtx *pX, const char *zName) {
  int i;
  for (i = 0; i < pX->nVar; i++) {
    if (strcmp(pX->aVar[i].zName, zName) == 0) {
      pX->aVar[i].nFnDepth = pX->pC->nArgDepth + 1;
      return;
    }
  }
}

/* Moves function result pV into the FROM clause: mentat_one(expr, tag)
** fN, the variable then fN.value (and fN.tag). */
static void qcFnBindOnce(QCtx *pX, QVar *pV) {
  QComp *pC = pX->pC;
  char zAlias[24];
  char *zExpr, *zTag = NULL;
  sqlite3_snprintf(sizeof zAlias, zAlias, "f%d", ++pC->nAlias);
  if (pV->zTag) qcFrom(pX, sqlite3_mprintf("mentat_one(%s, %s) %s", pV->zExpr, pV->zTag, zAlias));
  else qcFrom(pX, sqlite3_mprintf("mentat_one(%s) %s", pV->zExpr, zAlias));
  zExpr = sqlite3_mprintf("%s.value", zAlias);
  if (pV->zTag) zTag = sqlite3_mprintf("%s.tag", zAlias);
  if (zExpr == NULL || (pV->zTag && zTag == NULL)) {
    sqlite3_free(zExpr);
    sqlite3_free(zTag);
    qcNoMem(pC);
    return;
  }
  sqlite3_free(pV->zExpr);
  pV->zExpr = zExpr;
  if (pV->zTag) {
    sqlite3_free(pV->zTag);
    pV->zTag = zTag;
  }
  pV->bIntCol = 0;
  pV->nFnDepth = 0;
}

char *qcTermExpr(QCtx *pX, const EdnValue *p, ValueType *pvt, char **pzTag,
                 const char *zWhat) {
  if (pzTag) *pzTag = NULL;
  if (ednIsVar(p)) {
    QVar *pV = qcVarFind(pX, p->u.s.z);
    if (pV == NULL || pV->zExpr == NULL) {
      const QRule *pR = pX->pC->pWhole;
      int i;
      for (i = 0; pR && i < pR->nHead; i++) {
        if (strcmp(pR->aHead[i]->u.s.z, p->u.s.z) == 0) break;
      }
      if (pR && i < pR->nHead) {
        /* A head variable the caller may well bind: say why it is not. */
        qcErr(pX->pC, p, "unbound variable %s in %s: rule %s is computed whole, without the"
              " caller's arguments (its recursion is not one self call handing its other places"
              " on unchanged), so its functions and predicates see only what its own clauses"
              " bind", p->u.s.z, zWhat, pR->zName);
      } else {
        qcErr(pX->pC, p, "unbound variable %s in %s", p->u.s.z, zWhat);
      }
      return NULL;
    }
    char *zExpr;
    if (pV->nFnDepth > 0 && strcmp(zWhat, "function") == 0) {
      if (qcOwnVar(pX, pV) && (pV->nFnDepth >= QC_FN_INLINE_DEPTH
                               || strlen(pV->zExpr) > QC_FN_INLINE_BYTES
                               || (pV->zTag && strlen(pV->zTag) > QC_FN_INLINE_BYTES))) {
        qcFnBindOnce(pX, pV);
        if (pX->pC->rc) return NULL;
      }
      if (pV->nFnDepth > pX->pC->nArgDepth) pX->pC->nArgDepth = pV->nFnDepth;
    }
    *pvt = pV->vt;
    /* NULL is also "unbound" and "no tag" to callers: out of memory must
    ** be said, or the clause would lose its binding or its type test. */
    if (pzTag && pV->zTag) {
      *pzTag = sqlite3_mprintf("%s", pV->zTag);
      if (*pzTag == NULL) { qcNoMem(pX->pC); return NULL; }
    }
    zExpr = sqlite3_mprintf("%s", pV->zExpr);
    if (zExpr == NULL) {
      qcNoMem(pX->pC);
      if (pzTag) { sqlite3_free(*pzTag); *pzTag = NULL; }
    }
    return zExpr;
  }
  if (qIsBlank(p)) {
    qcErr(pX->pC, p, "_ is not allowed in %s", zWhat);
    return NULL;
  }
  return qcConstExpr(pX, p, VT_NONE, pvt);
}

/* ------------------------------------------------------ entities */

/* Is p a lookup ref [:attr value]? */
static int qcIsLookupRef(const EdnValue *p) {
  return p->type == EDN_VECTOR && p->u.c.n == 2 && p->u.c.a[0]->type == EDN_KEYWORD;
}

char *qcLookupSql(QComp *pC, const char *zA, const char *zV, const char *zTag) {
  const char *zTable = NULL;
  char *zCond, *z;
  int bHistory = pC->bHistory;
  /* On the history database a unique value may have named several
  ** entities over time: the lookup names the one that holds it in the
  ** database of the same time without history (as of or since T). */
  pC->bHistory = 0;
  zCond = qcView(pC, "l", &zTable);
  pC->bHistory = bHistory;
  if (zCond == NULL) {
    qcNoMem(pC);
    return NULL;
  }
  z = sqlite3_mprintf("(SELECT l.e FROM %s l WHERE l.a = %s AND l.v = %s AND l.value_type_tag = %s%s%s)",
                      zTable, zA, zV, zTag, zCond[0] ? " AND " : "", zCond);
  sqlite3_free(zCond);
  if (z == NULL) qcNoMem(pC);
  return z;
}

/* The lookup ref constant pRef [:attr value] as SQL (qcLookupSql), "NULL"
** when its attribute is unknown (it names no entity). Not :db/unique: an
** error, as edn_t refuses it. */
static char *qcLookupConst(QComp *pC, const EdnValue *pRef) {
  const EdnValue *pK = pRef->u.c.a[0];
  const Attr *pA = schemaAttrByIdent(pC->pSchema, pK->u.s.z, pK->u.s.n);
  char zA[24], zV[16], zTag[8];
  int iP;
  if (pA == NULL) return sqlite3_mprintf("NULL");
  if (pA->eUnique == UNIQUE_NONE) {
    qcErr(pC, pRef, "lookup ref attribute %s is not :db/unique", pA->zIdent);
    return NULL;
  }
  iP = qcParam(pC, pRef->u.c.a[1], -1, -1, -1, QV_TYPED, pA->type);
  if (iP == 0) return NULL;
  sqlite3_snprintf(sizeof zA, zA, "%lld", pA->e);
  sqlite3_snprintf(sizeof zV, zV, "?%d", iP);
  sqlite3_snprintf(sizeof zTag, zTag, "%d", vtTag(pA->type));
  return qcLookupSql(pC, zA, zV, zTag);
}

int qcIsEntityLookup(QComp *pC, const EdnValue *p) {
  const Attr *pA;
  if (!qcIsLookupRef(p)) return 0;
  pA = schemaAttrByIdent(pC->pSchema, p->u.c.a[0]->u.s.z, p->u.c.a[0]->u.s.n);
  return pA != NULL && pA->eUnique != UNIQUE_NONE;
}

char *qcEntityLookupSql(QComp *pC, const EdnValue *p) {
  return qcLookupConst(pC, p);
}

static int qcTypeParams(QCtx *pX, QVar *pV, ValueType vt, int bKeepKind);

char *qcIdentSql(const char *zKw) {
  return sqlite3_mprintf("(SELECT e FROM datoms WHERE a = %d AND v = %s AND value_type_tag = %d)",
                         ENTID_DB_IDENT, zKw, TAG_KEYWORD);
}

char *qcEntityExpr(QCtx *pX, const EdnValue *p, const char *zFn) {
  QComp *pC = pX->pC;
  char *z;
  if (ednIsVar(p)) {
    QVar *pV = qcVarFind(pX, p->u.s.z);
    ValueType vt;
    char *zTag = NULL;
    /* An input no place has typed yet is read as an entity here, so a
    ** keyword input is an ident (SPEC 2.4: a value in an entity place). */
    if (pV && pV->zExpr && pV->nParam && pV->vt != VT_KEYWORD) qcTypeParams(pX, pV, VT_REF, 0);
    z = qcTermExpr(pX, p, &vt, &zTag, "function");
    if (z == NULL) return NULL;
    if (vt == VT_KEYWORD || (vt == VT_NONE && zTag)) {
      /* a keyword value names the entity whose ident it is */
      char *zId = qcIdentSql(z);
      char *zE = zId == NULL ? NULL : vt == VT_KEYWORD ? sqlite3_mprintf("%s", zId)
                 : sqlite3_mprintf("(CASE %s WHEN %d THEN %s ELSE %s END)", zTag, TAG_KEYWORD,
                                   zId, z);
      sqlite3_free(zId);
      sqlite3_free(z);
      z = zE;
    } else if (vt != VT_NONE && vt != VT_REF && vt != VT_LONG) {
      qcErr(pC, p, "%s: %s is a %s, not an entity id, ident or lookup ref", zFn, p->u.s.z,
            qcVtName(vt));
      sqlite3_free(z);
      z = NULL;
    }
    sqlite3_free(zTag);
    if (z == NULL) qcNoMem(pC);
    return z;
  }
  if (p->type == EDN_INT || p->type == EDN_KEYWORD) {
    int iP;
    if (p->type == EDN_KEYWORD && schemaEntid(pC->pSchema, p->u.s.z, p->u.s.n) == 0) {
      return sqlite3_mprintf("NULL");   /* no such ident: no entity */
    }
    iP = qcParam(pC, p, -1, -1, -1, QV_TYPED, VT_REF);
    return iP ? sqlite3_mprintf("?%d", iP) : NULL;
  }
  if (qcIsLookupRef(p)) return qcLookupConst(pC, p);
  if (qIsBlank(p)) {
    qcErr(pC, p, "_ is not allowed in %s", "function");
    return NULL;
  }
  {
    sqlite3_str *pTxt = sqlite3_str_new(NULL);
    char *zTxt;
    ednPrint(pTxt, p);
    zTxt = sqlite3_str_finish(pTxt);
    if (zTxt == NULL) {
      qcNoMem(pC);
      return NULL;
    }
    qcErr(pC, p, "%s: %s is not an entity id, ident or lookup ref", zFn, zTxt);
    sqlite3_free(zTxt);
    return NULL;
  }
}

/* ------------------------------------------------------ data patterns */

/* Constant pTerm in a place of type vt at column zCol (VT_NONE with zTag:
** the attribute is not known, so the constant matches only its natural
** type, peer fault B13). */
static void qcPlaceConst(QCtx *pX, const EdnValue *pTerm, const char *zCol, ValueType vt,
                         const char *zTag) {
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
    } else {
      qcWhere(pX, sqlite3_mprintf("0"));
    }
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

static void qcPlace(QCtx *pX, const EdnValue *pTerm, const char *zAlias, const char *zCol,
                    ValueType vt, const char *zTagCol, int bIntCol) {
  char *zExpr;
  if (pTerm == NULL || qIsBlank(pTerm)) return;
  zExpr = sqlite3_mprintf("%s.%s", zAlias, zCol);
  if (zExpr == NULL) { qcNoMem(pX->pC); return; }
  if (ednIsVar(pTerm)) {
    char *zTag;
    QVar *pV = qcVarFind(pX, pTerm->u.s.z);
    if (vt == VT_REF && pV && pV->zExpr && pV->vt == QVT_JSON && pV->nParam == 0) {
      /* a collection a function bound names no entity: an error, as
      ** get-else says of it, not a silent empty join */
      sqlite3_free(zExpr);
      qcErr(pX->pC, pTerm, "%s is a collection, not an entity id, ident or lookup ref",
            pTerm->u.s.z);
      return;
    }
    zTag = zTagCol ? sqlite3_mprintf("%s.%s", zAlias, zTagCol) : NULL;
    if (zTagCol && zTag == NULL) { sqlite3_free(zExpr); qcNoMem(pX->pC); return; }
    qcBindVar(pX, pTerm->u.s.z, zExpr, vt, zTag, bIntCol);
    return;
  }
  {
    char *zTag = zTagCol ? sqlite3_mprintf("%s.%s", zAlias, zTagCol) : NULL;
    qcPlaceConst(pX, pTerm, zExpr, vt, zTag);
    sqlite3_free(zTag);
  }
  sqlite3_free(zExpr);
}

/* How a place determines the datom: see QKey. */
static const char *qcKeyPlace(QCtx *pX, const EdnValue *p) {
  QVar *pV;
  if (p == NULL || qIsBlank(p)) return "";
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
static void qcRecordKey(QCtx *pX, const QClause *pCl, const Attr *pAttr) {
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
  pK->az[0] = qcKeyPlace(pX, pE);
  pK->az[1] = qcKeyPlace(pX, pA);
  pK->az[2] = qcKeyPlace(pX, pV);
  /* A fulltext variable is the text, which two values may share: it does
  ** not tell datoms apart. */
  if (pAttr && pAttr->bFulltext && pK->az[2] && pK->az[2][0]) pK->az[2] = "";
  pK->bHist = (unsigned char)bHist;
  if (bHist) {
    pK->az[3] = qcKeyPlace(pX, pCl->nArg > 3 ? pCl->aArg[3] : NULL);
    pK->az[4] = qcKeyPlace(pX, pCl->nArg > 4 ? pCl->aArg[4] : NULL);
  } else if (pCl->nArg > 3) {
    /* The tx of a current (or as-of live) datom is the datom's: it is
    ** determined once e, a and v are. */
    pK->az[3] = qcKeyPlace(pX, pCl->aArg[3]);
    if (pK->az[3] && pK->az[3][0] == 0) pK->az[3] = NULL;
  }
  if (pAttr && !bHist) {
    pK->bOne = !pAttr->bMany;
    pK->bUniq = pAttr->eUnique != UNIQUE_NONE;
  }
}

/* Is variable z in the set (or a constant: NULL)? */
static int qcInSet(const char *z, const char *const *az, int n) {
  int k;
  if (z == NULL) return 1;
  if (z[0] == 0) return 0;
  for (k = 0; k < n; k++) if (strcmp(az[k], z) == 0) return 1;
  return 0;
}

int qcRowsUnique(const QCtx *pX, const char *const *azVar, int nVar) {
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
      int bE = qcInSet(pK->az[0], azSet, nSet), bA = qcInSet(pK->az[1], azSet, nSet);
      int bV = qcInSet(pK->az[2], azSet, nSet);
      if (pK->bOne && bE && !bV && pK->az[2][0]) zAdd[0] = pK->az[2];
      if (pK->bUniq && bV && !bE && pK->az[0][0]) zAdd[0] = pK->az[0];
      if (!pK->bHist && bE && bA && bV && !qcInSet(pK->az[3], azSet, nSet)) zAdd[1] = pK->az[3];
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
      if (qcInSet(pK->az[j], azSet, nSet)) continue;
      /* A blank v of a cardinality-one attribute is fixed by e. */
      if (j == 2 && pK->bOne && pK->az[2][0] == 0 && qcInSet(pK->az[0], azSet, nSet)) continue;
      bUnique = 0;
    }
  }
  sqlite3_free(azSet);
  return bUnique;
}

/* Is a place bound before its pattern is placed: a constant, or a variable
** with an expression (a parameter, an IN list, an earlier column)? */
static int qcPlaceBound(QCtx *pX, const EdnValue *p) {
  QVar *pV;
  if (p == NULL || qIsBlank(p)) return 0;
  if (!ednIsVar(p)) return 1;
  pV = qcVarFind(pX, p->u.s.z);
  return pV != NULL && (pV->zExpr != NULL || pV->zInList != NULL);
}

/* Can pattern pCl be read through an index from what is bound before it:
** its entity (EAVT/AEVT), or its value where a value index serves it (the
** attribute is unique or indexed, or a ref read through VAET)? Patterns
** that are not (a scan of a whole attribute, or a value place without an
** index) leave the join order to SQLite. */
static int qcPatternLinked(QCtx *pX, const QClause *pCl) {
  const EdnValue *pE = pCl->aArg[0];
  const EdnValue *pA = pCl->nArg > 1 ? pCl->aArg[1] : NULL;
  const EdnValue *pV = pCl->nArg > 2 ? pCl->aArg[2] : NULL;
  const Attr *pAttr = NULL;
  if (qcPlaceBound(pX, pE)) return 1;
  if (pA && pA->type == EDN_KEYWORD) {
    pAttr = schemaAttrByIdent(pX->pC->pSchema, pA->u.s.z, pA->u.s.n);
  }
  if (pAttr == NULL || pX->pC->bHistory || (pAttr->bFulltext && pAttr->type == VT_STRING)) return 0;
  if (!qcPlaceBound(pX, pV)) return 0;
  return pAttr->eUnique != UNIQUE_NONE || pAttr->bIndex || pAttr->bValueIndex
         || pAttr->type == VT_REF;
}

int qcAttrValueIndexed(const Attr *pAttr) {
  return pAttr->bValueIndex
         || (pAttr->e >= PART_USER_START && !pAttr->bFulltext
             && (pAttr->eUnique || (pAttr->bIndex && pAttr->type == VT_REF)));
}

char *qcView(QComp *pC, const char *zAlias, const char **pzTable) {
  if (pC->bHistory) {
    /* The history database (Datomic's d/history): every assertion and
    ** retraction in the log, within asOf/since when given (SPEC §6). */
    *pzTable = "timelined_transactions";
    if (pC->eHist == 1) return sqlite3_mprintf("%s.timeline IS 0 AND %s.tx <= %s", zAlias, zAlias, pC->zHistTx);
    if (pC->eHist == 2) return sqlite3_mprintf("%s.timeline IS 0 AND %s.tx > %s", zAlias, zAlias, pC->zHistTx);
    return sqlite3_mprintf("%s.timeline IS 0", zAlias);
  }
  if (pC->eHist == 1) {
    /* As of T: the log's assertions up to T not retracted by T. The log's
    ** columns have the datoms' names; idx_transactions_aevt serves patterns
    ** bound by entity and the retraction probe, and a tuned store's
    ** idx_mentat_log_avet_<a> (store_index.c) those of indexed, unique and
    ** ref attributes bound by value (`dN.a = <a>` matches its WHERE). */
    *pzTable = "timelined_transactions";
    return sqlite3_mprintf(
        "%s.timeline IS 0 AND %s.added = 1 AND %s.tx <= %s AND NOT EXISTS (SELECT 1 FROM"
        " timelined_transactions r WHERE r.a = %s.a AND r.e = %s.e AND r.value_type_tag ="
        " %s.value_type_tag AND r.v = %s.v AND r.tx > %s.tx AND r.tx <= %s AND r.timeline IS 0)",
        zAlias, zAlias, zAlias, pC->zHistTx, zAlias, zAlias, zAlias, zAlias, zAlias,
        pC->zHistTx);
  }
  *pzTable = "datoms";
  /* Since T: a recent slice, read through the store's (a, tx, e) index
  ** (store_index.c). Without the hint SQLite guesses a quarter of the
  ** attribute for `tx > ?` and prefers the (a, e) index, which needs no
  ** DISTINCT sort but reads every datom of the attribute. */
  if (pC->eHist == 2) return sqlite3_mprintf("likelihood(%s.tx > %s, 0.01)", zAlias, pC->zHistTx);
  return sqlite3_mprintf("%s", "");
}

static int qcPattern(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  char zAlias[24];
  const EdnValue *pE = pCl->aArg[0];
  const EdnValue *pA = pCl->nArg > 1 ? pCl->aArg[1] : NULL;
  const EdnValue *pV = pCl->nArg > 2 ? pCl->aArg[2] : NULL;
  const EdnValue *pTx = pCl->nArg > 3 ? pCl->aArg[3] : NULL;
  const EdnValue *pAdded = pCl->nArg > 4 ? pCl->aArg[4] : NULL;
  const Attr *pAttr = NULL;
  int bEmpty = 0;

  if (pCl->pSrc && !ednIsSymbol(pCl->pSrc, "$")) {
    return qcErr(pC, pCl->pSrc, "unknown source %s: multiple sources are not supported (only $)", pCl->pSrc->u.s.z);
  }
  if (!qcPatternLinked(pX, pCl)) pX->bUnlinked = 1;
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

  if (pA && !qIsBlank(pA) && !ednIsVar(pA)) {
    if (pA->type == EDN_KEYWORD) {
      pAttr = schemaAttrByIdent(pC->pSchema, pA->u.s.z, pA->u.s.n);
    } else if (pA->type == EDN_INT) {
      pAttr = schemaAttr(pC->pSchema, pA->u.i);
    } else {
      return qcErr(pC, pA, "expected an attribute keyword in data pattern");
    }
    if (pAttr == NULL) bEmpty = 1;
    else qcWhere(pX, sqlite3_mprintf("%s.a = %lld", zAlias, pAttr->e));
    qcRecordKey(pX, pCl, pAttr);
  } else {
    qcRecordKey(pX, pCl, NULL);
    qcPlace(pX, pA, zAlias, "a", VT_REF, NULL, 1);
  }
  if (pAttr && pV && !qIsBlank(pV) && pC->eHist != 1 && !pC->bHistory
      && (!ednIsVar(pV) || (qcVarFind(pX, pV->u.s.z) && qcVarFind(pX, pV->u.s.z)->zExpr))) {
    /* The value is bound: state the flags that make the format's partial
    ** value indexes usable when no per-attribute index serves (format
    ** "Per-attribute value indexes"). Other :db/index attributes get
    ** idx_mentat_avet_<a> once the store is big enough to need it
    ** (store_index.c, Attr.bValueIndex); there the flags would steer
    ** SQLite to idx_datoms_avet, which reads every matching table row on
    ** SQLite 3.40, or make the covering index read them to test the flag. */
    int bAuto = qcAttrValueIndexed(pAttr);
    if (!bAuto && pAttr->type == VT_REF) {
      qcWhere(pX, sqlite3_mprintf("%s.index_vaet IS NOT 0", zAlias));
    } else if (!bAuto && pAttr->bIndex && !pAttr->bFulltext) {
      qcWhere(pX, sqlite3_mprintf("%s.index_avet IS NOT 0 AND %s.value_type_tag = %d",
                                  zAlias, zAlias, vtTag(pAttr->type)));
    }
  }
  qcPlace(pX, pE, zAlias, "e", VT_REF, NULL, 1);
  if (pV && pAttr && pAttr->bFulltext && pAttr->type == VT_STRING) {
    /* Fulltext values are rowids into fulltext_values. */
    if (ednIsVar(pV)) {
      qcBindVar(pX, pV->u.s.z,
                sqlite3_mprintf("(SELECT text FROM fulltext_values WHERE rowid = %s.v)", zAlias),
                VT_STRING, NULL, 0);
    } else if (!qIsBlank(pV)) {
      int iP = qcParam(pC, pV, -1, -1, -1, QV_TYPED, VT_STRING);
      qcWhere(pX, sqlite3_mprintf(
          "%s.v IN (SELECT rowid FROM fulltext_values WHERE text = ?%d)", zAlias, iP));
    }
  } else if (pAttr) {
    qcPlace(pX, pV, zAlias, "v", pAttr->type, NULL, 0);
  } else {
    qcPlace(pX, pV, zAlias, "v", VT_NONE, "value_type_tag", 0);
  }
  qcPlace(pX, pTx, zAlias, "tx", VT_REF, NULL, 1);
  if (pAdded && !qIsBlank(pAdded)) {
    /* The current, as-of and since databases hold assertions only: there
    ** added is true (SPEC §6). */
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
static int qcPatternScore(QCtx *pX, const QClause *pCl) {
  const EdnValue *pE = pCl->aArg[0];
  const EdnValue *pA = pCl->nArg > 1 ? pCl->aArg[1] : NULL;
  const EdnValue *pV = pCl->nArg > 2 ? pCl->aArg[2] : NULL;
  const Attr *pAttr = NULL;
  if (!ednIsVar(pE) && !qIsBlank(pE)) return 0;
  if (pA && pA->type == EDN_KEYWORD) {
    pAttr = schemaAttrByIdent(pX->pC->pSchema, pA->u.s.z, pA->u.s.n);
  }
  if (pV && !ednIsVar(pV) && !qIsBlank(pV)) {
    if (pAttr && (pAttr->eUnique || pAttr->bIndex)) return 1;
    return 3;
  }
  if (ednIsVar(pE) && qcVarFind(pX, pE->u.s.z)) return 2;
  if (pV && ednIsVar(pV) && qcVarFind(pX, pV->u.s.z)) return 2;
  return 4;
}

/* ------------------------------------------------------------- inputs */

int qInputLookupRef(const Schema *pSchema, const EdnValue *p) {
  const Attr *pA;
  if (p->type != EDN_VECTOR || p->u.c.n != 2 || p->u.c.a[0]->type != EDN_KEYWORD) return 0;
  if (p->u.c.a[1]->type != EDN_KEYWORD) return 1;
  pA = schemaAttrByIdent(pSchema, p->u.c.a[0]->u.s.z, p->u.c.a[0]->u.s.n);
  return pA != NULL && pA->eUnique != UNIQUE_NONE;
}

/* Is input leaf pVal (of input iInput; ground when < 0) a lookup ref? */
static int qcLeafIsLookup(QCtx *pX, const EdnValue *pVal, int iInput) {
  return iInput >= 0 && qInputLookupRef(pX->pC->pSchema, pVal);
}

/* An EDN leaf as SQL: lookup ref → subquery, collection → JSON, else a
** parameter typed lazily. *piParam gets the lazy parameter (or 0). A lookup
** ref that names no entity is NULL: callers keep such rows out, since it
** binds nothing. */
static char *qcLeafExpr(QCtx *pX, const EdnValue *pVal, const EdnValue *pConst, int iInput,
                        int i1, int i2, ValueType *pvt, int *piParam) {
  QComp *pC = pX->pC;
  int iP;
  *piParam = 0;
  /* An input [:attr v] names an entity; ground's value stays as written. */
  if (qcLeafIsLookup(pX, pVal, iInput)) {
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
static int qcVtMix(ValueType a, ValueType b) {
  if (a == b) return 1;
  /* Beside a lookup ref (an entity), a keyword can only be an ident: the
  ** entity place that types the variable reads it as one. */
  if ((a == VT_REF && b == VT_KEYWORD) || (a == VT_KEYWORD && b == VT_REF)) return 1;
  return (a == VT_LONG || a == VT_DOUBLE || a == VT_REF) && (b == VT_LONG || b == VT_DOUBLE || b == VT_REF);
}


static void qcBindScalar(QCtx *pX, const EdnValue *pVar, const EdnValue *pVal,
                         const EdnValue *pConst, int iInput, int i1, int i2) {
  ValueType vt;
  int iP;
  char *zExpr;
  QVar *pV;
  if (qIsBlank(pVar)) return;
  zExpr = qcLeafExpr(pX, pVal, pConst, iInput, i1, i2, &vt, &iP);
  if (zExpr == NULL) { qcNoMem(pX->pC); return; }
  if (qcLeafIsLookup(pX, pVal, iInput)) qcWhere(pX, sqlite3_mprintf("%s IS NOT NULL", zExpr));
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

static const EdnValue *qcElem(const EdnValue *p, int i) {
  return p->u.c.a[i];
}

static int qcIsColl(const EdnValue *p) {
  return p->type == EDN_VECTOR || p->type == EDN_LIST || p->type == EDN_SET;
}

/* The lazy parameters aP[0..nP) (taken over) of a collection that binds
** the already bound pV: typed with pV's lazy ones, or by its static type. */
static void qcAdoptParams(QCtx *pX, QVar *pV, int *aP, int nP) {
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

int qcBindValue(QCtx *pX, const QBinding *pB, const EdnValue *pVal, int iInput,
                const char *zWhat) {
  QComp *pC = pX->pC;
  int bConst = iInput < 0;
  int i, j;
  switch (pB->kind) {
    case QB_SCALAR:
      qcBindScalar(pX, pB->aVar[0], pVal, bConst ? pVal : NULL, iInput, -1, -1);
      break;
    case QB_TUPLE:
      if (!qcIsColl(pVal) || pVal->u.c.n != pB->nVar) {
        return qcErr(pC, NULL, "%s: expected a tuple of %d value(s)", zWhat, pB->nVar);
      }
      for (i = 0; i < pB->nVar; i++) {
        qcBindScalar(pX, pB->aVar[i], qcElem(pVal, i), bConst ? qcElem(pVal, i) : NULL,
                     iInput, i, -1);
      }
      break;
    case QB_COLL: {
      sqlite3_str *pList;
      QVar *pV;
      int nP = 0, bLookup = 0, bMixed = 0;
      int *aP;
      ValueType vt0 = VT_NONE;
      if (!qcIsColl(pVal)) return qcErr(pC, NULL, "%s: expected a collection", zWhat);
      if (qIsBlank(pB->aVar[0])) break;
      aP = sqlite3_malloc64(sizeof(int) * (pVal->u.c.n + 1));
      pList = sqlite3_str_new(NULL);
      if (aP == NULL) { sqlite3_free(sqlite3_str_finish(pList)); return qcNoMem(pC); }
      for (i = 0; i < pVal->u.c.n; i++) {
        ValueType vt;
        int iP;
        const EdnValue *pE = qcElem(pVal, i);
        char *z = qcLeafExpr(pX, pE, bConst ? pE : NULL, iInput, i, -1, &vt, &iP);
        if (z == NULL) { qcNoMem(pC); break; }
        if (i > 0 && vt != vt0) bMixed = 1;
        if (i == 0) vt0 = vt;
        else if (!qcVtMix(vt0, vt)) {
          qcErr(pC, NULL, "%s: value %d is a %s, value 1 a %s: a collection's values must have one type",
                zWhat, i + 1, qcVtName(vt), qcVtName(vt0));
          sqlite3_free(z);
          break;
        }
        if (iP) aP[nP++] = iP;
        if (qcLeafIsLookup(pX, pE, iInput)) bLookup = 1;
        if (i) sqlite3_str_appendchar(pList, 1, ',');
        sqlite3_str_appendall(pList, z);
        sqlite3_free(z);
      }
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
        qcAdoptParams(pX, pOld, aP, nP);
        break;
      }
      pV = qcVarAdd(pX, pB->aVar[0]->u.s.z);
      if (pV == NULL) { sqlite3_free(aP); sqlite3_free(sqlite3_str_finish(pList)); break; }
      /* A list that ran out of memory is not the empty list (sqlite3_str
      ** gives NULL for both): that would be an IN () matching nothing. */
      if (sqlite3_str_errcode(pList) != SQLITE_OK) qcNoMem(pC);
      pV->zInList = sqlite3_str_finish(pList);
      if (pV->zInList == NULL) pV->zInList = sqlite3_mprintf("%s", "");
      if (pV->zInList == NULL) qcNoMem(pC);
      pV->nInElem = pVal->u.c.n;
      pV->bInLookup = (unsigned char)bLookup;
      pV->bInMixed = (unsigned char)bMixed;
      pV->vt = vt0 == VT_NONE ? VT_LONG : vt0;
      pV->aParam = aP;
      pV->nParam = nP;
      break;
    }
    case QB_REL: {
      sqlite3_str *pCte = pC->pCte;
      char zName[24];
      sqlite3_snprintf(sizeof zName, zName, "in%d", ++pC->nAlias);
      for (i = 0; i < pVal->u.c.n || !qcIsColl(pVal); i++) {
        if (!qcIsColl(pVal) || !qcIsColl(qcElem(pVal, i)) || qcElem(pVal, i)->u.c.n != pB->nVar) {
          return qcErr(pC, NULL, "%s: expected a relation of %d-tuples", zWhat, pB->nVar);
        }
      }
      if (pC->nCte++) sqlite3_str_appendall(pCte, ", ");
      sqlite3_str_appendf(pCte, "%s(", zName);
      for (j = 0; j < pB->nVar; j++) sqlite3_str_appendf(pCte, "%sc%d", j ? "," : "", j);
      sqlite3_str_appendall(pCte, ") AS (");
      if (pVal->u.c.n == 0) {
        sqlite3_str_appendall(pCte, "SELECT ");
        for (j = 0; j < pB->nVar; j++) sqlite3_str_appendf(pCte, "%sNULL", j ? "," : "");
        sqlite3_str_appendall(pCte, " WHERE 0");
      } else {
        sqlite3_str_appendall(pCte, "VALUES ");
      }
      {
        /* Column j's lazy parameters, typed together by the column's first place. */
        int **aaP = sqlite3_malloc64(sizeof(int*) * pB->nVar);
        ValueType *aVt = sqlite3_malloc64(sizeof(ValueType) * pB->nVar);
        unsigned char *abLookup = sqlite3_malloc64(pB->nVar);
        if (aaP == NULL || aVt == NULL || abLookup == NULL) {
          sqlite3_free(aaP);
          sqlite3_free(aVt);
          sqlite3_free(abLookup);
          return qcNoMem(pC);
        }
        for (j = 0; j < pB->nVar; j++) {
          aaP[j] = sqlite3_malloc64(sizeof(int) * (pVal->u.c.n + 1));
          aVt[j] = VT_NONE;
          abLookup[j] = 0;
          if (aaP[j] == NULL) qcNoMem(pC);
        }
        for (i = 0; pC->rc == SQLITE_OK && i < pVal->u.c.n; i++) {
          const EdnValue *pRow = qcElem(pVal, i);
          sqlite3_str_appendf(pCte, "%s(", i ? "," : "");
          for (j = 0; j < pB->nVar; j++) {
            ValueType vt;
            int iP;
            const EdnValue *pE = qcElem(pRow, j);
            char *z = qcLeafExpr(pX, pE, bConst ? pE : NULL, iInput, i, j, &vt, &iP);
            if (z == NULL) { qcNoMem(pC); break; }
            if (i == 0) aVt[j] = vt;
            else if (!qcVtMix(aVt[j], vt)) {
              qcErr(pC, NULL, "%s: value %d is a %s, value 1 a %s: a relation column's values must have "
                    "one type", zWhat, i + 1, qcVtName(vt), qcVtName(aVt[j]));
              sqlite3_free(z);
              break;
            }
            aaP[j][i] = iP;
            if (qcLeafIsLookup(pX, pE, iInput)) abLookup[j] = 1;
            sqlite3_str_appendf(pCte, "%s%s", j ? "," : "", z);
            sqlite3_free(z);
          }
          sqlite3_str_appendall(pCte, ")");
        }
        sqlite3_str_appendall(pCte, ")");
        qcFrom(pX, sqlite3_mprintf("%s", zName));
        for (j = 0; j < pB->nVar; j++) {
          const EdnValue *pVar = pB->aVar[j];
          /* a row whose lookup ref names no entity binds nothing */
          if (abLookup[j]) qcWhere(pX, sqlite3_mprintf("%s.c%d IS NOT NULL", zName, j));
          if (pC->rc == SQLITE_OK && !qIsBlank(pVar)) {
            int bNew = qcVarFind(pX, pVar->u.s.z) == NULL;
            qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.c%d", zName, j),
                      aVt[j] == VT_NONE ? VT_LONG : aVt[j], NULL, 0);
            if (bNew && pC->rc == SQLITE_OK) {
              QVar *pV = qcVarFind(pX, pVar->u.s.z);
              int k, n = 0, nInt = 0, nReal = 0;
              for (k = 0; k < pVal->u.c.n; k++) {
                const EdnValue *pE = qcElem(qcElem(pVal, k), j);
                if (pE && pE->type == EDN_INT) nInt++;
                if (pE && pE->type == EDN_DOUBLE) nReal++;
              }
              /* a column of longs and doubles: 1 and 1.0 are two rows */
              pV->bInMixed = nInt && nReal;
              for (k = 0; k < pVal->u.c.n; k++) if (aaP[j][k]) aaP[j][n++] = aaP[j][k];
              pV->aParam = aaP[j];
              pV->nParam = n;
              aaP[j] = NULL;
            }
          }
          sqlite3_free(aaP[j]);
        }
        sqlite3_free(aaP);
        sqlite3_free(aVt);
        sqlite3_free(abLookup);
      }
      break;
    }
  }
  return pC->rc;
}

/* A collection input no pattern used: a VALUES CTE in FROM. */
static void qcMaterialize(QCtx *pX) {
  QComp *pC = pX->pC;
  int i;
  for (i = 0; i < pX->nVar && pC->rc == SQLITE_OK; i++) {
    QVar *pV = &pX->aVar[i];
    char zName[24];
    if (pV->zInList == NULL) continue;
    sqlite3_snprintf(sizeof zName, zName, "in%d", ++pC->nAlias);
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    if (pV->nInElem == 0) {
      sqlite3_str_appendf(pC->pCte, "%s(c0) AS (SELECT NULL WHERE 0)", zName);
    } else {
      /* "?1,?2" → "(?1),(?2)": elements never contain a top-level comma
      ** except inside lookup-ref subqueries, which are parenthesised. */
      const char *z = pV->zInList;
      int depth = 0;
      sqlite3_str_appendf(pC->pCte, "%s(c0) AS (VALUES (", zName);
      for (; *z; z++) {
        if (*z == '(') depth++;
        if (*z == ')') depth--;
        if (*z == ',' && depth == 0) sqlite3_str_appendall(pC->pCte, "),(");
        else sqlite3_str_appendchar(pC->pCte, 1, *z);
      }
      sqlite3_str_appendall(pC->pCte, "))");
    }
    qcFrom(pX, sqlite3_mprintf("%s", zName));
    pV->zExpr = sqlite3_mprintf("%s.c0", zName);
    if (pV->zExpr == NULL) qcNoMem(pC);
    if (pV->bInLookup) qcWhere(pX, sqlite3_mprintf("%s.c0 IS NOT NULL", zName));
    if (pV->zInMore && pV->zExpr) {
      /* more collections bound it: each filters the first's values */
      char *zTerms = qcInTerms(pV, pV->zExpr), *zAnd;
      zAnd = zTerms ? strstr(zTerms, " AND ") : NULL;
      qcWhere(pX, zAnd ? sqlite3_mprintf("%s", zAnd + 5) : NULL);
      sqlite3_free(zTerms);
    }
    sqlite3_free(pV->zInList);
    sqlite3_free(pV->zInMore);
    pV->zInList = NULL;
    pV->zInMore = NULL;
  }
}

/* -------------------------------------------------------- clause order */

static int qcFnReady(QCtx *pX, const QClause *pCl) {
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
static int qcPatternFilters(QCtx *pX, QClause *const *a, int n, const unsigned char *aDone,
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
static int qcPatternCanWait(QCtx *pX, QClause *const *a, int n, const unsigned char *aDone,
                            const QClause *pPat) {
  const char *azPat[8], *azCl[64];
  int nPat = qcClauseVars(pPat, azPat, 8, 0);
  int i, j, k;
  if (nPat > 8) return 0;
  for (i = 0; i < n; i++) {
    if (aDone[i]) continue;
    if (a[i]->kind == QC_RULE) {
      for (k = 0; k < nPat; k++) if (qcRuleSeedPlace(pX, a[i], azPat[k])) return 0;
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

/* Emits the data patterns of a[] one at a time: the most selective given
** what is bound so far, and among equals one that lets a predicate filter
** the rows early, then clause order (the joins are emitted in this order,
** and CROSS JOIN keeps it: see qcBody). With bDefer, once the scope has a
** pattern, patterns joined to nothing bound (score 4) that no binding
** clause needs (qcPatternCanWait) are left for later: emitted now they
** would be a cartesian product, in a rule's origins too (a 100,000-datom
** scan for a 3-answer reach in test_qlang's chain). */
static void qcEmitPatterns(QCtx *pX, QClause *const *a, int n, unsigned char *aDone, int bDefer) {
  QComp *pC = pX->pC;
  int i, iScore;
  while (pC->rc == SQLITE_OK) {
    int iBest = -1, iBestScore = 0, nTie = 0;
    for (i = 0; i < n; i++) {
      if (aDone[i] || a[i]->kind != QC_PATTERN) continue;
      iScore = 2 * qcPatternScore(pX, a[i]);
      if (bDefer && iScore >= 8 && pX->nPatternFrom > 0 && qcPatternCanWait(pX, a, n, aDone, a[i])) {
        continue;
      }
      iScore += !qcPatternFilters(pX, a, n, aDone, a[i]);
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
    pC->pAt = a[iBest]->pForm;
    qcPattern(pX, a[iBest]);
    aDone[iBest] = 1;
  }
}

/* Compiles the binding clauses of a[] not yet done (aDone) as they become
** ready: functions once their arguments are bound, rule calls and or-joins
** once their required variables are (Datomic pushes such a clause down
** until they are bound), other rules and ors at once. */
static void qcBinders(QCtx *pX, QClause *const *a, int n, unsigned char *aDone, int iDepth) {
  QComp *pC = pX->pC;
  int i, bProgress;
  do {
    bProgress = 0;
    for (i = 0; i < n && pC->rc == SQLITE_OK; i++) {
      if (aDone[i]) continue;
      /* SQLite joins at most 64 tables in one SELECT: a long chain of
      ** functions (each deep result one mentat_one) or of calls goes on
      ** from the rows so far, named once. */
      if (pX->nFrom >= QC_COLLAPSE_FROM && qcCollapse(pX) && pC->rc) break;
      pC->pAt = a[i]->pForm;
      if (a[i]->kind == QC_RULE && qcRuleReady(pX, a[i])) qcRuleCall(pX, a[i], iDepth);
      else if ((a[i]->kind == QC_OR || a[i]->kind == QC_OR_JOIN) && qcOrReady(pX, a[i])) {
        qcOr(pX, a[i], iDepth);
      } else if (a[i]->kind == QC_FN && qcFnReady(pX, a[i])) {
        /* A predicate written before the function filters its rows
        ** first, as Datomic runs clauses in order: [(pos? ?d)] guards
        ** [(/ 1 ?d) ?x] (the WHERE terms keep this order). */
        int j;
        for (j = 0; j < i && pC->rc == SQLITE_OK; j++) {
          if (aDone[j] || a[j]->kind != QC_PRED || !qcFnReady(pX, a[j])) continue;
          pC->pAt = a[j]->pForm;
          qcPredicate(pX, a[j]);
          aDone[j] = 1;
        }
        pC->pAt = a[i]->pForm;
        if (pC->rc == SQLITE_OK) qcFunction(pX, a[i]);
      }
      else continue;
      aDone[i] = 1;
      bProgress = 1;
    }
  } while (bProgress && pC->rc == SQLITE_OK);
}

int qcClauses(QCtx *pX, QClause *const *a, int n, int iDepth) {
  QComp *pC = pX->pC;
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
  /* 1. ground: constant bindings, like inputs. (ground ?v) is identity
  ** and waits for ?v with the other functions (step 3). */
  for (i = 0; i < n && pC->rc == SQLITE_OK; i++) {
    if (a[i]->kind == QC_FN && strcmp(a[i]->zName, "ground") == 0
        && !(a[i]->nArg == 1 && ednIsVar(a[i]->aArg[0]))) {
      pC->pAt = a[i]->pForm;
      qcFunction(pX, a[i]);
      aDone[i] = 1;
    }
  }
  /* 2. data patterns (qcEmitPatterns), those joined to nothing bound
  ** waiting while a rule, or, or function may bind their variables. */
  for (i = 0; i < n && !bBinders; i++) {
    bBinders = a[i]->kind == QC_RULE || a[i]->kind == QC_OR || a[i]->kind == QC_OR_JOIN
               || (a[i]->kind == QC_FN && !aDone[i]);
  }
  qcEmitPatterns(pX, a, n, aDone, bBinders);
  if (pX->pParent == NULL) qcMaterialize(pX);
  /* 3. binding clauses (rules, or, functions) as their inputs are bound. */
  qcBinders(pX, a, n, aDone, iDepth);
  /* 2'. the patterns that waited, now joined to what those bound, and the
  ** binding clauses that waited for them (required variables). */
  if (bBinders) {
    qcEmitPatterns(pX, a, n, aDone, 0);
    qcBinders(pX, a, n, aDone, iDepth);
  }
  /* 4. filters; anything left unbound now is an error naming it. */
  for (i = 0; i < n && pC->rc == SQLITE_OK; i++) {
    if (aDone[i]) continue;
    if (pX->nFrom >= QC_COLLAPSE_FROM && qcCollapse(pX) && pC->rc) break;
    pC->pAt = a[i]->pForm;
    switch (a[i]->kind) {
      case QC_PRED: qcPredicate(pX, a[i]); break;
      case QC_FN: qcFunction(pX, a[i]); break;
      case QC_NOT: case QC_NOT_JOIN: qcNot(pX, a[i], iDepth); break;
      case QC_AND: qcClauses(pX, a[i]->aSub, a[i]->nSub, iDepth + 1); break;
      /* Required variables still unbound: the call reports them. */
      case QC_RULE: qcRuleCall(pX, a[i], iDepth); break;
      case QC_OR: case QC_OR_JOIN: qcOr(pX, a[i], iDepth); break;
      default: break;
    }
    aDone[i] = 1;
  }
  sqlite3_free(aDone);
  return pC->rc;
}

/* --------------------------------------------------------- the query */

/* A deep copy of p into pArena (rule sets outlive the call's inputs). */
static EdnValue *qcCopy(EdnArena *pArena, const EdnValue *p, int iDepth) {
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
        pNew->u.c.a[i] = qcCopy(pArena, p->u.c.a[i], iDepth + 1);
        if (pNew->u.c.a[i] == NULL) return NULL;
      }
      break;
    case EDN_TAGGED:
      pNew->u.t.zTag = ednArenaStrdup(pArena, p->u.t.zTag, (int)strlen(p->u.t.zTag));
      pNew->u.t.p = qcCopy(pArena, p->u.t.p, iDepth + 1);
      if (pNew->u.t.zTag == NULL || pNew->u.t.p == NULL) return NULL;
      break;
    default:
      break;
  }
  return pNew;
}

static int qcInputs(QCtx *pX) {
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
    if (pIn->kind == QIN_SRC) {
      if (!ednIsSymbol(pIn->pForm, "$")) {
        return qcErr(pC, pIn->pForm, "unknown source %s: multiple sources are not supported (only $)",
                     pIn->pForm->u.s.z);
      }
      continue;
    }
    if (pIn->kind == QIN_PATTERN
        || (pIn->kind == QIN_BIND && pIn->bind.kind == QB_SCALAR
            && qcIsPatternVar(pQ, pIn->bind.aVar[0]))) {
      iInput++;      /* a pull pattern, read by the run (qcPullColumn) */
      continue;
    }
    pVal = pC->pOpts->aInput[iInput];
    sqlite3_snprintf(sizeof zWhat, zWhat, "input %d", iInput + 1);
    if (pIn->kind == QIN_RULES) {
      EdnValue *pCopy = qcCopy(pC->pArena, pVal, 0);
      if (pCopy == NULL) return qcNoMem(pC);
      if (pC->bRules) return qcErr(pC, pIn->pForm, "only one rule set (%%) is supported");
      pC->rc = qParseRules(pC->pArena, pCopy, &pC->rules, pC->pzErr);
      pC->bRules = 1;
    } else {
      pC->pAt = pIn->pForm;
      qcBindValue(pX, &pIn->bind, pVal, iInput, zWhat);
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
static void qcSelectVar(QComp *pC, sqlite3_str *pSel, int *pnCol, const QVar *pV,
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

static int qcFindVar(QComp *pC, QCtx *pX, const EdnValue *pVar, const char *zWhat,
                     QVar **ppV) {
  QVar *pV = qcVarFind(pX, pVar->u.s.z);
  if (pV == NULL || pV->zExpr == NULL) {
    return qcErr(pC, pVar, "unbound variable %s in %s", pVar->u.s.z, zWhat);
  }
  *ppV = pV;
  return SQLITE_OK;
}

/* :limit / :offset as a parameter. */
static int qcLimitParam(QComp *pC, QCtx *pX, const EdnValue *p) {
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

static int qcHasAggregate(const QQuery *pQ) {
  int i;
  for (i = 0; i < pQ->nFind; i++) if (pQ->aFind[i].kind == QF_AGG) return 1;
  return 0;
}

static int qcAssemble(QComp *pC, QCtx *pX, QueryPlan *pPlan) {
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
  pPlan->bSingleAgg = pQ->eFind == FIND_REL && pQ->nFind == 1 && pQ->aFind[0].kind == QF_AGG;

  if (qcHasAggregate(pQ)) {
    qcAggregate(pC, pX, pPlan, pSql);
    goto finish;
  }
  if (pC->nCte) {
    sqlite3_str_appendf(pSql, "WITH %s%s ", pC->bRecursive ? "RECURSIVE " : "",
                        sqlite3_str_value(pC->pCte));
  }
  {
    /* DISTINCT only when rows could repeat: it costs a temp b-tree. */
    const char *azVar[64];
    int nVar = 0, bUnique;
    for (i = 0; i < pQ->nFind && nVar < 64; i++) azVar[nVar++] = pQ->aFind[i].pVar->u.s.z;
    for (i = 0; i < pQ->nWith && nVar < 64; i++) azVar[nVar++] = pQ->aWith[i]->u.s.z;
    bUnique = nVar < 64 && qcRowsUnique(pX, azVar, nVar);
    sqlite3_str_appendall(pSql, bUnique ? "SELECT " : "SELECT DISTINCT ");
    bDistinct = !bUnique;
  }
  for (i = 0; i < pQ->nFind && pC->rc == SQLITE_OK; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    QVar *pV = NULL;
    if (qcFindVar(pC, pX, pE->pVar, ":find", &pV)) break;
    if (pE->kind == QF_PULL) {
      /* Pull takes entity ids, idents and lookup refs (Datomic): an input
      ** no place typed is read as an entity; a value of another type is an
      ** error naming the binding (query_run.c checks values of unknown
      ** type row by row). */
      if (pV->nParam) qcTypeParams(pX, pV, VT_REF, 0);
      if (pV->vt != VT_NONE && pV->vt != VT_REF && pV->vt != VT_LONG && pV->vt != VT_KEYWORD) {
        qcErr(pC, pE->pVar, "pull %s: %s is a %s, not an entity id, ident or lookup ref",
              pE->pVar->u.s.z, pE->pVar->u.s.z, qcVtName(pV->vt));
        break;
      }
    }
    qcSelectVar(pC, pSql, &nCol, pV, &pPlan->aCol[i], bDistinct);
    if (pE->kind == QF_PULL && qcPullColumn(pC, pE, &pPlan->aCol[i])) break;
  }
  for (i = 0; i < pQ->nWith && pC->rc == SQLITE_OK; i++) {
    QVar *pV = NULL;
    QPlanCol tmp;
    if (qcFindVar(pC, pX, pQ->aWith[i], ":with", &pV)) break;
    qcSelectVar(pC, pSql, &nCol, pV, &tmp, bDistinct);
  }
  if (pC->rc) goto cleanup;
  zBody = qcBody(pX);
  if (zBody == NULL) { qcNoMem(pC); goto cleanup; }
  sqlite3_str_appendall(pSql, zBody);
  for (i = 0; i < pQ->nOrder && pC->rc == SQLITE_OK; i++) {
    QVar *pV = NULL;
    if (qcFindVar(pC, pX, pQ->aOrder[i].pVar, ":order", &pV)) break;
    sqlite3_str_appendf(pSql, "%s%s%s%s", i ? ", " : " ORDER BY ", pV->zExpr,
                        qcKwCollate(pV->vt), pQ->aOrder[i].bDesc ? " DESC" : "");
  }
finish:
  if (pC->rc) goto cleanup;
  if (pQ->pLimit) {
    int iP = qcLimitParam(pC, pX, pQ->pLimit);
    sqlite3_str_appendf(pSql, " LIMIT ?%d", iP);
  } else if (pQ->eFind == FIND_TUPLE || pQ->eFind == FIND_SCALAR) {
    sqlite3_str_appendall(pSql, " LIMIT 1");
  } else if (pQ->pOffset) {
    sqlite3_str_appendall(pSql, " LIMIT -1");
  }
  if (pQ->pOffset) {
    int iP = qcLimitParam(pC, pX, pQ->pOffset);
    sqlite3_str_appendf(pSql, " OFFSET ?%d", iP);
  }
cleanup:
  sqlite3_free(zBody);
  if (pC->rc == SQLITE_OK) {
    pPlan->zSql = sqlite3_str_finish(pSql);
    if (pPlan->zSql == NULL) qcNoMem(pC);
  } else {
    sqlite3_free(sqlite3_str_finish(pSql));
  }
  return pC->rc;
}

void qPlanFree(QueryPlan *p) {
  if (p == NULL) return;
  sqlite3_finalize(p->pStmt);
  sqlite3_free(p->zSql);
  sqlite3_free(p->zKey);
  sqlite3_free(p->aParam);
  ednArenaReset(&p->arena);
  sqlite3_free(p);
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
  rc = qParse(&pPlan->arena, zQuery, nQuery, &pQ, pzErr);
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
  qcCtxInit(&x, &c, NULL);
  for (i = 0; i < pQ->nIn; i++) if (pQ->aIn[i].kind != QIN_SRC) pPlan->nInputNeeded++;
  if (pOpts && (pOpts->bAsOf || pOpts->bSince)) {
    /* asOf/since (SPEC §6): the tx is a parameter; an instant names the
    ** last transaction at or before it. */
    const EdnValue *pInst = pOpts->bAsOf ? pOpts->pAsOfInst : pOpts->pSinceInst;
    int iP = qcParam(&c, NULL, -1, -1, -1, pInst ? QV_HIST_INST : QV_HIST_TX, VT_NONE);
    c.eHist = pOpts->bAsOf ? 1 : 2;
    if (pInst) {
      c.zHistTx = sqlite3_mprintf(
          "(SELECT coalesce(max(e), 0) FROM datoms WHERE a = %d AND v <= ?%d)",
          ENTID_DB_TXINSTANT, iP);
    } else {
      c.zHistTx = sqlite3_mprintf("?%d", iP);
    }
    if (c.zHistTx == NULL) qcNoMem(&c);
  }
  c.bHistory = pOpts && pOpts->bHistory;
  if (c.rc == SQLITE_OK && qcInputs(&x) == SQLITE_OK && qcClauses(&x, pQ->aWhere, pQ->nWhere, 0) == SQLITE_OK) {
    qcAssemble(&c, &x, pPlan);
  }
  if (c.rc == SQLITE_OK && sqlite3_str_errcode(c.pCte)) c.rc = SQLITE_NOMEM;
  rc = c.rc;
  qcCtxReset(&x);
  sqlite3_free(sqlite3_str_finish(c.pCte));
  sqlite3_free(c.zHistTx);
  qcRulesFree(&c);
  if (rc != SQLITE_OK) {
    sqlite3_free(c.aParam);
    qPlanFree(pPlan);
    return rc;
  }
  pPlan->aParam = c.aParam;
  pPlan->nParam = c.nParam;
  *ppPlan = pPlan;
  return SQLITE_OK;
}
