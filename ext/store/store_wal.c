/*
** store_wal.c — the writer's WAL policy: when, after a commit, to
** checkpoint, and how far to let the WAL grow (SPEC.md §3).
**
** Takes in the writer connection after each COMMIT (write mutex held);
** gives out checkpoints; calls the holds (store_hold.c) and SQLite.
**
** HOW IT WORKS
** SQLite's automatic checkpoint runs inside COMMIT on the committing
** connection: with the format's wal_autocheckpoint=32 (pages) nearly every
** small commit would pay a checkpoint and its fsyncs. The writer therefore
** turns it off (a WAL hook of its own replaces SQLite's and records the
** WAL's frame count after each commit), and storeWalAfterCommit decides
** after the commit, in this order:
**  - WAL past storeWalHoldBytes() (4 MiB, or a quarter of a smaller
**    configWalRestartBytes()) and an in-process host cursor keeps
**    a snapshot (StoreHold): the holds are asked to let go, then a RESTART
**    checkpoint, so an open cursor cannot grow the WAL;
**  - WAL past half of configWalRestartBytes() (default 64 MiB): a RESTART
**    checkpoint that waits up to STORE_RESTART_BUSY_MS for readers of
**    older snapshots (new readers start from the checkpointed database and
**    do not hold it up), so continuous readers in other processes cannot
**    grow the WAL far past the bound. Starting at half leaves room for the
**    commits made while readers are waited for. One that times out is
**    retried only after STORE_HOLD_BYTES more, so a reader that never lets
**    go costs one wait per 4 MiB, not one per commit;
**  - configWalCheckpointBytes() (default 6 MiB) of frames not yet
**    checkpointed, and at least two commits' worth: a PASSIVE checkpoint
**    (never waits). Pages rewritten by many commits (the log's and the
**    indexes' tails, known_parts) are copied once per interval, and the
**    checkpoint's two fsyncs are paid once per interval. When it copied
**    everything, the next write starts the WAL again from its beginning
**    (SQLite does so when no reader uses the old frames).
** The writer's journal_size_limit is one interval (never above half the
** restart bound, never below the format's 3 MiB): the WAL file is reused
** from its start instead of being cut and extended again. The interval is
** small so that a WAL with a host cursor open stays a few MiB. After a bulk
** commit the limit is lifted until the next small commit: bulk commits
** fill the WAL to the restart bound between checkpoints, and cutting the
** file back at each new start made the next commits free and allocate
** those blocks again (truncate_inode_pages and ext4's block allocation, a
** visible share of a bulk load's CPU: bench/findings.md). The file then stays at
** most one commit past the restart bound, as the WAL itself does.
** Nothing here fails the caller: its transaction is committed; a busy
** checkpoint is retried after a later commit.
*/
#include "config.h"
#include "store_context.h"

/* Host cursors are asked to release their snapshots past this WAL size. */
#define STORE_HOLD_BYTES (4LL * 1024 * 1024)

/* STORE_HOLD_BYTES, or a quarter of a WAL bound under 16 MiB: asked first
** at 4 MiB, the holds of a store bound at 2 MiB (MENTAT_WAL_RESTART_BYTES)
** never let go, and the WAL grew past the bound (issue 19); a quarter
** leaves the release half the bound to work in before it gives rests up
** (storeHoldsRelease's bDrop). */
static sqlite3_int64 storeWalHoldBytes(void) {
  sqlite3_int64 n = configWalRestartBytes() / 4;
  return n < STORE_HOLD_BYTES ? n : STORE_HOLD_BYTES;
}
/* The format's journal_size_limit (every connection). */
#define STORE_JOURNAL_SIZE_LIMIT (3LL * 1024 * 1024)
/* A commit that added this many WAL bytes is a bulk one (storeWalAfterCommit). */
#define STORE_BULK_TX_BYTES (1LL * 1024 * 1024)
/* How long the RESTART checkpoint waits for readers of old snapshots. */
#define STORE_RESTART_BUSY_MS 400

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
void storeWalPolicyInit(Store *p, sqlite3 *db) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 nKeep, nCkpt, nHalf;
  int szPage = 4096;
  if (p->bWalPolicy) return;
  p->bWalPolicy = 1;
  p->bGroupCommit = 0;
  if (p->bMemory) return;
  /* Only a commit that waits for the disk is worth sharing
  ** (store_writer.c, GROUP COMMIT). */
  if (sqlite3_prepare_v2(db, "PRAGMA synchronous", -1, &pStmt, NULL) == SQLITE_OK
      && sqlite3_step(pStmt) == SQLITE_ROW) {
    p->bGroupCommit = sqlite3_column_int(pStmt, 0) >= 2;
  }
  sqlite3_finalize(pStmt);
  pStmt = NULL;
  /* A write that joins a group runs in a SAVEPOINT, whose journal of the
  ** pages it changes would otherwise go to a temp file past 64 KiB: ~20
  ** pwrites and a file made and unlinked per group for one-datom writes.
  ** The writer keeps no temp tables, so memory holds only that journal
  ** (bounded by STORE_GROUP_MAX_DATOMS-sized groups, and one bulk write). */
  if (p->bGroupCommit) sqlite3_exec(db, "PRAGMA temp_store=MEMORY", NULL, NULL, NULL);
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
  p->nWalKeep = nKeep > STORE_JOURNAL_SIZE_LIMIT ? nKeep : STORE_JOURNAL_SIZE_LIMIT;
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
  StoreBusyWait w;
  /* A RESTART first takes the write lock, which the other processes'
  ** writers take back between their commits, then waits for the readers
  ** of old frames: short polls, or it times out while the WAL grows. */
  if (eMode != SQLITE_CHECKPOINT_PASSIVE) storeBusyWaitSet(db, &w, STORE_RESTART_BUSY_MS);
  rc = sqlite3_wal_checkpoint_v2(db, NULL, eMode, &nLog, &nCkpt);
  if (eMode != SQLITE_CHECKPOINT_PASSIVE) sqlite3_busy_timeout(db, configBusyTimeoutMs());
  if (nCkpt > 0) p->nWalCkpt = nCkpt;
  *pbDone = rc == SQLITE_OK && nLog >= 0 && nCkpt >= nLog;
  return rc;
}

/* The writer's journal_size_limit: none after a bulk commit (bBulk),
** p->nWalKeep again at the first small commit after bulk ones, which then
** cuts the file the lifted limit left long: a TRUNCATE checkpoint (the
** WAL then holds at most the bulk commits not yet checkpointed and this
** one; the PASSIVE checkpoint due at this commit would copy them anyway).
** Like the RESTART after bulk commits, it waits up to STORE_RESTART_BUSY_MS
** for readers of the WAL, once per run of bulk commits. Returns 1 when that
** checkpoint emptied the WAL (nothing more to do). */
static int storeWalKeep(Store *p, sqlite3 *db, int bBulk) {
  char zSql[64];
  int bDone = 0;
  if (bBulk == p->bWalKeepAll) return 0;
  sqlite3_snprintf(sizeof zSql, zSql, "PRAGMA journal_size_limit=%lld", bBulk ? -1LL : p->nWalKeep);
  if (sqlite3_exec(db, zSql, NULL, NULL, NULL) != SQLITE_OK) return 0;
  p->bWalKeepAll = bBulk;
  if (bBulk || storeHoldsAny(p)) return 0;
  storeCheckpoint(p, db, SQLITE_CHECKPOINT_TRUNCATE, &bDone);
  return bDone;
}

/* After a commit (write mutex held): the WAL policy of the header comment.
** A RESTART that timed out is not retried before the WAL grew by another
** STORE_HOLD_BYTES, so a reader that never lets go (another process's open
** transaction) costs the writer one wait per that many bytes, not one per
** commit. */
void storeWalAfterCommit(Store *p, sqlite3 *db) {
  sqlite3_int64 nBytes, nNew, nRestart = configWalRestartBytes() / 2;
  sqlite3_int64 nLast = p->nWalLastTx * p->szFrame;
  int eMode, bDone = 0;
  if (p->bMemory || p->szFrame == 0) return;
  nBytes = p->nWalFrames * p->szFrame;
  nNew = (p->nWalFrames - p->nWalCkpt) * p->szFrame;
  if (storeWalKeep(p, db, nLast >= STORE_BULK_TX_BYTES)) return;
  /* Below the size the timed-out RESTART saw: the WAL started again (the
  ** retry mark itself is always above the size: comparing with it cleared
  ** the mark at the very next commit, and every commit waited). */
  if (nBytes < p->nWalRetryFrom) p->nWalRetryBytes = p->nWalRetryFrom = 0;
  if (nBytes >= storeWalHoldBytes() && storeHoldsAny(p)) {
    /* Host cursors pin the WAL for as long as they stay open: let them go
    ** before they cost a restart (B25). One that kept its snapshot (too
    ** much left to set aside) would only make a RESTART wait in vain. */
    int bAll = 0;
    storeHoldsRelease(p, &bAll);
    eMode = bAll ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_PASSIVE;
  } else if (nLast >= STORE_BULK_TX_BYTES ? nBytes + nLast > configWalRestartBytes()
                                             && nBytes >= p->nWalRetryBytes
                                           : nBytes >= nRestart && nBytes >= p->nWalRetryBytes) {
    /* After a bulk commit, the WAL is let grow as long as one more such
    ** commit stays under the bound: the index pages consecutive bulk
    ** commits all rewrite (each value's tail in the value indexes, a large
    ** part of every bulk commit) are copied back once per four commits
    ** instead of once per two (bench/findings.md). */
    eMode = SQLITE_CHECKPOINT_RESTART;
  } else if (nLast < STORE_BULK_TX_BYTES && nNew >= configWalCheckpointBytes()
             && nNew >= 2 * nLast) {
    eMode = SQLITE_CHECKPOINT_PASSIVE;
  } else {
    return;
  }
  storeCheckpoint(p, db, eMode, &bDone);
  if (!bDone && eMode == SQLITE_CHECKPOINT_RESTART && nBytes >= storeWalHoldBytes()) {
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
