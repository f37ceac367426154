/*
** store_write.c — the writer side of a cached store: BEGIN IMMEDIATE under
** the store's write mutex, commit and publication of a new schema, the
** post-commit WAL policy (SPEC §3) and managed-index tuning (store_index.c).
*/
#include <string.h>
#include <sys/stat.h>
#include "store_int.h"

/* Runs storeTune on the writer (write mutex held, or the Store not yet
** shared). When it changed the managed indexes, the schema is reloaded and
** published even though its fingerprint is unchanged: the new snapshot's
** Attr.bValueIndex lets compiled queries use the new indexes, and its new
** generation retires the plans cached without them. Errors are dropped:
** tuning is retried after a later commit. */
void storeTuneWriter(Store *p, int bCheckIndexes) {
  StoreConnImpl *pW = (StoreConnImpl *)p->pWriter;
  sqlite3 *db = pW->base.db;
  Schema *pCur, *pNew = NULL, *pOld = NULL;
  StoreSig sig;
  int bChanged = 0, rc;

  pthread_mutex_lock(&p->mutex);
  pCur = p->pSchema;
  schemaRef(pCur);
  pthread_mutex_unlock(&p->mutex);
  rc = storeTune(db, pCur, &p->nAnalyzed, bCheckIndexes, &bChanged);
  schemaUnref(pCur);
  if (rc != SQLITE_OK || !bChanged) return;
  if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) return;
  rc = storeReadSig(pW, &sig);
  if (rc == SQLITE_OK) rc = schemaLoad(db, &pNew, NULL);
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK) return;
  pthread_mutex_lock(&p->mutex);
  if (sig.iMark >= p->iSchemaMark) {
    pOld = p->pSchema;
    p->pSchema = pNew;
    p->iSchemaMark = sig.iMark;
    storeSetKnown(p, &sig);
    pNew = NULL;
  }
  pthread_mutex_unlock(&p->mutex);
  schemaUnref(pOld);
  schemaUnref(pNew);
}

int storeWriteBegin(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  StoreConn *pConn = p->pWriter;
  int rc;

  *ppConn = NULL;
  *ppSchema = NULL;
  pthread_mutex_lock(&p->writeMutex);
  rc = sqlite3_exec(pConn->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    storeErr(pzErr, sqlite3_mprintf("cannot begin a write on store %s: %s",
                                    p->bMemory ? "(in memory)" : p->zPath,
                                    sqlite3_errmsg(pConn->db)));
    goto cleanup;
  }
  rc = storeRevalidate(p, pConn, 1, pzErr);
  if (rc != SQLITE_OK) {
    sqlite3_exec(pConn->db, "ROLLBACK", NULL, NULL, NULL);
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

/* After a commit: once the WAL passes the threshold, try to restart it so
** continuous readers cannot grow it without bound (SPEC §3, B25). Busy is
** fine: the next commit tries again. */
static void storeMaybeRestartWal(Store *p, sqlite3 *db) {
  struct stat st;
  sqlite3_int64 nLimit = storeCache()->nWalRestart;
  if (p->bMemory || p->zWalPath == NULL) return;
  if (stat(p->zWalPath, &st) != 0 || (sqlite3_int64)st.st_size <= nLimit) return;
  sqlite3_busy_timeout(db, STORE_CHECKPOINT_BUSY_MS);
  sqlite3_exec(db, "PRAGMA wal_checkpoint(RESTART)", NULL, NULL, NULL);
  sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
}

int storeWriteEnd(Store *p, StoreConn *pConn, int bCommit, Schema *pNewSchema, char **pzErr) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  StoreSig sig;
  int rc = SQLITE_OK;

  if (pConn == NULL) return SQLITE_OK;    /* storeWriteBegin failed */
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
    storeMaybeRestartWal(p, pConn->db);
    /* Still under the write mutex: tuning writes on this connection. */
    storeTuneWriter(p, pNewSchema != NULL);
  }
  pthread_mutex_unlock(&p->writeMutex);
  return rc;
}
