/*
** query_plan_cache.c — the compiled plans a store connection keeps: a
** query's prepared plan from the connection's cache, or compiled
** (query_compile.c), prepared and kept.
**
** Takes a checked-out StoreConn, the schema snapshot, the query text and
** its inputs; gives a QueryPlan whose statement is prepared on that
** connection. The key is (schema generation, input shape, query text): the
** shape of the inputs shapes the SQL, their values are only bound. A hit
** costs building the key (in a stack buffer when it fits) and a scan of at
** most Q_CACHE_MAX plans, most recently used first; the least recently used
** plan is evicted. The most recent plan is compared first piece by piece,
** before the query text is copied into the key and hashed. The cache also holds the connection's pull statements
** and a reusable result string, freed with it. Calls the compiler and
** SQLite only.
*/
#include <string.h>
#include "query_plan_cache.h"
#include "query_compile.h"
#include "query_compile_host.h"
#include "pull.h"

/* Plans kept per connection: enough for an application's working set of
** queries, small enough that a scan of the list stays cheap. */
#define Q_CACHE_MAX 64

/* A statement kept by its SQL text (qCacheStmt). */
typedef struct QStmt QStmt;
struct QStmt {
  QStmt *pNext;          /* most recently used first */
  sqlite3_stmt *pStmt;
  unsigned h;
  int n;
  char z[1];             /* the SQL text, n bytes and a NUL (allocated with the node) */
};
#define Q_STMT_MAX 32

typedef struct QCache {
  QueryPlan *pHead;      /* most recently used first */
  int n;
  PullCache *pPull;      /* pull statements on this connection */
  sqlite3_str *pOut;     /* reusable result string (qCacheOutBuf) */
  QStmt *pStmts;         /* statements by SQL text (qCacheStmt) */
  int nStmt;
  sqlite3 *pCallHost;    /* the host whose functions this connection's proxies
                         ** call (qchProxies): set per run by qCachePlan */
  void *pSpareRun;       /* a closed run's memory (qCacheSpareRun) */
} QCache;

static void qCacheFree(void *p) {
  QCache *pCache = (QCache*)p;
  QueryPlan *pPlan, *pNext;
  if (pCache == NULL) return;
  for (pPlan = pCache->pHead; pPlan; pPlan = pNext) {
    pNext = pPlan->pNext;
    qPlanFree(pPlan);
  }
  pullCacheFree(pCache->pPull);
  sqlite3_free(sqlite3_str_finish(pCache->pOut));
  while (pCache->pStmts) {
    QStmt *pS = pCache->pStmts;
    pCache->pStmts = pS->pNext;
    sqlite3_finalize(pS->pStmt);
    sqlite3_free(pS);
  }
  sqlite3_free(pCache->pSpareRun);
  sqlite3_free(pCache);
}

static void qCacheUnlink(QCache *pCache, QueryPlan *p) {
  if (p->pPrev) p->pPrev->pNext = p->pNext;
  else pCache->pHead = p->pNext;
  if (p->pNext) p->pNext->pPrev = p->pPrev;
  p->pNext = p->pPrev = NULL;
  pCache->n--;
}

static void qCachePushFront(QCache *pCache, QueryPlan *p) {
  p->pPrev = NULL;
  p->pNext = pCache->pHead;
  if (pCache->pHead) pCache->pHead->pPrev = p;
  pCache->pHead = p;
  pCache->n++;
}

/* ------------------------------------------------------------ shapes */

/* A cache key under construction: in aBuf while it fits (the common
** case: no allocation per call), then on the heap. */
typedef struct QCacheKey {
  char *z;
  size_t n, nAlloc;
  int bOom;
  char aBuf[512];
} QCacheKey;

static void qCacheKeyInit(QCacheKey *k) {
  k->z = k->aBuf;
  k->n = 0;
  k->nAlloc = sizeof k->aBuf;
  k->bOom = 0;
}

static void qCacheKeyFree(QCacheKey *k) {
  if (k->z != k->aBuf) sqlite3_free(k->z);
  qCacheKeyInit(k);
}

static void qCacheKeyAppend(QCacheKey *k, const char *z, size_t n) {
  if (k->bOom) return;
  if (k->n + n > k->nAlloc) {
    size_t nNew = (k->n + n) * 2;
    char *zNew = sqlite3_malloc64(nNew);
    if (zNew == NULL) { k->bOom = 1; return; }
    memcpy(zNew, k->z, k->n);
    if (k->z != k->aBuf) sqlite3_free(k->z);
    k->z = zNew;
    k->nAlloc = nNew;
  }
  memcpy(k->z + k->n, z, n);
  k->n += n;
}

static void qCacheKeyChar(QCacheKey *k, char c) { qCacheKeyAppend(k, &c, 1); }

static void qCacheKeyInt(QCacheKey *k, sqlite3_int64 v) {
  char aBuf[24];
  int i = (int)sizeof aBuf;
  sqlite3_uint64 u = v < 0 ? (sqlite3_uint64)0 - (sqlite3_uint64)v : (sqlite3_uint64)v;
  do { aBuf[--i] = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
  if (v < 0) aBuf[--i] = '-';
  qCacheKeyAppend(k, aBuf + i, sizeof aBuf - (size_t)i);
}

/* EDN text of p appended to the key (rare shapes: rule sets, odd values). */
static void qCacheKeyEdn(QCacheKey *k, const EdnValue *p) {
  sqlite3_str *pStr = sqlite3_str_new(NULL);
  ednPrint(pStr, p);
  if (sqlite3_str_errcode(pStr) != SQLITE_OK) k->bOom = 1;
  else qCacheKeyAppend(k, sqlite3_str_value(pStr), (size_t)sqlite3_str_length(pStr));
  sqlite3_free(sqlite3_str_finish(pStr));
}

static void qCacheShapeOf(QCacheKey *pOut, const EdnValue *p, const Schema *pSchema, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return;
  switch (p->type) {
    case EDN_NIL: qCacheKeyChar(pOut, 'n'); break;
    case EDN_BOOL: qCacheKeyChar(pOut, 'b'); break;
    case EDN_INT: qCacheKeyChar(pOut, 'i'); break;
    case EDN_DOUBLE: qCacheKeyChar(pOut, 'd'); break;
    case EDN_STRING: qCacheKeyChar(pOut, 's'); break;
    case EDN_KEYWORD: qCacheKeyChar(pOut, 'k'); break;
    case EDN_INST: qCacheKeyChar(pOut, 't'); break;
    case EDN_UUID: qCacheKeyChar(pOut, 'u'); break;
    case EDN_VECTOR: case EDN_SET:
      /* A rule set shapes the SQL itself: its whole text is the shape. */
      if (p->u.c.n > 0 && p->u.c.a[0]->type == EDN_VECTOR && p->u.c.a[0]->u.c.n > 0
          && p->u.c.a[0]->u.c.a[0]->type == EDN_LIST) {
        qCacheKeyEdn(pOut, p);
        break;
      }
      /* a set is not a vector to (type x), which the compiler decides */
      if (p->type == EDN_SET) qCacheKeyChar(pOut, '#');
      qCacheKeyChar(pOut, '[');
      for (i = 0; i < p->u.c.n; i++) qCacheShapeOf(pOut, p->u.c.a[i], pSchema, iDepth + 1);
      /* [:a :b] is a lookup ref or a tuple by the schema (qPlanLookupRef) */
      if (pSchema && p->u.c.n == 2 && qPlanLookupRef(pSchema, p)) {
        qCacheKeyChar(pOut, 'L');
      }
      qCacheKeyChar(pOut, ']');
      break;
    default:
      qCacheKeyEdn(pOut, p);
      break;
  }
}

/* The filters of a database, appended to the key: "A" asOf ("a" as an
** instant), "S" since ("s"), "H" history; the txs are bound, an instant
** compiles into other SQL than a tx id. */
static void qCacheTimeKey(QCacheKey *pOut, int bAsOf, const EdnValue *pAsOfInst, int bSince,
                          const EdnValue *pSinceInst, int bHistory) {
  if (bAsOf) qCacheKeyChar(pOut, pAsOfInst ? 'a' : 'A');
  if (bSince) qCacheKeyChar(pOut, pSinceInst ? 's' : 'S');
  if (bHistory) qCacheKeyChar(pOut, 'H');
}

/* The shape of the inputs, appended to the key: their count, the time
** options, then one letter per input leaf type and brackets for vectors,
** e.g. "3:i,[s s],k" (an "L" marks a pair of keywords that pSchema reads
** as a lookup ref, qPlanLookupRef). */
static void qCacheShapeInto(QCacheKey *pOut, const QueryOpts *pOpts, const Schema *pSchema) {
  int i;
  qCacheKeyInt(pOut, pOpts ? pOpts->nInput : 0);
  if (pOpts) qCacheTimeKey(pOut, pOpts->bAsOf, pOpts->pAsOfInst, pOpts->bSince, pOpts->pSinceInst,
                           pOpts->bHistory);
  qCacheKeyChar(pOut, ':');
  for (i = 0; pOpts && i < pOpts->nInput; i++) {
    if (i) qCacheKeyChar(pOut, ',');
    qCacheShapeOf(pOut, pOpts->aInput[i], pSchema, 0);
  }
  /* The sources, in order (a parameter names its source by position): the
  ** name, the store (its attached schema name), the schema snapshot its
  ** idents resolved in, and the kind of filter (the tx is bound). */
  for (i = 0; pOpts && i < pOpts->nSource; i++) {
    const QuerySource *pS = &pOpts->aSource[i];
    qCacheKeyChar(pOut, ';');
    qCacheKeyAppend(pOut, pS->zName, strlen(pS->zName));
    qCacheKeyChar(pOut, '=');
    qCacheKeyAppend(pOut, pS->zDb, strlen(pS->zDb));
    qCacheKeyChar(pOut, '@');
    qCacheKeyInt(pOut, pS->pSchema ? schemaGeneration(pS->pSchema) : -1);
    qCacheTimeKey(pOut, pS->bAsOf, pS->pAsOfInst, pS->bSince, pS->pSinceInst, pS->bHistory);
  }
}

/* A key's hash, eight bytes a step (every call hashes its whole key, the
** query text included); collisions only cost the memcmp that settles them. */
static unsigned qCacheHash(const char *z, int n) {
  sqlite3_uint64 h = 0x9E3779B97F4A7C15ull ^ (sqlite3_uint64)n, w;
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, z + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  if (i < n) {
    w = 0;
    memcpy(&w, z + i, (size_t)(n - i));
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return (unsigned)(h ^ (h >> 29));
}

/* The connection's cache, created on first use; NULL on OOM. */
static QCache *qCacheOf(StoreConn *pConn) {
  QCache *pCache = (QCache*)pConn->pQueryCache;
  if (pCache == NULL) {
    pCache = sqlite3_malloc64(sizeof(QCache));
    if (pCache == NULL) return NULL;
    memset(pCache, 0, sizeof *pCache);
    pConn->pQueryCache = pCache;
    pConn->xQueryCacheFree = qCacheFree;
  }
  return pCache;
}

PullCache **qCachePulls(StoreConn *pConn) {
  QCache *pCache = qCacheOf(pConn);
  return pCache ? &pCache->pPull : NULL;
}

sqlite3_str **qCacheOutBuf(StoreConn *pConn) {
  QCache *pCache = qCacheOf(pConn);
  return pCache ? &pCache->pOut : NULL;
}

unsigned qCacheStmtHash(const char *zSql, int nSql) {
  return qCacheHash(zSql, nSql);
}

int qCacheStmt(StoreConn *pConn, const char *zSql, int nSql, sqlite3_stmt **ppStmt, int *pbOwn,
               char **pzErr) {
  return qCacheStmtHashed(pConn, zSql, nSql, qCacheHash(zSql, nSql), ppStmt, pbOwn, pzErr);
}

int qCacheStmtHashed(StoreConn *pConn, const char *zSql, int nSql, unsigned h,
                     sqlite3_stmt **ppStmt, int *pbOwn, char **pzErr) {
  QCache *pCache = qCacheOf(pConn);
  QStmt *pS, **pp;
  int rc;
  *ppStmt = NULL;
  *pbOwn = 0;
  if (pCache == NULL) return SQLITE_NOMEM;
  for (pp = &pCache->pStmts; (pS = *pp) != NULL; pp = &pS->pNext) {
    if (pS->h == h && pS->n == nSql && memcmp(pS->z, zSql, (size_t)nSql) == 0) break;
  }
  if (pS && !sqlite3_stmt_busy(pS->pStmt)) {
    *pp = pS->pNext;                  /* to the front */
    pS->pNext = pCache->pStmts;
    pCache->pStmts = pS;
    *ppStmt = pS->pStmt;
    return SQLITE_OK;
  }
  if (pS) {
    /* in use by another cursor on this connection: a private one */
    *pbOwn = 1;
    rc = sqlite3_prepare_v2(pConn->db, zSql, nSql, ppStmt, NULL);
  } else {
    pS = sqlite3_malloc64(sizeof *pS + (size_t)nSql);
    if (pS == NULL) return SQLITE_NOMEM;
    memset(pS, 0, sizeof *pS);
    rc = sqlite3_prepare_v3(pConn->db, zSql, nSql, SQLITE_PREPARE_PERSISTENT, &pS->pStmt, NULL);
    if (rc == SQLITE_OK) {
      memcpy(pS->z, zSql, (size_t)nSql);
      pS->z[nSql] = 0;
      pS->n = nSql;
      pS->h = h;
      pS->pNext = pCache->pStmts;
      pCache->pStmts = pS;
      *ppStmt = pS->pStmt;
      if (++pCache->nStmt > Q_STMT_MAX) {
        /* evict the least recently used one that no cursor runs */
        QStmt **ppLast = NULL, **pq;
        for (pq = &pCache->pStmts; *pq; pq = &(*pq)->pNext) {
          if (*pq != pS && !sqlite3_stmt_busy((*pq)->pStmt)) ppLast = pq;
        }
        if (ppLast) {
          QStmt *pOld = *ppLast;
          *ppLast = pOld->pNext;
          sqlite3_finalize(pOld->pStmt);
          sqlite3_free(pOld);
          pCache->nStmt--;
        }
      }
    } else {
      sqlite3_free(pS);
    }
  }
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("cannot prepare: %s", sqlite3_errmsg(pConn->db));
    if (*pzErr == NULL) rc = SQLITE_NOMEM;
  }
  return rc;
}

void **qCacheSpareRun(StoreConn *pConn) {
  QCache *pCache = qCacheOf(pConn);
  return pCache ? &pCache->pSpareRun : NULL;
}

/* How deep the subqueries of compiled SQL zSql nest: "(SELECT" and
** "(WITH" opened and not yet closed, outside string literals. not, or and
** rule bodies are subqueries; a parser stack overflow with few of them is
** some other nesting (functions), and must not be blamed on not or or. */
static int qCacheSubqueryDepth(const char *zSql) {
  int aOpen[256];            /* paren depth of each open subquery */
  int nParen = 0, nOpen = 0, nMax = 0;
  const char *z;
  for (z = zSql; z && *z; z++) {
    if (*z == '\'') {
      for (z++; *z && !(z[0] == '\'' && z[1] != '\''); z++) if (z[0] == '\'') z++;
      if (*z == 0) break;
    } else if (*z == '(') {
      const char *w = z + 1;
      nParen++;
      while (*w == ' ') w++;
      if ((sqlite3_strnicmp(w, "SELECT", 6) == 0 || sqlite3_strnicmp(w, "WITH", 4) == 0)
          && nOpen < (int)(sizeof aOpen / sizeof aOpen[0])) {
        aOpen[nOpen++] = nParen;
        if (nOpen > nMax) nMax = nOpen;
      }
    } else if (*z == ')') {
      if (nOpen > 0 && aOpen[nOpen - 1] == nParen) nOpen--;
      nParen--;
    }
  }
  return nMax;
}

/* Prepares pPlan's SQL on pConn (a persistent statement: it is kept with
** the plan). A statement past SQLite's own limits fails with the part of
** the query to blame (README, Limits). */
static int qCachePrepare(StoreConn *pConn, QueryPlan *pPlan, char **pzErr) {
  const char *zMsg, *zHint;
  char *zBare = qPlanSqlBare(pPlan->zSql);
  int rc;
  if (zBare == NULL) return SQLITE_NOMEM;
  rc = sqlite3_prepare_v3(pConn->db, zBare, -1, SQLITE_PREPARE_PERSISTENT, &pPlan->pStmt, NULL);
  sqlite3_free(zBare);
  if (rc == SQLITE_OK) return rc;
  if ((rc & 0xff) == SQLITE_INTERRUPT) {
    /* A host store's statement is prepared on the host, which SQLite's
    ** parser sees interrupted: the same error as at run time. */
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("interrupted");
    return *pzErr ? SQLITE_INTERRUPT : SQLITE_NOMEM;
  }
  zMsg = sqlite3_errmsg(pConn->db);
  zHint = strstr(zMsg, "tables in a join")
      ? " (a query or rule body joins at most 64 data patterns; inside not, or and"
        " rule bodies a chain of functions counts one per 3)"
      : strstr(zMsg, "parser stack overflow") && qCacheSubqueryDepth(pPlan->zSql) >= 8
      ? " (not, not-join and or nest at most 8 deep)"
      : strstr(zMsg, "parser stack overflow")
      ? " (the query's expressions nest too deep for SQLite)"
      : strstr(zMsg, "too many terms in compound SELECT")
      ? " (an or's branches, a rule's definitions and the steps of a recursive rule's seeds are"
        " each one UNION)"
      : strstr(zMsg, "too many references to")
      ? " (a rule with several definitions whose functions, predicates or not read the"
        " caller's bound arguments is copied with the rows before each call: at most"
        " about 10 such calls in a row)" : "";
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("cannot compile query: %s%s", zMsg, zHint);
  return *pzErr ? rc : SQLITE_NOMEM;
}

/* SQLite's prepare of the compiled SQL (seconds for a wide rule set or
** or-join) polls no interrupt of the host on a file store's reader, which
** is another connection and runs no progress handler while preparing: the
** host is asked once the prepare is done, so an interrupt during it stops
** the call (SQLITE_INTERRUPT, "interrupted", as at run time) instead of
** being ignored until the run's polls. The plan itself is good, and is
** kept by the caller, so a retry does not prepare it again. */
static int qCacheInterrupted(const QueryOpts *pOpts, char **pzErr) {
  if (pOpts == NULL || pOpts->xInterrupted == NULL || !pOpts->xInterrupted(pOpts->pInterruptArg)) {
    return SQLITE_OK;
  }
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("interrupted");
  return *pzErr ? SQLITE_INTERRUPT : SQLITE_NOMEM;
}

/* Keeps pPlan under key k (hash h) at the front of pCache, evicting the
** least recently used plans past Q_CACHE_MAX. SQLITE_NOMEM leaves pPlan
** to the caller. */
static int qCacheAdd(QCache *pCache, QueryPlan *pPlan, const QCacheKey *k, unsigned h) {
  char *zKey = sqlite3_malloc64(k->n + 1);
  if (zKey == NULL) return SQLITE_NOMEM;
  memcpy(zKey, k->z, k->n);
  zKey[k->n] = 0;
  pPlan->zKey = zKey;
  pPlan->nKey = (int)k->n;
  pPlan->hKey = h;
  qCachePushFront(pCache, pPlan);
  while (pCache->n > Q_CACHE_MAX) {
    QueryPlan *pLast = pCache->pHead;
    while (pLast->pNext) pLast = pLast->pNext;
    qCacheUnlink(pCache, pLast);
    qPlanFree(pLast);
  }
  return SQLITE_OK;
}

int qCachePlan(StoreConn *pConn, Schema *pSchema, const char *zQuery, int nQuery,
               const QueryOpts *pOpts, QueryPlan **ppPlan, int *pbOwn, char **pzErr) {
  QCache *pCache = qCacheOf(pConn);
  QueryPlan *pPlan = NULL;
  QCacheKey key;
  unsigned h;
  int rc = SQLITE_OK;
  *ppPlan = NULL;
  *pbOwn = 0;
  if (pCache == NULL) return SQLITE_NOMEM;
  /* A host store's read served by another store's reader (an empty host
  ** store: the private in-memory one) calls the host's functions through
  ** proxies (qchProxies), for this run only. */
  pCache->pCallHost = pOpts && pOpts->pHostDb != pConn->db ? pOpts->pHostDb : NULL;
  if (pOpts && pOpts->bOwnPlan) {
    /* A run that outlives its use of the connection keeps nothing there. */
    *pbOwn = 1;
    rc = qCompile(pSchema, zQuery, nQuery, pOpts, &pPlan, pzErr);
    if (rc == SQLITE_OK && pPlan->zHostFns && pCache->pCallHost) {
      rc = qchProxies(pConn->db, &pCache->pCallHost, pPlan->zHostFns, pzErr);
    }
    if (rc == SQLITE_OK) rc = qCachePrepare(pConn, pPlan, pzErr);
    if (rc == SQLITE_OK) rc = qCacheInterrupted(pOpts, pzErr);
    if (rc != SQLITE_OK) {
      qPlanFree(pPlan);
      pPlan = NULL;
    }
    *ppPlan = pPlan;
    return rc;
  }
  qCacheKeyInit(&key);
  /* Built without an allocation when it fits, as every call builds it. */
  qCacheKeyInt(&key, schemaGeneration(pSchema));
  qCacheKeyChar(&key, '\x1f');
  qCacheShapeInto(&key, pOpts, pSchema);
  qCacheKeyChar(&key, '\x1f');
  if (key.bOom) { rc = SQLITE_NOMEM; goto cleanup; }
  /* The common call repeats the last query: the head plan's key is
  ** compared piecewise, before the query text is copied and hashed. */
  pPlan = pCache->pHead;
  if (pPlan && (size_t)pPlan->nKey == key.n + (size_t)nQuery && memcmp(pPlan->zKey, key.z, key.n) == 0
      && memcmp(pPlan->zKey + key.n, zQuery, (size_t)nQuery) == 0
      && !sqlite3_stmt_busy(pPlan->pStmt)) {
    *ppPlan = pPlan;                /* (a busy one: the full lookup below says so) */
    goto cleanup;
  }
  qCacheKeyAppend(&key, zQuery, (size_t)nQuery);
  if (key.bOom || key.n > 0x7fffffff) { rc = SQLITE_NOMEM; goto cleanup; }
  h = qCacheHash(key.z, (int)key.n);
  for (pPlan = pCache->pHead; pPlan; pPlan = pPlan->pNext) {
    if (pPlan->hKey == h && pPlan->nKey == (int)key.n && memcmp(pPlan->zKey, key.z, key.n) == 0) break;
  }
  if (pPlan && sqlite3_stmt_busy(pPlan->pStmt)) {
    pPlan = NULL;      /* in use by an open run on this connection: a private copy */
    *pbOwn = 1;
  }
  if (pPlan) {
    qCacheUnlink(pCache, pPlan);
    qCachePushFront(pCache, pPlan);
    *ppPlan = pPlan;
    goto cleanup;
  }
  rc = qCompile(pSchema, zQuery, nQuery, pOpts, &pPlan, pzErr);
  if (rc == SQLITE_OK && pPlan->zHostFns && pCache->pCallHost) {
    /* Another host's query of the same text must not find this plan. */
    *pbOwn = 1;
    rc = qchProxies(pConn->db, &pCache->pCallHost, pPlan->zHostFns, pzErr);
  }
  if (rc == SQLITE_OK) rc = qCachePrepare(pConn, pPlan, pzErr);
  if (rc == SQLITE_OK && !*pbOwn) {
    rc = qCacheAdd(pCache, pPlan, &key, h);
    if (rc == SQLITE_OK) {
      /* kept in the cache even when the host was interrupted meanwhile */
      rc = qCacheInterrupted(pOpts, pzErr);
      if (rc != SQLITE_OK) pPlan = NULL;
    }
  } else if (rc == SQLITE_OK) {
    rc = qCacheInterrupted(pOpts, pzErr);
  }
  if (rc != SQLITE_OK) {
    qPlanFree(pPlan);
    pPlan = NULL;
  }
  *ppPlan = pPlan;
cleanup:
  qCacheKeyFree(&key);
  return rc;
}

sqlite3 **qCacheCallHost(StoreConn *pConn) {
  QCache *pCache = pConn ? (QCache *)pConn->pQueryCache : NULL;
  return pCache && pConn->xQueryCacheFree == qCacheFree ? &pCache->pCallHost : NULL;
}
