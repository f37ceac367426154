/*
** store_cache.c — the process-wide cache of open stores, each store's
** connection pool and writer, and keeping the published schema current
** (SPEC §4).
**
** HOW IT WORKS
** The cache is a list of Stores in LRU order (most recent first), keyed by
** canonical path (realpath of the directory + the file name, so a file that
** does not exist yet still has one name) and the file's dev/inode, read
** with stat() on every acquire: a file replaced at the same path has a new
** inode and becomes a new Store. The common call skips realpath: an
** absolute path is looked up as is, a relative one by the inode it names. The old inode cannot be recycled for the
** new file while the cached Store keeps its writer connection open on it.
** A Store with references is never evicted; idle ones beyond
** MENTAT_STORE_CACHE (default 16, 0 = no caching) are closed, LRU first.
**
** Locks, always taken in this order and never held while running SQL
** (except a store's write mutex, which IS the write serialisation):
**   gInitMutex     lazy creation of the cache
**   cache->mutex   the list and every Store's nRef / bCached
**   store->mutex   the idle pool and the published schema
**
** Revalidation: every connection remembers the last `PRAGMA data_version`
** it saw. A checked-out reader runs BEGIN and then that pragma, which opens
** the call's one read transaction: the check, any re-read below and the
** caller's statements all see that snapshot, and storeReaderDone ends it.
** When the version changed, some other connection committed; in the same
** read transaction we read a cheap signature (StoreSig: the tx partition mark,
** which every Mentat commit bumps, and the mirrors' row counts and largest
** rowids). If it equals the state the published schema is known to be
** exact for (set by our writer's commits and by full checks), nothing more
** is read: that is the common case of a commit by this process's writer.
** A commit by another Mentat process (ours or the Rust engine) changes the
** tx mark, so it cannot match; the log then explains it: every Mentat
** transaction appends its datoms to `timelined_transactions` (rowids only
** grow), a schema change among them (an attribute, ident or schema-mirror
** datom, core attributes 1..40 other than :db/txInstant). So when the
** mirrors' counts and largest rowids are unchanged and the rows appended
** since the known state are contiguous, hold no such datom and every
** transaction from the known mark to the new one (and the known last row
** is still one from before the known mark, so no deleted row's rowid was
** reused), the schema is unchanged: a scan of those few rows replaces the
** fingerprint, which reads every ident and schema row (~170k instructions
** at bench s): a point lookup right after another process's commit went
** 61-64 -> 52 us (plain SQLite: 27-28 us). A mark
** bumped with no log rows (a raw edit) or more than STORE_LOG_SCAN_MAX new
** rows takes the full check. What neither way sees: an edit made outside
** Mentat that rewrites mirror rows in place and neither logs nor moves the
** mark (before this scan, a later commit by another process happened to
** expose it through the fingerprint; now only a later mirror insert or
** delete, or a reload, does).
** Otherwise the schema fingerprint (schema.c) is read; only if it differs
** from the published snapshot's, and the state read is not older than the
** published one's (tx mark), is the schema reloaded and swapped in whole.
** Snapshots are refcounted: callers holding the old one keep using it.
** A state older than the published schema's (lower mark) is either a
** reader that began before a newer state was published, which then uses
** its own snapshot's schema for that call, or the file gone back (a backup
** restored over it): the writer, whose BEGIN IMMEDIATE reads the newest
** state, then publishes the restored schema although its mark is lower.
** Blind spots, by design: a non-Mentat edit that rewrites mirror rows in
** place without bumping the tx mark (see above), and another store's
** content restored over this file with the very same mark and mirror
** counts and largest rowids (nothing in the signature differs).
**
** The same data_version check drives each reader's mmap (the format's
** 1 GiB): SQLite unmaps and refaults the whole file after every commit by
** another connection, so a reader that sees such commits every few calls
** turns its mapping off until they stop (storeReaderMmapPolicy).
**
** The in-memory store "" is never cached; its one connection serves as
** writer and reader, and it is freed at its last release.
*/
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "store_context.h"
#include "store_write.h"

/* The state signature (StoreSig), one row. Read after every foreign
** commit, when the reader's page cache starts empty, so each page it
** touches is a read from the OS: known_parts' three rows are scanned in
** their one table page rather than found through its key's index (a second
** page), and the mirrors are counted in the table pages max(rowid) reads. */
static const char zSigSql[] =
  "SELECT (SELECT idx FROM known_parts NOT INDEXED WHERE part = ':db.part/tx'),"
  " (SELECT count(*) FROM idents), (SELECT max(rowid) FROM idents),"
  " (SELECT count(*) FROM schema), (SELECT max(rowid) FROM schema),"
  " (SELECT max(rowid) FROM timelined_transactions)";

/* The known last row of the log (?1) and the rows appended after it, up to
** ?2, in rowid order: storeLogExplains reads them. */
static const char zLogScanSql[] =
  "SELECT rowid, tx, a FROM timelined_transactions WHERE rowid >= ?1 AND rowid <= ?2";

static pthread_mutex_t gInitMutex = PTHREAD_MUTEX_INITIALIZER;
static StoreCache *gpCache = NULL;
static StoreCache gCache;

/* The cache, created on first use. */
StoreCache *storeCache(void) {
  pthread_mutex_lock(&gInitMutex);
  if (gpCache == NULL) {
    pthread_mutex_init(&gCache.mutex, NULL);
    gpCache = &gCache;
  }
  pthread_mutex_unlock(&gInitMutex);
  return gpCache;
}

void storeErr(char **pzErr, char *zMsg) {
  if (pzErr == NULL) { sqlite3_free(zMsg); return; }
  sqlite3_free(*pzErr);
  *pzErr = zMsg;
}

/* ---------------------------------------------------------- connections */

static void storeConnClose(StoreConn *pConn) {
  StoreConnImpl *p = (StoreConnImpl *)pConn;
  if (p == NULL) return;
  if (p->base.xQueryCacheFree && p->base.pQueryCache) p->base.xQueryCacheFree(p->base.pQueryCache);
  if (p->base.xTxCacheFree && p->base.pTxCache) p->base.xTxCacheFree(p->base.pTxCache);
  sqlite3_finalize(p->pDataVersion);
  sqlite3_finalize(p->pSig);
  sqlite3_finalize(p->pFingerprint);
  sqlite3_finalize(p->pLogScan);
  sqlite3_finalize(p->pBegin);
  sqlite3_finalize(p->pCommit);
  sqlite3_finalize(p->pRollback);
  /* close_v2: anything the upper layers failed to finalize cannot keep the
  ** file open forever or crash us; it is released with them. */
  sqlite3_close_v2(p->base.db);
  sqlite3_free(p);
}

static int storeConnOpen(Store *pStore, int bValidate, StoreConn **ppConn, char **pzErr) {
  StoreConnImpl *p = NULL;
  sqlite3 *db = NULL;
  int rc = storeOpenDb(pStore->zPath, bValidate, &db, pzErr);
  *ppConn = NULL;
  if (rc != SQLITE_OK) return rc;
  p = sqlite3_malloc64(sizeof *p);
  if (p == NULL) {
    sqlite3_close_v2(db);
    storeErr(pzErr, sqlite3_mprintf("out of memory opening store %s", pStore->zPath));
    return SQLITE_NOMEM;
  }
  memset(p, 0, sizeof *p);
  p->base.db = db;
  p->base.pStore = pStore;
  p->base.iDataVersion = -1;    /* never seen: the first use revalidates */
  p->base.bMarksUnchecked = 1;
  rc = sqlite3_prepare_v3(db, "PRAGMA data_version", -1, SQLITE_PREPARE_PERSISTENT,
                          &p->pDataVersion, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v3(db, zSigSql, -1, SQLITE_PREPARE_PERSISTENT, &p->pSig, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v3(db, schemaFingerprintSql(), -1, SQLITE_PREPARE_PERSISTENT,
                            &p->pFingerprint, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v3(db, zLogScanSql, -1, SQLITE_PREPARE_PERSISTENT, &p->pLogScan, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v3(db, "BEGIN", -1, SQLITE_PREPARE_PERSISTENT, &p->pBegin, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v3(db, "COMMIT", -1, SQLITE_PREPARE_PERSISTENT, &p->pCommit, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v3(db, "ROLLBACK", -1, SQLITE_PREPARE_PERSISTENT, &p->pRollback, NULL);
  }
  if (rc == SQLITE_OK && !pStore->bMemory) {
    /* What storeConfigure set, restored when the reader's mmap comes back. */
    sqlite3_stmt *pMmap = NULL;
    rc = sqlite3_prepare_v2(db, "PRAGMA mmap_size", -1, &pMmap, NULL);
    if (rc == SQLITE_OK) rc = storeStepInt(pMmap, &p->iMmap);
    sqlite3_finalize(pMmap);
  }
  if (rc != SQLITE_OK) {
    storeErr(pzErr, sqlite3_mprintf("cannot open store %s: %s", pStore->zPath, sqlite3_errmsg(db)));
    storeConnClose(&p->base);
    return rc;
  }
  *ppConn = &p->base;
  return SQLITE_OK;
}

int storeStepInt(sqlite3_stmt *pStmt, sqlite3_int64 *piOut) {
  int rc = sqlite3_step(pStmt);
  *piOut = (rc == SQLITE_ROW) ? sqlite3_column_int64(pStmt, 0) : 0;
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) rc = SQLITE_OK;
  sqlite3_reset(pStmt);
  return rc;
}

int storeReadSig(StoreConnImpl *pImpl, StoreSig *pSig) {
  sqlite3_stmt *pStmt = pImpl->pSig;
  int rc = sqlite3_step(pStmt);
  memset(pSig, 0, sizeof *pSig);
  if (rc == SQLITE_ROW) {
    pSig->iMark = sqlite3_column_int64(pStmt, 0);
    for (int i = 0; i < 4; i++) pSig->a[i] = sqlite3_column_int64(pStmt, i + 1);
    pSig->iLogMax = sqlite3_column_int64(pStmt, 5);
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    rc = SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  return rc;
}

int storeSigEqual(const StoreSig *a, const StoreSig *b) {
  return a->iMark == b->iMark && memcmp(a->a, b->a, sizeof a->a) == 0;
}

/* Records that the published schema is exact at state sig (unless a newer
** state is already recorded). Store mutex held. */
void storeSetKnown(Store *p, const StoreSig *pSig) {
  if (!p->bKnown || pSig->iMark >= p->known.iMark) {
    p->known = *pSig;
    p->bKnown = 1;
  }
}

/* Swaps in pNew (read at tx mark iMark) unless the published snapshot was
** read from a newer state. Takes its own reference. */
void storePublish(Store *p, Schema *pNew, sqlite3_int64 iMark) {
  Schema *pOld = NULL;
  pthread_mutex_lock(&p->mutex);
  if (p->pSchema == NULL || iMark > p->iSchemaMark
      || (iMark == p->iSchemaMark
          && schemaFingerprintOf(pNew) != schemaFingerprintOf(p->pSchema))) {
    schemaRef(pNew);
    pOld = p->pSchema;
    p->pSchema = pNew;
    p->iSchemaMark = iMark;
  }
  pthread_mutex_unlock(&p->mutex);
  schemaUnref(pOld);
}

/* Schema fingerprints read since the process started (tests). */
static int gnFingerprints = 0;

int storeFingerprintCount(void) {
  return __atomic_load_n(&gnFingerprints, __ATOMIC_RELAXED);
}

/* Do the log rows appended since state pKnown account for every change
** between it and state pSig without touching the schema (see HOW IT WORKS)?
** *pbYes; an error only when the scan itself fails. */
static int storeLogExplains(StoreConnImpl *pImpl, const StoreSig *pKnown, const StoreSig *pSig,
                            int *pbYes) {
  sqlite3_stmt *pStmt = pImpl->pLogScan;
  sqlite3_int64 nNew = pSig->iLogMax - pKnown->iLogMax, n = 0;
  sqlite3_int64 iNext = pKnown->iMark;      /* the tx id the next new tx must have */
  int rc, bOk;
  *pbYes = 0;
  if (memcmp(pSig->a, pKnown->a, sizeof pSig->a) != 0) return SQLITE_OK;
  if (pSig->iMark <= pKnown->iMark || nNew <= 0 || nNew > STORE_LOG_SCAN_MAX) return SQLITE_OK;
  sqlite3_bind_int64(pStmt, 1, pKnown->iLogMax);
  sqlite3_bind_int64(pStmt, 2, pSig->iLogMax);
  /* The known last row is still there and from before the known mark: had
  ** it been deleted and its rowid reused, it would hold a newer tx. */
  rc = sqlite3_step(pStmt);
  bOk = rc == SQLITE_ROW && sqlite3_column_int64(pStmt, 0) == pKnown->iLogMax
        && sqlite3_column_int64(pStmt, 1) < pKnown->iMark;
  /* Then, in rowid order, the transactions from the known mark on, each
  ** the one after the last (tx ids are allocated one per transaction, and
  ** each logs at least its :db/txInstant), none with a schema datom (core
  ** attributes other than :db/txInstant, 3). */
  while (bOk && (rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    sqlite3_int64 tx = sqlite3_column_int64(pStmt, 1), a = sqlite3_column_int64(pStmt, 2);
    n++;
    if (a <= 40 && a != 3) {
      bOk = 0;
    } else if (tx == iNext) {
      iNext++;
    } else if (!(iNext > pKnown->iMark && tx == iNext - 1)) {
      bOk = 0;
    }
  }
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
    *pbYes = bOk && rc == SQLITE_DONE && n == nNew && iNext == pSig->iMark;
    rc = SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  return rc;
}

/* The file went back to an older state (a backup restored over it): the
** schema read from it replaces the published one although its tx mark is
** lower, and that state becomes the known one. */
static void storeRewind(Store *p, Schema *pNew, const StoreSig *pSig) {
  Schema *pOld;
  schemaRef(pNew);
  pthread_mutex_lock(&p->mutex);
  pOld = p->pSchema;
  p->pSchema = pNew;
  p->iSchemaMark = pSig->iMark;
  p->known = *pSig;
  p->bKnown = 1;
  pthread_mutex_unlock(&p->mutex);
  schemaUnref(pOld);
}

/* Makes sure the published schema is at least as new as what pConn's next
** statement will see (see HOW IT WORKS). pConn is inside the transaction
** whose snapshot that statement reads. bLatest: the transaction holds the
** write lock (the writer after BEGIN IMMEDIATE), so it reads the newest
** state there is. ppOwn (readers): set, with a reference, when this
** snapshot's schema differs from the published one and is older; the call
** then uses it. */
int storeRevalidate(Store *p, StoreConn *pConn, int bLatest, Schema **ppOwn, char **pzErr) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  sqlite3 *db = pConn->db;
  sqlite3_int64 iVersion = 0, iMark;
  sqlite3_uint64 fp = 0, fpPub;
  sqlite3_int64 iMarkPub;
  StoreSig sig;
  StoreSig known;
  Schema *pNew = NULL;
  int bSame, bKnown;
  int rc;

  if (p->bMemory) return SQLITE_OK;      /* one connection: nobody else commits */
  rc = storeStepInt(pImpl->pDataVersion, &iVersion);
  if (rc != SQLITE_OK || iVersion == pConn->iDataVersion) goto cleanup;
  /* Another connection committed: it may have written known_parts (or
  ** data past it) by other means than this extension. */
  pConn->bMarksUnchecked = 1;

  rc = storeReadSig(pImpl, &sig);
  if (rc != SQLITE_OK) goto cleanup;
  iMark = sig.iMark;

  /* The common case: the commit was our own writer's (which published any
  ** schema change it made), so the state is one the schema is known for. */
  pthread_mutex_lock(&p->mutex);
  bSame = p->bKnown && storeSigEqual(&sig, &p->known);
  bKnown = p->bKnown;
  known = p->known;
  pthread_mutex_unlock(&p->mutex);
  if (!bSame && bKnown) {
    rc = storeLogExplains(pImpl, &known, &sig, &bSame);
    if (rc != SQLITE_OK) goto cleanup;
    if (bSame) {
      /* Only if nothing moved the known state meanwhile: then the
      ** published schema, exact there, is exact here too. */
      pthread_mutex_lock(&p->mutex);
      bSame = p->bKnown && storeSigEqual(&known, &p->known)
              && known.iLogMax == p->known.iLogMax;
      if (bSame) storeSetKnown(p, &sig);
      pthread_mutex_unlock(&p->mutex);
    }
  }
  if (!bSame) {
    __atomic_add_fetch(&gnFingerprints, 1, __ATOMIC_RELAXED);
    rc = schemaFingerprintStmt(pImpl->pFingerprint, &fp);
    if (rc != SQLITE_OK) goto cleanup;

    pthread_mutex_lock(&p->mutex);
    fpPub = schemaFingerprintOf(p->pSchema);
    iMarkPub = p->iSchemaMark;
    pthread_mutex_unlock(&p->mutex);

    if (fp != fpPub && (iMark >= iMarkPub || bLatest || ppOwn)) {
      rc = schemaLoad(db, &pNew, pzErr);
      if (rc != SQLITE_OK) goto cleanup;
      if (iMark >= iMarkPub) {
        storePublish(p, pNew, iMark);
      } else if (bLatest) {
        /* The newest state with a lower mark than the published schema's:
        ** the file went back (helper-23's F3), not a slow reader. */
        storeRewind(p, pNew, &sig);
      } else {
        /* A snapshot older than the published schema's state: a newer one
        ** was published while this call began, or the file went back.
        ** Either way this call reads this snapshot, so it gets this
        ** snapshot's schema, unpublished, and the connection does not note
        ** the version: its next call checks again (storeWriterRecheck has
        ** the writer, which sees the newest state, settle which). */
        *ppOwn = pNew;
        pNew = NULL;
        goto cleanup;
      }
    }
    pthread_mutex_lock(&p->mutex);
    if (fp == schemaFingerprintOf(p->pSchema)) storeSetKnown(p, &sig);
    pthread_mutex_unlock(&p->mutex);
  }
  pConn->iDataVersion = iVersion;

cleanup:
  if (rc != SQLITE_OK && pzErr && *pzErr == NULL) {
    *pzErr = sqlite3_mprintf("cannot read store %s: %s", p->zPath, sqlite3_errmsg(db));
  }
  schemaUnref(pNew);
  return rc;
}

/* --------------------------------------------------------------- stores */

static void storeFree(Store *p) {
  if (p == NULL) return;
  while (p->pIdle) {
    StoreConn *pConn = p->pIdle;
    p->pIdle = pConn->pNext;
    storeConnClose(pConn);
  }
  storeConnClose(p->pWriter);
  schemaUnref(p->pSchema);
  pthread_mutex_destroy(&p->mutex);
  pthread_mutex_destroy(&p->writeMutex);
  pthread_mutex_destroy(&p->holdMutex);
  sqlite3_free(p->zPath);
  sqlite3_free(p->zWalPath);
  sqlite3_free(p);
}

/* Opens a new Store on zCanon (owned by the Store from now, even on error):
** the writer connection (creating/upgrading the file), the first schema. */
static int storeOpen(char *zCanon, Store **ppStore, char **pzErr) {
  Store *p = sqlite3_malloc64(sizeof *p);
  StoreConnImpl *pW;
  struct stat st;
  int rc;

  *ppStore = NULL;
  if (p == NULL) {
    sqlite3_free(zCanon);
    storeErr(pzErr, sqlite3_mprintf("out of memory opening a store"));
    return SQLITE_NOMEM;
  }
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mutex, NULL);
  pthread_mutex_init(&p->writeMutex, NULL);
  pthread_mutex_init(&p->holdMutex, NULL);
  p->zPath = zCanon;
  p->bMemory = (zCanon[0] == 0);
  p->nRef = 1;
  p->nAnalyzed = -1;
  if (!p->bMemory) {
    p->zWalPath = sqlite3_mprintf("%s-wal", zCanon);
    if (p->zWalPath == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  }

  rc = storeConnOpen(p, 1, &p->pWriter, pzErr);
  if (rc != SQLITE_OK) goto cleanup;
  pW = (StoreConnImpl *)p->pWriter;
  if (!p->bMemory && stat(zCanon, &st) == 0) {
    p->dev = st.st_dev;
    p->ino = st.st_ino;
  }
  /* The first snapshot, its mark and data_version from one read. */
  rc = sqlite3_exec(pW->base.db, "BEGIN", NULL, NULL, NULL);
  if (rc == SQLITE_OK) {
    rc = storeStepInt(pW->pDataVersion, &pW->base.iDataVersion);
    if (rc == SQLITE_OK) rc = storeReadSig(pW, &p->known);
    if (rc == SQLITE_OK) rc = schemaLoad(pW->base.db, &p->pSchema, pzErr);
    if (rc == SQLITE_OK) {
      p->iSchemaMark = p->known.iMark;
      p->bKnown = 1;
    }
    sqlite3_exec(pW->base.db, "COMMIT", NULL, NULL, NULL);
  }
  /* A big store opened for the first time in this process gets its
  ** managed indexes and statistics (a no-op when they are current). */
  if (rc == SQLITE_OK) storeTuneWriter(p, 1);

cleanup:
  if (rc != SQLITE_OK) {
    if (pzErr && *pzErr == NULL) {
      *pzErr = sqlite3_mprintf("cannot open store %s: %s", p->zPath,
                               rc == SQLITE_NOMEM ? "out of memory"
                               : p->pWriter ? sqlite3_errmsg(p->pWriter->db) : "error");
    }
    storeFree(p);
    p = NULL;
  }
  *ppStore = p;
  return rc;
}

/* realpath of the directory + the file name, so a store that does not
** exist yet has the same name as it will have once it does; an existing
** path (perhaps a symlink) resolves completely. sqlite3_malloc'd. */
static char *storeCanonical(const char *zPath, char **pzErr) {
  char *zReal = realpath(zPath, NULL);     /* libc memory */
  char *zOut = NULL;
  if (zReal) {
    zOut = sqlite3_mprintf("%s", zReal);
    free(zReal);
  } else {
    const char *zSlash = strrchr(zPath, '/');
    const char *zBase = zSlash ? zSlash + 1 : zPath;
    char *zDir = zSlash == NULL ? sqlite3_mprintf(".")
               : zSlash == zPath ? sqlite3_mprintf("/")
               : sqlite3_mprintf("%.*s", (int)(zSlash - zPath), zPath);
    if (zDir == NULL) goto oom;
    if (zBase[0] == 0 || strcmp(zBase, ".") == 0 || strcmp(zBase, "..") == 0) {
      storeErr(pzErr, sqlite3_mprintf("cannot open store %s: not a file name", zPath));
      sqlite3_free(zDir);
      return NULL;
    }
    zReal = realpath(zDir, NULL);
    if (zReal == NULL) {
      storeErr(pzErr, sqlite3_mprintf("cannot open store %s: directory %s does not exist",
                                      zPath, zDir));
      sqlite3_free(zDir);
      return NULL;
    }
    sqlite3_free(zDir);
    zOut = sqlite3_mprintf("%s%s%s", zReal, strcmp(zReal, "/") == 0 ? "" : "/", zBase);
    free(zReal);
  }
  if (zOut) return zOut;
oom:
  return NULL;   /* no message: the caller tells SQLITE_NOMEM by its absence */
}

/* Cache list helpers; cache mutex held. */
static void storeUnlink(StoreCache *c, Store *p) {
  if (p->pPrev) p->pPrev->pNext = p->pNext; else c->pFirst = p->pNext;
  if (p->pNext) p->pNext->pPrev = p->pPrev; else c->pLast = p->pPrev;
  p->pPrev = p->pNext = NULL;
  p->bCached = 0;
  c->nStore--;
}

static void storeLinkFirst(StoreCache *c, Store *p) {
  p->pPrev = NULL;
  p->pNext = c->pFirst;
  if (c->pFirst) c->pFirst->pPrev = p; else c->pLast = p;
  c->pFirst = p;
  p->bCached = 1;
  c->nStore++;
}

static Store *storeFind(StoreCache *c, const char *zPath) {
  for (Store *p = c->pFirst; p; p = p->pNext) {
    if (strcmp(p->zPath, zPath) == 0) return p;
  }
  return NULL;
}

/* The cached file store whose file is the inode *pSt names, or NULL. */
static Store *storeFindInode(StoreCache *c, const struct stat *pSt) {
  for (Store *p = c->pFirst; p; p = p->pNext) {
    if (!p->bMemory && p->dev == pSt->st_dev && p->ino == pSt->st_ino) return p;
  }
  return NULL;
}

/* Moves idle stores beyond the limit, LRU first, onto *ppClose (linked
** through pNext) for closing after the mutex is released. */
static void storeEvict(StoreCache *c, Store **ppClose) {
  Store *p = c->pLast;
  while (p && c->nStore > configStoreCache()) {
    Store *pPrev = p->pPrev;
    if (p->nRef == 0) {
      storeUnlink(c, p);
      p->pNext = *ppClose;
      *ppClose = p;
    }
    p = pPrev;
  }
}

static void storeFreeList(Store *p) {
  while (p) {
    Store *pNext = p->pNext;
    storeFree(p);
    p = pNext;
  }
}

int storeAcquire(const char *zPath, Store **ppStore, char **pzErr) {
  StoreCache *c = storeCache();
  Store *p = NULL, *pClose = NULL;
  char *zCanon;
  struct stat st;
  int bExists, rc;

  *ppStore = NULL;
  if (zPath == NULL) {
    storeErr(pzErr, sqlite3_mprintf("no store path given"));
    return SQLITE_MISUSE;
  }
  if (zPath[0] == 0) {
    zCanon = sqlite3_mprintf("");
    if (zCanon == NULL) return SQLITE_NOMEM;
    return storeOpen(zCanon, ppStore, pzErr);
  }
  if (stat(zPath, &st) == 0) {
    /* The common call names a cached store by its canonical path: then one
    ** stat() proves it is the same file, and realpath (a getcwd, readlink
    ** and stat per component: ~10 us of a 30 us point lookup here) is
    ** skipped. A relative path (the bench passes "out/store-s.db") names
    ** the cached store whose open file is the inode it resolves to now:
    ** with a single link that file has one name, the one the store was
    ** opened by (SQLite does not support renaming a database in use), so
    ** the canonical path matches too. Anything else takes the full path. */
    pthread_mutex_lock(&c->mutex);
    if (zPath[0] == '/') {
      p = storeFind(c, zPath);
    } else {
      p = st.st_nlink == 1 ? storeFindInode(c, &st) : NULL;
    }
    if (p && p->dev == st.st_dev && p->ino == st.st_ino) {
      p->nRef++;
      storeUnlink(c, p);
      storeLinkFirst(c, p);
      pthread_mutex_unlock(&c->mutex);
      *ppStore = p;
      return SQLITE_OK;
    }
    pthread_mutex_unlock(&c->mutex);
    p = NULL;
  }
  zCanon = storeCanonical(zPath, pzErr);
  if (zCanon == NULL) return (pzErr && *pzErr) ? SQLITE_CANTOPEN : SQLITE_NOMEM;
  bExists = (stat(zCanon, &st) == 0);
  if (bExists && !S_ISREG(st.st_mode)) {
    /* SQLite would open a device or fail on a directory with "disk I/O
    ** error", after making its journal beside it (/dev/null-journal): a
    ** write outside any store. */
    storeErr(pzErr, sqlite3_mprintf("cannot open store %s: %s", zPath,
                                    S_ISDIR(st.st_mode) ? "a directory" : "not a regular file"));
    sqlite3_free(zCanon);
    return SQLITE_CANTOPEN;
  }

  pthread_mutex_lock(&c->mutex);
  p = storeFind(c, zCanon);
  if (p && bExists && p->dev == st.st_dev && p->ino == st.st_ino) {
    p->nRef++;
    storeUnlink(c, p);
    storeLinkFirst(c, p);
    pthread_mutex_unlock(&c->mutex);
    sqlite3_free(zCanon);
    *ppStore = p;
    return SQLITE_OK;
  }
  if (p) {
    /* Replaced or deleted: the old Store lives on for its holders only. */
    storeUnlink(c, p);
    if (p->nRef == 0) pClose = p;
  }
  pthread_mutex_unlock(&c->mutex);
  storeFree(pClose);
  pClose = NULL;

  rc = storeOpen(zCanon, &p, pzErr);     /* takes zCanon */
  if (rc != SQLITE_OK) return rc;

  pthread_mutex_lock(&c->mutex);
  if (configStoreCache() > 0) {
    Store *pOther = storeFind(c, p->zPath);
    if (pOther && pOther->dev == p->dev && pOther->ino == p->ino) {
      /* Another thread opened it meanwhile: share theirs. */
      pOther->nRef++;
      pClose = p;
      p = pOther;
    } else {
      if (pOther) {
        storeUnlink(c, pOther);
        if (pOther->nRef == 0) { pOther->pNext = pClose; pClose = pOther; }
      }
      storeLinkFirst(c, p);
      storeEvict(c, &pClose);
    }
  }
  pthread_mutex_unlock(&c->mutex);
  storeFreeList(pClose);
  *ppStore = p;
  return SQLITE_OK;
}

void storeRelease(Store *p) {
  StoreCache *c;
  Store *pClose = NULL;
  if (p == NULL) return;
  c = storeCache();
  pthread_mutex_lock(&c->mutex);
  if (--p->nRef == 0) {
    if (!p->bCached) pClose = p;
    else storeEvict(c, &pClose);
  }
  pthread_mutex_unlock(&c->mutex);
  storeFreeList(pClose);
}

void storeCacheClear(void) {
  StoreCache *c = storeCache();
  Store *pClose = NULL;
  pthread_mutex_lock(&c->mutex);
  for (Store *p = c->pFirst; p;) {
    Store *pNext = p->pNext;
    if (p->nRef == 0) {
      storeUnlink(c, p);
      p->pNext = pClose;
      pClose = p;
    }
    p = pNext;
  }
  pthread_mutex_unlock(&c->mutex);
  storeFreeList(pClose);
}

int storeCacheSetLimit(int nMax) {
  StoreCache *c = storeCache();
  Store *pClose = NULL;
  pthread_mutex_lock(&c->mutex);
  int nOld = configSetStoreCache(nMax);
  storeEvict(c, &pClose);
  pthread_mutex_unlock(&c->mutex);
  storeFreeList(pClose);
  return nOld;
}

int storeCacheCount(void) {
  StoreCache *c = storeCache();
  pthread_mutex_lock(&c->mutex);
  int n = c->nStore;
  pthread_mutex_unlock(&c->mutex);
  return n;
}

const char *storePath(const Store *p) {
  return p->zPath;
}

/* -------------------------------------------------------------- readers */

/* Opens the call's one read transaction on a checked-out reader and makes
** the published schema current for it. `PRAGMA data_version` after BEGIN
** is the statement that takes the WAL read lock, so the version check, any
** schema re-read and the caller's statements share one snapshot and one
** lock round trip: before, the check was a read transaction of its own
** (shm lock + fstat + unlock: 3 of the 7 syscalls of a point lookup). */
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
  return rc;
}

/* A reader's mmap against commits by other connections. On any commit by
** another connection SQLite unmaps the whole file at the next read
** transaction and every page touched afterwards faults in again: at bench
** scale s that made the first point lookup after another process's commit
** cost +430-640 us with the format's 1 GiB mmap against +80-120 us without
** it (the pages come back by pread from the OS cache), while with no
** commits mmap halves the CPU of page-heavy reads (ref_traversal 270-350 us
** with, 720-940 us without). So each reader keeps mmap while commits are
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

int storeConnOpenWriter(Store *p, char **pzErr) {
  StoreConn *pWriter = NULL;
  int rc = storeConnOpen(p, 1, &pWriter, pzErr);
  if (rc == SQLITE_OK) p->pWriter = pWriter;
  return rc;
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
  bGo = p->nOut == 0 && p->nFdsPending >= STORE_FDS_PENDING_MAX && p->pHolds == NULL;
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

int storeReader(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  StoreConn *pConn = NULL;
  Schema *pOwn = NULL;
  int rc = SQLITE_OK;

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
    } else if (p->nFdsPending > 0) {
      p->nFdsPending--;           /* the open below reuses a kept descriptor */
    }
    p->nOut++;
    pthread_mutex_unlock(&p->mutex);
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

/* Between calls a store connection holds no transaction (B25, B32): a
** statement left un-reset or an open BEGIN keeps a read snapshot, which
** pins the WAL so no checkpoint can restart it. The callers reset their
** statements; this sweep makes a forgotten one harmless. It walks only the
** connection's own prepared statements (bounded by its caches). */
void storeConnQuiesce(StoreConn *pConn) {
  for (sqlite3_stmt *pStmt = sqlite3_next_stmt(pConn->db, NULL); pStmt;
       pStmt = sqlite3_next_stmt(pConn->db, pStmt)) {
    if (sqlite3_stmt_busy(pStmt)) sqlite3_reset(pStmt);
  }
  storeConnRollback(pConn);
}

void storeConnRollback(StoreConn *pConn) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  if (sqlite3_get_autocommit(pConn->db)) return;
  if (pImpl->pRollback) {
    sqlite3_step(pImpl->pRollback);
    sqlite3_reset(pImpl->pRollback);
  }
  if (sqlite3_get_autocommit(pConn->db) == 0) sqlite3_exec(pConn->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Ends a reader's read transaction with COMMIT, not ROLLBACK: a holder may
** have spilled rows into a temp table inside it (B25). COMMIT comes first:
** with no statement left running that ends the snapshot, which
** sqlite3_txn_state confirms in a few instructions, so the sweep over the
** connection's prepared statements (up to ~70 with a full plan cache,
** ~0.9 us) runs only when something was left busy: then a still-running
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
  if (pConn == NULL || p->bMemory) return;
  storeReaderEnd(pConn);
}

/* Hands a reader back: pooled while fewer than MENTAT_IDLE_READERS (4) are
** idle, closed otherwise. Readers are opened on demand, one per call or
** open cursor at a time, so a burst of N open cursors opens N; only the
** pool's few are kept (each holds two descriptors, the database file and
** its WAL, and its page cache). The one handed back last is reused first. */
void storeReaderDone(Store *p, StoreConn *pConn) {
  int bKeep, bRelease, nMax;
  if (pConn == NULL || p->bMemory) return;
  nMax = configIdleReaders();
  storeReaderEnd(pConn);
  if (sqlite3_get_autocommit(pConn->db)) storeReaderMmapPolicy((StoreConnImpl *)pConn);
  pthread_mutex_lock(&p->mutex);
  bKeep = p->nIdle < nMax;
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

/* ---------------------------------------------------------------- holds */

/* The list is guarded by holdMutex, which storeHoldsRelease keeps across
** the xRelease calls: a holder removing itself (to free its memory) waits
** until a release in progress is over, so xRelease never runs on freed
** memory. Holders never take holdMutex while holding their own mutex, and
** xRelease takes only its holder's, so the two cannot deadlock. */
void storeHoldAdd(Store *p, StoreHold *pHold) {
  pthread_mutex_lock(&p->holdMutex);
  pHold->pHoldPrev = NULL;
  pHold->pHoldNext = p->pHolds;
  if (p->pHolds) p->pHolds->pHoldPrev = pHold;
  p->pHolds = pHold;
  pthread_mutex_unlock(&p->holdMutex);
}

static void storeHoldUnlink(Store *p, StoreHold *pHold) {
  if (pHold->pHoldPrev) pHold->pHoldPrev->pHoldNext = pHold->pHoldNext;
  else if (p->pHolds == pHold) p->pHolds = pHold->pHoldNext;
  else return;                              /* not in the list (released) */
  if (pHold->pHoldNext) pHold->pHoldNext->pHoldPrev = pHold->pHoldPrev;
  pHold->pHoldPrev = pHold->pHoldNext = NULL;
}

void storeHoldRemove(Store *p, StoreHold *pHold) {
  pthread_mutex_lock(&p->holdMutex);
  storeHoldUnlink(p, pHold);
  pthread_mutex_unlock(&p->holdMutex);
}

int storeHoldsRelease(Store *p, int *pbAll) {
  int n = 0, bAll = 1;
  sqlite3_int64 tEnd = configNowMs() + STORE_HOLD_RELEASE_MS;
  pthread_mutex_lock(&p->holdMutex);
  /* One budget for the commit, not per hold (helper-25: 30 open cursors
  ** held a commit for 3.6 s). */
  StoreHold *pAgain = NULL;
  while (p->pHolds && (n == 0 || configNowMs() < tEnd)) {
    StoreHold *pHold = p->pHolds;
    int r;
    storeHoldUnlink(p, pHold);
    r = pHold->xRelease(pHold, tEnd);
    if (r != 1) bAll = 0;
    if (r == 2) {
      pHold->pHoldNext = pAgain;    /* back in the list after this commit */
      pAgain = pHold;
    }
    n++;
  }
  if (p->pHolds) bAll = 0;
  while (pAgain) {
    StoreHold *pHold = pAgain;
    pAgain = pHold->pHoldNext;
    pHold->pHoldPrev = NULL;
    pHold->pHoldNext = p->pHolds;
    if (p->pHolds) p->pHolds->pHoldPrev = pHold;
    p->pHolds = pHold;
  }
  pthread_mutex_unlock(&p->holdMutex);
  if (pbAll) *pbAll = bAll;
  return n;
}
