/*
** store_schema.c — loading a Schema snapshot from a store connection, and
** the fingerprint of the rows it is loaded from.
**
** Takes in a connection to a store file (inside the read transaction the
** caller means); gives out a Schema built by the schema stage's builder,
** or the fingerprint alone; calls SQLite and schema.h.
**
** HOW IT WORKS
** One statement reads the three sources of the snapshot as tagged rows:
** the `idents` mirror (entid <-> keyword, a = :db/ident), the `schema`
** mirror (the datoms of :db/valueType .. :db/fulltext, entids 7..12, for
** attribute entities) and the :db/noHistory datoms (13, kept only in
** `datoms` because the format's mirror stops at 12), and the tuple
** definitions (:db/tupleAttrs, :db/tupleTypes, :db/tupleType, in `datoms`
** only: the Rust engine sees those attributes as bytes). The same rows feed
** the fingerprint: a sum (mod 2^64) of per-row hashes, so it does not
** depend on row order. Revalidation (store_revalidate.c) compares it with
** the published snapshot's after another connection commits and reloads
** only on a change. Which attributes have a managed value index
** (mentat_managed_indexes) is read too, but is not part of the
** fingerprint: an index made by another process is seen at this process's
** next reload; until then queries use the format's indexes, which is
** slower but gives the same rows.
*/
#include <string.h>
#include "store_context.h"

/* Row sources, the first column of the load statement. */
#define SRC_IDENTS    0
#define SRC_SCHEMA    1
#define SRC_NOHISTORY 2
#define SRC_TUPLE     3   /* a = TUPLE_COMPOSITE / _FIXED / _HOMO */

/* The tuple definitions' join runs from the few idents (CROSS JOIN fixes the
** order): left to SQLite, a store's statistics (200k datoms per attribute
** at scale s) made it scan every datom, on every open and revalidation. */
static const char zLoadSql[] =
  "SELECT 0, e, a, v, value_type_tag FROM idents"
  " UNION ALL SELECT 1, e, a, v, value_type_tag FROM schema"
  " UNION ALL SELECT 2, e, a, v, value_type_tag FROM datoms WHERE a = 13"
  " UNION ALL SELECT 3, d.e, CASE i.v WHEN ':db/tupleAttrs' THEN 1 WHEN ':db/tupleTypes' THEN 2"
  " ELSE 3 END, d.v, d.value_type_tag FROM idents i CROSS JOIN datoms d ON d.a = i.e"
  " WHERE i.a = 1 AND i.v IN (':db/tupleAttrs', ':db/tupleTypes', ':db/tupleType')";

static sqlite3_uint64 storeSchemaRowHash(sqlite3_stmt *pStmt) {
  sqlite3_uint64 h = (sqlite3_uint64)sqlite3_column_int64(pStmt, 0);
  h = schemaHashMix(h ^ (sqlite3_uint64)sqlite3_column_int64(pStmt, 1));
  h = schemaHashMix(h ^ (sqlite3_uint64)sqlite3_column_int64(pStmt, 2));
  h = schemaHashMix(h ^ (sqlite3_uint64)sqlite3_column_int64(pStmt, 4));
  switch (sqlite3_column_type(pStmt, 3)) {
    case SQLITE_INTEGER:
      h = schemaHashMix(h ^ (sqlite3_uint64)sqlite3_column_int64(pStmt, 3));
      break;
    case SQLITE_FLOAT: {
      double d = sqlite3_column_double(pStmt, 3);
      sqlite3_uint64 u;
      memcpy(&u, &d, sizeof u);
      h = schemaHashMix(h ^ u ^ 0x5555);
      break;
    }
    case SQLITE_NULL:
      h = schemaHashMix(h ^ 0xaaaa);
      break;
    default: {
      const unsigned char *z = sqlite3_column_blob(pStmt, 3);
      int n = sqlite3_column_bytes(pStmt, 3);
      h = schemaHashMix(h ^ schemaHashBytes(z, n));
      break;
    }
  }
  return h;
}

static void storeSchemaErr(char **pzErr, sqlite3 *db, const char *zWhat) {
  storeErr(pzErr, sqlite3_mprintf("cannot read the store's schema (%s): %s", zWhat,
                                  sqlite3_errmsg(db)));
}

const char *storeSchemaFingerprintSql(void) {
  return zLoadSql;
}

int storeSchemaFingerprintStmt(sqlite3_stmt *pStmt, sqlite3_uint64 *pFp) {
  sqlite3_uint64 fp = 0, n = 0;
  int rc;
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    fp += storeSchemaRowHash(pStmt);
    n++;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  sqlite3_reset(pStmt);
  *pFp = fp + schemaHashMix(n);
  return rc;
}

int storeSchemaFingerprint(sqlite3 *db, sqlite3_uint64 *pFp, char **pzErr) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, zLoadSql, -1, &pStmt, NULL);
  *pFp = 0;
  if (rc == SQLITE_OK) rc = storeSchemaFingerprintStmt(pStmt, pFp);
  if (rc != SQLITE_OK) storeSchemaErr(pzErr, db, "fingerprint");
  sqlite3_finalize(pStmt);
  return rc;
}

/* Gives the builder every row of the load statement and sums their
** hashes into *pFp. Only keyword-valued :db/ident rows name an entity, and
** only the definition attributes of each source count. */
static int storeSchemaReadRows(sqlite3 *db, SchemaBuilder *pB, sqlite3_uint64 *pFp) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_uint64 fp = 0, nRow = 0;
  int rc = sqlite3_prepare_v2(db, zLoadSql, -1, &pStmt, NULL);
  if (rc != SQLITE_OK) goto cleanup;
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    int iSrc = sqlite3_column_int(pStmt, 0);
    sqlite3_int64 e = sqlite3_column_int64(pStmt, 1);
    sqlite3_int64 a = sqlite3_column_int64(pStmt, 2);
    fp += storeSchemaRowHash(pStmt);
    nRow++;
    if (iSrc == SRC_IDENTS) {
      if (a != ENTID_DB_IDENT || sqlite3_column_type(pStmt, 3) != SQLITE_TEXT) continue;
      const char *z = (const char *)sqlite3_column_text(pStmt, 3);
      if (z == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
      rc = schemaBuilderIdent(pB, e, z, sqlite3_column_bytes(pStmt, 3));
    } else if (iSrc == SRC_SCHEMA) {
      if (a < ENTID_DB_VALUETYPE || a > ENTID_DB_FULLTEXT) continue;
      rc = schemaBuilderDef(pB, e, a, sqlite3_column_int64(pStmt, 3));
    } else if (iSrc == SRC_NOHISTORY) {
      rc = schemaBuilderDef(pB, e, ENTID_DB_NOHISTORY, sqlite3_column_int64(pStmt, 3));
    } else {
      /* tuple definitions: keyword tuples are blobs, :db/tupleType text */
      const void *z = sqlite3_column_type(pStmt, 3) == SQLITE_BLOB ? sqlite3_column_blob(pStmt, 3)
                      : (const void *)sqlite3_column_text(pStmt, 3);
      int n = sqlite3_column_bytes(pStmt, 3);
      if (z == NULL && n > 0) { rc = SQLITE_NOMEM; goto cleanup; }
      rc = schemaBuilderTuple(pB, e, (int)a, z, n);
    }
    if (rc != SQLITE_OK) goto cleanup;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
cleanup:
  sqlite3_finalize(pStmt);
  *pFp = fp + schemaHashMix(nRow);
  return rc;
}

/* Tells the builder which attributes the store gave a covering value index
** idx_mentat_avet_<a> (store_tune.c). A store without the table (not v3)
** or the rows has none. */
static int storeSchemaReadValueIndexes(sqlite3 *db, SchemaBuilder *pB) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db,
      "SELECT m.a FROM mentat_managed_indexes m JOIN sqlite_master s ON s.name = m.name"
      " WHERE s.type = 'index' AND m.kind = 'adaptive' AND m.name = 'idx_mentat_avet_' || m.a",
      -1, &pStmt, NULL);
  if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_OK;
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
    rc = schemaBuilderValueIndex(pB, sqlite3_column_int64(pStmt, 0));
    if (rc != SQLITE_OK) break;
  }
  sqlite3_finalize(pStmt);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int storeSchemaLoad(sqlite3 *db, Schema **ppOut, char **pzErr) {
  SchemaBuilder *pB = NULL;
  sqlite3_uint64 fp = 0;
  int rc;

  *ppOut = NULL;
  rc = schemaBuilderNew(&pB);
  if (rc != SQLITE_OK) goto cleanup;
  rc = storeSchemaReadRows(db, pB, &fp);
  if (rc == SQLITE_OK) rc = storeSchemaReadValueIndexes(db, pB);
  if (rc != SQLITE_OK) {
    if (rc != SQLITE_NOMEM) storeSchemaErr(pzErr, db, "load");
    schemaBuilderFree(pB);
    goto cleanup;
  }
  rc = schemaBuild(pB, fp, ppOut);      /* frees pB */

cleanup:
  if (rc == SQLITE_NOMEM) storeErr(pzErr, sqlite3_mprintf("out of memory loading the schema"));
  return rc;
}
