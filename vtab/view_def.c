/*
** view_def.c — an edn_view table's definition (view_def.h): arguments,
** path rule, column names, the check against the store, the per-scan opts.
**
** HOW IT WORKS
** The module arguments arrive as SQLite wrote them in the CREATE VIRTUAL
** TABLE statement (and keeps them in sqlite_schema): key='text' pairs.
** The query is parsed here (qpParse) for its find elements and :in
** bindings, which name the columns; nothing of the parse is kept but the
** names and the inputs' kinds. The check compiles and prepares the query
** on a reader of the store (qRunOpen, not stepped) with placeholder inputs
** of the declared shapes, the shape being what the compiled SQL depends
** on; the real inputs come per scan through the same opts JSON edn_q
** takes, so a hidden column's value means what the same value in
** "inputs" means.
*/
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "view_def.h"
#include "call.h"
#include "query.h"
#include "schema.h"
#include "sqlio.h"
#include "view_idents.h"

static int vdefErr(char **pzErr, char *zMsg) {
  sqlite3_free(*pzErr);
  *pzErr = zMsg;
  return zMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* ------------------------------------------------------------ arguments */

/* Reads one module argument "key = 'text'" (SQL string literal, '' for a
** quote) into *pzKey (static name) and *pzVal (sqlite3_malloc'd). */
static int vdefArg(const char *zArg, int iArg, char **pzKey, char **pzVal, char **pzErr) {
  const char *z = zArg, *zKey;
  int nKey;
  sqlite3_str *pVal;
  while (isspace((unsigned char)*z)) z++;
  zKey = z;
  while (isalnum((unsigned char)*z) || *z == '_') z++;
  nKey = (int)(z - zKey);
  while (isspace((unsigned char)*z)) z++;
  if (nKey == 0 || *z != '=') {
    return vdefErr(pzErr, sqlite3_mprintf("argument %d: expected key='text' (db, query, rules"
                                          " or opts), got %s", iArg, zArg));
  }
  z++;
  while (isspace((unsigned char)*z)) z++;
  if (*z != '\'') {
    return vdefErr(pzErr, sqlite3_mprintf("argument %.*s: the value must be a quoted SQL string"
                                          " ('...')", nKey, zKey));
  }
  pVal = sqlite3_str_new(NULL);
  for (z++;; z++) {
    if (*z == 0) {
      sqlite3_free(sqlite3_str_finish(pVal));
      return vdefErr(pzErr, sqlite3_mprintf("argument %.*s: unterminated string", nKey, zKey));
    }
    if (*z == '\'') {
      if (z[1] != '\'') break;
      z++;
    }
    sqlite3_str_appendchar(pVal, 1, *z);
  }
  for (z++; isspace((unsigned char)*z); z++) {}
  if (*z != 0) {
    sqlite3_free(sqlite3_str_finish(pVal));
    return vdefErr(pzErr, sqlite3_mprintf("argument %.*s: the value must be one quoted SQL"
                                          " string ('...')", nKey, zKey));
  }
  if (sqlite3_str_errcode(pVal) != SQLITE_OK) {
    sqlite3_free(sqlite3_str_finish(pVal));
    return SQLITE_NOMEM;
  }
  /* NULL: nothing was appended (an empty string) */
  *pzVal = sqlite3_str_finish(pVal);
  if (*pzVal == NULL) *pzVal = sqlite3_mprintf("%s", "");
  if (*pzVal == NULL) return SQLITE_NOMEM;
  *pzKey = sqlite3_mprintf("%.*s", nKey, zKey);
  return *pzKey ? SQLITE_OK : SQLITE_NOMEM;
}

/* The opts= text checked (a JSON object with time options only) and kept
** as its members without the braces. */
static int vdefOptsArg(ViewDef *p, const char *zOpts, char **pzErr) {
  QueryOpts opts;
  const char *zOpen, *zClose;
  int rc;
  qOptsInit(&opts);
  rc = qOptsParse(&opts, zOpts, (int)strlen(zOpts), pzErr);
  if (rc == SQLITE_OK && opts.bExplain) {
    rc = vdefErr(pzErr, sqlite3_mprintf("\"explain\" is for the scalar edn_q"));
  }
  for (int i = 0; rc == SQLITE_OK && i < opts.nSource && p->zFileSource == NULL; i++) {
    const QuerySource *pS = &opts.aSource[i];
    if (pS->zPath == NULL) continue;
    p->zFileSource = sqlite3_mprintf("%s (%s)", pS->zName, pS->zPath);
    if (p->zFileSource == NULL) rc = SQLITE_NOMEM;
  }
  qOptsReset(&opts);
  if (rc == SQLITE_NOMEM) return rc;
  if (rc != SQLITE_OK) {
    char *zMsg = sqlite3_mprintf("argument opts: %s", *pzErr ? *pzErr : "not valid");
    return vdefErr(pzErr, zMsg);
  }
  if (strstr(zOpts, "\"inputs\"")) {
    return vdefErr(pzErr, sqlite3_mprintf("argument opts: \"inputs\" cannot be given: a view's"
                                          " inputs are its hidden columns"));
  }
  /* qOptsParse took it: an object, or a text that means none ('', 'null') */
  zOpen = strchr(zOpts, '{');
  zClose = strrchr(zOpts, '}');
  if (zOpen == NULL || zClose == NULL || zClose < zOpen) return SQLITE_OK;
  for (zOpen++; zOpen < zClose && isspace((unsigned char)*zOpen); zOpen++) {}
  if (zOpen == zClose) return SQLITE_OK;
  p->zOpts = sqlite3_mprintf("%.*s", (int)(zClose - zOpen), zOpen);
  return p->zOpts ? SQLITE_OK : SQLITE_NOMEM;
}

/* The module arguments into p: zDb gets db= (sqlite3_malloc'd). */
static int vdefArgs(ViewDef *p, int argc, const char *const *argv, char **pzDb, char **pzErr) {
  int i, rc = SQLITE_OK;
  char *zOpts = NULL;
  for (i = 3; i < argc && rc == SQLITE_OK; i++) {
    char *zKey = NULL, *zVal = NULL, **pz = NULL;
    rc = vdefArg(argv[i], i - 2, &zKey, &zVal, pzErr);
    if (rc != SQLITE_OK) {
      sqlite3_free(zKey);
      sqlite3_free(zVal);
      break;
    }
    if (sqlite3_stricmp(zKey, "db") == 0) pz = pzDb;
    else if (sqlite3_stricmp(zKey, "query") == 0) pz = &p->zQuery;
    else if (sqlite3_stricmp(zKey, "rules") == 0) pz = &p->zRules;
    else if (sqlite3_stricmp(zKey, "opts") == 0) pz = &zOpts;
    if (pz == NULL) {
      rc = vdefErr(pzErr, sqlite3_mprintf("unknown argument %s (db, query, rules or opts)", zKey));
    } else if (*pz) {
      rc = vdefErr(pzErr, sqlite3_mprintf("argument %s given twice", zKey));
    } else {
      *pz = zVal;
      zVal = NULL;
    }
    sqlite3_free(zKey);
    sqlite3_free(zVal);
  }
  if (rc == SQLITE_OK && (*pzDb == NULL || p->zQuery == NULL)) {
    rc = vdefErr(pzErr, sqlite3_mprintf("missing argument %s (USING edn_view(db='...',"
                                        " query='[:find ...]'))", *pzDb ? "query" : "db"));
  }
  if (rc == SQLITE_OK && zOpts) rc = vdefOptsArg(p, zOpts, pzErr);
  sqlite3_free(zOpts);
  return rc;
}

/* ------------------------------------------------------------ the path rule */

/* Is zReal (a realpath) zDir itself or inside it? */
static int vdefInside(const char *zReal, const char *zDir) {
  size_t n = strlen(zDir);
  if (n == 1 && zDir[0] == '/') return 1;
  return strncmp(zReal, zDir, n) == 0 && (zReal[n] == '/' || zReal[n] == 0);
}

/* Does zRel hold a ".." component? */
static int vdefHasDotDot(const char *zRel) {
  const char *z = zRel;
  while (*z) {
    size_t n = strcspn(z, "/");
    if (n == 2 && z[0] == '.' && z[1] == '.') return 1;
    z += n;
    while (*z == '/') z++;
  }
  return 0;
}

/* Where zFull (the resolved store path) really is: its realpath, or, for a
** file not there yet, its directory's; NULL when neither resolves. libc
** malloc'd. */
static char *vdefRealTarget(const char *zFull) {
  char *zReal = realpath(zFull, NULL);
  char *zCopy, *zSlash;
  if (zReal) return zReal;
  zCopy = strdup(zFull);
  if (zCopy == NULL) return NULL;
  zSlash = strrchr(zCopy, '/');
  if (zSlash) *zSlash = 0;
  zReal = zSlash ? realpath(zCopy[0] ? zCopy : "/", NULL) : NULL;
  free(zCopy);
  return zReal;
}

/* Applies the path rule (view_def.h) to db= zDb of a table stored in
** schema zSchema: p->zPath, or p->zPathErr when refused. */
static int vdefPath(ViewDef *p, sqlite3 *db, const char *zSchema, const char *zDb) {
  const char *zFile = sqlite3_db_filename(db, zSchema);
  char *zDir = NULL, *zRealDir = NULL, *zReal = NULL;
  const char *zWhy = NULL;
  if (zFile && zFile[0] && p->zFileSource) {
    /* qSourcesOpen opens it as given: the rule below cannot hold for it */
    p->zPathErr = sqlite3_mprintf("opts source %s names a store file: a table stored in"
                                  " database %s (%s) reads no other store; a TEMP table may",
                                  p->zFileSource, zSchema, zFile);
    return p->zPathErr ? SQLITE_OK : SQLITE_NOMEM;
  }
  if (zDb[0] == 0 || zDb[0] == ':' || zFile == NULL || zFile[0] == 0) {
    /* a host store, the private in-memory one, or a table its connection's
    ** owner made (TEMP, an in-memory database): as edn_q takes it */
    p->zPath = sqlite3_mprintf("%s", zDb);
    return p->zPath ? SQLITE_OK : SQLITE_NOMEM;
  }
  {
    const char *zSlash = strrchr(zFile, '/');
    zDir = sqlite3_mprintf("%.*s", zSlash ? (int)(zSlash - zFile) : 1, zSlash ? zFile : ".");
  }
  if (zDir == NULL) return SQLITE_NOMEM;
  if (zDb[0] == '/') zWhy = "an absolute path";
  else if (vdefHasDotDot(zDb)) zWhy = "a path with '..'";
  if (zWhy == NULL) {
    p->zPath = sqlite3_mprintf("%s/%s", zDir[0] ? zDir : "", zDb);
    if (p->zPath == NULL) {
      sqlite3_free(zDir);
      return SQLITE_NOMEM;
    }
    zRealDir = realpath(zDir[0] ? zDir : "/", NULL);
    zReal = vdefRealTarget(p->zPath);
    if (zRealDir == NULL || zReal == NULL) zWhy = "a path that does not resolve";
    else if (!vdefInside(zReal, zRealDir)) zWhy = "a link out of that directory";
  }
  if (zWhy) {
    p->zPathErr = sqlite3_mprintf("db '%s' is refused (%s): a table stored in database %s"
                                  " (%s) reads a host store (':main') or a store file inside %s;"
                                  " a TEMP table may name any store", zDb, zWhy, zSchema, zFile,
                                  zDir);
  }
  free(zRealDir);
  free(zReal);
  sqlite3_free(zDir);
  return (zWhy && p->zPathErr == NULL) ? SQLITE_NOMEM : SQLITE_OK;
}

/* ------------------------------------------------------------ column names */

/* Appends zRaw[0..n) to pOut as a name piece: '?' dropped, every run of
** other characters outside [A-Za-z0-9_] (and UTF-8 bytes) one '_'
** between name characters. */
static void vdefSanitize(sqlite3_str *pOut, const char *zRaw, int n) {
  int i, bSep = 0;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)zRaw[i];
    if (c == '?') continue;
    if (isalnum(c) || c == '_' || c >= 0x80) {
      if (bSep && sqlite3_str_length(pOut) > 0) sqlite3_str_appendchar(pOut, 1, '_');
      sqlite3_str_appendchar(pOut, 1, (char)c);
      bSep = 0;
    } else {
      bSep = 1;
    }
  }
}

/* The raw name of find element i (before vdefSanitize): its :keys name,
** the variable, pull_<var>, or the aggregate as written. */
static void vdefFindRaw(sqlite3_str *pOut, const QQuery *pQ, int i) {
  const QFindElem *pE = &pQ->aFind[i];
  if (pQ->eKeys != QK_NONE && i < pQ->nKey) {
    sqlite3_str_appendall(pOut, pQ->azKey[i]);
  } else if (pE->kind == QFIND_PULL) {
    sqlite3_str_appendall(pOut, "pull ");
    ednPrint(pOut, pE->pVar);
  } else {
    ednPrint(pOut, pE->pForm);
  }
}

/* The raw name of binding pB: its variables, blanks left out. */
static void vdefBindRaw(sqlite3_str *pOut, const QBinding *pB) {
  int i;
  for (i = 0; i < pB->nVar; i++) {
    if (qpIsBlank(pB->aVar[i])) continue;
    sqlite3_str_appendchar(pOut, 1, ' ');
    ednPrint(pOut, pB->aVar[i]);
  }
}

/* Sets p->azName[iCol] from the raw name in pRaw (consumed): sanitized,
** "c<iCol>" when nothing is left, "_2", "_3", ... added while an earlier
** column has the name (SQLite compares column names without case). */
static int vdefSetName(ViewDef *p, int iCol, sqlite3_str *pRaw) {
  sqlite3_str *pName = sqlite3_str_new(NULL);
  char *zRaw, *zBase, *zName;
  int n, k, j;
  int bOom = sqlite3_str_errcode(pRaw) != SQLITE_OK;
  n = sqlite3_str_length(pRaw);
  zRaw = sqlite3_str_finish(pRaw);
  if (zRaw) vdefSanitize(pName, zRaw, n);
  sqlite3_free(zRaw);
  if (sqlite3_str_length(pName) == 0) sqlite3_str_appendf(pName, "c%d", iCol);
  bOom |= sqlite3_str_errcode(pName) != SQLITE_OK;
  zBase = sqlite3_str_finish(pName);
  if (bOom || zBase == NULL) {
    sqlite3_free(zBase);
    return SQLITE_NOMEM;
  }
  zName = zBase;
  for (k = 2;; k++) {
    for (j = 0; j < iCol && sqlite3_stricmp(p->azName[j], zName) != 0; j++) {}
    if (j == iCol) break;
    if (zName != zBase) sqlite3_free(zName);
    zName = sqlite3_mprintf("%s_%d", zBase, k);
    if (zName == NULL) {
      sqlite3_free(zBase);
      return SQLITE_NOMEM;
    }
  }
  if (zName != zBase) sqlite3_free(zBase);
  p->azName[iCol] = zName;
  return SQLITE_OK;
}

/* Is scalar :in variable pVar the pattern of a pull in :find? */
static int vdefIsPatternVar(const QQuery *pQ, const EdnValue *pVar) {
  int i;
  for (i = 0; i < pQ->nFind; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    if (pE->kind == QFIND_PULL && pE->pPattern && pE->pPattern->type == EDN_SYMBOL
        && strcmp(pE->pPattern->u.s.z, pVar->u.s.z) == 0) {
      return 1;
    }
  }
  return 0;
}

/* The find element that is plain variable pVar, or -1. */
static int vdefFindVar(const QQuery *pQ, const EdnValue *pVar) {
  int i;
  for (i = 0; i < pQ->nFind; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    if (pE->kind == QFIND_VAR && strcmp(pE->pVar->u.s.z, pVar->u.s.z) == 0) return i;
  }
  return -1;
}

/* The inputs' kinds and columns: a find element's for a scalar or
** collection binding of a find variable, else a new hidden one. */
static int vdefInputs(ViewDef *p, const QQuery *pQ, char **pzErr) {
  int i, rc = SQLITE_OK, bRules = 0;
  for (i = 0; i < pQ->nIn && rc == SQLITE_OK; i++) {
    const QIn *pIn = &pQ->aIn[i];
    sqlite3_str *pRaw;
    int eKind, iFind = -1;
    if (pIn->kind == QIN_SRC) continue;
    if (p->nIn == VDEF_MAX_INPUTS) {
      return vdefErr(pzErr, sqlite3_mprintf("line %d col %d: a view takes at most %d :in inputs",
                                            pIn->pForm->line, pIn->pForm->col, VDEF_MAX_INPUTS));
    }
    if (pIn->kind == QIN_RULES) {
      bRules = 1;
      p->aInKind[p->nIn] = VDEF_IN_RULES;
      p->aInArg[p->nIn++] = -1;
      continue;
    }
    if (pIn->kind == QIN_PATTERN) {
      eKind = VDEF_IN_PATTERN;
    } else {
      eKind = pIn->bind.kind != QB_SCALAR ? VDEF_IN_JSON
            : vdefIsPatternVar(pQ, pIn->bind.aVar[0]) ? VDEF_IN_PATTERN : VDEF_IN_SCALAR;
      if (pIn->bind.kind == QB_SCALAR || pIn->bind.kind == QB_COLL) {
        iFind = vdefFindVar(pQ, pIn->bind.aVar[0]);
      }
    }
    p->aInKind[p->nIn] = eKind;
    p->aInArg[p->nIn++] = p->nArg;
    p->aArgShared[p->nArg] = iFind >= 0;
    if (iFind >= 0) {
      p->aArgCol[p->nArg++] = iFind;
      continue;
    }
    p->aArgCol[p->nArg++] = p->nCol + p->nHidden;
    pRaw = sqlite3_str_new(NULL);
    if (pIn->kind == QIN_PATTERN) ednPrint(pRaw, pIn->pForm);
    else vdefBindRaw(pRaw, &pIn->bind);
    rc = vdefSetName(p, p->nCol + p->nHidden++, pRaw);
  }
  if (rc == SQLITE_OK && bRules != (p->zRules != NULL)) {
    rc = vdefErr(pzErr, sqlite3_mprintf(bRules ? "the query's :in has %% but no rules='...'"
                                        " argument gives its rules"
                                        : "rules='...' is given but the query's :in has no %%"));
  }
  return rc;
}

/* Names every column and builds the declaration. */
static int vdefColumns(ViewDef *p, const QQuery *pQ, char **pzErr) {
  sqlite3_str *pDecl;
  int i, rc = SQLITE_OK, nMax = pQ->nFind + pQ->nIn;
  p->azName = sqlite3_malloc64(sizeof(char *) * (size_t)(nMax > 0 ? nMax : 1));
  if (p->azName == NULL) return SQLITE_NOMEM;
  memset(p->azName, 0, sizeof(char *) * (size_t)(nMax > 0 ? nMax : 1));
  for (i = 0; i < pQ->nFind && rc == SQLITE_OK; i++) {
    sqlite3_str *pRaw = sqlite3_str_new(NULL);
    vdefFindRaw(pRaw, pQ, i);
    rc = vdefSetName(p, i, pRaw);
    p->nCol = i + 1;
  }
  if (rc == SQLITE_OK) rc = vdefInputs(p, pQ, pzErr);
  if (rc != SQLITE_OK) return rc;
  pDecl = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pDecl, "CREATE TABLE x(");
  for (i = 0; i < p->nCol + p->nHidden; i++) {
    /* names hold no '"' (vdefSanitize) */
    sqlite3_str_appendf(pDecl, "%s\"%s\"%s", i ? ", " : "", p->azName[i],
                        i >= p->nCol ? " HIDDEN" : "");
  }
  sqlite3_str_appendall(pDecl, ")");
  p->zDecl = sqlite3_str_finish(pDecl);
  return p->zDecl ? SQLITE_OK : SQLITE_NOMEM;
}

int vdefParse(sqlite3 *db, int argc, const char *const *argv, ViewDef *p, char **pzErr) {
  EdnArena arena;
  QQuery *pQ = NULL;
  char *zDb = NULL;
  int rc = vdefArgs(p, argc, argv, &zDb, pzErr);
  ednArenaInit(&arena);
  if (rc == SQLITE_OK) {
    p->zName = sqlite3_mprintf("%s", argc > 2 ? argv[2] : "");
    if (p->zName == NULL) rc = SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK) rc = qpParse(&arena, p->zQuery, (int)strlen(p->zQuery), &pQ, pzErr);
  if (rc == SQLITE_OK) rc = vdefColumns(p, pQ, pzErr);
  if (rc == SQLITE_OK) rc = vdefPath(p, db, argv[1], zDb);
  ednArenaReset(&arena);
  sqlite3_free(zDb);
  return rc;
}

void vdefFree(ViewDef *p) {
  int i;
  if (p->azName) {
    for (i = 0; i < p->nCol + p->nHidden; i++) sqlite3_free(p->azName[i]);
  }
  sqlite3_free(p->azName);
  sqlite3_free(p->zName);
  sqlite3_free(p->zPath);
  sqlite3_free(p->zPathErr);
  sqlite3_free(p->zQuery);
  sqlite3_free(p->zRules);
  sqlite3_free(p->zOpts);
  sqlite3_free(p->zFileSource);
  sqlite3_free(p->zDecl);
  memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------ inputs */

/* Appends {"edn":"<z>"} for EDN text z. */
static void vdefEdnJson(sqlite3_str *pOut, const char *z, int n) {
  sqlite3_str_appendall(pOut, "{\"edn\":");
  ednJsonString(pOut, z, n);
  sqlite3_str_appendchar(pOut, 1, '}');
}

/* Is zJson[0..n) one input value qOptsParse takes? Else its message. */
static int vdefCheckJson(const char *zJson, int n, char **pzErr) {
  QueryOpts opts;
  char *zWrap = sqlite3_mprintf("{\"inputs\":[%.*s]}", n, zJson);
  int rc;
  if (zWrap == NULL) return SQLITE_NOMEM;
  qOptsInit(&opts);
  rc = qOptsParse(&opts, zWrap, (int)strlen(zWrap), pzErr);
  if (rc == SQLITE_OK && opts.nInput != 1) {
    rc = vdefErr(pzErr, sqlite3_mprintf("not one JSON value"));
  }
  qOptsReset(&opts);
  sqlite3_free(zWrap);
  if (rc == SQLITE_ERROR && *pzErr) {
    /* "opts: not valid JSON", "\"inputs\" value 1: ..." say where in the
    ** opts the message would be; the caller names the column instead. */
    const char *z = *pzErr;
    if (strncmp(z, "\"inputs\" value 1: ", 18) == 0) z += 18;
    else if (strncmp(z, "\"inputs\" value 1 ", 17) == 0) z += 17;
    else if (strncmp(z, "opts: ", 6) == 0) z += 6;
    rc = vdefErr(pzErr, sqlite3_mprintf("%s", z));
  }
  return rc;
}

/* The first character of TEXT pVal past blanks, 0 for none or not text. */
static char vdefJsonKind(sqlite3_value *pVal) {
  const unsigned char *z = sqlite3_value_text(pVal);
  if (z == NULL) return 0;
  while (isspace(*z)) z++;
  return (char)*z;
}

/* Appends pVal as the JSON of an input of kind eKind, for column zCol. */
static int vdefValue(int eKind, const char *zCol, sqlite3_value *pVal, sqlite3_str *pOut,
                     char **pzErr) {
  int eType = sqlite3_value_type(pVal), n, rc;
  const char *z;
  char *zWhy = NULL;
  if (eKind == VDEF_IN_JSON && eType != SQLITE_TEXT) eType = SQLITE_BLOB;   /* refused below */
  if (eType == SQLITE_INTEGER) {
    ednAppendInt(pOut, sqlite3_value_int64(pVal));
    return SQLITE_OK;
  }
  if (eType == SQLITE_FLOAT) {
    ednJsonDouble(pOut, sqlite3_value_double(pVal));
    return SQLITE_OK;
  }
  if (eKind == VDEF_IN_JSON && (eType != SQLITE_TEXT || vdefJsonKind(pVal) != '[')) {
    return vdefErr(pzErr, sqlite3_mprintf("input %s: a collection, tuple or relation binding"
                                          " takes a JSON array (json_array(...) or '[...]')",
                                          zCol));
  }
  if (eType != SQLITE_TEXT) {
    return vdefErr(pzErr, sqlite3_mprintf("input %s: a BLOB is not a query input (give a number,"
                                          " text or JSON)", zCol));
  }
  rc = sqlioText(pVal, &z, &n);
  if (rc != SQLITE_OK) return rc;
  if (sqlite3_value_subtype(pVal) == MENTAT_JSON_SUBTYPE || eKind == VDEF_IN_JSON) {
    /* JSON: from json_array()/json_object(), or text where only a
    ** collection can go */
    rc = vdefCheckJson(z, n, &zWhy);
    if (rc == SQLITE_OK) sqlite3_str_append(pOut, z, n);
  } else {
    /* a string (":kw" a keyword, as in "inputs"), or a pattern's EDN */
    sqlite3_str *pOne = sqlite3_str_new(NULL);
    char *zOne;
    int nOne;
    if (eKind == VDEF_IN_PATTERN) vdefEdnJson(pOne, z, n);
    else ednJsonString(pOne, z, n);
    nOne = sqlite3_str_length(pOne);
    zOne = sqlite3_str_finish(pOne);
    if (zOne == NULL) return SQLITE_NOMEM;
    if (eKind == VDEF_IN_PATTERN || (n > 0 && z[0] == ':')) rc = vdefCheckJson(zOne, nOne, &zWhy);
    if (rc == SQLITE_OK) sqlite3_str_append(pOut, zOne, nOne);
    sqlite3_free(zOne);
  }
  if (rc == SQLITE_ERROR) {
    rc = vdefErr(pzErr, sqlite3_mprintf("input %s: %s", zCol, zWhy ? zWhy : "not valid JSON"));
  }
  sqlite3_free(zWhy);
  return rc;
}

/* Appends input iIn's value from pVal as JSON. */
static int vdefInput(const ViewDef *p, int iIn, sqlite3_value *pVal, sqlite3_str *pOut,
                     char **pzErr) {
  int iArg = p->aInArg[iIn], eKind = p->aInKind[iIn], rc;
  const char *zCol = p->azName[p->aArgCol[iArg]];
  if (eKind == VDEF_IN_JSON && p->aArgShared[iArg]
      && !(sqlite3_value_type(pVal) == SQLITE_TEXT
           && sqlite3_value_subtype(pVal) == MENTAT_JSON_SUBTYPE)) {
    /* [?x ...] with ?x a find column: one value is a collection of one,
    ** so that WHERE x = v and WHERE x IN (...) read as they say */
    sqlite3_str_appendchar(pOut, 1, '[');
    rc = vdefValue(VDEF_IN_SCALAR, zCol, pVal, pOut, pzErr);
    sqlite3_str_appendchar(pOut, 1, ']');
    return rc;
  }
  return vdefValue(eKind, zCol, pVal, pOut, pzErr);
}

/* Opens the opts JSON in pOut: {"<opts= members>", "inputs":[ */
static void vdefOptsHead(const ViewDef *p, sqlite3_str *pOut) {
  sqlite3_str_appendchar(pOut, 1, '{');
  if (p->zOpts) sqlite3_str_appendf(pOut, "%s,", p->zOpts);
  sqlite3_str_appendall(pOut, "\"inputs\":[");
}

int vdefOpts(const ViewDef *p, sqlite3_value **apArg, char **pzOpts, char **pzErr) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  int i, rc = SQLITE_OK;
  vdefOptsHead(p, pOut);
  for (i = 0; i < p->nIn && rc == SQLITE_OK; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, ',');
    if (p->aInKind[i] == VDEF_IN_RULES) {
      vdefEdnJson(pOut, p->zRules, (int)strlen(p->zRules));
    } else {
      rc = vdefInput(p, i, apArg[p->aInArg[i]], pOut, pzErr);
    }
  }
  sqlite3_str_appendall(pOut, "]}");
  *pzOpts = sqlite3_str_finish(pOut);
  if (rc != SQLITE_OK) {
    sqlite3_free(*pzOpts);
    *pzOpts = NULL;
    return rc;
  }
  return *pzOpts ? SQLITE_OK : SQLITE_NOMEM;
}

/* ------------------------------------------------------------ the check */

/* The placeholder inputs of the check: a value of each input's shape. */
static char *vdefPlaceholders(const ViewDef *p, const QQuery *pQ) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  int i, j, iIn = 0;
  vdefOptsHead(p, pOut);
  for (i = 0; i < pQ->nIn; i++) {
    const QIn *pIn = &pQ->aIn[i];
    if (pIn->kind == QIN_SRC) continue;
    if (iIn) sqlite3_str_appendchar(pOut, 1, ',');
    switch (p->aInKind[iIn++]) {
      case VDEF_IN_RULES: vdefEdnJson(pOut, p->zRules, (int)strlen(p->zRules)); break;
      case VDEF_IN_PATTERN: sqlite3_str_appendall(pOut, "{\"edn\":\"[:db/id]\"}"); break;
      case VDEF_IN_JSON:
        sqlite3_str_appendall(pOut, pIn->bind.kind == QB_COLL ? "[0]"
                                    : pIn->bind.kind == QB_REL ? "[[" : "[");
        if (pIn->bind.kind != QB_COLL) {
          for (j = 0; j < pIn->bind.nVar; j++) sqlite3_str_appendall(pOut, j ? ",0" : "0");
          sqlite3_str_appendall(pOut, pIn->bind.kind == QB_REL ? "]]" : "]");
        }
        break;
      default: sqlite3_str_appendchar(pOut, 1, '0'); break;
    }
  }
  sqlite3_str_appendall(pOut, "]}");
  return sqlite3_str_finish(pOut);
}

/* The schemas the attribute check reads: $'s and the opts' sources'. */
typedef struct VdefSchemas {
  const Schema *pMain;
  const QueryOpts *pOpts;
} VdefSchemas;

/* The schema a clause naming source pSrc reads (NULL: any of pS's, for a
** rule's body, whose caller names its source) into *ppSchema, where a
** clause without one (or naming $) reads pDefault (README "Several
** sources": inside a rule called with a source, or a not/or given one,
** that source). 0 for a source the opts lack (the compile has reported
** it): nothing to check against. */
static int vdefSrcSchema(const VdefSchemas *pS, const EdnValue *pSrc, const Schema *pDefault,
                         const Schema **ppSchema) {
  int i;
  *ppSchema = pDefault;
  if (pSrc == NULL || (pSrc->u.s.n == 1 && pSrc->u.s.z[0] == '$')) return 1;
  for (i = 0; i < pS->pOpts->nSource; i++) {
    const QuerySource *pQ = &pS->pOpts->aSource[i];
    if (strlen(pQ->zName) == (size_t)pSrc->u.s.n
        && memcmp(pQ->zName, pSrc->u.s.z, (size_t)pSrc->u.s.n) == 0) {
      *ppSchema = pQ->pSchema;
      return pQ->pSchema != NULL;
    }
  }
  return 0;
}

/* Does attribute ident pA name an attribute of pSchema (NULL: of any
** schema pS has)? */
static int vdefKnown(const VdefSchemas *pS, const Schema *pSchema, const EdnValue *pA) {
  int i;
  if (pSchema) return schemaAttrByIdent(pSchema, pA->u.s.z, pA->u.s.n) != NULL;
  if (schemaAttrByIdent(pS->pMain, pA->u.s.z, pA->u.s.n)) return 1;
  for (i = 0; i < pS->pOpts->nSource; i++) {
    const Schema *p = pS->pOpts->aSource[i].pSchema;
    if (p && schemaAttrByIdent(p, pA->u.s.z, pA->u.s.n)) return 1;
  }
  return 0;
}

/* Every attribute keyword in a pattern of the clauses known to the schema
** of the source that pattern reads (pDefault where it names none; NULL:
** any source's, for a rule's body); zWhere prefixes the message ("" for
** the query, "rules: "). */
static int vdefAttrs(const VdefSchemas *pS, const Schema *pDefault, QClause **aClause,
                     int nClause, const char *zWhere, char **pzErr) {
  int i, rc = SQLITE_OK;
  for (i = 0; i < nClause && rc == SQLITE_OK; i++) {
    const QClause *pC = aClause[i];
    const Schema *pSchema;
    if (!vdefSrcSchema(pS, pC->pSrc, pDefault, &pSchema)) continue;
    if (pC->kind == QC_PATTERN) {
      const EdnValue *pA = pC->nArg > 1 ? pC->aArg[1] : NULL;
      if (pA && pA->type == EDN_KEYWORD && !vdefKnown(pS, pSchema, pA)) {
        rc = vdefErr(pzErr, sqlite3_mprintf("%sline %d col %d: unknown attribute %s", zWhere,
                                            pA->line, pA->col, pA->u.s.z));
      }
    } else if (pC->nSub > 0) {
      rc = vdefAttrs(pS, pSchema, pC->aSub, pC->nSub, zWhere, pzErr);
    }
  }
  return rc;
}

/* The attribute check over the query's :where and the rules' bodies; the
** sources of pOpts are open (qSourcesOpen), their schemas filled in. */
static int vdefCheckAttrs(const char *zRules, const Schema *pSchema, const QueryOpts *pOpts,
                          EdnArena *pArena, const QQuery *pQ, char **pzErr) {
  VdefSchemas sch;
  int rc;
  sch.pMain = pSchema;
  sch.pOpts = pOpts;
  rc = vdefAttrs(&sch, pSchema, pQ->aWhere, pQ->nWhere, "", pzErr);
  if (rc == SQLITE_OK && zRules) {
    EdnValue *pForm = NULL;
    EdnError err;
    QRuleSet set;
    int i;
    memset(&set, 0, sizeof set);
    if (ednReadOne(pArena, zRules, (int)strlen(zRules), &pForm, &err) != SQLITE_OK) {
      return SQLITE_OK;   /* the compile has reported it */
    }
    if (qpParseRules(pArena, pForm, &set, pzErr) != SQLITE_OK) return SQLITE_OK;
    for (i = 0; i < set.nRule && rc == SQLITE_OK; i++) {
      rc = vdefAttrs(&sch, pOpts->nSource ? NULL : pSchema, set.aRule[i]->aClause,
                     set.aRule[i]->nClause, "rules: ", pzErr);
    }
  }
  return rc;
}

/* The database of pCall's reader connection that holds $'s tables. */
static const char *vdefMainDb(const VCall *pCall) {
  return pCall->pConn->bHost && pCall->pConn->zHostDb ? pCall->pConn->zHostDb : "main";
}

int vdefResolve(const ViewDef *p, const VCall *pCall, const QueryOpts *pOpts, int bUnknown,
                char **pzQuery, char **pzRules, char **pzErr) {
  char *zErr = NULL;
  int rc = vidResolve(pCall->pConn->db, vdefMainDb(pCall), pCall->pSchema, pOpts, p->zQuery,
                      p->zRules, bUnknown, pzQuery, pzRules, &zErr);
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) {
    rc = vdefErr(pzErr, zErr ? sqlite3_mprintf("%s: %s", p->zName, zErr) : NULL);
  }
  sqlite3_free(zErr);
  return rc;
}

int vdefSetRules(const ViewDef *p, QueryOpts *pOpts, const char *zRules, char **pzErr) {
  EdnValue *pForm = NULL;
  EdnError err;
  int i, rc;
  for (i = 0; i < p->nIn && p->aInKind[i] != VDEF_IN_RULES; i++) {}
  if (i == p->nIn || i >= pOpts->nInput) return SQLITE_OK;
  rc = ednReadOne(&pOpts->arena, zRules, (int)strlen(zRules), &pForm, &err);
  if (rc == SQLITE_OK) pOpts->aInput[i] = pForm;
  else if (rc != SQLITE_NOMEM) rc = vdefErr(pzErr, sqlite3_mprintf("rules: %s", err.zMsg));
  return rc;
}

sqlite3_uint64 vdefSchemaKey(const VCall *pCall, const QueryOpts *pOpts) {
  sqlite3_uint64 h = schemaHashMix(schemaFingerprintOf(pCall->pSchema)
                                   ^ (sqlite3_uint64)schemaGeneration(pCall->pSchema));
  int i;
  for (i = 0; i < pOpts->nSource; i++) {
    const Schema *pS = pOpts->aSource[i].pSchema;
    if (pS) h = schemaHashMix(h ^ schemaFingerprintOf(pS) ^ (sqlite3_uint64)schemaGeneration(pS));
  }
  return h;
}

int vdefCheck(const ViewDef *p, sqlite3 *db, int bAttrs, char **pzErr) {
  EdnArena arena;
  QQuery *pQ = NULL;
  QueryOpts opts;
  VCall call;
  QueryRun *pRun = NULL;
  char *zPlace = NULL, *zQueryNow = NULL, *zRulesNow = NULL;
  const char *zQuery = p->zQuery;
  int rc;
  if (p->zPathErr) return vdefErr(pzErr, sqlite3_mprintf("%s", p->zPathErr));
  ednArenaInit(&arena);
  qOptsInit(&opts);
  memset(&call, 0, sizeof call);
  rc = qpParse(&arena, p->zQuery, (int)strlen(p->zQuery), &pQ, pzErr);
  if (rc == SQLITE_OK) {
    zPlace = vdefPlaceholders(p, pQ);
    if (zPlace == NULL) rc = SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK) {
    rc = vcallBeginText(&call, db, p->zPath, VCALL_READ, &opts, zPlace, (int)strlen(zPlace),
                        pzErr);
  }
  /* The query as it reads the store now: renamed idents followed
  ** (view_idents.h); the attribute check below reports the unknown ones. */
  if (rc == SQLITE_OK) {
    rc = vdefResolve(p, &call, &opts, 0, &zQueryNow, &zRulesNow, pzErr);
    /* on a later connection a scan reports it (the ident may come back) */
    if (rc == SQLITE_ERROR && !bAttrs) {
      sqlite3_free(*pzErr);
      *pzErr = NULL;
      rc = SQLITE_OK;
    }
  }
  if (rc == SQLITE_OK && zRulesNow) rc = vdefSetRules(p, &opts, zRulesNow, pzErr);
  if (rc == SQLITE_OK && zQueryNow) {
    zQuery = zQueryNow;
    rc = qpParse(&arena, zQuery, (int)strlen(zQuery), &pQ, pzErr);
  }
  if (rc == SQLITE_OK) {
    rc = qRunOpen(call.pConn, call.pSchema, zQuery, (int)strlen(zQuery), &opts, &pRun, pzErr);
    qRunClose(pRun);
    if (rc == SQLITE_OK && bAttrs) {
      rc = vdefCheckAttrs(zRulesNow ? zRulesNow : p->zRules, call.pSchema, &opts, &arena, pQ, pzErr);
    }
  }
  vcallEnd(&call);
  qOptsReset(&opts);
  ednArenaReset(&arena);
  sqlite3_free(zPlace);
  sqlite3_free(zQueryNow);
  sqlite3_free(zRulesNow);
  return rc;
}
