/*
** schema.h — an immutable, reference-counted snapshot of a store's idents
** and attribute definitions, read from the `idents` and `schema` tables.
**
** Shared by every connection and thread of a store (SPEC §4): a snapshot is
** never modified after schemaLoad() returns; a schema change builds a new one
** and the store swaps it in whole. Lookups are O(1) hash probes.
*/
#ifndef MENTAT_SCHEMA_H
#define MENTAT_SCHEMA_H

#include "value.h"

#define UNIQUE_NONE     0
#define UNIQUE_VALUE    1   /* :db.unique/value */
#define UNIQUE_IDENTITY 2   /* :db.unique/identity (upserts) */

/* Well-known entids from the bootstrap (format/mentat-v3.md). */
#define ENTID_DB_IDENT           1
#define ENTID_DB_PART_DB         2
#define ENTID_DB_TXINSTANT       3
#define ENTID_DB_INSTALL_PARTITION 4
#define ENTID_DB_INSTALL_VALUETYPE 5
#define ENTID_DB_INSTALL_ATTRIBUTE 6
#define ENTID_DB_VALUETYPE       7
#define ENTID_DB_CARDINALITY     8
#define ENTID_DB_UNIQUE          9
#define ENTID_DB_ISCOMPONENT    10
#define ENTID_DB_INDEX          11
#define ENTID_DB_FULLTEXT       12
#define ENTID_DB_NOHISTORY      13
#define ENTID_DB_ADD            14
#define ENTID_DB_RETRACT        15
#define ENTID_DB_PART_USER      16
#define ENTID_DB_PART_TX        17
#define ENTID_DB_ALTER_ATTRIBUTE 22
#define ENTID_DB_TYPE_REF       23
#define ENTID_DB_TYPE_BYTES     32
#define ENTID_DB_CARD_ONE       33
#define ENTID_DB_CARD_MANY      34
#define ENTID_DB_UNIQUE_VALUE   35
#define ENTID_DB_UNIQUE_IDENTITY 36
#define ENTID_DB_DOC            37
#define ENTID_DB_SCHEMA_VERSION 38
#define ENTID_DB_SCHEMA_ATTRIBUTE 39
#define ENTID_DB_SCHEMA_CORE    40

#define PART_USER_START  65536LL
#define PART_TX_START    268435456LL

/* One attribute. */
typedef struct Attr {
  sqlite3_int64 e;      /* the attribute's entid */
  const char *zIdent;   /* ":ns/name", owned by the Schema; NULL if none */
  ValueType type;
  unsigned char bMany;      /* :db.cardinality/many */
  unsigned char eUnique;    /* UNIQUE_* */
  unsigned char bIndex;     /* :db/index (implied by :db/unique) */
  unsigned char bComponent; /* :db/isComponent */
  unsigned char bFulltext;  /* :db/fulltext */
  unsigned char bNoHistory; /* :db/noHistory */
  unsigned char bValueIndex; /* the store has idx_mentat_avet_<e> (store_tune.c),
                            ** a covering (a, v, e) index of this attribute */
} Attr;

typedef struct Schema Schema;

/* Loads a snapshot from the store connection db (reads `idents`, `schema`
** and the :db/noHistory datoms, and which attributes have a managed value
** index in `mentat_managed_indexes`). *ppOut has one reference. Returns an
** SQLite code; on error *pzErr (sqlite3_malloc'd) says why. */
int schemaLoad(sqlite3 *db, Schema **ppOut, char **pzErr);

void schemaRef(Schema *p);
void schemaUnref(Schema *p);   /* frees at zero; NULL is a no-op */

/* Entid of an ident keyword (text with leading ':'), or 0 if unknown. */
sqlite3_int64 schemaEntid(const Schema *p, const char *zKw, int nKw);
/* Ident keyword of an entid, or NULL. Owned by the schema. */
const char *schemaIdent(const Schema *p, sqlite3_int64 e);
/* The attribute with entid e, or NULL if e is not an attribute. */
const Attr *schemaAttr(const Schema *p, sqlite3_int64 e);
/* The attribute named by keyword, or NULL. */
const Attr *schemaAttrByIdent(const Schema *p, const char *zKw, int nKw);
/* Iteration over all attributes (for pull's wildcard): i from 0 while < n. */
int schemaAttrCount(const Schema *p);
const Attr *schemaAttrAt(const Schema *p, int i);

/* A number that changes whenever a different snapshot is loaded; compiled
** query plans remember it to know they are stale. */
sqlite3_int64 schemaGeneration(const Schema *p);

/* An order-independent 64-bit hash of the rows a snapshot is built from
** (`idents`, `schema`, the :db/noHistory datoms). The store compares the
** fingerprint of the file with the published snapshot's after another
** connection committed, to reload only when the schema really changed.
** schemaFingerprint reads db (run it in the same read transaction as any
** schemaLoad it decides on); schemaFingerprintOf is the loaded one's. */
int schemaFingerprint(sqlite3 *db, sqlite3_uint64 *pFp, char **pzErr);
sqlite3_uint64 schemaFingerprintOf(const Schema *p);
/* The same, for callers that revalidate often and keep the statement:
** pStmt is prepared from schemaFingerprintSql() on the connection; it is
** stepped to the end and reset. Returns an SQLite code. */
const char *schemaFingerprintSql(void);
int schemaFingerprintStmt(sqlite3_stmt *pStmt, sqlite3_uint64 *pFp);

#endif /* MENTAT_SCHEMA_H */
