/*
** query_opts.c — the `opts` argument of edn_q (SPEC.md §2.4): a JSON object
** with the keys "inputs", "asOf", "since", "history", "explain", "sources",
** "with" and "withReport", turned into QueryOpts. Takes the JSON text;
** gives the inputs as EDN values and the time options, or an error naming
** the option. Calls cJSON and the EDN reader.
**
**   edn_q(db, '[:find ?n :in $ ?min [?tag ...] :where ...]',
**         '{"inputs":[21, [":t/a", ":t/b"]], "asOf": 268435460}')
**
** HOW IT WORKS
** cJSON parses the text (it allocates with libc; its tree is freed before
** returning and only our arena survives). JSON values become EDN values in
** the QueryOpts arena, the form the query compiler types against the
** schema: integer → EDN_INT, other number → EDN_DOUBLE, true/false →
** EDN_BOOL, ":kw" → EDN_KEYWORD, other string → EDN_STRING, array →
** EDN_VECTOR, {"edn": "<EDN text>"} → the value read from that text
** (instants, uuids, lookup refs, rule sets). null and other objects are
** errors: SQL NULL has no Datalog value.
**
** cJSON keeps every number as a double, which cannot tell 1 from 1.0 and
** rounds integers past 2^53 (peer fault B31: 9007199254740993 must stay
** exact). So a small scan of the text lists the number tokens in document
** order; the conversion walks the tree in the same order and takes each
** number's exact spelling from that list. The same scan measures nesting
** (capped at EDN_MAX_DEPTH before cJSON recurses) and finds \u0000 escapes,
** which cJSON's NUL-terminated strings would silently cut.
**
** The common shapes take a direct scan instead (qOptsFast: a fifth of a
** point lookup went to cJSON's tree, its allocations and the walk): an
** object of the keys "inputs", "asOf", "since" and "history", each once, whose values are integers, true,
** false, and strings without escapes or control characters, in arrays
** nested at most Q_FAST_DEPTH deep. It builds the very values the full
** path would; anything else in the text (an escape, a double, null, an
** {"edn": ...} object, a bad keyword, an error of any kind) makes it give
** up before it decides anything, and the full path parses the text again
** and says what is wrong.
*/
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <cJSON.h>
#include "query.h"

/* The number tokens of the text, in order. */
typedef struct QOptsScan {
  int nTok, nAlloc, iNext;
  int *aStart, *aLen;   /* one allocation: aLen = aStart + nAlloc */
  int nMaxDepth;
  int bNulEscape;
  int iBadUtf8;         /* 1-based byte of the first invalid UTF-8, or 0 */
  int iLoneSurrogate;   /* 1-based byte of the first lone \uD800-\uDFFF, or 0 */
} QOptsScan;

/* What the conversion needs at hand. */
typedef struct QOptsCtx {
  QueryOpts *p;
  const char *z;        /* the opts text */
  QOptsScan scan;
  char **pzErr;
} QOptsCtx;

static void qOptsError(QOptsCtx *c, const char *zFmt, ...) {
  va_list ap;
  va_start(ap, zFmt);
  sqlite3_free(*c->pzErr);
  *c->pzErr = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
}

void qOptsInit(QueryOpts *p) {
  memset(p, 0, offsetof(QueryOpts, aArenaBuf));
  ednArenaInitWith(&p->arena, p->aArenaBuf, sizeof p->aArenaBuf);
}

void qOptsReset(QueryOpts *p) {
  int i;
  for (i = 0; i < p->nSource; i++) {
    schemaUnref(p->aSource[i].pSchema);
    if (p->aSource[i].pStore) storeRelease(p->aSource[i].pStore);
  }
  p->nSource = 0;
  p->aSource = NULL;
  ednArenaReset(&p->arena);
  p->nInput = 0;
  p->aInput = NULL;
  p->bAsOf = p->bSince = 0;
  p->iAsOf = p->iSince = 0;
  p->pAsOfInst = p->pSinceInst = NULL;
  p->bHistory = 0;
  p->bExplain = 0;
  p->zWith = NULL;
  p->nWith = 0;
  p->bWithReport = 0;
  p->bOwnPlan = 0;
}

int qOptsShape(const QueryOpts *p, unsigned char *aBuf, int nBuf) {
  int i, n = 0;
  if (p->nSource || p->zWith || p->bExplain || p->bWithReport || nBuf < p->nInput + 2) return -1;
  aBuf[n++] = (unsigned char)((p->bAsOf ? 1 : 0) | (p->bSince ? 2 : 0) | (p->bHistory ? 4 : 0)
                              | (p->pAsOfInst ? 8 : 0) | (p->pSinceInst ? 16 : 0));
  aBuf[n++] = (unsigned char)p->nInput;
  if (p->nInput > 255) return -1;
  for (i = 0; i < p->nInput; i++) {
    switch (p->aInput[i]->type) {
      case EDN_NIL: case EDN_BOOL: case EDN_INT: case EDN_DOUBLE: case EDN_STRING:
      case EDN_KEYWORD: case EDN_INST: case EDN_UUID:
        aBuf[n++] = (unsigned char)p->aInput[i]->type;
        break;
      default: return -1;
    }
  }
  return n;
}

static int qOptsScanPush(QOptsScan *s, int iStart, int nLen) {
  if (s->nTok == s->nAlloc) {
    int nNew = s->nAlloc ? s->nAlloc * 2 : 16;
    int *aNew = sqlite3_malloc64(sizeof(int) * 2 * (sqlite3_uint64)nNew);
    if (aNew == NULL) return SQLITE_NOMEM;
    if (s->nTok) {
      memcpy(aNew, s->aStart, sizeof(int) * s->nTok);
      memcpy(aNew + nNew, s->aLen, sizeof(int) * s->nTok);
    }
    sqlite3_free(s->aStart);
    s->aStart = aNew;
    s->aLen = aNew + nNew;
    s->nAlloc = nNew;
  }
  s->aStart[s->nTok] = iStart;
  s->aLen[s->nTok] = nLen;
  s->nTok++;
  return SQLITE_OK;
}

/* The UTF-16 unit of the \uXXXX escape at z[i] (i at the backslash), or -1. */
static int qOptsEscapeUnit(const char *z, int n, int i) {
  if (i + 5 >= n || z[i] != '\\' || z[i + 1] != 'u') return -1;
  return ednHex4((const unsigned char *)z + i + 2);
}

/* One pass over z[0..n): number tokens outside strings, the deepest
** nesting, whether a string holds a \u0000 escape, and the first invalid
** UTF-8 byte or lone surrogate escape (cJSON passes the first through and
** reports the second only as "not valid JSON"). Not otherwise a validator:
** cJSON decides whether the text is JSON. */
static int qOptsScan(const char *z, int n, QOptsScan *s) {
  int i = 0, depth = 0;
  while (i < n) {
    char ch = z[i];
    if (ch == '"') {
      for (i++; i < n && z[i] != '"'; i++) {
        if ((unsigned char)z[i] >= 0x80) {
          int L = ednUtf8Len((const unsigned char *)z, n, i);
          if (L == 0) {
            if (s->iBadUtf8 == 0) s->iBadUtf8 = i + 1;
          } else {
            i += L - 1;
          }
          continue;
        }
        if (z[i] != '\\') continue;
        if (i + 5 < n && z[i + 1] == 'u' && memcmp(z + i + 2, "0000", 4) == 0) s->bNulEscape = 1;
        {
          int u = qOptsEscapeUnit(z, n, i);
          if (u >= 0xD800 && u <= 0xDBFF) {
            int u2 = qOptsEscapeUnit(z, n, i + 6);
            if (u2 >= 0xDC00 && u2 <= 0xDFFF) {
              i += 11;   /* the pair; the loop's i++ passes its last digit */
              continue;
            }
          }
          if (u >= 0xD800 && u <= 0xDFFF) {
            if (s->iLoneSurrogate == 0) s->iLoneSurrogate = i + 1;
            i += 5;
            continue;
          }
        }
        i++;   /* skip the escaped character */
      }
      i++;
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
      int iStart = i;
      while (i < n && (strchr("0123456789+-.eE", z[i]) != NULL) && z[i] != 0) i++;
      if (qOptsScanPush(s, iStart, i - iStart) != SQLITE_OK) return SQLITE_NOMEM;
    } else {
      if (ch == '[' || ch == '{') {
        if (++depth > s->nMaxDepth) s->nMaxDepth = depth;
      } else if (ch == ']' || ch == '}') {
        depth--;
      }
      i++;
    }
  }
  return SQLITE_OK;
}

/* Reads a decimal integer token exactly; 0 on success, 1 if it is not an
** integer spelling, 2 if it does not fit in 64 bits. */
static int qOptsInteger(const char *z, int n, sqlite3_int64 *pOut) {
  int i = 0, bNeg = 0;
  sqlite3_uint64 u = 0, lim;
  if (n > 0 && z[0] == '-') {
    bNeg = 1;
    i = 1;
  }
  if (i == n) return 1;
  lim = bNeg ? (sqlite3_uint64)1 << 63 : ((sqlite3_uint64)1 << 63) - 1;
  for (; i < n; i++) {
    if (z[i] < '0' || z[i] > '9') return 1;
    if (u > (lim - (sqlite3_uint64)(z[i] - '0')) / 10) return 2;
    u = u * 10 + (sqlite3_uint64)(z[i] - '0');
  }
  *pOut = bNeg ? (sqlite3_int64)(0 - u) : (sqlite3_int64)u;
  return 0;
}

/* The next number of the document as EDN (zWhat names it in errors). */
static int qOptsNumber(QOptsCtx *c, const cJSON *j, const char *zWhat, EdnValue **ppOut) {
  QOptsScan *s = &c->scan;
  sqlite3_int64 i = 0;
  int eInt = 1;
  EdnValue *pV;
  if (s->iNext < s->nTok) {
    const char *zTok = c->z + s->aStart[s->iNext];
    int nTok = s->aLen[s->iNext];
    s->iNext++;
    eInt = qOptsInteger(zTok, nTok, &i);
    if (eInt == 2) {
      qOptsError(c, "%s: integer %.*s is out of the 64-bit range", zWhat, nTok, zTok);
      return SQLITE_ERROR;
    }
  } else if (j->valuedouble == floor(j->valuedouble) && fabs(j->valuedouble) < 9007199254740992.0) {
    /* Defensive only: the scan found every number cJSON did. */
    eInt = 0;
    i = (sqlite3_int64)j->valuedouble;
  }
  if (eInt == 0) {
    pV = ednNewInt(&c->p->arena, i);
  } else {
    if (!isfinite(j->valuedouble)) {
      qOptsError(c, "%s: number out of range", zWhat);
      return SQLITE_ERROR;
    }
    pV = ednNew(&c->p->arena, EDN_DOUBLE);
    if (pV) pV->u.d = j->valuedouble;
  }
  *ppOut = pV;
  return pV ? SQLITE_OK : SQLITE_NOMEM;
}

/* {"edn": "<text>"} → the EDN value; anything else is NULL (not an error
** here: the caller names what it expected). */
static const cJSON *qOptsEdnText(const cJSON *j) {
  if (!cJSON_IsObject(j) || j->child == NULL || j->child->next != NULL) return NULL;
  if (j->child->string == NULL || strcmp(j->child->string, "edn") != 0) return NULL;
  return cJSON_IsString(j->child) ? j->child : NULL;
}

static int qOptsReadEdn(QOptsCtx *c, const cJSON *pText, const char *zWhat, EdnValue **ppOut) {
  EdnError err;
  int rc;
  memset(&err, 0, sizeof err);
  rc = ednReadOne(&c->p->arena, pText->valuestring, (int)strlen(pText->valuestring), ppOut, &err);
  if (rc == SQLITE_ERROR) qOptsError(c, "%s: line %d col %d: %s", zWhat, err.line, err.col, err.zMsg);
  return rc;
}

/* JSON value j → EDN (*ppOut). Recursion is bounded: the scan already
** refused text nested deeper than EDN_MAX_DEPTH. */
static int qOptsValue(QOptsCtx *c, const cJSON *j, const char *zWhat, int depth, EdnValue **ppOut) {
  const cJSON *pText;
  if (cJSON_IsBool(j)) {
    EdnValue *pV = ednNew(&c->p->arena, EDN_BOOL);
    if (pV == NULL) return SQLITE_NOMEM;
    pV->u.b = cJSON_IsTrue(j) ? 1 : 0;
    *ppOut = pV;
    return SQLITE_OK;
  }
  if (cJSON_IsNumber(j)) return qOptsNumber(c, j, zWhat, ppOut);
  if (cJSON_IsString(j)) {
    const char *z = j->valuestring;
    if (z[0] == ':') {
      /* a keyword as EDN reads it: ":foo/" and ":a b" are errors there too */
      char zBuf[48];
      const char *zWhy = ednKeywordProblem(z, (int)strlen(z), zBuf, (int)sizeof zBuf);
      if (zWhy) {
        qOptsError(c, "%s: invalid keyword %s: %s", zWhat, z, zWhy);
        return SQLITE_ERROR;
      }
    }
    *ppOut = ednNewString(&c->p->arena, z[0] == ':' ? EDN_KEYWORD : EDN_STRING, z, (int)strlen(z));
    return *ppOut ? SQLITE_OK : SQLITE_NOMEM;
  }
  if (cJSON_IsArray(j)) {
    const cJSON *pEl;
    int n = cJSON_GetArraySize(j), i = 0, rc;
    EdnValue *pV;
    if (depth > EDN_MAX_DEPTH) {
      qOptsError(c, "%s: nesting too deep (limit %d)", zWhat, EDN_MAX_DEPTH);
      return SQLITE_ERROR;
    }
    pV = ednNewColl(&c->p->arena, EDN_VECTOR, n);
    if (pV == NULL) return SQLITE_NOMEM;
    for (pEl = j->child; pEl && i < n; pEl = pEl->next, i++) {
      rc = qOptsValue(c, pEl, zWhat, depth + 1, &pV->u.c.a[i]);
      if (rc != SQLITE_OK) return rc;
    }
    *ppOut = pV;
    return SQLITE_OK;
  }
  if ((pText = qOptsEdnText(j)) != NULL) return qOptsReadEdn(c, pText, zWhat, ppOut);
  if (cJSON_IsNull(j)) {
    qOptsError(c, "%s is null; SQL NULL has no Datalog value", zWhat);
  } else {
    qOptsError(c, "%s: an object must be {\"edn\": \"<EDN text>\"}", zWhat);
  }
  return SQLITE_ERROR;
}

static int qOptsInputs(QOptsCtx *c, const cJSON *j) {
  QueryOpts *p = c->p;
  const cJSON *pEl;
  int i = 0, rc;
  if (!cJSON_IsArray(j)) {
    qOptsError(c, "\"inputs\" must be an array");
    return SQLITE_ERROR;
  }
  p->nInput = cJSON_GetArraySize(j);
  p->aInput = ednArenaAlloc(&p->arena, sizeof(EdnValue *) * (size_t)(p->nInput + 1));
  if (p->aInput == NULL) return SQLITE_NOMEM;
  for (pEl = j->child; pEl && i < p->nInput; pEl = pEl->next, i++) {
    /* Named for error messages; built by hand, as snprintf per input was
    ** a tenth of parsing a one-input opts. */
    char zWhat[48] = "\"inputs\" value ";
    char aNum[12];
    int nNum = 0, v = i + 1;
    size_t nPre = strlen(zWhat);
    do { aNum[nNum++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (nNum > 0) zWhat[nPre++] = aNum[--nNum];
    zWhat[nPre] = 0;
    rc = qOptsValue(c, pEl, zWhat, 1, &p->aInput[i]);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

/* "asOf"/"since": an integer tx id, or {"edn": "#inst ..."} (also accepts
** {"edn": "<integer>"}). */
static int qOptsTx(QOptsCtx *c, const cJSON *j, const char *zKey, sqlite3_int64 *piTx,
                  const EdnValue **ppInst) {
  EdnValue *pV = NULL;
  const cJSON *pText;
  char zWhat[16];
  int rc;
  snprintf(zWhat, sizeof zWhat, "\"%s\"", zKey);
  if (cJSON_IsNumber(j)) {
    rc = qOptsNumber(c, j, zWhat, &pV);
    if (rc != SQLITE_OK) return rc;
    if (pV->type == EDN_INT) {
      *piTx = pV->u.i;
      return SQLITE_OK;
    }
  } else if ((pText = qOptsEdnText(j)) != NULL) {
    rc = qOptsReadEdn(c, pText, zWhat, &pV);
    if (rc != SQLITE_OK) return rc;
    if (pV->type == EDN_INST) {
      *ppInst = pV;
      return SQLITE_OK;
    }
    if (pV->type == EDN_INT) {
      *piTx = pV->u.i;
      return SQLITE_OK;
    }
  }
  qOptsError(c, "\"%s\" must be an integer tx id or {\"edn\": \"#inst ...\"}", zKey);
  return SQLITE_ERROR;
}

/* One source of "sources": "<store path>", or {"db": path, "asOf"|"since":
** tx, "history": bool} (every key optional: {} is the store itself). */
static int qOptsSource(QOptsCtx *c, const cJSON *j, QuerySource *pS) {
  const cJSON *o, *k;
  int rc = SQLITE_OK;
  if (cJSON_IsString(j)) {
    pS->zPath = ednArenaStrdup(&c->p->arena, j->valuestring, (int)strlen(j->valuestring));
    return pS->zPath ? SQLITE_OK : SQLITE_NOMEM;
  }
  if (!cJSON_IsObject(j)) {
    qOptsError(c, "\"sources\" %s must be a store path or an object of \"db\", \"asOf\", "
                  "\"since\" and \"history\"", pS->zName);
    return SQLITE_ERROR;
  }
  for (o = j->child; o && rc == SQLITE_OK; o = o->next) {
    for (k = j->child; k != o; k = k->next) {
      if (strcmp(k->string, o->string) == 0) {
        qOptsError(c, "\"sources\" %s: duplicate option \"%s\"", pS->zName, o->string);
        return SQLITE_ERROR;
      }
    }
    if (strcmp(o->string, "db") == 0 && cJSON_IsString(o)) {
      pS->zPath = ednArenaStrdup(&c->p->arena, o->valuestring, (int)strlen(o->valuestring));
      if (pS->zPath == NULL) rc = SQLITE_NOMEM;
    } else if (strcmp(o->string, "asOf") == 0) {
      pS->bAsOf = 1;
      rc = qOptsTx(c, o, "asOf", &pS->iAsOf, &pS->pAsOfInst);
    } else if (strcmp(o->string, "since") == 0) {
      pS->bSince = 1;
      rc = qOptsTx(c, o, "since", &pS->iSince, &pS->pSinceInst);
    } else if (strcmp(o->string, "history") == 0 && cJSON_IsBool(o)) {
      pS->bHistory = cJSON_IsTrue(o);
    } else if (strcmp(o->string, "db") == 0 || strcmp(o->string, "history") == 0) {
      qOptsError(c, "\"sources\" %s: \"%s\" must be %s", pS->zName, o->string,
                 o->string[0] == 'd' ? "a store path" : "true or false");
      rc = SQLITE_ERROR;
    } else {
      qOptsError(c, "\"sources\" %s: unknown option \"%s\"", pS->zName, o->string);
      rc = SQLITE_ERROR;
    }
  }
  return rc;
}

/* "sources": {"$name": source, ...} (Datomic's extra :in data sources),
** in document order; the compiler checks them against :in. */
static int qOptsSources(QOptsCtx *c, const cJSON *j) {
  QueryOpts *p = c->p;
  const cJSON *pEl, *k;
  int i = 0, rc = SQLITE_OK;
  if (!cJSON_IsObject(j)) {
    qOptsError(c, "\"sources\" must be an object {\"$name\": \"<store path>\" or {options}}");
    return SQLITE_ERROR;
  }
  p->aSource = ednArenaAlloc(&p->arena, sizeof(QuerySource) * (size_t)(cJSON_GetArraySize(j) + 1));
  if (p->aSource == NULL) return SQLITE_NOMEM;
  for (pEl = j->child; pEl && rc == SQLITE_OK; pEl = pEl->next, i++) {
    QuerySource *pS = &p->aSource[i];
    const char *zName = pEl->string;
    size_t n = strlen(zName);
    for (k = j->child; k != pEl; k = k->next) {
      if (strcmp(k->string, zName) == 0) {
        qOptsError(c, "\"sources\": duplicate source %s", zName);
        return SQLITE_ERROR;
      }
    }
    if (strcmp(zName, "$") == 0) {
      qOptsError(c, "\"sources\": $ is the store db_path names (give its filters as \"asOf\", "
                    "\"since\" and \"history\")");
      return SQLITE_ERROR;
    }
    if (zName[0] != '$' || n >= 64 || strcspn(zName, " \t\r\n,()[]{}\"';") != n) {
      qOptsError(c, "\"sources\": %s is not a source name (a symbol starting with $)", zName);
      return SQLITE_ERROR;
    }
    memset(pS, 0, sizeof *pS);
    pS->zName = ednArenaStrdup(&p->arena, zName, (int)n);
    if (pS->zName == NULL) return SQLITE_NOMEM;
    p->nSource = i + 1;
    rc = qOptsSource(c, pEl, pS);
  }
  return rc;
}

/* "with": the EDN tx-data as a JSON string, copied into the arena (the
** transactor reads it when the call runs it). */
static int qOptsWith(QOptsCtx *c, const cJSON *j) {
  char *z;
  size_t n;
  if (!cJSON_IsString(j)) {
    qOptsError(c, "\"with\" must be a string holding EDN tx-data");
    return SQLITE_ERROR;
  }
  n = strlen(j->valuestring);
  z = ednArenaAlloc(&c->p->arena, n + 1);
  if (z == NULL) return SQLITE_NOMEM;
  memcpy(z, j->valuestring, n + 1);
  c->p->zWith = z;
  c->p->nWith = (int)n;
  return SQLITE_OK;
}

/* A key that takes true or false. */
static int qOptsBool(QOptsCtx *c, const cJSON *j, int *pb) {
  if (!cJSON_IsBool(j)) {
    qOptsError(c, "\"%s\" must be true or false", j->string);
    return SQLITE_ERROR;
  }
  *pb = cJSON_IsTrue(j);
  return SQLITE_OK;
}

/* The name of the first source with "since", or NULL. */
static const char *qOptsSinceSource(const QueryOpts *p) {
  int i;
  for (i = 0; i < p->nSource; i++) {
    if (p->aSource[i].bSince) return p->aSource[i].zName;
  }
  return NULL;
}

/* The keys that cannot go together, once all are read. */
static int qOptsCombos(QOptsCtx *c) {
  const QueryOpts *p = c->p;
  if (p->bWithReport && p->zWith == NULL) {
    qOptsError(c, "\"withReport\" needs \"with\"");
  } else if (p->zWith && p->nSource && p->bAsOf) {
    /* The with-database is the store rewound to asOf: the store as it is,
    ** which the sources read, is not there to read. */
    qOptsError(c, "\"with\" on top of \"asOf\" cannot be used with \"sources\"");
  } else if (p->zWith && qOptsSinceSource(p)) {
    /* Beside the with-database a source reads the store as of the last
    ** transaction before it, and a since-database as of a tx is not
    ** compiled. */
    qOptsError(c, "\"sources\" %s: a \"since\" source cannot be read beside \"with\"",
               qOptsSinceSource(p));
  } else if (p->bExplain && p->zWith) {
    /* The plan of a query on a store that is never written would be
    ** another statement's (the with-database is read without asOf). */
    qOptsError(c, "\"explain\" and \"with\" cannot be used together");
  } else {
    return SQLITE_OK;
  }
  return SQLITE_ERROR;
}

/* ------------------------------------------------------------ fast path */

#define Q_FAST_DEPTH 8
#define Q_FAST_SMALL 8    /* array elements read without counting them first */

typedef struct QFast {
  QueryOpts *p;
  const char *z;
  int n, i;
} QFast;

static void qfWs(QFast *f) {
  while (f->i < f->n && (f->z[f->i] == ' ' || f->z[f->i] == '\t' || f->z[f->i] == '\n'
                         || f->z[f->i] == '\r')) {
    f->i++;
  }
}

/* 1 for a byte a JSON string holds as it is in the fast path: printable
** ASCII other than '"' and '\\' (qfString). */
static const unsigned char qfPlain[256] = {
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  1,1,0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
  1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,0,1,1,1,
  1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
};

/* At a '"': the string's bytes (no escape, no control character, valid
** UTF-8) in *pz and *pnz and f->i past its closing quote; 0 to give up.
** ASCII runs (keys, most inputs) take one table test a byte. */
static int qfString(QFast *f, const char **pz, int *pnz) {
  const unsigned char *z = (const unsigned char *)f->z;
  int i = f->i + 1, n = f->n;
  for (;;) {
    unsigned char c;
    while (i < n && qfPlain[z[i]]) i++;
    if (i >= n) return 0;
    c = z[i];
    if (c == '"') break;
    if (c < 0x20 || c == '\\') return 0;
    {
      int L = ednUtf8Len(z, n, i);
      if (L == 0) return 0;
      i += L;
    }
  }
  *pz = f->z + f->i + 1;
  *pnz = i - f->i - 1;
  f->i = i + 1;
  return 1;
}

/* An integer token as JSON spells it (no leading zero, no fraction or
** exponent after it), in 64 bits; 0 to give up. */
static int qfInteger(QFast *f, sqlite3_int64 *piOut) {
  int iStart = f->i, i = f->i;
  if (i < f->n && f->z[i] == '-') i++;
  if (i >= f->n || f->z[i] < '0' || f->z[i] > '9') return 0;
  if (f->z[i] == '0' && i + 1 < f->n && f->z[i + 1] >= '0' && f->z[i + 1] <= '9') return 0;
  while (i < f->n && f->z[i] >= '0' && f->z[i] <= '9') i++;
  if (i < f->n && (f->z[i] == '.' || f->z[i] == 'e' || f->z[i] == 'E')) return 0;
  if (qOptsInteger(f->z + iStart, i - iStart, piOut) != 0) return 0;
  f->i = i;
  return 1;
}

static int qfWord(QFast *f, const char *zWord, int nWord) {
  if (f->n - f->i < nWord || memcmp(f->z + f->i, zWord, (size_t)nWord) != 0) return 0;
  f->i += nWord;
  return 1;
}

/* The elements of the array at f->i (at its '['), counted without
** building them: strings are skipped whole, nested arrays by depth. */
static int qfCount(const QFast *f) {
  int i = f->i + 1, depth = 0, n = 0, bAny = 0;
  for (; i < f->n; i++) {
    char ch = f->z[i];
    if (ch == '"') {
      for (i++; i < f->n && f->z[i] != '"'; i++) {
        if (f->z[i] == '\\') return -1;
      }
      bAny = 1;
    } else if (ch == '[') {
      depth++;
      bAny = 1;
    } else if (ch == ']') {
      if (depth-- == 0) return bAny ? n + 1 : 0;
    } else if (ch == ',' && depth == 0) {
      n++;
    } else if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') {
      bAny = 1;
    }
  }
  return -1;
}

/* One input value at f->i, as qOptsValue builds it; 0 to give up. */
static int qfValue(QFast *f, int depth, EdnValue **ppOut) {
  EdnArena *pA = &f->p->arena;
  char ch = f->i < f->n ? f->z[f->i] : 0;
  if (ch == '"') {
    const char *z;
    int nz;
    if (!qfString(f, &z, &nz)) return 0;
    if (nz > 0 && z[0] == ':') {
      char zBuf[48];
      if (ednKeywordProblem(z, nz, zBuf, (int)sizeof zBuf) != NULL) return 0;
    }
    *ppOut = ednNewString(pA, nz > 0 && z[0] == ':' ? EDN_KEYWORD : EDN_STRING, z, nz);
    return *ppOut != NULL;
  }
  if (ch == '-' || (ch >= '0' && ch <= '9')) {
    sqlite3_int64 v;
    if (!qfInteger(f, &v)) return 0;
    *ppOut = ednNewInt(pA, v);
    return *ppOut != NULL;
  }
  if (ch == 't' || ch == 'f') {
    EdnValue *pV;
    int b = ch == 't';
    if (!(b ? qfWord(f, "true", 4) : qfWord(f, "false", 5))) return 0;
    pV = ednNew(pA, EDN_BOOL);
    if (pV == NULL) return 0;
    pV->u.b = b;
    *ppOut = pV;
    return 1;
  }
  if (ch == '[') {
    int n, k;
    EdnValue *pV;
    if (depth >= Q_FAST_DEPTH) return 0;
    /* A short array is read in one pass into aSmall (no count first). */
    {
      EdnValue *aSmall[Q_FAST_SMALL];
      int iStart = f->i;
      f->i++;
      qfWs(f);
      for (n = 0; n < Q_FAST_SMALL && f->i < f->n && f->z[f->i] != ']'; n++) {
        if (n > 0) {
          if (f->z[f->i] != ',') return 0;
          f->i++;
          qfWs(f);
        }
        if (!qfValue(f, depth + 1, &aSmall[n])) return 0;
        qfWs(f);
      }
      if (f->i < f->n && f->z[f->i] == ']') {
        pV = ednNewColl(pA, EDN_VECTOR, n);
        if (pV == NULL) return 0;
        if (n > 0) memcpy(pV->u.c.a, aSmall, sizeof(EdnValue *) * (size_t)n);
        f->i++;
        *ppOut = pV;
        return 1;
      }
      if (f->i >= f->n || f->z[f->i] != ',') return 0;
      f->i = iStart;    /* longer: counted first, then read (what was built stays
                        ** in the arena until the call's end) */
    }
    n = qfCount(f);
    if (n < 0) return 0;
    pV = ednNewColl(pA, EDN_VECTOR, n);
    if (pV == NULL) return 0;
    f->i++;
    for (k = 0; k < n; k++) {
      qfWs(f);
      if (!qfValue(f, depth + 1, &pV->u.c.a[k])) return 0;
      qfWs(f);
      if (f->i >= f->n || f->z[f->i] != (k + 1 < n ? ',' : ']')) return 0;
      f->i++;
    }
    if (n == 0) {
      qfWs(f);
      if (f->i >= f->n || f->z[f->i] != ']') return 0;
      f->i++;
    }
    *ppOut = pV;
    return 1;
  }
  return 0;
}

/* The common opts in one scan (see HOW IT WORKS): 1 with *p filled, 0 when
** the full path must parse the text (*p then holds partial values; the
** caller resets it). */
static int qOptsFast(QueryOpts *p, const char *z, int n) {
  QFast f;
  int mSeen = 0;
  f.p = p;
  f.z = z;
  f.n = n;
  f.i = 0;
  qfWs(&f);
  if (f.i >= n || z[f.i] != '{') return 0;
  f.i++;
  qfWs(&f);
  if (f.i < n && z[f.i] == '}') {
    f.i++;
  } else {
    for (;;) {
      const char *zKey;
      int nKey, eKey;
      if (f.i >= n || z[f.i] != '"' || !qfString(&f, &zKey, &nKey)) return 0;
      if (nKey == 6 && memcmp(zKey, "inputs", 6) == 0) eKey = 1;
      else if (nKey == 4 && memcmp(zKey, "asOf", 4) == 0) eKey = 2;
      else if (nKey == 5 && memcmp(zKey, "since", 5) == 0) eKey = 4;
      else if (nKey == 7 && memcmp(zKey, "history", 7) == 0) eKey = 8;
      else return 0;
      if (mSeen & eKey) return 0;
      mSeen |= eKey;
      qfWs(&f);
      if (f.i >= n || z[f.i] != ':') return 0;
      f.i++;
      qfWs(&f);
      if (eKey == 1) {
        EdnValue *pIn = NULL;
        if (f.i >= n || z[f.i] != '[' || !qfValue(&f, 1, &pIn)) return 0;
        p->nInput = pIn->u.c.n;
        p->aInput = ednArenaAlloc(&p->arena, sizeof(EdnValue *) * (size_t)(p->nInput + 1));
        if (p->aInput == NULL) return 0;
        memcpy(p->aInput, pIn->u.c.a, sizeof(EdnValue *) * (size_t)p->nInput);
        p->aInput[p->nInput] = NULL;
      } else if (eKey == 2) {
        if (!qfInteger(&f, &p->iAsOf)) return 0;
        p->bAsOf = 1;
      } else if (eKey == 4) {
        if (!qfInteger(&f, &p->iSince)) return 0;
        p->bSince = 1;
      } else {
        if (qfWord(&f, "true", 4)) p->bHistory = 1;
        else if (!qfWord(&f, "false", 5)) return 0;
      }
      qfWs(&f);
      if (f.i < n && z[f.i] == ',') {
        f.i++;
        qfWs(&f);
        continue;
      }
      if (f.i < n && z[f.i] == '}') {
        f.i++;
        break;
      }
      return 0;
    }
  }
  qfWs(&f);
  return f.i == n;
}

int qOptsParse(QueryOpts *p, const char *zOpts, int nOpts, char **pzErr) {
  QOptsCtx c;
  cJSON *pRoot = NULL;
  const cJSON *j, *k;
  const char *zEnd = NULL;
  int rc = SQLITE_OK, i;

  qOptsReset(p);
  memset(&c, 0, sizeof c);
  c.p = p;
  c.z = zOpts;
  c.pzErr = pzErr;
  if (zOpts == NULL || nOpts <= 0) return SQLITE_OK;
  if (qOptsFast(p, zOpts, nOpts)) return SQLITE_OK;
  qOptsReset(p);

  rc = qOptsScan(zOpts, nOpts, &c.scan);
  if (rc != SQLITE_OK) goto cleanup;
  if (c.scan.iBadUtf8 || c.scan.iLoneSurrogate) {
    /* whichever comes first in the text */
    if (c.scan.iBadUtf8 && (c.scan.iLoneSurrogate == 0 || c.scan.iBadUtf8 < c.scan.iLoneSurrogate)) {
      qOptsError(&c, "opts: invalid UTF-8 at byte %d", c.scan.iBadUtf8);
    } else {
      qOptsError(&c, "opts: lone surrogate %.6s at byte %d", zOpts + c.scan.iLoneSurrogate - 1,
                c.scan.iLoneSurrogate);
    }
    rc = SQLITE_ERROR;
    goto cleanup;
  }
  /* The top object and the inputs array sit above the values themselves. */
  if (c.scan.nMaxDepth > EDN_MAX_DEPTH + 2) {
    qOptsError(&c, "opts: nesting too deep (limit %d)", EDN_MAX_DEPTH);
    rc = SQLITE_ERROR;
    goto cleanup;
  }
  pRoot = cJSON_ParseWithLengthOpts(zOpts, (size_t)nOpts, &zEnd, 0);
  if (pRoot == NULL) {
    /* cJSON does not say OOM apart from bad text; its error position is
    ** process-global, so it is not consulted (STYLE). */
    qOptsError(&c, "opts: not valid JSON");
    rc = SQLITE_ERROR;
    goto cleanup;
  }
  /* Anything but whitespace after the value (including a NUL byte) means
  ** the text is not one JSON value. */
  for (i = (int)(zEnd - zOpts); i < nOpts; i++) {
    if (strchr(" \t\r\n", zOpts[i]) == NULL || zOpts[i] == 0) {
      qOptsError(&c, "opts: not valid JSON");
      rc = SQLITE_ERROR;
      goto cleanup;
    }
  }
  if (cJSON_IsNull(pRoot)) goto cleanup;
  if (!cJSON_IsObject(pRoot)) {
    qOptsError(&c, "opts must be a JSON object");
    rc = SQLITE_ERROR;
    goto cleanup;
  }
  if (c.scan.bNulEscape) {
    qOptsError(&c, "opts: \\u0000 in a JSON string is not supported; pass such a string as "
                  "{\"edn\": \"\\\"a\\\\u0000b\\\"\"}");
    rc = SQLITE_ERROR;
    goto cleanup;
  }
  /* Keys in document order, so numbers are met in the scan's order. */
  for (j = pRoot->child; j; j = j->next) {
    for (k = pRoot->child; k != j; k = k->next) {
      if (strcmp(k->string, j->string) == 0) {
        qOptsError(&c, "duplicate option \"%s\"", j->string);
        rc = SQLITE_ERROR;
        goto cleanup;
      }
    }
    if (strcmp(j->string, "inputs") == 0) {
      rc = qOptsInputs(&c, j);
    } else if (strcmp(j->string, "asOf") == 0) {
      p->bAsOf = 1;
      rc = qOptsTx(&c, j, "asOf", &p->iAsOf, &p->pAsOfInst);
    } else if (strcmp(j->string, "since") == 0) {
      p->bSince = 1;
      rc = qOptsTx(&c, j, "since", &p->iSince, &p->pSinceInst);
    } else if (strcmp(j->string, "sources") == 0) {
      rc = qOptsSources(&c, j);
    } else if (strcmp(j->string, "history") == 0) {
      /* Datomic's d/history: every assertion and retraction, within
      ** asOf/since when given (SPEC 6). */
      if (cJSON_IsBool(j)) {
        p->bHistory = cJSON_IsTrue(j);
      } else {
        qOptsError(&c, "\"history\" must be true or false");
        rc = SQLITE_ERROR;
      }
    } else if (strcmp(j->string, "explain") == 0) {
      /* The compiled SQL and SQLite's plan instead of rows (qExplain). */
      if (cJSON_IsBool(j)) {
        p->bExplain = cJSON_IsTrue(j);
      } else {
        qOptsError(&c, "\"explain\" must be true or false");
        rc = SQLITE_ERROR;
      }
    } else if (strcmp(j->string, "with") == 0) {
      rc = qOptsWith(&c, j);
    } else if (strcmp(j->string, "withReport") == 0) {
      rc = qOptsBool(&c, j, &p->bWithReport);
    } else {
      qOptsError(&c, "unknown option \"%s\"", j->string);
      rc = SQLITE_ERROR;
    }
    if (rc != SQLITE_OK) goto cleanup;
  }
  rc = qOptsCombos(&c);

cleanup:
  cJSON_Delete(pRoot);
  sqlite3_free(c.scan.aStart);
  if (rc != SQLITE_OK) qOptsReset(p);
  return rc;
}
