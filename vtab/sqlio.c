/*
** sqlio.c — the SQL functions' argument text and results (see sqlio.h).
*/
#include <stddef.h>
#include <string.h>
#include "sqlio.h"

int sqlioText(sqlite3_value *pVal, const char **pz, int *pn) {
  *pz = (const char *)sqlite3_value_text(pVal);
  *pn = sqlite3_value_bytes(pVal);
  return *pz ? SQLITE_OK : SQLITE_NOMEM;
}

int sqlioTextIn(sqlite3_value *pVal, char *aBuf, int nBuf, const char **pz, int *pn) {
  if (sqlite3_value_type(pVal) == SQLITE_TEXT) {
    int n = sqlite3_value_bytes(pVal);        /* first: makes the value UTF-8 */
    if (n < nBuf) {
      const void *p = n > 0 ? sqlite3_value_blob(pVal) : NULL;
      if (p == NULL && n > 0) return SQLITE_NOMEM;
      if (n > 0) memcpy(aBuf, p, (size_t)n);
      aBuf[n] = 0;
      *pz = aBuf;
      *pn = n;
      return SQLITE_OK;
    }
  }
  return sqlioText(pVal, pz, pn);
}

/* The message of an error rc: an interrupt is "interrupted" whatever
** stage met it (a pull's statement, a lookup ref's, a store statement's
** own text), so every function says it alike ("edn_pull: interrupted",
** SPEC.md §7); a message that already begins so keeps what it adds
** (edn_t's "interrupted; nothing was stored"). Others are zErr, or the
** code's own text. */
static const char *sqlioMessage(int rc, const char *zErr) {
  if ((rc & 0xff) == SQLITE_INTERRUPT && (zErr == NULL || strncmp(zErr, "interrupted", 11) != 0)) {
    return "interrupted";
  }
  return zErr ? zErr : sqlite3_errstr(rc);
}

void sqlioError(sqlite3_context *pCtx, const char *zFunc, int rc, const char *zErr) {
  char *zMsg;
  if (rc == SQLITE_NOMEM) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  if (rc == SQLITE_OK) rc = SQLITE_ERROR;
  if (rc == SQLITE_TOOBIG) {
    zMsg = sqlite3_mprintf("%s: the result is more than SQLITE_LIMIT_LENGTH (%d bytes)", zFunc,
                           sqlite3_limit(sqlite3_context_db_handle(pCtx), SQLITE_LIMIT_LENGTH, -1));
  } else {
    zMsg = sqlite3_mprintf("%s: %s", zFunc, sqlioMessage(rc, zErr));
  }
  if (zMsg == NULL) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_error(pCtx, zMsg, -1);
  sqlite3_free(zMsg);
  /* Keeps the message; lets the host see SQLITE_INTERRUPT, SQLITE_BUSY... */
  if (rc != SQLITE_ERROR) sqlite3_result_error_code(pCtx, rc);
}

int sqlioVtabError(sqlite3_vtab *pVtab, const char *zFunc, int rc, const char *zErr) {
  sqlite3_free(pVtab->zErrMsg);
  pVtab->zErrMsg = NULL;
  if (rc == SQLITE_NOMEM) return rc;
  if (rc == SQLITE_OK) rc = SQLITE_ERROR;
  pVtab->zErrMsg = sqlite3_mprintf("%s: %s", zFunc, sqlioMessage(rc, zErr));
  return pVtab->zErrMsg ? rc : SQLITE_NOMEM;
}

void sqlioJson(sqlite3_context *pCtx, const char *zFunc, sqlite3_str *pOut) {
  int rc = sqlite3_str_errcode(pOut);
  char *z = sqlite3_str_finish(pOut);
  if (rc != SQLITE_OK || z == NULL) {
    sqlite3_free(z);
    sqlioError(pCtx, zFunc, rc == SQLITE_OK ? SQLITE_NOMEM : rc, NULL);
    return;
  }
  /* Length -1 (JSON has no NUL inside: ednPrintJson escapes it): SQLite
  ** then knows the text is terminated, and the host's sqlite3_column_text()
  ** does not copy the whole document again to add a terminator. */
  sqlite3_result_text(pCtx, z, -1, sqlite3_free);
  sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
}

int sqlioColumnTooBig(sqlite3_context *pCtx, const char *zFunc, const char *zCol) {
  char *zMsg = sqlite3_mprintf("%s: column %s is more than SQLITE_LIMIT_LENGTH (%d bytes)", zFunc, zCol,
                               sqlite3_limit(sqlite3_context_db_handle(pCtx), SQLITE_LIMIT_LENGTH, -1));
  if (zMsg == NULL) {
    sqlite3_result_error_nomem(pCtx);
    return SQLITE_NOMEM;
  }
  sqlite3_result_error(pCtx, zMsg, -1);
  sqlite3_free(zMsg);
  sqlite3_result_error_code(pCtx, SQLITE_TOOBIG);
  return SQLITE_TOOBIG;
}

sqlite3_str **sqlioOutSlot(sqlite3 *host, sqlite3_str **ppConnBuf, sqlite3_str **ppLocal) {
  *ppLocal = NULL;
  if (ppConnBuf && sqlite3_limit(host, SQLITE_LIMIT_LENGTH, -1) >= SQLIO_LENGTH_DEFAULT) return ppConnBuf;
  return ppLocal;
}

sqlite3_str *sqlioOutBegin(sqlite3_str **ppBuf, sqlite3 *host, int *piStart) {
  *piStart = 0;
  if (ppBuf == NULL) return NULL;
  if (*ppBuf && (sqlite3_str_errcode(*ppBuf) != SQLITE_OK
                 || sqlite3_str_length(*ppBuf) > SQLIO_OUT_KEEP)) {
    sqlite3_free(sqlite3_str_finish(*ppBuf));
    *ppBuf = NULL;
  }
  /* Made for host: its growth stops at host's SQLITE_LIMIT_LENGTH. */
  if (*ppBuf == NULL) *ppBuf = sqlite3_str_new(host);
  *piStart = sqlite3_str_length(*ppBuf);
  return *ppBuf;
}

void sqlioOutJson(sqlite3_context *pCtx, const char *zFunc, sqlite3_str **ppBuf, int iStart) {
  sqlite3_str *pOut = *ppBuf;
  int rc = sqlite3_str_errcode(pOut);
  int n = sqlite3_str_length(pOut) - iStart;
  /* A string kept from a call of a host with a higher limit. */
  if (rc == SQLITE_OK && n > sqlite3_limit(sqlite3_context_db_handle(pCtx), SQLITE_LIMIT_LENGTH, -1)) {
    rc = SQLITE_TOOBIG;
  }
  if (rc != SQLITE_OK) {
    sqlite3_free(sqlite3_str_finish(pOut));
    *ppBuf = NULL;
    sqlioError(pCtx, zFunc, rc, NULL);
    return;
  }
  if (iStart == 0 && n > SQLIO_OUT_KEEP) {
    /* Too big to keep around: no copy, the string goes to SQLite. */
    *ppBuf = NULL;
    sqlioJson(pCtx, zFunc, pOut);
    return;
  }
  /* From iStart to the buffer's end, which sqlite3_str_value terminates;
  ** length -1 as in sqlioJson. */
  sqlite3_result_text(pCtx, n > 0 ? sqlite3_str_value(pOut) + iStart : "", -1, SQLITE_TRANSIENT);
  sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
}

int sqlioConnectTable(sqlite3 *db, const char *zDecl, size_t nTab, sqlite3_vtab **ppVtab) {
  sqlite3_vtab *pTab;
  int rc = sqlite3_declare_vtab(db, zDecl);
  if (rc != SQLITE_OK) return rc;
  pTab = sqlite3_malloc64(nTab);
  if (pTab == NULL) return SQLITE_NOMEM;
  memset(pTab, 0, nTab);
  if (sqlite3_libversion_number() >= 3031000) sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  *ppVtab = pTab;
  return SQLITE_OK;
}
