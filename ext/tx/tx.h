/*
** tx.h — the transactor: EDN tx-data in, datoms and log rows out (SPEC §5).
**
** HOW IT WORKS
** The whole input is read first (a read error writes nothing). Within one
** storeWriteBegin/storeWriteEnd pair the transactor expands map forms into
** :db/add / :db/retract operations, resolves lookup refs, idents and
** upserts against the database as it was before the transaction (as Datomic
** does), allocates entids for the remaining tempids, checks types,
** cardinality and uniqueness, drops no-op assertions and retractions, adds
** the implicit retractions of cardinality-one replacement and the tx's
** :db/txInstant, and writes `datoms`, `timelined_transactions`, the
** `idents`/`schema` mirrors and the partition marks. Any error rolls the
** SQLite transaction back, so a failed call changes nothing.
*/
#ifndef MENTAT_TX_H
#define MENTAT_TX_H

#include "store.h"

/* Transacts zEdn[0..nEdn) (one EDN vector of forms) on pStore.
** On success appends the JSON tx report to pReport, built before the commit
** (so an error, out of memory included, always means nothing was stored):
**   {"tx_id":N,"tx_instant":"RFC 3339 UTC","tempids":{"name":entid,...}}
** On failure returns an SQLite code and sets *pzErr (sqlite3_malloc'd, caller
** frees) to a message in the user's terms, without the "edn_t: " prefix,
** e.g. "line 3 col 14: unknown attribute :person/nmae". */
int txTransact(Store *pStore, const char *zEdn, int nEdn,
               sqlite3_str *pReport, char **pzErr);

/* Datomic's d/with, for the "with" opt (vtab/call.c): transacts zEdn on
** pConn inside a write the caller opened with storeWriteBegin and always
** ends with storeWriteEnd(..., bCommit = 0, ...), so nothing stays. The
** same stages, checks, errors and report as txTransact (the tx id is the
** one the next txTransact would take); pSchema is the snapshot
** storeWriteBegin gave. *ppNew: when the transaction changed the schema, the
** snapshot after it (one reference; the caller reads with it, never
** publishes it), else NULL. The writer's partition marks are not marked
** checked (nothing was committed). */
int txWith(StoreConn *pConn, Schema *pSchema, const char *zEdn, int nEdn,
           sqlite3_str *pReport, Schema **ppNew, char **pzErr);

/* tx_rewind.c. Inside the caller's open write on pConn (never committed),
** turns the store's datoms and log into the database as of tx iTx:
** datoms asserted after it go, datoms it held that later transactions
** retracted come back (with the tx that asserted them and the index flags
** of pSchema's definition of their attribute), and log rows after it go;
** the schema mirrors and partition marks stay, as an as-of query keeps the
** current schema and ids. What remains reads as the asOf database does
** (query_compile_sql.c, qcView). Costs a scan of the log and of datoms. */
int txRewind(StoreConn *pConn, const Schema *pSchema, sqlite3_int64 iTx, char **pzErr);

/* Behaviour where SPEC §5 leaves a choice (follows Datomic unless noted):
** - An attribute cannot be used in the transaction that defines it: ops are
**   checked against the schema from before the transaction; the error says
**   "attribute :a/b is defined in this same transaction; transact the
**   schema first".
** - A new attribute without :db/cardinality gets :db.cardinality/one, and
**   :db/unique without :db/index gets :db/index true, both as datoms.
** - Altering an existing attribute (plain assertions on the attribute
**   entity or Datomic's :db.alter/_attribute form; Datomic's rules):
**   :db/ident renames; cardinality one -> many always, many -> one only when
**   no entity holds two values; :db/unique added only when the stored
**   values are unique (it implies :db/index true, asserted), identity <->
**   value freely, retracted freely; :db/index, :db/isComponent (refs only),
**   :db/noHistory and :db/doc toggle. The datoms' index_avet/unique_value
**   columns and the idx_auto_avet_<a> value index follow. Changing
**   :db/valueType or :db/fulltext, or retracting :db/cardinality, is an
**   error naming the attribute. The data checks see the transaction's own
**   datoms; those datoms themselves use the definition from before it.
** - Tempids are keyed by their text: "x", "-1" for -1 and for
**   #db/id [:db.part/user -1] alike (the first use's partition wins).
** - A tempid named only in retractions or cas (no assertion makes it an
**   entity) is an error, as in Datomic; one that is also asserted about is
**   a new entity, so retracting its datoms is a no-op.
** - :db/txInstant may be set on the transaction entity, not earlier than
**   the previous transaction's; otherwise it is now, kept monotonic.
** Return codes: SQLITE_ERROR for bad tx-data, else SQLite's own code
** (SQLITE_NOMEM, SQLITE_BUSY, SQLITE_IOERR ...). */

#endif /* MENTAT_TX_H */
