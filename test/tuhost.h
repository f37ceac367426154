/*
** tuhost.h — a host connection with the whole extension registered, for the
** suites of the SQL boundary (vtab/) only: the lower stages' suites include
** testutil.h alone and so cannot reach the SQL surface.
*/
#ifndef MENTAT_TUHOST_H
#define MENTAT_TUHOST_H

#include "testutil.h"
#include "mentat.h"

/* An in-memory host connection with the extension registered. */
static inline sqlite3 *tuOpenHost(void) {
  sqlite3 *db = NULL;
  char *zErr = NULL;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  ck_assert_msg(mentatRegister(db, &zErr) == SQLITE_OK, "register: %s", zErr ? zErr : "?");
  return db;
}

#endif /* MENTAT_TUHOST_H */
