/*
** datoms_cursor_args.c — the arguments of the raw-index tables (datoms_cursor.h):
** the copies their hidden columns echo after xFilter, and the time bounds
** (edn_log's start and end: a tx id or an instant).
**
** Takes the host's argument values; gives copies in the cursor's own
** buffer and the bound as a number. Calls SQLite, cJSON and the EDN reader.
*/
#include <string.h>
#include <cJSON.h>
#include "datoms_cursor.h"
#include "sqlio.h"

int dcurSaveArgs(DCursor *p, sqlite3_value **apIn, int nArg) {
  size_t nNeed = 0, iOfs = 0;
  int i;
  for (i = 0; i < DCUR_MAXARG; i++) p->aArg[i].eType = SQLITE_NULL;
  for (i = 0; i < nArg && i < DCUR_MAXARG; i++) {
    int e = apIn[i] ? sqlite3_value_type(apIn[i]) : SQLITE_NULL;
    if (e == SQLITE_TEXT || e == SQLITE_BLOB) nNeed += (size_t)sqlite3_value_bytes(apIn[i]) + 1;
  }
  if (nNeed > p->nArgBuf) {
    char *aNew = sqlite3_realloc64(p->aArgBuf, nNeed);
    if (aNew == NULL) return SQLITE_NOMEM;
    p->aArgBuf = aNew;
    p->nArgBuf = nNeed;
  }
  for (i = 0; i < nArg && i < DCUR_MAXARG; i++) {
    struct DCurArg *pA = &p->aArg[i];
    const void *pData;
    if (apIn[i] == NULL) continue;
    pA->eType = sqlite3_value_type(apIn[i]);
    switch (pA->eType) {
      case SQLITE_INTEGER: pA->i = sqlite3_value_int64(apIn[i]); break;
      case SQLITE_FLOAT: pA->r = sqlite3_value_double(apIn[i]); break;
      case SQLITE_TEXT:
      case SQLITE_BLOB:
        /* bytes first (makes TEXT UTF-8), then the bytes as they are: a
        ** host binds text without a terminator, which sqlite3_value_text
        ** would add by reallocating the argument (sqlio.h sqlioTextIn) */
        pA->n = sqlite3_value_bytes(apIn[i]);
        pData = sqlite3_value_blob(apIn[i]);
        if (pData == NULL && pA->n > 0) {
          pA->eType = SQLITE_NULL;
          return SQLITE_NOMEM;
        }
        pA->iOfs = iOfs;
        if (pA->n > 0) memcpy(p->aArgBuf + iOfs, pData, (size_t)pA->n);
        p->aArgBuf[iOfs + (size_t)pA->n] = 0;
        iOfs += (size_t)pA->n + 1;
        break;
      default: break;
    }
  }
  return SQLITE_OK;
}

void dcurArgResult(DCursor *p, int i, sqlite3_context *pCtx) {
  const struct DCurArg *pA;
  if (i < 0 || i >= DCUR_MAXARG) return;
  pA = &p->aArg[i];
  switch (pA->eType) {
    case SQLITE_INTEGER: sqlite3_result_int64(pCtx, pA->i); break;
    case SQLITE_FLOAT: sqlite3_result_double(pCtx, pA->r); break;
    case SQLITE_TEXT:
      sqlite3_result_text64(pCtx, p->aArgBuf + pA->iOfs, (sqlite3_uint64)pA->n, SQLITE_TRANSIENT,
                            SQLITE_UTF8);
      break;
    case SQLITE_BLOB:
      sqlite3_result_blob64(pCtx, p->aArgBuf + pA->iOfs, (sqlite3_uint64)pA->n, SQLITE_TRANSIENT);
      break;
    default: break;
  }
}

/* The EDN text of {"edn": "..."} in z[0..n), or NULL when it is not one. */
static char *dcurEdnText(const char *z, int n) {
  cJSON *pRoot = cJSON_ParseWithLength(z, (size_t)n);
  const cJSON *pEdn = pRoot && cJSON_IsObject(pRoot) && pRoot->child && !pRoot->child->next
                      ? cJSON_GetObjectItemCaseSensitive(pRoot, "edn") : NULL;
  char *zOut = pEdn && cJSON_IsString(pEdn) ? sqlite3_mprintf("%s", pEdn->valuestring) : NULL;
  cJSON_Delete(pRoot);
  return zOut;
}

int dcurTimeArg(sqlite3_value *pArg, const char *zWhat, sqlite3_int64 *pi, int *pbInst,
                char **pzErr) {
  const char *z;
  char *zEdn = NULL;
  int n, rc;
  EdnArena arena;
  EdnValue *pV = NULL;
  EdnError err;
  *pbInst = 0;
  if (sqlite3_value_type(pArg) == SQLITE_INTEGER) {
    *pi = sqlite3_value_int64(pArg);
    return SQLITE_OK;
  }
  rc = SQLITE_ERROR;
  ednArenaInit(&arena);
  if (sqlite3_value_type(pArg) == SQLITE_TEXT && sqlioText(pArg, &z, &n) == SQLITE_OK
      && (zEdn = dcurEdnText(z, n)) != NULL) {
    memset(&err, 0, sizeof err);
    rc = ednReadOne(&arena, zEdn, (int)strlen(zEdn), &pV, &err);
    if (rc == SQLITE_OK && pV->type == EDN_INST) {
      *pi = pV->u.i;
      *pbInst = 1;
    } else if (rc == SQLITE_OK && pV->type == EDN_INT) {
      *pi = pV->u.i;
    } else if (rc != SQLITE_NOMEM) {
      rc = SQLITE_ERROR;
    }
  }
  if (rc == SQLITE_ERROR) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("%s must be an INTEGER tx id or {\"edn\": \"#inst \\\"...\\\"\"}",
                             zWhat);
    if (*pzErr == NULL) rc = SQLITE_NOMEM;
  }
  sqlite3_free(zEdn);
  ednArenaReset(&arena);
  return rc;
}

