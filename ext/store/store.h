/*
** store.h — a store (one SQLite file in the Mentat v3 layout), its
** connections, and the process-wide cache of open stores (SPEC.md §3, §4):
** what the stages after the store call.
**
** HOW IT WORKS
** storeAcquire() maps a path to a Store: canonical path + inode key the
** cache (a file replaced at the same path is a new store). A Store owns one
** writer connection, a pool of reader connections (grown on demand, idle ones
** reused) and the current Schema snapshot. Callers check a StoreConn out,
** use it alone, and hand it back; nothing else touches it meanwhile, so its
** prepared statements and compiled-query cache need no locks.
** Before a checked-out reader is used, PRAGMA data_version tells whether
** another connection committed; if so the schema is re-read when it changed,
** so other processes' attributes are seen and their entids never reused.
** Writes are serialised in-process by the store's mutex and across processes
** by BEGIN IMMEDIATE under a busy timeout; concurrent writes of one file
** store at synchronous=FULL share COMMITs (store_writer.c, GROUP COMMIT).
**
** The path "" is a private in-memory store that lives until its last
** release; one connection serves as writer and reader there.
*/
#ifndef MENTAT_STORE_H
#define MENTAT_STORE_H

#include "config.h"
#include "schema.h"

typedef struct Store Store;
typedef struct StoreConn StoreConn;

/* One connection to a store's file. Owned by its Store; checked out by one
** caller at a time. pQueryCache belongs to the query layer (pTxCache to the
** transactor), which sets the matching free function so the store can free
** it when it closes the connection. */
struct StoreConn {
  sqlite3 *db;
  Store *pStore;
  StoreConn *pNext;            /* pool link, store-private */
  sqlite3_int64 iDataVersion;  /* last PRAGMA data_version seen, store-private */
  int bMarksUnchecked;         /* writer: known_parts not yet checked against the data since
                               ** the connection opened or another connection committed
                               ** (set by the store, cleared by the transactor) */
  void *pQueryCache;
  void (*xQueryCacheFree)(void*);
  int bHost;                   /* db is the host's own connection (a host store, SPEC.md §3a):
                               ** its settings are the host's, never changed by us */
  const char *zHostDb;         /* then the name of the host's database holding the store,
                               ** which new schema objects are created in */
  void *pTxCache;              /* the transactor's, on the writer connection */
  void (*xTxCacheFree)(void*);
  int bInAutoStmt;             /* host store: the write in progress runs inside an
                               ** autocommit statement that writes, with no transaction or
                               ** savepoint of its own (storeWriteAlive) */
  int bContinues;              /* the write in progress finds the state exactly as this
                               ** connection's last write left it (a host store's write
                               ** witness, store_host.c), so what the transactor kept of
                               ** it holds; set by storeWriteBegin*, cleared by storeWriteEnd */
  sqlite3_int64 iTxMark;       /* the :db.part/tx mark the write in progress wrote (set by the
                               ** transactor; 0: not yet), which a host store's end need not
                               ** read back */
};

/* For the transactor, before each statement of a write: is the write's
** transaction still open? SQLite ends a transaction by itself after some
** errors (out of memory, disk full, I/O), after which each statement would
** commit on its own. Inside an autocommit statement that writes (a host
** store's INSERT ... SELECT edn_t(...)) the connection reads autocommit
** throughout; the statement's transaction is asked for then (SQLite 3.34+,
** sqlite3_txn_state; on older hosts assumed open). */
int storeWriteAlive(const StoreConn *pConn);

/* Opens (creating if needed) or finds the store at zPath. Creates the v3
** layout and bootstrap on a new file, upgrades v1/v2, refuses other
** versions. *ppStore holds one reference; release with storeRelease().
** Errors: *pzErr (sqlite3_malloc'd) in the user's terms, e.g.
** "cannot open store /x/y.db: unable to open database file". */
int storeAcquire(const char *zPath, Store **ppStore, char **pzErr);
/* storeAcquire for a read: a path whose check (the stat that tells a
** replaced file) is younger than configPathCheckMs() gives the store it
** named then, without a system call; otherwise as storeAcquire, which
** checks and records the path. So a read learns of a file replaced or
** deleted at its path within that bound (README "Limits and settings",
** MENTAT_PATH_CHECK_MS), a write (storeAcquire) at once. */
int storeAcquireRead(const char *zPath, Store **ppStore, char **pzErr);
/* The first half of storeAcquireRead alone: SQLITE_OK and one reference in
** *ppStore when zPath named a cached store's file less than
** configPathCheckMs() ago (the file existed then and was that store);
** SQLITE_NOTFOUND otherwise, with no system call, no open and nothing
** created. */
int storeAcquireSeen(const char *zPath, Store **ppStore);
void storeRelease(Store *p);
/* storeAcquireSeen's test for a store the caller already holds a reference
** to: true when p is still the cached store of its file and zPath was
** checked to name that file less than configPathCheckMs() ago. False for
** the in-memory store, host stores, a store the cache let go of (its file
** was found replaced or deleted at its path) and an older check: the
** caller then acquires again (storeAcquireRead), which checks the path. */
int storeStillSeen(Store *p, const char *zPath);

/* The store's canonical path ("" for in-memory). */
const char *storePath(const Store *p);

/* The file's identity when the store was opened: device and inode (both 0
** in memory). A file moved over the path later is another store with
** another identity (SPEC.md §4), so a name made from path and identity
** never names two files. */
void storeFileId(const Store *p, sqlite3_uint64 *pDev, sqlite3_uint64 *pIno);

/* Checks out a reader connection, revalidated (see HOW IT WORKS).
** *ppSchema gets the schema current for it, with a reference the caller
** drops with schemaUnref(). Return it with storeReaderDone(), which resets
** any statement still running on it and ends any open transaction, so a
** pooled connection never pins the WAL (SPEC.md §3). For the in-memory
** store the one shared connection is returned as is. */
int storeReader(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr);
void storeReaderDone(Store *p, StoreConn *pConn);

/* storeReader for a caller whose first statement can start over (the edn_q
** forms): a pooled reader whose last check saw the file's current data
** version is handed out in autocommit, without BEGIN, `PRAGMA
** data_version` and the COMMIT after (three statement executions, a
** tenth of a point lookup), with the published schema. The caller's first
** statement then opens the read snapshot, and right after its first step
** the caller asks storeReaderCheck whether that snapshot is the state the
** schema was checked at (SQLITE_FCNTL_DATA_VERSION, no statement). If not
** (*pbStale), it resets its statements and calls storeReaderRecheck, which
** does what storeReader does (one read transaction, the schema made
** current for it) and gives the schema for that snapshot, and the caller
** plans and runs again. Statements run before that first step (lookups
** while binding) are covered too: nothing committed between the last
** check and the first step's snapshot. Anything else is as storeReader. */
int storeReaderLazy(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr);
int storeReaderCheck(Store *p, StoreConn *pConn, int *pbStale);
/* *ppSchema: a new reference, the caller's (the old one is not touched). */
int storeReaderRecheck(Store *p, StoreConn *pConn, Schema **ppSchema, char **pzErr);
/* True while pConn came from storeReaderLazy and has not been checked. */
int storeReaderIsLazy(const StoreConn *pConn);

/* A reader kept checked out between the runs of one host statement (the
** edn_q table's cursor, whose next run with the same db_path and query
** takes it back without the pool). storeReaderPark ends what the run left
** (a read transaction, busy statements) and applies the mmap policy, as
** storeReaderDone does, but keeps pConn checked out. storeReaderResume
** readies it for the next run as storeReaderLazy readies a pooled reader
** (no statement; the caller's first step is checked with storeReaderCheck
** and a stale snapshot rechecked): *ppSchema holds the caller's reference
** to the schema it last used and gets the published schema (the old
** reference dropped when they differ). SQLITE_NOTFOUND when pConn cannot
** be handed out lazily (its last check gave it a schema of its own, it
** is to be discarded, a bulk write's index build is pending, a read
** transaction is open): the caller gives it back (storeReaderDone) and
** checks out another. File stores only (a no-op / SQLITE_NOTFOUND for the
** in-memory and host stores). */
void storeReaderPark(Store *p, StoreConn *pConn);
int storeReaderResume(Store *p, StoreConn *pConn, Schema **ppSchema);

/* storeReader hands the connection back INSIDE an open read transaction
** (BEGIN + the data_version check), so everything the caller runs on it
** shares one snapshot and one WAL read lock. Resetting a statement
** therefore does not end the snapshot: a StoreHold's xRelease (below)
** calls storeReaderEndRead after spilling its rows. It resets every busy
** statement on pConn and ends the transaction with COMMIT (so temp-table
** writes made inside it stay); pConn stays checked out and usable, each
** later statement in its own autocommit read. No-op for the in-memory
** store (its one shared connection pins no WAL). */
void storeReaderEndRead(Store *p, StoreConn *pConn);

/* A host cursor that keeps a store read snapshot open between host calls
** (an edn_q cursor with rows left). A snapshot pins the WAL: no checkpoint
** can copy or rewind past it, so an idle, un-exhausted host cursor would
** let the WAL grow with every later commit. Holders register here;
** when the writer's post-commit checkpoint is blocked it calls
** storeHoldsRelease, which runs each hold's xRelease on the writer's
** thread: xRelease must end the snapshot (the edn_q cursor spills its
** remaining rows to a temp table and resets its store statement) and must
** not call back into the store's list. Each holder serialises its own
** uses of the snapshot with xRelease (its own mutex). Register with
** storeHoldAdd after the snapshot is open; storeHoldRemove before the
** hold's memory goes, never while holding the holder's own mutex. */
typedef struct StoreHold StoreHold;
struct StoreHold {
  /* pBudget: the writer thread's CPU time it spends on the holds after
  ** one commit, shared by every hold it asks then (configBudgetSpent); a
  ** hold that cannot let go within it may keep its snapshot, unless
  ** pBudget->bDrop (the WAL past half of MENTAT_WAL_RESTART_BYTES): then it
  ** lets go, giving up what it could not set aside, with an error. */
  /* 1: let go; 2: still holds, part of the work done: ask again after the
  ** next commit; 0: keeps its snapshot, do not ask again */
  int (*xRelease)(StoreHold *pHold, ConfigBudget *pBudget);
  StoreHold *pHoldPrev, *pHoldNext;   /* the store's list; store-private */
};
void storeHoldAdd(Store *p, StoreHold *pHold);
void storeHoldRemove(Store *p, StoreHold *pHold);
/* Asks the registered holds to let go of their snapshots (each is removed
** from the list first, so it is asked once), within 100 ms of the
** calling thread's CPU time for all of them (CPU, not wall time: a writer
** descheduled by load does the same work, so a cursor lets go after as
** many commits at any load): those not reached by then stay registered
** for a later commit. Returns how many were asked; *pbAll (may be NULL) says whether
** every hold let go (none left registered, none kept its snapshot), which
** is when a RESTART checkpoint can succeed. Called by the writer's WAL
** policy (store_wal.c) under the write mutex. */
int storeHoldsRelease(Store *p, int *pbAll);

/* Begins a write: takes the store's write mutex, BEGIN IMMEDIATE on the
** writer connection (waiting under the busy timeout), revalidates the
** schema. *ppSchema as for storeReader. Always pair with storeWriteEnd.
** On failure (e.g. "database is locked" after the busy timeout) nothing is
** held, *ppConn is NULL, and storeWriteEnd(p, NULL, ...) is a no-op, so
** callers may pair unconditionally or return early. */
int storeWriteBegin(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr);

/* storeWriteBegin for a caller that calls storeWriteUndoPoint before its
** first write (the transactor's txTransact). On a host store inside the
** host's transaction, where the last edn_t left it, no savepoint is
** opened yet (store_host.c, THE UNDO POINT); elsewhere it is
** storeWriteBegin. */
int storeWriteBeginLazy(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr);

/* Before the first write of a write begun by storeWriteBeginLazy (a no-op
** after storeWriteBegin, and after a first call): opens its savepoint when
** it has none yet and bRisky (a step after the first write may still fail
** by the transaction's own data: the caller's checks are not all done) or
** the host has objects of its own on the store's tables. With neither, the
** write runs without one: the caller must do all its reads and checks,
** prepare its statements and bind nothing that SQLite copies before its
** first write, so that only SQLite (which then ends the host's transaction
** itself) can fail a step after it. Errors (nothing written): *pzErr. */
int storeWriteUndoPoint(StoreConn *pConn, int bRisky, char **pzErr);

/* Ends the write begun above: COMMIT if bCommit else ROLLBACK, then releases
** the mutex. With other writers waiting, the COMMIT may be shared with
** theirs (GROUP COMMIT): the call then returns when that COMMIT is done,
** with its outcome; pConn is no longer the caller's after this call. pNewSchema, if not NULL, is the snapshot after a committed
** schema change; the store takes a reference and publishes it. After a
** commit the writer's WAL policy runs (store_wal.c, SPEC.md §3): PASSIVE
** checkpoints every MENTAT_WAL_CHECKPOINT_BYTES (6 MiB) of new frames, host
** cursors asked to let go of their snapshots past 4 MiB (StoreHold), and a
** RESTART waiting briefly for readers from half of
** MENTAT_WAL_RESTART_BYTES (64 MiB). */
int storeWriteEnd(Store *p, StoreConn *pConn, int bCommit, Schema *pNewSchema, char **pzErr);

/* Inside storeWriteBegin/storeWriteEnd: the largest datoms rowid this write
** inserted (sqlite3_last_insert_rowid after an insert into `datoms`; rowids
** grow, so it is the table's row high-water mark) and how many rows that
** insert added. storeWriteEnd uses them to decide, without a query of its
** own, whether the store grew enough to be tuned (managed indexes,
** statistics), and whether this was a bulk write that defers it. A write
** that notes nothing inserted no datoms and does not retune (unless it
** changed the schema or a tune is pending). */
void storeWriteNoteDatoms(Store *p, sqlite3_int64 iMaxRowid, int nInserted);

/* Loads a schema snapshot from the store connection db (reads `idents`,
** `schema` and the :db/noHistory datoms, and which attributes have a
** managed value index in `mentat_managed_indexes`; store_schema.c). Run it
** inside the read transaction whose state it should see. *ppOut has one
** reference. Returns an SQLite code; on error *pzErr (sqlite3_malloc'd)
** says why, e.g. "cannot read the store's schema (load): no such table:
** datoms". */
int storeSchemaLoad(sqlite3 *db, Schema **ppOut, char **pzErr);
/* The fingerprint of the rows storeSchemaLoad reads on db (the snapshot it
** would load has schemaFingerprintOf equal to it): an order-independent
** 64-bit hash of `idents`, `schema` and the :db/noHistory datoms. */
int storeSchemaFingerprint(sqlite3 *db, sqlite3_uint64 *pFp, char **pzErr);

/* Creates the v3 layout and bootstrap transaction on an empty database, in
** one EXCLUSIVE transaction; exposed for tests. */
int storeCreateLayout(sqlite3 *db, char **pzErr);

/* A function run on every new store connection after its settings (the
** query layer registers its SQL helpers there). Set once at load time. */
void storeSetConnHook(int (*xHook)(sqlite3 *db));

/* A function the writer calls, on the caller's thread, when a write that
** is to be committed ends: non-zero means the caller was interrupted, and
** its transaction is rolled back instead (the interrupt bridge registers
** it; writes that share a COMMIT cannot leave that to a commit hook on
** whichever thread runs it). Set once at load time. */
void storeSetCommitVeto(int (*xVeto)(void));

/* Tests: how many COMMITs the writer made for transactions (a group of
** writes sharing one counts once). */
sqlite3_int64 storeCommitCount(Store *p);

/* Drops every cached store that no caller holds (tests, shutdown). */
void storeCacheClear(void);

/* Tests: sets the cache bound as MENTAT_STORE_CACHE would (0 disables
** caching for stores acquired from now on), evicting idle stores over it;
** returns the previous bound. storeCacheCount: stores in the cache. */
int storeCacheSetLimit(int nMax);
int storeCacheCount(void);
/* How many schema fingerprints revalidation has read in this process
** (store_revalidate.c): lets tests tell a foreign commit the log explained
** from one that took the full check. */
int storeFingerprintCount(void);

#endif /* MENTAT_STORE_H */
