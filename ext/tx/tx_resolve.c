/*
** tx_resolve.c — tempids to entids, and the derived operations.
**
** HOW IT WORKS
** txResolve follows Datomic: an ADD of a :db.unique/identity value on a
** tempid whose value the store already holds makes the tempid that entity
** (an upsert). Ref values that are tempids resolve as their tempids do, so
** upserts can cascade: the pass repeats until nothing changes (each op's
** store probe is made once). A tempid reaching two different entities is an
** error. Tempids still unresolved that assert the same NEW identity value
** are merged into one entity (union-find). The rest get fresh entids from
** their partition; a tempid that no assertion makes an entity is an error,
** as in Datomic ("used only as a value", or only in a retraction or cas).
** Every place then holds an entid.
**
** txResolveDerived then reads the store (still as it was before the
** transaction: nothing is written yet) to turn [:db/retract e a],
** retractEntity (with :db/isComponent targets, cycle-safe) and cas into
** plain ADD / RETRACT ops.
*/
#include <stdlib.h>
#include <string.h>
#include "tx_context.h"

/* The entid a place holds now, or 0 while it is an unresolved tempid. */
static sqlite3_int64 txPlaceNow(Tx *p, const TxPlace *pPl) {
  if (pPl->eKind == TXP_ENTID) return pPl->e;
  return p->aTemp[txTempRoot(p, pPl->iTemp)].e;
}

/* "tempid \"x\"" or "the entity at line L col C" for messages. */
static char *txTempName(Tx *p, int iTemp) {
  TxTemp *pT = &p->aTemp[iTemp];
  if (pT->zKey) return sqlite3_mprintf("tempid \"%.*s\"", pT->nKey, pT->zKey);
  return sqlite3_mprintf("the entity at line %d col %d", pT->line, pT->col);
}

/* Probes the store for the entity holding pOp's identity value. A fulltext
** attribute's datoms hold the rowid of their text: the text is found first
** (never inserted), and a text not stored names no entity. */
static int txProbe(Tx *p, TxOp *pOp, const TypedValue *pV) {
  sqlite3_stmt *pStmt = NULL;
  TypedValue ft;
  int rc;
  if (pOp->pAttr->bFulltext && pOp->pAttr->type == VT_STRING) {
    int bFound = 0;
    memset(&ft, 0, sizeof ft);
    rc = txFtsFind(p, pV->z, pV->n, 0, &ft.i, &bFound);
    if (rc) return rc;
    if (!bFound) {
      pOp->eUpsert = 0;
      pOp->bUpsertSeen = 1;
      return SQLITE_OK;
    }
    ft.type = VT_LONG;
    pV = &ft;
  }
  rc = txStmt(p, TXS_LOOKUP_UNIQUE, &pStmt);
  if (rc) return rc;
  sqlite3_bind_int64(pStmt, 1, pOp->pAttr->e);
  sqlite3_bind_int(pStmt, 2, vtTag(pOp->pAttr->type));
  rc = valueBind(pStmt, 3, pV);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(pStmt);
  pOp->eUpsert = rc == SQLITE_ROW ? sqlite3_column_int64(pStmt, 0) : 0;
  sqlite3_reset(pStmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    return txSqlErr(p, "upsert lookup failed: ");
  }
  pOp->bUpsertSeen = 1;
  return SQLITE_OK;
}

/* The op's value with its ref resolved (if it can be yet): 1, else 0 (or
** -1 out of memory, for a derived composite). */
static int txOpValueNow(Tx *p, TxOp *pOp, TypedValue *pV) {
  if (pOp->aTupleSrc) return txTupleValueNow(p, pOp, pV);
  *pV = pOp->v;
  if (pOp->pAttr->type == VT_REF) {
    pV->i = txPlaceNow(p, &pOp->vRef);
    return pV->i != 0;
  }
  return 1;
}

static int txUpserts(Tx *p) {
  int bChanged, i, rc;
  do {
    bChanged = 0;
    for (i = 0; i < p->nOp; i++) {
      TxOp *pOp = &p->aOp[i];
      TypedValue v;
      int r;
      if (pOp->eOp != TXOP_ADD || pOp->e.eKind != TXP_TEMP) continue;
      if (pOp->pAttr->eUnique != UNIQUE_IDENTITY) continue;
      if (!pOp->bUpsertSeen) {
        int bNow = txOpValueNow(p, pOp, &v);
        if (bNow < 0) return SQLITE_NOMEM;
        if (!bNow) continue;
        rc = txProbe(p, pOp, &v);
        if (rc) return rc;
      }
      if (pOp->eUpsert == 0) continue;
      r = txTempRoot(p, pOp->e.iTemp);
      if (p->aTemp[r].e == 0) {
        p->aTemp[r].e = pOp->eUpsert;
        bChanged = 1;
      } else if (p->aTemp[r].e != pOp->eUpsert) {
        char *zName = txTempName(p, pOp->e.iTemp);
        rc = txErr(p, pOp->line, pOp->col,
                   "%s would resolve to two different entities, %lld and %lld (upsert through %s)",
                   zName ? zName : "a tempid", p->aTemp[r].e, pOp->eUpsert, pOp->pAttr->zIdent);
        sqlite3_free(zName);
        return rc;
      }
    }
  } while (bChanged);
  return SQLITE_OK;
}

/* Sort key for merging: identity ops on unresolved tempids by (a, value). */
static int txCmpIdentOp(const void *pA, const void *pB) {
  const TxOp *a = *(const TxOp *const *)pA, *b = *(const TxOp *const *)pB;
  if (a->pAttr->e != b->pAttr->e) return a->pAttr->e < b->pAttr->e ? -1 : 1;
  return txValueCmp(&a->v, &b->v);
}

/* Tempids asserting the same identity value become one entity: two
** unresolved ones are merged; an unresolved one joins a resolved one (it
** asserts the same value the resolved entity will hold). *pbChanged is set
** when some tempid became resolved, since refs to it may upsert further. */
static int txMergeNewIdentities(Tx *p, int *pbChanged) {
  TxOp **ap;
  int i, n = 0;
  for (i = 0; i < p->nOp; i++) {
    TxOp *pOp = &p->aOp[i];
    if (pOp->eOp == TXOP_ADD && pOp->e.eKind == TXP_TEMP && !pOp->bTuplePending
        && pOp->pAttr->eUnique == UNIQUE_IDENTITY && pOp->pAttr->type != VT_REF) n++;
  }
  if (n < 2) return SQLITE_OK;
  ap = sqlite3_malloc64((sqlite3_uint64)n * sizeof(TxOp *));
  if (ap == NULL) return SQLITE_NOMEM;
  n = 0;
  for (i = 0; i < p->nOp; i++) {
    TxOp *pOp = &p->aOp[i];
    if (pOp->eOp == TXOP_ADD && pOp->e.eKind == TXP_TEMP && !pOp->bTuplePending
        && pOp->pAttr->eUnique == UNIQUE_IDENTITY && pOp->pAttr->type != VT_REF) ap[n++] = pOp;
  }
  if (txSort(p, ap, (size_t)n, sizeof(TxOp *), txCmpIdentOp) != SQLITE_OK) {
    sqlite3_free(ap);
    return SQLITE_INTERRUPT;
  }
  for (i = 1; i < n; i++) {
    if (txCmpIdentOp(&ap[i - 1], &ap[i]) == 0) {
      int r1 = txTempRoot(p, ap[i - 1]->e.iTemp), r2 = txTempRoot(p, ap[i]->e.iTemp);
      sqlite3_int64 e1 = p->aTemp[r1].e, e2 = p->aTemp[r2].e;
      if (r1 == r2 || (e1 != 0 && e2 != 0)) continue;  /* distinct: unique check reports it */
      if (e2 != 0 || (e1 == 0 && r2 < r1)) { int t = r1; r1 = r2; r2 = t; }
      /* r1 survives: the resolved one, else the older one */
      p->aTemp[r2].iAlias = r1;
      p->aTemp[r1].bEntity |= p->aTemp[r2].bEntity;
      if (p->aTemp[r1].e != 0) *pbChanged = 1;
    }
  }
  sqlite3_free(ap);
  return SQLITE_OK;
}

/* An explicit entid at or past its partition's mark (the user may name any
** entid) moves the mark past it, so a later allocation never hands out an
** id that already has datoms. One that would move the mark to or past the
** partition's end is refused: the mark was left behind it, and the check
** of a writer opened later (txCheckMarks) moved the mark past it, so the
** partition read as full for every later tempid (Mentat refuses every
** unallocated entid; ids below the end keep working, as they always did). The tx partition's mark is the next
** transaction's id: there only given-out ids (past transactions and this
** one) can be named, or a later transaction would find its own entity
** already holding datoms (SPEC §4: entids are never reused), as Mentat
** refuses unallocated entids. */
static int txBumpPart(Tx *p, const TxOp *pOp, const TxPlace *pPl) {
  int j;
  if (pPl->eKind != TXP_ENTID) return SQLITE_OK;
  for (j = 0; j < p->nPart; j++) {
    TxPart *pPart = &p->aPart[j];
    if (pPl->e < pPart->iStart || pPl->e > pPart->iEnd) continue;
    if (j == p->iPartTx) {
      if (pPl->e >= pPart->iIdx) {
        return txErr(p, pOp->line, pOp->col, "entity %lld is a transaction id not given out yet "
                     "(this transaction is %lld)", (long long)pPl->e, (long long)p->iTx);
      }
    } else if (pPl->e >= pPart->iIdx) {
      if (pPl->e >= pPart->iEnd - 1) {
        return txErr(p, pOp->line, pOp->col, "entity %lld is not given out yet, and naming it "
                     "would move the next id of partition %s to or past its end (%lld); "
                     "use a tempid", (long long)pPl->e, pPart->zName, (long long)pPart->iEnd);
      }
      pPart->iIdx = pPl->e + 1;
      pPart->bDirty = 1;
    }
  }
  return SQLITE_OK;
}

static int txAllocate(Tx *p) {
  int i, j, rc = SQLITE_OK;
  for (i = 0; i < p->nOp && rc == SQLITE_OK; i++) {
    TxOp *pOp = &p->aOp[i];
    if (pOp->eOp != TXOP_ADD && pOp->eOp != TXOP_CAS) continue;  /* retractions add nothing */
    rc = txBumpPart(p, pOp, &pOp->e);
    if (rc == SQLITE_OK && pOp->pAttr && pOp->pAttr->type == VT_REF) {
      rc = txBumpPart(p, pOp, &pOp->vRef);
      if (rc == SQLITE_OK) rc = txBumpPart(p, pOp, &pOp->vOldRef);
    }
  }
  if (rc != SQLITE_OK) return rc;
  for (i = 0; i < p->nTemp; i++) {
    if (p->aTemp[i].bEntity) p->aTemp[txTempRoot(p, i)].bEntity = 1;
    if (p->aTemp[i].bRetract) p->aTemp[txTempRoot(p, i)].bRetract = 1;
  }
  for (i = 0; i < p->nTemp; i++) {
    TxTemp *pT = &p->aTemp[i];
    TxPart *pPart = NULL;
    if (pT->iAlias != i || pT->e != 0) continue;
    if (!pT->bEntity) {
      char *zName = txTempName(p, i);
      int rc = txErr(p, pT->line, pT->col, pT->bRetract
                     ? "%s is used only in a retraction or cas, so it names no entity; "
                       "assert something about it or use an existing entity"
                     : "%s is used only as a value", zName ? zName : "a tempid");
      sqlite3_free(zName);
      return rc;
    }
    for (j = 0; j < p->nPart; j++) {
      if (p->aPart[j].ePart == pT->iPart) { pPart = &p->aPart[j]; break; }
    }
    if (pPart == NULL) pPart = &p->aPart[p->iPartUser];
    if (!txPartRoom(pPart, 1)) {
      return txErr(p, pT->line, pT->col, "partition %s is full", pPart->zName);
    }
    pT->e = pPart->iIdx++;
    pPart->bDirty = 1;
  }
  return SQLITE_OK;
}

int txResolve(Tx *p) {
  int i, rc;
  int bChanged;
  do {
    bChanged = 0;
    rc = txUpserts(p);
    if (rc) return rc;
    rc = txMergeNewIdentities(p, &bChanged);
    if (rc) return rc;
  } while (bChanged);
  rc = txAllocate(p);
  if (rc) return rc;
  for (i = 0; i < p->nOp; i++) {
    TxOp *pOp = &p->aOp[i];
    pOp->e.e = txPlaceNow(p, &pOp->e);
    pOp->e.eKind = TXP_ENTID;
    if (pOp->pAttr && pOp->pAttr->type == VT_REF) {
      pOp->v.type = VT_REF;
      pOp->v.i = txPlaceNow(p, &pOp->vRef);
      pOp->vRef.eKind = TXP_ENTID;
      if (pOp->eOp == TXOP_CAS && !pOp->bOldNil) {
        pOp->vOld.type = VT_REF;
        pOp->vOld.i = txPlaceNow(p, &pOp->vOldRef);
      }
    }
  }
  return SQLITE_OK;
}

/* Appends RETRACT [e a v] with v read from column iCol of pStmt. */
static int txRetractStored(Tx *p, sqlite3_int64 e, const Attr *pAttr, sqlite3_stmt *pStmt,
                           int iCol, int line, int col) {
  TxOp *pOp;
  int rc = txNewOp(p, &pOp);
  if (rc) return rc;
  pOp->eOp = TXOP_RETRACT;
  pOp->line = line;
  pOp->col = col;
  pOp->e.e = e;
  pOp->pAttr = pAttr;
  return txValueFromStored(p, pAttr, pStmt, iCol, &pOp->v, &pOp->iFts, &pOp->bFts);
}

static int txRetractAttr(Tx *p, int iOp) {
  sqlite3_stmt *pStmt = NULL;
  TxOp op = p->aOp[iOp];
  int rc = txStmt(p, TXS_ATTR_VALUES, &pStmt);
  if (rc) return rc;
  p->aOp[iOp].bDrop = 1;
  sqlite3_bind_int64(pStmt, 1, op.e.e);
  sqlite3_bind_int64(pStmt, 2, op.pAttr->e);
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    rc = txRetractStored(p, op.e.e, op.pAttr, pStmt, 0, op.line, op.col);
    if (rc) { sqlite3_reset(pStmt); return rc; }
  }
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE ? SQLITE_OK : txSqlErr(p, NULL);
}

/* retractEntity: the entity's datoms, datoms referring to it, and its
** component entities in turn. aSeen is the work list; the visited test is a
** linear scan, which is fine for component trees. */
static int txRetractEntity(Tx *p, int iOp) {
  TxOp op = p->aOp[iOp];
  sqlite3_int64 *aSeen = NULL;
  int nSeen = 0, nAlloc = 0, iNext = 0, rc = SQLITE_OK, i;
  sqlite3_stmt *pStmt = NULL;

  p->aOp[iOp].bDrop = 1;
  aSeen = sqlite3_malloc64(16 * sizeof(sqlite3_int64));
  if (aSeen == NULL) return SQLITE_NOMEM;
  nAlloc = 16;
  aSeen[nSeen++] = op.e.e;
  while (iNext < nSeen) {
    sqlite3_int64 x = aSeen[iNext++];
    rc = txStmt(p, TXS_ENTITY_DATOMS, &pStmt);
    if (rc) goto cleanup;
    sqlite3_bind_int64(pStmt, 1, x);
    while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
      const Attr *pAttr = schemaAttr(p->pSchema, sqlite3_column_int64(pStmt, 0));
      if (pAttr == NULL) continue;
      rc = txRetractStored(p, x, pAttr, pStmt, 1, op.line, op.col);
      if (rc) goto cleanup;
      if (pAttr->bComponent && pAttr->type == VT_REF) {
        sqlite3_int64 c = sqlite3_column_int64(pStmt, 1);
        for (i = 0; i < nSeen && aSeen[i] != c; i++) {}
        if (i == nSeen) {
          if (nSeen == nAlloc) {
            sqlite3_int64 *aNew = sqlite3_realloc64(aSeen, (sqlite3_uint64)nAlloc * 2 * sizeof(sqlite3_int64));
            if (aNew == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
            aSeen = aNew;
            nAlloc *= 2;
          }
          aSeen[nSeen++] = c;
        }
      }
    }
    sqlite3_reset(pStmt);
    if (rc != SQLITE_DONE) { rc = txSqlErr(p, NULL); goto cleanup; }
    rc = txStmt(p, TXS_REFS_TO, &pStmt);
    if (rc) goto cleanup;
    sqlite3_bind_int64(pStmt, 1, x);
    while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
      const Attr *pAttr = schemaAttr(p->pSchema, sqlite3_column_int64(pStmt, 1));
      TxOp *pOp;
      if (pAttr == NULL || pAttr->type != VT_REF) continue;
      rc = txNewOp(p, &pOp);
      if (rc) goto cleanup;
      pOp->eOp = TXOP_RETRACT;
      pOp->line = op.line;
      pOp->col = op.col;
      pOp->e.e = sqlite3_column_int64(pStmt, 0);
      pOp->pAttr = pAttr;
      pOp->v.type = VT_REF;
      pOp->v.i = x;
    }
    sqlite3_reset(pStmt);
    if (rc != SQLITE_DONE) { rc = txSqlErr(p, NULL); goto cleanup; }
    rc = SQLITE_OK;
  }
cleanup:
  if (pStmt) sqlite3_reset(pStmt);
  sqlite3_free(aSeen);
  return rc;
}

/* cas: compares the current value(s) with the expected old one, then the op
** becomes an ordinary ADD. Mismatch message per the brief. */
static int txCas(Tx *p, int iOp) {
  TxOp *pOp = &p->aOp[iOp];
  sqlite3_stmt *pStmt = NULL;
  TypedValue cur;
  sqlite3_int64 iFts;
  unsigned char bFts;
  int rc, bFound = 0, nRow = 0;
  sqlite3_str *pMsg;
  char *zMsg;

  memset(&cur, 0, sizeof(cur));
  rc = txStmt(p, TXS_ATTR_VALUES, &pStmt);
  if (rc) return rc;
  sqlite3_bind_int64(pStmt, 1, pOp->e.e);
  sqlite3_bind_int64(pStmt, 2, pOp->pAttr->e);
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    TypedValue v;
    rc = txValueFromStored(p, pOp->pAttr, pStmt, 0, &v, &iFts, &bFts);
    if (rc) { sqlite3_reset(pStmt); return rc; }
    if (nRow++ == 0) cur = v;
    if (!pOp->bOldNil && txValueCmp(&v, &pOp->vOld) == 0) bFound = 1;
  }
  sqlite3_reset(pStmt);
  if (rc != SQLITE_DONE) return txSqlErr(p, NULL);
  if (pOp->bOldNil ? nRow == 0 : bFound) {
    pOp->eOp = TXOP_ADD;
    return SQLITE_OK;
  }
  pMsg = sqlite3_str_new(p->db);
  sqlite3_str_appendf(pMsg, "cas failed on %s of entity %lld: expected ", pOp->pAttr->zIdent, pOp->e.e);
  if (pOp->bOldNil) sqlite3_str_appendall(pMsg, "nil");
  else txValuePrint(pMsg, p->pSchema, &pOp->vOld);
  sqlite3_str_appendall(pMsg, ", found ");
  if (nRow == 0) sqlite3_str_appendall(pMsg, "nil");
  else txValuePrint(pMsg, p->pSchema, &cur);
  zMsg = sqlite3_str_finish(pMsg);
  if (zMsg == NULL) return SQLITE_NOMEM;
  rc = txErr(p, pOp->line, pOp->col, "%s", zMsg);
  sqlite3_free(zMsg);
  return rc;
}

int txResolveDerived(Tx *p) {
  int i, rc = SQLITE_OK, n = p->nOp;
  for (i = 0; i < n && rc == SQLITE_OK; i++) {
    switch (p->aOp[i].eOp) {
      case TXOP_RETRACT_ATTR: rc = txRetractAttr(p, i); break;
      case TXOP_RETRACT_ENTITY: rc = txRetractEntity(p, i); break;
      case TXOP_CAS: rc = txCas(p, i); break;
      default: break;
    }
  }
  return rc;
}
