/*
** store_cache.c — the process-wide cache of open stores: a path to a
** Store, opened once and shared by every connection and thread of the
** process (SPEC.md §4).
**
** Takes in paths (storeAcquire); gives out referenced Stores; calls the
** connection, revalidation, schema-loading and tuning files below it
** (store_context.h) to open a Store's writer and first schema.
**
** HOW IT WORKS
** The cache is a list of Stores in LRU order (most recent first), keyed by
** canonical path (realpath of the directory + the file name, so a file that
** does not exist yet still has one name) and the file's dev/inode, read
** with stat() on every acquire: a file replaced at the same path has a new
** inode and becomes a new Store. The common call skips realpath: an
** absolute path is looked up as is, a relative one by the inode it names.
** Each Store also remembers the db_path text last checked to name it and
** when (zSeen, tSeen): a read (storeAcquireRead) given that text within
** configPathCheckMs() takes the Store without the stat, a system call that
** was a fifth of a point lookup; a write always checks.
** The old inode cannot be recycled for the new file while the cached Store
** keeps its writer connection open on it. A Store with references is never
** evicted; idle ones beyond configStoreCache() (default 16, 0 = no caching)
** are closed, LRU first.
**
** Locks, always taken in this order and never held while running SQL
** (except a store's write mutex, which IS the write serialisation):
**   cache->mutex   the list and every Store's nRef / bCached
**   store->mutex   the idle pool and the published schema
**
** The in-memory store "" is never cached; its one connection serves as
** writer and reader, and it is freed at its last release.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "config.h"
#include "store_context.h"

/* The process-wide cache. */
typedef struct StoreCache {
  pthread_mutex_t mutex;
  Store *pFirst, *pLast;        /* most / least recently used */
  int nStore;
} StoreCache;

/* Statically initialised: taking the cache needs no lock of its own (a
** lazy creation under a second mutex cost a lock pair per call). */
static StoreCache gCache = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0};

static StoreCache *storeCache(void) {
  return &gCache;
}

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
  storeGroupFini(p);
  sqlite3_free(p->zPath);
  sqlite3_free(p->zWalPath);
  sqlite3_free(p->zSeen);
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
  storeGroupInit(p);
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
    if (rc == SQLITE_OK) rc = storeSchemaLoad(pW->base.db, &p->pSchema, pzErr);
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
      *pzErr = rc == SQLITE_NOMEM ? sqlite3_mprintf("cannot open store %s: out of memory", p->zPath)
               : storeOpenErrMsg(p->zPath, p->pWriter ? p->pWriter->db : NULL);
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

/* The cached file store whose path was checked as zPath less than the
** bound ago, or NULL. Cache mutex held. */
static Store *storeFindSeen(StoreCache *c, const char *zPath, sqlite3_int64 tNow) {
  sqlite3_int64 nBound = (sqlite3_int64)configPathCheckMs() * 1000;
  if (nBound <= 0) return NULL;
  for (Store *p = c->pFirst; p; p = p->pNext) {
    if (p->zSeen && tNow - p->tSeen < nBound && strcmp(p->zSeen, zPath) == 0) return p;
  }
  return NULL;
}

/* Records that zPath named p's file at tSeen. Cache mutex held; without
** memory nothing is recorded (the next read checks again). */
static void storeNoteSeen(Store *p, const char *zPath, sqlite3_int64 tSeen) {
  if (p->bMemory) return;
  if (p->zSeen == NULL || strcmp(p->zSeen, zPath) != 0) {
    char *z = sqlite3_mprintf("%s", zPath);
    if (z == NULL) return;
    sqlite3_free(p->zSeen);
    p->zSeen = z;
  }
  p->tSeen = tSeen;
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

/* A regular file with more than one name is refused (SQLITE_CANTOPEN, the
** message in *pzErr): SQLite names the -wal and -shm after the path it was
** given, so two names of one file get two WALs and a commit through one is
** lost to, or overwritten by, the other (SQLite's "How To Corrupt" lists
** hard links). Checked at every acquire, so a link made later is refused
** from the next check on. */
static int storeCheckLinks(const char *zPath, const struct stat *pSt, char **pzErr) {
  if (!S_ISREG(pSt->st_mode) || pSt->st_nlink <= 1) return SQLITE_OK;
  storeErr(pzErr, sqlite3_mprintf("store %s has %lld hard links: SQLite keeps its WAL"
                                  " beside each name, so two names corrupt it; use one path",
                                  zPath, (long long)pSt->st_nlink));
  return SQLITE_CANTOPEN;
}

int storeAcquire(const char *zPath, Store **ppStore, char **pzErr) {
  StoreCache *c = storeCache();
  Store *p = NULL, *pClose = NULL;
  char *zCanon;
  struct stat st;
  int bExists, rc;
  sqlite3_int64 tCheck;

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
  tCheck = configNowUs();     /* before the check: the record is never newer */
  if (stat(zPath, &st) == 0) {
    if (storeCheckLinks(zPath, &st, pzErr) != SQLITE_OK) return SQLITE_CANTOPEN;
    /* The common call names a cached store by its canonical path: then one
    ** stat() proves it is the same file, and realpath (a getcwd, readlink
    ** and stat per component, a large part of a point lookup) is skipped.
    ** A relative path (e.g. "out/store-s.db") names
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
      storeNoteSeen(p, zPath, tCheck);
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
  if (bExists && storeCheckLinks(zPath, &st, pzErr) != SQLITE_OK) {
    sqlite3_free(zCanon);
    return SQLITE_CANTOPEN;
  }

  pthread_mutex_lock(&c->mutex);
  p = storeFind(c, zCanon);
  if (p && bExists && p->dev == st.st_dev && p->ino == st.st_ino) {
    p->nRef++;
    storeUnlink(c, p);
    storeLinkFirst(c, p);
    storeNoteSeen(p, zPath, tCheck);
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
    /* The file opened is the one the path named at the check only if it
    ** existed then (an open that created it raced nobody we can tell). */
    if (p->bCached && bExists && p->dev == st.st_dev && p->ino == st.st_ino) {
      storeNoteSeen(p, zPath, tCheck);
    }
  }
  pthread_mutex_unlock(&c->mutex);
  storeFreeList(pClose);
  *ppStore = p;
  return SQLITE_OK;
}

int storeAcquireSeen(const char *zPath, Store **ppStore) {
  StoreCache *c;
  Store *p;
  *ppStore = NULL;
  if (zPath == NULL || zPath[0] == 0) return SQLITE_NOTFOUND;
  c = storeCache();
  pthread_mutex_lock(&c->mutex);
  p = storeFindSeen(c, zPath, configNowUs());
  if (p) {
    p->nRef++;
    if (c->pFirst != p) {
      storeUnlink(c, p);
      storeLinkFirst(c, p);
    }
  }
  pthread_mutex_unlock(&c->mutex);
  *ppStore = p;
  return p ? SQLITE_OK : SQLITE_NOTFOUND;
}

int storeStillSeen(Store *p, const char *zPath) {
  StoreCache *c;
  sqlite3_int64 nBound = (sqlite3_int64)configPathCheckMs() * 1000;
  int bSeen;
  if (p == NULL || p->bMemory || p->pHost || nBound <= 0) return 0;
  c = storeCache();
  pthread_mutex_lock(&c->mutex);
  bSeen = p->bCached && p->zSeen && configNowUs() - p->tSeen < nBound && strcmp(p->zSeen, zPath) == 0;
  pthread_mutex_unlock(&c->mutex);
  return bSeen;
}

int storeAcquireRead(const char *zPath, Store **ppStore, char **pzErr) {
  if (storeAcquireSeen(zPath, ppStore) == SQLITE_OK) return SQLITE_OK;
  return storeAcquire(zPath, ppStore, pzErr);
}

void storeRelease(Store *p) {
  StoreCache *c;
  Store *pClose = NULL;
  if (p == NULL) return;
  if (p->pHost) { storeHostRelease(p); return; }
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

void storeFileId(const Store *p, sqlite3_uint64 *pDev, sqlite3_uint64 *pIno) {
  *pDev = p->bMemory ? 0 : (sqlite3_uint64)p->dev;
  *pIno = p->bMemory ? 0 : (sqlite3_uint64)p->ino;
}
