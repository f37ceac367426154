/*
** threads.c — the `threads` scenario of BENCH.md: N threads in one process, each with
** its own host connection (":memory:" with the extension loaded), sharing the
** extension's process-wide store cache, running a point_lookup / ref_traversal / pull
** mix on one store for a fixed time.
**
** HOW IT WORKS
** main() reads the issues' entids from the store, starts N threads that wait on a
** barrier, lets them run for SECONDS, raises a stop flag and sums the operations each
** thread completed (round robin over the three kinds, inputs from a per-thread
** xorshift generator). Every operation steps its statement to the end. A C program
** rather than Python threads, so the GIL cannot serialise the callers. It also
** reports the mean latency per kind, a figure free of Python's call overhead, and the
** process CPU time per operation (getrusage): on this shared 2-core machine a second
** thread often gets no second core, so throughput alone cannot tell contention from
** scheduling; equal CPU per operation for 1 and 2 threads means no contention.
**
** Usage: threads EXT DB NTHREADS SECONDS NUSERS [KINDS] → one JSON line on stdout.
** KINDS (default "012") picks the kinds in the round robin: 0 point_lookup,
** 1 ref_traversal, 2 pull; e.g. "0" runs point lookups only (to see which kind
** contends). KINDS "w" runs writers instead: one-datom transactions
** `[[:db/add <random issue> :issue/state <random state>]]` through edn_t (the
** store writer's group commit: N threads writing one store), with every transaction's latency kept
** for the nearest-rank p50/p99 in the JSON line ("tx_per_s", "p50_ms", "p99_ms").
** Bench code, not part of the extension: it uses <sqlite3.h> directly and libc malloc.
*/
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define PL_Q "[:find ?e ?name :in $ ?email :where [?e :user/email ?email] [?e :user/name ?name]]"
#define RT_Q "[:find ?i ?title ?state :in $ ?email :where [?u :user/email ?email] " \
             "[?i :issue/assignee ?u] [?i :issue/title ?title] [?i :issue/state ?state]]"

static const char *zExt, *zDb;
static int nUser;
static char zKinds[8] = "012";
static int nKinds = 3;
static sqlite3_int64 *aIssue;
static int nIssue;
static atomic_int bStop;
static pthread_barrier_t barrier;

typedef struct Worker {
  pthread_t tid;
  int k;
  long nOp[3];
  double secOp[3];
  double *aLat;      /* writers: each transaction's latency, ms */
  long nLat, nLatAlloc;
  long nErr;
  char zErr[200];
} Worker;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpuNow(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec)
         + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static unsigned long long xorshift(unsigned long long *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Steps pStmt to the end; 0 on success. */
static int runStmt(sqlite3_stmt *pStmt) {
  int rc;
  while ((rc = sqlite3_step(pStmt)) == SQLITE_ROW) {
  }
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE ? 0 : rc;
}

static const char *const azState[] = {":state/open", ":state/in-progress", ":state/closed",
                                       ":state/resolved", ":state/reopened"};

static int cmpDouble(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The writers' loop (KINDS "w"). */
static void *writerMain(void *pArg) {
  Worker *w = pArg;
  sqlite3 *db = 0;
  sqlite3_stmt *pStmt = 0;
  char *zErr = 0;
  unsigned long long seed = 0x9E3779B97F4A7C15ull * (unsigned long long)(w->k + 1);
  int ready = 0;
  if (sqlite3_open(":memory:", &db) == SQLITE_OK &&
      sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1, (int *)0) == SQLITE_OK &&
      sqlite3_load_extension(db, zExt, 0, &zErr) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT edn_t(?1, ?2)", -1, &pStmt, 0) == SQLITE_OK) {
    ready = 1;
  } else {
    snprintf(w->zErr, sizeof w->zErr, "%s", zErr ? zErr : sqlite3_errmsg(db));
  }
  sqlite3_free(zErr);
  pthread_barrier_wait(&barrier);
  while (ready && !atomic_load(&bStop)) {
    char zTx[160];
    snprintf(zTx, sizeof zTx, "[[:db/add %lld :issue/state %s]]",
             (long long)aIssue[xorshift(&seed) % (unsigned long long)nIssue],
             azState[xorshift(&seed) % 5]);
    sqlite3_bind_text(pStmt, 1, zDb, -1, SQLITE_STATIC);
    sqlite3_bind_text(pStmt, 2, zTx, -1, SQLITE_TRANSIENT);
    double t0 = now();
    int rc = runStmt(pStmt);
    double ms = (now() - t0) * 1000;
    if (rc) {
      if (!w->nErr) snprintf(w->zErr, sizeof w->zErr, "%s", sqlite3_errmsg(db));
      w->nErr++;
      continue;
    }
    w->nOp[0]++;
    if (w->nLat == w->nLatAlloc) {
      w->nLatAlloc = w->nLatAlloc ? 2 * w->nLatAlloc : 4096;
      double *a = realloc(w->aLat, sizeof *a * (size_t)w->nLatAlloc);
      if (!a) break;
      w->aLat = a;
    }
    w->aLat[w->nLat++] = ms;
  }
  sqlite3_finalize(pStmt);
  sqlite3_close(db);
  return 0;
}

/* The writers' JSON line: tx/s and nearest-rank latency percentiles over every thread. */
static int writerReport(Worker *aW, int nThread, double el, double cpu) {
  long n = 0, nErr = 0;
  const char *zErr = "";
  for (int i = 0; i < nThread; i++) {
    n += aW[i].nLat;
    nErr += aW[i].nErr;
    if (aW[i].zErr[0]) zErr = aW[i].zErr;
  }
  double *a = malloc(sizeof *a * (size_t)(n ? n : 1));
  if (!a) return 1;
  long k = 0;
  for (int i = 0; i < nThread; i++) {
    memcpy(a + k, aW[i].aLat, sizeof *a * (size_t)aW[i].nLat);
    k += aW[i].nLat;
    free(aW[i].aLat);
  }
  qsort(a, (size_t)n, sizeof *a, cmpDouble);
#define PCT(p) (n ? a[(long)((p) * (double)n / 100.0 + 0.999999) - 1 < 0 ? 0 : \
                     (long)((p) * (double)n / 100.0 + 0.999999) - 1] : 0)
  printf("{\"threads\":%d,\"kind\":\"transact_one\",\"seconds\":%.3f,\"txs\":%ld,"
         "\"tx_per_s\":%.1f,\"p50_ms\":%.4f,\"p95_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%.4f,"
         "\"errors\":%ld,\"cpu_s\":%.3f,\"cpu_ms_per_tx\":%.4f,\"error\":\"%s\"}\n",
         nThread, el, n, (double)n / el, PCT(50), PCT(95), PCT(99), n ? a[n - 1] : 0, nErr, cpu,
         n ? 1000 * cpu / (double)n : 0, zErr);
#undef PCT
  free(a);
  return nErr ? 1 : 0;
}

static void *workerMain(void *pArg) {
  Worker *w = pArg;
  sqlite3 *db = 0;
  sqlite3_stmt *aStmt[3] = {0, 0, 0};
  char *zErr = 0;
  unsigned long long seed = 0x9E3779B97F4A7C15ull * (unsigned long long)(w->k + 1);
  int ready = 0;
  if (sqlite3_open(":memory:", &db) == SQLITE_OK &&
      sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1, (int *)0) == SQLITE_OK &&
      sqlite3_load_extension(db, zExt, 0, &zErr) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT value FROM edn_q(?1, '" PL_Q "', ?2)", -1, &aStmt[0], 0) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT value FROM edn_q(?1, '" RT_Q "', ?2)", -1, &aStmt[1], 0) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT edn_pull(?1, '[*]', ?2)", -1, &aStmt[2], 0) == SQLITE_OK) {
    ready = 1;
  } else {
    snprintf(w->zErr, sizeof w->zErr, "%s", zErr ? zErr : sqlite3_errmsg(db));
  }
  sqlite3_free(zErr);
  pthread_barrier_wait(&barrier);
  for (long n = 0; ready && !atomic_load(&bStop); n++) {
    int kind = zKinds[n % nKinds] - '0';
    sqlite3_stmt *p = aStmt[kind];
    char zOpts[100];
    sqlite3_bind_text(p, 1, zDb, -1, SQLITE_STATIC);
    if (kind < 2) {
      snprintf(zOpts, sizeof zOpts, "{\"inputs\":[\"user%d@example.com\"]}",
               (int)(xorshift(&seed) % (unsigned long long)nUser));
      sqlite3_bind_text(p, 2, zOpts, -1, SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_int64(p, 2, aIssue[xorshift(&seed) % (unsigned long long)nIssue]);
    }
    double t0 = now();
    int rc = runStmt(p);
    w->secOp[kind] += now() - t0;
    if (rc) {
      if (!w->nErr) snprintf(w->zErr, sizeof w->zErr, "%s", sqlite3_errmsg(db));
      w->nErr++;
    } else {
      w->nOp[kind]++;
    }
  }
  for (int i = 0; i < 3; i++) sqlite3_finalize(aStmt[i]);
  sqlite3_close(db);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: threads EXT DB NTHREADS SECONDS NUSERS\n");
    return 2;
  }
  zExt = argv[1];
  zDb = argv[2];
  int nThread = atoi(argv[3]);
  double secs = atof(argv[4]);
  nUser = atoi(argv[5]);
  int bWrite = argc > 6 && strcmp(argv[6], "w") == 0;
  if (argc > 6 && !bWrite) {
    nKinds = 0;
    for (const char *z = argv[6]; *z && nKinds < 7; z++) {
      if (*z >= '0' && *z <= '2') zKinds[nKinds++] = *z;
    }
    zKinds[nKinds] = 0;
    if (nKinds == 0) {
      fprintf(stderr, "threads: KINDS is a string of 0 (point_lookup), 1 (ref_traversal), 2 (pull)\n");
      return 2;
    }
  }
  sqlite3 *raw = 0;
  sqlite3_stmt *p = 0;
  if (sqlite3_open_v2(zDb, &raw, SQLITE_OPEN_READONLY, 0) != SQLITE_OK ||
      sqlite3_prepare_v2(raw, "SELECT e FROM datoms WHERE a = (SELECT e FROM idents WHERE v = "
                              "':issue/title')", -1, &p, 0) != SQLITE_OK) {
    fprintf(stderr, "threads: cannot read %s: %s\n", zDb, sqlite3_errmsg(raw));
    return 1;
  }
  int nAlloc = 1024;
  aIssue = malloc(sizeof *aIssue * (size_t)nAlloc);
  while (aIssue && sqlite3_step(p) == SQLITE_ROW) {
    if (nIssue == nAlloc) {
      nAlloc *= 2;
      aIssue = realloc(aIssue, sizeof *aIssue * (size_t)nAlloc);
      if (!aIssue) break;
    }
    aIssue[nIssue++] = sqlite3_column_int64(p, 0);
  }
  sqlite3_finalize(p);
  sqlite3_close(raw);
  if (!aIssue || nIssue == 0 || nThread < 1) {
    fprintf(stderr, "threads: no issues in %s\n", zDb);
    return 1;
  }
  Worker *aW = calloc((size_t)nThread, sizeof *aW);
  if (!aW) return 1;
  pthread_barrier_init(&barrier, 0, (unsigned)nThread + 1);
  for (int i = 0; i < nThread; i++) {
    aW[i].k = i;
    pthread_create(&aW[i].tid, 0, bWrite ? writerMain : workerMain, &aW[i]);
  }
  pthread_barrier_wait(&barrier);
  double t0 = now(), c0 = cpuNow();
  struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
  nanosleep(&ts, 0);
  atomic_store(&bStop, 1);
  for (int i = 0; i < nThread; i++) pthread_join(aW[i].tid, 0);
  double el = now() - t0, cpu = cpuNow() - c0;
  if (bWrite) {
    int rcW = writerReport(aW, nThread, el, cpu);
    free(aW);
    free(aIssue);
    return rcW;
  }
  long nOp[3] = {0, 0, 0}, nErr = 0;
  double sec[3] = {0, 0, 0};
  const char *zErr = "";
  for (int i = 0; i < nThread; i++) {
    for (int k = 0; k < 3; k++) {
      nOp[k] += aW[i].nOp[k];
      sec[k] += aW[i].secOp[k];
    }
    nErr += aW[i].nErr;
    if (aW[i].zErr[0]) zErr = aW[i].zErr;
  }
  long total = nOp[0] + nOp[1] + nOp[2];
  printf("{\"threads\":%d,\"seconds\":%.3f,\"ops\":%ld,\"ops_per_s\":%.1f,\"errors\":%ld,"
         "\"cpu_s\":%.3f,\"cpu_ms_per_op\":%.4f,\"mean_ms\":{\"point_lookup\":%.4f,\"ref_traversal\":%.4f,\"pull\":%.4f},\"error\":\"%s\"}\n",
         nThread, el, total, (double)total / el, nErr, cpu, total ? 1000 * cpu / (double)total : 0,
         nOp[0] ? 1000 * sec[0] / (double)nOp[0] : 0, nOp[1] ? 1000 * sec[1] / (double)nOp[1] : 0,
         nOp[2] ? 1000 * sec[2] / (double)nOp[2] : 0, zErr);
  free(aW);
  free(aIssue);
  return nErr ? 1 : 0;
}
