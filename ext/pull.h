/*
** pull.h — Datomic's pull: an entity and a pull pattern to a JSON map
** (SPEC §2.2, §2.3: refs as {":db/id": n}, instants as epoch µs,
** cardinality-many and reverse attributes as arrays).
*/
#ifndef MENTAT_PULL_H
#define MENTAT_PULL_H

#include "store.h"

/* Appends the JSON map for entity e under pattern pPattern (an EDN vector)
** to pOut, reading through db (a store connection the caller has checked
** out) with schema pSchema. Entities with no datoms give {":db/id": e}.
** Errors (bad pattern: "pull pattern: line 1 col 3: expected ...")
** set *pzErr (sqlite3_malloc'd) and return SQLITE_ERROR. */
int pullEntity(sqlite3 *db, const Schema *pSchema, const EdnValue *pPattern,
               sqlite3_int64 e, sqlite3_str *pOut, char **pzErr);

/* Checks a pull pattern's shape without reading data (used when a query is
** compiled, so a bad pattern fails before any row). */
int pullValidate(const Schema *pSchema, const EdnValue *pPattern, char **pzErr);

#endif /* MENTAT_PULL_H */
