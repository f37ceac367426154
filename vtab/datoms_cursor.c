/*
** datoms_cursor.c — the cursor the raw-index tables share (see
** datoms_cursor.h): the call opened with its opts, one store statement
** stepped as the host asks, each row's attribute and value decoded, and
** the rest of the rows set aside when a writer needs the WAL back.
**
** HOW IT WORKS
** The statement runs on a reader checked out for the call; its read
** snapshot lasts while it has rows left, so a host that keeps the cursor
** open would pin the WAL (peer fault B25). Once the first step gave a row
** the cursor is registered with a file store as a snapshot hold, as the
** edn_q cursors are (run_cursor.c): a writer past the WAL bound calls
** dcurLetGo on its own thread, which copies the current row and the rest
** into aRow while they take at most MENTAT_SPILL_MEMORY_BYTES, and the
** rows after those into a private temporary database (the spill,
** query_spill_table.h: disk past a small cache), a budget of rows and
** time per commit (a longer rest is copied a part per commit), and, once
** the statement is done, ends the store read. The host then reads the
** copies, aRow's then the spill's: the same rows, of the same snapshot.
** The arguments' copies and the time bounds are datoms_cursor_args.c's.
*/
#include <stddef.h>
#include <string.h>
#include <cJSON.h>
#include "config.h"
#include "datoms_cursor.h"
#include "row_lock.h"
#include "sqlio.h"
#include "value.h"

/* The most rows a writer sets aside for one cursor in one commit
** (dcurLetGo); its CPU time is bounded too (the commit's budget). */
#define DCUR_SPILL_ROWS 200000

/* The opts of a raw-index table hold a database filter only: "inputs" and
** keys edn_q may have besides mean nothing here. */
static int dcurOptsKeys(const char *zOpts, int nOpts, char **pzErr) {
  cJSON *pRoot = cJSON_ParseWithLength(zOpts, (size_t)nOpts);
  const cJSON *j;
  int rc = SQLITE_OK;
  if (pRoot == NULL) return SQLITE_OK;   /* qOptsParse judged it */
  for (j = cJSON_IsObject(pRoot) ? pRoot->child : NULL; j; j = j->next) {
    if (strcmp(j->string, "asOf") && strcmp(j->string, "since") && strcmp(j->string, "history")) {
      sqlite3_free(*pzErr);
      *pzErr = sqlite3_mprintf("unknown option \"%s\" (takes asOf, since, history)", j->string);
      rc = *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
      break;
    }
  }
  cJSON_Delete(pRoot);
  return rc;
}

int dcurBegin(DCursor *p, sqlite3 *host, sqlite3_value *pPath, sqlite3_value *pOpts, char **pzErr) {
  int rc;
  p->bLive = 1;
  rc = vcallBegin(&p->call, host, pPath, VCALL_QUERY, &p->opts, pOpts, pzErr);
  if (rc == SQLITE_OK && pOpts && sqlite3_value_type(pOpts) != SQLITE_NULL) {
    const char *z;
    int n;
    rc = sqlioText(pOpts, &z, &n);
    if (rc == SQLITE_OK) rc = dcurOptsKeys(z, n, pzErr);
    if (rc != SQLITE_OK) dcurRelease(p);
  }
  return rc;
}

/* True when path and opts are the texts of the parked call's key. */
static int dcurParkedSame(const DCursor *p, const char *zPath, int nPath, int eOpts,
                          const char *zOpts, int nOpts) {
  if (nPath != p->nParkPath || eOpts != p->eParkOpts || memcmp(zPath, p->aParkKey, (size_t)nPath)) {
    return 0;
  }
  return eOpts == SQLITE_NULL
         || (nOpts == p->nParkOpts && memcmp(zOpts, p->aParkKey + nPath + 1, (size_t)nOpts) == 0);
}

/* Remembers path and opts as the key of the call just begun (nParkPath 0
** when they cannot be kept, or memory ran out: the call is then not
** parked). */
static void dcurParkKey(DCursor *p, const char *zPath, int nPath, int eOpts, const char *zOpts,
                       int nOpts) {
  size_t nNeed = (size_t)nPath + (size_t)nOpts + 2;
  p->nParkPath = 0;
  if (nNeed > p->nParkKeyAlloc) {
    char *aNew = sqlite3_realloc64(p->aParkKey, nNeed);
    if (aNew == NULL) return;
    p->aParkKey = aNew;
    p->nParkKeyAlloc = nNeed;
  }
  memcpy(p->aParkKey, zPath, (size_t)nPath);
  p->aParkKey[nPath] = 0;
  if (nOpts > 0) memcpy(p->aParkKey + nPath + 1, zOpts, (size_t)nOpts);
  p->aParkKey[nPath + 1 + nOpts] = 0;
  p->eParkOpts = eOpts;
  p->nParkOpts = nOpts;
  p->nParkPath = nPath;
}

/* A TEXT argument's bytes for the key, as they are: the byte count first
** (it makes the text UTF-8), then the bytes without the terminator that
** sqlite3_value_text() would add by copying a host's unterminated text. */
static int dcurKeyText(sqlite3_value *pVal, const char **pz, int *pn) {
  *pn = sqlite3_value_bytes(pVal);
  *pz = *pn > 0 ? (const char *)sqlite3_value_blob(pVal) : "";
  return *pz ? SQLITE_OK : SQLITE_NOMEM;
}

int dcurBeginKept(DCursor *p, sqlite3 *host, sqlite3_value *pPath, sqlite3_value *pOpts,
                  char **pzErr) {
  const char *zPath = NULL, *zOpts = NULL;
  int nPath = 0, nOpts = 0, rc = SQLITE_OK;
  int eOpts = pOpts ? sqlite3_value_type(pOpts) : SQLITE_NULL;
  /* Only text keys: a number or blob as db_path or opts takes the full
  ** opening, whose conversions and errors stay where they are. */
  int bText = sqlite3_value_type(pPath) == SQLITE_TEXT
              && (eOpts == SQLITE_NULL || eOpts == SQLITE_TEXT);
  if (bText) rc = dcurKeyText(pPath, &zPath, &nPath);
  if (rc == SQLITE_OK && bText && eOpts == SQLITE_TEXT) rc = dcurKeyText(pOpts, &zOpts, &nOpts);
  if (rc != SQLITE_OK) return rc;
  if (p->bParked) {
    if (bText && nPath > 0 && dcurParkedSame(p, zPath, nPath, eOpts, zOpts, nOpts)) {
      /* the key's copy of the path: NUL-terminated, as vcallResume asks */
      rc = vcallResume(&p->call, host, p->aParkKey, nPath, pzErr);
      if (rc == SQLITE_OK) {
        p->bParked = 0;
        p->bLive = 1;
        return SQLITE_OK;
      }
      if (rc != SQLITE_NOTFOUND) {
        dcurRelease(p);
        return rc;
      }
    }
    dcurRelease(p);
  }
  p->nParkPath = 0;
  rc = dcurBegin(p, host, pPath, pOpts, pzErr);
  if (rc == SQLITE_OK && bText && nPath > 0) dcurParkKey(p, zPath, nPath, eOpts, zOpts, nOpts);
  return rc;
}

static int dcurLetGo(StoreHold *pHold, ConfigBudget *pBudget);

/* Clears a cursor for a new use but for the opts' arena buffer (qOptsInit
** needs no zeroes in it), the buffers it keeps (aArgBuf, aRow, aParkKey)
** and a parked call with its opts (bParked). */
static void dcurInit(DCursor *p, const char *zFunc, int bLog) {
  char *aArgBuf = p->aArgBuf, *aParkKey = p->aParkKey;
  size_t nArgBuf = p->nArgBuf, nParkKeyAlloc = p->nParkKeyAlloc;
  DCurRow *aRow = p->aRow;
  int nRowAlloc = p->nRowAlloc, bParked = p->bParked;
  int eParkOpts = p->eParkOpts, nParkPath = p->nParkPath, nParkOpts = p->nParkOpts;
  VCall call = p->call;
  memset(p, 0, offsetof(DCursor, opts));
  if (bParked) {
    p->call = call;
    p->bParked = 1;
  } else {
    qOptsInit(&p->opts);
  }
  p->aArgBuf = aArgBuf;
  p->nArgBuf = nArgBuf;
  p->aRow = aRow;
  p->nRowAlloc = nRowAlloc;
  p->aParkKey = aParkKey;
  p->nParkKeyAlloc = nParkKeyAlloc;
  p->eParkOpts = eParkOpts;
  p->nParkPath = nParkPath;
  p->nParkOpts = nParkOpts;
  p->zFunc = zFunc;
  p->bLog = bLog;
  /* edn_datoms keeps its call between runs; edn_log's cursor also holds
  ** its instant statement and is opened once per tx range, not kept. */
  p->bKeep = !bLog;
  p->bEof = 1;
  p->hold.xRelease = dcurLetGo;
  atomic_init(&p->lock, 0);
}

int dcurOpen(DCursor **ppSpare, const char *zFunc, int bLog, sqlite3_vtab_cursor **ppCur) {
  DCursor *p = *ppSpare;
  if (p) {
    *ppSpare = NULL;
  } else {
    p = sqlite3_malloc64(sizeof *p);
    if (p == NULL) return SQLITE_NOMEM;
    p->aArgBuf = NULL;
    p->nArgBuf = 0;
    p->aRow = NULL;
    p->nRowAlloc = 0;
    p->aParkKey = NULL;
    p->nParkKeyAlloc = 0;
    p->bParked = 0;
  }
  dcurInit(p, zFunc, bLog);
  *ppCur = &p->base;
  return SQLITE_OK;
}

void dcurClose(DCursor **ppSpare, DCursor *p) {
  if (*ppSpare == NULL) {
    dcurReleaseKeep(p);
    *ppSpare = p;
    return;
  }
  dcurFree(p);
  sqlite3_free(p);
}

void dcurSpareFree(DCursor **ppSpare) {
  if (*ppSpare) {
    dcurFree(*ppSpare);
    sqlite3_free(*ppSpare);
  }
  *ppSpare = NULL;
}

int dcurPrepare(DCursor *p, const char *zSql, int n, sqlite3_stmt **ppStmt, char **pzErr) {
  int rc = qCacheStmt(p->call.pConn, zSql, n, &p->pStmt, &p->bOwnStmt, pzErr);
  *ppStmt = p->pStmt;
  return rc;
}

int dcurPrepareHashed(DCursor *p, const char *zSql, int n, unsigned h, sqlite3_stmt **ppStmt,
                      char **pzErr) {
  int rc = qCacheStmtHashed(p->call.pConn, zSql, n, h, &p->pStmt, &p->bOwnStmt, pzErr);
  *ppStmt = p->pStmt;
  return rc;
}

/* ------------------------------------------------------------ the lock */

static void dcurLock(DCursor *p) {
  rowLock(&p->lock);
}

static void dcurUnlock(DCursor *p) {
  rowUnlock(&p->lock);
}

/* ------------------------------------------------------------ set aside */

/* Frees the rows set aside from aRow[iFrom], and those of the spill. */
static void dcurRowsFree(DCursor *p, int iFrom) {
  for (int i = iFrom; i < p->nRow; i++) sqlite3_value_free(p->aRow[i].pV);
  p->nRow = p->iRow = 0;
  p->nBufBytes = 0;
  p->bBuf = 0;
  qstClose(&p->spill);
}

static int dcurInstant(DCursor *p, sqlite3_int64 tx, char **pzErr);

/* What a row set aside in memory costs, its value nV bytes: the row, the
** value's copy and its bytes, and the allocator's own. */
#define DCUR_ROW_BYTES(nV) ((sqlite3_int64)sizeof(DCurRow) + 96 + (nV))

/* The spill's columns: a DCurRow's. */
enum { DSP_E, DSP_A, DSP_V, DSP_TAG, DSP_TX, DSP_ADDED, DSP_BINST, DSP_INST, DSP_NCOL };

/* pStmt's current row into *pR but for its value (pV NULL): for edn_log
** with its transaction's instant. */
static int dcurRowFields(DCursor *p, DCurRow *pR) {
  memset(pR, 0, sizeof *pR);
  pR->e = sqlite3_column_int64(p->pStmt, DCUR_COL_E);
  pR->a = sqlite3_column_int64(p->pStmt, DCUR_COL_A);
  pR->tx = sqlite3_column_int64(p->pStmt, DCUR_COL_TX);
  pR->tag = sqlite3_column_int(p->pStmt, DCUR_COL_TAG);
  pR->added = sqlite3_column_int(p->pStmt, DCUR_COL_ADDED);
  if (p->bLog) {
    char *zErr = NULL;
    int rc = dcurInstant(p, pR->tx, &zErr);
    sqlite3_free(zErr);
    if (rc != SQLITE_OK) return rc;
    pR->bInst = p->bInstUs;
    pR->iInst = p->iInstUs;
  }
  return SQLITE_OK;
}

/* Room for one more row in aRow. */
static int dcurRowRoom(DCursor *p) {
  if (p->nRow == p->nRowAlloc) {
    int nNew = p->nRowAlloc ? p->nRowAlloc * 2 : 64;
    DCurRow *aNew = sqlite3_realloc64(p->aRow, sizeof *aNew * (sqlite3_uint64)nNew);
    if (aNew == NULL) return SQLITE_NOMEM;
    p->aRow = aNew;
    p->nRowAlloc = nNew;
  }
  return SQLITE_OK;
}

/* Appends pStmt's current row to aRow. */
static int dcurRowAdd(DCursor *p) {
  DCurRow *pR;
  int rc = dcurRowRoom(p);
  if (rc != SQLITE_OK) return rc;
  pR = &p->aRow[p->nRow];
  rc = dcurRowFields(p, pR);
  if (rc != SQLITE_OK) return rc;
  pR->pV = sqlite3_value_dup(sqlite3_column_value(p->pStmt, DCUR_COL_V));
  if (pR->pV == NULL) return SQLITE_NOMEM;
  p->nBufBytes += DCUR_ROW_BYTES(sqlite3_value_bytes(pR->pV));
  p->nRow++;
  return SQLITE_OK;
}

/* Appends pStmt's current row to the spill (opened at its first row):
** the rows past the cursor's memory for them go to disk. */
static int dcurSpillAdd(DCursor *p) {
  sqlite3_stmt *pIns;
  DCurRow r;
  int rc = SQLITE_OK;
  if (p->spill.db == NULL) rc = qstOpen(&p->spill, DSP_NCOL);
  if (rc == SQLITE_OK) rc = dcurRowFields(p, &r);
  if (rc != SQLITE_OK) return rc;
  pIns = p->spill.pIns;
  sqlite3_bind_int64(pIns, DSP_E + 1, r.e);
  sqlite3_bind_int64(pIns, DSP_A + 1, r.a);
  sqlite3_bind_value(pIns, DSP_V + 1, sqlite3_column_value(p->pStmt, DCUR_COL_V));
  sqlite3_bind_int(pIns, DSP_TAG + 1, r.tag);
  sqlite3_bind_int64(pIns, DSP_TX + 1, r.tx);
  sqlite3_bind_int(pIns, DSP_ADDED + 1, r.added);
  sqlite3_bind_int(pIns, DSP_BINST + 1, r.bInst);
  sqlite3_bind_int64(pIns, DSP_INST + 1, r.iInst);
  return qstInsert(&p->spill);
}

/* The next row of the spill into aRow[0] (aRow empty): SQLITE_ROW,
** SQLITE_DONE past the last one, or an error. */
static int dcurSpillNext(DCursor *p) {
  sqlite3_stmt *pSel;
  DCurRow *pR;
  int rc = qstNext(&p->spill);
  if (rc != SQLITE_ROW) return rc;
  pSel = p->spill.pSel;
  rc = dcurRowRoom(p);
  if (rc != SQLITE_OK) return rc;
  pR = &p->aRow[0];
  pR->e = sqlite3_column_int64(pSel, DSP_E);
  pR->a = sqlite3_column_int64(pSel, DSP_A);
  pR->tag = sqlite3_column_int(pSel, DSP_TAG);
  pR->tx = sqlite3_column_int64(pSel, DSP_TX);
  pR->added = sqlite3_column_int(pSel, DSP_ADDED);
  pR->bInst = sqlite3_column_int(pSel, DSP_BINST);
  pR->iInst = sqlite3_column_int64(pSel, DSP_INST);
  pR->pV = sqlite3_value_dup(sqlite3_column_value(pSel, DSP_V));
  if (pR->pV == NULL) return SQLITE_NOMEM;
  p->nBufBytes = DCUR_ROW_BYTES(sqlite3_value_bytes(pR->pV));
  p->nRow = 1;
  p->iRow = 0;
  return SQLITE_ROW;
}

/* Setting the rest aside failed after the statement moved on: its rows
** from here are lost, so the error is kept for the host after the rows
** set aside (the statement ends, as the snapshot must: issue 19). */
static void dcurSetAsideFailed(DCursor *p, int rc) {
  const char *zWhy = p->spill.db && rc != SQLITE_NOMEM ? qstErrmsg(&p->spill, rc)
                                                       : sqlite3_errstr(rc);
  p->rcSpill = rc;
  p->zSpillErr = sqlite3_mprintf("cannot set the rest of the rows aside: %s", zWhy);
}

/* Copies the current row and up to DCUR_SPILL_ROWS more, within pBudget
** (the writer thread's CPU time, checked every 64 rows): into aRow while
** they take at most configSpillMemoryBytes, the later ones into the spill
** (one transaction per part). *pbAll when the statement is done: its end,
** an error it gave, or one met here once it moved on (kept for the host,
** after the rows), or, with pBudget->bDrop, the rest given up when the
** budget ends before it. An error only when nothing moved (the host's
** current row could not be copied). Lock held. */
static int dcurSetAside(DCursor *p, ConfigBudget *pBudget, int *pbAll) {
  int rc = SQLITE_OK, n = 0;
  sqlite3_int64 nMem = configSpillMemoryBytes();
  *pbAll = 0;
  if (!p->bBuf) {
    /* the host's current row: copied first, it becomes aRow[0] */
    p->nRow = p->iRow = 0;
    rc = dcurRowAdd(p);
    if (rc != SQLITE_OK) return rc;
    p->bBuf = 1;
  } else if (p->iRow > 0) {
    /* a part set aside before: the rows the host has read go */
    memmove(p->aRow, p->aRow + p->iRow, sizeof *p->aRow * (size_t)(p->nRow - p->iRow));
    p->nRow -= p->iRow;
    p->iRow = 0;
  }
  for (;;) {
    int rcStep;
    if (n >= DCUR_SPILL_ROWS || ((n & 63) == 0 && configBudgetSpent(pBudget))) {
      /* Past half the WAL bound a rest that does not fit in this commit's
      ** budget is given up (issue 19): copied a part per commit, a long
      ** rest kept the snapshot while the WAL grew to 37 MiB against 2. */
      if (pBudget != NULL && pBudget->bDrop && p->rcSpill == SQLITE_OK) {
        p->rcSpill = SQLITE_ABORT;
        p->zSpillErr = sqlite3_mprintf("%s", QST_DROPPED_MSG);
        *pbAll = 1;
      }
      break;
    }
    rcStep = sqlite3_step(p->pStmt);
    if (rcStep == SQLITE_ROW) {
      /* once one row went to the spill, every later one does (their order) */
      if (p->spill.db
          || p->nBufBytes + DCUR_ROW_BYTES(sqlite3_column_bytes(p->pStmt, DCUR_COL_V)) > nMem) {
        rc = dcurSpillAdd(p);
      } else {
        rc = dcurRowAdd(p);
      }
      if (rc == SQLITE_OK) {
        n++;
        continue;
      }
      dcurSetAsideFailed(p, rc);
    } else if (rcStep != SQLITE_DONE) {
      p->rcSpill = rcStep;
      p->zSpillErr = sqlite3_mprintf("%s", sqlite3_errmsg(p->call.pConn->db));
    }
    *pbAll = 1;
    break;
  }
  if (p->spill.db && (rc = qstCommit(&p->spill)) != SQLITE_OK && p->rcSpill == SQLITE_OK) {
    dcurSetAsideFailed(p, rc);
    *pbAll = 1;
  }
  return SQLITE_OK;
}

/* StoreHold.xRelease, on the writer's thread (storeHoldsRelease): sets
** the rest of the rows aside and ends the store read, so the WAL can be
** checkpointed and restarted while the host keeps this cursor open. As
** run_cursor.c's rcurLetGo: the host connection is not touched (the
** interrupt polling, which probes it, is paused) and a rest longer than
** one commit's budget is copied a part per commit (returns 2: ask again).
** It never keeps its snapshot for good (issue 19): a rest past its memory
** goes to the spill, and a copy that fails once the statement moved on
** ends the statement, its error reported after the rows copied; only a
** cursor whose current row could not even be copied is asked again after
** the next commit (2). Returns 1 once let go. */
static int dcurLetGo(StoreHold *pHold, ConfigBudget *pBudget) {
  DCursor *p = (DCursor *)((char *)pHold - offsetof(DCursor, hold));
  int bLetGo = 1;
  dcurLock(p);
  if (p->pStmt && !p->bEof && !p->bStmtGone && p->call.pConn) {
    int bAll = 0;
    vcallPause(&p->call, 1);
    if (dcurSetAside(p, pBudget, &bAll) != SQLITE_OK) {
      vcallPause(&p->call, 0);
      bLetGo = 2;                   /* nothing moved (out of memory): next commit */
    } else if (bAll) {
      if (p->pInstStmt) sqlite3_reset(p->pInstStmt);
      sqlite3_reset(p->pStmt);
      storeReaderEndRead(p->call.pStore, p->call.pConn);
      p->bStmtGone = 1;
    } else {
      vcallPause(&p->call, 0);
      bLetGo = 2;                   /* more next commit */
    }
  }
  dcurUnlock(p);
  return bLetGo;
}

/* ------------------------------------------------------------ release */

static void dcurDropStmt(DCursor *p);
static int dcurStepDone(DCursor *p, int rc, const char *zErr);

/* dcurRelease, dcurReleaseKeep: bPark keeps a keeping cursor's call. */
static void dcurEnd(DCursor *p, int bPark) {
  if (p->bParked && !bPark) {
    p->bParked = 0;
    vcallEnd(&p->call);
    qOptsReset(&p->opts);
  }
  /* xFilter releases first: a cursor that holds nothing costs nothing */
  if (!p->bLive) return;
  p->bLive = 0;
  if (p->bHold) {
    /* Waits for a release in progress; after it none can start. */
    storeHoldRemove(p->call.pStore, &p->hold);
    p->bHold = 0;
  }
  dcurRowsFree(p, p->iRow);
  p->bStmtGone = 0;
  p->rcSpill = 0;
  sqlite3_free(p->zSpillErr);
  p->zSpillErr = NULL;
  dcurDropStmt(p);
  p->bOne = 0;
  p->zIdentA = NULL;
  /* Only a call dcurBeginKept remembered (its key) is parked: nothing
  ** runs on the reader now (the statement is reset). */
  if (bPark && p->bKeep && p->nParkPath > 0 && vcallPark(&p->call)) {
    p->bParked = 1;
    return;
  }
  vcallEnd(&p->call);
  qOptsReset(&p->opts);
}

void dcurRelease(DCursor *p) {
  dcurEnd(p, 0);
}

void dcurReleaseKeep(DCursor *p) {
  dcurEnd(p, 1);
}

void dcurFree(DCursor *p) {
  dcurRelease(p);
  sqlite3_free(p->aRow);
  p->aRow = NULL;
  p->nRowAlloc = 0;
  sqlite3_free(p->aArgBuf);
  p->aArgBuf = NULL;
  p->nArgBuf = 0;
  sqlite3_free(p->aParkKey);
  p->aParkKey = NULL;
  p->nParkKeyAlloc = 0;
  p->nParkPath = 0;
}

/* Gives back the statement only (reset, or finalized when private). */
static void dcurDropStmt(DCursor *p) {
  if (p->pInstStmt) {
    if (p->bOwnInst) {
      sqlite3_finalize(p->pInstStmt);
    } else {
      sqlite3_reset(p->pInstStmt);
    }
  }
  p->pInstStmt = NULL;
  p->bOwnInst = 0;
  p->iInstTx = 0;
  if (p->pStmt) {
    if (p->bOwnStmt) {
      sqlite3_finalize(p->pStmt);
    } else {
      sqlite3_reset(p->pStmt);
      sqlite3_clear_bindings(p->pStmt);
    }
  }
  p->pStmt = NULL;
  p->bOwnStmt = 0;
}

/* ------------------------------------------------------------ stepping */

/* The recheck itself: a read transaction, the schema made current. */
static int dcurRecheckNow(DCursor *p, int *pbRedo, char **pzErr) {
  Schema *pNew = NULL;
  int rc;
  dcurDropStmt(p);
  rc = storeReaderRecheck(p->call.pStore, p->call.pConn, &pNew, pzErr);
  if (rc != SQLITE_OK) return rc;
  schemaUnref(p->call.pSchema);
  p->call.pSchema = pNew;
  *pbRedo = 1;
  return SQLITE_OK;
}

int dcurRecheck(DCursor *p, int *pbRedo, char **pzErr) {
  *pbRedo = 0;
  if (p->call.pConn == NULL || !storeReaderIsLazy(p->call.pConn)) return SQLITE_OK;
  return dcurRecheckNow(p, pbRedo, pzErr);
}

/* After the first row: the host may keep us open indefinitely, so a file
** store's writer must be able to have the rest set aside. The in-memory
** store has no WAL. An interrupt of the host that the first row's
** statement did not see (a file store's reader polls it every few
** thousand instructions) would otherwise be seen by the host's VM after
** the row, failing the statement with SQLite's bare "interrupted": asked
** here, once per filter, so the table reports it as its own. */
static int dcurStarted(DCursor *p, int rc) {
  if (rc == SQLITE_OK && !p->bEof && vcallInterrupted(&p->call)) {
    dcurRelease(p);
    p->bEof = 1;
    return sqlioVtabError(p->base.pVtab, p->zFunc, SQLITE_INTERRUPT, NULL);
  }
  if (rc == SQLITE_OK && !p->bEof && p->call.pConn && storePath(p->call.pStore)[0] != 0) {
    storeHoldAdd(p->call.pStore, &p->hold);
    p->bHold = 1;
  }
  return rc;
}

int dcurStepFirst(DCursor *p, int *pbRedo) {
  int rc;
  *pbRedo = 0;
  if (storeReaderIsLazy(p->call.pConn)) {
    int bStale = 0;
    rc = sqlite3_step(p->pStmt);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
      int rc2 = storeReaderCheck(p->call.pStore, p->call.pConn, &bStale);
      if (rc2 == SQLITE_OK && bStale) {
        char *zErr = NULL;
        /* the check ended the reader's lazy state: recheck unconditionally */
        rc2 = dcurRecheckNow(p, pbRedo, &zErr);
        if (rc2 != SQLITE_OK) {
          dcurRelease(p);
          rc2 = sqlioVtabError(p->base.pVtab, p->zFunc, rc2, zErr);
        }
        sqlite3_free(zErr);
        return rc2;
      }
      if (rc2 != SQLITE_OK) {
        dcurRelease(p);
        return sqlioVtabError(p->base.pVtab, p->zFunc, rc2, NULL);
      }
    }
    return dcurStarted(p, dcurStepDone(p, rc, NULL));
  }
  return dcurStarted(p, dcurStepDone(p, sqlite3_step(p->pStmt), NULL));
}

int dcurStep(DCursor *p) {
  int rc;
  char *zErr = NULL;
  if (!p->bHold) return dcurStepDone(p, p->bOne ? SQLITE_DONE : sqlite3_step(p->pStmt), NULL);
  dcurLock(p);
  if (p->bBuf) {
    p->nBufBytes -= DCUR_ROW_BYTES(sqlite3_value_bytes(p->aRow[p->iRow].pV));
    sqlite3_value_free(p->aRow[p->iRow].pV);
    p->aRow[p->iRow].pV = NULL;
    if (++p->iRow < p->nRow) {
      dcurUnlock(p);
      return dcurStepDone(p, SQLITE_ROW, NULL);
    }
    p->nRow = p->iRow = 0;
    p->nBufBytes = 0;
    if (p->spill.db) {
      /* then the spill's rows; past them, pStmt's when it still runs */
      rc = dcurSpillNext(p);
      if (rc != SQLITE_DONE) {
        p->bEof = rc != SQLITE_ROW;
        if (p->bEof && rc != SQLITE_NOMEM) {
          zErr = sqlite3_mprintf("cannot read the rows set aside: %s", qstErrmsg(&p->spill, rc));
        }
        dcurUnlock(p);
        rc = dcurStepDone(p, rc, zErr);
        sqlite3_free(zErr);
        return rc;
      }
      qstClose(&p->spill);
    }
    p->bBuf = 0;
  }
  if (p->bStmtGone) {
    /* every row was set aside: the end, or the error the statement gave */
    rc = p->rcSpill ? p->rcSpill : SQLITE_DONE;
    zErr = p->zSpillErr;
    p->zSpillErr = NULL;
  } else {
    rc = p->bOne ? SQLITE_DONE : sqlite3_step(p->pStmt);
  }
  /* Under the lock: a writer's set-aside reads it. */
  p->bEof = rc != SQLITE_ROW;
  dcurUnlock(p);
  rc = dcurStepDone(p, rc, zErr);
  sqlite3_free(zErr);
  return rc;
}

/* What a step's result rc means for the cursor (see dcurStep); zErr the
** message of an error met while setting rows aside, else NULL. Not called
** with the lock held (the release removes the hold). */
static int dcurStepDone(DCursor *p, int rc, const char *zErr) {
  /* before the host's VM sees an interrupt after the row (dcurStarted) */
  if (rc == SQLITE_ROW && vcallRowInterrupted(&p->call)) rc = SQLITE_INTERRUPT;
  if (rc == SQLITE_ROW) {
    p->bEof = 0;
    p->iRowid++;
    return SQLITE_OK;
  }
  p->bEof = 1;
  if (rc == SQLITE_DONE) {
    dcurReleaseKeep(p);
    return SQLITE_OK;
  }
  {
    char *zMsg = sqlite3_mprintf("%s", vcallInterrupted(&p->call) ? "interrupted"
                                       : zErr ? zErr : sqlite3_errmsg(p->call.pConn->db));
    if (vcallInterrupted(&p->call)) rc = SQLITE_INTERRUPT;
    dcurRelease(p);
    rc = sqlioVtabError(p->base.pVtab, p->zFunc, zMsg ? rc : SQLITE_NOMEM, zMsg);
    sqlite3_free(zMsg);
  }
  return rc;
}

/* ------------------------------------------------------------ columns */

sqlite3_int64 dcurInt(DCursor *p, int iCol) {
  const DCurRow *pR;
  if (!p->bBuf) return sqlite3_column_int64(p->pStmt, iCol);
  pR = &p->aRow[p->iRow];
  switch (iCol) {
    case DCUR_COL_E: return pR->e;
    case DCUR_COL_A: return pR->a;
    case DCUR_COL_TX: return pR->tx;
    case DCUR_COL_TAG: return pR->tag;
    default: return pR->added;
  }
}

/* The :db/txInstant of tx into iInstUs/bInstUs (iInstTx remembers which). */
static int dcurInstant(DCursor *p, sqlite3_int64 tx, char **pzErr) {
  static const char zSql[] = "SELECT v FROM datoms WHERE e = ?1 AND a = 3";
  int rc = SQLITE_OK;
  if (tx == p->iInstTx && tx != 0) return SQLITE_OK;
  if (p->pInstStmt == NULL) {
    rc = qCacheStmt(p->call.pConn, zSql, (int)sizeof zSql - 1, &p->pInstStmt, &p->bOwnInst, pzErr);
    if (rc != SQLITE_OK) return rc;
  }
  sqlite3_reset(p->pInstStmt);
  sqlite3_bind_int64(p->pInstStmt, 1, tx);
  p->iInstTx = 0;
  rc = sqlite3_step(p->pInstStmt);
  p->bInstUs = rc == SQLITE_ROW;      /* a tx without an instant: NULL */
  if (rc == SQLITE_ROW) p->iInstUs = sqlite3_column_int64(p->pInstStmt, 0);
  sqlite3_reset(p->pInstStmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return rc;
  p->iInstTx = tx;
  return SQLITE_OK;
}

/* A bound SQLite checks on a tuple's v would compare its JSON text, not
** the tuple order the rows come in: the row's v is an error instead. */
static void dcurTupleBoundsError(DCursor *p, const char *zIdent, sqlite3_context *pCtx) {
  char *zErr = sqlite3_mprintf("%s: " DCUR_TUPLE_BOUNDS, p->zFunc, zIdent,
                               p->bLog ? DCUR_TUPLE_LOG : DCUR_TUPLE_DATOMS);
  if (zErr == NULL) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_error(pCtx, zErr, -1);
  sqlite3_free(zErr);
}

/* The current row's column iCol (see dcurColumn); lock held when bHold. */
static void dcurColumnNow(DCursor *p, int iCol, sqlite3_context *pCtx) {
  const DCurRow *pR = p->bBuf ? &p->aRow[p->iRow] : NULL;
  switch (iCol) {
    case DCUR_COL_A: {
      sqlite3_int64 a = dcurInt(p, DCUR_COL_A);
      const char *z;
      if (p->zIdentA == NULL || p->iIdentA != a) {
        p->zIdentA = schemaIdent(p->call.pSchema, a);
        p->iIdentA = a;
      }
      z = p->zIdentA;
      if (z) {
        sqlite3_result_text(pCtx, z, -1, SQLITE_TRANSIENT);
      } else {
        sqlite3_result_int64(pCtx, a);
      }
      break;
    }
    case DCUR_COL_V: {
      int tag = (int)dcurInt(p, DCUR_COL_TAG);
      if (tag == TAG_BYTES) {
        /* a tuple attribute's values are stored as bytes: its JSON array */
        const Attr *pA = schemaAttr(p->call.pSchema, dcurInt(p, DCUR_COL_A));
        if (pA && pA->type == VT_TUPLE) tag = TAG_TUPLE;
        if (tag == TAG_TUPLE && p->bBounds) {
          dcurTupleBoundsError(p, pA->zIdent, pCtx);
          break;
        }
      }
      valueResultFromStored(pCtx, pR ? pR->pV : sqlite3_column_value(p->pStmt, DCUR_COL_V), tag);
      break;
    }
    case DCUR_COL_INST: {
      sqlite3_int64 us;
      if (pR) {
        if (!pR->bInst) return;
        us = pR->iInst;
      } else {
        char *zErr = NULL;
        int rc = dcurInstant(p, dcurInt(p, DCUR_COL_TX), &zErr);
        sqlite3_free(zErr);
        if (rc != SQLITE_OK) {
          sqlite3_result_error_code(pCtx, rc);
          return;
        }
        if (!p->bInstUs) return;
        us = p->iInstUs;
      }
      /* a transaction's rows share its instant: formatted once */
      if (!p->bInstFmt || p->iInstFmt != us) {
        ednFormatInstant(us, p->zInst);
        p->iInstFmt = us;
        p->bInstFmt = 1;
      }
      sqlite3_result_text(pCtx, p->zInst, -1, SQLITE_TRANSIENT);
      break;
    }
    case DCUR_COL_ADDED:
      sqlite3_result_int(pCtx, (int)dcurInt(p, DCUR_COL_ADDED));
      break;
    default:
      sqlite3_result_int64(pCtx, dcurInt(p, iCol));
      break;
  }
}

int dcurColumn(DCursor *p, const unsigned char *aCol, int nCol, int iCol, sqlite3_context *pCtx) {
  if (iCol >= nCol) {
    dcurArgResult(p, iCol - nCol, pCtx);
    return SQLITE_OK;
  }
  if (p->pStmt == NULL || p->bEof) return SQLITE_OK;
  if (!p->bHold) {
    dcurColumnNow(p, aCol[iCol], pCtx);
    return SQLITE_OK;
  }
  dcurLock(p);
  dcurColumnNow(p, aCol[iCol], pCtx);
  dcurUnlock(p);
  return SQLITE_OK;
}

int dcurNext(sqlite3_vtab_cursor *pCur) {
  return dcurStep((DCursor *)pCur);
}

int dcurEof(sqlite3_vtab_cursor *pCur) {
  return ((DCursor *)pCur)->bEof;
}

int dcurRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid) {
  *pRowid = ((DCursor *)pCur)->iRowid;
  return SQLITE_OK;
}
