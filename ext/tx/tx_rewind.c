/*
** tx_rewind.c — txRewind (tx.h): the store's datoms and log turned back to
** the database as of one transaction, inside a write that is never
** committed, so that a speculative transaction ("with" on an asOf query)
** applies on top of that database with the real transactor.
**
** Takes a writer connection inside its open write, the schema and a tx id;
** gives the same connection with `datoms` holding what the asOf view
** (query_compile_sql.c, qcView) reads as of that tx, and
** `timelined_transactions` without the later transactions' rows. Calls
** SQLite only.
**
** HOW IT WORKS
** A datom of the as-of database is a log assertion at or before T with no
** later log row for it up to T. The current datoms asserted at or before T
** are such datoms, untouched since; the datoms asserted after T are not.
** What else the as-of database holds was touched after T: so the datoms
** after T are deleted, then the as-of assertions of every datom the log
** touched after T are inserted (INSERT OR IGNORE: one still current is
** there already), and last the log rows after T are deleted, so the
** history database reads as of T too.
*/
#include <string.h>
#include "tx_context.h"

/* The as-of assertions of the datoms the log touched after ?1. */
static const char zTxRewindCandidates[] =
  "SELECT l.e, l.a, l.v, l.tx, l.value_type_tag FROM"
  " (SELECT DISTINCT e, a, value_type_tag, v FROM timelined_transactions"
  "  WHERE tx > ?1 AND timeline IS 0) c"
  " JOIN timelined_transactions l ON l.a = c.a AND l.e = c.e AND l.value_type_tag ="
  " c.value_type_tag AND l.v = c.v"
  " WHERE l.timeline IS 0 AND l.added = 1 AND l.tx <= ?1 AND NOT EXISTS (SELECT 1 FROM"
  " timelined_transactions r WHERE r.a = l.a AND r.e = l.e AND r.value_type_tag ="
  " l.value_type_tag AND r.v = l.v AND r.tx > l.tx AND r.tx <= ?1 AND r.timeline IS 0)";

static const char zTxRewindInsert[] =
  "INSERT OR IGNORE INTO datoms (e, a, v, tx, value_type_tag, index_avet, index_vaet,"
  " index_fulltext, unique_value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

static int txRewindErr(sqlite3 *db, char **pzErr) {
  int rc = sqlite3_errcode(db);
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("cannot rewind the store for asOf: %s", sqlite3_errmsg(db));
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) rc = SQLITE_ERROR;
  return *pzErr ? rc : SQLITE_NOMEM;
}

/* Runs zSql with ?1 = iTx to its end. */
static int txRewindExec(sqlite3 *db, const char *zSql, sqlite3_int64 iTx, char **pzErr) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(pStmt, 1, iTx);
    rc = sqlite3_step(pStmt);
  }
  if (rc != SQLITE_DONE) {
    rc = txRewindErr(db, pzErr);
    sqlite3_finalize(pStmt);
    return rc;
  }
  sqlite3_finalize(pStmt);
  return SQLITE_OK;
}

/* Inserts the as-of assertions of the datoms the log touched after iTx,
** with the flag columns of their attribute's definition in pSchema (as
** the transactor writes them, txBindDatom). */
static int txRewindReadd(sqlite3 *db, const Schema *pSchema, sqlite3_int64 iTx, char **pzErr) {
  sqlite3_stmt *pSel = NULL, *pIns = NULL;
  int rc = sqlite3_prepare_v2(db, zTxRewindCandidates, -1, &pSel, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, zTxRewindInsert, -1, &pIns, NULL);
  if (rc != SQLITE_OK) goto cleanup;
  sqlite3_bind_int64(pSel, 1, iTx);
  while ((rc = sqlite3_step(pSel)) == SQLITE_ROW) {
    const Attr *pA = schemaAttr(pSchema, sqlite3_column_int64(pSel, 1));
    int i;
    for (i = 0; i < 5; i++) sqlite3_bind_value(pIns, i + 1, sqlite3_column_value(pSel, i));
    sqlite3_bind_int(pIns, 6, pA && (pA->bIndex || pA->eUnique != UNIQUE_NONE));
    sqlite3_bind_int(pIns, 7, pA && pA->type == VT_REF);
    sqlite3_bind_int(pIns, 8, pA && pA->bFulltext);
    sqlite3_bind_int(pIns, 9, pA && pA->eUnique != UNIQUE_NONE);
    rc = sqlite3_step(pIns);
    sqlite3_reset(pIns);
    if (rc != SQLITE_DONE) break;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;

cleanup:
  if (rc != SQLITE_OK) rc = txRewindErr(db, pzErr);
  sqlite3_finalize(pSel);
  sqlite3_finalize(pIns);
  return rc;
}

int txRewind(StoreConn *pConn, const Schema *pSchema, sqlite3_int64 iTx, char **pzErr) {
  sqlite3 *db = pConn->db;
  int rc = txRewindExec(db, "DELETE FROM datoms WHERE tx > ?1", iTx, pzErr);
  if (rc == SQLITE_OK) rc = txRewindReadd(db, pSchema, iTx, pzErr);
  if (rc == SQLITE_OK) {
    rc = txRewindExec(db, "DELETE FROM timelined_transactions WHERE tx > ?1 AND timeline IS 0", iTx,
                      pzErr);
  }
  return rc;
}
