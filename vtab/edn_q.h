/*
** edn_q.h — the two forms of edn_q: the scalar function (edn_q_scalar.c),
** one JSON document for the whole result, and the eponymous table
** (edn_q_table.c), whose rows stream. entry.c registers both.
*/
#ifndef MENTAT_EDN_Q_H
#define MENTAT_EDN_Q_H

#include "sqlite_api.h"

/* edn_q(db_path, query [, opts]): the result as one JSON document, or an
** "edn_q: " error. */
void ednqScalarFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

/* Registers the edn_q table module on db. xGone, if not NULL, is called
** (with db) when the module leaves the connection — when it closes — or
** at once if registration fails. SQLite code. */
int ednqTableRegister(sqlite3 *db, void (*xGone)(void *));

#endif /* MENTAT_EDN_Q_H */
