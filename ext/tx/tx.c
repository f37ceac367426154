/*
** tx.c — txTransact: the transactor's driver, its cached statements and the
** value helpers the other tx_*.c stages share.
**
** HOW IT WORKS
** The input is read whole (a read error writes nothing), then inside one
** storeWriteBegin/storeWriteEnd pair: known_parts gives this transaction's
** id (the :db.part/tx mark) -> txExpand (forms to ops) -> txLookupResolve
** (every lookup ref, in bulk) -> txResolve (tempids
** to entids, against the store as it was before the transaction, as Datomic
** does) -> txResolveDerived (retractEntity, retract-attribute, cas) ->
** txSchemaPrepare -> txWrite (checks and writes) -> txSchemaFinish (mirrors,
** indexes, new snapshot) -> partition marks. Any error rolls back, so the
** store is left byte-identical.
**
** Statements are prepared once per writer connection (SQLITE_PREPARE_
** PERSISTENT) and kept in pConn->pTxCache, so a small transaction costs a
** handful of indexed statement steps plus the commit.
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include "tx_int.h"

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
  "SELECT part, start, \"end\", idx FROM known_parts",
  /* TXS_SET_PART */
  "UPDATE known_parts SET idx = ?2 WHERE part = ?1",
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
  /* TXS_LOG_OLD: the implicit retractions of a cardinality-one replacement */
  "INSERT INTO timelined_transactions (e, a, v, tx, added, value_type_tag, timeline)"
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
};

/* The multi-row INSERTs: TX_BATCH rows of anonymous parameters. */
static char *txBatchSql(int eStmt) {
  sqlite3_str *pSql = sqlite3_str_new(NULL);
  int i;
  if (eStmt == TXS_INSERT_BATCH) {
    sqlite3_str_appendall(pSql, "INSERT OR ROLLBACK INTO datoms (e, a, v, tx, value_type_tag, index_avet,"
                                " index_vaet, index_fulltext, unique_value) VALUES ");
  } else {
    sqlite3_str_appendall(pSql, "INSERT OR ROLLBACK INTO timelined_transactions (e, a, v, tx, added,"
                                " value_type_tag, timeline) VALUES ");
  }
  for (i = 0; i < TX_BATCH; i++) {
    if (i) sqlite3_str_appendchar(pSql, 1, ',');
    sqlite3_str_appendall(pSql, eStmt == TXS_INSERT_BATCH ? "(?,?,?,?,?,?,?,?,?)" : "(?,?,?,?,?,?,0)");
  }
  return sqlite3_str_finish(pSql);
}

/* The writer connection's page cache for large transactions, bytes;
** MENTAT_CACHE_SIZE overrides. Larger is not better: bench s full load (261
** txs of 500 issues), 64 MiB 40.8-47.1 s against 256 MiB 56.7-62.6 s in
** interleaved runs. */
#define TX_WRITER_CACHE_BYTES (64LL * 1024 * 1024)
/* ... and for transactions of at most TX_SMALL_OPS operations, whose dirty
** pages (about a dozen per datom) fit in it. See txFitCache for why small
** transactions must not run with the large cache. */
#define TX_SMALL_CACHE_BYTES (8LL * 1024 * 1024)
#define TX_SMALL_OPS 128
/* Small transactions in a row before a large cache is shrunk. */
#define TX_SMALL_RUN 16

static sqlite3_int64 gnTxCacheBytes = TX_WRITER_CACHE_BYTES;
static pthread_once_t gTxCacheOnce = PTHREAD_ONCE_INIT;

static void txReadCacheEnv(void) {
  gnTxCacheBytes = storeEnvInt("MENTAT_CACHE_SIZE", TX_WRITER_CACHE_BYTES);
}

typedef struct TxCache {
  sqlite3_stmt *aStmt[TXS_COUNT];
  sqlite3_int64 nCacheBytes;   /* the writer's page cache as last set; 0 unset */
  int nSmallRun;               /* small transactions since the last large one */
} TxCache;

static void txCacheFree(void *pArg) {
  TxCache *pCache = (TxCache *)pArg;
  int i;
  if (pCache == NULL) return;
  for (i = 0; i < TXS_COUNT; i++) sqlite3_finalize(pCache->aStmt[i]);
  sqlite3_free(pCache);
}

/* The cached statement eStmt on the writer connection, reset and with
** bindings cleared. */
int txStmt(Tx *p, int eStmt, sqlite3_stmt **ppStmt) {
  TxCache *pCache = (TxCache *)p->pConn->pTxCache;
  int rc;
  if (pCache == NULL) {
    pCache = sqlite3_malloc64(sizeof(*pCache));
    if (pCache == NULL) return SQLITE_NOMEM;
    memset(pCache, 0, sizeof(*pCache));
    p->pConn->pTxCache = pCache;
    p->pConn->xTxCacheFree = txCacheFree;
  }
  if (pCache->aStmt[eStmt] == NULL) {
    char *zBatch = NULL;
    if (azTxSql[eStmt] == NULL) {
      zBatch = eStmt == TXS_LOOKUP_BATCH ? txLookupBatchSql() : txBatchSql(eStmt);
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

/* Sizes the writer's page cache for this transaction, before its writes.
** A bulk transaction wants the large cache: it holds the hot pages of every
** index the transaction inserts into (values land at random places in AVET,
** VAET and the value indexes); at SQLite's default 2 MiB they spill to the
** WAL and are read back within the transaction (bench s, 40 load
** transactions: 2.85 -> 2.09 s CPU). A small one must not keep it: when a
** B-tree split sorts its new pages, SQLite 3.40 parks a page under the
** pending-byte page number (balance_nonroot), and the commit's cache
** truncation then visits every cached page (pcache1TruncateUnsafe). With
** 64 MiB of cached pages that walk was 11-19% of a one-datom transaction's
** CPU (perf, bench s); with 8 MiB, 2-3%, and transact_one at NORMAL went
** from 930-1,020 to 1,230-1,440 tx/s (3 interleaved runs). The PRAGMA runs
** only when the size changes. Shrinking drops clean pages, which a later bulk
** transaction reads again from the OS cache, so a large cache is shrunk only
** after TX_SMALL_RUN small transactions in a row: a mix of large and small
** ones keeps it. Errors are ignored: the size is only a hint. */
static void txFitCache(Tx *p) {
  TxCache *pCache = (TxCache *)p->pConn->pTxCache;
  sqlite3_int64 nBytes;
  char zSql[64];
  if (pCache == NULL) return;   /* txLoadParts has run a cached statement */
  pthread_once(&gTxCacheOnce, txReadCacheEnv);
  nBytes = gnTxCacheBytes;
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

/* Appends a zeroed op. The pointer is valid until the next txNewOp. */
int txNewOp(Tx *p, TxOp **ppOp) {
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
  ** bindings), so SQLite need not copy them (valueBind does). */
  if ((pOp->v.type == VT_STRING || pOp->v.type == VT_KEYWORD) && pOp->v.z) {
    return sqlite3_bind_text64(pStmt, i, pOp->v.z, (sqlite3_uint64)pOp->v.n, SQLITE_STATIC, SQLITE_UTF8);
  }
  if (pOp->v.type == VT_BYTES && pOp->v.z) {
    return sqlite3_bind_blob64(pStmt, i, pOp->v.z, (sqlite3_uint64)pOp->v.n, SQLITE_STATIC);
  }
  return valueBind(pStmt, i, &pOp->v);
}

/* Total order on values of one type (for sorting ops and comparing cas). */
int txValueCmp(const TypedValue *a, const TypedValue *b) {
  int n, c;
  if (a->type != b->type) return a->type < b->type ? -1 : 1;
  switch (a->type) {
    case VT_DOUBLE:
      return a->d < b->d ? -1 : (a->d > b->d ? 1 : 0);
    case VT_STRING: case VT_KEYWORD: case VT_BYTES:
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
    case VT_STRING: case VT_KEYWORD: case VT_BYTES:
      z = pAttr->type == VT_BYTES ? sqlite3_column_blob(pStmt, iCol)
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

/* Moves every partition mark past the largest id in use in its partition.
** The marks are only trusted after this writer connection checked them:
** a store restored from a copy, or known_parts edited by another tool,
** can be behind its data, and ids would be given out twice (Datomic never
** reuses an entity or transaction id). Run when the connection opened and
** after every commit by another connection, not per transaction. */
static int txCheckMarks(Tx *p) {
  int i, rc;
  for (i = 0; i < p->nPart; i++) {
    TxPart *pPart = &p->aPart[i];
    sqlite3_stmt *pStmt = NULL;
    sqlite3_int64 iMax = -1;
    rc = txStmt(p, TXS_PART_MAX, &pStmt);
    if (rc) return rc;
    sqlite3_bind_int64(pStmt, 1, pPart->iStart);
    sqlite3_bind_int64(pStmt, 2, pPart->iEnd);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) iMax = sqlite3_column_int64(pStmt, 0);
    sqlite3_reset(pStmt);
    if (rc != SQLITE_ROW) return txSqlErr(p, "cannot check the partition marks: ");
    if (iMax >= pPart->iIdx && iMax < INT64_MAX) {
      /* iEnd + 1 reads as full where ids are given out. */
      pPart->iIdx = iMax + 1;
      pPart->iIdx0 = pPart->iIdx;
      pPart->bDirty = 1;
    }
  }
  return SQLITE_OK;
}

/* Reads known_parts and takes this transaction's id from :db.part/tx. */
static int txLoadParts(Tx *p) {
  sqlite3_stmt *pStmt = NULL;
  int rc = txStmt(p, TXS_PARTS, &pStmt);
  if (rc) return rc;
  p->nPart = 0;
  p->iPartTx = p->iPartUser = p->iPartDb = -1;
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    TxPart *pPart;
    const char *zName = (const char *)sqlite3_column_text(pStmt, 0);
    if (p->nPart == TX_MAX_PARTS || zName == NULL) continue;
    pPart = &p->aPart[p->nPart];
    memset(pPart, 0, sizeof(*pPart));
    sqlite3_snprintf(sizeof(pPart->zName), pPart->zName, "%s", zName);
    pPart->ePart = schemaEntid(p->pSchema, zName, (int)strlen(zName));
    pPart->iStart = sqlite3_column_int64(pStmt, 1);
    pPart->iEnd = sqlite3_column_int64(pStmt, 2);
    pPart->iIdx = sqlite3_column_type(pStmt, 3) == SQLITE_NULL
                  ? pPart->iStart : sqlite3_column_int64(pStmt, 3);
    pPart->iIdx0 = pPart->iIdx;
    if (strcmp(zName, ":db.part/tx") == 0) p->iPartTx = p->nPart;
    if (strcmp(zName, ":db.part/user") == 0) p->iPartUser = p->nPart;
    if (strcmp(zName, ":db.part/db") == 0) p->iPartDb = p->nPart;
    p->nPart++;
  }
  sqlite3_reset(pStmt);
  if (rc != SQLITE_DONE) return txSqlErr(p, "cannot read known_parts: ");
  if (p->iPartTx < 0 || p->iPartUser < 0 || p->iPartDb < 0) {
    return txErr(p, 0, 0, "the store's known_parts table lacks a core partition");
  }
  if (p->pConn->bMarksUnchecked) {
    rc = txCheckMarks(p);
    if (rc) return rc;
  }
  {
    TxPart *pTx = &p->aPart[p->iPartTx];
    if (pTx->iIdx > pTx->iEnd) return txErr(p, 0, 0, "partition :db.part/tx is full");
    p->iTx = pTx->iIdx++;
    pTx->bDirty = 1;
  }
  return SQLITE_OK;
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

/* Persists the marks of every partition that moved. */
static int txSaveParts(Tx *p) {
  int i, rc;
  for (i = 0; i < p->nPart; i++) {
    sqlite3_stmt *pStmt = NULL;
    if (!p->aPart[i].bDirty) continue;
    rc = txStmt(p, TXS_SET_PART, &pStmt);
    if (rc) return rc;
    sqlite3_bind_text(pStmt, 1, p->aPart[i].zName, -1, SQLITE_STATIC);
    sqlite3_bind_int64(pStmt, 2, p->aPart[i].iIdx);
    rc = sqlite3_step(pStmt);
    sqlite3_reset(pStmt);
    if (rc != SQLITE_DONE) {
      return txSqlErr(p, "cannot update known_parts: ");
    }
  }
  return SQLITE_OK;
}

/* Wall-clock time in µs since the Unix epoch. */
static sqlite3_int64 txNowUs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (sqlite3_int64)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Appends the JSON report. Keyed tempids are reported once each. */
static void txReport(Tx *p, sqlite3_str *pOut) {
  char zInst[48];
  int i, bFirst = 1;
  ednFormatInstant(p->iInstant, zInst);
  sqlite3_str_appendf(pOut, "{\"tx_id\":%lld,\"tx_instant\":\"%s\",\"tempids\":{", p->iTx, zInst);
  for (i = 0; i < p->nTemp; i++) {
    TxTemp *pT = &p->aTemp[i];
    if (pT->zKey == NULL) continue;
    if (!bFirst) sqlite3_str_appendchar(pOut, 1, ',');
    bFirst = 0;
    ednJsonString(pOut, pT->zKey, pT->nKey);
    sqlite3_str_appendf(pOut, ":%lld", p->aTemp[txTempRoot(p, i)].e);
  }
  sqlite3_str_appendall(pOut, "}}");
}

int txTransact(Store *pStore, const char *zEdn, int nEdn,
               sqlite3_str *pReport, char **pzErr) {
  EdnArena arena;
  EdnError readErr;
  EdnValue *pRoot = NULL;
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  Schema *pNew = NULL;
  Tx tx;
  int rc, rc2, bBegun = 0;

  ednArenaInit(&arena);
  memset(&tx, 0, sizeof(tx));
  tx.pzErr = pzErr;
  tx.pArena = &arena;

  memset(&readErr, 0, sizeof(readErr));
  rc = ednReadOne(&arena, zEdn, nEdn, &pRoot, &readErr);
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_ERROR) {
      sqlite3_free(*pzErr);
      *pzErr = sqlite3_mprintf("line %d col %d: %s", readErr.line, readErr.col, readErr.zMsg);
      if (*pzErr == NULL) rc = SQLITE_NOMEM;
    }
    goto cleanup;
  }
  if (pRoot->type != EDN_VECTOR) {
    rc = txErr(&tx, pRoot->line, pRoot->col,
               "transaction data must be a vector of forms, e.g. [[:db/add ...] {...}]");
    goto cleanup;
  }

  rc = storeWriteBegin(pStore, &pConn, &pSchema, pzErr);
  if (rc != SQLITE_OK) goto cleanup;
  bBegun = 1;
  tx.pConn = pConn;
  tx.db = pConn->db;
  tx.pSchema = pSchema;
  tx.pRoot = pRoot;

  rc = txLoadParts(&tx);
  if (rc == SQLITE_OK) rc = txExpand(&tx, pRoot);
  if (rc == SQLITE_OK) rc = txLookupResolve(&tx);
  if (rc == SQLITE_OK) rc = txResolve(&tx);
  if (rc == SQLITE_OK) rc = txResolveDerived(&tx);
  if (rc == SQLITE_OK) rc = txSchemaPrepare(&tx);
  if (rc == SQLITE_OK) {
    tx.iInstant = txNowUs();
    txFitCache(&tx);
    rc = txWrite(&tx);
  }
  if (rc == SQLITE_OK && tx.bSchema) rc = txSchemaFinish(&tx, &pNew);
  if (rc == SQLITE_OK) rc = txSaveParts(&tx);
  if (rc == SQLITE_OK && sqlite3_get_autocommit(tx.db)) {
    /* SQLite ends a transaction by itself after some errors (e.g. out of
    ** memory); every step is checked, so this is a last guard against
    ** committing half a transaction. */
    rc = txErr(&tx, 0, 0, "the store's write transaction ended unexpectedly; nothing was written");
  }

cleanup:
  if (bBegun) {
    char *zEndErr = NULL;
    rc2 = storeWriteEnd(pStore, pConn, rc == SQLITE_OK, rc == SQLITE_OK ? pNew : NULL, &zEndErr);
    if (rc == SQLITE_OK && rc2 != SQLITE_OK) {
      rc = rc2;
      sqlite3_free(*pzErr);
      *pzErr = zEndErr;
      zEndErr = NULL;
    }
    sqlite3_free(zEndErr);
  }
  if (rc == SQLITE_OK) {
    /* Committed: the marks written match the data from here on. */
    pConn->bMarksUnchecked = 0;
    txReport(&tx, pReport);
  }
  if (rc == SQLITE_NOMEM && *pzErr == NULL) *pzErr = sqlite3_mprintf("out of memory");
  schemaUnref(pNew);
  schemaUnref(pSchema);
  sqlite3_free(tx.aOp);
  sqlite3_free(tx.aTemp);
  sqlite3_free(tx.aHash);
  sqlite3_free(tx.aLook);
  sqlite3_free(tx.aLookHash);
  ednArenaReset(&arena);
  return rc;
}
