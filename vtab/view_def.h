/*
** view_def.h — the definition of an edn_view table (edn_view.c): its
** CREATE VIRTUAL TABLE arguments read, its store path checked against
** where the table is stored, its columns named from the query's find spec
** and :in bindings, the query checked against the store, and, per scan,
** the opts JSON that carries the hidden columns' values as the query's
** inputs.
**
** Takes the module arguments (argv of xCreate/xConnect) and the host
** connection; gives a ViewDef. Calls the query parser (query_ast.h), the
** schema (schema.h), the call context (call.h) and the query runner
** (query.h). Errors are sqlite3_malloc'd messages without the "edn_view: "
** prefix, which edn_view.c adds.
**
** The rules (README "Views: edn_view") in short:
**   arguments   db='<store>', query='<Datalog>' [, rules='<rule set>']
**               [, opts='<JSON: asOf, since, history>'], each a quoted SQL string
**   columns     one per find element, in order, named as README says;
**               then one HIDDEN column per :in binding but $ and %, except
**               that a scalar or collection input whose variable is also a
**               plain find element is that find element's column
**   paths       a table stored in a database file reads a host store
**               (':main', ':temp', ':<attached>') or a store file inside the
**               directory of that database file (relative, no '..', no symlink
**               out), and its opts "sources" name no other store file; TEMP
**               tables and tables of in-memory databases name any store, as
**               edn_q does
*/
#ifndef MENTAT_VIEW_DEF_H
#define MENTAT_VIEW_DEF_H

#include "sqlite_api.h"
#include "call.h"

/* How a hidden column's value becomes a query input (vdefOpts). */
#define VDEF_IN_SCALAR  1   /* ?x: number, text (":kw" a keyword), or JSON */
#define VDEF_IN_JSON    2   /* [?x ...], [?a ?b], [[?a ?b]]: a JSON array (text) */
#define VDEF_IN_PATTERN 3   /* a pull pattern: EDN text */
#define VDEF_IN_RULES   4   /* %: the rules= argument, no column */

/* At most this many inputs (idxNum is a bit mask of them). */
#define VDEF_MAX_INPUTS 30

typedef struct ViewDef {
  char *zName;            /* the table's name, for the errors of a scan */
  char *zPath;            /* the store, as vcallBeginText takes it */
  char *zPathErr;         /* the path rule refused db=: the reason, else NULL */
  char *zQuery;           /* the query text */
  char *zRules;           /* rules='...', or NULL */
  char *zOpts;            /* opts='...' members without the braces, or NULL */
  char *zFileSource;      /* the first opts "sources" entry naming a store file
                          ** ("$2 (other.db)"), for the path rule, or NULL */
  int nCol;               /* visible columns: the find elements */
  int nHidden;            /* hidden columns, after them */
  int nIn;                /* inputs: the :in bindings but $ */
  int aInKind[VDEF_MAX_INPUTS];   /* VDEF_IN_* per input */
  int aInArg[VDEF_MAX_INPUTS];    /* the argument that gives it, -1 for % */
  /* Arguments: the inputs a column gives (all but %), in :in order. */
  int nArg;
  int aArgCol[VDEF_MAX_INPUTS];   /* its column: hidden, or a shared find column */
  int aArgShared[VDEF_MAX_INPUTS];   /* 1: the column is a find element's */
  char **azName;          /* nCol + nHidden column names */
  char *zDecl;            /* the CREATE TABLE statement for sqlite3_declare_vtab */
} ViewDef;

/* Reads argv[3..argc) (the module arguments; argv[1] is the schema that
** holds the table) into a zeroed *p: the arguments, the path rule (a
** refusal is kept in p->zPathErr, not returned, so a table read from a
** database file can still be dropped), the query parsed, the columns
** named and declared. SQLITE_OK, or an SQLite code with *pzErr (e.g.
** "missing argument query", "line 1 col 9: ..."); vdefFree in every case. */
int vdefParse(sqlite3 *db, int argc, const char *const *argv, ViewDef *p, char **pzErr);

/* Checks the query against the store p names, as the host connection db
** sees it: compiled and prepared for inputs of the declared shapes (the
** query is not run) and, with bAttrs, every attribute a pattern names
** known to the store's schema ("line 1 col 30: unknown attribute :p/nmae").
** SQLITE_OK or an SQLite code with *pzErr. */
int vdefCheck(const ViewDef *p, sqlite3 *db, int bAttrs, char **pzErr);

/* The view's query and rules as they read the store pCall holds now (its
** reader and schema, pOpts's sources open): each ident a rename left
** behind replaced by its entity's ident now (view_idents.h), *pzQuery and
** *pzRules sqlite3_malloc'd or NULL when unchanged. Errors name the view:
** "offs: line 1 col 31: ident :status/off no longer exists (its :db/ident
** was retracted)"; bUnknown: an attribute that never existed is one too. */
int vdefResolve(const ViewDef *p, const VCall *pCall, const QueryOpts *pOpts, int bUnknown,
                char **pzQuery, char **pzRules, char **pzErr);

/* Gives the rules input of pOpts (parsed from vdefOpts' JSON) the rule set
** zRules instead (vdefResolve's). */
int vdefSetRules(const ViewDef *p, QueryOpts *pOpts, const char *zRules, char **pzErr);

/* A number that changes with the schemas a scan reads (pCall's and the
** sources'): vdefResolve's answer holds while it stays. */
sqlite3_uint64 vdefSchemaKey(const VCall *pCall, const QueryOpts *pOpts);

/* The opts JSON for one scan: {"inputs":[...]} built from apArg (the
** arguments' values, nArg of them, none SQL NULL) with the opts= members,
** in *pzOpts (sqlite3_malloc'd). Errors name the column ("input min: a
** BLOB is not a query input"). */
int vdefOpts(const ViewDef *p, sqlite3_value **apArg, char **pzOpts, char **pzErr);

/* Frees what *p holds and zeroes it. */
void vdefFree(ViewDef *p);

#endif /* MENTAT_VIEW_DEF_H */
