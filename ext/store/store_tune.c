/*
** store_tune.c — the store's size-driven tuning: the extra indexes it
** manages and the planner statistics it keeps (SPEC.md §3: extra indexes
** are created IF NOT EXISTS and recorded in mentat_managed_indexes), and
** when the writer runs it.
**
** Takes in the writer connection and the current schema (write mutex
** held); gives out managed indexes, statistics and, when the indexes
** changed, a reloaded schema (Attr.bValueIndex); calls the revalidation
** and schema-loading files below it.
**
** HOW IT WORKS
** storeTune() runs on the writer connection when a store is opened and
** after each commit that grew the store (after a bulk commit, at the next
** small commit or read: TUNING AFTER BULK WRITES below). Below
** configTuneMinDatoms() datoms (default 8192) it does nothing: scans of a
** small store are cheap, and its file stays exactly the format's.
** Above it, in one short write transaction:
**  1. Extra indexes (created once, then kept in step with the schema):
**     idx_mentat_log_avet_<a> timelined_transactions (a, v, e, tag, tx,
**                           added, timeline) WHERE a = <a> AND timeline IS
**                           0, for each user attribute the datoms index by
**                           value (:db/index, :db/unique or ref; not
**                           fulltext) — as-of patterns bound by value read
**                           the attribute's history through it (the
**                           format's log index is keyed by entity only).
**                           Only those attributes, as Datomic's AVET/VAET
**                           hold only them: one store-wide log value index
**                           would also take every unindexed value at random
**                           places during loads; by-value history reads of
**                           other attributes scan that attribute's history
**                           (idx_transactions_aevt). A store-wide
**                           idx_mentat_log_avet is dropped;
**     idx_mentat_datoms_atx datoms (a, tx, e) — `since` patterns read only
**                           the datoms of an attribute newer than T;
**     idx_mentat_log_tx     timelined_transactions (tx) — edn_log's tx
**                           ranges (Datomic's tx-range) read only their
**                           transactions; tx ids only grow, so it is
**                           appended to at its end. Not partial: the
**                           timeline index's sampled statistics make
**                           `timeline IS 0` look selective, so edn_log
**                           states it as `+timeline IS 0`, which no index
**                           serves;
**     idx_mentat_avet_<a>   datoms (a, v, e) WHERE a = <a>, for each
**                           :db/index attribute the format's own
**                           idx_auto_avet_<a> does not cover (not unique,
**                           not ref, not fulltext): covering value lookups,
**                           ranges and GROUP BY v (aggregates) read one
**                           small index instead of the table.
**     Recorded with a = 0 and kind 'store' (store-wide) or a = <a> and kind
**     'adaptive' (per attribute); dropped again when the attribute stops
**     qualifying. The attribute is inlined in each partial index's WHERE
**     (compiled queries state `dN.a = <a>`); statements that bind the
**     attribute as a parameter (pull's as-of reads) are re-prepared by
**     SQLite per attribute to use them.
**  2. Statistics: when the datoms have doubled since the last analysis (the
**     count at that time is read back from sqlite_stat1, so the policy
**     survives restarts and other processes), `ANALYZE` with
**     analysis_limit=STORE_ANALYSIS_LIMIT, so the cost stays bounded where
**     a full ANALYZE grows with the store. analysis_limit reads a prefix of
**     each index, which makes the per-attribute averages of the `a`-first
**     indexes wrong (far too few datoms per attribute, so the planner would
**     start joins with a whole-attribute scan); those figures are rewritten
**     from cheap numbers: rows (max rowid), and per attribute the largest
**     attribute known (see storeFixStats) or rows / attributes if larger.
**     The partial per-attribute indexes hold one attribute, so their
**     rows-per-attribute is their row count. Other connections see the new
**     statistics at their next statement: ANALYZE changes the schema cookie
**     and SQLite re-prepares.
** Tuning is an optimisation: any failure (read-only file, busy writer,
** out of memory) rolls back and is retried at a later commit; it never
** fails the caller's transaction, which is already committed.
**
** TUNING AFTER BULK WRITES
** Built during a bulk load, the managed indexes would take every later
** insert at a random place, where CREATE INDEX afterwards sorts once. So a
** commit that inserted STORE_TUNE_DEFER_DATOMS datoms or more does not
** tune; it marks the tune pending, and the next small commit, or the next
** read in this process (storeReader -> storeTunePending, unless a write is
** in progress), runs it before its query is compiled, so the query sees
** the indexes. The first read after a bulk load therefore pays the build.
** Another process opening the store tunes it at open.
*/
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "store_context.h"

/* Rows per index ANALYZE reads (PRAGMA analysis_limit). */
#define STORE_ANALYSIS_LIMIT 1000
/* Tuning must not stall the committing caller behind another process's
** long write: it waits this long for the lock, then tries next time. */
#define STORE_TUNE_BUSY_MS 200

/* The store-wide extra indexes: name, DDL. */
static const char *const azStoreIdx[][2] = {
  { "idx_mentat_datoms_atx",
    "CREATE INDEX IF NOT EXISTS idx_mentat_datoms_atx ON datoms (a, tx, e)" },
  { "idx_mentat_log_tx",
    "CREATE INDEX IF NOT EXISTS idx_mentat_log_tx ON timelined_transactions (tx)" },
};
#define STORE_N_IDX ((int)(sizeof azStoreIdx / sizeof azStoreIdx[0]))

/* Indexes whose first column is `a` over (nearly) the whole table: their
** row count is the table's and their second figure is rows per attribute. */
static const char *const azAFirst[] = {
  "idx_datoms_aevt", "idx_transactions_aevt", "idx_mentat_datoms_atx",
  NULL
};
/* Partial `a`-first indexes: keep ANALYZE's row count, fix the average. */
static const char *const azAFirstPartial[] = {
  "idx_datoms_avet", "idx_datoms_unique_value", NULL
};
/* Whole-table indexes not led by `a`: only the row count is fixed. */
static const char *const azWhole[] = {
  "idx_datoms_eavt", "idx_timelined_transactions_timeline", "idx_mentat_log_tx", NULL
};

static int storeInList(const char *z, const char *const *az) {
  for (int i = 0; az[i]; i++) if (strcmp(z, az[i]) == 0) return 1;
  return 0;
}

/* Does attribute pA get an idx_mentat_avet_<a>? (:db/index and not already
** served by the format's idx_auto_avet_<a>.) */
static int storeWantsAvet(const Attr *pA) {
  return pA->e >= PART_USER_START && pA->bIndex && !pA->bFulltext && pA->eUnique == UNIQUE_NONE
         && pA->type != VT_REF;
}

/* Does attribute pA get an idx_mentat_log_avet_<a>? (The datoms index its
** values: :db/index, :db/unique or ref, not fulltext; see HOW IT WORKS.)
** User attributes only, as for the value indexes: the bootstrap ones have
** short histories (schema datoms; :db/txInstant one per tx). */
static int storeWantsLogAvet(const Attr *pA) {
  return pA->e >= PART_USER_START && !pA->bFulltext
         && (pA->bIndex || pA->eUnique != UNIQUE_NONE || pA->type == VT_REF);
}

/* The per-attribute managed indexes: name prefix, DDL (the attribute's
** entid twice, inlined so the partial index matches `dN.a = <a>`), and
** whether an attribute gets one. */
static const struct {
  const char *zPrefix;
  const char *zDdl;
  int (*xWants)(const Attr *);
} aAttrIdx[] = {
  { "idx_mentat_avet_",
    "CREATE INDEX IF NOT EXISTS idx_mentat_avet_%lld ON datoms (a, v, e) WHERE a = %lld",
    storeWantsAvet },
  { "idx_mentat_log_avet_",
    "CREATE INDEX IF NOT EXISTS idx_mentat_log_avet_%lld ON timelined_transactions"
    " (a, v, e, value_type_tag, tx, added, timeline) WHERE a = %lld AND timeline IS 0",
    storeWantsLogAvet },
};
#define STORE_N_ATTR_IDX ((int)(sizeof aAttrIdx / sizeof aAttrIdx[0]))
/* The store-wide log value index older versions of this extension made:
** dropped where found, the per-attribute ones replace it. */
#define STORE_OLD_LOG_AVET "idx_mentat_log_avet"

static int storeInt(sqlite3 *db, const char *zSql, sqlite3_int64 *piOut) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL);
  *piOut = 0;
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) *piOut = sqlite3_column_int64(pStmt, 0);
    rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK : rc;
  }
  sqlite3_finalize(pStmt);
  return rc;
}

/* Row count of the last analysis (sqlite_stat1's first figure for the
** EAVT index, which storeFixStats sets to the datoms count); 0 if none. */
static int storeAnalyzedRows(sqlite3 *db, sqlite3_int64 *pn) {
  sqlite3_int64 bHas = 0;
  int rc = storeInt(db, "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'", &bHas);
  *pn = 0;
  if (rc == SQLITE_OK && bHas) {
    rc = storeInt(db, "SELECT CAST(stat AS INTEGER) FROM sqlite_stat1"
                      " WHERE tbl = 'datoms' AND idx = 'idx_datoms_eavt'", pn);
  }
  return rc;
}

/* ---------------------------------------------------------- indexes */

static int storeRecord(sqlite3 *db, const char *zName, sqlite3_int64 a, const char *zKind) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 now = configWallUs() / 1000000;
  int rc = sqlite3_prepare_v2(db,
      "INSERT OR IGNORE INTO mentat_managed_indexes (name, a, created, last_used, kind)"
      " VALUES (?1, ?2, ?3, ?3, ?4)", -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(pStmt, 1, zName, -1, SQLITE_STATIC);
    sqlite3_bind_int64(pStmt, 2, a);
    sqlite3_bind_int64(pStmt, 3, now);
    sqlite3_bind_text(pStmt, 4, zKind, -1, SQLITE_STATIC);
    rc = sqlite3_step(pStmt);
    rc = rc == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
  }
  sqlite3_finalize(pStmt);
  return rc;
}

/* Is there a schema object called zName? */
static int storeHasIndex(sqlite3 *db, const char *zName, int *pbHas) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?1",
                              -1, &pStmt, NULL);
  *pbHas = 0;
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(pStmt, 1, zName, -1, SQLITE_STATIC);
    rc = sqlite3_step(pStmt);
    *pbHas = (rc == SQLITE_ROW);
    rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK : rc;
  }
  sqlite3_finalize(pStmt);
  return rc;
}

/* Creates the missing managed indexes and drops per-attribute ones whose
** attribute no longer qualifies. *pnMade: indexes created or dropped.
** bDry: only count them (a read, so the common case takes no write lock). */
static int storeEnsureIndexes(sqlite3 *db, const Schema *pSchema, int bDry, int *pnMade) {
  sqlite3_stmt *pSel = NULL;
  int rc = SQLITE_OK, bHas;
  sqlite3_int64 bPartial = 0;
  *pnMade = 0;
  /* A partial idx_mentat_log_tx (WHERE timeline IS 0, as a build of this
  ** version's development made it) serves no edn_log range: made again. */
  rc = storeInt(db, "SELECT count(*) FROM sqlite_master WHERE name = 'idx_mentat_log_tx'"
                    " AND sql LIKE '% WHERE %'", &bPartial);
  if (rc == SQLITE_OK && bPartial) {
    (*pnMade)++;
    if (!bDry) rc = sqlite3_exec(db, "DROP INDEX idx_mentat_log_tx", NULL, NULL, NULL);
  }
  for (int i = 0; i < STORE_N_IDX && rc == SQLITE_OK; i++) {
    rc = storeHasIndex(db, azStoreIdx[i][0], &bHas);
    if (rc != SQLITE_OK || bHas) continue;
    (*pnMade)++;
    if (bDry) continue;
    rc = sqlite3_exec(db, azStoreIdx[i][1], NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = storeRecord(db, azStoreIdx[i][0], 0, "store");
  }
  if (rc == SQLITE_OK) rc = storeHasIndex(db, STORE_OLD_LOG_AVET, &bHas);
  if (rc == SQLITE_OK && bHas) {
    (*pnMade)++;
    if (!bDry) {
      rc = sqlite3_exec(db, "DROP INDEX IF EXISTS " STORE_OLD_LOG_AVET "; DELETE FROM"
                            " mentat_managed_indexes WHERE name = '" STORE_OLD_LOG_AVET "'",
                        NULL, NULL, NULL);
    }
  }
  for (int i = 0; i < schemaAttrCount(pSchema) && rc == SQLITE_OK; i++) {
    const Attr *pA = schemaAttrAt(pSchema, i);
    for (int k = 0; k < STORE_N_ATTR_IDX && rc == SQLITE_OK; k++) {
      char zName[64];
      char *zSql;
      if (!aAttrIdx[k].xWants(pA)) continue;
      sqlite3_snprintf(sizeof zName, zName, "%s%lld", aAttrIdx[k].zPrefix, pA->e);
      rc = storeHasIndex(db, zName, &bHas);
      if (rc != SQLITE_OK || bHas) continue;
      (*pnMade)++;
      if (bDry) continue;
      zSql = sqlite3_mprintf(aAttrIdx[k].zDdl, pA->e, pA->e);
      if (zSql == NULL) { rc = SQLITE_NOMEM; break; }
      rc = sqlite3_exec(db, zSql, NULL, NULL, NULL);
      sqlite3_free(zSql);
      if (rc == SQLITE_OK) rc = storeRecord(db, zName, pA->e, "adaptive");
    }
  }
  /* Per-attribute indexes of attributes that changed (lost :db/index,
  ** became unique or were retyped): drop them and their records. */
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v2(db,
        "SELECT name, a FROM mentat_managed_indexes WHERE kind = 'adaptive'", -1, &pSel, NULL);
  }
  while (rc == SQLITE_OK && sqlite3_step(pSel) == SQLITE_ROW) {
    const Attr *pA = schemaAttr(pSchema, sqlite3_column_int64(pSel, 1));
    const char *zName = (const char *)sqlite3_column_text(pSel, 0);
    char *zSql;
    int k;
    if (zName == NULL) continue;
    for (k = 0; k < STORE_N_ATTR_IDX; k++) {
      if (strncmp(zName, aAttrIdx[k].zPrefix, strlen(aAttrIdx[k].zPrefix)) == 0) break;
    }
    /* A prefix this version does not manage: leave it. */
    if (k == STORE_N_ATTR_IDX) continue;
    if (pA && aAttrIdx[k].xWants(pA)) continue;
    (*pnMade)++;
    if (bDry) break;
    zSql = sqlite3_mprintf("DROP INDEX IF EXISTS \"%w\"; DELETE FROM mentat_managed_indexes"
                           " WHERE name = %Q", sqlite3_column_text(pSel, 0),
                           sqlite3_column_text(pSel, 0));
    if (zSql == NULL) { rc = SQLITE_NOMEM; break; }
    /* Reset first: dropping a schema object under a running statement on
    ** the same connection is refused (SQLITE_LOCKED). The list shrinks,
    ** so restarting the scan terminates. */
    sqlite3_reset(pSel);
    rc = sqlite3_exec(db, zSql, NULL, NULL, NULL);
    sqlite3_free(zSql);
  }
  if (pSel) {
    int rc2 = sqlite3_finalize(pSel);
    if (rc == SQLITE_OK) rc = rc2;
  }
  return rc;
}

/* ------------------------------------------------------- statistics */

/* Rewrites one sqlite_stat1 figure list (see HOW IT WORKS). zStat:
** "N a b ..." optionally followed by non-numeric options. */
static char *storeFixStat(const char *zIdx, const char *zStat, sqlite3_int64 nRows,
                          sqlite3_int64 nPerAttr) {
  sqlite3_int64 aN[32];
  int n = 0;
  const char *z = zStat;
  sqlite3_str *pOut;
  while (n < 32) {
    char *zEnd;
    while (*z == ' ') z++;
    if (*z < '0' || *z > '9') break;
    aN[n++] = strtoll(z, &zEnd, 10);
    z = zEnd;
  }
  if (n < 2) return NULL;
  if (strncmp(zIdx, "idx_auto_avet_", 14) == 0 || strncmp(zIdx, "idx_mentat_avet_", 16) == 0
      || strncmp(zIdx, "idx_mentat_log_avet_", 20) == 0) {
    aN[1] = aN[0];
  } else if (storeInList(zIdx, azAFirst)) {
    aN[0] = nRows;
    aN[1] = nPerAttr;
  } else if (storeInList(zIdx, azAFirstPartial)) {
    aN[1] = nPerAttr < aN[0] ? nPerAttr : aN[0];
  } else if (storeInList(zIdx, azWhole)) {
    aN[0] = nRows;
  } else {
    return NULL;
  }
  /* Each later figure averages over a longer key prefix: never more rows
  ** than the figure before it, never less than one. */
  for (int i = 1; i < n; i++) {
    if (aN[i] > aN[i - 1]) aN[i] = aN[i - 1];
    if (aN[i] < 1) aN[i] = 1;
  }
  pOut = sqlite3_str_new(NULL);
  for (int i = 0; i < n; i++) sqlite3_str_appendf(pOut, "%s%lld", i ? " " : "", aN[i]);
  sqlite3_str_appendall(pOut, z);
  return sqlite3_str_finish(pOut);
}

static int storeFixStats(sqlite3 *db, const Schema *pSchema, sqlite3_int64 nDatoms) {
  sqlite3_stmt *pSel = NULL, *pUpd = NULL;
  sqlite3_int64 nLog = 0, nAttr = schemaAttrCount(pSchema), nBig = 0, nPerD, nPerL;
  sqlite3_str *pNew = sqlite3_str_new(NULL);
  char *zAll = NULL;
  int rc = storeInt(db, "SELECT max(rowid) FROM timelined_transactions", &nLog);
  /* Rows per attribute: the figure SQLite expects is an average, but an
  ** average over a few huge and many tiny attributes makes a scan of a big
  ** attribute look cheap, and the planner then starts joins with it. The
  ** largest attribute known (per-attribute index counts), or the average
  ** if larger, errs the safe way: joins start from bound values, as a
  ** Datalog engine would, and the per-attribute indexes hold exact counts. */
  if (rc == SQLITE_OK) {
    rc = storeInt(db, "SELECT max(CAST(stat AS INTEGER)) FROM sqlite_stat1 WHERE tbl = 'datoms'"
                      " AND (idx LIKE 'idx_auto_avet_%' OR idx LIKE 'idx_mentat_avet_%')", &nBig);
  }
  if (nAttr < 1) nAttr = 1;
  nPerD = nDatoms / nAttr > nBig ? nDatoms / nAttr : nBig;
  nPerL = nDatoms > 0 ? (sqlite3_int64)((double)nPerD * (double)nLog / (double)nDatoms) : nLog;
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v2(db,
        "SELECT tbl, idx, stat FROM sqlite_stat1 WHERE tbl IN ('datoms', 'timelined_transactions')"
        " AND idx IS NOT NULL", -1, &pSel, NULL);
  }
  /* The new figures are gathered first and written after the scan, so the
  ** table is never changed under its own reader: "idx\tstat\n" lines
  ** (names and figures hold no tab or newline). */
  while (rc == SQLITE_OK && sqlite3_step(pSel) == SQLITE_ROW) {
    const char *zTbl = (const char *)sqlite3_column_text(pSel, 0);
    const char *zIdx = (const char *)sqlite3_column_text(pSel, 1);
    const char *zStat = (const char *)sqlite3_column_text(pSel, 2);
    char *zFixed;
    if (zTbl == NULL || zIdx == NULL || zStat == NULL) continue;
    zFixed = strcmp(zTbl, "datoms") == 0 ? storeFixStat(zIdx, zStat, nDatoms, nPerD)
                                          : storeFixStat(zIdx, zStat, nLog, nPerL);
    if (zFixed == NULL) continue;
    sqlite3_str_appendf(pNew, "%s\t%s\n", zIdx, zFixed);
    sqlite3_free(zFixed);
  }
  if (pSel) {
    int rc2 = sqlite3_finalize(pSel);
    if (rc == SQLITE_OK) rc = rc2;
  }
  if (rc == SQLITE_OK && sqlite3_str_errcode(pNew)) rc = SQLITE_NOMEM;
  zAll = sqlite3_str_finish(pNew);
  if (rc == SQLITE_OK && zAll) {
    rc = sqlite3_prepare_v2(db, "UPDATE sqlite_stat1 SET stat = ?2 WHERE idx = ?1"
                            " AND tbl IN ('datoms', 'timelined_transactions')", -1, &pUpd, NULL);
  }
  for (char *z = zAll; rc == SQLITE_OK && z && *z;) {
    char *zTab = strchr(z, '\t'), *zNl = zTab ? strchr(zTab, '\n') : NULL;
    if (zNl == NULL) break;
    sqlite3_bind_text(pUpd, 1, z, (int)(zTab - z), SQLITE_STATIC);
    sqlite3_bind_text(pUpd, 2, zTab + 1, (int)(zNl - zTab - 1), SQLITE_STATIC);
    rc = sqlite3_step(pUpd) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    sqlite3_reset(pUpd);
    z = zNl + 1;
  }
  sqlite3_finalize(pUpd);
  sqlite3_free(zAll);
  return rc;
}

/* -------------------------------------------------------------- tune */

int storeTune(sqlite3 *db, const Schema *pSchema, sqlite3_int64 *pnAnalyzed, int bCheckIndexes,
              int *pbIndexesChanged) {
  sqlite3_int64 nDatoms = 0;
  /* A first look that fails (another connection writing) must stay a first
  ** look, or the retry would skip the index check and only analyze. */
  const int bFirstLook = *pnAnalyzed < 0;
  int rc, nMade = 0, bBegun = 0;
  char zSql[64];

  *pbIndexesChanged = 0;
  if (pSchema == NULL) return SQLITE_OK;
  rc = storeInt(db, "SELECT max(rowid) FROM datoms", &nDatoms);
  if (rc != SQLITE_OK || nDatoms < configTuneMinDatoms()) return rc;
  if (bFirstLook) {
    rc = storeAnalyzedRows(db, pnAnalyzed);
    if (rc != SQLITE_OK) goto cleanup;
    bCheckIndexes = 1;
  }
  if (bCheckIndexes) {
    rc = storeEnsureIndexes(db, pSchema, 1, &nMade);
    if (rc != SQLITE_OK) goto cleanup;
  }
  if (nMade == 0 && nDatoms < 2 * *pnAnalyzed) return SQLITE_OK;

  sqlite3_busy_timeout(db, STORE_TUNE_BUSY_MS);
  rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc != SQLITE_OK) goto cleanup;
  bBegun = 1;
  if (nMade > 0) {
    /* Counted again: another process may have made them meanwhile. */
    rc = storeEnsureIndexes(db, pSchema, 0, &nMade);
    if (rc != SQLITE_OK) goto cleanup;
  }
  if (nMade > 0 || nDatoms >= 2 * *pnAnalyzed) {
    sqlite3_snprintf(sizeof zSql, zSql, "PRAGMA analysis_limit=%d", STORE_ANALYSIS_LIMIT);
    rc = sqlite3_exec(db, zSql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "ANALYZE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = storeFixStats(db, pSchema, nDatoms);
    /* Reload this connection's statistics from the table just rewritten. */
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "ANALYZE sqlite_master", NULL, NULL, NULL);
    if (rc != SQLITE_OK) goto cleanup;
  }
  rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  if (rc == SQLITE_OK) {
    bBegun = 0;
    *pbIndexesChanged = nMade > 0;
    if (nMade > 0 || nDatoms >= 2 * *pnAnalyzed) *pnAnalyzed = nDatoms;
  }

cleanup:
  if (bBegun && sqlite3_get_autocommit(db) == 0) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  if (rc != SQLITE_OK && bFirstLook) *pnAnalyzed = -1;
  sqlite3_busy_timeout(db, configBusyTimeoutMs());
  return rc;
}

/* A commit inserting at least this many datoms is a bulk write: it defers
** the tune (TUNING AFTER BULK WRITES). */
#define STORE_TUNE_DEFER_DATOMS 1000

/* ------------------------------------------------------- the writer's tune */

/* Runs storeTune on the writer (write mutex held, or the Store not yet
** shared). When it changed the managed indexes, the schema is reloaded and
** published even though its fingerprint is unchanged: the new snapshot's
** Attr.bValueIndex lets compiled queries use the new indexes, and its new
** generation retires the plans cached without them. Errors are dropped:
** tuning is retried after a later commit. */
void storeTuneWriter(Store *p, int bCheckIndexes) {
  StoreConnImpl *pW = (StoreConnImpl *)p->pWriter;
  sqlite3 *db = pW->base.db;
  Schema *pCur, *pNew = NULL, *pOld = NULL;
  StoreSig sig;
  int bChanged = 0, rc;

  pthread_mutex_lock(&p->mutex);
  pCur = p->pSchema;
  schemaRef(pCur);
  pthread_mutex_unlock(&p->mutex);
  rc = storeTune(db, pCur, &p->nAnalyzed, bCheckIndexes, &bChanged);
  schemaUnref(pCur);
  if (rc != SQLITE_OK || !bChanged) return;
  if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) return;
  rc = storeReadSig(pW, &sig);
  if (rc == SQLITE_OK) rc = storeSchemaLoad(db, &pNew, NULL);
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK) return;
  pthread_mutex_lock(&p->mutex);
  if (sig.iMark >= p->iSchemaMark) {
    pOld = p->pSchema;
    p->pSchema = pNew;
    p->iSchemaMark = sig.iMark;
    storeSetKnown(p, &sig);
    pNew = NULL;
  }
  pthread_mutex_unlock(&p->mutex);
  schemaUnref(pOld);
  schemaUnref(pNew);
}

/* Runs the tune a bulk commit deferred, if any (write mutex held). The flag
** is cleared first: a tune that fails (another process writing) is not
** retried by every read; the next commit that grows the store retries it
** (storeWantsTune). */
static void storeRunPendingTune(Store *p) {
  if (!p->bTunePending || p->pWriter == NULL) return;
  __atomic_store_n(&p->bTunePending, 0, __ATOMIC_RELEASE);
  storeTuneWriter(p, 1);
}

void storeTunePending(Store *p) {
  if (pthread_mutex_trylock(&p->writeMutex) != 0) return;
  /* A group waiting for its COMMIT holds the writer's transaction: the
  ** write that commits it tunes after it. */
  if (!p->bGroupOpen) storeRunPendingTune(p);
  pthread_mutex_unlock(&p->writeMutex);
}

/* Should this commit retune? Only when it changed the schema, or inserted
** datoms taking the store past the tuning threshold or to twice the size
** of the last analysis: storeTune itself starts with a query of its own,
** a read transaction per commit that one-datom writes could not afford. */
static int storeWantsTune(Store *p, int bSchema) {
  sqlite3_int64 n = p->nNoteDatoms;
  if (bSchema) return 1;
  if (n == 0 || n < configTuneMinDatoms()) return 0;
  return p->nAnalyzed < 0 || n >= 2 * p->nAnalyzed;
}

void storeTuneAfterCommit(Store *p, int bSchema) {
  if (!bSchema && p->nNoteInserted >= STORE_TUNE_DEFER_DATOMS) {
    if (storeWantsTune(p, 0)) __atomic_store_n(&p->bTunePending, 1, __ATOMIC_RELEASE);
  } else if (p->bTunePending) {
    storeRunPendingTune(p);
  } else if (storeWantsTune(p, bSchema)) {
    storeTuneWriter(p, bSchema);
  }
}
