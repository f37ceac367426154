/*
** store_context.c — the helpers every file of the store stage shares
** (store_context.h): error replacement, one-integer statements and the
** short-poll busy wait.
**
** Takes in statements and messages; gives out SQLite codes; calls only
** SQLite. Below every other store file, so none of them calls up.
*/
#include <time.h>
#include "config.h"
#include "store_context.h"

/* The veto is the caller's interrupt, which the stages above ask too
** (configPoll). */
void storeSetCommitVeto(int (*xVeto)(void)) {
  configSetInterruptHook(xVeto);
}

int storeCallerInterrupted(void) {
  return configInterrupted();
}

void storeErr(char **pzErr, char *zMsg) {
  if (pzErr == NULL) { sqlite3_free(zMsg); return; }
  sqlite3_free(*pzErr);
  *pzErr = zMsg;
}

int storeStepInt(sqlite3_stmt *pStmt, sqlite3_int64 *piOut) {
  int rc = sqlite3_step(pStmt);
  *piOut = (rc == SQLITE_ROW) ? sqlite3_column_int64(pStmt, 0) : 0;
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) rc = SQLITE_OK;
  sqlite3_reset(pStmt);
  return rc;
}

/* The wait for another process's lock (BEGIN IMMEDIATE's write lock, a
** RESTART checkpoint's writer and readers). SQLite's own
** busy handler sleeps 1, 2, 5 ... up to 100 ms between tries, while a
** process writing in a loop frees the lock for only the moment between its
** COMMIT and its next BEGIN: a waiter that sleeps 100 ms almost never
** finds it free, so one process kept the store for seconds while the
** others starved (bench/fairness.py; bench/findings.md "Soak and
** overload"). Here every try is followed by a short sleep
** drawn at random from STORE_BUSY_MIN_US..STORE_BUSY_MAX_US (the jitter
** keeps the waiters from polling in step), until the deadline: each
** waiter tries about 2,000 times a second, each try one lock attempt on
** the -shm file. A wait for a write (bInterruptible) also asks on each try
** whether the caller's host was interrupted (storeCallerInterrupted), and
** gives up at once if so (issue 19: the wait for another process's BEGIN
** IMMEDIATE ignored con.interrupt() for up to MENTAT_BUSY_TIMEOUT_MS). */
#define STORE_BUSY_MIN_US 50
#define STORE_BUSY_MAX_US 1000

/* sqlite3_busy_handler's callback: 1 to try again after the sleep, 0 to
** give up (the waiting call then fails with SQLITE_BUSY). */
static int storeBusyPoll(void *pArg, int nTry) {
  StoreBusyWait *w = (StoreBusyWait *)pArg;
  sqlite3_int64 usNow = configNowUs(), usSleep;
  struct timespec ts;
  (void)nTry;
  if (usNow >= w->usEnd) return 0;
  if (w->bInterruptible && storeCallerInterrupted()) {
    w->bInterrupted = 1;
    return 0;
  }
  w->uRand ^= w->uRand << 13;
  w->uRand ^= w->uRand >> 17;
  w->uRand ^= w->uRand << 5;
  usSleep = STORE_BUSY_MIN_US + (sqlite3_int64)(w->uRand % (STORE_BUSY_MAX_US - STORE_BUSY_MIN_US));
  if (usSleep > w->usEnd - usNow) usSleep = w->usEnd - usNow;
  ts.tv_sec = 0;
  ts.tv_nsec = (long)usSleep * 1000L;
  nanosleep(&ts, NULL);
  return 1;
}

void storeBusyWaitSet(sqlite3 *db, StoreBusyWait *w, int msWait) {
  w->bInterruptible = 0;
  w->bInterrupted = 0;
  w->usEnd = configNowUs() + (sqlite3_int64)msWait * 1000;
  w->uRand = (unsigned int)(w->usEnd ^ ((sqlite3_int64)(size_t)w >> 4)) | 1u;
  sqlite3_busy_handler(db, storeBusyPoll, w);
}
