/*
** run_cursor.h — the streaming core that every virtual table reading a
** Datalog query shares (the edn_q table, edn_view): a query run on a
** checked-out store reader, stepped one row per xNext, its find elements
** given as native SQL values, registered with the store as a snapshot hold
** while rows are left (so a writer that needs the WAL back can have the
** rest of the rows set aside), and everything given back at EOF, on an
** error or on release.
**
** Takes a VCall the caller began on the cursor's opts and the query text;
** gives rows. Calls the call context (call.h), the query runner (query.h)
** and the store's snapshot holds (store.h). Errors come back as an SQLite
** code and a message without a function prefix; the tables add theirs.
**
**   rcurInit(&c);                          once, on a zeroed RunCursor
**   rc = vcallBegin(&c.call, host, path, VCALL_READ, &c.opts, opts, &zErr);
**   if (rc == SQLITE_OK) rc = rcurStart(&c, zQuery, nQuery, &zErr);
**   while (rc == SQLITE_OK && !c.bEof) { ...rcurColumn...; rc = rcurStep(&c, &zErr); }
**   rcurRelease(&c);                       idempotent; also at EOF and errors
*/
#ifndef MENTAT_RUN_CURSOR_H
#define MENTAT_RUN_CURSOR_H

#include <stdatomic.h>
#include "sqlite_api.h"
#include "call.h"
#include "query.h"

typedef struct RunCursor {
  QueryOpts opts;                   /* the run's options; reset by rcurRelease */
  VCall call;                       /* store, reader, schema, watch */
  QueryRun *pRun;                   /* NULL when not running */
  int bEof;                         /* no current row */
  sqlite3_int64 iRowid;             /* 1 for the first row of a run */
  /* While rows are left the cursor is registered with the store, so a
  ** writer blocked by its snapshot can have the rest set aside
  ** (rcurLetGo in run_cursor.c). lock orders that against the cursor's
  ** own use of pRun; it is never held while calling into the store. */
  StoreHold hold;
  int bHold;                        /* hold registered */
  atomic_int lock;                  /* 0 free, 1 taken */
  /* bKeep (set by the table): a run that reached its end is kept, with its
  ** call and opts, for the next run of the same query (rcurResume); pRun
  ** is then NULL and pParked the finished run. */
  int bKeep;
  QueryRun *pParked;
} RunCursor;

/* Readies a zeroed cursor (opts, hold callback, lock); once per cursor. */
void rcurInit(RunCursor *p);

/* Opens zQuery[0..nQuery) with p->opts on the reader p->call checked out
** (vcallBegin with VCALL_READ and &p->opts), and steps to the first row.
** SQLITE_OK with p->bEof telling whether there is one; otherwise an SQLite
** code, *pzErr set (sqlite3_malloc'd, any previous freed) and everything
** given back (rcurRelease). */
int rcurStart(RunCursor *p, const char *zQuery, int nQuery, char **pzErr);

/* Starts the next run of a keeping cursor whose last run finished
** (pParked), for a call with the same db_path text zPath (nPath bytes) and
** query text as that run's: the call resumed (vcallResume), the opts
** parsed again unless bSameOpts (the same opts text, or none again;
** zOpts/nOpts otherwise), the run restarted (qRunRestart) or opened anew,
** and stepped to the first row, as rcurStart. SQLITE_NOTFOUND when the
** cursor cannot resume (nothing parked, the store's path due a check, the
** reader or opts need the full opening): everything is released, and the
** caller begins the call (vcallBegin) and rcurStart as usual. Errors as
** rcurStart's. */
int rcurResume(RunCursor *p, sqlite3 *host, const char *zPath, int nPath, const char *zQuery,
               int nQuery, int bSameOpts, const char *zOpts, int nOpts, char **pzErr);

/* Steps to the next row: SQLITE_OK (p->bEof set at the end, when the
** store connection is given back at once) or an error as rcurStart's. */
int rcurStep(RunCursor *p, char **pzErr);

/* Gives back the run (a kept one too), the hold, the call and the opts. Idempotent; not
** called with the lock held. */
void rcurRelease(RunCursor *p);

/* The cursor's lock, around every use of p->pRun by the host's thread
** (a writer's thread takes it to set the rest aside). */
void rcurLock(RunCursor *p);
void rcurUnlock(RunCursor *p);

/* Sets pCtx to find element i of the current row as a native SQL value
** (NULL past the find's width or with no current row). A pull element
** that fails sets an error result "<zFunc>: <message>" and returns its
** code; a value past the host's SQLITE_LIMIT_LENGTH "<zFunc>: column
** <zCol> is more than SQLITE_LIMIT_LENGTH (N bytes)" (SQLITE_TOOBIG).
** Takes the lock itself. */
int rcurColumn(RunCursor *p, int i, sqlite3_context *pCtx, const char *zFunc, const char *zCol);

#endif /* MENTAT_RUN_CURSOR_H */
