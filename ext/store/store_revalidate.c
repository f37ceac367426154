/*
** store_revalidate.c — keeping a store's published schema current with
** the file, whoever committed to it (SPEC.md §4).
**
** Takes in a connection inside the read (or write) transaction its next
** statement will see; gives out the schema current for that snapshot,
** published to the Store when it is the newest; calls the schema loader
** (store_schema.c) and SQLite.
**
** HOW IT WORKS
** Every connection remembers the last `PRAGMA data_version` it saw. A
** checked-out reader runs BEGIN and then that pragma, which opens the
** call's one read transaction: the check, any re-read below and the
** caller's statements all see that snapshot (store_reader.c). When the
** version changed, some other connection committed; in the same read
** transaction a cheap signature is read (StoreSig: the tx partition mark,
** which every Mentat commit bumps, and the mirrors' row counts and largest
** rowids). If it equals the state the published schema is known to be
** exact for (set by our writer's commits and by full checks), nothing more
** is read: that is the common case of a commit by this process's writer.
** A commit by another Mentat process (ours or the Rust engine) changes the
** tx mark, so it cannot match; the log then explains it: every Mentat
** transaction appends its datoms to `timelined_transactions` (rowids only
** grow), a schema change among them (an attribute, ident or schema-mirror
** datom, core attributes 1..40 other than :db/txInstant). So when the
** mirrors' counts and largest rowids are unchanged and the rows appended
** since the known state are contiguous, hold no such datom and every
** transaction from the known mark to the new one (and the known last row
** is still one from before the known mark, so no deleted row's rowid was
** reused), the schema is unchanged: a scan of those few rows replaces the
** fingerprint, which reads every ident and schema row. A mark bumped with
** no log rows (a raw edit) or more than STORE_LOG_SCAN_MAX new rows takes
** the full check.
** Otherwise the schema fingerprint (store_schema.c) is read; only if it
** differs from the published snapshot's, and the state read is not older
** than the published one's (tx mark), is the schema reloaded and swapped
** in whole. Snapshots are refcounted: callers holding the old one keep
** using it. A state older than the published schema's (lower mark) is
** either a reader that began before a newer state was published, which
** then uses its own snapshot's schema for that call, or the file gone back
** (a backup restored over it): the writer, whose BEGIN IMMEDIATE reads the
** newest state, then publishes the restored schema although its mark is
** lower.
** Blind spots, by design: an edit made outside Mentat that rewrites mirror
** rows in place and neither logs nor moves the mark (only a later mirror
** insert or delete, or a reload, shows it), and another store's content
** restored over this file with the very same mark and mirror counts and
** largest rowids (nothing in the signature differs).
*/
#include <string.h>
#include "store_context.h"

/* At most this many log rows since the known state are scanned to explain
** a foreign commit (storeLogExplains); more, and the fingerprint is read. */
#define STORE_LOG_SCAN_MAX 4096

/* The state signature (StoreSig), one row. Read after every foreign
** commit, when the reader's page cache starts empty, so each page it
** touches is a read from the OS: known_parts' three rows are scanned in
** their one table page rather than found through its key's index (a second
** page), and the mirrors are counted in the table pages max(rowid) reads. */
const char storeSigSql[] =
  "SELECT (SELECT idx FROM known_parts NOT INDEXED WHERE part = ':db.part/tx'),"
  " (SELECT count(*) FROM idents), (SELECT max(rowid) FROM idents),"
  " (SELECT count(*) FROM schema), (SELECT max(rowid) FROM schema),"
  " (SELECT max(rowid) FROM timelined_transactions)";

/* The known last row of the log (?1) and the rows appended after it, up to
** ?2, in rowid order: storeLogExplains reads them. */
const char storeLogScanSql[] =
  "SELECT rowid, tx, a FROM timelined_transactions WHERE rowid >= ?1 AND rowid <= ?2";

int storeReadSig(StoreConnImpl *pImpl, StoreSig *pSig) {
  sqlite3_stmt *pStmt = pImpl->pSig;
  int rc = sqlite3_step(pStmt);
  memset(pSig, 0, sizeof *pSig);
  if (rc == SQLITE_ROW) {
    pSig->iMark = sqlite3_column_int64(pStmt, 0);
    for (int i = 0; i < 4; i++) pSig->a[i] = sqlite3_column_int64(pStmt, i + 1);
    pSig->iLogMax = sqlite3_column_int64(pStmt, 5);
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    rc = SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  return rc;
}

int storeSigEqual(const StoreSig *a, const StoreSig *b) {
  return a->iMark == b->iMark && memcmp(a->a, b->a, sizeof a->a) == 0;
}

/* Records that the published schema is exact at state sig (unless a newer
** state is already recorded). Store mutex held. */
void storeSetKnown(Store *p, const StoreSig *pSig) {
  if (!p->bKnown || pSig->iMark >= p->known.iMark) {
    p->known = *pSig;
    p->bKnown = 1;
  }
}

/* Swaps in pNew (read at tx mark iMark) unless the published snapshot was
** read from a newer state. Takes its own reference. */
void storePublish(Store *p, Schema *pNew, sqlite3_int64 iMark) {
  Schema *pOld = NULL;
  pthread_mutex_lock(&p->mutex);
  if (p->pSchema == NULL || iMark > p->iSchemaMark
      || (iMark == p->iSchemaMark
          && schemaFingerprintOf(pNew) != schemaFingerprintOf(p->pSchema))) {
    schemaRef(pNew);
    pOld = p->pSchema;
    p->pSchema = pNew;
    p->iSchemaMark = iMark;
  }
  pthread_mutex_unlock(&p->mutex);
  schemaUnref(pOld);
}

/* Schema fingerprints read since the process started (tests). */
static int gnFingerprints = 0;

int storeFingerprintCount(void) {
  return __atomic_load_n(&gnFingerprints, __ATOMIC_RELAXED);
}

/* Do the log rows appended since state pKnown account for every change
** between it and state pSig without touching the schema (see HOW IT WORKS)?
** *pbYes; an error only when the scan itself fails. */
static int storeLogExplains(StoreConnImpl *pImpl, const StoreSig *pKnown, const StoreSig *pSig,
                            int *pbYes) {
  sqlite3_stmt *pStmt = pImpl->pLogScan;
  sqlite3_int64 nNew = pSig->iLogMax - pKnown->iLogMax, n = 0;
  sqlite3_int64 iNext = pKnown->iMark;      /* the tx id the next new tx must have */
  int rc, bOk;
  *pbYes = 0;
  if (memcmp(pSig->a, pKnown->a, sizeof pSig->a) != 0) return SQLITE_OK;
  if (pSig->iMark <= pKnown->iMark || nNew <= 0 || nNew > STORE_LOG_SCAN_MAX) return SQLITE_OK;
  sqlite3_bind_int64(pStmt, 1, pKnown->iLogMax);
  sqlite3_bind_int64(pStmt, 2, pSig->iLogMax);
  /* The known last row is still there and from before the known mark: had
  ** it been deleted and its rowid reused, it would hold a newer tx. */
  rc = sqlite3_step(pStmt);
  bOk = rc == SQLITE_ROW && sqlite3_column_int64(pStmt, 0) == pKnown->iLogMax
        && sqlite3_column_int64(pStmt, 1) < pKnown->iMark;
  /* Then, in rowid order, the transactions from the known mark on, each
  ** the one after the last (tx ids are allocated one per transaction, and
  ** each logs at least its :db/txInstant), none with a schema datom (core
  ** attributes other than :db/txInstant, 3). */
  while (bOk && (rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    sqlite3_int64 tx = sqlite3_column_int64(pStmt, 1), a = sqlite3_column_int64(pStmt, 2);
    n++;
    if (a <= 40 && a != 3) {
      bOk = 0;
    } else if (tx == iNext) {
      iNext++;
    } else if (!(iNext > pKnown->iMark && tx == iNext - 1)) {
      bOk = 0;
    }
  }
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
    *pbYes = bOk && rc == SQLITE_DONE && n == nNew && iNext == pSig->iMark;
    rc = SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  return rc;
}

/* The file went back to an older state (a backup restored over it): the
** schema read from it replaces the published one although its tx mark is
** lower, and that state becomes the known one. */
static void storeRewind(Store *p, Schema *pNew, const StoreSig *pSig) {
  Schema *pOld;
  schemaRef(pNew);
  pthread_mutex_lock(&p->mutex);
  pOld = p->pSchema;
  p->pSchema = pNew;
  p->iSchemaMark = pSig->iMark;
  p->known = *pSig;
  p->bKnown = 1;
  pthread_mutex_unlock(&p->mutex);
  schemaUnref(pOld);
}

/* Makes sure the published schema is at least as new as what pConn's next
** statement will see (see HOW IT WORKS). pConn is inside the transaction
** whose snapshot that statement reads. bLatest: the transaction holds the
** write lock (the writer after BEGIN IMMEDIATE), so it reads the newest
** state there is. ppOwn (readers): set, with a reference, when this
** snapshot's schema differs from the published one and is older; the call
** then uses it. */
int storeRevalidate(Store *p, StoreConn *pConn, int bLatest, Schema **ppOwn, char **pzErr) {
  StoreConnImpl *pImpl = (StoreConnImpl *)pConn;
  sqlite3 *db = pConn->db;
  sqlite3_int64 iVersion = 0, iMark;
  sqlite3_uint64 fp = 0, fpPub;
  sqlite3_int64 iMarkPub;
  StoreSig sig;
  StoreSig known;
  Schema *pNew = NULL;
  int bSame, bKnown;
  int rc;

  if (p->bMemory) return SQLITE_OK;      /* one connection: nobody else commits */
  rc = storeStepInt(pImpl->pDataVersion, &iVersion);
  if (rc != SQLITE_OK || iVersion == pConn->iDataVersion) goto cleanup;
  /* Another connection committed: it may have written known_parts (or
  ** data past it) by other means than this extension. */
  pConn->bMarksUnchecked = 1;

  rc = storeReadSig(pImpl, &sig);
  if (rc != SQLITE_OK) goto cleanup;
  iMark = sig.iMark;

  /* The common case: the commit was our own writer's (which published any
  ** schema change it made), so the state is one the schema is known for. */
  pthread_mutex_lock(&p->mutex);
  bSame = p->bKnown && storeSigEqual(&sig, &p->known);
  bKnown = p->bKnown;
  known = p->known;
  pthread_mutex_unlock(&p->mutex);
  if (!bSame && bKnown) {
    rc = storeLogExplains(pImpl, &known, &sig, &bSame);
    if (rc != SQLITE_OK) goto cleanup;
    if (bSame) {
      /* Only if nothing moved the known state meanwhile: then the
      ** published schema, exact there, is exact here too. */
      pthread_mutex_lock(&p->mutex);
      bSame = p->bKnown && storeSigEqual(&known, &p->known)
              && known.iLogMax == p->known.iLogMax;
      if (bSame) storeSetKnown(p, &sig);
      pthread_mutex_unlock(&p->mutex);
    }
  }
  if (!bSame) {
    __atomic_add_fetch(&gnFingerprints, 1, __ATOMIC_RELAXED);
    rc = storeSchemaFingerprintStmt(pImpl->pFingerprint, &fp);
    if (rc != SQLITE_OK) goto cleanup;

    pthread_mutex_lock(&p->mutex);
    fpPub = schemaFingerprintOf(p->pSchema);
    iMarkPub = p->iSchemaMark;
    pthread_mutex_unlock(&p->mutex);

    if (fp != fpPub && (iMark >= iMarkPub || bLatest || ppOwn)) {
      rc = storeSchemaLoad(db, &pNew, pzErr);
      if (rc != SQLITE_OK) goto cleanup;
      if (iMark >= iMarkPub) {
        storePublish(p, pNew, iMark);
      } else if (bLatest) {
        /* The newest state with a lower mark than the published schema's:
        ** the file went back (a backup restored over it), not a slow reader. */
        storeRewind(p, pNew, &sig);
      } else {
        /* A snapshot older than the published schema's state: a newer one
        ** was published while this call began, or the file went back.
        ** Either way this call reads this snapshot, so it gets this
        ** snapshot's schema, unpublished, and the connection does not note
        ** the version: its next call checks again (storeWriterRecheck has
        ** the writer, which sees the newest state, settle which). */
        *ppOwn = pNew;
        pNew = NULL;
        goto cleanup;
      }
    }
    pthread_mutex_lock(&p->mutex);
    if (fp == schemaFingerprintOf(p->pSchema)) storeSetKnown(p, &sig);
    pthread_mutex_unlock(&p->mutex);
  }
  pConn->iDataVersion = iVersion;

cleanup:
  if (rc != SQLITE_OK && pzErr && *pzErr == NULL) {
    *pzErr = sqlite3_mprintf("cannot read store %s: %s", p->zPath, sqlite3_errmsg(db));
  }
  schemaUnref(pNew);
  return rc;
}
