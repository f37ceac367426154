/*
** pull.c — runs a compiled pull pattern (pull_int.h) against one entity and
** writes its JSON map (SPEC §2.2, §2.3; Datomic's pull semantics).
**
** HOW IT WORKS
** pullEntityEx() compiles the pattern (pull_parse.c) into an arena, then
** pullMap() writes one entity's map: the items in the pattern's order, the
** wildcard's attributes (entid order, with ":db/id" first as Datomic shows
** it) at the place of `*`. Values come from three prepared statements on
** the caller's connection (all datoms of e:a with fulltext rowids turned into
** text; the attributes of e; the entities pointing at e through a), kept in
** a PullCache when the caller has one. A statement is always reset before
** the executor descends into a nested entity, so the same three statements
** serve every level.
** Nesting: a sub-pattern pulls the referenced entity with that pattern;
** a recursion spec {:a N} / {:a ...} pulls it with the pattern holding the
** spec, one recursion level deeper; a wildcard expands component refs with
** [*]. Recursion and component expansion stop — showing {":db/id": n} — at
** the depth limit N, when the entity is already on the current path from
** the root (so cycles terminate, peer fault B18, as XTDB does), or at
** PULL_MAX_DEPTH nested maps (the C stack and JSON depth stay bounded).
** A map that would be empty shows {":db/id": e} (an entity with no datoms,
** or none of the pattern's attributes), so every pulled entity is visible.
*/
#include <string.h>
#include "pull_int.h"

/* Statement slots of a PullCache. */
#define PULL_STMT_VALUES  0   /* ?1 e, ?2 a, ?3 limit -> v (text for fulltext), tag */
#define PULL_STMT_ATTRS   1   /* ?1 e -> distinct a, ascending */
#define PULL_STMT_REVERSE 2   /* ?1 v (the entity), ?2 a, ?3 limit -> e */
#define PULL_NSTMT        3

static const char *const azPullSql[PULL_NSTMT] = {
  /* Fulltext values are rowids into fulltext_values (format/mentat-v3.md);
  ** EAVT order gives Datomic's index order for cardinality-many values. */
  ("SELECT CASE WHEN index_fulltext IS NOT 0"
   " THEN (SELECT text FROM fulltext_values WHERE rowid = datoms.v) ELSE v END,"
   " value_type_tag FROM datoms WHERE e = ?1 AND a = ?2"
   " ORDER BY value_type_tag, v LIMIT ?3"),
  ("SELECT DISTINCT a FROM datoms WHERE e = ?1 ORDER BY a"),
  /* index_vaet is set on every ref datom; stating it lets SQLite use the
  ** partial VAET index instead of scanning the attribute. */
  ("SELECT e FROM datoms WHERE v = ?1 AND a = ?2 AND index_vaet IS NOT 0"
   " AND value_type_tag = 0 ORDER BY e LIMIT ?3"),
};

struct PullCache {
  sqlite3 *db;                       /* the connection the statements belong to */
  sqlite3_stmt *apStmt[PULL_NSTMT];  /* prepared on first use */
};

void pullCacheFree(PullCache *p) {
  int i;
  if (p == NULL) return;
  for (i = 0; i < PULL_NSTMT; i++) sqlite3_finalize(p->apStmt[i]);
  sqlite3_free(p);
}

/* State of one pullEntityEx call. aPath holds the entities from the root to
** the map being written (cycle detection). */
typedef struct PullRun {
  sqlite3 *db;
  const Schema *pSchema;
  PullCache *pCache;
  sqlite3_str *pOut;
  char **pzErr;
  PullPattern wildcard;              /* [*], for component expansion */
  int nPath;
  sqlite3_int64 aPath[PULL_MAX_DEPTH + 1];
} PullRun;

/* Records the connection's error message and returns rc. */
static int pullSqlErr(PullRun *p, int rc) {
  sqlite3_free(*p->pzErr);
  *p->pzErr = sqlite3_mprintf("pull: %s", sqlite3_errmsg(p->db));
  return rc == SQLITE_OK ? SQLITE_ERROR : rc;
}

/* The statement in slot i, prepared on first use. */
static int pullStmt(PullRun *p, int i, sqlite3_stmt **ppStmt) {
  PullCache *pC = p->pCache;
  if (pC->apStmt[i] == NULL) {
    int rc = sqlite3_prepare_v3(p->db, azPullSql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                &pC->apStmt[i], NULL);
    if (rc != SQLITE_OK) return pullSqlErr(p, rc);
  }
  *ppStmt = pC->apStmt[i];
  return SQLITE_OK;
}

static int pullOnPath(const PullRun *p, sqlite3_int64 e) {
  int i;
  for (i = 0; i < p->nPath; i++) {
    if (p->aPath[i] == e) return 1;
  }
  return 0;
}

/* Writes the separator and the JSON key of the next map entry. */
static void pullKey(PullRun *p, int *pnKey, const char *zKey, int nKey) {
  if ((*pnKey)++ > 0) sqlite3_str_appendchar(p->pOut, 1, ',');
  ednJsonString(p->pOut, zKey, nKey);
  sqlite3_str_appendchar(p->pOut, 1, ':');
}

static void pullIdMap(PullRun *p, sqlite3_int64 e) {
  sqlite3_str_appendf(p->pOut, "{\":db/id\":%lld}", e);
}

/* A :default value as pull JSON: instants as epoch µs like stored ones. */
static void pullDefaultJson(PullRun *p, const EdnValue *pV) {
  if (pV->type == EDN_INST) {
    sqlite3_str_appendf(p->pOut, "%lld", pV->u.i);
  } else {
    ednPrintJson(p->pOut, pV);
  }
}

/* A growable array of entids, from sqlite3_malloc64. */
typedef struct PullIds {
  sqlite3_int64 *a;
  int n, nAlloc;
} PullIds;

static int pullIdsAdd(PullIds *p, sqlite3_int64 e) {
  if (p->n == p->nAlloc) {
    int nNew = p->nAlloc ? p->nAlloc * 2 : 16;
    sqlite3_int64 *aNew = sqlite3_realloc64(p->a, sizeof(sqlite3_int64) * (sqlite3_uint64)nNew);
    if (aNew == NULL) return SQLITE_NOMEM;
    p->a = aNew;
    p->nAlloc = nNew;
  }
  p->a[p->n++] = e;
  return SQLITE_OK;
}

/* Runs a statement bound to (?1, ?2, ?3) and collects its first column as
** entids, then resets it so nested pulls may use it again. */
static int pullCollect(PullRun *p, int iStmt, sqlite3_int64 x1, sqlite3_int64 x2,
                       sqlite3_int64 nLimit, int bTagged, PullIds *pIds) {
  sqlite3_stmt *pStmt = NULL;
  int rc = pullStmt(p, iStmt, &pStmt);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_int64(pStmt, 1, x1);
  if (iStmt != PULL_STMT_ATTRS) {
    sqlite3_bind_int64(pStmt, 2, x2);
    sqlite3_bind_int64(pStmt, 3, nLimit);
  }
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    /* Forward values: only refs (tag 0) are entities; others are skipped. */
    if (bTagged && sqlite3_column_int(pStmt, 1) != TAG_REF) continue;
    rc = pullIdsAdd(pIds, sqlite3_column_int64(pStmt, 0));
    if (rc != SQLITE_OK) break;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) rc = pullSqlErr(p, rc);
  sqlite3_reset(pStmt);
  return rc;
}

static int pullMap(PullRun *p, const PullPattern *pPat, int iLevel, sqlite3_int64 e,
                   unsigned flags);

/* Writes entity x reached through pItem (an item of pPat at recursion level
** iLevel): a nested map, or {":db/id": x} where nesting stops. */
static int pullChild(PullRun *p, const PullPattern *pPat, const PullItem *pItem,
                     int iLevel, sqlite3_int64 x) {
  if (p->nPath >= PULL_MAX_DEPTH) {
    pullIdMap(p, x);
    return SQLITE_OK;
  }
  if (pItem->nRecurse != 0) {
    if ((pItem->nRecurse > 0 && iLevel >= pItem->nRecurse) || pullOnPath(p, x)) {
      pullIdMap(p, x);
      return SQLITE_OK;
    }
    return pullMap(p, pPat, iLevel + 1, x, 0);
  }
  if (pItem->bComponent && pullOnPath(p, x)) {
    pullIdMap(p, x);
    return SQLITE_OK;
  }
  return pullMap(p, pItem->pSub, 0, x, 0);
}

/* Writes a list of entities (ref values or reverse refs) for pItem. */
static int pullWriteRefs(PullRun *p, const PullPattern *pPat, const PullItem *pItem,
                         int iLevel, const PullIds *pIds, int bArray) {
  int i, rc = SQLITE_OK;
  if (bArray) sqlite3_str_appendchar(p->pOut, 1, '[');
  for (i = 0; i < pIds->n && rc == SQLITE_OK; i++) {
    if (i > 0) sqlite3_str_appendchar(p->pOut, 1, ',');
    if (pItem->pSub) {
      rc = pullChild(p, pPat, pItem, iLevel, pIds->a[i]);
    } else {
      pullIdMap(p, pIds->a[i]);
    }
  }
  if (bArray) sqlite3_str_appendchar(p->pOut, 1, ']');
  return rc;
}

/* Writes leaf values of e's attribute straight from the statement (no
** nesting happens while it steps). *pbAny tells whether anything was written. */
static int pullWriteValues(PullRun *p, const PullItem *pItem, sqlite3_int64 e,
                           int *pnKey, int *pbAny) {
  const Attr *pAttr = pItem->pAttr;
  sqlite3_stmt *pStmt = NULL;
  int n = 0;
  int rc = pullStmt(p, PULL_STMT_VALUES, &pStmt);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_int64(pStmt, 1, e);
  sqlite3_bind_int64(pStmt, 2, pItem->a);
  sqlite3_bind_int64(pStmt, 3, pAttr->bMany ? pItem->nLimit : 1);
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    if (n == 0) {
      pullKey(p, pnKey, pItem->zKey, pItem->nKey);
      if (pAttr->bMany) sqlite3_str_appendchar(p->pOut, 1, '[');
    } else {
      sqlite3_str_appendchar(p->pOut, 1, ',');
    }
    valueJsonFromStored(p->pOut, sqlite3_column_value(pStmt, 0),
                        sqlite3_column_int(pStmt, 1), 1);
    n++;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc != SQLITE_OK) rc = pullSqlErr(p, rc);
  sqlite3_reset(pStmt);
  if (n > 0 && pAttr->bMany) sqlite3_str_appendchar(p->pOut, 1, ']');
  *pbAny = n > 0;
  return rc;
}

/* Writes one item of pPat for entity e (nothing when it has no value and
** no :default). */
static int pullItem(PullRun *p, const PullPattern *pPat, const PullItem *pItem,
                    int iLevel, sqlite3_int64 e, int *pnKey) {
  PullIds ids = {NULL, 0, 0};
  int bAny = 0;
  int rc = SQLITE_OK;

  switch (pItem->eKind) {
    case PULL_KIND_DBID:
      pullKey(p, pnKey, pItem->zKey, pItem->nKey);
      sqlite3_str_appendf(p->pOut, "%lld", e);
      return SQLITE_OK;
    case PULL_KIND_ATTR:
      if (pItem->pAttr == NULL) break;          /* unknown: no values */
      if (pItem->pAttr->type == VT_REF && pItem->pSub) {
        rc = pullCollect(p, PULL_STMT_VALUES, e, pItem->a,
                         pItem->pAttr->bMany ? pItem->nLimit : 1, 1, &ids);
        if (rc == SQLITE_OK && ids.n > 0) {
          bAny = 1;
          pullKey(p, pnKey, pItem->zKey, pItem->nKey);
          rc = pullWriteRefs(p, pPat, pItem, iLevel, &ids, pItem->pAttr->bMany);
        }
      } else {
        rc = pullWriteValues(p, pItem, e, pnKey, &bAny);
      }
      break;
    case PULL_KIND_REVERSE:
      if (pItem->pAttr == NULL) break;
      rc = pullCollect(p, PULL_STMT_REVERSE, e, pItem->a, pItem->nLimit, 0, &ids);
      if (rc == SQLITE_OK && ids.n > 0) {
        bAny = 1;
        pullKey(p, pnKey, pItem->zKey, pItem->nKey);
        rc = pullWriteRefs(p, pPat, pItem, iLevel, &ids, 1);   /* always an array */
      }
      break;
  }
  if (rc == SQLITE_OK && !bAny && pItem->pDefault) {
    pullKey(p, pnKey, pItem->zKey, pItem->nKey);
    pullDefaultJson(p, pItem->pDefault);
  }
  sqlite3_free(ids.a);
  return rc;
}

/* True if an explicit item of pPat writes the key zKey (the wildcard then
** leaves that attribute to it). */
static int pullHasKey(const PullPattern *pPat, const char *zKey) {
  int i;
  int n = (int)strlen(zKey);
  for (i = 0; i < pPat->nItem; i++) {
    if (pPat->aItem[i].nKey == n && memcmp(pPat->aItem[i].zKey, zKey, (size_t)n) == 0) return 1;
  }
  return 0;
}

/* The wildcard: ":db/id", then every attribute e has, in entid order.
** Component refs expand with [*] (Datomic); other refs show {":db/id": n}. */
static int pullWildcard(PullRun *p, const PullPattern *pPat, int iLevel, sqlite3_int64 e,
                        int *pnKey) {
  PullIds attrs = {NULL, 0, 0};
  int i, rc;

  if (!pullHasKey(pPat, ":db/id")) {
    pullKey(p, pnKey, ":db/id", 6);
    sqlite3_str_appendf(p->pOut, "%lld", e);
  }
  rc = pullCollect(p, PULL_STMT_ATTRS, e, 0, 0, 0, &attrs);
  for (i = 0; i < attrs.n && rc == SQLITE_OK; i++) {
    const Attr *pAttr = schemaAttr(p->pSchema, attrs.a[i]);
    PullItem item;
    if (pAttr == NULL || pAttr->zIdent == NULL || pullHasKey(pPat, pAttr->zIdent)) continue;
    memset(&item, 0, sizeof(item));
    item.eKind = PULL_KIND_ATTR;
    item.a = pAttr->e;
    item.pAttr = pAttr;
    item.zKey = pAttr->zIdent;
    item.nKey = (int)strlen(pAttr->zIdent);
    item.nLimit = PULL_DEFAULT_LIMIT;
    if (pAttr->type == VT_REF && pAttr->bComponent) {
      item.pSub = &p->wildcard;
      item.bComponent = 1;
    }
    rc = pullItem(p, pPat, &item, iLevel, e, pnKey);
  }
  sqlite3_free(attrs.a);
  return rc;
}

/* Writes the map of entity e under pPat; iLevel counts recursion steps
** taken with pPat on the current path. */
static int pullMap(PullRun *p, const PullPattern *pPat, int iLevel, sqlite3_int64 e,
                   unsigned flags) {
  int nKey = 0;
  int bDbid = 0;
  int i, rc = SQLITE_OK;

  p->aPath[p->nPath++] = e;
  sqlite3_str_appendchar(p->pOut, 1, '{');
  for (i = 0; i <= pPat->nItem && rc == SQLITE_OK; i++) {
    if (pPat->bWildcard && pPat->iWildcard == i) {
      rc = pullWildcard(p, pPat, iLevel, e, &nKey);
      bDbid = 1;
    }
    if (i < pPat->nItem && rc == SQLITE_OK) {
      const PullItem *pItem = &pPat->aItem[i];
      if (pItem->eKind == PULL_KIND_DBID && pItem->nKey == 6
          && memcmp(pItem->zKey, ":db/id", 6) == 0) {
        bDbid = 1;
      }
      rc = pullItem(p, pPat, pItem, iLevel, e, &nKey);
    }
  }
  if (rc == SQLITE_OK && (nKey == 0 || ((flags & PULL_WITH_DBID) && !bDbid))) {
    pullKey(p, &nKey, ":db/id", 6);
    sqlite3_str_appendf(p->pOut, "%lld", e);
  }
  sqlite3_str_appendchar(p->pOut, 1, '}');
  p->nPath--;
  return rc;
}

int pullEntityEx(sqlite3 *db, const Schema *pSchema, const EdnValue *pPattern,
                 sqlite3_int64 e, unsigned flags, PullCache **ppCache,
                 sqlite3_str *pOut, char **pzErr) {
  EdnArena arena;
  PullCache local;
  PullPattern *pPat = NULL;
  PullRun *pRun = NULL;
  int rc;

  memset(&local, 0, sizeof(local));
  local.db = db;
  ednArenaInit(&arena);
  rc = pullCompile(&arena, pSchema, pPattern, &pPat, pzErr);
  if (rc != SQLITE_OK) goto cleanup;

  /* The run holds the path (about 2 KiB): on the heap, not the host's stack. */
  pRun = sqlite3_malloc64(sizeof(PullRun));
  if (pRun == NULL) {
    rc = SQLITE_NOMEM;
    goto cleanup;
  }
  memset(pRun, 0, sizeof(*pRun));
  pRun->db = db;
  pRun->pSchema = pSchema;
  pRun->pOut = pOut;
  pRun->pzErr = pzErr;
  pRun->wildcard.bWildcard = 1;
  if (ppCache == NULL) {
    pRun->pCache = &local;
  } else {
    if (*ppCache == NULL) {
      *ppCache = sqlite3_malloc64(sizeof(PullCache));
      if (*ppCache == NULL) {
        rc = SQLITE_NOMEM;
        goto cleanup;
      }
      memset(*ppCache, 0, sizeof(PullCache));
      (*ppCache)->db = db;
    } else if ((*ppCache)->db != db) {
      sqlite3_free(*pzErr);
      *pzErr = sqlite3_mprintf("pull: statement cache used with another connection");
      rc = SQLITE_MISUSE;
      goto cleanup;
    }
    pRun->pCache = *ppCache;
  }

  rc = pullMap(pRun, pPat, 0, e, flags);
  if (rc == SQLITE_OK && sqlite3_str_errcode(pOut) != SQLITE_OK) {
    rc = sqlite3_str_errcode(pOut) == SQLITE_TOOBIG ? SQLITE_TOOBIG : SQLITE_NOMEM;
  }

cleanup:
  {
    int i;
    for (i = 0; i < PULL_NSTMT; i++) sqlite3_finalize(local.apStmt[i]);
  }
  sqlite3_free(pRun);
  ednArenaReset(&arena);
  return rc;
}

int pullEntity(sqlite3 *db, const Schema *pSchema, const EdnValue *pPattern,
               sqlite3_int64 e, sqlite3_str *pOut, char **pzErr) {
  return pullEntityEx(db, pSchema, pPattern, e, 0, NULL, pOut, pzErr);
}
