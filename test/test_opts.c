/*
** test_opts.c — qOptsParse (ext/query/query_opts.c): every rule of SPEC.md §2.4.
**
** Table-driven: (opts text, expected inputs described as text) for the
** accepted cases, (opts text, expected error fragment) for the refused ones.
** Expected values are written by hand from SPEC.md §2.4, never copied from
** the parser's output. Inputs are described by a local printer (below) so
** the expectations spell out the EDN types: i:1 d:1.5 b:1 k::a/b s:x
** [ ... ] for vectors, inst:<µs>, uuid, other types by number.
*/
#include "testutil.h"
#include "query.h"

/* Describes an EDN input value in the compact notation above. */
static void tDescribe(sqlite3_str *pOut, const EdnValue *p) {
  int i;
  switch (p->type) {
    case EDN_INT:     sqlite3_str_appendf(pOut, "i:%lld", (long long)p->u.i); break;
    case EDN_DOUBLE:  sqlite3_str_appendf(pOut, "d:%!.17g", p->u.d); break;
    case EDN_BOOL:    sqlite3_str_appendf(pOut, "b:%d", p->u.b); break;
    case EDN_KEYWORD: sqlite3_str_appendf(pOut, "k:%s", p->u.s.z); break;
    case EDN_STRING:  sqlite3_str_appendf(pOut, "s:%s", p->u.s.z); break;
    case EDN_SYMBOL:  sqlite3_str_appendf(pOut, "y:%s", p->u.s.z); break;
    case EDN_INST:    sqlite3_str_appendf(pOut, "inst:%lld", (long long)p->u.i); break;
    case EDN_UUID:    sqlite3_str_appendf(pOut, "uuid"); break;
    case EDN_VECTOR:
    case EDN_LIST:
      sqlite3_str_appendall(pOut, p->type == EDN_VECTOR ? "[" : "(");
      for (i = 0; i < p->u.c.n; i++) {
        if (i) sqlite3_str_appendall(pOut, " ");
        tDescribe(pOut, p->u.c.a[i]);
      }
      sqlite3_str_appendall(pOut, p->type == EDN_VECTOR ? "]" : ")");
      break;
    default:          sqlite3_str_appendf(pOut, "t%d", (int)p->type); break;
  }
}

/* All inputs, space-separated; "-" when there are none. */
static char *tInputs(const QueryOpts *p) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  int i;
  if (p->nInput == 0) sqlite3_str_appendall(pOut, "-");
  for (i = 0; i < p->nInput; i++) {
    if (i) sqlite3_str_appendall(pOut, " ");
    tDescribe(pOut, p->aInput[i]);
  }
  return sqlite3_str_finish(pOut);
}

static const struct {
  const char *zOpts;   /* NULL = SQL NULL */
  const char *zInputs; /* described inputs */
} aGood[] = {
  /* none */
  {NULL, "-"}, {"", "-"}, {"null", "-"}, {"{}", "-"}, {" { } ", "-"},
  {"{\"inputs\":[]}", "-"},
  /* JSON → value (SPEC.md §2.4) */
  {"{\"inputs\":[1]}", "i:1"},
  {"{\"inputs\":[-42, 0, -0]}", "i:-42 i:0 i:0"},
  {"{\"inputs\":[1.5]}", "d:1.5"},
  {"{\"inputs\":[1.0]}", "d:1.0"},                 /* a JSON double stays a double */
  {"{\"inputs\":[2e3]}", "d:2000.0"},
  {"{\"inputs\":[true,false]}", "b:1 b:0"},
  {"{\"inputs\":[\":person/name\"]}", "k::person/name"},
  {"{\"inputs\":[\"Ann\"]}", "s:Ann"},
  {"{\"inputs\":[\"\"]}", "s:"},
  {"{\"inputs\":[\"a:b\"]}", "s:a:b"},
  /* valid UTF-8 and a surrogate pair escape pass the UTF-8 checks: é, 😀 */
  {"{\"inputs\":[\"\xc3\xa9\\ud83d\\ude00\xf0\x9f\x98\x80\"]}", "s:\xc3\xa9\xf0\x9f\x98\x80\xf0\x9f\x98\x80"},
  /* int64 exact, past 2^53 (peer fault B31) */
  {"{\"inputs\":[9007199254740993]}", "i:9007199254740993"},
  {"{\"inputs\":[9223372036854775807,-9223372036854775808]}",
   "i:9223372036854775807 i:-9223372036854775808"},
  /* collections, tuples, relations; scalar and collection inputs mix */
  {"{\"inputs\":[[1,2,3]]}", "[i:1 i:2 i:3]"},
  {"{\"inputs\":[\"x\", [\":a/b\", 2.5], [[1,\"y\"],[2,\"z\"]]]}",
   "s:x [k::a/b d:2.5] [[i:1 s:y] [i:2 s:z]]"},
  /* numbers inside strings do not disturb the exact-number matching */
  {"{\"inputs\":[\"12\", 9007199254740993, \"-3e4\", 7]}", "s:12 i:9007199254740993 s:-3e4 i:7"},
  /* {"edn": text} → that EDN value */
  {"{\"inputs\":[{\"edn\":\"#inst \\\"1970-01-01T00:00:01Z\\\"\"}]}", "inst:1000000"},
  {"{\"inputs\":[{\"edn\":\"[:person/email \\\"a@b\\\"]\"}]}", "[k::person/email s:a@b]"},
  {"{\"inputs\":[{\"edn\":\":kw\"}]}", "k::kw"},
  {"{\"inputs\":[{\"edn\":\"#uuid \\\"6ba7b810-9dad-11d1-80b4-00c04fd430c8\\\"\"}]}", "uuid"},
  /* asOf / since do not produce inputs */
  {"{\"asOf\": 268435460}", "-"},
  {"{\"since\": 268435456, \"inputs\":[3]}", "i:3"},
  {"{\"inputs\":[3], \"asOf\": 268435460}", "i:3"},
  /* the direct scan of the common shapes (qOptsFast) and the shapes it
  ** leaves to the full parse give the same values: empty and nested
  ** vectors, whitespace anywhere, keys in any order, UTF-8, an escape, a
  ** nesting deeper than the scan goes */
  {"{\"inputs\":[[]]}", "[]"},
  {" {\n\"inputs\" : [ [ 1 , [ 2 , [ ] ] ] , \"a\" ] } \t", "[i:1 [i:2 []]] s:a"},
  {"{\"history\":false,\"inputs\":[\"\xc3\xa9\", \":a/b\"]}", "s:\xc3\xa9 k::a/b"},
  {"{\"asOf\":268435460,\"history\":true,\"inputs\":[-7]}", "i:-7"},
  {"{\"inputs\":[\"a\\\"b\", \"c\"]}", "s:a\"b s:c"},
  /* strings the scan reads eight bytes at a time: a quote, a backslash,
  ** UTF-8 and DEL at each place of a word, and past the end of one */
  {"{\"inputs\":[\"user1234@example.com\", \"abcdefgh\", \"abcdefg\\\"hijklmnop\"]}",
   "s:user1234@example.com s:abcdefgh s:abcdefg\"hijklmnop"},
  {"{\"inputs\":[\"abcdefghijklmno\xc3\xa9p\", \"\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\", \"ab\\\\cdefghijk\"]}",
   "s:abcdefghijklmno\xc3\xa9p s:\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f s:ab\\cdefghijk"},
  {"{\"inputs\":[\":abcdefghij/klmnopqrstu\", \"0123456789012345678901234\"]}",
   "k::abcdefghij/klmnopqrstu s:0123456789012345678901234"},
  /* a raw tab (the full parse takes it, as it did) */
  {"{\"inputs\":[\"abcdefghijk\tlmn\"]}", "s:abcdefghijk\tlmn"},
  {"{\"inputs\":[[[[[[[[[1]]]]]]]]]}", "[[[[[[[[i:1]]]]]]]]"},
  {"{\"inputs\":[[[[[[[[[[1]]]]]]]]]]}", "[[[[[[[[[i:1]]]]]]]]]"},
};

START_TEST(test_opts_good) {
  QueryOpts o;
  char *zErr = NULL, *zGot;
  const char *z = aGood[_i].zOpts;
  int rc;
  qOptsInit(&o);
  rc = qOptsParse(&o, z, z ? (int)strlen(z) : 0, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "opts %s: rc %d %s", z ? z : "NULL", rc, zErr ? zErr : "");
  zGot = tInputs(&o);
  ck_assert_msg(strcmp(zGot, aGood[_i].zInputs) == 0, "opts %s: got %s want %s", z ? z : "NULL",
                zGot, aGood[_i].zInputs);
  sqlite3_free(zGot);
  sqlite3_free(zErr);
  qOptsReset(&o);
  qOptsReset(&o);   /* idempotent */
}
END_TEST

static const struct {
  const char *zOpts;
  const char *zErr;    /* the whole message */
} aBad[] = {
  {"{\"input\":[1]}", "unknown option \"input\""},
  {"{\"inputs\":[1], \"limit\": 3}", "unknown option \"limit\""},
  {"{\"AsOf\": 1}", "unknown option \"AsOf\""},
  {"nope", "opts: not valid JSON"},
  {"{\"inputs\":[1]", "opts: not valid JSON"},
  {"{} {}", "opts: not valid JSON"},
  {"{\"inputs\":[1]} x", "opts: not valid JSON"},
  /* invalid UTF-8 is refused, as EDN input refuses it (cJSON alone passes the bytes through) */
  {"{\"inputs\":[\"\xff\xfe\"]}", "opts: invalid UTF-8 at byte 13"},
  {"{\"inputs\":[\"ab\xc3\"]}", "opts: invalid UTF-8 at byte 15"},
  {"{\"inputs\":[\"abcdefghijk\xff\"]}", "opts: invalid UTF-8 at byte 24"},
  {"{\"inputs\":[\"\xed\xa0\x80\"]}", "opts: invalid UTF-8 at byte 13"},
  {"{\"inputs\":[\"\\ud800\"]}", "opts: lone surrogate \\ud800 at byte 13"},
  {"{\"inputs\":[\"\\udc00x\"]}", "opts: lone surrogate \\udc00 at byte 13"},
  /* the second half must be an escape itself, not the letters XuDC00 */
  {"{\"inputs\":[\"\\ud800XuDC00\"]}", "opts: lone surrogate \\ud800 at byte 13"},
  {"[1,2]", "opts must be a JSON object"},
  {"3", "opts must be a JSON object"},
  {"\"s\"", "opts must be a JSON object"},
  {"{\"inputs\": 3}", "\"inputs\" must be an array"},
  {"{\"inputs\": {\"a\":1}}", "\"inputs\" must be an array"},
  {"{\"asOf\": 1.5}", "\"asOf\" must be an integer tx id or {\"edn\": \"#inst ...\"}"},
  {"{\"asOf\": \"5\"}", "\"asOf\" must be an integer tx id or {\"edn\": \"#inst ...\"}"},
  {"{\"since\": null}", "\"since\" must be an integer tx id or {\"edn\": \"#inst ...\"}"},
  {"{\"since\": {\"edn\": \":x\"}}",
   "\"since\" must be an integer tx id or {\"edn\": \"#inst ...\"}"},
  {"{\"asOf\": 5, \"since\": 3, \"since\": 4}", "duplicate option \"since\""},
  {"{\"history\": 1}", "\"history\" must be true or false"},
  {"{\"history\": null}", "\"history\" must be true or false"},
  {"{\"history\": true, \"history\": false}", "duplicate option \"history\""},
  {"{\"inputs\":[null]}", "\"inputs\" value 1 is null; SQL NULL has no Datalog value"},
  {"{\"inputs\":[1, {\"a\": 1}]}",
   "\"inputs\" value 2: an object must be {\"edn\": \"<EDN text>\"}"},
  {"{\"inputs\":[{\"edn\": 1}]}",
   "\"inputs\" value 1: an object must be {\"edn\": \"<EDN text>\"}"},
  {"{\"inputs\":[{\"edn\": \"[1\"}]}", "\"inputs\" value 1: line 1 col 1: unterminated vector"},
  {"{\"inputs\":[{\"edn\": \"1 2\"}]}",
   "\"inputs\" value 1: line 1 col 3: expected one EDN form, found another after it"},
  {"{\"inputs\":[[1, null]]}", "\"inputs\" value 1 is null; SQL NULL has no Datalog value"},
  {"{\"inputs\":[9223372036854775808]}",
   "\"inputs\" value 1: integer 9223372036854775808 is out of the 64-bit range"},
  {"{\"inputs\":[-9223372036854775809]}",
   "\"inputs\" value 1: integer -9223372036854775809 is out of the 64-bit range"},
  {"{\"inputs\":[1e999]}", "\"inputs\" value 1: number out of range"},
  {"{\"inputs\":[1], \"inputs\":[2]}", "duplicate option \"inputs\""},
  {"{\"asOf\":1, \"asOf\":2}", "duplicate option \"asOf\""},
  {"{\"inputs\":[1,]}", "opts: not valid JSON"},
  {"{\"inputs\":[,1]}", "opts: not valid JSON"},
  {"{\"inputs\":[1] ,}", "opts: not valid JSON"},
  {"{\"inputs\":[1 2]}", "opts: not valid JSON"},
  {"{\"inputs\":[tru]}", "opts: not valid JSON"},
  {"{\"inputs\":[\"a\\u0000b\"]}",
   "opts: \\u0000 in a JSON string is not supported; pass such a string as {\"edn\": "
   "\"\\\"a\\\\u0000b\\\"\"}"},
};

START_TEST(test_opts_bad) {
  QueryOpts o;
  char *zErr = NULL;
  const char *z = aBad[_i].zOpts;
  int rc;
  qOptsInit(&o);
  rc = qOptsParse(&o, z, (int)strlen(z), &zErr);
  ck_assert_msg(rc == SQLITE_ERROR, "opts %s: rc %d, want an error", z, rc);
  ck_assert_msg(zErr && strcmp(zErr, aBad[_i].zErr) == 0, "opts %s: got \"%s\" want \"%s\"", z,
                zErr ? zErr : "(none)", aBad[_i].zErr);
  ck_assert_int_eq(o.nInput, 0);   /* a failed parse leaves nothing behind */
  sqlite3_free(zErr);
  qOptsReset(&o);
}
END_TEST

/* asOf / since values land in the right fields. */
START_TEST(test_opts_tx) {
  QueryOpts o;
  char *zErr = NULL;
  const char *z1 = "{\"asOf\": 268435460}";
  const char *z2 = "{\"since\": {\"edn\": \"#inst \\\"1970-01-01T00:00:02Z\\\"\"}}";
  qOptsInit(&o);
  ck_assert_int_eq(qOptsParse(&o, z1, (int)strlen(z1), &zErr), SQLITE_OK);
  ck_assert(o.bAsOf && !o.bSince && o.iAsOf == 268435460 && o.pAsOfInst == NULL);
  ck_assert_int_eq(qOptsParse(&o, z2, (int)strlen(z2), &zErr), SQLITE_OK);
  ck_assert(!o.bAsOf && o.bSince && o.pSinceInst != NULL);
  ck_assert_int_eq(o.pSinceInst->type, EDN_INST);
  ck_assert(o.pSinceInst->u.i == 2000000);
  ck_assert(!o.bHistory);
  /* "history" composes with asOf; a new parse starts from none */
  {
    const char *z3 = "{\"history\": true, \"asOf\": 268435461}";
    const char *z4 = "{\"history\": false}";
    ck_assert_int_eq(qOptsParse(&o, z3, (int)strlen(z3), &zErr), SQLITE_OK);
    ck_assert(o.bHistory && o.bAsOf && o.iAsOf == 268435461);
    ck_assert_int_eq(qOptsParse(&o, z4, (int)strlen(z4), &zErr), SQLITE_OK);
    ck_assert(!o.bHistory && !o.bAsOf);
  }
  /* asOf and since together compose, as Datomic's (d/since (d/as-of db t2)
  ** t1): both kept, by the fast path (tx ids) and the full one (instants) */
  {
    const char *z5 = "{\"asOf\": 268435462, \"since\": 268435458}";
    const char *z6 = "{\"since\": {\"edn\": \"#inst \\\"1970-01-01T00:00:02Z\\\"\"},"
                     " \"asOf\": {\"edn\": \"#inst \\\"1970-01-01T00:00:03Z\\\"\"}}";
    ck_assert_int_eq(qOptsParse(&o, z5, (int)strlen(z5), &zErr), SQLITE_OK);
    ck_assert(o.bAsOf && o.bSince && o.iAsOf == 268435462 && o.iSince == 268435458);
    ck_assert(o.pAsOfInst == NULL && o.pSinceInst == NULL);
    ck_assert_int_eq(qOptsParse(&o, z6, (int)strlen(z6), &zErr), SQLITE_OK);
    ck_assert(o.bAsOf && o.bSince && o.pAsOfInst && o.pSinceInst);
    ck_assert(o.pAsOfInst->u.i == 3000000 && o.pSinceInst->u.i == 2000000);
  }
  qOptsReset(&o);
  sqlite3_free(zErr);
}
END_TEST

/* "sources" (README "Several sources"): each source in document order with its own
** filters; the top level's are $'s; numbers inside keep the inputs after
** them exact; a new parse starts from none. */
START_TEST(test_opts_sources) {
  QueryOpts o;
  char *zErr = NULL;
  const char *z = "{\"asOf\": 7, \"sources\": {\"$h\": {\"history\": true},"
                  " \"$2\": \"other.db\", \"$t\": {\"db\": \"t.db\", \"since\": 268435460},"
                  " \"$now\": {}}, \"inputs\": [9007199254740993]}";
  qOptsInit(&o);
  ck_assert_int_eq(qOptsParse(&o, z, (int)strlen(z), &zErr), SQLITE_OK);
  ck_assert(o.bAsOf && o.iAsOf == 7 && !o.bHistory);
  ck_assert_int_eq(o.nSource, 4);
  ck_assert_str_eq(o.aSource[0].zName, "$h");
  ck_assert(o.aSource[0].bHistory && o.aSource[0].zPath == NULL && !o.aSource[0].bAsOf);
  ck_assert_str_eq(o.aSource[1].zName, "$2");
  ck_assert_str_eq(o.aSource[1].zPath, "other.db");
  ck_assert(!o.aSource[1].bHistory && !o.aSource[1].bAsOf && !o.aSource[1].bSince);
  ck_assert_str_eq(o.aSource[2].zPath, "t.db");
  ck_assert(o.aSource[2].bSince && o.aSource[2].iSince == 268435460);
  ck_assert(o.aSource[3].zPath == NULL && !o.aSource[3].bSince && !o.aSource[3].bHistory);
  ck_assert(o.aSource[0].pSchema == NULL && o.aSource[1].pStore == NULL);
  ck_assert_int_eq(o.nInput, 1);
  ck_assert(o.aInput[0]->type == EDN_INT && o.aInput[0]->u.i == 9007199254740993LL);
  ck_assert_int_eq(qOptsParse(&o, "{}", 2, &zErr), SQLITE_OK);
  ck_assert_int_eq(o.nSource, 0);
  {
    const char *zBad = "{\"sources\": {\"$2\": {\"history\": 1}}}";
    ck_assert_int_eq(qOptsParse(&o, zBad, (int)strlen(zBad), &zErr), SQLITE_ERROR);
    ck_assert_str_eq(zErr, "\"sources\" $2: \"history\" must be true or false");
    ck_assert_int_eq(o.nSource, 0);
  }
  {
    const char *zDup = "{\"sources\": {\"$2\": \"a.db\", \"$2\": \"b.db\"}}";
    ck_assert_int_eq(qOptsParse(&o, zDup, (int)strlen(zDup), &zErr), SQLITE_ERROR);
    ck_assert_str_eq(zErr, "\"sources\": duplicate source $2");
  }
  qOptsReset(&o);
  sqlite3_free(zErr);
}
END_TEST

/* The explicit length rules: a NUL byte inside the text is not ignored,
** bytes past nOpts are not read. */
START_TEST(test_opts_length) {
  QueryOpts o;
  char *zErr = NULL;
  static const char zNul[] = "{\"inputs\":[1]}\0{\"x\":1}";
  static const char zPrefix[] = "{\"inputs\":[5]}garbage";
  qOptsInit(&o);
  ck_assert_int_eq(qOptsParse(&o, zNul, (int)sizeof zNul - 1, &zErr), SQLITE_ERROR);
  ck_assert_str_eq(zErr, "opts: not valid JSON");
  ck_assert_int_eq(qOptsParse(&o, zPrefix, 14, &zErr), SQLITE_OK);
  ck_assert_int_eq(o.nInput, 1);
  ck_assert(o.aInput[0]->type == EDN_INT && o.aInput[0]->u.i == 5);
  qOptsReset(&o);
  sqlite3_free(zErr);
}
END_TEST

/* Nesting: 256 levels of vectors are accepted, deeper is a clean error;
** 200 000 brackets do not reach cJSON's recursion at all (peer fault B34). */
static char *tNested(int nDepth) {
  sqlite3_str *p = sqlite3_str_new(NULL);
  sqlite3_str_appendall(p, "{\"inputs\":[");
  sqlite3_str_appendchar(p, nDepth, '[');
  sqlite3_str_appendall(p, "1");
  sqlite3_str_appendchar(p, nDepth, ']');
  sqlite3_str_appendall(p, "]}");
  return sqlite3_str_finish(p);
}

START_TEST(test_opts_depth) {
  static const struct { int nDepth; int rc; } a[] = {
    {1, SQLITE_OK}, {256, SQLITE_OK}, {257, SQLITE_ERROR}, {1000, SQLITE_ERROR}, {200000, SQLITE_ERROR},
  };
  unsigned k;
  for (k = 0; k < sizeof a / sizeof a[0]; k++) {
    QueryOpts o;
    char *zErr = NULL;
    char *z = tNested(a[k].nDepth);
    qOptsInit(&o);
    ck_assert_msg(qOptsParse(&o, z, (int)strlen(z), &zErr) == a[k].rc, "depth %d", a[k].nDepth);
    if (a[k].rc != SQLITE_OK) ck_assert_str_eq(zErr, "opts: nesting too deep (limit 256)");
    qOptsReset(&o);
    sqlite3_free(zErr);
    sqlite3_free(z);
  }
}
END_TEST

static Suite *optsSuite(void) {
  Suite *s = suite_create("opts");
  TCase *tc = tcase_create("qOptsParse");
  tcase_add_loop_test(tc, test_opts_good, 0, (int)(sizeof aGood / sizeof aGood[0]));
  tcase_add_loop_test(tc, test_opts_bad, 0, (int)(sizeof aBad / sizeof aBad[0]));
  tcase_add_test(tc, test_opts_tx);
  tcase_add_test(tc, test_opts_sources);
  tcase_add_test(tc, test_opts_length);
  tcase_add_test(tc, test_opts_depth);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(optsSuite)
