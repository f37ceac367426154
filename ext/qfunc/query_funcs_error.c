/*
** query_funcs_error.c — the error every run-time function of the family
** reports (qfErrorAt): a message prefixed with the place argument the
** compiler passes. Takes the call's context, the place and a printf
** format; gives the call's error result. Calls only SQLite. It lives
** below the registering file (query_funcs.c), which calls the function
** files, so no function file calls back up into it.
*/
#include <stdarg.h>
#include <math.h>
#include "query_funcs.h"

void qfErrorAt(sqlite3_context *pCtx, sqlite3_value *pWhere, const char *zFmt, ...) {
  va_list ap;
  char *zMsg, *zErr;
  va_start(ap, zFmt);
  zMsg = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  zErr = zMsg ? sqlite3_mprintf("%s: %s", (const char *)sqlite3_value_text(pWhere), zMsg) : NULL;
  if (zErr == NULL) sqlite3_result_error_nomem(pCtx);
  else sqlite3_result_error(pCtx, zErr, -1);
  sqlite3_free(zErr);
  sqlite3_free(zMsg);
}

void qfResultDouble(sqlite3_context *pCtx, sqlite3_value *pWhere, double d) {
  if (isnan(d)) qfErrorAt(pCtx, pWhere, "the result is NaN (not a number), which no query value holds");
  else sqlite3_result_double(pCtx, d);
}
