/*
** edn.h — the EDN value type, its arena, the reader and the printers.
**
** Everything above this layer (transactor, query parser, pull) works on
** EdnValue trees, so this header depends on nothing but SQLite's API (for
** sqlite3_malloc and sqlite3_str). The reader is testable without a database.
**
** Memory: every node and string of a parse lives in one EdnArena and is freed
** at once by ednArenaReset(). That keeps clean-up flat (a 100,000-deep partial
** parse is freed without recursion, peer-fault B34) and makes a parse cheap.
*/
#ifndef MENTAT_EDN_H
#define MENTAT_EDN_H

#include <stdarg.h>
#include <stddef.h>
#include "sqlite_api.h"

/* Nesting cap for the reader and for every recursive walk of a tree: deeper
** input would risk the host's C stack. SPEC §7 fixes it at 256. */
#define EDN_MAX_DEPTH 256

typedef enum EdnType {
  EDN_NIL = 0,
  EDN_BOOL,      /* u.b: 0 or 1 */
  EDN_INT,       /* u.i: 64-bit; literals out of range are read errors */
  EDN_DOUBLE,    /* u.d: finite, or ##Inf / ##-Inf / ##NaN */
  EDN_STRING,    /* u.s: UTF-8, may hold NUL bytes (n counts them) */
  EDN_CHAR,      /* u.i: the Unicode code point of \c, \newline, \u00E9 */
  EDN_KEYWORD,   /* u.s: text WITH the leading colon, e.g. ":person/name" */
  EDN_SYMBOL,    /* u.s: e.g. "?x", "_", "...", "clojure.string/blank?" */
  EDN_LIST,      /* u.c: ( ... ) */
  EDN_VECTOR,    /* u.c: [ ... ] */
  EDN_MAP,       /* u.c: { ... }, n = 2 * pairs, a[2k] key, a[2k+1] value */
  EDN_SET,       /* u.c: #{ ... } */
  EDN_INST,      /* u.i: #inst, microseconds since the Unix epoch (UTC) */
  EDN_UUID,      /* u.uuid: #uuid, 16 bytes in RFC 4122 order */
  EDN_TAGGED     /* u.t: any other #tag value, e.g. #db/id [:db.part/user -1].
                 ** #bytes "hex" is checked and decoded by the reader: zTag
                 ** "bytes", p an EDN_STRING holding the raw bytes (any bytes,
                 ** n counts them); the printers write it back as hex. */
} EdnType;

typedef struct EdnValue EdnValue;
struct EdnValue {
  EdnType type;
  int line, col;            /* 1-based position of the form's first character */
  union {
    int b;
    sqlite3_int64 i;
    double d;
    struct { const char *z; int n; } s;      /* z is also NUL-terminated */
    unsigned char uuid[16];
    struct { EdnValue **a; int n; } c;
    struct { const char *zTag; EdnValue *p; } t;  /* zTag without '#', e.g. "db/id" */
  } u;
};

/* An arena: chunks from sqlite3_malloc64, freed together. Init before use;
** Reset frees everything (idempotent) and leaves it ready for reuse. */
typedef struct EdnChunk EdnChunk;
typedef struct EdnArena {
  EdnChunk *pChunk;   /* newest chunk first */
  size_t nFree;       /* bytes left in pChunk (or in pFixed before any chunk) */
  char *pFree;        /* next free byte in pChunk (or pFixed) */
  char *pFixed;       /* the owner's first buffer (ednArenaInitWith), or NULL */
  size_t nFixed;
} EdnArena;

void ednArenaInit(EdnArena *p);
/* An arena that allocates from pBuf (nBuf bytes, 8-aligned, owned by the
** caller and outliving the arena) before its first chunk, and again after
** each Reset: a small parse per call then costs no malloc. */
void ednArenaInitWith(EdnArena *p, void *pBuf, size_t nBuf);
void ednArenaReset(EdnArena *p);
/* n bytes, 8-aligned, or NULL on OOM. Lives until the next Reset. */
void *ednArenaAlloc(EdnArena *p, size_t n);
/* A NUL-terminated copy of z[0..n) in the arena, or NULL on OOM. */
char *ednArenaStrdup(EdnArena *p, const char *z, int n);

/* Constructors for building trees in code (inputs from JSON, rewrites).
** Each returns NULL on OOM; line/col are 0. */
EdnValue *ednNew(EdnArena *p, EdnType type);
EdnValue *ednNewInt(EdnArena *p, sqlite3_int64 i);
EdnValue *ednNewString(EdnArena *p, EdnType type, const char *z, int n); /* STRING/KEYWORD/SYMBOL */
EdnValue *ednNewColl(EdnArena *p, EdnType type, int n);  /* a[] allocated, zeroed */

/* Where and why a read failed. zMsg is plain text without position;
** callers format "edn_t: line L col C: <zMsg>". */
typedef struct EdnError {
  int line, col;
  char zMsg[160];
} EdnError;

/* Reads every top-level form of z[0..n) (n counts bytes; NUL bytes outside
** strings are errors, peer-fault B33). Results live in the arena.
** Returns SQLITE_OK, SQLITE_ERROR (bad input, *pErr filled), SQLITE_NOMEM.
** Invalid UTF-8, lone surrogates, integer overflow, duplicate map keys or set
** elements, nesting past EDN_MAX_DEPTH and dangling #_ are errors. */
int ednReadAll(EdnArena *pArena, const char *z, int n,
               EdnValue ***paForm, int *pnForm, EdnError *pErr);

/* As ednReadAll but exactly one form is required ("expected one EDN form"
** / "no EDN form in input" otherwise). */
int ednReadOne(EdnArena *pArena, const char *z, int n,
               EdnValue **ppForm, EdnError *pErr);

/* Replaces *pzErr (freeing the previous message) with "<zPrefix>line L col
** C: <message>", the position left out when line <= 0, zPrefix may be "".
** The one way every stage reports an error at a place in EDN input.
** Returns SQLITE_ERROR, or SQLITE_NOMEM (with *pzErr NULL) when the message
** cannot be built. */
int ednErrorV(char **pzErr, const char *zPrefix, int line, int col, const char *zFmt, va_list ap);

/* Why zKw[0..n) (starting with ':') is not a keyword the EDN reader
** accepts, in the reader's words ("empty name", "unexpected character ' '"),
** or NULL when it is one. May format into zBuf (nBuf bytes, 48 are enough).
** For keywords that arrive as text outside EDN (JSON inputs). */
const char *ednKeywordProblem(const char *zKw, int n, char *zBuf, int nBuf);

/* Appends EDN text for p (round-trips through ednReadOne). */
void ednPrint(sqlite3_str *pOut, const EdnValue *p);

/* Appends the JSON form of p as SPEC §2.3 shows values: keywords ":ns/n",
** instants "2025-03-04T05:06:00.000000Z", uuids hyphenated, sets and lists
** as arrays, maps as objects with printed keys, chars as 1-char strings,
** symbols as their name, other tagged values as their EDN text in a string.
** Doubles: shortest round-trip digits (at most 17), ±infinity as ±1e999,
** NaN as null (see ednJsonDouble). */
void ednPrintJson(sqlite3_str *pOut, const EdnValue *p);

/* Prints one value for ednCanonOrder (pArg is the caller's). */
typedef void (*EdnPrintFn)(sqlite3_str *pOut, const EdnValue *p, void *pArg);

/* One item of a set (or entry of a map) in canonical order: z[0..n) is
** what xPrint printed for it, for a map entry its key's text z[0..nKey)
** then its value's z[nKey..n) (a set's item: nKey == n); i is its
** position in p->u.c.a (a map entry's key). */
typedef struct EdnCanonItem { char *z; int nKey; int n; int i; } EdnCanonItem;

/* The canonical order of set or map p's items (a map's entries, by key,
** then value), sorted by the bytes xPrint prints for each, so two equal
** collections written in two orders print alike (Clojure's hash order is
** unspecified; README, Decisions). The caller appends the texts rather
** than printing the items again. Returns a malloc'd array of *pn items
** (free it with ednCanonFree), or NULL with *pn 0 when p has none or
** memory ran out (the caller then prints them as written). */
EdnCanonItem *ednCanonOrder(const EdnValue *p, EdnPrintFn xPrint, void *pArg, int *pn);

/* Frees ednCanonOrder's array of n items (NULL is fine). */
void ednCanonFree(EdnCanonItem *a, int n);

/* Appends a double as a JSON number: the fewest significant digits (at most
** 17) that read back to the same double, always with '.' or 'e' (so 2.0 stays a
** double), ±infinity as ±1e999 (JSON readers give back infinity), NaN as null
** (JSON has no NaN). */
void ednJsonDouble(sqlite3_str *pOut, double d);

/* Appends the decimal form of v to pOut, as "%lld" would: rows print many
** integers, and going through printf's format parsing for each one shows
** in a streamed result's profile (bench/findings.md). */
void ednAppendInt(sqlite3_str *pOut, sqlite3_int64 v);

/* Appends s[0..n) as a JSON string literal with escapes. */
void ednJsonString(sqlite3_str *pOut, const char *z, int n);

/* Instants: µs since epoch <-> RFC 3339. Format gives 6 fraction digits and
** 'Z' (SPEC §2.3), buffer of 40. Parse takes offsets and any fraction;
** returns 0 on success, non-zero if not a valid timestamp. */
void ednFormatInstant(sqlite3_int64 us, char *zBuf);
int ednParseInstant(const char *z, int n, sqlite3_int64 *pUs);

/* UUIDs: 16 bytes <-> "8-4-4-4-12" lowercase hex (37-byte buffer). */
void ednFormatUuid(const unsigned char *a, char *zBuf);
int ednParseUuid(const char *z, int n, unsigned char *a);

/* Small predicates used everywhere. */
int ednIsKeyword(const EdnValue *p, const char *zKw);    /* exact ":a/b" */
int ednIsSymbol(const EdnValue *p, const char *zSym);
int ednIsVar(const EdnValue *p);                         /* symbol starting '?' */
int ednEqual(const EdnValue *a, const EdnValue *b);      /* structural */
/* "a string", "an integer", "a map" ...: the kind of a form, for error
** messages ("expected :db.type/long, got a string"). Static text. */
const char *ednKindName(const EdnValue *p);

/* Length of the valid UTF-8 sequence at z[i] (1..4; i < n), or 0 if it is
** invalid: overlong forms, UTF-16 surrogates and code points past U+10FFFF
** are rejected (RFC 3629). The reader's check, shared with the opts
** parser (cJSON passes any byte through). */
int ednUtf8Len(const unsigned char *z, int n, int i);
/* The code point of the valid sequence of length L (from ednUtf8Len) at z. */
int ednUtf8Decode(const unsigned char *z, int L);
/* Writes code point cp (at most U+10FFFF) as UTF-8 to zOut (room for 4
** bytes); returns the bytes written. */
int ednUtf8Encode(unsigned cp, char *zOut);
/* The value of the 4 hex digits at z (a \uXXXX escape's), or -1. */
/* The value of hex digit c (either case), or -1. */
int ednHexDigit(unsigned char c);
int ednHex4(const unsigned char *z);
/* Finds a duplicate (ednEqual) among every step-th element of a[0..n)
** (step 2: a map's keys): *piDup is the later index of the first duplicate
** found, or -1. SQLITE_NOMEM if its scratch array cannot be had. */
int ednFindDup(EdnValue **a, int n, int step, int *piDup);

#endif /* MENTAT_EDN_H */
