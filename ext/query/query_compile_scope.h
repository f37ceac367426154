/*
** query_compile_scope.h — what the query compiler's stages share: the
** compile state (QComp), scopes (QCtx) and their variables (QVar), and the
** functions each query_compile_*.c file offers the others. The driver
** (query_compile.c) and every sub-compiler include this header and no
** other of the compiler's (but a part's own: the rule calls' context, the
** host functions'), so the sub-compilers may call each other (not, or and
** rule bodies compile clause lists) without a circle of includes.
** One prefix per module: qc for the context itself (this header's
** query_compile_scope.c, _sql.c, _copy.c and _guard.c: scopes and
** variables, SQL shapes, scope copies, guards of failing expressions),
** qcs the sources, qcw the clause list, qcb bindings, qcp predicates,
** qcv value expressions, qcf function clauses and the table of built-ins,
** qch host functions, qco not/or, qcr rule
** calls (over qcx, qci, qcm: query_compile_rules_ctx.h), qca aggregates;
** the driver's qCompile.
**
** HOW IT WORKS
** A query compiles to ONE SQL statement. Each scope (the query, a not/or
** body, a rule body) is a QCtx holding its FROM items, WHERE terms and the
** variables it binds; a variable is an SQL expression (a datoms column, a
** parameter, a CTE column) plus its value type — static when the attribute
** fixes it, else an SQL expression giving the value_type_tag. Every user
** value is a parameter (?N); a QParam (query_plan.h) says where its value
** comes from and how it converts when bound.
*/
#ifndef MENTAT_QUERY_COMPILE_SCOPE_H
#define MENTAT_QUERY_COMPILE_SCOPE_H

#include "query_plan.h"

/* A variable bound in a scope. */
typedef struct QVar {
  const char *zName;
  char *zExpr;            /* SQL for the value; NULL while an IN list is pending */
  char *zTag;             /* SQL for the tag when vt is VT_NONE, else NULL */
  ValueType vt;
  unsigned char bIntCol;  /* zExpr is an INTEGER-affinity column (e, a, tx) */
  unsigned char bIdent;   /* a keyword here names its ident's entity in an entity place: an
                          ** input, a function's result, a rule's constant or seed (qcVarKind) */
  char *zInList;          /* pending collection: "?1,?2" (NULL when none) */
  char *zInMore;          /* more collections binding it, each a filter:
                          ** lists joined by '\x01' (NULL when none) */
  int nInElem;
  unsigned char bInLookup;   /* the pending collection holds lookup refs */
  unsigned char bHetero;     /* bound to values of several types ([1 "A"]) */
  unsigned char bGiven;      /* a value the query gave (input, ground, a rule's constant),
                             ** here or copied: its numbers meet a double place as stored */
  unsigned char bSeq, mColl; /* re-seq's seq: str prints it (...), not [...] (1); maybe one (2);
                             ** maybe a set, map or list literal (3), of kinds mColl (0: any) */
  unsigned char bInMixed;    /* ... numbers of both kinds (1, 2.5), a relation
                             ** input's column too (qcVarMixesKinds) */
  unsigned char bConvCol;    /* zExpr is a VALUES column inN.cJ of longs given,
                             ** their double forms beside it in kJ (qcUnifyConv) */
  unsigned char bSeedKind;   /* bound to a seed column (m.sK, sN.oK) whose kind
                             ** column says 'given' for a given integer (qcVarKind) */
  unsigned char bEntitySrc;  /* in the entity place of a pattern on a source of
                             ** $'s store (1), of another store file (2) */
  int iEntitySrc;         /* ... the last such other source (pull refuses it) */
  const EdnValue *pLit;   /* a rule call's constant argument, which a data
                          ** pattern reads as if written there (qcVarLit) */
  int nFnDepth;           /* function results inlined in zExpr, nested (0:
                          ** a column, parameter or mentat_one value) */
  int nParam;             /* params typed lazily with this variable */
  int *aParam;
} QVar;

/* The e, a, v, tx, added places of one data pattern, for deciding whether
** the rows of a scope are already distinct (qcwRowsUnique): a variable name,
** NULL for a constant (or a single-valued input) or a place the datom fixes
** anyway, "" for a blank or missing place that does not.
** A current or as-of datom is identified by (e, a, v); a 5-place history
** pattern reads log rows, identified only with tx and added too. */
typedef struct QKey {
  const char *az[5];
  unsigned char bOne;    /* constant cardinality-one attribute, not history:
                         ** e determines v */
  unsigned char bUniq;   /* constant :db/unique attribute, not history:
                         ** v determines e */
  unsigned char bHist;   /* 5-place history pattern */
} QKey;

typedef struct QComp QComp;
typedef struct QCtx QCtx;

/* Datomic runs a scope's clauses in order, so a clause's run-time error
** (a compare of a long and a string, (/ ?x 0), a regex past its limits)
** comes only from a row every clause before it passed. The compiler emits
** clauses in its own order (patterns first) and SQLite evaluates a WHERE
** term at the outermost loop that binds its tables, so an expression that
** can fail is written CASE WHEN <the terms of the clauses before it> THEN
** expr END (qcGuard). Each WHERE term is kept for that with the clause
** that made it: a path of clause indices through the qcwClauses frames
** open on the scope. */
#define QC_PATH_MAX 6
typedef struct QTerm {
  char *z;
  int aPath[QC_PATH_MAX];
  unsigned char nPath;
  unsigned char eRel;     /* QC_REL_*: how it stands to the scope's clauses */
  unsigned char bGated;   /* a gate (qcGuard) already holds it */
  unsigned char eRelWas;  /* eRel in the scope qcTermsCopy copied it from */
  char *zCore;            /* a guarded term: the guarded expression in it, which
                          ** a later term holding it evaluates as well */
  char zOne[16];          /* ... bound once as mentat_one(zCore) zOne (""
                          ** none): an expression naming zOne.value runs only
                          ** where the term holds */
  unsigned char bRaise;   /* it can fail at run time (qcRaises) */
  unsigned char nNest;    /* guards nested in it (each names the last) */
  unsigned char bFull;    /* ... and qcGuard guarded it: it holds only
                          ** where the terms of the clauses before its own
                          ** hold (later guards name it instead of them) */
} QTerm;
#define QC_REL_PATH 0     /* by its path */
#define QC_REL_BEFORE 1   /* copied from the rows before the scope's clauses */
#define QC_REL_AFTER 2    /* copied from a clause after the one being compiled */

/* One data source of the query (query_compile_src.c): aSrc[0] is $, aSrc[k]
** opts source k-1. */
typedef struct QSrc {
  const char *zName;       /* "$", "$2" */
  const EdnValue *pDecl;   /* its :in symbol (NULL for $) */
  Schema *pSchema;         /* idents resolve here (a reference the opts hold) */
  char *zAsOfTx, *zSinceTx; /* as QComp's, for this source */
  int bHistory;
  char zDatoms[48], zLog[64], zFulltext[56];   /* its tables, schema-qualified */
  char zTag[12];           /* "" for $, "sK_": its rule CTEs' names */
  struct QRuleInfo *pRi;   /* its rule groups, while another is current */
} QSrc;

/* What qcsEnter changed, for qcsLeave. */
typedef struct QSrcSave {
  int iSrc, iDefault;
} QSrcSave;

/* qcWhere groups a scope's conditions QC_WHERE_FAN to a parenthesis, and
** those groups again, QC_WHERE_LEVELS deep: SQLite parses "t1 AND t2 AND
** ..." as a tree as deep as the terms are many and refuses one deeper than
** SQLITE_LIMIT_EXPR_DEPTH (1000), so a clause list of 1000 predicates
** would fail; grouped, n terms nest about 16 * 4 + n / 16^4 deep. */
#define QC_WHERE_FAN 16
#define QC_WHERE_LEVELS 4

/* The clauses of one qcwClauses frame of the query's own scope, with which
** of them are done: the clauses still to come name the variables the rows
** so far must keep (qcCollapse). Frames nest for (and ...) at the top. */
typedef struct QLive {
  QClause *const *a;
  int n;
  const unsigned char *aDone;
  struct QLive *pUp;
} QLive;

struct QCtx {
  QComp *pC;
  QCtx *pParent;          /* enclosing scope for correlated lookups, or NULL */
  int nVisible;           /* -1: every parent variable is visible */
  const EdnValue **aVisible;
  int nVar, nVarAlloc;
  QVar *aVar;
  int *aVarHash;          /* open-addressed index+1 into aVar[0..nVarHashed)
                          ** by name, built by qcVarFind once a scope has
                          ** many variables: a lookup per clause per
                          ** variable would make compiling cubic */
  int nVarHash, nVarHashed;
  sqlite3_str *pFrom;     /* "datoms d1, datoms d2" */
  int nFrom;
  sqlite3_str *pWhere;    /* "t1 AND t2", grouped "(t1 AND ...) AND (...)" */
  int nWhere;
  int aiWhereStart[QC_WHERE_LEVELS];  /* qcWhere's open groups: where each  */
  int anWhereItems[QC_WHERE_LEVELS];  /* starts in pWhere, and its items     */
  int nPatternFrom;       /* FROM items that are data patterns */
  int bUnlinked;          /* a data pattern was not reachable by an index
                          ** from a constant, an input or an earlier
                          ** pattern: the planner orders the joins */
  int nKey, nKeyAlloc;    /* per pattern: what determines its datom */
  QKey *aKey;
  int bRecRef;            /* FROM names a recursive CTE being defined: SQLite
                          ** allows that name in no subquery, so this scope's
                          ** FROM is never copied into one (qcCopyScope) */
  int bTopRows;           /* a rule body joined into the query's own scope
                          ** (qciJoin): its FROM and WHERE name only the
                          ** statement's tables, so a CTE may read them */
  int bFixed;             /* the caller names this scope's FROM aliases
                          ** itself (a seeded rule body's m.oK): never
                          ** collapsed (qcCollapse) */
  int bNoRows;            /* a WHERE term is constant false (an empty join or
                          ** pattern): no row reaches the clauses after it */
  int bSemi;              /* the rows are only tested for being there (the
                          ** EXISTS of a rule call binding nothing): a call
                          ** may join its body into them (qciCall) */
  int nTerm, nTermAlloc;  /* the WHERE terms, for qcGuard */
  QTerm *aTerm;
  int iTerm0;             /* the first not in a gate */
  int iLastRaise;         /* the last that can fail (qcRaises), -1 none */
  int nPath;              /* qcwClauses frames open on this scope */
  int aPath[QC_PATH_MAX]; /* the clause each is compiling */
  char zGate[16];         /* the last gate's alias ("" none): a mentat_one
                          ** row holding the terms before some clause */
  int bGuardNow;          /* qcGuard guarded an expression of the clause
                          ** being compiled (qcwAt clears it) ... */
  int nGuardNest;         /* ... nesting this many guards */
  char *zGuardFirst;      /* ... the first such expression, guarded */
  int bFilterNow;         /* the clause being compiled is a predicate, a
                          ** function or a not: its terms wait for the
                          ** clauses before it that can fail (qcWhere) */
  int nTermCopied;        /* aTerm[0..n) are the terms of the scope whose
                          ** rows this one copied (qcTermsCopy) */
  int bCross;             /* a clause that can fail at run time was compiled
                          ** (qcwClauses): FROM items after it are joined
                          ** CROSS JOIN, so the tables of the clauses after
                          ** it are inner loops and cannot drop a row before
                          ** its term, evaluated at the loop of its own
                          ** tables, sees it (Datomic runs it on every row
                          ** the clauses before it give) */
};

/* State of one compilation. */
struct QComp {
  const QQuery *pQ;
  Schema *pSchema;
  const QueryOpts *pOpts;
  EdnArena *pArena;        /* the plan's arena (AST, constants) */
  char **pzErr;
  int rc;
  int nAlias;              /* d1, d2, ... unique across the statement */
  int nParam, nParamAlloc;
  QParam *aParam;
  int *aShare;             /* open-addressed set of shared constant params
                           ** (qcParamShared): 1-based indexes, 0 empty */
  int nShare, nShareSlot;
  sqlite3_str *pCte;       /* "name(cols) AS (...), ..." */
  int nCte;
  int bRecursive;
  QRuleSet rules;
  int bRules;
  struct QRuleInfo *pRi;   /* rule heads and their recursion groups */
  int nSelfRef;            /* references to the group being built */
  const QClause *pChainBase; /* the call of the chain definition being
                           ** built that reads its group's base CTE
                           ** (qcxChainFilter), or NULL */
  const QRule *pWhole;     /* the definition qcrGroup compiles (computed
                           ** whole, without the caller's arguments), for
                           ** messages; NULL elsewhere */
  const char *zGroupIn;    /* while definitions alike of the group being
                           ** built compile as one (SAME BODIES): its call
                           ** back reads "r IN (..)" (qcrJoinGroup), whose
                           ** alias goes to zGroupAlias, and zGroupArms maps
                           ** each row to its head (qcrDefinitionSelect) */
  const char *zGroupArms;
  char zGroupAlias[24];
  int nLocal;              /* > 0 while compiling into a subquery's own
                           ** WITH (qcmCall in a nested scope): no CTE
                           ** may go to the statement's list then */
  const EdnValue *pAt;     /* current clause, for error positions */
  int nArgDepth;           /* the deepest nFnDepth among the arguments of
                           ** the function being compiled */
  char *zAsOfTx;           /* SQL giving the asOf tx id (the database is read
                           ** from the log), or NULL */
  char *zSinceTx;          /* SQL giving the since tx id, or NULL; with asOf
                           ** both filter, as Datomic's (d/since (d/as-of db
                           ** t2) t1): t1 < tx <= t2 */
  int bHistory;            /* the history database: every pattern reads the
                           ** log's assertions and retractions (SPEC.md §6) */
  /* The sources (query_compile_src.c). pSchema, zAsOfTx, zSinceTx, bHistory,
  ** pRi and the table names are those of the current source aSrc[iSrc]. */
  int nSrc;
  QSrc *aSrc;
  int iSrc;                /* current source (-1 before qcsInit) */
  int iSrcDefault;         /* what a clause without a source (or with $) reads */
  const char *zDatoms, *zLog, *zFulltext;   /* the current source's tables */
  const char *zRuleTag;    /* the current source's rule CTE tag */
  const QCtx *pMain;       /* the query's own scope (its :where) */
  QLive *pLive;            /* its qcwClauses frames, innermost first */
  unsigned nPoll;          /* qcPoll's steps so far */
  int nMaxCompound;        /* SELECTs one UNION may join (0: no limit) */
  sqlite3_str *pHostFns;   /* the host functions called so far (QueryPlan.zHostFns) */
  sqlite3_int64 nText;     /* bytes of SQL text built and copied so far (qcTextBudget) */
  sqlite3_int64 nMaxText;  /* ... the most it may build (QC_TEXT_CAP or SQLite's
                           ** SQLITE_LIMIT_SQL_LENGTH, the smaller) */
  const QClause *pTopCall; /* the outermost rule call being compiled, for
                           ** qcTextBudget's message */
};

/* ---- query_compile_sql.c: errors, interrupts, limits, parameters */

/* Error at form p ("line L col C: ...") unless one is set; returns the rc. */
int qcErr(QComp *pC, const EdnValue *p, const char *zFmt, ...);
int qcNoMem(QComp *pC);
/* One step of a loop whose length the query sets: every QC_POLL_STEPS
** steps asks pOpts->xInterrupted, and when the host was interrupted stops
** the compile (rc SQLITE_INTERRUPT, "interrupted", as at run time).
** Returns the rc. */
int qcPoll(QComp *pC);
#define QC_POLL_STEPS 64
/* Refuses, naming the construct, a UNION of nSelect SELECTs past SQLite's
** SQLITE_LIMIT_COMPOUND_SELECT: zFmt and its arguments say what unions them
** and how many ("the or has %d branches"). 1 with the error set (at pAt,
** or the current clause), else 0. */
int qcCompoundLimit(QComp *pC, const EdnValue *pAt, int nSelect, const char *zFmt, ...);
/* Counts n more bytes of SQL text the compile builds or copies (a scope
** copied into each branch of a rule or an or, a body into its caller),
** called BEFORE a copy is made: calls whose branches copy the rows before
** them nest copies of copies, which grow exponentially with the nesting
** (a rule calling the next one twice, six levels deep: gigabytes). Past
** pC->nMaxText in all it refuses at once, naming the outermost rule call
** being compiled (or the current clause), instead of building a statement
** SQLite's parser could not take. The total is at least the emitted SQL's
** length and at most its length times the nesting, so a query below the
** limit compiles in time linear in it. 1 with the error set, else 0. */
int qcTextBudget(QComp *pC, sqlite3_int64 n);
#define QC_TEXT_CAP ((sqlite3_int64)16 << 20)
/* The text SQLite parses for statement zSql: SQLite copies a common table
** expression's SELECT into every place that names it while it parses, so
** a CTE named twice by the next, level after level (rules the compiler
** shares as CTEs, each definition calling the next rule), doubles the
** parse at every level although zSql stays linear. Counts each top-level
** CTE's body once per reference, transitively, in one pass over zSql
** (names as whole words outside string literals); stops counting past
** nCap. Returns the expanded size in bytes (at most nCap + 1), -1 on OOM. */
sqlite3_int64 qcExpandedText(const char *zSql, sqlite3_int64 nCap);
/* The most expanded text (qcExpandedText) a compiled statement may give
** SQLite's parser, which does not poll the host's interrupt: as much as
** the compiler itself may build (QC_TEXT_CAP). */
#define QC_EXPAND_CAP QC_TEXT_CAP
/* Is one of parameters aP[0..nP) a long the query gave, still QV_NATURAL? */
int qcParamsHaveLong(const QComp *pC, const int *aP, int nP);
/* A new parameter; returns its number (1-based) or 0 on OOM. */
int qcParam(QComp *pC, const EdnValue *pConst, int iInput, int i1, int i2,
            QConv eConv, ValueType vt);
/* A parameter for a predicate's or function's constant p, one per equal
** constant (query_compile_sql.c); returns as qcParam. */
int qcParamShared(QComp *pC, const EdnValue *p, QConv eConv, ValueType vt);

/* ---- query_compile_scope.c: FROM and WHERE, variables, terms */

/* Appends " AND term" to the scope's WHERE (grouped: QC_WHERE_FAN). zTerm
** is sqlite3_malloc'd and taken over (NULL means OOM). A term of a filter
** clause (bFilterNow) after one that can fail at run time is written
** (CASE WHEN <that one's terms> THEN term END): Datomic fails at the
** earlier clause for a row the later one would drop, so SQLite must not
** drop the row first (it tests a term at the outermost loop its tables
** allow, the later filter's maybe before the earlier clause's). */
void qcWhere(QCtx *pX, char *zTerm);
/* Empties the scope's WHERE; what is appended to pWhere directly after it
** (a copy, one term) stays outside qcWhere's groups. */
void qcWhereReset(QCtx *pX);
/* True when no row reaches the clause being compiled in pX: this scope or
** an enclosing one already holds a constant-false term. Datomic raises a
** function's or aggregate's type error for a row that reaches it, so the
** static type checks raise none there (the clause sees no values). */
int qcNoRows(const QCtx *pX);
/* Does SQL text z call a function that can fail at run time (a checked
** arithmetic, compare's comparability test, a regex, subs, a tx point)? */
int qcRaises(const char *z);
/* zExpr (taken over), an expression of the clause being compiled that can
** fail at run time, as SQL that evaluates it only on rows the terms of the
** clauses before it in clause order hold for: (CASE WHEN t1 AND ... THEN
** zExpr END), NULL where they fail (the row fails them anyway). Past
** QC_GUARD_INLINE bytes of terms, or QC_GUARD_NEST guards nested (a guard
** names the last guarded term before it), a gate holds them instead, a FROM item
** mentat_one(CASE WHEN ... THEN 1 END) gN that later guards name, so the
** guards of a chain of clauses stay linear in its length. NULL on OOM. */
char *qcGuard(QCtx *pX, char *zExpr);
/* query_compile_guard.c, for qcWhere and the scope's life: keeps a copy
** of term z as made by the current clause; a filter clause's term zTerm
** (taken over) made to wait for the failing clauses before it (see
** qcWhere); frees the kept terms and forgets the gate. */
void qcTermKeep(QCtx *pX, const char *z);
char *qcTermWait(QCtx *pX, char *zTerm);
void qcTermsClear(QCtx *pX);
/* Function result zExpr is bound once through mentat_one(zExpr) zAlias
** (qcFnBindOnce): the guarded terms holding it say so (QTerm.zOne). */
void qcTermsBoundOnce(QCtx *pX, const char *zExpr, const char *zAlias);
/* qcGuard when qcRaises(zExpr), else zExpr itself (NULL stays NULL). */
char *qcGuardRaising(QCtx *pX, char *zExpr);
/* Scope pSub copies pX's rows (FROM and WHERE text): it takes pX's terms
** and gate too, those of clauses before pX's current clause as before
** every clause of pSub, the others as after them. 0 on OOM. */
int qcTermsCopy(QCtx *pSub, const QCtx *pX);
/* pX takes over pSub's terms and gate (a body compiled on a copy of pX's
** rows, which now replace them): those pX gave back as they were, pSub's
** own as made by pX's current clause. */
void qcTermsTake(QCtx *pX, QCtx *pSub);
/* query_compile_not_or.c, for qcwClauses' order of failing clauses (a not
** holding a failing function is one). The order it keeps for a[0..n): 2 when a pattern
** of it has no constant attribute ([?e ?a ?v]: values of a type only the
** row knows, which a predicate may not take), else 1. */
int qcoClauseOrder(QClause *const *a, int n);
/* The first clause of a[] from i on, not done (aDone), that can fail at run
** time for some row and so runs in Datomic on exactly the rows the clauses
** before it give: a function that may fail (qcfMayFail), a not holding
** one, with eOrder 2 a predicate that may fail over such a value; n when
** none. */
int qcoNextFail(QClause *const *a, int n, const unsigned char *aDone, int i, int eOrder);
#define QC_GUARD_INLINE 1500
#define QC_GUARD_NEST 4
/* Adds a FROM item; zItem taken over. */
void qcFrom(QCtx *pX, char *zItem);
void qcCtxInit(QCtx *pX, QComp *pC, QCtx *pParent);
void qcCtxReset(QCtx *pX);
/* SELECT body "FROM ... WHERE ..." (or just "WHERE ...") of a scope. */
char *qcBody(QCtx *pX);
/* Looks a variable up in this scope and the visible enclosing ones. */
QVar *qcVarFind(QCtx *pX, const char *zName);
/* Adds variable zName to scope pX, unbound (zExpr NULL); NULL on OOM. */
QVar *qcVarAdd(QCtx *pX, const char *zName);
/* Binds variable zName in scope pX to SQL zExpr (taken over), or when it is
** already bound adds the equality, reconciling types. */
void qcBindVar(QCtx *pX, const char *zName, char *zExpr, ValueType vt, char *zTag, int bIntCol);
/* Types pV's lazy parameters by the typed place vt it meets; bKeepKind
** keeps a constant's kind (1 against 1.0). 1 when one kept it, 2 when a long
** stays the long given at a double place, which compares it converted. */
int qcTypeParams(QCtx *pX, QVar *pV, ValueType vt, int bKeepKind);
/* Is zName bound, or a collection of longs a place of type vt makes rows first (qcUnifyConv)? */
int qcVarValueBound(QCtx *pX, const char *zName, ValueType vt);
/* A constant as an SQL expression typed vt (VT_NONE: natural). Sets *pvt. */
char *qcConstExpr(QCtx *pX, const EdnValue *p, ValueType vt, ValueType *pvt);

/* Is p a vector a query gives (a literal, an input, ground's value) that is a
** tuple: 1 to 8 scalars or nils? Such a vector is a tuple value of its elements'
** natural types (a QV_TYPED VT_TUPLE parameter), so it compares with stored tuples
** and the tuple function's by value and type; any other collection stays JSON.
** SQLITE_NOMEM is the caller's on *pRc. */
int qcIsTupleConst(const EdnValue *p, int *pRc);
/* Is zExpr, of type VT_TUPLE, a tuple the query made (a parameter or the tuple
** function's result) rather than a stored one? Messages call it a collection. */
int qcIsMadeTuple(const char *zExpr);
/* Attribute unknown: a datom's tag <zAlias>.<zTagCol> (TAG_TUPLE for a tuple
** attribute's), its value <zAlias>.v (a fulltext rowid's text), a lookup ref's
** value zV of attribute zA as stored (a fulltext text's rowid). NULL on OOM. */
char *qcDatomTagExpr(QCtx *pX, const char *zAlias, const char *zTagCol);
char *qcDatomValueExpr(const QComp *pC, const char *zAlias);
char *qcLookupValueExpr(const QComp *pC, const char *zA, const char *zV);
/* The SQL expression and type of a bound variable or constant term;
** unbound variables are an error naming zWhat ("predicate"). For zWhat
** "function" (an argument of a function expression) a function result of
** this scope nested QC_FN_INLINE_DEPTH deep or longer than
** QC_FN_INLINE_BYTES is first moved into the FROM clause (mentat_one), so
** a chain of functions compiles to SQL linear in its length. */
char *qcTermExpr(QCtx *pX, const EdnValue *p, ValueType *pvt, char **pzTag,
                 const char *zWhat);
/* Records that variable zName was just bound by a function of the
** arguments qcTermExpr last gave (pC->nArgDepth): see QVar.nFnDepth. */
void qcFnResult(QCtx *pX, const char *zName);
/* An entity argument of built-in zFn (get-else, get-some, missing?) as SQL:
** a bound variable (an input no place typed yet is read as an entity; a
** keyword value as the ident it names), an entity id, an ident or a lookup
** ref resolved by qcLookupSql (Datomic: every entity place takes "entity
** ids, idents, or lookup refs"). Another constant, or a variable of a type
** that names no entity, is an error naming zFn. NULL on error. */
char *qcEntityExpr(QCtx *pX, const EdnValue *p, const char *zFn);
/* True when variable pV is a store column (NOT NULL in the format), so it
** is never NULL in a row: (count ?x) can be count(*). */
int qcVarNotNull(const QVar *pV);
/* May variable pV hold both longs and doubles (its type is unknown, or a
** number from a collection or relation holding both, or a function
** result)? Then a set key needs typeof() beside the value, since SQLite's
** 1 = 1.0 and Clojure's (= 1 1.0) is false. */
int qcVarMixesKinds(const QVar *pV);
/* Does bound pV, a number the query gave (bGiven), meet zExpr, a double
** attribute's value column, as edn_t converts (1 matching 1.0)? */
int qcVarConverts(const QVar *pV, const char *zExpr, ValueType vt);
/* Makes every collection input of scope pX that no pattern used a VALUES
** CTE in FROM, before clauses that need the variable bound. */
void qcMaterialize(QCtx *pX);
/* Variables a clause mentions (for ordering and or checks), into a[] up
** to nMax; returns the count (may exceed nMax: then a[] is truncated). */
int qcClauseVars(const QClause *pCl, const char **a, int nMax, int iDepth);
/* Folds each group of data patterns that shares no variable with what the
** query returns, keeps or takes into one existence check (an or-join of no
** variables), rewriting pQ->aWhere in the plan's arena before it is
** compiled (query_compile_exists.c says when and why). SQLITE_NOMEM. */
int qcxExists(QComp *pC, QQuery *pQ);
/* ---- query_compile_src.c: the sources a query reads */

/* Builds pC->aSrc from :in and the opts' sources (the errors: a source :in
** declares that opts lack, one opts give that :in does not declare, one
** declared twice) and makes $ current. Returns pC->rc. */
int qcsInit(QComp *pC);
/* Makes source k current (saving the current one's rule groups). */
void qcsUse(QComp *pC, int k);
/* Frees the sources, their asOf/since SQL and every source's rule groups. */
void qcsFree(QComp *pC);
/* The source clause pCl names: its src-var, or a function's or
** predicate's first argument when that is one; NULL for none. */
const EdnValue *qcsClauseSrc(const QClause *pCl);
/* Makes the source pCl names current (none or $: the default one), and
** the default for the clauses inside it; an undeclared source is an error
** at its symbol. Pair with qcsLeave(pC, pSave) whatever it returns. */
int qcsEnter(QComp *pC, const QClause *pCl, QSrcSave *pSave);
void qcsLeave(QComp *pC, const QSrcSave *pSave);
/* The schema of the source pCl names (for ordering heuristics; the
** current one when it names none known). */
const Schema *qcsSchemaOf(const QComp *pC, const QClause *pCl);

/* ---- query_compile_copy.c: a scope copied into a subquery, its rows named once */
/* Binds zName in pSub as variable pV of an enclosing scope: the same SQL,
** type and tag. With bShare it shares pV's still untyped input parameters
** when pSub's parent owns pV (a rule body whose rows are the caller's), so
** a typed place in pSub types them; otherwise (an or branch, a body inside
** a not) the values keep their own types and pSub only compares with them
** (a keyword still names its ident in an entity place). */
void qcCopyVar(QCtx *pSub, const char *zName, const QVar *pV, int bShare);
/* The SQL of bound pV's kind for a rule's seed or answer row (malloc'd;
** NULL on OOM): typeof(value), so 1 and 1.0 are two rows; 'given' for an
** integer the query gave (an input, ground, a constant: bGiven), which a
** double attribute's value place in the rule's body matches as 1.0 as edn_t
** converts (qcVarSeedKind); 'ident' for a keyword naming its ident
** (qcVarIdent), as the body reads it; a seed hands its own kind on. */
char *qcVarKind(const QVar *pV);
/* Does bound pV hold a keyword naming its ident's entity in an entity place
** (lazy parameters or bIdent; one a pattern bound is a value, qcBindVar)? */
int qcVarIdent(const QVar *pV);
/* Keeps the call's constant pA on variable zName of pX, a rule body's head
** (QVar.pLit): a data pattern reads it as the literal written in its place,
** as the body with the argument substituted would (a tuple converts by the
** attribute, qcwPlace; a keyword attribute types the value place). */
void qcVarLit(QCtx *pX, const char *zName, const EdnValue *pA);
/* The attribute the constant of variable pA (QVar.pLit) names in an
** attribute place ((has ?e :g/at [1 2]) over [?e ?a ?v]), else NULL. */
const Attr *qcVarLitAttr(QCtx *pX, const EdnValue *pA);
/* Is pV a rule body's head still bound to its seed column (m.sK, sN.oK)?
** Then zBuf (nBuf bytes) gets its kind column (m.skK, sN.okK): 1. */
int qcVarSeedKind(const QVar *pV, char *zBuf, int nBuf);
/* Starts pSub, a subquery that pX's FROM will hold, as a copy of pX so far
** (its FROM and WHERE text: aliases are local to the subquery), so that
** expressions of pX's variables are valid inside it. Returns 0, copying
** nothing, when pX's FROM names a recursive CTE being defined. */
int qcCopyScope(QCtx *pSub, QCtx *pX);
/* Names the rows of scope pX so far once: a CTE qsN holding every
** variable the scope binds (but bare parameters, valid anywhere), DISTINCT;
** pX then reads FROM "qsN qN" with its variables rebound to its columns.
** Clauses that copy the scope into a subquery (an or branch, a rule body
** seeded with the caller's bindings, the origins of a seeded rule) then
** copy a name, not the text of every earlier clause, so the SQL grows
** linearly with the clauses; a scope of QC_COLLAPSE_FROM FROM items is
** collapsed too, keeping each SELECT under SQLite's 64 tables. Only in a
** scope whose CTEs can be the statement's own (no enclosing scope, no
** local WITH being built, no recursive CTE in FROM, not bFixed): returns 0 there,
** changing nothing; 1 when done (or nothing to do). */
int qcCollapse(QCtx *pX);
/* qcCollapse when the scope holds more than data patterns (earlier calls,
** subqueries, function results) or QC_COLLAPSE_FROM items: a scope of
** patterns only copies cheaply and keeps its join plan. */
int qcCollapseHeavy(QCtx *pX);
/* A seeded or (or rule call of several definitions) whose branches each
** start from the rows so far would name those rows once per branch, and
** SQLite copies a CTE's whole definition into every place that names it,
** so a chain of such clauses costs branches^n to prepare. Instead the
** rows so far (named once, qcCollapse) seed a recursive CTE
** xsN(p, v.., w.., cJ, tJ, kJ..): phase 0 the rows so far, phase 1 each
** branch's rows, which read the phase-0 row they extend (the recursive
** reference, which SQLite does not copy). qcPhaseStart makes pX that
** phase-0 row (FROM "xsN xN" WHERE xN.p = 0; variables its columns) and
** returns 1, or 0 when the scope cannot name its rows (nested scopes);
** each branch copies pX (qcCopyScope, then bRecRef) and writes
** qcPhaseBranch's "SELECT 1, <carried columns>" before its columns
** (qcSetColumns, bFirst 0); qcPhaseEnd(zBranches: "SELECT ... UNION
** SELECT ...", abCol[0..nCol): which column numbers j the branches
** wrote) adds the CTE and leaves pX reading its phase-1 rows, the
** branch columns as pPh->zAlias.cJ/.tJ. qcPhaseEnd also frees pPh on
** error (zBranches NULL). */
typedef struct QPhase {
  int iN;
  char *zSeed;             /* "SELECT 0, <vars>" */
  char *zSeedBody;         /* its " FROM ... WHERE ..." */
  sqlite3_str *pCols;      /* the CTE's column names */
  sqlite3_str *pCarry;     /* ", xN.v0, xN.w0, ...": the carried columns */
  char zAlias[24];
} QPhase;
/* Can clauses a[0..n) be a branch of a phase CTE: no rule call, or or
** or-join at any depth (they copy their scope into subqueries, which a
** recursive CTE's own rows may not be)? */
int qcPhaseFits(QClause *const *a, int n, int iDepth);
int qcPhaseStart(QCtx *pX, QPhase *pPh);
void qcPhaseBranch(const QPhase *pPh, sqlite3_str *pOut);
void qcPhaseEnd(QCtx *pX, QPhase *pPh, const char *zBranches, const unsigned char *abCol,
                int nCol);
#define QC_COLLAPSE_FROM 40
/* SQLite's most tables in one join (sqlite3WhereBegin: its Bitmask). */
#define QC_MAX_JOIN 64

/* ---- query_compile_sql.c: types, tags, set keys, lookup refs, the datoms read, pulls */

/* Value type class for comparisons: 1 numbers, 2 strings, 3 instants,
** 4 keywords, 5 booleans, 6 uuids, 0 other. */
int qcTypeClass(ValueType vt);
/* Does Clojure's compare order values of the known types a and b (not
** VT_NONE)? Numbers and entity ids with each other, any other type with
** itself only, tuples (and the collections a query makes) with each other;
** never bytes (a Java byte[] is not Comparable). */
int qcComparable(ValueType a, ValueType b);
/* The error that constant p names no entity: "<zFn>: "x" is not an
** entity id, ident or lookup ref" (no "<zFn>: " when zFn is NULL), at p.
** Returns pC->rc. */
int qcNotEntity(QComp *pC, const EdnValue *p, const char *zFn);
/* A type's name in messages: ":db.type/string", or "collection" for the
** JSON values queries make. */
const char *qcVtName(ValueType vt);
/* "line L col C: zWhat" for form p (0, 0 without one), as an SQL string
** literal: the place argument of the store functions that fail at run
** time (mentat_add, _subs, _re_find, _sum, _num ...). NULL on OOM. */
char *qcPlaceSql(const EdnValue *p, const char *zWhat);
/* zA, argument iArg (from 1) of built-in zFn whose type only the row knows
** (tag expression zTag, or NULL), checked when the row comes to be of kind
** eKind (QF_ARG_* of query_funcs.h): mentat_arg(zA, zTag, eKind, 'line L
** col C: zFn: argument iArg', dN.e ...), which is zA, or the error Clojure's
** ClassCastException is, at pForm; the trailing arguments name pX's data
** patterns, so the check runs after their joins. NULL on OOM. */
char *qcArgCheckSql(const QCtx *pX, const EdnValue *pForm, const char *zFn, int iArg,
                    const char *zA, const char *zTag, int eKind);
/* mentat_pattern_eq(zTagA, zTagB, 'line L col C: zFn', dN.e ...): 1, or,
** when both tags say a regular expression pattern, the error that = has no
** answer for two of them (Clojure compares Patterns by identity, which a
** pattern's text cannot tell), after pX's joins as qcArgCheckSql's. NULL on
** OOM. */
char *qcPatternEqSql(const QCtx *pX, const EdnValue *pForm, const char *zFn, const char *zTagA,
                     const char *zTagB);
/* " COLLATE mentat_kw" for type vt that may hold keywords (VT_KEYWORD, VT_NONE), else "":
** min, max, :order and compare order keywords as Clojure's compare (query_funcs.c). */
const char *qcKwCollate(ValueType vt);
/* min's, max's and :order's collation for type vt: qcKwCollate's, mentat_utf16 for strings. */
const char *qcOrderCollate(ValueType vt);
/* zExpr ordered as Clojure's compare orders uuids (a new string; see query_compile_sql.c). */
char *qcUuidOrd(const char *zExpr, ValueType vt, const char *zTag);
/* One :order key's ORDER BY term(s) on pSql (query_compile_agg.c). SQLITE_NOMEM or SQLITE_OK. */
int qcOrderTerm(sqlite3_str *pSql, int bFirst, const char *zExpr, ValueType vt, const char *zTag, int bDesc);
/* The tag SQL for a variable (its tag expression or its static tag). */
char *qcVarTag(const QVar *pV);
/* "tag zTag holds a value of static type vt" (a long or a ref meets both). */
char *qcTagIs(const char *zTag, ValueType vt);
/* "tags A and B may hold equal values": one tag, or a ref and a long (an entity id). */
char *qcTagsMatch(const char *zTagA, const char *zTagB);
/* Are zA, zB (of vtA, vtB) collections = never equates? mB: zB's QVar.mColl, or 0. */
int qcCollKindsDiffer(const QCtx *pX, const char *zA, ValueType vtA, const char *zB, ValueType vtB, int mB);
/* = of a seq of unknown type and a list literal's JSON, or NULL: query_compile_sql.c. */
char *qcSeqJsonEq(const QCtx *pX, const char *zA, ValueType vtA, const char *zTagA, const char *zB, ValueType vtB, const char *zTagB, const char *zOp);
/* Rule call pCl: which variable arguments are free (before), then marks those a rule binds by re-seq. */
void qcSeqCall(QCtx *pX, const QClause *pCl, unsigned char *abFree, int bAfter);
/* An or branch's or rule definition's pV handed on as a union's column: its bSeq bits; the
** kinds of collection it may be (1 a vector, 2 a set, 4 a map) ORed into *pmColl. */
int qcSeqBits(const QCtx *pX, const QVar *pV, unsigned char *pmColl);
/* Tag SQL zTag as part of a set key (DISTINCT, UNION, GROUP BY): a ref's tag reads as a
** long's (a ref value is its entity id, a long, in Datomic), and with the storage class
** beside it (typeof: 1 against 1.0) the key is Clojure's =. qcVarSetTag: of a variable. */
char *qcSetTag(const char *zTag);
char *qcVarSetTag(const QVar *pV);
/* Writes variable pV as branch column j of a UNION whose set key is
** Clojure's = ("<expr> AS cJ, <set tag> AS tJ, typeof(<expr>) AS kJ": a ref
** and a long of one number one row, 1 and 1.0 two), a ", " first unless
** bFirst, and merges pV's static type into *pVt ((ValueType)-1: none yet;
** VT_NONE once branches differ). OOM is recorded in pC. Used by or
** (query_compile_not_or.c) and rule definitions (query_compile_rules.c). */
void qcSetColumns(QComp *pC, sqlite3_str *pOut, int bFirst, int j, const QVar *pV,
                  ValueType *pVt);
/* Is p a lookup ref [:attr value] (by shape only)? */
int qcIsLookupRef(const EdnValue *p);
/* The entity whose attribute zA has value zV with tag zTag (three SQL
** expressions), as a scalar subquery (NULL when none), in the database the
** query reads: the current datoms, as of or since the opts' tx (qcView;
** SPEC.md §6: lookup refs resolve in the database the query sees; on the
** history database, in that time's database without history). NULL on OOM. */
char *qcLookupSql(QComp *pC, const char *zA, const char *zV, const char *zTag);
/* Lookup ref constant pRef as SQL (qcLookupSql); "NULL" when its
** attribute is unknown; not :db/unique: an error at pRef. NULL on error. */
char *qcLookupConst(QComp *pC, const EdnValue *pRef);
/* Is p a lookup ref whose attribute is a known :db/unique one (where a
** place may hold a value or an entity, as a rule argument: a vector naming
** no such attribute stays a tuple)? */
int qcIsEntityLookup(QComp *pC, const EdnValue *p);
/* The lookup ref constant p as SQL (qcLookupSql), "NULL" when its
** attribute is unknown; not :db/unique: an error at p. NULL on error. */
char *qcEntityLookupSql(QComp *pC, const EdnValue *p);
/* The entity an ident names in the current source, as an SQL scalar
** subquery (NULL when none): SQL zKw is a keyword's text. NULL on OOM. */
char *qcIdentSql(const QComp *pC, const char *zKw);
/* Does pAttr have a covering per-attribute (a, v, e) index the compiled
** SQL reaches by stating `dN.a = <a>`: store_tune.c's idx_mentat_avet_<a>
** (Attr.bValueIndex) or the format's idx_auto_avet_<a> (unique, or an
** indexed ref; not fulltext)? */
int qcAttrValueIndexed(const Attr *pAttr);
/* The datoms of the database the query reads (SPEC.md §6), as table alias
** zAlias: *pzTable is the table ("datoms" or "timelined_transactions", with
** the datoms' column names e, a, v, tx, value_type_tag) and the result the
** condition on zAlias that selects them ("" when none; sqlite3_malloc'd,
** NULL on OOM). Current: datoms; since T: datoms with tx > T; as of T: the
** log's assertions up to T not retracted by T; history: every log row,
** within asOf/since. Patterns and the built-ins that read datoms use it. */
char *qcView(QComp *pC, const char *zAlias, const char **pzTable);
/* Makes find column pCol the pull of element pE after checking its pattern
** (a bad one fails the compile, before any row); on error pC->rc, *pC->pzErr. */
int qcPullColumn(QComp *pC, const QFindElem *pE, QPlanCol *pCol);
/* The attribute a keyword argument of zFn names, NULL when unknown (no
** datoms; another form an error); qcReverseAttr: the ref attribute of :ns/_x. */
const Attr *qcAttrArg(QCtx *pX, const EdnValue *p, const char *zFn);
const Attr *qcReverseAttr(QCtx *pX, const EdnValue *p);
/* "SELECT zSel FROM <the datoms the query reads> g WHERE g.e = zE AND
** g.a = a" for built-ins that read one entity's attribute; an error naming
** zFn on the history database. NULL after an error. */
char *qcEntityAttrSql(QCtx *pX, const EdnValue *pAt, const char *zFn, const char *zSel,
                      const char *zE, sqlite3_int64 a);
/* Arguments of pCl without the leading source "$". */
void qcSkipSrc(const QClause *pCl, const EdnValue *const **paArg, int *pnArg);

/* ---- query_compile_where.c: a clause list into a scope, data patterns, clause variables */

/* Compiles clauses into scope pX (binding ones first, then filters). */
int qcwClauses(QCtx *pX, QClause *const *a, int n, int iDepth);
/* Can clauses a[0..n) (a rule body, an or branch) run without the
** caller's bindings of azVar and be joined on them after: patterns in a[]
** bind every one, and other clauses read them only as arguments of
** functions and predicates (which run after the patterns)? */
int qcwClausesUnseeded(QClause *const *a, int n, const char *const *azVar, int nVar);
/* True when the rows of scope pX are distinct over the variables azVar
** without DISTINCT: every FROM item is a data pattern whose datom (QKey) is
** fixed by constants, azVar, and what those determine through the schema
** (cardinality one, uniqueness). */
int qcwRowsUnique(const QCtx *pX, const char *const *azVar, int nVar);

/* ---- query_compile_bind.c: binding forms */

/* Binds binding form pB to value pVal: from input iInput, or from the
** constant pVal when iInput < 0 (ground). zWhat names the source in errors
** ("input 2", "ground"). */
int qcbBind(QCtx *pX, const QBinding *pB, const EdnValue *pVal, int iInput,
            const char *zWhat);
/* "[?a _ ?c]": tuple binding pB as written (sqlite3_malloc'd; NULL on OOM). */
char *qcbTupleText(const QBinding *pB);
/* Requires of a function's result, a collection of zCount elements (SQL,
** taken over; NULL for a nil result, -1 for a value that is no
** collection), that it fills tuple binding pB of clause pCl: a WHERE term
** (mentat_fill, guarded as a failing function is) that is an error naming
** the clause for a shorter one, as DataScript's in->rel raises "Not enough
** elements in a collection ... to bind tuple ..."; a longer one binds its
** first elements. */
void qcbFill(QCtx *pX, const QClause *pCl, const QBinding *pB, char *zCount);

/* ---- query_compile_fn.c: function and predicate clauses, each compiled by
** its built-in's row of the table of built-ins there (Datomic's :where
** functions and the Clojure ones it lets a query call); the rows' compile
** hooks are in query_compile_pred.c, _value.c and _fn.c */

/* What a built-in is in a clause. */
typedef enum QcfKind {
  QCF_PRED = 1,   /* a condition: [(f ...)] filters, [(f ...) ?b] binds its truth */
  QCF_VALUE,      /* an expression: [(f ...) ?x] binds it, [(f ...)] holds unless nil/false */
  QCF_CLAUSE      /* a function clause of its own, which binds itself; no predicate */
} QcfKind;

/* What each argument must be. A place of known type is checked when the
** query compiles; one of unknown type gives NULL at run time (binds
** nothing) unless it holds such a value, as Clojure throws a
** ClassCastException for the others. */
typedef enum QcfArg {
  QCF_ARG_ANY = 0,
  QCF_ARG_NUM,    /* a number or an entity id */
  QCF_ARG_STR,    /* a string */
  QCF_ARG_STR1,   /* the first a string, the others numbers (subs) */
  QCF_ARG_RE,     /* the first a pattern (re-pattern's), the others strings */
  QCF_ARG_RESTR   /* a string or a pattern (re-pattern) */
} QcfArg;

/* What a regular expression's JSON result (QVT_JSON) holds, for the
** binding forms that take it apart: its scalars are strings (a group
** vector or a match never holds a keyword, whatever its text), so they are
** not read by JSON's guess. QCF_RE_STRS: strings and nils (re-seq without
** groups, a group vector longer than a tuple); QCF_RE_VECS: group vectors
** of nReElems strings each (re-seq with groups: each one a tuple when it
** fits one); QCF_RE_ANY: either (re-seq of a pattern known at run time). */
enum { QCF_RE_NONE = 0, QCF_RE_STRS, QCF_RE_VECS, QCF_RE_ANY };

/* A compiled built-in call: its SQL (sqlite3_malloc'd), static type and,
** when that is VT_NONE, the SQL of its tag (or NULL); eRe/nReElems for a
** regular expression's JSON (QCF_RE_*, else QCF_RE_NONE). */
typedef struct QcfOut {
  char *zSql;
  ValueType vt;
  char *zTag;
  int eRe;
  int nReElems;
} QcfOut;

typedef struct QcfBuiltin QcfBuiltin;

/* A compile hook: the SQL of clause pCl, a call of built-in pFn whose
** argument count the caller checked (unless pFn->nMin < 0), into *pOut
** (QCF_PRED: an SQL condition; QCF_VALUE: an expression; QCF_CLAUSE: nothing,
** the hook binds the clause's variables itself). Returns the compile's rc;
** on error pOut->zSql stays NULL and the compiler holds the message. */
typedef int (*QcfCompile)(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);

struct QcfBuiltin {
  const char *zName;       /* as a clause writes it: "re-find", "clojure.string/blank?" */
  QcfKind eKind;
  signed char nMin, nMax;  /* argument count (nMax -1: no limit); nMin -1: the hook checks */
  QcfArg eArg;              /* what every argument must be */
  ValueType vtOut;         /* result type; VT_NONE: it follows the arguments */
  QcfCompile xCompile;
  const char *zSql;        /* for the hook: an SQL operator or a template, one %s an argument */
  const char *zFunc;       /* the SQL function (ext/qfunc) the SQL calls at run time, or NULL */
};

/* The most arguments a variadic built-in takes. */
#define QCF_MAX_ARGS 16

/* The compile hooks the table names, by file: query_compile_pred.c (qcp),
** query_compile_value.c (qcv), query_compile_fn.c (qcf). */
int qcpCompare(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcpEqual(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcpNotEqual(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcpDiffer(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcpMissing(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcpFormat(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcpNumber(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcpInteger(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcpBoolean(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);

int qcvArith(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvArithOp(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvArith1(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvMinMax(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvCompare(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvCount(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvStr(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvCall(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvSubs(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvIdentity(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvReMatch(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvRePattern(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcvReSeq(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
/* Binds a regular expression's JSON result zDoc (taken over; of kind
** eKind, QCF_RE_*, its group vectors of nElems strings) through the
** tuple, collection or relation binding of clause pCl (a short tuple an error, qcbFill): strings stay strings (JSON's
** guess would read ":x" as a keyword), group vectors become tuples. */
int qcvBindRegex(QCtx *pX, const QClause *pCl, char *zDoc, int eKind, int nElems);
int qcvTuple(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);

int qcfGround(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcfGetElse(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcfGetSome(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcfUntuple(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcfFulltext(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcfTxIds(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
int qcfTxData(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);
/* Binds a function's result (SQL zExpr of type vt, tag zTag when vt is
** VT_NONE; both taken over) through clause pCl's binding form: a nil
** result binds nothing (also for `_`, which still evaluates it), a tuple
** form a collection that fills it (qcbFill). For the clauses that bind
** their results themselves. */
int qcfBindResult(QCtx *pX, const QClause *pCl, char *zExpr, ValueType vt, char *zTag);

/* ---- query_compile_type.c: (type x), a keyword naming the value's class
** (:db.type/long, :db.type/tuple, :clojure.lang/PersistentHashSet ...) */
int qctType(QCtx *pX, const QClause *pCl, const QcfBuiltin *pFn, QcfOut *pOut);

int qcfPredicate(QCtx *pX, const QClause *pCl);
/* May function zName fail at run time for some arguments (a built-in
** that checks them per row: one taking numbers or strings, compare and
** the orderings, count, the log functions; or a host's function)? */
int qcfMayFail(const char *zName);
int qcfFunction(QCtx *pX, const QClause *pCl);
/* ---- query_compile_host.c: the host's own SQL functions */

/* A function clause no built-in has, on a host store: a call of the host
** connection's SQL function of that name. Returns 0
** when it is not one (the caller reports "unknown function"); otherwise 1
** with *pzExpr the SQL (NULL on error, in pC->rc): for bPredicate the
** WHERE term, else the value with *pzTag its type tag. */
int qchCall(QCtx *pX, const QClause *pCl, int bPredicate, char **pzExpr, char **pzTag);

/* ---- query_compile_not_or.c: not and or */

int qcoNot(QCtx *pX, const QClause *pCl, int iDepth);
int qcoOr(QCtx *pX, const QClause *pCl, int iDepth);
/* Are or-join pCl's required variables ([[?e] ...]) bound in pX? qcwClauses
** defers the clause until they are (Datomic pushes it down), and qcoOr
** reports the ones still unbound. */
int qcoOrReady(QCtx *pX, const QClause *pCl);

/* ---- query_compile_rules.c: rule calls */

int qcrCall(QCtx *pX, const QClause *pCl, int iDepth);
/* Are rule call pCl's arguments in required places ([?a] in the head)
** bound in pX? 1 too when qcrCall will report another error. */
int qcrReady(QCtx *pX, const QClause *pCl);
/* Could binding zVar before rule call pCl seed it (zVar is an argument in
** a place the recursion changes, or the call is not one the magic rewrite
** takes)? Used to order patterns around rule calls; 1 when unsure. */
int qcrSeedPlace(QCtx *pX, const QClause *pCl, const char *zVar);
/* Frees pC->pRi, the rule set's heads and groups (query_compile_rules_ctx.c). */
void qcxFree(QComp *pC);

/* ---- query_compile_agg.c: aggregate find specs */

/* wraps zInner (SELECT DISTINCT ...) into the
** aggregate query, filling the plan's columns. */
int qcaAggregate(QComp *pC, QCtx *pX, QueryPlan *pPlan, sqlite3_str *pSql);

#endif /* MENTAT_QUERY_COMPILE_SCOPE_H */
