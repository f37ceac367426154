/*
** store_host.h — host stores (SPEC.md §3a): a store kept inside a database of
** the calling connection (`db_path` ':main', ':temp', ':<attached>'),
** read and written through that connection only.
**
** A host store is a Store (store.h) whose one StoreConn wraps the host
** connection, which it does not own. storeReader, storeWriteBegin,
** storeWriteEnd and storeRelease dispatch here for it; the upper layers use
** it like any store. State (schema snapshot, the tx and query caches with
** their prepared statements on the host) is kept per (host connection,
** schema name) and freed by storeHostClose, which the SQL layer calls from
** an eponymous virtual table's xDisconnect: SQLite disconnects every
** virtual table, eponymous ones included, before sqlite3_close checks for
** unfinalized statements, so those prepared statements never make a plain
** sqlite3_close return SQLITE_BUSY.
*/
#ifndef MENTAT_STORE_HOST_H
#define MENTAT_STORE_HOST_H

#include "store.h"

/* Finds or creates the host store for database zName (without the ':')
** of connection host. bWrite: the caller will write (edn_t): a read-only
** database is refused then. *ppStore holds one reference (storeRelease).
** *pbNew: the first host store of this connection since its state was last
** freed, so the caller must make sure storeHostClose will run at close.
** Errors (*pzErr): "no database aux on this connection (db_path ':aux')". */
int storeHostAcquire(sqlite3 *host, const char *zName, int bWrite, Store **ppStore, int *pbNew,
                     char **pzErr);

/* Frees every host store of connection host that no caller holds; held
** ones are freed at their last storeRelease. */
void storeHostClose(sqlite3 *host);

/* storeReader on a host store whose database holds no store tables yet
** returns SQLITE_NOTFOUND (no message): reads of it see an empty store, and
** the caller serves them from the private in-memory store (the bootstrap
** only), so nothing is written to the host database before the first
** edn_t. */

/* The host connection of a host store, NULL for a file store. */
sqlite3 *storeHostDb(const Store *p);

#endif /* MENTAT_STORE_HOST_H */
