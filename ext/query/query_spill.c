/*
** query_spill.c — setting a run's rest aside, so a host cursor left open
** does not pin the store's WAL: the current row and the later ones (with
** the JSON of pull elements, which read the store) are copied into a
** private temporary database and the run goes on from the copy.
**
** Takes a QueryRun on a current row (query_run_context.h); gives the same rows
** from the copy, with the store statement reset, or, past the budget, the
** copied rows first and then the store statement's, still on its
** snapshot. An error of the store statement after some rows is kept and
** reported after them, as streaming would. Calls SQLite and the run's
** pulls (query_run_pull.c).
*/
#include <string.h>
#include "config.h"
#include "query_spill.h"
#include "query_spill_table.h"

/* Past the budget with pBudget->bDrop: the rest is given up, reported after
** the rows set aside. */
static int qSpillDrop(QueryRun *p, const ConfigBudget *pBudget) {
  if (pBudget == NULL || !pBudget->bDrop) return 0;
  p->rcSpill = SQLITE_ABORT;
  p->zSpillErr = sqlite3_mprintf("%s", QST_DROPPED_MSG);
  return 1;
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

/* The next row of the spill table. Rows a later qSpillRest appended while
** this reader was on its way may or may not be seen by it (SQLite leaves
** that open): past its end it starts again after the last row it gave. */
static int qSpillNextRow(QueryRun *p) {
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
    rc = qRunPull(p, i, pOut, pzErr);
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

/* qSpillRest after a partial copy: appends the store statement's next rows
** to the spill table within the budget. Done, the store statement is reset
** (the snapshot can end) and the spill reader gives every row. */
static int qSpillMore(QueryRun *p, sqlite3_int64 nMaxRows, ConfigBudget *pBudget, int *pbAll,
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
    if ((nMaxRows > 0 && nRows >= nMaxRows) || configBudgetSpent(pBudget)) {
      if (qSpillDrop(p, pBudget)) rcStore = SQLITE_ABORT;
      break;
    }
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
    if (rc == SQLITE_OK && rcStore != SQLITE_DONE && p->rcSpill == SQLITE_OK) {
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

static int qSpillRestOnce(QueryRun *p, sqlite3_int64 nMaxRows, ConfigBudget *pBudget, int *pbAll,
                          char **pzErr) {
  sqlite3 *db = NULL;
  sqlite3_stmt *pIns = NULL, *pSel = NULL;
  sqlite3_str *pDdl = NULL, *pDml = NULL;
  char *zDdl = NULL, *zDml = NULL, *zErr = NULL;
  int nStmtCol, nSpillCol, i, rc, bStepped = 0, bPartial = 0, rcStore = SQLITE_DONE;
  sqlite3_int64 nRows = 0;

  if (pbAll) *pbAll = p->pRest == NULL;
  if (p->pSpillDb) return p->pRest ? qSpillMore(p, nMaxRows, pBudget, pbAll, pzErr) : SQLITE_OK;
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
    /* every row: one can take long (its pulls), and the budget reads the
    ** CPU clock only when the wall clock (a vDSO read) says it may be spent */
    if ((nMaxRows > 0 && nRows >= nMaxRows) || configBudgetSpent(pBudget)) {
      if (qSpillDrop(p, pBudget)) rcStore = SQLITE_ABORT;   /* it ends with the rest */
      else bPartial = 1;        /* the store statement stays on this row */
      break;
    }
    rcStore = sqlite3_step(p->pStmt);
    if (rcStore != SQLITE_ROW) break;
    rc = qSpillRow(p, pIns, nStmtCol, &zErr);
  }
  if (rc == SQLITE_OK && !bPartial && rcStore != SQLITE_DONE && p->rcSpill == SQLITE_OK) {
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

int qSpillStep(QueryRun *p) {
  int rc;
  if (p->pRest == NULL) return qSpillNextRow(p);
  rc = qSpillNextRow(p);
  if (rc != SQLITE_DONE) return rc;
  qSpillEnd(p);
  return sqlite3_step(p->pStmt);
}

void qSpillClose(QueryRun *p) {
  if (p->pSpillDb) {
    sqlite3_finalize(p->pStmt);       /* the spill's reader; the plan's is reset */
    p->pStmt = p->pRest;              /* after a partial copy, the plan's */
    p->pRest = NULL;
    sqlite3_close_v2(p->pSpillDb);
    p->pSpillDb = NULL;
    sqlite3_free(p->aSpillPull);
    p->aSpillPull = NULL;
  }
  sqlite3_free(p->zSpillErr);
  p->zSpillErr = NULL;
}

int qSpillAll(QueryRun *p, char **pzErr) {
  int bAll = 0;
  int rc = qSpillRest(p, 0, NULL, &bAll, pzErr);
  if (rc == SQLITE_OK && p->rcSpill != SQLITE_OK) {
    /* The copy stopped after some rows: the run still holds the store's
    ** statement (reset), and the rows are not all there. */
    rc = p->rcSpill;
    if (p->zSpillErr) {
      sqlite3_free(*pzErr);
      *pzErr = p->zSpillErr;
      p->zSpillErr = NULL;
    }
  } else if (rc == SQLITE_OK && (!bAll || p->pSpillDb == NULL || !p->bOwnPlan)) {
    /* no budget, so never partial; a cached plan may go with the cache */
    rc = SQLITE_MISUSE;
  } else if (rc == SQLITE_OK) {
    sqlite3_finalize(p->pPlan->pStmt);
    p->pPlan->pStmt = NULL;
    p->pConn = NULL;
  }
  return rc;
}

int qSpillRest(QueryRun *p, sqlite3_int64 nMaxRows, ConfigBudget *pBudget, int *pbAll,
               char **pzErr) {
  /* Another thread (a writer) steps the statement here: the host's
  ** functions, called through proxies on the host connection, whose own
  ** thread may wait for this one, are off meanwhile. */
  sqlite3 **ppHost = p->pConn ? p->ppCallHost : NULL;
  sqlite3 *pSave = ppHost ? *ppHost : NULL;
  int rc;
  if (ppHost) *ppHost = NULL;
  rc = qSpillRestOnce(p, nMaxRows, pBudget, pbAll, pzErr);
  if (ppHost) *ppHost = pSave;
  return rc;
}
