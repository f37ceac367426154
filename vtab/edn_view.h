/*
** edn_view.h — the edn_view module (edn_view.c): Datalog views as virtual
** tables with named columns. entry.c registers it.
*/
#ifndef MENTAT_EDN_VIEW_H
#define MENTAT_EDN_VIEW_H

#include "sqlite_api.h"

/* Registers the edn_view module on db. SQLite code. */
int eviewRegister(sqlite3 *db);

#endif /* MENTAT_EDN_VIEW_H */
