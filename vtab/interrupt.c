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

/* The innermost thread watch of this thread (edn_t during txTransact). */
static _Thread_local IntrWatch *intrThreadWatch = NULL;

/* Whether the watched host was interrupted: a step of "SELECT 1" on the
** host fails with SQLITE_INTERRUPT exactly then (this works on hosts older
** than sqlite3_is_interrupted). The probe is prepared at the first look,
** not when the watch begins: most calls end before the first look, and a
** prepare is a large part of a point lookup's cost. */
static int intrProbe(IntrWatch *pWatch) {
  if (pWatch->pProbe == NULL) {
    /* A thread watch (edn_t) has its probe ready or none: see
    ** intrWatchPrepare. */
    if (pWatch->pHost == NULL || pWatch->bProbeFailed || pWatch->bThread) return 0;
    int rc = sqlite3_prepare_v2(pWatch->pHost, "SELECT 1", -1, &pWatch->pProbe, NULL);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(pWatch->pProbe);
      pWatch->pProbe = NULL;
      /* The parser itself stops on an interrupted connection. */
      if (rc == SQLITE_INTERRUPT) return 1;
      pWatch->bProbeFailed = 1;
      return 0;
    }
  }
  sqlite3_step(pWatch->pProbe);
  return sqlite3_reset(pWatch->pProbe) == SQLITE_INTERRUPT;
}

/* The progress handler. pArg: a reader watch, or NULL for the thread's
** watch. */
static int intrCheck(void *pArg) {
  IntrWatch *pWatch = pArg ? (IntrWatch *)pArg : intrThreadWatch;
  if (pWatch == NULL) return 0;
  if (pWatch->tDeadline > 0 && configNowMs() > pWatch->tDeadline) return 1;
  return intrProbe(pWatch);
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
  sqlite3_progress_handler(pStoreDb, INTR_WATCH_OPS, intrCheck, NULL);
}

void intrWatchPause(IntrWatch *pWatch, int bPause) {
  if (pWatch->pStoreDb == NULL || !INTR_HAS_PROGRESS) return;
  if (bPause) sqlite3_progress_handler(pWatch->pStoreDb, 0, NULL, NULL);
  else sqlite3_progress_handler(pWatch->pStoreDb, INTR_WATCH_OPS, intrCheck, pWatch);
}

int intrWatchInterrupted(IntrWatch *pWatch) {
  return intrProbe(pWatch);
}

void intrWatchBegin(IntrWatch *pWatch, sqlite3 *host, sqlite3 *pStoreDb) {
  intrWatchEnd(pWatch);
  pWatch->pHost = host;
  pWatch->bProbeFailed = 0;
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

int intrWatchPrepare(IntrWatch *pWatch) {
  int rc;
  if (pWatch->pProbe || pWatch->pHost == NULL) return SQLITE_OK;
  rc = sqlite3_prepare_v2(pWatch->pHost, "SELECT 1", -1, &pWatch->pProbe, NULL);
  if (rc == SQLITE_OK) return SQLITE_OK;
  sqlite3_finalize(pWatch->pProbe);
  pWatch->pProbe = NULL;
  pWatch->bProbeFailed = 1;
  return rc == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_OK;
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
}
