/*
** view_idents.h — an edn_view's query followed through ident renames
** (view_idents.c): the idents its query and rules name, resolved in the
** current schema of the source each place reads, and the texts to run with
** every renamed ident replaced by its entity's ident now.
**
** Takes the query and rules texts, the schemas (the call's and its sources')
** and the reader connection whose store logs tell former idents; gives the
** texts or an error. Calls the query parser (query_ast.h), the schema
** (schema.h) and SQLite.
**
** Datomic's rule (docs.datomic.com/schema/schema-change.html, "Changing a
** :db/ident"): after a rename "both the new ident and the old ident will
** refer to the entity". So a place that names an ident no entity has now,
** but that an entity had (a retraction of its :db/ident in the log), means
** that entity: the text gets the entity's ident now. An ident an entity
** holds now means that one, first. An ident whose last holder has none any
** more is an error; so, with bUnknown, is an attribute place naming a
** keyword that never was an ident.
*/
#ifndef MENTAT_VIEW_IDENTS_H
#define MENTAT_VIEW_IDENTS_H

#include "sqlite_api.h"
#include "query.h"

/* Resolves the idents of zQuery and zRules (NULL: none): each place reads
** the schema of its clause's source (pSchema for $, whose tables are in
** database zMainDb of db; a source of pOpts its own, a store file's in its
** attached zDb), a rule body $'s. The places: a pattern's entity and
** attribute, a ref attribute's value, the attribute arguments of get-else,
** get-some, missing? and fulltext, the attributes of a pull pattern in
** :find. *pzQuery and *pzRules get the texts with each renamed ident
** replaced (sqlite3_malloc'd), NULL when nothing changed. Errors (*pzErr,
** no prefix): "line 1 col 31: ident :status/off no longer exists (its
** :db/ident was retracted)", with bUnknown "line 1 col 22: unknown
** attribute :p/nmae"; a query that does not parse is left to the compile
** (SQLITE_OK, nothing changed). */
int vidResolve(sqlite3 *db, const char *zMainDb, const Schema *pSchema, const QueryOpts *pOpts,
               const char *zQuery, const char *zRules, int bUnknown, char **pzQuery,
               char **pzRules, char **pzErr);

#endif /* MENTAT_VIEW_IDENTS_H */
