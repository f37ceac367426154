/*
** query_compile_fn.c — function clauses in :where: [(pred ...)] as a
** filter and [(f ...) binding] binding its result (ground, get-else,
** get-some, tuple/untuple, fulltext, tx-ids, tx-data, type, and the value
** expressions of query_compile_value.c), each by its row of the table of
** built-ins below: name, kind, argument count and types, result type, the
** compile hook that writes its SQL (query_compile_pred.c, _value.c, or the
** function clauses here) and the SQL function (ext/qfunc) that SQL calls.
** The compiler finds a built-in there and nowhere else. Calls the scope,
** SQL, bind, predicate and value helpers; the hooks never call back here.
**
** HOW IT WORKS
** A predicate becomes a WHERE term; a function becomes an SQL expression
** bound to its result variable (or an equality when the variable is
** already bound). A result that would nest too deep in the next function
** is bound once through mentat_one in FROM (qcTermExpr; ext/qfunc/query_funcs_one.c), so
** chains of functions compile to SQL linear in their length. Functions
** that read the store (get-else, get-some) are correlated scalar
** subqueries on the datoms indexes; fulltext joins the FTS4 table; tx-ids
** and tx-data read the log.
*/
#include <string.h>
#include "query_compile_scope.h"

#define QCF_N QCF_MAX_ARGS

/* Java's Character.isWhitespace: ASCII space and controls 9-13 and 28-31,
** and Unicode's space separators other than the no-break ones. */
#define QCF_BLANK_SQL "(trim(coalesce(%s, ''), char(32, 9, 10, 11, 12, 13, 28, 29, 30, 31, " \
  "5760, 8192, 8193, 8194, 8195, 8196, 8197, 8198, 8200, 8201, 8202, 8232, 8233, 8287, 12288)) = '')"

static const QcfBuiltin aQcfBuiltin[] = {
  /* comparisons: Clojure's = (and its negations) compares values, == and
  ** the orderings numbers by magnitude; each takes one argument or more,
  ** as Clojure's (one alone: true, not= false; qcpChain) */
  { "=", QCF_PRED, 1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpEqual, "=", 0 },
  { "==", QCF_PRED, 1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpCompare, "=", 0 },
  { "!=", QCF_PRED, 1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpNotEqual, "!=", 0 },
  { "not=", QCF_PRED, 1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpNotEqual, "!=", 0 },
  { "<", QCF_PRED, 1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpCompare, "<", 0 },
  { "<=", QCF_PRED, 1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpCompare, "<=", 0 },
  { ">", QCF_PRED, 1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpCompare, ">", 0 },
  { ">=", QCF_PRED, 1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpCompare, ">=", 0 },
  /* DataScript's -differ?: the first half of the arguments differs from
  ** the second half in some place */
  { "differ?", QCF_PRED, -1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpDiffer, "!=", 0 },
  { "-differ?", QCF_PRED, -1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpDiffer, "!=", 0 },
  { "missing?", QCF_PRED, -1, -1, QCF_ARG_ANY, VT_BOOLEAN, qcpMissing, 0, 0 },
  /* Clojure predicates */
  { "even?", QCF_PRED, 1, 1, QCF_ARG_ANY, VT_BOOLEAN, qcpInteger, "((%s) %% 2 = 0)", 0 },
  { "odd?", QCF_PRED, 1, 1, QCF_ARG_ANY, VT_BOOLEAN, qcpInteger, "((%s) %% 2 != 0)", 0 },
  { "zero?", QCF_PRED, 1, 1, QCF_ARG_ANY, VT_BOOLEAN, qcpNumber, "((%s) = 0)", 0 },
  { "pos?", QCF_PRED, 1, 1, QCF_ARG_ANY, VT_BOOLEAN, qcpNumber, "((%s) > 0)", 0 },
  { "neg?", QCF_PRED, 1, 1, QCF_ARG_ANY, VT_BOOLEAN, qcpNumber, "((%s) < 0)", 0 },
  { "nil?", QCF_PRED, 1, 1, QCF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) IS NULL)", 0 },
  { "some?", QCF_PRED, 1, 1, QCF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) IS NOT NULL)", 0 },
  { "true?", QCF_PRED, 1, 1, QCF_ARG_ANY, VT_BOOLEAN, qcpBoolean, "((%s) IS 1)", 0 },
  { "false?", QCF_PRED, 1, 1, QCF_ARG_ANY, VT_BOOLEAN, qcpBoolean, "((%s) IS 0)", 0 },
  { "clojure.string/blank?", QCF_PRED, 1, 1, QCF_ARG_STR, VT_BOOLEAN, qcpFormat, QCF_BLANK_SQL,
    0 },
  { "clojure.string/starts-with?", QCF_PRED, 2, 2, QCF_ARG_STR, VT_BOOLEAN, qcpFormat,
    "mentat_starts_with(%s, %s)", "mentat_starts_with" },
  { "clojure.string/ends-with?", QCF_PRED, 2, 2, QCF_ARG_STR, VT_BOOLEAN, qcpFormat,
    "mentat_ends_with(%s, %s)", "mentat_ends_with" },
  { "clojure.string/includes?", QCF_PRED, 2, 2, QCF_ARG_STR, VT_BOOLEAN, qcpFormat,
    "(instr(%s, %s) > 0)", 0 },
  /* arithmetic: numbers only; longs checked (an overflow, a zero divisor
  ** an error at the clause), a double argument makes it double arithmetic */
  { "+", QCF_VALUE, 0, QCF_N, QCF_ARG_NUM, VT_NONE, qcvArithOp, "+", "mentat_add" },
  { "-", QCF_VALUE, 1, QCF_N, QCF_ARG_NUM, VT_NONE, qcvArithOp, "-", "mentat_sub" },
  { "*", QCF_VALUE, 0, QCF_N, QCF_ARG_NUM, VT_NONE, qcvArithOp, "*", "mentat_mul" },
  { "/", QCF_VALUE, 1, QCF_N, QCF_ARG_NUM, VT_NONE, qcvArith, 0, "mentat_div" },
  { "quot", QCF_VALUE, 2, 2, QCF_ARG_NUM, VT_NONE, qcvArith, 0, "mentat_quot" },
  { "rem", QCF_VALUE, 2, 2, QCF_ARG_NUM, VT_NONE, qcvArith, 0, "mentat_rem" },
  { "mod", QCF_VALUE, 2, 2, QCF_ARG_NUM, VT_NONE, qcvArith, 0, "mentat_mod" },
  { "inc", QCF_VALUE, 1, 1, QCF_ARG_NUM, VT_NONE, qcvArith1, "((%s) + 1)", "mentat_inc" },
  { "dec", QCF_VALUE, 1, 1, QCF_ARG_NUM, VT_NONE, qcvArith1, "((%s) - 1)", "mentat_dec" },
  /* abs: the run-time function always (Math.abs: +0.0 for -0.0, which
  ** SQLite's abs keeps; a long stays a long in a place typed double) */
  { "abs", QCF_VALUE, 1, 1, QCF_ARG_NUM, VT_NONE, qcvArith1, 0, "mentat_abs" },
  { "max", QCF_VALUE, 1, QCF_N, QCF_ARG_NUM, VT_NONE, qcvMinMax, "mentat_max", "mentat_max" },
  { "min", QCF_VALUE, 1, QCF_N, QCF_ARG_NUM, VT_NONE, qcvMinMax, "mentat_min", "mentat_min" },
  /* values, strings, collections */
  { "compare", QCF_VALUE, 2, 2, QCF_ARG_ANY, VT_LONG, qcvCompare, 0, 0 },
  { "count", QCF_VALUE, 1, 1, QCF_ARG_ANY, VT_LONG, qcvCount, 0, 0 },
  { "str", QCF_VALUE, 0, QCF_N, QCF_ARG_ANY, VT_STRING, qcvStr, 0, "mentat_str" },
  { "subs", QCF_VALUE, 2, 3, QCF_ARG_STR1, VT_STRING, qcvSubs, 0, "mentat_subs" },
  { "identity", QCF_VALUE, 1, 1, QCF_ARG_ANY, VT_NONE, qcvIdentity, 0, 0 },
  { "tuple", QCF_VALUE, 1, QCF_N, QCF_ARG_ANY, QVT_JSON, qcvTuple, 0, "mentat_json" },
  { "clojure.string/upper-case", QCF_VALUE, 1, 1, QCF_ARG_STR, VT_STRING, qcvCall, 0,
    "mentat_upper_case" },
  { "clojure.string/lower-case", QCF_VALUE, 1, 1, QCF_ARG_STR, VT_STRING, qcvCall, 0,
    "mentat_lower_case" },
  /* regular expressions, java.util.regex's dialect */
  { "re-find", QCF_VALUE, 2, 2, QCF_ARG_RE, VT_NONE, qcvReMatch, 0, "mentat_re_find" },
  { "re-matches", QCF_VALUE, 2, 2, QCF_ARG_RE, VT_NONE, qcvReMatch, 0, "mentat_re_matches" },
  { "re-seq", QCF_VALUE, 2, 2, QCF_ARG_RE, QVT_JSON, qcvReSeq, 0, "mentat_re_seq" },
  { "re-pattern", QCF_VALUE, 1, 1, QCF_ARG_RESTR, VT_NONE, qcvRePattern, 0, "mentat_re_pattern" },
  /* function clauses that bind their results themselves */
  { "ground", QCF_CLAUSE, 1, 1, QCF_ARG_ANY, VT_NONE, qcfGround, 0, 0 },
  { "get-else", QCF_CLAUSE, -1, -1, QCF_ARG_ANY, VT_NONE, qcfGetElse, 0, 0 },
  { "get-some", QCF_CLAUSE, -1, -1, QCF_ARG_ANY, VT_NONE, qcfGetSome, 0, 0 },
  { "untuple", QCF_CLAUSE, 1, 1, QCF_ARG_ANY, QVT_JSON, qcfUntuple, 0, 0 },
  { "fulltext", QCF_CLAUSE, -1, -1, QCF_ARG_ANY, VT_NONE, qcfFulltext, 0, 0 },
  { "tx-ids", QCF_CLAUSE, -1, -1, QCF_ARG_ANY, VT_REF, qcfTxIds, 0, "mentat_tx_point" },
  { "tx-data", QCF_CLAUSE, -1, -1, QCF_ARG_ANY, VT_NONE, qcfTxData, 0, "mentat_tx_point" },
  { "type", QCF_CLAUSE, -1, -1, QCF_ARG_ANY, VT_KEYWORD, qctType, 0, 0 },
};

/* The built-in named zName, or NULL when there is none. */
static const QcfBuiltin *qcfLookup(const char *zName) {
  size_t i;
  if (zName == NULL) return NULL;
  for (i = 0; i < sizeof aQcfBuiltin / sizeof aQcfBuiltin[0]; i++) {
    if (strcmp(zName, aQcfBuiltin[i].zName) == 0) return &aQcfBuiltin[i];
  }
  return NULL;
}

int qcfMayFail(const char *zName) {
  /* besides those taking numbers or strings (checked per row when their
  ** type is unknown, mentat_arg) */
  static const char *const azFail[] = {
    "compare", "<", ">", "<=", ">=", "==", "count", "even?", "odd?", "zero?", "pos?", "neg?",
    "tx-ids", "tx-data",
  };
  const QcfBuiltin *pFn = qcfLookup(zName);
  size_t k;
  if (pFn == NULL || pFn->eArg != QCF_ARG_ANY) return 1;
  for (k = 0; k < sizeof azFail / sizeof azFail[0]; k++) {
    if (strcmp(zName, azFail[k]) == 0) return 1;
  }
  return 0;
}

/* The built-in pCl names, its argument count checked; NULL after an
** error: an unknown function, or a function clause of its own in a
** predicate (bPred). */
static const QcfBuiltin *qcfBuiltin(QCtx *pX, const QClause *pCl, int bPred) {
  QComp *pC = pX->pC;
  const QcfBuiltin *pFn = qcfLookup(pCl->zName);
  int n = pCl->nArg;
  if (pFn == NULL || (bPred && pFn->eKind == QCF_CLAUSE)) {
    qcErr(pC, pCl->pForm, "unknown function %s", pCl->zName);
    return NULL;
  }
  if (pFn->nMin < 0 || (n >= pFn->nMin && (pFn->nMax < 0 || n <= pFn->nMax))) return pFn;
  if (pFn->nMax < 0) {
    qcErr(pC, pCl->pForm, "%s needs at least %d argument(s)", pFn->zName, pFn->nMin);
  } else if (pFn->nMin == pFn->nMax) {
    qcErr(pC, pCl->pForm, "%s takes %d argument(s), got %d", pFn->zName, pFn->nMin, n);
  } else {
    qcErr(pC, pCl->pForm, "%s takes %d to %d arguments, got %d", pFn->zName, pFn->nMin,
          pFn->nMax, n);
  }
  return NULL;
}

static int qcfPredicateIn(QCtx *pX, const QClause *pCl);

/* On the source its first argument names, when it names one. */
int qcfPredicate(QCtx *pX, const QClause *pCl) {
  QSrcSave sv;
  if (qcsEnter(pX->pC, pCl, &sv) == SQLITE_OK) qcfPredicateIn(pX, pCl);
  qcsLeave(pX->pC, &sv);
  return pX->pC->rc;
}

static int qcfPredicateIn(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  const QcfBuiltin *pFn;
  QcfOut out = { NULL, VT_NONE, NULL, QCF_RE_NONE, 0 };
  /* Not a built-in: on a host store, maybe the host's own SQL function. */
  if (qcfLookup(pCl->zName) == NULL && qchCall(pX, pCl, 1, &out.zSql, &out.zTag)) {
    /* the host's function may fail for any argument: only rows that
    ** reach the clause call it */
    sqlite3_free(out.zTag);
    if (out.zSql) qcWhere(pX, qcGuard(pX, out.zSql));
    return pC->rc;
  }
  pFn = qcfBuiltin(pX, pCl, 1);
  if (pFn == NULL || pFn->xCompile(pX, pCl, pFn, &out) != SQLITE_OK) return pC->rc;
  if (out.zSql == NULL) return qcNoMem(pC);
  sqlite3_free(out.zTag);
  out.zSql = qcGuardRaising(pX, out.zSql);
  if (out.zSql == NULL) return pC->rc;
  if (pFn->eKind == QCF_PRED) {
    qcWhere(pX, out.zSql);
    return pC->rc;
  }
  /* A value is a predicate by Clojure truthiness: nil and false fail,
  ** everything else (0 and "" too) holds. */
  if (out.vt == VT_BOOLEAN) qcWhere(pX, sqlite3_mprintf("coalesce(%s, 0) != 0", out.zSql));
  else qcWhere(pX, sqlite3_mprintf("(%s) IS NOT NULL", out.zSql));
  sqlite3_free(out.zSql);
  return pC->rc;
}

/* The type tag of a JSON element (tuples carry values as JSON): numbers 5,
** booleans 1, text starting with ':' a keyword (13), other text 10, a
** nested array or object TAG_JSON (no tag read as nil). zType is the SQL
** giving json_type's answer, zVal the element's SQL value. */
static char *qcfJsonTag(const char *zType, const char *zVal) {
  return sqlite3_mprintf("(CASE %s WHEN 'integer' THEN 5 WHEN 'real' THEN 5 WHEN 'true'"
                         " THEN 1 WHEN 'false' THEN 1 WHEN 'text' THEN (CASE WHEN"
                         " substr(%s, 1, 1) = ':' THEN 13 ELSE 10 END) WHEN 'array' THEN %d"
                         " WHEN 'object' THEN %d END)", zType, zVal, TAG_JSON, TAG_JSON);
}

/* Binds element k of the JSON array zDoc to variable pVar (blank: skipped). */
static void qcfBindJsonElem(QCtx *pX, const EdnValue *pVar, const char *zDoc, int k) {
  char *zType, *zVal;
  if (qpIsBlank(pVar)) return;
  zType = sqlite3_mprintf("json_type(%s, '$[%d]')", zDoc, k);
  zVal = sqlite3_mprintf("json_extract(%s, '$[%d]')", zDoc, k);
  if (zType && zVal) {
    int bNew = qcVarFind(pX, pVar->u.s.z) == NULL;
    qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s", zVal), VT_NONE, qcfJsonTag(zType, zVal), 0);
    if (bNew) qcFnResult(pX, pVar->u.s.z);
  } else {
    qcNoMem(pX->pC);
  }
  sqlite3_free(zType);
  sqlite3_free(zVal);
}

/* Binds element k of tuple zTup (SQL of a tuple value, or when zTag is
** given a value of that run-time tag, a tuple or a JSON collection) to
** pVar (blank: skipped), with the element's own type: a tuple keeps each
** element's type in its encoding (query_funcs_tuple.c), JSON only guesses. */
static void qcfBindTupleElem(QCtx *pX, const EdnValue *pVar, const char *zTup, const char *zTag,
                             const char *zK) {
  char *zVal, *zElTag;
  if (qpIsBlank(pVar)) return;
  if (zTag == NULL) {
    zVal = sqlite3_mprintf("mentat_untuple(%s, %s)", zTup, zK);
    zElTag = sqlite3_mprintf("mentat_untuple_tag(%s, %s)", zTup, zK);
  } else {
    char *zPath = sqlite3_mprintf("'$[' || (%s) || ']'", zK);
    char *zJType = zPath ? sqlite3_mprintf("json_type(CASE %s WHEN %d THEN %s END, %s)", zTag,
                                           TAG_JSON, zTup, zPath) : NULL;
    char *zJVal = zPath ? sqlite3_mprintf("json_extract(CASE %s WHEN %d THEN %s END, %s)", zTag,
                                          TAG_JSON, zTup, zPath) : NULL;
    char *zJTag = zJType && zJVal ? qcfJsonTag(zJType, zJVal) : NULL;
    zVal = zJVal ? sqlite3_mprintf("(CASE %s WHEN %d THEN mentat_untuple(%s, %s) ELSE %s END)",
                                   zTag, TAG_TUPLE, zTup, zK, zJVal) : NULL;
    zElTag = zJTag ? sqlite3_mprintf("(CASE %s WHEN %d THEN mentat_untuple_tag(%s, %s) ELSE %s"
                                     " END)", zTag, TAG_TUPLE, zTup, zK, zJTag) : NULL;
    sqlite3_free(zPath);
    sqlite3_free(zJType);
    sqlite3_free(zJVal);
    sqlite3_free(zJTag);
  }
  if (zVal && zElTag) {
    int bNew = qcVarFind(pX, pVar->u.s.z) == NULL;
    qcBindVar(pX, pVar->u.s.z, zVal, VT_NONE, zElTag, 0);
    if (bNew) qcFnResult(pX, pVar->u.s.z);
  } else {
    sqlite3_free(zVal);
    sqlite3_free(zElTag);
    qcNoMem(pX->pC);
  }
}

/* Binds the elements of tuple zTup (tag zTag as qcfBindTupleElem) through
** clause pCl's tuple binding: one shorter than it is an error (qcbFill). */
static void qcfBindTupleElems(QCtx *pX, const QClause *pCl, const char *zTup, const char *zTag) {
  const QBinding *pB = &pCl->bind;
  int i;
  for (i = 0; i < pB->nVar && pX->pC->rc == SQLITE_OK; i++) {
    char zK[16];
    sqlite3_snprintf(sizeof zK, zK, "%d", i);
    qcfBindTupleElem(pX, pB->aVar[i], zTup, zTag, zK);
  }
  if (zTag == NULL) {
    qcbFill(pX, pCl, pB, sqlite3_mprintf("mentat_tuple_count(%s)", zTup));
  } else {
    qcbFill(pX, pCl, pB, sqlite3_mprintf("(CASE %s WHEN %d THEN mentat_tuple_count(%s) WHEN %d"
                                         " THEN json_array_length(%s) END)", zTag, TAG_TUPLE,
                                         zTup, TAG_JSON, zTup));
  }
}

/* Binds tuple zTup (taken over) through tuple or collection binding pB:
** its elements with their own types ([?x ...]: one row per element,
** json_each giving the positions); NULL then. For a relation binding it
** gives the tuple's JSON array instead, read as a vector of scalars. */
static char *qcfBindTupleForm(QCtx *pX, const QClause *pCl, char *zTup) {
  QComp *pC = pX->pC;
  const QBinding *pB = &pCl->bind;
  char zAlias[24], *zKey;
  if (pB->kind == QB_REL) {
    char *zJ = sqlite3_mprintf("mentat_json(%s, %d)", zTup, TAG_TUPLE);
    sqlite3_free(zTup);
    if (zJ == NULL) qcNoMem(pC);
    return zJ;
  }
  if (pB->kind == QB_TUPLE) {
    qcfBindTupleElems(pX, pCl, zTup, NULL);
  } else {
    sqlite3_snprintf(sizeof zAlias, zAlias, "j%d", ++pC->nAlias);
    qcFrom(pX, sqlite3_mprintf("json_each(mentat_json(%s, %d)) %s", zTup, TAG_TUPLE, zAlias));
    zKey = sqlite3_mprintf("%s.key", zAlias);
    if (zKey == NULL) qcNoMem(pC);
    else qcfBindTupleElem(pX, pB->aVar[0], zTup, NULL, zKey);
    sqlite3_free(zKey);
  }
  sqlite3_free(zTup);
  return NULL;
}

/* Binds a function's result (SQL zExpr of type vt, tag zTag when vt is
** VT_NONE; both taken over) through the clause's binding form. A scalar
** binds anything; tuple, collection and relation forms need a result that
** is a collection (JSON: tuple, ground of a vector): [?a ?b] takes its
** elements, [?x ...] joins json_each over it (one row per element) and
** [[?a ?b]] joins json_each and takes each row's elements. */
int qcfBindResult(QCtx *pX, const QClause *pCl, char *zExpr, ValueType vt, char *zTag) {
  QComp *pC = pX->pC;
  const QBinding *pB = &pCl->bind;
  char zAlias[24];
  int i;
  if (zExpr == NULL) {
    sqlite3_free(zTag);
    return qcNoMem(pC);
  }
  if (pB->kind == QB_SCALAR) {
    /* A nil result binds nothing, as in Datomic: (untuple 5) or a missing
    ** value drop the row instead of binding a NULL no Datalog value can
    ** stand for. `_` too (DataScript's bind-by-fn calls the function on
    ** every row, drops nil): the term runs it, errors and all. */
    qcWhere(pX, sqlite3_mprintf("(%s) IS NOT NULL", zExpr));
    if (qpIsBlank(pB->aVar[0])) {
      sqlite3_free(zExpr);
      sqlite3_free(zTag);
      return pC->rc;
    }
    {
      QVar *pV = qcVarFind(pX, pB->aVar[0]->u.s.z);
      int bNew = pV == NULL;
      int bKw = vt == VT_KEYWORD || (vt == VT_NONE && zTag);
      if (!bNew && (vt == QVT_JSON || vt == VT_TUPLE) && pV->zExpr && pV->vt == VT_REF && !pV->nParam) {
        /* as a pattern after it would say (qcwPlace) */
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
        char *zId = qcIdentSql(pC, zExpr);
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
  if (vt == VT_TUPLE) {
    zExpr = qcfBindTupleForm(pX, pCl, zExpr);
    if (zExpr == NULL) return pC->rc;
    vt = QVT_JSON;
  }
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
        qcfBindJsonElem(pX, pB->aVar[i], zExpr, i);
      }
      qcbFill(pX, pCl, pB, sqlite3_mprintf("json_array_length(%s)", zExpr));
      break;
    case QB_COLL:
      sqlite3_snprintf(sizeof zAlias, zAlias, "j%d", ++pC->nAlias);
      qcFrom(pX, sqlite3_mprintf("json_each(%s) %s", zExpr, zAlias));
      if (!qpIsBlank(pB->aVar[0]) && pC->rc == SQLITE_OK) {
        char *zType = sqlite3_mprintf("%s.type", zAlias);
        char *zVal = sqlite3_mprintf("%s.value", zAlias);
        if (zType && zVal) {
          qcBindVar(pX, pB->aVar[0]->u.s.z, sqlite3_mprintf("%s", zVal), VT_NONE,
                    qcfJsonTag(zType, zVal), 0);
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
      qcbFill(pX, pCl, pB, sqlite3_mprintf("(CASE %s.type WHEN 'array' THEN json_array_length(%s)"
                                           " ELSE -1 END)", zAlias, zDoc));
      for (i = 0; i < pB->nVar && pC->rc == SQLITE_OK; i++) {
        qcfBindJsonElem(pX, pB->aVar[i], zDoc, i);
      }
      break;
    }
  }
  sqlite3_free(zExpr);
  return pC->rc;
}

int qcfGetElse(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  const EdnValue *const *aArg;
  int nArg;
  QComp *pC = pX->pC;
  const Attr *pA;
  char *zE, *zSub, *zD, *zTagD = NULL;
  ValueType vtD;
  qcSkipSrc(pCl, &aArg, &nArg);
  (void)pFn;
  (void)pOut;
  if (nArg != 3) return qcErr(pC, pCl->pForm, "get-else takes $, an entity, an attribute and a default");
  if (aArg[2]->type == EDN_NIL) return qcErr(pC, aArg[2], "get-else: the default must not be nil");
  pA = qcAttrArg(pX, aArg[1], "get-else");
  if (pC->rc) return pC->rc;
  if ((pA && pA->bMany) || (!pA && qcReverseAttr(pX, aArg[1]))) {
    /* a reverse attribute has many values in general, as entity's set */
    return qcErr(pC, aArg[1], "get-else: %s is cardinality many", aArg[1]->u.s.z);
  }
  zE = qcEntityExpr(pX, aArg[0], "get-else");
  if (zE == NULL) return pC->rc;
  if (pA == NULL) {
    /* an attribute no store has: always the default */
    zD = qcTermExpr(pX, aArg[2], &vtD, &zTagD, "function");
    sqlite3_free(zE);
    if (zD == NULL) return pC->rc;
    return qcfBindResult(pX, pCl, zD, vtD, zTagD);
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
    qcfBindResult(pX, pCl, sqlite3_mprintf("COALESCE((%s), %s)", zSub, zD), pA->type, NULL);
  } else {
    char *zTag;
    if (vtD == VT_NONE && zTagD) {
      zTag = sqlite3_mprintf("(CASE WHEN (%s) IS NULL THEN %s ELSE %d END)", zSub, zTagD,
                             vtOutTag(pA->type));
    } else {
      zTag = sqlite3_mprintf("(CASE WHEN (%s) IS NULL THEN %d ELSE %d END)", zSub,
                             vtD == QVT_JSON ? TAG_JSON : vtOutTag(vtD), vtOutTag(pA->type));
    }
    if (zTag == NULL) qcNoMem(pC);
    else qcfBindResult(pX, pCl, sqlite3_mprintf("COALESCE((%s), %s)", zSub, zD), VT_NONE, zTag);
  }
  sqlite3_free(zSub);
  sqlite3_free(zD);
  sqlite3_free(zTagD);
  return pC->rc;
}

int qcfGetSome(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  const EdnValue *const *aArg;
  int nArg;
  QComp *pC = pX->pC;
  sqlite3_str *pA, *pV, *pT;
  ValueType vtAll = VT_NONE;
  char *zE, *zAttr, *zVal, *zTag, *zHas, *zOne;
  int i, bSame = 1;
  qcSkipSrc(pCl, &aArg, &nArg);
  (void)pFn;
  (void)pOut;
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
    if (pAt == NULL && pC->rc == SQLITE_OK && qcReverseAttr(pX, aArg[i])) {
      qcErr(pC, aArg[i], "get-some: %s is cardinality many", aArg[i]->u.s.z);
      break;
    }
    if (pAt == NULL) continue;
    /* Datomic: "one or more cardinality-one attributes", as get-else */
    if (pAt->bMany) {
      qcErr(pC, aArg[i], "get-some: %s is cardinality many", aArg[i]->u.s.z);
      break;
    }
    if (vtAll == VT_NONE) vtAll = pAt->type;
    else if (vtAll != pAt->type) bSame = 0;
    zHas = qcEntityAttrSql(pX, pCl->pForm, "get-some", "1", zE, pAt->e);
    zOne = qcEntityAttrSql(pX, pCl->pForm, "get-some", "g.v", zE, pAt->e);
    if (zHas && zOne) {
      sqlite3_str_appendf(pA, " WHEN EXISTS (%s) THEN %lld", zHas, pAt->e);
      sqlite3_str_appendf(pV, " WHEN EXISTS (%s) THEN (%s LIMIT 1)", zHas, zOne);
      sqlite3_str_appendf(pT, " WHEN EXISTS (%s) THEN %d", zHas, vtOutTag(pAt->type));
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
  if (vtAll == VT_NONE) {
    /* no known attribute: a CASE without WHEN is no SQL ("near AS: syntax
    ** error" reached the user); the clause has no rows (WHERE 0 below) */
    sqlite3_free(zAttr);
    sqlite3_free(zVal);
    sqlite3_free(zTag);
    zAttr = sqlite3_mprintf("NULL");
    zVal = sqlite3_mprintf("NULL");
    zTag = sqlite3_mprintf("NULL");
  }
  sqlite3_free(zE);
  if (zAttr == NULL || zVal == NULL || zTag == NULL) qcNoMem(pC);
  if (pC->rc == SQLITE_OK) {
    if (vtAll == VT_NONE) {
      qcWhere(pX, sqlite3_mprintf("0"));
    } else {
      qcWhere(pX, sqlite3_mprintf("(%s) IS NOT NULL", zAttr));
    }
  }
  if (pC->rc == SQLITE_OK && !qpIsBlank(pCl->bind.aVar[0])) {
    qcBindVar(pX, pCl->bind.aVar[0]->u.s.z, zAttr, VT_REF, NULL, 0);
    zAttr = NULL;
  }
  if (pC->rc == SQLITE_OK && !qpIsBlank(pCl->bind.aVar[1])) {
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
int qcfUntuple(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QComp *pC = pX->pC;
  ValueType vt;
  char *zT, *zTag = NULL;
  (void)pFn;
  (void)pOut;
  if (pCl->nArg != 1) return qcErr(pC, pCl->pForm, "untuple takes 1 argument(s), got %d", pCl->nArg);
  if (pCl->bind.kind != QB_TUPLE) {
    return qcErr(pC, pCl->pForm, "bad binding form for untuple: bind a tuple [?a ?b ...]");
  }
  zT = qcTermExpr(pX, pCl->aArg[0], &vt, &zTag, "function");
  if (zT == NULL) return pC->rc;
  if (vt == VT_TUPLE || (vt == VT_NONE && zTag)) {
    /* a tuple (or, by its run-time tag, a tuple or a collection): each
    ** element with its own type */
    qcfBindTupleElems(pX, pCl, zT, vt == VT_TUPLE ? NULL : zTag);
    sqlite3_free(zT);
    sqlite3_free(zTag);
    return pC->rc;
  }
  sqlite3_free(zTag);
  return qcfBindResult(pX, pCl, zT, QVT_JSON, NULL);
}

int qcfFulltext(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  const EdnValue *const *aArg;
  int nArg;
  QComp *pC = pX->pC;
  const Attr *pA;
  ValueType vt;
  char *zQ;
  char zD[24], zF[24];
  int i;
  qcSkipSrc(pCl, &aArg, &nArg);
  (void)pFn;
  (void)pOut;
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
  {
    /* a search string Datomic's fulltext rejects is an error at the
    ** clause, not FTS4's placeless one or a silent empty match */
    char *zPlace = qcPlaceSql(pCl->pForm, "fulltext");
    char *zChecked = zPlace ? sqlite3_mprintf("mentat_fts_query(%s, %s)", zQ, zPlace) : NULL;
    sqlite3_free(zPlace);
    sqlite3_free(zQ);
    if (zChecked == NULL) return qcNoMem(pC);
    zQ = zChecked;
  }
  sqlite3_snprintf(sizeof zD, zD, "d%d", ++pC->nAlias);
  sqlite3_snprintf(sizeof zF, zF, "f%d", ++pC->nAlias);
  qcFrom(pX, sqlite3_mprintf("%s %s", pC->zFulltext, zF));
  {
    /* The datoms of the database the query reads (qcView). The log has no
    ** index_fulltext column; the attribute's flag says it there. */
    const char *zTable = pC->zDatoms;
    char *zCond = qcView(pC, zD, &zTable);
    if (zCond == NULL) qcNoMem(pC);
    qcFrom(pX, sqlite3_mprintf("%s %s", zTable, zD));
    if (zCond && zCond[0]) qcWhere(pX, zCond);
    else sqlite3_free(zCond);
    if (zTable == pC->zDatoms) qcWhere(pX, sqlite3_mprintf("%s.index_fulltext IS NOT 0", zD));
  }
  if (pA == NULL) qcWhere(pX, sqlite3_mprintf("0"));
  else qcWhere(pX, sqlite3_mprintf(
      "%s.text MATCH %s AND %s.a = %lld AND %s.value_type_tag = 10"
      " AND %s.v = +%s.rowid", zF, zQ, zD, pA ? pA->e : 0, zD, zD, zF));
  sqlite3_free(zQ);
  for (i = 0; i < pCl->bind.nVar && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pVar = pCl->bind.aVar[i];
    if (qpIsBlank(pVar)) continue;
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
static char *qcfTxAtInstant(const QComp *pC, const char *zInst) {
  return sqlite3_mprintf("coalesce((SELECT min(e) FROM %s WHERE a = %d AND value_type_tag = %d"
                         " AND v >= (%s)), 9223372036854775807)",
                         pC->zDatoms, ENTID_DB_TXINSTANT, TAG_INSTANT, zInst);
}

/* A point in time argument of the log functions (Datomic's tx-range: a tx
** id or a transaction instant), as SQL giving a tx id. An #inst becomes
** the first transaction at or after it; nil (when bOpen is given) is no
** bound: NULL and *pbOpen set. Any other type is an error naming zFn, the
** argument's role zRole and the argument: at compile time when its type
** is known, else when the row reaches it (mentat_tx_point). */
static char *qcfTxPoint(QCtx *pX, const EdnValue *pArg, const char *zFn, const char *zRole,
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
    zOut = qcfTxAtInstant(pX->pC, zV);
  } else if (vt != VT_NONE && !qcNoRows(pX)) {
    qcErr(pC, pArg, "%s: %s %s is a %s, not a tx id or an #inst", zFn, zRole, zName, qcVtName(vt));
  } else {
    /* Its type is known only per row: an instant's tag picks the instant
    ** reading, anything else must be an entity id or a long. */
    char *zWhere = sqlite3_mprintf("line %d col %d: %s: %s %s", pArg->line, pArg->col, zFn, zRole,
                                   zName);
    char *zInst = qcfTxAtInstant(pX->pC, zV);
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
int qcfTxIds(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  const EdnValue *const *aArg;
  int nArg;
  QComp *pC = pX->pC;
  char *zFrom = NULL, *zTo = NULL;
  char zAlias[24];
  int bOpenFrom = 0, bOpenTo = 0;
  qcSkipSrc(pCl, &aArg, &nArg);
  (void)pFn;
  (void)pOut;
  if (nArg != 2) return qcErr(pC, pCl->pForm, "tx-ids takes $, a start and an end tx");
  if (pCl->bind.kind != QB_COLL && pCl->bind.kind != QB_SCALAR) {
    return qcErr(pC, pCl->pForm, "tx-ids binds a collection [?tx ...]");
  }
  zFrom = qcGuardRaising(pX, qcfTxPoint(pX, aArg[0], "tx-ids", "start", &bOpenFrom));
  if (pC->rc == SQLITE_OK) zTo = qcGuardRaising(pX, qcfTxPoint(pX, aArg[1], "tx-ids", "end", &bOpenTo));
  if (pC->rc == SQLITE_OK) {
    sqlite3_snprintf(sizeof zAlias, zAlias, "x%d", ++pC->nAlias);
    /* A plain join (a derived table could not see ?from/?to): rows repeat
    ** per datom, and the query's DISTINCT makes them a set again. */
    qcFrom(pX, sqlite3_mprintf("%s %s", pC->zLog, zAlias));
    qcWhere(pX, sqlite3_mprintf("%s.timeline IS 0", zAlias));
    if (!bOpenFrom) qcWhere(pX, sqlite3_mprintf("%s.tx >= %s", zAlias, zFrom));
    if (!bOpenTo) qcWhere(pX, sqlite3_mprintf("%s.tx < %s", zAlias, zTo));
    if (!qpIsBlank(pCl->bind.aVar[0])) {
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
int qcfTxData(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  const EdnValue *const *aArg;
  int nArg;
  QComp *pC = pX->pC;
  char *zTx;
  char zAlias[24];
  int i;
  qcSkipSrc(pCl, &aArg, &nArg);
  (void)pFn;
  (void)pOut;
  if (nArg != 1) return qcErr(pC, pCl->pForm, "tx-data takes $ and a tx");
  if (pCl->bind.kind != QB_REL || pCl->bind.nVar > 5) {
    return qcErr(pC, pCl->pForm, "tx-data binds a relation [[?e ?a ?v ?tx ?added]]");
  }
  zTx = qcGuardRaising(pX, qcfTxPoint(pX, aArg[0], "tx-data", "tx", NULL));
  if (zTx == NULL) return pC->rc;
  sqlite3_snprintf(sizeof zAlias, zAlias, "x%d", ++pC->nAlias);
  qcFrom(pX, sqlite3_mprintf("%s %s", pC->zLog, zAlias));
  qcWhere(pX, sqlite3_mprintf("%s.timeline IS 0 AND %s.tx = %s", zAlias, zAlias, zTx));
  sqlite3_free(zTx);
  for (i = 0; i < pCl->bind.nVar && pC->rc == SQLITE_OK; i++) {
    const EdnValue *pVar = pCl->bind.aVar[i];
    if (qpIsBlank(pVar)) continue;
    switch (i) {
      case 0: qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.e", zAlias), VT_REF, NULL, 1); break;
      case 1: qcBindVar(pX, pVar->u.s.z, sqlite3_mprintf("%s.a", zAlias), VT_REF, NULL, 1); break;
      case 2:
        qcBindVar(pX, pVar->u.s.z, qcDatomValueExpr(pC, zAlias), VT_NONE,
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

/* (ground x): the value itself, a constant through the binding form. */
int qcfGround(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QComp *pC = pX->pC;
  char *zExpr, *zTag = NULL;
  ValueType vt;
  (void)pFn;
  (void)pOut;
  if (ednIsVar(pCl->aArg[0])) {
    zExpr = qcTermExpr(pX, pCl->aArg[0], &vt, &zTag, "function");
    if (zExpr == NULL) return pC->rc;
    return qcfBindResult(pX, pCl, zExpr, vt, zTag);
  }
  return qcbBind(pX, &pCl->bind, pCl->aArg[0], -1, "ground");
}

static int qcfFunctionIn(QCtx *pX, const QClause *pCl);

/* On the source its first argument names, when it names one. */
int qcfFunction(QCtx *pX, const QClause *pCl) {
  QSrcSave sv;
  if (qcsEnter(pX->pC, pCl, &sv) == SQLITE_OK) qcfFunctionIn(pX, pCl);
  qcsLeave(pX->pC, &sv);
  return pX->pC->rc;
}

static int qcfFunctionIn(QCtx *pX, const QClause *pCl) {
  QComp *pC = pX->pC;
  const QcfBuiltin *pFn;
  QcfOut out = { NULL, VT_NONE, NULL, QCF_RE_NONE, 0 };
  pC->nArgDepth = 0;
  if (qcfLookup(pCl->zName) == NULL && qchCall(pX, pCl, 0, &out.zSql, &out.zTag)) {
    if (out.zSql == NULL) { sqlite3_free(out.zTag); return pC->rc; }
    out.zSql = qcGuard(pX, out.zSql);
    if (out.zTag) out.zTag = qcGuard(pX, out.zTag);
    if (out.zSql == NULL || pC->rc) { sqlite3_free(out.zSql); sqlite3_free(out.zTag); return pC->rc; }
    return qcfBindResult(pX, pCl, out.zSql, VT_NONE, out.zTag);
  }
  pFn = qcfBuiltin(pX, pCl, 0);
  if (pFn == NULL) return pC->rc;
  if (pFn->xCompile(pX, pCl, pFn, &out) != SQLITE_OK || pFn->eKind == QCF_CLAUSE) return pC->rc;
  if (out.zSql == NULL) return qcNoMem(pC);
  /* Only rows that reach the clause may make it fail (Datomic runs the
  ** clauses in order): see qcGuard. */
  out.zSql = qcGuardRaising(pX, out.zSql);
  if (out.zTag) out.zTag = qcGuardRaising(pX, out.zTag);
  if (out.zSql == NULL || pC->rc) { sqlite3_free(out.zSql); sqlite3_free(out.zTag); return pC->rc; }
  if (pFn->eKind == QCF_PRED) {
    /* A predicate bound to a variable gives its truth as a boolean. */
    char *zBool = sqlite3_mprintf("(CASE WHEN %s THEN 1 ELSE 0 END)", out.zSql);
    sqlite3_free(out.zSql);
    return qcfBindResult(pX, pCl, zBool, VT_BOOLEAN, NULL);
  }
  if (out.eRe != QCF_RE_NONE && out.vt == QVT_JSON && pCl->bind.kind != QB_SCALAR) {
    sqlite3_free(out.zTag);
    return qcvBindRegex(pX, pCl, out.zSql, out.eRe, out.nReElems);
  }
  if (strcmp(pFn->zName, "re-seq") == 0 && pCl->bind.kind == QB_SCALAR
      && !qpIsBlank(pCl->bind.aVar[0]) && qcVarFind(pX, pCl->bind.aVar[0]->u.s.z) == NULL) {
    /* a new variable holds the seq: str prints it as one (qcvStr) */
    QVar *pV;
    if (qcfBindResult(pX, pCl, out.zSql, out.vt, out.zTag) != SQLITE_OK) return pC->rc;
    pV = qcVarFind(pX, pCl->bind.aVar[0]->u.s.z);
    if (pV) pV->bSeq = 1;
    return pC->rc;
  }
  return qcfBindResult(pX, pCl, out.zSql, out.vt, out.zTag);
}
