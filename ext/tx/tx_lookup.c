/*
** tx_lookup.c — lookup refs ([:attr value], (lookup-ref :attr value)) in
** entity and ref-value places, resolved in bulk.
**
** HOW IT WORKS
** While the forms are expanded, every lookup ref becomes a TXP_LOOKUP place
** naming an entry of Tx.aLook; equal refs (same attribute and value) share
** one entry through a small hash table, so a bulk load naming the same user
** a thousand times looks it up once. txLookupResolve then resolves all of
** them against the store as it was before the transaction (Datomic; peer
** fault B09): the entries are ordered by attribute, and each run of up to
** TX_LOOKUP_BATCH values of one attribute is one statement — a VALUES list
** of (slot, value) joined to idx_datoms_unique_value (a, value_type_tag, v)
** — instead of one query per reference. Finally every TXP_LOOKUP place of
** every op becomes the entid found; a ref that found nothing is an error
** at the first form that named it.
**
** Fulltext attributes store rowids, so their lookup refs are resolved on
** the spot by the caller (txFtsFind then one probe) and never come here.
*/
#include <stdlib.h>
#include <string.h>
#include "tx_context.h"

static int txCmpLookupAttr(const void *pA, const void *pB) {
  const TxLookup *a = *(const TxLookup *const *)pA, *b = *(const TxLookup *const *)pB;
  if (a->pAttr->e != b->pAttr->e) return a->pAttr->e < b->pAttr->e ? -1 : 1;
  return a < b ? -1 : (a > b ? 1 : 0);
}

/* Resolves ap[0..n) (one attribute, n <= TX_LOOKUP_BATCH) in one step
** sequence of the batched statement; unused slots are NULL (match nothing). */
static int txLookupRun(Tx *p, TxLookup **ap, int n) {
  sqlite3_stmt *pStmt = NULL;
  int rc = txStmt(p, TXS_LOOKUP_BATCH, &pStmt), i;
  if (rc) return rc;
  sqlite3_bind_int64(pStmt, 1, ap[0]->pAttr->e);
  sqlite3_bind_int(pStmt, 2, vtTag(ap[0]->pAttr->type));
  for (i = 0; i < n; i++) {
    rc = valueBind(pStmt, i + 3, &ap[i]->v);
    if (rc != SQLITE_OK) return rc;
  }
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    int k = sqlite3_column_int(pStmt, 0);
    if (k >= 0 && k < n) ap[k]->e = sqlite3_column_int64(pStmt, 1);
  }
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE ? SQLITE_OK : txSqlErr(p, "lookup failed: ");
}

/* The place's entid once its lookup ref is resolved. */
static void txLookupPlace(Tx *p, TxPlace *pPl) {
  if (pPl->eKind != TXP_LOOKUP) return;
  pPl->e = p->aLook[pPl->iTemp].e;
  pPl->eKind = TXP_ENTID;
  pPl->iTemp = 0;
}

int txLookupUnresolved(Tx *p, const EdnValue *pRef) {
  sqlite3_str *pText = sqlite3_str_new(p->db);
  char *z;
  int rc;
  ednPrint(pText, pRef);
  z = sqlite3_str_finish(pText);
  if (z == NULL) return SQLITE_NOMEM;
  rc = txErr(p, pRef->line, pRef->col, "lookup ref %s does not resolve", z);
  sqlite3_free(z);
  return rc;
}

int txLookupResolve(Tx *p) {
  TxLookup **ap;
  int i, j, rc = SQLITE_OK;
  if (p->nLook == 0) return SQLITE_OK;
  ap = sqlite3_malloc64((sqlite3_uint64)p->nLook * sizeof(TxLookup *));
  if (ap == NULL) return SQLITE_NOMEM;
  for (i = 0; i < p->nLook; i++) ap[i] = &p->aLook[i];
  rc = txSort(p, ap, (size_t)p->nLook, sizeof(TxLookup *), txCmpLookupAttr);
  for (i = 0; i < p->nLook && rc == SQLITE_OK; i = j) {
    for (j = i + 1; j < p->nLook && j - i < TX_LOOKUP_BATCH && ap[j]->pAttr == ap[i]->pAttr; j++) {}
    rc = txLookupRun(p, ap + i, j - i);
  }
  sqlite3_free(ap);
  if (rc) return rc;
  for (i = 0; i < p->nLook; i++) {
    if (p->aLook[i].e == 0) {
      return txLookupUnresolved(p, p->aLook[i].pForm);
    }
  }
  for (i = 0; i < p->nOp; i++) {
    TxOp *pOp = &p->aOp[i];
    txLookupPlace(p, &pOp->e);
    txLookupPlace(p, &pOp->vRef);
    txLookupPlace(p, &pOp->vOldRef);
  }
  return SQLITE_OK;
}
