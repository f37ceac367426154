/*
** store_reader.c — a store's pool of reader connections: checking one out
** inside the call's one read snapshot, handing it back, and the
** per-reader mmap policy.
**
** Takes in a Store; gives out a StoreConn inside a read transaction and
** the schema current for its snapshot (store.h storeReader); calls the
** connection, revalidation, tuning and writer files below it
** (store_context.h). Readers are opened on demand, one per call or open
** cursor; at most configIdleReaders() stay pooled when handed back.
**
** The data_version check of each checkout (store_revalidate.c) also
** drives the reader's mmap (the format's 1 GiB): SQLite unmaps and
** refaults the whole file after every commit by another connection, so a
** reader that sees such commits every few calls turns its mapping off
** until they stop (storeReaderMmapPolicy).
*/
#include <string.h>
#include "config.h"
#include "store_context.h"

/* Readers closed past the pool after which, once no reader is checked out,
** every connection of the store is closed and the writer reopened: SQLite
** cannot close the descriptor of a connection while the process holds
** another lock on the file (POSIX locks are per process and file), so it
** keeps it for reuse; only when no connection of the process holds one is
** it closed. */
#define STORE_FDS_PENDING_MAX 8

/* Opens the call's one read transaction on a checked-out reader and makes
** the published schema current for it. `PRAGMA data_version` after BEGIN
** is the statement that takes the WAL read lock, so the version check, any
** schema re-read and the caller's statements share one snapshot and one
** lock round trip: the check as a read transaction of its own would cost
** a shared-memory lock, an fstat and an unlock more per call. */
static int storeReaderBegin(Store *p, StoreConn *pConn, Schema **ppOwn, char **pzErr) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  sqlite3_int64 iSeen = pConn->iDataVersion;
  int rc = sqlite3_step(pImpl->pBegin);
  sqlite3_reset(pImpl->pBegin);
  if (rc != SQLITE_DONE) {
    storeErr(pzErr, sqlite3_mprintf("cannot read store %s: %s", p->zPath,
                                    sqlite3_errmsg(pConn->db)));
    return rc == SQLITE_ROW ? SQLITE_ERROR : rc;
  }
  rc = storeRevalidate(p, pConn, 0, ppOwn, pzErr);
  pImpl->mChanged = (pImpl->mChanged << 1) | (iSeen >= 0 && pConn->iDataVersion != iSeen);
  /* The version this check stands for, for storeReaderLazy; none when the
  ** call got a schema of its own (the next one checks again). */
  pImpl->bFileVersion = rc == SQLITE_OK && *ppOwn == NULL
      && sqlite3_file_control(pConn->db, "main", SQLITE_FCNTL_DATA_VERSION,
                              &pImpl->iFileVersion) == SQLITE_OK;
  return rc;
}

/* A reader's mmap against commits by other connections. On any commit by
** another connection SQLite unmaps the whole file at the next read
** transaction and every page touched afterwards faults in again, which
** makes the first call after such a commit several times dearer than
** without a map (the pages come back by pread from the OS cache), while
** with no commits the map halves the CPU of page-heavy reads
** (bench/findings.md). So each reader keeps mmap while commits are
** rare and turns it off while they arrive at least every few calls: off
** when 2 of its last 8 checkouts saw a commit, back on after 32 checkouts
** without one. Applied between calls, outside any transaction (SQLite
** also refuses to remap while pages are fetched). */
#define STORE_MMAP_OFF_MASK 0xffu
#define STORE_MMAP_OFF_MIN 2
#define STORE_MMAP_ON_MASK 0xffffffffu

static int storePopCount(unsigned m) {
  int n = 0;
  for (; m; m &= m - 1) n++;
  return n;
}

static void storeReaderMmapPolicy(StoreConnImpl *pImpl) {
  int bOff;
  char zSql[64];
  if (pImpl->iMmap <= 0) return;
  if (!pImpl->bMmapOff) {
    bOff = storePopCount(pImpl->mChanged & STORE_MMAP_OFF_MASK) >= STORE_MMAP_OFF_MIN;
  } else {
    bOff = (pImpl->mChanged & STORE_MMAP_ON_MASK) != 0;
  }
  if (bOff == pImpl->bMmapOff) return;
  sqlite3_snprintf(sizeof zSql, zSql, "PRAGMA mmap_size=%lld", bOff ? 0 : pImpl->iMmap);
  if (sqlite3_exec(pImpl->base.db, zSql, NULL, NULL, NULL) == SQLITE_OK) pImpl->bMmapOff = bOff;
}

/* Once no reader is checked out and enough readers were closed past the
** pool (STORE_FDS_PENDING_MAX), closes every connection of the store and
** reopens the writer, so SQLite can release the descriptors it kept (see
** STORE_FDS_PENDING_MAX). Only when the writer is free (trylock) and no
** host cursor holds rows; otherwise a later hand-back tries again. Another
** connection of the host's to the same file keeps them (its locks count);
** they are then reused by the next readers opened. */
static void storeReleaseFds(Store *p) {
  StoreConn *pList, *pConn;
  int bGo;
  if (pthread_mutex_trylock(&p->writeMutex) != 0) return;
  pthread_mutex_lock(&p->holdMutex);
  pthread_mutex_lock(&p->mutex);
  bGo = p->nOut == 0 && p->nFdsPending >= STORE_FDS_PENDING_MAX && p->pHolds == NULL
        && !p->bGroupOpen;
  pList = bGo ? p->pIdle : NULL;
  if (bGo) {
    p->pIdle = NULL;
    p->nIdle = 0;
    p->nFdsPending = 0;
  }
  pthread_mutex_unlock(&p->mutex);
  pthread_mutex_unlock(&p->holdMutex);
  if (bGo) {
    while ((pConn = pList) != NULL) {
      pList = pConn->pNext;
      storeConnClose(pConn);
    }
    /* The writer last, then anew: its WAL hook and statements with it. */
    storeConnClose(p->pWriter);
    p->pWriter = NULL;
    p->bWalPolicy = 0;
    storeConnOpenWriter(p, NULL);
  }
  pthread_mutex_unlock(&p->writeMutex);
}

/* A checked-out reader is gone (closed, or never opened). */
static void storeReaderGone(Store *p) {
  pthread_mutex_lock(&p->mutex);
  p->nOut--;
  pthread_mutex_unlock(&p->mutex);
}

static void storeReaderEnd(StoreConn *pConn);

/* storeReader, and with bLazy storeReaderLazy. */
static int storeReaderOpen(Store *p, int bLazy, StoreConn **ppConn, Schema **ppSchema,
                           char **pzErr) {
  StoreConn *pConn = NULL;
  Schema *pOwn = NULL, *pLazy = NULL;
  int rc = SQLITE_OK;

  if (p->pHost) return storeHostReader(p, ppConn, ppSchema, pzErr);
  *ppConn = NULL;
  *ppSchema = NULL;
  if (p->bMemory) {
    pConn = p->pWriter;
    /* The one connection also writes: a transaction left open by a write
    ** whose ROLLBACK ran out of memory (no write holds the mutex now) must
    ** not be read as if it had committed. */
    if (!sqlite3_get_autocommit(pConn->db) && pthread_mutex_trylock(&p->writeMutex) == 0) {
      storeConnRollback(pConn);
      pthread_mutex_unlock(&p->writeMutex);
    }
  } else {
    if (__atomic_load_n(&p->bTunePending, __ATOMIC_ACQUIRE)) storeTunePending(p);
    pthread_mutex_lock(&p->mutex);
    pConn = p->pIdle;
    if (pConn) {
      p->pIdle = pConn->pNext;
      p->nIdle--;
      /* Lazy: the published schema is taken under this same lock. */
      if (bLazy && ((StoreConnImpl *)pConn)->bFileVersion && sqlite3_get_autocommit(pConn->db)) {
        ((StoreConnImpl *)pConn)->bLazy = 1;
        pLazy = p->pSchema;
        schemaRef(pLazy);
      }
    } else if (p->nFdsPending > 0) {
      p->nFdsPending--;           /* the open below reuses a kept descriptor */
    }
    p->nOut++;
    pthread_mutex_unlock(&p->mutex);
    if (pLazy) {
      pConn->pNext = NULL;
      *ppSchema = pLazy;
      *ppConn = pConn;
      return SQLITE_OK;
    }
    if (pConn == NULL) {
      rc = storeConnOpen(p, 0, &pConn, pzErr);
      if (rc != SQLITE_OK) {
        storeReaderGone(p);
        return rc;
      }
    }
    pConn->pNext = NULL;
    rc = storeReaderBegin(p, pConn, &pOwn, pzErr);
    if (rc != SQLITE_OK) {
      /* A connection that failed here may be broken: do not pool it. */
      storeConnClose(pConn);
      storeReaderGone(p);
      return rc;
    }
  }
  if (pOwn) {
    *ppSchema = pOwn;
    storeWriterRecheck(p);
  } else {
    pthread_mutex_lock(&p->mutex);
    *ppSchema = p->pSchema;
    schemaRef(p->pSchema);
    pthread_mutex_unlock(&p->mutex);
  }
  *ppConn = pConn;
  return SQLITE_OK;
}

int storeReader(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  return storeReaderOpen(p, 0, ppConn, ppSchema, pzErr);
}

int storeReaderLazy(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  return storeReaderOpen(p, 1, ppConn, ppSchema, pzErr);
}

int storeReaderIsLazy(const StoreConn *pConn) {
  return pConn && ((const StoreConnImpl *)pConn)->bLazy;
}

int storeReaderCheck(Store *p, StoreConn *pConn, int *pbStale) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  unsigned v = 0;
  (void)p;
  *pbStale = 0;
  if (pConn == NULL || !pImpl->bLazy) return SQLITE_OK;
  pImpl->bLazy = 0;
  /* NULL names main without a lookup by name (once per call) */
  if (sqlite3_file_control(pConn->db, NULL, SQLITE_FCNTL_DATA_VERSION, &v) != SQLITE_OK
      || v != pImpl->iFileVersion) {
    *pbStale = 1;
  } else {
    pImpl->mChanged <<= 1;        /* a checkout that saw no commit (mmap policy) */
  }
  return SQLITE_OK;
}

int storeReaderRecheck(Store *p, StoreConn *pConn, Schema **ppSchema, char **pzErr) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  Schema *pOwn = NULL;
  int rc;
  *ppSchema = NULL;
  pImpl->bLazy = 0;
  /* The caller reset its statements: nothing holds a snapshot now. */
  if (!sqlite3_get_autocommit(pConn->db)) storeReaderEnd(pConn);
  rc = storeReaderBegin(p, pConn, &pOwn, pzErr);
  if (rc != SQLITE_OK) {
    pImpl->bDiscard = 1;          /* may be broken: closed when handed back */
    return rc;
  }
  if (pOwn) {
    *ppSchema = pOwn;
    storeWriterRecheck(p);
  } else {
    pthread_mutex_lock(&p->mutex);
    *ppSchema = p->pSchema;
    schemaRef(p->pSchema);
    pthread_mutex_unlock(&p->mutex);
  }
  return SQLITE_OK;
}

/* Ends a reader's read transaction with COMMIT, not ROLLBACK: a holder may
** have spilled rows into a temp table inside it (B25). COMMIT comes first:
** with no statement left running that ends the snapshot, which
** sqlite3_txn_state confirms in a few instructions, so the sweep over the
** connection's prepared statements (up to ~70 with a full plan cache)
** runs only when something was left busy: then a still-running
** read keeps the snapshot after COMMIT until it is reset, and a pending
** write makes COMMIT fail until it is. A COMMIT that still fails (e.g. a
** late interrupt) falls back to ROLLBACK, so the connection goes back to
** the pool holding nothing either way. Hosts before 3.34 have no
** txn_state in their API table: there the sweep always runs. */
static void storeReaderEnd(StoreConn *pConn) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  sqlite3 *db = pConn->db;
  if (sqlite3_get_autocommit(db) == 0 && pImpl->pCommit) {
    sqlite3_step(pImpl->pCommit);
    sqlite3_reset(pImpl->pCommit);
  }
  if (sqlite3_get_autocommit(db) && sqlite3_libversion_number() >= 3034000
      && sqlite3_txn_state(db, NULL) == SQLITE_TXN_NONE) {
    return;
  }
  for (sqlite3_stmt *pStmt = sqlite3_next_stmt(db, NULL); pStmt;
       pStmt = sqlite3_next_stmt(db, pStmt)) {
    if (sqlite3_stmt_busy(pStmt)) sqlite3_reset(pStmt);
  }
  if (sqlite3_get_autocommit(db) == 0 && pImpl->pCommit) {
    sqlite3_step(pImpl->pCommit);
    sqlite3_reset(pImpl->pCommit);
  }
  if (sqlite3_get_autocommit(db) == 0) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

void storeReaderEndRead(Store *p, StoreConn *pConn) {
  if (pConn == NULL || p->bMemory || p->pHost) return;
  storeReaderEnd(pConn);
}

/* Hands a reader back: pooled while fewer than MENTAT_IDLE_READERS (4) are
** idle, closed otherwise. Readers are opened on demand, one per call or
** open cursor at a time, so a burst of N open cursors opens N; only the
** pool's few are kept (each holds two descriptors, the database file and
** its WAL, and its page cache). The one handed back last is reused first. */
void storeReaderDone(Store *p, StoreConn *pConn) {
  int bKeep, bRelease, nMax;
  if (pConn != NULL && p->pHost) {
    storeHostReaderDone(p);
    return;
  }
  if (pConn == NULL || p->bMemory) return;
  nMax = configIdleReaders();
  storeReaderEnd(pConn);
  ((StoreConnImpl *)pConn)->bLazy = 0;
  if (sqlite3_get_autocommit(pConn->db)) storeReaderMmapPolicy((StoreConnImpl *)pConn);
  pthread_mutex_lock(&p->mutex);
  bKeep = p->nIdle < nMax && !((StoreConnImpl *)pConn)->bDiscard;
  if (bKeep) {
    pConn->pNext = p->pIdle;
    p->pIdle = pConn;
    p->nIdle++;
  } else {
    p->nFdsPending++;
  }
  p->nOut--;
  bRelease = p->nOut == 0 && p->nFdsPending >= STORE_FDS_PENDING_MAX;
  pthread_mutex_unlock(&p->mutex);
  if (!bKeep) storeConnClose(pConn);
  if (bRelease) storeReleaseFds(p);
}

void storeReaderPark(Store *p, StoreConn *pConn) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  if (pConn == NULL || p->bMemory || p->pHost) return;
  storeReaderEnd(pConn);
  pImpl->bLazy = 0;
  if (sqlite3_get_autocommit(pConn->db)) storeReaderMmapPolicy(pImpl);
}

int storeReaderResume(Store *p, StoreConn *pConn, Schema **ppSchema) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  Schema *pOld = NULL;
  if (pConn == NULL || p->bMemory || p->pHost || pImpl->bDiscard || !pImpl->bFileVersion
      || !sqlite3_get_autocommit(pConn->db)
      || __atomic_load_n(&p->bTunePending, __ATOMIC_ACQUIRE)) {
    return SQLITE_NOTFOUND;
  }
  /* As storeReaderOpen's lazy checkout: the published schema, taken under
  ** the store's mutex, stands for the state iFileVersion names. */
  pthread_mutex_lock(&p->mutex);
  if (*ppSchema != p->pSchema) {
    pOld = *ppSchema;
    *ppSchema = p->pSchema;
    schemaRef(p->pSchema);
  }
  pthread_mutex_unlock(&p->mutex);
  schemaUnref(pOld);
  pImpl->bLazy = 1;
  return SQLITE_OK;
}
