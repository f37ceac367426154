/*
** store_conn.c — one connection of a store: opened with the statements
** the store keeps prepared on it, closed with the caches the layers above
** hung on it, and brought back to no open transaction.
**
** Takes in a Store (its path); gives out StoreConnImpl (store_context.h);
** calls the file opener (store_file.c) and SQLite. Connections are
** NOMUTEX: a connection is used by one caller at a time (checked out).
*/
#include <errno.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <string.h>
#include "store_context.h"

void storeConnClose(StoreConn *pConn) {
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
  for (size_t i = 0; i < sizeof p->apGroup / sizeof p->apGroup[0]; i++) sqlite3_finalize(p->apGroup[i]);
  /* close_v2: anything the upper layers failed to finalize cannot keep the
  ** file open forever or crash us; it is released with them. */
  sqlite3_close_v2(p->base.db);
  sqlite3_free(p);
}

int storeConnOpen(Store *pStore, int bValidate, StoreConn **ppConn, char **pzErr) {
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
    rc = sqlite3_prepare_v3(db, storeSigSql, -1, SQLITE_PREPARE_PERSISTENT, &p->pSig, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v3(db, storeSchemaFingerprintSql(), -1, SQLITE_PREPARE_PERSISTENT,
                            &p->pFingerprint, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v3(db, storeLogScanSql, -1, SQLITE_PREPARE_PERSISTENT, &p->pLogScan, NULL);
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
    storeErr(pzErr, storeOpenErrMsg(pStore->zPath, db));
    storeConnClose(&p->base);
    return rc;
  }
  *ppConn = &p->base;
  return SQLITE_OK;
}

/* Why the OS refused zPath or its folder, or NULL: SQLite's errno when it
** kept one, else a look at the file system (SQLite falls back to a
** read-only open without saying why). */
static const char *storeOpenCause(const char *zPath, sqlite3 *db) {
  int iErrno = sqlite3_system_errno(db), eCode = sqlite3_errcode(db) & 0xff;
  struct statvfs sv;
  char zDir[4096];
  const char *zSlash = strrchr(zPath, '/');
  if (iErrno == EROFS) return "read-only file system";
  if (iErrno == EACCES || iErrno == EPERM) return "permission denied";
  if (eCode != SQLITE_CANTOPEN && eCode != SQLITE_READONLY && eCode != SQLITE_IOERR) return NULL;
  snprintf(zDir, sizeof zDir, "%.*s", zSlash ? (int)(zSlash - zPath) + 1 : 1, zSlash ? zPath : ".");
  if (statvfs(zDir, &sv) == 0 && (sv.f_flag & ST_RDONLY)) return "read-only file system";
  if (access(zPath, F_OK) == 0 && access(zPath, R_OK | W_OK) != 0) return "permission denied on the file";
  if (access(zDir, W_OK | X_OK) != 0) return "permission denied on its directory (the -wal and -shm go there)";
  return NULL;
}

char *storeOpenErrMsg(const char *zPath, sqlite3 *db) {
  const char *zCause = db ? storeOpenCause(zPath, db) : NULL;
  if (zCause) {
    return sqlite3_mprintf("cannot open store %s: %s (%s)", zPath, sqlite3_errmsg(db), zCause);
  }
  return sqlite3_mprintf("cannot open store %s: %s", zPath, db ? sqlite3_errmsg(db) : "error");
}

int storeConnOpenWriter(Store *p, char **pzErr) {
  StoreConn *pWriter = NULL;
  int rc = storeConnOpen(p, 1, &pWriter, pzErr);
  if (rc == SQLITE_OK) p->pWriter = pWriter;
  return rc;
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
