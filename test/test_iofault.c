/*
** test_iofault.c — I/O failures and power loss under a file store, the way
** SQLite's own fault tests do it (test_vfs.c's injected errors, test6.c's
** simulated crash): a VFS shim over the default unix VFS, registered as
** the process's default before any store opens, so the store's own WAL
** VFS (store_vfs.c, which wraps the default VFS it finds) sits on top of
** it and every byte the store writes passes through here.
**
** THE SHIM
**  - Injected errors: the N-th xRead, xWrite, xSync, xTruncate, xFileSize
**    or xLock (one kind per point) fails with that call's SQLITE_IOERR_*
**    code, once (transient) or, for xWrite's SQLITE_FULL (a full disk), from
**    then on until the test turns it off.
**  - Power loss: for the store's files (main database, WAL, rollback
**    journal) it keeps, per file path, the size at the last xSync and the
**    content as of then of every 512-byte sector written or truncated away
**    since. At the N-th write, sync or truncate the "power fails": every
**    file is rewritten as the disk could hold it then — the size synced or
**    the size reached, and for each unsynced sector at random the new bytes,
**    the old ones or (rarely) garbage, so a write may be torn — and the
**    process ends at once (_exit), issuing no more I/O. Workloads that
**    crash run in a forked child; the parent is the restart.
**  - Real fsyncs are skipped: durability is what the shim decides on a
**    crash, and the sweep stays within seconds.
**
** THE WORKLOAD (tWork): a schema transaction, then transactions of
** different sizes (a few datoms, or ~150 KB of strings spanning many WAL
** frames and gathered writes), each marked by its own value of :t/k on
** every entity it makes and an upsert of a counter entity's :t/n, with a
** read between them; the WAL thresholds are small (main), so the store's
** own PASSIVE and RESTART checkpoints and its tuning (ANALYZE, managed
** indexes) run inside the sweep.
**
** THE CHECKS (tVerify), after each point, on the store as found (in the
** same process after an error, after a restart after power loss, and again
** after closing everything): PRAGMA integrity_check is ok; each
** transaction's datoms are all there or none (entities with the marker,
** each with all its attributes, and their log rows; one tx id each); every
** transaction edn_t acknowledged (returned a report) is there — at
** synchronous=FULL all of them, at NORMAL a prefix of them; the counter
** holds the largest marker found; the next edn_t works and is found.
**
** IOFAULT_LONG=1 sweeps every point (both synchronous modes, several crash
** seeds) instead of the quick mode's stride; it prints the figures.
*/
#include <fcntl.h>
#include <sys/wait.h>
#include "tuhost.h"
#include "store.h"

/* ------------------------------------------------------------- the shim */

enum { IO_READ, IO_WRITE, IO_SYNC, IO_TRUNC, IO_SIZE, IO_LOCK, IO_NKIND };
static const char *const azKind[IO_NKIND] = {"read", "write", "sync", "truncate", "size", "lock"};

#define IO_SECTOR 512

/* A file's unsynced state: one per path (every connection's handle on the
** file shares it). aOld[i] is sector i as of the last sync (NULL: not
** changed since); nSynced the size then. */
typedef struct IoTrack IoTrack;
struct IoTrack {
  char *zName;
  sqlite3_int64 nSynced;
  int nSlot;
  unsigned char **aOld;
  IoTrack *pNext;
};

typedef struct IoFile IoFile;
struct IoFile {
  sqlite3_file base;
  sqlite3_file *pReal;        /* the unix VFS's file, right after us */
  IoTrack *pTrack;            /* main db, WAL or journal: tracked for power loss */
  int bWal;
};

static struct {
  sqlite3_vfs *pReal;
  int eKind;                  /* the kind of call that fails */
  int nLeft;                  /* calls of that kind before the failure; -1: none */
  int bPersist;               /* keeps failing after the first */
  int bWalOnly;               /* only WAL files' calls count and fail */
  int bTrace;                 /* IOFAULT_TRACE: writes and syncs to stderr */
  int rcFail;
  int nFired;                 /* failures given */
  int aSeen[IO_NKIND];        /* calls seen, per kind */
  int nCrashLeft;             /* writes, syncs, truncates of tracked files before power fails */
  int nMutating;              /* tracked writes, syncs, truncates seen */
  unsigned uSeed;
  IoTrack *pTracks;
} gIo;

static sqlite3_vfs gIoVfs;
static sqlite3_io_methods gIoMethods;

/* The code a failing call of kind e gives. */
static int ioFailCode(int e) {
  switch (e) {
    case IO_READ: return SQLITE_IOERR_READ;
    case IO_WRITE: return SQLITE_IOERR_WRITE;
    case IO_SYNC: return SQLITE_IOERR_FSYNC;
    case IO_TRUNC: return SQLITE_IOERR_TRUNCATE;
    case IO_SIZE: return SQLITE_IOERR_FSTAT;
    default: return SQLITE_IOERR_LOCK;
  }
}

/* Counts one call of kind e on p; nonzero when it is to fail. */
static int ioShouldFail(IoFile *p, int e) {
  if (gIo.bWalOnly && !p->bWal) return 0;
  gIo.aSeen[e]++;
  if (gIo.eKind != e || gIo.nLeft < 0) return 0;
  if (gIo.nLeft > 0) {
    gIo.nLeft--;
    return 0;
  }
  gIo.nFired++;
  if (!gIo.bPersist) gIo.nLeft = -1;
  return 1;
}

static unsigned ioRand(void) {
  gIo.uSeed = gIo.uSeed * 1103515245u + 12345u;
  return (gIo.uSeed >> 16) & 0x7fff;
}

/* Power fails now: each tracked file becomes what the disk may hold (see
** the header), then the process ends. Written with plain POSIX calls: the
** SQLite handles are dead from here. */
static void ioCrash(void) {
  for (IoTrack *t = gIo.pTracks; t; t = t->pNext) {
    int fd = t->nSynced < 0 ? -1 : open(t->zName, O_RDWR);
    struct stat st;
    off_t nNow, nFinal;
    if (t->nSynced < 0) continue;         /* not written since it was opened */
    if (fd < 0) continue;
    fstat(fd, &st);
    nNow = st.st_size;
    nFinal = (nNow != t->nSynced && (ioRand() & 1)) ? nNow : t->nSynced;
    for (int i = 0; i < t->nSlot; i++) {
      unsigned char aNew[IO_SECTOR];
      off_t iOfst = (off_t)i * IO_SECTOR;
      int r;
      if (t->aOld[i] == NULL) continue;
      memset(aNew, 0, sizeof aNew);
      if (iOfst < nNow && pread(fd, aNew, IO_SECTOR, iOfst) < 0) abort();
      r = (int)(ioRand() % 16);
      if (r < 7) {
        memcpy(aNew, t->aOld[i], IO_SECTOR);         /* never reached the disk */
      } else if (r == 7) {
        for (int j = 0; j < IO_SECTOR; j++) aNew[j] = (unsigned char)ioRand();   /* torn */
      }                                               /* else: it did */
      if (iOfst < nFinal) {
        size_t n = (size_t)(nFinal - iOfst < IO_SECTOR ? nFinal - iOfst : IO_SECTOR);
        if (pwrite(fd, aNew, n, iOfst) != (ssize_t)n) abort();
      }
    }
    if (ftruncate(fd, nFinal) != 0) abort();
    close(fd);
  }
  _exit(0);
}

/* Counts a tracked write, sync or truncate; the power fails at the chosen
** one (after a write or truncate is done, so its sectors may be torn;
** before a sync). bAfter: called after the operation. */
static void ioCrashPoint(IoFile *p, int bAfter) {
  if (p->pTrack == NULL || gIo.nCrashLeft < 0) return;
  if (!bAfter) {
    gIo.nMutating++;
    if (gIo.nCrashLeft > 0) gIo.nCrashLeft--;
    else gIo.nCrashLeft = -2;           /* this one */
    return;
  }
  if (gIo.nCrashLeft == -2) ioCrash();
}

static IoTrack *ioTrackFind(const char *zName) {
  IoTrack *t;
  for (t = gIo.pTracks; t; t = t->pNext) {
    if (strcmp(t->zName, zName) == 0) return t;
  }
  t = calloc(1, sizeof *t);
  t->zName = strdup(zName);
  t->nSynced = -1;
  t->pNext = gIo.pTracks;
  gIo.pTracks = t;
  return t;
}

static void ioTrackReset(IoTrack *t) {
  for (int i = 0; i < t->nSlot; i++) {
    free(t->aOld[i]);
    t->aOld[i] = NULL;
  }
}

/* Forgets every file's unsynced state (between points). */
static void ioTracksFree(void) {
  while (gIo.pTracks) {
    IoTrack *t = gIo.pTracks;
    gIo.pTracks = t->pNext;
    ioTrackReset(t);
    free(t->aOld);
    free(t->zName);
    free(t);
  }
}

/* Keeps sectors [iFirst, iLast] as they are on the file now, where not
** kept since the last sync. */
static void ioTrackSave(IoFile *p, sqlite3_int64 iFirst, sqlite3_int64 iLast) {
  IoTrack *t = p->pTrack;
  if (t->nSynced < 0) {
    sqlite3_int64 n = 0;
    p->pReal->pMethods->xFileSize(p->pReal, &n);
    t->nSynced = n;
  }
  if (iLast >= t->nSlot) {
    int nNew = (int)iLast + 64;
    t->aOld = realloc(t->aOld, sizeof(unsigned char *) * (size_t)nNew);
    memset(t->aOld + t->nSlot, 0, sizeof(unsigned char *) * (size_t)(nNew - t->nSlot));
    t->nSlot = nNew;
  }
  for (sqlite3_int64 i = iFirst; i <= iLast; i++) {
    sqlite3_int64 j = i;
    unsigned char *a;
    if (t->aOld[i]) continue;
    /* the run of sectors not kept yet, read at once (a short read
    ** zero-fills: bytes past the end are none) */
    while (j < iLast && t->aOld[j + 1] == NULL) j++;
    a = calloc((size_t)(j - i + 1), IO_SECTOR);
    p->pReal->pMethods->xRead(p->pReal, a, (int)((j - i + 1) * IO_SECTOR), i * IO_SECTOR);
    for (sqlite3_int64 m = i; m <= j; m++) {
      t->aOld[m] = malloc(IO_SECTOR);
      memcpy(t->aOld[m], a + (m - i) * IO_SECTOR, IO_SECTOR);
    }
    free(a);
    i = j;
  }
}

static int ioClose(sqlite3_file *pFile) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xClose(p->pReal);
}

static int ioRead(sqlite3_file *pFile, void *pBuf, int n, sqlite3_int64 iOfst) {
  IoFile *p = (IoFile *)pFile;
  if (ioShouldFail(p, IO_READ)) return gIo.rcFail;
  return p->pReal->pMethods->xRead(p->pReal, pBuf, n, iOfst);
}

static int ioWrite(sqlite3_file *pFile, const void *pBuf, int n, sqlite3_int64 iOfst) {
  IoFile *p = (IoFile *)pFile;
  int rc;
  if (gIo.bTrace) {
    fprintf(stderr, "write %s %d at %lld%s\n", p->pTrack ? p->pTrack->zName : "(temp)", n, iOfst,
            gIo.eKind == IO_WRITE && gIo.nLeft == 0 ? " FAILS" : "");
  }
  if (ioShouldFail(p, IO_WRITE)) return gIo.rcFail;
  ioCrashPoint(p, 0);
  if (p->pTrack && gIo.nCrashLeft != -1 && n > 0) {
    ioTrackSave(p, iOfst / IO_SECTOR, (iOfst + n - 1) / IO_SECTOR);
  }
  rc = p->pReal->pMethods->xWrite(p->pReal, pBuf, n, iOfst);
  ioCrashPoint(p, 1);
  return rc;
}

static int ioTruncate(sqlite3_file *pFile, sqlite3_int64 size) {
  IoFile *p = (IoFile *)pFile;
  int rc;
  if (ioShouldFail(p, IO_TRUNC)) return gIo.rcFail;
  ioCrashPoint(p, 0);
  if (p->pTrack && gIo.nCrashLeft != -1) {
    sqlite3_int64 nNow = 0;
    p->pReal->pMethods->xFileSize(p->pReal, &nNow);
    if (nNow > size) ioTrackSave(p, size / IO_SECTOR, (nNow - 1) / IO_SECTOR);
  }
  rc = p->pReal->pMethods->xTruncate(p->pReal, size);
  ioCrashPoint(p, 1);
  return rc;
}

static int ioSync(sqlite3_file *pFile, int flags) {
  IoFile *p = (IoFile *)pFile;
  (void)flags;
  if (ioShouldFail(p, IO_SYNC)) return gIo.rcFail;
  if (gIo.bTrace) fprintf(stderr, "sync %s\n", p->pTrack ? p->pTrack->zName : "(temp)");
  ioCrashPoint(p, 0);
  if (gIo.nCrashLeft == -2) ioCrash();    /* before the sync */
  if (p->pTrack) {
    sqlite3_int64 n = 0;
    p->pReal->pMethods->xFileSize(p->pReal, &n);
    ioTrackReset(p->pTrack);
    p->pTrack->nSynced = n;
  }
  return SQLITE_OK;                       /* the shim decides durability */
}

static int ioFileSize(sqlite3_file *pFile, sqlite3_int64 *pSize) {
  IoFile *p = (IoFile *)pFile;
  if (ioShouldFail(p, IO_SIZE)) return gIo.rcFail;
  return p->pReal->pMethods->xFileSize(p->pReal, pSize);
}

static int ioLock(sqlite3_file *pFile, int eLock) {
  IoFile *p = (IoFile *)pFile;
  if (ioShouldFail(p, IO_LOCK)) return gIo.rcFail;
  return p->pReal->pMethods->xLock(p->pReal, eLock);
}

static int ioUnlock(sqlite3_file *pFile, int eLock) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xUnlock(p->pReal, eLock);
}

static int ioCheckReservedLock(sqlite3_file *pFile, int *pOut) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xCheckReservedLock(p->pReal, pOut);
}

static int ioFileControl(sqlite3_file *pFile, int op, void *pArg) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xFileControl(p->pReal, op, pArg);
}

static int ioSectorSize(sqlite3_file *pFile) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xSectorSize(p->pReal);
}

static int ioDeviceCharacteristics(sqlite3_file *pFile) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xDeviceCharacteristics(p->pReal);
}

static int ioShmMap(sqlite3_file *pFile, int iPg, int pgsz, int bExtend, void volatile **pp) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xShmMap(p->pReal, iPg, pgsz, bExtend, pp);
}

static int ioShmLock(sqlite3_file *pFile, int offset, int n, int flags) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xShmLock(p->pReal, offset, n, flags);
}

static void ioShmBarrier(sqlite3_file *pFile) {
  IoFile *p = (IoFile *)pFile;
  p->pReal->pMethods->xShmBarrier(p->pReal);
}

static int ioShmUnmap(sqlite3_file *pFile, int bDelete) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xShmUnmap(p->pReal, bDelete);
}

static int ioFetch(sqlite3_file *pFile, sqlite3_int64 iOfst, int n, void **pp) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xFetch(p->pReal, iOfst, n, pp);
}

static int ioUnfetch(sqlite3_file *pFile, sqlite3_int64 iOfst, void *pPage) {
  IoFile *p = (IoFile *)pFile;
  return p->pReal->pMethods->xUnfetch(p->pReal, iOfst, pPage);
}

static int ioOpen(sqlite3_vfs *pVfs, const char *zName, sqlite3_file *pFile, int flags, int *pOutFlags) {
  IoFile *p = (IoFile *)pFile;
  int rc;
  (void)pVfs;
  memset(p, 0, sizeof *p);
  p->pReal = (sqlite3_file *)&p[1];
  rc = gIo.pReal->xOpen(gIo.pReal, zName, p->pReal, flags, pOutFlags);
  if (p->pReal->pMethods == NULL) {
    pFile->pMethods = NULL;
    return rc;
  }
  pFile->pMethods = &gIoMethods;
  if (rc == SQLITE_OK && zName
      && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL))) {
    p->pTrack = ioTrackFind(zName);
  }
  p->bWal = (flags & SQLITE_OPEN_WAL) != 0;
  return rc;
}

static int ioDelete(sqlite3_vfs *pVfs, const char *zName, int syncDir) {
  (void)pVfs;
  /* a deleted file is gone for good (SQLite deletes a WAL only once it
  ** is checkpointed and the database synced) */
  for (IoTrack *t = gIo.pTracks; t; t = t->pNext) {
    if (strcmp(t->zName, zName) == 0) {
      ioTrackReset(t);
      t->nSynced = 0;
    }
  }
  return gIo.pReal->xDelete(gIo.pReal, zName, syncDir);
}

static int ioAccess(sqlite3_vfs *pVfs, const char *zName, int flags, int *pOut) {
  (void)pVfs;
  return gIo.pReal->xAccess(gIo.pReal, zName, flags, pOut);
}

static int ioFullPathname(sqlite3_vfs *pVfs, const char *zName, int nOut, char *zOut) {
  (void)pVfs;
  return gIo.pReal->xFullPathname(gIo.pReal, zName, nOut, zOut);
}

static void *ioDlOpen(sqlite3_vfs *pVfs, const char *z) { (void)pVfs; return gIo.pReal->xDlOpen(gIo.pReal, z); }
static void ioDlError(sqlite3_vfs *pVfs, int n, char *z) { (void)pVfs; gIo.pReal->xDlError(gIo.pReal, n, z); }
static void (*ioDlSym(sqlite3_vfs *pVfs, void *pH, const char *z))(void) {
  (void)pVfs;
  return gIo.pReal->xDlSym(gIo.pReal, pH, z);
}
static void ioDlClose(sqlite3_vfs *pVfs, void *pH) { (void)pVfs; gIo.pReal->xDlClose(gIo.pReal, pH); }
static int ioRandomness(sqlite3_vfs *pVfs, int n, char *z) { (void)pVfs; return gIo.pReal->xRandomness(gIo.pReal, n, z); }
static int ioSleep(sqlite3_vfs *pVfs, int n) { (void)pVfs; return gIo.pReal->xSleep(gIo.pReal, n); }
static int ioCurrentTime(sqlite3_vfs *pVfs, double *p) { (void)pVfs; return gIo.pReal->xCurrentTime(gIo.pReal, p); }
static int ioGetLastError(sqlite3_vfs *pVfs, int n, char *z) {
  (void)pVfs;
  return gIo.pReal->xGetLastError ? gIo.pReal->xGetLastError(gIo.pReal, n, z) : 0;
}
static int ioCurrentTimeInt64(sqlite3_vfs *pVfs, sqlite3_int64 *p) {
  (void)pVfs;
  return gIo.pReal->xCurrentTimeInt64(gIo.pReal, p);
}

/* Registers the shim as the default VFS, once per process, before any
** store opens. Its name starts with "unix" because store_vfs.c wraps only
** the unix VFSes (it forwards their version-3 methods, which we do too). */
static void ioInstall(void) {
  if (gIo.pReal) return;
  gIo.pReal = sqlite3_vfs_find(NULL);
  gIo.nLeft = -1;
  gIo.nCrashLeft = -1;
  gIoVfs.iVersion = 2;
  gIoVfs.szOsFile = (int)sizeof(IoFile) + gIo.pReal->szOsFile;
  gIoVfs.mxPathname = gIo.pReal->mxPathname;
  gIoVfs.zName = "unix-iofault";
  gIoVfs.xOpen = ioOpen;
  gIoVfs.xDelete = ioDelete;
  gIoVfs.xAccess = ioAccess;
  gIoVfs.xFullPathname = ioFullPathname;
  gIoVfs.xDlOpen = ioDlOpen;
  gIoVfs.xDlError = ioDlError;
  gIoVfs.xDlSym = ioDlSym;
  gIoVfs.xDlClose = ioDlClose;
  gIoVfs.xRandomness = ioRandomness;
  gIoVfs.xSleep = ioSleep;
  gIoVfs.xCurrentTime = ioCurrentTime;
  gIoVfs.xGetLastError = ioGetLastError;
  gIoVfs.xCurrentTimeInt64 = ioCurrentTimeInt64;
  gIoMethods.iVersion = 3;
  gIoMethods.xClose = ioClose;
  gIoMethods.xRead = ioRead;
  gIoMethods.xWrite = ioWrite;
  gIoMethods.xTruncate = ioTruncate;
  gIoMethods.xSync = ioSync;
  gIoMethods.xFileSize = ioFileSize;
  gIoMethods.xLock = ioLock;
  gIoMethods.xUnlock = ioUnlock;
  gIoMethods.xCheckReservedLock = ioCheckReservedLock;
  gIoMethods.xFileControl = ioFileControl;
  gIoMethods.xSectorSize = ioSectorSize;
  gIoMethods.xDeviceCharacteristics = ioDeviceCharacteristics;
  gIoMethods.xShmMap = ioShmMap;
  gIoMethods.xShmLock = ioShmLock;
  gIoMethods.xShmBarrier = ioShmBarrier;
  gIoMethods.xShmUnmap = ioShmUnmap;
  gIoMethods.xFetch = ioFetch;
  gIoMethods.xUnfetch = ioUnfetch;
  if (sqlite3_vfs_register(&gIoVfs, 1) != SQLITE_OK) abort();
}

/* No failure, no crash, counts cleared. */
static void ioQuiet(void) {
  gIo.nLeft = -1;
  gIo.bPersist = 0;
  gIo.bWalOnly = 0;
  gIo.nCrashLeft = -1;
  gIo.nFired = 0;
  gIo.nMutating = 0;
  memset(gIo.aSeen, 0, sizeof gIo.aSeen);
}

/* --------------------------------------------------------- the workload */

static int gbDebug = 0;       /* IOFAULT_DEBUG: each step's outcome to stderr */

#define T_STEPS 7          /* the schema transaction, then T_STEPS - 1 data ones */

static const char *const zSchemaTx =
  "[{:db/ident :t/k :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/index true}"
  " {:db/ident :t/i :db/valueType :db.type/long :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/v :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
  "  :db/unique :db.unique/identity}"
  " {:db/ident :t/n :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]";

/* Entities transaction k (1 ..) makes: every third one is large. */
static int tEntities(int k) { return k % 3 == 2 ? 24 : 3; }
static int tPayload(int k) { return k % 3 == 2 ? 1500 : 20; }

/* Transaction k's EDN (malloc'd). */
static char *tTxEdn(int k) {
  int nEnt = tEntities(k), nPay = tPayload(k);
  size_t nAlloc = (size_t)nEnt * ((size_t)nPay + 80) + 200;
  char *z = malloc(nAlloc), *zPay = malloc((size_t)nPay + 1);
  size_t n = 0;
  for (int i = 0; i < nPay; i++) zPay[i] = (char)('a' + (k * 7 + i) % 26);
  zPay[nPay] = 0;
  n += (size_t)snprintf(z + n, nAlloc - n, "[{:t/name \"counter\" :t/n %d}", k);
  for (int j = 0; j < nEnt; j++) {
    n += (size_t)snprintf(z + n, nAlloc - n, " {:t/k %d :t/i %d :t/v \"%d-%s\"}", k, j, j, zPay);
  }
  snprintf(z + n, nAlloc - n, "]");
  free(zPay);
  return z;
}

/* Runs zSql on the host (?1 the store, ?2 zArg); 1 when it gave a row
** that is not an error. */
static int tCall(sqlite3 *db, const char *zSql, const char *zPath, const char *zArg, char **pzOut) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL), bOk = 0;
  if (pzOut) *pzOut = NULL;
  ck_assert_int_eq(rc, SQLITE_OK);
  sqlite3_bind_text(pStmt, 1, zPath, -1, SQLITE_TRANSIENT);
  if (zArg) sqlite3_bind_text(pStmt, 2, zArg, -1, SQLITE_TRANSIENT);
  rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    const char *z = (const char *)sqlite3_column_text(pStmt, 0);
    bOk = 1;
    if (pzOut) *pzOut = strdup(z ? z : "NULL");
  } else if (pzOut) {
    *pzOut = strdup(sqlite3_errmsg(db));
  }
  sqlite3_finalize(pStmt);
  return bOk;
}

/* Step iStep of the workload: transaction iStep (0: the schema), then a
** read. Returns 1 when edn_t acknowledged it. */
static int tStep(sqlite3 *db, const char *zPath, int iStep) {
  char *zTx = iStep == 0 ? strdup(zSchemaTx) : tTxEdn(iStep), *zOut = NULL;
  int bAck = tCall(db, "SELECT edn_t(?1, ?2)", zPath, zTx, &zOut);
  if (bAck) ck_assert_msg(strncmp(zOut, "{\"tx_id\":", 9) == 0, "step %d: %s", iStep, zOut);
  if (gbDebug) fprintf(stderr, "  step %d: %.100s\n", iStep, zOut);
  free(zOut);
  free(zTx);
  /* a read, which the failures reach too */
  tCall(db, "SELECT count(*) FROM edn_q(?1, '[:find ?e ?v :where [?e :t/k ?v]]')", zPath, NULL, NULL);
  return bAck;
}

/* ----------------------------------------------------------- the checks */

static sqlite3_int64 tInt(sqlite3 *db, const char *zSql, sqlite3_int64 iArg) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 v = -1;
  ck_assert_msg(sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL) == SQLITE_OK, "%s: %s", zSql,
                sqlite3_errmsg(db));
  sqlite3_bind_int64(pStmt, 1, iArg);
  if (sqlite3_step(pStmt) == SQLITE_ROW) v = sqlite3_column_int64(pStmt, 0);
  sqlite3_finalize(pStmt);
  return v;
}

/* Checks the store at zPath as found (see the header). aAck[k]: edn_t
** acknowledged transaction k; bPrefix: only a prefix of those need be
** there (synchronous=NORMAL after power loss). Returns a bit set of the
** transactions found. zWhat names the point in messages. */
static unsigned tVerify(const char *zPath, const int *aAck, int bPrefix, const char *zWhat) {
  sqlite3 *raw = NULL;
  unsigned mFound = 0;
  sqlite3_int64 aK = -1, aI, aV, aN, iMax = -1;
  struct stat st;
  char *zCheck;
  int bGap = 0;
  if (stat(zPath, &st) != 0) {
    for (int k = 0; k < T_STEPS; k++) ck_assert_msg(!aAck[k], "%s: no store file, tx %d acknowledged", zWhat, k);
    return 0;
  }
  ck_assert_int_eq(sqlite3_open_v2(zPath, &raw, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
  zCheck = tuQuery(raw, "PRAGMA integrity_check", NULL, NULL);
  ck_assert_msg(strcmp(zCheck, "ok") == 0 || strcmp(zCheck, "ERROR: no such table: datoms") == 0,
                "%s: integrity_check: %s", zWhat, zCheck);
  free(zCheck);
  if (tInt(raw, "SELECT count(*) FROM sqlite_master WHERE name = 'idents'", 0) == 1) {
    aK = tInt(raw, "SELECT e FROM idents WHERE v = ':t/k'", 0);
  }
  if (aK >= 0) {
    mFound |= 1u;
    aI = tInt(raw, "SELECT e FROM idents WHERE v = ':t/i'", 0);
    aV = tInt(raw, "SELECT e FROM idents WHERE v = ':t/v'", 0);
    aN = tInt(raw, "SELECT e FROM idents WHERE v = ':t/n'", 0);
    ck_assert_msg(aI > 0 && aV > 0 && aN > 0, "%s: the schema transaction is half there", zWhat);
    for (int k = 1; k < T_STEPS; k++) {
      char zSql[600];
      sqlite3_int64 nEnt, nFull, nTx, nLog;
      sqlite3_snprintf(sizeof zSql, zSql, "SELECT count(*) FROM datoms WHERE a = %lld AND v = ?1", aK);
      nEnt = tInt(raw, zSql, k);
      sqlite3_snprintf(sizeof zSql, zSql,
                       "SELECT count(*) FROM datoms m WHERE m.a = %lld AND m.v = ?1"
                       " AND EXISTS (SELECT 1 FROM datoms d WHERE d.e = m.e AND d.a = %lld AND d.tx = m.tx)"
                       " AND EXISTS (SELECT 1 FROM datoms d WHERE d.e = m.e AND d.a = %lld AND d.tx = m.tx)",
                       aK, aI, aV);
      nFull = tInt(raw, zSql, k);
      sqlite3_snprintf(sizeof zSql, zSql, "SELECT count(DISTINCT tx) FROM datoms WHERE a = %lld AND v = ?1", aK);
      nTx = tInt(raw, zSql, k);
      sqlite3_snprintf(sizeof zSql, zSql,
                       "SELECT count(*) FROM timelined_transactions WHERE a = %lld AND v = ?1 AND added = 1"
                       " AND tx IN (SELECT tx FROM datoms WHERE a = %lld AND v = ?1)", aK, aK);
      nLog = tInt(raw, zSql, k);
      ck_assert_msg(nEnt == 0 || (nEnt == tEntities(k) && nFull == nEnt && nTx == 1 && nLog == nEnt),
                    "%s: tx %d half applied: %lld marked entities of %d, %lld whole, %lld tx ids, %lld log rows",
                    zWhat, k, nEnt, tEntities(k), nFull, nTx, nLog);
      if (nEnt > 0) {
        mFound |= 1u << k;
        iMax = k;
      }
    }
    {
      char zSql[200];
      sqlite3_int64 nCounter;
      sqlite3_snprintf(sizeof zSql, zSql, "SELECT count(*) FROM datoms WHERE a = %lld", aN);
      nCounter = tInt(raw, zSql, 0);
      sqlite3_snprintf(sizeof zSql, zSql, "SELECT v FROM datoms WHERE a = %lld", aN);
      ck_assert_msg(nCounter == (iMax > 0 ? 1 : 0) && (iMax < 0 || tInt(raw, zSql, 0) == iMax),
                    "%s: the counter is %lld (%lld datoms), the last tx found %lld", zWhat,
                    tInt(raw, zSql, 0), nCounter, iMax);
    }
  }
  sqlite3_close(raw);
  for (int k = 0; k < T_STEPS; k++) {
    int bFound = (mFound >> k) & 1;
    if (!aAck[k]) continue;
    if (bPrefix) {
      if (!bFound) bGap = 1;
      else ck_assert_msg(!bGap, "%s: acknowledged tx %d found after a lost earlier one", zWhat, k);
    } else {
      ck_assert_msg(bFound, "%s: acknowledged tx %d lost", zWhat, k);
    }
  }
  return mFound;
}

/* After the checks: the next edn_t works on the store as found, and its
** transaction is found; the extension reads the store (its count of
** marked entities agrees with the raw one). */
static void tNextWorks(sqlite3 *db, const char *zPath, unsigned mFound, const char *zWhat) {
  char *zOut = NULL;
  int nWant = 0;
  if (!(mFound & 1u)) {
    ck_assert_msg(tCall(db, "SELECT edn_t(?1, ?2)", zPath, zSchemaTx, &zOut), "%s: schema after: %s", zWhat, zOut);
    free(zOut);
  }
  ck_assert_msg(tCall(db, "SELECT edn_t(?1, '[{:t/k 1000 :t/i 0 :t/v \"after\"}]')", zPath, NULL, &zOut),
                "%s: the next edn_t: %s", zWhat, zOut);
  free(zOut);
  for (int k = 1; k < T_STEPS; k++) {
    if ((mFound >> k) & 1) nWant += tEntities(k);
  }
  ck_assert_msg(tCall(db, "SELECT edn_q(?1, '[:find (count ?e) . :where [?e :t/k ?k] [(< ?k 1000)]]')", zPath, NULL,
                      &zOut), "%s: edn_q after: %s", zWhat, zOut);
  {
    char zWant[64];
    snprintf(zWant, sizeof zWant, nWant ? "{\"result\":%d}" : "{\"result\":null}", nWant);
    ck_assert_msg(strcmp(zOut, zWant) == 0 || (nWant == 0 && strcmp(zOut, "{\"result\":0}") == 0),
                  "%s: edn_q counts %s, the file %d", zWhat, zOut, nWant);
  }
  free(zOut);
}

/* ------------------------------------------------------------ the sweeps */

static int gLong = 0;
static int gnPoints = 0, gnAck = 0, gnFound = 0;

/* Everything closed: the process holds no store file. */
static void tRestart(void) {
  ioQuiet();
  storeCacheClear();
  ck_assert_int_eq(storeCacheCount(), 0);
}

/* Calls of each kind in one fault-free run of the workload. */
static void tCountCalls(int bWalOnly, int *aSeen, int *pnMutating) {
  const char *zPath = tuTempPath("count.db");
  sqlite3 *db = tuOpenHost();
  char zSidecar[300];
  unlink(zPath);
  snprintf(zSidecar, sizeof zSidecar, "%s-wal", zPath);
  unlink(zSidecar);
  ioQuiet();
  gIo.bWalOnly = bWalOnly;
  gIo.nCrashLeft = 1 << 30;     /* count the tracked writes too */
  for (int k = 0; k < T_STEPS; k++) ck_assert(tStep(db, zPath, k));
  memcpy(aSeen, gIo.aSeen, sizeof gIo.aSeen);
  *pnMutating = gIo.nMutating;
  sqlite3_close(db);
  tRestart();
  ioTracksFree();
}

/* The point's store file: fresh each time. */
static const char *tFreshPath(void) {
  static char zPath[300];
  char zSide[320];
  snprintf(zPath, sizeof zPath, "%s", tuTempPath("fault.db"));
  unlink(zPath);
  snprintf(zSide, sizeof zSide, "%s-wal", zPath);
  unlink(zSide);
  snprintf(zSide, sizeof zSide, "%s-shm", zPath);
  unlink(zSide);
  snprintf(zSide, sizeof zSide, "%s-journal", zPath);
  unlink(zSide);
  return zPath;
}

/* One injected-error point: call n of kind eKind fails. Returns 0 when the
** workload ran past it without meeting the failure (the sweep is over). */
static int tErrorPoint(int eKind, int n, int bPersist, int bWalOnly, const char *zSync) {
  const char *zPath = tFreshPath();
  sqlite3 *db = tuOpenHost();
  int aAck[T_STEPS] = {0}, iFail = -1;
  char zWhat[160];
  unsigned mFound;
  configSetSynchronous(zSync);
  ioQuiet();
  gIo.eKind = eKind;
  gIo.nLeft = n;
  gIo.bPersist = bPersist;
  gIo.bWalOnly = bWalOnly;
  gIo.rcFail = bPersist && eKind == IO_WRITE ? SQLITE_FULL : ioFailCode(eKind);
  for (int k = 0; k < T_STEPS; k++) {
    int nBefore = gIo.nFired;
    aAck[k] = tStep(db, zPath, k);
    if (gIo.nFired > nBefore && iFail < 0) {
      /* the failure came in this step: the store as the caller finds it */
      iFail = k;
      gIo.nLeft = -1;
      snprintf(zWhat, sizeof zWhat, "%s %s #%d%s (%s, step %d)", bPersist ? "persistent" : "transient",
               azKind[eKind], n, bWalOnly ? " of the WAL" : "", zSync, k);
      if (gbDebug) fprintf(stderr, "%s ack=%d\n", zWhat, aAck[k]);
      tVerify(zPath, aAck, 0, zWhat);
      if (!aAck[k]) {
        /* the next edn_t works: the caller tries the failed one again */
        aAck[k] = tStep(db, zPath, k);
        ck_assert_msg(aAck[k], "%s: the failed step again failed", zWhat);
      }
    } else if (iFail >= 0) {
      ck_assert_msg(aAck[k], "%s: step %d after the failure failed", zWhat, k);
    }
  }
  if (iFail < 0) {
    sqlite3_close(db);
    tRestart();
    ioTracksFree();
    return 0;
  }
  /* and again after everything closed (the failed transaction may have left
  ** frames behind it that recovery reads) */
  sqlite3_close(db);
  tRestart();
  db = tuOpenHost();
  mFound = tVerify(zPath, aAck, 0, zWhat);
  tNextWorks(db, zPath, mFound, zWhat);
  sqlite3_close(db);
  tRestart();
  ioTracksFree();
  gnPoints++;
  for (int k = 0; k < T_STEPS; k++) {
    gnAck += aAck[k];
    gnFound += aAck[k] && ((mFound >> k) & 1);
  }
  return 1;
}

/* One power-loss point: the power fails at the n-th tracked write, sync
** or truncate, in a child process; the parent restarts on the files as
** left. Returns 0 when the workload ended before that point. */
static int tCrashPoint(int n, unsigned uSeed, const char *zSync) {
  const char *zPath = tFreshPath();
  int aPipe[2], aAck[T_STEPS] = {0}, status = 0;
  pid_t pid;
  char zWhat[160], c;
  unsigned mFound;
  sqlite3 *db;
  ck_assert_int_eq(pipe(aPipe), 0);
  pid = fork();
  ck_assert(pid >= 0);
  if (pid == 0) {
    close(aPipe[0]);
    db = tuOpenHost();
    configSetSynchronous(zSync);
    ioQuiet();
    gIo.nCrashLeft = n;
    gIo.uSeed = uSeed;
    for (int k = 0; k < T_STEPS; k++) {
      char cAck = (char)('0' + k);
      if (tStep(db, zPath, k) && write(aPipe[1], &cAck, 1) != 1) _exit(3);
    }
    _exit(2);                           /* never crashed */
  }
  close(aPipe[1]);
  while (read(aPipe[0], &c, 1) == 1) aAck[c - '0'] = 1;
  close(aPipe[0]);
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status), "crash child %d died: signal %d", n, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (WEXITSTATUS(status) == 2) return 0;
  ck_assert_int_eq(WEXITSTATUS(status), 0);
  snprintf(zWhat, sizeof zWhat, "power loss at write/sync #%d seed %u (%s)", n, uSeed, zSync);
  ioTracksFree();
  db = tuOpenHost();
  mFound = tVerify(zPath, aAck, strcmp(zSync, "FULL") != 0, zWhat);
  tNextWorks(db, zPath, mFound, zWhat);
  sqlite3_close(db);
  tRestart();
  ioTracksFree();
  gnPoints++;
  for (int k = 0; k < T_STEPS; k++) {
    gnAck += aAck[k];
    gnFound += aAck[k] && ((mFound >> k) & 1);
  }
  return 1;
}

/* The figures of one sweep (Check runs each test in a process of its own). */
static void tReport(const char *zWhat, int nPoints0) {
  fprintf(stderr, "iofault: %d %s points; transactions acknowledged %d, found %d\n", gnPoints - nPoints0,
          zWhat, gnAck, gnFound);
  gnAck = gnFound = 0;
}

START_TEST(test_iofault_errors) {
  int aSeen[IO_NKIND], nMutating, nPoints0 = gnPoints;
  if (getenv("IOFAULT_ONE")) {
    /* one point, for debugging: "kind n persist walonly sync", e.g. "1 5 0 0 NORMAL" */
    int e = 0, n = 0, b = 0, w = 0;
    char zSync[16] = "FULL";
    sscanf(getenv("IOFAULT_ONE"), "%d %d %d %d %15s", &e, &n, &b, &w, zSync);
    tErrorPoint(e, n, b, w, zSync);
    return;
  }
  tCountCalls(0, aSeen, &nMutating);
  fprintf(stderr, "iofault: one run: %d reads %d writes %d syncs %d truncates %d sizes %d locks\n",
          aSeen[IO_READ], aSeen[IO_WRITE], aSeen[IO_SYNC], aSeen[IO_TRUNC], aSeen[IO_SIZE], aSeen[IO_LOCK]);
  for (int iSync = 0; iSync < (gLong ? 2 : 1); iSync++) {
    const char *zSync = iSync == 0 ? "FULL" : "NORMAL";
    for (int e = 0; e < IO_NKIND; e++) {
      /* quick: about 24 points of each kind, spread over the run */
      int nStep = gLong ? 1 : aSeen[e] / 24 + 1;
      for (int bPersist = 0; bPersist < 2; bPersist++) {
        if (bPersist && e != IO_WRITE) continue;
        for (int n = bPersist ? nStep / 2 : 0; tErrorPoint(e, n, bPersist, 0, zSync); n += nStep) {}
      }
    }
  }
  tReport("error", nPoints0);
}
END_TEST

/* Every call on the WAL fails in turn, at FULL and NORMAL: the WAL is where
** a commit becomes durable and visible, and where the store's own VFS
** (store_vfs.c) gathers writes, so a failure there must reach the
** commit, whichever call of SQLite's meets it. */
START_TEST(test_iofault_wal) {
  int aSeen[IO_NKIND], nMutating, nPoints0 = gnPoints;
  static const int aKind[] = {IO_WRITE, IO_SYNC, IO_READ, IO_SIZE, IO_TRUNC};
  tCountCalls(1, aSeen, &nMutating);
  fprintf(stderr, "iofault: one run: %d WAL reads %d writes %d syncs %d truncates %d sizes\n",
          aSeen[IO_READ], aSeen[IO_WRITE], aSeen[IO_SYNC], aSeen[IO_TRUNC], aSeen[IO_SIZE]);
  for (int iSync = 0; iSync < 2; iSync++) {
    const char *zSync = iSync == 0 ? "FULL" : "NORMAL";
    for (size_t i = 0; i < sizeof aKind / sizeof aKind[0]; i++) {
      int nStep = gLong ? 1 : aSeen[aKind[i]] / 40 + 1;
      for (int bPersist = 0; bPersist < 2; bPersist++) {
        if (bPersist && aKind[i] != IO_WRITE) continue;
        for (int n = 0; tErrorPoint(aKind[i], n, bPersist, 1, zSync); n += nStep) {}
      }
    }
  }
  tReport("WAL error", nPoints0);
}
END_TEST

START_TEST(test_iofault_power) {
  int aSeen[IO_NKIND], nMutating, nPoints0 = gnPoints;
  tCountCalls(0, aSeen, &nMutating);
  fprintf(stderr, "iofault: one run: %d tracked writes, syncs and truncates\n", nMutating);
  for (int iSync = 0; iSync < 2; iSync++) {
    const char *zSync = iSync == 0 ? "FULL" : "NORMAL";
    int nStep = gLong ? 1 : nMutating / 60 + 1;
    for (unsigned uSeed = 1; uSeed <= (gLong ? 3u : 1u); uSeed++) {
      for (int n = (int)uSeed % nStep; tCrashPoint(n, uSeed * 7919u + (unsigned)n, zSync); n += nStep) {}
    }
  }
  tReport("power-loss", nPoints0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("iofault");
  TCase *tc;
  SRunner *sr;
  int nFailed;
  gLong = getenv("IOFAULT_LONG") && strcmp(getenv("IOFAULT_LONG"), "0") != 0;
  gbDebug = getenv("IOFAULT_DEBUG") != NULL;
  gIo.bTrace = getenv("IOFAULT_TRACE") != NULL;
  /* Small WAL thresholds: the store's own checkpoints (PASSIVE every
  ** 64 KiB of new frames, RESTART from 256 KiB) and its tuning run inside
  ** the workload. Read once, so set before anything asks. */
  setenv("MENTAT_WAL_CHECKPOINT_BYTES", "32768", 1);
  setenv("MENTAT_WAL_RESTART_BYTES", "262144", 1);
  setenv("MENTAT_TUNE_MIN_DATOMS", "40", 1);
  ioInstall();
  /* one tcase per sweep, so make faults runs them side by side (CK_RUN_CASE) */
  tc = tuFaultCase("errors", gLong ? 3600 : 120);
  tcase_add_test(tc, test_iofault_errors);
  suite_add_tcase(s, tc);
  tc = tuFaultCase("wal", gLong ? 3600 : 120);
  tcase_add_test(tc, test_iofault_wal);
  suite_add_tcase(s, tc);
  tc = tuFaultCase("power", gLong ? 3600 : 120);
  tcase_add_test(tc, test_iofault_power);
  suite_add_tcase(s, tc);
  sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  nFailed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nFailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
