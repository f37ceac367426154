/*
** query_compile_value.c — value expressions of function clauses: the
** compile hooks of the arithmetic, string, regex, collection and
** conversion built-ins (the table of query_compile_fn.c) as SQL
** expressions over their arguments, through the SQL functions of ext/qfunc
** where SQL has no equivalent (named by the row's zFunc). Takes a function
** clause and its row; gives its SQL, static type and tag. Calls the scope
** and SQL helpers, and qfRegexGroups to check a constant pattern.
*/
#include <stdlib.h>
#include <string.h>
#include "query_compile_scope.h"
#include "query_funcs.h"

/* A regular expression constant is checked (and its groups counted) when
** the query compiles; *pnGroup is -1 when the pattern is not a constant. */
static int qcvRegexCheck(QCtx *pX, const EdnValue *pPat, const char *zFn, int *pnGroup) {
  char *zErr = NULL;
  *pnGroup = -1;
  if (pPat->type != EDN_STRING) return SQLITE_OK;
  if (qfRegexGroups(pPat->u.s.z, pPat->u.s.n, pnGroup, &zErr) != SQLITE_OK) {
    int rc = zErr ? qcErr(pX->pC, pPat, "%s: %s", zFn, zErr) : qcNoMem(pX->pC);
    sqlite3_free(zErr);
    return rc;
  }
  return SQLITE_OK;
}

/* A value built-in's arguments as SQL: expression, type and tag of each,
** whether one is a double, and the clause's place for run-time errors. */
typedef struct QcvArgs {
  int n;
  char *azA[QCF_MAX_ARGS], *azTag[QCF_MAX_ARGS];
  ValueType aVt[QCF_MAX_ARGS];
  int bDouble;
  char *zPlace;
} QcvArgs;

/* Frees what qcvArgsOpen made. */
static void qcvArgsClose(QcvArgs *pA) {
  int i;
  for (i = 0; i < pA->n; i++) {
    sqlite3_free(pA->azA[i]);
    sqlite3_free(pA->azTag[i]);
  }
  sqlite3_free(pA->zPlace);
}

/* Argument i as the row's argument type (QcfArg) wants it: a typed place
** of another type is an error, one of unknown type is NULL at run time
** unless it holds one (by its tag, or else its storage class). */
static int qcvArgType(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcvArgs *pA, int i) {
  QComp *pC = pX->pC;
  ValueType vt = pA->aVt[i];
  QcfArg eArg = pFn->eArg == QCF_ARG_STR1 ? (i == 0 ? QCF_ARG_STR : QCF_ARG_NUM)
                : pFn->eArg == QCF_ARG_RE && i > 0 ? QCF_ARG_STR : pFn->eArg;
  char *z;
  if (eArg == QCF_ARG_RE || eArg == QCF_ARG_RESTR) {
    /* re-find, re-matches and re-seq take a Pattern (Clojure casts: a
    ** String is a ClassCastException), which only re-pattern makes: no
    ** static type is one, so a typed place is an error here, one of
    ** run-time type (a rule's output, an or's) when the row comes, by the
    ** pattern's tag. re-pattern takes a string (or a pattern). */
    if (vt == VT_NONE) {
      z = qcArgCheckSql(pX, pCl->pForm, pFn->zName, i + 1, pA->azA[i], pA->azTag[i],
                        eArg == QCF_ARG_RE ? QF_ARG_RE : QF_ARG_RESTR);
    } else if (eArg == QCF_ARG_RESTR && vt == VT_STRING) {
      return SQLITE_OK;
    } else {
      if (qcNoRows(pX)) return SQLITE_OK;
      return qcErr(pC, pCl->pForm, "%s: argument %d is a %s, not %s", pFn->zName, i + 1,
                   qcVtName(vt), eArg == QCF_ARG_RE
                   ? "a regular expression pattern (re-pattern makes one)" : "a string");
    }
  } else if (eArg == QCF_ARG_NUM) {
    /* Clojure's arithmetic takes numbers only (Datomic throws a
    ** ClassCastException): SQLite would read "ann" as 0 and "7" as 7. A
    ** place whose type is known is checked here; one of unknown type
    ** (a rule's output, an attribute variable) when the row comes: a number
    ** or an entity id passes, anything else is the same error. */
    if (vt == VT_LONG || vt == VT_DOUBLE || vt == VT_REF) return SQLITE_OK;
    if (vt != VT_NONE) {
      if (qcNoRows(pX)) return SQLITE_OK;
      return qcErr(pC, pCl->pForm, "%s: argument %d is a %s, not a number", pFn->zName, i + 1,
                   qcVtName(vt));
    }
    z = qcArgCheckSql(pX, pCl->pForm, pFn->zName, i + 1, pA->azA[i], pA->azTag[i], QF_ARG_NUM);
  } else if (eArg == QCF_ARG_STR) {
    /* re-find, re-matches, re-seq, re-pattern, subs and clojure.string's
    ** functions take strings (Clojure throws a ClassCastException for a
    ** long, a boolean or a keyword): a typed place is checked here, one of
    ** unknown type when the row comes, as arithmetic's numbers are */
    if (vt == VT_STRING) return SQLITE_OK;
    if (vt != VT_NONE) {
      if (qcNoRows(pX)) return SQLITE_OK;
      return qcErr(pC, pCl->pForm, "%s: argument %d is a %s, not a string", pFn->zName, i + 1,
                   qcVtName(vt));
    }
    z = qcArgCheckSql(pX, pCl->pForm, pFn->zName, i + 1, pA->azA[i], pA->azTag[i], QF_ARG_STR);
  } else {
    return SQLITE_OK;
  }
  if (z == NULL) return pC->rc = SQLITE_NOMEM;
  sqlite3_free(pA->azA[i]);
  pA->azA[i] = z;
  return SQLITE_OK;
}

/* Compiles pCl's arguments for built-in pFn into *pA (close it with
** qcvArgsClose even on error). */
static int qcvArgsOpen(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcvArgs *pA) {
  QComp *pC = pX->pC;
  int i;
  memset(pA, 0, sizeof *pA);
  pA->n = pCl->nArg;
  for (i = 0; i < pA->n; i++) {
    if (pCl->aArg[i]->type == EDN_NIL && (strcmp(pFn->zName, "str") == 0
                                          || strcmp(pFn->zName, "compare") == 0)) {
      /* nil: str prints nothing of it, compare puts it first (Clojure's
      ** Util.compare); a type only the row would know, NULL */
      pA->azA[i] = sqlite3_mprintf("NULL");
      if (pA->azA[i] == NULL) return qcNoMem(pC);
      continue;
    }
    pA->azA[i] = qcTermExpr(pX, pCl->aArg[i], &pA->aVt[i], &pA->azTag[i], "function");
    if (pA->azA[i] == NULL) return pC->rc;
    if (pA->aVt[i] == VT_DOUBLE) pA->bDouble = 1;
  }
  for (i = 0; i < pA->n; i++) {
    if (qcvArgType(pX, pCl, pFn, pA, i)) return pC->rc;
  }
  pA->zPlace = qcPlaceSql(pCl->pForm, pFn->zName);
  if (pA->zPlace == NULL) return qcNoMem(pC);
  return SQLITE_OK;
}

/* Finishes a hook: pStr's text as pOut's SQL typed vt (a tag only when vt
** is VT_NONE: zTag is taken over either way), and pA closed. */
static int qcvDone(QCtx *pX, QcvArgs *pA, sqlite3_str *pStr, ValueType vt, char *zTag,
                   QcfOut *pOut) {
  QComp *pC = pX->pC;
  pOut->zSql = sqlite3_str_finish(pStr);
  if (pC->rc) {
    sqlite3_free(pOut->zSql);
    pOut->zSql = NULL;
  } else if (pOut->zSql == NULL) {
    qcNoMem(pC);
  }
  pOut->vt = vt;
  if (vt != VT_NONE || pOut->zSql == NULL) {
    sqlite3_free(zTag);
    zTag = NULL;
  }
  pOut->zTag = zTag;
  qcvArgsClose(pA);
  return pC->rc;
}

/* Opens the arguments; on error closes them and returns the rc. */
#define QCV_OPEN(pX, pCl, pFn, a) \
  do { if (qcvArgsOpen(pX, pCl, pFn, &(a))) { qcvArgsClose(&(a)); return (pX)->pC->rc; } } while (0)

/* The row's run-time function over the place and the arguments: longs
** checked, an overflow or a zero divisor an error at this clause (SQLite's
** operators would give a double or NULL). */
static void qcvRuntime(sqlite3_str *pStr, const QcfBuiltin *pFn, const QcvArgs *pA) {
  int i;
  sqlite3_str_appendf(pStr, "%s(%s", pFn->zFunc, pA->zPlace);
  for (i = 0; i < pA->n; i++) sqlite3_str_appendf(pStr, ", %s", pA->azA[i]);
  sqlite3_str_appendall(pStr, ")");
}

/* /, quot, rem and mod: always the run-time function (SQLite's % and CAST
** take integer parts, and a zero divisor must be an error, not NULL). / of
** longs is a long when whole, else a double: its static type stays
** VT_LONG, and the storage class says which (numbers share one tag). */
int qcvArith(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  qcvRuntime(pStr, pFn, &a);
  return qcvDone(pX, &a, pStr, a.bDouble ? VT_DOUBLE : VT_LONG, NULL, pOut);
}

/* +, - and *: the run-time function, over longs (an overflow is an error)
** and over doubles alike (infinities of both signs make a NaN, an error
** too: SQLite's operators would give NULL). */
int qcvArithOp(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  qcvRuntime(pStr, pFn, &a);
  return qcvDone(pX, &a, pStr, a.bDouble ? VT_DOUBLE : VT_LONG, NULL, pOut);
}

/* inc, dec and abs: over a long the run-time function; over a double the
** row's SQL template, when it has one (abs has none: SQLite's abs keeps
** -0.0, Clojure's gives +0.0). */
int qcvArith1(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  if (!a.bDouble || pFn->zSql == NULL) qcvRuntime(pStr, pFn, &a);
  else sqlite3_str_appendf(pStr, pFn->zSql, a.azA[0]);
  return qcvDone(pX, &a, pStr, a.bDouble ? VT_DOUBLE : VT_LONG, NULL, pOut);
}

static char *qcvCmpTag(const QcvArgs *pA, int i);

/* max and min of two or more arguments where one's type only the row
** knows: each must share argument 0's comparison class (mentat_comparable,
** the error compare gives at this clause), since such a ref is no number
** in an ordering (peer fault B13, as compare and the aggregates have it)
** while two refs order with each other. The opening of a CASE the caller
** closes with " END)"; 0, or 1 when none of the arguments needs it. */
static int qcvMinMaxClass(QCtx *pX, const QcvArgs *pA, sqlite3_str *pStr) {
  int i, bAny = 0;
  for (i = 0; i < pA->n; i++) bAny |= pA->aVt[i] == VT_NONE && pA->azTag[i] != NULL;
  if (!bAny) return 1;
  sqlite3_str_appendall(pStr, "(CASE WHEN 1");
  for (i = 1; i < pA->n; i++) {
    char *zT0, *zTi;
    if ((pA->aVt[0] != VT_NONE || pA->azTag[0] == NULL)
        && (pA->aVt[i] != VT_NONE || pA->azTag[i] == NULL)) {
      continue;
    }
    zT0 = qcvCmpTag(pA, 0);
    zTi = qcvCmpTag(pA, i);
    if (zT0 && zTi) {
      sqlite3_str_appendf(pStr, " AND mentat_comparable(%s, %s, %s, %s, %s)", pA->azA[0], zT0,
                          pA->azA[i], zTi, pA->zPlace);
    } else {
      qcNoMem(pX->pC);
    }
    sqlite3_free(zT0);
    sqlite3_free(zTi);
  }
  sqlite3_str_appendall(pStr, " THEN ");
  return 0;
}

/* max and min of numbers: SQLite's scalar max/min; of one argument, it.
** The result of several has argument 0's tag when its type only the row
** knows (all share its class: a ref, or a number), else it is a number
** (VT_LONG: numbers share one tag, the storage class tells a double). */
int qcvMinMax(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  ValueType vt;
  char *zTag = NULL;
  int i, bPlain;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  if (a.n == 1) {
    sqlite3_str_appendf(pStr, "(%s)", a.azA[0]);
    vt = a.aVt[0];
    zTag = a.azTag[0];
    a.azTag[0] = NULL;
  } else {
    bPlain = qcvMinMaxClass(pX, &a, pStr);
    sqlite3_str_appendf(pStr, "%s(", pFn->zSql);
    for (i = 0; i < a.n; i++) sqlite3_str_appendf(pStr, "%s%s", i ? ", " : "", a.azA[i]);
    sqlite3_str_appendall(pStr, bPlain ? ")" : ") END)");
    vt = a.bDouble ? VT_DOUBLE : a.aVt[0];
    for (i = 1; i < a.n; i++) if (a.aVt[i] != a.aVt[0] && !a.bDouble) vt = VT_LONG;
    if (vt == VT_NONE && a.azTag[0] != NULL && !a.bDouble) {
      zTag = a.azTag[0];
      a.azTag[0] = NULL;
    } else if (vt == VT_NONE) {
      vt = VT_LONG;
    }
  }
  return qcvDone(pX, &a, pStr, vt, zTag, pOut);
}

/* The JSON parameter a collection literal or input zArg is ("?N" of a
** QV_JSON parameter), or NULL when it is none. */
static const QParam *qcvJsonParam(QCtx *pX, const char *zArg) {
  QComp *pC = pX->pC;
  char *zEnd;
  long iP;
  if (zArg[0] != '?') return NULL;
  iP = strtol(zArg + 1, &zEnd, 10);
  if (*zEnd || iP < 1 || iP > pC->nParam || pC->aParam[iP - 1].eConv != QV_JSON) return NULL;
  return &pC->aParam[iP - 1];
}

/* A type's name in compare's message. */
static const char *qcvCmpName(ValueType vt) {
  return vt == VT_TUPLE ? ":db.type/tuple" : qcVtName(vt);
}

/* The run-time tag SQL of compare's argument i: its tag expression, the
** static tag of its known type, or NULL (the storage class decides). */
static char *qcvCmpTag(const QcvArgs *pA, int i) {
  if (pA->aVt[i] == VT_NONE) return sqlite3_mprintf("%s", pA->azTag[i] ? pA->azTag[i] : "NULL");
  /* an entity or ref attribute's value: an entity id, a long (a ref only
  ** the row's tag says is one is not a number: qfCompareClass) */
  if (pA->aVt[i] == VT_REF) return sqlite3_mprintf("%d", TAG_NUMBER);
  return sqlite3_mprintf("%d", pA->aVt[i] == QVT_JSON ? TAG_JSON : vtOutTag(pA->aVt[i]));
}

/* 1 for a long (or an entity id), 2 for a double, 3 for a type only the
** row knows, 0 for any other type. */
static int qcvNumKind(ValueType vt) {
  if (vt == VT_LONG || vt == VT_REF) return 1;
  if (vt == VT_DOUBLE) return 2;
  return vt == VT_NONE ? 3 : 0;
}

/* compare's two arguments where a long may meet a double: Clojure's
** Numbers.compare converts the long to a double (so 9007199254740993
** compares 0 with 9007199254740992.0), SQLite compares them exactly; the
** long side is cast to REAL, by its type or, for a type only the row knows,
** when typeof says the pair mixes. Text and other values pass unchanged.
** SQLITE_NOMEM or 0. */
static int qcvNumMix(QcvArgs *pA) {
  int k0 = qcvNumKind(pA->aVt[0]), k1 = qcvNumKind(pA->aVt[1]), i;
  char *az[2] = { NULL, NULL };
  if (k0 == 0 || k1 == 0 || (k0 == k1 && k0 != 3)) return 0;
  for (i = 0; i < 2; i++) {
    const char *zX = pA->azA[i], *zY = pA->azA[1 - i];
    int kX = i ? k1 : k0;
    if (kX == 2) az[i] = sqlite3_mprintf("%s", zX);
    else if (kX == 1 && (i ? k0 : k1) == 2) az[i] = sqlite3_mprintf("CAST(%s AS REAL)", zX);
    else {
      az[i] = sqlite3_mprintf("(CASE WHEN typeof(%s) = 'integer' AND typeof(%s) = 'real' THEN "
                              "CAST(%s AS REAL) ELSE %s END)", zX, zY, zX, zX);
    }
  }
  if (az[0] == NULL || az[1] == NULL) {
    sqlite3_free(az[0]);
    sqlite3_free(az[1]);
    return SQLITE_NOMEM;
  }
  for (i = 0; i < 2; i++) {
    sqlite3_free(pA->azA[i]);
    pA->azA[i] = az[i];
  }
  return 0;
}

static int qcvIsColl(ValueType vt) {
  return vt == VT_TUPLE || vt == QVT_JSON;
}

/* compare's vectors and nils (mentat_compare_coll: Clojure's Util.compare
** puts nil first, APersistentVector.compareTo orders by count, then by
** element): with a vector on a static side, the whole call there (1);
** else the opening of a CASE that sends a nil, or a value its tag says is
** a vector, there and leaves the rest to the caller's SQL (0), which then
** closes it. The stored tuple order (element by element) is not this one:
** :order, min and max keep it. */
static int qcvCompareColl(QCtx *pX, const QcvArgs *pA, sqlite3_str *pStr) {
  char *zTa = qcvCmpTag(pA, 0), *zTb = qcvCmpTag(pA, 1);
  const char *x = pA->azA[0], *y = pA->azA[1];
  int bAll = qcvIsColl(pA->aVt[0]) || qcvIsColl(pA->aVt[1]), i;
  for (i = 0; i < 2; i++) {
    /* a set, list or map literal is no Comparable (Clojure throws), though
    ** its JSON is an array or an object */
    const QParam *pP = pA->aVt[i] == QVT_JSON ? qcvJsonParam(pX, pA->azA[i]) : NULL;
    const EdnValue *pV = pP ? pP->pConst : NULL;
    int iTag = pV == NULL ? 0 : pV->type == EDN_SET ? QF_CMP_SET : pV->type == EDN_LIST ? QF_CMP_LIST
               : pV->type == EDN_MAP ? QF_CMP_MAP : 0;
    if (iTag) {
      char **pz = i ? &zTb : &zTa;
      sqlite3_free(*pz);
      *pz = sqlite3_mprintf("%d", iTag);
    }
  }
  if (zTa == NULL || zTb == NULL) {
    qcNoMem(pX->pC);
  } else if (bAll) {
    sqlite3_str_appendf(pStr, "mentat_compare_coll(%s, %s, %s, %s, %s)", x, zTa, y, zTb, pA->zPlace);
  } else {
    sqlite3_str_appendf(pStr, "(CASE WHEN (%s) IS NULL OR (%s) IS NULL", x, y);
    if (pA->aVt[0] == VT_NONE && pA->azTag[0]) {
      sqlite3_str_appendf(pStr, " OR coalesce(%s, 0) IN (%d, %d)", zTa, TAG_TUPLE, TAG_JSON);
    }
    if (pA->aVt[1] == VT_NONE && pA->azTag[1]) {
      sqlite3_str_appendf(pStr, " OR coalesce(%s, 0) IN (%d, %d)", zTb, TAG_TUPLE, TAG_JSON);
    }
    sqlite3_str_appendf(pStr, " THEN mentat_compare_coll(%s, %s, %s, %s, %s) ELSE ", x, zTa, y, zTb,
                        pA->zPlace);
  }
  sqlite3_free(zTa);
  sqlite3_free(zTb);
  return bAll;
}

/* compare: Clojure's, as its sign -1, 0 or 1, within one comparison class
** (numbers, or one type; keywords in its order, COLLATE mentat_kw, decided
** by the tags when both types are unknown), an error across classes (Clojure's compare throws a
** ClassCastException: at compile time when both types are known, else at
** run time through mentat_comparable). */
int qcvCompare(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  const char *zCmp = "(CASE WHEN (%s) < (%s)%s THEN -1 WHEN (%s) > (%s)%s THEN 1 ELSE 0 END)";
  const char *zKw = " COLLATE mentat_kw";
  QcvArgs a;
  sqlite3_str *pStr;
  int i;
  QCV_OPEN(pX, pCl, pFn, a);
  if (a.aVt[0] != VT_NONE && a.aVt[1] != VT_NONE && !qcComparable(a.aVt[0], a.aVt[1])
      && !qcNoRows(pX)) {
    /* Clojure's compare throws a ClassCastException across types */
    qcErr(pX->pC, pCl->pForm, "compare: cannot compare a %s with a %s", qcvCmpName(a.aVt[0]),
          qcvCmpName(a.aVt[1]));
    qcvArgsClose(&a);
    return pX->pC->rc;
  }
  pStr = sqlite3_str_new(NULL);
  if (qcvCompareColl(pX, &a, pStr)) {
    /* a vector on a static side: Clojure's rule, count first, throughout */
    return qcvDone(pX, &a, pStr, pFn->vtOut, NULL, pOut);
  }
  for (i = 0; i < 2; i++) {
    /* uuids order as Java's UUID.compareTo (signed halves), not as bytes */
    char *zU = qcUuidOrd(a.azA[i], a.aVt[i], a.azTag[i]);
    if (zU == NULL) {
      sqlite3_free(sqlite3_str_finish(pStr));
      qcvArgsClose(&a);
      return qcNoMem(pX->pC);
    }
    sqlite3_free(a.azA[i]);
    a.azA[i] = zU;
  }
  if (qcvNumMix(&a)) {
    sqlite3_free(sqlite3_str_finish(pStr));
    qcvArgsClose(&a);
    return qcNoMem(pX->pC);
  }
  if (a.aVt[0] == VT_NONE || a.aVt[1] == VT_NONE) {
    /* a type known only at run time: checked there, row by row */
    char *zTa = qcvCmpTag(&a, 0), *zTb = qcvCmpTag(&a, 1);
    if (zTa && zTb) {
      sqlite3_str_appendf(pStr, "(CASE WHEN mentat_comparable(%s, %s, %s, %s, %s) THEN ", a.azA[0],
                          zTa, a.azA[1], zTb, a.zPlace);
    } else {
      qcNoMem(pX->pC);
    }
    sqlite3_free(zTa);
    sqlite3_free(zTb);
  }
  if (a.aVt[0] == VT_NONE || a.aVt[1] == VT_NONE
      || (a.aVt[0] == a.aVt[1] && (a.aVt[0] == VT_STRING || a.aVt[0] == VT_KEYWORD))) {
    /* strings and keywords: String.compareTo's difference, not its sign
    ** (compare "a" "c" is -2), over UTF-16 code units; a run-time type
    ** tells them by their tags (a NULL tag: text is a string) */
    char *zTa = qcvCmpTag(&a, 0), *zTb = qcvCmpTag(&a, 1);
    if (zTa && zTb) {
      sqlite3_str_appendf(pStr,
                          "(CASE WHEN typeof(%s) = 'text' AND typeof(%s) = 'text' AND coalesce(%s, %d) <> %d"
                          " AND coalesce(%s, %d) <> %d THEN mentat_compare_text(%s, %s, coalesce(%s, %d) = %d)"
                          " ELSE ", a.azA[0], a.azA[1], zTa, TAG_STRING, TAG_JSON, zTb, TAG_STRING,
                          TAG_JSON, a.azA[0], a.azA[1], zTa, TAG_STRING, TAG_KEYWORD);
    } else {
      qcNoMem(pX->pC);
    }
    sqlite3_free(zTa);
    sqlite3_free(zTb);
  } else {
    sqlite3_str_appendall(pStr, "(CASE WHEN 0 THEN 0 ELSE ");
  }
  if (a.aVt[0] == VT_NONE && a.aVt[1] == VT_NONE && a.azTag[0] && a.azTag[1]) {
    sqlite3_str_appendf(pStr, "(CASE WHEN %s = %d AND %s = %d THEN ", a.azTag[0], TAG_KEYWORD,
                        a.azTag[1], TAG_KEYWORD);
    sqlite3_str_appendf(pStr, zCmp, a.azA[0], a.azA[1], zKw, a.azA[0], a.azA[1], zKw);
    sqlite3_str_appendall(pStr, " ELSE ");
    sqlite3_str_appendf(pStr, zCmp, a.azA[0], a.azA[1], "", a.azA[0], a.azA[1], "");
    sqlite3_str_appendall(pStr, " END)");
  } else {
    const char *zColl = *qcKwCollate(a.aVt[0]) && *qcKwCollate(a.aVt[1]) ? zKw : "";
    sqlite3_str_appendf(pStr, zCmp, a.azA[0], a.azA[1], zColl, a.azA[0], a.azA[1], zColl);
  }
  sqlite3_str_appendall(pStr, " END)");
  if (a.aVt[0] == VT_NONE || a.aVt[1] == VT_NONE) sqlite3_str_appendall(pStr, " END)");
  sqlite3_str_appendall(pStr, " END)");      /* qcvCompareColl's CASE */
  return qcvDone(pX, &a, pStr, pFn->vtOut, NULL, pOut);
}

/* count of a string (its length) or a collection (a map its entries). */
int qcvCount(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  QCV_OPEN(pX, pCl, pFn, a);
  if (a.aVt[0] != QVT_JSON && a.aVt[0] != VT_TUPLE && a.aVt[0] != VT_STRING && a.aVt[0] != VT_NONE
      && !qcNoRows(pX)) {
    /* Clojure's count takes strings and collections: "count not supported
    ** on this type" for a keyword, a number, a boolean ... */
    qcErr(pX->pC, pCl->pForm, "count: argument 1 is a %s, not a string or a collection",
          qcVtName(a.aVt[0]));
    qcvArgsClose(&a);
    return pX->pC->rc;
  }
  pStr = sqlite3_str_new(NULL);
  if (a.aVt[0] == VT_NONE) {
    /* a value of another type is the same error when the row comes */
    char *z = qcArgCheckSql(pX, pCl->pForm, "count", 1, a.azA[0], a.azTag[0], QF_ARG_COLL);
    if (z == NULL) {
      sqlite3_free(sqlite3_str_finish(pStr));
      qcvArgsClose(&a);
      return qcNoMem(pX->pC);
    }
    sqlite3_str_appendf(pStr, "(CASE WHEN %s IS NULL THEN NULL ELSE ", z);
    sqlite3_free(z);
  }
  if (a.aVt[0] == VT_TUPLE) {
    sqlite3_str_appendf(pStr, "mentat_tuple_count(%s)", a.azA[0]);
  } else if (a.aVt[0] == QVT_JSON) {
    /* json_array_length gives 0 for a map */
    sqlite3_str_appendf(pStr, "(CASE json_type(%s) WHEN 'object' THEN (SELECT count(*) FROM json_each(%s)) "
                        "ELSE json_array_length(%s) END)", a.azA[0], a.azA[0], a.azA[0]);
  } else if (a.aVt[0] == VT_NONE && a.azTag[0]) {
    /* a collection whose kind only the row knows: a string, a tuple or JSON */
    sqlite3_str_appendf(pStr, "(CASE (%s) WHEN %d THEN mentat_char_count(%s) WHEN %d THEN mentat_tuple_count(%s)"
                        " WHEN %d THEN (CASE json_type(%s) WHEN 'object' THEN (SELECT count(*) FROM"
                        " json_each(%s)) ELSE json_array_length(%s) END) END)", a.azTag[0], TAG_STRING,
                        a.azA[0], TAG_TUPLE, a.azA[0], TAG_JSON, a.azA[0], a.azA[0], a.azA[0]);
  } else if (a.aVt[0] == VT_NONE) {
    sqlite3_str_appendf(pStr, "(CASE WHEN typeof(%s) = 'text' THEN mentat_char_count(%s) END)", a.azA[0],
                        a.azA[0]);
  } else {
    /* not length(): it stops at a NUL */
    sqlite3_str_appendf(pStr, "mentat_char_count(%s)", a.azA[0]);
  }
  if (a.aVt[0] == VT_NONE) sqlite3_str_appendall(pStr, " END)");
  return qcvDone(pX, &a, pStr, pFn->vtOut, NULL, pOut);
}

/* The parameter a collection literal or input zExpr is ("?N" of a JSON
** parameter) as another parameter holding its Clojure pr-str, printed from
** its EDN (keywords, #inst, #uuid, sets and maps, which its JSON cannot
** tell); NULL when zExpr is no such parameter or out of memory. */
static char *qcvCljParam(QCtx *pX, const char *zArg) {
  QComp *pC = pX->pC;
  const QParam *pP = qcvJsonParam(pX, zArg);
  int iNew;
  const char *zExpr;
  if (pP == NULL) return NULL;
  iNew = qcParam(pC, pP->pConst, pP->iInput, pP->i1, pP->i2, QV_CLJ, VT_STRING);
  zExpr = iNew ? sqlite3_mprintf("?%d", iNew) : NULL;
  if (iNew && zExpr == NULL) qcNoMem(pC);
  return (char *)zExpr;
}

/* str: each value printed as Clojure's str does (true, instants, uuids;
** a collection as pr-str prints it, mentat_str or, for a literal or an
** input, a parameter printed from its EDN). */
int qcvStr(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  int i;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pStr, "(''");
  for (i = 0; i < a.n; i++) {
    char *zClj = a.aVt[i] == QVT_JSON ? qcvCljParam(pX, a.azA[i]) : NULL;
    const QVar *pV = ednIsVar(pCl->aArg[i]) ? qcVarFind(pX, pCl->aArg[i]->u.s.z) : NULL;
    if (pV && (pV->bSeq == 2 || pV->bSeq == 3)) {
      /* a value this str cannot tell how to print */
      sqlite3_free(zClj);
      sqlite3_free(sqlite3_str_finish(pStr));
      qcvArgsClose(&a);
      return qcErr(pX->pC, pCl->aArg[i], pV->bSeq == 3
                   ? "str: %s may be a set, map or list literal an or or rule hands on, whose"
                     " rows keep only its elements: call str inside the branches"
                   : "str: %s is re-seq's seq only in some branches of an or or rule (or through"
                     " a recursive rule), which Clojure prints (...) and a vector [...]: call"
                     " str inside the branches", pCl->aArg[i]->u.s.z);
    }
    if (zClj) sqlite3_str_appendf(pStr, " || %s", zClj);
    else if (pV && pV->bSeq) {
      /* re-seq's seq prints as a list (ASeq.toString): its vector's
      ** print, [ and ] made ( and ) */
      char *zP = a.aVt[i] == VT_NONE && a.azTag[i]
                 ? sqlite3_mprintf("%s(%s, %s)", pFn->zFunc, a.azA[i], a.azTag[i])
                 : sqlite3_mprintf("%s(%s, %d)", pFn->zFunc, a.azA[i],
                                   a.aVt[i] == QVT_JSON ? TAG_JSON : vtOutTag(a.aVt[i]));
      if (zP == NULL) qcNoMem(pX->pC);
      else sqlite3_str_appendf(pStr, " || '(' || substr(%s, 2, length(%s) - 2) || ')'", zP, zP);
      sqlite3_free(zP);
    } else if (a.aVt[i] == QVT_JSON) {
      sqlite3_str_appendf(pStr, " || %s(%s, %d)", pFn->zFunc, a.azA[i], TAG_JSON);
    } else if (a.aVt[i] == VT_NONE) {
      sqlite3_str_appendf(pStr, " || %s(%s, %s)", pFn->zFunc, a.azA[i], a.azTag[i] ? a.azTag[i] : "NULL");
    } else {
      sqlite3_str_appendf(pStr, " || %s(%s, %d)", pFn->zFunc, a.azA[i], vtOutTag(a.aVt[i]));
    }
    sqlite3_free(zClj);
  }
  sqlite3_str_appendall(pStr, ")");
  return qcvDone(pX, &a, pStr, pFn->vtOut, NULL, pOut);
}

/* The row's run-time function over the arguments alone. */
int qcvCall(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  int i;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  sqlite3_str_appendf(pStr, "%s(", pFn->zFunc);
  for (i = 0; i < a.n; i++) sqlite3_str_appendf(pStr, "%s%s", i ? ", " : "", a.azA[i]);
  sqlite3_str_appendall(pStr, ")");
  return qcvDone(pX, &a, pStr, pFn->vtOut, NULL, pOut);
}

/* subs: an error out of range, as Clojure's (SQLite's substr clamps). */
int qcvSubs(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  qcvRuntime(pStr, pFn, &a);
  return qcvDone(pX, &a, pStr, pFn->vtOut, NULL, pOut);
}

/* identity and re-pattern: the argument, its tag travelling with it. */
int qcvIdentity(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  char *zTag;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pStr, a.azA[0]);
  zTag = a.azTag[0];
  a.azTag[0] = NULL;
  return qcvDone(pX, &a, pStr, a.aVt[0], zTag, pOut);
}

/* re-pattern: the pattern, its source text tagged TAG_PATTERN (which is
** what re-find takes: a string is not one). A constant is checked when the
** query compiles, one known only at run time by mentat_re_pattern, so an
** invalid pattern is an error at this clause, as Pattern.compile throws in
** re-pattern. A pattern given to it comes back as it is. */
int qcvRePattern(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  char *zTag;
  int nGroup;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  if (qcvRegexCheck(pX, pCl->aArg[0], pFn->zName, &nGroup) == SQLITE_OK) {
    if (pCl->aArg[0]->type == EDN_STRING) sqlite3_str_appendall(pStr, a.azA[0]);
    else sqlite3_str_appendf(pStr, "%s(%s, %s)", pFn->zFunc, a.azA[0], a.zPlace);
  }
  zTag = sqlite3_mprintf("%d", TAG_PATTERN);
  if (zTag == NULL) qcNoMem(pX->pC);
  return qcvDone(pX, &a, pStr, VT_NONE, zTag, pOut);
}

/* re-find and re-matches: Clojure's match, or with groups a vector [whole
** g1 ...]; the groups are known when the pattern is a constant (one from
** a variable gives the match: the place names a bad one). A vector of at
** most a tuple's 8 strings is a tuple in the store's encoding, as the
** tuple function's (qcvTuple), so it meets stored tuples by value and
** type; a longer one is JSON of strings (QCF_RE_STRS). */
int qcvReMatch(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  ValueType vt = VT_NONE;
  char *zTag = NULL;
  int rc;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  if (pCl->bind.kind != QB_SCALAR) {
    /* taken apart by a binding form: always the vector, as JSON */
    sqlite3_str_appendf(pStr, "%s(%s, %s, %s, 1)", pFn->zFunc, a.azA[0], a.azA[1], a.zPlace);
    vt = QVT_JSON;
  } else {
    /* the pattern is known only at run time: its groups make the result
    ** the match (a string), a tuple of [whole g1 ...] or, past a tuple's
    ** size, that vector as JSON, and the tag says which */
    sqlite3_str_appendf(pStr, "%s(%s, %s, %s, 3)", pFn->zFunc, a.azA[0], a.azA[1], a.zPlace);
    zTag = sqlite3_mprintf("(CASE WHEN mentat_re_groups(%s, %s) = 0 THEN %d"
                           " WHEN mentat_re_groups(%s, %s) < %d THEN %d ELSE %d END)",
                           a.azA[0], a.zPlace, TAG_STRING, a.azA[0], a.zPlace, VALUE_TUPLE_MAX,
                           TAG_TUPLE, TAG_JSON);
    if (zTag == NULL) qcNoMem(pX->pC);
  }
  rc = qcvDone(pX, &a, pStr, vt, zTag, pOut);
  if (vt == QVT_JSON) pOut->eRe = QCF_RE_STRS;
  return rc;
}

/* re-seq: every match in turn (each [whole g1 ...] with groups, which the
** run-time function learns from the pattern itself), nil when none. */
int qcvReSeq(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  char *zTag;
  int nGroup = -1, rc, bTuple = 0;
  QCV_OPEN(pX, pCl, pFn, a);
  pStr = sqlite3_str_new(NULL);
  if (qcvRegexCheck(pX, pCl->aArg[0], pFn->zName, &nGroup) == SQLITE_OK) {
    /* bound whole, a seq of at most 8 strings is the tuple of them, as
    ** Clojure's = compares a seq with a vector (the run-time function
    ** learns the groups of a pattern known only then) */
    bTuple = pCl->bind.kind == QB_SCALAR && nGroup <= 0;
    sqlite3_str_appendf(pStr, "%s(%s, %s, %s, %d)", pFn->zFunc, a.azA[0], a.azA[1], a.zPlace,
                        bTuple);
  }
  if (bTuple) {
    zTag = sqlite3_mprintf("(CASE typeof(%s) WHEN 'blob' THEN %d ELSE %d END)",
                           sqlite3_str_value(pStr), TAG_TUPLE, TAG_JSON);
    if (zTag == NULL) qcNoMem(pX->pC);
    return qcvDone(pX, &a, pStr, VT_NONE, zTag, pOut);
  }
  rc = qcvDone(pX, &a, pStr, pFn->vtOut, NULL, pOut);
  pOut->eRe = nGroup < 0 ? QCF_RE_ANY : nGroup == 0 ? QCF_RE_STRS : QCF_RE_VECS;
  pOut->nReElems = nGroup + 1;
  return rc;
}

/* tuple: the values as one tuple (mentat_tuple: the store's encoding, so
** it compares with stored tuples by value and type, query_funcs_tuple.c).
** A collection among them, or more than a tuple's 8, makes a vector
** instead: the JSON array of their JSON forms. An argument whose type is
** known only at run time may be either: the result's tag says which. */
int qcvTuple(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QcvArgs a;
  sqlite3_str *pStr;
  int i, bJson = 0, bDyn = 0;
  char *zTag = NULL;
  QCV_OPEN(pX, pCl, pFn, a);
  for (i = 0; i < a.n; i++) {
    if (a.aVt[i] == QVT_JSON || a.aVt[i] == VT_TUPLE) bJson = 1;
    if (a.aVt[i] == VT_NONE) bDyn = 1;
  }
  /* more than a tuple holds, or taken apart by a binding form while an
  ** element's type is known only at run time: a vector (JSON) */
  if (a.n > VALUE_TUPLE_MAX || (bDyn && pCl->bind.kind != QB_SCALAR)) bJson = 1;
  pStr = sqlite3_str_new(NULL);
  if (bJson) {
    sqlite3_str_appendall(pStr, "json_array(");
  } else {
    sqlite3_str_appendall(pStr, "mentat_tuple(");
  }
  for (i = 0; i < a.n; i++) {
    const char *zSep = i ? ", " : "";
    if (bJson) {
      if (a.aVt[i] == QVT_JSON) sqlite3_str_appendf(pStr, "%sjson(%s)", zSep, a.azA[i]);
      else if (a.aVt[i] == VT_NONE) {
        sqlite3_str_appendf(pStr, "%s%s(%s, %s)", zSep, pFn->zFunc, a.azA[i], a.azTag[i] ? a.azTag[i] : "NULL");
      } else {
        sqlite3_str_appendf(pStr, "%s%s(%s, %d)", zSep, pFn->zFunc, a.azA[i], vtOutTag(a.aVt[i]));
      }
    } else if (a.aVt[i] == VT_NONE) {
      sqlite3_str_appendf(pStr, "%s%s, %s", zSep, a.azA[i], a.azTag[i] ? a.azTag[i] : "NULL");
    } else {
      sqlite3_str_appendf(pStr, "%s%s, %d", zSep, a.azA[i], vtTag(a.aVt[i]));
    }
  }
  sqlite3_str_appendall(pStr, ")");
  if (bJson) return qcvDone(pX, &a, pStr, QVT_JSON, NULL, pOut);
  if (!bDyn) return qcvDone(pX, &a, pStr, VT_TUPLE, NULL, pOut);
  /* a value of unknown type may be a collection: a blob is a tuple */
  zTag = sqlite3_mprintf("(CASE typeof(%s) WHEN 'blob' THEN %d ELSE %d END)",
                         sqlite3_str_value(pStr), TAG_TUPLE, TAG_JSON);
  if (zTag == NULL) qcNoMem(pX->pC);
  return qcvDone(pX, &a, pStr, VT_NONE, zTag, pOut);
}

/* ------------------------------------------------------------ regex JSON */

/* Binds one element of a regular expression's JSON (its json_type zType
** and SQL value zVal) to pVar (blank: skipped): kind QCF_RE_STRS a string
** or nil, QCF_RE_VECS a group vector of nElems strings (a tuple when it
** fits one, as qcvReMatch gives it), QCF_RE_ANY either (a vector as JSON). */
static void qcvBindReElem(QCtx *pX, const EdnValue *pVar, const char *zType, const char *zVal,
                          int eKind, int nElems) {
  char *zExpr = NULL, *zTag = NULL;
  ValueType vt = VT_NONE;
  int bNew;
  if (qpIsBlank(pVar)) return;
  if (eKind == QCF_RE_VECS && nElems <= VALUE_TUPLE_MAX) {
    sqlite3_str *pStr = sqlite3_str_new(NULL);
    int k;
    sqlite3_str_appendall(pStr, "mentat_tuple(");
    for (k = 0; k < nElems; k++) {
      sqlite3_str_appendf(pStr, "%sjson_extract(%s, '$[%d]'), %d", k ? ", " : "", zVal, k,
                          TAG_STRING);
    }
    sqlite3_str_appendall(pStr, ")");
    zExpr = sqlite3_str_finish(pStr);
    vt = VT_TUPLE;
  } else if (eKind == QCF_RE_VECS) {
    zExpr = sqlite3_mprintf("%s", zVal);
    vt = QVT_JSON;
  } else if (eKind == QCF_RE_ANY) {
    /* a pattern known only at run time: a string, or a group vector,
    ** which is a tuple when it fits one as for a constant pattern (so it
    ** meets stored tuples), by its length */
    sqlite3_str *pStr = sqlite3_str_new(NULL);
    int k, m;
    sqlite3_str_appendf(pStr, "(CASE WHEN %s = 'array' AND json_array_length(%s) <= %d THEN CASE json_array_length(%s)",
                        zType, zVal, VALUE_TUPLE_MAX, zVal);
    for (m = 1; m <= VALUE_TUPLE_MAX; m++) {
      sqlite3_str_appendf(pStr, " WHEN %d THEN mentat_tuple(", m);
      for (k = 0; k < m; k++) {
        sqlite3_str_appendf(pStr, "%sjson_extract(%s, '$[%d]'), %d", k ? ", " : "", zVal, k, TAG_STRING);
      }
      sqlite3_str_appendall(pStr, ")");
    }
    sqlite3_str_appendf(pStr, " END ELSE %s END)", zVal);
    zExpr = sqlite3_str_finish(pStr);
    zTag = sqlite3_mprintf("(CASE %s WHEN 'text' THEN %d WHEN 'array' THEN CASE WHEN json_array_length(%s) <= %d"
                           " THEN %d ELSE %d END END)", zType, TAG_STRING, zVal, VALUE_TUPLE_MAX, TAG_TUPLE,
                           TAG_JSON);
    if (zTag == NULL) qcNoMem(pX->pC);
  } else {
    zExpr = sqlite3_mprintf("%s", zVal);
    zTag = sqlite3_mprintf("(CASE %s WHEN 'text' THEN %d WHEN 'array' THEN %d END)", zType,
                           TAG_STRING, eKind == QCF_RE_ANY ? TAG_JSON : TAG_STRING);
    if (zTag == NULL) qcNoMem(pX->pC);
  }
  if (zExpr == NULL) {
    sqlite3_free(zTag);
    qcNoMem(pX->pC);
    return;
  }
  bNew = qcVarFind(pX, pVar->u.s.z) == NULL;
  qcBindVar(pX, pVar->u.s.z, zExpr, vt, zTag, 0);
  if (bNew) qcFnResult(pX, pVar->u.s.z);
}

/* Binds element k of JSON array zDoc (of kind eKind) to pVar. */
static void qcvBindReAt(QCtx *pX, const EdnValue *pVar, const char *zDoc, int k, int eKind,
                        int nElems) {
  char *zType = sqlite3_mprintf("json_type(%s, '$[%d]')", zDoc, k);
  char *zVal = sqlite3_mprintf("json_extract(%s, '$[%d]')", zDoc, k);
  if (zType && zVal) qcvBindReElem(pX, pVar, zType, zVal, eKind, nElems);
  else qcNoMem(pX->pC);
  sqlite3_free(zType);
  sqlite3_free(zVal);
}

int qcvBindRegex(QCtx *pX, const QClause *pCl, char *zDoc, int eKind, int nElems) {
  QComp *pC = pX->pC;
  const QBinding *pB = &pCl->bind;
  char zAlias[24], zType[40], zVal[40];
  int i;
  if (zDoc == NULL) return qcNoMem(pC);
  sqlite3_snprintf(sizeof zAlias, zAlias, "j%d", pC->nAlias + 1);
  sqlite3_snprintf(sizeof zType, zType, "%s.type", zAlias);
  sqlite3_snprintf(sizeof zVal, zVal, "%s.value", zAlias);
  switch (pB->kind) {
    case QB_TUPLE:
      for (i = 0; i < pB->nVar && pC->rc == SQLITE_OK; i++) {
        qcvBindReAt(pX, pB->aVar[i], zDoc, i, eKind, nElems);
      }
      qcbFill(pX, pCl, pB, sqlite3_mprintf("json_array_length(%s)", zDoc));
      break;
    case QB_COLL:
      pC->nAlias++;
      qcFrom(pX, sqlite3_mprintf("json_each(%s) %s", zDoc, zAlias));
      if (pC->rc == SQLITE_OK) qcvBindReElem(pX, pB->aVar[0], zType, zVal, eKind, nElems);
      break;
    default:
      /* each element a vector of strings taken apart */
      pC->nAlias++;
      qcFrom(pX, sqlite3_mprintf("json_each(%s) %s", zDoc, zAlias));
      qcbFill(pX, pCl, pB, sqlite3_mprintf("(CASE %s WHEN 'array' THEN json_array_length(%s)"
                                           " ELSE -1 END)", zType, zVal));
      for (i = 0; i < pB->nVar && pC->rc == SQLITE_OK; i++) {
        qcvBindReAt(pX, pB->aVar[i], zVal, i, QCF_RE_STRS, 0);
      }
      break;
  }
  sqlite3_free(zDoc);
  return pC->rc;
}
