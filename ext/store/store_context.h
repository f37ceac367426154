/*
** store_context.h — what the files of the store stage share: the Store
** and connection structs and each file's calls for the files above it.
** Not for other stages: they use store.h.
**
** The files, lowest first; each calls only those before it (and config.h,
** the schema stage, SQLite):
**   store_context.c    error replacement, one-integer statements
**   store_vfs.c        the WAL-gathering VFS
**   store_file.c       opening one connection: settings, layout, upgrades
**   store_schema.c     loading a Schema from a store connection
**   store_revalidate.c the state signature; keeping the published schema current
**   store_host_layout.c a host database's store objects: layout, shadows, scans
**   store_host.c       host stores: a store inside a database of the caller's
**                      connection (store_host.h)
**   store_conn.c       one connection and its prepared statements
**   store_hold.c       host cursors' snapshots (StoreHold)
**   store_tune.c       managed indexes and statistics; when the writer tunes
**   store_wal.c        the writer's checkpoint policy
**   store_writer.c     begin/end of a write; the writer's recheck
**   store_reader.c     the reader pool
**   store_cache.c      the process-wide cache: paths to Stores
*/
#ifndef MENTAT_STORE_CONTEXT_H
#define MENTAT_STORE_CONTEXT_H
#include <pthread.h>
#include <sys/types.h>
#include "store.h"

/* A cheap signature of the state the schema is read from: the tx
** partition's mark (every Mentat commit bumps it) and the row count and
** largest rowid of the `idents` and `schema` mirrors (which a plain insert
** or delete changes). Equal signatures are taken to mean an unchanged
** schema; anything else is settled by the full fingerprint. */
typedef struct StoreSig {
  sqlite3_int64 iMark;
  sqlite3_int64 a[4];
  sqlite3_int64 iLogMax;        /* largest rowid of the log; not compared */
} StoreSig;

/* A pooled connection: the public StoreConn first, then our statements. */
/* A caller whose transaction waits in an open group for its COMMIT
** (store_writer.c, GROUP COMMIT); lives on that caller's stack. */
typedef struct StoreGroupWait StoreGroupWait;
struct StoreGroupWait {
  StoreGroupWait *pNext;
  int bDone;                    /* set under Store.groupMutex by the committer */
  int rc;                       /* the COMMIT's outcome */
  char *zErr;                   /* its message when it failed; the waiter frees it */
};

typedef struct StoreConnImpl {
  StoreConn base;
  sqlite3_stmt *pDataVersion;   /* PRAGMA data_version */
  sqlite3_stmt *pSig;           /* storeSigSql */
  sqlite3_stmt *pFingerprint;   /* storeSchemaFingerprintSql() */
  sqlite3_stmt *pLogScan;       /* storeLogScanSql */
  sqlite3_stmt *pBegin;         /* BEGIN: a reader's one snapshot per call */
  sqlite3_stmt *pCommit;        /* COMMIT: ends it (keeps temp-table writes) */
  sqlite3_stmt *pRollback;      /* ROLLBACK, prepared while memory was there: a
                                ** write that failed for memory must still end */
  sqlite3_stmt *apGroup[5];     /* writer: SAVEPOINT, RELEASE, ROLLBACK TO of a write
                                ** that joins a group, BEGIN IMMEDIATE and COMMIT
                                ** (store_writer.c), prepared at first use */
  sqlite3_int64 iMmap;          /* mmap_size storeConfigure set; 0 = none */
  unsigned mChanged;            /* reader: bit k = a foreign commit seen k checkouts ago */
  unsigned iFileVersion;        /* reader: SQLITE_FCNTL_DATA_VERSION at its last full check */
  int bFileVersion;             /* reader: iFileVersion holds one (storeReaderLazy may skip) */
  int bLazy;                    /* reader: handed out by storeReaderLazy without a check */
  int bDiscard;                 /* reader: a recheck failed; not pooled again */
  int bMmapOff;                 /* reader: mmap switched off (store_reader.c) */
} StoreConnImpl;

struct Store {
  char *zPath;                  /* canonical path, "" in memory */
  char *zWalPath;               /* zPath + "-wal", NULL in memory */
  dev_t dev;
  ino_t ino;
  int bMemory;
  int nRef;                     /* guarded by the cache mutex */
  int bCached;                  /* in the cache list; cache mutex */
  Store *pPrev, *pNext;         /* LRU links; cache mutex */
  char *zSeen;                  /* the db_path text last checked to name this file
                                ** (stat), sqlite3_malloc'd; cache mutex */
  sqlite3_int64 tSeen;          /* configNowUs() before that check; cache mutex */
  pthread_mutex_t mutex;        /* pIdle, pSchema, iSchemaMark, known */
  pthread_mutex_t writeMutex;   /* one writer at a time in-process */
  int nWriteWaiting;            /* storeWriteBegin calls waiting for it; atomic */
  StoreConn *pWriter;
  StoreConn *pIdle;             /* idle readers, a stack */
  int nIdle;                    /* its length; mutex */
  int nOut;                     /* readers checked out; mutex */
  int nFdsPending;              /* readers closed past the pool since the last
                                ** full close, less those opened since; mutex */
  Schema *pSchema;              /* published snapshot */
  sqlite3_int64 iSchemaMark;    /* tx mark of the snapshot it was read from */
  StoreSig known;               /* a state at which pSchema is known exact */
  int bKnown;
  sqlite3_int64 nAnalyzed;      /* storeTune's; under writeMutex */
  pthread_mutex_t holdMutex;    /* pHolds, and every xRelease call */
  StoreHold *pHolds;            /* open host cursors' snapshots */
  /* store_wal.c, under writeMutex unless said */
  int bWalPolicy;               /* writer's WAL hook set, autocheckpoint off */
  int szFrame;                  /* bytes per WAL frame (page size + 24) */
  sqlite3_int64 nWalFrames;     /* WAL frames after the writer's last commit (hook) */
  sqlite3_int64 nWalCkpt;       /* of those, frames a checkpoint copied */
  sqlite3_int64 nWalRetryBytes; /* WAL size before which a timed-out RESTART waits */
  sqlite3_int64 nWalRetryFrom;  /* WAL size when that RESTART timed out */
  sqlite3_int64 nWalLastTx;     /* WAL frames the writer's last commit added */
  sqlite3_int64 nWalKeep;       /* the writer's journal_size_limit between bulk commits */
  int bWalKeepAll;              /* journal_size_limit lifted after a bulk commit */
  /* store_writer.c and store_tune.c, under writeMutex */
  sqlite3_int64 nNoteDatoms;    /* datoms max rowid noted by this write, 0 none */
  sqlite3_int64 nNoteInserted;  /* datoms this write inserted */
  int bTunePending;             /* a bulk commit deferred storeTune; read
                                ** atomically by storeReader */
  struct StoreHostPart *pHost;  /* store_host.c: set for a host store (SPEC.md §3a) */
  /* store_writer.c's group commit, under writeMutex unless said */
  int bGroupCommit;             /* this writer shares commits (a file store at FULL/EXTRA) */
  int bGroupOpen;               /* the writer's transaction holds txs waiting for COMMIT */
  int nGroup;                   /* how many */
  int bSavepoint;               /* the running write joined the group (its SAVEPOINT) */
  StoreGroupWait *pGroupWait;   /* the waiting callers */
  sqlite3_int64 nCommits;       /* COMMITs of writes since the store opened (tests) */
  pthread_mutex_t groupMutex;   /* each waiter's bDone, with groupCond */
  pthread_cond_t groupCond;
};

/* store_context.c */
/* Replaces *pzErr (if pzErr) with zMsg (sqlite3_malloc'd, taken). */
void storeErr(char **pzErr, char *zMsg);
/* Steps a one-integer statement and resets it; *piOut 0 when no row. */
int storeStepInt(sqlite3_stmt *pStmt, sqlite3_int64 *piOut);
/* A busy wait that tries again every 50-1000 us (at random) until msWait ms
** have passed, in place of sqlite3_busy_timeout's sleeps of up to 100 ms,
** which almost never find free a lock that writers in other processes
** take back at once. *w (the deadline and the jitter's state) must live
** until the caller puts the connection's usual busy timeout back. */
typedef struct StoreBusyWait {
  sqlite3_int64 usEnd;      /* configNowUs() deadline */
  unsigned int uRand;       /* xorshift state of the jitter */
  int bInterruptible;       /* set by the caller: give up when the caller is interrupted */
  int bInterrupted;         /* the wait gave up for that (the statement fails SQLITE_BUSY) */
} StoreBusyWait;
void storeBusyWaitSet(sqlite3 *db, StoreBusyWait *w, int msWait);
/* Whether the caller of this thread's write was interrupted: the function
** storeSetCommitVeto registered (the interrupt bridge), 0 without one.
** Asked in the waits for the write lock, where a probe of the host costs
** nothing next to the sleep. */
int storeCallerInterrupted(void);

/* store_vfs.c */
/* The name of the VFS store connections are opened with (the default VFS
** with WAL frames gathered into few large writes), or NULL for the default
** VFS when configWalGather() is 0 or the default VFS is not unix.
** Registered on first call. */
const char *storeVfs(void);

/* store_file.c */
/* Opens one connection to the store file zPath ("" = a new private
** in-memory database) and applies storeConfigure. With bValidate (the
** first connection of a store) it also checks the version BEFORE changing
** any setting, creates the layout on an empty file, upgrades v1/v2, and
** refuses anything else ("<path> is not a Mentat store (user_version N)").
** *pDb is the caller's to close. */
int storeOpenDb(const char *zPath, int bValidate, sqlite3 **pDb, char **pzErr);
/* Applies the connection settings of format/mentat-v3.md to db (the
** synchronous and mmap settings of config.h; bMemory skips WAL and mmap),
** then runs the connection hook. The writer replaces SQLite's automatic
** checkpoint later (store_wal.c). */
int storeConfigure(sqlite3 *db, int bMemory, char **pzErr);
/* Creates the v3 layout inside the caller's transaction, every object in
** database zSchema of db (host stores, store_host.c). */
int storeCreateLayoutIn(sqlite3 *db, const char *zSchema, char **pzErr);

/* store_schema.c: storeSchemaLoad (store.h) and */
/* The SQL whose rows the fingerprint hashes, for a statement a connection
** keeps prepared; storeSchemaFingerprintStmt steps it to the end and
** resets it. */
const char *storeSchemaFingerprintSql(void);
int storeSchemaFingerprintStmt(sqlite3_stmt *pStmt, sqlite3_uint64 *pFp);

/* store_revalidate.c */
/* The state signature's SQL (one row: StoreSig) and the log scan's. */
extern const char storeSigSql[];
extern const char storeLogScanSql[];
/* Reads the state signature on pImpl's connection (inside its transaction). */
int storeReadSig(StoreConnImpl *pImpl, StoreSig *pSig);
int storeSigEqual(const StoreSig *a, const StoreSig *b);
/* Records that the published schema is exact at *pSig. Store mutex held. */
void storeSetKnown(Store *p, const StoreSig *pSig);
/* Publishes pNew (read at tx mark iMark) unless a newer one is published. */
void storePublish(Store *p, Schema *pNew, sqlite3_int64 iMark);
/* Makes the published schema current for pConn's next statement. pConn is
** inside the transaction whose snapshot that statement reads. bLatest: the
** transaction holds the write lock, so it reads the newest state there is.
** ppOwn (readers): set, with a reference, when this snapshot's schema
** differs from the published one and is older; the call then uses it. */
int storeRevalidate(Store *p, StoreConn *pConn, int bLatest, Schema **ppOwn, char **pzErr);

/* store_host.c: host stores (store_host.h); store.h's functions on one
** dispatch to these. */
int storeHostReader(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr);
int storeHostWriteBegin(Store *p, int bLazy, StoreConn **ppConn, Schema **ppSchema, char **pzErr);
int storeHostUndoPoint(Store *p, int bRisky, char **pzErr);
int storeHostWriteEnd(Store *p, StoreConn *pConn, int bCommit, Schema *pNewSchema, char **pzErr);
void storeHostRelease(Store *p);
void storeHostReaderDone(Store *p);

/* A host store's own part (store_host.c, store_host_layout.c). */
#define HOST_SCAN_CACHE 4

/* What a read compares to skip the revalidation (hostStampTake): nothing
** this connection or another committed to the store's database or to
** temp, and the same database file, since the state was last validated. */
typedef struct HostStamp {
  sqlite3_file *pFile;          /* the store database's file: another after a
                                ** DETACH + ATTACH or sqlite3_deserialize */
  unsigned int uDv;             /* its pager's data version */
  unsigned int uDvTemp;         /* temp's, when bTemp (temp's pager exists) */
  int bTemp;
  sqlite3_int64 iSv;            /* its schema_version, as the hold read it */
  sqlite3_int64 iSvMain;        /* main's, for a store in an attached database */
  int nReprepare;               /* the hold's re-prepares (a DETACH expires it) */
} HostStamp;

/* What a write inside the host's open write transaction compares to skip
** the revalidation (hostWitSame): the state the last edn_t left, with
** nothing changed since by this connection's statements (the change
** counter), by a rollback (the tx mark, which every edn_t moves on and a
** rollback of it moves back), by DDL (schema_version) or by a commit (the
** pager's data version). */
typedef struct HostWitness {
  sqlite3_file *pFile;          /* the store database's file */
  unsigned int uDv;             /* its pager's data version */
  int nChanges;                 /* sqlite3_total_changes of the connection */
  sqlite3_int64 iSv;            /* the store database's schema_version */
  int nReprepare;               /* pSchemaVersion's re-prepares */
  sqlite3_int64 iMark;          /* the :db.part/tx mark */
} HostWitness;

typedef struct StoreHostPart {
  sqlite3 *host;
  char *zName;                  /* the database's name as the connection lists it */
  int iDb;                      /* its index (pragma database_list seq) */
  int bClosed;                  /* storeHostClose ran: freed at the last release */
  int eLayout;                  /* HOST_LAYOUT_* */
  int bDqlite;                  /* the database's VFS is dqlite's */
  sqlite3_int64 iSchemaVersion; /* at the last layout check; -1 none */
  sqlite3_stmt *pSchemaVersion, *pSavepoint, *pRelease, *pRollbackTo;
  int bNoSavepoint;             /* the write in progress runs inside a statement that
                                ** writes, without a savepoint (storeHostWriteBegin) */
  int nChanges0;                /* then: sqlite3_total_changes and schema_version */
  sqlite3_int64 iSv0;           /* before it */
  sqlite3_stmt *pHold;          /* a read's one read transaction (storeHostReader) */
  sqlite3_stmt *apShadowSv[2];  /* schema_version of temp (and main, for an attached
                                ** store): the databases searched before the store's */
  sqlite3_int64 aShadowSv[2];   /* their values at the last shadow check */
  int nReadHold;                /* reads holding it, nested ones included */
  int *aRoot;                   /* root pages of the store's tables and indexes */
  int nRoot;
  int iRootGen;                 /* bumped when aRoot is read again */
  struct {                      /* nested-scan verdicts, by statement */
    sqlite3_stmt *pStmt;
    char *zSql;
    int iGen;
    int bReads;
  } aScan[HOST_SCAN_CACHE];
  int iScanNext;
  sqlite3_file *pFileSeen;      /* the database's file at the last revalidation, and */
  int nSvReprepare;             /* pSchemaVersion's re-prepares then (a DETACH expires
                                ** every statement): either moved, another database
                                ** may hold the name now (hostRevalidate) */
  int bStamp;                   /* stamp is the state last validated (hostStampTake) */
  HostStamp stamp;
  sqlite3_stmt *pMark;          /* the :db.part/tx mark alone (the write witness) */
  int bWit;                     /* wit is what the last edn_t left inside the host's
                                ** open write transaction (hostWitTake) */
  HostWitness wit;
  int eUndo;                    /* HOST_UNDO_*: how the write in progress is undone */
  int bForeign;                 /* the host's own objects on the tables a datom write
                                ** changes, or a UTF-16 database (storeHostForeign) */
  int bForeignKnown;            /* bForeign holds for the schema_versions in aForeignSv */
  sqlite3_int64 aForeignSv[2];  /* the store database's and temp's, when it was read */
  Store *pNextHost;
} StoreHostPart;

/* How a host store's write in progress is undone (THE UNDO POINT in
** store_host.c): by its savepoint (or, inside a statement that writes,
** bNoSavepoint's way); not yet decided, nothing written yet; or by nothing
** of its own, no step of it able to fail but by SQLite ending the host's
** transaction. */
#define HOST_UNDO_SAVEPOINT 0
#define HOST_UNDO_DEFERRED 1
#define HOST_UNDO_NONE 2

#define HOST_LAYOUT_UNKNOWN 0
#define HOST_LAYOUT_ABSENT 1
#define HOST_LAYOUT_PRESENT 2

/* store_host_layout.c: the host database's store objects. */
/* Refuses (SQLITE_ERROR, *pzErr) when a database searched before the
** store's holds objects of the store's names; bCreating: the layout is
** about to be created, which must not hide a later database's store. */
int storeHostCheckShadow(StoreHostPart *h, int bCreating, char **pzErr);
/* Steps the schema_version of the databases searched before the store's;
** *pbChanged (may be NULL): one moved since the last call. */
int storeHostShadowSeen(StoreHostPart *h, int *pbChanged);
/* Sets h->eLayout from the database's objects (ABSENT or PRESENT, reading
** the root pages then); anything else is refused, never altered. */
int storeHostCheckLayout(StoreHostPart *h, char **pzErr);
/* Refuses a write while a statement of the host reads the store's tables. */
int storeHostCheckScans(Store *p, char **pzErr);
/* *pbForeign: the host has objects of its own that a datom write (datoms,
** the log, known_parts) would run into — triggers (temp ones included),
** indexes not the format's nor recorded in mentat_managed_indexes, foreign
** keys to or from those tables — or the database is not UTF-8 (binding
** text then allocates). Read again when either schema_version moved. */
int storeHostForeign(StoreHostPart *h, sqlite3_int64 iSv, sqlite3_int64 iSvTemp, int *pbForeign);

/* store_conn.c */
/* Opens a connection of pStore (bValidate: its first, see storeOpenDb)
** with its statements prepared. Errors: *pzErr "cannot open store ...". */
int storeConnOpen(Store *pStore, int bValidate, StoreConn **ppConn, char **pzErr);

/* "cannot open store <zPath>: <SQLite's message>", and when the OS said why
** (a read-only file system, no permission) ": <that cause>" after it, since
** SQLite's "unable to open database file" names no cause. sqlite3_malloc'd,
** NULL without memory. */
char *storeOpenErrMsg(const char *zPath, sqlite3 *db);
/* Frees the layers' caches on it, its statements, and closes it. */
void storeConnClose(StoreConn *pConn);
/* Opens p->pWriter anew after the reader pool closed it (write mutex
** held). Errors: *pzErr as storeConnOpen's. */
int storeConnOpenWriter(Store *p, char **pzErr);
/* Resets pConn's busy statements and ends any open transaction. */
void storeConnQuiesce(StoreConn *pConn);
/* Rolls back pConn's open transaction, if any, with its prepared ROLLBACK
** (sqlite3_exec would need memory to prepare one, and a failed write left
** open would hold the write lock and break the next BEGIN). */
void storeConnRollback(StoreConn *pConn);

/* store_hold.c: storeHoldAdd, storeHoldRemove, storeHoldsRelease (store.h) and */
/* Does an in-process host cursor hold a snapshot? */
int storeHoldsAny(Store *p);

/* store_tune.c */
/* Size-driven tuning of a store: once it holds configTuneMinDatoms()
** datoms, creates the managed extra indexes, recorded in
** mentat_managed_indexes, and refreshes the planner statistics whenever
** the datoms doubled since the last analysis. db is the writer connection,
** outside any transaction, with the store's write serialisation held;
** pSchema the current snapshot. *pnAnalyzed: the datoms count at the last
** analysis, -1 when not known yet (read back from sqlite_stat1).
** bCheckIndexes: look for missing or stale managed indexes (after a schema
** change). *pbIndexesChanged: set when managed indexes were created or
** dropped, so the caller reloads the schema. Returns an SQLite code;
** failures change nothing and may be retried later. */
int storeTune(sqlite3 *db, const Schema *pSchema, sqlite3_int64 *pnAnalyzed, int bCheckIndexes,
              int *pbIndexesChanged);
/* storeTune on the writer (write mutex held, or the Store not yet shared),
** publishing the reloaded schema when the indexes changed. */
void storeTuneWriter(Store *p, int bCheckIndexes);
/* After a commit (write mutex held): tunes now, defers the tune of a bulk
** write, or runs one deferred (TUNING AFTER BULK WRITES). bSchema: the
** commit changed the schema. */
void storeTuneAfterCommit(Store *p, int bSchema);
/* Runs a tune that bulk writes deferred, if no write is in progress in
** this process; otherwise leaves it for later. Called by storeReader
** before it checks out a connection, so the first read after a bulk load
** gets the managed indexes. Never fails: tuning is an optimisation. */
void storeTunePending(Store *p);

/* store_wal.c */
/* Once per writer connection, before its first write: the WAL hook that
** replaces SQLite's automatic checkpoint, and the frame size. Write mutex
** held. */
void storeWalPolicyInit(Store *p, sqlite3 *db);
/* After a commit (write mutex held): the checkpoint policy. */
void storeWalAfterCommit(Store *p, sqlite3 *db);

/* store_writer.c: storeWriteBegin, storeWriteEnd, storeWriteNoteDatoms (store.h) and */
/* A reader met a state older than the published schema's with another
** schema (storeRevalidate's ppOwn): a reader that began before a newer
** publish, or the file gone back (a backup restored over it). The writer's
** BEGIN IMMEDIATE reads the newest state, so it settles which and, for a
** file gone back, publishes the restored schema: without it, a process
** that only reads would reload the schema on every call until its tx mark
** passed the old one. Skipped, to be retried by a later call, when a write
** is in progress in this process or another holds the write lock. */
void storeWriterRecheck(Store *p);
/* The group commit's mutex and condition variable (GROUP COMMIT), made
** and destroyed with a file store. */
void storeGroupInit(Store *p);
void storeGroupFini(Store *p);

#endif /* MENTAT_STORE_CONTEXT_H */
