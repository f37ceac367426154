/*
** tx_schema.c — attribute installs: checks, the `idents`/`schema` mirrors,
** per-attribute value indexes and the new schema snapshot.
**
** HOW IT WORKS
** Attributes are ordinary entities with :db/ident and :db/valueType (SPEC
** §5); Datomic's legacy `:db.install/_attribute :db.part/db` and
** `#db/id [:db.part/db]` are plain datoms here. txSchemaPrepare adds the
** implied datoms of a NEW attribute (:db/cardinality one when absent;
** :db/index true for :db/unique, as the Rust engine demands). Re-running an
** identical schema transaction upserts on :db/ident and every datom is a
** no-op, so nothing changes (peer fault B07). txSchemaCheckOp is called
** for every datom that will really change: altering an existing
** attribute's definition is refused (the value type always; the other
** flags until schema alteration is implemented). txSchemaFinish validates
** the touched entities' final state, rewrites their mirror rows, creates
** `idx_auto_avet_<a>` where format/mentat-v3.md asks, and loads the new
** snapshot on the writer connection inside the transaction.
**
** An attribute defined in a transaction cannot be used in that same
** transaction: ops are checked against the snapshot from before it, so the
** use fails with "unknown attribute" (Datomic behaves the same way).
*/
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tx_int.h"

/* True for the attributes whose datoms define an attribute. */
static int txIsSchemaAttr(sqlite3_int64 a) {
  return a >= ENTID_DB_VALUETYPE && a <= ENTID_DB_NOHISTORY;
}

static int txAppendAdd(Tx *p, sqlite3_int64 e, sqlite3_int64 a, ValueType t, sqlite3_int64 v,
                       int line, int col) {
  const Attr *pAttr = schemaAttr(p->pSchema, a);
  TxOp *pOp;
  int rc;
  if (pAttr == NULL) return txErr(p, 0, 0, "the store's schema lacks core attribute %lld", a);
  rc = txNewOp(p, &pOp);
  if (rc) return rc;
  pOp->eOp = TXOP_ADD;
  pOp->line = line;
  pOp->col = col;
  pOp->e.e = e;
  pOp->pAttr = pAttr;
  pOp->v.type = t;
  pOp->v.i = v;
  return SQLITE_OK;
}

int txSchemaPrepare(Tx *p) {
  int i, j, rc, n = p->nOp;
  for (i = 0; i < n; i++) {
    TxOp *pOp = &p->aOp[i];
    sqlite3_int64 e = pOp->e.e;
    int bIndex = 0, bCard = 0, line = pOp->line, col = pOp->col;
    if (pOp->eOp != TXOP_ADD || pOp->bDrop) continue;
    if (pOp->pAttr->e != ENTID_DB_VALUETYPE && pOp->pAttr->e != ENTID_DB_UNIQUE) continue;
    if (schemaAttr(p->pSchema, e) != NULL) continue;   /* existing attribute */
    for (j = 0; j < p->nOp; j++) {
      const TxOp *q = &p->aOp[j];
      if (q->eOp != TXOP_ADD || q->bDrop || q->e.e != e) continue;
      if (q->pAttr->e == ENTID_DB_INDEX) bIndex = 1;
      if (q->pAttr->e == ENTID_DB_CARDINALITY) bCard = 1;
    }
    if (pOp->pAttr->e == ENTID_DB_UNIQUE && !bIndex) {
      rc = txAppendAdd(p, e, ENTID_DB_INDEX, VT_BOOLEAN, 1, line, col);
      if (rc) return rc;
    }
    if (pOp->pAttr->e == ENTID_DB_VALUETYPE && !bCard) {
      rc = txAppendAdd(p, e, ENTID_DB_CARDINALITY, VT_REF, ENTID_DB_CARD_ONE, line, col);
      if (rc) return rc;
    }
  }
  return SQLITE_OK;
}

int txSchemaCheckOp(Tx *p, const TxOp *pOp) {
  sqlite3_int64 a = pOp->pAttr->e;
  const Attr *pOld;
  if (a != ENTID_DB_IDENT && !txIsSchemaAttr(a)) return SQLITE_OK;
  p->bSchema = 1;
  if (a == ENTID_DB_IDENT) return SQLITE_OK;
  pOld = schemaAttr(p->pSchema, pOp->e.e);
  if (pOld == NULL) return SQLITE_OK;
  if (a == ENTID_DB_VALUETYPE && pOp->eOp == TXOP_ADD) {
    return txErr(p, pOp->line, pOp->col, "cannot change the value type of attribute %s",
                 pOld->zIdent ? pOld->zIdent : "?");
  }
  return txErr(p, pOp->line, pOp->col, "schema alteration of %s (%s%s) is not supported yet",
               pOld->zIdent ? pOld->zIdent : "?", pOp->eOp == TXOP_RETRACT ? "retracting " : "",
               pOp->pAttr->zIdent ? pOp->pAttr->zIdent : "?");
}

static int txCmpEntid(const void *pA, const void *pB) {
  sqlite3_int64 a = *(const sqlite3_int64 *)pA, b = *(const sqlite3_int64 *)pB;
  return a < b ? -1 : (a > b ? 1 : 0);
}

/* Runs zSql (no rows expected) binding ?1 = e. */
static int txExecE(Tx *p, const char *zSql, sqlite3_int64 e) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(p->db, zSql, -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(pStmt, 1, e);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW) rc = SQLITE_OK;
  }
  if (rc != SQLITE_OK) rc = txErr(p, 0, 0, "cannot update the schema tables: %s", sqlite3_errmsg(p->db));
  sqlite3_finalize(pStmt);
  return rc;
}

/* Validates entity e's final definition, rewrites its mirror rows and
** creates its value index when needed. */
static int txSchemaEntity(Tx *p, sqlite3_int64 e) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 aV[ENTID_DB_NOHISTORY + 1];
  int aHas[ENTID_DB_NOHISTORY + 1];
  char zIdent[256] = "";
  int rc, bAttr = 0, i;

  memset(aV, 0, sizeof(aV));
  memset(aHas, 0, sizeof(aHas));
  rc = sqlite3_prepare_v2(p->db,
      "SELECT a, v FROM datoms WHERE e = ?1 AND (a = 1 OR a BETWEEN 7 AND 13)", -1, &pStmt, NULL);
  if (rc) return txErr(p, 0, 0, "%s", sqlite3_errmsg(p->db));
  sqlite3_bind_int64(pStmt, 1, e);
  while (sqlite3_step(pStmt) == SQLITE_ROW) {
    int a = sqlite3_column_int(pStmt, 0);
    if (a < 0 || a > ENTID_DB_NOHISTORY) continue;
    aHas[a] = 1;
    if (a == ENTID_DB_IDENT) {
      sqlite3_snprintf(sizeof(zIdent), zIdent, "%s", (const char *)sqlite3_column_text(pStmt, 1));
    } else {
      aV[a] = sqlite3_column_int64(pStmt, 1);
    }
  }
  rc = sqlite3_finalize(pStmt);
  if (rc) return txErr(p, 0, 0, "%s", sqlite3_errmsg(p->db));
  for (i = ENTID_DB_VALUETYPE; i <= ENTID_DB_NOHISTORY; i++) bAttr |= aHas[i];

  if (bAttr) {
    const char *zName = zIdent[0] ? zIdent : "?";
    if (!aHas[ENTID_DB_IDENT]) {
      return txErr(p, 0, 0, "attribute entity %lld needs a :db/ident", e);
    }
    if (!aHas[ENTID_DB_VALUETYPE]) {
      return txErr(p, 0, 0, "attribute %s needs a :db/valueType", zName);
    }
    if (vtFromTypeEntid(aV[ENTID_DB_VALUETYPE]) == VT_NONE) {
      const char *zType = schemaIdent(p->pSchema, aV[ENTID_DB_VALUETYPE]);
      return txErr(p, 0, 0, "attribute %s: unsupported :db/valueType %s; use one of the :db.type/* "
                   "idents ref, keyword, long, double, string, uuid, boolean, instant, bytes",
                   zName, zType ? zType : "(not a type)");
    }
    if (aHas[ENTID_DB_CARDINALITY] && aV[ENTID_DB_CARDINALITY] != ENTID_DB_CARD_ONE
        && aV[ENTID_DB_CARDINALITY] != ENTID_DB_CARD_MANY) {
      return txErr(p, 0, 0, "attribute %s: :db/cardinality must be :db.cardinality/one or /many", zName);
    }
    if (aHas[ENTID_DB_UNIQUE] && aV[ENTID_DB_UNIQUE] != ENTID_DB_UNIQUE_VALUE
        && aV[ENTID_DB_UNIQUE] != ENTID_DB_UNIQUE_IDENTITY) {
      return txErr(p, 0, 0, "attribute %s: :db/unique must be :db.unique/value or :db.unique/identity", zName);
    }
    if (aHas[ENTID_DB_FULLTEXT] && aV[ENTID_DB_FULLTEXT]
        && vtFromTypeEntid(aV[ENTID_DB_VALUETYPE]) != VT_STRING) {
      return txErr(p, 0, 0, "attribute %s: :db/fulltext needs :db.type/string", zName);
    }
  }

  rc = txExecE(p, "DELETE FROM idents WHERE e = ?1", e);
  if (rc == SQLITE_OK) rc = txExecE(p,
      "INSERT INTO idents (e, a, v, value_type_tag) "
      "SELECT e, a, v, value_type_tag FROM datoms WHERE e = ?1 AND a = 1", e);
  if (rc == SQLITE_OK) rc = txExecE(p, "DELETE FROM schema WHERE e = ?1", e);
  if (rc == SQLITE_OK && bAttr) rc = txExecE(p,
      "INSERT INTO schema (e, a, v, value_type_tag) "
      "SELECT e, a, v, value_type_tag FROM datoms WHERE e = ?1 AND a BETWEEN 7 AND 12", e);
  if (rc) return rc;

  if (bAttr && e >= PART_USER_START && !(aHas[ENTID_DB_FULLTEXT] && aV[ENTID_DB_FULLTEXT])
      && ((aHas[ENTID_DB_UNIQUE])
          || (aHas[ENTID_DB_INDEX] && aV[ENTID_DB_INDEX]
              && vtFromTypeEntid(aV[ENTID_DB_VALUETYPE]) == VT_REF))) {
    char *zSql = sqlite3_mprintf(
        "CREATE INDEX IF NOT EXISTS idx_auto_avet_%lld ON datoms (a, v, e) WHERE a = %lld", e, e);
    char *zName = sqlite3_mprintf("idx_auto_avet_%lld", e);
    if (zSql == NULL || zName == NULL) {
      rc = SQLITE_NOMEM;
    } else {
      rc = sqlite3_exec(p->db, zSql, NULL, NULL, NULL);
      if (rc == SQLITE_OK) {
        rc = sqlite3_prepare_v2(p->db,
            "INSERT OR IGNORE INTO mentat_managed_indexes (name, a, created, last_used, kind) "
            "VALUES (?1, ?2, ?3, ?3, 'schema')", -1, &pStmt, NULL);
        if (rc == SQLITE_OK) {
          sqlite3_bind_text(pStmt, 1, zName, -1, SQLITE_STATIC);
          sqlite3_bind_int64(pStmt, 2, e);
          sqlite3_bind_int64(pStmt, 3, (sqlite3_int64)time(NULL));
          rc = sqlite3_step(pStmt);
          if (rc == SQLITE_DONE) rc = SQLITE_OK;
        }
        sqlite3_finalize(pStmt);
      }
      if (rc != SQLITE_OK) rc = txErr(p, 0, 0, "cannot create index %s: %s", zName, sqlite3_errmsg(p->db));
    }
    sqlite3_free(zSql);
    sqlite3_free(zName);
  }
  return rc;
}

int txSchemaFinish(Tx *p, Schema **ppNew) {
  sqlite3_int64 *aE;
  int i, n = 0, rc = SQLITE_OK;
  aE = sqlite3_malloc64((sqlite3_uint64)(p->nOp ? p->nOp : 1) * sizeof(sqlite3_int64));
  if (aE == NULL) return SQLITE_NOMEM;
  for (i = 0; i < p->nOp; i++) {
    const TxOp *pOp = &p->aOp[i];
    if (pOp->bDrop || (pOp->eOp != TXOP_ADD && pOp->eOp != TXOP_RETRACT)) continue;
    if (pOp->pAttr->e == ENTID_DB_IDENT || txIsSchemaAttr(pOp->pAttr->e)) aE[n++] = pOp->e.e;
  }
  qsort(aE, (size_t)n, sizeof(sqlite3_int64), txCmpEntid);
  for (i = 0; i < n && rc == SQLITE_OK; i++) {
    if (i > 0 && aE[i] == aE[i - 1]) continue;
    rc = txSchemaEntity(p, aE[i]);
  }
  sqlite3_free(aE);
  if (rc == SQLITE_OK) rc = schemaLoad(p->db, ppNew, p->pzErr);
  return rc;
}
