/*
** tx_context.h — the transactor's private types and its shared context
** (tx_context.c), included by the driver and the stages only.
**
** A transaction is a Tx: the EDN forms are expanded (tx_expand.c) into a flat
** array of TxOp, whose entity and ref-value places are either known entids or
** indexes into the tempid table or the lookup-ref table; tx_lookup.c resolves
** the lookup refs in bulk. tx_resolve.c turns every place into an entid
** (upserts, allocation) and expands retractEntity / retract-attribute / cas
** against the database as it was before the transaction; tx_write.c checks
** the ops against each other and the store and writes them; tx_schema.c keeps
** the `idents`/`schema` mirrors and per-attribute indexes after schema
** changes. tx.c drives the stages; tx_context.c is what they share.
*/
#ifndef MENTAT_TX_CONTEXT_H
#define MENTAT_TX_CONTEXT_H

#include <stdint.h>
#include "config.h"
#include "tx.h"

/* Where an entity (or a ref value) is: a known entid, a tempid, or a lookup
** ref waiting for the batched store lookup (tx_lookup.c). */
#define TXP_ENTID  0
#define TXP_TEMP   1
#define TXP_LOOKUP 2
typedef struct TxPlace {
  int eKind;            /* TXP_* */
  int iTemp;            /* index into Tx.aTemp (TXP_TEMP) or Tx.aLook (TXP_LOOKUP) */
  sqlite3_int64 e;      /* entid when TXP_ENTID (after resolution, always) */
} TxPlace;

/* Operations. RETRACT_ATTR, RETRACT_ENTITY and CAS are replaced by plain
** ADD/RETRACT ops before the checks (txResolveDerived). */
#define TXOP_ADD            0
#define TXOP_RETRACT        1
#define TXOP_RETRACT_ATTR   2   /* [:db/retract e a]: all values of a */
#define TXOP_RETRACT_ENTITY 3
#define TXOP_CAS            4

typedef struct TxOp {
  unsigned char eOp;        /* TXOP_* */
  unsigned char bDrop;      /* replaced, duplicate or no-op: not written */
  unsigned char bOldNil;    /* CAS: the old value must be absent */
  unsigned char bFts;       /* iFts holds the fulltext_values rowid of v */
  unsigned char bNew;       /* ADD: not in the store, will be inserted */
  unsigned char bUpsertSeen;/* ADD on identity attr: store probe done */
  unsigned char bTupleDerived; /* a composite tuple's value the transactor made */
  unsigned char bTuplePending; /* ... whose ref components are not all resolved yet */
  int line, col;            /* the form's position, for messages */
  TxPlace e;
  const Attr *pAttr;        /* NULL only for RETRACT_ENTITY */
  TxPlace vRef;             /* value place for ref attributes */
  TypedValue v;             /* value (ref: v.i after resolution) */
  TxPlace vOldRef;          /* CAS old value, ref attributes */
  TypedValue vOld;          /* CAS old value */
  sqlite3_int64 iFts;
  sqlite3_int64 eUpsert;    /* store entity holding this identity value, 0 none */
  const int *aTupleSrc;     /* derived composite before resolution: the op of each
                            ** component (-1: nil), in the arena; else NULL */
} TxOp;

/* A tempid. Keyed ones appear in the report; anonymous ones (maps without
** :db/id, #db/id without a number) do not. Tempids that upsert to the
** same new identity value are merged (union-find through iAlias). */
typedef struct TxTemp {
  const char *zKey;         /* NULL if anonymous; arena-owned */
  int nKey;
  int iAlias;               /* self when a root */
  int bEntity;              /* the entity of an assertion (or reverse ref) */
  int bRetract;             /* the entity of a retraction or cas */
  int line, col;            /* first appearance */
  sqlite3_int64 iPart;      /* partition entid it is allocated from */
  sqlite3_int64 e;          /* resolved entid or 0 */
} TxTemp;

/* A distinct lookup ref [attr value] of the transaction. Equal ones share
** one entry, so each is looked up once. */
typedef struct TxLookup {
  const Attr *pAttr;        /* a :db/unique attribute, not fulltext */
  TypedValue v;             /* stored encoding; text in the arena or input */
  const EdnValue *pForm;    /* the first form naming it, for messages */
  sqlite3_int64 e;          /* the entity holding it, 0 until found */
} TxLookup;

/* A row of known_parts. */
#define TX_MAX_PARTS 32
typedef struct TxPart {
  char zName[64];
  sqlite3_int64 ePart;      /* the partition's ident entid, 0 if none */
  sqlite3_int64 iStart, iEnd, iIdx;
  sqlite3_int64 iIdx0;      /* idx when the transaction began */
  sqlite3_int64 iRowid;     /* the row's */
  int bDirty;
} TxPart;

/* 1 when n (>= 1) more ids can be given out from pPart: ids idx..idx+n-1
** within end, and the mark idx+n representable (a partition ending at
** INT64_MAX never gives out its last id: the mark would overflow). Computed
** without signed overflow, in unsigned arithmetic. */
static inline int txPartRoom(const TxPart *pPart, sqlite3_int64 n) {
  sqlite3_int64 iLast = pPart->iEnd < INT64_MAX ? pPart->iEnd : INT64_MAX - 1;
  if (pPart->iIdx > iLast) return 0;
  return (sqlite3_uint64)iLast - (sqlite3_uint64)pPart->iIdx >= (sqlite3_uint64)(n - 1);
}

/* Cached statements on the writer connection (pConn->pTxCache). */
enum {
  TXS_PARTS = 0, TXS_SET_PART, TXS_LOOKUP_UNIQUE, TXS_EXISTS, TXS_INSERT,
  TXS_DELETE, TXS_LOG, TXS_LOG_OLD, TXS_DELETE_OLD, TXS_ENTITY_DATOMS,
  TXS_REFS_TO, TXS_ATTR_VALUES, TXS_FTS_FIND, TXS_FTS_ADD, TXS_FTS_TEXT,
  TXS_LAST_INSTANT,
  TXS_INSERT_BATCH, TXS_LOG_BATCH,   /* TX_BATCH rows per statement */
  TXS_FTS_MATCH, TXS_FTS_INSERT,
  TXS_LOOKUP_BATCH,                  /* TX_LOOKUP_BATCH values per statement */
  TXS_LOG_FORGET, TXS_LOG_FORGET_OLD, /* :db/noHistory: drop superseded log rows */
  TXS_PART_MAX,                      /* the largest id in use in a partition */
  TXS_CARD_ONE,                      /* the values of [e a], each marked if it is v */
  TXS_DELETE_ROWID,                  /* a datom read by TXS_CARD_ONE */
  TXS_COUNT
};
/* Rows per multi-row INSERT: each statement start/halt opens and closes a
** cursor per index and a statement journal, which dominated bulk loads. */
#define TX_BATCH 16
/* Lookup-ref values resolved per statement (a VALUES list joined to the
** unique-value index). */
#define TX_LOOKUP_BATCH 64

typedef struct Tx {
  StoreConn *pConn;
  sqlite3 *db;
  const Schema *pSchema;    /* snapshot before the transaction */
  EdnArena *pArena;
  const EdnValue *pRoot;    /* the tx-data vector */
  TxOp *aOp; int nOp, nOpAlloc;
  TxTemp *aTemp; int nTemp, nTempAlloc;
  int *aHash; int nHash;    /* keyed tempids: slot -> index+1 */
  TxLookup *aLook; int nLook, nLookAlloc;
  int *aLookHash; int nLookHash;   /* lookup refs: slot -> index+1 */
  TxPart aPart[TX_MAX_PARTS]; int nPart;
  ConfigPoll poll;          /* the caller's interrupt (txPoll) */
  int iPartTx, iPartUser, iPartDb;   /* indexes into aPart, -1 if absent */
  sqlite3_int64 iTx;        /* this transaction's entid */
  sqlite3_int64 iInstant;   /* :db/txInstant, µs */
  int bSchema;              /* some op touched :db/ident or attribute flags */
  Schema *pTupleSchema;     /* the snapshot after installing the tuple
                            ** vocabulary (pSchema then points at it), or NULL */
  char **pzErr;
} Tx;

/* The context (tx_context.c): statements, errors, ops, tempids, lookup refs, values. */
int txStmt(Tx *p, int eStmt, sqlite3_stmt **ppStmt);
int txStmtReady(Tx *p, int eStmt);   /* prepared, not reset (before a write's first write) */
/* The multi-row INSERT OR FAIL of nRows (1..TX_BATCH) datoms rows (bLog 0,
** 9 parameters a row, as txBindDatom binds them) or log rows (bLog 1, 6 a
** row); reset, bindings cleared. bReady: prepare only (txStmtReady). */
int txStmtRows(Tx *p, int bLog, int nRows, int bReady, sqlite3_stmt **ppStmt);
void txCacheFit(Tx *p);   /* the writer's page cache for this transaction's size */
/* THE LAST WRITE (tx_context.c): known_parts and the :db/txInstant as this
** connection's last transaction left them. txLastSave keeps them after a
** transaction's stages all succeeded; txLastParts fills p->aPart from them
** (1) or says to read the table (0); txLastInstant gives the previous
** transaction's instant (1) or says to read it (0). Both answer 1 only
** when the store vouches that the write finds that state
** (StoreConn.bContinues). */
void txLastSave(Tx *p);
int txLastParts(Tx *p);
int txLastInstant(Tx *p, sqlite3_int64 *piPrev);
int txErr(Tx *p, int line, int col, const char *zFmt, ...);
int txSqlErr(Tx *p, const char *zWhat);
int txNewOp(Tx *p, TxOp **ppOp);
/* SQLITE_INTERRUPT (message "interrupted") once the caller's host was
** interrupted, asked time-gated (configPoll): every op made (txNewOp) and
** every statement fetched (txStmt) asks, so the expansion, the lookups and
** the writes of a big transaction stop about a millisecond after an
** interrupt, where each statement alone is too short for the progress
** handler (issue 19 R2). */
int txPoll(Tx *p);
/* qsort(a, n, sz, xCmp) that polls as txPoll does: the sorts of a big
** transaction's ops take milliseconds each (60,000 ops: ~10 ms). Once the
** caller is interrupted the comparisons answer "equal" at once, so the
** sort ends in a fraction of its time in no useful order, and txSort
** returns SQLITE_INTERRUPT (message "interrupted"). */
int txSort(Tx *p, void *a, size_t n, size_t sz, int (*xCmp)(const void *, const void *));
int txTempRoot(Tx *p, int i);   /* a tempid's representative after unification */
/* The entry for lookup ref [pAttr *pV] in Tx.aLook, created on first use. */
int txLookupAdd(Tx *p, const EdnValue *pForm, const Attr *pAttr, const TypedValue *pV,
                int *piLook);
int txIsFresh(const Tx *p, sqlite3_int64 e);
int txIsSchemaAttr(sqlite3_int64 a);
/* The rules every op obeys, whichever stage writes it (built-ins, past
** txInstants, attribute changes Datomic refuses); notes schema changes. */
int txCheckOp(Tx *p, const TxOp *pOp);
int txValueBindStored(Tx *p, sqlite3_stmt *pStmt, int i, const TxOp *pOp);
void txValuePrint(sqlite3_str *pOut, const Schema *pSchema, const TypedValue *pV);
int txValueCmp(const TypedValue *a, const TypedValue *b);
int txFtsFind(Tx *p, const char *z, int n, int bCreate, sqlite3_int64 *piRowid, int *pbFound);
int txValueFromStored(Tx *p, const Attr *pAttr, sqlite3_stmt *pStmt, int iCol,
                      TypedValue *pOut, sqlite3_int64 *piFts, unsigned char *pbFts);

/* The stages, in the order the driver (tx.c) runs them; each calls only the
** context above. */
int txExpand(Tx *p, const EdnValue *pRoot);        /* tx_expand.c: forms -> ops */
int txLookupResolve(Tx *p);                        /* tx_lookup.c: lookup refs, in bulk */
/* The error for lookup ref pRef that names no entity, at its line and
** column (tx_lookup.c): "lookup ref [...] does not resolve". */
int txLookupUnresolved(Tx *p, const EdnValue *pRef);
int txResolve(Tx *p);                              /* tx_resolve.c: tempids -> entids */
int txResolveDerived(Tx *p);                       /* ... derived ops -> plain ops */
int txSchemaPrepare(Tx *p);                        /* tx_schema.c: before the writes */
int txWriteInstant(Tx *p);                         /* tx_write.c: the tx's :db/txInstant */
int txWrite(Tx *p);                                /* ... checks and writes */
int txSchemaFinish(Tx *p, Schema **ppNew);         /* tx_schema.c: mirrors, indexes */

/* Tuples (tx_tuple.c). txTupleInstall runs before txExpand: it installs
** the tuple vocabulary (schema.h) when the input names it and the store
** lacks it. txTupleValue converts a value for any attribute (a tuple by
** its element types), reporting errors at the offending form.
** txTupleDirect refuses a user's op on a composite. txTupleUpsertOps
** (after txLookupResolve) gives each new entity the identity composites
** its own values make, so txResolve upserts through them;
** txTupleDerive (after txResolveDerived) drops those and derives every
** touched composite from the store and the transaction's ops.
** txTupleMetaKind says which tuple definition attribute pAttr is (a
** TUPLE_* kind, 0 for none); txTupleCheckDef validates attribute e's
** final tuple definition (eType: its :db/valueType entid). */
int txTupleInstall(Tx *p);
int txTupleValue(Tx *p, const EdnValue *pV, const Attr *pAttr, const char *zAttr, TypedValue *pOut);
int txTupleDirect(Tx *p, const Attr *pAttr, const EdnValue *pK);
int txTupleUpsertOps(Tx *p);
/* The value of a derived identity composite with its components' refs as
** resolved so far (txResolve's upserts cascade through it): 1 and *pV
** (also kept in the op), 0 while a ref is an unresolved tempid, -1 when
** out of memory. */
int txTupleValueNow(Tx *p, TxOp *pOp, TypedValue *pV);
int txTupleDerive(Tx *p);
int txTupleMetaKind(const Tx *p, const Attr *pAttr);
int txTupleCheckDef(Tx *p, sqlite3_int64 e, const char *zName, sqlite3_int64 eType, int bMany,
                    int *pbTuple);

#endif /* MENTAT_TX_CONTEXT_H */
