/*
** fuzzutil.h — helpers shared by the store fuzzers (fuzz_query.c,
** fuzz_tx.c; header-only, each harness includes it once): splitting an
** input into parts, a host connection with the extension registered, a
** scratch directory, and running one SQL call with text arguments.
**
** The harnesses are linked straight against the extension's objects
** (MENTAT_STATIC, as the unit tests are) and run in one process for the
** whole fuzzing session, so a bug is any crash, sanitizer report, leak or
** abort() from a broken invariant.
*/
#ifndef MENTAT_FUZZUTIL_H
#define MENTAT_FUZZUTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sqlite_api.h"
#include "mentat.h"

#define FUZZ_MAX_PARTS 8

/* An input cut at each NUL byte (the separator: EDN and JSON text never
** hold one) into at most FUZZ_MAX_PARTS parts; the last takes the rest.
** Parts point into a NUL-terminated heap copy, so every part is a C
** string and ASan sees a read past the input's end. */
typedef struct FuzzParts {
  char *zCopy;
  int nPart;
  const char *az[FUZZ_MAX_PARTS];
  int an[FUZZ_MAX_PARTS];
} FuzzParts;

static inline int fuzzSplit(FuzzParts *p, const uint8_t *aData, size_t nData) {
  size_t i, iStart = 0;
  memset(p, 0, sizeof *p);
  p->zCopy = malloc(nData + 1);
  if (p->zCopy == NULL) return 0;
  memcpy(p->zCopy, aData, nData);
  p->zCopy[nData] = 0;
  for (i = 0; i <= nData; i++) {
    if (i == nData || (p->zCopy[i] == 0 && p->nPart < FUZZ_MAX_PARTS - 1)) {
      p->az[p->nPart] = p->zCopy + iStart;
      p->an[p->nPart] = (int)(i - iStart);
      p->nPart++;
      iStart = i + 1;
    }
  }
  return 1;
}

static inline void fuzzPartsFree(FuzzParts *p) {
  free(p->zCopy);
  p->zCopy = NULL;
}

/* Part i, or NULL when the input has fewer parts. */
static inline const char *fuzzPart(const FuzzParts *p, int i) {
  return i < p->nPart ? p->az[i] : NULL;
}

static inline void fuzzDie(const char *zWhat, const char *zDetail) {
  fprintf(stderr, "fuzz: %s%s%s\n", zWhat, zDetail ? ": " : "", zDetail ? zDetail : "");
  abort();
}

/* An in-memory host connection with the extension registered. */
static inline sqlite3 *fuzzOpenHost(void) {
  sqlite3 *db = NULL;
  char *zErr = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) fuzzDie("open host", NULL);
  if (mentatRegister(db, &zErr) != SQLITE_OK) fuzzDie("register", zErr);
  return db;
}

static char fuzzzDir[256];

/* At exit: the scratch directory and the files in it go (open stores'
** files too: on Linux their connections keep reading the unlinked inodes). */
static inline void fuzzRemoveDir(void) {
  DIR *d = opendir(fuzzzDir);
  struct dirent *p;
  char z[600];
  if (d == NULL) return;
  while ((p = readdir(d)) != NULL) {
    if (p->d_name[0] == '.') continue;
    snprintf(z, sizeof z, "%s/%s", fuzzzDir, p->d_name);
    unlink(z);
  }
  closedir(d);
  rmdir(fuzzzDir);
}

/* A fresh directory for the scratch stores: /dev/shm when it is writable
** (no disk I/O), else TMPDIR or /tmp, removed at exit. Named mentat-fuzz.*
** so the usual sweep of stale test directories finds one a killed run
** left behind. */
static inline const char *fuzzTempDir(void) {
  char *zDir = fuzzzDir;
  const char *zBase = getenv("TMPDIR");
  if (access("/dev/shm", W_OK) == 0) zBase = "/dev/shm";
  if (zBase == NULL || zBase[0] == 0) zBase = "/tmp";
  snprintf(zDir, sizeof fuzzzDir, "%s/mentat-fuzz.XXXXXX", zBase);
  if (mkdtemp(zDir) == NULL) fuzzDie("mkdtemp", zDir);
  atexit(fuzzRemoveDir);
  return zDir;
}

/* Runs zSql with its parameters bound to azArg[0..nArg-1] (text of length
** anArg[i], or SQL NULL where azArg[i] is NULL), steps every row and reads
** every column (so each value is produced). Returns the final SQLite code;
** when pzFirst is not NULL, *pzFirst gets a malloc'd copy of the first
** row's first column as text (NULL for none or SQL NULL). With FUZZ_VERBOSE
** set, each call's first value or error goes to stderr (to read what a
** reproducer does). */
static inline int fuzzRun(sqlite3 *db, const char *zSql, int nArg, const char *const *azArg,
                          const int *anArg, char **pzFirst) {
  sqlite3_stmt *pStmt = NULL;
  char *zFirst = NULL;
  int rc, i, nRow = 0;
  if (pzFirst) *pzFirst = NULL;
  rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL);
  if (rc != SQLITE_OK) return rc;
  for (i = 0; i < nArg; i++) {
    if (azArg[i]) sqlite3_bind_text(pStmt, i + 1, azArg[i], anArg[i], SQLITE_STATIC);
  }
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    int iCol, nCol = sqlite3_column_count(pStmt);
    for (iCol = 0; iCol < nCol; iCol++) {
      const unsigned char *z = sqlite3_column_text(pStmt, iCol);
      if (nRow == 0 && iCol == 0 && z) zFirst = strdup((const char *)z);
      (void)sqlite3_column_bytes(pStmt, iCol);
    }
    nRow++;
  }
  if (getenv("FUZZ_VERBOSE")) {
    const char *z = rc != SQLITE_DONE ? sqlite3_errmsg(db) : nRow ? zFirst : "(no row)";
    fprintf(stderr, "%s\n  -> %s%s\n", zSql, rc == SQLITE_DONE ? "" : "error: ", z ? z : "NULL");
  }
  sqlite3_finalize(pStmt);
  if (pzFirst) *pzFirst = zFirst;
  else free(zFirst);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

#endif /* MENTAT_FUZZUTIL_H */
