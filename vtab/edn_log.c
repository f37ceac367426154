/*
** edn_log.c — the eponymous virtual table edn_log: Datomic's log API
** (tx-range) as a table-valued function whose rows stream from the store's
** log (README "edn_log").
**
**   SELECT tx, tx_instant, e, a, v, added FROM edn_log('app.db');
**   SELECT * FROM edn_log('app.db', 268435458, 268435460);
**   SELECT * FROM edn_log('app.db', '{"edn": "#inst \"2026-01-01T00:00:00Z\""}');
**   SELECT * FROM edn_log('app.db', :last + 1);            -- a change feed
**
** Columns tx, tx_instant (native, RFC 3339 TEXT), e, a (ident TEXT), v
** (native, as edn_q's cN), added (1 or 0); hidden db_path, start_tx,
** end_tx. start is inclusive, end exclusive (Datomic's tx-range); each is a
** tx id or {"edn": "#inst \"...\""}, the first transaction at or after that
** instant; NULL or absent is open.
**
** Takes the arguments as equality constraints on the hidden columns (as
** edn_q) and LIMIT; gives every datom of the log (timeline 0) in tx order
** and, inside a transaction, the order it was logged in (rowid), or an
** "edn_log: " error. Calls the shared cursor (datoms_cursor.h).
**
** The store keeps a (tx) index on the log once it is tuned
** (idx_mentat_log_tx, store_tune.c), so a range reads only its rows; a
** small store's log is scanned.
*/
#include <string.h>
#include "sqlite_api.h"
#include "edn_log.h"
#include "datoms_cursor.h"
#include "sqlio.h"
#include "value.h"

#define EDNL_COL_TX      0
#define EDNL_COL_INST    1
#define EDNL_COL_E       2
#define EDNL_COL_A       3
#define EDNL_COL_V       4
#define EDNL_COL_ADDED   5
#define EDNL_COL_DBPATH  6
#define EDNL_NARG        3      /* db_path, start_tx, end_tx */
#define EDNL_LIMIT       (1 << 3)
/* The statement reads a hidden column (colUsed): only then are the
** arguments copied for the hidden columns to echo. */
#define EDNL_ECHO        (1 << 4)
/* A range constraint on v: SQLite compares the rows' v with it, which
** over a tuple's JSON text is no tuple order (DCursor.bBounds). */
#define EDNL_VBOUND      (1 << 5)

static const char ednlDecl[] =
    "CREATE TABLE x(tx, tx_instant, e, a, v, added, db_path HIDDEN, start_tx HIDDEN,"
    " end_tx HIDDEN)";

typedef struct EdnlVtab {
  sqlite3_vtab base;
  sqlite3 *db;                  /* the host connection */
  DCursor *pSpare;              /* a closed cursor kept for the next xOpen */
} EdnlVtab;

static int ednlConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                       sqlite3_vtab **ppVtab, char **pzErr) {
  int rc;
  (void)pAux; (void)argc; (void)argv; (void)pzErr;
  rc = sqlioConnectTable(db, ednlDecl, sizeof(EdnlVtab), ppVtab);
  if (rc == SQLITE_OK) ((EdnlVtab *)*ppVtab)->db = db;
  return rc;
}

static int ednlDisconnect(sqlite3_vtab *pVtab) {
  dcurSpareFree(&((EdnlVtab *)pVtab)->pSpare);
  sqlite3_free(pVtab);
  return SQLITE_OK;
}

static int ednlOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCur) {
  return dcurOpen(&((EdnlVtab *)pVtab)->pSpare, "edn_log", 1, ppCur);
}

static int ednlClose(sqlite3_vtab_cursor *cur) {
  dcurClose(&((EdnlVtab *)cur->pVtab)->pSpare, (DCursor *)cur);
  return SQLITE_OK;
}

/* The first transaction at or after the instant ?N; past the last one none
** (INT64_MAX: a start there gives no rows, an end there is open). The tx
** instants grow with the tx ids (the transactor keeps them increasing). */
static void ednlInstBound(sqlite3_str *pSql, const char *zOp, int iParam) {
  sqlite3_str_appendf(pSql, " AND d.tx %s coalesce((SELECT i.e FROM datoms i WHERE i.a = 3"
                      " AND i.index_avet IS NOT 0 AND i.value_type_tag = 4 AND i.v >= ?%d"
                      " ORDER BY i.v, i.e LIMIT 1), 9223372036854775807)", zOp, iParam);
}

/* The SELECT of the log range; the bounds ?1 and ?2, the LIMIT ?3. */
static char *ednlSql(const DCursor *pCur, int bStart, int bStartInst, int bEnd, int bEndInst,
                     int bLimit) {
  const Schema *pS = pCur->call.pSchema;
  sqlite3_str *pSql = sqlite3_str_new(NULL);
  int i, n = schemaAttrCount(pS), bFirst = 1;
  sqlite3_str_appendall(pSql, "SELECT d.e, d.a, ");
  for (i = 0; i < n; i++) {
    const Attr *pA = schemaAttrAt(pS, i);
    if (!pA->bFulltext) continue;
    /* a fulltext attribute's value is the rowid of its text */
    sqlite3_str_appendf(pSql, "%s%lld", bFirst ? "CASE WHEN d.a IN (" : ",", pA->e);
    bFirst = 0;
  }
  sqlite3_str_appendall(pSql, bFirst ? "d.v" : ") THEN (SELECT text FROM fulltext_values"
                                               " WHERE rowid = d.v) ELSE d.v END");
  sqlite3_str_appendall(pSql,
      ", d.value_type_tag, d.tx, d.added FROM timelined_transactions d WHERE +d.timeline IS 0");
  if (bStart && bStartInst) ednlInstBound(pSql, ">=", 1);
  else if (bStart) sqlite3_str_appendall(pSql, " AND d.tx >= ?1");
  if (bEnd && bEndInst) ednlInstBound(pSql, "<", 2);
  else if (bEnd) sqlite3_str_appendall(pSql, " AND d.tx < ?2");
  sqlite3_str_appendall(pSql, " ORDER BY d.tx, d.rowid");
  if (bLimit) sqlite3_str_appendall(pSql, " LIMIT ?3");
  return sqlite3_str_finish(pSql);
}

/* Opens the call and starts the range. */
static int ednlRun(DCursor *pCur, sqlite3 *host, sqlite3_value **apArg, sqlite3_int64 iLimit,
                   char **pzErr) {
  sqlite3_int64 iStart = 0, iEnd = 0;
  int bStart = apArg[1] && sqlite3_value_type(apArg[1]) != SQLITE_NULL;
  int bEnd = apArg[2] && sqlite3_value_type(apArg[2]) != SQLITE_NULL;
  int bStartInst = 0, bEndInst = 0, rc = SQLITE_OK, nTry, bRedo = 0;
  sqlite3_stmt *pStmt = NULL;
  char *zSql;
  if (bStart) rc = dcurTimeArg(apArg[1], "start_tx", &iStart, &bStartInst, pzErr);
  if (rc == SQLITE_OK && bEnd) rc = dcurTimeArg(apArg[2], "end_tx", &iEnd, &bEndInst, pzErr);
  if (rc == SQLITE_OK) rc = dcurBegin(pCur, host, apArg[0], NULL, pzErr);
  /* twice at most: once more on the schema of a newer snapshot (the SQL
  ** names the fulltext attributes) */
  for (nTry = 0; rc == SQLITE_OK && nTry < 2; nTry++) {
    zSql = ednlSql(pCur, bStart, bStartInst, bEnd, bEndInst, iLimit >= 0);
    if (zSql == NULL) return SQLITE_NOMEM;
    rc = dcurPrepare(pCur, zSql, (int)strlen(zSql), &pStmt, pzErr);
    sqlite3_free(zSql);
    if (rc == SQLITE_OK && bStart) rc = sqlite3_bind_int64(pStmt, 1, iStart);
    if (rc == SQLITE_OK && bEnd) rc = sqlite3_bind_int64(pStmt, 2, iEnd);
    if (rc == SQLITE_OK && iLimit >= 0) rc = sqlite3_bind_int64(pStmt, 3, iLimit);
    if (rc == SQLITE_OK) rc = dcurStepFirst(pCur, &bRedo);
    if (!bRedo) break;
  }
  return rc;
}

static int ednlFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                      sqlite3_value **argv) {
  DCursor *pCur = (DCursor *)cur;
  sqlite3_value *apArg[EDNL_NARG] = {NULL, NULL, NULL};
  sqlite3_int64 iLimit = -1;
  char *zErr = NULL;
  int i, j = 0, rc;
  (void)idxStr;
  dcurRelease(pCur);
  pCur->bEof = 1;
  pCur->iRowid = 0;
  pCur->bBounds = (idxNum & EDNL_VBOUND) != 0;
  if ((idxNum & 1) == 0) return sqlioVtabError(cur->pVtab, "edn_log", SQLITE_ERROR,
                                          "missing argument db_path");
  for (i = 0; i < EDNL_NARG && j < argc; i++) {
    if (idxNum & (1 << i)) apArg[i] = argv[j++];
  }
  if ((idxNum & EDNL_LIMIT) && j < argc && sqlite3_value_type(argv[j]) == SQLITE_INTEGER) {
    iLimit = sqlite3_value_int64(argv[j]);
  }
  rc = dcurSaveArgs(pCur, apArg, (idxNum & EDNL_ECHO) ? EDNL_NARG : 0);
  if (rc != SQLITE_OK) return rc;
  if (sqlite3_value_type(apArg[0]) == SQLITE_NULL) return SQLITE_OK;   /* no rows */
  rc = ednlRun(pCur, ((EdnlVtab *)cur->pVtab)->db, apArg, iLimit, &zErr);
  if (rc != SQLITE_OK && zErr) {
    rc = sqlioVtabError(cur->pVtab, "edn_log", rc, zErr);
    dcurRelease(pCur);
  }
  sqlite3_free(zErr);
  return rc;
}

/* The table's visible columns tx, tx_instant, e, a, v, added: the row's
** columns they show. */
static const unsigned char ednlRowCols[EDNL_COL_DBPATH] = {
  DCUR_COL_TX, DCUR_COL_INST, DCUR_COL_E, DCUR_COL_A, DCUR_COL_V, DCUR_COL_ADDED
};

static int ednlColumn(sqlite3_vtab_cursor *cur, sqlite3_context *pCtx, int iCol) {
  return dcurColumn((DCursor *)cur, ednlRowCols, EDNL_COL_DBPATH, iCol, pCtx);
}

/* As edn_q's: the arguments are equality constraints on the hidden
** columns; LIMIT is pushed when every constraint is ours. */
static int ednlBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  int aIdx[EDNL_NARG] = {-1, -1, -1};
  int mUnusable = 0, idxNum = 0, nArg = 0, bAllOurs = 1, iLimit = -1, i;
  const struct sqlite3_index_constraint *pC = pInfo->aConstraint;
  (void)pVtab;
  for (i = 0; i < pInfo->nConstraint; i++, pC++) {
    if (pC->iColumn >= EDNL_COL_DBPATH && pC->op == SQLITE_INDEX_CONSTRAINT_EQ) {
      int iArg = pC->iColumn - EDNL_COL_DBPATH;
      if (!pC->usable) mUnusable |= 1 << iArg;
      else if (aIdx[iArg] < 0) aIdx[iArg] = i;
      else bAllOurs = 0;
    } else if (pC->usable && pC->op == SQLITE_INDEX_CONSTRAINT_LIMIT) {
      iLimit = i;
    } else {
      if (pC->iColumn == EDNL_COL_V && (pC->op == SQLITE_INDEX_CONSTRAINT_GT
          || pC->op == SQLITE_INDEX_CONSTRAINT_GE || pC->op == SQLITE_INDEX_CONSTRAINT_LT
          || pC->op == SQLITE_INDEX_CONSTRAINT_LE)) {
        idxNum |= EDNL_VBOUND;
      }
      bAllOurs = 0;
    }
  }
  for (i = 0; i < EDNL_NARG; i++) {
    if (aIdx[i] < 0 && (mUnusable & (1 << i))) return SQLITE_CONSTRAINT;
  }
  for (i = 0; i < EDNL_NARG; i++) {
    if (aIdx[i] < 0) continue;
    pInfo->aConstraintUsage[aIdx[i]].argvIndex = ++nArg;
    pInfo->aConstraintUsage[aIdx[i]].omit = 1;
    idxNum |= 1 << i;
  }
  /* tx order: ORDER BY tx is what the rows have */
  if (pInfo->nOrderBy == 1 && pInfo->aOrderBy[0].iColumn == EDNL_COL_TX && !pInfo->aOrderBy[0].desc) {
    pInfo->orderByConsumed = 1;
  }
  if (bAllOurs && iLimit >= 0 && (pInfo->nOrderBy == 0 || pInfo->orderByConsumed)) {
    pInfo->aConstraintUsage[iLimit].argvIndex = ++nArg;
    idxNum |= EDNL_LIMIT;
  }
  if (pInfo->colUsed & ~(((sqlite3_uint64)1 << EDNL_COL_DBPATH) - 1)) idxNum |= EDNL_ECHO;
  pInfo->idxNum = idxNum;
  if ((idxNum & 1) == 0) {
    pInfo->estimatedCost = 1e99;
    pInfo->estimatedRows = 2147483647;
    return SQLITE_OK;
  }
  pInfo->estimatedRows = (idxNum & 6) ? 1000 : 100000;
  pInfo->estimatedCost = (double)pInfo->estimatedRows * 2 + 10;
  return SQLITE_OK;
}

static sqlite3_module ednlModule = {
  .iVersion = 0,
  .xCreate = 0,     /* eponymous-only */
  .xConnect = ednlConnect,
  .xBestIndex = ednlBestIndex,
  .xDisconnect = ednlDisconnect,
  .xOpen = ednlOpen,
  .xClose = ednlClose,
  .xFilter = ednlFilter,
  .xNext = dcurNext,
  .xEof = dcurEof,
  .xColumn = ednlColumn,
  .xRowid = dcurRowid,
};

int ednlRegister(sqlite3 *db) {
  return sqlite3_create_module_v2(db, "edn_log", &ednlModule, NULL, NULL);
}
