/*
** query_funcs.c — the table of built-in functions (query_funcs.h) and the
** SQL functions compiled plans call on a store connection. Takes a
** function name from the compiler; gives its row. Takes a store
** connection; registers on it every run-time function the rows name, the
** aggregates' helpers and the mentat_kw collation (qfRegister,
** the store's connection hook). The rows follow Datomic's documented
** :where functions (its "Built-in Expression Functions and Predicates") and
** the Clojure functions Datomic lets a query call.
**
** The run-time functions are internal (SQLITE_INNOCUOUS is not set; the
** store connections are private to the extension, so nothing else sees
** them).
*/
#include <stdarg.h>
#include <string.h>
#include "query_funcs.h"
#include "query_one.h"
#include "query_plan.h"

#define QF_N QF_MAX_ARGS

/* Java's Character.isWhitespace: ASCII space and controls 9-13 and 28-31,
** and Unicode's space separators other than the no-break ones. */
#define QF_BLANK_SQL "(trim(coalesce(%s, ''), char(32, 9, 10, 11, 12, 13, 28, 29, 30, 31, " \
  "5760, 8192, 8193, 8194, 8195, 8196, 8197, 8198, 8200, 8201, 8202, 8232, 8233, 8287, 12288)) = '')"

static const QfBuiltin aQfBuiltin[] = {
  /* comparisons: Clojure's = (and its negations) compares values, == and
  ** the orderings numbers by magnitude */
  { "=", QF_PRED, 2, -1, QF_ARG_ANY, VT_BOOLEAN, qcpEqual, "=", 0, 0, 0 },
  { "==", QF_PRED, 2, -1, QF_ARG_ANY, VT_BOOLEAN, qcpCompare, "=", 0, 0, 0 },
  { "!=", QF_PRED, 2, -1, QF_ARG_ANY, VT_BOOLEAN, qcpNotEqual, "!=", 0, 0, 0 },
  { "not=", QF_PRED, 2, -1, QF_ARG_ANY, VT_BOOLEAN, qcpNotEqual, "!=", 0, 0, 0 },
  { "<", QF_PRED, 2, -1, QF_ARG_ANY, VT_BOOLEAN, qcpCompare, "<", 0, 0, 0 },
  { "<=", QF_PRED, 2, -1, QF_ARG_ANY, VT_BOOLEAN, qcpCompare, "<=", 0, 0, 0 },
  { ">", QF_PRED, 2, -1, QF_ARG_ANY, VT_BOOLEAN, qcpCompare, ">", 0, 0, 0 },
  { ">=", QF_PRED, 2, -1, QF_ARG_ANY, VT_BOOLEAN, qcpCompare, ">=", 0, 0, 0 },
  /* DataScript's -differ?: the first half of the arguments differs from
  ** the second half in some place */
  { "differ?", QF_PRED, -1, -1, QF_ARG_ANY, VT_BOOLEAN, qcpDiffer, "!=", 0, 0, 0 },
  { "-differ?", QF_PRED, -1, -1, QF_ARG_ANY, VT_BOOLEAN, qcpDiffer, "!=", 0, 0, 0 },
  { "missing?", QF_PRED, -1, -1, QF_ARG_ANY, VT_BOOLEAN, qcpMissing, 0, 0, 0, 0 },
  /* Clojure predicates */
  { "even?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) %% 2 = 0)", 0, 0, 0 },
  { "odd?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) %% 2 != 0)", 0, 0, 0 },
  { "zero?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) = 0)", 0, 0, 0 },
  { "pos?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) > 0)", 0, 0, 0 },
  { "neg?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) < 0)", 0, 0, 0 },
  { "nil?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) IS NULL)", 0, 0, 0 },
  { "some?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) IS NOT NULL)", 0, 0, 0 },
  { "true?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) IS 1)", 0, 0, 0 },
  { "false?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, "((%s) IS 0)", 0, 0, 0 },
  { "clojure.string/blank?", QF_PRED, 1, 1, QF_ARG_ANY, VT_BOOLEAN, qcpFormat, QF_BLANK_SQL,
    0, 0, 0 },
  { "clojure.string/starts-with?", QF_PRED, 2, 2, QF_ARG_ANY, VT_BOOLEAN, qcpStartsWith,
    "(substr(%s, 1, length(%s)) = %s)", 0, 0, 0 },
  { "clojure.string/ends-with?", QF_PRED, 2, 2, QF_ARG_ANY, VT_BOOLEAN, qcpFormat,
    "mentat_ends_with(%s, %s)", "mentat_ends_with", 2, qfEndsWith },
  { "clojure.string/includes?", QF_PRED, 2, 2, QF_ARG_ANY, VT_BOOLEAN, qcpFormat,
    "(instr(%s, %s) > 0)", 0, 0, 0 },
  /* arithmetic: numbers only; longs checked (an overflow, a zero divisor
  ** an error at the clause), a double argument makes it double arithmetic */
  { "+", QF_VALUE, 0, QF_N, QF_ARG_NUM, VT_NONE, qcvArithOp, "+", "mentat_add", -1, qfAdd },
  { "-", QF_VALUE, 1, QF_N, QF_ARG_NUM, VT_NONE, qcvArithOp, "-", "mentat_sub", -1, qfSub },
  { "*", QF_VALUE, 0, QF_N, QF_ARG_NUM, VT_NONE, qcvArithOp, "*", "mentat_mul", -1, qfMul },
  { "/", QF_VALUE, 1, QF_N, QF_ARG_NUM, VT_NONE, qcvArith, 0, "mentat_div", -1, qfDiv },
  { "quot", QF_VALUE, 2, 2, QF_ARG_NUM, VT_NONE, qcvArith, 0, "mentat_quot", 3, qfQuot },
  { "rem", QF_VALUE, 2, 2, QF_ARG_NUM, VT_NONE, qcvArith, 0, "mentat_rem", 3, qfRem },
  { "mod", QF_VALUE, 2, 2, QF_ARG_NUM, VT_NONE, qcvArith, 0, "mentat_mod", 3, qfMod },
  { "inc", QF_VALUE, 1, 1, QF_ARG_NUM, VT_NONE, qcvArith1, "((%s) + 1)", "mentat_inc", 2, qfInc },
  { "dec", QF_VALUE, 1, 1, QF_ARG_NUM, VT_NONE, qcvArith1, "((%s) - 1)", "mentat_dec", 2, qfDec },
  { "abs", QF_VALUE, 1, 1, QF_ARG_NUM, VT_NONE, qcvArith1, "abs(%s)", "mentat_abs", 2, qfAbs },
  { "max", QF_VALUE, 1, QF_N, QF_ARG_NUM, VT_NONE, qcvMinMax, "max", 0, 0, 0 },
  { "min", QF_VALUE, 1, QF_N, QF_ARG_NUM, VT_NONE, qcvMinMax, "min", 0, 0, 0 },
  /* values, strings, collections */
  { "compare", QF_VALUE, 2, 2, QF_ARG_ANY, VT_LONG, qcvCompare, 0, 0, 0, 0 },
  { "count", QF_VALUE, 1, 1, QF_ARG_ANY, VT_LONG, qcvCount, 0, 0, 0, 0 },
  { "str", QF_VALUE, 0, QF_N, QF_ARG_ANY, VT_STRING, qcvStr, 0, "mentat_str", 2, qfStr },
  { "subs", QF_VALUE, 2, 3, QF_ARG_ANY, VT_STRING, qcvSubs, 0, "mentat_subs", -1, qfSubs },
  { "identity", QF_VALUE, 1, 1, QF_ARG_ANY, VT_NONE, qcvIdentity, 0, 0, 0, 0 },
  { "tuple", QF_VALUE, 1, QF_N, QF_ARG_ANY, QVT_JSON, qcvTuple, 0, "mentat_json", 2, qfJson },
  { "clojure.string/upper-case", QF_VALUE, 1, 1, QF_ARG_ANY, VT_STRING, qcvCall, 0,
    "mentat_upper_case", 1, qfUpperCase },
  { "clojure.string/lower-case", QF_VALUE, 1, 1, QF_ARG_ANY, VT_STRING, qcvCall, 0,
    "mentat_lower_case", 1, qfLowerCase },
  /* regular expressions, java.util.regex's dialect */
  { "re-find", QF_VALUE, 2, 2, QF_ARG_STR, VT_NONE, qcvReMatch, 0, "mentat_re_find", 4, qfReFind },
  { "re-matches", QF_VALUE, 2, 2, QF_ARG_STR, VT_NONE, qcvReMatch, 0, "mentat_re_matches", 4,
    qfReMatches },
  { "re-seq", QF_VALUE, 2, 2, QF_ARG_STR, QVT_JSON, qcvReSeq, 0, "mentat_re_seq", 3, qfReSeq },
  { "re-pattern", QF_VALUE, 1, 1, QF_ARG_STR, VT_NONE, qcvIdentity, 0, 0, 0, 0 },
  /* function clauses that bind their results themselves */
  { "ground", QF_CLAUSE, 1, 1, QF_ARG_ANY, VT_NONE, qcfGround, 0, 0, 0, 0 },
  { "get-else", QF_CLAUSE, -1, -1, QF_ARG_ANY, VT_NONE, qcfGetElse, 0, 0, 0, 0 },
  { "get-some", QF_CLAUSE, -1, -1, QF_ARG_ANY, VT_NONE, qcfGetSome, 0, 0, 0, 0 },
  { "untuple", QF_CLAUSE, 1, 1, QF_ARG_ANY, QVT_JSON, qcfUntuple, 0, 0, 0, 0 },
  { "fulltext", QF_CLAUSE, -1, -1, QF_ARG_ANY, VT_NONE, qcfFulltext, 0, 0, 0, 0 },
  { "tx-ids", QF_CLAUSE, -1, -1, QF_ARG_ANY, VT_REF, qcfTxIds, 0, "mentat_tx_point", 3, qfTxPoint },
  { "tx-data", QF_CLAUSE, -1, -1, QF_ARG_ANY, VT_NONE, qcfTxData, 0, "mentat_tx_point", 3,
    qfTxPoint },
  { "type", QF_CLAUSE, -1, -1, QF_ARG_ANY, VT_KEYWORD, qcfType, 0, 0, 0, 0 },
};

const QfBuiltin *qfLookup(const char *zName) {
  size_t i;
  if (zName == NULL) return NULL;
  for (i = 0; i < sizeof aQfBuiltin / sizeof aQfBuiltin[0]; i++) {
    if (strcmp(zName, aQfBuiltin[i].zName) == 0) return &aQfBuiltin[i];
  }
  return NULL;
}

void qfErrorAt(sqlite3_context *pCtx, sqlite3_value *pWhere, const char *zFmt, ...) {
  va_list ap;
  char *zMsg, *zErr;
  va_start(ap, zFmt);
  zMsg = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  zErr = zMsg ? sqlite3_mprintf("%s: %s", (const char *)sqlite3_value_text(pWhere), zMsg) : NULL;
  if (zErr == NULL) sqlite3_result_error_nomem(pCtx);
  else sqlite3_result_error(pCtx, zErr, -1);
  sqlite3_free(zErr);
  sqlite3_free(zMsg);
}

/* The SQL functions the compiler writes for other parts of a query than a
** built-in's row: the aggregates of :find (query_compile_agg.c). */
static const struct {
  const char *zName;
  int nArg;
  QfSqlFunc xStep;
  void (*xFinal)(sqlite3_context*);
} aQfAggregate[] = {
  /* sum, its long overflow an error saying where */
  { "mentat_sum", 2, qfSumStep, qfSumFinal },
  /* Datomic's median (middle value, or the mean of the two middle ones),
  ** population variance and stddev */
  { "mentat_median", 1, qfNumsStep, qfMedianFinal },
  { "mentat_variance", 1, qfNumsStep, qfVarianceFinal },
  { "mentat_stddev", 1, qfNumsStep, qfStddevFinal },
  /* distinct, (min n), (max n), sample, rand: JSON arrays */
  { "mentat_agg_json", 3, qfValsStep, qfValsFinal },
  { "mentat_agg_json", 4, qfValsStep, qfValsFinal },
};

int qfRegister(sqlite3 *db) {
  const int f = SQLITE_UTF8;
  size_t i;
  int rc = SQLITE_OK;
  for (i = 0; i < sizeof aQfBuiltin / sizeof aQfBuiltin[0] && rc == SQLITE_OK; i++) {
    const QfBuiltin *p = &aQfBuiltin[i];
    size_t j;
    if (p->xFunc == NULL) continue;
    /* Several built-ins share one SQL function: registered once, since a
    ** second registration replaces the first, which SQLite refuses while a
    ** statement runs (a host loading us by SELECT load_extension(...)). */
    for (j = 0; j < i; j++) {
      if (aQfBuiltin[j].xFunc && aQfBuiltin[j].nFuncArg == p->nFuncArg
          && strcmp(aQfBuiltin[j].zFunc, p->zFunc) == 0) break;
    }
    if (j < i) continue;
    rc = sqlite3_create_function(db, p->zFunc, p->nFuncArg, f | SQLITE_DETERMINISTIC, 0, p->xFunc,
                                 0, 0);
  }
  for (i = 0; i < sizeof aQfAggregate / sizeof aQfAggregate[0] && rc == SQLITE_OK; i++) {
    rc = sqlite3_create_function(db, aQfAggregate[i].zName, aQfAggregate[i].nArg, f, 0, 0,
                                 aQfAggregate[i].xStep, aQfAggregate[i].xFinal);
  }
  /* v if a number, else an error (the numeric aggregates); a BLOB equal for
  ** values equal under Clojure's = (count-distinct) */
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_num", 3, f | SQLITE_DETERMINISTIC, 0, qfNum, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_set_key", 2, f | SQLITE_DETERMINISTIC, 0, qfSetKey, 0, 0);
  if (rc == SQLITE_OK) rc = qOneRegister(db);
  if (rc == SQLITE_OK) rc = sqlite3_create_collation_v2(db, "mentat_kw", f, 0, qfCollateKw, 0);
  return rc;
}
