/*
** test_group.c — group commit (store_writer.c GROUP COMMIT):
** threads of one process writing one file store at synchronous=FULL share
** COMMITs, and each transaction keeps its own tx id, report and
** all-or-nothing outcome.
**
** What is checked, worked out from the rules rather than from our output:
** every thread's reports name its own entity and value; tx ids are
** distinct, increasing within each thread, and consecutive over the store
** (a failed transaction gives its id back, as in a store without groups);
** a failing transaction among successes leaves the others committed and
** itself absent; the log holds one row per datom, in tx id order, and the
** instants never go back; fewer COMMITs than transactions were made (the
** groups formed), and as many as transactions with MENTAT_GROUP_COMMIT=0;
** a writer killed with SIGKILL mid-run loses no transaction it had
** returned from.
*/
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include "testutil.h"
#include "tx.h"

#define NTHREAD 8
#define NTX 40
/* Every FAIL_EVERY-th transaction of a thread is a unique-value conflict. */
#define FAIL_EVERY 10
#define FAIL_AT 7

static const char *zSchema =
  "[{:db/ident :g/n :db/valueType :db.type/long :db/cardinality :db.cardinality/one}\n"
  " {:db/ident :g/who :db/valueType :db.type/long :db/cardinality :db.cardinality/one}\n"
  " {:db/ident :g/code :db/valueType :db.type/string :db/cardinality :db.cardinality/one"
  "  :db/unique :db.unique/value}]";

typedef struct Res {
  sqlite3_int64 tx, e, n;
} Res;

typedef struct Arg {
  Store *pStore;
  pthread_barrier_t *pBarrier;
  int k;
  int nOk, nFail;
  Res aRes[NTX];
  char zBad[600];       /* the first unexpected outcome */
  int iVetoAt;          /* the transaction whose caller is "interrupted", -1 none */
  int nVetoed;
  int iSchemaAt;        /* transacts a new attribute there and uses it next, -1 none */
} Arg;

static sqlite3_int64 jsonInt(const char *z, const char *zKey) {
  const char *p = strstr(z, zKey);
  return p ? strtoll(p + strlen(zKey), NULL, 10) : -1;
}

/* The commit veto of test_group_veto: the calling thread's flag. */
static _Thread_local int tbVeto;
static int testVeto(void) { return tbVeto; }

/* Transacts zTx; returns the report (malloc'd) or NULL with *prc and the
** error in zErr. */
static char *transact(Store *pStore, const char *zTx, int *prc, char *zErr, int nErr) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  char *zE = NULL, *zRep;
  int rc = txTransact(pStore, zTx, (int)strlen(zTx), pOut, &zE);
  zRep = sqlite3_str_finish(pOut);
  *prc = rc;
  snprintf(zErr, (size_t)nErr, "%s", zE ? zE : "");
  sqlite3_free(zE);
  if (rc != SQLITE_OK) {
    sqlite3_free(zRep);
    return NULL;
  }
  return zRep;
}

static void *writer(void *pArg) {
  Arg *a = pArg;
  sqlite3_int64 iLast = 0;
  pthread_barrier_wait(a->pBarrier);
  for (int i = 0; i < NTX; i++) {
    char zTx[256], zErr[256];
    int rc;
    sqlite3_int64 n = (sqlite3_int64)a->k * 1000 + i;
    int bFail = i % FAIL_EVERY == FAIL_AT;
    if (a->iSchemaAt >= 0 && i == a->iSchemaAt) {
      snprintf(zTx, sizeof zTx, "[{:db/ident :g/extra%d :db/valueType :db.type/long"
               " :db/cardinality :db.cardinality/one}]", a->k);
      bFail = 0;
      n = -1;
    } else if (a->iSchemaAt >= 0 && i == a->iSchemaAt + 1) {
      snprintf(zTx, sizeof zTx, "[{:db/id \"x\" :g/n %lld :g/extra%d 1}]", (long long)n, a->k);
      bFail = 0;
    } else if (bFail) {
      /* The value is new, the code is taken: the whole transaction fails. */
      snprintf(zTx, sizeof zTx, "[{:db/id \"x\" :g/n %lld :g/code \"taken\"}]",
               (long long)(100000 + n));
    } else {
      snprintf(zTx, sizeof zTx, "[{:db/id \"x\" :g/n %lld :g/who %d}]", (long long)n, a->k);
    }
    tbVeto = i == a->iVetoAt;
    char *zRep = transact(a->pStore, zTx, &rc, zErr, sizeof zErr);
    tbVeto = 0;
    if (i == a->iVetoAt) {
      if (rc != SQLITE_INTERRUPT && !a->zBad[0]) {
        snprintf(a->zBad, sizeof a->zBad, "thread %d tx %d: vetoed but rc %d (%s)", a->k, i, rc, zErr);
      }
      a->nVetoed++;
      sqlite3_free(zRep);
      continue;
    }
    if (bFail) {
      if ((zRep || strstr(zErr, "unique value conflict: :g/code \"taken\"") == NULL) && !a->zBad[0]) {
        snprintf(a->zBad, sizeof a->zBad, "thread %d tx %d: expected the conflict, got rc %d %s",
                 a->k, i, rc, zRep ? zRep : zErr);
      }
      a->nFail++;
      sqlite3_free(zRep);
      continue;
    }
    if (zRep == NULL) {
      if (!a->zBad[0]) snprintf(a->zBad, sizeof a->zBad, "thread %d tx %d: %s", a->k, i, zErr);
      continue;
    }
    sqlite3_int64 tx = jsonInt(zRep, "\"tx_id\":");
    if (tx <= iLast && !a->zBad[0]) {
      snprintf(a->zBad, sizeof a->zBad, "thread %d tx %d: tx id %lld after %lld", a->k, i,
               (long long)tx, (long long)iLast);
    }
    iLast = tx;
    if (n >= 0) {
      sqlite3_int64 e = jsonInt(zRep, "\"x\":");
      if (e < 65536 && !a->zBad[0]) {
        snprintf(a->zBad, sizeof a->zBad, "thread %d tx %d: report %s", a->k, i, zRep);
      }
      a->aRes[a->nOk].tx = tx;
      a->aRes[a->nOk].e = e;
      a->aRes[a->nOk].n = n;
      a->nOk++;
    }
    sqlite3_free(zRep);
  }
  return NULL;
}

static Store *gStore;
static sqlite3 *gDb;
static sqlite3_int64 gSeedTx;

static void openStore(const char *zName) {
  char *zErr = NULL, zE[256], *zRep;
  int rc;
  const char *zPath = tuTempPath(zName);
  ck_assert_msg(storeAcquire(zPath, &gStore, &zErr) == SQLITE_OK, "acquire: %s", zErr);
  zRep = transact(gStore, zSchema, &rc, zE, sizeof zE);
  ck_assert_msg(zRep, "schema: %s", zE);
  sqlite3_free(zRep);
  zRep = transact(gStore, "[{:g/code \"taken\"}]", &rc, zE, sizeof zE);
  ck_assert_msg(zRep, "seed: %s", zE);
  gSeedTx = jsonInt(zRep, "\"tx_id\":");
  sqlite3_free(zRep);
  ck_assert_int_eq(sqlite3_open(zPath, &gDb), SQLITE_OK);
}

static void closeStore(void) {
  sqlite3_close(gDb);
  gDb = NULL;
  storeRelease(gStore);
  gStore = NULL;
  storeCacheClear();
}

static sqlite3_int64 qInt(const char *zSql) {
  char *z = tuQuery(gDb, zSql, NULL, NULL);
  sqlite3_int64 v;
  ck_assert_msg(strncmp(z, "ERROR", 5) != 0, "%s: %s", zSql, z);
  v = strtoll(z, NULL, 10);
  free(z);
  return v;
}

static int cmpI64(const void *pA, const void *pB) {
  sqlite3_int64 a = *(const sqlite3_int64 *)pA, b = *(const sqlite3_int64 *)pB;
  return a < b ? -1 : a > b;
}

/* The store's invariants after any run: an intact file, one log row per
** datom, the log in tx id order, instants that never go back, the tx mark
** past the last tx, and tx ids without gaps after the seed. Returns the
** number of transactions after the seed. */
static sqlite3_int64 checkInvariants(void) {
  char *z = tuQuery(gDb, "PRAGMA quick_check", NULL, NULL);
  ck_assert_str_eq(z, "ok");
  free(z);
  ck_assert_int_eq(qInt("SELECT count(*) FROM datoms d WHERE NOT EXISTS (SELECT 1 FROM transactions t"
                        " WHERE t.e = d.e AND t.a = d.a AND t.v = d.v AND t.tx = d.tx AND t.added = 1)"), 0);
  ck_assert_int_eq(qInt("SELECT count(*) FROM timelined_transactions t1 JOIN timelined_transactions t2"
                        " ON t2.rowid = t1.rowid + 1 WHERE t2.tx < t1.tx"), 0);
  ck_assert_int_eq(qInt("SELECT count(*) FROM datoms x JOIN datoms y ON x.a = 3 AND y.a = 3"
                        " AND y.e > x.e AND y.v < x.v"), 0);
  ck_assert_int_eq(qInt("SELECT (SELECT idx FROM known_parts WHERE part = ':db.part/tx')"
                        " - (SELECT max(tx) FROM timelined_transactions)"), 1);
  char zSql[256];
  snprintf(zSql, sizeof zSql, "SELECT max(e) - min(e) + 1 - count(*) FROM datoms WHERE a = 3 AND e > %lld",
           (long long)gSeedTx);
  ck_assert_int_eq(qInt(zSql), 0);
  snprintf(zSql, sizeof zSql, "SELECT count(*) FROM datoms WHERE a = 3 AND e > %lld", (long long)gSeedTx);
  return qInt(zSql);
}

/* Runs the writers; returns the COMMITs they made. */
static sqlite3_int64 runWriters(Arg *aArg, int nThread) {
  pthread_t aT[NTHREAD];
  pthread_barrier_t barrier;
  sqlite3_int64 n0 = storeCommitCount(gStore);
  pthread_barrier_init(&barrier, NULL, (unsigned)nThread);
  for (int k = 0; k < nThread; k++) {
    aArg[k].pStore = gStore;
    aArg[k].pBarrier = &barrier;
    aArg[k].k = k;
    ck_assert_int_eq(pthread_create(&aT[k], NULL, writer, &aArg[k]), 0);
  }
  for (int k = 0; k < nThread; k++) pthread_join(aT[k], NULL);
  pthread_barrier_destroy(&barrier);
  for (int k = 0; k < nThread; k++) ck_assert_msg(aArg[k].zBad[0] == 0, "%s", aArg[k].zBad);
  return storeCommitCount(gStore) - n0;
}

/* Each successful transaction's datom and log row are there, with its own
** tx id; the failed ones' values are nowhere. Returns the successes. */
static int checkResults(Arg *aArg, int nThread) {
  static sqlite3_int64 aTx[NTHREAD * NTX];
  sqlite3_stmt *pD = NULL, *pL = NULL;
  int nAll = 0;
  ck_assert_int_eq(sqlite3_prepare_v2(gDb, "SELECT count(*) FROM datoms WHERE e = ?1 AND v = ?2 AND tx = ?3"
                                      " AND a = (SELECT e FROM idents WHERE v = ':g/n')", -1, &pD, NULL), 0);
  ck_assert_int_eq(sqlite3_prepare_v2(gDb, "SELECT count(*) FROM transactions WHERE e = ?1 AND v = ?2"
                                      " AND tx = ?3 AND added = 1"
                                      " AND a = (SELECT e FROM idents WHERE v = ':g/n')", -1, &pL, NULL), 0);
  for (int k = 0; k < nThread; k++) {
    for (int i = 0; i < aArg[k].nOk; i++) {
      Res *r = &aArg[k].aRes[i];
      sqlite3_stmt *ap[2] = {pD, pL};
      for (int j = 0; j < 2; j++) {
        sqlite3_bind_int64(ap[j], 1, r->e);
        sqlite3_bind_int64(ap[j], 2, r->n);
        sqlite3_bind_int64(ap[j], 3, r->tx);
        ck_assert_int_eq(sqlite3_step(ap[j]), SQLITE_ROW);
        ck_assert_msg(sqlite3_column_int(ap[j], 0) == 1, "thread %d value %lld tx %lld: %s", k,
                      (long long)r->n, (long long)r->tx, j ? "no log row" : "no datom");
        sqlite3_reset(ap[j]);
      }
      aTx[nAll++] = r->tx;
    }
  }
  sqlite3_finalize(pD);
  sqlite3_finalize(pL);
  qsort(aTx, (size_t)nAll, sizeof aTx[0], cmpI64);
  for (int i = 1; i < nAll; i++) ck_assert_msg(aTx[i] != aTx[i - 1], "tx id %lld twice", (long long)aTx[i]);
  ck_assert_int_eq(qInt("SELECT count(*) FROM timelined_transactions WHERE v >= 100000"
                        " AND a = (SELECT e FROM idents WHERE v = ':g/n')"), 0);
  return nAll;
}

START_TEST(test_group_threads) {
  static Arg aArg[NTHREAD];
  memset(aArg, 0, sizeof aArg);
  for (int k = 0; k < NTHREAD; k++) aArg[k].iVetoAt = aArg[k].iSchemaAt = -1;
  openStore("group.db");
  sqlite3_int64 nCommits = runWriters(aArg, NTHREAD);
  int nOk = checkResults(aArg, NTHREAD);
  const int nFailEach = NTX / FAIL_EVERY;
  ck_assert_int_eq(nOk, NTHREAD * (NTX - nFailEach));
  for (int k = 0; k < NTHREAD; k++) ck_assert_int_eq(aArg[k].nFail, nFailEach);
  ck_assert_int_eq(checkInvariants(), nOk);
  /* The groups formed: 8 writers queue behind each COMMIT's flush. */
  ck_assert_msg(nCommits < nOk, "%lld COMMITs for %d transactions", (long long)nCommits, nOk);
  closeStore();
}
END_TEST

/* The same run with group commit off: a COMMIT per transaction (so the
** count above does tell groups apart). */
START_TEST(test_group_off) {
  static Arg aArg[NTHREAD];
  int bOld = configSetGroupCommit(0);
  memset(aArg, 0, sizeof aArg);
  for (int k = 0; k < NTHREAD; k++) aArg[k].iVetoAt = aArg[k].iSchemaAt = -1;
  openStore("nogroup.db");
  sqlite3_int64 nCommits = runWriters(aArg, 4);
  int nOk = checkResults(aArg, 4);
  ck_assert_int_eq(checkInvariants(), nOk);
  ck_assert_int_eq(nCommits, nOk);
  closeStore();
  configSetGroupCommit(bOld);
}
END_TEST

/* A caller interrupted when its write ends loses its own transaction
** only, wherever it sits in a group. */
START_TEST(test_group_veto) {
  static Arg aArg[NTHREAD];
  memset(aArg, 0, sizeof aArg);
  for (int k = 0; k < NTHREAD; k++) {
    aArg[k].iVetoAt = 3 + k;     /* never a failing one (FAIL_AT) */
    if (aArg[k].iVetoAt % FAIL_EVERY == FAIL_AT) aArg[k].iVetoAt++;
    aArg[k].iSchemaAt = -1;
  }
  storeSetCommitVeto(testVeto);
  openStore("veto.db");
  runWriters(aArg, NTHREAD);
  storeSetCommitVeto(NULL);
  int nOk = checkResults(aArg, NTHREAD);
  for (int k = 0; k < NTHREAD; k++) ck_assert_int_eq(aArg[k].nVetoed, 1);
  ck_assert_int_eq(nOk, NTHREAD * (NTX - NTX / FAIL_EVERY - 1));
  ck_assert_int_eq(checkInvariants(), nOk);
  closeStore();
}
END_TEST

/* Schema changes among grouped writes: each thread defines an attribute
** and uses it in its next transaction. */
START_TEST(test_group_schema) {
  static Arg aArg[NTHREAD];
  memset(aArg, 0, sizeof aArg);
  for (int k = 0; k < NTHREAD; k++) {
    aArg[k].iVetoAt = -1;
    aArg[k].iSchemaAt = 11 + k;
  }
  openStore("schema.db");
  runWriters(aArg, NTHREAD);
  int nOk = checkResults(aArg, NTHREAD);
  ck_assert_int_eq(checkInvariants(), nOk + NTHREAD);
  ck_assert_int_eq(qInt("SELECT count(*) FROM idents WHERE v LIKE ':g/extra%'"), NTHREAD);
  ck_assert_int_eq(qInt("SELECT count(*) FROM datoms WHERE a IN (SELECT e FROM idents"
                        " WHERE v LIKE ':g/extra%')"), NTHREAD);
  closeStore();
}
END_TEST

/* A process whose writers share COMMITs is killed mid-run: every
** transaction a writer had returned from (its tx id written to a pipe
** right after) is in the store, and the store is intact. */
static int gAckFd = -1;
static void *ackWriter(void *pArg) {
  Arg *a = pArg;
  for (int i = 0; i < 100000; i++) {
    char zTx[128], zErr[256];
    int rc;
    snprintf(zTx, sizeof zTx, "[{:db/id \"x\" :g/n %d :g/who %d}]", a->k * 1000000 + i, a->k);
    char *zRep = transact(a->pStore, zTx, &rc, zErr, sizeof zErr);
    if (zRep == NULL) continue;
    sqlite3_int64 ack[2] = {jsonInt(zRep, "\"tx_id\":"), (sqlite3_int64)a->k * 1000000 + i};
    sqlite3_free(zRep);
    if (write(gAckFd, ack, sizeof ack) != (ssize_t)sizeof ack) abort();
  }
  return NULL;
}

START_TEST(test_group_kill9) {
  int aPipe[2];
  const char *zPath;
  openStore("kill.db");
  zPath = sqlite3_db_filename(gDb, "main");
  char zKeep[256];
  snprintf(zKeep, sizeof zKeep, "%s", zPath);
  sqlite3_close(gDb);
  gDb = NULL;
  storeRelease(gStore);
  gStore = NULL;
  storeCacheClear();
  ck_assert_int_eq(pipe(aPipe), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    static Arg aArg[NTHREAD];
    pthread_t aT[NTHREAD];
    char *zErr = NULL;
    close(aPipe[0]);
    gAckFd = aPipe[1];
    if (storeAcquire(zKeep, &gStore, &zErr) != SQLITE_OK) _exit(3);
    for (int k = 0; k < NTHREAD; k++) {
      aArg[k].pStore = gStore;
      aArg[k].k = k;
      pthread_create(&aT[k], NULL, ackWriter, &aArg[k]);
    }
    for (int k = 0; k < NTHREAD; k++) pthread_join(aT[k], NULL);
    _exit(0);
  }
  close(aPipe[1]);
  /* Let it write for a while, then kill it in the middle of whatever it does. */
  struct timespec ts = {0, 400 * 1000000L};
  nanosleep(&ts, NULL);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  ck_assert(WIFSIGNALED(st));
  ck_assert_int_eq(sqlite3_open(zKeep, &gDb), SQLITE_OK);
  sqlite3_stmt *pD = NULL;
  ck_assert_int_eq(sqlite3_prepare_v2(gDb, "SELECT count(*) FROM datoms WHERE tx = ?1 AND v = ?2"
                                      " AND a = (SELECT e FROM idents WHERE v = ':g/n')", -1, &pD, NULL), 0);
  sqlite3_int64 ack[2];
  int nAck = 0;
  while (read(aPipe[0], ack, sizeof ack) == (ssize_t)sizeof ack) {
    sqlite3_bind_int64(pD, 1, ack[0]);
    sqlite3_bind_int64(pD, 2, ack[1]);
    ck_assert_int_eq(sqlite3_step(pD), SQLITE_ROW);
    ck_assert_msg(sqlite3_column_int(pD, 0) == 1, "acknowledged tx %lld lost", (long long)ack[0]);
    sqlite3_reset(pD);
    nAck++;
  }
  close(aPipe[0]);
  sqlite3_finalize(pD);
  ck_assert_int_gt(nAck, 0);
  ck_assert_int_ge(checkInvariants(), nAck);
  sqlite3_close(gDb);
  gDb = NULL;
}
END_TEST

int main(void) {
  Suite *s = suite_create("group");
  TCase *tc = tcase_create("group");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_group_threads);
  tcase_add_test(tc, test_group_off);
  tcase_add_test(tc, test_group_veto);
  tcase_add_test(tc, test_group_schema);
  tcase_add_test(tc, test_group_kill9);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int nFailed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nFailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
