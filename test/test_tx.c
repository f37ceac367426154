/*
** test_tx.c — what of the transactor (tx*.c) needs C, against real store
** files: the schema installed whole and re-run unchanged, the report's
** instant against the clock, generated and bulk transactions, allocation
** failures, the writer's WAL policy and tuning. The transactions that are
** (tx-data) -> report or error text, plus the store's tables read back,
** live as data in test/cases/tx_*.test (build/test_cases).
**
** Each test opens a fresh store through the store cache, transacts with
** txTransact, and reads the tables back with plain SQL on a second raw
** connection: exact datoms and log rows, tempid maps, errors and their
** messages, and — for every failing input — a byte-identical dump of
** datoms, log, partitions and mirrors before and after. Expected values are
** worked out by hand from the format document: on a fresh store the first
** schema transaction is tx 268435457 and user entids start at 65536.
*/
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>
#include "testutil.h"
#include "tx.h"

#define TX1 268435457LL
/* The common schema below takes 65536..65548; the first data entity is U0. */
#define U0 65549

static Store *gStore;
static sqlite3 *gDb;
static int gnStore;

static const char *zSchema =
  "[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}\n"
  " {:db/ident :p/id :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
  "  :db/unique :db.unique/identity}\n"
  " {:db/ident :p/tags :db/valueType :db.type/string :db/cardinality :db.cardinality/many}\n"
  " {:db/ident :p/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}\n"
  " {:db/ident :p/parent :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}\n"
  " {:db/ident :p/ssn :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
  "  :db/unique :db.unique/value}\n"
  " {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}\n"
  " {:db/ident :o/items :db/valueType :db.type/ref :db/cardinality :db.cardinality/many"
  "  :db/isComponent true}\n"
  " {:db/ident :i/sku :db/valueType :db.type/string :db/cardinality :db.cardinality/one}\n"
  " {:db/ident :p/bio :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
  "  :db/fulltext true}\n"
  " {:db/ident :p/seen :db/valueType :db.type/long :db/cardinality :db.cardinality/one"
  "  :db/noHistory true}\n"
  " {:db/ident :tx/note :db/valueType :db.type/string :db/cardinality :db.cardinality/one}\n"
  " {:db/ident :p/email :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
  "  :db/unique :db.unique/identity}]";

/* Opens a fresh store (and a raw reader on its file). */
static void openStore(void) {
  char zName[32];
  char *zErr = NULL;
  const char *zPath;
  snprintf(zName, sizeof zName, "tx%d.db", gnStore++);
  zPath = tuTempPath(zName);
  ck_assert_msg(storeAcquire(zPath, &gStore, &zErr) == SQLITE_OK, "acquire: %s", zErr);
  ck_assert_int_eq(sqlite3_open(zPath, &gDb), SQLITE_OK);
}

static void closeStore(void) {
  sqlite3_close(gDb);
  gDb = NULL;
  storeRelease(gStore);
  gStore = NULL;
  storeCacheClear();
}

/* Transacts; the report, or "ERROR: <message>" (malloc'd). */
static char *T(const char *zEdn) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  char *zErr = NULL, *zRep, *zRet;
  int rc = txTransact(gStore, zEdn, (int)strlen(zEdn), pOut, &zErr);
  zRep = sqlite3_str_finish(pOut);
  if (rc == SQLITE_OK) {
    zRet = strdup(zRep ? zRep : "");
  } else {
    zRet = malloc(strlen(zErr ? zErr : "?") + 8);
    sprintf(zRet, "ERROR: %s", zErr ? zErr : "?");
  }
  sqlite3_free(zRep);
  sqlite3_free(zErr);
  return zRet;
}

/* Transacts and requires success. */
static void Tok(const char *zEdn) {
  char *z = T(zEdn);
  ck_assert_msg(strncmp(z, "ERROR", 5) != 0, "%s -> %s", zEdn, z);
  free(z);
}

/* All rows of zSql: columns joined by '|', rows by ';' (malloc'd). */
static char *Q(const char *zSql) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  char *z, *zRet;
  int nRow = 0, i;
  ck_assert_msg(sqlite3_prepare_v2(gDb, zSql, -1, &pStmt, NULL) == SQLITE_OK, "%s: %s",
                zSql, sqlite3_errmsg(gDb));
  while (sqlite3_step(pStmt) == SQLITE_ROW) {
    if (nRow++) sqlite3_str_appendchar(pOut, 1, ';');
    for (i = 0; i < sqlite3_column_count(pStmt); i++) {
      const char *zCol = (const char *)sqlite3_column_text(pStmt, i);
      if (i) sqlite3_str_appendchar(pOut, 1, '|');
      sqlite3_str_appendall(pOut, zCol ? zCol : "NULL");
    }
  }
  sqlite3_finalize(pStmt);
  z = sqlite3_str_finish(pOut);
  zRet = strdup(z ? z : "");
  sqlite3_free(z);
  return zRet;
}

#define CHECK_Q(SQL, EXPECT) do { char *zGot_ = Q(SQL); \
  ck_assert_msg(strcmp(zGot_, EXPECT) == 0, "%s\n  got:  %s\n  want: %s", SQL, zGot_, EXPECT); \
  free(zGot_); } while (0)

/* Everything a transaction may change, quoted. */
static char *dump(void) {
  return Q("SELECT 'D', e, a, quote(v), tx, value_type_tag, index_avet, index_vaet, index_fulltext,"
           " unique_value FROM datoms"
           " UNION ALL SELECT 'L', e, a, quote(v), tx, added, value_type_tag, timeline, 0, 0"
           " FROM timelined_transactions"
           " UNION ALL SELECT 'P', part, start, \"end\", idx, allow_excision, 0, 0, 0, 0 FROM known_parts"
           " UNION ALL SELECT 'I', e, a, quote(v), value_type_tag, 0, 0, 0, 0, 0 FROM idents"
           " UNION ALL SELECT 'S', e, a, quote(v), value_type_tag, 0, 0, 0, 0, 0 FROM schema"
           " UNION ALL SELECT 'M', name, a, kind, 0, 0, 0, 0, 0, 0 FROM mentat_managed_indexes"
           " UNION ALL SELECT 'F', rowid, text, 0, 0, 0, 0, 0, 0, 0 FROM fulltext_values"
           " UNION ALL SELECT 'X', name, sql, 0, 0, 0, 0, 0, 0, 0 FROM sqlite_master"
           " ORDER BY 1, 2, 3, 4, 5, 6");
}

/* The transaction must fail with exactly the message zWant, and leave the
** store exactly as it was. */
static void Tfail(const char *zEdn, const char *zWant) {
  char *zBefore = dump(), *zAfter, *z;
  z = T(zEdn);
  ck_assert_msg(strncmp(z, "ERROR: ", 7) == 0, "%s should fail, got %s", zEdn, z);
  ck_assert_msg(strcmp(z + 7, zWant) == 0, "%s\n  got:  %s\n  want: %s", zEdn, z + 7, zWant);
  zAfter = dump();
  ck_assert_msg(strcmp(zBefore, zAfter) == 0, "%s changed the store", zEdn);
  free(z);
  free(zBefore);
  free(zAfter);
}

/* json_extract(report, path) as text. */
static char *J(const char *zRep, const char *zPath) {
  sqlite3_stmt *pStmt = NULL;
  char *zRet;
  ck_assert_int_eq(sqlite3_prepare_v2(gDb, "SELECT json_extract(?1, ?2)", -1, &pStmt, NULL), SQLITE_OK);
  sqlite3_bind_text(pStmt, 1, zRep, -1, SQLITE_STATIC);
  sqlite3_bind_text(pStmt, 2, zPath, -1, SQLITE_STATIC);
  ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ROW);
  zRet = strdup(sqlite3_column_text(pStmt, 0) ? (const char *)sqlite3_column_text(pStmt, 0) : "NULL");
  sqlite3_finalize(pStmt);
  return zRet;
}

#define CHECK_J(REP, PATH, EXPECT) do { char *zGot_ = J(REP, PATH); \
  ck_assert_msg(strcmp(zGot_, EXPECT) == 0, "%s %s: got %s want %s", REP, PATH, zGot_, EXPECT); \
  free(zGot_); } while (0)

static void setupSchema(void) {
  openStore();
  Tok(zSchema);
}

/* ---- schema ----------------------------------------------------------- */

START_TEST(test_schema_install) {
  char *zRep, *zDump1, *zDump2;
  openStore();
  zRep = T(zSchema);
  CHECK_J(zRep, "$.tx_id", "268435457");
  CHECK_J(zRep, "$.tempids", "{}");
  free(zRep);
  /* :p/id: ident, string, one, identity, and the implied :db/index true. */
  CHECK_Q("SELECT a, quote(v), tx, value_type_tag FROM datoms WHERE e = 65537 ORDER BY a",
          "1|':p/id'|268435457|13;7|27|268435457|0;8|33|268435457|0;9|36|268435457|0;"
          "11|1|268435457|1");
  /* :p/tags: cardinality many; no :db/index. */
  CHECK_Q("SELECT a, v FROM datoms WHERE e = 65538 ORDER BY a", "1|:p/tags;7|27;8|34");
  /* mirrors */
  CHECK_Q("SELECT e, a, v, value_type_tag FROM idents WHERE e IN (65536, 65537) ORDER BY e",
          "65536|1|:p/name|13;65537|1|:p/id|13");
  CHECK_Q("SELECT a, v, value_type_tag FROM schema WHERE e = 65537 ORDER BY a",
          "7|27|0;8|33|0;9|36|0;11|1|1");
  CHECK_Q("SELECT count(*) FROM schema WHERE e = 65545 AND a = 12", "1");
  /* value indexes: unique attributes >= 65536 only (not fulltext ones) */
  CHECK_Q("SELECT name, a, kind FROM mentat_managed_indexes ORDER BY a",
          "idx_auto_avet_65537|65537|schema;idx_auto_avet_65541|65541|schema;"
          "idx_auto_avet_65548|65548|schema");
  CHECK_Q("SELECT sql FROM sqlite_master WHERE name = 'idx_auto_avet_65537'",
          "CREATE INDEX idx_auto_avet_65537 ON datoms (a, v, e) WHERE a = 65537");
  CHECK_Q("SELECT part, idx FROM known_parts ORDER BY part",
          ":db.part/db|41;:db.part/tx|268435458;:db.part/user|65549");
  /* the new attribute is usable by the next transaction */
  Tok("[{:p/name \"x\" :p/tags [\"a\" \"b\"]}]");
  /* re-running the identical schema (three times) changes no schema datom */
  zDump1 = Q("SELECT e, a, quote(v), tx FROM datoms WHERE e < 268435456 ORDER BY e, a, v");
  Tok(zSchema);
  Tok(zSchema);
  zRep = T(zSchema);
  CHECK_J(zRep, "$.tempids", "{}");
  free(zRep);
  zDump2 = Q("SELECT e, a, quote(v), tx FROM datoms WHERE e < 268435456 ORDER BY e, a, v");
  ck_assert_str_eq(zDump1, zDump2);
  free(zDump1);
  free(zDump2);
  /* those re-runs logged only their :db/txInstant */
  CHECK_Q("SELECT count(*), min(a), max(a) FROM timelined_transactions WHERE tx > 268435458", "3|3|3");
  closeStore();
}
END_TEST

/* ---- the report and the tx instant --------------------------------- */

START_TEST(test_add_list_form) {
  char *zRep, *zInst;
  setupSchema();
  zRep = T("[[:db/add \"x\" :p/name \"X\"] [:db/add \"x\" :p/age 7]]");
  CHECK_J(zRep, "$.tx_id", "268435458");
  CHECK_J(zRep, "$.tempids.x", "65549");
  /* tx_instant is the tx's :db/txInstant datom (microseconds) as text, and
  ** that is now, give or take a minute */
  zInst = J(zRep, "$.tx_instant");
  CHECK_Q("SELECT abs(v / 1000000 - unixepoch()) < 60 FROM datoms WHERE e = 268435458 AND a = 3", "1");
  {
    char *zDatom = Q("SELECT strftime('%Y-%m-%dT%H:%M:%S', v / 1000000, 'unixepoch')"
                     " || printf('.%06dZ', v % 1000000) FROM datoms WHERE e = 268435458 AND a = 3");
    ck_assert_str_eq(zInst, zDatom);
    free(zDatom);
  }
  free(zInst);
  free(zRep);
  CHECK_Q("SELECT e, a, v, tx, value_type_tag, index_avet, index_vaet, index_fulltext, unique_value"
          " FROM datoms WHERE e = 65549 ORDER BY a",
          "65549|65536|X|268435458|10|0|0|0|0;65549|65542|7|268435458|5|0|0|0|0");
  CHECK_Q("SELECT e, a, v, added, value_type_tag, timeline FROM timelined_transactions"
          " WHERE tx = 268435458 AND a <> 3 ORDER BY a",
          "65549|65536|X|1|10|0;65549|65542|7|1|5|0");
  /* the tx's own :db/txInstant datom, in datoms and the log */
  CHECK_Q("SELECT e, value_type_tag, index_avet FROM datoms WHERE a = 3 AND tx = 268435458",
          "268435458|4|1");
  CHECK_Q("SELECT count(*) FROM timelined_transactions WHERE tx = 268435458 AND a = 3 AND added = 1", "1");
  CHECK_Q("SELECT part, idx FROM known_parts ORDER BY part",
          ":db.part/db|41;:db.part/tx|268435459;:db.part/user|65550");
  /* an explicit entid past the user mark moves the mark, so it is never
  ** handed out again; the entity keeps cardinality one */
  Tok("[[:db/add 70000 :p/name \"explicit\"]]");
  CHECK_Q("SELECT idx FROM known_parts WHERE part = ':db.part/user'", "70001");
  Tok("[[:db/add 70000 :p/name \"again\"] [:db/add \"fresh\" :p/name \"f\"]]");
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65536 AND e >= 70000 ORDER BY e", "70000|again;70001|f");
  /* typed values: ref by entid, keyword ident, instant, double as REAL */
  Tok("[[:db/add 65549 :p/friend 65549] [:db/add 65549 :p/parent :p/name]]");
  CHECK_Q("SELECT a, v, value_type_tag, index_vaet FROM datoms WHERE e = 65549 AND a IN (65539, 65540)"
          " ORDER BY a", "65539|65549|0|1;65540|65536|0|1");
  closeStore();
}
END_TEST

/* An explicit :db/txInstant ahead of the clock: Datomic refuses one later
** than the transactor's clock; we allow MENTAT_TX_INSTANT_SKEW_MS (default
** 60 s) of skew. The instants are computed from the clock: *piUs gets the
** instant, zInst its printed form. */
static char *txInstantIn(long long nSecAhead, sqlite3_int64 *piUs, char *zInst) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  *piUs = ((sqlite3_int64)ts.tv_sec + nSecAhead) * 1000000;
  ednFormatInstant(*piUs, zInst);
  return sqlite3_mprintf("[{:db/id \"datomic.tx\" :db/txInstant #inst \"%s\"}]", zInst);
}

START_TEST(test_tx_instant_ahead) {
  char zInst[48], *zTx, *zWant, *zQ, zV[32];
  sqlite3_int64 iUs;
  setupSchema();
  zTx = txInstantIn(30, &iUs, zInst);      /* within the skew: the instant given */
  Tok(zTx);
  sqlite3_free(zTx);
  zQ = sqlite3_mprintf("SELECT v FROM datoms WHERE a = 3 ORDER BY e DESC LIMIT 1");
  snprintf(zV, sizeof zV, "%lld", (long long)iUs);
  CHECK_Q(zQ, zV);
  zTx = txInstantIn(600, &iUs, zInst);     /* ten minutes ahead: refused */
  zWant = sqlite3_mprintf("line 1 col 23: :db/txInstant %s is more than 60 s ahead of the clock", zInst);
  Tfail(zTx, zWant);
  sqlite3_free(zWant);
  /* the setting, in milliseconds */
  setenv("MENTAT_TX_INSTANT_SKEW_MS", "1500", 1);
  zWant = sqlite3_mprintf("line 1 col 23: :db/txInstant %s is more than 1500 ms ahead of the clock", zInst);
  Tfail(zTx, zWant);
  sqlite3_free(zWant);
  sqlite3_free(zTx);
  setenv("MENTAT_TX_INSTANT_SKEW_MS", "3600000", 1);
  zTx = txInstantIn(600, &iUs, zInst);     /* an hour's skew: ten minutes ahead is kept */
  Tok(zTx);
  sqlite3_free(zTx);
  unsetenv("MENTAT_TX_INSTANT_SKEW_MS");
  snprintf(zV, sizeof zV, "%lld", (long long)iUs);
  CHECK_Q(zQ, zV);
  /* the next transaction without an instant: not before the last one */
  Tok("[]");
  CHECK_Q(zQ, zV);
  sqlite3_free(zQ);
  closeStore();
}
END_TEST

/* ---- speed: one small transaction, statements cached --------------- */

START_TEST(test_many_small_transactions) {
  int i;
  char zTx[128];
  setupSchema();
  for (i = 0; i < 300; i++) {
    snprintf(zTx, sizeof zTx, "[{:p/id \"k%d\" :p/age %d}]", i % 50, i);
    Tok(zTx);
  }
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65537", "50");
  CHECK_Q("SELECT count(*), sum(v) FROM datoms WHERE a = 65542", "50|13725");
  CHECK_Q("SELECT idx FROM known_parts WHERE part = ':db.part/tx'", "268435758");
  closeStore();
}
END_TEST

/* ---- bulk: 10,000 entities with lookup refs and tempids in one call -- */

START_TEST(test_bulk_lookup_refs) {
  sqlite3_str *pTx = sqlite3_str_new(NULL);
  char *zTx, *zRep;
  int i;
  setupSchema();
  /* tx 2: users u0..u99 are 65549..65648 (map order) */
  sqlite3_str_appendall(pTx, "[");
  for (i = 0; i < 100; i++) sqlite3_str_appendf(pTx, "{:p/id \"u%d\" :p/email \"u%d@x\"}", i, i);
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  Tok(zTx);
  sqlite3_free(zTx);
  /* tx 3: t0..t9999 = 65649..75648; each names a user by :p/email (parent)
  ** and by :p/id plus the next tempid (friends): 40,000 datoms, 20,000
  ** lookup refs over 200 distinct ones */
  pTx = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pTx, "[");
  for (i = 0; i < 10000; i++) {
    sqlite3_str_appendf(pTx, "{:db/id \"t%d\" :p/name \"n%d\" :p/parent [:p/email \"u%d@x\"]"
                        " :p/friend [[:p/id \"u%d\"] \"t%d\"]}\n", i, i, i % 100, (i + 1) % 100,
                        (i + 1) % 10000);
  }
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  zRep = T(zTx);
  sqlite3_free(zTx);
  CHECK_J(zRep, "$.tx_id", "268435459");
  CHECK_J(zRep, "$.tempids.t0", "65649");
  CHECK_J(zRep, "$.tempids.t9999", "75648");
  free(zRep);
  CHECK_Q("SELECT count(*), min(e), max(e) FROM datoms WHERE tx = 268435459 AND a <> 3", "40000|65649|75648");
  CHECK_Q("SELECT count(*) FROM timelined_transactions WHERE tx = 268435459 AND added = 1 AND a <> 3", "40000");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65540 AND v = 65549 + (e - 65649) % 100", "10000");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65539"
          " AND (v = 65549 + (e - 65649 + 1) % 100 OR v = 65649 + (e - 65649 + 1) % 10000)", "20000");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65539 AND index_vaet = 1", "20000");
  CHECK_Q("SELECT idx FROM known_parts WHERE part = ':db.part/user'", "75649");
  /* a lookup ref that resolves nowhere: named at its first form */
  Tfail("[{:p/name \"a\" :p/parent [:p/email \"u0@x\"]}\n"
        " {:p/name \"b\" :p/parent [:p/email \"nobody\"]}\n"
        " {:p/name \"c\" :p/parent [:p/email \"nobody\"]}]",
        "line 2 col 25: lookup ref [:p/email \"nobody\"] does not resolve");
  Tfail("[[:db/add (lookup-ref :p/id \"zz\") :p/name \"x\"]]",
        "line 1 col 11: lookup ref (lookup-ref :p/id \"zz\") does not resolve");
  /* unique values in a bulk transaction still name the conflict */
  pTx = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pTx, "[");
  for (i = 0; i < 100; i++) sqlite3_str_appendf(pTx, "{:p/name \"m%d\" :p/ssn \"s%d\"}", i, i % 99);
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  Tfail(zTx,
        "line 1 col 2769: unique value conflict: :p/ssn \"s0\" is already held by entity 75649, "
        "cannot assert it for entity 75748");
  sqlite3_free(zTx);
  closeStore();
}
END_TEST

/* ---- OOM: every allocation of a transaction may fail ----------------- */

static void oomStore(void) {
  setupSchema();
  Tok("[{:p/id \"a\" :p/email \"a@x\" :p/name \"A\"} {:p/id \"b\" :p/email \"b@x\"}]");
}

/* The store's content as dump() has it, without the transactions' own
** :db/txInstant datoms (the clock's), so two runs of one transaction on two
** fresh stores compare. */
static char *dumpNoTime(void) {
  return Q("SELECT 'D', e, a, quote(v), tx, value_type_tag, index_avet, index_vaet, index_fulltext,"
           " unique_value FROM datoms WHERE a <> 3"
           " UNION ALL SELECT 'L', e, a, quote(v), tx, added, value_type_tag, timeline, 0, 0"
           " FROM timelined_transactions WHERE a <> 3"
           " UNION ALL SELECT 'P', part, start, \"end\", idx, allow_excision, 0, 0, 0, 0 FROM known_parts"
           " UNION ALL SELECT 'I', e, a, quote(v), value_type_tag, 0, 0, 0, 0, 0 FROM idents"
           " UNION ALL SELECT 'S', e, a, quote(v), value_type_tag, 0, 0, 0, 0, 0 FROM schema"
           " UNION ALL SELECT 'M', name, a, kind, 0, 0, 0, 0, 0, 0 FROM mentat_managed_indexes"
           " UNION ALL SELECT 'F', rowid, text, 0, 0, 0, 0, 0, 0, 0 FROM fulltext_values"
           " UNION ALL SELECT 'X', name, sql, 0, 0, 0, 0, 0, 0, 0 FROM sqlite_master"
           " ORDER BY 1, 2, 3, 4, 5, 6");
}

/* The sweep's transaction (tx 268435459 on oomStore's store) as written, by
** hand: :p/name (65536) becomes cardinality many (33 -> 34); :p/age
** (65542) unique value, with the implied :db/index; "s" = 65551 gets ssn
** "9" and friend b (65550); t0..t39 = 65552.. get tag "x<i>" and parent a
** (65549, by "a@x") for odd i, b (65550) for even i. */
static void checkSweepTx(void) {
  sqlite3_str *pD = sqlite3_str_new(NULL), *pL = sqlite3_str_new(NULL);
  char *zD, *zL;
  int i;
  sqlite3_str_appendall(pD, "65536|8|34;65542|9|35;65542|11|1;65551|65539|65550;65551|65541|9");
  sqlite3_str_appendall(pL, "65536|8|33|0;65536|8|34|1;65542|9|35|1;65542|11|1|1;"
                            "65551|65539|65550|1;65551|65541|9|1");
  for (i = 0; i < 40; i++) {
    sqlite3_str_appendf(pD, ";%d|65538|x%d;%d|65540|%d", 65552 + i, i, 65552 + i, i % 2 ? 65549 : 65550);
    sqlite3_str_appendf(pL, ";%d|65538|x%d|1;%d|65540|%d|1", 65552 + i, i, 65552 + i,
                        i % 2 ? 65549 : 65550);
  }
  zD = sqlite3_str_finish(pD);
  zL = sqlite3_str_finish(pL);
  CHECK_Q("SELECT e, a, v FROM datoms WHERE tx = 268435459 AND a <> 3 ORDER BY e, a", zD);
  CHECK_Q("SELECT e, a, v, added FROM timelined_transactions WHERE tx = 268435459 AND a <> 3"
          " ORDER BY e, a, added", zL);
  CHECK_Q("SELECT count(*) FROM datoms WHERE e = 268435459 AND a = 3", "1");
  CHECK_Q("SELECT e, a, v FROM schema WHERE (e = 65536 AND a = 8) OR e = 65542 ORDER BY e, a",
          "65536|8|34;65542|7|25;65542|8|33;65542|9|35;65542|11|1");
  CHECK_Q("SELECT name, a, kind FROM mentat_managed_indexes WHERE a = 65542",
          "idx_auto_avet_65542|65542|schema");
  CHECK_Q("SELECT part, idx FROM known_parts ORDER BY part",
          ":db.part/db|41;:db.part/tx|268435460;:db.part/user|65592");
  sqlite3_free(zD);
  sqlite3_free(zL);
}

/* A transaction altering the schema, with lookup refs, tempids, batches
** and a unique value; the n-th allocation fails, for every n until the
** transaction needs fewer. A failed call returns SQLITE_NOMEM (nothing
** else) and leaves the store byte-identical; one that got past the failure
** must have written exactly the whole transaction: checkSweepTx's datoms
** by hand, and everything else as a run without failures writes it (run
** under valgrind for leaks). */
START_TEST(test_oom_sweep) {
  sqlite3_str *pTx;
  char *zTx, *zBefore, *zWant;
  int n, i, bDone = 0, nFail = 0, nRound = 0;
  pTx = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pTx, "[[:db/add :p/name :db/cardinality :db.cardinality/many]"
                             " [:db/add :p/age :db/unique :db.unique/value]"
                             " {:db/id \"s\" :p/ssn \"9\" :p/friend [:p/id \"b\"]}");
  for (i = 0; i < 40; i++) {
    sqlite3_str_appendf(pTx, " {:db/id \"t%d\" :p/tags \"x%d\" :p/parent [:p/email \"%s\"]}",
                        i, i, i % 2 ? "a@x" : "b@x");
  }
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  /* The store the transaction must leave, from a run without failures
  ** that gives checkSweepTx's datoms. */
  closeStore();
  oomStore();
  Tok(zTx);
  checkSweepTx();
  zWant = dumpNoTime();
  closeStore();
  tuOomInstall();
  /* transient failures first (only the n-th allocation fails: what absorbs
  ** it must still write everything), then persistent ones (every allocation
  ** from the n-th on fails: the cleanup paths too) */
  for (int iMode = 0; iMode < 2; iMode++) {
  tuOomOnce = iMode == 0;
  bDone = 0;
  nFail = 0;
  nRound = 0;
  oomStore();
  zBefore = dump();
  for (n = 0; n < 50000 && !bDone; n += (n < 1500 ? 1 : 7)) {
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    char *zErr = NULL, *zAfter;
    int rc, bReached;
    tuOomLeft = n;
    nRound++;
    rc = txTransact(gStore, zTx, (int)strlen(zTx), pOut, &zErr);
    /* transient: the failure was handed out (the counter went past 0);
    ** persistent: the call could not finish without it */
    bReached = tuOomOnce ? tuOomLeft == -1 : rc != SQLITE_OK;
    tuOomLeft = -1;
    sqlite3_free(sqlite3_str_finish(pOut));
    ck_assert_msg(rc == SQLITE_OK || tuIsNomem(rc), "failing allocation %d: rc %d %s", n, rc,
                  zErr ? zErr : "");
    if (!bReached) {
      ck_assert_msg(rc == SQLITE_OK, "no failure injected, rc %d %s", rc, zErr ? zErr : "");
      bDone = 1;
    }
    if (rc == SQLITE_OK) {
      checkSweepTx();
      zAfter = dumpNoTime();
      ck_assert_msg(strcmp(zAfter, zWant) == 0, "failing allocation %d: the store differs from a"
                    " run without failures", n);
      free(zAfter);
      if (!bDone) {                       /* SQLite absorbed the failure: start again */
        closeStore();
        oomStore();
        free(zBefore);
        zBefore = dump();
      }
    } else {
      nFail++;
      /* (a persistent failure may leave no memory for a message) */
      ck_assert_msg(zErr != NULL || !tuOomOnce, "failing allocation %d: rc %d without a message", n, rc);
      zAfter = dump();
      ck_assert_msg(strcmp(zBefore, zAfter) == 0, "failing allocation %d (rc %d %s) changed the store",
                    n, rc, zErr ? zErr : "");
      free(zAfter);
    }
    sqlite3_free(zErr);
  }
  ck_assert_msg(bDone && nFail > 100, "%s sweep ended at %d with %d failures",
                iMode ? "persistent" : "transient", n, nFail);
  tuFaultSummary("txTransact", iMode ? "persistent" : "transient", nRound, nFail);
  free(zBefore);
  closeStore();
  }
  free(zWant);
  sqlite3_free(zTx);
  tuOomRemove();
  tuOomOnce = 0;
}
END_TEST

/* ---- large transactions: the multi-row insert path ---------------- */

START_TEST(test_bulk_batches) {
  sqlite3_str *pTx = sqlite3_str_new(NULL);
  char *zTx;
  int i;
  setupSchema();
  /* 100 entities x 3 datoms (+ txInstant) = 301 rows: 18 full batches and
  ** a tail, each logged whole (:p/seen, noHistory, in every 10th entity
  ** too: its current values are logged like any). */
  sqlite3_str_appendall(pTx, "[");
  for (i = 0; i < 100; i++) {
    sqlite3_str_appendf(pTx, "{:p/id \"b%d\" :p/age %d %s}", i, i,
                        i % 10 == 0 ? ":p/seen 1" : ":p/name \"n\"");
  }
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  Tok(zTx);
  CHECK_Q("SELECT count(*) FROM datoms WHERE tx = 268435458", "301");
  CHECK_Q("SELECT count(*) FROM timelined_transactions WHERE tx = 268435458", "301");
  CHECK_Q("SELECT count(*) FROM datoms d WHERE tx = 268435458 AND NOT EXISTS"
          " (SELECT 1 FROM timelined_transactions l WHERE l.e = d.e AND l.a = d.a AND l.v = d.v"
          "  AND l.tx = d.tx AND l.added = 1 AND l.value_type_tag = d.value_type_tag)", "0");
  CHECK_Q("SELECT min(e), max(e), count(DISTINCT e) FROM datoms WHERE a = 65542", "65549|65648|100");
  sqlite3_free(zTx);
  /* a unique-value conflict inside a full batch is still named */
  Tok("[{:p/id \"holder\" :p/ssn \"777\"}]");
  pTx = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pTx, "[");
  for (i = 0; i < 40; i++) {
    sqlite3_str_appendf(pTx, "{:p/id \"c%d\" :p/ssn \"%s%d\"}", i, i == 17 ? "" : "s", i == 17 ? 777 : i);
  }
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  Tfail(zTx,
        "line 1 col 437: unique value conflict: :p/ssn \"777\" is already held by entity 65649, "
        "cannot assert it for entity 65667");
  sqlite3_free(zTx);
  closeStore();
}
END_TEST

/* ---- the writer's WAL policy and tuning (store_wal.c, store_tune.c) ------------- */

/* A host cursor's snapshot, as edn_q keeps one: here an open read
** transaction on the raw connection; xRelease ends it. */
typedef struct TestHold {
  StoreHold base;
  sqlite3 *db;
  int nRelease;
} TestHold;

static int testHoldRelease(StoreHold *pHold, ConfigBudget *pBudget) {
  TestHold *p = (TestHold *)pHold;
  (void)pBudget;
  p->nRelease++;
  sqlite3_exec(p->db, "COMMIT", NULL, NULL, NULL);
  return 1;
}

static sqlite3_int64 walSize(void) {
  char zWal[300];
  struct stat st;
  snprintf(zWal, sizeof zWal, "%s-wal", sqlite3_db_filename(gDb, "main"));
  return stat(zWal, &st) == 0 ? (sqlite3_int64)st.st_size : 0;
}

/* Runs n transactions of one ~60 KB string each (with its index entries
** and log row, ~5 times that in WAL frames); returns the largest WAL size
** seen after a commit. */
static sqlite3_int64 bigTxs(int iFirst, int n) {
  sqlite3_int64 nMax = 0;
  char *zTx = malloc(60100);
  int i;
  for (i = iFirst; i < iFirst + n; i++) {
    snprintf(zTx, 60100, "[{:p/id \"w%d\" :p/name \"%08d%060000d\"}]", i, i, 0);
    Tok(zTx);
    if (walSize() > nMax) nMax = walSize();
  }
  free(zTx);
  return nMax;
}

/* Without readers the WAL is checkpointed every 6 MiB of new frames and
** started again (the format's journal_size_limit, 3 MiB, trims it after
** each new start), so it stays near one checkpoint interval however much
** is written: 150 x ~60 KB transactions write ~40 MiB of frames. */
START_TEST(test_wal_bounded) {
  sqlite3_int64 nMax;
  setupSchema();
  nMax = bigTxs(0, 150);
  ck_assert_msg(nMax > 3 * 1024 * 1024, "the WAL never reached 3 MiB (%lld): the test wrote too little",
                (long long)nMax);
  ck_assert_msg(nMax <= 7 * 1024 * 1024, "WAL reached %lld bytes", (long long)nMax);
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65536", "150");
  closeStore();
}
END_TEST

/* A reader in another connection that never lets go (an open transaction)
** makes the RESTART checkpoint past the bound wait its 400 ms and fail;
** the writer then waits again only after 4 MiB more, not at every commit
** (were the retry mark cleared by the next commit, every commit past the
** bound would wait). Bound 4 MiB here (RESTART from 2 MiB);
** 30 commits of ~60 KB past it write < 2 MiB: at most one more wait. */
START_TEST(test_wal_restart_throttled) {
  sqlite3_int64 nOld = configSetWalRestartBytes(4 * 1024 * 1024);
  sqlite3 *pReader = NULL;
  int i, nSlow = 0;
  setupSchema();
  bigTxs(0, 5);
  ck_assert_int_eq(sqlite3_open(sqlite3_db_filename(gDb, "main"), &pReader), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(pReader, "BEGIN; SELECT count(*) FROM datoms;", NULL, NULL, NULL), SQLITE_OK);
  for (i = 5; walSize() < 2 * 1024 * 1024 + 200 * 1024; i++) bigTxs(i, 1);
  for (int k = 0; k < 30; k++, i++) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bigTxs(i, 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 390) nSlow++;
  }
  /* every commit waits its 400 ms when the mark is lost: 30 of 30; a slow
  ** machine (valgrind, a busy CI host) may add a few slow commits of its own */
  ck_assert_msg(nSlow <= 10, "%d of 30 commits waited for the reader", nSlow);
  sqlite3_exec(pReader, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(pReader);
  closeStore();
  configSetWalRestartBytes(nOld);
}
END_TEST

/* The writer's page cache size (PRAGMA cache_size, KiB, negative), read on
** the writer connection between transactions. */
static int writerCacheKiB(void) {
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  sqlite3_stmt *pStmt = NULL;
  char *zErr = NULL;
  int n = 0;
  ck_assert_int_eq(storeWriteBegin(gStore, &pConn, &pSchema, &zErr), SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(pConn->db, "PRAGMA cache_size", -1, &pStmt, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(pStmt), SQLITE_ROW);
  n = sqlite3_column_int(pStmt, 0);
  sqlite3_finalize(pStmt);
  schemaUnref(pSchema);
  ck_assert_int_eq(storeWriteEnd(gStore, pConn, 0, NULL, &zErr), SQLITE_OK);
  return n;
}

/* A transaction of at most 128 operations runs with an 8 MiB writer cache,
** a larger one with 64 MiB (tx.c, txFitCache); after a large one the cache
** shrinks back only at the 16th small transaction in a row. The data of
** each is all there. */
START_TEST(test_writer_cache_fits_tx) {
  sqlite3_str *pTx = sqlite3_str_new(NULL);
  char *zTx;
  int i;
  setupSchema();
  ck_assert_int_eq(writerCacheKiB(), -8192);          /* the schema: 11 maps, ~40 ops */
  sqlite3_str_appendall(pTx, "[");
  for (i = 0; i < 129; i++) sqlite3_str_appendf(pTx, "[:db/add \"t%d\" :p/id \"c%d\"]", i, i);
  sqlite3_str_appendall(pTx, "]");
  zTx = sqlite3_str_finish(pTx);
  Tok(zTx);
  sqlite3_free(zTx);
  ck_assert_int_eq(writerCacheKiB(), -65536);
  for (i = 0; i < 16; i++) {
    char zSmall[64];
    ck_assert_int_eq(writerCacheKiB(), -65536);
    snprintf(zSmall, sizeof zSmall, "[[:db/add \"x\" :p/id \"small%d\"]]", i);
    Tok(zSmall);
  }
  ck_assert_int_eq(writerCacheKiB(), -8192);
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = (SELECT e FROM idents WHERE v = ':p/id')", "145");
  closeStore();
}
END_TEST

/* A snapshot held open pins the WAL: without a hold registered it grows
** past the checkpoint interval; with one, the writer asks it to let go
** once the WAL passes 4 MiB (B25), exactly once, and the WAL then stays a
** few MiB. */
START_TEST(test_wal_hold_released) {
  TestHold hold;
  sqlite3_int64 nMax;
  setupSchema();
  /* control: a raw snapshot nobody can release */
  ck_assert_int_eq(sqlite3_exec(gDb, "BEGIN; SELECT count(*) FROM datoms", NULL, NULL, NULL), SQLITE_OK);
  nMax = bigTxs(0, 60);
  ck_assert_msg(nMax > 8 * 1024 * 1024, "a pinned WAL stayed at %lld bytes", (long long)nMax);
  ck_assert_int_eq(sqlite3_exec(gDb, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
  Tok("[{:p/id \"after\"}]");
  ck_assert_int_eq(sqlite3_exec(gDb, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL), SQLITE_OK);
  /* the same with the snapshot registered as a hold */
  memset(&hold, 0, sizeof hold);
  hold.base.xRelease = testHoldRelease;
  hold.db = gDb;
  ck_assert_int_eq(sqlite3_exec(gDb, "BEGIN; SELECT count(*) FROM datoms", NULL, NULL, NULL), SQLITE_OK);
  storeHoldAdd(gStore, &hold.base);
  nMax = bigTxs(2000, 120);
  ck_assert_int_eq(hold.nRelease, 1);
  ck_assert_int_eq(sqlite3_get_autocommit(gDb), 1);
  ck_assert_msg(nMax <= 7 * 1024 * 1024, "WAL reached %lld bytes with the hold released",
                (long long)nMax);
  storeHoldRemove(gStore, &hold.base);
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65536", "180");   /* 60 + 120 names */
  closeStore();
}
END_TEST

/* storeWriteEnd retunes only after a commit that inserted datoms past the
** threshold (the transactor notes the datoms rowid), not after every
** commit: below it nothing is created; the commit that crosses it creates
** the managed indexes; a retraction-only commit on a big store does not
** need to look. */
START_TEST(test_tune_on_growth) {
  sqlite3_int64 nOld = configSetTuneMinDatoms(200);
  int i;
  char zTx[96];
  setupSchema();
  /* the schema and bootstrap: ~150 datoms, below 200 */
  CHECK_Q("SELECT count(*) FROM sqlite_master WHERE name LIKE 'idx_mentat_%'", "0");
  for (i = 0; i < 30; i++) {
    snprintf(zTx, sizeof zTx, "[{:p/id \"g%d\" :p/age %d :p/name \"n%d\"}]", i, i, i);
    Tok(zTx);
  }
  /* past 200: bootstrap 95, schema 13 x 3 + 3 unique x 2 + component,
  ** fulltext, noHistory + txInstant = 49, then 30 x (3 + txInstant) */
  CHECK_Q("SELECT count(*), max(rowid) FROM datoms", "264|264");
  /* the store-wide index, and log value indexes for :p/id (unique, 65537)
  ** and :p/friend (ref, 65539), none for :p/name or :p/age (neither) */
  CHECK_Q("SELECT group_concat(name, ';') FROM (SELECT name FROM sqlite_master WHERE name IN"
          " ('idx_mentat_datoms_atx', 'idx_mentat_log_avet_' || (SELECT e FROM idents WHERE v = ':p/id'),"
          " 'idx_mentat_log_avet_' || (SELECT e FROM idents WHERE v = ':p/friend'),"
          " 'idx_mentat_log_avet_' || (SELECT e FROM idents WHERE v = ':p/age'),"
          " 'idx_mentat_log_avet_' || (SELECT e FROM idents WHERE v = ':p/name')) ORDER BY name)",
          "idx_mentat_datoms_atx;idx_mentat_log_avet_65537;idx_mentat_log_avet_65539");
  /* the store-wide ones: idx_mentat_datoms_atx and edn_log's idx_mentat_log_tx */
  CHECK_Q("SELECT count(*) FROM mentat_managed_indexes WHERE kind = 'store'", "2");
  Tok("[[:db/retract [:p/id \"g3\"] :p/age 3]]");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65542", "29");
  closeStore();
  configSetTuneMinDatoms(nOld);
}
END_TEST

/* A bulk transaction (1,000 datoms or more) does not build the managed
** indexes when it takes the store past the threshold; the next read in the
** process does, before it is served (store_tune.c, TUNING AFTER BULK
** WRITES). A second store gets them from the next small commit instead. */
static char *bulkPeople(int iFirst, int n) {
  sqlite3_str *pTx = sqlite3_str_new(NULL);
  sqlite3_str_appendall(pTx, "[");
  for (int i = iFirst; i < iFirst + n; i++) {
    sqlite3_str_appendf(pTx, "{:p/id \"b%d\" :p/age %d :p/name \"n%d\"}", i, i, i);
  }
  sqlite3_str_appendall(pTx, "]");
  return sqlite3_str_finish(pTx);
}

START_TEST(test_tune_deferred_by_bulk) {
  sqlite3_int64 nOld = configSetTuneMinDatoms(200);
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  char *zErr = NULL, *zTx;
  const char *zCount = "SELECT count(*) FROM sqlite_master WHERE name LIKE 'idx_mentat_%'";
  setupSchema();
  zTx = bulkPeople(0, 400);                             /* 1,200 datoms */
  Tok(zTx);
  sqlite3_free(zTx);
  CHECK_Q("SELECT count(*) FROM datoms WHERE tx = 268435458", "1201");   /* and its txInstant */
  CHECK_Q(zCount, "0");
  ck_assert_int_eq(storeReader(gStore, &pConn, &pSchema, &zErr), SQLITE_OK);
  storeReaderDone(gStore, pConn);
  schemaUnref(pSchema);
  CHECK_Q("SELECT count(*) FROM sqlite_master WHERE name IN ('idx_mentat_datoms_atx',"
          " 'idx_mentat_log_avet_' || (SELECT e FROM idents WHERE v = ':p/id'))", "2");
  closeStore();

  setupSchema();
  zTx = bulkPeople(0, 400);
  Tok(zTx);
  sqlite3_free(zTx);
  CHECK_Q(zCount, "0");
  Tok("[{:p/id \"after\"}]");
  CHECK_Q("SELECT count(*) FROM sqlite_master WHERE name IN ('idx_mentat_datoms_atx',"
          " 'idx_mentat_log_avet_' || (SELECT e FROM idents WHERE v = ':p/id'))", "2");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = (SELECT e FROM idents WHERE v = ':p/id')", "401");
  closeStore();
  configSetTuneMinDatoms(nOld);
}
END_TEST

/* A deferred tune that finds another connection writing (BEGIN IMMEDIATE
** busy) must not count as the store's first look: the next commit that
** grows the store builds the managed indexes, not only the statistics. */
START_TEST(test_tune_retried_after_busy) {
  sqlite3_int64 nOld = configSetTuneMinDatoms(200);
  StoreConn *pConn = NULL;
  Schema *pSchema = NULL;
  char *zErr = NULL, *zTx;
  setupSchema();
  zTx = bulkPeople(0, 400);
  Tok(zTx);
  sqlite3_free(zTx);
  ck_assert_int_eq(sqlite3_exec(gDb, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
  ck_assert_int_eq(storeReader(gStore, &pConn, &pSchema, &zErr), SQLITE_OK);  /* tune: busy */
  storeReaderDone(gStore, pConn);
  schemaUnref(pSchema);
  ck_assert_int_eq(sqlite3_exec(gDb, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
  CHECK_Q("SELECT count(*) FROM sqlite_master WHERE name LIKE 'idx_mentat_%'", "0");
  Tok("[{:p/id \"after\" :p/age 1}]");
  CHECK_Q("SELECT count(*) FROM sqlite_master WHERE name IN ('idx_mentat_datoms_atx',"
          " 'idx_mentat_log_avet_' || (SELECT e FROM idents WHERE v = ':p/id'))", "2");
  closeStore();
  configSetTuneMinDatoms(nOld);
}
END_TEST

/* The tx partition ends at INT64_MAX, and its mark (the next id) must stay
** representable: the last id is never given out, the partition reads as
** full at mark INT64_MAX, and it stays full rather than wrapping the mark
** to INT64_MIN (signed overflow) and reading as corrupt. */
START_TEST(test_tx_partition_end) {
  char *z;
  setupSchema();
  ck_assert_int_eq(sqlite3_exec(gDb, "UPDATE known_parts SET idx = 9223372036854775806"
                                " WHERE part = ':db.part/tx'", NULL, NULL, NULL), SQLITE_OK);
  z = T("[[:db/add \"a\" :p/name \"a\"]]");
  CHECK_J(z, "$.tx_id", "9223372036854775806");
  free(z);
  CHECK_Q("SELECT idx FROM known_parts WHERE part = ':db.part/tx'", "9223372036854775807");
  Tfail("[[:db/add \"b\" :p/name \"b\"]]", "partition :db.part/tx is full");
  Tfail("[[:db/add \"b\" :p/name \"b\"]]", "partition :db.part/tx is full");
  CHECK_Q("SELECT idx FROM known_parts WHERE part = ':db.part/tx'", "9223372036854775807");
  closeStore();
}
END_TEST

/* An explicit entid not given out yet at the end of its partition was
** accepted without moving the mark, and a writer opened later moved the mark
** past it (the largest id in use): :db.part/user read as full for every
** later tempid. Such an id is refused by name, in any position (entity or
** ref value) and partition; ids below the mark, and explicit ids that leave
** the partition room, still work. */
START_TEST(test_explicit_id_part_end) {
  char zPath[512], *zErr = NULL, *z;
  setupSchema();
  snprintf(zPath, sizeof zPath, "%s", sqlite3_db_filename(gDb, "main"));
  Tfail("[[:db/add 268435455 :p/name \"x\"]]",
        "line 1 col 21: entity 268435455 is not given out yet, and naming it would move the next id of "
        "partition :db.part/user to or past its end (268435455); use a tempid");
  Tfail("[[:db/add 268435454 :p/name \"x\"]]",
        "line 1 col 21: entity 268435454 is not given out yet, and naming it would move the next id of "
        "partition :db.part/user to or past its end (268435455); use a tempid");
  Tfail("[[:db/add \"a\" :p/friend 268435455]]",
        "line 1 col 15: entity 268435455 is not given out yet, and naming it would move the next id of "
        "partition :db.part/user to or past its end (268435455); use a tempid");
  Tfail("[[:db/add 65535 :p/name \"x\"]]",
        "line 1 col 17: entity 65535 is not given out yet, and naming it would move the next id of "
        "partition :db.part/db to or past its end (65535); use a tempid");
  Tfail("[{:db/id 268435455 :p/name \"x\"}]",
        "line 1 col 20: entity 268435455 is not given out yet, and naming it would move the next id of "
        "partition :db.part/user to or past its end (268435455); use a tempid");
  Tok("[[:db/add 268435453 :p/name \"last room\"]]");
  CHECK_Q("SELECT idx FROM known_parts WHERE part = ':db.part/user'", "268435454");
  Tok("[[:db/add 268435453 :p/name \"again\"] [:db/add 65549 :p/name \"below\"]]");
  /* a writer opened afresh (a new process) still gives out the last id */
  sqlite3_close(gDb);
  storeRelease(gStore);
  storeCacheClear();
  ck_assert_msg(storeAcquire(zPath, &gStore, &zErr) == SQLITE_OK, "acquire: %s", zErr);
  ck_assert_int_eq(sqlite3_open(zPath, &gDb), SQLITE_OK);
  z = T("[[:db/add \"t\" :p/name \"t\"]]");
  CHECK_J(z, "$.tempids.t", "268435454");
  free(z);
  z = T("[[:db/add \"u\" :p/name \"u\"]]");
  CHECK_J(z, "$.tempids.u", "268435455");
  free(z);
  Tfail("[[:db/add \"v\" :p/name \"v\"]]", "line 1 col 11: partition :db.part/user is full");
  closeStore();
}
END_TEST

static Suite *txSuite(void) {
  tuNoFsync();
  Suite *s = suite_create("tx");
  TCase *tc = tcase_create("tx");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_schema_install);
  tcase_add_test(tc, test_add_list_form);
  tcase_add_test(tc, test_tx_instant_ahead);
  tcase_add_test(tc, test_tx_partition_end);
  tcase_add_test(tc, test_explicit_id_part_end);
  tcase_add_test(tc, test_many_small_transactions);
  tcase_add_test(tc, test_bulk_batches);
  tcase_add_test(tc, test_bulk_lookup_refs);
  tcase_add_test(tc, test_writer_cache_fits_tx);
  tcase_add_test(tc, test_wal_bounded);
  tcase_add_test(tc, test_wal_restart_throttled);
  tcase_add_test(tc, test_wal_hold_released);
  tcase_add_test(tc, test_tune_on_growth);
  tcase_add_test(tc, test_tune_deferred_by_bulk);
  tcase_add_test(tc, test_tune_retried_after_busy);
  suite_add_tcase(s, tc);
  tc = tuFaultCase("oom", 300);
  tcase_add_test(tc, test_oom_sweep);
  suite_add_tcase(s, tc);
  return s;
}

/* The whole suite runs with the WAL-gathering VFS on (store_vfs.c;
** the default, forced here in case the environment says otherwise): every
** check reads the store back through a plain raw connection right after
** each commit, so frames left in the buffer would show. Set before the
** store reads the environment (it does so once). */
__attribute__((constructor)) static void setWalGather(void) {
  setenv("MENTAT_WAL_GATHER", "1", 1);
}

TU_MAIN(txSuite)
