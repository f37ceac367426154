/*
** sqlite_api.h — how every file of the extension reaches SQLite.
**
** The loadable extension must call SQLite only through the host's API table
** (SPEC §1), so ext files include <sqlite3ext.h> and declare the table with
** SQLITE_EXTENSION_INIT3; vtab/entry.c defines it with SQLITE_EXTENSION_INIT1.
** The Check unit tests link the same sources straight against libsqlite3:
** they build with -DMENTAT_STATIC, where the plain <sqlite3.h> is used.
*/
#ifndef MENTAT_SQLITE_API_H
#define MENTAT_SQLITE_API_H

#ifdef MENTAT_STATIC
# include <sqlite3.h>
#else
# include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
#endif

/* The 3.40 headers predate these; the values are SQLite's own. */
#ifndef SQLITE_SUBTYPE
# define SQLITE_SUBTYPE 0x000100000
#endif
#ifndef SQLITE_RESULT_SUBTYPE
# define SQLITE_RESULT_SUBTYPE 0x001000000
#endif
#ifndef SQLITE_DIRECTONLY
# define SQLITE_DIRECTONLY 0x000080000
#endif

/* JSON results carry subtype 'J' (74) so json_object() nests them (SPEC §2). */
#define MENTAT_JSON_SUBTYPE 74

#endif /* MENTAT_SQLITE_API_H */
