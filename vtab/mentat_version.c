/*
** mentat_version.c — mentat_version(): which build of the extension a host
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
** Takes the optional format argument; calls SQLite only.
*/
#include <string.h>
#include "mentat_version.h"
#include "mentat.h"
#include "sqlio.h"

#ifndef MENTAT_VERSION
#define MENTAT_VERSION "unknown"
#endif
#ifndef MENTAT_COMMIT
#define MENTAT_COMMIT "unknown"
#endif

void versionFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
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
      sqlioError(pCtx, "mentat_version", z ? SQLITE_ERROR : SQLITE_NOMEM, z);
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
