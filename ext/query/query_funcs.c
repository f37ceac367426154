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
**   mentat_set_key(v, tag)         a BLOB equal exactly for values equal under
**        Clojure's = (count-distinct over values of unknown type)
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
#include "value.h"
#include "query_one.h"
#include "query_funcs.h"

#define QF_LONG_MAX ((sqlite3_uint64)0x7fffffffffffffffULL)   /* 2^63 - 1 */

static void qfJson(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  sqlite3_str *pOut;
  int n, rc;
  char *z;
  (void)argc;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    sqlite3_result_null(pCtx);
    return;
  }
  pOut = sqlite3_str_new(NULL);
  rc = valueJsonFromStored(pOut, argv[0], sqlite3_value_int(argv[1]), 0);
  n = sqlite3_str_length(pOut);
  z = sqlite3_str_finish(pOut);
  if (z == NULL || rc != SQLITE_OK) {
    sqlite3_free(z);
    sqlite3_result_error_nomem(pCtx);
    return;
  }
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
    int n, rc = valueJsonFromStored(pOut, argv[0], tag, 0);
    n = sqlite3_str_length(pOut);
    z = sqlite3_str_finish(pOut);
    if (z == NULL || rc != SQLITE_OK) {
      sqlite3_free(z);
      sqlite3_result_error_nomem(pCtx);
      return;
    }
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

/* java.util.regex through PCRE2 (8-bit, UTF): Java's pattern is first
** translated into PCRE2's syntax (qfRegexJava, below), construct by
** construct. Without PCRE2_UCP, \d \w \s and \b stay ASCII, as Java's
** defaults (\b as Java 19 on). Matching is bounded (match, depth and heap
** limits), so no pattern can hold the host: a limit hit is an error.
** Memory comes from sqlite3_malloc. */

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
  PCRE2_SIZE iLast;                      /* where the last match ended (Java's \G) */
} QfRegex;

/* Java's \G, (?C1) in the translation: the end of the previous match of
** this search (Matcher's oldLast), 0 for the first. */
static int qfRegexCallout(pcre2_callout_block *pBlock, void *pArg) {
  const QfRegex *pRe = (const QfRegex*)pArg;
  return pBlock->current_position == pRe->iLast ? 0 : 1;
}

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

/* Java's pattern as PCRE2 reads it. Every construct of the
** java.util.regex.Pattern syntax is either written out in PCRE2's terms with
** the same meaning or refused with a reason naming it; nothing passes
** through for PCRE2 to read its own way (its \K, \g, (*VERB), (?|, POSIX
** [:name:], \x without braces ...). Escapes for characters become \x{h...};
** . ^ $ \Z and \R are spelled out with Java's line terminators (\n \r \r\n
** \u0085 \u2028 \u2029, or \n alone under (?d)), which no PCRE2 newline
** convention equals; (?x) white space and comments are dropped here, in
** and out of classes, as Java does; of the inline flags only i reaches
** PCRE2 (its scope rules are Java's). */
#define QF_JF_I 0x01    /* CASE_INSENSITIVE */
#define QF_JF_M 0x02    /* MULTILINE */
#define QF_JF_S 0x04    /* DOTALL */
#define QF_JF_D 0x08    /* UNIX_LINES */
#define QF_JF_X 0x10    /* COMMENTS */
#define QF_JNEST 250    /* groups nest at most this deep (PCRE2's default) */

typedef struct QfJava {
  const unsigned char *z;   /* Java's pattern */
  int n, i;                 /* its length in bytes, the cursor */
  sqlite3_str *pOut;        /* PCRE2's pattern */
  const char *zWhy;         /* why it cannot be translated, or NULL */
  char zBuf[200];           /* a zWhy that names the construct */
  int flags;                /* QF_JF_* in force at the cursor */
  int nGroup;               /* capturing groups opened so far */
  int nGroupAll;            /* capturing groups in the pattern, -1 unknown */
  int nNest;                /* groups open at the cursor */
  int aSave[QF_JNEST];      /* the flags each open group restores at ')' */
  int *aMap;                /* pairs (offset in pOut, offset in z) per token */
  int nMap, nMapAlloc;
  int bNoMem;
} QfJava;

static void qfjWhy(QfJava *p, const char *zFmt, ...) {
  va_list ap;
  if (p->zWhy) return;
  va_start(ap, zFmt);
  sqlite3_vsnprintf(sizeof p->zBuf, p->zBuf, zFmt, ap);
  va_end(ap);
  p->zWhy = p->zBuf;
}

/* Notes that the PCRE2 text from here comes from Java's text at p->i, so a
** PCRE2 error's offset can be told as an index into the pattern written. */
static void qfjMark(QfJava *p) {
  if (p->nMap + 2 > p->nMapAlloc) {
    int nNew = p->nMapAlloc ? p->nMapAlloc * 2 : 64;
    int *aNew = sqlite3_realloc64(p->aMap, (sqlite3_uint64)nNew * sizeof(int));
    if (aNew == NULL) { p->bNoMem = 1; return; }
    p->aMap = aNew;
    p->nMapAlloc = nNew;
  }
  p->aMap[p->nMap++] = sqlite3_str_length(p->pOut);
  p->aMap[p->nMap++] = p->i;
}

/* The code point at byte i (*pLen bytes; an invalid byte stands alone, and
** PCRE2 refuses it later). */
static int qfjChar(const QfJava *p, int i, int *pLen) {
  int L = ednUtf8Len(p->z, p->n, i);
  if (L <= 0) { *pLen = 1; return p->z[i]; }
  *pLen = L;
  return ednUtf8Decode(p->z + i, L);
}

static int qfjHex(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int qfjIsLineEnd(const QfJava *p, int c) {
  if (p->flags & QF_JF_D) return c == '\n';
  return c == '\n' || c == '\r' || c == 0x85 || c == 0x2028 || c == 0x2029;
}

/* Java's line terminators as the body of a class */
static const char *qfjLineEnds(const QfJava *p) {
  return (p->flags & QF_JF_D) ? "\\n" : "\\n\\r\\x{85}\\x{2028}\\x{2029}";
}

/* (?x): Java skips ASCII white space and # comments (to a line terminator)
** between tokens, inside classes too. */
static void qfjSkipSpace(QfJava *p) {
  if (!(p->flags & QF_JF_X)) return;
  while (p->i < p->n) {
    int c = p->z[p->i], L;
    if (c == ' ' || (c >= '\t' && c <= '\r')) {
      p->i++;
    } else if (c == '#') {
      while (p->i < p->n && !qfjIsLineEnd(p, qfjChar(p, p->i, &L))) p->i += L;
    } else {
      break;
    }
  }
}

/* One code point as a PCRE2 literal. */
static void qfjCodePoint(QfJava *p, int cp) {
  sqlite3_str_appendf(p->pOut, "\\x{%X}", (unsigned)cp);
}

/* Byte c of a \Q...\E quote as a PCRE2 literal (multibyte sequences pass
** as they are: PCRE2 gives them no meaning). */
static void qfjQuoted(QfJava *p, int c) {
  if (c >= 0x80 || (c < 0x80 && isalnum(c))) sqlite3_str_appendchar(p->pOut, 1, (char)c);
  else if (c > 0x20 && c < 0x7F) sqlite3_str_appendf(p->pOut, "\\%c", c);
  else qfjCodePoint(p, c);
}

/* Java's $ (and \Z, which is $ without MULTILINE): the end, or before a
** line terminator that ends the text (any line terminator under
** MULTILINE), never between \r and \n. */
static void qfjDollar(QfJava *p, int bMulti) {
  if (p->flags & QF_JF_D) {
    sqlite3_str_appendall(p->pOut, bMulti ? "(?:(?=\\n|\\z))" : "(?:(?=\\n?\\z))");
  } else if (bMulti) {
    sqlite3_str_appendf(p->pOut, "(?:(?=[%s]|\\z)(?!(?<=\\r)\\n))", qfjLineEnds(p));
  } else {
    sqlite3_str_appendf(p->pOut, "(?:(?=(?:\\r\\n|[%s])?\\z)(?!(?<=\\r)\\n))", qfjLineEnds(p));
  }
}

/* A Java character property (java.util.regex.CharPredicates) as the body
** of a PCRE2 class; zSetI is the set under CASE_INSENSITIVE (Java 16 on:
** a case property then matches every cased letter), NULL when the same. */
typedef struct QfJProp { const char *zName, *zSet, *zSetI; } QfJProp;

#define QF_CASED "\\p{Lowercase}\\p{Uppercase}\\p{Lt}"

/* Names Java looks up case-sensitively: categories, POSIX (US-ASCII: PCRE2's
** [:name:] without UCP) and java.lang.Character's methods. */
static const QfJProp aQfJProp[] = {
  { "Cn", "\\p{Cn}", 0 }, { "Lu", "\\p{Lu}", "\\p{Lu}\\p{Ll}\\p{Lt}" },
  { "Ll", "\\p{Ll}", "\\p{Lu}\\p{Ll}\\p{Lt}" }, { "Lt", "\\p{Lt}", "\\p{Lu}\\p{Ll}\\p{Lt}" },
  { "Lm", "\\p{Lm}", 0 }, { "Lo", "\\p{Lo}", 0 }, { "Mn", "\\p{Mn}", 0 }, { "Me", "\\p{Me}", 0 },
  { "Mc", "\\p{Mc}", 0 }, { "Nd", "\\p{Nd}", 0 }, { "Nl", "\\p{Nl}", 0 }, { "No", "\\p{No}", 0 },
  { "Zs", "\\p{Zs}", 0 }, { "Zl", "\\p{Zl}", 0 }, { "Zp", "\\p{Zp}", 0 }, { "Cc", "\\p{Cc}", 0 },
  { "Cf", "\\p{Cf}", 0 }, { "Co", "\\p{Co}", 0 }, { "Cs", "\\p{Cs}", 0 }, { "Pd", "\\p{Pd}", 0 },
  { "Ps", "\\p{Ps}", 0 }, { "Pe", "\\p{Pe}", 0 }, { "Pc", "\\p{Pc}", 0 }, { "Po", "\\p{Po}", 0 },
  { "Sm", "\\p{Sm}", 0 }, { "Sc", "\\p{Sc}", 0 }, { "Sk", "\\p{Sk}", 0 }, { "So", "\\p{So}", 0 },
  { "Pi", "\\p{Pi}", 0 }, { "Pf", "\\p{Pf}", 0 }, { "L", "\\p{L}", 0 }, { "M", "\\p{M}", 0 },
  { "N", "\\p{N}", 0 }, { "Z", "\\p{Z}", 0 }, { "C", "\\p{C}", 0 }, { "P", "\\p{P}", 0 },
  { "S", "\\p{S}", 0 }, { "LC", "\\p{Lu}\\p{Ll}\\p{Lt}", 0 }, { "LD", "\\p{L}\\p{Nd}", 0 },
  { "L1", "\\x{0}-\\x{FF}", 0 }, { "all", "\\x{0}-\\x{10FFFF}", 0 },
  { "ASCII", "[:ascii:]", 0 }, { "Alnum", "[:alnum:]", 0 }, { "Alpha", "[:alpha:]", 0 },
  { "Blank", "[:blank:]", 0 }, { "Cntrl", "[:cntrl:]", 0 }, { "Digit", "[:digit:]", 0 },
  { "Graph", "[:graph:]", 0 }, { "Lower", "[:lower:]", "[:alpha:]" }, { "Print", "[:print:]", 0 },
  { "Punct", "[:punct:]", 0 }, { "Space", "[:space:]", 0 }, { "Upper", "[:upper:]", "[:alpha:]" },
  { "XDigit", "[:xdigit:]", 0 },
  { "javaLowerCase", "\\p{Lowercase}", QF_CASED }, { "javaUpperCase", "\\p{Uppercase}", QF_CASED },
  { "javaTitleCase", "\\p{Lt}", QF_CASED }, { "javaAlphabetic", "\\p{Alphabetic}", 0 },
  { "javaIdeographic", "\\p{Ideographic}", 0 }, { "javaDigit", "\\p{Nd}", 0 },
  { "javaDefined", "\\P{Cn}", 0 }, { "javaLetter", "\\p{L}", 0 },
  { "javaLetterOrDigit", "\\p{L}\\p{Nd}", 0 }, { "javaSpaceChar", "\\p{Z}", 0 },
  /* isWhitespace: Zs Zl Zp but the no-break spaces, and \t-\r \x1C-\x1F */
  { "javaWhitespace", "\\t-\\r\\x{1C}-\\x{20}\\x{1680}\\x{2000}-\\x{2006}\\x{2008}-\\x{200A}"
                      "\\x{2028}\\x{2029}\\x{205F}\\x{3000}", 0 },
  { "javaISOControl", "\\x{0}-\\x{1F}\\x{7F}-\\x{9F}", 0 },
  { "javaIdentifierIgnorable", "\\x{0}-\\x{8}\\x{E}-\\x{1B}\\x{7F}-\\x{9F}\\p{Cf}", 0 },
  { "javaJavaIdentifierStart", "\\p{L}\\p{Nl}\\p{Sc}\\p{Pc}", 0 },
  { "javaJavaIdentifierPart", "\\p{L}\\p{Nl}\\p{Sc}\\p{Pc}\\p{Nd}\\p{Mc}\\p{Mn}"
                              "\\x{0}-\\x{8}\\x{E}-\\x{1B}\\x{7F}-\\x{9F}\\p{Cf}", 0 },
  { "javaMirrored", "\\p{Bidi_M}", 0 },
};

/* Java's binary properties after Is, any case (UnicodeProp). */
static const QfJProp aQfJBinary[] = {
  { "ALPHABETIC", "\\p{Alphabetic}", 0 }, { "ASSIGNED", "\\P{Cn}", 0 },
  { "CONTROL", "\\p{Cc}", 0 }, { "HEXDIGIT", "\\p{Nd}A-Fa-f\\x{FF21}-\\x{FF26}\\x{FF41}-\\x{FF46}", 0 },
  { "HEX_DIGIT", "\\p{Nd}A-Fa-f\\x{FF21}-\\x{FF26}\\x{FF41}-\\x{FF46}", 0 },
  { "IDEOGRAPHIC", "\\p{Ideographic}", 0 }, { "JOINCONTROL", "\\x{200C}\\x{200D}", 0 },
  { "JOIN_CONTROL", "\\x{200C}\\x{200D}", 0 }, { "LETTER", "\\p{L}", 0 },
  { "LOWERCASE", "\\p{Lowercase}", QF_CASED }, { "UPPERCASE", "\\p{Uppercase}", QF_CASED },
  { "TITLECASE", "\\p{Lt}", QF_CASED },
  { "NONCHARACTERCODEPOINT", "\\p{Noncharacter_Code_Point}", 0 },
  { "NONCHARACTER_CODE_POINT", "\\p{Noncharacter_Code_Point}", 0 },
  { "PUNCTUATION", "\\p{P}", 0 }, { "WHITESPACE", "\\t-\\r\\x{85}\\p{Z}", 0 },
  { "WHITE_SPACE", "\\t-\\r\\x{85}\\p{Z}", 0 },
  { "WORD", "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}", 0 },
  { "EMOJI", "\\p{Emoji}", 0 }, { "EMOJI_PRESENTATION", "\\p{Emoji_Presentation}", 0 },
  { "EMOJI_MODIFIER", "\\p{Emoji_Modifier}", 0 },
  { "EMOJI_MODIFIER_BASE", "\\p{Emoji_Modifier_Base}", 0 },
  { "EMOJI_COMPONENT", "\\p{Emoji_Component}", 0 },
  { "EXTENDED_PICTOGRAPHIC", "\\p{Extended_Pictographic}", 0 },
};

/* The POSIX names after Is, any case: Java's Unicode versions
** (CharPredicates.getPosixPredicate; bare \p{Alpha} ... are US-ASCII).
** GRAPH is "not Z*, Cc, Cs or Cn", written as the categories left; PRINT is
** GRAPH or BLANK without Cc, which leaves Zs. */
static const QfJProp aQfJPosixU[] = {
  { "ALPHA", "\\p{Alphabetic}", 0 }, { "DIGIT", "\\p{Nd}", 0 },
  { "ALNUM", "\\p{Alphabetic}\\p{Nd}", 0 }, { "PUNCT", "\\p{P}", 0 },
  { "SPACE", "\\t-\\r\\x{85}\\p{Z}", 0 },
  { "XDIGIT", "\\p{Nd}A-Fa-f\\x{FF21}-\\x{FF26}\\x{FF41}-\\x{FF46}", 0 },
  { "LOWER", "\\p{Lowercase}", QF_CASED }, { "UPPER", "\\p{Uppercase}", QF_CASED },
  { "CNTRL", "\\p{Cc}", 0 }, { "BLANK", "\\t\\p{Zs}", 0 },
  { "GRAPH", "\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}\\p{Cf}\\p{Co}", 0 },
  { "PRINT", "\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}\\p{Cf}\\p{Co}\\p{Zs}", 0 },
};

static const QfJProp *qfjFind(const QfJProp *a, int nA, const char *z, int n, int bNoCase) {
  int i;
  for (i = 0; i < nA; i++) {
    if ((int)strlen(a[i].zName) != n) continue;
    if (bNoCase ? sqlite3_strnicmp(a[i].zName, z, n) == 0 : memcmp(a[i].zName, z, (size_t)n) == 0) {
      return &a[i];
    }
  }
  return NULL;
}

#define QF_NPROP ((int)(sizeof aQfJProp / sizeof aQfJProp[0]))
#define QF_NBINARY ((int)(sizeof aQfJBinary / sizeof aQfJBinary[0]))
#define QF_NPOSIXU ((int)(sizeof aQfJPosixU / sizeof aQfJPosixU[0]))

/* \p{name} or \P{name} (bNot), Java's name resolution: name=value (sc,
** script, gc, general_category; blk and block are refused), In<block>
** (refused: PCRE2 has no blocks), Is<binary property, Unicode POSIX,
** category, ASCII-only or java name, or script>, else a category, POSIX
** or java name. */
static void qfjProperty(QfJava *p, int bNot, int bClass, const char *z, int n) {
  const QfJProp *pProp = NULL;
  const char *zEq = memchr(z, '=', (size_t)n);
  char zScript[80];
  const char *zSet = NULL;
  int j;
  zScript[0] = 0;
  if (zEq) {
    int nKey = (int)(zEq - z), nVal = n - nKey - 1;
    const char *zVal = zEq + 1;
    if ((nKey == 2 && sqlite3_strnicmp(z, "sc", 2) == 0) || (nKey == 6 && sqlite3_strnicmp(z, "script", 6) == 0)) {
      if (nVal > 0 && nVal < 60) sqlite3_snprintf(sizeof zScript, zScript, "\\p{sc:%.*s}", nVal, zVal);
    } else if ((nKey == 2 && sqlite3_strnicmp(z, "gc", 2) == 0)
               || (nKey == 16 && sqlite3_strnicmp(z, "general_category", 16) == 0)) {
      pProp = qfjFind(aQfJProp, QF_NPROP, zVal, nVal, 0);
    } else if ((nKey == 3 && sqlite3_strnicmp(z, "blk", 3) == 0) || (nKey == 5 && sqlite3_strnicmp(z, "block", 5) == 0)) {
      qfjWhy(p, "Unicode blocks (\\%c{%.*s}) are not supported: PCRE2 has no block property", bNot ? 'P' : 'p', n, z);
      return;
    }
  } else if (n > 2 && memcmp(z, "In", 2) == 0) {
    qfjWhy(p, "Unicode blocks (\\%c{%.*s}) are not supported: PCRE2 has no block property", bNot ? 'P' : 'p', n, z);
    return;
  } else if (n > 2 && memcmp(z, "Is", 2) == 0) {
    pProp = qfjFind(aQfJBinary, QF_NBINARY, z + 2, n - 2, 1);
    if (pProp == NULL) pProp = qfjFind(aQfJPosixU, QF_NPOSIXU, z + 2, n - 2, 1);
    if (pProp == NULL) pProp = qfjFind(aQfJProp, QF_NPROP, z + 2, n - 2, 0);
    if (pProp == NULL && n - 2 < 60) sqlite3_snprintf(sizeof zScript, zScript, "\\p{sc:%.*s}", n - 2, z + 2);
  } else {
    pProp = qfjFind(aQfJProp, QF_NPROP, z, n, 0);
  }
  if (pProp) {
    zSet = (p->flags & QF_JF_I) && pProp->zSetI ? pProp->zSetI : pProp->zSet;
  } else if (zScript[0]) {
    /* a script (Java: Character.UnicodeScript, the Script property, not
    ** Script_Extensions: PCRE2's sc:), its name letters, digits and _ */
    for (j = 6; zScript[j] != '}'; j++) {
      if (!isalnum((unsigned char)zScript[j]) && zScript[j] != '_') break;
    }
    if (zScript[j] == '}') zSet = zScript;
  }
  if (zSet == NULL) {
    qfjWhy(p, "unknown or unsupported character property \\%c{%.*s}", bNot ? 'P' : 'p', n, z);
    return;
  }
  if (!bClass) {
    sqlite3_str_appendf(p->pOut, "[%s%s]", bNot ? "^" : "", zSet);
  } else if (!bNot) {
    sqlite3_str_appendall(p->pOut, zSet);
  } else if ((zSet[0] == '\\' && strchr(zSet, '}') == zSet + strlen(zSet) - 1)) {
    /* one \p{..} item: its complement is \P{..} and the reverse */
    sqlite3_str_appendf(p->pOut, "\\%c%s", zSet[1] == 'p' ? 'P' : 'p', zSet + 2);
  } else if (zSet[0] == '[' && zSet[1] == ':' && strchr(zSet + 2, ':') == zSet + strlen(zSet) - 2) {
    sqlite3_str_appendf(p->pOut, "[:^%s", zSet + 2);
  } else {
    qfjWhy(p, "\\P{%.*s} inside a character class is not supported: write it outside, as (?:\\P{%.*s}|[...])",
           n, z, n, z);
  }
}

/* The escape at p->i (a backslash); bClass inside a character class. */
static void qfjEscape(QfJava *p, int bClass) {
  const unsigned char *z = p->z;
  int n = p->n, i = p->i + 1, c, cp = -1, L;
  if (i >= n) {
    qfjWhy(p, "a \\ at the end escapes nothing");
    return;
  }
  c = z[i++];
  if (bClass && strchr("123456789bBAzZGRXk", c)) {
    qfjWhy(p, "\\%c is not allowed inside a character class", c);
    return;
  }
  switch (c) {
    case 'Q': {
      /* \Q...\E: literal up to \E or the end */
      while (i < n && !(z[i] == '\\' && i + 1 < n && z[i + 1] == 'E')) qfjQuoted(p, z[i++]);
      if (i < n) i += 2;
      break;
    }
    case '0': {
      /* \0n, \0nn, \0mnn (m at most 3) */
      int d1, v;
      if (i >= n || z[i] < '0' || z[i] > '7') {
        qfjWhy(p, "\\0 must be followed by an octal digit (\\0n, \\0nn or \\0mnn)");
        return;
      }
      d1 = z[i++] - '0';
      v = d1;
      if (i < n && z[i] >= '0' && z[i] <= '7') {
        v = v * 8 + (z[i++] - '0');
        if (d1 <= 3 && i < n && z[i] >= '0' && z[i] <= '7') v = v * 8 + (z[i++] - '0');
      }
      cp = v;
      break;
    }
    case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9': {
      /* a backreference: more digits while the number stays within the
      ** groups opened so far (Java), never octal (PCRE2's reading) */
      int v = c - '0';
      while (i < n && z[i] >= '0' && z[i] <= '9' && v * 10 + (z[i] - '0') <= p->nGroup) {
        v = v * 10 + (z[i++] - '0');
      }
      if (p->nGroupAll >= 0 && v > p->nGroupAll) {
        /* a group the pattern does not have: Java compiles it (Matcher
        ** keeps at least 10 group slots) and it never matches */
        sqlite3_str_appendall(p->pOut, "(?:(?!))");
      } else {
        sqlite3_str_appendf(p->pOut, "\\g{%d}", v);
      }
      break;
    }
    case 'x': {
      if (i < n && z[i] == '{') {
        int j = i + 1, v = 0;
        while (j < n && qfjHex(z[j]) >= 0 && v <= 0x10FFFF) v = v * 16 + qfjHex(z[j++]);
        if (j == i + 1 || j >= n || z[j] != '}' || v > 0x10FFFF) {
          qfjWhy(p, "\\x{...} must hold a code point in hex, at most 10FFFF");
          return;
        }
        cp = v;
        i = j + 1;
      } else if (i + 1 < n && qfjHex(z[i]) >= 0 && qfjHex(z[i + 1]) >= 0) {
        cp = qfjHex(z[i]) * 16 + qfjHex(z[i + 1]);
        i += 2;
      } else {
        qfjWhy(p, "\\x must be followed by two hex digits or {h...h}");
        return;
      }
      break;
    }
    case 'u': {
      int v = i + 4 <= n ? ednHex4(z + i) : -1;
      if (v < 0) {
        qfjWhy(p, "\\u must be followed by four hex digits");
        return;
      }
      i += 4;
      if (v >= 0xD800 && v <= 0xDBFF && i + 6 <= n && z[i] == '\\' && z[i + 1] == 'u') {
        /* a surrogate pair written as two escapes is one code point */
        int lo = ednHex4(z + i + 2);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
      }
      if (v >= 0xD800 && v <= 0xDFFF) {
        qfjWhy(p, "\\u%04X is half of a UTF-16 surrogate pair, which no UTF-8 text holds", (unsigned)v);
        return;
      }
      cp = v;
      break;
    }
    case 'c':
      if (i >= n) {
        qfjWhy(p, "\\c must be followed by a character");
        return;
      }
      cp = qfjChar(p, i, &L) ^ 64;     /* Java: the character xor 64, any case */
      i += L;
      break;
    case 't': cp = '\t'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 'f': cp = '\f'; break;
    case 'a': cp = 7; break;
    case 'e': cp = 27; break;
    case 'd': case 'D': case 's': case 'S': case 'w': case 'W':
    case 'h': case 'H': case 'v': case 'V': case 'X':
      /* the same sets in PCRE2 without UCP */
      sqlite3_str_appendf(p->pOut, "\\%c", c);
      break;
    case 'A': case 'z': case 'B':
      /* the same assertions in PCRE2 without UCP; in a group, which PCRE2
      ** lets a quantifier follow as Java does every zero-width atom */
      sqlite3_str_appendf(p->pOut, "(?:\\%c)", c);
      break;
    case 'b':
      if (i < n && z[i] == '{') {
        qfjWhy(p, "\\b{...} (a grapheme cluster boundary) is not supported");
        return;
      }
      sqlite3_str_appendall(p->pOut, "(?:\\b)");
      break;
    case 'Z':
      qfjDollar(p, 0);
      break;
    case 'G':
      /* the end of the previous match: a callout checks it (PCRE2's \G is
      ** the start of the search, one character on after an empty match) */
      sqlite3_str_appendall(p->pOut, "(?:(?C1))");
      break;
    case 'R':
      sqlite3_str_appendall(p->pOut, "(?:\\r\\n|[\\n\\x{B}\\f\\r\\x{85}\\x{2028}\\x{2029}])");
      break;
    case 'k': {
      int j = i + 1;
      if (i < n && z[i] == '<' && j < n && z[j] < 0x80 && isalpha(z[j])) {
        while (j < n && z[j] < 0x80 && isalnum(z[j])) j++;
      }
      if (j >= n || z[j] != '>' || j == i + 1) {
        qfjWhy(p, "\\k must be followed by <name>");
        return;
      }
      sqlite3_str_appendf(p->pOut, "\\k<%.*s>", j - i - 1, z + i + 1);
      i = j + 1;
      break;
    }
    case 'p': case 'P': {
      if (i < n && z[i] == '{') {
        const unsigned char *zEnd = memchr(z + i, '}', (size_t)(n - i));
        if (zEnd == NULL) {
          qfjWhy(p, "\\%c{ has no closing }", c);
          return;
        }
        qfjProperty(p, c == 'P', bClass, (const char*)z + i + 1, (int)(zEnd - z - i - 1));
        i = (int)(zEnd - z) + 1;
      } else if (i < n && z[i] < 0x80 && isalpha(z[i])) {
        qfjProperty(p, c == 'P', bClass, (const char*)z + i, 1);    /* \pL */
        i++;
      } else {
        qfjWhy(p, "\\%c must be followed by a property name", c);
        return;
      }
      break;
    }
    default:
      if (c < 0x80 && isalpha(c)) {
        /* Java reserves every other escaped letter (an error there) */
        qfjWhy(p, "\\%c is not an escape of Java's regular expressions", c);
        return;
      }
      if (c < 0x80) {
        /* an escaped non-letter is that character */
        cp = c;
      } else {
        i--;
        cp = qfjChar(p, i, &L);
        i += L;
      }
      break;
  }
  if (cp >= 0) qfjCodePoint(p, cp);
  p->i = i;
}

/* A character class at p->i ('['), written to p->pOut. A plain class stays
** a PCRE2 class; Java's union ([a-d[m-p]]: a nested class adds its
** members) and intersection ([a-z&&[^aeiou]]: && binds loosest) become
** one-character alternations and look-aheads: (?:(?=B)A) is A and B, as
** each side matches exactly one character. POSIX's [[:digit:]] is Java's
** union of the characters :digt. A negated class with a union or && is
** refused (Java 8 and 9 read it differently). */
#define QF_JCLASS_NEST 32
static void qfjClass(QfJava *p, int iDepth) {
  sqlite3_str *pSave = p->pOut;
  sqlite3_str *pFirst = NULL;          /* the first operand of && */
  sqlite3_str *pAhead = sqlite3_str_new(NULL);     /* (?=operand) of the others */
  sqlite3_str *pSimple = NULL;         /* this operand's plain members */
  sqlite3_str *pNest = NULL;           /* |nested class ... of this operand */
  int bNeg = 0, nOperand = 0, nNest = 0, bAnyNest = 0, bEnd = 0;
  if (iDepth >= QF_JCLASS_NEST) {
    qfjWhy(p, "character classes nest more than %d deep", QF_JCLASS_NEST);
    goto done;
  }
  p->i++;
  if (p->i < p->n && p->z[p->i] == '^') {
    bNeg = 1;
    p->i++;
  }
  qfjSkipSpace(p);
  while (p->zWhy == NULL && !p->bNoMem && !bEnd) {
    int c, L, bClose;
    if (pSimple == NULL) {
      pSimple = sqlite3_str_new(NULL);
      pNest = sqlite3_str_new(NULL);
      nNest = 0;
      if (nOperand == 0 && p->i < p->n && p->z[p->i] == ']') {
        /* ']' first is a member */
        sqlite3_str_appendall(pSimple, "\\]");
        p->i++;
      }
    }
    qfjSkipSpace(p);
    if (p->i >= p->n) {
      qfjWhy(p, "missing terminating ] for character class");
      break;
    }
    c = p->z[p->i];
    bClose = c == ']';
    if (bClose || (c == '&' && p->i + 1 < p->n && p->z[p->i + 1] == '&')) {
      /* the operand ends */
      sqlite3_str *pOp;
      char *zS, *zN;
      int nS = sqlite3_str_length(pSimple), nN = sqlite3_str_length(pNest);
      p->i += bClose ? 1 : 2;
      bEnd = bClose;
      if (nS == 0 && nNest == 0) {
        qfjWhy(p, "a character class or an operand of && is empty");
        break;
      }
      zS = sqlite3_str_finish(pSimple);
      zN = sqlite3_str_finish(pNest);
      pSimple = pNest = NULL;
      pOp = nOperand == 0 ? (pFirst = sqlite3_str_new(NULL)) : pAhead;
      if ((nS && zS == NULL) || (nN && zN == NULL)) p->bNoMem = 1;
      if (nOperand > 0) sqlite3_str_appendall(pOp, "(?=");
      if (nNest == 0) sqlite3_str_appendf(pOp, "[%s%s]", bNeg ? "^" : "", zS);
      else if (nS == 0 && nNest == 1) sqlite3_str_appendall(pOp, zN + 1);
      else if (nS == 0) sqlite3_str_appendf(pOp, "(?:%s)", zN + 1);
      else sqlite3_str_appendf(pOp, "(?:[%s]%s)", zS, zN);
      if (nOperand > 0) sqlite3_str_appendall(pOp, ")");
      sqlite3_free(zS);
      sqlite3_free(zN);
      nOperand++;
    } else if (c == '[') {
      p->pOut = pNest;
      sqlite3_str_appendchar(pNest, 1, '|');
      qfjClass(p, iDepth + 1);
      p->pOut = pSave;
      nNest++;
      bAnyNest = 1;
    } else if (c == '\\') {
      p->pOut = pSimple;
      qfjEscape(p, 1);
      p->pOut = pSave;
    } else if (c == ':') {
      /* never PCRE2's [:name:] */
      sqlite3_str_appendall(pSimple, "\\:");
      p->i++;
    } else {
      qfjChar(p, p->i, &L);
      sqlite3_str_append(pSimple, (const char*)p->z + p->i, L);
      p->i += L;
    }
  }
  if (p->zWhy == NULL && !p->bNoMem && bNeg && (nOperand > 1 || bAnyNest)) {
    qfjWhy(p, "a negated class with a nested class or && ([^...[...]], [^...&&...]) is not supported");
  }
  if (p->zWhy == NULL && !p->bNoMem) {
    char *zF, *zA;
    int nF = sqlite3_str_length(pFirst), nA = sqlite3_str_length(pAhead);
    zF = sqlite3_str_finish(pFirst);
    zA = sqlite3_str_finish(pAhead);
    pFirst = pAhead = NULL;
    if ((nF && zF == NULL) || (nA && zA == NULL)) p->bNoMem = 1;
    else if (nOperand == 1) sqlite3_str_appendall(p->pOut, zF);
    else sqlite3_str_appendf(p->pOut, "(?:%s%s)", zA, zF);
    sqlite3_free(zF);
    sqlite3_free(zA);
  }
done:
  p->pOut = pSave;
  if (pSimple && sqlite3_str_errcode(pSimple)) p->bNoMem = 1;
  if (sqlite3_str_errcode(pSave)) p->bNoMem = 1;
  sqlite3_free(sqlite3_str_finish(pSimple));
  sqlite3_free(sqlite3_str_finish(pNest));
  sqlite3_free(sqlite3_str_finish(pFirst));
  sqlite3_free(sqlite3_str_finish(pAhead));
}

/* A group at p->i ('('): capturing, named, (?:, lookaround, atomic, or
** inline flags (Java's i d m s u x; U and any other letter refused). */
static void qfjGroup(QfJava *p) {
  const unsigned char *z = p->z;
  int n = p->n, i;
  if (p->nNest >= QF_JNEST) {
    qfjWhy(p, "groups nest more than %d deep", QF_JNEST);
    return;
  }
  p->i++;
  qfjSkipSpace(p);
  i = p->i;
  if (i < n && z[i] == '*') {
    qfjWhy(p, "a * must follow something to repeat (PCRE2 would read (* as a verb)");
    return;
  }
  if (i >= n || z[i] != '?') {
    p->aSave[p->nNest++] = p->flags;
    p->nGroup++;
    sqlite3_str_appendchar(p->pOut, 1, '(');
    return;
  }
  i++;
  if (i < n && (z[i] == ':' || z[i] == '=' || z[i] == '!' || z[i] == '>')) {
    p->aSave[p->nNest++] = p->flags;
    sqlite3_str_appendf(p->pOut, "(?%c", z[i]);
    p->i = i + 1;
  } else if (i + 1 < n && z[i] == '<' && (z[i + 1] == '=' || z[i + 1] == '!')) {
    p->aSave[p->nNest++] = p->flags;
    sqlite3_str_appendf(p->pOut, "(?<%c", z[i + 1]);
    p->i = i + 2;
  } else if (i < n && z[i] == '<') {
    /* (?<name>X): a letter, then letters and digits */
    int j = i + 1;
    if (j < n && z[j] < 0x80 && isalpha(z[j])) {
      while (j < n && z[j] < 0x80 && isalnum(z[j])) j++;
    }
    if (j == i + 1 || j >= n || z[j] != '>') {
      qfjWhy(p, "a group name must be a letter then letters or digits, in (?<name>X)");
      return;
    }
    p->aSave[p->nNest++] = p->flags;
    p->nGroup++;
    sqlite3_str_appendf(p->pOut, "(?<%.*s>", j - i - 1, z + i + 1);
    p->i = j + 1;
  } else {
    int on = 0, off = 0, bNeg = 0, j;
    for (j = i; j < n && z[j] != ')' && z[j] != ':'; j++) {
      int f = 0;
      switch (z[j]) {
        case 'i': f = QF_JF_I; break;
        case 'm': f = QF_JF_M; break;
        case 's': f = QF_JF_S; break;
        case 'd': f = QF_JF_D; break;
        case 'x': f = QF_JF_X; break;
        case 'u': break;    /* UNICODE_CASE: (?i) already folds every letter */
        case '-':
          if (!bNeg) { bNeg = 1; break; }
          /* fall through */
        default:
          if (z[j] == 'U') {
            qfjWhy(p, "the inline flag U (UNICODE_CHARACTER_CLASS) is not supported (only i, d, m, s, u and x)");
          } else if (j == i) {
            qfjWhy(p, "unknown group construct (?%c", z[j]);
          } else {
            qfjWhy(p, "unknown inline flag %c (Java's are i d m s u x U)", z[j]);
          }
          return;
      }
      if (bNeg) off |= f;
      else on |= f;
    }
    if (j >= n) {
      qfjWhy(p, "unclosed group");
      return;
    }
    if (z[j] == ':') {
      p->aSave[p->nNest++] = p->flags;
      sqlite3_str_appendf(p->pOut, "(?%s%s:", (on & QF_JF_I) ? "i" : "", (off & QF_JF_I) ? "-i" : "");
    } else if ((on | off) & QF_JF_I) {
      sqlite3_str_appendf(p->pOut, "(?%s%s)", (on & QF_JF_I) ? "i" : "", (off & QF_JF_I) ? "-i" : "");
    }
    p->flags = (p->flags | on) & ~off;
    p->i = j + 1;
  }
}

/* Translates the whole pattern (see QfJava). */
static void qfjRun(QfJava *p) {
  while (p->zWhy == NULL && !p->bNoMem) {
    int c, L;
    qfjSkipSpace(p);
    qfjMark(p);
    if (p->i >= p->n) break;
    c = p->z[p->i];
    switch (c) {
      case '\\': qfjEscape(p, 0); break;
      case '[': qfjClass(p, 0); break;
      case '(': qfjGroup(p); break;
      case ')':
        /* an unmatched one is PCRE2's error */
        if (p->nNest > 0) p->flags = p->aSave[--p->nNest];
        sqlite3_str_appendchar(p->pOut, 1, ')');
        p->i++;
        break;
      case '.':
        if (p->flags & QF_JF_S) sqlite3_str_appendall(p->pOut, "(?s:.)");
        else sqlite3_str_appendf(p->pOut, "[^%s]", qfjLineEnds(p));
        p->i++;
        break;
      case '^':
        /* MULTILINE: at the start or after a line terminator (not inside
        ** \r\n), never at the end of the text (Java's Caret) */
        if (!(p->flags & QF_JF_M)) sqlite3_str_appendall(p->pOut, "(?:\\A)");
        else if (p->flags & QF_JF_D) sqlite3_str_appendall(p->pOut, "(?:(?<![^\\n])(?!\\z))");
        else sqlite3_str_appendf(p->pOut, "(?:(?<![^%s])(?!(?<=\\r)\\n)(?!\\z))", qfjLineEnds(p));
        p->i++;
        break;
      case '$':
        qfjDollar(p, (p->flags & QF_JF_M) != 0);
        p->i++;
        break;
      case '{': {
        /* only a repetition {n}, {n,} or {n,m} (Java: illegal repetition) */
        int j = p->i + 1, a = j;
        while (j < p->n && p->z[j] >= '0' && p->z[j] <= '9') j++;
        if (j > a && j < p->n && p->z[j] == ',') {
          j++;
          while (j < p->n && p->z[j] >= '0' && p->z[j] <= '9') j++;
        }
        if (j == a || j >= p->n || p->z[j] != '}') {
          qfjWhy(p, "a { must begin a repetition {n}, {n,} or {n,m}: write \\{ for the character");
          break;
        }
        sqlite3_str_append(p->pOut, (const char*)p->z + p->i, j + 1 - p->i);
        p->i = j + 1;
        break;
      }
      default:
        qfjChar(p, p->i, &L);
        sqlite3_str_append(p->pOut, (const char*)p->z + p->i, L);
        p->i += L;
        break;
    }
  }
}

/* Writes Java's pattern z (n bytes) as PCRE2 reads it into *pzOut
** (sqlite3_malloc'd, *pnOut bytes), with *paMap (sqlite3_malloc'd, *pnMap
** ints: pairs of an offset in *pzOut and the offset in z it came from), or
** fails with the reason ("invalid regular expression ...", SQLITE_ERROR;
** SQLITE_NOMEM). */
static int qfRegexJava(const char *z, int n, char **pzOut, int *pnOut, int **paMap, int *pnMap,
                       char **pzErr) {
  QfJava j;
  int rc, nGroupAll;
  /* a first pass counts the groups, which a back reference to a later or
  ** missing group needs */
  memset(&j, 0, sizeof j);
  j.z = (const unsigned char*)z;
  j.n = n;
  j.nGroupAll = -1;
  j.pOut = sqlite3_str_new(NULL);
  qfjRun(&j);
  nGroupAll = j.nGroup;
  sqlite3_free(sqlite3_str_finish(j.pOut));
  sqlite3_free(j.aMap);
  memset(&j, 0, sizeof j);
  j.z = (const unsigned char*)z;
  j.n = n;
  j.nGroupAll = nGroupAll;
  j.pOut = sqlite3_str_new(NULL);
  *pzOut = NULL;
  *pnOut = 0;
  qfjRun(&j);
  *pnOut = sqlite3_str_length(j.pOut);
  rc = sqlite3_str_errcode(j.pOut);
  *pzOut = sqlite3_str_finish(j.pOut);
  if (j.bNoMem) rc = SQLITE_NOMEM;
  if (rc == SQLITE_OK && j.zWhy) rc = qfRegexBad(pzErr, z, n, j.zWhy);
  if (rc == SQLITE_OK && *pzOut == NULL) {
    /* the empty pattern (sqlite3_str_finish gives NULL for no text) */
    *pzOut = sqlite3_malloc(1);
    if (*pzOut) (*pzOut)[0] = 0;
    else rc = SQLITE_NOMEM;
  }
  if (rc != SQLITE_OK) {
    sqlite3_free(*pzOut);
    *pzOut = NULL;
    sqlite3_free(j.aMap);
    j.aMap = NULL;
    j.nMap = 0;
    if (rc != SQLITE_ERROR) rc = SQLITE_NOMEM;
  }
  *paMap = j.aMap;
  *pnMap = j.nMap;
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
  int *aMap = NULL;
  int rc, iErr = 0, nJava = 0, nMap = 0;
  uint32_t nCap = 0;
  PCRE2_SIZE iOff = 0;
  *ppRe = NULL;
  rc = qfRegexJava(zPat, nPat, &zJava, &nJava, &aMap, &nMap, pzErr);
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
  pRe->pCode = pcre2_compile((PCRE2_SPTR)zJava, (PCRE2_SIZE)nJava, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                             &iErr, &iOff, pCc);
  if (pRe->pCode == NULL) {
    PCRE2_UCHAR zWhy[160];
    char *zMsg;
    int nChar = 0, i, iAt = 0;
    if (iErr == PCRE2_ERROR_HEAP_FAILED) goto cleanup;
    pcre2_get_error_message(iErr, zWhy, sizeof zWhy);
    /* the index in characters of the pattern as written, as Java's: the
    ** token that PCRE2's offset falls in */
    for (i = 0; i + 1 < nMap && aMap[i] <= (int)iOff; i += 2) {
      /* within a token: as far into it as PCRE2 read, at most its end */
      int nIn = i + 3 < nMap ? aMap[i + 3] - aMap[i + 1] : nPat - aMap[i + 1];
      int nInto = (int)iOff - aMap[i];
      iAt = aMap[i + 1] + (nInto < nIn ? nInto : nIn);
    }
    for (i = 0; i < iAt && i < nPat; i++) {
      if (((unsigned char)zPat[i] & 0xC0) != 0x80) nChar++;
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
  pcre2_set_callout(pRe->pMatchCtx, qfRegexCallout, pRe);
  *ppRe = pRe;
  pRe = NULL;
  rc = SQLITE_OK;
cleanup:
  qfRegexFree(pRe);
  pcre2_compile_context_free(pCc);
  pcre2_general_context_free(pGen);
  sqlite3_free(zJava);
  sqlite3_free(aMap);
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
                      int nPat, const char *z, int n, int iStart, int iLast, uint32_t flags) {
  const char *zWhy;
  int rc;
  pRe->iLast = (PCRE2_SIZE)iLast;
  rc = pcre2_match(pRe->pCode, (PCRE2_SPTR)z, (PCRE2_SIZE)n, (PCRE2_SIZE)iStart, flags, pRe->pData,
                   pRe->pMatchCtx);
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
    int iAt = 0, iLast = 0, nFound = 0;
    while (iAt <= n && (r = qfRegexRun(pCtx, argv[3], pRe, zPat, nPat, z, n, iAt, iLast, 0)) == 1) {
      PCRE2_SIZE *aOv = pcre2_get_ovector_pointer(pRe->pData);
      sqlite3_str_appendchar(pOut, 1, nFound++ ? ',' : '[');
      qfRegexMatchJson(pOut, pRe, z, pRe->nGroup > 0);
      iAt = iLast = (int)aOv[1];
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
  r = qfRegexRun(pCtx, argv[3], pRe, zPat, nPat, z, n, 0, 0, (iMode & 1) ? PCRE2_ANCHORED | PCRE2_ENDANCHORED : 0);
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

/* The user's name for the type of a stored value: its tag, and for
** TAG_NUMBER its storage class t (long or double). Static text. */
static const char *qfTagName(int tag, int t) {
  switch (tag) {
    case TAG_REF: return ":db.type/ref";
    case TAG_NUMBER: return t == SQLITE_INTEGER ? ":db.type/long" : ":db.type/double";
    case TAG_BOOLEAN: return ":db.type/boolean";
    case TAG_INSTANT: return ":db.type/instant";
    case TAG_STRING: return ":db.type/string";
    case TAG_UUID: return ":db.type/uuid";
    case TAG_KEYWORD: return ":db.type/keyword";
    case TAG_BYTES: return ":db.type/bytes";
    case TAG_JSON: return "collection";
  }
  return "value of unknown type";
}

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
    int tag = sqlite3_value_int(argv[1]);
    if (tag != TAG_REF && (tag != TAG_NUMBER || t != SQLITE_INTEGER)) zType = qfTagName(tag, t);
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

/* mentat_set_key(v, tag): a BLOB equal for two values exactly when they
** are equal under Clojure's = (count-distinct over values of unknown type):
** the tag, a ref's read as a long's (a ref value is its entity id), the
** storage class (1 is not 1.0), then the value's bytes (-0.0 as 0.0, which
** Clojure's = makes equal). NULL gives NULL. */
static void qfSetKey(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  unsigned char aKey[10];
  int t = sqlite3_value_type(argv[0]), tag, i;
  (void)argc;
  if (t == SQLITE_NULL) return;
  tag = sqlite3_value_type(argv[1]) == SQLITE_NULL ? 255 : sqlite3_value_int(argv[1]);
  if (tag == TAG_REF) tag = TAG_NUMBER;
  aKey[0] = (unsigned char)tag;
  aKey[1] = (unsigned char)t;
  if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
    sqlite3_uint64 u;
    if (t == SQLITE_INTEGER) {
      u = (sqlite3_uint64)sqlite3_value_int64(argv[0]);
    } else {
      double d = sqlite3_value_double(argv[0]);
      if (d == 0.0) d = 0.0;
      memcpy(&u, &d, sizeof u);
    }
    for (i = 0; i < 8; i++) aKey[2 + i] = (unsigned char)(u >> (56 - 8 * i));
    sqlite3_result_blob(pCtx, aKey, 10, SQLITE_TRANSIENT);
  } else {
    const unsigned char *z = t == SQLITE_TEXT ? sqlite3_value_text(argv[0])
                                              : sqlite3_value_blob(argv[0]);
    int n = sqlite3_value_bytes(argv[0]);
    unsigned char *pOut;
    if (z == NULL && n > 0) { sqlite3_result_error_nomem(pCtx); return; }
    pOut = sqlite3_malloc(n + 2);
    if (pOut == NULL) { sqlite3_result_error_nomem(pCtx); return; }
    pOut[0] = aKey[0];
    pOut[1] = aKey[1];
    if (n > 0) memcpy(pOut + 2, z, (size_t)n);
    sqlite3_result_blob(pCtx, pOut, n + 2, sqlite3_free);
  }
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
    int tag = sqlite3_value_int(argv[1]);
    if (tag != TAG_NUMBER && tag != TAG_REF) zType = qfTagName(tag, t);
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
/* Ties of qfCmpVal: values that SQLite stores alike but Clojure's = tells
** apart by type (true and 1, ":x/y" and :x/y); a ref and a long of one
** number are one value. */
static int qfSetTagCmp(const QfVal *a, const QfVal *b) {
  int ta = a->tag == TAG_REF ? TAG_NUMBER : a->tag, tb = b->tag == TAG_REF ? TAG_NUMBER : b->tag;
  return ta - tb;
}

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
      if (i != j) return i < j ? -1 : 1;
    } else {
      double d = sqlite3_value_double(x), e = sqlite3_value_double(y);
      if (d != e) return d < e ? -1 : 1;
      /* equal numbers of two kinds: 1 and 1.0 are two values (Clojure's =) */
      if (tx != ty) return tx - ty;
    }
    return qfSetTagCmp((const QfVal*)a, (const QfVal*)b);
  }
  {
    int n = sqlite3_value_bytes(x), m = sqlite3_value_bytes(y);
    const void *zx = cx == 2 ? (const void*)sqlite3_value_text(x) : sqlite3_value_blob(x);
    const void *zy = cx == 2 ? (const void*)sqlite3_value_text(y) : sqlite3_value_blob(y);
    int c = memcmp(zx ? zx : "", zy ? zy : "", (size_t)(n < m ? n : m));
    if (c == 0) c = n - m;
    return c ? c : qfSetTagCmp((const QfVal*)a, (const QfVal*)b);
  }
}

static void qfValsFinal(sqlite3_context *pCtx) {
  QfVals *p = sqlite3_aggregate_context(pCtx, 0);
  sqlite3_str *pOut;
  int i, nOut = 0, n, bNomem = 0;
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
    if (n > 0 && qfCmpVal(&p->a[n - 1], &p->a[i]) == 0) {
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
      if (valueJsonFromStored(pOut, p->a[i].pV, p->a[i].tag, 0) != SQLITE_OK) bNomem = 1;
    }
  }
  for (i = 0; p->iMode != 4 && i < p->n; i++) {
    int k = p->iMode == 2 ? p->n - 1 - i : i;
    if (p->nWant >= 0 && p->iMode != -1 && nOut >= p->nWant) break;
    if (nOut++) sqlite3_str_appendchar(pOut, 1, ',');
    if (valueJsonFromStored(pOut, p->a[k].pV, p->a[k].tag, 0) != SQLITE_OK) bNomem = 1;
  }
  sqlite3_str_appendchar(pOut, 1, ']');
  n = sqlite3_str_length(pOut);
  z = sqlite3_str_finish(pOut);
  if (bNomem) {
    sqlite3_free(z);
    z = NULL;
  }
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
  if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "mentat_set_key", 2, f | SQLITE_DETERMINISTIC, 0, qfSetKey, 0, 0);
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
