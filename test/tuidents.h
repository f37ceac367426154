/*
** tuidents.h — the 40 bootstrap idents and their entids, from the format's
** list (format/mentat-v3.md), for the suites that check a store's or a
** Schema's bootstrap (test_store.c, test_schema.c).
*/
#ifndef MENTAT_TUIDENTS_H
#define MENTAT_TUIDENTS_H

/* The 40 bootstrap idents, from the format's list. */
static const struct { const char *zKw; sqlite3_int64 e; } aIdent[] __attribute__((unused)) = {
  {":db/ident", 1}, {":db.part/db", 2}, {":db/txInstant", 3},
  {":db.install/partition", 4}, {":db.install/valueType", 5},
  {":db.install/attribute", 6}, {":db/valueType", 7}, {":db/cardinality", 8},
  {":db/unique", 9}, {":db/isComponent", 10}, {":db/index", 11},
  {":db/fulltext", 12}, {":db/noHistory", 13}, {":db/add", 14},
  {":db/retract", 15}, {":db.part/user", 16}, {":db.part/tx", 17},
  {":db/excise", 18}, {":db.excise/attrs", 19}, {":db.excise/beforeT", 20},
  {":db.excise/before", 21}, {":db.alter/attribute", 22}, {":db.type/ref", 23},
  {":db.type/keyword", 24}, {":db.type/long", 25}, {":db.type/double", 26},
  {":db.type/string", 27}, {":db.type/uuid", 28}, {":db.type/uri", 29},
  {":db.type/boolean", 30}, {":db.type/instant", 31}, {":db.type/bytes", 32},
  {":db.cardinality/one", 33}, {":db.cardinality/many", 34},
  {":db.unique/value", 35}, {":db.unique/identity", 36}, {":db/doc", 37},
  {":db.schema/version", 38}, {":db.schema/attribute", 39}, {":db.schema/core", 40},
};

#endif /* MENTAT_TUIDENTS_H */
