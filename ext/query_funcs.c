/*
** query_funcs.c — SQL helper functions that compiled query plans call on a
** store connection (registered by qRegisterStoreFunctions, the store's
** connection hook).
**
**   mentat_json(v, tag)            a stored value as JSON (subtype J), for tuple
**   mentat_ends_with(s, suffix)    clojure.string/ends-with?
**   mentat_str(v, tag)             a value as Clojure's str prints it
**   mentat_arith(op, where, a ...) Clojure's arithmetic: long overflow and
**        division by zero are errors; / gives a long when whole
**   mentat_case(upper, s)          upper-case/lower-case, Unicode's mapping
**   mentat_subs(where, s, b [, e]) subs, an error out of range
**   mentat_regex(mode, re, s, where) re-find (mode 0) and re-matches (1): the
**        match or NULL; modes 2 and 3 give [whole g1 ...] as JSON, the
**        vector Clojure returns for a pattern with groups; mode 4
**        (QF_RE_SEQ) is re-seq, every match as a JSON array. The dialect is
**        java.util.regex's, through PCRE2 with its match limits (see the
**        regular expressions section). A pattern is compiled once per
**        statement (sqlite3_get_auxdata).
**   mentat_sum(x, where)           sum, its long overflow an error saying where
**   mentat_num(v, tag, where)      v if a number, else an error (aggregates)
**   mentat_tx_point(v, tag, where) v if a tx id (an entity id or a long), else
**        "<where> is a <type>, not a tx id or an #inst" (tx-ids, tx-data;
**        the compiler reads instants itself)
**   mentat_median(x)               aggregates with Datomic's definitions:
**   mentat_variance(x)             median (middle value, or the mean of the two
**   mentat_stddev(x)               middle ones), population variance and stddev
**   mentat_agg_json(mode, v, tag [, n])
**        mode -1: (distinct ?x) — the set of values as a JSON array
**        mode 1/2: (min n ?x) / (max n ?x) — the n smallest / largest of
**                the bag (a value repeats as often as its rows: :with)
**        mode 3: (sample n ?x) — n distinct values chosen at random
**        mode 4: (rand n ?x) — n values drawn with replacement from the
**                bag (Datomic's rand may repeat a value)
**   COLLATE mentat_kw              keyword order (Clojure's compare): texts
**        that both start with ':' compare as keywords, others bytewise
**
** The helpers are internal (SQLITE_INNOCUOUS is not set; the store
** connections are private to the extension, so nothing else sees them).
*/
#include <stdarg.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
#include <ctype.h>
#include <locale.h>
#include <pthread.h>
#include <wctype.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include "query_compile.h"

#define QF_LONG_MAX ((sqlite3_uint64)0x7fffffffffffffffULL)   /* 2^63 - 1 */

static void qfJson(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  sqlite3_str *pOut;
  int n;
  char *z;
  (void)argc;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    sqlite3_result_null(pCtx);
    return;
  }
  pOut = sqlite3_str_new(NULL);
  valueJsonFromStored(pOut, argv[0], sqlite3_value_int(argv[1]), 0);
  n = sqlite3_str_length(pOut);
  z = sqlite3_str_finish(pOut);
  if (z == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  sqlite3_result_text(pCtx, z, n, sqlite3_free);
  sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
}

static void qfEndsWith(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const unsigned char *z = sqlite3_value_text(argv[0]);
  const unsigned char *zS = sqlite3_value_text(argv[1]);
  int n = sqlite3_value_bytes(argv[0]), nS = sqlite3_value_bytes(argv[1]);
  (void)argc;
  if (z == NULL || zS == NULL) { sqlite3_result_null(pCtx); return; }
  sqlite3_result_int(pCtx, nS <= n && memcmp(z + n - nS, zS, nS) == 0);
}

/* Clojure's str of one value: text as is, booleans true/false, instants,
** uuids and bytes as their JSON text without the quotes, nil as "". */
static void qfStr(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int tag = sqlite3_value_type(argv[1]) == SQLITE_NULL ? -1 : sqlite3_value_int(argv[1]);
  (void)argc;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_result_text(pCtx, "", 0, SQLITE_STATIC);
  } else if (tag == TAG_BOOLEAN) {
    sqlite3_result_text(pCtx, sqlite3_value_int(argv[0]) ? "true" : "false", -1, SQLITE_STATIC);
  } else if (tag == TAG_INSTANT || tag == TAG_UUID || tag == TAG_BYTES) {
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    char *z;
    int n;
    valueJsonFromStored(pOut, argv[0], tag, 0);
    n = sqlite3_str_length(pOut);
    z = sqlite3_str_finish(pOut);
    if (z == NULL) { sqlite3_result_error_nomem(pCtx); return; }
    if (n >= 2 && z[0] == '"') sqlite3_result_text(pCtx, z + 1, n - 2, SQLITE_TRANSIENT);
    else sqlite3_result_text(pCtx, z, n, SQLITE_TRANSIENT);
    sqlite3_free(z);
  } else {
    const unsigned char *z = sqlite3_value_text(argv[0]);
    if (z == NULL) { sqlite3_result_error_nomem(pCtx); return; }
    sqlite3_result_text(pCtx, (const char*)z, sqlite3_value_bytes(argv[0]), SQLITE_TRANSIENT);
  }
}

/* Fails the call with "<where>: <message>": where is the place argument the
** compiler passes ("line L col C: fn"), so the message says which clause. */
static void qfErrorAt(sqlite3_context *pCtx, sqlite3_value *pWhere, const char *zFmt, ...) {
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

/* ------------------------------------------------------- arithmetic */

/* Clojure's / over argv[0..n-1] (n >= 1; (/ x) is (/ 1 x)), none NULL:
** longs divide exactly, as Clojure's ratios do, and the result is a long
** when it is whole ((/ 4 2) is 2, (/ 12 2 3) is 2) and else the double
** nearest the ratio ((/ 1 2) is 0.5: there are no ratios here). A double
** argument makes the division a double one. Any zero divisor is an error,
** as Clojure's Numbers.divide(Object, Object) throws; a whole result past
** a long ((/ -2^63 -1)) is an overflow, where Clojure's long division
** wraps it silently. */
static void qfDivide(sqlite3_context *pCtx, sqlite3_value *pWhere, int n, sqlite3_value **argv) {
  int i, bReal = 0, bLong = 0;
  sqlite3_int64 num = 1;           /* the exact value so far: num / den, */
  sqlite3_uint64 den = 1;          /* den > 0, in lowest terms */
  long double ld = 0;              /* or, once bLong, its long double */
  for (i = 0; i < n; i++) {
    if (sqlite3_value_type(argv[i]) == SQLITE_FLOAT) bReal = 1;
  }
  for (i = n == 1 ? 0 : 1; i < n; i++) {
    if (sqlite3_value_double(argv[i]) == 0) {
      qfErrorAt(pCtx, pWhere, "divide by zero");
      return;
    }
  }
  if (bReal) {
    double d = n == 1 ? 1.0 : sqlite3_value_double(argv[0]);
    for (i = n == 1 ? 0 : 1; i < n; i++) d /= sqlite3_value_double(argv[i]);
    sqlite3_result_double(pCtx, d);
    return;
  }
  if (n > 1) num = sqlite3_value_int64(argv[0]);
  for (i = n == 1 ? 0 : 1; i < n; i++) {
    sqlite3_int64 y = sqlite3_value_int64(argv[i]);
    sqlite3_uint64 un, uy, a, b, g, dNew;
    int bNeg, bDenOver, bNumOver;
    if (bLong) {
      ld /= (long double)y;
      continue;
    }
    /* num / (den * y), reduced: num and den share no factor, so dividing
    ** num and y by their gcd leaves the fraction in lowest terms */
    un = num < 0 ? (sqlite3_uint64)0 - (sqlite3_uint64)num : (sqlite3_uint64)num;
    uy = y < 0 ? (sqlite3_uint64)0 - (sqlite3_uint64)y : (sqlite3_uint64)y;
    bNeg = (num < 0) != (y < 0);
    for (a = un, b = uy; b != 0;) {
      sqlite3_uint64 r = a % b;
      a = b;
      b = r;
    }
    g = a;                                    /* uy > 0, so g > 0 */
    un /= g;
    uy /= g;
    bDenOver = __builtin_mul_overflow(den, uy, &dNew) || dNew > QF_LONG_MAX;
    bNumOver = un > QF_LONG_MAX && !(bNeg && un == QF_LONG_MAX + 1);
    if (bNumOver && !bDenOver && dNew == 1) {
      /* whole, but 2^63: not a long */
      qfErrorAt(pCtx, pWhere, "integer overflow");
      return;
    }
    if (bDenOver || bNumOver) {
      /* past a long's range and not whole: the nearest double will do */
      ld = (long double)un / (long double)den / (long double)uy;
      if (bNeg) ld = -ld;
      bLong = 1;
      continue;
    }
    den = dNew;
    num = bNeg ? (sqlite3_int64)((sqlite3_uint64)0 - un) : (sqlite3_int64)un;
  }
  if (bLong) sqlite3_result_double(pCtx, (double)ld);
  else if (den == 1) sqlite3_result_int64(pCtx, num);
  else sqlite3_result_double(pCtx, (double)((long double)num / (long double)den));
}

/* mentat_arith(op, where, a [, b ...]): Clojure's long arithmetic, exact or
** an error ("<where>: integer overflow"; where is "line L col C: fn"),
** where SQLite's operators turn an overflowing integer into a double (and
** quot of -2^63 by -1 into 2^63-1). A double argument gives double
** arithmetic, as Clojure's (quot, rem and mod too: SQLite's % and CAST
** take integer parts); NULL gives NULL. / is qfDivide's. Division by zero
** (quot, rem, mod, / ; 0 or 0.0) is an error, "<where>: divide by zero":
** Datomic calls the function with boxed numbers, and Clojure's
** Numbers.divide/quotient/remainder of Objects throw for any zero divisor. */
static void qfArith(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int op = sqlite3_value_int(argv[0]), i, bReal = 0, bOver = 0;
  sqlite3_int64 x, y;
  if (argc == 2) {                      /* (+) and (*), as Clojure's */
    sqlite3_result_int64(pCtx, op == QF_MUL ? 1 : 0);
    return;
  }
  for (i = 2; i < argc; i++) {
    int t = sqlite3_value_type(argv[i]);
    if (t == SQLITE_NULL) return;
    if (t == SQLITE_FLOAT) bReal = 1;
  }
  if (op == QF_DIV) {
    qfDivide(pCtx, argv[1], argc - 2, argv + 2);
    return;
  }
  if ((op == QF_QUOT || op == QF_REM || op == QF_MOD) && sqlite3_value_double(argv[3]) == 0) {
    qfErrorAt(pCtx, argv[1], "divide by zero");
    return;
  }
  if (bReal && (op == QF_QUOT || op == QF_REM || op == QF_MOD)) {
    /* Clojure's double quot (truncated quotient, a double), rem (the
    ** dividend's sign) and mod (the divisor's) */
    double a = sqlite3_value_double(argv[2]), b = sqlite3_value_double(argv[3]), r;
    if (op == QF_QUOT) {
      r = trunc(a / b);
    } else {
      r = fmod(a, b);
      if (op == QF_MOD && r != 0 && (r < 0) != (b < 0)) r += b;
    }
    sqlite3_result_double(pCtx, r);
    return;
  }
  if (bReal) {
    double d = sqlite3_value_double(argv[2]);
    if (argc == 3 && op == QF_SUB) d = -d;
    for (i = 3; i < argc; i++) {
      double e = sqlite3_value_double(argv[i]);
      d = op == QF_ADD ? d + e : op == QF_SUB ? d - e : d * e;
    }
    if (op == QF_INC) d += 1;
    else if (op == QF_DEC) d -= 1;
    else if (op == QF_ABS) d = fabs(d);
    sqlite3_result_double(pCtx, d);
    return;
  }
  x = sqlite3_value_int64(argv[2]);
  switch (op) {
    case QF_ADD: case QF_SUB: case QF_MUL:
      if (argc == 3 && op == QF_SUB) bOver = __builtin_sub_overflow((sqlite3_int64)0, x, &x);
      for (i = 3; i < argc && !bOver; i++) {
        y = sqlite3_value_int64(argv[i]);
        bOver = op == QF_ADD ? __builtin_add_overflow(x, y, &x)
              : op == QF_SUB ? __builtin_sub_overflow(x, y, &x) : __builtin_mul_overflow(x, y, &x);
      }
      break;
    case QF_INC: bOver = __builtin_add_overflow(x, (sqlite3_int64)1, &x); break;
    case QF_DEC: bOver = __builtin_sub_overflow(x, (sqlite3_int64)1, &x); break;
    case QF_ABS: if (x < 0) bOver = __builtin_sub_overflow((sqlite3_int64)0, x, &x); break;
    case QF_QUOT:
      y = sqlite3_value_int64(argv[3]);
      if (y == -1) bOver = __builtin_sub_overflow((sqlite3_int64)0, x, &x);
      else x /= y;
      break;
    case QF_MOD: case QF_REM:
      /* rem: the dividend's sign (C's %); mod: the divisor's, as Clojure's */
      y = sqlite3_value_int64(argv[3]);
      x = y == -1 ? 0 : x % y;
      if (op == QF_MOD && x != 0 && (x < 0) != (y < 0)) x += y;   /* opposite signs: no overflow */
      break;
    default:
      return;
  }
  if (bOver) {
    qfErrorAt(pCtx, argv[1], "integer overflow");
    return;
  }
  sqlite3_result_int64(pCtx, x);
}

/* ---------------------------------------------------------- strings */

/* The C.UTF-8 locale for towupper_l/towlower_l (the host's own locale is
** usually "C", whose case mapping is ASCII only), made once; NULL when
** the C library has none (then the mapping stays ASCII). */
static locale_t gQfLocale = (locale_t)0;
static pthread_once_t gQfLocaleOnce = PTHREAD_ONCE_INIT;
static void qfLocaleInit(void) {
  gQfLocale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* mentat_case(upper, s): clojure.string/upper-case (1) and lower-case (0)
** with Unicode's one-to-one case mapping (SQLite's upper/lower map ASCII
** only). Java's special cases (ß -> SS, a final sigma) are not made. */
static void qfCase(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int bUpper = sqlite3_value_int(argv[0]), n, i;
  const unsigned char *z = sqlite3_value_text(argv[1]);
  sqlite3_str *pOut;
  char *zOut;
  (void)argc;
  if (z == NULL) return;
  n = sqlite3_value_bytes(argv[1]);
  pthread_once(&gQfLocaleOnce, qfLocaleInit);
  pOut = sqlite3_str_new(NULL);
  for (i = 0; i < n;) {
    int L = ednUtf8Len(z, n, i);
    unsigned c;
    char buf[4];
    if (L == 0) { sqlite3_str_appendchar(pOut, 1, (char)z[i++]); continue; }
    c = (unsigned)ednUtf8Decode(z + i, L);
    i += L;
    if (gQfLocale) c = (unsigned)(bUpper ? towupper_l((wint_t)c, gQfLocale) : towlower_l((wint_t)c, gQfLocale));
    else if (c < 0x80) c = (unsigned)(bUpper ? toupper((int)c) : tolower((int)c));
    sqlite3_str_append(pOut, buf, ednUtf8Encode(c, buf));
  }
  n = sqlite3_str_length(pOut);
  i = sqlite3_str_errcode(pOut);
  zOut = sqlite3_str_finish(pOut);
  if (i != SQLITE_OK) {
    sqlite3_free(zOut);
    sqlite3_result_error_nomem(pCtx);
  } else {
    sqlite3_result_text(pCtx, zOut ? zOut : "", n, zOut ? sqlite3_free : SQLITE_STATIC);
  }
}

/* mentat_subs(where, s, begin [, end]): Clojure's subs, in characters; a
** range outside 0 <= begin <= end <= length is an error, as Clojure throws
** (SQLite's substr clamps it). */
static void qfSubs(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const unsigned char *z = sqlite3_value_text(argv[1]);
  sqlite3_int64 nChar = 0, b, e;
  int n, i, iB = -1, iE = -1;
  if (z == NULL || sqlite3_value_type(argv[2]) == SQLITE_NULL
      || (argc > 3 && sqlite3_value_type(argv[3]) == SQLITE_NULL)) return;
  n = sqlite3_value_bytes(argv[1]);
  b = sqlite3_value_int64(argv[2]);
  e = argc > 3 ? sqlite3_value_int64(argv[3]) : -1;   /* -1: the end, once counted */
  for (i = 0; i < n; i++) {
    if ((z[i] & 0xC0) != 0x80) {
      if (nChar == b) iB = i;
      if (nChar == e) iE = i;
      nChar++;
    }
  }
  if (argc <= 3) e = nChar;
  if (b == nChar) iB = n;
  if (e == nChar) iE = n;
  if (b < 0 || e < b || e > nChar) {
    qfErrorAt(pCtx, argv[0], "begin %lld, end %lld, length %lld is out of range", (long long)b,
              (long long)e, (long long)nChar);
    return;
  }
  sqlite3_result_text(pCtx, (const char *)z + iB, iE - iB, SQLITE_TRANSIENT);
}

/* ------------------------------------------------- regular expressions */

/* java.util.regex through PCRE2 (8-bit, UTF): Perl's syntax, which Java's
** follows (\d \w \s \b, (?i), lazy and possessive quantifiers, lookaround,
** backreferences, named groups, \Q...\E, \p{L}). Without PCRE2_UCP, \d \w
** \s and \b stay ASCII, as Java's defaults; any Unicode line end ends a
** line for . $ and (?m)^, as Java's line terminators do; \uhhhh and
** \x{h...} are Java's escapes (PCRE2_ALT_BSUX and its extra). Matching is
** bounded (match, depth and heap limits), so no pattern can hold the host:
** a limit hit is an error. Memory comes from sqlite3_malloc. */

/* Backtracking steps one match may take: (a+)+$ over 40 a's stops in
** ~0.1 s, while ordinary patterns over megabytes stay far below it. */
#define QF_RE_MATCH_LIMIT 10000000u
#define QF_RE_DEPTH_LIMIT 1000000u
#define QF_RE_HEAP_KIB    65536u         /* 64 MiB of backtracking frames */

typedef struct QfRegex {
  pcre2_code *pCode;
  pcre2_match_context *pMatchCtx;
  pcre2_match_data *pData;
  int nGroup;                            /* capturing groups */
} QfRegex;

static void *qfPcreMalloc(PCRE2_SIZE n, void *pArg) {
  (void)pArg;
  return sqlite3_malloc64(n);
}

static void qfPcreFree(void *p, void *pArg) {
  (void)pArg;
  sqlite3_free(p);
}

static void qfRegexFree(void *p) {
  QfRegex *pRe = (QfRegex*)p;
  if (pRe) {
    pcre2_match_data_free(pRe->pData);
    pcre2_match_context_free(pRe->pMatchCtx);
    pcre2_code_free(pRe->pCode);
    sqlite3_free(pRe);
  }
}

static int qfRegexBad(char **pzErr, const char *zPat, int nPat, const char *zWhy) {
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("invalid regular expression \"%.*s\": %s", nPat, zPat, zWhy);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* Java's POSIX-named classes, US-ASCII as Java's defaults (PCRE2's [:name:]
** are ASCII without PCRE2_UCP). */
static const char *qfRegexPosixName(const char *z, int n) {
  static const struct { const char *zJava, *zPosix; } a[] = {
    { "Lower", "lower" }, { "Upper", "upper" }, { "ASCII", "ascii" }, { "Alpha", "alpha" },
    { "Digit", "digit" }, { "Alnum", "alnum" }, { "Punct", "punct" }, { "Graph", "graph" },
    { "Print", "print" }, { "Blank", "blank" }, { "Cntrl", "cntrl" }, { "XDigit", "xdigit" },
    { "Space", "space" },
  };
  int i;
  for (i = 0; i < (int)(sizeof a / sizeof a[0]); i++) {
    if ((int)strlen(a[i].zJava) == n && memcmp(a[i].zJava, z, (size_t)n) == 0) return a[i].zPosix;
  }
  return NULL;
}

/* Writes Java's pattern z (n bytes) as PCRE2 reads it into *pzOut
** (sqlite3_malloc'd, *pnOut bytes), or fails with the reason. Where the
** two differ: Java's inline flags are i d m s u x U, and PCRE2 reads (?U)
** as "ungreedy" and knows no d or u: a flag group may hold i m s x and '-',
** which mean the same in both, and u (UNICODE_CASE), left out since (?i)
** already folds every letter's case here; any other letter is an error
** rather than a pattern read another way. \p{Alpha} and Java's other POSIX
** names become [[:alpha:]]. A '[' or "&&" inside a class (Java's union and
** intersection; PCRE2 would take their characters literally) is an error,
** as is POSIX's [[:digit:]], which Java reads as the characters :digt. */
static int qfRegexJava(const char *z, int n, char **pzOut, int *pnOut, char **pzErr) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  const char *zWhy = NULL;
  char zBuf[96];
  int i = 0, bClass = 0, rc;
  *pzOut = NULL;
  *pnOut = 0;
  while (i < n && zWhy == NULL) {
    if (z[i] == '\\' && i + 1 < n && z[i + 1] == 'Q') {
      /* \Q...\E: literal up to \E */
      int e = i + 2;
      while (e + 1 < n && !(z[e] == '\\' && z[e + 1] == 'E')) e++;
      e = e + 1 < n ? e + 2 : n;
      sqlite3_str_append(pOut, z + i, e - i);
      i = e;
    } else if (z[i] == '\\' && i + 2 < n && (z[i + 1] == 'p' || z[i + 1] == 'P') && z[i + 2] == '{') {
      const char *zEnd = memchr(z + i + 3, '}', (size_t)(n - i - 3));
      const char *zPosix = zEnd ? qfRegexPosixName(z + i + 3, (int)(zEnd - z - i - 3)) : NULL;
      int bNot = z[i + 1] == 'P';
      if (zPosix == NULL) {
        sqlite3_str_append(pOut, z + i, 2);     /* \p{L} and friends: PCRE2's */
        i += 2;
        continue;
      }
      if (bClass) sqlite3_str_appendf(pOut, "[:%s%s:]", bNot ? "^" : "", zPosix);
      else sqlite3_str_appendf(pOut, "[%s[:%s:]]", bNot ? "^" : "", zPosix);
      i = (int)(zEnd - z) + 1;
    } else if (z[i] == '\\') {
      sqlite3_str_append(pOut, z + i, i + 1 < n ? 2 : 1);
      i += 2;
    } else if (bClass) {
      if (z[i] == ']') bClass = 0;
      else if (z[i] == '[') zWhy = "a [ inside a character class (Java's union, or POSIX [:name:]) is not supported: escape it as \\[, or write \\p{Digit} for [:digit:]";
      else if (z[i] == '&' && i + 1 < n && z[i + 1] == '&') zWhy = "character class intersection (&&) is not supported";
      sqlite3_str_appendchar(pOut, 1, z[i++]);
    } else if (z[i] == '[') {
      /* a class: ']' first (after '^') is a member */
      bClass = 1;
      sqlite3_str_appendchar(pOut, 1, z[i++]);
      if (i < n && z[i] == '^') sqlite3_str_appendchar(pOut, 1, z[i++]);
      if (i < n && z[i] == ']') sqlite3_str_appendchar(pOut, 1, z[i++]);
    } else if (z[i] == '(' && i + 1 < n && z[i + 1] == '?') {
      int e = i + 2, nKept = 0;
      while (e < n && (isalpha((unsigned char)z[e]) || z[e] == '-')) e++;
      if (!(e > i + 2 && e < n && (z[e] == ')' || z[e] == ':'))) {
        sqlite3_str_appendchar(pOut, 1, z[i++]);     /* (?: (?= (?<name> ... */
        continue;
      }
      for (i += 2; i < e && zWhy == NULL; i++) {
        if (z[i] == 'u') continue;
        if (strchr("imsx-", z[i]) == NULL) {
          sqlite3_snprintf(sizeof zBuf, zBuf, "the inline flag %c is not supported (only i, m, s, x and u)", z[i]);
          zWhy = zBuf;
        } else {
          if (nKept++ == 0) sqlite3_str_appendall(pOut, "(?");
          sqlite3_str_appendchar(pOut, 1, z[i]);
        }
      }
      /* (?u) alone leaves nothing; (?u: is a plain group */
      if (nKept > 0) sqlite3_str_appendchar(pOut, 1, z[e]);
      else if (z[e] == ':') sqlite3_str_appendall(pOut, "(?:");
      i = e + 1;
    } else {
      sqlite3_str_appendchar(pOut, 1, z[i++]);
    }
  }
  *pnOut = sqlite3_str_length(pOut);
  rc = sqlite3_str_errcode(pOut);
  *pzOut = sqlite3_str_finish(pOut);
  if (rc == SQLITE_OK && zWhy) rc = qfRegexBad(pzErr, z, n, zWhy);
  if (rc == SQLITE_OK && *pzOut == NULL) {
    /* the empty pattern (sqlite3_str_finish gives NULL for no text) */
    *pzOut = sqlite3_malloc(1);
    if (*pzOut) (*pzOut)[0] = 0;
    else rc = SQLITE_NOMEM;
  }
  if (rc != SQLITE_OK) {
    sqlite3_free(*pzOut);
    *pzOut = NULL;
    if (rc != SQLITE_ERROR) rc = SQLITE_NOMEM;
  }
  return rc;
}

/* Compiles the n bytes at zPat into a new QfRegex (*ppRe) or reports why
** not ("invalid regular expression \"...\": <reason> near index <i>",
** SQLITE_ERROR; SQLITE_NOMEM). */
static int qfRegexCompile(const char *zPat, int nPat, QfRegex **ppRe, char **pzErr) {
  pcre2_general_context *pGen = NULL;
  pcre2_compile_context *pCc = NULL;
  QfRegex *pRe = NULL;
  char *zJava = NULL;
  int rc, iErr = 0, nJava = 0;
  uint32_t nCap = 0;
  PCRE2_SIZE iOff = 0;
  *ppRe = NULL;
  rc = qfRegexJava(zPat, nPat, &zJava, &nJava, pzErr);
  if (rc != SQLITE_OK) goto cleanup;
  rc = SQLITE_NOMEM;
  pGen = pcre2_general_context_create(qfPcreMalloc, qfPcreFree, NULL);
  if (pGen == NULL) goto cleanup;
  pCc = pcre2_compile_context_create(pGen);
  pRe = sqlite3_malloc64(sizeof(QfRegex));
  /* zeroed before any way out: cleanup frees what it holds */
  if (pRe) memset(pRe, 0, sizeof(QfRegex));
  if (pCc == NULL || pRe == NULL) goto cleanup;
  pcre2_set_newline(pCc, PCRE2_NEWLINE_ANY);
  pcre2_set_compile_extra_options(pCc, PCRE2_EXTRA_ALT_BSUX);
  pRe->pCode = pcre2_compile((PCRE2_SPTR)zJava, (PCRE2_SIZE)nJava,
                             PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ALT_BSUX, &iErr, &iOff, pCc);
  if (pRe->pCode == NULL) {
    PCRE2_UCHAR zWhy[160];
    char *zMsg;
    int nChar = 0, i;
    if (iErr == PCRE2_ERROR_HEAP_FAILED) goto cleanup;
    pcre2_get_error_message(iErr, zWhy, sizeof zWhy);
    /* the index in characters of the pattern as written, as Java's */
    for (i = 0; i < (int)iOff && i < nJava; i++) {
      if (((unsigned char)zJava[i] & 0xC0) != 0x80) nChar++;
    }
    zMsg = sqlite3_mprintf("%s near index %d", (const char*)zWhy, nChar);
    if (zMsg == NULL) goto cleanup;
    rc = qfRegexBad(pzErr, zPat, nPat, zMsg);
    sqlite3_free(zMsg);
    goto cleanup;
  }
  pcre2_pattern_info(pRe->pCode, PCRE2_INFO_CAPTURECOUNT, &nCap);
  pRe->nGroup = (int)nCap;
  pRe->pMatchCtx = pcre2_match_context_create(pGen);
  pRe->pData = pcre2_match_data_create_from_pattern(pRe->pCode, pGen);
  if (pRe->pMatchCtx == NULL || pRe->pData == NULL) goto cleanup;
  pcre2_set_match_limit(pRe->pMatchCtx, QF_RE_MATCH_LIMIT);
  pcre2_set_depth_limit(pRe->pMatchCtx, QF_RE_DEPTH_LIMIT);
  pcre2_set_heap_limit(pRe->pMatchCtx, QF_RE_HEAP_KIB);
  *ppRe = pRe;
  pRe = NULL;
  rc = SQLITE_OK;
cleanup:
  qfRegexFree(pRe);
  pcre2_compile_context_free(pCc);
  pcre2_general_context_free(pGen);
  sqlite3_free(zJava);
  return rc;
}

int qfRegexGroups(const char *zPat, int nPat, int *pnGroup, char **pzErr) {
  QfRegex *pRe = NULL;
  int rc = qfRegexCompile(zPat, nPat, &pRe, pzErr);
  *pnGroup = 0;
  if (rc == SQLITE_OK) {
    *pnGroup = pRe->nGroup;
    qfRegexFree(pRe);
  }
  return rc;
}

/* Appends group i of the last match of pRe over z as JSON (null when it
** took no part in the match). */
static void qfRegexGroupJson(sqlite3_str *pOut, const QfRegex *pRe, const char *z, int i) {
  PCRE2_SIZE *aOv = pcre2_get_ovector_pointer(pRe->pData);
  if (aOv[2 * i] == PCRE2_UNSET) sqlite3_str_appendall(pOut, "null");
  else ednJsonString(pOut, z + aOv[2 * i], (int)(aOv[2 * i + 1] - aOv[2 * i]));
}

/* Appends the last match as Clojure gives it: [whole g1 ...] when the
** pattern has groups (bGroups), else the whole match. */
static void qfRegexMatchJson(sqlite3_str *pOut, const QfRegex *pRe, const char *z, int bGroups) {
  int i;
  if (!bGroups) {
    qfRegexGroupJson(pOut, pRe, z, 0);
    return;
  }
  sqlite3_str_appendchar(pOut, 1, '[');
  for (i = 0; i <= pRe->nGroup; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, ',');
    qfRegexGroupJson(pOut, pRe, z, i);
  }
  sqlite3_str_appendchar(pOut, 1, ']');
}

/* One pcre2_match from byte iStart: 1 matched, 0 not, -1 an error already
** set on pCtx (a limit: "<where>: <fn>: regular expression ... is too
** costly to match"). */
static int qfRegexRun(sqlite3_context *pCtx, sqlite3_value *pWhere, QfRegex *pRe, const char *zPat,
                      int nPat, const char *z, int n, int iStart, uint32_t flags) {
  int rc = pcre2_match(pRe->pCode, (PCRE2_SPTR)z, (PCRE2_SIZE)n, (PCRE2_SIZE)iStart, flags, pRe->pData,
                       pRe->pMatchCtx);
  const char *zWhy;
  if (rc >= 0) return 1;
  switch (rc) {
    case PCRE2_ERROR_NOMATCH: return 0;
    case PCRE2_ERROR_NOMEMORY: sqlite3_result_error_nomem(pCtx); return -1;
    case PCRE2_ERROR_MATCHLIMIT: zWhy = "backtracking"; break;
    case PCRE2_ERROR_DEPTHLIMIT: zWhy = "depth"; break;
    case PCRE2_ERROR_HEAPLIMIT: zWhy = "memory"; break;
    default: {
      PCRE2_UCHAR zMsg[120];
      pcre2_get_error_message(rc, zMsg, sizeof zMsg);
      qfErrorAt(pCtx, pWhere, "regular expression \"%.*s\": %s", nPat, zPat, (const char*)zMsg);
      return -1;
    }
  }
  qfErrorAt(pCtx, pWhere, "regular expression \"%.*s\" is too costly to match (it passed PCRE2's %s limit)",
            nPat, zPat, zWhy);
  return -1;
}

/* mentat_regex(mode, pattern, s, where); see the file comment. NULL inputs give
** NULL (no match). */
static void qfRegex(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int iMode = sqlite3_value_int(argv[0]);
  const char *zPat = (const char*)sqlite3_value_text(argv[1]);
  const char *z = (const char*)sqlite3_value_text(argv[2]);
  QfRegex *pRe;
  int bOwn = 0, n, nPat, r;
  (void)argc;
  if (zPat == NULL || z == NULL) return;
  n = sqlite3_value_bytes(argv[2]);
  nPat = sqlite3_value_bytes(argv[1]);
  pRe = sqlite3_get_auxdata(pCtx, 1);
  if (pRe == NULL) {
    char *zErr = NULL;
    int rc = qfRegexCompile(zPat, nPat, &pRe, &zErr);
    if (rc != SQLITE_OK) {
      if (rc == SQLITE_NOMEM) sqlite3_result_error_nomem(pCtx);
      else qfErrorAt(pCtx, argv[3], "%s", zErr);
      sqlite3_free(zErr);
      return;
    }
    /* SQLite keeps it while the pattern argument stays the same (a
    ** constant or bound parameter), else frees it after this call. */
    sqlite3_set_auxdata(pCtx, 1, pRe, qfRegexFree);
    pRe = sqlite3_get_auxdata(pCtx, 1);
    if (pRe == NULL) {
      /* Not kept (out of memory there): compile a private copy. */
      char *zErr2 = NULL;
      if (qfRegexCompile(zPat, nPat, &pRe, &zErr2) != SQLITE_OK) {
        sqlite3_free(zErr2);
        sqlite3_result_error_nomem(pCtx);
        return;
      }
      bOwn = 1;
    }
  }
  if (iMode == QF_RE_SEQ) {
    /* Matcher.find in turn: the next search starts where a match ended,
    ** one character on after an empty match; nil when none matched */
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    int iAt = 0, nFound = 0;
    while (iAt <= n && (r = qfRegexRun(pCtx, argv[3], pRe, zPat, nPat, z, n, iAt, 0)) == 1) {
      PCRE2_SIZE *aOv = pcre2_get_ovector_pointer(pRe->pData);
      sqlite3_str_appendchar(pOut, 1, nFound++ ? ',' : '[');
      qfRegexMatchJson(pOut, pRe, z, pRe->nGroup > 0);
      iAt = (int)aOv[1];
      if (aOv[1] == aOv[0]) {
        if (iAt == n) break;
        iAt += ednUtf8Len((const unsigned char*)z, n, iAt) > 0 ? ednUtf8Len((const unsigned char*)z, n, iAt) : 1;
      }
    }
    if (r < 0) {
      sqlite3_free(sqlite3_str_finish(pOut));
    } else if (nFound == 0) {
      sqlite3_free(sqlite3_str_finish(pOut));
    } else {
      int nJson;
      char *zJson;
      sqlite3_str_appendchar(pOut, 1, ']');
      nJson = sqlite3_str_length(pOut);
      zJson = sqlite3_str_finish(pOut);
      if (zJson == NULL) sqlite3_result_error_nomem(pCtx);
      else {
        sqlite3_result_text(pCtx, zJson, nJson, sqlite3_free);
        sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
      }
    }
    goto done;
  }
  /* re-matches: the whole text (Matcher.matches backtracks until it is) */
  r = qfRegexRun(pCtx, argv[3], pRe, zPat, nPat, z, n, 0, (iMode & 1) ? PCRE2_ANCHORED | PCRE2_ENDANCHORED : 0);
  if (r != 1) goto done;
  if (iMode < 2) {
    PCRE2_SIZE *aOv = pcre2_get_ovector_pointer(pRe->pData);
    sqlite3_result_text(pCtx, z + aOv[0], (int)(aOv[1] - aOv[0]), SQLITE_TRANSIENT);
  } else {
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    char *zJson;
    int nJson;
    qfRegexMatchJson(pOut, pRe, z, 1);
    nJson = sqlite3_str_length(pOut);
    zJson = sqlite3_str_finish(pOut);
    if (zJson == NULL) sqlite3_result_error_nomem(pCtx);
    else {
      sqlite3_result_text(pCtx, zJson, nJson, sqlite3_free);
      sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
    }
  }
done:
  if (bOwn) qfRegexFree(pRe);
}

/* ------------------------------------------------- numeric aggregates */

/* mentat_tx_point(v, tag, where): see the header. tag NULL: the value's
** storage class decides (an integer is a tx id). NULL gives NULL. */
static void qfTxPoint(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int t = sqlite3_value_type(argv[0]);
  const char *zType = NULL;
  char *zErr;
  (void)argc;
  if (t == SQLITE_NULL) return;
  if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    if (t == SQLITE_FLOAT) zType = ":db.type/double";
    else if (t != SQLITE_INTEGER) zType = t == SQLITE_TEXT ? "text" : "blob";
  } else {
    switch (sqlite3_value_int(argv[1])) {
      case TAG_REF: break;
      case TAG_NUMBER: if (t != SQLITE_INTEGER) zType = ":db.type/double"; break;
      case TAG_BOOLEAN: zType = ":db.type/boolean"; break;
      case TAG_INSTANT: zType = ":db.type/instant"; break;
      case TAG_STRING: zType = ":db.type/string"; break;
      case TAG_UUID: zType = ":db.type/uuid"; break;
      case TAG_KEYWORD: zType = ":db.type/keyword"; break;
      case TAG_BYTES: zType = ":db.type/bytes"; break;
      case TAG_JSON: zType = "collection"; break;
      default: zType = "value of unknown type"; break;
    }
  }
  if (zType == NULL) {
    sqlite3_result_value(pCtx, argv[0]);
    return;
  }
  zErr = sqlite3_mprintf("%s is a %s, not a tx id or an #inst",
                         (const char *)sqlite3_value_text(argv[2]), zType);
  if (zErr == NULL) sqlite3_result_error_nomem(pCtx);
  else sqlite3_result_error(pCtx, zErr, -1);
  sqlite3_free(zErr);
}

/* mentat_num(v, tag, where): v when it is a number or an entity id, else
** the error Datomic's numeric aggregates throw ("<where>: a :db.type/string
** is not a number"). For values whose type the compiler does not know
** ([?e ?a ?v], rule results): their tag says it. A NULL tag (type unknown
** there too) goes by the storage class. NULL stays NULL. */
static void qfNum(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int t = sqlite3_value_type(argv[0]);
  const char *zType = NULL;
  (void)argc;
  if (t == SQLITE_NULL) return;
  if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) zType = t == SQLITE_TEXT ? "text" : "blob";
  } else {
    switch (sqlite3_value_int(argv[1])) {
      case TAG_NUMBER: case TAG_REF: break;
      case TAG_BOOLEAN: zType = ":db.type/boolean"; break;
      case TAG_INSTANT: zType = ":db.type/instant"; break;
      case TAG_STRING: zType = ":db.type/string"; break;
      case TAG_UUID: zType = ":db.type/uuid"; break;
      case TAG_KEYWORD: zType = ":db.type/keyword"; break;
      case TAG_BYTES: zType = ":db.type/bytes"; break;
      case TAG_JSON: zType = "collection"; break;
      default: zType = "value of unknown type"; break;
    }
  }
  if (zType) {
    qfErrorAt(pCtx, argv[2], "a %s is not a number", zType);
    return;
  }
  sqlite3_result_value(pCtx, argv[0]);
}

/* mentat_sum(x, where): SQLite's sum (exact over longs, a double once a
** double comes, NULL over no rows), but a long overflow stops at once and
** says where ("line L col C: (sum ?x): integer overflow") instead of a
** bare "integer overflow". */
typedef struct QfSum {
  sqlite3_int64 i;
  double d;
  int bAny, bReal, bOver;
} QfSum;

static void qfSumStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  QfSum *p = sqlite3_aggregate_context(pCtx, sizeof(QfSum));
  int t = sqlite3_value_numeric_type(argv[0]);
  (void)argc;
  if (p == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  if (t == SQLITE_NULL) return;
  p->bAny = 1;
  if (t == SQLITE_INTEGER && !p->bReal) {
    if (__builtin_add_overflow(p->i, sqlite3_value_int64(argv[0]), &p->i)) {
      /* the statement stops here, as Clojure's + throws */
      p->bOver = 1;
      qfErrorAt(pCtx, argv[1], "integer overflow");
    }
    return;
  }
  if (!p->bReal) {
    p->bReal = 1;
    p->d = (double)p->i;
  }
  p->d += sqlite3_value_double(argv[0]);
}

static void qfSumFinal(sqlite3_context *pCtx) {
  QfSum *p = sqlite3_aggregate_context(pCtx, 0);
  if (p == NULL || !p->bAny) { sqlite3_result_null(pCtx); return; }
  if (p->bOver) {
    sqlite3_result_error(pCtx, "integer overflow", -1);   /* the step said where */
  } else if (p->bReal) {
    sqlite3_result_double(pCtx, p->d);
  } else {
    sqlite3_result_int64(pCtx, p->i);
  }
}

typedef struct QfNums {
  double *a;
  sqlite3_int64 n, nAlloc;
  int bAllInt;
  int bOom;
} QfNums;

static void qfNumsStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  QfNums *p = sqlite3_aggregate_context(pCtx, sizeof(QfNums));
  int t = sqlite3_value_numeric_type(argv[0]);
  (void)argc;
  if (p == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  if (p->n == 0 && p->nAlloc == 0) p->bAllInt = 1;
  if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) return;
  if (t != SQLITE_INTEGER) p->bAllInt = 0;
  if (p->n == p->nAlloc) {
    sqlite3_int64 nNew = p->nAlloc ? p->nAlloc * 2 : 16;
    double *aNew = sqlite3_realloc64(p->a, sizeof(double) * nNew);
    if (aNew == NULL) { p->bOom = 1; return; }
    p->a = aNew;
    p->nAlloc = nNew;
  }
  p->a[p->n++] = sqlite3_value_double(argv[0]);
}

static int qfCmpDouble(const void *a, const void *b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void qfMedianFinal(sqlite3_context *pCtx) {
  QfNums *p = sqlite3_aggregate_context(pCtx, 0);
  if (p == NULL || p->n == 0) { if (p) sqlite3_free(p->a); sqlite3_result_null(pCtx); return; }
  if (p->bOom) { sqlite3_free(p->a); sqlite3_result_error_nomem(pCtx); return; }
  qsort(p->a, (size_t)p->n, sizeof(double), qfCmpDouble);
  if (p->n % 2) {
    double m = p->a[p->n / 2];
    if (p->bAllInt) sqlite3_result_int64(pCtx, (sqlite3_int64)m);
    else sqlite3_result_double(pCtx, m);
  } else {
    sqlite3_result_double(pCtx, (p->a[p->n / 2 - 1] + p->a[p->n / 2]) / 2.0);
  }
  sqlite3_free(p->a);
}

static void qfVarianceOf(sqlite3_context *pCtx, int bStddev) {
  QfNums *p = sqlite3_aggregate_context(pCtx, 0);
  double mean = 0, ss = 0;
  sqlite3_int64 i;
  if (p == NULL || p->n == 0) { if (p) sqlite3_free(p->a); sqlite3_result_null(pCtx); return; }
  if (p->bOom) { sqlite3_free(p->a); sqlite3_result_error_nomem(pCtx); return; }
  for (i = 0; i < p->n; i++) mean += p->a[i];
  mean /= (double)p->n;
  for (i = 0; i < p->n; i++) ss += (p->a[i] - mean) * (p->a[i] - mean);
  ss /= (double)p->n;
  sqlite3_result_double(pCtx, bStddev ? sqrt(ss) : ss);
  sqlite3_free(p->a);
}

static void qfVarianceFinal(sqlite3_context *pCtx) { qfVarianceOf(pCtx, 0); }
static void qfStddevFinal(sqlite3_context *pCtx) { qfVarianceOf(pCtx, 1); }

/* -------------------------------------------------- JSON aggregates */

typedef struct QfVal {
  sqlite3_value *pV;
  int tag;
} QfVal;

typedef struct QfVals {
  QfVal *a;
  int n, nAlloc;
  int iMode;
  sqlite3_int64 nWant;
  int bOom;
} QfVals;

static void qfValsStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  QfVals *p = sqlite3_aggregate_context(pCtx, sizeof(QfVals));
  if (p == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  p->iMode = sqlite3_value_int(argv[0]);
  p->nWant = argc > 3 ? sqlite3_value_int64(argv[3]) : -1;
  if (sqlite3_value_type(argv[1]) == SQLITE_NULL || p->bOom) return;
  if (p->n == p->nAlloc) {
    int nNew = p->nAlloc ? p->nAlloc * 2 : 16;
    QfVal *aNew = sqlite3_realloc64(p->a, sizeof(QfVal) * nNew);
    if (aNew == NULL) { p->bOom = 1; return; }
    p->a = aNew;
    p->nAlloc = nNew;
  }
  p->a[p->n].pV = sqlite3_value_dup(argv[1]);
  p->a[p->n].tag = sqlite3_value_int(argv[2]);
  if (p->a[p->n].pV == NULL) { p->bOom = 1; return; }
  p->n++;
}

/* Clojure's compare of two keywords given as their texts (":ns/name",
** ":name"), as Keyword.compareTo -> Symbol.compareTo: a keyword without
** namespace first, then namespace, then name (so :ns/z < :ns-/a, while
** bytewise ":ns/" > ":ns-"). The namespace ends at the first '/' (as
** Symbol.intern splits it). Parts compare bytewise: UTF-8 order is code
** point order (Java's String.compareTo orders UTF-16 units, which differs
** only between supplementary characters and U+E000..U+FFFF). */
static int qfKeywordCmp(const char *x, int nx, const char *y, int ny) {
  const char *sx, *sy;
  int nsx = -1, nsy = -1, c;
  x++; nx--; y++; ny--;                /* past the ':' */
  sx = nx > 1 ? memchr(x, '/', (size_t)nx) : NULL;
  sy = ny > 1 ? memchr(y, '/', (size_t)ny) : NULL;
  if (sx && sx > x) nsx = (int)(sx - x);
  if (sy && sy > y) nsy = (int)(sy - y);
  if ((nsx < 0) != (nsy < 0)) return nsx < 0 ? -1 : 1;
  if (nsx >= 0) {
    c = memcmp(x, y, (size_t)(nsx < nsy ? nsx : nsy));
    if (c == 0) c = nsx - nsy;
    if (c) return c;
    x += nsx + 1; nx -= nsx + 1;
    y += nsy + 1; ny -= nsy + 1;
  }
  c = memcmp(x, y, (size_t)(nx < ny ? nx : ny));
  return c ? c : nx - ny;
}

/* The mentat_kw collation: keyword order for texts that both look like
** keywords, bytewise order otherwise. A column of keywords uses it for
** min, max and :order; so does one of unknown type (its tag is not seen
** here), where two strings that both start with ':' compare as keywords. */
static int qfCollateKw(void *pArg, int nx, const void *x, int ny, const void *y) {
  int c;
  (void)pArg;
  if (nx > 1 && ny > 1 && ((const char*)x)[0] == ':' && ((const char*)y)[0] == ':') {
    return qfKeywordCmp(x, nx, y, ny);
  }
  c = memcmp(x, y, (size_t)(nx < ny ? nx : ny));
  return c ? c : nx - ny;
}

/* SQLite's order across storage classes: numbers, then text, then blobs;
** keywords (by tag) in Clojure's order among themselves. */
static int qfCmpVal(const void *a, const void *b) {
  sqlite3_value *x = ((const QfVal*)a)->pV, *y = ((const QfVal*)b)->pV;
  if (((const QfVal*)a)->tag == TAG_KEYWORD && ((const QfVal*)b)->tag == TAG_KEYWORD
      && sqlite3_value_type(x) == SQLITE_TEXT && sqlite3_value_type(y) == SQLITE_TEXT) {
    const char *zx = (const char*)sqlite3_value_text(x), *zy = (const char*)sqlite3_value_text(y);
    int nx = sqlite3_value_bytes(x), ny = sqlite3_value_bytes(y);
    if (zx && zy && nx > 1 && ny > 1) return qfKeywordCmp(zx, nx, zy, ny);
  }
  int tx = sqlite3_value_type(x), ty = sqlite3_value_type(y);
  int cx = (tx == SQLITE_INTEGER || tx == SQLITE_FLOAT) ? 1 : tx == SQLITE_TEXT ? 2 : 3;
  int cy = (ty == SQLITE_INTEGER || ty == SQLITE_FLOAT) ? 1 : ty == SQLITE_TEXT ? 2 : 3;
  if (cx != cy) return cx - cy;
  if (cx == 1) {
    if (tx == SQLITE_INTEGER && ty == SQLITE_INTEGER) {
      sqlite3_int64 i = sqlite3_value_int64(x), j = sqlite3_value_int64(y);
      return i < j ? -1 : i > j;
    } else {
      double d = sqlite3_value_double(x), e = sqlite3_value_double(y);
      return d < e ? -1 : d > e;
    }
  }
  {
    int n = sqlite3_value_bytes(x), m = sqlite3_value_bytes(y);
    const void *zx = cx == 2 ? (const void*)sqlite3_value_text(x) : sqlite3_value_blob(x);
    const void *zy = cx == 2 ? (const void*)sqlite3_value_text(y) : sqlite3_value_blob(y);
    int c = memcmp(zx ? zx : "", zy ? zy : "", (size_t)(n < m ? n : m));
    return c ? c : n - m;
  }
}

static void qfValsFinal(sqlite3_context *pCtx) {
  QfVals *p = sqlite3_aggregate_context(pCtx, 0);
  sqlite3_str *pOut;
  int i, nOut = 0, n;
  char *z;
  if (p == NULL) {
    sqlite3_result_text(pCtx, "[]", 2, SQLITE_STATIC);
    sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
    return;
  }
  if (p->bOom) {
    sqlite3_result_error_nomem(pCtx);
    goto cleanup;
  }
  if (p->n > 1) qsort(p->a, (size_t)p->n, sizeof(QfVal), qfCmpVal);
  /* Drop duplicates: distinct and sample give sets of values. (min n),
  ** (max n) and rand keep the bag's repeats, as Datomic's do with :with. */
  n = 0;
  for (i = 0; i < p->n; i++) {
    if (p->iMode == 1 || p->iMode == 2 || p->iMode == 4) {
      p->a[n++] = p->a[i];
      continue;
    }
    if (n > 0 && qfCmpVal(&p->a[n - 1], &p->a[i]) == 0 && p->a[n - 1].tag == p->a[i].tag) {
      sqlite3_value_free(p->a[i].pV);
      continue;
    }
    p->a[n++] = p->a[i];
  }
  p->n = n;
  if (p->iMode == 3) {
    /* Fisher-Yates with SQLite's PRNG. */
    for (i = p->n - 1; i > 0; i--) {
      unsigned r;
      QfVal t;
      int j;
      sqlite3_randomness(sizeof r, &r);
      j = (int)(r % (unsigned)(i + 1));
      t = p->a[i];
      p->a[i] = p->a[j];
      p->a[j] = t;
    }
  }
  pOut = sqlite3_str_new(NULL);
  sqlite3_str_appendchar(pOut, 1, '[');
  if (p->iMode == 4) {
    /* n draws with replacement from the set */
    sqlite3_int64 k;
    for (k = 0; p->n > 0 && k < p->nWant; k++) {
      unsigned r;
      sqlite3_randomness(sizeof r, &r);
      if (k) sqlite3_str_appendchar(pOut, 1, ',');
      i = (int)(r % (unsigned)p->n);
      valueJsonFromStored(pOut, p->a[i].pV, p->a[i].tag, 0);
    }
  }
  for (i = 0; p->iMode != 4 && i < p->n; i++) {
    int k = p->iMode == 2 ? p->n - 1 - i : i;
    if (p->nWant >= 0 && p->iMode != -1 && nOut >= p->nWant) break;
    if (nOut++) sqlite3_str_appendchar(pOut, 1, ',');
    valueJsonFromStored(pOut, p->a[k].pV, p->a[k].tag, 0);
  }
  sqlite3_str_appendchar(pOut, 1, ']');
  n = sqlite3_str_length(pOut);
  z = sqlite3_str_finish(pOut);
  if (z == NULL) sqlite3_result_error_nomem(pCtx);
  else {
    sqlite3_result_text(pCtx, z, n, sqlite3_free);
    sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
  }
cleanup:
  for (i = 0; i < p->n; i++) sqlite3_value_free(p->a[i].pV);
  sqlite3_free(p->a);
}

int qRegisterStoreFunctions(sqlite3 *db) {
  int rc = SQLITE_OK;
  const int f = SQLITE_UTF8;
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_json", 2, f | SQLITE_DETERMINISTIC, 0, qfJson, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_ends_with", 2, f | SQLITE_DETERMINISTIC, 0, qfEndsWith, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_str", 2, f | SQLITE_DETERMINISTIC, 0, qfStr, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_regex", 4, f | SQLITE_DETERMINISTIC, 0, qfRegex, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_arith", -1, f | SQLITE_DETERMINISTIC, 0, qfArith, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_case", 2, f | SQLITE_DETERMINISTIC, 0, qfCase, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_subs", -1, f | SQLITE_DETERMINISTIC, 0, qfSubs, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_sum", 2, f, 0, 0, qfSumStep, qfSumFinal);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_num", 3, f | SQLITE_DETERMINISTIC, 0, qfNum, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_tx_point", 3, f | SQLITE_DETERMINISTIC, 0, qfTxPoint, 0, 0);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_median", 1, f, 0, 0, qfNumsStep, qfMedianFinal);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_variance", 1, f, 0, 0, qfNumsStep, qfVarianceFinal);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_stddev", 1, f, 0, 0, qfNumsStep, qfStddevFinal);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_agg_json", 3, f, 0, 0, qfValsStep, qfValsFinal);
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_agg_json", 4, f, 0, 0, qfValsStep, qfValsFinal);
  if (rc == SQLITE_OK) rc = qOneRegister(db);
  if (rc == SQLITE_OK) rc = sqlite3_create_collation_v2(db, "mentat_kw", f, 0, qfCollateKw, 0);
  return rc;
}
