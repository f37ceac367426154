/*
** host_state.h — the table mentat_host_state (host_state.c), whose
** disconnect at a connection's close frees its host-store state;
** registered by entry.c.
*/
#ifndef MENTAT_HOST_STATE_H
#define MENTAT_HOST_STATE_H

#include "sqlite_api.h"

/* Registers the eponymous table mentat_host_state on db. SQLite code. */
int hostStateRegister(sqlite3 *db);

#endif /* MENTAT_HOST_STATE_H */
