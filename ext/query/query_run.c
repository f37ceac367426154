/*
** query_run.c — running a query (query.h): its plan from the connection's
** plan cache (query_plan_cache.c), the inputs bound (qPlanBind,
** query_plan.c), the rows stepped, and
** each result column decoded through the static value type the plan knows
** or the tag column it selected.
**
** Takes a checked-out StoreConn, a schema snapshot, the query text and its
** parsed opts; gives rows as native SQL values (the cN columns) or JSON
** (SPEC.md §2.3). Rows stream from the store statement, or, once set
** aside, from the spill (query_spill.c). qRunClose() resets the statement
** so no read snapshot outlives the run.
*/
#include <string.h>
#include "query_run_context.h"
#include "query_plan_cache.h"
#include "query_spill.h"

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

/* Plans the run's query for pSchema (from the connection's cache, or
** compiled), binds its inputs and checks the pull patterns among them:
** pPlan, pStmt and pSchema (referenced) set, also on failure, for
** qRunUnplan. */
static int qRunPlan(QueryRun *pRun, Schema *pSchema, char **pzErr) {
  QueryPlan *pPlan = NULL;
  int bOwn = 0, rc;
  rc = qCachePlan(pRun->pConn, pSchema, pRun->zQuery, pRun->nQuery, pRun->pOpts, &pPlan, &bOwn,
                  pzErr);
  if (rc != SQLITE_OK) return rc;
  pRun->pSchema = pSchema;
  schemaRef(pSchema);
  pRun->pPlan = pPlan;
  pRun->bOwnPlan = bOwn;
  pRun->pStmt = pPlan->pStmt;
  sqlite3_reset(pRun->pStmt);
  pRun->bGave = 0;
  rc = qPlanBind(pPlan, pRun->pStmt, pSchema, pRun->pOpts, pzErr);
  if (rc == SQLITE_OK) rc = qRunPatterns(pRun, pRun->pOpts, pzErr);
  return rc;
}

/* Undoes qRunPlan: the statement reset (so it holds no snapshot) and its
** bindings cleared (they point into the opts), an own plan freed. */
static void qRunUnplan(QueryRun *p) {
  sqlite3_free(p->apPat);
  p->apPat = NULL;
  if (p->pStmt) {
    sqlite3_reset(p->pStmt);
    sqlite3_clear_bindings(p->pStmt);
  }
  p->pStmt = NULL;
  if (p->bOwnPlan) qPlanFree(p->pPlan);
  p->pPlan = NULL;
  p->bOwnPlan = 0;
  schemaUnref(p->pSchema);
  p->pSchema = NULL;
}

/* The snapshot changed under a run on a storeReaderLazy connection (see
** store.h): the connection gets one read transaction and the schema
** current for it, and the run is planned again with that schema. Any
** message in *pzErr (the first plan's error) is dropped first. */
static int qRunReplan(QueryRun *p, char **pzErr) {
  Schema *pNew = NULL;
  int rc;
  qRunUnplan(p);
  sqlite3_free(*pzErr);
  *pzErr = NULL;
  rc = storeReaderRecheck(p->pConn->pStore, p->pConn, &pNew, pzErr);
  /* The sources that read this store ($2 a filter of it) read it at the
  ** same snapshot, so with the same schema; other files keep theirs. */
  if (rc == SQLITE_OK && p->pOpts) qSourcesSetMain(p->pOpts, pNew);
  if (rc == SQLITE_OK) rc = qRunPlan(p, pNew, pzErr);
  schemaUnref(pNew);
  return rc;
}

/* The time options of pOpts (asOf, since and their instants) on the run,
** for the pulls among its find elements. */
static void qRunSetTime(QueryRun *pRun, const QueryOpts *pOpts) {
  pRun->bTime = 0;
  pRun->bTimeInst = pRun->bAsOfInst = pRun->bSinceInst = 0;
  memset(&pRun->time, 0, sizeof pRun->time);
  if (pOpts && (pOpts->bAsOf || pOpts->bSince)) {
    pRun->bTime = 1;
    pRun->time.bAsOf = pOpts->bAsOf;
    pRun->time.iAsOf = pOpts->iAsOf;
    pRun->time.bSince = pOpts->bSince;
    pRun->time.iSince = pOpts->iSince;
    if (pOpts->bAsOf && pOpts->pAsOfInst) {
      pRun->bAsOfInst = pRun->bTimeInst = 1;
      pRun->asOfInst = *pOpts->pAsOfInst;
    }
    if (pOpts->bSince && pOpts->pSinceInst) {
      pRun->bSinceInst = pRun->bTimeInst = 1;
      pRun->sinceInst = *pOpts->pSinceInst;
    }
  }
}

int qRunOpen(StoreConn *pConn, Schema *pSchema, const char *zQuery, int nQuery,
             QueryOpts *pOpts, QueryRun **ppRun, char **pzErr) {
  QueryRun *pRun = NULL;
  void **ppSpare;
  int rc;

  *ppRun = NULL;
  ppSpare = qCacheSpareRun(pConn);
  if (ppSpare && *ppSpare) {
    pRun = *ppSpare;
    *ppSpare = NULL;
  } else {
    pRun = sqlite3_malloc64(sizeof(QueryRun));
  }
  if (pRun == NULL) return SQLITE_NOMEM;
  memset(pRun, 0, sizeof *pRun);
  pRun->pConn = pConn;
  pRun->ppCallHost = qCacheCallHost(pConn);
  pRun->zQuery = zQuery;
  pRun->nQuery = nQuery;
  pRun->pOpts = pOpts;
  qRunSetTime(pRun, pOpts);
  rc = qRunPlan(pRun, pSchema, pzErr);
  /* On an unchecked connection the schema may be older than the file: an
  ** attribute another process has just made would read as unknown. So a
  ** plan that fails there is made again after the check. */
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM && storeReaderIsLazy(pConn)) {
    rc = qRunReplan(pRun, pzErr);
  }
  pRun->bCheck = storeReaderIsLazy(pConn);
  if (rc != SQLITE_OK) {
    qRunClose(pRun);
    pRun = NULL;
  }
  *ppRun = pRun;
  return rc;
}

int qRunRestart(QueryRun *p, Schema *pSchema, int bRebind, char **pzErr) {
  if (p == NULL || p->pSpillDb || p->rcSpill != SQLITE_OK || p->bOwnPlan || p->pStmt == NULL
      || p->pSchema != pSchema || (bRebind && p->apPat)) {
    return SQLITE_NOTFOUND;
  }
  sqlite3_reset(p->pStmt);
  p->bGave = 0;
  sqlite3_free(p->zErr);
  p->zErr = NULL;
  p->bCheck = storeReaderIsLazy(p->pConn);
  if (!bRebind) return SQLITE_OK;   /* the bindings point into the same, unchanged opts */
  qRunSetTime(p, p->pOpts);
  return qPlanBind(p->pPlan, p->pStmt, p->pSchema, p->pOpts, pzErr);
}

/* After the first step of a run on a storeReaderLazy connection: a step
** that read a newer state than the run's schema was checked at is undone,
** and the run planned again and stepped in one checked read transaction. */
static int qRunFirstCheck(QueryRun *p, int rc, char **pzErr) {
  int bStale = 0, rc2;
  p->bCheck = 0;
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return rc;
  rc2 = storeReaderCheck(p->pConn->pStore, p->pConn, &bStale);
  if (rc2 != SQLITE_OK) return rc2;
  if (!bStale) return rc;
  rc2 = qRunReplan(p, pzErr);
  return rc2 != SQLITE_OK ? rc2 : sqlite3_step(p->pStmt);
}

int qRunStep(QueryRun *p, char **pzErr) {
  int rc;
  if (p->pSpillDb == NULL && p->rcSpill == SQLITE_OK && !p->bCheck
      && !(p->bGave && (p->pPlan->bAtMostOne || p->pPlan->bDrainOne))) {
    /* The common step: the store statement's next row (not the first of a
    ** run still to be checked, nor one past the only row). */
    rc = sqlite3_step(p->pStmt);
    if (rc == SQLITE_ROW) {
      p->bGave = 1;
      return rc;
    }
    if (rc == SQLITE_DONE) return rc;
    goto failed;
  }
  if (p->bGave && p->pPlan->bDrainOne && (p->pSpillDb || p->rcSpill == SQLITE_OK)) {
    /* one row given: the rest only for their errors (bDrainOne) */
    do rc = p->pSpillDb ? qSpillStep(p) : sqlite3_step(p->pStmt);
    while (rc == SQLITE_ROW);
  } else if (p->pSpillDb) rc = qSpillStep(p);
  /* A failed qSpillRest left the store statement reset: never re-run it. */
  else if (p->rcSpill != SQLITE_OK) rc = SQLITE_DONE;
  else if (p->bGave && p->pPlan->bAtMostOne) {
    /* Its one row given: the end without the step that would look past it
    ** (~1.1k instructions of a point lookup's ~33k); the reset ends the
    ** statement's read as that step's halt would. */
    sqlite3_reset(p->pStmt);
    rc = SQLITE_DONE;
  } else {
    rc = sqlite3_step(p->pStmt);
  }
  if (p->bCheck) rc = qRunFirstCheck(p, rc, pzErr);
  if (rc == SQLITE_ROW && p->pSpillDb == NULL) p->bGave = 1;
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
failed:
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("%s", sqlite3_errmsg(p->pSpillDb ? p->pSpillDb : p->pConn->db));
  sqlite3_reset(p->pStmt);
  return rc == SQLITE_NOMEM ? SQLITE_NOMEM : (*pzErr ? rc : SQLITE_NOMEM);
}

FindKind qRunFindKind(const QueryRun *p) { return p->pPlan->eFind; }
int qRunDrainsOne(const QueryRun *p) { return p->pPlan->bDrainOne; }
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

/* Column pCol of a static type whose stored form is its SQL value (ref,
** long, double, string, keyword, bytes; qPlanColDirect) into pCtx: straight
** through, as valueResultFromStored would, without its per-row tests.
** SQLITE_OK or SQLITE_NOMEM. */
static int qRunColumnDirect(QueryRun *p, const QPlanCol *pCol, sqlite3_context *pCtx) {
  /* By storage class, not sqlite3_result_value (a generic copy, several
  ** times the work), from one column_value and the value_*
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
      ** language binding calls it) need not grow the copy to add one. */
      /* NULL text of a TEXT value (even '' has a pointer) is a
      ** conversion that ran out of memory, not an empty string. */
      const char *z = (const char *)sqlite3_value_text(pV);
      int n = sqlite3_value_bytes(pV);
      if (z == NULL) {
        sqlite3_result_error_nomem(pCtx);
        return SQLITE_NOMEM;
      }
      if (n > sqlite3_limit(sqlite3_context_db_handle(pCtx), SQLITE_LIMIT_LENGTH, -1)) return SQLITE_TOOBIG;
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
      if (n > sqlite3_limit(sqlite3_context_db_handle(pCtx), SQLITE_LIMIT_LENGTH, -1)) return SQLITE_TOOBIG;
      sqlite3_result_blob(pCtx, pB ? pB : "", n, SQLITE_TRANSIENT);
      break;
    }
    default: sqlite3_result_null(pCtx); break;
  }
  return SQLITE_OK;
}

int qRunColumnResult(QueryRun *p, int i, sqlite3_context *pCtx) {
  const QPlanCol *pCol;
  if (i < 0 || i >= p->pPlan->nCol) {
    sqlite3_result_null(pCtx);
    return SQLITE_OK;
  }
  pCol = &p->pPlan->aCol[i];
  if (pCol->bDirect) return qRunColumnDirect(p, pCol, pCtx);
  if (pCol->kind == QCOL_VALUE && pCol->vt != QVT_JSON) {
    sqlite3_value *pV = sqlite3_column_value(p->pStmt, pCol->iCol);
    int tag = qRunColTag(p, pCol);
    /* unknown, or JSON text (TAG_JSON): the value as it is */
    if (sqlite3_value_type(pV) == SQLITE_NULL || (tag < 0 && tag != TAG_TUPLE)) {
      if (tag < 0 && sqlite3_value_type(pV) != SQLITE_NULL) sqlite3_result_value(pCtx, pV);
      else sqlite3_result_null(pCtx);
    } else {
      valueResultFromStored(pCtx, pV, tag);
    }
    return SQLITE_OK;
  }
  {
    /* made for the host: stops growing past its SQLITE_LIMIT_LENGTH */
    sqlite3_str *pOut = sqlite3_str_new(sqlite3_context_db_handle(pCtx));
    int rc = qRunColumnJson(p, i, pOut);
    char *z;
    if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pOut);
    z = sqlite3_str_finish(pOut);
    if (rc == SQLITE_TOOBIG) {
      sqlite3_free(z);
      return rc;
    }
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
  sqlite3_value *pV;
  if (i < 0 || i >= p->pPlan->nCol) {
    sqlite3_str_appendall(pOut, "null");
    return SQLITE_OK;
  }
  pCol = &p->pPlan->aCol[i];
  /* One column_value and the value_* accessors, as qRunColumnResult: on a
  ** host store the statement runs on the host's connection, whose mutex
  ** (held by this thread for the whole call) every column_* call takes
  ** again, ~60 instructions a time. */
  pV = sqlite3_column_value(p->pStmt, pCol->iCol);
  if (sqlite3_value_type(pV) == SQLITE_NULL) {
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
    int rc = qRunPull(p, i, pOut, &zErr);
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
    const char *z = (const char*)sqlite3_value_text(pV);
    if (z == NULL) return SQLITE_NOMEM;
    sqlite3_str_appendall(pOut, z);
    return sqlite3_str_errcode(pOut);
  }
  {
    int tag = qRunColTag(p, pCol);
    if (tag == Q_TAG_UNKNOWN) {
      sqlite3_str_appendall(pOut, "null");
    } else {
      int rc = valueJsonFromStored(pOut, pV, tag, 0);
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
  void **ppSpare;
  if (p == NULL) return;
  sqlite3_free(p->zErr);
  qSpillClose(p);
  qRunUnplan(p);
  /* Kept for the connection's next run (still checked out by our caller). */
  ppSpare = p->pConn ? qCacheSpareRun(p->pConn) : NULL;   /* NULL: detached (qSpillAll) */
  if (ppSpare && *ppSpare == NULL) {
    *ppSpare = p;
  } else {
    sqlite3_free(p);
  }
}
