/*
** query.h — the query stage: options, compilation to one SQL statement on
** the store, and the running query that the `edn_q` table and scalar step.
** Takes query text, opts and a checked-out store connection; gives rows as
** SQL values or JSON. Calls the parser (ext/qparse), the SQL functions
** (ext/qfunc, for the regular-expression check), the schema, the store
** and pull stages.
**
** HOW IT WORKS
** qOptsParse() turns the `opts` JSON (SPEC.md §2.4) into EDN input values.
** qRunOpen() parses the query text (query_parse.c, into the AST of
** query_ast.h), compiles it (query_compile.c) to a QueryPlan — one SQL
** statement with every value a parameter — or takes the plan from the
** connection's cache (query_plan_cache.c, keyed by query text, input
** shape and schema generation), prepares/reuses the statement on the
** checked-out store connection, and binds the inputs (query_run.c).
** qRunStep() steps it; rows stream straight from the store statement. Result columns decode through the
** value tags the plan knows (value.h).
*/
#ifndef MENTAT_QUERY_H
#define MENTAT_QUERY_H

#include "store.h"
#include "query_ast.h"      /* FindKind */

/* One extra source of opts "sources" (SPEC.md §2.4; Datomic's `:in $ $2`):
** the query's own store under a filter of its own (zPath NULL), or another
** store file (attached to the reader connection as schema zDb). The
** filters are the source's alone: the opts' top-level asOf/since/history
** are those of $. qSourcesOpen fills pStore, pSchema and zDb. */
typedef struct QuerySource {
  const char *zName;                  /* "$2" (in the opts arena) */
  const char *zPath;                  /* a store file as given, or NULL */
  int bAsOf, bSince, bHistory;
  sqlite3_int64 iAsOf, iSince;
  const EdnValue *pAsOfInst, *pSinceInst;
  Store *pStore;                      /* zPath's store, one reference, or NULL */
  Schema *pSchema;                    /* the source's schema, one reference */
  char zDb[24];                       /* "" ($'s store), else "msrc_<hash of its path>" */
} QuerySource;

/* Parsed `opts`. Init before use; Reset frees (idempotent). Inputs are EDN
** values in the arena: JSON integer → EDN_INT, other number → EDN_DOUBLE,
** ":kw" strings → EDN_KEYWORD, other strings → EDN_STRING, arrays →
** EDN_VECTOR, {"edn": text} → the EDN read from text. */
typedef struct QueryOpts {
  EdnArena arena;
  int nInput;
  EdnValue **aInput;
  int bAsOf, bSince;
  sqlite3_int64 iAsOf, iSince;        /* tx ids */
  const EdnValue *pAsOfInst;          /* {"edn":"#inst ..."} form, or NULL */
  const EdnValue *pSinceInst;
  int bHistory;                       /* "history": true, Datomic's d/history */
  int bExplain;                       /* "explain": true (scalar edn_q): qExplain, no rows */
  int nSource;                        /* "sources", in document order */
  QuerySource *aSource;
  const char *zWith;                  /* "with": EDN tx-data text (in the arena), or NULL:
                                      ** Datomic's d/with, run by the call (vtab/call.c) */
  int nWith;
  int bWithReport;                    /* "withReport": true, the scalar edn_q adds the report */
  int bOwnPlan;                       /* set by the caller: the run compiles a plan of its own,
                                      ** outside the connection's cache (qSpillAll) */
  sqlite3 *pHostDb;                   /* a host store's connection (SPEC.md §3a), set by the
                                      ** caller: names no built-in has are its SQL functions
                                      ** (query_compile_host.c); NULL for file stores */
  int (*xInterrupted)(void *);        /* set by the caller: polled while a query compiles
                                      ** (every 64 steps) and once its SQL is prepared
                                      ** (qCacheInterrupted); non-zero stops the
                                      ** compile with SQLITE_INTERRUPT, "interrupted". NULL:
                                      ** never polled */
  void *pInterruptArg;                /* xInterrupted's argument */
  sqlite3 *pDb;                       /* set by the caller: the connection the query is
                                      ** prepared on, whose limits (sqlite3_limit) the
                                      ** compile keeps to; NULL: SQLite's defaults */
  sqlite3_uint64 aArenaBuf[1024];     /* the arena's first 8 KiB: a call's inputs
                                      ** without a malloc (qOptsInit) */
} QueryOpts;

void qOptsInit(QueryOpts *p);
void qOptsReset(QueryOpts *p);
/* zOpts may be NULL. Errors per SPEC.md §2.4 ("unknown option \"k\"", "opts:
** not valid JSON", ...) in *pzErr without the "edn_q: " prefix. */
int qOptsParse(QueryOpts *p, const char *zOpts, int nOpts, char **pzErr);

/* query_sources.c. Readies the sources of pOpts for a query on pMain
** (whose reader *ppConn and schema *ppSchema the caller holds): each source
** gets its schema, and each other store file is attached to *ppConn
** under its zDb. ATTACH cannot run inside the read transaction
** storeReader opened, so when one is missing the reader is ended, the
** files attached, and a reader checked out again: *ppConn and *ppSchema
** may change (the old ones are given back). Attachments stay on the
** connection for later queries. Errors (*pzErr, no "edn_q: " prefix):
** "source $2: no store file at x.db", a host store's db_path, too many
** files. A no-op without sources. */
int qSourcesOpen(Store *pMain, StoreConn **ppConn, Schema **ppSchema, QueryOpts *pOpts,
                 char **pzErr);
/* The refusals qSourcesOpen makes on a host store, for a host database
** that holds no store yet (read as an empty store, whose connection is no
** host's): another store file among the sources is the same error, so
** whether a query may read other files does not depend on whether edn_t
** ran. pMain: the store standing for it. SQLITE_OK when every source is
** a filter of $. */
int qSourcesRefuseFiles(Store *pMain, QueryOpts *pOpts, char **pzErr);

/* query_sources.c. Gives the sources of pOpts that read the query's own
** store (a filter of it, or its own path: those qSourcesOpen gave the
** main schema) the schema pSchema instead, one reference each: the run
** was planned again on it after its first step read a newer state than
** the reader was handed out at (qRunOpen). */
void qSourcesSetMain(QueryOpts *pOpts, Schema *pSchema);

/* query_sources.c. Readies the sources of pOpts beside a with-database
** (Datomic's d/with gives $ a database value of its own; the other
** sources are the store as it is): each must read pMain's store (a source
** of the same store under a filter, or a path naming its file), whose
** schema before the with-transaction is pSchema; another store file is an
** error ("\"sources\" $2: another store file cannot be read beside
** \"with\" ..."). Then, once the with-transaction is applied as tx
** iBasis + 1, qSourcesWithBasis reads each source as of iBasis at the
** latest, so none sees it. A source's #inst asOf must be a tx id by then. */
int qSourcesWith(Store *pMain, Schema *pSchema, QueryOpts *pOpts, char **pzErr);
void qSourcesWithBasis(QueryOpts *pOpts, sqlite3_int64 iBasis);

typedef struct QueryRun QueryRun;

/* query_explain.c. Appends to pOut, instead of running zQuery, the JSON
** document {"sql": the compiled SQL, "plan": [{"id", "parent", "detail"}
** ...] (SQLite's EXPLAIN QUERY PLAN rows of it, in its order), "params":
** [the values ?1..?N are bound to, as the store holds them: instants as
** epoch µs, booleans 0/1, keywords and idents as ":ns/name", entids as
** integers, blobs as {"blob": "<HEX>"}]}, and with opts "sources" a last key
** "sources": {"$": {"db": zDbPath}, "$2": {"db": its path as given,
** "attached": "msrc_..."}, ...} (query_explain.c). The plan comes from (and
** goes to) pConn's cache as qRunOpen's does. Errors as qRunOpen's, in *pzErr
** without a prefix. */
int qExplain(StoreConn *pConn, Schema *pSchema, const char *zDbPath, const char *zQuery,
             int nQuery, const QueryOpts *pOpts, sqlite3_str *pOut, char **pzErr);

/* Compiles (or finds in pConn's cache) and starts zQuery on pConn.
** pConn must stay checked out until qRunClose(). pSchema is the snapshot
** storeReader() returned; the run keeps its own reference. pOpts must
** outlive the run: its strings are bound without a copy (valueBindStatic),
** so qOptsReset() it only after qRunClose(), which clears the bindings.
** On a storeReaderLazy connection the run may be planned again on a newer
** schema after its first step; the sources of pOpts that read pConn's own
** store then take that schema too (qSourcesSetMain).
** Errors in *pzErr (sqlite3_malloc'd) without the "edn_q: " prefix, e.g.
** "line 1 col 30: unbound variable ?x in predicate". */
int qRunOpen(StoreConn *pConn, Schema *pSchema, const char *zQuery, int nQuery,
             QueryOpts *pOpts, QueryRun **ppRun, char **pzErr);

/* Readies a run that stepped to SQLITE_DONE for another run of the same
** query on the same connection, which stayed checked out meanwhile and was
** readied again (storeReaderResume), with pSchema the schema it was
** handed: SQLITE_OK, the next qRunStep starts over (its first step checked
** on a lazy reader, as after qRunOpen). The run's opts are the same object:
** unchanged since qRunOpen (bRebind 0: the bindings still point into
** them), or parsed again from a new text whose qOptsShape equals the old
** one's (bRebind 1: the inputs bound again, as the cached plan of that
** shape would be). SQLITE_NOTFOUND when the run cannot start over as it is
** (another schema, its rest set aside, a plan of its own, pull patterns
** among the inputs to rebind): close it and open a new run. Another code:
** binding failed (*pzErr), close it. */
int qRunRestart(QueryRun *p, Schema *pSchema, int bRebind, char **pzErr);

/* The shape of pOpts's inputs and time options as a few bytes in aBuf
** (nBuf bytes): what the plan cache keys plans by besides the query text
** and schema (query_plan_cache.c), for opts whose inputs are all scalars
** and that have no sources. Returns the length, or -1 for any other opts
** (collections, sources, "with", a shape longer than nBuf). */
int qOptsShape(const QueryOpts *p, unsigned char *aBuf, int nBuf);

/* SQLITE_ROW with a row ready, SQLITE_DONE, or an error (*pzErr). */
int qRunStep(QueryRun *p, char **pzErr);

FindKind qRunFindKind(const QueryRun *p);
/* A . or tuple find whose rows after the first are stepped for their errors
** (a failing function meets every row): step once more after the row. */
int qRunDrainsOne(const QueryRun *p);
int qRunColumnCount(const QueryRun *p);           /* find elements */
const char *qRunColumnName(const QueryRun *p, int i);  /* "?a", "(count ?x)" */
/* Non-NULL when the query has :keys/:strs/:syms: the key for element i as
** it appears in the JSON map (":name" for :keys, "name" for :strs). */
const char *qRunKeyName(const QueryRun *p, int i);
/* True for a relation whose only element is an aggregate (SPEC.md §2.2). */
int qRunIsSingleAggregate(const QueryRun *p);

/* Current row: native SQL value of element i (the `cN` columns). A text,
** BLOB or JSON value longer than the SQLITE_LIMIT_LENGTH of pCtx's
** connection is SQLITE_TOOBIG with no result set, so the table reports
** it as its own error instead of SQLite's bare "string or blob too big". */
int qRunColumnResult(QueryRun *p, int i, sqlite3_context *pCtx);
/* Current row: JSON of element i (SPEC.md §2.3), appended to pOut. */
int qRunColumnJson(QueryRun *p, int i, sqlite3_str *pOut);
/* Current row as the `value` column: array for REL/TUPLE, the element
** itself for COLL/SCALAR, an object for :keys. */
int qRunRowJson(QueryRun *p, sqlite3_str *pOut);

/* The message of the last failed qRunColumnJson /
** qRunColumnResult / qRunRowJson on this run (a pull error such as
** "pull pattern: ..."), or NULL. Owned by the run; valid until the next
** call on it. Those three functions have no pzErr, so callers read this. */
const char *qRunErrMsg(const QueryRun *p);

/* query_spill.c. Sets the rest of the result aside so the run no longer
** needs the store: the current row and every later one (with the JSON of
** pull elements, which read the store) are copied into a private temporary
** database, the store statement is reset, and the run goes on from the
** copy with the same columns. Used when a host cursor left open would
** otherwise pin the store's WAL. Needs a current row (after qRunStep gave
** SQLITE_ROW). An error in the store statement after some rows is kept and
** reported by qRunStep after them, as streaming would. SQLITE_OK: the run
** no longer needs the store (the caller may end its read transaction) —
** either the rest was copied, or the copy failed after the store statement
** moved on, and the next qRunStep reports that failure (*pzErr says it
** too). An error code: the copy could not start and the run is unchanged.
** Budget: at most nMaxRows rows (<= 0: no limit) and until pBudget is
** spent (the calling thread's CPU time, checked after each row; NULL: no
** limit),
** since the caller may be another thread's writer waiting on this run. A
** rest longer than that is only partly copied: *pbAll (may be NULL) is
** then 0 and the run still needs the store — the copied rows come first,
** then the store statement, still on its snapshot, gives the rows after
** them. *pbAll is 1 otherwise. */
int qSpillRest(QueryRun *p, sqlite3_int64 nMaxRows, ConfigBudget *pBudget, int *pbAll,
               char **pzErr);

/* query_spill.c. qSpillRest without a budget, for a run whose store
** connection is about to be given up (the edn_q table under "with", whose
** write is rolled back before the host reads the rows): SQLITE_OK only when
** every row is set aside and the run is detached from its store
** connection (its plan's statement finalized: the run must have been
** opened with opts bOwnPlan), so it never touches it again, not even to
** close; an error (the copy's, or the store statement's after some rows,
** in *pzErr) otherwise, and the caller closes the run while the connection
** is still its. Needs a current row. */
int qSpillAll(QueryRun *p, char **pzErr);

/* Resets the statement (so it holds no read snapshot) and frees the run.
** NULL is a no-op. Does not return pConn to the pool. */
void qRunClose(QueryRun *p);

/* query_plan_cache.c. The pull statements cached on a checked-out store
** connection (kept with its compiled plans and freed with them), so
** edn_pull prepares nothing on a repeated call. NULL on OOM; pass the
** result to pullEntityEx. */
struct PullCache;
struct PullCache **qCachePulls(StoreConn *pConn);

/* A result string kept with a checked-out store connection (freed with its
** plans), so the SQL functions build each JSON result at its end and copy
** it out instead of growing a new string per call (see sqlioOutBegin in
** vtab/sqlio.h). NULL on OOM. The slot may hold NULL; its owner replaces
** the string at will. */
sqlite3_str **qCacheOutBuf(StoreConn *pConn);

/* query_plan_cache.c. A statement for zSql[0..nSql) on a checked-out store
** connection, for the SQL objects that run SQL of their own on the store
** (edn_datoms, edn_log): the one kept there under that text (prepared and
** kept on first use, the least recently used of more than 32 finalized),
** or, when the kept one is running (a nested cursor), a new one the caller
** owns (*pbOwn = 1: finalize it; otherwise reset it and leave it). Errors:
** "cannot prepare: <SQLite's message>" in *pzErr. */
int qCacheStmt(StoreConn *pConn, const char *zSql, int nSql, sqlite3_stmt **ppStmt, int *pbOwn,
               char **pzErr);
/* qCacheStmt for a text whose hash h (qCacheStmtHash) the caller keeps:
** a caller that runs the same text call after call hashes it once. */
unsigned qCacheStmtHash(const char *zSql, int nSql);
int qCacheStmtHashed(StoreConn *pConn, const char *zSql, int nSql, unsigned h,
                     sqlite3_stmt **ppStmt, int *pbOwn, char **pzErr);

#endif /* MENTAT_QUERY_H */
