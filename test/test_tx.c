/*
** test_tx.c — the transactor (tx*.c) against real store files.
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

START_TEST(test_schema_legacy_and_errors) {
  setupSchema();
  /* Datomic's legacy form: #db/id [:db.part/db] allocates from :db.part/db
  ** (idx 41 on a new store); :db.install/_attribute is recorded as a datom. */
  Tok("[{:db/id #db/id [:db.part/db] :db/ident :l/x :db/valueType :db.type/long"
      "  :db/cardinality :db.cardinality/one :db.install/_attribute :db.part/db}]");
  CHECK_Q("SELECT e, a, v FROM datoms WHERE a = 6", "2|6|41");
  CHECK_Q("SELECT v FROM idents WHERE e = 41", ":l/x");
  CHECK_Q("SELECT part, idx FROM known_parts WHERE part = ':db.part/db'", ":db.part/db|42");
  Tok("[[:db/add \"n\" :l/x 5]]");
  Tfail("[{:db/ident :p/age :db/valueType :db.type/string}]",
        "line 1 col 20: cannot change the value type of attribute :p/age");
  Tfail("[{:db/ident :z/z :db/cardinality :db.cardinality/one}]",
        "line 1 col 3: attribute :z/z needs a :db/valueType");
  Tfail("[{:db/ident :z/z :db/valueType :db.cardinality/one}]",
        "line 1 col 3: attribute :z/z: unsupported :db/valueType :db.cardinality/one; use one of "
        "the :db.type/* idents ref, keyword, long, double, string, uuid, boolean, instant, bytes");
  Tfail("[{:db/ident :z/z :db/valueType :db.type/uri}]",
        "line 1 col 3: attribute :z/z: unsupported :db/valueType :db.type/uri; use one of the "
        ":db.type/* idents ref, keyword, long, double, string, uuid, boolean, instant, bytes");
  /* unchanged values are fine (not an alteration) */
  Tok("[{:db/ident :p/age :db/cardinality :db.cardinality/one :db/doc \"years\"}]");
  CHECK_Q("SELECT v FROM datoms WHERE e = 65542 AND a = 37", "years");
  /* defined and used in the same transaction: refused, clearly (B24 T3) */
  Tfail("[{:db/ident :q/new :db/valueType :db.type/string :db/cardinality :db.cardinality/one}\n"
        " {:p/id \"B\" :q/new \"v\"}]",
        "line 2 col 13: attribute :q/new is defined in this same transaction; transact the schema first");
  Tfail("[{:p/id \"C\" :q/new \"v\"}]", "line 1 col 13: unknown attribute :q/new");
  Tok("[{:db/ident :q/new :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]");
  Tok("[{:p/id \"C\" :q/new \"v\"}]");
  /* enum idents are entities with only :db/ident; usable as ref values */
  Tok("[{:db/ident :size/small} {:db/ident :size/large}]");
  Tok("[{:p/id \"s\" :p/parent :size/large}]");
  CHECK_Q("SELECT d.v = i.e FROM datoms d, idents i WHERE d.a = 65540 AND i.v = ':size/large'", "1");
  closeStore();
}
END_TEST

/* ---- schema alteration (issue 4 item 7) ------------------------------ */


START_TEST(test_alter_rename) {
  setupSchema();
  /* tx 2: :p/age (65542) becomes :p/years through a plain assertion */
  Tok("[{:db/id :p/age :db/ident :p/years}]");
  CHECK_Q("SELECT v, tx FROM datoms WHERE e = 65542 AND a = 1", ":p/years|268435458");
  CHECK_Q("SELECT e, a, v, added FROM timelined_transactions WHERE tx = 268435458 AND a = 1 ORDER BY added",
          "65542|1|:p/age|0;65542|1|:p/years|1");
  CHECK_Q("SELECT v FROM idents WHERE e = 65542", ":p/years");
  /* the published snapshot knows the new name and not the old one */
  Tok("[{:p/id \"a\" :p/years 5}]");
  CHECK_Q("SELECT e, v, tx FROM datoms WHERE a = 65542", "65549|5|268435459");
  Tfail("[{:p/id \"a\" :p/age 6}]", "line 1 col 13: unknown attribute :p/age");
  /* a rename onto a taken ident is a unique conflict */
  Tfail("[[:db/add :p/years :db/ident :p/name]]",
        "line 1 col 20: unique value conflict: :db/ident :p/name is already held by entity 65536, "
        "cannot assert it for entity 65542");
  closeStore();
}
END_TEST

START_TEST(test_alter_cardinality) {
  setupSchema();
  Tok("[{:p/id \"a\" :p/name \"x\"}]");                                 /* tx 2, a = 65549 */
  /* tx 3: one -> many, Datomic's :db.alter/_attribute form */
  Tok("[{:db/id :p/name :db/cardinality :db.cardinality/many :db.alter/_attribute :db.part/db}]");
  CHECK_Q("SELECT v, tx FROM datoms WHERE e = 65536 AND a = 8", "34|268435459");
  CHECK_Q("SELECT e, a, v, added FROM timelined_transactions WHERE tx = 268435459 AND a <> 3"
          " ORDER BY a, added", "65536|8|33|0;65536|8|34|1;2|22|65536|1");
  CHECK_Q("SELECT v FROM schema WHERE e = 65536 AND a = 8", "34");
  /* tx 4: a second value is kept, not a replacement */
  Tok("[[:db/add [:p/id \"a\"] :p/name \"y\"]]");
  CHECK_Q("SELECT e, v, tx FROM datoms WHERE a = 65536 ORDER BY v", "65549|x|268435458;65549|y|268435460");
  CHECK_Q("SELECT v, added FROM timelined_transactions WHERE tx = 268435460 AND a = 65536", "y|1");
  /* many -> one refused while an entity has two values */
  Tfail("[{:db/id :p/name :db/cardinality :db.cardinality/one}]",
        "line 1 col 18: cannot change :p/name to :db.cardinality/one: entity 65549 has 2 values");
  Tfail("[[:db/retract :p/name :db/cardinality :db.cardinality/many]]",
        "line 1 col 23: cannot retract :db/cardinality of attribute :p/name; assert the new "
        "cardinality instead");
  /* tx 5: retracting one value in the same transaction makes it allowed */
  Tok("[[:db/retract 65549 :p/name \"y\"] [:db/add :p/name :db/cardinality :db.cardinality/one]]");
  CHECK_Q("SELECT e, a, v, added FROM timelined_transactions WHERE tx = 268435461 AND a <> 3"
          " ORDER BY a, added", "65536|8|34|0;65536|8|33|1;65549|65536|y|0");
  /* tx 6: cardinality one again: a new value replaces */
  Tok("[[:db/add 65549 :p/name \"z\"]]");
  CHECK_Q("SELECT v, added FROM timelined_transactions WHERE tx = 268435462 AND a = 65536 ORDER BY added",
          "x|0;z|1");
  CHECK_Q("SELECT v FROM datoms WHERE a = 65536", "z");
  closeStore();
}
END_TEST

START_TEST(test_alter_unique) {
  setupSchema();
  Tok("[{:db/id \"a\" :p/id \"a\" :p/name \"x\"} {:db/id \"b\" :p/id \"b\" :p/name \"x\"}]"); /* tx 2 */
  CHECK_Q("SELECT e, index_avet, unique_value FROM datoms WHERE a = 65536 ORDER BY e", "65549|0|0;65550|0|0");
  Tfail("[[:db/add :p/name :db/unique :db.unique/value]]",
        "line 1 col 19: cannot make :p/name :db/unique: entities 65549 and 65550 hold the same "
        "value");
  /* tx 3: values made distinct and the attribute unique in one transaction;
  ** the implied :db/index true is asserted as for a new attribute */
  Tok("[[:db/add 65550 :p/name \"w\"] [:db/add :p/name :db/unique :db.unique/value]]");
  CHECK_Q("SELECT a, v, tx FROM datoms WHERE e = 65536 AND a IN (9, 11) ORDER BY a",
          "9|35|268435459;11|1|268435459");
  CHECK_Q("SELECT e, v, index_avet, unique_value FROM datoms WHERE a = 65536 ORDER BY e",
          "65549|x|1|1;65550|w|1|1");
  CHECK_Q("SELECT a, v FROM schema WHERE e = 65536 ORDER BY a", "7|27;8|33;9|35;11|1");
  CHECK_Q("SELECT name, a, kind FROM mentat_managed_indexes WHERE a = 65536",
          "idx_auto_avet_65536|65536|schema");
  CHECK_Q("SELECT count(*) FROM sqlite_master WHERE name = 'idx_auto_avet_65536'", "1");
  Tfail("[[:db/add 65550 :p/name \"x\"]]",
        "line 1 col 17: unique value conflict: :p/name \"x\" is already held by entity 65549, "
        "cannot assert it for entity 65550");
  /* tx 4: value -> identity: now a map upserts through it */
  Tok("[[:db/add :p/name :db/unique :db.unique/identity]]");
  CHECK_Q("SELECT e, a, v, added FROM timelined_transactions WHERE tx = 268435460 AND a <> 3"
          " ORDER BY added", "65536|9|35|0;65536|9|36|1");
  Tok("[{:p/name \"x\" :p/age 3}]");                                     /* tx 5 */
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65542", "65549|3");
  /* tx 6: uniqueness retracted: flags cleared (the explicit index stays),
  ** the value index dropped and unrecorded */
  Tok("[[:db/retract :p/name :db/unique :db.unique/identity]]");
  CHECK_Q("SELECT e, index_avet, unique_value FROM datoms WHERE a = 65536 ORDER BY e", "65549|1|0;65550|1|0");
  CHECK_Q("SELECT count(*) FROM mentat_managed_indexes WHERE a = 65536", "0");
  CHECK_Q("SELECT count(*) FROM sqlite_master WHERE name = 'idx_auto_avet_65536'", "0");
  CHECK_Q("SELECT a FROM schema WHERE e = 65536 ORDER BY a", "7;8;11");
  Tok("[[:db/add 65550 :p/name \"x\"]]");                                /* duplicates allowed again */
  /* an index on a non-fulltext unique attribute survives a rename */
  Tok("[[:db/add :p/ssn :db/ident :p/ssn2]]");
  CHECK_Q("SELECT count(*) FROM mentat_managed_indexes WHERE a = 65541", "1");
  closeStore();
}
END_TEST

START_TEST(test_alter_flags) {
  setupSchema();
  Tok("[{:db/id \"a\" :p/id \"a\" :p/parent \"b\" :p/friend \"b\" :p/tags \"t\"} {:db/id \"b\" :p/id \"b\"}]");
  CHECK_Q("SELECT index_avet, index_vaet FROM datoms WHERE a = 65540", "0|1");
  /* :db/index on a ref attribute: flag column and value index follow */
  Tok("[[:db/add :p/parent :db/index true]]");
  CHECK_Q("SELECT index_avet, index_vaet, unique_value FROM datoms WHERE a = 65540", "1|1|0");
  CHECK_Q("SELECT name, kind FROM mentat_managed_indexes WHERE a = 65540", "idx_auto_avet_65540|schema");
  Tok("[[:db/add :p/parent :db/index false]]");
  CHECK_Q("SELECT index_avet FROM datoms WHERE a = 65540", "0");
  CHECK_Q("SELECT count(*) FROM mentat_managed_indexes WHERE a = 65540", "0");
  CHECK_Q("SELECT count(*) FROM sqlite_master WHERE name = 'idx_auto_avet_65540'", "0");
  /* :db/index on a string attribute: index_avet only, no value index */
  Tok("[[:db/add :p/tags :db/index true]]");
  CHECK_Q("SELECT index_avet FROM datoms WHERE a = 65538", "1");
  CHECK_Q("SELECT count(*) FROM mentat_managed_indexes WHERE a = 65538", "0");
  /* :db/isComponent on: retractEntity now follows :p/friend */
  Tok("[[:db/add :p/friend :db/isComponent true]]");
  CHECK_Q("SELECT v FROM schema WHERE e = 65539 AND a = 10", "1");
  Tfail("[[:db/add :p/tags :db/isComponent true]]",
        "line 1 col 19: attribute :p/tags: :db/isComponent needs :db.type/ref");
  Tok("[[:db/retractEntity [:p/id \"a\"]]]");
  CHECK_Q("SELECT count(*) FROM datoms WHERE e IN (65549, 65550)", "0");
  /* :db/noHistory on: :p/tags keeps no past values (a retracted one leaves
  ** the log), but its current ones stay logged; off again: history again */
  Tok("[{:p/id \"c\" :p/tags \"u\"}]");
  Tok("[[:db/add :p/tags :db/noHistory true]]");
  CHECK_Q("SELECT count(*) FROM timelined_transactions WHERE a = 65538 AND v = 'u'", "1");
  Tok("[[:db/add [:p/id \"c\"] :p/tags \"v\"]]");
  CHECK_Q("SELECT added FROM timelined_transactions WHERE a = 65538 AND v = 'v'", "1");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65538 AND v = 'v'", "1");
  Tok("[[:db/retract [:p/id \"c\"] :p/tags \"v\"]]");
  CHECK_Q("SELECT count(*) FROM timelined_transactions WHERE a = 65538 AND v = 'v'", "0");
  Tok("[[:db/retract :p/tags :db/noHistory true]]");
  Tok("[[:db/add [:p/id \"c\"] :p/tags \"w\"]]");
  Tok("[[:db/retract [:p/id \"c\"] :p/tags \"w\"]]");
  CHECK_Q("SELECT group_concat(added) FROM (SELECT added FROM timelined_transactions"
          " WHERE a = 65538 AND v = 'w' ORDER BY tx)", "1,0");
  /* value type and fulltext cannot change */
  Tfail("[[:db/add :p/tags :db/fulltext true]]",
        "line 1 col 19: cannot change :db/fulltext of attribute :p/tags");
  Tfail("[[:db/retract :p/bio :db/fulltext true]]",
        "line 1 col 22: cannot change :db/fulltext of attribute :p/bio");
  Tfail("[[:db/retract :p/tags :db/valueType :db.type/string]]",
        "line 1 col 23: cannot retract the definition of attribute :p/tags");
  closeStore();
}
END_TEST

/* ---- list and map forms --------------------------------------------- */

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

START_TEST(test_map_forms) {
  char *zRep;
  setupSchema();
  zRep = T("[{:p/name \"Anon\"} {:p/name \"Anon\"}]");
  CHECK_J(zRep, "$.tempids", "{}");
  free(zRep);
  CHECK_Q("SELECT e FROM datoms WHERE a = 65536 ORDER BY e", "65549;65550");
  /* string tempids across maps, negative ints, #db/id with a number */
  zRep = T("[{:db/id \"a\" :p/id \"A\" :p/friend \"b\"} {:db/id \"b\" :p/id \"B\"}"
           " {:db/id -100 :p/id \"C\"} {:db/id #db/id [:db.part/user -1] :p/id \"D\" :p/friend -100}]");
  CHECK_J(zRep, "$.tempids.a", "65551");
  CHECK_J(zRep, "$.tempids.b", "65552");
  CHECK_J(zRep, "$.tempids.\"-100\"", "65553");
  CHECK_J(zRep, "$.tempids.\"-1\"", "65554");
  free(zRep);
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65539 ORDER BY e", "65551|65552;65554|65553");
  /* a map's cardinality-many values from a vector and a set */
  Tok("[{:p/id \"T\" :p/tags [\"x\" \"y\"]} {:p/id \"T\" :p/tags #{\"z\"}}]");
  CHECK_Q("SELECT group_concat(v) FROM (SELECT v FROM datoms WHERE a = 65538 ORDER BY v)", "x,y,z");
  /* a vector under a cardinality-one attribute */
  Tfail("[[:db/add \"x\" :p/age [1 2]]]", "line 1 col 22: a collection is not a valid value for "
        "cardinality-one attribute :p/age");
  Tfail("[{:p/age [1 2]}]",
        "line 1 col 10: a collection is not a valid value for cardinality-one attribute :p/age");
  closeStore();
}
END_TEST

START_TEST(test_nested_maps) {
  setupSchema();
  /* nested map with an identity attribute under a plain ref */
  Tok("[{:p/id \"o\" :p/name \"P\" :p/parent {:p/id \"q\" :p/name \"Q\"}}]");
  CHECK_Q("SELECT p.v FROM datoms c, datoms i, datoms p WHERE i.a = 65537 AND i.v = 'o'"
          " AND c.e = i.e AND c.a = 65540 AND p.e = c.v AND p.a = 65536", "Q");
  /* vector of nested maps under cardinality many */
  Tok("[{:p/id \"m\" :p/friend [{:p/id \"m1\"} {:p/id \"m2\"}]}]");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65539", "2");
  /* components need no identity */
  Tok("[{:p/id \"ord\" :o/items [{:i/sku \"A\"} {:i/sku \"B\"}]}]");
  CHECK_Q("SELECT group_concat(v) FROM (SELECT s.v FROM datoms o, datoms s WHERE o.a = 65543"
          " AND s.e = o.v AND s.a = 65544 ORDER BY s.v)", "A,B");
  Tfail("[{:p/id \"x\" :p/parent {:p/name \"NoUnique\"}}]",
        "line 1 col 23: nested entity would dangle: a map under :p/parent needs :db/id or a "
        ":db.unique/identity attribute, or :p/parent must be :db/isComponent");
  /* an explicit :db/id makes it fine */
  Tok("[{:p/id \"y\" :p/parent {:db/id \"pp\" :p/name \"Named\"}}]");
  closeStore();
}
END_TEST

START_TEST(test_reverse_refs) {
  setupSchema();
  Tok("[{:db/id \"c\" :p/id \"c\"} {:db/id \"p\" :p/id \"p\" :p/_friend \"c\"}]");
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65539", "65549|65550");
  Tok("[[:db/add \"k\" :p/id \"k\"] [:db/add \"par\" :p/id \"par\"] [:db/add \"par\" :p/_parent \"k\"]]");
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65540", "65551|65552");
  Tfail("[{:p/_age \"x\"}]", "line 1 col 3: reverse attribute :p/_age: :p/age is not a ref attribute");
  Tfail("[[:db/add \"x\" :p/_age 1]]",
        "line 1 col 15: reverse attribute :p/_age: :p/age is not a ref attribute");
  closeStore();
}
END_TEST

/* ---- places ------------------------------------------------------------ */

START_TEST(test_lookup_refs) {
  setupSchema();
  Tok("[{:p/id \"a\" :p/email \"a@x\"} {:p/id \"b\"}]");
  Tok("[[:db/add [:p/email \"a@x\"] :p/age 1]]");
  Tok("[[:db/add (lookup-ref :p/id \"b\") :p/age 2]]");
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65542 ORDER BY e", "65549|1;65550|2");
  /* lookup refs as ref values, single and in a vector */
  Tok("[[:db/add [:p/id \"a\"] :p/parent [:p/id \"b\"]] {:db/id [:p/id \"b\"] :p/friend [[:p/id \"a\"] [:p/id \"b\"]]}]");
  CHECK_Q("SELECT e, a, v FROM datoms WHERE a IN (65539, 65540) ORDER BY a, e, v",
          "65550|65539|65549;65550|65539|65550;65549|65540|65550");
  Tfail("[[:db/add [:p/id \"missing\"] :p/name \"x\"]]",
        "line 1 col 11: lookup ref [:p/id \"missing\"] does not resolve");
  Tfail("[[:db/add (lookup-ref :p/id \"missing\") :p/name \"x\"]]",
        "line 1 col 11: lookup ref (lookup-ref :p/id \"missing\") does not resolve");
  Tfail("[[:db/add [:p/name \"x\"] :p/age 1]]",
        "line 1 col 12: lookup ref attribute :p/name is not :db/unique");
  Tfail("[[:db/add :no/such :p/age 1]]", "line 1 col 11: unknown ident :no/such");
  Tfail("[[:db/add \"x\" :p/parent :no/such]]", "line 1 col 25: unknown ident :no/such");
  closeStore();
}
END_TEST

START_TEST(test_tx_entity) {
  char *zRep, *zTx;
  setupSchema();
  zRep = T("[{:db/id \"datomic.tx\" :tx/note \"import\"} {:p/id \"t\"}]");
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65547", "268435458|import");
  CHECK_J(zRep, "$.tempids", "{}");
  free(zRep);
  Tok("[[:db/add (transaction-tx) :tx/note \"batch\"] [:db/add \"u\" :p/id \"u\"]]");
  CHECK_Q("SELECT e FROM datoms WHERE a = 65547 AND v = 'batch'", "268435459");
  /* an explicit later :db/txInstant wins; an earlier one is refused. 2100
  ** is ahead of the clock: allowed here by a skew of 1e13 ms (317 years). */
  setenv("MENTAT_TX_INSTANT_SKEW_MS", "10000000000000", 1);
  zRep = T("[{:db/id \"datomic.tx\" :db/txInstant #inst \"2100-01-02T03:04:05.5Z\"}]");
  CHECK_J(zRep, "$.tx_instant", "2100-01-02T03:04:05.500000Z");
  zTx = J(zRep, "$.tx_id");
  ck_assert_str_eq(zTx, "268435460");
  free(zTx);
  free(zRep);
  CHECK_Q("SELECT count(*), v FROM datoms WHERE e = 268435460 AND a = 3", "1|4102542245500000");
  Tfail("[{:db/id \"datomic.tx\" :db/txInstant #inst \"2000-01-01T00:00:00Z\"}]",
        "line 1 col 23: :db/txInstant 2000-01-01T00:00:00.000000Z is earlier than the previous "
        "transaction's 2100-01-02T03:04:05.500000Z");
  unsetenv("MENTAT_TX_INSTANT_SKEW_MS");
  /* helper-24: the id two transactions ahead, then two transactions; by hand
  ** the second of them would have been that entity. Past transactions and
  ** the running one can be named. */
  Tfail("[[:db/add 268435462 :tx/note \"squatter\"]]",
        "line 1 col 21: entity 268435462 is a transaction id not given out yet (this transaction "
        "is 268435461)");
  Tok("[[:db/add 268435459 :tx/note \"late note\"] [:db/add 268435461 :tx/note \"own\"]]");
  Tok("[]");
  CHECK_Q("SELECT group_concat(e || '=' || v, ',') FROM (SELECT e, v FROM datoms WHERE a = 65547 ORDER BY e)",
          "268435458=import,268435459=late note,268435461=own");
  CHECK_Q("SELECT count(*) FROM datoms WHERE e = 268435462 AND a = 3", "1");
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

/* ---- upserts ------------------------------------------------------------ */

START_TEST(test_upserts) {
  char *zRep;
  setupSchema();
  Tok("[{:p/id \"a\" :p/name \"A\" :p/email \"a@x\"} {:p/id \"b\" :p/email \"b@x\"}]");
  /* a map upserts through its identity value: no new entity */
  zRep = T("[{:p/email \"a@x\" :p/age 11}]");
  CHECK_J(zRep, "$.tempids", "{}");
  free(zRep);
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65542", "65549|11");
  CHECK_Q("SELECT idx FROM known_parts WHERE part = ':db.part/user'", "65551");
  /* a tempid resolves to the upserted entity and is reported */
  zRep = T("[[:db/add \"t\" :p/email \"b@x\"] [:db/add \"t\" :p/tags \"Vanka\"]]");
  CHECK_J(zRep, "$.tempids.t", "65550");
  free(zRep);
  /* cascade: "q" upserts, and the ref to it follows (B09 T3's shape) */
  zRep = T("[{:p/id \"new\" :p/parent \"q\"} {:db/id \"q\" :p/id \"a\"}]");
  CHECK_J(zRep, "$.tempids.q", "65549");
  free(zRep);
  CHECK_Q("SELECT v FROM datoms WHERE a = 65540", "65549");
  /* two identity values naming different entities */
  Tfail("[{:p/id \"a\" :p/email \"b@x\"}]",
        "line 1 col 13: the entity at line 1 col 2 would resolve to two different entities, 65549 "
        "and 65550 (upsert through :p/email)");
  /* two tempids sharing a new identity value are one entity */
  zRep = T("[[:db/add \"foo\" :p/id \"n\"] [:db/add \"foo\" :p/tags \"x\"]"
           " [:db/add \"bar\" :p/id \"n\"] [:db/add \"bar\" :p/tags \"y\"]]");
  CHECK_J(zRep, "$.tempids.foo", "65552");
  CHECK_J(zRep, "$.tempids.bar", "65552");
  free(zRep);
  CHECK_Q("SELECT count(DISTINCT e) FROM datoms WHERE a = 65537 AND v = 'n'", "1");
  CHECK_Q("SELECT group_concat(v) FROM (SELECT v FROM datoms WHERE e = 65552 AND a = 65538 ORDER BY v)", "x,y");
  /* a tempid sharing a new identity value with one that upserts joins it */
  zRep = T("[{:db/id \"n1\" :p/id \"new2\" :p/name \"x\"} {:db/id \"n2\" :p/id \"new2\" :p/email \"a@x\"}]");
  CHECK_J(zRep, "$.tempids.n1", "65549");
  CHECK_J(zRep, "$.tempids.n2", "65549");
  free(zRep);
  CHECK_Q("SELECT v FROM datoms WHERE e = 65549 AND a IN (65536, 65537) ORDER BY a", "x;new2");
  CHECK_Q("SELECT idx FROM known_parts WHERE part = ':db.part/user'", "65553");
  closeStore();
}
END_TEST

/* ---- cardinality, conflicts, no-ops (B05, B07) --------------------------- */

START_TEST(test_b05_conflicts) {
  char *zRep;
  openStore();
  Tok("[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
      " {:db/ident :p/id :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
      "  :db/unique :db.unique/identity}]");
  Tfail("[[:db/add \"x\" :p/name \"a\"] [:db/add \"x\" :p/name \"b\"]]",
        "line 1 col 41: conflicting datoms for a cardinality-one attribute: [65538 :p/name \"a\"] and "
        "[65538 :p/name \"b\"]");
  Tfail("[{:p/id \"k\" :p/name \"a\"} {:p/id \"k\" :p/name \"b\"}]",
        "line 1 col 37: conflicting datoms for a cardinality-one attribute: [65538 :p/name \"a\"] "
        "and [65538 :p/name \"b\"]");
  Tfail("[{:db/ident :p/name :db/doc \"one\"} {:db/ident :p/name :db/doc \"two\"}]",
        "line 1 col 55: conflicting datoms for a cardinality-one attribute: [65536 :db/doc "
        "\"one\"] and [65536 :db/doc \"two\"]");
  zRep = T("[[:db/add \"y\" :p/name \"same\"] [:db/add \"y\" :p/name \"same\"] {:db/id \"y\" :p/name \"same\"}]");
  CHECK_J(zRep, "$.tempids.y", "65538");
  free(zRep);
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65536", "65538|same");
  CHECK_Q("SELECT count(*) FROM timelined_transactions WHERE a = 65536", "1");
  /* asserting and retracting one datom */
  Tfail("[[:db/add 65538 :p/id \"Z\"] [:db/retract 65538 :p/id \"Z\"]]",
        "line 1 col 17: a datom cannot be both asserted and retracted in one transaction: [65538 "
        ":p/id \"Z\"]");
  closeStore();
}
END_TEST

START_TEST(test_b07_noops) {
  char *zRep;
  openStore();
  Tok("[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
      " {:db/ident :p/tags :db/valueType :db.type/string :db/cardinality :db.cardinality/many}"
      " {:db/ident :p/key :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
      "  :db/unique :db.unique/identity}]");
  /* attributes 65536..65538; tx1 = 268435458, E = 65539 */
  zRep = T("[{:db/id \"e\" :p/name \"A\" :p/tags [\"t1\"] :p/key \"One\"}]");
  CHECK_J(zRep, "$.tempids.e", "65539");
  free(zRep);
  Tok("[[:db/add 65539 :p/name \"A\"] [:db/add 65539 :p/tags \"t1\"]]");            /* tx2 */
  CHECK_Q("SELECT a FROM timelined_transactions WHERE tx = 268435459", "3");
  CHECK_Q("SELECT a, tx FROM datoms WHERE e = 65539 ORDER BY a",
          "65536|268435458;65537|268435458;65538|268435458");
  Tok("[[:db/add 65539 :p/name \"B\"]]");                                         /* tx3 */
  CHECK_Q("SELECT e, a, v, added FROM timelined_transactions WHERE tx = 268435460 AND a <> 3"
          " ORDER BY added", "65539|65536|A|0;65539|65536|B|1");
  CHECK_Q("SELECT v, tx FROM datoms WHERE e = 65539 AND a = 65536", "B|268435460");
  Tok("[[:db/add 65539 :p/key \"Two\"] [:db/retract 65539 :p/key \"One\"]]");      /* tx4 */
  CHECK_Q("SELECT v, added FROM timelined_transactions WHERE tx = 268435461 AND a <> 3"
          " ORDER BY added", "One|0;Two|1");
  Tok("[[:db/retract 65539 :p/name \"Nope\"] [:db/retract 65539 :p/tags \"zzz\"]]"); /* tx5 */
  CHECK_Q("SELECT a FROM timelined_transactions WHERE tx = 268435462", "3");
  /* retracting all values of an attribute */
  Tok("[[:db/add 65539 :p/tags \"t2\"]]");
  Tok("[[:db/retract 65539 :p/tags]]");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65537", "0");
  CHECK_Q("SELECT v, added FROM timelined_transactions WHERE tx = 268435464 AND a = 65537 ORDER BY v",
          "t1|0;t2|0");
  closeStore();
}
END_TEST

START_TEST(test_unique_value) {
  setupSchema();
  Tok("[{:p/id \"a\" :p/ssn \"123\"}]");
  Tfail("[{:p/id \"b\" :p/ssn \"123\"}]",
        "line 1 col 13: unique value conflict: :p/ssn \"123\" is already held by entity 65549, "
        "cannot assert it for entity 65550");
  Tfail("[{:p/id \"c\" :p/ssn \"9\"} {:p/id \"d\" :p/ssn \"9\"}]",
        "line 1 col 36: unique value conflict: :p/ssn \"9\" is already held by entity 65550, "
        "cannot assert it for entity 65551");
  /* a value may move between entities in one transaction */
  Tok("[{:p/id \"e\"}]");
  Tok("[[:db/retract [:p/id \"a\"] :p/ssn \"123\"] [:db/add [:p/id \"e\"] :p/ssn \"123\"]]");
  CHECK_Q("SELECT e FROM datoms WHERE a = 65541", "65550");
  closeStore();
}
END_TEST

/* ---- retractEntity, cas ---------------------------------------------- */

START_TEST(test_retract_entity) {
  setupSchema();
  /* 65549 a (friend b, items i1 i2), 65550 b (friend a), components 65551/65552 */
  Tok("[{:db/id \"a\" :p/id \"a\" :p/friend \"b\" :o/items [{:i/sku \"1\"} {:i/sku \"2\"}]}"
      " {:db/id \"b\" :p/id \"b\" :p/friend \"a\"}]");
  CHECK_Q("SELECT count(*) FROM datoms WHERE e BETWEEN 65549 AND 65560", "8");
  Tok("[[:db/retractEntity [:p/id \"a\"]]]");
  CHECK_Q("SELECT e, a, v FROM datoms WHERE e BETWEEN 65549 AND 65560", "65550|65537|b");
  CHECK_Q("SELECT count(*) FROM timelined_transactions WHERE tx = 268435459 AND added = 0", "7");
  /* component cycle: retraction terminates, both removed; plain refs kept */
  Tok("[{:db/id \"x\" :p/id \"x\" :o/items \"y\" :p/parent \"z\"} {:db/id \"y\" :i/sku \"y\" :o/items \"x\"}"
      " {:db/id \"z\" :p/id \"z\"}]");
  Tok("[[:db.fn/retractEntity [:p/id \"x\"]]]");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a IN (65543, 65544, 65540)", "0");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 65537 AND v = 'z'", "1");
  /* an entity with no datoms: nothing to do */
  Tok("[[:db/retractEntity 99999]]");
  closeStore();
}
END_TEST

START_TEST(test_cas) {
  setupSchema();
  Tok("[{:p/id \"a\" :p/age 10}]");
  Tok("[[:db/cas [:p/id \"a\"] :p/age 10 11]]");
  CHECK_Q("SELECT v FROM datoms WHERE a = 65542", "11");
  CHECK_Q("SELECT v, added FROM timelined_transactions WHERE a = 65542 AND tx = 268435459 ORDER BY added",
          "10|0;11|1");
  Tfail("[[:db/cas [:p/id \"a\"] :p/age 99 12]]", "line 1 col 23: cas failed on :p/age of entity 65549: "
        "expected 99, found 11");
  Tok("[[:db.fn/cas [:p/id \"a\"] :p/name nil \"N\"]]");
  CHECK_Q("SELECT v FROM datoms WHERE a = 65536", "N");
  Tfail("[[:db/cas [:p/id \"a\"] :p/name nil \"M\"]]",
        "line 1 col 23: cas failed on :p/name of entity 65549: expected nil, found \"N\"");
  Tfail("[[:db/cas [:p/id \"a\"] :p/ssn \"x\" \"y\"]]",
        "line 1 col 23: cas failed on :p/ssn of entity 65549: expected \"x\", found nil");
  closeStore();
}
END_TEST

/* ---- B09 ------------------------------------------------------------------ */

START_TEST(test_b09_before_tx) {
  char *zRep;
  openStore();
  Tok("[{:db/ident :e/id :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
      "  :db/unique :db.unique/identity}"
      " {:db/ident :e/child :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}"
      " {:db/ident :e/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}"
      " {:db/ident :m/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one"
      "  :db/unique :db.unique/identity}"
      " {:db/ident :m/user :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}]");
  zRep = T("[{:db/id \"u1\" :e/id \"u1\" :e/name \"one\"} {:db/id \"u2\" :e/id \"u2\" :e/child \"u1\"}]");
  CHECK_J(zRep, "$.tempids.u1", "65541");
  CHECK_J(zRep, "$.tempids.u2", "65542");
  free(zRep);
  Tok("[[:db/retract [:e/id \"u1\"] :e/id \"u1\"] [:db/retract [:e/id \"u2\"] :e/child [:e/id \"u1\"]]]");
  CHECK_Q("SELECT e, a, v FROM datoms WHERE e IN (65541, 65542) ORDER BY e, a",
          "65541|65538|one;65542|65536|u2");
  zRep = T("[{:db/id \"user\" :e/id \"u2\"} {:m/id 1234 :m/user \"user\"}]");
  CHECK_J(zRep, "$.tempids.user", "65542");
  free(zRep);
  CHECK_Q("SELECT e, v FROM datoms WHERE a = 65540", "65543|65542");
  Tfail("[[:db/add \"parent\" :e/name \"p\"] [:db/add \"other\" :e/child \"nobody\"]]",
        "line 1 col 59: tempid \"nobody\" is used only as a value");
  Tfail("[[:db/add [:e/id \"missing\"] :e/name \"x\"]]",
        "line 1 col 11: lookup ref [:e/id \"missing\"] does not resolve");
  closeStore();
}
END_TEST

/* ---- fulltext, noHistory ------------------------------------------- */

START_TEST(test_fulltext_nohistory) {
  setupSchema();
  Tok("[{:p/id \"f\" :p/bio \"hello world\"} {:p/id \"g\" :p/bio \"hello world\"}]");
  CHECK_Q("SELECT count(*), min(rowid) = max(rowid) FROM fulltext_values", "1|1");
  CHECK_Q("SELECT d.e, typeof(d.v), d.v = f.rowid, d.value_type_tag, d.index_fulltext FROM datoms d,"
          " fulltext_values f WHERE d.a = 65545 ORDER BY d.e",
          "65549|integer|1|10|1;65550|integer|1|10|1");
  CHECK_Q("SELECT typeof(v) FROM timelined_transactions WHERE a = 65545 LIMIT 1", "integer");
  Tok("[[:db/add [:p/id \"f\"] :p/bio \"hello world\"]]");   /* no-op */
  CHECK_Q("SELECT count(*) FROM timelined_transactions WHERE a = 65545", "2");
  Tok("[[:db/retract [:p/id \"f\"] :p/bio \"hello world\"] [:db/retract [:p/id \"g\"] :p/bio \"absent\"]]");
  CHECK_Q("SELECT e FROM datoms WHERE a = 65545", "65550");
  Tok("[[:db/add [:p/id \"g\"] :p/bio \"bye\"]]");
  CHECK_Q("SELECT f.text FROM datoms d, fulltext_values f WHERE d.a = 65545 AND d.v = f.rowid", "bye");
  /* texts the FTS phrase lookup must tell apart or find: case, quotes and
  ** stars, a shared 8-token prefix, and texts without a letter or digit
  ** (scanned instead) */
  Tok("[{:p/id \"t1\" :p/bio \"Hello World\"} {:p/id \"t2\" :p/bio \"hello world\"}"
      " {:p/id \"t3\" :p/bio \"say \\\"hi\\\"* (or NOT) near\"} {:p/id \"t4\" :p/bio \"!!!\"}"
      " {:p/id \"t5\" :p/bio \"\"} {:p/id \"t6\" :p/bio \"a b c d e f g h one\"}"
      " {:p/id \"t7\" :p/bio \"a b c d e f g h two\"} {:p/id \"t8\" :p/bio \"caf\u00e9 \u2014 na\u00efve\"}]");
  Tok("[{:p/id \"u1\" :p/bio \"Hello World\"} {:p/id \"u3\" :p/bio \"say \\\"hi\\\"* (or NOT) near\"}"
      " {:p/id \"u4\" :p/bio \"!!!\"} {:p/id \"u5\" :p/bio \"\"} {:p/id \"u7\" :p/bio \"a b c d e f g h two\"}"
      " {:p/id \"u8\" :p/bio \"caf\u00e9 \u2014 na\u00efve\"}]");
  /* before: "hello world", "bye"; new: 7 distinct texts */
  CHECK_Q("SELECT count(*), count(DISTINCT text) FROM fulltext_values", "9|9");
  CHECK_Q("SELECT group_concat(x, '|') FROM (SELECT i.v || '=' || f.text AS x FROM datoms i, datoms b,"
          " fulltext_values f WHERE i.a = 65537 AND b.e = i.e AND b.a = 65545 AND f.rowid = b.v"
          " AND i.v IN ('t1', 't2', 't3', 't4', 't5', 't7', 'u1', 'u3', 'u4', 'u5', 'u7') ORDER BY i.v)",
          "t1=Hello World|t2=hello world|t3=say \"hi\"* (or NOT) near|t4=!!!|t5=|t7=a b c d e f g h two|"
          "u1=Hello World|u3=say \"hi\"* (or NOT) near|u4=!!!|u5=|u7=a b c d e f g h two");
  /* the same text shares one row */
  CHECK_Q("SELECT count(DISTINCT b.v) FROM datoms i, datoms b WHERE i.a = 65537 AND i.v IN ('t1', 'u1')"
          " AND b.e = i.e AND b.a = 65545", "1");
  CHECK_Q("SELECT count(DISTINCT b.v) FROM datoms i, datoms b WHERE i.a = 65537 AND i.v IN ('t8', 'u8')"
          " AND b.e = i.e AND b.a = 65545", "1");
  Tok("[[:db/retract [:p/id \"t7\"] :p/bio \"a b c d e f g h two\"] [:db/retract [:p/id \"t4\"] :p/bio \"!!!\"]"
      " [:db/retract [:p/id \"t6\"] :p/bio \"a b c d e f g h two\"]]");
  CHECK_Q("SELECT group_concat(i.v) FROM (SELECT i.v FROM datoms i WHERE i.a = 65537 AND i.v IN ('t4', 't6', 't7')"
          " AND EXISTS (SELECT 1 FROM datoms b WHERE b.e = i.e AND b.a = 65545) ORDER BY i.v) i", "t6");
  /* noHistory: the current value's assertion is the attribute's only log
  ** row (the replaced 5 left the log, its retraction was not written) */
  Tok("[{:p/id \"h\" :p/seen 5}]");
  Tok("[{:p/id \"h\" :p/seen 6}]");
  CHECK_Q("SELECT v FROM datoms WHERE a = 65546", "6");
  CHECK_Q("SELECT v, added, tx = (SELECT tx FROM datoms WHERE a = 65546)"
          " FROM timelined_transactions WHERE a = 65546", "6|1|1");
  closeStore();
}
END_TEST

/* ---- errors leave nothing behind ---------------------------------- */

static const struct { const char *zEdn, *zWant; } aBad[] = {
  { "[[:db/add \"x\" :p/name \"a\"", "line 1 col 2: unterminated vector" },
  { "{:p/name \"a\"}",
    "line 1 col 1: transaction data must be a vector of forms, e.g. [[:db/add ...] {...}]" },
  { "[[:db/add \"x\" :p/nmae \"q\"]]", "line 1 col 15: unknown attribute :p/nmae" },
  { "[\n  [:db/add \"x\" :p/age \"old\"]]",
    "line 2 col 23: :p/age: expected :db.type/long, got a string" },
  { "[[:db/frob 1 2]]", "line 1 col 3: unknown operation :db/frob" },
  { "[[:db/add \"x\" :p/name]]", "line 1 col 2: wrong number of arguments for :db/add" },
  { "[42]", "line 1 col 2: a transaction form must be a vector or a map, got 42" },
  { "[{:p/name nil}]", "line 1 col 11: nil is not a valid value for :p/name" },
  { "[[:db/add \"x\" :p/name \"n\"] [:db/add [:p/id \"zzz\"] :p/name \"q\"]]",
    "line 1 col 37: lookup ref [:p/id \"zzz\"] does not resolve" },
  { "[[:db/add \"a\" :p/friend \"ghost\"]]",
    "line 1 col 25: tempid \"ghost\" is used only as a value" },
  { "[{:p/id \"w\" :p/parent {:p/name \"dangling\"}}]",
    "line 1 col 23: nested entity would dangle: a map under :p/parent needs :db/id or a "
    ":db.unique/identity attribute, or :p/parent must be :db/isComponent" },
  { "[{:p/id \"w\" :p/ssn \"123\"}]",
    "line 1 col 13: unique value conflict: :p/ssn \"123\" is already held by entity 65549, cannot "
    "assert it for entity 65550" },
  { "[[:db/add [:p/id \"a\"] :p/name \"n1\"] [:db/add [:p/id \"a\"] :p/name \"n2\"]]",
    "line 1 col 58: conflicting datoms for a cardinality-one attribute: [65549 :p/name \"n1\"] and "
    "[65549 :p/name \"n2\"]" },
  { "[[:db/cas [:p/id \"a\"] :p/age 1 2]]",
    "line 1 col 23: cas failed on :p/age of entity 65549: expected 1, found 10" },
  { "[{:db/id #db/id [:db.part/nope] :p/name \"x\"}]",
    "line 1 col 18: unknown partition :db.part/nope" },
  { "[{:db/id #db/id [:db.part/tx] :p/name \"x\"}]",
    "line 1 col 18: entities cannot be allocated in :db.part/tx; use \"datomic.tx\" for the "
    "transaction" },
  { "[{:db/ident :z/z :db/valueType :db.type/long} {:p/id \"v\"} [:db/add [:p/id \"nobody\"] :p/tags \"z\"]]",
    "line 1 col 68: lookup ref [:p/id \"nobody\"] does not resolve" },
  { "[{:db/ident :p/age :db/cardinality :db.cardinality/one :db/fulltext true}]",
    "line 1 col 56: cannot change :db/fulltext of attribute :p/age" },
  { "[{:p/id \"b\" :p/age 10} [:db/add :p/age :db/unique :db.unique/value]]",
    "line 1 col 40: cannot make :p/age :db/unique: entities 65549 and 65550 hold the same value" },
  /* the value index of :p/age is made, then :p/email's change fails */
  { "[[:db/add :p/age :db/unique :db.unique/value] [:db/add :p/email :db/isComponent true]]",
    "line 1 col 65: attribute :p/email: :db/isComponent needs :db.type/ref" },
  { "[[:db/add :p/tags :db/cardinality :db.cardinality/one] [:db/add [:p/id \"a\"] :p/tags \"u\"]]",
    "line 1 col 19: cannot change :p/tags to :db.cardinality/one: entity 65549 has 2 values" },
  { "[[:db/retractEntity :p/age]]",
    "line 1 col 2: cannot retract the definition of attribute :p/age" },
  /* a transaction id not given out yet would become a later transaction's
  ** entity too (helper-24); as a value it would point there. The place is
  ** the datom's (its attribute), as for other datom errors. */
  { "[[:db/add 269435456 :p/name \"squatter\"]]",
    "line 1 col 21: entity 269435456 is a transaction id not given out yet (this transaction "
    "is 268435459)" },
  { "[[:db/add [:p/id \"a\"] :p/friend 269435456]]",
    "line 1 col 23: entity 269435456 is a transaction id not given out yet (this transaction "
    "is 268435459)" },
};

START_TEST(test_errors_change_nothing) {
  setupSchema();
  Tok("[{:p/id \"a\" :p/ssn \"123\" :p/age 10 :p/bio \"text\" :p/tags [\"t\"]}]");
  Tfail(aBad[_i].zEdn, aBad[_i].zWant);
  /* the store and its cached schema are still usable */
  Tok("[{:p/id \"a\" :p/age 11}]");
  CHECK_Q("SELECT v FROM datoms WHERE a = 65542", "11");
  closeStore();
}
END_TEST

/* The bootstrap vocabulary and past transactions' instants are read-only
** (a bad-input run renamed :db/ident and broke every later transaction);
** :db/doc on a built-in and the running transaction's instant stay allowed. */
START_TEST(test_builtins_protected) {
  setupSchema();
  Tfail("[[:db/add :db/ident :db/ident :oops/ident]]",
        "line 1 col 21: cannot change :db/ident of the built-in :db/ident");
  Tfail("[[:db/add :db.cardinality/many :db/ident :oops/many]]",
        "line 1 col 32: cannot change :db/ident of the built-in :db.cardinality/many");
  Tfail("[[:db/retract :db.type/string :db/ident :db.type/string]]",
        "line 1 col 31: cannot retract :db/ident of the built-in :db.type/string");
  Tfail("[[:db/add :db/txInstant :db/cardinality :db.cardinality/many]]",
        "line 1 col 25: cannot change :db/cardinality of the built-in :db/txInstant");
  Tfail("[[:db/add 268435456 :db/txInstant #inst \"2000-01-01T00:00:00Z\"]]",
        "line 1 col 21: cannot change :db/txInstant of transaction 268435456: only the current "
        "transaction's may be set");
  Tfail("[[:db/retract 268435456 :db/txInstant]]",
        "line 1 col 25: cannot retract :db/txInstant of transaction 268435456: only the current "
        "transaction's may be set");
  Tok("[{:db/ident :db/ident :db/doc \"names an entity\"}]");
  CHECK_Q("SELECT v FROM datoms WHERE e = 1 AND a = 37", "names an entity");
  setenv("MENTAT_TX_INSTANT_SKEW_MS", "10000000000000", 1);
  Tok("[{:db/id \"datomic.tx\" :db/txInstant #inst \"2031-01-01T00:00:00Z\"}]");
  unsetenv("MENTAT_TX_INSTANT_SKEW_MS");
  CHECK_Q("SELECT count(*) FROM datoms WHERE a = 3 AND v = 1924992000000000", "1");
  /* still a working store */
  Tok("[{:db/ident :q/x :db/valueType :db.type/long}]");
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

/* ---- tempids in retractions and cas; conflicts within one tx -------- */

START_TEST(test_tempid_retract_cas) {
  char *zRep;
  setupSchema();
  Tok("[{:p/id \"a\" :p/name \"A\" :p/email \"a@x\"}]");                  /* 65549 */
  Tfail("[[:db/retract \"x\" :p/name \"A\"]]",
        "line 1 col 15: tempid \"x\" is used only in a retraction or cas, so it names no entity; "
        "assert something about it or use an existing entity");
  Tfail("[[:db/retract \"x\" :p/tags]]",
        "line 1 col 15: tempid \"x\" is used only in a retraction or cas, so it names no entity; "
        "assert something about it or use an existing entity");
  Tfail("[[:db/retractEntity -7]]",
        "line 1 col 21: tempid \"-7\" is used only in a retraction or cas, so it names no entity; "
        "assert something about it or use an existing entity");
  Tfail("[[:db/cas \"x\" :p/age nil 3]]",
        "line 1 col 11: tempid \"x\" is used only in a retraction or cas, so it names no entity; "
        "assert something about it or use an existing entity");
  Tfail("[[:db/cas #db/id [:db.part/user -3] :p/age nil 3] [:db/add 65549 :p/age 1]]",
        "line 1 col 11: tempid \"-3\" is used only in a retraction or cas, so it names no entity; "
        "assert something about it or use an existing entity");
  /* a tempid used as a value and in a retraction is still no entity */
  Tfail("[[:db/add 65549 :p/friend \"y\"] [:db/retract \"y\" :p/name \"q\"]]",
        "line 1 col 27: tempid \"y\" is used only in a retraction or cas, so it names no entity; "
        "assert something about it or use an existing entity");
  /* asserted about as well: a new entity, the retraction a no-op (tx 3) */
  zRep = T("[[:db/add \"z\" :p/name \"Z\"] [:db/retract \"z\" :p/age 4] [:db/cas \"z\" :p/ssn nil \"t\"]]");
  CHECK_J(zRep, "$.tempids.z", "65550");
  free(zRep);
  CHECK_Q("SELECT e, a, v, added FROM timelined_transactions WHERE tx = 268435459 AND a <> 3 ORDER BY a",
          "65550|65536|Z|1;65550|65541|t|1");
  closeStore();
}
END_TEST

START_TEST(test_conflicts_after_upsert) {
  char *zRep;
  setupSchema();
  Tok("[{:p/id \"a\" :p/name \"A\" :p/email \"a@x\"} {:p/id \"b\" :p/email \"b@x\"}]"); /* 65549, 65550 */
  /* two tempids that upsert to one entity then give it two names */
  Tfail("[{:db/id \"t1\" :p/email \"a@x\" :p/name \"x\"} {:db/id \"t2\" :p/id \"a\" :p/name \"y\"}]",
        "line 1 col 66: conflicting datoms for a cardinality-one attribute: [65549 :p/name \"x\"] "
        "and [65549 :p/name \"y\"]");
  /* a tempid and a lookup ref naming one entity: the same conflict */
  Tfail("[{:p/email \"a@x\" :p/age 1} [:db/add [:p/id \"a\"] :p/age 2]]",
        "line 1 col 49: conflicting datoms for a cardinality-one attribute: [65549 :p/age 1] and "
        "[65549 :p/age 2]");
  /* one tempid whose two identity values are held by two entities */
  Tfail("[{:db/id \"t\" :p/id \"a\" :p/email \"b@x\"}]",
        "line 1 col 24: tempid \"t\" would resolve to two different entities, 65549 and 65550 "
        "(upsert through :p/email)");
  /* two tempids sharing a new identity value but upserting apart: the
  ** value cannot go to both entities */
  Tfail("[{:db/id \"m\" :p/ssn \"1\" :p/id \"new\" :p/email \"a@x\"} {:db/id \"n\" :p/id \"new\" :p/email \"b@x\"}]",
        "line 1 col 65: unique value conflict: :p/id \"new\" is already held by entity 65549, "
        "cannot assert it for entity 65550");
  /* add and retract of one datom after an upsert */
  Tfail("[{:p/email \"a@x\" :p/tags \"t\"} [:db/retract 65549 :p/tags \"t\"]]",
        "line 1 col 18: a datom cannot be both asserted and retracted in one transaction: [65549 "
        ":p/tags \"t\"]");
  /* the same value asserted through two names of one entity is one datom (tx 3) */
  zRep = T("[{:db/id \"t\" :p/email \"b@x\" :p/name \"B\"} [:db/add [:p/id \"b\"] :p/name \"B\"]]");
  CHECK_J(zRep, "$.tempids.t", "65550");
  free(zRep);
  CHECK_Q("SELECT e, a, v, added FROM timelined_transactions WHERE tx = 268435459 AND a <> 3", "65550|65536|B|1");
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
  int n, i, bDone = 0, nFail = 0;
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
  oomStore();
  zBefore = dump();
  for (n = 0; n < 50000 && !bDone; n += (n < 1500 ? 1 : 7)) {
    sqlite3_str *pOut = sqlite3_str_new(NULL);
    char *zErr = NULL, *zAfter;
    int rc, bReached;
    tuOomLeft = n;
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

static int testHoldRelease(StoreHold *pHold, sqlite3_int64 tEnd) {
  TestHold *p = (TestHold *)pHold;
  (void)tEnd;
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
** (helper-25: the retry mark was cleared by the next commit, so from 32
** MiB on every commit took 0.4 s). Bound 4 MiB here (RESTART from 2 MiB);
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
  CHECK_Q("SELECT count(*) FROM mentat_managed_indexes WHERE kind = 'store'", "1");
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

static Suite *txSuite(void) {
  Suite *s = suite_create("tx");
  TCase *tc = tcase_create("tx");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_schema_install);
  tcase_add_test(tc, test_schema_legacy_and_errors);
  tcase_add_test(tc, test_alter_rename);
  tcase_add_test(tc, test_alter_cardinality);
  tcase_add_test(tc, test_alter_unique);
  tcase_add_test(tc, test_alter_flags);
  tcase_add_test(tc, test_add_list_form);
  tcase_add_test(tc, test_map_forms);
  tcase_add_test(tc, test_nested_maps);
  tcase_add_test(tc, test_reverse_refs);
  tcase_add_test(tc, test_lookup_refs);
  tcase_add_test(tc, test_tx_entity);
  tcase_add_test(tc, test_tx_instant_ahead);
  tcase_add_test(tc, test_upserts);
  tcase_add_test(tc, test_b05_conflicts);
  tcase_add_test(tc, test_b07_noops);
  tcase_add_test(tc, test_unique_value);
  tcase_add_test(tc, test_retract_entity);
  tcase_add_test(tc, test_cas);
  tcase_add_test(tc, test_b09_before_tx);
  tcase_add_test(tc, test_fulltext_nohistory);
  tcase_add_loop_test(tc, test_errors_change_nothing, 0, (int)(sizeof(aBad) / sizeof(aBad[0])));
  tcase_add_test(tc, test_many_small_transactions);
  tcase_add_test(tc, test_bulk_batches);
  tcase_add_test(tc, test_tempid_retract_cas);
  tcase_add_test(tc, test_builtins_protected);
  tcase_add_test(tc, test_conflicts_after_upsert);
  tcase_add_test(tc, test_bulk_lookup_refs);
  tcase_add_test(tc, test_oom_sweep);
  tcase_add_test(tc, test_writer_cache_fits_tx);
  tcase_add_test(tc, test_wal_bounded);
  tcase_add_test(tc, test_wal_restart_throttled);
  tcase_add_test(tc, test_wal_hold_released);
  tcase_add_test(tc, test_tune_on_growth);
  tcase_add_test(tc, test_tune_deferred_by_bulk);
  tcase_add_test(tc, test_tune_retried_after_busy);
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
