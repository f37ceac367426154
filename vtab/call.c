/*
** call.c — the call context of the SQL objects (see call.h): db_path
** checks, store, reader and watch taken in one order and given back in the
** reverse one.
*/
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "config.h"
#include "call.h"
#include "sqlio.h"
#include "store_host.h"
#include "tx.h"
#include "pull.h"

/* Connects mentat_host_state on host (host_state.c), whose disconnect at
** the connection's close frees its host-store state. */
static int vcallHostHook(sqlite3 *host, char **pzErr) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(host, "SELECT 1 FROM mentat_host_state", -1, &pStmt, NULL);
  sqlite3_finalize(pStmt);
  if (rc != SQLITE_OK) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("cannot set up host stores on this connection: %s",
                             sqlite3_errmsg(host));
  }
  return rc;
}

/* The store `db_path` zPath names for host connection host: a host store
** for ':main', ':temp', ':<attached>' (store_host.h, ../shared/SPEC.md
** §3a), else the file store (storeAcquire). bWrite: edn_t (a read-only
** host database is refused). *ppStore as storeAcquire's; errors in
** *pzErr. */
static int vcallAcquireStore(sqlite3 *host, const char *zPath, int bWrite, Store **ppStore,
                             char **pzErr) {
  int bNew = 0, rc;
  if (zPath[0] != ':') {
    return bWrite ? storeAcquire(zPath, ppStore, pzErr) : storeAcquireRead(zPath, ppStore, pzErr);
  }
  rc = storeHostAcquire(host, zPath + 1, bWrite, ppStore, &bNew, pzErr);
  if (rc == SQLITE_OK && bNew) {
    rc = vcallHostHook(host, pzErr);
    if (rc != SQLITE_OK) {
      storeRelease(*ppStore);
      *ppStore = NULL;
      storeHostClose(host);
    }
  }
  return rc;
}

/* Sets *pzErr to the message for a db_path that cannot be a store;
** returns SQLITE_ERROR, or SQLITE_NOMEM when the message cannot be made. */
static int vcallPathError(char **pzErr, char *zMsg) {
  sqlite3_free(*pzErr);
  *pzErr = zMsg;
  return zMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* What a host connection knows about "is this path my own database"
** (vcallCheckPath), so a read pays no stat of its own: the identity of the
** file its main database is (taken once: a connection's main database never
** changes, ATTACH and DETACH only add and drop others, and the open file
** stays the same inode when its path is moved or replaced), and the paths
** found not to be it, each trusted for configPathCheckMs() as the store
** cache trusts a path (store.h). Found by the host pointer; dropped when the
** host closes (vcallHostGone), so a later connection at the same address
** starts afresh. */
#define VCALL_SEEN 4
#define VCALL_SEEN_PATH 256
typedef struct VHostSeen VHostSeen;
struct VHostSeen {
  sqlite3 *host;
  const char *zMain;        /* sqlite3_db_filename(host, "main") it was taken for */
  dev_t dev;
  ino_t ino;
  struct {
    int n;                  /* 0: unused */
    sqlite3_int64 tSeen;    /* configNowUs() before the stat */
    char z[VCALL_SEEN_PATH];
  } aPath[VCALL_SEEN];
  int iNext;                /* the slot the next verdict replaces */
  VHostSeen *pNext;
};
#define VCALL_SEEN_BUCKETS 64
static pthread_mutex_t gSeenMutex = PTHREAD_MUTEX_INITIALIZER;
static VHostSeen *gapSeen[VCALL_SEEN_BUCKETS];

static unsigned vcallSeenBucket(sqlite3 *host) {
  return (unsigned)(((uintptr_t)host >> 4) % VCALL_SEEN_BUCKETS);
}

/* host's entry, or NULL. Seen mutex held. */
static VHostSeen *vcallSeenFind(sqlite3 *host) {
  VHostSeen *p = gapSeen[vcallSeenBucket(host)];
  while (p && p->host != host) p = p->pNext;
  return p;
}

void vcallHostGone(sqlite3 *host) {
  VHostSeen **pp, *p = NULL;
  pthread_mutex_lock(&gSeenMutex);
  for (pp = &gapSeen[vcallSeenBucket(host)]; *pp; pp = &(*pp)->pNext) {
    if ((*pp)->host == host) {
      p = *pp;
      *pp = p->pNext;
      break;
    }
  }
  pthread_mutex_unlock(&gSeenMutex);
  sqlite3_free(p);
}

/* True when host found zPath (n bytes) not to be its own database less
** than the bound ago. */
static int vcallSeenRecently(sqlite3 *host, const char *zMain, const char *zPath, int n) {
  sqlite3_int64 nBound = (sqlite3_int64)configPathCheckMs() * 1000;
  int bSeen = 0;
  VHostSeen *p;
  if (nBound <= 0 || n >= VCALL_SEEN_PATH) return 0;
  pthread_mutex_lock(&gSeenMutex);
  p = vcallSeenFind(host);
  if (p && p->zMain == zMain) {
    sqlite3_int64 tNow = configNowUs();
    for (int i = 0; i < VCALL_SEEN && !bSeen; i++) {
      bSeen = p->aPath[i].n == n && tNow - p->aPath[i].tSeen < nBound
              && memcmp(p->aPath[i].z, zPath, (size_t)n) == 0;
    }
  }
  pthread_mutex_unlock(&gSeenMutex);
  return bSeen;
}

/* The identity of host's main database file into *pMain: remembered, or
** taken now (and remembered when there is memory). Returns 0 when it cannot
** be known (the file is gone from its path before the first check). */
static int vcallMainIdentity(sqlite3 *host, const char *zMain, struct stat *pMain) {
  VHostSeen *p, *pNew;
  int bKnown = 0;
  pthread_mutex_lock(&gSeenMutex);
  p = vcallSeenFind(host);
  if (p && p->zMain == zMain) {
    pMain->st_dev = p->dev;
    pMain->st_ino = p->ino;
    bKnown = 1;
  }
  pthread_mutex_unlock(&gSeenMutex);
  if (bKnown) return 1;
  if (stat(zMain, pMain) != 0) return 0;
  pNew = sqlite3_malloc64(sizeof *pNew);
  if (pNew == NULL) return 1;   /* known for this call; taken again next time */
  memset(pNew, 0, sizeof *pNew);
  pNew->host = host;
  pNew->zMain = zMain;
  pNew->dev = pMain->st_dev;
  pNew->ino = pMain->st_ino;
  pthread_mutex_lock(&gSeenMutex);
  p = vcallSeenFind(host);
  if (p) {
    /* Only a main database whose name moved in memory: start afresh. */
    p->zMain = zMain;
    p->dev = pMain->st_dev;
    p->ino = pMain->st_ino;
    memset(p->aPath, 0, sizeof p->aPath);
  } else {
    unsigned b = vcallSeenBucket(host);
    pNew->pNext = gapSeen[b];
    gapSeen[b] = pNew;
    pNew = NULL;
  }
  pthread_mutex_unlock(&gSeenMutex);
  sqlite3_free(pNew);
  return 1;
}

/* Records that zPath (n bytes) was found at tSeen not to be host's own. */
static void vcallSeenNote(sqlite3 *host, const char *zPath, int n, sqlite3_int64 tSeen) {
  VHostSeen *p;
  if (n >= VCALL_SEEN_PATH) return;
  pthread_mutex_lock(&gSeenMutex);
  p = vcallSeenFind(host);
  if (p) {
    int i;
    for (i = 0; i < VCALL_SEEN; i++) {
      if (p->aPath[i].n == n && memcmp(p->aPath[i].z, zPath, (size_t)n) == 0) break;
    }
    if (i == VCALL_SEEN) {
      i = p->iNext;
      p->iNext = (p->iNext + 1) % VCALL_SEEN;
      memcpy(p->aPath[i].z, zPath, (size_t)n);
      p->aPath[i].n = n;
    }
    p->aPath[i].tSeen = tSeen;
  }
  pthread_mutex_unlock(&gSeenMutex);
}

/* The checks of vcallBegin's first step on zPath (n bytes, eType the
** argument's type before text conversion); bWrite: an edn_t, which checks
** the path on every call. */
static int vcallCheckPath(sqlite3 *host, int eType, const char *zPath, int n, int bWrite,
                          int *pbPure, char **pzErr) {
  const char *zMain;
  struct stat a, b;
  sqlite3_int64 tNow;
  *pbPure = 0;
  /* A number or blob would silently become a file named "1" or "Inf". */
  if (eType != SQLITE_TEXT) {
    return vcallPathError(pzErr, sqlite3_mprintf("db_path must be TEXT (a file name)"));
  }
  /* The store is opened as a plain file name, so these would create files
  ** literally named ":memory:" or "file:..."; say what to use instead. */
  if (strcmp(zPath, ":memory:") == 0 || strncmp(zPath, "file:", 5) == 0) {
    return vcallPathError(pzErr, sqlite3_mprintf("db_path %s is not supported: give a file name,"
                                                 " or '' for an in-memory store", zPath));
  }
  if ((int)strlen(zPath) != n) {
    return vcallPathError(pzErr, sqlite3_mprintf("db_path contains a NUL byte"));
  }
  if (n == 0) return SQLITE_OK;   /* the private in-memory store */
  if (zPath[0] == ':') return SQLITE_OK;   /* a host store (SPEC.md §3a) */
  zMain = sqlite3_db_filename(host, "main");
  if (zMain == NULL || zMain[0] == 0) {
    /* host in memory: the verdict holds for this path text for good */
    *pbPure = 1;
    return SQLITE_OK;
  }
  if (!bWrite && vcallSeenRecently(host, zMain, zPath, n)) return SQLITE_OK;
  /* Same file = same device and inode: robust against relative paths,
  ** symlinks, hard links and moved files, which a text comparison would
  ** miss. A path that does not exist yet cannot be the host's (open)
  ** database. */
  tNow = configNowUs();
  if (stat(zPath, &a) != 0) return SQLITE_OK;
  if (!vcallMainIdentity(host, zMain, &b)) return SQLITE_OK;
  if (a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
    return vcallPathError(pzErr, sqlite3_mprintf("db_path %s is the host's own database", zPath));
  }
  vcallSeenNote(host, zPath, n, tNow);
  return SQLITE_OK;
}

/* QueryOpts.xInterrupted: the compile of a big query polls the host. */
static int vcallCompileInterrupted(void *pArg) {
  return vcallInterrupted((VCall *)pArg);
}

/* Buffers for the arguments' text (sqlioTextIn: no copy by SQLite to add a
** terminator): a path and the common opts fit, longer ones are read in
** place. */
#define VCALL_PATH_BUF 512
#define VCALL_OPTS_BUF 1024

/* Parses the opts argument (pArg NULL or SQL NULL: none) into pOpts. */
static int vcallOpts(QueryOpts *pOpts, sqlite3_value *pArg, char **pzErr) {
  char aOpts[VCALL_OPTS_BUF];
  const char *zOpts = NULL;
  int nOpts = 0;
  if (pArg && sqlite3_value_type(pArg) != SQLITE_NULL) {
    int rc = sqlioTextIn(pArg, aOpts, (int)sizeof aOpts, &zOpts, &nOpts);
    if (rc != SQLITE_OK) return rc;
  }
  return qOptsParse(pOpts, zOpts, nOpts, pzErr);
}

/* edn_pull's opts (VCALL_PULL) take "with" alone. */
static int vcallPullOpts(const QueryOpts *p, char **pzErr) {
  if (p->nInput == 0 && !p->bAsOf && !p->bSince && !p->bHistory && !p->bExplain
      && !p->bWithReport && p->nSource == 0) {
    return SQLITE_OK;
  }
  return vcallPathError(pzErr, sqlite3_mprintf("opts: edn_pull takes \"with\" only"));
}

/* The with-span of vcallBegin (call.h): the store's write, the asOf
** rewind, the with-tx; pCall->pConn and pSchema then read the result. */
static int vcallWithBegin(VCall *pCall, QueryOpts *pOpts, char **pzErr) {
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL, *pNew = NULL;
  sqlite3_str *pReport = NULL;
  sqlite3 *pHostDb = storeHostDb(pCall->pStore);
  int rc;
  if (pHostDb) {
    /* Inside a statement that writes SQLite opens no savepoint, and a host
    ** store's write then joins the statement's: the span could not be
    ** undone alone, so it is refused there. */
    rc = sqlite3_exec(pHostDb, "SAVEPOINT mentat_with_probe", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(pHostDb, "RELEASE mentat_with_probe", NULL, NULL, NULL);
    if (rc == SQLITE_BUSY) {
      return vcallPathError(pzErr, sqlite3_mprintf(
          "\"with\" on host store %s cannot run inside a statement that writes (e.g. INSERT ..."
          " SELECT edn_q(...)): its transaction could not be undone alone", storePath(pCall->pStore)));
    }
    if (rc != SQLITE_OK) return rc;
  }
  rc = storeWriteBegin(pCall->pStore, &pConn, &pSchema, pzErr);
  if (rc != SQLITE_OK) return rc;
  pCall->pConn = pConn;
  pCall->pSchema = pSchema;
  pCall->bWith = 1;
  if (storeHostDb(pCall->pStore) == NULL) {
    /* The host's own lock is the host's to bound. */
    pCall->tWithDeadline = configNowMs() + configBusyTimeoutMs();
    pCall->watch.tDeadline = pCall->tWithDeadline;
  }
  pOpts->pDb = pConn->db;
  if (pOpts->bAsOf) {
    /* The instant names a tx by the store's txInstants before the rewind,
    ** as the asOf query would read them. */
    sqlite3_int64 iTx = pOpts->iAsOf;
    if (pOpts->pAsOfInst) rc = pullTxAtInstant(pConn->db, pOpts->pAsOfInst, &iTx, pzErr);
    if (rc == SQLITE_OK) rc = txRewind(pConn, pSchema, iTx, pzErr);
    pOpts->bAsOf = 0;
    pOpts->iAsOf = 0;
    pOpts->pAsOfInst = NULL;
    if (rc != SQLITE_OK) return rc;
  }
  if (pOpts->nSource) {
    /* The sources read the store without the with-tx (qSourcesWith); an
    ** instant names a tx by the log before it. */
    int i;
    rc = qSourcesWith(pCall->pStore, pSchema, pOpts, pzErr);
    for (i = 0; rc == SQLITE_OK && i < pOpts->nSource; i++) {
      QuerySource *pS = &pOpts->aSource[i];
      if (pS->pAsOfInst) rc = pullTxAtInstant(pConn->db, pS->pAsOfInst, &pS->iAsOf, pzErr);
      pS->pAsOfInst = NULL;
    }
    if (rc != SQLITE_OK) return rc;
  }
  pReport = sqlite3_str_new(NULL);
  rc = txWith(pConn, pSchema, pOpts->zWith, pOpts->nWith, pReport, &pNew, pzErr);
  if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pReport);
  if (rc == SQLITE_OK && pOpts->nSource) {
    /* the report starts {"tx_id":N (edn_t's): every tx before N is the store's */
    const char *zTx = strstr(sqlite3_str_value(pReport), "\"tx_id\":");
    if (zTx == NULL) rc = SQLITE_ERROR;
    else qSourcesWithBasis(pOpts, strtoll(zTx + 8, NULL, 10) - 1);
  }
  if (rc == SQLITE_OK && pNew) {
    schemaUnref(pCall->pSchema);
    pCall->pSchema = pNew;
  }
  if (rc == SQLITE_OK && pOpts->bWithReport) {
    pCall->pWithReport = pReport;
    pReport = NULL;
  }
  sqlite3_free(sqlite3_str_finish(pReport));
  return rc;
}

int vcallWithTimedOut(VCall *pCall, int rc, char **pzErr) {
  if (rc != SQLITE_INTERRUPT || pCall->tWithDeadline == 0 || configNowMs() <= pCall->tWithDeadline) {
    return rc;
  }
  return vcallPathError(pzErr, sqlite3_mprintf(
      "\"with\": the transaction and its query held the store's write lock past"
      " MENTAT_BUSY_TIMEOUT_MS (%d ms), the wait other writers are allowed; nothing was written",
      configBusyTimeoutMs()));
}

void vcallEndWith(VCall *pCall) {
  char *zErr = NULL;
  if (!pCall->bWith) return;
  pCall->watch.tDeadline = 0;
  /* Rolled back: nothing of the span stays, and the store's published
  ** schema was never replaced by the span's. Inside another writer's
  ** group commit (store_writer.c) only the span's savepoint is undone. */
  storeWriteEnd(pCall->pStore, pCall->pConn, 0, NULL, &zErr);
  sqlite3_free(zErr);
  pCall->bWith = 0;
  pCall->pConn = NULL;
}

/* The steps of vcallBegin after the path and opts checks. */
static int vcallOpen(VCall *pCall, sqlite3 *host, const char *zPath, int eKind,
                     QueryOpts *pOpts, char **pzErr) {
  int rc = SQLITE_OK, bWith;
  pCall->tWithDeadline = 0;
  if (pOpts && (eKind & VCALL_PULL)) rc = vcallPullOpts(pOpts, pzErr);
  eKind &= ~VCALL_PULL;
  /* A read with "with" writes (and rolls back): it opens the store as edn_t. */
  bWith = eKind != VCALL_WRITE && pOpts && pOpts->zWith;
  if (bWith) eKind = VCALL_WITH;
  if (rc == SQLITE_OK) {
    rc = vcallAcquireStore(host, zPath, eKind == VCALL_WRITE || bWith, &pCall->pStore, pzErr);
  }
  /* On a host store the query runs on the host: its SQL functions are
  ** callable (through proxies while the host database holds no store). */
  if (rc == SQLITE_OK && pOpts) pOpts->pHostDb = storeHostDb(pCall->pStore);
  if (eKind == VCALL_QUERY && pOpts && pOpts->bExplain) {
    /* No run whose first step the lazy reader's check could follow: the
    ** plan must come from a schema checked for the file as it is now. */
    eKind = VCALL_READ;
  }
  if (rc == SQLITE_OK && eKind == VCALL_QUERY) {
    rc = storeReaderLazy(pCall->pStore, &pCall->pConn, &pCall->pSchema, pzErr);
  } else if (rc == SQLITE_OK && eKind == VCALL_READ) {
    rc = storeReader(pCall->pStore, &pCall->pConn, &pCall->pSchema, pzErr);
  }
  if (rc == SQLITE_NOTFOUND && eKind != VCALL_WRITE && eKind != VCALL_WITH) {
    /* A host database without the store's tables reads as an empty store
    ** (as a new file store does); only edn_t creates them. */
    storeRelease(pCall->pStore);
    pCall->pStore = NULL;
    rc = storeAcquire("", &pCall->pStore, pzErr);
    if (rc == SQLITE_OK) rc = qSourcesRefuseFiles(pCall->pStore, pOpts, pzErr);
    if (rc == SQLITE_OK) rc = storeReader(pCall->pStore, &pCall->pConn, &pCall->pSchema, pzErr);
  }
  /* Other store files of opts "sources" are attached to the reader. On a
  ** lazy reader the run's first step checks $'s store as for any query
  ** (a newer state plans again, with the sources that read this store on
  ** the new schema: qSourcesSetMain); each other file's schema was checked
  ** as it was opened (qSourcesOpen), and the statement reads one snapshot
  ** of each file, as inside a read transaction begun on $'s store alone. */
  if (rc == SQLITE_OK && (eKind == VCALL_READ || eKind == VCALL_QUERY) && pOpts && pOpts->nSource) {
    rc = qSourcesOpen(pCall->pStore, &pCall->pConn, &pCall->pSchema, pOpts, pzErr);
  }
  if (rc != SQLITE_OK) {
    vcallEnd(pCall);
    return rc;
  }
  /* A with-span runs on the writer, which the thread's watch serves. */
  intrWatchBegin(&pCall->watch, host, pCall->pConn ? pCall->pConn->db : NULL);
  if (pOpts) {
    pOpts->xInterrupted = vcallCompileInterrupted;
    pOpts->pInterruptArg = pCall;
    pOpts->pDb = pCall->pConn ? pCall->pConn->db : NULL;
  }
  if (eKind == VCALL_WITH) {
    rc = vcallWithBegin(pCall, pOpts, pzErr);
    if (rc != SQLITE_OK) vcallEnd(pCall);
  }
  return rc;
}

int vcallBegin(VCall *pCall, sqlite3 *host, sqlite3_value *pPath, int eKind,
               QueryOpts *pOpts, sqlite3_value *pOptsArg, char **pzErr) {
  int eType = sqlite3_value_type(pPath);   /* before text conversion */
  char aPath[VCALL_PATH_BUF];
  const char *zPath;
  int nPath;
  int rc = sqlioTextIn(pPath, aPath, (int)sizeof aPath, &zPath, &nPath);
  if (rc == SQLITE_OK) {
    rc = vcallCheckPath(host, eType, zPath, nPath, eKind == VCALL_WRITE, &pCall->bPathPure, pzErr);
  }
  if (rc == SQLITE_OK && pOpts) rc = vcallOpts(pOpts, pOptsArg, pzErr);
  return rc == SQLITE_OK ? vcallOpen(pCall, host, zPath, eKind, pOpts, pzErr) : rc;
}

int vcallBeginText(VCall *pCall, sqlite3 *host, const char *zPath, int eKind,
                   QueryOpts *pOpts, const char *zOpts, int nOpts, char **pzErr) {
  return vcallBeginArgs(pCall, host, SQLITE_TEXT, zPath, (int)strlen(zPath), eKind, pOpts, zOpts,
                        nOpts, pzErr);
}

int vcallBeginArgs(VCall *pCall, sqlite3 *host, int eType, const char *zPath, int nPath,
                   int eKind, QueryOpts *pOpts, const char *zOpts, int nOpts, char **pzErr) {
  int rc = vcallCheckPath(host, eType, zPath, nPath, eKind == VCALL_WRITE, &pCall->bPathPure,
                          pzErr);
  if (rc == SQLITE_OK && pOpts) rc = qOptsParse(pOpts, zOpts, nOpts, pzErr);
  return rc == SQLITE_OK ? vcallOpen(pCall, host, zPath, eKind, pOpts, pzErr) : rc;
}

int vcallPark(VCall *pCall) {
  Store *p = pCall->pStore;
  if (p == NULL || pCall->pConn == NULL || pCall->bWith || pCall->pWithReport
      || storePath(p)[0] == 0 || storeHostDb(p) != NULL) {
    return 0;
  }
  storeReaderPark(p, pCall->pConn);
  return 1;
}

int vcallResume(VCall *pCall, sqlite3 *host, const char *zPath, int nPath, char **pzErr) {
  int rc = SQLITE_OK;
  if (!pCall->bPathPure) {
    int bPure = 0;
    rc = vcallCheckPath(host, SQLITE_TEXT, zPath, nPath, 0, &bPure, pzErr);
    if (rc != SQLITE_OK) return rc;
  }
  if (!storeStillSeen(pCall->pStore, zPath)) return SQLITE_NOTFOUND;
  return storeReaderResume(pCall->pStore, pCall->pConn, &pCall->pSchema);
}

void vcallEnd(VCall *pCall) {
  vcallEndWith(pCall);
  sqlite3_free(sqlite3_str_finish(pCall->pWithReport));
  pCall->pWithReport = NULL;
  intrWatchEnd(&pCall->watch);
  if (pCall->pConn) storeReaderDone(pCall->pStore, pCall->pConn);
  pCall->pConn = NULL;
  schemaUnref(pCall->pSchema);
  pCall->pSchema = NULL;
  if (pCall->pStore) storeRelease(pCall->pStore);
  pCall->pStore = NULL;
}

int vcallInterrupted(VCall *pCall) {
  return intrWatchInterrupted(&pCall->watch);
}

void vcallPause(VCall *pCall, int bPause) {
  intrWatchPause(&pCall->watch, bPause);
}
