/*
** query_compile.h — the query compiler's entry point, for the runner
** (query_run.c) and the tests: a query's text and its inputs' shape in, a
** QueryPlan (query_plan.h) out. How the SQL is built is in
** query_compile_scope.h and the query_compile_*.c files it names.
*/
#ifndef MENTAT_QUERY_COMPILE_H
#define MENTAT_QUERY_COMPILE_H

#include "query_plan.h"

/* Parses and compiles zQuery for the inputs in pOpts (their shape shapes
** the SQL). *ppPlan is new (no statement yet). Errors in *pzErr. */
int qCompile(Schema *pSchema, const char *zQuery, int nQuery, const QueryOpts *pOpts,
             QueryPlan **ppPlan, char **pzErr);

/* query_compile_host.c. A read of a host store whose database holds no
** store yet runs on a reader of the private in-memory store (an empty
** store: the bootstrap only), which has none of the host's functions: this
** registers on that reader, db, a proxy for each function of zFns
** (QueryPlan.zHostFns) it lacks, which calls the function of that name on
** *ppHost, the host of the call being served (NULL: the proxy fails with
** an error naming the function). Errors in *pzErr. */
int qcHostProxies(sqlite3 *db, sqlite3 **ppHost, const char *zFns, char **pzErr);

#endif /* MENTAT_QUERY_COMPILE_H */
