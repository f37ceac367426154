/*
** query_compile.h — the query compiler's entry point, for the plan cache
** (query_plan_cache.c) and the tests: a query's text and its inputs' shape
** in, a QueryPlan (query_plan.h) out. How the SQL is built is in
** query_compile_scope.h and the query_compile_*.c files it names.
*/
#ifndef MENTAT_QUERY_COMPILE_H
#define MENTAT_QUERY_COMPILE_H

#include "query_plan.h"

/* Parses and compiles zQuery for the inputs in pOpts (their shape shapes
** the SQL). *ppPlan is new (no statement yet). Errors in *pzErr. */
int qCompile(Schema *pSchema, const char *zQuery, int nQuery, const QueryOpts *pOpts,
             QueryPlan **ppPlan, char **pzErr);

#endif /* MENTAT_QUERY_COMPILE_H */
