/*
** query_explain.c — the "explain" opt of the scalar edn_q (query.h,
** qExplain): the SQL a query compiles to, SQLite's EXPLAIN QUERY PLAN of
** it, and the values bound to its parameters (and, with opts "sources",
** the store each source reads), instead of its rows.
** Takes a checked-out store connection, the schema, db_path, the query
** text and its opts; gives one JSON document. Calls the plan cache, the binder
** (query_run.c) and SQLite.
**
**   SELECT edn_q(db, '[:find ?n :where [?e :p/age 30] [?e :p/name ?n]]', '{"explain": true}');
**   -> {"sql":"SELECT ...","plan":[{"id":3,"parent":0,"detail":"SEARCH d0 USING ..."}],
**       "params":[30]}
**
** Datomic has no explain; SQLite's EXPLAIN QUERY PLAN is the model: each
** plan row is {"id", "parent", "detail"} as SQLite gives them (parent 0 is
** the top level), in SQLite's order. "params" holds what ?1, ?2, ... are
** bound to when the query runs, as the store holds values (SPEC.md §3:
** instants as epoch microseconds, booleans 0/1, keywords as ":ns/name"
** text (an ident given for an entity is bound so and looked up by the SQL
** itself), entids as integers, blobs as {"blob": "<HEX>"}), so the SQL can
** be run by hand on the store to time it.
*/
#include <string.h>
#include "query_plan.h"
#include "query_plan_cache.h"

/* Appends one SQL value as JSON (the "params" forms above). */
static void qExplainValue(sqlite3_str *pOut, sqlite3_stmt *pStmt, int i) {
  switch (sqlite3_column_type(pStmt, i)) {
    case SQLITE_INTEGER:
      ednAppendInt(pOut, sqlite3_column_int64(pStmt, i));
      break;
    case SQLITE_FLOAT:
      ednJsonDouble(pOut, sqlite3_column_double(pStmt, i));
      break;
    case SQLITE_TEXT:
      ednJsonString(pOut, (const char *)sqlite3_column_text(pStmt, i), sqlite3_column_bytes(pStmt, i));
      break;
    case SQLITE_BLOB: {
      const unsigned char *a = sqlite3_column_blob(pStmt, i);
      int j, n = sqlite3_column_bytes(pStmt, i);
      sqlite3_str_appendall(pOut, "{\"blob\":\"");
      for (j = 0; j < n; j++) sqlite3_str_appendf(pOut, "%02X", a[j]);
      sqlite3_str_appendall(pOut, "\"}");
      break;
    }
    default:
      sqlite3_str_appendall(pOut, "null");
      break;
  }
}

/* Prepares zSql (sqlite3_mprintf'd by the caller, freed here) on db with
** pPlan's parameters bound as the run binds them. */
static int qExplainPrepare(sqlite3 *db, char *zSql, const QueryPlan *pPlan, const Schema *pSchema,
                           const QueryOpts *pOpts, sqlite3_stmt **ppStmt, char **pzErr) {
  int rc;
  *ppStmt = NULL;
  if (zSql == NULL) return SQLITE_NOMEM;
  rc = sqlite3_prepare_v2(db, zSql, -1, ppStmt, NULL);
  sqlite3_free(zSql);
  if (rc != SQLITE_OK) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("explain: %s", sqlite3_errmsg(db));
    return *pzErr ? rc : SQLITE_NOMEM;
  }
  return qPlanBind(pPlan, *ppStmt, pSchema, pOpts, pzErr);
}

/* Appends "plan": the EXPLAIN QUERY PLAN rows of pPlan's SQL. */
static int qExplainPlan(sqlite3 *db, const QueryPlan *pPlan, const Schema *pSchema,
                        const QueryOpts *pOpts, sqlite3_str *pOut, char **pzErr) {
  sqlite3_stmt *pStmt = NULL;
  int rc, nRow = 0;
  rc = qExplainPrepare(db, sqlite3_mprintf("EXPLAIN QUERY PLAN %s", pPlan->zSql), pPlan, pSchema,
                       pOpts, &pStmt, pzErr);
  sqlite3_str_appendall(pOut, ",\"plan\":[");
  while (rc == SQLITE_OK && (rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    const char *zDetail = (const char *)sqlite3_column_text(pStmt, 3);
    if (nRow++) sqlite3_str_appendchar(pOut, 1, ',');
    sqlite3_str_appendall(pOut, "{\"id\":");
    ednAppendInt(pOut, sqlite3_column_int64(pStmt, 0));
    sqlite3_str_appendall(pOut, ",\"parent\":");
    ednAppendInt(pOut, sqlite3_column_int64(pStmt, 1));
    sqlite3_str_appendall(pOut, ",\"detail\":");
    ednJsonString(pOut, zDetail ? zDetail : "", zDetail ? (int)strlen(zDetail) : 0);
    sqlite3_str_appendchar(pOut, 1, '}');
    rc = SQLITE_OK;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  else if (rc != SQLITE_OK && *pzErr == NULL) *pzErr = sqlite3_mprintf("explain: %s", sqlite3_errmsg(db));
  sqlite3_str_appendchar(pOut, 1, ']');
  sqlite3_finalize(pStmt);
  return rc;
}

/* Appends "params": the values of ?1..?N, read back through a SELECT of
** them bound exactly as the query's statement is. */
static int qExplainParams(sqlite3 *db, const QueryPlan *pPlan, const Schema *pSchema,
                          const QueryOpts *pOpts, sqlite3_str *pOut, char **pzErr) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_str *pSel;
  int i, rc = SQLITE_OK, n = sqlite3_bind_parameter_count(pPlan->pStmt);
  sqlite3_str_appendall(pOut, ",\"params\":[");
  if (n > 0) {
    pSel = sqlite3_str_new(NULL);
    sqlite3_str_appendall(pSel, "SELECT ");
    for (i = 1; i <= n; i++) sqlite3_str_appendf(pSel, "%s?%d", i > 1 ? "," : "", i);
    rc = qExplainPrepare(db, sqlite3_str_finish(pSel), pPlan, pSchema, pOpts, &pStmt, pzErr);
    if (rc == SQLITE_OK && sqlite3_step(pStmt) == SQLITE_ROW) {
      for (i = 0; i < n; i++) {
        if (i) sqlite3_str_appendchar(pOut, 1, ',');
        qExplainValue(pOut, pStmt, i);
      }
    } else if (rc == SQLITE_OK) {
      rc = sqlite3_errcode(db) == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
      if (*pzErr == NULL) *pzErr = sqlite3_mprintf("explain: %s", sqlite3_errmsg(db));
    }
  }
  sqlite3_str_appendchar(pOut, 1, ']');
  sqlite3_finalize(pStmt);
  return rc;
}

/* Appends "sources" (opts "sources" only): "$" and then each source in the
** opts' order, {"db": the store path as given (zDbPath for $ and for a
** source of db_path's own store)} and, for a store file attached to the
** reader, "attached": the schema name "sql" reads its tables by, so the SQL
** can be run by hand after ATTACH DATABASE '<db>' AS <attached>. */
static void qExplainSources(const char *zDbPath, const QueryOpts *pOpts, sqlite3_str *pOut) {
  int i;
  if (pOpts->nSource == 0) return;
  sqlite3_str_appendall(pOut, ",\"sources\":{\"$\":{\"db\":");
  ednJsonString(pOut, zDbPath, (int)strlen(zDbPath));
  sqlite3_str_appendchar(pOut, 1, '}');
  for (i = 0; i < pOpts->nSource; i++) {
    const QuerySource *pS = &pOpts->aSource[i];
    const char *zDb = pS->zPath ? pS->zPath : zDbPath;
    sqlite3_str_appendchar(pOut, 1, ',');
    ednJsonString(pOut, pS->zName, (int)strlen(pS->zName));
    sqlite3_str_appendall(pOut, ":{\"db\":");
    ednJsonString(pOut, zDb, (int)strlen(zDb));
    if (pS->zDb[0]) {
      sqlite3_str_appendall(pOut, ",\"attached\":");
      ednJsonString(pOut, pS->zDb, (int)strlen(pS->zDb));
    }
    sqlite3_str_appendchar(pOut, 1, '}');
  }
  sqlite3_str_appendchar(pOut, 1, '}');
}

int qExplain(StoreConn *pConn, Schema *pSchema, const char *zDbPath, const char *zQuery,
             int nQuery, const QueryOpts *pOpts, sqlite3_str *pOut, char **pzErr) {
  QueryPlan *pPlan = NULL;
  int bOwn = 0;
  int rc = qCachePlan(pConn, pSchema, zQuery, nQuery, pOpts, &pPlan, &bOwn, pzErr);
  if (rc != SQLITE_OK) return rc;
  sqlite3_str_appendall(pOut, "{\"sql\":");
  ednJsonString(pOut, pPlan->zSql, (int)strlen(pPlan->zSql));
  rc = qExplainPlan(pConn->db, pPlan, pSchema, pOpts, pOut, pzErr);
  if (rc == SQLITE_OK) rc = qExplainParams(pConn->db, pPlan, pSchema, pOpts, pOut, pzErr);
  if (rc == SQLITE_OK) qExplainSources(zDbPath ? zDbPath : "", pOpts, pOut);
  sqlite3_str_appendchar(pOut, 1, '}');
  if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pOut);
  if (bOwn) qPlanFree(pPlan);
  return rc;
}
