/*
** edn_datoms.h — the raw-index table edn_datoms (edn_datoms.c), Datomic's
** d/datoms. entry.c registers it.
*/
#ifndef MENTAT_EDN_DATOMS_H
#define MENTAT_EDN_DATOMS_H

#include "sqlite_api.h"

/* Registers the edn_datoms table module on db. SQLite code. */
int ednDatomsRegister(sqlite3 *db);

#endif /* MENTAT_EDN_DATOMS_H */
