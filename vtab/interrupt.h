/*
** interrupt.h — the interrupt bridge: sqlite3_interrupt() on a host
** connection reaches the store connections a call runs on.
**
** Takes a host connection and either a store reader connection or the
** calling thread; gives a watch whose progress handler (and, for
** transactions, commit hook) stops the store's statement once the host is
** interrupted. Calls SQLite only.
**
** A store connection runs its own VM, and the host's VM looks at its
** interrupt flag only between our calls, so long store statements
** (aggregates, recursive rules, big transactions) would otherwise run on
** (peer fault B32). The progress handler steps a trivial "SELECT 1" on
** the host, which fails with SQLITE_INTERRUPT once the host is
** interrupted (SQLite checks the flag when a statement starts;
** sqlite3_is_interrupted, 3.41, is not available on older hosts), and the
** store statement then stops with SQLITE_INTERRUPT; the commit hook and the
** compile's polls only prepare an empty statement, which SQLite's parser
** fails the same way, so short calls run nothing on the host.
*/
#ifndef MENTAT_INTERRUPT_H
#define MENTAT_INTERRUPT_H

#include "sqlite_api.h"

/* Two ways to attach a watch: to a checked-out reader (pStoreDb, the
** queries and pulls), or, with pStoreDb NULL, to the calling thread
** (edn_t: the transactor picks the writer connection itself). Every store
** connection carries intrInstall()'s handler, which serves the thread's
** watch; a reader watch replaces it while active and intrWatchEnd puts it
** back. Zero-initialise; intrWatchEnd is idempotent and must run before the
** connection goes back to the pool. */
typedef struct IntrWatch IntrWatch;
struct IntrWatch {
  sqlite3 *pStoreDb;        /* watched reader connection, or NULL */
  sqlite3 *pHost;           /* the host connection watched */
  sqlite3_stmt *pProbe;     /* "SELECT 1" on the host, prepared at the progress
                            ** handler's first look */
  int bProbeFailed;         /* could not prepare it: the empty prepare only */
  IntrWatch *pPrev;         /* thread watch: the one it covers */
  int bThread;              /* a thread watch is active */
  sqlite3_int64 tDeadline;  /* configNowMs() past which its statements stop as interrupted
                            ** (a with-span's bound), or 0 */
  int bRowFlag;             /* the host has sqlite3_is_interrupted (intrWatchRowInterrupted) */
  int nOps;                 /* reader watch: its progress handler's period (instructions) */
  sqlite3_int64 tLookUs;    /* reader watch: configNowUs() at its last look */
  sqlite3_int64 tProbeUs;   /* configNowUs() at the watch's begin or its last probe of the host */
  sqlite3_int64 tBeginUs;   /* configNowUs() at the watch's begin */
};

/* Starts watching host for pStoreDb (a reader) or, pStoreDb NULL, for the
** calling thread; ends a watch pWatch still had first. */
void intrWatchBegin(IntrWatch *pWatch, sqlite3 *host, sqlite3 *pStoreDb);

/* Stops the watch: the reader gets intrInstall()'s handler back, a thread
** watch uncovers the one it covered. Frees the probe. Idempotent. */
void intrWatchEnd(IntrWatch *pWatch);

/* True when the host connection of a begun watch has been interrupted. */
int intrWatchInterrupted(IntrWatch *pWatch);

/* The same question from code that builds a result outside the store's
** VM (the scalar documents: a row's JSON, a copy within the document),
** where the watch's progress handler never runs. Cheap enough to ask per
** row: the host's flag read where the host has sqlite3_is_interrupted,
** else a clock read and, at most once per millisecond (the progress
** handler's rate) or when bNow asks (the last look before a result goes
** to the host, whose VM would otherwise meet the flag and fail with
** SQLite's bare "interrupted"), the probe of intrWatchInterrupted. bNow
** probes only a call that has run a millisecond or more: a short call,
** a point lookup, would pay a prepare on the host (0.2-0.45 us) for an
** interrupt that the host's VM reports anyway. */
int intrWatchPoll(IntrWatch *pWatch, int bNow);

/* The same question between two rows of a table, where it must cost next
** to nothing: answered on hosts with sqlite3_is_interrupted (3.41 and
** later, one read of the flag); 0 on older hosts, where the only probes
** (a prepare or a step on the host, 200-450 ns) would slow a scan's rows by
** 70-120%. A table asks before giving a row, because the host's VM looks
** at the flag right after each of our rows, and would fail the statement
** with SQLite's bare "interrupted" instead of the table's own message. */
int intrWatchFlagRead(IntrWatch *pWatch);
static inline int intrWatchRowInterrupted(IntrWatch *pWatch) {
  return pWatch->bRowFlag && intrWatchFlagRead(pWatch);
}

/* Switches a reader watch's polling off (bPause) or back on. Off while
** another thread (a writer setting a cursor's rest of rows aside,
** edn_q_table.c) runs the reader's statement: a probe steps the host
** connection, whose own thread may be the one waiting for that other
** thread. No-op where the host's SQLite has no progress handler. */
void intrWatchPause(IntrWatch *pWatch, int bPause);

/* The store connection hook's part (entry.c): the progress handler that
** serves thread watches, and the commit hook that turns an interrupted
** transaction's COMMIT into a ROLLBACK. */
void intrInstall(sqlite3 *pStoreDb);

/* Whether the host of the calling thread's watch (edn_t) was interrupted:
** the store's commit veto (storeSetCommitVeto), asked when a write ends,
** since a shared COMMIT runs on one writer's thread for all of them. */
int intrThreadInterrupted(void);

#endif /* MENTAT_INTERRUPT_H */
