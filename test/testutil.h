/*
** testutil.h — small helpers shared by the Check suites (header-only, each
** test program includes it once).
*/
#ifndef MENTAT_TESTUTIL_H
#define MENTAT_TESTUTIL_H

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "sqlite_api.h"
#include "config.h"

/* The directory tuTempPath made, and the process that made it: only that
** process removes it at exit. Check runs each test in a forked child that
** inherits the parent's directory and atexit handlers, so a child never
** deletes a directory its parent still uses; a directory a child made
** (the usual case: the parent makes none) goes when the child exits. A
** process that forks helpers sharing its files calls tuTempPath before
** the fork. */
static char tuzTempDir[64] __attribute__((unused)) = "";
static pid_t tuTempOwner __attribute__((unused)) = 0;

static inline int tuRemoveEntry(const char *zPath, const struct stat *pSt, int eFlag, struct FTW *pFtw) {
  (void)pSt; (void)eFlag; (void)pFtw;
  remove(zPath);
  return 0;
}

static inline void tuTempCleanup(void) {
  if (tuzTempDir[0] && tuTempOwner == getpid()) {
    nftw(tuzTempDir, tuRemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
    tuzTempDir[0] = 0;
  }
}

/* A fresh directory under /tmp for this process's store files (removed
** with everything in it when the process exits); the path of zName inside
** it, in a static buffer reused by the next call. */
static inline const char *tuTempPath(const char *zName) {
  static char zPath[256];
  if (tuzTempDir[0] == 0) {
    strcpy(tuzTempDir, "/tmp/mentat-test.XXXXXX");
    if (mkdtemp(tuzTempDir) == NULL) abort();
    tuTempOwner = getpid();
    atexit(tuTempCleanup);
  }
  snprintf(zPath, sizeof zPath, "%s/%s", tuzTempDir, zName);
  return zPath;
}

/* Runs zSql (with up to two text parameters, NULL for none) and returns the
** first column of the first row as text (malloc'd; "NULL" for SQL NULL, ""
** for no row), or "ERROR: <message>" when the statement fails. */
static inline char *tuQuery(sqlite3 *db, const char *zSql, const char *z1, const char *z2) {
  sqlite3_stmt *pStmt = NULL;
  char *zOut = NULL;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    if (z1) sqlite3_bind_text(pStmt, 1, z1, -1, SQLITE_TRANSIENT);
    if (z2) sqlite3_bind_text(pStmt, 2, z2, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) {
      const char *z = (const char *)sqlite3_column_text(pStmt, 0);
      zOut = strdup(z ? z : "NULL");
    } else if (rc == SQLITE_DONE) {
      zOut = strdup("");
    }
  }
  if (zOut == NULL) {
    const char *zMsg = sqlite3_errmsg(db);
    zOut = malloc(strlen(zMsg) + 8);
    sprintf(zOut, "ERROR: %s", zMsg);
  }
  sqlite3_finalize(pStmt);
  return zOut;
}

/* Allocation failures injected through SQLite's allocator (our code
** allocates only with sqlite3_malloc): after tuOomLeft more allocations one
** fails (-1: none). With tuOomOnce set the failure is transient (the next
** allocation succeeds again); otherwise every allocation fails until the
** test resets tuOomLeft. tuOomInstall() puts the hooks in (SQLite restarted;
** once per process, since CK_FORK=no runs every test in one), tuOomRemove()
** takes them out. Callers close their connections first. */
static sqlite3_mem_methods tuMemDefault __attribute__((unused));
static int tuOomLeft __attribute__((unused)) = -1;
static int tuOomOnce __attribute__((unused)) = 0;
static int tuOomInstalled __attribute__((unused)) = 0;

static inline void *tuOomMalloc(int n) {
  if (tuOomLeft == 0) {
    if (tuOomOnce) tuOomLeft = -1;
    return NULL;
  }
  if (tuOomLeft > 0) tuOomLeft--;
  return tuMemDefault.xMalloc(n);
}

static inline void *tuOomRealloc(void *p, int n) {
  if (tuOomLeft == 0) {
    if (tuOomOnce) tuOomLeft = -1;
    return NULL;
  }
  if (tuOomLeft > 0) tuOomLeft--;
  return tuMemDefault.xRealloc(p, n);
}

static inline void tuOomInstall(void) {
  sqlite3_mem_methods m;
  if (tuOomInstalled) return;
  tuOomInstalled = 1;
  sqlite3_shutdown();
  ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &tuMemDefault), SQLITE_OK);
  m = tuMemDefault;
  m.xMalloc = tuOomMalloc;
  m.xRealloc = tuOomRealloc;
  ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_MALLOC, &m), SQLITE_OK);
  ck_assert_int_eq(sqlite3_initialize(), SQLITE_OK);
}

static inline void tuOomRemove(void) {
  if (!tuOomInstalled) return;
  tuOomInstalled = 0;
  tuOomLeft = -1;
  sqlite3_shutdown();
  sqlite3_config(SQLITE_CONFIG_MALLOC, &tuMemDefault);
  sqlite3_initialize();
}

/* Is rc what an allocation failure may give: SQLITE_NOMEM, or SQLite's own
** I/O-layer SQLITE_IOERR_NOMEM? Nothing else is (an SQLITE_ERROR would be
** an out-of-memory condition reported as something it is not). */
static inline int tuIsNomem(int rc) {
  return rc == SQLITE_NOMEM || rc == SQLITE_IOERR_NOMEM;
}

/* Steps zSql once, as an allocation-failure sweep does (?1 bound to z1 and
** ?2 to z2 when they are not NULL): SQLITE_ROW with the first column of the
** row as text in *pzOut (malloc'd, "NULL" for SQL NULL), else SQLITE_DONE
** or the error code (*pzOut NULL). A text conversion that runs out of memory
** (a NULL for a value that is not NULL) and a finalize that reports an
** allocation failure both give SQLITE_NOMEM's code. */
static inline int tuStepOnce(sqlite3 *db, const char *zSql, const char *z1, const char *z2,
                             char **pzOut) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL);
  *pzOut = NULL;
  if (rc != SQLITE_OK) return rc;
  if (z1) rc = sqlite3_bind_text(pStmt, 1, z1, -1, SQLITE_TRANSIENT);
  if (rc == SQLITE_OK && z2) rc = sqlite3_bind_text(pStmt, 2, z2, -1, SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    /* the type first: a text conversion that runs out of memory leaves a NULL */
    int eType = sqlite3_column_type(pStmt, 0);
    const char *z = (const char *)sqlite3_column_text(pStmt, 0);
    if (z == NULL && eType != SQLITE_NULL) rc = SQLITE_NOMEM;
    else *pzOut = strdup(z ? z : "NULL");
  }
  if (rc == SQLITE_ROW) {
    int rc2 = sqlite3_finalize(pStmt);
    return tuIsNomem(rc2) ? rc2 : SQLITE_ROW;
  }
  sqlite3_finalize(pStmt);
  return rc;
}

/* For a suite that tests what a write does, not that it outlives a power
** loss (test_iofault and test_group test that): store connections opened
** from now on run at synchronous=OFF, so a commit waits for no fsync — on
** a shared disk one costs milliseconds, and a suite commits thousands of
** times. Atomicity and isolation are the same at every level. */
static inline void tuNoFsync(void) {
  configSetSynchronous("OFF");
}

/* One sweep's summary line, for the figures make faults reports: the
** allocation points tried (each a round with the n-th allocation failing)
** and how many ended in SQLITE_NOMEM; every other round gave the right
** answer. zMode is "transient" or "persistent". */
static inline void tuFaultSummary(const char *zSweep, const char *zMode, int nPoints, int nNomem) {
  fprintf(stderr, "faults %s (%s): %d allocation points, %d SQLITE_NOMEM, %d right answers\n",
          zSweep, zMode, nPoints, nNomem, nPoints - nNomem);
}

/* A tcase of allocation- or I/O-failure sweeps, tagged "faults": make unit
** leaves these out (CK_EXCLUDE_TAGS=faults) and make faults runs only them
** (CK_INCLUDE_TAGS=faults); run by hand, a program runs every tcase. */
static inline TCase *tuFaultCase(const char *zName, int nTimeout) {
  TCase *tc = tcase_create(zName);
  tcase_set_tags(tc, "faults");
  tcase_set_timeout(tc, nTimeout);
  return tc;
}

/* One test program per suite: TU_MAIN(ednSuite) gives main(). */
#define TU_MAIN(SUITE_FN)                                        \
  int main(void) {                                               \
    SRunner *sr = srunner_create(SUITE_FN());                    \
    srunner_run_all(sr, CK_NORMAL);                              \
    int nFail = srunner_ntests_failed(sr);                       \
    srunner_free(sr);                                            \
    return nFail == 0 ? 0 : 1;                                   \
  }

#endif /* MENTAT_TESTUTIL_H */
