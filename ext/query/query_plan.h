/*
** query_plan.h — a compiled query as the runner (query_run.c) takes it
** from the compiler (query_compile.c): one SQL statement, its parameters
** (QParam: where each value comes from and how it converts when bound, so
** a cached plan only rebinds) and its result columns (QPlanCol).
** Parameters of input variables are typed lazily: the first typed place
** the variable meets decides.
*/
#ifndef MENTAT_QUERY_PLAN_H
#define MENTAT_QUERY_PLAN_H

#include "query.h"
#include "query_ast.h"

/* How a parameter's EDN value becomes an SQL value at bind time. */
typedef enum QConv {
  QV_NATURAL = 0,   /* the literal's own type (valueNaturalType) */
  QV_TYPED,         /* converted to vt; VT_REF takes entids and idents */
  QV_TAG,           /* the store tag of the literal's natural type */
  QV_LOOKUP_A,      /* lookup ref [:attr v]: the attribute's entid */
  QV_LOOKUP_V,      /* ... the value, typed by the attribute */
  QV_LOOKUP_TAG,    /* ... the attribute's tag */
  QV_INT,           /* :limit / :offset */
  QV_AGG_N,         /* the input count of (max ?k ?x); pConst is that form */
  QV_JSON,          /* any value as JSON text (tuple values) */
  QV_HIST_TX,       /* opts asOf/since as a tx id */
  QV_HIST_INST,     /* opts asOf/since as an instant (µs) */
  QV_CLJ            /* a collection as text, Clojure's pr-str (str of it) */
} QConv;

/* One parameter ?N (N = index + 1). Source: pConst, or aInput[iInput]
** followed by up to two element indexes (i1, i2; -1 when unused). */
typedef struct QParam {
  const EdnValue *pConst;
  int iInput, i1, i2;
  QConv eConv;
  ValueType vt;
  int iSrc;               /* the source whose schema binds it (0: $, k: opts
                          ** source k-1; QV_HIST_*: whose asOf/since) */
  sqlite3_int64 eTuple;   /* QV_TYPED tuple: the attribute whose element types
                          ** convert it (0: the elements' natural types) */
} QParam;

/* Pseudo value type for expressions holding JSON text (tuple). */
#define QVT_JSON ((ValueType)100)

/* Kinds of result columns. */
typedef enum QColKind { QCOL_VALUE = 0, QCOL_PULL, QCOL_JSON } QColKind;

typedef struct QPlanCol {
  QColKind kind;
  int iCol;               /* statement column of the value (entity for pull) */
  int iTagCol;            /* column of the tag, or -1 when vt is static */
  ValueType vt;
  const EdnValue *pPattern;  /* QCOL_PULL: the pattern, unless bPatInput */
  int bPatInput;          /* QCOL_PULL: the pattern is input iPatInput */
  int iPatInput;
  const EdnValue *pPullVar;  /* QCOL_PULL: the pulled variable, for errors */
  const char *zName;
  char *zKey;             /* JSON key for :keys/:strs/:syms, or NULL */
  int bDirect;            /* a static type whose stored form is its SQL value
                          ** (qPlanColDirect): the column goes out as it is */
} QPlanCol;

/* A compiled query: the SQL, its parameters, its result columns. Owned by
** the connection's plan cache (or by one run when uncached). */
typedef struct QueryPlan QueryPlan;
struct QueryPlan {
  EdnArena arena;          /* AST and constants the params point at */
  char *zKey;              /* cache key: generation, input shape, query text */
  int nKey;
  unsigned hKey;           /* hash of zKey, checked before comparing */
  char *zSql;
  sqlite3_stmt *pStmt;     /* prepared on the owning connection, or NULL */
  int nParam;
  QParam *aParam;
  FindKind eFind;
  int nCol;
  QPlanCol *aCol;
  int bKeys;
  int bSingleAgg;
  int bAtMostOne;          /* every row's datoms are fixed by the query's constants
                           ** and inputs (qcdAtMostOne): one row at most, so the
                           ** run ends after it without stepping to the end */
  int bDrainOne;           /* a . or tuple find whose SQL can fail at run time
                           ** (qcRaises): no LIMIT 1, the run gives its first
                           ** row and steps the rest for their errors, as
                           ** Datomic computes the whole result (qRunStep) */
  int nInputNeeded;        /* :in bindings that consume a value */
  char *zHostFns;          /* the host's functions the SQL calls, "name\x01nArg\x01..."
                           ** (query_compile_host.c), or NULL */
  QueryPlan *pNext, *pPrev;   /* cache LRU list */
};

/* Sets each column's bDirect: a value of a static type (ref, long, double,
** string, keyword, bytes) with no tag column, whose stored form is what
** the cN column gives. */
void qPlanColDirect(QueryPlan *p);

/* Frees plan p and what it owns (its statement too); p may be NULL. */
void qPlanFree(QueryPlan *p);

/* zSql with each numbered parameter "?NNN" that is the next number in text
** order written as a bare "?", which SQLite numbers the same way (one past
** the largest number before it). Why: SQLite 3.40's code generator looks up
** the name of every numbered parameter in a linear list, so a statement of
** N distinct ?NNN prepares in N^2 (32,000 collection values: 2.46 s against
** 0.09 s for "?"). Quoted strings, identifiers and comments are copied as
** they are. Gives a copy from sqlite3_malloc, or NULL on SQLITE_NOMEM; the
** plan keeps its numbered text (explain shows it). */
char *qPlanSqlBare(const char *zSql);

/* Is input value p a lookup ref [:attr v]? Only when the keyword names a
** :db/unique attribute (as Datomic resolves one); else the pair is a
** tuple, which meets stored tuples by value and type. */
int qPlanLookupRef(const Schema *pSchema, const EdnValue *p);

/* The attribute of input pair p [:attr v] when it names one that is not
** :db/unique: no lookup ref, so in an entity place the error "lookup ref
** attribute :attr is not :db/unique" (as edn_t refuses it); else NULL. */
const Attr *qPlanNotLookup(const Schema *pSchema, const EdnValue *p);

/* The value parameter pP stands for in pOpts' inputs (its constant when it
** is none's), NULL when the inputs have no such place. */
const EdnValue *qParamValue(const QParam *pP, const QueryOpts *pOpts);

/* Binds every parameter of p on pStmt from pOpts. */
int qPlanBind(const QueryPlan *p, sqlite3_stmt *pStmt, const Schema *pSchema,
              const QueryOpts *pOpts, char **pzErr);

#endif /* MENTAT_QUERY_PLAN_H */
