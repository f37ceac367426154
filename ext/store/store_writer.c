/*
** store_write.c — the writer side of a cached store: BEGIN IMMEDIATE under
** the store's write mutex, commit and publication of a new schema, the
** post-commit WAL policy (SPEC §3) and managed-index tuning (store_index.c).
**
** HOW THE WAL POLICY WORKS
** SQLite's automatic checkpoint runs inside COMMIT on the committing
** connection: with the format's wal_autocheckpoint=32 (pages) nearly every
** small commit paid a checkpoint and its fsyncs. The writer therefore turns
** it off (a WAL hook of its own replaces SQLite's and records the WAL's
** frame count after each commit), and storeWriteEnd decides after the
** commit, in this order:
**  - WAL past STORE_HOLD_BYTES (4 MiB) and an in-process host cursor keeps
**    a snapshot (StoreHold, B25): the holds are asked to let go, then a
**    RESTART checkpoint, so an open cursor cannot grow the WAL;
**  - WAL past half of MENTAT_WAL_RESTART_BYTES (default 64 MiB): a RESTART
**    checkpoint that waits up to STORE_RESTART_BUSY_MS for readers of
**    older snapshots (new readers start from the checkpointed database and
**    do not hold it up), so continuous readers in other processes cannot
**    grow the WAL far past the bound (bench `mixed`: max 44 MiB). Starting at
**    half leaves room for the commits made while readers are waited for.
**    One that times out is retried only after 4 MiB more, so a reader that
**    never lets go costs one wait per 4 MiB, not one per commit;
**  - MENTAT_WAL_CHECKPOINT_BYTES (default 6 MiB) of frames
**    not yet checkpointed, and at least two commits' worth: a PASSIVE
**    checkpoint (never waits). Pages rewritten by many commits (the log's
**    and the indexes' tails, known_parts) are copied once per interval,
**    and the checkpoint's two fsyncs are paid once per interval. When it
**    copied everything, the next write starts the WAL again from its
**    beginning (SQLite does so when no reader uses the old frames).
** The writer's journal_size_limit is one interval (never above half the
** restart bound, never below the format's 3 MiB): the WAL file is reused
** from its start instead of being cut and extended again. The interval is
** 6 MiB, not more, because B25 wants the WAL "a few MiB" with a cursor
** open (16 MiB measured the same tx/s within noise on bench s).
** Nothing here fails the caller: its transaction is committed; a busy
** checkpoint is retried after a later commit.
**
** TUNING AFTER BULK WRITES
** storeTune (store_index.c) builds the managed indexes once a store passes
** its threshold, and re-analyzes when the datoms double. Built during a bulk
** load, every later insert also goes into each of them at a random place:
** the bench s load took 26.6 s with them and 17.6 s without, and building
** the 10 afterwards took 1.8 s (CREATE INDEX sorts once). So a commit that
** inserted STORE_TUNE_DEFER_DATOMS datoms or more does not tune; it marks
** the tune pending, and the next small commit, or the next read in this
** process (storeReader -> storeTunePending, unless a write is in progress),
** runs it before its query is compiled, so the query sees the indexes. The
** first read after a bulk load therefore pays the build (seconds at bench
** m). Another process opening the store tunes it at open, as before.
*/
#include <string.h>
#include <stdlib.h>
#include "config.h"
#include "store_context.h"
#include "store_write.h"

/* A commit inserting at least this many datoms is a bulk write: it defers
** the tune (TUNING AFTER BULK WRITES). */
#define STORE_TUNE_DEFER_DATOMS 1000

/* Host cursors are asked to release their snapshots past this WAL size. */
#define STORE_HOLD_BYTES (4LL * 1024 * 1024)
/* The format's journal_size_limit (every connection). */
#define STORE_JOURNAL_SIZE_LIMIT (3LL * 1024 * 1024)
/* How long the RESTART checkpoint waits for readers of old snapshots. */
#define STORE_RESTART_BUSY_MS 400

static void storeWalPolicyInit(Store *p, sqlite3 *db);

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

int storeWriteBegin(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  StoreConn *pConn;
  int rc;

  *ppConn = NULL;
  *ppSchema = NULL;
  pthread_mutex_lock(&p->writeMutex);
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
  rc = sqlite3_exec(pConn->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
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

/* The writer's WAL hook: SQLite calls it after each commit on the writer
** with the number of frames in the WAL. Replacing SQLite's own hook turns
** the automatic checkpoint off (see HOW THE WAL POLICY WORKS). */
static int storeWalHook(void *pArg, sqlite3 *db, const char *zDb, int nFrame) {
  Store *p = (Store *)pArg;
  (void)db;
  (void)zDb;
  p->nWalLastTx = nFrame >= p->nWalFrames ? nFrame - p->nWalFrames : nFrame;
  p->nWalFrames = nFrame;
  if (nFrame < p->nWalCkpt) p->nWalCkpt = 0;   /* the WAL started again */
  return SQLITE_OK;
}

/* Once per store, before its first write: the writer's WAL hook and frame
** size. Write mutex held. */
static void storeWalPolicyInit(Store *p, sqlite3 *db) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 nKeep, nCkpt, nHalf;
  int szPage = 4096;
  if (p->bWalPolicy) return;
  p->bWalPolicy = 1;
  if (p->bMemory) return;
  nCkpt = configWalCheckpointBytes();
  nHalf = configWalRestartBytes() / 2;
  if (sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &pStmt, NULL) == SQLITE_OK
      && sqlite3_step(pStmt) == SQLITE_ROW) {
    szPage = sqlite3_column_int(pStmt, 0);
  }
  sqlite3_finalize(pStmt);
  p->szFrame = (szPage > 0 ? szPage : 4096) + 24;
  sqlite3_wal_hook(db, storeWalHook, p);
  nKeep = nCkpt < nHalf ? nCkpt : nHalf;
  if (nKeep > STORE_JOURNAL_SIZE_LIMIT) {
    /* After each new start the WAL is written again from its beginning;
    ** trimming the file below one checkpoint interval only makes the next
    ** commits extend it again (block allocation, and at FULL an fdatasync
    ** that must also write the inode). */
    char zSql[64];
    sqlite3_snprintf(sizeof zSql, zSql, "PRAGMA journal_size_limit=%lld", nKeep);
    sqlite3_exec(db, zSql, NULL, NULL, NULL);
  }
}

/* One checkpoint of mode eMode on the writer; *pbDone when it copied every
** frame (and, for RESTART, made sure the next write starts the WAL again). */
static int storeCheckpoint(Store *p, sqlite3 *db, int eMode, int *pbDone) {
  int nLog = 0, nCkpt = 0, rc;
  if (eMode != SQLITE_CHECKPOINT_PASSIVE) sqlite3_busy_timeout(db, STORE_RESTART_BUSY_MS);
  rc = sqlite3_wal_checkpoint_v2(db, NULL, eMode, &nLog, &nCkpt);
  if (eMode != SQLITE_CHECKPOINT_PASSIVE) sqlite3_busy_timeout(db, configBusyTimeoutMs());
  if (nCkpt > 0) p->nWalCkpt = nCkpt;
  *pbDone = rc == SQLITE_OK && nLog >= 0 && nCkpt >= nLog;
  return rc;
}

/* Does an in-process host cursor hold a snapshot (B25)? */
static int storeHasHolds(Store *p) {
  int bHas;
  pthread_mutex_lock(&p->holdMutex);
  bHas = p->pHolds != NULL;
  pthread_mutex_unlock(&p->holdMutex);
  return bHas;
}

/* After a commit (write mutex held): the WAL policy of the header comment.
** A RESTART that timed out is not retried before the WAL grew by another
** STORE_HOLD_BYTES, so a reader that never lets go (another process's open
** transaction) costs the writer one wait per that many bytes, not one per
** commit. */
static void storeWalAfterCommit(Store *p, sqlite3 *db) {
  sqlite3_int64 nBytes, nNew, nRestart = configWalRestartBytes() / 2;
  int eMode, bDone = 0;
  if (p->bMemory || p->szFrame == 0) return;
  nBytes = p->nWalFrames * p->szFrame;
  nNew = (p->nWalFrames - p->nWalCkpt) * p->szFrame;
  /* Below the size the timed-out RESTART saw: the WAL started again (the
  ** retry mark itself is always above the size: comparing with it cleared
  ** the mark at the very next commit, and every commit waited). */
  if (nBytes < p->nWalRetryFrom) p->nWalRetryBytes = p->nWalRetryFrom = 0;
  if (nBytes >= STORE_HOLD_BYTES && storeHasHolds(p)) {
    /* Host cursors pin the WAL for as long as they stay open: let them go
    ** before they cost a restart (B25). One that kept its snapshot (too
    ** much left to set aside) would only make a RESTART wait in vain. */
    int bAll = 0;
    storeHoldsRelease(p, &bAll);
    eMode = bAll ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_PASSIVE;
  } else if (nBytes >= nRestart && nBytes >= p->nWalRetryBytes) {
    eMode = SQLITE_CHECKPOINT_RESTART;
  } else if (nNew >= configWalCheckpointBytes() && nNew >= 2 * p->nWalLastTx * p->szFrame) {
    /* Big commits (bulk loads) checkpoint every second commit or so: the
    ** pages they share (index tails) are copied once per two. */
    eMode = SQLITE_CHECKPOINT_PASSIVE;
  } else {
    return;
  }
  storeCheckpoint(p, db, eMode, &bDone);
  if (!bDone && eMode == SQLITE_CHECKPOINT_RESTART && nBytes >= STORE_HOLD_BYTES) {
    int bAll = 0;
    if (storeHoldsRelease(p, &bAll) > 0 && bAll) {
      /* A cursor opened since the look above. */
      storeCheckpoint(p, db, SQLITE_CHECKPOINT_RESTART, &bDone);
    }
  }
  if (!bDone && eMode == SQLITE_CHECKPOINT_RESTART) {
    p->nWalRetryFrom = nBytes;
    p->nWalRetryBytes = nBytes + STORE_HOLD_BYTES;
  }
}

void storeWriteNoteDatoms(Store *p, sqlite3_int64 iMaxRowid, int nInserted) {
  if (iMaxRowid > p->nNoteDatoms) p->nNoteDatoms = iMaxRowid;
  p->nNoteInserted += nInserted;
}

/* Runs the tune a bulk commit deferred, if any (write mutex held). The flag
** is cleared first: a tune that fails (another process writing) is not
** retried by every read; the next commit that grows the store retries it
** (storeWantsTune). */
static void storeRunPendingTune(Store *p) {
  if (!p->bTunePending || p->pWriter == NULL) return;
  __atomic_store_n(&p->bTunePending, 0, __ATOMIC_RELEASE);
  storeTuneWriter(p, 1);
}

void storeTunePending(Store *p) {
  if (pthread_mutex_trylock(&p->writeMutex) != 0) return;
  storeRunPendingTune(p);
  pthread_mutex_unlock(&p->writeMutex);
}

/* Should this commit retune? Only when it changed the schema, or inserted
** datoms taking the store past the tuning threshold or to twice the size
** of the last analysis: storeTune itself starts with a query of its own,
** a read transaction per commit that one-datom writes could not afford. */
static int storeWantsTune(Store *p, int bSchema) {
  sqlite3_int64 n = p->nNoteDatoms;
  if (bSchema) return 1;
  if (n == 0 || n < configTuneMinDatoms()) return 0;
  return p->nAnalyzed < 0 || n >= 2 * p->nAnalyzed;
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
    storeWalAfterCommit(p, pConn->db);
    /* Still under the write mutex: tuning writes on this connection. */
    if (pNewSchema == NULL && p->nNoteInserted >= STORE_TUNE_DEFER_DATOMS) {
      if (storeWantsTune(p, 0)) __atomic_store_n(&p->bTunePending, 1, __ATOMIC_RELEASE);
    } else if (p->bTunePending) {
      storeRunPendingTune(p);
    } else if (storeWantsTune(p, pNewSchema != NULL)) {
      storeTuneWriter(p, pNewSchema != NULL);
    }
  }
  p->nNoteDatoms = 0;
  p->nNoteInserted = 0;
  pthread_mutex_unlock(&p->writeMutex);
  return rc;
}
