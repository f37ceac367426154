/*
** query_ast.h — the qparse stage: the parsed form of a Datalog query
** (query_parse.c, printed by query_ast_print.c), the input of the compiler
** (ext/query). Takes query or rule-set text/EDN, gives the AST; calls the
** EDN reader only, so the parser is built and tested without a store.
**
** The AST covers Datomic's whole query grammar (SPEC.md §6), whether or
** not the compiler takes every form. Terms are not copied: a term is the EdnValue the reader
** produced — a symbol "?x" (variable), "_" (blank), "$"/"$x" (source), or any
** other value (a constant). Every node lives in the EdnArena the query was
** read into; nothing here is freed on its own.
*/
#ifndef MENTAT_QUERY_AST_H
#define MENTAT_QUERY_AST_H

#include "edn.h"

/* Find specs (SPEC.md §2.1). */
typedef enum FindKind {
  FIND_REL = 0,     /* [:find ?a ?b]           one row per tuple */
  FIND_COLL,        /* [:find [?a ...]]        one row per element */
  FIND_TUPLE,       /* [:find [?a ?b]]         zero or one row */
  FIND_SCALAR       /* [:find ?a .]            zero or one row */
} FindKind;

/* One element of :find. */
typedef enum QFindElemKind {
  QFIND_VAR = 0,     /* ?x */
  QFIND_AGG,         /* (count ?x), (min 2 ?x), (count-distinct ?x), (the ?x) ... */
  QFIND_PULL         /* (pull ?e [...]) */
} QFindElemKind;

typedef struct QFindElem {
  QFindElemKind kind;
  const EdnValue *pForm;     /* the element as written (errors, names) */
  const EdnValue *pVar;      /* the variable (aggregated / pulled / plain) */
  const char *zAgg;          /* QFIND_AGG: function name, e.g. "count-distinct" */
  const EdnValue *pAggN;     /* QFIND_AGG: the count of (min n ?x) (an integer or
                             ** an :in variable), or NULL */
  const EdnValue *pPattern;  /* QFIND_PULL: the pull pattern, or the symbol of an
                             ** :in input holding it (pattern or ?pattern) */
  const char *zName;         /* column name: "?x", "(count ?x)", "(pull ?e [...])" */
} QFindElem;

/* Binding forms, shared by :in and function expressions. */
typedef enum QBindKind {
  QB_SCALAR = 0,   /* ?x (or _) */
  QB_TUPLE,        /* [?a ?b] (elements may be _) */
  QB_COLL,         /* [?x ...] */
  QB_REL           /* [[?a ?b]] */
} QBindKind;

typedef struct QBinding {
  QBindKind kind;
  int nVar;
  const EdnValue **aVar;     /* variables or "_" symbols */
} QBinding;

/* One :in binding. */
typedef enum QInKind {
  QIN_SRC = 0,     /* $ or $name: consumes no input value */
  QIN_RULES,       /* %: the rule set (an input value) */
  QIN_BIND,        /* a binding form, consuming one input value */
  QIN_PATTERN      /* a plain symbol: a pull pattern (Datomic's pattern-var) */
} QInKind;

typedef struct QIn {
  QInKind kind;
  const EdnValue *pForm;
  QBinding bind;             /* QIN_BIND */
} QIn;

/* :where clauses. */
typedef enum QClauseKind {
  QC_PATTERN = 0,  /* [$src? e a v tx added] */
  QC_PRED,         /* [(op args...)] */
  QC_FN,           /* [(f args...) binding] */
  QC_RULE,         /* (name args...) */
  QC_NOT,          /* (not clause...) */
  QC_NOT_JOIN,     /* (not-join [?v...] clause...) */
  QC_OR,           /* (or branch...) — each branch a clause, (and ...) for several */
  QC_OR_JOIN,      /* (or-join [[?req...] ?v...] branch...) */
  QC_AND           /* (and clause...) — only as an or branch */
} QClauseKind;

typedef struct QClause QClause;
struct QClause {
  QClauseKind kind;
  const EdnValue *pForm;      /* as written: position for errors */
  const EdnValue *pSrc;       /* $x or NULL */
  const char *zName;          /* QC_PRED/QC_FN/QC_RULE: function or rule name */
  int nArg;                   /* QC_PATTERN: places (1..5); PRED/FN/RULE: args */
  const EdnValue **aArg;
  QBinding bind;              /* QC_FN */
  int nJoin;                  /* QC_NOT_JOIN/QC_OR_JOIN: join variables */
  int nReq;                   /* QC_OR_JOIN: the first nReq of aJoin are required */
  const EdnValue **aJoin;
  int nSub;                   /* NOT/NOT_JOIN/AND: body; OR/OR_JOIN: branches */
  QClause **aSub;
};

/* A rule definition [(name ?a [?b]) clause...]. */
typedef struct QRule {
  const char *zName;
  const EdnValue *pForm;
  int nHead;
  const EdnValue **aHead;     /* head variables in written order */
  int nReq;                   /* how many of aHead were in the [required] vector */
  unsigned char *abReq;       /* per head variable: 1 if required */
  int nClause;
  QClause **aClause;
} QRule;

typedef struct QRuleSet {
  int nRule;
  QRule **aRule;
} QRuleSet;

typedef struct QOrder {
  const EdnValue *pVar;
  int bDesc;
} QOrder;

/* Return maps. */
typedef enum QKeysKind { QK_NONE = 0, QK_KEYS, QK_STRS, QK_SYMS } QKeysKind;

typedef struct QQuery {
  FindKind eFind;
  int nFind;
  QFindElem *aFind;
  QKeysKind eKeys;
  int nKey;
  const char **azKey;         /* nKey (= nFind) names, as written, without ':' */
  int nWith;
  const EdnValue **aWith;
  int nIn;                    /* 0 when :in is absent (then "$" is implied) */
  QIn *aIn;
  int nWhere;
  QClause **aWhere;
  int nOrder;
  QOrder *aOrder;
  const EdnValue *pLimit;     /* EDN_INT or a variable bound by :in, or NULL */
  const EdnValue *pOffset;
  const EdnValue *pForm;      /* the whole query */
} QQuery;

/* Parses zQuery[0..nQuery) into *ppQuery, allocated in pArena.
** Errors: *pzErr (sqlite3_malloc'd) "line L col C: <what>" and SQLITE_ERROR;
** SQLITE_NOMEM on OOM. */
int qpParse(EdnArena *pArena, const char *zQuery, int nQuery, QQuery **ppQuery,
           char **pzErr);

/* Parses a rule set (the EDN value bound to %) into *pSet, in pArena.
** Errors as qpParse, prefixed with "rules: ". */
int qpParseRules(EdnArena *pArena, const EdnValue *pForm, QRuleSet *pSet, char **pzErr);

/* Appends a canonical text form of the AST (for tests and debugging):
** "find=rel(?a,(count ?b)) in=($,?x,[?y ...]) where=(pat(?e,:a,?v),...) ..." */
void qpPrint(sqlite3_str *pOut, const QQuery *p);
void qpPrintRules(sqlite3_str *pOut, const QRuleSet *p);

/* The name of a variable term ("?x") or NULL if p is not a variable. */
const char *qpVarName(const EdnValue *p);
/* True for the blank "_". */
int qpIsBlank(const EdnValue *p);
/* True for a source variable "$" or "$name". */
int qpIsSrc(const EdnValue *p);

#endif /* MENTAT_QUERY_AST_H */
