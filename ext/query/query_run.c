/*
** query_run.c — running a compiled query: the per-connection plan cache,
** binding inputs, stepping, and decoding result columns (query.h).
**
** HOW IT WORKS
** qRunOpen() keys the plan cache of the checked-out connection by (schema
** generation, input shape, query text). A hit reuses the plan and its
** persistent prepared statement, so a repeated call costs a lookup, the
** binds and the steps; a miss parses, compiles and prepares, then keeps the
** plan (at most Q_CACHE_MAX per connection, least recently used evicted).
** Rows stream from the store statement; result columns decode through the
** static value type the plan knows or the tag column it selected.
** qRunClose() resets the statement so no read snapshot outlives the run.
*/
#include <string.h>
#include "config.h"
#include "query_compile.h"
#include "pull.h"

/* Plans kept per connection: enough for an application's working set of
** queries, small enough that a scan of the list stays cheap. */
#define Q_CACHE_MAX 64

typedef struct QCache {
  QueryPlan *pHead;      /* most recently used first */
  int n;
  PullCache *pPull;      /* pull statements on this connection */
  sqlite3_str *pOut;     /* reusable result string (qConnOutBuf) */
} QCache;

struct QueryRun {
  StoreConn *pConn;
  Schema *pSchema;
  QueryPlan *pPlan;
  int bOwnPlan;          /* not in the cache: freed by qRunClose */
  sqlite3_stmt *pStmt;
  QCache *pCache;
  char *zErr;            /* last column error, see qRunErrMsg */
  PullTime time;         /* the run's asOf/since, for pulls (SPEC §6) */
  int bTime;             /* time applies to pulls */
  int bTimeInst;         /* time's tx is still timeInst, to resolve */
  EdnValue timeInst;     /* copy of the opts' instant (only type, u.i read) */
  /* After qRunSpill: pStmt reads the rest of the result from pSpillDb;
  ** after a partial copy the store statement waits in pRest. */
  sqlite3 *pSpillDb;     /* private temporary database, or NULL */
  sqlite3_stmt *pRest;   /* store statement after the copied rows, or NULL */
  int *aSpillPull;       /* per find element: spill column of its pull JSON */
  const EdnValue **apPat;   /* per find element: a pull pattern from the
                            ** inputs (in the opts, which outlive the run), or NULL */
  int rcSpill;           /* the store statement's error after the rows, if any */
  char *zSpillErr;
  sqlite3_int64 nSpilled;   /* rows in the spill table (rowids 1..nSpilled) */
  sqlite3_int64 nSpillRead; /* of them, rows pStmt has returned */
};

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

static void qckInit(QCacheKey *k) {
  k->z = k->aBuf;
  k->n = 0;
  k->nAlloc = sizeof k->aBuf;
  k->bOom = 0;
}

static void qckFree(QCacheKey *k) {
  if (k->z != k->aBuf) sqlite3_free(k->z);
  qckInit(k);
}

static void qckAppend(QCacheKey *k, const char *z, size_t n) {
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

static void qckChar(QCacheKey *k, char c) { qckAppend(k, &c, 1); }

static void qckInt(QCacheKey *k, sqlite3_int64 v) {
  char aBuf[24];
  int i = (int)sizeof aBuf;
  sqlite3_uint64 u = v < 0 ? (sqlite3_uint64)0 - (sqlite3_uint64)v : (sqlite3_uint64)v;
  do { aBuf[--i] = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
  if (v < 0) aBuf[--i] = '-';
  qckAppend(k, aBuf + i, sizeof aBuf - (size_t)i);
}

/* EDN text of p appended to the key (rare shapes: rule sets, odd values). */
static void qckEdn(QCacheKey *k, const EdnValue *p) {
  sqlite3_str *pStr = sqlite3_str_new(NULL);
  ednPrint(pStr, p);
  if (sqlite3_str_errcode(pStr) != SQLITE_OK) k->bOom = 1;
  else qckAppend(k, sqlite3_str_value(pStr), (size_t)sqlite3_str_length(pStr));
  sqlite3_free(sqlite3_str_finish(pStr));
}

static void qShapeOf(QCacheKey *pOut, const EdnValue *p, const Schema *pSchema, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH) return;
  switch (p->type) {
    case EDN_NIL: qckChar(pOut, 'n'); break;
    case EDN_BOOL: qckChar(pOut, 'b'); break;
    case EDN_INT: qckChar(pOut, 'i'); break;
    case EDN_DOUBLE: qckChar(pOut, 'd'); break;
    case EDN_STRING: qckChar(pOut, 's'); break;
    case EDN_KEYWORD: qckChar(pOut, 'k'); break;
    case EDN_INST: qckChar(pOut, 't'); break;
    case EDN_UUID: qckChar(pOut, 'u'); break;
    case EDN_VECTOR: case EDN_SET:
      /* A rule set shapes the SQL itself: its whole text is the shape. */
      if (p->u.c.n > 0 && p->u.c.a[0]->type == EDN_VECTOR && p->u.c.a[0]->u.c.n > 0
          && p->u.c.a[0]->u.c.a[0]->type == EDN_LIST) {
        qckEdn(pOut, p);
        break;
      }
      qckChar(pOut, '[');
      for (i = 0; i < p->u.c.n; i++) qShapeOf(pOut, p->u.c.a[i], pSchema, iDepth + 1);
      /* [:a :b] is a lookup ref or a tuple by the schema (qPlanLookupRef) */
      if (pSchema && p->u.c.n == 2 && p->u.c.a[1]->type == EDN_KEYWORD
          && qPlanLookupRef(pSchema, p)) {
        qckChar(pOut, 'L');
      }
      qckChar(pOut, ']');
      break;
    default:
      qckEdn(pOut, p);
      break;
  }
}

static void qShapeInto(QCacheKey *pOut, const QueryOpts *pOpts, const Schema *pSchema) {
  int i;
  qckInt(pOut, pOpts ? pOpts->nInput : 0);
  if (pOpts && pOpts->bAsOf) qckChar(pOut, 'A');
  else if (pOpts && pOpts->bSince) qckChar(pOut, 'S');
  if (pOpts && (pOpts->pAsOfInst || pOpts->pSinceInst)) qckChar(pOut, 't');
  if (pOpts && pOpts->bHistory) qckChar(pOut, 'H');
  qckChar(pOut, ':');
  for (i = 0; pOpts && i < pOpts->nInput; i++) {
    if (i) qckChar(pOut, ',');
    qShapeOf(pOut, pOpts->aInput[i], pSchema, 0);
  }
}

char *qInputShape(const QueryOpts *pOpts, const Schema *pSchema) {
  QCacheKey k;
  char *z = NULL;
  qckInit(&k);
  qShapeInto(&k, pOpts, pSchema);
  if (!k.bOom) z = sqlite3_mprintf("%.*s", (int)k.n, k.z);
  qckFree(&k);
  return z;
}

/* ------------------------------------------------------------ binding */

static const EdnValue *qParamValue(const QParam *pP, const QueryOpts *pOpts) {
  const EdnValue *p;
  if (pP->eConv == QV_HIST_INST) {
    if (pOpts == NULL) return NULL;
    return pOpts->bAsOf ? pOpts->pAsOfInst : pOpts->pSinceInst;
  }
  if (pP->iInput < 0) return pP->pConst;
  if (pOpts == NULL || pP->iInput >= pOpts->nInput) return NULL;
  p = pOpts->aInput[pP->iInput];
  if (pP->i1 >= 0) {
    if (p->type < EDN_LIST || p->type > EDN_SET || p->u.c.n <= pP->i1) return NULL;
    p = p->u.c.a[pP->i1];
  }
  if (pP->i2 >= 0) {
    if (p->type < EDN_LIST || p->type > EDN_SET || p->u.c.n <= pP->i2) return NULL;
    p = p->u.c.a[pP->i2];
  }
  return p;
}

/* Binds p converted to vt; a value that cannot convert binds NULL, which
** matches nothing (a wrongly typed constant finds no datoms). */
static int qBindTyped(sqlite3_stmt *pStmt, int i, const EdnValue *p, ValueType vt,
                      const Schema *pSchema) {
  TypedValue tv;
  char *zErr = NULL;
  int rc;
  if (vt == VT_REF) {
    if (p->type == EDN_INT) return sqlite3_bind_int64(pStmt, i, p->u.i);
    if (p->type == EDN_KEYWORD) {
      sqlite3_int64 e = schemaEntid(pSchema, p->u.s.z, p->u.s.n);
      return e ? sqlite3_bind_int64(pStmt, i, e) : sqlite3_bind_null(pStmt, i);
    }
    return sqlite3_bind_null(pStmt, i);
  }
  if (vt == VT_NONE) return sqlite3_bind_null(pStmt, i);
  rc = valueFromEdn(p, vt, &tv, &zErr);
  sqlite3_free(zErr);
  if (rc == SQLITE_NOMEM) return rc;
  if (rc != SQLITE_OK) return sqlite3_bind_null(pStmt, i);
  /* The text is the query's input or constant, which outlive the run. */
  return valueBindStatic(pStmt, i, &tv);
}

int qPlanBind(const QueryPlan *pPlan, sqlite3_stmt *pStmt, const Schema *pSchema,
              const QueryOpts *pOpts, char **pzErr) {
  int i, rc = SQLITE_OK;
  /* Parameters the SQL dropped (a comparison decided at compile time) are
  ** past the statement's last one: binding them would be SQLITE_RANGE. */
  int nStmt = sqlite3_bind_parameter_count(pStmt);
  for (i = 0; i < pPlan->nParam && i < nStmt && rc == SQLITE_OK; i++) {
    const QParam *pP = &pPlan->aParam[i];
    const EdnValue *p = qParamValue(pP, pOpts);
    const Attr *pA = NULL;
    int iArg = i + 1;
    if (pP->eConv == QV_HIST_TX) {
      rc = sqlite3_bind_int64(pStmt, iArg, pOpts == NULL ? 0
                              : pOpts->bAsOf ? pOpts->iAsOf : pOpts->iSince);
      continue;
    }
    if (p == NULL) {
      rc = sqlite3_bind_null(pStmt, iArg);
      continue;
    }
    if (pP->eConv >= QV_LOOKUP_A && pP->eConv <= QV_LOOKUP_TAG) {
      if (qPlanLookupRef(pSchema, p)) {
        pA = schemaAttrByIdent(pSchema, p->u.c.a[0]->u.s.z, p->u.c.a[0]->u.s.n);
      }
      if (pA == NULL) {
        rc = sqlite3_bind_null(pStmt, iArg);
        continue;
      }
      /* As edn_t refuses it: a non-unique attribute names no one entity. */
      if (pA->eUnique == UNIQUE_NONE) {
        sqlite3_free(*pzErr);
        *pzErr = sqlite3_mprintf("lookup ref attribute %s is not :db/unique", pA->zIdent);
        return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
      }
    }
    switch (pP->eConv) {
      case QV_NATURAL:
        rc = qBindTyped(pStmt, iArg, p, valueNaturalType(p), pSchema);
        break;
      case QV_TYPED:
        rc = qBindTyped(pStmt, iArg, p, pP->vt, pSchema);
        break;
      case QV_TAG:
        rc = sqlite3_bind_int(pStmt, iArg, vtTag(valueNaturalType(p)));
        break;
      case QV_LOOKUP_A:
        rc = sqlite3_bind_int64(pStmt, iArg, pA->e);
        break;
      case QV_LOOKUP_V:
        rc = qBindTyped(pStmt, iArg, p->u.c.a[1], pA->type, pSchema);
        break;
      case QV_LOOKUP_TAG:
        rc = sqlite3_bind_int(pStmt, iArg, vtTag(pA->type));
        break;
      case QV_INT:
        if (p->type != EDN_INT || p->u.i < 0) {
          sqlite3_free(*pzErr);
          *pzErr = sqlite3_mprintf(":limit and :offset take a non-negative integer");
          return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
        }
        rc = sqlite3_bind_int64(pStmt, iArg, p->u.i);
        break;
      case QV_AGG_N:
        if (p->type != EDN_INT || p->u.i < 0) {
          sqlite3_str *pMsg = sqlite3_str_new(NULL);
          sqlite3_str_appendf(pMsg, "input %d: ", pP->iInput + 1);
          if (pP->pConst) ednPrint(pMsg, pP->pConst);
          sqlite3_str_appendall(pMsg, " needs a non-negative integer count, got ");
          ednPrint(pMsg, p);
          sqlite3_free(*pzErr);
          *pzErr = sqlite3_str_finish(pMsg);
          return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
        }
        rc = sqlite3_bind_int64(pStmt, iArg, p->u.i);
        break;
      case QV_HIST_TX:
        break;
      case QV_HIST_INST:
        if (p->type == EDN_INST) rc = sqlite3_bind_int64(pStmt, iArg, p->u.i);
        else rc = sqlite3_bind_null(pStmt, iArg);
        break;
      case QV_JSON: {
        sqlite3_str *pOut = sqlite3_str_new(NULL);
        char *z;
        int n;
        ednPrintJson(pOut, p);
        n = sqlite3_str_length(pOut);
        z = sqlite3_str_finish(pOut);
        if (z == NULL) return SQLITE_NOMEM;
        rc = sqlite3_bind_text(pStmt, iArg, z, n, sqlite3_free);
        break;
      }
    }
  }
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("cannot bind query value %d", i);
  }
  return rc;
}

/* ---------------------------------------------------------------- open */

static unsigned qHash(const char *z, int n) {
  unsigned h = 2166136261u;
  int i;
  for (i = 0; i < n; i++) h = (h ^ (unsigned char)z[i]) * 16777619u;
  return h;
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

PullCache **qConnPullCache(StoreConn *pConn) {
  QCache *pCache = qCacheOf(pConn);
  return pCache ? &pCache->pPull : NULL;
}

sqlite3_str **qConnOutBuf(StoreConn *pConn) {
  QCache *pCache = qCacheOf(pConn);
  return pCache ? &pCache->pOut : NULL;
}

/* Takes the pull patterns that pRun's plan reads from the inputs (Datomic's
** `:in $ pattern`), each checked before any row as a literal one is when
** the query compiles. Errors: "input N: ..." in *pzErr. */
static int qRunPatterns(QueryRun *pRun, const QueryOpts *pOpts, char **pzErr) {
  const QueryPlan *pPlan = pRun->pPlan;
  int i, rc = SQLITE_OK;
  for (i = 0; i < pPlan->nCol && rc == SQLITE_OK; i++) {
    const QPlanCol *pCol = &pPlan->aCol[i];
    const EdnValue *pPat;
    char *zErr = NULL;
    if (pCol->kind != QCOL_PULL || !pCol->bPatInput) continue;
    if (pOpts == NULL || pCol->iPatInput >= pOpts->nInput) return SQLITE_MISUSE;
    if (pRun->apPat == NULL) {
      pRun->apPat = sqlite3_malloc64(sizeof(EdnValue*) * (size_t)pPlan->nCol);
      if (pRun->apPat == NULL) return SQLITE_NOMEM;
      memset(pRun->apPat, 0, sizeof(EdnValue*) * (size_t)pPlan->nCol);
    }
    pPat = pOpts->aInput[pCol->iPatInput];
    if (pPat->type != EDN_VECTOR) {
      sqlite3_free(*pzErr);
      *pzErr = sqlite3_mprintf("input %d: a pull pattern must be a vector, got %s",
                               pCol->iPatInput + 1, ednKindName(pPat));
      return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
    }
    rc = pullValidate(pRun->pSchema, pPat, &zErr);
    if (rc == SQLITE_ERROR) {
      sqlite3_free(*pzErr);
      *pzErr = sqlite3_mprintf("input %d: %s", pCol->iPatInput + 1, zErr ? zErr : "bad pull pattern");
      if (*pzErr == NULL) rc = SQLITE_NOMEM;
    }
    sqlite3_free(zErr);
    pRun->apPat[i] = pPat;
  }
  return rc;
}

/* How deep the subqueries of compiled SQL zSql nest: "(SELECT" and
** "(WITH" opened and not yet closed, outside string literals. not, or and
** rule bodies are subqueries; a parser stack overflow with few of them is
** some other nesting (functions), and must not be blamed on not or or. */
static int qSubqueryDepth(const char *zSql) {
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

int qRunOpen(StoreConn *pConn, Schema *pSchema, const char *zQuery, int nQuery,
             const QueryOpts *pOpts, QueryRun **ppRun, char **pzErr) {
  QueryRun *pRun = NULL;
  QCache *pCache = (QCache*)pConn->pQueryCache;
  QueryPlan *pPlan = NULL;
  QCacheKey key;
  char *zKey = NULL;
  int nKey = 0, rc = SQLITE_OK, bOwn = 0;

  *ppRun = NULL;
  qckInit(&key);
  pCache = qCacheOf(pConn);
  if (pCache == NULL) return SQLITE_NOMEM;
  /* Key: schema generation, input shape, query text. Built without an
  ** allocation when it fits, as every call builds it. */
  qckInt(&key, schemaGeneration(pSchema));
  qckChar(&key, '\x1f');
  qShapeInto(&key, pOpts, pSchema);
  qckChar(&key, '\x1f');
  qckAppend(&key, zQuery, (size_t)nQuery);
  if (key.bOom || key.n > 0x7fffffff) { rc = SQLITE_NOMEM; goto cleanup; }
  nKey = (int)key.n;

  {
    unsigned h = qHash(key.z, nKey);
    for (pPlan = pCache->pHead; pPlan; pPlan = pPlan->pNext) {
      if (pPlan->hKey == h && pPlan->nKey == nKey && memcmp(pPlan->zKey, key.z, nKey) == 0) break;
    }
    if (pPlan && sqlite3_stmt_busy(pPlan->pStmt)) {
      pPlan = NULL;      /* in use by an open run on this connection */
      bOwn = 1;
    }
    if (pPlan) {
      qCacheUnlink(pCache, pPlan);
      qCachePushFront(pCache, pPlan);
    } else {
      rc = qCompile(pSchema, zQuery, nQuery, pOpts, &pPlan, pzErr);
      if (rc != SQLITE_OK) goto cleanup;
      rc = sqlite3_prepare_v3(pConn->db, pPlan->zSql, -1, SQLITE_PREPARE_PERSISTENT,
                              &pPlan->pStmt, NULL);
      if (rc != SQLITE_OK) {
        /* The compiled SQL past SQLite's own limits: say which part of the
        ** query that is (README, Limits). */
        const char *zMsg = sqlite3_errmsg(pConn->db);
        const char *zHint = strstr(zMsg, "tables in a join")
            ? " (a query or rule body joins at most 64 data patterns; inside not, or and"
              " rule bodies a chain of functions counts one per 3)"
            : strstr(zMsg, "parser stack overflow") && qSubqueryDepth(pPlan->zSql) >= 8
            ? " (not, not-join and or nest at most 8 deep)"
            : strstr(zMsg, "parser stack overflow")
            ? " (the query's expressions nest too deep for SQLite)"
            : strstr(zMsg, "too many references to")
            ? " (a rule with several definitions whose functions, predicates or not read the"
              " caller's bound arguments is copied with the rows before each call: at most"
              " about 10 such calls in a row)" : "";
        sqlite3_free(*pzErr);
        *pzErr = sqlite3_mprintf("cannot compile query: %s%s", zMsg, zHint);
        qPlanFree(pPlan);
        pPlan = NULL;
        if (*pzErr == NULL) rc = SQLITE_NOMEM;
        goto cleanup;
      }
      if (!bOwn) zKey = sqlite3_malloc64((size_t)nKey + 1);
      if (!bOwn && zKey == NULL) {
        qPlanFree(pPlan);
        pPlan = NULL;
        rc = SQLITE_NOMEM;
        goto cleanup;
      }
      if (!bOwn) {
        memcpy(zKey, key.z, (size_t)nKey);
        zKey[nKey] = 0;
        pPlan->zKey = zKey;
        pPlan->nKey = nKey;
        pPlan->hKey = h;
        zKey = NULL;
        qCachePushFront(pCache, pPlan);
        while (pCache->n > Q_CACHE_MAX) {
          QueryPlan *pLast = pCache->pHead;
          while (pLast->pNext) pLast = pLast->pNext;
          qCacheUnlink(pCache, pLast);
          qPlanFree(pLast);
        }
      }
    }
  }
  pRun = sqlite3_malloc64(sizeof(QueryRun));
  if (pRun == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  memset(pRun, 0, sizeof *pRun);
  pRun->pConn = pConn;
  pRun->pSchema = pSchema;
  schemaRef(pSchema);
  pRun->pPlan = pPlan;
  pRun->bOwnPlan = bOwn;
  pRun->pStmt = pPlan->pStmt;
  pRun->pCache = pCache;
  if (pOpts && (pOpts->bAsOf || pOpts->bSince)) {
    const EdnValue *pInst = pOpts->bAsOf ? pOpts->pAsOfInst : pOpts->pSinceInst;
    pRun->bTime = 1;
    pRun->time.bAsOf = pOpts->bAsOf;
    pRun->time.iAsOf = pOpts->iAsOf;
    pRun->time.bSince = pOpts->bSince;
    pRun->time.iSince = pOpts->iSince;
    if (pInst) {
      pRun->bTimeInst = 1;
      pRun->timeInst = *pInst;
    }
  }
  pPlan = NULL;
  sqlite3_reset(pRun->pStmt);
  rc = qPlanBind(pRun->pPlan, pRun->pStmt, pSchema, pOpts, pzErr);
  if (rc == SQLITE_OK) rc = qRunPatterns(pRun, pOpts, pzErr);
  if (rc != SQLITE_OK) {
    qRunClose(pRun);
    pRun = NULL;
  }
cleanup:
  if (pPlan && bOwn) qPlanFree(pPlan);
  sqlite3_free(zKey);
  qckFree(&key);
  *ppRun = pRun;
  return rc;
}

/* A partial copy is used up: back on the store statement, whose current
** row is the last one copied. */
static void qSpillEnd(QueryRun *p) {
  sqlite3_finalize(p->pStmt);
  sqlite3_close_v2(p->pSpillDb);
  sqlite3_free(p->aSpillPull);
  p->aSpillPull = NULL;
  p->pSpillDb = NULL;
  p->pStmt = p->pRest;
  p->pRest = NULL;
}

/* The next row of the spill table. Rows a later qRunSpill appended while
** this reader was on its way may or may not be seen by it (SQLite leaves
** that open): past its end it starts again after the last row it gave. */
static int qSpillStep(QueryRun *p) {
  int rc = sqlite3_step(p->pStmt);
  if (rc == SQLITE_DONE && p->nSpillRead < p->nSpilled) {
    sqlite3_stmt *pSel = NULL;
    rc = sqlite3_prepare_v2(p->pSpillDb, "SELECT * FROM spill WHERE rowid > ?1 ORDER BY rowid",
                            -1, &pSel, NULL);
    if (rc != SQLITE_OK) return rc;
    sqlite3_bind_int64(pSel, 1, p->nSpillRead);
    sqlite3_finalize(p->pStmt);
    p->pStmt = pSel;
    rc = sqlite3_step(pSel);
  }
  if (rc == SQLITE_ROW) p->nSpillRead++;
  return rc;
}

int qRunStep(QueryRun *p, char **pzErr) {
  int rc;
  if (p->pRest) {
    rc = qSpillStep(p);
    if (rc == SQLITE_ROW) return rc;
    if (rc == SQLITE_DONE) qSpillEnd(p);
  }
  /* A failed qRunSpill left the store statement reset: never re-run it. */
  if (p->pRest == NULL) {
    if (p->rcSpill != SQLITE_OK && p->pSpillDb == NULL) rc = SQLITE_DONE;
    else rc = p->pSpillDb ? qSpillStep(p) : sqlite3_step(p->pStmt);
  }
  if (rc == SQLITE_DONE && p->rcSpill != SQLITE_OK) {
    /* The store statement failed after the rows set aside: as it would
    ** have when streamed, the error comes after them. */
    sqlite3_free(*pzErr);
    *pzErr = p->zSpillErr;
    p->zSpillErr = NULL;
    rc = p->rcSpill;
    p->rcSpill = SQLITE_OK;
    return (*pzErr || rc == SQLITE_NOMEM) ? rc : SQLITE_NOMEM;
  }
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) return rc;
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("%s", sqlite3_errmsg(p->pSpillDb ? p->pSpillDb : p->pConn->db));
  sqlite3_reset(p->pStmt);
  return rc == SQLITE_NOMEM ? SQLITE_NOMEM : (*pzErr ? rc : SQLITE_NOMEM);
}

FindKind qRunFindKind(const QueryRun *p) { return p->pPlan->eFind; }
int qRunColumnCount(const QueryRun *p) { return p->pPlan->nCol; }

const char *qRunColumnName(const QueryRun *p, int i) {
  if (i < 0 || i >= p->pPlan->nCol) return NULL;
  return p->pPlan->aCol[i].zName;
}

const char *qRunKeyName(const QueryRun *p, int i) {
  if (i < 0 || i >= p->pPlan->nCol) return NULL;
  return p->pPlan->aCol[i].zKey;
}

int qRunIsSingleAggregate(const QueryRun *p) { return p->pPlan->bSingleAgg; }

/* A column's tag when nothing says which: its value goes out as it is. */
#define Q_TAG_UNKNOWN (-2)

static int qColTag(const QueryRun *p, const QPlanCol *pCol) {
  if (pCol->iTagCol >= 0) {
    if (sqlite3_column_type(p->pStmt, pCol->iTagCol) == SQLITE_NULL) return Q_TAG_UNKNOWN;
    return sqlite3_column_int(p->pStmt, pCol->iTagCol);
  }
  if (pCol->vt == QVT_JSON) return TAG_JSON;
  if (pCol->vt == VT_NONE) return Q_TAG_UNKNOWN;
  return vtTag(pCol->vt);
}

/* The entity that the value in pull column pCol names, as Datomic's pull
** takes "entity ids, idents, or lookup refs" (lookup refs are resolved by
** the SQL): a ref or a long is the id, a keyword the entity whose ident it
** is (*pbNone when there is none: the pull is nil). A value of another type
** is an error naming the binding. */
static int qPullEntity(QueryRun *p, const QPlanCol *pCol, sqlite3_int64 *pE, int *pbNone,
                       char **pzErr) {
  sqlite3_value *pV = sqlite3_column_value(p->pStmt, pCol->iCol);
  int tag = qColTag(p, pCol), eType = sqlite3_value_type(pV);
  const EdnValue *pVar = pCol->pPullVar;
  const char *zType;
  *pbNone = 0;
  if (tag == TAG_KEYWORD) {
    const char *z = (const char *)sqlite3_value_text(pV);
    if (z == NULL) return SQLITE_NOMEM;
    *pE = schemaEntid(p->pSchema, z, sqlite3_value_bytes(pV));
    *pbNone = *pE == 0;
    return SQLITE_OK;
  }
  if (eType == SQLITE_INTEGER && (tag == TAG_REF || tag == TAG_NUMBER || tag == Q_TAG_UNKNOWN)) {
    *pE = sqlite3_value_int64(pV);
    return SQLITE_OK;
  }
  switch (tag) {
    case TAG_JSON: zType = "collection"; break;
    case TAG_BOOLEAN: zType = vtName(VT_BOOLEAN); break;
    case TAG_INSTANT: zType = vtName(VT_INSTANT); break;
    case TAG_NUMBER: zType = vtName(VT_DOUBLE); break;
    case TAG_STRING: zType = vtName(VT_STRING); break;
    case TAG_UUID: zType = vtName(VT_UUID); break;
    case TAG_BYTES: zType = vtName(VT_BYTES); break;
    default: zType = "value of unknown type"; break;
  }
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("line %d col %d: pull %s: %s is a %s, not an entity id, ident or lookup ref",
                           pVar ? pVar->line : 0, pVar ? pVar->col : 0, pVar ? pVar->u.s.z : "?",
                           pVar ? pVar->u.s.z : "?", zType);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* The pull map of the entity in find column i, appended to pOut. */
static int qPull(QueryRun *p, int i, sqlite3_str *pOut, char **pzErr) {
  const QPlanCol *pCol = &p->pPlan->aCol[i];
  const EdnValue *pPattern = pCol->bPatInput ? p->apPat[i] : pCol->pPattern;
  sqlite3_int64 e = 0;
  int bNone = 0;
  int rcE = qPullEntity(p, pCol, &e, &bNone, pzErr);
  if (rcE != SQLITE_OK) return rcE;
  if (bNone) {
    sqlite3_str_appendall(pOut, "null");
    return SQLITE_OK;
  }
  if (p->bTimeInst) {
    /* Resolved inside the query's read transaction, as its own SQL does. */
    sqlite3_int64 iTx = 0;
    int rc = pullTxAtInstant(p->pConn->db, &p->timeInst, &iTx, pzErr);
    if (rc != SQLITE_OK) return rc;
    if (p->time.bAsOf) p->time.iAsOf = iTx;
    else p->time.iSince = iTx;
    p->bTimeInst = 0;
  }
  return pullEntityAt(p->pConn->db, p->pSchema, pPattern, e, 0,
                      p->bTime ? &p->time : NULL, &p->pCache->pPull, pOut, pzErr);
}

int qRunColumnResult(QueryRun *p, int i, sqlite3_context *pCtx) {
  const QPlanCol *pCol;
  if (i < 0 || i >= p->pPlan->nCol) {
    sqlite3_result_null(pCtx);
    return SQLITE_OK;
  }
  pCol = &p->pPlan->aCol[i];
  if (pCol->kind == QCOL_VALUE && pCol->iTagCol < 0 && pCol->vt != QVT_JSON && pCol->vt != VT_NONE) {
    /* A statically typed column whose stored form is its SQL value (ref,
    ** long, double, string, keyword, bytes): straight through, as
    ** valueResultFromStored would, without its per-row tests. */
    int tag = vtTag(pCol->vt);
    if (tag != TAG_INSTANT && tag != TAG_UUID && tag != TAG_BOOLEAN) {
      /* By storage class, not sqlite3_result_value (a generic copy, ~340
      ** instructions a column), from one column_value and the value_*
      ** accessors (each column_* call takes the connection's mutex and
      ** checks for a malloc failure). The value is "unprotected" in
      ** SQLite's terms, which matters only on a connection with a mutex:
      ** store connections are opened NOMUTEX and used by one cursor at a
      ** time, where SQLite's documentation says protected and unprotected
      ** values can be used interchangeably. */
      sqlite3_value *pV = sqlite3_column_value(p->pStmt, pCol->iCol);
      switch (sqlite3_value_type(pV)) {
        case SQLITE_INTEGER: sqlite3_result_int64(pCtx, sqlite3_value_int64(pV)); break;
        case SQLITE_FLOAT: sqlite3_result_double(pCtx, sqlite3_value_double(pV)); break;
        case SQLITE_TEXT: {
          /* Length -1 when the text has no NUL inside: SQLite then copies
          ** the terminator too, and the host's sqlite3_column_text() (every
          ** language binding calls it) need not grow the copy to add one:
          ** ~570 instructions a text column in Python otherwise. */
          /* NULL text of a TEXT value (even '' has a pointer) is a
          ** conversion that ran out of memory, not an empty string. */
          const char *z = (const char *)sqlite3_value_text(pV);
          int n = sqlite3_value_bytes(pV);
          if (z == NULL) {
            sqlite3_result_error_nomem(pCtx);
            return SQLITE_NOMEM;
          }
          sqlite3_result_text(pCtx, z, memchr(z, 0, (size_t)n) ? n : -1, SQLITE_TRANSIENT);
          break;
        }
        case SQLITE_BLOB: {
          /* bytes before the pointer: a blob whose expansion runs out of
          ** memory becomes NULL (0 bytes) after sqlite3_value_blob */
          int n = sqlite3_value_bytes(pV);
          const void *pB = sqlite3_value_blob(pV);
          if (pB == NULL && n > 0) {
            sqlite3_result_error_nomem(pCtx);
            return SQLITE_NOMEM;
          }
          sqlite3_result_blob(pCtx, pB ? pB : "", n, SQLITE_TRANSIENT);
          break;
        }
        default: sqlite3_result_null(pCtx); break;
      }
      return SQLITE_OK;
    }
  }
  if (pCol->kind == QCOL_VALUE && pCol->vt != QVT_JSON) {
    sqlite3_value *pV = sqlite3_column_value(p->pStmt, pCol->iCol);
    int tag = qColTag(p, pCol);
    /* unknown, or JSON text (TAG_JSON): the value as it is */
    if (sqlite3_value_type(pV) == SQLITE_NULL || tag < 0) {
      if (tag < 0 && sqlite3_value_type(pV) != SQLITE_NULL) sqlite3_result_value(pCtx, pV);
      else sqlite3_result_null(pCtx);
    } else {
      valueResultFromStored(pCtx, pV, tag);
    }
    return SQLITE_OK;
  }
  {
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    int rc = qRunColumnJson(p, i, pOut);
    char *z = sqlite3_str_finish(pOut);
    if (rc != SQLITE_OK || z == NULL) {
      sqlite3_free(z);
      if (rc == SQLITE_NOMEM || z == NULL) sqlite3_result_error_nomem(pCtx);
      else sqlite3_result_error(pCtx, p->zErr ? p->zErr : "pull failed", -1);
      return rc ? rc : SQLITE_NOMEM;
    }
    /* -1: JSON has no NUL inside, and SQLite learns it is terminated. */
    sqlite3_result_text(pCtx, z, -1, sqlite3_free);
    sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
    return SQLITE_OK;
  }
}

int qRunColumnJson(QueryRun *p, int i, sqlite3_str *pOut) {
  const QPlanCol *pCol;
  if (i < 0 || i >= p->pPlan->nCol) {
    sqlite3_str_appendall(pOut, "null");
    return SQLITE_OK;
  }
  pCol = &p->pPlan->aCol[i];
  if (sqlite3_column_type(p->pStmt, pCol->iCol) == SQLITE_NULL) {
    sqlite3_str_appendall(pOut, "null");
    return SQLITE_OK;
  }
  if (pCol->kind == QCOL_PULL && p->aSpillPull) {
    /* The type first: a text conversion that runs out of memory leaves the
    ** column NULL, so asking afterwards would take it for a nil pull. */
    int eType = sqlite3_column_type(p->pStmt, p->aSpillPull[i]);
    const char *z = (const char *)sqlite3_column_text(p->pStmt, p->aSpillPull[i]);
    if (z == NULL && eType != SQLITE_NULL) return SQLITE_NOMEM;
    sqlite3_str_appendall(pOut, z ? z : "null");
    return sqlite3_str_errcode(pOut);
  }
  if (pCol->kind == QCOL_PULL) {
    char *zErr = NULL;
    int rc = qPull(p, i, pOut, &zErr);
    if (rc != SQLITE_OK) {
      sqlite3_free(p->zErr);
      p->zErr = zErr;
    } else {
      sqlite3_free(zErr);
    }
    return rc;
  }
  if (pCol->kind == QCOL_JSON || pCol->vt == QVT_JSON) {
    /* not NULL (above): a NULL text is a conversion that ran out of memory,
    ** which must not pass for an empty document */
    const char *z = (const char*)sqlite3_column_text(p->pStmt, pCol->iCol);
    if (z == NULL) return SQLITE_NOMEM;
    sqlite3_str_appendall(pOut, z);
    return sqlite3_str_errcode(pOut);
  }
  {
    int tag = qColTag(p, pCol);
    if (tag == Q_TAG_UNKNOWN) {
      sqlite3_str_appendall(pOut, "null");
    } else {
      int rc = valueJsonFromStored(pOut, sqlite3_column_value(p->pStmt, pCol->iCol), tag, 0);
      if (rc != SQLITE_OK) return rc;
    }
  }
  return sqlite3_str_errcode(pOut);
}

int qRunRowJson(QueryRun *p, sqlite3_str *pOut) {
  const QueryPlan *pPlan = p->pPlan;
  int i, rc = SQLITE_OK;
  if (pPlan->bKeys) {
    sqlite3_str_appendchar(pOut, 1, '{');
    for (i = 0; i < pPlan->nCol && rc == SQLITE_OK; i++) {
      if (i) sqlite3_str_appendchar(pOut, 1, ',');
      ednJsonString(pOut, pPlan->aCol[i].zKey, (int)strlen(pPlan->aCol[i].zKey));
      sqlite3_str_appendchar(pOut, 1, ':');
      rc = qRunColumnJson(p, i, pOut);
    }
    sqlite3_str_appendchar(pOut, 1, '}');
    return rc;
  }
  if (pPlan->eFind == FIND_COLL || pPlan->eFind == FIND_SCALAR) {
    return qRunColumnJson(p, 0, pOut);
  }
  sqlite3_str_appendchar(pOut, 1, '[');
  for (i = 0; i < pPlan->nCol && rc == SQLITE_OK; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, ',');
    rc = qRunColumnJson(p, i, pOut);
  }
  sqlite3_str_appendchar(pOut, 1, ']');
  return rc;
}

const char *qRunErrMsg(const QueryRun *p) {
  return p ? p->zErr : NULL;
}

void qRunClose(QueryRun *p) {
  if (p == NULL) return;
  sqlite3_free(p->zErr);
  if (p->pSpillDb) {
    sqlite3_finalize(p->pStmt);       /* the spill's reader; the plan's is reset */
    p->pStmt = p->pRest;              /* after a partial copy, the plan's */
    p->pRest = NULL;
    sqlite3_close_v2(p->pSpillDb);
    sqlite3_free(p->aSpillPull);
  }
  sqlite3_free(p->zSpillErr);
  sqlite3_free(p->apPat);
  if (p->pStmt) {
    sqlite3_reset(p->pStmt);
    sqlite3_clear_bindings(p->pStmt);
  }
  if (p->bOwnPlan) qPlanFree(p->pPlan);
  schemaUnref(p->pSchema);
  sqlite3_free(p);
}

/* ------------------------------------------------------------ spilling */

/* Copies the current row of the store statement, and the pull JSON of its
** pull elements, into pIns and runs it. */
static int qSpillRow(QueryRun *p, sqlite3_stmt *pIns, int nStmtCol, char **pzErr) {
  const QueryPlan *pPlan = p->pPlan;
  int i, rc = SQLITE_OK;
  for (i = 0; i < nStmtCol && rc == SQLITE_OK; i++) {
    rc = sqlite3_bind_value(pIns, i + 1, sqlite3_column_value(p->pStmt, i));
  }
  for (i = 0; i < pPlan->nCol && rc == SQLITE_OK; i++) {
    if (pPlan->aCol[i].kind != QCOL_PULL) continue;
    if (sqlite3_column_type(p->pStmt, pPlan->aCol[i].iCol) == SQLITE_NULL) {
      rc = sqlite3_bind_null(pIns, p->aSpillPull[i] + 1);
      continue;
    }
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    rc = qPull(p, i, pOut, pzErr);
    if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pOut);
    int n = sqlite3_str_length(pOut);
    char *z = sqlite3_str_finish(pOut);
    if (rc == SQLITE_OK && z == NULL) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(pIns, p->aSpillPull[i] + 1, z, n, sqlite3_free);
    else sqlite3_free(z);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(pIns);
    rc = (rc == SQLITE_DONE) ? SQLITE_OK : sqlite3_reset(pIns);
  }
  sqlite3_reset(pIns);
  return rc;
}

/* qRunSpill after a partial copy: appends the store statement's next rows
** to the spill table within the budget. Done, the store statement is reset
** (the snapshot can end) and the spill reader gives every row. */
static int qSpillMore(QueryRun *p, sqlite3_int64 nMaxRows, sqlite3_int64 tEnd, int *pbAll,
                      char **pzErr) {
  sqlite3_stmt *pSel = p->pStmt, *pIns = NULL, *pRest = p->pRest;
  sqlite3_str *pDml = sqlite3_str_new(NULL);
  char *zDml, *zErr = NULL;
  int i, rc, nStmtCol = sqlite3_column_count(pRest), nSpillCol = sqlite3_column_count(pSel);
  int rcStore = SQLITE_ROW;
  sqlite3_int64 nRows = 0;
  sqlite3_str_appendall(pDml, "INSERT INTO spill VALUES(");
  for (i = 0; i < nSpillCol; i++) sqlite3_str_appendf(pDml, "%s?", i ? "," : "");
  sqlite3_str_appendchar(pDml, 1, ')');
  zDml = sqlite3_str_finish(pDml);
  if (zDml == NULL) return SQLITE_NOMEM;
  rc = sqlite3_prepare_v2(p->pSpillDb, zDml, -1, &pIns, NULL);
  sqlite3_free(zDml);
  if (rc != SQLITE_OK) return rc;
  /* qSpillRow and the pulls read p->pStmt: the store statement meanwhile */
  p->pStmt = pRest;
  while (rc == SQLITE_OK) {
    if ((nMaxRows > 0 && nRows >= nMaxRows) || (tEnd > 0 && configNowMs() >= tEnd)) break;
    rcStore = sqlite3_step(pRest);
    if (rcStore != SQLITE_ROW) break;
    rc = qSpillRow(p, pIns, nStmtCol, &zErr);
    if (rc == SQLITE_OK) {
      nRows++;
      p->nSpilled++;
    }
  }
  p->pStmt = pSel;
  sqlite3_finalize(pIns);
  if (rc != SQLITE_OK || rcStore != SQLITE_ROW) {
    /* The rest is copied, or lost with an error reported after the copied
    ** rows (see qRunStep); the store statement ends either way. */
    if (rc == SQLITE_OK && rcStore != SQLITE_DONE) {
      p->rcSpill = rcStore;
      p->zSpillErr = sqlite3_mprintf("%s", sqlite3_errmsg(p->pConn->db));
    } else if (rc != SQLITE_OK) {
      p->rcSpill = rc;
      p->zSpillErr = zErr ? sqlite3_mprintf("%s", zErr)
                          : sqlite3_mprintf("cannot set the rest of the result aside: %s",
                                            sqlite3_errmsg(p->pSpillDb));
    }
    sqlite3_reset(pRest);
    sqlite3_clear_bindings(pRest);
    p->pRest = NULL;
    if (pbAll) *pbAll = 1;
  }
  if (pzErr) { sqlite3_free(*pzErr); *pzErr = zErr; } else sqlite3_free(zErr);
  return SQLITE_OK;
}

int qRunSpill(QueryRun *p, sqlite3_int64 nMaxRows, sqlite3_int64 tEnd, int *pbAll, char **pzErr) {
  sqlite3 *db = NULL;
  sqlite3_stmt *pIns = NULL, *pSel = NULL;
  sqlite3_str *pDdl = NULL, *pDml = NULL;
  char *zDdl = NULL, *zDml = NULL, *zErr = NULL;
  int nStmtCol, nSpillCol, i, rc, bStepped = 0, bPartial = 0, rcStore = SQLITE_DONE;
  sqlite3_int64 nRows = 0;

  if (pbAll) *pbAll = p->pRest == NULL;
  if (p->pSpillDb) return p->pRest ? qSpillMore(p, nMaxRows, tEnd, pbAll, pzErr) : SQLITE_OK;
  nStmtCol = sqlite3_column_count(p->pStmt);
  nSpillCol = nStmtCol;
  p->aSpillPull = sqlite3_malloc64(sizeof(int) * (size_t)(p->pPlan->nCol + 1));
  if (p->aSpillPull == NULL) return SQLITE_NOMEM;
  for (i = 0; i < p->pPlan->nCol; i++) {
    p->aSpillPull[i] = p->pPlan->aCol[i].kind == QCOL_PULL ? nSpillCol++ : -1;
  }
  /* "" is a private temporary database: pages beyond its cache go to a
  ** temporary file, so a large rest costs disk, not memory. */
  rc = sqlite3_open_v2("", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  if (rc != SQLITE_OK) goto cleanup;
  pDdl = sqlite3_str_new(NULL);
  pDml = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pDdl, "CREATE TABLE spill(");
  sqlite3_str_appendall(pDml, "INSERT INTO spill VALUES(");
  for (i = 0; i < nSpillCol; i++) {
    sqlite3_str_appendf(pDdl, "%sc%d", i ? "," : "", i);
    sqlite3_str_appendf(pDml, "%s?", i ? "," : "");
  }
  sqlite3_str_appendchar(pDdl, 1, ')');
  sqlite3_str_appendchar(pDml, 1, ')');
  zDdl = sqlite3_str_finish(pDdl);
  zDml = sqlite3_str_finish(pDml);
  pDdl = pDml = NULL;
  if (zDdl == NULL || zDml == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  rc = sqlite3_exec(db, zDdl, NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, zDml, -1, &pIns, NULL);
  if (rc != SQLITE_OK) goto cleanup;

  /* The current row first, then the rest; from here the store statement
  ** moves on, so a failure can no longer leave the run as it was. */
  bStepped = 1;
  rc = qSpillRow(p, pIns, nStmtCol, &zErr);
  while (rc == SQLITE_OK) {
    nRows++;
    /* every row: one can take long (its pulls), and the clock is a vDSO
    ** read, not a system call */
    if ((nMaxRows > 0 && nRows >= nMaxRows) || (tEnd > 0 && configNowMs() >= tEnd)) {
      bPartial = 1;             /* the store statement stays on this row */
      break;
    }
    rcStore = sqlite3_step(p->pStmt);
    if (rcStore != SQLITE_ROW) break;
    rc = qSpillRow(p, pIns, nStmtCol, &zErr);
  }
  if (rc == SQLITE_OK && !bPartial && rcStore != SQLITE_DONE) {
    /* Kept for after the rows (see qRunStep). */
    p->rcSpill = rcStore;
    p->zSpillErr = sqlite3_mprintf("%s", sqlite3_errmsg(p->pConn->db));
  }
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, "SELECT * FROM spill ORDER BY rowid", -1, &pSel, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(pSel);     /* back on the current row */
    rc = (rc == SQLITE_ROW) ? SQLITE_OK : (rc == SQLITE_DONE ? SQLITE_CORRUPT : rc);
  }

cleanup:
  if (rc != SQLITE_OK && zErr == NULL) {
    zErr = sqlite3_mprintf("cannot set the rest of the result aside: %s",
                           db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  }
  sqlite3_free(sqlite3_str_finish(pDdl));
  sqlite3_free(sqlite3_str_finish(pDml));
  sqlite3_free(zDdl);
  sqlite3_free(zDml);
  sqlite3_finalize(pIns);
  /* The store statement holds the snapshot: it ends here either way once
  ** stepped (its rows are set aside, or lost with an error reported),
  ** unless a partial copy leaves the rest to it. */
  if (bStepped && (rc != SQLITE_OK || !bPartial)) sqlite3_reset(p->pStmt);
  if (rc == SQLITE_OK) {
    p->nSpilled = nRows;
    p->nSpillRead = 1;          /* pSel is on the current row */
  }
  if (rc == SQLITE_OK && bPartial) {
    /* It goes on after the copy, with its bindings (the inputs live as
    ** long as the run); a later call copies more. */
    p->pRest = p->pStmt;
    p->pStmt = pSel;
    p->pSpillDb = db;
    if (pbAll) *pbAll = 0;
  } else if (rc == SQLITE_OK) {
    /* qRunClose will finalize the spill reader, not this statement: its
    ** bindings point into the caller's inputs (valueBindStatic), so they
    ** go now, before the inputs can. */
    sqlite3_clear_bindings(p->pStmt);
    p->pStmt = pSel;
    p->pSpillDb = db;
  } else {
    sqlite3_finalize(pSel);
    sqlite3_close_v2(db);
    sqlite3_free(p->aSpillPull);
    p->aSpillPull = NULL;
    sqlite3_free(p->zSpillErr);
    p->zSpillErr = NULL;
    p->rcSpill = SQLITE_OK;
    if (bStepped) {
      /* The rest is gone: the next step reports why (see qRunStep). */
      p->rcSpill = rc;
      p->zSpillErr = zErr ? sqlite3_mprintf("%s", zErr) : NULL;
    }
  }
  if (pzErr) { sqlite3_free(*pzErr); *pzErr = zErr; } else sqlite3_free(zErr);
  /* Once stepped the run no longer needs the store either way. */
  return bStepped ? SQLITE_OK : rc;
}
