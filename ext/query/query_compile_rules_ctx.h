/*
** query_compile_rules_ctx.h — the rule calls' context: what the three rule
** compilers share. They are query_compile_rules.c (qcr: the whole-closure
** CTE of a recursion group and the choice per call; its entry points, which
** the clause list calls, in query_compile_scope.h),
** query_compile_rules_inline.c (qci: a call compiled into the caller's
** scope) and query_compile_rules_magic.c (qcm: the seeded rewrite); qcr
** calls qci and qcm, which do not call it. Like the other sub-compilers
** they compile bodies with the clause list (qcwClauses), which calls qcr
** back: a rule body is clauses, a clause may call a rule. Here: the rule
** set's heads and recursion groups (QRuleInfo, pC->pRi) and the questions
** asked of them (query_compile_rules_ctx.c, qcx, which calls only the scope
** context), and the entry points of qci and qcm.
*/
#ifndef MENTAT_QUERY_COMPILE_RULES_CTX_H
#define MENTAT_QUERY_COMPILE_RULES_CTX_H

#include "query_compile_scope.h"

/* Rules are grouped by head (name and arity). Heads that call each other
** (directly or not) form a recursion group; each group is one CTE
** `rulesK(r, c0.., t0..)`, recursive when a body calls its own group.
** Groups are emitted before the groups that call them, so a body may call
** other groups any number of times, but SQLite lets a recursive SELECT name
** its own CTE only once: a body that calls its own group twice (non-linear
** recursion) is refused with a clear error, never run — except the
** transitive closure (r ?a ?c) (r ?c ?b), rewritten to its linear form. */
typedef struct QRuleHead {
  const char *zName;
  int nArity;
  int iGroup;
  int nCols;              /* widest head in the group (on the group's first) */
  unsigned char eState;   /* 0 not emitted, 1 building, 2 emitted */
  int iInst;              /* > 0 while an instance rulesi<iInst> of the
                          ** group is built (qcrGroupAs): the bodies' calls
                          ** back into the group name it */
  int nInline;            /* qcxShareMerge: the size of its inlined expansion */
  unsigned char eShare;   /* qcxShareMerge: 0 not known, 2 needs the caller's
                          ** bindings, 3 being worked out, 4 needs none */
  unsigned char bShared;  /* qcxShareMerge: computed once as its group's CTE, which
                          ** every call reads, never inlined into the calls */
} QRuleHead;

typedef struct QRuleInfo {
  int nHead;
  QRuleHead *aHead;
  int *aiHeadOf;          /* per rule definition: its head */
} QRuleInfo;

/* ---- query_compile_rules_ctx.c */
/* Builds pC->pRi from pC->rules: the heads, their recursion groups, and an
** or calling back into its recursion split into definitions of its own.
** Returns pC->rc (an error is the user's: recursion through negation). */
int qcxPrepare(QComp *pC);
/* The head named zName of arity nArity, -1 for none (*pbArity, when not
** NULL, gets 1 when the name exists with another arity). */
int qcxHeadFind(const QRuleInfo *pRi, const char *zName, int nArity, int *pbArity);
/* A transitive-closure definition [(r ?a ?b) (r ?a ?c) (r ?c ?b)] (in
** either clause order) in a group of one binary head: non-linear, but its
** fixpoint equals the linear [(r ?a ?b) (base ?a ?c) (r ?c ?b)] where base
** is r's non-recursive definitions, which SQLite can iterate. */
int qcxIsChain(const QRuleInfo *pRi, int g, const QRule *pR);
/* ... and the places the chain runs through. */
/* A definition of a group of one head that calls it twice as a chain,
** [(r ?a ?b) (r ?a ?c) (r ?c ?b) clause...], with other clauses beside.
** Its fixpoint equals a linear one where one call reads the base (the
** non-recursive definitions) when every condition the other clauses make
** (clauses joined by variables of their own) reads at most one of ?a, ?c,
** ?b (places both calls hand on unchanged are the same in every step), and
** not ?a and ?b both: with a condition on ?b every derivation's last step
** ends at ?b, so (base ?a ?c) (r ?c ?b) derives the same pairs (a split of
** a path needs ?b's condition at every right end, the right-linear order
** only at the last; ?c's condition at every inner node in both); on ?a,
** (r ?a ?c) (base ?c ?b) likewise. Returns 0 when pR is no such chain, 1
** when it is and no condition reads ?a or ?b, 4 when one does (it is sound
** only as the group's one such definition), *piBase then the index of the
** call that reads the base; 2 when a condition relates two of ?a ?c ?b, 3
** when conditions read ?a and ?b, *pzA and *pzB then naming them. */
int qcxChainFilter(const QRuleInfo *pRi, int g, const QRule *pR, int *piBase,
                   const char **pzA, const char **pzB);
int qcxChainPlaces(const QRuleInfo *pRi, int g, const QRule *pR, int *pi0, int *pi1);
/* Does clause list a[0..n) call head h (at any depth)? */
int qcxCallsHead(const QRuleInfo *pRi, QClause *const *a, int n, int h, int iDepth);
/* The index of the one top-level self call of definition pR, -1 for none,
** -2 when the shape does not fit (several, or one nested in not/or). */
int qcxSelfCall(const QRuleInfo *pRi, const QRule *pR, int h);
/* The text that decides whether two definitions of group g compile alike
** but for their heads (their clauses as written, a call into the group
** without its name); NULL when they may not be merged. sqlite3_free it. */
char *qcxDefKey(const QRuleInfo *pRi, const QRule *pR, int g);
/* SAME BODIES: aPlan[i] per definition of group g, 0 compiled alone, 1
** the first of definitions alike (qcxDefKey), 2 one of the others, compiled
** with it. In the group's own CTE (qcrGroupAs, bSeeds 0) only definitions
** that call the group once at the top, each a head none of the others
** calls; in the magic-set seeds (bSeeds 1) every definition, those that
** call the group each of a head none of the others has. *pazKey the texts
** (free each and the array). NULL on OOM (recorded). */
unsigned char *qcxMergePlan(QComp *pC, int g, char ***pazKey, int bSeeds);
/* For plan leader i: *pzIn "IN (callees..)" (its call back into the group
** reads those heads' rows) and *pzArms " WHEN callee THEN head .." (each
** row's own head, CASE r.r ...). sqlite3_free both. */
int qcxMergeArms(QComp *pC, int g, int i, char *const *azKey, char **pzIn, char **pzArms);
/* Marks head variable zName of a rule body as a constant argument or a
** seed (QVar.bIdent): a keyword it holds names its ident's entity where
** the body puts it in an entity place (a seed's only when its kind says
** 'ident'; a caller's variable is copied with its own reading instead). */
void qcxMarkArg(QCtx *pSub, const char *zName);
/* A constant argument of a rule call as SQL: a lookup ref names its entity
** (resolved in the database the query reads; *pvt VT_REF), any other
** constant is itself. NULL on error. */
char *qcxConst(QCtx *pX, const EdnValue *pA, ValueType *pvt);
/* Joins argument i of a call to its answer columns <zAlias>.c<i>/.t<i>. */
void qcxArgWhere(QCtx *pX, const EdnValue *pA, const char *zAlias, int i);
/* Is place j of head h required ([?a] in the head of any definition)? *ppR
** gets that definition. */
int qcxReqPlace(QComp *pC, int h, int j, const QRule **ppR);
/* Is argument pA bound at the call: a constant, or a variable pX binds? */
int qcxArgBound(QCtx *pX, const EdnValue *pA);
/* Appends the variables of form p to az[0..*pn) (at most QCX_MAXV, each
** once); *pbOver gets 1 when there are more. */
#define QCX_MAXV 64
void qcxFormVars(const EdnValue *p, const char **az, int *pn, int *pbOver, int iDepth);


/* ---- query_compile_rules_inline.c: rule calls compiled into the caller's scope */

/* Is head h compiled into each call (qciCall): a recursion group of
** its own that it does not call back into? */
int qciHead(QComp *pC, int h);
/* Compiles call pCl of the non-recursive head h in the caller's scope, as
** Datomic evaluates a rule: with the bindings the caller has passed in
** (its bound arguments and constants pre-bind the head's variables), so
** the body's functions and predicates see them. The definitions are the
** branches of an or-join on the arguments: a correlated EXISTS when every
** argument is bound, else a UNION derived table of the free arguments (and
** the bound ones, each branch then starting from a copy of the caller's
** scope). Returns 1 when compiled (or failed: pC->rc), 0 when the call
** keeps the rule's CTE: bound variables the derived table cannot see
** (qcCopyScope), or a collection input not yet in FROM. */
int qciCall(QCtx *pX, const QClause *pCl, int h, int iDepth);

/* ---- query_compile_rules_magic.c: the seeded rewrite of recursive rule calls
** (a call whose arguments bind places the recursion passes through reads
** only the rows those values reach) */

/* Classifies head h for the rewrite, over every definition of its
** recursion group. Returns 0 when it does not fit (heads of other arities
** in the group, the transitive form, several or nested calls into the
** group, no recursive or no base definition); else 1, with aePlace[j] = 1
** for the places every recursive definition passes through and 0 for the
** places the recursion changes; 2 the same when the recursive definitions
** do not all change the same places (only a call that binds every changing
** place may take the rewrite then). abInv (when not NULL) gets 1 for the
** places of aePlace 1 that some recursive definition reads besides
** handing them on (qcmInvariantPlace): the seeds must carry the caller's
** value there, so the rewrite takes a call only where it binds them. */
int qcmShape(QComp *pC, int h, unsigned char *aePlace, unsigned char *abInv);
/* Is argument pA a tuple literal (not a lookup ref) or a keyword constant?
** Handed on unchanged through a recursive rule it is bound in every body
** directly (abDirect), where each data pattern reads it as the literal
** written there (QVar.pLit: rules are substitution): a tuple converted by
** its attribute, which a seed would hold of natural types only, as an
** input's tuple (README, Decisions), and a keyword in the attribute place
** naming the attribute whose value type the value place then has. */
int qcmDirectLit(QComp *pC, const EdnValue *pA);
/* "SELECT DISTINCT <bound values>, <tag, storage class>.. FROM <the
** scope's rows>" of call pCl's places abBound into pOut (without the
** scope's FROM and WHERE when bNoScope: constants and inputs only). An
** integer, which may be an entity id, gets both readings (abAmb[i] = 1). */
void qcmOrigins(QCtx *pX, const QClause *pCl, const unsigned char *abBound,
                unsigned char *abAmb, sqlite3_str *pOut, int bNoScope);
/* The call pCl of head h with the places abBound seeded: from the caller's
** rows (bCaller 1 or 2), from the rule's bodies (0), or from the bodies
** joined to the caller's rows (3 or 4; abDirect: places bound to the call's
** constant in every body). Emits the origins, seeds and answers CTEs of the
** file comment, then joins the answers. With bCaller 2 or 4 the call is in
** a nested scope (a not/or or rule body), whose
** rows only a subquery there sees: the CTEs are that subquery's own WITH,
** their origins read from a copy of the scope's FROM and WHERE (correlated
** with the enclosing scopes, which SQLite allows in a subquery's WITH). */
int qcmCall(QCtx *pX, const QClause *pCl, int h, const unsigned char *abBound,
            const unsigned char *abDirect, int bCaller, int iDepth);

#endif /* MENTAT_QUERY_COMPILE_RULES_CTX_H */
