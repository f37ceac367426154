/*
** edn_log.h — the raw log table edn_log (edn_log.c), Datomic's log
** tx-range; registered by entry.c.
*/
#ifndef MENTAT_EDN_LOG_H
#define MENTAT_EDN_LOG_H

#include "sqlite_api.h"

/* Registers the edn_log table module on db. SQLite code. */
int ednlRegister(sqlite3 *db);

#endif /* MENTAT_EDN_LOG_H */
