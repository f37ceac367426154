/*
** datoms_cursor.c — the cursor the raw-index tables share (see
** datoms_cursor.h): the call opened with its opts, one store statement
** stepped as the host asks, and each row's attribute and value decoded.
*/
#include <string.h>
#include <cJSON.h>
#include "datoms_cursor.h"
#include "sqlio.h"
#include "value.h"

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
        pData = pA->eType == SQLITE_TEXT ? (const void *)sqlite3_value_text(apIn[i])
                                         : sqlite3_value_blob(apIn[i]);
        pA->n = sqlite3_value_bytes(apIn[i]);
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

/* The opts of a raw-index table hold a database filter only: "inputs" and
** keys edn_q may have besides mean nothing here. */
static int dcurOptsKeys(const char *zOpts, int nOpts, char **pzErr) {
  cJSON *pRoot = cJSON_ParseWithLength(zOpts, (size_t)nOpts);
  const cJSON *j;
  int rc = SQLITE_OK;
  if (pRoot == NULL) return SQLITE_OK;   /* qOptsParse judged it */
  for (j = cJSON_IsObject(pRoot) ? pRoot->child : NULL; j; j = j->next) {
    if (strcmp(j->string, "asOf") && strcmp(j->string, "since") && strcmp(j->string, "history")) {
      sqlite3_free(*pzErr);
      *pzErr = sqlite3_mprintf("unknown option \"%s\" (takes asOf, since, history)", j->string);
      rc = *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
      break;
    }
  }
  cJSON_Delete(pRoot);
  return rc;
}

int dcurBegin(DCursor *p, sqlite3 *host, sqlite3_value *pPath, sqlite3_value *pOpts, char **pzErr) {
  int rc = vcallBegin(&p->call, host, pPath, VCALL_QUERY, &p->opts, pOpts, pzErr);
  if (rc == SQLITE_OK && pOpts && sqlite3_value_type(pOpts) != SQLITE_NULL) {
    const char *z;
    int n;
    rc = sqlioText(pOpts, &z, &n);
    if (rc == SQLITE_OK) rc = dcurOptsKeys(z, n, pzErr);
    if (rc != SQLITE_OK) dcurRelease(p);
  }
  return rc;
}

int dcurPrepare(DCursor *p, const char *zSql, int n, sqlite3_stmt **ppStmt, char **pzErr) {
  int rc = qCacheStmt(p->call.pConn, zSql, n, &p->pStmt, &p->bOwnStmt, pzErr);
  *ppStmt = p->pStmt;
  return rc;
}

static void dcurDropStmt(DCursor *p);
static int dcurStepDone(DCursor *p, int rc);

void dcurRelease(DCursor *p) {
  dcurDropStmt(p);
  vcallEnd(&p->call);
  qOptsReset(&p->opts);
}

void dcurFree(DCursor *p) {
  dcurRelease(p);
  sqlite3_free(p->aArgBuf);
  p->aArgBuf = NULL;
  p->nArgBuf = 0;
}

/* Gives back the statement only (reset, or finalized when private). */
static void dcurDropStmt(DCursor *p) {
  if (p->pInstStmt) {
    if (p->bOwnInst) {
      sqlite3_finalize(p->pInstStmt);
    } else {
      sqlite3_reset(p->pInstStmt);
    }
  }
  p->pInstStmt = NULL;
  p->bOwnInst = 0;
  p->iInstTx = 0;
  if (p->pStmt) {
    if (p->bOwnStmt) {
      sqlite3_finalize(p->pStmt);
    } else {
      sqlite3_reset(p->pStmt);
      sqlite3_clear_bindings(p->pStmt);
    }
  }
  p->pStmt = NULL;
  p->bOwnStmt = 0;
}

/* The recheck itself: a read transaction, the schema made current. */
static int dcurRecheckNow(DCursor *p, int *pbRedo, char **pzErr) {
  Schema *pNew = NULL;
  int rc;
  dcurDropStmt(p);
  rc = storeReaderRecheck(p->call.pStore, p->call.pConn, &pNew, pzErr);
  if (rc != SQLITE_OK) return rc;
  schemaUnref(p->call.pSchema);
  p->call.pSchema = pNew;
  *pbRedo = 1;
  return SQLITE_OK;
}

int dcurRecheck(DCursor *p, int *pbRedo, char **pzErr) {
  *pbRedo = 0;
  if (p->call.pConn == NULL || !storeReaderIsLazy(p->call.pConn)) return SQLITE_OK;
  return dcurRecheckNow(p, pbRedo, pzErr);
}

int dcurStepFirst(DCursor *p, int *pbRedo) {
  int rc;
  *pbRedo = 0;
  if (storeReaderIsLazy(p->call.pConn)) {
    int bStale = 0;
    rc = sqlite3_step(p->pStmt);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
      int rc2 = storeReaderCheck(p->call.pStore, p->call.pConn, &bStale);
      if (rc2 == SQLITE_OK && bStale) {
        char *zErr = NULL;
        /* the check ended the reader's lazy state: recheck unconditionally */
        rc2 = dcurRecheckNow(p, pbRedo, &zErr);
        if (rc2 != SQLITE_OK) {
          dcurRelease(p);
          rc2 = sqlioVtabError(p->base.pVtab, p->zFunc, rc2, zErr);
        }
        sqlite3_free(zErr);
        return rc2;
      }
      if (rc2 != SQLITE_OK) {
        dcurRelease(p);
        return sqlioVtabError(p->base.pVtab, p->zFunc, rc2, NULL);
      }
    }
    return dcurStepDone(p, rc);
  }
  return dcurStep(p);
}

static int dcurStepDone(DCursor *p, int rc);

int dcurStep(DCursor *p) {
  return dcurStepDone(p, sqlite3_step(p->pStmt));
}

/* What a step's result rc means for the cursor (see dcurStep). */
static int dcurStepDone(DCursor *p, int rc) {
  if (rc == SQLITE_ROW) {
    p->bEof = 0;
    p->iRowid++;
    return SQLITE_OK;
  }
  p->bEof = 1;
  if (rc == SQLITE_DONE) {
    dcurRelease(p);
    return SQLITE_OK;
  }
  {
    char *zErr = sqlite3_mprintf("%s", vcallInterrupted(&p->call) ? "interrupted"
                                       : sqlite3_errmsg(p->call.pConn->db));
    if (vcallInterrupted(&p->call)) rc = SQLITE_INTERRUPT;
    dcurRelease(p);
    rc = sqlioVtabError(p->base.pVtab, p->zFunc, zErr ? rc : SQLITE_NOMEM, zErr);
    sqlite3_free(zErr);
  }
  return rc;
}

void dcurIdentResult(DCursor *p, int iCol, sqlite3_context *pCtx) {
  sqlite3_int64 a = sqlite3_column_int64(p->pStmt, iCol);
  const char *z = schemaIdent(p->call.pSchema, a);
  if (z) {
    sqlite3_result_text(pCtx, z, -1, SQLITE_TRANSIENT);
  } else {
    sqlite3_result_int64(pCtx, a);
  }
}

void dcurValueResult(DCursor *p, sqlite3_context *pCtx) {
  int tag = sqlite3_column_int(p->pStmt, DCUR_COL_TAG);
  if (tag == TAG_BYTES) {
    /* a tuple attribute's values are stored as bytes: its JSON array */
    const Attr *pA = schemaAttr(p->call.pSchema, sqlite3_column_int64(p->pStmt, DCUR_COL_A));
    if (pA && pA->type == VT_TUPLE) tag = TAG_TUPLE;
  }
  valueResultFromStored(pCtx, sqlite3_column_value(p->pStmt, DCUR_COL_V), tag);
}

void dcurTxInstantResult(DCursor *p, sqlite3_context *pCtx) {
  sqlite3_int64 tx = sqlite3_column_int64(p->pStmt, DCUR_COL_TX);
  if (tx != p->iInstTx || p->iInstTx == 0) {
    static const char zSql[] = "SELECT v FROM datoms WHERE e = ?1 AND a = 3";
    int rc = SQLITE_OK;
    char *zErr = NULL;
    if (p->pInstStmt == NULL) {
      rc = qCacheStmt(p->call.pConn, zSql, (int)sizeof zSql - 1, &p->pInstStmt, &p->bOwnInst, &zErr);
      sqlite3_free(zErr);
    }
    if (rc != SQLITE_OK) {
      sqlite3_result_error_code(pCtx, rc);
      return;
    }
    sqlite3_reset(p->pInstStmt);
    sqlite3_bind_int64(p->pInstStmt, 1, tx);
    p->iInstTx = 0;
    rc = sqlite3_step(p->pInstStmt);
    if (rc == SQLITE_ROW) {
      ednFormatInstant(sqlite3_column_int64(p->pInstStmt, 0), p->zInst);
      p->iInstTx = tx;
    }
    sqlite3_reset(p->pInstStmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      sqlite3_result_error_code(pCtx, rc);
      return;
    }
    if (p->iInstTx == 0) return;     /* a tx without an instant: NULL */
  }
  sqlite3_result_text(pCtx, p->zInst, -1, SQLITE_TRANSIENT);
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

int dcurColumn(DCursor *p, const unsigned char *aCol, int nCol, int iCol, sqlite3_context *pCtx) {
  if (iCol >= nCol) {
    dcurArgResult(p, iCol - nCol, pCtx);
    return SQLITE_OK;
  }
  if (p->pStmt == NULL || p->bEof) return SQLITE_OK;
  switch (aCol[iCol]) {
    case DCUR_COL_E:
    case DCUR_COL_TX:
      sqlite3_result_int64(pCtx, sqlite3_column_int64(p->pStmt, aCol[iCol]));
      break;
    case DCUR_COL_A: dcurIdentResult(p, DCUR_COL_A, pCtx); break;
    case DCUR_COL_V: dcurValueResult(p, pCtx); break;
    case DCUR_COL_INST: dcurTxInstantResult(p, pCtx); break;
    default:
      sqlite3_result_int(pCtx, sqlite3_column_int(p->pStmt, DCUR_COL_ADDED));
      break;
  }
  return SQLITE_OK;
}

int dcurNext(sqlite3_vtab_cursor *pCur) {
  return dcurStep((DCursor *)pCur);
}

int dcurEof(sqlite3_vtab_cursor *pCur) {
  return ((DCursor *)pCur)->bEof;
}

int dcurRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid) {
  *pRowid = ((DCursor *)pCur)->iRowid;
  return SQLITE_OK;
}
