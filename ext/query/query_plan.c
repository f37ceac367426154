/*
** query_plan.c — what a compiled plan owns and how it is freed, how its
** parameters are bound from the opts' inputs (qPlanBind, for the runner and
** explain), and the one rule the compiler and the binder must read an input
** by alike: which input vectors are lookup refs; the SQL text a plan is
** prepared from (qPlanSqlBare). Calls the schema and the value conversions
** only.
*/
#include <string.h>
#include <math.h>
#include "query_plan.h"
#include "query_funcs.h"

void qPlanColDirect(QueryPlan *p) {
  int i;
  for (i = 0; i < p->nCol; i++) {
    QPlanCol *pCol = &p->aCol[i];
    int tag;
    pCol->bDirect = 0;
    if (pCol->kind != QCOL_VALUE || pCol->iTagCol >= 0 || pCol->vt == QVT_JSON
        || pCol->vt == VT_NONE) {
      continue;
    }
    tag = vtOutTag(pCol->vt);
    pCol->bDirect = tag != TAG_INSTANT && tag != TAG_UUID && tag != TAG_BOOLEAN
                    && tag != TAG_TUPLE;
  }
}

void qPlanFree(QueryPlan *p) {
  if (p == NULL) return;
  sqlite3_finalize(p->pStmt);
  sqlite3_free(p->zSql);
  sqlite3_free(p->zKey);
  sqlite3_free(p->zHostFns);
  sqlite3_free(p->aParam);
  ednArenaReset(&p->arena);
  sqlite3_free(p);
}

int qPlanLookupRef(const Schema *pSchema, const EdnValue *p) {
  const Attr *pA;
  if (p->type != EDN_VECTOR || p->u.c.n != 2 || p->u.c.a[0]->type != EDN_KEYWORD) return 0;
  pA = schemaAttrByIdent(pSchema, p->u.c.a[0]->u.s.z, p->u.c.a[0]->u.s.n);
  /* a keyword that names no unique attribute makes no lookup ref (Datomic
  ** resolves one through a :db/unique attribute only): the pair is a tuple
  ** ([:x "y"] against a stored tuple of a keyword and a string); in an
  ** entity place it is the error qPlanNotLookup names */
  return pA != NULL && pA->eUnique != UNIQUE_NONE;
}

const Attr *qPlanNotLookup(const Schema *pSchema, const EdnValue *p) {
  const Attr *pA;
  if (p == NULL || p->type != EDN_VECTOR || p->u.c.n != 2 || p->u.c.a[0]->type != EDN_KEYWORD) {
    return NULL;
  }
  pA = schemaAttrByIdent(pSchema, p->u.c.a[0]->u.s.z, p->u.c.a[0]->u.s.n);
  return pA && pA->eUnique == UNIQUE_NONE ? pA : NULL;
}

/* ------------------------------------------------------------ binding */

/* The opts' source a parameter was made under (NULL for $). */
static const QuerySource *qParamSource(const QParam *pP, const QueryOpts *pOpts) {
  if (pP->iSrc <= 0 || pOpts == NULL || pP->iSrc > pOpts->nSource) return NULL;
  return &pOpts->aSource[pP->iSrc - 1];
}

const EdnValue *qParamValue(const QParam *pP, const QueryOpts *pOpts) {
  const EdnValue *p;
  if (pP->eConv == QV_HIST_INST) {
    /* i1: 0 the asOf instant, 1 the since one (qcsHistTx) */
    const QuerySource *pS = qParamSource(pP, pOpts);
    if (pS) return pP->i1 ? pS->pSinceInst : pS->pAsOfInst;
    if (pOpts == NULL) return NULL;
    return pP->i1 ? pOpts->pSinceInst : pOpts->pAsOfInst;
  }
  if (pP->iInput < 0) return pP->pConst;
  if (pOpts == NULL || pP->iInput >= pOpts->nInput) return NULL;
  p = pOpts->aInput[pP->iInput];
  if (pP->i1 >= 0) {
    if (p->type < EDN_LIST || p->type > EDN_SET || p->u.c.n <= pP->i1) return NULL;
    p = p->u.c.a[pP->i1];
  }
  if (pP->i2 >= 0) {
    if (p->type < EDN_LIST || p->type > EDN_SET || p->u.c.n <= pP->i2) return NULL;
    p = p->u.c.a[pP->i2];
  }
  return p;
}

/* Binds p converted to vt; a value that cannot convert binds NULL, which
** matches nothing (a wrongly typed constant finds no datoms), but a scalar
** input (bScalar) that names no entity where one goes is SQLITE_MISMATCH:
** an error, as the same constant in the query is. An element of a
** collection input names nothing and binds nothing (DataScript's
** lookup_refs_test: [?e ...] of [1 2 3 "A"] matches the entities). */
static int qBindTyped(sqlite3_stmt *pStmt, int i, const EdnValue *p, ValueType vt,
                      const Schema *pSchema, int bScalar) {
  TypedValue tv;
  char *zErr = NULL;
  int rc;
  if (vt == VT_TUPLE) {
    /* no attribute here: the elements' natural types (value.h) */
    char *z = NULL;
    int n = 0;
    rc = valueTupleFromEdnNatural(p, &z, &n);
    if (rc == SQLITE_NOMEM) return rc;
    if (rc != SQLITE_OK) return sqlite3_bind_null(pStmt, i);
    return sqlite3_bind_blob(pStmt, i, z, n, sqlite3_free);
  }
  if (vt == VT_REF) {
    if (p->type == EDN_INT) return sqlite3_bind_int64(pStmt, i, p->u.i);
    if (p->type == EDN_KEYWORD) {
      sqlite3_int64 e = schemaEntid(pSchema, p->u.s.z, p->u.s.n);
      return e ? sqlite3_bind_int64(pStmt, i, e) : sqlite3_bind_null(pStmt, i);
    }
    if (bScalar) return SQLITE_MISMATCH;   /* the caller says which input */
    return sqlite3_bind_null(pStmt, i);
  }
  if (vt == VT_NONE) return sqlite3_bind_null(pStmt, i);
  rc = valueFromEdn(p, vt, &tv, &zErr);
  sqlite3_free(zErr);
  if (rc == SQLITE_NOMEM) return rc;
  if (rc != SQLITE_OK) return sqlite3_bind_null(pStmt, i);
  /* The text is the query's input or constant, which outlive the run. */
  return valueBindStatic(pStmt, i, &tv);
}

/* Binds p as its own type. A double of its own (a function's argument,
** an input) keeps -0.0, as Clojure does ((str -0.0) is "-0.0"): the
** store's one zero (B31) is for stored values, and SQLite's = and < hold
** -0.0 equal to 0.0 as Clojure's == does. */
static int qBindNatural(sqlite3_stmt *pStmt, int i, const EdnValue *p, const Schema *pSchema) {
  if (p->type == EDN_DOUBLE && p->u.d == 0.0) return sqlite3_bind_double(pStmt, i, p->u.d);
  return qBindTyped(pStmt, i, p, valueNaturalType(p), pSchema, 0);
}

/* Binds p as a tuple of pA's element types; one that does not convert
** binds NULL (it names no entity). */
static int qBindTupleTyped(sqlite3_stmt *pStmt, int i, const EdnValue *p, const Attr *pA) {
  EdnArena arena;
  TypedValue tv;
  const EdnValue *pAt = NULL;
  char *zErr = NULL;
  int rc;
  ednArenaInit(&arena);
  rc = valueTupleFromEdn(p, &pA->tuple, &arena, &tv, &zErr, &pAt);
  sqlite3_free(zErr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_blob(pStmt, i, tv.z, tv.n, SQLITE_TRANSIENT);
  else if (rc != SQLITE_NOMEM) rc = sqlite3_bind_null(pStmt, i);
  ednArenaReset(&arena);
  return rc;
}

/* Is input value p a NaN? Then *pzErr says so: SQLite would hold it as
** NULL, which reads as nil (the store refuses NaN too, value.c). */
static int qBindIsNaN(const QParam *pP, const EdnValue *p, char **pzErr) {
  if (p->type != EDN_DOUBLE || !isnan(p->u.d)) return 0;
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("input %d: ##NaN cannot be a query value", pP->iInput + 1);
  return 1;
}

/* The error of scalar input p in an entity place: "input N: "x" is not an
** entity id, ident or lookup ref". SQLITE_ERROR (SQLITE_NOMEM). */
static int qBindNotEntity(const QParam *pP, const EdnValue *p, char **pzErr) {
  sqlite3_str *pMsg = sqlite3_str_new(NULL);
  sqlite3_str_appendf(pMsg, "input %d: ", pP->iInput + 1);
  ednPrint(pMsg, p);
  sqlite3_str_appendall(pMsg, " is not an entity id, ident or lookup ref");
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_str_finish(pMsg);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* The error of input p as :limit or :offset (QV_INT: a non-negative
** integer) or as the n of (max ?k ?x) (QV_AGG_N: a positive one, as a
** literal n must be, query_parse.c, which also checks literal limits).
** SQLITE_ERROR (SQLITE_NOMEM). */
static int qBindBadCount(const QParam *pP, const EdnValue *p, char **pzErr) {
  sqlite3_str *pMsg = sqlite3_str_new(NULL);
  sqlite3_str_appendf(pMsg, "input %d: ", pP->iInput + 1);
  if (pP->eConv == QV_INT) {
    sqlite3_str_appendall(pMsg, ":limit and :offset take a non-negative integer, got ");
  } else {
    if (pP->pConst) ednPrint(pMsg, pP->pConst);
    sqlite3_str_appendall(pMsg, " needs a positive integer count, got ");
  }
  ednPrint(pMsg, p);
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_str_finish(pMsg);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

int qPlanBind(const QueryPlan *pPlan, sqlite3_stmt *pStmt, const Schema *pMainSchema,
              const QueryOpts *pOpts, char **pzErr) {
  int i, rc = SQLITE_OK;
  /* Parameters the SQL dropped (a comparison decided at compile time) are
  ** past the statement's last one: binding them would be SQLITE_RANGE. */
  int nStmt = sqlite3_bind_parameter_count(pStmt);
  for (i = 0; i < pPlan->nParam && i < nStmt && rc == SQLITE_OK; i++) {
    const QParam *pP = &pPlan->aParam[i];
    const EdnValue *p = qParamValue(pP, pOpts);
    const QuerySource *pSrc = qParamSource(pP, pOpts);
    /* idents and lookup refs resolve in the schema of the parameter's source */
    const Schema *pSchema = pSrc && pSrc->pSchema ? pSrc->pSchema : pMainSchema;
    const Attr *pA = NULL;
    int iArg = i + 1;
    if (pP->eConv == QV_HIST_TX) {
      rc = sqlite3_bind_int64(pStmt, iArg, pSrc ? (pP->i1 ? pSrc->iSince : pSrc->iAsOf)
                              : pOpts == NULL ? 0 : pP->i1 ? pOpts->iSince : pOpts->iAsOf);
      continue;
    }
    if (p == NULL) {
      rc = sqlite3_bind_null(pStmt, iArg);
      continue;
    }
    if (qBindIsNaN(pP, p, pzErr)) return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
    if (pP->eConv >= QV_LOOKUP_A && pP->eConv <= QV_LOOKUP_TAG) {
      if (qPlanLookupRef(pSchema, p)) {
        pA = schemaAttrByIdent(pSchema, p->u.c.a[0]->u.s.z, p->u.c.a[0]->u.s.n);
      }
      if (pA == NULL) {
        rc = sqlite3_bind_null(pStmt, iArg);
        continue;
      }
      /* As edn_t refuses it: a non-unique attribute names no one entity. */
      if (pA->eUnique == UNIQUE_NONE) {
        sqlite3_free(*pzErr);
        *pzErr = sqlite3_mprintf("lookup ref attribute %s is not :db/unique", pA->zIdent);
        return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
      }
    }
    switch (pP->eConv) {
      case QV_NATURAL:
        rc = qBindNatural(pStmt, iArg, p, pSchema);
        break;
      case QV_TYPED:
        if (pP->vt == VT_TUPLE && pP->eTuple) {
          const Attr *pT = schemaAttr(pSchema, pP->eTuple);
          if (pT && pT->type == VT_TUPLE) {
            rc = qBindTupleTyped(pStmt, iArg, p, pT);
            break;
          }
        }
        rc = qBindTyped(pStmt, iArg, p, pP->vt, pSchema, pP->iInput >= 0 && pP->i1 < 0);
        if (rc == SQLITE_MISMATCH) return qBindNotEntity(pP, p, pzErr);
        break;
      case QV_TAG:
        rc = sqlite3_bind_int(pStmt, iArg, vtTag(valueNaturalType(p)));
        break;
      case QV_LOOKUP_A:
        rc = sqlite3_bind_int64(pStmt, iArg, pA->e);
        break;
      case QV_LOOKUP_V:
        if (pA->type == VT_TUPLE) {
          /* typed by the attribute's element types, as edn_t stores it */
          rc = qBindTupleTyped(pStmt, iArg, p->u.c.a[1], pA);
          break;
        }
        rc = qBindTyped(pStmt, iArg, p->u.c.a[1], pA->type, pSchema, 0);
        break;
      case QV_LOOKUP_TAG:
        rc = sqlite3_bind_int(pStmt, iArg, vtTag(pA->type));
        break;
      case QV_INT: case QV_AGG_N:
        if (p->type != EDN_INT || p->u.i < (pP->eConv == QV_AGG_N)) return qBindBadCount(pP, p, pzErr);
        rc = sqlite3_bind_int64(pStmt, iArg, p->u.i);
        break;
      case QV_HIST_TX:
        break;
      case QV_HIST_INST:
        if (p->type == EDN_INST) rc = sqlite3_bind_int64(pStmt, iArg, p->u.i);
        else rc = sqlite3_bind_null(pStmt, iArg);
        break;
      case QV_JSON: case QV_CLJ: {
        sqlite3_str *pOut = sqlite3_str_new(NULL);
        char *z;
        int n;
        if (pP->eConv == QV_CLJ) qfCljEdn(pOut, p);
        else ednPrintJson(pOut, p);
        n = sqlite3_str_length(pOut);
        z = sqlite3_str_finish(pOut);
        if (z == NULL) return SQLITE_NOMEM;
        rc = sqlite3_bind_text(pStmt, iArg, z, n, sqlite3_free);
        break;
      }
    }
  }
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("cannot bind query value %d", i);
  }
  return rc;
}

/* See query_plan.h. Tracks the largest number so far as SQLite does. */
char *qPlanSqlBare(const char *zSql) {
  size_t n = strlen(zSql), i = 0, o = 0;
  long long nMax = 0;      /* largest parameter number so far */
  char *zOut = sqlite3_malloc64(n + 1);
  if (zOut == NULL) return NULL;
  while (i < n) {
    char c = zSql[i];
    if (c == '\'' || c == '"' || c == '`' || c == '[') {
      char cEnd = c == '[' ? ']' : c;
      zOut[o++] = zSql[i++];
      while (i < n) {
        zOut[o++] = zSql[i];
        if (zSql[i++] != cEnd) continue;
        if (cEnd != ']' && i < n && zSql[i] == cEnd) zOut[o++] = zSql[i++];  /* doubled */
        else break;
      }
    } else if (c == '-' && zSql[i + 1] == '-') {
      while (i < n && zSql[i] != '\n') zOut[o++] = zSql[i++];
    } else if (c == '/' && zSql[i + 1] == '*') {
      const char *zEnd = strstr(zSql + i + 2, "*/");
      size_t iEnd = zEnd ? (size_t)(zEnd - zSql) + 2 : n;
      while (i < iEnd) zOut[o++] = zSql[i++];
    } else if (c == '?') {
      size_t j = i + 1;
      long long x = 0;
      while (j < n && zSql[j] >= '0' && zSql[j] <= '9' && x < 1000000000) x = x * 10 + (zSql[j++] - '0');
      if (j == i + 1 || x == nMax + 1) {
        zOut[o++] = '?';   /* bare: SQLite gives it nMax + 1 */
        nMax++;
      } else {
        while (i < j) zOut[o++] = zSql[i++];
        if (x > nMax) nMax = x;
      }
      i = j;
    } else {
      zOut[o++] = zSql[i++];
    }
  }
  zOut[o] = 0;
  return zOut;
}
