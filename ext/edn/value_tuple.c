/*
** value_tuple.c — tuple values (:db.type/tuple): the order-preserving
** byte encoding they are stored in, EDN vector -> encoding with the
** attribute's element types, and encoding -> JSON / EDN text.
**
** Takes in EDN vectors and typed elements; gives out encodings (blobs)
** and their printed forms; calls the EDN printers and SQLite's allocator.
** The layout is in value.h. Why it sorts right: each element starts with
** a header byte that is the same for every value of the element's type
** (the attribute fixes the type per position) and larger than VTUP_NIL,
** which is larger than VTUP_END, so nil sorts before any value and a
** tuple before a longer one it starts; the payloads are fixed-width
** big-endian with the sign handled (integers: sign bit flipped; doubles:
** the usual IEEE total-order trick), or escaped text whose terminator
** 0x00 0x01 is below every escaped byte (0x00 0xFF, 0x01..0xFF), so "a"
** sorts before "a\0" and "ab". memcmp of two encodings therefore orders
** them as Datomic orders tuples, and SQLite compares BLOBs by memcmp.
*/
#include <stdarg.h>
#include <string.h>
#include "value.h"

int valueTupleElemOk(ValueType t) {
  return t != VT_NONE && t != VT_TUPLE;
}

static unsigned char valueTupleHeader(ValueType t) {
  switch (t) {
    case VT_REF: return VTUP_LONG;   /* an entid is a long in a tuple */
    case VT_BOOLEAN: return VTUP_BOOLEAN;
    case VT_INSTANT: return VTUP_INSTANT;
    case VT_LONG: return VTUP_LONG;
    case VT_DOUBLE: return VTUP_DOUBLE;
    case VT_STRING: return VTUP_STRING;
    case VT_KEYWORD: return VTUP_KEYWORD;
    case VT_UUID: return VTUP_UUID;
    case VT_BYTES: return VTUP_BYTES;
    case VT_TUPLE: case VT_NONE: break;
  }
  return VTUP_NIL;
}

static ValueType valueTupleTypeOf(unsigned char h) {
  switch (h) {
    case VTUP_BOOLEAN: return VT_BOOLEAN;
    case VTUP_INSTANT: return VT_INSTANT;
    case VTUP_LONG: return VT_LONG;
    case VTUP_DOUBLE: return VT_DOUBLE;
    case VTUP_STRING: return VT_STRING;
    case VTUP_KEYWORD: return VT_KEYWORD;
    case VTUP_UUID: return VT_UUID;
    case VTUP_BYTES: return VT_BYTES;
    default: return VT_NONE;
  }
}

static void valueTupleU64(sqlite3_str *pOut, sqlite3_uint64 u) {
  char a[8];
  int k;
  for (k = 7; k >= 0; k--) { a[k] = (char)(u & 0xff); u >>= 8; }
  sqlite3_str_append(pOut, a, 8);
}

void valueTupleEncode(sqlite3_str *pOut, const TypedValue *a, int n) {
  int i, k;
  for (i = 0; i < n; i++) {
    const TypedValue *v = &a[i];
    unsigned char h = valueTupleHeader(v->type);
    sqlite3_str_appendchar(pOut, 1, (char)h);
    switch (v->type) {
      case VT_REF: case VT_INSTANT: case VT_LONG:
        valueTupleU64(pOut, (sqlite3_uint64)v->i ^ ((sqlite3_uint64)1 << 63));
        break;
      case VT_DOUBLE: {
        sqlite3_uint64 u;
        double d = v->d == 0.0 ? 0.0 : v->d;
        memcpy(&u, &d, sizeof u);
        u = (u >> 63) ? ~u : (u | ((sqlite3_uint64)1 << 63));
        valueTupleU64(pOut, u);
        break;
      }
      case VT_BOOLEAN:
        sqlite3_str_appendchar(pOut, 1, v->i ? 1 : 0);
        break;
      case VT_UUID:
        sqlite3_str_append(pOut, (const char *)v->uuid, 16);
        break;
      case VT_STRING: case VT_KEYWORD: case VT_BYTES:
        for (k = 0; k < v->n; k++) {
          sqlite3_str_appendchar(pOut, 1, v->z[k]);
          if (v->z[k] == 0) sqlite3_str_appendchar(pOut, 1, (char)0xff);
        }
        sqlite3_str_append(pOut, "\0\1", 2);
        break;
      case VT_TUPLE: case VT_NONE:
        break;
    }
  }
  sqlite3_str_appendchar(pOut, 1, VTUP_END);
}

static int valueTupleErr(char **pzErr, const char *zFmt, ...) {
  va_list ap;
  va_start(ap, zFmt);
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* "(:db/tupleTypes [:db.type/long ...])" or "(one per :db/tupleAttrs)". */
static void valueTupleDefText(sqlite3_str *pOut, const ValueTupleSpec *pSpec) {
  int i;
  if (pSpec->bComposite) {
    sqlite3_str_appendall(pOut, "(one per :db/tupleAttrs)");
    return;
  }
  sqlite3_str_appendall(pOut, "(:db/tupleTypes [");
  for (i = 0; i < pSpec->nFixed; i++) {
    sqlite3_str_appendf(pOut, "%s%s", i ? " " : "", vtName(pSpec->aType[i]));
  }
  sqlite3_str_appendall(pOut, "])");
}

/* The shape errors: not a vector, wrong arity. */
static int valueTupleShapeErr(const EdnValue *p, const ValueTupleSpec *pSpec, char **pzErr) {
  sqlite3_str *pMsg = sqlite3_str_new(NULL);
  char *z;
  if (p->type != EDN_VECTOR) {
    sqlite3_str_appendall(pMsg, "expected a tuple (a vector of ");
    if (pSpec->nFixed) sqlite3_str_appendf(pMsg, "%d values), got ", pSpec->nFixed);
    else sqlite3_str_appendf(pMsg, "%d to %d values), got ", VALUE_TUPLE_MIN, VALUE_TUPLE_MAX);
    ednPrint(pMsg, p);
  } else if (pSpec->nFixed) {
    sqlite3_str_appendf(pMsg, "expected a tuple of %d values ", pSpec->nFixed);
    valueTupleDefText(pMsg, pSpec);
    sqlite3_str_appendf(pMsg, ", got %d", p->u.c.n);
  } else {
    sqlite3_str_appendf(pMsg, "a tuple holds %d to %d values, got %d", VALUE_TUPLE_MIN,
                        VALUE_TUPLE_MAX, p->u.c.n);
  }
  z = sqlite3_str_finish(pMsg);
  if (z == NULL) return SQLITE_NOMEM;
  sqlite3_free(*pzErr);
  *pzErr = z;
  return SQLITE_ERROR;
}

int valueTupleFromEdn(const EdnValue *p, const ValueTupleSpec *pSpec, EdnArena *pArena,
                      TypedValue *pOut, char **pzErr, const EdnValue **ppAt) {
  TypedValue a[VALUE_TUPLE_MAX];
  sqlite3_str *pStr;
  char *zEnc;
  int i, n, rc;
  memset(pOut, 0, sizeof(*pOut));
  pOut->type = VT_TUPLE;
  *ppAt = p;
  if (p->type != EDN_VECTOR
      || (pSpec->nFixed && p->u.c.n != pSpec->nFixed)
      || (!pSpec->nFixed && (p->u.c.n < VALUE_TUPLE_MIN || p->u.c.n > VALUE_TUPLE_MAX))) {
    return valueTupleShapeErr(p, pSpec, pzErr);
  }
  n = p->u.c.n;
  for (i = 0; i < n; i++) {
    const EdnValue *pE = p->u.c.a[i];
    ValueType t = pSpec->nFixed ? pSpec->aType[i] : pSpec->aType[0];
    char *zErr = NULL;
    if (pE->type == EDN_NIL) {
      memset(&a[i], 0, sizeof(a[i]));
      continue;
    }
    rc = valueFromEdn(pE, t, &a[i], &zErr);
    if (rc != SQLITE_OK) {
      *ppAt = pE;
      if (rc == SQLITE_ERROR) rc = valueTupleErr(pzErr, "tuple element %d: %s", i + 1, zErr);
      sqlite3_free(zErr);
      return rc;
    }
  }
  pStr = sqlite3_str_new(NULL);
  valueTupleEncode(pStr, a, n);
  rc = sqlite3_str_errcode(pStr);
  pOut->n = sqlite3_str_length(pStr);
  zEnc = sqlite3_str_finish(pStr);
  if (rc != SQLITE_OK || zEnc == NULL) {
    sqlite3_free(zEnc);
    return SQLITE_NOMEM;
  }
  pOut->z = ednArenaStrdup(pArena, zEnc, pOut->n);
  sqlite3_free(zEnc);
  return pOut->z ? SQLITE_OK : SQLITE_NOMEM;
}

int valueTupleFromEdnNatural(const EdnValue *p, char **pzOut, int *pnOut) {
  TypedValue a[VALUE_TUPLE_MAX];
  sqlite3_str *pStr;
  int i, rc;
  *pzOut = NULL;
  *pnOut = 0;
  if (p->type != EDN_VECTOR || p->u.c.n < 1 || p->u.c.n > VALUE_TUPLE_MAX) return SQLITE_ERROR;
  for (i = 0; i < p->u.c.n; i++) {
    const EdnValue *pE = p->u.c.a[i];
    ValueType t = pE->type == EDN_NIL ? VT_NONE : valueNaturalType(pE);
    memset(&a[i], 0, sizeof(a[i]));
    if (pE->type == EDN_NIL) continue;
    if (t == VT_NONE) return SQLITE_ERROR;
    rc = valueFromEdn(pE, t, &a[i], NULL);
    if (rc != SQLITE_OK) return rc;
  }
  pStr = sqlite3_str_new(NULL);
  valueTupleEncode(pStr, a, p->u.c.n);
  rc = sqlite3_str_errcode(pStr);
  *pnOut = sqlite3_str_length(pStr);
  *pzOut = sqlite3_str_finish(pStr);
  if (rc != SQLITE_OK || *pzOut == NULL) {
    sqlite3_free(*pzOut);
    *pzOut = NULL;
    return SQLITE_NOMEM;
  }
  return SQLITE_OK;
}

static sqlite3_uint64 valueTupleGetU64(const unsigned char *z) {
  sqlite3_uint64 u = 0;
  int k;
  for (k = 0; k < 8; k++) u = (u << 8) | z[k];
  return u;
}

int valueTupleDecode(const void *zIn, int n, ValueTuple *pOut) {
  const unsigned char *z = (const unsigned char *)zIn;
  int i = 0, nBuf = 0;
  memset(pOut, 0, sizeof(*pOut));
  if (z == NULL || n < 1) return SQLITE_ERROR;
  pOut->zBuf = sqlite3_malloc(n + 1);
  if (pOut->zBuf == NULL) return SQLITE_NOMEM;
  while (i < n && z[i] != VTUP_END) {
    TypedValue *v;
    ValueType t;
    if (pOut->n == VALUE_TUPLE_MAX) goto bad;
    v = &pOut->a[pOut->n++];
    memset(v, 0, sizeof(*v));
    if (z[i] == VTUP_NIL) { i++; continue; }
    t = valueTupleTypeOf(z[i++]);
    v->type = t;
    switch (t) {
      case VT_INSTANT: case VT_LONG: case VT_DOUBLE: {
        sqlite3_uint64 u;
        if (i + 8 > n) goto bad;
        u = valueTupleGetU64(z + i);
        i += 8;
        if (t == VT_DOUBLE) {
          u = (u >> 63) ? (u & ~((sqlite3_uint64)1 << 63)) : ~u;
          memcpy(&v->d, &u, sizeof u);
        } else {
          v->i = (sqlite3_int64)(u ^ ((sqlite3_uint64)1 << 63));
        }
        break;
      }
      case VT_BOOLEAN:
        if (i + 1 > n) goto bad;
        v->i = z[i++] != 0;
        break;
      case VT_UUID:
        if (i + 16 > n) goto bad;
        memcpy(v->uuid, z + i, 16);
        i += 16;
        break;
      case VT_STRING: case VT_KEYWORD: case VT_BYTES:
        v->z = pOut->zBuf + nBuf;
        for (;;) {
          if (i >= n) goto bad;
          if (z[i] == 0) {
            if (i + 1 >= n) goto bad;
            if (z[i + 1] == 1) { i += 2; break; }
            if (z[i + 1] != 0xff) goto bad;
            pOut->zBuf[nBuf++] = 0;
            i += 2;
          } else {
            pOut->zBuf[nBuf++] = (char)z[i++];
          }
        }
        v->n = (int)(pOut->zBuf + nBuf - v->z);
        pOut->zBuf[nBuf++] = 0;   /* room: the terminator took two bytes */
        break;
      default:
        goto bad;
    }
  }
  if (i != n - 1) goto bad;
  return SQLITE_OK;
bad:
  valueTupleClear(pOut);
  return SQLITE_ERROR;
}

void valueTupleClear(ValueTuple *p) {
  sqlite3_free(p->zBuf);
  memset(p, 0, sizeof(*p));
}

static void valueTupleHex(sqlite3_str *pOut, const char *z, int n) {
  int k;
  for (k = 0; k < n; k++) sqlite3_str_appendf(pOut, "%02x", (unsigned char)z[k]);
}

/* One element as JSON (bJson) or EDN. */
static void valueTupleElem(sqlite3_str *pOut, const TypedValue *v, int bJson, int bPull) {
  char aBuf[48];
  switch (v->type) {
    case VT_NONE: sqlite3_str_appendall(pOut, bJson ? "null" : "nil"); break;
    case VT_REF: case VT_LONG: ednAppendInt(pOut, v->i); break;
    case VT_BOOLEAN: sqlite3_str_appendall(pOut, v->i ? "true" : "false"); break;
    case VT_DOUBLE:
      if (bJson) ednJsonDouble(pOut, v->d);
      else sqlite3_str_appendf(pOut, "%!.15g", v->d);
      break;
    case VT_INSTANT:
      if (bJson && bPull) { ednAppendInt(pOut, v->i); break; }
      ednFormatInstant(v->i, aBuf);
      sqlite3_str_appendf(pOut, bJson ? "\"%s\"" : "#inst \"%s\"", aBuf);
      break;
    case VT_UUID:
      ednFormatUuid(v->uuid, aBuf);
      sqlite3_str_appendf(pOut, bJson ? "\"%s\"" : "#uuid \"%s\"", aBuf);
      break;
    case VT_STRING: ednJsonString(pOut, v->z, v->n); break;
    case VT_KEYWORD:
      if (bJson) ednJsonString(pOut, v->z, v->n);
      else sqlite3_str_append(pOut, v->z, v->n);
      break;
    case VT_BYTES:
      sqlite3_str_appendall(pOut, bJson ? "\"" : "#bytes \"");
      valueTupleHex(pOut, v->z, v->n);
      sqlite3_str_appendchar(pOut, 1, '"');
      break;
    case VT_TUPLE: break;
  }
}

static int valueTuplePrint(sqlite3_str *pOut, const void *z, int n, int bJson, int bPull) {
  ValueTuple t;
  int i, rc = valueTupleDecode(z, n, &t);
  if (rc != SQLITE_OK) return rc;
  sqlite3_str_appendchar(pOut, 1, '[');
  for (i = 0; i < t.n; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, bJson ? ',' : ' ');
    valueTupleElem(pOut, &t.a[i], bJson, bPull);
  }
  sqlite3_str_appendchar(pOut, 1, ']');
  valueTupleClear(&t);
  return SQLITE_OK;
}

int valueTupleJson(sqlite3_str *pOut, const void *z, int n, int bPull) {
  return valueTuplePrint(pOut, z, n, 1, bPull);
}

int valueTupleEdn(sqlite3_str *pOut, const void *z, int n) {
  return valueTuplePrint(pOut, z, n, 0, 0);
}
