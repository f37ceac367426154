/*
** mentat_version.h — the SQL function mentat_version (mentat_version.c),
** registered by entry.c.
*/
#ifndef MENTAT_MENTAT_VERSION_H
#define MENTAT_MENTAT_VERSION_H

#include "sqlite_api.h"

/* mentat_version([format]): text "V (COMMIT; sqlite >= 3.30)" with no
** argument, the JSON object (subtype 74) with 'json', NULL for NULL, and an
** error naming the accepted formats for anything else. */
void versionFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

#endif /* MENTAT_MENTAT_VERSION_H */
