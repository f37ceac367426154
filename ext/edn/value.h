/*
** value.h — datom values: the value types of the store, their tags and
** encodings (format/mentat-v3.md, SPEC §2.3), and the bridges EDN → stored
** value → SQL parameter / JSON / native column.
**
** A stored value is a pair (v, value_type_tag) in the datoms table. Long and
** double share tag 5 and differ by SQLite storage class; instant is INTEGER
** µs with tag 4; uuid a 16-byte BLOB with tag 11.
*/
#ifndef MENTAT_VALUE_H
#define MENTAT_VALUE_H

#include "edn.h"

/* Value types of attributes. The numbering is ours; vtTag() maps to tags. */
typedef enum ValueType {
  VT_NONE = 0,   /* unknown / not yet determined */
  VT_REF,
  VT_BOOLEAN,
  VT_INSTANT,
  VT_LONG,
  VT_DOUBLE,
  VT_STRING,
  VT_UUID,
  VT_KEYWORD,
  VT_BYTES,
  VT_TUPLE       /* :db.type/tuple: stored as a tag-15 blob (value_tuple.c) */
} ValueType;

/* Store tags (format/mentat-v3.md "Value encoding"). */
#define TAG_REF      0
#define TAG_BOOLEAN  1
#define TAG_INSTANT  4
#define TAG_NUMBER   5   /* long (INTEGER) and double (REAL) */
#define TAG_STRING  10
#define TAG_UUID    11
#define TAG_KEYWORD 13
#define TAG_BYTES   15
/* Not a stored tag: the value is JSON text a query made (a tuple, ground
** of a collection), carried through rule results and untyped columns. */
#define TAG_JSON    (-1)
/* Not a stored tag either: a tuple value, stored as a TAG_BYTES blob in the
** order-preserving encoding of value_tuple.c. Queries and pull know it
** from the attribute and print it as a JSON array. */
#define TAG_TUPLE   (-3)
/* Not a stored tag either: a regular expression pattern (re-pattern's
** result, Clojure's java.util.regex.Pattern), held as its source text; the
** tag is what tells it from a string, which re-find does not take. */
#define TAG_PATTERN (-4)

int vtTag(ValueType t);
/* The tag a value of type t is printed by: vtTag(t), but TAG_TUPLE for
** tuples (whose stored tag is TAG_BYTES). */
int vtOutTag(ValueType t);
/* The value type from a :db.type/... entid (23..32), or VT_NONE (0) if the
** entid is not a type this store can hold (29 :db.type/uri has no tag). */
ValueType vtFromTypeEntid(sqlite3_int64 e);
/* ":db.type/long" etc. for messages; "unknown" for VT_NONE. */
const char *vtName(ValueType t);

/* One datom value ready to bind. For STRING/KEYWORD/BYTES z,n point into
** memory owned by whoever built it (usually an EdnArena); UUID uses a[16].
** i holds REF/BOOLEAN/INSTANT/LONG; d holds DOUBLE. For BYTES z,n are the
** raw bytes (the reader decodes #bytes "hex", see edn.h). */
typedef struct TypedValue {
  ValueType type;
  sqlite3_int64 i;
  double d;
  const char *z;
  int n;
  unsigned char uuid[16];
} TypedValue;

/* Converts an EDN literal to the value type an attribute demands.
** Refs are NOT resolved here (idents, tempids, lookup refs are the caller's):
** for VT_REF only an EDN_INT entid is accepted. Errors (type mismatch, NaN,
** -0.0 normalised to 0.0 instead) produce a message in *pzErr
** (sqlite3_malloc'd, caller frees) naming the expected type:
** "expected :db.type/long, got a string". Returns SQLITE_OK/ERROR/NOMEM. */
int valueFromEdn(const EdnValue *p, ValueType want, TypedValue *pOut, char **pzErr);

/* The natural type of an EDN literal with no attribute to guide it (query
** constants and inputs): INT → LONG, DOUBLE → DOUBLE, STRING, KEYWORD, BOOL,
** INST, UUID, and #bytes "hex" → BYTES. Returns VT_NONE for anything else. */
ValueType valueNaturalType(const EdnValue *p);

/* Binds the stored encoding of pVal (v column) to parameter i. */
int valueBind(sqlite3_stmt *pStmt, int i, const TypedValue *pVal);

/* As valueBind, but string and keyword text is bound SQLITE_STATIC, not
** copied: the caller keeps pVal->z alive and unchanged until the statement
** is reset and its bindings cleared (qRunClose does both before the query
** inputs go; qSpillRest clears the statement it hands over to the spill).
** A copy costs a malloc a parameter: 100 of them for a 100-element
** collection input. */
int valueBindStatic(sqlite3_stmt *pStmt, int i, const TypedValue *pVal);

/* Appends the JSON form (SPEC §2.3, `edn_q` column) of a stored value given
** as the v column and its tag. bPull selects the edn_pull form (refs as
** {":db/id": n}, instants as epoch µs). SQLITE_NOMEM when reading pV's
** text or bytes runs out of memory (nothing is appended then: the value
** must not pass for "" or x''); otherwise SQLITE_OK, and pOut's own
** errors stay in pOut. */
int valueJsonFromStored(sqlite3_str *pOut, sqlite3_value *pV, int tag, int bPull);

/* Sets the native SQL result (the `cN` columns, SPEC §2.3) for a stored
** value and its tag: instants as RFC 3339 TEXT, uuids as hyphenated TEXT,
** booleans 0/1, bytes BLOB, keywords TEXT. */
void valueResultFromStored(sqlite3_context *pCtx, sqlite3_value *pV, int tag);

/* ---- tuples (value_tuple.c) ----------------------------------------
** A tuple value is 2..8 scalar elements, each of a type the attribute
** fixes, or nil. Stored as one BLOB whose bytes sort (memcmp, as SQLite
** compares blobs in the value index) in Datomic's tuple order: element by
** element, nil before any value, a tuple before a longer one it starts.
** Per element a header byte (VTUP_* below; an entid is written as a
** long, so a query's literal matches by its natural type), then the
** payload: 8 bytes big-endian with the sign bit flipped for long/instant; for a double
** its IEEE bits, all flipped when negative, else the sign bit set; 1 byte
** for a boolean; the 16 bytes of a uuid; for string, keyword (with its
** colon) and bytes the bytes with 0x00 written 0x00 0xFF, then 0x00 0x01.
** The tuple ends with 0x00. */
#define VALUE_TUPLE_MIN 2
#define VALUE_TUPLE_MAX 8
#define VTUP_END     0x00
#define VTUP_NIL     0x01
#define VTUP_BOOLEAN 0x11
#define VTUP_INSTANT 0x12
#define VTUP_LONG    0x13
#define VTUP_DOUBLE  0x14
#define VTUP_STRING  0x15
#define VTUP_KEYWORD 0x16
#define VTUP_UUID    0x17
#define VTUP_BYTES   0x18

/* The element types of a tuple attribute: nFixed types for a composite
** or :db/tupleTypes tuple, or (nFixed 0) any 2..8 elements of aType[0]
** (:db/tupleType). bComposite only words the messages. */
typedef struct ValueTupleSpec {
  int nFixed;
  int bComposite;
  ValueType aType[VALUE_TUPLE_MAX];
} ValueTupleSpec;

/* A decoded tuple: n elements (type VT_NONE for nil); text and bytes point
** into zBuf, which valueTupleClear frees. */
typedef struct ValueTuple {
  int n;
  TypedValue a[VALUE_TUPLE_MAX];
  char *zBuf;
} ValueTuple;

/* Is t a type a tuple element may have (any scalar type but tuple)? */
int valueTupleElemOk(ValueType t);

/* Encodes n elements (VT_NONE = nil) into pOut (its errors stay in it). */
void valueTupleEncode(sqlite3_str *pOut, const TypedValue *a, int n);

/* An EDN vector as a tuple of spec's types: *pOut gets type VT_TUPLE and
** the encoding, copied into pArena. Refs must be entids (EDN_INT). Errors
** (wrong shape, arity, element type) set *pzErr (sqlite3_malloc'd), e.g.
** "tuple element 2: expected :db.type/long, got a string", and *ppAt to
** the form they are about. Returns SQLITE_OK/ERROR/NOMEM. */
int valueTupleFromEdn(const EdnValue *p, const ValueTupleSpec *pSpec, EdnArena *pArena,
                      TypedValue *pOut, char **pzErr, const EdnValue **ppAt);

/* A query's EDN vector as a tuple of its elements' natural types (no
** attribute to guide it): *pzOut (sqlite3_malloc'd) and *pnOut. Returns
** SQLITE_ERROR when p is no vector of 1..8 scalars or nils. */
int valueTupleFromEdnNatural(const EdnValue *p, char **pzOut, int *pnOut);

/* Decodes an encoding (entids come back as longs); SQLITE_ERROR when
** z[0..n) is not one. */
int valueTupleDecode(const void *z, int n, ValueTuple *pOut);
void valueTupleClear(ValueTuple *p);

/* Appends the JSON array of an encoding (elements as valueJsonFromStored
** prints them, refs as plain entids; bPull: instants as epoch µs), or the
** EDN vector (bEdn). Returns SQLITE_NOMEM, SQLITE_ERROR for a blob that
** is not a tuple (nothing appended), else SQLITE_OK. */
int valueTupleJson(sqlite3_str *pOut, const void *z, int n, int bPull);
int valueTupleEdn(sqlite3_str *pOut, const void *z, int n);

#endif /* MENTAT_VALUE_H */
