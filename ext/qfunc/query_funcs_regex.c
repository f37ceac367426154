/*
** query_funcs_regex.c — re-find, re-matches and re-seq at run time:
** mentat_re_find, mentat_re_matches and mentat_re_seq, with
** java.util.regex's dialect through PCRE2. Takes a pattern, a text and the
** place of the clause (for errors); gives the match, its groups (a tuple
** in the store's encoding when they fit one, else JSON) or every match as
** JSON. A pattern is compiled once per statement
** (sqlite3_get_auxdata). Calls PCRE2 and the Java translation
** (query_funcs_java.c).
**
** java.util.regex through PCRE2 (8-bit, UTF): Java's pattern is first
** translated into PCRE2's syntax (query_funcs_java.c), construct by
** construct. Without PCRE2_UCP, \d \w \s and \b stay ASCII, as Java's
** defaults (\b as Java 19 on). Matching is bounded (match, depth and heap
** limits), so no pattern can hold the host: a limit hit is an error.
** Memory comes from sqlite3_malloc.
*/
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include "query_funcs.h"


/* Backtracking steps one match may take: few enough that a catastrophic
** pattern ((a+)+$ over a run of a's) stops quickly, enough that ordinary
** patterns over megabytes of text stay far below it. */
#define QF_RE_MATCH_LIMIT 10000000u
#define QF_RE_DEPTH_LIMIT 1000000u
#define QF_RE_HEAP_KIB    65536u         /* 64 MiB of backtracking frames */

typedef struct QfRegex {
  pcre2_code *pCode;
  pcre2_match_context *pMatchCtx;
  pcre2_match_data *pData;
  int nGroup;                            /* capturing groups */
  PCRE2_SIZE iLast;                      /* where the last match ended (Java's \G) */
} QfRegex;

/* The callouts of the translation (query_funcs_java.c). (?C1) is Java's
** \G: the end of the previous match of this search (Matcher's oldLast), 0
** for the first. (?C<QF_JAVA_BACKREF_CALLOUT + v>) follows a caseless back
** reference to group v under ASCII-only folding: PCRE2 folded every
** letter, Java only US-ASCII ones, so the text it matched (as many bytes as
** the group's: Java's matches keep each character's length) must equal
** the group's byte for byte but for the case of ASCII letters; (?C"v")
** does so for a group named v, or numbered v past those numbers. 0 goes
** on, 1 backtracks. */
static int qfRegexCallout(pcre2_callout_block *pBlock, void *pArg) {
  const QfRegex *pRe = (const QfRegex*)pArg;
  uint32_t v = pBlock->callout_number;
  PCRE2_SIZE a, b, len, cur = pBlock->current_position, k;
  if (pBlock->callout_string) {
    PCRE2_SPTR zName = pBlock->callout_string;
    int iGroup = isdigit(zName[0]) ? atoi((const char*)zName)
                 : pcre2_substring_number_from_name(pRe->pCode, zName);
    if (iGroup <= 0) return 1;
    v = (uint32_t)iGroup;
  } else if (v < QF_JAVA_BACKREF_CALLOUT) {
    return cur == pRe->iLast ? 0 : 1;
  } else {
    v -= QF_JAVA_BACKREF_CALLOUT;
  }
  if (v >= pBlock->capture_top) return 1;
  a = pBlock->offset_vector[2 * v];
  b = pBlock->offset_vector[2 * v + 1];
  if (a == PCRE2_UNSET || b < a) return 1;
  len = b - a;
  if (len > cur) return 1;
  for (k = 0; k < len; k++) {
    unsigned char x = pBlock->subject[a + k], y = pBlock->subject[cur - len + k];
    if (x != y && !(x < 0x80 && y < 0x80 && tolower(x) == tolower(y))) return 1;
  }
  return 0;
}

static void *qfPcreMalloc(PCRE2_SIZE n, void *pArg) {
  (void)pArg;
  return sqlite3_malloc64(n);
}

static void qfPcreFree(void *p, void *pArg) {
  (void)pArg;
  sqlite3_free(p);
}

static void qfRegexFree(void *p) {
  QfRegex *pRe = (QfRegex*)p;
  if (pRe) {
    pcre2_match_data_free(pRe->pData);
    pcre2_match_context_free(pRe->pMatchCtx);
    pcre2_code_free(pRe->pCode);
    sqlite3_free(pRe);
  }
}

/* Compiles the n bytes at zPat into a new QfRegex (*ppRe) or reports why
** not ("invalid regular expression \"...\": <reason> near index <i>",
** SQLITE_ERROR; SQLITE_NOMEM). */
static int qfRegexCompile(const char *zPat, int nPat, QfRegex **ppRe, char **pzErr) {
  pcre2_general_context *pGen = NULL;
  pcre2_compile_context *pCc = NULL;
  QfRegex *pRe = NULL;
  char *zJava = NULL;
  int *aMap = NULL;
  int rc, iErr = 0, nJava = 0, nMap = 0;
  uint32_t nCap = 0;
  PCRE2_SIZE iOff = 0;
  *ppRe = NULL;
  rc = qfJavaTranslate(zPat, nPat, &zJava, &nJava, &aMap, &nMap, pzErr);
  if (rc != SQLITE_OK) goto cleanup;
  rc = SQLITE_NOMEM;
  pGen = pcre2_general_context_create(qfPcreMalloc, qfPcreFree, NULL);
  if (pGen == NULL) goto cleanup;
  pCc = pcre2_compile_context_create(pGen);
  pRe = sqlite3_malloc64(sizeof(QfRegex));
  /* zeroed before any way out: cleanup frees what it holds */
  if (pRe) memset(pRe, 0, sizeof(QfRegex));
  if (pCc == NULL || pRe == NULL) goto cleanup;
  pcre2_set_newline(pCc, PCRE2_NEWLINE_ANY);
  pRe->pCode = pcre2_compile((PCRE2_SPTR)zJava, (PCRE2_SIZE)nJava, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                             &iErr, &iOff, pCc);
  if (pRe->pCode == NULL) {
    PCRE2_UCHAR zWhy[160];
    char *zMsg;
    int nChar = 0, i, iAt = 0;
    if (iErr == PCRE2_ERROR_HEAP_FAILED) goto cleanup;
    pcre2_get_error_message(iErr, zWhy, sizeof zWhy);
    /* the index in characters of the pattern as written, as Java's: the
    ** token that PCRE2's offset falls in */
    for (i = 0; i + 1 < nMap && aMap[i] <= (int)iOff; i += 2) {
      /* within a token: as far into it as PCRE2 read, at most its end */
      int nIn = i + 3 < nMap ? aMap[i + 3] - aMap[i + 1] : nPat - aMap[i + 1];
      int nInto = (int)iOff - aMap[i];
      iAt = aMap[i + 1] + (nInto < nIn ? nInto : nIn);
    }
    for (i = 0; i < iAt && i < nPat; i++) {
      if (((unsigned char)zPat[i] & 0xC0) != 0x80) nChar++;
    }
    zMsg = sqlite3_mprintf("%s near index %d", (const char*)zWhy, nChar);
    if (zMsg == NULL) goto cleanup;
    rc = qfJavaInvalid(pzErr, zPat, nPat, zMsg);
    sqlite3_free(zMsg);
    goto cleanup;
  }
  pcre2_pattern_info(pRe->pCode, PCRE2_INFO_CAPTURECOUNT, &nCap);
  pRe->nGroup = (int)nCap;
  pRe->pMatchCtx = pcre2_match_context_create(pGen);
  pRe->pData = pcre2_match_data_create_from_pattern(pRe->pCode, pGen);
  if (pRe->pMatchCtx == NULL || pRe->pData == NULL) goto cleanup;
  pcre2_set_match_limit(pRe->pMatchCtx, QF_RE_MATCH_LIMIT);
  pcre2_set_depth_limit(pRe->pMatchCtx, QF_RE_DEPTH_LIMIT);
  pcre2_set_heap_limit(pRe->pMatchCtx, QF_RE_HEAP_KIB);
  pcre2_set_callout(pRe->pMatchCtx, qfRegexCallout, pRe);
  *ppRe = pRe;
  pRe = NULL;
  rc = SQLITE_OK;
cleanup:
  qfRegexFree(pRe);
  pcre2_compile_context_free(pCc);
  pcre2_general_context_free(pGen);
  sqlite3_free(zJava);
  sqlite3_free(aMap);
  return rc;
}

int qfRegexGroups(const char *zPat, int nPat, int *pnGroup, char **pzErr) {
  QfRegex *pRe = NULL;
  int rc = qfRegexCompile(zPat, nPat, &pRe, pzErr);
  *pnGroup = 0;
  if (rc == SQLITE_OK) {
    *pnGroup = pRe->nGroup;
    qfRegexFree(pRe);
  }
  return rc;
}

/* Appends group i of the last match of pRe over z as JSON (null when it
** took no part in the match). */
static void qfRegexGroupJson(sqlite3_str *pOut, const QfRegex *pRe, const char *z, int i) {
  PCRE2_SIZE *aOv = pcre2_get_ovector_pointer(pRe->pData);
  if (aOv[2 * i] == PCRE2_UNSET) sqlite3_str_appendall(pOut, "null");
  else ednJsonString(pOut, z + aOv[2 * i], (int)(aOv[2 * i + 1] - aOv[2 * i]));
}

/* Appends the last match as Clojure gives it: [whole g1 ...] when the
** pattern has groups (bGroups), else the whole match. */
static void qfRegexMatchJson(sqlite3_str *pOut, const QfRegex *pRe, const char *z, int bGroups) {
  int i;
  if (!bGroups) {
    qfRegexGroupJson(pOut, pRe, z, 0);
    return;
  }
  sqlite3_str_appendchar(pOut, 1, '[');
  for (i = 0; i <= pRe->nGroup; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, ',');
    qfRegexGroupJson(pOut, pRe, z, i);
  }
  sqlite3_str_appendchar(pOut, 1, ']');
}

/* Sets the result to the last match's [whole g1 ...] as a tuple in the
** store's encoding (value.h): strings, nil for a group that took no part,
** so it equals a stored tuple of the same strings (Clojure's = on the
** vector Datomic hands a query). The caller checks it has at most
** VALUE_TUPLE_MAX elements. */
static void qfRegexMatchTuple(sqlite3_context *pCtx, const QfRegex *pRe, const char *z) {
  PCRE2_SIZE *aOv = pcre2_get_ovector_pointer(pRe->pData);
  TypedValue a[VALUE_TUPLE_MAX];
  int i;
  for (i = 0; i <= pRe->nGroup; i++) {
    memset(&a[i], 0, sizeof a[i]);
    if (aOv[2 * i] == PCRE2_UNSET) continue;
    a[i].type = VT_STRING;
    a[i].z = z + aOv[2 * i];
    a[i].n = (int)(aOv[2 * i + 1] - aOv[2 * i]);
  }
  qfTupleResult(pCtx, a, pRe->nGroup + 1);
}

/* One pcre2_match from byte iStart: 1 matched, 0 not, -1 an error already
** set on pCtx (a limit: "<where>: <fn>: regular expression ... is too
** costly to match"). */
static int qfRegexRun(sqlite3_context *pCtx, sqlite3_value *pWhere, QfRegex *pRe, const char *zPat,
                      int nPat, const char *z, int n, int iStart, int iLast, uint32_t flags) {
  const char *zWhy;
  int rc;
  pRe->iLast = (PCRE2_SIZE)iLast;
  rc = pcre2_match(pRe->pCode, (PCRE2_SPTR)z, (PCRE2_SIZE)n, (PCRE2_SIZE)iStart, flags, pRe->pData,
                   pRe->pMatchCtx);
  if (rc >= 0) return 1;
  switch (rc) {
    case PCRE2_ERROR_NOMATCH: return 0;
    case PCRE2_ERROR_NOMEMORY: sqlite3_result_error_nomem(pCtx); return -1;
    case PCRE2_ERROR_MATCHLIMIT: zWhy = "backtracking"; break;
    case PCRE2_ERROR_DEPTHLIMIT: zWhy = "depth"; break;
    case PCRE2_ERROR_HEAPLIMIT: zWhy = "memory"; break;
    default: {
      PCRE2_UCHAR zMsg[120];
      pcre2_get_error_message(rc, zMsg, sizeof zMsg);
      qfErrorAt(pCtx, pWhere, "regular expression \"%.*s\": %s", nPat, zPat, (const char*)zMsg);
      return -1;
    }
  }
  qfErrorAt(pCtx, pWhere, "regular expression \"%.*s\" is too costly to match (it passed PCRE2's %s limit)",
            nPat, zPat, zWhy);
  return -1;
}

/* What qfRegexApply gives: the first match (0), the whole text as a match
** (QFR_MATCHES), either with its groups as a JSON vector (QFR_GROUPS) or
** as a tuple (QFR_TUPLE, when they fit one), or every match (QFR_SEQ).
** NULL inputs give NULL (no match). */
#define QFR_MATCHES 1
#define QFR_GROUPS  2
#define QFR_SEQ     4
#define QFR_TUPLE   8
#define QFR_AUTO    16   /* the groups decide: none the match, else a tuple or JSON */

/* The compiled form of pattern argument 0 of this call: kept by SQLite
** while the argument stays the same (a constant or bound parameter), else
** freed after the call; *pbOwn set when the caller must free it (not kept,
** out of memory there). NULL after an error set on pCtx (an invalid
** pattern: "<where>: invalid regular expression ..."). */
static QfRegex *qfRegexOf(sqlite3_context *pCtx, sqlite3_value *pWhere, const char *zPat, int nPat,
                          int *pbOwn) {
  QfRegex *pRe = sqlite3_get_auxdata(pCtx, 0);
  char *zErr = NULL;
  int rc;
  *pbOwn = 0;
  if (pRe) return pRe;
  rc = qfRegexCompile(zPat, nPat, &pRe, &zErr);
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_NOMEM) sqlite3_result_error_nomem(pCtx);
    else qfErrorAt(pCtx, pWhere, "%s", zErr);
    sqlite3_free(zErr);
    return NULL;
  }
  sqlite3_set_auxdata(pCtx, 0, pRe, qfRegexFree);
  pRe = sqlite3_get_auxdata(pCtx, 0);
  if (pRe == NULL) {
    /* Not kept (out of memory there): compile a private copy. */
    if (qfRegexCompile(zPat, nPat, &pRe, &zErr) != SQLITE_OK) {
      sqlite3_free(zErr);
      sqlite3_result_error_nomem(pCtx);
      return NULL;
    }
    *pbOwn = 1;
  }
  return pRe;
}

static void qfRegexApply(sqlite3_context *pCtx, sqlite3_value **argv, int iMode) {
  const char *zPat = (const char*)sqlite3_value_text(argv[0]);
  const char *z = (const char*)sqlite3_value_text(argv[1]);
  QfRegex *pRe;
  int bOwn = 0, n, nPat, r = 0;
  if (zPat == NULL || z == NULL) return;
  n = sqlite3_value_bytes(argv[1]);
  nPat = sqlite3_value_bytes(argv[0]);
  pRe = qfRegexOf(pCtx, argv[2], zPat, nPat, &bOwn);
  if (pRe == NULL) return;
  if (iMode & QFR_AUTO) {
    /* a pattern known only now: its groups decide the shape, as
    ** Clojure's re-find decides it from the Matcher's groupCount */
    iMode &= ~QFR_AUTO;
    if (pRe->nGroup > 0) iMode |= QFR_GROUPS | (pRe->nGroup < VALUE_TUPLE_MAX ? QFR_TUPLE : 0);
  }
  if (iMode & QFR_SEQ) {
    /* Matcher.find in turn: the next search starts where a match ended,
    ** one character on after an empty match; nil when none matched */
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    int iAt = 0, iLast = 0, nFound = 0;
    TypedValue aTup[VALUE_TUPLE_MAX];
    while (iAt <= n && (r = qfRegexRun(pCtx, argv[2], pRe, zPat, nPat, z, n, iAt, iLast, 0)) == 1) {
      PCRE2_SIZE *aOv = pcre2_get_ovector_pointer(pRe->pData);
      if (nFound < VALUE_TUPLE_MAX) {
        memset(&aTup[nFound], 0, sizeof aTup[nFound]);
        aTup[nFound].type = VT_STRING;
        aTup[nFound].z = z + aOv[0];
        aTup[nFound].n = (int)(aOv[1] - aOv[0]);
      }
      sqlite3_str_appendchar(pOut, 1, nFound++ ? ',' : '[');
      qfRegexMatchJson(pOut, pRe, z, pRe->nGroup > 0);
      iAt = iLast = (int)aOv[1];
      if (aOv[1] == aOv[0]) {
        if (iAt == n) break;
        iAt += ednUtf8Len((const unsigned char*)z, n, iAt) > 0 ? ednUtf8Len((const unsigned char*)z, n, iAt) : 1;
      }
    }
    if (r < 0) {
      sqlite3_free(sqlite3_str_finish(pOut));
    } else if (nFound == 0) {
      sqlite3_free(sqlite3_str_finish(pOut));
    } else if ((iMode & QFR_TUPLE) && pRe->nGroup == 0 && nFound <= VALUE_TUPLE_MAX) {
      sqlite3_free(sqlite3_str_finish(pOut));
      qfTupleResult(pCtx, aTup, nFound);
    } else {
      int nJson;
      char *zJson;
      sqlite3_str_appendchar(pOut, 1, ']');
      nJson = sqlite3_str_length(pOut);
      zJson = sqlite3_str_finish(pOut);
      if (zJson == NULL) sqlite3_result_error_nomem(pCtx);
      else {
        sqlite3_result_text(pCtx, zJson, nJson, sqlite3_free);
        sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
      }
    }
    goto done;
  }
  /* re-matches: the whole text (Matcher.matches backtracks until it is) */
  r = qfRegexRun(pCtx, argv[2], pRe, zPat, nPat, z, n, 0, 0, (iMode & QFR_MATCHES) ? PCRE2_ANCHORED | PCRE2_ENDANCHORED : 0);
  if (r != 1) goto done;
  if (!(iMode & QFR_GROUPS)) {
    PCRE2_SIZE *aOv = pcre2_get_ovector_pointer(pRe->pData);
    sqlite3_result_text(pCtx, z + aOv[0], (int)(aOv[1] - aOv[0]), SQLITE_TRANSIENT);
  } else if ((iMode & QFR_TUPLE) && pRe->nGroup < VALUE_TUPLE_MAX) {
    qfRegexMatchTuple(pCtx, pRe, z);
  } else {
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    char *zJson;
    int nJson;
    qfRegexMatchJson(pOut, pRe, z, 1);
    nJson = sqlite3_str_length(pOut);
    zJson = sqlite3_str_finish(pOut);
    if (zJson == NULL) sqlite3_result_error_nomem(pCtx);
    else {
      sqlite3_result_text(pCtx, zJson, nJson, sqlite3_free);
      sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
    }
  }
done:
  if (bOwn) qfRegexFree(pRe);
}

/* The groups argument of mentat_re_find/_matches as QFR_* bits: 0 the
** match alone, 1 its [whole g1 ...] vector as JSON, 2 that vector as a
** tuple (it has at most VALUE_TUPLE_MAX elements; else JSON), 3 as the
** pattern's groups say (a pattern known only at run time: the match when
** it has none, else the vector, a tuple when it fits one). */
static int qfRegexGroupMode(sqlite3_value *pGroups) {
  int g = sqlite3_value_int(pGroups);
  return g == 3 ? QFR_AUTO : g == 2 ? QFR_GROUPS | QFR_TUPLE : g ? QFR_GROUPS : 0;
}

/* mentat_re_find(re, s, where, groups): Clojure's re-find, the first match
** (groups 0) or its [whole g1 ...] vector (groups 1: JSON; 2: a tuple,
** the pattern having groups); NULL when none. */
void qfReFind(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  qfRegexApply(pCtx, argv, qfRegexGroupMode(argv[3]));
}

/* mentat_re_matches(re, s, where, groups): Clojure's re-matches, as
** mentat_re_find but the whole text must match. */
void qfReMatches(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  qfRegexApply(pCtx, argv, QFR_MATCHES | qfRegexGroupMode(argv[3]));
}

/* mentat_re_seq(re, s, where, tuple): Clojure's re-seq, every match in
** turn as a JSON array (each [whole g1 ...] when the pattern has groups);
** with tuple 1, matches without groups, at most VALUE_TUPLE_MAX of them, as
** the tuple of their strings (a seq equals the vector of its elements);
** NULL when none. */
void qfReSeq(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  qfRegexApply(pCtx, argv, QFR_SEQ | (sqlite3_value_int(argv[3]) ? QFR_TUPLE : 0));
}

/* mentat_re_groups(re): the capturing groups of pattern re (the shape of
** re-find's result for a pattern known only at run time: 0 a string, 1 to
** 7 a tuple, more JSON); NULL for NULL. */
void qfReGroups(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const char *zPat = (const char*)sqlite3_value_text(argv[0]);
  QfRegex *pRe;
  int bOwn;
  (void)argc;
  if (zPat == NULL) return;
  pRe = qfRegexOf(pCtx, argv[1], zPat, sqlite3_value_bytes(argv[0]), &bOwn);
  if (pRe == NULL) return;
  sqlite3_result_int(pCtx, pRe->nGroup);
  if (bOwn) qfRegexFree(pRe);
}

/* mentat_re_pattern(s, where): Clojure's re-pattern of a string known only
** at run time: s itself, once it compiles (Pattern.compile throws in
** re-pattern, so an invalid one is an error naming that clause). */
void qfRePattern(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const char *zPat = (const char*)sqlite3_value_text(argv[0]);
  QfRegex *pRe;
  int bOwn;
  (void)argc;
  if (zPat == NULL) return;
  pRe = qfRegexOf(pCtx, argv[1], zPat, sqlite3_value_bytes(argv[0]), &bOwn);
  if (pRe == NULL) return;
  sqlite3_result_value(pCtx, argv[0]);
  if (bOwn) qfRegexFree(pRe);
}

/* mentat_pattern_eq(tagA, tagB, where, ...): 1, or when both tags are
** TAG_PATTERN the error "<where>: regular expression patterns have no
** equality (Clojure compares them by identity)": = of two Patterns is
** identity in Clojure, which a pattern's text cannot tell. The trailing
** arguments only order the call after the joins (the compiler's fence). */
void qfPatternEq(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  if (argc >= 3 && sqlite3_value_type(argv[0]) != SQLITE_NULL && sqlite3_value_int(argv[0]) == TAG_PATTERN
      && sqlite3_value_type(argv[1]) != SQLITE_NULL && sqlite3_value_int(argv[1]) == TAG_PATTERN) {
    qfErrorAt(pCtx, argv[2], "regular expression patterns have no equality (Clojure compares them by identity)");
    return;
  }
  sqlite3_result_int(pCtx, 1);
}
