/*
** query_run_pull.c — the pulls of a run's current row: the entity a pull
** column's value names and its pull map (Datomic's (pull ?e pattern) in
** :find), for the runner's columns (query_run.c) and the spill's copies
** (query_spill.c).
**
** Takes a QueryRun on a row (query_run_context.h); gives JSON. Resolves the run's
** as-of/since instant once, inside the query's read transaction, and calls
** the pull stage with the connection's pull statements.
*/
#include "query_run_context.h"

int qRunColTag(const QueryRun *p, const QPlanCol *pCol) {
  if (pCol->iTagCol >= 0) {
    /* One column_* call (each takes the connection's mutex: qRunColumnJson). */
    sqlite3_value *pTag = sqlite3_column_value(p->pStmt, pCol->iTagCol);
    if (sqlite3_value_type(pTag) == SQLITE_NULL) return Q_TAG_UNKNOWN;
    return sqlite3_value_int(pTag);
  }
  if (pCol->vt == QVT_JSON) return TAG_JSON;
  if (pCol->vt == VT_NONE) return Q_TAG_UNKNOWN;
  return vtOutTag(pCol->vt);
}

/* The entity that the value in pull column pCol names, as Datomic's pull
** takes "entity ids, idents, or lookup refs" (lookup refs are resolved by
** the SQL): a ref or a long is the id, a keyword the entity whose ident it
** is (*pbNone when there is none: the pull is nil). A value of another type
** is an error naming the binding. */
static int qRunPullEntity(QueryRun *p, const QPlanCol *pCol, sqlite3_int64 *pE, int *pbNone,
                       char **pzErr) {
  sqlite3_value *pV = sqlite3_column_value(p->pStmt, pCol->iCol);
  int tag = qRunColTag(p, pCol), eType = sqlite3_value_type(pV);
  const EdnValue *pVar = pCol->pPullVar;
  const char *zType;
  *pbNone = 0;
  if (tag == TAG_KEYWORD) {
    const char *z = (const char *)sqlite3_value_text(pV);
    if (z == NULL) return SQLITE_NOMEM;
    *pE = schemaEntid(p->pSchema, z, sqlite3_value_bytes(pV));
    *pbNone = *pE == 0;
    return SQLITE_OK;
  }
  if (eType == SQLITE_INTEGER && (tag == TAG_REF || tag == TAG_NUMBER || tag == Q_TAG_UNKNOWN)) {
    *pE = sqlite3_value_int64(pV);
    return SQLITE_OK;
  }
  switch (tag) {
    case TAG_JSON: zType = "collection"; break;
    case TAG_BOOLEAN: zType = vtName(VT_BOOLEAN); break;
    case TAG_INSTANT: zType = vtName(VT_INSTANT); break;
    case TAG_NUMBER: zType = vtName(VT_DOUBLE); break;
    case TAG_STRING: zType = vtName(VT_STRING); break;
    case TAG_UUID: zType = vtName(VT_UUID); break;
    case TAG_BYTES: zType = vtName(VT_BYTES); break;
    default: zType = "value of unknown type"; break;
  }
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("line %d col %d: pull %s: %s is a %s, not an entity id, ident or lookup ref",
                           pVar ? pVar->line : 0, pVar ? pVar->col : 0, pVar ? pVar->u.s.z : "?",
                           pVar ? pVar->u.s.z : "?", zType);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

int qRunPull(QueryRun *p, int i, sqlite3_str *pOut, char **pzErr) {
  const QPlanCol *pCol = &p->pPlan->aCol[i];
  const EdnValue *pPattern = pCol->bPatInput ? p->apPat[i] : pCol->pPattern;
  sqlite3_int64 e = 0;
  int bNone = 0;
  int rcE = qRunPullEntity(p, pCol, &e, &bNone, pzErr);
  if (rcE != SQLITE_OK) return rcE;
  if (bNone) {
    sqlite3_str_appendall(pOut, "null");
    return SQLITE_OK;
  }
  if (p->bTimeInst) {
    /* Resolved inside the query's read transaction, as its own SQL does. */
    int rc = SQLITE_OK;
    if (p->bAsOfInst) rc = pullTxAtInstant(p->pConn->db, &p->asOfInst, &p->time.iAsOf, pzErr);
    if (rc == SQLITE_OK && p->bSinceInst) {
      rc = pullTxAtInstant(p->pConn->db, &p->sinceInst, &p->time.iSince, pzErr);
    }
    if (rc != SQLITE_OK) return rc;
    p->bTimeInst = 0;
  }
  /* an id <= 0, or none of the pattern's attributes, is nil (Datomic) */
  return pullEntityAt(p->pConn->db, p->pSchema, pPattern, e, PULL_NIL_EMPTY | PULL_NIL_ID,
                      p->bTime ? &p->time : NULL, qCachePulls(p->pConn), pOut, pzErr);
}
