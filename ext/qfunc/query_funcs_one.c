/*
** query_funcs_one.c — mentat_one, an eponymous table-valued function on the
** store connections: one row holding its argument, or no row for NULL.
**
**   SELECT f2.value FROM mentat_one(mentat_inc('line 1 col 20: inc', ?1)) f1,
**                        mentat_one(mentat_inc('line 1 col 36: inc', f1.value)) f2
**
** Columns: value, tag (the arguments as given; tag NULL without one) and
** the hidden arguments arg, arg_tag. Calls SQLite only.
**
** HOW IT WORKS
** The query compiler binds a function's result to an SQL expression and
** writes that expression wherever the variable is used. A chain of
** functions ([(inc ?v0) ?v1] [(inc ?v1) ?v2] ...) would nest each result
** inside the next (SQL growing with the square of the chain, or doubling
** per step when a result is used twice, and past SQLite's parser stack).
** The compiler instead puts a result that deep into the FROM clause as
** mentat_one(expr), so later clauses name fN.value: each result is
** computed once per row and the SQL stays linear in the clauses. Like
** json_each, the argument may name columns of earlier FROM items: the
** argument is an equality constraint on the hidden column, and
** xBestIndex refuses plans where it is not yet usable (SQLITE_CONSTRAINT),
** so SQLite places the call after the tables it reads. A NULL argument
** gives no row: a nil result binds nothing (Datomic).
*/
#include <string.h>
#include "query_funcs.h"

/* Column numbers; they must match the declaration below. */
#define ONE_COL_VALUE   0
#define ONE_COL_TAG     1
#define ONE_COL_ARG     2
#define ONE_COL_ARGTAG  3

static const char oneDecl[] = "CREATE TABLE x(value, tag, arg HIDDEN, arg_tag HIDDEN)";

typedef struct OneCursor {
  sqlite3_vtab_cursor base;
  sqlite3_value *pValue;     /* copies of the arguments (NULL: none) */
  sqlite3_value *pTag;
  int bEof;
} OneCursor;

static int oneConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                      sqlite3_vtab **ppVtab, char **pzErr) {
  sqlite3_vtab *pTab;
  int rc;
  (void)pAux; (void)argc; (void)argv; (void)pzErr;
  rc = sqlite3_declare_vtab(db, oneDecl);
  if (rc != SQLITE_OK) return rc;
  pTab = sqlite3_malloc64(sizeof *pTab);
  if (pTab == NULL) return SQLITE_NOMEM;
  memset(pTab, 0, sizeof *pTab);
  *ppVtab = pTab;
  return SQLITE_OK;
}

static int oneDisconnect(sqlite3_vtab *pVtab) {
  sqlite3_free(pVtab);
  return SQLITE_OK;
}

static int oneOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCur) {
  OneCursor *pCur = sqlite3_malloc64(sizeof *pCur);
  (void)pVtab;
  if (pCur == NULL) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof *pCur);
  pCur->bEof = 1;
  *ppCur = &pCur->base;
  return SQLITE_OK;
}

static void oneReset(OneCursor *pCur) {
  sqlite3_value_free(pCur->pValue);
  sqlite3_value_free(pCur->pTag);
  pCur->pValue = NULL;
  pCur->pTag = NULL;
  pCur->bEof = 1;
}

static int oneClose(sqlite3_vtab_cursor *cur) {
  oneReset((OneCursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* idxNum: bit 0 arg given, bit 1 arg_tag given; argv in that order. */
static int oneFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv) {
  OneCursor *pCur = (OneCursor *)cur;
  int i = 0;
  (void)idxStr;
  oneReset(pCur);
  if ((idxNum & 1) && i < argc) {
    if (sqlite3_value_type(argv[i]) != SQLITE_NULL) {
      pCur->pValue = sqlite3_value_dup(argv[i]);
      if (pCur->pValue == NULL) return SQLITE_NOMEM;
    }
    i++;
  }
  if ((idxNum & 2) && i < argc) {
    pCur->pTag = sqlite3_value_dup(argv[i]);
    if (pCur->pTag == NULL) return SQLITE_NOMEM;
  }
  pCur->bEof = pCur->pValue == NULL;
  return SQLITE_OK;
}

static int oneNext(sqlite3_vtab_cursor *cur) {
  ((OneCursor *)cur)->bEof = 1;
  return SQLITE_OK;
}

static int oneEof(sqlite3_vtab_cursor *cur) {
  return ((OneCursor *)cur)->bEof;
}

static int oneColumn(sqlite3_vtab_cursor *cur, sqlite3_context *pCtx, int i) {
  OneCursor *pCur = (OneCursor *)cur;
  sqlite3_value *p = i == ONE_COL_VALUE || i == ONE_COL_ARG ? pCur->pValue : pCur->pTag;
  if (p) sqlite3_result_value(pCtx, p);
  return SQLITE_OK;
}

static int oneRowid(sqlite3_vtab_cursor *cur, sqlite_int64 *pRowid) {
  (void)cur;
  *pRowid = 1;
  return SQLITE_OK;
}

static int oneBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  int aIdx[2] = {-1, -1}, mUnusable = 0, nArg = 0, i;
  const struct sqlite3_index_constraint *pC = pInfo->aConstraint;
  (void)pVtab;
  for (i = 0; i < pInfo->nConstraint; i++, pC++) {
    int iArg;
    if (pC->iColumn < ONE_COL_ARG || pC->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    iArg = pC->iColumn - ONE_COL_ARG;
    if (!pC->usable) mUnusable |= 1 << iArg;
    else if (aIdx[iArg] < 0) aIdx[iArg] = i;
  }
  /* An argument that names a table not yet in the loop: another order. */
  for (i = 0; i < 2; i++) if (aIdx[i] < 0 && (mUnusable & (1 << i))) return SQLITE_CONSTRAINT;
  pInfo->idxNum = 0;
  for (i = 0; i < 2; i++) {
    if (aIdx[i] < 0) continue;
    pInfo->aConstraintUsage[aIdx[i]].argvIndex = ++nArg;
    pInfo->aConstraintUsage[aIdx[i]].omit = 1;
    pInfo->idxNum |= 1 << i;
  }
  /* One row per call, and computing it is the caller's expression. */
  pInfo->estimatedCost = 1.0;
  pInfo->estimatedRows = 1;
  pInfo->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
  return SQLITE_OK;
}

static sqlite3_module oneModule = {
  .iVersion = 0,
  .xCreate = 0,     /* eponymous-only */
  .xConnect = oneConnect,
  .xBestIndex = oneBestIndex,
  .xDisconnect = oneDisconnect,
  .xOpen = oneOpen,
  .xClose = oneClose,
  .xFilter = oneFilter,
  .xNext = oneNext,
  .xEof = oneEof,
  .xColumn = oneColumn,
  .xRowid = oneRowid,
};

int qfOneRegister(sqlite3 *db) {
  return sqlite3_create_module(db, "mentat_one", &oneModule, 0);
}
