/*
** edn_hash.c — finding a duplicate among EDN values (map keys, set
** elements) in O(n log n): a structural hash consistent with ednEqual, sorted,
** then equal hashes compared. Takes arena values, allocates only a scratch
** array (sqlite3_malloc, freed before return).
*/
#include <stdlib.h>
#include <string.h>
#include "edn.h"

/* A structural hash consistent with ednEqual (0.0 and -0.0 hash alike;
** maps and sets combine order-independently). Depth-capped like ednEqual. */
static sqlite3_uint64 ednHash(const EdnValue *p, int depth) {
  sqlite3_uint64 h = (sqlite3_uint64)p->type * 0x9E3779B97F4A7C15ull;
  int i;
  if (depth > EDN_MAX_DEPTH) return h;
  switch (p->type) {
    case EDN_NIL: break;
    case EDN_BOOL: h ^= (sqlite3_uint64)(p->u.b != 0); break;
    case EDN_INT: case EDN_CHAR: case EDN_INST: h ^= (sqlite3_uint64)p->u.i; break;
    case EDN_DOUBLE: {
      double d = p->u.d == 0.0 ? 0.0 : p->u.d;
      sqlite3_uint64 u;
      memcpy(&u, &d, sizeof(u));
      h ^= u;
      break;
    }
    case EDN_STRING: case EDN_KEYWORD: case EDN_SYMBOL:
      for (i = 0; i < p->u.s.n; i++) h = (h ^ (unsigned char)p->u.s.z[i]) * 0x100000001B3ull;
      break;
    case EDN_UUID:
      for (i = 0; i < 16; i++) h = (h ^ p->u.uuid[i]) * 0x100000001B3ull;
      break;
    case EDN_TAGGED:
      h ^= ednHash(p->u.t.p, depth + 1) * 31;
      break;
    case EDN_LIST: case EDN_VECTOR:
      for (i = 0; i < p->u.c.n; i++) h = (h ^ ednHash(p->u.c.a[i], depth + 1)) * 0x100000001B3ull;
      break;
    case EDN_MAP:
      for (i = 0; i + 1 < p->u.c.n; i += 2) {
        h += ednHash(p->u.c.a[i], depth + 1) * 7 + ednHash(p->u.c.a[i + 1], depth + 1);
      }
      break;
    case EDN_SET:
      for (i = 0; i < p->u.c.n; i++) h += ednHash(p->u.c.a[i], depth + 1);
      break;
  }
  h ^= h >> 29;
  return h;
}

typedef struct EdnHashIdx { sqlite3_uint64 h; int idx; } EdnHashIdx;

static int ednHashIdxCmp(const void *a, const void *b) {
  const EdnHashIdx *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  return x->idx - y->idx;
}

/* Below this many keys a pairwise scan beats hashing and sorting. */
#define EDN_DUP_LINEAR 16

/* Finds a duplicate among every step-th element of a[0..n); *piDup is the
** later index of the first duplicate found, or -1. */
int ednFindDup(EdnValue **a, int n, int step, int *piDup) {
  int nKey = (n + step - 1) / step, i, j;
  *piDup = -1;
  if (nKey <= EDN_DUP_LINEAR) {
    for (i = step; i < n; i += step) {
      for (j = 0; j < i; j += step) {
        if (ednEqual(a[i], a[j])) { *piDup = i; return SQLITE_OK; }
      }
    }
  } else {
    EdnHashIdx *aH = sqlite3_malloc64(sizeof(EdnHashIdx) * (sqlite3_uint64)nKey);
    if (aH == NULL) return SQLITE_NOMEM;
    for (i = 0; i < nKey; i++) {
      aH[i].h = ednHash(a[i * step], 0);
      aH[i].idx = i * step;
    }
    qsort(aH, (size_t)nKey, sizeof(EdnHashIdx), ednHashIdxCmp);
    for (i = 0; i < nKey && *piDup < 0; i++) {
      for (j = i + 1; j < nKey && aH[j].h == aH[i].h; j++) {
        if (ednEqual(a[aH[i].idx], a[aH[j].idx])) {
          *piDup = aH[j].idx > aH[i].idx ? aH[j].idx : aH[i].idx;
          break;
        }
      }
    }
    sqlite3_free(aH);
  }
  return SQLITE_OK;
}

