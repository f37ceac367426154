/*
** interrupt.c — the interrupt bridge (see interrupt.h): a progress handler
** and a commit hook on every store connection that probe the host
** connection of the call being served, and the watches that say which host
** that is (one per reader, one per thread for transactions).
*/
#include <stddef.h>
#include "config.h"
#include "interrupt.h"

/* VM instructions between two looks at the host's interrupt flag: a probe
** costs about as much as a few dozen instructions, so this many keeps the
** overhead negligible while an interrupt is still seen almost at once. */
#define INTR_WATCH_OPS 10000

/* A reader watch's period adapts to what its instructions cost: one can
** take milliseconds (a row carrying a multi-megabyte value is copied by
** OP_Column, OP_MakeRecord and a DISTINCT's temp b-tree), so a fixed
** 10,000 could come after the whole statement (issue 19 F4: 300 rows of
** 8 MiB, 2 s, no probe). It starts at INTR_ADAPT_MIN_OPS and doubles while
** looks come less than INTR_ADAPT_FAST_US apart, up to INTR_WATCH_OPS (a
** few looks per statement: the ramp is a few clock reads); a look later
** than INTR_ADAPT_SLOW_US scales the period down towards that spacing.
** SQLite applies a new period after the one already counted, so the
** latency is at most about two periods of the slowest rows. */
#define INTR_ADAPT_MIN_OPS 8
#define INTR_ADAPT_START_OPS 64
#define INTR_ADAPT_FAST_US 500
#define INTR_ADAPT_SLOW_US 2000
#define INTR_PROBE_US 1000

/* The innermost thread watch of this thread (edn_t during txTransact). */
static _Thread_local IntrWatch *intrThreadWatch = NULL;

/* Whether the watched host was interrupted, asked without running a
** statement there. SQLite's parser looks at the connection's interrupt
** flag before every token and stops with SQLITE_INTERRUPT, so preparing a
** lone space answers: nothing for the host's trace or authorizer callbacks
** to see, no statement to keep, and a tenth of the cost of preparing and
** stepping "SELECT 1" (works on hosts older than sqlite3_is_interrupted,
** 3.41). The flag stays set while the host's own statement (the one
** calling us) is active, as it always is here. A prepare that ran out of
** memory also stops the call: inside a host statement SQLite keeps the
** connection's malloc-failed state until that statement ends, so the
** host's statement fails anyway, and the write the probe guards must not
** commit under it. The length is -1, not 1: SQLite copies a text whose
** given length does not include its terminator (a malloc and free, a
** quarter of the probe's ~1,900 instructions by callgrind, paid by every
** table's first row on hosts older than 3.41). */
static int intrFlagged(IntrWatch *pWatch) {
  sqlite3_stmt *pNone = NULL;
  int rc;
  if (pWatch->pHost == NULL) return 0;
  rc = sqlite3_prepare_v2(pWatch->pHost, " ", -1, &pNone, NULL);
  sqlite3_finalize(pNone);
  return rc == SQLITE_INTERRUPT || rc == SQLITE_NOMEM;
}

/* The same question asked by stepping "SELECT 1" on the host (prepared at
** the first look, kept until the watch ends): SQLite checks the flag when a
** statement starts, and the step's instructions count toward the host's own
** progress handler, which is how a host that stops calls from that handler
** (README "Interrupts") still reaches a file store's long work. Used from
** the store's progress handler only, that is in long statements: short
** calls run nothing on the host. */
static int intrStepped(IntrWatch *pWatch) {
  if (pWatch->pProbe == NULL) {
    int rc;
    if (pWatch->pHost == NULL) return 0;
    if (pWatch->bProbeFailed) return intrFlagged(pWatch);
    rc = sqlite3_prepare_v2(pWatch->pHost, "SELECT 1", -1, &pWatch->pProbe, NULL);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(pWatch->pProbe);
      pWatch->pProbe = NULL;
      if (rc == SQLITE_INTERRUPT || rc == SQLITE_NOMEM) return 1;
      pWatch->bProbeFailed = 1;
      return intrFlagged(pWatch);
    }
  }
  sqlite3_step(pWatch->pProbe);
  return sqlite3_reset(pWatch->pProbe) == SQLITE_INTERRUPT;
}

/* The watch of a hook: pArg, a reader watch, or NULL for the thread's. */
static IntrWatch *intrWatchOf(void *pArg) {
  return pArg ? (IntrWatch *)pArg : intrThreadWatch;
}

static int intrPastDeadline(const IntrWatch *pWatch) {
  return pWatch->tDeadline > 0 && configNowMs() > pWatch->tDeadline;
}

static int intrProgress(void *pArg);

/* A reader watch's next period (see INTR_ADAPT_MIN_OPS), from the time
** since its last look; whether it is time to probe the host: at most once
** per INTR_PROBE_US, so the early looks of a short statement cost a clock
** read each, not a step on the host. */
static int intrAdapt(IntrWatch *pWatch) {
  sqlite3_int64 tNow = configNowUs(), dt = tNow - pWatch->tLookUs;
  sqlite3_int64 n = pWatch->nOps;
  pWatch->tLookUs = tNow;
  if (dt < INTR_ADAPT_FAST_US) n = n * 2 > INTR_WATCH_OPS ? INTR_WATCH_OPS : n * 2;
  else if (dt > INTR_ADAPT_SLOW_US) n = n * INTR_ADAPT_SLOW_US / dt;
  if (n < INTR_ADAPT_MIN_OPS) n = INTR_ADAPT_MIN_OPS;
  if (n != pWatch->nOps) {
    pWatch->nOps = (int)n;
    sqlite3_progress_handler(pWatch->pStoreDb, pWatch->nOps, intrProgress, pWatch);
  }
  if (tNow - pWatch->tProbeUs < INTR_PROBE_US) return 0;
  pWatch->tProbeUs = tNow;
  return 1;
}

/* The progress handler. */
static int intrProgress(void *pArg) {
  IntrWatch *pWatch = intrWatchOf(pArg);
  if (pWatch == NULL) return 0;
  if (pArg != NULL && pWatch->pStoreDb != NULL && !intrAdapt(pWatch)) return intrPastDeadline(pWatch);
  return intrPastDeadline(pWatch) || intrStepped(pWatch);
}

/* The commit veto and the compile's polls. */
static int intrCheck(void *pArg) {
  IntrWatch *pWatch = intrWatchOf(pArg);
  if (pWatch == NULL) return 0;
  return intrPastDeadline(pWatch) || intrFlagged(pWatch);
}

/* Hosts whose SQLite is built with SQLITE_OMIT_PROGRESS_CALLBACK (the one
** better-sqlite3 bundles) leave that entry of the API table NULL: calling it
** would jump to address 0, so interrupt polling is simply off there. */
#ifdef MENTAT_STATIC
# define INTR_HAS_PROGRESS 1
#else
# define INTR_HAS_PROGRESS (sqlite3_api->progress_handler != 0)
#endif

#ifdef MENTAT_STATIC
# define INTR_HAS_COMMIT_HOOK 1
#else
# define INTR_HAS_COMMIT_HOOK (sqlite3_api->commit_hook != 0)
#endif

/* The progress handler fires only inside long statements; a transaction of
** many small statements can run to its COMMIT without one. The commit hook
** is the last word: when the host was interrupted meanwhile, returning
** non-zero turns the COMMIT into a ROLLBACK, so an interrupted edn_t never
** stores anything (peer fault B32). */
static int intrCommitCheck(void *pArg) {
  (void)pArg;
  return intrCheck(NULL);
}

int intrThreadInterrupted(void) {
  return intrCheck(NULL);
}

void intrInstall(sqlite3 *pStoreDb) {
  if (INTR_HAS_COMMIT_HOOK) sqlite3_commit_hook(pStoreDb, intrCommitCheck, NULL);
  if (!INTR_HAS_PROGRESS) return;
  sqlite3_progress_handler(pStoreDb, INTR_WATCH_OPS, intrProgress, NULL);
}

void intrWatchPause(IntrWatch *pWatch, int bPause) {
  if (pWatch->pStoreDb == NULL || !INTR_HAS_PROGRESS) return;
  if (bPause) {
    sqlite3_progress_handler(pWatch->pStoreDb, 0, NULL, NULL);
    return;
  }
  pWatch->nOps = INTR_ADAPT_START_OPS;
  pWatch->tLookUs = pWatch->tProbeUs = configNowUs();
  sqlite3_progress_handler(pWatch->pStoreDb, pWatch->nOps, intrProgress, pWatch);
}

int intrWatchInterrupted(IntrWatch *pWatch) {
  return intrFlagged(pWatch);
}

int intrWatchPoll(IntrWatch *pWatch, int bNow) {
  sqlite3_int64 tNow;
  if (pWatch->bRowFlag) return intrWatchFlagRead(pWatch) || intrPastDeadline(pWatch);
  tNow = configNowUs();
  if (!bNow && tNow - pWatch->tProbeUs < INTR_PROBE_US) return 0;
  if (bNow && tNow - pWatch->tBeginUs < INTR_PROBE_US) return intrPastDeadline(pWatch);
  pWatch->tProbeUs = tNow;
  return intrPastDeadline(pWatch) || intrFlagged(pWatch);
}

/* sqlite3_is_interrupted (3.41): the host's flag read, nothing prepared.
** The API table only grows at its end, and 3.41 put is_interrupted right
** after value_encoding, the last entry 3.40's header declares, so built
** against those headers the entry is reached through IntrApi341 on a host
** of 3.41 or later; built against newer headers through the header's own
** macro. Older hosts have none (intrWatchRowInterrupted answers 0). */
#if defined(MENTAT_STATIC)
# if SQLITE_VERSION_NUMBER >= 3041000
#  define INTR_IS_INTERRUPTED(db) sqlite3_is_interrupted(db)
# endif
#elif SQLITE_VERSION_NUMBER >= 3041000
# define INTR_IS_INTERRUPTED(db) sqlite3_is_interrupted(db)
#elif SQLITE_VERSION_NUMBER >= 3040000
typedef struct IntrApi341 {
  sqlite3_api_routines base;
  int (*is_interrupted)(sqlite3 *);
} IntrApi341;
# define INTR_IS_INTERRUPTED(db) (((const IntrApi341 *)(const void *)sqlite3_api)->is_interrupted(db))
#endif

/* Whether intrWatchFlagRead can answer for this host (asked at the watch's
** begin, not per row). */
static int intrHasFlagRead(void) {
#ifdef INTR_IS_INTERRUPTED
  return sqlite3_libversion_number() >= 3041000;
#else
  return 0;
#endif
}

int intrWatchFlagRead(IntrWatch *pWatch) {
#ifdef INTR_IS_INTERRUPTED
  return pWatch->pHost ? INTR_IS_INTERRUPTED(pWatch->pHost) : 0;
#else
  (void)pWatch;
  return 0;
#endif
}

void intrWatchBegin(IntrWatch *pWatch, sqlite3 *host, sqlite3 *pStoreDb) {
  intrWatchEnd(pWatch);
  pWatch->pHost = host;
  pWatch->bProbeFailed = 0;
  pWatch->bRowFlag = intrHasFlagRead();
  pWatch->tBeginUs = pWatch->tProbeUs = configNowUs();
  /* A host store runs on the host itself, whose statements see its
  ** interrupts directly; its handlers are the host's, never replaced. The
  ** probe still serves intrWatchInterrupted (a compile polls it). */
  if (pStoreDb != NULL && pStoreDb == host) return;
  if (pStoreDb) {
    pWatch->pStoreDb = pStoreDb;
    intrWatchPause(pWatch, 0);
  } else {
    pWatch->pPrev = intrThreadWatch;
    pWatch->bThread = 1;
    intrThreadWatch = pWatch;
  }
}

void intrWatchEnd(IntrWatch *pWatch) {
  if (pWatch->pStoreDb) intrInstall(pWatch->pStoreDb);
  pWatch->pStoreDb = NULL;
  if (pWatch->bThread) {
    /* Watches nest like the calls that own them. */
    if (intrThreadWatch == pWatch) intrThreadWatch = pWatch->pPrev;
    pWatch->bThread = 0;
    pWatch->pPrev = NULL;
  }
  sqlite3_finalize(pWatch->pProbe);
  pWatch->pProbe = NULL;
  pWatch->pHost = NULL;
  pWatch->tDeadline = 0;
  pWatch->bRowFlag = 0;
}
