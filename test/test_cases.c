/*
** test_cases.c — one Check driver for the cases kept as data in
** test/cases/ (files ending .test, in the manner of jq's jq.test and SQLite's
** do_execsql_test): each file is a script of blocks run in order on a host
** connection with the extension registered, against a fresh file store.
**
** FORMAT (docs in test/cases/README.md). Blocks are separated by blank lines;
** a line starting with '#' outside a block is a comment. A block is a
** directive line, body lines, and an expectation that starts with "=>":
**
**   store NAME            a fresh store for the blocks after it (no body)
**   env NAME=VALUE        sets an environment variable (a MENTAT_* setting
**                         read per call) until the end of the file (no body)
**   %store:NAME%          in opts, sql bodies and expectations: the path of
**                         store NAME of this file (for queries naming another
**                         store)
**   tx                    body: EDN tx-data, run as edn_t(store, body)
**   query [ordered] [scalar] [table-col N]
**                         body: a Datalog query; an "opts {...}" line gives
**                         the opts JSON. Table form: expected lines are the
**                         rows' `value` column (compared as a sorted list
**                         unless "ordered"). "scalar": one line, the JSON
**                         document of the scalar edn_q.
**   pull                  body: the pattern; "entity <SQL expr>" line,
**                         optional "opts {...}"; expected: the JSON document
**   sql [store]           body: SQL statements; :db is the store's path, the
**                         last statement's rows are compared, columns joined
**                         by '|', SQL NULL as NULL, in order. "store": they
**                         run on a plain connection of their own to the
**                         store's file (no extension), so the format's tables
**                         are named as they are (datoms, timelined_transactions).
**                         $STORE in the body is replaced by the store's path,
**                         for text that takes no parameter (CREATE VIRTUAL
**                         TABLE ... USING edn_view(db='$STORE', ...))
**
** Expectations: "=> ok" (tx only: it must succeed), "=> error: TEXT" (the
** whole error text must equal TEXT; for a tx, the store must also be left
** exactly as it was: every table of the format and sqlite_master, compared
** before and after, when the store existed before), "=> tempids {...}" (tx:
** the report's tempids object, compared as text), "=> report" followed by
** lines "PATH VALUE" (tx: json_extract(report, PATH) as text, SQL NULL as
** NULL, for each line), or "=>" followed by the expected lines (none: no
** rows). A query or pull block whose opts hold "with" must also leave the
** store exactly as it was (compared as for a failed tx). Every mismatch is reported with its file and line; a file fails
** when any of its blocks does.
*/
#include <dirent.h>
#include <ctype.h>
#include "tuhost.h"

#define TC_MAX_FILES 256

static char *azFile[TC_MAX_FILES];
static int nFile = 0;

static int tcCmp(const void *a, const void *b) {
  return strcmp(*(char *const*)a, *(char *const*)b);
}

static const char *tcDir(void) {
  const char *z = getenv("MENTAT_CASES_DIR");
  return z && z[0] ? z : "test/cases";
}

static void tcListFiles(void) {
  DIR *d = opendir(tcDir());
  struct dirent *p;
  if (d == NULL) return;
  while ((p = readdir(d)) != NULL && nFile < TC_MAX_FILES) {
    size_t n = strlen(p->d_name);
    if (n > 5 && strcmp(p->d_name + n - 5, ".test") == 0) azFile[nFile++] = strdup(p->d_name);
  }
  closedir(d);
  qsort(azFile, (size_t)nFile, sizeof(char*), tcCmp);
}

/* A growable text buffer (malloc'd). */
typedef struct TcBuf { char *z; size_t n, nAlloc; } TcBuf;

static void tcAppend(TcBuf *p, const char *z, size_t n) {
  if (p->n + n + 2 > p->nAlloc) {
    p->nAlloc = (p->n + n + 2) * 2;
    p->z = realloc(p->z, p->nAlloc);
    ck_assert_ptr_nonnull(p->z);
  }
  memcpy(p->z + p->n, z, n);
  p->n += n;
  p->z[p->n] = 0;
}

static void tcLine(TcBuf *p, const char *z) {
  if (p->n) tcAppend(p, "\n", 1);
  tcAppend(p, z, strlen(z));
}

static void tcReset(TcBuf *p) { p->n = 0; if (p->z) p->z[0] = 0; }

/* One parsed block. */
typedef struct TcBlock {
  char zKind[16];          /* tx, query, pull, sql, store */
  int bOrdered, bScalar, bStore;
  TcBuf body, opts, entity, expect;
  int bExpect;             /* an "=>" line was seen */
  int iLine;               /* line of the directive */
} TcBlock;

#define TC_MAX_ENV 8

typedef struct TcRun {
  char azEnv[TC_MAX_ENV][64];   /* names an env directive set; unset after the file */
  int nEnv;
  sqlite3 *db;
  char zStore[512];
  const char *zFile;
  int nFail, nCase;
  TcBuf report;
} TcRun;

static void tcFail(TcRun *pR, int iLine, const char *zWhat, const char *zWant, const char *zGot) {
  char zHead[600];
  pR->nFail++;
  snprintf(zHead, sizeof zHead, "%s/%s:%d: %s\n  expected: ", tcDir(), pR->zFile, iLine, zWhat);
  tcAppend(&pR->report, zHead, strlen(zHead));
  tcAppend(&pR->report, zWant, strlen(zWant));
  tcAppend(&pR->report, "\n  got:      ", 13);
  tcAppend(&pR->report, zGot, strlen(zGot));
  tcAppend(&pR->report, "\n", 1);
}

/* The path of store zName (n bytes) of the file being run. */
static const char *tcStorePath(TcRun *pR, const char *zName, int n) {
  char zBase[200];
  snprintf(zBase, sizeof zBase, "case-%.80s-%.*s.db", pR->zFile, n > 80 ? 80 : n, zName);
  return tuTempPath(zBase);
}

static void tcNewStore(TcRun *pR, const char *zName) {
  snprintf(pR->zStore, sizeof pR->zStore, "%s", tcStorePath(pR, zName, (int)strlen(zName)));
  unlink(pR->zStore);
}

/* z with every %store:NAME% replaced by that store's path (malloc'd). */
static char *tcSubstStores(TcRun *pR, const char *z) {
  TcBuf out = {0};
  tcAppend(&out, "", 0);
  while (*z) {
    const char *zAt = strstr(z, "%store:");
    const char *zEnd = zAt ? strchr(zAt + 7, '%') : NULL;
    if (zEnd == NULL) {
      tcAppend(&out, z, strlen(z));
      break;
    }
    tcAppend(&out, z, (size_t)(zAt - z));
    {
      const char *zPath = tcStorePath(pR, zAt + 7, (int)(zEnd - zAt - 7));
      tcAppend(&out, zPath, strlen(zPath));
    }
    z = zEnd + 1;
  }
  return out.z;
}

/* The rows of one statement as text lines (malloc'd), columns joined by
** '|', SQL NULL as NULL. */
typedef struct TcRows { char **az; int n, nAlloc; } TcRows;

static void tcRowsClear(TcRows *p) {
  int i;
  for (i = 0; i < p->n; i++) free(p->az[i]);
  p->n = 0;
}

/* Steps pStmt to its end, replacing p's rows by its rows; finalizes it.
** Returns the step's final code (SQLITE_DONE when it ran to the end). */
static int tcStepRows(sqlite3_stmt *pStmt, TcRows *p) {
  int rc;
  tcRowsClear(p);
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    TcBuf row = {0};
    int j;
    tcAppend(&row, "", 0);
    for (j = 0; j < sqlite3_column_count(pStmt); j++) {
      const char *z = (const char *)sqlite3_column_text(pStmt, j);
      if (j) tcAppend(&row, "|", 1);
      if (sqlite3_column_type(pStmt, j) == SQLITE_NULL) z = "NULL";
      tcAppend(&row, z ? z : "", z ? strlen(z) : 0);
    }
    if (p->n == p->nAlloc) {
      p->nAlloc = p->nAlloc ? p->nAlloc * 2 : 16;
      p->az = realloc(p->az, sizeof(char*) * (size_t)p->nAlloc);
      ck_assert_ptr_nonnull(p->az);
    }
    p->az[p->n++] = row.z;
  }
  sqlite3_finalize(pStmt);
  return rc;
}

/* p's rows joined by newlines (sorted first if bSort), or "error: <the
** connection's message>" when rc is not SQLITE_DONE; frees p's rows.
** malloc'd. */
static char *tcRowsText(sqlite3 *db, TcRows *p, int rc, int bSort) {
  TcBuf out = {0};
  int i;
  tcAppend(&out, "", 0);
  if (rc != SQLITE_DONE) {
    tcAppend(&out, "error: ", 7);
    tcAppend(&out, sqlite3_errmsg(db), strlen(sqlite3_errmsg(db)));
  } else {
    if (bSort && p->n > 1) qsort(p->az, (size_t)p->n, sizeof(char*), tcCmp);
    for (i = 0; i < p->n; i++) tcLine(&out, p->az[i]);
  }
  tcRowsClear(p);
  free(p->az);
  return out.z;
}

/* Runs every statement of zSql on db with parameter :db (or ?1) bound to
** the store; returns the last statement's rows (tcRowsText). */
static char *tcRunSql(TcRun *pR, sqlite3 *db, const char *zSql, int bSort) {
  const char *zTail = zSql;
  TcRows rows = {0};
  int rc = SQLITE_DONE, i;
  while (zTail && zTail[strspn(zTail, " \t\n;")]) {
    sqlite3_stmt *pStmt = NULL;
    const char *zNext = NULL;
    rc = sqlite3_prepare_v2(db, zTail, -1, &pStmt, &zNext);
    if (rc != SQLITE_OK) break;
    rc = SQLITE_DONE;
    if (pStmt == NULL) break;
    for (i = 1; i <= sqlite3_bind_parameter_count(pStmt); i++) {
      const char *zName = sqlite3_bind_parameter_name(pStmt, i);
      if (zName == NULL || strcmp(zName, ":db") == 0 || strcmp(zName, "?1") == 0) {
        sqlite3_bind_text(pStmt, i, pR->zStore, -1, SQLITE_TRANSIENT);
      }
    }
    rc = tcStepRows(pStmt, &rows);
    if (rc != SQLITE_DONE) break;
    zTail = zNext;
  }
  return tcRowsText(db, &rows, rc, bSort);
}

/* A plain connection to the store's file (no extension), or NULL when the
** file is not there yet (it is never created here). */
static sqlite3 *tcOpenStoreFile(TcRun *pR) {
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(pR->zStore, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
    sqlite3_close(db);
    return NULL;
  }
  return db;
}

/* zSql's rows on a connection of its own to the store's file ("sql store"). */
static char *tcRunStoreSql(TcRun *pR, const char *zSql) {
  sqlite3 *db = tcOpenStoreFile(pR);
  char *z;
  if (db == NULL) return strdup("error: the store's file does not exist");
  z = tcRunSql(pR, db, zSql, 0);
  sqlite3_close(db);
  return z;
}

/* Everything a transaction may change, as rows of text (malloc'd), or NULL
** when the store's file does not exist yet. */
static char *tcStoreDump(TcRun *pR) {
  static const char zDump[] =
    "SELECT 'D', e, a, quote(v), tx, value_type_tag, index_avet, index_vaet, index_fulltext,"
    " unique_value FROM datoms"
    " UNION ALL SELECT 'L', e, a, quote(v), tx, added, value_type_tag, timeline, 0, 0"
    " FROM timelined_transactions"
    " UNION ALL SELECT 'P', part, start, \"end\", idx, allow_excision, 0, 0, 0, 0 FROM known_parts"
    " UNION ALL SELECT 'I', e, a, quote(v), value_type_tag, 0, 0, 0, 0, 0 FROM idents"
    " UNION ALL SELECT 'S', e, a, quote(v), value_type_tag, 0, 0, 0, 0, 0 FROM schema"
    " UNION ALL SELECT 'M', name, a, kind, 0, 0, 0, 0, 0, 0 FROM mentat_managed_indexes"
    " UNION ALL SELECT 'F', rowid, text, 0, 0, 0, 0, 0, 0, 0 FROM fulltext_values"
    " UNION ALL SELECT 'X', name, sql, 0, 0, 0, 0, 0, 0, 0 FROM sqlite_master"
    " ORDER BY 1, 2, 3, 4, 5, 6";
  sqlite3 *db = tcOpenStoreFile(pR);
  char *z;
  if (db == NULL) return NULL;
  z = tcRunSql(pR, db, zDump, 0);
  sqlite3_close(db);
  return z;
}

/* Runs zSql with ?1 the store and ?2, ?3 the block's texts (NULL: unbound);
** its rows (tcRowsText). */
static char *tcRunBound(TcRun *pR, const char *zSql, const char *z2, const char *z3, int bSort) {
  sqlite3_stmt *pStmt = NULL;
  TcRows rows = {0};
  int rc = sqlite3_prepare_v2(pR->db, zSql, -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(pStmt, 1, pR->zStore, -1, SQLITE_TRANSIENT);
    if (z2) sqlite3_bind_text(pStmt, 2, z2, -1, SQLITE_TRANSIENT);
    if (z3) sqlite3_bind_text(pStmt, 3, z3, -1, SQLITE_TRANSIENT);
    rc = tcStepRows(pStmt, &rows);
  }
  return tcRowsText(pR->db, &rows, rc, bSort);
}

/* Sorts the lines of an expected block so that unordered results compare. */
static char *tcSortLines(const char *z) {
  char *zCopy = strdup(z), *zLine, *zSave = NULL;
  char **az = NULL;
  int n = 0, i;
  TcBuf out = {0};
  tcAppend(&out, "", 0);
  for (zLine = strtok_r(zCopy, "\n", &zSave); zLine; zLine = strtok_r(NULL, "\n", &zSave)) {
    az = realloc(az, sizeof(char*) * (size_t)(n + 1));
    az[n++] = zLine;
  }
  if (n > 1) qsort(az, (size_t)n, sizeof(char*), tcCmp);
  for (i = 0; i < n; i++) tcLine(&out, az[i]);
  free(az);
  free(zCopy);
  return out.z;
}

/* The report's value at each "PATH VALUE" line of zExpect, as the same
** lines (malloc'd); or the error, as tcRowsText gives it. */
static char *tcReportPaths(TcRun *pR, const char *zRep, const char *zExpect) {
  char *zCopy = strdup(zExpect), *zLine, *zSave = NULL;
  TcBuf out = {0};
  tcAppend(&out, "", 0);
  for (zLine = strtok_r(zCopy, "\n", &zSave); zLine; zLine = strtok_r(NULL, "\n", &zSave)) {
    char *zSp = strchr(zLine, ' '), *zVal;
    if (zSp) *zSp = 0;
    zVal = tcRunBound(pR, "SELECT coalesce(json_extract(?2, ?3), 'NULL')", zRep, zLine, 0);
    tcLine(&out, zLine);
    tcAppend(&out, " ", 1);
    tcAppend(&out, zVal, strlen(zVal));
    free(zVal);
  }
  free(zCopy);
  return out.z;
}

/* A tx block: *pzGot and *pzWant (malloc'd) as the expectation's kind
** compares them. A failing one must leave the store as it was. */
static void tcRunTx(TcRun *pR, TcBlock *pB, const char *zExpect, char **pzGot, char **pzWant) {
  if (strncmp(zExpect, "tempids ", 8) == 0) {
    *pzGot = tcRunBound(pR, "SELECT coalesce(json_extract(edn_t(?1, ?2), '$.tempids'), 'NULL')",
                        pB->body.z, NULL, 0);
    *pzWant = strdup(zExpect + 8);
  } else if (strncmp(zExpect, "report", 6) == 0 && (zExpect[6] == 0 || zExpect[6] == '\n')) {
    char *zRep = tcRunBound(pR, "SELECT edn_t(?1, ?2)", pB->body.z, NULL, 0);
    const char *zPaths = zExpect[6] ? zExpect + 7 : "";
    *pzGot = strncmp(zRep, "error: ", 7) == 0 ? strdup(zRep) : tcReportPaths(pR, zRep, zPaths);
    *pzWant = strdup(zPaths);
    free(zRep);
  } else if (strncmp(zExpect, "error: ", 7) == 0) {
    char *zBefore = tcStoreDump(pR), *zAfter;
    *pzGot = tcRunBound(pR, "SELECT CASE WHEN edn_t(?1, ?2) IS NOT NULL THEN 'ok' END",
                        pB->body.z, NULL, 0);
    *pzWant = strdup(zExpect);
    zAfter = zBefore ? tcStoreDump(pR) : NULL;
    if (zBefore && (zAfter == NULL || strcmp(zBefore, zAfter) != 0)) {
      tcFail(pR, pB->iLine, "tx block: the failed transaction changed the store", zBefore,
             zAfter ? zAfter : "(no store)");
    }
    free(zBefore);
    free(zAfter);
  } else {
    *pzGot = tcRunBound(pR, "SELECT CASE WHEN edn_t(?1, ?2) IS NOT NULL THEN 'ok' END",
                        pB->body.z, NULL, 0);
    *pzWant = strdup(zExpect);
  }
}

/* zSql with every "$STORE" replaced by the store's path (malloc'd). */
static char *tcSubstStore(TcRun *pR, const char *zSql) {
  TcBuf out = {0};
  const char *z = zSql, *zHit;
  tcAppend(&out, "", 0);
  while ((zHit = strstr(z, "$STORE")) != NULL) {
    tcAppend(&out, z, (size_t)(zHit - z));
    tcAppend(&out, pR->zStore, strlen(pR->zStore));
    z = zHit + 6;
  }
  tcAppend(&out, z, strlen(z));
  return out.z;
}

/* A query or pull block whose opts hold "with" (Datomic's d/with) must
** leave the store exactly as it was, as a failed transaction must. */
static int tcIsWith(const TcBlock *pB) {
  return pB->opts.n && strstr(pB->opts.z, "\"with\"") != NULL;
}

static void tcRunBlock(TcRun *pR, TcBlock *pB) {
  char *zGot = NULL, *zWant = NULL, *zBefore = NULL;
  const char *zExpect;
  char zWhat[64];
  if (strcmp(pB->zKind, "store") == 0) return;
  if (pB->expect.z && strstr(pB->expect.z, "%store:")) {
    char *z = tcSubstStores(pR, pB->expect.z);
    tcReset(&pB->expect);
    tcAppend(&pB->expect, z, strlen(z));
    free(z);
  }
  if (pB->opts.z && strstr(pB->opts.z, "%store:")) {
    char *z = tcSubstStores(pR, pB->opts.z);
    tcReset(&pB->opts);
    tcAppend(&pB->opts, z, strlen(z));
    free(z);
  }
  zExpect = pB->expect.z ? pB->expect.z : "";
  pR->nCase++;
  snprintf(zWhat, sizeof zWhat, "%s block", pB->zKind);
  if (!pB->bExpect) {
    tcFail(pR, pB->iLine, zWhat, "an => line", "none");
    return;
  }
  if (tcIsWith(pB)) zBefore = tcStoreDump(pR);
  if (strcmp(pB->zKind, "tx") == 0) {
    tcRunTx(pR, pB, zExpect, &zGot, &zWant);
  } else if (strcmp(pB->zKind, "query") == 0) {
    const char *zOpts = pB->opts.n ? pB->opts.z : NULL;
    if (pB->bScalar) {
      zGot = tcRunBound(pR, "SELECT edn_q(?1, ?2, ?3)", pB->body.z, zOpts, 0);
      zWant = strdup(zExpect);
    } else {
      int bSort = !pB->bOrdered && strncmp(zExpect, "error: ", 7) != 0;
      zGot = tcRunBound(pR, "SELECT value FROM edn_q(?1, ?2, ?3)", pB->body.z, zOpts, bSort);
      zWant = bSort ? tcSortLines(zExpect) : strdup(zExpect);
    }
  } else if (strcmp(pB->zKind, "pull") == 0) {
    char *zSql = sqlite3_mprintf("SELECT edn_pull(?1, ?2, %s%s%s)",
                                 pB->entity.n ? pB->entity.z : "NULL",
                                 pB->opts.n ? ", ?3" : "", "");
    zGot = tcRunBound(pR, zSql, pB->body.z, pB->opts.n ? pB->opts.z : NULL, 0);
    sqlite3_free(zSql);
    zWant = strdup(zExpect);
  } else if (strcmp(pB->zKind, "sql") == 0) {
    char *zSql = tcSubstStore(pR, pB->body.z);
    if (strstr(zSql, "%store:")) {
      char *z = tcSubstStores(pR, zSql);
      free(zSql);
      zSql = z;
    }
    zGot = pB->bStore ? tcRunStoreSql(pR, zSql) : tcRunSql(pR, pR->db, zSql, 0);
    free(zSql);
    zWant = strdup(zExpect);
  } else {
    tcFail(pR, pB->iLine, "unknown directive", "tx, query, pull, sql or store", pB->zKind);
    return;
  }
  if (strcmp(zGot, zWant) != 0) tcFail(pR, pB->iLine, zWhat, zWant, zGot);
  if (zBefore) {
    char *zAfter = tcStoreDump(pR);
    if (zAfter == NULL || strcmp(zBefore, zAfter) != 0) {
      tcFail(pR, pB->iLine, "\"with\" block: the store changed", zBefore, zAfter ? zAfter : "(no store)");
    }
    free(zAfter);
    free(zBefore);
  }
  free(zGot);
  free(zWant);
}

static void tcBlockReset(TcBlock *pB) {
  pB->zKind[0] = 0;
  pB->bOrdered = pB->bScalar = pB->bStore = pB->bExpect = 0;
  tcReset(&pB->body);
  tcReset(&pB->opts);
  tcReset(&pB->entity);
  tcReset(&pB->expect);
}

static void tcBlockFree(TcBlock *pB) {
  free(pB->body.z);
  free(pB->opts.z);
  free(pB->entity.z);
  free(pB->expect.z);
}

/* Parses the directive line of a block into pB; 0 if it is not one. */
static int tcDirective(TcRun *pR, TcBlock *pB, const char *zLine, int iLine) {
  char zWord[16];
  const char *z = zLine;
  int n = 0;
  while (z[n] && !isspace((unsigned char)z[n]) && n < 15) n++;
  memcpy(zWord, z, (size_t)n);
  zWord[n] = 0;
  if (strcmp(zWord, "store") == 0) {
    const char *zName = z + n + strspn(z + n, " \t");
    tcNewStore(pR, zName[0] ? zName : "default");
  } else if (strcmp(zWord, "env") == 0) {
    const char *zSet = z + n + strspn(z + n, " \t");
    const char *zEq = strchr(zSet, '=');
    ck_assert_msg(zEq && zEq > zSet && zEq - zSet < 64 && pR->nEnv < TC_MAX_ENV,
                  "line %d: env NAME=VALUE", iLine);
    snprintf(pR->azEnv[pR->nEnv], sizeof pR->azEnv[0], "%.*s", (int)(zEq - zSet), zSet);
    setenv(pR->azEnv[pR->nEnv++], zEq + 1, 1);
    strcpy(zWord, "store");          /* a block without a body, as store */
  } else if (strcmp(zWord, "tx") && strcmp(zWord, "query") && strcmp(zWord, "pull")
             && strcmp(zWord, "sql")) {
    return 0;
  }
  strcpy(pB->zKind, zWord);
  pB->iLine = iLine;
  pB->bOrdered = strstr(z + n, "ordered") != NULL;
  pB->bScalar = strstr(z + n, "scalar") != NULL;
  pB->bStore = strcmp(zWord, "sql") == 0 && strstr(z + n, "store") != NULL;
  return 1;
}

static void tcRunFile(TcRun *pR, const char *zPath) {
  FILE *f = fopen(zPath, "r");
  char *zLine = NULL;
  size_t nLine = 0;
  ssize_t n;
  int iLine = 0, bIn = 0;
  TcBlock b;
  memset(&b, 0, sizeof b);
  ck_assert_msg(f != NULL, "cannot open %s", zPath);
  tcNewStore(pR, "default");
  while ((n = getline(&zLine, &nLine, f)) >= 0) {
    iLine++;
    while (n > 0 && (zLine[n-1] == '\n' || zLine[n-1] == '\r')) zLine[--n] = 0;
    if (!bIn) {
      if (n == 0 || zLine[0] == '#') continue;
      tcBlockReset(&b);
      if (!tcDirective(pR, &b, zLine, iLine)) {
        tcFail(pR, iLine, "not a directive", "tx, query, pull, sql or store", zLine);
        continue;
      }
      bIn = strcmp(b.zKind, "store") != 0;
      continue;
    }
    if (n == 0) {            /* a blank line ends the block */
      tcRunBlock(pR, &b);
      bIn = 0;
      continue;
    }
    if (b.bExpect) {
      tcLine(&b.expect, zLine);
    } else if (strncmp(zLine, "=>", 2) == 0) {
      const char *zRest = zLine + 2 + strspn(zLine + 2, " ");
      b.bExpect = 1;
      if (zRest[0]) tcLine(&b.expect, zRest);
    } else if (strncmp(zLine, "opts ", 5) == 0 && strcmp(b.zKind, "sql") && strcmp(b.zKind, "tx")) {
      tcLine(&b.opts, zLine + 5);
    } else if (strncmp(zLine, "entity ", 7) == 0 && strcmp(b.zKind, "pull") == 0) {
      tcLine(&b.entity, zLine + 7);
    } else {
      tcLine(&b.body, zLine);
    }
  }
  if (bIn) tcRunBlock(pR, &b);
  while (pR->nEnv > 0) unsetenv(pR->azEnv[--pR->nEnv]);
  tcBlockFree(&b);
  free(zLine);
  fclose(f);
}

START_TEST(test_case_file) {
  TcRun r;
  char zPath[1024];
  memset(&r, 0, sizeof r);
  r.db = tuOpenHost();
  r.zFile = azFile[_i];
  snprintf(zPath, sizeof zPath, "%s/%s", tcDir(), azFile[_i]);
  tcAppend(&r.report, "", 0);
  tcRunFile(&r, zPath);
  sqlite3_close(r.db);
  if (r.nFail) fprintf(stderr, "%s", r.report.z);
  ck_assert_msg(r.nFail == 0, "%s: %d of %d blocks failed (listed above)", azFile[_i], r.nFail, r.nCase);
  ck_assert_msg(r.nCase > 0, "%s: no blocks", azFile[_i]);
  free(r.report.z);
}
END_TEST

/* No case file found (a wrong MENTAT_CASES_DIR, a missing folder): a
** failure, not a run of nothing that passes. */
START_TEST(test_no_case_files) {
  ck_abort_msg("no *.test files in %s", tcDir());
}
END_TEST

static Suite *casesSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("cases");
  TCase *tc = tcase_create("files");
  tcListFiles();
  tcase_set_timeout(tc, 120);
  if (nFile == 0) tcase_add_test(tc, test_no_case_files);
  else tcase_add_loop_test(tc, test_case_file, 0, nFile);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(casesSuite)
