/*
** test_qgrowth.c — Check suite: the query compiler's work grows at most
** quadratically with the size of the query, family by family.
**
** Each family makes a query (and its opts) of size n: n data patterns in a
** chain, n `or` branches, n rules each calling the next, ... (the list is
** aFamily below). The query is compiled (qCompile, as edn_q does) at sizes
** n, 2n and 4n, and each compile's work is measured by deterministic
** counts, never by wall time: the bytes and the number of allocations the
** compile asks SQLite's allocator for (every string the compiler builds,
** copies or grows is an allocation), the compiler's steps (qcPoll's
** counter, read through the interrupt callback every QC_POLL_STEPS steps),
** the length of the compiled SQL, and what SQLite's own prepare of that
** SQL allocates (its parser and planner, which the compiler's output
** drives). Doubling n may at most quadruple each (QG_MAX_RATIO allows for
** the counts' constant parts), so the growth is at most quadratic.
**
** MENTAT_QGROWTH=1 prints each family's figures instead of only checking;
** MENTAT_QGROWTH=<family> runs that family at 1, 2, 4, ... 64 times its n.
*/
#include <time.h>
#include "testutil.h"
#include "query_compile.h"
#include "query_funcs.h"
#include "tx.h"

static Store *pStore = NULL;

/* Every allocation and reallocation: counts and requested bytes. */
static sqlite3_mem_methods qgMemDefault;
static sqlite3_int64 qgnAlloc, qgnBytes;

static void *qgMalloc(int n) {
  qgnAlloc++;
  qgnBytes += n;
  return qgMemDefault.xMalloc(n);
}

static void *qgRealloc(void *p, int n) {
  qgnAlloc++;
  qgnBytes += n;
  return qgMemDefault.xRealloc(p, n);
}

static void qgInstall(void) {
  static int bDone = 0;
  sqlite3_mem_methods m;
  if (bDone) return;
  bDone = 1;
  sqlite3_shutdown();
  ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &qgMemDefault), SQLITE_OK);
  m = qgMemDefault;
  m.xMalloc = qgMalloc;
  m.xRealloc = qgRealloc;
  ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_MALLOC, &m), SQLITE_OK);
  ck_assert_int_eq(sqlite3_initialize(), SQLITE_OK);
}

static const char *zSchema =
  "[{:db/ident :node/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}"
  " {:db/ident :node/follow :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}"
  " {:db/ident :node/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/index true}"
  " {:db/ident :node/v :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]";

static void setup(void) {
  char *zErr = NULL;
  sqlite3_str *pRep;
  sqlite3_str *pAttrs;
  char *zAttrs;
  int rc, i;
  qgInstall();
  pRep = sqlite3_str_new(NULL);
  storeCacheClear();
  storeSetConnHook(qfRegister);
  unlink(tuTempPath("g.db"));
  rc = storeAcquire(tuTempPath("g.db"), &pStore, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "acquire: %s", zErr ? zErr : "?");
  rc = txTransact(pStore, zSchema, (int)strlen(zSchema), pRep, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "schema: %s", zErr ? zErr : "?");
  /* :a/k0 .. :a/k255 for wide pulls */
  pAttrs = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pAttrs, "[");
  for (i = 0; i < 256; i++) {
    sqlite3_str_appendf(pAttrs, "{:db/ident :a/k%d :db/valueType :db.type/long"
                        " :db/cardinality :db.cardinality/one}", i);
  }
  sqlite3_str_appendall(pAttrs, "]");
  zAttrs = sqlite3_str_finish(pAttrs);
  rc = txTransact(pStore, zAttrs, (int)strlen(zAttrs), pRep, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "attrs: %s", zErr ? zErr : "?");
  sqlite3_free(zAttrs);
  sqlite3_free(sqlite3_str_finish(pRep));
}

static void teardown(void) {
  storeRelease(pStore);
  pStore = NULL;
  storeCacheClear();
}

/* ---- the families: each writes the query of size n into pQ and its opts
** JSON (or nothing) into pO */
typedef void (*QgMake)(int n, sqlite3_str *pQ, sqlite3_str *pO);

/* n data patterns joined in a chain: ?x0 -> ?x1 -> ... */
static void fChain(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendf(pQ, "[:find ?x0 ?x%d :where", n);
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " [?x%d :node/follow ?x%d]", i, i + 1);
  sqlite3_str_appendall(pQ, "]");
}

/* n independent patterns (a cross product) */
static void fIndep(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?x0 :where");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " [?x%d :node/v %d]", i, i);
  sqlite3_str_appendall(pQ, "]");
}

/* a chain of n functions each adding the constant 1 (and 1.0 every fourth) */
static void fFnConst(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendf(pQ, "[:find ?v%d :where [?e :node/v ?v0]", n);
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " [(+ ?v%d %s) ?v%d]", i, i % 4 == 3 ? "1.0" : "1", i + 1);
  sqlite3_str_appendall(pQ, "]");
}

/* a chain of n dependent functions */
static void fFnChain(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendf(pQ, "[:find ?v%d :where [?e :node/v ?v0]", n);
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " [(inc ?v%d) ?v%d]", i, i + 1);
  sqlite3_str_appendall(pQ, "]");
}

/* n predicates on one variable */
static void fPreds(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?e :where [?e :node/v ?v]");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " [(!= ?v %d)]", i);
  sqlite3_str_appendall(pQ, "]");
}

/* n predicates on one variable, each with a constant of its own */
static void fPredConsts(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?e :where [?e :node/v ?v]");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " [(> ?v %d)]", -1 - i);
  sqlite3_str_appendall(pQ, "]");
}

/* one or of n branches */
static void fOrWide(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?e :where [?e :node/name ?s] (or");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " [?e :node/v %d]", i);
  sqlite3_str_appendall(pQ, ")]");
}

/* n ors of two branches in a row */
static void fOrMany(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?e :where [?e :node/name ?s]");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " (or [?e :node/v %d] [?e :node/id %d])", i, i);
  sqlite3_str_appendall(pQ, "]");
}

/* ors nested n deep */
static void fOrDeep(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?e :where [?e :node/name ?s]");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " (or [?e :node/v %d]", i);
  sqlite3_str_appendall(pQ, " [?e :node/id 0]");
  for (i = 0; i < n; i++) sqlite3_str_appendall(pQ, ")");
  sqlite3_str_appendall(pQ, "]");
}

/* n nots in a row */
static void fNotMany(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?e :where [?e :node/name ?s]");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " (not [?e :node/v %d])", i);
  sqlite3_str_appendall(pQ, "]");
}

/* n not-joins in a row, each with a pattern of its own */
static void fNotJoinMany(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?e :where [?e :node/name ?s]");
  for (i = 0; i < n; i++) {
    sqlite3_str_appendf(pQ, " (not-join [?e] [?e :node/follow ?f%d] [?f%d :node/v %d])", i, i, i);
  }
  sqlite3_str_appendall(pQ, "]");
}

/* nots nested n deep */
static void fNotDeep(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?e :where [?e :node/name ?s]");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " (not [?e :node/v %d]", i);
  for (i = 0; i < n; i++) sqlite3_str_appendall(pQ, ")");
  sqlite3_str_appendall(pQ, "]");
}

/* Writes opts {"inputs": [{"edn": "<rules>"}, ...]} around rule set text. */
static void qgRulesOpts(sqlite3_str *pO, const char *zRules, const char *zMore) {
  sqlite3_str_appendf(pO, "{\"inputs\":[{\"edn\":\"[%s]\"}%s]}", zRules, zMore ? zMore : "");
}

/* Query zQuery over n rules r0 -> r1 -> ... -> r(n-1), rule i's body
** zStep (two %d: i, then i + 1), the last one follow edge. */
static void qgRuleChainOf(int n, const char *zQuery, const char *zStep, sqlite3_str *pQ,
                          sqlite3_str *pO) {
  sqlite3_str *pR = sqlite3_str_new(NULL);
  char *z;
  int i;
  sqlite3_str_appendall(pQ, zQuery);
  for (i = 0; i + 1 < n; i++) sqlite3_str_appendf(pR, zStep, i, i + 1);
  sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?b]]", n - 1);
  z = sqlite3_str_finish(pR);
  qgRulesOpts(pO, z, NULL);
  sqlite3_free(z);
}

/* n rules, each calling the next once (non-recursive) */
static void fRuleChain(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  qgRuleChainOf(n, "[:find ?y :in $ % :where [?x :node/id 1] (r0 ?x ?y)]",
                "[(r%d ?a ?b) [?a :node/follow ?c] (r%d ?c ?b)]", pQ, pO);
}

/* ... with both ends bound, so each call only tests for a path */
static void fRuleChainBound(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  fRuleChain(n, pQ, pO);
  sqlite3_str_reset(pQ);
  sqlite3_str_appendall(pQ, "[:find ?i :in $ % :where [?x :node/id 1] (r0 ?x ?y) [?y :node/id ?i]]");
}

/* n rules of one definition, each calling the next with every argument
** free (issue 19: nested a subquery a level, past SQLite's parser stack) */
static void fRuleChainFree(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  qgRuleChainOf(n, "[:find ?x ?y :in $ % :where (r0 ?x ?y)]",
                "[(r%d ?a ?b) (r%d ?b ?a) [(!= ?a ?b)]]", pQ, pO);
}

/* n rules of two definitions each calling the next (a union per level) */
static void fRuleChain2(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  sqlite3_str *pR = sqlite3_str_new(NULL);
  char *z;
  int i;
  sqlite3_str_appendall(pQ, "[:find ?y :in $ % :where [?x :node/id 1] (r0 ?x ?y)]");
  for (i = 0; i + 1 < n; i++) {
    sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?b]] [(r%d ?a ?b) (r%d ?b ?a)]", i, i, i + 1);
  }
  sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?b]]", n - 1);
  z = sqlite3_str_finish(pR);
  qgRulesOpts(pO, z, NULL);
  sqlite3_free(z);
}

/* n recursive rules, each calling itself and the next */
static void fRuleChainRec(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  sqlite3_str *pR = sqlite3_str_new(NULL);
  char *z;
  int i;
  sqlite3_str_appendall(pQ, "[:find ?y :in $ % :where [?x :node/id 1] (r0 ?x ?y)]");
  for (i = 0; i < n; i++) {
    sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?c] (r%d ?c ?b)]", i, i);
    if (i + 1 < n) sqlite3_str_appendf(pR, "[(r%d ?a ?b) (r%d ?a ?b)]", i, i + 1);
  }
  sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?b]]", n - 1);
  z = sqlite3_str_finish(pR);
  qgRulesOpts(pO, z, NULL);
  sqlite3_free(z);
}

/* n recursive rules, each a step then itself or a step then the next */
static void fRuleLevels(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  sqlite3_str *pR = sqlite3_str_new(NULL);
  char *z;
  int i;
  sqlite3_str_appendall(pQ, "[:find ?y :in $ % :where [?x :node/id 1] (r0 ?x ?y)]");
  for (i = 0; i < n; i++) {
    sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?c] (r%d ?c ?b)]", i, i);
    if (i + 1 < n) sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?c] (r%d ?c ?b)]", i, i + 1);
  }
  sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?b]]", n - 1);
  z = sqlite3_str_finish(pR);
  qgRulesOpts(pO, z, NULL);
  sqlite3_free(z);
}

/* a cycle of n mutually recursive rules, each an edge or an edge then the
** next, the last calling the first (issue 19: exponential in n) */
static void fRuleCycle(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  sqlite3_str *pR = sqlite3_str_new(NULL);
  char *z;
  int i;
  sqlite3_str_appendall(pQ, "[:find ?y :in $ % :where [?x :node/id 1] (r0 ?x ?y)]");
  for (i = 0; i < n; i++) {
    sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?b]]"
                        " [(r%d ?a ?b) [?a :node/follow ?c] (r%d ?c ?b)]", i, i, (i + 1) % n);
  }
  z = sqlite3_str_finish(pR);
  qgRulesOpts(pO, z, NULL);
  sqlite3_free(z);
}

/* ... with neither end bound */
static void fRuleCycleFree(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  fRuleCycle(n, pQ, pO);
  sqlite3_str_reset(pQ);
  sqlite3_str_appendall(pQ, "[:find ?x ?y :in $ % :where (r0 ?x ?y)]");
}

/* n rules, rule i calling rules i+1 and i+2 (so each reaches every rule
** after it: n^2 / 2 pairs of the rule set's reachability), the query
** calling the last one alone: the compiler still works out which rules
** reach which over the whole set, to find the recursive ones */
static void fRuleReach(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  sqlite3_str *pR = sqlite3_str_new(NULL);
  char *z;
  int i;
  sqlite3_str_appendf(pQ, "[:find ?y :in $ %% :where [?x :node/id 1] (r%d ?x ?y)]", n - 1);
  for (i = 0; i + 2 < n; i++) {
    sqlite3_str_appendf(pR, "[(r%d ?a ?b) (r%d ?a ?c) (r%d ?c ?b)]", i, i + 1, i + 2);
  }
  sqlite3_str_appendf(pR, "[(r%d ?a ?b) (r%d ?a ?b)]", n - 2, n - 1);
  sqlite3_str_appendf(pR, "[(r%d ?a ?b) [?a :node/follow ?b]]", n - 1);
  z = sqlite3_str_finish(pR);
  qgRulesOpts(pO, z, NULL);
  sqlite3_free(z);
}

/* one non-recursive rule called n times in a chain */
static void fRuleCalls(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  sqlite3_str_appendall(pQ, "[:find ?x0 ?x1 :in $ % :where [?x0 :node/id 1]");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " (nx ?x%d ?x%d)", i, i + 1);
  sqlite3_str_appendall(pQ, "]");
  qgRulesOpts(pO, "[(nx ?a ?b) [?a :node/follow ?b]] [(nx ?a ?b) [?b :node/follow ?a]]", NULL);
}

/* one recursive rule called n times in a chain */
static void fRuleCallsRec(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  sqlite3_str_appendall(pQ, "[:find ?x0 ?x1 :in $ % :where [?x0 :node/id 1]");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " (reach ?x%d ?x%d)", i, i + 1);
  sqlite3_str_appendall(pQ, "]");
  qgRulesOpts(pO, "[(reach ?a ?b) [?a :node/follow ?b]] [(reach ?a ?b) [?a :node/follow ?c] (reach ?c ?b)]", NULL);
}

/* n scalar inputs */
static void fInputs(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  sqlite3_str_appendall(pQ, "[:find ?e :in $");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " ?i%d", i);
  sqlite3_str_appendall(pQ, " :where [?e :node/v ?v]");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " [(!= ?v ?i%d)]", i);
  sqlite3_str_appendall(pQ, "]");
  sqlite3_str_appendall(pO, "{\"inputs\":[");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pO, "%s%d", i ? "," : "", i);
  sqlite3_str_appendall(pO, "]}");
}

/* a collection input of n values */
static void fCollInput(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  sqlite3_str_appendall(pQ, "[:find ?e :in $ [?v ...] :where [?e :node/v ?v]]");
  sqlite3_str_appendall(pO, "{\"inputs\":[[");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pO, "%s%d", i ? "," : "", i);
  sqlite3_str_appendall(pO, "]]}");
}

/* a relation input of n rows */
static void fRelInput(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  sqlite3_str_appendall(pQ, "[:find ?e ?s :in $ [[?v ?s]] :where [?e :node/v ?v]]");
  sqlite3_str_appendall(pO, "{\"inputs\":[[");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pO, "%s[%d,\"s%d\"]", i ? "," : "", i, i);
  sqlite3_str_appendall(pO, "]]}");
}

/* a pull pattern n attributes wide */
static void fPullWide(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find (pull ?e [");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " :a/k%d", i % 256);
  sqlite3_str_appendall(pQ, "]) :where [?e :node/id 1]]");
}

/* a pull pattern n maps deep */
static void fPullDeep(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find (pull ?e [:node/id");
  for (i = 0; i < n; i++) sqlite3_str_appendall(pQ, " {:node/follow [:node/id");
  for (i = 0; i < n; i++) sqlite3_str_appendall(pQ, "]}");
  sqlite3_str_appendall(pQ, "]) :where [?e :node/id 1]]");
}

/* n :find variables */
static void fFindMany(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " ?v%d", i);
  sqlite3_str_appendall(pQ, " :where [?e :node/v ?v0]");
  for (i = 1; i < n; i++) sqlite3_str_appendf(pQ, " [(+ ?v0 %d) ?v%d]", i, i);
  sqlite3_str_appendall(pQ, "]");
}

/* n find variables of (max ?v0 k), which cannot fail at run time (the
** column limit's test: a chain of (+ ?v0 k), each of which may overflow,
** is guarded clause by clause and named anew through gates, a value
** column each) */
static void fFindMax(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " ?v%d", i);
  sqlite3_str_appendall(pQ, " :where [?e :node/v ?v0]");
  for (i = 1; i < n; i++) sqlite3_str_appendf(pQ, " [(max ?v0 %d) ?v%d]", i, i);
  sqlite3_str_appendall(pQ, "]");
}

/* n aggregates */
static void fAggMany(int n, sqlite3_str *pQ, sqlite3_str *pO) {
  static const char *const az[] = {"count", "sum", "min", "max", "count-distinct", "avg"};
  int i;
  (void)pO;
  sqlite3_str_appendall(pQ, "[:find ?e");
  for (i = 0; i < n; i++) sqlite3_str_appendf(pQ, " (%s ?v%d)", az[i % 6], i);
  sqlite3_str_appendall(pQ, " :where [?e :node/v ?v0]");
  for (i = 1; i < n; i++) sqlite3_str_appendf(pQ, " [(+ ?v0 %d) ?v%d]", i, i);
  sqlite3_str_appendall(pQ, "]");
}

typedef struct QgFamily {
  const char *zName;
  QgMake xMake;
  int n;            /* the smallest size checked: n, 2n, 4n */
} QgFamily;

static const QgFamily aFamily[] = {
  { "chain", fChain, 12 },
  { "indep", fIndep, 12 },
  { "fnchain", fFnChain, 64 },
  { "fnconst", fFnConst, 64 },
  { "preds", fPreds, 256 },
  { "predconsts", fPredConsts, 256 },
  { "orwide", fOrWide, 64 },
  { "ormany", fOrMany, 8 },
  { "ordeep", fOrDeep, 2 },
  { "notmany", fNotMany, 16 },
  { "notjoinmany", fNotJoinMany, 8 },
  { "notdeep", fNotDeep, 2 },
  { "rulechain", fRuleChain, 8 },
  { "rulechainbound", fRuleChainBound, 8 },
  { "rulechainfree", fRuleChainFree, 8 },
  { "rulechain2", fRuleChain2, 4 },
  { "rulechainrec", fRuleChainRec, 4 },
  { "rulelevels", fRuleLevels, 4 },
  { "rulecycle", fRuleCycle, 8 },
  { "rulecyclefree", fRuleCycleFree, 8 },
  { "rulereach", fRuleReach, 512 },
  { "rulecalls", fRuleCalls, 8 },
  { "rulecallsrec", fRuleCallsRec, 8 },
  { "inputs", fInputs, 64 },
  { "collinput", fCollInput, 256 },
  { "relinput", fRelInput, 128 },
  { "pullwide", fPullWide, 32 },
  { "pulldeep", fPullDeep, 16 },
  { "findmany", fFindMany, 32 },
  { "aggmany", fAggMany, 16 },
};

/* What one compile did. */
typedef struct QgWork {
  sqlite3_int64 nBytes, nAlloc, nPoll, nSql, nPrepBytes;
  int nParam;                  /* the plan's parameters */
  int nNumbered;               /* ?NNN left in the text prepared */
  double tCompile, tPrepare;   /* seconds, printed only */
  int rc;
  char *zErr;
} QgWork;

static int qgnPoll;
static int qgPollCount(void *pArg) {
  (void)pArg;
  qgnPoll++;
  return 0;
}

static double qgNow(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Compiles family pF's query of size n and prepares its SQL; fills *pW. */
static void qgMeasure(const QgFamily *pF, int n, QgWork *pW) {
  sqlite3_str *pQ = sqlite3_str_new(NULL), *pO = sqlite3_str_new(NULL);
  char *zQ, *zO;
  QueryOpts opts;
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  QueryPlan *pPlan = NULL;
  char *zErr = NULL;
  int rc;
  double t0;
  memset(pW, 0, sizeof *pW);
  pF->xMake(n, pQ, pO);
  zQ = sqlite3_str_finish(pQ);
  zO = sqlite3_str_finish(pO);
  ck_assert_ptr_nonnull(zQ);
  qOptsInit(&opts);
  rc = qOptsParse(&opts, zO, zO ? (int)strlen(zO) : 0, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "%s %d: opts: %s", pF->zName, n, zErr ? zErr : "?");
  rc = storeReader(pStore, &pConn, &pSchema, &zErr);
  ck_assert_int_eq(rc, SQLITE_OK);
  opts.xInterrupted = qgPollCount;
  opts.pDb = pConn->db;
  qgnPoll = 0;
  qgnAlloc = qgnBytes = 0;
  t0 = qgNow();
  rc = qCompile(pSchema, zQ, (int)strlen(zQ), &opts, &pPlan, &zErr);
  pW->tCompile = qgNow() - t0;
  pW->nBytes = qgnBytes;
  pW->nAlloc = qgnAlloc;
  pW->nPoll = (sqlite3_int64)qgnPoll * 64;
  pW->rc = rc;
  if (rc == SQLITE_OK) {
    sqlite3_stmt *pStmt = NULL;
    pW->nSql = (sqlite3_int64)strlen(pPlan->zSql);
    pW->nParam = pPlan->nParam;
    qgnBytes = 0;
    t0 = qgNow();
    {
      /* as the plan cache prepares it (qCachePrepare) */
      char *zBare = qPlanSqlBare(pPlan->zSql);
      ck_assert_ptr_nonnull(zBare);
      rc = sqlite3_prepare_v2(pConn->db, zBare, -1, &pStmt, NULL);
      for (const char *z = zBare; (z = strchr(z, '?')) != NULL; z++) {
        if (z[1] >= '0' && z[1] <= '9') pW->nNumbered++;
      }
      sqlite3_free(zBare);
    }
    pW->tPrepare = qgNow() - t0;
    pW->nPrepBytes = qgnBytes;
    if (rc != SQLITE_OK) {
      pW->rc = rc;
      pW->zErr = sqlite3_mprintf("prepare: %s", sqlite3_errmsg(pConn->db));
    }
    sqlite3_finalize(pStmt);
    qPlanFree(pPlan);
  } else {
    pW->zErr = zErr;
    zErr = NULL;
  }
  storeReaderDone(pStore, pConn);
  schemaUnref(pSchema);
  qOptsReset(&opts);
  sqlite3_free(zErr);
  sqlite3_free(zQ);
  sqlite3_free(zO);
}

/* Most a doubling of the size may multiply a count by: 4 (quadratic) and
** some room for a count's constant part shrinking relative to it. */
#define QG_MAX_RATIO 4.5

static void qgPrint(const QgFamily *pF, int n, const QgWork *pW) {
  fprintf(stderr, "%-13s n=%-5d rc=%d bytes=%-11lld allocs=%-9lld steps=%-8lld sql=%-10lld"
          " prep=%-11lld compile=%.4fs prepare=%.4fs%s%s\n",
          pF->zName, n, pW->rc, pW->nBytes, pW->nAlloc, pW->nPoll, pW->nSql, pW->nPrepBytes,
          pW->tCompile, pW->tPrepare, pW->zErr ? " " : "", pW->zErr ? pW->zErr : "");
}

/* Checks b/a <= QG_MAX_RATIO. A count below nMin is too coarse to
** measure a ratio by (the steps are read every QC_POLL_STEPS): it passes
** while b stays below QG_MAX_RATIO * nMin. */
static void qgRatio(const QgFamily *pF, int n, const char *zWhat, sqlite3_int64 a, sqlite3_int64 b,
                    sqlite3_int64 nMin) {
  if (a < nMin) a = nMin;
  ck_assert_msg((double)b <= QG_MAX_RATIO * (double)(a > 0 ? a : 1),
                "%s: %s grows from %lld at n=%d to %lld at n=%d (more than x%.1f)",
                pF->zName, zWhat, a, n, b, 2 * n, QG_MAX_RATIO);
}

START_TEST(test_growth) {
  const QgFamily *pF = &aFamily[_i];
  const char *zEnv = getenv("MENTAT_QGROWTH");
  QgWork aW[3];
  int k;
  if (zEnv && strcmp(zEnv, "1") != 0) {
    if (strcmp(zEnv, pF->zName) != 0) return;
    for (k = 1; k <= 256; k *= 2) {
      QgWork w;
      qgMeasure(pF, pF->n * k, &w);
      qgPrint(pF, pF->n * k, &w);
      sqlite3_free(w.zErr);
      if (w.tCompile + w.tPrepare > 5) break;
    }
    return;
  }
  for (k = 0; k < 3; k++) {
    qgMeasure(pF, pF->n << k, &aW[k]);
    if (zEnv) qgPrint(pF, pF->n << k, &aW[k]);
    ck_assert_msg(aW[k].rc == SQLITE_OK, "%s n=%d: %s", pF->zName, pF->n << k,
                  aW[k].zErr ? aW[k].zErr : "?");
  }
  for (k = 0; k < 2; k++) {
    int n = pF->n << k;
    qgRatio(pF, n, "bytes allocated", aW[k].nBytes, aW[k + 1].nBytes, 1);
    qgRatio(pF, n, "allocations", aW[k].nAlloc, aW[k + 1].nAlloc, 1);
    qgRatio(pF, n, "compiler steps", aW[k].nPoll, aW[k + 1].nPoll, 16 * 64);
    qgRatio(pF, n, "SQL length", aW[k].nSql, aW[k + 1].nSql, 1);
    qgRatio(pF, n, "bytes SQLite's prepare allocated", aW[k].nPrepBytes, aW[k + 1].nPrepBytes, 1);
  }
  for (k = 0; k < 3; k++) sqlite3_free(aW[k].zErr);
}
END_TEST

/* Past SQLite's SQLITE_LIMIT_COLUMN (2000) the compile refuses, naming the
** element whose columns pass it, before SQLite's "too many columns in
** result set": 1024 find variables of (max ?v0 k), each a long or a double,
** take a value and a kind of number each (the DISTINCT set key tells 1 from
** 1.0), ?v0 a value alone: ?v1000 is the 2001st column. 512 compile. */
START_TEST(test_column_limit) {
  QgFamily f = { "findmax", fFindMax, 0 };
  QgWork w;
  qgMeasure(&f, 512, &w);
  ck_assert_msg(w.rc == SQLITE_OK, "512: %s", w.zErr ? w.zErr : "?");
  sqlite3_free(w.zErr);
  qgMeasure(&f, 1024, &w);
  ck_assert_int_eq(w.rc, SQLITE_ERROR);
  ck_assert_str_eq(w.zErr, "line 1 col 5898: the query's 1024 :find and :with elements take 2001 or"
                   " more result columns (each a value, with its type tag or its kind of number where"
                   " the type does not say); SQLite returns at most 2000 columns (SQLITE_LIMIT_COLUMN)");
  sqlite3_free(w.zErr);
}
END_TEST

/* Equal constants of predicates and functions share one parameter:
** SQLite's prepare looks up each ?NNN it meets again in a list of those it
** has seen (sqlite3VListNumToName, linear), so 8,000 [(+ ?a 1) ?b] of a
** parameter each took 2.6 s, x4.5 per doubling (issue 19). 1 and 1.0 stay
** two (a long and a double). */
START_TEST(test_const_params) {
  QgFamily f = { "fnconst", fFnConst, 0 };
  QgWork w;
  qgMeasure(&f, 2000, &w);
  ck_assert_msg(w.rc == SQLITE_OK, "2000: %s", w.zErr ? w.zErr : "?");
  ck_assert_int_eq(w.nParam, 2);
  sqlite3_free(w.zErr);
}
END_TEST

/* The text the plan cache prepares: a ?NNN that is the next number in
** text order becomes "?", which SQLite numbers the same (one past the
** largest before it), because SQLite's code generator looks each ?NNN's
** name up in a linear list (32,000 collection values prepared in 2.46 s,
** 0.09 s bare; breaker F3, issue 19). Outputs worked out by hand: a repeat,
** a jump and a number below the largest keep their digits; quotes, doubled
** quotes and comments are copied untouched. */
START_TEST(test_sql_bare_params) {
  static const char *az[][2] = {
    {"SELECT ?1, ?2, ?1, ?3", "SELECT ?, ?, ?1, ?"},
    {"SELECT ?2, ?1, ?3", "SELECT ?2, ?1, ?"},
    {"SELECT ?1, ?5, ?6, ?2", "SELECT ?, ?5, ?, ?2"},
    {"SELECT '?1', ?1, 'it''s ?2', ?2", "SELECT '?1', ?, 'it''s ?2', ?"},
    {"SELECT \"a?1\"\"?2\" , [?3], `?4`, ?1", "SELECT \"a?1\"\"?2\" , [?3], `?4`, ?"},
    {"SELECT ?1 -- ?2\n, ?2 /* ?3 */, ?3", "SELECT ? -- ?2\n, ? /* ?3 */, ?"},
    {"SELECT ?1 /* unclosed ?2", "SELECT ? /* unclosed ?2"},
    {"SELECT ?10, ?11", "SELECT ?10, ?"},
    {"SELECT 'unclosed ?1", "SELECT 'unclosed ?1"},
    {"", ""},
  };
  for (size_t i = 0; i < sizeof az / sizeof az[0]; i++) {
    char *z = qPlanSqlBare(az[i][0]);
    ck_assert_ptr_nonnull(z);
    ck_assert_str_eq(z, az[i][1]);
    sqlite3_free(z);
  }
}
END_TEST

/* A collection input of 30,000 values compiles to 30,000 parameters,
** and the text prepared carries them bare: no ?NNN left (the count itself
** is checked in test/cases/params_bare.test). */
START_TEST(test_collection_input_bare) {
  QgFamily f = { "collinput", fCollInput, 0 };
  QgWork w;
  qgMeasure(&f, 30000, &w);
  ck_assert_msg(w.rc == SQLITE_OK, "30000: %s", w.zErr ? w.zErr : "?");
  ck_assert_int_eq(w.nParam, 30000);
  ck_assert_int_eq(w.nNumbered, 0);
  sqlite3_free(w.zErr);
}
END_TEST

/* CPU seconds of the calling thread: a machine's load stretches wall time,
** far less the work done. */
static double qgCpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The least CPU time of three prepares of the plan of family pF's query of
** size n, as the plan cache prepares it; *pnOnce: how many of its operands
** are read through "(SELECT ?". */
static double qgPrepareCpu(const QgFamily *pF, int n, int *pnOnce) {
  sqlite3_str *pQ = sqlite3_str_new(NULL);
  char *zQ, *zErr = NULL, *zBare;
  QueryOpts opts;
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  QueryPlan *pPlan = NULL;
  double tBest = 1e9;
  int rc;
  pF->xMake(n, pQ, NULL);
  zQ = sqlite3_str_finish(pQ);
  qOptsInit(&opts);
  ck_assert_int_eq(storeReader(pStore, &pConn, &pSchema, &zErr), SQLITE_OK);
  opts.pDb = pConn->db;
  rc = qCompile(pSchema, zQ, (int)strlen(zQ), &opts, &pPlan, &zErr);
  ck_assert_msg(rc == SQLITE_OK, "%s %d: %s", pF->zName, n, zErr ? zErr : "?");
  *pnOnce = 0;
  for (const char *z = pPlan->zSql; (z = strstr(z, "(SELECT ?")) != NULL; z++) (*pnOnce)++;
  zBare = qPlanSqlBare(pPlan->zSql);
  ck_assert_ptr_nonnull(zBare);
  for (int k = 0; k < 3; k++) {
    sqlite3_stmt *pStmt = NULL;
    double t0 = qgCpu();
    ck_assert_int_eq(sqlite3_prepare_v2(pConn->db, zBare, -1, &pStmt, NULL), SQLITE_OK);
    if (qgCpu() - t0 < tBest) tBest = qgCpu() - t0;
    sqlite3_finalize(pStmt);
  }
  sqlite3_free(zBare);
  qPlanFree(pPlan);
  storeReaderDone(pStore, pConn);
  schemaUnref(pSchema);
  qOptsReset(&opts);
  sqlite3_free(zQ);
  return tBest;
}

/* Distinct constants compared in predicates ([(> ?v -1)] [(> ?v -2)] ...):
** SQLite codes each constant operand of a WHERE term once, after looking
** for an equal one among those it coded, in a list
** (sqlite3ExprCodeRunJustOnce), so they prepared in N^2, in SQLite's
** prepare, which polls no interrupt (breaker F1, issue 19: 8,000 took
** 1.2 s, 16,000 9 s). Past the first 1024 each is read through an
** uncorrelated scalar subquery, which SQLite runs once and prepares
** without that search: the SQL says so, and four times the predicates take
** at most eight times the prepare's CPU time (sixteen, quadratic, before).
** The answers are checked in test/cases/consts_many.test. */
START_TEST(test_distinct_const_preds) {
  QgFamily f = { "predconsts", fPredConsts, 0 };
  int nOnce1, nOnce4;
  double t1 = qgPrepareCpu(&f, 2000, &nOnce1), t4 = qgPrepareCpu(&f, 8000, &nOnce4);
  ck_assert_msg(t4 <= 8 * t1, "prepare: %.4f s CPU for 2000 predicates, %.4f s for 8000 (x%.1f)",
                t1, t4, t4 / t1);
  ck_assert_int_eq(nOnce1, 2000 - 1024);
  ck_assert_int_eq(nOnce4, 8000 - 1024);
}
END_TEST

static Suite *qgrowthSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("qgrowth");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_growth, 0, (int)(sizeof aFamily / sizeof aFamily[0]));
  tcase_add_test(tc, test_column_limit);
  tcase_add_test(tc, test_const_params);
  tcase_add_test(tc, test_sql_bare_params);
  tcase_add_test(tc, test_collection_input_bare);
  tcase_add_test(tc, test_distinct_const_preds);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(qgrowthSuite)
