/*
** query_compile_scope.c — the compile scopes: the FROM
** and WHERE of a scope, its variables (binding one, unifying it again,
** typing an input's lazy parameters), terms as SQL, and function results
** bound through mentat_one; the variables a clause mentions (an AST walk
** for clause ordering, or checks and rule analysis). Takes the parsed
** clauses' terms (query_ast.h)
** and the schema; gives SQL text into a QCtx. Calls only
** query_compile_sql.c and the stages below the query
** (query_compile_scope.h explains scopes and variables).
*/
#include <stdio.h>
#include <string.h>
#include <stdarg.h>
#include "query_compile_scope.h"

/* Puts the end of the WHERE, from byte iStart (where a group's first term
** begins), in parentheses. */
static void qcWhereWrap(QCtx *pX, int iStart) {
  int n = sqlite3_str_length(pX->pWhere);
  char *z;
  sqlite3_str_appendall(pX->pWhere, "()");
  if (sqlite3_str_errcode(pX->pWhere)) {
    qcNoMem(pX->pC);
    return;
  }
  z = sqlite3_str_value(pX->pWhere);
  memmove(z + iStart + 1, z + iStart, (size_t)(n - iStart));
  z[iStart] = '(';
  z[n + 1] = ')';
}

void qcWhere(QCtx *pX, char *zTerm) {
  int k, iPos;
  if (zTerm && pX->nTerm > pX->iTerm0) zTerm = qcTermWait(pX, zTerm);
  if (zTerm == NULL) { qcNoMem(pX->pC); return; }
  qcTermKeep(pX, zTerm);
  if (strcmp(zTerm, "0") == 0) pX->bNoRows = 1;
  if (pX->nWhere++) sqlite3_str_appendall(pX->pWhere, " AND ");
  /* The term opens a group at every level whose group has no item yet. */
  iPos = sqlite3_str_length(pX->pWhere);
  for (k = 0; k < QC_WHERE_LEVELS && pX->anWhereItems[k] == 0; k++) pX->aiWhereStart[k] = iPos;
  sqlite3_str_appendall(pX->pWhere, zTerm);
  sqlite3_free(zTerm);
  /* A full group becomes one item of the level above. */
  for (k = 0; k < QC_WHERE_LEVELS && ++pX->anWhereItems[k] == QC_WHERE_FAN; k++) {
    qcWhereWrap(pX, pX->aiWhereStart[k]);
    pX->anWhereItems[k] = 0;
  }
}

void qcWhereReset(QCtx *pX) {
  qcTermsClear(pX);
  sqlite3_str_reset(pX->pWhere);
  pX->nWhere = 0;
  memset(pX->anWhereItems, 0, sizeof pX->anWhereItems);
}

int qcNoRows(const QCtx *pX) {
  for (; pX; pX = pX->pParent) {
    if (pX->bNoRows) return 1;
  }
  return 0;
}

void qcFrom(QCtx *pX, char *zItem) {
  if (zItem == NULL) { qcNoMem(pX->pC); return; }
  if (pX->nFrom++) sqlite3_str_appendall(pX->pFrom, pX->bCross ? " CROSS JOIN " : ", ");
  sqlite3_str_appendall(pX->pFrom, zItem);
  sqlite3_free(zItem);
}

void qcCtxInit(QCtx *pX, QComp *pC, QCtx *pParent) {
  memset(pX, 0, sizeof *pX);
  pX->iLastRaise = -1;
  pX->pC = pC;
  pX->pParent = pParent;
  pX->nVisible = -1;
  pX->pFrom = sqlite3_str_new(NULL);
  pX->pWhere = sqlite3_str_new(NULL);
}

void qcCtxReset(QCtx *pX) {
  int i;
  for (i = 0; i < pX->nVar; i++) {
    sqlite3_free(pX->aVar[i].zExpr);
    sqlite3_free(pX->aVar[i].zTag);
    sqlite3_free(pX->aVar[i].zInList);
    sqlite3_free(pX->aVar[i].zInMore);
    sqlite3_free(pX->aVar[i].aParam);
  }
  sqlite3_free(pX->aVar);
  sqlite3_free(pX->aVarHash);
  sqlite3_free(pX->aKey);
  sqlite3_free(sqlite3_str_finish(pX->pFrom));
  sqlite3_free(sqlite3_str_finish(pX->pWhere));
  qcTermsClear(pX);
  memset(pX, 0, sizeof *pX);
}

char *qcBody(QCtx *pX) {
  const char *zFrom = sqlite3_str_value(pX->pFrom);
  const char *zWhere = sqlite3_str_value(pX->pWhere);
  char *zJoin = NULL, *zRet;
  if (sqlite3_str_errcode(pX->pFrom) || sqlite3_str_errcode(pX->pWhere)) {
    qcNoMem(pX->pC);
    return NULL;
  }
  if (pX->nFrom > 1 && pX->nFrom == pX->nPatternFrom && !pX->bUnlinked) {
    /* Every pattern is reached through an index from what comes before it
    ** (qcwClauses emits them bound-first): CROSS JOIN keeps that order, so
    ** stale or missing statistics (a new managed index, a small store
    ** without sqlite_stat1) cannot make SQLite drive from a whole
    ** attribute. The items are "datoms dN" / "timelined_transactions dN",
    ** so ", " only ever separates them. */
    sqlite3_str *pJ = sqlite3_str_new(NULL);
    const char *z = zFrom, *zSep;
    while ((zSep = strstr(z, ", ")) != NULL) {
      sqlite3_str_append(pJ, z, (int)(zSep - z));
      sqlite3_str_appendall(pJ, " CROSS JOIN ");
      z = zSep + 2;
    }
    sqlite3_str_appendall(pJ, z);
    zJoin = sqlite3_str_finish(pJ);
    if (zJoin == NULL) {
      qcNoMem(pX->pC);
      return NULL;
    }
    zFrom = zJoin;
  }
  zRet = sqlite3_mprintf("%s%s%s%s", pX->nFrom ? " FROM " : "", pX->nFrom ? zFrom : "",
                         pX->nWhere ? " WHERE " : "", pX->nWhere ? zWhere : "");
  sqlite3_free(zJoin);
  if (zRet && qcTextBudget(pX->pC, (sqlite3_int64)strlen(zRet))) {
    sqlite3_free(zRet);
    return NULL;
  }
  /* Callers may skip a NULL body (an or branch, a rule body): the failure
  ** must stop the compile, or the SQL silently loses that part. */
  if (zRet == NULL) qcNoMem(pX->pC);
  return zRet;
}

/* Below this many variables a scope is searched in order. */
#define QC_VAR_HASH_MIN 16

static unsigned qcVarHashOf(const char *z) {
  unsigned h = 2166136261u;
  while (*z) h = (h ^ (unsigned char)*z++) * 16777619u;
  return h;
}

/* Brings pX's name index up to its variables (aVar only grows). The
** first of two same-named variables wins, as the in-order search has it.
** 0 when it cannot be built (out of memory: the caller searches in order). */
static int qcVarHashSync(QCtx *pX) {
  int i;
  if (pX->nVar * 2 > pX->nVarHash) {
    int nNew = pX->nVarHash ? pX->nVarHash : 64;
    int *aNew;
    while (pX->nVar * 2 > nNew) nNew *= 2;
    aNew = sqlite3_malloc64(sizeof(int) * (sqlite3_uint64)nNew);
    if (aNew == NULL) return 0;
    memset(aNew, 0, sizeof(int) * (size_t)nNew);
    sqlite3_free(pX->aVarHash);
    pX->aVarHash = aNew;
    pX->nVarHash = nNew;
    pX->nVarHashed = 0;
  }
  for (i = pX->nVarHashed; i < pX->nVar; i++) {
    unsigned h = qcVarHashOf(pX->aVar[i].zName) & (unsigned)(pX->nVarHash - 1);
    while (pX->aVarHash[h]) {
      if (strcmp(pX->aVar[pX->aVarHash[h] - 1].zName, pX->aVar[i].zName) == 0) break;
      h = (h + 1) & (unsigned)(pX->nVarHash - 1);
    }
    if (pX->aVarHash[h] == 0) pX->aVarHash[h] = i + 1;
  }
  pX->nVarHashed = pX->nVar;
  return 1;
}

QVar *qcVarFind(QCtx *pX, const char *zName) {
  int i;
  if (pX->nVar >= QC_VAR_HASH_MIN && qcVarHashSync(pX)) {
    unsigned h = qcVarHashOf(zName) & (unsigned)(pX->nVarHash - 1);
    while (pX->aVarHash[h]) {
      QVar *pV = &pX->aVar[pX->aVarHash[h] - 1];
      if (strcmp(pV->zName, zName) == 0) return pV;
      h = (h + 1) & (unsigned)(pX->nVarHash - 1);
    }
  } else {
    for (i = 0; i < pX->nVar; i++) {
      if (strcmp(pX->aVar[i].zName, zName) == 0) return &pX->aVar[i];
    }
  }
  if (pX->pParent == NULL) return NULL;
  if (pX->nVisible >= 0) {
    for (i = 0; i < pX->nVisible; i++) {
      if (strcmp(pX->aVisible[i]->u.s.z, zName) == 0) break;
    }
    if (i == pX->nVisible) return NULL;
  }
  return qcVarFind(pX->pParent, zName);
}

QVar *qcVarAdd(QCtx *pX, const char *zName) {
  QVar *pV;
  if (pX->nVar == pX->nVarAlloc) {
    int nNew = pX->nVarAlloc ? pX->nVarAlloc * 2 : 8;
    QVar *aNew = sqlite3_realloc64(pX->aVar, sizeof(QVar) * nNew);
    if (aNew == NULL) { qcNoMem(pX->pC); return NULL; }
    pX->aVar = aNew;
    pX->nVarAlloc = nNew;
  }
  pV = &pX->aVar[pX->nVar++];
  memset(pV, 0, sizeof *pV);
  pV->zName = zName;
  return pV;
}

/* Is z a plain column reference "dN.v" (so it can drive an index)? */
static int qcIsColumn(const char *z) {
  if (z == NULL || z[0] != 'd') return 0;
  z++;
  while (*z >= '0' && *z <= '9') z++;
  return z[0] == '.' && (strcmp(z, ".v") == 0 || strcmp(z, ".e") == 0 || strcmp(z, ".tx") == 0
                         || strcmp(z, ".a") == 0);
}

/* Is z a datom's value column "dN.v"? */
static int qcIsValueColumn(const char *z) {
  size_t n = z ? strlen(z) : 0;
  return qcIsColumn(z) && n > 2 && strcmp(z + n - 2, ".v") == 0;
}

int qcVarNotNull(const QVar *pV) {
  return qcIsColumn(pV->zExpr);
}

int qcVarMixesKinds(const QVar *pV) {
  if (pV->vt == VT_NONE) return 1;
  return qcTypeClass(pV->vt) == 1 && (pV->bInMixed || pV->nFnDepth > 0);
}

/* Is one of a and b a double and the other a long or an entity id? */
static int qcNumKindsDiffer(ValueType a, ValueType b) {
  return qcTypeClass(a) == 1 && qcTypeClass(b) == 1 && (a == VT_DOUBLE) != (b == VT_DOUBLE);
}

#define QC_UNIFY_CONV 2   /* qcTypeParams, qcUnifyTypes: compare converted */

/* The first typed place a variable meets types its lazy parameters. With
** bKeepKind (the place is not a typed attribute's value column, where a
** literal converts as the transactor converts it, but a second ground or a
** function result) a query constant keeps its kind of number: 1 is not
** 1.0, as Clojure's = has it. Returns 1 when one did, so the caller
** compares the kinds at run time. A long meeting a double attribute's
** place (vt VT_DOUBLE) stays the long the query gave: the variable is 1
** to :find, functions and = whichever place comes first, and this place
** and every later one compare it converted (QC_UNIFY_CONV); returns
** QC_UNIFY_CONV then, the variable keeping its type. */
int qcTypeParams(QCtx *pX, QVar *pV, ValueType vt, int bKeepKind) {
  int i, bKept = 0, bConv = 0;
  if (vt == VT_NONE || vt == QVT_JSON) return 0;
  for (i = 0; i < pV->nParam; i++) {
    QParam *pP = &pX->pC->aParam[pV->aParam[i] - 1];
    if (vt == VT_REF && pP->eConv == QV_NATURAL && pP->iInput < 0 && pP->pConst
        && pP->pConst->type != EDN_INT && pP->pConst->type != EDN_KEYWORD && !qcNoRows(pX)) {
      /* a constant a function bound ((ground "x")) in an entity place
      ** names no entity: an error, as the constant in a pattern is */
      qcNotEntity(pX->pC, pP->pConst, NULL);
      return 0;
    }
    if (pP->eConv == QV_NATURAL) {
      if (bKeepKind && pP->iInput < 0 && qcNumKindsDiffer(pP->vt, vt)) {
        bKept = 1;
        continue;
      }
      if (vt == VT_DOUBLE && pP->vt == VT_LONG) {
        bConv = 1;
        continue;
      }
      pP->eConv = QV_TYPED;
      pP->vt = vt;
      pP->iSrc = pX->pC->iSrc > 0 ? pX->pC->iSrc : 0;   /* typed by a place of this source */
    }
  }
  if (pV->nParam) {
    if (!bConv) pV->vt = vt;
    pV->bGiven = 1;     /* typed, it is still the query's value */
    /* a keyword the query gave names its ident where an entity goes, a
    ** keyword place first or not (SPEC.md §2.4) */
    if (vt == VT_KEYWORD) pV->bIdent = 1;
    sqlite3_free(pV->aParam);
    pV->aParam = NULL;
    pV->nParam = 0;
  }
  return bKept ? 1 : bConv ? QC_UNIFY_CONV : 0;
}

/* May a value of static type a equal one of static type b (Clojure's =)?
** The same type, or two kinds of number (a ref is an entity id, a long;
** long against double is settled by the storage class at run time).
** Collections (JSON) are left to the SQL comparison. */
static int qcVtsMayEqual(ValueType a, ValueType b) {
  if (a == b || a == QVT_JSON || b == QVT_JSON) return 1;
  return qcTypeClass(a) == 1 && qcTypeClass(b) == 1;
}

/* The storage class a number of static type vt has in SQL. */
static const char *qcNumClass(ValueType vt) {
  return vt == VT_DOUBLE ? "real" : "integer";
}

/* The filters of the collections that bound pV before its first place
** (zInList, zInMore), on expression zExpr: "x IN (?1,?2) AND x IN (?3)".
** Two collection bindings of one variable give their intersection. */
static char *qcInTerms(const QVar *pV, const char *zExpr) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  const char *z = pV->zInMore;
  sqlite3_str_appendf(pOut, "%s IN (%s)", zExpr, pV->zInList);
  while (z) {
    const char *zEnd = strchr(z, '\x01');
    int n = zEnd ? (int)(zEnd - z) : (int)strlen(z);
    sqlite3_str_appendf(pOut, " AND %s IN (%.*s)", zExpr, n, z);
    z = zEnd ? zEnd + 1 : NULL;
  }
  return sqlite3_str_finish(pOut);
}

/* A pending collection of keywords (pV) meets entity place zExpr: the
** entities whose idents they are (through the index); the variable becomes
** the keyword. */
static void qcBindInKeywords(QCtx *pX, QVar *pV, const char *zExpr) {
  char *zKw = sqlite3_mprintf("(SELECT v FROM %s WHERE a = %d AND e = %s AND"
                              " value_type_tag = %d)", pX->pC->zDatoms, ENTID_DB_IDENT, zExpr,
                              TAG_KEYWORD);
  char *zIn = zKw ? qcInTerms(pV, "v") : NULL;
  if (zIn) {
    qcWhere(pX, sqlite3_mprintf("%s IN (SELECT e FROM %s WHERE a = %d AND"
                                " value_type_tag = %d AND %s)", zExpr, pX->pC->zDatoms,
                                ENTID_DB_IDENT, TAG_KEYWORD, zIn));
  }
  if (zKw == NULL || zIn == NULL) qcNoMem(pX->pC);
  sqlite3_free(zIn);
  sqlite3_free(pV->zInList);
  sqlite3_free(pV->zInMore);
  pV->zInList = NULL;
  pV->zInMore = NULL;
  qcTypeParams(pX, pV, VT_KEYWORD, 0);
  pV->zExpr = zKw;
  pV->bIntCol = 0;
  pV->bIdent = 1;      /* later entity places read the ident too */
}

/* A pending collection input pV meets its first place zExpr (taken over;
** of type vt, or when VT_NONE of tag zTag): an IN list on the column, so
** the column's index serves every element. */
static void qcBindInList(QCtx *pX, QVar *pV, char *zExpr, ValueType vt, const char *zTag,
                         int bIntCol) {
  if (vt == VT_TUPLE && pV->vt == QVT_JSON) {
    /* tuples the input gave (JSON) against stored ones: by the JSON form */
    char *zJ = sqlite3_mprintf("mentat_json(%s, %d)", zExpr, TAG_TUPLE);
    if (zJ == NULL) { sqlite3_free(zExpr); qcNoMem(pX->pC); return; }
    qcWhere(pX, qcInTerms(pV, zJ));
    sqlite3_free(zJ);
    pV->vt = VT_TUPLE;
  } else {
    qcWhere(pX, qcInTerms(pV, zExpr));
  }
  sqlite3_free(pV->zInList);
  sqlite3_free(pV->zInMore);
  pV->zInList = NULL;
  pV->zInMore = NULL;
  if (vt != VT_NONE) qcTypeParams(pX, pV, vt, 0);
  else if (zTag && pV->vt != VT_NONE) {
    qcWhere(pX, qcTagIs(zTag, pV->vt));
    /* numbers of one kind: 1.0 does not find a long 1 (Clojure's =) */
    if (qcTypeClass(pV->vt) == 1 && !pV->bInMixed) {
      qcWhere(pX, sqlite3_mprintf("typeof(%s) = '%s'", zExpr, qcNumClass(pV->vt)));
    }
  }
  pV->zExpr = zExpr;
  pV->bIntCol = (unsigned char)bIntCol;
}

/* A keyword input pV, or a keyword a rule call passed in, in entity place
** zExpr is the entity whose ident it is, as Datomic reads an ident
** wherever an entity goes (at each such place, each in the schema of its
** clause's source); the variable keeps the keyword, so a function or
** :find sees one reading per row. (A keyword a pattern bound is a value
** like any other: joins compare values, so a join never depends on which
** clause runs first.) */
static void qcBindIdent(QCtx *pX, QVar *pV, const char *zExpr) {
  char *zId = qcIdentSql(pX->pC, pV->zExpr);
  if (zId == NULL) {
    qcNoMem(pX->pC);
  } else if (pV->vt == VT_KEYWORD) {
    qcWhere(pX, sqlite3_mprintf("%s = %s", zExpr, zId));
    if (pV->nParam) qcTypeParams(pX, pV, VT_KEYWORD, 0);
    /* every later entity place reads the ident too (in its own source's
    ** schema), not only this first one */
    pV->bIdent = 1;
  } else {
    /* a rule's seed: only a keyword its kind says reads as an ident (one
    ** a pattern bound, in the caller or a step, is a value: qcVarKind) */
    char zKind[24], zIs[48];
    zIs[0] = 0;
    if (qcVarSeedKind(pV, zKind, (int)sizeof zKind)) {
      sqlite3_snprintf(sizeof zIs, zIs, " AND %s = 'ident'", zKind);
    }
    qcWhere(pX, sqlite3_mprintf("%s = (CASE WHEN %s = %d%s THEN %s ELSE %s END)", zExpr,
                                pV->zTag, TAG_KEYWORD, zIs, zId, pV->zExpr));
    qcWhere(pX, sqlite3_mprintf("((%s = %d%s) OR (%s IN (%d, %d) AND typeof(%s) = 'integer'))",
                                pV->zTag, TAG_KEYWORD, zIs, pV->zTag, TAG_REF, TAG_NUMBER,
                                pV->zExpr));
  }
  sqlite3_free(zId);
}

/* The equality operator of a join of zA with zB: SQLite's null-safe IS
** when neither is a datom's column, as either may then be nil (an
** untuple'd or re-find group's nil, a nil element of an input), and nil
** joins nil as Clojure's (= nil nil) is true; a datom's column is never
** NULL, where = and IS agree and = is the form the planner knows best. */
static const char *qcEqOp(const char *zA, const char *zB) {
  return qcIsColumn(zA) || qcIsColumn(zB) ? "=" : "IS";
}

/* The equality of bound pV with zExpr, written so an index serves it. */
static void qcUnifyEq(QCtx *pX, const QVar *pV, const char *zExpr, int bIntCol) {
  if (!bIntCol && pV->bIntCol) {
    /* `x = +e` compares without e's affinity (text "5" is not entity 5);
    ** `e = x` alone lets the planner look the datom up by e from x (a
    ** recursive rule's step reading its CTE row: without it SQLite scans
    ** the attribute once per row). The exact term decides. */
    qcWhere(pX, sqlite3_mprintf("%s = +%s", zExpr, pV->zExpr));
    if (qcIsColumn(pV->zExpr)) qcWhere(pX, sqlite3_mprintf("%s = %s", pV->zExpr, zExpr));
  } else if (bIntCol && !pV->bIntCol && qcIsColumn(pV->zExpr)) {
    /* The value column was bound first. Both directions are stated so the
    ** planner may drive from either side: `v = +e` keeps the value index
    ** usable (no affinity on v), `e = v` lets it look the entity up by e. */
    qcWhere(pX, sqlite3_mprintf("%s = +%s", pV->zExpr, zExpr));
    qcWhere(pX, sqlite3_mprintf("%s = %s", zExpr, pV->zExpr));
  } else if (!bIntCol && qcIsValueColumn(pV->zExpr) && !qcIsColumn(zExpr)) {
    /* A rule's CTE column read from an entity column has its INTEGER
    ** affinity, which would apply to v and keep SQLite off the value
    ** index (VAET walks a recursive rule's graph backwards): `v = +x`
    ** uses it, `x = v` an automatic index on the CTE. */
    qcWhere(pX, sqlite3_mprintf("%s = +%s", pV->zExpr, zExpr));
    qcWhere(pX, sqlite3_mprintf("%s = %s", zExpr, pV->zExpr));
  } else {
    qcWhere(pX, sqlite3_mprintf("%s %s %s", zExpr, qcEqOp(zExpr, pV->zExpr), pV->zExpr));
  }
}

static int qcOwnVar(const QCtx *pX, const QVar *pV);
static void qcMaterializeVar(QCtx *pX, QVar *pV);

/* May place zExpr of type vt in scope pX type the lazy parameters of pV
** (an input or ground value: its type comes from its first place)? Only
** a datom's column of pV's own scope, where a row that stays has the
** column's value anyway, or an entity place (an integer or ident there is
** the entity). A place in a not, an or branch or a rule body only compares
** (a not removes rows, it never changes a kept row's value), and so does a
** function result or a second ground or input: 1 is not 1.0, as Clojure's
** = has it, and "a" no long. */
static int qcMayType(QCtx *pX, const QVar *pV, const char *zExpr, ValueType vt) {
  if (vt == VT_NONE || vt == QVT_JSON) return 0;
  return vt == VT_REF || (qcOwnVar(pX, pV) && qcIsColumn(zExpr));
}

/* Does bound pV meet zExpr of type vt by value, the long 1 matching 1.0?
** Where zExpr is a double attribute's value column (a datom's v of static
** type double) and pV a number the query gave (an input, ground, a rule's
** constant argument: bGiven, or lazy parameters, or a collection of
** several types), as edn_t stores {:b/x 1} as 1.0 (README, Decisions), in
** every scope alike: a not, an or branch or a rule body compares as the
** query's own scope converts. A long attribute's place keeps comparing the
** kind (1.0 is no long: edn_t refuses it), and a function's result is
** compared by Clojure's = (not given). */
int qcVarConverts(const QVar *pV, const char *zExpr, ValueType vt) {
  if (vt != VT_DOUBLE || !qcIsValueColumn(zExpr)) return 0;
  if (!(pV->bGiven || pV->nParam > 0 || pV->bHetero)) return 0;
  return pV->vt == VT_NONE || qcTypeClass(pV->vt) == 1;
}

/* How a number the query gave (qcVarConverts holds) meets a double
** attribute's place: converted (QC_UNIFY_CONV) when it may be a long, else
** by plain equality. */
static int qcConvMode(const QVar *pV) {
  return pV->vt != VT_DOUBLE || pV->bInMixed ? QC_UNIFY_CONV : 0;
}

/* The type terms of bound pV meeting zExpr of type vt (tag zTag when
** VT_NONE), typing pV's lazy parameters when that place may. Returns 1
** when the two must also have one storage class (1 is not 1.0), which
** the caller states with the equality (qcUnifyKind), QC_UNIFY_CONV when
** zExpr compares with pV converted as edn_t stores a number (qcVarConverts:
** the variable keeps the value the query gave), 0 for plain equality. */
static int qcUnifyTypes(QCtx *pX, QVar *pV, const char *zExpr, ValueType vt, const char *zTag) {
  int bKind = 0;
  /* Types must agree too, and a long never equals a double (Datomic
  ** stores 1 and 1.0 as different values; SQLite's = would not tell). */
  if (vt != VT_NONE && pV->nParam && qcMayType(pX, pV, zExpr, vt)) {
    bKind = qcTypeParams(pX, pV, vt, !qcIsColumn(zExpr));
  } else if (vt != VT_NONE && vt != QVT_JSON && pV->nParam && pV->vt != VT_NONE
             && pV->vt != QVT_JSON) {
    /* the lazy values keep their own types: compared by value and type */
    if (!qcVtsMayEqual(vt, pV->vt)) {
      qcWhere(pX, sqlite3_mprintf("0"));
    } else if (qcVarConverts(pV, zExpr, vt)) {
      bKind = qcConvMode(pV);   /* a number by its value: 1 matches 1.0 */
    } else if (qcTypeClass(vt) == 1
               && (qcNumKindsDiffer(vt, pV->vt) || qcVarMixesKinds(pV) || !qcIsColumn(zExpr))) {
      bKind = 1;
    }
  } else if (vt != VT_NONE && vt != QVT_JSON && pV->vt == VT_NONE && pV->zTag) {
    char zKind[24];
    qcWhere(pX, qcTagIs(pV->zTag, vt));
    if (vt == VT_DOUBLE && qcIsValueColumn(zExpr) && qcVarSeedKind(pV, zKind, (int)sizeof zKind)) {
      /* a rule's seed: an integer the query gave converts (qcVarKind) */
      qcWhere(pX, sqlite3_mprintf("(typeof(%s) = 'real' OR %s = 'given')", pV->zExpr, zKind));
      bKind = QC_UNIFY_CONV;
    } else if (qcTypeClass(vt) == 1 && !qcVarConverts(pV, zExpr, vt)) {
      qcWhere(pX, sqlite3_mprintf("typeof(%s) = '%s'", pV->zExpr, qcNumClass(vt)));
    } else if (qcTypeClass(vt) == 1) {
      bKind = QC_UNIFY_CONV;    /* the tag says a number: converted */
    }
  } else if (vt == VT_NONE && zTag && pV->bInMixed && qcTypeClass(pV->vt) == 1) {
    /* numbers of both kinds (1 and 2.5): a number, each of its own kind */
    qcWhere(pX, qcTagIs(zTag, VT_LONG));
    bKind = 1;
  } else if (vt == VT_NONE && zTag && pV->nParam && pV->vt == VT_LONG) {
    /* An integer input meeting a column of unknown type (a rule's output)
    ** before any typed place: an entid or a long, as SPEC.md §2.4 reads an
    ** integer in an entity place "including inside rules". */
    qcWhere(pX, sqlite3_mprintf("%s IN (%d, %d) AND typeof(%s) = 'integer'", zTag, TAG_REF,
                                TAG_NUMBER, zExpr));
  } else if (vt == VT_NONE && zTag && pV->vt != VT_NONE && pV->vt != QVT_JSON) {
    qcWhere(pX, qcTagIs(zTag, pV->vt));
    if (qcTypeClass(pV->vt) == 1) {
      qcWhere(pX, sqlite3_mprintf("typeof(%s) = '%s'", zExpr, qcNumClass(pV->vt)));
    }
  } else if (vt == VT_NONE && zTag && pV->zTag) {
    qcWhere(pX, qcTagsMatch(zTag, pV->zTag));
    bKind = 1;
  } else if (vt != VT_NONE && pV->vt != VT_NONE && !qcVtsMayEqual(vt, pV->vt)) {
    /* Both types are known and no value of one equals a value of the
    ** other under Clojure's = (true is not 1, ":x/y" is not :x/y, an
    ** #inst is not its microseconds): the join is empty, although SQLite
    ** stores the two alike. */
    qcWhere(pX, sqlite3_mprintf("0"));
  } else if (qcVarConverts(pV, zExpr, vt) && (qcNumKindsDiffer(vt, pV->vt) || pV->bInMixed)) {
    bKind = QC_UNIFY_CONV;
  } else if (qcNumKindsDiffer(vt, pV->vt)
             || (pV->bInMixed && qcTypeClass(vt) == 1 && vt != VT_DOUBLE)) {
    bKind = 1;   /* (1 and 1.0 given: only 1 is a long or an entity id) */
  }
  return bKind;
}

/* Is z an SQL constant to SQLite (a parameter, a literal)? */
static int qcIsConstSql(const char *z) {
  return z[0] == '?' || z[0] == '\'' || (z[0] >= '0' && z[0] <= '9') || z[0] == '-';
}

/* The equality of bound pV with zExpr where their storage classes must
** agree too. SQLite propagates a constant through "col = ?3" into the
** other terms on col (typeof(col) would become typeof(?3), always equal),
** so the column side of such a pair is written +col. */
static void qcUnifyKind(QCtx *pX, const QVar *pV, const char *zExpr) {
  int bC1 = qcIsConstSql(zExpr), bC2 = qcIsConstSql(pV->zExpr);
  qcWhere(pX, sqlite3_mprintf("%s%s %s %s%s", bC2 && !bC1 ? "+" : "", zExpr,
                              qcEqOp(zExpr, pV->zExpr), bC1 && !bC2 ? "+" : "", pV->zExpr));
  qcWhere(pX, sqlite3_mprintf("typeof(%s) = typeof(%s)", zExpr, pV->zExpr));
}

/* Double attribute place zExpr meets pV, a number the query gave, as edn_t
** would store it: CAST is edn_t's conversion of a long (9007199254740993
** is 9007199254740992.0, which SQLite's exact compare of INTEGER with REAL
** would miss) and leaves a double as it is; pV keeps its own value. The
** unary + drops the CAST's REAL affinity, which SQLite would otherwise
** apply to the BLOB column v, keeping the (a, v) index out of use. A
** VALUES column holds the converted value beside it (bConvCol), which
** SQLite may index too: a scan of an attribute of no value index then
** probes the few rows instead of indexing the attribute for them. */
static void qcUnifyConv(QCtx *pX, const QVar *pV, const char *zExpr) {
  char zCol[48];
  int iN = 0, iJ = 0;
  if (pV->bConvCol && sscanf(pV->zExpr, "in%d.c%d", &iN, &iJ) == 2) {
    sqlite3_snprintf(sizeof zCol, zCol, "in%d.c%d", iN, iJ);
    if (strcmp(zCol, pV->zExpr) == 0) {   /* not rebound since */
      qcWhere(pX, sqlite3_mprintf("%s = in%d.k%d", zExpr, iN, iJ));
      return;
    }
  }
  qcWhere(pX, sqlite3_mprintf("%s = +CAST(%s AS REAL)", zExpr, pV->zExpr));
}

/* Would pending collection pV meeting a place of type vt keep longs the
** query gave (qcVarValueBound)? */
static int qcInKeepsLongs(const QCtx *pX, const QVar *pV, ValueType vt) {
  if (vt != VT_DOUBLE || pV->zInList == NULL) return 0;
  return qcParamsHaveLong(pX->pC, pV->aParam, pV->nParam);
}

int qcVarValueBound(QCtx *pX, const char *zName, ValueType vt) {
  QVar *pV = qcVarFind(pX, zName);
  return pV && (pV->zExpr || qcInKeepsLongs(pX, pV, vt));
}

void qcBindVar(QCtx *pX, const char *zName, char *zExpr, ValueType vt, char *zTag,
               int bIntCol) {
  QVar *pV;
  char *zSeq;
  /* A value of no static type always comes with its run-time tag; a NULL
  ** tag there is an allocation that failed (the value would print as
  ** null), not a value without one. */
  if (zExpr == NULL || pX->pC->rc || (vt == VT_NONE && zTag == NULL)) {
    if (zExpr == NULL || (vt == VT_NONE && zTag == NULL)) qcNoMem(pX->pC);
    sqlite3_free(zExpr);
    sqlite3_free(zTag);
    return;
  }
  pV = qcVarFind(pX, zName);
  if (pV == NULL) {
    pV = qcVarAdd(pX, zName);
    if (pV == NULL) { sqlite3_free(zExpr); sqlite3_free(zTag); return; }
    pV->zExpr = zExpr;
    pV->zTag = vt == VT_NONE ? zTag : NULL;
    if (vt != VT_NONE) sqlite3_free(zTag);
    pV->vt = vt;
    pV->bIntCol = (unsigned char)bIntCol;
    return;
  }
  if (pV->zInList && (!qcOwnVar(pX, pV) || (vt != VT_NONE && vt != VT_REF && !qcIsColumn(zExpr)
                                             && (vt != pV->vt || pV->bInMixed))
                      || (vt == VT_NONE && pV->bInMixed) || qcInKeepsLongs(pX, pV, vt))) {
    /* A pending collection meeting a place that may not type it (in a not
    ** or a branch, or a value of another type), or a double attribute's
    ** place that compares its longs converted: its own rows in its own
    ** scope, which the place then compares with, as any bound value. */
    QCtx *pO = pX;
    while (pO && !qcOwnVar(pO, pV)) pO = pO->pParent;
    if (pO) qcMaterializeVar(pO, pV);
    if (pV->zExpr == NULL) { sqlite3_free(zExpr); sqlite3_free(zTag); return; }
  }
  if (pV->zInList && vt == VT_REF && pV->vt == VT_KEYWORD && pV->nParam && !pV->bInLookup) {
    qcBindInKeywords(pX, pV, zExpr);
  } else if (pV->zInList) {
    qcBindInList(pX, pV, zExpr, vt, zTag, bIntCol);
    zExpr = NULL;
  } else if (vt == VT_REF && ((pV->vt == VT_KEYWORD && (pV->nParam || pV->bIdent))
                              || (pV->vt == VT_NONE && pV->zTag && pV->bIdent))) {
    qcBindIdent(pX, pV, zExpr);
  } else if (qcCollKindsDiffer(pX, zExpr, vt, pV->zExpr, pV->vt,
                               pV->bSeq == 3 ? pV->mColl : 0)) {
    qcWhere(pX, sqlite3_mprintf("0"));   /* a set is no vector, though both are arrays */
  } else if ((vt == VT_TUPLE && pV->vt == QVT_JSON) || (vt == QVT_JSON && pV->vt == VT_TUPLE)) {
    /* a stored tuple meets a tuple a query made (an input vector, the
    ** tuple function): compared as JSON, the form the query's has */
    qcWhere(pX, sqlite3_mprintf("mentat_json(%s, %d) = %s", vt == VT_TUPLE ? zExpr : pV->zExpr,
                                TAG_TUPLE, vt == VT_TUPLE ? pV->zExpr : zExpr));
  } else if ((zSeq = qcSeqJsonEq(pX, zExpr, vt, zTag, pV->zExpr, pV->vt, pV->zTag, "IS")) != NULL) {
    qcWhere(pX, zSeq);   /* a seq (held as a tuple) meets a list literal's JSON */
  } else {
    int eHow = qcUnifyTypes(pX, pV, zExpr, vt, zTag);
    if (eHow == QC_UNIFY_CONV) qcUnifyConv(pX, pV, zExpr);
    else if (eHow) qcUnifyKind(pX, pV, zExpr);
    else qcUnifyEq(pX, pV, zExpr, bIntCol);
  }
  sqlite3_free(zExpr);
  sqlite3_free(zTag);
}

/* Function results nested deeper, or longer, than this are bound once
** through mentat_one (ext/qfunc/query_funcs_one.c) instead of being written into the
** next expression: SQLite's parser stack takes about 15 nested str calls,
** and a result used twice doubles the text at each step. Shallow ones
** stay inline, so short chains keep their plans. */
#define QC_FN_INLINE_DEPTH 3
#define QC_FN_INLINE_BYTES 1000

/* Is pV one of scope pX's own variables (not a parent's)? A scope with none
** (a not holding only a predicate) has aVar NULL, where aVar + 0 is undefined. */
static int qcOwnVar(const QCtx *pX, const QVar *pV) {
  return pX->nVar > 0 && pV >= pX->aVar && pV < pX->aVar + pX->nVar;
}

void qcFnResult(QCtx *pX, const char *zName) {
  /* by qcVarFind's index: a scan per function would make a chain of n
  ** functions quadratic (16,384: 1.6 s) */
  QVar *pV = qcVarFind(pX, zName);
  if (pV && qcOwnVar(pX, pV)) pV->nFnDepth = pX->pC->nArgDepth + 1;
}

/* Moves function result pV into the FROM clause: mentat_one(expr, tag)
** fN, the variable then fN.value (and fN.tag). */
static void qcFnBindOnce(QCtx *pX, QVar *pV) {
  QComp *pC = pX->pC;
  char zAlias[24];
  char *zExpr, *zTag = NULL;
  sqlite3_snprintf(sizeof zAlias, zAlias, "f%d", ++pC->nAlias);
  if (pV->zTag) qcFrom(pX, sqlite3_mprintf("mentat_one(%s, %s) %s", pV->zExpr, pV->zTag, zAlias));
  else qcFrom(pX, sqlite3_mprintf("mentat_one(%s) %s", pV->zExpr, zAlias));
  qcTermsBoundOnce(pX, pV->zExpr, zAlias);
  zExpr = sqlite3_mprintf("%s.value", zAlias);
  if (pV->zTag) zTag = sqlite3_mprintf("%s.tag", zAlias);
  if (zExpr == NULL || (pV->zTag && zTag == NULL)) {
    sqlite3_free(zExpr);
    sqlite3_free(zTag);
    qcNoMem(pC);
    return;
  }
  sqlite3_free(pV->zExpr);
  pV->zExpr = zExpr;
  if (pV->zTag) {
    sqlite3_free(pV->zTag);
    pV->zTag = zTag;
  }
  pV->bIntCol = 0;
  pV->nFnDepth = 0;
}

char *qcTermExpr(QCtx *pX, const EdnValue *p, ValueType *pvt, char **pzTag,
                 const char *zWhat) {
  if (pzTag) *pzTag = NULL;
  if (ednIsVar(p)) {
    QVar *pV = qcVarFind(pX, p->u.s.z);
    if (pV == NULL || pV->zExpr == NULL) {
      const QRule *pR = pX->pC->pWhole;
      int i;
      for (i = 0; pR && i < pR->nHead; i++) {
        if (strcmp(pR->aHead[i]->u.s.z, p->u.s.z) == 0) break;
      }
      if (pR && i < pR->nHead) {
        /* A head variable the caller may well bind: say why it is not. */
        qcErr(pX->pC, p, "unbound variable %s in %s: recursive rule %s gets the caller's"
              " arguments only where the call binds them in places every recursive call hands"
              " on unchanged, so here its functions and predicates see only what its own"
              " clauses bind", p->u.s.z, zWhat, pR->zName);
      } else {
        qcErr(pX->pC, p, "unbound variable %s in %s", p->u.s.z, zWhat);
      }
      return NULL;
    }
    char *zExpr;
    if (pV->nFnDepth > 0 && strcmp(zWhat, "function") == 0) {
      if (qcOwnVar(pX, pV) && (pV->nFnDepth >= QC_FN_INLINE_DEPTH
                               || strlen(pV->zExpr) > QC_FN_INLINE_BYTES
                               || (pV->zTag && strlen(pV->zTag) > QC_FN_INLINE_BYTES))) {
        qcFnBindOnce(pX, pV);
        if (pX->pC->rc) return NULL;
      }
      if (pV->nFnDepth > pX->pC->nArgDepth) pX->pC->nArgDepth = pV->nFnDepth;
    }
    *pvt = pV->vt;
    /* NULL is also "unbound" and "no tag" to callers: out of memory must
    ** be said, or the clause would lose its binding or its type test. */
    if (pzTag && pV->zTag) {
      *pzTag = sqlite3_mprintf("%s", pV->zTag);
      if (*pzTag == NULL) { qcNoMem(pX->pC); return NULL; }
    }
    zExpr = sqlite3_mprintf("%s", pV->zExpr);
    if (zExpr == NULL) {
      qcNoMem(pX->pC);
      if (pzTag) { sqlite3_free(*pzTag); *pzTag = NULL; }
    }
    return zExpr;
  }
  if (qpIsBlank(p)) {
    qcErr(pX->pC, p, "_ is not allowed in %s", zWhat);
    return NULL;
  }
  return qcConstExpr(pX, p, VT_NONE, pvt);
}

/* Collection input pV of scope pX, still waiting for its place: a VALUES
** CTE in pX's FROM, the variable its column. */
static void qcMaterializeVar(QCtx *pX, QVar *pV) {
  QComp *pC = pX->pC;
  char zName[24];
  /* longs the query gave: each with its double form beside it (bConvCol) */
  int bConv = pV->nInElem > 0 && qcParamsHaveLong(pC, pV->aParam, pV->nParam);
  sqlite3_snprintf(sizeof zName, zName, "in%d", ++pC->nAlias);
  if (pC->nCte++) sqlite3_str_appendall(pC->pCte, ", ");
  if (pV->nInElem == 0) {
    sqlite3_str_appendf(pC->pCte, "%s(c0) AS (SELECT NULL WHERE 0)", zName);
  } else {
    /* "?1,?2" → "(?1),(?2)": elements never contain a top-level comma
    ** except inside lookup-ref subqueries, which are parenthesised. */
    const char *z = pV->zInList, *zElem = z;
    int depth = 0;
    sqlite3_str_appendf(pC->pCte, "%s(c0%s) AS (VALUES ", zName, bConv ? ", k0" : "");
    for (;; z++) {
      if (*z == '(') depth++;
      if (*z == ')') depth--;
      if ((*z == ',' && depth == 0) || *z == 0) {
        int n = (int)(z - zElem);
        sqlite3_str_appendf(pC->pCte, "%s(%.*s", zElem == pV->zInList ? "" : ",", n, zElem);
        if (bConv) sqlite3_str_appendf(pC->pCte, ", +CAST(%.*s AS REAL)", n, zElem);
        sqlite3_str_appendall(pC->pCte, ")");
        if (*z == 0) break;
        zElem = z + 1;
      }
    }
    sqlite3_str_appendall(pC->pCte, ")");
  }
  pV->bConvCol = (unsigned char)bConv;
  qcFrom(pX, sqlite3_mprintf("%s", zName));
  pV->zExpr = sqlite3_mprintf("%s.c0", zName);
  if (pV->zExpr == NULL) qcNoMem(pC);
  if (pV->bInLookup) qcWhere(pX, sqlite3_mprintf("%s.c0 IS NOT NULL", zName));
  if (pV->zInMore && pV->zExpr) {
    /* more collections bound it: each filters the first's values */
    char *zTerms = qcInTerms(pV, pV->zExpr), *zAnd;
    zAnd = zTerms ? strstr(zTerms, " AND ") : NULL;
    qcWhere(pX, zAnd ? sqlite3_mprintf("%s", zAnd + 5) : NULL);
    sqlite3_free(zTerms);
  }
  sqlite3_free(pV->zInList);
  sqlite3_free(pV->zInMore);
  pV->zInList = NULL;
  pV->zInMore = NULL;
}

/* A collection input no pattern used: a VALUES CTE in FROM. */
void qcMaterialize(QCtx *pX) {
  int i;
  for (i = 0; i < pX->nVar && qcPoll(pX->pC) == SQLITE_OK; i++) {
    if (pX->aVar[i].zInList) qcMaterializeVar(pX, &pX->aVar[i]);
  }
}

/* ---- the variables a clause mentions */

/* Adds name z to the n names of a[] unless it is there (keeping at most
** nMax); the count, which may exceed nMax. */
static int qcAddName(const char **a, int n, int nMax, const char *z) {
  int i;
  for (i = 0; i < n && i < nMax; i++) if (strcmp(a[i], z) == 0) return n;
  if (n < nMax) a[n] = z;
  return n + 1;
}

/* Adds the variables among terms aT[0..nT) to the n names of a[]. */
static int qcTermsVars(const EdnValue *const *aT, int nT, const char **a, int n, int nMax) {
  int i;
  for (i = 0; i < nT; i++) {
    if (ednIsVar(aT[i])) n = qcAddName(a, n, nMax, aT[i]->u.s.z);
  }
  return n;
}

int qcClauseVars(const QClause *pCl, const char **a, int nMax, int iDepth) {
  int n = 0, i, j;
  if (iDepth > EDN_MAX_DEPTH) return 0;
  switch (pCl->kind) {
    case QC_PATTERN: case QC_PRED: case QC_RULE:
      return qcTermsVars(pCl->aArg, pCl->nArg, a, 0, nMax);
    case QC_FN:
      n = qcTermsVars(pCl->aArg, pCl->nArg, a, 0, nMax);
      return qcTermsVars(pCl->bind.aVar, pCl->bind.nVar, a, n, nMax);
    case QC_NOT_JOIN: case QC_OR_JOIN:
      return qcTermsVars(pCl->aJoin, pCl->nJoin, a, 0, nMax);
    default: {
      const char *aSub[64];
      for (i = 0; i < pCl->nSub; i++) {
        int nSub = qcClauseVars(pCl->aSub[i], aSub, 64, iDepth + 1);
        for (j = 0; j < nSub && j < 64; j++) n = qcAddName(a, n, nMax, aSub[j]);
      }
      return n;
    }
  }
}
