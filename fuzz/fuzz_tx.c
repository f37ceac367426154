/*
** fuzz_tx.c — libFuzzer harness for the transactor: each input's parts
** (cut at NUL bytes, fuzzutil.h) are tx-data, applied in order with edn_t
** to a fresh scratch store holding the acceptance cases' schemas and data
** (fuzz_store.h; built once, copied for every input so a reproducer does
** not depend on the inputs before it).
**
** After every call the store's tables must hold Datomic's invariants (a
** broken one calls abort() with its name):
**   - cardinality one: no entity has two current values of a
**     :db.cardinality/one attribute;
**   - every current datom has its log row (same e a v tag tx, added);
**   - a :db/unique attribute's current value belongs to one entity;
**   - the materialised idents and schema tables hold only current datoms;
**   - PRAGMA quick_check is ok;
**   - a successful call reports a tx id past every earlier one, and the
**     log's newest tx is it;
**   - a failed call changes nothing: a digest of every table is the same
**     before and after ("a failed transaction changes nothing", SPEC §5).
*/
#include <fcntl.h>
#include <sys/stat.h>
#include "fuzzutil.h"
#include "fuzz_store.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *aData, size_t nData);

static sqlite3 *gHost = NULL;
static char gzDir[256];
static char gzStore[300];
static char *gaTemplate = NULL;   /* the template store's bytes */
static size_t gnTemplate = 0;
static uint64_t ghTemplate = 0;   /* its digest */

static void fuzzRemoveStore(const char *zPath) {
  char z[320];
  unlink(zPath);
  snprintf(z, sizeof z, "%s-wal", zPath);
  unlink(z);
  snprintf(z, sizeof z, "%s-shm", zPath);
  unlink(z);
}

/* Builds the template once: the store loaded, then closed (the cache let
** go of it, which checkpoints the WAL into the file) and read back. */
static void fuzzSetup(void) {
  char zTemplate[300];
  struct stat st;
  int fd, i;
  gHost = fuzzOpenHost();
  snprintf(gzDir, sizeof gzDir, "%s", fuzzTempDir());
  snprintf(zTemplate, sizeof zTemplate, "%s/template.db", gzDir);
  snprintf(gzStore, sizeof gzStore, "%s/tx.db", gzDir);
  setenv("MENTAT_SYNCHRONOUS", "OFF", 1);
  for (i = 0; i < FUZZ_STORE_NTX; i++) {
    const char *az[2] = {zTemplate, azFuzzStoreTx[i]};
    int an[2] = {-1, -1};
    if (fuzzRun(gHost, "SELECT edn_t(?, ?)", 2, az, an, NULL) != SQLITE_OK) {
      fuzzDie("loading the template store", sqlite3_errmsg(gHost));
    }
  }
  storeCacheClear();
  fd = open(zTemplate, O_RDONLY);
  if (fd < 0 || fstat(fd, &st) != 0) fuzzDie("reading the template", zTemplate);
  gnTemplate = (size_t)st.st_size;
  gaTemplate = malloc(gnTemplate);
  if (gaTemplate == NULL || read(fd, gaTemplate, gnTemplate) != (ssize_t)gnTemplate) {
    fuzzDie("reading the template", zTemplate);
  }
  close(fd);
  fuzzRemoveStore(zTemplate);
}

static void fuzzWriteStore(void) {
  int fd = open(gzStore, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, gaTemplate, gnTemplate) != (ssize_t)gnTemplate) {
    fuzzDie("writing the scratch store", gzStore);
  }
  close(fd);
}

/* The integer the one-row, one-column query zSql gives on db (a failed
** query is a broken invariant: the tables must stay readable). */
static sqlite3_int64 fuzzInt(sqlite3 *db, const char *zSql) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 v = 0;
  if (sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL) != SQLITE_OK) fuzzDie(zSql, sqlite3_errmsg(db));
  if (sqlite3_step(pStmt) == SQLITE_ROW) v = sqlite3_column_int64(pStmt, 0);
  else fuzzDie(zSql, sqlite3_errmsg(db));
  sqlite3_finalize(pStmt);
  return v;
}

/* FNV-1a over every row of the store's tables, in rowid order, with each
** value's storage class. */
static uint64_t fuzzDigest(sqlite3 *db) {
  static const char *const azTable[] = {
    "datoms", "timelined_transactions", "idents", "schema", "known_parts",
    "fulltext_values", "mentat_managed_indexes"
  };
  uint64_t h = 1469598103934665603ULL;
  size_t t;
  for (t = 0; t < sizeof azTable / sizeof azTable[0]; t++) {
    char zSql[128];
    sqlite3_stmt *pStmt = NULL;
    snprintf(zSql, sizeof zSql, "SELECT * FROM %s ORDER BY rowid", azTable[t]);
    if (strcmp(azTable[t], "known_parts") == 0 || strcmp(azTable[t], "mentat_managed_indexes") == 0) {
      snprintf(zSql, sizeof zSql, "SELECT * FROM %s ORDER BY 1", azTable[t]);
    }
    if (sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL) != SQLITE_OK) fuzzDie(zSql, sqlite3_errmsg(db));
    while (sqlite3_step(pStmt) == SQLITE_ROW) {
      int i, nCol = sqlite3_column_count(pStmt);
      for (i = 0; i < nCol; i++) {
        const unsigned char *z;
        int n, k, eType = sqlite3_column_type(pStmt, i);
        h = (h ^ (uint64_t)eType) * 1099511628211ULL;
        if (eType == SQLITE_INTEGER) {
          h = (h ^ (uint64_t)sqlite3_column_int64(pStmt, i)) * 1099511628211ULL;
          continue;
        }
        z = eType == SQLITE_BLOB ? sqlite3_column_blob(pStmt, i) : sqlite3_column_text(pStmt, i);
        n = sqlite3_column_bytes(pStmt, i);
        for (k = 0; k < n; k++) h = (h ^ z[k]) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
      }
    }
    sqlite3_finalize(pStmt);
  }
  return h;
}

/* Attributes by their schema rows, through the idents of the core entids. */
#define FZ_ATTR(KW, VAL) \
  "(SELECT s.e FROM schema s JOIN idents ia ON ia.e = s.a AND ia.v = '" KW "'" \
  " JOIN idents iv ON iv.e = s.v AND iv.v = '" VAL "')"
#define FZ_CARD_MANY FZ_ATTR(":db/cardinality", ":db.cardinality/many")
#define FZ_ATTRS \
  "(SELECT s.e FROM schema s JOIN idents ia ON ia.e = s.a AND ia.v = ':db/valueType')"
#define FZ_UNIQUE \
  "(SELECT s.e FROM schema s JOIN idents ia ON ia.e = s.a AND ia.v = ':db/unique')"

static void fuzzCheckInvariants(sqlite3 *db) {
  sqlite3_stmt *pStmt = NULL;
  const char *zOk;
  if (fuzzInt(db, "SELECT count(*) FROM (SELECT 1 FROM datoms WHERE a IN " FZ_ATTRS
                  " AND a NOT IN " FZ_CARD_MANY " GROUP BY e, a HAVING count(*) > 1)") != 0) {
    fuzzDie("invariant broken", "an entity has two values of a cardinality-one attribute");
  }
  if (fuzzInt(db, "SELECT count(*) FROM datoms d WHERE NOT EXISTS (SELECT 1 FROM"
                  " timelined_transactions t WHERE t.e = d.e AND t.a = d.a AND t.v = d.v"
                  " AND t.value_type_tag = d.value_type_tag AND t.tx = d.tx AND t.added = 1"
                  " AND t.timeline IS 0)") != 0) {
    fuzzDie("invariant broken", "a current datom has no log row");
  }
  if (fuzzInt(db, "SELECT count(*) FROM (SELECT 1 FROM datoms WHERE a IN " FZ_UNIQUE
                  " GROUP BY a, value_type_tag, v HAVING count(DISTINCT e) > 1)") != 0) {
    fuzzDie("invariant broken", "a unique value belongs to two entities");
  }
  if (fuzzInt(db, "SELECT count(*) FROM idents i WHERE NOT EXISTS (SELECT 1 FROM datoms d"
                  " WHERE d.e = i.e AND d.a = i.a AND d.v = i.v)") != 0) {
    fuzzDie("invariant broken", "an idents row is not a current datom");
  }
  /* A tuple attribute's mirror row says :db.type/bytes where its datom says
  ** :db.type/tuple (README "Tuples": the Rust engine reads the blob as bytes). */
  if (fuzzInt(db, "SELECT count(*) FROM schema s WHERE NOT EXISTS (SELECT 1 FROM datoms d"
                  " WHERE d.e = s.e AND d.a = s.a AND (d.v = s.v OR ("
                  "s.a = (SELECT e FROM idents WHERE v = ':db/valueType')"
                  " AND s.v = (SELECT e FROM idents WHERE v = ':db.type/bytes')"
                  " AND d.v = (SELECT e FROM idents WHERE v = ':db.type/tuple'))))") != 0) {
    fuzzDie("invariant broken", "a schema row is not a current datom");
  }
  if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &pStmt, NULL) != SQLITE_OK
      || sqlite3_step(pStmt) != SQLITE_ROW) {
    fuzzDie("quick_check", sqlite3_errmsg(db));
  }
  zOk = (const char *)sqlite3_column_text(pStmt, 0);
  if (zOk == NULL || strcmp(zOk, "ok") != 0) fuzzDie("invariant broken: quick_check", zOk);
  sqlite3_finalize(pStmt);
}

/* A successful call's report: its tx id is the log's newest, past iPrevMax. */
static void fuzzCheckReport(sqlite3 *db, const char *zReport, sqlite3_int64 iPrevMax) {
  sqlite3_stmt *pStmt = NULL;
  sqlite3_int64 iTx;
  if (zReport == NULL) fuzzDie("invariant broken", "edn_t succeeded without a report");
  if (sqlite3_prepare_v2(db, "SELECT json_extract(?, '$.tx_id')", -1, &pStmt, NULL) != SQLITE_OK) {
    fuzzDie("json_extract", sqlite3_errmsg(db));
  }
  sqlite3_bind_text(pStmt, 1, zReport, -1, SQLITE_STATIC);
  if (sqlite3_step(pStmt) != SQLITE_ROW || sqlite3_column_type(pStmt, 0) != SQLITE_INTEGER) {
    fuzzDie("invariant broken: a report without an integer tx_id", zReport);
  }
  iTx = sqlite3_column_int64(pStmt, 0);
  sqlite3_finalize(pStmt);
  if (iTx <= iPrevMax) fuzzDie("invariant broken: a tx id not past the earlier ones", zReport);
  if (fuzzInt(db, "SELECT max(tx) FROM timelined_transactions") != iTx) {
    fuzzDie("invariant broken: the log's newest tx is not the reported one", zReport);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *aData, size_t nData) {
  FuzzParts parts;
  sqlite3 *pCheck = NULL;
  uint64_t hBefore;
  sqlite3_int64 iVersion;
  int i;
  if (nData > 65536) return 0;
  if (!fuzzSplit(&parts, aData, nData)) return 0;
  if (gHost == NULL) fuzzSetup();
  fuzzWriteStore();
  if (sqlite3_open_v2(gzStore, &pCheck, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
    fuzzDie("opening the scratch store", sqlite3_errmsg(pCheck));
  }
  if (ghTemplate == 0) ghTemplate = fuzzDigest(pCheck);
  /* Nothing but edn_t writes the store, so the digest after one call is
  ** the one before the next (the template's before the first), and a
  ** failed call that left it as it was left the invariants as they were.
  ** A failed call after which PRAGMA data_version is the same committed
  ** nothing, so its digest need not be taken. */
  hBefore = ghTemplate;
  iVersion = fuzzInt(pCheck, "PRAGMA data_version");
  for (i = 0; i < parts.nPart; i++) {
    const char *az[2] = {gzStore, parts.az[i]};
    int an[2] = {-1, parts.an[i]};
    char *zReport = NULL;
    sqlite3_int64 iPrevMax = fuzzInt(pCheck, "SELECT max(tx) FROM timelined_transactions");
    int rc = fuzzRun(gHost, "SELECT edn_t(?, ?)", 2, az, an, &zReport);
    sqlite3_int64 iNow = fuzzInt(pCheck, "PRAGMA data_version");
    if (rc == SQLITE_OK) {
      fuzzCheckReport(pCheck, zReport, iPrevMax);
      fuzzCheckInvariants(pCheck);
      hBefore = fuzzDigest(pCheck);
    } else if (iNow != iVersion && fuzzDigest(pCheck) != hBefore) {
      fuzzDie("invariant broken: a failed edn_t changed the store", sqlite3_errmsg(gHost));
    }
    iVersion = iNow;
    free(zReport);
  }
  sqlite3_close(pCheck);
  storeCacheClear();
  fuzzRemoveStore(gzStore);
  fuzzPartsFree(&parts);
  return 0;
}
