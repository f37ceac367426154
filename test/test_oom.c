/*
** test_oom.c — allocation failures over the movies data, SQLite's
** do_malloc_test way: every allocation goes through SQLite's allocator
** (sqlite3_config(SQLITE_CONFIG_MALLOC)), and for N = 1, 2, ... the N-th one
** fails — once (transient) or from then on (persistent) — until the call
** succeeds without meeting the failure. Each outcome must be SQLITE_NOMEM
** with the store exactly as before (a digest of every table but the clock's
** :db/txInstant values), or the right answer; the host connection goes on
** working; `make asan` runs it under ASan and LeakSanitizer.
**
** The answers are the movie data set's own (data/movies/README.md, as
** smoke/demo.sh checks them) or counted by hand from data/movies/data.edn.
** The step grows past the first 600 points (every 5th, then every 25th), so
** a sweep of a few thousand allocation points stays within seconds.
*/
#include <sys/stat.h>
#include "tuhost.h"

#ifndef MOVIES_DIR
# define MOVIES_DIR "data/movies"
#endif

/* The whole of file zName under MOVIES_DIR, malloc'd. */
static char *tReadMovies(const char *zName) {
  char zPath[512];
  FILE *f;
  long n;
  char *z;
  snprintf(zPath, sizeof zPath, "%s/%s", MOVIES_DIR, zName);
  f = fopen(zPath, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", zPath);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  z = malloc((size_t)n + 1);
  ck_assert_int_eq((long)fread(z, 1, (size_t)n, f), n);
  z[n] = 0;
  fclose(f);
  return z;
}

/* A digest of the store's tables, on a connection of its own (outside the
** failure window): every row of datoms (but the :db/txInstant values, which
** are the clock), the log, known_parts, idents, schema. */
static char *tDigest(const char *zPath) {
  static const char *zSql =
    "SELECT (SELECT count(*) || ':' || total(e) || ':' || total(a) || ':' || total(tx) || ':'"
    "   || group_concat(quote(v), ',') FROM (SELECT * FROM datoms WHERE a <> 3 ORDER BY e, a, v))"
    " || '|' || (SELECT count(*) || ':' || total(e) || ':' || total(tx) || ':' || total(added)"
    "   FROM timelined_transactions)"
    " || '|' || (SELECT group_concat(part || '=' || coalesce(idx, start), ',') FROM"
    "   (SELECT * FROM known_parts ORDER BY part))"
    " || '|' || (SELECT count(*) || ':' || group_concat(e || '=' || quote(v), ',') FROM"
    "   (SELECT * FROM idents ORDER BY e, a, v))"
    " || '|' || (SELECT count(*) || ':' || group_concat(e || '/' || a || '=' || quote(v), ',') FROM"
    "   (SELECT * FROM schema ORDER BY e, a, v))";
  sqlite3 *db = NULL;
  struct stat st;
  char *z;
  int nSave = tuOomLeft;
  tuOomLeft = -1;
  if (stat(zPath, &st) != 0) { tuOomLeft = nSave; return strdup("<no store>"); }
  ck_assert_int_eq(sqlite3_open_v2(zPath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  z = tuQuery(db, zSql, NULL, NULL);
  sqlite3_close(db);
  if (strcmp(z, "ERROR: no such table: datoms") == 0) {
    /* opened and failed before the layout: an empty file is no store yet */
    free(z);
    z = strdup("<no store>");
  }
  ck_assert_msg(strncmp(z, "ERROR", 5) != 0, "digest of %s: %s", zPath, z);
  tuOomLeft = nSave;
  return z;
}

/* The digest of a store that holds only its bootstrap (SPEC.md §3: a store
** is created on first use, by a read as well; the transaction that then
** fails is not what created it), which counts as no store. */
static char *gzEmptyDigest = NULL;

static int tSameStore(const char *zBefore, const char *zAfter) {
  if (strcmp(zBefore, zAfter) == 0) return 1;
  if (gzEmptyDigest == NULL) return 0;
  return (strcmp(zBefore, "<no store>") == 0 && strcmp(zAfter, gzEmptyDigest) == 0)
      || (strcmp(zAfter, "<no store>") == 0 && strcmp(zBefore, gzEmptyDigest) == 0);
}

static int tNextPoint(int n) { return n < 600 ? n + 1 : n < 3000 ? n + 5 : n + 25; }

/* Sweeps one call. For each failure point it must fail with SQLITE_NOMEM
** and leave the digest as it was, or give zWant (NULL: any answer; the
** digest after success is then compared by the caller). Returns the number
** of points tried; *pnFail the SQLITE_NOMEM outcomes. */
static int tSweep(sqlite3 *db, const char *zSql, const char *zPath, const char *z2,
                  const char *zWant, int bWrite, int *pnFail) {
  int n, bDone = 0, nTried = 0;
  char *zNext = NULL;
  *pnFail = 0;
  for (n = 0; n < 200000 && !bDone; n = tNextPoint(n)) {
    /* a failed point left the store as its digest after says, and nothing
    ** writes it before the next point: that digest is the next one's before */
    char *zBefore = zNext ? zNext : bWrite ? tDigest(zPath) : NULL, *zOut = NULL;
    int rc;
    zNext = NULL;
    tuOomLeft = n;
    rc = tuStepOnce(db, zSql, zPath, z2, &zOut);
    bDone = tuOomOnce ? tuOomLeft > 0 : rc == SQLITE_ROW;
    tuOomLeft = -1;
    nTried++;
    if (rc == SQLITE_ROW) {
      if (zWant) {
        /* "^..." wants a prefix (a tx report's instant is the clock's) */
        int bOk = zWant[0] == '^' ? strncmp(zOut, zWant + 1, strlen(zWant + 1)) == 0
                                  : strcmp(zOut, zWant) == 0;
        ck_assert_msg(bOk, "%s, %s failure at %d: got %s, want %s", zSql,
                      tuOomOnce ? "transient" : "persistent", n, zOut, zWant);
      }
      if (bWrite && !bDone) {
        /* a success before the sweep ended wrote the transaction: a later
        ** point must start from the store as it was, so the caller's
        ** sweep of a write ends at its first success */
        bDone = 1;
      }
    } else {
      char *zAfter;
      ck_assert_msg(tuIsNomem(rc), "%s, %s failure at %d: rc %d %s", zSql,
                    tuOomOnce ? "transient" : "persistent", n, rc, sqlite3_errmsg(db));
      (*pnFail)++;
      if (bWrite) {
        zAfter = tDigest(zPath);
        if (getenv("TOOM_DEBUG")) fprintf(stderr, "%d: %.120s\n", n, zAfter);
        ck_assert_msg(tSameStore(zBefore, zAfter), "%s, failure at %d changed the store:\n"
                      "  before %.300s\n  after  %.300s", zSql, n, zBefore, zAfter);
        zNext = zAfter;
      }
    }
    free(zBefore);
    free(zOut);
  }
  free(zNext);
  ck_assert_msg(bDone && *pnFail > 0, "%s: ended at %d with %d failures", zSql, n, *pnFail);
  return nTried;
}

/* Starts a suite of sweeps: the failing allocator installed, and the
** digest of a store that holds only its bootstrap (gzEmptyDigest) taken
** from a read of the fresh store zEmptyName. */
static void tOomBegin(const char *zEmptyName) {
  sqlite3 *db;
  const char *zEmpty;
  tuOomInstall();
  db = tuOpenHost();
  zEmpty = tuTempPath(zEmptyName);
  free(tuQuery(db, "SELECT count(*) FROM edn_q(?1, '[:find ?e :where [?e :db/ident :db/ident]]')",
               zEmpty, NULL));
  gzEmptyDigest = tDigest(zEmpty);
  sqlite3_close(db);
}

/* Ends what tOomBegin started and reports the suite's counts. */
static void tOomEnd(const char *zWhat, int nPoints, int nNomem) {
  tuOomOnce = 0;
  tuOomRemove();
  free(gzEmptyDigest);
  gzEmptyDigest = NULL;
  fprintf(stderr, "oom %s: %d allocation points, %d SQLITE_NOMEM outcomes\n", zWhat, nPoints, nNomem);
}

/* edn_t alone, not inside json_extract: an allocation failing in the
** host's own SQL after edn_t returned is the host's statement failing, with
** the transaction stored. */
static const char *const zLoad = "SELECT edn_t(?1, ?2)";

/* A store with the movies loaded without failures, for the digests to
** compare with. */
static char *tReference(sqlite3 *db, const char *zSchema, const char *zData) {
  const char *zPath = tuTempPath("movies-ref.db");
  char *z, *zDigest;
  unlink(zPath);
  z = tuQuery(db, zLoad, zPath, zSchema);
  ck_assert_msg(strncmp(z, "{\"tx_id\":268435457,", 19) == 0, "%s", z);
  free(z);
  z = tuQuery(db, zLoad, zPath, zData);
  ck_assert_msg(strncmp(z, "{\"tx_id\":268435458,", 19) == 0, "%s", z);
  free(z);
  zDigest = tDigest(zPath);
  return zDigest;
}

START_TEST(test_oom_movies) {
  static const struct { const char *zSql, *zWant; } aRead[] = {
    /* the data set's README: titles before 1984 */
    {"SELECT group_concat(c0, '|') FROM (SELECT c0 FROM edn_q(?1, '[:find ?title :where"
     " [?m :movie/title ?title] [?m :movie/year ?year] [(< ?year 1984)]]') ORDER BY c0)",
     "Alien|First Blood|Mad Max|Mad Max 2"},
    /* ... who directed Arnold Schwarzenegger's movies, as the scalar document */
    {"SELECT edn_q(?1, '[:find ?title ?director :where [?a :person/name \"Arnold Schwarzenegger\"]"
     " [?m :movie/cast ?a] [?m :movie/title ?title] [?m :movie/director ?d]"
     " [?d :person/name ?director] :order ?title]')",
     "{\"columns\":[\"?title\",\"?director\"],\"results\":[[\"Commando\",\"Mark L. Lester\"],"
     "[\"Predator\",\"John McTiernan\"],[\"Terminator 2: Judgment Day\",\"James Cameron\"],"
     "[\"Terminator 3: Rise of the Machines\",\"Jonathan Mostow\"],"
     "[\"The Terminator\",\"James Cameron\"]],\"result\":[[\"Commando\",\"Mark L. Lester\"],"
     "[\"Predator\",\"John McTiernan\"],[\"Terminator 2: Judgment Day\",\"James Cameron\"],"
     "[\"Terminator 3: Rise of the Machines\",\"Jonathan Mostow\"],"
     "[\"The Terminator\",\"James Cameron\"]]}"},
    /* an aggregate with an input: movies of 1987 (data.edn: Lethal Weapon,
    ** Predator, RoboCop) */
    {"SELECT edn_q(?1, '[:find (count ?m) . :in $ ?y :where [?m :movie/year ?y]]', '{\"inputs\":[1987]}')",
     "{\"result\":3}"},
    /* edn_pull of an entity found by the table form (its :db/id, always
    ** present at the top, SPEC.md §2.2, is appended below: the entid the
    ** load gave the movie, read from the reference store) */
    {"SELECT edn_pull(?1, '[:movie/title :movie/year]', (SELECT c0 FROM edn_q(?1,"
     " '[:find ?m . :where [?m :movie/title \"Alien\"]]')))",
     "{\":movie/title\":\"Alien\",\":movie/year\":1979,\":db/id\":"},
  };
  char *zSchema = tReadMovies("schema.edn"), *zData = tReadMovies("data.edn");
  int nPoints = 0, nNomem = 0;
  tOomBegin("movies-empty.db");
  for (int iMode = 0; iMode < 2; iMode++) {
    sqlite3 *db = tuOpenHost();
    char zName[32], *zRef, *zGot;
    const char *zPath;
    int nFail;
    tuOomOnce = iMode == 0;
    zRef = tReference(db, zSchema, zData);
    snprintf(zName, sizeof zName, "movies%d.db", iMode);
    zPath = tuTempPath(zName);
    unlink(zPath);
    /* the two transactions of the load: each failure leaves the store as it
    ** was (no store file at all, or the schema alone), the first success
    ** is the whole transaction */
    nPoints += tSweep(db, zLoad, zPath, zSchema, "^{\"tx_id\":268435457,", 1, &nFail);
    nNomem += nFail;
    nPoints += tSweep(db, zLoad, zPath, zData, "^{\"tx_id\":268435458,", 1, &nFail);
    nNomem += nFail;
    zGot = tDigest(zPath);
    ck_assert_msg(strcmp(zGot, zRef) == 0, "the store loaded under failures differs:\n  %.300s\n  %.300s",
                  zGot, zRef);
    free(zGot);
    for (size_t i = 0; i < sizeof aRead / sizeof aRead[0]; i++) {
      char *zWant = strdup(aRead[i].zWant);
      if (strstr(zWant, "\":db/id\":")) {
        char *zE = tuQuery(db, "SELECT c0 FROM edn_q(?1, '[:find ?m . :where [?m :movie/title \"Alien\"]]')",
                           tuTempPath("movies-ref.db"), NULL);
        zWant = realloc(zWant, strlen(zWant) + strlen(zE) + 2);
        strcat(strcat(zWant, zE), "}");
        free(zE);
      }
      nPoints += tSweep(db, aRead[i].zSql, zPath, NULL, zWant, 0, &nFail);
      free(zWant);
      nNomem += nFail;
    }
    /* several sources: the reference store attached as
    ** $r, this one's history as $h; 1987's three movies by title in both */
    nPoints += tSweep(db, "SELECT edn_q(?1, '[:find (count ?m) . :in $ $r $h :where"
                      " [$h ?m :movie/year 1987 _ true] [?m :movie/title ?t] [$r ?n :movie/title ?t]]',"
                      " json_object('sources', json_object('$r', ?2, '$h', json('{\"history\":true}'))))",
                      zPath, tuTempPath("movies-ref.db"), "{\"result\":3}", 0, &nFail);
    nNomem += nFail;
    /* the reads left the store as loaded */
    zGot = tDigest(zPath);
    ck_assert_str_eq(zGot, zRef);
    free(zGot);
    free(zRef);
    sqlite3_close(db);
  }
  tOomEnd("movies", nPoints, nNomem);
  free(zSchema);
  free(zData);
}
END_TEST

/* Tuples: the schema transaction that installs the tuple
** vocabulary, data whose composites the transactor derives, an upsert
** through an identity composite, and reads of tuples (a pattern literal,
** an input, untuple, a comparison, pull). Answers by hand: the schema
** takes 65536..65541, "c" is 65542, "r" 65543. */
START_TEST(test_oom_tuples) {
  static const char *const zSchema =
    "[{:db/ident :c/id :db/valueType :db.type/string :db/unique :db.unique/identity}"
    " {:db/ident :r/c :db/valueType :db.type/ref} {:db/ident :r/s :db/valueType :db.type/string}"
    " {:db/ident :r/c+s :db/valueType :db.type/tuple :db/tupleAttrs [:r/c :r/s]"
    "  :db/unique :db.unique/identity}"
    " {:db/ident :r/g :db/valueType :db.type/string}"
    " {:db/ident :r/at :db/valueType :db.type/tuple :db/tupleTypes [:db.type/long :db.type/string]}]";
  static const struct { const char *zSql, *zArg, *zWant; int bWrite; } aStep[] = {
    {"SELECT edn_t(?1, ?2)", NULL, "^{\"tx_id\":268435457,", 1},
    {"SELECT edn_t(?1, ?2)", "[{:db/id \"c\" :c/id \"X\"} {:db/id \"r\" :r/c \"c\" :r/s \"ann\" :r/at [1 \"a\"]}]",
     "^{\"tx_id\":268435458,", 1},
    {"SELECT edn_t(?1, ?2)", "[{:r/c [:c/id \"X\"] :r/s \"ann\" :r/g \"A\"}]", "^{\"tx_id\":268435459,", 1},
    {"SELECT edn_q(?1, '[:find ?g . :where [?e :r/c+s [65542 \"ann\"]] [?e :r/g ?g]]')", NULL,
     "{\"result\":\"A\"}", 0},
    {"SELECT edn_q(?1, '[:find ?y . :in $ ?t :where [?e :r/c+s ?t] [?e :r/at ?p] [(untuple ?p) [?x ?y]]"
     " [(< ?p [2 \"a\"])]]', '{\"inputs\":[[65542, \"ann\"]]}')", NULL, "{\"result\":\"a\"}", 0},
    {"SELECT edn_pull(?1, '[:r/c+s :r/at]', '[:r/c+s [65542 \"ann\"]]')", NULL,
     "{\":r/c+s\":[65542,\"ann\"],\":r/at\":[1,\"a\"],\":db/id\":65543}", 0},
  };
  int nPoints = 0, nNomem = 0;
  tOomBegin("tuples-empty.db");
  for (int iMode = 0; iMode < 2; iMode++) {
    sqlite3 *db = tuOpenHost();
    char zName[32];
    const char *zPath;
    int nFail;
    tuOomOnce = iMode == 0;
    snprintf(zName, sizeof zName, "tuples%d.db", iMode);
    zPath = tuTempPath(zName);
    unlink(zPath);
    for (size_t i = 0; i < sizeof aStep / sizeof aStep[0]; i++) {
      const char *z2 = !aStep[i].bWrite ? NULL : aStep[i].zArg ? aStep[i].zArg : zSchema;
      nPoints += tSweep(db, aStep[i].zSql, zPath, z2, aStep[i].zWant, aStep[i].bWrite, &nFail);
      nNomem += nFail;
    }
    sqlite3_close(db);
  }
  tOomEnd("tuples", nPoints, nNomem);
}
END_TEST

int main(void) {
  Suite *s;
  /* Atomicity is what is tested, not durability: without the fsyncs the
  ** sweep's thousands of failed and retried commits take a second, not ten. */
  setenv("MENTAT_SYNCHRONOUS", "OFF", 1);
  s = suite_create("oom");
  TCase *tc = tuFaultCase("movies", 600);
  SRunner *sr;
  int nFailed;
  tcase_add_test(tc, test_oom_movies);
  suite_add_tcase(s, tc);
  tc = tuFaultCase("tuples", 600);
  tcase_add_test(tc, test_oom_tuples);
  suite_add_tcase(s, tc);
  sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  nFailed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nFailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
