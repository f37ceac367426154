/*
** edn_pull.h — the SQL function edn_pull (edn_pull.c), registered by
** entry.c.
*/
#ifndef MENTAT_EDN_PULL_H
#define MENTAT_EDN_PULL_H

#include "sqlite_api.h"

/* edn_pull(db_path, pattern, entity): the entity's JSON map, NULL when the
** entity names none, or an "edn_pull: " error. */
void ednpullFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

#endif /* MENTAT_EDN_PULL_H */
