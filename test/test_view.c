/*
** test_view.c — edn_view tables on host database files: what a data case
** (an in-memory host) cannot say. A view lives in the host's schema, so it
** survives closing and reopening the file (its relative db= resolved
** against the file's directory, whatever the working directory); the path
** rule refuses stores outside that directory at CREATE and, for a table
** written into the file by someone else, at every scan, while DROP TABLE
** still works; a view whose store went away reports it and can be
** dropped. Expected answers are worked out by hand from the data each test
** writes and the rules in vtab/view_def.h.
*/
#include <string.h>
#include "tuhost.h"

static char zDir[256];

/* The host's directory for one test: zTest inside this process's
** temporary one (so that tuTempPath names files outside it), fresh for
** each test, which also keeps the tests apart when Check runs them in one
** process (CK_FORK=no, make asan). */
static void freshDir(const char *zTest) {
  snprintf(zDir, sizeof zDir, "%s", tuTempPath(zTest));
  ck_assert_int_eq(mkdir(zDir, 0700), 0);
}

/* zName inside the test's directory (a static buffer). */
static const char *inDir(const char *zName) {
  static char zPath[512];
  snprintf(zPath, sizeof zPath, "%s/%s", zDir, zName);
  return zPath;
}

/* A host on the file zName in the test's directory. */
static sqlite3 *openHost(const char *zName) {
  return tuOpenHostAt(inDir(zName));
}

/* Writes the two-person store at the absolute path zStore. */
static void makeStore(sqlite3 *db, const char *zStore) {
  char *z = tuQuery(db, "SELECT edn_t(?1, '[{:db/ident :p/name :db/valueType :db.type/string"
                    " :db/cardinality :db.cardinality/one}"
                    " {:db/ident :p/age :db/valueType :db.type/long"
                    " :db/cardinality :db.cardinality/one}]') IS NOT NULL", zStore, NULL);
  ck_assert_str_eq(z, "1");
  free(z);
  z = tuQuery(db, "SELECT edn_t(?1, '[{:p/name \"Ann\" :p/age 30} {:p/name \"Bob\" :p/age 25}]')"
              " IS NOT NULL", zStore, NULL);
  ck_assert_str_eq(z, "1");
  free(z);
}

static const char zOlder[] =
  "CREATE VIRTUAL TABLE older USING edn_view(db='tracker.db', query='[:find ?n ?a :in $ ?min"
  " :where [?e :p/name ?n] [?e :p/age ?a] [(>= ?a ?min)]]')";

START_TEST(survives_reopen) {
  freshDir("survives_reopen");
  sqlite3 *db = openHost("host.db");
  makeStore(db, inDir("tracker.db"));
  tuExecOk(db, zOlder);
  tuExpectQuery(db, "SELECT group_concat(n || ':' || a) FROM older WHERE min = 26", "Ann:30");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  /* db='tracker.db' is the file beside host.db, not one in the working directory */
  ck_assert_int_eq(chdir("/"), 0);
  db = openHost("host.db");
  tuExpectQuery(db, "SELECT group_concat(n, ',') FROM"
                " (SELECT n FROM older WHERE min = 20 ORDER BY n)",
                "Ann,Bob");
  tuExpectQuery(db, "SELECT count(*) FROM older WHERE min = 31", "0");
  tuExecOk(db, "DROP TABLE older");
  tuExpectQuery(db, "SELECT count(*) FROM sqlite_master WHERE name = 'older'", "0");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

START_TEST(host_store_survives_reopen) {
  freshDir("host_store_survives_reopen");
  sqlite3 *db = openHost("hosted.db");
  makeStore(db, ":main");
  tuExecOk(db, "CREATE VIRTUAL TABLE names USING edn_view(db=':main',"
               " query='[:find [?n ...] :where [_ :p/name ?n]]')");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  db = openHost("hosted.db");
  tuExpectQuery(db, "SELECT group_concat(n, ',') FROM (SELECT n FROM names ORDER BY n)", "Ann,Bob");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"Cy\"}]') IS NOT NULL", "1");
  tuExpectQuery(db, "SELECT group_concat(n, ',') FROM (SELECT n FROM names ORDER BY n)",
                "Ann,Bob,Cy");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A view whose attribute is renamed while the host is closed follows it on
** the next connection (Datomic: the old ident still refers to the entity),
** on a store file and on a host store; an enum whose :db/ident is retracted
** then is an error naming the view at every scan, and DROP TABLE works. */
START_TEST(follows_rename_across_reopen) {
  freshDir("follows_rename_across_reopen");
  sqlite3 *db = openHost("host.db");
  makeStore(db, inDir("tracker.db"));
  makeStore(db, ":main");
  tuExecOk(db, zOlder);
  tuExecOk(db, "CREATE VIRTUAL TABLE hosted USING edn_view(db=':main',"
             " query='[:find [?a ...] :where [_ :p/age ?a]]')");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:db/ident :k/on} {:db/ident :p/k"
              " :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}"
              "]') IS NOT NULL", "1");
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/name \"Ann\" :p/k :k/on}]') IS NOT NULL", "1");
  tuExecOk(db, "CREATE VIRTUAL TABLE ons USING edn_view(db=':main',"
             " query='[:find ?n :where [?e :p/k :k/on] [?e :p/name ?n]]')");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  db = openHost("host.db");
  {
    char *z = tuQuery(db, "SELECT edn_t(?1, '[{:db/id :p/age :db/ident :p/years}]') IS NOT NULL",
                      inDir("tracker.db"), NULL);
    ck_assert_str_eq(z, "1");
    free(z);
  }
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:db/id :p/age :db/ident :p/years}"
              " [:db/retract :k/on :db/ident :k/on]]') IS NOT NULL", "1");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  db = openHost("host.db");
  tuExpectQuery(db, "SELECT group_concat(n || ':' || a) FROM older WHERE min = 26", "Ann:30");
  tuExpectQuery(db, "SELECT group_concat(a, ',') FROM (SELECT a FROM hosted ORDER BY a)", "25,30");
  tuExpectQuery(db, "SELECT n FROM ons", "ERROR: edn_view: ons: line 1 col 27: ident :k/on no"
              " longer exists (its :db/ident was retracted)");
  tuExpectQuery(db, "SELECT n FROM ons", "ERROR: edn_view: ons: line 1 col 27: ident :k/on no"
              " longer exists (its :db/ident was retracted)");
  tuExecOk(db, "DROP TABLE ons");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* The message of the path rule for db= zDb refused as zWhy, host.db in zDir. */
static char *refusal(const char *zDb, const char *zWhy) {
  static char zMsg[2048];
  char zHost[600];
  snprintf(zHost, sizeof zHost, "%s", inDir("host.db"));
  snprintf(zMsg, sizeof zMsg, "ERROR: edn_view: db '%s' is refused (%s): a table stored in database"
           " main (%s) reads a host store (':main') or a store file inside %s; a TEMP table may"
           " name any store", zDb, zWhy, zHost, zDir);
  return zMsg;
}

START_TEST(path_rule_at_create) {
  freshDir("path_rule_at_create");
  sqlite3 *db = openHost("host.db");
  char zOut[512], zSql[2048];
  const char *zQ = "query='[:find ?n :where [_ :p/name ?n]]'";
  snprintf(zOut, sizeof zOut, "%s", tuTempPath("outside.db"));   /* beside zDir */
  ck_assert_int_eq(mkdir(inDir("sub"), 0700), 0);
  makeStore(db, zOut);
  makeStore(db, inDir("sub/in.db"));
  /* an absolute path, even to a store that exists */
  snprintf(zSql, sizeof zSql, "CREATE VIRTUAL TABLE a USING edn_view(db='%s', %s)", zOut, zQ);
  tuExpectQuery(db, zSql, refusal(zOut, "an absolute path"));
  /* out through '..' */
  snprintf(zSql, sizeof zSql, "CREATE VIRTUAL TABLE a USING edn_view(db='../outside.db', %s)", zQ);
  tuExpectQuery(db, zSql, refusal("../outside.db", "a path with '..'"));
  snprintf(zSql, sizeof zSql,
           "CREATE VIRTUAL TABLE a USING edn_view(db='sub/../../outside.db', %s)", zQ);
  tuExpectQuery(db, zSql, refusal("sub/../../outside.db", "a path with '..'"));
  /* out through a symbolic link in the directory */
  ck_assert_int_eq(symlink(zOut, inDir("link.db")), 0);
  snprintf(zSql, sizeof zSql, "CREATE VIRTUAL TABLE a USING edn_view(db='link.db', %s)", zQ);
  tuExpectQuery(db, zSql, refusal("link.db", "a link out of that directory"));
  tuExpectQuery(db, "SELECT count(*) FROM sqlite_master WHERE name = 'a'", "0");
  /* a subdirectory is inside */
  snprintf(zSql, sizeof zSql, "CREATE VIRTUAL TABLE a USING edn_view(db='sub/in.db', %s)", zQ);
  tuExecOk(db, zSql);
  tuExpectQuery(db, "SELECT group_concat(n, ',') FROM (SELECT n FROM a ORDER BY n)", "Ann,Bob");
  /* opts "sources" naming another store file: opened as given, so refused */
  snprintf(zSql, sizeof zSql, "CREATE VIRTUAL TABLE a2 USING edn_view(db='sub/in.db', opts="
           "'{\"sources\": {\"$2\": \"%s\"}}',"
           " query='[:find ?n :in $ $2 :where [$2 _ :p/name ?n]]')",
           zOut);
  {
    char zWant[2048];
    snprintf(zWant, sizeof zWant, "ERROR: edn_view: opts source $2 (%s) names a store file: a table"
             " stored in database main (%s) reads no other store; a TEMP table may", zOut,
             inDir("host.db"));
    tuExpectQuery(db, zSql, zWant);
  }
  /* a TEMP table is the connection owner's: any store */
  snprintf(zSql, sizeof zSql, "CREATE VIRTUAL TABLE temp.t USING edn_view(db='%s', %s)", zOut, zQ);
  tuExecOk(db, zSql);
  tuExpectQuery(db, "SELECT count(*) FROM t", "2");
  snprintf(zSql, sizeof zSql, "CREATE VIRTUAL TABLE temp.t2 USING edn_view(db='%s', opts="
           "'{\"sources\": {\"$2\": \"%s\"}}',"
           " query='[:find ?n :in $ $2 :where [$2 _ :p/name ?n]]')",
           zOut, inDir("sub/in.db"));
  tuExecOk(db, zSql);
  tuExpectQuery(db, "SELECT count(*) FROM t2", "2");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A table in an ATTACHed database file: the rule is that file's directory,
** not main's. */
START_TEST(path_rule_of_attached_file) {
  sqlite3 *db;
  char zSql[2048], zOther[512];
  freshDir("path_rule_of_attached_file");
  db = openHost("host.db");
  snprintf(zOther, sizeof zOther, "%s", tuTempPath("aux"));
  ck_assert_int_eq(mkdir(zOther, 0700), 0);
  snprintf(zSql, sizeof zSql, "%s/people.db", zOther);
  makeStore(db, zSql);
  snprintf(zSql, sizeof zSql, "ATTACH '%s/aux.db' AS aux", zOther);
  tuExecOk(db, zSql);
  tuExecOk(db, "CREATE VIRTUAL TABLE aux.names USING edn_view(db='people.db',"
               " query='[:find ?n :where [_ :p/name ?n]]')");
  tuExpectQuery(db, "SELECT group_concat(n, ',') FROM (SELECT n FROM aux.names ORDER BY n)",
                "Ann,Bob");
  /* beside main's file is not beside aux's */
  makeStore(db, inDir("mine.db"));
  snprintf(zSql, sizeof zSql, "CREATE VIRTUAL TABLE aux.mine USING edn_view("
           "db='../path_rule_of_attached_file/mine.db', query='[:find ?n :where [_ :p/name ?n]]')");
  {
    char zWant[2048];
    snprintf(zWant, sizeof zWant, "ERROR: edn_view: db '../path_rule_of_attached_file/mine.db'"
             " is refused (a path with '..'): a table stored in database aux (%s/aux.db) reads"
             " a host store (':main') or a store file inside %s; a TEMP table may name any store",
             zOther, zOther);
    tuExpectQuery(db, zSql, zWant);
  }
  /* UPDATE is refused as INSERT is */
  tuExpectQuery(db, "UPDATE aux.names SET n = 'x'", "ERROR: table names may not be modified");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A database file given by someone else, with a table that names a file
** outside its directory (written into sqlite_master directly, as an
** attacker would): scans refuse it and open nothing, DROP TABLE works. */
START_TEST(path_rule_at_connect) {
  freshDir("path_rule_at_connect");
  sqlite3 *db = openHost("host.db");
  char zSecret[512], zSql[1024];
  struct stat st;
  makeStore(db, inDir("tracker.db"));
  snprintf(zSecret, sizeof zSecret, "%s", tuTempPath("secret.db"));
  tuExecOk(db, zOlder);
  tuExecOk(db, "PRAGMA writable_schema = ON");
  snprintf(zSql, sizeof zSql, "UPDATE sqlite_master SET sql = replace(sql, 'tracker.db', '%s')"
           " WHERE name = 'older'", zSecret);
  tuExecOk(db, zSql);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  db = openHost("host.db");
  tuExpectQuery(db, "SELECT n FROM older WHERE min = 1", refusal(zSecret, "an absolute path"));
  ck_assert_int_ne(stat(zSecret, &st), 0);    /* not even created */
  tuExecOk(db, "DROP TABLE older");
  tuExpectQuery(db, "SELECT count(*) FROM sqlite_master WHERE name = 'older'", "0");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* The store replaced by a database that is no store: the check on connect
** fails, every scan says why, DROP TABLE works. */
START_TEST(store_gone_at_connect) {
  freshDir("store_gone_at_connect");
  sqlite3 *db = openHost("host.db");
  char zWant[1024];
  makeStore(db, inDir("tracker.db"));
  tuExecOk(db, zOlder);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  ck_assert_int_eq(unlink(inDir("tracker.db")), 0);
  {
    sqlite3 *pOther = NULL;
    ck_assert_int_eq(sqlite3_open(inDir("tracker.db"), &pOther), SQLITE_OK);
    tuExecOk(pOther, "CREATE TABLE foo(x)");
    sqlite3_close(pOther);
  }
  db = openHost("host.db");
  snprintf(zWant, sizeof zWant, "ERROR: edn_view: %s is not a Mentat store (user_version 0)",
           inDir("tracker.db"));
  tuExpectQuery(db, "SELECT n FROM older WHERE min = 1", zWant);
  tuExecOk(db, "DROP TABLE older");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* Allocation failures (SQLite's do_malloc_test way, as test_oom.c): for N
** = 0, 1, ... the N-th allocation of CREATE VIRTUAL TABLE, then of a scan
** with an input, fails, once or from then on. Each outcome is SQLITE_NOMEM
** (and a failed CREATE leaves no table) or the right answer; `make asan`
** finds the leaks. */
START_TEST(allocation_failures) {
  freshDir("allocation_failures");
  static const char *azStep[] = {
    "CREATE VIRTUAL TABLE o USING edn_view(db='tracker.db', query='[:find ?n (count ?e) :in $ ?min"
    " [?x ...] :where [?e :p/name ?n] [?e :p/age ?a] [(>= ?a ?min)] [(= ?n ?x)]]')",
    "SELECT group_concat(n || count_e) FROM o WHERE min = 26 AND x = json_array('Ann', 'Bob')",
  };
  static const char *azWant[] = {NULL, "Ann1"};
  static const char zCountO[] = "SELECT count(*) FROM sqlite_master WHERE name = 'o'";
  sqlite3 *db;
  int iMode, iStep, n;
  db = openHost("host.db");
  makeStore(db, inDir("tracker.db"));
  sqlite3_close(db);
  tuOomInstall();
  for (iMode = 0; iMode < 2; iMode++) {
    tuOomOnce = iMode == 0;
    for (iStep = 0; iStep < 2; iStep++) {
      int bDone = 0, nFail = 0, nRound = 0;
      for (n = 0; n < 20000 && !bDone; n = n < 600 ? n + 1 : n + 7) {
        char *zOut = NULL;
        int rc;
        db = openHost("host.db");
        if (iStep == 1) tuExecOk(db, "DROP TABLE IF EXISTS o");
        if (iStep == 1) tuExecOk(db, azStep[0]);
        if (iStep == 0) tuExecOk(db, "DROP TABLE IF EXISTS o");
        tuOomLeft = n;
        nRound++;
        rc = tuStepOnce(db, azStep[iStep], NULL, NULL, &zOut);
        bDone = tuOomOnce ? tuOomLeft > 0 : (rc == SQLITE_DONE || rc == SQLITE_ROW);
        tuOomLeft = -1;
        if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
          if (azWant[iStep]) ck_assert_msg(zOut && strcmp(zOut, azWant[iStep]) == 0,
                                           "step %d at %d: %s", iStep, n, zOut ? zOut : "(none)");
          if (iStep == 0) tuExpectQuery(db, zCountO, "1");
        } else {
          ck_assert_msg(tuIsNomem(rc), "step %d, %s failure at %d: rc %d %s", iStep,
                        tuOomOnce ? "transient" : "persistent", n, rc, sqlite3_errmsg(db));
          if (iStep == 0) tuExpectQuery(db, zCountO, "0");
          nFail++;
        }
        free(zOut);
        sqlite3_close(db);
      }
      ck_assert_msg(bDone && nFail > 0, "step %d: ended at %d with %d failures", iStep, n, nFail);
      tuFaultSummary(iStep ? "view step 1" : "view step 0", iMode ? "persistent" : "transient",
                     nRound, nFail);
    }
  }
  tuOomRemove();
}
END_TEST

/* A TEMP view (which may name any store) reading another store file as a
** source: the CREATE check reads each pattern's attribute in the schema
** of the source the pattern reads (README "Several sources": each store
** has its own schema), so an attribute only orders.db has is no typo in a
** $2 pattern, in a rule called on $2 or in ($2 not ...), and still one in
** a $ pattern; a rule's attribute is a typo when no source has it. */
static void tempView(sqlite3 *db, const char *zName, const char *zQuery, const char *zRules,
                     const char *zWant) {
  char zStore[600];
  char *zSql, *z;
  snprintf(zStore, sizeof zStore, "%s", inDir("tracker.db"));   /* inDir's buffer is reused */
  zSql = sqlite3_mprintf("CREATE VIRTUAL TABLE temp.%s USING edn_view(db=%Q, query=%Q%s%s%s,"
                               " opts='{\"sources\": {\"$2\": \"%s\"}}')", zName,
                               zStore, zQuery, zRules ? ", rules='" : "",
                               zRules ? zRules : "", zRules ? "'" : "", inDir("orders.db"));
  z = tuQuery(db, zSql, NULL, NULL);
  ck_assert_msg(strcmp(z, zWant) == 0, "%s\n got:  %s\n want: %s", zSql, z, zWant);
  free(z);
  sqlite3_free(zSql);
}

START_TEST(temp_view_file_source) {
  freshDir("temp_view_file_source");
  sqlite3 *db = openHost("host.db");
  makeStore(db, inDir("tracker.db"));
  {
    char *z = tuQuery(db, "SELECT edn_t(?1, '[{:db/ident :o/name :db/valueType :db.type/string"
                      " :db/cardinality :db.cardinality/one} {:db/ident :o/total"
                      " :db/valueType :db.type/long :db/cardinality :db.cardinality/one}]')"
                      " IS NOT NULL", inDir("orders.db"), NULL);
    ck_assert_str_eq(z, "1");
    free(z);
    z = tuQuery(db, "SELECT edn_t(?1, '[{:o/name \"Ann\" :o/total 7}]') IS NOT NULL",
                inDir("orders.db"), NULL);
    ck_assert_str_eq(z, "1");
    free(z);
  }
  tempView(db, "t1", "[:find ?n ?t :in $ $2 :where [?e :p/name ?n] [$2 ?o :o/name ?n]"
           " [$2 ?o :o/total ?t]]", NULL, "");
  tuExpectQuery(db, "SELECT n || '|' || t FROM t1", "Ann|7");
  tempView(db, "t2", "[:find ?n ?t :in $ $2 % :where [?e :p/name ?n] ($2 tot ?n ?t)]",
           "[[(tot ?n ?t) [?o :o/name ?n] [?o :o/total ?t]]]", "");
  tuExpectQuery(db, "SELECT n || '|' || t FROM t2", "Ann|7");
  tempView(db, "t3", "[:find ?n :in $ $2 :where [?e :p/name ?n]"
           " ($2 not [?o :o/name ?n] [?o :o/total 7])]", NULL, "");
  tuExpectQuery(db, "SELECT group_concat(n) FROM t3", "Bob");
  tempView(db, "t4", "[:find ?n ?t :in $ $2 :where [?e :p/name ?n] [$2 ?o :o/name ?n]"
           " [$2 ?o :o/totl ?t]]", NULL,
           "ERROR: edn_view: line 1 col 72: unknown attribute :o/totl");
  tempView(db, "t5", "[:find ?t :in $ $2 :where [?e :o/total ?t] [$2 ?o :o/total ?t]]", NULL,
           "ERROR: edn_view: line 1 col 31: unknown attribute :o/total");
  tempView(db, "t6", "[:find ?n ?t :in $ $2 % :where [?e :p/name ?n] ($2 tot ?n ?t)]",
           "[[(tot ?n ?t) [?o :o/name ?n] [?o :o/totl ?t]]]",
           "ERROR: edn_view: rules: line 1 col 35: unknown attribute :o/totl");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

static Suite *viewSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("view");
  TCase *tc = tcase_create("view");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, survives_reopen);
  tcase_add_test(tc, host_store_survives_reopen);
  tcase_add_test(tc, follows_rename_across_reopen);
  tcase_add_test(tc, path_rule_at_create);
  tcase_add_test(tc, path_rule_of_attached_file);
  tcase_add_test(tc, path_rule_at_connect);
  tcase_add_test(tc, store_gone_at_connect);
  tcase_add_test(tc, temp_view_file_source);
  suite_add_tcase(s, tc);
  tc = tuFaultCase("oom", 300);
  tcase_add_test(tc, allocation_failures);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(viewSuite)
