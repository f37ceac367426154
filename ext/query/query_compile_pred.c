/*
** query_compile_pred.c — boolean expressions: comparisons (=, !=, <, ...,
** chained), Clojure-style predicates (zero?, pos?, even?, nil?,
** missing? ...) as SQL conditions: the compile hooks of the predicates in
** the table of built-ins (query_compile_fn.c). Takes a function clause and its row;
** gives an SQL condition. Calls the scope and SQL helpers.
**
** HOW IT WORKS
** Comparisons only hold within one type class (numbers, strings, instants,
** keywords ...): when a side's type is not static its tag is constrained,
** so `[(> ?v 0)]` over `[?e _ ?v]` never sees booleans, refs or instants as
** numbers. Predicates that read the store (missing?) are correlated scalar
** subqueries on the datoms indexes.
*/
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "query_compile_scope.h"
#include "query_funcs.h"

/* The tags of a comparison class, as an SQL list. */
static const char *qcpClassTags(int iClass) {
  switch (iClass) {
    case 1: return "5";
    case 2: return "10";
    case 3: return "4";
    case 4: return "13";
    case 5: return "1";
    case 6: return "11";
    default: return "-1";
  }
}

/* 1 when v is a string with a character at U+E000 or above (a UTF-8 lead
** byte EE..F4), whose order against others is not their bytes' under
** UTF-16. */
static int qcpStrPastE000(const EdnValue *v) {
  return v->type == EDN_STRING
      && qfUtf16Plain((const unsigned char *)v->u.s.z, v->u.s.n) != v->u.s.n;
}

/* A comparison where a side is a tuple (stored, or one the query made:
** both in the store's encoding, which sorts as Datomic compares tuples and
** keeps each element's type, value.h): with another tuple, or a value of
** unknown type that its tag says is one, the encodings compare; with a
** literal vector that is no tuple of scalars, or a collection the query
** made as JSON (re-seq), = and != compare the JSON forms; a value of
** another type is never equal and never ordered. */
static char *qcpCompareTuples(QCtx *pX, const EdnValue *pA, const EdnValue *pB, const char *zA,
                              const char *zB, ValueType vtA, ValueType vtB, const char *zTagA,
                              const char *zTagB, const char *zOp, int bNe) {
  const EdnValue *pLit = vtA == VT_TUPLE ? pB : pA;
  ValueType vtOther = vtA == VT_TUPLE ? vtB : vtA;
  const char *zTagOther = vtA == VT_TUPLE ? zTagB : zTagA;
  /* an ordering compares the tuples' keys (mentat_tuple_ord: Java's uuid
  ** order, Clojure's keyword order); equality needs no key */
  const char *zOrd = zOp[0] == '<' || zOp[0] == '>' ? "mentat_tuple_ord" : "";
  int i;
  for (i = 0; i < 2; i++) {
    /* a literal without uuids, keywords or strings holding a character at
    ** U+E000 or above (where UTF-16's order is not the bytes') orders
    ** against any tuple before such a payload decides (the headers or its
    ** end differ there first): the plain comparison then, which an index
    ** range serves */
    const EdnValue *p = i ? pB : pA;
    int j;
    if (p->type != EDN_VECTOR) continue;
    for (j = 0; j < p->u.c.n && p->u.c.a[j]->type != EDN_UUID && p->u.c.a[j]->type != EDN_KEYWORD
                && !qcpStrPastE000(p->u.c.a[j]);
         j++) {}
    if (j == p->u.c.n) zOrd = "";
  }
  if (vtOther == VT_TUPLE) return sqlite3_mprintf("(%s(%s) %s %s(%s))", zOrd, zA, zOp, zOrd, zB);
  if (vtOther == VT_NONE && zTagOther) {
    return bNe ? sqlite3_mprintf("(%s IS NOT %d OR %s(%s) %s %s(%s))", zTagOther, TAG_TUPLE, zOrd, zA,
                                 zOp, zOrd, zB)
               : sqlite3_mprintf("(%s = %d AND %s(%s) %s %s(%s))", zTagOther, TAG_TUPLE, zOrd, zA, zOp,
                                 zOrd, zB);
  }
  if (pLit->type == EDN_VECTOR) {
    int iP = qcParam(pX->pC, pLit, -1, -1, -1, QV_TYPED, VT_TUPLE);
    return vtA == VT_TUPLE ? sqlite3_mprintf("(%s(%s) %s %s(?%d))", zOrd, zA, zOp, zOrd, iP)
                           : sqlite3_mprintf("(%s(?%d) %s %s(%s))", zOrd, iP, zOp, zOrd, zB);
  }
  if (vtOther == QVT_JSON && (zOp[0] == '=' || bNe)) {
    return vtA == VT_TUPLE ? sqlite3_mprintf("(mentat_json(%s, %d) %s %s)", zA, TAG_TUPLE, zOp, zB)
                           : sqlite3_mprintf("(%s %s mentat_json(%s, %d))", zA, zOp, zB, TAG_TUPLE);
  }
  return sqlite3_mprintf(bNe ? "1" : "0");
}

/* The first QCP_CONST_BARE parameters of a query stay bare in a
** predicate; a constant compared past them is read through "(SELECT ?N)".
** Why: SQLite codes each constant operand of a WHERE term once, before the
** loop, after looking for an equal one among those it already coded, in a
** list (sqlite3ExprCodeRunJustOnce), so a query of N distinct constant
** predicates prepared in N^2, inside SQLite's prepare, which polls no
** interrupt (breaker F1, issue 19: 8,000 of [(> ?v -1)] [(> ?v -2)] ...
** 1.2 s, 16,000 9 s). An uncorrelated scalar subquery is no such constant:
** SQLite runs it once (OP_Once) and prepares without that search, but a
** row reads it through a subroutine: ~80 instructions more a predicate
** (callgrind: 300 of them, 44 read so, over 500,000 rows, +10%). So the
** first 1024 stay bare, as all of an ordinary query's do (their plans and
** costs unchanged, their search ~15 M instructions at most), and past them
** the prepare grows linearly (16,384 predicates: 0.17 s, 9.1 s before). z is the
** operand's SQL, consumed; NULL on SQLITE_NOMEM (pC->rc). */
#define QCP_CONST_BARE 1024
static char *qcpConstOnce(QComp *pC, const EdnValue *p, char *z) {
  char *zOnce;
  int i;
  if (z == NULL || ednIsVar(p) || z[0] != '?' || z[1] == 0) return z;
  for (i = 1; z[i]; i++) {
    if (!isdigit((unsigned char)z[i])) return z;
  }
  if (atoi(z + 1) <= QCP_CONST_BARE) return z;
  zOnce = sqlite3_mprintf("(SELECT %s)", z);
  sqlite3_free(z);
  if (zOnce == NULL) qcNoMem(pC);
  return zOnce;
}

/* The error an ordering (< <= > >=) or == of two known types is when
** Clojure's would throw a ClassCastException: values compare within one
** comparison class only (qcComparable), == takes numbers only. A value of
** unknown type is left to the tag tests (peer fault B13: `[?e _ ?v] [(> ?v
** 0)]` sees the numbers). 1 after the error, 0 when they compare. */
static int qcpIncomparable(QCtx *pX, const QClause *pCl, const char *zFn, const char *zOp,
                           ValueType vtA, ValueType vtB) {
  if (qcNoRows(pX)) return 0;
  if (zOp[0] == '=') {
    ValueType vt = vtA != VT_NONE && qcTypeClass(vtA) != 1 ? vtA : vtB;
    if (vt == VT_NONE || qcTypeClass(vt) == 1) return 0;
    qcErr(pX->pC, pCl->pForm, "%s: argument %d is a %s, not a number", zFn, vt == vtA ? 1 : 2,
          vt == VT_TUPLE ? ":db.type/tuple" : qcVtName(vt));
    return 1;
  }
  if (vtA == VT_NONE || vtB == VT_NONE || qcComparable(vtA, vtB)) return 0;
  qcErr(pX->pC, pCl->pForm, "%s: cannot compare a %s with a %s", zFn,
        vtA == VT_TUPLE ? ":db.type/tuple" : qcVtName(vtA),
        vtB == VT_TUPLE ? ":db.type/tuple" : qcVtName(vtB));
  return 1;
}

/* 1 when zSql is a column (dN.v), which an index may give a range of. */
static int qcpIsColumn(const char *zSql) {
  int i = 0, nDot = 0;
  if (!isalpha((unsigned char)zSql[0]) && zSql[0] != '_') return 0;
  for (; zSql[i]; i++) {
    if (zSql[i] == '.') nDot++;
    else if (!isalnum((unsigned char)zSql[i]) && zSql[i] != '_') return 0;
  }
  return nDot == 1 && zSql[i - 1] != '.';
}

/* The ordering zA zOp zB (< <= > >=) of two strings, as String.compareTo
** (UTF-16 code units, the mentat_utf16 collation; BINARY is code point
** order, which differs between U+E000..U+FFFF and supplementary
** characters). Against a literal string without a character at U+E000 or
** above it is the plain comparison: the orders agree on it. A column
** compared with any other parameter (an input) keeps the plain
** comparison, exact unless that value holds such a character, and its
** index range: the BINARY bound the order implies
** (mentat_utf16_lo/hi, query_funcs_coll.c, the value itself when plain),
** with the collation asked only when the value is not plain (computed
** once per statement, as a constant). Two columns take the collation, and
** each the other's bound, so that an index on either still gives a range. */
static char *qcpStrOrder(const EdnValue *pA, const char *zA, const char *zOp, const EdnValue *pB,
                         const char *zB) {
  int bLess = zOp[0] == '<', bColA = qcpIsColumn(zA), bColB = qcpIsColumn(zB);
  sqlite3_str *pStr;
  if ((pA->type == EDN_STRING && !qcpStrPastE000(pA))
      || (pB->type == EDN_STRING && !qcpStrPastE000(pB))) {
    /* a literal without such a character: BINARY is the order, exactly */
    return sqlite3_mprintf("(%s %s %s)", zA, zOp, zB);
  }
  pStr = sqlite3_str_new(NULL);
  if (bColA != bColB) {
    /* the constant side decides whether the collation is needed */
    sqlite3_str_appendf(pStr, "((mentat_utf16_plain(%s) OR %s %s %s COLLATE mentat_utf16)",
                        bColA ? zB : zA, zA, zOp, zB);
  } else {
    sqlite3_str_appendf(pStr, "((%s %s %s COLLATE mentat_utf16)", zA, zOp, zB);
  }
  if (bColA) {
    sqlite3_str_appendf(pStr, " AND %s %s mentat_utf16_%s(%s)", zA, zOp, bLess ? "hi" : "lo", zB);
  }
  if (bColB) {
    sqlite3_str_appendf(pStr, " AND mentat_utf16_%s(%s) %s %s", bLess ? "lo" : "hi", zA, zOp, zB);
  }
  sqlite3_str_appendall(pStr, ")");
  return sqlite3_str_finish(pStr);
}

/* 1 for a long (or an entity id), 2 for a double, 3 for a type only the
** row knows, 0 for any other type. */
static int qcpNumKind(ValueType vt) {
  if (vt == VT_LONG || vt == VT_REF) return 1;
  if (vt == VT_DOUBLE) return 2;
  return vt == VT_NONE ? 3 : 0;
}

/* zCmp, the comparison zA zOp zB (== < > <= >=), where a long may meet a
** double: Clojure's Numbers compare such a pair as doubles (the long
** converted, so (== 9007199254740993 9007199254740992.0) holds), SQLite an
** INTEGER and a REAL exactly. A pair of one kind keeps zCmp. The pair
** that mixes (at compile time, or by typeof at run time) compares both
** cast to REAL: under < and > the double order implies the exact one
** (the conversion is monotone and leaves a double as it is), so zCmp stays
** as a conjunct and keeps its index range; under <= >= == the double order
** is looser and replaces it. zCmp is consumed; NULL on SQLITE_NOMEM. */
static char *qcpNumMix(char *zCmp, const char *zA, const char *zB, const char *zOp, ValueType vtA,
                       ValueType vtB) {
  int kA = qcpNumKind(vtA), kB = qcpNumKind(vtB), bStrict = zOp[1] == 0 && zOp[0] != '=';
  char *zMix, *zOut;
  if (zCmp == NULL || kA == 0 || kB == 0 || (kA == kB && kA != 3)) return zCmp;
  zMix = kA != 3 && kB != 3
      ? sqlite3_mprintf("1")
      : sqlite3_mprintf("(typeof(%s) != typeof(%s) AND typeof(%s) IN ('integer', 'real') AND "
                        "typeof(%s) IN ('integer', 'real'))", zA, zB, zA, zB);
  if (zMix == NULL) { sqlite3_free(zCmp); return NULL; }
  if (bStrict) {
    zOut = sqlite3_mprintf("(%s AND (NOT %s OR CAST(%s AS REAL) %s CAST(%s AS REAL)))", zCmp, zMix,
                           zA, zOp, zB);
  } else {
    zOut = sqlite3_mprintf("(CASE WHEN %s THEN CAST(%s AS REAL) %s CAST(%s AS REAL) ELSE %s END)",
                           zMix, zA, zOp, zB, zCmp);
  }
  sqlite3_free(zMix);
  sqlite3_free(zCmp);
  return zOut;
}

/* A tag expression that is a constant: 1 and *pTag, else 0 ("NULL" is one,
** no tag). */
static int qcpTagConst(const char *z, int *pTag) {
  int i = z[0] == '(', j;
  if (strcmp(z, "NULL") == 0) { *pTag = -1000; return 1; }
  j = i + (z[i] == '-');
  if (z[j] < '0' || z[j] > '9') return 0;
  while (z[j] >= '0' && z[j] <= '9') j++;
  if (strcmp(z + j, i ? ")" : "") != 0) return 0;
  *pTag = atoi(z + i);
  return 1;
}

/* Can = meet two patterns in terms pA and pB of tags zTagA and zTagB?
** Clojure compares java.util.regex.Patterns by identity ((= (re-pattern
** "a") (re-pattern "a")) is false), which the text a value holds cannot
** tell, so = of two patterns of one text is an error when the row comes
** (qcPatternEqSql; of two texts it is false, rightly); not when a tag
** says another type, nor for one variable on both sides (one Pattern). */
static int qcpPatternPair(const EdnValue *pA, const EdnValue *pB, const char *zTagA,
                          const char *zTagB) {
  int tA = TAG_PATTERN, tB = TAG_PATTERN;
  if (ednIsVar(pA) && ednIsSymbol(pB, pA->u.s.z)) return 0;
  if (qcpTagConst(zTagA, &tA) && tA != TAG_PATTERN) return 0;
  return !qcpTagConst(zTagB, &tB) || tB == TAG_PATTERN;
}

/* Is term p a variable that may hold a set, map or list literal whose kind
** a union's rows lost (QVar.bSeq 3), meeting a value of type vtOther that
** may be a collection (Clojure's = tells a set from a vector, JSON not)? */
static int qcpCollLost(QCtx *pX, const EdnValue *p, ValueType vtOther) {
  const QVar *pV = ednIsVar(p) ? qcVarFind(pX, p->u.s.z) : NULL;
  return pV && pV->bSeq == 3 && (vtOther == QVT_JSON || vtOther == VT_TUPLE || vtOther == VT_NONE);
}

/* Compares two terms with SQL operator zOp within one type class. bNe: the
** operator is a "differ" (true across classes). bValue: = / != compare
** values as Clojure's = does, so a long never equals a double ((= 1 1.0)
** is false; Datomic stores 1 and 1.0 as different values); == and the
** orderings compare numbers by magnitude. SQLite keeps the two apart by
** storage class (a stored double is REAL), so the test is typeof's. */
static char *qcpCompareTerms(QCtx *pX, const QClause *pCl, const char *zFn, const EdnValue *pA,
                             const EdnValue *pB, const char *zOp, int bNe, int bValue) {
  ValueType vtA, vtB;
  char *zTagA = NULL, *zTagB = NULL, *zOut = NULL, *zCmp = NULL;
  char *zA = qcpConstOnce(pX->pC, pA, qcTermExpr(pX, pA, &vtA, &zTagA, "predicate"));
  char *zB = zA ? qcpConstOnce(pX->pC, pB, qcTermExpr(pX, pB, &vtB, &zTagB, "predicate")) : NULL;
  int bEq = strcmp(zOp, "=") == 0 || strcmp(zOp, "!=") == 0;
  if (zA == NULL || zB == NULL) goto cleanup;
  if (bEq && (qcpCollLost(pX, pA, vtB) || qcpCollLost(pX, pB, vtA))) {
    qcErr(pX->pC, pCl->pForm, "%s: %s may be a set, map or list literal an or or rule hands on,"
          " whose rows keep only its elements, and meets a collection: compare inside the"
          " branches", zFn, qcpCollLost(pX, pA, vtB) ? pA->u.s.z : pB->u.s.z);
    goto cleanup;
  }
  if (!bNe && !bValue && qcpIncomparable(pX, pCl, zFn, zOp, vtA, vtB)) goto cleanup;
  if (bEq && qcCollKindsDiffer(pX, zA, vtA, zB, vtB, 0)) {
    zOut = sqlite3_mprintf(bNe ? "1" : "0");   /* (= #{1} [1]) is false */
    goto cleanup;
  }
  if (vtA == VT_TUPLE || vtB == VT_TUPLE) {
    zOut = qcpCompareTuples(pX, pA, pB, zA, zB, vtA, vtB, zTagA, zTagB, zOp, bNe);
    goto cleanup;
  }
  /* Clojure's (= nil nil) is true: two nils (a tuple's nil element, a
  ** re-find group that took no part) are equal, which SQL's = is not */
  if (bEq && bValue) zOp = zOp[0] == '=' ? "IS" : "IS NOT";
  if ((zOp[0] == '<' || zOp[0] == '>') && (vtA == VT_UUID || vtB == VT_UUID
                                           || (vtA == VT_NONE && vtB == VT_NONE))) {
    /* uuids order as Java's UUID.compareTo (signed halves), not as bytes */
    char *zUa = qcUuidOrd(zA, vtA, zTagA), *zUb = qcUuidOrd(zB, vtB, zTagB);
    sqlite3_free(zA);
    sqlite3_free(zB);
    zA = zUa;
    zB = zUb;
    if (zA == NULL || zB == NULL) { qcNoMem(pX->pC); goto cleanup; }
  }
  /* the comparison proper, numbers of one kind only under bValue */
  if (bValue && vtA != QVT_JSON && vtB != QVT_JSON
      && (vtA == VT_NONE || qcTypeClass(vtA) == 1) && (vtB == VT_NONE || qcTypeClass(vtB) == 1)) {
    zCmp = sqlite3_mprintf(bNe ? "(%s %s %s OR typeof(%s) != typeof(%s))"
                               : "(%s %s %s AND typeof(%s) = typeof(%s))",
                           zA, zOp, zB, zA, zB);
  } else if ((zOp[0] == '<' || zOp[0] == '>') && (vtA == VT_STRING || vtB == VT_STRING)) {
    zCmp = qcpStrOrder(pA, zA, zOp, pB, zB);
  } else {
    zCmp = sqlite3_mprintf("(%s %s %s)", zA, zOp, zB);
  }
  if (!bValue && !bNe) zCmp = qcpNumMix(zCmp, zA, zB, zOp, vtA, vtB);
  if (zCmp == NULL) { qcNoMem(pX->pC); goto cleanup; }
  if ((zOp[0] == '<' || zOp[0] == '>') && vtA != QVT_JSON && vtB != QVT_JSON
      && (vtA == VT_KEYWORD || vtB == VT_KEYWORD || (vtA == VT_NONE && vtB == VT_NONE))) {
    /* Keywords order as Clojure's compare has them (query_funcs.c): the
    ** other side is then a keyword too (the tag tests below), or, with
    ** both types unknown, the collation applies where both tags say so. */
    char *zElse = vtA == VT_NONE && vtB == VT_NONE && !bNe
        ? qcpNumMix(sqlite3_mprintf("(%s %s %s COLLATE mentat_utf16)", zA, zOp, zB), zA, zB, zOp,
                    vtA, vtB)
        : sqlite3_mprintf("(%s %s %s COLLATE mentat_utf16)", zA, zOp, zB);
    char *zColl = zElse == NULL ? NULL
        : vtA == VT_NONE && vtB == VT_NONE
        ? sqlite3_mprintf("(CASE WHEN %s = %d THEN %s %s %s COLLATE mentat_kw ELSE %s END)",
                          zTagA, TAG_KEYWORD, zA, zOp, zB, zElse)
        : sqlite3_mprintf("(%s %s %s COLLATE mentat_kw)", zA, zOp, zB);
    sqlite3_free(zElse);
    if (zColl == NULL) { qcNoMem(pX->pC); goto cleanup; }
    if (vtA == VT_NONE && vtB == VT_NONE) {
      zOut = sqlite3_mprintf("(%s = %s AND %s)", zTagA, zTagB, zColl);
    } else if (vtA == VT_NONE || vtB == VT_NONE) {
      zOut = sqlite3_mprintf("(%s = %d AND %s)", vtA == VT_NONE ? zTagA : zTagB, TAG_KEYWORD, zColl);
    } else {
      zOut = vtA == vtB ? sqlite3_mprintf("%s", zColl) : sqlite3_mprintf("0");
    }
    sqlite3_free(zColl);
  } else if (bEq && (zOut = qcSeqJsonEq(pX, zA, vtA, zTagA, zB, vtB, zTagB, zOp)) != NULL) {
    /* a seq (held as a tuple) against a list literal's JSON: as JSON */
  } else if (vtA == QVT_JSON || vtB == QVT_JSON) {
    zOut = sqlite3_mprintf("(%s %s %s)", zA, zOp, zB);
  } else if (vtA != VT_NONE && vtB != VT_NONE) {
    if (qcTypeClass(vtA) != qcTypeClass(vtB)) zOut = sqlite3_mprintf(bNe ? "1" : "0");
    else zOut = sqlite3_mprintf("%s", zCmp);
  } else if (vtA == VT_NONE && vtB == VT_NONE) {
    /* = and != see a ref value as the entity id (a long) it is, as Datomic
    ** does; an order comparison keeps to one type (peer fault B13). Two
    ** patterns of one text are an error (qcpPatternPair), tested last. */
    char *zSame = bEq ? qcTagsMatch(zTagA, zTagB) : sqlite3_mprintf("%s = %s", zTagA, zTagB);
    char *zPat = NULL;
    int ePat = bEq && bValue && qcpPatternPair(pA, pB, zTagA, zTagB);
    if (ePat) zPat = qcPatternEqSql(pX, pCl->pForm, zFn, zTagA, zTagB);
    if (zSame == NULL || (ePat && zPat == NULL)) { sqlite3_free(zSame); qcNoMem(pX->pC); goto cleanup; }
    if (bNe) zOut = sqlite3_mprintf("(NOT %s OR %s%s%s)", zSame, zCmp, zPat ? " OR NOT " : "", zPat ? zPat : "");
    else zOut = sqlite3_mprintf("(%s AND %s%s%s)", zSame, zCmp, zPat ? " AND " : "", zPat ? zPat : "");
    sqlite3_free(zSame);
    sqlite3_free(zPat);
  } else {
    ValueType vtKnown = vtA == VT_NONE ? vtB : vtA;
    const char *zTag = vtA == VT_NONE ? zTagA : zTagB;
    /* a ref value is the entity id it holds in an equality: = with a
    ** long or ref, == with any number ((== ?v 65542.0) finds the datom
    ** pointing at 65542, as Datomic's == of a Long and a Double) */
    const char *zTags = bEq && (vtKnown == VT_LONG || vtKnown == VT_REF
                                || (!bValue && vtKnown == VT_DOUBLE)) ? "0, 5"
                        : qcpClassTags(qcTypeClass(vtKnown));
    if (bNe) {
      zOut = sqlite3_mprintf("(%s NOT IN (%s) OR %s)", zTag, zTags, zCmp);
    } else {
      zOut = sqlite3_mprintf("(%s IN (%s) AND %s)", zTag, zTags, zCmp);
    }
  }
  if (zOut == NULL) qcNoMem(pX->pC);
cleanup:
  sqlite3_free(zCmp);
  sqlite3_free(zA);
  sqlite3_free(zB);
  sqlite3_free(zTagA);
  sqlite3_free(zTagB);
  return zOut;
}

/* Appends the terms of a chain of comparisons joined by zJoin. */
static void qcpCompareChain(QCtx *pX, const QClause *pCl, const char *zFn, sqlite3_str *pOut,
                            const EdnValue *const *aA, const EdnValue *const *aB, int n,
                            const char *zOp, int bNe, int bValue, const char *zJoin) {
  int j;
  for (j = 0; j < n && pX->pC->rc == SQLITE_OK; j++) {
    char *zT = qcpCompareTerms(pX, pCl, zFn, aA[j], aB[j], zOp, bNe, bValue);
    if (zT) sqlite3_str_appendf(pOut, "%s%s", j ? zJoin : "", zT);
    sqlite3_free(zT);
  }
}

/* The chain (op a b c ...) as (a op b) AND (b op c) ...: pOut->zSql, or
** NULL on error (pC->rc). bNe: op is a "differ" (true across classes);
** bValue: = and != compare as Clojure's = (see qcpCompareTerms). */
static int qcpChain(QCtx *pX, const QClause *pCl, const char *zFn, const char *zOp, int bNe,
                    int bValue, QcfOut *pOut) {
  QComp *pC = pX->pC;
  sqlite3_str *pStr;
  int n = pCl->nArg;
  if (n == 1) {
    /* Clojure's 1-arity (= x), (< x) ... is true and (not= x) false
    ** whatever x is (DataScript's built-ins too): the argument is only
    ** checked bound */
    ValueType vt;
    char *zTag = NULL;
    char *zA = qcTermExpr(pX, pCl->aArg[0], &vt, &zTag, "predicate");
    sqlite3_free(zTag);
    if (zA == NULL) return pC->rc ? pC->rc : qcNoMem(pC);
    sqlite3_free(zA);
    pOut->zSql = sqlite3_mprintf(bNe ? "(0)" : "(1)");
    return pOut->zSql ? SQLITE_OK : qcNoMem(pC);
  }
  pStr = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pStr, "(");
  if (bNe && n > 2) {
    /* (not= a b c) is (not (= a b c)): true unless all are equal. */
    sqlite3_str_appendall(pStr, "NOT (");
    qcpCompareChain(pX, pCl, zFn, pStr, pCl->aArg, pCl->aArg + 1, n - 1, "=", 0, 1, " AND ");
    sqlite3_str_appendall(pStr, ")");
  } else {
    qcpCompareChain(pX, pCl, zFn, pStr, pCl->aArg, pCl->aArg + 1, n - 1, zOp, bNe, bValue,
                    " AND ");
  }
  sqlite3_str_appendall(pStr, ")");
  pOut->zSql = sqlite3_str_finish(pStr);
  if (pC->rc) { sqlite3_free(pOut->zSql); pOut->zSql = NULL; }
  else if (pOut->zSql == NULL) qcNoMem(pC);
  return pC->rc;
}

/* == and the orderings: numbers by magnitude, within one type class. */
int qcpCompare(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  return qcpChain(pX, pCl, pFn->zName, pFn->zSql, 0, 0, pOut);
}

/* =: Clojure's =, so a long never equals a double. */
int qcpEqual(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  return qcpChain(pX, pCl, pFn->zName, pFn->zSql, 0, 1, pOut);
}

/* != and not=: Clojure's not=, (not (= a b ...)). */
int qcpNotEqual(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  return qcpChain(pX, pCl, pFn->zName, pFn->zSql, 1, 1, pOut);
}

/* differ? (DataScript's -differ?): the first half of the arguments differs
** from the second half in some place. */
int qcpDiffer(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QComp *pC = pX->pC;
  sqlite3_str *pStr;
  int h = pCl->nArg / 2;
  if (pCl->nArg < 2 || pCl->nArg % 2) {
    return qcErr(pC, pCl->pForm, "%s takes an even number of arguments (two halves to compare)",
                 pFn->zName);
  }
  pStr = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pStr, "(");
  qcpCompareChain(pX, pCl, pFn->zName, pStr, pCl->aArg, pCl->aArg + h, h, pFn->zSql, 1, 1,
                  " OR ");
  sqlite3_str_appendall(pStr, ")");
  pOut->zSql = sqlite3_str_finish(pStr);
  if (pC->rc) { sqlite3_free(pOut->zSql); pOut->zSql = NULL; }
  else if (pOut->zSql == NULL) qcNoMem(pC);
  return pC->rc;
}

/* (missing? $ ?e :attr): the entity has no value of the attribute in the
** database the query reads, a correlated NOT EXISTS on the datoms. */
int qcpMissing(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QComp *pC = pX->pC;
  const char *z = pFn->zName;
  const EdnValue *const *aArg;
  const Attr *pA;
  char *zE;
  int nArg;
  qcSkipSrc(pCl, &aArg, &nArg);
  if (nArg != 2) return qcErr(pC, pCl->pForm, "missing? takes $, an entity and an attribute");
  pA = qcAttrArg(pX, aArg[1], z);
  if (pC->rc) return pC->rc;
  zE = qcEntityExpr(pX, aArg[0], z);
  if (zE == NULL) return pC->rc;
  if (pA) {
    char *zSub = qcEntityAttrSql(pX, pCl->pForm, z, "1", zE, pA->e);
    pOut->zSql = zSub ? sqlite3_mprintf("NOT EXISTS (%s)", zSub) : NULL;
    sqlite3_free(zSub);
  } else if ((pA = qcReverseAttr(pX, aArg[1])) != NULL) {
    /* :ns/_name: no entity refers to this one by :ns/name (Datomic's
    ** missing? reads the entity, which resolves reverse attributes) */
    char *zSub = qcEntityAttrSql(pX, pCl->pForm, z, "1", "g.e", pA->e);
    pOut->zSql = zSub ? sqlite3_mprintf("NOT EXISTS (%s AND g.v = %s)", zSub, zE) : NULL;
    sqlite3_free(zSub);
    if (pC->rc) { sqlite3_free(zE); return pC->rc; }
  } else {
    pOut->zSql = sqlite3_mprintf("1");
  }
  if (pOut->zSql == NULL) qcNoMem(pC);
  sqlite3_free(zE);
  return pC->rc;
}

/* The string test of argument i (expression zA, type vt, tag zTag) for a
** row taking strings (clojure.string's predicates hint ^CharSequence, so
** Clojure throws a ClassCastException for a long, a boolean or a
** keyword): "1" for a string, a check when the row comes for a value of
** unknown type (mentat_arg: the same error for another type), "0" for a
** typed place where no row can come; NULL after the error a typed place of
** another type is. */
static char *qcpStringTest(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, int i,
                           const char *zA, ValueType vt, const char *zTag) {
  char *z;
  if (vt == VT_STRING) z = sqlite3_mprintf("1");
  else if (vt == VT_NONE) {
    /* checked when the row comes: a string passes, another type is the
    ** error, NULL (no value) fails the row */
    char *zChk = qcArgCheckSql(pX, pCl->pForm, pFn->zName, i + 1, zA, zTag, QF_ARG_STR);
    z = zChk ? sqlite3_mprintf("(%s IS NOT NULL)", zChk) : NULL;
    sqlite3_free(zChk);
  } else if (qcNoRows(pX)) z = sqlite3_mprintf("0");
  else {
    qcErr(pX->pC, pCl->pForm, "%s: argument %d is a %s, not a string", pFn->zName, i + 1,
          qcVtName(vt));
    return NULL;
  }
  if (z == NULL) qcNoMem(pX->pC);
  return z;
}

/* The row's template over the one or two arguments (a Clojure predicate),
** each a string when the row says so. */
int qcpFormat(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QComp *pC = pX->pC;
  ValueType vtA = VT_NONE, vtB = VT_NONE;
  char *zA, *zB = NULL, *zTagA = NULL, *zTagB = NULL, *zOkA = NULL, *zOkB = NULL;
  char *zTest = NULL;
  zA = qcTermExpr(pX, pCl->aArg[0], &vtA, &zTagA, "predicate");
  if (zA && pCl->nArg == 2) zB = qcTermExpr(pX, pCl->aArg[1], &vtB, &zTagB, "predicate");
  if (pC->rc == SQLITE_OK && pFn->eArg == QCF_ARG_STR) {
    zOkA = qcpStringTest(pX, pCl, pFn, 0, zA, vtA, zTagA);
    if (zOkA && zB) zOkB = qcpStringTest(pX, pCl, pFn, 1, zB, vtB, zTagB);
  }
  if (pC->rc == SQLITE_OK) {
    if (pCl->nArg == 2) zTest = sqlite3_mprintf(pFn->zSql, zA, zB);
    else zTest = sqlite3_mprintf(pFn->zSql, zA);
    if (zTest == NULL) qcNoMem(pC);
    else if (zOkA) {
      pOut->zSql = sqlite3_mprintf("(%s AND %s AND %s)", zOkA, zOkB ? zOkB : "1", zTest);
      if (pOut->zSql == NULL) qcNoMem(pC);
    } else {
      pOut->zSql = zTest;
      zTest = NULL;
    }
  }
  sqlite3_free(zTest);
  sqlite3_free(zOkA);
  sqlite3_free(zOkB);
  sqlite3_free(zTagA);
  sqlite3_free(zTagB);
  sqlite3_free(zA);
  sqlite3_free(zB);
  return pC->rc;
}

/* zero?, pos?, neg? (bInt 0) and even?, odd? (bInt 1) over one argument:
** clojure.core casts it to a Number (even? and odd? throw "Argument must be
** an integer" for a double), so a typed place of another type is an error
** at the clause, as arithmetic's is; a value of unknown type is checked
** when the row comes (a number, an entity id, an integer for bInt), with the
** same error for another, as an arithmetic argument of unknown type is. */
static int qcpNumTest(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, int bInt,
                      QcfOut *pOut) {
  QComp *pC = pX->pC;
  ValueType vt = VT_NONE;
  char *zTag = NULL, *zTest = NULL;
  char *zA = qcTermExpr(pX, pCl->aArg[0], &vt, &zTag, "predicate");
  if (zA == NULL) goto cleanup;
  if (vt == VT_NONE) {
    zTest = qcArgCheckSql(pX, pCl->pForm, pFn->zName, 1, zA, zTag, bInt ? QF_ARG_INT : QF_ARG_NUM);
    pOut->zSql = zTest ? sqlite3_mprintf(pFn->zSql, zTest) : NULL;
  } else if (vt == VT_LONG || vt == VT_REF || (vt == VT_DOUBLE && !bInt)) {
    pOut->zSql = sqlite3_mprintf(pFn->zSql, zA);
  } else if (qcNoRows(pX)) {
    pOut->zSql = sqlite3_mprintf("0");
  } else {
    qcErr(pC, pCl->pForm, "%s: argument 1 is a %s, not %s", pFn->zName, qcVtName(vt),
          bInt ? "an integer" : "a number");
    goto cleanup;
  }
  if (pOut->zSql == NULL) qcNoMem(pC);
cleanup:
  sqlite3_free(zTest);
  sqlite3_free(zTag);
  sqlite3_free(zA);
  return pC->rc;
}

int qcpNumber(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  return qcpNumTest(pX, pCl, pFn, 0, pOut);
}

int qcpInteger(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  return qcpNumTest(pX, pCl, pFn, 1, pOut);
}

/* true? and false? (clojure.core: (identical? x true)): only a boolean
** passes, never the long 1 or 0 SQLite stores a boolean as. */
int qcpBoolean(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut) {
  QComp *pC = pX->pC;
  ValueType vt = VT_NONE;
  char *zTag = NULL, *zTest = NULL;
  char *zA = qcTermExpr(pX, pCl->aArg[0], &vt, &zTag, "predicate");
  if (zA == NULL) goto cleanup;
  zTest = sqlite3_mprintf(pFn->zSql, zA);
  if (zTest == NULL) { qcNoMem(pC); goto cleanup; }
  if (vt == VT_BOOLEAN || (vt == VT_NONE && zTag == NULL)) {
    pOut->zSql = sqlite3_mprintf("%s", zTest);
  } else if (vt == VT_NONE) {
    pOut->zSql = sqlite3_mprintf("((%s) = %d AND %s)", zTag, TAG_BOOLEAN, zTest);
  } else {
    pOut->zSql = sqlite3_mprintf("0");
  }
  if (pOut->zSql == NULL) qcNoMem(pC);
cleanup:
  sqlite3_free(zTest);
  sqlite3_free(zTag);
  sqlite3_free(zA);
  return pC->rc;
}
