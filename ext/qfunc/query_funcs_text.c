/*
** query_funcs_text.c — strings at run time: mentat_starts_with and
** mentat_ends_with (clojure.string/starts-with? and ends-with?),
** mentat_char_count (count of a string), mentat_str (a value as Clojure's str prints
** it), mentat_upper_case and mentat_lower_case (Unicode's case mapping)
** and mentat_subs (subs, an error out of range). Takes SQL values and
** value tags; gives text. Calls SQLite and the C library's wide-character
** case mapping.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <locale.h>
#include <pthread.h>
#include <wctype.h>
#include "query_funcs.h"

/* starts-with? (bEnd 0) and ends-with? (bEnd 1) over every byte of both
** texts: SQLite's length() and substr() of TEXT stop at a NUL, so "a\0b"
** did not start with "a\0". */
static void qfAffix(sqlite3_context *pCtx, sqlite3_value **argv, int bEnd) {
  const unsigned char *z = sqlite3_value_text(argv[0]);
  const unsigned char *zS = sqlite3_value_text(argv[1]);
  int n = sqlite3_value_bytes(argv[0]), nS = sqlite3_value_bytes(argv[1]);
  if (z == NULL || zS == NULL) { sqlite3_result_null(pCtx); return; }
  sqlite3_result_int(pCtx, nS <= n && memcmp(bEnd ? z + n - nS : z, zS, nS) == 0);
}

void qfEndsWith(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  qfAffix(pCtx, argv, 1);
}

void qfStartsWith(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  qfAffix(pCtx, argv, 0);
}

/* count of a string: its characters (code points, as subs cuts them) over
** all its bytes; SQLite's length() of TEXT stops at the first NUL, which is
** one character like any other. UTF-8 continuation bytes are not counted. */
void qfCharCount(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const unsigned char *z = sqlite3_value_text(argv[0]);
  int n = sqlite3_value_bytes(argv[0]), i;
  sqlite3_int64 nChar = 0;
  (void)argc;
  if (z == NULL) { sqlite3_result_null(pCtx); return; }
  for (i = 0; i < n; i++) nChar += (z[i] & 0xC0) != 0x80;
  sqlite3_result_int64(pCtx, nChar);
}

/* Clojure's str of an instant, a java.util.Date: Date.toString, "EEE MMM
** dd HH:mm:ss zzz yyyy" in the JVM's zone, here UTC ("Sat Feb 29 13:04:05
** UTC 2020"; the fraction of the second is not printed). us: microseconds
** since the epoch; the civil date as the store reads #inst (proleptic
** Gregorian; days_from_civil's inverse, H. Hinnant). */
static void qfInstantText(sqlite3_int64 us, char *zOut, size_t nOut) {
  static const char *const azDay[] = { "Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed" };
  static const char *const azMon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
  sqlite3_int64 sec = us / 1000000 - (us % 1000000 < 0);
  sqlite3_int64 days = sec / 86400 - (sec % 86400 < 0);
  sqlite3_int64 sod = sec - days * 86400;
  sqlite3_int64 z = days + 719468;
  sqlite3_int64 era = (z >= 0 ? z : z - 146096) / 146097;
  sqlite3_int64 doe = z - era * 146097;
  sqlite3_int64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  sqlite3_int64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  sqlite3_int64 mp = (5 * doy + 2) / 153;
  sqlite3_int64 d = doy - (153 * mp + 2) / 5 + 1;
  sqlite3_int64 m = mp < 10 ? mp + 3 : mp - 9;
  sqlite3_int64 y = yoe + era * 400 + (m <= 2);
  int wd = (int)(((days % 7) + 7) % 7);     /* 1970-01-01 was a Thursday */
  snprintf(zOut, nOut, "%s %s %02d %02d:%02d:%02d UTC %lld", azDay[wd], azMon[m - 1], (int)d,
           (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), (long long)y);
}

/* Clojure's str of one value: text as is, booleans true/false, a double as
** Java's Double.toString, an instant as Date.toString (qfInstantText),
** uuids and bytes as their JSON text without the quotes, a collection (a
** tuple's encoding, or JSON a query made: tag TAG_JSON) as pr-str prints
** it, which is Clojure's str of a vector ("[1 \"a\" :k 1.0E-5]",
** query_funcs_clj.c), nil as "". */
void qfStr(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int tag = sqlite3_value_type(argv[1]) == SQLITE_NULL ? -99 : sqlite3_value_int(argv[1]);
  int t = sqlite3_value_type(argv[0]);
  (void)argc;
  if (t == SQLITE_NULL) {
    sqlite3_result_text(pCtx, "", 0, SQLITE_STATIC);
  } else if (tag == TAG_BOOLEAN) {
    sqlite3_result_text(pCtx, sqlite3_value_int(argv[0]) ? "true" : "false", -1, SQLITE_STATIC);
  } else if (tag == TAG_INSTANT && t == SQLITE_INTEGER) {
    char z[64];
    qfInstantText(sqlite3_value_int64(argv[0]), z, sizeof z);
    sqlite3_result_text(pCtx, z, -1, SQLITE_TRANSIENT);
  } else if (tag == TAG_INSTANT || tag == TAG_UUID || tag == TAG_BYTES
             || (tag == TAG_TUPLE && t == SQLITE_BLOB) || (tag == TAG_JSON && t == SQLITE_TEXT)) {
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    char *z;
    int n, rc = SQLITE_OK;
    if (tag == TAG_TUPLE) {
      rc = qfCljTuple(pOut, sqlite3_value_blob(argv[0]), sqlite3_value_bytes(argv[0]));
    } else if (tag == TAG_JSON) {
      const char *zJ = (const char *)sqlite3_value_text(argv[0]);
      if (zJ == NULL) rc = SQLITE_NOMEM;
      else qfCljJson(pOut, zJ, sqlite3_value_bytes(argv[0]));
    } else {
      rc = valueJsonFromStored(pOut, argv[0], tag, 0);
    }
    if (rc == SQLITE_ERROR) rc = SQLITE_OK;
    if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pOut);
    n = sqlite3_str_length(pOut);
    z = sqlite3_str_finish(pOut);
    if (rc != SQLITE_OK) {
      sqlite3_free(z);
      sqlite3_result_error_nomem(pCtx);
      return;
    }
    if (z == NULL) sqlite3_result_text(pCtx, "", 0, SQLITE_STATIC);
    else if (tag != TAG_TUPLE && tag != TAG_JSON && n >= 2 && z[0] == '"') {
      sqlite3_result_text(pCtx, z + 1, n - 2, SQLITE_TRANSIENT);
    } else {
      sqlite3_result_text(pCtx, z, n, SQLITE_TRANSIENT);
    }
    sqlite3_free(z);
  } else if (t == SQLITE_FLOAT) {
    char aNum[48];
    qfJavaDouble(sqlite3_value_double(argv[0]), aNum, sizeof aNum);
    sqlite3_result_text(pCtx, aNum, -1, SQLITE_TRANSIENT);
  } else {
    const unsigned char *z = sqlite3_value_text(argv[0]);
    if (z == NULL) { sqlite3_result_error_nomem(pCtx); return; }
    sqlite3_result_text(pCtx, (const char*)z, sqlite3_value_bytes(argv[0]), SQLITE_TRANSIENT);
  }
}

/* The C.UTF-8 locale for towupper_l/towlower_l (the host's own locale is
** usually "C", whose case mapping is ASCII only), made once; NULL when
** the C library has none (then the mapping stays ASCII). */
static locale_t gQfLocale = (locale_t)0;
static pthread_once_t gQfLocaleOnce = PTHREAD_ONCE_INIT;
static void qfLocaleInit(void) {
  gQfLocale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* s in upper case (bUpper) or lower case, with Unicode's one-to-one case
** mapping (SQLite's upper/lower map ASCII only). Java's special cases
** (ß to SS, a final sigma) are not made. NULL gives NULL. */
static void qfCase(sqlite3_context *pCtx, sqlite3_value *pS, int bUpper) {
  int n, i;
  const unsigned char *z = sqlite3_value_text(pS);
  sqlite3_str *pOut;
  char *zOut;
  if (z == NULL) return;
  n = sqlite3_value_bytes(pS);
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

/* mentat_upper_case(s), mentat_lower_case(s): clojure.string/upper-case
** and lower-case (qfCase). */
void qfUpperCase(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  qfCase(pCtx, argv[0], 1);
}

void qfLowerCase(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  qfCase(pCtx, argv[0], 0);
}

/* mentat_subs(where, s, begin [, end]): Clojure's subs, in characters; a
** range outside 0 <= begin <= end <= length is an error, as Clojure throws
** (SQLite's substr clamps it). */
void qfSubs(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
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
