/*
** tx_write.c — checks the resolved ops against each other and the store,
** then writes datoms and the log.
**
** HOW IT WORKS
** The live ADD/RETRACT ops are sorted by (e, a, v): a datom both asserted
** and retracted is an error, duplicates collapse (tx-data is a set), and two
** different values asserted for one cardinality-one [e a] are "conflicting
** datoms" (Datomic; peer fault B05). Then, in this order: explicit
** retractions (a retraction of an absent datom is a no-op and logs nothing,
** B07); assertions already in the store are dropped (they keep their old
** tx); cardinality-one assertions retract the old value (logged in this tx);
** and only then the new datoms are inserted, so a unique value may move
** between entities within one transaction. :db.unique/value conflicts are
** caught by the store's unique index and reported in the user's terms.
** :db/noHistory attributes keep no past values (Datomic): their assertions
** are logged like any, so the current value is in every database view
** (as-of, since, history), and a retraction, explicit or by replacement,
** deletes the datom's log rows instead of logging itself. Fulltext strings live in
** fulltext_values (via its de-duplicating view); datoms.v holds the rowid.
** Entities allocated by this transaction skip the existence and old-value
** probes (they cannot have datoms yet). New datoms and their log rows go in
** TX_BATCH rows per INSERT: per-statement start/halt (cursor per index)
** otherwise dominates bulk loads. Those multi-row INSERTs are OR FAIL:
** a multi-row statement that may abort needs a statement journal, which
** copies every page it touches to a temp file (25,000 pwrites per 5,000-datom
** transaction); with OR FAIL SQLite keeps none (only OR ABORT asks for one),
** and a failure leaves the rows before it for our own undo: the write's
** ROLLBACK, its group SAVEPOINT or a host store's. They should not fail on a
** constraint (duplicates and existing datoms are gone, no NULLs), but a host
** database may add constraints of its own on the tables (a unique index):
** OR ROLLBACK would then end the host's whole transaction, its earlier
** statements with it (test_host host_constraint_in_batch_insert). Datoms of
** :db/unique attributes, whose conflicts are the user's error to name, are
** inserted one per (single-row, journal-free) statement.
** A transaction whose checks are all made before its first write takes the
** rows path (txRowsFit, txWriteRows): the values its cardinality-one
** assertions replace are read with the checks, then every log row goes in
** multi-row statements, then the deletes, then every new datom, each
** statement of any row count (txStmtRows), so a one-datom edn_t runs three
** statements on datoms and the log where the per-row path ran six.
**
** Known cost: a fulltext text with no ASCII letter or digit has no FTS
** phrase to find it by, so its lookup (txFtsFind) scans fulltext_values.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "tx_context.h"

static int txCmpDatom(const void *pA, const void *pB) {
  const TxOp *a = *(const TxOp *const *)pA, *b = *(const TxOp *const *)pB;
  int c;
  if (a->e.e != b->e.e) return a->e.e < b->e.e ? -1 : 1;
  if (a->pAttr->e != b->pAttr->e) return a->pAttr->e < b->pAttr->e ? -1 : 1;
  c = txValueCmp(&a->v, &b->v);
  if (c) return c;
  if (a->eOp != b->eOp) return a->eOp < b->eOp ? -1 : 1;
  return a < b ? -1 : (a > b ? 1 : 0);
}

/* The order new datoms are inserted in: attribute, value, entity. The
** indexes keyed by value (AVET, VAET, idx_auto_avet_<a>, unique value) then
** take their new entries in key order, one sweep per attribute, instead of
** at random places; the entity-keyed ones (EAVT, AEVT) barely mind, as new
** entities all sort at their end. */
static int txCmpAVE(const void *pA, const void *pB) {
  const TxOp *a = *(const TxOp *const *)pA, *b = *(const TxOp *const *)pB;
  int c;
  if (a->pAttr->e != b->pAttr->e) return a->pAttr->e < b->pAttr->e ? -1 : 1;
  if (a->bFts != b->bFts) return a->bFts < b->bFts ? -1 : 1;
  if (a->bFts) {
    if (a->iFts != b->iFts) return a->iFts < b->iFts ? -1 : 1;
  } else {
    c = txValueCmp(&a->v, &b->v);
    if (c) return c;
  }
  if (a->e.e != b->e.e) return a->e.e < b->e.e ? -1 : 1;
  return 0;
}

/* "[e :a v]" for messages, appended to pOut. */
static void txDatomText(Tx *p, sqlite3_str *pOut, const TxOp *pOp) {
  sqlite3_str_appendf(pOut, "[%lld %s ", pOp->e.e, pOp->pAttr->zIdent ? pOp->pAttr->zIdent : "?");
  txValuePrint(pOut, p->pSchema, &pOp->v);
  sqlite3_str_appendall(pOut, "]");
}

static int txErrDatoms(Tx *p, const TxOp *pA, const TxOp *pB, const char *zWhat) {
  sqlite3_str *pMsg = sqlite3_str_new(p->db);
  char *z;
  int rc;
  sqlite3_str_appendall(pMsg, zWhat);
  txDatomText(p, pMsg, pA);
  if (pB) {
    sqlite3_str_appendall(pMsg, " and ");
    txDatomText(p, pMsg, pB);
  }
  z = sqlite3_str_finish(pMsg);
  if (z == NULL) return SQLITE_NOMEM;
  rc = txErr(p, pB ? pB->line : pA->line, pB ? pB->col : pA->col, "%s", z);
  sqlite3_free(z);
  return rc;
}

/* Within-transaction checks over the sorted ops. */
static int txCheckSet(Tx *p, TxOp **ap, int n) {
  int i = 0;
  while (i < n) {
    int j = i + 1;
    /* group of the same datom */
    while (j < n && ap[j]->e.e == ap[i]->e.e && ap[j]->pAttr == ap[i]->pAttr
           && txValueCmp(&ap[j]->v, &ap[i]->v) == 0) {
      if (ap[j]->eOp != ap[i]->eOp) {
        return txErrDatoms(p, ap[j]->eOp == TXOP_ADD ? ap[j] : ap[i], NULL,
                           "a datom cannot be both asserted and retracted in one transaction: ");
      }
      ap[j]->bDrop = 1;
      j++;
    }
    i = j;
  }
  /* cardinality one: at most one asserted value per [e a] */
  for (i = 0; i < n; i++) {
    int j;
    if (ap[i]->bDrop || ap[i]->eOp != TXOP_ADD || ap[i]->pAttr->bMany) continue;
    for (j = i + 1; j < n && ap[j]->e.e == ap[i]->e.e && ap[j]->pAttr == ap[i]->pAttr; j++) {
      if (!ap[j]->bDrop && ap[j]->eOp == TXOP_ADD) {
        return txErrDatoms(p, ap[i], ap[j], "conflicting datoms for a cardinality-one attribute: ");
      }
    }
    i = j - 1;
  }
  return SQLITE_OK;
}

/* For fulltext string values: the rowid of the text, inserting it when
** bCreate. *pbFound is 0 when the text is absent and not created. */
static int txFts(Tx *p, TxOp *pOp, int bCreate, int *pbFound) {
  int rc;
  *pbFound = 1;
  if (pOp->bFts) return SQLITE_OK;
  rc = txFtsFind(p, pOp->v.z, pOp->v.n, bCreate, &pOp->iFts, pbFound);
  if (rc == SQLITE_OK && *pbFound) pOp->bFts = 1;
  return rc;
}

/* Binds one log row (6 parameters from iBase + 1). Only the value bind
** can fail (it copies text/blobs): its code is returned. */
static int txBindLog(Tx *p, sqlite3_stmt *pStmt, int iBase, const TxOp *pOp, int bAdded) {
  sqlite3_bind_int64(pStmt, iBase + 1, pOp->e.e);
  sqlite3_bind_int64(pStmt, iBase + 2, pOp->pAttr->e);
  sqlite3_bind_int64(pStmt, iBase + 4, p->iTx);
  sqlite3_bind_int(pStmt, iBase + 5, bAdded);
  sqlite3_bind_int(pStmt, iBase + 6, vtTag(pOp->pAttr->type));
  return txValueBindStored(p, pStmt, iBase + 3, pOp);
}

/* Runs a cached statement binding (e, a, tag, v) as ?1..?4. */
static int txStepEAV(Tx *p, int eStmt, const TxOp *pOp, int *pbRow, int *pnChange) {
  sqlite3_stmt *pStmt = NULL;
  int rc = txStmt(p, eStmt, &pStmt);
  if (rc) return rc;
  sqlite3_bind_int64(pStmt, 1, pOp->e.e);
  sqlite3_bind_int64(pStmt, 2, pOp->pAttr->e);
  sqlite3_bind_int(pStmt, 3, vtTag(pOp->pAttr->type));
  rc = txValueBindStored(p, pStmt, 4, pOp);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(pStmt);
  if (pbRow) *pbRow = rc == SQLITE_ROW;
  if (pnChange) *pnChange = sqlite3_changes(p->db);
  sqlite3_reset(pStmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    return txSqlErr(p, "cannot write datoms: ");
  }
  return SQLITE_OK;
}

static int txLog(Tx *p, const TxOp *pOp, int bAdded) {
  sqlite3_stmt *pStmt = NULL;
  int rc;
  if (!bAdded && pOp->pAttr->bNoHistory) {
    /* A past value of a :db/noHistory attribute is not kept. */
    return txStepEAV(p, TXS_LOG_FORGET, pOp, NULL, NULL);
  }
  rc = txStmt(p, TXS_LOG, &pStmt);
  if (rc) return rc;
  rc = txBindLog(p, pStmt, 0, pOp, bAdded);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(pStmt);
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE ? SQLITE_OK : txSqlErr(p, "cannot write the log: ");
}

/* The reads and checks of a retraction (bChecked: txCheckFirst did them),
** then its delete and log row. */
static int txRetract(Tx *p, TxOp *pOp, int bChecked) {
  int rc, nChange = 0, bFound = 1;
  if (bChecked) goto write;
  if (pOp->pAttr->bFulltext && pOp->pAttr->type == VT_STRING) {
    rc = txFts(p, pOp, 0, &bFound);
    if (rc) return rc;
    if (!bFound) { pOp->bDrop = 1; return SQLITE_OK; }
  }
  rc = txStepEAV(p, TXS_EXISTS, pOp, &bFound, NULL);
  if (rc) return rc;
  if (!bFound) { pOp->bDrop = 1; return SQLITE_OK; }
  rc = txCheckOp(p, pOp);
  if (rc) return rc;
write:
  rc = txStepEAV(p, TXS_DELETE, pOp, NULL, &nChange);
  if (rc) return rc;
  return txLog(p, pOp, 0);
}

/* Decides whether an ADD is new (bChecked: txCheckFirst did); if so
** retracts a cardinality-one value. */
static int txPrepareAdd(Tx *p, TxOp *pOp, int bChecked) {
  sqlite3_stmt *pStmt = NULL;
  int rc, bFound = 0, bFresh = txIsFresh(p, pOp->e.e);
  if (bChecked) goto write;
  if (pOp->pAttr->bFulltext && pOp->pAttr->type == VT_STRING) {
    rc = txFts(p, pOp, 1, &bFound);
    if (rc) return rc;
  }
  if (!bFresh) {
    rc = txStepEAV(p, TXS_EXISTS, pOp, &bFound, NULL);
    if (rc) return rc;
    if (bFound) { pOp->bDrop = 1; return SQLITE_OK; }
  }
  rc = txCheckOp(p, pOp);
  if (rc) return rc;
  pOp->bNew = 1;
write:
  if (pOp->pAttr->bMany || bFresh) return SQLITE_OK;
  /* The old value's retraction is logged, or for :db/noHistory its log
  ** rows (and any older value's) go. */
  rc = txStmt(p, pOp->pAttr->bNoHistory ? TXS_LOG_FORGET_OLD : TXS_LOG_OLD, &pStmt);
  if (rc) return rc;
  sqlite3_bind_int64(pStmt, 1, pOp->e.e);
  sqlite3_bind_int64(pStmt, 2, pOp->pAttr->e);
  if (!pOp->pAttr->bNoHistory) sqlite3_bind_int64(pStmt, 3, p->iTx);
  rc = sqlite3_step(pStmt);
  sqlite3_reset(pStmt);
  if (rc != SQLITE_DONE) return txSqlErr(p, "cannot write the log: ");
  rc = txStmt(p, TXS_DELETE_OLD, &pStmt);
  if (rc) return rc;
  sqlite3_bind_int64(pStmt, 1, pOp->e.e);
  sqlite3_bind_int64(pStmt, 2, pOp->pAttr->e);
  rc = sqlite3_step(pStmt);
  sqlite3_reset(pStmt);
  if (rc != SQLITE_DONE) return txSqlErr(p, "cannot write datoms: ");
  return SQLITE_OK;
}

/* A unique-value conflict, in the user's terms. */
static int txUniqueConflict(Tx *p, const TxOp *pOp) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 eHolder = 0;
  sqlite3_str *pMsg;
  char *z;
  int rc = txStmt(p, TXS_LOOKUP_UNIQUE, &pStmt);
  if (rc) return rc;
  sqlite3_bind_int64(pStmt, 1, pOp->pAttr->e);
  sqlite3_bind_int(pStmt, 2, vtTag(pOp->pAttr->type));
  rc = txValueBindStored(p, pStmt, 3, pOp);
  if (rc != SQLITE_OK) return rc;
  if (sqlite3_step(pStmt) == SQLITE_ROW) eHolder = sqlite3_column_int64(pStmt, 0);
  sqlite3_reset(pStmt);
  pMsg = sqlite3_str_new(p->db);
  sqlite3_str_appendf(pMsg, "unique value conflict: %s ", pOp->pAttr->zIdent);
  txValuePrint(pMsg, p->pSchema, &pOp->v);
  sqlite3_str_appendf(pMsg, " is already held by entity %lld, cannot assert it for entity %lld",
                      eHolder, pOp->e.e);
  z = sqlite3_str_finish(pMsg);
  if (z == NULL) return SQLITE_NOMEM;
  rc = txErr(p, pOp->line, pOp->col, "%s", z);
  sqlite3_free(z);
  return rc;
}

/* Binds one datoms row (9 parameters from iBase + 1); the flag columns
** come from the attribute (format/mentat-v3.md). Returns the value bind's
** code (the only one that can fail). */
static int txBindDatom(Tx *p, sqlite3_stmt *pStmt, int iBase, const TxOp *pOp) {
  const Attr *pA = pOp->pAttr;
  sqlite3_bind_int64(pStmt, iBase + 1, pOp->e.e);
  sqlite3_bind_int64(pStmt, iBase + 2, pA->e);
  sqlite3_bind_int64(pStmt, iBase + 4, p->iTx);
  sqlite3_bind_int(pStmt, iBase + 5, vtTag(pA->type));
  sqlite3_bind_int(pStmt, iBase + 6, pA->bIndex || pA->eUnique != UNIQUE_NONE);
  sqlite3_bind_int(pStmt, iBase + 7, pA->type == VT_REF);
  sqlite3_bind_int(pStmt, iBase + 8, pA->bFulltext);
  sqlite3_bind_int(pStmt, iBase + 9, pA->eUnique != UNIQUE_NONE);
  return txValueBindStored(p, pStmt, iBase + 3, pOp);
}

static int txInsert(Tx *p, TxOp *pOp) {
  sqlite3_stmt *pStmt = NULL;
  const Attr *pA = pOp->pAttr;
  int rc = txStmt(p, TXS_INSERT, &pStmt);
  if (rc) return rc;
  rc = txBindDatom(p, pStmt, 0, pOp);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(pStmt);
  sqlite3_reset(pStmt);
  if (rc == SQLITE_CONSTRAINT && pA->eUnique != UNIQUE_NONE) return txUniqueConflict(p, pOp);
  if (rc != SQLITE_DONE) return txSqlErr(p, "cannot write datoms: ");
  storeWriteNoteDatoms(p->pConn->pStore, sqlite3_last_insert_rowid(p->db), 1);
  return txLog(p, pOp, 1);
}

/* Inserts TX_BATCH new datoms (no :db/unique attribute among them) and
** their log rows with the multi-row OR FAIL statements. */
static int txInsertBatch(Tx *p, TxOp **aBatch) {
  sqlite3_stmt *pStmt = NULL;
  int i, rc = txStmt(p, TXS_INSERT_BATCH, &pStmt);
  if (rc) return rc;
  for (i = 0; i < TX_BATCH; i++) {
    rc = txBindDatom(p, pStmt, i * 9, aBatch[i]);
    if (rc != SQLITE_OK) return rc;
  }
  rc = sqlite3_step(pStmt);
  sqlite3_reset(pStmt);
  if (rc != SQLITE_DONE) return txSqlErr(p, "cannot write datoms: ");
  storeWriteNoteDatoms(p->pConn->pStore, sqlite3_last_insert_rowid(p->db), TX_BATCH);
  rc = txStmt(p, TXS_LOG_BATCH, &pStmt);
  if (rc) return rc;
  for (i = 0; i < TX_BATCH; i++) {
    rc = txBindLog(p, pStmt, i * 6, aBatch[i], 1);
    if (rc != SQLITE_OK) return rc;
  }
  rc = sqlite3_step(pStmt);
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE ? SQLITE_OK : txSqlErr(p, "cannot write the log: ");
}

/* Refuses an explicit instant more than configTxInstantSkewMs() (60 s by
** default, read per transaction) ahead of p->iInstant (the clock when the
** transaction began). Datomic refuses an instant later than the
** transactor's clock; instants never go backwards, so one accepted far
** ahead would stamp every later transaction. The skew allows for writers
** on hosts whose clocks differ. */
static int txInstantAhead(Tx *p, const TxOp *pOp) {
  sqlite3_int64 nSkew = configTxInstantSkewMs();
  char zA[48], zSkew[32];
  if (nSkew > INT64_MAX / 1000 || pOp->v.i - p->iInstant <= nSkew * 1000) return SQLITE_OK;
  ednFormatInstant(pOp->v.i, zA);
  if (nSkew % 1000 == 0) sqlite3_snprintf(sizeof zSkew, zSkew, "%lld s", (long long)(nSkew / 1000));
  else sqlite3_snprintf(sizeof zSkew, zSkew, "%lld ms", (long long)nSkew);
  return txErr(p, pOp->line, pOp->col, ":db/txInstant %s is more than %s ahead of the clock", zA, zSkew);
}

/* The tx's :db/txInstant: an explicit one (on "datomic.tx") wins but may not
** precede the previous transaction's nor be ahead of the clock; otherwise
** now. */
int txWriteInstant(Tx *p) {
  const Attr *pAttr = schemaAttr(p->pSchema, ENTID_DB_TXINSTANT);
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 iPrev = 0;
  int i, rc, bPrev = 0;
  TxOp *pOp = NULL;
  if (pAttr == NULL) return txErr(p, 0, 0, "the store's schema lacks :db/txInstant");
  for (i = 0; i < p->nOp; i++) {
    if (p->aOp[i].eOp == TXOP_ADD && !p->aOp[i].bDrop && p->aOp[i].e.e == p->iTx
        && p->aOp[i].pAttr->e == ENTID_DB_TXINSTANT) {
      rc = txInstantAhead(p, &p->aOp[i]);
      if (rc) return rc;
      if (pOp == NULL) pOp = &p->aOp[i];
    }
  }
  if (txLastInstant(p, &iPrev)) {
    bPrev = 1;
  } else {
    rc = txStmt(p, TXS_LAST_INSTANT, &pStmt);
    if (rc) return rc;
    sqlite3_bind_int64(pStmt, 1, p->iTx - 1);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) {
      iPrev = sqlite3_column_int64(pStmt, 0);
      bPrev = 1;
    }
    sqlite3_reset(pStmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return txSqlErr(p, "cannot read the last :db/txInstant: ");
  }
  if (pOp) {
    if (bPrev && pOp->v.i < iPrev) {
      char zA[48], zB[48];
      ednFormatInstant(pOp->v.i, zA);
      ednFormatInstant(iPrev, zB);
      return txErr(p, pOp->line, pOp->col,
                   ":db/txInstant %s is earlier than the previous transaction's %s", zA, zB);
    }
    p->iInstant = pOp->v.i;
    return SQLITE_OK;
  }
  /* Keep instants monotonic even if the clock steps back. */
  if (bPrev && p->iInstant < iPrev) p->iInstant = iPrev;
  rc = txNewOp(p, &pOp);
  if (rc) return rc;
  pOp->eOp = TXOP_ADD;
  pOp->e.e = p->iTx;
  pOp->pAttr = pAttr;
  pOp->v.type = VT_INSTANT;
  pOp->v.i = p->iInstant;
  return SQLITE_OK;
}

/* Can every check of the ops be made before the first write? Not with a
** fulltext value (its text is stored as its datom is prepared) nor a new
** datom of a :db/unique attribute (a conflict is found by the unique
** index, at the insert). */
static int txCheckable(TxOp **ap, int n) {
  for (int i = 0; i < n; i++) {
    const Attr *pA = ap[i]->pAttr;
    if (pA->bFulltext || (ap[i]->eOp == TXOP_ADD && pA->eUnique != UNIQUE_NONE)) return 0;
  }
  return 1;
}

/* A value a cardinality-one assertion replaces, as stored (TXS_CARD_ONE):
** its retraction's log row is bound from it (text and blobs in the arena),
** its datom is deleted by rowid (TXS_DELETE_ROWID: the same rows as
** TXS_DELETE_OLD's [e a], without its search of EAVT). */
typedef struct TxOld {
  const TxOp *pOp;          /* the assertion */
  sqlite3_int64 iRowid;     /* the datom's */
  int tag;                  /* value_type_tag */
  int eClass;               /* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT or SQLITE_BLOB */
  sqlite3_int64 i;
  double d;
  const char *z;
  int n;
} TxOld;

/* One log row of the rows path: an op's (bAdded: its assertion) or a
** replaced value's retraction (pOld). */
typedef struct TxLogRow {
  const TxOp *pOp;
  const TxOld *pOld;
  int bAdded;
} TxLogRow;

/* What the rows path writes, all worked out before its first write. */
typedef struct TxRows {
  TxOld *aOld; int nOld, nOldAlloc;
  TxLogRow *aLog; int nLog;
  TxOp **aNew; int nNew;    /* the new datoms, in txCmpAVE order */
} TxRows;

/* The rows path (txWriteRows) writes each table with as few statements as
** it can: all log rows, then the deletes, then the new datoms, TX_BATCH
** rows per multi-row statement (one-datom transaction: one log statement
** of three rows, one delete, one insert of two datoms, where the per-row
** path ran six statements, each opening a cursor on every index of its
** table). It needs every replaced value read first, so it takes only
** transactions whose retractions and cardinality-one assertions share no
** [e a] (the retraction's delete ran first, and the replacement found its
** value gone) and with no :db/noHistory attribute (its log rows are
** deleted, not logged). */
static int txRowsFit(TxOp **ap, int n) {
  int i = 0;
  while (i < n) {
    int j, bRetract = 0, bOne = 0;
    for (j = i; j < n && ap[j]->e.e == ap[i]->e.e && ap[j]->pAttr == ap[i]->pAttr; j++) {
      if (ap[j]->bDrop) continue;
      if (ap[j]->pAttr->bNoHistory) return 0;
      if (ap[j]->eOp == TXOP_RETRACT) bRetract = 1;
      else if (!ap[j]->pAttr->bMany) bOne = 1;
    }
    if (bRetract && bOne) return 0;
    i = j;
  }
  return 1;
}

/* The values of [e a] a cardinality-one assertion replaces, added to
** pRows; *pbFound when the asserted value is there already (then it
** replaces nothing, as txPrepareAdd's EXISTS decides). */
static int txReadOld(Tx *p, TxOp *pOp, TxRows *pRows, int *pbFound) {
  sqlite3_stmt *pStmt = NULL;
  int rc = txStmt(p, TXS_CARD_ONE, &pStmt), nOld0 = pRows->nOld;
  *pbFound = 0;
  if (rc) return rc;
  sqlite3_bind_int64(pStmt, 1, pOp->e.e);
  sqlite3_bind_int64(pStmt, 2, pOp->pAttr->e);
  sqlite3_bind_int(pStmt, 3, vtTag(pOp->pAttr->type));
  rc = txValueBindStored(p, pStmt, 4, pOp);
  while (rc == SQLITE_OK && (rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    TxOld *pOld;
    rc = SQLITE_OK;
    if (sqlite3_column_int(pStmt, 2)) { *pbFound = 1; continue; }
    if (pRows->nOld == pRows->nOldAlloc) {
      int nNew = pRows->nOldAlloc ? pRows->nOldAlloc * 2 : 8;
      TxOld *aNew = sqlite3_realloc64(pRows->aOld, (sqlite3_uint64)nNew * sizeof(TxOld));
      if (aNew == NULL) { rc = SQLITE_NOMEM; break; }
      pRows->aOld = aNew;
      pRows->nOldAlloc = nNew;
    }
    pOld = &pRows->aOld[pRows->nOld++];
    memset(pOld, 0, sizeof *pOld);
    pOld->pOp = pOp;
    pOld->iRowid = sqlite3_column_int64(pStmt, 3);
    pOld->tag = sqlite3_column_int(pStmt, 1);
    pOld->eClass = sqlite3_column_type(pStmt, 0);
    if (pOld->eClass == SQLITE_INTEGER) {
      pOld->i = sqlite3_column_int64(pStmt, 0);
    } else if (pOld->eClass == SQLITE_FLOAT) {
      pOld->d = sqlite3_column_double(pStmt, 0);
    } else {
      const void *z = pOld->eClass == SQLITE_TEXT ? (const void *)sqlite3_column_text(pStmt, 0)
                                                   : sqlite3_column_blob(pStmt, 0);
      pOld->n = sqlite3_column_bytes(pStmt, 0);
      pOld->z = ednArenaStrdup(p->pArena, z ? (const char *)z : "", pOld->n);
      if (pOld->z == NULL) rc = SQLITE_NOMEM;
    }
  }
  sqlite3_reset(pStmt);
  if (rc == SQLITE_NOMEM) return rc;
  if (rc != SQLITE_DONE && rc != SQLITE_OK) return txSqlErr(p, "cannot read datoms: ");
  if (*pbFound) pRows->nOld = nOld0;
  return SQLITE_OK;
}

/* The reads and checks of txRetract and txPrepareAdd, all before the
** first write (storeWriteUndoPoint), and every statement the writes will
** run prepared. The same answers as made between the writes: whether a
** datom exists does not depend on this transaction's other writes (a
** datom is not both asserted and retracted, and one [e a] of cardinality
** one has one assertion: txCheckSet), and txCheckOp reads nothing. With
** pRows (the rows path) a cardinality-one assertion reads the values it
** replaces instead (txReadOld). */
static int txCheckFirst(Tx *p, TxOp **ap, int n, TxRows *pRows) {
  static const int aWrite[] = { TXS_DELETE, TXS_LOG, TXS_LOG_OLD, TXS_DELETE_OLD, TXS_INSERT,
                                TXS_INSERT_BATCH, TXS_LOG_BATCH, TXS_SET_PART, TXS_LOG_FORGET,
                                TXS_LOG_FORGET_OLD };
  int i, rc = SQLITE_OK, bFound;
  for (i = 0; rc == SQLITE_OK && i < n; i++) {
    if (ap[i]->bDrop || ap[i]->eOp != TXOP_RETRACT) continue;
    rc = txStepEAV(p, TXS_EXISTS, ap[i], &bFound, NULL);
    if (rc == SQLITE_OK && !bFound) ap[i]->bDrop = 1;
    else if (rc == SQLITE_OK) rc = txCheckOp(p, ap[i]);
  }
  for (i = 0; rc == SQLITE_OK && i < n; i++) {
    if (ap[i]->bDrop || ap[i]->eOp != TXOP_ADD) continue;
    bFound = 0;
    if (txIsFresh(p, ap[i]->e.e)) {
      /* a new entity has no datoms */
    } else if (pRows && !ap[i]->pAttr->bMany) {
      rc = txReadOld(p, ap[i], pRows, &bFound);
    } else {
      rc = txStepEAV(p, TXS_EXISTS, ap[i], &bFound, NULL);
    }
    if (rc == SQLITE_OK && bFound) ap[i]->bDrop = 1;
    else if (rc == SQLITE_OK) rc = txCheckOp(p, ap[i]);
    if (rc == SQLITE_OK && !bFound) ap[i]->bNew = 1;
  }
  for (i = 0; rc == SQLITE_OK && i < (int)(sizeof aWrite / sizeof aWrite[0]); i++) {
    rc = txStmtReady(p, aWrite[i]);
  }
  return rc;
}

/* The rows path's plan, after txCheckFirst: the log rows in the order the
** per-row path writes them (retractions, replaced values, new datoms in
** txCmpAVE order), the new datoms, and every statement they need
** prepared. ap is reordered. */
static int txRowsPlan(Tx *p, TxOp **ap, int n, TxRows *pRows) {
  int i, m = 0, rc;
  pRows->aLog = sqlite3_malloc64((sqlite3_uint64)(n + pRows->nOld + 1) * sizeof(TxLogRow));
  if (pRows->aLog == NULL) return SQLITE_NOMEM;
  for (i = 0; i < n; i++) {
    if (ap[i]->bDrop || ap[i]->eOp != TXOP_RETRACT) continue;
    pRows->aLog[pRows->nLog++] = (TxLogRow){ ap[i], NULL, 0 };
  }
  for (i = 0; i < pRows->nOld; i++) pRows->aLog[pRows->nLog++] = (TxLogRow){ NULL, &pRows->aOld[i], 0 };
  for (i = 0; i < n; i++) {
    if (!ap[i]->bDrop && ap[i]->bNew && ap[i]->eOp == TXOP_ADD) ap[m++] = ap[i];
  }
  rc = txSort(p, ap, (size_t)m, sizeof(TxOp *), txCmpAVE);
  if (rc) return rc;
  for (i = 0; i < m; i++) pRows->aLog[pRows->nLog++] = (TxLogRow){ ap[i], NULL, 1 };
  pRows->aNew = ap;
  pRows->nNew = m;
  if (pRows->nOld) rc = txStmtReady(p, TXS_DELETE_ROWID);
  if (rc == SQLITE_OK && pRows->nLog >= TX_BATCH) rc = txStmtRows(p, 1, TX_BATCH, 1, NULL);
  if (rc == SQLITE_OK && pRows->nLog % TX_BATCH) rc = txStmtRows(p, 1, pRows->nLog % TX_BATCH, 1, NULL);
  if (rc == SQLITE_OK && m >= TX_BATCH) rc = txStmtRows(p, 0, TX_BATCH, 1, NULL);
  if (rc == SQLITE_OK && m % TX_BATCH) rc = txStmtRows(p, 0, m % TX_BATCH, 1, NULL);
  return rc;
}

/* Binds log row pRow (6 parameters from iBase + 1). */
static int txBindLogRow(Tx *p, sqlite3_stmt *pStmt, int iBase, const TxLogRow *pRow) {
  const TxOld *pOld = pRow->pOld;
  if (pOld == NULL) return txBindLog(p, pStmt, iBase, pRow->pOp, pRow->bAdded);
  sqlite3_bind_int64(pStmt, iBase + 1, pOld->pOp->e.e);
  sqlite3_bind_int64(pStmt, iBase + 2, pOld->pOp->pAttr->e);
  sqlite3_bind_int64(pStmt, iBase + 4, p->iTx);
  sqlite3_bind_int(pStmt, iBase + 5, 0);
  sqlite3_bind_int(pStmt, iBase + 6, pOld->tag);
  switch (pOld->eClass) {
    case SQLITE_INTEGER: return sqlite3_bind_int64(pStmt, iBase + 3, pOld->i);
    case SQLITE_FLOAT: return sqlite3_bind_double(pStmt, iBase + 3, pOld->d);
    case SQLITE_TEXT:
      return sqlite3_bind_text64(pStmt, iBase + 3, pOld->z, (sqlite3_uint64)pOld->n, SQLITE_STATIC,
                                 SQLITE_UTF8);
    default: return sqlite3_bind_blob64(pStmt, iBase + 3, pOld->z, (sqlite3_uint64)pOld->n, SQLITE_STATIC);
  }
}

/* Writes the plan: the log rows, the retractions' and replaced values'
** deletes, the new datoms. Multi-row statements are OR FAIL, for the
** reason HOW IT WORKS gives. */
static int txWriteRows(Tx *p, const TxRows *pRows) {
  sqlite3_stmt *pStmt = NULL;
  int i, j, k, rc = SQLITE_OK;
  for (i = 0; rc == SQLITE_OK && i < pRows->nLog; i += k) {
    k = pRows->nLog - i < TX_BATCH ? pRows->nLog - i : TX_BATCH;
    rc = txStmtRows(p, 1, k, 0, &pStmt);
    for (j = 0; rc == SQLITE_OK && j < k; j++) rc = txBindLogRow(p, pStmt, j * 6, &pRows->aLog[i + j]);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_step(pStmt);
    sqlite3_reset(pStmt);
    rc = rc == SQLITE_DONE ? SQLITE_OK : txSqlErr(p, "cannot write the log: ");
  }
  for (i = 0; rc == SQLITE_OK && i < pRows->nLog && pRows->aLog[i].pOp && !pRows->aLog[i].bAdded; i++) {
    rc = txStepEAV(p, TXS_DELETE, pRows->aLog[i].pOp, NULL, NULL);
  }
  for (i = 0; rc == SQLITE_OK && i < pRows->nOld; i++) {
    rc = txStmt(p, TXS_DELETE_ROWID, &pStmt);
    if (rc) return rc;
    sqlite3_bind_int64(pStmt, 1, pRows->aOld[i].iRowid);
    rc = sqlite3_step(pStmt);
    sqlite3_reset(pStmt);
    if (rc != SQLITE_DONE) return txSqlErr(p, "cannot write datoms: ");
    rc = SQLITE_OK;
  }
  for (i = 0; rc == SQLITE_OK && i < pRows->nNew; i += k) {
    k = pRows->nNew - i < TX_BATCH ? pRows->nNew - i : TX_BATCH;
    rc = txStmtRows(p, 0, k, 0, &pStmt);
    for (j = 0; rc == SQLITE_OK && j < k; j++) rc = txBindDatom(p, pStmt, j * 9, pRows->aNew[i + j]);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_step(pStmt);
    sqlite3_reset(pStmt);
    if (rc != SQLITE_DONE) return txSqlErr(p, "cannot write datoms: ");
    storeWriteNoteDatoms(p->pConn->pStore, sqlite3_last_insert_rowid(p->db), k);
    rc = SQLITE_OK;
  }
  return rc;
}

/* The per-row path: each retraction, replacement and (in TX_BATCH groups
** or alone) new datom with its own statements. */
static int txWriteEach(Tx *p, TxOp **ap, int n, int bChecked) {
  int i, rc = SQLITE_OK;
  for (i = 0; rc == SQLITE_OK && i < n; i++) {
    if (!ap[i]->bDrop && ap[i]->eOp == TXOP_RETRACT) rc = txRetract(p, ap[i], bChecked);
  }
  for (i = 0; rc == SQLITE_OK && i < n; i++) {
    if (!ap[i]->bDrop && ap[i]->eOp == TXOP_ADD && (!bChecked || ap[i]->bNew)) {
      rc = txPrepareAdd(p, ap[i], bChecked);
    }
  }
  if (rc == SQLITE_OK) {
    TxOp *aBatch[TX_BATCH];
    int nBatch = 0, m = 0;
    for (i = 0; i < n; i++) {
      if (!ap[i]->bDrop && ap[i]->bNew) ap[m++] = ap[i];
    }
    n = m;
    rc = txSort(p, ap, (size_t)n, sizeof(TxOp *), txCmpAVE);
    for (i = 0; rc == SQLITE_OK && i < n; i++) {
      if (ap[i]->pAttr->eUnique != UNIQUE_NONE) {
        rc = txInsert(p, ap[i]);
        continue;
      }
      aBatch[nBatch++] = ap[i];
      if (nBatch == TX_BATCH) {
        rc = txInsertBatch(p, aBatch);
        nBatch = 0;
      }
    }
    for (i = 0; rc == SQLITE_OK && i < nBatch; i++) rc = txInsert(p, aBatch[i]);
  }
  return rc;
}

int txWrite(Tx *p) {
  TxOp **ap = NULL;
  TxRows rows;
  int i, n = 0, rc, bChecked, bRows;

  memset(&rows, 0, sizeof rows);
  ap = sqlite3_malloc64((sqlite3_uint64)(p->nOp ? p->nOp : 1) * sizeof(TxOp *));
  if (ap == NULL) return SQLITE_NOMEM;
  for (i = 0; i < p->nOp; i++) {
    TxOp *pOp = &p->aOp[i];
    if (pOp->bDrop || (pOp->eOp != TXOP_ADD && pOp->eOp != TXOP_RETRACT)) continue;
    ap[n++] = pOp;
  }
  rc = txSort(p, ap, (size_t)n, sizeof(TxOp *), txCmpDatom);
  if (rc == SQLITE_OK) rc = txCheckSet(p, ap, n);
  bChecked = rc == SQLITE_OK && txCheckable(ap, n);
  bRows = bChecked && txRowsFit(ap, n);
  if (bChecked) rc = txCheckFirst(p, ap, n, bRows ? &rows : NULL);
  if (rc == SQLITE_OK && bRows) rc = txRowsPlan(p, ap, n, &rows);
  /* A schema change is checked against the data after it is written
  ** (txSchemaFinish): risky, as is anything not checked first. */
  if (rc == SQLITE_OK) rc = storeWriteUndoPoint(p->pConn, !bChecked || p->bSchema, p->pzErr);
  if (rc == SQLITE_OK) rc = bRows ? txWriteRows(p, &rows) : txWriteEach(p, ap, n, bChecked);
  sqlite3_free(rows.aOld);
  sqlite3_free(rows.aLog);
  sqlite3_free(ap);
  return rc;
}
