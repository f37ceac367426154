/*
** datoms_cursor.h — what the raw-index tables edn_datoms (edn_datoms.c) and
** edn_log (edn_log.c) share: a cursor over one store statement of their
** own SQL, its call context, the arguments it echoes, and the decoding of
** a datom row into native SQL values (../shared/SPEC.md §2.3, the `cN`
** encoding of edn_q).
**
** Takes the host connection, the call's db_path and opts arguments and the
** SQL text of the datoms to read; gives the rows column by column. Calls
** the call context (call.h), the query stage's statement cache
** (qCacheStmt) and the value encoding (value.h).
**
** A row of a statement run through a DCursor has the columns e, a, v,
** value_type_tag, tx, added (DCUR_COL_*), and edn_log's tx instant after
** them.
*/
#ifndef MENTAT_DATOMS_CURSOR_H
#define MENTAT_DATOMS_CURSOR_H

#include "sqlite_api.h"
#include "call.h"

#define DCUR_COL_E      0
#define DCUR_COL_A      1
#define DCUR_COL_V      2
#define DCUR_COL_TAG    3
#define DCUR_COL_TX     4
#define DCUR_COL_ADDED  5
#define DCUR_COL_INST   6

#define DCUR_MAXARG 6

typedef struct DCursor {
  sqlite3_vtab_cursor base;
  const char *zFunc;            /* "edn_datoms", "edn_log": the errors' prefix */
  VCall call;                   /* store, reader, schema, watch */
  QueryOpts opts;
  sqlite3_stmt *pStmt;          /* the running statement, NULL when none */
  int bOwnStmt;                 /* finalize pStmt (a private copy), else reset it */
  int bEof;
  sqlite3_int64 iRowid;
  /* The arguments, echoed by the hidden columns: types and numbers here,
  ** bytes in one buffer the cursor keeps (no allocation per call). */
  struct DCurArg { int eType; int n; size_t iOfs; sqlite3_int64 i; double r; } aArg[DCUR_MAXARG];
  char *aArgBuf;
  size_t nArgBuf;
  /* edn_log: the instant of the current row's transaction, read once per
  ** transaction (pInstStmt, the connection's, or a private one if bOwnInst) */
  sqlite3_stmt *pInstStmt;
  int bOwnInst;
  sqlite3_int64 iInstTx;        /* the tx zInst is of, 0 none */
  char zInst[40];
} DCursor;

/* Copies the nArg arguments (NULL entries: not given) so the hidden columns
** can echo them after xFilter; frees the previous copies. */
int dcurSaveArgs(DCursor *p, sqlite3_value **apIn, int nArg);

/* Sets the result to argument i's copy (NULL when not given). */
void dcurArgResult(DCursor *p, int i, sqlite3_context *pCtx);

/* Opens the call on the store pPath names (vcallBegin, VCALL_QUERY: a
** pooled reader without a read transaction of its own; dcurStepFirst checks
** its snapshot after the first step), with
** the opts argument pOpts (NULL: none) parsed into p->opts. Only the keys
** "asOf", "since" and "history" are accepted: any other is an error
** ("unknown option \"inputs\" (takes asOf, since, history)"). Errors in
** *pzErr without the function's prefix. */
int dcurBegin(DCursor *p, sqlite3 *host, sqlite3_value *pPath, sqlite3_value *pOpts, char **pzErr);

/* Starts zSql (n bytes) on the call's reader: a statement from the
** connection's cache (or a private one), returned in *ppStmt for the
** caller to bind; it becomes p->pStmt. */
int dcurPrepare(DCursor *p, const char *zSql, int n, sqlite3_stmt **ppStmt, char **pzErr);

/* Steps p->pStmt: SQLITE_OK with a row (bEof 0) or at the end (bEof 1, the
** call released), or an error set on the vtab (the call released). */
int dcurStep(DCursor *p);

/* The first step of the call's statement. On a reader handed out without a
** read transaction (storeReaderLazy), when the snapshot that step opened is
** not the state the schema was checked at, the statement is reset, the
** reader rechecked (a read transaction, the schema made current: the
** call's schema is replaced) and *pbRedo set: the caller resolves its
** arguments, builds and starts its statement again. Otherwise as
** dcurStep. */
int dcurStepFirst(DCursor *p, int *pbRedo);

/* After an error found before the first step on a lazily handed-out reader
** (an unknown ident may be one the schema it was given does not know yet):
** rechecks the reader as dcurStepFirst does; *pbRedo 1 when the caller
** should try again. */
int dcurRecheck(DCursor *p, int *pbRedo, char **pzErr);

/* Gives back the statement and the call. Idempotent. */
void dcurRelease(DCursor *p);

/* Frees the echoed arguments too (xClose). */
void dcurFree(DCursor *p);

/* The xColumn of a raw-index table whose visible columns are aCol[0..nCol)
** (each the DCUR_COL_* of the row it shows) and whose hidden columns after
** them echo the arguments: sets pCtx to column iCol of the current row
** (nothing with no row), or to argument iCol - nCol. SQLITE_OK. */
int dcurColumn(DCursor *p, const unsigned char *aCol, int nCol, int iCol, sqlite3_context *pCtx);

/* The xNext, xEof and xRowid of a table whose cursor is a DCursor. */
int dcurNext(sqlite3_vtab_cursor *pCur);
int dcurEof(sqlite3_vtab_cursor *pCur);
int dcurRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid);

/* The current row's attribute as its ident TEXT (the entid as INTEGER when
** it has none), and its value as the native SQL value of its type. */
void dcurIdentResult(DCursor *p, int iCol, sqlite3_context *pCtx);
void dcurValueResult(DCursor *p, sqlite3_context *pCtx);

/* edn_log's tx_instant column: the :db/txInstant of the current row's
** transaction as RFC 3339 TEXT, looked up once per transaction. */
void dcurTxInstantResult(DCursor *p, sqlite3_context *pCtx);

/* Reads a time bound: an INTEGER tx id, or TEXT holding a JSON object
** {"edn": "#inst \"...\""} (an instant, *pbInst = 1, *pi in µs) or
** {"edn": "<integer>"}. zWhat names the argument in the error. */
int dcurTimeArg(sqlite3_value *pArg, const char *zWhat, sqlite3_int64 *pi, int *pbInst,
                char **pzErr);

#endif /* MENTAT_DATOMS_CURSOR_H */
