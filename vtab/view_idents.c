/*
** view_idents.c — an edn_view's idents followed through renames
** (view_idents.h: the rule and the places).
**
** HOW IT WORKS
** The query (and the rule set) is parsed again and walked; each ident
** place's keyword is looked up in its source's schema. One found there
** stays. One not found is looked up in that store's log: the entity whose
** :db/ident retraction of that keyword is the latest (the log's aevt index
** on a = :db/ident) is its former holder, and the place gets that
** entity's ident now, written over the keyword at its position in the text
** (the reader gives each form's line and column; columns count characters,
** as the reader does). The edits are applied in text order into a new
** string. Nothing is kept: edn_view.c calls this again when the schema
** changes.
*/
#include <stdlib.h>
#include <string.h>
#include "view_idents.h"
#include "query_ast.h"
#include "schema.h"
#include "value.h"

#define VID_ATTR  1   /* an attribute place */
#define VID_IDENT 2   /* an entity place (any entity with an ident) */

typedef struct VidEdit {
  int iOff, nOld;           /* the keyword's bytes in the text */
  char *zNew;               /* what replaces them (sqlite3_malloc'd) */
} VidEdit;

/* A source as the walk sees it: its schema and the database (of the
** reader connection) holding its tables. */
typedef struct VidSrc {
  const Schema *pSchema;
  const char *zDb;
} VidSrc;

typedef struct VidCtx {
  sqlite3 *db;
  VidSrc main;
  const QueryOpts *pOpts;
  int bUnknown;
  const char *zText;        /* the text being walked */
  const char *zWhere;       /* message prefix: "" or "rules: " */
  int bRule;                /* walking a rule body */
  int nEdit, nAlloc;
  VidEdit *aEdit;
  char **pzErr;
} VidCtx;

static int vidErr(VidCtx *c, const EdnValue *pAt, const char *zFmt, const char *zKw) {
  char *zMsg = sqlite3_mprintf(zFmt, zKw);
  sqlite3_free(*c->pzErr);
  *c->pzErr = zMsg ? sqlite3_mprintf("%sline %d col %d: %s", c->zWhere, pAt->line, pAt->col,
                                     zMsg) : NULL;
  sqlite3_free(zMsg);
  return *c->pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* The byte offset of (line, col) in z, counted as the EDN reader counts
** (columns in characters); -1 past the end. */
static int vidOffset(const char *z, int line, int col) {
  int i = 0, l = 1, k = 1;
  while (z[i] && (l < line || k < col)) {
    if (z[i] == '\n') {
      l++;
      k = 1;
    } else if (((unsigned char)z[i] & 0xC0) != 0x80) {
      k++;
    }
    i++;
    while (((unsigned char)z[i] & 0xC0) == 0x80) i++;
  }
  return z[i] ? i : -1;
}

/* The entity whose :db/ident was zKw last (its latest retraction in the log
** of database zDb), or 0. */
static int vidFormerHolder(VidCtx *c, const char *zDb, const char *zKw, int nKw,
                           sqlite3_int64 *pE) {
  sqlite3_stmt *pStmt = NULL;
  char *zSql = sqlite3_mprintf("SELECT e FROM \"%w\".timelined_transactions WHERE a = %d"
                               " AND timeline IS 0 AND value_type_tag = %d AND v = ?1"
                               " AND added = 0 ORDER BY tx DESC LIMIT 1",
                               zDb, ENTID_DB_IDENT, TAG_KEYWORD);
  int rc;
  *pE = 0;
  if (zSql == NULL) return SQLITE_NOMEM;
  rc = sqlite3_prepare_v2(c->db, zSql, -1, &pStmt, NULL);
  sqlite3_free(zSql);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(pStmt, 1, zKw, nKw, SQLITE_STATIC);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) *pE = sqlite3_column_int64(pStmt, 0);
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) {
    sqlite3_free(*c->pzErr);
    *c->pzErr = sqlite3_mprintf("reading the log for %s: %s", zKw, sqlite3_errmsg(c->db));
    if (*c->pzErr == NULL) rc = SQLITE_NOMEM;
  }
  sqlite3_finalize(pStmt);
  return rc;
}

/* Replaces the keyword pKw in the text with zNew (copied). */
static int vidEdit(VidCtx *c, const EdnValue *pKw, const char *zNew) {
  int iOff = vidOffset(c->zText, pKw->line, pKw->col);
  if (iOff < 0 || strncmp(c->zText + iOff, pKw->u.s.z, (size_t)pKw->u.s.n) != 0) {
    return SQLITE_OK;   /* not written as read (cannot happen for a keyword) */
  }
  if (c->nEdit == c->nAlloc) {
    int n = c->nAlloc ? 2 * c->nAlloc : 8;
    VidEdit *a = sqlite3_realloc64(c->aEdit, sizeof *a * (size_t)n);
    if (a == NULL) return SQLITE_NOMEM;
    c->aEdit = a;
    c->nAlloc = n;
  }
  c->aEdit[c->nEdit].iOff = iOff;
  c->aEdit[c->nEdit].nOld = pKw->u.s.n;
  c->aEdit[c->nEdit].zNew = sqlite3_mprintf("%s", zNew);
  if (c->aEdit[c->nEdit].zNew == NULL) return SQLITE_NOMEM;
  c->nEdit++;
  return SQLITE_OK;
}

/* Resolves the keyword pKw of an eKind place on source pSrc; *pE (may be
** NULL) gets the entity it names now, or 0. bReverse: a pull's reverse
** attribute ":ns/_name", resolved as ":ns/name" and written back reversed. */
static int vidKeyword1(VidCtx *c, const VidSrc *pSrc, const EdnValue *pKw, int eKind,
                       sqlite3_int64 *pE) {
  const char *z = pKw->u.s.z, *zSlash = strchr(z, '/');
  char zFwd[256];
  int n = pKw->u.s.n, bReverse = 0, rc;
  sqlite3_int64 e = 0;
  const char *zNow;
  if (pE) *pE = 0;
  if (pSrc->pSchema == NULL) return SQLITE_OK;
  if (eKind == VID_ATTR && zSlash && zSlash[1] == '_' && n < (int)sizeof zFwd
      && schemaAttrByIdent(pSrc->pSchema, z, n) == NULL) {
    /* :ns/_name, the reverse of :ns/name (a pull's) */
    int iCut = (int)(zSlash - z) + 1;
    memcpy(zFwd, z, (size_t)iCut);
    memcpy(zFwd + iCut, zSlash + 2, (size_t)(n - iCut - 1));
    n--;
    zFwd[n] = 0;
    z = zFwd;
    bReverse = 1;
  }
  if (eKind == VID_ATTR) {
    const Attr *pA = schemaAttrByIdent(pSrc->pSchema, z, n);
    e = pA ? pA->e : 0;
  } else {
    e = schemaEntid(pSrc->pSchema, z, n);
  }
  if (e) {
    if (pE) *pE = e;
    return SQLITE_OK;
  }
  rc = vidFormerHolder(c, pSrc->zDb, z, n, &e);
  if (rc != SQLITE_OK) return rc;
  zNow = e ? schemaIdent(pSrc->pSchema, e) : NULL;
  if (zNow && eKind == VID_ATTR && schemaAttr(pSrc->pSchema, e) == NULL) e = 0;
  if (e == 0) {
    /* never an ident (or never of an attribute): a plain value, or a typo */
    if (eKind == VID_ATTR && c->bUnknown) return vidErr(c, pKw, "unknown attribute %s", pKw->u.s.z);
    return SQLITE_OK;
  }
  if (zNow == NULL) {
    return vidErr(c, pKw, eKind == VID_ATTR
                  ? "attribute %s no longer exists (its :db/ident was retracted)"
                  : "ident %s no longer exists (its :db/ident was retracted)", z);
  }
  if (pE) *pE = e;
  if (bReverse) {
    const char *zS = strchr(zNow, '/');
    char *zRev = zS ? sqlite3_mprintf("%.*s_%s", (int)(zS - zNow) + 1, zNow, zS + 1) : NULL;
    if (zS == NULL) return SQLITE_OK;   /* an ident without a namespace has no reverse */
    if (zRev == NULL) return SQLITE_NOMEM;
    rc = vidEdit(c, pKw, zRev);
    sqlite3_free(zRev);
    return rc;
  }
  return vidEdit(c, pKw, zNow);
}

/* *pOut: the source whose schema has keyword pKw as an ident (an attribute
** for VID_ATTR) or, failing that, whose log tells a former holder of it: $
** and then the sources in order ($ when none). A rule body's place reads
** the source its caller names, so with sources it may be any of them. */
static int vidAnySource(VidCtx *c, const EdnValue *pKw, int eKind, VidSrc *pOut) {
  int i, k, rc;
  *pOut = c->main;
  for (k = 0; k < 2; k++) {
    for (i = -1; i < c->pOpts->nSource; i++) {
      VidSrc s = c->main;
      sqlite3_int64 e = 0;
      if (i >= 0) {
        const QuerySource *pQ = &c->pOpts->aSource[i];
        s.pSchema = pQ->pSchema;
        s.zDb = pQ->zDb[0] ? pQ->zDb : c->main.zDb;
      }
      if (s.pSchema == NULL) continue;
      if (k == 0) {
        e = eKind == VID_ATTR ? (schemaAttrByIdent(s.pSchema, pKw->u.s.z, pKw->u.s.n) != NULL)
                              : schemaEntid(s.pSchema, pKw->u.s.z, pKw->u.s.n);
      } else {
        rc = vidFormerHolder(c, s.zDb, pKw->u.s.z, pKw->u.s.n, &e);
        if (rc != SQLITE_OK) return rc;
      }
      if (e) {
        *pOut = s;
        return SQLITE_OK;
      }
    }
  }
  return SQLITE_OK;
}

/* vidKeyword1 on the place's source; in a rule body with sources, on the
** one vidAnySource finds. */
static int vidKeyword(VidCtx *c, const VidSrc *pSrc, const EdnValue *pKw, int eKind,
                      sqlite3_int64 *pE) {
  VidSrc s = *pSrc;
  if (c->bRule && c->pOpts && c->pOpts->nSource > 0) {
    int rc = vidAnySource(c, pKw, eKind, &s);
    if (rc != SQLITE_OK) return rc;
  }
  return vidKeyword1(c, &s, pKw, eKind, pE);
}

static int vidIsKw(const EdnValue *p) {
  return p && p->type == EDN_KEYWORD;
}

/* The source a clause naming pSrc reads (pDefault without one, or for $). */
static VidSrc vidSrcOf(const VidCtx *c, const EdnValue *pSrc, VidSrc dflt) {
  VidSrc s = dflt;
  int i;
  if (pSrc == NULL || (pSrc->u.s.n == 1 && pSrc->u.s.z[0] == '$')) return s;
  s.pSchema = NULL;   /* unknown source: the compile reports it */
  for (i = 0; c->pOpts && i < c->pOpts->nSource; i++) {
    const QuerySource *pQ = &c->pOpts->aSource[i];
    if (strlen(pQ->zName) == (size_t)pSrc->u.s.n
        && memcmp(pQ->zName, pSrc->u.s.z, (size_t)pSrc->u.s.n) == 0) {
      s.pSchema = pQ->pSchema;
      s.zDb = pQ->zDb[0] ? pQ->zDb : c->main.zDb;
    }
  }
  return s;
}

/* The attribute arguments of a function clause (get-else, get-some,
** missing?, fulltext), on the source its first argument names. */
static int vidFunction(VidCtx *c, const QClause *pC, VidSrc dflt) {
  int iSrc = pC->nArg > 0 && qpIsSrc(pC->aArg[0]) ? 1 : 0, i, iFirst, iLast;
  VidSrc s = vidSrcOf(c, iSrc ? pC->aArg[0] : NULL, dflt);
  const char *z = pC->zName ? pC->zName : "";
  if (strcmp(z, "get-else") == 0 || strcmp(z, "missing?") == 0) {
    iFirst = iLast = iSrc + 1;
  } else if (strcmp(z, "get-some") == 0) {
    iFirst = iSrc + 1;
    iLast = pC->nArg - 1;
  } else if (strcmp(z, "fulltext") == 0) {
    iFirst = iLast = iSrc;
  } else {
    return SQLITE_OK;
  }
  for (i = iFirst; i <= iLast && i < pC->nArg; i++) {
    if (vidIsKw(pC->aArg[i])) {
      int rc = vidKeyword(c, &s, pC->aArg[i], VID_ATTR, NULL);
      if (rc != SQLITE_OK) return rc;
    }
  }
  return SQLITE_OK;
}

/* A pattern's entity, attribute and (for a ref attribute) value. */
static int vidPattern(VidCtx *c, const QClause *pC, VidSrc s) {
  sqlite3_int64 eAttr = 0;
  int rc = SQLITE_OK;
  if (pC->nArg > 0 && vidIsKw(pC->aArg[0])) rc = vidKeyword(c, &s, pC->aArg[0], VID_IDENT, NULL);
  if (rc == SQLITE_OK && pC->nArg > 1 && vidIsKw(pC->aArg[1])) {
    rc = vidKeyword(c, &s, pC->aArg[1], VID_ATTR, &eAttr);
  }
  if (rc == SQLITE_OK && eAttr && pC->nArg > 2 && vidIsKw(pC->aArg[2])) {
    const Attr *pA = schemaAttr(s.pSchema, eAttr);
    if (pA && pA->type == VT_REF) rc = vidKeyword(c, &s, pC->aArg[2], VID_IDENT, NULL);
  }
  return rc;
}

static int vidClauses(VidCtx *c, QClause **aClause, int nClause, VidSrc dflt) {
  int i, rc = SQLITE_OK;
  for (i = 0; i < nClause && rc == SQLITE_OK; i++) {
    const QClause *pC = aClause[i];
    VidSrc s = vidSrcOf(c, pC->pSrc, dflt);
    if (pC->kind == QC_PATTERN) rc = vidPattern(c, pC, s);
    else if (pC->kind == QC_PRED || pC->kind == QC_FN) rc = vidFunction(c, pC, s);
    else if (pC->nSub > 0) rc = vidClauses(c, pC->aSub, pC->nSub, s);
  }
  return rc;
}

/* One attribute spec of a pull pattern: a keyword, or one with options
** ([:a :as "x"], (:a :limit 2), (limit :a 2), (default :a v)). */
static int vidPullAttr(VidCtx *c, const EdnValue *p) {
  if (p->type == EDN_KEYWORD) return vidKeyword(c, &c->main, p, VID_ATTR, NULL);
  if ((p->type == EDN_VECTOR || p->type == EDN_LIST) && p->u.c.n > 0) {
    const EdnValue *pA = p->u.c.a[0];
    if (pA->type == EDN_SYMBOL && p->u.c.n > 1) pA = p->u.c.a[1];
    if (pA->type == EDN_KEYWORD) return vidKeyword(c, &c->main, pA, VID_ATTR, NULL);
  }
  return SQLITE_OK;
}

/* The attributes of a pull pattern (a vector): its attribute specs and
** its maps' keys, whose values are patterns again. */
static int vidPull(VidCtx *c, const EdnValue *p, int depth) {
  int i, j, rc = SQLITE_OK;
  if (p->type != EDN_VECTOR || depth > 64) return SQLITE_OK;
  for (i = 0; i < p->u.c.n && rc == SQLITE_OK; i++) {
    const EdnValue *pEl = p->u.c.a[i];
    if (pEl->type != EDN_MAP) {
      rc = vidPullAttr(c, pEl);
      continue;
    }
    for (j = 0; j + 1 < pEl->u.c.n && rc == SQLITE_OK; j += 2) {
      rc = vidPullAttr(c, pEl->u.c.a[j]);
      if (rc == SQLITE_OK) rc = vidPull(c, pEl->u.c.a[j + 1], depth + 1);
    }
  }
  return rc;
}

/* The text z with c's edits applied (sqlite3_malloc'd), in *pzOut. */
static int vidApply(VidCtx *c, const char *z, char **pzOut) {
  sqlite3_str *pOut;
  int i, j, iAt = 0;
  *pzOut = NULL;
  if (c->nEdit == 0) return SQLITE_OK;
  for (i = 1; i < c->nEdit; i++) {
    VidEdit t = c->aEdit[i];
    for (j = i; j > 0 && c->aEdit[j - 1].iOff > t.iOff; j--) c->aEdit[j] = c->aEdit[j - 1];
    c->aEdit[j] = t;
  }
  pOut = sqlite3_str_new(NULL);
  for (i = 0; i < c->nEdit; i++) {
    const VidEdit *pE = &c->aEdit[i];
    if (pE->iOff < iAt) continue;   /* one place seen twice */
    sqlite3_str_append(pOut, z + iAt, pE->iOff - iAt);
    sqlite3_str_appendall(pOut, pE->zNew);
    iAt = pE->iOff + pE->nOld;
  }
  sqlite3_str_appendall(pOut, z + iAt);
  *pzOut = sqlite3_str_finish(pOut);
  return *pzOut ? SQLITE_OK : SQLITE_NOMEM;
}

static void vidClearEdits(VidCtx *c) {
  int i;
  for (i = 0; i < c->nEdit; i++) sqlite3_free(c->aEdit[i].zNew);
  c->nEdit = 0;
}

/* The query's places, then its text with the edits. */
static int vidQuery(VidCtx *c, EdnArena *pArena, const char *zQuery, char **pzOut) {
  QQuery *pQ = NULL;
  char *zIgnore = NULL;
  int i, rc = qpParse(pArena, zQuery, (int)strlen(zQuery), &pQ, &zIgnore);
  sqlite3_free(zIgnore);
  if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_OK;   /* the compile reports it */
  c->zText = zQuery;
  c->zWhere = "";
  rc = vidClauses(c, pQ->aWhere, pQ->nWhere, c->main);
  for (i = 0; i < pQ->nFind && rc == SQLITE_OK; i++) {
    const QFindElem *pF = &pQ->aFind[i];
    if (pF->kind == QFIND_PULL && pF->pPattern && pF->pPattern->type == EDN_VECTOR) {
      rc = vidPull(c, pF->pPattern, 0);
    }
  }
  if (rc == SQLITE_OK) rc = vidApply(c, zQuery, pzOut);
  vidClearEdits(c);
  return rc;
}

/* The rule bodies' places (on $), then the rules' text with the edits. */
static int vidRules(VidCtx *c, EdnArena *pArena, const char *zRules, char **pzOut) {
  EdnValue *pForm = NULL;
  EdnError err;
  QRuleSet set;
  char *zIgnore = NULL;
  int i, rc;
  memset(&set, 0, sizeof set);
  rc = ednReadOne(pArena, zRules, (int)strlen(zRules), &pForm, &err);
  if (rc == SQLITE_OK) rc = qpParseRules(pArena, pForm, &set, &zIgnore);
  sqlite3_free(zIgnore);
  if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_OK;   /* the compile reports it */
  c->zText = zRules;
  c->zWhere = "rules: ";
  c->bRule = 1;
  for (i = 0; i < set.nRule && rc == SQLITE_OK; i++) {
    rc = vidClauses(c, set.aRule[i]->aClause, set.aRule[i]->nClause, c->main);
  }
  if (rc == SQLITE_OK) rc = vidApply(c, zRules, pzOut);
  vidClearEdits(c);
  return rc;
}

int vidResolve(sqlite3 *db, const char *zMainDb, const Schema *pSchema, const QueryOpts *pOpts,
               const char *zQuery, const char *zRules, int bUnknown, char **pzQuery,
               char **pzRules, char **pzErr) {
  VidCtx c;
  EdnArena arena;
  int rc;
  *pzQuery = *pzRules = NULL;
  memset(&c, 0, sizeof c);
  c.db = db;
  c.main.pSchema = pSchema;
  c.main.zDb = zMainDb;
  c.pOpts = pOpts;
  c.bUnknown = bUnknown;
  c.pzErr = pzErr;
  ednArenaInit(&arena);
  rc = vidQuery(&c, &arena, zQuery, pzQuery);
  if (rc == SQLITE_OK && zRules) rc = vidRules(&c, &arena, zRules, pzRules);
  if (rc != SQLITE_OK) {
    sqlite3_free(*pzQuery);
    sqlite3_free(*pzRules);
    *pzQuery = *pzRules = NULL;
  }
  vidClearEdits(&c);
  sqlite3_free(c.aEdit);
  ednArenaReset(&arena);
  return rc;
}
