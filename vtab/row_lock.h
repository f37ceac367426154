/*
** row_lock.h — the lock of a cursor's rows, shared by the two cursors that
** a writer's thread may set aside (run_cursor.c, datoms_cursor.c).
**
** A compare-and-swap on an atomic_int (0 free, 1 taken) instead of a
** pthread mutex, which costs a streamed row far more: the only contention
** is a writer's set-aside, rare, and then the loser backs off (yields, then
** sleeps 100 us while a set-aside of many rows runs). Calls libc only.
*/
#ifndef MENTAT_ROW_LOCK_H
#define MENTAT_ROW_LOCK_H
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

static inline void rowLock(atomic_int *pLock) {
  int nTry = 0;
  for (;;) {
    int iFree = 0;
    if (atomic_compare_exchange_weak_explicit(pLock, &iFree, 1, memory_order_acquire,
                                              memory_order_relaxed)) {
      return;
    }
    if (++nTry < 64) {
      sched_yield();
    } else {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
}

static inline void rowUnlock(atomic_int *pLock) {
  atomic_store_explicit(pLock, 0, memory_order_release);
}

#endif
