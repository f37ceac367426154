/*
** config.c — the settings table, read from the environment once per
** process, and the clocks (config.h has the list and the rules).
**
** Takes in getenv and the tests' setters; gives out the getters of
** config.h; calls only libc. Each setting is one row of aConfig: its
** variable, its default, its largest value and how its text is read. The
** values live in one array, loaded under pthread_once at the first getter
** call and then only read (atomically, as the setters may change them).
*/
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "config.h"

/* How a variable's text becomes a value. */
#define CONFIG_INT   0   /* non-negative decimal integer up to nMax */
#define CONFIG_SYNC  1   /* index into azSync */
#define CONFIG_FLAG  2   /* "0" is 0, anything else 1 */

/* The slots of gaValue, in aConfig's order. */
enum {
  CFG_SYNCHRONOUS, CFG_MMAP_SIZE, CFG_STORE_CACHE, CFG_IDLE_READERS,
  CFG_WAL_CHECKPOINT_BYTES, CFG_WAL_RESTART_BYTES, CFG_WAL_GATHER,
  CFG_TUNE_MIN_DATOMS, CFG_CACHE_SIZE, CFG_TX_INSTANT_SKEW_MS, CFG_BUSY_TIMEOUT_MS,
  CFG_GROUP_COMMIT, CFG_PATH_CHECK_MS, CFG_SPILL_MEMORY_BYTES,
  CFG_COUNT
};

typedef struct ConfigDef {
  const char *zEnv;          /* the variable; NULL: not from the environment */
  sqlite3_int64 iDefault;
  sqlite3_int64 nMax;        /* CONFIG_INT: larger values are taken as this */
  int eKind;                 /* CONFIG_* */
} ConfigDef;

static const char *const azSync[] = { "OFF", "NORMAL", "FULL", "EXTRA" };
#define CONFIG_SYNC_FULL 2

/* One row per setting; the reasons for the defaults are where they act
** (store_file.c, store_wal.c, store_tune.c, tx.c, tx_write.c). */
static const ConfigDef aConfig[CFG_COUNT] = {
  [CFG_SYNCHRONOUS]          = { "MENTAT_SYNCHRONOUS", CONFIG_SYNC_FULL, 3, CONFIG_SYNC },
  [CFG_MMAP_SIZE]            = { "MENTAT_MMAP_SIZE", 1073741824LL, LLONG_MAX, CONFIG_INT },
  [CFG_STORE_CACHE]          = { "MENTAT_STORE_CACHE", 16, INT_MAX, CONFIG_INT },
  [CFG_IDLE_READERS]         = { "MENTAT_IDLE_READERS", 4, INT_MAX, CONFIG_INT },
  [CFG_WAL_CHECKPOINT_BYTES] = { "MENTAT_WAL_CHECKPOINT_BYTES", 6LL << 20, LLONG_MAX, CONFIG_INT },
  [CFG_WAL_RESTART_BYTES]    = { "MENTAT_WAL_RESTART_BYTES", 64LL << 20, LLONG_MAX, CONFIG_INT },
  [CFG_WAL_GATHER]           = { "MENTAT_WAL_GATHER", 1, 1, CONFIG_FLAG },
  [CFG_TUNE_MIN_DATOMS]      = { "MENTAT_TUNE_MIN_DATOMS", 8192, LLONG_MAX, CONFIG_INT },
  [CFG_CACHE_SIZE]           = { "MENTAT_CACHE_SIZE", 64LL << 20, LLONG_MAX, CONFIG_INT },
  [CFG_TX_INSTANT_SKEW_MS]   = { "MENTAT_TX_INSTANT_SKEW_MS", 60000, LLONG_MAX, CONFIG_INT },
  [CFG_BUSY_TIMEOUT_MS]      = { "MENTAT_BUSY_TIMEOUT_MS", 10000, INT_MAX, CONFIG_INT },
  [CFG_GROUP_COMMIT]         = { "MENTAT_GROUP_COMMIT", 1, 1, CONFIG_FLAG },
  [CFG_PATH_CHECK_MS]        = { "MENTAT_PATH_CHECK_MS", 10, INT_MAX, CONFIG_INT },
  [CFG_SPILL_MEMORY_BYTES]   = { "MENTAT_SPILL_MEMORY_BYTES", 64LL << 20, LLONG_MAX, CONFIG_INT },
};

static sqlite3_int64 gaValue[CFG_COUNT];
static pthread_once_t gConfigOnce = PTHREAD_ONCE_INIT;

/* The value of row i's variable now, or its default. */
static sqlite3_int64 configRead(int i) {
  const ConfigDef *pDef = &aConfig[i];
  const char *z = pDef->zEnv ? getenv(pDef->zEnv) : NULL;
  char *zEnd = NULL;
  long long v;
  if (z == NULL) return pDef->iDefault;
  switch (pDef->eKind) {
    case CONFIG_SYNC:
      for (int k = 0; k < 4; k++) {
        if (strcasecmp(z, azSync[k]) == 0) return k;
      }
      return pDef->iDefault;
    case CONFIG_FLAG:
      return strcmp(z, "0") != 0;
    default:
      if (z[0] == 0) return pDef->iDefault;
      errno = 0;
      v = strtoll(z, &zEnd, 10);
      if (errno != 0 || *zEnd != 0 || v < 0) return pDef->iDefault;
      return v > pDef->nMax ? pDef->nMax : v;
  }
}

static void configLoad(void) {
  for (int i = 0; i < CFG_COUNT; i++) gaValue[i] = configRead(i);
}

static sqlite3_int64 configGet(int i) {
  pthread_once(&gConfigOnce, configLoad);
  return __atomic_load_n(&gaValue[i], __ATOMIC_RELAXED);
}

/* Sets slot i to v (clamped to the row's range) and returns the old value. */
static sqlite3_int64 configSet(int i, sqlite3_int64 v) {
  pthread_once(&gConfigOnce, configLoad);
  if (v < 0) v = 0;
  if (v > aConfig[i].nMax) v = aConfig[i].nMax;
  return __atomic_exchange_n(&gaValue[i], v, __ATOMIC_RELAXED);
}

const char *configSynchronous(void) {
  return azSync[configGet(CFG_SYNCHRONOUS)];
}

const char *configSetSynchronous(const char *z) {
  for (int k = 0; k < 4; k++) {
    if (z && strcasecmp(z, azSync[k]) == 0) return azSync[configSet(CFG_SYNCHRONOUS, k)];
  }
  return configSynchronous();
}

sqlite3_int64 configMmapSize(void) { return configGet(CFG_MMAP_SIZE); }
int configStoreCache(void) { return (int)configGet(CFG_STORE_CACHE); }
int configSetStoreCache(int n) { return (int)configSet(CFG_STORE_CACHE, n); }
int configIdleReaders(void) { return (int)configGet(CFG_IDLE_READERS); }
sqlite3_int64 configWalCheckpointBytes(void) { return configGet(CFG_WAL_CHECKPOINT_BYTES); }
sqlite3_int64 configWalRestartBytes(void) { return configGet(CFG_WAL_RESTART_BYTES); }
sqlite3_int64 configSetWalRestartBytes(sqlite3_int64 n) { return configSet(CFG_WAL_RESTART_BYTES, n); }
int configWalGather(void) { return (int)configGet(CFG_WAL_GATHER); }
sqlite3_int64 configTuneMinDatoms(void) { return configGet(CFG_TUNE_MIN_DATOMS); }
sqlite3_int64 configSetTuneMinDatoms(sqlite3_int64 n) { return configSet(CFG_TUNE_MIN_DATOMS, n); }
sqlite3_int64 configWriterCacheBytes(void) { return configGet(CFG_CACHE_SIZE); }
int configBusyTimeoutMs(void) { return (int)configGet(CFG_BUSY_TIMEOUT_MS); }
int configSetBusyTimeoutMs(int ms) { return (int)configSet(CFG_BUSY_TIMEOUT_MS, ms); }
int configGroupCommit(void) { return (int)configGet(CFG_GROUP_COMMIT); }
int configSetGroupCommit(int b) { return (int)configSet(CFG_GROUP_COMMIT, b != 0); }
int configPathCheckMs(void) { return (int)configGet(CFG_PATH_CHECK_MS); }
int configSetPathCheckMs(int ms) { return (int)configSet(CFG_PATH_CHECK_MS, ms); }
sqlite3_int64 configSpillMemoryBytes(void) { return configGet(CFG_SPILL_MEMORY_BYTES); }
sqlite3_int64 configSetSpillMemoryBytes(sqlite3_int64 n) {
  return configSet(CFG_SPILL_MEMORY_BYTES, n);
}

sqlite3_int64 configTxInstantSkewMs(void) {
  return configRead(CFG_TX_INSTANT_SKEW_MS);
}

/* configPoll's gates (config.h): a clock read costs ~20 ns, a question a
** few hundred, so neither shows next to the items between them. */
#define CONFIG_POLL_ITEMS 32
#define CONFIG_POLL_US 1000

static int (*gInterruptHook)(void) = NULL;

void configSetInterruptHook(int (*xInterrupted)(void)) {
  gInterruptHook = xInterrupted;
}

int configInterrupted(void) {
  return gInterruptHook ? gInterruptHook() : 0;
}

int configPoll(ConfigPoll *p) {
  sqlite3_int64 usNow;
  if (p->bInterrupted) return 1;
  if (gInterruptHook == NULL || ++p->n < CONFIG_POLL_ITEMS) return 0;
  p->n = 0;
  usNow = configNowUs();
  if (p->usAsked != 0 && usNow - p->usAsked < CONFIG_POLL_US) return 0;
  p->usAsked = usNow;
  p->bInterrupted = gInterruptHook();
  return p->bInterrupted;
}

sqlite3_int64 configNowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (sqlite3_int64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

sqlite3_int64 configNowUs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (sqlite3_int64)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* This thread's CPU time in microseconds, or the monotonic clock where
** the thread clock is missing. */
static sqlite3_int64 configThreadCpuUs(void) {
  struct timespec ts;
#ifdef CLOCK_THREAD_CPUTIME_ID
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
    return (sqlite3_int64)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  }
#endif
  return configNowUs();
}

void configBudgetStart(ConfigBudget *p, sqlite3_int64 usCpu) {
  p->usWallSeen = configNowUs();
  p->usCpuSeen = configThreadCpuUs();
  p->usEnd = p->usCpuSeen + (usCpu > 0 ? usCpu : 1);
  p->bDrop = 0;
}

int configBudgetSpent(ConfigBudget *p) {
  sqlite3_int64 usWall;
  if (p == NULL || p->usEnd == 0) return 0;
  usWall = configNowUs();
  /* The CPU used since the last reading is at most the wall time since. */
  if (p->usCpuSeen + (usWall - p->usWallSeen) < p->usEnd) return 0;
  p->usWallSeen = usWall;
  p->usCpuSeen = configThreadCpuUs();
  return p->usCpuSeen >= p->usEnd;
}

sqlite3_int64 configWallUs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (sqlite3_int64)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
