/*
** query_funcs.h — the built-in functions of :where clauses, one table
** (query_funcs.c): each row names a built-in, its argument count and
** types, its result type, the compile hook that writes its SQL and the
** SQL function it calls at run time, if any. The compiler finds a name
** there and nowhere else (qfLookup); the store connections get the run-time
** functions from it (qfRegister). The files of the family
** (query_funcs_*.c) implement those functions; the hooks are the
** compiler's (query_compile_pred.c, _value.c, _fn.c).
*/
#ifndef MENTAT_QUERY_FUNCS_H
#define MENTAT_QUERY_FUNCS_H

#include "value.h"
#include "query_ast.h"

/* What a built-in is in a clause. */
typedef enum QfKind {
  QF_PRED = 1,   /* a condition: [(f ...)] filters, [(f ...) ?b] binds its truth */
  QF_VALUE,      /* an expression: [(f ...) ?x] binds it, [(f ...)] holds unless nil/false */
  QF_CLAUSE      /* a function clause of its own, which binds itself; no predicate */
} QfKind;

/* What each argument must be. A place of known type is checked when the
** query compiles; one of unknown type gives NULL at run time (binds
** nothing) unless it holds such a value, as Clojure throws a
** ClassCastException for the others. */
typedef enum QfArg {
  QF_ARG_ANY = 0,
  QF_ARG_NUM,    /* a number or an entity id */
  QF_ARG_STR     /* a string */
} QfArg;

/* A compiled built-in call: its SQL (sqlite3_malloc'd), static type and,
** when that is VT_NONE, the SQL of its tag (or NULL). */
typedef struct QfOut {
  char *zSql;
  ValueType vt;
  char *zTag;
} QfOut;

typedef struct QCtx QCtx;              /* query_compile_scope.h */
typedef struct QfBuiltin QfBuiltin;

/* A compile hook: the SQL of clause pCl, a call of built-in pFn whose
** argument count the caller checked (unless pFn->nMin < 0), into *pOut
** (QF_PRED: an SQL condition; QF_VALUE: an expression; QF_CLAUSE: nothing,
** the hook binds the clause's variables itself). Returns the compile's rc;
** on error pOut->zSql stays NULL and the compiler holds the message. */
typedef int (*QfCompile)(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);

/* A run-time SQL function (sqlite3_create_function's xFunc). */
typedef void (*QfSqlFunc)(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

struct QfBuiltin {
  const char *zName;       /* as a clause writes it: "re-find", "clojure.string/blank?" */
  QfKind eKind;
  signed char nMin, nMax;  /* argument count (nMax -1: no limit); nMin -1: the hook checks */
  QfArg eArg;              /* what every argument must be */
  ValueType vtOut;         /* result type; VT_NONE: it follows the arguments */
  QfCompile xCompile;
  const char *zSql;        /* for the hook: an SQL operator or a template, one %s an argument */
  const char *zFunc;       /* the SQL function the SQL calls at run time, or NULL */
  signed char nFuncArg;    /* its argument count (-1: any) */
  QfSqlFunc xFunc;         /* its implementation */
};

/* The built-in named zName, or NULL when there is none. */
const QfBuiltin *qfLookup(const char *zName);

/* The most arguments a variadic built-in takes. */
#define QF_MAX_ARGS 16

/* ---- the compile hooks the table names (the compiler's) ---- */

int qcpCompare(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcpEqual(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcpNotEqual(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcpDiffer(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcpMissing(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcpFormat(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcpStartsWith(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);

int qcvArith(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvArithOp(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvArith1(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvMinMax(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvCompare(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvCount(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvStr(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvCall(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvSubs(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvIdentity(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvReMatch(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvReSeq(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcvTuple(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);

int qcfGround(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcfGetElse(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcfGetSome(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcfUntuple(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcfFulltext(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcfTxIds(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcfTxData(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);
int qcfType(QCtx *pX, const QClause *pCl, const QfBuiltin *pFn, QfOut *pOut);

/* ---- for the compiler: regular expressions ---- */

/* Compiles the nPat bytes at zPat in the dialect of the regular
** expression built-ins (java.util.regex's, through PCRE2) and sets
** *pnGroup to its number of capturing groups. Errors: SQLITE_ERROR with
** "invalid regular expression \"...\": <reason>" in *pzErr; SQLITE_NOMEM. */
int qfRegexGroups(const char *zPat, int nPat, int *pnGroup, char **pzErr);

/* ---- shared by the files of the family ---- */

/* Fails the call with "<where>: <message>": where is the place argument
** the compiler passes ("line L col C: fn"), so the message says which
** clause. */
void qfErrorAt(sqlite3_context *pCtx, sqlite3_value *pWhere, const char *zFmt, ...);

/* The user's name for the type of a stored value: its tag, and for
** TAG_NUMBER its storage class t (long or double). Static text. */
const char *qfTagName(int tag, int t);

/* query_funcs_java.c: java.util.regex pattern z[0..n) in PCRE2's syntax
** (*pzOut, *pnOut bytes, sqlite3_malloc'd; *paMap, *pnMap: pairs of an
** offset in *pzOut and the offset in z it came from), or the reason it
** cannot be ("invalid regular expression ...", SQLITE_ERROR; SQLITE_NOMEM). */
int qfjTranslate(const char *z, int n, char **pzOut, int *pnOut, int **paMap, int *pnMap,
                 char **pzErr);
/* Sets *pzErr to "invalid regular expression \"<zPat>\": <zWhy>" and
** returns SQLITE_ERROR (SQLITE_NOMEM when that fails). */
int qfjInvalid(char **pzErr, const char *zPat, int nPat, const char *zWhy);

/* The run-time functions, by file; each comment at its definition. */
void qfAdd(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSub(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfMul(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfDiv(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfQuot(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfRem(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfMod(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfInc(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfDec(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfAbs(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfTxPoint(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfNum(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSumStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSumFinal(sqlite3_context *pCtx);
void qfNumsStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfMedianFinal(sqlite3_context *pCtx);
void qfVarianceFinal(sqlite3_context *pCtx);
void qfStddevFinal(sqlite3_context *pCtx);

void qfEndsWith(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfStr(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfUpperCase(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfLowerCase(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSubs(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

void qfReFind(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfReMatches(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfReSeq(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

void qfJson(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfSetKey(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfValsStep(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void qfValsFinal(sqlite3_context *pCtx);
int qfCollateKw(void *pArg, int nx, const void *x, int ny, const void *y);

#endif /* MENTAT_QUERY_FUNCS_H */
