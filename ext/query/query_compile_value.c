/*
** query_compile_value.c — value expressions of function clauses:
** arithmetic, string, regex, collection and conversion functions as SQL
** expressions over their arguments, through the store functions of
** query_funcs.c where SQL has no equivalent. Takes a function clause;
** gives its SQL, static type and tag, or 0 when the name is none of these.
** Calls the scope and SQL helpers.
*/
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

/* mentat_arith's op for Clojure function z, 0 when it has none. */
static int qcvArithOp(const char *z) {
  static const struct { const char *zName; int op; } aOp[] = {
    { "+", QF_ADD }, { "-", QF_SUB }, { "*", QF_MUL }, { "inc", QF_INC }, { "dec", QF_DEC },
    { "abs", QF_ABS }, { "quot", QF_QUOT }, { "mod", QF_MOD }, { "rem", QF_REM },
    { "/", QF_DIV },
  };
  int i;
  for (i = 0; i < (int)(sizeof aOp / sizeof aOp[0]); i++) {
    if (strcmp(z, aOp[i].zName) == 0) return aOp[i].op;
  }
  return 0;
}

/* The compiled arguments of one value function. */
typedef struct QcvArgs {
  int n;
  char *azA[16];          /* each argument's SQL */
  char *azTag[16];        /* its tag SQL when its type is VT_NONE */
  ValueType aVt[16];
  int bDouble;            /* some argument is a double */
  const char *zPlace;     /* the clause's place, for run-time errors */
} QcvArgs;

/* Compiles pCl's arguments into pA. With bNum (Clojure's arithmetic) each
** must be a number, with a re- function a string: a typed place is checked
** here, one of unknown type yields NULL unless it holds such a value. */
static int qcvArgs(QCtx *pX, const QClause *pCl, int bNum, QcvArgs *pA) {
  QComp *pC = pX->pC;
  const char *z = pCl->zName;
  char **azA = pA->azA, **azTag = pA->azTag;
  ValueType *aVt = pA->aVt;
  int i, n = pA->n;
  for (i = 0; i < n; i++) {
    azA[i] = qcTermExpr(pX, pCl->aArg[i], &aVt[i], &azTag[i], "function");
    if (azA[i] == NULL) return pC->rc ? pC->rc : SQLITE_ERROR;
    if (aVt[i] == VT_DOUBLE) pA->bDouble = 1;
  }
  if (bNum) {
    /* Clojure's arithmetic takes numbers only (Datomic throws a
    ** ClassCastException): SQLite would read "ann" as 0 and "7" as 7. A
    ** place whose type is known is checked here; one of unknown type
    ** (a rule's output, an attribute variable) yields NULL unless it holds a
    ** number or an entity id, which binds nothing, as a nil result does. */
    for (i = 0; i < n; i++) {
      if (aVt[i] == VT_LONG || aVt[i] == VT_DOUBLE || aVt[i] == VT_REF) continue;
      if (aVt[i] != VT_NONE) {
        qcErr(pC, pCl->pForm, "%s: argument %d is a %s, not a number", z, i + 1, qcVtName(aVt[i]));
        return pC->rc;
      }
      {
        char *zNum = azTag[i]
            ? sqlite3_mprintf("(CASE WHEN (%s) IN (%d, %d) THEN (%s) END)", azTag[i], TAG_REF,
                              TAG_NUMBER, azA[i])
            : sqlite3_mprintf("(CASE WHEN typeof(%s) IN ('integer', 'real') THEN (%s) END)",
                              azA[i], azA[i]);
        if (zNum == NULL) { pC->rc = SQLITE_NOMEM; return pC->rc; }
        sqlite3_free(azA[i]);
        azA[i] = zNum;
      }
    }
  }
  if (strncmp(z, "re-", 3) == 0) {
    /* re-find, re-matches, re-seq and re-pattern take strings (Clojure
    ** throws a ClassCastException for a long or a keyword): a typed place
    ** is checked here, one of unknown type yields NULL (binds nothing)
    ** unless it holds a string, as arithmetic's numbers do */
    for (i = 0; i < n; i++) {
      char *zStr;
      if (aVt[i] == VT_STRING) continue;
      if (aVt[i] != VT_NONE) {
        qcErr(pC, pCl->pForm, "%s: argument %d is a %s, not a string", z, i + 1, qcVtName(aVt[i]));
        return pC->rc;
      }
      zStr = azTag[i]
          ? sqlite3_mprintf("(CASE WHEN (%s) = %d THEN (%s) END)", azTag[i], TAG_STRING, azA[i])
          : sqlite3_mprintf("(CASE WHEN typeof(%s) = 'text' THEN (%s) END)", azA[i], azA[i]);
      if (zStr == NULL) { pC->rc = SQLITE_NOMEM; return pC->rc; }
      sqlite3_free(azA[i]);
      azA[i] = zStr;
    }
  }
  return SQLITE_OK;
}

/* The arithmetic functions (+ - * / quot rem mod inc dec max min abs) into
** pOut: returns 1 when z is one, with *pvt its type (and *pzTag its tag,
** taken from pA, when that is VT_NONE). */
static int qcvNumeric(sqlite3_str *pOut, const char *z, QcvArgs *pA, ValueType *pvt,
                      char **pzTag) {
  char **azA = pA->azA, **azTag = pA->azTag;
  const ValueType *aVt = pA->aVt;
  int i, n = pA->n, bDouble = pA->bDouble;
  const char *zPlace = pA->zPlace;
  int op = qcvArithOp(z);
  ValueType vtOut = VT_LONG;
  if (op != 0 && (!bDouble || op == QF_QUOT || op == QF_REM || op == QF_MOD || op == QF_DIV)) {
    /* May be longs: checked, an overflow an error at this clause (SQLite's
    ** operators would give a double). With a double argument +, -, *, inc,
    ** dec and abs are SQLite's operators below (doubles do not overflow);
    ** quot, rem, mod and / are not (SQLite's % and CAST take integer parts,
    ** and a zero divisor must be an error, not NULL). / of longs is a long
    ** when whole, else a double: its static type stays VT_LONG, and the
    ** storage class says which (numbers share one tag). */
    sqlite3_str_appendf(pOut, "mentat_arith(%d, %s", op, zPlace);
    for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, ", %s", azA[i]);
    sqlite3_str_appendall(pOut, ")");
    if (bDouble) vtOut = VT_DOUBLE;
  } else if (strcmp(z, "+") == 0 || strcmp(z, "-") == 0 || strcmp(z, "*") == 0) {
    sqlite3_str_appendall(pOut, "(");
    if (n == 1 && z[0] == '-') sqlite3_str_appendall(pOut, "-");
    for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, "%s(%s)", i ? z : "", azA[i]);
    sqlite3_str_appendall(pOut, ")");
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if (strcmp(z, "inc") == 0 || strcmp(z, "dec") == 0) {
    sqlite3_str_appendf(pOut, "((%s) %s 1)", azA[0], z[0] == 'i' ? "+" : "-");
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else if (strcmp(z, "max") == 0 || strcmp(z, "min") == 0) {
    if (n == 1) {
      sqlite3_str_appendf(pOut, "(%s)", azA[0]);
      vtOut = aVt[0];
      *pzTag = azTag[0];
      azTag[0] = NULL;
    } else {
      sqlite3_str_appendf(pOut, "%s(", z);
      for (i = 0; i < n; i++) sqlite3_str_appendf(pOut, "%s%s", i ? ", " : "", azA[i]);
      sqlite3_str_appendall(pOut, ")");
      vtOut = bDouble ? VT_DOUBLE : aVt[0];
      for (i = 1; i < n; i++) if (aVt[i] != aVt[0] && !bDouble) vtOut = VT_LONG;
    }
  } else if (strcmp(z, "abs") == 0) {
    sqlite3_str_appendf(pOut, "abs(%s)", azA[0]);
    vtOut = bDouble ? VT_DOUBLE : VT_LONG;
  } else {
    return 0;
  }
  *pvt = vtOut;
  return 1;
}

/* The other value functions (compare, count, str, case, subs, identity,
** regexes, tuple) into pOut, with *pvt their type (and *pzTag their tag,
** taken from pA, when that is VT_NONE). */
static void qcvOther(QCtx *pX, const QClause *pCl, sqlite3_str *pOut, QcvArgs *pA,
                     ValueType *pvt, char **pzTag) {
  const char *z = pCl->zName;
  char **azA = pA->azA, **azTag = pA->azTag;
  const ValueType *aVt = pA->aVt;
  int i, n = pA->n;
  const char *zPlace = pA->zPlace;
  ValueType vtOut = VT_LONG;
  if (strcmp(z, "compare") == 0) {
    /* Clojure's compare as its sign: -1, 0 or 1; keywords in its order
    ** (COLLATE mentat_kw), decided by the tags when both types are unknown. */
    const char *zCmp = "(CASE WHEN (%s) < (%s)%s THEN -1 WHEN (%s) > (%s)%s THEN 1 ELSE 0 END)";
    const char *zKw = " COLLATE mentat_kw";
    if (aVt[0] == VT_NONE && aVt[1] == VT_NONE && azTag[0] && azTag[1]) {
      sqlite3_str_appendf(pOut, "(CASE WHEN %s = %d AND %s = %d THEN ", azTag[0], TAG_KEYWORD,
                          azTag[1], TAG_KEYWORD);
      sqlite3_str_appendf(pOut, zCmp, azA[0], azA[1], zKw, azA[0], azA[1], zKw);
      sqlite3_str_appendall(pOut, " ELSE ");
      sqlite3_str_appendf(pOut, zCmp, azA[0], azA[1], "", azA[0], azA[1], "");
      sqlite3_str_appendall(pOut, " END)");
    } else {
      const char *zColl = *qcKwCollate(aVt[0]) && *qcKwCollate(aVt[1]) ? zKw : "";
      sqlite3_str_appendf(pOut, zCmp, azA[0], azA[1], zColl, azA[0], azA[1], zColl);
    }
  } else if (strcmp(z, "count") == 0) {
    if (aVt[0] == QVT_JSON) {
      /* a map counts its entries (json_array_length gives 0 for one) */
      sqlite3_str_appendf(pOut, "(CASE json_type(%s) WHEN 'object' THEN (SELECT count(*) FROM json_each(%s)) "
                          "ELSE json_array_length(%s) END)", azA[0], azA[0], azA[0]);
    }
    else sqlite3_str_appendf(pOut, "length(%s)", azA[0]);
  } else if (strcmp(z, "str") == 0) {
    /* Each value printed as Clojure's str does (true, instants, uuids). */
    sqlite3_str_appendall(pOut, "(''");
    for (i = 0; i < n; i++) {
      if (aVt[i] == QVT_JSON) sqlite3_str_appendf(pOut, " || (%s)", azA[i]);
      else if (aVt[i] == VT_NONE) {
        sqlite3_str_appendf(pOut, " || mentat_str(%s, %s)", azA[i], azTag[i] ? azTag[i] : "NULL");
      } else {
        sqlite3_str_appendf(pOut, " || mentat_str(%s, %d)", azA[i], vtTag(aVt[i]));
      }
    }
    sqlite3_str_appendall(pOut, ")");
    vtOut = VT_STRING;
  } else if (strcmp(z, "clojure.string/upper-case") == 0) {
    sqlite3_str_appendf(pOut, "mentat_case(1, %s)", azA[0]);
    vtOut = VT_STRING;
  } else if (strcmp(z, "clojure.string/lower-case") == 0) {
    sqlite3_str_appendf(pOut, "mentat_case(0, %s)", azA[0]);
    vtOut = VT_STRING;
  } else if (strcmp(z, "subs") == 0) {
    /* an error out of range, as Clojure's (SQLite's substr clamps) */
    sqlite3_str_appendf(pOut, "mentat_subs(%s, %s, %s", zPlace, azA[0], azA[1]);
    if (n == 3) sqlite3_str_appendf(pOut, ", %s", azA[2]);
    sqlite3_str_appendall(pOut, ")");
    vtOut = VT_STRING;
  } else if (strcmp(z, "identity") == 0 || strcmp(z, "re-pattern") == 0) {
    sqlite3_str_appendall(pOut, azA[0]);
    vtOut = aVt[0];
    *pzTag = azTag[0];    /* the tag travels with the value */
    azTag[0] = NULL;
  } else if (strcmp(z, "re-find") == 0 || strcmp(z, "re-matches") == 0) {
    /* Clojure: the match, or with groups a vector [whole g1 ...]; the
    ** groups are known when the pattern is a constant. */
    int nGroup, iMode = z[3] == 'm' ? 1 : 0;
    if (qcvRegexCheck(pX, pCl->aArg[0], z, &nGroup) == SQLITE_OK) {
      /* the place names a bad pattern that comes from a variable */
      sqlite3_str_appendf(pOut, "mentat_regex(%d, %s, %s, %s)", nGroup > 0 ? iMode + 2 : iMode,
                          azA[0], azA[1], zPlace);
      vtOut = nGroup > 0 ? QVT_JSON : VT_STRING;
    }
  } else if (strcmp(z, "re-seq") == 0) {
    /* Clojure: every match in turn (each [whole g1 ...] with groups, which
    ** mentat_regex learns from the pattern itself), nil when none */
    int nGroup;
    if (qcvRegexCheck(pX, pCl->aArg[0], z, &nGroup) == SQLITE_OK) {
      sqlite3_str_appendf(pOut, "mentat_regex(%d, %s, %s, %s)", QF_RE_SEQ, azA[0], azA[1], zPlace);
      vtOut = QVT_JSON;
    }
  } else {   /* tuple */
    sqlite3_str_appendall(pOut, "json_array(");
    for (i = 0; i < n; i++) {
      if (aVt[i] == QVT_JSON) sqlite3_str_appendf(pOut, "%sjson(%s)", i ? ", " : "", azA[i]);
      else if (aVt[i] == VT_NONE) {
        sqlite3_str_appendf(pOut, "%smentat_json(%s, %s)", i ? ", " : "", azA[i],
                            azTag[i] ? azTag[i] : "NULL");
      } else {
        sqlite3_str_appendf(pOut, "%smentat_json(%s, %d)", i ? ", " : "", azA[i], vtTag(aVt[i]));
      }
    }
    sqlite3_str_appendall(pOut, ")");
    vtOut = QVT_JSON;
  }
  *pvt = vtOut;
}

/* Value functions: Clojure's arithmetic, comparison and string functions
** Datomic documents. Returns 1 when pCl names one (then *pzExpr is its SQL,
** or NULL on error in pC->rc, *pvt its type and, when that is VT_NONE, *pzTag
** the SQL of its tag), 0 otherwise. */
int qcvExpr(QCtx *pX, const QClause *pCl, char **pzExpr, ValueType *pvt, char **pzTag) {
  /* bNum: takes numbers only, as Clojure's arithmetic does. */
  static const struct { const char *zName; int nMin, nMax, bNum; } aFn[] = {
    { "+", 0, 16, 1 }, { "-", 1, 16, 1 }, { "*", 0, 16, 1 }, { "/", 1, 16, 1 },
    { "quot", 2, 2, 1 }, { "rem", 2, 2, 1 }, { "mod", 2, 2, 1 }, { "inc", 1, 1, 1 },
    { "dec", 1, 1, 1 }, { "max", 1, 16, 1 }, { "min", 1, 16, 1 }, { "abs", 1, 1, 1 },
    { "compare", 2, 2, 0 }, { "count", 1, 1, 0 }, { "str", 0, 16, 0 }, { "subs", 2, 3, 0 },
    { "identity", 1, 1, 0 }, { "tuple", 1, 16, 0 }, { "clojure.string/upper-case", 1, 1, 0 },
    { "clojure.string/lower-case", 1, 1, 0 }, { "re-find", 2, 2, 0 },
    { "re-matches", 2, 2, 0 }, { "re-pattern", 1, 1, 0 }, { "re-seq", 2, 2, 0 },
  };
  QComp *pC = pX->pC;
  const char *z = pCl->zName;
  sqlite3_str *pOut;
  QcvArgs a;
  char *zPlace = NULL;
  int i, iFn, n = pCl->nArg;
  ValueType vtOut = VT_LONG;
  *pzExpr = NULL;
  *pzTag = NULL;
  for (iFn = 0; iFn < (int)(sizeof aFn / sizeof aFn[0]); iFn++) {
    if (strcmp(z, aFn[iFn].zName) == 0) break;
  }
  if (iFn == (int)(sizeof aFn / sizeof aFn[0])) return 0;
  if (n < aFn[iFn].nMin || n > aFn[iFn].nMax) {
    if (aFn[iFn].nMin == aFn[iFn].nMax) {
      qcErr(pC, pCl->pForm, "%s takes %d argument(s), got %d", z, aFn[iFn].nMin, n);
    } else {
      qcErr(pC, pCl->pForm, "%s takes %d to %d arguments, got %d", z, aFn[iFn].nMin,
            aFn[iFn].nMax, n);
    }
    return 1;
  }
  memset(&a, 0, sizeof a);
  a.n = n;
  if (qcvArgs(pX, pCl, aFn[iFn].bNum, &a)) goto cleanup;
  pOut = sqlite3_str_new(NULL);
  zPlace = qcPlaceSql(pCl->pForm, z);
  if (zPlace == NULL) { sqlite3_free(sqlite3_str_finish(pOut)); qcNoMem(pC); goto cleanup; }
  a.zPlace = zPlace;
  if (!qcvNumeric(pOut, z, &a, &vtOut, pzTag)) qcvOther(pX, pCl, pOut, &a, &vtOut, pzTag);
  *pzExpr = sqlite3_str_finish(pOut);
  if (pC->rc) {
    sqlite3_free(*pzExpr);
    *pzExpr = NULL;
  } else if (*pzExpr == NULL) {
    qcNoMem(pC);
  }
  *pvt = vtOut;
  if (vtOut != VT_NONE || *pzExpr == NULL) {
    sqlite3_free(*pzTag);
    *pzTag = NULL;
  }
cleanup:
  for (i = 0; i < n; i++) {
    sqlite3_free(a.azA[i]);
    sqlite3_free(a.azTag[i]);
  }
  sqlite3_free(zPlace);
  return 1;
}
