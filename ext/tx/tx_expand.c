/*
** tx_expand.c — tx-data forms to TxOps (SPEC §5).
**
** HOW IT WORKS
** Each form of the tx vector is a list form ([:db/add e a v], [:db/retract e
** a v], [:db/retract e a], [:db/retractEntity e], [:db/cas e a old new], and
** the :db.fn/ spellings) or a map. Maps become one ADD per attribute value;
** a map without :db/id is a new anonymous tempid; collections under a
** cardinality-many attribute give one op per element; `:ns/_attr` keys and
** attributes swap entity and value (reverse refs); nested maps under a ref
** attribute are expanded in turn (only under :db/isComponent, or with
** :db/id or a :db.unique/identity attribute, else they would dangle, as in
** Datomic). Entity places become TxPlaces: entids, idents (resolved through
** the snapshot), tempids (interned by key in a small hash table), #db/id
** tagged ids, the current tx, and lookup refs — queued for tx_lookup.c,
** which resolves them in bulk against the store as it was before the
** transaction (Datomic; peer fault B09).
** Recursion follows only the nesting of the input, which the reader caps at
** EDN_MAX_DEPTH.
*/
#include <string.h>
#include "tx_context.h"

/* FNV-1a of a tempid key. */
static unsigned int txHashKey(const char *z, int n) {
  unsigned int h = 2166136261u;
  int i;
  for (i = 0; i < n; i++) { h ^= (unsigned char)z[i]; h *= 16777619u; }
  return h;
}

static int txTempNew(Tx *p, const char *zKey, int nKey, sqlite3_int64 iPart,
                     int line, int col, int *piTemp) {
  TxTemp *pT;
  if (p->nTemp == p->nTempAlloc) {
    int nNew = p->nTempAlloc ? p->nTempAlloc * 2 : 32;
    TxTemp *aNew = sqlite3_realloc64(p->aTemp, (sqlite3_uint64)nNew * sizeof(TxTemp));
    if (aNew == NULL) return SQLITE_NOMEM;
    p->aTemp = aNew;
    p->nTempAlloc = nNew;
  }
  pT = &p->aTemp[p->nTemp];
  memset(pT, 0, sizeof(*pT));
  pT->zKey = zKey;
  pT->nKey = nKey;
  pT->iAlias = p->nTemp;
  pT->iPart = iPart;
  pT->line = line;
  pT->col = col;
  *piTemp = p->nTemp++;
  return SQLITE_OK;
}

/* Grows the key hash to keep it at most half full. */
static int txHashGrow(Tx *p) {
  int nNew = p->nHash ? p->nHash * 2 : 64;
  int *aNew = sqlite3_malloc64((sqlite3_uint64)nNew * sizeof(int));
  int i;
  if (aNew == NULL) return SQLITE_NOMEM;
  memset(aNew, 0, (size_t)nNew * sizeof(int));
  for (i = 0; i < p->nTemp; i++) {
    unsigned int h;
    if (p->aTemp[i].zKey == NULL) continue;
    h = txHashKey(p->aTemp[i].zKey, p->aTemp[i].nKey) & (unsigned)(nNew - 1);
    while (aNew[h]) h = (h + 1) & (unsigned)(nNew - 1);
    aNew[h] = i + 1;
  }
  sqlite3_free(p->aHash);
  p->aHash = aNew;
  p->nHash = nNew;
  return SQLITE_OK;
}

/* The keyed tempid zKey (arena-owned), created on first use. */
static int txTempKeyed(Tx *p, const char *zKey, int nKey, sqlite3_int64 iPart,
                       int line, int col, int *piTemp) {
  unsigned int h;
  int rc;
  if (p->nTemp * 2 + 2 > p->nHash) {
    rc = txHashGrow(p);
    if (rc) return rc;
  }
  h = txHashKey(zKey, nKey) & (unsigned)(p->nHash - 1);
  while (p->aHash[h]) {
    TxTemp *pT = &p->aTemp[p->aHash[h] - 1];
    if (pT->nKey == nKey && memcmp(pT->zKey, zKey, (size_t)nKey) == 0) {
      *piTemp = p->aHash[h] - 1;
      return SQLITE_OK;
    }
    h = (h + 1) & (unsigned)(p->nHash - 1);
  }
  rc = txTempNew(p, zKey, nKey, iPart, line, col, piTemp);
  if (rc) return rc;
  p->aHash[h] = *piTemp + 1;
  return SQLITE_OK;
}

static sqlite3_int64 txUserPart(Tx *p) {
  return p->aPart[p->iPartUser].ePart ? p->aPart[p->iPartUser].ePart : ENTID_DB_PART_USER;
}

static const char *txEdnText(Tx *p, const EdnValue *pV) {
  sqlite3_str *pStr = sqlite3_str_new(p->db);
  char *z;
  const char *zOut;
  ednPrint(pStr, pV);
  z = sqlite3_str_finish(pStr);
  if (z == NULL) return "?";
  zOut = ednArenaStrdup(p->pArena, z, (int)strlen(z));
  sqlite3_free(z);
  return zOut ? zOut : "?";
}

/* A lookup ref (attribute keyword pA, value pV; pForm for the message):
** checked and queued for txLookupResolve (a TXP_LOOKUP place), which looks
** all of them up in bulk against the store before the transaction.
** Fulltext attributes (values are rowids) are resolved here. */
static int txLookupRef(Tx *p, const EdnValue *pForm, const EdnValue *pA,
                       const EdnValue *pV, TxPlace *pPl) {
  const Attr *pAttr;
  TypedValue v;
  sqlite3_stmt *pStmt = NULL;
  int rc;
  if (pA->type != EDN_KEYWORD) {
    return txErr(p, pForm->line, pForm->col, "a lookup ref needs an attribute keyword first, got %s",
                 txEdnText(p, pForm));
  }
  pAttr = schemaAttrByIdent(p->pSchema, pA->u.s.z, pA->u.s.n);
  if (pAttr == NULL) {
    return txErr(p, pA->line, pA->col, "unknown attribute %s in lookup ref", pA->u.s.z);
  }
  if (pAttr->eUnique == UNIQUE_NONE) {
    return txErr(p, pA->line, pA->col, "lookup ref attribute %s is not :db/unique", pA->u.s.z);
  }
  memset(&v, 0, sizeof(v));
  if (pAttr->type == VT_REF && pV->type == EDN_KEYWORD) {
    v.type = VT_REF;
    v.i = schemaEntid(p->pSchema, pV->u.s.z, pV->u.s.n);
    if (v.i == 0) return txErr(p, pV->line, pV->col, "unknown ident %s", pV->u.s.z);
  } else {
    rc = txTupleValue(p, pV, pAttr, pA->u.s.z, &v);
    if (rc != SQLITE_OK) return rc;
  }
  if (pAttr->bFulltext && pAttr->type == VT_STRING) {
    sqlite3_int64 iRowid = 0;
    int bFound = 0;
    rc = txFtsFind(p, v.z, v.n, 0, &iRowid, &bFound);
    if (rc) return rc;
    if (!bFound) {
      return txErr(p, pForm->line, pForm->col, "lookup ref %s does not resolve", txEdnText(p, pForm));
    }
    v.type = VT_LONG;
    v.i = iRowid;
  } else {
    pPl->eKind = TXP_LOOKUP;
    return txLookupAdd(p, pForm, pAttr, &v, &pPl->iTemp);
  }
  rc = txStmt(p, TXS_LOOKUP_UNIQUE, &pStmt);
  if (rc) return rc;
  sqlite3_bind_int64(pStmt, 1, pAttr->e);
  sqlite3_bind_int(pStmt, 2, vtTag(pAttr->type));
  rc = valueBind(pStmt, 3, &v);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    pPl->e = sqlite3_column_int64(pStmt, 0);
    sqlite3_reset(pStmt);
    return SQLITE_OK;
  }
  sqlite3_reset(pStmt);
  if (rc != SQLITE_DONE) return txSqlErr(p, "lookup failed: ");
  return txErr(p, pForm->line, pForm->col, "lookup ref %s does not resolve", txEdnText(p, pForm));
}

/* The partition named by keyword pKw (an ident entid). */
static int txPartByKeyword(Tx *p, const EdnValue *pKw, sqlite3_int64 *pePart) {
  int i;
  if (pKw == NULL || pKw->type != EDN_KEYWORD) {
    return txErr(p, pKw ? pKw->line : 0, pKw ? pKw->col : 0, "#db/id needs a partition keyword");
  }
  for (i = 0; i < p->nPart; i++) {
    if (strcmp(p->aPart[i].zName, pKw->u.s.z) == 0 && p->aPart[i].ePart) {
      if (i == p->iPartTx) {
        return txErr(p, pKw->line, pKw->col,
                     "entities cannot be allocated in :db.part/tx; use \"datomic.tx\" for the transaction");
      }
      *pePart = p->aPart[i].ePart;
      return SQLITE_OK;
    }
  }
  return txErr(p, pKw->line, pKw->col, "unknown partition %s", pKw->u.s.z);
}

/* Parses an entity place (or a ref value place, bValue) into *pPl. */
static int txPlace(Tx *p, const EdnValue *pV, TxPlace *pPl, int bEntity) {
  int rc, iTemp;
  memset(pPl, 0, sizeof(*pPl));
  switch (pV->type) {
    case EDN_INT:
      if (pV->u.i >= 0) {
        pPl->e = pV->u.i;
        return SQLITE_OK;
      } else {
        /* DataScript's negative tempids, reported under their decimal text. */
        char *zKey = ednArenaAlloc(p->pArena, 24);
        if (zKey == NULL) return SQLITE_NOMEM;
        sqlite3_snprintf(24, zKey, "%lld", pV->u.i);
        rc = txTempKeyed(p, zKey, (int)strlen(zKey), txUserPart(p), pV->line, pV->col, &iTemp);
        break;
      }
    case EDN_KEYWORD:
      pPl->e = schemaEntid(p->pSchema, pV->u.s.z, pV->u.s.n);
      if (pPl->e == 0) return txErr(p, pV->line, pV->col, "unknown ident %s", pV->u.s.z);
      return SQLITE_OK;
    case EDN_STRING:
      if (pV->u.s.n == 10 && memcmp(pV->u.s.z, "datomic.tx", 10) == 0) {
        pPl->e = p->iTx;
        return SQLITE_OK;
      }
      rc = txTempKeyed(p, pV->u.s.z, pV->u.s.n, txUserPart(p), pV->line, pV->col, &iTemp);
      break;
    case EDN_TAGGED: {
      const EdnValue *pIn = pV->u.t.p;
      sqlite3_int64 ePart = 0;
      if (strcmp(pV->u.t.zTag, "db/id") != 0 || pIn == NULL || pIn->type != EDN_VECTOR
          || pIn->u.c.n < 1 || pIn->u.c.n > 2) {
        return txErr(p, pV->line, pV->col,
                     "expected #db/id [:db.part/x] or #db/id [:db.part/x -n], got %s", txEdnText(p, pV));
      }
      rc = txPartByKeyword(p, pIn->u.c.a[0], &ePart);
      if (rc) return rc;
      if (pIn->u.c.n == 1) {
        rc = txTempNew(p, NULL, 0, ePart, pV->line, pV->col, &iTemp);
      } else {
        const EdnValue *pN = pIn->u.c.a[1];
        char *zKey;
        if (pN->type != EDN_INT) {
          return txErr(p, pN->line, pN->col, "#db/id expects a negative integer after the partition");
        }
        zKey = ednArenaAlloc(p->pArena, 24);
        if (zKey == NULL) return SQLITE_NOMEM;
        sqlite3_snprintf(24, zKey, "%lld", pN->u.i);
        rc = txTempKeyed(p, zKey, (int)strlen(zKey), ePart, pV->line, pV->col, &iTemp);
      }
      break;
    }
    case EDN_VECTOR:
      if (pV->u.c.n == 2 && pV->u.c.a[0]->type == EDN_KEYWORD) {
        return txLookupRef(p, pV, pV->u.c.a[0], pV->u.c.a[1], pPl);
      }
      return txErr(p, pV->line, pV->col, "expected an entity id, ident, tempid or lookup ref, got %s",
                   txEdnText(p, pV));
    case EDN_LIST:
      if (pV->u.c.n == 3 && ednIsSymbol(pV->u.c.a[0], "lookup-ref")) {
        return txLookupRef(p, pV, pV->u.c.a[1], pV->u.c.a[2], pPl);
      }
      if (pV->u.c.n == 1 && ednIsSymbol(pV->u.c.a[0], "transaction-tx")) {
        pPl->e = p->iTx;
        return SQLITE_OK;
      }
      return txErr(p, pV->line, pV->col, "expected (lookup-ref :attr value) or (transaction-tx), got %s",
                   txEdnText(p, pV));
    default:
      return txErr(p, pV->line, pV->col, "expected an entity id, ident, tempid or lookup ref, got %s",
                   txEdnText(p, pV));
  }
  if (rc) return rc;
  pPl->eKind = TXP_TEMP;
  pPl->iTemp = iTemp;
  if (bEntity) p->aTemp[iTemp].bEntity = 1;
  return SQLITE_OK;
}

/* True if the tx-data itself asserts :db/ident pKw (a top-level map or
** :db/add), to explain why using it in the same transaction fails. Only
** reached on the error path. */
static int txDefinedHere(Tx *p, const EdnValue *pKw) {
  int i, j;
  for (i = 0; i < p->pRoot->u.c.n; i++) {
    const EdnValue *pF = p->pRoot->u.c.a[i];
    if (pF->type == EDN_MAP) {
      for (j = 0; j < pF->u.c.n; j += 2) {
        if (ednIsKeyword(pF->u.c.a[j], ":db/ident") && ednEqual(pF->u.c.a[j + 1], pKw)) return 1;
      }
    } else if (pF->type == EDN_VECTOR && pF->u.c.n == 4 && ednIsKeyword(pF->u.c.a[0], ":db/add")
               && ednIsKeyword(pF->u.c.a[2], ":db/ident") && ednEqual(pF->u.c.a[3], pKw)) {
      return 1;
    }
  }
  return 0;
}

/* The attribute named by keyword pK; *pbReverse for `:ns/_name`. */
static int txAttr(Tx *p, const EdnValue *pK, const Attr **ppAttr, int *pbReverse) {
  const char *z, *zSlash;
  *pbReverse = 0;
  if (pK->type != EDN_KEYWORD) {
    return txErr(p, pK->line, pK->col, "expected an attribute keyword, got %s", txEdnText(p, pK));
  }
  z = pK->u.s.z;
  *ppAttr = schemaAttrByIdent(p->pSchema, z, pK->u.s.n);
  if (*ppAttr) return SQLITE_OK;
  zSlash = strchr(z, '/');
  if (zSlash && zSlash[1] == '_') {
    int n = pK->u.s.n - 1;
    char *zFwd = ednArenaStrdup(p->pArena, z, n);
    if (zFwd == NULL) return SQLITE_NOMEM;
    memcpy(zFwd + (zSlash - z) + 1, zSlash + 2, (size_t)(n - (zSlash - z) - 1));
    zFwd[n] = 0;
    *ppAttr = schemaAttrByIdent(p->pSchema, zFwd, n);
    if (*ppAttr) {
      if ((*ppAttr)->type != VT_REF) {
        return txErr(p, pK->line, pK->col, "reverse attribute %s: %s is not a ref attribute", z, zFwd);
      }
      *pbReverse = 1;
      return SQLITE_OK;
    }
  }
  if (txDefinedHere(p, pK)) {
    return txErr(p, pK->line, pK->col,
                 "attribute %s is defined in this same transaction; transact the schema first", z);
  }
  return txErr(p, pK->line, pK->col, "unknown attribute %s", z);
}

static int txMap(Tx *p, const EdnValue *pMap, TxPlace *pOut);

/* True if map pMap may be nested without dangling: it has :db/id or a
** :db.unique/identity attribute. */
static int txMapIdentified(Tx *p, const EdnValue *pMap) {
  int i;
  for (i = 0; i < pMap->u.c.n; i += 2) {
    const EdnValue *pK = pMap->u.c.a[i];
    const Attr *pA;
    if (ednIsKeyword(pK, ":db/id")) return 1;
    if (pK->type != EDN_KEYWORD) continue;
    pA = schemaAttrByIdent(p->pSchema, pK->u.s.z, pK->u.s.n);
    if (pA && pA->eUnique == UNIQUE_IDENTITY) return 1;
  }
  return 0;
}

/* One op for one value. pE is the entity place; pV the EDN value; for a
** ref attribute pV is a place (or, when bNested is allowed, a map). */
static int txOneValue(Tx *p, int eOp, const TxPlace *pE, const Attr *pAttr, int bReverse,
                      const EdnValue *pV, const EdnValue *pK, int bAllowMap) {
  TxPlace ePl = *pE, vPl;
  TypedValue v;
  TxOp *pOp;
  int rc;
  memset(&v, 0, sizeof(v));
  memset(&vPl, 0, sizeof(vPl));
  if (pV->type == EDN_NIL) {
    return txErr(p, pV->line, pV->col, "nil is not a valid value for %s", pK->u.s.z);
  }
  rc = txTupleDirect(p, pAttr, pK);
  if (rc) return rc;
  if (pAttr->type == VT_REF || bReverse) {
    if (pV->type == EDN_MAP) {
      if (!bAllowMap || bReverse) {
        return txErr(p, pV->line, pV->col, "a nested map is not allowed here (%s)", pK->u.s.z);
      }
      if (!pAttr->bComponent && !txMapIdentified(p, pV)) {
        return txErr(p, pV->line, pV->col,
                     "nested entity would dangle: a map under %s needs :db/id or a "
                     ":db.unique/identity attribute, or %s must be :db/isComponent",
                     pAttr->zIdent, pAttr->zIdent);
      }
      rc = txMap(p, pV, &vPl);
    } else {
      rc = txPlace(p, pV, &vPl, bReverse && eOp == TXOP_ADD);
    }
    if (rc) return rc;
    if (bReverse) { TxPlace t = ePl; ePl = vPl; vPl = t; }
    v.type = VT_REF;
  } else {
    rc = txTupleValue(p, pV, pAttr, pK->u.s.z, &v);
    if (rc != SQLITE_OK) return rc;
  }
  rc = txNewOp(p, &pOp);
  if (rc) return rc;
  pOp->eOp = (unsigned char)eOp;
  pOp->line = pK->line;
  pOp->col = pK->col;
  pOp->e = ePl;
  pOp->pAttr = pAttr;
  pOp->vRef = vPl;
  pOp->v = v;
  return SQLITE_OK;
}

/* True when pV, under a ref attribute, is a lookup ref rather than a
** collection: [:attr v] with :attr a unique attribute. */
static int txIsLookupRef(Tx *p, const EdnValue *pV) {
  const Attr *pA;
  if (pV->type != EDN_VECTOR || pV->u.c.n != 2 || pV->u.c.a[0]->type != EDN_KEYWORD) return 0;
  pA = schemaAttrByIdent(p->pSchema, pV->u.c.a[0]->u.s.z, pV->u.c.a[0]->u.s.n);
  return pA != NULL && pA->eUnique != UNIQUE_NONE;
}

/* Ops for a value that may be a collection (map values). */
static int txValues(Tx *p, const TxPlace *pE, const Attr *pAttr, int bReverse,
                    const EdnValue *pV, const EdnValue *pK) {
  int i, rc;
  int bColl = (pV->type == EDN_VECTOR || pV->type == EDN_SET);
  if (bColl && (pAttr->type == VT_REF || bReverse) && txIsLookupRef(p, pV)) bColl = 0;
  /* a vector is one tuple, unless a cardinality-many attribute is given a
  ** collection of them (a set, or a vector of vectors) */
  if (bColl && pAttr->type == VT_TUPLE && !bReverse
      && !(pAttr->bMany && (pV->type == EDN_SET
                            || (pV->u.c.n > 0 && pV->u.c.a[0]->type == EDN_VECTOR)))) bColl = 0;
  if (!bColl) return txOneValue(p, TXOP_ADD, pE, pAttr, bReverse, pV, pK, 1);
  if (!pAttr->bMany && !bReverse) {
    return txErr(p, pV->line, pV->col,
                 "a collection is not a valid value for cardinality-one attribute %s", pK->u.s.z);
  }
  for (i = 0; i < pV->u.c.n; i++) {
    rc = txOneValue(p, TXOP_ADD, pE, pAttr, bReverse, pV->u.c.a[i], pK, 1);
    if (rc) return rc;
  }
  return SQLITE_OK;
}

/* A map form: its entity place in *pOut (if not NULL). */
static int txMap(Tx *p, const EdnValue *pMap, TxPlace *pOut) {
  TxPlace e;
  int i, rc, bId = 0;
  for (i = 0; i < pMap->u.c.n; i += 2) {
    if (ednIsKeyword(pMap->u.c.a[i], ":db/id")) {
      rc = txPlace(p, pMap->u.c.a[i + 1], &e, 1);
      if (rc) return rc;
      bId = 1;
      break;
    }
  }
  if (!bId) {
    int iTemp;
    rc = txTempNew(p, NULL, 0, txUserPart(p), pMap->line, pMap->col, &iTemp);
    if (rc) return rc;
    memset(&e, 0, sizeof(e));
    e.eKind = TXP_TEMP;
    e.iTemp = iTemp;
    p->aTemp[iTemp].bEntity = 1;
  }
  for (i = 0; i < pMap->u.c.n; i += 2) {
    const EdnValue *pK = pMap->u.c.a[i];
    const Attr *pAttr = NULL;
    int bReverse = 0;
    if (ednIsKeyword(pK, ":db/id")) continue;
    rc = txAttr(p, pK, &pAttr, &bReverse);
    if (rc) return rc;
    rc = txValues(p, &e, pAttr, bReverse, pMap->u.c.a[i + 1], pK);
    if (rc) return rc;
  }
  if (pOut) *pOut = e;
  return SQLITE_OK;
}

/* A list form [:db/op ...]. */
static int txList(Tx *p, const EdnValue *pF) {
  const EdnValue *pOpKw = pF->u.c.n ? pF->u.c.a[0] : NULL;
  const EdnValue *const *a = (const EdnValue *const *)pF->u.c.a;
  int n = pF->u.c.n;
  TxPlace e;
  const Attr *pAttr = NULL;
  int bReverse = 0, rc, eOp;
  TxOp *pOp;

  if (pOpKw == NULL || pOpKw->type != EDN_KEYWORD) {
    return txErr(p, pF->line, pF->col, "a transaction form must start with an operation keyword such as :db/add");
  }
  if (ednIsKeyword(pOpKw, ":db/add")) eOp = TXOP_ADD;
  else if (ednIsKeyword(pOpKw, ":db/retract")) eOp = n == 3 ? TXOP_RETRACT_ATTR : TXOP_RETRACT;
  else if (ednIsKeyword(pOpKw, ":db/retractEntity")
           || ednIsKeyword(pOpKw, ":db.fn/retractEntity")) eOp = TXOP_RETRACT_ENTITY;
  else if (ednIsKeyword(pOpKw, ":db/cas") || ednIsKeyword(pOpKw, ":db.fn/cas")) eOp = TXOP_CAS;
  else return txErr(p, pOpKw->line, pOpKw->col, "unknown operation %s", pOpKw->u.s.z);

  if ((eOp == TXOP_ADD && n != 4) || (eOp == TXOP_RETRACT && n != 4)
      || (eOp == TXOP_RETRACT_ATTR && n != 3) || (eOp == TXOP_RETRACT_ENTITY && n != 2)
      || (eOp == TXOP_CAS && n != 5)) {
    return txErr(p, pF->line, pF->col, "wrong number of arguments for %s", pOpKw->u.s.z);
  }
  /* Only an assertion makes a tempid an entity (Datomic): one named only by
  ** retractions or cas is an error in txAllocate. */
  rc = txPlace(p, a[1], &e, eOp == TXOP_ADD);
  if (rc) return rc;
  if (e.eKind == TXP_TEMP && eOp != TXOP_ADD) p->aTemp[e.iTemp].bRetract = 1;
  if (eOp == TXOP_RETRACT_ENTITY) {
    rc = txNewOp(p, &pOp);
    if (rc) return rc;
    pOp->eOp = TXOP_RETRACT_ENTITY;
    pOp->line = pF->line;
    pOp->col = pF->col;
    pOp->e = e;
    return SQLITE_OK;
  }
  rc = txAttr(p, a[2], &pAttr, &bReverse);
  if (rc) return rc;
  if (eOp == TXOP_RETRACT_ATTR || eOp == TXOP_CAS) {
    TxPlace vOldPl;
    TypedValue vOld;
    int bOldNil = 0;
    if (bReverse) {
      return txErr(p, a[2]->line, a[2]->col, "reverse attribute %s is not allowed in %s",
                   a[2]->u.s.z, pOpKw->u.s.z);
    }
    rc = txTupleDirect(p, pAttr, a[2]);
    if (rc) return rc;
    if (eOp == TXOP_CAS && pAttr->bMany) {
      /* Datomic's :db/cas: "the attribute must be :db.cardinality/one"
      ** (compare-and-swap of one value among many has no meaning) */
      return txErr(p, a[2]->line, a[2]->col,
                   "%s: %s is cardinality many; the attribute must be :db.cardinality/one",
                   pOpKw->u.s.z, a[2]->u.s.z);
    }
    memset(&vOldPl, 0, sizeof(vOldPl));
    memset(&vOld, 0, sizeof(vOld));
    if (eOp == TXOP_CAS) {
      if (a[3]->type == EDN_NIL) {
        bOldNil = 1;
      } else if (pAttr->type == VT_REF) {
        rc = txPlace(p, a[3], &vOldPl, 0);
        vOld.type = VT_REF;
      } else {
        rc = txTupleValue(p, a[3], pAttr, a[2]->u.s.z, &vOld);
      }
      if (rc) return rc;
      /* The new value becomes an ordinary op; the cas op checks the old. */
      rc = txOneValue(p, TXOP_CAS, &e, pAttr, 0, a[4], a[2], 0);
      if (rc) return rc;
      pOp = &p->aOp[p->nOp - 1];
      pOp->vOldRef = vOldPl;
      pOp->vOld = vOld;
      pOp->bOldNil = (unsigned char)bOldNil;
      return SQLITE_OK;
    }
    rc = txNewOp(p, &pOp);
    if (rc) return rc;
    pOp->eOp = TXOP_RETRACT_ATTR;
    pOp->line = a[2]->line;
    pOp->col = a[2]->col;
    pOp->e = e;
    pOp->pAttr = pAttr;
    return SQLITE_OK;
  }
  if (a[3]->type == EDN_VECTOR && !pAttr->bMany && pAttr->type != VT_REF && pAttr->type != VT_TUPLE
      && !bReverse) {
    return txErr(p, a[3]->line, a[3]->col,
                 "a collection is not a valid value for cardinality-one attribute %s", a[2]->u.s.z);
  }
  if (bReverse && e.eKind == TXP_TEMP && eOp == TXOP_ADD) {
    /* [:db/add "p" :a/_b "c"]: "p" is the value; it still names an entity
    ** of this tx, so it is not "used only as a value". */
    p->aTemp[e.iTemp].bEntity = 1;
  }
  return txOneValue(p, eOp, &e, pAttr, bReverse, a[3], a[2], 0);
}

int txExpand(Tx *p, const EdnValue *pRoot) {
  int i, rc;
  for (i = 0; i < pRoot->u.c.n; i++) {
    const EdnValue *pF = pRoot->u.c.a[i];
    if (pF->type == EDN_MAP) rc = txMap(p, pF, NULL);
    else if (pF->type == EDN_VECTOR || pF->type == EDN_LIST) rc = txList(p, pF);
    else rc = txErr(p, pF->line, pF->col, "a transaction form must be a vector or a map, got %s",
                    txEdnText(p, pF));
    if (rc) return rc;
  }
  return SQLITE_OK;
}
