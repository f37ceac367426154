/*
** edn_datoms_int.h — what the files of edn_datoms share: its columns, the
** idxNum bits xBestIndex (edn_datoms_plan.c) hands xFilter (edn_datoms.c),
** the index names and the test for an opts argument.
*/
#ifndef MENTAT_EDN_DATOMS_INT_H
#define MENTAT_EDN_DATOMS_INT_H

#include "sqlite_api.h"

#define EDND_COL_E      0
#define EDND_COL_A      1
#define EDND_COL_V      2
#define EDND_COL_TX     3
#define EDND_COL_ADDED  4
#define EDND_COL_DBPATH 5
#define EDND_COL_C1     7
#define EDND_COL_OPTS   10
#define EDND_NARG       6      /* db_path, index, c1, c2, c3, opts */
#define EDND_REQUIRED   0x3    /* db_path and index */

/* idxNum: bits 0-5 the arguments given (argv in that order), then the v
** bounds, LIMIT and OFFSET pushed (argv after the arguments, in this
** order). */
#define EDND_LO_GT   (1 << 6)
#define EDND_LO_GE   (1 << 7)
#define EDND_HI_LT   (1 << 8)
#define EDND_HI_LE   (1 << 9)
#define EDND_LIMIT   (1 << 10)
#define EDND_OFFSET  (1 << 11)
/* The statement reads a hidden column (sqlite3_index_info.colUsed): only
** then does xFilter keep copies of the arguments for it to echo. */
#define EDND_ECHO    (1 << 12)

enum { EDD_EAVT, EDD_AEVT, EDD_AVET, EDD_VAET };
/* The index names, ":eavt" ..., and each one's components in order, "eav" ... */
extern const char *const eddIndexNames[4];
extern const char *const eddSlotNames[4];

/* True for an argument that is the opts: TEXT whose first non-blank is '{'. */
int eddIsOpts(sqlite3_value *pVal);

/* xBestIndex of edn_datoms (edn_datoms_plan.c). */
int eddBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo);

#endif /* MENTAT_EDN_DATOMS_INT_H */
