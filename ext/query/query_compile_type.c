/*
** query_compile_type.c — the `type` function: a keyword naming the class of
** a value. Takes the clause's one argument (its SQL, static type or tag);
** gives an SQL expression of keyword text bound through the clause.
**
** WHY keywords: Clojure's `type` gives a java.lang.Class, which no query
** value holds. A value an attribute can hold gives its value type's ident
** (:db.type/long, :db.type/string ...), any vector :db.type/tuple (what a
** tuple attribute holds, and the name the messages give a vector); a value
** no attribute holds gives its Clojure class as a keyword, package as the
** namespace (:java.util.regex/Pattern for re-pattern's result,
** :clojure.lang/PersistentHashSet, PersistentArrayMap up to 8 entries and
** PersistentHashMap past them, as the reader makes them, PersistentList).
** Clojure's `type` is never nil for a value, so neither is this one: a row
** whose type came out NULL disappeared.
**
** A set, a list and a map are told apart from a vector only while the
** query compiles (a literal, ground of one, an input: the plan cache keys
** a set input apart from a vector one); at run time a query's collections
** are JSON, whose arrays are vectors and objects maps.
**
** Also qcAttrArg, the attribute argument of get-else, get-some, missing?
** and fulltext: a keyword constant (moved here from query_compile_sql.c,
** which is at its size limit).
*/
#include <stdlib.h>
#include "query_compile_scope.h"

#define QCT_MAP_ARRAY ":clojure.lang/PersistentArrayMap"
#define QCT_MAP_HASH ":clojure.lang/PersistentHashMap"
/* Clojure's reader makes an array map of up to 8 entries (RT.map:
** HASHTABLE_THRESHOLD 16 keys and values) */
#define QCT_MAP_MAX 8

/* The value compiled as parameter zArg ("?N" of a QV_JSON parameter: a
** collection literal or input), or NULL. */
static const EdnValue *qctJsonValue(const QCtx *pX, const char *zArg) {
  const QComp *pC = pX->pC;
  char *zEnd;
  long iP;
  if (zArg[0] != '?') return NULL;
  iP = strtol(zArg + 1, &zEnd, 10);
  if (*zEnd || iP < 1 || iP > pC->nParam || pC->aParam[iP - 1].eConv != QV_JSON) return NULL;
  return qParamValue(&pC->aParam[iP - 1], pC->pOpts);
}

/* The class keyword of collection p, known as the query compiles. */
static const char *qctCollName(const EdnValue *p) {
  switch (p->type) {
    case EDN_SET: return ":clojure.lang/PersistentHashSet";
    case EDN_MAP: return p->u.c.n / 2 <= QCT_MAP_MAX ? QCT_MAP_ARRAY : QCT_MAP_HASH;
    case EDN_LIST: return p->u.c.n ? ":clojure.lang/PersistentList"
                                   : ":clojure.lang/PersistentList$EmptyList";
    default: return ":db.type/tuple";
  }
}

/* SQL: the class keyword of JSON text zV a query made (an array a vector,
** an object a map). */
static char *qctJsonSql(const char *zV) {
  return sqlite3_mprintf("(CASE json_type(%s) WHEN 'object' THEN CASE WHEN (SELECT count(*) FROM"
                         " json_each(%s)) <= %d THEN '" QCT_MAP_ARRAY "' ELSE '" QCT_MAP_HASH
                         "' END ELSE ':db.type/tuple' END)", zV, zV, QCT_MAP_MAX);
}

/* SQL: the keyword of value zV by its run-time tag zTag (NULL: none). */
static char *qctTagSql(const char *zV, const char *zTag) {
  char *zJson = qctJsonSql(zV), *z;
  if (zJson == NULL) return NULL;
  z = sqlite3_mprintf(
      "(CASE %s WHEN %d THEN ':db.type/ref' WHEN %d THEN ':db.type/boolean' WHEN %d THEN"
      " ':db.type/instant' WHEN %d THEN (CASE typeof(%s) WHEN 'integer' THEN ':db.type/long'"
      " ELSE ':db.type/double' END) WHEN %d THEN ':db.type/string' WHEN %d THEN"
      " ':db.type/uuid' WHEN %d THEN ':db.type/keyword' WHEN %d THEN ':db.type/bytes'"
      " WHEN %d THEN ':db.type/tuple' WHEN %d THEN ':java.util.regex/Pattern' WHEN %d THEN %s END)",
      zTag ? zTag : "NULL", TAG_REF, TAG_BOOLEAN, TAG_INSTANT, TAG_NUMBER, zV, TAG_STRING,
      TAG_UUID, TAG_KEYWORD, TAG_BYTES, TAG_TUPLE, TAG_PATTERN, TAG_JSON, zJson);
  sqlite3_free(zJson);
  return z;
}

int qctType(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QComp *pC = pX->pC;
  ValueType vt;
  char *zTag = NULL, *zV, *zExpr;
  const QVar *pV = NULL;
  (void)pFn;
  (void)pOut;
  if (pCl->nArg != 1) return qcErr(pC, pCl->pForm, "type takes one value");
  if (ednIsVar(pCl->aArg[0])) pV = qcVarFind(pX, pCl->aArg[0]->u.s.z);
  if (pV && pV->bSeq >= 2) {
    /* a union's rows keep a collection's elements only (qcSeqBits) */
    return qcErr(pC, pCl->aArg[0], "type: %s may be re-seq's seq or a set, map or list literal"
                 " an or or rule hands on, whose rows keep only its elements: call type inside"
                 " the branches", pCl->aArg[0]->u.s.z);
  }
  zV = qcTermExpr(pX, pCl->aArg[0], &vt, &zTag, "function");
  if (zV == NULL) return pC->rc;
  if (pV && pV->bSeq == 1) {
    zExpr = sqlite3_mprintf("':clojure.lang/Cons'");   /* re-seq's (cons ... (lazy-seq ...)) */
  } else if (vt == QVT_JSON) {
    const EdnValue *pVal = qctJsonValue(pX, zV);
    zExpr = pVal ? sqlite3_mprintf("'%s'", qctCollName(pVal)) : qctJsonSql(zV);
  } else if (vt == VT_LONG || vt == VT_DOUBLE) {
    zExpr = sqlite3_mprintf("(CASE typeof(%s) WHEN 'integer' THEN ':db.type/long'"
                            " ELSE ':db.type/double' END)", zV);
  } else if (vt != VT_NONE) {
    zExpr = sqlite3_mprintf("'%q'", vtName(vt));
  } else {
    zExpr = qctTagSql(zV, zTag);
  }
  sqlite3_free(zV);
  sqlite3_free(zTag);
  if (zExpr == NULL) return qcNoMem(pC);
  return qcfBindResult(pX, pCl, zExpr, VT_KEYWORD, NULL);
}

/* The attribute named by a keyword argument, or NULL (unknown: no datoms). */
const Attr *qcAttrArg(QCtx *pX, const EdnValue *p, const char *zFn) {
  if (ednIsVar(p)) {
    /* an attribute known only at run time is not compiled yet (a known
    ** limit, README): say so rather than that a keyword was expected */
    qcErr(pX->pC, p, "%s: the attribute %s is a variable; only an attribute keyword is supported here",
          zFn, p->u.s.z);
    return NULL;
  }
  if (p->type != EDN_KEYWORD) {
    qcErr(pX->pC, p, "%s expects an attribute keyword", zFn);
    return NULL;
  }
  return schemaAttrByIdent(pX->pC->pSchema, p->u.s.z, p->u.s.n);
}

/* The ref attribute a reverse keyword (:ns/_name, the name part starting
** with '_', itself no attribute) names, or NULL: missing?, get-else and
** get-some read it as Datomic's entity does. */
const Attr *qcReverseAttr(QCtx *pX, const EdnValue *p) {
  const Attr *pA = NULL;
  const char *z = p->u.s.z;
  int n = p->u.s.n, iName;
  char *zFwd;
  if (p->type != EDN_KEYWORD) return NULL;
  for (iName = n - 1; iName > 0 && z[iName] != '/'; iName--) {}
  iName++;
  if (iName >= n - 1 || z[iName] != '_') return NULL;
  zFwd = sqlite3_mprintf("%.*s%.*s", iName, z, n - iName - 1, z + iName + 1);
  if (zFwd == NULL) { qcNoMem(pX->pC); return NULL; }
  pA = schemaAttrByIdent(pX->pC->pSchema, zFwd, n - 1);
  sqlite3_free(zFwd);
  return pA && pA->type == VT_REF ? pA : NULL;
}
