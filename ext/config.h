/*
** config.h — the process's settings and clocks, below every stage.
**
** Takes in the environment (the MENTAT_* variables, read once, at the first
** call of any getter here, but for MENTAT_TX_INSTANT_SKEW_MS, read at every
** call) and the tests' setters; gives out one value per
** setting and the two clocks; calls nothing but libc. A process has one
** policy: the settings are the same for every store and thread, so the
** stages ask here instead of reading getenv themselves.
**
** SETTINGS (the table in config.c; README "Limits and settings" says what
** each one does to a store):
**   variable                     getter                  default     kind
**   MENTAT_SYNCHRONOUS           configSynchronous       FULL        OFF/NORMAL/FULL/EXTRA
**   MENTAT_MMAP_SIZE             configMmapSize          1 GiB       bytes, 0 disables
**   MENTAT_STORE_CACHE           configStoreCache        16          stores, 0 = no cache
**   MENTAT_IDLE_READERS          configIdleReaders       4           connections per store
**   MENTAT_WAL_CHECKPOINT_BYTES  configWalCheckpointBytes 6 MiB      bytes
**   MENTAT_WAL_RESTART_BYTES     configWalRestartBytes   64 MiB      bytes
**   MENTAT_WAL_GATHER            configWalGather         1           "0" turns it off
**   MENTAT_TUNE_MIN_DATOMS       configTuneMinDatoms     8192        datoms, 0 tunes every store
**   MENTAT_CACHE_SIZE            configWriterCacheBytes  64 MiB      bytes
**   MENTAT_TX_INSTANT_SKEW_MS    configTxInstantSkewMs   60000       ms, read per call
**   MENTAT_BUSY_TIMEOUT_MS       configBusyTimeoutMs     10000       ms
**   MENTAT_GROUP_COMMIT          configGroupCommit       1           "0" turns it off
**   MENTAT_PATH_CHECK_MS         configPathCheckMs       10          ms, 0 checks every read
**   MENTAT_SPILL_MEMORY_BYTES    configSpillMemoryBytes  64 MiB      bytes
** A number setting is a non-negative decimal integer, the whole value; an
** unset, empty, malformed, negative or out-of-range (past 2^63 - 1) one
** keeps the default; counts past INT_MAX are taken as INT_MAX.
** An unknown MENTAT_SYNCHRONOUS keeps FULL (a returned tx report is on disk).
** MENTAT_TX_INSTANT_SKEW_MS is read at every call so a host (and the data
** cases' `env` lines) can change it between transactions.
**
** Setters are for tests: they change the value for connections and writes
** made from then on and return the previous value. Values are read and
** written atomically, so a setter racing a reader is not undefined.
*/
#ifndef MENTAT_CONFIG_H
#define MENTAT_CONFIG_H

#include "sqlite_api.h"

/* The PRAGMA synchronous value: "OFF", "NORMAL", "FULL" or "EXTRA" (static). */
const char *configSynchronous(void);
/* Previous value; z must be one of the four (case-insensitive), else ignored. */
const char *configSetSynchronous(const char *z);

/* PRAGMA mmap_size of every store connection, bytes (0: none). */
sqlite3_int64 configMmapSize(void);
/* Idle stores the process-wide cache keeps (0: none cached). */
int configStoreCache(void);
int configSetStoreCache(int n);
/* Idle reader connections a store keeps pooled. */
int configIdleReaders(void);
/* New WAL bytes after which the writer runs a PASSIVE checkpoint. */
sqlite3_int64 configWalCheckpointBytes(void);
/* The WAL size bound: from half of it the writer RESTARTs the WAL. */
sqlite3_int64 configWalRestartBytes(void);
sqlite3_int64 configSetWalRestartBytes(sqlite3_int64 n);
/* Whether store connections use the WAL-gathering VFS (1) or the default (0). */
int configWalGather(void);
/* The datoms count from which the writer tunes a store. */
sqlite3_int64 configTuneMinDatoms(void);
sqlite3_int64 configSetTuneMinDatoms(sqlite3_int64 n);
/* The writer connection's page cache for large transactions, bytes. */
sqlite3_int64 configWriterCacheBytes(void);
/* How far an explicit :db/txInstant may be ahead of the clock, ms. */
sqlite3_int64 configTxInstantSkewMs(void);
/* How long a writer waits for the store's write lock (this process's other
** writers, then another process's), and a store connection for another's
** lock, ms (SPEC.md §4). */
int configBusyTimeoutMs(void);
int configSetBusyTimeoutMs(int ms);
/* Whether concurrent writers of a file store at synchronous=FULL or EXTRA
** share commits (store_writer.c, GROUP COMMIT); read per write. */
int configGroupCommit(void);
int configSetGroupCommit(int b);
/* How long a read trusts the file its db_path named at its last check
** before it checks again (stat: a file replaced at the path is a new
** store, SPEC.md §4), ms; 0 checks on every read. Writes always check. */
int configPathCheckMs(void);
int configSetPathCheckMs(int ms);
/* The most memory the rows one raw-index cursor (edn_datoms, edn_log) sets
** aside may take; the rest of a longer one goes to a temporary database
** (B25, datoms_cursor.c). */
sqlite3_int64 configSpillMemoryBytes(void);
sqlite3_int64 configSetSpillMemoryBytes(sqlite3_int64 n);

/* CLOCK_MONOTONIC milliseconds: deadlines and budgets within a process. */
sqlite3_int64 configNowMs(void);
/* The same clock in microseconds (vDSO: no system call on Linux). */
sqlite3_int64 configNowUs(void);
/* A budget of the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID),
** for work done on another's behalf that must not depend on the machine's
** load: a thread descheduled by other processes does not spend it, so the
** same budget does the same work at any load (B25: how many commits a
** host cursor needs to set its rows aside). Reading that clock is a
** system call; configBudgetSpent reads it only when the wall time since its
** last reading could have spent the rest (a thread uses at most one second
** of CPU per second), a few times per budget. Where the clock is missing
** the wall clock stands in. Zero-initialised: no budget (never spent). */
typedef struct ConfigBudget ConfigBudget;
struct ConfigBudget {
  sqlite3_int64 usEnd;       /* thread CPU microseconds at which it is spent; 0: none */
  sqlite3_int64 usCpuSeen;   /* the CPU clock at its last reading */
  sqlite3_int64 usWallSeen;  /* configNowUs() then */
  int bDrop;                 /* set by the caller: work not done within the budget
                             ** is given up (with an error) rather than left for later */
};
/* Starts a budget of usCpu microseconds of this thread's CPU from now. */
void configBudgetStart(ConfigBudget *p, sqlite3_int64 usCpu);
/* True once the thread started on it has used it up (p NULL: never). */
int configBudgetSpent(ConfigBudget *p);
/* CLOCK_REALTIME microseconds since the Unix epoch: what is recorded
** (:db/txInstant, mentat_managed_indexes' times). */
sqlite3_int64 configWallUs(void);

/* The interrupt of the call the calling thread serves (edn_t, a with-span),
** for the stages below the SQL boundary, which cannot see the host: the
** interrupt bridge registers its question once at load time
** (storeSetCommitVeto); configInterrupted asks it now (0 without one: a
** probe of the host, a few hundred ns). */
void configSetInterruptHook(int (*xInterrupted)(void));
int configInterrupted(void);
/* The same question from a loop over many cheap items (the EDN reader's
** forms, the transactor's ops), where even a probe per item would cost:
** configPoll counts its calls, reads the clock every CONFIG_POLL_ITEMS
** and asks configInterrupted at most once per CONFIG_POLL_US, so an
** interrupt is seen about a millisecond after it came (issue 19 R2: a
** 100,000-entity edn_t ran 0.5-1.3 s past it). True from the answer on.
** Zero-initialise. */
typedef struct ConfigPoll ConfigPoll;
struct ConfigPoll {
  unsigned int n;            /* calls since the last clock read */
  sqlite3_int64 usAsked;     /* configNowUs() at the last question, 0: none yet */
  int bInterrupted;          /* the answer was yes */
};
int configPoll(ConfigPoll *p);

#endif /* MENTAT_CONFIG_H */
