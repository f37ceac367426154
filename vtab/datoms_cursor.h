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
  sqlite3_value *apArg[DCUR_MAXARG];   /* the arguments, echoed by the hidden columns */
} DCursor;

/* Moves zErr (may be NULL: rc's text) into the vtab's error as
** "<zFunc>: <zErr>"; returns rc (SQLITE_NOMEM when even that fails). */
int dcurError(sqlite3_vtab *pVtab, const char *zFunc, int rc, const char *zErr);

/* Copies the nArg arguments (NULL entries: not given) so the hidden columns
** can echo them after xFilter; frees the previous copies. */
int dcurSaveArgs(DCursor *p, sqlite3_value **apIn, int nArg);

/* Sets the result to argument i's copy (NULL when not given). */
void dcurArgResult(DCursor *p, int i, sqlite3_context *pCtx);

/* Opens the call on the store pPath names (vcallBegin, VCALL_READ), with
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

/* Gives back the statement and the call. Idempotent. */
void dcurRelease(DCursor *p);

/* Frees the echoed arguments too (xClose). */
void dcurFree(DCursor *p);

/* The current row's attribute as its ident TEXT (the entid as INTEGER when
** it has none), and its value as the native SQL value of its type. */
void dcurIdentResult(DCursor *p, int iCol, sqlite3_context *pCtx);
void dcurValueResult(DCursor *p, sqlite3_context *pCtx);

/* Reads a time bound: an INTEGER tx id, or TEXT holding a JSON object
** {"edn": "#inst \"...\""} (an instant, *pbInst = 1, *pi in µs) or
** {"edn": "<integer>"}. zWhat names the argument in the error. */
int dcurTimeArg(sqlite3_value *pArg, const char *zWhat, sqlite3_int64 *pi, int *pbInst,
                char **pzErr);

#endif /* MENTAT_DATOMS_CURSOR_H */
