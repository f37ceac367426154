/*
** edn_datoms_plan.c — edn_datoms' xBestIndex: which constraints are its
** arguments, which v bounds, LIMIT and OFFSET go into the store's SQL, and
** whether the rows' order is the ORDER BY's. Pure and cheap: SQLite calls
** it many times per prepare. Calls SQLite only.
*/
#include <string.h>
#include "edn_datoms_int.h"

const char *const eddIndexNames[4] = {":eavt", ":aevt", ":avet", ":vaet"};
const char *const eddSlotNames[4] = {"eav", "aev", "ave", "vae"};

/* True for a component that is the opts: TEXT whose first non-blank is '{'. */
int eddIsOpts(sqlite3_value *pVal) {
  const unsigned char *z;
  if (pVal == NULL || sqlite3_value_type(pVal) != SQLITE_TEXT) return 0;
  z = sqlite3_value_text(pVal);
  while (z && (*z == ' ' || *z == '\t' || *z == '\n' || *z == '\r')) z++;
  return z && *z == '{';
}

/* ------------------------------------------------------------ xBestIndex */

/* The index named by a constant `index` argument (sqlite3_vtab_rhs_value,
** SQLite 3.38+), or -1. */
static int eddIndexRhs(sqlite3_index_info *pInfo, int iCons) {
  sqlite3_value *pV = NULL;
  const char *z;
  int i;
  if (sqlite3_libversion_number() < 3038000) return -1;
  if (sqlite3_vtab_rhs_value(pInfo, iCons, &pV) != SQLITE_OK || pV == NULL) return -1;
  if (sqlite3_value_type(pV) != SQLITE_TEXT || (z = (const char *)sqlite3_value_text(pV)) == NULL) {
    return -1;
  }
  for (i = 0; i < 4; i++) if (strcmp(z, eddIndexNames[i]) == 0) return i;
  return -1;
}

/* A component known to be one (a constant that is not the opts). */
static int eddCompRhs(sqlite3_index_info *pInfo, int iCons) {
  sqlite3_value *pV = NULL;
  if (iCons < 0 || sqlite3_libversion_number() < 3038000) return 0;
  if (sqlite3_vtab_rhs_value(pInfo, iCons, &pV) != SQLITE_OK || pV == NULL) return 0;
  return sqlite3_value_type(pV) != SQLITE_NULL && !eddIsOpts(pV);
}

/* Whether the rows' order (the index's, the given components fixed)
** satisfies the ORDER BY: ascending terms on the index's columns in its
** order, leaving out the fixed ones. The `a` column (an ident) sorts by
** entid in the index, so it counts only when fixed; tx and added never. */
static int eddOrderConsumed(sqlite3_index_info *pInfo, int eIndex, const int *aIdx) {
  static const int aCols[4][3] = {
    {EDND_COL_E, EDND_COL_A, EDND_COL_V}, {EDND_COL_A, EDND_COL_E, EDND_COL_V},
    {EDND_COL_A, EDND_COL_V, EDND_COL_E}, {EDND_COL_V, EDND_COL_A, EDND_COL_E}};
  int k = 0, i;
  if (eIndex < 0 || pInfo->nOrderBy == 0) return 0;
  for (i = 0; i < pInfo->nOrderBy; i++) {
    const struct sqlite3_index_orderby *pO = &pInfo->aOrderBy[i];
    if (pO->desc) return 0;
    while (k < 3 && eddCompRhs(pInfo, aIdx[2 + k]) && aCols[eIndex][k] != pO->iColumn) k++;
    if (k >= 3 || aCols[eIndex][k] != pO->iColumn) return 0;
    if (pO->iColumn == EDND_COL_A && !eddCompRhs(pInfo, aIdx[2 + k])) return 0;
    k++;
  }
  return 1;
}

/* Pure and cheap (called many times per prepare). The arguments are
** equality constraints on the hidden columns, as edn_q's; the v bounds and
** LIMIT/OFFSET are pushed when every other constraint is ours (SQLite
** applies LIMIT to what the table gives only then). The v bounds are not
** omitted: SQLite checks the native values again, so a bound the store's
** encoding cannot express (xFilter leaves it out) loses nothing. */
int eddBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  int aIdx[EDND_NARG] = {-1, -1, -1, -1, -1, -1};
  int iLo = -1, iHi = -1, iLimit = -1, iOffset = -1, opLo = 0, opHi = 0;
  int mUnusable = 0, idxNum = 0, nArg = 0, nComp = 0, bAllOurs = 1, i, eIndex = -1;
  const struct sqlite3_index_constraint *pC = pInfo->aConstraint;
  (void)pVtab;
  for (i = 0; i < pInfo->nConstraint; i++, pC++) {
    if (pC->iColumn >= EDND_COL_DBPATH && pC->op == SQLITE_INDEX_CONSTRAINT_EQ) {
      int iArg = pC->iColumn - EDND_COL_DBPATH;
      if (!pC->usable) mUnusable |= 1 << iArg;
      else if (aIdx[iArg] < 0) aIdx[iArg] = i;
      else bAllOurs = 0;
    } else if (pC->usable && pC->iColumn == EDND_COL_V
               && (pC->op == SQLITE_INDEX_CONSTRAINT_GT || pC->op == SQLITE_INDEX_CONSTRAINT_GE)
               && iLo < 0) {
      iLo = i;
      opLo = pC->op == SQLITE_INDEX_CONSTRAINT_GT ? EDND_LO_GT : EDND_LO_GE;
    } else if (pC->usable && pC->iColumn == EDND_COL_V
               && (pC->op == SQLITE_INDEX_CONSTRAINT_LT || pC->op == SQLITE_INDEX_CONSTRAINT_LE)
               && iHi < 0) {
      iHi = i;
      opHi = pC->op == SQLITE_INDEX_CONSTRAINT_LT ? EDND_HI_LT : EDND_HI_LE;
    } else if (pC->usable && pC->op == SQLITE_INDEX_CONSTRAINT_LIMIT) {
      iLimit = i;
    } else if (pC->usable && pC->op == SQLITE_INDEX_CONSTRAINT_OFFSET) {
      iOffset = i;
    } else {
      bAllOurs = 0;
    }
  }
  for (i = 0; i < EDND_NARG; i++) {
    /* given but not usable in this plan: ask for another order */
    if (aIdx[i] < 0 && (mUnusable & (1 << i))) return SQLITE_CONSTRAINT;
  }
  for (i = 0; i < EDND_NARG; i++) {
    if (aIdx[i] < 0) continue;
    pInfo->aConstraintUsage[aIdx[i]].argvIndex = ++nArg;
    pInfo->aConstraintUsage[aIdx[i]].omit = 1;
    idxNum |= 1 << i;
    if (i >= 2 && i <= 4) nComp++;
  }
  if (iLo >= 0) { pInfo->aConstraintUsage[iLo].argvIndex = ++nArg; idxNum |= opLo; }
  if (iHi >= 0) { pInfo->aConstraintUsage[iHi].argvIndex = ++nArg; idxNum |= opHi; }
  if (aIdx[1] >= 0) eIndex = eddIndexRhs(pInfo, aIdx[1]);
  if (eddOrderConsumed(pInfo, eIndex, aIdx)) pInfo->orderByConsumed = 1;
  if (bAllOurs && iLimit >= 0 && (pInfo->nOrderBy == 0 || pInfo->orderByConsumed)) {
    pInfo->aConstraintUsage[iLimit].argvIndex = ++nArg;
    idxNum |= EDND_LIMIT;
    if (iOffset >= 0) {
      pInfo->aConstraintUsage[iOffset].argvIndex = ++nArg;
      idxNum |= EDND_OFFSET;
    }
  }
  /* bit i of colUsed is column i, bit 63 every column from 63 on */
  if (pInfo->colUsed & ~(((sqlite3_uint64)1 << EDND_COL_DBPATH) - 1)) idxNum |= EDND_ECHO;
  pInfo->idxNum = idxNum;
  if ((idxNum & EDND_REQUIRED) != EDND_REQUIRED) {
    /* as edn_q: a plan without a required argument is accepted at a cost
    ** no plan with them reaches, and xFilter names what is missing */
    pInfo->estimatedCost = 1e99;
    pInfo->estimatedRows = 2147483647;
    return SQLITE_OK;
  }
  /* each component narrows the index by a lot; a range by some */
  pInfo->estimatedRows = nComp >= 3 ? 1 : nComp == 2 ? 10 : nComp == 1 ? 1000 : 1000000;
  if (iLo >= 0 || iHi >= 0) pInfo->estimatedRows = pInfo->estimatedRows / 4 + 1;
  pInfo->estimatedCost = (double)pInfo->estimatedRows * 2 + 10;
  return SQLITE_OK;
}
