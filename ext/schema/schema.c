/*
** schema.c — loading an immutable Schema snapshot (idents and attribute
** definitions) from a store, and its O(1) lookups.
**
** HOW IT WORKS
** One statement reads the three sources of the snapshot as tagged rows:
** the `idents` mirror (entid <-> keyword, a = :db/ident), the `schema`
** mirror (the datoms of :db/valueType .. :db/fulltext, entids 7..12, for
** attribute entities) and the :db/noHistory datoms (13, kept only in
** `datoms` because the format's mirror stops at 12). Rows are copied into
** flat arrays; then two open-addressing hash tables index them: entid ->
** entry and keyword -> entry, where an entry holds the ident and, for an
** attribute, the index of its Attr. Attrs are sorted by entid, which is the
** order pull's wildcard uses.
**
** The same rows feed a fingerprint: a sum (mod 2^64) of per-row hashes, so
** it does not depend on row order. The store compares it with the published
** snapshot's after another connection commits and reloads only on a change.
**
** A snapshot is never modified after schemaLoad() returns, so any number of
** threads read it without locks; the reference count is atomic.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "schema.h"

/* Row sources, the first column of the load statement. */
#define SRC_IDENTS    0
#define SRC_SCHEMA    1
#define SRC_NOHISTORY 2

static const char zLoadSql[] =
  "SELECT 0, e, a, v, value_type_tag FROM idents"
  " UNION ALL SELECT 1, e, a, v, value_type_tag FROM schema"
  " UNION ALL SELECT 2, e, a, v, value_type_tag FROM datoms WHERE a = 13";

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

static sqlite3_uint64 schemaHashBytes(const unsigned char *z, int n) {
  sqlite3_uint64 h = 1469598103934665603ULL;      /* FNV-1a */
  for (int i = 0; i < n; i++) {
    h ^= z[i];
    h *= 1099511628211ULL;
  }
  return h;
}

/* A strong 64-bit mix (splitmix64's finaliser) so that summing row hashes
** does not let simple changes cancel out. */
static sqlite3_uint64 schemaMix(sqlite3_uint64 x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

static sqlite3_uint64 schemaRowHash(sqlite3_stmt *pStmt) {
  sqlite3_uint64 h = (sqlite3_uint64)sqlite3_column_int64(pStmt, 0);
  h = schemaMix(h ^ (sqlite3_uint64)sqlite3_column_int64(pStmt, 1));
  h = schemaMix(h ^ (sqlite3_uint64)sqlite3_column_int64(pStmt, 2));
  h = schemaMix(h ^ (sqlite3_uint64)sqlite3_column_int64(pStmt, 4));
  switch (sqlite3_column_type(pStmt, 3)) {
    case SQLITE_INTEGER:
      h = schemaMix(h ^ (sqlite3_uint64)sqlite3_column_int64(pStmt, 3));
      break;
    case SQLITE_FLOAT: {
      double d = sqlite3_column_double(pStmt, 3);
      sqlite3_uint64 u;
      memcpy(&u, &d, sizeof u);
      h = schemaMix(h ^ u ^ 0x5555);
      break;
    }
    case SQLITE_NULL:
      h = schemaMix(h ^ 0xaaaa);
      break;
    default: {
      const unsigned char *z = sqlite3_column_blob(pStmt, 3);
      int n = sqlite3_column_bytes(pStmt, 3);
      h = schemaMix(h ^ schemaHashBytes(z, n));
      break;
    }
  }
  return h;
}

static void schemaSetErr(char **pzErr, sqlite3 *db, const char *zWhat) {
  if (pzErr == NULL) return;
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("cannot read the store's schema (%s): %s", zWhat,
                           sqlite3_errmsg(db));
}

const char *schemaFingerprintSql(void) {
  return zLoadSql;
}

int schemaFingerprintStmt(sqlite3_stmt *pStmt, sqlite3_uint64 *pFp) {
  sqlite3_uint64 fp = 0, n = 0;
  int rc;
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    fp += schemaRowHash(pStmt);
    n++;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  sqlite3_reset(pStmt);
  *pFp = fp + schemaMix(n);
  return rc;
}

int schemaFingerprint(sqlite3 *db, sqlite3_uint64 *pFp, char **pzErr) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, zLoadSql, -1, &pStmt, NULL);
  *pFp = 0;
  if (rc == SQLITE_OK) rc = schemaFingerprintStmt(pStmt, pFp);
  if (rc != SQLITE_OK) schemaSetErr(pzErr, db, "fingerprint");
  sqlite3_finalize(pStmt);
  return rc;
}

/* ---------------------------------------------------------------- loading */

/* Growable arrays used only while loading. */
typedef struct IdentRow { sqlite3_int64 e; int iOff; int n; } IdentRow;
typedef struct DefRow { sqlite3_int64 e, a, v; } DefRow;

typedef struct SchemaLoader {
  IdentRow *aIdent; int nIdent, nIdentAlloc;
  DefRow *aDef; int nDef, nDefAlloc;
  DefRow *aNoHist; int nNoHist, nNoHistAlloc;
  sqlite3_str *pStr;          /* ident text, each NUL-terminated */
  int nStr;                   /* bytes appended so far */
} SchemaLoader;

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
  return (unsigned int)schemaMix((sqlite3_uint64)e);
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

static void schemaLoaderFree(SchemaLoader *pL) {
  sqlite3_free(pL->aIdent);
  sqlite3_free(pL->aDef);
  sqlite3_free(pL->aNoHist);
  if (pL->pStr) sqlite3_free(sqlite3_str_finish(pL->pStr));
  memset(pL, 0, sizeof *pL);
}

/* Reads every row (and the fingerprint) into pL. */
static int schemaReadRows(sqlite3 *db, SchemaLoader *pL, sqlite3_uint64 *pFp) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_uint64 fp = 0, nRow = 0;
  int rc = sqlite3_prepare_v2(db, zLoadSql, -1, &pStmt, NULL);
  if (rc != SQLITE_OK) goto cleanup;
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    int iSrc = sqlite3_column_int(pStmt, 0);
    sqlite3_int64 e = sqlite3_column_int64(pStmt, 1);
    sqlite3_int64 a = sqlite3_column_int64(pStmt, 2);
    fp += schemaRowHash(pStmt);
    nRow++;
    if (iSrc == SRC_IDENTS) {
      /* Only keyword-valued :db/ident rows name an entity. */
      if (a != ENTID_DB_IDENT || sqlite3_column_type(pStmt, 3) != SQLITE_TEXT) continue;
      const char *z = (const char *)sqlite3_column_text(pStmt, 3);
      int n = sqlite3_column_bytes(pStmt, 3);
      if (z == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
      rc = schemaGrow((void **)&pL->aIdent, &pL->nIdentAlloc, pL->nIdent, sizeof(IdentRow));
      if (rc != SQLITE_OK) goto cleanup;
      IdentRow *pRow = &pL->aIdent[pL->nIdent++];
      pRow->e = e;
      pRow->iOff = pL->nStr;
      pRow->n = n;
      sqlite3_str_append(pL->pStr, z, n);
      sqlite3_str_appendchar(pL->pStr, 1, 0);
      rc = sqlite3_str_errcode(pL->pStr);
      if (rc != SQLITE_OK) goto cleanup;
      pL->nStr += n + 1;
    } else if (iSrc == SRC_SCHEMA) {
      if (a < ENTID_DB_VALUETYPE || a > ENTID_DB_FULLTEXT) continue;
      rc = schemaGrow((void **)&pL->aDef, &pL->nDefAlloc, pL->nDef, sizeof(DefRow));
      if (rc != SQLITE_OK) goto cleanup;
      DefRow *pRow = &pL->aDef[pL->nDef++];
      pRow->e = e;
      pRow->a = a;
      pRow->v = sqlite3_column_int64(pStmt, 3);
    } else {
      rc = schemaGrow((void **)&pL->aNoHist, &pL->nNoHistAlloc, pL->nNoHist, sizeof(DefRow));
      if (rc != SQLITE_OK) goto cleanup;
      DefRow *pRow = &pL->aNoHist[pL->nNoHist++];
      pRow->e = e;
      pRow->a = a;
      pRow->v = sqlite3_column_int64(pStmt, 3);
    }
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
cleanup:
  sqlite3_finalize(pStmt);
  *pFp = fp + schemaMix(nRow);
  return rc;
}


/* Builds the snapshot's tables from the loaded rows. */
static int schemaBuild(Schema *p, SchemaLoader *pL) {
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
    /* :db/unique implies the index (SPEC §5, as the Rust engine demands). */
    if (attr.eUnique != UNIQUE_NONE) attr.bIndex = 1;
    int iEnt = schemaAddEnt(p, attr.e);
    attr.zIdent = p->aEnt[iEnt].zIdent;
    p->aEnt[iEnt].iAttr = p->nAttr;
    p->aAttr[p->nAttr++] = attr;
  }

  /* :db/noHistory lives only in datoms. */
  for (int i = 0; i < pL->nNoHist; i++) {
    int iEnt = schemaFindEnt(p, pL->aNoHist[i].e);
    if (iEnt >= 0 && p->aEnt[iEnt].iAttr >= 0) {
      p->aAttr[p->aEnt[iEnt].iAttr].bNoHistory = (pL->aNoHist[i].v != 0);
    }
  }
  return SQLITE_OK;
}

/* Marks the attributes the store gave a covering value index
** idx_mentat_avet_<a> (store_tune.c), so compiled queries look values up
** there. A store without the table (not v3) or the rows has none. Not part
** of the fingerprint: an index made by another process is seen at this
** process's next reload; until then queries use the format's indexes,
** which is slower but gives the same rows. */
static int schemaReadValueIndexes(sqlite3 *db, Schema *p) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db,
      "SELECT m.a FROM mentat_managed_indexes m JOIN sqlite_master s ON s.name = m.name"
      " WHERE s.type = 'index' AND m.kind = 'adaptive' AND m.name = 'idx_mentat_avet_' || m.a",
      -1, &pStmt, NULL);
  if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_OK;
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    int iEnt = schemaFindEnt(p, sqlite3_column_int64(pStmt, 0));
    if (iEnt >= 0 && p->aEnt[iEnt].iAttr >= 0) p->aAttr[p->aEnt[iEnt].iAttr].bValueIndex = 1;
  }
  sqlite3_finalize(pStmt);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
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

int schemaLoad(sqlite3 *db, Schema **ppOut, char **pzErr) {
  SchemaLoader loader;
  Schema *p = NULL;
  int rc;

  *ppOut = NULL;
  memset(&loader, 0, sizeof loader);
  loader.pStr = sqlite3_str_new(db);
  p = sqlite3_malloc64(sizeof(Schema));
  if (p == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  memset(p, 0, sizeof *p);
  atomic_init(&p->nRef, 1);

  rc = schemaReadRows(db, &loader, &p->fp);
  if (rc != SQLITE_OK) {
    if (rc != SQLITE_NOMEM) schemaSetErr(pzErr, db, "load");
    goto cleanup;
  }
  rc = schemaBuild(p, &loader);
  if (rc == SQLITE_OK) rc = schemaReadValueIndexes(db, p);
  if (rc != SQLITE_OK) {
    if (rc != SQLITE_NOMEM) schemaSetErr(pzErr, db, "load");
    goto cleanup;
  }
  p->iGeneration = atomic_fetch_add(&gGeneration, 1) + 1;

cleanup:
  schemaLoaderFree(&loader);
  if (rc == SQLITE_NOMEM && pzErr) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("out of memory loading the schema");
  }
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
