/*
** sqlio.h — the SQL functions' arguments in and results out.
**
** Takes sqlite3_value arguments and internal results (an SQLite code with
** a message, or JSON text in a sqlite3_str); gives the text of an argument
** with its explicit length, and sets the sqlite3_context result: JSON text
** with subtype 74, or an error that starts with the function's name
** (../shared/SPEC.md §7). Calls SQLite only.
*/
#ifndef MENTAT_SQLIO_H
#define MENTAT_SQLIO_H

#include <stddef.h>
#include "sqlite_api.h"

/* The text of pVal in *pz (valid until pVal changes) and its length in
** bytes in *pn. The length is explicit so a NUL inside the text reaches the
** reader, which rejects it, instead of silently cutting the input
** (peer fault B33). SQLITE_NOMEM when SQLite cannot give the
** text. */
int sqlioText(sqlite3_value *pVal, const char **pz, int *pn);

/* sqlioText into the caller's buffer: TEXT of fewer than nBuf bytes is
** copied to aBuf, NUL-terminated, and *pz points there (valid while aBuf
** is). A host binds text with its length and no terminator, and
** sqlite3_value_text() then copies it into a new buffer to add one (an
** allocation per argument per call): here sqlite3_value_bytes() makes the
** value UTF-8 (converting UTF-16 in place) and sqlite3_value_blob() reads
** those bytes, which for TEXT converts nothing. Longer text, and other
** types, are read by sqlioText. */
int sqlioTextIn(sqlite3_value *pVal, char *aBuf, int nBuf, const char **pz, int *pn);

/* Sets an error result "<zFunc>: <zErr>". rc SQLITE_NOMEM gives the
** host's out-of-memory error; SQLITE_TOOBIG (a result past the host's
** SQLITE_LIMIT_LENGTH, which SQLite itself would refuse with a bare
** "string or blob too big") "<zFunc>: the result is more than
** SQLITE_LIMIT_LENGTH (N bytes)", zErr ignored, code SQLITE_TOOBIG; any other
** code than SQLITE_ERROR is kept as the error code (interrupts, busy).
** zErr may be NULL (the code's own text is used). An interrupt (rc
** SQLITE_INTERRUPT) is always "<zFunc>: interrupted", followed by what zErr
** adds when it begins with "interrupted". Does not free zErr. */
void sqlioError(sqlite3_context *pCtx, const char *zFunc, int rc, const char *zErr);

/* A virtual table's error: sets pVtab->zErrMsg to "<zFunc>: <zErr>" (zErr
** may be NULL: rc's own text; an interrupt as in sqlioError), freeing the previous message, so zErrMsg is
** never leaked or overwritten. rc SQLITE_OK becomes SQLITE_ERROR;
** SQLITE_NOMEM sets no message (SQLite reports its own). Returns rc, or
** SQLITE_NOMEM when the message cannot be made. Does not free zErr. */
int sqlioVtabError(sqlite3_vtab *pVtab, const char *zFunc, int rc, const char *zErr);

/* Finishes pOut (a sqlite3_str) as the function's JSON text result with
** subtype 74 (SPEC.md §2: json_object() nests it), or as the matching
** error when the builder failed (OOM, too big). Always consumes pOut. */
void sqlioJson(sqlite3_context *pCtx, const char *zFunc, sqlite3_str *pOut);

/* Results built in a reusable string (*ppBuf, e.g. qCacheOutBuf's slot):
** every string grows through reallocations, each under SQLite's global
** allocator mutex when memory statistics are on (Debian's build), which
** two threads contend for. sqlioOutBegin returns the string to append to
** (a new one when the slot is empty or past SQLIO_OUT_KEEP bytes) and the
** offset where this result starts; NULL on OOM. sqlioOutJson sets the text
** appended since then as the JSON result (subtype 74): copied, or for a
** large result the whole string is handed to SQLite and the slot emptied.
** On a string error it reports it (as sqlioError) and empties the slot. */
#define SQLIO_OUT_KEEP 65536
sqlite3_str *sqlioOutBegin(sqlite3_str **ppBuf, sqlite3 *host, int *piStart);

/* The slot a result for host is built in: ppConnBuf (the connection's), or
** ppLocal when host's SQLITE_LIMIT_LENGTH is below SQLite's default
** (SQLIO_LENGTH_DEFAULT). sqlioOutBegin makes a new string for host
** (sqlite3_str_new(host)), which fails with SQLITE_TOOBIG as soon as it
** grows past that limit, so a document too big for the host stops there
** instead of at its end; such a string must not be kept for a call of
** another host. The caller frees *ppLocal (sqlite3_str_finish) when done;
** *ppLocal starts NULL. */
#define SQLIO_LENGTH_DEFAULT 1000000000
sqlite3_str **sqlioOutSlot(sqlite3 *host, sqlite3_str **ppConnBuf, sqlite3_str **ppLocal);

/* A table column's value past the host's SQLITE_LIMIT_LENGTH: the error
** result "<zFunc>: column <zCol> is more than SQLITE_LIMIT_LENGTH (N
** bytes)", code SQLITE_TOOBIG. Returns SQLITE_TOOBIG. */
int sqlioColumnTooBig(sqlite3_context *pCtx, const char *zFunc, const char *zCol);
void sqlioOutJson(sqlite3_context *pCtx, const char *zFunc, sqlite3_str **ppBuf, int iStart);

/* xConnect's common part for the eponymous tables that open stores named
** by their arguments: declares zDecl, allocates nTab zeroed bytes (a struct
** that starts with sqlite3_vtab; the caller fills in the rest) into *ppVtab,
** owned by SQLite until xDisconnect, and marks the table DIRECTONLY so no
** view or trigger of a database file can make it open a file. An SQLite
** code on failure, with nothing allocated. */
int sqlioConnectTable(sqlite3 *db, const char *zDecl, size_t nTab, sqlite3_vtab **ppVtab);

#endif /* MENTAT_SQLIO_H */
