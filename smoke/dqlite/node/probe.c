/*
** smoke/dqlite/node/probe.c — test-only SQL functions (node flag -probe)
** that write from inside a SELECT, the way edn_t does, to see what dqlite
** replicates (smoke/dqlite/NOTES.md):
**
**   probe_write(sql, args...)        runs sql on the CALLING connection
**                                    (sqlite3_context_db_handle), returns
**                                    its last_insert_rowid
**   probe_write_vfs(sql, args...)    runs sql on a SECOND connection to the
**                                    same database through the same VFS
**                                    (dqlite's in-memory one)
**   probe_write_file(path, sql, ...) runs sql on a SECOND connection to a
**                                    file of the node's file system through
**                                    SQLite's default VFS (today's file
**                                    store design)
**   probe_info()                     'vfs=NAME file=NAME autocommit=N'
*/
#include <stdio.h>
#include <string.h>
#include <sqlite3.h>

#include "register.h"

/* Prepares zSql on db, binds argv[0..argc) and steps it to the end.
** Returns an SQLite code; on error *pzErr gets a sqlite3_malloc'd message. */
static int probeRun(sqlite3 *db, const char *zSql, int argc, sqlite3_value **argv, char **pzErr) {
  sqlite3_stmt *stmt = NULL;
  int rc;
  int i;
  rc = sqlite3_prepare_v2(db, zSql, -1, &stmt, NULL);
  if (rc != SQLITE_OK) goto cleanup;
  for (i = 0; i < argc && rc == SQLITE_OK; i++) rc = sqlite3_bind_value(stmt, i + 1, argv[i]);
  if (rc != SQLITE_OK) goto cleanup;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
cleanup:
  if (rc != SQLITE_OK) *pzErr = sqlite3_mprintf("%s", sqlite3_errmsg(db));
  sqlite3_finalize(stmt);
  return rc;
}

static void probeWrite(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  char *zErr = NULL;
  const char *zSql = (const char *)sqlite3_value_text(argv[0]);
  if (zSql == NULL) {
    sqlite3_result_error(ctx, "probe_write: the first argument is the SQL", -1);
    return;
  }
  if (probeRun(db, zSql, argc - 1, argv + 1, &zErr) != SQLITE_OK) {
    char *zMsg = sqlite3_mprintf("probe_write: %s", zErr);
    sqlite3_result_error(ctx, zMsg, -1);
    sqlite3_free(zMsg);
    sqlite3_free(zErr);
    return;
  }
  sqlite3_result_int64(ctx, sqlite3_last_insert_rowid(db));
}

/* Opens a second connection (zFile through zVfs, NULL for the default VFS),
** runs the SQL and closes it. */
static void probeSecond(sqlite3_context *ctx, const char *zName, const char *zFile, const char *zVfs,
                        const char *zSql, int argc, sqlite3_value **argv) {
  sqlite3 *db2 = NULL;
  char *zErr = NULL;
  char *zMsg;
  int rc;
  rc = sqlite3_open_v2(zFile, &db2, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, zVfs);
  if (rc != SQLITE_OK) {
    zErr = sqlite3_mprintf("open %s: %s", zFile, db2 ? sqlite3_errmsg(db2) : sqlite3_errstr(rc));
    goto cleanup;
  }
  sqlite3_busy_timeout(db2, 2000);
  rc = probeRun(db2, zSql, argc, argv, &zErr);
  if (rc == SQLITE_OK) sqlite3_result_int64(ctx, sqlite3_last_insert_rowid(db2));
cleanup:
  if (zErr != NULL) {
    zMsg = sqlite3_mprintf("%s: %s", zName, zErr);
    sqlite3_result_error(ctx, zMsg, -1);
    sqlite3_free(zMsg);
    sqlite3_free(zErr);
  }
  sqlite3_close(db2);
}

static void probeWriteVfs(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  sqlite3_vfs *vfs = NULL;
  const char *zSql = (const char *)sqlite3_value_text(argv[0]);
  const char *zFile = sqlite3_db_filename(db, "main");
  if (zSql == NULL || zFile == NULL ||
      sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &vfs) != SQLITE_OK || vfs == NULL) {
    sqlite3_result_error(ctx, "probe_write_vfs: needs the SQL and a main database with a VFS", -1);
    return;
  }
  probeSecond(ctx, "probe_write_vfs", zFile, vfs->zName, zSql, argc - 1, argv + 1);
}

static void probeWriteFile(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *zFile = (const char *)sqlite3_value_text(argv[0]);
  const char *zSql = (const char *)sqlite3_value_text(argv[1]);
  if (zFile == NULL || zSql == NULL) {
    sqlite3_result_error(ctx, "probe_write_file: the arguments are a file name and the SQL", -1);
    return;
  }
  probeSecond(ctx, "probe_write_file", zFile, NULL, zSql, argc - 2, argv + 2);
}

static void probeInfo(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  sqlite3_vfs *vfs = NULL;
  const char *zFile = sqlite3_db_filename(db, "main");
  char *z;
  (void)argc;
  (void)argv;
  sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &vfs);
  z = sqlite3_mprintf("vfs=%s file=%s autocommit=%d", vfs ? vfs->zName : "?", zFile ? zFile : "?",
                      sqlite3_get_autocommit(db));
  sqlite3_result_text(ctx, z, -1, sqlite3_free);
}

static int probeInit(sqlite3 *db, char **pzErr, const sqlite3_api_routines *pApi) {
  int rc;
  (void)pzErr;
  (void)pApi;
  rc = sqlite3_create_function(db, "probe_write", -1, SQLITE_UTF8, NULL, probeWrite, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "probe_write_vfs", -1, SQLITE_UTF8, NULL, probeWriteVfs, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "probe_write_file", -1, SQLITE_UTF8, NULL, probeWriteFile, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "probe_info", 0, SQLITE_UTF8, NULL, probeInfo, NULL, NULL);
  return rc;
}

/* Registers the probe functions on every connection opened from now on. */
int mentatProbeRegister(void) {
  return sqlite3_auto_extension((void (*)(void))probeInit);
}
