/*
** edn_view.c — the edn_view module: a Datalog query kept in the host's
** schema as a read-only virtual table whose columns are named from the
** find spec and whose :in inputs are hidden columns.
**
**   CREATE VIRTUAL TABLE open_issues USING edn_view(db='tracker.db',
**     query='[:find ?title ?priority :in $ ?min
**             :where [?i :issue/title ?title] [?i :issue/priority ?priority]
**                    [(>= ?priority ?min)]]');
**   SELECT title FROM open_issues WHERE min = 4;
**
** Takes the CREATE VIRTUAL TABLE arguments (view_def.h: their rules, the
** column names, the path rule) and, per scan, the hidden columns' values
** as equality constraints; gives the query's rows with native column
** values, or an "edn_view: " error. Calls the definition (view_def.h), the
** call context (call.h) and the streaming core shared with the edn_q
** table (run_cursor.h).
**
** HOW IT WORKS
** xCreate reads the definition, declares the columns and checks the query
** against the store (compiled and prepared, every attribute known), so a
** bad view is never created. xConnect (every later connection, e.g. after
** reopening the host database) reads and declares the same way and checks
** again, but a failed check is kept and reported by every scan instead of
** failing the connect: SQLite connects a table to drop it, so a view whose
** store went away, or whose path the rule refuses, can still be dropped.
** The table is SQLITE_VTAB_DIRECTONLY: the schema's views and triggers
** cannot read it (the edn_* functions are SQLITE_DIRECTONLY for the same
** reason: a database file from elsewhere must not make the connection read
** files when its owner runs an innocent statement). xBestIndex takes an
** equality on each hidden column as that input, like the edn_q table's
** arguments (a plan without all inputs is accepted at a prohibitive cost
** and xFilter names the missing ones); xFilter builds the opts JSON from
** them (vdefOpts) and runs the query, followed through the ident renames
** since it was written (vdefResolve, kept per table until the schema
** changes: Datomic's old ident still refers to its entity). There is no xUpdate: SQLite refuses
** INSERT, UPDATE and DELETE itself.
*/
#include <string.h>
#include "sqlite_api.h"
#include "edn_view.h"
#include "run_cursor.h"
#include "sqlio.h"
#include "view_def.h"

typedef struct EviewTab {
  sqlite3_vtab base;
  sqlite3 *db;              /* the host connection */
  ViewDef def;
  char *zCheckErr;          /* xConnect's check failed: every scan reports it */
  /* The query as it reads the store now (vdefResolve), for the schemas of
  ** key iNowKey (bNow): renamed idents followed, or why it cannot run. */
  int bNow;
  sqlite3_uint64 iNowKey;
  char *zQueryNow, *zRulesNow, *zNowErr;
} EviewTab;

typedef struct EviewCursor {
  sqlite3_vtab_cursor base;
  RunCursor run;
  sqlite3_value **apIn;     /* the arguments of this scan (dups), def.nArg */
  sqlite3_int64 iRowBase;   /* see eviewRowid; 0 until asked */
  char *zQuery;             /* the followed query text this scan runs (the run reads it
                            ** while it lives), or NULL for the view's own */
} EviewCursor;

static void eviewFreeTab(EviewTab *pTab) {
  if (pTab == NULL) return;
  vdefFree(&pTab->def);
  sqlite3_free(pTab->zCheckErr);
  sqlite3_free(pTab->zQueryNow);
  sqlite3_free(pTab->zRulesNow);
  sqlite3_free(pTab->zNowErr);
  sqlite3_free(pTab);
}

/* xCreate (bCreate) and xConnect; see HOW IT WORKS. */
static int eviewInit(sqlite3 *db, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                     char **pzErr, int bCreate) {
  EviewTab *pTab;
  char *zErr = NULL;
  int rc;
  *ppVtab = NULL;
  if (sqlite3_libversion_number() < 3031000) {
    /* no SQLITE_VTAB_DIRECTONLY: the schema's views could read it */
    *pzErr = sqlite3_mprintf("edn_view: needs SQLite 3.31.0 or newer; this host has %s",
                             sqlite3_libversion());
    return SQLITE_ERROR;
  }
  pTab = sqlite3_malloc64(sizeof *pTab);
  if (pTab == NULL) return SQLITE_NOMEM;
  memset(pTab, 0, sizeof *pTab);
  pTab->db = db;
  rc = vdefParse(db, argc, argv, &pTab->def, &zErr);
  if (rc == SQLITE_OK) rc = sqlite3_declare_vtab(db, pTab->def.zDecl);
  if (rc == SQLITE_OK) rc = sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  if (rc == SQLITE_OK) {
    rc = vdefCheck(&pTab->def, db, bCreate, &zErr);
    if (rc != SQLITE_OK && rc != SQLITE_NOMEM && !bCreate) {
      pTab->zCheckErr = zErr ? zErr : sqlite3_mprintf("%s", sqlite3_errstr(rc));
      zErr = NULL;
      rc = pTab->zCheckErr ? SQLITE_OK : SQLITE_NOMEM;
    }
  }
  if (rc != SQLITE_OK) {
    if (rc != SQLITE_NOMEM) {
      *pzErr = sqlite3_mprintf("edn_view: %s", zErr ? zErr : sqlite3_errmsg(db));
    }
    sqlite3_free(zErr);
    eviewFreeTab(pTab);
    return rc;
  }
  *ppVtab = &pTab->base;
  return SQLITE_OK;
}

static int eviewCreate(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                       sqlite3_vtab **ppVtab, char **pzErr) {
  (void)pAux;
  return eviewInit(db, argc, argv, ppVtab, pzErr, 1);
}

static int eviewConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                        sqlite3_vtab **ppVtab, char **pzErr) {
  (void)pAux;
  return eviewInit(db, argc, argv, ppVtab, pzErr, 0);
}

static int eviewDisconnect(sqlite3_vtab *pVtab) {
  eviewFreeTab((EviewTab *)pVtab);
  return SQLITE_OK;
}

/* The argument column iCol gives, or -1. */
static int eviewArgOf(const ViewDef *pDef, int iCol) {
  int k;
  for (k = 0; k < pDef->nArg; k++) {
    if (pDef->aArgCol[k] == iCol) return k;
  }
  return -1;
}

/* Equalities on the input columns are the arguments: idxNum bit k =
** argument k is in argv (in argument order). The rest stays with SQLite. */
static int eviewBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  const ViewDef *pDef = &((EviewTab *)pVtab)->def;
  int aIdx[VDEF_MAX_INPUTS];
  int mUnusable = 0, idxNum = 0, nArg = 0, i;
  int mAll = (int)((1u << pDef->nArg) - 1);
  for (i = 0; i < pDef->nArg; i++) aIdx[i] = -1;
  for (i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *pC = &pInfo->aConstraint[i];
    int k = pC->op == SQLITE_INDEX_CONSTRAINT_EQ ? eviewArgOf(pDef, pC->iColumn) : -1;
    if (k < 0) continue;
    if (!pC->usable) mUnusable |= 1 << k;
    else if (aIdx[k] < 0) aIdx[k] = i;
  }
  for (i = 0; i < pDef->nArg; i++) {
    /* given but not usable in this plan: ask for another join order */
    if (aIdx[i] < 0 && (mUnusable & (1 << i))) return SQLITE_CONSTRAINT;
  }
  for (i = 0; i < pDef->nArg; i++) {
    if (aIdx[i] < 0) continue;
    pInfo->aConstraintUsage[aIdx[i]].argvIndex = ++nArg;
    /* consumed: a find column that gives an input holds that input's
    ** value (or, for a collection, one of its elements) on every row */
    pInfo->aConstraintUsage[aIdx[i]].omit = 1;
    idxNum |= 1 << i;
  }
  pInfo->idxNum = idxNum;
  if (idxNum != mAll) {
    /* an input is missing (or SQLite asks about one branch of an OR):
    ** accepted at a cost no complete plan reaches; xFilter names it */
    pInfo->estimatedCost = 1e99;
    pInfo->estimatedRows = 2147483647;
  } else {
    pInfo->estimatedCost = 1000.0;
    pInfo->estimatedRows = 1000;
  }
  return SQLITE_OK;
}

static void eviewFreeInputs(EviewCursor *pCur, int nArg) {
  int i;
  if (pCur->apIn == NULL) return;
  for (i = 0; i < nArg; i++) {
    sqlite3_value_free(pCur->apIn[i]);
    pCur->apIn[i] = NULL;
  }
}

static int eviewOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCur) {
  const ViewDef *pDef = &((EviewTab *)pVtab)->def;
  EviewCursor *pCur = sqlite3_malloc64(sizeof *pCur);
  if (pCur == NULL) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof *pCur);
  rcurInit(&pCur->run);
  if (pDef->nArg > 0) {
    pCur->apIn = sqlite3_malloc64(sizeof(sqlite3_value *) * (size_t)pDef->nArg);
    if (pCur->apIn == NULL) {
      sqlite3_free(pCur);
      return SQLITE_NOMEM;
    }
    memset(pCur->apIn, 0, sizeof(sqlite3_value *) * (size_t)pDef->nArg);
  }
  *ppCur = &pCur->base;
  return SQLITE_OK;
}

static int eviewClose(sqlite3_vtab_cursor *cur) {
  EviewCursor *pCur = (EviewCursor *)cur;
  rcurRelease(&pCur->run);
  eviewFreeInputs(pCur, ((EviewTab *)cur->pVtab)->def.nArg);
  sqlite3_free(pCur->zQuery);
  sqlite3_free(pCur->apIn);
  sqlite3_free(pCur);
  return SQLITE_OK;
}

/* "missing input min (WHERE min = ...)", "missing inputs a, b (WHERE a =
** ... AND b = ...)": the arguments idxNum lacks. */
static char *eviewMissing(const ViewDef *pDef, int idxNum) {
  sqlite3_str *pNames = sqlite3_str_new(NULL), *pWhere = sqlite3_str_new(NULL);
  char *zNames, *zWhere, *zMsg;
  int i, n = 0;
  for (i = 0; i < pDef->nArg; i++) {
    const char *zCol = pDef->azName[pDef->aArgCol[i]];
    if (idxNum & (1 << i)) continue;
    sqlite3_str_appendf(pNames, "%s%s", n ? ", " : "", zCol);
    sqlite3_str_appendf(pWhere, "%s%s = ...", n ? " AND " : "", zCol);
    n++;
  }
  zNames = sqlite3_str_finish(pNames);
  zWhere = sqlite3_str_finish(pWhere);
  zMsg = zNames && zWhere ? sqlite3_mprintf("missing input%s %s (WHERE %s)", n > 1 ? "s" : "",
                                            zNames, zWhere) : NULL;
  sqlite3_free(zNames);
  sqlite3_free(zWhere);
  return zMsg;
}

/* The query text a scan on pRun's call runs: the view's query with the
** idents renamed since it was written followed (vdefResolve), worked out
** again when the schemas change; the rules input follows too. An ident
** that cannot be followed is an error naming the view. */
static int eviewQueryNow(EviewTab *pTab, RunCursor *pRun, const char **pzQuery, char **pzErr) {
  sqlite3_uint64 iKey = vdefSchemaKey(&pRun->call, &pRun->opts);
  int rc = SQLITE_OK;
  if (!pTab->bNow || iKey != pTab->iNowKey) {
    sqlite3_free(pTab->zQueryNow);
    sqlite3_free(pTab->zRulesNow);
    sqlite3_free(pTab->zNowErr);
    pTab->zQueryNow = pTab->zRulesNow = pTab->zNowErr = NULL;
    pTab->bNow = 0;
    rc = vdefResolve(&pTab->def, &pRun->call, &pRun->opts, 1, &pTab->zQueryNow,
                     &pTab->zRulesNow, &pTab->zNowErr);
    if (rc == SQLITE_NOMEM) return rc;
    if (rc != SQLITE_OK && pTab->zNowErr == NULL) return rc;
    pTab->bNow = 1;
    pTab->iNowKey = iKey;
  }
  if (pTab->zNowErr) {
    *pzErr = sqlite3_mprintf("%s", pTab->zNowErr);
    return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if (pTab->zRulesNow) rc = vdefSetRules(&pTab->def, &pRun->opts, pTab->zRulesNow, pzErr);
  *pzQuery = pTab->zQueryNow ? pTab->zQueryNow : pTab->def.zQuery;
  return rc;
}

static int eviewFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                       sqlite3_value **argv) {
  EviewCursor *pCur = (EviewCursor *)cur;
  EviewTab *pTab = (EviewTab *)cur->pVtab;
  const ViewDef *pDef = &pTab->def;
  char *zErr = NULL, *zOpts = NULL;
  const char *zQuery = NULL;
  int i, j = 0, bNull = 0, rc = SQLITE_OK;
  (void)idxStr;
  rcurRelease(&pCur->run);
  eviewFreeInputs(pCur, pDef->nArg);
  sqlite3_free(pCur->zQuery);
  pCur->zQuery = NULL;
  pCur->iRowBase = 0;
  pCur->run.iRowid = 0;
  if (pTab->zCheckErr) {
    return sqlioVtabError(cur->pVtab, "edn_view", SQLITE_ERROR, pTab->zCheckErr);
  }
  if (idxNum != (int)((1u << pDef->nArg) - 1)) {
    zErr = eviewMissing(pDef, idxNum);
    rc = sqlioVtabError(cur->pVtab, "edn_view", zErr ? SQLITE_ERROR : SQLITE_NOMEM, zErr);
    sqlite3_free(zErr);
    return rc;
  }
  for (i = 0; i < pDef->nArg && j < argc; i++) {
    pCur->apIn[i] = sqlite3_value_dup(argv[j++]);
    if (pCur->apIn[i] == NULL) return SQLITE_NOMEM;
    if (sqlite3_value_type(pCur->apIn[i]) == SQLITE_NULL) bNull = 1;
  }
  /* SQL NULL equals nothing: no rows (as a NULL argument of edn_q). */
  if (bNull) return SQLITE_OK;
  rc = vdefOpts(pDef, pCur->apIn, &zOpts, &zErr);
  if (rc == SQLITE_OK) {
    rc = vcallBeginText(&pCur->run.call, pTab->db, pDef->zPath, VCALL_READ, &pCur->run.opts,
                        zOpts, (int)strlen(zOpts), &zErr);
  }
  if (rc == SQLITE_OK) rc = eviewQueryNow(pTab, &pCur->run, &zQuery, &zErr);
  if (rc == SQLITE_OK && zQuery != pDef->zQuery) {
    pCur->zQuery = sqlite3_mprintf("%s", zQuery);
    zQuery = pCur->zQuery;
    if (zQuery == NULL) rc = SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK) rc = rcurStart(&pCur->run, zQuery, (int)strlen(zQuery), &zErr);
  if (rc != SQLITE_OK) {
    rc = sqlioVtabError(cur->pVtab, "edn_view", rc, zErr);
    rcurRelease(&pCur->run);
  }
  sqlite3_free(zOpts);
  sqlite3_free(zErr);
  return rc;
}

static int eviewNext(sqlite3_vtab_cursor *cur) {
  EviewCursor *pCur = (EviewCursor *)cur;
  char *zErr = NULL;
  int rc = rcurStep(&pCur->run, &zErr);
  if (rc != SQLITE_OK) rc = sqlioVtabError(cur->pVtab, "edn_view", rc, zErr);
  sqlite3_free(zErr);
  return rc;
}

static int eviewEof(sqlite3_vtab_cursor *cur) {
  return ((EviewCursor *)cur)->run.bEof;
}

static int eviewColumn(sqlite3_vtab_cursor *cur, sqlite3_context *pCtx, int iCol) {
  EviewCursor *pCur = (EviewCursor *)cur;
  const ViewDef *pDef = &((EviewTab *)cur->pVtab)->def;
  if (iCol < pDef->nCol) return rcurColumn(&pCur->run, iCol, pCtx, "edn_view", pDef->azName[iCol]);
  /* a hidden column echoes the input the scan was given */
  {
    int k = eviewArgOf(pDef, iCol);
    if (pCur->apIn && k >= 0 && pCur->apIn[k]) sqlite3_result_value(pCtx, pCur->apIn[k]);
  }
  return SQLITE_OK;
}

/* Rowids: the row's number on a base chosen by the inputs' hash (one of
** 2^30 bases 2^32 apart), as the edn_q table numbers its rows: an OR in
** WHERE runs each branch on its own cursor and drops the rows whose rowid
** an earlier branch gave, so two scans with different inputs must not
** number their rows alike. */
static int eviewRowid(sqlite3_vtab_cursor *cur, sqlite_int64 *pRowid) {
  EviewCursor *pCur = (EviewCursor *)cur;
  const ViewDef *pDef = &((EviewTab *)cur->pVtab)->def;
  if (pCur->iRowBase == 0) {
    sqlite3_uint64 h = 14695981039346656037ull;
    int i, k;
    for (i = 0; pCur->apIn && i < pDef->nArg; i++) {
      sqlite3_value *pV = pCur->apIn[i];
      int e = pV ? sqlite3_value_type(pV) : SQLITE_NULL;
      const unsigned char *p = NULL;
      sqlite3_int64 iv;
      double rv;
      int n = 0;
      if (e == SQLITE_INTEGER) {
        iv = sqlite3_value_int64(pV);
        p = (const unsigned char *)&iv;
        n = (int)sizeof iv;
      } else if (e == SQLITE_FLOAT) {
        rv = sqlite3_value_double(pV);
        p = (const unsigned char *)&rv;
        n = (int)sizeof rv;
      } else if (e != SQLITE_NULL) {
        p = e == SQLITE_BLOB ? sqlite3_value_blob(pV) : sqlite3_value_text(pV);
        n = sqlite3_value_bytes(pV);
      }
      h = (h ^ (unsigned)e) * 1099511628211ull;
      for (k = 0; p && k < n; k++) h = (h ^ p[k]) * 1099511628211ull;
    }
    pCur->iRowBase = (sqlite3_int64)((h % 0x3FFFFFFFull) + 1) << 32;
  }
  *pRowid = pCur->iRowBase + pCur->run.iRowid;
  return SQLITE_OK;
}

static sqlite3_module eviewModule = {
  .iVersion = 0,
  .xCreate = eviewCreate,
  .xConnect = eviewConnect,
  .xBestIndex = eviewBestIndex,
  .xDisconnect = eviewDisconnect,
  .xDestroy = eviewDisconnect,      /* nothing is kept outside the schema */
  .xOpen = eviewOpen,
  .xClose = eviewClose,
  .xFilter = eviewFilter,
  .xNext = eviewNext,
  .xEof = eviewEof,
  .xColumn = eviewColumn,
  .xRowid = eviewRowid,
};

int eviewRegister(sqlite3 *db) {
  return sqlite3_create_module_v2(db, "edn_view", &eviewModule, NULL, NULL);
}
