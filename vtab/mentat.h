/*
** mentat.h — the extension's SQL surface as seen from C: registration of
** edn_t, edn_q (scalar and table), edn_pull, edn_datoms, edn_log, the
** edn_view module and mentat_version on a host
** connection (entry.c; the unit tests call it directly).
** Takes in a host connection; gives out the registered functions and
** tables; calls every stage below (the vtab stage is the last).
*/
#ifndef MENTAT_MENTAT_H
#define MENTAT_MENTAT_H

#include "sqlite_api.h"

/* Registers the SQL surface on host connection db (harmless when it is
** there already). Returns an SQLite code; *pzErr (sqlite3_malloc'd, any
** previous one freed) on failure. */
int mentatRegister(sqlite3 *db, char **pzErr);

/* ../shared/SPEC.md §1: the oldest SQLite the extension loads into (3.30
** brought SQLITE_DIRECTONLY and the introspection pragmas entry.c relies
** on). */
#define MENTAT_MIN_SQLITE 3030000

#endif /* MENTAT_MENTAT_H */
