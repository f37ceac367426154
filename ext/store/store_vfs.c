/*
** store_vfs.c — a thin VFS over the default one that gathers the
** WAL frames a commit writes into few large writes.
**
** Takes in the default VFS; gives out the VFS name store connections are
** opened with (storeVfs); calls the default VFS and configWalGather.
**
** WHY
** SQLite writes each WAL frame as two pwrite calls (the 24-byte header,
** then the page). A one-datom transaction writes ~25 frames, a bulk load
** transaction thousands; a pwrite costs its kernel entry whatever its
** size, so the frames can cost more than the B-tree work, and at
** synchronous=FULL the fdatasync of many small writes is slower than of
** few large ones (figures in bench/findings.md).
**
** HOW IT WORKS
** Store connections are opened with the VFS "mentat-wal" (storeOpenDb).
** Every file forwards every method to the default VFS's file, which lives
** right after our header. For a WAL file, a write that continues the
** previous one is appended to a buffer (STORE_WAL_BUF, 64 KiB) instead; any
** other method on the WAL file (read, sync, truncate, size, lock, close,
** file control) first writes the buffer out, so SQLite never sees the
** difference. Other processes must not see a commit before its frames are
** in the file: SQLite publishes a commit by writing the wal-index header
** in shared memory, and between its two copies it calls xShmBarrier on the
** DATABASE file — so the database file's xShmBarrier (and xShmLock and
** xShmUnmap) writes its WAL file's buffer out first. The database file
** knows its WAL file through sqlite3_database_file_object(), looked up when
** the WAL is opened. A crash with frames still buffered loses only frames
** that were never published (the commit was not done), which is what a
** crash before those pwrites would have done; at synchronous=FULL the
** commit's xSync writes the buffer before the fsync.
** A write SQLite can see fail must carry the failure: the page of a commit
** frame (its 24-byte header names the database size) is written out in
** its own xWrite, so at NORMAL, where the WAL is not synced, the commit
** fails instead of being published from xShmBarrier without its frames;
** and a buffer that fails to go out from a call whose error SQLite
** ignores (walLimitSize's xFileSize, hints) leaves a hole that fails every
** later write, sync or read past it until SQLite writes there again
** (test_iofault fails each WAL call in turn).
** If the buffer cannot be allocated, writes go through unbuffered.
** On by default; MENTAT_WAL_GATHER=0 (configWalGather) turns it off.
** Crash tests: smoke/kill9.sh's `wal`
** trial SIGKILLs the writer once the WAL has grown 64 KiB into a 100k-datom
** commit (in the middle of the gathered writes): the store keeps none of
** it; test_tx reads every commit back through a raw connection.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "store_context.h"

/* Bytes gathered before a write is forced. The unix VFS writes at most
** 0x1ffff bytes per call (it masks larger sizes), so 64 KiB: 16 frames of
** 4 KiB pages per pwrite instead of 32 calls. */
#define STORE_WAL_BUF (64 * 1024)
#define STORE_VFS_NAME "mentat-wal"

typedef struct StoreVfsFile StoreVfsFile;
struct StoreVfsFile {
  sqlite3_file base;            /* pMethods = ours */
  sqlite3_file *pReal;          /* the default VFS's file, right after us */
  int bWal;                     /* a WAL file: writes are gathered */
  StoreVfsFile *pWal;           /* database file: its open WAL file */
  StoreVfsFile *pDb;            /* WAL file: its database file, if ours */
  char *aBuf;                   /* gathered bytes (WAL), sqlite3_malloc'd */
  int nBuf;
  sqlite3_int64 iBufOfst;       /* file offset of aBuf[0] */
  int bCommitPage;              /* the next write is a commit frame's page */
  int rcHole;                   /* a gathered write failed: its error, until rewritten */
  sqlite3_int64 iHole;          /* file offset where the failed bytes began */
};

static sqlite3_vfs gStoreVfs;
static sqlite3_io_methods gStoreIo;
static sqlite3_vfs *gpRealVfs;
static pthread_once_t gStoreVfsOnce = PTHREAD_ONCE_INIT;
static int gStoreVfsRc = SQLITE_ERROR;

/* Writes the gathered bytes out. Only WAL files gather, so for any other
** file (or NULL) there is nothing to write. */
static int storeVfsFlush(StoreVfsFile *p) {
  int rc;
  if (p == NULL || p->nBuf == 0) return SQLITE_OK;
  rc = p->pReal->pMethods->xWrite(p->pReal, p->aBuf, p->nBuf, p->iBufOfst);
  if (rc != SQLITE_OK && (p->rcHole == SQLITE_OK || p->iBufOfst < p->iHole)) {
    /* The caller may be one whose error SQLite ignores (xFileSize in
    ** walLimitSize, a file-control hint, xShmBarrier): the WAL now has a
    ** hole, so nothing may be written, synced or read past it until SQLite
    ** writes there again (its next transaction starts at or before it). */
    p->rcHole = rc;
    p->iHole = p->iBufOfst;
  }
  p->nBuf = 0;
  return rc;
}

/* A WAL frame header (24 bytes) whose second word, the database size
** after a commit, is not zero heads a commit frame (the WAL format). */
static int storeVfsIsCommitHeader(const void *pData, int n) {
  const unsigned char *a = pData;
  return n == 24 && (a[4] | a[5] | a[6] | a[7]) != 0;
}

static int storeVfsClose(sqlite3_file *pFile) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc = storeVfsFlush(p), rc2;
  if (p->pDb && p->pDb->pWal == p) p->pDb->pWal = NULL;
  if (p->pWal && p->pWal->pDb == p) p->pWal->pDb = NULL;
  sqlite3_free(p->aBuf);
  p->aBuf = NULL;
  rc2 = p->pReal->pMethods ? p->pReal->pMethods->xClose(p->pReal) : SQLITE_OK;
  return rc != SQLITE_OK ? rc : rc2;
}

static int storeVfsRead(sqlite3_file *pFile, void *pOut, int n, sqlite3_int64 iOfst) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc = storeVfsFlush(p);
  if (rc != SQLITE_OK) return rc;
  if (p->rcHole != SQLITE_OK && iOfst + n > p->iHole) return p->rcHole;
  return p->pReal->pMethods->xRead(p->pReal, pOut, n, iOfst);
}

static int storeVfsWrite(sqlite3_file *pFile, const void *pData, int n, sqlite3_int64 iOfst) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc, bCommitPage;
  if (p->rcHole != SQLITE_OK) {
    if (iOfst > p->iHole) return p->rcHole;
    p->rcHole = SQLITE_OK;                /* written again from before the hole */
  }
  /* A commit frame's page is written out at once, inside the write that
  ** SQLite checks before it publishes the commit: gathered further, its
  ** bytes would go out from xShmBarrier or another call whose error
  ** SQLite cannot see, and the commit would be acknowledged without its
  ** frames (synchronous=NORMAL does not sync the WAL at commit). */
  bCommitPage = p->bCommitPage;
  p->bCommitPage = p->bWal && storeVfsIsCommitHeader(pData, n);
  if (!p->bWal || n > STORE_WAL_BUF) {
    rc = storeVfsFlush(p);
    if (rc != SQLITE_OK) return rc;
    return p->pReal->pMethods->xWrite(p->pReal, pData, n, iOfst);
  }
  if (p->aBuf == NULL) {
    p->aBuf = sqlite3_malloc(STORE_WAL_BUF);
    if (p->aBuf == NULL) return p->pReal->pMethods->xWrite(p->pReal, pData, n, iOfst);
  }
  if (p->nBuf > 0 && (iOfst != p->iBufOfst + p->nBuf || p->nBuf + n > STORE_WAL_BUF)) {
    rc = storeVfsFlush(p);
    if (rc != SQLITE_OK) return rc;
  }
  if (p->nBuf == 0) p->iBufOfst = iOfst;
  memcpy(p->aBuf + p->nBuf, pData, (size_t)n);
  p->nBuf += n;
  return bCommitPage ? storeVfsFlush(p) : SQLITE_OK;
}

static int storeVfsTruncate(sqlite3_file *pFile, sqlite3_int64 size) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc = storeVfsFlush(p);
  if (rc != SQLITE_OK) return rc;
  if (size <= p->iHole) p->rcHole = SQLITE_OK;   /* the hole is cut off */
  return p->pReal->pMethods->xTruncate(p->pReal, size);
}

static int storeVfsSync(sqlite3_file *pFile, int flags) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc = storeVfsFlush(p);
  if (rc != SQLITE_OK) return rc;
  if (p->rcHole != SQLITE_OK) return p->rcHole;
  return p->pReal->pMethods->xSync(p->pReal, flags);
}

static int storeVfsFileSize(sqlite3_file *pFile, sqlite3_int64 *pSize) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc = storeVfsFlush(p);
  if (rc != SQLITE_OK) return rc;
  return p->pReal->pMethods->xFileSize(p->pReal, pSize);
}

static int storeVfsLock(sqlite3_file *pFile, int eLock) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  return p->pReal->pMethods->xLock(p->pReal, eLock);
}

static int storeVfsUnlock(sqlite3_file *pFile, int eLock) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc = storeVfsFlush(p->bWal ? p : p->pWal);
  if (rc != SQLITE_OK) return rc;
  return p->pReal->pMethods->xUnlock(p->pReal, eLock);
}

static int storeVfsCheckReservedLock(sqlite3_file *pFile, int *pResOut) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  return p->pReal->pMethods->xCheckReservedLock(p->pReal, pResOut);
}

static int storeVfsFileControl(sqlite3_file *pFile, int op, void *pArg) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc;
  if (op == SQLITE_FCNTL_VFSNAME) {
    /* Name ourselves and pass on, as shims do. */
    rc = p->pReal->pMethods->xFileControl(p->pReal, op, pArg);
    if (rc == SQLITE_OK) {
      char *zNew = sqlite3_mprintf(STORE_VFS_NAME "/%z", *(char **)pArg);
      if (zNew == NULL) return SQLITE_NOMEM;
      *(char **)pArg = zNew;
    }
    return rc;
  }
  rc = storeVfsFlush(p);
  if (rc != SQLITE_OK) return rc;
  return p->pReal->pMethods->xFileControl(p->pReal, op, pArg);
}

static int storeVfsSectorSize(sqlite3_file *pFile) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  return p->pReal->pMethods->xSectorSize(p->pReal);
}

static int storeVfsDeviceCharacteristics(sqlite3_file *pFile) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  return p->pReal->pMethods->xDeviceCharacteristics(p->pReal);
}

/* The shared-memory methods belong to the database file; each first writes
** out the WAL's gathered frames, so nothing is published (header copy
** after xShmBarrier) or unlocked before its frames are in the file. */
static int storeVfsShmMap(sqlite3_file *pFile, int iPg, int pgsz, int bExtend, void volatile **pp) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  return p->pReal->pMethods->xShmMap(p->pReal, iPg, pgsz, bExtend, pp);
}

static int storeVfsShmLock(sqlite3_file *pFile, int offset, int n, int flags) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc = storeVfsFlush(p->pWal);
  if (rc != SQLITE_OK) return rc;
  return p->pReal->pMethods->xShmLock(p->pReal, offset, n, flags);
}

static void storeVfsShmBarrier(sqlite3_file *pFile) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  /* No way to report an error here: a failed write leaves the frames
  ** out, and SQLite's next read or sync of the WAL reports the I/O error
  ** (the buffer is dropped either way, as a failed pwrite would). */
  storeVfsFlush(p->pWal);
  p->pReal->pMethods->xShmBarrier(p->pReal);
}

static int storeVfsShmUnmap(sqlite3_file *pFile, int bDelete) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc = storeVfsFlush(p->pWal);
  if (rc != SQLITE_OK) return rc;
  return p->pReal->pMethods->xShmUnmap(p->pReal, bDelete);
}

static int storeVfsFetch(sqlite3_file *pFile, sqlite3_int64 iOfst, int n, void **pp) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  return p->pReal->pMethods->xFetch(p->pReal, iOfst, n, pp);
}

static int storeVfsUnfetch(sqlite3_file *pFile, sqlite3_int64 iOfst, void *pPage) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  return p->pReal->pMethods->xUnfetch(p->pReal, iOfst, pPage);
}

static int storeVfsOpen(sqlite3_vfs *pVfs, const char *zName, sqlite3_file *pFile, int flags,
                        int *pOutFlags) {
  StoreVfsFile *p = (StoreVfsFile *)pFile;
  int rc;
  (void)pVfs;
  memset(p, 0, sizeof *p);
  p->pReal = (sqlite3_file *)&p[1];
  rc = gpRealVfs->xOpen(gpRealVfs, zName, p->pReal, flags, pOutFlags);
  if (p->pReal->pMethods == NULL) {
    pFile->pMethods = NULL;            /* nothing to close */
    return rc;
  }
  pFile->pMethods = &gStoreIo;
  if (rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL) && zName) {
    sqlite3_file *pDbFile = sqlite3_database_file_object(zName);
    p->bWal = 1;
    if (pDbFile && pDbFile->pMethods == &gStoreIo) {
      p->pDb = (StoreVfsFile *)pDbFile;
      p->pDb->pWal = p;
    }
  }
  return rc;
}

static int storeVfsDelete(sqlite3_vfs *pVfs, const char *zName, int syncDir) {
  (void)pVfs;
  return gpRealVfs->xDelete(gpRealVfs, zName, syncDir);
}

static int storeVfsAccess(sqlite3_vfs *pVfs, const char *zName, int flags, int *pResOut) {
  (void)pVfs;
  return gpRealVfs->xAccess(gpRealVfs, zName, flags, pResOut);
}

static int storeVfsFullPathname(sqlite3_vfs *pVfs, const char *zName, int nOut, char *zOut) {
  (void)pVfs;
  return gpRealVfs->xFullPathname(gpRealVfs, zName, nOut, zOut);
}

static void *storeVfsDlOpen(sqlite3_vfs *pVfs, const char *zPath) {
  (void)pVfs;
  return gpRealVfs->xDlOpen(gpRealVfs, zPath);
}

static void storeVfsDlError(sqlite3_vfs *pVfs, int nByte, char *zErrMsg) {
  (void)pVfs;
  gpRealVfs->xDlError(gpRealVfs, nByte, zErrMsg);
}

static void (*storeVfsDlSym(sqlite3_vfs *pVfs, void *pH, const char *zSym))(void) {
  (void)pVfs;
  return gpRealVfs->xDlSym(gpRealVfs, pH, zSym);
}

static void storeVfsDlClose(sqlite3_vfs *pVfs, void *pHandle) {
  (void)pVfs;
  gpRealVfs->xDlClose(gpRealVfs, pHandle);
}

static int storeVfsRandomness(sqlite3_vfs *pVfs, int nByte, char *zOut) {
  (void)pVfs;
  return gpRealVfs->xRandomness(gpRealVfs, nByte, zOut);
}

static int storeVfsSleep(sqlite3_vfs *pVfs, int nMicro) {
  (void)pVfs;
  return gpRealVfs->xSleep(gpRealVfs, nMicro);
}

static int storeVfsCurrentTime(sqlite3_vfs *pVfs, double *pOut) {
  (void)pVfs;
  return gpRealVfs->xCurrentTime(gpRealVfs, pOut);
}

static int storeVfsGetLastError(sqlite3_vfs *pVfs, int n, char *z) {
  (void)pVfs;
  return gpRealVfs->xGetLastError ? gpRealVfs->xGetLastError(gpRealVfs, n, z) : 0;
}

static int storeVfsCurrentTimeInt64(sqlite3_vfs *pVfs, sqlite3_int64 *pOut) {
  (void)pVfs;
  return gpRealVfs->xCurrentTimeInt64(gpRealVfs, pOut);
}

static void storeVfsInit(void) {
  if (!configWalGather()) return;     /* off: plain default VFS */
  gpRealVfs = sqlite3_vfs_find(NULL);
  /* Only over the unix VFSes, whose files have the version-3 methods
  ** (shared memory, mmap) forwarded here; anything else is used as is. */
  if (gpRealVfs == NULL || gpRealVfs->iVersion < 2 || gpRealVfs->zName == NULL
      || strncmp(gpRealVfs->zName, "unix", 4) != 0) {
    return;
  }
  memset(&gStoreVfs, 0, sizeof gStoreVfs);
  gStoreVfs.iVersion = 2;
  gStoreVfs.szOsFile = (int)sizeof(StoreVfsFile) + gpRealVfs->szOsFile;
  gStoreVfs.mxPathname = gpRealVfs->mxPathname;
  gStoreVfs.zName = STORE_VFS_NAME;
  gStoreVfs.xOpen = storeVfsOpen;
  gStoreVfs.xDelete = storeVfsDelete;
  gStoreVfs.xAccess = storeVfsAccess;
  gStoreVfs.xFullPathname = storeVfsFullPathname;
  gStoreVfs.xDlOpen = storeVfsDlOpen;
  gStoreVfs.xDlError = storeVfsDlError;
  gStoreVfs.xDlSym = storeVfsDlSym;
  gStoreVfs.xDlClose = storeVfsDlClose;
  gStoreVfs.xRandomness = storeVfsRandomness;
  gStoreVfs.xSleep = storeVfsSleep;
  gStoreVfs.xCurrentTime = storeVfsCurrentTime;
  gStoreVfs.xGetLastError = storeVfsGetLastError;
  gStoreVfs.xCurrentTimeInt64 = storeVfsCurrentTimeInt64;
  memset(&gStoreIo, 0, sizeof gStoreIo);
  gStoreIo.iVersion = 3;
  gStoreIo.xClose = storeVfsClose;
  gStoreIo.xRead = storeVfsRead;
  gStoreIo.xWrite = storeVfsWrite;
  gStoreIo.xTruncate = storeVfsTruncate;
  gStoreIo.xSync = storeVfsSync;
  gStoreIo.xFileSize = storeVfsFileSize;
  gStoreIo.xLock = storeVfsLock;
  gStoreIo.xUnlock = storeVfsUnlock;
  gStoreIo.xCheckReservedLock = storeVfsCheckReservedLock;
  gStoreIo.xFileControl = storeVfsFileControl;
  gStoreIo.xSectorSize = storeVfsSectorSize;
  gStoreIo.xDeviceCharacteristics = storeVfsDeviceCharacteristics;
  gStoreIo.xShmMap = storeVfsShmMap;
  gStoreIo.xShmLock = storeVfsShmLock;
  gStoreIo.xShmBarrier = storeVfsShmBarrier;
  gStoreIo.xShmUnmap = storeVfsShmUnmap;
  gStoreIo.xFetch = storeVfsFetch;
  gStoreIo.xUnfetch = storeVfsUnfetch;
  gStoreVfsRc = sqlite3_vfs_register(&gStoreVfs, 0);
}

/* The host unloads the library (dlclose) when its last connection that
** loaded it closes; SQLite's VFS list must not keep a pointer into the
** unmapped code and data, or the next sqlite3_open anywhere in the process
** walks into it (seen: a forked child's first open crashed). */
__attribute__((destructor)) static void storeVfsUnload(void) {
  if (gStoreVfsRc == SQLITE_OK) {
    sqlite3_vfs_unregister(&gStoreVfs);
    gStoreVfsRc = SQLITE_ERROR;
  }
}

const char *storeVfs(void) {
  pthread_once(&gStoreVfsOnce, storeVfsInit);
  return gStoreVfsRc == SQLITE_OK ? STORE_VFS_NAME : NULL;
}
