/*
** test_schema.c — the Schema snapshot: what schemaLoad reads from a
** bootstrapped store (format/mentat-v3.md), lookups, flags, fingerprints.
** Expected values are taken from the format document by hand.
*/
#include "testutil.h"
#include "schema.h"
#include "store.h"

/* A bootstrapped store in a private in-memory database. */
static sqlite3 *openBootstrapped(void) {
  sqlite3 *db = NULL;
  char *zErr = NULL;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  int rc = storeCreateLayout(db, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "layout: %s", zErr ? zErr : "?");
  sqlite3_free(zErr);
  return db;
}

static Schema *load(sqlite3 *db) {
  Schema *p = NULL;
  char *zErr = NULL;
  int rc = schemaLoad(db, &p, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "schemaLoad: %s", zErr ? zErr : "?");
  ck_assert_ptr_nonnull(p);
  sqlite3_free(zErr);
  return p;
}

static void exec(sqlite3 *db, const char *zSql) {
  char *zErr = NULL;
  int rc = sqlite3_exec(db, zSql, NULL, NULL, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "%s: %s", zSql, zErr ? zErr : "?");
}

/* The 40 bootstrap idents, from the format's list. */
static const struct { const char *zKw; sqlite3_int64 e; } aIdent[] = {
  {":db/ident", 1}, {":db.part/db", 2}, {":db/txInstant", 3},
  {":db.install/partition", 4}, {":db.install/valueType", 5},
  {":db.install/attribute", 6}, {":db/valueType", 7}, {":db/cardinality", 8},
  {":db/unique", 9}, {":db/isComponent", 10}, {":db/index", 11},
  {":db/fulltext", 12}, {":db/noHistory", 13}, {":db/add", 14},
  {":db/retract", 15}, {":db.part/user", 16}, {":db.part/tx", 17},
  {":db/excise", 18}, {":db.excise/attrs", 19}, {":db.excise/beforeT", 20},
  {":db.excise/before", 21}, {":db.alter/attribute", 22}, {":db.type/ref", 23},
  {":db.type/keyword", 24}, {":db.type/long", 25}, {":db.type/double", 26},
  {":db.type/string", 27}, {":db.type/uuid", 28}, {":db.type/uri", 29},
  {":db.type/boolean", 30}, {":db.type/instant", 31}, {":db.type/bytes", 32},
  {":db.cardinality/one", 33}, {":db.cardinality/many", 34},
  {":db.unique/value", 35}, {":db.unique/identity", 36}, {":db/doc", 37},
  {":db.schema/version", 38}, {":db.schema/attribute", 39}, {":db.schema/core", 40},
};

START_TEST(test_idents_both_ways) {
  sqlite3 *db = openBootstrapped();
  Schema *p = load(db);
  for (size_t i = 0; i < sizeof aIdent / sizeof aIdent[0]; i++) {
    ck_assert_int_eq(schemaEntid(p, aIdent[i].zKw, (int)strlen(aIdent[i].zKw)), aIdent[i].e);
    ck_assert_str_eq(schemaIdent(p, aIdent[i].e), aIdent[i].zKw);
  }
  ck_assert_int_eq(schemaEntid(p, ":db/nope", 8), 0);
  ck_assert_int_eq(schemaEntid(p, ":db/ident", 8), 0);      /* a prefix is not a match */
  ck_assert_ptr_null(schemaIdent(p, 41));
  ck_assert_ptr_null(schemaIdent(p, 0));
  schemaUnref(p);
  sqlite3_close(db);
}
END_TEST

/* The 16 core attributes: type, many, unique, index (format "Core
** attributes"; :db/unique implies the index). */
static const struct {
  const char *zKw; sqlite3_int64 e; ValueType type; int bMany, eUnique, bIndex;
} aCore[] = {
  {":db/ident", 1, VT_KEYWORD, 0, UNIQUE_IDENTITY, 1},
  {":db/txInstant", 3, VT_INSTANT, 0, UNIQUE_NONE, 1},
  {":db.install/partition", 4, VT_REF, 1, UNIQUE_NONE, 0},
  {":db.install/valueType", 5, VT_REF, 1, UNIQUE_NONE, 0},
  {":db.install/attribute", 6, VT_REF, 1, UNIQUE_NONE, 0},
  {":db/valueType", 7, VT_REF, 0, UNIQUE_NONE, 0},
  {":db/cardinality", 8, VT_REF, 0, UNIQUE_NONE, 0},
  {":db/unique", 9, VT_REF, 0, UNIQUE_NONE, 0},
  {":db/isComponent", 10, VT_BOOLEAN, 0, UNIQUE_NONE, 0},
  {":db/index", 11, VT_BOOLEAN, 0, UNIQUE_NONE, 0},
  {":db/fulltext", 12, VT_BOOLEAN, 0, UNIQUE_NONE, 0},
  {":db/noHistory", 13, VT_BOOLEAN, 0, UNIQUE_NONE, 0},
  {":db.alter/attribute", 22, VT_REF, 1, UNIQUE_NONE, 0},
  {":db/doc", 37, VT_STRING, 0, UNIQUE_NONE, 0},
  {":db.schema/version", 38, VT_LONG, 0, UNIQUE_NONE, 0},
  {":db.schema/attribute", 39, VT_REF, 1, UNIQUE_VALUE, 1},
};

START_TEST(test_core_attributes) {
  sqlite3 *db = openBootstrapped();
  Schema *p = load(db);
  ck_assert_int_eq(schemaAttrCount(p), 16);
  for (size_t i = 0; i < sizeof aCore / sizeof aCore[0]; i++) {
    const Attr *a = schemaAttrByIdent(p, aCore[i].zKw, (int)strlen(aCore[i].zKw));
    ck_assert_msg(a != NULL, "%s", aCore[i].zKw);
    ck_assert_ptr_eq(a, schemaAttr(p, aCore[i].e));
    ck_assert_int_eq(a->e, aCore[i].e);
    ck_assert_str_eq(a->zIdent, aCore[i].zKw);
    ck_assert_msg(a->type == aCore[i].type, "%s type %d", aCore[i].zKw, a->type);
    ck_assert_int_eq(a->bMany, aCore[i].bMany);
    ck_assert_int_eq(a->eUnique, aCore[i].eUnique);
    ck_assert_int_eq(a->bIndex, aCore[i].bIndex);
    ck_assert_int_eq(a->bComponent, 0);
    ck_assert_int_eq(a->bFulltext, 0);
    ck_assert_int_eq(a->bNoHistory, 0);
    /* Iteration is in entid order, which is aCore's order. */
    ck_assert_ptr_eq(schemaAttrAt(p, (int)i), a);
  }
  ck_assert_ptr_null(schemaAttrAt(p, 16));
  ck_assert_ptr_null(schemaAttrAt(p, -1));
  ck_assert_ptr_null(schemaAttr(p, 2));              /* an ident, not an attribute */
  ck_assert_ptr_null(schemaAttrByIdent(p, ":db.part/db", 11));
  schemaUnref(p);
  sqlite3_close(db);
}
END_TEST

/* User attributes through the mirrors: flags, :db/unique implying the index,
** :db/noHistory from datoms, entities without a value type ignored. */
START_TEST(test_user_attributes) {
  sqlite3 *db = openBootstrapped();
  exec(db,
       "INSERT INTO idents VALUES (65536, 1, ':p/name', 13), (65537, 1, ':p/friends', 13),"
       " (65538, 1, ':p/blob', 13), (65539, 1, ':p/notattr', 13);"
       "INSERT INTO schema VALUES (65536, 7, 27, 0), (65536, 8, 33, 0), (65536, 9, 35, 0),"
       " (65536, 12, 1, 1),"
       " (65537, 7, 23, 0), (65537, 8, 34, 0), (65537, 10, 1, 1),"
       " (65538, 7, 32, 0),"
       " (65539, 8, 33, 0),"       /* no valueType: not an attribute */
       " (70000, 7, 25, 0);"       /* an attribute without an ident */
       "INSERT INTO datoms (e, a, v, tx, value_type_tag) VALUES (65538, 13, 1, 268435457, 1)");
  Schema *p = load(db);
  const Attr *a = schemaAttrByIdent(p, ":p/name", 7);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->type, VT_STRING);
  ck_assert_int_eq(a->eUnique, UNIQUE_VALUE);
  ck_assert_int_eq(a->bIndex, 1);
  ck_assert_int_eq(a->bFulltext, 1);
  ck_assert_int_eq(a->bMany, 0);
  a = schemaAttrByIdent(p, ":p/friends", 10);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->type, VT_REF);
  ck_assert_int_eq(a->bMany, 1);
  ck_assert_int_eq(a->bComponent, 1);
  ck_assert_int_eq(a->bIndex, 0);
  a = schemaAttr(p, 65538);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->type, VT_BYTES);
  ck_assert_int_eq(a->bNoHistory, 1);
  ck_assert_ptr_null(schemaAttrByIdent(p, ":p/notattr", 10));
  ck_assert_int_eq(schemaEntid(p, ":p/notattr", 10), 65539);
  a = schemaAttr(p, 70000);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_null(a->zIdent);
  ck_assert_int_eq(a->type, VT_LONG);
  ck_assert_int_eq(schemaAttrCount(p), 16 + 4);
  ck_assert_int_eq(schemaAttrAt(p, 19)->e, 70000);
  schemaUnref(p);
  sqlite3_close(db);
}
END_TEST

START_TEST(test_fingerprint_and_generation) {
  sqlite3 *db = openBootstrapped();
  sqlite3_uint64 fp1 = 0, fp2 = 0, fp3 = 0;
  char *zErr = NULL;
  Schema *p1 = load(db);
  ck_assert_int_eq(schemaFingerprint(db, &fp1, &zErr), SQLITE_OK);
  ck_assert(fp1 == schemaFingerprintOf(p1));
  /* Same rows in another order: the same fingerprint. */
  exec(db, "CREATE TEMP TABLE t AS SELECT * FROM idents;"
           "DELETE FROM idents; INSERT INTO idents SELECT * FROM t ORDER BY e DESC");
  ck_assert_int_eq(schemaFingerprint(db, &fp2, &zErr), SQLITE_OK);
  ck_assert(fp1 == fp2);
  /* A changed value: a different one. */
  exec(db, "UPDATE schema SET v = 34 WHERE e = 37 AND a = 8");
  ck_assert_int_eq(schemaFingerprint(db, &fp3, &zErr), SQLITE_OK);
  ck_assert(fp3 != fp1);
  Schema *p2 = load(db);
  ck_assert(schemaFingerprintOf(p2) == fp3);
  ck_assert(schemaGeneration(p2) != schemaGeneration(p1));
  ck_assert_int_eq(schemaAttr(p2, 37)->bMany, 1);
  ck_assert_int_eq(schemaAttr(p1, 37)->bMany, 0);   /* the old snapshot is untouched */
  /* A :db/noHistory datom changes it too. */
  exec(db, "INSERT INTO datoms (e, a, v, tx, value_type_tag) VALUES (37, 13, 1, 268435457, 1)");
  ck_assert_int_eq(schemaFingerprint(db, &fp2, &zErr), SQLITE_OK);
  ck_assert(fp2 != fp3);
  /* References: two refs, two unrefs. */
  schemaRef(p1);
  schemaUnref(p1);
  ck_assert_str_eq(schemaIdent(p1, 1), ":db/ident");
  schemaUnref(p1);
  schemaUnref(p2);
  schemaUnref(NULL);
  sqlite3_free(zErr);
  sqlite3_close(db);
}
END_TEST

/* Many idents: the hash tables size themselves; every lookup is exact. */
START_TEST(test_many_idents) {
  sqlite3 *db = openBootstrapped();
  exec(db, "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 19999)"
           " INSERT INTO idents SELECT 65536 + i, 1, ':k/a' || i, 13 FROM n;"
           "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 19999)"
           " INSERT INTO schema SELECT 65536 + i, 7, 25, 0 FROM n WHERE i % 2 = 0");
  Schema *p = load(db);
  char zKw[32];
  for (int i = 0; i < 20000; i++) {
    int n = snprintf(zKw, sizeof zKw, ":k/a%d", i);
    ck_assert_int_eq(schemaEntid(p, zKw, n), 65536 + i);
    ck_assert_str_eq(schemaIdent(p, 65536 + i), zKw);
    ck_assert_int_eq(schemaAttr(p, 65536 + i) != NULL, i % 2 == 0);
  }
  ck_assert_int_eq(schemaAttrCount(p), 16 + 10000);
  schemaUnref(p);
  sqlite3_close(db);
}
END_TEST

/* A database without the tables: an error in words, no snapshot. */
START_TEST(test_load_error) {
  sqlite3 *db = NULL;
  Schema *p = (Schema *)1;
  char *zErr = NULL;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  ck_assert_int_ne(schemaLoad(db, &p, &zErr), SQLITE_OK);
  ck_assert_ptr_null(p);
  ck_assert_ptr_nonnull(zErr);
  ck_assert_str_eq(zErr, "cannot read the store's schema (load): no such table: datoms");
  sqlite3_free(zErr);
  sqlite3_close(db);
}
END_TEST

/* ---------------------------------------------------------------- OOM */

/* With testutil.h's allocation-failure hooks, every failure point of
** schemaLoad and of creating/opening a store must give SQLITE_NOMEM (not
** another error, a crash or a leak: run under valgrind), and a round that
** succeeds the whole snapshot. */

START_TEST(test_oom_schema_load) {
  tuOomInstall();
  sqlite3 *db = openBootstrapped();
  exec(db, "INSERT INTO idents VALUES (65536, 1, ':p/name', 13);"
           "INSERT INTO schema VALUES (65536, 7, 27, 0), (65536, 8, 33, 0);"
           "INSERT INTO datoms (e, a, v, tx, value_type_tag) VALUES (65536, 13, 1, 268435457, 1)");
  int bDone = 0;
  for (int n = 0; !bDone && n < 2000; n++) {
    Schema *p = NULL;
    char *zErr = NULL;
    tuOomLeft = n;
    int rc = schemaLoad(db, &p, &zErr);
    tuOomLeft = -1;
    if (rc == SQLITE_OK) {
      /* the whole snapshot: 16 core attributes and :p/name, string, one,
      ** no history */
      ck_assert_int_eq(schemaAttrCount(p), 17);
      ck_assert_int_eq(schemaEntid(p, ":p/name", 7), 65536);
      ck_assert_int_eq(schemaAttr(p, 65536)->type, VT_STRING);
      ck_assert_int_eq(schemaAttr(p, 65536)->bMany, 0);
      ck_assert_int_eq(schemaAttr(p, 65536)->bNoHistory, 1);
      ck_assert_int_eq(schemaEntid(p, ":db.schema/core", 15), 40);
      bDone = 1;
    } else {
      ck_assert_msg(tuIsNomem(rc), "failing allocation %d: rc %d %s", n, rc, zErr ? zErr : "");
      ck_assert_ptr_null(p);
    }
    schemaUnref(p);
    sqlite3_free(zErr);
  }
  ck_assert(bDone);
  sqlite3_close(db);
}
END_TEST

START_TEST(test_oom_store_open) {
  tuOomInstall();
  int bDone = 0;
  for (int n = 0; !bDone && n < 20000; n += (n < 400 ? 1 : 7)) {
    Store *p = NULL;
    StoreConn *pC = NULL;
    Schema *pS = NULL;
    char *zErr = NULL;
    tuOomLeft = n;
    int rc = storeAcquire("", &p, &zErr);
    if (rc == SQLITE_OK) rc = storeReader(p, &pC, &pS, &zErr);
    tuOomLeft = -1;
    if (rc == SQLITE_OK) {
      ck_assert_int_eq(schemaAttrCount(pS), 16);
      ck_assert_int_eq(schemaEntid(pS, ":db.schema/core", 15), 40);
      ck_assert_int_eq(schemaEntid(pS, ":db/txInstant", 13), 3);
      bDone = 1;
    } else {
      ck_assert_msg(tuIsNomem(rc), "failing allocation %d: rc %d %s", n, rc, zErr ? zErr : "");
    }
    if (pC) storeReaderDone(p, pC);
    schemaUnref(pS);
    storeRelease(p);
    sqlite3_free(zErr);
  }
  ck_assert(bDone);
}
END_TEST

static Suite *schemaSuite(void) {
  Suite *s = suite_create("schema");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_idents_both_ways);
  tcase_add_test(tc, test_core_attributes);
  tcase_add_test(tc, test_user_attributes);
  tcase_add_test(tc, test_fingerprint_and_generation);
  tcase_add_test(tc, test_many_idents);
  tcase_add_test(tc, test_load_error);
  suite_add_tcase(s, tc);
  tc = tcase_create("oom");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_oom_schema_load);
  tcase_add_test(tc, test_oom_store_open);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(schemaSuite)
