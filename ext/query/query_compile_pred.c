/*
** query_compile_pred.c — predicates and function expressions in :where:
** comparisons, Clojure-style predicates, arithmetic and string functions,
** ground, get-else, get-some, missing?, tuple/untuple, fulltext, tx-ids,
** tx-data and type.
**
** HOW IT WORKS
** A predicate becomes a WHERE term; a function becomes an SQL expression
** bound to its result variable (or an equality when the variable is
** already bound). A result that would nest too deep in the next function
** is bound once through mentat_one in FROM (qcTermExpr, query_one.c), so
** chains of functions compile to SQL linear in their length. Comparisons only hold within one type class (numbers,
** strings, instants, keywords ...): when a side's type is not static its
** tag is constrained, so `[(> ?v 0)]` over `[?e _ ?v]` never sees booleans,
** refs or instants as numbers (peer fault B13). Functions that read the
** store (get-else, get-some, missing?) are correlated scalar subqueries on
** the datoms indexes; fulltext joins the FTS4 table; tx-ids and tx-data
** read the log.
*/
#include <string.h>
#include "query_compile.h"

/* ---------------------------------------------------------- predicates */

/* The tags of a comparison class, as an SQL list. */
static const char *qcClassTags(int iClass) {
  switch (iClass) {
    case 1: return "5";
    case 2: return "10";
    case 3: return "4";
    case 4: return "13";
    case 5: return "1";
    case 6: return "11";
    default: return "-1";
  }
}

/* Compares two terms with SQL operator zOp within one type class. bNe: the
** operator is a "differ" (true across classes). bValue: = / != compare
** values as Clojure's = does, so a long never equals a double ((= 1 1.0)
** is false; Datomic stores 1 and 1.0 as different values); == and the
** orderings compare numbers by magnitude. SQLite keeps the two apart by
** storage class (a stored double is REAL), so the test is typeof's. */
static char *qcCompare(QCtx *pX, const EdnValue *pA, const EdnValue *pB, const char *zOp,
                       int bNe, int bValue) {
  ValueType vtA, vtB;
  char *zTagA = NULL, *zTagB = NULL, *zOut = NULL, *zCmp = NULL;
  char *zA = qcTermExpr(pX, pA, &vtA, &zTagA, "predicate");
  char *zB = zA ? qcTermExpr(pX, pB, &vtB, &zTagB, "predicate") : NULL;
  int bEq = strcmp(zOp, "=") == 0 || strcmp(zOp, "!=") == 0;
  if (zA == NULL || zB == NULL) goto cleanup;
  /* the comparison proper, numbers of one kind only under bValue */
  if (bValue && vtA != QVT_JSON && vtB != QVT_JSON
      && (vtA == VT_NONE || qcTypeClass(vtA) == 1) && (vtB == VT_NONE || qcTypeClass(vtB) == 1)) {
    zCmp = sqlite3_mprintf(bNe ? "(%s %s %s OR typeof(%s) != typeof(%s))"
                               : "(%s %s %s AND typeof(%s) = typeof(%s))",
                           zA, zOp, zB, zA, zB);
  } else {
    zCmp = sqlite3_mprintf("(%s %s %s)", zA, zOp, zB);
  }
  if (zCmp == NULL) { qcNoMem(pX->pC); goto cleanup; }
  if ((zOp[0] == '<' || zOp[0] == '>') && vtA != QVT_JSON && vtB != QVT_JSON
      && (vtA == VT_KEYWORD || vtB == VT_KEYWORD || (vtA == VT_NONE && vtB == VT_NONE))) {
    /* Keywords order as Clojure's compare has them (query_funcs.c): the
    ** other side is then a keyword too (the tag tests below), or, with
    ** both types unknown, the collation applies where both tags say so. */
    char *zColl = vtA == VT_NONE && vtB == VT_NONE
        ? sqlite3_mprintf("(CASE WHEN %s = %d THEN %s %s %s COLLATE mentat_kw ELSE %s %s %s END)",
                          zTagA, TAG_KEYWORD, zA, zOp, zB, zA, zOp, zB)
        : sqlite3_mprintf("(%s %s %s COLLATE mentat_kw)", zA, zOp, zB);
    if (zColl == NULL) { qcNoMem(pX->pC); goto cleanup; }
    if (vtA == VT_NONE && vtB == VT_NONE) {
      zOut = sqlite3_mprintf("(%s = %s AND %s)", zTagA, zTagB, zColl);
    } else if (vtA == VT_NONE || vtB == VT_NONE) {
      zOut = sqlite3_mprintf("(%s = %d AND %s)", vtA == VT_NONE ? zTagA : zTagB, TAG_KEYWORD, zColl);
    } else {
      zOut = vtA == vtB ? sqlite3_mprintf("%s", zColl) : sqlite3_mprintf("0");
    }
    sqlite3_free(zColl);
  } else if (vtA == QVT_JSON || vtB == QVT_JSON) {
    zOut = sqlite3_mprintf("(%s %s %s)", zA, zOp, zB);
  } else if (vtA != VT_NONE && vtB != VT_NONE) {
    if (qcTypeClass(vtA) != qcTypeClass(vtB)) zOut = sqlite3_mprintf(bNe ? "1" : "0");
    else zOut = sqlite3_mprintf("%s", zCmp);
  } else if (vtA == VT_NONE && vtB == VT_NONE) {
    /* = and != see a ref value as the entity id (a long) it is, as Datomic
    ** does; an order comparison keeps to one type (peer fault B13). */
    char *zSame = bEq ? qcTagsMatch(zTagA, zTagB) : sqlite3_mprintf("%s = %s", zTagA, zTagB);
    if (zSame == NULL) { qcNoMem(pX->pC); goto cleanup; }
    if (bNe) zOut = sqlite3_mprintf("(NOT %s OR %s)", zSame, zCmp);
    else zOut = sqlite3_mprintf("(%s AND %s)", zSame, zCmp);
    sqlite3_free(zSame);
  } else {
    ValueType vtKnown = vtA == VT_NONE ? vtB : vtA;
    const char *zTag = vtA == VT_NONE ? zTagA : zTagB;
    const char *zTags = bEq && (vtKnown == VT_LONG || vtKnown == VT_REF) ? "0, 5"
                        : qcClassTags(qcTypeClass(vtKnown));
    if (bNe) {
      zOut = sqlite3_mprintf("(%s NOT IN (%s) OR %s)", zTag, zTags, zCmp);
    } else {
      zOut = sqlite3_mprintf("(%s IN (%s) AND %s)", zTag, zTags, zCmp);
    }
  }
  if (zOut == NULL) qcNoMem(pX->pC);
cleanup:
  sqlite3_free(zCmp);
  sqlite3_free(zA);
  sqlite3_free(zB);
  sqlite3_free(zTagA);
  sqlite3_free(zTagB);
  return zOut;
}

/* Arguments without the leading source "$". */
static void qcSkipSrc(const QClause *pCl, const EdnValue *const **paArg, int *pnArg) {
  *paArg = pCl->aArg;
  *pnArg = pCl->nArg;
  if (*pnArg > 0 && qIsSrc((*paArg)[0])) {
    (*paArg)++;
    (*pnArg)--;
  }
}

/* A subquery "SELECT zSel FROM <the database the query reads> g WHERE
** g.e = zE AND g.a = a" (qcView: as of T, since T), for the built-ins that
** look up one entity's attribute; NULL after an error. Datomic's history
** database has no one value of an attribute: there they are an error
** naming zFn. */
static char *qcEntityAttrSql(QCtx *pX, const EdnValue *pAt, const char *zFn, const char *zSel,
                             const char *zE, sqlite3_int64 a) {
  QComp *pC = pX->pC;
  const char *zTable = NULL;
  char *zCond, *z;
  if (pC->bHistory) {
    qcErr(pC, pAt, "%s is not supported on the history database", zFn);
    return NULL;
  }
  zCond = qcView(pC, "g", &zTable);
  if (zCond == NULL) { qcNoMem(pC); return NULL; }
  z = sqlite3_mprintf("SELECT %s FROM %s g WHERE g.e = %s AND g.a = %lld%s%s", zSel, zTable, zE,
                      a, zCond[0] ? " AND " : "", zCond);
  sqlite3_free(zCond);
  if (z == NULL) qcNoMem(pC);
  return z;
}

/* The attribute named by a keyword argument, or NULL (unknown: no datoms). */
static const Attr *qcAttrArg(QCtx *pX, const EdnValue *p, const char *zFn) {
  if (p->type != EDN_KEYWORD) {
    qcErr(pX->pC, p, "%s expects an attribute keyword", zFn);
    return NULL;
  }
  return schemaAttrByIdent(pX->pC->pSchema, p->u.s.z, p->u.s.n);
}

/* ------------------------------------------------- boolean predicates */

/* Clojure predicates of one or two arguments: SQL format and arity. */
static const struct { const char *zName; const char *zFmt; int nArg; } aQcPred[] = {
  { "even?", "((%s) %% 2 = 0)", 1 },
  { "odd?", "((%s) %% 2 != 0)", 1 },
  { "zero?", "((%s) = 0)", 1 },
  { "pos?", "((%s) > 0)", 1 },
  { "neg?", "((%s) < 0)", 1 },
  { "nil?", "((%s) IS NULL)", 1 },
  { "some?", "((%s) IS NOT NULL)", 1 },
  { "true?", "((%s) IS 1)", 1 },
  { "false?", "((%s) IS 0)", 1 },
  /* Java's Character.isWhitespace: ASCII space and controls 9-13 and
  ** 28-31, and Unicode's space separators other than the no-break ones */
  { "clojure.string/blank?", "(trim(coalesce(%s, ''), char(32, 9, 10, 11, 12, 13, 28, 29, 30, 31, "
    "5760, 8192, 8193, 8194, 8195, 8196, 8197, 8198, 8200, 8201, 8202, 8232, 8233, 8287, 12288)) = '')", 1 },
  { "clojure.string/starts-with?", "(substr(%s, 1, length(%s)) = %s)", 2 },
  { "clojure.string/ends-with?", "mentat_ends_with(%s, %s)", 2 },
  { "clojure.string/includes?", "(instr(%s, %s) > 0)", 2 },
};

/* bValue: Clojure's = (and its negations), not the numeric == */
static const struct { const char *zName, *zOp; int bNe, bValue; } aQcCmp[] = {
  { "=", "=", 0, 1 }, { "==", "=", 0, 0 }, { "!=", "!=", 1, 1 }, { "not=", "!=", 1, 1 },
  { "<", "<", 0, 0 }, { "<=", "<=", 0, 0 }, { ">", ">", 0, 0 }, { ">=", ">=", 0, 0 },
};

/* Appends the terms of a chain of comparisons joined by zJoin. */
static void qcCompareChain(QCtx *pX, sqlite3_str *pOut, const EdnValue *const *aA,
                           const EdnValue *const *aB, int n, const char *zOp, int bNe,
                           int bValue, const char *zJoin) {
  int j;
  for (j = 0; j < n && pX->pC->rc == SQLITE_OK; j++) {
    char *zT = qcCompare(pX, aA[j], aB[j], zOp, bNe, bValue);
    if (zT) sqlite3_str_appendf(pOut, "%s%s", j ? zJoin : "", zT);
    sqlite3_free(zT);
  }
}

/* The SQL truth value of pCl when its name is a boolean predicate (Datomic's
** comparison, Clojure predicates, missing?, differ?). Returns 1 when the name
** is one (then *pzOut is the expression, or NULL on error: see pC->rc), 0 when
** it is not a predicate name (then the caller tries value functions). */
static int qcPredExpr(QCtx *pX, const QClause *pCl, char **pzOut) {
  QComp *pC = pX->pC;
  const char *z = pCl->zName;
  const EdnValue *const *aArg;
  int nArg, i;
  *pzOut = NULL;
  for (i = 0; i < (int)(sizeof aQcCmp / sizeof aQcCmp[0]); i++) {
    sqlite3_str *pOut;
    int n = pCl->nArg;
    if (strcmp(z, aQcCmp[i].zName) != 0) continue;
    if (n < 2) {
      qcErr(pC, pCl->pForm, "%s needs at least two arguments", z);
      return 1;
    }
    pOut = sqlite3_str_new(NULL);
    sqlite3_str_appendall(pOut, "(");
    if (aQcCmp[i].bNe && n > 2) {
      /* (not= a b c) is (not (= a b c)): true unless all are equal. */
      sqlite3_str_appendall(pOut, "NOT (");
      qcCompareChain(pX, pOut, pCl->aArg, pCl->aArg + 1, n - 1, "=", 0, 1, " AND ");
      sqlite3_str_appendall(pOut, ")");
    } else {
      qcCompareChain(pX, pOut, pCl->aArg, pCl->aArg + 1, n - 1, aQcCmp[i].zOp,
                     aQcCmp[i].bNe, aQcCmp[i].bValue, " AND ");
    }
    sqlite3_str_appendall(pOut, ")");
    *pzOut = sqlite3_str_finish(pOut);
    if (pC->rc) { sqlite3_free(*pzOut); *pzOut = NULL; }
    else if (*pzOut == NULL) qcNoMem(pC);
    return 1;
  }
  if (strcmp(z, "differ?") == 0 || strcmp(z, "-differ?") == 0) {
    /* DataScript's -differ?: the first half of the arguments differs from
    ** the second half in some place. */
    sqlite3_str *pOut;
    int h = pCl->nArg / 2;
    if (pCl->nArg < 2 || pCl->nArg % 2) {
      qcErr(pC, pCl->pForm, "%s takes an even number of arguments (two halves to compare)", z);
      return 1;
    }
    pOut = sqlite3_str_new(NULL);
    sqlite3_str_appendall(pOut, "(");
    qcCompareChain(pX, pOut, pCl->aArg, pCl->aArg + h, h, "!=", 1, 1, " OR ");
    sqlite3_str_appendall(pOut, ")");
    *pzOut = sqlite3_str_finish(pOut);
    if (pC->rc) { sqlite3_free(*pzOut); *pzOut = NULL; }
    else if (*pzOut == NULL) qcNoMem(pC);
    return 1;
  }
  qcSkipSrc(pCl, &aArg, &nArg);
  if (strcmp(z, "missing?") == 0) {
    const Attr *pA;
    char *zE;
    if (nArg != 2) {
      qcErr(pC, pCl->pForm, "missing? takes $, an entity and an attribute");
      return 1;
    }
    pA = qcAttrArg(pX, aArg[1], z);
    if (pC->rc) return 1;
    zE = qcEntityExpr(pX, aArg[0], z);
    if (zE == NULL) return 1;
    if (pA) {
      char *zSub = qcEntityAttrSql(pX, pCl->pForm, z, "1", zE, pA->e);
      *pzOut = zSub ? sqlite3_mprintf("NOT EXISTS (%s)", zSub) : NULL;
      sqlite3_free(zSub);
    } else {
      *pzOut = sqlite3_mprintf("1");
    }
    if (*pzOut == NULL) qcNoMem(pC);
    sqlite3_free(zE);
    return 1;
  }
  for (i = 0; i < (int)(sizeof aQcPred / sizeof aQcPred[0]); i++) {
    ValueType vt;
    char *zA, *zB = NULL;
    if (strcmp(z, aQcPred[i].zName) != 0) continue;
    if (pCl->nArg != aQcPred[i].nArg) {
      qcErr(pC, pCl->pForm, "%s takes %d argument(s), got %d", z, aQcPred[i].nArg, pCl->nArg);
      return 1;
    }
    zA = qcTermExpr(pX, pCl->aArg[0], &vt, NULL, "predicate");
    if (zA && pCl->nArg == 2) zB = qcTermExpr(pX, pCl->aArg[1], &vt, NULL, "predicate");
    if (pC->rc == SQLITE_OK) {
      if (strcmp(z, "clojure.string/starts-with?") == 0) {
        *pzOut = sqlite3_mprintf(aQcPred[i].zFmt, zA, zB, zB);
      } else if (pCl->nArg == 2) {
        *pzOut = sqlite3_mprintf(aQcPred[i].zFmt, zA, zB);
      } else {
        *pzOut = sqlite3_mprintf(aQcPred[i].zFmt, zA);
      }
      if (*pzOut == NULL) qcNoMem(pC);
    }
    sqlite3_free(zA);
    sqlite3_free(zB);
    return 1;
  }
  return 0;
}

static int qcValueFn(QCtx *pX, const QClause *pCl, char **pzExpr, ValueType *pvt,
                     char **pzTag);

int qcPredicate(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  char *zExpr = NULL, *zTag = NULL;
  ValueType vt;
  if (qcPredExpr(pX, pCl, &zExpr)) {
    if (zExpr) qcWhere(pX, zExpr);
    return pC->rc;
  }
  /* Any other function is a predicate by Clojure truthiness: nil and false
  ** fail, everything else (0 and "" too) holds. */
  if (qcValueFn(pX, pCl, &zExpr, &vt, &zTag)) {
    sqlite3_free(zTag);
    if (zExpr == NULL) return pC->rc;
    if (vt == VT_BOOLEAN) qcWhere(pX, sqlite3_mprintf("coalesce(%s, 0) != 0", zExpr));
    else qcWhere(pX, sqlite3_mprintf("(%s) IS NOT NULL", zExpr));
    sqlite3_free(zExpr);
    return pC->rc;
  }
  if (pC->rc) return pC->rc;
  return qcErr(pC, pCl->pForm, "unknown function %s", pCl->zName);
}

/* ----------------------------------------------------------- functions */

/* The type tag of a JSON element (tuples carry values as JSON): numbers 5,
** booleans 1, text starting with ':' a keyword (13), other text 10. zType
** is the SQL giving json_type's answer, zVal the element's SQL value. */
static char *qcJsonTag(const char *zType, const char *zVal) {
  return sqlite3_mprintf("(CASE %s WHEN 'integer' THEN 5 WHEN 'real' THEN 5 WHEN 'true'"
                         " THEN 1 WHEN 'false' THEN 1 WHEN 'text' THEN (CASE WHEN"
                         " substr(%s, 1, 1) = ':' THEN 13 ELSE 10 END) END)", zType, zVal);
}

/* Binds element k of the JSON array zDoc to variable pVar (blank: skipped). */
static void qcBindJsonElem(QCtx *pX, const EdnValue *pVar, const char *zDoc, int k) {
  char *zType, *zVal;
  if (qIsBlank(pVar)) return;
  zType = sqlite3_mprintf("json_type(%s, '$[%d]')", zDoc, k);
  zVal = sqlite3_mprintf("json_extract(%s, '$[%d]')", zDoc, k);
  if (zType && zVal) {
    int bNew = qcVarFind(pX, pVar->u.s.z) == NULL;
    qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s", zVal), VT_NONE, qcJsonTag(zType, zVal), 0);
    if (bNew) qcFnResult(pX, pVar->u.s.z);
  } else {
    qcNoMem(pX->pC);
  }
  sqlite3_free(zType);
  sqlite3_free(zVal);
}

/* Binds a function's result (SQL zExpr of type vt, tag zTag when vt is
** VT_NONE; both taken over) through the clause's binding form. A scalar
** binds anything; tuple, collection and relation forms need a result that
** is a collection (JSON: tuple, ground of a vector): [?a ?b] takes its
** elements, [?x ...] joins json_each over it (one row per element) and
** [[?a ?b]] joins json_each and takes each row's elements. */
static int qcBindResult(QCtx *pX, const QClause *pCl, char *zExpr, ValueType vt, char *zTag) {
  QComp *pC = pX->pC;
  const QBinding *pB = &pCl->bind;
  char zAlias[24];
  int i;
  if (zExpr == NULL) {
    sqlite3_free(zTag);
    return qcNoMem(pC);
  }
  if (pB->kind == QB_SCALAR) {
    if (qIsBlank(pB->aVar[0])) {
      sqlite3_free(zExpr);
      sqlite3_free(zTag);
      return pC->rc;
    }
    /* A nil result binds nothing, as in Datomic: (/ ?a 0), (untuple 5) or
    ** a missing value drop the row instead of binding a NULL no Datalog
    ** value can stand for. */
    qcWhere(pX, sqlite3_mprintf("(%s) IS NOT NULL", zExpr));
    {
      QVar *pV = qcVarFind(pX, pB->aVar[0]->u.s.z);
      int bNew = pV == NULL;
      int bKw = vt == VT_KEYWORD || (vt == VT_NONE && zTag);
      if (!bNew && vt == QVT_JSON && pV->zExpr && pV->vt == VT_REF && !pV->nParam) {
        /* as a pattern after it would say (qcPlace) */
        sqlite3_free(zExpr);
        sqlite3_free(zTag);
        return qcErr(pC, pCl->pForm, "%s is a collection, not an entity id, ident or lookup ref",
                     pB->aVar[0]->u.s.z);
      }
      if (!bNew && bKw && pV->zExpr && pV->vt == VT_REF) {
        /* A keyword result meets an entity (or ref value) place already
        ** bound: the entity whose ident it is, as when the place comes
        ** after (below) and as a constant or an input there (Datomic reads
        ** an ident wherever an entity goes). */
        char *zId = qcIdentSql(zExpr);
        char *zE = NULL, *zT = NULL;
        if (zId && vt == VT_KEYWORD) {
          zE = zId;
          zId = NULL;
        } else if (zId) {
          zE = sqlite3_mprintf("(CASE %s WHEN %d THEN %s ELSE %s END)", zTag, TAG_KEYWORD, zId,
                               zExpr);
          zT = sqlite3_mprintf("(CASE %s WHEN %d THEN %d ELSE %s END)", zTag, TAG_KEYWORD,
                               TAG_REF, zTag);
        }
        sqlite3_free(zId);
        sqlite3_free(zExpr);
        sqlite3_free(zTag);
        if (zE == NULL || (vt == VT_NONE && zT == NULL)) {
          sqlite3_free(zE);
          sqlite3_free(zT);
          return qcNoMem(pC);
        }
        qcBindVar(pX, pB->aVar[0]->u.s.z, zE, vt == VT_KEYWORD ? VT_REF : VT_NONE, zT, 0);
        return pC->rc;
      }
      qcBindVar(pX, pB->aVar[0]->u.s.z, zExpr, vt, zTag, 0);
      if (bNew) {
        qcFnResult(pX, pB->aVar[0]->u.s.z);
        /* a keyword result read as an ident by a later entity place */
        pV = qcVarFind(pX, pB->aVar[0]->u.s.z);
        if (bKw && pV) pV->bIdent = 1;
      }
    }
    return pC->rc;
  }
  sqlite3_free(zTag);
  if (vt != QVT_JSON) {
    sqlite3_free(zExpr);
    return qcErr(pC, pCl->pForm, "bad binding form for %s: it returns one value, bind it to a"
                 " variable (not %s)", pCl->zName,
                 pB->kind == QB_TUPLE ? "a tuple [?a ?b]" : pB->kind == QB_COLL
                 ? "a collection [?x ...]" : "a relation [[?a ?b]]");
  }
  switch (pB->kind) {
    case QB_TUPLE:
      for (i = 0; i < pB->nVar && pC->rc == SQLITE_OK; i++) {
        qcBindJsonElem(pX, pB->aVar[i], zExpr, i);
      }
      /* A shorter collection cannot fill the tuple: no binding. */
      qcWhere(pX, sqlite3_mprintf("json_array_length(%s) >= %d", zExpr, pB->nVar));
      break;
    case QB_COLL:
      sqlite3_snprintf(sizeof zAlias, zAlias, "j%d", ++pC->nAlias);
      qcFrom(pX, sqlite3_mprintf("json_each(%s) %s", zExpr, zAlias));
      if (!qIsBlank(pB->aVar[0]) && pC->rc == SQLITE_OK) {
        char *zType = sqlite3_mprintf("%s.type", zAlias);
        char *zVal = sqlite3_mprintf("%s.value", zAlias);
        if (zType && zVal) {
          qcBindVar(pX, pB->aVar[0]->u.s.z, sqlite3_mprintf("%s", zVal), VT_NONE,
                    qcJsonTag(zType, zVal), 0);
        } else {
          qcNoMem(pC);
        }
        sqlite3_free(zType);
        sqlite3_free(zVal);
      }
      break;
    default: {
      char zDoc[32];
      sqlite3_snprintf(sizeof zAlias, zAlias, "j%d", ++pC->nAlias);
      sqlite3_snprintf(sizeof zDoc, zDoc, "%s.value", zAlias);
      qcFrom(pX, sqlite3_mprintf("json_each(%s) %s", zExpr, zAlias));
      qcWhere(pX, sqlite3_mprintf("%s.type = 'array' AND json_array_length(%s) >= %d",
                                  zAlias, zDoc, pB->nVar));
      for (i = 0; i < pB->nVar && pC->rc == SQLITE_OK; i++) {
        qcBindJsonElem(pX, pB->aVar[i], zDoc, i);
      }
      break;
    }
  }
  sqlite3_free(zExpr);
  return pC->rc;
}

/* A regular expression constant is checked (and its groups counted) when
** the query compiles; *pnGroup is -1 when the pattern is not a constant. */
static int qcRegexCheck(QCtx *pX, const EdnValue *pPat, const char *zFn, int *pnGroup) {
  char *zErr = NULL;
  *pnGroup = -1;
  if (pPat->type != EDN_STRING) return SQLITE_OK;
  if (qfRegexGroups(pPat->u.s.z, pPat->u.s.n, pnGroup, &zErr) != SQLITE_OK) {
    int rc = zErr ? qcErr(pX->pC, pPat, "%s: %s", zFn, zErr) : qcNoMem(pX->pC);
    sqlite3_free(zErr);
    return rc;
  }
  return SQLITE_OK;
}

/* mentat_arith's op for Clojure function z, 0 when it has none. */
static int qcArithOp(const char *z) {
  static const struct { const char *zName; int op; } aOp[] = {
    { "+", QF_ADD }, { "-", QF_SUB }, { "*", QF_MUL }, { "inc", QF_INC }, { "dec", QF_DEC },
    { "abs", QF_ABS }, { "quot", QF_QUOT }, { "mod", QF_MOD }, { "rem", QF_REM },
    { "/", QF_DIV },
  };
  int i;
  for (i = 0; i < (int)(sizeof aOp / sizeof aOp[0]); i++) {
    if (strcmp(z, aOp[i].zName) == 0) return aOp[i].op;
  }
  return 0;
}

/* Value functions: Clojure's arithmetic, comparison and string functions
** Datomic documents. Returns 1 when pCl names one (then *pzExpr is its SQL,
** or NULL on error in pC->rc, *pvt its type and, when that is VT_NONE, *pzTag
** the SQL of its tag), 0 otherwise. */
static int qcValueFn(QCtx *pX, const QClause *pCl, char **pzExpr, ValueType *pvt,
                     char **pzTag) {
  /* bNum: takes numbers only, as Clojure's arithmetic does. */
  static const struct { const char *zName; int nMin, nMax, bNum; } aFn[] = {
    { "+", 0, 16, 1 }, { "-", 1, 16, 1 }, { "*", 0, 16, 1 }, { "/", 1, 16, 1 },
    { "quot", 2, 2, 1 }, { "rem", 2, 2, 1 }, { "mod", 2, 2, 1 }, { "inc", 1, 1, 1 },
    { "dec", 1, 1, 1 }, { "max", 1, 16, 1 }, { "min", 1, 16, 1 }, { "abs", 1, 1, 1 },
    { "compare", 2, 2, 0 }, { "count", 1, 1, 0 }, { "str", 0, 16, 0 }, { "subs", 2, 3, 0 },
    { "identity", 1, 1, 0 }, { "tuple", 1, 16, 0 }, { "clojure.string/upper-case", 1, 1, 0 },
    { "clojure.string/lower-case", 1, 1, 0 }, { "re-find", 2, 2, 0 },
    { "re-matches", 2, 2, 0 }, { "re-pattern", 1, 1, 0 }, { "re-seq", 2, 2, 0 },
  };
  QComp *pC = pX->pC;
  const char *z = pCl->zName;
  sqlite3_str *pOut;
  char *azA[16], *azTag[16];
  ValueType aVt[16];
  int i, iFn, op, n = pCl->nArg, bDouble = 0;
  char *zPlace = NULL;    /* this clause's place, for run-time errors */
  ValueType vtOut = VT_LONG;
  *pzExpr = NULL;
  *pzTag = NULL;
  for (iFn = 0; iFn < (int)(sizeof aFn / sizeof aFn[0]); iFn++) {
    if (strcmp(z, aFn[iFn].zName) == 0) break;
  }
  if (iFn == (int)(sizeof aFn / sizeof aFn[0])) return 0;
  if (n < aFn[iFn].nMin || n > aFn[iFn].nMax) {
    if (aFn[iFn].nMin == aFn[iFn].nMax) {
      qcErr(pC, pCl->pForm, "%s takes %d argument(s), got %d", z, aFn[iFn].nMin, n);
    } else {
      qcErr(pC, pCl->pForm, "%s takes %d to %d arguments, got %d", z, aFn[iFn].nMin,
            aFn[iFn].nMax, n);
    }
    return 1;
  }
  memset(azA, 0, sizeof azA);
  memset(azTag, 0, sizeof azTag);
  for (i = 0; i < n; i++) {
    azA[i] = qcTermExpr(pX, pCl->aArg[i], &aVt[i], &azTag[i], "function");
    if (azA[i] == NULL) goto cleanup;
    if (aVt[i] == VT_DOUBLE) bDouble = 1;
  }
  if (aFn[iFn].bNum) {
    /* Clojure's arithmetic takes numbers only (Datomic throws a
    ** ClassCastException): SQLite would read "ann" as 0 and "7" as 7. A
    ** place whose type is known is checked here; one of unknown type
    ** (a rule's output, an attribute variable) yields NULL unless it holds a
    ** number or an entity id, which binds nothing, as a nil result does. */
    for (i = 0; i < n; i++) {
      if (aVt[i] == VT_LONG || aVt[i] == VT_DOUBLE || aVt[i] == VT_REF) continue;
      if (aVt[i] != VT_NONE) {
        qcErr(pC, pCl->pForm, "%s: argument %d is a %s, not a number", z, i + 1, qcVtName(aVt[i]));
        goto cleanup;
      }
      {
        char *zNum = azTag[i]
            ? sqlite3_mprintf("(CASE WHEN (%s) IN (%d, %d) THEN (%s) END)", azTag[i], TAG_REF,
                              TAG_NUMBER, azA[i])
            : sqlite3_mprintf("(CASE WHEN typeof(%s) IN ('integer', 'real') THEN (%s) END)",
                              azA[i], azA[i]);
        if (zNum == NULL) { pC->rc = SQLITE_NOMEM; goto cleanup; }
        sqlite3_free(azA[i]);
        azA[i] = zNum;
      }
    }
  }
  if (strncmp(z, "re-", 3) == 0) {
    /* re-find, re-matches, re-seq and re-pattern take strings (Clojure
    ** throws a ClassCastException for a long or a keyword): a typed place
    ** is checked here, one of unknown type yields NULL (binds nothing)
    ** unless it holds a string, as arithmetic's numbers do */
    for (i = 0; i < n; i++) {
      char *zStr;
      if (aVt[i] == VT_STRING) continue;
      if (aVt[i] != VT_NONE) {
        qcErr(pC, pCl->pForm, "%s: argument %d is a %s, not a string", z, i + 1, qcVtName(aVt[i]));
        goto cleanup;
      }
      zStr = azTag[i]
          ? sqlite3_mprintf("(CASE WHEN (%s) = %d THEN (%s) END)", azTag[i], TAG_STRING, azA[i])
          : sqlite3_mprintf("(CASE WHEN typeof(%s) = 'text' THEN (%s) END)", azA[i], azA[i]);
      if (zStr == NULL) { pC->rc = SQLITE_NOMEM; goto cleanup; }
      sqlite3_free(azA[i]);
      azA[i] = zStr;
    }
  }
  pOut = sqlite3_str_new(NULL);
  zPlace = qcPlaceSql(pCl->pForm, z);
  if (zPlace == NULL) { sqlite3_free(sqlite3_str_finish(pOut)); qcNoMem(pC); goto cleanup; }
  op = qcArithOp(z);
  if (op != 0 && (!bDouble || op == QF_QUOT || op == QF_REM || op == QF_MOD || op == QF_DIV)) {
    /* May be longs: checked, an overflow an error at this clause (SQLite's
    ** operators would give a double). With a double argument +, -, *, inc,
    ** dec and abs are SQLite's operators below (doubles do not overflow);
    ** quot, rem, mod and / are not (SQLite's % and CAST take integer parts,
    ** and a zero divisor must be an error, not NULL). / of longs is a long
    ** when whole, else a double: its static type stays VT_LONG, and the
    ** storage class says which (numbers share one tag). */
    sqlite3_str_appendf(pOut, "mentat_arith(%d, %s", op, zPlace);
    for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, ", %s", azA[i]);
    sqlite3_str_appendall(pOut, ")");
    if (bDouble) vtOut = VT_DOUBLE;
  } else if (strcmp(z, "+") == 0 || strcmp(z, "-") == 0 || strcmp(z, "*") == 0) {
    sqlite3_str_appendall(pOut, "(");
    if (n == 1 && z[0] == '-') sqlite3_str_appendall(pOut, "-");
    for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, "%s(%s)", i ? z : "", azA[i]);
    sqlite3_str_appendall(pOut, ")");
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if (strcmp(z, "inc") == 0 || strcmp(z, "dec") == 0) {
    sqlite3_str_appendf(pOut, "((%s) %s 1)", azA[0], z[0] == 'i' ? "+" : "-");
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if (strcmp(z, "max") == 0 || strcmp(z, "min") == 0) {
    if (n == 1) {
      sqlite3_str_appendf(pOut, "(%s)", azA[0]);
      vtOut = aVt[0];
      *pzTag = azTag[0];
      azTag[0] = NULL;
    } else {
      sqlite3_str_appendf(pOut, "%s(", z);
      for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, "%s%s", i ? ", " : "", azA[i]);
      sqlite3_str_appendall(pOut, ")");
      vtOut = bDouble ? VT_DOUBLE : aVt[0];
      for (i = 1; i < n; i++) if (aVt[i] != aVt[0] && !bDouble) vtOut = VT_LONG;
    }
  } else if (strcmp(z, "abs") == 0) {
    sqlite3_str_appendf(pOut, "abs(%s)", azA[0]);
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if (strcmp(z, "compare") == 0) {
    /* Clojure's compare as its sign: -1, 0 or 1; keywords in its order
    ** (COLLATE mentat_kw), decided by the tags when both types are unknown. */
    const char *zCmp = "(CASE WHEN (%s) < (%s)%s THEN -1 WHEN (%s) > (%s)%s THEN 1 ELSE 0 END)";
    const char *zKw = " COLLATE mentat_kw";
    if (aVt[0] == VT_NONE && aVt[1] == VT_NONE && azTag[0] && azTag[1]) {
      sqlite3_str_appendf(pOut, "(CASE WHEN %s = %d AND %s = %d THEN ", azTag[0], TAG_KEYWORD,
                          azTag[1], TAG_KEYWORD);
      sqlite3_str_appendf(pOut, zCmp, azA[0], azA[1], zKw, azA[0], azA[1], zKw);
      sqlite3_str_appendall(pOut, " ELSE ");
      sqlite3_str_appendf(pOut, zCmp, azA[0], azA[1], "", azA[0], azA[1], "");
      sqlite3_str_appendall(pOut, " END)");
    } else {
      const char *zColl = *qcKwCollate(aVt[0]) && *qcKwCollate(aVt[1]) ? zKw : "";
      sqlite3_str_appendf(pOut, zCmp, azA[0], azA[1], zColl, azA[0], azA[1], zColl);
    }
  } else if (strcmp(z, "count") == 0) {
    if (aVt[0] == QVT_JSON) {
      /* a map counts its entries (json_array_length gives 0 for one) */
      sqlite3_str_appendf(pOut, "(CASE json_type(%s) WHEN 'object' THEN (SELECT count(*) FROM json_each(%s)) "
                          "ELSE json_array_length(%s) END)", azA[0], azA[0], azA[0]);
    }
    else sqlite3_str_appendf(pOut, "length(%s)", azA[0]);
  } else if (strcmp(z, "str") == 0) {
    /* Each value printed as Clojure's str does (true, instants, uuids). */
    sqlite3_str_appendall(pOut, "(''");
    for (i = 0; i < n; i++) {
      if (aVt[i] == QVT_JSON) sqlite3_str_appendf(pOut, " || (%s)", azA[i]);
      else if (aVt[i] == VT_NONE) {
        sqlite3_str_appendf(pOut, " || mentat_str(%s, %s)", azA[i], azTag[i] ? azTag[i] : "NULL");
      } else {
        sqlite3_str_appendf(pOut, " || mentat_str(%s, %d)", azA[i], vtTag(aVt[i]));
      }
    }
    sqlite3_str_appendall(pOut, ")");
    vtOut = VT_STRING;
  } else if (strcmp(z, "clojure.string/upper-case") == 0) {
    sqlite3_str_appendf(pOut, "mentat_case(1, %s)", azA[0]);
    vtOut = VT_STRING;
  } else if (strcmp(z, "clojure.string/lower-case") == 0) {
    sqlite3_str_appendf(pOut, "mentat_case(0, %s)", azA[0]);
    vtOut = VT_STRING;
  } else if (strcmp(z, "subs") == 0) {
    /* an error out of range, as Clojure's (SQLite's substr clamps) */
    sqlite3_str_appendf(pOut, "mentat_subs(%s, %s, %s", zPlace, azA[0], azA[1]);
    if (n == 3) sqlite3_str_appendf(pOut, ", %s", azA[2]);
    sqlite3_str_appendall(pOut, ")");
    vtOut = VT_STRING;
  } else if (strcmp(z, "identity") == 0 || strcmp(z, "re-pattern") == 0) {
    sqlite3_str_appendall(pOut, azA[0]);
    vtOut = aVt[0];
    *pzTag = azTag[0];    /* the tag travels with the value */
    azTag[0] = NULL;
  } else if (strcmp(z, "re-find") == 0 || strcmp(z, "re-matches") == 0) {
    /* Clojure: the match, or with groups a vector [whole g1 ...]; the
    ** groups are known when the pattern is a constant. */
    int nGroup, iMode = z[3] == 'm' ? 1 : 0;
    if (qcRegexCheck(pX, pCl->aArg[0], z, &nGroup) == SQLITE_OK) {
      /* the place names a bad pattern that comes from a variable */
      sqlite3_str_appendf(pOut, "mentat_regex(%d, %s, %s, %s)", nGroup > 0 ? iMode + 2 : iMode,
                          azA[0], azA[1], zPlace);
      vtOut = nGroup > 0 ? QVT_JSON : VT_STRING;
    }
  } else if (strcmp(z, "re-seq") == 0) {
    /* Clojure: every match in turn (each [whole g1 ...] with groups, which
    ** mentat_regex learns from the pattern itself), nil when none */
    int nGroup;
    if (qcRegexCheck(pX, pCl->aArg[0], z, &nGroup) == SQLITE_OK) {
      sqlite3_str_appendf(pOut, "mentat_regex(%d, %s, %s, %s)", QF_RE_SEQ, azA[0], azA[1], zPlace);
      vtOut = QVT_JSON;
    }
  } else {   /* tuple */
    sqlite3_str_appendall(pOut, "json_array(");
    for (i = 0; i < n; i++) {
      if (aVt[i] == QVT_JSON) sqlite3_str_appendf(pOut, "%sjson(%s)", i ? ", " : "", azA[i]);
      else if (aVt[i] == VT_NONE) {
        sqlite3_str_appendf(pOut, "%smentat_json(%s, %s)", i ? ", " : "", azA[i],
                            azTag[i] ? azTag[i] : "NULL");
      } else {
        sqlite3_str_appendf(pOut, "%smentat_json(%s, %d)", i ? ", " : "", azA[i], vtTag(aVt[i]));
      }
    }
    sqlite3_str_appendall(pOut, ")");
    vtOut = QVT_JSON;
  }
  *pzExpr = sqlite3_str_finish(pOut);
  if (pC->rc) {
    sqlite3_free(*pzExpr);
    *pzExpr = NULL;
  } else if (*pzExpr == NULL) {
    qcNoMem(pC);
  }
  *pvt = vtOut;
  if (vtOut != VT_NONE || *pzExpr == NULL) {
    sqlite3_free(*pzTag);
    *pzTag = NULL;
  }
cleanup:
  for (i = 0; i < n; i++) {
    sqlite3_free(azA[i]);
    sqlite3_free(azTag[i]);
  }
  sqlite3_free(zPlace);
  return 1;
}

static int qcGetElse(QCtx *pX, const QClause *pCl, const EdnValue *const *aArg, int nArg) {
  QComp *pC = pX->pC;
  const Attr *pA;
  char *zE, *zSub, *zD, *zTagD = NULL;
  ValueType vtD;
  if (nArg != 3) return qcErr(pC, pCl->pForm, "get-else takes $, an entity, an attribute and a default");
  if (aArg[2]->type == EDN_NIL) return qcErr(pC, aArg[2], "get-else: the default must not be nil");
  pA = qcAttrArg(pX, aArg[1], "get-else");
  if (pC->rc) return pC->rc;
  if (pA && pA->bMany) return qcErr(pC, aArg[1], "get-else: %s is cardinality many", aArg[1]->u.s.z);
  zE = qcEntityExpr(pX, aArg[0], "get-else");
  if (zE == NULL) return pC->rc;
  if (pA == NULL) {
    /* an attribute no store has: always the default */
    zD = qcTermExpr(pX, aArg[2], &vtD, &zTagD, "function");
    sqlite3_free(zE);
    if (zD == NULL) return pC->rc;
    return qcBindResult(pX, pCl, zD, vtD, zTagD);
  }
  zSub = qcEntityAttrSql(pX, pCl->pForm, "get-else", "g.v", zE, pA->e);
  sqlite3_free(zE);
  if (zSub == NULL) return pC->rc;
  /* The default is returned as given, in its own type (Datomic's "Outer
  ** Joins" tech note: [(get-else $ ?e :artist/startYear "Unknown") ?y];
  ** DataScript: (if-some [d ...] (:v d) else-val)): a keyword default on a
  ** ref attribute stays the keyword, 0 on a double attribute stays a long.
  ** Only a default of the attribute's type (or a long on a ref one: an
  ** entity id is a long) keeps the attribute's static type; otherwise the
  ** result is of mixed type, tagged per row. */
  zD = qcTermExpr(pX, aArg[2], &vtD, &zTagD, "function");
  if (zD == NULL) {
    sqlite3_free(zSub);
    return pC->rc;
  }
  if (vtD == pA->type || (pA->type == VT_REF && vtD == VT_LONG)) {
    qcBindResult(pX, pCl, sqlite3_mprintf("COALESCE((%s), %s)", zSub, zD), pA->type, NULL);
  } else {
    char *zTag;
    if (vtD == VT_NONE && zTagD) {
      zTag = sqlite3_mprintf("(CASE WHEN (%s) IS NULL THEN %s ELSE %d END)", zSub, zTagD,
                             vtTag(pA->type));
    } else {
      zTag = sqlite3_mprintf("(CASE WHEN (%s) IS NULL THEN %d ELSE %d END)", zSub,
                             vtD == QVT_JSON ? TAG_JSON : vtTag(vtD), vtTag(pA->type));
    }
    if (zTag == NULL) qcNoMem(pC);
    else qcBindResult(pX, pCl, sqlite3_mprintf("COALESCE((%s), %s)", zSub, zD), VT_NONE, zTag);
  }
  sqlite3_free(zSub);
  sqlite3_free(zD);
  sqlite3_free(zTagD);
  return pC->rc;
}

static int qcGetSome(QCtx *pX, const QClause *pCl, const EdnValue *const *aArg, int nArg) {
  QComp *pC = pX->pC;
  sqlite3_str *pA, *pV, *pT;
  ValueType vtAll = VT_NONE;
  char *zE, *zAttr, *zVal, *zTag, *zHas, *zOne;
  int i, bSame = 1;
  if (nArg < 2) return qcErr(pC, pCl->pForm, "get-some takes $, an entity and attributes");
  if (pCl->bind.kind != QB_TUPLE || pCl->bind.nVar != 2) {
    return qcErr(pC, pCl->pForm, "get-some binds a tuple [?attr ?value]");
  }
  zE = qcEntityExpr(pX, aArg[0], "get-some");
  if (zE == NULL) return pC->rc;
  pA = sqlite3_str_new(NULL);
  pV = sqlite3_str_new(NULL);
  pT = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pA, "CASE");
  sqlite3_str_appendall(pV, "CASE");
  sqlite3_str_appendall(pT, "CASE");
  for (i = 1; i < nArg && pC->rc == SQLITE_OK; i++) {
    const Attr *pAt = qcAttrArg(pX, aArg[i], "get-some");
    if (pAt == NULL) continue;
    if (vtAll == VT_NONE) vtAll = pAt->type;
    else if (vtAll != pAt->type) bSame = 0;
    zHas = qcEntityAttrSql(pX, pCl->pForm, "get-some", "1", zE, pAt->e);
    zOne = qcEntityAttrSql(pX, pCl->pForm, "get-some", "g.v", zE, pAt->e);
    if (zHas && zOne) {
      sqlite3_str_appendf(pA, " WHEN EXISTS (%s) THEN %lld", zHas, pAt->e);
      sqlite3_str_appendf(pV, " WHEN EXISTS (%s) THEN (%s LIMIT 1)", zHas, zOne);
      sqlite3_str_appendf(pT, " WHEN EXISTS (%s) THEN %d", zHas, vtTag(pAt->type));
    }
    sqlite3_free(zHas);
    sqlite3_free(zOne);
  }
  sqlite3_str_appendall(pA, " END");
  sqlite3_str_appendall(pV, " END");
  sqlite3_str_appendall(pT, " END");
  zAttr = sqlite3_str_finish(pA);
  zVal = sqlite3_str_finish(pV);
  zTag = sqlite3_str_finish(pT);
  sqlite3_free(zE);
  if (zAttr == NULL || zVal == NULL || zTag == NULL) qcNoMem(pC);
  if (pC->rc == SQLITE_OK) {
    if (vtAll == VT_NONE) {
      qcWhere(pX, sqlite3_mprintf("0"));
    } else {
      qcWhere(pX, sqlite3_mprintf("(%s) IS NOT NULL", zAttr));
    }
  }
  if (pC->rc == SQLITE_OK && !qIsBlank(pCl->bind.aVar[0])) {
    qcBindVar(pX, pCl->bind.aVar[0]->u.s.z, zAttr, VT_REF, NULL, 0);
    zAttr = NULL;
  }
  if (pC->rc == SQLITE_OK && !qIsBlank(pCl->bind.aVar[1])) {
    if (bSame && vtAll != VT_NONE) {
      qcBindVar(pX, pCl->bind.aVar[1]->u.s.z, zVal, vtAll, NULL, 0);
    } else {
      qcBindVar(pX, pCl->bind.aVar[1]->u.s.z, zVal, VT_NONE, zTag, 0);
      zTag = NULL;
    }
    zVal = NULL;
  }
  sqlite3_free(zAttr);
  sqlite3_free(zVal);
  sqlite3_free(zTag);
  return pC->rc;
}

/* (untuple ?t) [?a ?b]: the elements of a tuple value. */
static int qcUntuple(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  ValueType vt;
  char *zT;
  if (pCl->nArg != 1) return qcErr(pC, pCl->pForm, "untuple takes 1 argument(s), got %d", pCl->nArg);
  if (pCl->bind.kind != QB_TUPLE) {
    return qcErr(pC, pCl->pForm, "bad binding form for untuple: bind a tuple [?a ?b ...]");
  }
  zT = qcTermExpr(pX, pCl->aArg[0], &vt, NULL, "function");
  if (zT == NULL) return pC->rc;
  return qcBindResult(pX, pCl, zT, QVT_JSON, NULL);
}

static int qcFulltext(QCtx *pX, const QClause *pCl, const EdnValue *const *aArg, int nArg) {
  QComp *pC = pX->pC;
  const Attr *pA;
  ValueType vt;
  char *zQ;
  char zD[24], zF[24];
  int i;
  if (nArg != 2) return qcErr(pC, pCl->pForm, "fulltext takes $, an attribute and a search string");
  if (pCl->bind.kind != QB_REL || pCl->bind.nVar > 4) {
    return qcErr(pC, pCl->pForm, "fulltext binds a relation [[?e ?value ?tx ?score]]");
  }
  pA = qcAttrArg(pX, aArg[0], "fulltext");
  if (pC->rc) return pC->rc;
  if (pA && !pA->bFulltext) {
    return qcErr(pC, aArg[0], "fulltext: %s is not a :db/fulltext attribute", aArg[0]->u.s.z);
  }
  zQ = qcTermExpr(pX, aArg[1], &vt, NULL, "function");
  if (zQ == NULL) return pC->rc;
  sqlite3_snprintf(sizeof zD, zD, "d%d", ++pC->nAlias);
  sqlite3_snprintf(sizeof zF, zF, "f%d", ++pC->nAlias);
  qcFrom(pX, sqlite3_mprintf("fulltext_values %s", zF));
  {
    /* The datoms of the database the query reads (qcView). The log has no
    ** index_fulltext column; the attribute's flag says it there. */
    const char *zTable = "datoms";
    char *zCond = qcView(pC, zD, &zTable);
    if (zCond == NULL) qcNoMem(pC);
    qcFrom(pX, sqlite3_mprintf("%s %s", zTable, zD));
    if (zCond && zCond[0]) qcWhere(pX, zCond);
    else sqlite3_free(zCond);
    if (strcmp(zTable, "datoms") == 0) qcWhere(pX, sqlite3_mprintf("%s.index_fulltext IS NOT 0", zD));
  }
  if (pA == NULL) qcWhere(pX, sqlite3_mprintf("0"));
  else qcWhere(pX, sqlite3_mprintf(
      "%s.text MATCH %s AND %s.a = %lld AND %s.value_type_tag = 10"
      " AND %s.v = +%s.rowid", zF, zQ, zD, pA ? pA->e : 0, zD, zD, zF));
  sqlite3_free(zQ);
  for (i = 0; i < pCl->bind.nVar && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pVar = pCl->bind.aVar[i];
    if (qIsBlank(pVar)) continue;
    if (i == 0) qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.e", zD), VT_REF, NULL, 1);
    else if (i == 1) qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.text", zF), VT_STRING, NULL, 0);
    else if (i == 2) qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.tx", zD), VT_REF, NULL, 1);
    else qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("0.0"), VT_DOUBLE, NULL, 0);
  }
  return pC->rc;
}

/* The SQL of the first transaction at or after instant zInst (µs): the
** point an #inst names in the log, as Datomic's tx-range reads a Date (its
** start inclusive, its end exclusive: tx < it is "instant < zInst", since
** instants grow with tx ids, tx.c). Past the last transaction: the largest
** id, so nothing is at or after it. */
static char *qcTxAtInstant(const char *zInst) {
  return sqlite3_mprintf("coalesce((SELECT min(e) FROM datoms WHERE a = %d AND value_type_tag = %d"
                         " AND v >= (%s)), 9223372036854775807)",
                         ENTID_DB_TXINSTANT, TAG_INSTANT, zInst);
}

/* A point in time argument of the log functions (Datomic's tx-range: a tx
** id or a transaction instant), as SQL giving a tx id. An #inst becomes
** the first transaction at or after it; nil (when bOpen is given) is no
** bound: NULL and *pbOpen set. Any other type is an error naming zFn, the
** argument's role zRole and the argument: at compile time when its type
** is known, else when the row reaches it (mentat_tx_point). */
static char *qcTxPoint(QCtx *pX, const EdnValue *pArg, const char *zFn, const char *zRole,
                       int *pbOpen) {
  QComp *pC = pX->pC;
  ValueType vt = VT_NONE;
  char *zV, *zTag = NULL, *zOut = NULL, *zName;
  sqlite3_str *pName;
  if (pbOpen) *pbOpen = 0;
  pName = sqlite3_str_new(NULL);
  ednPrint(pName, pArg);
  zName = sqlite3_str_finish(pName);
  if (zName == NULL) { qcNoMem(pC); return NULL; }
  if (pArg->type == EDN_NIL) {
    if (pbOpen) *pbOpen = 1;
    else qcErr(pC, pArg, "%s: %s nil is not a tx id or an #inst", zFn, zRole);
    sqlite3_free(zName);
    return NULL;
  }
  zV = qcTermExpr(pX, pArg, &vt, &zTag, "function");
  if (zV == NULL) goto cleanup;
  if (vt == VT_REF || vt == VT_LONG) {
    zOut = zV;
    zV = NULL;
  } else if (vt == VT_INSTANT) {
    zOut = qcTxAtInstant(zV);
  } else if (vt != VT_NONE) {
    qcErr(pC, pArg, "%s: %s %s is a %s, not a tx id or an #inst", zFn, zRole, zName, qcVtName(vt));
  } else {
    /* Its type is known only per row: an instant's tag picks the instant
    ** reading, anything else must be an entity id or a long. */
    char *zWhere = sqlite3_mprintf("line %d col %d: %s: %s %s", pArg->line, pArg->col, zFn, zRole,
                                   zName);
    char *zInst = qcTxAtInstant(zV);
    if (zWhere && zInst) {
      zOut = zTag ? sqlite3_mprintf("(CASE WHEN (%s) = %d THEN %s ELSE mentat_tx_point(%s, %s, %Q) END)",
                                    zTag, TAG_INSTANT, zInst, zV, zTag, zWhere)
                  : sqlite3_mprintf("mentat_tx_point(%s, NULL, %Q)", zV, zWhere);
    }
    sqlite3_free(zWhere);
    sqlite3_free(zInst);
  }
  if (zOut == NULL && pC->rc == SQLITE_OK) qcNoMem(pC);
cleanup:
  if (pC->rc != SQLITE_OK) {
    sqlite3_free(zOut);
    zOut = NULL;
  }
  sqlite3_free(zV);
  sqlite3_free(zTag);
  sqlite3_free(zName);
  return zOut;
}

/* (tx-ids $ start end): the transactions with start <= tx < end, from the
** log (Datomic's tx-ids over tx-range: each bound a tx id, an #inst or nil
** for the log's beginning or end); bound as a collection [?tx ...]. */
static int qcTxIds(QCtx *pX, const QClause *pCl, const EdnValue *const *aArg, int nArg) {
  QComp *pC = pX->pC;
  char *zFrom = NULL, *zTo = NULL;
  char zAlias[24];
  int bOpenFrom = 0, bOpenTo = 0;
  if (nArg != 2) return qcErr(pC, pCl->pForm, "tx-ids takes $, a start and an end tx");
  if (pCl->bind.kind != QB_COLL && pCl->bind.kind != QB_SCALAR) {
    return qcErr(pC, pCl->pForm, "tx-ids binds a collection [?tx ...]");
  }
  zFrom = qcTxPoint(pX, aArg[0], "tx-ids", "start", &bOpenFrom);
  if (pC->rc == SQLITE_OK) zTo = qcTxPoint(pX, aArg[1], "tx-ids", "end", &bOpenTo);
  if (pC->rc == SQLITE_OK) {
    sqlite3_snprintf(sizeof zAlias, zAlias, "x%d", ++pC->nAlias);
    /* A plain join (a derived table could not see ?from/?to): rows repeat
    ** per datom, and the query's DISTINCT makes them a set again. */
    qcFrom(pX, sqlite3_mprintf("timelined_transactions %s", zAlias));
    qcWhere(pX, sqlite3_mprintf("%s.timeline IS 0", zAlias));
    if (!bOpenFrom) qcWhere(pX, sqlite3_mprintf("%s.tx >= %s", zAlias, zFrom));
    if (!bOpenTo) qcWhere(pX, sqlite3_mprintf("%s.tx < %s", zAlias, zTo));
    if (!qIsBlank(pCl->bind.aVar[0])) {
      qcBindVar(pX, pCl->bind.aVar[0]->u.s.z, sqlite3_mprintf("%s.tx", zAlias), VT_REF, NULL, 0);
    }
  }
  sqlite3_free(zFrom);
  sqlite3_free(zTo);
  return pC->rc;
}

/* (tx-data $ tx): the log rows of one transaction (a tx id, or an #inst:
** the first transaction at or after it), bound as a relation
** [[?e ?a ?v ?tx ?added]]. */
static int qcTxData(QCtx *pX, const QClause *pCl, const EdnValue *const *aArg, int nArg) {
  QComp *pC = pX->pC;
  char *zTx;
  char zAlias[24];
  int i;
  if (nArg != 1) return qcErr(pC, pCl->pForm, "tx-data takes $ and a tx");
  if (pCl->bind.kind != QB_REL || pCl->bind.nVar > 5) {
    return qcErr(pC, pCl->pForm, "tx-data binds a relation [[?e ?a ?v ?tx ?added]]");
  }
  zTx = qcTxPoint(pX, aArg[0], "tx-data", "tx", NULL);
  if (zTx == NULL) return pC->rc;
  sqlite3_snprintf(sizeof zAlias, zAlias, "x%d", ++pC->nAlias);
  qcFrom(pX, sqlite3_mprintf("timelined_transactions %s", zAlias));
  qcWhere(pX, sqlite3_mprintf("%s.timeline IS 0 AND %s.tx = %s", zAlias, zAlias, zTx));
  sqlite3_free(zTx);
  for (i = 0; i < pCl->bind.nVar && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pVar = pCl->bind.aVar[i];
    if (qIsBlank(pVar)) continue;
    switch (i) {
      case 0: qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.e", zAlias), VT_REF, NULL, 1); break;
      case 1: qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.a", zAlias), VT_REF, NULL, 1); break;
      case 2:
        qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.v", zAlias), VT_NONE,
                  sqlite3_mprintf("%s.value_type_tag", zAlias), 0);
        break;
      case 3: qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.tx", zAlias), VT_REF, NULL, 1); break;
      default:
        qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.added", zAlias), VT_BOOLEAN, NULL, 0);
        break;
    }
  }
  return pC->rc;
}

/* (type ?v): the value type keyword of a value, e.g. :db.type/long. */
static int qcType(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  ValueType vt;
  char *zTag = NULL, *zV, *zExpr;
  if (pCl->nArg != 1) return qcErr(pC, pCl->pForm, "type takes one value");
  zV = qcTermExpr(pX, pCl->aArg[0], &vt, &zTag, "function");
  if (zV == NULL) return pC->rc;
  if (vt != VT_NONE && vt != QVT_JSON) {
    zExpr = sqlite3_mprintf("'%q'", vt == VT_LONG || vt == VT_DOUBLE ? "" : vtName(vt));
    if (vt == VT_LONG || vt == VT_DOUBLE) {
      sqlite3_free(zExpr);
      zExpr = sqlite3_mprintf("(CASE typeof(%s) WHEN 'integer' THEN ':db.type/long'"
                              " ELSE ':db.type/double' END)", zV);
    }
  } else {
    zExpr = sqlite3_mprintf(
        "(CASE %s WHEN 0 THEN ':db.type/ref' WHEN 1 THEN ':db.type/boolean' WHEN 4 THEN"
        " ':db.type/instant' WHEN 5 THEN (CASE typeof(%s) WHEN 'integer' THEN ':db.type/long'"
        " ELSE ':db.type/double' END) WHEN 10 THEN ':db.type/string' WHEN 11 THEN"
        " ':db.type/uuid' WHEN 13 THEN ':db.type/keyword' WHEN 15 THEN ':db.type/bytes' END)",
        zTag ? zTag : "NULL", zV);
  }
  sqlite3_free(zV);
  sqlite3_free(zTag);
  if (zExpr == NULL) return qcNoMem(pC);
  return qcBindResult(pX, pCl, zExpr, VT_KEYWORD, NULL);
}

int qcFunction(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  const EdnValue *const *aArg;
  int nArg;
  const char *z = pCl->zName;
  char *zExpr = NULL, *zTag = NULL;
  ValueType vt;
  qcSkipSrc(pCl, &aArg, &nArg);
  pC->nArgDepth = 0;
  if (strcmp(z, "ground") == 0) {
    if (pCl->nArg != 1) return qcErr(pC, pCl->pForm, "ground takes 1 argument(s), got %d", pCl->nArg);
    if (ednIsVar(pCl->aArg[0])) {
      zExpr = qcTermExpr(pX, pCl->aArg[0], &vt, &zTag, "function");
      if (zExpr == NULL) return pC->rc;
      return qcBindResult(pX, pCl, zExpr, vt, zTag);
    }
    return qcBindValue(pX, &pCl->bind, pCl->aArg[0], -1, "ground");
  }
  if (strcmp(z, "get-else") == 0) return qcGetElse(pX, pCl, aArg, nArg);
  if (strcmp(z, "get-some") == 0) return qcGetSome(pX, pCl, aArg, nArg);
  if (strcmp(z, "untuple") == 0) return qcUntuple(pX, pCl);
  if (strcmp(z, "fulltext") == 0) return qcFulltext(pX, pCl, aArg, nArg);
  if (strcmp(z, "tx-ids") == 0) return qcTxIds(pX, pCl, aArg, nArg);
  if (strcmp(z, "tx-data") == 0) return qcTxData(pX, pCl, aArg, nArg);
  if (strcmp(z, "type") == 0) return qcType(pX, pCl);
  /* A predicate bound to a variable gives its truth as a boolean. */
  if (qcPredExpr(pX, pCl, &zExpr)) {
    char *zBool;
    if (zExpr == NULL) return pC->rc;
    zBool = sqlite3_mprintf("(CASE WHEN %s THEN 1 ELSE 0 END)", zExpr);
    sqlite3_free(zExpr);
    return qcBindResult(pX, pCl, zBool, VT_BOOLEAN, NULL);
  }
  if (qcValueFn(pX, pCl, &zExpr, &vt, &zTag)) {
    if (zExpr == NULL) return pC->rc;
    return qcBindResult(pX, pCl, zExpr, vt, zTag);
  }
  if (pC->rc) return pC->rc;
  return qcErr(pC, pCl->pForm, "unknown function %s", z);
}
