/*
** query_spill.h — setting a run's rest aside (query_spill.c): the part
** the runner (query_run.c) calls. qSpillRest itself is public (query.h).
*/
#ifndef MENTAT_QUERY_SPILL_H
#define MENTAT_QUERY_SPILL_H

#include "query_run_context.h"

/* The next row of a run that was set aside (p->pSpillDb set): from the
** copy, then, after a partial copy, from the store statement again.
** SQLITE_ROW, SQLITE_DONE or an error of the copy or the store. */
int qSpillStep(QueryRun *p);

/* Frees what the spill holds (the copy, its reader); p->pStmt is the
** plan's statement again. No-op when p was never set aside. */
void qSpillClose(QueryRun *p);

#endif /* MENTAT_QUERY_SPILL_H */
