/*
** pull_parse.c — compiles a pull pattern (an EDN vector) into the
** PullPattern tree of pull_int.h, resolving attribute names in the Schema.
**
** The grammar is Datomic's pull grammar, plus Mentat's inline options:
**   pattern      = [ element* ]
**   element      = * | "*" | attr | attr-with-opts | map-spec
**                | attr (:as name | :limit n | :default v)*   ; Mentat inline
**   attr         = :db/id | :ns/name | :ns/_name (reverse)
**   attr-w-opts  = [attr opt v ...] | (attr opt v ...)
**                | (limit attr n) | (default attr v)         ; legacy Datomic
**   opt          = :as (keyword | string | symbol)
**                | :limit (positive integer | nil) | :default any
**   map-spec     = { (attr | attr-w-opts) (pattern | N | ...) ... }
** A map value N or `...` is a recursion spec: the entity behind the ref is
** pulled with the pattern that holds the map (Datomic's recursion). Inline
** options are taken only when the option keyword is not itself an attribute
** of the schema, so they are never ambiguous.
** Unknown attributes compile (they pull nothing, or their :default); only
** shape errors fail. Recursion into sub-patterns is bounded by
** PULL_MAX_DEPTH, so a pattern nested 50,000 deep fails cleanly (B34).
*/
#include <stdarg.h>
#include <string.h>
#include "pull_int.h"

typedef struct PullParse {
  EdnArena *pArena;
  const Schema *pSchema;
  char **pzErr;
} PullParse;

/* Sets *pzErr to "pull pattern: line L col C: <msg>" (no position when the
** node was built in code) and returns SQLITE_ERROR (SQLITE_NOMEM if the
** message itself cannot be allocated). */
static int pullParseErr(PullParse *p, const EdnValue *pAt, const char *zFmt, ...) {
  va_list ap;
  int rc;
  va_start(ap, zFmt);
  rc = ednErrorV(p->pzErr, "pull pattern: ", pAt ? pAt->line : 0, pAt ? pAt->col : 0, zFmt, ap);
  va_end(ap);
  return rc;
}

static int pullIsWildcard(const EdnValue *pV) {
  return (pV->type == EDN_SYMBOL || pV->type == EDN_STRING)
      && pV->u.s.n == 1 && pV->u.s.z[0] == '*';
}

/* True if pV is the keyword zOpt and that keyword is not an attribute of
** the schema (so reading it as an inline option is unambiguous). */
static int pullIsInlineOpt(PullParse *p, const EdnValue *pV) {
  if (pV->type != EDN_KEYWORD) return 0;
  if (!ednIsKeyword(pV, ":as") && !ednIsKeyword(pV, ":limit") && !ednIsKeyword(pV, ":default")) {
    return 0;
  }
  return schemaAttrByIdent(p->pSchema, pV->u.s.z, pV->u.s.n) == NULL;
}

/* Fills *pItem from an attribute keyword: :db/id, a forward attribute, or
** a reverse one (:ns/_name, Datomic's convention: the name part starts with
** '_' and the keyword itself is not an attribute). */
static int pullItemFromKeyword(PullParse *p, const EdnValue *pKw, PullItem *pItem) {
  const char *z = pKw->u.s.z;
  int n = pKw->u.s.n;
  const Attr *pAttr;
  int iName;

  memset(pItem, 0, sizeof(*pItem));
  pItem->nLimit = PULL_DEFAULT_LIMIT;
  pItem->zKey = z;
  pItem->nKey = n;
  pItem->zAttr = z;
  pItem->nAttr = n;
  if (ednIsKeyword(pKw, ":db/id")) {
    pItem->eKind = PULL_KIND_DBID;
    return SQLITE_OK;
  }
  pItem->eKind = PULL_KIND_ATTR;
  pAttr = schemaAttrByIdent(p->pSchema, z, n);
  if (pAttr) {
    pItem->pAttr = pAttr;
    pItem->a = pAttr->e;
    return SQLITE_OK;
  }
  /* The name part starts after the last '/', or after ':' without one. */
  for (iName = n - 1; iName > 0 && z[iName] != '/'; iName--) {}
  iName++;
  if (iName < n - 1 && z[iName] == '_') {
    char *zFwd = ednArenaAlloc(p->pArena, (size_t)n);
    if (zFwd == NULL) return SQLITE_NOMEM;
    memcpy(zFwd, z, (size_t)iName);
    memcpy(zFwd + iName, z + iName + 1, (size_t)(n - iName - 1));
    zFwd[n - 1] = 0;
    pItem->eKind = PULL_KIND_REVERSE;
    pAttr = schemaAttrByIdent(p->pSchema, zFwd, n - 1);
    if (pAttr) {
      if (pAttr->type != VT_REF) {
        return pullParseErr(p, pKw, "reverse attribute %s needs %s to be a ref attribute",
                            z, zFwd);
      }
      pItem->pAttr = pAttr;
      pItem->a = pAttr->e;
    }
  }
  return SQLITE_OK;
}

/* Applies one option pair (pOpt pVal) to pItem. */
static int pullApplyOption(PullParse *p, PullItem *pItem,
                           const EdnValue *pOpt, const EdnValue *pVal) {
  if (ednIsKeyword(pOpt, ":as")) {
    if (pVal->type != EDN_KEYWORD && pVal->type != EDN_STRING && pVal->type != EDN_SYMBOL) {
      return pullParseErr(p, pVal, ":as expects a keyword, string or symbol, got %s",
                          ednKindName(pVal));
    }
    pItem->zKey = pVal->u.s.z;
    pItem->nKey = pVal->u.s.n;
    pItem->pAs = pVal;
  } else if (ednIsKeyword(pOpt, ":limit")) {
    if (pVal->type == EDN_NIL) {
      pItem->nLimit = -1;       /* Datomic: nil means no limit */
    } else if (pVal->type == EDN_INT && pVal->u.i > 0) {
      pItem->nLimit = pVal->u.i;
    } else if (pVal->type == EDN_INT) {
      /* "got an integer" would read as if integers were refused */
      return pullParseErr(p, pVal, ":limit expects a positive integer or nil, got %lld",
                          (long long)pVal->u.i);
    } else {
      return pullParseErr(p, pVal, ":limit expects a positive integer or nil, got %s",
                          ednKindName(pVal));
    }
  } else if (ednIsKeyword(pOpt, ":default")) {
    pItem->pDefault = pVal;
  } else if (pOpt->type == EDN_KEYWORD) {
    return pullParseErr(p, pOpt, "unsupported pull option %s (expected :as, :limit or :default)",
                        pOpt->u.s.z);
  } else {
    return pullParseErr(p, pOpt, "expected a pull option keyword, got %s", ednKindName(pOpt));
  }
  return SQLITE_OK;
}

/* An attribute with options: [attr opt v ...], (attr opt v ...), or the
** legacy (limit attr n) / (default attr v). */
static int pullItemWithOptions(PullParse *p, const EdnValue *pSpec, PullItem *pItem) {
  EdnValue **a = pSpec->u.c.a;
  int n = pSpec->u.c.n;
  int rc, i;

  if (n == 0) return pullParseErr(p, pSpec, "empty attribute spec");
  if (pSpec->type == EDN_LIST && (ednIsSymbol(a[0], "limit") || ednIsSymbol(a[0], "default"))) {
    EdnValue opt;
    if (n != 3 || a[1]->type != EDN_KEYWORD) {
      return pullParseErr(p, pSpec, "expected (%s :attribute value)", a[0]->u.s.z);
    }
    rc = pullItemFromKeyword(p, a[1], pItem);
    if (rc != SQLITE_OK) return rc;
    memset(&opt, 0, sizeof(opt));
    opt.type = EDN_KEYWORD;
    opt.u.s.z = ednIsSymbol(a[0], "limit") ? ":limit" : ":default";
    opt.u.s.n = (int)strlen(opt.u.s.z);
    return pullApplyOption(p, pItem, &opt, a[2]);
  }
  if (a[0]->type != EDN_KEYWORD) {
    return pullParseErr(p, a[0], "expected an attribute keyword, got %s", ednKindName(a[0]));
  }
  rc = pullItemFromKeyword(p, a[0], pItem);
  if (rc != SQLITE_OK) return rc;
  if ((n - 1) % 2 != 0) {
    return pullParseErr(p, pSpec, "expected option/value pairs after %s", a[0]->u.s.z);
  }
  for (i = 1; i < n; i += 2) {
    rc = pullApplyOption(p, pItem, a[i], a[i + 1]);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

static int pullKeyIs(const PullItem *pItem, const char *z, int n) {
  return pItem->nKey == n && memcmp(pItem->zKey, z, (size_t)n) == 0;
}

/* The error for an :as (pAs) whose key another key of the map already is:
** JSON has no duplicate keys, and keeping one would drop a value unsaid. */
static int pullDupKeyErr(PullParse *p, const EdnValue *pAs, const char *zKey, int nKey) {
  sqlite3_str *pTxt = sqlite3_str_new(NULL);
  char *zAs;
  int rc;
  ednPrint(pTxt, pAs);
  zAs = sqlite3_str_finish(pTxt);
  if (zAs == NULL) return SQLITE_NOMEM;
  rc = pullParseErr(p, pAs, ":as %s repeats the key %.*s in one map", zAs, nKey, zKey);
  sqlite3_free(zAs);
  return rc;
}

/* Adds pItem to pPat unless an item of the same attribute and output key is
** there: a repeated key would make invalid JSON. The later one wins only
** when it brings a sub-pattern the earlier lacks ([:a {:a [:b]}] pulls
** through). An :as that gives another attribute's key, or :db/id (which
** the map shows for the entity), is an error. */
static int pullAddItem(PullParse *p, PullPattern *pPat, const PullItem *pItem) {
  int i;
  if (pItem->pAs && pItem->eKind != PULL_KIND_DBID && pullKeyIs(pItem, ":db/id", 6)) {
    return pullDupKeyErr(p, pItem->pAs, pItem->zKey, pItem->nKey);
  }
  for (i = 0; i < pPat->nItem; i++) {
    PullItem *pOld = &pPat->aItem[i];
    if (pullKeyIs(pOld, pItem->zKey, pItem->nKey)) {
      if (pOld->nAttr != pItem->nAttr || memcmp(pOld->zAttr, pItem->zAttr, (size_t)pItem->nAttr)) {
        const PullItem *pAliased = pItem->pAs ? pItem : pOld;
        return pullDupKeyErr(p, pAliased->pAs, pItem->zKey, pItem->nKey);
      }
      if (pOld->pSub == NULL && pItem->pSub != NULL) *pOld = *pItem;
      return SQLITE_OK;
    }
  }
  pPat->aItem[pPat->nItem++] = *pItem;
  return SQLITE_OK;
}

/* With a wildcard, an :as naming another attribute would repeat the key
** the wildcard gives that attribute's values (it skips the attribute
** instead, dropping them unsaid). */
static int pullCheckWildcardKeys(PullParse *p, const PullPattern *pPat) {
  int i;
  if (!pPat->bWildcard) return SQLITE_OK;
  for (i = 0; i < pPat->nItem; i++) {
    const PullItem *pItem = &pPat->aItem[i];
    const Attr *pA;
    if (pItem->pAs == NULL) continue;
    pA = schemaAttrByIdent(p->pSchema, pItem->zKey, pItem->nKey);
    if (pA && (pItem->eKind != PULL_KIND_ATTR || pA != pItem->pAttr)) {
      return pullDupKeyErr(p, pItem->pAs, pItem->zKey, pItem->nKey);
    }
  }
  return SQLITE_OK;
}

static int pullParsePattern(PullParse *p, const EdnValue *pVec, int iDepth, PullPattern **ppOut);

/* One map spec {attr sub ...}: every pair becomes an item of pPat. */
static int pullParseMapSpec(PullParse *p, const EdnValue *pMap, int iDepth, PullPattern *pPat) {
  int i, rc;
  if (pMap->u.c.n == 0) return pullParseErr(p, pMap, "empty map in pull pattern");
  for (i = 0; i < pMap->u.c.n; i += 2) {
    const EdnValue *pKey = pMap->u.c.a[i];
    const EdnValue *pVal = pMap->u.c.a[i + 1];
    PullItem item;
    if (pKey->type == EDN_KEYWORD) {
      rc = pullItemFromKeyword(p, pKey, &item);
    } else if (pKey->type == EDN_VECTOR || pKey->type == EDN_LIST) {
      rc = pullItemWithOptions(p, pKey, &item);
    } else {
      return pullParseErr(p, pKey, "expected an attribute as a map key, got %s",
                          ednKindName(pKey));
    }
    if (rc != SQLITE_OK) return rc;
    if (item.eKind == PULL_KIND_DBID) {
      return pullParseErr(p, pKey, ":db/id cannot take a sub-pattern");
    }
    if (pVal->type == EDN_VECTOR) {
      rc = pullParsePattern(p, pVal, iDepth + 1, &item.pSub);
      if (rc != SQLITE_OK) return rc;
    } else if (pVal->type == EDN_INT && pVal->u.i > 0) {
      item.pSub = pPat;
      item.nRecurse = pVal->u.i > PULL_MAX_DEPTH ? PULL_MAX_DEPTH : (int)pVal->u.i;
    } else if (ednIsSymbol(pVal, "...")) {
      item.pSub = pPat;
      item.nRecurse = PULL_RECURSE_UNBOUNDED;
    } else {
      return pullParseErr(p, pVal,
                          "expected a pattern vector, a positive recursion limit or ... "
                          "after %.*s, got %s", item.nKey, item.zKey, ednKindName(pVal));
    }
    rc = pullAddItem(p, pPat, &item);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

/* Compiles one pattern vector; iDepth counts enclosing patterns. */
static int pullParsePattern(PullParse *p, const EdnValue *pVec, int iDepth, PullPattern **ppOut) {
  PullPattern *pPat;
  int nCap = 0, i, rc;

  if (pVec == NULL) return pullParseErr(p, NULL, "missing pattern");
  if (pVec->type != EDN_VECTOR) {
    return pullParseErr(p, pVec, "expected a vector, got %s", ednKindName(pVec));
  }
  if (iDepth >= PULL_MAX_DEPTH) {
    return pullParseErr(p, pVec, "nesting too deep (limit %d)", PULL_MAX_DEPTH);
  }
  for (i = 0; i < pVec->u.c.n; i++) {
    const EdnValue *pEl = pVec->u.c.a[i];
    nCap += pEl->type == EDN_MAP ? pEl->u.c.n / 2 : 1;
  }
  pPat = ednArenaAlloc(p->pArena, sizeof(PullPattern));
  if (pPat == NULL) return SQLITE_NOMEM;
  memset(pPat, 0, sizeof(*pPat));
  pPat->aItem = ednArenaAlloc(p->pArena, sizeof(PullItem) * (size_t)(nCap ? nCap : 1));
  if (pPat->aItem == NULL) return SQLITE_NOMEM;

  for (i = 0; i < pVec->u.c.n; i++) {
    const EdnValue *pEl = pVec->u.c.a[i];
    PullItem item;
    if (pullIsWildcard(pEl)) {
      if (!pPat->bWildcard) {
        pPat->bWildcard = 1;
        pPat->iWildcard = pPat->nItem;
      }
      continue;
    }
    switch (pEl->type) {
      case EDN_KEYWORD:
        if (pullIsInlineOpt(p, pEl)) {
          return pullParseErr(p, pEl, "option %s must follow an attribute", pEl->u.s.z);
        }
        rc = pullItemFromKeyword(p, pEl, &item);
        if (rc != SQLITE_OK) return rc;
        /* Mentat's inline options: [:a/b :as :c/d :a/e]. */
        while (i + 1 < pVec->u.c.n && pullIsInlineOpt(p, pVec->u.c.a[i + 1])) {
          if (i + 2 >= pVec->u.c.n) {
            return pullParseErr(p, pVec->u.c.a[i + 1], "option %s needs a value",
                                pVec->u.c.a[i + 1]->u.s.z);
          }
          rc = pullApplyOption(p, &item, pVec->u.c.a[i + 1], pVec->u.c.a[i + 2]);
          if (rc != SQLITE_OK) return rc;
          i += 2;
        }
        rc = pullAddItem(p, pPat, &item);
        if (rc != SQLITE_OK) return rc;
        break;
      case EDN_VECTOR:
      case EDN_LIST:
        rc = pullItemWithOptions(p, pEl, &item);
        if (rc != SQLITE_OK) return rc;
        rc = pullAddItem(p, pPat, &item);
        if (rc != SQLITE_OK) return rc;
        break;
      case EDN_MAP:
        rc = pullParseMapSpec(p, pEl, iDepth, pPat);
        if (rc != SQLITE_OK) return rc;
        break;
      default:
        return pullParseErr(p, pEl, "expected an attribute, *, a map or an attribute "
                            "with options, got %s", ednKindName(pEl));
    }
  }
  rc = pullCheckWildcardKeys(p, pPat);
  if (rc != SQLITE_OK) return rc;
  *ppOut = pPat;
  return SQLITE_OK;
}

int pullCompile(EdnArena *pArena, const Schema *pSchema,
                const EdnValue *pPattern, PullPattern **ppOut, char **pzErr) {
  PullParse p;
  p.pArena = pArena;
  p.pSchema = pSchema;
  p.pzErr = pzErr;
  *ppOut = NULL;
  return pullParsePattern(&p, pPattern, 0, ppOut);
}

int pullValidate(const Schema *pSchema, const EdnValue *pPattern, char **pzErr) {
  EdnArena arena;
  PullPattern *pPat = NULL;
  int rc;
  ednArenaInit(&arena);
  rc = pullCompile(&arena, pSchema, pPattern, &pPat, pzErr);
  ednArenaReset(&arena);
  return rc;
}
