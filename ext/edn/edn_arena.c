/*
** edn_arena.c — the arena every EDN tree lives in, constructors for trees
** built in code, and the small predicates (ednIsKeyword, ednEqual, ...).
**
** HOW IT WORKS: an arena is a singly linked list of chunks from
** sqlite3_malloc64, newest first. Allocation bumps a pointer in the newest
** chunk; a request that does not fit opens a new chunk (twice the previous
** one, from EDN_CHUNK_MIN up to EDN_CHUNK_MAX bytes), or a chunk of exactly
** the request's size for big strings; an arena given a buffer of its
** owner's (ednArenaInitWith) fills that first. Reset walks
** the list and frees every chunk, so freeing a tree never recurses however
** deep the tree was (peer-fault B34).
*/
#include <string.h>
#include "edn.h"

/* Chunk header; the payload follows, 8-aligned. */
struct EdnChunk {
  EdnChunk *pNext;
  size_t nAlloc;          /* payload bytes */
  double align_;          /* forces 8-byte alignment of the payload */
};

/* 16 KiB amortises malloc calls for typical transactions and queries while
** keeping a one-form parse (a short query) small. */
#define EDN_CHUNK_MIN 16384
#define EDN_CHUNK_MAX (1024 * 1024)

void ednArenaInit(EdnArena *p) {
  ednArenaInitWith(p, NULL, 0);
}

void ednArenaInitWith(EdnArena *p, void *pBuf, size_t nBuf) {
  p->pChunk = NULL;
  p->pFixed = pBuf;
  p->nFixed = pBuf ? nBuf : 0;
  p->pFree = p->pFixed;
  p->nFree = p->nFixed;
}

void ednArenaReset(EdnArena *p) {
  EdnChunk *pChunk = p->pChunk;
  while (pChunk) {
    EdnChunk *pNext = pChunk->pNext;
    sqlite3_free(pChunk);
    pChunk = pNext;
  }
  ednArenaInitWith(p, p->pFixed, p->nFixed);
}

void *ednArenaAlloc(EdnArena *p, size_t n) {
  void *pRet;
  n = (n + 7) & ~(size_t)7;
  if (n == 0) n = 8;
  if (n > p->nFree) {
    /* Chunks double (up to EDN_CHUNK_MAX) so a big transaction costs few
    ** mallocs while a short query stays at one small chunk. */
    size_t nChunk = p->pChunk && p->pChunk->nAlloc < EDN_CHUNK_MAX ? p->pChunk->nAlloc * 2
                  : p->pChunk ? EDN_CHUNK_MAX : EDN_CHUNK_MIN;
    size_t nPayload = n > nChunk ? n : nChunk;
    EdnChunk *pNew = sqlite3_malloc64(sizeof(EdnChunk) + nPayload);
    if (pNew == NULL) return NULL;
    pNew->nAlloc = nPayload;
    if (nPayload > nChunk && p->pChunk) {
      /* An oversized request gets its own chunk behind the current one, so
      ** the free space left in the current chunk is not wasted. */
      pNew->pNext = p->pChunk->pNext;
      p->pChunk->pNext = pNew;
      return (void *)(pNew + 1);
    }
    pNew->pNext = p->pChunk;
    p->pChunk = pNew;
    p->pFree = (char *)(pNew + 1);
    p->nFree = nPayload;
  }
  pRet = p->pFree;
  p->pFree += n;
  p->nFree -= n;
  return pRet;
}

char *ednArenaStrdup(EdnArena *p, const char *z, int n) {
  char *zOut;
  if (n < 0) n = z ? (int)strlen(z) : 0;
  zOut = ednArenaAlloc(p, (size_t)n + 1);
  if (zOut == NULL) return NULL;
  if (n > 0) memcpy(zOut, z, (size_t)n);
  zOut[n] = 0;
  return zOut;
}

EdnValue *ednNew(EdnArena *p, EdnType type) {
  EdnValue *pV = ednArenaAlloc(p, sizeof(EdnValue));
  if (pV == NULL) return NULL;
  memset(pV, 0, sizeof(*pV));
  pV->type = type;
  return pV;
}

EdnValue *ednNewInt(EdnArena *p, sqlite3_int64 i) {
  EdnValue *pV = ednNew(p, EDN_INT);
  if (pV) pV->u.i = i;
  return pV;
}

EdnValue *ednNewString(EdnArena *p, EdnType type, const char *z, int n) {
  EdnValue *pV = ednNew(p, type);
  char *zCopy;
  if (pV == NULL) return NULL;
  if (n < 0) n = z ? (int)strlen(z) : 0;
  zCopy = ednArenaStrdup(p, z, n);
  if (zCopy == NULL) return NULL;
  pV->u.s.z = zCopy;
  pV->u.s.n = n;
  return pV;
}

EdnValue *ednNewColl(EdnArena *p, EdnType type, int n) {
  EdnValue *pV = ednNew(p, type);
  if (pV == NULL) return NULL;
  if (n < 0) n = 0;
  pV->u.c.n = n;
  pV->u.c.a = ednArenaAlloc(p, sizeof(EdnValue *) * (size_t)(n ? n : 1));
  if (pV->u.c.a == NULL) return NULL;
  memset(pV->u.c.a, 0, sizeof(EdnValue *) * (size_t)(n ? n : 1));
  return pV;
}

int ednIsKeyword(const EdnValue *p, const char *zKw) {
  return p && p->type == EDN_KEYWORD && strcmp(p->u.s.z, zKw) == 0
      && (int)strlen(zKw) == p->u.s.n;
}

int ednIsSymbol(const EdnValue *p, const char *zSym) {
  return p && p->type == EDN_SYMBOL && strcmp(p->u.s.z, zSym) == 0
      && (int)strlen(zSym) == p->u.s.n;
}

const char *ednKindName(const EdnValue *p) {
  switch (p->type) {
    case EDN_NIL: return "nil";
    case EDN_BOOL: return "a boolean";
    case EDN_INT: return "an integer";
    case EDN_DOUBLE: return "a double";
    case EDN_STRING: return "a string";
    case EDN_CHAR: return "a character";
    case EDN_KEYWORD: return "a keyword";
    case EDN_SYMBOL: return "a symbol";
    case EDN_LIST: return "a list";
    case EDN_VECTOR: return "a vector";
    case EDN_MAP: return "a map";
    case EDN_SET: return "a set";
    case EDN_INST: return "an instant";
    case EDN_UUID: return "a uuid";
    case EDN_TAGGED: return "a tagged value";
  }
  return "a value";
}

int ednIsVar(const EdnValue *p) {
  return p && p->type == EDN_SYMBOL && p->u.s.n > 0 && p->u.s.z[0] == '?';
}

/* Depth-capped structural equality. Doubles compare with == as Clojure's
** `=` does for doubles: 0.0 equals -0.0 and NaN equals nothing. Trees deeper
** than EDN_MAX_DEPTH (only possible when built in code) compare unequal
** rather than risk the stack. */
static int ednEqualDepth(const EdnValue *a, const EdnValue *b, int depth) {
  int i;
  if (a == b) return 1;
  if (a == NULL || b == NULL) return 0;
  if (a->type != b->type) return 0;
  if (depth > EDN_MAX_DEPTH) return 0;
  switch (a->type) {
    case EDN_NIL: return 1;
    case EDN_BOOL: return (a->u.b != 0) == (b->u.b != 0);
    case EDN_INT: case EDN_CHAR: case EDN_INST: return a->u.i == b->u.i;
    case EDN_DOUBLE: return a->u.d == b->u.d;
    case EDN_STRING: case EDN_KEYWORD: case EDN_SYMBOL:
      return a->u.s.n == b->u.s.n && memcmp(a->u.s.z, b->u.s.z, (size_t)a->u.s.n) == 0;
    case EDN_UUID: return memcmp(a->u.uuid, b->u.uuid, 16) == 0;
    case EDN_TAGGED:
      return strcmp(a->u.t.zTag, b->u.t.zTag) == 0
          && ednEqualDepth(a->u.t.p, b->u.t.p, depth + 1);
    case EDN_LIST: case EDN_VECTOR:
      if (a->u.c.n != b->u.c.n) return 0;
      for (i = 0; i < a->u.c.n; i++) {
        if (!ednEqualDepth(a->u.c.a[i], b->u.c.a[i], depth + 1)) return 0;
      }
      return 1;
    case EDN_SET: case EDN_MAP: {
      /* Unordered: every element (pair) of a has an equal one in b. The
      ** reader guarantees no duplicates, so equal sizes make it a bijection.
      ** Quadratic, but only used on small literals. */
      int step = a->type == EDN_MAP ? 2 : 1, j;
      if (a->u.c.n != b->u.c.n) return 0;
      for (i = 0; i < a->u.c.n; i += step) {
        for (j = 0; j < b->u.c.n; j += step) {
          if (ednEqualDepth(a->u.c.a[i], b->u.c.a[j], depth + 1)
           && (step == 1 || ednEqualDepth(a->u.c.a[i + 1], b->u.c.a[j + 1], depth + 1))) break;
        }
        if (j >= b->u.c.n) return 0;
      }
      return 1;
    }
  }
  return 0;
}

int ednEqual(const EdnValue *a, const EdnValue *b) {
  return ednEqualDepth(a, b, 0);
}
