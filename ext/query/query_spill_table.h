/*
** query_spill_table.h — rows set aside in a private temporary database
** (query_spill_table.c), for a cursor whose rest must not stay in memory
** nor on the store's snapshot (peer fault B25): the raw-index tables'
** cursors (vtab/datoms_cursor.c) past their memory for rows set aside.
**
** Takes rows of nCol values, appended in order (the caller binds them on
** pIns, then qstInsert), in transactions a caller ends with qstCommit;
** gives them back in the same order, each once (qstNext, then pSel's
** columns), rows appended while the reader is on its way included. Calls
** SQLite only. Not thread-safe: the caller serialises appends and reads.
*/
#ifndef MENTAT_QUERY_SPILL_TABLE_H
#define MENTAT_QUERY_SPILL_TABLE_H

#include "sqlite_api.h"

/* The error a cursor gives after the rows it set aside when the writer let
** its snapshot go with its rest not copied (ConfigBudget.bDrop: the WAL
** past half of MENTAT_WAL_RESTART_BYTES); the table's name goes before it. */
#define QST_DROPPED_MSG "the cursor was left open while the store grew past its WAL " \
  "bound (MENTAT_WAL_RESTART_BYTES); its remaining rows were not kept (read them sooner, " \
  "or in a transaction of the host)"

typedef struct QSpillTable {
  sqlite3 *db;                  /* the temporary database, NULL when closed */
  sqlite3_stmt *pIns;           /* INSERT INTO spill VALUES(?1, .. ?nCol): bind, then qstInsert */
  sqlite3_stmt *pSel;           /* the reader: its columns are the row qstNext gave */
  int nCol;
  int bTx;                      /* an append transaction is open */
  sqlite3_int64 nRows;          /* rows appended */
  sqlite3_int64 nRead;          /* rows given by qstNext */
} QSpillTable;

/* Opens an empty table of nCol columns (p zeroed or closed before): a
** database of its own whose pages past a small cache go to a temporary
** file, so a large rest costs disk, not memory. SQLITE_OK or the error
** (qstErrmsg gives its reason; the caller closes p either way). */
int qstOpen(QSpillTable *p, int nCol);

/* Appends the row bound on pIns (bindings cleared after), in the open
** append transaction (begun here when none is). */
int qstInsert(QSpillTable *p);

/* Ends the append transaction, if one is open. */
int qstCommit(QSpillTable *p);

/* Puts pSel on the next row not given yet: SQLITE_ROW, SQLITE_DONE when
** every row appended so far was given, or an error. */
int qstNext(QSpillTable *p);

/* The reason of the last error of p's database (static text when p could
** not be opened). */
const char *qstErrmsg(const QSpillTable *p, int rc);

/* Frees everything; p is then closed (qstOpen may reuse it). Idempotent. */
void qstClose(QSpillTable *p);

#endif /* MENTAT_QUERY_SPILL_TABLE_H */
