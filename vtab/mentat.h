/*
** mentat.h — the extension's SQL surface as seen from C: registration of the
** functions and the edn_q table on a host connection.
*/
#ifndef MENTAT_MENTAT_H
#define MENTAT_MENTAT_H

#include "sqlite_api.h"

/* Registers edn_t, edn_q (scalar and table), edn_pull, mentat_version on host connection db
** (main.c; also used directly by the unit tests). Returns an SQLite code;
** *pzErr (sqlite3_malloc'd) on failure. */
int mentatRegister(sqlite3 *db, char **pzErr);

/* SQL functions (func_*.c) and the table module (vtab/edn_q.c).
** xGone, if not NULL, is called (with NULL) when the module leaves the
** connection — when it closes — or at once if registration fails; main.c
** uses it to know when the last host connection is gone. */
int funcRegister(sqlite3 *db);

/* Registers mentat_version() and mentat_version(format) (func_version.c):
** the build's version, git commit and minimum SQLite. SQLite code. */
int funcVersionRegister(sqlite3 *db);

/* SPEC §1: the oldest SQLite the extension loads into (3.30 brought
** SQLITE_DIRECTONLY and the introspection pragmas main.c relies on). */
#define MENTAT_MIN_SQLITE 3030000
int ednqTableRegister(sqlite3 *db, void (*xGone)(void *));

#endif /* MENTAT_MENTAT_H */
