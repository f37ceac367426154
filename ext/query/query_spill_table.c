/*
** query_spill_table.c — rows set aside in a private temporary database
** (query_spill_table.h has the contract).
**
** HOW IT WORKS
** "" opens a temporary database of the connection's own: pages beyond its
** cache go to a temporary file that is deleted when it closes. One table,
** spill(c0, .. cN-1), untyped, so every value keeps its SQL type; rows
** are appended in rowid order and never deleted, so rowid k is the k-th
** row. The reader walks rowid > the rows it gave: rows appended while it
** is on its way may or may not be seen by its scan (SQLite leaves that
** open), so past its end it starts again after the last row it gave.
*/
#include <string.h>
#include "query_spill_table.h"

/* The page cache of one table, KiB: the rest of the rows is on disk. */
#define QST_CACHE_KIB 1024

int qstOpen(QSpillTable *p, int nCol) {
  sqlite3_str *pDdl = sqlite3_str_new(NULL), *pDml = sqlite3_str_new(NULL);
  char *zDdl = NULL, *zDml = NULL;
  int rc;
  memset(p, 0, sizeof *p);
  p->nCol = nCol;
  /* no journal: a failed append abandons the whole table, never rolls back */
  sqlite3_str_appendf(pDdl, "PRAGMA journal_mode=OFF; PRAGMA cache_size=-%d; CREATE TABLE spill(",
                      QST_CACHE_KIB);
  sqlite3_str_appendall(pDml, "INSERT INTO spill VALUES(");
  for (int i = 0; i < nCol; i++) {
    sqlite3_str_appendf(pDdl, "%sc%d", i ? "," : "", i);
    sqlite3_str_appendf(pDml, "%s?", i ? "," : "");
  }
  sqlite3_str_appendchar(pDdl, 1, ')');
  sqlite3_str_appendchar(pDml, 1, ')');
  zDdl = sqlite3_str_finish(pDdl);
  zDml = sqlite3_str_finish(pDml);
  if (zDdl == NULL || zDml == NULL) {
    rc = SQLITE_NOMEM;
    goto cleanup;
  }
  rc = sqlite3_open_v2("", &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(p->db, zDdl, NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(p->db, zDml, -1, &p->pIns, NULL);

cleanup:
  sqlite3_free(zDdl);
  sqlite3_free(zDml);
  return rc;
}

int qstInsert(QSpillTable *p) {
  int rc = SQLITE_OK;
  if (!p->bTx) {
    rc = sqlite3_exec(p->db, "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    p->bTx = 1;
  }
  rc = sqlite3_step(p->pIns);
  rc = rc == SQLITE_DONE ? SQLITE_OK : sqlite3_reset(p->pIns);
  sqlite3_reset(p->pIns);
  sqlite3_clear_bindings(p->pIns);
  if (rc == SQLITE_OK) p->nRows++;
  return rc;
}

int qstCommit(QSpillTable *p) {
  int rc;
  if (!p->bTx) return SQLITE_OK;
  rc = sqlite3_exec(p->db, "COMMIT", NULL, NULL, NULL);
  if (rc == SQLITE_OK) p->bTx = 0;
  return rc;
}

int qstNext(QSpillTable *p) {
  int rc;
  if (p->nRead >= p->nRows) return SQLITE_DONE;
  if (p->pSel == NULL) {
    rc = sqlite3_prepare_v2(p->db, "SELECT * FROM spill WHERE rowid > ?1 ORDER BY rowid", -1,
                            &p->pSel, NULL);
    if (rc != SQLITE_OK) return rc;
    sqlite3_bind_int64(p->pSel, 1, p->nRead);
  }
  rc = sqlite3_step(p->pSel);
  if (rc == SQLITE_DONE) {
    /* rows appended after the scan passed their place: from the next one */
    sqlite3_reset(p->pSel);
    sqlite3_bind_int64(p->pSel, 1, p->nRead);
    rc = sqlite3_step(p->pSel);
    if (rc == SQLITE_DONE) rc = SQLITE_CORRUPT;   /* rows counted that are not there */
  }
  if (rc == SQLITE_ROW) p->nRead++;
  return rc;
}

const char *qstErrmsg(const QSpillTable *p, int rc) {
  return p->db ? sqlite3_errmsg(p->db) : sqlite3_errstr(rc);
}

void qstClose(QSpillTable *p) {
  sqlite3_finalize(p->pSel);
  sqlite3_finalize(p->pIns);
  sqlite3_close_v2(p->db);
  memset(p, 0, sizeof *p);
}
