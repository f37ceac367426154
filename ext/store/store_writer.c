/*
** store_writer.c — a store's one writer: BEGIN IMMEDIATE under the store's
** write mutex, the commit and publication of a new schema, and the
** writer's recheck of a state a reader could not settle.
**
** Takes in the transactor's begin/end calls (store.h); gives out the
** writer connection inside its write transaction and the schema current
** for it; calls the connection, revalidation, WAL-policy and tuning files
** below it (store_context.h). Writes are serialised in-process by the
** write mutex and across processes by BEGIN IMMEDIATE, both under the
** busy timeout (configBusyTimeoutMs): a writer waits at most that long in
** all, then fails with SQLITE_BUSY (admission control: under overload
** writers are refused, not queued without bound). Nothing after the COMMIT
** fails the caller: its transaction is committed.
**
** GROUP COMMIT
** At synchronous=FULL (or EXTRA) a commit's cost is the disk's flush, the
** same for one transaction as for many. So concurrent writers of one file
** store in this process share commits: a write that ends while other
** writers wait for the write mutex does not COMMIT; it leaves its
** transaction in the writer's open SQLite transaction (the group), hands
** the mutex on and waits; the next writer runs inside the same SQLite
** transaction, in a SAVEPOINT of its own, and so on, until a write ends
** with no writer waiting (or the group is full, or the write changed the
** schema): that one COMMITs the group and wakes the others with the
** outcome. Each transaction keeps its own tx id (they run one after the
** other, so ids, instants and log rows are in commit order), its report
** and its all-or-nothing outcome: a failing one rolls back to its
** SAVEPOINT, leaving the others; and each caller returns only after the
** COMMIT that made it durable (a crash before it loses only transactions
** not yet acknowledged). A COMMIT that fails fails every transaction of
** the group, none of which is then stored. The first write of a group
** needs no SAVEPOINT (it is alone in the SQLite transaction), so a lone
** writer pays nothing. A caller's interrupt is looked at when its own
** write ends (storeSetCommitVeto), never at the group's COMMIT on another
** caller's thread. Waiters poll every STORE_GROUP_POLL_MS: a writer that
** gave up waiting for the mutex (busy timeout) would otherwise leave the
** group to nobody, so a waiter that finds the mutex free commits it.
** Not grouped: in-memory stores (their one connection also serves reads),
** host stores (they commit with the host's transaction), synchronous
** NORMAL or OFF (no flush to share), MENTAT_GROUP_COMMIT=0.
*/
#include <errno.h>
#include <string.h>
#include <time.h>
#include "config.h"
#include "store_context.h"

/* The write mutex's deadline on the monotonic clock where the C library can
** wait on it (glibc 2.30: pthread_mutex_clocklock): a step of the wall clock
** must not stretch or cut a writer's wait. */
/* (Not under ThreadSanitizer, which does not see pthread_mutex_clocklock
** take the mutex and would report every access under it as a race.) */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 30)) \
    && !defined(__SANITIZE_THREAD__)
#define STORE_LOCK_CLOCK CLOCK_MONOTONIC
#define STORE_LOCK_UNTIL(m, ts) pthread_mutex_clocklock((m), CLOCK_MONOTONIC, (ts))
#else
#define STORE_LOCK_CLOCK CLOCK_REALTIME
#define STORE_LOCK_UNTIL(m, ts) pthread_mutex_timedlock((m), (ts))
#endif

/* Transactions per group at most, and the datoms a group inserts before
** it commits whatever waits (a bulk write's pages are not worth holding). */
#define STORE_GROUP_MAX 64
#define STORE_GROUP_MAX_DATOMS 1000
/* How often a waiter looks whether its group was left to nobody. */
#define STORE_GROUP_POLL_MS 5

sqlite3_int64 storeCommitCount(Store *p) {
  return __atomic_load_n(&p->nCommits, __ATOMIC_RELAXED);
}

void storeGroupInit(Store *p) {
  pthread_condattr_t attr;
  pthread_mutex_init(&p->groupMutex, NULL);
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&p->groupCond, &attr);
  pthread_condattr_destroy(&attr);
}

void storeGroupFini(Store *p) {
  pthread_cond_destroy(&p->groupCond);
  pthread_mutex_destroy(&p->groupMutex);
}

/* Steps the writer's SAVEPOINT (0), RELEASE (1) or ROLLBACK TO (2) of a
** write in a group, its BEGIN IMMEDIATE (3) or COMMIT (4), prepared at
** first use (sqlite3_exec would parse each one every time: ~2.5k
** instructions of a one-datom write's ~480k). */
#define STORE_W_BEGIN  3
#define STORE_W_COMMIT 4
static int storeGroupStep(StoreConnImpl *pW, int i) {
  static const char *const azSql[5] = {
    "SAVEPOINT mentat_group_tx", "RELEASE mentat_group_tx", "ROLLBACK TO mentat_group_tx",
    "BEGIN IMMEDIATE", "COMMIT"
  };
  int rc = SQLITE_OK;
  if (pW->apGroup[i] == NULL) {
    rc = sqlite3_prepare_v3(pW->base.db, azSql[i], -1, SQLITE_PREPARE_PERSISTENT,
                            &pW->apGroup[i], NULL);
    if (rc != SQLITE_OK) return rc;
  }
  rc = sqlite3_step(pW->apGroup[i]);
  sqlite3_reset(pW->apGroup[i]);
  return rc == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(pW->base.db);
}

/* Hands the group's outcome to its waiters and closes it (write mutex
** held). zErr: the message each failed waiter gets a copy of. */
static void storeGroupWake(Store *p, int rc, const char *zErr) {
  pthread_mutex_lock(&p->groupMutex);
  for (StoreGroupWait *w = p->pGroupWait; w; w = w->pNext) {
    w->rc = rc;
    w->zErr = rc == SQLITE_OK ? NULL : sqlite3_mprintf("%s", zErr ? zErr : "cannot commit");
    w->bDone = 1;
  }
  p->pGroupWait = NULL;
  pthread_cond_broadcast(&p->groupCond);
  pthread_mutex_unlock(&p->groupMutex);
  p->bGroupOpen = 0;
  p->nGroup = 0;
  if (rc != SQLITE_OK && p->pWriter) {
    /* Marks a transaction of the group checked are rolled back with it. */
    p->pWriter->bMarksUnchecked = 1;
  }
}

/* COMMITs the writer's transaction (the group, or one write alone), wakes
** the group's waiters with the outcome, then runs what follows a commit
** (publication, WAL policy, tuning). Write mutex held. */
static int storeGroupCommit(Store *p, Schema *pNewSchema, char **pzErr) {
  StoreConnImpl *pImpl = (StoreConnImpl *)p->pWriter;
  StoreConn *pConn = p->pWriter;
  StoreSig sig;
  char *zErr = NULL;
  int rc;

  /* The state being committed, read inside the transaction: the new
  ** schema belongs to it, or (no schema change) the published one does,
  ** as storeWriteBegin made it current under the write lock. */
  rc = storeReadSig(pImpl, &sig);
  if (rc == SQLITE_OK) rc = storeGroupStep(pImpl, STORE_W_COMMIT);
  if (rc != SQLITE_OK) {
    zErr = sqlite3_mprintf("cannot commit to store %s: %s", p->bMemory ? "(in memory)" : p->zPath,
                           sqlite3_errmsg(pConn->db));
  }
  storeConnQuiesce(pConn);
  storeGroupWake(p, rc, zErr);
  if (rc == SQLITE_OK) {
    __atomic_add_fetch(&p->nCommits, 1, __ATOMIC_RELAXED);
    if (pNewSchema) storePublish(p, pNewSchema, sig.iMark);
    pthread_mutex_lock(&p->mutex);
    if (pNewSchema == NULL || p->pSchema == pNewSchema) storeSetKnown(p, &sig);
    pthread_mutex_unlock(&p->mutex);
    storeWalAfterCommit(p, pConn->db);
    /* Still under the write mutex: tuning writes on this connection. */
    storeTuneAfterCommit(p, pNewSchema != NULL);
  }
  p->nNoteDatoms = 0;
  p->nNoteInserted = 0;
  if (zErr) storeErr(pzErr, zErr);
  return rc;
}

/* Waits until w's group committed (or failed); takes the COMMIT over when
** the group was left to nobody (see GROUP COMMIT). */
static void storeGroupAwait(Store *p, StoreGroupWait *w) {
  pthread_mutex_lock(&p->groupMutex);
  while (!w->bDone) {
    struct timespec ts;
    int e;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += STORE_GROUP_POLL_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    e = pthread_cond_timedwait(&p->groupCond, &p->groupMutex, &ts);
    if (w->bDone || e != ETIMEDOUT) continue;
    pthread_mutex_unlock(&p->groupMutex);
    if (pthread_mutex_trylock(&p->writeMutex) == 0) {
      /* bDone is set only under the write mutex, so it reads true here
      ** once its group is over. */
      if (!w->bDone && p->bGroupOpen) {
        char *zErr = NULL;
        storeGroupCommit(p, NULL, &zErr);
        sqlite3_free(zErr);
      }
      pthread_mutex_unlock(&p->writeMutex);
    }
    pthread_mutex_lock(&p->groupMutex);
  }
  pthread_mutex_unlock(&p->groupMutex);
}

void storeWriterRecheck(Store *p) {
  sqlite3 *db;
  if (p->bMemory || pthread_mutex_trylock(&p->writeMutex) != 0) return;
  if (p->pWriter == NULL || p->bGroupOpen) {   /* storeReleaseFds could not reopen it,
                                                ** or a group waits for its COMMIT */
    pthread_mutex_unlock(&p->writeMutex);
    return;
  }
  db = p->pWriter->db;
  sqlite3_busy_timeout(db, 0);
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) {
    storeRevalidate(p, p->pWriter, 1, NULL, NULL);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  }
  sqlite3_busy_timeout(db, configBusyTimeoutMs());
  pthread_mutex_unlock(&p->writeMutex);
}

/* The slice of a wait for the write mutex: between two, the waiter asks
** whether its caller was interrupted (issue 19: a writer of this process
** inside a big edn_t kept an interrupted one waiting). */
#define STORE_LOCK_SLICE_MS 1

/* Waits for the write mutex until msTimeout ms after t0 (configNowMs), in
** slices of STORE_LOCK_SLICE_MS; 0 when taken, ETIMEDOUT, or EINTR when the
** caller was interrupted. */
static int storeWriteLockWait(Store *p, sqlite3_int64 t0, int msTimeout) {
  for (;;) {
    struct timespec ts;
    sqlite3_int64 msLeft = t0 + msTimeout - configNowMs();
    long msSlice = msLeft < STORE_LOCK_SLICE_MS ? (long)(msLeft > 0 ? msLeft : 0) : STORE_LOCK_SLICE_MS;
    int e;
    clock_gettime(STORE_LOCK_CLOCK, &ts);
    ts.tv_nsec += msSlice * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    e = STORE_LOCK_UNTIL(&p->writeMutex, &ts);
    if (e != ETIMEDOUT) return e;
    if (msLeft <= STORE_LOCK_SLICE_MS) return ETIMEDOUT;
    if (storeCallerInterrupted()) return EINTR;
  }
}

/* Takes the write mutex within msTimeout ms. SQLITE_OK, SQLITE_INTERRUPT
** when the caller was interrupted meanwhile, or SQLITE_BUSY
** with *pzErr naming the store and how many writers of this process were
** waiting: an unfair mutex under many writers let some wait seconds while
** others went round, with no bound as writers are added (bench/overload.py;
** bench/findings.md "Soak and overload"). *pmsLeft
** gets what is left of the timeout for BEGIN IMMEDIATE. */
static int storeWriteLock(Store *p, int msTimeout, int *pmsLeft, char **pzErr) {
  sqlite3_int64 t0;
  int nWaiting, e;

  *pmsLeft = msTimeout;
  if (pthread_mutex_trylock(&p->writeMutex) == 0) return SQLITE_OK;
  t0 = configNowMs();
  __atomic_add_fetch(&p->nWriteWaiting, 1, __ATOMIC_RELAXED);
  e = storeWriteLockWait(p, t0, msTimeout);
  nWaiting = __atomic_fetch_sub(&p->nWriteWaiting, 1, __ATOMIC_RELAXED);
  if (e == EINTR) {
    storeErr(pzErr, sqlite3_mprintf("interrupted"));
    return SQLITE_INTERRUPT;
  }
  if (e != 0) {
    storeErr(pzErr, sqlite3_mprintf("store %s is busy: %d writer%s waiting in this process, the write"
                                    " lock was not free within %d ms (MENTAT_BUSY_TIMEOUT_MS)",
                                    p->bMemory ? "(in memory)" : p->zPath, nWaiting,
                                    nWaiting == 1 ? "" : "s", msTimeout));
    return SQLITE_BUSY;
  }
  *pmsLeft = msTimeout - (int)(configNowMs() - t0);
  if (*pmsLeft < 1) *pmsLeft = 1;
  return SQLITE_OK;
}

/* BEGIN IMMEDIATE on db, waiting at most msWait ms for another process's
** write lock (storeBusyWaitSet), then the connection's usual busy timeout
** back. SQLITE_INTERRUPT when the caller was interrupted while waiting. */
static int storeBeginImmediate(StoreConnImpl *pW, int msWait) {
  sqlite3 *db = pW->base.db;
  StoreBusyWait w;
  int rc;
  storeBusyWaitSet(db, &w, msWait);
  w.bInterruptible = 1;
  rc = storeGroupStep(pW, STORE_W_BEGIN);
  sqlite3_busy_timeout(db, configBusyTimeoutMs());
  if (rc != SQLITE_OK && w.bInterrupted) rc = SQLITE_INTERRUPT;
  return rc;
}

int storeWriteBegin(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  StoreConn *pConn;
  int msTimeout = configBusyTimeoutMs(), msLeft;
  int rc;

  if (p->pHost) return storeHostWriteBegin(p, 0, ppConn, ppSchema, pzErr);
  *ppConn = NULL;
  *ppSchema = NULL;
  rc = storeWriteLock(p, msTimeout, &msLeft, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (p->pWriter == NULL) {
    /* storeReleaseFds closed it and could not open it again */
    rc = storeConnOpenWriter(p, pzErr);
    if (rc != SQLITE_OK) goto cleanup;
  }
  pConn = p->pWriter;
  storeWalPolicyInit(p, pConn->db);
  if (p->bGroupOpen && sqlite3_get_autocommit(pConn->db)) {
    /* SQLite ended the group's transaction by itself (an I/O error or
    ** out of memory in a statement): its transactions are gone. */
    storeGroupWake(p, SQLITE_ABORT, "the store's write transaction ended unexpectedly;"
                                    " nothing was written");
  }
  if (p->bGroupOpen) {
    /* Join the group: the write lock, the schema and the snapshot are
    ** the group's (no write of the group changed the schema). */
    rc = storeGroupStep((StoreConnImpl *)pConn, 0);
    if (rc != SQLITE_OK) {
      storeErr(pzErr, sqlite3_mprintf("cannot begin a write on store %s: %s", p->zPath,
                                      sqlite3_errmsg(pConn->db)));
      /* The waiting ones must not wait for a write that never ran. */
      storeGroupCommit(p, NULL, NULL);
      goto cleanup;
    }
    p->bSavepoint = 1;
    pthread_mutex_lock(&p->mutex);
    *ppSchema = p->pSchema;
    schemaRef(p->pSchema);
    pthread_mutex_unlock(&p->mutex);
    *ppConn = pConn;
    return SQLITE_OK;
  }
  /* The interrupt is looked at when each write ends (GROUP COMMIT), not
  ** by a commit hook on whichever thread COMMITs. */
  sqlite3_commit_hook(pConn->db, NULL, NULL);
  p->nNoteDatoms = 0;
  p->nNoteInserted = 0;
  /* A write whose ROLLBACK itself ran out of memory (a schema change had
  ** expired the prepared one) is still open: end it now, never build on it. */
  storeConnRollback(pConn);
  /* The wait for another process's lock gets what the mutex left. */
  rc = storeBeginImmediate((StoreConnImpl *)pConn, msLeft);
  if (rc != SQLITE_OK) {
    storeErr(pzErr, rc == SQLITE_INTERRUPT ? sqlite3_mprintf("interrupted")
                    : sqlite3_mprintf("cannot begin a write on store %s: %s",
                                      p->bMemory ? "(in memory)" : p->zPath, sqlite3_errmsg(pConn->db)));
    goto cleanup;
  }
  rc = storeRevalidate(p, pConn, 1, NULL, pzErr);
  if (rc != SQLITE_OK) {
    storeConnRollback(pConn);
    goto cleanup;
  }
  pthread_mutex_lock(&p->mutex);
  *ppSchema = p->pSchema;
  schemaRef(p->pSchema);
  pthread_mutex_unlock(&p->mutex);
  *ppConn = pConn;

cleanup:
  if (rc != SQLITE_OK) pthread_mutex_unlock(&p->writeMutex);
  return rc;
}


int storeWriteBeginLazy(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  if (p->pHost) return storeHostWriteBegin(p, 1, ppConn, ppSchema, pzErr);
  return storeWriteBegin(p, ppConn, ppSchema, pzErr);
}

int storeWriteUndoPoint(StoreConn *pConn, int bRisky, char **pzErr) {
  /* A file store's write is its own transaction (or group savepoint). */
  if (!pConn->bHost) return SQLITE_OK;
  return storeHostUndoPoint(pConn->pStore, bRisky, pzErr);
}

void storeWriteNoteDatoms(Store *p, sqlite3_int64 iMaxRowid, int nInserted) {
  if (iMaxRowid > p->nNoteDatoms) p->nNoteDatoms = iMaxRowid;
  p->nNoteInserted += nInserted;
}

int storeWriteEnd(Store *p, StoreConn *pConn, int bCommit, Schema *pNewSchema, char **pzErr) {
  int rc = SQLITE_OK, bDefer;

  if (pConn == NULL) return SQLITE_OK;    /* storeWriteBegin failed */
  if (p->pHost) return storeHostWriteEnd(p, pConn, bCommit, pNewSchema, pzErr);
  if (bCommit && storeCallerInterrupted()) {
    /* The caller was interrupted: its transaction goes, as a commit hook
    ** would have made it go. */
    bCommit = 0;
    rc = SQLITE_INTERRUPT;
    storeErr(pzErr, sqlite3_mprintf("interrupted"));
  }
  if (p->bSavepoint) {
    p->bSavepoint = 0;
    if (bCommit && storeGroupStep((StoreConnImpl *)pConn, 1) != SQLITE_OK) {
      bCommit = 0;
      rc = sqlite3_errcode(pConn->db);
      storeErr(pzErr, sqlite3_mprintf("cannot commit to store %s: %s", p->zPath,
                                      sqlite3_errmsg(pConn->db)));
      if (rc == SQLITE_OK) rc = SQLITE_ERROR;
    }
    if (!bCommit && storeGroupStep((StoreConnImpl *)pConn, 2) == SQLITE_OK) {
      storeGroupStep((StoreConnImpl *)pConn, 1);
    }
    if (sqlite3_get_autocommit(pConn->db)) {
      /* The whole SQLite transaction is gone, the group with it. */
      storeConnQuiesce(pConn);
      storeGroupWake(p, SQLITE_ABORT, "the store's write transaction ended unexpectedly;"
                                      " nothing was written");
      p->nNoteDatoms = 0;
      p->nNoteInserted = 0;
      pthread_mutex_unlock(&p->writeMutex);
      if (bCommit) {
        storeErr(pzErr, sqlite3_mprintf("the store's write transaction ended unexpectedly;"
                                        " nothing was written"));
        return SQLITE_ABORT;
      }
      return rc;
    }
    if (bCommit) p->nGroup++;
  } else if (bCommit) {
    p->bGroupOpen = 1;
    p->nGroup = 1;
  } else {
    /* The first write of a group, failed: nothing else is in the
    ** transaction. */
    storeConnQuiesce(pConn);
    p->nNoteDatoms = 0;
    p->nNoteInserted = 0;
    pthread_mutex_unlock(&p->writeMutex);
    return rc;
  }
  bDefer = p->bGroupCommit && configGroupCommit() && pNewSchema == NULL
           && p->nGroup < STORE_GROUP_MAX && p->nNoteInserted < STORE_GROUP_MAX_DATOMS
           && __atomic_load_n(&p->nWriteWaiting, __ATOMIC_RELAXED) > 0;
  if (bDefer && bCommit) {
    StoreGroupWait w;
    memset(&w, 0, sizeof w);
    w.pNext = p->pGroupWait;
    p->pGroupWait = &w;
    pthread_mutex_unlock(&p->writeMutex);
    storeGroupAwait(p, &w);
    if (w.rc != SQLITE_OK) storeErr(pzErr, w.zErr);
    else sqlite3_free(w.zErr);
    return w.rc;
  }
  if (!bDefer) {
    int rcCommit = storeGroupCommit(p, pNewSchema, bCommit ? pzErr : NULL);
    if (bCommit) rc = rcCommit;
  }
  /* else a failed write whose group the next writer takes on. */
  pthread_mutex_unlock(&p->writeMutex);
  return rc;
}
