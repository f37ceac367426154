/*
** query_compile_clause.c — the :where clauses other than data patterns:
** predicates, function expressions, not/not-join, or/or-join/and, and rule
** calls (query_compile.h explains the scopes and variables).
**
** HOW IT WORKS
** Predicates become WHERE terms. Comparisons only hold within one type
** class (numbers, strings, instants, keywords ...): when a side's type is
** not static its tag is constrained, so `[(> ?v 0)]` over `[?e _ ?v]` never
** sees booleans, refs or instants as numbers (peer fault B13).
** not/not-join are NOT EXISTS subqueries correlated with the enclosing scope.
** or/or-join are an EXISTS over a UNION ALL of the branches when every join
** variable is already bound, else an uncorrelated UNION derived table joined
** on its variables. Rules compile once per query into ONE recursive CTE
** `rules(r, c0.., t0..)` (r = the rule's number, cK/tK its head values and
** tags), so recursion, several definitions and mutual recursion all become
** UNION branches SQLite iterates to a fixpoint; UNION's set semantics make
** cyclic data terminate.
*/
#include <string.h>
#include "query_compile.h"

int qcBindValue(QCtx *pX, const QBinding *pB, const EdnValue *pVal, int iInput,
                const char *zWhat);

/* ----------------------------------------------------------- variables */

static int qcAddName(const char **a, int n, int nMax, const char *z) {
  int i;
  for (i = 0; i < n && i < nMax; i++) if (strcmp(a[i], z) == 0) return n;
  if (n < nMax) a[n] = z;
  return n + 1;
}

static int qcTermsVars(const EdnValue *const *aT, int nT, const char **a, int n, int nMax) {
  int i;
  for (i = 0; i < nT; i++) {
    if (ednIsVar(aT[i])) n = qcAddName(a, n, nMax, aT[i]->u.s.z);
  }
  return n;
}

int qcClauseVars(const QClause *pCl, const char **a, int nMax, int iDepth) {
  int n = 0, i, j;
  if (iDepth > EDN_MAX_DEPTH) return 0;
  switch (pCl->kind) {
    case QC_PATTERN: case QC_PRED: case QC_RULE:
      return qcTermsVars(pCl->aArg, pCl->nArg, a, 0, nMax);
    case QC_FN:
      n = qcTermsVars(pCl->aArg, pCl->nArg, a, 0, nMax);
      return qcTermsVars(pCl->bind.aVar, pCl->bind.nVar, a, n, nMax);
    case QC_NOT_JOIN: case QC_OR_JOIN:
      return qcTermsVars(pCl->aJoin, pCl->nJoin, a, 0, nMax);
    default: {
      const char *aSub[64];
      for (i = 0; i < pCl->nSub; i++) {
        int nSub = qcClauseVars(pCl->aSub[i], aSub, 64, iDepth + 1);
        for (j = 0; j < nSub && j < 64; j++) n = qcAddName(a, n, nMax, aSub[j]);
      }
      return n;
    }
  }
}

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

/* ----------------------------------------------------------------- not */

int qcNot(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  QCtx sub;
  char *zBody;
  int i;
  if (pCl->kind == QC_NOT_JOIN) {
    for (i = 0; i < pCl->nJoin; i++) {
      QVar *pV = qcVarFind(pX, pCl->aJoin[i]->u.s.z);
      if (pV == NULL || pV->zExpr == NULL) {
        return qcErr(pC, pCl->aJoin[i], "unbound variable %s in not-join", pCl->aJoin[i]->u.s.z);
      }
    }
  }
  qcCtxInit(&sub, pC, pX);
  if (pCl->kind == QC_NOT_JOIN) {
    sub.nVisible = pCl->nJoin;
    sub.aVisible = pCl->aJoin;
  }
  qcClauses(&sub, pCl->aSub, pCl->nSub, iDepth + 1);
  if (pC->rc == SQLITE_OK) {
    zBody = qcBody(&sub);
    if (zBody) qcWhere(pX, sqlite3_mprintf("NOT EXISTS (SELECT 1%s)", zBody));
    sqlite3_free(zBody);
  }
  qcCtxReset(&sub);
  return pC->rc;
}

/* ------------------------------------------------------------------ or */

/* The clauses of branch i of an or: an (and ...) body or the one clause. */
static void qcBranch(const QClause *pOr, int i, QClause *const **paSub, int *pnSub) {
  const QClause *pB = pOr->aSub[i];
  if (pB->kind == QC_AND) {
    *paSub = pB->aSub;
    *pnSub = pB->nSub;
  } else {
    *paSub = &pOr->aSub[i];
    *pnSub = 1;
  }
}

int qcOr(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  const EdnValue *aJoinLocal[64];
  const EdnValue **aJoin;
  const char *azVar[64];
  int nJoin, i, j, bAllBound = 1;
  sqlite3_str *pOut;
  char *zOut;
  if (pCl->kind == QC_OR_JOIN) {
    aJoin = pCl->aJoin;
    nJoin = pCl->nJoin;
  } else {
    /* Plain or: every branch must use the same variables (Datomic). */
    const char *azFirst[64];
    int nFirst = qcClauseVars(pCl->aSub[0], azFirst, 64, iDepth + 1);
    if (nFirst > 64) return qcErr(pC, pCl->pForm, "or uses too many variables");
    for (i = 1; i < pCl->nSub; i++) {
      int n = qcClauseVars(pCl->aSub[i], azVar, 64, iDepth + 1);
      int bSame = n == nFirst;
      for (j = 0; bSame && j < n && j < 64; j++) {
        int k;
        bSame = 0;
        for (k = 0; k < nFirst; k++) if (strcmp(azVar[j], azFirst[k]) == 0) bSame = 1;
      }
      if (!bSame) {
        /* Name the variables that differ between the first branch and this one. */
        sqlite3_str *pDiff = sqlite3_str_new(NULL);
        char *zDiff;
        int k, m, nDiff = 0;
        for (k = 0; k < n && k < 64; k++) {
          for (m = 0; m < nFirst && strcmp(azVar[k], azFirst[m]); m++) {}
          if (m == nFirst) sqlite3_str_appendf(pDiff, "%s%s", nDiff++ ? ", " : "", azVar[k]);
        }
        for (m = 0; m < nFirst; m++) {
          for (k = 0; k < n && k < 64 && strcmp(azVar[k], azFirst[m]); k++) {}
          if (k == n || k == 64) sqlite3_str_appendf(pDiff, "%s%s", nDiff++ ? ", " : "", azFirst[m]);
        }
        zDiff = sqlite3_str_finish(pDiff);
        qcErr(pC, pCl->pForm,
              "all branches of or must use the same variables, but %s %s not in every branch"
              " (use or-join to name the shared ones)", zDiff ? zDiff : "?",
              nDiff == 1 ? "is" : "are");
        sqlite3_free(zDiff);
        return pC->rc;
      }
    }
    /* The variables as EDN symbols, for the same code path as or-join. */
    nJoin = 0;
    for (i = 0; i < nFirst; i++) {
      EdnValue *pSym = ednNewString(pC->pArena, EDN_SYMBOL, azFirst[i], (int)strlen(azFirst[i]));
      if (pSym == NULL) return qcNoMem(pC);
      aJoinLocal[nJoin++] = pSym;
    }
    aJoin = aJoinLocal;
  }
  for (i = 0; i < nJoin; i++) {
    QVar *pV = qcVarFind(pX, aJoin[i]->u.s.z);
    if (pV == NULL || pV->zExpr == NULL) bAllBound = 0;
  }
  pOut = sqlite3_str_new(NULL);
  if (bAllBound) {
    /* Every join variable is bound: a correlated EXISTS over the branches. */
    sqlite3_str_appendall(pOut, "EXISTS (");
    for (i = 0; i < pCl->nSub && pC->rc == SQLITE_OK; i++) {
      QCtx sub;
      QClause *const *aSub;
      int nSub;
      char *zBody;
      qcBranch(pCl, i, &aSub, &nSub);
      qcCtxInit(&sub, pC, pX);
      sub.nVisible = nJoin;
      sub.aVisible = aJoin;
      qcClauses(&sub, aSub, nSub, iDepth + 1);
      zBody = pC->rc == SQLITE_OK ? qcBody(&sub) : NULL;
      if (zBody) sqlite3_str_appendf(pOut, "%sSELECT 1%s", i ? " UNION ALL " : "", zBody);
      sqlite3_free(zBody);
      qcCtxReset(&sub);
    }
    sqlite3_str_appendall(pOut, ")");
    zOut = sqlite3_str_finish(pOut);
    if (pC->rc == SQLITE_OK) qcWhere(pX, zOut);
    else sqlite3_free(zOut);
    return pC->rc;
  } else {
    /* A derived table of the branches' rows, joined on the variables. */
    char zAlias[24];
    ValueType *aVt = sqlite3_malloc64(sizeof(ValueType) * (nJoin + 1));
    if (aVt == NULL) { sqlite3_free(sqlite3_str_finish(pOut)); return qcNoMem(pC); }
    for (j = 0; j < nJoin; j++) aVt[j] = (ValueType)-1;
    sqlite3_str_appendall(pOut, "(");
    for (i = 0; i < pCl->nSub && pC->rc == SQLITE_OK; i++) {
      QCtx sub;
      QClause *const *aSub;
      int nSub;
      char *zBody;
      qcBranch(pCl, i, &aSub, &nSub);
      qcCtxInit(&sub, pC, pX);
      sub.nVisible = 0;      /* uncorrelated: a derived table cannot see outside */
      qcClauses(&sub, aSub, nSub, iDepth + 1);
      sqlite3_str_appendf(pOut, "%sSELECT ", i ? " UNION " : "");
      for (j = 0; j < nJoin && pC->rc == SQLITE_OK; j++) {
        QVar *pV = qcVarFind(&sub, aJoin[j]->u.s.z);
        char *zTag;
        if (pV == NULL || pV->zExpr == NULL) {
          qcErr(pC, pCl->aSub[i]->pForm, "or branch does not bind %s", aJoin[j]->u.s.z);
          break;
        }
        zTag = qcVarTag(pV);
        sqlite3_str_appendf(pOut, "%s%s AS c%d, %s AS t%d", j ? ", " : "", pV->zExpr, j,
                            zTag ? zTag : "NULL", j);
        sqlite3_free(zTag);
        if (aVt[j] == (ValueType)-1) aVt[j] = pV->vt;
        else if (aVt[j] != pV->vt) aVt[j] = VT_NONE;
      }
      zBody = pC->rc == SQLITE_OK ? qcBody(&sub) : NULL;
      if (zBody) sqlite3_str_appendall(pOut, zBody);
      sqlite3_free(zBody);
      qcCtxReset(&sub);
    }
    sqlite3_snprintf(sizeof zAlias, zAlias, "o%d", ++pC->nAlias);
    sqlite3_str_appendf(pOut, ") %s", zAlias);
    zOut = sqlite3_str_finish(pOut);
    if (pC->rc == SQLITE_OK) qcFrom(pX, zOut);
    else sqlite3_free(zOut);
    for (j = 0; j < nJoin && pC->rc == SQLITE_OK; j++) {
      ValueType vt = aVt[j] == (ValueType)-1 ? VT_NONE : aVt[j];
      qcBindVar(pX, aJoin[j]->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, j), vt,
                sqlite3_mprintf("%s.t%d", zAlias, j), 0);
    }
    sqlite3_free(aVt);
  }
  return pC->rc;
}

/* --------------------------------------------------------------- rules */

/* Rules are grouped by head (name and arity). Heads that call each other
** (directly or not) form a recursion group; each group is one CTE
** `rulesK(r, c0.., t0..)`, recursive when a body calls its own group.
** Groups are emitted before the groups that call them, so a body may call
** other groups any number of times, but SQLite lets a recursive SELECT name
** its own CTE only once: a body that calls its own group twice (non-linear
** recursion) is refused with a clear error, never run. */
typedef struct QRuleHead {
  const char *zName;
  int nArity;
  int iGroup;
  int nCols;              /* widest head in the group (on the group's first) */
  unsigned char eState;   /* 0 not emitted, 1 building, 2 emitted */
} QRuleHead;

typedef struct QRuleInfo {
  int nHead;
  QRuleHead *aHead;
  int *aiHeadOf;          /* per rule definition: its head */
} QRuleInfo;

void qcRulesFree(QComp *pC) {
  if (pC->pRi) {
    sqlite3_free(pC->pRi->aHead);
    sqlite3_free(pC->pRi->aiHeadOf);
    sqlite3_free(pC->pRi);
    pC->pRi = NULL;
  }
}

static int qcHeadFind(const QRuleInfo *pRi, const char *zName, int nArity, int *pbArity) {
  int i;
  if (pbArity) *pbArity = 0;
  for (i = 0; i < pRi->nHead; i++) {
    if (strcmp(pRi->aHead[i].zName, zName) == 0) {
      if (pRi->aHead[i].nArity == nArity) return i;
      if (pbArity) *pbArity = 1;
    }
  }
  return -1;
}

/* Marks in aReach[iFrom * n + callee] every head the clauses call. */
static void qcCalls(const QRuleInfo *pRi, QClause *const *a, int n, int iFrom,
                    unsigned char *aReach, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return;
  for (i = 0; i < n; i++) {
    if (a[i]->kind == QC_RULE) {
      int h = qcHeadFind(pRi, a[i]->zName, a[i]->nArg, NULL);
      if (h >= 0) aReach[iFrom * pRi->nHead + h] = 1;
    } else if (a[i]->nSub) {
      qcCalls(pRi, a[i]->aSub, a[i]->nSub, iFrom, aReach, iDepth + 1);
    }
  }
}

static int qcRulesPrepare(QComp *pC) {
  QRuleInfo *pRi;
  unsigned char *aReach;
  int i, j, k, n;
  pRi = sqlite3_malloc64(sizeof(QRuleInfo));
  if (pRi == NULL) return qcNoMem(pC);
  memset(pRi, 0, sizeof *pRi);
  pC->pRi = pRi;
  pRi->aHead = sqlite3_malloc64(sizeof(QRuleHead) * (pC->rules.nRule + 1));
  pRi->aiHeadOf = sqlite3_malloc64(sizeof(int) * (pC->rules.nRule + 1));
  if (pRi->aHead == NULL || pRi->aiHeadOf == NULL) return qcNoMem(pC);
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int h = qcHeadFind(pRi, pR->zName, pR->nHead, NULL);
    if (h < 0) {
      h = pRi->nHead++;
      memset(&pRi->aHead[h], 0, sizeof(QRuleHead));
      pRi->aHead[h].zName = pR->zName;
      pRi->aHead[h].nArity = pR->nHead;
    }
    pRi->aiHeadOf[i] = h;
  }
  n = pRi->nHead;
  aReach = sqlite3_malloc64((sqlite3_uint64)n * n + 1);
  if (aReach == NULL) return qcNoMem(pC);
  memset(aReach, 0, (size_t)n * n);
  for (i = 0; i < pC->rules.nRule; i++) {
    const QRule *pR = pC->rules.aRule[i];
    qcCalls(pRi, pR->aClause, pR->nClause, pRi->aiHeadOf[i], aReach, 0);
  }
  /* Transitive closure (Warshall): rule sets are small. */
  for (k = 0; k < n; k++) {
    for (i = 0; i < n; i++) {
      if (!aReach[i * n + k]) continue;
      for (j = 0; j < n; j++) if (aReach[k * n + j]) aReach[i * n + j] = 1;
    }
  }
  for (i = 0; i < n; i++) {
    pRi->aHead[i].iGroup = i;
    for (j = 0; j < i; j++) {
      if (aReach[i * n + j] && aReach[j * n + i]) { pRi->aHead[i].iGroup = j; break; }
    }
    if (pRi->aHead[i].nArity > pRi->aHead[pRi->aHead[i].iGroup].nCols) {
      pRi->aHead[pRi->aHead[i].iGroup].nCols = pRi->aHead[i].nArity;
    }
  }
  sqlite3_free(aReach);
  return pC->rc;
}

/* A transitive-closure definition [(r ?a ?b) (r ?a ?c) (r ?c ?b)] (in
** either clause order) in a group of one binary head: non-linear, but its
** fixpoint equals the linear [(r ?a ?b) (base ?a ?c) (r ?c ?b)] where base
** is r's non-recursive definitions, which SQLite can iterate. */
static int qcIsChain(const QRuleInfo *pRi, int g, const QRule *pR) {
  const QClause *c1, *c2;
  const char *zH0, *zH1;
  int i;
  for (i = 0; i < pRi->nHead; i++) {
    if (pRi->aHead[i].iGroup == g && strcmp(pRi->aHead[i].zName, pR->zName) != 0) return 0;
  }
  if (pR->nHead != 2 || pR->nClause != 2) return 0;
  c1 = pR->aClause[0];
  c2 = pR->aClause[1];
  if (c1->kind != QC_RULE || c2->kind != QC_RULE || c1->nArg != 2 || c2->nArg != 2) return 0;
  if (strcmp(c1->zName, pR->zName) || strcmp(c2->zName, pR->zName)) return 0;
  for (i = 0; i < 2; i++) {
    if (!ednIsVar(c1->aArg[i]) || !ednIsVar(c2->aArg[i])) return 0;
  }
  zH0 = pR->aHead[0]->u.s.z;
  zH1 = pR->aHead[1]->u.s.z;
  if (strcmp(zH0, zH1) == 0) return 0;
  if (strcmp(c2->aArg[0]->u.s.z, zH0) == 0) {   /* written right to left */
    const QClause *t = c1;
    c1 = c2;
    c2 = t;
  }
  return strcmp(c1->aArg[0]->u.s.z, zH0) == 0 && strcmp(c2->aArg[1]->u.s.z, zH1) == 0
      && strcmp(c1->aArg[1]->u.s.z, c2->aArg[0]->u.s.z) == 0
      && strcmp(c1->aArg[1]->u.s.z, zH0) != 0 && strcmp(c1->aArg[1]->u.s.z, zH1) != 0;
}

/* Compiles every definition of group g into the CTE rules<g>. */
static int qcRulesGroup(QComp *pC, int g, int iDepth) {
  QRuleInfo *pRi = pC->pRi;
  sqlite3_str *pBase = sqlite3_str_new(NULL);
  sqlite3_str *pRec = sqlite3_str_new(NULL);
  int i, j, nBase = 0, nRec = 0, nChain = 0, iChainHead = 0, nMax = pRi->aHead[g].nCols;
  int nSelfSave = pC->nSelfRef;
  const char *zFirst = pRi->aHead[g].zName;
  if (iDepth > EDN_MAX_DEPTH) return qcErr(pC, NULL, "rules nested too deep");
  for (i = 0; i < pRi->nHead; i++) if (pRi->aHead[i].iGroup == g) pRi->aHead[i].eState = 1;
  for (i = 0; i < pC->rules.nRule && pC->rc == SQLITE_OK; i++) {
    const QRule *pR = pC->rules.aRule[i];
    int h = pRi->aiHeadOf[i];
    QCtx sub;
    sqlite3_str *pSel;
    char *zBody = NULL, *zSel;
    if (pRi->aHead[h].iGroup != g) continue;
    if (qcIsChain(pRi, g, pR)) {
      nChain++;
      iChainHead = h;
      continue;
    }
    pSel = sqlite3_str_new(NULL);
    qcCtxInit(&sub, pC, NULL);
    pC->nSelfRef = 0;
    qcClauses(&sub, pR->aClause, pR->nClause, iDepth + 1);
    if (pC->rc == SQLITE_OK && pC->nSelfRef > 1) {
      qcErr(pC, pR->pForm, "unsupported recursion: a definition of rule %s calls its own"
            " recursion %d times (non-linear); write it with one recursive call, e.g."
            " [(r ?a ?b) [?a :x ?c] (r ?c ?b)]", pR->zName, pC->nSelfRef);
    }
    sqlite3_str_appendf(pSel, "SELECT %d", h);
    for (j = 0; j < nMax && pC->rc == SQLITE_OK; j++) {
      if (j < pR->nHead) {
        QVar *pV = qcVarFind(&sub, pR->aHead[j]->u.s.z);
        if (pV == NULL || pV->zExpr == NULL) {
          qcErr(pC, pR->aHead[j], "rule %s does not bind %s", pR->zName, pR->aHead[j]->u.s.z);
          break;
        }
        sqlite3_str_appendf(pSel, ", %s", pV->zExpr);
      } else {
        sqlite3_str_appendall(pSel, ", NULL");
      }
    }
    for (j = 0; j < nMax && pC->rc == SQLITE_OK; j++) {
      if (j < pR->nHead) {
        char *zTag = qcVarTag(qcVarFind(&sub, pR->aHead[j]->u.s.z));
        sqlite3_str_appendf(pSel, ", %s", zTag ? zTag : "NULL");
        sqlite3_free(zTag);
      } else {
        sqlite3_str_appendall(pSel, ", NULL");
      }
    }
    if (pC->rc == SQLITE_OK) zBody = qcBody(&sub);
    if (zBody) sqlite3_str_appendall(pSel, zBody);
    sqlite3_free(zBody);
    zSel = sqlite3_str_finish(pSel);
    if (zSel == NULL) qcNoMem(pC);
    if (pC->rc == SQLITE_OK) {
      if (pC->nSelfRef) sqlite3_str_appendf(pRec, "%s%s", nRec++ ? " UNION " : "", zSel);
      else sqlite3_str_appendf(pBase, "%s%s", nBase++ ? " UNION " : "", zSel);
    }
    sqlite3_free(zSel);
    qcCtxReset(&sub);
  }
  pC->nSelfRef = nSelfSave;
  if (pC->rc == SQLITE_OK && nBase == 0) {
    qcErr(pC, NULL, "unsupported recursion: rule %s has no definition without recursion"
          " (it could never produce a row)", zFirst);
  }
  if (pC->rc == SQLITE_OK && nChain && nRec) {
    qcErr(pC, NULL, "unsupported recursion: rule %s mixes a transitive definition with other"
          " recursive ones", zFirst);
  }
  if (pC->rc == SQLITE_OK && nChain) {
    /* rulesb<g>: the base relation; the chain becomes base ∘ rules. */
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    sqlite3_str_appendf(pC->pCte, "rulesb%d(r, c0, c1, t0, t1) AS (%s)", g,
                        sqlite3_str_value(pBase));
    sqlite3_str_reset(pBase);
    sqlite3_str_appendf(pBase, "SELECT * FROM rulesb%d", g);
    sqlite3_str_appendf(pRec, "SELECT %d, b.c0, x.c1, b.t0, x.t1 FROM rulesb%d b, rules%d x"
                        " WHERE b.r = %d AND x.r = %d AND x.c0 = b.c1 AND x.t0 IS b.t1",
                        iChainHead, g, g, iChainHead, iChainHead);
    nRec = 1;
  }
  if (pC->rc == SQLITE_OK) {
    if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
    sqlite3_str_appendf(pC->pCte, "rules%d(r", g);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", c%d", j);
    for (j = 0; j < nMax; j++) sqlite3_str_appendf(pC->pCte, ", t%d", j);
    /* UNION (not UNION ALL): set semantics make cyclic data terminate. */
    sqlite3_str_appendf(pC->pCte, ") AS (%s%s%s)", sqlite3_str_value(pBase),
                        nRec ? " UNION " : "", nRec ? sqlite3_str_value(pRec) : "");
    if (nRec) pC->bRecursive = 1;
  }
  for (i = 0; i < pRi->nHead; i++) if (pRi->aHead[i].iGroup == g) pRi->aHead[i].eState = 2;
  sqlite3_free(sqlite3_str_finish(pBase));
  sqlite3_free(sqlite3_str_finish(pRec));
  return pC->rc;
}

int qcRuleCall(QCtx *pX, const QClause *pCl, int iDepth) {
  QComp *pC = pX->pC;
  int h, g, bArity, i;
  char zAlias[24];
  if (!pC->bRules) {
    return qcErr(pC, pCl->pForm, "unknown rule %s (no rule set is bound to %% in :in)", pCl->zName);
  }
  if (pC->pRi == NULL && qcRulesPrepare(pC)) return pC->rc;
  h = qcHeadFind(pC->pRi, pCl->zName, pCl->nArg, &bArity);
  if (h < 0) {
    return qcErr(pC, pCl->pForm, bArity ? "rule %s called with the wrong number of arguments"
                                        : "unknown rule %s", pCl->zName);
  }
  g = pC->pRi->aHead[h].iGroup;
  if (pC->pRi->aHead[h].eState == 0) {
    if (qcRulesGroup(pC, g, iDepth)) return pC->rc;
  } else if (pC->pRi->aHead[h].eState == 1) {
    pC->nSelfRef++;     /* a call back into the group being built */
  }
  sqlite3_snprintf(sizeof zAlias, zAlias, "r%d", ++pC->nAlias);
  qcFrom(pX, sqlite3_mprintf("rules%d %s", g, zAlias));
  qcWhere(pX, sqlite3_mprintf("%s.r = %d", zAlias, h));
  for (i = 0; i < pCl->nArg && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pA = pCl->aArg[i];
    if (qIsBlank(pA)) continue;
    if (ednIsVar(pA)) {
      qcBindVar(pX, pA->u.s.z, sqlite3_mprintf("%s.c%d", zAlias, i), VT_NONE,
                sqlite3_mprintf("%s.t%d", zAlias, i), 0);
    } else {
      ValueType vt;
      char *zC = qcConstExpr(pX, pA, VT_NONE, &vt);
      if (zC) {
        qcWhere(pX, sqlite3_mprintf("%s.c%d = %s", zAlias, i, zC));
        sqlite3_free(zC);
      }
    }
  }
  return pC->rc;
}
