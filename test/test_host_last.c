/*
** test_host_last.c — THE LAST WRITE (tx_context.c): inside the host's
** transaction an edn_t that finds the state exactly as the connection's
** last edn_t left it (the write witness, store_host.c) takes known_parts
** and the previous :db/txInstant from what that edn_t kept instead of
** reading them. Every way the state can move in between must make the
** next edn_t read them again: the host's own write to known_parts, its
** trigger that writes there, a rollback to a savepoint that undid an
** edn_t, another connection's commit; and the kept instant must be the one written (an explicit
** :db/txInstant). Expected ids are worked out by hand from the marks.
*/
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "tuhost.h"

static sqlite3 *openStore(const char *zName) {
  const char *zPath = tuTempPath(zName);
  sqlite3 *db;
  unlink(zPath);
  db = tuOpenHostAt(zPath);
  tuExecOk(db, "SELECT edn_t(':main', '[{:db/ident :p/n :db/valueType :db.type/long}]')");
  return db;
}

/* The next id of :db.part/user as the table holds it. */
static long long userMark(sqlite3 *db) {
  char *z = tuQuery(db, "SELECT idx FROM known_parts WHERE part = ':db.part/user'", NULL, NULL);
  long long n = atoll(z);
  free(z);
  return n;
}

/* The entid the tempid "t" of edn_t(':main', '[{:db/id "t" :p/n N}]') got. */
static long long newEntity(sqlite3 *db, int n) {
  char zSql[120], *z;
  long long e;
  sqlite3_snprintf(sizeof zSql, zSql, "SELECT edn_t(':main', '[{:db/id \"t\" :p/n %d}]') ->> '$.tempids.t'",
                   n);
  z = tuQuery(db, zSql, NULL, NULL);
  ck_assert_msg(strncmp(z, "ERROR", 5) != 0, "%s: %s", zSql, z);
  e = atoll(z);
  free(z);
  return e;
}

/* Consecutive edn_t take consecutive ids; the host's own raw write to
** known_parts between two of them (it moves the connection's change
** counter) is seen by the next. */
START_TEST(last_parts_host_raw_write) {
  sqlite3 *db = openStore("last-raw.db");
  long long x;
  char zSql[120];
  tuExecOk(db, "BEGIN");
  x = userMark(db);
  ck_assert_int_eq(newEntity(db, 1), x);
  ck_assert_int_eq(newEntity(db, 2), x + 1);
  sqlite3_snprintf(sizeof zSql, zSql, "UPDATE known_parts SET idx = %lld WHERE part = ':db.part/user'",
                   x + 100);
  tuExecOk(db, zSql);
  ck_assert_int_eq(newEntity(db, 3), x + 100);
  ck_assert_int_eq(newEntity(db, 4), x + 101);
  tuExecOk(db, "COMMIT");
  ck_assert_int_eq(userMark(db), x + 102);
  tuExpectQuery(db, "PRAGMA integrity_check", "ok");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A rollback to the host's savepoint that undid edn_t calls moves the
** marks back: the next edn_t gives out the undone ids again, as the table
** says, and its tx id follows the last kept transaction. */
START_TEST(last_parts_rollback_to_savepoint) {
  sqlite3 *db = openStore("last-sp.db");
  long long x;
  tuExecOk(db, "BEGIN");
  x = userMark(db);
  ck_assert_int_eq(newEntity(db, 1), x);
  tuExecOk(db, "SAVEPOINT s");
  ck_assert_int_eq(newEntity(db, 2), x + 1);
  ck_assert_int_eq(newEntity(db, 3), x + 2);
  tuExecOk(db, "ROLLBACK TO s");
  ck_assert_int_eq(newEntity(db, 4), x + 1);
  tuExpectQuery(db, "SELECT edn_t(':main', '[{:p/n 5}]') ->> 'tx_id'", "268435460");
  tuExecOk(db, "COMMIT");
  tuExpectQuery(db, "SELECT group_concat(v, ',') FROM (SELECT v FROM datoms WHERE a = (SELECT e FROM idents"
                " WHERE v = ':p/n') ORDER BY v)", "1,4,5");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* Another connection's commit between two host transactions: the next
** BEGIN's first edn_t reads its marks (the witness does not carry over a
** commit). */
START_TEST(last_parts_other_connection) {
  sqlite3 *db = openStore("last-other.db"), *db2 = tuOpenHostAt(tuTempPath("last-other.db"));
  long long x;
  tuExecOk(db, "BEGIN");
  x = userMark(db);
  ck_assert_int_eq(newEntity(db, 1), x);
  tuExecOk(db, "COMMIT");
  ck_assert_int_eq(newEntity(db2, 2), x + 1);
  tuExecOk(db, "BEGIN");
  ck_assert_int_eq(newEntity(db, 3), x + 2);
  ck_assert_int_eq(newEntity(db, 4), x + 3);
  tuExecOk(db, "COMMIT");
  ck_assert_int_eq(sqlite3_close(db2), SQLITE_OK);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* A host trigger that moves a partition mark after the transactor wrote
** the marks (the tx mark's update bumps :db.part/user by 100): the next
** edn_t gives out ids from the table, not from what the last one kept. */
START_TEST(last_parts_host_trigger) {
  sqlite3 *db = openStore("last-trig.db");
  long long x;
  tuExecOk(db, "CREATE TRIGGER bump AFTER UPDATE ON known_parts WHEN new.part = ':db.part/tx' BEGIN"
               " UPDATE known_parts SET idx = idx + 100 WHERE part = ':db.part/user'; END");
  tuExecOk(db, "BEGIN");
  x = userMark(db);
  ck_assert_int_eq(newEntity(db, 1), x);
  ck_assert_int_eq(newEntity(db, 2), x + 101);
  ck_assert_int_eq(newEntity(db, 3), x + 202);
  tuExecOk(db, "COMMIT");
  ck_assert_int_eq(userMark(db), x + 303);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

/* The kept instant is the one written: an explicit :db/txInstant 30 s
** ahead of the clock (within the 60 s skew allowed), then an edn_t with
** none, which may not go back before it (Datomic's instants never do):
** it takes the same instant. */
START_TEST(last_instant_explicit) {
  sqlite3 *db = openStore("last-inst.db");
  char zTx[160], zInst[48], *z;
  time_t t = time(NULL) + 30;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(zInst, sizeof zInst, "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
  sqlite3_snprintf(sizeof zTx, zTx, "[{:p/n 1} [:db/add \"datomic.tx\" :db/txInstant #inst \"%s\"]]", zInst);
  tuExecOk(db, "BEGIN");
  tuExecOk(db, "SELECT edn_t(':main', '[{:p/n 0}]')");
  z = tuQuery(db, "SELECT edn_t(':main', ?1) ->> 'tx_instant'", zTx, NULL);
  ck_assert_str_eq(z, zInst);
  free(z);
  z = tuQuery(db, "SELECT edn_t(':main', '[{:p/n 2}]') ->> 'tx_instant'", NULL, NULL);
  ck_assert_str_eq(z, zInst);
  free(z);
  tuExecOk(db, "COMMIT");
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}
END_TEST

static Suite *lastSuite(void) {
  Suite *s = suite_create("host_last");
  TCase *tc = tcase_create("host_last");
  tuNoFsync();
  tcase_add_test(tc, last_parts_host_raw_write);
  tcase_add_test(tc, last_parts_rollback_to_savepoint);
  tcase_add_test(tc, last_parts_other_connection);
  tcase_add_test(tc, last_parts_host_trigger);
  tcase_add_test(tc, last_instant_explicit);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(lastSuite)
