/*
** edn_print.c — EdnValue trees → EDN text (ednPrint) and → the JSON forms of
** SPEC §2.3 (ednPrintJson), plus the JSON string escaper and the double
** formatter both printers share.
**
** Doubles print with the fewest significant digits (15, 16 or 17) that read
** back to the same bits, so 0.1 prints "0.1" and 5e-324 round-trips. In EDN a
** double always carries '.', 'e' or is ##Inf/##-Inf/##NaN, so it reads back
** as a double. In JSON, ±infinity prints as ±1e999 (which JSON readers,
** SQLite's json functions included, read back as infinity) and NaN as null.
**
** Printing recurses once per nesting level; trees from the reader are at most
** EDN_MAX_DEPTH deep, and a deeper tree built in code is cut there (printed
** as nil / null) instead of risking the host's stack.
*/
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "edn.h"

/* Significant digits in %g output ("-0.00123e-5" → 3). */
static int ednSigDigits(const char *z) {
  int n = 0;
  while (*z == '-' || *z == '0' || *z == '.') z++;
  for (; *z && *z != 'e'; z++) if (*z >= '0' && *z <= '9') n++;
  return n;
}

/* Shortest round-trip text for a finite double into z (40 bytes). Uses libc
** snprintf/strtod: SQLite's own %g is not guaranteed to round-trip. */
static void ednDoubleText(double d, char *z) {
  int prec;
  if (d == 0.0) {
    strcpy(z, signbit(d) ? "-0.0" : "0.0");
    return;
  }
  /* Most doubles round-trip at 15 digits, where %g already drops trailing
  ** zeros, so the text is the shortest; only when all 15 digits show (a
  ** subnormal such as 5e-324 may need fewer) is a shorter one searched. */
  snprintf(z, 40, "%.15g", d);
  if (strtod(z, NULL) == d && ednSigDigits(z) >= 15) {
    char aTry[40];
    for (prec = 1; prec < 15; prec++) {
      snprintf(aTry, sizeof aTry, "%.*g", prec, d);
      if (strtod(aTry, NULL) == d) { strcpy(z, aTry); break; }
    }
  } else {
    for (prec = 16; prec <= 17; prec++) {
      snprintf(z, 40, "%.*g", prec, d);
      if (strtod(z, NULL) == d) break;
    }
  }
  /* snprintf follows LC_NUMERIC; EDN and JSON always want '.'. */
  for (prec = 0; z[prec]; prec++) {
    if (strchr("0123456789+-eE", z[prec]) == NULL) z[prec] = '.';
  }
  if (strpbrk(z, ".eE") == NULL) strcat(z, ".0");
}

/* Appends z[0..n) as a quoted literal with the escapes JSON and the EDN
** reader share; other control characters (NUL included) as \u00XX. EDN
** also escapes DEL and writes hex digits upper case, as its printer always
** has; JSON leaves DEL alone. Either way the output reads back as the bytes. */
static void ednQuoted(sqlite3_str *pOut, const char *z, int n, int bEdn) {
  const char *aHex = bEdn ? "0123456789ABCDEF" : "0123456789abcdef";
  int i, iRun = 0;
  sqlite3_str_appendchar(pOut, 1, '"');
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)z[i];
    const char *zEsc;
    char aU[7];
    if (c >= 0x20 && c != '"' && c != '\\' && !(bEdn && c == 0x7F)) continue;
    if (i > iRun) sqlite3_str_append(pOut, z + iRun, i - iRun);
    iRun = i + 1;
    switch (c) {
      case '"': zEsc = "\\\""; break;
      case '\\': zEsc = "\\\\"; break;
      case '\n': zEsc = "\\n"; break;
      case '\r': zEsc = "\\r"; break;
      case '\t': zEsc = "\\t"; break;
      case '\b': zEsc = "\\b"; break;
      case '\f': zEsc = "\\f"; break;
      default:
        memcpy(aU, "\\u00", 4);
        aU[4] = aHex[c >> 4];
        aU[5] = aHex[c & 15];
        aU[6] = 0;
        zEsc = aU;
        break;
    }
    sqlite3_str_appendall(pOut, zEsc);
  }
  if (n > iRun) sqlite3_str_append(pOut, z + iRun, n - iRun);
  sqlite3_str_appendchar(pOut, 1, '"');
}

/* Appends z[0..n) as a JSON string literal; valid JSON whatever bytes a
** string holds. */
void ednJsonString(sqlite3_str *pOut, const char *z, int n) {
  ednQuoted(pOut, z, n, 0);
}

/* EDN string literal. */
static void ednPrintString(sqlite3_str *pOut, const char *z, int n) {
  ednQuoted(pOut, z, n, 1);
}

/* UTF-8 bytes of code point cp into z (5 bytes); returns the length. */
static int ednEncodeCp(sqlite3_int64 cp, char *z) {
  int n;
  if (cp < 0 || cp > 0x10FFFF) cp = 0xFFFD;
  if (cp < 0x80) { z[0] = (char)cp; n = 1; }
  else if (cp < 0x800) { z[0] = (char)(0xC0 | cp >> 6); z[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
  else if (cp < 0x10000) {
    z[0] = (char)(0xE0 | cp >> 12); z[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    z[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
  } else {
    z[0] = (char)(0xF0 | cp >> 18); z[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    z[2] = (char)(0x80 | (cp >> 6 & 0x3F)); z[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
  }
  z[n] = 0;
  return n;
}

static void ednPrintChar(sqlite3_str *pOut, sqlite3_int64 cp) {
  char aBuf[8];
  switch (cp) {
    case '\n': sqlite3_str_appendall(pOut, "\\newline"); return;
    case ' ': sqlite3_str_appendall(pOut, "\\space"); return;
    case '\t': sqlite3_str_appendall(pOut, "\\tab"); return;
    case '\r': sqlite3_str_appendall(pOut, "\\return"); return;
    case '\b': sqlite3_str_appendall(pOut, "\\backspace"); return;
    case '\f': sqlite3_str_appendall(pOut, "\\formfeed"); return;
  }
  /* Controls and surrogates have no printable form: \uXXXX reads back. */
  if (cp >= 0 && (cp < 0x20 || cp == 0x7F || (cp >= 0xD800 && cp <= 0xDFFF))) {
    sqlite3_str_appendf(pOut, "\\u%04X", (int)cp);
    return;
  }
  sqlite3_str_appendchar(pOut, 1, '\\');
  ednEncodeCp(cp, aBuf);
  sqlite3_str_appendall(pOut, aBuf);
}

/* A #bytes literal as the reader builds it: the tag and a string node of
** decoded bytes. */
static int ednIsBytes(const EdnValue *p) {
  return strcmp(p->u.t.zTag, "bytes") == 0 && p->u.t.p && p->u.t.p->type == EDN_STRING;
}

/* The bytes of string node p as a quoted lowercase hex string. */
static void ednAppendHex(sqlite3_str *pOut, const EdnValue *p) {
  static const char aHex[] = "0123456789abcdef";
  int k;
  sqlite3_str_appendchar(pOut, 1, '"');
  for (k = 0; k < p->u.s.n; k++) {
    unsigned char c = (unsigned char)p->u.s.z[k];
    char a2[2];
    a2[0] = aHex[c >> 4];
    a2[1] = aHex[c & 15];
    sqlite3_str_append(pOut, a2, 2);
  }
  sqlite3_str_appendchar(pOut, 1, '"');
}

static void ednPrintDepth(sqlite3_str *pOut, const EdnValue *p, int depth) {
  int i;
  char aBuf[48];
  if (p == NULL || depth > EDN_MAX_DEPTH) {
    sqlite3_str_appendall(pOut, "nil");
    return;
  }
  switch (p->type) {
    case EDN_NIL: sqlite3_str_appendall(pOut, "nil"); break;
    case EDN_BOOL: sqlite3_str_appendall(pOut, p->u.b ? "true" : "false"); break;
    case EDN_INT: ednAppendInt(pOut, p->u.i); break;
    case EDN_DOUBLE:
      if (isnan(p->u.d)) sqlite3_str_appendall(pOut, "##NaN");
      else if (isinf(p->u.d)) sqlite3_str_appendall(pOut, p->u.d > 0 ? "##Inf" : "##-Inf");
      else { ednDoubleText(p->u.d, aBuf); sqlite3_str_appendall(pOut, aBuf); }
      break;
    case EDN_STRING: ednPrintString(pOut, p->u.s.z, p->u.s.n); break;
    case EDN_CHAR: ednPrintChar(pOut, p->u.i); break;
    case EDN_KEYWORD: case EDN_SYMBOL: sqlite3_str_append(pOut, p->u.s.z, p->u.s.n); break;
    case EDN_LIST: case EDN_VECTOR: case EDN_MAP: case EDN_SET: {
      const char *zOpen = p->type == EDN_LIST ? "(" : p->type == EDN_VECTOR ? "["
                        : p->type == EDN_MAP ? "{" : "#{";
      char cClose = p->type == EDN_LIST ? ')' : p->type == EDN_VECTOR ? ']' : '}';
      sqlite3_str_appendall(pOut, zOpen);
      for (i = 0; i < p->u.c.n; i++) {
        if (i) sqlite3_str_appendchar(pOut, 1, ' ');
        ednPrintDepth(pOut, p->u.c.a[i], depth + 1);
      }
      sqlite3_str_appendchar(pOut, 1, cClose);
      break;
    }
    case EDN_INST:
      ednFormatInstant(p->u.i, aBuf);
      sqlite3_str_appendf(pOut, "#inst \"%s\"", aBuf);
      break;
    case EDN_UUID:
      ednFormatUuid(p->u.uuid, aBuf);
      sqlite3_str_appendf(pOut, "#uuid \"%s\"", aBuf);
      break;
    case EDN_TAGGED:
      if (ednIsBytes(p)) {
        sqlite3_str_appendall(pOut, "#bytes ");
        ednAppendHex(pOut, p->u.t.p);
      } else {
        sqlite3_str_appendf(pOut, "#%s ", p->u.t.zTag);
        ednPrintDepth(pOut, p->u.t.p, depth + 1);
      }
      break;
  }
}

void ednPrint(sqlite3_str *pOut, const EdnValue *p) {
  ednPrintDepth(pOut, p, 0);
}

/* Appends p's EDN text as a JSON string literal (ednJsonString's escapes),
** built inside pOut itself: printed, then widened in place from the end. A
** separate string for the text would lose an out-of-memory failure (pOut
** would go on with an empty string where the text was); here every
** allocation is pOut's, so a failure stays in pOut for the caller. */
static void ednPrintJsonOfEdn(sqlite3_str *pOut, const EdnValue *p) {
  int n0 = sqlite3_str_length(pOut), n1, nEsc = 0, i, iDst;
  char *z;
  ednPrint(pOut, p);
  n1 = sqlite3_str_length(pOut);
  if (sqlite3_str_errcode(pOut)) return;
  z = sqlite3_str_value(pOut);
  for (i = n0; i < n1; i++) {
    unsigned char c = (unsigned char)z[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    nEsc += (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b'
             || c == '\f') ? 1 : 5;
  }
  sqlite3_str_appendchar(pOut, nEsc + 2, ' ');       /* the quotes and the escapes */
  if (sqlite3_str_errcode(pOut)) return;
  z = sqlite3_str_value(pOut);
  iDst = n1 + nEsc + 1;
  z[iDst--] = '"';
  for (i = n1 - 1; i >= n0; i--) {
    unsigned char c = (unsigned char)z[i];
    char cEsc = 0;
    if (c >= 0x20 && c != '"' && c != '\\') { z[iDst--] = (char)c; continue; }
    switch (c) {
      case '"': cEsc = '"'; break;
      case '\\': cEsc = '\\'; break;
      case '\n': cEsc = 'n'; break;
      case '\r': cEsc = 'r'; break;
      case '\t': cEsc = 't'; break;
      case '\b': cEsc = 'b'; break;
      case '\f': cEsc = 'f'; break;
    }
    if (cEsc) {
      z[iDst--] = cEsc;
    } else {
      z[iDst--] = "0123456789abcdef"[c & 15];
      z[iDst--] = "0123456789abcdef"[c >> 4];
      z[iDst--] = '0';
      z[iDst--] = '0';
      z[iDst--] = 'u';
    }
    z[iDst--] = '\\';
  }
  z[iDst] = '"';
  assert(iDst == n0);
}

/* A JSON object key for a map key: strings as they are, keywords and
** symbols as their text, anything else as its EDN text. */
static void ednPrintJsonKey(sqlite3_str *pOut, const EdnValue *p) {
  if (p && (p->type == EDN_STRING || p->type == EDN_KEYWORD || p->type == EDN_SYMBOL)) {
    ednJsonString(pOut, p->u.s.z, p->u.s.n);
  } else {
    ednPrintJsonOfEdn(pOut, p);
  }
}

/* Bytes a[0..na) against b[0..nb): memcmp order, a prefix first. */
static int ednCanonBytes(const char *a, int na, const char *b, int nb) {
  int c = memcmp(a, b, (size_t)(na < nb ? na : nb));
  return c ? c : na - nb;
}

static int ednCanonCmp(const void *pa, const void *pb) {
  const EdnCanonItem *x = pa, *y = pb;
  int c = ednCanonBytes(x->z, x->nKey, y->z, y->nKey);
  if (c == 0) {
    c = ednCanonBytes(x->z + x->nKey, x->n - x->nKey, y->z + y->nKey, y->n - y->nKey);
  }
  return c ? c : x->i - y->i;
}

/* See edn.h. Each item is printed once, here; the caller appends these
** texts instead of printing the items again, so nested sets cost their
** size, not 2^depth prints (each level printed its items to sort them,
** then again to output them). */
EdnCanonItem *ednCanonOrder(const EdnValue *p, EdnPrintFn xPrint, void *pArg, int *pn) {
  int nStep = p->type == EDN_MAP ? 2 : 1, n = p->u.c.n / nStep, k, bOk = 1;
  EdnCanonItem *a;
  *pn = 0;
  if (n <= 0) return NULL;
  a = sqlite3_malloc64(sizeof *a * (size_t)n);
  if (a == NULL) return NULL;
  for (k = 0; k < n; k++) {
    sqlite3_str *pS = sqlite3_str_new(NULL);
    xPrint(pS, p->u.c.a[k * nStep], pArg);
    a[k].nKey = sqlite3_str_length(pS);
    if (nStep == 2) xPrint(pS, p->u.c.a[k * nStep + 1], pArg);
    a[k].n = sqlite3_str_length(pS);
    if (sqlite3_str_errcode(pS) != SQLITE_OK) bOk = 0;
    a[k].z = sqlite3_str_finish(pS);
    if (a[k].z == NULL && a[k].n > 0) bOk = 0;
    a[k].i = k * nStep;
  }
  if (!bOk) {
    ednCanonFree(a, n);
    return NULL;
  }
  qsort(a, (size_t)n, sizeof *a, ednCanonCmp);
  *pn = n;
  return a;
}

void ednCanonFree(EdnCanonItem *a, int n) {
  for (int k = 0; a && k < n; k++) sqlite3_free(a[k].z);
  sqlite3_free(a);
}

static void ednPrintJsonDepth(sqlite3_str *pOut, const EdnValue *p, int depth);

static void ednPrintJsonItem(sqlite3_str *pOut, const EdnValue *p, void *pArg) {
  ednPrintJsonDepth(pOut, p, *(int *)pArg);
}

static void ednPrintJsonDepth(sqlite3_str *pOut, const EdnValue *p, int depth) {
  int i, nCanon = 0, d1 = depth + 1;
  EdnCanonItem *aCanon = NULL;
  char aBuf[48];
  if (p == NULL || depth > EDN_MAX_DEPTH) {
    sqlite3_str_appendall(pOut, "null");
    return;
  }
  switch (p->type) {
    case EDN_NIL: sqlite3_str_appendall(pOut, "null"); break;
    case EDN_BOOL: sqlite3_str_appendall(pOut, p->u.b ? "true" : "false"); break;
    case EDN_INT: ednAppendInt(pOut, p->u.i); break;
    case EDN_DOUBLE: ednJsonDouble(pOut, p->u.d); break;
    case EDN_STRING: case EDN_KEYWORD: case EDN_SYMBOL:
      ednJsonString(pOut, p->u.s.z, p->u.s.n);
      break;
    case EDN_CHAR: {
      int n = ednEncodeCp(p->u.i, aBuf);
      ednJsonString(pOut, aBuf, n);
      break;
    }
    case EDN_LIST: case EDN_VECTOR: case EDN_SET:
      /* a set in its canonical order: equal sets have one JSON form */
      if (p->type == EDN_SET) aCanon = ednCanonOrder(p, ednPrintJsonItem, &d1, &nCanon);
      sqlite3_str_appendchar(pOut, 1, '[');
      for (i = 0; i < p->u.c.n; i++) {
        if (i) sqlite3_str_appendchar(pOut, 1, ',');
        if (aCanon) {
          sqlite3_str_append(pOut, aCanon[i].z, aCanon[i].n);
        } else {
          ednPrintJsonDepth(pOut, p->u.c.a[i], d1);
        }
      }
      sqlite3_str_appendchar(pOut, 1, ']');
      ednCanonFree(aCanon, nCanon);
      break;
    case EDN_MAP:
      /* entries by key, so equal maps have one JSON form */
      aCanon = ednCanonOrder(p, ednPrintJsonItem, &d1, &nCanon);
      sqlite3_str_appendchar(pOut, 1, '{');
      for (i = 0; i + 1 < p->u.c.n; i += 2) {
        const EdnCanonItem *pC = aCanon ? &aCanon[i / 2] : NULL;
        int j = pC ? pC->i : i;
        if (i) sqlite3_str_appendchar(pOut, 1, ',');
        ednPrintJsonKey(pOut, p->u.c.a[j]);
        sqlite3_str_appendchar(pOut, 1, ':');
        if (pC) {
          sqlite3_str_append(pOut, pC->z + pC->nKey, pC->n - pC->nKey);
        } else {
          ednPrintJsonDepth(pOut, p->u.c.a[j + 1], d1);
        }
      }
      sqlite3_str_appendchar(pOut, 1, '}');
      ednCanonFree(aCanon, nCanon);
      break;
    case EDN_INST:
      ednFormatInstant(p->u.i, aBuf);
      sqlite3_str_appendf(pOut, "\"%s\"", aBuf);
      break;
    case EDN_UUID:
      ednFormatUuid(p->u.uuid, aBuf);
      sqlite3_str_appendf(pOut, "\"%s\"", aBuf);
      break;
    case EDN_TAGGED: {
      if (ednIsBytes(p)) {           /* SPEC §2.3: bytes are a hex string */
        ednAppendHex(pOut, p->u.t.p);
        break;
      }
      /* No JSON form: the EDN text, as a string, loses nothing. */
      ednPrintJsonOfEdn(pOut, p);
      break;
    }
  }
}

void ednPrintJson(sqlite3_str *pOut, const EdnValue *p) {
  ednPrintJsonDepth(pOut, p, 0);
}

void ednJsonDouble(sqlite3_str *pOut, double d) {
  char aBuf[48];
  if (isnan(d)) sqlite3_str_appendall(pOut, "null");
  else if (isinf(d)) sqlite3_str_appendall(pOut, d > 0 ? "1e999" : "-1e999");
  else { ednDoubleText(d, aBuf); sqlite3_str_appendall(pOut, aBuf); }
}

int ednErrorV(char **pzErr, const char *zPrefix, int line, int col, const char *zFmt, va_list ap) {
  char *zMsg = sqlite3_vmprintf(zFmt, ap);
  sqlite3_free(*pzErr);
  *pzErr = NULL;
  if (zMsg == NULL) return SQLITE_NOMEM;
  if (line > 0) *pzErr = sqlite3_mprintf("%sline %d col %d: %s", zPrefix, line, col, zMsg);
  else *pzErr = sqlite3_mprintf("%s%s", zPrefix, zMsg);
  sqlite3_free(zMsg);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

void ednAppendInt(sqlite3_str *pOut, sqlite3_int64 v) {
  char aBuf[24];
  int i = (int)sizeof aBuf;
  /* Through unsigned, so the most negative value negates without overflow. */
  sqlite3_uint64 u = v < 0 ? (sqlite3_uint64)0 - (sqlite3_uint64)v : (sqlite3_uint64)v;
  do {
    aBuf[--i] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  if (v < 0) aBuf[--i] = '-';
  sqlite3_str_append(pOut, aBuf + i, (int)sizeof aBuf - i);
}
