/*
** store_int.h — the store cache's private types, shared by store_cache.c
** (cache, pool, revalidation) and store_write.c (the writer's begin/commit,
** checkpoint and tuning policy). Not for other modules: use store.h.
*/
#ifndef MENTAT_STORE_INT_H
#define MENTAT_STORE_INT_H
#include <pthread.h>
#include <sys/types.h>
#include "store.h"

/* Readers closed past the pool after which, once no reader is checked out,
** every connection of the store is closed and the writer reopened: SQLite
** cannot close the descriptor of a connection while the process holds
** another lock on the file (POSIX locks are per process and file), so it
** keeps it for reuse; only when no connection of the process holds one is
** it closed. */
#define STORE_FDS_PENDING_MAX 8
/* The post-commit checkpoint must not stall the writer behind readers:
** it tries briefly and leaves the WAL for a later commit otherwise. */
#define STORE_CHECKPOINT_BUSY_MS 100
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

/* At most this many log rows since the known state are scanned to explain
** a foreign commit (storeRevalidate); more, and the fingerprint is read. */
#define STORE_LOG_SCAN_MAX 4096

/* A pooled connection: the public StoreConn first, then our statements. */
typedef struct StoreConnImpl {
  StoreConn base;
  sqlite3_stmt *pDataVersion;   /* PRAGMA data_version */
  sqlite3_stmt *pSig;           /* zSigSql */
  sqlite3_stmt *pFingerprint;   /* schemaFingerprintSql() */
  sqlite3_stmt *pLogScan;       /* zLogScanSql */
  sqlite3_stmt *pBegin;         /* BEGIN: a reader's one snapshot per call */
  sqlite3_stmt *pCommit;        /* COMMIT: ends it (keeps temp-table writes) */
  sqlite3_stmt *pRollback;      /* ROLLBACK, prepared while memory was there: a
                                ** write that failed for memory must still end */
  sqlite3_int64 iMmap;          /* mmap_size storeConfigure set; 0 = none */
  unsigned mChanged;            /* reader: bit k = a foreign commit seen k checkouts ago */
  int bMmapOff;                 /* reader: mmap switched off (store_cache.c) */
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
  pthread_mutex_t mutex;        /* pIdle, pSchema, iSchemaMark, known */
  pthread_mutex_t writeMutex;   /* one writer at a time in-process */
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
  StoreHold *pHolds;            /* open host cursors' snapshots (B25) */
  int bWalPolicy;               /* store_write.c: writer's WAL hook set, autocheckpoint off; writeMutex */
  int szFrame;                  /* store_write.c: bytes per WAL frame (page size + 24); writeMutex */
  sqlite3_int64 nWalFrames;     /* store_write.c: WAL frames after the writer's last commit (hook) */
  sqlite3_int64 nWalCkpt;       /* store_write.c: of those, frames a checkpoint copied; writeMutex */
  sqlite3_int64 nNoteDatoms;    /* store_write.c: datoms max rowid noted by this write, 0 none */
  sqlite3_int64 nNoteInserted;  /* store_write.c: datoms this write inserted; writeMutex */
  int bTunePending;             /* store_write.c: a bulk commit deferred storeTune; set under
                                ** writeMutex, read atomically by storeReader */
  sqlite3_int64 nWalRetryBytes; /* store_write.c: WAL size before which a timed-out RESTART waits */
  sqlite3_int64 nWalRetryFrom;  /* store_write.c: WAL size when that RESTART timed out */
  sqlite3_int64 nWalLastTx;     /* store_write.c: WAL frames the writer's last commit added */
};

typedef struct StoreCache {
  pthread_mutex_t mutex;
  Store *pFirst, *pLast;        /* most / least recently used */
  int nStore;
} StoreCache;

/* Opens p->pWriter anew after storeReleaseFds closed it (write mutex
** held). Errors: *pzErr as storeOpen's. */
int storeConnOpenWriter(Store *p, char **pzErr);

/* The process-wide cache, created on first use. */
StoreCache *storeCache(void);
/* Replaces *pzErr (if pzErr) with zMsg (sqlite3_malloc'd, taken). */
void storeErr(char **pzErr, char *zMsg);
/* Steps a one-integer statement and resets it; *piOut 0 when no row. */
int storeStepInt(sqlite3_stmt *pStmt, sqlite3_int64 *piOut);
/* Reads the state signature on pImpl's connection (inside its transaction). */
int storeReadSig(StoreConnImpl *pImpl, StoreSig *pSig);
int storeSigEqual(const StoreSig *a, const StoreSig *b);
/* Records that the published schema is exact at *pSig. Store mutex held. */
void storeSetKnown(Store *p, const StoreSig *pSig);
/* Publishes pNew (read at tx mark iMark) unless a newer one is published. */
void storePublish(Store *p, Schema *pNew, sqlite3_int64 iMark);
/* Makes the published schema current for pConn's next statement. */
int storeRevalidate(Store *p, StoreConn *pConn, int bLatest, Schema **ppOwn, char **pzErr);
/* Resets pConn's busy statements and ends any open transaction. */
void storeConnQuiesce(StoreConn *pConn);
/* Rolls back pConn's open transaction, if any, with its prepared ROLLBACK
** (sqlite3_exec would need memory to prepare one, and a failed write left
** open would hold the write lock and break the next BEGIN). */
void storeConnRollback(StoreConn *pConn);
/* storeTune on the writer (write mutex held, or the Store not yet shared). */
void storeTuneWriter(Store *p, int bCheckIndexes);

#endif
