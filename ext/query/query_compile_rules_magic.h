/*
** query_compile_rules_magic.h — the seeded rewrite of recursive rule calls
** (query_compile_rules_magic.c, qcm), for the rule-call driver
** (query_compile_rules.c): a call whose arguments bind places the recursion
** passes through reads only the rows those values reach.
*/
#ifndef MENTAT_QUERY_COMPILE_RULES_MAGIC_H
#define MENTAT_QUERY_COMPILE_RULES_MAGIC_H

#include "query_compile_rules_ctx.h"

/* Classifies head h for the rewrite. Returns 0 when it does not fit (other
** heads in its recursion group, the transitive form, several or nested self
** calls, no recursive or no base definition); else 1, with aePlace[j] = 1
** for the places every recursive definition passes through and 0 for the
** places the recursion changes. abInv (when not NULL) gets 1 for the
** places of aePlace 1 that some recursive definition reads besides
** handing them on (qcmInvariantPlace): the seeds must carry the caller's
** value there, so the rewrite takes a call only where it binds them. */
int qcmShape(QComp *pC, int h, unsigned char *aePlace, unsigned char *abInv);
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

#endif /* MENTAT_QUERY_COMPILE_RULES_MAGIC_H */
