/*
** func_common.h — what the SQL functions (func_t.c, func_q.c, func_pull.c)
** and the edn_q table (vtab/edn_q.c) share at the SQL boundary: reading
** arguments with their explicit lengths, refusing the host's own database
** as a store, and turning internal error codes and messages into SQLite
** results that start with the function's name (SPEC §7).
*/
#ifndef MENTAT_FUNC_COMMON_H
#define MENTAT_FUNC_COMMON_H

#include "sqlite_api.h"

/* Flags every function of the extension is registered with: UTF-8, never
** deterministic (they read and write files), DIRECTONLY so views and
** triggers cannot call them (SPEC §2), and SQLITE_RESULT_SUBTYPE on hosts
** that know it (3.45+), since the results carry the JSON subtype. */
int funcFlags(void);

/* Checks that zPath (the `db_path` argument, NUL-terminated, n bytes) may
** be used as a store from host connection `host`: TEXT (eType is the
** argument's sqlite3_value_type, taken before any sqlite3_value_text call
** converts it), not ":memory:" or a "file:" URI, no NUL byte inside, and
** not the file of the host's own `main` database (compared by device and
** inode, so relative paths, symlinks and hard links are caught).
** Returns SQLITE_OK, or SQLITE_ERROR with *pzErr (sqlite3_malloc'd, any
** previous one freed) like "db_path /x.db is the host's own database". */
int funcCheckDbPath(sqlite3 *host, int eType, const char *zPath, int n, char **pzErr);

/* Sets an error result "<zFunc>: <zErr>". rc SQLITE_NOMEM gives the
** host's out-of-memory error, SQLITE_TOOBIG its too-big error; any other
** code than SQLITE_ERROR is kept as the error code (interrupts, busy).
** zErr may be NULL (the code's own text is used). Does not free zErr. */
void funcResultError(sqlite3_context *pCtx, const char *zFunc, int rc, const char *zErr);

/* Finishes pOut (a sqlite3_str) as the function's JSON text result with
** subtype 74 (SPEC §2: json_object() nests it), or as the matching error
** when the builder failed (OOM, too big). Always consumes pOut. */
void funcResultJson(sqlite3_context *pCtx, const char *zFunc, sqlite3_str *pOut);

/* Results built in a reusable string (*ppBuf, e.g. qConnOutBuf's slot):
** every string grows through reallocations, each under SQLite's global
** allocator mutex when memory statistics are on (Debian's build), which
** two threads contend for. funcOutBegin returns the string to append to
** (a new one when the slot is empty or past FUNC_OUT_KEEP bytes) and the
** offset where this result starts; NULL on OOM. funcOutResultJson sets
** the text appended since then as the JSON result (subtype 74): copied,
** or for a large result the whole string is handed to SQLite and the slot
** emptied. On a string error it reports it (as funcResultError) and
** empties the slot. */
#define FUNC_OUT_KEEP 65536
sqlite3_str *funcOutBegin(sqlite3_str **ppBuf, int *piStart);
void funcOutResultJson(sqlite3_context *pCtx, const char *zFunc, sqlite3_str **ppBuf, int iStart);

/* Passes sqlite3_interrupt() on the host connection on to the store's
** connections, whose long statements (aggregates, recursive rules, big
** transactions) would otherwise ignore it: a store connection runs its own
** VM, and the host's VM only looks at its flag between our calls (peer
** fault B32). A progress handler on the store connection steps a trivial
** "SELECT 1" on the host, which fails with SQLITE_INTERRUPT once the host
** is interrupted (SQLite checks the flag when a statement starts; 3.41's
** sqlite3_is_interrupted is not available on older hosts), and the store
** statement then stops with SQLITE_INTERRUPT.
**
** Two ways to attach a watch: to a checked-out reader (pStoreDb, the
** queries and pulls), or, with pStoreDb NULL, to the calling thread (edn_t:
** the transactor picks the writer connection itself). Every store
** connection carries funcWatchInstall()'s handler, which serves the
** thread's watch; a reader watch replaces it while active and End puts it
** back. Zero-initialise; End is idempotent and must run before the
** connection goes back to the pool. Without a probe nothing is watched. */
typedef struct FuncWatch FuncWatch;
struct FuncWatch {
  sqlite3 *pStoreDb;        /* watched reader connection, or NULL */
  sqlite3 *pHost;           /* the host connection watched */
  sqlite3_stmt *pProbe;     /* "SELECT 1" on the host, prepared at first use */
  int bProbeFailed;         /* could not prepare it: polling is off */
  FuncWatch *pPrev;         /* thread watch: the one it covers */
  int bThread;              /* a thread watch is active */
};
void funcWatchBegin(FuncWatch *pWatch, sqlite3 *host, sqlite3 *pStoreDb);
/* Prepares the watch's probe now rather than at its first look. edn_t
** calls it before writing: a prepare on the host connection that ran out of
** memory in the middle of a transaction would fail the host's statement
** after the transaction committed. SQLITE_NOMEM, or SQLITE_OK (another
** failure only turns the probe off). */
int funcWatchPrepare(FuncWatch *pWatch);
void funcWatchEnd(FuncWatch *pWatch);
/* True when the host connection of a begun watch has been interrupted. */
int funcWatchInterrupted(FuncWatch *pWatch);
/* Switches a reader watch's polling off (bPause) or back on. Off while
** another thread (a writer setting a cursor's rest aside, B25) runs the
** reader's statement: a probe steps the host connection, whose own thread
** may be the one waiting for that other thread. No-op where the host's
** SQLite has no progress handler. */
void funcWatchPause(FuncWatch *pWatch, int bPause);
/* The store connection hook's part: the handler serving thread watches. */
void funcWatchInstall(sqlite3 *pStoreDb);

/* The SQL function implementations, registered by funcRegister(). */
void funcEdnT(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void funcEdnQ(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void funcEdnPull(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

#endif /* MENTAT_FUNC_COMMON_H */
