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
** for every datom that will really change: of an existing attribute's
** definition, the value type and fulltext flag cannot change (Datomic).
** txSchemaFinish validates the touched entities' final state; for an
** altered attribute it checks the stored values allow the change (many ->
** one, a new :db/unique) and rewrites the flag columns of its datoms; it
** rewrites their mirror rows, creates or drops `idx_auto_avet_<a>` where
** format/mentat-v3.md asks, and loads the new snapshot on the writer
** connection inside the transaction.
**
** An attribute defined in a transaction cannot be used in that same
** transaction: ops are checked against the snapshot from before it, so the
** use fails with "unknown attribute" (Datomic behaves the same way).
*/
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "tx_context.h"

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
    const Attr *pOld;
    if (pOp->eOp != TXOP_ADD || pOp->bDrop) continue;
    if (pOp->pAttr->e != ENTID_DB_VALUETYPE && pOp->pAttr->e != ENTID_DB_UNIQUE) continue;
    pOld = schemaAttr(p->pSchema, e);
    /* An existing attribute keeps its cardinality; one becoming unique gets
    ** the implied :db/index like a new one (unless it is indexed already). */
    if (pOld != NULL && (pOp->pAttr->e == ENTID_DB_VALUETYPE || pOld->bIndex)) continue;
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
  if (rc != SQLITE_OK) rc = txSqlErr(p, "cannot update the schema tables: ");
  sqlite3_finalize(pStmt);
  return rc;
}

/* Runs zSql binding ?1 = e; *pbRow says whether it gave a row, whose
** columns 0 and 1 go to *pi0 and *pi1 (either may be NULL). */
static int txProbeE(Tx *p, const char *zSql, sqlite3_int64 e, int *pbRow,
                    sqlite3_int64 *pi0, sqlite3_int64 *pi1) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(p->db, zSql, -1, &pStmt, NULL);
  *pbRow = 0;
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(pStmt, 1, e);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) {
      *pbRow = 1;
      if (pi0) *pi0 = sqlite3_column_int64(pStmt, 0);
      if (pi1) *pi1 = sqlite3_column_int64(pStmt, 1);
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
    }
  }
  if (rc != SQLITE_OK) rc = txSqlErr(p, "cannot check the attribute's values: ");
  sqlite3_finalize(pStmt);
  return rc;
}

/* txErr at the first form of this transaction that states something about
** entity e (the definition being checked; no place when none does). The
** forms are searched only for an error, not for every attribute checked. */
static int txErrAtEntity(Tx *p, sqlite3_int64 e, const char *zFmt, ...) {
  int i, line = 0, col = 0, rc;
  va_list ap;
  char *zMsg;
  for (i = 0; i < p->nOp; i++) {
    if (p->aOp[i].e.eKind == TXP_ENTID && p->aOp[i].e.e == e) {
      line = p->aOp[i].line;
      col = p->aOp[i].col;
      break;
    }
  }
  va_start(ap, zFmt);
  zMsg = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  if (zMsg == NULL) return SQLITE_NOMEM;
  rc = txErr(p, line, col, "%s", zMsg);
  sqlite3_free(zMsg);
  return rc;
}

/* An existing attribute's definition changed from pOld to (bMany, eUnique,
** bIndex): checks the stored values allow it — as Datomic does, a switch to
** cardinality one needs no entity with two values and a new :db/unique
** needs the values unique — then rewrites the flag columns of its datoms
** (index_avet, unique_value; format/mentat-v3.md) to the new definition.
** Runs after the transaction's own datoms are written, so they count. */
static int txAlter(Tx *p, const Attr *pOld, const char *zName, int bMany, int eUnique, int bIndex) {
  sqlite3_int64 e = pOld->e, x0 = 0, x1 = 0;
  int rc = SQLITE_OK, bRow = 0;
  int bAvetOld = pOld->bIndex || pOld->eUnique != UNIQUE_NONE;
  int bAvetNew = bIndex || eUnique != UNIQUE_NONE;

  if (pOld->bMany && !bMany) {
    rc = txProbeE(p, "SELECT e, count(*) FROM datoms WHERE a = ?1 GROUP BY e HAVING count(*) > 1"
                     " LIMIT 1", e, &bRow, &x0, &x1);
    if (rc) return rc;
    if (bRow) {
      return txErrAtEntity(p, e, "cannot change %s to :db.cardinality/one: entity %lld has %lld values",
                   zName, x0, x1);
    }
  }
  if (pOld->eUnique == UNIQUE_NONE && eUnique != UNIQUE_NONE) {
    rc = txProbeE(p, "SELECT min(e), max(e) FROM datoms WHERE a = ?1 GROUP BY value_type_tag, v"
                     " HAVING count(*) > 1 LIMIT 1", e, &bRow, &x0, &x1);
    if (rc) return rc;
    if (bRow) {
      return txErrAtEntity(p, e, "cannot make %s :db/unique: entities %lld and %lld hold the same value",
                   zName, x0, x1);
    }
  }
  if (bAvetOld != bAvetNew || (pOld->eUnique != UNIQUE_NONE) != (eUnique != UNIQUE_NONE)) {
    char *zSql = sqlite3_mprintf("UPDATE datoms SET index_avet = %d, unique_value = %d WHERE a = ?1",
                                 bAvetNew, eUnique != UNIQUE_NONE);
    if (zSql == NULL) return SQLITE_NOMEM;
    rc = txExecE(p, zSql, e);
    sqlite3_free(zSql);
  }
  return rc;
}

/* Keeps idx_auto_avet_<e> (format/mentat-v3.md, kind 'schema') in step
** with the attribute's definition: created and recorded when bWant, dropped
** and unrecorded when it was a schema index and no longer qualifies. */
static int txValueIndex(Tx *p, sqlite3_int64 e, int bWant) {
  sqlite3_stmt *pStmt = NULL;
  char *zName = sqlite3_mprintf("idx_auto_avet_%lld", e);
  char *zSql = NULL;
  int rc = SQLITE_OK, bRow = 0;
  if (zName == NULL) return SQLITE_NOMEM;
  if (bWant) {
    /* The entid is a schema constant, inlined so the partial index matches
    ** the SQL that names it. */
    /* On a host store the index goes to the store's database (SPEC §3a). */
    const char *zDb = p->pConn->zHostDb;
    zSql = sqlite3_mprintf("CREATE INDEX IF NOT EXISTS %s%w%s%s ON datoms (a, v, e) WHERE a = %lld",
                           zDb ? "\"" : "", zDb ? zDb : "", zDb ? "\"." : "", zName, e);
    if (zSql == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
    rc = sqlite3_exec(p->db, zSql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
      rc = sqlite3_prepare_v2(p->db,
          "INSERT OR IGNORE INTO mentat_managed_indexes (name, a, created, last_used, kind) "
          "VALUES (?1, ?2, ?3, ?3, 'schema')", -1, &pStmt, NULL);
    }
    if (rc == SQLITE_OK) {
      sqlite3_bind_text(pStmt, 1, zName, -1, SQLITE_STATIC);
      sqlite3_bind_int64(pStmt, 2, e);
      sqlite3_bind_int64(pStmt, 3, configWallUs() / 1000000);
      rc = sqlite3_step(pStmt);
      if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK) rc = txSqlErr(p, "cannot create the attribute's value index: ");
    goto cleanup;
  }
  /* Only an index this module recorded as the schema's is dropped; an
  ** adaptive one of the same attribute belongs to the query side. */
  rc = sqlite3_prepare_v2(p->db,
      "SELECT 1 FROM mentat_managed_indexes WHERE name = ?1 AND kind = 'schema'", -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(pStmt, 1, zName, -1, SQLITE_STATIC);
    rc = sqlite3_step(pStmt);
    bRow = rc == SQLITE_ROW;
    rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK : rc;
  }
  sqlite3_finalize(pStmt);
  pStmt = NULL;
  if (rc != SQLITE_OK) { rc = txSqlErr(p, "cannot read mentat_managed_indexes: "); goto cleanup; }
  if (!bRow) goto cleanup;
  zSql = sqlite3_mprintf("DROP INDEX IF EXISTS %s", zName);
  if (zSql == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  rc = sqlite3_exec(p->db, zSql, NULL, NULL, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v2(p->db, "DELETE FROM mentat_managed_indexes WHERE name = ?1", -1, &pStmt, NULL);
  }
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(pStmt, 1, zName, -1, SQLITE_STATIC);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  if (rc != SQLITE_OK) rc = txSqlErr(p, "cannot drop the attribute's value index: ");
cleanup:
  sqlite3_finalize(pStmt);
  sqlite3_free(zSql);
  sqlite3_free(zName);
  return rc;
}

/* Validates entity e's final definition, applies a changed definition to
** the stored datoms, rewrites its mirror rows and keeps its value index. */
static int txSchemaEntity(Tx *p, sqlite3_int64 e) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 aV[ENTID_DB_NOHISTORY + 1];
  int aHas[ENTID_DB_NOHISTORY + 1];
  char zIdent[256] = "";
  const Attr *pOld = schemaAttr(p->pSchema, e);
  int rc, bAttr = 0, i, bMany, eUnique, bIndex, bFulltext;
  ValueType type;

  memset(aV, 0, sizeof(aV));
  memset(aHas, 0, sizeof(aHas));
  rc = sqlite3_prepare_v2(p->db,
      "SELECT a, v FROM datoms WHERE e = ?1 AND (a = 1 OR a BETWEEN 7 AND 13)", -1, &pStmt, NULL);
  if (rc) return txSqlErr(p, NULL);
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
  if (rc) return txSqlErr(p, NULL);
  for (i = ENTID_DB_VALUETYPE; i <= ENTID_DB_NOHISTORY; i++) bAttr |= aHas[i];
  type = vtFromTypeEntid(aV[ENTID_DB_VALUETYPE]);
  bMany = aHas[ENTID_DB_CARDINALITY] && aV[ENTID_DB_CARDINALITY] == ENTID_DB_CARD_MANY;
  eUnique = !aHas[ENTID_DB_UNIQUE] ? UNIQUE_NONE
            : aV[ENTID_DB_UNIQUE] == ENTID_DB_UNIQUE_IDENTITY ? UNIQUE_IDENTITY : UNIQUE_VALUE;
  bIndex = aHas[ENTID_DB_INDEX] && aV[ENTID_DB_INDEX];
  bFulltext = aHas[ENTID_DB_FULLTEXT] && aV[ENTID_DB_FULLTEXT];

  if (bAttr) {
    const char *zName = zIdent[0] ? zIdent : "?";
    if (!aHas[ENTID_DB_IDENT]) {
      return txErrAtEntity(p, e, "attribute entity %lld needs a :db/ident", e);
    }
    if (!aHas[ENTID_DB_VALUETYPE]) {
      return txErrAtEntity(p, e, "attribute %s needs a :db/valueType", zName);
    }
    {
      int bTuple = 0;
      rc = txTupleCheckDef(p, e, zName, aV[ENTID_DB_VALUETYPE], bMany, &bTuple);
      if (rc == SQLITE_ERROR && *p->pzErr) {
        char *zMsg = sqlite3_mprintf("%s", *p->pzErr);
        if (zMsg == NULL) return SQLITE_NOMEM;
        rc = txErrAtEntity(p, e, "%s", zMsg);
        sqlite3_free(zMsg);
      }
      if (rc) return rc;
      if (bTuple) type = VT_TUPLE;
    }
    if (type == VT_NONE) {
      const char *zType = schemaIdent(p->pSchema, aV[ENTID_DB_VALUETYPE]);
      return txErrAtEntity(p, e, "attribute %s: unsupported :db/valueType %s; use one of the :db.type/* "
                   "idents ref, keyword, long, double, string, uuid, boolean, instant, bytes",
                   zName, zType ? zType : "(not a type)");
    }
    if (aHas[ENTID_DB_CARDINALITY] && aV[ENTID_DB_CARDINALITY] != ENTID_DB_CARD_ONE
        && aV[ENTID_DB_CARDINALITY] != ENTID_DB_CARD_MANY) {
      return txErrAtEntity(p, e, "attribute %s: :db/cardinality must be :db.cardinality/one or /many", zName);
    }
    if (aHas[ENTID_DB_UNIQUE] && aV[ENTID_DB_UNIQUE] != ENTID_DB_UNIQUE_VALUE
        && aV[ENTID_DB_UNIQUE] != ENTID_DB_UNIQUE_IDENTITY) {
      return txErrAtEntity(p, e, "attribute %s: :db/unique must be :db.unique/value or :db.unique/identity",
                           zName);
    }
    if (bFulltext && type != VT_STRING) {
      return txErrAtEntity(p, e, "attribute %s: :db/fulltext needs :db.type/string", zName);
    }
    if (aHas[ENTID_DB_ISCOMPONENT] && aV[ENTID_DB_ISCOMPONENT] && type != VT_REF) {
      return txErrAtEntity(p, e, "attribute %s: :db/isComponent needs :db.type/ref", zName);
    }
    if (pOld != NULL) {
      rc = txAlter(p, pOld, zName, bMany, eUnique, bIndex);
      if (rc) return rc;
    }
    if (pOld != NULL && !pOld->bNoHistory && aHas[ENTID_DB_NOHISTORY] && aV[ENTID_DB_NOHISTORY]) {
      /* :db/noHistory turned on: the attribute's past values leave the
      ** log (Datomic keeps none); each current datom keeps the log row
      ** that asserted it, so every database view still sees it. Runs after
      ** this transaction's datoms are written, so they count. */
      rc = txExecE(p,
          "DELETE FROM timelined_transactions WHERE a = ?1 AND timeline IS 0 AND NOT (added = 1"
          " AND EXISTS (SELECT 1 FROM datoms d WHERE d.e = timelined_transactions.e AND d.a = ?1"
          " AND d.value_type_tag = timelined_transactions.value_type_tag"
          " AND d.v = timelined_transactions.v AND d.tx = timelined_transactions.tx))", e);
      if (rc) return rc;
    }
  }

  rc = txExecE(p, "DELETE FROM idents WHERE e = ?1", e);
  if (rc == SQLITE_OK) rc = txExecE(p,
      "INSERT INTO idents (e, a, v, value_type_tag) "
      "SELECT e, a, v, value_type_tag FROM datoms WHERE e = ?1 AND a = 1", e);
  if (rc == SQLITE_OK) rc = txExecE(p, "DELETE FROM schema WHERE e = ?1", e);
  if (rc == SQLITE_OK && bAttr) rc = txExecE(p,
      type == VT_TUPLE
      /* the Rust engine knows no tuple type: its mirror row says bytes */
      ? "INSERT INTO schema (e, a, v, value_type_tag) "
        "SELECT e, a, CASE a WHEN 7 THEN 32 ELSE v END, value_type_tag FROM datoms"
        " WHERE e = ?1 AND a BETWEEN 7 AND 12"
      : "INSERT INTO schema (e, a, v, value_type_tag) "
        "SELECT e, a, v, value_type_tag FROM datoms WHERE e = ?1 AND a BETWEEN 7 AND 12", e);
  if (rc) return rc;

  if (e >= PART_USER_START && (bAttr || pOld != NULL)) {
    rc = txValueIndex(p, e, bAttr && !bFulltext
                            && (eUnique != UNIQUE_NONE || (bIndex && type == VT_REF)));
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
    if (pOp->pAttr->e == ENTID_DB_IDENT || txIsSchemaAttr(pOp->pAttr->e)
        || txTupleMetaKind(p, pOp->pAttr)) aE[n++] = pOp->e.e;
  }
  qsort(aE, (size_t)n, sizeof(sqlite3_int64), txCmpEntid);
  for (i = 0; i < n && rc == SQLITE_OK; i++) {
    if (i > 0 && aE[i] == aE[i - 1]) continue;
    rc = txSchemaEntity(p, aE[i]);
  }
  sqlite3_free(aE);
  if (rc == SQLITE_OK) rc = storeSchemaLoad(p->db, ppNew, p->pzErr);
  return rc;
}
