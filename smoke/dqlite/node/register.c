/*
** smoke/dqlite/node/register.c — registers libmentat_sqlite on every SQLite
** connection the process opens, dqlite's own included. dqlite has no
** extension loading of its own (its VFS refuses xDlOpen), so the node dlopens
** the built .so and hands its entry point to sqlite3_auto_extension, which
** runs it for each sqlite3_open* afterwards.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <sqlite3.h>

#include "register.h"

/* Loads the extension at zPath and registers zEntry (the entry point the
** file name implies, sqlite3_mentatsqlite_init) as an auto extension.
** Returns 0, or non-zero with a message in zErr (nErr bytes). The handle
** stays open for the life of the process: connections keep calling into it. */
int mentatNodeRegister(const char *zPath, const char *zEntry, char *zErr, int nErr) {
  void *h;
  void *sym;
  int rc;
  h = dlopen(zPath, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(zErr, (size_t)nErr, "dlopen %s: %s", zPath, dlerror());
    return 1;
  }
  sym = dlsym(h, zEntry);
  if (sym == NULL) {
    snprintf(zErr, (size_t)nErr, "dlsym %s in %s: %s", zEntry, zPath, dlerror());
    return 1;
  }
  rc = sqlite3_auto_extension((void (*)(void))sym);
  if (rc != SQLITE_OK) {
    snprintf(zErr, (size_t)nErr, "sqlite3_auto_extension: %s", sqlite3_errstr(rc));
    return 1;
  }
  return 0;
}
