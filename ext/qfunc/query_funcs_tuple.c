/*
** query_funcs_tuple.c — tuples a query makes, at run time: mentat_tuple
** (the `tuple` function: its arguments as one tuple value in the store's
** encoding, value.h; qfTupleResult, that encoding as a result), mentat_untuple / mentat_untuple_tag (element k of a
** tuple as its native SQL value and its tag), mentat_tuple_count and
** mentat_fill (can a collection of that count fill a tuple binding).
**
** Why the store's encoding and not JSON: Datomic compares tuples element by
** element by value and type (schema reference, "Tuples"), and JSON prints
** a keyword like a string, an #inst or a uuid like a string; the encoding
** keeps each element's type in its header byte, so = on two encodings is
** Clojure's = on the tuples and memcmp their order (value_tuple.c). A tuple
** the query makes therefore equals a stored one exactly when Datomic says.
** Takes SQL values and their tags; gives BLOBs, values and tags.
*/
#include <string.h>
#include "query_funcs.h"

/* The element type of SQL value pV of tag `tag` (TAG_*, or -2 for none):
** VT_NONE for nil, VT_TUPLE for a collection (it cannot be an element). */
static ValueType qftElemType(sqlite3_value *pV, sqlite3_value *pTag) {
  int t = sqlite3_value_type(pV);
  if (t == SQLITE_NULL) return VT_NONE;
  if (sqlite3_value_type(pTag) == SQLITE_NULL) {
    /* no tag: the storage class says */
    return t == SQLITE_INTEGER ? VT_LONG : t == SQLITE_FLOAT ? VT_DOUBLE
           : t == SQLITE_TEXT ? VT_STRING : VT_BYTES;
  }
  switch (sqlite3_value_int(pTag)) {
    case TAG_REF: return VT_LONG;   /* a ref element is the entity id */
    case TAG_BOOLEAN: return VT_BOOLEAN;
    case TAG_INSTANT: return VT_INSTANT;
    case TAG_NUMBER: return t == SQLITE_FLOAT ? VT_DOUBLE : VT_LONG;
    case TAG_STRING: return VT_STRING;
    case TAG_UUID: return VT_UUID;
    case TAG_KEYWORD: return VT_KEYWORD;
    case TAG_BYTES: return VT_BYTES;
    default: return VT_TUPLE;
  }
}

/* The JSON array of the elements (a tuple holding a collection, or more
** than a tuple's 8 elements: a vector, as Clojure's tuple gives). */
static void qftJsonArray(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  int i, rc = SQLITE_OK, n;
  char *z;
  sqlite3_str_appendchar(pOut, 1, '[');
  for (i = 0; i + 1 < argc && rc == SQLITE_OK; i += 2) {
    if (i) sqlite3_str_appendchar(pOut, 1, ',');
    if (sqlite3_value_type(argv[i]) == SQLITE_NULL) {
      sqlite3_str_appendall(pOut, "null");
    } else if (sqlite3_value_type(argv[i + 1]) != SQLITE_NULL
               && sqlite3_value_int(argv[i + 1]) == TAG_JSON) {
      sqlite3_str_appendall(pOut, (const char *)sqlite3_value_text(argv[i]));
    } else {
      int tag = sqlite3_value_type(argv[i + 1]) == SQLITE_NULL ? TAG_STRING
                : sqlite3_value_int(argv[i + 1]);
      rc = valueJsonFromStored(pOut, argv[i], tag, 0);
    }
  }
  sqlite3_str_appendchar(pOut, 1, ']');
  if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pOut);
  n = sqlite3_str_length(pOut);
  z = sqlite3_str_finish(pOut);
  if (rc != SQLITE_OK || z == NULL) {
    sqlite3_free(z);
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_text(pCtx, z, n, sqlite3_free);
  sqlite3_result_subtype(pCtx, MENTAT_JSON_SUBTYPE);
}

/* mentat_tuple(v1, tag1, ..., vn, tagn): the tuple of the values, each of
** its own type (ref elements as entity ids), encoded as stored tuples are;
** with a collection among them, or more than 8, their JSON array. */
void qfTuple(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  TypedValue a[VALUE_TUPLE_MAX];
  int i, n = argc / 2;
  if (n > VALUE_TUPLE_MAX) { qftJsonArray(pCtx, argc, argv); return; }
  for (i = 0; i < n; i++) {
    sqlite3_value *pV = argv[2 * i];
    TypedValue *v = &a[i];
    memset(v, 0, sizeof(*v));
    v->type = qftElemType(pV, argv[2 * i + 1]);
    switch (v->type) {
      case VT_TUPLE: qftJsonArray(pCtx, argc, argv); return;
      case VT_NONE: break;
      case VT_DOUBLE: v->d = sqlite3_value_double(pV); break;
      case VT_LONG: case VT_INSTANT: case VT_BOOLEAN: case VT_REF:
        v->i = sqlite3_value_int64(pV);
        break;
      case VT_UUID:
        if (sqlite3_value_type(pV) != SQLITE_BLOB || sqlite3_value_bytes(pV) != 16) {
          v->type = VT_NONE;
          break;
        }
        memcpy(v->uuid, sqlite3_value_blob(pV), 16);
        break;
      case VT_STRING: case VT_KEYWORD:
        v->z = (const char *)sqlite3_value_text(pV);
        v->n = sqlite3_value_bytes(pV);
        if (v->z == NULL) { sqlite3_result_error_nomem(pCtx); return; }
        break;
      case VT_BYTES:
        v->z = (const char *)sqlite3_value_blob(pV);
        v->n = sqlite3_value_bytes(pV);
        if (v->z == NULL && v->n > 0) { sqlite3_result_error_nomem(pCtx); return; }
        break;
    }
  }
  qfTupleResult(pCtx, a, n);
}

void qfTupleResult(sqlite3_context *pCtx, const TypedValue *a, int n) {
  sqlite3_str *pOut = sqlite3_str_new(NULL);
  int rc, nOut;
  char *z;
  valueTupleEncode(pOut, a, n);
  rc = sqlite3_str_errcode(pOut);
  nOut = sqlite3_str_length(pOut);
  z = sqlite3_str_finish(pOut);
  if (rc != SQLITE_OK || z == NULL) {
    sqlite3_free(z);
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_blob(pCtx, z, nOut, sqlite3_free);
}

/* Decodes argv[0] when it is a tuple's encoding; 0 when not (a NULL or
** another value: the functions below give NULL), -1 out of memory. */
static int qftDecode(sqlite3_context *pCtx, sqlite3_value *pV, ValueTuple *pT) {
  const void *z;
  int rc;
  if (sqlite3_value_type(pV) != SQLITE_BLOB) return 0;
  z = sqlite3_value_blob(pV);
  rc = valueTupleDecode(z, sqlite3_value_bytes(pV), pT);
  if (rc == SQLITE_NOMEM) { sqlite3_result_error_nomem(pCtx); return -1; }
  return rc == SQLITE_OK;
}

/* mentat_untuple(t, k): element k (from 0) of tuple t as its native SQL
** value (entity ids and instants INTEGER, uuids their 16 bytes); NULL for
** nil, past the end, or a t that is no tuple. */
void qfUntuple(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  ValueTuple t;
  int k = sqlite3_value_int(argv[1]);
  const TypedValue *v;
  (void)argc;
  if (qftDecode(pCtx, argv[0], &t) <= 0) return;
  if (k < 0 || k >= t.n) { valueTupleClear(&t); return; }
  v = &t.a[k];
  switch (v->type) {
    case VT_LONG: case VT_REF: case VT_INSTANT: case VT_BOOLEAN:
      sqlite3_result_int64(pCtx, v->i);
      break;
    case VT_DOUBLE: sqlite3_result_double(pCtx, v->d); break;
    case VT_STRING: case VT_KEYWORD:
      sqlite3_result_text(pCtx, v->z, v->n, SQLITE_TRANSIENT);
      break;
    case VT_BYTES: sqlite3_result_blob(pCtx, v->z, v->n, SQLITE_TRANSIENT); break;
    case VT_UUID: sqlite3_result_blob(pCtx, v->uuid, 16, SQLITE_TRANSIENT); break;
    case VT_NONE: case VT_TUPLE: break;
  }
  valueTupleClear(&t);
}

/* mentat_untuple_tag(t, k): the tag of element k of tuple t (a long and a
** double both TAG_NUMBER, told apart by their storage class); NULL where
** mentat_untuple gives NULL. */
void qfUntupleTag(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  ValueTuple t;
  int k = sqlite3_value_int(argv[1]);
  (void)argc;
  if (qftDecode(pCtx, argv[0], &t) <= 0) return;
  if (k >= 0 && k < t.n && t.a[k].type != VT_NONE) {
    sqlite3_result_int(pCtx, vtTag(t.a[k].type));
  }
  valueTupleClear(&t);
}

/* mentat_tuple_count(t): the number of elements of tuple t; NULL when t
** is no tuple. */
void qfTupleCount(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  ValueTuple t;
  (void)argc;
  if (qftDecode(pCtx, argv[0], &t) <= 0) return;
  sqlite3_result_int(pCtx, t.n);
  valueTupleClear(&t);
}

/* mentat_fill(count, n, place, binding): 1 when a collection of count
** elements fills tuple binding `binding` of n variables (a longer one binds
** its first n, as DataScript's in->rel maps over both), NULL for a NULL
** count (a nil result binds nothing); an error naming the place when it is
** shorter ("Not enough elements in a collection ... to bind tuple ..."),
** or for a count of -1, a value that is no collection. */
void qfFill(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  sqlite3_int64 n;
  (void)argc;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  n = sqlite3_value_int64(argv[0]);
  if (n >= sqlite3_value_int64(argv[1])) {
    sqlite3_result_int(pCtx, 1);
  } else if (n < 0) {
    qfErrorAt(pCtx, argv[2], "cannot bind a value that is not a collection to tuple %s",
              (const char *)sqlite3_value_text(argv[3]));
  } else {
    qfErrorAt(pCtx, argv[2], "not enough elements in a collection of %lld to bind tuple %s", n,
              (const char *)sqlite3_value_text(argv[3]));
  }
}
