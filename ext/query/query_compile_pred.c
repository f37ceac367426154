/*
** query_compile_pred.c — boolean expressions: comparisons (=, !=, <, ...,
** chained), Clojure-style predicates (zero?, pos?, even?, nil?,
** missing? ...) as SQL conditions. Takes a function clause; gives a WHERE
** term, or 0 when the name is no predicate. Calls the scope and SQL helpers.
**
** HOW IT WORKS
** Comparisons only hold within one type class (numbers, strings, instants,
** keywords ...): when a side's type is not static its tag is constrained,
** so `[(> ?v 0)]` over `[?e _ ?v]` never sees booleans, refs or instants as
** numbers. Predicates that read the store (missing?) are correlated scalar
** subqueries on the datoms indexes.
*/
#include <string.h>
#include "query_compile_scope.h"

/* The tags of a comparison class, as an SQL list. */
static const char *qcpClassTags(int iClass) {
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
static char *qcpCompare(QCtx *pX, const EdnValue *pA, const EdnValue *pB, const char *zOp,
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
                        : qcpClassTags(qcTypeClass(vtKnown));
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

/* Clojure predicates of one or two arguments: SQL format and arity. */
static const struct { const char *zName; const char *zFmt; int nArg; } aQcpPred[] = {
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
static const struct { const char *zName, *zOp; int bNe, bValue; } aQcpCmp[] = {
  { "=", "=", 0, 1 }, { "==", "=", 0, 0 }, { "!=", "!=", 1, 1 }, { "not=", "!=", 1, 1 },
  { "<", "<", 0, 0 }, { "<=", "<=", 0, 0 }, { ">", ">", 0, 0 }, { ">=", ">=", 0, 0 },
};

/* Appends the terms of a chain of comparisons joined by zJoin. */
static void qcpCompareChain(QCtx *pX, sqlite3_str *pOut, const EdnValue *const *aA,
                            const EdnValue *const *aB, int n, const char *zOp, int bNe,
                            int bValue, const char *zJoin) {
  int j;
  for (j = 0; j < n && pX->pC->rc == SQLITE_OK; j++) {
    char *zT = qcpCompare(pX, aA[j], aB[j], zOp, bNe, bValue);
    if (zT) sqlite3_str_appendf(pOut, "%s%s", j ? zJoin : "", zT);
    sqlite3_free(zT);
  }
}

/* The SQL truth value of pCl when its name is a boolean predicate (Datomic's
** comparison, Clojure predicates, missing?, differ?). Returns 1 when the name
** is one (then *pzOut is the expression, or NULL on error: see pC->rc), 0 when
** it is not a predicate name (then the caller tries value functions). */
int qcpExpr(QCtx *pX, const QClause *pCl, char **pzOut) {
  QComp *pC = pX->pC;
  const char *z = pCl->zName;
  const EdnValue *const *aArg;
  int nArg, i;
  *pzOut = NULL;
  for (i = 0; i < (int)(sizeof aQcpCmp / sizeof aQcpCmp[0]); i++) {
    sqlite3_str *pOut;
    int n = pCl->nArg;
    if (strcmp(z, aQcpCmp[i].zName) != 0) continue;
    if (n < 2) {
      qcErr(pC, pCl->pForm, "%s needs at least two arguments", z);
      return 1;
    }
    pOut = sqlite3_str_new(NULL);
    sqlite3_str_appendall(pOut, "(");
    if (aQcpCmp[i].bNe && n > 2) {
      /* (not= a b c) is (not (= a b c)): true unless all are equal. */
      sqlite3_str_appendall(pOut, "NOT (");
      qcpCompareChain(pX, pOut, pCl->aArg, pCl->aArg + 1, n - 1, "=", 0, 1, " AND ");
      sqlite3_str_appendall(pOut, ")");
    } else {
      qcpCompareChain(pX, pOut, pCl->aArg, pCl->aArg + 1, n - 1, aQcpCmp[i].zOp,
                      aQcpCmp[i].bNe, aQcpCmp[i].bValue, " AND ");
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
    qcpCompareChain(pX, pOut, pCl->aArg, pCl->aArg + h, h, "!=", 1, 1, " OR ");
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
  for (i = 0; i < (int)(sizeof aQcpPred / sizeof aQcpPred[0]); i++) {
    ValueType vt;
    char *zA, *zB = NULL;
    if (strcmp(z, aQcpPred[i].zName) != 0) continue;
    if (pCl->nArg != aQcpPred[i].nArg) {
      qcErr(pC, pCl->pForm, "%s takes %d argument(s), got %d", z, aQcpPred[i].nArg, pCl->nArg);
      return 1;
    }
    zA = qcTermExpr(pX, pCl->aArg[0], &vt, NULL, "predicate");
    if (zA && pCl->nArg == 2) zB = qcTermExpr(pX, pCl->aArg[1], &vt, NULL, "predicate");
    if (pC->rc == SQLITE_OK) {
      if (strcmp(z, "clojure.string/starts-with?") == 0) {
        *pzOut = sqlite3_mprintf(aQcpPred[i].zFmt, zA, zB, zB);
      } else if (pCl->nArg == 2) {
        *pzOut = sqlite3_mprintf(aQcpPred[i].zFmt, zA, zB);
      } else {
        *pzOut = sqlite3_mprintf(aQcpPred[i].zFmt, zA);
      }
      if (*pzOut == NULL) qcNoMem(pC);
    }
    sqlite3_free(zA);
    sqlite3_free(zB);
    return 1;
  }
  return 0;
}
