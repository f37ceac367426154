/*
** query_compile_src.c — the data sources a query reads (Datomic's `:in $
** $2 ...`, opts "sources"): which source each clause reads, and the
** compile state switched to it. Takes the query's :in, the opts' sources
** (readied by qSourcesOpen: schemas, attached schema names) and the
** clauses; gives the compile its current source — the schema attribute
** idents resolve in, the tables (schema-qualified for another store file),
** the time filter (as of, since, history) and the rule CTEs of that
** source. Calls the scope helpers for errors and parameters only.
**
** HOW IT WORKS
** aSrc[0] is $, the store db_path names under the opts' own asOf, since
** and history; aSrc[k] is opts source k-1. Each clause that names a
** source — a data pattern [$2 ...], a function or predicate whose first
** argument is one ((get-else $2 ...)), a rule call ($2 rule ...), ($2 not
** ...), ($2 or ...) — is compiled with that source current (qcsEnter ..
** qcsLeave), and the clauses inside it (a rule's body, a not or or body)
** read it too when they name no source or name $: Datomic runs a rule
** called with a source on that source, as DataScript does. A parameter
** remembers the source it was made under (QParam.iSrc), so an ident or
** a lookup ref binds through that source's schema. Rule groups are
** compiled once per source: each source keeps its own QRuleInfo and its
** CTEs carry its tag (rules<tag><g>).
*/
#include <string.h>
#include "query_compile_scope.h"

/* The tables of a source: "datoms" or "<zDb>.datoms", ... */
static void qcsTables(QSrc *pS, const char *zDb) {
  const char *zDot = zDb[0] ? "." : "";
  sqlite3_snprintf(sizeof pS->zDatoms, pS->zDatoms, "%s%sdatoms", zDb, zDot);
  sqlite3_snprintf(sizeof pS->zLog, pS->zLog, "%s%stimelined_transactions", zDb, zDot);
  sqlite3_snprintf(sizeof pS->zFulltext, pS->zFulltext, "%s%sfulltext_values", zDb, zDot);
}

/* The asOf (bSince 0) or since tx of source k as SQL: a parameter, or for
** an instant the last transaction at or before it, in that source's log. */
static int qcsHistTx(QComp *pC, int k, int bSince, int bInst) {
  QSrc *pS = &pC->aSrc[k];
  int iSave = pC->iSrc, iP;
  char *z;
  pC->iSrc = k;
  /* i1 tells the binder which of the two the parameter is */
  iP = qcParam(pC, NULL, -1, bSince, -1, bInst ? QV_HIST_INST : QV_HIST_TX, VT_NONE);
  pC->iSrc = iSave;
  if (iP == 0) return pC->rc;
  if (bInst) {
    z = sqlite3_mprintf("(SELECT coalesce(max(e), 0) FROM %s WHERE a = %d AND v <= ?%d)",
                        pS->zDatoms, ENTID_DB_TXINSTANT, iP);
  } else {
    z = sqlite3_mprintf("?%d", iP);
  }
  if (z == NULL) return qcNoMem(pC);
  if (bSince) pS->zSinceTx = z;
  else pS->zAsOfTx = z;
  return SQLITE_OK;
}

/* Both filters of source k, each when given (SPEC.md §6). */
static int qcsTime(QComp *pC, int k, int bAsOf, const EdnValue *pAsOfInst, int bSince,
                   const EdnValue *pSinceInst) {
  if (bAsOf && qcsHistTx(pC, k, 0, pAsOfInst != NULL)) return pC->rc;
  if (bSince && qcsHistTx(pC, k, 1, pSinceInst != NULL)) return pC->rc;
  return SQLITE_OK;
}

/* Checks :in's sources against the opts' (each declared once, each given). */
static int qcsCheckIn(QComp *pC) {
  const QQuery *pQ = pC->pQ;
  int i, j, k;
  for (i = 0; i < pQ->nIn; i++) {
    const QIn *pIn = &pQ->aIn[i];
    if (pIn->kind != QIN_SRC) continue;
    for (j = 0; j < i; j++) {
      if (pQ->aIn[j].kind == QIN_SRC && ednIsSymbol(pQ->aIn[j].pForm, pIn->pForm->u.s.z)) {
        return qcErr(pC, pIn->pForm, "source %s is declared twice in :in", pIn->pForm->u.s.z);
      }
    }
    if (ednIsSymbol(pIn->pForm, "$")) {
      continue;
    }
    for (k = 1; k < pC->nSrc && strcmp(pC->aSrc[k].zName, pIn->pForm->u.s.z) != 0; k++) {}
    if (k == pC->nSrc) {
      return qcErr(pC, pIn->pForm, "source %s is not in opts \"sources\"", pIn->pForm->u.s.z);
    }
    pC->aSrc[k].pDecl = pIn->pForm;
  }
  for (k = 1; k < pC->nSrc; k++) {
    if (pC->aSrc[k].pDecl == NULL) {
      pC->pAt = NULL;
      return qcErr(pC, NULL, "\"sources\": %s is not declared in :in", pC->aSrc[k].zName);
    }
  }
  return SQLITE_OK;
}

int qcsInit(QComp *pC) {
  const QueryOpts *pOpts = pC->pOpts;
  int nSource = pOpts ? pOpts->nSource : 0, k;
  pC->aSrc = sqlite3_malloc64(sizeof(QSrc) * (sqlite3_uint64)(nSource + 1));
  if (pC->aSrc == NULL) return qcNoMem(pC);
  memset(pC->aSrc, 0, sizeof(QSrc) * (size_t)(nSource + 1));
  pC->nSrc = nSource + 1;
  pC->aSrc[0].zName = "$";
  pC->aSrc[0].pSchema = pC->pSchema;
  pC->aSrc[0].bHistory = pOpts && pOpts->bHistory;
  qcsTables(&pC->aSrc[0], "");
  /* asOf/since (SPEC.md §6): each tx is a parameter; an instant names the
  ** last transaction at or before it. */
  if (pOpts && qcsTime(pC, 0, pOpts->bAsOf, pOpts->pAsOfInst, pOpts->bSince, pOpts->pSinceInst)) {
    return pC->rc;
  }
  for (k = 1; k <= nSource; k++) {
    const QuerySource *pQs = &pOpts->aSource[k - 1];
    QSrc *pS = &pC->aSrc[k];
    pS->zName = pQs->zName;
    pS->pSchema = pQs->pSchema ? pQs->pSchema : pQs->zDb[0] || pQs->zPath ? NULL : pC->pSchema;
    pS->bHistory = pQs->bHistory;
    sqlite3_snprintf(sizeof pS->zTag, pS->zTag, "s%d_", k);
    qcsTables(pS, pQs->zDb);
    if (qcsTime(pC, k, pQs->bAsOf, pQs->pAsOfInst, pQs->bSince, pQs->pSinceInst)) return pC->rc;
  }
  if (qcsCheckIn(pC)) return pC->rc;
  for (k = 1; k <= nSource; k++) {
    if (pC->aSrc[k].pSchema == NULL) {
      /* qRunOpen without qSourcesOpen: a file source nobody opened. */
      return qcErr(pC, NULL, "source %s: its store was not opened", pC->aSrc[k].zName);
    }
  }
  pC->iSrc = -1;
  qcsUse(pC, 0);
  return pC->rc;
}

void qcsUse(QComp *pC, int k) {
  QSrc *pS = &pC->aSrc[k];
  if (pC->iSrc >= 0) pC->aSrc[pC->iSrc].pRi = pC->pRi;
  pC->iSrc = k;
  pC->pSchema = pS->pSchema;
  pC->zAsOfTx = pS->zAsOfTx;
  pC->zSinceTx = pS->zSinceTx;
  pC->bHistory = pS->bHistory;
  pC->zDatoms = pS->zDatoms;
  pC->zLog = pS->zLog;
  pC->zFulltext = pS->zFulltext;
  pC->zRuleTag = pS->zTag;
  pC->pRi = pS->pRi;
}

void qcsFree(QComp *pC) {
  int k;
  if (pC->aSrc == NULL) {
    qcxFree(pC);
    return;
  }
  if (pC->iSrc >= 0) pC->aSrc[pC->iSrc].pRi = pC->pRi;
  for (k = 0; k < pC->nSrc; k++) {
    pC->pRi = pC->aSrc[k].pRi;
    qcxFree(pC);
    sqlite3_free(pC->aSrc[k].zAsOfTx);
    sqlite3_free(pC->aSrc[k].zSinceTx);
  }
  pC->pRi = NULL;
  pC->zAsOfTx = NULL;
  pC->zSinceTx = NULL;
  sqlite3_free(pC->aSrc);
  pC->aSrc = NULL;
  pC->nSrc = 0;
}

const EdnValue *qcsClauseSrc(const QClause *pCl) {
  if (pCl->pSrc) return pCl->pSrc;
  if ((pCl->kind == QC_FN || pCl->kind == QC_PRED) && pCl->nArg > 0 && qpIsSrc(pCl->aArg[0])) {
    return pCl->aArg[0];
  }
  return NULL;
}

/* The source pSym names (NULL or $: the default), -1 when none. */
static int qcsFind(const QComp *pC, const EdnValue *pSym) {
  int k;
  if (pSym == NULL || ednIsSymbol(pSym, "$")) return pC->iSrcDefault;
  for (k = 1; k < pC->nSrc; k++) {
    if (ednIsSymbol(pSym, pC->aSrc[k].zName)) return k;
  }
  return -1;
}

int qcsEnter(QComp *pC, const QClause *pCl, QSrcSave *pSave) {
  const EdnValue *pSym = qcsClauseSrc(pCl);
  int k = qcsFind(pC, pSym);
  pSave->iSrc = pC->iSrc;
  pSave->iDefault = pC->iSrcDefault;
  if (k < 0) {
    return qcErr(pC, pSym, "unknown source %s (not declared in :in)", pSym->u.s.z);
  }
  if (k != pC->iSrc) qcsUse(pC, k);
  pC->iSrcDefault = k;
  return SQLITE_OK;
}

void qcsLeave(QComp *pC, const QSrcSave *pSave) {
  if (pC->aSrc && pSave->iSrc >= 0 && pSave->iSrc != pC->iSrc) qcsUse(pC, pSave->iSrc);
  pC->iSrcDefault = pSave->iDefault;
}

const Schema *qcsSchemaOf(const QComp *pC, const QClause *pCl) {
  int k;
  if (pC->aSrc == NULL) return pC->pSchema;
  k = qcsFind(pC, qcsClauseSrc(pCl));
  return k < 0 ? pC->pSchema : pC->aSrc[k].pSchema;
}
