/*
** query_funcs_coll.c — values as collections at run time: mentat_json (a
** stored value as a JSON element, for tuple), mentat_set_key (equality
** under Clojure's = for count-distinct), mentat_agg_json (distinct,
** (min n), (max n), sample and rand n as JSON arrays), mentat_rand_one
** ((rand ?x), one value) and the mentat_kw
** collation (keywords in Clojure's compare order). Takes SQL values and
** value tags; gives JSON text, BLOB keys or an order. Calls SQLite and the
** value printer.
*/
#include <string.h>
#include <stdlib.h>
#include "query_funcs.h"

/* mentat_json(v, tag): a stored value as JSON (subtype J), for tuple. */
void qfJson(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
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

/* mentat_set_key(v, tag): a BLOB equal for two values exactly when they
** are equal under Clojure's = (count-distinct over values of unknown type):
** the tag, a ref's read as a long's (a ref value is its entity id), the
** storage class (1 is not 1.0), then the value's bytes (-0.0 as 0.0, which
** Clojure's = makes equal). NULL gives NULL. */
void qfSetKey(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
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

/* mentat_agg_json(mode, v, tag [, n]), an aggregate:
**   mode -1: (distinct ?x), the set of values as a JSON array;
**   mode 1/2: (min n ?x) / (max n ?x), the n smallest / largest of the bag
**             (a value repeats as often as its rows: :with);
**   mode 3: (sample n ?x), n distinct values chosen at random;
**   mode 4: (rand n ?x), n values drawn with replacement from the bag
**           (Datomic's rand may repeat a value). */
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

void qfValsStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  QfVals *p = sqlite3_aggregate_context(pCtx, sizeof(QfVals));
  if (p == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  p->iMode = sqlite3_value_int(argv[0]);
  p->nWant = argc > 3 ? sqlite3_value_int64(argv[3]) : -1;
  if (p->bOom) return;     /* a NULL is nil, a value of the bag */
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

/* The next UTF-16 code unit of the UTF-8 text z[*pi..n): a supplementary
** character gives its high surrogate, then (*pLow, kept for the next call)
** its low one, as Java's String holds it; a byte that starts no valid
** sequence counts as itself. */
static unsigned qfUtf16Next(const unsigned char *z, int n, int *pi, unsigned *pLow) {
  unsigned cp;
  int L;
  if (*pLow) {
    cp = *pLow;
    *pLow = 0;
    return cp;
  }
  L = ednUtf8Len(z, n, *pi);
  if (L <= 0) return z[(*pi)++];
  cp = (unsigned)ednUtf8Decode(z + *pi, L);
  *pi += L;
  if (cp < 0x10000) return cp;
  cp -= 0x10000;
  *pLow = 0xDC00 + (cp & 0x3FF);
  return 0xD800 + (cp >> 10);
}

int qfJavaStrCmp(const char *x, int nx, const char *y, int ny) {
  const unsigned char *a = (const unsigned char*)x, *b = (const unsigned char*)y;
  int i = 0, j = 0, lenA = 0, lenB = 0;
  unsigned lowA = 0, lowB = 0;
  while ((i < nx || lowA) && (j < ny || lowB)) {
    unsigned ca = qfUtf16Next(a, nx, &i, &lowA), cb = qfUtf16Next(b, ny, &j, &lowB);
    if (ca != cb) return (int)ca - (int)cb;
  }
  /* equal up to the shorter: the difference of the lengths in UTF-16
  ** units (only the rest of each needs counting) */
  while (i < nx || lowA) { qfUtf16Next(a, nx, &i, &lowA); lenA++; }
  while (j < ny || lowB) { qfUtf16Next(b, ny, &j, &lowB); lenB++; }
  return lenA - lenB;
}

/* Clojure's compare of two keywords given as their texts (":ns/name",
** ":name"), as Keyword.compareTo -> Symbol.compareTo: a keyword without
** namespace first, then namespace, then name (so :ns/z < :ns-/a, while
** bytewise ":ns/" > ":ns-"), each part by String.compareTo (qfJavaStrCmp:
** its value, not only its sign, is compare's answer). The namespace ends
** at the first '/' (as Symbol.intern splits it). */
int qfKeywordCmp(const char *x, int nx, const char *y, int ny) {
  const char *sx, *sy;
  int nsx = -1, nsy = -1, c;
  if (nx == ny && memcmp(x, y, (size_t)nx) == 0) return 0;
  x++; nx--; y++; ny--;                /* past the ':' */
  sx = nx > 1 ? memchr(x, '/', (size_t)nx) : NULL;
  sy = ny > 1 ? memchr(y, '/', (size_t)ny) : NULL;
  if (sx && sx > x) nsx = (int)(sx - x);
  if (sy && sy > y) nsy = (int)(sy - y);
  if ((nsx < 0) != (nsy < 0)) return nsx < 0 ? -1 : 1;
  if (nsx >= 0) {
    c = qfJavaStrCmp(x, nsx, y, nsy);
    if (c) return c;
    x += nsx + 1; nx -= nsx + 1;
    y += nsy + 1; ny -= nsy + 1;
  }
  return qfJavaStrCmp(x, nx, y, ny);
}

/* mentat_compare_text(x, y, kw): Clojure's compare of two strings
** (String.compareTo: the difference of the first differing UTF-16 code
** units, else of the lengths) or, kw 1, of two keywords; NULL when either
** is NULL (the caller orders nil itself). */
void qfCompareText(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const char *x = (const char*)sqlite3_value_text(argv[0]);
  const char *y = (const char*)sqlite3_value_text(argv[1]);
  int nx, ny;
  (void)argc;
  if (x == NULL || y == NULL) return;
  nx = sqlite3_value_bytes(argv[0]);
  ny = sqlite3_value_bytes(argv[1]);
  sqlite3_result_int(pCtx, sqlite3_value_int(argv[2]) && nx > 1 && ny > 1 && x[0] == ':' && y[0] == ':'
                               ? qfKeywordCmp(x, nx, y, ny) : qfJavaStrCmp(x, nx, y, ny));
}

/* A byte of UTF-8 as it orders under UTF-16: the lead bytes of U+E000..
** U+FFFF (EE, EF) moved above those of the supplementary characters (F0..
** F4), to F5 and F6, which UTF-8 never uses. */
#define QF_U16_BYTE(c) ((c) == 0xEE || (c) == 0xEF ? (c) + 7 : (c))

/* The sign of Java's String.compareTo of two UTF-8 texts, as fast as
** memcmp: bytes compare as code points do except that a character in
** U+E000..U+FFFF is above every supplementary one (whose high surrogate,
** D800..DBFF, is below it in UTF-16). The first differing bytes of valid
** UTF-8 are at one place of a character in both (the same bytes before),
** so moving the two lead bytes is the whole difference; a continuation
** byte is never EE or EF. qfJavaStrCmp gives compare's value. */
int qfStr16Cmp(const void *x, int nx, const void *y, int ny) {
  const unsigned char *a = x, *b = y;
  int n = nx < ny ? nx : ny, i = 0;
  while (i < n && a[i] == b[i]) i++;
  if (i < n) return QF_U16_BYTE(a[i]) - QF_U16_BYTE(b[i]);
  return nx - ny;
}

/* The mentat_utf16 collation: strings in String.compareTo's order, for
** <, <=, >, >=, min, max and :order over strings (SQLite's BINARY is code
** point order). */
int qfCollateUtf16(void *pArg, int nx, const void *x, int ny, const void *y) {
  (void)pArg;
  return qfStr16Cmp(x, nx, y, ny);
}

/* The length of the part of text z (n bytes) before its first character
** at U+E000 or above (a lead byte EE..F4 or any byte past them), n when
** it has none: the strings that share those bytes with z are the only
** ones whose order against z may differ between UTF-16 and code points. */
int qfUtf16Plain(const unsigned char *z, int n) {
  int i = 0;
  while (i < n && z[i] < 0xEE) i++;
  return i;
}

/* mentat_utf16_lo(x) and mentat_utf16_hi(x): bounds in SQLite's BINARY
** order that hold wherever String.compareTo's order does, so that an
** index on a string column still gives the range: y > x (UTF-16) implies
** y > lo(x), and y < x implies y < hi(x) (BINARY), the same for >= and
** <=. For text with no character at U+E000 or above, both are x itself
** (the orders agree on it); else lo is its part before that character
** (qfUtf16Plain) and hi that part followed by FF, above every text that
** starts with it. Anything else comes back as it is. */
static void qfUtf16Bound(sqlite3_context *pCtx, sqlite3_value *pV, int bHi) {
  const unsigned char *z;
  char *zOut;
  int n, k;
  if (sqlite3_value_type(pV) != SQLITE_TEXT) {
    sqlite3_result_value(pCtx, pV);
    return;
  }
  z = sqlite3_value_text(pV);
  n = sqlite3_value_bytes(pV);
  if (z == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  k = qfUtf16Plain(z, n);
  if (k == n) { sqlite3_result_value(pCtx, pV); return; }
  zOut = sqlite3_malloc(k + 2);
  if (zOut == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  memcpy(zOut, z, (size_t)k);
  if (bHi) zOut[k++] = (char)0xFF;
  zOut[k] = 0;
  sqlite3_result_text(pCtx, zOut, k, sqlite3_free);
}

/* mentat_utf16_plain(x): 1 unless x is text with a character at U+E000 or
** above, when its order against any text is the same in UTF-16 as in
** BINARY (code points), so the collation need not be asked. */
void qfUtf16IsPlain(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const unsigned char *z;
  int n;
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_TEXT) { sqlite3_result_int(pCtx, 1); return; }
  z = sqlite3_value_text(argv[0]);
  n = sqlite3_value_bytes(argv[0]);
  if (z == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  sqlite3_result_int(pCtx, qfUtf16Plain(z, n) == n);
}

void qfUtf16Lo(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  qfUtf16Bound(pCtx, argv[0], 0);
}

void qfUtf16Hi(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  qfUtf16Bound(pCtx, argv[0], 1);
}

/* The mentat_kw collation: keyword order for texts that both look like
** keywords, String.compareTo's otherwise. A column of keywords uses it for
** min, max and :order; so does one of unknown type (its tag is not seen
** here), where two strings that both start with ':' compare as keywords. */
int qfCollateKw(void *pArg, int nx, const void *x, int ny, const void *y) {
  (void)pArg;
  if (nx > 1 && ny > 1 && ((const char*)x)[0] == ':' && ((const char*)y)[0] == ':') {
    return qfKeywordCmp(x, nx, y, ny);
  }
  return qfStr16Cmp(x, nx, y, ny);
}

/* Clojure's compare of two uuids given as their 16 bytes: java.util.UUID's
** compareTo, which compares the most significant 64 bits as a signed long,
** then the least significant ones (JDK-7025832: kept signed so that sort
** orders stay stable across Java versions), so 8000... sorts before
** 0000.... The store's BLOBs compare unsigned: the sign bit of each half
** flipped makes memcmp give Java's order (qfUuidOrd). */
int qfUuidCmp(const unsigned char *x, const unsigned char *y) {
  int i;
  for (i = 0; i < 16; i++) {
    unsigned a = x[i], b = y[i];
    if (i == 0 || i == 8) { a ^= 0x80; b ^= 0x80; }
    if (a != b) return a < b ? -1 : 1;
  }
  return 0;
}

/* mentat_uuid_ord(x): a 16-byte BLOB (a uuid: the compiler calls it on
** uuid values only) with the top bit of each 8-byte half flipped, so that
** SQLite's BLOB order of the results is Java's UUID order; the flip is its
** own inverse (mentat_uuid_ord(max(mentat_uuid_ord(v))) is the greatest v).
** Any other value comes back as it is. */
void qfUuidOrd(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  unsigned char a[16];
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB || sqlite3_value_bytes(argv[0]) != 16) {
    sqlite3_result_value(pCtx, argv[0]);
    return;
  }
  memcpy(a, sqlite3_value_blob(argv[0]), 16);
  a[0] ^= 0x80;
  a[8] ^= 0x80;
  sqlite3_result_blob(pCtx, a, 16, SQLITE_TRANSIENT);
}

/* Appends the text z (n bytes of UTF-8, as a tuple's encoding holds it)
** with its bytes as they order under UTF-16 (QF_U16_BYTE), so that the
** key's string and keyword elements order as String.compareTo; the
** escapes of the encoding (00 xx) keep their bytes. */
static void qfTupleText16(sqlite3_str *pOut, const unsigned char *z, int n) {
  int i, k = qfUtf16Plain(z, n);
  sqlite3_str_append(pOut, (const char *)z, k);
  for (i = k; i < n; i++) sqlite3_str_appendchar(pOut, 1, (char)QF_U16_BYTE(z[i]));
}

/* Appends to pOut the order key of the tuple encoding z (value.h): the
** encoding with each uuid element's halves sign-flipped (Java's UUID
** order, as qfUuidOrd) and each keyword element rewritten so bytes order
** it as Clojure's compare does (a marker 01 without a namespace, 02 with
** one, then the namespace, 00 02, the name: no namespace first, then by
** namespace, then by name), strings and keywords' bytes in UTF-16's order
** (qfTupleText16). memcmp of keys is then Datomic's tuple order.
** 0 when z is no well-formed encoding. */
static int qfTupleKey(const unsigned char *z, int n, sqlite3_str *pOut) {
  int i = 0;
  while (i < n) {
    unsigned char h = z[i++];
    sqlite3_str_appendchar(pOut, 1, (char)h);
    switch (h) {
      case VTUP_END: return i == n;
      case VTUP_NIL: break;
      case VTUP_BOOLEAN: case VTUP_INSTANT: case VTUP_LONG: case VTUP_DOUBLE: {
        int w = h == VTUP_BOOLEAN ? 1 : 8;
        if (i + w > n) return 0;
        sqlite3_str_append(pOut, (const char *)z + i, w);
        i += w;
        break;
      }
      case VTUP_UUID: {
        unsigned char a[16];
        if (i + 16 > n) return 0;
        memcpy(a, z + i, 16);
        a[0] ^= 0x80;
        a[8] ^= 0x80;
        sqlite3_str_append(pOut, (const char *)a, 16);
        i += 16;
        break;
      }
      case VTUP_STRING: case VTUP_KEYWORD: case VTUP_BYTES: {
        int j = i, iSlash = -1, iText = i;
        while (j + 1 < n && !(z[j] == 0 && z[j + 1] == 1)) {
          if (z[j] == '/' && iSlash < 0 && j > iText + (z[iText] == ':')) iSlash = j;
          j += z[j] == 0 ? 2 : 1;
        }
        if (j + 1 >= n) return 0;
        if (h == VTUP_KEYWORD) {
          if (z[iText] == ':') iText++;
          if (iSlash < 0) {
            sqlite3_str_appendchar(pOut, 1, 1);
            qfTupleText16(pOut, z + iText, j - iText);
          } else {
            sqlite3_str_appendchar(pOut, 1, 2);
            qfTupleText16(pOut, z + iText, iSlash - iText);
            sqlite3_str_append(pOut, "\0\2", 2);
            qfTupleText16(pOut, z + iSlash + 1, j - iSlash - 1);
          }
        } else if (h == VTUP_STRING) {
          qfTupleText16(pOut, z + i, j - i);
        } else {
          sqlite3_str_append(pOut, (const char *)z + i, j - i);
        }
        sqlite3_str_append(pOut, "\0\1", 2);
        i = j + 2;
        break;
      }
      default: return 0;
    }
  }
  return 0;
}

/* The argument of mentat_tuple_ord/unord as a tuple's bytes (*pz, *pn): 0
** when it is not a BLOB, which the call then returns as it is. */
static int qfTupleBlobArg(sqlite3_context *pCtx, sqlite3_value *pV, const unsigned char **pz,
                          int *pn) {
  if (sqlite3_value_type(pV) != SQLITE_BLOB) {
    sqlite3_result_value(pCtx, pV);
    return 0;
  }
  *pz = sqlite3_value_blob(pV);
  *pn = sqlite3_value_bytes(pV);
  return 1;
}

/* mentat_tuple_ord(x): for a tuple's encoding (a BLOB), its order key
** (qfTupleKey) followed by the encoding itself, so SQLite's BLOB order of
** the results is Datomic's tuple order with Java's uuid and Clojure's
** keyword order, and mentat_tuple_unord gives the tuple back (min and max
** of keys). Any other value comes back as it is. */
void qfTupleOrd(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const unsigned char *z;
  sqlite3_str *pOut;
  int n, rc;
  (void)argc;
  if (!qfTupleBlobArg(pCtx, argv[0], &z, &n)) return;
  pOut = sqlite3_str_new(NULL);
  if (n == 0 || !qfTupleKey(z, n, pOut)) {
    sqlite3_free(sqlite3_str_finish(pOut));
    sqlite3_result_value(pCtx, argv[0]);
    return;
  }
  sqlite3_str_append(pOut, (const char *)z, n);
  rc = sqlite3_str_errcode(pOut);
  n = sqlite3_str_length(pOut);
  if (rc != SQLITE_OK) {
    sqlite3_free(sqlite3_str_finish(pOut));
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_blob(pCtx, sqlite3_str_finish(pOut), n, sqlite3_free);
}

/* mentat_tuple_unord(k): the tuple whose mentat_tuple_ord key k is (the
** part after the key's end); any other value as it is. */
void qfTupleUnord(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const unsigned char *z;
  int n, i = 0;
  (void)argc;
  if (!qfTupleBlobArg(pCtx, argv[0], &z, &n)) return;
  /* the key's elements: a header, then fixed bytes or text ended by 00 01 */
  while (i < n && z[i] != VTUP_END) {
    unsigned char h = z[i++];
    if (h == VTUP_BOOLEAN) i += 1;
    else if (h == VTUP_INSTANT || h == VTUP_LONG || h == VTUP_DOUBLE) i += 8;
    else if (h == VTUP_UUID) i += 16;
    else if (h == VTUP_STRING || h == VTUP_KEYWORD || h == VTUP_BYTES) {
      while (i + 1 < n && !(z[i] == 0 && z[i + 1] == 1)) i += z[i] == 0 ? 2 : 1;
      i += 2;
    } else if (h != VTUP_NIL) break;
  }
  if (i >= n - 1 || z[i] != VTUP_END) {
    sqlite3_result_value(pCtx, argv[0]);
    return;
  }
  sqlite3_result_blob(pCtx, z + i + 1, n - i - 1, SQLITE_TRANSIENT);
}

/* Two tuple encodings in Datomic's order (their qfTupleKey keys); 2 when
** they do not both parse, or out of memory (the caller falls back to
** memcmp). */
static int qfTupleCmp(const unsigned char *x, int nx, const unsigned char *y, int ny) {
  sqlite3_str *pX = sqlite3_str_new(NULL), *pY = sqlite3_str_new(NULL);
  int c = 2;
  if (qfTupleKey(x, nx, pX) && qfTupleKey(y, ny, pY) && sqlite3_str_errcode(pX) == SQLITE_OK
      && sqlite3_str_errcode(pY) == SQLITE_OK) {
    int n = sqlite3_str_length(pX), m = sqlite3_str_length(pY);
    c = memcmp(sqlite3_str_value(pX), sqlite3_str_value(pY), (size_t)(n < m ? n : m));
    if (c == 0) c = n - m;
    c = c < 0 ? -1 : c > 0;
  }
  sqlite3_free(sqlite3_str_finish(pX));
  sqlite3_free(sqlite3_str_finish(pY));
  return c;
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
  /* nil (NULL) first, as Clojure's compare orders it */
  if (sqlite3_value_type(x) == SQLITE_NULL || sqlite3_value_type(y) == SQLITE_NULL) {
    return (sqlite3_value_type(y) == SQLITE_NULL) - (sqlite3_value_type(x) == SQLITE_NULL);
  }
  if (((const QfVal*)a)->tag == TAG_KEYWORD && ((const QfVal*)b)->tag == TAG_KEYWORD
      && sqlite3_value_type(x) == SQLITE_TEXT && sqlite3_value_type(y) == SQLITE_TEXT) {
    const char *zx = (const char*)sqlite3_value_text(x), *zy = (const char*)sqlite3_value_text(y);
    int nx = sqlite3_value_bytes(x), ny = sqlite3_value_bytes(y);
    if (zx && zy && nx > 1 && ny > 1) return qfKeywordCmp(zx, nx, zy, ny);
  }
  if (((const QfVal*)a)->tag == TAG_UUID && ((const QfVal*)b)->tag == TAG_UUID
      && sqlite3_value_type(x) == SQLITE_BLOB && sqlite3_value_type(y) == SQLITE_BLOB
      && sqlite3_value_bytes(x) == 16 && sqlite3_value_bytes(y) == 16) {
    return qfUuidCmp(sqlite3_value_blob(x), sqlite3_value_blob(y));
  }
  if (((const QfVal*)a)->tag == TAG_TUPLE && ((const QfVal*)b)->tag == TAG_TUPLE
      && sqlite3_value_type(x) == SQLITE_BLOB && sqlite3_value_type(y) == SQLITE_BLOB) {
    int c = qfTupleCmp(sqlite3_value_blob(x), sqlite3_value_bytes(x), sqlite3_value_blob(y),
                       sqlite3_value_bytes(y));
    if (c != 2) return c;
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
    /* texts in String.compareTo's order, blobs by their bytes */
    int c = cx == 2 ? qfStr16Cmp(zx ? zx : "", zx ? n : 0, zy ? zy : "", zy ? m : 0)
                    : memcmp(zx ? zx : "", zy ? zy : "", (size_t)(n < m ? n : m));
    if (c == 0) c = n - m;
    return c ? c : qfSetTagCmp((const QfVal*)a, (const QfVal*)b);
  }
}

void qfValsFinal(sqlite3_context *pCtx) {
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

/* mentat_rand_one(v, k) and mentat_rand_one(v, tag, k), an aggregate:
** (rand ?x), one element of the group's bag at random (reservoir
** sampling: the i-th value replaces the one kept with chance 1/i). k, the
** :find element's index, is not read: it keeps two (rand ?x) of one query
** apart, as SQLite computes an aggregate written twice alike once. With
** the tag the result is the value and its tag packed in one BLOB (a tag
** byte, the storage class, the value's bytes), which mentat_unpack reads:
** the compiler writes the aggregate alike for the value and for the tag,
** so both come from one draw. */
typedef struct QfRandOne {
  sqlite3_value *pV;     /* the value kept, or NULL */
  int tag;
  int bPack;             /* called with the tag */
  int bOom;
  sqlite3_uint64 n;      /* values seen */
} QfRandOne;

void qfRandOneStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  QfRandOne *p = sqlite3_aggregate_context(pCtx, sizeof(QfRandOne));
  if (p == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  p->bPack = argc > 2;
  if (p->bOom) return;     /* a NULL is nil, a value it may draw */
  p->n++;
  if (p->n > 1) {
    sqlite3_uint64 r;
    sqlite3_randomness(sizeof r, &r);
    if (r % p->n != 0) return;
  }
  sqlite3_value_free(p->pV);
  p->pV = sqlite3_value_dup(argv[0]);
  p->tag = p->bPack ? sqlite3_value_int(argv[1]) : 0;
  if (p->pV == NULL) p->bOom = 1;
}

/* The packed form of value pV with tag into a new buffer (*pn bytes), or
** NULL out of memory. */
static unsigned char *qfRandPack(sqlite3_value *pV, int tag, int *pn) {
  int t = sqlite3_value_type(pV), n = 0, i;
  const void *z = NULL;
  unsigned char *a;
  unsigned char aNum[8];
  if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
    sqlite3_uint64 u;
    if (t == SQLITE_INTEGER) {
      u = (sqlite3_uint64)sqlite3_value_int64(pV);
    } else {
      double d = sqlite3_value_double(pV);
      memcpy(&u, &d, sizeof u);
    }
    for (i = 0; i < 8; i++) aNum[i] = (unsigned char)(u >> (56 - 8 * i));
    z = aNum;
    n = 8;
  } else {
    z = t == SQLITE_TEXT ? (const void*)sqlite3_value_text(pV) : sqlite3_value_blob(pV);
    n = sqlite3_value_bytes(pV);
    if (z == NULL && n > 0) return NULL;
  }
  a = sqlite3_malloc(n + 2);
  if (a == NULL) return NULL;
  a[0] = (unsigned char)(signed char)tag;
  a[1] = (unsigned char)t;
  if (n > 0) memcpy(a + 2, z, (size_t)n);
  *pn = n + 2;
  return a;
}

void qfRandOneFinal(sqlite3_context *pCtx) {
  QfRandOne *p = sqlite3_aggregate_context(pCtx, 0);
  if (p == NULL) return;   /* no row: NULL */
  if (p->bOom) {
    sqlite3_result_error_nomem(pCtx);
  } else if (p->pV && !p->bPack) {
    sqlite3_result_value(pCtx, p->pV);
  } else if (p->pV && sqlite3_value_type(p->pV) != SQLITE_NULL) {   /* nil: NULL */
    int n = 0;
    unsigned char *a = qfRandPack(p->pV, p->tag, &n);
    if (a == NULL) sqlite3_result_error_nomem(pCtx);
    else sqlite3_result_blob(pCtx, a, n, sqlite3_free);
  }
  sqlite3_value_free(p->pV);
  p->pV = NULL;
}

/* mentat_unpack(p, 0): the value mentat_rand_one packed into p;
** mentat_unpack(p, 1): its tag. NULL for anything else. */
void qfUnpack(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const unsigned char *a;
  int n, i;
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) return;
  a = sqlite3_value_blob(argv[0]);
  n = sqlite3_value_bytes(argv[0]);
  if (a == NULL || n < 2) return;
  if (sqlite3_value_int(argv[1])) {
    sqlite3_result_int(pCtx, (signed char)a[0]);
    return;
  }
  switch (a[1]) {
    case SQLITE_INTEGER: case SQLITE_FLOAT: {
      sqlite3_uint64 u = 0;
      if (n != 10) return;
      for (i = 0; i < 8; i++) u = (u << 8) | a[2 + i];
      if (a[1] == SQLITE_INTEGER) {
        sqlite3_result_int64(pCtx, (sqlite3_int64)u);
      } else {
        double d;
        memcpy(&d, &u, sizeof d);
        sqlite3_result_double(pCtx, d);
      }
      break;
    }
    case SQLITE_TEXT:
      sqlite3_result_text(pCtx, (const char*)a + 2, n - 2, SQLITE_TRANSIENT);
      break;
    case SQLITE_BLOB:
      sqlite3_result_blob(pCtx, a + 2, n - 2, SQLITE_TRANSIENT);
      break;
    default: break;
  }
}
