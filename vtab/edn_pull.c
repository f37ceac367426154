/*
** edn_pull.c — the SQL function edn_pull(db_path, pattern, entity): the
** JSON map of one entity under a Datomic pull pattern
** (../shared/SPEC.md §2.2):
**
**   SELECT edn_pull('/data/app.db', '[:person/name {:person/friend [*]}]', 65536);
**   -> {":person/name":"Ann",":person/friend":[{...}],":db/id":65536}
**   SELECT edn_pull('/data/app.db', '[*]', '[:person/email "ann@x.org"]');
**   SELECT edn_pull('/data/app.db', '[*]', ':person/name');
**
** Takes the arguments: the entity is an INTEGER entity id or TEXT holding
** an ident or lookup ref, resolved here; one that names no entity gives
** NULL (Datomic: nil). Gives the map or an "edn_pull: " error. Calls the
** call context (call.h) for a reader connection, and pull.h, which reads
** the pattern (one EDN vector) and walks it, keeping the compiled pattern
** and its statements in that connection's pull cache, so a repeated call
** parses and prepares nothing. A fourth argument, opts, takes
** {"with": "<tx-data>"}: the pull sees the database with that transaction
** applied, and nothing is written (call.h).
*/
#include <string.h>
#include "edn_pull.h"
#include "call.h"
#include "sqlio.h"
#include "pull.h"
#include "query.h"
#include "value.h"

static int ednpullLookup(sqlite3 *db, const Schema *pSchema, const Attr *pA,
                         const EdnValue *pVal, sqlite3_int64 *pE, char **pzErr);

/* Tuple pVal of attribute pA with its ref elements that are lookup refs or
** idents replaced by their entity ids, in pArena (*ppOut; pVal itself when
** it has none), as edn_t reads a composite tuple's lookup ref (DataScript's
** lookup-refs-in-tuple). *pbNone: one of them names no entity (nor then
** does the tuple). */
static int ednpullTupleRefs(sqlite3 *db, const Schema *pSchema, const Attr *pA,
                            const EdnValue *pVal, EdnArena *pArena, const EdnValue **ppOut,
                            int *pbNone, char **pzErr) {
  EdnValue *pCopy = NULL;
  int i, rc = SQLITE_OK;
  *ppOut = pVal;
  *pbNone = 0;
  if (pVal->type != EDN_VECTOR || pA->tuple.nFixed != pVal->u.c.n) return SQLITE_OK;
  for (i = 0; i < pVal->u.c.n && rc == SQLITE_OK && !*pbNone; i++) {
    const EdnValue *pEl = pVal->u.c.a[i];
    const Attr *pRefA;
    sqlite3_int64 e = 0;
    if (pA->tuple.aType[i] != VT_REF) continue;
    if (pEl->type == EDN_KEYWORD) {
      e = schemaEntid(pSchema, pEl->u.s.z, pEl->u.s.n);
    } else if (pEl->type == EDN_VECTOR && pEl->u.c.n == 2 && pEl->u.c.a[0]->type == EDN_KEYWORD) {
      pRefA = schemaAttrByIdent(pSchema, pEl->u.c.a[0]->u.s.z, pEl->u.c.a[0]->u.s.n);
      /* an attribute that is not unique names no one entity: nothing */
      if (pRefA && pRefA->eUnique != UNIQUE_NONE) {
        rc = ednpullLookup(db, pSchema, pRefA, pEl->u.c.a[1], &e, pzErr);
      }
    } else {
      continue;
    }
    if (rc == SQLITE_OK && e == 0) *pbNone = 1;
    if (rc == SQLITE_OK && e != 0 && pCopy == NULL) {
      pCopy = ednNewColl(pArena, EDN_VECTOR, pVal->u.c.n);
      if (pCopy == NULL) return SQLITE_NOMEM;
      memcpy(pCopy->u.c.a, pVal->u.c.a, sizeof(EdnValue *) * (size_t)pVal->u.c.n);
    }
    if (rc == SQLITE_OK && e != 0 && (pCopy->u.c.a[i] = ednNewInt(pArena, e)) == NULL) {
      rc = SQLITE_NOMEM;
    }
  }
  if (pCopy) *ppOut = pCopy;
  return rc;
}

/* The entity a lookup ref's attribute pA and value pVal name in the
** current database on db, 0 when none. */
static int ednpullLookup(sqlite3 *db, const Schema *pSchema, const Attr *pA,
                         const EdnValue *pVal, sqlite3_int64 *pE, char **pzErr) {
  sqlite3_stmt *pStmt = NULL;
  TypedValue tv;
  char *zErr = NULL;
  EdnArena arena;
  int rc;
  *pE = 0;
  ednArenaInit(&arena);
  if (pA->type == VT_TUPLE) {
    const EdnValue *pAt = NULL;
    int bNone = 0;
    rc = ednpullTupleRefs(db, pSchema, pA, pVal, &arena, &pVal, &bNone, pzErr);
    if (rc != SQLITE_OK || bNone) {
      ednArenaReset(&arena);
      return rc;
    }
    rc = valueTupleFromEdn(pVal, &pA->tuple, &arena, &tv, &zErr, &pAt);
    sqlite3_free(zErr);
    if (rc != SQLITE_OK) {
      ednArenaReset(&arena);
      return rc == SQLITE_NOMEM ? rc : SQLITE_OK;
    }
  } else if (pA->type == VT_REF && pVal->type == EDN_KEYWORD) {
    /* a ref-typed unique attribute's value may be an ident */
    memset(&tv, 0, sizeof tv);
    tv.type = VT_REF;
    tv.i = schemaEntid(pSchema, pVal->u.s.z, pVal->u.s.n);
    if (tv.i == 0) return SQLITE_OK;
  } else {
    rc = valueFromEdn(pVal, pA->type, &tv, &zErr);
    sqlite3_free(zErr);
    /* a value of another type than the attribute's names no entity */
    if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_OK;
  }
  /* a fulltext attribute's datoms hold the rowid of the text (?4) */
  rc = sqlite3_prepare_v2(db, "SELECT e FROM datoms WHERE a = ?1 AND value_type_tag = ?3 AND v ="
                          " CASE WHEN ?4 THEN (SELECT rowid FROM fulltext_values WHERE text = ?2)"
                          " ELSE ?2 END", -1, &pStmt, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(pStmt, 1, pA->e);
  if (rc == SQLITE_OK) rc = valueBind(pStmt, 2, &tv);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(pStmt, 3, vtTag(pA->type));
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(pStmt, 4, pA->bFulltext && pA->type == VT_STRING);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) *pE = sqlite3_column_int64(pStmt, 0);
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("entity: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(pStmt);
  ednArenaReset(&arena);
  return rc;
}

/* edn_pull's TEXT entity: an EDN ident (:ns/name) or lookup ref [:attr
** value], as Datomic's pull takes "entity ids, idents, or lookup refs",
** resolved in the current database on db. *pE is 0 when it names no entity
** (an unknown ident or attribute, a value no entity has): the pull is nil.
** Another form, or a lookup ref on an attribute that is not :db/unique, is
** an error naming the argument ("entity: line L col C: ..."). */
static int ednpullEntityText(sqlite3 *db, const Schema *pSchema, const char *z, int n,
                             sqlite3_int64 *pE, char **pzErr) {
  EdnArena arena;
  EdnValue *p = NULL;
  EdnError err;
  int rc;
  *pE = 0;
  ednArenaInit(&arena);
  memset(&err, 0, sizeof err);
  rc = ednReadOne(&arena, z, n, &p, &err);
  if (rc == SQLITE_ERROR) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("entity: line %d col %d: %s", err.line, err.col, err.zMsg);
    if (*pzErr == NULL) rc = SQLITE_NOMEM;
  } else if (rc == SQLITE_OK && p->type == EDN_KEYWORD) {
    *pE = schemaEntid(pSchema, p->u.s.z, p->u.s.n);
  } else if (rc == SQLITE_OK && p->type == EDN_VECTOR && p->u.c.n == 2
             && p->u.c.a[0]->type == EDN_KEYWORD) {
    const EdnValue *pK = p->u.c.a[0];
    const Attr *pA = schemaAttrByIdent(pSchema, pK->u.s.z, pK->u.s.n);
    if (pA && pA->eUnique == UNIQUE_NONE) {
      /* as edn_t and edn_q refuse it: such an attribute names no one entity */
      sqlite3_free(*pzErr);
      *pzErr = sqlite3_mprintf("entity: line %d col %d: lookup ref attribute %s is not :db/unique",
                               p->line, p->col, pA->zIdent);
      rc = *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
    } else if (pA) {
      rc = ednpullLookup(db, pSchema, pA, p->u.c.a[1], pE, pzErr);
    }
  } else if (rc == SQLITE_OK) {
    sqlite3_str *pTxt = sqlite3_str_new(NULL);
    char *zTxt;
    ednPrint(pTxt, p);
    zTxt = sqlite3_str_finish(pTxt);
    sqlite3_free(*pzErr);
    *pzErr = zTxt ? sqlite3_mprintf("entity: line %d col %d: %s is not a lookup ref [:attr value]"
                                    " or an ident", p->line, p->col, zTxt) : NULL;
    rc = *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
    sqlite3_free(zTxt);
  }
  ednArenaReset(&arena);
  return rc;
}

/* The entity argument pEnt of type eType (INTEGER or TEXT, checked by the
** caller) as an entity id in *pE, resolved on the call's reader; 0 when it
** names none. */
static int ednpullEntity(VCall *pCall, sqlite3_value *pEnt, int eType, sqlite3_int64 *pE,
                         char **pzErr) {
  const char *zEnt;
  char aEnt[512];
  int nEnt, rc;
  if (eType == SQLITE_INTEGER) {
    *pE = sqlite3_value_int64(pEnt);
    return SQLITE_OK;
  }
  rc = sqlioTextIn(pEnt, aEnt, (int)sizeof aEnt, &zEnt, &nEnt);
  if (rc != SQLITE_OK) return rc;
  return ednpullEntityText(pCall->pConn->db, pCall->pSchema, zEnt, nEnt, pE, pzErr);
}

/* PullPoll.xPoll: the call's watch asked as the map is written
** (intrWatchPoll, time-gated: the host's flag, or a probe once a
** millisecond), so an interrupt stops a pull of many or large values as
** it builds rather than after it (issue 19 R3). */
static int ednpullPolled(void *pArg) {
  return intrWatchPoll((IntrWatch *)pArg, 0);
}

/* The pull of ednpullFunc on the call's reader: the entity resolved into
** *pE (0: none, nothing written), then its map appended to *ppBuf from
** *piStart. A reader from storeReaderLazy runs its statements each in a
** snapshot of its own; the file's data version after the last of them
** (SQLITE_FCNTL_DATA_VERSION, which a read transaction's start advances
** when another connection has committed) equal to the one the reader's
** schema was checked at means no commit came between the check and any of
** them: one snapshot, the pull stands. Otherwise — and for an error or an
** entity not found, which an older schema may explain, or a pull that ran
** no statement — the reader is checked in one read transaction
** (storeReaderRecheck) and the pull runs again inside it. */
static int ednpullRun(VCall *pCall, sqlite3 *host, sqlite3_value *pEnt, int eTypeEnt, const char *zPat,
                      int nPat, sqlite3_str **ppBuf, int *piStart, sqlite3_int64 *pE, char **pzErr) {
  PullPoll poll = {ednpullPolled, &pCall->watch};
  int rc;
  for (;;) {
    int bStale = 0;
    Schema *pNew = NULL;
    rc = ednpullEntity(pCall, pEnt, eTypeEnt, pE, pzErr);
    if (rc == SQLITE_OK && *pE != 0) {
      sqlite3_str *pOut = sqlioOutBegin(ppBuf, host, piStart);
      if (pOut == NULL) return SQLITE_NOMEM;
      /* PULL_WITH_DBID: edn_pull's map always carries :db/id (SPEC.md
      ** §2.2). The connection's pull cache is kept with its compiled plans
      ** (query.h). */
      rc = pullEntityText(pCall->pConn->db, pCall->pSchema, zPat, nPat, *pE,
                          PULL_WITH_DBID | PULL_NIL_ID, qCachePulls(pCall->pConn), &poll,
                          pOut, pzErr);
      /* nil (PULL_NIL_ID): no map, SQL NULL as for no entity */
      if (rc == SQLITE_OK && sqlite3_str_length(pOut) - *piStart == 4
          && memcmp(sqlite3_str_value(pOut) + *piStart, "null", 4) == 0) {
        *pE = 0;
      }
    }
    /* an interrupt is not a stale snapshot's: not run again */
    if (rc == SQLITE_NOMEM || rc == SQLITE_INTERRUPT || !storeReaderIsLazy(pCall->pConn)) {
      return rc;
    }
    if (rc == SQLITE_OK && *pE != 0) {
      int rc2 = storeReaderCheck(pCall->pStore, pCall->pConn, &bStale);
      if (rc2 != SQLITE_OK || !bStale) return rc2;
    }
    /* Once more, checked: the first answer and its message are dropped. */
    if (*ppBuf) {
      sqlite3_free(sqlite3_str_finish(*ppBuf));
      *ppBuf = NULL;
    }
    sqlite3_free(*pzErr);
    *pzErr = NULL;
    rc = storeReaderRecheck(pCall->pStore, pCall->pConn, &pNew, pzErr);
    if (rc != SQLITE_OK) return rc;
    schemaUnref(pCall->pSchema);
    pCall->pSchema = pNew;
  }
}

void ednpullFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  const char *zPat;
  int nPat, rc, eTypeEnt;
  sqlite3_int64 e = 0;
  char *zErr = NULL;
  sqlite3_str **ppBuf = NULL, *pLocal = NULL;
  sqlite3 *host = sqlite3_context_db_handle(pCtx);
  int iStart = 0;
  VCall call;
  char aPat[1024];              /* the pattern's text, read without an allocation */
  QueryOpts opts;               /* argc 4 only: an unused one costs nothing per call */
  int bOpts = argc > 3;

  memset(&call, 0, sizeof call);
  if (bOpts) qOptsInit(&opts);
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL
      || sqlite3_value_type(argv[2]) == SQLITE_NULL)
    return;
  /* No silent conversion of 65536.0: an entity id is an INTEGER; TEXT is
  ** EDN, an ident or a lookup ref (so '65536' is refused, not read). */
  eTypeEnt = sqlite3_value_type(argv[2]);
  if (eTypeEnt != SQLITE_INTEGER && eTypeEnt != SQLITE_TEXT) {
    rc = SQLITE_ERROR;
    zErr = sqlite3_mprintf("entity must be an INTEGER entity id, or TEXT holding a lookup ref"
                           " or ident");
    goto cleanup;
  }
  rc = sqlioTextIn(argv[1], aPat, (int)sizeof aPat, &zPat, &nPat);
  if (rc != SQLITE_OK) goto cleanup;
  /* opts {"with": tx-data}: the pull reads the database with that
  ** transaction applied, and nothing is written (call.h). VCALL_QUERY: a
  ** reader that may start without a read transaction; ednpullRun says how
  ** the pull still reads one snapshot. */
  rc = vcallBegin(&call, host, argv[0], VCALL_QUERY | VCALL_PULL,
                  bOpts ? &opts : NULL, bOpts ? argv[3] : NULL, &zErr);
  if (rc != SQLITE_OK) goto cleanup;
  /* a map past the host's SQLITE_LIMIT_LENGTH stops as it grows there */
  ppBuf = sqlioOutSlot(host, qCacheOutBuf(call.pConn), &pLocal);
  rc = ednpullRun(&call, host, argv[2], eTypeEnt, zPat, nPat, ppBuf, &iStart, &e, &zErr);
  if (rc != SQLITE_OK || e == 0) goto cleanup;   /* names no entity: nil (SQL NULL) */
  /* The values' JSON is written outside the store's VM: a last look before
  ** the host's VM takes the map, which would fail with a bare "interrupted"
  ** (intrWatchPoll). */
  if (intrWatchPoll(&call.watch, 1)) {
    rc = SQLITE_INTERRUPT;
    goto cleanup;
  }
  sqlioOutJson(pCtx, "edn_pull", ppBuf, iStart);

cleanup:
  if (rc != SQLITE_OK) rc = vcallWithTimedOut(&call, rc, &zErr);
  if (rc != SQLITE_OK) sqlioError(pCtx, "edn_pull", rc, zErr);
  vcallEnd(&call);
  if (bOpts) qOptsReset(&opts);
  sqlite3_free(zErr);
  sqlite3_free(sqlite3_str_finish(pLocal));
}
