/*
** edn_q_table.c — the eponymous virtual table edn_q: a Datalog query as a
** table-valued function whose rows stream from the store
** (../shared/SPEC.md §2.1).
**
**   SELECT value, c0, c1 FROM edn_q('/data/app.db',
**       '[:find ?n ?a :in $ ?min :where [?e :p/name ?n] [?e :p/age ?a]
**                                         [(>= ?a ?min)]]',
**       '{"inputs":[21]}');
**   SELECT j.id, r.c0 FROM jobs j, edn_q(j.db, j.q) r;      -- correlated
**
** Columns: value (the row as JSON, subtype 74), c0..c15 (find elements as
** native SQL values, NULL past the find's width), and the hidden argument
** columns db_path, query, opts.
**
** Takes the call's arguments as constraints; gives rows, or an "edn_q: "
** error in the table's zErrMsg. Calls the call context (call.h) and the
** streaming core the query tables share (run_cursor.h).
**
** HOW IT WORKS
** Like series.c and json_each: the arguments of the call are equality
** constraints on the hidden columns. xBestIndex records the usable ones in
** idxNum (bit 0 db_path, bit 1 query, bit 2 opts; argv of xFilter in that
** order) and refuses plans where a given argument is not yet usable
** (SQLITE_CONSTRAINT), so SQLite puts edn_q inside the loop of the table
** that supplies its arguments — correlated calls, forward references and
** LEFT JOINs work, and `query IN (...)` runs xFilter once per value
** (peer fault B27). A plan without a required argument (the
** call lacks it, or SQLite asks about one branch of an OR in WHERE with
** that branch's terms alone) is accepted at a prohibitive cost; should
** SQLite run it, xFilter fails naming the missing arguments.
** xFilter opens the call (vcallBegin: opts parsed, a reader connection
** checked out of the store's pool, so nested and correlated cursors are
** independent), opens the compiled query and steps to the first row;
** xNext steps the store's statement, so rows stream and LIMIT 1 costs one
** row (run_cursor.h: the connection goes back at EOF, on an error, on the
** next xFilter and in xClose; interrupts; the snapshot hold that lets a
** writer have the rest of the rows set aside, peer fault B25).
*/
#include <assert.h>
#include <string.h>
#include "sqlite_api.h"
#include "edn_q.h"
#include "run_cursor.h"
#include "sqlio.h"

/* Column numbers; they must match the declaration below. */
#define EDNQ_COL_VALUE   0
#define EDNQ_COL_C0      1
#define EDNQ_NC          16   /* c0..c15: SPEC.md §2.1 */
#define EDNQ_COL_DBPATH  (EDNQ_COL_C0 + EDNQ_NC)
#define EDNQ_COL_QUERY   (EDNQ_COL_DBPATH + 1)
#define EDNQ_COL_OPTS    (EDNQ_COL_DBPATH + 2)
#define EDNQ_NARG        3    /* db_path, query, opts */
#define EDNQ_REQUIRED    0x3  /* idxNum bits of db_path and query */

_Static_assert(EDNQ_COL_DBPATH == 17, "edn_q column layout");
_Static_assert(EDNQ_COL_OPTS == 19, "edn_q column layout");

static const char ednqDecl[] =
    "CREATE TABLE x(value,"
    " c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15,"
    " db_path HIDDEN, query HIDDEN, opts HIDDEN)";

typedef struct EdnqCursor EdnqCursor;

typedef struct EdnqVtab {
  sqlite3_vtab base;
  sqlite3 *db;              /* the host connection (for the db_path check) */
  /* A closed cursor kept for the next xOpen: a prepared host statement
  ** opens and closes one cursor per execution, and a kept one comes with
  ** its argument and row buffers already grown (no allocation per call).
  ** The host connection serialises xOpen/xClose, so no lock. */
  EdnqCursor *pSpare;
} EdnqVtab;

/* One argument as the host gave it, echoed by its hidden column: its type,
** subtype (json_object()'s JSON stays JSON) and number, or its bytes at
** iOfs in the cursor's aArgBuf. */
typedef struct EdnqArg {
  int eType;                        /* SQLITE_NULL when not given */
  unsigned int eSubtype;            /* sqlite3_value_subtype, 0 none */
  int n;                            /* bytes (text, blob) */
  size_t iOfs;
  sqlite3_int64 i;
  double r;
} EdnqArg;

struct EdnqCursor {
  sqlite3_vtab_cursor base;
  EdnqArg aArg[EDNQ_NARG];          /* the arguments, echoed */
  char *aArgBuf;                    /* their bytes, sqlite3_malloc'd */
  size_t nArgBuf;                   /* allocated */
  sqlite3_int64 iRowBase;           /* added to the run's row number: see
                                    ** ednqRowBase; 0 until xRowid first asks */
  RunCursor run;                    /* the query, its reader and hold */
  /* The `value` column of successive rows is built at the end of this one
  ** string and copied out, and the string is dropped only past
  ** EDNQ_ROWBUF_MAX: one growth series per many rows instead of a new
  ** string and several reallocations per row, each taking SQLite's global
  ** allocator mutex (which two threads streaming rows contend for). */
  sqlite3_str *pRowBuf;
};

#define EDNQ_ROWBUF_MAX 65536

static int ednqConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                       sqlite3_vtab **ppVtab, char **pzErr) {
  int rc;
  (void)pAux; (void)argc; (void)argv; (void)pzErr;
  rc = sqlioConnectTable(db, ednqDecl, sizeof(EdnqVtab), ppVtab);
  if (rc == SQLITE_OK) ((EdnqVtab *)*ppVtab)->db = db;
  return rc;
}

static void ednqFreeCursor(EdnqCursor *pCur);

static int ednqDisconnect(sqlite3_vtab *pVtab) {
  EdnqVtab *pTab = (EdnqVtab *)pVtab;
  if (pTab->pSpare) ednqFreeCursor(pTab->pSpare);
  sqlite3_free(pVtab);
  return SQLITE_OK;
}

/* Gives a running run back and forgets the arguments; a finished run kept
** for the next one (RunCursor bKeep) stays, with the arguments it was
** started with, which the next xFilter compares (ednqSameArg). */
static void ednqReset(EdnqCursor *pCur) {
  int i;
  if (pCur->run.pParked == NULL) rcurRelease(&pCur->run);
  else if (pCur->run.pRun) rcurRelease(&pCur->run);
  if (pCur->run.pParked == NULL) {
    for (i = 0; i < EDNQ_NARG; i++) pCur->aArg[i].eType = SQLITE_NULL;
  }
  pCur->run.iRowid = 0;
}

/* True when argument value pV is the saved argument iArg again: NULL both,
** or TEXT both with the same bytes (as ednqSaveArgs reads them). */
static int ednqSameArg(EdnqCursor *pCur, int iArg, sqlite3_value *pV) {
  const EdnqArg *pArg = &pCur->aArg[iArg];
  int e = pV ? sqlite3_value_type(pV) : SQLITE_NULL;
  const void *p;
  int n;
  if (e != pArg->eType || (e != SQLITE_NULL && e != SQLITE_TEXT)) return 0;
  if (e == SQLITE_NULL) return 1;
  n = sqlite3_value_bytes(pV);
  if (n != pArg->n) return 0;
  p = sqlite3_value_blob(pV);
  return p != NULL && memcmp(p, pCur->aArgBuf + pArg->iOfs, (size_t)n) == 0;
}

/* Copies the arguments xFilter got (valid only during the call) for the
** hidden columns: types and numbers in aArg, bytes in one buffer that the
** cursor keeps between executions. Arguments before iFirst are kept as
** they are (the caller found them the same as the saved ones), their bytes
** first in the buffer. */
static int ednqSaveArgs(EdnqCursor *pCur, int idxNum, int argc, sqlite3_value **argv,
                        int iFirst) {
  sqlite3_value *apIn[EDNQ_NARG] = {NULL, NULL, NULL};
  size_t nNeed = 0, iOfs = 0;
  int i, j = 0;
  for (i = 0; i < EDNQ_NARG && j < argc; i++) {
    if (idxNum & (1 << i)) apIn[i] = argv[j++];
  }
  for (i = 0; i < iFirst; i++) {
    EdnqArg *pArg = &pCur->aArg[i];
    /* the same bytes may come with another subtype, which the echo keeps */
    pArg->eSubtype = apIn[i] ? sqlite3_value_subtype(apIn[i]) : 0;
    if (pArg->eType == SQLITE_TEXT || pArg->eType == SQLITE_BLOB) {
      iOfs = pArg->iOfs + (size_t)pArg->n + 1;
    }
  }
  nNeed = iOfs;
  for (i = iFirst; i < EDNQ_NARG; i++) {
    int e = apIn[i] ? sqlite3_value_type(apIn[i]) : SQLITE_NULL;
    if (e == SQLITE_TEXT || e == SQLITE_BLOB) {
      /* The byte count first: it makes text UTF-8 (converting UTF-16 in
      ** place), whose bytes sqlite3_value_blob() then reads as they are.
      ** sqlite3_value_text() would also copy text bound without a
      ** terminator into a new buffer to add one (sqlioTextIn). */
      nNeed += (size_t)sqlite3_value_bytes(apIn[i]) + 1;
    }
  }
  if (nNeed > pCur->nArgBuf) {
    char *aNew = sqlite3_realloc64(pCur->aArgBuf, nNeed);
    if (aNew == NULL) return SQLITE_NOMEM;
    pCur->aArgBuf = aNew;
    pCur->nArgBuf = nNeed;
  }
  for (i = iFirst; i < EDNQ_NARG; i++) {
    EdnqArg *pArg = &pCur->aArg[i];
    pArg->eType = apIn[i] ? sqlite3_value_type(apIn[i]) : SQLITE_NULL;
    pArg->eSubtype = apIn[i] ? sqlite3_value_subtype(apIn[i]) : 0;
    switch (pArg->eType) {
      case SQLITE_INTEGER: pArg->i = sqlite3_value_int64(apIn[i]); break;
      case SQLITE_FLOAT: pArg->r = sqlite3_value_double(apIn[i]); break;
      case SQLITE_TEXT:
      case SQLITE_BLOB: {
        /* bytes before the pointer: a zeroblob whose expansion runs out of
        ** memory becomes NULL (0 bytes), which must not echo as x'' */
        pArg->n = sqlite3_value_bytes(apIn[i]);
        const void *p = sqlite3_value_blob(apIn[i]);
        if (p == NULL && pArg->n > 0) {
          pArg->eType = SQLITE_NULL;
          return SQLITE_NOMEM;
        }
        pArg->iOfs = iOfs;
        if (pArg->n > 0) memcpy(pCur->aArgBuf + iOfs, p, (size_t)pArg->n);
        pCur->aArgBuf[iOfs + (size_t)pArg->n] = 0;
        iOfs += (size_t)pArg->n + 1;
        break;
      }
      default: break;
    }
  }
  return SQLITE_OK;
}

/* Saved argument iArg as text: TEXT and BLOB from the cursor's copy, other
** types converted from their value pVal. */
static int ednqArgText(EdnqCursor *pCur, int iArg, sqlite3_value *pVal, const char **pz,
                       int *pn) {
  const EdnqArg *pArg = &pCur->aArg[iArg];
  if (pArg->eType == SQLITE_TEXT || pArg->eType == SQLITE_BLOB) {
    *pz = pCur->aArgBuf + pArg->iOfs;
    *pn = pArg->n;
    return SQLITE_OK;
  }
  return sqlioText(pVal, pz, pn);
}

static void ednqArgResult(EdnqCursor *pCur, int iArg, sqlite3_context *pCtx) {
  const EdnqArg *pArg = &pCur->aArg[iArg];
  switch (pArg->eType) {
    case SQLITE_INTEGER: sqlite3_result_int64(pCtx, pArg->i); break;
    case SQLITE_FLOAT: sqlite3_result_double(pCtx, pArg->r); break;
    case SQLITE_TEXT:
      sqlite3_result_text64(pCtx, pCur->aArgBuf + pArg->iOfs, (sqlite3_uint64)pArg->n,
                            SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case SQLITE_BLOB:
      sqlite3_result_blob64(pCtx, pCur->aArgBuf + pArg->iOfs, (sqlite3_uint64)pArg->n,
                            SQLITE_TRANSIENT);
      break;
    default: sqlite3_result_null(pCtx); break;
  }
  if (pArg->eSubtype) sqlite3_result_subtype(pCtx, pArg->eSubtype);
}

static int ednqOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCur) {
  EdnqVtab *pTab = (EdnqVtab *)pVtab;
  EdnqCursor *pCur = pTab->pSpare;
  if (pCur) {
    pTab->pSpare = NULL;          /* reset when it was closed */
  } else {
    pCur = sqlite3_malloc64(sizeof *pCur);
    if (pCur == NULL) return SQLITE_NOMEM;
    memset(pCur, 0, sizeof *pCur);
    rcurInit(&pCur->run);
    pCur->run.bKeep = 1;
  }
  pCur->iRowBase = 0;
  *ppCur = &pCur->base;
  return SQLITE_OK;
}

/* The rowid base for the saved arguments: one of 2^30 bases 2^32 apart
** chosen by their FNV-1a hash. SQLite's plan for an OR in WHERE runs each
** branch on its own cursor, one after the other, and drops a row whose
** rowid an earlier branch gave: the same arguments number the same rows
** alike (an OR whose branches make one call drops the rows both give),
** and two calls' rows never share a rowid unless their hashes meet (odds
** of 2^-30), where row numbers alone would lose the second call's rows.
** Computed on the first xRowid of a filter, not in xFilter: only plans that
** ask for rowids (OR, the host's own SELECT rowid) pay for the hash. */
static void ednqRowBase(EdnqCursor *pCur) {
  sqlite3_uint64 h = 14695981039346656037ull;
  int i, k;
  for (i = 0; i < EDNQ_NARG; i++) {
    const EdnqArg *pArg = &pCur->aArg[i];
    const unsigned char *p = NULL;
    size_t n = 0;
    h = (h ^ (unsigned)pArg->eType) * 1099511628211ull;
    if (pArg->eType == SQLITE_INTEGER) { p = (const unsigned char *)&pArg->i; n = sizeof pArg->i; }
    else if (pArg->eType == SQLITE_FLOAT) { p = (const unsigned char *)&pArg->r; n = sizeof pArg->r; }
    else if (pArg->eType == SQLITE_TEXT || pArg->eType == SQLITE_BLOB) {
      p = (const unsigned char *)pCur->aArgBuf + pArg->iOfs;
      n = (size_t)pArg->n;
    }
    for (k = 0; k < (int)n; k++) h = (h ^ p[k]) * 1099511628211ull;
  }
  pCur->iRowBase = (sqlite3_int64)((h % 0x3FFFFFFFull) + 1) << 32;
}

static void ednqFreeCursor(EdnqCursor *pCur) {
  rcurRelease(&pCur->run);
  sqlite3_free(sqlite3_str_finish(pCur->pRowBuf));
  sqlite3_free(pCur->aArgBuf);
  sqlite3_free(pCur);
}

static int ednqClose(sqlite3_vtab_cursor *cur) {
  EdnqCursor *pCur = (EdnqCursor *)cur;
  EdnqVtab *pTab = (EdnqVtab *)cur->pVtab;
  ednqReset(pCur);
  if (pTab->pSpare == NULL && pCur->nArgBuf <= EDNQ_ROWBUF_MAX) {
    pTab->pSpare = pCur;
  } else {
    ednqFreeCursor(pCur);
  }
  return SQLITE_OK;
}

/* Steps to the next row (rcurStep), the error with the "edn_q: " prefix. */
static int ednqStep(EdnqCursor *pCur) {
  char *zErr = NULL;
  int rc = rcurStep(&pCur->run, &zErr);
  if (rc != SQLITE_OK) rc = sqlioVtabError(pCur->base.pVtab, "edn_q", rc, zErr);
  if (zErr) sqlite3_free(zErr);      /* a call per row saved */
  return rc;
}

static int ednqNext(sqlite3_vtab_cursor *cur) {
  return ednqStep((EdnqCursor *)cur);
}

static int ednqEof(sqlite3_vtab_cursor *cur) {
  return ((EdnqCursor *)cur)->run.bEof;
}

/* idxNum: bit k set = argument k (db_path, query, opts) is in argv, in
** that order (see ednqBestIndex). */
static int ednqFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
                      int argc, sqlite3_value **argv) {
  EdnqCursor *pCur = (EdnqCursor *)cur;
  EdnqVtab *pTab = (EdnqVtab *)cur->pVtab;
  const char *zQuery, *zPath, *zOpts = NULL;
  int nQuery, nPath, nOpts = 0, rc = SQLITE_OK, bResume = 0, bSameOpts = 0;
  char *zErr = NULL;
  (void)idxStr;

  ednqReset(pCur);
  if (pCur->run.pParked) {
    /* The last run of this cursor finished and was kept: the same db_path
    ** and query resume it (argv holds db_path, query, then opts when given). */
    bResume = (idxNum & EDNQ_REQUIRED) == EDNQ_REQUIRED && ednqSameArg(pCur, 0, argv[0])
              && ednqSameArg(pCur, 1, argv[1]);
    bSameOpts = bResume && ednqSameArg(pCur, 2, (idxNum & 4) ? argv[2] : NULL);
    if (!bResume) rcurRelease(&pCur->run);
  }
  if ((idxNum & EDNQ_REQUIRED) != EDNQ_REQUIRED) {
    /* the only plan SQLite found lacks them (ednqBestIndex) */
    int bDb = (idxNum & 1) == 0, bQuery = (idxNum & 2) == 0;
    sqlite3_free(pTab->base.zErrMsg);
    pTab->base.zErrMsg = sqlite3_mprintf("edn_q: missing argument%s %s%s%s",
                                         bDb && bQuery ? "s" : "", bDb ? "db_path" : "",
                                         bDb && bQuery ? " and " : "", bQuery ? "query" : "");
    return pTab->base.zErrMsg ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  /* A resumed call's db_path and query are the saved ones (ednqSameArg),
  ** its opts too when bSameOpts: only what differs is copied. */
  rc = ednqSaveArgs(pCur, idxNum, argc, argv, bSameOpts ? EDNQ_NARG : bResume ? 2 : 0);
  if (rc != SQLITE_OK) return rc;
  pCur->iRowBase = 0;
  /* NULL in a required argument: no rows (SPEC.md §2). */
  if (pCur->aArg[0].eType == SQLITE_NULL || pCur->aArg[1].eType == SQLITE_NULL) return SQLITE_OK;
  /* The texts come from the copies (terminated there); a number is read
  ** as text from its value, after the copies were taken, so they keep the
  ** host's type (a number given as db_path is echoed as a number). argv
  ** holds db_path, query, then opts when given. */
  rc = ednqArgText(pCur, 1, argv[1], &zQuery, &nQuery);
  if (rc == SQLITE_OK) rc = ednqArgText(pCur, 0, argv[0], &zPath, &nPath);
  if (rc == SQLITE_OK && pCur->aArg[2].eType != SQLITE_NULL) {
    rc = ednqArgText(pCur, 2, argv[2], &zOpts, &nOpts);
  }
  if (rc == SQLITE_OK && bResume) {
    rc = rcurResume(&pCur->run, pTab->db, zPath, nPath, zQuery, nQuery, bSameOpts, zOpts, nOpts,
                    &zErr);
    if (rc != SQLITE_NOTFOUND) goto done;
    rc = SQLITE_OK;
  }
  if (rc == SQLITE_OK) {
    rc = vcallBeginArgs(&pCur->run.call, pTab->db, pCur->aArg[0].eType, zPath, nPath,
                        VCALL_QUERY, &pCur->run.opts, zOpts, nOpts, &zErr);
  }
  if (rc == SQLITE_OK && pCur->run.opts.bWithReport) {
    zErr = sqlite3_mprintf("\"withReport\" is for the scalar edn_q, whose one document can hold"
                           " the report");
    rc = zErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK && pCur->run.opts.bExplain) {
    /* The plan is one document, not rows: the scalar form gives it. */
    zErr = sqlite3_mprintf("\"explain\" is for the scalar edn_q: SELECT edn_q(db_path, query,"
                           " '{\"explain\": true}')");
    rc = zErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK) rc = rcurStart(&pCur->run, zQuery, nQuery, &zErr);
done:
  if (rc != SQLITE_OK) {
    rc = vcallWithTimedOut(&pCur->run.call, rc, &zErr);
    rc = sqlioVtabError(cur->pVtab, "edn_q", rc, zErr);
    rcurRelease(&pCur->run);
  }
  sqlite3_free(zErr);
  return rc;
}

static int ednqColumn(sqlite3_vtab_cursor *cur, sqlite3_context *pCtx, int iCol) {
  EdnqCursor *pCur = (EdnqCursor *)cur;
  sqlite3_str *pOut;
  int rc, iStart;
  if (iCol >= EDNQ_COL_DBPATH) {
    ednqArgResult(pCur, iCol - EDNQ_COL_DBPATH, pCtx);
    return SQLITE_OK;
  }
  if (iCol != EDNQ_COL_VALUE) {
    assert(iCol >= EDNQ_COL_C0 && iCol < EDNQ_COL_C0 + EDNQ_NC);
    static const char *const azC[] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9",
                                      "c10", "c11", "c12", "c13", "c14", "c15"};
    return rcurColumn(&pCur->run, iCol - EDNQ_COL_C0, pCtx, "edn_q", azC[iCol - EDNQ_COL_C0]);
  }
  if (pCur->run.pRun == NULL) return SQLITE_OK;   /* at EOF: NULL */
  rcurLock(&pCur->run);
  pOut = pCur->pRowBuf;
  if (pOut && sqlite3_str_length(pOut) > EDNQ_ROWBUF_MAX) {
    sqlite3_free(sqlite3_str_finish(pOut));
    pOut = NULL;
  }
  if (pOut == NULL) pOut = pCur->pRowBuf = sqlite3_str_new(NULL);
  iStart = sqlite3_str_length(pOut);
  rc = qRunRowJson(pCur->run.pRun, pOut);
  if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pOut);
  if (rc == SQLITE_OK && sqlite3_str_length(pOut) - iStart
                         > sqlite3_limit(sqlite3_context_db_handle(pCtx), SQLITE_LIMIT_LENGTH, -1)) {
    rc = SQLITE_TOOBIG;
  }
  if (rc == SQLITE_OK) {
    /* Length -1: the row's JSON (no NUL inside) runs to the buffer's
    ** end, which sqlite3_str_value terminates; SQLite then copies the
    ** terminator too, so the host's sqlite3_column_text() need not. */
    sqlite3_result_text(pCtx, sqlite3_str_value(pOut) + iStart, -1, SQLITE_TRANSIENT);
    sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
  } else {
    /* A string in error keeps failing: start a new one next time. */
    sqlite3_free(sqlite3_str_finish(pOut));
    pCur->pRowBuf = NULL;
  }
  /* A pull in :find can fail here (its message is kept by the run); the
  ** message travels as the column's error result. */
  if (rc == SQLITE_TOOBIG) sqlioColumnTooBig(pCtx, "edn_q", "value");
  else if (rc != SQLITE_OK) sqlioError(pCtx, "edn_q", rc, qRunErrMsg(pCur->run.pRun));
  rcurUnlock(&pCur->run);
  return rc;
}

static int ednqRowid(sqlite3_vtab_cursor *cur, sqlite_int64 *pRowid) {
  EdnqCursor *pCur = (EdnqCursor *)cur;
  if (pCur->iRowBase == 0) ednqRowBase(pCur);
  *pRowid = pCur->iRowBase + pCur->run.iRowid;
  return SQLITE_OK;
}

/* Pure and cheap (called many times per prepare): see HOW IT WORKS.
** Only EQ constraints on the hidden columns are arguments; others stay
** with SQLite, which checks them against the echoed columns. */
static int ednqBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  int aIdx[EDNQ_NARG] = {-1, -1, -1};
  int mUnusable = 0, idxNum = 0, nArg = 0, i;
  const struct sqlite3_index_constraint *pC = pInfo->aConstraint;

  for (i = 0; i < pInfo->nConstraint; i++, pC++) {
    int iArg;
    if (pC->iColumn < EDNQ_COL_DBPATH || pC->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    iArg = pC->iColumn - EDNQ_COL_DBPATH;
    assert(iArg >= 0 && iArg < EDNQ_NARG);
    if (!pC->usable) {
      mUnusable |= 1 << iArg;
    } else if (aIdx[iArg] < 0) {
      aIdx[iArg] = i;
    }
  }
  (void)pVtab;
  for (i = 0; i < EDNQ_NARG; i++) {
    /* Given but not usable in this plan: ask SQLite for another order
    ** instead of running without it. */
    if (aIdx[i] < 0 && (mUnusable & (1 << i))) return SQLITE_CONSTRAINT;
  }
  for (i = 0; i < EDNQ_NARG; i++) {
    if (aIdx[i] < 0) continue;
    pInfo->aConstraintUsage[aIdx[i]].argvIndex = ++nArg;
    /* The argument is consumed: SQLite need not re-check the echoed
    ** column (for IN it still runs xFilter once per value). */
    pInfo->aConstraintUsage[aIdx[i]].omit = 1;
    idxNum |= 1 << i;
  }
  pInfo->idxNum = idxNum;
  if ((idxNum & EDNQ_REQUIRED) != EDNQ_REQUIRED) {
    /* A required argument absent: either the call lacks it, or SQLite
    ** offers a plan for one branch of an OR in WHERE (`c0 = 1 OR c0 = 2`),
    ** which it asks about with only that branch's terms. Refusing with an
    ** error would fail the whole statement; the plan is accepted at a cost
    ** no plan with the arguments reaches (as json_each does), and xFilter
    ** names the missing arguments if SQLite has no other plan. */
    pInfo->estimatedCost = 1e99;
    pInfo->estimatedRows = 2147483647;
    return SQLITE_OK;
  }
  /* All inputs bound: a modest, fixed guess; a query is not free. */
  pInfo->estimatedCost = 1000.0;
  pInfo->estimatedRows = 1000;
  return SQLITE_OK;
}

static sqlite3_module ednqModule = {
  .iVersion = 0,
  .xCreate = 0,     /* eponymous-only: CREATE VIRTUAL TABLE ... USING edn_q fails */
  .xConnect = ednqConnect,
  .xBestIndex = ednqBestIndex,
  .xDisconnect = ednqDisconnect,
  .xOpen = ednqOpen,
  .xClose = ednqClose,
  .xFilter = ednqFilter,
  .xNext = ednqNext,
  .xEof = ednqEof,
  .xColumn = ednqColumn,
  .xRowid = ednqRowid,
};

int ednqTableRegister(sqlite3 *db, void (*xGone)(void *)) {
  return sqlite3_create_module_v2(db, "edn_q", &ednqModule, db, xGone);
}
