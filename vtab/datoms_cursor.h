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
** (qCacheStmt), the value encoding (value.h) and the store's snapshot
** holds (store.h).
**
** A row of a statement run through a DCursor has the columns e, a, v,
** value_type_tag, tx, added (DCUR_COL_*); DCUR_COL_INST names edn_log's
** tx instant, looked up once per transaction.
*/
#ifndef MENTAT_DATOMS_CURSOR_H
#define MENTAT_DATOMS_CURSOR_H

#include <stdatomic.h>
#include "sqlite_api.h"
#include "call.h"
#include "query_spill_table.h"

#define DCUR_COL_E      0
#define DCUR_COL_A      1
#define DCUR_COL_V      2
#define DCUR_COL_TAG    3
#define DCUR_COL_TX     4
#define DCUR_COL_ADDED  5
#define DCUR_COL_INST   6

#define DCUR_MAXARG 6

/* The error of v bounds over a tuple attribute (%s: its ident, then what
** to do instead: DCUR_TUPLE_DATOMS or DCUR_TUPLE_LOG), after the function's
** prefix: v is the tuple's JSON text, which SQLite compares as text
** ("[10,0]" before "[9,0]"), not in Datomic's tuple order. */
#define DCUR_TUPLE_BOUNDS "v bounds (>, >=, <, <=) over the tuple attribute %s are not" \
  " supported: v is the tuple's JSON text, which does not sort as tuples do; %s"
#define DCUR_TUPLE_DATOMS "give the whole tuple as the v component, or compare tuples in edn_q"
#define DCUR_TUPLE_LOG "compare tuples in edn_q"

/* A row set aside (dcurLetGo in datoms_cursor.c): the columns of the
** statement's row, and for edn_log its transaction's instant. */
typedef struct DCurRow {
  sqlite3_int64 e, a, tx;
  sqlite3_int64 iInst;          /* the instant, µs (bInst) */
  int tag, added, bInst;
  sqlite3_value *pV;            /* a copy (sqlite3_value_dup) */
} DCurRow;

typedef struct DCursor {
  sqlite3_vtab_cursor base;
  const char *zFunc;            /* "edn_datoms", "edn_log": the errors' prefix */
  int bLog;                     /* edn_log: rows set aside keep their tx instant */
  VCall call;                   /* store, reader, schema, watch */
  sqlite3_stmt *pStmt;          /* the running statement, NULL when none */
  int bOwnStmt;                 /* finalize pStmt (a private copy), else reset it */
  int bLive;                    /* begun (dcurBegin) and not released since */
  int bOne;                     /* pStmt gives one row at most: the end needs no step */
  int bBounds;                  /* SQLite checks v bounds on the rows' v: a tuple's v is
                                ** then the DCUR_TUPLE_BOUNDS error */
  sqlite3_int64 iIdentA;        /* the last attribute the a column named, */
  const char *zIdentA;          /* its ident (the call's schema's), NULL none */
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
  sqlite3_int64 iInstTx;        /* the tx iInstUs is of, 0 none */
  sqlite3_int64 iInstUs;
  int bInstUs;                  /* that tx has an instant */
  sqlite3_int64 iInstFmt;       /* the instant zInst holds (bInstFmt), formatted once */
  int bInstFmt;
  char zInst[40];
  /* While rows are left the cursor is registered with the store as a
  ** snapshot hold (B25): a writer that needs the WAL back has the rest of
  ** the rows copied into aRow and the store read ended (dcurLetGo). lock
  ** orders that against the host thread's use of pStmt and aRow; it is
  ** taken only while bHold (an unregistered cursor is the host's alone). */
  StoreHold hold;
  int bHold;
  atomic_int lock;
  DCurRow *aRow;                /* rows set aside, aRow[iRow] current when bBuf */
  int nRow, nRowAlloc, iRow;
  sqlite3_int64 nBufBytes;      /* memory the rows set aside take (configSpillMemoryBytes) */
  /* The rows set aside past that memory, after aRow's (spill.db set): each
  ** is read into aRow[0] in its turn. */
  QSpillTable spill;
  int bBuf;                     /* the current row is aRow[iRow], not pStmt's */
  int bStmtGone;                /* every row left is in aRow: pStmt reset, snapshot let go */
  int rcSpill;                  /* an error the statement gave while rows were set aside, */
  char *zSpillErr;              /* reported after those rows */
  /* A keeping cursor (bKeep: edn_datoms) parks its call at the end of a run
  ** of a file store (bParked: store, reader and schema kept, vcallPark;
  ** opts kept), for the next run with the same db_path and opts text
  ** (aParkKey: the path, NUL, the opts, NUL; eParkOpts SQLITE_NULL when
  ** none), which resumes it (vcallResume) instead of opening a call.
  ** dcurInit keeps these. */
  int bKeep;
  int bParked;
  int eParkOpts;
  int nParkPath, nParkOpts;
  char *aParkKey;
  size_t nParkKeyAlloc;
  QueryOpts opts;               /* last: its arena's buffer is not cleared by dcurInit */
} DCursor;

/* xOpen: the table's spare cursor *ppSpare when it has one (a point
** lookup opens and closes a cursor per call), else a new one; readied for
** zFunc's errors ("edn_datoms"), bLog for edn_log's rows. SQLITE_NOMEM. */
int dcurOpen(DCursor **ppSpare, const char *zFunc, int bLog, sqlite3_vtab_cursor **ppCur);

/* xClose: everything given back (dcurRelease); the cursor becomes the
** spare when there is none, else it is freed. */
void dcurClose(DCursor **ppSpare, DCursor *p);

/* xDisconnect: frees the spare. */
void dcurSpareFree(DCursor **ppSpare);

/* The current row's integer column iCol (DCUR_COL_E, _A, _TX, _ADDED). */
sqlite3_int64 dcurInt(DCursor *p, int iCol);

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
/* dcurBegin for a keeping cursor: a parked call of the same db_path and
** opts text is resumed (vcallResume; its first step is checked as any
** lazy read's), another is ended first; a call begun anew is remembered
** for parking at the end of its run. */
int dcurBeginKept(DCursor *p, sqlite3 *host, sqlite3_value *pPath, sqlite3_value *pOpts,
                  char **pzErr);

/* Starts zSql (n bytes) on the call's reader: a statement from the
** connection's cache (or a private one), returned in *ppStmt for the
** caller to bind; it becomes p->pStmt. */
int dcurPrepare(DCursor *p, const char *zSql, int n, sqlite3_stmt **ppStmt, char **pzErr);
/* dcurPrepare for a text whose qCacheStmtHash h the caller keeps. */
int dcurPrepareHashed(DCursor *p, const char *zSql, int n, unsigned h, sqlite3_stmt **ppStmt,
                      char **pzErr);

/* Steps to the next row (the rows set aside first, then p->pStmt's):
** SQLITE_OK with a row (bEof 0) or at the end (bEof 1, the call released),
** or an error set on the vtab (the call released). */
int dcurStep(DCursor *p);

/* The first step of the call's statement. On a reader handed out without a
** read transaction (storeReaderLazy), when the snapshot that step opened is
** not the state the schema was checked at, the statement is reset, the
** reader rechecked (a read transaction, the schema made current: the
** call's schema is replaced) and *pbRedo set: the caller resolves its
** arguments, builds and starts its statement again. Otherwise as
** dcurStep; with rows left on a file store the cursor is then registered
** as a snapshot hold (store.h StoreHold, peer fault B25). */
int dcurStepFirst(DCursor *p, int *pbRedo);

/* After an error found before the first step on a lazily handed-out reader
** (an unknown ident may be one the schema it was given does not know yet):
** rechecks the reader as dcurStepFirst does; *pbRedo 1 when the caller
** should try again. */
int dcurRecheck(DCursor *p, int *pbRedo, char **pzErr);

/* Gives back the hold, the rows set aside, the statement and the call
** (a parked one too). Idempotent. */
void dcurRelease(DCursor *p);
/* As dcurRelease, but a keeping cursor's call on a file store is parked
** for the next run (dcurBeginKept) rather than ended. */
void dcurReleaseKeep(DCursor *p);

/* Frees the echoed arguments too (xClose). */
void dcurFree(DCursor *p);

/* The xColumn of a raw-index table whose visible columns are aCol[0..nCol)
** (each the DCUR_COL_* of the row it shows) and whose hidden columns after
** them echo the arguments: sets pCtx to column iCol of the current row
** (nothing with no row), or to argument iCol - nCol: the store's columns
** DCUR_COL_E, _A (the ident), _V (native; with bBounds, a tuple attribute's
** v is the DCUR_TUPLE_BOUNDS error), _TX, _ADDED, _INST (edn_log's
** tx_instant). Takes the cursor's lock while it is registered. SQLITE_OK. */
int dcurColumn(DCursor *p, const unsigned char *aCol, int nCol, int iCol, sqlite3_context *pCtx);

/* The xNext, xEof and xRowid of a table whose cursor is a DCursor. */
int dcurNext(sqlite3_vtab_cursor *pCur);
int dcurEof(sqlite3_vtab_cursor *pCur);
int dcurRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid);

/* Reads a time bound: an INTEGER tx id, or TEXT holding a JSON object
** {"edn": "#inst \"...\""} (an instant, *pbInst = 1, *pi in µs) or
** {"edn": "<integer>"}. zWhat names the argument in the error. */
int dcurTimeArg(sqlite3_value *pArg, const char *zWhat, sqlite3_int64 *pi, int *pbInst,
                char **pzErr);

#endif /* MENTAT_DATOMS_CURSOR_H */
