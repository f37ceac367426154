/*
** tuhost.h — a host connection with the whole extension registered, for the
** suites of the SQL boundary (vtab/) only: the lower stages' suites include
** testutil.h alone and so cannot reach the SQL surface.
*/
#ifndef MENTAT_TUHOST_H
#define MENTAT_TUHOST_H

#include "testutil.h"
#include "mentat.h"

/* A host connection on the database file zPath (":memory:": in memory)
** with the extension registered; the caller closes it. The host's own
** commits skip their fsyncs (synchronous=OFF), as tuNoFsync's stores do:
** what the suites test of a host file is what a transaction keeps. */
static inline sqlite3 *tuOpenHostAt(const char *zPath) {
  sqlite3 *db = NULL;
  char *zErr = NULL;
  ck_assert_int_eq(sqlite3_open(zPath, &db), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(db, "PRAGMA synchronous=OFF", NULL, NULL, NULL), SQLITE_OK);
  ck_assert_msg(mentatRegister(db, &zErr) == SQLITE_OK, "register: %s", zErr ? zErr : "?");
  return db;
}

/* An in-memory host connection with the extension registered. */
static inline sqlite3 *tuOpenHost(void) {
  return tuOpenHostAt(":memory:");
}

/* Runs zSql on db with ?1 = z1 and, unless NULL, ?2 = z2; *pzOut gets the
** first row's first column (malloc'd; "NULL" for SQL NULL) or the error
** message; returns the step's code, so a caller can tell an error from a
** row that reads like one. */
static inline int tuRunFirst(sqlite3 *db, const char *zSql, const char *z1, const char *z2,
                             char **pzOut) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL);
  ck_assert_msg(rc == SQLITE_OK, "%s: %s", zSql, sqlite3_errmsg(db));
  sqlite3_bind_text(pStmt, 1, z1, -1, SQLITE_TRANSIENT);
  if (z2) sqlite3_bind_text(pStmt, 2, z2, -1, SQLITE_TRANSIENT);
  rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    const char *z = (const char *)sqlite3_column_text(pStmt, 0);
    *pzOut = strdup(z ? z : "NULL");
  } else {
    *pzOut = strdup(sqlite3_errmsg(db));
  }
  sqlite3_finalize(pStmt);
  return rc;
}

/* Fails the test unless zSql's first row, as tuQuery gives it, is zWant. */
static inline void tuExpectQuery(sqlite3 *db, const char *zSql, const char *zWant) {
  char *z = tuQuery(db, zSql, NULL, NULL);
  ck_assert_msg(strcmp(z, zWant) == 0, "%s\n got:  %s\n want: %s", zSql, z, zWant);
  free(z);
}

/* Fails the test unless zSql runs without an error. */
static inline void tuExecOk(sqlite3 *db, const char *zSql) {
  char *zErr = NULL;
  int rc = sqlite3_exec(db, zSql, NULL, NULL, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "%s: %s", zSql, zErr ? zErr : "?");
  sqlite3_free(zErr);
}

/* One step of a scripted test: zSql run and, when zWant is not NULL, its
** first row compared with zWant (tuExpectQuery); with zWant NULL it must
** run without an error (tuExecOk, so it may hold several statements). */
typedef struct TuStep {
  const char *zSql;
  const char *zWant;
} TuStep;

/* Runs the nStep steps of aStep in order on db, failing at the first that
** does not give what it wants. TU_RUN_STEPS(db, a) for a static array. */
static inline void tuRunSteps(sqlite3 *db, const TuStep *aStep, int nStep) {
  for (int i = 0; i < nStep; i++) {
    if (aStep[i].zWant) tuExpectQuery(db, aStep[i].zSql, aStep[i].zWant);
    else tuExecOk(db, aStep[i].zSql);
  }
}
#define TU_RUN_STEPS(db, a) tuRunSteps((db), (a), (int)(sizeof(a) / sizeof((a)[0])))

#endif /* MENTAT_TUHOST_H */
