/*
** store_file.c — one store file: opening a connection, the connection settings,
** creating the Mentat v3 layout with its bootstrap transaction, and
** upgrading version-1 and -2 stores in place (format/mentat-v3.md).
**
** Takes in a path (or a bare connection, storeCreateLayout); gives out a
** configured connection on a v3 store; calls the VFS (store_vfs.c), the
** settings (config.h) and SQLite.
**
** HOW IT WORKS
** storeOpenDb() opens a connection through the host's SQLite. For the first
** connection of a store (bValidate) it reads `PRAGMA user_version` and the
** number of schema objects BEFORE changing any setting, so a foreign
** database is refused untouched. Then storeConfigure() applies the
** settings (WAL needs to be on before the layout is written, and cannot
** change inside a transaction). An empty file gets storeCreateLayout(); a
** v1/v2 file gets storeUpgrade(). Both run in one BEGIN EXCLUSIVE and look
** at the version again inside it, so two processes racing to create or
** upgrade the same file do the work exactly once.
**
** The DDL below is the format document's text, statement for statement;
** stores must move between this extension and the Rust engine.
*/
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "config.h"
#include "store_context.h"

/* ------------------------------------------------------------------ DDL */

/* Version 1: everything up to the format's "-- version 2" line. */
static const char *const azDdlV1[] = {
  "CREATE TABLE datoms (e INTEGER NOT NULL, a SMALLINT NOT NULL, v BLOB NOT NULL, tx INTEGER NOT NULL,\n"
  "  value_type_tag SMALLINT NOT NULL, index_avet TINYINT NOT NULL DEFAULT 0,\n"
  "  index_vaet TINYINT NOT NULL DEFAULT 0, index_fulltext TINYINT NOT NULL DEFAULT 0,\n"
  "  unique_value TINYINT NOT NULL DEFAULT 0)",
  "CREATE UNIQUE INDEX idx_datoms_eavt ON datoms (e, a, value_type_tag, v)",
  "CREATE UNIQUE INDEX idx_datoms_aevt ON datoms (a, e, value_type_tag, v)",
  "CREATE UNIQUE INDEX idx_datoms_avet ON datoms (a, value_type_tag, v, e) WHERE index_avet IS NOT 0",
  "CREATE UNIQUE INDEX idx_datoms_vaet ON datoms (v, a, e) WHERE index_vaet IS NOT 0",
  "CREATE INDEX idx_datoms_fulltext ON datoms (value_type_tag, v, a, e) WHERE index_fulltext IS NOT 0",
  "CREATE UNIQUE INDEX idx_datoms_unique_value ON datoms (a, value_type_tag, v) WHERE unique_value IS NOT 0",
  "CREATE TABLE timelined_transactions (e INTEGER NOT NULL, a SMALLINT NOT NULL, v BLOB NOT NULL,\n"
  "  tx INTEGER NOT NULL, added TINYINT NOT NULL DEFAULT 1, value_type_tag SMALLINT NOT NULL,\n"
  "  timeline TINYINT NOT NULL DEFAULT 0)",
  "CREATE INDEX idx_timelined_transactions_timeline ON timelined_transactions (timeline)",
  "CREATE VIEW transactions AS SELECT e, a, v, value_type_tag, tx, added FROM timelined_transactions WHERE timeline IS 0",
  "CREATE VIRTUAL TABLE fulltext_values USING FTS4 (text NOT NULL, searchid INT, tokenize=unicode61 \"remove_diacritics=0\")",
  "CREATE VIEW fulltext_values_view AS SELECT * FROM fulltext_values",
  "CREATE TRIGGER replace_fulltext_searchid INSTEAD OF INSERT ON fulltext_values_view\n"
  "  WHEN EXISTS (SELECT 1 FROM fulltext_values WHERE text = new.text)\n"
  "  BEGIN UPDATE fulltext_values SET searchid = new.searchid WHERE text = new.text; END",
  "CREATE TRIGGER insert_fulltext_searchid INSTEAD OF INSERT ON fulltext_values_view\n"
  "  WHEN NOT EXISTS (SELECT 1 FROM fulltext_values WHERE text = new.text)\n"
  "  BEGIN INSERT INTO fulltext_values (text, searchid) VALUES (new.text, new.searchid); END",
  "CREATE VIEW fulltext_datoms AS\n"
  "  SELECT e, a, fulltext_values.text AS v, tx, value_type_tag, index_avet, index_vaet, index_fulltext, unique_value\n"
  "  FROM datoms, fulltext_values\n"
  "  WHERE datoms.index_fulltext IS NOT 0 AND datoms.v = fulltext_values.rowid",
  "CREATE VIEW all_datoms AS\n"
  "  SELECT e, a, v, tx, value_type_tag, index_avet, index_vaet, index_fulltext, unique_value FROM datoms WHERE index_fulltext IS 0\n"
  "  UNION ALL\n"
  "  SELECT e, a, v, tx, value_type_tag, index_avet, index_vaet, index_fulltext, unique_value FROM fulltext_datoms",
  "CREATE TABLE idents (e INTEGER NOT NULL, a SMALLINT NOT NULL, v BLOB NOT NULL, value_type_tag SMALLINT NOT NULL)",
  "CREATE INDEX idx_idents_unique ON idents (e, a, v, value_type_tag)",
  "CREATE TABLE schema (e INTEGER NOT NULL, a SMALLINT NOT NULL, v BLOB NOT NULL, value_type_tag SMALLINT NOT NULL)",
  "CREATE INDEX idx_schema_unique ON schema (e, a, v, value_type_tag)",
  "CREATE TABLE known_parts (part TEXT NOT NULL PRIMARY KEY, start INTEGER NOT NULL, end INTEGER NOT NULL, allow_excision SMALLINT NOT NULL)",
  NULL
};

/* The format's "-- version 2" additions. */
static const char *const azDdlV2[] = {
  "CREATE INDEX idx_transactions_aevt ON timelined_transactions (a, e, value_type_tag, v, added, tx, timeline) WHERE timeline IS 0",
  "ALTER TABLE known_parts ADD COLUMN idx INTEGER",
  NULL
};

/* The format's "-- version 3" addition. */
static const char *const azDdlV3[] = {
  "CREATE TABLE mentat_managed_indexes (name TEXT PRIMARY KEY, a INTEGER NOT NULL, created INTEGER NOT NULL,\n"
  "  last_used INTEGER NOT NULL, kind TEXT NOT NULL DEFAULT 'adaptive')",
  NULL
};

/* The `parts` view: per partition, from the log, the smallest entid as
** start and the largest + 1 as idx. Only version-1 stores need it (they
** kept no idx); a partition with no entity in the log has no row. */
static const char zPartsView[] =
  "CREATE VIEW IF NOT EXISTS parts AS"
  " SELECT known_parts.part AS part, min(timelined_transactions.e) AS start,"
  " max(timelined_transactions.e) + 1 AS idx"
  " FROM known_parts JOIN timelined_transactions"
  " ON timelined_transactions.e BETWEEN known_parts.start AND known_parts.\"end\""
  " GROUP BY known_parts.part";

/* ------------------------------------------------------------ bootstrap */

/* Entids 1..40 (format/mentat-v3.md "Bootstrap"); index = entid - 1. */
static const char *const azBootIdent[40] = {
  ":db/ident", ":db.part/db", ":db/txInstant", ":db.install/partition",
  ":db.install/valueType", ":db.install/attribute", ":db/valueType",
  ":db/cardinality", ":db/unique", ":db/isComponent", ":db/index",
  ":db/fulltext", ":db/noHistory", ":db/add", ":db/retract", ":db.part/user",
  ":db.part/tx", ":db/excise", ":db.excise/attrs", ":db.excise/beforeT",
  ":db.excise/before", ":db.alter/attribute", ":db.type/ref",
  ":db.type/keyword", ":db.type/long", ":db.type/double", ":db.type/string",
  ":db.type/uuid", ":db.type/uri", ":db.type/boolean", ":db.type/instant",
  ":db.type/bytes", ":db.cardinality/one", ":db.cardinality/many",
  ":db.unique/value", ":db.unique/identity", ":db/doc", ":db.schema/version",
  ":db.schema/attribute", ":db.schema/core"
};

/* The 16 core attributes' definitions: entid, :db.type/... entid, cardinality
** entid, :db/index true?, :db/unique entid (0 = none). */
typedef struct BootAttr {
  int e, eType, eCard, bIndex, eUnique;
} BootAttr;

static const BootAttr aBootAttr[16] = {
  { ENTID_DB_IDENT,              24, 33, 1, 36 },  /* keyword one, index, identity */
  { ENTID_DB_INSTALL_PARTITION,  23, 34, 0, 0 },   /* ref many */
  { ENTID_DB_INSTALL_VALUETYPE,  23, 34, 0, 0 },
  { ENTID_DB_INSTALL_ATTRIBUTE,  23, 34, 0, 0 },
  { ENTID_DB_TXINSTANT,          31, 33, 1, 0 },   /* instant one, index */
  { ENTID_DB_VALUETYPE,          23, 33, 0, 0 },   /* ref one */
  { ENTID_DB_CARDINALITY,        23, 33, 0, 0 },
  { ENTID_DB_UNIQUE,             23, 33, 0, 0 },
  { ENTID_DB_DOC,                27, 33, 0, 0 },   /* string one */
  { ENTID_DB_ISCOMPONENT,        30, 33, 0, 0 },   /* boolean one */
  { ENTID_DB_INDEX,              30, 33, 0, 0 },
  { ENTID_DB_FULLTEXT,           30, 33, 0, 0 },
  { ENTID_DB_NOHISTORY,          30, 33, 0, 0 },
  { ENTID_DB_ALTER_ATTRIBUTE,    23, 34, 0, 0 },   /* ref many */
  { ENTID_DB_SCHEMA_VERSION,     25, 33, 0, 0 },   /* long one */
  { ENTID_DB_SCHEMA_ATTRIBUTE,   23, 34, 1, 35 },  /* ref many, index, unique value */
};

static const BootAttr *storeBootAttr(int a) {
  for (int i = 0; i < 16; i++) {
    if (aBootAttr[i].e == a) return &aBootAttr[i];
  }
  return NULL;
}

/* Value tag of a :db.type/... entid (format "Value encoding"). */
static int storeTypeTag(int eType) {
  switch (eType) {
    case 23: return 0;   /* ref */
    case 30: return 1;   /* boolean */
    case 31: return 4;   /* instant */
    case 25: case 26: return 5;  /* long, double */
    case 27: return 10;  /* string */
    case 28: return 11;  /* uuid */
    case 24: return 13;  /* keyword */
    default: return 15;  /* bytes */
  }
}

/* ---------------------------------------------------------------- utils */

/* zDdl with the name of the object it creates or alters qualified by
** schema zSchema ("CREATE TABLE datoms" -> "CREATE TABLE \"aux\".datoms"),
** for host stores (store_host.c); zSchema NULL: a copy. SQLite keeps the
** text without the qualifier in sqlite_schema, so the stored DDL is the
** format's either way. NULL on OOM. */
static char *storeQualify(const char *zDdl, const char *zSchema) {
  static const char *const azHead[] = {
    "CREATE VIEW IF NOT EXISTS ", "CREATE UNIQUE INDEX ", "CREATE INDEX ", "CREATE VIEW ",
    "CREATE VIRTUAL TABLE ", "CREATE TRIGGER ", "CREATE TABLE ", "ALTER TABLE ", NULL
  };
  if (zSchema) {
    for (int i = 0; azHead[i]; i++) {
      int n = (int)strlen(azHead[i]);
      if (strncmp(zDdl, azHead[i], (size_t)n) == 0) {
        return sqlite3_mprintf("%.*s\"%w\".%s", n, zDdl, zSchema, zDdl + n);
      }
    }
  }
  return sqlite3_mprintf("%s", zDdl);
}

/* Runs a NULL-terminated list of statements, each qualified by zSchema
** (NULL: as written). */
static int storeExecList(sqlite3 *db, const char *const *az, const char *zSchema, char **pzErr) {
  for (int i = 0; az[i]; i++) {
    char *zSql = storeQualify(az[i], zSchema);
    int rc = zSql ? sqlite3_exec(db, zSql, NULL, NULL, NULL) : SQLITE_NOMEM;
    sqlite3_free(zSql);
    if (rc != SQLITE_OK) {
      storeErr(pzErr, sqlite3_mprintf("cannot create the store layout: %s", sqlite3_errmsg(db)));
      return rc;
    }
  }
  return SQLITE_OK;
}

/* One integer from a one-row statement (0 when no row). */
static int storeQueryInt(sqlite3 *db, const char *zSql, sqlite3_int64 *piOut) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL);
  *piOut = 0;
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(pStmt);
    if (rc == SQLITE_ROW) *piOut = sqlite3_column_int64(pStmt, 0);
    rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK : sqlite3_errcode(db);
  }
  sqlite3_finalize(pStmt);
  return rc;
}

/* ------------------------------------------------------------ settings */

static int (*gConnHook)(sqlite3 *db) = NULL;

void storeSetConnHook(int (*xHook)(sqlite3 *db)) {
  gConnHook = xHook;
}

int storeConfigure(sqlite3 *db, int bMemory, char **pzErr) {
  int rc;
  char *zSql = NULL;
  int msBusy = configBusyTimeoutMs();

  /* Before WAL: switching the journal mode may need to wait for a lock. */
  sqlite3_busy_timeout(db, msBusy);
  /* Also before WAL: the switch of a new file is a rollback-journal write
  ** and syncs at the connection's level, so it must already be the
  ** configured one. An explicit level stays through the switch (SQLite
  ** applies its WAL default level only to connections that never set one),
  ** so a FULL store stays FULL. */
  zSql = sqlite3_mprintf("PRAGMA synchronous=%s", configSynchronous());
  if (zSql == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  rc = sqlite3_exec(db, zSql, NULL, NULL, NULL);
  sqlite3_free(zSql);
  zSql = NULL;
  if (rc != SQLITE_OK) goto cleanup;
  if (!bMemory) {
    sqlite3_stmt *pStmt = NULL;
    rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &pStmt, NULL);
    if (rc == SQLITE_OK) {
      /* Switching a new file to WAL upgrades a shared lock to exclusive;
      ** SQLite answers BUSY at once there, without the busy handler (it
      ** would deadlock with another connection doing the same), so
      ** connections opening a new store together retry here instead. */
      for (int nWait = 0; nWait < msBusy; nWait += 10) {
        rc = sqlite3_step(pStmt);
        if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
        sqlite3_reset(pStmt);
        sqlite3_sleep(10);
      }
      if (rc == SQLITE_ROW) {
        const char *zMode = (const char *)sqlite3_column_text(pStmt, 0);
        rc = (zMode && strcasecmp(zMode, "wal") == 0) ? SQLITE_OK : SQLITE_ERROR;
        if (rc != SQLITE_OK) {
          storeErr(pzErr, sqlite3_mprintf("cannot switch the store to WAL mode (journal_mode is %s)",
                                          zMode ? zMode : "unknown"));
        }
      } else {
        rc = sqlite3_errcode(db);
      }
    }
    sqlite3_finalize(pStmt);
    if (rc != SQLITE_OK) goto cleanup;
    /* The format's 1 GiB map by default: reads that touch many pages are
    ** faster mapped, and they dominate; a reader that sees frequent
    ** foreign commits switches its map off (store_reader.c). */
    zSql = sqlite3_mprintf("PRAGMA mmap_size=%lld", configMmapSize());
    if (zSql == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
    rc = sqlite3_exec(db, zSql, NULL, NULL, NULL);
    sqlite3_free(zSql);
    zSql = NULL;
    if (rc != SQLITE_OK) goto cleanup;
  }
  zSql = sqlite3_mprintf(
      "PRAGMA wal_autocheckpoint=32; PRAGMA journal_size_limit=3145728;"
      "PRAGMA foreign_keys=ON; PRAGMA temp_store=FILE;");
  if (zSql == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  rc = sqlite3_exec(db, zSql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) goto cleanup;
  if (gConnHook) {
    rc = gConnHook(db);
    if (rc != SQLITE_OK) {
      storeErr(pzErr, sqlite3_mprintf("cannot register the store's SQL functions: %s",
                                      sqlite3_errmsg(db)));
      goto cleanup;
    }
  }

cleanup:
  if (rc != SQLITE_OK && pzErr && *pzErr == NULL) {
    *pzErr = sqlite3_mprintf("cannot configure the store connection: %s", sqlite3_errmsg(db));
  }
  sqlite3_free(zSql);
  return rc;
}

/* ------------------------------------------------------------- creation */

/* Inserts one bootstrap datom into `datoms` and the log. pIns has 7
** parameters: e, a, v, tag, avet, vaet, unique_value; pLog e, a, v, tag. */
static int storeBootDatom(sqlite3_stmt *pIns, sqlite3_stmt *pLog,
                          sqlite3_int64 e, int a, int bText, const char *zV,
                          sqlite3_int64 iV) {
  const BootAttr *pAttr = storeBootAttr(a);
  int tag = storeTypeTag(pAttr->eType);
  sqlite3_stmt *aStmt[2] = { pIns, pLog };
  for (int k = 0; k < 2; k++) {
    sqlite3_stmt *pStmt = aStmt[k];
    sqlite3_bind_int64(pStmt, 1, e);
    sqlite3_bind_int(pStmt, 2, a);
    if (bText) sqlite3_bind_text(pStmt, 3, zV, -1, SQLITE_STATIC);
    else sqlite3_bind_int64(pStmt, 3, iV);
    sqlite3_bind_int(pStmt, 4, tag);
    if (k == 0) {
      sqlite3_bind_int(pStmt, 5, pAttr->bIndex);
      sqlite3_bind_int(pStmt, 6, pAttr->eType == ENTID_DB_TYPE_REF);
      sqlite3_bind_int(pStmt, 7, pAttr->eUnique != 0);
    }
    int rc = sqlite3_step(pStmt);
    sqlite3_reset(pStmt);
    if (rc != SQLITE_DONE) return rc == SQLITE_ROW ? SQLITE_ERROR : rc;
  }
  return SQLITE_OK;
}

/* The bootstrap transaction (tx 268435456) and the mirrors. */
static int storeBootstrap(sqlite3 *db, char **pzErr) {
  sqlite3_stmt *pIns = NULL, *pLog = NULL;
  const sqlite3_int64 tx = PART_TX_START;
  char *zSql = NULL;
  int rc;

  zSql = sqlite3_mprintf(
      "INSERT INTO datoms (e, a, v, tx, value_type_tag, index_avet, index_vaet,"
      " index_fulltext, unique_value) VALUES (?1, ?2, ?3, %lld, ?4, ?5, ?6, 0, ?7)", tx);
  if (zSql == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  rc = sqlite3_prepare_v2(db, zSql, -1, &pIns, NULL);
  if (rc != SQLITE_OK) goto cleanup;
  sqlite3_free(zSql);
  zSql = sqlite3_mprintf(
      "INSERT INTO timelined_transactions (e, a, v, tx, added, value_type_tag, timeline)"
      " VALUES (?1, ?2, ?3, %lld, 1, ?4, 0)", tx);
  if (zSql == NULL) { rc = SQLITE_NOMEM; goto cleanup; }
  rc = sqlite3_prepare_v2(db, zSql, -1, &pLog, NULL);
  if (rc != SQLITE_OK) goto cleanup;

  /* [e :db/ident kw] for the 40 idents. */
  for (int e = 1; e <= 40 && rc == SQLITE_OK; e++) {
    rc = storeBootDatom(pIns, pLog, e, ENTID_DB_IDENT, 1, azBootIdent[e - 1], 0);
  }
  /* The core attributes' definitions. */
  for (int i = 0; i < 16 && rc == SQLITE_OK; i++) {
    const BootAttr *pA = &aBootAttr[i];
    rc = storeBootDatom(pIns, pLog, pA->e, ENTID_DB_VALUETYPE, 0, NULL, pA->eType);
    if (rc == SQLITE_OK) rc = storeBootDatom(pIns, pLog, pA->e, ENTID_DB_CARDINALITY, 0, NULL, pA->eCard);
    if (rc == SQLITE_OK && pA->bIndex) rc = storeBootDatom(pIns, pLog, pA->e, ENTID_DB_INDEX, 0, NULL, 1);
    if (rc == SQLITE_OK && pA->eUnique) rc = storeBootDatom(pIns, pLog, pA->e, ENTID_DB_UNIQUE, 0, NULL, pA->eUnique);
  }
  /* [:db.schema/core :db.schema/attribute X] and the schema version. */
  for (int i = 0; i < 16 && rc == SQLITE_OK; i++) {
    rc = storeBootDatom(pIns, pLog, ENTID_DB_SCHEMA_CORE, ENTID_DB_SCHEMA_ATTRIBUTE, 0, NULL, aBootAttr[i].e);
  }
  if (rc == SQLITE_OK) {
    rc = storeBootDatom(pIns, pLog, ENTID_DB_SCHEMA_CORE, ENTID_DB_SCHEMA_VERSION, 0, NULL, 1);
  }
  if (rc == SQLITE_OK) {
    rc = storeBootDatom(pIns, pLog, tx, ENTID_DB_TXINSTANT, 0, NULL, configWallUs());
  }
  if (rc != SQLITE_OK) goto cleanup;

  /* Mirrors: every :db/ident datom; datoms of attributes 7..12 of attribute
  ** entities (all of them in the bootstrap). */
  rc = sqlite3_exec(db,
      "INSERT INTO idents (e, a, v, value_type_tag)"
      " SELECT e, a, v, value_type_tag FROM datoms WHERE a = 1;"
      "INSERT INTO schema (e, a, v, value_type_tag)"
      " SELECT e, a, v, value_type_tag FROM datoms WHERE a BETWEEN 7 AND 12",
      NULL, NULL, NULL);

cleanup:
  if (rc != SQLITE_OK) {
    storeErr(pzErr, sqlite3_mprintf("cannot write the bootstrap transaction: %s",
                                    rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(db)));
  }
  sqlite3_free(zSql);
  sqlite3_finalize(pIns);
  sqlite3_finalize(pLog);
  return rc;
}

/* The layout's steps, run inside the caller's transaction. zSchema: the
** database of a host store (store_host.c), NULL for a store file. */
static int storeCreateInTx(sqlite3 *db, const char *zSchema, char **pzErr) {
  char *zSql = NULL;
  int rc = storeExecList(db, azDdlV1, zSchema, pzErr);
  if (rc == SQLITE_OK) rc = storeExecList(db, azDdlV2, zSchema, pzErr);
  if (rc == SQLITE_OK) rc = storeExecList(db, azDdlV3, zSchema, pzErr);
  if (rc != SQLITE_OK) return rc;
  /* A host database keeps a user_version of its own: only an unset one
  ** becomes the format's 3 (then the file is a store for the Rust engine). */
  if (zSchema == NULL) {
    rc = sqlite3_exec(db, "PRAGMA user_version = 3", NULL, NULL, NULL);
  } else {
    sqlite3_int64 v = 0;
    zSql = sqlite3_mprintf("PRAGMA \"%w\".user_version", zSchema);
    rc = zSql ? storeQueryInt(db, zSql, &v) : SQLITE_NOMEM;
    sqlite3_free(zSql);
    zSql = NULL;
    if (rc == SQLITE_OK && v == 0) {
      zSql = sqlite3_mprintf("PRAGMA \"%w\".user_version = 3", zSchema);
      rc = zSql ? sqlite3_exec(db, zSql, NULL, NULL, NULL) : SQLITE_NOMEM;
    }
    sqlite3_free(zSql);
  }
  if (rc == SQLITE_OK) rc = sqlite3_exec(db,
      "INSERT INTO known_parts (part, start, end, allow_excision, idx) VALUES"
      " (':db.part/db', 0, 65535, 0, 41),"
      " (':db.part/user', 65536, 268435455, 1, 65536),"
      " (':db.part/tx', 268435456, 9223372036854775807, 0, 268435457)",
      NULL, NULL, NULL);
  if (rc == SQLITE_OK) {
    zSql = storeQualify(zPartsView, zSchema);
    rc = zSql ? sqlite3_exec(db, zSql, NULL, NULL, NULL) : SQLITE_NOMEM;
    sqlite3_free(zSql);
  }
  if (rc != SQLITE_OK) {
    storeErr(pzErr, sqlite3_mprintf("cannot create the store layout: %s", sqlite3_errmsg(db)));
    return rc;
  }
  return storeBootstrap(db, pzErr);
}

/* Reads the version and whether the database holds any schema object, in
** one statement so both come from one snapshot: read apart, another
** process's layout commit could land between them (version 0, objects
** present) and a new store be refused as foreign. */
static int storeReadVersion(sqlite3 *db, int *piVersion, int *pbEmpty) {
  sqlite3_int64 v = 0;
  int rc = storeQueryInt(db,
      "SELECT (SELECT user_version FROM pragma_user_version) * 2"
      " + ((SELECT count(*) FROM sqlite_master) > 0)", &v);
  *piVersion = (int)(v >> 1);
  *pbEmpty = (v & 1) == 0;
  return rc;
}

static char *storeForeignMsg(const char *zPath, int iVersion) {
  return sqlite3_mprintf("%s is not a Mentat store (user_version %d)",
                         zPath[0] ? zPath : "in-memory database", iVersion);
}

int storeCreateLayoutIn(sqlite3 *db, const char *zSchema, char **pzErr) {
  return storeCreateInTx(db, zSchema, pzErr);
}

int storeCreateLayout(sqlite3 *db, char **pzErr) {
  int iVersion = 0, bEmpty = 0;
  int rc = sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    storeErr(pzErr, sqlite3_mprintf("cannot create the store: %s", sqlite3_errmsg(db)));
    return rc;
  }
  /* Another process may have created it since the caller looked. */
  rc = storeReadVersion(db, &iVersion, &bEmpty);
  if (rc != SQLITE_OK) {
    storeErr(pzErr, sqlite3_mprintf("cannot create the store: %s", sqlite3_errmsg(db)));
  } else if (iVersion == 3 && !bEmpty) {
    /* Done by someone else. */
  } else if (iVersion != 0 || !bEmpty) {
    const char *zFile = sqlite3_db_filename(db, "main");
    storeErr(pzErr, storeForeignMsg(zFile ? zFile : "", iVersion));
    rc = SQLITE_ERROR;
  } else {
    rc = storeCreateInTx(db, NULL, pzErr);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      storeErr(pzErr, sqlite3_mprintf("cannot create the store: %s", sqlite3_errmsg(db)));
    }
  }
  if (rc != SQLITE_OK && sqlite3_get_autocommit(db) == 0) {
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  }
  return rc;
}

/* -------------------------------------------------------------- upgrade */

/* Version 3's per-attribute value indexes for the attributes a v1/v2 store
** already has: entid >= 65536, not fulltext, and :db/unique or an indexed
** ref (format "Per-attribute value indexes"). */
static int storeUpgradeAutoIndexes(sqlite3 *db) {
  sqlite3_stmt *pSel = NULL, *pRec = NULL;
  int rc = sqlite3_prepare_v2(db,
      "SELECT DISTINCT s.e FROM schema s WHERE s.e >= 65536"
      " AND (s.a = 9 OR (s.a = 11 AND s.v = 1 AND EXISTS"
      "   (SELECT 1 FROM schema t WHERE t.e = s.e AND t.a = 7 AND t.v = 23)))"
      " AND NOT EXISTS (SELECT 1 FROM schema f WHERE f.e = s.e AND f.a = 12 AND f.v = 1)",
      -1, &pSel, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v2(db,
        "INSERT OR IGNORE INTO mentat_managed_indexes (name, a, created, last_used, kind)"
        " VALUES (?1, ?2, ?3, ?3, 'schema')", -1, &pRec, NULL);
  }
  while (rc == SQLITE_OK && sqlite3_step(pSel) == SQLITE_ROW) {
    sqlite3_int64 a = sqlite3_column_int64(pSel, 0);
    /* The entid is a schema constant, inlined so the partial index matches
    ** the SQL that names it. */
    char *zSql = sqlite3_mprintf(
        "CREATE INDEX IF NOT EXISTS idx_auto_avet_%lld ON datoms (a, v, e) WHERE a = %lld", a, a);
    char *zName = sqlite3_mprintf("idx_auto_avet_%lld", a);
    if (zSql == NULL || zName == NULL) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, zSql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
      sqlite3_bind_text(pRec, 1, zName, -1, SQLITE_STATIC);
      sqlite3_bind_int64(pRec, 2, a);
      sqlite3_bind_int64(pRec, 3, configWallUs() / 1000000);
      rc = sqlite3_step(pRec) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
      sqlite3_reset(pRec);
    }
    sqlite3_free(zSql);
    sqlite3_free(zName);
  }
  if (rc == SQLITE_OK) {
    int rc2 = sqlite3_reset(pSel);
    if (rc2 != SQLITE_OK) rc = rc2;
  }
  sqlite3_finalize(pSel);
  sqlite3_finalize(pRec);
  return rc;
}

/* Upgrades a v1 or v2 store to v3 in one EXCLUSIVE transaction. */
static int storeUpgrade(sqlite3 *db, const char *zPath, char **pzErr) {
  int iVersion = 0, bEmpty = 0;
  int rc = sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = storeReadVersion(db, &iVersion, &bEmpty);
  if (rc != SQLITE_OK) {
    storeErr(pzErr, sqlite3_mprintf("cannot upgrade store %s: %s", zPath, sqlite3_errmsg(db)));
    goto cleanup;
  }
  if (iVersion == 1) {
    rc = storeExecList(db, azDdlV2, NULL, pzErr);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, zPartsView, NULL, NULL, NULL);
    /* Version 1 kept no partition marks: take them from the log. */
    if (rc == SQLITE_OK) {
      rc = sqlite3_exec(db,
          "UPDATE known_parts SET idx = coalesce((SELECT max(parts.idx, known_parts.start)"
          " FROM parts WHERE parts.part = known_parts.part), known_parts.start)",
          NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK) iVersion = 2;
  }
  if (rc == SQLITE_OK && iVersion == 2) {
    rc = storeExecList(db, azDdlV3, NULL, pzErr);
    if (rc == SQLITE_OK) rc = storeUpgradeAutoIndexes(db);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "PRAGMA user_version = 3", NULL, NULL, NULL);
    if (rc == SQLITE_OK) iVersion = 3;
  }
  if (rc == SQLITE_OK && iVersion != 3) {
    storeErr(pzErr, storeForeignMsg(zPath, iVersion));
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK && pzErr && *pzErr == NULL) {
    *pzErr = sqlite3_mprintf("cannot upgrade store %s: %s", zPath, sqlite3_errmsg(db));
  }
cleanup:
  if (rc != SQLITE_OK && sqlite3_get_autocommit(db) == 0) {
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  }
  return rc;
}

/* ---------------------------------------------------------------- open */

int storeOpenDb(const char *zPath, int bValidate, sqlite3 **pDb, char **pzErr) {
  sqlite3 *db = NULL;
  int bMemory = (zPath[0] == 0);
  int iVersion = 0, bEmpty = 1;
  int rc;

  *pDb = NULL;
  /* NOMUTEX: a connection is used by one caller at a time (checked out
  ** from the store's pool), so SQLite's per-connection mutex is not needed. */
  rc = sqlite3_open_v2(bMemory ? ":memory:" : zPath, &db,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                       bMemory ? NULL : storeVfs());
  if (rc != SQLITE_OK) {
    storeErr(pzErr, db ? storeOpenErrMsg(zPath, db)
                       : sqlite3_mprintf("cannot open store %s: out of memory", zPath));
    goto cleanup;
  }
  sqlite3_busy_timeout(db, configBusyTimeoutMs());

  if (bValidate) {
    /* Look before changing anything: a foreign database stays untouched. */
    rc = storeReadVersion(db, &iVersion, &bEmpty);
    if (rc != SQLITE_OK) {
      storeErr(pzErr, storeOpenErrMsg(zPath, db));
      goto cleanup;
    }
    if (iVersion < 0 || iVersion > 3 || (iVersion == 0 && !bEmpty)) {
      storeErr(pzErr, storeForeignMsg(zPath, iVersion));
      rc = SQLITE_ERROR;
      goto cleanup;
    }
  }
  rc = storeConfigure(db, bMemory, pzErr);
  if (rc != SQLITE_OK) goto cleanup;
  if (bValidate) {
    if (iVersion == 0) rc = storeCreateLayout(db, pzErr);
    else if (iVersion < 3) rc = storeUpgrade(db, zPath, pzErr);
  }

cleanup:
  if (rc != SQLITE_OK) {
    if (pzErr && *pzErr == NULL) {
      *pzErr = db ? storeOpenErrMsg(zPath, db)
             : sqlite3_mprintf("cannot open store %s: out of memory", zPath);
    }
    sqlite3_close_v2(db);
    db = NULL;
  }
  *pDb = db;
  return rc;
}
