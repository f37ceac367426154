/*
** query_plan.c — what a compiled plan owns and how it is freed, and the
** one rule the compiler and the binder (query_run.c) must read an input
** by alike: which input vectors are lookup refs. Calls the schema only.
*/
#include "query_plan.h"

void qPlanFree(QueryPlan *p) {
  if (p == NULL) return;
  sqlite3_finalize(p->pStmt);
  sqlite3_free(p->zSql);
  sqlite3_free(p->zKey);
  sqlite3_free(p->zHostFns);
  sqlite3_free(p->aParam);
  ednArenaReset(&p->arena);
  sqlite3_free(p);
}

int qPlanLookupRef(const Schema *pSchema, const EdnValue *p) {
  const Attr *pA;
  if (p->type != EDN_VECTOR || p->u.c.n != 2 || p->u.c.a[0]->type != EDN_KEYWORD) return 0;
  if (p->u.c.a[1]->type != EDN_KEYWORD) return 1;
  pA = schemaAttrByIdent(pSchema, p->u.c.a[0]->u.s.z, p->u.c.a[0]->u.s.n);
  return pA != NULL && pA->eUnique != UNIQUE_NONE;
}
