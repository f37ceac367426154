/*
** query_funcs_java_fold.c — a character class as java.util.regex's
** CASE_INSENSITIVE without UNICODE_CASE reads it, for the translation
** (query_funcs_java.c). Takes a class's members in PCRE2's syntax; gives a
** class PCRE2 matches without caseless matching. Calls PCRE2, to read the
** members as PCRE2 will.
**
** Java folds US-ASCII letters only (BitClass.add, CIRange: a character
** matches when it or its ASCII other case is a member), while PCRE2's
** caseless class in UTF mode folds every letter, and two characters past
** ASCII onto ASCII ones: U+212A KELVIN SIGN onto k and K, U+017F LATIN
** SMALL LETTER LONG S onto s and S (PCRE2 10.42 lacks
** PCRE2_EXTRA_CASELESS_RESTRICT, which would keep them apart). So the class
** is matched exactly, with the other case of each ASCII letter it holds
** added.
*/
#include <string.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include "query_funcs.h"

static void *qfjfMalloc(PCRE2_SIZE n, void *pArg) {
  (void)pArg;
  return sqlite3_malloc64(n);
}

static void qfjfFree(void *p, void *pArg) {
  (void)pArg;
  sqlite3_free(p);
}

/* The ASCII letters the class [zBody] lacks whose other case it holds,
** into zAug (at least 53 bytes, NUL-terminated): 0, or 1 when PCRE2 cannot
** read the class (the whole pattern's compile reports why), SQLITE_NOMEM. */
static int qfjfAug(const char *zBody, char *zAug) {
  pcre2_general_context *pGen = pcre2_general_context_create(qfjfMalloc, qfjfFree, NULL);
  pcre2_compile_context *pCc = pGen ? pcre2_compile_context_create(pGen) : NULL;
  pcre2_code *pCode = NULL;
  pcre2_match_data *pData = NULL;
  char *zPat = sqlite3_mprintf("[%s]", zBody);
  int rc = SQLITE_NOMEM, iErr, c, n = 0;
  unsigned char aIn[128];
  PCRE2_SIZE iOff;
  if (pCc == NULL || zPat == NULL) goto cleanup;
  pCode = pcre2_compile((PCRE2_SPTR)zPat, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &iErr, &iOff, pCc);
  if (pCode == NULL) {
    rc = iErr == PCRE2_ERROR_HEAP_FAILED ? SQLITE_NOMEM : 1;
    goto cleanup;
  }
  pData = pcre2_match_data_create_from_pattern(pCode, pGen);
  if (pData == NULL) goto cleanup;
  memset(aIn, 0, sizeof aIn);
  for (c = 'A'; c <= 'z'; c++) {
    PCRE2_UCHAR ch = (PCRE2_UCHAR)c;
    int r;
    if (c > 'Z' && c < 'a') continue;
    r = pcre2_match(pCode, &ch, 1, 0, 0, pData, NULL);
    if (r == PCRE2_ERROR_NOMEMORY) goto cleanup;
    aIn[c] = r >= 0;
  }
  for (c = 'A'; c <= 'z'; c++) {
    if (aIn[c] && !aIn[c ^ 0x20]) zAug[n++] = (char)(c ^ 0x20);
  }
  rc = SQLITE_OK;
cleanup:
  zAug[n] = 0;
  pcre2_match_data_free(pData);
  pcre2_code_free(pCode);
  pcre2_compile_context_free(pCc);
  pcre2_general_context_free(pGen);
  sqlite3_free(zPat);
  return rc;
}

/* The class of members zBody (PCRE2's syntax, as the translation writes
** a class's plain members; negated when bNeg) as Java's ASCII-only
** CASE_INSENSITIVE has it, for PCRE2 to match without caseless matching:
** "[zBody]" and the missing ASCII cases, "(?:[zBody]|[Kk])", negated
** "(?:(?![Kk])[^zBody])" (Java negates the folded class). *pzOut is
** sqlite3_malloc'd; SQLITE_NOMEM. */
int qfJavaFoldClass(const char *zBody, int bNeg, char **pzOut) {
  char zAug[64];
  int rc = qfjfAug(zBody, zAug);
  *pzOut = NULL;
  if (rc == SQLITE_NOMEM) return rc;
  if (zAug[0] == 0) *pzOut = sqlite3_mprintf("[%s%s]", bNeg ? "^" : "", zBody);
  else if (bNeg) *pzOut = sqlite3_mprintf("(?:(?![%s])[^%s])", zAug, zBody);
  else *pzOut = sqlite3_mprintf("(?:[%s]|[%s])", zBody, zAug);
  return *pzOut ? SQLITE_OK : SQLITE_NOMEM;
}
