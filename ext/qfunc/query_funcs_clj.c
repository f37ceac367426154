/*
** query_funcs_clj.c — values as Clojure prints them: Java's
** Double.toString (qfJavaDouble, str of a double) and pr-str of a
** collection, which is what Clojure's str of a vector, set or map gives
** (qfCljTuple for the store's tuple encoding, qfCljJson for the JSON a
** query made, qfCljEdn for an EDN literal or input). Takes values; appends
** text to an sqlite3_str (its errors stay in it). Calls SQLite and the EDN
** helpers (instants, uuids, UTF-8).
**
** Clojure's printer (core_print.clj): elements one space apart, a map's
** entries ", " apart; strings quoted with " \ newline tab return formfeed
** backspace escaped; a double as Double.toString but ##Inf, ##-Inf, ##NaN;
** a java.util.Date as #inst "yyyy-MM-ddTHH:mm:ss.SSS-00:00" (milliseconds:
** a Date holds no more); a UUID as #uuid "..."; nil, true, false; keywords
** and symbols as written.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "query_funcs.h"

void qfJavaDouble(double d, char *zOut, size_t nOut) {
  char aE[40], aD[24];
  int prec, nD = 0, iExp, i;
  const char *z;
  char *p = zOut;
  if (isnan(d)) { snprintf(zOut, nOut, "NaN"); return; }
  if (isinf(d)) { snprintf(zOut, nOut, d < 0 ? "-Infinity" : "Infinity"); return; }
  if (d == 0.0) { snprintf(zOut, nOut, signbit(d) ? "-0.0" : "0.0"); return; }
  for (prec = 0; prec <= 16; prec++) {
    snprintf(aE, sizeof aE, "%.*e", prec, d);
    if (strtod(aE, NULL) == d) break;
  }
  /* one digit reads back: Java then prints the two-digit decimal nearest
  ** d (Double.toString, JDK 19 on), which differs where doubles are
  ** sparse: 4.9E-324 for the least subnormal, not 5.0E-324 */
  if (prec == 0) snprintf(aE, sizeof aE, "%.1e", d);
  /* aE is [-]D[.DDD]e(+|-)XX, read in any locale's decimal point */
  z = aE;
  if (*z == '-') *p++ = *z++;
  for (; *z && *z != 'e' && *z != 'E'; z++) {
    if (*z >= '0' && *z <= '9' && nD < (int)sizeof aD - 1) aD[nD++] = *z;
  }
  while (nD > 1 && aD[nD - 1] == '0') nD--;
  aD[nD] = 0;
  iExp = *z ? atoi(z + 1) : 0;
  if (iExp >= -3 && iExp < 7) {
    if (iExp >= 0) {
      for (i = 0; i <= iExp; i++) *p++ = i < nD ? aD[i] : '0';
      *p++ = '.';
      if (nD > iExp + 1) { for (i = iExp + 1; i < nD; i++) *p++ = aD[i]; }
      else *p++ = '0';
    } else {
      *p++ = '0';
      *p++ = '.';
      for (i = 0; i < -iExp - 1; i++) *p++ = '0';
      for (i = 0; i < nD; i++) *p++ = aD[i];
    }
    *p = 0;
  } else {
    *p++ = aD[0];
    *p++ = '.';
    if (nD > 1) { for (i = 1; i < nD; i++) *p++ = aD[i]; }
    else *p++ = '0';
    snprintf(p, nOut - (size_t)(p - zOut), "E%d", iExp);
  }
}

/* A double as pr prints it: Double.toString, or ##Inf ##-Inf ##NaN. */
static void qfCljDouble(sqlite3_str *pOut, double d) {
  char a[48];
  if (isnan(d)) { sqlite3_str_appendall(pOut, "##NaN"); return; }
  if (isinf(d)) { sqlite3_str_appendall(pOut, d < 0 ? "##-Inf" : "##Inf"); return; }
  qfJavaDouble(d, a, sizeof a);
  sqlite3_str_appendall(pOut, a);
}

/* A string as pr prints it: quoted, with Clojure's char-escape-string
** escapes; every other character (a NUL, any Unicode) as it is. */
static void qfCljString(sqlite3_str *pOut, const char *z, int n) {
  int i, k = 0;
  sqlite3_str_appendchar(pOut, 1, '"');
  for (i = 0; i < n; i++) {
    const char *zEsc = NULL;
    switch (z[i]) {
      case '"': zEsc = "\\\""; break;
      case '\\': zEsc = "\\\\"; break;
      case '\n': zEsc = "\\n"; break;
      case '\t': zEsc = "\\t"; break;
      case '\r': zEsc = "\\r"; break;
      case '\f': zEsc = "\\f"; break;
      case '\b': zEsc = "\\b"; break;
      default: break;
    }
    if (zEsc == NULL) continue;
    sqlite3_str_append(pOut, z + k, i - k);
    sqlite3_str_appendall(pOut, zEsc);
    k = i + 1;
  }
  sqlite3_str_append(pOut, z + k, n - k);
  sqlite3_str_appendchar(pOut, 1, '"');
}

/* An instant (µs since the epoch) as pr prints a java.util.Date. */
static void qfCljInst(sqlite3_str *pOut, sqlite3_int64 us) {
  char a[48];
  char *zDot;
  ednFormatInstant(us, a);
  zDot = strchr(a, '.');
  if (zDot) zDot[4] = 0;     /* the milliseconds: a Date holds no more */
  sqlite3_str_appendf(pOut, "#inst \"%s-00:00\"", a);
}

static void qfCljUuid(sqlite3_str *pOut, const unsigned char *a) {
  char z[40];
  ednFormatUuid(a, z);
  sqlite3_str_appendf(pOut, "#uuid \"%s\"", z);
}

/* Bytes (a Java byte[] has no readable form): #bytes "hex", as EDN here. */
static void qfCljBytes(sqlite3_str *pOut, const unsigned char *z, int n) {
  int i;
  sqlite3_str_appendall(pOut, "#bytes \"");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, "%02x", z[i]);
  sqlite3_str_appendchar(pOut, 1, '"');
}

/* One decoded element of a tuple. */
static void qfCljTyped(sqlite3_str *pOut, const TypedValue *p) {
  switch (p->type) {
    case VT_NONE: sqlite3_str_appendall(pOut, "nil"); break;
    case VT_BOOLEAN: sqlite3_str_appendall(pOut, p->i ? "true" : "false"); break;
    case VT_INSTANT: qfCljInst(pOut, p->i); break;
    case VT_DOUBLE: qfCljDouble(pOut, p->d); break;
    case VT_STRING: qfCljString(pOut, p->z, p->n); break;
    case VT_KEYWORD: sqlite3_str_append(pOut, p->z, p->n); break;
    case VT_UUID: qfCljUuid(pOut, p->uuid); break;
    case VT_BYTES: qfCljBytes(pOut, (const unsigned char *)p->z, p->n); break;
    default: sqlite3_str_appendf(pOut, "%lld", (long long)p->i); break;
  }
}

int qfCljTuple(sqlite3_str *pOut, const void *z, int n) {
  ValueTuple t;
  int i, rc = valueTupleDecode(z, n, &t);
  if (rc != SQLITE_OK) return rc;
  sqlite3_str_appendchar(pOut, 1, '[');
  for (i = 0; i < t.n; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, ' ');
    qfCljTyped(pOut, &t.a[i]);
  }
  sqlite3_str_appendchar(pOut, 1, ']');
  valueTupleClear(&t);
  return SQLITE_OK;
}

/* ---- JSON ---- */

static int qfJsonWs(const char *z, int n, int i) {
  while (i < n && (z[i] == ' ' || z[i] == '\t' || z[i] == '\n' || z[i] == '\r')) i++;
  return i;
}

int qfJsonString(const char *z, int n, int i, sqlite3_str *pOut) {
  i++;                                       /* the opening quote */
  while (i < n && z[i] != '"') {
    if (z[i] != '\\') {
      int k = i;
      while (i < n && z[i] != '"' && z[i] != '\\') i++;
      if (pOut) sqlite3_str_append(pOut, z + k, i - k);
      continue;
    }
    if (i + 1 >= n) return n;
    i++;
    if (z[i] == 'u' && i + 4 < n) {
      unsigned cp = (unsigned)ednHex4((const unsigned char *)z + i + 1);
      char a[4];
      i += 5;
      if (cp >= 0xD800 && cp < 0xDC00 && i + 5 < n && z[i] == '\\' && z[i + 1] == 'u') {
        unsigned lo = (unsigned)ednHex4((const unsigned char *)z + i + 2);
        if (lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
      }
      if (pOut) sqlite3_str_append(pOut, a, ednUtf8Encode(cp, a));
      continue;
    }
    if (pOut) {
      char c = z[i];
      c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'f' ? '\f' : c == 'b' ? '\b' : c;
      sqlite3_str_appendchar(pOut, 1, c);
    }
    i++;
  }
  return i < n ? i + 1 : n;
}

int qfJsonSkip(const char *z, int n, int i) {
  i = qfJsonWs(z, n, i);
  if (i >= n) return n;
  if (z[i] == '"') return qfJsonString(z, n, i, NULL);
  if (z[i] == '[' || z[i] == '{') {
    char cEnd = z[i] == '[' ? ']' : '}';
    i = qfJsonWs(z, n, i + 1);
    while (i < n && z[i] != cEnd) {
      i = qfJsonWs(z, n, qfJsonSkip(z, n, i));
      if (i < n && (z[i] == ',' || z[i] == ':')) i = qfJsonWs(z, n, i + 1);
    }
    return i < n ? i + 1 : n;
  }
  while (i < n && !strchr(",]}: \t\r\n", z[i])) i++;
  return i;
}

int qfJsonKeyword(const char *z, int n) {
  int i;
  if (n < 2 || z[0] != ':') return 0;
  for (i = 1; i < n; i++) {
    if (strchr(" \t\n\r\f,\"()[]{}\\;@^`~", z[i]) || z[i] == 0) return 0;
  }
  return 1;
}

/* The JSON value at z[i] as pr prints what it stands for; the index past
** it. A string that reads as a keyword (qfJsonKeyword) is one, as an input's
** JSON is read (SPEC §2.3); other strings are strings, and an instant or a
** uuid is its text (the JSON has no such types: a query's literal is
** printed from its EDN, qfCljEdn); an integer as it is, any other number a
** double. */
static int qfCljJsonAt(sqlite3_str *pOut, const char *z, int n, int i) {
  i = qfJsonWs(z, n, i);
  if (i >= n) return n;
  if (z[i] == '"') {
    sqlite3_str *pS = sqlite3_str_new(NULL);
    int iEnd = qfJsonString(z, n, i, pS);
    int nS = sqlite3_str_length(pS);
    char *zS = sqlite3_str_finish(pS);
    if (zS && qfJsonKeyword(zS, nS)) sqlite3_str_append(pOut, zS, nS);
    else qfCljString(pOut, zS ? zS : "", zS ? nS : 0);
    sqlite3_free(zS);
    return iEnd;
  }
  if (z[i] == '[' || z[i] == '{') {
    int bMap = z[i] == '{', k = 0;
    char cEnd = bMap ? '}' : ']';
    sqlite3_str_appendchar(pOut, 1, bMap ? '{' : '[');
    i = qfJsonWs(z, n, i + 1);
    while (i < n && z[i] != cEnd) {
      if (k) sqlite3_str_appendall(pOut, bMap && k % 2 == 0 ? ", " : " ");
      i = qfJsonWs(z, n, qfCljJsonAt(pOut, z, n, i));
      if (i < n && (z[i] == ',' || z[i] == ':')) i = qfJsonWs(z, n, i + 1);
      k++;
    }
    sqlite3_str_appendchar(pOut, 1, cEnd);
    return i < n ? i + 1 : n;
  }
  {
    int k = i, bDouble = 0;
    while (i < n && !strchr(",]}: \t\r\n", z[i])) {
      if (z[i] == '.' || z[i] == 'e' || z[i] == 'E') bDouble = 1;
      i++;
    }
    if (strncmp(z + k, "null", 4) == 0) sqlite3_str_appendall(pOut, "nil");
    else if (bDouble) {
      char *zNum = sqlite3_mprintf("%.*s", i - k, z + k);
      if (zNum) qfCljDouble(pOut, strtod(zNum, NULL));
      sqlite3_free(zNum);
    } else {
      sqlite3_str_append(pOut, z + k, i - k);
    }
    return i;
  }
}

void qfCljJson(sqlite3_str *pOut, const char *z, int n) {
  qfCljJsonAt(pOut, z, n, 0);
}

/* ---- EDN ---- */

/* A character as pr prints one: \a, \newline, \space ... */
static void qfCljChar(sqlite3_str *pOut, sqlite3_int64 c) {
  static const struct { int c; const char *z; } aName[] = {
    { '\n', "newline" }, { ' ', "space" }, { '\t', "tab" }, { '\r', "return" },
    { '\f', "formfeed" }, { '\b', "backspace" },
  };
  char a[4];
  size_t k;
  for (k = 0; k < sizeof aName / sizeof aName[0]; k++) {
    if (aName[k].c == c) { sqlite3_str_appendf(pOut, "\\%s", aName[k].z); return; }
  }
  sqlite3_str_appendchar(pOut, 1, '\\');
  sqlite3_str_append(pOut, a, ednUtf8Encode((unsigned)c, a));
}

static void qfCljItem(sqlite3_str *pOut, const EdnValue *p, void *pArg) {
  (void)pArg;
  qfCljEdn(pOut, p);
}

void qfCljEdn(sqlite3_str *pOut, const EdnValue *p) {
  int i, nCanon = 0;
  EdnCanonItem *aCanon = NULL;
  switch (p->type) {
    case EDN_NIL: sqlite3_str_appendall(pOut, "nil"); break;
    case EDN_BOOL: sqlite3_str_appendall(pOut, p->u.b ? "true" : "false"); break;
    case EDN_INT: sqlite3_str_appendf(pOut, "%lld", (long long)p->u.i); break;
    case EDN_DOUBLE: qfCljDouble(pOut, p->u.d); break;
    case EDN_STRING: qfCljString(pOut, p->u.s.z, p->u.s.n); break;
    case EDN_CHAR: qfCljChar(pOut, p->u.i); break;
    case EDN_KEYWORD: case EDN_SYMBOL: sqlite3_str_append(pOut, p->u.s.z, p->u.s.n); break;
    case EDN_INST: qfCljInst(pOut, p->u.i); break;
    case EDN_UUID: qfCljUuid(pOut, p->u.uuid); break;
    case EDN_LIST: case EDN_VECTOR: case EDN_SET: case EDN_MAP:
      /* A set (Clojure's reader makes a hash set) and a map of more than
      ** 8 entries (a hash map) print in hash order, which Clojure leaves
      ** unspecified: here the canonical order, so equal ones print alike;
      ** an array map keeps its written order, as Clojure's does. */
      if (p->type == EDN_SET || (p->type == EDN_MAP && p->u.c.n / 2 > 8)) {
        aCanon = ednCanonOrder(p, qfCljItem, NULL, &nCanon);
      }
      sqlite3_str_appendall(pOut, p->type == EDN_LIST ? "(" : p->type == EDN_VECTOR ? "["
                                  : p->type == EDN_SET ? "#{" : "{");
      for (i = 0; i < p->u.c.n; i++) {
        if (i) sqlite3_str_appendall(pOut, p->type == EDN_MAP && i % 2 == 0 ? ", " : " ");
        if (aCanon == NULL) {
          qfCljEdn(pOut, p->u.c.a[i]);
        } else if (p->type == EDN_MAP) {
          const EdnCanonItem *pC = &aCanon[i / 2];
          if (i % 2 == 0) sqlite3_str_append(pOut, pC->z, pC->nKey);
          else sqlite3_str_append(pOut, pC->z + pC->nKey, pC->n - pC->nKey);
        } else {
          sqlite3_str_append(pOut, aCanon[i].z, aCanon[i].n);
        }
      }
      sqlite3_str_appendall(pOut, p->type == EDN_LIST ? ")" : p->type == EDN_VECTOR ? "]" : "}");
      ednCanonFree(aCanon, nCanon);
      break;
    case EDN_TAGGED:
      if (strcmp(p->u.t.zTag, "bytes") == 0 && p->u.t.p->type == EDN_STRING) {
        qfCljBytes(pOut, (const unsigned char *)p->u.t.p->u.s.z, p->u.t.p->u.s.n);
      } else {
        sqlite3_str_appendf(pOut, "#%s ", p->u.t.zTag);
        qfCljEdn(pOut, p->u.t.p);
      }
      break;
  }
}
