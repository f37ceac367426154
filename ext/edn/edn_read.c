/*
** edn_read.c — the EDN reader: text (with explicit length) → EdnValue trees
** in an arena.
**
** HOW IT WORKS: a recursive-descent reader over bytes. Recursion happens only
** for collections, tagged values and #_ discards, and each level adds one to
** `depth`, which is refused past EDN_MAX_DEPTH before the call is made, so
** the C stack is bounded whatever the input ('[' * 200000 fails cleanly,
** peer-fault B34). Children of open collections are collected on one shared
** scratch stack (sqlite3_malloc'd) and copied into an exact-size arena array
** when the collection closes, so no per-collection growth arrays are needed.
**
** Character classes come from a 256-entry table (no per-character function
** calls). Strings are read in two passes: find the closing quote, then decode
** into an arena buffer of the raw length (decoding never grows text).
** Positions: the reader tracks the current line and the number of UTF-8
** continuation bytes on it, so a form's column counts characters, not bytes;
** error positions are recomputed from the start of input (errors are rare).
**
** Decisions where EDN implementations differ (peer faults B01-B03, B33):
**  - \u0000 inside a string is kept as a NUL byte; NUL outside a string, a
**    lone surrogate and invalid UTF-8 anywhere are errors.
**  - Integers are 64-bit; out of range is an error (never a wrap or a double);
**    leading zeros and the N / M suffixes are errors.
**  - `:foo/`, `:/x`, `:` and `::x` are errors (empty or auto-resolved parts).
**  - #bytes "hex" is decoded at read time (see edn.h); an odd number of
**    digits or a non-hex digit is an error.
**  - #_ discards the next form without validating its tags (#inst is not
**    parsed, duplicate keys are not checked), like edamame and unlike
**    clojure.edn; #_ with nothing after it is an error.
**  - Duplicate map keys and set elements are errors naming the key, as the
**    EDN spec says each key appears once.
*/
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "edn.h"

#define CC_WS    0x01  /* whitespace (commas included) */
#define CC_SYM   0x02  /* constituent of a symbol, keyword or number token */
#define CC_START 0x04  /* may begin a symbol */
#define CC_DIGIT 0x08
#define CC_DELIM 0x10  /* ends a token */

static const unsigned char aEdnClass[256] = {
   0,  0,  0,  0,  0,  0,  0,  0,  0, 17, 17, 17, 17, 17,  0,  0,
   0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
  17,  6, 16,  2,  6,  6,  6,  2, 16, 16,  6,  6, 17,  6,  6,  6,
  10, 10, 10, 10, 10, 10, 10, 10, 10, 10,  2, 16,  6,  6,  6,  6,
   0,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6, 16, 16, 16,  0,  6,
   0,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6, 16,  0, 16,  0,  0,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
   6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
};

typedef struct EdnReader {
  const unsigned char *z;   /* input, n bytes, not NUL-terminated */
  int n;
  int i;                    /* next byte */
  int line;                 /* current line (1-based) */
  int iBody;                /* offset of the text after a byte order mark */
  int iLineStart;           /* offset of the current line's first byte */
  int nCont;                /* UTF-8 continuation bytes in [iLineStart, i) */
  EdnArena *pArena;
  EdnError *pErr;
  EdnValue **aStack;        /* children of open collections */
  int nStack, nStackAlloc;
  ConfigPoll poll;          /* the caller's interrupt, asked per collection element */
} EdnReader;

static int ednReadForm(EdnReader *r, int depth, int bDiscard, EdnValue **pp);

/* Records an error at byte offset iPos. Line and column (characters, not
** bytes) are recomputed from the start: errors happen once per call. */
static int ednErrAt(EdnReader *r, int iPos, const char *zFmt, ...) {
  va_list ap;
  int k, line = 1, col = 1;
  if (iPos > r->n) iPos = r->n;
  for (k = r->iBody; k < iPos; k++) {
    unsigned char c = r->z[k];
    if (c == '\n') { line++; col = 1; }
    else if ((c & 0xC0) != 0x80) col++;
  }
  r->pErr->line = line;
  r->pErr->col = col;
  va_start(ap, zFmt);
  sqlite3_vsnprintf((int)sizeof(r->pErr->zMsg), r->pErr->zMsg, zFmt, ap);
  va_end(ap);
  return SQLITE_ERROR;
}

static int ednNoMem(EdnReader *r) {
  r->pErr->line = r->line;
  r->pErr->col = 0;
  sqlite3_snprintf((int)sizeof(r->pErr->zMsg), r->pErr->zMsg, "out of memory");
  return SQLITE_NOMEM;
}

/* Column of the current position, in characters. */
static int ednCol(const EdnReader *r) {
  return r->i - r->iLineStart - r->nCont + 1;
}

static int ednPush(EdnReader *r, EdnValue *p) {
  if (r->nStack >= r->nStackAlloc) {
    int nNew = r->nStackAlloc ? r->nStackAlloc * 2 : 64;
    EdnValue **aNew = sqlite3_realloc64(r->aStack, sizeof(EdnValue *) * (sqlite3_uint64)nNew);
    if (aNew == NULL) return ednNoMem(r);
    r->aStack = aNew;
    r->nStackAlloc = nNew;
  }
  r->aStack[r->nStack++] = p;
  return SQLITE_OK;
}

/* Skips whitespace, commas and ; comments. Comments are checked for NUL
** bytes and invalid UTF-8 like everything else. */
static int ednSkipSpace(EdnReader *r) {
  const unsigned char *z = r->z;
  while (r->i < r->n) {
    unsigned char c = z[r->i];
    if (aEdnClass[c] & CC_WS) {
      if (c == '\n') { r->line++; r->iLineStart = r->i + 1; r->nCont = 0; }
      r->i++;
    } else if (c == ';') {
      while (r->i < r->n && z[r->i] != '\n') {
        c = z[r->i];
        if (c == 0) return ednErrAt(r, r->i, "NUL byte outside a string");
        if (c >= 0x80) {
          int L = ednUtf8Len(z, r->n, r->i);
          if (L == 0) return ednErrAt(r, r->i, "invalid UTF-8");
          r->i += L;
        } else {
          r->i++;
        }
      }
    } else {
      break;
    }
  }
  return SQLITE_OK;
}

/* Scans a token of constituent bytes from r->i, validating UTF-8; sets
** *piEnd. Does not move r->i. */
static int ednScanToken(EdnReader *r, int iStart, int *piEnd, int *pnCont) {
  int j = iStart, nCont = 0;
  while (j < r->n && (aEdnClass[r->z[j]] & CC_SYM)) {
    if (r->z[j] >= 0x80) {
      int L = ednUtf8Len(r->z, r->n, j);
      if (L == 0) return ednErrAt(r, j, "invalid UTF-8");
      if (L == 3 && r->z[j] == 0xEF && r->z[j + 1] == 0xBB && r->z[j + 2] == 0xBF) {
        /* Only a leading BOM is skipped; elsewhere it would make a symbol
        ** that prints the same as the text without it. */
        return ednErrAt(r, j, "unexpected byte order mark (U+FEFF)");
      }
      nCont += L - 1;
      j += L;
    } else {
      j++;
    }
  }
  if (j < r->n && !(aEdnClass[r->z[j]] & CC_DELIM)) {
    unsigned char c = r->z[j];
    if (c == 0) return ednErrAt(r, j, "NUL byte outside a string");
    if (c < 0x20 || c == 0x7F) return ednErrAt(r, j, "unexpected control character 0x%02X", c);
    return ednErrAt(r, j, "unexpected character '%c'", c);
  }
  *piEnd = j;
  *pnCont = nCont;
  return SQLITE_OK;
}

/* Checks one part (namespace or name) of a symbol: a leading - + . must not
** be followed by a digit (that would be a number). */
static int ednSymPartOk(const unsigned char *z, int n) {
  if (n == 0) return 0;
  if (aEdnClass[z[0]] & CC_DIGIT) return 0;
  if ((z[0] == '-' || z[0] == '+' || z[0] == '.') && n > 1 && (aEdnClass[z[1]] & CC_DIGIT)) return 0;
  return 1;
}

static const char aEdnBadSymbol[] = "invalid symbol";

/* Validates symbol text z[0..n) ("/" alone, or name, or ns/name with one
** slash); returns an error message or NULL. */
static const char *ednSymbolProblem(const unsigned char *z, int n, int bKeyword) {
  const unsigned char *pSlash;
  if (n == 1 && z[0] == '/') return bKeyword ? "empty namespace and name" : NULL;
  if (n == 0) return bKeyword ? "empty keyword" : "empty symbol";
  if (z[0] == ':') return bKeyword ? "auto-resolved keyword (::) is not EDN" : "invalid symbol";
  if (z[n - 1] == ':') return "a name may not end with ':'";
  pSlash = memchr(z, '/', (size_t)n);
  if (pSlash) {
    int nNs = (int)(pSlash - z), nName = n - nNs - 1;
    if (nNs == 0) return "empty namespace";
    if (nName == 0) return "empty name";
    if (memchr(pSlash + 1, '/', (size_t)nName)) return "more than one '/'";
    if (!bKeyword && (!ednSymPartOk(z, nNs) || !ednSymPartOk(pSlash + 1, nName))) return aEdnBadSymbol;
  } else if (!bKeyword && !ednSymPartOk(z, n)) {
    return aEdnBadSymbol;
  }
  return NULL;
}

const char *ednKeywordProblem(const char *zKw, int n, char *zBuf, int nBuf) {
  const unsigned char *z = (const unsigned char *)zKw;
  int i;
  if (n < 1 || z[0] != ':') return "a keyword starts with ':'";
  for (i = 1; i < n; i++) {
    unsigned char c = z[i];
    if (aEdnClass[c] & CC_SYM) continue;
    if (c < 0x20 || c == 0x7F) sqlite3_snprintf(nBuf, zBuf, "unexpected control character 0x%02X", c);
    else sqlite3_snprintf(nBuf, zBuf, "unexpected character '%c'", c);
    return zBuf;
  }
  return ednSymbolProblem(z + 1, n - 1, 1);
}

/* A number token z[iStart..iEnd): 64-bit integers or doubles. */
static int ednReadNumber(EdnReader *r, int iStart, int iEnd, EdnValue **pp) {
  const unsigned char *z = r->z;
  int j = iStart, bNeg = 0, iDigits, bFloat = 0;
  int nTok = iEnd - iStart;
  EdnValue *pV;
  if (z[j] == '+' || z[j] == '-') { bNeg = z[j] == '-'; j++; }
  iDigits = j;
  while (j < iEnd && (aEdnClass[z[j]] & CC_DIGIT)) j++;
  if (j == iDigits) return ednErrAt(r, iStart, "invalid number %.*s", nTok, z + iStart);
  if (j - iDigits > 1 && z[iDigits] == '0') {
    return ednErrAt(r, iStart, "invalid number %.*s (leading zeros are not allowed)", nTok, z + iStart);
  }
  if (j < iEnd && z[j] == '.') {
    bFloat = 1;
    j++;
    while (j < iEnd && (aEdnClass[z[j]] & CC_DIGIT)) j++;
  }
  if (j < iEnd && (z[j] == 'e' || z[j] == 'E')) {
    int iExp;
    bFloat = 1;
    j++;
    if (j < iEnd && (z[j] == '+' || z[j] == '-')) j++;
    iExp = j;
    while (j < iEnd && (aEdnClass[z[j]] & CC_DIGIT)) j++;
    if (j == iExp) return ednErrAt(r, iStart, "invalid number %.*s", nTok, z + iStart);
  }
  if (j + 1 == iEnd && (z[j] == 'N' || z[j] == 'M')) {
    return ednErrAt(r, iStart, "arbitrary-precision literal %.*s is not supported", nTok, z + iStart);
  }
  if (j != iEnd) return ednErrAt(r, iStart, "invalid number %.*s", nTok, z + iStart);

  if (!bFloat) {
    sqlite3_uint64 u = 0, lim = bNeg ? (sqlite3_uint64)1 << 63 : ((sqlite3_uint64)1 << 63) - 1;
    for (j = iDigits; j < iEnd; j++) {
      unsigned d = z[j] - '0';
      if (u > (lim - d) / 10) {
        return ednErrAt(r, iStart, "integer %.*s out of range", nTok, z + iStart);
      }
      u = u * 10 + d;
    }
    pV = ednNew(r->pArena, EDN_INT);
    if (pV == NULL) return ednNoMem(r);
    /* Negate in unsigned arithmetic: -2^63 has no positive counterpart. */
    pV->u.i = bNeg ? (sqlite3_int64)(0 - u) : (sqlite3_int64)u;
  } else {
    char aBuf[64];
    char *zNum = aBuf, *zEnd = NULL;
    double d;
    if (nTok >= (int)sizeof(aBuf)) {
      zNum = ednArenaAlloc(r->pArena, (size_t)nTok + 1);
      if (zNum == NULL) return ednNoMem(r);
    }
    memcpy(zNum, z + iStart, (size_t)nTok);
    zNum[nTok] = 0;
    d = strtod(zNum, &zEnd);
    if (*zEnd != 0) {
      /* strtod follows LC_NUMERIC: a host that set a locale with a decimal
      ** comma stops at '.'; spell the point its way and parse again. */
      char *zDot = strchr(zNum, '.');
      const char *zPoint = localeconv()->decimal_point;
      if (zDot && zPoint && zPoint[0] && zPoint[1] == 0) *zDot = zPoint[0];
      d = strtod(zNum, NULL);
    }
    if (isinf(d)) return ednErrAt(r, iStart, "double %.*s out of range", nTok, z + iStart);
    pV = ednNew(r->pArena, EDN_DOUBLE);
    if (pV == NULL) return ednNoMem(r);
    pV->u.d = d;
  }
  *pp = pV;
  return SQLITE_OK;
}

/* A symbol, keyword, number, nil, true or false at r->i. */
static int ednReadToken(EdnReader *r, EdnValue **pp) {
  const unsigned char *z = r->z;
  int iStart = r->i, iEnd, nCont, rc, n;
  EdnValue *pV;
  rc = ednScanToken(r, iStart, &iEnd, &nCont);
  if (rc) return rc;
  n = iEnd - iStart;
  if ((aEdnClass[z[iStart]] & CC_DIGIT)
   || ((z[iStart] == '+' || z[iStart] == '-') && n > 1 && (aEdnClass[z[iStart + 1]] & CC_DIGIT))) {
    rc = ednReadNumber(r, iStart, iEnd, pp);
  } else if (z[iStart] == ':') {
    const char *zWhy = ednSymbolProblem(z + iStart + 1, n - 1, 1);
    if (zWhy) return ednErrAt(r, iStart, "invalid keyword %.*s: %s", n, z + iStart, zWhy);
    pV = ednNewString(r->pArena, EDN_KEYWORD, (const char *)z + iStart, n);
    if (pV == NULL) return ednNoMem(r);
    *pp = pV;
  } else if (n == 3 && memcmp(z + iStart, "nil", 3) == 0) {
    if ((*pp = ednNew(r->pArena, EDN_NIL)) == NULL) return ednNoMem(r);
  } else if (n == 4 && memcmp(z + iStart, "true", 4) == 0) {
    if ((*pp = ednNew(r->pArena, EDN_BOOL)) == NULL) return ednNoMem(r);
    (*pp)->u.b = 1;
  } else if (n == 5 && memcmp(z + iStart, "false", 5) == 0) {
    if ((*pp = ednNew(r->pArena, EDN_BOOL)) == NULL) return ednNoMem(r);
  } else {
    const char *zWhy;
    if (!(aEdnClass[z[iStart]] & CC_START)) {
      return ednErrAt(r, iStart, "unexpected character '%c'", z[iStart]);
    }
    zWhy = ednSymbolProblem(z + iStart, n, 0);
    if (zWhy == aEdnBadSymbol) return ednErrAt(r, iStart, "invalid symbol %.*s", n, z + iStart);
    if (zWhy) return ednErrAt(r, iStart, "invalid symbol %.*s: %s", n, z + iStart, zWhy);
    pV = ednNewString(r->pArena, EDN_SYMBOL, (const char *)z + iStart, n);
    if (pV == NULL) return ednNoMem(r);
    *pp = pV;
  }
  if (rc == SQLITE_OK) {
    r->i = iEnd;
    r->nCont += nCont;
  }
  return rc;
}

/* A string literal at r->i (the opening quote). */
static int ednReadString(EdnReader *r, EdnValue **pp) {
  const unsigned char *z = r->z;
  int iOpen = r->i, j = iOpen + 1, iEnd, k = 0;
  char *zOut;
  EdnValue *pV;
  /* Pass 1: find the closing quote. */
  while (j < r->n && z[j] != '"') j += (z[j] == '\\') ? 2 : 1;
  if (j >= r->n) return ednErrAt(r, iOpen, "unterminated string");
  iEnd = j;
  zOut = ednArenaAlloc(r->pArena, (size_t)(iEnd - iOpen));
  if (zOut == NULL) return ednNoMem(r);
  /* Pass 2: decode, validating UTF-8 and escapes, tracking lines. */
  j = iOpen + 1;
  while (j < iEnd) {
    unsigned char c = z[j];
    if (c == '\\') {
      unsigned char e = z[j + 1];
      switch (e) {
        case 't': zOut[k++] = '\t'; j += 2; break;
        case 'r': zOut[k++] = '\r'; j += 2; break;
        case 'n': zOut[k++] = '\n'; j += 2; break;
        case 'b': zOut[k++] = '\b'; j += 2; break;
        case 'f': zOut[k++] = '\f'; j += 2; break;
        case '\\': zOut[k++] = '\\'; j += 2; break;
        case '"': zOut[k++] = '"'; j += 2; break;
        case 'u': {
          int cp = j + 6 <= iEnd ? ednHex4(z + j + 2) : -1;
          if (cp < 0) return ednErrAt(r, j, "invalid \\u escape in string (4 hex digits expected)");
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return ednErrAt(r, j, "lone surrogate \\u%04X in string", cp);
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            int lo = (j + 12 <= iEnd && z[j + 6] == '\\' && z[j + 7] == 'u') ? ednHex4(z + j + 8) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF) {
              return ednErrAt(r, j, "lone surrogate \\u%04X in string", cp);
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            j += 6;
          }
          j += 6;
          k += ednUtf8Encode((unsigned)cp, zOut + k);
          break;
        }
        default:
          if (e >= 0x80 || e < 0x20) return ednErrAt(r, j, "invalid escape in string");
          return ednErrAt(r, j, "invalid escape \\%c in string", e);
      }
    } else if (c < 0x80) {
      if (c == '\n') { r->line++; r->iLineStart = j + 1; r->nCont = 0; }
      zOut[k++] = (char)c;
      j++;
    } else {
      int L = ednUtf8Len(z, iEnd, j);
      if (L == 0) return ednErrAt(r, j, "invalid UTF-8 in string");
      memcpy(zOut + k, z + j, (size_t)L);
      k += L;
      j += L;
      r->nCont += L - 1;
    }
  }
  zOut[k] = 0;
  pV = ednNew(r->pArena, EDN_STRING);
  if (pV == NULL) return ednNoMem(r);
  pV->u.s.z = zOut;
  pV->u.s.n = k;
  r->i = iEnd + 1;
  *pp = pV;
  return SQLITE_OK;
}

/* A character literal at r->i (the backslash): \c, a named character, \uXXXX
** or one multibyte UTF-8 character. */
static int ednReadChar(EdnReader *r, EdnValue **pp) {
  static const struct { const char *zName; int cp; } aName[] = {
    {"newline", '\n'}, {"space", ' '}, {"tab", '\t'}, {"return", '\r'},
    {"backspace", '\b'}, {"formfeed", '\f'},
  };
  const unsigned char *z = r->z;
  int iStart = r->i, j = iStart + 1, L, cp, iEnd, nCont = 0;
  EdnValue *pV;
  if (j >= r->n) return ednErrAt(r, iStart, "backslash at end of input");
  if ((aEdnClass[z[j]] & CC_WS) && z[j] != ',') {   /* \, is the comma character */
    return ednErrAt(r, iStart, "a backslash followed by whitespace is not a character");
  }
  if (z[j] == 0) return ednErrAt(r, j, "NUL byte outside a string");
  L = ednUtf8Len(z, r->n, j);
  if (L == 0) return ednErrAt(r, j, "invalid UTF-8");
  cp = ednUtf8Decode(z + j, L);
  nCont = L - 1;
  iEnd = j + L;
  if (L == 1 && (aEdnClass[z[j]] & CC_SYM)) {
    /* A name such as newline or u00E9 continues while constituents follow. */
    while (iEnd < r->n && (aEdnClass[z[iEnd]] & CC_SYM) && z[iEnd] < 0x80) iEnd++;
  }
  if (L == 1 && iEnd - j > 1) {
    int nName = iEnd - j, k;
    cp = -1;
    for (k = 0; k < (int)(sizeof(aName) / sizeof(aName[0])); k++) {
      if ((int)strlen(aName[k].zName) == nName && memcmp(aName[k].zName, z + j, (size_t)nName) == 0) {
        cp = aName[k].cp;
      }
    }
    if (cp < 0 && nName == 5 && z[j] == 'u') {
      cp = ednHex4(z + j + 1);
      if (cp >= 0xD800 && cp <= 0xDFFF) {
        return ednErrAt(r, iStart, "invalid character \\%.*s (a surrogate)", nName, z + j);
      }
    }
    if (cp < 0) return ednErrAt(r, iStart, "unsupported character \\%.*s", nName, z + j);
  }
  if (iEnd < r->n && !(aEdnClass[z[iEnd]] & CC_DELIM)) {
    if (z[iEnd] == 0) return ednErrAt(r, iEnd, "NUL byte outside a string");
    return ednErrAt(r, iStart, "invalid character literal");
  }
  pV = ednNew(r->pArena, EDN_CHAR);
  if (pV == NULL) return ednNoMem(r);
  pV->u.i = cp;
  r->i = iEnd;
  r->nCont += nCont;
  *pp = pV;
  return SQLITE_OK;
}

/* Reports a duplicate map key or set element, naming it in EDN (long
** values are cut at 100 bytes so the message fits EdnError.zMsg). */
static int ednDupError(EdnReader *r, const EdnValue *pDup, int bMap) {
  sqlite3_str *pStr = sqlite3_str_new(NULL);
  char *zText;
  ednPrint(pStr, pDup);
  zText = sqlite3_str_finish(pStr);
  if (zText == NULL) return ednNoMem(r);
  r->pErr->line = pDup->line;
  r->pErr->col = pDup->col;
  sqlite3_snprintf((int)sizeof(r->pErr->zMsg), r->pErr->zMsg, "duplicate %s %.100s%s in %s",
                   bMap ? "key" : "element", zText, strlen(zText) > 100 ? "..." : "",
                   bMap ? "map" : "set");
  sqlite3_free(zText);
  return SQLITE_ERROR;
}

/* ---- collections, dispatch, forms ---- */

static const char *ednCollName(EdnType t) {
  switch (t) {
    case EDN_LIST: return "list";
    case EDN_VECTOR: return "vector";
    case EDN_MAP: return "map";
    default: return "set";
  }
}

/* A collection whose opening bracket (1 or 2 bytes) starts at r->i. */
static int ednReadColl(EdnReader *r, int depth, int bDiscard, EdnType type, EdnValue **pp) {
  int iOpen = r->i, line = r->line, col = ednCol(r), base = r->nStack, rc, nChild, iDup;
  char cClose = type == EDN_LIST ? ')' : type == EDN_VECTOR ? ']' : '}';
  EdnValue *pV;
  if (depth >= EDN_MAX_DEPTH) {
    return ednErrAt(r, iOpen, "nesting too deep (limit %d)", EDN_MAX_DEPTH);
  }
  r->i += type == EDN_SET ? 2 : 1;
  for (;;) {
    EdnValue *pChild = NULL;
    if (configPoll(&r->poll)) return SQLITE_INTERRUPT;
    rc = ednReadForm(r, depth + 1, bDiscard, &pChild);
    if (rc) return rc;
    if (pChild == NULL) break;
    rc = ednPush(r, pChild);
    if (rc) return rc;
  }
  if (r->i >= r->n) return ednErrAt(r, iOpen, "unterminated %s", ednCollName(type));
  if (r->z[r->i] != (unsigned char)cClose) {
    return ednErrAt(r, r->i, "unexpected %c (the %s opened at line %d col %d is not closed)",
                    r->z[r->i], ednCollName(type), line, col);
  }
  r->i++;
  nChild = r->nStack - base;
  if (type == EDN_MAP && (nChild & 1)) {
    return ednErrAt(r, iOpen, "map literal has an odd number of forms (%d)", nChild);
  }
  pV = ednNewColl(r->pArena, type, nChild);
  if (pV == NULL) return ednNoMem(r);
  if (nChild) memcpy(pV->u.c.a, r->aStack + base, sizeof(EdnValue *) * (size_t)nChild);
  r->nStack = base;
  pV->line = line;
  pV->col = col;
  if (!bDiscard && (type == EDN_MAP || type == EDN_SET) && nChild > 1) {
    rc = ednFindDup(pV->u.c.a, nChild, type == EDN_MAP ? 2 : 1, &iDup);
    if (rc) return ednNoMem(r);
    if (iDup >= 0) {
      return ednDupError(r, pV->u.c.a[iDup], type == EDN_MAP);
    }
  }
  *pp = pV;
  return SQLITE_OK;
}

/* #bytes "hex": replaces *ppInner (the hex string) by a string node holding
** the decoded bytes, so the value bridge and the printers never see hex
** (edn.h). An odd count or a non-hex digit is an error. */
static int ednDecodeBytes(EdnReader *r, int iHash, EdnValue **ppInner) {
  const EdnValue *pHex = *ppInner;
  EdnValue *pRaw;
  char *zRaw;
  int k;
  if (pHex->type != EDN_STRING) return ednErrAt(r, iHash, "#bytes needs a string of hex digits");
  if (pHex->u.s.n & 1) {
    r->pErr->line = pHex->line;
    r->pErr->col = pHex->col;
    sqlite3_snprintf((int)sizeof(r->pErr->zMsg), r->pErr->zMsg,
                     "invalid #bytes: an even number of hex digits is needed");
    return SQLITE_ERROR;
  }
  zRaw = ednArenaAlloc(r->pArena, (size_t)pHex->u.s.n / 2 + 1);
  pRaw = ednNew(r->pArena, EDN_STRING);
  if (zRaw == NULL || pRaw == NULL) return ednNoMem(r);
  for (k = 0; k < pHex->u.s.n; k += 2) {
    int hi = ednHexDigit((unsigned char)pHex->u.s.z[k]);
    int lo = ednHexDigit((unsigned char)pHex->u.s.z[k + 1]);
    if (hi < 0 || lo < 0) {
      r->pErr->line = pHex->line;
      r->pErr->col = pHex->col;
      sqlite3_snprintf((int)sizeof(r->pErr->zMsg), r->pErr->zMsg,
                       "invalid #bytes: \"%.60s\" is not hex", pHex->u.s.z);
      return SQLITE_ERROR;
    }
    zRaw[k / 2] = (char)(hi << 4 | lo);
  }
  zRaw[pHex->u.s.n / 2] = 0;
  pRaw->u.s.z = zRaw;
  pRaw->u.s.n = pHex->u.s.n / 2;
  pRaw->line = pHex->line;
  pRaw->col = pHex->col;
  *ppInner = pRaw;
  return SQLITE_OK;
}

/* #tag value: #inst and #uuid become EDN_INST / EDN_UUID, others
** EDN_TAGGED. Inside a discard the literal is not validated. */
/* The error for '#' at r->i followed by d, which starts no EDN dispatch
** ({ _ # or a tag's letter): Clojure's reader macros by name (#= would
** evaluate code in Clojure's reader; #? #' #( #"..." #^ #: #! #< are
** Clojure's alone), anything else as a tag that starts with no letter. */
static int ednDispatchErr(EdnReader *r, unsigned char d) {
  static const struct { char c; const char *zWhat; } aMacro[] = {
    { '=', "a Clojure reader macro (read-time eval)" },
    { '?', "a Clojure reader conditional" },
    { '\'', "a Clojure reader macro (var quote)" },
    { '(', "a Clojure reader macro (anonymous function)" },
    { '^', "a Clojure reader macro (metadata)" },
    { ':', "a Clojure namespaced map" },
    { '!', "a Clojure reader macro (comment)" },
    { '<', "a Clojure unreadable form" },
  };
  int i;
  if (d == '"') {
    return ednErrAt(r, r->i, "#\" is a Clojure regular expression literal, not EDN: "
                    "make the pattern with (re-pattern \"...\")");
  }
  for (i = 0; i < (int)(sizeof aMacro / sizeof aMacro[0]); i++) {
    if (aMacro[i].c == (char)d) {
      int bSplice = d == '?' && r->i + 2 < r->n && r->z[r->i + 2] == '@';
      return ednErrAt(r, r->i, "#%c%s is %s, not EDN", d, bSplice ? "@" : "", aMacro[i].zWhat);
    }
  }
  if (aEdnClass[d] & CC_WS) return ednErrAt(r, r->i, "# followed by whitespace is not EDN dispatch");
  if (d < 0x20 || d == 0x7F) {
    return ednErrAt(r, r->i, "# followed by control character 0x%02X is not EDN dispatch", d);
  }
  return ednErrAt(r, r->i, "#%c is not EDN: a tag starts with a letter (#inst, #my/tag)", d);
}

static int ednReadTagged(EdnReader *r, int depth, int bDiscard, EdnValue **pp) {
  int iHash = r->i, iEnd, nCont, rc, nTag;
  const char *zWhy;
  EdnValue *pInner = NULL, *pV;
  if (depth >= EDN_MAX_DEPTH) {
    return ednErrAt(r, iHash, "nesting too deep (limit %d)", EDN_MAX_DEPTH);
  }
  rc = ednScanToken(r, iHash + 1, &iEnd, &nCont);
  if (rc) return rc;
  nTag = iEnd - iHash - 1;
  zWhy = ednSymbolProblem(r->z + iHash + 1, nTag, 0);
  if (zWhy) return ednErrAt(r, iHash, "invalid tag #%.*s: %s", nTag, r->z + iHash + 1, zWhy);
  r->i = iEnd;
  r->nCont += nCont;
  rc = ednReadForm(r, depth + 1, bDiscard, &pInner);
  if (rc) return rc;
  if (pInner == NULL) return ednErrAt(r, iHash, "tag #%.*s has no value", nTag, r->z + iHash + 1);
  if (!bDiscard && nTag == 4 && memcmp(r->z + iHash + 1, "inst", 4) == 0) {
    sqlite3_int64 us;
    if (pInner->type != EDN_STRING) return ednErrAt(r, iHash, "#inst needs a string");
    if (ednParseInstant(pInner->u.s.z, pInner->u.s.n, &us)) {
      r->pErr->line = pInner->line;
      r->pErr->col = pInner->col;
      sqlite3_snprintf((int)sizeof(r->pErr->zMsg), r->pErr->zMsg,
                       "invalid #inst \"%.100s\" (expected RFC 3339, e.g. 2018-01-01T11:00:00Z)",
                       pInner->u.s.z);
      return SQLITE_ERROR;
    }
    if ((pV = ednNew(r->pArena, EDN_INST)) == NULL) return ednNoMem(r);
    pV->u.i = us;
  } else if (!bDiscard && nTag == 4 && memcmp(r->z + iHash + 1, "uuid", 4) == 0) {
    if (pInner->type != EDN_STRING) return ednErrAt(r, iHash, "#uuid needs a string");
    if ((pV = ednNew(r->pArena, EDN_UUID)) == NULL) return ednNoMem(r);
    if (ednParseUuid(pInner->u.s.z, pInner->u.s.n, pV->u.uuid)) {
      r->pErr->line = pInner->line;
      r->pErr->col = pInner->col;
      sqlite3_snprintf((int)sizeof(r->pErr->zMsg), r->pErr->zMsg,
                       "invalid #uuid \"%.100s\"", pInner->u.s.z);
      return SQLITE_ERROR;
    }
  } else {
    if (!bDiscard && nTag == 5 && memcmp(r->z + iHash + 1, "bytes", 5) == 0) {
      rc = ednDecodeBytes(r, iHash, &pInner);
      if (rc) return rc;
    }
    if ((pV = ednNew(r->pArena, EDN_TAGGED)) == NULL) return ednNoMem(r);
    pV->u.t.zTag = ednArenaStrdup(r->pArena, (const char *)r->z + iHash + 1, nTag);
    if (pV->u.t.zTag == NULL) return ednNoMem(r);
    pV->u.t.p = pInner;
  }
  *pp = pV;
  return SQLITE_OK;
}

/* ##Inf, ##-Inf, ##NaN. */
static int ednReadSymbolic(EdnReader *r, EdnValue **pp) {
  int iStart = r->i, iEnd, nCont, rc, n;
  double d;
  rc = ednScanToken(r, iStart + 2, &iEnd, &nCont);
  if (rc) return rc;
  n = iEnd - iStart - 2;
  if (n == 3 && memcmp(r->z + iStart + 2, "Inf", 3) == 0) d = HUGE_VAL;
  else if (n == 4 && memcmp(r->z + iStart + 2, "-Inf", 4) == 0) d = -HUGE_VAL;
  else if (n == 3 && memcmp(r->z + iStart + 2, "NaN", 3) == 0) d = NAN;
  else return ednErrAt(r, iStart, "unknown symbolic value ##%.*s", n, r->z + iStart + 2);
  if ((*pp = ednNew(r->pArena, EDN_DOUBLE)) == NULL) return ednNoMem(r);
  (*pp)->u.d = d;
  r->i = iEnd;
  r->nCont += nCont;
  return SQLITE_OK;
}

/* Reads the next form at nesting level `depth`. At the end of input or a
** closing bracket it sets *pp = NULL and leaves r->i there for the caller.
** #_ discards are consumed here (each adds one level while it reads). */
static int ednReadForm(EdnReader *r, int depth, int bDiscard, EdnValue **pp) {
  const unsigned char *z = r->z;
  int rc, line, col;
  *pp = NULL;
  for (;;) {
    unsigned char c;
    rc = ednSkipSpace(r);
    if (rc) return rc;
    if (r->i >= r->n) return SQLITE_OK;
    c = z[r->i];
    line = r->line;
    col = ednCol(r);
    switch (c) {
      case ')': case ']': case '}':
        return SQLITE_OK;
      case '(': rc = ednReadColl(r, depth, bDiscard, EDN_LIST, pp); break;
      case '[': rc = ednReadColl(r, depth, bDiscard, EDN_VECTOR, pp); break;
      case '{': rc = ednReadColl(r, depth, bDiscard, EDN_MAP, pp); break;
      case '"': rc = ednReadString(r, pp); break;
      case '\\': rc = ednReadChar(r, pp); break;
      case 0: return ednErrAt(r, r->i, "NUL byte outside a string");
      case '#': {
        unsigned char d = r->i + 1 < r->n ? z[r->i + 1] : 0;
        if (d == '{') {
          rc = ednReadColl(r, depth, bDiscard, EDN_SET, pp);
        } else if (d == '_') {
          int iDisc = r->i;
          EdnValue *pDrop = NULL;
          if (depth >= EDN_MAX_DEPTH) {
            return ednErrAt(r, iDisc, "nesting too deep (limit %d)", EDN_MAX_DEPTH);
          }
          r->i += 2;
          rc = ednReadForm(r, depth + 1, 1, &pDrop);
          if (rc) return rc;
          if (pDrop == NULL) return ednErrAt(r, iDisc, "#_ with nothing to discard");
          continue;
        } else if (d == '#') {
          rc = ednReadSymbolic(r, pp);
        } else if (r->i + 1 < r->n && ((d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') || d >= 0x80)) {
          /* edn-format: "# followed immediately by a symbol starting with
          ** an alphabetic character indicates that that symbol is a tag" */
          rc = ednReadTagged(r, depth, bDiscard, pp);
        } else if (r->i + 1 >= r->n) {
          return ednErrAt(r, r->i, "# at end of input");
        } else if (d == 0) {
          return ednErrAt(r, r->i + 1, "NUL byte outside a string");
        } else {
          return ednDispatchErr(r, d);
        }
        break;
      }
      default:
        if (aEdnClass[c] & CC_SYM) {
          rc = ednReadToken(r, pp);
        } else if (c < 0x20 || c == 0x7F) {
          return ednErrAt(r, r->i, "unexpected control character 0x%02X", c);
        } else {
          return ednErrAt(r, r->i, "unexpected character '%c'", c);
        }
        break;
    }
    if (rc) return rc;
    if ((*pp)->line == 0) {   /* collections set their own (opening) position */
      (*pp)->line = line;
      (*pp)->col = col;
    }
    return SQLITE_OK;
  }
}

int ednReadAll(EdnArena *pArena, const char *z, int n,
               EdnValue ***paForm, int *pnForm, EdnError *pErr) {
  EdnReader r;
  int rc = SQLITE_OK;
  EdnValue **aForm = NULL;
  memset(&r, 0, sizeof(r));
  memset(pErr, 0, sizeof(*pErr));
  *paForm = NULL;
  *pnForm = 0;
  if (z == NULL) n = 0;
  else if (n < 0) n = (int)strlen(z);
  r.z = (const unsigned char *)z;
  r.n = n;
  r.line = 1;
  r.pArena = pArena;
  r.pErr = pErr;
  /* A UTF-8 byte order mark is not part of the text. */
  if (n >= 3 && memcmp(z, "\xEF\xBB\xBF", 3) == 0) { r.i = r.iBody = r.iLineStart = 3; }
  for (;;) {
    EdnValue *pForm = NULL;
    rc = ednReadForm(&r, 0, 0, &pForm);
    if (rc) goto cleanup;
    if (pForm == NULL) {
      if (r.i < r.n) {
        rc = ednErrAt(&r, r.i, "unexpected %c", r.z[r.i]);
        goto cleanup;
      }
      break;
    }
    rc = ednPush(&r, pForm);
    if (rc) goto cleanup;
  }
  aForm = ednArenaAlloc(pArena, sizeof(EdnValue *) * (size_t)(r.nStack ? r.nStack : 1));
  if (aForm == NULL) { rc = ednNoMem(&r); goto cleanup; }
  if (r.nStack) memcpy(aForm, r.aStack, sizeof(EdnValue *) * (size_t)r.nStack);
  *paForm = aForm;
  *pnForm = r.nStack;
cleanup:
  sqlite3_free(r.aStack);
  return rc;
}

int ednReadOne(EdnArena *pArena, const char *z, int n,
               EdnValue **ppForm, EdnError *pErr) {
  EdnValue **aForm = NULL;
  int nForm = 0, rc;
  *ppForm = NULL;
  rc = ednReadAll(pArena, z, n, &aForm, &nForm, pErr);
  if (rc) return rc;
  if (nForm == 0) {
    pErr->line = 1;
    pErr->col = 1;
    sqlite3_snprintf((int)sizeof(pErr->zMsg), pErr->zMsg, "no EDN form in input");
    return SQLITE_ERROR;
  }
  if (nForm > 1) {
    pErr->line = aForm[1]->line;
    pErr->col = aForm[1]->col;
    sqlite3_snprintf((int)sizeof(pErr->zMsg), pErr->zMsg,
                     "expected one EDN form, found another after it");
    return SQLITE_ERROR;
  }
  *ppForm = aForm[0];
  return SQLITE_OK;
}
