/*
** schema.h — an immutable, reference-counted snapshot of a store's idents
** and attribute definitions, built from rows with no database.
**
** Takes in ident and definition rows (a SchemaBuilder; the store stage's
** storeSchemaLoad reads them from the `idents` and `schema` tables);
** gives out Schema lookups; calls nothing but SQLite's allocator. Shared
** by every connection and thread of a store (SPEC.md §4): a snapshot is
** never modified after schemaBuild() returns; a schema change builds a new
** one and the store swaps it in whole. Lookups are O(1) hash probes.
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
  unsigned char eTuple;     /* TUPLE_*: which kind of :db.type/tuple (type VT_TUPLE) */
  unsigned char bTupleSource; /* named by some composite's :db/tupleAttrs */
  ValueTupleSpec tuple;     /* element types (a composite's: its components') */
  sqlite3_int64 aTupleAttr[VALUE_TUPLE_MAX]; /* composite: the component attributes */
} Attr;

/* Kinds of tuple attribute (Datomic's three). Stored as :db.type/bytes in
** the `schema` mirror, so the Rust engine reads the values as opaque
** bytes; the definition datoms below (in `datoms` only) make it a tuple. */
#define TUPLE_NONE      0
#define TUPLE_COMPOSITE 1   /* :db/tupleAttrs, kept by the transactor */
#define TUPLE_FIXED     2   /* :db/tupleTypes */
#define TUPLE_HOMO      3   /* :db/tupleType */

/* The tuple vocabulary's idents. Not in the bootstrap (the format fixes
** its 40 idents): the transactor installs them in :db.part/db with the
** first transaction that names one. :db/tupleAttrs and :db/tupleTypes
** hold homogeneous keyword tuples, :db/tupleType a keyword. */
#define SCHEMA_TUPLE_ATTRS ":db/tupleAttrs"
#define SCHEMA_TUPLE_TYPES ":db/tupleTypes"
#define SCHEMA_TUPLE_TYPE  ":db/tupleType"
#define SCHEMA_TYPE_TUPLE  ":db.type/tuple"

typedef struct Schema Schema;

/* Building a snapshot: rows go in in any number and order, then
** schemaBuild makes the Schema. Every add returns an SQLite code
** (SQLITE_NOMEM); after a failure the builder keeps that code, later adds
** do nothing, and schemaBuild returns it. */
typedef struct SchemaBuilder SchemaBuilder;
int schemaBuilderNew(SchemaBuilder **ppOut);
/* Frees a builder schemaBuild was not given (NULL is a no-op). */
void schemaBuilderFree(SchemaBuilder *p);
/* Entity e is named by keyword zKw (":ns/name", nKw bytes or -1 for
** NUL-terminated; copied). An entity keeps its first ident and a keyword
** its first entity (the store's mirror is unique; a damaged one must not
** crash). */
int schemaBuilderIdent(SchemaBuilder *p, sqlite3_int64 e, const char *zKw, int nKw);
/* The definition datom [e a v] of attribute e, a one of
** ENTID_DB_VALUETYPE .. ENTID_DB_NOHISTORY (7..13): for :db/valueType,
** :db/cardinality and :db/unique v is the entid of the value
** (ENTID_DB_TYPE_REF .. ENTID_DB_TYPE_BYTES, ENTID_DB_CARD_*,
** ENTID_DB_UNIQUE_*), for the flags 0 or 1. Other a are ignored. Only an
** entity with a :db/valueType is an attribute; :db/unique implies
** :db/index. */
int schemaBuilderDef(SchemaBuilder *p, sqlite3_int64 e, sqlite3_int64 a, sqlite3_int64 v);
/* Attribute e has the store's covering value index idx_mentat_avet_<e>
** (Attr.bValueIndex). */
int schemaBuilderValueIndex(SchemaBuilder *p, sqlite3_int64 e);
/* A tuple definition datom of attribute e: kind TUPLE_COMPOSITE
** (:db/tupleAttrs), TUPLE_FIXED (:db/tupleTypes) — z the stored tuple of
** keywords — or TUPLE_HOMO (:db/tupleType) — z the keyword text; copied.
** The attribute (stored as bytes) becomes a VT_TUPLE one; keywords that
** name nothing usable leave it bytes. */
int schemaBuilderTuple(SchemaBuilder *p, sqlite3_int64 e, int kind, const void *z, int n);
/* Builds the snapshot from p's rows, with fp as its fingerprint
** (schemaFingerprintOf; the loader's hash of the rows it read, 0 for a
** snapshot of no store), and frees p whatever happens. *ppOut has one
** reference. Returns SQLITE_OK or SQLITE_NOMEM. */
int schemaBuild(SchemaBuilder *p, sqlite3_uint64 fp, Schema **ppOut);

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

/* The fingerprint the snapshot was built with: the store compares it with
** the file's after another connection committed, to reload only when the
** schema really changed (store_revalidate.c). */
sqlite3_uint64 schemaFingerprintOf(const Schema *p);

/* The hashes of the lookup tables, for the loader's fingerprint too:
** FNV-1a of n bytes, and a strong 64-bit mix (splitmix64's finaliser) so
** that summing row hashes does not let simple changes cancel out. */
sqlite3_uint64 schemaHashBytes(const unsigned char *z, int n);
sqlite3_uint64 schemaHashMix(sqlite3_uint64 x);

#endif /* MENTAT_SCHEMA_H */
