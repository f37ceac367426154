/*
** store_write.h — what the transactor tells the store's writer side
** (store_write.c) about a write in progress, beyond store.h's begin/end.
*/
#ifndef MENTAT_STORE_WRITE_H
#define MENTAT_STORE_WRITE_H

#include "store.h"

/* Inside storeWriteBegin/storeWriteEnd: the largest datoms rowid this write
** inserted (sqlite3_last_insert_rowid after an insert into `datoms`; rowids
** grow, so it is the table's row high-water mark) and how many rows that
** insert added. storeWriteEnd uses them to decide, without a query of its
** own, whether the store grew enough for storeTune to run (managed indexes,
** statistics), and whether this was a bulk write that defers it. A write
** that notes nothing inserted no datoms and does not retune (unless it
** changed the schema or a tune is pending). */
void storeWriteNoteDatoms(Store *p, sqlite3_int64 iMaxRowid, int nInserted);

/* Runs a tune that bulk writes deferred (store_write.c, TUNING AFTER BULK
** WRITES), if no write is in progress in this process; otherwise leaves it
** for later. Called by storeReader before
** it checks out a connection, so the first read after a bulk load gets the
** managed indexes. Never fails: tuning is an optimisation. */
void storeTunePending(Store *p);

/* A reader met a state older than the published schema's with another
** schema (storeRevalidate's ppOwn): a reader that began before a newer
** publish, or the file gone back (a backup restored over it). The writer's
** BEGIN IMMEDIATE reads the newest state, so it settles which and, for a
** file gone back, publishes the restored schema: without it, a process
** that only reads would reload the schema on every call until its tx mark
** passed the old one. Skipped, to be retried by a later call, when a write
** is in progress in this process or another holds the write lock. */
void storeWriterRecheck(Store *p);

/* The name of the VFS store connections are opened with (store_write_vfs.c:
** the default VFS, with WAL frames gathered into few large writes), or NULL
** for the default VFS when MENTAT_WAL_GATHER=0 or the default VFS is not
** unix. Registered on first call. */
const char *storeWriteVfs(void);

#endif /* MENTAT_STORE_WRITE_H */
