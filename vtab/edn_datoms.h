/*
** edn_datoms.h — the raw-index table edn_datoms (edn_datoms.c,
** edn_datoms_plan.c), Datomic's d/datoms; registered by entry.c.
*/
#ifndef MENTAT_EDN_DATOMS_H
#define MENTAT_EDN_DATOMS_H

#include "sqlite_api.h"

/* Registers the edn_datoms table module on db. SQLite code. */
int eddRegister(sqlite3 *db);

#endif /* MENTAT_EDN_DATOMS_H */
