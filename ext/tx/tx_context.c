/*
** tx_context.c — the transaction's shared context, below the driver (tx.c)
** and the stages it runs (tx_expand, tx_lookup, tx_resolve, tx_schema,
** tx_write): the SQL of every statement and the per-writer statement cache,
** errors with their line and column, the op list, the tempid table, the
** lookup-ref table, and the value helpers (bind, compare, print, read back,
** fulltext rowids). The stages call only this file and SQLite; nothing here
** calls a stage.
**
** Statements are prepared once per writer connection (SQLITE_PREPARE_
** PERSISTENT) and kept in pConn->pTxCache.
*/
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "config.h"
#include "tx_context.h"

/* The SQL of each TXS_* statement. Attribute entids are bound, not inlined:
** these statements are generic; the unique lookup states
** `unique_value IS NOT 0` so idx_datoms_unique_value serves it.
** The attribute is compared as `a = (?N + 0)`, not `a = ?N`: with the
** per-attribute partial indexes (`... WHERE a = <entid>`) in the schema,
** SQLite's planner tests a bare parameter against each index's WHERE and
** then re-prepares the statement whenever that binding changes — which
** here is every other step. The expression keeps the plan (EAVT / the
** unique-value index) and the statement prepared once. */
static const char *const azTxSql[TXS_COUNT] = {
  /* TXS_PARTS */
  "SELECT part, start, \"end\", idx, rowid FROM known_parts",
  /* TXS_SET_PART: by the rowid TXS_PARTS read (no search of the part's index) */
  "UPDATE known_parts SET idx = ?2 WHERE rowid = ?1",
  /* TXS_LOOKUP_UNIQUE */
  "SELECT e FROM datoms WHERE a = (?1 + 0) AND value_type_tag = ?2 AND v = ?3"
  " AND unique_value IS NOT 0 LIMIT 1",
  /* TXS_EXISTS */
  "SELECT tx FROM datoms WHERE e = ?1 AND a = (?2 + 0) AND value_type_tag = ?3 AND v = ?4",
  /* TXS_INSERT */
  "INSERT INTO datoms (e, a, v, tx, value_type_tag, index_avet, index_vaet,"
  " index_fulltext, unique_value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
  /* TXS_DELETE */
  "DELETE FROM datoms WHERE e = ?1 AND a = (?2 + 0) AND value_type_tag = ?3 AND v = ?4",
  /* TXS_LOG */
  "INSERT INTO timelined_transactions (e, a, v, tx, added, value_type_tag, timeline)"
  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0)",
  /* TXS_LOG_OLD: the implicit retractions of a cardinality-one replacement.
  ** OR FAIL: an INSERT ... SELECT that may abort midway keeps a statement
  ** journal, each page it changes copied to it (a temp file once past
  ** 64 KiB inside a host's transaction); the write's own undo takes what a
  ** failure leaves (tx_write.c's batch inserts) */
  "INSERT OR FAIL INTO timelined_transactions (e, a, v, tx, added, value_type_tag, timeline)"
  " SELECT e, a, v, ?3, 0, value_type_tag, 0 FROM datoms WHERE e = ?1 AND a = (?2 + 0)",
  /* TXS_DELETE_OLD */
  "DELETE FROM datoms WHERE e = ?1 AND a = (?2 + 0)",
  /* TXS_ENTITY_DATOMS */
  "SELECT a, v, value_type_tag FROM datoms WHERE e = ?1",
  /* TXS_REFS_TO: VAET */
  "SELECT e, a FROM datoms WHERE v = ?1 AND index_vaet IS NOT 0",
  /* TXS_ATTR_VALUES */
  "SELECT v, value_type_tag FROM datoms WHERE e = ?1 AND a = (?2 + 0)",
  /* TXS_FTS_FIND */
  "SELECT rowid FROM fulltext_values WHERE text = ?1",
  /* TXS_FTS_ADD: the view's triggers de-duplicate by text */
  "INSERT INTO fulltext_values_view (text, searchid) VALUES (?1, NULL)",
  /* TXS_FTS_TEXT */
  "SELECT text FROM fulltext_values WHERE rowid = ?1",
  /* TXS_LAST_INSTANT */
  "SELECT v FROM datoms WHERE e = ?1 AND a = 3",
  /* TXS_INSERT_BATCH, TXS_LOG_BATCH: built by txBatchSql */
  NULL, NULL,
  /* TXS_FTS_MATCH: the phrase narrows through the FTS index, text = ?1
  ** decides */
  "SELECT rowid FROM fulltext_values WHERE fulltext_values MATCH ?2 AND text = ?1",
  /* TXS_FTS_INSERT: only after TXS_FTS_MATCH proved the text absent */
  "INSERT INTO fulltext_values (text, searchid) VALUES (?1, NULL)",
  /* TXS_LOOKUP_BATCH: built by txLookupBatchSql */
  NULL,
  /* TXS_LOG_FORGET: a retracted :db/noHistory datom leaves the log */
  "DELETE FROM timelined_transactions WHERE a = (?2 + 0) AND e = ?1 AND value_type_tag = ?3"
  " AND v = ?4 AND timeline IS 0",
  /* TXS_LOG_FORGET_OLD: so do the values a cardinality-one :db/noHistory
  ** assertion replaces */
  "DELETE FROM timelined_transactions WHERE a = (?2 + 0) AND e = ?1 AND timeline IS 0",
  /* TXS_PART_MAX: the largest id in [?1, ?2] in use, -1 if none: as a
  ** datom's entity (EAVT), as a ref value (VAET), as an entity only the log
  ** still has (per attribute, the log's AEVT) and as the last logged tx.
  ** Each is a seek to one end of an index range (EXPLAIN QUERY PLAN: SEARCH
  ** ... USING COVERING INDEX), so the whole costs O(attributes * log n). */
  "SELECT max(coalesce((SELECT max(e) FROM datoms WHERE e BETWEEN ?1 AND ?2), -1),"
  " coalesce((SELECT max(v) FROM datoms WHERE index_vaet IS NOT 0 AND v BETWEEN ?1 AND ?2), -1),"
  " coalesce((SELECT max((SELECT max(t.e) FROM timelined_transactions t WHERE t.a = s.e"
  "   AND t.e BETWEEN ?1 AND ?2 AND t.timeline IS 0)) FROM (SELECT DISTINCT e FROM schema) s), -1),"
  " coalesce((SELECT tx FROM (SELECT tx FROM timelined_transactions ORDER BY rowid DESC LIMIT 1)"
  "   WHERE tx BETWEEN ?1 AND ?2), -1))",
  /* TXS_CARD_ONE: what a cardinality-one assertion replaces (each value,
  ** stored form) and whether it is there already (column 2: EXISTS's test) */
  "SELECT v, value_type_tag, value_type_tag = ?3 AND v = ?4, rowid FROM datoms WHERE e = ?1"
  " AND a = (?2 + 0)",
  /* TXS_DELETE_ROWID */
  "DELETE FROM datoms WHERE rowid = ?1",
};

/* The multi-row INSERTs: nRows rows of anonymous parameters. */
static char *txBatchSql(int eStmt, int nRows) {
  sqlite3_str *pSql = sqlite3_str_new(NULL);
  int i;
  if (eStmt == TXS_INSERT_BATCH) {
    sqlite3_str_appendall(pSql, "INSERT OR FAIL INTO datoms (e, a, v, tx, value_type_tag, index_avet,"
                                " index_vaet, index_fulltext, unique_value) VALUES ");
  } else {
    sqlite3_str_appendall(pSql, "INSERT OR FAIL INTO timelined_transactions (e, a, v, tx, added,"
                                " value_type_tag, timeline) VALUES ");
  }
  for (i = 0; i < nRows; i++) {
    if (i) sqlite3_str_appendchar(pSql, 1, ',');
    sqlite3_str_appendall(pSql, eStmt == TXS_INSERT_BATCH ? "(?,?,?,?,?,?,?,?,?)" : "(?,?,?,?,?,?,0)");
  }
  return sqlite3_str_finish(pSql);
}

/* The batched statement: TX_LOOKUP_BATCH (slot, value) rows from ?3 on,
** joined to the unique-value index. The attribute is `(?1 + 0)` for the
** reason given above azTxSql (no re-prepare with the per-attribute indexes). */
static char *txLookupBatchSql(void) {
  sqlite3_str *pSql = sqlite3_str_new(NULL);
  int i;
  sqlite3_str_appendall(pSql, "SELECT k.column1, d.e FROM (VALUES ");
  for (i = 0; i < TX_LOOKUP_BATCH; i++) {
    sqlite3_str_appendf(pSql, "%s(%d, ?%d)", i ? "," : "", i, i + 3);
  }
  sqlite3_str_appendall(pSql, ") AS k CROSS JOIN datoms AS d ON d.a = (?1 + 0)"
                              " AND d.value_type_tag = ?2 AND d.v = k.column2"
                              " AND d.unique_value IS NOT 0");
  return sqlite3_str_finish(pSql);
}

/* The writer connection's page cache for large transactions is
** configWriterCacheBytes() (MENTAT_CACHE_SIZE, default 64 MiB: larger
** measured slower on the bench load); this one is for transactions of at
** most TX_SMALL_OPS operations, whose dirty pages (about a dozen per datom)
** fit in it. See txCacheFit for why small transactions must not run with
** the large cache. */
#define TX_SMALL_CACHE_BYTES (8LL * 1024 * 1024)
#define TX_SMALL_OPS 128
/* Small transactions in a row before a large cache is shrunk. */
#define TX_SMALL_RUN 16

typedef struct TxCache {
  sqlite3_stmt *aStmt[TXS_COUNT];
  /* txStmtRows' statements of 1..TX_BATCH - 1 rows (TX_BATCH: TXS_*_BATCH) */
  sqlite3_stmt *aRows[2][TX_BATCH];
  sqlite3_int64 nCacheBytes;   /* the writer's page cache as last set; 0 unset */
  int nSmallRun;               /* small transactions since the last large one */
  /* THE LAST WRITE (txLastSave) */
  int bLast;
  TxPart aLastPart[TX_MAX_PARTS];
  int nLastPart, iLastPartTx, iLastPartUser, iLastPartDb;
  sqlite3_int64 iLastTx, iLastInstant;
} TxCache;

static void txCacheFree(void *pArg) {
  TxCache *pCache = (TxCache *)pArg;
  int i;
  if (pCache == NULL) return;
  for (i = 0; i < TXS_COUNT; i++) sqlite3_finalize(pCache->aStmt[i]);
  for (i = 0; i < TX_BATCH; i++) {
    sqlite3_finalize(pCache->aRows[0][i]);
    sqlite3_finalize(pCache->aRows[1][i]);
  }
  sqlite3_free(pCache);
}

/* Whether a statement may run now, and the statement cache (created on
** first use). */
static int txStmtCheck(Tx *p, TxCache **ppCache) {
  TxCache *pCache = (TxCache *)p->pConn->pTxCache;
  int rc;
  /* SQLite rolls the whole transaction back by itself when a statement
  ** fails with SQLITE_NOMEM, SQLITE_FULL or an I/O error (sqlite3VdbeHalt),
  ** even a read or a PRAGMA whose error is only a hint to us; a statement
  ** run after that would commit on its own. Every statement of the
  ** transactor is fetched here, so this is where that stops. */
  rc = txPoll(p);
  if (rc != SQLITE_OK) return rc;
  if (!storeWriteAlive(p->pConn)) {
    rc = sqlite3_errcode(p->db);
    if (rc != SQLITE_NOMEM && rc != SQLITE_FULL && (rc & 0xff) != SQLITE_IOERR) rc = SQLITE_ABORT;
    if (rc == SQLITE_NOMEM) return rc;
    txErr(p, 0, 0, "the store's write transaction ended unexpectedly; nothing was written");
    return rc;
  }
  if (pCache == NULL) {
    pCache = sqlite3_malloc64(sizeof(*pCache));
    if (pCache == NULL) return SQLITE_NOMEM;
    memset(pCache, 0, sizeof(*pCache));
    p->pConn->pTxCache = pCache;
    p->pConn->xTxCacheFree = txCacheFree;
  }
  *ppCache = pCache;
  return SQLITE_OK;
}

/* The cached statement eStmt on the writer connection, reset and with
** bindings cleared. */
int txStmt(Tx *p, int eStmt, sqlite3_stmt **ppStmt) {
  TxCache *pCache = NULL;
  int rc = txStmtCheck(p, &pCache);
  if (rc != SQLITE_OK) return rc;
  if (pCache->aStmt[eStmt] == NULL) {
    char *zBatch = NULL;
    if (azTxSql[eStmt] == NULL) {
      zBatch = eStmt == TXS_LOOKUP_BATCH ? txLookupBatchSql() : txBatchSql(eStmt, TX_BATCH);
      if (zBatch == NULL) return SQLITE_NOMEM;
    }
    rc = sqlite3_prepare_v3(p->db, zBatch ? zBatch : azTxSql[eStmt], -1, SQLITE_PREPARE_PERSISTENT,
                            &pCache->aStmt[eStmt], NULL);
    sqlite3_free(zBatch);
    if (rc != SQLITE_OK) {
      return txSqlErr(p, "cannot prepare the transactor's SQL: ");
    }
  } else {
    sqlite3_reset(pCache->aStmt[eStmt]);
    sqlite3_clear_bindings(pCache->aStmt[eStmt]);
  }
  *ppStmt = pCache->aStmt[eStmt];
  return SQLITE_OK;
}

int txStmtRows(Tx *p, int bLog, int nRows, int bReady, sqlite3_stmt **ppStmt) {
  TxCache *pCache;
  sqlite3_stmt **pp;
  char *zSql;
  int rc;
  if (nRows < 1) return SQLITE_MISUSE;
  if (nRows >= TX_BATCH) {
    int eStmt = bLog ? TXS_LOG_BATCH : TXS_INSERT_BATCH;
    return bReady ? txStmtReady(p, eStmt) : txStmt(p, eStmt, ppStmt);
  }
  rc = txStmtCheck(p, &pCache);
  if (rc != SQLITE_OK) return rc;
  pp = &pCache->aRows[bLog][nRows];
  if (ppStmt) *ppStmt = NULL;
  if (*pp) {
    if (bReady) return SQLITE_OK;
    sqlite3_reset(*pp);
    sqlite3_clear_bindings(*pp);
    *ppStmt = *pp;
    return SQLITE_OK;
  }
  zSql = txBatchSql(bLog ? TXS_LOG_BATCH : TXS_INSERT_BATCH, nRows);
  if (zSql == NULL) return SQLITE_NOMEM;
  rc = sqlite3_prepare_v3(p->db, zSql, -1, SQLITE_PREPARE_PERSISTENT, pp, NULL);
  sqlite3_free(zSql);
  if (rc != SQLITE_OK) return txSqlErr(p, "cannot prepare the transactor's SQL: ");
  if (ppStmt) *ppStmt = *pp;
  return SQLITE_OK;
}

/* THE LAST WRITE. Inside the host's transaction every edn_t read the
** whole of known_parts and the last transaction's :db/txInstant (~14k
** instructions of a one-datom call's ~215k), although, when the write
** witness holds (store_host.c: nothing has changed since this
** connection's last edn_t, no rollback undid it), both are what that
** transaction left. Tempid counters are kept only that far: no
** rollback or other writer can have moved them unseen. */
void txLastSave(Tx *p) {
  TxCache *pCache = (TxCache *)p->pConn->pTxCache;
  if (pCache == NULL) return;
  memcpy(pCache->aLastPart, p->aPart, (size_t)p->nPart * sizeof(TxPart));
  pCache->nLastPart = p->nPart;
  pCache->iLastPartTx = p->iPartTx;
  pCache->iLastPartUser = p->iPartUser;
  pCache->iLastPartDb = p->iPartDb;
  pCache->iLastTx = p->iTx;
  pCache->iLastInstant = p->iInstant;
  pCache->bLast = 1;
}

static TxCache *txLastValid(Tx *p) {
  TxCache *pCache = (TxCache *)p->pConn->pTxCache;
  if (pCache == NULL) return NULL;
  if (!p->pConn->bContinues || p->pConn->bMarksUnchecked) pCache->bLast = 0;
  return pCache->bLast ? pCache : NULL;
}

int txLastParts(Tx *p) {
  TxCache *pCache = txLastValid(p);
  int i;
  if (pCache == NULL) return 0;
  memcpy(p->aPart, pCache->aLastPart, (size_t)pCache->nLastPart * sizeof(TxPart));
  p->nPart = pCache->nLastPart;
  p->iPartTx = pCache->iLastPartTx;
  p->iPartUser = pCache->iLastPartUser;
  p->iPartDb = pCache->iLastPartDb;
  for (i = 0; i < p->nPart; i++) {
    p->aPart[i].iIdx0 = p->aPart[i].iIdx;
    p->aPart[i].bDirty = 0;
  }
  return 1;
}

int txLastInstant(Tx *p, sqlite3_int64 *piPrev) {
  TxCache *pCache = txLastValid(p);
  if (pCache == NULL || pCache->iLastTx != p->iTx - 1) return 0;
  *piPrev = pCache->iLastInstant;
  return 1;
}

/* A write with no undo of its own (storeWriteUndoPoint) prepares every
** statement it will run before its first write: a prepare after it could
** fail (out of memory) with the transaction still open. */
int txStmtReady(Tx *p, int eStmt) {
  TxCache *pCache = (TxCache *)p->pConn->pTxCache;
  sqlite3_stmt *pStmt = NULL;
  if (pCache && pCache->aStmt[eStmt]) return SQLITE_OK;
  return txStmt(p, eStmt, &pStmt);
}

/* Sizes the writer's page cache for this transaction, before its writes.
** A bulk transaction wants the large cache: it holds the hot pages of every
** index the transaction inserts into (values land at random places in AVET,
** VAET and the value indexes); at SQLite's default 2 MiB they spill to the
** WAL and are read back within the transaction. A small one must not keep
** it: when a
** B-tree split sorts its new pages, SQLite 3.40 parks a page under the
** pending-byte page number (balance_nonroot), and the commit's cache
** truncation then visits every cached page (pcache1TruncateUnsafe), a cost
** that grows with the cache and that a one-datom transaction would pay in
** full (bench/findings.md has the profile). The PRAGMA runs
** only when the size changes. Shrinking drops clean pages, which a later bulk
** transaction reads again from the OS cache, so a large cache is shrunk only
** after TX_SMALL_RUN small transactions in a row: a mix of large and small
** ones keeps it. Errors are ignored: the size is only a hint. */
void txCacheFit(Tx *p) {
  TxCache *pCache = (TxCache *)p->pConn->pTxCache;
  sqlite3_int64 nBytes;
  char zSql[64];
  if (pCache == NULL) return;   /* txLoadParts has run a cached statement */
  if (p->pConn->bHost) return;  /* the host's connection: its settings are its own */
  nBytes = configWriterCacheBytes();
  if (p->nOp > TX_SMALL_OPS) {
    pCache->nSmallRun = 0;
  } else {
    if (pCache->nSmallRun < TX_SMALL_RUN) pCache->nSmallRun++;   /* saturates */
    /* A large cache is kept until the run is long enough. */
    if (pCache->nSmallRun < TX_SMALL_RUN && pCache->nCacheBytes != 0) return;
    if (nBytes > TX_SMALL_CACHE_BYTES) nBytes = TX_SMALL_CACHE_BYTES;
  }
  if (nBytes == pCache->nCacheBytes) return;
  sqlite3_snprintf(sizeof zSql, zSql, "PRAGMA cache_size=-%lld", nBytes / 1024);
  if (sqlite3_exec(p->db, zSql, NULL, NULL, NULL) == SQLITE_OK) pCache->nCacheBytes = nBytes;
}

/* Sets *p->pzErr to "line L col C: <msg>" (position omitted when line is 0)
** and returns SQLITE_ERROR (SQLITE_NOMEM if the message cannot be built). */
int txErr(Tx *p, int line, int col, const char *zFmt, ...) {
  va_list ap;
  int rc;
  va_start(ap, zFmt);
  rc = ednErrorV(p->pzErr, "", line, col, zFmt, ap);
  va_end(ap);
  return rc;
}

/* An error from an SQLite call on the writer: "<zWhat><sqlite message>",
** returning SQLite's own primary code (SQLITE_NOMEM, SQLITE_BUSY, SQLITE_IOERR
** ... reach the caller as such; other failures are SQLITE_ERROR). */
int txSqlErr(Tx *p, const char *zWhat) {
  int ec = sqlite3_errcode(p->db) & 0xff;
  int rc;
  if (ec == SQLITE_NOMEM) return SQLITE_NOMEM;
  rc = txErr(p, 0, 0, "%s%s", zWhat ? zWhat : "", sqlite3_errmsg(p->db));
  if (rc != SQLITE_ERROR) return rc;
  return (ec == SQLITE_OK || ec == SQLITE_ROW || ec == SQLITE_DONE || ec == SQLITE_CONSTRAINT)
         ? SQLITE_ERROR : ec;
}

int txPoll(Tx *p) {
  if (!configPoll(&p->poll)) return SQLITE_OK;
  txErr(p, 0, 0, "interrupted");
  return SQLITE_INTERRUPT;
}

/* txSort's comparison and the poll it asks, per thread (qsort passes no
** argument; a sort never runs inside another). */
static _Thread_local int (*txSortCmpFn)(const void *, const void *) = NULL;
static _Thread_local ConfigPoll *txSortPollOf = NULL;

static int txSortCmp(const void *a, const void *b) {
  if (configPoll(txSortPollOf)) return 0;
  return txSortCmpFn(a, b);
}

int txSort(Tx *p, void *a, size_t n, size_t sz, int (*xCmp)(const void *, const void *)) {
  if (n < 2) return SQLITE_OK;
  txSortCmpFn = xCmp;
  txSortPollOf = &p->poll;
  qsort(a, n, sz, txSortCmp);
  txSortCmpFn = NULL;
  txSortPollOf = NULL;
  return txPoll(p);
}

/* Appends a zeroed op. The pointer is valid until the next txNewOp. */
int txNewOp(Tx *p, TxOp **ppOp) {
  int rc = txPoll(p);
  if (rc != SQLITE_OK) return rc;
  if (p->nOp == p->nOpAlloc) {
    int nNew = p->nOpAlloc ? p->nOpAlloc * 2 : 64;
    TxOp *aNew = sqlite3_realloc64(p->aOp, (sqlite3_uint64)nNew * sizeof(TxOp));
    if (aNew == NULL) return SQLITE_NOMEM;
    p->aOp = aNew;
    p->nOpAlloc = nNew;
  }
  *ppOp = &p->aOp[p->nOp++];
  memset(*ppOp, 0, sizeof(TxOp));
  return SQLITE_OK;
}

/* Binds the stored form of an op's value: the fulltext rowid for fulltext
** attributes (once known), else the value's encoding. */
int txValueBindStored(Tx *p, sqlite3_stmt *pStmt, int i, const TxOp *pOp) {
  (void)p;
  if (pOp->bFts) return sqlite3_bind_int64(pStmt, i, pOp->iFts);
  /* Text and bytes live in the arena or the input until the transaction
  ** ends, and every use of a cached statement rebinds it (txStmt clears the
  ** bindings), so SQLite need not copy them (valueBind does). No bind
  ** allocates then (in a UTF-8 database), which a write with no undo of
  ** its own relies on (storeWriteUndoPoint). */
  switch (pOp->v.type) {
    case VT_STRING: case VT_KEYWORD:
      return sqlite3_bind_text64(pStmt, i, pOp->v.z ? pOp->v.z : "", (sqlite3_uint64)pOp->v.n,
                                 SQLITE_STATIC, SQLITE_UTF8);
    case VT_BYTES: case VT_TUPLE:
      return sqlite3_bind_blob64(pStmt, i, pOp->v.z ? pOp->v.z : "", (sqlite3_uint64)pOp->v.n,
                                 SQLITE_STATIC);
    case VT_UUID:
      return sqlite3_bind_blob(pStmt, i, pOp->v.uuid, 16, SQLITE_STATIC);
    default:
      return valueBind(pStmt, i, &pOp->v);
  }
}

/* Total order on values of one type (for sorting ops and comparing cas). */
int txValueCmp(const TypedValue *a, const TypedValue *b) {
  int n, c;
  if (a->type != b->type) return a->type < b->type ? -1 : 1;
  switch (a->type) {
    case VT_DOUBLE:
      return a->d < b->d ? -1 : (a->d > b->d ? 1 : 0);
    case VT_STRING: case VT_KEYWORD: case VT_BYTES: case VT_TUPLE:
      n = a->n < b->n ? a->n : b->n;
      c = n ? memcmp(a->z, b->z, (size_t)n) : 0;
      if (c) return c < 0 ? -1 : 1;
      return a->n < b->n ? -1 : (a->n > b->n ? 1 : 0);
    case VT_UUID:
      c = memcmp(a->uuid, b->uuid, 16);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    default:
      return a->i < b->i ? -1 : (a->i > b->i ? 1 : 0);
  }
}

/* EDN-ish text of a value for messages (refs print their ident if any). */
void txValuePrint(sqlite3_str *pOut, const Schema *pSchema, const TypedValue *pV) {
  char zBuf[48];
  const char *zId;
  int i;
  switch (pV->type) {
    case VT_REF:
      zId = pSchema ? schemaIdent(pSchema, pV->i) : NULL;
      if (zId) sqlite3_str_appendall(pOut, zId);
      else sqlite3_str_appendf(pOut, "%lld", pV->i);
      break;
    case VT_BOOLEAN: sqlite3_str_appendall(pOut, pV->i ? "true" : "false"); break;
    case VT_LONG: sqlite3_str_appendf(pOut, "%lld", pV->i); break;
    case VT_DOUBLE: sqlite3_str_appendf(pOut, "%!.15g", pV->d); break;
    case VT_INSTANT:
      ednFormatInstant(pV->i, zBuf);
      sqlite3_str_appendf(pOut, "#inst \"%s\"", zBuf);
      break;
    case VT_UUID:
      ednFormatUuid(pV->uuid, zBuf);
      sqlite3_str_appendf(pOut, "#uuid \"%s\"", zBuf);
      break;
    case VT_STRING: ednJsonString(pOut, pV->z, pV->n); break;
    case VT_KEYWORD: sqlite3_str_append(pOut, pV->z, pV->n); break;
    case VT_BYTES:
      sqlite3_str_appendall(pOut, "#bytes \"");
      for (i = 0; i < pV->n; i++) sqlite3_str_appendf(pOut, "%02x", (unsigned char)pV->z[i]);
      sqlite3_str_appendall(pOut, "\"");
      break;
    case VT_TUPLE:
      if (valueTupleEdn(pOut, pV->z, pV->n) != SQLITE_OK) sqlite3_str_appendall(pOut, "#tuple ?");
      break;
    default: sqlite3_str_appendall(pOut, "nil"); break;
  }
}

/* Reads column iCol of pStmt (a datoms v) as a value of pAttr's type; text
** and blobs are copied into the arena. For fulltext attributes v is a rowid:
** *piFts gets it, *pbFts is set and the text is fetched. */
int txValueFromStored(Tx *p, const Attr *pAttr, sqlite3_stmt *pStmt, int iCol,
                      TypedValue *pOut, sqlite3_int64 *piFts, unsigned char *pbFts) {
  const void *z;
  int n, rc;
  memset(pOut, 0, sizeof(*pOut));
  pOut->type = pAttr->type;
  *pbFts = 0;
  if (pAttr->bFulltext && pAttr->type == VT_STRING
      && sqlite3_column_type(pStmt, iCol) == SQLITE_INTEGER) {
    sqlite3_stmt *pText = NULL;
    *piFts = sqlite3_column_int64(pStmt, iCol);
    *pbFts = 1;
    rc = txStmt(p, TXS_FTS_TEXT, &pText);
    if (rc) return rc;
    sqlite3_bind_int64(pText, 1, *piFts);
    rc = sqlite3_step(pText);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      sqlite3_reset(pText);
      return txSqlErr(p, "cannot read fulltext_values: ");
    }
    if (rc == SQLITE_ROW) {
      n = sqlite3_column_bytes(pText, 0);
      z = sqlite3_column_text(pText, 0);
      pOut->z = ednArenaStrdup(p->pArena, z ? (const char *)z : "", n);
      pOut->n = n;
      sqlite3_reset(pText);
      if (pOut->z == NULL) return SQLITE_NOMEM;
    } else {
      pOut->z = "";
      pOut->n = 0;
      sqlite3_reset(pText);
    }
    return SQLITE_OK;
  }
  switch (pAttr->type) {
    case VT_DOUBLE:
      pOut->d = sqlite3_column_double(pStmt, iCol);
      break;
    case VT_STRING: case VT_KEYWORD: case VT_BYTES: case VT_TUPLE:
      z = (pAttr->type == VT_BYTES || pAttr->type == VT_TUPLE) ? sqlite3_column_blob(pStmt, iCol)
                                  : (const void *)sqlite3_column_text(pStmt, iCol);
      n = sqlite3_column_bytes(pStmt, iCol);
      pOut->z = ednArenaStrdup(p->pArena, z ? (const char *)z : "", n);
      pOut->n = n;
      if (pOut->z == NULL) return SQLITE_NOMEM;
      break;
    case VT_UUID:
      z = sqlite3_column_blob(pStmt, iCol);
      n = sqlite3_column_bytes(pStmt, iCol);
      if (z && n == 16) memcpy(pOut->uuid, z, 16);
      break;
    default:
      pOut->i = sqlite3_column_int64(pStmt, iCol);
      break;
  }
  return SQLITE_OK;
}

/* Builds in pOut an FTS phrase query "t1 t2 ..." of the first 8 tokens of
** z[0..n): every ASCII character other than a letter or digit is a
** separator for the unicode61 tokenizer, so it becomes a space; other
** bytes are left for the tokenizer, which treats both sides alike. An
** identical text contains that phrase, so MATCH finds it. Returns 0 when
** the text has no ASCII letter or digit (it may have no token at all):
** the caller then scans. */
static int txFtsPhrase(const char *z, int n, sqlite3_str *pOut) {
  int i, nTok = 0, bInTok = 0, bAlnum = 0;
  sqlite3_str_appendchar(pOut, 1, '"');
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)z[i];
    int bTok = c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (bTok && c < 0x80) bAlnum = 1;
    if (bTok && !bInTok) {
      if (nTok == 8) break;
      if (nTok) sqlite3_str_appendchar(pOut, 1, ' ');
      nTok++;
    }
    if (bTok) sqlite3_str_appendchar(pOut, 1, (char)c);
    bInTok = bTok;
  }
  sqlite3_str_appendchar(pOut, 1, '"');
  return bAlnum;
}

/* The fulltext_values rowid of text z[0..n): *pbFound, *piRowid. With
** bCreate an absent text is inserted (and found). The format's view
** de-duplicates by scanning the table for the text on every insert, which
** made fulltext loads quadratic; so when the text has an indexable phrase
** the lookup goes through the FTS index and an absent text is inserted into
** the table directly — the same de-duplicated outcome. Texts without one
** take the scan and the view. */
int txFtsFind(Tx *p, const char *z, int n, int bCreate, sqlite3_int64 *piRowid, int *pbFound) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_str *pPhrase = sqlite3_str_new(p->db);
  char *zPhrase;
  int bPhrase = txFtsPhrase(z, n, pPhrase), rc, k;
  zPhrase = sqlite3_str_finish(pPhrase);
  if (zPhrase == NULL) return SQLITE_NOMEM;
  *pbFound = 0;
  for (k = 0; k < 2; k++) {
    rc = txStmt(p, bPhrase ? TXS_FTS_MATCH : TXS_FTS_FIND, &pStmt);
    if (rc) goto done;
    sqlite3_bind_text(pStmt, 1, z, n, SQLITE_STATIC);
    if (bPhrase) sqlite3_bind_text(pStmt, 2, zPhrase, -1, SQLITE_STATIC);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) *piRowid = sqlite3_column_int64(pStmt, 0);
    sqlite3_reset(pStmt);
    if (rc == SQLITE_ROW) { *pbFound = 1; rc = SQLITE_OK; goto done; }
    if (rc != SQLITE_DONE) { rc = txSqlErr(p, "fulltext lookup failed: "); goto done; }
    rc = SQLITE_OK;
    if (!bCreate || k == 1) break;
    rc = txStmt(p, bPhrase ? TXS_FTS_INSERT : TXS_FTS_ADD, &pStmt);
    if (rc) goto done;
    sqlite3_bind_text(pStmt, 1, z, n, SQLITE_STATIC);
    rc = sqlite3_step(pStmt);
    sqlite3_reset(pStmt);
    if (rc != SQLITE_DONE) { rc = txSqlErr(p, "fulltext insert failed: "); goto done; }
    rc = SQLITE_OK;
    if (bPhrase) {
      *piRowid = sqlite3_last_insert_rowid(p->db);
      *pbFound = 1;
      goto done;
    }
  }
  if (bCreate) rc = txErr(p, 0, 0, "fulltext value was not stored");
done:
  sqlite3_free(zPhrase);
  return rc;
}

/* True when e was allocated by this transaction (it has no datoms in the
** store yet, so existence and old-value probes can be skipped). Relies on
** the marks covering every entid in use, which txBumpPart maintains for
** explicit entids. */
int txIsFresh(const Tx *p, sqlite3_int64 e) {
  int i;
  for (i = 0; i < p->nPart; i++) {
    if (e >= p->aPart[i].iIdx0 && e < p->aPart[i].iIdx) return 1;
  }
  return 0;
}

/* FNV-1a over the attribute and the value's encoding. */
static unsigned int txLookupHash(const Attr *pAttr, const TypedValue *pV) {
  unsigned int h = 2166136261u;
  const unsigned char *z;
  int i, n;
  unsigned char aNum[8];
  sqlite3_int64 x = pAttr->e;
  for (i = 0; i < 8; i++) { h ^= (unsigned char)(x >> (8 * i)); h *= 16777619u; }
  switch (pV->type) {
    case VT_STRING: case VT_KEYWORD: case VT_BYTES:
      z = (const unsigned char *)pV->z;
      n = pV->n;
      break;
    case VT_UUID:
      z = pV->uuid;
      n = 16;
      break;
    case VT_DOUBLE:
      memcpy(aNum, &pV->d, 8);
      z = aNum;
      n = 8;
      break;
    default:
      for (i = 0; i < 8; i++) aNum[i] = (unsigned char)(pV->i >> (8 * i));
      z = aNum;
      n = 8;
      break;
  }
  for (i = 0; i < n; i++) { h ^= z[i]; h *= 16777619u; }
  return h;
}

/* Rebuilds the hash with twice the slots (at most half full). */
static int txLookupGrow(Tx *p) {
  int nNew = p->nLookHash ? p->nLookHash * 2 : 64;
  int *aNew = sqlite3_malloc64((sqlite3_uint64)nNew * sizeof(int));
  int i;
  if (aNew == NULL) return SQLITE_NOMEM;
  memset(aNew, 0, (size_t)nNew * sizeof(int));
  for (i = 0; i < p->nLook; i++) {
    unsigned int h = txLookupHash(p->aLook[i].pAttr, &p->aLook[i].v) & (unsigned)(nNew - 1);
    while (aNew[h]) h = (h + 1) & (unsigned)(nNew - 1);
    aNew[h] = i + 1;
  }
  sqlite3_free(p->aLookHash);
  p->aLookHash = aNew;
  p->nLookHash = nNew;
  return SQLITE_OK;
}

/* The entry for lookup ref [pAttr *pV] (pForm names it for messages),
** created on first use: *piLook. The value's text must outlive the Tx
** (arena or input memory). */
int txLookupAdd(Tx *p, const EdnValue *pForm, const Attr *pAttr, const TypedValue *pV,
                int *piLook) {
  unsigned int h;
  TxLookup *pL;
  int rc;
  if (p->nLook * 2 + 2 > p->nLookHash) {
    rc = txLookupGrow(p);
    if (rc) return rc;
  }
  h = txLookupHash(pAttr, pV) & (unsigned)(p->nLookHash - 1);
  while (p->aLookHash[h]) {
    pL = &p->aLook[p->aLookHash[h] - 1];
    if (pL->pAttr == pAttr && txValueCmp(&pL->v, pV) == 0) {
      *piLook = p->aLookHash[h] - 1;
      return SQLITE_OK;
    }
    h = (h + 1) & (unsigned)(p->nLookHash - 1);
  }
  if (p->nLook == p->nLookAlloc) {
    int nNew = p->nLookAlloc ? p->nLookAlloc * 2 : 32;
    TxLookup *aNew = sqlite3_realloc64(p->aLook, (sqlite3_uint64)nNew * sizeof(TxLookup));
    if (aNew == NULL) return SQLITE_NOMEM;
    p->aLook = aNew;
    p->nLookAlloc = nNew;
  }
  pL = &p->aLook[p->nLook];
  memset(pL, 0, sizeof(*pL));
  pL->pAttr = pAttr;
  pL->v = *pV;
  pL->pForm = pForm;
  p->aLookHash[h] = p->nLook + 1;
  *piLook = p->nLook++;
  return SQLITE_OK;
}


int txTempRoot(Tx *p, int i) {
  int r = i;
  while (p->aTemp[r].iAlias != r) r = p->aTemp[r].iAlias;
  while (p->aTemp[i].iAlias != r) {   /* path compression */
    int n = p->aTemp[i].iAlias;
    p->aTemp[i].iAlias = r;
    i = n;
  }
  return r;
}

/* True for the attributes whose datoms define an attribute. */
int txIsSchemaAttr(sqlite3_int64 a) {
  return a >= ENTID_DB_VALUETYPE && a <= ENTID_DB_NOHISTORY;
}

/* Here, below the stages, because the context's op check and the tuple stage both ask it:
** the context never calls a stage. The order is tx_tuple.c's azTupleMeta's. */
int txTupleMetaKind(const Tx *p, const Attr *pAttr) {
  static const char *const azMeta[] = { SCHEMA_TUPLE_ATTRS, SCHEMA_TUPLE_TYPES, SCHEMA_TUPLE_TYPE };
  int i;
  (void)p;
  if (pAttr == NULL || pAttr->e >= PART_USER_START || pAttr->zIdent == NULL) return 0;
  for (i = 0; i < 3; i++) if (strcmp(pAttr->zIdent, azMeta[i]) == 0) return i + 1;
  return 0;
}

int txCheckOp(Tx *p, const TxOp *pOp) {
  sqlite3_int64 a = pOp->pAttr->e, e = pOp->e.e;
  const Attr *pOld;
  const char *zName;
  /* The bootstrap entities (1..40: core idents and attributes) are the
  ** store's own vocabulary; renaming or redefining one makes every later
  ** transaction fail. Only :db/doc and the legacy :db.install/... and
  ** :db.alter/attribute datoms (which name :db.part/db) may change there,
  ** as Datomic protects its own schema. */
  if (e >= 1 && e <= ENTID_DB_SCHEMA_CORE && a != ENTID_DB_DOC && a != ENTID_DB_ALTER_ATTRIBUTE
      && !(a >= ENTID_DB_INSTALL_PARTITION && a <= ENTID_DB_INSTALL_ATTRIBUTE)) {
    const char *zE = schemaIdent(p->pSchema, e), *zA = schemaIdent(p->pSchema, a);
    return txErr(p, pOp->line, pOp->col, "cannot %s %s of the built-in %s",
                 pOp->eOp == TXOP_RETRACT ? "retract" : "change", zA ? zA : "an attribute",
                 zE ? zE : "entity");
  }
  /* A past transaction's instant is history that as-of by #inst relies on:
  ** only the running transaction's :db/txInstant may be set. */
  if (a == ENTID_DB_TXINSTANT && e != p->iTx && e < PART_TX_START) {
    return txErr(p, pOp->line, pOp->col,
                 "cannot %s :db/txInstant of entity %lld, which is not a transaction: only the "
                 "current transaction's may be set", pOp->eOp == TXOP_RETRACT ? "retract" : "set",
                 (long long)e);
  }
  if (a == ENTID_DB_TXINSTANT && e != p->iTx) {
    return txErr(p, pOp->line, pOp->col,
                 "cannot %s :db/txInstant of transaction %lld: only the current transaction's "
                 "may be set", pOp->eOp == TXOP_RETRACT ? "retract" : "change", (long long)e);
  }
  if (txTupleMetaKind(p, pOp->pAttr)) {
    /* A tuple definition is fixed once made: values are stored by it. */
    p->bSchema = 1;
    pOld = schemaAttr(p->pSchema, e);
    if (pOld == NULL) return SQLITE_OK;
    return txErr(p, pOp->line, pOp->col, "cannot change %s of attribute %s", pOp->pAttr->zIdent,
                 pOld->zIdent ? pOld->zIdent : "?");
  }
  if (a != ENTID_DB_IDENT && !txIsSchemaAttr(a)) return SQLITE_OK;
  p->bSchema = 1;
  if (a == ENTID_DB_IDENT) return SQLITE_OK;
  pOld = schemaAttr(p->pSchema, pOp->e.e);
  if (pOld == NULL) return SQLITE_OK;
  zName = pOld->zIdent ? pOld->zIdent : "?";
  /* Datomic refuses these: the stored encoding of every value depends on
  ** them (value_type_tag, fulltext rowids). */
  if (a == ENTID_DB_VALUETYPE && pOp->eOp == TXOP_RETRACT) {
    /* e.g. [:db/retractEntity :p/name]: datoms still use the attribute */
    return txErr(p, pOp->line, pOp->col, "cannot retract the definition of attribute %s", zName);
  }
  if (a == ENTID_DB_VALUETYPE) {
    return txErr(p, pOp->line, pOp->col, "cannot change the value type of attribute %s", zName);
  }
  if (a == ENTID_DB_FULLTEXT) {
    return txErr(p, pOp->line, pOp->col, "cannot change :db/fulltext of attribute %s", zName);
  }
  if (a == ENTID_DB_CARDINALITY && pOp->eOp == TXOP_RETRACT) {
    return txErr(p, pOp->line, pOp->col,
                 "cannot retract :db/cardinality of attribute %s; assert the new cardinality instead",
                 zName);
  }
  /* :db/cardinality, :db/unique, :db/index, :db/isComponent and
  ** :db/noHistory may change; txSchemaFinish checks the data allows it. */
  return SQLITE_OK;
}
