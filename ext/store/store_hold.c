/*
** store_hold.c — the snapshots host cursors keep open between calls, and
** asking them to let go when the writer needs the WAL back.
**
** Takes in holds registered by the SQL boundary (an edn_q cursor with rows
** left: store.h's StoreHold); gives out, to the WAL policy, how many let
** go; calls the holds' xRelease and the thread's CPU clock (ConfigBudget). A snapshot
** pins the WAL: no checkpoint can copy or rewind past it, so an idle host
** cursor would let the WAL grow with every later commit.
*/
#include "config.h"
#include "store_context.h"

/* One commit's budget for asking every hold, ms of the writer thread's
** CPU time: a writer asking 30 open cursors one budget each would wait for
** all of them in turn. CPU time, not wall time, so the rows set aside per
** commit, and with them the WAL an open cursor lets grow, do not depend on
** the machine's load. */
#define STORE_HOLD_RELEASE_MS 100

/* ... and that much more per this many bytes of WAL the commit itself
** wrote, up to STORE_HOLD_RELEASE_MAX_MS: while a cursor keeps its
** snapshot every commit adds its whole size to the WAL, so a commit of an
** 8 MB value (40 MiB of WAL, the value in every index that holds v) left
** a wide cursor three commits to let go and the WAL at 128 MiB against a
** 64 MiB bound (issue 19, B2). A commit's extra wait stays proportional to
** its own writing. */
#define STORE_HOLD_RELEASE_PER_BYTES (4LL * 1024 * 1024)
#define STORE_HOLD_RELEASE_MAX_MS 1000

/* The list is guarded by holdMutex, which storeHoldsRelease keeps across
** the xRelease calls: a holder removing itself (to free its memory) waits
** until a release in progress is over, so xRelease never runs on freed
** memory. Holders never take holdMutex while holding their own mutex, and
** xRelease takes only its holder's, so the two cannot deadlock. */
void storeHoldAdd(Store *p, StoreHold *pHold) {
  pthread_mutex_lock(&p->holdMutex);
  pHold->pHoldPrev = NULL;
  pHold->pHoldNext = p->pHolds;
  if (p->pHolds) p->pHolds->pHoldPrev = pHold;
  p->pHolds = pHold;
  pthread_mutex_unlock(&p->holdMutex);
}

static void storeHoldUnlink(Store *p, StoreHold *pHold) {
  if (pHold->pHoldPrev) pHold->pHoldPrev->pHoldNext = pHold->pHoldNext;
  else if (p->pHolds == pHold) p->pHolds = pHold->pHoldNext;
  else return;                              /* not in the list (released) */
  if (pHold->pHoldNext) pHold->pHoldNext->pHoldPrev = pHold->pHoldPrev;
  pHold->pHoldPrev = pHold->pHoldNext = NULL;
}

void storeHoldRemove(Store *p, StoreHold *pHold) {
  pthread_mutex_lock(&p->holdMutex);
  storeHoldUnlink(p, pHold);
  pthread_mutex_unlock(&p->holdMutex);
}

int storeHoldsRelease(Store *p, int *pbAll) {
  int n = 0, bAll = 1;
  ConfigBudget budget;
  sqlite3_int64 ms = STORE_HOLD_RELEASE_MS
                     * (1 + p->nWalLastTx * p->szFrame / STORE_HOLD_RELEASE_PER_BYTES);
  configBudgetStart(&budget, (ms < STORE_HOLD_RELEASE_MAX_MS ? ms : STORE_HOLD_RELEASE_MAX_MS) * 1000);
  /* Past half the bound a hold whose rest does not fit in this commit's
  ** budget lets its snapshot go and loses that rest (issue 19): copying it
  ** a part per commit let the WAL reach 397 MiB against 64 for a cross
  ** product left open. Half: the commits until the next release stay
  ** under the bound. */
  budget.bDrop = p->nWalFrames * p->szFrame >= configWalRestartBytes() / 2;
  pthread_mutex_lock(&p->holdMutex);
  /* One budget for the commit, not per hold. */
  StoreHold *pAgain = NULL;
  while (p->pHolds && (n == 0 || !configBudgetSpent(&budget))) {
    StoreHold *pHold = p->pHolds;
    int r;
    storeHoldUnlink(p, pHold);
    r = pHold->xRelease(pHold, &budget);
    if (r != 1) bAll = 0;
    if (r == 2) {
      pHold->pHoldNext = pAgain;    /* back in the list after this commit */
      pAgain = pHold;
    }
    n++;
  }
  if (p->pHolds) bAll = 0;
  while (pAgain) {
    StoreHold *pHold = pAgain;
    pAgain = pHold->pHoldNext;
    pHold->pHoldPrev = NULL;
    pHold->pHoldNext = p->pHolds;
    if (p->pHolds) p->pHolds->pHoldPrev = pHold;
    p->pHolds = pHold;
  }
  pthread_mutex_unlock(&p->holdMutex);
  if (pbAll) *pbAll = bAll;
  return n;
}

int storeHoldsAny(Store *p) {
  int bHas;
  pthread_mutex_lock(&p->holdMutex);
  bHas = p->pHolds != NULL;
  pthread_mutex_unlock(&p->holdMutex);
  return bHas;
}
