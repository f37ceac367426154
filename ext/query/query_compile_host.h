/*
** query_compile_host.h — the host functions a plan calls, made callable on
** the reader that runs it (query_compile_host.c, qch), for the plan cache
** (query_plan_cache.c), which readies each plan it prepares.
*/
#ifndef MENTAT_QUERY_COMPILE_HOST_H
#define MENTAT_QUERY_COMPILE_HOST_H

#include "query.h"

/* A read of a host store whose database holds no
** store yet runs on a reader of the private in-memory store (an empty
** store: the bootstrap only), which has none of the host's functions: this
** registers on that reader, db, a proxy for each function of zFns
** (QueryPlan.zHostFns) it lacks, which calls the function of that name on
** *ppHost, the host of the call being served (NULL: the proxy fails with
** an error naming the function). Errors in *pzErr. */
int qchProxies(sqlite3 *db, sqlite3 **ppHost, const char *zFns, char **pzErr);

#endif /* MENTAT_QUERY_COMPILE_HOST_H */
