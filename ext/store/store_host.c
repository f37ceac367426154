/*
** store_host.c — host stores (SPEC.md §3a, store_host.h): the store's tables
** inside a database of the calling connection, every read and write on
** that connection.
**
** Takes in a host connection and a database name; gives out a Store whose
** one connection is the host's; calls the layout (store_file.c), the
** schema loader, the state signature (store_revalidate.c) and the layout
** and scan checks (store_host_layout.c) below it.
**
** HOW IT WORKS
** One Store per (host connection, database name), in a process-wide list.
** Its one StoreConn wraps the host connection (bHost: never configured,
** never closed by us); the query and tx caches hang on it as on any store
** connection, with their statements prepared on the host.
**
** Each call revalidates in three cheap steps: `PRAGMA S.schema_version`
** (the layout was created, dropped by a rollback, or replaced: look
** again), `PRAGMA S.data_version` (another connection committed) and the
** state signature (StoreSig: the :db.part/tx mark and the idents/schema
** mirrors). The signature catches what data_version cannot: this
** connection's own rollback, which moves the tx mark back and may undo a
** schema change; the schema is then read again, and the compiled plans,
** keyed by the schema's generation, are not used again. Tempid counters
** are kept from one edn_t to the next only while the write witness holds
** (StoreConn.bContinues: tx_context.c's THE LAST WRITE); otherwise the
** transactor reads known_parts, so a rolled-back edn_t leaves nothing a
** later call sees.
**
** THE READ STAMP. A read whose state was last validated by a read skips
** all of that (the signature alone is six subqueries, ~24k instructions,
** as much as the rest of a point lookup) when its stamp is unchanged: the
** store database pager's data version (SQLITE_FCNTL_DATA_VERSION: moved by
** every commit, this connection's included, and by another connection's,
** seen when a read transaction begins), temp's, the database file and
** schema_version, and the read hold's re-prepare count. A stamp is taken
** and compared only inside a read transaction on the store's database with
** no write transaction open on the connection, so every state it vouches
** for is a committed one; what is not committed yet (an edn_t inside the
** host's BEGIN, the host's own writes) never has a stamp, and a rollback
** can only bring back a committed state. Every edn_t drops the stamp.
**
** A write is `SAVEPOINT mentat_edn_t` ... `RELEASE` (ROLLBACK TO + RELEASE
** on failure): in autocommit it is atomic by itself, inside the host's
** BEGIN it nests, and a failed edn_t undoes only its own work. Inside the
** host's transaction an edn_t after the last one opens it only at its
** first write, and only when a step after it can fail (THE UNDO POINT). The layout
** is created inside that savepoint by the first edn_t, each object named
** in the store's database; the statements above the store name tables
** unqualified, which SQLite resolves temp, main, then attached databases
** in order, so a database searched before the store's may not hold tables
** of the store's names (refused with a message naming it).
*/
#include <string.h>
#include <pthread.h>
#include "store_context.h"
#include "store_host.h"

static pthread_mutex_t gHostMutex = PTHREAD_MUTEX_INITIALIZER;
static Store *gpHostFirst = NULL;

int storeWriteAlive(const StoreConn *pConn) {
  if (!pConn->bInAutoStmt) return !sqlite3_get_autocommit(pConn->db);
  if (sqlite3_libversion_number() < 3034000) return 1;
  return sqlite3_txn_state(pConn->db, NULL) == SQLITE_TXN_WRITE;
}

sqlite3 *storeHostDb(const Store *p) {
  return p && p->pHost ? p->pHost->host : NULL;
}

static void hostErr(char **pzErr, char *zMsg) {
  if (pzErr == NULL) { sqlite3_free(zMsg); return; }
  sqlite3_free(*pzErr);
  *pzErr = zMsg;
}

static int hostStep(sqlite3_stmt *pStmt) {
  int rc = sqlite3_step(pStmt);
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/* ----------------------------------------------------------- lifecycle */

static void hostFree(Store *p) {
  StoreHostPart *h;
  StoreConnImpl *pImpl;
  if (p == NULL) return;
  h = p->pHost;
  pImpl = (StoreConnImpl *)p->pWriter;
  if (pImpl) {
    if (pImpl->base.xQueryCacheFree && pImpl->base.pQueryCache) {
      pImpl->base.xQueryCacheFree(pImpl->base.pQueryCache);
    }
    if (pImpl->base.xTxCacheFree && pImpl->base.pTxCache) pImpl->base.xTxCacheFree(pImpl->base.pTxCache);
    sqlite3_finalize(pImpl->pDataVersion);
    sqlite3_finalize(pImpl->pSig);
    sqlite3_finalize(pImpl->pFingerprint);
    sqlite3_free(pImpl);
  }
  if (h) {
    sqlite3_finalize(h->pSchemaVersion);
    sqlite3_finalize(h->pHold);
    sqlite3_finalize(h->apShadowSv[0]);
    sqlite3_finalize(h->apShadowSv[1]);
    sqlite3_finalize(h->pSavepoint);
    sqlite3_finalize(h->pRelease);
    sqlite3_finalize(h->pRollbackTo);
    sqlite3_finalize(h->pMark);
    for (int i = 0; i < HOST_SCAN_CACHE; i++) sqlite3_free(h->aScan[i].zSql);
    sqlite3_free(h->aRoot);
    sqlite3_free(h->zName);
    sqlite3_free(h);
  }
  schemaUnref(p->pSchema);
  pthread_mutex_destroy(&p->mutex);
  pthread_mutex_destroy(&p->writeMutex);
  pthread_mutex_destroy(&p->holdMutex);
  sqlite3_free(p->zPath);
  sqlite3_free(p);
}

/* Finds database zName on host: its seq and its name as listed. */
static int hostFindDb(sqlite3 *host, const char *zName, int *piDb, char **pzCanon, char **pzErr) {
  sqlite3_stmt *pStmt = NULL;
  int rc;
  *piDb = -1;
  *pzCanon = NULL;
  if (sqlite3_stricmp(zName, "temp") == 0) {
    *piDb = 1;
    *pzCanon = sqlite3_mprintf("temp");
    return *pzCanon ? SQLITE_OK : SQLITE_NOMEM;
  }
  rc = sqlite3_prepare_v2(host, "SELECT seq, name FROM pragma_database_list WHERE name = ?1 COLLATE NOCASE",
                          -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(pStmt, 1, zName, -1, SQLITE_STATIC);
    if (sqlite3_step(pStmt) == SQLITE_ROW) {
      *piDb = sqlite3_column_int(pStmt, 0);
      *pzCanon = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(pStmt, 1));
      if (*pzCanon == NULL) rc = SQLITE_NOMEM;
    }
    rc = rc == SQLITE_OK ? sqlite3_reset(pStmt) : rc;
  }
  sqlite3_finalize(pStmt);
  if (rc != SQLITE_OK) {
    hostErr(pzErr, sqlite3_mprintf("cannot list the host's databases: %s", sqlite3_errmsg(host)));
    return rc;
  }
  if (*piDb < 0) {
    hostErr(pzErr, sqlite3_mprintf("db_path ':%s': no database %s on this connection (':main', "
                                   "':temp' or an ATTACHed name)", zName, zName));
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

static int hostPrepare(sqlite3 *db, const char *zFmt, const char *zName, sqlite3_stmt **pp) {
  char *zSql = sqlite3_mprintf(zFmt, zName);
  int rc = zSql ? sqlite3_prepare_v3(db, zSql, -1, SQLITE_PREPARE_PERSISTENT, pp, NULL) : SQLITE_NOMEM;
  sqlite3_free(zSql);
  return rc;
}

/* A new host store for database zName of host (not yet listed). */
static int hostOpen(sqlite3 *host, const char *zName, Store **ppStore, char **pzErr) {
  Store *p = NULL;
  StoreHostPart *h = NULL;
  StoreConnImpl *pImpl = NULL;
  sqlite3_vfs *pVfs = NULL;
  int rc;

  *ppStore = NULL;
  p = sqlite3_malloc64(sizeof *p);
  h = sqlite3_malloc64(sizeof *h);
  pImpl = sqlite3_malloc64(sizeof *pImpl);
  if (p == NULL || h == NULL || pImpl == NULL) {
    sqlite3_free(p);
    sqlite3_free(h);
    sqlite3_free(pImpl);
    return SQLITE_NOMEM;
  }
  memset(p, 0, sizeof *p);
  memset(h, 0, sizeof *h);
  memset(pImpl, 0, sizeof *pImpl);
  pthread_mutex_init(&p->mutex, NULL);
  pthread_mutex_init(&p->writeMutex, NULL);
  pthread_mutex_init(&p->holdMutex, NULL);
  p->pHost = h;
  p->pWriter = &pImpl->base;
  p->nRef = 1;
  p->nAnalyzed = -1;
  h->host = host;
  h->iSchemaVersion = -1;
  pImpl->base.db = host;
  pImpl->base.pStore = p;
  pImpl->base.bHost = 1;
  pImpl->base.iDataVersion = -1;
  pImpl->base.bMarksUnchecked = 1;

  rc = hostFindDb(host, zName, &h->iDb, &h->zName, pzErr);
  if (rc != SQLITE_OK) goto cleanup;
  pImpl->base.zHostDb = h->zName;
  p->zPath = sqlite3_mprintf(":%s", h->zName);
  if (p->zPath == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  rc = hostPrepare(host, "PRAGMA \"%w\".data_version", h->zName, &pImpl->pDataVersion);
  if (rc == SQLITE_OK) rc = hostPrepare(host, "PRAGMA \"%w\".schema_version", h->zName, &h->pSchemaVersion);
  if (rc == SQLITE_OK) rc = hostPrepare(host, "PRAGMA \"%w\".schema_version", h->zName, &h->pHold);
  if (rc == SQLITE_OK) rc = hostPrepare(host, "SAVEPOINT mentat_edn_t", h->zName, &h->pSavepoint);
  if (rc == SQLITE_OK && h->iDb != 1) {
    rc = hostPrepare(host, "PRAGMA temp.schema_version", h->zName, &h->apShadowSv[0]);
  }
  if (rc == SQLITE_OK && h->iDb >= 2) {
    rc = hostPrepare(host, "PRAGMA main.schema_version", h->zName, &h->apShadowSv[1]);
  }
  if (rc == SQLITE_OK) rc = hostPrepare(host, "RELEASE mentat_edn_t", h->zName, &h->pRelease);
  if (rc == SQLITE_OK) rc = hostPrepare(host, "ROLLBACK TO mentat_edn_t", h->zName, &h->pRollbackTo);
  if (rc != SQLITE_OK) {
    hostErr(pzErr, sqlite3_mprintf("cannot use host database %s: %s", h->zName, sqlite3_errmsg(host)));
    goto cleanup;
  }
  /* dqlite replicates a write made inside a SELECT only inside an explicit
  ** transaction (smoke/dqlite/NOTES.md); its VFS is named "dqlite-N". */
  if (sqlite3_file_control(host, h->zName, SQLITE_FCNTL_VFS_POINTER, &pVfs) == SQLITE_OK && pVfs
      && pVfs->zName && strncmp(pVfs->zName, "dqlite", 6) == 0) {
    h->bDqlite = 1;
  }
  rc = storeHostCheckShadow(h, 0, pzErr);
  if (rc == SQLITE_OK) rc = storeHostShadowSeen(h, NULL);

cleanup:
  if (rc != SQLITE_OK) {
    hostFree(p);
    p = NULL;
  }
  *ppStore = p;
  return rc;
}

int storeHostAcquire(sqlite3 *host, const char *zName, int bWrite, Store **ppStore, int *pbNew,
                     char **pzErr) {
  Store *p, *pNew = NULL;
  int bOther = 0, rc;
  *ppStore = NULL;
  *pbNew = 0;
  pthread_mutex_lock(&gHostMutex);
  for (p = gpHostFirst; p; p = p->pHost->pNextHost) {
    if (p->pHost->host != host || p->pHost->bClosed) continue;
    bOther = 1;
    if (sqlite3_stricmp(p->pHost->zName, zName) == 0) break;
  }
  if (p) p->nRef++;
  pthread_mutex_unlock(&gHostMutex);
  if (p == NULL) {
    rc = hostOpen(host, zName, &pNew, pzErr);
    if (rc != SQLITE_OK) return rc;
    /* One thread at a time uses a connection (SQLite's own mutex is held
    ** while our function runs), so nobody can have listed it meanwhile. */
    pthread_mutex_lock(&gHostMutex);
    pNew->pHost->pNextHost = gpHostFirst;
    gpHostFirst = pNew;
    pthread_mutex_unlock(&gHostMutex);
    p = pNew;
    *pbNew = !bOther;
  }
  if (bWrite && sqlite3_db_readonly(host, p->pHost->zName) == 1) {
    hostErr(pzErr, sqlite3_mprintf("host database %s is read-only", p->pHost->zName));
    storeHostRelease(p);
    return SQLITE_READONLY;
  }
  *ppStore = p;
  return SQLITE_OK;
}

/* Unlinks p when it is closed and unheld; the caller frees it. Host mutex held. */
static int hostUnlinkIfDone(Store *p) {
  Store **pp;
  if (p->nRef > 0 || !p->pHost->bClosed) return 0;
  for (pp = &gpHostFirst; *pp; pp = &(*pp)->pHost->pNextHost) {
    if (*pp == p) {
      *pp = p->pHost->pNextHost;
      break;
    }
  }
  return 1;
}

void storeHostRelease(Store *p) {
  int bFree;
  pthread_mutex_lock(&gHostMutex);
  p->nRef--;
  bFree = hostUnlinkIfDone(p);
  pthread_mutex_unlock(&gHostMutex);
  if (bFree) hostFree(p);
}

void storeHostClose(sqlite3 *host) {
  Store *pFree = NULL, *p, *pNext;
  pthread_mutex_lock(&gHostMutex);
  for (p = gpHostFirst; p; p = pNext) {
    pNext = p->pHost->pNextHost;
    if (p->pHost->host != host) continue;
    p->pHost->bClosed = 1;
    if (hostUnlinkIfDone(p)) {
      p->pHost->pNextHost = pFree;
      pFree = p;
    }
  }
  pthread_mutex_unlock(&gHostMutex);
  while ((p = pFree) != NULL) {
    pFree = p->pHost->pNextHost;
    hostFree(p);
  }
}

/* ---------------------------------------------------------- revalidate */

/* The tx partition's mark, as the state signature reads it. */
static const char zHostMarkSql[] =
  "SELECT idx FROM known_parts NOT INDEXED WHERE part = ':db.part/tx'";

/* Takes the stamp of the state the host's next statement reads (THE READ
** STAMP in HOW IT WORKS). Returns 0 when none can be taken here: no read
** hold stepped, no read transaction open on the store's database (its
** pager learns of other connections' commits only when one begins), a
** write transaction open on any database of the connection (its
** uncommitted changes move no data version, and a rollback may undo
** them), or an SQLite before 3.34 (no sqlite3_txn_state). */
static int hostStampTake(StoreHostPart *h, HostStamp *pSt) {
  sqlite3 *db = h->host;
  memset(pSt, 0, sizeof *pSt);
  if (sqlite3_libversion_number() < 3034000 || !sqlite3_stmt_busy(h->pHold)) return 0;
  if (sqlite3_txn_state(db, NULL) == SQLITE_TXN_WRITE
      || sqlite3_txn_state(db, h->zName) != SQLITE_TXN_READ) {
    return 0;
  }
  if (sqlite3_file_control(db, h->zName, SQLITE_FCNTL_FILE_POINTER, &pSt->pFile) != SQLITE_OK
      || sqlite3_file_control(db, h->zName, SQLITE_FCNTL_DATA_VERSION, &pSt->uDv) != SQLITE_OK) {
    return 0;
  }
  /* temp is this connection's alone: its pager's version is current. */
  if (h->iDb != 1) {
    pSt->bTemp = sqlite3_file_control(db, "temp", SQLITE_FCNTL_DATA_VERSION, &pSt->uDvTemp)
                 == SQLITE_OK;
  }
  /* main, searched before an attached store, may be another connection's
  ** to change: its schema_version, read in its own read transaction. */
  if (h->iDb >= 2 && storeStepInt(h->apShadowSv[1], &pSt->iSvMain) != SQLITE_OK) return 0;
  pSt->iSv = sqlite3_column_int64(h->pHold, 0);
  pSt->nReprepare = sqlite3_stmt_status(h->pHold, SQLITE_STMTSTATUS_REPREPARE, 0);
  return 1;
}

static int hostStampSame(const HostStamp *a, const HostStamp *b) {
  return a->pFile == b->pFile && a->uDv == b->uDv && a->bTemp == b->bTemp
         && (!a->bTemp || a->uDvTemp == b->uDvTemp) && a->iSv == b->iSv
         && a->iSvMain == b->iSvMain && a->nReprepare == b->nReprepare;
}

/* After a DETACH and an ATTACH of another file under the same name the
** signature may well match (two stores with as many transactions and
** idents), so a new file (or an expired pSchemaVersion: any DETACH, or a
** schema change, which reads the layout again anyway) forgets all that is
** known of the old one: layout, signature, data version, its seq. */
static int hostSameFile(Store *p) {
  StoreHostPart *h = p->pHost;
  sqlite3_file *pFile = NULL;
  int nRe = sqlite3_stmt_status(h->pSchemaVersion, SQLITE_STMTSTATUS_REPREPARE, 0), iDb;
  char *zCanon = NULL;
  int rc;
  if (sqlite3_file_control(h->host, h->zName, SQLITE_FCNTL_FILE_POINTER, &pFile) != SQLITE_OK) {
    pFile = NULL;
  }
  if (pFile == h->pFileSeen && nRe == h->nSvReprepare) return SQLITE_OK;
  rc = hostFindDb(h->host, h->zName, &iDb, &zCanon, NULL);
  sqlite3_free(zCanon);
  if (rc != SQLITE_OK) return rc;
  h->iDb = iDb;
  h->eLayout = HOST_LAYOUT_UNKNOWN;
  p->bKnown = 0;
  ((StoreConnImpl *)p->pWriter)->base.iDataVersion = -1;
  h->pFileSeen = pFile;
  h->nSvReprepare = nRe;
  return SQLITE_OK;
}

/* Makes p's layout knowledge and schema current for the host's next
** statement (see HOW IT WORKS). bCreate: create the layout when absent
** (inside the caller's savepoint). *pbAbsent (may be NULL): no store. */
static int hostRevalidate(Store *p, int bCreate, int *pbAbsent, char **pzErr) {
  StoreHostPart *h = p->pHost;
  StoreConnImpl *pImpl = (StoreConnImpl *)p->pWriter;
  sqlite3 *db = h->host;
  sqlite3_int64 iSv = 0, iVersion = 0;
  sqlite3_uint64 fp = 0;
  StoreSig sig;
  HostStamp st;
  int rc;

  if (pbAbsent) *pbAbsent = 0;
  if (h->bStamp && hostStampTake(h, &st) && hostStampSame(&st, &h->stamp)) return SQLITE_OK;
  h->bStamp = 0;
  rc = storeStepInt(h->pSchemaVersion, &iSv);
  if (rc == SQLITE_OK) rc = hostSameFile(p);
  if (rc == SQLITE_OK) {
    int bChanged = 0;
    rc = storeHostShadowSeen(h, &bChanged);
    if (rc == SQLITE_OK && bChanged) rc = storeHostCheckShadow(h, 0, pzErr);
    /* Refused: look again at the next call, whatever changed meanwhile. */
    if (rc != SQLITE_OK) h->aShadowSv[0] = h->aShadowSv[1] = -1;
  }
  if (rc != SQLITE_OK) goto cleanup;
  if (iSv != h->iSchemaVersion || h->eLayout == HOST_LAYOUT_UNKNOWN) {
    h->eLayout = HOST_LAYOUT_UNKNOWN;
    rc = storeHostCheckLayout(h, pzErr);
    if (rc != SQLITE_OK) goto cleanup;
    h->iSchemaVersion = iSv;
    if (h->eLayout != HOST_LAYOUT_PRESENT) {
      /* Dropped (e.g. the host rolled back the edn_t that created it). */
      sqlite3_finalize(pImpl->pSig);
      sqlite3_finalize(pImpl->pFingerprint);
      sqlite3_finalize(h->pMark);
      pImpl->pSig = pImpl->pFingerprint = NULL;
      h->pMark = NULL;
      schemaUnref(p->pSchema);
      p->pSchema = NULL;
      p->bKnown = 0;
    }
  }
  if (h->eLayout == HOST_LAYOUT_ABSENT) {
    if (!bCreate) {
      if (pbAbsent) *pbAbsent = 1;
      goto cleanup;
    }
    rc = storeHostCheckShadow(h, 1, pzErr);
    if (rc == SQLITE_OK) rc = storeCreateLayoutIn(db, h->zName, pzErr);
    if (rc == SQLITE_OK) rc = storeHostCheckLayout(h, pzErr);
    if (rc == SQLITE_OK) rc = storeStepInt(h->pSchemaVersion, &h->iSchemaVersion);
    if (rc != SQLITE_OK) goto cleanup;
  }
  if (pImpl->pSig == NULL) {
    rc = sqlite3_prepare_v3(db, storeSigSql, -1, SQLITE_PREPARE_PERSISTENT, &pImpl->pSig, NULL);
    if (rc == SQLITE_OK) {
      rc = sqlite3_prepare_v3(db, storeSchemaFingerprintSql(), -1, SQLITE_PREPARE_PERSISTENT,
                              &pImpl->pFingerprint, NULL);
    }
    if (rc == SQLITE_OK) {
      rc = sqlite3_prepare_v3(db, zHostMarkSql, -1, SQLITE_PREPARE_PERSISTENT, &h->pMark, NULL);
    }
    if (rc != SQLITE_OK) goto cleanup;
  }
  rc = storeStepInt(pImpl->pDataVersion, &iVersion);
  if (rc == SQLITE_OK) rc = storeReadSig(pImpl, &sig);
  if (rc != SQLITE_OK) goto cleanup;
  if (p->pSchema && iVersion == pImpl->base.iDataVersion && p->bKnown && storeSigEqual(&sig, &p->known)) {
    goto stamp;
  }
  /* Another connection committed, or this one rolled back: the marks may
  ** have moved by other means than this extension, and the schema too. */
  pImpl->base.bMarksUnchecked = 1;
  rc = storeSchemaFingerprintStmt(pImpl->pFingerprint, &fp);
  if (rc != SQLITE_OK) goto cleanup;
  if (p->pSchema == NULL || fp != schemaFingerprintOf(p->pSchema)) {
    Schema *pNew = NULL;
    rc = storeSchemaLoad(db, &pNew, pzErr);
    if (rc != SQLITE_OK) goto cleanup;
    schemaUnref(p->pSchema);
    p->pSchema = pNew;
  }
  p->known = sig;
  p->bKnown = 1;
  pImpl->base.iDataVersion = iVersion;

stamp:
  if (!bCreate && h->eLayout == HOST_LAYOUT_PRESENT) h->bStamp = hostStampTake(h, &h->stamp);

cleanup:
  if (rc != SQLITE_OK && pzErr && *pzErr == NULL) {
    *pzErr = sqlite3_mprintf("cannot read host store %s: %s", p->zPath, sqlite3_errmsg(db));
  }
  return rc;
}

/* A read holds one read transaction for all of its statements: a call
** from a statement that reads no table (SELECT edn_q(...)) would otherwise
** begin and end one per statement (the revalidation's three and the
** query's), each a WAL read-lock round trip. The hold is a statement left
** stepped (PRAGMA schema_version, one row) until the read ends; nested
** reads share the outermost one's. */
static void hostHoldEnd(StoreHostPart *h) {
  if (h->nReadHold > 0 && --h->nReadHold == 0) sqlite3_reset(h->pHold);
}

int storeHostReader(Store *p, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  StoreHostPart *h = p->pHost;
  int bAbsent = 0, rc;
  *ppConn = NULL;
  *ppSchema = NULL;
  if (h->nReadHold++ == 0 && sqlite3_step(h->pHold) != SQLITE_ROW) sqlite3_reset(h->pHold);
  rc = hostRevalidate(p, 0, &bAbsent, pzErr);
  if (rc == SQLITE_OK && bAbsent) rc = SQLITE_NOTFOUND;
  if (rc != SQLITE_OK) {
    hostHoldEnd(h);
    return rc;
  }
  schemaRef(p->pSchema);
  *ppSchema = p->pSchema;
  *ppConn = p->pWriter;
  return SQLITE_OK;
}

/* ----------------------------------------------------------------- write */

void storeHostReaderDone(Store *p) {
  hostHoldEnd(p->pHost);
}

/* Undoes the failed write in progress. With its savepoint: back to it, the
** host's earlier statements stay. Inside a statement that writes there is
** none: that statement fails with the edn_t, and SQLite undoes its changes,
** ours among them — in autocommit by rolling the transaction back, inside
** BEGIN through the statement's journal, which a statement SQLite deems
** unable to fail midway (INSERT ... VALUES of one row, UPDATE of one row)
** lacks. So inside BEGIN, when the write changed anything (rows or the
** schema), the host's transaction is rolled back: no half-applied edn_t
** can stay. A write with no undo of its own (HOST_UNDO_NONE) is undone the
** same way; none of its steps fails but by SQLite ending the transaction
** itself, so that is a last guard. Returns 1 when it rolled the host's
** transaction back (2: a write with no undo of its own). */
static int hostUndo(Store *p) {
  StoreHostPart *h = p->pHost;
  sqlite3_int64 iSv = h->iSv0;
  int eUndo = h->eUndo;
  h->eUndo = HOST_UNDO_SAVEPOINT;
  if (eUndo == HOST_UNDO_DEFERRED) return 0;   /* nothing written */
  if (eUndo == HOST_UNDO_SAVEPOINT && !h->bNoSavepoint) {
    hostStep(h->pRollbackTo);
    hostStep(h->pRelease);
    return 0;
  }
  h->bNoSavepoint = 0;
  p->pWriter->bInAutoStmt = 0;
  if (sqlite3_get_autocommit(h->host)) return 0;
  if (storeStepInt(h->pSchemaVersion, &iSv) == SQLITE_OK && iSv == h->iSv0
      && sqlite3_total_changes(h->host) == h->nChanges0) {
    return 0;
  }
  sqlite3_exec(h->host, "ROLLBACK", NULL, NULL, NULL);
  return eUndo == HOST_UNDO_NONE ? 2 : 1;
}

/* The savepoint of a write, or, inside a statement that writes (INSERT ...
** SELECT edn_t(...)), where SQLite opens none ("cannot open savepoint -
** SQL statements in progress"), what hostUndo needs instead. */
static int hostWriteStart(Store *p) {
  StoreHostPart *h = p->pHost;
  int rc = hostStep(h->pSavepoint);
  if (rc != SQLITE_BUSY) return rc;
  h->bNoSavepoint = 1;
  p->pWriter->bInAutoStmt = sqlite3_get_autocommit(h->host);
  h->nChanges0 = sqlite3_total_changes(h->host);
  return storeStepInt(h->pSchemaVersion, &h->iSv0);
}

/* THE WRITE WITNESS. Inside the host's BEGIN, consecutive edn_t calls
** would each read the state signature three times (before the savepoint,
** inside it, at its release) although nothing can have moved between them
** but what this connection did. So a write that leaves the host's write
** transaction open records a witness (HostWitness): the pager's data
** version and file, the connection's change counter, the store
** database's schema_version and the tx mark. The next write whose
** witness is unchanged, still inside a write transaction, skips the
** revalidation. Each part covers one way the state can move: a commit
** (ours, then another connection's seen by the next transaction) moves
** the data version; any row the host's statements or a "with" span
** insert, update or delete moves the change counter, even when a
** rollback undoes it later; DDL moves schema_version; and a rollback
** (whole, or to a host savepoint) that undoes the last edn_t moves the
** mark back, every edn_t having moved it on. The databases searched
** before the store's are checked as on every call. Each write drops the
** witness first; only a released savepoint sets it again. */
static int hostWitRead(StoreHostPart *h, HostWitness *pW) {
  sqlite3 *db = h->host;
  int rc;
  memset(pW, 0, sizeof *pW);
  if (h->pMark == NULL || sqlite3_libversion_number() < 3034000
      || sqlite3_txn_state(db, h->zName) != SQLITE_TXN_WRITE) {
    return SQLITE_NOTFOUND;
  }
  if (sqlite3_file_control(db, h->zName, SQLITE_FCNTL_FILE_POINTER, &pW->pFile) != SQLITE_OK
      || sqlite3_file_control(db, h->zName, SQLITE_FCNTL_DATA_VERSION, &pW->uDv) != SQLITE_OK) {
    return SQLITE_NOTFOUND;
  }
  pW->nChanges = sqlite3_total_changes(db);
  rc = storeStepInt(h->pSchemaVersion, &pW->iSv);
  pW->nReprepare = sqlite3_stmt_status(h->pSchemaVersion, SQLITE_STMTSTATUS_REPREPARE, 0);
  return rc;
}

/* Records the witness at a write's end. A write that continued the last
** one (bContinued: the witness held at its begin) and changed no schema
** left all but the change counter as they were: the same file and write
** transaction (so data version), no DDL (schema_version and the hold's
** re-prepare count). */
static int hostWitRecord(StoreHostPart *h, int bContinued) {
  if (!bContinued) return hostWitRead(h, &h->wit);
  if (sqlite3_txn_state(h->host, h->zName) != SQLITE_TXN_WRITE) return SQLITE_NOTFOUND;
  h->wit.nChanges = sqlite3_total_changes(h->host);
  return SQLITE_OK;
}

/* Is the witness the state now, and the databases searched before the
** store's as at their last check? (They are not recorded as seen here: a
** change is left for the revalidation to find.) */
static int hostWitSame(StoreHostPart *h) {
  HostWitness w;
  if (!h->bWit || hostWitRead(h, &w) != SQLITE_OK) return 0;
  if (w.pFile != h->wit.pFile || w.uDv != h->wit.uDv || w.nChanges != h->wit.nChanges
      || w.iSv != h->wit.iSv || w.nReprepare != h->wit.nReprepare) {
    return 0;
  }
  for (int i = 0; i < 2; i++) {
    sqlite3_int64 v = 0;
    if (h->apShadowSv[i] == NULL) continue;
    if (storeStepInt(h->apShadowSv[i], &v) != SQLITE_OK || v != h->aShadowSv[i]) return 0;
  }
  return storeStepInt(h->pMark, &w.iMark) == SQLITE_OK && w.iMark == h->wit.iMark;
}

int storeHostWriteBegin(Store *p, int bLazy, StoreConn **ppConn, Schema **ppSchema, char **pzErr) {
  StoreHostPart *h = p->pHost;
  int bWit = hostWitSame(h), rc;
  *ppConn = NULL;
  *ppSchema = NULL;
  if (h->bDqlite && sqlite3_get_autocommit(h->host)) {
    hostErr(pzErr, sqlite3_mprintf(
        "on dqlite a host store is written only inside an explicit transaction (BEGIN; "
        "SELECT edn_t('%s', ...); COMMIT): dqlite does not replicate a write made by a "
        "function in autocommit", p->zPath));
    return SQLITE_ERROR;
  }
  h->bWit = 0;
  p->pWriter->bContinues = 0;
  p->pWriter->iTxMark = 0;
  h->eUndo = HOST_UNDO_SAVEPOINT;
  /* Before the savepoint: a layout check run inside it would see our own
  ** schema_version change. */
  rc = bWit ? SQLITE_OK : hostRevalidate(p, 0, NULL, pzErr);
  /* The write is this connection's: it moves no version until it commits,
  ** and the host may yet roll it back. The next read validates again. */
  h->bStamp = 0;
  if (rc == SQLITE_OK) rc = storeHostCheckScans(p, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (bLazy && bWit) {
    /* THE UNDO POINT decides at the first write; the witness's figures
    ** are the state now, which hostUndo compares with. */
    h->eUndo = HOST_UNDO_DEFERRED;
    h->nChanges0 = h->wit.nChanges;
    h->iSv0 = h->wit.iSv;
  } else {
    rc = hostWriteStart(p);
    if (rc != SQLITE_OK) {
      hostErr(pzErr, sqlite3_mprintf("cannot begin a write on host store %s: %s", p->zPath,
                                     sqlite3_errmsg(h->host)));
      return rc;
    }
  }
  /* With the witness the state is the one the last write left, inside the
  ** same write transaction: the savepoint changed nothing. */
  rc = bWit ? SQLITE_OK : hostRevalidate(p, 1, NULL, pzErr);
  if (rc != SQLITE_OK) {
    hostUndo(p);
    return rc;
  }
  schemaRef(p->pSchema);
  *ppSchema = p->pSchema;
  *ppConn = p->pWriter;
  if (bWit) {
    /* What the transactor kept of the last write holds, unless the host
    ** has objects on the store's tables: a trigger may have changed
    ** known_parts after the transactor wrote it (an unreadable answer
    ** counts as objects). */
    int bForeign = 1;
    sqlite3_int64 iSvTemp = h->iDb != 1 ? h->aShadowSv[0] : 0;
    if (storeHostForeign(h, h->wit.iSv, iSvTemp, &bForeign) == SQLITE_OK && !bForeign) {
      p->pWriter->bContinues = 1;
    }
  }
  return SQLITE_OK;
}

/* THE UNDO POINT. Inside the host's BEGIN a savepoint's cost is its
** sub-journal: SQLite copies there every page the write changes that the
** host's transaction had changed already (~13 pages, 4 KiB each, per
** one-datom edn_t; past 64 KiB the sub-journal is a temp file at the
** default temp_store, and the kernel's writes to it were ~14 % of a grouped
** write). It buys an undo of failures met after the write began. Those
** are: the transaction's own data (a unique value taken, found by the
** index; schema changes and their checks; fulltext), the host's objects
** on the tables (a unique index, a trigger, a foreign key: storeHostForeign),
** and errors outside SQLite's statements (a prepare, a bind that copies,
** an interrupt of a read between two writes). An allocation failure,
** interrupt, I/O error or full disk inside a statement that writes (and
** the transactor's have no statement journal) makes SQLite roll the
** host's whole transaction back by itself, savepoint or not. So a write
** begun lazily, within the host's transaction where the last edn_t left
** it (the witness: no host statement since), opens its savepoint only
** here, before its first write, and only when bRisky (the transactor
** says its checks are not all done before writing) or the host has
** objects of its own there; otherwise it runs with none, its reads and
** checks done, its statements prepared and its binds not copied before
** its first write. */
int storeHostUndoPoint(Store *p, int bRisky, char **pzErr) {
  StoreHostPart *h = p->pHost;
  int bForeign = 1, rc;
  if (h->eUndo != HOST_UNDO_DEFERRED) return SQLITE_OK;
  if (sqlite3_get_autocommit(h->host)) {
    /* SQLite ended the host's transaction (a read ran out of memory): a
    ** savepoint now would begin one of its own. */
    hostErr(pzErr, sqlite3_mprintf("the store's write transaction ended unexpectedly; nothing was "
                                   "written"));
    return SQLITE_ABORT;
  }
  if (!bRisky) {
    sqlite3_int64 iSvTemp = h->iDb != 1 ? h->aShadowSv[0] : 0;
    rc = storeHostForeign(h, h->iSv0, iSvTemp, &bForeign);
    if (rc != SQLITE_OK) {
      hostErr(pzErr, sqlite3_mprintf("cannot read host database %s: %s", h->zName,
                                     sqlite3_errmsg(h->host)));
      return rc;
    }
  }
  if (!bForeign) {
    h->eUndo = HOST_UNDO_NONE;
    return SQLITE_OK;
  }
  h->eUndo = HOST_UNDO_SAVEPOINT;
  rc = hostWriteStart(p);
  if (rc != SQLITE_OK) {
    hostErr(pzErr, sqlite3_mprintf("cannot begin a write on host store %s: %s", p->zPath,
                                   sqlite3_errmsg(h->host)));
  }
  return rc;
}

int storeHostWriteEnd(Store *p, StoreConn *pConn, int bCommit, Schema *pNewSchema, char **pzErr) {
  StoreHostPart *h = p->pHost;
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  StoreSig sig;
  int rc = SQLITE_OK, bContinued = pConn->bContinues;
  sqlite3_int64 iTxMark = pConn->iTxMark;
  pConn->bContinues = 0;
  pConn->iTxMark = 0;
  if (bCommit && pNewSchema == NULL && p->bKnown && h->pMark) {
    /* No schema change: the mirrors the signature counts are as the
    ** schema was known for (a change to them gives a new schema); only
    ** the mark moved, to what the transactor wrote (a host trigger that
    ** moved it again makes the next call's witness differ). */
    sig = p->known;
    if (iTxMark > 0) sig.iMark = iTxMark;
    else rc = storeStepInt(h->pMark, &sig.iMark);
  } else if (bCommit) {
    rc = storeReadSig(pImpl, &sig);
  }
  if (bCommit) {
    if (rc == SQLITE_OK && h->eUndo != HOST_UNDO_SAVEPOINT) {
      h->eUndo = HOST_UNDO_SAVEPOINT;   /* no savepoint to release */
    } else if (rc == SQLITE_OK && h->bNoSavepoint) {
      h->bNoSavepoint = 0;
      pConn->bInAutoStmt = 0;
    } else if (rc == SQLITE_OK) {
      rc = hostStep(h->pRelease);
    }
    if (rc != SQLITE_OK) {
      hostErr(pzErr, sqlite3_mprintf("cannot commit to host store %s: %s", p->zPath,
                                     sqlite3_errmsg(h->host)));
    }
  }
  if (!bCommit || rc != SQLITE_OK) {
    /* Undoes this edn_t only where it can; else the host's transaction. */
    int eRolled = hostUndo(p);
    if (eRolled == 1) {
      hostErr(pzErr, sqlite3_mprintf("inside a statement that writes, a failed edn_t rolls the"
                                     " host's transaction back"));
    } else if (eRolled == 2) {
      hostErr(pzErr, sqlite3_mprintf("the failed edn_t could not be undone alone: the host's "
                                     "transaction was rolled back"));
    }
    /* The schema and marks of this connection's state are revalidated
    ** against the signature at the next call. */
    return rc;
  }
  if (pNewSchema) {
    schemaRef(pNewSchema);
    schemaUnref(p->pSchema);
    p->pSchema = pNewSchema;
  }
  p->known = sig;
  p->bKnown = 1;
  /* The layout check need not run again for our own schema changes... but
  ** a new attribute may create indexes; read the root pages again then. */
  if (pNewSchema) {
    h->iSchemaVersion = -1;
  } else if (!sqlite3_get_autocommit(h->host) && hostWitRecord(h, bContinued) == SQLITE_OK) {
    h->wit.iMark = sig.iMark;
    h->bWit = 1;
  }
  return SQLITE_OK;
}
