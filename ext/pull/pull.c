/*
** pull.c — runs a compiled pull pattern (pull_int.h) against one entity and
** writes its JSON map (SPEC §2.2, §2.3; Datomic's pull semantics).
**
** HOW IT WORKS
** pullEntityAt() compiles the pattern (pull_parse.c) into an arena
** (pullEntityText, edn_pull's entry, keeps the last compiled text pattern in
** the PullCache instead, so a repeated call reads and resolves nothing), then
** pullMap() writes one entity's map: the items in the pattern's order, the
** wildcard's attributes (entid order, with ":db/id" first as Datomic shows
** it) at the place of `*`. Values come from prepared statements on the
** caller's connection (all datoms of e:a with fulltext rowids turned into
** text; the attributes of e; the entities pointing at e through a; for the
** wildcard, all of e's datoms in EAVT order in one read), kept in a
** PullCache when the caller has one. A statement is always reset before
** the executor descends into a nested entity, so the same statements serve
** every level — except the wildcard's one read, which stays open while its
** component maps are written: those walk the attributes instead.
** Time (pullEntityAt, SPEC §6): each of the three has an as-of form that
** reads the log (timelined_transactions) and a since form that reads the
** datoms newer than T, with the semantics query_compile_sql.c gives as-of and
** since patterns; the mode is fixed for a whole pull, so every read —
** forward values, the wildcard's attributes, reverse refs, and through them
** components, recursion and fulltext text — sees the same database.
** Nesting: a sub-pattern pulls the referenced entity with that pattern;
** a recursion spec {:a N} / {:a ...} pulls it with the pattern holding the
** spec; a wildcard, and a component attribute named without a sub-pattern
** (Datomic's "component defaults"), expand component refs with [*].
** Recursion and component expansion show {":db/id": n} for an entity
** already on the current path from the root (so cycles terminate, peer
** fault B18, as XTDB does) and at PULL_MAX_DEPTH nested maps (the C stack
** and JSON depth stay bounded). Each spec {:a N} has its own budget: once
** the path holds N steps through it, the entities it reaches are left out
** (DataScript's test-recursion), the key too when none is left.
** A nested map that would be empty shows {":db/id": e} (an entity with no
** datoms, or none of the pattern's attributes), so every pulled entity is
** visible; the root one is nil under PULL_NIL_EMPTY (:find), as Datomic's
** pull gives nil for an empty result, and a root id <= 0 under PULL_NIL_ID
** (:find and edn_pull, whose map for an id > 0 always carries :db/id).
*/
#include <string.h>
#include "pull_int.h"

#define PULL_STR2(X) #X
#define PULL_STR(X) PULL_STR2(X)

/* Statement kinds; a PullCache holds one of each per time mode, so a
** connection that pulls now, as of T and since T keeps three sets. */
#define PULL_STMT_VALUES  0   /* e, a, limit -> v (text for fulltext), tag */
#define PULL_STMT_ATTRS   1   /* e -> distinct a, ascending */
#define PULL_STMT_REVERSE 2   /* v (the entity), a, limit -> e */
#define PULL_STMT_ENTITY  3   /* e -> every (a, v, tag) of e in EAVT order, for
                              ** the wildcard in one read (NULL as of T) */
#define PULL_STMT_TEXT    4   /* fulltext rowid -> text */
#define PULL_NKIND        5

/* Time modes (PullTime): the current datoms, the log as of a tx, or the
** current datoms asserted after a tx. */
#define PULL_TIME_NOW   0
#define PULL_TIME_ASOF  1
#define PULL_TIME_SINCE 2
#define PULL_NSTMT      (3 * PULL_NKIND)

#define PULL_TEXT_SQL "SELECT text FROM fulltext_values WHERE rowid = ?1"

/* Every statement numbers its parameters alike (unused ones are gaps):
** ?1 e (or v for reverse), ?2 a, ?3 limit, ?4 as-of tx, ?5 since tx,
** ?6 1 when the attribute is fulltext (the log has no index_fulltext). */
#define PULL_AS_OF_LIVE(A) \
  A ".timeline IS 0 AND " A ".added = 1 AND " A ".tx <= ?4 AND " A ".tx > ?5" \
  " AND NOT EXISTS (SELECT 1 FROM timelined_transactions r WHERE r.a = " A ".a" \
  " AND r.e = " A ".e AND r.value_type_tag = " A ".value_type_tag AND r.v = " A ".v" \
  " AND r.tx > " A ".tx AND r.tx <= ?4 AND r.timeline IS 0)"

static const char *const azPullSql[PULL_NSTMT] = {
  /* ---- now. Fulltext values are rowids into fulltext_values
  ** (format/mentat-v3.md); EAVT order gives Datomic's index order for
  ** cardinality-many values. */
  ("SELECT CASE WHEN index_fulltext IS NOT 0"
   " THEN (SELECT text FROM fulltext_values WHERE rowid = datoms.v) ELSE v END,"
   " value_type_tag FROM datoms WHERE e = ?1 AND a = (?2 + 0)"
   " ORDER BY value_type_tag, v LIMIT ?3"),
  ("SELECT DISTINCT a FROM datoms WHERE e = ?1 ORDER BY a"),
  /* index_vaet is set on every ref datom; stating it lets SQLite use the
  ** partial VAET index instead of scanning the attribute. */
  ("SELECT e FROM datoms WHERE v = ?1 AND a = (?2 + 0) AND index_vaet IS NOT 0"
   " AND value_type_tag = 0 ORDER BY e LIMIT ?3"),
  /* The wildcard's one read: covered by idx_datoms_eavt (e, a, tag, v), in
  ** the order the map is written; fulltext rowids are turned into text
  ** from the schema's flag (it cannot change, tx_schema.c), so no table
  ** row is read. */
  ("SELECT a, v, value_type_tag FROM datoms WHERE e = ?1 ORDER BY a, value_type_tag, v"),
  PULL_TEXT_SQL,

  /* ---- as of ?4 (and after ?5, 0 when not asked): SPEC §6 and the same
  ** rule query_compile_sql.c uses for as-of patterns — an assertion in the
  ** log with tx <= T that no later log row of the same datom (its
  ** retraction, or a re-assertion that then stands for it) precedes T.
  ** Forward reads go through idx_transactions_aevt (a, e, ...), which also
  ** serves the probe; `(?2 + 0)` keeps SQLite from weighing the per-
  ** attribute partial log indexes, which would make it re-prepare the
  ** statement at every new binding of ?2. Reverse reads go through a tuned
  ** store's idx_mentat_log_avet_<a> (a, v, e, ...) (store_tune.c): there
  ** the plain `l.a = ?2` is wanted, SQLite re-prepares for each new ?2 and
  ** picks that attribute's index (the alternative, all of the attribute's
  ** history through the (a, e) index, costs far more than a prepare).
  ** :db/noHistory attributes keep only their current values' log rows
  ** (tx_write.c), so as of T they show those asserted by T, as as-of
  ** queries do. */
  ("SELECT CASE WHEN ?6 THEN (SELECT text FROM fulltext_values WHERE rowid = l.v)"
   " ELSE l.v END, l.value_type_tag FROM timelined_transactions l"
   " WHERE l.a = (?2 + 0) AND l.e = ?1 AND " PULL_AS_OF_LIVE("l")
   " ORDER BY l.value_type_tag, l.v LIMIT ?3"),
  /* The log has no entity-first index: walk its attributes through the
  ** (a, ...) index one seek at a time (a hand-made skip-scan: a few hundred
  ** seeks at most) and keep those e has a live assertion of. INDEXED BY:
  ** without statistics SQLite takes the format's timeline index for
  ** `timeline IS 0`, which reads the whole log per step. */
  ("WITH RECURSIVE la(a) AS ("
   " SELECT (SELECT min(a) FROM timelined_transactions INDEXED BY idx_transactions_aevt"
   " WHERE timeline IS 0)"
   " UNION ALL SELECT (SELECT min(t.a) FROM timelined_transactions t"
   " INDEXED BY idx_transactions_aevt WHERE t.a > la.a AND t.timeline IS 0)"
   " FROM la WHERE la.a IS NOT NULL)"
   " SELECT la.a FROM la WHERE la.a IS NOT NULL AND EXISTS (SELECT 1 FROM"
   " timelined_transactions l WHERE l.a = la.a AND l.e = ?1 AND " PULL_AS_OF_LIVE("l") ")"
   " ORDER BY la.a"),
  ("SELECT l.e FROM timelined_transactions l WHERE l.a = ?2 AND l.v = ?1"
   " AND l.value_type_tag = 0 AND " PULL_AS_OF_LIVE("l")
   " ORDER BY l.e LIMIT ?3"),
  NULL,   /* as of T the wildcard walks the attributes (PULL_STMT_ATTRS) */
  PULL_TEXT_SQL,

  /* ---- since ?5: the current datoms asserted after T, as a Datomic
  ** since-db holds them and query_compile_sql.c reads them for `since`. */
  ("SELECT CASE WHEN index_fulltext IS NOT 0"
   " THEN (SELECT text FROM fulltext_values WHERE rowid = datoms.v) ELSE v END,"
   " value_type_tag FROM datoms WHERE e = ?1 AND a = (?2 + 0) AND tx > ?5"
   " ORDER BY value_type_tag, v LIMIT ?3"),
  ("SELECT DISTINCT a FROM datoms WHERE e = ?1 AND tx > ?5 ORDER BY a"),
  ("SELECT e FROM datoms WHERE v = ?1 AND a = (?2 + 0) AND index_vaet IS NOT 0"
   " AND value_type_tag = 0 AND tx > ?5 ORDER BY e LIMIT ?3"),
  ("SELECT a, v, value_type_tag FROM datoms WHERE e = ?1 AND tx > ?5"
   " ORDER BY a, value_type_tag, v"),
  PULL_TEXT_SQL,
};

struct PullCache {
  sqlite3 *db;                       /* the connection the statements belong to */
  sqlite3_stmt *apStmt[PULL_NSTMT];  /* prepared on first use */
  /* The last pattern pullEntityText compiled: its text, the snapshot it
  ** was resolved against, and its EDN tree and compiled form in textArena. */
  EdnArena textArena;
  char *zText;
  int nText;
  const Schema *pTextSchema;
  sqlite3_int64 iTextGen;
  PullPattern *pTextPat;
};

/* Forgets the cached text pattern. */
static void pullCacheTextReset(PullCache *p) {
  ednArenaReset(&p->textArena);
  sqlite3_free(p->zText);
  p->zText = NULL;
  p->nText = 0;
  p->pTextSchema = NULL;
  p->pTextPat = NULL;
}

void pullCacheFree(PullCache *p) {
  int i;
  if (p == NULL) return;
  for (i = 0; i < PULL_NSTMT; i++) sqlite3_finalize(p->apStmt[i]);
  pullCacheTextReset(p);
  sqlite3_free(p);
}

/* State of one pullEntityAt call. aPath holds the entities from the root to
** the map being written (cycle detection); aVia[i] the item aPath[i] was
** reached through (NULL for the root), so each recursion spec counts its
** own steps on the path (its depth budget). */
typedef struct PullRun {
  sqlite3 *db;
  const Schema *pSchema;
  PullCache *pCache;
  int eTime;                         /* PULL_TIME_* */
  sqlite3_int64 iAsOf, iSince;       /* ?4 and ?5 of every statement */
  sqlite3_str *pOut;
  char **pzErr;
  PullPattern wildcard;              /* [*], for component expansion */
  const PullPoll *pPoll;             /* the host's interrupt, or NULL (pullPolled) */
  int bIdDue;                        /* the wildcard's ":db/id" waits for a key */
  sqlite3_int64 eIdDue;              /* (pullKey), so an empty root can be nil */
  int nPollItems;                    /* values and maps written since the last question */
  int iPollAt;                       /* pOut's length then */
  int nPath;
  sqlite3_int64 aPath[PULL_MAX_DEPTH + 1];
  const PullItem *aVia[PULL_MAX_DEPTH + 1];
} PullRun;

/* pullPolled's gates: a question costs a clock read (intrWatchPoll gates
** the probe itself to once a millisecond), so one per this many values or
** bytes written does not show beside them. */
#define PULL_POLL_ITEMS 16
#define PULL_POLL_BYTES (256 * 1024)

/* Whether the host asked the pull to stop (PullPoll), asked after every
** PULL_POLL_ITEMS values and maps or PULL_POLL_BYTES of the map. */
static int pullPolled(PullRun *p) {
  int n;
  if (p->pPoll == NULL) return 0;
  n = sqlite3_str_length(p->pOut);
  if (++p->nPollItems < PULL_POLL_ITEMS && n - p->iPollAt < PULL_POLL_BYTES) return 0;
  p->nPollItems = 0;
  p->iPollAt = n;
  return p->pPoll->xPoll(p->pPoll->pArg);
}

/* Records the connection's error message and returns rc. */
static int pullSqlErr(PullRun *p, int rc) {
  sqlite3_free(*p->pzErr);
  *p->pzErr = sqlite3_mprintf("pull: %s", sqlite3_errmsg(p->db));
  return rc == SQLITE_OK ? SQLITE_ERROR : rc;
}

/* The statement of kind iKind (PULL_STMT_*) for the run's time mode,
** prepared on first use, bound to (x1, a, nLimit) and the run's times. */
static int pullStmt(PullRun *p, int iKind, sqlite3_int64 x1, sqlite3_int64 a,
                    sqlite3_int64 nLimit, int bFulltext, sqlite3_stmt **ppStmt) {
  PullCache *pC = p->pCache;
  int i = p->eTime * PULL_NKIND + iKind;
  int n;
  if (pC->apStmt[i] == NULL) {
    int rc = sqlite3_prepare_v3(p->db, azPullSql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                &pC->apStmt[i], NULL);
    if (rc != SQLITE_OK) return pullSqlErr(p, rc);
  }
  *ppStmt = pC->apStmt[i];
  /* Only the parameters the statement has: others would be SQLITE_RANGE. */
  n = sqlite3_bind_parameter_count(*ppStmt);
  sqlite3_bind_int64(*ppStmt, 1, x1);
  if (n >= 3) {
    sqlite3_bind_int64(*ppStmt, 2, a);
    sqlite3_bind_int64(*ppStmt, 3, nLimit);
  }
  if (n >= 4) sqlite3_bind_int64(*ppStmt, 4, p->iAsOf);
  if (n >= 5) sqlite3_bind_int64(*ppStmt, 5, p->iSince);
  if (n >= 6) sqlite3_bind_int(*ppStmt, 6, bFulltext);
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
static void pullKeyOne(PullRun *p, int *pnKey, const char *zKey, int nKey) {
  sqlite3_str_appendchar(p->pOut, 1, (*pnKey)++ > 0 ? ',' : '{');
  ednJsonString(p->pOut, zKey, nKey);
  sqlite3_str_appendchar(p->pOut, 1, ':');
}

/* The map's first key opens it, and the wildcard's ":db/id" is written
** before the first key after it, so a root map left empty, the entity
** having no datoms, can be nil instead (PULL_NIL_EMPTY: pullMap). */
static void pullKey(PullRun *p, int *pnKey, const char *zKey, int nKey) {
  if (p->bIdDue) {
    p->bIdDue = 0;
    pullKeyOne(p, pnKey, ":db/id", 6);
    sqlite3_str_appendf(p->pOut, "%lld", p->eIdDue);
  }
  pullKeyOne(p, pnKey, zKey, nKey);
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
  int rc = pullStmt(p, iStmt, x1, x2, nLimit, 0, &pStmt);
  if (rc != SQLITE_OK) return rc;
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

static int pullMap(PullRun *p, const PullPattern *pPat, const PullItem *pVia, sqlite3_int64 e,
                   unsigned flags);

/* True when the recursion spec pItem ({:a N}) has taken its N steps on the
** current path: the entities past it are left out, as DataScript's pull
** does (test-recursion), each spec of a pattern counting its own. */
static int pullBudgetSpent(const PullRun *p, const PullItem *pItem) {
  int i, n = 0;
  if (pItem->nRecurse <= 0) return 0;
  for (i = 1; i < p->nPath; i++) {
    if (p->aVia[i] == pItem) n++;
  }
  return n >= pItem->nRecurse;
}

/* Drops from pIds the entities a spent recursion spec leaves out: all of
** them, those already on the path too (issue 14: past an explicit depth
** the entities are left out, not shown as {":db/id": n}; the depth limit
** wins over the cycle check, which only ends unbounded recursion). */
static void pullPrune(const PullRun *p, const PullItem *pItem, PullIds *pIds) {
  if (pullBudgetSpent(p, pItem)) pIds->n = 0;
}

/* Writes entity x reached through pItem (whose pSub is set): a nested map,
** or {":db/id": x} where nesting stops — an entity already on the path
** (recursion and component expansion: cycles end, peer fault B18), or
** PULL_MAX_DEPTH nested maps. A recursion spec's pSub is the pattern that
** holds it. */
static int pullChild(PullRun *p, const PullItem *pItem, sqlite3_int64 x) {
  if (p->nPath >= PULL_MAX_DEPTH
      || ((pItem->nRecurse != 0 || pItem->bComponent) && pullOnPath(p, x))) {
    pullIdMap(p, x);
    return SQLITE_OK;
  }
  return pullMap(p, pItem->pSub, pItem, x, 0);
}

/* Writes a list of entities (ref values or reverse refs) for pItem. */
static int pullWriteRefs(PullRun *p, const PullItem *pItem, const PullIds *pIds, int bArray) {
  int i, rc = SQLITE_OK;
  if (bArray) sqlite3_str_appendchar(p->pOut, 1, '[');
  for (i = 0; i < pIds->n && rc == SQLITE_OK; i++) {
    if (i > 0) sqlite3_str_appendchar(p->pOut, 1, ',');
    if (pItem->pSub) {
      rc = pullChild(p, pItem, pIds->a[i]);
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
  int rc = pullStmt(p, PULL_STMT_VALUES, e, pItem->a, pAttr->bMany ? pItem->nLimit : 1,
                    pAttr->bFulltext && pAttr->type == VT_STRING, &pStmt);
  if (rc != SQLITE_OK) return rc;
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    if (n == 0) {
      pullKey(p, pnKey, pItem->zKey, pItem->nKey);
      if (pAttr->bMany) sqlite3_str_appendchar(p->pOut, 1, '[');
    } else {
      sqlite3_str_appendchar(p->pOut, 1, ',');
    }
    rc = valueJsonFromStored(p->pOut, sqlite3_column_value(pStmt, 0),
                             pAttr->type == VT_TUPLE ? TAG_TUPLE : sqlite3_column_int(pStmt, 1), 1);
    if (rc != SQLITE_OK) break;
    n++;
    if (pullPolled(p)) {
      rc = SQLITE_INTERRUPT;
      break;
    }
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc != SQLITE_OK && rc != SQLITE_INTERRUPT) rc = pullSqlErr(p, rc);
  sqlite3_reset(pStmt);
  if (n > 0 && pAttr->bMany) sqlite3_str_appendchar(p->pOut, 1, ']');
  *pbAny = n > 0;
  return rc;
}

/* Writes one item for entity e (nothing when it has no value and no
** :default; nothing either when every value is past a spent recursion
** budget: the :default stands for no values, as in DataScript's pull). */
static int pullItem(PullRun *p, const PullItem *pItem, sqlite3_int64 e, int *pnKey) {
  PullIds ids = {NULL, 0, 0};
  PullItem comp;
  int bAny = 0;
  int rc = SQLITE_OK;

  switch (pItem->eKind) {
    case PULL_KIND_DBID:
      pullKey(p, pnKey, pItem->zKey, pItem->nKey);
      sqlite3_str_appendf(p->pOut, "%lld", e);
      return SQLITE_OK;
    case PULL_KIND_ATTR:
      if (pItem->pAttr == NULL) break;          /* unknown: no values */
      if (pItem->pAttr->type == VT_REF && pItem->pAttr->bComponent && pItem->pSub == NULL) {
        /* Datomic's "component defaults": a component attribute named
        ** without a sub-pattern expands its entities as * does. */
        comp = *pItem;
        comp.pSub = &p->wildcard;
        comp.bComponent = 1;
        pItem = &comp;
      }
      if (pItem->pAttr->type == VT_REF && pItem->pSub) {
        rc = pullCollect(p, PULL_STMT_VALUES, e, pItem->a,
                         pItem->pAttr->bMany ? pItem->nLimit : 1, 1, &ids);
        bAny = ids.n > 0;
        pullPrune(p, pItem, &ids);
        if (rc == SQLITE_OK && ids.n > 0) {
          pullKey(p, pnKey, pItem->zKey, pItem->nKey);
          rc = pullWriteRefs(p, pItem, &ids, pItem->pAttr->bMany);
        }
      } else {
        rc = pullWriteValues(p, pItem, e, pnKey, &bAny);
      }
      break;
    case PULL_KIND_REVERSE:
      if (pItem->pAttr == NULL) break;
      rc = pullCollect(p, PULL_STMT_REVERSE, e, pItem->a, pItem->nLimit, 0, &ids);
      /* An array, but a component has one owner: one map, as Datomic's
      ** and DataScript's pull give it. */
      if (ids.n > 0 && pItem->pAttr->bComponent) ids.n = 1;
      bAny = ids.n > 0;
      pullPrune(p, pItem, &ids);
      if (rc == SQLITE_OK && ids.n > 0) {
        pullKey(p, pnKey, pItem->zKey, pItem->nKey);
        rc = pullWriteRefs(p, pItem, &ids, !pItem->pAttr->bComponent);
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

/* The wildcard item of attribute pAttr, as the per-attribute walk and the
** one-read scan both write it: Datomic's default limit for many values,
** component refs expanded with [*]. */
static void pullWildcardItem(PullRun *p, const Attr *pAttr, PullItem *pItem) {
  memset(pItem, 0, sizeof(*pItem));
  pItem->eKind = PULL_KIND_ATTR;
  pItem->a = pAttr->e;
  pItem->pAttr = pAttr;
  pItem->zKey = pAttr->zIdent;
  pItem->nKey = (int)strlen(pAttr->zIdent);
  pItem->nLimit = PULL_DEFAULT_LIMIT;
  if (pAttr->type == VT_REF && pAttr->bComponent) {
    pItem->pSub = &p->wildcard;
    pItem->bComponent = 1;
  }
}

/* Writes the fulltext value with rowid pRowid (a datom's v) as its text. */
static int pullWriteText(PullRun *p, sqlite3_value *pRowid, int tag) {
  sqlite3_stmt *pStmt = NULL;
  int rc = pullStmt(p, PULL_STMT_TEXT, sqlite3_value_int64(pRowid), 0, 0, 0, &pStmt);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    rc = valueJsonFromStored(p->pOut, sqlite3_column_value(pStmt, 0), tag, 1);
  } else if (rc == SQLITE_DONE) {
    sqlite3_str_appendall(p->pOut, "null");   /* a rowid the store lost: as the subquery */
    rc = SQLITE_OK;
  } else {
    rc = pullSqlErr(p, rc);
  }
  sqlite3_reset(pStmt);
  return rc;
}

/* Ends the attribute group the scan was writing: closes a many array, or
** writes the collected component refs (nested maps; they read through the
** other statements, since the scan's is still open). */
static int pullScanEnd(PullRun *p, const PullItem *pItem, int n, PullIds *pComp, int *pnKey) {
  int rc = SQLITE_OK;
  if (pItem->bComponent) {
    if (pComp->n > 0) {
      pullKey(p, pnKey, pItem->zKey, pItem->nKey);
      rc = pullWriteRefs(p, pItem, pComp, pItem->pAttr->bMany);
    }
    pComp->n = 0;
  } else if (n > 0 && pItem->pAttr->bMany) {
    sqlite3_str_appendchar(p->pOut, 1, ']');
  }
  return rc;
}

/* The wildcard's attributes from one statement over e's datoms in EAVT
** order (grouped here by attribute), instead of one statement for the
** attribute list and one per attribute: one read of adjacent index
** entries, and one read transaction for edn_pull [*]. Writes what
** pullWildcard's walk writes, in the same order. */
static int pullWildcardScan(PullRun *p, const PullPattern *pPat, sqlite3_int64 e, int *pnKey) {
  sqlite3_stmt *pStmt = NULL;
  PullIds comp = {NULL, 0, 0};
  PullItem item;
  int bOpen = 0;          /* item holds the attribute being written */
  int bSkip = 1;          /* the current attribute is not written here */
  int n = 0;              /* values of the current attribute seen */
  sqlite3_int64 aCur = 0, nMax = 0;
  int rc = pullStmt(p, PULL_STMT_ENTITY, e, 0, 0, 0, &pStmt);
  if (rc != SQLITE_OK) return rc;

  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    sqlite3_int64 a = sqlite3_column_int64(pStmt, 0);
    int tag;
    if (!bOpen || a != aCur) {
      const Attr *pAttr;
      if (bOpen && !bSkip) {
        rc = pullScanEnd(p, &item, n, &comp, pnKey);
        if (rc != SQLITE_OK) goto cleanup;
      }
      bOpen = 1;
      aCur = a;
      n = 0;
      pAttr = schemaAttr(p->pSchema, a);
      bSkip = pAttr == NULL || pAttr->zIdent == NULL || pullHasKey(pPat, pAttr->zIdent);
      if (bSkip) continue;
      pullWildcardItem(p, pAttr, &item);
      nMax = pAttr->bMany ? item.nLimit : 1;
    }
    if (bSkip || n >= nMax) continue;
    tag = sqlite3_column_int(pStmt, 2);
    if (item.bComponent) {
      n++;
      if (tag == TAG_REF) {
        rc = pullIdsAdd(&comp, sqlite3_column_int64(pStmt, 1));
        if (rc != SQLITE_OK) goto cleanup;
      }
      continue;
    }
    if (n++ == 0) {
      pullKey(p, pnKey, item.zKey, item.nKey);
      if (item.pAttr->bMany) sqlite3_str_appendchar(p->pOut, 1, '[');
    } else {
      sqlite3_str_appendchar(p->pOut, 1, ',');
    }
    if (item.pAttr->bFulltext && item.pAttr->type == VT_STRING) {
      rc = pullWriteText(p, sqlite3_column_value(pStmt, 1), tag);
      if (rc != SQLITE_OK) goto cleanup;
    } else {
      rc = valueJsonFromStored(p->pOut, sqlite3_column_value(pStmt, 1),
                               item.pAttr->type == VT_TUPLE ? TAG_TUPLE : tag, 1);
      if (rc != SQLITE_OK) goto cleanup;
    }
    if (pullPolled(p)) {
      rc = SQLITE_INTERRUPT;
      goto cleanup;
    }
  }
  if (rc == SQLITE_DONE) {
    /* Reset first: the last group's component maps may run this statement
    ** again for the child (it is no longer busy), which needs new bindings. */
    sqlite3_reset(pStmt);
    rc = SQLITE_OK;
    if (bOpen && !bSkip) rc = pullScanEnd(p, &item, n, &comp, pnKey);
  } else if (rc != SQLITE_NOMEM) {
    rc = pullSqlErr(p, rc);   /* sqlite3_step failed */
  }

cleanup:
  sqlite3_reset(pStmt);
  sqlite3_free(comp.a);
  return rc;
}

/* The wildcard: ":db/id", then every attribute e has, in entid order.
** Component refs expand with [*] (Datomic); other refs show {":db/id": n}.
** The current and since databases read e's datoms in one statement
** (pullWildcardScan) unless a component map further up the path is being
** written from it; as of T, and there, the attributes are walked. */
static int pullWildcard(PullRun *p, const PullPattern *pPat, sqlite3_int64 e, int *pnKey) {
  PullIds attrs = {NULL, 0, 0};
  int i, rc;

  if (!pullHasKey(pPat, ":db/id")) {
    p->bIdDue = 1;
    p->eIdDue = e;
  }
  if (p->eTime != PULL_TIME_ASOF) {
    sqlite3_stmt *pScan = p->pCache->apStmt[p->eTime * PULL_NKIND + PULL_STMT_ENTITY];
    if (pScan == NULL || !sqlite3_stmt_busy(pScan)) return pullWildcardScan(p, pPat, e, pnKey);
  }
  rc = pullCollect(p, PULL_STMT_ATTRS, e, 0, 0, 0, &attrs);
  for (i = 0; i < attrs.n && rc == SQLITE_OK; i++) {
    const Attr *pAttr = schemaAttr(p->pSchema, attrs.a[i]);
    PullItem item;
    if (pAttr == NULL || pAttr->zIdent == NULL || pullHasKey(pPat, pAttr->zIdent)) continue;
    pullWildcardItem(p, pAttr, &item);
    rc = pullItem(p, &item, e, pnKey);
  }
  sqlite3_free(attrs.a);
  return rc;
}

/* Writes the map of entity e under pPat; pVia is the item e was reached
** through (NULL at the root). */
static int pullMap(PullRun *p, const PullPattern *pPat, const PullItem *pVia, sqlite3_int64 e,
                   unsigned flags) {
  int nKey = 0;
  int bDbid = 0;
  int bAskId = 0;       /* the pattern names :db/id (any :as) */
  int i, rc = SQLITE_OK;

  if (pullPolled(p)) return SQLITE_INTERRUPT;
  p->aVia[p->nPath] = pVia;
  p->aPath[p->nPath++] = e;
  for (i = 0; i <= pPat->nItem && rc == SQLITE_OK; i++) {
    if (pPat->bWildcard && pPat->iWildcard == i) {
      rc = pullWildcard(p, pPat, e, &nKey);
      bDbid = 1;
    }
    if (i < pPat->nItem && rc == SQLITE_OK) {
      const PullItem *pItem = &pPat->aItem[i];
      bAskId |= pItem->eKind == PULL_KIND_DBID;
      if (pItem->eKind == PULL_KIND_DBID && pItem->nKey == 6
          && memcmp(pItem->zKey, ":db/id", 6) == 0) {
        bDbid = 1;
      }
      rc = pullItem(p, pItem, e, &nKey);
    }
  }
  p->bIdDue = 0;   /* no key came after the wildcard: written below */
  if (rc == SQLITE_OK && nKey == 0 && !bAskId && (flags & PULL_NIL_EMPTY)) {
    /* Datomic: nil, no map. A pattern naming :db/id keeps its map, as
    ** no datom is read for it. */
    sqlite3_str_appendall(p->pOut, "null");
  } else if (rc == SQLITE_OK) {
    if (nKey == 0 || ((flags & PULL_WITH_DBID) && !bDbid)) {
      pullKey(p, &nKey, ":db/id", 6);
      sqlite3_str_appendf(p->pOut, "%lld", e);
    }
    sqlite3_str_appendchar(p->pOut, 1, '}');
  }
  p->nPath--;
  return rc;
}

/* The cache a call uses: *ppCache (created for db when NULL), or NULL
** with rc SQLITE_OK when the caller keeps none. */
static int pullCacheFor(sqlite3 *db, PullCache **ppCache, PullCache **ppOut, char **pzErr) {
  *ppOut = NULL;
  if (ppCache == NULL) return SQLITE_OK;
  if (*ppCache == NULL) {
    *ppCache = sqlite3_malloc64(sizeof(PullCache));
    if (*ppCache == NULL) return SQLITE_NOMEM;
    memset(*ppCache, 0, sizeof(PullCache));
    ednArenaInit(&(*ppCache)->textArena);
    (*ppCache)->db = db;
  } else if ((*ppCache)->db != db) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("pull: statement cache used with another connection");
    return SQLITE_MISUSE;
  }
  *ppOut = *ppCache;
  return SQLITE_OK;
}

/* Pulls e with the compiled pattern pPat through pCache (NULL: statements
** for this call only). */
static int pullRunCompiled(sqlite3 *db, const Schema *pSchema, const PullPattern *pPat,
                           sqlite3_int64 e, unsigned flags, const PullTime *pTime,
                           PullCache *pCache, const PullPoll *pPoll, sqlite3_str *pOut,
                           char **pzErr) {
  PullCache local;
  PullRun *pRun = NULL;
  int rc, i;

  memset(&local, 0, sizeof(local));
  ednArenaInit(&local.textArena);
  local.db = db;
  /* The run holds the path (about 2 KiB): on the heap, not the host's stack. */
  pRun = sqlite3_malloc64(sizeof(PullRun));
  if (pRun == NULL) return SQLITE_NOMEM;
  memset(pRun, 0, sizeof(*pRun));
  pRun->db = db;
  pRun->pSchema = pSchema;
  if (pTime && pTime->bAsOf) {
    pRun->eTime = PULL_TIME_ASOF;
    pRun->iAsOf = pTime->iAsOf;
    pRun->iSince = pTime->bSince ? pTime->iSince : 0;   /* tx ids are > 0 */
  } else if (pTime && pTime->bSince) {
    pRun->eTime = PULL_TIME_SINCE;
    pRun->iSince = pTime->iSince;
  }
  pRun->pOut = pOut;
  pRun->pzErr = pzErr;
  pRun->pPoll = pPoll;
  pRun->iPollAt = sqlite3_str_length(pOut);
  pRun->wildcard.bWildcard = 1;
  pRun->pCache = pCache ? pCache : &local;

  if ((flags & PULL_NIL_ID) && e <= 0) {
    /* 0 and negative ids name no entity (ids start at 1): nil, whatever
    ** the pattern (even [:db/id]) */
    sqlite3_str_appendall(pOut, "null");
    rc = SQLITE_OK;
  } else {
    rc = pullMap(pRun, pPat, NULL, e, flags);
  }
  if (rc == SQLITE_OK && sqlite3_str_errcode(pOut) != SQLITE_OK) {
    rc = sqlite3_str_errcode(pOut) == SQLITE_TOOBIG ? SQLITE_TOOBIG : SQLITE_NOMEM;
  }
  for (i = 0; i < PULL_NSTMT; i++) sqlite3_finalize(local.apStmt[i]);
  sqlite3_free(pRun);
  return rc;
}

int pullEntityAt(sqlite3 *db, const Schema *pSchema, const EdnValue *pPattern,
                 sqlite3_int64 e, unsigned flags, const PullTime *pTime,
                 PullCache **ppCache, sqlite3_str *pOut, char **pzErr) {
  EdnArena arena;
  PullPattern *pPat = NULL;
  PullCache *pCache = NULL;
  int rc;

  ednArenaInit(&arena);
  rc = pullCompile(&arena, pSchema, pPattern, &pPat, pzErr);
  if (rc == SQLITE_OK) rc = pullCacheFor(db, ppCache, &pCache, pzErr);
  if (rc == SQLITE_OK) {
    rc = pullRunCompiled(db, pSchema, pPat, e, flags, pTime, pCache, NULL, pOut, pzErr);
  }
  ednArenaReset(&arena);
  return rc;
}

int pullEntityText(sqlite3 *db, const Schema *pSchema, const char *zPattern, int nPattern,
                   sqlite3_int64 e, unsigned flags, PullCache **ppCache, const PullPoll *pPoll,
                   sqlite3_str *pOut, char **pzErr) {
  PullCache *pCache = NULL;
  EdnArena local;
  EdnArena *pArena = &local;
  EdnValue *pTree = NULL;
  PullPattern *pPat = NULL;
  EdnError err;
  int rc;

  ednArenaInit(&local);
  rc = pullCacheFor(db, ppCache, &pCache, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (pCache && pCache->pTextPat && pCache->nText == nPattern && pCache->pTextSchema == pSchema
      && pCache->iTextGen == schemaGeneration(pSchema)
      && memcmp(pCache->zText, zPattern, (size_t)nPattern) == 0) {
    return pullRunCompiled(db, pSchema, pCache->pTextPat, e, flags, NULL, pCache, pPoll, pOut,
                           pzErr);
  }
  if (pCache) {
    pullCacheTextReset(pCache);
    pArena = &pCache->textArena;
  }
  memset(&err, 0, sizeof err);
  rc = ednReadOne(pArena, zPattern, nPattern, &pTree, &err);
  if (rc == SQLITE_ERROR) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("pattern: line %d col %d: %s", err.line, err.col, err.zMsg);
    if (*pzErr == NULL) rc = SQLITE_NOMEM;
  } else if (rc == SQLITE_OK && pTree->type != EDN_VECTOR) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("pattern: line %d col %d: a pull pattern must be a vector",
                             pTree->line, pTree->col);
    rc = *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK) rc = pullCompile(pArena, pSchema, pTree, &pPat, pzErr);
  if (rc == SQLITE_OK && pCache) {
    pCache->zText = sqlite3_malloc64((sqlite3_uint64)nPattern + 1);
    if (pCache->zText == NULL) {
      rc = SQLITE_NOMEM;
    } else {
      memcpy(pCache->zText, zPattern, (size_t)nPattern);
      pCache->zText[nPattern] = 0;
      pCache->nText = nPattern;
      pCache->pTextSchema = pSchema;
      pCache->iTextGen = schemaGeneration(pSchema);
      pCache->pTextPat = pPat;
    }
  }
  if (rc == SQLITE_OK) {
    rc = pullRunCompiled(db, pSchema, pPat, e, flags, NULL, pCache, pPoll, pOut, pzErr);
  }
  if (rc != SQLITE_OK && pCache) pullCacheTextReset(pCache);
  ednArenaReset(&local);
  return rc;
}

int pullEntityEx(sqlite3 *db, const Schema *pSchema, const EdnValue *pPattern,
                 sqlite3_int64 e, unsigned flags, PullCache **ppCache,
                 sqlite3_str *pOut, char **pzErr) {
  return pullEntityAt(db, pSchema, pPattern, e, flags, NULL, ppCache, pOut, pzErr);
}

int pullEntity(sqlite3 *db, const Schema *pSchema, const EdnValue *pPattern,
               sqlite3_int64 e, sqlite3_str *pOut, char **pzErr) {
  return pullEntityAt(db, pSchema, pPattern, e, 0, NULL, NULL, pOut, pzErr);
}

int pullTxAtInstant(sqlite3 *db, const EdnValue *pInst, sqlite3_int64 *piTx, char **pzErr) {
  sqlite3_stmt *pStmt = NULL;
  int rc;
  *piTx = 0;
  /* The rule query_compile.c compiles for an instant asOf/since. */
  rc = sqlite3_prepare_v2(db, "SELECT coalesce(max(e), 0) FROM datoms WHERE a = "
                          PULL_STR(ENTID_DB_TXINSTANT) " AND v <= ?1", -1, &pStmt, NULL);
  if (rc == SQLITE_OK) {
    /* Not an instant: NULL, which names no transaction (as the query's bind). */
    if (pInst && pInst->type == EDN_INST) sqlite3_bind_int64(pStmt, 1, pInst->u.i);
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) {
      *piTx = sqlite3_column_int64(pStmt, 0);
      rc = SQLITE_OK;
    }
  }
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("pull: %s", sqlite3_errmsg(db));
    if (*pzErr == NULL) rc = SQLITE_NOMEM;
    else if (rc == SQLITE_DONE) rc = SQLITE_ERROR;
  }
  sqlite3_finalize(pStmt);
  return rc;
}
