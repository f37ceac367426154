/*
** query_funcs.h — the qfunc stage: the SQL functions compiled query plans
** call on a store connection (mentat_add, mentat_re_find, mentat_sum, ...),
** the mentat_one table and the mentat_kw collation. Takes SQL values (and
** the place argument the compiler writes, "line L col C: fn", for errors);
** gives SQL values, or errors saying which clause. Calls SQLite, PCRE2 and
** the value tags of value.h only. The compiler (ext/query) writes calls of
** these functions by name and checks regular expressions here
** (qfRegexGroups); the store registers them on each of its connections
** (qfRegister). Prefix qf for every file of the family.
*/
#ifndef MENTAT_QUERY_FUNCS_H
#define MENTAT_QUERY_FUNCS_H

#include "value.h"

/* query_funcs.c. Registers on a store connection every SQL function of
** the family, mentat_one and the mentat_kw collation, which compiled plans
** call. Used as the store's connection hook (storeSetConnHook). SQLite
** code. */
int qfRegister(sqlite3 *db);

/* query_funcs_one.c. Registers mentat_one(value [, tag]) on db: the
** one-row table a deep function result is bound through (the compiler's
** qcTermExpr). SQLite code. */
int qfOneRegister(sqlite3 *db);

/* ---- for the compiler: regular expressions ---- */

/* Compiles the nPat bytes at zPat in the dialect of the regular
** expression built-ins (java.util.regex's, through PCRE2) and sets
** *pnGroup to its number of capturing groups. Errors: SQLITE_ERROR with
** "invalid regular expression \"...\": <reason>" in *pzErr; SQLITE_NOMEM. */
int qfRegexGroups(const char *zPat, int nPat, int *pnGroup, char **pzErr);

/* ---- for the compiler: argument kinds ---- */

/* The kind argument of mentat_arg(v, tag, kind, where) (query_funcs_num.c),
** which checks a built-in's argument of unknown type at run time. */
#define QF_ARG_NUM  0   /* a number or an entity id */
#define QF_ARG_INT  1   /* an integer (an entity id is one) */
#define QF_ARG_STR  2   /* a string */
#define QF_ARG_COLL 3   /* a string or a collection (a tuple, JSON) */
#define QF_ARG_RE   4   /* a regular expression pattern (TAG_PATTERN) */
#define QF_ARG_RESTR 5  /* a string or a pattern (re-pattern) */

/* ---- shared by the files of the family ---- */

/* Fails the call with "<where>: <message>": where is the place argument
** the compiler passes ("line L col C: fn"), so the message says which
** clause. */
void qfErrorAt(sqlite3_context *pCtx, sqlite3_value *pWhere, const char *zFmt, ...);
/* Gives the double d, or the error "<where>: the result is NaN ..." for a
** NaN: SQLite turns a NaN result into NULL, which would read as nil (the
** store refuses NaN too, value.c), so every double a function or an
** aggregate makes goes out through here. */
void qfResultDouble(sqlite3_context *pCtx, sqlite3_value *pWhere, double d);

/* The user's name for the type of a stored value: its tag, and for
** TAG_NUMBER its storage class t (long or double). Static text. */
const char *qfTagName(int tag, int t);

/* The first callout number of the translation's checks of caseless back
** references (QF_JAVA_BACKREF_CALLOUT + the group, for groups 1..155; a
** string callout names a group by its name or a higher number). */
#define QF_JAVA_BACKREF_CALLOUT 100
/* query_funcs_java.c: java.util.regex pattern z[0..n) in PCRE2's syntax
** (*pzOut, *pnOut bytes, sqlite3_malloc'd; *paMap, *pnMap: pairs of an
** offset in *pzOut and the offset in z it came from), or the reason it
** cannot be ("invalid regular expression ...", SQLITE_ERROR; SQLITE_NOMEM). */
int qfJavaTranslate(const char *z, int n, char **pzOut, int *pnOut, int **paMap, int *pnMap,
                 char **pzErr);
/* query_funcs_java_fold.c: the class of PCRE2 members zBody (negated when
** bNeg) as Java's CASE_INSENSITIVE without UNICODE_CASE folds it, US-ASCII
** letters only, for PCRE2 to match without caseless matching (*pzOut,
** sqlite3_malloc'd); SQLITE_NOMEM. */
int qfJavaFoldClass(const char *zBody, int bNeg, char **pzOut);
/* Sets *pzErr to "invalid regular expression \"<zPat>\": <zWhy>" and
** returns SQLITE_ERROR (SQLITE_NOMEM when that fails). */
int qfJavaInvalid(char **pzErr, const char *zPat, int nPat, const char *zWhy);

/* The run-time functions, by file; each comment at its definition. */
void qfAdd(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSub(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfMul(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfDiv(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfQuot(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfRem(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfMod(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfInc(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfDec(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfAbs(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfMax(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfMin(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfTxPoint(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfComparable(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfOneClassStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfOneClassFinal(sqlite3_context *pCtx);
void qfNum(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfArg(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSumStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSumFinal(sqlite3_context *pCtx);
void qfAvgStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfAvgFinal(sqlite3_context *pCtx);
void qfNumsStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfMedianFinal(sqlite3_context *pCtx);
void qfVarianceFinal(sqlite3_context *pCtx);
void qfStddevFinal(sqlite3_context *pCtx);

void qfEndsWith(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfStartsWith(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfCharCount(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfStr(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfUpperCase(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfLowerCase(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSubs(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

void qfReFind(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfReMatches(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfReSeq(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfReGroups(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfRePattern(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfPatternEq(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

void qfJson(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSetKey(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
/* Tuples a query makes (query_funcs_tuple.c): mentat_tuple(v1, tag1, ...),
** mentat_untuple(t, k), mentat_untuple_tag(t, k), mentat_tuple_count(t). */
void qfTuple(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfUntuple(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfUntupleTag(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfTupleCount(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
/* mentat_fill(count, n, place, binding): 1, or the error of a collection too
** short for a tuple binding (query_funcs_tuple.c). */
void qfFill(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
/* Sets the result to the tuple of a[0..n) in the store's encoding (a BLOB);
** out of memory an error. */
void qfTupleResult(sqlite3_context *pCtx, const TypedValue *a, int n);
void qfValsStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfValsFinal(sqlite3_context *pCtx);
/* mentat_rand_one(v, k) / (v, tag, k), an aggregate: (rand ?x), one value
** at random, or with the tag a BLOB of both that mentat_unpack(p, 0 | 1)
** reads (query_funcs_coll.c). */
void qfRandOneStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfRandOneFinal(sqlite3_context *pCtx);
void qfUnpack(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
int qfCollateKw(void *pArg, int nx, const void *x, int ny, const void *y);
/* String.compareTo's order of UTF-8 texts (its sign only), the
** mentat_utf16 collation, and the BINARY bounds that keep an index range
** under it: mentat_utf16_lo(x), mentat_utf16_hi(x), and whether x needs
** the collation at all, mentat_utf16_plain(x). */
int qfStr16Cmp(const void *x, int nx, const void *y, int ny);
/* The bytes of z (n bytes) before its first character at U+E000 or above,
** n when none: where UTF-16's order of z may differ from its bytes'. */
int qfUtf16Plain(const unsigned char *z, int n);
int qfCollateUtf16(void *pArg, int nx, const void *x, int ny, const void *y);
void qfUtf16IsPlain(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfUtf16Lo(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfUtf16Hi(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
/* Java's String.compareTo of two UTF-8 texts (UTF-16 code units) and
** Clojure's compare of two keyword texts; mentat_compare_text(x, y, kw). */
int qfJavaStrCmp(const char *x, int nx, const char *y, int ny);
int qfKeywordCmp(const char *x, int nx, const char *y, int ny);
void qfCompareText(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
/* mentat_fts_query(q, where): fulltext's search string, or an error at
** where when Datomic's would throw (query_funcs_fts.c). */
void qfFtsQuery(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfTupleOrd(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfTupleUnord(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
/* Java's UUID.compareTo of two 16-byte uuids (each 64-bit half a signed
** long): -1, 0 or 1 (query_funcs_coll.c). */
int qfUuidCmp(const unsigned char *x, const unsigned char *y);
void qfUuidOrd(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

/* ---- Clojure's printer (query_funcs_clj.c) ---- */

/* Java's Double.toString of d into zOut (at least 32 bytes): the shortest
** digits that read back as d, plain when 10^-3 <= |d| < 10^7 ("100.0",
** "0.001"), else scientific ("1.0E7", "1.5E-4"); Infinity, NaN. */
void qfJavaDouble(double d, char *zOut, size_t nOut);
/* Append pr-str of a value, which is Clojure's str of a collection:
** qfCljTuple of a tuple's encoding (SQLITE_ERROR when z is none, nothing
** appended; SQLITE_NOMEM), qfCljJson of JSON a query made (its strings
** strings, its arrays vectors), qfCljEdn of an EDN literal or input
** (keywords, #inst, #uuid, sets and maps too). pOut keeps its own errors. */
int qfCljTuple(sqlite3_str *pOut, const void *z, int n);
void qfCljJson(sqlite3_str *pOut, const char *z, int n);
void qfCljEdn(sqlite3_str *pOut, const EdnValue *p);
/* JSON text z[0..n): the index past the string at z[i] (its text, escapes
** decoded, appended to pOut unless NULL), past the value at z[i]. */
int qfJsonString(const char *z, int n, int i, sqlite3_str *pOut);
int qfJsonSkip(const char *z, int n, int i);
/* 1 when the text z[0..n) of a JSON string reads as a keyword (":" and
** then characters a keyword may hold), as an input's JSON string does. */
int qfJsonKeyword(const char *z, int n);

/* mentat_compare_coll(x, tagX, y, tagY, where) (query_funcs_vcmp.c):
** Clojure's compare where a side is a vector (a tuple's encoding or a
** query's JSON array) or nil. */
void qfCompareColl(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
/* Its tags for a set, list or map literal, which Clojure's compare does
** not take (no Comparable) though their JSON is an array or an object. */
#define QF_CMP_SET  (-20)
#define QF_CMP_LIST (-21)
#define QF_CMP_MAP  (-22)

#endif /* MENTAT_QUERY_FUNCS_H */
