/*
** pull_int.h — the compiled form of a pull pattern, shared by the pattern
** compiler (pull_parse.c) and the executor (pull.c). Not for other modules:
** they use pull.h.
**
** A pattern compiles once per call into a tree of PullPattern/PullItem in an
** EdnArena (freed at once, so freeing never recurses). Attribute names are
** resolved against the Schema during compilation, so the executor only
** deals in entids. A recursion spec {:attr N} / {:attr ...} compiles to an
** item whose pSub points back at the pattern that holds it (a cycle in the
** compiled tree, never walked without a depth bound).
*/
#ifndef MENTAT_PULL_INT_H
#define MENTAT_PULL_INT_H

#include "pull.h"

/* Deepest nesting of maps a pull produces, and of patterns it accepts:
** every level is a C stack frame, and the result must stay well inside
** SQLite's JSON depth limit (1000). Same cap as the reader (SPEC §7). */
#define PULL_MAX_DEPTH EDN_MAX_DEPTH

/* Datomic's default :limit for cardinality-many and reverse attributes. */
#define PULL_DEFAULT_LIMIT 1000

/* nRecurse value of `...` (unbounded; stopped by cycles and PULL_MAX_DEPTH). */
#define PULL_RECURSE_UNBOUNDED (-1)

typedef enum PullKind {
  PULL_KIND_DBID = 0,   /* :db/id */
  PULL_KIND_ATTR,       /* a forward attribute (known or not) */
  PULL_KIND_REVERSE     /* :ns/_attr */
} PullKind;

typedef struct PullPattern PullPattern;

/* One element of a pattern. zKey is the output key as text (":person/name",
** ":person/_friend", or the :as value's text), not yet JSON-escaped. */
typedef struct PullItem {
  PullKind eKind;
  sqlite3_int64 a;          /* attribute entid; 0 when the schema has none */
  const Attr *pAttr;        /* schema attribute (owned by the Schema) or NULL */
  const char *zKey;         /* in the arena or the Schema */
  int nKey;
  const char *zAttr;        /* the attribute keyword's text, as written */
  int nAttr;
  const EdnValue *pAs;      /* the :as value (the caller's tree), or NULL */
  sqlite3_int64 nLimit;     /* values kept for many/reverse; -1 = no limit */
  const EdnValue *pDefault; /* :default value (the caller's tree), or NULL */
  PullPattern *pSub;        /* nested pattern through a ref, or NULL */
  int nRecurse;             /* 0, N > 0, or PULL_RECURSE_UNBOUNDED */
  int bComponent;           /* wildcard-expanded component: pSub is [*] */
} PullItem;

struct PullPattern {
  int bWildcard;            /* the pattern holds `*` */
  int iWildcard;            /* items before the `*` (where its keys go) */
  int nItem;
  PullItem *aItem;
};

/* Compiles pPattern (an EDN vector) against pSchema into pArena.
** *ppOut lives until the arena is reset. Errors: SQLITE_ERROR with
** "pull pattern: line L col C: ..." in *pzErr, or SQLITE_NOMEM. */
int pullCompile(EdnArena *pArena, const Schema *pSchema,
                const EdnValue *pPattern, PullPattern **ppOut, char **pzErr);

#endif /* MENTAT_PULL_INT_H */
