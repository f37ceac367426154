/*
** query_funcs_num.c — numbers and tx points at run time: Clojure's
** arithmetic for the built-ins + - * / quot rem mod inc dec abs (long
** overflow and division by zero are errors naming the clause; / gives a
** long when whole), the numeric aggregates (sum with its overflow an
** error, median, variance, stddev), mentat_num (aggregates take numbers
** only), mentat_max and mentat_min (Clojure's max and min of n) and
** mentat_tx_point (tx-ids and tx-data take tx ids). Takes SQL
** values; gives SQL values or "<where>: ..." errors. Calls SQLite only.
*/
#include <string.h>
#include <math.h>
#include <stdlib.h>
#include "query_funcs.h"

#define QF_LONG_MAX ((sqlite3_uint64)0x7fffffffffffffffULL)   /* 2^63 - 1 */

/* Clojure's / over argv[0..n-1] (n >= 1; (/ x) is (/ 1 x)), none NULL:
** longs divide exactly, as Clojure's ratios do, and the result is a long
** when it is whole ((/ 4 2) is 2, (/ 12 2 3) is 2) and else the double
** nearest the ratio ((/ 1 2) is 0.5: there are no ratios here). A double
** argument makes the division a double one. Any zero divisor is an error,
** as Clojure's Numbers.divide(Object, Object) throws; a whole result past
** a long ((/ -2^63 -1)) is an overflow, where Clojure's long division
** wraps it silently. */
static void qfDivide(sqlite3_context *pCtx, sqlite3_value *pWhere, int n, sqlite3_value **argv) {
  int i, bReal = 0, bLong = 0;
  sqlite3_int64 num = 1;           /* the exact value so far: num / den, */
  sqlite3_uint64 den = 1;          /* den > 0, in lowest terms */
  long double ld = 0;              /* or, once bLong, its long double */
  for (i = 0; i < n; i++) {
    if (sqlite3_value_type(argv[i]) == SQLITE_FLOAT) bReal = 1;
  }
  for (i = n == 1 ? 0 : 1; i < n; i++) {
    if (sqlite3_value_double(argv[i]) == 0) {
      qfErrorAt(pCtx, pWhere, "divide by zero");
      return;
    }
  }
  if (bReal) {
    double d = n == 1 ? 1.0 : sqlite3_value_double(argv[0]);
    for (i = n == 1 ? 0 : 1; i < n; i++) d /= sqlite3_value_double(argv[i]);
    qfResultDouble(pCtx, pWhere, d);
    return;
  }
  if (n > 1) num = sqlite3_value_int64(argv[0]);
  for (i = n == 1 ? 0 : 1; i < n; i++) {
    sqlite3_int64 y = sqlite3_value_int64(argv[i]);
    sqlite3_uint64 un, uy, a, b, g, dNew;
    int bNeg, bDenOver, bNumOver;
    if (bLong) {
      ld /= (long double)y;
      continue;
    }
    /* num / (den * y), reduced: num and den share no factor, so dividing
    ** num and y by their gcd leaves the fraction in lowest terms */
    un = num < 0 ? (sqlite3_uint64)0 - (sqlite3_uint64)num : (sqlite3_uint64)num;
    uy = y < 0 ? (sqlite3_uint64)0 - (sqlite3_uint64)y : (sqlite3_uint64)y;
    bNeg = (num < 0) != (y < 0);
    for (a = un, b = uy; b != 0;) {
      sqlite3_uint64 r = a % b;
      a = b;
      b = r;
    }
    g = a;                                    /* uy > 0, so g > 0 */
    un /= g;
    uy /= g;
    bDenOver = __builtin_mul_overflow(den, uy, &dNew) || dNew > QF_LONG_MAX;
    bNumOver = un > QF_LONG_MAX && !(bNeg && un == QF_LONG_MAX + 1);
    if (bNumOver && !bDenOver && dNew == 1) {
      /* whole, but 2^63: not a long */
      qfErrorAt(pCtx, pWhere, "integer overflow");
      return;
    }
    if (bDenOver || bNumOver) {
      /* past a long's range and not whole: the nearest double will do */
      ld = (long double)un / (long double)den / (long double)uy;
      if (bNeg) ld = -ld;
      bLong = 1;
      continue;
    }
    den = dNew;
    num = bNeg ? (sqlite3_int64)((sqlite3_uint64)0 - un) : (sqlite3_int64)un;
  }
  if (bLong) sqlite3_result_double(pCtx, (double)ld);
  else if (den == 1) sqlite3_result_int64(pCtx, num);
  else sqlite3_result_double(pCtx, (double)((long double)num / (long double)den));
}

/* The operations of qfArith. */
enum { QFA_ADD = 1, QFA_SUB, QFA_MUL, QFA_INC, QFA_DEC, QFA_ABS, QFA_QUOT, QFA_MOD, QFA_REM, QFA_DIV };

/* Clojure's quot, rem (op QFA_QUOT, QFA_REM) or mod (QFA_MOD) of doubles
** n and d (d not 0), as Numbers.quotient/remainder(double, double) and
** clojure.core/mod: q = n / d; when q is within a long, quot is
** (double)(long) q, truncated (+0.0, never -0.0: a long has no sign of
** zero) and rem n - ((long) q) * d (not fmod: (rem 1.0 0.1) is 0.0, as
** 1.0 / 0.1 rounds to 10.0); past a long, q itself (integral already; Clojure
** goes through new BigDecimal(q).toBigInteger()). An infinite or NaN q is an
** error at pWhere ("the quotient is Infinity, which has no integer part"),
** where new BigDecimal(q) throws NumberFormatException. mod is (let [m (rem
** n d)] (if (or (zero? m) (= (pos? n) (pos? d))) m (+ m d))). A NaN result
** ((rem 5 ##Inf) is 5 - 0 * Inf) is qfResultDouble's error. k * d and the
** subtraction are two statements, two roundings as Java's: no compiler
** contracts them into one fused multiply-add (gcc -std=c11 does not
** contract at all, clang only within an expression). */
static void qfQuotRemDouble(sqlite3_context *pCtx, int op, sqlite3_value *pWhere, double n, double d) {
  double q = n / d, k, kd, r;
  if (isinf(q) || isnan(q)) {
    qfErrorAt(pCtx, pWhere, "the quotient is %s, which has no integer part",
              isnan(q) ? "NaN" : q > 0 ? "Infinity" : "-Infinity");
    return;
  }
  k = trunc(q) + 0.0;                  /* (double)(long) q: -0.0 becomes +0.0 */
  if (op == QFA_QUOT) {
    qfResultDouble(pCtx, pWhere, k);
    return;
  }
  kd = k * d;
  r = n - kd;
  if (op == QFA_MOD && r != 0 && (n > 0) != (d > 0)) r += d;
  qfResultDouble(pCtx, pWhere, r);
}

/* Clojure's arithmetic op over argv = (where, a [, b ...]): long arithmetic, exact or
** an error ("<where>: integer overflow"; where is "line L col C: fn"),
** where SQLite's operators turn an overflowing integer into a double (and
** quot of -2^63 by -1 into 2^63-1). A double argument gives double
** arithmetic, as Clojure's (quot, rem and mod too: SQLite's % and CAST
** take integer parts); NULL gives NULL. / is qfDivide's. Division by zero
** (quot, rem, mod, / ; 0 or 0.0) is an error, "<where>: divide by zero":
** Datomic calls the function with boxed numbers, and Clojure's
** Numbers.divide/quotient/remainder of Objects throw for any zero divisor. */
static void qfArith(sqlite3_context *pCtx, int op, int argc, sqlite3_value **argv) {
  int i, bReal = 0, bOver = 0;
  sqlite3_int64 x, y;
  if (argc == 1) {                      /* (+) and (*), as Clojure's */
    sqlite3_result_int64(pCtx, op == QFA_MUL ? 1 : 0);
    return;
  }
  for (i = 1; i < argc; i++) {
    int t = sqlite3_value_type(argv[i]);
    if (t == SQLITE_NULL) return;
    if (t == SQLITE_FLOAT) bReal = 1;
  }
  if (op == QFA_DIV) {
    qfDivide(pCtx, argv[0], argc - 1, argv + 1);
    return;
  }
  if ((op == QFA_QUOT || op == QFA_REM || op == QFA_MOD) && sqlite3_value_double(argv[2]) == 0) {
    qfErrorAt(pCtx, argv[0], "divide by zero");
    return;
  }
  if (bReal && (op == QFA_QUOT || op == QFA_REM || op == QFA_MOD)) {
    qfQuotRemDouble(pCtx, op, argv[0], sqlite3_value_double(argv[1]), sqlite3_value_double(argv[2]));
    return;
  }
  if (bReal) {
    double d = sqlite3_value_double(argv[1]);
    if (argc == 2 && op == QFA_SUB) d = -d;
    for (i = 2; i < argc; i++) {
      double e = sqlite3_value_double(argv[i]);
      d = op == QFA_ADD ? d + e : op == QFA_SUB ? d - e : d * e;
    }
    if (op == QFA_INC) d += 1;
    else if (op == QFA_DEC) d -= 1;
    else if (op == QFA_ABS) d = fabs(d);
    qfResultDouble(pCtx, argv[0], d);
    return;
  }
  x = sqlite3_value_int64(argv[1]);
  switch (op) {
    case QFA_ADD: case QFA_SUB: case QFA_MUL:
      if (argc == 2 && op == QFA_SUB) bOver = __builtin_sub_overflow((sqlite3_int64)0, x, &x);
      for (i = 2; i < argc && !bOver; i++) {
        y = sqlite3_value_int64(argv[i]);
        bOver = op == QFA_ADD ? __builtin_add_overflow(x, y, &x)
              : op == QFA_SUB ? __builtin_sub_overflow(x, y, &x) : __builtin_mul_overflow(x, y, &x);
      }
      break;
    case QFA_INC: bOver = __builtin_add_overflow(x, (sqlite3_int64)1, &x); break;
    case QFA_DEC: bOver = __builtin_sub_overflow(x, (sqlite3_int64)1, &x); break;
    case QFA_ABS: if (x < 0) bOver = __builtin_sub_overflow((sqlite3_int64)0, x, &x); break;
    case QFA_QUOT:
      y = sqlite3_value_int64(argv[2]);
      if (y == -1) bOver = __builtin_sub_overflow((sqlite3_int64)0, x, &x);
      else x /= y;
      break;
    case QFA_MOD: case QFA_REM:
      /* rem: the dividend's sign (C's %); mod: the divisor's, as Clojure's */
      y = sqlite3_value_int64(argv[2]);
      x = y == -1 ? 0 : x % y;
      if (op == QFA_MOD && x != 0 && (x < 0) != (y < 0)) x += y;   /* opposite signs: no overflow */
      break;
    default:
      return;
  }
  if (bOver) {
    qfErrorAt(pCtx, argv[0], "integer overflow");
    return;
  }
  sqlite3_result_int64(pCtx, x);
}

/* The SQL functions of the arithmetic built-ins (the table in
** query_funcs.c names them): mentat_add(where, a ...), mentat_sub (one
** argument: negation), mentat_mul, mentat_div (one argument: (/ 1 x)),
** mentat_quot, mentat_rem, mentat_mod, mentat_inc, mentat_dec, mentat_abs. */
void qfAdd(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_ADD, argc, argv); }
void qfSub(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_SUB, argc, argv); }
void qfMul(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_MUL, argc, argv); }
void qfDiv(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_DIV, argc, argv); }
void qfQuot(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_QUOT, argc, argv); }
void qfRem(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_REM, argc, argv); }
void qfMod(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_MOD, argc, argv); }
void qfInc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_INC, argc, argv); }
void qfDec(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_DEC, argc, argv); }
void qfAbs(sqlite3_context *pCtx, int argc, sqlite3_value **argv) { qfArith(pCtx, QFA_ABS, argc, argv); }

/* --------------------------------------------- numbers of aggregates */

/* The user's name for the type of a stored value: its tag, and for
** TAG_NUMBER its storage class t (long or double). Static text. */
const char *qfTagName(int tag, int t) {
  switch (tag) {
    case TAG_REF: return ":db.type/ref";
    case TAG_NUMBER: return t == SQLITE_INTEGER ? ":db.type/long" : ":db.type/double";
    case TAG_BOOLEAN: return ":db.type/boolean";
    case TAG_INSTANT: return ":db.type/instant";
    case TAG_STRING: return ":db.type/string";
    case TAG_UUID: return ":db.type/uuid";
    case TAG_KEYWORD: return ":db.type/keyword";
    case TAG_BYTES: return ":db.type/bytes";
    case TAG_JSON: return "collection";
    case TAG_PATTERN: return "regular expression pattern";
  }
  return "value of unknown type";
}

/* The comparison class of a value for Clojure's compare: numbers (longs,
** doubles) compare with each other, every other type only with itself; 0
** for a value compare cannot order (bytes: a Java byte[] is not
** Comparable). TAG_REF is a ref value whose type only the row knows
** ([?e _ ?v]): no number in an ordering, as > and < have it (peer fault
** B13); the compiler passes a ref of static type (an entity, a ref
** attribute's value) as TAG_NUMBER, an entity id that is a long. tag < -9:
** unknown, the storage class t decides. */
static int qfCompareClass(int tag, int t) {
  if (tag < -9) {
    return t == SQLITE_INTEGER || t == SQLITE_FLOAT ? TAG_NUMBER : t == SQLITE_TEXT ? TAG_STRING : 0;
  }
  /* (TAG_REF is 0, "no class": a class of its own instead) */
  return tag == TAG_BYTES ? 0 : tag == TAG_REF ? 100 : tag;
}

/* The user's name for a value's type in a comparison message. */
static const char *qfCompareName(int tag, int t) {
  if (tag < -9) return t == SQLITE_TEXT ? "text" : t == SQLITE_BLOB ? "blob" : qfTagName(TAG_NUMBER, t);
  if (tag == TAG_TUPLE) return ":db.type/tuple";
  return qfTagName(tag, t);
}

/* mentat_comparable(a, tagA, b, tagB, where): 1 when Clojure's compare
** orders a and b (numbers with numbers, else one type with itself), else
** the ClassCastException Datomic's query throws, as "<where>: cannot
** compare a :db.type/long with a :db.type/string". A NULL tag: the type is
** not known there, its storage class says. NULL values compare (nil is
** first in Clojure's compare). */
void qfComparable(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int ta = sqlite3_value_type(argv[0]), tb = sqlite3_value_type(argv[2]);
  int tagA = sqlite3_value_type(argv[1]) == SQLITE_NULL ? -99 : sqlite3_value_int(argv[1]);
  int tagB = sqlite3_value_type(argv[3]) == SQLITE_NULL ? -99 : sqlite3_value_int(argv[3]);
  int ca, cb;
  (void)argc;
  if (ta == SQLITE_NULL || tb == SQLITE_NULL) {
    sqlite3_result_int(pCtx, 1);
    return;
  }
  ca = qfCompareClass(tagA, ta);
  cb = qfCompareClass(tagB, tb);
  if (ca != 0 && ca == cb) {
    sqlite3_result_int(pCtx, 1);
    return;
  }
  qfErrorAt(pCtx, argv[4], "cannot compare a %s with a %s", qfCompareName(tagA, ta),
            qfCompareName(tagB, tb));
}

/* mentat_one_class(tag, where), an aggregate: NULL, or the error Clojure's
** compare throws once the values of its group fall in two comparison
** classes (Datomic's min and max aggregates order by compare), named in
** tag order so the message does not depend on the rows' order. */
typedef struct QfOneClass { int bAny, tag; } QfOneClass;

void qfOneClassStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  QfOneClass *p = sqlite3_aggregate_context(pCtx, sizeof(QfOneClass));
  int tag;
  (void)argc;
  if (p == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  tag = sqlite3_value_int(argv[0]);
  if (!p->bAny) {
    p->bAny = 1;
    p->tag = tag;
  } else if (qfCompareClass(tag, 0) != qfCompareClass(p->tag, 0)) {
    int lo = tag < p->tag ? tag : p->tag, hi = tag < p->tag ? p->tag : tag;
    qfErrorAt(pCtx, argv[1], "cannot compare a %s with a %s", qfCompareName(lo, SQLITE_INTEGER),
              qfCompareName(hi, SQLITE_INTEGER));
  }
}

void qfOneClassFinal(sqlite3_context *pCtx) {
  sqlite3_result_null(pCtx);
}

/* mentat_tx_point(v, tag, where): see the header. tag NULL: the value's
** storage class decides (an integer is a tx id). NULL gives NULL. */
void qfTxPoint(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int t = sqlite3_value_type(argv[0]);
  const char *zType = NULL;
  char *zErr;
  (void)argc;
  if (t == SQLITE_NULL) return;
  if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    if (t == SQLITE_FLOAT) zType = ":db.type/double";
    else if (t != SQLITE_INTEGER) zType = t == SQLITE_TEXT ? "text" : "blob";
  } else {
    int tag = sqlite3_value_int(argv[1]);
    if (tag != TAG_REF && (tag != TAG_NUMBER || t != SQLITE_INTEGER)) zType = qfTagName(tag, t);
  }
  if (zType == NULL) {
    sqlite3_result_value(pCtx, argv[0]);
    return;
  }
  zErr = sqlite3_mprintf("%s is a %s, not a tx id or an #inst",
                         (const char *)sqlite3_value_text(argv[2]), zType);
  if (zErr == NULL) sqlite3_result_error_nomem(pCtx);
  else sqlite3_result_error(pCtx, zErr, -1);
  sqlite3_free(zErr);
}

/* mentat_num(v, tag, where): v when it is a number or an entity id, else
** the error Datomic's numeric aggregates throw ("<where>: a :db.type/string
** is not a number"). For values whose type the compiler does not know
** ([?e ?a ?v], rule results): their tag says it. A NULL tag (type unknown
** there too) goes by the storage class. NULL stays NULL. */
void qfNum(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  int t = sqlite3_value_type(argv[0]);
  const char *zType = NULL;
  (void)argc;
  if (t == SQLITE_NULL) return;
  if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) zType = t == SQLITE_TEXT ? "text" : "blob";
  } else {
    int tag = sqlite3_value_int(argv[1]);
    if (tag != TAG_NUMBER && tag != TAG_REF) zType = qfTagName(tag, t);
  }
  if (zType) {
    qfErrorAt(pCtx, argv[2], "a %s is not a number", zType);
    return;
  }
  sqlite3_result_value(pCtx, argv[0]);
}

/* mentat_arg(v, tag, kind, where): v when a built-in's argument may be it,
** for arguments whose type the compiler does not know ([?e ?a ?v], rule
** outputs, collections of several types): kind QF_ARG_NUM a number or an
** entity id, QF_ARG_INT an integer (even?, odd?), QF_ARG_STR a string,
** QF_ARG_COLL a string or a collection (count). Anything else is the
** exception Clojure throws there (ClassCastException; even? "Argument must
** be an integer", count "not supported on this type"), as the compiler's
** error for a typed place says it: "<where> is a :db.type/string, not a
** number". The tag says the type; a NULL tag leaves it to the storage
** class. NULL stays NULL (binds nothing, as a nil result). */
void qfArg(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  static const char *const azWant[] = { "a number", "an integer", "a string",
                                        "a string or a collection",
                                        "a regular expression pattern (re-pattern makes one)",
                                        "a string" };
  int t = sqlite3_value_type(argv[0]);
  int bTag = sqlite3_value_type(argv[1]) != SQLITE_NULL;
  int tag = bTag ? sqlite3_value_int(argv[1]) : -100;
  int kind = sqlite3_value_int(argv[2]), bOk;
  char *zErr;
  (void)argc;
  if (t == SQLITE_NULL) return;
  if (kind < QF_ARG_NUM || kind > QF_ARG_RESTR) kind = QF_ARG_NUM;
  switch (kind) {
    case QF_ARG_NUM:
      bOk = bTag ? tag == TAG_REF || tag == TAG_NUMBER : t == SQLITE_INTEGER || t == SQLITE_FLOAT;
      break;
    case QF_ARG_INT:
      bOk = (!bTag || tag == TAG_REF || tag == TAG_NUMBER) && t == SQLITE_INTEGER;
      break;
    case QF_ARG_STR:
      bOk = bTag ? tag == TAG_STRING : t == SQLITE_TEXT;
      break;
    case QF_ARG_RE:
      /* a pattern always carries its tag: untagged text is a string */
      bOk = bTag && tag == TAG_PATTERN;
      break;
    case QF_ARG_RESTR:
      bOk = bTag ? tag == TAG_STRING || tag == TAG_PATTERN : t == SQLITE_TEXT;
      break;
    default:
      bOk = bTag ? tag == TAG_STRING || tag == TAG_TUPLE || tag == TAG_JSON : t == SQLITE_TEXT;
      break;
  }
  if (bOk) {
    sqlite3_result_value(pCtx, argv[0]);
    return;
  }
  zErr = sqlite3_mprintf("%s is a %s, not %s", (const char *)sqlite3_value_text(argv[3]),
                         bTag ? qfCompareName(tag, t) : t == SQLITE_TEXT ? "string or keyword"
                         : t == SQLITE_BLOB ? "uuid, bytes or tuple" : qfTagName(TAG_NUMBER, t),
                         azWant[kind]);
  if (zErr == NULL) sqlite3_result_error_nomem(pCtx);
  else sqlite3_result_error(pCtx, zErr, -1);
  sqlite3_free(zErr);
}

/* mentat_sum(x, where): SQLite's sum (exact over longs, a double once a
** double comes, NULL over no rows), but a long overflow stops at once and
** says where ("line L col C: (sum ?x): integer overflow") instead of a
** bare "integer overflow". */
typedef struct QfSum {
  sqlite3_int64 i;
  double d;
  sqlite3_int64 n;      /* values summed (mentat_avg) */
  int bAny, bReal, bOver;
} QfSum;

/* A NaN sum (infinities of both signs) stops the statement where it
** happens, as an overflow does: its result would come back as NULL. */
void qfSumStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  QfSum *p = sqlite3_aggregate_context(pCtx, sizeof(QfSum));
  int t = sqlite3_value_numeric_type(argv[0]);
  (void)argc;
  if (p == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  if (t == SQLITE_NULL) {
    /* nil, a value of the bag: Clojure's + throws (NullPointerException) */
    p->bOver = 1;
    qfErrorAt(pCtx, argv[1], "nil is not a number");
    return;
  }
  p->bAny = 1;
  p->n++;
  if (t == SQLITE_INTEGER && !p->bReal) {
    if (__builtin_add_overflow(p->i, sqlite3_value_int64(argv[0]), &p->i)) {
      /* the statement stops here, as Clojure's + throws */
      p->bOver = 1;
      qfErrorAt(pCtx, argv[1], "integer overflow");
    }
    return;
  }
  if (!p->bReal) {
    p->bReal = 1;
    p->d = (double)p->i;
  }
  p->d += sqlite3_value_double(argv[0]);
  if (isnan(p->d)) {
    p->bOver = 1;
    qfErrorAt(pCtx, argv[1], "the result is NaN (not a number), which no query value holds");
  }
}

void qfSumFinal(sqlite3_context *pCtx) {
  QfSum *p = sqlite3_aggregate_context(pCtx, 0);
  if (p == NULL || !p->bAny) { sqlite3_result_null(pCtx); return; }
  if (p->bOver) {
    sqlite3_result_error(pCtx, "integer overflow", -1);   /* the step said where */
  } else if (p->bReal) {
    sqlite3_result_double(pCtx, p->d);
  } else {
    sqlite3_result_int64(pCtx, p->i);
  }
}

/* mentat_avg(x, where): Datomic's avg, the sum (mentat_sum's, its long
** overflow and a NaN an error at the step) over the count, a double. */
void qfAvgStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  qfSumStep(pCtx, argc, argv);
}

void qfAvgFinal(sqlite3_context *pCtx) {
  QfSum *p = sqlite3_aggregate_context(pCtx, 0);
  if (p == NULL || !p->bAny) { sqlite3_result_null(pCtx); return; }
  if (p->bOver) sqlite3_result_error(pCtx, "integer overflow", -1);   /* the step said where */
  else sqlite3_result_double(pCtx, (p->bReal ? p->d : (double)p->i) / (double)p->n);
}

/* One number a median, variance or stddev step kept: a long exactly (its
** double beside it, for variance), or a double. */
typedef struct QfNum {
  sqlite3_int64 i;
  double d;
  int bInt;
} QfNum;

typedef struct QfNums {
  QfNum *a;
  sqlite3_int64 n, nAlloc;
  int bOom;
  char *zWhere;         /* the place argument, for the final's error */
} QfNums;

/* The steps of median, variance and stddev (x, where): the numbers kept. */
void qfNumsStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  QfNums *p = sqlite3_aggregate_context(pCtx, sizeof(QfNums));
  int t = sqlite3_value_numeric_type(argv[0]);
  if (p == NULL) { sqlite3_result_error_nomem(pCtx); return; }
  if (argc > 1 && p->zWhere == NULL) {
    p->zWhere = sqlite3_mprintf("%s", (const char *)sqlite3_value_text(argv[1]));
    if (p->zWhere == NULL) p->bOom = 1;
  }
  if (t == SQLITE_NULL) {
    /* nil, a value of the bag: Clojure's sort and arithmetic throw on it */
    qfErrorAt(pCtx, argv[1], "nil is not a number");
    return;
  }
  if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) return;
  if (p->n == p->nAlloc) {
    sqlite3_int64 nNew = p->nAlloc ? p->nAlloc * 2 : 16;
    QfNum *aNew = sqlite3_realloc64(p->a, sizeof(QfNum) * nNew);
    if (aNew == NULL) { p->bOom = 1; return; }
    p->a = aNew;
    p->nAlloc = nNew;
  }
  p->a[p->n].bInt = t == SQLITE_INTEGER;
  p->a[p->n].i = t == SQLITE_INTEGER ? sqlite3_value_int64(argv[0]) : 0;
  p->a[p->n].d = sqlite3_value_double(argv[0]);
  p->n++;
}

/* -1, 0 or 1 as the long i is below, equal to or above the double d
** (not NaN), exactly: 2^53 + 1 is above 2^53 as a double. */
static int qfCmpLongDouble(sqlite3_int64 i, double d) {
  double t;
  sqlite3_int64 ti;
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  t = trunc(d);
  ti = (sqlite3_int64)t;
  if (i != ti) return i < ti ? -1 : 1;
  return d > t ? -1 : d < t ? 1 : 0;
}

/* The order of (sort coll) over numbers: by value, exactly; a tie of a
** long and a double puts the long first (Clojure's sort keeps the
** collection's order there, which Datomic leaves unsaid). */
static int qfCmpNum(const void *pA, const void *pB) {
  const QfNum *x = pA, *y = pB;
  int c;
  if (x->bInt && y->bInt) return x->i < y->i ? -1 : x->i > y->i;
  if (!x->bInt && !y->bInt) return x->d < y->d ? -1 : x->d > y->d;
  c = x->bInt ? qfCmpLongDouble(x->i, y->d) : -qfCmpLongDouble(y->i, x->d);
  return c ? c : x->bInt ? -1 : 1;
}

/* Frees what the steps kept. */
static void qfNumsFree(QfNums *p) {
  if (p == NULL) return;
  sqlite3_free(p->a);
  sqlite3_free(p->zWhere);
}

/* The error "<where>: zMsg" at p's aggregate place. */
static void qfNumsError(sqlite3_context *pCtx, const QfNums *p, const char *zMsg) {
  char *zErr = sqlite3_mprintf("%s: %s", p->zWhere ? p->zWhere : "", zMsg);
  if (zErr == NULL) sqlite3_result_error_nomem(pCtx);
  else sqlite3_result_error(pCtx, zErr, -1);
  sqlite3_free(zErr);
}

/* The double d as p's result: a NaN (infinities of both signs met) is an
** error at the aggregate's place, as qfResultDouble's. */
static void qfNumsDouble(sqlite3_context *pCtx, const QfNums *p, double d) {
  if (!isnan(d)) sqlite3_result_double(pCtx, d);
  else qfNumsError(pCtx, p, "the result is NaN (not a number), which no query value holds");
}

/* DataScript's aggregate-median (Datomic's docs say no more than "median"):
** (sort coll), the middle element as it is (a long or a double) for an odd
** count, else (/ (+ b a) 2) of the two middle ones with Clojure's + and /:
** two longs add exactly (an overflow is an error, as Clojure's + throws)
** and halve to a long when even, else to the double nearest (there are no
** ratios: (/ 3 2) is 1.5); a double makes it double arithmetic. */
void qfMedianFinal(sqlite3_context *pCtx) {
  QfNums *p = sqlite3_aggregate_context(pCtx, 0);
  const QfNum *a, *b;
  sqlite3_int64 s;
  if (p == NULL || p->n == 0) { qfNumsFree(p); sqlite3_result_null(pCtx); return; }
  if (p->bOom) { qfNumsFree(p); sqlite3_result_error_nomem(pCtx); return; }
  qsort(p->a, (size_t)p->n, sizeof(QfNum), qfCmpNum);
  b = &p->a[p->n / 2];
  a = &p->a[p->n / 2 - (p->n % 2 ? 0 : 1)];
  if (p->n % 2) {
    if (b->bInt) sqlite3_result_int64(pCtx, b->i);
    else qfNumsDouble(pCtx, p, b->d);
  } else if (!a->bInt || !b->bInt) {
    qfNumsDouble(pCtx, p, (b->d + a->d) / 2);
  } else if (__builtin_add_overflow(b->i, a->i, &s)) {
    qfNumsError(pCtx, p, "integer overflow");
  } else if (s % 2 == 0) {
    sqlite3_result_int64(pCtx, s / 2);
  } else {
    sqlite3_result_double(pCtx, (double)s / 2);   /* halving is exact: one rounding */
  }
  qfNumsFree(p);
}

static void qfVarianceOf(sqlite3_context *pCtx, int bStddev) {
  QfNums *p = sqlite3_aggregate_context(pCtx, 0);
  double mean = 0, ss = 0;
  sqlite3_int64 i;
  if (p == NULL || p->n == 0) { qfNumsFree(p); sqlite3_result_null(pCtx); return; }
  if (p->bOom) { qfNumsFree(p); sqlite3_result_error_nomem(pCtx); return; }
  for (i = 0; i < p->n; i++) mean += p->a[i].d;
  mean /= (double)p->n;
  for (i = 0; i < p->n; i++) ss += (p->a[i].d - mean) * (p->a[i].d - mean);
  ss /= (double)p->n;
  qfNumsDouble(pCtx, p, bStddev ? sqrt(ss) : ss);
  qfNumsFree(p);
}

void qfVarianceFinal(sqlite3_context *pCtx) { qfVarianceOf(pCtx, 0); }
void qfStddevFinal(sqlite3_context *pCtx) { qfVarianceOf(pCtx, 1); }

/* 1 when Clojure's (> x y) (bMax) or (< x y) holds for two numbers: longs
** exactly, else both as doubles (Numbers converts a long meeting a double). */
static int qfNumBeats(sqlite3_value *pX, sqlite3_value *pY, int bMax) {
  if (sqlite3_value_type(pX) == SQLITE_INTEGER && sqlite3_value_type(pY) == SQLITE_INTEGER) {
    sqlite3_int64 x = sqlite3_value_int64(pX), y = sqlite3_value_int64(pY);
    return bMax ? x > y : x < y;
  } else {
    double x = sqlite3_value_double(pX), y = sqlite3_value_double(pY);
    /* two doubles are Math.max/min: 0.0 above -0.0 */
    if (x == y && sqlite3_value_type(pX) == SQLITE_FLOAT && sqlite3_value_type(pY) == SQLITE_FLOAT) {
      return bMax ? !signbit(x) && signbit(y) : signbit(x) && !signbit(y);
    }
    return bMax ? x > y : x < y;
  }
}

/* max and min of n numbers as Clojure's: (max x y) is (if (> x y) x y),
** the argument itself (so (max 1.0 1) is the long 1, and 9007199254740993
** is no more than 9007199254740992.0), reduced from the left; SQLite's
** max() compares INTEGER with REAL exactly and keeps the first of a tie.
** NULL when an argument is NULL, as SQLite's. */
static void qfMinMaxN(sqlite3_context *pCtx, int argc, sqlite3_value **argv, int bMax) {
  int i, iBest = 0;
  for (i = 0; i < argc; i++) {
    if (sqlite3_value_type(argv[i]) == SQLITE_NULL) { sqlite3_result_null(pCtx); return; }
  }
  for (i = 1; i < argc; i++) {
    if (!qfNumBeats(argv[iBest], argv[i], bMax)) iBest = i;
  }
  sqlite3_result_value(pCtx, argv[iBest]);
}

void qfMax(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  qfMinMaxN(pCtx, argc, argv, 1);
}

void qfMin(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  qfMinMaxN(pCtx, argc, argv, 0);
}
