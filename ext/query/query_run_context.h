/*
** query_run_context.h — the run's context: the state of a running query,
** shared by the runner (query_run.c, the driver), the pulls of its current
** row (query_run_pull.c) and the spill that sets the rest of its rows aside
** (query_spill.c). Nothing outside those files sees a QueryRun's fields.
*/
#ifndef MENTAT_QUERY_RUN_CONTEXT_H
#define MENTAT_QUERY_RUN_CONTEXT_H

#include "query_plan.h"
#include "pull.h"

struct QueryRun {
  StoreConn *pConn;
  sqlite3 **ppCallHost;  /* pConn's slot of the host its proxies call (qCacheCallHost) */
  Schema *pSchema;
  QueryPlan *pPlan;
  int bOwnPlan;          /* not in the cache: freed by qRunClose */
  sqlite3_stmt *pStmt;   /* the statement the current row is on */
  char *zErr;            /* last column error, see qRunErrMsg */
  PullTime time;         /* the run's asOf/since, for pulls (SPEC.md §6) */
  int bTime;             /* time applies to pulls */
  int bTimeInst;         /* a tx of time is still an instant, to resolve */
  int bAsOfInst, bSinceInst;   /* which: asOfInst, sinceInst */
  EdnValue asOfInst, sinceInst;   /* copies of the opts' instants (only type,
                                  ** u.i read) */
  const EdnValue **apPat;   /* per find element: a pull pattern from the
                            ** inputs (in the opts, which outlive the run), or NULL */
  /* After qSpillRest: pStmt reads the rest of the result from pSpillDb;
  ** after a partial copy the store statement waits in pRest. */
  sqlite3 *pSpillDb;     /* private temporary database, or NULL */
  sqlite3_stmt *pRest;   /* store statement after the copied rows, or NULL */
  int *aSpillPull;       /* per find element: spill column of its pull JSON */
  int rcSpill;           /* the store statement's error after the rows, if any */
  char *zSpillErr;
  sqlite3_int64 nSpilled;   /* rows in the spill table (rowids 1..nSpilled) */
  sqlite3_int64 nSpillRead; /* of them, rows pStmt has returned */
  /* The query and its inputs (they outlive the run), to plan it again when
  ** the snapshot its first step read is newer than its schema. */
  const char *zQuery;
  int nQuery;
  QueryOpts *pOpts;
  int bCheck;            /* the first step is still to be checked (storeReaderCheck) */
  int bGave;             /* pStmt gave a row since it was reset (bAtMostOne) */
};

/* A column's tag when nothing says which: its value goes out as it is. */
#define Q_TAG_UNKNOWN (-2)

/* The value tag of find column pCol on the current row: its tag column's,
** the static type's, TAG_JSON for collections, or Q_TAG_UNKNOWN. */
int qRunColTag(const QueryRun *p, const QPlanCol *pCol);

/* The pull map of the entity in find column i of the current row (a pull
** column), appended to pOut; "null" when the value names no entity.
** Errors: a value that is no entity id, ident or lookup ref ("line L col
** C: pull ?e: ?e is a <type>, not ..."), the pull's own, in *pzErr. */
int qRunPull(QueryRun *p, int i, sqlite3_str *pOut, char **pzErr);

#endif /* MENTAT_QUERY_RUN_CONTEXT_H */
