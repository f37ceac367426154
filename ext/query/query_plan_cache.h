/*
** query_plan_cache.h — the compiled plans a store connection keeps
** (query_plan_cache.c), for the runner (query_run.c) and explain
** (query_explain.c).
*/
#ifndef MENTAT_QUERY_PLAN_CACHE_H
#define MENTAT_QUERY_PLAN_CACHE_H

#include "query.h"

typedef struct QueryPlan QueryPlan;

/* The plan of zQuery[0..nQuery) for the inputs in pOpts on pConn, its
** statement prepared there: the cached one, or a new one compiled,
** prepared and kept (the connection owns it, *pbOwn = 0). When the cached
** plan's statement is in use by another open run on pConn, a private plan
** is compiled for this run (*pbOwn = 1: the caller frees it with
** qPlanFree). Errors in *pzErr: the compiler's, or "cannot compile query:
** <SQLite's reason> (<the part of the query to blame>)". */
int qCachePlan(StoreConn *pConn, Schema *pSchema, const char *zQuery, int nQuery,
               const QueryOpts *pOpts, QueryPlan **ppPlan, int *pbOwn, char **pzErr);

/* The slot of the host whose functions pConn's proxies call during the run
** (qchProxies), or NULL when pConn has no cache yet. */
sqlite3 **qCacheCallHost(StoreConn *pConn);

/* A slot on pConn for one closed run's memory (query_run.c reuses it: a
** run per call would otherwise be a malloc and a free under SQLite's
** allocator mutex). Freed with the cache by sqlite3_free; NULL on OOM. */
void **qCacheSpareRun(StoreConn *pConn);

#endif /* MENTAT_QUERY_PLAN_CACHE_H */
