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

/* Flags for pullEntityEx. */
#define PULL_WITH_DBID 0x01   /* edn_pull (SPEC §2.2): the top-level map always
                              ** has ":db/id" (appended last when the pattern
                              ** does not produce it). Query pulls leave it to
                              ** the pattern, as Datomic does, so pullEntity
                              ** (flags 0) is what `(pull ?e [...])` in :find
                              ** uses. */
#define PULL_NIL_EMPTY 0x02   /* the root map writes null (Datomic: nil) when
                              ** it would hold no key of the pattern's own
                              ** (the appended :db/id aside): :find's pull */
#define PULL_NIL_ID    0x04   /* an id <= 0 names no entity (ids start at
                              ** 1): null whatever the pattern. edn_pull
                              ** takes this one only, as SPEC §2.2's map
                              ** always carries :db/id for an id > 0 */

/* Prepared statements for pulls on ONE connection (the store connection a
** caller has checked out). Opaque; created by pullEntityEx, owned by the
** caller (e.g. kept inside StoreConn.pQueryCache), freed with pullCacheFree()
** before that connection is closed. Keyed by nothing global (no static
** state): whoever holds the connection holds its cache. */
typedef struct PullCache PullCache;
void pullCacheFree(PullCache *p);   /* NULL is a no-op; finalizes statements */

/* pullEntity with flags (PULL_*) and an optional statement cache.
** ppCache NULL: statements are prepared for this call and finalized.
** *ppCache NULL: a cache for db is created and stored in *ppCache.
** *ppCache made for another connection: SQLITE_MISUSE with a message.
** On error pOut may hold a partial map: the caller discards it. */
int pullEntityEx(sqlite3 *db, const Schema *pSchema, const EdnValue *pPattern,
                 sqlite3_int64 e, unsigned flags, PullCache **ppCache,
                 sqlite3_str *pOut, char **pzErr);

/* Pull under time travel (SPEC.md §6). pullEntity and pullEntityEx pull
** the current database. */

/* Which database a pull reads, in tx ids (not instants: see
** pullTxAtInstant). bAsOf: Datomic's as-of db — every assertion in the log
** with tx <= iAsOf that no later log row of that datom up to iAsOf undoes
** (the rule query_compile_sql.c compiles for an as-of data pattern).
** bSince: Datomic's since db — the current datoms asserted with
** tx > iSince. Both set: the since db of the as-of db (the as-of live
** assertions with tx > iSince), as Datomic composes them; edn_q refuses
** both together before this is reached. */
typedef struct PullTime {
  int bAsOf;
  sqlite3_int64 iAsOf;     /* inclusive */
  int bSince;
  sqlite3_int64 iSince;    /* exclusive */
} PullTime;

/* pullEntityEx reading the database pTime names (NULL: the current one).
** Every read follows pTime: forward attributes, the wildcard's attribute
** list, reverse refs, component expansion, recursion, fulltext text.
** An entity with nothing visible at that time gives {":db/id": e}, as a
** missing entity does now (both flag settings). :db/noHistory attributes
** keep only their current values in the log, so an as-of pull shows those
** (from their tx on) and no past ones, as as-of queries do.
** ppCache as in pullEntityEx; one cache serves every mode (each mode has
** its own statements in it). */
int pullEntityAt(sqlite3 *db, const Schema *pSchema, const EdnValue *pPattern,
                 sqlite3_int64 e, unsigned flags, const PullTime *pTime,
                 PullCache **ppCache, sqlite3_str *pOut, char **pzErr);

/* The tx id an asOf/since instant names, the rule query_compile.c uses:
** the last transaction whose :db/txInstant is at or before pInst (epoch
** µs), 0 when there is none or pInst is not an EDN_INST. Read it in the
** same read transaction as the query it goes with. Errors: SQLite's, in
** *pzErr with "pull: ". */
int pullTxAtInstant(sqlite3 *db, const EdnValue *pInst, sqlite3_int64 *piTx, char **pzErr);

/* The host's interrupt, asked as a pull writes its map: the values' JSON
** is written outside the store's VM, whose progress handler counts only
** the statements' own instructions (a few per value, however long the
** value), so a pull of many or large values could run on long after an
** interrupt (issue 19 R3). xPoll(pArg) is asked every PULL_POLL_ITEMS
** values and maps, and after every PULL_POLL_BYTES of the map (pull.c);
** it should be cheap and gate itself in time (intrWatchPoll); nonzero
** stops the pull with SQLITE_INTERRUPT (no message). */
typedef struct PullPoll {
  int (*xPoll)(void *pArg);
  void *pArg;
} PullPoll;

/* pullEntityEx with the pattern as EDN text (one vector). With a cache the
** compiled pattern is kept there, so a repeated call with the same text on
** the same schema snapshot reads and resolves nothing (only the last text
** is kept). Errors: unreadable EDN or a non-vector give SQLITE_ERROR with
** "pattern: line L col C: ..."; a bad shape pullCompile's "pull pattern:
** line L col C: ...". Always the current database. pPoll (NULL: none)
** is asked as the map is written (PullPoll). */
int pullEntityText(sqlite3 *db, const Schema *pSchema, const char *zPattern, int nPattern,
                   sqlite3_int64 e, unsigned flags, PullCache **ppCache, const PullPoll *pPoll,
                   sqlite3_str *pOut, char **pzErr);

#endif /* MENTAT_PULL_H */
