/*
** edn_q_scalar.c — the scalar SQL function edn_q(db_path, query [, opts]):
** runs a Datalog query and returns the whole result as one JSON document
** (../shared/SPEC.md §2.2), for hosts that prefer one value to a table:
**
**   SELECT edn_q('/data/app.db', '[:find ?n :where [_ :person/name ?n]]');
**   -> {"columns":["?n"],"results":[["Ann"],["Bob"]],"result":[["Ann"],["Bob"]]}
**
** Takes the arguments; gives the document or an "edn_q: " error. Calls the
** call context (call.h) and the query runner (query.h).
**
** HOW IT WORKS
** The same path as the edn_q table (edn_q_table.c): the call context parses
** opts and checks a reader connection out, qRunOpen() compiles (or finds
** cached) the query and every row is stepped into the document. Shapes by
** find spec:
**   relation     {"columns":[...],"results":[rows],"result":[rows]}
**                (results and result hold the same rows; Mentat's
**                extension spells it "results", Datomic users expect
**                "result")
**   relation whose only element is an aggregate, one row: {"result": v}
**   collection   {"result":[e1,e2,...]}
**   tuple        {"result":[a,b]} or {"result":null}
**   scalar       {"result":v} or {"result":null}
** With opts {"explain": true} the document is the query's SQL, plan and
** parameters instead, and with "sources" the store each source reads
** (qExplain). With {"with": tx-data} the query reads the
** database with that transaction applied and nothing written (call.h);
** "withReport": true adds the transaction's report as the key "report".
*/
#include <string.h>
#include "edn_q.h"
#include "call.h"
#include "sqlio.h"
#include "query.h"

/* Bytes of the relation's rows copied at a time for "result", with a look
** at the host between (ednqDocRelation). */
#define EDNQ_COPY_CHUNK (8 << 20)

/* Appends the rows of a relation from the current row on (rc says whether
** there is one) to pRows as comma-separated JSON values. The host is asked
** after every row (intrWatchPoll: time-gated): a row's JSON is encoded
** outside the store's VM, whose progress handler never sees it, and rows
** of megabytes made an interrupt wait for the whole document (issue 19
** R3). A document past the host's SQLITE_LIMIT_LENGTH stops as its string
** does (SQLITE_TOOBIG, sqlioOutSlot). */
static int ednqDocRows(QueryRun *pRun, int rc, sqlite3_str *pRows, int *pnRow, IntrWatch *pW,
                       char **pzErr) {
  while (rc == SQLITE_ROW) {
    if (*pnRow > 0) sqlite3_str_appendchar(pRows, 1, ',');
    rc = qRunRowJson(pRun, pRows);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_str_errcode(pRows);
    if (rc != SQLITE_OK) return rc;
    if (intrWatchPoll(pW, 0)) return SQLITE_INTERRUPT;
    (*pnRow)++;
    rc = qRunStep(pRun, pzErr);
  }
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Appends the names of the find elements as a JSON array. */
static void ednqDocColumns(QueryRun *pRun, sqlite3_str *pOut) {
  int i, nCol = qRunColumnCount(pRun);
  sqlite3_str_appendchar(pOut, 1, '[');
  for (i = 0; i < nCol; i++) {
    const char *zName = qRunColumnName(pRun, i);
    if (i > 0) sqlite3_str_appendchar(pOut, 1, ',');
    if (zName == NULL) zName = "";
    ednJsonString(pOut, zName, (int)strlen(zName));
  }
  sqlite3_str_appendchar(pOut, 1, ']');
}

/* The relation document; handles the single-aggregate shape. The rows are
** written once into pOut under "results" and then copied within pOut for
** "result" (no second string: every string grows through reallocations
** under SQLite's global allocator mutex). */
static int ednqDocRelation(sqlite3 *host, QueryRun *pRun, sqlite3_str *pOut, IntrWatch *pW,
                           char **pzErr) {
  sqlite3_str *pOne = NULL;
  int rc, nRow = 0, iRows, nRows;
  /* Datomic returns a lone aggregate as a plain value; with :keys the row
  ** is a map, so the document keeps the relation form. */
  int bAgg = qRunIsSingleAggregate(pRun) && qRunKeyName(pRun, 0) == NULL;

  rc = qRunStep(pRun, pzErr);
  if (rc == SQLITE_ROW && bAgg) {
    pOne = sqlite3_str_new(host);
    rc = qRunColumnJson(pRun, 0, pOne);
    if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pOne);
    if (rc != SQLITE_OK) goto cleanup;
    nRow = 1;
    rc = qRunStep(pRun, pzErr);
    if (rc == SQLITE_DONE) {
      sqlite3_str_appendall(pOut, "{\"result\":");
      sqlite3_str_append(pOut, sqlite3_str_value(pOne), sqlite3_str_length(pOne));
      sqlite3_str_appendchar(pOut, 1, '}');
      rc = sqlite3_str_errcode(pOut);
      goto cleanup;
    }
  }
  sqlite3_str_appendall(pOut, "{\"columns\":");
  ednqDocColumns(pRun, pOut);
  sqlite3_str_appendall(pOut, ",\"results\":[");
  iRows = sqlite3_str_length(pOut);
  if (pOne) {
    /* The lone aggregate had a second row after all: its first row. */
    sqlite3_str_appendchar(pOut, 1, '[');
    sqlite3_str_append(pOut, sqlite3_str_value(pOne), sqlite3_str_length(pOne));
    sqlite3_str_appendchar(pOut, 1, ']');
  }
  rc = ednqDocRows(pRun, rc, pOut, &nRow, pW, pzErr);
  if (rc != SQLITE_OK) goto cleanup;
  rc = sqlite3_str_errcode(pOut);
  if (rc != SQLITE_OK) goto cleanup;
  nRows = sqlite3_str_length(pOut) - iRows;
  sqlite3_str_appendall(pOut, "],\"result\":[");
  {
    /* Room first, then the copy: appending from the string's own buffer
    ** could read it after a reallocation moved it. */
    int iDst = sqlite3_str_length(pOut), iDone, n;
    /* by EDNQ_COPY_CHUNK, asking the host between (room and copy of
    ** hundreds of megabytes take a good part of a second) */
    for (iDone = 0; iDone < nRows; iDone += n) {
      n = nRows - iDone < EDNQ_COPY_CHUNK ? nRows - iDone : EDNQ_COPY_CHUNK;
      if (iDone > 0 && intrWatchPoll(pW, 0)) {
        rc = SQLITE_INTERRUPT;
        goto cleanup;
      }
      sqlite3_str_appendchar(pOut, n, ' ');
      rc = sqlite3_str_errcode(pOut);
      if (rc != SQLITE_OK) goto cleanup;
      memcpy(sqlite3_str_value(pOut) + iDst + iDone, sqlite3_str_value(pOut) + iRows + iDone, (size_t)n);
    }
  }
  sqlite3_str_appendall(pOut, "]}");
  rc = sqlite3_str_errcode(pOut);

cleanup:
  sqlite3_free(sqlite3_str_finish(pOne));
  return rc;
}

/* Appends the JSON document of the whole result of pRun to pOut. */
static int ednqDocument(sqlite3 *host, QueryRun *pRun, sqlite3_str *pOut, IntrWatch *pW,
                        char **pzErr) {
  int rc, nRow = 0;
  switch (qRunFindKind(pRun)) {
    case FIND_REL:
      return ednqDocRelation(host, pRun, pOut, pW, pzErr);
    case FIND_COLL:
      sqlite3_str_appendall(pOut, "{\"result\":[");
      rc = ednqDocRows(pRun, qRunStep(pRun, pzErr), pOut, &nRow, pW, pzErr);
      sqlite3_str_appendall(pOut, "]}");
      return rc;
    case FIND_TUPLE:
    case FIND_SCALAR:
    default:
      rc = qRunStep(pRun, pzErr);
      if (rc != SQLITE_ROW && rc != SQLITE_DONE) return rc;
      sqlite3_str_appendall(pOut, "{\"result\":");
      if (rc == SQLITE_ROW) {
        rc = qRunRowJson(pRun, pOut);
        if (rc != SQLITE_OK) return rc;
        if (qRunDrainsOne(pRun) && (rc = qRunStep(pRun, pzErr)) != SQLITE_DONE) {
          return rc == SQLITE_ROW ? SQLITE_INTERNAL : rc;
        }
      } else {
        sqlite3_str_appendall(pOut, "null");
      }
      sqlite3_str_appendchar(pOut, 1, '}');
      return SQLITE_OK;
  }
}

/* The document of pRun with the with-tx's report (opts "withReport") as
** its last key: {..., "report": {"tx_id":..., "tx_instant":..., "tempids":
** {...}}}, the report edn_t would have returned. */
static int ednqDocumentReport(sqlite3 *host, QueryRun *pRun, sqlite3_str *pReport,
                              sqlite3_str *pOut, IntrWatch *pW, char **pzErr) {
  sqlite3_str *pDoc = sqlite3_str_new(host);
  int rc = ednqDocument(host, pRun, pDoc, pW, pzErr);
  if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pDoc);
  if (rc == SQLITE_OK) {
    /* every document is one object: its closing brace goes after the report */
    sqlite3_str_append(pOut, sqlite3_str_value(pDoc), sqlite3_str_length(pDoc) - 1);
    sqlite3_str_appendall(pOut, ",\"report\":");
    sqlite3_str_append(pOut, sqlite3_str_value(pReport), sqlite3_str_length(pReport));
    sqlite3_str_appendchar(pOut, 1, '}');
  }
  sqlite3_free(sqlite3_str_finish(pDoc));
  return rc;
}

void ednqScalarFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  sqlite3 *host = sqlite3_context_db_handle(pCtx);
  const char *zQuery;
  int nQuery, rc;
  char *zErr = NULL;
  QueryOpts opts;
  QueryRun *pRun = NULL;
  sqlite3_str *pOut = NULL, **ppBuf = NULL, *pLocal = NULL;
  int iStart = 0;
  VCall call;
  char aQuery[2048];            /* the query's text, read without an allocation */

  memset(&call, 0, sizeof call);
  qOptsInit(&opts);
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL)
    return;
  rc = sqlioTextIn(argv[1], aQuery, (int)sizeof aQuery, &zQuery, &nQuery);
  if (rc != SQLITE_OK) goto cleanup;
  rc = vcallBegin(&call, host, argv[0], VCALL_QUERY, &opts, argc > 2 ? argv[2] : NULL, &zErr);
  if (rc != SQLITE_OK) goto cleanup;
  if (!opts.bExplain) {
    rc = qRunOpen(call.pConn, call.pSchema, zQuery, nQuery, &opts, &pRun, &zErr);
    if (rc != SQLITE_OK) goto cleanup;
  }
  ppBuf = sqlioOutSlot(host, qCacheOutBuf(call.pConn), &pLocal);
  pOut = sqlioOutBegin(ppBuf, host, &iStart);
  if (pOut == NULL) {
    rc = SQLITE_NOMEM;
    goto cleanup;
  }
  if (opts.bExplain) {
    /* {"sql", "plan", "params"} instead of the rows (query.h, qExplain). */
    rc = qExplain(call.pConn, call.pSchema, (const char *)sqlite3_value_text(argv[0]), zQuery,
                  nQuery, &opts, pOut, &zErr);
    if (rc != SQLITE_OK) goto cleanup;
    sqlioOutJson(pCtx, "edn_q", ppBuf, iStart);
    goto cleanup;
  }
  if (call.pWithReport) rc = ednqDocumentReport(host, pRun, call.pWithReport, pOut, &call.watch, &zErr);
  else rc = ednqDocument(host, pRun, pOut, &call.watch, &zErr);
  if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pOut);
  /* The last look before the host's VM takes the document (intrWatchPoll). */
  if (rc == SQLITE_OK && intrWatchPoll(&call.watch, 1)) rc = SQLITE_INTERRUPT;
  if (rc != SQLITE_OK) {
    /* Column functions (pulls in :find) report through the run. */
    if (zErr == NULL && qRunErrMsg(pRun) != NULL) zErr = sqlite3_mprintf("%s", qRunErrMsg(pRun));
    goto cleanup;
  }
  sqlioOutJson(pCtx, "edn_q", ppBuf, iStart);

cleanup:
  if (rc != SQLITE_OK) rc = vcallWithTimedOut(&call, rc, &zErr);
  if (rc != SQLITE_OK) sqlioError(pCtx, "edn_q", rc, zErr);
  qRunClose(pRun);
  vcallEnd(&call);
  qOptsReset(&opts);
  sqlite3_free(zErr);
  sqlite3_free(sqlite3_str_finish(pLocal));
}
