/*
** call.h — the call context every SQL object opens on a store: the
** `db_path` argument checked, the store acquired from the process-wide
** cache, for a read a reader connection checked out of its pool with its
** schema, and the host's interrupts watched; then all of it given back.
**
** Takes the host connection, the db_path argument and optionally the opts
** argument; gives a VCall holding the store (and reader, schema) for the
** call. Calls the store stage (a file store, or a host store through
** store_host.h), the query stage's opts parser, the transactor and puller
** for a with-span, and the interrupt bridge (interrupt.h).
**
**   VCall call;
**   memset(&call, 0, sizeof call);
**   rc = vcallBegin(&call, host, argv[0], VCALL_READ, NULL, NULL, &zErr);
**   if (rc == SQLITE_OK) rc = ...(call.pConn, call.pSchema, ...);
**   ... close what runs on call.pConn ...
**   vcallEnd(&call);
*/
#ifndef MENTAT_CALL_H
#define MENTAT_CALL_H

#include "sqlite_api.h"
#include "store.h"
#include "query.h"
#include "interrupt.h"

/* What the call does on the store: read through a pooled reader connection
** (queries, pulls), or write (edn_t: the transactor picks the writer
** connection itself, so the interrupt watch goes with the thread). */
#define VCALL_READ  1
#define VCALL_WRITE 2
/* A read whose first statement can start over (the edn_q forms, through
** qRunOpen/qRunStep): the reader comes from storeReaderLazy (but from
** storeReader when opts "sources" attach other stores to it). */
#define VCALL_QUERY 3
/* With VCALL_READ: edn_pull's opts, which take "with" alone (the other keys
** shape a query), checked before the with-span begins. */
#define VCALL_PULL  4
/* Internal: a read whose opts hold "with" (below). */
#define VCALL_WITH  8

typedef struct VCall VCall;
struct VCall {
  Store *pStore;            /* one reference, NULL when not held */
  StoreConn *pConn;         /* VCALL_READ, VCALL_QUERY: the checked-out reader, or the
                            ** writer of a with-span */
  Schema *pSchema;          /* VCALL_READ, VCALL_QUERY: its schema, one reference */
  IntrWatch watch;          /* host interrupts reach the store */
  int bWith;                /* a with-span is open on pConn (see vcallBegin) */
  sqlite3_int64 tWithDeadline;  /* configNowMs() bound of the last with-span, or 0 */
  sqlite3_str *pWithReport; /* the with-tx's report when opts asked for it, else NULL */
  int bPathPure;            /* the db_path check needed no file system (a host in memory):
                            ** its verdict holds for that path text on this host for good */
};

/* Opens the call on the store pPath names, from host connection host. In
** order: pPath must be TEXT (its type is taken before any conversion), not
** ":memory:" or a "file:" URI, hold no NUL byte, and not be the file of the
** host's own `main` database (same device and inode, so relative paths,
** symlinks and hard links are caught); then, when pOpts is given, the opts
** argument pOptsArg (NULL or SQL NULL: none) is parsed into it, before the
** store is opened so a bad opts creates no file; then the store is
** acquired, for VCALL_READ (VCALL_QUERY: storeReaderLazy) a reader checked out, and the watch begun (for
** VCALL_WRITE with its probe prepared before anything is written).
** '' is the private in-memory store. pCall must be zeroed or ended.
** Returns SQLITE_OK, or an SQLite code with *pzErr (sqlite3_malloc'd, any
** previous one freed; without the function's prefix), e.g.
** "db_path /x.db is the host's own database"; on failure pCall holds
** nothing. */
int vcallBegin(VCall *pCall, sqlite3 *host, sqlite3_value *pPath, int eKind,
               QueryOpts *pOpts, sqlite3_value *pOptsArg, char **pzErr);

/* vcallBegin for a db_path and opts held as C text (zPath NUL-terminated,
** zOpts NULL for none): the same checks, steps and errors. */
int vcallBeginText(VCall *pCall, sqlite3 *host, const char *zPath, int eKind,
                   QueryOpts *pOpts, const char *zOpts, int nOpts, char **pzErr);
/* vcallBeginText for arguments already read out of their values: eType is
** db_path's type before any conversion, zPath its nPath bytes
** (NUL-terminated), zOpts NULL for none. */
int vcallBeginArgs(VCall *pCall, sqlite3 *host, int eType, const char *zPath, int nPath,
                   int eKind, QueryOpts *pOpts, const char *zOpts, int nOpts, char **pzErr);

/* A read (VCALL_READ, VCALL_QUERY) whose opts hold "with" (Datomic's
** d/with) reads a speculative database instead: vcallBegin takes the
** store's write (storeWriteBegin: the write mutex and BEGIN IMMEDIATE on
** the writer, or a SAVEPOINT on a host store's connection, within the busy
** timeout like any writer), rewinds it to "asOf" when given (txRewind; the
** opts' asOf is then cleared, so the query and pulls read the rewound store
** as current), applies the with-tx with the transactor (txWith) and hands
** that writer out as pConn, with the schema after the tx as pSchema. The
** write is never committed: vcallEndWith (or vcallEnd) rolls it back.
** Meanwhile other writers of the store wait, as for an edn_t. A failing
** with-tx fails vcallBegin with edn_t's message (without a prefix). With
** "withReport" the report is kept in pWithReport. */

/* A file store's with-span holds the write lock for at most
** MENTAT_BUSY_TIMEOUT_MS, the wait any other writer is allowed: past it its
** statements stop as interrupted. Returns rc, or, when rc is
** SQLITE_INTERRUPT and that bound passed, SQLITE_ERROR with *pzErr saying
** so. Callable after vcallEnd (the bound is kept until the next begin). */
int vcallWithTimedOut(VCall *pCall, int rc, char **pzErr);

/* Ends the with-span early (ROLLBACK), once nothing runs on pConn any more
** (the edn_q table after setting its rows aside): pConn is NULL after it,
** the store stays held. No-op without a span. */
void vcallEndWith(VCall *pCall);

/* Forgets what host learned about its own database file (vcallBegin's
** check); the host is closing. */
void vcallHostGone(sqlite3 *host);

/* Keeping a read call between the runs of one host statement (the edn_q
** table: the next run with the same db_path and query text skips the store
** cache, the pool and the watch). vcallPark, once nothing runs on pConn,
** keeps store, reader (storeReaderPark), schema and watch, and returns 1;
** 0 when the call cannot be kept (the in-memory or a host store, a
** with-span, no reader), and the caller ends it (vcallEnd). vcallResume
** readies a parked call for the next run on db_path zPath (nPath bytes,
** the same text as the call was begun with; NUL-terminated): the db_path
** check again unless its verdict needs no file system (bPathPure), the
** store still what that path names within the bound of storeAcquireRead
** (storeStillSeen; a file found replaced at its path fails it), the reader
** re-armed lazily (storeReaderResume, pSchema the published schema): then
** SQLITE_OK, and the run's first step is checked as any lazy read's.
** SQLITE_NOTFOUND: not resumable, the caller ends the call (vcallEnd) and
** begins anew; another code: the db_path check failed (*pzErr). */
int vcallPark(VCall *pCall);
int vcallResume(VCall *pCall, sqlite3 *host, const char *zPath, int nPath, char **pzErr);

/* Ends the watch and gives back the reader, the schema and the store.
** Whatever runs on pConn (a query run) must be closed first. Idempotent. */
void vcallEnd(VCall *pCall);

/* True when the host connection was interrupted during the call. */
int vcallInterrupted(VCall *pCall);

/* The same, between two rows of a table (intrWatchRowInterrupted: only on
** hosts where asking costs next to nothing, else 0). */
static inline int vcallRowInterrupted(VCall *pCall) {
  return intrWatchRowInterrupted(&pCall->watch);
}

/* Pauses (bPause) or resumes the interrupt polling of a read call while
** another thread runs its reader's statement (intrWatchPause). */
void vcallPause(VCall *pCall, int bPause);

#endif /* MENTAT_CALL_H */
