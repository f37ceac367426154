/*
** flush_shim.c — an LD_PRELOAD library that makes fsync and fdatasync cost a fixed time
** (FLUSH_US microseconds, default 300) instead of the disk's, for measuring writers that
** share commits (threads.c KINDS w) on a store in tmpfs (/dev/shm): the disk's own flush here
** moved between 0.2 and 8 ms from minute to minute, and 8 threads against 1 depends on it
** (store_writer.c, GROUP COMMIT). FLUSH_SHIM_COUNT=1 prints the number of calls at exit.
** Durability is of course gone: bench code for ratios only, never for a store that matters.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long nCalls;

static void flushNap(void) {
  const char *z = getenv("FLUSH_US");
  long us = z ? atol(z) : 300;
  struct timespec ts;
  ts.tv_sec = us / 1000000;
  ts.tv_nsec = (us % 1000000) * 1000;
  __atomic_add_fetch(&nCalls, 1, __ATOMIC_RELAXED);
  while (nanosleep(&ts, &ts) != 0) {}
}

int fdatasync(int fd) {
  (void)fd;
  flushNap();
  return 0;
}

int fsync(int fd) {
  (void)fd;
  flushNap();
  return 0;
}

__attribute__((destructor)) static void flushShimEnd(void) {
  if (getenv("FLUSH_SHIM_COUNT")) fprintf(stderr, "flush_shim: %ld flushes\n", nCalls);
}
