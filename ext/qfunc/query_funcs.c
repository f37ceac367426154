/*
** query_funcs.c — registers the family's SQL functions on a store
** connection (qfRegister, the store's connection hook). Takes a store connection; gives it every function
** below, mentat_one and the mentat_kw and mentat_utf16 collations. The functions follow
** Datomic's documented :where functions (its "Built-in Expression
** Functions and Predicates"), the Clojure functions Datomic lets a query
** call, and its aggregates; the compiler's table of built-ins
** (query_compile_fn.c) names the function each built-in calls.
**
** The run-time functions are internal (SQLITE_INNOCUOUS is not set; the
** store connections are private to the extension, so nothing else sees
** them).
*/
#include "query_funcs.h"

/* Every SQL function of the family, each once: a second registration of
** a name replaces the first, which SQLite refuses while a statement runs
** (a host loading us by SELECT load_extension(...)). */
static const struct {
  const char *zName;
  signed char nArg;              /* -1: any number */
  unsigned char bDeterministic;
  void (*xFunc)(sqlite3_context*, int, sqlite3_value**);   /* scalar, or NULL */
  void (*xStep)(sqlite3_context*, int, sqlite3_value**);   /* aggregate, or NULL */
  void (*xFinal)(sqlite3_context*);
} aQfFunc[] = {
  /* the built-ins of :where clauses that the compiler does not write as SQL */
  { "mentat_starts_with", 2, 1, qfStartsWith, 0, 0 },
  { "mentat_ends_with", 2, 1, qfEndsWith, 0, 0 },
  { "mentat_char_count", 1, 1, qfCharCount, 0, 0 },
  /* arithmetic: longs checked (an overflow, a zero divisor an error at the
  ** clause), a double argument makes it double arithmetic */
  { "mentat_add", -1, 1, qfAdd, 0, 0 },
  { "mentat_sub", -1, 1, qfSub, 0, 0 },
  { "mentat_mul", -1, 1, qfMul, 0, 0 },
  { "mentat_div", -1, 1, qfDiv, 0, 0 },
  { "mentat_quot", 3, 1, qfQuot, 0, 0 },
  { "mentat_rem", 3, 1, qfRem, 0, 0 },
  { "mentat_mod", 3, 1, qfMod, 0, 0 },
  { "mentat_inc", 2, 1, qfInc, 0, 0 },
  { "mentat_dec", 2, 1, qfDec, 0, 0 },
  { "mentat_abs", 2, 1, qfAbs, 0, 0 },
  { "mentat_max", -1, 1, qfMax, 0, 0 },
  { "mentat_min", -1, 1, qfMin, 0, 0 },
  /* strings and collections */
  { "mentat_str", 2, 1, qfStr, 0, 0 },
  { "mentat_subs", -1, 1, qfSubs, 0, 0 },
  { "mentat_json", 2, 1, qfJson, 0, 0 },
  /* tuples a query makes: the store's encoding, and their elements */
  { "mentat_tuple", -1, 1, qfTuple, 0, 0 },
  { "mentat_untuple", 2, 1, qfUntuple, 0, 0 },
  { "mentat_untuple_tag", 2, 1, qfUntupleTag, 0, 0 },
  { "mentat_tuple_count", 1, 1, qfTupleCount, 0, 0 },
  { "mentat_fill", 4, 1, qfFill, 0, 0 },
  { "mentat_upper_case", 1, 1, qfUpperCase, 0, 0 },
  { "mentat_lower_case", 1, 1, qfLowerCase, 0, 0 },
  /* regular expressions, java.util.regex's dialect */
  { "mentat_re_find", 4, 1, qfReFind, 0, 0 },
  { "mentat_re_matches", 4, 1, qfReMatches, 0, 0 },
  { "mentat_re_seq", 4, 1, qfReSeq, 0, 0 },
  { "mentat_re_groups", 2, 1, qfReGroups, 0, 0 },
  { "mentat_re_pattern", 2, 1, qfRePattern, 0, 0 },
  { "mentat_pattern_eq", -1, 1, qfPatternEq, 0, 0 },
  /* tx-ids, tx-data: a tx id, an instant or a tx entity as a tx id */
  { "mentat_tx_point", 3, 1, qfTxPoint, 0, 0 },
  /* compare of values whose types are known only at run time: 1, or the
  ** error Clojure's compare throws across types */
  { "mentat_comparable", 5, 1, qfComparable, 0, 0 },
  /* compare of two strings or keywords: String.compareTo's difference */
  { "mentat_compare_text", 3, 1, qfCompareText, 0, 0 },
  /* compare where a side is a vector or nil: the count first (Clojure's
  ** APersistentVector.compareTo), then the elements */
  { "mentat_compare_coll", 5, 1, qfCompareColl, 0, 0 },
  /* BINARY bounds of a String.compareTo range (the mentat_utf16
  ** collation), so that an index on the strings still gives it */
  { "mentat_utf16_plain", 1, 1, qfUtf16IsPlain, 0, 0 },
  { "mentat_utf16_lo", 1, 1, qfUtf16Lo, 0, 0 },
  { "mentat_utf16_hi", 1, 1, qfUtf16Hi, 0, 0 },
  /* fulltext's search string, checked before MATCH reads it */
  { "mentat_fts_query", 2, 1, qfFtsQuery, 0, 0 },
  /* the aggregates of :find (query_compile_agg.c): sum, its long overflow
  ** an error saying where, and avg, its sum over the count; median
  ** (DataScript's: the middle value as it is, or (/ (+ a b) 2) of the two
  ** middle ones), population variance and stddev; distinct,
  ** (min n), (max n), sample, rand n as JSON arrays */
  { "mentat_sum", 2, 0, 0, qfSumStep, qfSumFinal },
  { "mentat_avg", 2, 0, 0, qfAvgStep, qfAvgFinal },
  { "mentat_median", 2, 0, 0, qfNumsStep, qfMedianFinal },
  { "mentat_variance", 2, 0, 0, qfNumsStep, qfVarianceFinal },
  { "mentat_stddev", 2, 0, 0, qfNumsStep, qfStddevFinal },
  { "mentat_agg_json", 3, 0, 0, qfValsStep, qfValsFinal },
  /* NULL, or an error once a group's values fall in two comparison
  ** classes: min and max (also of n) over values of unknown type */
  { "mentat_one_class", 2, 0, 0, qfOneClassStep, qfOneClassFinal },
  { "mentat_agg_json", 4, 0, 0, qfValsStep, qfValsFinal },
  /* (rand ?x): one value at random; of unknown type packed with its tag,
  ** which mentat_unpack reads back */
  { "mentat_rand_one", 2, 0, 0, qfRandOneStep, qfRandOneFinal },
  { "mentat_rand_one", 3, 0, 0, qfRandOneStep, qfRandOneFinal },
  { "mentat_unpack", 2, 1, qfUnpack, 0, 0 },
  /* v if a number, else an error (the numeric aggregates); a BLOB equal
  ** for values equal under Clojure's = (count-distinct) */
  { "mentat_num", 3, 1, qfNum, 0, 0 },
  /* a built-in's argument of unknown type if it is of the kind the
  ** built-in takes, else the error Clojure's would throw (arguments past
  ** the fourth are ignored: the compiler's order fence) */
  { "mentat_arg", -1, 1, qfArg, 0, 0 },
  { "mentat_set_key", 2, 1, qfSetKey, 0, 0 },
  /* a uuid's bytes in Java's UUID order (signed halves), for <, compare,
  ** min, max and :order */
  { "mentat_uuid_ord", 1, 1, qfUuidOrd, 0, 0 },
  /* a tuple's order key (uuids flipped likewise, keywords in Clojure's
  ** order) followed by the tuple, and the tuple back from one */
  { "mentat_tuple_ord", 1, 1, qfTupleOrd, 0, 0 },
  { "mentat_tuple_unord", 1, 1, qfTupleUnord, 0, 0 },
};

int qfRegister(sqlite3 *db) {
  size_t i;
  int rc = SQLITE_OK;
  for (i = 0; i < sizeof aQfFunc / sizeof aQfFunc[0] && rc == SQLITE_OK; i++) {
    int f = SQLITE_UTF8 | (aQfFunc[i].bDeterministic ? SQLITE_DETERMINISTIC : 0);
    rc = sqlite3_create_function(db, aQfFunc[i].zName, aQfFunc[i].nArg, f, 0, aQfFunc[i].xFunc,
                                 aQfFunc[i].xStep, aQfFunc[i].xFinal);
  }
  if (rc == SQLITE_OK) rc = qfOneRegister(db);
  if (rc == SQLITE_OK) rc = sqlite3_create_collation_v2(db, "mentat_kw", SQLITE_UTF8, 0, qfCollateKw, 0);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_collation_v2(db, "mentat_utf16", SQLITE_UTF8, 0, qfCollateUtf16, 0);
  }
  return rc;
}
