/*
** host.h — the SQL layer's part of host stores (host.c, SPEC §3a): which
** store a db_path names, and the close hook of a connection's host-store
** state.
*/
#ifndef MENTAT_HOST_H
#define MENTAT_HOST_H

#include "sqlite_api.h"
#include "store.h"

/* The store `db_path` zPath names for host connection host: a host store
** for ':main', ':temp', ':<attached>' (store_host.h), else the file store
** (storeAcquire). bWrite: edn_t (a read-only host database is refused).
** *ppStore as storeAcquire's; errors in *pzErr. */
int hostAcquireStore(sqlite3 *host, const char *zPath, int bWrite, Store **ppStore, char **pzErr);

/* Registers the eponymous table mentat_host_state, whose disconnect at
** close frees the connection's host-store state (host.c). */
int hostStateRegister(sqlite3 *db);

#endif /* MENTAT_HOST_H */
