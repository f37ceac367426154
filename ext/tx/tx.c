/*
** tx.c — txTransact: the transactor's driver. It reads the input, runs the
** stages in order inside one write, keeps the partition marks and builds the
** report; what the stages share is in tx_context.c, below it.
**
** HOW IT WORKS
** The input is read whole (a read error writes nothing), then inside one
** storeWriteBegin/storeWriteEnd pair: known_parts gives this transaction's
** id (the :db.part/tx mark) -> txTupleInstall (the tuple vocabulary, when
** first named) -> txExpand (forms to ops) -> txLookupResolve (every lookup
** ref, in bulk) -> txTupleUpsertOps (identity composites of new entities)
** -> txResolve (tempids to entids, against the store as it was before the
** transaction, as Datomic does) -> txResolveDerived (retractEntity,
** retract-attribute, cas) -> txTupleDerive (composite tuples) ->
** txSchemaPrepare -> the report (before any write) -> txWrite (checks and
** writes) -> txSchemaFinish (mirrors, indexes, new snapshot) -> partition
** marks. Any error rolls back, so the store is left byte-identical. The
** write begins lazily (storeWriteBeginLazy): on a host store its
** savepoint is opened before the first write, or not at all when no step
** after it can fail but by SQLite ending the host's transaction
** (storeWriteUndoPoint, called by txTupleInstall and txWrite).
**
** Statements are prepared once per writer connection (tx_context.c), so a
** small transaction costs a handful of indexed statement steps plus the
** commit.
*/
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "config.h"
#include "tx_context.h"

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

/* A known_parts row's column that is not an INTEGER (aBad of txLoadParts). */
#define TX_BAD_START 1
#define TX_BAD_END 2
#define TX_BAD_IDX 3

/* A corrupt known_parts: SQLITE_CORRUPT with "store is corrupt: <what>". */
static int txPartsCorrupt(Tx *p, const char *zFmt, ...) {
  va_list ap;
  char *zWhat;
  int rc;
  va_start(ap, zFmt);
  zWhat = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  if (zWhat == NULL) return SQLITE_NOMEM;
  rc = txErr(p, 0, 0, "store is corrupt: known_parts %s", zWhat);
  sqlite3_free(zWhat);
  return rc == SQLITE_ERROR ? SQLITE_CORRUPT : rc;
}

/* Checks the partitions read from known_parts before any id is given out
** from them (another tool may have edited the table, or the file be
** damaged): every bound and mark an integer (aBad: which is not, per row),
** start <= end, start <= idx <= end + 1 (end + 1: every id given out, the
** partition full), and no two partitions overlapping, so an id belongs to
** one partition and is given out once. Trusting such a row either reports
** a good partition as full or gives out ids of another partition. Rows are
** named in the order read (part order); the first fault is reported. */
static int txCheckParts(Tx *p, const unsigned char *aBad) {
  static const char *azCol[] = {"", "start", "end", "idx"};
  int i, j;
  for (i = 0; i < p->nPart; i++) {
    const TxPart *pA = &p->aPart[i];
    if (aBad[i]) {
      return txPartsCorrupt(p, "row %s has a%s %s that is not an integer", pA->zName,
                            aBad[i] == TX_BAD_IDX ? "n" : "", azCol[aBad[i]]);
    }
    if (pA->iStart > pA->iEnd) {
      return txPartsCorrupt(p, "row %s has start %lld > end %lld", pA->zName, pA->iStart, pA->iEnd);
    }
    if (pA->iIdx < pA->iStart) {
      return txPartsCorrupt(p, "row %s has idx %lld < start %lld", pA->zName, pA->iIdx, pA->iStart);
    }
    if (pA->iEnd < INT64_MAX && pA->iIdx > pA->iEnd + 1) {
      return txPartsCorrupt(p, "row %s has idx %lld > end + 1 (%lld)", pA->zName, pA->iIdx,
                            pA->iEnd + 1);
    }
  }
  for (i = 0; i < p->nPart; i++) {
    for (j = i + 1; j < p->nPart; j++) {
      const TxPart *pA = &p->aPart[i], *pB = &p->aPart[j];
      if (pA->iStart <= pB->iEnd && pB->iStart <= pA->iEnd) {
        return txPartsCorrupt(p, "rows %s (%lld..%lld) and %s (%lld..%lld) overlap", pA->zName,
                              pA->iStart, pA->iEnd, pB->zName, pB->iStart, pB->iEnd);
      }
    }
  }
  return SQLITE_OK;
}

/* Reads known_parts and takes this transaction's id from :db.part/tx. */
static int txLoadParts(Tx *p) {
  sqlite3_stmt *pStmt = NULL;
  unsigned char aBad[TX_MAX_PARTS];
  int rc;
  if (txLastParts(p)) goto take;
  rc = txStmt(p, TXS_PARTS, &pStmt);
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
    /* the types first: a conversion by sqlite3_column_int64 leaves them
    ** undefined. NULL idx: a version-1 store's row before its upgrade. */
    aBad[p->nPart] = sqlite3_column_type(pStmt, 1) != SQLITE_INTEGER ? TX_BAD_START
                     : sqlite3_column_type(pStmt, 2) != SQLITE_INTEGER ? TX_BAD_END
                     : sqlite3_column_type(pStmt, 3) != SQLITE_INTEGER
                       && sqlite3_column_type(pStmt, 3) != SQLITE_NULL ? TX_BAD_IDX : 0;
    pPart->iStart = sqlite3_column_int64(pStmt, 1);
    pPart->iEnd = sqlite3_column_int64(pStmt, 2);
    pPart->iIdx = sqlite3_column_type(pStmt, 3) == SQLITE_NULL
                  ? pPart->iStart : sqlite3_column_int64(pStmt, 3);
    pPart->iIdx0 = pPart->iIdx;
    pPart->iRowid = sqlite3_column_int64(pStmt, 4);
    if (strcmp(zName, ":db.part/tx") == 0) p->iPartTx = p->nPart;
    if (strcmp(zName, ":db.part/user") == 0) p->iPartUser = p->nPart;
    if (strcmp(zName, ":db.part/db") == 0) p->iPartDb = p->nPart;
    p->nPart++;
  }
  sqlite3_reset(pStmt);
  if (rc != SQLITE_DONE) return txSqlErr(p, "cannot read known_parts: ");
  rc = txCheckParts(p, aBad);
  if (rc) return rc;
  if (p->iPartTx < 0 || p->iPartUser < 0 || p->iPartDb < 0) {
    return txErr(p, 0, 0, "the store's known_parts table lacks a core partition");
  }
  if (p->pConn->bMarksUnchecked) {
    rc = txCheckMarks(p);
    if (rc) return rc;
  }
take:
  {
    TxPart *pTx = &p->aPart[p->iPartTx];
    if (!txPartRoom(pTx, 1)) return txErr(p, 0, 0, "partition :db.part/tx is full");
    p->iTx = pTx->iIdx++;
    pTx->bDirty = 1;
  }
  return SQLITE_OK;
}

/* Persists the marks of every partition that moved. */
static int txSaveParts(Tx *p) {
  int i, rc;
  for (i = 0; i < p->nPart; i++) {
    sqlite3_stmt *pStmt = NULL;
    if (!p->aPart[i].bDirty) continue;
    rc = txStmt(p, TXS_SET_PART, &pStmt);
    if (rc) return rc;
    sqlite3_bind_int64(pStmt, 1, p->aPart[i].iRowid);
    sqlite3_bind_int64(pStmt, 2, p->aPart[i].iIdx);
    rc = sqlite3_step(pStmt);
    sqlite3_reset(pStmt);
    if (rc != SQLITE_DONE) {
      return txSqlErr(p, "cannot update known_parts: ");
    }
  }
  p->pConn->iTxMark = p->aPart[p->iPartTx].iIdx;
  return SQLITE_OK;
}

/* Appends the JSON report. Keyed tempids are reported once each. */
static void txReport(Tx *p, sqlite3_str *pOut) {
  char zInst[48];
  int i, bFirst = 1;
  char zId[24];
  int k = (int)sizeof zId;
  sqlite3_uint64 u = (sqlite3_uint64)p->iTx;   /* a tx id is positive */
  ednFormatInstant(p->iInstant, zInst);
  /* by hand: sqlite3_str_appendf's format loop was ~1% of a one-datom call */
  do { zId[--k] = (char)('0' + u % 10); u /= 10; } while (u && k > 0);
  sqlite3_str_appendall(pOut, "{\"tx_id\":");
  sqlite3_str_append(pOut, zId + k, (int)sizeof zId - k);
  sqlite3_str_appendall(pOut, ",\"tx_instant\":\"");
  sqlite3_str_appendall(pOut, zInst);
  sqlite3_str_appendall(pOut, "\",\"tempids\":{");
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

/* Reads zEdn[0..nEdn) into *ppRoot (one EDN vector of forms). */
static int txRead(Tx *p, const char *zEdn, int nEdn, EdnValue **ppRoot) {
  EdnError readErr;
  int rc;
  memset(&readErr, 0, sizeof(readErr));
  rc = ednReadOne(p->pArena, zEdn, nEdn, ppRoot, &readErr);
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_ERROR) {
      sqlite3_free(*p->pzErr);
      *p->pzErr = sqlite3_mprintf("line %d col %d: %s", readErr.line, readErr.col, readErr.zMsg);
      if (*p->pzErr == NULL) rc = SQLITE_NOMEM;
    }
    return rc;
  }
  if ((*ppRoot)->type != EDN_VECTOR) {
    return txErr(p, (*ppRoot)->line, (*ppRoot)->col,
                 "transaction data must be a vector of forms, e.g. [[:db/add ...] {...}]");
  }
  return SQLITE_OK;
}

/* The stages of one transaction of the forms pRoot on pConn, inside a
** write the caller opened (storeWriteBegin) and ends: everything is
** written, nothing committed; the report is appended to pReport and a
** changed schema's new snapshot left in *ppNew (one reference). */
static int txStages(Tx *p, StoreConn *pConn, Schema *pSchema, EdnValue *pRoot,
                    sqlite3_str *pReport, Schema **ppNew) {
  int rc;
  p->pConn = pConn;
  p->db = pConn->db;
  p->pSchema = pSchema;
  p->pRoot = pRoot;
  rc = txLoadParts(p);
  if (rc == SQLITE_OK) rc = txTupleInstall(p);
  if (rc == SQLITE_OK) rc = txExpand(p, pRoot);
  if (rc == SQLITE_OK) rc = txLookupResolve(p);
  if (rc == SQLITE_OK) rc = txTupleUpsertOps(p);
  if (rc == SQLITE_OK) rc = txResolve(p);
  if (rc == SQLITE_OK) rc = txResolveDerived(p);
  if (rc == SQLITE_OK) rc = txTupleDerive(p);
  if (rc == SQLITE_OK) rc = txSchemaPrepare(p);
  if (rc == SQLITE_OK) {
    p->iInstant = configWallUs();
    txCacheFit(p);
    rc = txWriteInstant(p);
  }
  if (rc == SQLITE_OK) {
    /* The report is built before the first write (what it says is known
    ** by now): a report that runs out of memory then fails the
    ** transaction before anything is written, so an error from edn_t
    ** always means nothing was stored, and a write with no undo of its own
    ** allocates nothing after its first write (storeWriteUndoPoint). */
    txReport(p, pReport);
    rc = sqlite3_str_errcode(pReport);
  }
  if (rc == SQLITE_OK) rc = txWrite(p);
  if (rc == SQLITE_OK && p->bSchema) rc = txSchemaFinish(p, ppNew);
  if (rc == SQLITE_OK) rc = txSaveParts(p);
  if (rc == SQLITE_OK && !storeWriteAlive(p->pConn)) {
    /* SQLite ends a transaction by itself after some errors (e.g. out of
    ** memory); every step is checked, so this is a last guard against
    ** committing half a transaction. */
    rc = txErr(p, 0, 0, "the store's write transaction ended unexpectedly; nothing was written");
  }
  if (rc == SQLITE_OK) txLastSave(p);
  return rc;
}

/* Frees what a Tx holds besides its arena. */
static void txFree(Tx *p) {
  schemaUnref(p->pTupleSchema);
  sqlite3_free(p->aOp);
  sqlite3_free(p->aTemp);
  sqlite3_free(p->aHash);
  sqlite3_free(p->aLook);
  sqlite3_free(p->aLookHash);
}

int txTransact(Store *pStore, const char *zEdn, int nEdn,
               sqlite3_str *pReport, char **pzErr) {
  EdnArena arena;
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

  /* The whole input first: a read error takes no lock. */
  rc = txRead(&tx, zEdn, nEdn, &pRoot);
  if (rc != SQLITE_OK) goto cleanup;
  /* Its savepoint, on a host store, only when needed, before the first
  ** write (storeWriteUndoPoint: txTupleInstall, txWrite). */
  rc = storeWriteBeginLazy(pStore, &pConn, &pSchema, pzErr);
  if (rc != SQLITE_OK) goto cleanup;
  bBegun = 1;
  rc = txStages(&tx, pConn, pSchema, pRoot, pReport, &pNew);

cleanup:
  if (bBegun) {
    char *zEndErr = NULL;
    /* The marks this transaction wrote match the data from here on (its
    ** COMMIT may be shared and finish on another thread, after which the
    ** connection is not this call's; a COMMIT that fails sets the flag
    ** again). */
    if (rc == SQLITE_OK) pConn->bMarksUnchecked = 0;
    rc2 = storeWriteEnd(pStore, pConn, rc == SQLITE_OK, rc == SQLITE_OK ? pNew : NULL, &zEndErr);
    if (rc == SQLITE_OK && rc2 != SQLITE_OK) {
      rc = rc2;
      sqlite3_free(*pzErr);
      *pzErr = zEndErr;
      zEndErr = NULL;
    } else if (rc != SQLITE_OK && zEndErr && *pzErr) {
      /* what undoing the failed transaction did beyond it */
      char *zBoth = sqlite3_mprintf("%s; %s", *pzErr, zEndErr);
      if (zBoth) {
        sqlite3_free(*pzErr);
        *pzErr = zBoth;
      }
    }
    sqlite3_free(zEndErr);
  }
  if (rc == SQLITE_NOMEM && *pzErr == NULL) *pzErr = sqlite3_mprintf("out of memory");
  schemaUnref(pNew);
  schemaUnref(pSchema);
  txFree(&tx);
  ednArenaReset(&arena);
  return rc;
}

int txWith(StoreConn *pConn, Schema *pSchema, const char *zEdn, int nEdn,
           sqlite3_str *pReport, Schema **ppNew, char **pzErr) {
  EdnArena arena;
  EdnValue *pRoot = NULL;
  Tx tx;
  int rc;

  *ppNew = NULL;
  ednArenaInit(&arena);
  memset(&tx, 0, sizeof(tx));
  tx.pzErr = pzErr;
  tx.pArena = &arena;
  rc = txRead(&tx, zEdn, nEdn, &pRoot);
  if (rc == SQLITE_OK) rc = txStages(&tx, pConn, pSchema, pRoot, pReport, ppNew);
  if (rc != SQLITE_OK) {
    schemaUnref(*ppNew);
    *ppNew = NULL;
  }
  if (rc == SQLITE_NOMEM && *pzErr == NULL) *pzErr = sqlite3_mprintf("out of memory");
  txFree(&tx);
  ednArenaReset(&arena);
  return rc;
}
