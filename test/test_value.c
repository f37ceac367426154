/*
** test_value.c — Check suite for ext/edn/value.c: EDN literal → TypedValue for
** each attribute type, the stored encoding valueBind writes (through a real
** table in an in-memory SQLite database), and the JSON / native forms read
** back from real sqlite3_values (SPEC.md §2.3). Expected values are written by
** hand from SPEC.md §2.3, format/mentat-v3.md and peer faults B03 and B31.
*/
#include <math.h>
#include "testutil.h"
#include "value.h"

/* tjson(v, tag, bPull): valueJsonFromStored as an SQL function (its
** SQLITE_NOMEM, and the string's, as the function's). */
static void tjsonFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  sqlite3_str *pStr = sqlite3_str_new(NULL);
  char *z;
  int n, rc;
  (void)argc;
  rc = valueJsonFromStored(pStr, argv[0], sqlite3_value_int(argv[1]), sqlite3_value_int(argv[2]));
  n = sqlite3_str_length(pStr);
  z = sqlite3_str_finish(pStr);
  if (rc != SQLITE_OK || z == NULL) sqlite3_result_error_nomem(pCtx);
  else sqlite3_result_text(pCtx, z, n, SQLITE_TRANSIENT);
  sqlite3_free(z);
}

/* tres(v, tag): valueResultFromStored as an SQL function. */
static void tresFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  valueResultFromStored(pCtx, argv[0], sqlite3_value_int(argv[1]));
}

static sqlite3 *openDb(void) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  ck_assert_int_eq(sqlite3_create_function(db, "tjson", 3, SQLITE_UTF8, NULL, tjsonFunc, NULL, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_create_function(db, "tres", 2, SQLITE_UTF8, NULL, tresFunc, NULL, NULL), SQLITE_OK);
  /* v as in Mentat's datoms table: BLOB affinity keeps each storage class. */
  ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE t(v BLOB NOT NULL, tag SMALLINT NOT NULL)", 0, 0, 0), SQLITE_OK);
  return db;
}

typedef struct ValueCase {
  const char *zEdn;
  ValueType want;
  const char *zErr;     /* non-NULL: the whole expected error */
  const char *zType;    /* typeof(v) stored */
  const char *zQuote;   /* quote(v) stored (NULL: not checked) */
  const char *zJson;    /* edn_q JSON */
  const char *zPull;    /* edn_pull JSON */
  const char *zNType;   /* typeof of the native result */
  const char *zNQuote;  /* quote of the native result */
} ValueCase;

static const ValueCase aCase[] = {
  {"42", VT_LONG, NULL, "integer", "42", "42", "42", "integer", "42"},
  {"9223372036854775807", VT_LONG, NULL, "integer", "9223372036854775807",
   "9223372036854775807", "9223372036854775807", "integer", "9223372036854775807"},
  {"-9223372036854775808", VT_LONG, NULL, "integer", "-9223372036854775808",
   "-9223372036854775808", "-9223372036854775808", "integer", "-9223372036854775808"},
  {"1.0", VT_LONG, "expected :db.type/long, got a double", 0, 0, 0, 0, 0, 0},
  {"\"s\"", VT_LONG, "expected :db.type/long, got a string", 0, 0, 0, 0, 0, 0},
  {"[1 2]", VT_LONG, "expected :db.type/long, got a vector", 0, 0, 0, 0, 0, 0},
  {"1.5", VT_DOUBLE, NULL, "real", "1.5", "1.5", "1.5", "real", "1.5"},
  {"3", VT_DOUBLE, NULL, "real", "3.0", "3.0", "3.0", "real", "3.0"},
  {"-0.0", VT_DOUBLE, NULL, "real", "0.0", "0.0", "0.0", "real", "0.0"},
  {"1e308", VT_DOUBLE, NULL, "real", NULL, "1e+308", "1e+308", "real", NULL},
  {"5e-324", VT_DOUBLE, NULL, "real", NULL, "5e-324", "5e-324", "real", NULL},
  {"##Inf", VT_DOUBLE, NULL, "real", "Inf", "1e999", "1e999", "real", "Inf"},
  {"##-Inf", VT_DOUBLE, NULL, "real", "-Inf", "-1e999", "-1e999", "real", "-Inf"},
  {"##NaN", VT_DOUBLE, "NaN cannot be stored", 0, 0, 0, 0, 0, 0},
  {"\"x\"", VT_DOUBLE, "expected :db.type/double, got a string", 0, 0, 0, 0, 0, 0},
  {"\"h\xC3\xA9llo\"", VT_STRING, NULL, "text", "'h\xC3\xA9llo'", "\"h\xC3\xA9llo\"",
   "\"h\xC3\xA9llo\"", "text", "'h\xC3\xA9llo'"},
  {"\"q\\\"x\\n\"", VT_STRING, NULL, "text", NULL, "\"q\\\"x\\n\"", "\"q\\\"x\\n\"", "text", NULL},
  {"\"a\\u0000b\"", VT_STRING, NULL, "text", NULL, "\"a\\u0000b\"", "\"a\\u0000b\"", "text", NULL},
  {"nil", VT_STRING, "expected :db.type/string, got nil", 0, 0, 0, 0, 0, 0},
  {":a/b", VT_STRING, "expected :db.type/string, got a keyword", 0, 0, 0, 0, 0, 0},
  {":a/b", VT_KEYWORD, NULL, "text", "':a/b'", "\":a/b\"", "\":a/b\"", "text", "':a/b'"},
  {"a/b", VT_KEYWORD, "expected :db.type/keyword, got a symbol", 0, 0, 0, 0, 0, 0},
  {"\":a/b\"", VT_KEYWORD, "expected :db.type/keyword, got a string", 0, 0, 0, 0, 0, 0},
  {"true", VT_BOOLEAN, NULL, "integer", "1", "true", "true", "integer", "1"},
  {"false", VT_BOOLEAN, NULL, "integer", "0", "false", "false", "integer", "0"},
  {"1", VT_BOOLEAN, "expected :db.type/boolean, got an integer", 0, 0, 0, 0, 0, 0},
  {"#inst \"2025-03-04T05:06:00Z\"", VT_INSTANT, NULL, "integer", "1741064760000000",
   "\"2025-03-04T05:06:00.000000Z\"", "1741064760000000", "text", "'2025-03-04T05:06:00.000000Z'"},
  {"#inst \"1969-12-31T23:59:59.999999Z\"", VT_INSTANT, NULL, "integer", "-1",
   "\"1969-12-31T23:59:59.999999Z\"", "-1", "text", "'1969-12-31T23:59:59.999999Z'"},
  {"\"2018\"", VT_INSTANT, "expected :db.type/instant, got a string", 0, 0, 0, 0, 0, 0},
  {"1514804400000000", VT_INSTANT, "expected :db.type/instant, got an integer", 0, 0, 0, 0, 0, 0},
  {"#uuid \"ff62d552-6569-4d1b-b667-04703041dfc4\"", VT_UUID, NULL, "blob",
   "X'FF62D55265694D1BB66704703041DFC4'", "\"ff62d552-6569-4d1b-b667-04703041dfc4\"",
   "\"ff62d552-6569-4d1b-b667-04703041dfc4\"", "text", "'ff62d552-6569-4d1b-b667-04703041dfc4'"},
  {"\"ff62d552-6569-4d1b-b667-04703041dfc4\"", VT_UUID, "expected :db.type/uuid, got a string",
   0, 0, 0, 0, 0, 0},
  {"#bytes \"00FFab\"", VT_BYTES, NULL, "blob", "X'00FFAB'", "\"00ffab\"", "\"00ffab\"", "blob", "X'00FFAB'"},
  {"#bytes \"\"", VT_BYTES, NULL, "blob", "X''", "\"\"", "\"\"", "blob", "X''"},
  {"#bytes \"00\"", VT_STRING, "expected :db.type/string, got a tagged value", 0, 0, 0, 0, 0, 0},
  {"#foo \"00\"", VT_BYTES, "expected :db.type/bytes, got a tagged value", 0, 0, 0, 0, 0, 0},
  {"\"00ff\"", VT_BYTES, "expected :db.type/bytes, got a string", 0, 0, 0, 0, 0, 0},
  {"65536", VT_REF, NULL, "integer", "65536", "65536", "{\":db/id\":65536}", "integer", "65536"},
  {":db/ident", VT_REF, "expected :db.type/ref, got a keyword", 0, 0, 0, 0, 0, 0},
  {"#db/id [:db.part/user -1]", VT_REF, "expected :db.type/ref, got a tagged value", 0, 0, 0, 0, 0, 0},
  {"1", VT_NONE, "value of unknown type", 0, 0, 0, 0, 0, 0},
};

static const char *colText(sqlite3_stmt *p, int i) {
  const char *z = (const char *)sqlite3_column_text(p, i);
  return z ? z : "NULL";
}

START_TEST(test_value_cases) {
  sqlite3 *db = openDb();
  int i;
  for (i = 0; i < (int)(sizeof(aCase) / sizeof(aCase[0])); i++) {
    const ValueCase *c = &aCase[i];
    EdnArena arena;
    EdnValue *p = NULL;
    EdnError err;
    TypedValue tv;
    char *zErr = sqlite3_mprintf("previous message, must be freed");
    sqlite3_stmt *pIns = NULL, *pSel = NULL;
    int rc;
    ednArenaInit(&arena);
    ck_assert_msg(ednReadOne(&arena, c->zEdn, -1, &p, &err) == SQLITE_OK, "case %d read: %s", i, err.zMsg);
    rc = valueFromEdn(p, c->want, &tv, &zErr);
    if (c->zErr) {
      ck_assert_msg(rc == SQLITE_ERROR, "case %d [%s]: expected an error", i, c->zEdn);
      ck_assert_msg(zErr && strcmp(zErr, c->zErr) == 0, "case %d [%s]: message \"%s\", expected \"%s\"",
                    i, c->zEdn, zErr ? zErr : "NULL", c->zErr);
      sqlite3_free(zErr);
      ednArenaReset(&arena);
      continue;
    }
    ck_assert_msg(rc == SQLITE_OK, "case %d [%s]: %s", i, c->zEdn, zErr ? zErr : "?");
    sqlite3_free(zErr);
    ck_assert_int_eq(tv.type, c->want);
    ck_assert_int_eq(sqlite3_exec(db, "DELETE FROM t", 0, 0, 0), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1, ?2)", -1, &pIns, NULL), SQLITE_OK);
    ck_assert_int_eq(valueBind(pIns, 1, &tv), SQLITE_OK);
    ck_assert_int_eq(sqlite3_bind_int(pIns, 2, vtTag(c->want)), SQLITE_OK);
    /* The bound value must not depend on the arena any more. */
    ednArenaReset(&arena);
    ck_assert_int_eq(sqlite3_step(pIns), SQLITE_DONE);
    sqlite3_finalize(pIns);
    ck_assert_int_eq(sqlite3_prepare_v2(db,
        "SELECT typeof(v), quote(v), tjson(v, tag, 0), tjson(v, tag, 1), "
        "typeof(tres(v, tag)), quote(tres(v, tag)) FROM t", -1, &pSel, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(pSel), SQLITE_ROW);
    ck_assert_msg(strcmp(colText(pSel, 0), c->zType) == 0, "case %d [%s]: typeof %s", i, c->zEdn, colText(pSel, 0));
    if (c->zQuote) {
      ck_assert_msg(strcmp(colText(pSel, 1), c->zQuote) == 0, "case %d [%s]: stored %s, expected %s",
                    i, c->zEdn, colText(pSel, 1), c->zQuote);
    }
    ck_assert_msg(strcmp(colText(pSel, 2), c->zJson) == 0, "case %d [%s]: json %s, expected %s",
                  i, c->zEdn, colText(pSel, 2), c->zJson);
    ck_assert_msg(strcmp(colText(pSel, 3), c->zPull) == 0, "case %d [%s]: pull json %s, expected %s",
                  i, c->zEdn, colText(pSel, 3), c->zPull);
    ck_assert_msg(strcmp(colText(pSel, 4), c->zNType) == 0, "case %d [%s]: native typeof %s",
                  i, c->zEdn, colText(pSel, 4));
    if (c->zNQuote) {
      ck_assert_msg(strcmp(colText(pSel, 5), c->zNQuote) == 0, "case %d [%s]: native %s, expected %s",
                    i, c->zEdn, colText(pSel, 5), c->zNQuote);
    }
    sqlite3_finalize(pSel);
  }
  sqlite3_close(db);
}
END_TEST

/* B31: -0.0 is stored as 0.0 (one value for = and uniqueness); NaN never
** reaches the store; the NUL inside a string survives (B33). */
START_TEST(test_value_b31_b33) {
  sqlite3 *db = openDb();
  EdnArena arena;
  EdnValue *p = NULL;
  EdnError err;
  TypedValue tv;
  char *zErr = NULL;
  sqlite3_stmt *pStmt = NULL;
  ednArenaInit(&arena);
  ck_assert_int_eq(ednReadOne(&arena, "-0.0", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(valueFromEdn(p, VT_DOUBLE, &tv, &zErr), SQLITE_OK);
  ck_assert(tv.d == 0.0 && !signbit(tv.d));
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT ?1 = 0.0, hex(?2), length(?2)", -1, &pStmt, NULL), SQLITE_OK);
  ck_assert_int_eq(valueBind(pStmt, 1, &tv), SQLITE_OK);
  ck_assert_int_eq(ednReadOne(&arena, "\"a\\u0000b\"", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(valueFromEdn(p, VT_STRING, &tv, &zErr), SQLITE_OK);
  ck_assert_int_eq(valueBind(pStmt, 2, &tv), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ROW);
  ck_assert_int_eq(sqlite3_column_int(pStmt, 0), 1);
  ck_assert_str_eq((const char *)sqlite3_column_text(pStmt, 1), "610062");
  sqlite3_finalize(pStmt);
  /* Integers convert to doubles; longs never accept doubles. */
  ck_assert_int_eq(ednReadOne(&arena, "9007199254740993", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(valueFromEdn(p, VT_LONG, &tv, &zErr), SQLITE_OK);
  ck_assert(tv.i == 9007199254740993LL);
  ck_assert_int_eq(valueFromEdn(p, VT_DOUBLE, &tv, &zErr), SQLITE_OK);
  ck_assert(tv.d == 9007199254740992.0);
  /* NULL pzErr is allowed. */
  ck_assert_int_eq(ednReadOne(&arena, "##NaN", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(valueFromEdn(p, VT_DOUBLE, &tv, NULL), SQLITE_ERROR);
  ck_assert_int_eq(valueFromEdn(NULL, VT_LONG, &tv, &zErr), SQLITE_ERROR);
  ck_assert_ptr_nonnull(zErr);
  sqlite3_free(zErr);
  ednArenaReset(&arena);
  sqlite3_close(db);
}
END_TEST

/* Values with no tag-specific form, NULL, and mismatched storage classes
** fall back to their storage class instead of misprinting. */
START_TEST(test_value_json_fallbacks) {
  sqlite3 *db = openDb();
  static const struct { const char *zSql; const char *zOut; } a[] = {
    {"SELECT tjson(NULL, 10, 0)", "null"},
    {"SELECT tjson(7, 5, 0)", "7"},
    {"SELECT tjson(0.1, 5, 0)", "0.1"},
    {"SELECT tjson(2.0, 5, 1)", "2.0"},
    {"SELECT tjson('x', 4, 0)", "\"x\""},
    {"SELECT tjson(x'0102', 11, 0)", "\"0102\""},
    {"SELECT tjson(x'0a', 15, 0)", "\"0a\""},
    {"SELECT tjson(12, 10, 0)", "12"},        /* fulltext rowid, tag 10 */
    {"SELECT tjson(5, 0, 1)", "{\":db/id\":5}"},
    {"SELECT tjson(0, 1, 1)", "false"},
    {"SELECT tjson(x'', 99, 0)", "\"\""},
    {"SELECT tres(x'0102', 11)", "\x01\x02"},
    {"SELECT typeof(tres(NULL, 4))", "null"},
    {"SELECT tres(0, 4)", "1970-01-01T00:00:00.000000Z"},
    {"SELECT tres(2, 1)", "1"},
    {"SELECT tres('s', 10)", "s"},
  };
  int i;
  for (i = 0; i < (int)(sizeof(a) / sizeof(a[0])); i++) {
    char *zGot = tuQuery(db, a[i].zSql, NULL, NULL);
    ck_assert_msg(strcmp(zGot, a[i].zOut) == 0, "%s: got %s expected %s", a[i].zSql, zGot, a[i].zOut);
    free(zGot);
  }
  sqlite3_close(db);
}
END_TEST

START_TEST(test_value_types) {
  static const struct { sqlite3_int64 e; ValueType t; int tag; const char *zName; } a[] = {
    {23, VT_REF, TAG_REF, ":db.type/ref"},
    {24, VT_KEYWORD, TAG_KEYWORD, ":db.type/keyword"},
    {25, VT_LONG, TAG_NUMBER, ":db.type/long"},
    {26, VT_DOUBLE, TAG_NUMBER, ":db.type/double"},
    {27, VT_STRING, TAG_STRING, ":db.type/string"},
    {28, VT_UUID, TAG_UUID, ":db.type/uuid"},
    {30, VT_BOOLEAN, TAG_BOOLEAN, ":db.type/boolean"},
    {31, VT_INSTANT, TAG_INSTANT, ":db.type/instant"},
    {32, VT_BYTES, TAG_BYTES, ":db.type/bytes"},
  };
  int i;
  for (i = 0; i < (int)(sizeof(a) / sizeof(a[0])); i++) {
    ck_assert_int_eq(vtFromTypeEntid(a[i].e), a[i].t);
    ck_assert_int_eq(vtTag(a[i].t), a[i].tag);
    ck_assert_str_eq(vtName(a[i].t), a[i].zName);
  }
  ck_assert_int_eq(vtFromTypeEntid(29), VT_NONE);   /* :db.type/uri */
  ck_assert_int_eq(vtFromTypeEntid(22), VT_NONE);
  ck_assert_int_eq(vtFromTypeEntid(33), VT_NONE);
  ck_assert_int_eq(vtFromTypeEntid(0), VT_NONE);
  ck_assert_str_eq(vtName(VT_NONE), "unknown");
  ck_assert_int_eq(vtTag(VT_NONE), -1);
}
END_TEST

START_TEST(test_natural_type) {
  static const struct { const char *zEdn; ValueType t; } a[] = {
    {"1", VT_LONG}, {"1.5", VT_DOUBLE}, {"\"s\"", VT_STRING}, {":k", VT_KEYWORD},
    {"true", VT_BOOLEAN}, {"#inst \"2018-01-01\"", VT_INSTANT},
    {"#uuid \"ff62d552-6569-4d1b-b667-04703041dfc4\"", VT_UUID}, {"#bytes \"00\"", VT_BYTES},
    {"nil", VT_NONE}, {"?x", VT_NONE}, {"[1]", VT_NONE}, {"\\a", VT_NONE},
    {"#db/id [:db.part/user]", VT_NONE},
  };
  int i;
  for (i = 0; i < (int)(sizeof(a) / sizeof(a[0])); i++) {
    EdnArena arena;
    EdnValue *p = NULL;
    EdnError err;
    ednArenaInit(&arena);
    ck_assert_int_eq(ednReadOne(&arena, a[i].zEdn, -1, &p, &err), SQLITE_OK);
    ck_assert_msg(valueNaturalType(p) == a[i].t, "natural type of %s", a[i].zEdn);
    ednArenaReset(&arena);
  }
  ck_assert_int_eq(valueNaturalType(NULL), VT_NONE);
}
END_TEST

/* Reading a value's text can run out of memory: a TEXT value made by a
** CAST of a blob literal has no terminator, so sqlite3_value_text
** allocates one (and leaves the value NULL when that fails). The value is
** read as the library reads a store's columns: from a statement of another
** connection than the one that reports (SQLite would otherwise notice its
** own failed allocation and fail the statement itself). With the n-th
** allocation failing, transiently or from then on, the JSON is exactly the
** one worked out by hand from SPEC.md §2.3 (a string quoted, JSON text as it
** is) or SQLITE_NOMEM: never "" for the string, never a crash. */
static int tOomOne(sqlite3 *db, const char *zSql, int tag, int n, char **pzOut) {
  sqlite3_stmt *pStmt = NULL;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL);
  *pzOut = NULL;
  ck_assert_int_eq(rc, SQLITE_OK);
  tuOomLeft = n;
  rc = sqlite3_step(pStmt);
  if (rc == SQLITE_ROW) {
    sqlite3_str *pStr = sqlite3_str_new(NULL);
    char *z;
    rc = valueJsonFromStored(pStr, sqlite3_column_value(pStmt, 0), tag, 0);
    z = sqlite3_str_finish(pStr);
    if (rc == SQLITE_OK && z == NULL) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) *pzOut = strdup(z);
    sqlite3_free(z);
  }
  sqlite3_finalize(pStmt);
  return rc;
}

START_TEST(test_value_json_oom) {
  static const struct { const char *zSql; int tag; const char *zWant; } a[] = {
    {"SELECT CAST(x'616263' AS TEXT)", TAG_STRING, "\"abc\""},
    {"SELECT CAST(x'3a612f62' AS TEXT)", TAG_KEYWORD, "\":a/b\""},
    {"SELECT CAST(x'5b315d' AS TEXT)", TAG_JSON, "[1]"},
  };
  tuOomInstall();
  for (int iMode = 0; iMode < 2; iMode++) {
    sqlite3 *db = NULL;
    tuOomOnce = iMode == 0;
    ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
      int n, bDone = 0, nFail = 0;
      for (n = 0; n < 200 && !bDone; n++) {
        char *z = NULL;
        int rc = tOomOne(db, a[i].zSql, a[i].tag, n, &z);
        bDone = tuOomOnce ? tuOomLeft > 0 : rc == SQLITE_OK;
        tuOomLeft = -1;
        if (rc == SQLITE_OK) {
          ck_assert_msg(strcmp(z, a[i].zWant) == 0, "%s, %s failing allocation %d: got %s, want %s",
                        a[i].zSql, iMode ? "persistent" : "transient", n, z, a[i].zWant);
        } else {
          ck_assert_msg(tuIsNomem(rc), "%s, %s failing allocation %d: rc %d", a[i].zSql,
                        iMode ? "persistent" : "transient", n, rc);
          nFail++;
        }
        free(z);
      }
      ck_assert_msg(bDone && nFail > 0, "%s: mode %d ended at %d with %d failures", a[i].zSql, iMode, n,
                    nFail);
    }
    sqlite3_close(db);
  }
  tuOomOnce = 0;
  tuOomRemove();
}
END_TEST

static Suite *valueSuite(void) {
  Suite *s = suite_create("value");
  TCase *tc = tcase_create("value");
  tcase_add_test(tc, test_value_cases);
  tcase_add_test(tc, test_value_b31_b33);
  tcase_add_test(tc, test_value_json_fallbacks);
  tcase_add_test(tc, test_value_types);
  tcase_add_test(tc, test_natural_type);
  tcase_add_test(tc, test_value_json_oom);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(valueSuite)
