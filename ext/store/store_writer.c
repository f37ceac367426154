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
*/
#include <time.h>
#include "config.h"
#include "store_context.h"

/* The write mutex's deadline on the monotonic clock where the C library can
** wait on it (glibc 2.30: pthread_mutex_clocklock): a step of the wall clock
** must not stretch or cut a writer's wait. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 30))
#define STORE_LOCK_CLOCK CLOCK_MONOTONIC
#define STORE_LOCK_UNTIL(m, ts) pthread_mutex_clocklock((m), CLOCK_MONOTONIC, (ts))
#else
#define STORE_LOCK_CLOCK CLOCK_REALTIME
#define STORE_LOCK_UNTIL(m, ts) pthread_mutex_timedlock((m), (ts))
#endif

void storeWriterRecheck(Store *p) {
  sqlite3 *db;
  if (p->bMemory || pthread_mutex_trylock(&p->writeMutex) != 0) return;
  if (p->pWriter == NULL) {         /* storeReleaseFds could not reopen it */
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

/* Takes the write mutex within msTimeout ms. SQLITE_OK, or SQLITE_BUSY
** with *pzErr naming the store and how many writers of this process were
** waiting: an unfair mutex under many writers let some wait seconds while
** others went round (bench/overload.py: 64 writers, max 3.9 s). *pmsLeft
** gets what is left of the timeout for BEGIN IMMEDIATE. */
static int storeWriteLock(Store *p, int msTimeout, int *pmsLeft, char **pzErr) {
  struct timespec ts;
  sqlite3_int64 t0;
  int nWaiting, e;

  *pmsLeft = msTimeout;
  if (pthread_mutex_trylock(&p->writeMutex) == 0) return SQLITE_OK;
  t0 = configNowMs();
  __atomic_add_fetch(&p->nWriteWaiting, 1, __ATOMIC_RELAXED);
  clock_gettime(STORE_LOCK_CLOCK, &ts);
  ts.tv_sec += msTimeout / 1000;
  ts.tv_nsec += (long)(msTimeout % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  e = STORE_LOCK_UNTIL(&p->writeMutex, &ts);
  nWaiting = __atomic_fetch_sub(&p->nWriteWaiting, 1, __ATOMIC_RELAXED);
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

int storeWriteBegin(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  StoreConn *pConn;
  int msTimeout = configBusyTimeoutMs(), msLeft;
  int rc;

  if (p->pHost) return storeHostWriteBegin(p, ppConn, ppSchema, pzErr);
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
  p->nNoteDatoms = 0;
  p->nNoteInserted = 0;
  /* A write whose ROLLBACK itself ran out of memory (a schema change had
  ** expired the prepared one) is still open: end it now, never build on it. */
  storeConnRollback(pConn);
  /* The wait for another process's lock gets what the mutex left. */
  if (msLeft != msTimeout) sqlite3_busy_timeout(pConn->db, msLeft);
  rc = sqlite3_exec(pConn->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (msLeft != msTimeout) sqlite3_busy_timeout(pConn->db, msTimeout);
  if (rc != SQLITE_OK) {
    storeErr(pzErr, sqlite3_mprintf("cannot begin a write on store %s: %s",
                                    p->bMemory ? "(in memory)" : p->zPath,
                                    sqlite3_errmsg(pConn->db)));
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


void storeWriteNoteDatoms(Store *p, sqlite3_int64 iMaxRowid, int nInserted) {
  if (iMaxRowid > p->nNoteDatoms) p->nNoteDatoms = iMaxRowid;
  p->nNoteInserted += nInserted;
}

int storeWriteEnd(Store *p, StoreConn *pConn, int bCommit, Schema *pNewSchema, char **pzErr) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  StoreSig sig;
  int rc = SQLITE_OK;

  if (pConn == NULL) return SQLITE_OK;    /* storeWriteBegin failed */
  if (p->pHost) return storeHostWriteEnd(p, pConn, bCommit, pNewSchema, pzErr);
  if (bCommit) {
    /* The state being committed, read inside the transaction: the new
    ** schema belongs to it, or (no schema change) the published one does,
    ** as storeWriteBegin made it current under the write lock. */
    rc = storeReadSig(pImpl, &sig);
    if (rc == SQLITE_OK) rc = sqlite3_exec(pConn->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      storeErr(pzErr, sqlite3_mprintf("cannot commit to store %s: %s",
                                      p->bMemory ? "(in memory)" : p->zPath,
                                      sqlite3_errmsg(pConn->db)));
    }
  }
  storeConnQuiesce(pConn);
  if (bCommit && rc == SQLITE_OK) {
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
  pthread_mutex_unlock(&p->writeMutex);
  return rc;
}
