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
  VT_BYTES
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

int vtTag(ValueType t);
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

#endif /* MENTAT_VALUE_H */
