/*
** fuzz_query.c — libFuzzer harness for the query path: edn_q as a scalar
** (JSON document) and as a table, edn_pull, and the opts JSON, on one
** scratch store loaded once with the acceptance cases' schemas and data
** (fuzz_store.h).
**
** Input: parts cut at NUL bytes (fuzzutil.h):
**   0  the query, also used as edn_pull's pattern
**   1  the inputs: a JSON array, spliced into opts as "inputs"
**   2  the opts JSON (as given when part 1 is empty)
**   3  edn_pull's entity (text: an ident or lookup ref); when absent the
**      pull runs on entity 65536 and on the lookup ref [:person/id 1]
** Every call must return a result or an error, never crash or leak. A
** watchdog thread interrupts the host connection of a call still running
** after FUZZ_INTERRUPT_MS, so slow queries end with "interrupted" instead
** of being reported as hangs; only work that ignores the interrupt is (the
** -timeout given to the fuzzer).
*/
#include <pthread.h>
#include <time.h>
#include "fuzzutil.h"
#include "fuzz_store.h"

#define FUZZ_INTERRUPT_MS 200

int LLVMFuzzerTestOneInput(const uint8_t *aData, size_t nData);

static sqlite3 *gHost = NULL;
static char gzStore[300];

/* The watchdog: the deadline (CLOCK_MONOTONIC ms, 0 = no call running) is
** read by the thread every few milliseconds. An interrupt that lands just
** after the call ended is harmless: SQLite clears the flag when the next
** statement starts on an idle connection. */
static pthread_mutex_t gDogMutex = PTHREAD_MUTEX_INITIALIZER;
static int64_t gDeadline = 0;

static int64_t fuzzNowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *fuzzDog(void *pArg) {
  struct timespec nap = {0, 5 * 1000000};
  (void)pArg;
  for (;;) {
    nanosleep(&nap, NULL);
    pthread_mutex_lock(&gDogMutex);
    if (gDeadline != 0 && fuzzNowMs() > gDeadline) {
      sqlite3_interrupt(gHost);
      gDeadline = 0;
    }
    pthread_mutex_unlock(&gDogMutex);
  }
  return NULL;
}

static void fuzzArm(int bOn) {
  pthread_mutex_lock(&gDogMutex);
  gDeadline = bOn ? fuzzNowMs() + FUZZ_INTERRUPT_MS : 0;
  pthread_mutex_unlock(&gDogMutex);
}

/* One call with the watchdog armed. */
static int fuzzCall(const char *zSql, int nArg, const char *const *azArg, const int *anArg) {
  int rc;
  fuzzArm(1);
  rc = fuzzRun(gHost, zSql, nArg, azArg, anArg, NULL);
  fuzzArm(0);
  return rc;
}

static void fuzzSetup(void) {
  pthread_t dog;
  int i;
  gHost = fuzzOpenHost();
  snprintf(gzStore, sizeof gzStore, "%s/query.db", fuzzTempDir());
  /* A file store at synchronous=OFF: loading it is the only write. */
  setenv("MENTAT_SYNCHRONOUS", "OFF", 1);
  for (i = 0; i < FUZZ_STORE_NTX; i++) {
    const char *az[2] = {gzStore, azFuzzStoreTx[i]};
    int an[2] = {-1, -1};
    char *zOut = NULL;
    if (fuzzRun(gHost, "SELECT edn_t(?, ?)", 2, az, an, &zOut) != SQLITE_OK) {
      fuzzDie("loading the scratch store", sqlite3_errmsg(gHost));
    }
    free(zOut);
  }
  if (pthread_create(&dog, NULL, fuzzDog, NULL) != 0) fuzzDie("watchdog thread", NULL);
  pthread_detach(dog);
}

/* opts: part 2 as given, with part 1 (when present) added as "inputs". */
static char *fuzzOpts(const FuzzParts *p) {
  const char *zIn = fuzzPart(p, 1), *zOpts = fuzzPart(p, 2);
  int nIn = zIn ? p->an[1] : 0, nOpts = zOpts ? p->an[2] : 0;
  char *z;
  if (nIn == 0) return zOpts && nOpts ? strdup(zOpts) : NULL;
  z = malloc((size_t)nIn + (size_t)nOpts + 16);
  if (z == NULL) return NULL;
  if (nOpts > 0 && zOpts[0] == '{') {
    const char *zRest = zOpts + 1;
    while (*zRest == ' ') zRest++;
    sprintf(z, "{\"inputs\":%s%s%s", zIn, *zRest == '}' ? "" : ",", zRest);
  } else {
    sprintf(z, "{\"inputs\":%s}", zIn);
  }
  return z;
}

int LLVMFuzzerTestOneInput(const uint8_t *aData, size_t nData) {
  FuzzParts parts;
  char *zOpts;
  const char *zQuery;
  const char *az[3];
  int an[3];
  if (nData > 65536) return 0;
  if (gHost == NULL) fuzzSetup();
  if (!fuzzSplit(&parts, aData, nData)) return 0;
  zQuery = parts.az[0];
  zOpts = fuzzOpts(&parts);
  az[0] = gzStore; an[0] = -1;
  az[1] = zQuery;  an[1] = parts.an[0];
  az[2] = zOpts;   an[2] = -1;

  fuzzCall("SELECT edn_q(?, ?, ?)", 3, az, an);
  fuzzCall("SELECT value, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15"
           " FROM edn_q(?, ?, ?)", 3, az, an);
  /* A cursor closed with rows left (the host stops early). */
  fuzzCall("SELECT value FROM edn_q(?, ?, ?) LIMIT 1", 3, az, an);

  if (fuzzPart(&parts, 3)) {
    az[2] = parts.az[3]; an[2] = parts.an[3];
    fuzzCall("SELECT edn_pull(?, ?, ?)", 3, az, an);
  } else {
    fuzzCall("SELECT edn_pull(?, ?, 65536)", 2, az, an);
    az[2] = "[:person/id 1]"; an[2] = -1;
    fuzzCall("SELECT edn_pull(?, ?, ?)", 3, az, an);
  }
  free(zOpts);
  fuzzPartsFree(&parts);
  return 0;
}
