/*
** tx_tuple.c — the transactor's tuple attributes: the tuple vocabulary's
** install, tuple values from EDN, composite tuples kept from their
** components (Datomic's :db/tupleAttrs), and the rules of a tuple
** attribute's definition.
**
** Takes in the Tx after each stage named in tx_context.h; gives out ops
** (derived composite values), errors, and the installed vocabulary; calls
** the context (tx_context.c), value_tuple.c and the store's schema loader.
**
** HOW IT WORKS
** The format's bootstrap has no tuple idents, so the first transaction
** that names :db.type/tuple, :db/tupleAttrs, :db/tupleTypes or
** :db/tupleType on a store without them installs them in :db.part/db as
** datoms of that same transaction (so a failing one leaves nothing) and
** reloads the snapshot. A tuple attribute's :db/valueType datom names
** :db.type/tuple, but its `schema` mirror row says :db.type/bytes: the
** Rust engine reads such a store and sees opaque bytes (value_tuple.c has
** the encoding). A composite is never asserted by the user (Datomic): after
** the ops are resolved, every entity whose component attributes an op
** touches gets its composite recomputed from the store (as it was before
** the transaction) and the ops: an asserted value wins, a retracted one
** becomes nil, and a composite all nil is retracted (DataScript's rule).
** Upserts through a :db.unique/identity composite need the value before
** tempids resolve: for each new entity the composite of its own asserted
** component values is added as an identity op for txResolve, which
** recomputes its value as the refs among them resolve (upserts cascade
** through it, txTupleValueNow), then dropped and derived again afterwards.
*/
#include <stdlib.h>
#include <string.h>
#include "tx_context.h"

static const char *const azTupleMeta[] = {
  SCHEMA_TUPLE_ATTRS, SCHEMA_TUPLE_TYPES, SCHEMA_TUPLE_TYPE, SCHEMA_TYPE_TUPLE
};

/* Does the tree name a tuple vocabulary keyword? (The reader caps depth.) */
static int txTupleNamed(const EdnValue *pV) {
  int i;
  switch (pV->type) {
    case EDN_KEYWORD:
      for (i = 0; i < 4; i++) if (strcmp(pV->u.s.z, azTupleMeta[i]) == 0) return 1;
      return 0;
    case EDN_LIST: case EDN_VECTOR: case EDN_MAP: case EDN_SET:
      for (i = 0; i < pV->u.c.n; i++) if (txTupleNamed(pV->u.c.a[i])) return 1;
      return 0;
    case EDN_TAGGED:
      return pV->u.t.p ? txTupleNamed(pV->u.t.p) : 0;
    default:
      return 0;
  }
}

/* One datom of the install and its log row. */
static int txTupleDatom(Tx *p, sqlite3_stmt *pIns, sqlite3_stmt *pLog, sqlite3_int64 e,
                        sqlite3_int64 a, const char *zKw, sqlite3_int64 iRef) {
  int rc, k;
  for (k = 0; k < 2; k++) {
    sqlite3_stmt *pStmt = k ? pLog : pIns;
    sqlite3_bind_int64(pStmt, 1, e);
    sqlite3_bind_int64(pStmt, 2, a);
    if (zKw) sqlite3_bind_text(pStmt, 3, zKw, -1, SQLITE_STATIC);
    else sqlite3_bind_int64(pStmt, 3, iRef);
    sqlite3_bind_int64(pStmt, 4, p->iTx);
    sqlite3_bind_int(pStmt, 5, zKw ? TAG_KEYWORD : TAG_REF);
    if (k == 0) {
      sqlite3_bind_int(pStmt, 6, zKw != NULL);   /* :db/ident: indexed, unique */
      sqlite3_bind_int(pStmt, 7, zKw == NULL);   /* refs: VAET */
    }
    rc = sqlite3_step(pStmt);
    sqlite3_reset(pStmt);
    if (rc != SQLITE_DONE) return txSqlErr(p, "cannot install the tuple attributes: ");
    if (k == 0) storeWriteNoteDatoms(p->pConn->pStore, sqlite3_last_insert_rowid(p->db), 1);
  }
  return SQLITE_OK;
}

static int txTupleExec(Tx *p, const char *zSql, sqlite3_int64 e) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(p->db, zSql, -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(pStmt, 1, e);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  sqlite3_finalize(pStmt);
  return rc == SQLITE_OK ? rc : txSqlErr(p, "cannot install the tuple attributes: ");
}

int txTupleInstall(Tx *p) {
  /* :db/tupleAttrs and :db/tupleTypes hold keyword tuples (bytes in the
  ** mirror), :db/tupleType a keyword; all cardinality one. */
  static const sqlite3_int64 aType[4] = { ENTID_DB_TYPE_BYTES, ENTID_DB_TYPE_BYTES, 24, 0 };
  sqlite3_stmt *pIns = NULL, *pLog = NULL;
  TxPart *pDb = &p->aPart[p->iPartDb];
  int i, rc;
  if (schemaEntid(p->pSchema, SCHEMA_TYPE_TUPLE, (int)strlen(SCHEMA_TYPE_TUPLE)) != 0) return SQLITE_OK;
  if (!txTupleNamed(p->pRoot)) return SQLITE_OK;
  if (!txPartRoom(pDb, 4)) return txErr(p, 0, 0, "partition :db.part/db is full");
  /* a schema change: undone by a savepoint (storeWriteUndoPoint) */
  rc = storeWriteUndoPoint(p->pConn, 1, p->pzErr);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_prepare_v2(p->db,
      "INSERT INTO datoms (e, a, v, tx, value_type_tag, index_avet, index_vaet, index_fulltext,"
      " unique_value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?6)", -1, &pIns, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(p->db,
      "INSERT INTO timelined_transactions (e, a, v, tx, added, value_type_tag)"
      " VALUES (?1, ?2, ?3, ?4, 1, ?5)", -1, &pLog, NULL);
  if (rc != SQLITE_OK) { rc = txSqlErr(p, "cannot install the tuple attributes: "); goto done; }
  for (i = 0; i < 4 && rc == SQLITE_OK; i++) {
    sqlite3_int64 e = pDb->iIdx++;
    pDb->bDirty = 1;
    rc = txTupleDatom(p, pIns, pLog, e, ENTID_DB_IDENT, azTupleMeta[i], 0);
    if (rc == SQLITE_OK && aType[i]) {
      rc = txTupleDatom(p, pIns, pLog, e, ENTID_DB_VALUETYPE, NULL, aType[i]);
      if (rc == SQLITE_OK) rc = txTupleDatom(p, pIns, pLog, e, ENTID_DB_CARDINALITY, NULL, ENTID_DB_CARD_ONE);
    }
    if (rc == SQLITE_OK) rc = txTupleExec(p, "INSERT INTO idents (e, a, v, value_type_tag)"
        " SELECT e, a, v, value_type_tag FROM datoms WHERE e = ?1 AND a = 1", e);
    if (rc == SQLITE_OK && aType[i]) rc = txTupleExec(p, "INSERT INTO schema (e, a, v, value_type_tag)"
        " SELECT e, a, v, value_type_tag FROM datoms WHERE e = ?1 AND a BETWEEN 7 AND 12", e);
  }
  if (rc == SQLITE_OK) rc = storeSchemaLoad(p->db, &p->pTupleSchema, p->pzErr);
  if (rc == SQLITE_OK) {
    p->pSchema = p->pTupleSchema;
    p->bSchema = 1;
  }
done:
  sqlite3_finalize(pIns);
  sqlite3_finalize(pLog);
  return rc;
}

/* The entity lookup ref pRef ([:attr value], its value converted by
** txTupleValue, so nested ones too) names, now, into *pE: a tuple element
** the ref needs before the tuple can be encoded. An error when it names none. */
static int txTupleRefNow(Tx *p, const EdnValue *pRef, sqlite3_int64 *pE) {
  const EdnValue *pA = pRef->u.c.a[0];
  const Attr *pAttr = pA->type == EDN_KEYWORD ? schemaAttrByIdent(p->pSchema, pA->u.s.z, pA->u.s.n) : NULL;
  sqlite3_stmt *pStmt = NULL;
  TypedValue v;
  int rc;
  if (pAttr == NULL || pAttr->eUnique == UNIQUE_NONE) {
    return txErr(p, pRef->line, pRef->col, "a lookup ref needs a :db/unique attribute keyword first");
  }
  rc = txTupleValue(p, pRef->u.c.a[1], pAttr, pA->u.s.z, &v);
  if (rc == SQLITE_OK) rc = txStmt(p, TXS_LOOKUP_UNIQUE, &pStmt);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_int64(pStmt, 1, pAttr->e);
  sqlite3_bind_int(pStmt, 2, vtTag(pAttr->type));
  rc = valueBind(pStmt, 3, &v);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) *pE = sqlite3_column_int64(pStmt, 0);
  sqlite3_reset(pStmt);
  if (rc == SQLITE_ROW) return SQLITE_OK;
  if (rc != SQLITE_DONE) return txSqlErr(p, "lookup failed: ");
  return txLookupUnresolved(p, pRef);
}

/* Tuple pV with its ref elements that are lookup refs or idents replaced by
** their entity ids (DataScript's lookup-refs-in-tuple) into *ppOut, in the
** transaction's arena; pV itself when it has none. */
static int txTupleRefs(Tx *p, const EdnValue *pV, const Attr *pAttr, const EdnValue **ppOut) {
  EdnValue *pCopy = NULL;
  int i, rc = SQLITE_OK;
  *ppOut = pV;
  if (pV->type != EDN_VECTOR || pAttr->tuple.nFixed != pV->u.c.n) return SQLITE_OK;
  for (i = 0; i < pV->u.c.n && rc == SQLITE_OK; i++) {
    const EdnValue *pE = pV->u.c.a[i];
    sqlite3_int64 e = 0;
    if (pAttr->tuple.aType[i] != VT_REF) continue;
    if (pE->type == EDN_VECTOR && pE->u.c.n == 2) {
      rc = txTupleRefNow(p, pE, &e);
    } else if (pE->type == EDN_KEYWORD) {
      e = schemaEntid(p->pSchema, pE->u.s.z, pE->u.s.n);
      if (e == 0) rc = txErr(p, pE->line, pE->col, "unknown ident %s", pE->u.s.z);
    } else {
      continue;
    }
    if (rc == SQLITE_OK && pCopy == NULL) {
      pCopy = ednNewColl(p->pArena, EDN_VECTOR, pV->u.c.n);
      if (pCopy == NULL) return SQLITE_NOMEM;
      pCopy->line = pV->line;
      pCopy->col = pV->col;
      memcpy(pCopy->u.c.a, pV->u.c.a, sizeof(EdnValue *) * (size_t)pV->u.c.n);
    }
    if (rc == SQLITE_OK && (pCopy->u.c.a[i] = ednNewInt(p->pArena, e)) == NULL) rc = SQLITE_NOMEM;
  }
  if (pCopy) *ppOut = pCopy;
  return rc;
}

int txTupleValue(Tx *p, const EdnValue *pV, const Attr *pAttr, const char *zAttr, TypedValue *pOut) {
  char *zErr = NULL;
  const EdnValue *pAt = pV;
  int rc;
  if (pAttr->type == VT_TUPLE) {
    rc = txTupleRefs(p, pV, pAttr, &pV);
    if (rc != SQLITE_OK) return rc;
    pAt = pV;
  }
  if (pAttr->type == VT_TUPLE) rc = valueTupleFromEdn(pV, &pAttr->tuple, p->pArena, pOut, &zErr, &pAt);
  else rc = valueFromEdn(pV, pAttr->type, pOut, &zErr);
  if (rc == SQLITE_ERROR) rc = txErr(p, pAt->line, pAt->col, "%s: %s", zAttr, zErr ? zErr : "bad value");
  sqlite3_free(zErr);
  return rc;
}

int txTupleDirect(Tx *p, const Attr *pAttr, const EdnValue *pK) {
  if (pAttr == NULL || pAttr->eTuple != TUPLE_COMPOSITE) return SQLITE_OK;
  return txErr(p, pK->line, pK->col, "%s is a composite tuple kept from its :db/tupleAttrs; "
               "assert or retract those attributes instead", pAttr->zIdent ? pAttr->zIdent : "?");
}

/* ---- composites ------------------------------------------------------- */

/* An op on a component attribute, keyed by entity (entid, or tempid root
** before resolution) and attribute. */
typedef struct TxTupCand { sqlite3_int64 e, a; int iOp; } TxTupCand;

static int txTupCandCmp(const void *pA, const void *pB) {
  const TxTupCand *a = pA, *b = pB;
  if (a->e != b->e) return a->e < b->e ? -1 : 1;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return a->iOp < b->iOp ? -1 : (a->iOp > b->iOp ? 1 : 0);
}

/* The composite attributes of the snapshot (bIdentity: only the
** :db.unique/identity ones) in a new array *paOut of *pn; NULL when none. */
static int txTupleComposites(Tx *p, int bIdentity, const Attr ***paOut, int *pn) {
  int i, n = 0, nAttr = schemaAttrCount(p->pSchema);
  *paOut = NULL;
  *pn = 0;
  for (i = 0; i < nAttr; i++) {
    const Attr *pA = schemaAttrAt(p->pSchema, i);
    if (pA->eTuple == TUPLE_COMPOSITE && (!bIdentity || pA->eUnique == UNIQUE_IDENTITY)) n++;
  }
  if (n == 0) return SQLITE_OK;
  *paOut = sqlite3_malloc64(sizeof(Attr *) * (sqlite3_uint64)n);
  if (*paOut == NULL) return SQLITE_NOMEM;
  for (i = 0; i < nAttr; i++) {
    const Attr *pA = schemaAttrAt(p->pSchema, i);
    if (pA->eTuple == TUPLE_COMPOSITE && (!bIdentity || pA->eUnique == UNIQUE_IDENTITY)) {
      (*paOut)[(*pn)++] = pA;
    }
  }
  return SQLITE_OK;
}

/* The candidates: live ops on component attributes; before resolution
** (bTemp) only ADDs on tempids, keyed by the tempid's root. */
static int txTupleCands(Tx *p, int bTemp, TxTupCand **paOut, int *pn) {
  int i, n = 0;
  *paOut = NULL;
  *pn = 0;
  for (i = 0; i < p->nOp; i++) {
    const TxOp *pOp = &p->aOp[i];
    if (pOp->bDrop || pOp->pAttr == NULL || !pOp->pAttr->bTupleSource) continue;
    if (bTemp ? (pOp->eOp != TXOP_ADD || pOp->e.eKind != TXP_TEMP)
              : (pOp->eOp != TXOP_ADD && pOp->eOp != TXOP_RETRACT)) continue;
    n++;
  }
  if (n == 0) return SQLITE_OK;
  *paOut = sqlite3_malloc64(sizeof(TxTupCand) * (sqlite3_uint64)n);
  if (*paOut == NULL) return SQLITE_NOMEM;
  for (i = 0; i < p->nOp; i++) {
    const TxOp *pOp = &p->aOp[i];
    TxTupCand *c;
    if (pOp->bDrop || pOp->pAttr == NULL || !pOp->pAttr->bTupleSource) continue;
    if (bTemp ? (pOp->eOp != TXOP_ADD || pOp->e.eKind != TXP_TEMP)
              : (pOp->eOp != TXOP_ADD && pOp->eOp != TXOP_RETRACT)) continue;
    c = &(*paOut)[(*pn)++];
    c->e = bTemp ? txTempRoot(p, pOp->e.iTemp) : pOp->e.e;
    c->a = pOp->pAttr->e;
    c->iOp = i;
  }
  qsort(*paOut, (size_t)*pn, sizeof(TxTupCand), txTupCandCmp);
  return SQLITE_OK;
}

/* Does candidate group a[0..n) touch a component of pC? */
static int txTupleTouches(const TxTupCand *a, int n, const Attr *pC) {
  int i, k;
  for (i = 0; i < n; i++) {
    for (k = 0; k < pC->tuple.nFixed; k++) if (a[i].a == pC->aTupleAttr[k]) return 1;
  }
  return 0;
}

/* Appends a derived op on composite pC for the entity of op iAt. */
static int txTupleAddOp(Tx *p, int eOp, int iAt, const Attr *pC, const TypedValue *aElem, int n,
                        const TypedValue *pStored) {
  TxOp *pOp;
  TxPlace e = p->aOp[iAt].e;
  int line = p->aOp[iAt].line, col = p->aOp[iAt].col, rc;
  TypedValue v;
  memset(&v, 0, sizeof(v));
  if (pStored) {
    v = *pStored;
  } else {
    sqlite3_str *pStr = sqlite3_str_new(p->db);
    char *z;
    valueTupleEncode(pStr, aElem, n);
    v.n = sqlite3_str_length(pStr);
    z = sqlite3_str_finish(pStr);
    if (z == NULL) return SQLITE_NOMEM;
    v.z = ednArenaStrdup(p->pArena, z, v.n);
    sqlite3_free(z);
    if (v.z == NULL) return SQLITE_NOMEM;
  }
  v.type = VT_TUPLE;
  rc = txNewOp(p, &pOp);
  if (rc) return rc;
  pOp->eOp = (unsigned char)eOp;
  pOp->line = line;
  pOp->col = col;
  pOp->e = e;
  pOp->pAttr = pC;
  pOp->v = v;
  pOp->bTupleDerived = 1;
  return SQLITE_OK;
}

int txTupleUpsertOps(Tx *p) {
  const Attr **apC = NULL;
  TxTupCand *a = NULL;
  int nC = 0, n = 0, i, j, c, k, rc;
  rc = txTupleComposites(p, 1, &apC, &nC);
  if (rc == SQLITE_OK && nC) rc = txTupleCands(p, 1, &a, &n);
  for (i = 0; rc == SQLITE_OK && i < n; i = j) {
    for (j = i + 1; j < n && a[j].e == a[i].e; j++) {}
    for (c = 0; rc == SQLITE_OK && c < nC; c++) {
      int *aSrc, g;
      TxOp *pNew;
      TypedValue v;
      if (!txTupleTouches(a + i, j - i, apC[c])) continue;
      aSrc = ednArenaAlloc(p->pArena, sizeof(int) * VALUE_TUPLE_MAX);
      if (aSrc == NULL) { rc = SQLITE_NOMEM; break; }
      for (k = 0; k < apC[c]->tuple.nFixed; k++) {
        for (g = i; g < j && a[g].a != apC[c]->aTupleAttr[k]; g++) {}
        aSrc[k] = g == j ? -1 : a[g].iOp;   /* not given: nil */
      }
      rc = txTupleAddOp(p, TXOP_ADD, a[i].iOp, apC[c], NULL, 0, NULL);
      if (rc) break;
      pNew = &p->aOp[p->nOp - 1];
      pNew->aTupleSrc = aSrc;
      rc = txTupleValueNow(p, pNew, &v) < 0 ? SQLITE_NOMEM : SQLITE_OK;
    }
  }
  sqlite3_free(a);
  sqlite3_free(apC);
  return rc;
}

int txTupleValueNow(Tx *p, TxOp *pOp, TypedValue *pV) {
  TypedValue aElem[VALUE_TUPLE_MAX];
  const Attr *pC = pOp->pAttr;
  sqlite3_str *pStr;
  char *z;
  int k, n;
  for (k = 0; k < pC->tuple.nFixed; k++) {
    const TxOp *pSrc;
    memset(&aElem[k], 0, sizeof(aElem[k]));
    if (pOp->aTupleSrc[k] < 0) continue;
    pSrc = &p->aOp[pOp->aTupleSrc[k]];
    aElem[k] = pSrc->v;
    if (pSrc->pAttr->type == VT_REF) {
      const TxPlace *pPl = &pSrc->vRef;
      aElem[k].type = VT_REF;
      aElem[k].i = pPl->eKind == TXP_ENTID ? pPl->e
                   : pPl->eKind == TXP_LOOKUP ? p->aLook[pPl->iTemp].e
                   : p->aTemp[txTempRoot(p, pPl->iTemp)].e;
      if (aElem[k].i == 0) {
        /* a tempid not resolved yet: no value to upsert by */
        pOp->bTuplePending = 1;
        return 0;
      }
    }
  }
  pStr = sqlite3_str_new(p->db);
  valueTupleEncode(pStr, aElem, pC->tuple.nFixed);
  n = sqlite3_str_length(pStr);
  z = sqlite3_str_finish(pStr);
  if (z == NULL) return -1;
  pOp->v.type = VT_TUPLE;
  pOp->v.z = ednArenaStrdup(p->pArena, z, n);
  pOp->v.n = n;
  sqlite3_free(z);
  if (pOp->v.z == NULL) return -1;
  pOp->bTuplePending = 0;
  *pV = pOp->v;
  return 1;
}

/* The final value of component attribute pA of entity e: the ops of group
** a[i0..i1) on it, else the store's value unless an op retracts it. */
static int txTupleFinal(Tx *p, sqlite3_stmt *pGet, const TxTupCand *a, int i0, int i1,
                        sqlite3_int64 e, const Attr *pA, TypedValue *pOut) {
  int g, rc;
  memset(pOut, 0, sizeof(*pOut));
  for (g = i0; g < i1; g++) {
    const TxOp *pOp = &p->aOp[a[g].iOp];
    if (a[g].a == pA->e && pOp->eOp == TXOP_ADD) { *pOut = pOp->v; return SQLITE_OK; }
  }
  if (txIsFresh(p, e)) return SQLITE_OK;
  sqlite3_bind_int64(pGet, 1, e);
  sqlite3_bind_int64(pGet, 2, pA->e);
  rc = sqlite3_step(pGet);
  if (rc == SQLITE_ROW) {
    sqlite3_int64 iFts = 0;
    unsigned char bFts = 0;
    rc = txValueFromStored(p, pA, pGet, 0, pOut, &iFts, &bFts);
    sqlite3_reset(pGet);
    if (rc) return rc;
    for (g = i0; g < i1; g++) {
      const TxOp *pOp = &p->aOp[a[g].iOp];
      if (a[g].a == pA->e && pOp->eOp == TXOP_RETRACT && txValueCmp(&pOp->v, pOut) == 0) {
        memset(pOut, 0, sizeof(*pOut));
        break;
      }
    }
    return SQLITE_OK;
  }
  sqlite3_reset(pGet);
  return rc == SQLITE_DONE ? SQLITE_OK : txSqlErr(p, "cannot read a tuple's components: ");
}

/* Derives composite pC of the entity of group a[i0..i1). */
static int txTupleDeriveOne(Tx *p, sqlite3_stmt *pGet, const TxTupCand *a, int i0, int i1,
                            const Attr *pC) {
  TypedValue aElem[VALUE_TUPLE_MAX], old;
  sqlite3_int64 e = a[i0].e;
  int k, rc, bAny = 0;
  for (k = 0; k < pC->tuple.nFixed; k++) {
    const Attr *pA = schemaAttr(p->pSchema, pC->aTupleAttr[k]);
    if (pA == NULL) return txErr(p, 0, 0, "a component of %s is no attribute", pC->zIdent);
    rc = txTupleFinal(p, pGet, a, i0, i1, e, pA, &aElem[k]);
    if (rc) return rc;
    if (aElem[k].type != VT_NONE) bAny = 1;
  }
  if (bAny) return txTupleAddOp(p, TXOP_ADD, a[i0].iOp, pC, aElem, pC->tuple.nFixed, NULL);
  /* every component gone: so is the composite */
  rc = txTupleFinal(p, pGet, a, i0, i0, e, pC, &old);
  if (rc || old.type == VT_NONE) return rc;
  return txTupleAddOp(p, TXOP_RETRACT, a[i0].iOp, pC, NULL, 0, &old);
}

int txTupleDerive(Tx *p) {
  const Attr **apC = NULL;
  TxTupCand *a = NULL;
  sqlite3_stmt *pGet = NULL;
  int nC = 0, n = 0, i, j, c, rc;
  for (i = 0; i < p->nOp; i++) if (p->aOp[i].bTupleDerived) p->aOp[i].bDrop = 1;
  rc = txTupleComposites(p, 0, &apC, &nC);
  if (rc == SQLITE_OK && nC) rc = txTupleCands(p, 0, &a, &n);
  if (rc == SQLITE_OK && n) {
    rc = sqlite3_prepare_v2(p->db, "SELECT v FROM datoms WHERE e = ?1 AND a = ?2 LIMIT 1", -1,
                            &pGet, NULL);
    if (rc) rc = txSqlErr(p, "cannot read a tuple's components: ");
  }
  for (i = 0; rc == SQLITE_OK && i < n; i = j) {
    for (j = i + 1; j < n && a[j].e == a[i].e; j++) {}
    for (c = 0; rc == SQLITE_OK && c < nC; c++) {
      if (txTupleTouches(a + i, j - i, apC[c])) rc = txTupleDeriveOne(p, pGet, a, i, j, apC[c]);
    }
  }
  sqlite3_finalize(pGet);
  sqlite3_free(a);
  sqlite3_free(apC);
  return rc;
}

/* ---- definitions ------------------------------------------------------ */

/* Checks one keyword of a :db/tupleAttrs value against the store as the
** transaction leaves it (components may be defined in the same one). */
static int txTupleCheckComponent(Tx *p, sqlite3_int64 e, const char *zName, const TypedValue *pKw,
                                 sqlite3_int64 eTupleType) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 eC = 0, eType = 0, eCard = 0;
  int rc = sqlite3_prepare_v2(p->db,
      "SELECT d.e, (SELECT v FROM datoms WHERE e = d.e AND a = 7),"
      " (SELECT v FROM datoms WHERE e = d.e AND a = 8)"
      " FROM datoms d WHERE d.a = 1 AND d.value_type_tag = 13 AND d.v = ?1", -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(pStmt, 1, pKw->z, pKw->n, SQLITE_STATIC);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) {
      eC = sqlite3_column_int64(pStmt, 0);
      eType = sqlite3_column_int64(pStmt, 1);
      eCard = sqlite3_column_int64(pStmt, 2);
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(pStmt);
  if (rc != SQLITE_OK) return txSqlErr(p, "cannot check :db/tupleAttrs: ");
  if (eC == 0 || eType == 0) {
    return txErr(p, 0, 0, "attribute %s: :db/tupleAttrs names %.*s, which is not an attribute",
                 zName, pKw->n, pKw->z);
  }
  if (eC == e) {
    return txErr(p, 0, 0, "attribute %s: :db/tupleAttrs cannot name the tuple itself", zName);
  }
  if (eCard == ENTID_DB_CARD_MANY) {
    return txErr(p, 0, 0, "attribute %s: :db/tupleAttrs cannot name %.*s, a cardinality-many attribute",
                 zName, pKw->n, pKw->z);
  }
  if (eType == eTupleType) {
    return txErr(p, 0, 0, "attribute %s: :db/tupleAttrs cannot name %.*s, a tuple attribute",
                 zName, pKw->n, pKw->z);
  }
  return SQLITE_OK;
}

/* Is keyword z[0..n) a scalar value type a tuple element may have? */
static int txTupleTypeOk(Tx *p, const char *z, int n) {
  return valueTupleElemOk(vtFromTypeEntid(schemaEntid(p->pSchema, z, n)));
}

/* Checks the decoded value of definition kind (TUPLE_*) of attribute e. */
static int txTupleCheckValue(Tx *p, sqlite3_int64 e, const char *zName, int kind, const void *z,
                             int n, int bMany, sqlite3_int64 eTupleType) {
  ValueTuple t;
  int i, rc;
  if (kind == TUPLE_HOMO) {
    if (!txTupleTypeOk(p, z, n)) {
      return txErr(p, 0, 0, "attribute %s: :db/tupleType: %.*s is not a scalar value type", zName, n,
                   (const char *)z);
    }
    return SQLITE_OK;
  }
  if (kind == TUPLE_COMPOSITE && bMany) {
    return txErr(p, 0, 0, "attribute %s: a composite tuple must be :db.cardinality/one", zName);
  }
  rc = valueTupleDecode(z, n, &t);
  if (rc == SQLITE_NOMEM) return rc;
  if (rc != SQLITE_OK) return txErr(p, 0, 0, "attribute %s: its tuple definition is damaged", zName);
  for (i = 0; i < t.n && rc == SQLITE_OK; i++) {
    if (kind == TUPLE_COMPOSITE) {
      rc = txTupleCheckComponent(p, e, zName, &t.a[i], eTupleType);
    } else if (!txTupleTypeOk(p, t.a[i].z, t.a[i].n)) {
      rc = txErr(p, 0, 0, "attribute %s: :db/tupleTypes: %.*s is not a scalar value type", zName,
                 t.a[i].n, t.a[i].z);
    }
  }
  valueTupleClear(&t);
  return rc;
}

int txTupleCheckDef(Tx *p, sqlite3_int64 e, const char *zName, sqlite3_int64 eType, int bMany,
                    int *pbTuple) {
  sqlite3_int64 eTupleType = schemaEntid(p->pSchema, SCHEMA_TYPE_TUPLE, (int)strlen(SCHEMA_TYPE_TUPLE));
  sqlite3_int64 aMeta[3];
  sqlite3_stmt *pStmt = NULL;
  int i, rc, nDef = 0, kind = 0;
  *pbTuple = eTupleType != 0 && eType == eTupleType;
  if (eTupleType == 0) return SQLITE_OK;
  for (i = 0; i < 3; i++) aMeta[i] = schemaEntid(p->pSchema, azTupleMeta[i], (int)strlen(azTupleMeta[i]));
  rc = sqlite3_prepare_v2(p->db, "SELECT a, v FROM datoms WHERE e = ?1 AND a IN (?2, ?3, ?4)"
                          " ORDER BY a", -1, &pStmt, NULL);
  if (rc != SQLITE_OK) return txSqlErr(p, "cannot check a tuple definition: ");
  sqlite3_bind_int64(pStmt, 1, e);
  for (i = 0; i < 3; i++) sqlite3_bind_int64(pStmt, i + 2, aMeta[i]);
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    sqlite3_int64 a = sqlite3_column_int64(pStmt, 0);
    int k;
    for (k = 0; k < 3 && aMeta[k] != a; k++) {}
    nDef++;
    if (nDef > 1 || !*pbTuple) break;
    kind = k + 1;
    {
      const void *z = sqlite3_column_type(pStmt, 1) == SQLITE_BLOB ? sqlite3_column_blob(pStmt, 1)
                      : (const void *)sqlite3_column_text(pStmt, 1);
      int n = sqlite3_column_bytes(pStmt, 1);
      if (z == NULL) { rc = SQLITE_NOMEM; break; }
      rc = txTupleCheckValue(p, e, zName, kind, z, n, bMany, eTupleType);
      if (rc != SQLITE_OK) break;
    }
  }
  if (!*pbTuple && nDef) {
    for (i = 0; i < 3; i++) if (aMeta[i] == sqlite3_column_int64(pStmt, 0)) break;
    sqlite3_finalize(pStmt);
    return txErr(p, 0, 0, "attribute %s: %s needs :db/valueType :db.type/tuple", zName,
                 azTupleMeta[i < 3 ? i : 0]);
  }
  sqlite3_finalize(pStmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE && rc != SQLITE_OK) {
    return rc == SQLITE_ERROR && *p->pzErr ? rc : txSqlErr(p, "cannot check a tuple definition: ");
  }
  if (*pbTuple && nDef != 1) {
    return txErr(p, 0, 0, "attribute %s: :db.type/tuple needs one of :db/tupleAttrs, "
                 ":db/tupleTypes, :db/tupleType", zName);
  }
  return SQLITE_OK;
}
