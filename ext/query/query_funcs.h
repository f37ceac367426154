/*
** query_funcs.h — the SQL functions compiled plans call on a store
** connection (query_funcs*.c), as the compiler needs them.
*/
#ifndef MENTAT_QUERY_FUNCS_H
#define MENTAT_QUERY_FUNCS_H

#include "edn.h"

/* Compiles the nPat bytes at zPat in the
** dialect of the mentat_regex SQL function (java.util.regex's, through
** PCRE2) and sets *pnGroup to its number of capturing groups. Errors:
** SQLITE_ERROR with "invalid regular expression \"...\": <reason>" in
** *pzErr; SQLITE_NOMEM. */
int qfRegexGroups(const char *zPat, int nPat, int *pnGroup, char **pzErr);

/* mentat_regex's mode for re-seq (0 to 3: re-find, re-matches, and each
** with the pattern's groups). */
#define QF_RE_SEQ 4

/* The op argument of the store function mentat_arith (query_funcs.c), which
** compiled plans call for long arithmetic that must not overflow. */
#define QF_ADD  1
#define QF_SUB  2   /* one argument: negation */
#define QF_MUL  3
#define QF_INC  4
#define QF_DEC  5
#define QF_ABS  6
#define QF_QUOT 7
#define QF_MOD  8
#define QF_REM  9
#define QF_DIV  10  /* one argument: (/ 1 x) */

#endif /* MENTAT_QUERY_FUNCS_H */
