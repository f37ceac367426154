/*
** query_sources.c — the extra data sources of a query (opts "sources",
** Datomic's `:in $ $2`) made ready on the reader connection: each source
** gets the schema its attribute idents resolve in, and each other store
** file is ATTACHed to the reader under a schema name of its own, so the
** query still compiles to one SQL statement on one connection (one read
** snapshot per file for the statement). Takes the main store, its checked
** out reader and the parsed opts; gives the opts' sources filled in (see
** QuerySource in query.h) or an error naming the source. Calls the store
** stage and SQLite.
**
** HOW IT WORKS
** A file source is opened as a store of its own (storeAcquire, the
** process-wide cache), which reads and revalidates its schema; the
** QuerySource keeps that store and schema until qOptsReset. Its schema
** name is "msrc_" and a 64-bit FNV-1a hash of the store's canonical path
** and file identity (device, inode), the same on every connection and
** every run, so compiled plans (cached per connection, their key naming
** the sources) stay valid as long as the file is attached. A file moved
** over the path is a new store (SPEC.md §4) under a new name: an
** attachment of the old file, whose entids the new schema does not
** describe, is never read for it, and is detached when the new one is
** attached. Attachments stay on the pooled connection for the
** next query; when SQLite's limit of attached files is reached, the ones
** this query does not name are detached first. A path naming db_path's own
** file (same device and inode) is the store itself, not attached twice.
*/
#include <string.h>
#include <sys/stat.h>
#include "query.h"

static int qsrcError(char **pzErr, char *zMsg) {
  sqlite3_free(*pzErr);
  *pzErr = zMsg;
  return zMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* "msrc_<16 hex digits>" for store pStore: its canonical path and file
** identity. */
static void qsrcDbName(const Store *pStore, char *zOut, int nOut) {
  sqlite3_uint64 h = 14695981039346656037ull, aId[2];
  const unsigned char *z;
  int i;
  for (z = (const unsigned char *)storePath(pStore); *z; z++) h = (h ^ *z) * 1099511628211ull;
  storeFileId(pStore, &aId[0], &aId[1]);
  for (i = 0; i < 16; i++) h = (h ^ ((aId[i / 8] >> (8 * (i % 8))) & 0xff)) * 1099511628211ull;
  sqlite3_snprintf(nOut, zOut, "msrc_%016llx", h);
}

/* Is zPath the file of store pMain (same device and inode)? */
static int qsrcIsMain(Store *pMain, const char *zPath) {
  const char *zMain = storePath(pMain);
  struct stat a, b;
  if (zMain == NULL || zMain[0] == 0 || zMain[0] == ':') return 0;
  if (stat(zPath, &a) != 0 || stat(zMain, &b) != 0) return 0;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Is pSeen, a store found by its path within the path-check bound, pMain's
** file (the identity each took when opened)? */
static int qsrcSeenIsMain(Store *pMain, Store *pSeen) {
  const char *zMain = storePath(pMain);
  sqlite3_uint64 aMain[2], aSeen[2];
  if (pSeen == pMain) return 1;
  if (zMain == NULL || zMain[0] == 0 || zMain[0] == ':') return 0;
  storeFileId(pMain, &aMain[0], &aMain[1]);
  storeFileId(pSeen, &aSeen[0], &aSeen[1]);
  return aMain[0] == aSeen[0] && aMain[1] == aSeen[1];
}

/* Opens file source pS: its store and schema, its schema name. The store
** of a path checked within the store cache's bound (storeAcquireSeen: a
** read learns of a file replaced or deleted at a path within it, README
** "Store cache") is taken without the stats; *pbMain is set when that store
** is pMain's file, which is then the source's (nothing opened). */
static int qsrcOpenFile(Store *pMain, int bHost, QuerySource *pS, int *pbMain,
                        char **pzErr) {
  const char *zPath = pS->zPath;
  StoreConn *pOther = NULL;
  Store *pSeen = NULL;
  struct stat st;
  int rc;
  *pbMain = 0;
  if (zPath[0] == 0 || zPath[0] == ':' || strncmp(zPath, "file:", 5) == 0) {
    return qsrcError(pzErr, sqlite3_mprintf("source %s: a source is a store file (not '', "
                                            "':memory:', a \"file:\" URI or a host store)",
                                            pS->zName));
  }
  if (storeAcquireSeen(zPath, &pSeen) == SQLITE_OK && qsrcSeenIsMain(pMain, pSeen)) {
    storeRelease(pSeen);
    *pbMain = 1;
    return SQLITE_OK;
  }
  if (pSeen == NULL && qsrcIsMain(pMain, zPath)) {
    *pbMain = 1;
    return SQLITE_OK;
  }
  if (pSeen == NULL && (stat(zPath, &st) != 0 || !S_ISREG(st.st_mode))) {
    return qsrcError(pzErr, sqlite3_mprintf("source %s: no store file at %s", pS->zName, zPath));
  }
  if (bHost) {
    /* Attaching would change the host's own connection. */
    storeRelease(pSeen);
    return qsrcError(pzErr, sqlite3_mprintf("source %s: a query on a host store cannot read other "
                                            "store files", pS->zName));
  }
  if (pSeen) {
    pS->pStore = pSeen;
    rc = SQLITE_OK;
  } else {
    rc = storeAcquire(zPath, &pS->pStore, pzErr);
  }
  if (rc == SQLITE_OK) rc = storeReader(pS->pStore, &pOther, &pS->pSchema, pzErr);
  if (pOther) storeReaderDone(pS->pStore, pOther);
  if (rc != SQLITE_OK) {
    char *zMsg = sqlite3_mprintf("source %s: %s", pS->zName, *pzErr ? *pzErr : "cannot open");
    int rcMsg = qsrcError(pzErr, zMsg);
    return rc == SQLITE_NOMEM ? rc : rcMsg;
  }
  qsrcDbName(pS->pStore, pS->zDb, (int)sizeof pS->zDb);
  return SQLITE_OK;
}

/* Is a file source of pOpts not attached to db? */
static int qsrcMissing(sqlite3 *db, const QueryOpts *pOpts) {
  int i;
  for (i = 0; i < pOpts->nSource; i++) {
    const QuerySource *pS = &pOpts->aSource[i];
    if (pS->zDb[0] && sqlite3_db_filename(db, pS->zDb) == NULL) return 1;
  }
  return 0;
}

/* Detaches msrc_ files (outside any transaction): with zFile NULL, the
** ones no source of pOpts names; else the ones of file zFile (an earlier
** file at that path) other than schema zKeep. */
static void qsrcDetachOthers(sqlite3 *db, const QueryOpts *pOpts, const char *zFile,
                             const char *zKeep) {
  char azName[16][24];
  int nName = 0, i, j;
  sqlite3_stmt *pList = NULL;
  if (sqlite3_prepare_v2(db, "PRAGMA database_list", -1, &pList, NULL) != SQLITE_OK) return;
  while (sqlite3_step(pList) == SQLITE_ROW && nName < 16) {
    const char *z = (const char *)sqlite3_column_text(pList, 1);
    const char *zF = (const char *)sqlite3_column_text(pList, 2);
    if (z && strncmp(z, "msrc_", 5) == 0 && strlen(z) < sizeof azName[0]) {
      if (zFile) {
        if (zF && strcmp(zF, zFile) == 0 && strcmp(z, zKeep) != 0) strcpy(azName[nName++], z);
        continue;
      }
      for (j = 0; j < pOpts->nSource && strcmp(pOpts->aSource[j].zDb, z) != 0; j++) {}
      if (j == pOpts->nSource) strcpy(azName[nName++], z);
    }
  }
  sqlite3_finalize(pList);
  for (i = 0; i < nName; i++) {
    char *zSql = sqlite3_mprintf("DETACH DATABASE \"%w\"", azName[i]);
    if (zSql) sqlite3_exec(db, zSql, NULL, NULL, NULL);
    sqlite3_free(zSql);
  }
}

/* Attaches every file source db lacks. */
static int qsrcAttach(sqlite3 *db, const QueryOpts *pOpts, char **pzErr) {
  int i, rc = SQLITE_OK, bRetried = 0;
  for (i = 0; i < pOpts->nSource && rc == SQLITE_OK; i++) {
    const QuerySource *pS = &pOpts->aSource[i];
    sqlite3_stmt *pStmt = NULL;
    char *zSql;
    if (pS->zDb[0] == 0 || sqlite3_db_filename(db, pS->zDb) != NULL) continue;
    if (!bRetried) qsrcDetachOthers(db, pOpts, storePath(pS->pStore), pS->zDb);
    zSql = sqlite3_mprintf("ATTACH DATABASE ?1 AS \"%w\"", pS->zDb);
    if (zSql == NULL) return SQLITE_NOMEM;
    rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL);
    sqlite3_free(zSql);
    if (rc == SQLITE_OK) {
      sqlite3_bind_text(pStmt, 1, storePath(pS->pStore), -1, SQLITE_STATIC);
      rc = sqlite3_step(pStmt);
      rc = rc == SQLITE_DONE ? SQLITE_OK : sqlite3_reset(pStmt);
    }
    if (rc != SQLITE_OK && !bRetried && strstr(sqlite3_errmsg(db), "too many attached")) {
      sqlite3_finalize(pStmt);
      qsrcDetachOthers(db, pOpts, NULL, NULL);
      bRetried = 1;
      rc = SQLITE_OK;
      i--;
      continue;
    }
    if (rc != SQLITE_OK) {
      qsrcError(pzErr, sqlite3_mprintf("source %s: cannot attach %s: %s", pS->zName,
                                       storePath(pS->pStore), sqlite3_errmsg(db)));
    }
    sqlite3_finalize(pStmt);
  }
  return rc;
}

/* How many distinct files the sources attach. */
static int qsrcFileCount(const QueryOpts *pOpts) {
  int i, j, n = 0;
  for (i = 0; i < pOpts->nSource; i++) {
    const QuerySource *pS = &pOpts->aSource[i];
    if (pS->zDb[0] == 0) continue;
    for (j = 0; j < i && strcmp(pOpts->aSource[j].zDb, pS->zDb) != 0; j++) {}
    if (j == i) n++;
  }
  return n;
}

void qSourcesSetMain(QueryOpts *pOpts, Schema *pSchema) {
  int i;
  for (i = 0; i < pOpts->nSource; i++) {
    QuerySource *pS = &pOpts->aSource[i];
    if (pS->pStore != NULL || pS->pSchema == NULL || pS->pSchema == pSchema) continue;
    schemaUnref(pS->pSchema);
    pS->pSchema = pSchema;
    schemaRef(pSchema);
  }
}

int qSourcesOpen(Store *pMain, StoreConn **ppConn, Schema **ppSchema, QueryOpts *pOpts,
                 char **pzErr) {
  int i, rc = SQLITE_OK, nTry, nFile, nMax;
  if (pOpts == NULL || pOpts->nSource == 0) return SQLITE_OK;
  for (i = 0; i < pOpts->nSource && rc == SQLITE_OK; i++) {
    QuerySource *pS = &pOpts->aSource[i];
    int bMain = 0;
    if (pS->zPath) rc = qsrcOpenFile(pMain, (*ppConn)->bHost, pS, &bMain, pzErr);
  }
  nFile = rc == SQLITE_OK ? qsrcFileCount(pOpts) : 0;
  nMax = sqlite3_limit((*ppConn)->db, SQLITE_LIMIT_ATTACHED, -1);
  if (nFile > nMax) {
    return qsrcError(pzErr, sqlite3_mprintf("\"sources\" names %d other store files; SQLite attaches"
                                            " at most %d to one connection", nFile, nMax));
  }
  /* A reader checked out again after attaching is most likely the same
  ** (the pool hands back the idle connection last returned); another one
  ** gets the files too, a few times at most. */
  for (nTry = 0; rc == SQLITE_OK && qsrcMissing((*ppConn)->db, pOpts); nTry++) {
    if (nTry == 4) {
      return qsrcError(pzErr, sqlite3_mprintf("cannot attach the sources' store files"));
    }
    storeReaderEndRead(pMain, *ppConn);
    rc = qsrcAttach((*ppConn)->db, pOpts, pzErr);
    storeReaderDone(pMain, *ppConn);
    *ppConn = NULL;
    schemaUnref(*ppSchema);
    *ppSchema = NULL;
    if (rc == SQLITE_OK) rc = storeReader(pMain, ppConn, ppSchema, pzErr);
  }
  for (i = 0; i < pOpts->nSource && rc == SQLITE_OK; i++) {
    QuerySource *pS = &pOpts->aSource[i];
    if (pS->pStore == NULL) {
      schemaUnref(pS->pSchema);
      pS->pSchema = *ppSchema;
      schemaRef(pS->pSchema);
    }
  }
  return rc;
}

int qSourcesRefuseFiles(Store *pMain, QueryOpts *pOpts, char **pzErr) {
  int i, rc = SQLITE_OK;
  for (i = 0; pOpts && i < pOpts->nSource && rc == SQLITE_OK; i++) {
    int bMain = 0;
    if (pOpts->aSource[i].zPath) rc = qsrcOpenFile(pMain, 1, &pOpts->aSource[i], &bMain, pzErr);
  }
  return rc;
}

int qSourcesWith(Store *pMain, Schema *pSchema, QueryOpts *pOpts, char **pzErr) {
  int i;
  for (i = 0; i < pOpts->nSource; i++) {
    QuerySource *pS = &pOpts->aSource[i];
    if (pS->zPath && !qsrcIsMain(pMain, pS->zPath)) {
      return qsrcError(pzErr, sqlite3_mprintf("\"sources\" %s: another store file cannot be read"
                                              " beside \"with\" (the with-database is read on the"
                                              " store's writer connection, where no other store file"
                                              " is attached)", pS->zName));
    }
    schemaUnref(pS->pSchema);
    pS->pSchema = pSchema;
    schemaRef(pSchema);
  }
  return SQLITE_OK;
}

void qSourcesWithBasis(QueryOpts *pOpts, sqlite3_int64 iBasis) {
  int i;
  for (i = 0; i < pOpts->nSource; i++) {
    QuerySource *pS = &pOpts->aSource[i];
    if (!pS->bAsOf || pS->iAsOf > iBasis) {
      pS->bAsOf = 1;
      pS->iAsOf = iBasis;
    }
  }
}
