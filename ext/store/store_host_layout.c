/*
** store_host_layout.c — a host database's store objects: the v3 layout
** checked (never altered), the databases searched before the store's for
** objects of its names, and the host's statements that read its tables.
**
** Takes in a host store's part (StoreHostPart, store_context.h); gives out
** verdicts and messages; calls only SQLite and store_context.c.
*/
#include <string.h>
#include "store_context.h"

/* The store's tables, with their columns in order, and its views: a host
** database holding any of these names must hold all of them, laid out so. */
static const char *const azHostTable[][2] = {
  { "datoms", "e,a,v,tx,value_type_tag,index_avet,index_vaet,index_fulltext,unique_value" },
  { "timelined_transactions", "e,a,v,tx,added,value_type_tag,timeline" },
  { "idents", "e,a,v,value_type_tag" },
  { "schema", "e,a,v,value_type_tag" },
  { "known_parts", "part,start,end,allow_excision,idx" },
  { "mentat_managed_indexes", "name,a,created,last_used,kind" },
  { "fulltext_values", "text,searchid" },
};
#define HOST_NTABLE 7
static const char zHostNames[] =
  "('datoms','timelined_transactions','idents','schema','known_parts',"
  "'mentat_managed_indexes','fulltext_values','transactions','fulltext_values_view',"
  "'fulltext_datoms','all_datoms','parts')";
#define HOST_NOBJECT 12


/* One integer from zSql on db (0 when no row); the statement is finalized. */
static int hostQueryInt(sqlite3 *db, const char *zSql, sqlite3_int64 *piOut) {
  sqlite3_stmt *pStmt = NULL;
  int rc = zSql ? sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL) : SQLITE_NOMEM;
  *piOut = 0;
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) *piOut = sqlite3_column_int64(pStmt, 0);
    rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK : sqlite3_errcode(db);
  }
  sqlite3_finalize(pStmt);
  return rc;
}


/* Rank of database seq iDb in SQLite's search order for unqualified
** names: temp, main, then the attached ones in order. */
static int hostRank(int iDb) {
  return iDb < 2 ? 1 - iDb : iDb;
}

/* Refuses when a database searched before the store's holds objects of
** the store's names: the unqualified SQL would read those. bCreating: the
** layout is about to be created, which must not hide another database's
** store either (one searched after this one). */
int storeHostCheckShadow(StoreHostPart *h, int bCreating, char **pzErr) {
  sqlite3_stmt *pList = NULL;
  int rc = sqlite3_prepare_v2(h->host, "SELECT seq, name FROM pragma_database_list", -1, &pList, NULL);
  int bTemp = 0;
  while (rc == SQLITE_OK && sqlite3_step(pList) == SQLITE_ROW) {
    int iDb = sqlite3_column_int(pList, 0);
    const char *zDb = (const char *)sqlite3_column_text(pList, 1);
    sqlite3_int64 n = 0;
    char *zSql;
    if (iDb == 1) bTemp = 1;
    if (zDb == NULL || iDb == h->iDb) continue;
    if (hostRank(iDb) > hostRank(h->iDb) && !bCreating) continue;
    zSql = sqlite3_mprintf("SELECT count(*) FROM \"%w\".sqlite_schema WHERE name IN %s", zDb,
                           zHostNames);
    rc = hostQueryInt(h->host, zSql, &n);
    sqlite3_free(zSql);
    if (rc == SQLITE_OK && n > 0 && hostRank(iDb) > hostRank(h->iDb)) {
      storeErr(pzErr, sqlite3_mprintf("db_path ':%s': database %s holds a store (tables datoms, "
                                     "...), which a store in %s would hide from unqualified "
                                     "names; use ':%s'", h->zName, zDb, h->zName, zDb));
      rc = SQLITE_ERROR;
    } else if (rc == SQLITE_OK && n > 0) {
      storeErr(pzErr, sqlite3_mprintf("db_path ':%s': database %s also holds tables named like the "
                                     "store's (datoms, ...), and unqualified names find those "
                                     "first; rename them or use ':%s'", h->zName, zDb, zDb));
      rc = SQLITE_ERROR;
    }
  }
  sqlite3_finalize(pList);
  if (rc == SQLITE_OK && !bTemp && h->iDb != 1) {
    /* The temp database is searched first even before database_list lists it. */
    sqlite3_int64 n = 0;
    char *zSql = sqlite3_mprintf("SELECT count(*) FROM temp.sqlite_schema WHERE name IN %s",
                                 zHostNames);
    rc = hostQueryInt(h->host, zSql, &n);
    sqlite3_free(zSql);
    if (rc == SQLITE_OK && n > 0) {
      storeErr(pzErr, sqlite3_mprintf("db_path ':%s': database temp also holds tables named like "
                                     "the store's (datoms, ...); rename them or use ':temp'",
                                     h->zName));
      rc = SQLITE_ERROR;
    }
  }
  if (rc != SQLITE_OK && rc != SQLITE_ERROR && pzErr && *pzErr == NULL) {
    *pzErr = sqlite3_mprintf("cannot read host database %s: %s", h->zName, sqlite3_errmsg(h->host));
  }
  return rc;
}

/* Steps the schema_version of the databases searched before the store's;
** *pbChanged (may be NULL): one changed since the last call, so a table
** of the store's names may have appeared there. */
int storeHostShadowSeen(StoreHostPart *h, int *pbChanged) {
  if (pbChanged) *pbChanged = 0;
  for (int i = 0; i < 2; i++) {
    sqlite3_int64 v = 0;
    int rc;
    if (h->apShadowSv[i] == NULL) continue;
    rc = storeStepInt(h->apShadowSv[i], &v);
    if (rc != SQLITE_OK) return rc;
    if (v != h->aShadowSv[i] && pbChanged) *pbChanged = 1;
    h->aShadowSv[i] = v;
  }
  return SQLITE_OK;
}

/* Reads the root pages of the store's tables and indexes (the nested-scan
** check compares statements' cursors with them). */
static int hostReadRoots(StoreHostPart *h) {
  sqlite3_stmt *pStmt = NULL;
  char *zSql = sqlite3_mprintf(
      "SELECT rootpage FROM \"%w\".sqlite_schema WHERE rootpage > 0 AND (tbl_name IN %s"
      " OR tbl_name LIKE 'fulltext_values%%')", h->zName, zHostNames);
  int rc = zSql ? sqlite3_prepare_v2(h->host, zSql, -1, &pStmt, NULL) : SQLITE_NOMEM;
  int n = 0, nAlloc = 0;
  int *a = NULL;
  sqlite3_free(zSql);
  while (rc == SQLITE_OK && sqlite3_step(pStmt) == SQLITE_ROW) {
    if (n == nAlloc) {
      int *aNew = sqlite3_realloc64(a, sizeof(int) * (size_t)(nAlloc = nAlloc ? 2 * nAlloc : 32));
      if (aNew == NULL) { rc = SQLITE_NOMEM; break; }
      a = aNew;
    }
    a[n++] = sqlite3_column_int(pStmt, 0);
  }
  sqlite3_finalize(pStmt);
  if (rc != SQLITE_OK) { sqlite3_free(a); return rc; }
  sqlite3_free(h->aRoot);
  h->aRoot = a;
  h->nRoot = n;
  h->iRootGen++;
  return SQLITE_OK;
}

/* Looks at the database's store objects: none (ABSENT), all of them in the
** v3 layout (PRESENT), or anything else: refused, never altered. */
int storeHostCheckLayout(StoreHostPart *h, char **pzErr) {
  sqlite3_int64 n = 0;
  char *zSql = sqlite3_mprintf("SELECT count(*) FROM \"%w\".sqlite_schema WHERE name IN %s",
                               h->zName, zHostNames);
  int rc = hostQueryInt(h->host, zSql, &n);
  sqlite3_free(zSql);
  if (rc != SQLITE_OK) goto cleanup;
  if (n == 0) {
    h->eLayout = HOST_LAYOUT_ABSENT;
    goto cleanup;
  }
  for (int i = 0; i < HOST_NTABLE && rc == SQLITE_OK; i++) {
    sqlite3_stmt *pStmt = NULL;
    rc = sqlite3_prepare_v2(h->host,
        "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info(?1, ?2) ORDER BY cid)",
        -1, &pStmt, NULL);
    if (rc == SQLITE_OK) {
      const char *zCols;
      sqlite3_bind_text(pStmt, 1, azHostTable[i][0], -1, SQLITE_STATIC);
      sqlite3_bind_text(pStmt, 2, h->zName, -1, SQLITE_STATIC);
      rc = sqlite3_step(pStmt);
      zCols = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(pStmt, 0) : NULL;
      rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK : sqlite3_errcode(h->host);
      if (rc == SQLITE_OK && (zCols == NULL || strcmp(zCols, azHostTable[i][1]) != 0)) {
        storeErr(pzErr, sqlite3_mprintf(
            "host database %s holds tables named like a Mentat store's but not in its v3 "
            "layout (%s: %s); it is left unchanged", h->zName, azHostTable[i][0],
            zCols ? zCols : "missing"));
        rc = SQLITE_ERROR;
      }
    }
    sqlite3_finalize(pStmt);
  }
  if (rc == SQLITE_OK && n != HOST_NOBJECT) {
    storeErr(pzErr, sqlite3_mprintf(
        "host database %s holds tables named like a Mentat store's but not in its v3 "
        "layout (views missing); it is left unchanged", h->zName));
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK) rc = hostReadRoots(h);
  if (rc == SQLITE_OK) h->eLayout = HOST_LAYOUT_PRESENT;

cleanup:
  if (rc != SQLITE_OK && pzErr && *pzErr == NULL) {
    *pzErr = sqlite3_mprintf("cannot read host database %s: %s", h->zName, sqlite3_errmsg(h->host));
  }
  return rc;
}

/* Does statement pStmt (running on the host) read the store's tables?
** Told by its program (EXPLAIN of its SQL): a cursor opened on one of
** their root pages in the store's database. */
static int hostStmtReads(StoreHostPart *h, sqlite3_stmt *pStmt, int *pbReads) {
  const char *zSql = sqlite3_sql(pStmt);
  sqlite3_stmt *pExplain = NULL;
  char *zExplain;
  int i, rc;
  *pbReads = 0;
  if (zSql == NULL) return SQLITE_OK;
  for (i = 0; i < HOST_SCAN_CACHE; i++) {
    if (h->aScan[i].pStmt == pStmt && h->aScan[i].iGen == h->iRootGen && h->aScan[i].zSql
        && strcmp(h->aScan[i].zSql, zSql) == 0) {
      *pbReads = h->aScan[i].bReads;
      return SQLITE_OK;
    }
  }
  zExplain = sqlite3_mprintf("EXPLAIN %s", zSql);
  if (zExplain == NULL) return SQLITE_NOMEM;
  rc = sqlite3_prepare_v2(h->host, zExplain, -1, &pExplain, NULL);
  sqlite3_free(zExplain);
  if (rc != SQLITE_OK) {
    /* Not preparable here (e.g. a temp object gone): nothing to tell. */
    sqlite3_finalize(pExplain);
    return rc == SQLITE_NOMEM ? rc : SQLITE_OK;
  }
  while (!*pbReads && sqlite3_step(pExplain) == SQLITE_ROW) {
    const char *zOp = (const char *)sqlite3_column_text(pExplain, 1);
    if (zOp && (strcmp(zOp, "OpenRead") == 0 || strcmp(zOp, "OpenWrite") == 0
                || strcmp(zOp, "ReopenIdx") == 0)
        && sqlite3_column_int(pExplain, 4) == h->iDb) {
      int iRoot = sqlite3_column_int(pExplain, 3);
      for (int k = 0; k < h->nRoot; k++) {
        if (h->aRoot[k] == iRoot) { *pbReads = 1; break; }
      }
    }
  }
  sqlite3_finalize(pExplain);
  i = h->iScanNext;
  h->iScanNext = (i + 1) % HOST_SCAN_CACHE;
  sqlite3_free(h->aScan[i].zSql);
  h->aScan[i].zSql = sqlite3_mprintf("%s", zSql);
  h->aScan[i].pStmt = h->aScan[i].zSql ? pStmt : NULL;
  h->aScan[i].iGen = h->iRootGen;
  h->aScan[i].bReads = *pbReads;
  return SQLITE_OK;
}

/* Refuses a write while a statement of the host's reads the store's
** tables: its scan would see the rows change under it. */
int storeHostCheckScans(Store *p, char **pzErr) {
  StoreHostPart *h = p->pHost;
  if (h->eLayout != HOST_LAYOUT_PRESENT) return SQLITE_OK;
  for (sqlite3_stmt *pStmt = sqlite3_next_stmt(h->host, NULL); pStmt;
       pStmt = sqlite3_next_stmt(h->host, pStmt)) {
    int bReads = 0, rc;
    if (!sqlite3_stmt_busy(pStmt)) continue;
    rc = hostStmtReads(h, pStmt, &bReads);
    if (rc != SQLITE_OK) return rc;
    if (bReads) {
      storeErr(pzErr, sqlite3_mprintf("cannot write to host store %s from inside a statement "
                                     "that reads its tables (%.60s); run it on its own",
                                     p->zPath, sqlite3_sql(pStmt)));
      return SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

/* The tables a datom write changes, and the format's own indexes on them
** (the managed ones are listed in mentat_managed_indexes). */
static const char zHostWriteTables[] = "('datoms','timelined_transactions','known_parts')";
static const char zHostFormatIdx[] =
  "('idx_datoms_eavt','idx_datoms_aevt','idx_datoms_avet','idx_datoms_vaet','idx_datoms_fulltext',"
  "'idx_datoms_unique_value','idx_timelined_transactions_timeline','idx_transactions_aevt')";

int storeHostForeign(StoreHostPart *h, sqlite3_int64 iSv, sqlite3_int64 iSvTemp, int *pbForeign) {
  sqlite3_int64 n = 1;
  char *zSql;
  int rc;
  if (h->bForeignKnown && h->aForeignSv[0] == iSv && h->aForeignSv[1] == iSvTemp) {
    *pbForeign = h->bForeign;
    return SQLITE_OK;
  }
  /* Names compared without case, as SQLite resolves them; a temp trigger
  ** may be on a table of any database; an unreadable answer counts as
  ** foreign (the caller then keeps its savepoint). */
  zSql = sqlite3_mprintf(
      "SELECT (SELECT encoding FROM pragma_encoding) IS NOT 'UTF-8'"
      " OR EXISTS (SELECT 1 FROM \"%w\".sqlite_schema WHERE lower(tbl_name) IN %s AND (type = 'trigger'"
      "   OR (type = 'index' AND substr(name, 1, 17) IS NOT 'sqlite_autoindex_' AND name NOT IN %s"
      "   AND name NOT IN (SELECT name FROM \"%w\".mentat_managed_indexes))))"
      " OR EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE type = 'trigger' AND lower(tbl_name) IN %s)"
      " OR EXISTS (SELECT 1 FROM \"%w\".sqlite_schema m, pragma_foreign_key_list(m.name, %Q) f"
      "   WHERE m.type = 'table' AND (lower(f.\"table\") IN %s OR lower(m.name) IN %s))",
      h->zName, zHostWriteTables, zHostFormatIdx, h->zName, zHostWriteTables, h->zName, h->zName,
      zHostWriteTables, zHostWriteTables);
  rc = hostQueryInt(h->host, zSql, &n);
  sqlite3_free(zSql);
  *pbForeign = 1;
  if (rc != SQLITE_OK) return rc;
  h->bForeign = *pbForeign = n != 0;
  h->aForeignSv[0] = iSv;
  h->aForeignSv[1] = iSvTemp;
  h->bForeignKnown = 1;
  return SQLITE_OK;
}
