/*
** query_funcs_fts.c — mentat_fts_query(q, where): fulltext's search string,
** checked before the FTS4 table's MATCH reads it. Takes the string and the
** clause's place; gives the string, or an error naming the clause ("line 1
** col 18: fulltext: bad search string \"\\\"abc\"") where Datomic's
** fulltext (Lucene's QueryParser) throws: a string FTS4 cannot parse
** (an unbalanced quote or parenthesis, an operator without an operand) or
** one with no word at all ("", "*"). Without the check FTS4's own message
** ("malformed MATCH expression") names no clause, and a wordless string
** silently matches nothing. Calls only SQLite.
*/
#include <string.h>
#include <pthread.h>
#include "query_funcs.h"

/* Marks a search string already found good in this statement (auxdata). */
static int qfFtsGood;

/* Whether z[0..n) holds a word: a character that is neither white space
** nor one of the query syntax's operators (" * ( ) - + ! :). */
static int qfFtsHasWord(const char *z, int n) {
  int i;
  for (i = 0; i < n; i++) {
    if (!strchr(" \t\n\r\f\v\"*()-+!:", z[i])) return 1;
  }
  return 0;
}

/* The private in-memory database whose empty FTS4 table parses search
** strings: made once for the process (opening one per check cost 0.7 ms a
** query) with its statement, kept for its life, used under the mutex. */
static pthread_mutex_t gQfFtsMutex = PTHREAD_MUTEX_INITIALIZER;
static sqlite3 *gQfFtsDb = NULL;
static sqlite3_stmt *gQfFtsStmt = NULL;   /* its MATCH ?1, kept prepared */

/* Whether FTS4 parses z as a MATCH expression: SQLITE_OK, SQLITE_ERROR
** when it does not, SQLITE_NOMEM. It parses it over an empty table of the
** private database, so the answer is exactly FTS4's and costs no read of
** the store's index. */
static int qfFtsParses(const char *z, int n) {
  int rc = SQLITE_OK;
  pthread_mutex_lock(&gQfFtsMutex);
  if (gQfFtsDb == NULL) {
    sqlite3 *db = NULL;
    sqlite3_stmt *pStmt = NULL;
    rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "CREATE VIRTUAL TABLE f USING fts4(text)", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, "SELECT 1 FROM f WHERE text MATCH ?1", -1, &pStmt, NULL);
    /* a failed one (out of memory) is tried again at the next check */
    if (rc == SQLITE_OK) {
      gQfFtsDb = db;
      gQfFtsStmt = pStmt;
    } else {
      sqlite3_finalize(pStmt);
      sqlite3_close(db);
    }
  }
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(gQfFtsStmt, 1, z, n, SQLITE_STATIC);
    rc = sqlite3_step(gQfFtsStmt);
    rc = rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(gQfFtsDb);
    sqlite3_reset(gQfFtsStmt);
    sqlite3_clear_bindings(gQfFtsStmt);
  }
  pthread_mutex_unlock(&gQfFtsMutex);
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) rc = SQLITE_ERROR;
  return rc;
}

void qfFtsQuery(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const char *z = (const char*)sqlite3_value_text(argv[0]);
  int n = sqlite3_value_bytes(argv[0]), rc, i;
  sqlite3_str *pQ;
  char *zQ;
  (void)argc;
  if (z == NULL) return;               /* nil: nothing matches */
  if (sqlite3_get_auxdata(pCtx, 0) == &qfFtsGood) {
    sqlite3_result_value(pCtx, argv[0]);
    return;
  }
  rc = qfFtsHasWord(z, n) ? qfFtsParses(z, n) : SQLITE_ERROR;
  if (rc == SQLITE_OK) {
    /* kept while the argument stays the same (a constant, an input) */
    sqlite3_set_auxdata(pCtx, 0, &qfFtsGood, NULL);
    sqlite3_result_value(pCtx, argv[0]);
    return;
  }
  if (rc == SQLITE_NOMEM) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  /* the string as EDN writes it */
  pQ = sqlite3_str_new(NULL);
  for (i = 0; i < n; i++) {
    if (z[i] == '"' || z[i] == '\\') sqlite3_str_appendchar(pQ, 1, '\\');
    sqlite3_str_appendchar(pQ, 1, z[i]);
  }
  /* an empty string finishes as NULL: only the error code tells */
  rc = sqlite3_str_errcode(pQ);
  zQ = sqlite3_str_finish(pQ);
  if (rc != SQLITE_OK) sqlite3_result_error_nomem(pCtx);
  else qfErrorAt(pCtx, argv[1], "bad search string \"%s\"", zQ ? zQ : "");
  sqlite3_free(zQ);
}
