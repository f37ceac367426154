/*
** edn_datoms.h — the raw-index tables: edn_datoms (edn_datoms.c), Datomic's
** d/datoms, and edn_log (edn_log.c), Datomic's log tx-range. entry.c
** registers both.
*/
#ifndef MENTAT_EDN_DATOMS_H
#define MENTAT_EDN_DATOMS_H

#include "sqlite_api.h"

/* Registers the edn_datoms table module on db. SQLite code. */
int ednDatomsRegister(sqlite3 *db);

/* Registers the edn_log table module on db. SQLite code. */
int ednLogRegister(sqlite3 *db);

#endif /* MENTAT_EDN_DATOMS_H */
