/*
** edn_datoms.c — the eponymous virtual table edn_datoms: Datomic's d/datoms
** (with index-range's value bounds and seek-datoms' order) as a
** table-valued function whose rows stream from the store (README
** "edn_datoms").
**
**   SELECT e, a, v, tx FROM edn_datoms('app.db', ':eavt', 65540);
**   SELECT e, v FROM edn_datoms('app.db', ':avet', ':p/age') WHERE v >= 21 AND v < 30;
**   SELECT * FROM edn_datoms('app.db', ':aevt', ':p/name', '{"history": true}');
**
** Columns e, a (the attribute's ident, TEXT), v (native, as edn_q's cN),
** tx, added; hidden db_path, index, c1, c2, c3, opts. The components c1..c3
** follow the index's order (:eavt e a v, :aevt a e v, :avet a v e, :vaet v
** a e) and are EDN text or SQL values: an entity is an entid, an ident or a
** lookup ref, an attribute its ident or entid, a value one of the
** attribute's type (for refs an entity). The last given argument is the
** opts when it is a JSON object ({...}: no component is an EDN map).
**
** Takes the arguments as constraints (as edn_q: equality on the hidden
** columns), and `v` bounds (>, >=, <, <=) and LIMIT, which xBestIndex pushes
** into the store's SQL; gives rows in the index's order (ORDER BY on that
** order is consumed), or an "edn_datoms: " error. Calls the shared cursor
** (datoms_cursor.h), the schema and the value encoding; its xBestIndex is
** edn_datoms_plan.c.
**
** HOW IT WORKS
** xFilter resolves the components against the call's schema (idents) and
** database (lookup refs: one that names no entity is an error, as Datomic's
** "Unable to resolve entity"), writes one SELECT over the datoms (current,
** since) or the log (asOf, history) with the attribute inlined, so the
** format's partial and per-attribute indexes apply, and the values bound,
** takes it from the connection's statement cache, and steps it.
*/
#include <stdarg.h>
#include <string.h>
#include "sqlite_api.h"
#include "edn_datoms.h"
#include "datoms_cursor.h"
#include "sqlio.h"
#include "value.h"
#include "edn_datoms_int.h"

static const char eddDecl[] =
    "CREATE TABLE x(e, a, v, tx, added,"
    " db_path HIDDEN, \"index\" HIDDEN, c1 HIDDEN, c2 HIDDEN, c3 HIDDEN, opts HIDDEN)";

/* What the SQL eddSql writes depends on: a call whose shape is the last
** one's reuses its text (building it is a tenth of a point lookup). */
typedef struct EddShape {
  sqlite3_int64 iGen;           /* schema generation (attribute lists, fulltext) */
  sqlite3_int64 a;              /* the attribute given, or 0 */
  int eIndex, bE, bV, opLo, opHi, bLimit, bHistory, bAsOf, bSince, mInst;
} EddShape;

typedef struct EddVtab {
  sqlite3_vtab base;
  sqlite3 *db;                  /* the host connection */
  EddShape shape;               /* of zSql */
  char *zSql;                   /* the last SQL built, or NULL */
  int nSql;
  unsigned hSql;                /* its qCacheStmtHash */
  DCursor *pSpare;              /* a closed cursor kept for the next xOpen */
} EddVtab;

/* One call's resolved arguments. */
typedef struct EddCall {
  int eIndex;
  int nComp;
  sqlite3_value *apComp[3];
  int bE;                       /* e given */
  sqlite3_int64 e;
  const Attr *pA;               /* a given (or NULL) */
  int bV;                       /* v given */
  TypedValue v;
  sqlite3_value *pLo, *pHi;     /* v bounds pushed, or NULL */
  int opLo, opHi;               /* EDND_LO_GT/GE, EDND_HI_LT/LE */
  sqlite3_int64 iLimit;         /* < 0: none */
  int bAsOf, bSince;            /* the opts' filters (both: t1 < tx <= t2) */
  int bHistory;
  EdnArena arena;
  TypedValue lo, hi;            /* the bounds in the store's encoding */
} EddCall;

static int eddConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                      sqlite3_vtab **ppVtab, char **pzErr) {
  int rc;
  (void)pAux; (void)argc; (void)argv; (void)pzErr;
  rc = sqlioConnectTable(db, eddDecl, sizeof(EddVtab), ppVtab);
  if (rc == SQLITE_OK) ((EddVtab *)*ppVtab)->db = db;
  return rc;
}

static int eddDisconnect(sqlite3_vtab *pVtab) {
  sqlite3_free(((EddVtab *)pVtab)->zSql);
  dcurSpareFree(&((EddVtab *)pVtab)->pSpare);
  sqlite3_free(pVtab);
  return SQLITE_OK;
}

static int eddOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCur) {
  return dcurOpen(&((EddVtab *)pVtab)->pSpare, "edn_datoms", 0, ppCur);
}

static int eddClose(sqlite3_vtab_cursor *cur) {
  dcurClose(&((EddVtab *)cur->pVtab)->pSpare, (DCursor *)cur);
  return SQLITE_OK;
}

/* ------------------------------------------------------------ errors */

static int eddErr(char **pzErr, const char *zFmt, ...) {
  va_list ap;
  va_start(ap, zFmt);
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* "c2 (a of :eavt)": where a component error is. */
static const char *eddWhere(const EddCall *p, int iComp, char *zBuf, int nBuf) {
  sqlite3_snprintf(nBuf, zBuf, "c%d (%c of %s)", iComp + 1, eddSlotNames[p->eIndex][iComp],
                   eddIndexNames[p->eIndex]);
  return zBuf;
}

/* The component's place in a message: the call's p and iComp, a zW[48]
** buffer; written only on an error path (a snprintf per component costs a
** point lookup a tenth of its time). */
#define EDD_WHERE eddWhere(p, iComp, zW, sizeof zW)

/* ------------------------------------------------------------ views */

/* The asOf (bSince 0, ?1) or since (?7) tx as SQL: the parameter's tx id,
** or the last tx at or before the instant it holds. */
static const char *eddT(const DCursor *pCur, int bSince) {
  const QueryOpts *o = &pCur->opts;
  if (bSince) {
    return o->pSinceInst ? "(SELECT coalesce(max(e), 0) FROM datoms WHERE a = 3 AND v <= ?7)" : "?7";
  }
  return o->pAsOfInst ? "(SELECT coalesce(max(e), 0) FROM datoms WHERE a = 3 AND v <= ?1)" : "?1";
}

/* Appends "FROM <table> d WHERE <the database's condition>" for the
** database the opts name (SPEC.md §6, as the query compiler's qcView):
** as of T (?1), since T (?7), both (Datomic's (d/since (d/as-of db t2) t1):
** t1 < tx <= t2). bHistory 0 reads the non-history database of the same
** asOf/since (lookup refs resolve there). Returns the `added` expression. */
static const char *eddView(sqlite3_str *pSql, const EddCall *p, int bHistory, const DCursor *pCur) {
  const char *zT = eddT(pCur, 0), *zAdded = "1";
  if (bHistory) {
    sqlite3_str_appendall(pSql, " FROM timelined_transactions d WHERE d.timeline IS 0");
    if (p->bAsOf) sqlite3_str_appendf(pSql, " AND d.tx <= %s", zT);
    zAdded = "d.added";
  } else if (p->bAsOf) {
    sqlite3_str_appendf(pSql,
        " FROM timelined_transactions d WHERE d.timeline IS 0 AND d.added = 1 AND d.tx <= %s"
        " AND NOT EXISTS (SELECT 1 FROM timelined_transactions r WHERE r.a = d.a AND r.e = d.e"
        " AND r.value_type_tag = d.value_type_tag AND r.v = d.v AND r.tx > d.tx AND r.tx <= %s"
        " AND r.timeline IS 0)", zT, zT);
  } else {
    sqlite3_str_appendall(pSql, " FROM datoms d WHERE 1");
  }
  if (p->bSince) sqlite3_str_appendf(pSql, " AND d.tx > %s", eddT(pCur, 1));
  return zAdded;
}

/* True when the view reads the datoms table (with its flag columns). */
static int eddOnDatoms(const EddCall *p) {
  return !p->bHistory && !p->bAsOf;
}

/* Binds ?1 (asOf) and ?7 (since), each when given. */
static int eddBindT(const DCursor *pCur, sqlite3_stmt *pStmt) {
  const QueryOpts *o = &pCur->opts;
  int rc = SQLITE_OK;
  if (o->bAsOf) rc = sqlite3_bind_int64(pStmt, 1, o->pAsOfInst ? o->pAsOfInst->u.i : o->iAsOf);
  if (rc == SQLITE_OK && o->bSince) {
    rc = sqlite3_bind_int64(pStmt, 7, o->pSinceInst ? o->pSinceInst->u.i : o->iSince);
  }
  return rc;
}

/* The value test "d.v = ?N" in the store's encoding: a fulltext attribute
** stores the rowid of its text. */
static void eddValueEq(sqlite3_str *pSql, const Attr *pA, int iParam) {
  if (pA->bFulltext) {
    sqlite3_str_appendf(pSql, " AND d.v = (SELECT rowid FROM fulltext_values WHERE text = ?%d)",
                        iParam);
  } else {
    sqlite3_str_appendf(pSql, " AND d.v = ?%d", iParam);
  }
}

/* ------------------------------------------------------------ components */

/* The EDN form of a component given as an SQL value (TEXT is EDN text;
** numbers are numbers). *ppV NULL for a BLOB (bytes, taken as they are). */
static int eddForm(EddCall *p, sqlite3_value *pVal, int iComp, EdnValue **ppV, char **pzErr) {
  char zW[48];
  *ppV = NULL;
  switch (sqlite3_value_type(pVal)) {
    case SQLITE_INTEGER:
      *ppV = ednNewInt(&p->arena, sqlite3_value_int64(pVal));
      return *ppV ? SQLITE_OK : SQLITE_NOMEM;
    case SQLITE_FLOAT:
      *ppV = ednNew(&p->arena, EDN_DOUBLE);
      if (*ppV == NULL) return SQLITE_NOMEM;
      (*ppV)->u.d = sqlite3_value_double(pVal);
      return SQLITE_OK;
    case SQLITE_TEXT: {
      const char *z;
      int n, rc = sqlioText(pVal, &z, &n);
      EdnError err;
      if (rc != SQLITE_OK) return rc;
      memset(&err, 0, sizeof err);
      rc = ednReadOne(&p->arena, z, n, ppV, &err);
      if (rc == SQLITE_ERROR) {
        return eddErr(pzErr, "%s: line %d col %d: %s", eddWhere(p, iComp, zW, sizeof zW), err.line,
                      err.col, err.zMsg);
      }
      return rc;
    }
    default:
      return SQLITE_OK;
  }
}

/* Text for a form in a message (EDN), sqlite3_malloc'd. */
static char *eddShow(const EdnValue *pV) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  ednPrint(pOut, pV);
  return sqlite3_str_finish(pOut);
}

/* A component given as an ident's exact text (":p/name", the common case)
** in *pz, *pn, read without the EDN reader: the schema's idents are the
** keywords as EDN reads them, so a match means the same keyword. 0 when
** it is not TEXT starting with ':' (the EDN reader judges it). */
static int eddKwText(sqlite3_value *pVal, char *aBuf, int nBuf, const char **pz, int *pn) {
  if (sqlite3_value_type(pVal) != SQLITE_TEXT) return 0;
  if (sqlioTextIn(pVal, aBuf, nBuf, pz, pn) != SQLITE_OK) return 0;
  return *pn > 1 && (*pz)[0] == ':';
}

static int eddLookup(DCursor *pCur, EddCall *p, const Attr *pA, const EdnValue *pVal,
                     sqlite3_int64 *pE, char **pzErr);

/* An entity component (e, or v of a ref attribute): an entid, an ident or
** a lookup ref; an ident or lookup ref that names no entity is an error
** (Datomic's datoms: "Unable to resolve entity"). */
static int eddEntity(DCursor *pCur, EddCall *p, int iComp, sqlite3_int64 *pE, char **pzErr) {
  EdnValue *pV = NULL;
  char zW[48], aKw[128];
  char *zShow;
  const char *zKw;
  int rc, nKw;
  if (eddKwText(p->apComp[iComp], aKw, (int)sizeof aKw, &zKw, &nKw)
      && (*pE = schemaEntid(pCur->call.pSchema, zKw, nKw)) != 0) {
    return SQLITE_OK;
  }
  rc = eddForm(p, p->apComp[iComp], iComp, &pV, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (pV && pV->type == EDN_INT) {
    *pE = pV->u.i;
    return SQLITE_OK;
  }
  if (pV && pV->type == EDN_KEYWORD) {
    *pE = schemaEntid(pCur->call.pSchema, pV->u.s.z, pV->u.s.n);
    if (*pE == 0) return eddErr(pzErr, "%s: unknown ident %s", EDD_WHERE, pV->u.s.z);
    return SQLITE_OK;
  }
  if (pV && pV->type == EDN_VECTOR && pV->u.c.n == 2 && pV->u.c.a[0]->type == EDN_KEYWORD) {
    const EdnValue *pK = pV->u.c.a[0];
    const Attr *pA = schemaAttrByIdent(pCur->call.pSchema, pK->u.s.z, pK->u.s.n);
    if (pA == NULL) {
      return eddErr(pzErr, "%s: lookup ref on unknown attribute %s", EDD_WHERE, pK->u.s.z);
    }
    if (pA->eUnique == UNIQUE_NONE) {
      return eddErr(pzErr, "%s: lookup ref attribute %s is not :db/unique", EDD_WHERE, pA->zIdent);
    }
    rc = eddLookup(pCur, p, pA, pV->u.c.a[1], pE, pzErr);
    if (rc != SQLITE_OK || *pE != 0) return rc;
    zShow = eddShow(pV);
    rc = zShow ? eddErr(pzErr, "%s: lookup ref %s names no entity", EDD_WHERE, zShow)
               : SQLITE_NOMEM;
    sqlite3_free(zShow);
    return rc;
  }
  zShow = pV ? eddShow(pV) : NULL;
  rc = eddErr(pzErr, "%s: expected an entity id, ident or lookup ref, got %s%s%s", EDD_WHERE,
              pV ? ednKindName(pV) : "a BLOB", pV ? " " : "", zShow ? zShow : "");
  sqlite3_free(zShow);
  return rc;
}

/* An attribute component: its ident or entid. */
static int eddAttr(DCursor *pCur, EddCall *p, int iComp, char **pzErr) {
  EdnValue *pV = NULL;
  char zW[48], aKw[128];
  char *zShow;
  const char *zKw;
  int rc = SQLITE_OK, nKw;
  if (eddKwText(p->apComp[iComp], aKw, (int)sizeof aKw, &zKw, &nKw)
      && (p->pA = schemaAttrByIdent(pCur->call.pSchema, zKw, nKw)) != NULL) {
    /* the ident's text: no EDN to read */
  } else if ((rc = eddForm(p, p->apComp[iComp], iComp, &pV, pzErr)) != SQLITE_OK) {
    return rc;
  } else if (pV && pV->type == EDN_KEYWORD) {
    p->pA = schemaAttrByIdent(pCur->call.pSchema, pV->u.s.z, pV->u.s.n);
    if (p->pA == NULL) return eddErr(pzErr, "%s: unknown attribute %s", EDD_WHERE, pV->u.s.z);
  } else if (pV && pV->type == EDN_INT) {
    p->pA = schemaAttr(pCur->call.pSchema, pV->u.i);
    if (p->pA == NULL) {
      return eddErr(pzErr, "%s: entity %lld is not an attribute", EDD_WHERE, pV->u.i);
    }
  } else {
    zShow = pV ? eddShow(pV) : NULL;
    rc = eddErr(pzErr, "%s: expected an attribute (its ident or entid), got %s%s%s", EDD_WHERE,
                pV ? ednKindName(pV) : "a BLOB", pV ? " " : "", zShow ? zShow : "");
    sqlite3_free(zShow);
    return rc;
  }
  /* Datomic keeps in AVET only attributes with :db/index or :db/unique
  ** (Attribute.hasAVET), and in VAET only refs. */
  if (p->eIndex == EDD_AVET && !p->pA->bIndex && p->pA->eUnique == UNIQUE_NONE) {
    return eddErr(pzErr, "%s: %s has neither :db/index nor :db/unique, so it is not in :avet"
                  " (read it through :aevt)", EDD_WHERE, p->pA->zIdent);
  }
  if (p->eIndex == EDD_VAET && p->pA->type != VT_REF) {
    return eddErr(pzErr, "%s: %s is %s; :vaet holds ref attributes only", EDD_WHERE,
                  p->pA->zIdent, vtName(p->pA->type));
  }
  return SQLITE_OK;
}

/* A value component of attribute pA (NULL for :vaet's v: a ref). */
static int eddValue(DCursor *pCur, EddCall *p, int iComp, char **pzErr) {
  const Attr *pA = p->pA;
  EdnValue *pV = NULL;
  char zW[48], *zErr = NULL;
  int rc;
  memset(&p->v, 0, sizeof p->v);
  p->bV = 1;
  if (pA == NULL || pA->type == VT_REF) {
    p->v.type = VT_REF;
    return eddEntity(pCur, p, iComp, &p->v.i, pzErr);
  }
  if (sqlite3_value_type(p->apComp[iComp]) == SQLITE_BLOB) {
    if (pA->type != VT_BYTES) {
      return eddErr(pzErr, "%s: expected %s, got a BLOB", EDD_WHERE, vtName(pA->type));
    }
    p->v.type = VT_BYTES;
    p->v.z = (const char *)sqlite3_value_blob(p->apComp[iComp]);
    p->v.n = sqlite3_value_bytes(p->apComp[iComp]);
    return SQLITE_OK;
  }
  rc = eddForm(p, p->apComp[iComp], iComp, &pV, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (pA->type == VT_TUPLE) {
    const EdnValue *pAt = NULL;
    rc = valueTupleFromEdn(pV, &pA->tuple, &p->arena, &p->v, &zErr, &pAt);
  } else {
    rc = valueFromEdn(pV, pA->type, &p->v, &zErr);
  }
  if (rc == SQLITE_ERROR) rc = eddErr(pzErr, "%s: %s", EDD_WHERE, zErr);
  sqlite3_free(zErr);
  return rc;
}

/* The entity lookup ref [pA pVal] names in the database the call reads
** (not its history), 0 when none. */
static int eddLookup(DCursor *pCur, EddCall *p, const Attr *pA, const EdnValue *pVal,
                     sqlite3_int64 *pE, char **pzErr) {
  sqlite3_str *pSql;
  sqlite3_stmt *pStmt = NULL;
  TypedValue tv;
  char *zSql, *zErr = NULL;
  int rc, bOwn = 0;
  *pE = 0;
  memset(&tv, 0, sizeof tv);
  if (pA->type == VT_REF && pVal->type == EDN_KEYWORD) {
    tv.type = VT_REF;
    tv.i = schemaEntid(pCur->call.pSchema, pVal->u.s.z, pVal->u.s.n);
    if (tv.i == 0) return SQLITE_OK;
  } else {
    const EdnValue *pAt = NULL;
    rc = pA->type == VT_TUPLE ? valueTupleFromEdn(pVal, &pA->tuple, &p->arena, &tv, &zErr, &pAt)
                              : valueFromEdn(pVal, pA->type, &tv, &zErr);
    sqlite3_free(zErr);
    if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_OK;
  }
  pSql = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pSql, "SELECT d.e");
  eddView(pSql, p, 0, pCur);
  sqlite3_str_appendf(pSql, " AND d.a = %lld AND d.value_type_tag = %d", pA->e, vtTag(pA->type));
  eddValueEq(pSql, pA, 2);
  sqlite3_str_appendall(pSql, " LIMIT 1");
  zSql = sqlite3_str_finish(pSql);
  if (zSql == NULL) return SQLITE_NOMEM;
  rc = qCacheStmt(pCur->call.pConn, zSql, (int)strlen(zSql), &pStmt, &bOwn, pzErr);
  sqlite3_free(zSql);
  if (rc == SQLITE_OK) rc = eddBindT(pCur, pStmt);
  if (rc == SQLITE_OK) rc = valueBind(pStmt, 2, &tv);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) *pE = sqlite3_column_int64(pStmt, 0);
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
    if (rc != SQLITE_OK) eddErr(pzErr, "lookup ref: %s", sqlite3_errmsg(pCur->call.pConn->db));
  }
  if (pStmt && bOwn) {
    sqlite3_finalize(pStmt);
  } else if (pStmt) {
    sqlite3_reset(pStmt);
    sqlite3_clear_bindings(pStmt);
  }
  return rc;
}

/* Resolves the components in index order: the attribute first, whose type
** a value takes. */
static int eddResolve(DCursor *pCur, EddCall *p, char **pzErr) {
  const char *zSlots = eddSlotNames[p->eIndex];
  int i, rc = SQLITE_OK;
  for (i = 0; i < p->nComp && rc == SQLITE_OK; i++) {
    if (zSlots[i] == 'a') rc = eddAttr(pCur, p, i, pzErr);
  }
  for (i = 0; i < p->nComp && rc == SQLITE_OK; i++) {
    if (zSlots[i] == 'e') {
      p->bE = 1;
      rc = eddEntity(pCur, p, i, &p->e, pzErr);
    } else if (zSlots[i] == 'v') {
      rc = eddValue(pCur, p, i, pzErr);
    }
  }
  return rc;
}

/* ------------------------------------------------------------ bounds */

/* The host's bound pVal in the store's encoding of the fixed attribute's
** values, when comparing there orders as comparing the native values does
** (SQLite compares both columns without affinity); 0 when it cannot be
** pushed (SQLite's own check of the native v still filters). */
static int eddBound(const EddCall *p, sqlite3_value *pVal, TypedValue *pOut) {
  int eType = sqlite3_value_type(pVal);
  ValueType t = p->eIndex == EDD_VAET ? VT_REF : p->pA ? p->pA->type : VT_NONE;
  memset(pOut, 0, sizeof *pOut);
  if (t == VT_NONE || (p->pA && p->pA->bFulltext && p->eIndex != EDD_VAET)) return 0;
  if (t == VT_INSTANT) {
    /* native TEXT RFC 3339, stored µs */
    const char *z = (const char *)sqlite3_value_text(pVal);
    if (eType != SQLITE_TEXT || z == NULL) return 0;
    if (ednParseInstant(z, sqlite3_value_bytes(pVal), &pOut->i) != SQLITE_OK) return 0;
    pOut->type = VT_INSTANT;
    return 1;
  }
  if (t == VT_UUID) {
    /* native hyphenated lowercase TEXT, stored 16 bytes: the same order */
    const char *z = (const char *)sqlite3_value_text(pVal);
    if (eType != SQLITE_TEXT || z == NULL) return 0;
    if (ednParseUuid(z, sqlite3_value_bytes(pVal), pOut->uuid) != SQLITE_OK) return 0;
    pOut->type = VT_UUID;
    return 1;
  }
  /* ref, boolean, long, double, string, keyword, bytes: the stored value is
  ** the native one */
  return 2;
}

/* ------------------------------------------------------------ the SQL */

/* Appends the SELECT of the call's datoms. */
static void eddSql(sqlite3_str *pSql, const DCursor *pCur, const EddCall *p, int bLo, int bHi) {
  static const char *const azOrder[] = {
    "d.e, d.a, d.value_type_tag, d.v", "d.a, d.e, d.value_type_tag, d.v",
    "d.a, d.value_type_tag, d.v, d.e", "d.v, d.a, d.e"};
  const Schema *pS = pCur->call.pSchema;
  const char *zAdded;
  int i, n = schemaAttrCount(pS), nFt = 0;
  for (i = 0; i < n; i++) nFt += schemaAttrAt(pS, i)->bFulltext;
  sqlite3_str_appendall(pSql, "SELECT d.e, d.a, ");
  if (p->pA && p->eIndex != EDD_VAET) {
    sqlite3_str_appendall(pSql, p->pA->bFulltext
                                ? "(SELECT text FROM fulltext_values WHERE rowid = d.v)" : "d.v");
  } else if (nFt && p->eIndex != EDD_VAET) {
    int bFirst = 1;
    sqlite3_str_appendall(pSql, "CASE WHEN d.a IN (");
    for (i = 0; i < n; i++) {
      const Attr *pA = schemaAttrAt(pS, i);
      if (!pA->bFulltext) continue;
      sqlite3_str_appendf(pSql, "%s%lld", bFirst ? "" : ",", pA->e);
      bFirst = 0;
    }
    sqlite3_str_appendall(pSql, ") THEN (SELECT text FROM fulltext_values WHERE rowid = d.v)"
                                " ELSE d.v END");
  } else {
    sqlite3_str_appendall(pSql, "d.v");
  }
  sqlite3_str_appendall(pSql, ", d.value_type_tag, d.tx, ");
  {
    sqlite3_str *pRest = sqlite3_str_new(NULL);
    zAdded = eddView(pRest, p, p->bHistory, pCur);
    sqlite3_str_appendall(pSql, zAdded);
    {
      char *z = sqlite3_str_finish(pRest);
      if (z) sqlite3_str_appendall(pSql, z);
      else sqlite3_str_appendall(pSql, " <oom>");
      sqlite3_free(z);
    }
  }
  /* only the index's attributes: Datomic's AVET and VAET */
  if (p->eIndex == EDD_AVET || p->eIndex == EDD_VAET) {
    if (eddOnDatoms(p)) {
      sqlite3_str_appendall(pSql, p->eIndex == EDD_AVET ? " AND d.index_avet IS NOT 0"
                                                         : " AND d.index_vaet IS NOT 0");
    } else if (p->pA == NULL) {
      int bFirst = 1;
      sqlite3_str_appendall(pSql, " AND d.a IN (");
      for (i = 0; i < n; i++) {
        const Attr *pA = schemaAttrAt(pS, i);
        int bIn = p->eIndex == EDD_AVET ? pA->bIndex || pA->eUnique : pA->type == VT_REF;
        if (!bIn) continue;
        sqlite3_str_appendf(pSql, "%s%lld", bFirst ? "" : ",", pA->e);
        bFirst = 0;
      }
      sqlite3_str_appendall(pSql, ")");
    }
  }
  if (p->bE) sqlite3_str_appendall(pSql, " AND d.e = ?2");
  if (p->pA) {
    sqlite3_str_appendf(pSql, " AND d.a = %lld AND d.value_type_tag = %d", p->pA->e,
                        vtTag(p->pA->type));
  }
  if (p->bV) {
    if (p->pA && p->eIndex != EDD_VAET) eddValueEq(pSql, p->pA, 3);
    else sqlite3_str_appendall(pSql, " AND d.v = ?3 AND d.value_type_tag = 0");
  }
  if (bLo) sqlite3_str_appendf(pSql, " AND d.v %s ?4", p->opLo == EDND_LO_GT ? ">" : ">=");
  if (bHi) sqlite3_str_appendf(pSql, " AND d.v %s ?5", p->opHi == EDND_HI_LT ? "<" : "<=");
  sqlite3_str_appendf(pSql, " ORDER BY %s%s", azOrder[p->eIndex],
                      p->bHistory ? ", d.tx DESC, d.added" : "");
  if (p->iLimit >= 0) sqlite3_str_appendall(pSql, " LIMIT ?6");
}

/* ------------------------------------------------------------ xFilter */

/* The index argument: one of the four keywords. */
static int eddIndexArg(sqlite3_value *pVal, int *peIndex, char **pzErr) {
  const char *z = (const char *)sqlite3_value_text(pVal);
  int i;
  if (sqlite3_value_type(pVal) == SQLITE_TEXT && z) {
    for (i = 0; i < 4; i++) {
      if (strcmp(z, eddIndexNames[i]) == 0) {
        *peIndex = i;
        return SQLITE_OK;
      }
    }
  }
  if (z == NULL && sqlite3_value_type(pVal) == SQLITE_TEXT) return SQLITE_NOMEM;
  return eddErr(pzErr, "unknown index %s: use :eavt, :aevt, :avet or :vaet", z ? z : "");
}


/* Splits the arguments: components c1..c3 (consecutive), the opts (the
** last given argument when it is a JSON object). */
static int eddArgs(EddCall *p, sqlite3_value **apArg, sqlite3_value **ppOpts, char **pzErr) {
  int i;
  *ppOpts = apArg[5];
  for (i = 0; i < 3; i++) p->apComp[i] = apArg[2 + i];
  if (*ppOpts == NULL) {
    for (i = 2; i >= 0 && p->apComp[i] == NULL; i--) {}
    if (i >= 0 && eddIsOpts(p->apComp[i])) {
      *ppOpts = p->apComp[i];
      p->apComp[i] = NULL;
    }
  } else if (sqlite3_value_type(*ppOpts) != SQLITE_NULL && !eddIsOpts(*ppOpts)) {
    return eddErr(pzErr, "too many components: %s takes at most 3 (%c %c %c)",
                  eddIndexNames[p->eIndex], eddSlotNames[p->eIndex][0], eddSlotNames[p->eIndex][1],
                  eddSlotNames[p->eIndex][2]);
  }
  for (i = 0; i < 3 && p->apComp[i]; i++) {}
  p->nComp = i;
  for (; i < 3; i++) {
    if (p->apComp[i]) {
      return eddErr(pzErr, "c%d given without c%d", i + 1, p->nComp + 1);
    }
  }
  return SQLITE_OK;
}

/* Binds the call's values on the statement eddSql wrote. */
static int eddBind(DCursor *pCur, EddCall *p, sqlite3_stmt *pStmt, int bLo, int bHi) {
  int rc = eddBindT(pCur, pStmt);
  if (rc == SQLITE_OK && p->bE) rc = sqlite3_bind_int64(pStmt, 2, p->e);
  if (rc == SQLITE_OK && p->bV) rc = valueBind(pStmt, 3, &p->v);
  if (rc == SQLITE_OK && bLo) {
    rc = p->lo.type ? valueBind(pStmt, 4, &p->lo) : sqlite3_bind_value(pStmt, 4, p->pLo);
  }
  if (rc == SQLITE_OK && bHi) {
    rc = p->hi.type ? valueBind(pStmt, 5, &p->hi) : sqlite3_bind_value(pStmt, 5, p->pHi);
  }
  if (rc == SQLITE_OK && p->iLimit >= 0) rc = sqlite3_bind_int64(pStmt, 6, p->iLimit);
  return rc;
}

/* The v bounds, LIMIT and OFFSET xBestIndex pushed, from argv[iArg...]. */
static void eddPushed(EddCall *p, int idxNum, int argc, sqlite3_value **argv, int iArg) {
  sqlite3_int64 nOffset = 0;
  p->iLimit = -1;
  if ((idxNum & (EDND_LO_GT | EDND_LO_GE)) && iArg < argc) {
    p->pLo = argv[iArg++];
    p->opLo = idxNum & EDND_LO_GT ? EDND_LO_GT : EDND_LO_GE;
  }
  if ((idxNum & (EDND_HI_LT | EDND_HI_LE)) && iArg < argc) {
    p->pHi = argv[iArg++];
    p->opHi = idxNum & EDND_HI_LT ? EDND_HI_LT : EDND_HI_LE;
  }
  if ((idxNum & EDND_LIMIT) && iArg < argc) {
    sqlite3_value *pL = argv[iArg++];
    p->iLimit = sqlite3_value_type(pL) == SQLITE_INTEGER ? sqlite3_value_int64(pL) : -1;
  }
  if ((idxNum & EDND_OFFSET) && iArg < argc) {
    sqlite3_value *pO = argv[iArg++];
    nOffset = sqlite3_value_type(pO) == SQLITE_INTEGER ? sqlite3_value_int64(pO) : -1;
  }
  /* The host applies OFFSET to our rows, then its LIMIT: we give limit +
  ** offset. A negative limit is none. */
  if (p->iLimit >= 0 && nOffset < 0) p->iLimit = -1;
  if (p->iLimit >= 0 && nOffset > 0) p->iLimit += nOffset;
}

static int eddRun(DCursor *pCur, EddCall *p, sqlite3_value *pDb, sqlite3_value *pOpts,
                  sqlite3 *host, char **pzErr);

static int eddFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv) {
  DCursor *pCur = (DCursor *)cur;
  sqlite3_value *apArg[EDND_NARG] = {NULL, NULL, NULL, NULL, NULL, NULL};
  sqlite3_value *pOpts = NULL;
  EddCall c;
  char *zErr = NULL;
  sqlite3_int64 aArena[128];       /* the components' EDN: no allocation for small ones */
  int i, j = 0, rc;
  (void)idxStr;
  dcurReleaseKeep(pCur);
  pCur->bEof = 1;
  pCur->iRowid = 0;
  if ((idxNum & EDND_REQUIRED) != EDND_REQUIRED) {
    int bDb = (idxNum & 1) == 0, bIx = (idxNum & 2) == 0;
    char *z = sqlite3_mprintf("missing argument%s %s%s%s", bDb && bIx ? "s" : "",
                              bDb ? "db_path" : "", bDb && bIx ? " and " : "", bIx ? "index" : "");
    rc = sqlioVtabError(cur->pVtab, "edn_datoms", z ? SQLITE_ERROR : SQLITE_NOMEM, z);
    sqlite3_free(z);
    return rc;
  }
  for (i = 0; i < EDND_NARG && j < argc; i++) {
    if (idxNum & (1 << i)) apArg[i] = argv[j++];
  }
  rc = dcurSaveArgs(pCur, apArg, (idxNum & EDND_ECHO) ? EDND_NARG : 0);
  if (rc != SQLITE_OK) return rc;
  memset(&c, 0, sizeof c);
  ednArenaInitWith(&c.arena, aArena, sizeof aArena);
  eddPushed(&c, idxNum, argc, argv, j);
  pCur->bBounds = c.pLo != NULL || c.pHi != NULL;
  /* NULL in a required argument or a component: no rows (SPEC.md §2) */
  for (i = 0; i < EDND_NARG - 1; i++) {
    if (apArg[i] && sqlite3_value_type(apArg[i]) == SQLITE_NULL) goto done;
  }
  if (sqlite3_value_type(apArg[0]) == SQLITE_NULL || sqlite3_value_type(apArg[1]) == SQLITE_NULL) {
    goto done;
  }
  rc = eddIndexArg(apArg[1], &c.eIndex, &zErr);
  if (rc == SQLITE_OK) rc = eddArgs(&c, apArg, &pOpts, &zErr);
  if (rc == SQLITE_OK) rc = eddRun(pCur, &c, apArg[0], pOpts, ((EddVtab *)cur->pVtab)->db, &zErr);
  if (rc != SQLITE_OK && zErr) {
    rc = sqlioVtabError(cur->pVtab, "edn_datoms", rc, zErr);
    dcurRelease(pCur);
  }
done:
  ednArenaReset(&c.arena);
  sqlite3_free(zErr);
  return rc;
}

/* True when the call's datoms are one at most, so the end of its rows
** needs no step of the statement (a point lookup's second step is a tenth
** of its cost): e, a and v given (the datoms table is unique on them), e
** and a of a cardinality-one attribute (the transactor keeps one value,
** as pull reads it), or a and v of a unique attribute in :avet. Only on
** the datoms table: a history or asOf view reads the log. */
static int eddAtMostOne(const EddCall *p) {
  if (!eddOnDatoms(p)) return 0;
  if (p->bE && p->bV && p->pA) return 1;
  if (p->bE && p->pA && !p->pA->bMany) return p->eIndex == EDD_EAVT || p->eIndex == EDD_AEVT;
  return p->bV && p->pA && p->pA->eUnique != UNIQUE_NONE && p->eIndex == EDD_AVET;
}

/* Resolves the components on the call's schema, builds the statement and
** takes its first step (*pbRedo: the reader's snapshot was newer than that
** schema; start again, see dcurStepFirst). */
static int eddStart(DCursor *pCur, EddCall *p, int *pbRedo, char **pzErr) {
  sqlite3_str *pSql = NULL;
  sqlite3_stmt *pStmt = NULL;
  char *zSql = NULL;
  int rc, bLo = 0, bHi = 0;
  *pbRedo = 0;
  rc = eddResolve(pCur, p, pzErr);
  if (rc == SQLITE_ERROR) {
    /* an ident the schema handed out with a lazy reader may not know yet */
    int rc2 = dcurRecheck(pCur, pbRedo, pzErr);
    if (rc2 != SQLITE_OK) return rc2;
    if (*pbRedo) return SQLITE_OK;
  }
  if (rc != SQLITE_OK) return rc;
  if ((p->pLo || p->pHi) && p->pA && p->pA->type == VT_TUPLE && p->eIndex != EDD_VAET) {
    /* SQLite checks every bound again on v, the tuple's JSON text: no range
    ** could come out in Datomic's tuple order, so none is given */
    return eddErr(pzErr, DCUR_TUPLE_BOUNDS, p->pA->zIdent, DCUR_TUPLE_DATOMS);
  }
  /* A bound that cannot be written in the store's encoding is left to the
  ** host's check, and then a LIMIT cannot be pushed either. */
  if (p->pLo) {
    bLo = eddBound(p, p->pLo, &p->lo) != 0;
    if (!bLo) p->iLimit = -1;
  }
  if (p->pHi) {
    bHi = eddBound(p, p->pHi, &p->hi) != 0;
    if (!bHi) p->iLimit = -1;
  }
  {
    EddVtab *pTab = (EddVtab *)pCur->base.pVtab;
    const QueryOpts *o = &pCur->opts;
    EddShape sh;
    memset(&sh, 0, sizeof sh);
    sh.iGen = schemaGeneration(pCur->call.pSchema);
    sh.a = p->pA ? p->pA->e : 0;
    sh.eIndex = p->eIndex;
    sh.bE = p->bE;
    sh.bV = p->bV;
    sh.opLo = bLo ? p->opLo : 0;
    sh.opHi = bHi ? p->opHi : 0;
    sh.bLimit = p->iLimit >= 0;
    sh.bHistory = p->bHistory;
    sh.bAsOf = p->bAsOf;
    sh.bSince = p->bSince;
    sh.mInst = (o->pAsOfInst ? 1 : 0) | (o->pSinceInst ? 2 : 0);
    if (pTab->zSql == NULL || memcmp(&sh, &pTab->shape, sizeof sh) != 0) {
      sqlite3_free(pTab->zSql);
      pTab->zSql = NULL;
      pSql = sqlite3_str_new(NULL);
      eddSql(pSql, pCur, p, bLo, bHi);
      rc = sqlite3_str_errcode(pSql);
      zSql = sqlite3_str_finish(pSql);
      if (rc == SQLITE_OK && zSql == NULL) rc = SQLITE_NOMEM;
      if (rc != SQLITE_OK) {
        sqlite3_free(zSql);
        return rc;
      }
      pTab->zSql = zSql;
      pTab->nSql = (int)strlen(zSql);
      pTab->hSql = qCacheStmtHash(zSql, pTab->nSql);
      pTab->shape = sh;
    }
    rc = dcurPrepareHashed(pCur, pTab->zSql, pTab->nSql, pTab->hSql, &pStmt, pzErr);
  }
  if (rc == SQLITE_OK) rc = eddBind(pCur, p, pStmt, bLo, bHi);
  pCur->bOne = eddAtMostOne(p);
  if (rc == SQLITE_OK) return dcurStepFirst(pCur, pbRedo);
  return rc;
}

/* Opens the call, then starts the statement (twice at most: once more on
** the schema of a newer snapshot). */
static int eddRun(DCursor *pCur, EddCall *p, sqlite3_value *pDb, sqlite3_value *pOpts,
                  sqlite3 *host, char **pzErr) {
  sqlite3_int64 iLimit = p->iLimit;
  int rc, bRedo = 0, nTry;
  rc = dcurBeginKept(pCur, host, pDb, pOpts, pzErr);
  if (rc != SQLITE_OK) return rc;
  p->bHistory = pCur->opts.bHistory;
  p->bAsOf = pCur->opts.bAsOf;
  p->bSince = pCur->opts.bSince;
  for (nTry = 0; nTry < 2; nTry++) {
    p->bE = p->bV = 0;
    p->pA = NULL;
    p->iLimit = iLimit;
    memset(&p->v, 0, sizeof p->v);
    memset(&p->lo, 0, sizeof p->lo);
    memset(&p->hi, 0, sizeof p->hi);
    rc = eddStart(pCur, p, &bRedo, pzErr);
    if (rc != SQLITE_OK || !bRedo) break;
  }
  return rc;
}

/* The table's visible columns e, a, v, tx, added: the row's columns they show. */
static const unsigned char eddRowCols[EDND_COL_DBPATH] = {
  DCUR_COL_E, DCUR_COL_A, DCUR_COL_V, DCUR_COL_TX, DCUR_COL_ADDED
};

static int eddColumn(sqlite3_vtab_cursor *cur, sqlite3_context *pCtx, int iCol) {
  return dcurColumn((DCursor *)cur, eddRowCols, EDND_COL_DBPATH, iCol, pCtx);
}

static sqlite3_module eddModule = {
  .iVersion = 0,
  .xCreate = 0,     /* eponymous-only */
  .xConnect = eddConnect,
  .xBestIndex = eddBestIndex,
  .xDisconnect = eddDisconnect,
  .xOpen = eddOpen,
  .xClose = eddClose,
  .xFilter = eddFilter,
  .xNext = dcurNext,
  .xEof = dcurEof,
  .xColumn = eddColumn,
  .xRowid = dcurRowid,
};

int eddRegister(sqlite3 *db) {
  return sqlite3_create_module_v2(db, "edn_datoms", &eddModule, NULL, NULL);
}
