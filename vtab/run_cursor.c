/*
** run_cursor.c — the streaming core of the query tables (run_cursor.h):
** the run stepped under the cursor's lock, the snapshot hold registered
** while rows are left, and the set-aside a writer asks of it.
**
** HOW IT WORKS
** rcurStart opens the compiled query on the checked-out reader and steps
** to the first row; rcurStep steps the store's statement, so rows stream
** and LIMIT 1 costs one row. The connection goes back to the pool at EOF,
** on an error and in rcurRelease. While a cursor holds it,
** sqlite3_interrupt() on the host stops the store's statement
** (interrupt.h). A cursor with rows left is registered with the store as
** a snapshot hold, so a writer that needs the WAL back can have the rest
** of its rows set aside (rcurLetGo; peer fault B25 in
** ../shared/acceptance/peer-faults.md).
*/
#include <stddef.h>
#include <string.h>
#include "row_lock.h"
#include "run_cursor.h"
#include "sqlio.h"

/* The most rows a writer sets aside for one cursor in one commit
** (rcurLetGo); its CPU time is bounded too (pBudget). */
#define RCUR_SPILL_ROWS 200000

/* The longest opts shape (qOptsShape) whose runs are bound again in place
** (rcurResume): a query of up to 30 scalar inputs. */
#define RCUR_SHAPE_MAX 32

void rcurLock(RunCursor *p) {
  rowLock(&p->lock);
}

void rcurUnlock(RunCursor *p) {
  rowUnlock(&p->lock);
}

/* StoreHold.xRelease, on the writer's thread (storeHoldsRelease): sets
** the rest of the rows aside and ends the store read, so the WAL can be
** checkpointed and restarted while the host keeps this cursor open. The
** host connection is not touched (its thread may be waiting for our
** lock), so the store connection's interrupt polling, which probes the
** host, is paused. The writer has committed and waits on this copy, so it
** has a budget: RCUR_SPILL_ROWS, and pBudget, the writer thread's CPU
** time shared by the holds one commit asks (checked between rows: finding
** one more row, or its pulls, can pass it; CPU rather than wall time, so
** a loaded machine sets as many rows aside per commit as an idle one). A longer rest (a wide join, a cross product left open) is copied a
** part per commit: the cursor keeps its snapshot meanwhile and is asked
** again after the next commit, each delayed at most by the budget; once
** the WAL has passed half of MENTAT_WAL_RESTART_BYTES (pBudget->bDrop) a
** rest that does not fit in the budget is given up instead, and the
** cursor reports that after the rows it set aside (query_spill.c), so
** the WAL bound holds whatever the size of the rest.
** If the copy cannot start, the cursor keeps its snapshot and streams as
** before. Returns 1 when the snapshot is let go, 2 when part of the rest
** was set aside, 0 when the copy failed. */
static int rcurLetGo(StoreHold *pHold, ConfigBudget *pBudget) {
  RunCursor *p = (RunCursor *)((char *)pHold - offsetof(RunCursor, hold));
  int bLetGo = 1;
  rcurLock(p);
  if (p->pRun && !p->bEof && p->call.pConn) {
    int bAll = 0;
    vcallPause(&p->call, 1);
    if (qSpillRest(p->pRun, RCUR_SPILL_ROWS, pBudget, &bAll, NULL) != SQLITE_OK) {
      vcallPause(&p->call, 0);
      bLetGo = 0;
    } else if (bAll) {
      storeReaderEndRead(p->call.pStore, p->call.pConn);
    } else {
      vcallPause(&p->call, 0);
      bLetGo = 2;                   /* more next commit */
    }
  }
  rcurUnlock(p);
  return bLetGo;
}

void rcurInit(RunCursor *p) {
  qOptsInit(&p->opts);
  p->bEof = 1;
  p->hold.xRelease = rcurLetGo;
  atomic_init(&p->lock, 0);
}

void rcurRelease(RunCursor *p) {
  if (p->bHold) {
    /* Waits for a release in progress; after it none can start. */
    storeHoldRemove(p->call.pStore, &p->hold);
    p->bHold = 0;
  }
  qRunClose(p->pRun);
  p->pRun = NULL;
  qRunClose(p->pParked);
  p->pParked = NULL;
  vcallEnd(&p->call);
  qOptsReset(&p->opts);
  p->bEof = 1;
}

/* At the end of a run of a keeping cursor (bKeep): the run, its call and
** opts kept for the next run of the same query (rcurResume), the hold
** removed (no rows are left to set aside) and the reader parked (no
** snapshot). 0 when this run cannot be kept; the caller releases it. */
static int rcurPark(RunCursor *p) {
  if (!p->bKeep || p->pRun == NULL || p->opts.nSource || p->opts.zWith || p->opts.bExplain
      || p->opts.bWithReport) {
    return 0;
  }
  if (p->bHold) {
    storeHoldRemove(p->call.pStore, &p->hold);
    p->bHold = 0;
  }
  if (!vcallPark(&p->call)) return 0;
  p->pParked = p->pRun;
  p->pRun = NULL;
  p->bEof = 1;
  return 1;
}

int rcurStep(RunCursor *p, char **pzErr) {
  int rc;
  rcurLock(p);
  rc = qRunStep(p->pRun, pzErr);
  /* Under the lock: a writer's thread asking the cursor to let go of its
  ** snapshot (rcurLetGo) reads it. */
  p->bEof = rc != SQLITE_ROW;
  rcurUnlock(p);
  /* before the host's VM sees an interrupt after the row (rcurFirstInterrupted) */
  if (rc == SQLITE_ROW && vcallRowInterrupted(&p->call)) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("interrupted");
    rc = *pzErr ? SQLITE_INTERRUPT : SQLITE_NOMEM;
  }
  if (rc == SQLITE_ROW) {
    p->iRowid++;
    return SQLITE_OK;
  }
  /* At the end the store connection is returned at once, so a host that
  ** keeps a finished statement holds no snapshot; an interrupted or failed
  ** run holds nothing either. A keeping cursor keeps a finished run. */
  if (rc == SQLITE_DONE && rcurPark(p)) return SQLITE_OK;
  rcurRelease(p);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* An interrupt of the host that the first row's work did not see (a file
** store's reader polls it every few thousand instructions and not while
** preparing) would otherwise be seen by the host's VM after the row, and
** fail the statement with SQLite's bare "interrupted": asked here, so the
** table reports it as its own (SPEC.md §7), once per run. */
static int rcurFirstInterrupted(RunCursor *p, char **pzErr) {
  if (p->bEof || !vcallInterrupted(&p->call)) return SQLITE_OK;
  rcurRelease(p);
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("interrupted");
  return *pzErr ? SQLITE_INTERRUPT : SQLITE_NOMEM;
}

/* rcurStart's steps after the run is open: the first row, a with-span's
** rows set aside, the hold. */
static int rcurFirst(RunCursor *p, char **pzErr) {
  int rc;
  p->iRowid = 0;
  rc = rcurStep(p, pzErr);
  if (rc == SQLITE_OK && !p->bEof && p->call.bWith) {
    /* A with-span holds the store's write: every row is set aside and the
    ** write rolled back before the host sees the first row. */
    rc = qSpillAll(p->pRun, pzErr);
    if (rc == SQLITE_OK) {
      vcallEndWith(&p->call);
    } else {
      rcurRelease(p);
      return rc;
    }
  }
  /* Rows left: the host may keep us open indefinitely. The in-memory
  ** store has no WAL and its one connection is the writer. A with-cursor's
  ** rows are set aside already. */
  if (rc == SQLITE_OK && !p->bEof && p->call.pConn && storePath(p->call.pStore)[0] != 0) {
    storeHoldAdd(p->call.pStore, &p->hold);
    p->bHold = 1;
  }
  return rc == SQLITE_OK ? rcurFirstInterrupted(p, pzErr) : rc;
}

int rcurStart(RunCursor *p, const char *zQuery, int nQuery, char **pzErr) {
  int rc;
  /* A with-span's rows outlive it: the plan must not stay in its writer's cache. */
  p->opts.bOwnPlan = p->call.bWith;
  rc = qRunOpen(p->call.pConn, p->call.pSchema, zQuery, nQuery, &p->opts, &p->pRun, pzErr);
  p->iRowid = 0;
  if (rc != SQLITE_OK) {
    rcurRelease(p);
    return rc;
  }
  return rcurFirst(p, pzErr);
}

int rcurResume(RunCursor *p, sqlite3 *host, const char *zPath, int nPath, const char *zQuery,
               int nQuery, int bSameOpts, const char *zOpts, int nOpts, char **pzErr) {
  int rc;
  int bRebind = 0;
  if (p->pParked == NULL || p->pRun != NULL) return SQLITE_NOTFOUND;
  rc = vcallResume(&p->call, host, zPath, nPath, pzErr);
  if (rc == SQLITE_OK && !bSameOpts) {
    /* New opts of the shape the kept run was planned for need only their
    ** inputs bound again; the run's bindings into the old opts are not
    ** stepped before that (qRunRestart), or the run is closed first. */
    unsigned char aOld[RCUR_SHAPE_MAX], aNew[RCUR_SHAPE_MAX];
    int nOld = qOptsShape(&p->opts, aOld, (int)sizeof aOld);
    rc = qOptsParse(&p->opts, zOpts, nOpts, pzErr);
    if (rc == SQLITE_OK && (p->opts.nSource || p->opts.zWith || p->opts.bExplain
                            || p->opts.bWithReport)) {
      rc = SQLITE_NOTFOUND;       /* these take the call's full opening */
    }
    bRebind = nOld >= 0 && qOptsShape(&p->opts, aNew, (int)sizeof aNew) == nOld
              && memcmp(aOld, aNew, (size_t)nOld) == 0;
    if (!bRebind) {
      qRunClose(p->pParked);
      p->pParked = NULL;
    }
  }
  if (rc != SQLITE_OK) {
    rcurRelease(p);
    return rc;
  }
  if (p->pParked) {
    rc = qRunRestart(p->pParked, p->call.pSchema, bRebind, pzErr);
    if (rc == SQLITE_OK) {
      p->pRun = p->pParked;
      p->pParked = NULL;
      return rcurFirst(p, pzErr);
    }
    if (rc != SQLITE_NOTFOUND) {
      rcurRelease(p);
      return rc;
    }
  }
  qRunClose(p->pParked);
  p->pParked = NULL;
  return rcurStart(p, zQuery, nQuery, pzErr);
}

int rcurColumn(RunCursor *p, int i, sqlite3_context *pCtx, const char *zFunc, const char *zCol) {
  int rc = SQLITE_OK;
  if (p->pRun == NULL) return SQLITE_OK;   /* at EOF: NULL */
  rcurLock(p);
  if (i < qRunColumnCount(p->pRun)) rc = qRunColumnResult(p->pRun, i, pCtx);
  /* A pull in :find can fail here (its message is kept by the run); the
  ** message travels as the column's error result. A value past the host's
  ** SQLITE_LIMIT_LENGTH names the column. */
  if (rc == SQLITE_TOOBIG) sqlioColumnTooBig(pCtx, zFunc, zCol);
  else if (rc != SQLITE_OK) sqlioError(pCtx, zFunc, rc, qRunErrMsg(p->pRun));
  rcurUnlock(p);
  return rc;
}
