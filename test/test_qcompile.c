/*
** test_qcompile.c — Check suite for the query compiler and runtime
** (query_compile*.c, query_run.c, query_funcs.c).
**
** A store file is created through storeAcquire and loaded through txTransact
** with the people of the public acceptance cases (and peer fault B13's
** entity); queries run through qRunOpen/qRunStep exactly as edn_q does.
** Each case is (query, inputs JSON) -> the rows as JSON, sorted and joined
** with ";" unless the query has :order. Expected rows are worked out by hand
** from the data below (they match the acceptance cases' `expect`).
** EXPLAIN QUERY PLAN tests pin the SQL shape: joins through refs and
** lookups must use an index, never a full scan of datoms.
*/
#include "testutil.h"
#include "query_compile.h"
#include "query_funcs.h"
#include "tuquery.h"
#include "tx.h"

static Store *pStore = NULL;

static const char *zSchema =
  "[{:db/ident :person/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}"
  " {:db/ident :person/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/index true}"
  " {:db/ident :person/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}"
  " {:db/ident :person/email :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}"
  " {:db/ident :person/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}"
  " {:db/ident :person/parent :db/valueType :db.type/ref :db/cardinality :db.cardinality/one :db/index true}"
  " {:db/ident :person/alias :db/valueType :db.type/string :db/cardinality :db.cardinality/many}"
  " {:db/ident :person/height :db/valueType :db.type/long :db/cardinality :db.cardinality/one}"
  " {:db/ident :person/vegetarian :db/valueType :db.type/boolean :db/cardinality :db.cardinality/one}"
  " {:db/ident :person/color :db/valueType :db.type/keyword :db/cardinality :db.cardinality/one}"
  " {:db/ident :person/salary :db/valueType :db.type/double :db/cardinality :db.cardinality/one}"
  " {:db/ident :person/born :db/valueType :db.type/instant :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/weight :db/valueType :db.type/double :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/key :db/valueType :db.type/keyword :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/count :db/valueType :db.type/long :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/id :db/valueType :db.type/uuid :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/date :db/valueType :db.type/instant :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/flag :db/valueType :db.type/boolean :db/cardinality :db.cardinality/one}"
  " {:db/ident :t/ref :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}"
  " {:db/ident :node/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}"
  " {:db/ident :node/follow :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]";

static const char *zData =
  "[{:db/id \"p1\" :person/id 1 :person/name \"Ivan\" :person/age 10 :person/email \"ivan1@example.com\""
  "  :person/friend [\"p2\" \"p3\"] :person/alias [\"Vanya\" \"Jo\"] :person/height 180 :person/vegetarian true"
  "  :person/color :color/red :person/salary 1500.5 :person/born #inst \"2010-03-01T00:00:00.000Z\"}"
  " {:db/id \"p2\" :person/id 2 :person/name \"Ivan\" :person/age 20 :person/email \"ivan2@example.com\""
  "  :person/friend [\"p3\"] :person/height 175 :person/vegetarian false :person/color :color/blue"
  "  :person/salary 2000.0 :person/parent \"p1\" :person/born #inst \"2000-06-15T12:00:00.000Z\"}"
  " {:db/id \"p3\" :person/id 3 :person/name \"Oleg\" :person/age 10 :person/friend [\"p4\"] :person/color :color/red :person/parent \"p1\"}"
  " {:db/id \"p4\" :person/id 4 :person/name \"Oleg\" :person/age 20 :person/vegetarian true :person/salary 900.25}"
  " {:db/id \"p5\" :person/id 5 :person/name \"Ivan\" :person/age 10 :person/parent \"p4\"}"
  " {:db/id \"p6\" :person/id 6 :person/name \"Ivan\" :person/age 20}"
  " {:db/id \"a\" :t/name \"foo\" :t/weight 0.3 :t/key :foo/bar :t/count 12"
  "  :t/id #uuid \"ff62d552-6569-4d1b-b667-04703041dfc4\" :t/date #inst \"2018-01-01T11:00:00Z\""
  "  :t/flag true :t/ref \"b\"}"
  " {:db/id \"b\" :t/name \"bar\"}"
  " {:db/id \"n1\" :node/id 1 :node/follow [\"n2\"]}"
  " {:db/id \"n2\" :node/id 2 :node/follow [\"n3\"]}"
  " {:db/id \"n3\" :node/id 3 :node/follow [\"n1\" \"n4\"]}"
  " {:db/id \"n4\" :node/id 4}]";

static void setup(void) {
  char *zErr = NULL;
  sqlite3_str *pRep = sqlite3_str_new(NULL);
  int rc;
  storeCacheClear();
  storeSetConnHook(qfRegister);   /* as vtab/entry.c does at load */
  unlink(tuTempPath("q.db"));
  rc = storeAcquire(tuTempPath("q.db"), &pStore, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "acquire: %s", zErr ? zErr : "?");
  rc = txTransact(pStore, zSchema, (int)strlen(zSchema), pRep, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "schema: %s", zErr ? zErr : "?");
  rc = txTransact(pStore, zData, (int)strlen(zData), pRep, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "data: %s", zErr ? zErr : "?");
  sqlite3_free(sqlite3_str_finish(pRep));
}

static void teardown(void) {
  storeRelease(pStore);
  pStore = NULL;
  storeCacheClear();
}

/* Runs zQuery with opts zOpts; returns rows (qRunRowJson) joined by ";",
** sorted unless bOrdered, or "ERROR: <message>". sqlite3_malloc'd. */
static char *runQuery(const char *zQuery, const char *zOpts, int bOrdered) {
  return tuRunQuery(pStore, zQuery, zOpts, bOrdered);
}

typedef struct QCase {
  const char *zQuery;
  const char *zOpts;
  const char *zExpect;   /* rows, or "ERROR: <the whole message>" */
} QCase;

static const QCase aCase[] = {
  /* find specs */
  { "[:find ?n :where [_ :person/name ?n]]", NULL, "[\"Ivan\"];[\"Oleg\"]" },
  { "[:find [?n ...] :where [_ :person/name ?n]]", NULL, "\"Ivan\";\"Oleg\"" },
  { "[:find ?n . :where [?e :person/id 3] [?e :person/name ?n]]", NULL, "\"Oleg\"" },
  { "[:find ?n . :where [?e :person/id 99] [?e :person/name ?n]]", NULL, "" },
  { "[:find [?n ?a] :where [?e :person/id 4] [?e :person/name ?n] [?e :person/age ?a]]", NULL, "[\"Oleg\",20]" },
  { "[:find ?n ?a :keys name age :where [?e :person/id 4] [?e :person/name ?n] [?e :person/age ?a]]",
    NULL, "{\":name\":\"Oleg\",\":age\":20}" },
  { "{:find [?n] :where [[?e :person/id 4] [?e :person/name ?n]]}", NULL, "[\"Oleg\"]" },
  /* constants typed by the attribute */
  { "[:find [?id ...] :where [?e :person/color :color/red] [?e :person/id ?id]]", NULL, "1;3" },
  { "[:find [?id ...] :where [?e :person/vegetarian true] [?e :person/id ?id]]", NULL, "1;4" },
  { "[:find ?a . :where [[:person/email \"ivan2@example.com\"] :person/age ?a]]", NULL, "20" },
  { "[:find [?fid ...] :where [?e :person/id 1] [?e :person/friend ?f] [?f :person/id ?fid]]", NULL, "2;3" },
  { "[:find [?id ...] :where [?e :person/parent [:person/id 1]] [?e :person/id ?id]]", NULL, "2;3" },
  { "[:find ?s . :where [?e :person/id 4] [?e :person/salary ?s]]", NULL, "900.25" },
  { "[:find ?b . :where [?e :person/id 2] [?e :person/born ?b]]", NULL, "\"2000-06-15T12:00:00.000000Z\"" },
  /* unknown attribute: empty, not an error */
  { "[:find ?e :where [?e :no/such 1]]", NULL, "" },
  { "[:find ?e :where [?e :person/age \"ten\"]]", NULL, "" },
  /* inputs */
  { "[:find [?id ...] :in $ ?age :where [?e :person/age ?age] [?e :person/id ?id]]", "{\"inputs\":[20]}", "2;4;6" },
  { "[:find [?id ...] :in ?age :where [?e :person/age ?age] [?e :person/id ?id]]", "{\"inputs\":[10]}", "1;3;5" },
  { "[:find ?a . :in $ ?e :where [?e :person/age ?a]]",
    "{\"inputs\":[{\"edn\":\"[:person/email \\\"ivan2@example.com\\\"]\"}]}", "20" },
  { "[:find [?id ...] :in $ [?n ?a] :where [?e :person/name ?n] [?e :person/age ?a] [?e :person/id ?id]]",
    "{\"inputs\":[[\"Oleg\",10]]}", "3" },
  { "[:find ?id :in $ [?n ...] :where [?e :person/name ?n] [?e :person/id ?id]]", "{\"inputs\":[[\"Oleg\"]]}", "[3];[4]" },
  { "[:find ?id :in $ [?n ...] :where [?e :person/name ?n] [?e :person/id ?id]]", "{\"inputs\":[[]]}", "" },
  { "[:find ?id :in $ [[?n ?a]] :where [?e :person/name ?n] [?e :person/age ?a] [?e :person/id ?id]]",
    "{\"inputs\":[[[\"Oleg\",10],[\"Ivan\",20]]]}", "[2];[3];[6]" },
  { "[:find [?id ...] :in $ ?c :where [?e :person/color ?c] [?e :person/id ?id]]", "{\"inputs\":[\":color/blue\"]}", "2" },
  { "[:find [?id ...] :in $ ?p :where [?e :person/parent ?p] [?e :person/id ?id]]", "{\"inputs\":[{\"edn\":\"[:person/id 4]\"}]}", "5" },
  { "[:find ?x :in $ [?x ...]]", "{\"inputs\":[[3,1,2]]}", "[1];[2];[3]" },
  { "[:find ?n :in $ ?id :where [?e :person/id ?id] [?e :person/name ?n]]", "{\"inputs\":[]}",
    "ERROR: query has 1 :in binding(s) but \"inputs\" has 0 value(s)" },
  /* predicates */
  { "[:find [?id ...] :where [?e :person/age ?a] [(>= ?a 10)] [(<= ?a 15)] [?e :person/id ?id]]", NULL, "1;3;5" },
  { "[:find [?id ...] :where [?e :person/age ?a] [(!= ?a 10)] [?e :person/id ?id]]", NULL, "2;4;6" },
  { "[:find [?id ...] :where [?e :person/salary ?s] [(> ?s 1000.0)] [?e :person/id ?id]]", NULL, "1;2" },
  { "[:find [?id ...] :where [?e :person/born ?b] [(< ?b #inst \"2005-01-01T00:00:00.000Z\")] [?e :person/id ?id]]", NULL, "2" },
  { "[:find [?id ...] :in $ ?t :where [?e :person/born ?b] [(> ?b ?t)] [?e :person/id ?id]]",
    "{\"inputs\":[{\"edn\":\"#inst \\\"2005-01-01T00:00:00.000Z\\\"\"}]}", "1" },
  { "[:find [?id ...] :where [?e :person/email ?m] [(clojure.string/starts-with? ?m \"ivan2\")] [?e :person/id ?id]]", NULL, "2" },
  { "[:find ?e :where [?e :person/age ?a] [(> ?x 1)]]", NULL, "ERROR: line 1 col 42: unbound variable ?x in predicate" },
  /* functions */
  { "[:find ?id ?h :where [?e :person/id ?id] [(get-else $ ?e :person/height 0) ?h]]", NULL,
    "[1,180];[2,175];[3,0];[4,0];[5,0];[6,0]" },
  { "[:find [?id ...] :where [?e :person/id ?id] [(missing? $ ?e :person/height)]]", NULL, "3;4;5;6" },
  { "[:find [?id ...] :where [(ground :color/red) ?c] [?e :person/color ?c] [?e :person/id ?id]]", NULL, "1;3" },
  { "[:find ?s ?n :where [(ground [[\"a\" 1] [\"b\" 2]]) [[?s ?n]]]]", NULL, "[\"a\",1];[\"b\",2]" },
  { "[:find ?t . :where [?e :person/id 4] [?e :person/name ?n] [?e :person/age ?a] [(tuple ?n ?a) ?t]]", NULL, "[\"Oleg\",20]" },
  { "[:find ?n ?c :where [_ :person/name ?n] [(count ?n) ?c]]", NULL, "[\"Ivan\",4];[\"Oleg\",4]" },
  { "[:find ?x . :where [?e :person/id 2] [?e :person/age ?a] [(* ?a 2) ?x]]", NULL, "40" },
  { "[:find ?t . :where [?e :person/id 4] [?e :person/salary ?s] [(type ?s) ?t]]", NULL, "\":db.type/double\"" },
  { "[:find ?t :in $ ?n :where [?e :t/name ?n] [?e _ ?v] [(type ?v) ?t] [(= ?t :db.type/uuid)]]",
    "{\"inputs\":[\"foo\"]}", "[\":db.type/uuid\"]" },
  /* the log: the data transaction holds 6 :person/age datoms; on a fresh
  ** store the schema is tx 268435457 and the data tx 268435458 */
  { "[:find (count ?e) . :where [?p :person/id 1 ?tx] [(tx-data $ ?tx) [[?e ?a ?v _ ?added]]] [?a :db/ident :person/age]]",
    NULL, "6" },
  { "[:find [?tx ...] :where [?p :person/id 1 ?t0] [(inc ?t0) ?t1] [(tx-ids $ ?t0 ?t1) [?tx ...]] [(= ?tx ?t0)] [(> ?tx 268435456)]]",
    NULL, "268435458" },
  /* not / or */
  { "[:find [?id ...] :where [?e :person/name] (not [?e :person/name \"Ivan\"]) [?e :person/id ?id]]", NULL, "3;4" },
  { "[:find [?id ...] :where [?e :person/id ?id] (not-join [?e] [?x :person/friend ?e])]", NULL, "1;5;6" },
  { "[:find [?id ...] :where (or [?e :person/name \"Oleg\"] [?e :person/age 30]) [?e :person/id ?id]]", NULL, "3;4" },
  { "[:find [?id ...] :where [?e :person/name \"Ivan\"] (or [?e :person/name \"Oleg\"] [?e :person/age 10]) [?e :person/id ?id]]", NULL, "1;5" },
  { "[:find [?id ...] :where [?e :person/name] (or-join [?e] (and [?e :person/friend ?f] [?f :person/name \"Oleg\"]) [?e :person/age 20]) [?e :person/id ?id]]",
    NULL, "1;2;3;4;6" },
  { "[:find ?e :where (or [?e :person/name ?n] [?e :person/age ?a])]", NULL, "ERROR: line 1 col 18: all branches of or must use the same variables,"
    " but ?a, ?n are not in every branch (use or-join to name the shared ones)" },
  /* rules */
  { "[:find [?bid ...] :in $ % ?start :where [?a :node/id ?start] (reach ?a ?b) [?b :node/id ?bid]]",
    "{\"inputs\":[{\"edn\":\"[[(reach ?x ?y) [?x :node/follow ?y]] [(reach ?x ?y) [?x :node/follow ?z] (reach ?z ?y)]]\"},2]}",
    "1;2;3;4" },
  { "[:find ?a ?b :in $ % :where (conn ?x ?y) [?x :node/id ?a] [?y :node/id ?b] [(<= ?a 2)] [(<= ?b 2)]]",
    "{\"inputs\":[{\"edn\":\"[[(conn ?x ?y) [?x :node/follow ?y]] [(conn ?x ?y) (conn ?y ?x)]]\"}]}",
    "[1,2];[2,1]" },
  /* two groups: a rule calling another (non-recursive) rule twice */
  { "[:find [?i ...] :in $ % :where [?a :node/id 1] (two ?a ?b) [?b :node/id ?i]]",
    "{\"inputs\":[{\"edn\":\"[[(one ?x ?y) [?x :node/follow ?y]] [(two ?x ?z) (one ?x ?y) (one ?y ?z)]]\"}]}",
    "3" },
  /* non-linear transitive closure (peer fault B15): terminates, same set
  ** as the linear form; n1->n2->n3->{n1,n4} */
  { "[:find ?a ?b :in $ % :where (tc ?x ?y) [?x :node/id ?a] [?y :node/id ?b] [(= ?a 4)]]",
    "{\"inputs\":[{\"edn\":\"[[(tc ?x ?y) [?x :node/follow ?y]] [(tc ?x ?y) (tc ?x ?z) (tc ?z ?y)]]\"}]}",
    "" },
  { "[:find [?b ...] :in $ % :where [?x :node/id 1] (tc ?x ?y) [?y :node/id ?b]]",
    "{\"inputs\":[{\"edn\":\"[[(tc ?x ?y) [?x :node/follow ?y]] [(tc ?x ?y) (tc ?z ?y) (tc ?x ?z)]]\"}]}",
    "1;2;3;4" },
  /* a condition on ?y beside the chain (every node has an id): its linear
  ** form, the closure; n1, n2, n3 have edges */
  { "[:find [?a ...] :in $ % :where (tc ?x ?y) [?x :node/id ?a]]",
    "{\"inputs\":[{\"edn\":\"[[(tc ?x ?y) [?x :node/follow ?y]] [(tc ?x ?y) (tc ?x ?z) (tc ?z ?y) [?y :node/id _]]]\"}]}",
    "1;2;3" },
  /* other non-linear shapes: refused clearly, never run (the place is the
  ** definition's, col 36 of the rule set) */
  { "[:find ?a :in $ % :where (tc ?a ?b)]",
    "{\"inputs\":[{\"edn\":\"[[(tc ?x ?y) [?x :node/follow ?y]] [(tc ?x ?y) (tc ?x ?z) (tc ?z ?y) [(< ?x ?y)]]]\"}]}",
    "ERROR: line 1 col 36: unsupported recursion: a definition of rule tc calls its own recursion 2 times"
    " (non-linear) and its other clauses relate ?x and ?y, so it has no linear form that gives the same"
    " answer; write it with one recursive call, e.g. [(r ?a ?b) [?a :x ?c] (r ?c ?b)]" },
  /* aggregates */
  { "[:find ?a (count ?e) :where [?e :person/age ?a]]", NULL, "[10,3];[20,3]" },
  { "[:find ?a (count ?a) :where [?e :person/age ?a]]", NULL, "[10,1];[20,1]" },
  { "[:find (count ?e) . :where [?e :person/name \"Ivan\"]]", NULL, "4" },
  { "[:find (count ?e) . :where [?e :person/name \"Nobody\"]]", NULL, "" },
  { "[:find [(min ?a) (max ?a)] :where [_ :person/age ?a]]", NULL, "[10,20]" },
  { "[:find (sum ?s) . :where [_ :person/salary ?s]]", NULL, "4400.75" },
  { "[:find (min ?b) . :where [_ :person/born ?b]]", NULL, "\"2000-06-15T12:00:00.000000Z\"" },
  /* mean 31, squares 441 256 121 16 1936 = 2770 / 5 = 554, sqrt(554) printed
  ** as the shortest text that reads back the same double */
  { "[:find (avg ?x) (median ?x) (variance ?x) (stddev ?x) :in $ [?x ...]]", "{\"inputs\":[[10,15,20,35,75]]}",
    "[31.0,20,554.0,23.53720459187964]" },
  { "[:find (min 2 ?n) (max 2 ?n) (distinct ?n) :where [_ :person/alias ?n]]", NULL,
    "[[\"Jo\",\"Vanya\"],[\"Vanya\",\"Jo\"],[\"Jo\",\"Vanya\"]]" },
  /* :order :limit :offset */
  { "[:find ?id :where [_ :person/id ?id] :order (desc ?id) :limit 2]", NULL, "[6];[5]" },
  { "[:find ?id :where [_ :person/id ?id] :order ?id :limit 2 :offset 3]", NULL, "[4];[5]" },
  { "[:find ?id :where [_ :person/id ?id] :order ?zz]", NULL, "ERROR: line 1 col 45: unbound variable ?zz in :order" },
  /* pull in find */
  { "[:find (pull ?e [:person/name :person/age]) . :where [?e :person/id 1]]", NULL,
    "{\":person/name\":\"Ivan\",\":person/age\":10}" },
  /* errors */
  { "[:find :where [?e :person/name ?n]]", NULL, "ERROR: line 1 col 2: :find with nothing to find" },
  { "[:find ?e :where [?e :person/name", NULL, "ERROR: line 1 col 18: unterminated vector" },
};

START_TEST(test_cases) {
  const QCase *pCase = &aCase[_i];
  char *zGot = runQuery(pCase->zQuery, pCase->zOpts, strstr(pCase->zQuery, ":order") != NULL);
  ck_assert_msg(strcmp(zGot, pCase->zExpect) == 0, "query %s\n  got:  %s\n  want: %s",
                pCase->zQuery, zGot, pCase->zExpect);
  sqlite3_free(zGot);
}
END_TEST

/* Peer fault B13: numeric predicates and constants over a variable
** attribute see only numbers; entity A is found through :t/name "foo". */
START_TEST(test_b13) {
  static const struct { const char *zQ, *zWant; } a[] = {
    { "[:find ?v :in $ ?n :where [?e :t/name ?n] [?e _ ?v] [(> ?v 0)]]", "[0.3];[12]" },
    { "[:find ?v :in $ ?n :where [?e :t/name ?n] [?e _ ?v] [(< ?v 1)]]", "[0.3]" },
    { "[:find ?i :in $ ?n :where [?e :t/name ?n] [?e ?a 12] [?a :db/ident ?i]]", "[\":t/count\"]" },
    { "[:find ?i :in $ ?n :where [?e :t/name ?n] [?e ?a 1] [?a :db/ident ?i]]", "" },
    { "[:find ?i :in $ ?n :where [?e :t/name ?n] [?e ?a \"foo\"] [?a :db/ident ?i]]", "[\":t/name\"]" },
  };
  int i;
  for (i = 0; i < (int)(sizeof a / sizeof a[0]); i++) {
    char *zGot = runQuery(a[i].zQ, "{\"inputs\":[\"foo\"]}", 0);
    ck_assert_msg(strcmp(zGot, a[i].zWant) == 0, "%s\n got %s want %s", a[i].zQ, zGot, a[i].zWant);
    sqlite3_free(zGot);
  }
}
END_TEST

/* The SQL of a query plan, and its EXPLAIN QUERY PLAN details joined by
** "|", for the shapes below. */
static char *explain(const char *zQuery, const char *zOpts, char **pzSql) {
  QueryOpts opts;
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  QueryPlan *pPlan = NULL;
  char *zErr = NULL;
  sqlite3_stmt *pStmt = NULL;
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  int rc;
  qOptsInit(&opts);
  rc = qOptsParse(&opts, zOpts, zOpts ? (int)strlen(zOpts) : 0, &zErr);
  ck_assert_int_eq(rc, SQLITE_OK);
  rc = storeReader(pStore, &pConn, &pSchema, &zErr);
  ck_assert_int_eq(rc, SQLITE_OK);
  rc = qCompile(pSchema, zQuery, (int)strlen(zQuery), &opts, &pPlan, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "compile: %s", zErr ? zErr : "?");
  {
    char *zEqp = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", pPlan->zSql);
    rc = sqlite3_prepare_v2(pConn->db, zEqp, -1, &pStmt, NULL);
    ck_assert_msg(rc == SQLITE_OK, "%s: %s", zEqp, sqlite3_errmsg(pConn->db));
    sqlite3_free(zEqp);
  }
  while (sqlite3_step(pStmt) == SQLITE_ROW) {
    sqlite3_str_appendf(pOut, "%s|", (const char*)sqlite3_column_text(pStmt, 3));
  }
  sqlite3_finalize(pStmt);
  *pzSql = sqlite3_mprintf("%s", pPlan->zSql);
  qPlanFree(pPlan);
  storeReaderDone(pStore, pConn);
  schemaUnref(pSchema);
  qOptsReset(&opts);
  sqlite3_free(zErr);
  return sqlite3_str_finish(pOut);
}

START_TEST(test_plan_shapes) {
  static const struct { const char *zQ, *zOpts; } a[] = {
    /* ref traversal: value place joined to an entity */
    { "[:find ?i :in $ ?email :where [?u :person/email ?email] [?i :person/parent ?u]]",
      "{\"inputs\":[\"ivan1@example.com\"]}" },
    /* ref through a non-indexed ref attribute (VAET) */
    { "[:find ?i :in $ ?email :where [?u :person/email ?email] [?i :person/friend ?u]]",
      "{\"inputs\":[\"ivan1@example.com\"]}" },
    /* forward ref then attribute of the target */
    { "[:find ?n :where [?e :person/id 1] [?e :person/friend ?f] [?f :person/name ?n]]", NULL },
    /* lookup ref in the entity place, and as an input */
    { "[:find ?a :where [[:person/email \"ivan2@example.com\"] :person/age ?a]]", NULL },
    { "[:find ?a :in $ ?e :where [?e :person/age ?a]]",
      "{\"inputs\":[{\"edn\":\"[:person/email \\\"ivan2@example.com\\\"]\"}]}" },
    /* collection input */
    { "[:find ?n :in $ [?email ...] :where [?e :person/email ?email] [?e :person/name ?n]]",
      "{\"inputs\":[[\"ivan1@example.com\",\"ivan2@example.com\"]]}" },
  };
  int i;
  for (i = 0; i < (int)(sizeof a / sizeof a[0]); i++) {
    char *zSql = NULL;
    char *zPlan = explain(a[i].zQ, a[i].zOpts, &zSql);
    ck_assert_msg(strstr(zPlan, "SCAN d") == NULL && strstr(zPlan, "SCAN datoms") == NULL,
                  "full scan for %s\n  sql: %s\n  plan: %s", a[i].zQ, zSql, zPlan);
    ck_assert_msg(strstr(zPlan, "USING INDEX") || strstr(zPlan, "USING COVERING INDEX"),
                  "no index for %s\n  plan: %s", a[i].zQ, zPlan);
    /* The affinity trap: a value never compares to a bare entity column. */
    ck_assert_msg(strstr(zSql, ".v = d") == NULL, "affinity trap in %s", zSql);
    sqlite3_free(zSql);
    sqlite3_free(zPlan);
  }
}
END_TEST

/* Attribute constants are inlined so per-attribute partial indexes match;
** user values are parameters. */
START_TEST(test_sql_text) {
  char *zSql = NULL;
  char *zPlan = explain("[:find ?e :where [?e :person/name \"Ivan\"]]", NULL, &zSql);
  ck_assert_msg(strstr(zSql, "Ivan") == NULL, "value pasted into SQL: %s", zSql);
  ck_assert_msg(strstr(zSql, ".a = 655") != NULL, "attribute not inlined: %s", zSql);
  /* (e, a, v) identifies a datom: ?e alone is already distinct here. */
  ck_assert_msg(strstr(zSql, "DISTINCT") == NULL, "%s", zSql);
  ck_assert_msg(strstr(zSql, "ORDER BY") == NULL, "%s", zSql);
  sqlite3_free(zSql);
  sqlite3_free(zPlan);
  /* Names repeat across entities: set semantics need DISTINCT. */
  zPlan = explain("[:find ?n :where [?e :person/name ?n]]", NULL, &zSql);
  ck_assert_msg(strstr(zSql, "SELECT DISTINCT") != NULL, "%s", zSql);
  sqlite3_free(zSql);
  sqlite3_free(zPlan);
}
END_TEST

/* DISTINCT is left out only where the schema proves rows distinct: a
** :db/unique value fixes its entity, an entity fixes a cardinality-one
** value (even a blank one), and so on through refs; cardinality-many and
** non-unique places keep it. Rows are worked out from the people above
** (p1 has two aliases and two friends; p2 and p3 have parent p1, p5 has p4). */
START_TEST(test_distinct_fd) {
  static const struct { const char *zQ, *zWant; int bDistinct; } a[] = {
    { "[:find ?id :where [?e :person/id ?id] [?e :person/name _]]",
      "[1];[2];[3];[4];[5];[6]", 0 },
    { "[:find ?id :where [?e :person/id ?id] [?e :person/alias _]]", "[1]", 1 },
    { "[:find ?id :where [?e :person/id ?id] [?e :person/friend _]]", "[1];[2];[3]", 1 },
    { "[:find ?id ?n :where [?e :person/id ?id] [?e :person/name ?n]]",
      "[1,\"Ivan\"];[2,\"Ivan\"];[3,\"Oleg\"];[4,\"Oleg\"];[5,\"Ivan\"];[6,\"Ivan\"]", 0 },
    { "[:find ?n :where [?e :person/id ?id] [?e :person/name ?n]]", "[\"Ivan\"];[\"Oleg\"]", 1 },
    { "[:find ?id ?pn :where [?e :person/id ?id] [?e :person/parent ?p] [?p :person/name ?pn]]",
      "[2,\"Ivan\"];[3,\"Ivan\"];[5,\"Oleg\"]", 0 },
    { "[:find ?pid :where [?c :person/parent ?p] [?p :person/id ?pid]]", "[1];[4]", 1 },
    { "[:find ?e :where [?e :person/alias \"Jo\"] [?e :person/alias _]]", "P1", 1 },
    { "[:find ?id (count ?a) :where [?e :person/id ?id] [?e :person/alias ?a]]", "[1,2]", 0 },
  };
  int i;
  for (i = 0; i < (int)(sizeof a / sizeof a[0]); i++) {
    char *zSql = NULL;
    char *zPlan = explain(a[i].zQ, NULL, &zSql);
    ck_assert_msg((strstr(zSql, "DISTINCT") != NULL) == a[i].bDistinct, "%s\n  sql: %s", a[i].zQ, zSql);
    ck_assert_msg(strstr(zPlan, "TEMP B-TREE FOR DISTINCT") == NULL || a[i].bDistinct, "%s", zPlan);
    {
      /* "P1": p1's entity (the only one with alias "Jo"), found by its id */
      char *zGot = runQuery(a[i].zQ, NULL, 0);
      char *zP1 = runQuery("[:find ?e . :where [?e :person/id 1]]", NULL, 0);
      char *zWant = strcmp(a[i].zWant, "P1") == 0 ? sqlite3_mprintf("[%s]", zP1)
                                                  : sqlite3_mprintf("%s", a[i].zWant);
      ck_assert_msg(strcmp(zGot, zWant) == 0, "%s\n got %s want %s", a[i].zQ, zGot, zWant);
      sqlite3_free(zWant);
      sqlite3_free(zP1);
      sqlite3_free(zGot);
    }
    sqlite3_free(zSql);
    sqlite3_free(zPlan);
  }
}
END_TEST

/* (count ?x) over a store column is count(*) (nothing to test for NULL),
** as the hand-written GROUP BY is; over an expression it stays count(x). */
START_TEST(test_count_star) {
  char *zSql = NULL;
  char *zPlan = explain("[:find ?n (count ?e) :where [?e :person/name ?n]]", NULL, &zSql);
  char *zGot;
  ck_assert_msg(strstr(zSql, "count(*) AS c1") != NULL, "%s", zSql);
  sqlite3_free(zSql);
  sqlite3_free(zPlan);
  zGot = runQuery("[:find ?n (count ?e) :where [?e :person/name ?n]]", NULL, 0);
  ck_assert_str_eq(zGot, "[\"Ivan\",4];[\"Oleg\",2]");
  sqlite3_free(zGot);
  zGot = runQuery("[:find (count ?x) . :where [?e :person/age ?a] [(* ?a 2) ?x]]", NULL, 0);
  ck_assert_str_eq(zGot, "2");
  sqlite3_free(zGot);
}
END_TEST

/* Patterns each reached through an index from what precedes them are
** joined with CROSS JOIN in the compiler's bound-first order, whatever the
** statistics say (this store is below the tuning size: no sqlite_stat1);
** a pattern only a scan can reach (here a non-indexed value), or two equally
** good places to start, leave the order to SQLite, as do rules and or-joins
** (their CTEs are not patterns).
** Aliases dN are numbered in the order the patterns are emitted. */
START_TEST(test_join_order) {
  static const struct { const char *zQ, *zOpts, *zFirst; int bCross; } a[] = {
    { "[:find ?i :in $ ?email :where [?i :person/friend ?u] [?u :person/email ?email]]",
      "{\"inputs\":[\"ivan1@example.com\"]}", "SEARCH d1 USING COVERING INDEX idx_auto_avet_", 1 },
    { "[:find ?n ?a :where [?e :person/id 1] [?e :person/friend ?f] [?f :person/name ?n] [?f :person/age ?a]]",
      NULL, "SEARCH d1 ", 1 },
    { "[:find ?e ?f :where [?e :person/id 1] [?e :person/age ?a] [?f :person/age ?a]]", NULL, NULL, 0 },
    { "[:find ?n :where [?e :person/age 10] [?e :person/name ?n]]", NULL, NULL, 0 },
    /* two indexed constants: which is more selective is for the statistics */
    { "[:find ?id :where [?e :person/name \"Ivan\"] [?e :person/email \"ivan1@example.com\"] [?e :person/id ?id]]",
      NULL, NULL, 0 },
    { "[:find ?n :where (or [?e :person/age 10] [?e :person/age 20]) [?e :person/name ?n]]", NULL, NULL, 0 },
  };
  int i;
  for (i = 0; i < (int)(sizeof a / sizeof a[0]); i++) {
    char *zSql = NULL;
    char *zPlan = explain(a[i].zQ, a[i].zOpts, &zSql);
    ck_assert_msg((strstr(zSql, "CROSS JOIN") != NULL) == a[i].bCross, "%s\n  sql: %s", a[i].zQ, zSql);
    if (a[i].zFirst) {
      ck_assert_msg(strncmp(zPlan, a[i].zFirst, strlen(a[i].zFirst)) == 0, "%s\n  plan: %s", a[i].zQ, zPlan);
    }
    sqlite3_free(zSql);
    sqlite3_free(zPlan);
  }
  {
    /* Among patterns reached alike, the one a predicate filters comes
    ** first (here age, third of four: d3), so rows are dropped before
    ** the names are read. p1's children are p2 (Ivan, 20), p3 (Oleg, 10). */
    const char *zQ = "[:find ?n :in $ ?email :where [?u :person/email ?email] [?e :person/parent ?u]"
                     " [?e :person/name ?n] [?e :person/age ?a] [(> ?a 5)]]";
    const char *zOpts = "{\"inputs\":[\"ivan1@example.com\"]}";
    char *zSql = NULL;
    char *zPlan = explain(zQ, zOpts, &zSql);
    char *zGot = runQuery(zQ, zOpts, 0);
    ck_assert_msg(strstr(zSql, "(d3.v > ?") != NULL && strstr(zSql, "CROSS JOIN") != NULL, "%s", zSql);
    ck_assert_str_eq(zGot, "[\"Ivan\"];[\"Oleg\"]");
    sqlite3_free(zGot);
    sqlite3_free(zSql);
    sqlite3_free(zPlan);
  }
  {
    /* A pattern joined only through a rule's answer waits for the rule:
    ** the rule's origins (ruleso) read the start node alone, not its
    ** product with every :node/id. n1 reaches n2, n3, n1 (a cycle), n4. */
    const char *zQ = "[:find ?id :in $ % ?s :where [?a :node/id ?s] (reach ?a ?b) [?b :node/id ?id]]";
    const char *zOpts = "{\"inputs\":[{\"edn\":\"[[(reach ?x ?y) [?x :node/follow ?y]]"
                        " [(reach ?x ?y) [?x :node/follow ?z] (reach ?z ?y)]]\"},1]}";
    char *zSql = NULL;
    char *zPlan = explain(zQ, zOpts, &zSql);
    char *zGot = runQuery(zQ, zOpts, 0);
    const char *zOrig = strstr(zSql, "ruleso");
    const char *zEnd = zOrig ? strstr(zOrig, "rulesm") : NULL;
    ck_assert_msg(zOrig && zEnd && strstr(zOrig, "datoms d2") == NULL
                  && (strstr(zOrig, ", datoms") == NULL || strstr(zOrig, ", datoms") > zEnd), "%s", zSql);
    ck_assert_str_eq(zGot, "[1];[2];[3];[4]");
    sqlite3_free(zGot);
    sqlite3_free(zSql);
    sqlite3_free(zPlan);
  }
}
END_TEST

/* A repeated query reuses its plan and statement. */
START_TEST(test_plan_cache) {
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  char *zErr = NULL;
  int n1 = 0, n2 = 0, k;
  sqlite3_stmt *p;
  for (k = 0; k < 3; k++) {
    char *z = runQuery("[:find ?n :in $ ?id :where [?e :person/id ?id] [?e :person/name ?n]]",
                       k == 2 ? "{\"inputs\":[3]}" : "{\"inputs\":[1]}", 0);
    ck_assert_str_eq(z, k == 2 ? "[\"Oleg\"]" : "[\"Ivan\"]");
    sqlite3_free(z);
    ck_assert_int_eq(storeReader(pStore, &pConn, &pSchema, &zErr), SQLITE_OK);
    if (k == 0) for (p = sqlite3_next_stmt(pConn->db, NULL); p; p = sqlite3_next_stmt(pConn->db, p)) n1++;
    else {
      n2 = 0;
      for (p = sqlite3_next_stmt(pConn->db, NULL); p; p = sqlite3_next_stmt(pConn->db, p)) n2++;
      ck_assert_int_eq(n1, n2);
    }
    storeReaderDone(pStore, pConn);
    schemaUnref(pSchema);
  }
}
END_TEST

/* asOf/since read the log (SPEC.md §6): person 1's age changes 10 -> 11 in a
** later transaction. */
START_TEST(test_history) {
  sqlite3_str *pRep = sqlite3_str_new(NULL);
  char *zErr = NULL, *zRep, *zOpts, *zGot;
  const char *zTx = "[[:db/add [:person/id 1] :person/age 11]]";
  const char *zQ = "[:find ?a . :where [?e :person/id 1] [?e :person/age ?a]]";
  const char *zHist = "{\"history\":true}";
  long long tx2 = 0;
  int rc = txTransact(pStore, zTx, (int)strlen(zTx), pRep, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "%s", zErr ? zErr : "?");
  zRep = sqlite3_str_finish(pRep);
  ck_assert(sscanf(strstr(zRep, "\"tx_id\":") + 8, "%lld", &tx2) == 1);
  zGot = runQuery(zQ, NULL, 0);
  ck_assert_str_eq(zGot, "11");
  sqlite3_free(zGot);
  zOpts = sqlite3_mprintf("{\"asOf\":%lld}", tx2 - 1);
  zGot = runQuery(zQ, zOpts, 0);
  ck_assert_str_eq(zGot, "10");
  sqlite3_free(zGot);
  sqlite3_free(zOpts);
  zOpts = sqlite3_mprintf("{\"asOf\":%lld}", tx2);
  zGot = runQuery(zQ, zOpts, 0);
  ck_assert_str_eq(zGot, "11");
  sqlite3_free(zGot);
  sqlite3_free(zOpts);
  /* since the data tx: only the new age; :person/id 1 is older, so the
  ** entity is found through the value alone. */
  zOpts = sqlite3_mprintf("{\"since\":%lld}", tx2 - 1);
  zGot = runQuery("[:find ?a :where [_ :person/age ?a]]", zOpts, 0);
  ck_assert_str_eq(zGot, "[11]");
  sqlite3_free(zGot);
  zGot = runQuery(zQ, zOpts, 0);
  ck_assert_str_eq(zGot, "");
  sqlite3_free(zGot);
  sqlite3_free(zOpts);
  /* A 5-place pattern on the current database: its one datom, added. */
  zGot = runQuery("[:find ?a ?added :where [?e :person/id 1] [?e :person/age ?a _ ?added]]", NULL, 0);
  ck_assert_str_eq(zGot, "[11,true]");
  sqlite3_free(zGot);
  /* The history database ("history": true) reads the log: the assertion,
  ** its retraction and the new assertion. */
  zGot = runQuery("[:find ?a ?added :where [?e :person/id 1] [?e :person/age ?a _ ?added]]", zHist, 0);
  ck_assert_str_eq(zGot, "[10,false];[10,true];[11,true]");
  sqlite3_free(zGot);
  zGot = runQuery("[:find ?a :where [?e :person/id 1] [?e :person/age ?a _ false]]", zHist, 0);
  ck_assert_str_eq(zGot, "[10]");
  sqlite3_free(zGot);
  /* Log rows repeat a datom (asserted, retracted): the set has it once. */
  zGot = runQuery("[:find ?a :where [?e :person/id 1] [?e :person/age ?a _ _]]", zHist, 0);
  ck_assert_str_eq(zGot, "[10];[11]");
  sqlite3_free(zGot);
  /* One entity, two values: the rows are distinct pairs. */
  zGot = runQuery("[:find ?e ?a :where [?e :person/age ?a ?tx ?added] [?e :person/id 1]]", zHist, 0);
  {
    char *zP1 = runQuery("[:find ?e . :where [?e :person/id 1]]", NULL, 0);
    char *zWant = sqlite3_mprintf("[%s,10];[%s,11]", zP1, zP1);
    ck_assert_str_eq(zGot, zWant);
    sqlite3_free(zWant);
    sqlite3_free(zP1);
  }
  sqlite3_free(zGot);
  sqlite3_free(zRep);
}
END_TEST

/* Once the store is tuned (store_tune.c: managed indexes, statistics),
** as-of patterns bound by value read the log through the attribute's
** idx_mentat_log_avet_<a>,
** since patterns read idx_mentat_datoms_atx, aggregates and value lookups
** on a :db/index attribute read its covering idx_mentat_avet_<a> (without
** the format-index flags that would send SQLite to the table), and the
** answers of test_history stay the same. */
START_TEST(test_tuned_plans) {
  sqlite3_int64 nOld = configSetTuneMinDatoms(0);
  sqlite3_str *pRep = sqlite3_str_new(NULL);
  char *zErr = NULL, *zRep, *zOpts, *zSql = NULL, *zPlan, *zGot;
  const char *zTx = "[[:db/add [:person/id 1] :person/age 11]]";
  long long tx2 = 0;
  int rc = txTransact(pStore, zTx, (int)strlen(zTx), pRep, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "%s", zErr ? zErr : "?");
  zRep = sqlite3_str_finish(pRep);
  ck_assert(sscanf(strstr(zRep, "\"tx_id\":") + 8, "%lld", &tx2) == 1);
  sqlite3_free(zRep);

  zOpts = sqlite3_mprintf("{\"asOf\":%lld,\"inputs\":[\"ivan1@example.com\"]}", tx2 - 1);
  zPlan = explain("[:find ?a . :in $ ?m :where [?e :person/email ?m] [?e :person/age ?a]]", zOpts, &zSql);
  /* :person/email's own log value index (store_tune.c) */
  ck_assert_msg(strstr(zPlan, "SEARCH d1 USING COVERING INDEX idx_mentat_log_avet_") != NULL
                && strstr(zPlan, " (a=? AND v=?)") != NULL,
                "as-of by value: %s\n  sql: %s", zPlan, zSql);
  ck_assert_msg(strstr(zPlan, "SCAN") == NULL, "as-of scans: %s", zPlan);
  sqlite3_free(zPlan);
  sqlite3_free(zSql);
  zGot = runQuery("[:find ?a . :in $ ?m :where [?e :person/email ?m] [?e :person/age ?a]]", zOpts, 0);
  ck_assert_str_eq(zGot, "10");
  sqlite3_free(zGot);
  sqlite3_free(zOpts);

  zOpts = sqlite3_mprintf("{\"since\":%lld}", tx2 - 1);
  zPlan = explain("[:find ?a :where [_ :person/age ?a]]", zOpts, &zSql);
  ck_assert_msg(strstr(zPlan, "INDEX idx_mentat_datoms_atx (a=? AND tx>?)") != NULL,
                "since: %s\n  sql: %s", zPlan, zSql);
  sqlite3_free(zPlan);
  sqlite3_free(zSql);
  zGot = runQuery("[:find ?a :where [_ :person/age ?a]]", zOpts, 0);
  ck_assert_str_eq(zGot, "[11]");
  sqlite3_free(zGot);
  sqlite3_free(zOpts);

  /* :person/name is :db/index, neither unique nor a ref. */
  zPlan = explain("[:find ?n (count ?e) :where [?e :person/name ?n]]", NULL, &zSql);
  ck_assert_msg(strstr(zPlan, "COVERING INDEX idx_mentat_avet_") != NULL, "aggregate: %s\n  sql: %s",
                zPlan, zSql);
  sqlite3_free(zPlan);
  sqlite3_free(zSql);
  zPlan = explain("[:find ?e :where [?e :person/name \"Oleg\"]]", NULL, &zSql);
  ck_assert_msg(strstr(zPlan, "COVERING INDEX idx_mentat_avet_") != NULL, "lookup: %s\n  sql: %s",
                zPlan, zSql);
  ck_assert_msg(strstr(zSql, "index_avet") == NULL, "flags stated: %s", zSql);
  sqlite3_free(zPlan);
  sqlite3_free(zSql);
  zGot = runQuery("[:find ?n (count ?e) :where [?e :person/name ?n]]", NULL, 0);
  ck_assert_str_eq(zGot, "[\"Ivan\",4];[\"Oleg\",2]");
  sqlite3_free(zGot);

  /* Count by value on a value-indexed attribute: the skip-scan plan
  ** (query_compile_agg.c), with the answers of the general plan (here
  ** forced by count-distinct, equal to count on (e, v) pairs) and by hand. */
  {
    static const struct { const char *zQ, *zGeneral, *zWant; } aVc[] = {
      { "[:find ?n (count ?e) :where [?e :person/name ?n]]",
        "[:find ?n (count-distinct ?e) :where [?e :person/name ?n]]",
        "[\"Ivan\",4];[\"Oleg\",2]" },
      { "[:find (count ?e) ?n :where [?e :person/name ?n]]",
        "[:find (count-distinct ?e) ?n :where [?e :person/name ?n]]",
        "[2,\"Oleg\"];[4,\"Ivan\"]" },
      /* unique string (the format's idx_auto_avet_<a>) */
      { "[:find ?m (count ?e) :where [?e :person/email ?m]]",
        "[:find ?m (count-distinct ?e) :where [?e :person/email ?m]]",
        "[\"ivan1@example.com\",1];[\"ivan2@example.com\",1]" },
      /* indexed ref: p1 is the parent of p2 and p3, p4 of p5 */
      { "[:find ?p (count ?e) :where [?e :person/parent ?p]]",
        "[:find ?p (count-distinct ?e) :where [?e :person/parent ?p]]", NULL },
    };
    for (int k = 0; k < (int)(sizeof aVc / sizeof aVc[0]); k++) {
      char *zGeneral;
      zPlan = explain(aVc[k].zQ, NULL, &zSql);
      ck_assert_msg(strstr(zSql, "WITH RECURSIVE vs(v)") != NULL, "%s: %s", aVc[k].zQ, zSql);
      ck_assert_msg(strstr(zPlan, "SCAN") == NULL || strstr(zPlan, "SCAN vs") != NULL
                    || strstr(zPlan, "SCAN CONSTANT ROW") != NULL, "%s scans: %s", aVc[k].zQ, zPlan);
      sqlite3_free(zPlan);
      sqlite3_free(zSql);
      zPlan = explain(aVc[k].zGeneral, NULL, &zSql);
      ck_assert_msg(strstr(zSql, "WITH RECURSIVE vs(v)") == NULL, "%s: %s", aVc[k].zGeneral, zSql);
      sqlite3_free(zPlan);
      sqlite3_free(zSql);
      zGot = runQuery(aVc[k].zQ, NULL, 0);
      zGeneral = runQuery(aVc[k].zGeneral, NULL, 0);
      ck_assert_str_eq(zGot, zGeneral);
      if (aVc[k].zWant) {
        ck_assert_str_eq(zGot, aVc[k].zWant);
      } else {
        char *zP1 = runQuery("[:find ?p . :where [?p :person/id 1]]", NULL, 0);
        char *zP4 = runQuery("[:find ?p . :where [?p :person/id 4]]", NULL, 0);
        char *zWant = sqlite3_mprintf("[%s,2];[%s,1]", zP1, zP4);
        ck_assert_str_eq(zGot, zWant);
        sqlite3_free(zWant);
        sqlite3_free(zP1);
        sqlite3_free(zP4);
      }
      sqlite3_free(zGot);
      sqlite3_free(zGeneral);
    }
    /* Not that plan: an attribute without a value index, a history
    ** database, a second clause. */
    zPlan = explain("[:find ?a (count ?e) :where [?e :person/age ?a]]", NULL, &zSql);
    ck_assert_msg(strstr(zSql, "WITH RECURSIVE vs(v)") == NULL, "%s", zSql);
    sqlite3_free(zPlan);
    sqlite3_free(zSql);
    zOpts = sqlite3_mprintf("{\"asOf\":%lld}", tx2 - 1);
    zPlan = explain("[:find ?n (count ?e) :where [?e :person/name ?n]]", zOpts, &zSql);
    ck_assert_msg(strstr(zSql, "WITH RECURSIVE vs(v)") == NULL, "%s", zSql);
    sqlite3_free(zPlan);
    sqlite3_free(zSql);
    zGot = runQuery("[:find ?n (count ?e) :where [?e :person/name ?n]]", zOpts, 0);
    ck_assert_str_eq(zGot, "[\"Ivan\",4];[\"Oleg\",2]");
    sqlite3_free(zGot);
    sqlite3_free(zOpts);
    /* age 10: p3 (Oleg) and p5 (Ivan); p1 is 11 since this test's tx */
    zGot = runQuery("[:find ?n (count ?e) :where [?e :person/name ?n] [?e :person/age 10]]", NULL, 0);
    ck_assert_str_eq(zGot, "[\"Ivan\",1];[\"Oleg\",1]");
    sqlite3_free(zGot);
  }
  configSetTuneMinDatoms(nOld);
}
END_TEST

/* ---- OOM: every allocation of compile + run may fail: each round gives
** SQLITE_NOMEM or the whole right answer, never another error, a partial
** answer, a crash or a leak (run under valgrind); after a failure the query
** runs right again. Answers by hand from the people above:
**  0  ages 10 or 20 (all six), not p3: Ivan p1 p2 p5 p6, Oleg p4;
**  1  n1 -> n2 -> n3 -> {n1, n4}: every node is reached from n1;
**  2  p4: its name as a pull map, and the tuple [name age]. */

START_TEST(test_oom) {
  static const char *const azQ[] = {
    "[:find ?n (count ?e) :in $ [?a ...] :where [?e :person/age ?a] [?e :person/name ?n]"
    " (not [?e :person/id 3]) (or [?e :person/age 10] [?e :person/age 20])]",
    "[:find [?bid ...] :in $ % :where [?a :node/id 1] (reach ?a ?b) [?b :node/id ?bid]]",
    "[:find (pull ?e [:person/name]) ?t :where [?e :person/id 4] [?e :person/name ?n]"
    " [?e :person/age ?a] [(tuple ?n ?a) ?t] [(get-else $ ?e :person/height 0) ?h]]",
  };
  static const char *const azOpts[] = {
    "{\"inputs\":[[10,20]]}",
    "{\"inputs\":[{\"edn\":\"[[(reach ?x ?y) [?x :node/follow ?y]] [(reach ?x ?y) [?x :node/follow ?z] (reach ?z ?y)]]\"}]}",
    NULL,
  };
  static const char *const azWant[] = {
    "[\"Ivan\",4];[\"Oleg\",1]",
    "1;2;3;4",
    "[{\":person/name\":\"Oleg\"},[\"Oleg\",20]]",
  };
  int iQ;
  teardown();
  tuOomInstall();
  setup();
  for (iQ = 0; iQ < 3; iQ++) tuOomSweep(pStore, azQ[iQ], azOpts[iQ], azWant[iQ], 5000);
}
END_TEST

/* ---- Interrupts during compile: the compile polls QueryOpts.xInterrupted
** (every QC_POLL_STEPS steps); an interrupt at any poll must end the
** compile with SQLITE_INTERRUPT and "interrupted", never a crash or a
** half-built rule context used afterwards (a fuzz input once interrupted
** the rule analysis, qcxPrepare, and the call compiled on with it). Each
** query is compiled with the interrupt at its 1st, 2nd, ... callback until
** one compile finishes; run under `make asan` / valgrind for the memory
** side. */

static int nInterruptAt, nInterruptSeen;
static int interruptAt(void *pArg) {
  (void)pArg;
  return ++nInterruptSeen >= nInterruptAt;
}

START_TEST(test_interrupt_sweep) {
  static const char *const azQ[] = {
    "[:find ?b :in $ % :where (a0 [:node/id 2] ?y) [?y :node/id ?b]]",
    "[:find ?b :in $ % :where [?a :node/id 1] (reach ?a ?x) (not-join [?x] (reach ?x ?a)) [?x :node/id ?b]]",
    "[:find ?b :in $ % :where [?a :node/id 1] (hop ?a ?x) [?x :node/id ?b]]",
  };
  static const char *const azRules[] = {
    "[[(a0 ?x ?y) (a1 ?x ?y)] [(a0 ?x ?y) (a1 ?y ?x)] [(a1 ?x ?y) (a2 ?x ?y)] [(a1 ?x ?y) (a2 ?y ?x)] [(a2 ?x ?y) (a3 ?x ?y)] [(a2 ?x ?y) (a3 ?y ?x)] [(a3 ?x ?y) (a4 ?x ?y)] [(a3 ?x ?y) (a4 ?y ?x)] [(a4 ?x ?y) (a5 ?x ?y)] [(a4 ?x ?y) (a5 ?y ?x)] [(a5 ?x ?y) (a6 ?x ?y)] [(a5 ?x ?y) (a6 ?y ?x)] [(a6 ?x ?y) (a7 ?x ?y)] [(a6 ?x ?y) (a7 ?y ?x)] [(a7 ?x ?y) (a8 ?x ?y)] [(a7 ?x ?y) (a8 ?y ?x)] [(a8 ?x ?y) (a9 ?x ?y)] [(a8 ?x ?y) (a9 ?y ?x)] [(a9 ?x ?y) (a10 ?x ?y)] [(a9 ?x ?y) (a10 ?y ?x)] [(a10 ?x ?y) (a11 ?x ?y)] [(a10 ?x ?y) (a11 ?y ?x)] [(a11 ?x ?y) (a12 ?x ?y)] [(a11 ?x ?y) (a12 ?y ?x)] [(a12 ?x ?y) (a13 ?x ?y)] [(a12 ?x ?y) (a13 ?y ?x)] [(a13 ?x ?y) (a14 ?x ?y)] [(a13 ?x ?y) (a14 ?y ?x)] [(a14 ?x ?y) (a15 ?x ?y)] [(a14 ?x ?y) (a15 ?y ?x)] [(a15 ?x ?y) (a16 ?x ?y)] [(a15 ?x ?y) (a16 ?y ?x)] [(a16 ?x ?y) (a17 ?x ?y)] [(a16 ?x ?y) (a17 ?y ?x)] [(a17 ?x ?y) (a18 ?x ?y)] [(a17 ?x ?y) (a18 ?y ?x)] [(a18 ?x ?y) (a19 ?x ?y)] [(a18 ?x ?y) (a19 ?y ?x)] [(a19 ?x ?y) (a20 ?x ?y)] [(a19 ?x ?y) (a20 ?y ?x)] [(a20 ?x ?y) (a21 ?x ?y)] [(a20 ?x ?y) (a21 ?y ?x)] [(a21 ?x ?y) (a22 ?x ?y)] [(a21 ?x ?y) (a22 ?y ?x)] [(a22 ?x ?y) (a23 ?x ?y)] [(a22 ?x ?y) (a23 ?y ?x)] [(a23 ?x ?y) (a24 ?x ?y)] [(a23 ?x ?y) (a24 ?y ?x)] [(a24 ?x ?y) (a25 ?x ?y)] [(a24 ?x ?y) (a25 ?y ?x)] [(a25 ?x ?y) (a26 ?x ?y)] [(a25 ?x ?y) (a26 ?y ?x)] [(a26 ?x ?y) (a27 ?x ?y)] [(a26 ?x ?y) (a27 ?y ?x)] [(a27 ?x ?y) (a28 ?x ?y)] [(a27 ?x ?y) (a28 ?y ?x)] [(a28 ?x ?y) (a29 ?x ?y)] [(a28 ?x ?y) (a29 ?y ?x)] [(a29 ?x ?y) (a30 ?x ?y)] [(a29 ?x ?y) (a30 ?y ?x)] [(a30 ?x ?y) (a31 ?x ?y)] [(a30 ?x ?y) (a31 ?y ?x)] [(a31 ?x ?y) (a32 ?x ?y)] [(a31 ?x ?y) (a32 ?y ?x)] [(a32 ?x ?y) (a33 ?x ?y)] [(a32 ?x ?y) (a33 ?y ?x)] [(a33 ?x ?y) (a34 ?x ?y)] [(a33 ?x ?y) (a34 ?y ?x)] [(a34 ?x ?y) (a35 ?x ?y)] [(a34 ?x ?y) (a35 ?y ?x)] [(a35 ?x ?y) (a36 ?x ?y)] [(a35 ?x ?y) (a36 ?y ?x)] [(a36 ?x ?y) (a37 ?x ?y)] [(a36 ?x ?y) (a37 ?y ?x)] [(a37 ?x ?y) (a38 ?x ?y)] [(a37 ?x ?y) (a38 ?y ?x)] [(a38 ?x ?y) (a39 ?x ?y)] [(a38 ?x ?y) (a39 ?y ?x)] [(a39 ?x ?y) (a40 ?x ?y)] [(a39 ?x ?y) (a40 ?y ?x)] [(a40 ?x ?y) [?x :node/follow ?y]]]",
    "[[(reach ?x ?y) [?x :node/follow ?y]] [(reach ?x ?y) [?x :node/follow ?z] (reach ?z ?y)]]",
    ("[[(hop ?x ?y) [?x :node/follow ?y]]"
     " [(hop ?x ?y) (or-join [?x ?y] (and [?x :node/follow ?z] (hop ?z ?y)) [?y :node/follow ?x])]]"),
  };
  int iQ;
  for (iQ = 0; iQ < 3; iQ++) {
    int bDone = 0;
    for (nInterruptAt = 1; !bDone && nInterruptAt < 100000; nInterruptAt++) {
      QueryOpts opts;
      StoreConn *pConn = NULL;
      Schema *pSchema = NULL;
      QueryPlan *pPlan = NULL;
      char *zErr = NULL;
      char *zOpts = sqlite3_mprintf("{\"inputs\":[{\"edn\":\"%s\"}]}", azRules[iQ]);
      int rc;
      qOptsInit(&opts);
      rc = qOptsParse(&opts, zOpts, (int)strlen(zOpts), &zErr);
      ck_assert_msg(rc == SQLITE_OK, "opts: %s", zErr ? zErr : "?");
      opts.xInterrupted = interruptAt;
      nInterruptSeen = 0;
      rc = storeReader(pStore, &pConn, &pSchema, &zErr);
      ck_assert_int_eq(rc, SQLITE_OK);
      rc = qCompile(pSchema, azQ[iQ], (int)strlen(azQ[iQ]), &opts, &pPlan, &zErr);
      if (rc == SQLITE_OK) {
        bDone = nInterruptSeen < nInterruptAt;
        qPlanFree(pPlan);
      } else {
        ck_assert_msg(rc == SQLITE_INTERRUPT && zErr && strcmp(zErr, "interrupted") == 0,
                      "query %d, interrupt at %d: rc %d: %s", iQ, nInterruptAt, rc, zErr ? zErr : "?");
      }
      storeReaderDone(pStore, pConn);
      schemaUnref(pSchema);
      qOptsReset(&opts);
      sqlite3_free(zErr);
      sqlite3_free(zOpts);
    }
    ck_assert_msg(bDone, "query %d: no compile finished", iQ);
    ck_assert_msg(iQ > 0 || nInterruptAt > 2, "query %d: the compile never polled", iQ);
  }
}
END_TEST

static Suite *qcompileSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("qcompile");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_cases, 0, (int)(sizeof aCase / sizeof aCase[0]));
  tcase_add_test(tc, test_b13);
  tcase_add_test(tc, test_plan_shapes);
  tcase_add_test(tc, test_sql_text);
  tcase_add_test(tc, test_distinct_fd);
  tcase_add_test(tc, test_count_star);
  tcase_add_test(tc, test_join_order);
  tcase_add_test(tc, test_plan_cache);
  tcase_add_test(tc, test_history);
  tcase_add_test(tc, test_tuned_plans);
  tcase_add_test(tc, test_interrupt_sweep);
  suite_add_tcase(s, tc);
  tc = tuFaultCase("oom", 300);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_oom);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(qcompileSuite)
