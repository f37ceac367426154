/*
** test_qparse.c — Check suite for the Datalog parser (query_parse.c).
**
** Table-driven: query text -> the canonical AST print of qpPrint (or
** the error with line and column). No database is involved: the parser
** depends on the EDN reader only. Expected prints written by hand from
** the grammar (Datomic's query grammar, plus Mentat's extras).
*/
#include "testutil.h"
#include "query_ast.h"

typedef struct PCase {
  const char *zQuery;
  const char *zExpect;    /* AST print, or "ERROR: <the whole message>" */
} PCase;

static const PCase aCase[] = {
  /* find specs */
  { "[:find ?a ?b :where [?a :x ?b]]", "find=rel(?a,?b) where=(pat(?a :x ?b))" },
  { "[:find [?a ...] :where [?a :x]]", "find=coll(?a) where=(pat(?a :x))" },
  { "[:find [?a ?b] :where [?a :x ?b]]", "find=tuple(?a,?b) where=(pat(?a :x ?b))" },
  { "[:find ?a . :where [?a :x]]", "find=scalar(?a) where=(pat(?a :x))" },
  { "[:find (count ?x) (min 2 ?y) (count-distinct ?z) (the ?w) :where [?x :a ?y] [?z :b ?w]]",
    "find=rel((count ?x),(min 2 ?y),(count-distinct ?z),(the ?w)) where=(pat(?x :a ?y) pat(?z :b ?w))" },
  { "[:find (pull ?e [:a {:b [*]}]) . :where [?e :a]]",
    "find=scalar((pull ?e [:a {:b [*]}])) where=(pat(?e :a))" },
  { "[:find ?a ?b :keys x y :where [?a :x ?b]]", "find=rel(?a,?b) keys=(x,y) where=(pat(?a :x ?b))" },
  { "[:find ?a :strs x :where [?a :x]]", "find=rel(?a) strs=(x) where=(pat(?a :x))" },
  { "[:find (sum ?h) :with ?m :where [?m :h ?h]]", "find=rel((sum ?h)) with=(?m) where=(pat(?m :h ?h))" },
  /* :in */
  { "[:find ?x :in $ % ?a [?b ?c] [?d ...] [[?e _]] _ :where [?x :a ?a]]",
    "find=rel(?x) in=($,%,?a,[?b ?c],[?d ...],[[?e _]],_) where=(pat(?x :a ?a))" },
  { "[:find ?x :in ?a :where [?x :a ?a]]", "find=rel(?x) in=(?a) where=(pat(?x :a ?a))" },
  /* clauses */
  { "[:find ?e :where [$ ?e :a ?v ?tx ?added] [(> ?v 1)] [(str ?v \"x\") ?s] [(ground [1 2]) [?g ...]]]",
    "find=rel(?e) where=(pat($ ?e :a ?v ?tx ?added) pred(> ?v 1) fn(str ?v \"x\" -> ?s) fn(ground [1 2] -> [?g ...]))" },
  { "[:find ?e :where [(get-some $ ?e :a :b) [?attr ?v]] [(f) [[?x ?y]]]]",
    "find=rel(?e) where=(fn(get-some $ ?e :a :b -> [?attr ?v]) fn(f -> [[?x ?y]]))" },
  { "[:find ?e :where [?e :a] (not [?e :b 1]) (not-join [?e] [?e :c ?x] [?x :d 2])]",
    "find=rel(?e) where=(pat(?e :a) not(pat(?e :b 1)) not-join([?e] pat(?e :c ?x) pat(?x :d 2)))" },
  { "[:find ?e :where (or [?e :a 1] (and [?e :b 2] [?e :c 3])) (or-join [[?e] ?f] [?e :d ?f])]",
    "find=rel(?e) where=(or(pat(?e :a 1) and(pat(?e :b 2) pat(?e :c 3))) or-join([[?e] ?f] pat(?e :d ?f)))" },
  { "[:find ?e :in $ % :where (reach ?e 3) [[:a/b \"x\"] :c ?e]]",
    "find=rel(?e) in=($,%) where=(rule(reach ?e 3) pat([:a/b \"x\"] :c ?e))" },
  /* function binding forms: scalar, tuple, collection, relation, blanks */
  { "[:find ?x :where [(f ?a) ?x] [(g) [?b _]] [(h 1) [?c ...]] [(k \"s\") [[_ ?d]]]]",
    "find=rel(?x) where=(fn(f ?a -> ?x) fn(g -> [?b _]) fn(h 1 -> [?c ...]) fn(k \"s\" -> [[_ ?d]]))" },
  { "[:find ?x :where [(f ?a) [?x 1]]]", "ERROR: line 1 col 30: expected a variable or _ in function binding, got value 1" },
  { "[:find ?x :where [(f ?a) ?x ?y]]", "ERROR: line 1 col 18: a function expression takes one binding form" },
  { "[:find ?x :where [(f ?a) []]]", "ERROR: line 1 col 26: expected a binding form (?x, [?a ?b], [?x ...] or [[?a ?b]]) in function binding, got vector []" },
  { "[:find ?x :where [(f ?a) [[]]]]", "ERROR: line 1 col 27: empty relation binding in function binding" },
  /* :order :limit :offset, and the map form */
  { "[:find ?a ?b :where [?a :x ?b] :order ?a (desc ?b) :limit 10 :offset 5]",
    "find=rel(?a,?b) where=(pat(?a :x ?b)) order=(?a asc,?b desc) limit=10 offset=5" },
  { "[:find ?a :where [?a :x] :order [(asc ?a)]]", "find=rel(?a) where=(pat(?a :x)) order=(?a asc)" },
  { "{:find [?a .] :in [$ ?x] :where [[?a :x ?x]] :order (desc ?a) :limit 1}",
    "find=scalar(?a) in=($,?x) where=(pat(?a :x ?x)) order=(?a desc) limit=1" },
  { "{:find [[?a ...]] :where [[?a :x]]}", "find=coll(?a) where=(pat(?a :x))" },
  /* errors with line and column */
  { "[:find :where [?e :person/name ?n]]", "ERROR: line 1 col 2: :find with nothing to find" },
  { "[:find ?e :where [?e :person/name", "ERROR: line 1 col 18: unterminated vector" },
  { "[:find ?e :foo [?e :a]]", "ERROR: line 1 col 11: unknown keyword clause :foo" },
  { "[:find ?e\n :where [?e :a]\n :in 1]",
    "ERROR: line 3 col 6: expected a binding form (?x, [?a ?b], [?x ...] or [[?a ?b]]) in :in, "
    "got value 1" },
  { "[:find 1 :where [?e :a]]",
    "ERROR: line 1 col 8: expected a variable, aggregate or pull in :find, got value 1" },
  { "[:find ?e :where [?e :a] :limit \"x\"]",
    "ERROR: line 1 col 33: :limit takes an integer or a variable, got string \"x\"" },
  { "[:find ?e :where (and [?e :a])]", "ERROR: line 1 col 18: (and ...) is only allowed inside or" },
  { "[:find ?e :where [?e :a 1 2 3 4]]",
    "ERROR: line 1 col 18: a data pattern has at most 5 places [e a v tx added]" },
  { "[:find ?a ?b :keys x :where [?a :x ?b]]", "ERROR: line 1 col 1: :find has 2 element(s) but 1 key name(s)" },
  { "[:find ?a ?b :keys x x :where [?a :x ?b]]", "ERROR: line 1 col 22: duplicate key x in :keys" },
  { "[:find (frob ?x) :where [?x :a]]",
    "ERROR: line 1 col 9: unknown aggregate function frob in :find" },
  { "[:where [?e :a]]", "ERROR: line 1 col 1: query has no :find" },
  { "[:find ?e :where [?e :a] (not-join ?e [?e :b])]",
    "ERROR: line 1 col 36: not-join needs a vector of join variables, got symbol ?e" },
  { "42",
    "ERROR: line 1 col 1: a query is a vector [:find ...] or a map {:find [...]}, got value 42" },
};

START_TEST(test_parse) {
  const PCase *pCase = &aCase[_i];
  EdnArena arena;
  QQuery *pQ = NULL;
  char *zErr = NULL, *zGot;
  int rc;
  ednArenaInit(&arena);
  rc = qpParse(&arena, pCase->zQuery, (int)strlen(pCase->zQuery), &pQ, &zErr);
  if (rc == SQLITE_OK) {
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    qpPrint(pOut, pQ);
    zGot = sqlite3_str_finish(pOut);
  } else {
    zGot = sqlite3_mprintf("ERROR: %s", zErr ? zErr : "?");
  }
  ck_assert_msg(strcmp(zGot, pCase->zExpect) == 0, "%s\n  got:  %s\n  want: %s",
                pCase->zQuery, zGot, pCase->zExpect);
  sqlite3_free(zGot);
  sqlite3_free(zErr);
  ednArenaReset(&arena);
}
END_TEST

/* Rule sets (the value bound to %). */
START_TEST(test_rules) {
  static const PCase a[] = {
    { "[[(reach ?x ?y) [?x :f ?y]] [(reach ?x ?y) [?x :f ?z] (reach ?z ?y)]]",
      "rule(reach ?x ?y : pat(?x :f ?y)) rule(reach ?x ?y : pat(?x :f ?z) rule(reach ?z ?y))" },
    { "[[(r [?a] ?b) [?a :x ?b] [(> ?b 1)]]]", "rule(r !?a ?b : pat(?a :x ?b) pred(> ?b 1))" },
    { "[[(r ?a) (not [?a :x])]]", "rule(r ?a : not(pat(?a :x)))" },
    { "[(r ?a)]",
      "ERROR: rules: line 1 col 2: expected a rule [(name ?a ...) clause ...], got list (r ?a)" },
    { "[[(?r ?a) [?a :x]]]", "ERROR: rules: line 1 col 3: expected a rule name, got list (?r ?a)" },
  };
  int i;
  for (i = 0; i < (int)(sizeof a / sizeof a[0]); i++) {
    EdnArena arena;
    EdnValue *pForm = NULL;
    EdnError err;
    QRuleSet set;
    char *zErr = NULL, *zGot;
    int rc;
    ednArenaInit(&arena);
    ck_assert_int_eq(ednReadOne(&arena, a[i].zQuery, (int)strlen(a[i].zQuery), &pForm, &err), SQLITE_OK);
    rc = qpParseRules(&arena, pForm, &set, &zErr);
    if (rc == SQLITE_OK) {
      sqlite3_str *pOut = sqlite3_str_new(NULL);
      qpPrintRules(pOut, &set);
      zGot = sqlite3_str_finish(pOut);
      ck_assert_msg(strcmp(zGot, a[i].zExpect) == 0, "got %s want %s", zGot, a[i].zExpect);
    } else {
      zGot = sqlite3_mprintf("ERROR: %s", zErr);
      ck_assert_msg(strcmp(zGot, a[i].zExpect) == 0, "got %s want %s", zGot, a[i].zExpect);
    }
    sqlite3_free(zGot);
    sqlite3_free(zErr);
    ednArenaReset(&arena);
  }
}
END_TEST

/* Deeply nested not/or stay within EDN_MAX_DEPTH: an error, not a crash. */
START_TEST(test_deep) {
  sqlite3_str *pQ = sqlite3_str_new(NULL);
  EdnArena arena;
  QQuery *pAst = NULL;
  char *zErr = NULL, *z;
  int i, rc;
  sqlite3_str_appendall(pQ, "[:find ?e :where [?e :a]");
  for (i = 0; i < 200; i++) sqlite3_str_appendall(pQ, " (not");
  sqlite3_str_appendall(pQ, " [?e :b]");
  for (i = 0; i < 200; i++) sqlite3_str_appendall(pQ, ")");
  sqlite3_str_appendall(pQ, "]");
  z = sqlite3_str_finish(pQ);
  ednArenaInit(&arena);
  rc = qpParse(&arena, z, (int)strlen(z), &pAst, &zErr);
  ck_assert_int_eq(rc, SQLITE_OK);
  ednArenaReset(&arena);
  sqlite3_free(z);
  sqlite3_free(zErr);
}
END_TEST

static Suite *qparseSuite(void) {
  Suite *s = suite_create("qparse");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_parse, 0, (int)(sizeof aCase / sizeof aCase[0]));
  tcase_add_test(tc, test_rules);
  tcase_add_test(tc, test_deep);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(qparseSuite)
