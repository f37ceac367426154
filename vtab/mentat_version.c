/*
** func_version.c — mentat_version(): which build of the extension a host
** has loaded, the convention of sqlite-vec's vec_version() and sqlean's
** *_version().
**
**   SELECT mentat_version();        -- 0.3.0 (d78078e; sqlite >= 3.30)
**   SELECT mentat_version('json');  -- {"version":"0.3.0","commit":"d78078e",
**                                   --  "sqlite_min":"3.30.0","sqlite":"3.40.1"}
**
** The version comes from the VERSION file and the commit from git, both
** passed by the Makefile as MENTAT_VERSION and MENTAT_COMMIT ("unknown"
** when built outside a git checkout). "sqlite" is the host's own SQLite.
*/
#include <string.h>
#include "sqlio.h"
#include "mentat.h"

#ifndef MENTAT_VERSION
#define MENTAT_VERSION "unknown"
#endif
#ifndef MENTAT_COMMIT
#define MENTAT_COMMIT "unknown"
#endif

/* mentat_version([format]): text "V (COMMIT; sqlite >= 3.30)" with no
** argument, the JSON object (subtype J) with 'json', NULL for NULL, and an
** error naming the accepted formats for anything else. */
static void funcVersion(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const char *zFormat = NULL;
  int nMajor = MENTAT_MIN_SQLITE / 1000000, nMinor = MENTAT_MIN_SQLITE / 1000 % 1000;
  char *z;
  if (argc == 1) {
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
    zFormat = (const char *)sqlite3_value_text(argv[0]);
    if (zFormat == NULL) {
      sqlite3_result_error_nomem(pCtx);
      return;
    }
    if (strcmp(zFormat, "json") != 0) {
      z = sqlite3_mprintf("unknown format '%s' (give 'json', or no argument for text)", zFormat);
      funcResultError(pCtx, "mentat_version", z ? SQLITE_ERROR : SQLITE_NOMEM, z);
      sqlite3_free(z);
      return;
    }
    z = sqlite3_mprintf("{\"version\":\"%s\",\"commit\":\"%s\",\"sqlite_min\":\"%d.%d.0\","
                        "\"sqlite\":\"%s\"}", MENTAT_VERSION, MENTAT_COMMIT, nMajor, nMinor,
                        sqlite3_libversion());
  } else {
    z = sqlite3_mprintf("%s (%s; sqlite >= %d.%d)", MENTAT_VERSION, MENTAT_COMMIT, nMajor,
                        nMinor);
  }
  if (z == NULL) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_text(pCtx, z, -1, sqlite3_free);
  if (zFormat) sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
}

int funcVersionRegister(sqlite3 *db) {
  int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
  int rc;
  /* The JSON form carries the subtype; 3.45+ wants that declared. */
  if (sqlite3_libversion_number() >= 3045000) flags |= SQLITE_RESULT_SUBTYPE;
  rc = sqlite3_create_function_v2(db, "mentat_version", 0, flags, NULL, funcVersion, NULL,
                                      NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "mentat_version", 1, flags, NULL, funcVersion, NULL,
                                    NULL, NULL);
  return rc;
}
