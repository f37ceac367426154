/*
** query_compile_sql.c — what every compile file shares, the lowest of
** them: the compile's errors (qcErr, qcNoMem) and parameters (qcParam), and
** SQL text: type classes and names, value tags and set keys (Clojure's = over stored values),
** lookup refs and idents as scalar subqueries, the datoms of the database
** a query reads (current, as of, since, history), and pull find columns.
** Takes types, SQL fragments and EDN constants; gives sqlite3_malloc'd SQL
** (NULL on OOM). Calls the schema, the pull checker and nothing above.
*/
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdarg.h>
#include "query_compile_scope.h"

int qcNoMem(QComp *pC) {
  if (pC->rc == SQLITE_OK) pC->rc = SQLITE_NOMEM;
  return pC->rc;
}

int qcErr(QComp *pC, const EdnValue *p, const char *zFmt, ...) {
  va_list ap;
  int rc;
  if (pC->rc != SQLITE_OK) return pC->rc;
  if (p == NULL || p->line <= 0) p = pC->pAt;
  va_start(ap, zFmt);
  rc = ednErrorV(pC->pzErr, "", p ? p->line : 0, p ? p->col : 0, zFmt, ap);
  va_end(ap);
  if (rc == SQLITE_NOMEM) return qcNoMem(pC);
  pC->rc = rc;
  return pC->rc;
}

/* SQLite's SQLITE_LIMIT_SQL_LENGTH on the host's connection (its default
** when the connection is not known: the tests). */
static int qcSqlLengthLimit(QComp *pC) {
  return pC->pOpts && pC->pOpts->pDb ? sqlite3_limit(pC->pOpts->pDb, SQLITE_LIMIT_SQL_LENGTH, -1)
                                     : 1000000000;
}

int qcCompoundLimit(QComp *pC, const EdnValue *pAt, int nSelect, const char *zFmt, ...) {
  va_list ap;
  char *zWhat;
  if (pC->rc != SQLITE_OK) return 1;
  if (pC->nMaxCompound <= 0 || nSelect <= pC->nMaxCompound) return 0;
  va_start(ap, zFmt);
  zWhat = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  if (zWhat == NULL) return qcNoMem(pC), 1;
  qcErr(pC, pAt, "%s; SQLite unions at most %d SELECTs in one compound SELECT", zWhat,
        pC->nMaxCompound);
  sqlite3_free(zWhat);
  return 1;
}

int qcTextBudget(QComp *pC, sqlite3_int64 n) {
  if (pC->rc != SQLITE_OK) return 1;
  pC->nText += n;
  if (pC->nText <= pC->nMaxText) return 0;
  if (pC->pTopCall) {
    qcErr(pC, pC->pTopCall->pForm, "rule %s expands to more than %lld bytes of SQL, the most the "
          "compiler builds for one statement (SQLite's limit: %d bytes, and its parser stack); "
          "its calls copy the rows before them into every definition of the rules they call",
          pC->pTopCall->zName, pC->nMaxText, qcSqlLengthLimit(pC));
  } else {
    qcErr(pC, NULL, "the query expands to more than %lld bytes of SQL, the most the compiler "
          "builds for one statement (SQLite's limit: %d bytes, and its parser stack)",
          pC->nMaxText, qcSqlLengthLimit(pC));
  }
  return 1;
}

int qcPoll(QComp *pC) {
  const QueryOpts *pO = pC->pOpts;
  if (pC->rc != SQLITE_OK || pO == NULL || pO->xInterrupted == NULL) return pC->rc;
  if (++pC->nPoll % QC_POLL_STEPS != 0 || !pO->xInterrupted(pO->pInterruptArg)) return SQLITE_OK;
  sqlite3_free(*pC->pzErr);
  *pC->pzErr = sqlite3_mprintf("interrupted");
  pC->rc = *pC->pzErr ? SQLITE_INTERRUPT : SQLITE_NOMEM;
  return pC->rc;
}

int qcParamsHaveLong(const QComp *pC, const int *aP, int nP) {
  int i;
  for (i = 0; i < nP; i++) {
    const QParam *pP = aP[i] > 0 ? &pC->aParam[aP[i] - 1] : NULL;
    if (pP && pP->eConv == QV_NATURAL && pP->vt == VT_LONG) return 1;
  }
  return 0;
}

int qcParam(QComp *pC, const EdnValue *pConst, int iInput, int i1, int i2,
            QConv eConv, ValueType vt) {
  QParam *pP;
  if (pC->rc) return 0;
  if (pConst && pConst->type == EDN_DOUBLE && isnan(pConst->u.d)) {
    /* SQLite holds a NaN as NULL, which would read as nil (the store
    ** refuses NaN too, value.c) */
    qcErr(pC, pConst, "##NaN cannot be a query value");
    return 0;
  }
  if (pC->nParam >= 32000) {
    qcErr(pC, NULL, "query has too many values (more than 32000 parameters)");
    return 0;
  }
  if (pC->nParam == pC->nParamAlloc) {
    int nNew = pC->nParamAlloc ? pC->nParamAlloc * 2 : 16;
    QParam *aNew = sqlite3_realloc64(pC->aParam, sizeof(QParam) * nNew);
    if (aNew == NULL) { qcNoMem(pC); return 0; }
    pC->aParam = aNew;
    pC->nParamAlloc = nNew;
  }
  pP = &pC->aParam[pC->nParam++];
  pP->pConst = pConst;
  pP->iInput = iInput;
  pP->i1 = i1;
  pP->i2 = i2;
  pP->eConv = eConv;
  pP->vt = vt;
  pP->iSrc = pC->iSrc > 0 ? pC->iSrc : 0;
  pP->eTuple = 0;
  return pC->nParam;
}
/* The hash of scalar constant p (0 for one never shared: a collection,
** nil, a tagged value): the schema stage's FNV-1a of its bytes, mixed with
** its type and conversion (qcShareSame decides equality). */
static unsigned qcShareHash(const EdnValue *p, QConv eConv, ValueType vt) {
  const unsigned char *z;
  int n;
  unsigned h;
  switch (p->type) {
    case EDN_BOOL: z = (const unsigned char *)&p->u.b; n = (int)sizeof p->u.b; break;
    case EDN_INT: case EDN_CHAR: case EDN_INST:
      z = (const unsigned char *)&p->u.i; n = (int)sizeof p->u.i;
      break;
    case EDN_DOUBLE: z = (const unsigned char *)&p->u.d; n = (int)sizeof p->u.d; break;
    case EDN_STRING: case EDN_KEYWORD: z = (const unsigned char *)p->u.s.z; n = p->u.s.n; break;
    case EDN_UUID: z = p->u.uuid; n = 16; break;
    default: return 0;
  }
  h = (unsigned)schemaHashMix(schemaHashBytes(z, n)
                              ^ ((sqlite3_uint64)p->type << 48 | (sqlite3_uint64)eConv << 32
                                 | (unsigned)vt));
  return h ? h : 1;
}

/* Is parameter pP the same binding as constant p converted by eConv to vt
** in the current source? Doubles by their bits (-0.0 prints apart from
** 0.0, which ednEqual holds equal). */
static int qcShareSame(const QComp *pC, const QParam *pP, const EdnValue *p, QConv eConv,
                       ValueType vt) {
  if (pP->pConst == NULL || pP->iInput >= 0 || pP->eConv != eConv || pP->vt != vt
      || pP->eTuple != 0 || pP->iSrc != (pC->iSrc > 0 ? pC->iSrc : 0)
      || pP->pConst->type != p->type) {
    return 0;
  }
  if (p->type == EDN_DOUBLE) return memcmp(&pP->pConst->u.d, &p->u.d, sizeof p->u.d) == 0;
  return ednEqual(pP->pConst, p);
}

/* Doubles the shared-constant set. SQLITE_OK or SQLITE_NOMEM. */
static int qcShareGrow(QComp *pC) {
  int nNew = pC->nShareSlot ? pC->nShareSlot * 2 : 64, i;
  int *aNew = sqlite3_malloc64(sizeof(int) * (sqlite3_uint64)nNew);
  if (aNew == NULL) return SQLITE_NOMEM;
  memset(aNew, 0, sizeof(int) * (size_t)nNew);
  for (i = 0; i < pC->nShareSlot; i++) {
    int iP = pC->aShare[i];
    const QParam *pP;
    unsigned k;
    if (iP == 0) continue;
    pP = &pC->aParam[iP - 1];
    k = qcShareHash(pP->pConst, pP->eConv, pP->vt) & (unsigned)(nNew - 1);
    while (aNew[k]) k = (k + 1) & (unsigned)(nNew - 1);
    aNew[k] = iP;
  }
  sqlite3_free(pC->aShare);
  pC->aShare = aNew;
  pC->nShareSlot = nNew;
  return SQLITE_OK;
}

/* A parameter for query constant p (converted by eConv to vt) that a
** predicate or function reads, shared by every such use of an equal
** constant: SQLite's prepare looks each ?NNN written again up in a list
** of the numbers it has seen (sqlite3VListNumToName, linear), so a chain
** of 10,000 [(+ ?a 1) ?b], each 1 a number of its own, took it quadratic
** time (issue 19). Only for constants nothing retypes later (a ground
** binding's lazy parameters are qcParam's). Returns as qcParam. */
int qcParamShared(QComp *pC, const EdnValue *p, QConv eConv, ValueType vt) {
  unsigned h = qcShareHash(p, eConv, vt), k;
  int iP;
  if (pC->rc) return 0;
  if (h == 0) return qcParam(pC, p, -1, -1, -1, eConv, vt);
  if (2 * (pC->nShare + 1) > pC->nShareSlot && qcShareGrow(pC) != SQLITE_OK) {
    qcNoMem(pC);
    return 0;
  }
  for (k = h & (unsigned)(pC->nShareSlot - 1); pC->aShare[k];
       k = (k + 1) & (unsigned)(pC->nShareSlot - 1)) {
    if (qcShareSame(pC, &pC->aParam[pC->aShare[k] - 1], p, eConv, vt)) return pC->aShare[k];
  }
  iP = qcParam(pC, p, -1, -1, -1, eConv, vt);
  if (iP) {
    pC->aShare[k] = iP;
    pC->nShare++;
  }
  return iP;
}
#include "pull.h"

const char *qcKwCollate(ValueType vt) {
  return vt == VT_KEYWORD || vt == VT_NONE ? " COLLATE mentat_kw" : "";
}

/* The collation that orders values of type vt as Clojure's compare:
** keywords' (mentat_kw, also for a type known only at run time, whose
** strings it orders as String.compareTo) or strings' (mentat_utf16:
** UTF-16 code units, where BINARY is code point order); min, max and
** :order take it. */
const char *qcOrderCollate(ValueType vt) {
  return vt == VT_STRING ? " COLLATE mentat_utf16" : qcKwCollate(vt);
}

/* zExpr as a key that orders as Clojure's compare where it is a uuid
** (Java's UUID.compareTo: signed halves, mentat_uuid_ord) or a tuple that
** may hold uuids or keywords (mentat_tuple_ord's key: uuids flipped alike,
** keywords in Clojure's order): for a uuid or tuple column, and for one of
** unknown type whose tag (zTag) says so; zExpr itself otherwise. The uuid
** flip is its own inverse, mentat_tuple_unord undoes the tuple key. A new
** string (NULL when out of memory). */
char *qcUuidOrd(const char *zExpr, ValueType vt, const char *zTag) {
  if (vt == VT_UUID) return sqlite3_mprintf("mentat_uuid_ord(%s)", zExpr);
  if (vt == VT_TUPLE) return sqlite3_mprintf("mentat_tuple_ord(%s)", zExpr);
  if (vt == VT_NONE && zTag) {
    return sqlite3_mprintf("(CASE %s WHEN %d THEN mentat_uuid_ord(%s) WHEN %d THEN mentat_tuple_ord(%s)"
                           " ELSE %s END)", zTag, TAG_UUID, zExpr, TAG_TUPLE, zExpr, zExpr);
  }
  return sqlite3_mprintf("%s", zExpr);
}

int qcTypeClass(ValueType vt) {
  switch (vt) {
    case VT_LONG: case VT_DOUBLE: case VT_REF: return 1;
    case VT_STRING: return 2;
    case VT_INSTANT: return 3;
    case VT_KEYWORD: return 4;
    case VT_BOOLEAN: return 5;
    case VT_UUID: return 6;
    default: return 0;
  }
}

int qcComparable(ValueType a, ValueType b) {
  if (a == QVT_JSON || b == QVT_JSON) return a == b || a == VT_TUPLE || b == VT_TUPLE;
  if (a == VT_TUPLE || b == VT_TUPLE) return a == b;
  return qcTypeClass(a) != 0 && qcTypeClass(a) == qcTypeClass(b);
}

const char *qcVtName(ValueType vt) {
  return vt == QVT_JSON ? "collection" : vtName(vt);
}

char *qcPlaceSql(const EdnValue *p, const char *zWhat) {
  return sqlite3_mprintf("'line %d col %d: %q'", p ? p->line : 0, p ? p->col : 0, zWhat);
}

/* ", dN.e" for each data-pattern alias among pX's FROM items ("datoms dN",
** "timelined_transactions dN"; items in parentheses are skipped). */
static void qcPatternFence(const QCtx *pX, sqlite3_str *pOut) {
  const char *z = sqlite3_str_value(pX->pFrom);
  int i = 0, iStart = 0, nDepth = 0;
  if (z == NULL) return;
  for (;; i++) {
    if (z[i] == '(') nDepth++;
    else if (z[i] == ')') nDepth--;
    /* items are separated by ", " or, past a failing clause, " CROSS JOIN " */
    int nSep = nDepth ? 0 : z[i] == ',' ? 1 : strncmp(z + i, " CROSS JOIN ", 12) == 0 ? 12 : 0;
    if (nSep || z[i] == 0) {
      int j = i;
      while (j > iStart && z[j - 1] == ' ') j--;
      int k = j;
      while (k > iStart && z[k - 1] != ' ') k--;
      if (j - k > 1 && z[k] == 'd' && z[k - 1] == ' ') {
        int m = k + 1;
        while (m < j && z[m] >= '0' && z[m] <= '9') m++;
        if (m == j) sqlite3_str_appendf(pOut, ", %.*s.e", j - k, z + k);
      }
      if (z[i] == 0) break;
      iStart = i + nSep;
      i += nSep - 1;
    }
  }
}

char *qcArgCheckSql(const QCtx *pX, const EdnValue *pForm, const char *zFn, int iArg,
                    const char *zA, const char *zTag, int eKind) {
  char *zWhat = sqlite3_mprintf("%s: argument %d", zFn, iArg);
  char *zPlace = zWhat ? qcPlaceSql(pForm, zWhat) : NULL;
  sqlite3_str *pOut;
  sqlite3_free(zWhat);
  if (zPlace == NULL) return NULL;
  pOut = sqlite3_str_new(NULL);
  sqlite3_str_appendf(pOut, "mentat_arg(%s, %s, %d, %s", zA, zTag ? zTag : "NULL", eKind, zPlace);
  /* Datomic runs the clauses in order, so only the rows the clauses before
  ** this one let through meet the check: naming every pattern of the scope
  ** keeps SQLite from testing it before the joins that filter them. */
  qcPatternFence(pX, pOut);
  sqlite3_str_appendall(pOut, ")");
  sqlite3_free(zPlace);
  return sqlite3_str_finish(pOut);
}

char *qcPatternEqSql(const QCtx *pX, const EdnValue *pForm, const char *zFn, const char *zTagA,
                     const char *zTagB) {
  char *zPlace = qcPlaceSql(pForm, zFn);
  sqlite3_str *pOut;
  if (zPlace == NULL) return NULL;
  pOut = sqlite3_str_new(NULL);
  sqlite3_str_appendf(pOut, "mentat_pattern_eq(%s, %s, %s", zTagA, zTagB, zPlace);
  qcPatternFence(pX, pOut);
  sqlite3_str_appendall(pOut, ")");
  sqlite3_free(zPlace);
  return sqlite3_str_finish(pOut);
}

char *qcVarTag(const QVar *pV) {
  if (pV->zTag) return sqlite3_mprintf("%s", pV->zTag);
  if (pV->vt == QVT_JSON) return sqlite3_mprintf("%d", TAG_JSON);
  if (pV->vt == VT_NONE) return sqlite3_mprintf("NULL");
  return sqlite3_mprintf("%d", vtOutTag(pV->vt));
}

char *qcSetTag(const char *zTag) {
  return sqlite3_mprintf("(CASE WHEN %s = %d THEN %d ELSE %s END)", zTag, TAG_REF, TAG_NUMBER,
                         zTag);
}

char *qcVarSetTag(const QVar *pV) {
  if (pV->vt == VT_REF) return sqlite3_mprintf("%d", TAG_NUMBER);
  if (pV->zTag) return qcSetTag(pV->zTag);
  return qcVarTag(pV);
}

void qcSetColumns(QComp *pC, sqlite3_str *pOut, int bFirst, int j, const QVar *pV,
                  ValueType *pVt) {
  char *zTag = qcVarSetTag(pV);
  if (zTag == NULL) { qcNoMem(pC); return; }
  sqlite3_str_appendf(pOut, "%s%s AS c%d, %s AS t%d, typeof(%s) AS k%d", bFirst ? "" : ", ",
                      pV->zExpr, j, zTag, j, pV->zExpr, j);
  sqlite3_free(zTag);
  if (*pVt == (ValueType)-1) *pVt = pV->vt;
  else if (*pVt != pV->vt) *pVt = VT_NONE;
}

/* The tag term for a place of unknown type (its tag SQL zTag) that meets a
** value of static type vt: a ref value is an entity id, which is a long
** (Datomic's datoms hold refs as longs), so a long or a ref meets both. */
char *qcTagIs(const char *zTag, ValueType vt) {
  if (vt == VT_LONG || vt == VT_REF) {
    return sqlite3_mprintf("%s IN (%d, %d)", zTag, TAG_REF, TAG_NUMBER);
  }
  return sqlite3_mprintf("%s = %d", zTag, vtOutTag(vt));
}

char *qcTagsMatch(const char *zTagA, const char *zTagB) {
  /* IS: a nil's tag is NULL, and nil joins nil (Clojure's = ) */
  return sqlite3_mprintf("(%s IS %s OR (%s IN (%d, %d) AND %s IN (%d, %d)))", zTagA, zTagB,
                         zTagA, TAG_REF, TAG_NUMBER, zTagB, TAG_REF, TAG_NUMBER);
}

/* Clojure's = class of collection zV of type vt: sequential (0: a tuple,
** a vector or list literal), a set (1), a map (2); -1 when not known (not
** a "?N" collection parameter: qcConstExpr, an input's). */
static int qcCollClass(const QCtx *pX, const char *zV, ValueType vt) {
  const QComp *pC = pX->pC;
  const EdnValue *p = NULL;
  char *zEnd;
  long iP = vt == QVT_JSON && zV[0] == '?' ? strtol(zV + 1, &zEnd, 10) : 0;
  if (vt == VT_TUPLE) return 0;
  if (iP >= 1 && iP <= pC->nParam && *zEnd == 0 && pC->aParam[iP - 1].eConv == QV_JSON) {
    p = qParamValue(&pC->aParam[iP - 1], pC->pOpts);
  }
  return p == NULL ? -1 : p->type == EDN_SET ? 1 : p->type == EDN_MAP ? 2 : 0;
}

/* zA = zB as Clojure's = when one is of unknown type (its tag: re-seq's seq,
** held as a tuple when its elements allow) and the other a vector or list
** literal held as JSON: the first as its JSON (a string never reads as an
** array), op zOp ("IS", "IS NOT", "=", "!="); NULL when they are not those. */
char *qcSeqJsonEq(const QCtx *pX, const char *zA, ValueType vtA, const char *zTagA, const char *zB,
                  ValueType vtB, const char *zTagB, const char *zOp) {
  char *z;
  if (vtA == QVT_JSON && vtB == VT_NONE && zTagB) {
    return qcSeqJsonEq(pX, zB, vtB, zTagB, zA, vtA, zTagA, zOp);
  }
  if (vtA != VT_NONE || zTagA == NULL || vtB != QVT_JSON || qcCollClass(pX, zB, vtB) != 0) return NULL;
  z = sqlite3_mprintf("(mentat_json(%s, %s) %s %s)", zA, zTagA, zOp, zB);
  if (z == NULL) qcNoMem(pX->pC);   /* the caller's fallback then fails too */
  return z;
}

/* See query_compile_scope.h: a set literal is never = a vector of the same
** elements, though both are JSON arrays (a list and a vector are =). A
** union whose branches all hand on one kind of collection literal (mB, a
** set's or a map's JSON alone: the column has one type, no tag to tell)
** never = a collection of another kind; of several kinds its rows' tags
** tell a vector from a set, and a collection of a kind not known here (an
** input's) is left as it was. */
int qcCollKindsDiffer(const QCtx *pX, const char *zA, ValueType vtA, const char *zB,
                      ValueType vtB, int mB) {
  int a = qcCollClass(pX, zA, vtA), b = a < 0 ? -1 : qcCollClass(pX, zB, vtB);
  if (a >= 0 && (mB == 1 || mB == 2 || mB == 4) && mB != 1 << a) return 1;
  return a >= 0 && b >= 0 && a != b;
}

/* Is p a lookup ref [:attr value]? */
int qcIsLookupRef(const EdnValue *p) {
  return p->type == EDN_VECTOR && p->u.c.n == 2 && p->u.c.a[0]->type == EDN_KEYWORD;
}

char *qcLookupSql(QComp *pC, const char *zA, const char *zV, const char *zTag) {
  const char *zTable = NULL;
  char *zCond, *z = NULL, *zStored;
  int bHistory = pC->bHistory;
  /* On the history database a unique value may have named several
  ** entities over time: the lookup names the one that holds it in the
  ** database of the same time without history (as of or since T). */
  pC->bHistory = 0;
  zCond = qcView(pC, "l", &zTable);
  pC->bHistory = bHistory;
  if (zCond == NULL) {
    qcNoMem(pC);
    return NULL;
  }
  /* a fulltext attribute's datoms hold the rowid of the text */
  zStored = qcLookupValueExpr(pC, zA, zV);
  if (zStored) {
    z = sqlite3_mprintf("(SELECT l.e FROM %s l WHERE l.a = %s AND l.v = %s AND l.value_type_tag = %s%s%s)",
                        zTable, zA, zStored, zTag, zCond[0] ? " AND " : "", zCond);
  }
  sqlite3_free(zStored);
  sqlite3_free(zCond);
  if (z == NULL) qcNoMem(pC);
  return z;
}

/* The lookup ref constant pRef [:attr value] as SQL (qcLookupSql), "NULL"
** when its attribute is unknown (it names no entity). Not :db/unique: an
** error, as edn_t refuses it. */
char *qcLookupConst(QComp *pC, const EdnValue *pRef) {
  const EdnValue *pK = pRef->u.c.a[0];
  const Attr *pA = schemaAttrByIdent(pC->pSchema, pK->u.s.z, pK->u.s.n);
  char zA[24], zV[16], zTag[8];
  int iP;
  if (pA == NULL) return sqlite3_mprintf("NULL");
  if (pA->eUnique == UNIQUE_NONE) {
    qcErr(pC, pRef, "lookup ref attribute %s is not :db/unique", pA->zIdent);
    return NULL;
  }
  iP = qcParam(pC, pRef->u.c.a[1], -1, -1, -1, QV_TYPED, pA->type);
  if (iP == 0) return NULL;
  sqlite3_snprintf(sizeof zA, zA, "%lld", pA->e);
  sqlite3_snprintf(sizeof zV, zV, "?%d", iP);
  sqlite3_snprintf(sizeof zTag, zTag, "%d", vtTag(pA->type));
  return qcLookupSql(pC, zA, zV, zTag);
}

int qcIsEntityLookup(QComp *pC, const EdnValue *p) {
  const Attr *pA;
  if (!qcIsLookupRef(p)) return 0;
  pA = schemaAttrByIdent(pC->pSchema, p->u.c.a[0]->u.s.z, p->u.c.a[0]->u.s.n);
  return pA != NULL && pA->eUnique != UNIQUE_NONE;
}

char *qcEntityLookupSql(QComp *pC, const EdnValue *p) {
  return qcLookupConst(pC, p);
}

char *qcIdentSql(const QComp *pC, const char *zKw) {
  return sqlite3_mprintf("(SELECT e FROM %s WHERE a = %d AND v = %s AND value_type_tag = %d)",
                         pC->zDatoms, ENTID_DB_IDENT, zKw, TAG_KEYWORD);
}

int qcAttrValueIndexed(const Attr *pAttr) {
  return pAttr->bValueIndex
         || (pAttr->e >= PART_USER_START && !pAttr->bFulltext
             && (pAttr->eUnique || (pAttr->bIndex && pAttr->type == VT_REF)));
}

char *qcView(QComp *pC, const char *zAlias, const char **pzTable) {
  /* since T beside asOf or history: a term on the log's own tx, after the
  ** rest (Datomic's (d/since (d/as-of db t2) t1) keeps t1 < tx <= t2) */
  char *zSince = pC->zSinceTx ? sqlite3_mprintf(" AND %s.tx > %s", zAlias, pC->zSinceTx)
                              : sqlite3_mprintf("%s", "");
  char *z = NULL;
  if (zSince == NULL) return NULL;
  if (pC->bHistory) {
    /* The history database (Datomic's d/history): every assertion and
    ** retraction in the log, within asOf/since when given (SPEC.md §6). */
    *pzTable = pC->zLog;
    if (pC->zAsOfTx) {
      z = sqlite3_mprintf("%s.timeline IS 0 AND %s.tx <= %s%s", zAlias, zAlias, pC->zAsOfTx, zSince);
    } else {
      z = sqlite3_mprintf("%s.timeline IS 0%s", zAlias, zSince);
    }
  } else if (pC->zAsOfTx) {
    /* As of T: the log's assertions up to T not retracted by T. The log's
    ** columns have the datoms' names; idx_transactions_aevt serves patterns
    ** bound by entity and the retraction probe, and a tuned store's
    ** idx_mentat_log_avet_<a> (store_tune.c) those of indexed, unique and
    ** ref attributes bound by value (`dN.a = <a>` matches its WHERE). */
    *pzTable = pC->zLog;
    z = sqlite3_mprintf(
        "%s.timeline IS 0 AND %s.added = 1 AND %s.tx <= %s AND NOT EXISTS (SELECT 1 FROM"
        " %s r WHERE r.a = %s.a AND r.e = %s.e AND r.value_type_tag ="
        " %s.value_type_tag AND r.v = %s.v AND r.tx > %s.tx AND r.tx <= %s AND r.timeline IS 0)%s",
        zAlias, zAlias, zAlias, pC->zAsOfTx, pC->zLog, zAlias, zAlias, zAlias, zAlias, zAlias,
        pC->zAsOfTx, zSince);
  } else {
    *pzTable = pC->zDatoms;
    /* Since T: a recent slice, read through the store's (a, tx, e) index
    ** (store_tune.c). Without the hint SQLite guesses a quarter of the
    ** attribute for `tx > ?` and prefers the (a, e) index, which needs no
    ** DISTINCT sort but reads every datom of the attribute. */
    if (pC->zSinceTx) z = sqlite3_mprintf("likelihood(%s.tx > %s, 0.01)", zAlias, pC->zSinceTx);
    else z = sqlite3_mprintf("%s", "");
  }
  sqlite3_free(zSince);
  return z;
}

/* The input (counted as "inputs" counts them) that holds the pull pattern
** named pSym: a plain-symbol :in (Datomic's pattern-var) or a scalar ?var
** binding of that name; -1 when :in has none. */
static int qcPatternInput(const QQuery *pQ, const EdnValue *pSym) {
  int i, iInput = 0;
  for (i = 0; i < pQ->nIn; i++) {
    const QIn *pIn = &pQ->aIn[i];
    if (pIn->kind == QIN_SRC) continue;
    if ((pIn->kind == QIN_PATTERN && ednIsSymbol(pIn->pForm, pSym->u.s.z))
        || (pIn->kind == QIN_BIND && pIn->bind.kind == QB_SCALAR
            && ednIsSymbol(pIn->bind.aVar[0], pSym->u.s.z))) {
      return iInput;
    }
    iInput++;
  }
  return -1;
}

int qcPullColumn(QComp *pC, const QFindElem *pE, QPlanCol *pCol) {
  char *zErr = NULL;
  int rc;
  if (pC->bHistory) {
    /* Datomic's history database serves queries and datoms, not entity
    ** or pull: there is no one map of an entity across time. */
    return qcErr(pC, pE->pForm, "pull is not supported on the history database");
  }
  if (pE->pPattern->type == EDN_SYMBOL) {
    /* A pattern given as an input: checked when each run binds it
    ** (qRunOpen), since a cached plan serves other patterns of its shape. */
    int iInput = qcPatternInput(pC->pQ, pE->pPattern);
    if (iInput < 0) {
      return qcErr(pC, pE->pPattern, "pull pattern %s is not an :in input", pE->pPattern->u.s.z);
    }
    pCol->kind = QCOL_PULL;
    pCol->bPatInput = 1;
    pCol->iPatInput = iInput;
    pCol->pPullVar = pE->pVar;
    return SQLITE_OK;
  }
  rc = pullValidate(pC->pSchema, pE->pPattern, &zErr);
  if (rc != SQLITE_OK) {
    sqlite3_free(*pC->pzErr);
    *pC->pzErr = zErr;
    pC->rc = rc;
    return rc;
  }
  pCol->kind = QCOL_PULL;
  pCol->pPattern = pE->pPattern;
  pCol->pPullVar = pE->pVar;
  return SQLITE_OK;
}

/* Arguments without the leading source "$". */
void qcSkipSrc(const QClause *pCl, const EdnValue *const **paArg, int *pnArg) {
  *paArg = pCl->aArg;
  *pnArg = pCl->nArg;
  if (*pnArg > 0 && qpIsSrc((*paArg)[0])) {
    (*paArg)++;
    (*pnArg)--;
  }
}

/* A subquery "SELECT zSel FROM <the database the query reads> g WHERE
** g.e = zE AND g.a = a" (qcView: as of T, since T), for the built-ins that
** look up one entity's attribute; NULL after an error. Datomic's history
** database has no one value of an attribute: there they are an error
** naming zFn. */
char *qcEntityAttrSql(QCtx *pX, const EdnValue *pAt, const char *zFn, const char *zSel,
                      const char *zE, sqlite3_int64 a) {
  QComp *pC = pX->pC;
  const char *zTable = NULL;
  const Attr *pA;
  char *zCond, *z = NULL, *zV;
  if (pC->bHistory) {
    qcErr(pC, pAt, "%s is not supported on the history database", zFn);
    return NULL;
  }
  zCond = qcView(pC, "g", &zTable);
  if (zCond == NULL) { qcNoMem(pC); return NULL; }
  /* a fulltext attribute's value is the text of the rowid it holds */
  pA = strcmp(zSel, "g.v") == 0 ? schemaAttr(pC->pSchema, a) : NULL;
  zV = pA && pA->bFulltext && pA->type == VT_STRING
       ? sqlite3_mprintf("(SELECT text FROM %s WHERE rowid = g.v)", pC->zFulltext)
       : sqlite3_mprintf("%s", zSel);
  if (zV) {
    z = sqlite3_mprintf("SELECT %s FROM %s g WHERE g.e = %s AND g.a = %lld%s%s", zV, zTable, zE,
                        a, zCond[0] ? " AND " : "", zCond);
  }
  sqlite3_free(zV);
  sqlite3_free(zCond);
  if (z == NULL) qcNoMem(pC);
  return z;
}

/* qcExpandedText's scan: the index just past the string literal opening
** at z[i] == '\'' ('' inside it is a quote), or n. */
static int qcLiteralEnd(const char *z, int i, int n) {
  for (i++; i < n; i++) {
    if (z[i] == '\'') {
      if (i + 1 < n && z[i + 1] == '\'') i++;
      else return i + 1;
    }
  }
  return n;
}

/* The index of the ')' closing the '(' at z[i], skipping literals; n when
** it does not close. */
static int qcSpanEnd(const char *z, int i, int n) {
  int nDepth = 0;
  while (i < n) {
    if (z[i] == '\'') { i = qcLiteralEnd(z, i, n); continue; }
    if (z[i] == '(') nDepth++;
    else if (z[i] == ')' && --nDepth == 0) return i;
    i++;
  }
  return n;
}

static int qcIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

#define QC_EXPAND_HASH 4096

/* The top-level CTEs seen so far, by name: a chained hash. */
typedef struct QcCteSet {
  const char *z;            /* the statement */
  int aHead[QC_EXPAND_HASH];  /* 1 + the first CTE of a bucket, 0 none */
  int nCte, nAlloc;
  struct QcCte {
    int iName, nName;
    int iNext;              /* 1 + the next CTE of its bucket, 0 none */
    sqlite3_int64 nExpanded;  /* its body with every CTE it names expanded */
  } *aCte;
} QcCteSet;

static unsigned qcNameHash(const char *z, int n) {
  return (unsigned)(schemaHashBytes((const unsigned char *)z, n) % QC_EXPAND_HASH);
}

/* The expansion of an earlier CTE named z[i..j), or -1 for no such CTE. */
static sqlite3_int64 qcCteFind(const QcCteSet *pSet, int i, int j) {
  int k = pSet->aHead[qcNameHash(pSet->z + i, j - i)];
  while (k) {
    const struct QcCte *p = &pSet->aCte[k - 1];
    if (p->nName == j - i && memcmp(pSet->z + p->iName, pSet->z + i, (size_t)(j - i)) == 0) {
      return p->nExpanded;
    }
    k = p->iNext;
  }
  return -1;
}

/* The expanded size of z[i..iEnd): its bytes plus, for every whole-word
** name of an earlier CTE, that CTE's expansion; at most nCap + 1. */
static sqlite3_int64 qcSpanExpanded(const QcCteSet *pSet, int i, int iEnd, sqlite3_int64 nCap) {
  const char *z = pSet->z;
  sqlite3_int64 n = iEnd - i;
  while (i < iEnd && n <= nCap) {
    if (z[i] == '\'') {
      i = qcLiteralEnd(z, i, iEnd);
    } else if (qcIdentChar(z[i])) {
      int j = i;
      sqlite3_int64 nCopy;
      while (j < iEnd && qcIdentChar(z[j])) j++;
      nCopy = qcCteFind(pSet, i, j);
      if (nCopy > 0) n += nCopy;
      i = j;
    } else {
      i++;
    }
  }
  return n > nCap ? nCap + 1 : n;
}

/* Adds the CTE named z[iName..iName+nName) with expansion nExpanded.
** SQLITE_NOMEM or SQLITE_OK. */
static int qcCteAdd(QcCteSet *pSet, int iName, int nName, sqlite3_int64 nExpanded) {
  struct QcCte *p;
  unsigned h;
  if (pSet->nCte == pSet->nAlloc) {
    int nNew = pSet->nAlloc ? pSet->nAlloc * 2 : 64;
    struct QcCte *a = sqlite3_realloc64(pSet->aCte, (sqlite3_uint64)nNew * sizeof *a);
    if (a == NULL) return SQLITE_NOMEM;
    pSet->aCte = a;
    pSet->nAlloc = nNew;
  }
  p = &pSet->aCte[pSet->nCte++];
  p->iName = iName;
  p->nName = nName;
  p->nExpanded = nExpanded;
  h = qcNameHash(pSet->z + iName, nName);
  p->iNext = pSet->aHead[h];
  pSet->aHead[h] = pSet->nCte;
  return SQLITE_OK;
}

sqlite3_int64 qcExpandedText(const char *zSql, sqlite3_int64 nCap) {
  QcCteSet *pSet;
  int n = (int)strlen(zSql), i = 5;
  sqlite3_int64 nAll = -1;
  if (sqlite3_strnicmp(zSql, "WITH ", 5) != 0) return n;
  pSet = sqlite3_malloc64(sizeof *pSet);
  if (pSet == NULL) return -1;
  memset(pSet, 0, sizeof *pSet);
  pSet->z = zSql;
  if (sqlite3_strnicmp(zSql + i, "RECURSIVE ", 10) == 0) i += 10;
  for (;;) {
    int j = i, iOpen, iEnd;
    sqlite3_int64 nBody;
    while (j < n && qcIdentChar(zSql[j])) j++;
    /* name(columns) AS [[NOT ]MATERIALIZED ](body); its own name in its
    ** body is a recursive step, not a copy: only earlier CTEs count */
    iOpen = j < n && zSql[j] == '(' ? qcSpanEnd(zSql, j, n) + 1 : j;
    while (iOpen < n && zSql[iOpen] != '(') iOpen++;
    if (j == i || iOpen >= n) { nAll = n; goto done; }   /* not a WITH list: its length */
    iEnd = qcSpanEnd(zSql, iOpen, n);
    nBody = qcSpanExpanded(pSet, iOpen + 1, iEnd, nCap);
    if (nBody > nCap) { nAll = nCap + 1; goto done; }
    if (qcCteAdd(pSet, i, j - i, nBody) != SQLITE_OK) goto done;
    i = iEnd + 1;
    while (i < n && zSql[i] == ' ') i++;
    if (i >= n || zSql[i] != ',') break;
    for (i++; i < n && zSql[i] == ' '; i++) {}
  }
  nAll = qcSpanExpanded(pSet, i, n, nCap);
done:
  sqlite3_free(pSet->aCte);
  sqlite3_free(pSet);
  return nAll;
}

char *qcDatomTagExpr(QCtx *pX, const char *zAlias, const char *zTagCol) {
  const Schema *pS = pX->pC->pSchema;
  sqlite3_str *pList = NULL;
  char *zList, *z;
  int i, n = schemaAttrCount(pS);
  for (i = 0; i < n; i++) {
    const Attr *pA = schemaAttrAt(pS, i);
    if (pA->type != VT_TUPLE) continue;
    if (pList == NULL) pList = sqlite3_str_new(NULL);
    else sqlite3_str_appendchar(pList, 1, ',');
    sqlite3_str_appendf(pList, "%lld", pA->e);
  }
  if (pList == NULL) return sqlite3_mprintf("%s.%s", zAlias, zTagCol);
  zList = sqlite3_str_finish(pList);
  if (zList == NULL) return NULL;
  z = sqlite3_mprintf("(CASE WHEN %s.a IN (%s) THEN %d ELSE %s.%s END)", zAlias, zList, TAG_TUPLE,
                      zAlias, zTagCol);
  sqlite3_free(zList);
  return z;
}

int qcIsMadeTuple(const char *zExpr) {
  return zExpr && (zExpr[0] == '?' || strncmp(zExpr, "mentat_tuple(", 13) == 0);
}

int qcIsTupleConst(const EdnValue *p, int *pRc) {
  char *z = NULL;
  int n = 0, rc;
  if (p->type != EDN_VECTOR) return 0;
  rc = valueTupleFromEdnNatural(p, &z, &n);
  sqlite3_free(z);
  if (rc == SQLITE_NOMEM) *pRc = rc;
  return rc == SQLITE_OK;
}

/* A literal as an SQL parameter of its natural type (predicates, rules). */
char *qcConstExpr(QCtx *pX, const EdnValue *p, ValueType vt, ValueType *pvt) {
  int iP;
  char *z;
  ValueType nt = vt != VT_NONE ? vt : valueNaturalType(p);
  if (vt == VT_NONE && qcIsTupleConst(p, &pX->pC->rc)) {
    iP = qcParam(pX->pC, p, -1, -1, -1, QV_TYPED, VT_TUPLE);
    *pvt = VT_TUPLE;
    z = iP ? sqlite3_mprintf("?%d", iP) : NULL;
    if (iP && z == NULL) qcNoMem(pX->pC);
    return z;
  }
  if (p->type == EDN_VECTOR || p->type == EDN_LIST || p->type == EDN_MAP
      || p->type == EDN_SET) {
    iP = qcParam(pX->pC, p, -1, -1, -1, QV_JSON, QVT_JSON);
    *pvt = QVT_JSON;
    z = iP ? sqlite3_mprintf("?%d", iP) : NULL;
    if (iP && z == NULL) qcNoMem(pX->pC);   /* NULL must not pass for a lost term */
    return z;
  }
  if (nt == VT_NONE) {
    qcErr(pX->pC, p, "unsupported constant %s", p->type == EDN_NIL ? "nil" : "value");
    return NULL;
  }
  iP = qcParamShared(pX->pC, p, vt != VT_NONE ? QV_TYPED : QV_NATURAL, nt);
  *pvt = nt;
  z = iP ? sqlite3_mprintf("?%d", iP) : NULL;
  if (iP && z == NULL) qcNoMem(pX->pC);
  return z;
}

char *qcEntityExpr(QCtx *pX, const EdnValue *p, const char *zFn) {
  QComp *pC = pX->pC;
  char *z;
  if (ednIsVar(p)) {
    QVar *pV = qcVarFind(pX, p->u.s.z);
    ValueType vt;
    char *zTag = NULL;
    /* An input no place has typed yet is read as an entity here, so a
    ** keyword input is an ident (SPEC.md §2.4: a value in an entity place). */
    if (pV && pV->zExpr && pV->nParam && pV->vt != VT_KEYWORD) qcTypeParams(pX, pV, VT_REF, 0);
    z = qcTermExpr(pX, p, &vt, &zTag, "function");
    if (z == NULL) return NULL;
    if (vt == VT_KEYWORD || (vt == VT_NONE && zTag)) {
      /* a keyword value names the entity whose ident it is */
      char *zId = qcIdentSql(pX->pC, z);
      char *zE = zId == NULL ? NULL : vt == VT_KEYWORD ? sqlite3_mprintf("%s", zId)
                 : sqlite3_mprintf("(CASE %s WHEN %d THEN %s ELSE %s END)", zTag, TAG_KEYWORD,
                                   zId, z);
      sqlite3_free(zId);
      sqlite3_free(z);
      z = zE;
    } else if (vt != VT_NONE && vt != VT_REF && vt != VT_LONG && !qcNoRows(pX)) {
      qcErr(pC, p, "%s: %s is a %s, not an entity id, ident or lookup ref", zFn, p->u.s.z,
            qcVtName(vt == VT_TUPLE && qcIsMadeTuple(z) ? QVT_JSON : vt));
      sqlite3_free(z);
      z = NULL;
    }
    sqlite3_free(zTag);
    if (z == NULL) qcNoMem(pC);
    return z;
  }
  if (p->type == EDN_INT || p->type == EDN_KEYWORD) {
    int iP;
    if (p->type == EDN_KEYWORD && schemaEntid(pC->pSchema, p->u.s.z, p->u.s.n) == 0) {
      return sqlite3_mprintf("NULL");   /* no such ident: no entity */
    }
    iP = qcParam(pC, p, -1, -1, -1, QV_TYPED, VT_REF);
    return iP ? sqlite3_mprintf("?%d", iP) : NULL;
  }
  if (qcIsLookupRef(p)) return qcLookupConst(pC, p);
  if (qpIsBlank(p)) {
    qcErr(pC, p, "_ is not allowed in %s", "function");
    return NULL;
  }
  qcNotEntity(pC, p, zFn);
  return NULL;
}

int qcNotEntity(QComp *pC, const EdnValue *p, const char *zFn) {
  sqlite3_str *pTxt = sqlite3_str_new(NULL);
  char *zTxt;
  ednPrint(pTxt, p);
  zTxt = sqlite3_str_finish(pTxt);
  if (zTxt == NULL) return qcNoMem(pC);
  if (zFn) qcErr(pC, p, "%s: %s is not an entity id, ident or lookup ref", zFn, zTxt);
  else qcErr(pC, p, "%s is not an entity id, ident or lookup ref", zTxt);
  sqlite3_free(zTxt);
  return pC->rc;
}
