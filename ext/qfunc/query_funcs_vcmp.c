/*
** query_funcs_vcmp.c — mentat_compare_coll: Clojure's compare where a side
** is a vector (a tuple's encoding, or a JSON array a query made: ground of
** a nested vector, tuple of a collection, re-find's groups) or nil. Takes
** the two values, their tags and the clause's place; gives compare's
** value, or the ClassCastException Clojure throws as an error there.
**
** Clojure's rules (Util.compare, APersistentVector.compareTo): nil is less
** than anything, nil and nil equal; a vector is ordered by its count first
** (the shorter is less), then element by element, and the first element
** compare that is not 0 is the answer, its value as it is (String.compareTo
** gives a difference, not a sign). Numbers compare by value (a long with a
** double as doubles, Numbers.compare), strings as String.compareTo,
** keywords as Keyword.compareTo, booleans false first, instants by time,
** uuids as UUID.compareTo (signed halves); anything else, or two elements
** of two classes, throws. Not the stored order of tuples (their encoding
** sorts element by element, the value index's order, which :order, min
** and max keep).
*/
#include <stdlib.h>
#include <string.h>
#include "query_funcs.h"

/* One side: an element or a whole value. kind is a tag (TAG_NUMBER for
** longs and doubles, told apart by bDouble), TAG_TUPLE for a tuple's
** encoding (z, n), TAG_JSON for a JSON array (z, n: its text), -9 for a
** JSON object, -8 for nil. Texts point into the caller's values or into
** zOwn. */
typedef struct QfCv {
  int kind;
  int bDouble;
  sqlite3_int64 i;
  double d;
  const char *z;
  int n;
  unsigned char uuid[16];
  char *zOwn;
} QfCv;

#define QFC_NIL (-8)
#define QFC_MAP (-9)

/* The comparison: 0 or the error's message (sqlite3_malloc'd) in *pzErr. */
static int qfcCmp(QfCv *a, QfCv *b, char **pzErr, int *pRc);

static const char *qfcName(const QfCv *p) {
  if (p->kind == TAG_TUPLE || p->kind == TAG_JSON) return ":db.type/tuple";
  if (p->kind == QFC_MAP || p->kind == QF_CMP_MAP) return "map";
  if (p->kind == QF_CMP_SET) return "set";
  if (p->kind == QF_CMP_LIST) return "list";
  if (p->kind == TAG_NUMBER) return p->bDouble ? ":db.type/double" : ":db.type/long";
  return qfTagName(p->kind, SQLITE_TEXT);
}

/* The JSON value at z[i] as a side (a string's escapes decoded into zOwn). */
static int qfcFromJson(const char *z, int n, int i, QfCv *p) {
  memset(p, 0, sizeof *p);
  while (i < n && (z[i] == ' ' || z[i] == '\n' || z[i] == '\t' || z[i] == '\r')) i++;
  if (i >= n) { p->kind = QFC_NIL; return SQLITE_OK; }
  if (z[i] == '"') {
    sqlite3_str *pS = sqlite3_str_new(NULL);
    qfJsonString(z, n, i, pS);
    p->n = sqlite3_str_length(pS);
    if (sqlite3_str_errcode(pS)) { sqlite3_free(sqlite3_str_finish(pS)); return SQLITE_NOMEM; }
    p->zOwn = sqlite3_str_finish(pS);
    p->z = p->zOwn ? p->zOwn : "";
    /* a keyword is JSON text ":ns/name" (SPEC §2.3) */
    p->kind = qfJsonKeyword(p->z, p->n) ? TAG_KEYWORD : TAG_STRING;
    return SQLITE_OK;
  }
  if (z[i] == '[' || z[i] == '{') {
    p->kind = z[i] == '[' ? TAG_JSON : QFC_MAP;
    p->z = z + i;
    p->n = qfJsonSkip(z, n, i) - i;
    return SQLITE_OK;
  }
  if (z[i] == 'n') { p->kind = QFC_NIL; return SQLITE_OK; }
  if (z[i] == 't' || z[i] == 'f') { p->kind = TAG_BOOLEAN; p->i = z[i] == 't'; return SQLITE_OK; }
  {
    int k = qfJsonSkip(z, n, i), j;
    char *zNum = sqlite3_mprintf("%.*s", k - i, z + i);
    if (zNum == NULL) return SQLITE_NOMEM;
    p->kind = TAG_NUMBER;
    for (j = 0; zNum[j]; j++) if (zNum[j] == '.' || zNum[j] == 'e' || zNum[j] == 'E') p->bDouble = 1;
    if (p->bDouble) p->d = strtod(zNum, NULL);
    else p->i = strtoll(zNum, NULL, 10);
    sqlite3_free(zNum);
    return SQLITE_OK;
  }
}

/* A decoded tuple element as a side. */
static void qfcFromTyped(const TypedValue *t, QfCv *p) {
  memset(p, 0, sizeof *p);
  switch (t->type) {
    case VT_NONE: p->kind = QFC_NIL; break;
    case VT_DOUBLE: p->kind = TAG_NUMBER; p->bDouble = 1; p->d = t->d; break;
    case VT_STRING: case VT_KEYWORD: case VT_BYTES:
      p->kind = vtTag(t->type);
      p->z = t->z;
      p->n = t->n;
      break;
    case VT_UUID: p->kind = TAG_UUID; memcpy(p->uuid, t->uuid, 16); break;
    default: p->kind = t->type == VT_REF || t->type == VT_LONG ? TAG_NUMBER : vtTag(t->type);
             p->i = t->i; break;
  }
}

/* The elements of a vector side: a decoded tuple, or the JSON array's
** element offsets. */
typedef struct QfcVec {
  ValueTuple t;
  int bJson, n;
  int *aOff;
} QfcVec;

static int qfcVecOpen(const QfCv *p, QfcVec *pV) {
  memset(pV, 0, sizeof *pV);
  if (p->kind == TAG_TUPLE) return valueTupleDecode(p->z, p->n, &pV->t) ? SQLITE_ERROR : SQLITE_OK;
  {
    int i = 1, nAlloc = 0;
    pV->bJson = 1;
    for (;;) {
      while (i < p->n && strchr(" \t\r\n,", p->z[i])) i++;
      if (i >= p->n || p->z[i] == ']') break;
      if (pV->n == nAlloc) {
        int *aNew = sqlite3_realloc64(pV->aOff, sizeof(int) * (nAlloc = nAlloc ? 2 * nAlloc : 8));
        if (aNew == NULL) return SQLITE_NOMEM;
        pV->aOff = aNew;
      }
      pV->aOff[pV->n++] = i;
      i = qfJsonSkip(p->z, p->n, i);
    }
  }
  return SQLITE_OK;
}

static void qfcVecClose(QfcVec *pV) {
  if (!pV->bJson) valueTupleClear(&pV->t);
  sqlite3_free(pV->aOff);
}

static int qfcVecCount(const QfcVec *pV) {
  return pV->bJson ? pV->n : pV->t.n;
}

static int qfcVecAt(const QfCv *p, const QfcVec *pV, int k, QfCv *pOut) {
  if (pV->bJson) return qfcFromJson(p->z, p->n, pV->aOff[k], pOut);
  qfcFromTyped(&pV->t.a[k], pOut);
  return SQLITE_OK;
}

/* APersistentVector.compareTo: the count, then the elements. */
static int qfcVecCmp(QfCv *a, QfCv *b, char **pzErr, int *pRc) {
  QfcVec va, vb;
  int c = 0, k, na, nb;
  *pRc = qfcVecOpen(a, &va);
  if (*pRc == SQLITE_OK) *pRc = qfcVecOpen(b, &vb);
  else memset(&vb, 0, sizeof vb);
  if (*pRc == SQLITE_OK) {
    na = qfcVecCount(&va);
    nb = qfcVecCount(&vb);
    if (na != nb) c = na < nb ? -1 : 1;
    for (k = 0; c == 0 && k < na && *pRc == SQLITE_OK; k++) {
      QfCv x, y;
      *pRc = qfcVecAt(a, &va, k, &x);
      if (*pRc == SQLITE_OK) *pRc = qfcVecAt(b, &vb, k, &y);
      else memset(&y, 0, sizeof y);
      if (*pRc == SQLITE_OK) c = qfcCmp(&x, &y, pzErr, pRc);
      sqlite3_free(x.zOwn);
      sqlite3_free(y.zOwn);
    }
  }
  qfcVecClose(&va);
  qfcVecClose(&vb);
  return c;
}

static int qfcCmp(QfCv *a, QfCv *b, char **pzErr, int *pRc) {
  int ka = a->kind == TAG_REF ? TAG_NUMBER : a->kind, kb = b->kind == TAG_REF ? TAG_NUMBER : b->kind;
  if (ka == QFC_NIL || kb == QFC_NIL) return ka == kb ? 0 : ka == QFC_NIL ? -1 : 1;
  if (ka == TAG_JSON) ka = TAG_TUPLE;
  if (kb == TAG_JSON) kb = TAG_TUPLE;
  if (ka == QFC_MAP || ka <= QF_CMP_SET || kb == QFC_MAP || kb <= QF_CMP_SET) {
    /* no Comparable: (compare #{1} #{1}) throws, whatever the other side */
    const QfCv *p = ka == QFC_MAP || ka <= QF_CMP_SET ? a : b;
    *pzErr = sqlite3_mprintf("a %s is not comparable (Clojure's compare orders vectors, not sets,"
                             " lists or maps)", qfcName(p));
    *pRc = *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
    return 0;
  }
  if (ka != kb || ka == TAG_BYTES) {
    *pzErr = sqlite3_mprintf("cannot compare a %s with a %s", qfcName(a), qfcName(b));
    *pRc = *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
    return 0;
  }
  switch (ka) {
    case TAG_TUPLE: return qfcVecCmp(a, b, pzErr, pRc);
    case TAG_NUMBER:
      if (a->bDouble || b->bDouble) {
        double x = a->bDouble ? a->d : (double)a->i, y = b->bDouble ? b->d : (double)b->i;
        return x < y ? -1 : x > y;
      }
      return a->i < b->i ? -1 : a->i > b->i;
    case TAG_STRING: return qfJavaStrCmp(a->z, a->n, b->z, b->n);
    case TAG_KEYWORD: return qfKeywordCmp(a->z, a->n, b->z, b->n);
    case TAG_UUID: return qfUuidCmp(a->uuid, b->uuid);
    default: return a->i < b->i ? -1 : a->i > b->i;     /* booleans, instants */
  }
}

/* A whole argument as a side: by its tag (NULL: its storage class). */
static int qfcFromValue(sqlite3_value *pV, sqlite3_value *pTag, QfCv *p) {
  int t = sqlite3_value_type(pV);
  int tag = sqlite3_value_type(pTag) == SQLITE_NULL ? -99 : sqlite3_value_int(pTag);
  memset(p, 0, sizeof *p);
  if (t == SQLITE_NULL) { p->kind = QFC_NIL; return SQLITE_OK; }
  if (tag <= QF_CMP_SET && tag >= QF_CMP_MAP) { p->kind = tag; return SQLITE_OK; }
  if ((tag == TAG_JSON || tag == -99) && t == SQLITE_TEXT) {
    const char *z = (const char *)sqlite3_value_text(pV);
    if (z == NULL) return SQLITE_NOMEM;
    if (tag == TAG_JSON) return qfcFromJson(z, sqlite3_value_bytes(pV), 0, p);
  }
  if (tag == TAG_TUPLE || (tag == -99 && t == SQLITE_BLOB)) {
    p->kind = TAG_TUPLE;
  } else if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
    p->kind = tag == -99 ? TAG_NUMBER : tag;
    p->bDouble = t == SQLITE_FLOAT;
    p->i = sqlite3_value_int64(pV);
    p->d = sqlite3_value_double(pV);
    return SQLITE_OK;
  } else {
    p->kind = tag == -99 ? TAG_STRING : tag;
  }
  p->z = t == SQLITE_BLOB ? (const char *)sqlite3_value_blob(pV) : (const char *)sqlite3_value_text(pV);
  p->n = sqlite3_value_bytes(pV);
  if (p->z == NULL && p->n > 0) return SQLITE_NOMEM;
  if (p->z == NULL) p->z = "";
  if (p->kind == TAG_UUID && p->n == 16) memcpy(p->uuid, p->z, 16);
  return SQLITE_OK;
}

void qfCompareColl(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  QfCv a, b;
  char *zErr = NULL;
  int rc, c = 0;
  (void)argc;
  rc = qfcFromValue(argv[0], argv[1], &a);
  if (rc == SQLITE_OK) rc = qfcFromValue(argv[2], argv[3], &b);
  else memset(&b, 0, sizeof b);
  if (rc == SQLITE_OK) c = qfcCmp(&a, &b, &zErr, &rc);
  if (rc == SQLITE_OK) sqlite3_result_int(pCtx, c);
  else if (rc == SQLITE_ERROR && zErr) qfErrorAt(pCtx, argv[4], "%s", zErr);
  else if (rc == SQLITE_ERROR) qfErrorAt(pCtx, argv[4], "a value is no tuple");
  else sqlite3_result_error_nomem(pCtx);
  sqlite3_free(zErr);
  sqlite3_free(a.zOwn);
  sqlite3_free(b.zOwn);
}
