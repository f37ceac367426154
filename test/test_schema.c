/*
** test_schema.c — the Schema snapshot built from rows with no database
** (schemaBuilder*, schemaBuild): lookups both ways, attribute flags, the
** rules for damaged rows, generations and references, allocation failures.
** Links only the schema stage and those before it; what a store's rows
** load into is test_store.c's. Expected values are the format document's
** bootstrap (format/mentat-v3.md), written out by hand.
*/
#include "testutil.h"
#include "schema.h"

#include "tuidents.h"

/* The 16 core attributes as the format defines them: the entids of their
** :db/valueType, :db/cardinality and :db/unique (0: none) and :db/index;
** then what the snapshot must say (:db/unique implies the index). */
static const struct {
  const char *zKw; sqlite3_int64 e; int eType, eCard, eUniq, bIdx;
  ValueType type; int bMany, eUnique, bIndex;
} aCore[] = {
  {":db/ident", 1, 24, 33, 36, 1, VT_KEYWORD, 0, UNIQUE_IDENTITY, 1},
  {":db/txInstant", 3, 31, 33, 0, 1, VT_INSTANT, 0, UNIQUE_NONE, 1},
  {":db.install/partition", 4, 23, 34, 0, 0, VT_REF, 1, UNIQUE_NONE, 0},
  {":db.install/valueType", 5, 23, 34, 0, 0, VT_REF, 1, UNIQUE_NONE, 0},
  {":db.install/attribute", 6, 23, 34, 0, 0, VT_REF, 1, UNIQUE_NONE, 0},
  {":db/valueType", 7, 23, 33, 0, 0, VT_REF, 0, UNIQUE_NONE, 0},
  {":db/cardinality", 8, 23, 33, 0, 0, VT_REF, 0, UNIQUE_NONE, 0},
  {":db/unique", 9, 23, 33, 0, 0, VT_REF, 0, UNIQUE_NONE, 0},
  {":db/isComponent", 10, 30, 33, 0, 0, VT_BOOLEAN, 0, UNIQUE_NONE, 0},
  {":db/index", 11, 30, 33, 0, 0, VT_BOOLEAN, 0, UNIQUE_NONE, 0},
  {":db/fulltext", 12, 30, 33, 0, 0, VT_BOOLEAN, 0, UNIQUE_NONE, 0},
  {":db/noHistory", 13, 30, 33, 0, 0, VT_BOOLEAN, 0, UNIQUE_NONE, 0},
  {":db.alter/attribute", 22, 23, 34, 0, 0, VT_REF, 1, UNIQUE_NONE, 0},
  {":db/doc", 37, 27, 33, 0, 0, VT_STRING, 0, UNIQUE_NONE, 0},
  {":db.schema/version", 38, 25, 33, 0, 0, VT_LONG, 0, UNIQUE_NONE, 0},
  {":db.schema/attribute", 39, 23, 34, 35, 1, VT_REF, 1, UNIQUE_VALUE, 1},
};
#define N_IDENT ((int)(sizeof aIdent / sizeof aIdent[0]))
#define N_CORE ((int)(sizeof aCore / sizeof aCore[0]))

static SchemaBuilder *newBuilder(void) {
  SchemaBuilder *pB = NULL;
  ck_assert_int_eq(schemaBuilderNew(&pB), SQLITE_OK);
  ck_assert_ptr_nonnull(pB);
  return pB;
}

/* Adds the bootstrap's idents and core attribute definitions to pB. */
static int addBootstrap(SchemaBuilder *pB) {
  int rc = SQLITE_OK;
  for (int i = 0; i < N_IDENT && rc == SQLITE_OK; i++) {
    rc = schemaBuilderIdent(pB, aIdent[i].e, aIdent[i].zKw, -1);
  }
  /* Definitions in reverse: the builder may not rely on their order. */
  for (int i = N_CORE - 1; i >= 0 && rc == SQLITE_OK; i--) {
    rc = schemaBuilderDef(pB, aCore[i].e, ENTID_DB_VALUETYPE, aCore[i].eType);
    if (rc == SQLITE_OK) rc = schemaBuilderDef(pB, aCore[i].e, ENTID_DB_CARDINALITY, aCore[i].eCard);
    if (rc == SQLITE_OK && aCore[i].eUniq) {
      rc = schemaBuilderDef(pB, aCore[i].e, ENTID_DB_UNIQUE, aCore[i].eUniq);
    }
    if (rc == SQLITE_OK && aCore[i].bIdx) rc = schemaBuilderDef(pB, aCore[i].e, ENTID_DB_INDEX, 1);
  }
  return rc;
}

static Schema *build(SchemaBuilder *pB, sqlite3_uint64 fp) {
  Schema *p = NULL;
  ck_assert_int_eq(schemaBuild(pB, fp, &p), SQLITE_OK);
  ck_assert_ptr_nonnull(p);
  return p;
}

static Schema *bootstrap(void) {
  SchemaBuilder *pB = newBuilder();
  ck_assert_int_eq(addBootstrap(pB), SQLITE_OK);
  return build(pB, 0);
}

START_TEST(test_build_idents_both_ways) {
  Schema *p = bootstrap();
  for (int i = 0; i < N_IDENT; i++) {
    ck_assert_int_eq(schemaEntid(p, aIdent[i].zKw, (int)strlen(aIdent[i].zKw)), aIdent[i].e);
    ck_assert_str_eq(schemaIdent(p, aIdent[i].e), aIdent[i].zKw);
  }
  ck_assert_int_eq(schemaEntid(p, ":db/nope", 8), 0);
  ck_assert_int_eq(schemaEntid(p, ":db/ident", 8), 0);      /* a prefix is not a match */
  ck_assert_int_eq(schemaEntid(p, ":db/ident", -1), 1);     /* NUL-terminated */
  ck_assert_ptr_null(schemaIdent(p, 41));
  ck_assert_ptr_null(schemaIdent(p, 0));
  schemaUnref(p);
}
END_TEST

START_TEST(test_build_core_attributes) {
  Schema *p = bootstrap();
  ck_assert_int_eq(schemaAttrCount(p), 16);
  for (int i = 0; i < N_CORE; i++) {
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
    ck_assert_int_eq(a->bValueIndex, 0);
    /* Iteration is in entid order, which is aCore's order. */
    ck_assert_ptr_eq(schemaAttrAt(p, i), a);
  }
  ck_assert_ptr_null(schemaAttrAt(p, 16));
  ck_assert_ptr_null(schemaAttrAt(p, -1));
  ck_assert_ptr_null(schemaAttr(p, 2));              /* an ident, not an attribute */
  ck_assert_ptr_null(schemaAttrByIdent(p, ":db.part/db", 11));
  schemaUnref(p);
}
END_TEST

/* User attributes: every flag, :db/unique implying the index, :db/noHistory,
** an entity without a value type (not an attribute), an attribute without
** an ident, rows of other attributes ignored, value indexes. */
START_TEST(test_build_user_attributes) {
  SchemaBuilder *pB = newBuilder();
  ck_assert_int_eq(addBootstrap(pB), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderIdent(pB, 65536, ":p/name", 7), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderIdent(pB, 65537, ":p/friends", 10), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderIdent(pB, 65538, ":p/blobxyz", 7), SQLITE_OK);  /* 7 bytes */
  ck_assert_int_eq(schemaBuilderIdent(pB, 65539, ":p/notattr", 10), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderIdent(pB, 65540, ":p/age", 6), SQLITE_OK);
  static const sqlite3_int64 aDef[][3] = {
    {65536, 7, 27}, {65536, 8, 33}, {65536, 9, 35}, {65536, 12, 1},
    {65537, 7, 23}, {65537, 8, 34}, {65537, 10, 1},
    {65538, 7, 32}, {65538, 13, 1},
    {65539, 8, 33},                       /* no valueType: not an attribute */
    {70000, 7, 25},                       /* an attribute without an ident */
    {65540, 7, 25}, {65540, 11, 1}, {65540, 37, 1}, {65540, 1, 5},  /* :db/doc, ident: ignored */
  };
  for (size_t i = 0; i < sizeof aDef / sizeof aDef[0]; i++) {
    ck_assert_int_eq(schemaBuilderDef(pB, aDef[i][0], aDef[i][1], aDef[i][2]), SQLITE_OK);
  }
  ck_assert_int_eq(schemaBuilderValueIndex(pB, 65540), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderValueIndex(pB, 65539), SQLITE_OK);   /* not an attribute */
  Schema *p = build(pB, 0);
  const Attr *a = schemaAttrByIdent(p, ":p/name", 7);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->type, VT_STRING);
  ck_assert_int_eq(a->eUnique, UNIQUE_VALUE);
  ck_assert_int_eq(a->bIndex, 1);
  ck_assert_int_eq(a->bFulltext, 1);
  ck_assert_int_eq(a->bMany, 0);
  ck_assert_int_eq(a->bValueIndex, 0);
  a = schemaAttrByIdent(p, ":p/friends", 10);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->type, VT_REF);
  ck_assert_int_eq(a->bMany, 1);
  ck_assert_int_eq(a->bComponent, 1);
  ck_assert_int_eq(a->bIndex, 0);
  a = schemaAttr(p, 65538);
  ck_assert_ptr_nonnull(a);
  ck_assert_str_eq(a->zIdent, ":p/blob");
  ck_assert_int_eq(a->type, VT_BYTES);
  ck_assert_int_eq(a->bNoHistory, 1);
  ck_assert_ptr_null(schemaAttrByIdent(p, ":p/notattr", 10));
  ck_assert_int_eq(schemaEntid(p, ":p/notattr", 10), 65539);
  a = schemaAttr(p, 70000);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_null(a->zIdent);
  ck_assert_int_eq(a->type, VT_LONG);
  a = schemaAttrByIdent(p, ":p/age", 6);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->bIndex, 1);
  ck_assert_int_eq(a->bValueIndex, 1);
  ck_assert_int_eq(a->bMany, 0);             /* no cardinality row: one */
  ck_assert_int_eq(schemaAttrCount(p), 16 + 5);
  ck_assert_int_eq(schemaAttrAt(p, 20)->e, 70000);
  schemaUnref(p);
}
END_TEST

/* Damaged rows must not crash: an entity keeps its first ident and a
** keyword its first entity; the same definition twice keeps one value. */
START_TEST(test_build_duplicate_rows) {
  SchemaBuilder *pB = newBuilder();
  ck_assert_int_eq(schemaBuilderIdent(pB, 65536, ":a/x", -1), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderIdent(pB, 65536, ":a/y", -1), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderIdent(pB, 65537, ":a/x", -1), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderDef(pB, 65536, ENTID_DB_VALUETYPE, 25), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderDef(pB, 65536, ENTID_DB_CARDINALITY, 34), SQLITE_OK);
  ck_assert_int_eq(schemaBuilderDef(pB, 65536, ENTID_DB_CARDINALITY, 34), SQLITE_OK);
  Schema *p = build(pB, 0);
  ck_assert_str_eq(schemaIdent(p, 65536), ":a/x");
  ck_assert_int_eq(schemaEntid(p, ":a/x", -1), 65536);
  ck_assert_int_eq(schemaEntid(p, ":a/y", -1), 0);
  ck_assert_ptr_null(schemaIdent(p, 65537));
  ck_assert_int_eq(schemaAttrCount(p), 1);
  ck_assert_int_eq(schemaAttr(p, 65536)->bMany, 1);
  schemaUnref(p);
}
END_TEST

/* No rows: an empty snapshot whose lookups all miss. */
START_TEST(test_build_empty) {
  Schema *p = build(newBuilder(), 0);
  ck_assert_int_eq(schemaAttrCount(p), 0);
  ck_assert_ptr_null(schemaAttrAt(p, 0));
  ck_assert_int_eq(schemaEntid(p, ":db/ident", -1), 0);
  ck_assert_ptr_null(schemaIdent(p, 1));
  ck_assert_ptr_null(schemaAttr(p, 1));
  schemaUnref(p);
}
END_TEST

/* Each build is a new generation; the fingerprint is the one given;
** references count; a freed builder (never built) leaks nothing. */
START_TEST(test_build_generation_and_refs) {
  Schema *p1 = bootstrap();
  SchemaBuilder *pB = newBuilder();
  ck_assert_int_eq(addBootstrap(pB), SQLITE_OK);
  Schema *p2 = build(pB, 0x1234567890abcdefULL);
  ck_assert(schemaFingerprintOf(p2) == 0x1234567890abcdefULL);
  ck_assert(schemaFingerprintOf(p1) == 0);
  ck_assert(schemaGeneration(p1) != schemaGeneration(p2));
  ck_assert(schemaGeneration(p1) != 0);
  schemaRef(p1);
  schemaUnref(p1);
  ck_assert_str_eq(schemaIdent(p1, 1), ":db/ident");
  schemaUnref(p1);
  schemaUnref(p2);
  schemaUnref(NULL);
  ck_assert_int_eq(schemaAttrCount(NULL), 0);
  ck_assert_int_eq(schemaEntid(NULL, ":db/ident", -1), 0);
  pB = newBuilder();
  ck_assert_int_eq(schemaBuilderIdent(pB, 1, ":db/ident", -1), SQLITE_OK);
  schemaBuilderFree(pB);
  schemaBuilderFree(NULL);
}
END_TEST

/* Many idents: the hash tables size themselves; every lookup is exact. */
START_TEST(test_build_many_idents) {
  SchemaBuilder *pB = newBuilder();
  ck_assert_int_eq(addBootstrap(pB), SQLITE_OK);
  char zKw[32];
  for (int i = 0; i < 20000; i++) {
    int n = snprintf(zKw, sizeof zKw, ":k/a%d", i);
    ck_assert_int_eq(schemaBuilderIdent(pB, 65536 + i, zKw, n), SQLITE_OK);
    if (i % 2 == 0) ck_assert_int_eq(schemaBuilderDef(pB, 65536 + i, ENTID_DB_VALUETYPE, 25), SQLITE_OK);
  }
  Schema *p = build(pB, 0);
  for (int i = 0; i < 20000; i++) {
    int n = snprintf(zKw, sizeof zKw, ":k/a%d", i);
    ck_assert_int_eq(schemaEntid(p, zKw, n), 65536 + i);
    ck_assert_str_eq(schemaIdent(p, 65536 + i), zKw);
    ck_assert_int_eq(schemaAttr(p, 65536 + i) != NULL, i % 2 == 0);
  }
  ck_assert_int_eq(schemaAttrCount(p), 16 + 10000);
  schemaUnref(p);
}
END_TEST

/* With testutil.h's allocation-failure hooks, every failure point of a
** build must give SQLITE_NOMEM from the add that failed, from every later
** call and from schemaBuild (never another code, a crash or a leak: run
** under valgrind), and a round that succeeds the whole snapshot. */
START_TEST(test_oom_build) {
  tuOomInstall();
  int bDone = 0;
  for (int n = 0; !bDone && n < 2000; n++) {
    SchemaBuilder *pB = NULL;
    Schema *p = NULL;
    tuOomLeft = n;
    int rc = schemaBuilderNew(&pB);
    if (rc == SQLITE_OK) {
      int rcAdd = addBootstrap(pB);
      if (rcAdd == SQLITE_OK) rcAdd = schemaBuilderIdent(pB, 65536, ":p/name", -1);
      if (rcAdd == SQLITE_OK) rcAdd = schemaBuilderDef(pB, 65536, ENTID_DB_VALUETYPE, 27);
      if (rcAdd == SQLITE_OK) rcAdd = schemaBuilderDef(pB, 65536, ENTID_DB_NOHISTORY, 1);
      if (rcAdd == SQLITE_OK) rcAdd = schemaBuilderValueIndex(pB, 65536);
      ck_assert_msg(rcAdd == SQLITE_OK || tuIsNomem(rcAdd), "failing allocation %d: add rc %d", n, rcAdd);
      if (rcAdd != SQLITE_OK) {
        ck_assert_int_eq(schemaBuilderIdent(pB, 65537, ":p/later", -1), rcAdd);   /* sticky */
      }
      rc = schemaBuild(pB, 7, &p);
      if (rcAdd != SQLITE_OK) ck_assert_int_eq(rc, rcAdd);
    }
    tuOomLeft = -1;
    if (rc == SQLITE_OK) {
      ck_assert_int_eq(schemaAttrCount(p), 17);
      ck_assert_int_eq(schemaEntid(p, ":p/name", 7), 65536);
      ck_assert_int_eq(schemaAttr(p, 65536)->type, VT_STRING);
      ck_assert_int_eq(schemaAttr(p, 65536)->bNoHistory, 1);
      ck_assert_int_eq(schemaAttr(p, 65536)->bValueIndex, 1);
      ck_assert_int_eq(schemaEntid(p, ":db.schema/core", 15), 40);
      ck_assert(schemaFingerprintOf(p) == 7);
      bDone = 1;
    } else {
      ck_assert_msg(tuIsNomem(rc), "failing allocation %d: rc %d", n, rc);
      ck_assert_ptr_null(p);
    }
    schemaUnref(p);
  }
  ck_assert(bDone);
}
END_TEST

static Suite *schemaSuite(void) {
  Suite *s = suite_create("schema");
  TCase *tc = tcase_create("build");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_build_idents_both_ways);
  tcase_add_test(tc, test_build_core_attributes);
  tcase_add_test(tc, test_build_user_attributes);
  tcase_add_test(tc, test_build_duplicate_rows);
  tcase_add_test(tc, test_build_empty);
  tcase_add_test(tc, test_build_generation_and_refs);
  tcase_add_test(tc, test_build_many_idents);
  suite_add_tcase(s, tc);
  tc = tcase_create("oom");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_oom_build);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(schemaSuite)
