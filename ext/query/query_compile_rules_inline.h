/*
** query_compile_rules_inline.h — rule calls compiled into the caller's
** scope (query_compile_rules_inline.c, qci), for the rule-call driver
** (query_compile_rules.c).
*/
#ifndef MENTAT_QUERY_COMPILE_RULES_INLINE_H
#define MENTAT_QUERY_COMPILE_RULES_INLINE_H

#include "query_compile_rules_ctx.h"

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

#endif /* MENTAT_QUERY_COMPILE_RULES_INLINE_H */
