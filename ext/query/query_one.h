/*
** query_one.h — mentat_one, the one-row table a deep function result is
** bound through (query_compile_scope.c, qcTermExpr), registered on every
** store connection with the other store functions (query_funcs.c).
*/
#ifndef MENTAT_QUERY_ONE_H
#define MENTAT_QUERY_ONE_H

#include "sqlite_api.h"

/* Registers mentat_one(value [, tag]) on db. SQLite code. */
int qOneRegister(sqlite3 *db);

#endif /* MENTAT_QUERY_ONE_H */
