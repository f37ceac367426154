/*
** edn_t.h — the SQL function edn_t (edn_t.c), registered by entry.c.
*/
#ifndef MENTAT_EDN_T_H
#define MENTAT_EDN_T_H

#include "sqlite_api.h"

/* edn_t(db_path, tx_edn): the JSON tx report, or an "edn_t: " error. */
void edntFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

#endif /* MENTAT_EDN_T_H */
