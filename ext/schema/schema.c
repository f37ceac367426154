/*
** schema.c — an immutable Schema snapshot (idents and attribute
** definitions) built from rows, and its O(1) lookups.
**
** Takes in ident rows (entid, keyword) and definition rows (entid,
** attribute, value: the datoms of :db/valueType .. :db/noHistory) through a
** SchemaBuilder; gives out a reference-counted Schema; calls nothing but
** SQLite's allocator. No database: the store's loader (store_schema.c)
** reads the rows from a store file, tests give them by hand.
**
** HOW IT WORKS
** Rows are copied into flat arrays; schemaBuild then makes two
** open-addressing hash tables over them: entid -> entry and keyword ->
** entry, where an entry holds the ident and, for an attribute, the index of
** its Attr. Attrs are sorted by entid, which is the order pull's wildcard
** uses. A snapshot is never modified after schemaBuild returns, so any
** number of threads read it without locks; the reference count is atomic.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "schema.h"

/* One entity known to the snapshot: it has an ident, is an attribute, or
** both. */
typedef struct SchemaEnt {
  sqlite3_int64 e;
  const char *zIdent;   /* NULL when the entity has no ident */
  int nIdent;
  int iAttr;            /* index into aAttr, or -1 */
} SchemaEnt;

struct Schema {
  atomic_int nRef;
  sqlite3_int64 iGeneration;
  sqlite3_uint64 fp;
  int nEnt;
  SchemaEnt *aEnt;
  int nAttr;
  Attr *aAttr;          /* sorted by entid */
  unsigned int mask;    /* hash tables have mask + 1 slots */
  int *aByEntid;        /* slot -> 1 + index into aEnt, 0 empty */
  int *aByIdent;
  char *zStrings;       /* every ident, NUL-terminated, back to back */
};

/* Process-wide so a snapshot's generation differs from every other
** snapshot's, even across stores (query plans only compare equality). */
static atomic_llong gGeneration = 0;

/* ---------------------------------------------------------------- hashing */

sqlite3_uint64 schemaHashBytes(const unsigned char *z, int n) {
  sqlite3_uint64 h = 1469598103934665603ULL;      /* FNV-1a */
  for (int i = 0; i < n; i++) {
    h ^= z[i];
    h *= 1099511628211ULL;
  }
  return h;
}

sqlite3_uint64 schemaHashMix(sqlite3_uint64 x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/* ---------------------------------------------------------------- building */

/* The builder's growable arrays. */
typedef struct IdentRow { sqlite3_int64 e; int iOff; int n; } IdentRow;
typedef struct DefRow { sqlite3_int64 e, a, v; } DefRow;
typedef struct TupleRow { sqlite3_int64 e; int kind; int iOff; int n; } TupleRow;

struct SchemaBuilder {
  IdentRow *aIdent; int nIdent, nIdentAlloc;
  DefRow *aDef; int nDef, nDefAlloc;          /* a = 7..12 */
  DefRow *aNoHist; int nNoHist, nNoHistAlloc; /* a = 13 */
  sqlite3_int64 *aValueIdx; int nValueIdx, nValueIdxAlloc;
  sqlite3_str *pStr;          /* ident text, each NUL-terminated */
  int nStr;                   /* bytes appended so far */
  TupleRow *aTuple; int nTuple, nTupleAlloc;   /* tuple definitions */
  sqlite3_str *pTupStr;       /* their bytes, back to back */
  int nTupStr;
  int rc;                     /* first failure of an add, or SQLITE_OK */
};

static int schemaGrow(void **pa, int *pnAlloc, int nUsed, size_t szElem) {
  if (nUsed < *pnAlloc) return SQLITE_OK;
  int nNew = *pnAlloc ? *pnAlloc * 2 : 64;
  void *aNew = sqlite3_realloc64(*pa, (sqlite3_uint64)nNew * szElem);
  if (aNew == NULL) return SQLITE_NOMEM;
  *pa = aNew;
  *pnAlloc = nNew;
  return SQLITE_OK;
}

static int schemaCmpDef(const void *pA, const void *pB) {
  const DefRow *a = pA, *b = pB;
  if (a->e != b->e) return a->e < b->e ? -1 : 1;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return 0;
}

static unsigned int schemaHashInt(sqlite3_int64 e) {
  return (unsigned int)schemaHashMix((sqlite3_uint64)e);
}

static unsigned int schemaHashKw(const char *z, int n) {
  return (unsigned int)schemaHashBytes((const unsigned char *)z, n);
}

/* The entry for entid e, or -1. */
static int schemaFindEnt(const Schema *p, sqlite3_int64 e) {
  if (p->aByEntid == NULL) return -1;
  for (unsigned int h = schemaHashInt(e) & p->mask;; h = (h + 1) & p->mask) {
    int i = p->aByEntid[h];
    if (i == 0) return -1;
    if (p->aEnt[i - 1].e == e) return i - 1;
  }
}

static int schemaFindKw(const Schema *p, const char *z, int n) {
  if (p->aByIdent == NULL || z == NULL) return -1;
  if (n < 0) n = (int)strlen(z);
  for (unsigned int h = schemaHashKw(z, n) & p->mask;; h = (h + 1) & p->mask) {
    int i = p->aByIdent[h];
    if (i == 0) return -1;
    const SchemaEnt *pEnt = &p->aEnt[i - 1];
    if (pEnt->nIdent == n && memcmp(pEnt->zIdent, z, (size_t)n) == 0) return i - 1;
  }
}

/* Adds entity e (if new) and returns its index. Capacity is pre-sized. */
static int schemaAddEnt(Schema *p, sqlite3_int64 e) {
  int i = schemaFindEnt(p, e);
  if (i >= 0) return i;
  i = p->nEnt++;
  p->aEnt[i].e = e;
  p->aEnt[i].zIdent = NULL;
  p->aEnt[i].nIdent = 0;
  p->aEnt[i].iAttr = -1;
  unsigned int h = schemaHashInt(e) & p->mask;
  while (p->aByEntid[h] != 0) h = (h + 1) & p->mask;
  p->aByEntid[h] = i + 1;
  return i;
}

void schemaBuilderFree(SchemaBuilder *pL) {
  if (pL == NULL) return;
  sqlite3_free(pL->aIdent);
  sqlite3_free(pL->aDef);
  sqlite3_free(pL->aNoHist);
  sqlite3_free(pL->aValueIdx);
  sqlite3_free(pL->aTuple);
  if (pL->pStr) sqlite3_free(sqlite3_str_finish(pL->pStr));
  if (pL->pTupStr) sqlite3_free(sqlite3_str_finish(pL->pTupStr));
  sqlite3_free(pL);
}

int schemaBuilderNew(SchemaBuilder **ppOut) {
  SchemaBuilder *pL = sqlite3_malloc64(sizeof *pL);
  *ppOut = NULL;
  if (pL == NULL) return SQLITE_NOMEM;
  memset(pL, 0, sizeof *pL);
  pL->pStr = sqlite3_str_new(NULL);
  pL->pTupStr = sqlite3_str_new(NULL);
  if (sqlite3_str_errcode(pL->pStr) != SQLITE_OK || sqlite3_str_errcode(pL->pTupStr) != SQLITE_OK) {
    schemaBuilderFree(pL);
    return SQLITE_NOMEM;
  }
  *ppOut = pL;
  return SQLITE_OK;
}

int schemaBuilderIdent(SchemaBuilder *pL, sqlite3_int64 e, const char *zKw, int nKw) {
  int rc = pL->rc;
  if (rc != SQLITE_OK) return rc;
  if (nKw < 0) nKw = (int)strlen(zKw);
  rc = schemaGrow((void **)&pL->aIdent, &pL->nIdentAlloc, pL->nIdent, sizeof(IdentRow));
  if (rc == SQLITE_OK) {
    IdentRow *pRow = &pL->aIdent[pL->nIdent];
    pRow->e = e;
    pRow->iOff = pL->nStr;
    pRow->n = nKw;
    sqlite3_str_append(pL->pStr, zKw, nKw);
    sqlite3_str_appendchar(pL->pStr, 1, 0);
    rc = sqlite3_str_errcode(pL->pStr);
    if (rc == SQLITE_OK) {
      pL->nIdent++;
      pL->nStr += nKw + 1;
    }
  }
  pL->rc = rc;
  return rc;
}

int schemaBuilderDef(SchemaBuilder *pL, sqlite3_int64 e, sqlite3_int64 a, sqlite3_int64 v) {
  DefRow **paRow;
  int *pnRow, *pnAlloc;
  int rc = pL->rc;
  if (rc != SQLITE_OK) return rc;
  if (a == ENTID_DB_NOHISTORY) {
    paRow = &pL->aNoHist; pnRow = &pL->nNoHist; pnAlloc = &pL->nNoHistAlloc;
  } else if (a >= ENTID_DB_VALUETYPE && a <= ENTID_DB_FULLTEXT) {
    paRow = &pL->aDef; pnRow = &pL->nDef; pnAlloc = &pL->nDefAlloc;
  } else {
    return SQLITE_OK;
  }
  rc = schemaGrow((void **)paRow, pnAlloc, *pnRow, sizeof(DefRow));
  if (rc == SQLITE_OK) {
    DefRow *pRow = &(*paRow)[(*pnRow)++];
    pRow->e = e;
    pRow->a = a;
    pRow->v = v;
  }
  pL->rc = rc;
  return rc;
}

int schemaBuilderValueIndex(SchemaBuilder *pL, sqlite3_int64 e) {
  int rc = pL->rc;
  if (rc != SQLITE_OK) return rc;
  rc = schemaGrow((void **)&pL->aValueIdx, &pL->nValueIdxAlloc, pL->nValueIdx,
                  sizeof(sqlite3_int64));
  if (rc == SQLITE_OK) pL->aValueIdx[pL->nValueIdx++] = e;
  pL->rc = rc;
  return rc;
}


int schemaBuilderTuple(SchemaBuilder *pL, sqlite3_int64 e, int kind, const void *z, int n) {
  int rc = pL->rc;
  if (rc != SQLITE_OK) return rc;
  if (z == NULL || n <= 0) return SQLITE_OK;
  rc = schemaGrow((void **)&pL->aTuple, &pL->nTupleAlloc, pL->nTuple, sizeof(TupleRow));
  if (rc == SQLITE_OK) {
    TupleRow *pRow = &pL->aTuple[pL->nTuple];
    pRow->e = e;
    pRow->kind = kind;
    pRow->iOff = pL->nTupStr;
    pRow->n = n;
    sqlite3_str_append(pL->pTupStr, (const char *)z, n);
    rc = sqlite3_str_errcode(pL->pTupStr);
    if (rc == SQLITE_OK) {
      pL->nTuple++;
      pL->nTupStr += n;
    }
  }
  pL->rc = rc;
  return rc;
}

/* The value type a :db.type/... keyword names, VT_NONE if none. */
static ValueType schemaTypeByKw(const Schema *p, const char *z, int n) {
  int iEnt = schemaFindKw(p, z, n);
  return iEnt < 0 ? VT_NONE : vtFromTypeEntid(p->aEnt[iEnt].e);
}

/* Applies one tuple definition row to its attribute (stored as bytes). */
static int schemaApplyTuple(Schema *p, const TupleRow *pRow, const char *zBytes) {
  int iEnt = schemaFindEnt(p, pRow->e), i, rc;
  Attr *pA;
  ValueTuple t;
  if (iEnt < 0 || p->aEnt[iEnt].iAttr < 0) return SQLITE_OK;
  pA = &p->aAttr[p->aEnt[iEnt].iAttr];
  if (pA->type != VT_BYTES) return SQLITE_OK;
  if (pRow->kind == TUPLE_HOMO) {
    ValueType vt = schemaTypeByKw(p, zBytes, pRow->n);
    if (!valueTupleElemOk(vt)) return SQLITE_OK;
    pA->tuple.nFixed = 0;
    pA->tuple.aType[0] = vt;
    pA->eTuple = TUPLE_HOMO;
    pA->type = VT_TUPLE;
    return SQLITE_OK;
  }
  rc = valueTupleDecode(zBytes, pRow->n, &t);
  if (rc == SQLITE_NOMEM) return rc;
  if (rc != SQLITE_OK) return SQLITE_OK;
  for (i = 0; i < t.n; i++) {
    if (t.a[i].type != VT_KEYWORD) goto done;
    if (pRow->kind == TUPLE_FIXED) {
      pA->tuple.aType[i] = schemaTypeByKw(p, t.a[i].z, t.a[i].n);
      if (!valueTupleElemOk(pA->tuple.aType[i])) goto done;
    } else {
      int iC = schemaFindKw(p, t.a[i].z, t.a[i].n);
      const Attr *pC;
      if (iC < 0 || p->aEnt[iC].iAttr < 0) goto done;
      pC = &p->aAttr[p->aEnt[iC].iAttr];
      if (!valueTupleElemOk(pC->type) || pC->eTuple) goto done;
      pA->tuple.aType[i] = pC->type;
      pA->aTupleAttr[i] = pC->e;
    }
  }
  if (t.n < VALUE_TUPLE_MIN) goto done;
  pA->tuple.nFixed = t.n;
  pA->tuple.bComposite = pRow->kind == TUPLE_COMPOSITE;
  pA->eTuple = (unsigned char)pRow->kind;
  pA->type = VT_TUPLE;
done:
  valueTupleClear(&t);
  return SQLITE_OK;
}

/* Tuple attributes: the vocabulary's own (keyword tuples), then every
** definition row, then the components' bTupleSource marks. */
static int schemaBuildTuples(Schema *p, SchemaBuilder *pL) {
  static const char *const azKw[] = { SCHEMA_TUPLE_ATTRS, SCHEMA_TUPLE_TYPES };
  char *zBytes = NULL;
  int i, k, rc = SQLITE_OK;
  for (k = 0; k < 2; k++) {
    int iEnt = schemaFindKw(p, azKw[k], (int)strlen(azKw[k]));
    if (iEnt >= 0 && p->aEnt[iEnt].iAttr >= 0) {
      Attr *pA = &p->aAttr[p->aEnt[iEnt].iAttr];
      if (pA->type == VT_BYTES) {
        pA->type = VT_TUPLE;
        pA->eTuple = TUPLE_HOMO;
        pA->tuple.aType[0] = VT_KEYWORD;
      }
    }
  }
  if (pL->nTuple == 0) return SQLITE_OK;
  zBytes = sqlite3_str_finish(pL->pTupStr);
  pL->pTupStr = NULL;
  if (zBytes == NULL) return SQLITE_NOMEM;
  /* homogeneous and fixed first: a composite takes its components' types */
  for (k = 0; k < 2 && rc == SQLITE_OK; k++) {
    for (i = 0; i < pL->nTuple && rc == SQLITE_OK; i++) {
      if ((pL->aTuple[i].kind == TUPLE_COMPOSITE) != (k == 1)) continue;
      rc = schemaApplyTuple(p, &pL->aTuple[i], zBytes + pL->aTuple[i].iOff);
    }
  }
  sqlite3_free(zBytes);
  for (i = 0; i < p->nAttr; i++) {
    if (p->aAttr[i].eTuple != TUPLE_COMPOSITE) continue;
    for (k = 0; k < p->aAttr[i].tuple.nFixed; k++) {
      int iC = schemaFindEnt(p, p->aAttr[i].aTupleAttr[k]);
      if (iC >= 0 && p->aEnt[iC].iAttr >= 0) p->aAttr[p->aEnt[iC].iAttr].bTupleSource = 1;
    }
  }
  return rc;
}

/* Builds the snapshot's tables from the builder's rows. */
static int schemaBuildTables(Schema *p, SchemaBuilder *pL) {
  /* Attributes: entities with a :db/valueType row, in entid order. */
  if (pL->nDef > 1) qsort(pL->aDef, (size_t)pL->nDef, sizeof(DefRow), schemaCmpDef);
  int nAttrMax = 0;
  for (int i = 0; i < pL->nDef; i++) {
    if (i == 0 || pL->aDef[i].e != pL->aDef[i - 1].e) nAttrMax++;
  }
  int nEntMax = pL->nIdent + nAttrMax;
  unsigned int nSlot = 16;
  while (nSlot < (unsigned int)nEntMax * 2u) nSlot <<= 1;
  p->mask = nSlot - 1;

  p->aEnt = sqlite3_malloc64(sizeof(SchemaEnt) * (sqlite3_uint64)(nEntMax ? nEntMax : 1));
  p->aAttr = sqlite3_malloc64(sizeof(Attr) * (sqlite3_uint64)(nAttrMax ? nAttrMax : 1));
  p->aByEntid = sqlite3_malloc64(sizeof(int) * (sqlite3_uint64)nSlot);
  p->aByIdent = sqlite3_malloc64(sizeof(int) * (sqlite3_uint64)nSlot);
  if (!p->aEnt || !p->aAttr || !p->aByEntid || !p->aByIdent) return SQLITE_NOMEM;
  memset(p->aByEntid, 0, sizeof(int) * nSlot);
  memset(p->aByIdent, 0, sizeof(int) * nSlot);

  /* The ident text moves into the snapshot. */
  if (pL->nStr > 0) {
    p->zStrings = sqlite3_str_finish(pL->pStr);
    pL->pStr = NULL;
    if (p->zStrings == NULL) return SQLITE_NOMEM;
  }

  /* Idents. An entity keeps its first ident and a keyword its first entity
  ** (the mirror is unique in a sound store; a damaged one must not crash). */
  for (int i = 0; i < pL->nIdent; i++) {
    const IdentRow *pRow = &pL->aIdent[i];
    const char *z = p->zStrings + pRow->iOff;
    if (schemaFindKw(p, z, pRow->n) >= 0) continue;
    int iEnt = schemaAddEnt(p, pRow->e);
    SchemaEnt *pEnt = &p->aEnt[iEnt];
    if (pEnt->zIdent != NULL) continue;
    pEnt->zIdent = z;
    pEnt->nIdent = pRow->n;
    unsigned int h = schemaHashKw(z, pRow->n) & p->mask;
    while (p->aByIdent[h] != 0) h = (h + 1) & p->mask;
    p->aByIdent[h] = iEnt + 1;
  }

  /* Attribute definitions, grouped by entity (aDef is sorted). */
  for (int i = 0; i < pL->nDef;) {
    int j = i;
    Attr attr;
    int bHasType = 0;
    memset(&attr, 0, sizeof attr);
    attr.e = pL->aDef[i].e;
    for (; j < pL->nDef && pL->aDef[j].e == attr.e; j++) {
      sqlite3_int64 v = pL->aDef[j].v;
      switch (pL->aDef[j].a) {
        case ENTID_DB_VALUETYPE: attr.type = vtFromTypeEntid(v); bHasType = 1; break;
        case ENTID_DB_CARDINALITY: attr.bMany = (v == ENTID_DB_CARD_MANY); break;
        case ENTID_DB_UNIQUE:
          if (v == ENTID_DB_UNIQUE_IDENTITY) attr.eUnique = UNIQUE_IDENTITY;
          else if (v == ENTID_DB_UNIQUE_VALUE) attr.eUnique = UNIQUE_VALUE;
          break;
        case ENTID_DB_ISCOMPONENT: attr.bComponent = (v != 0); break;
        case ENTID_DB_INDEX: attr.bIndex = (v != 0); break;
        case ENTID_DB_FULLTEXT: attr.bFulltext = (v != 0); break;
        default: break;
      }
    }
    i = j;
    if (!bHasType) continue;
    /* :db/unique implies the index (SPEC.md §5, as the Rust engine demands). */
    if (attr.eUnique != UNIQUE_NONE) attr.bIndex = 1;
    int iEnt = schemaAddEnt(p, attr.e);
    attr.zIdent = p->aEnt[iEnt].zIdent;
    p->aEnt[iEnt].iAttr = p->nAttr;
    p->aAttr[p->nAttr++] = attr;
  }

  /* :db/noHistory, whose rows come apart from the mirror's (the format
  ** keeps them only in datoms). */
  for (int i = 0; i < pL->nNoHist; i++) {
    int iEnt = schemaFindEnt(p, pL->aNoHist[i].e);
    if (iEnt >= 0 && p->aEnt[iEnt].iAttr >= 0) {
      p->aAttr[p->aEnt[iEnt].iAttr].bNoHistory = (pL->aNoHist[i].v != 0);
    }
  }
  return SQLITE_OK;
}

/* Marks the attributes the builder was told have a covering value index
** (idx_mentat_avet_<a>, store_tune.c), so compiled queries look values up
** there; an entid that is no attribute is ignored. */
static void schemaApplyValueIndexes(Schema *p, const SchemaBuilder *pL) {
  for (int i = 0; i < pL->nValueIdx; i++) {
    int iEnt = schemaFindEnt(p, pL->aValueIdx[i]);
    if (iEnt >= 0 && p->aEnt[iEnt].iAttr >= 0) p->aAttr[p->aEnt[iEnt].iAttr].bValueIndex = 1;
  }
}

static void schemaFree(Schema *p) {
  if (p == NULL) return;
  sqlite3_free(p->aEnt);
  sqlite3_free(p->aAttr);
  sqlite3_free(p->aByEntid);
  sqlite3_free(p->aByIdent);
  sqlite3_free(p->zStrings);
  sqlite3_free(p);
}

int schemaBuild(SchemaBuilder *pL, sqlite3_uint64 fp, Schema **ppOut) {
  Schema *p = NULL;
  int rc = pL->rc;

  *ppOut = NULL;
  if (rc != SQLITE_OK) goto cleanup;
  p = sqlite3_malloc64(sizeof(Schema));
  if (p == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  memset(p, 0, sizeof *p);
  atomic_init(&p->nRef, 1);
  p->fp = fp;
  rc = schemaBuildTables(p, pL);
  if (rc != SQLITE_OK) goto cleanup;
  schemaApplyValueIndexes(p, pL);
  rc = schemaBuildTuples(p, pL);
  if (rc != SQLITE_OK) goto cleanup;
  p->iGeneration = atomic_fetch_add(&gGeneration, 1) + 1;

cleanup:
  schemaBuilderFree(pL);
  if (rc != SQLITE_OK) {
    schemaFree(p);
    p = NULL;
  }
  *ppOut = p;
  return rc;
}

void schemaRef(Schema *p) {
  if (p) atomic_fetch_add(&p->nRef, 1);
}

void schemaUnref(Schema *p) {
  if (p && atomic_fetch_sub(&p->nRef, 1) == 1) schemaFree(p);
}

sqlite3_int64 schemaEntid(const Schema *p, const char *zKw, int nKw) {
  int i = p ? schemaFindKw(p, zKw, nKw) : -1;
  return i < 0 ? 0 : p->aEnt[i].e;
}

const char *schemaIdent(const Schema *p, sqlite3_int64 e) {
  int i = p ? schemaFindEnt(p, e) : -1;
  return i < 0 ? NULL : p->aEnt[i].zIdent;
}

const Attr *schemaAttr(const Schema *p, sqlite3_int64 e) {
  int i = p ? schemaFindEnt(p, e) : -1;
  if (i < 0 || p->aEnt[i].iAttr < 0) return NULL;
  return &p->aAttr[p->aEnt[i].iAttr];
}

const Attr *schemaAttrByIdent(const Schema *p, const char *zKw, int nKw) {
  int i = p ? schemaFindKw(p, zKw, nKw) : -1;
  if (i < 0 || p->aEnt[i].iAttr < 0) return NULL;
  return &p->aAttr[p->aEnt[i].iAttr];
}

int schemaAttrCount(const Schema *p) {
  return p ? p->nAttr : 0;
}

const Attr *schemaAttrAt(const Schema *p, int i) {
  return (p && i >= 0 && i < p->nAttr) ? &p->aAttr[i] : NULL;
}

sqlite3_int64 schemaGeneration(const Schema *p) {
  return p ? p->iGeneration : 0;
}

sqlite3_uint64 schemaFingerprintOf(const Schema *p) {
  return p ? p->fp : 0;
}
