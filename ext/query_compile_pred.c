/*
** query_compile_pred.c — predicates and function expressions in :where:
** comparisons, Clojure-style predicates, arithmetic and string functions,
** ground, get-else, get-some, missing?, tuple/untuple, fulltext, tx-ids,
** tx-data and type.
**
** HOW IT WORKS
** A predicate becomes a WHERE term; a function becomes an SQL expression
** bound to its result variable (or an equality when the variable is
** already bound). Comparisons only hold within one type class (numbers,
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

static char *qcCompare(QCtx *pX, const EdnValue *pA, const EdnValue *pB, const char *zOp,
                       int bNe) {
  ValueType vtA, vtB;
  char *zTagA = NULL, *zTagB = NULL, *zOut = NULL;
  char *zA = qcTermExpr(pX, pA, &vtA, &zTagA, "predicate");
  char *zB = zA ? qcTermExpr(pX, pB, &vtB, &zTagB, "predicate") : NULL;
  if (zA == NULL || zB == NULL) goto cleanup;
  if (vtA == QVT_JSON || vtB == QVT_JSON) {
    zOut = sqlite3_mprintf("(%s %s %s)", zA, zOp, zB);
  } else if (vtA != VT_NONE && vtB != VT_NONE) {
    if (qcTypeClass(vtA) != qcTypeClass(vtB)) zOut = sqlite3_mprintf(bNe ? "1" : "0");
    else zOut = sqlite3_mprintf("(%s %s %s)", zA, zOp, zB);
  } else if (vtA == VT_NONE && vtB == VT_NONE) {
    if (bNe) zOut = sqlite3_mprintf("(%s != %s OR %s %s %s)", zTagA, zTagB, zA, zOp, zB);
    else zOut = sqlite3_mprintf("(%s = %s AND %s %s %s)", zTagA, zTagB, zA, zOp, zB);
  } else {
    const char *zTag = vtA == VT_NONE ? zTagA : zTagB;
    int iClass = qcTypeClass(vtA == VT_NONE ? vtB : vtA);
    if (bNe) {
      zOut = sqlite3_mprintf("(%s NOT IN (%s) OR %s %s %s)", zTag, qcClassTags(iClass),
                             zA, zOp, zB);
    } else {
      zOut = sqlite3_mprintf("(%s IN (%s) AND %s %s %s)", zTag, qcClassTags(iClass),
                             zA, zOp, zB);
    }
  }
  if (zOut == NULL) qcNoMem(pX->pC);
cleanup:
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

/* The attribute named by a keyword argument, or NULL (unknown: no datoms). */
static const Attr *qcAttrArg(QCtx *pX, const EdnValue *p, const char *zFn) {
  if (p->type != EDN_KEYWORD) {
    qcErr(pX->pC, p, "%s expects an attribute keyword", zFn);
    return NULL;
  }
  return schemaAttrByIdent(pX->pC->pSchema, p->u.s.z, p->u.s.n);
}

int qcPredicate(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  const char *z = pCl->zName;
  const EdnValue *const *aArg;
  int nArg, i;
  static const struct { const char *zName, *zOp; int bNe; } aCmp[] = {
    { "=", "=", 0 }, { "==", "=", 0 }, { "!=", "!=", 1 }, { "not=", "!=", 1 },
    { "<", "<", 0 }, { "<=", "<=", 0 }, { ">", ">", 0 }, { ">=", ">=", 0 },
  };
  for (i = 0; i < (int)(sizeof aCmp / sizeof aCmp[0]); i++) {
    if (strcmp(z, aCmp[i].zName) == 0) {
      int j;
      if (pCl->nArg < 2) return qcErr(pC, pCl->pForm, "%s needs at least two arguments", z);
      for (j = 0; j + 1 < pCl->nArg && pC->rc == SQLITE_OK; j++) {
        char *zT = qcCompare(pX, pCl->aArg[j], pCl->aArg[j + 1], aCmp[i].zOp, aCmp[i].bNe);
        if (zT) qcWhere(pX, zT);
      }
      return pC->rc;
    }
  }
  qcSkipSrc(pCl, &aArg, &nArg);
  if (strcmp(z, "missing?") == 0) {
    ValueType vt;
    const Attr *pA;
    char *zE;
    if (nArg != 2) return qcErr(pC, pCl->pForm, "missing? takes $, an entity and an attribute");
    pA = qcAttrArg(pX, aArg[1], z);
    if (pC->rc) return pC->rc;
    zE = qcTermExpr(pX, aArg[0], &vt, NULL, "predicate");
    if (zE == NULL) return pC->rc;
    if (pA) {
      qcWhere(pX, sqlite3_mprintf("NOT EXISTS (SELECT 1 FROM datoms WHERE e = %s AND a = %lld)",
                                  zE, pA->e));
    }
    sqlite3_free(zE);
    return pC->rc;
  }
  {
    static const struct { const char *zName; const char *zFmt; int nArg; } aFn[] = {
      { "even?", "((%s) %% 2 = 0)", 1 },
      { "odd?", "((%s) %% 2 != 0)", 1 },
      { "zero?", "((%s) = 0)", 1 },
      { "pos?", "((%s) > 0)", 1 },
      { "neg?", "((%s) < 0)", 1 },
      { "nil?", "((%s) IS NULL)", 1 },
      { "some?", "((%s) IS NOT NULL)", 1 },
      { "true?", "((%s) = 1)", 1 },
      { "false?", "((%s) = 0)", 1 },
      { "clojure.string/blank?", "(trim(%s) = '')", 1 },
      { "clojure.string/starts-with?", "(substr(%s, 1, length(%s)) = %s)", 2 },
      { "clojure.string/ends-with?", "mentat_ends_with(%s, %s)", 2 },
      { "clojure.string/includes?", "(instr(%s, %s) > 0)", 2 },
    };
    for (i = 0; i < (int)(sizeof aFn / sizeof aFn[0]); i++) {
      ValueType vt;
      char *zA, *zB = NULL;
      if (strcmp(z, aFn[i].zName) != 0) continue;
      if (nArg != aFn[i].nArg) {
        return qcErr(pC, pCl->pForm, "%s takes %d argument(s)", z, aFn[i].nArg);
      }
      zA = qcTermExpr(pX, aArg[0], &vt, NULL, "predicate");
      if (zA && nArg == 2) zB = qcTermExpr(pX, aArg[1], &vt, NULL, "predicate");
      if (pC->rc == SQLITE_OK) {
        if (strcmp(z, "clojure.string/starts-with?") == 0) {
          qcWhere(pX, sqlite3_mprintf(aFn[i].zFmt, zA, zB, zB));
        } else if (nArg == 2) {
          qcWhere(pX, sqlite3_mprintf(aFn[i].zFmt, zA, zB));
        } else {
          qcWhere(pX, sqlite3_mprintf(aFn[i].zFmt, zA));
        }
      }
      sqlite3_free(zA);
      sqlite3_free(zB);
      return pC->rc;
    }
  }
  return qcErr(pC, pCl->pForm, "unknown predicate %s", z);
}

/* ----------------------------------------------------------- functions */

static int qcBindResult(QCtx *pX, const QClause *pCl, char *zExpr, ValueType vt, char *zTag) {
  if (pCl->bind.kind != QB_SCALAR) {
    sqlite3_free(zExpr);
    sqlite3_free(zTag);
    return qcErr(pX->pC, pCl->pForm, "%s returns one value: bind it to a variable", pCl->zName);
  }
  if (qIsBlank(pCl->bind.aVar[0])) {
    sqlite3_free(zExpr);
    sqlite3_free(zTag);
    return pX->pC->rc;
  }
  qcBindVar(pX, pCl->bind.aVar[0]->u.s.z, zExpr, vt, zTag, 0);
  return pX->pC->rc;
}

/* Arithmetic and string functions: name, SQL operator or function, arity
** (-1: any, joined by the operator). */
static int qcScalarFn(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  const char *z = pCl->zName;
  sqlite3_str *pOut;
  char *azA[8];
  ValueType aVt[8];
  int i, n = pCl->nArg, bDouble = 0;
  char *zExpr;
  ValueType vtOut = VT_LONG;
  if (n > 8) return qcErr(pC, pCl->pForm, "%s: too many arguments", z);
  memset(azA, 0, sizeof azA);
  for (i = 0; i < n; i++) {
    azA[i] = qcTermExpr(pX, pCl->aArg[i], &aVt[i], NULL, "function");
    if (azA[i] == NULL) goto cleanup;
    if (aVt[i] == VT_DOUBLE) bDouble = 1;
  }
  pOut = sqlite3_str_new(NULL);
  if ((strcmp(z, "+") == 0 || strcmp(z, "-") == 0 || strcmp(z, "*") == 0) && n >= 1) {
    sqlite3_str_appendall(pOut, "(");
    if (n == 1 && z[0] == '-') sqlite3_str_appendall(pOut, "-");
    for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, "%s(%s)", i ? z : "", azA[i]);
    sqlite3_str_appendall(pOut, ")");
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if (strcmp(z, "/") == 0 && n == 2) {
    sqlite3_str_appendf(pOut, "(CAST((%s) AS REAL) / (%s))", azA[0], azA[1]);
    vtOut = VT_DOUBLE;
  } else if (strcmp(z, "quot") == 0 && n == 2) {
    sqlite3_str_appendf(pOut, "((%s) / (%s))", azA[0], azA[1]);
  } else if (strcmp(z, "rem") == 0 && n == 2) {
    sqlite3_str_appendf(pOut, "((%s) %% (%s))", azA[0], azA[1]);
  } else if (strcmp(z, "mod") == 0 && n == 2) {
    sqlite3_str_appendf(pOut, "((((%s) %% (%s)) + (%s)) %% (%s))", azA[0], azA[1], azA[1], azA[1]);
  } else if (strcmp(z, "inc") == 0 && n == 1) {
    sqlite3_str_appendf(pOut, "((%s) + 1)", azA[0]);
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if (strcmp(z, "dec") == 0 && n == 1) {
    sqlite3_str_appendf(pOut, "((%s) - 1)", azA[0]);
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if ((strcmp(z, "max") == 0 || strcmp(z, "min") == 0) && n >= 2) {
    sqlite3_str_appendf(pOut, "%s(", z);
    for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, "%s%s", i ? ", " : "", azA[i]);
    sqlite3_str_appendall(pOut, ")");
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if (strcmp(z, "abs") == 0 && n == 1) {
    sqlite3_str_appendf(pOut, "abs(%s)", azA[0]);
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if (strcmp(z, "count") == 0 && n == 1) {
    if (aVt[0] == QVT_JSON) sqlite3_str_appendf(pOut, "json_array_length(%s)", azA[0]);
    else sqlite3_str_appendf(pOut, "length(%s)", azA[0]);
  } else if (strcmp(z, "str") == 0) {
    sqlite3_str_appendall(pOut, "(''");
    for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, " || CAST((%s) AS TEXT)", azA[i]);
    sqlite3_str_appendall(pOut, ")");
    vtOut = VT_STRING;
  } else if (strcmp(z, "clojure.string/upper-case") == 0 && n == 1) {
    sqlite3_str_appendf(pOut, "upper(%s)", azA[0]);
    vtOut = VT_STRING;
  } else if (strcmp(z, "clojure.string/lower-case") == 0 && n == 1) {
    sqlite3_str_appendf(pOut, "lower(%s)", azA[0]);
    vtOut = VT_STRING;
  } else if (strcmp(z, "subs") == 0 && (n == 2 || n == 3)) {
    if (n == 2) sqlite3_str_appendf(pOut, "substr(%s, (%s) + 1)", azA[0], azA[1]);
    else sqlite3_str_appendf(pOut, "substr(%s, (%s) + 1, (%s) - (%s))", azA[0], azA[1], azA[2], azA[1]);
    vtOut = VT_STRING;
  } else if (strcmp(z, "identity") == 0 && n == 1) {
    sqlite3_str_appendall(pOut, azA[0]);
    vtOut = aVt[0];
  } else if (strcmp(z, "tuple") == 0 && n >= 1) {
    sqlite3_str_appendall(pOut, "json_array(");
    for (i = 0; i < n; i++) {
      char *zTag = NULL;
      ValueType vt;
      char *zE = qcTermExpr(pX, pCl->aArg[i], &vt, &zTag, "function");
      if (zE == NULL) break;
      if (vt == QVT_JSON) sqlite3_str_appendf(pOut, "%sjson(%s)", i ? ", " : "", zE);
      else if (vt == VT_NONE) sqlite3_str_appendf(pOut, "%smentat_json(%s, %s)", i ? ", " : "", zE, zTag);
      else sqlite3_str_appendf(pOut, "%smentat_json(%s, %d)", i ? ", " : "", zE, vtTag(vt));
      sqlite3_free(zE);
      sqlite3_free(zTag);
    }
    sqlite3_str_appendall(pOut, ")");
    vtOut = QVT_JSON;
  } else {
    sqlite3_free(sqlite3_str_finish(pOut));
    qcErr(pC, pCl->pForm, "unknown function %s (or wrong number of arguments)", z);
    goto cleanup;
  }
  zExpr = sqlite3_str_finish(pOut);
  if (zExpr == NULL) { qcNoMem(pC); goto cleanup; }
  qcBindResult(pX, pCl, zExpr, vtOut, NULL);
cleanup:
  for (i = 0; i < n; i++) sqlite3_free(azA[i]);
  return pC->rc;
}

static int qcGetElse(QCtx *pX, const QClause *pCl, const EdnValue *const *aArg, int nArg) {
  QComp *pC = pX->pC;
  const Attr *pA;
  ValueType vt;
  char *zE;
  int iP;
  if (nArg != 3) return qcErr(pC, pCl->pForm, "get-else takes $, an entity, an attribute and a default");
  if (aArg[2]->type == EDN_NIL) return qcErr(pC, aArg[2], "get-else: the default must not be nil");
  pA = qcAttrArg(pX, aArg[1], "get-else");
  if (pC->rc) return pC->rc;
  if (pA && pA->bMany) return qcErr(pC, aArg[1], "get-else: %s is cardinality many", aArg[1]->u.s.z);
  zE = qcTermExpr(pX, aArg[0], &vt, NULL, "function");
  if (zE == NULL) return pC->rc;
  if (pA == NULL) {
    ValueType vtD;
    char *zD = qcTermExpr(pX, aArg[2], &vtD, NULL, "function");
    sqlite3_free(zE);
    if (zD == NULL) return pC->rc;
    return qcBindResult(pX, pCl, zD, vtD, NULL);
  }
  if (ednIsVar(aArg[2])) {
    ValueType vtD;
    char *zD = qcTermExpr(pX, aArg[2], &vtD, NULL, "function");
    if (zD) {
      qcBindResult(pX, pCl, sqlite3_mprintf(
          "COALESCE((SELECT v FROM datoms WHERE e = %s AND a = %lld), %s)", zE, pA->e, zD),
          pA->type, NULL);
    }
    sqlite3_free(zE);
    sqlite3_free(zD);
    return pC->rc;
  }
  iP = qcParam(pC, aArg[2], -1, -1, -1, QV_TYPED, pA->type);
  qcBindResult(pX, pCl, sqlite3_mprintf(
      "COALESCE((SELECT v FROM datoms WHERE e = %s AND a = %lld), ?%d)", zE, pA->e, iP),
      pA->type, NULL);
  sqlite3_free(zE);
  return pC->rc;
}

static int qcGetSome(QCtx *pX, const QClause *pCl, const EdnValue *const *aArg, int nArg) {
  QComp *pC = pX->pC;
  sqlite3_str *pA, *pV, *pT;
  ValueType vt, vtAll = VT_NONE;
  char *zE, *zAttr, *zVal, *zTag;
  int i, bSame = 1;
  if (nArg < 2) return qcErr(pC, pCl->pForm, "get-some takes $, an entity and attributes");
  if (pCl->bind.kind != QB_TUPLE || pCl->bind.nVar != 2) {
    return qcErr(pC, pCl->pForm, "get-some binds a tuple [?attr ?value]");
  }
  zE = qcTermExpr(pX, aArg[0], &vt, NULL, "function");
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
    sqlite3_str_appendf(pA, " WHEN EXISTS (SELECT 1 FROM datoms WHERE e = %s AND a = %lld) THEN %lld",
                        zE, pAt->e, pAt->e);
    sqlite3_str_appendf(pV, " WHEN EXISTS (SELECT 1 FROM datoms WHERE e = %s AND a = %lld)"
                        " THEN (SELECT v FROM datoms WHERE e = %s AND a = %lld LIMIT 1)",
                        zE, pAt->e, zE, pAt->e);
    sqlite3_str_appendf(pT, " WHEN EXISTS (SELECT 1 FROM datoms WHERE e = %s AND a = %lld) THEN %d",
                        zE, pAt->e, vtTag(pAt->type));
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

static int qcUntuple(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  ValueType vt;
  char *zT;
  int i;
  if (pCl->nArg != 1 || pCl->bind.kind != QB_TUPLE) {
    return qcErr(pC, pCl->pForm, "untuple takes one tuple and binds [?a ?b ...]");
  }
  zT = qcTermExpr(pX, pCl->aArg[0], &vt, NULL, "function");
  if (zT == NULL) return pC->rc;
  for (i = 0; i < pCl->bind.nVar && pC->rc == SQLITE_OK; i++) {
    if (qIsBlank(pCl->bind.aVar[i])) continue;
    qcBindVar(pX, pCl->bind.aVar[i]->u.s.z,
              sqlite3_mprintf("json_extract(%s, '$[%d]')", zT, i), VT_NONE,
              sqlite3_mprintf("CASE json_type(%s, '$[%d]') WHEN 'integer' THEN 5 WHEN 'real'"
                              " THEN 5 WHEN 'true' THEN 1 WHEN 'false' THEN 1 WHEN 'text'"
                              " THEN (CASE WHEN substr(json_extract(%s, '$[%d]'), 1, 1) = ':'"
                              " THEN 13 ELSE 10 END) END", zT, i, zT, i), 0);
  }
  sqlite3_free(zT);
  return pC->rc;
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
  qcFrom(pX, sqlite3_mprintf("datoms %s", zD));
  if (pA == NULL) qcWhere(pX, sqlite3_mprintf("0"));
  else qcWhere(pX, sqlite3_mprintf(
      "%s.text MATCH %s AND %s.a = %lld AND %s.index_fulltext IS NOT 0 AND %s.value_type_tag = 10"
      " AND %s.v = +%s.rowid", zF, zQ, zD, pA ? pA->e : 0, zD, zD, zD, zF));
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

/* (tx-ids $ ?from ?to): the transactions with from <= tx < to, from the
** log; bound as a collection [?tx ...]. */
static int qcTxIds(QCtx *pX, const QClause *pCl, const EdnValue *const *aArg, int nArg) {
  QComp *pC = pX->pC;
  ValueType vt;
  char *zFrom, *zTo = NULL;
  char zAlias[24];
  if (nArg != 2) return qcErr(pC, pCl->pForm, "tx-ids takes $, a start and an end tx");
  if (pCl->bind.kind != QB_COLL && pCl->bind.kind != QB_SCALAR) {
    return qcErr(pC, pCl->pForm, "tx-ids binds a collection [?tx ...]");
  }
  zFrom = qcTermExpr(pX, aArg[0], &vt, NULL, "function");
  if (zFrom) zTo = qcTermExpr(pX, aArg[1], &vt, NULL, "function");
  if (zTo) {
    sqlite3_snprintf(sizeof zAlias, zAlias, "x%d", ++pC->nAlias);
    /* A plain join (a derived table could not see ?from/?to): rows repeat
    ** per datom, and the query's DISTINCT makes them a set again. */
    qcFrom(pX, sqlite3_mprintf("timelined_transactions %s", zAlias));
    qcWhere(pX, sqlite3_mprintf("%s.timeline IS 0 AND %s.tx >= %s AND %s.tx < %s",
                                zAlias, zAlias, zFrom, zAlias, zTo));
    if (!qIsBlank(pCl->bind.aVar[0])) {
      qcBindVar(pX, pCl->bind.aVar[0]->u.s.z, sqlite3_mprintf("%s.tx", zAlias), VT_REF, NULL, 0);
    }
  }
  sqlite3_free(zFrom);
  sqlite3_free(zTo);
  return pC->rc;
}

/* (tx-data $ ?tx): the log rows of one transaction, bound as a relation
** [[?e ?a ?v ?tx ?added]]. */
static int qcTxData(QCtx *pX, const QClause *pCl, const EdnValue *const *aArg, int nArg) {
  QComp *pC = pX->pC;
  ValueType vt;
  char *zTx;
  char zAlias[24];
  int i;
  if (nArg != 1) return qcErr(pC, pCl->pForm, "tx-data takes $ and a tx");
  if (pCl->bind.kind != QB_REL || pCl->bind.nVar > 5) {
    return qcErr(pC, pCl->pForm, "tx-data binds a relation [[?e ?a ?v ?tx ?added]]");
  }
  zTx = qcTermExpr(pX, aArg[0], &vt, NULL, "function");
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
  qcSkipSrc(pCl, &aArg, &nArg);
  if (strcmp(z, "ground") == 0) {
    if (pCl->nArg != 1) return qcErr(pC, pCl->pForm, "ground takes one value");
    if (ednIsVar(pCl->aArg[0])) {
      ValueType vt;
      char *zE = qcTermExpr(pX, pCl->aArg[0], &vt, NULL, "function");
      if (zE == NULL) return pC->rc;
      return qcBindResult(pX, pCl, zE, vt, NULL);
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
  if (strcmp(z, "missing?") == 0) {
    return qcErr(pC, pCl->pForm, "missing? is a predicate: write [(missing? $ ?e :attr)]");
  }
  return qcScalarFn(pX, pCl);
}
