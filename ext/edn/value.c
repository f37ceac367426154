/*
** value.c — the value types of the store and the bridges between them:
** EDN literal → TypedValue (checked against the attribute's type), TypedValue
** → SQL parameter (the stored encoding), stored (v, tag) → JSON text or
** native SQL result (SPEC §2.3, format/mentat-v3.md "Value encoding").
**
** Decisions, following Datomic unless noted:
**  - :db.type/long takes integers only (1.0 is an error; B03); :db.type/double
**    takes doubles and integers (converted), never NaN (SQLite would store
**    NULL; B31). -0.0 becomes 0.0 so that 0.0 and -0.0 are one value for
**    uniqueness, lookups and `=` (B31). Infinities are stored as REAL.
**  - :db.type/bytes is written #bytes "hex" (even number of hex digits, any
**    case); the reader decodes it, so TypedValue holds the raw bytes.
**  - :db.type/ref takes only an integer entid here; idents, tempids and lookup
**    refs are resolved by the caller (header contract).
**  - :db.type/uri (entid 29) has no storage tag in Mentat's format, so
**    vtFromTypeEntid reports it as "not a type" (VT_NONE).
*/
#include <math.h>
#include <string.h>
#include "value.h"

int vtTag(ValueType t) {
  switch (t) {
    case VT_REF: return TAG_REF;
    case VT_BOOLEAN: return TAG_BOOLEAN;
    case VT_INSTANT: return TAG_INSTANT;
    case VT_LONG: case VT_DOUBLE: return TAG_NUMBER;
    case VT_STRING: return TAG_STRING;
    case VT_UUID: return TAG_UUID;
    case VT_KEYWORD: return TAG_KEYWORD;
    case VT_BYTES: case VT_TUPLE: return TAG_BYTES;
    case VT_NONE: break;
  }
  return -1;
}

int vtOutTag(ValueType t) {
  return t == VT_TUPLE ? TAG_TUPLE : vtTag(t);
}

ValueType vtFromTypeEntid(sqlite3_int64 e) {
  switch (e) {
    case 23: return VT_REF;
    case 24: return VT_KEYWORD;
    case 25: return VT_LONG;
    case 26: return VT_DOUBLE;
    case 27: return VT_STRING;
    case 28: return VT_UUID;
    case 30: return VT_BOOLEAN;
    case 31: return VT_INSTANT;
    case 32: return VT_BYTES;
  }
  return VT_NONE;
}

const char *vtName(ValueType t) {
  switch (t) {
    case VT_REF: return ":db.type/ref";
    case VT_BOOLEAN: return ":db.type/boolean";
    case VT_INSTANT: return ":db.type/instant";
    case VT_LONG: return ":db.type/long";
    case VT_DOUBLE: return ":db.type/double";
    case VT_STRING: return ":db.type/string";
    case VT_UUID: return ":db.type/uuid";
    case VT_KEYWORD: return ":db.type/keyword";
    case VT_BYTES: return ":db.type/bytes";
    case VT_TUPLE: return ":db.type/tuple";
    case VT_NONE: break;
  }
  return "unknown";
}

static int valueIsBytesLiteral(const EdnValue *p) {
  return p->type == EDN_TAGGED && strcmp(p->u.t.zTag, "bytes") == 0
      && p->u.t.p && p->u.t.p->type == EDN_STRING;
}

static int valueErr(char **pzErr, int rc, const char *zFmt, const char *zA, const char *zB) {
  if (pzErr) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf(zFmt, zA, zB);
    if (*pzErr == NULL) rc = SQLITE_NOMEM;
  }
  return rc;
}

int valueFromEdn(const EdnValue *p, ValueType want, TypedValue *pOut, char **pzErr) {
  memset(pOut, 0, sizeof(*pOut));
  pOut->type = want;
  if (p == NULL) return valueErr(pzErr, SQLITE_ERROR, "expected %s, got nothing", vtName(want), 0);
  switch (want) {
    case VT_REF:
    case VT_LONG:
      if (p->type != EDN_INT) break;
      pOut->i = p->u.i;
      return SQLITE_OK;
    case VT_DOUBLE:
      if (p->type == EDN_INT) {
        pOut->d = (double)p->u.i;
        return SQLITE_OK;
      }
      if (p->type != EDN_DOUBLE) break;
      if (isnan(p->u.d)) return valueErr(pzErr, SQLITE_ERROR, "NaN cannot be stored", 0, 0);
      pOut->d = p->u.d == 0.0 ? 0.0 : p->u.d;   /* -0.0 → 0.0 */
      return SQLITE_OK;
    case VT_STRING:
    case VT_KEYWORD:
      if (p->type != (want == VT_STRING ? EDN_STRING : EDN_KEYWORD)) break;
      pOut->z = p->u.s.z;
      pOut->n = p->u.s.n;
      return SQLITE_OK;
    case VT_BOOLEAN:
      if (p->type != EDN_BOOL) break;
      pOut->i = p->u.b != 0;
      return SQLITE_OK;
    case VT_INSTANT:
      if (p->type != EDN_INST) break;
      pOut->i = p->u.i;
      return SQLITE_OK;
    case VT_UUID:
      if (p->type != EDN_UUID) break;
      memcpy(pOut->uuid, p->u.uuid, 16);
      return SQLITE_OK;
    case VT_BYTES:
      /* The reader has checked and decoded the hex (edn.h). */
      if (!valueIsBytesLiteral(p)) break;
      pOut->z = p->u.t.p->u.s.z;
      pOut->n = p->u.t.p->u.s.n;
      return SQLITE_OK;
    case VT_TUPLE:
      /* element types come from the attribute: valueTupleFromEdn */
      return valueErr(pzErr, SQLITE_ERROR, "a tuple value needs its attribute's element types", 0, 0);
    case VT_NONE:
      return valueErr(pzErr, SQLITE_ERROR, "value of unknown type", 0, 0);
  }
  return valueErr(pzErr, SQLITE_ERROR, "expected %s, got %s", vtName(want), ednKindName(p));
}

ValueType valueNaturalType(const EdnValue *p) {
  if (p == NULL) return VT_NONE;
  switch (p->type) {
    case EDN_INT: return VT_LONG;
    case EDN_DOUBLE: return VT_DOUBLE;
    case EDN_STRING: return VT_STRING;
    case EDN_KEYWORD: return VT_KEYWORD;
    case EDN_BOOL: return VT_BOOLEAN;
    case EDN_INST: return VT_INSTANT;
    case EDN_UUID: return VT_UUID;
    case EDN_TAGGED: return valueIsBytesLiteral(p) ? VT_BYTES : VT_NONE;
    default: return VT_NONE;
  }
}

int valueBind(sqlite3_stmt *pStmt, int i, const TypedValue *pVal) {
  switch (pVal->type) {
    case VT_REF: case VT_BOOLEAN: case VT_INSTANT: case VT_LONG:
      return sqlite3_bind_int64(pStmt, i, pVal->i);
    case VT_DOUBLE:
      return sqlite3_bind_double(pStmt, i, pVal->d);
    case VT_STRING: case VT_KEYWORD:
      /* TRANSIENT: the text usually lives in an arena that may be reset
      ** while the statement stays bound. */
      return sqlite3_bind_text64(pStmt, i, pVal->z ? pVal->z : "", (sqlite3_uint64)pVal->n,
                                 SQLITE_TRANSIENT, SQLITE_UTF8);
    case VT_UUID:
      return sqlite3_bind_blob(pStmt, i, pVal->uuid, 16, SQLITE_TRANSIENT);
    case VT_BYTES: case VT_TUPLE:
      return sqlite3_bind_blob64(pStmt, i, pVal->z ? pVal->z : "", (sqlite3_uint64)pVal->n,
                                 SQLITE_TRANSIENT);
    case VT_NONE: break;
  }
  return sqlite3_bind_null(pStmt, i);
}

int valueBindStatic(sqlite3_stmt *pStmt, int i, const TypedValue *pVal) {
  if ((pVal->type == VT_STRING || pVal->type == VT_KEYWORD) && pVal->z) {
    return sqlite3_bind_text64(pStmt, i, pVal->z, (sqlite3_uint64)pVal->n, SQLITE_STATIC,
                               SQLITE_UTF8);
  }
  return valueBind(pStmt, i, pVal);
}

static void valueAppendHex(sqlite3_str *pOut, const unsigned char *a, int n) {
  static const char aHex[] = "0123456789abcdef";
  int k;
  sqlite3_str_appendchar(pOut, 1, '"');
  for (k = 0; k < n; k++) {
    char a2[2];
    a2[0] = aHex[a[k] >> 4];
    a2[1] = aHex[a[k] & 15];
    sqlite3_str_append(pOut, a2, 2);
  }
  sqlite3_str_appendchar(pOut, 1, '"');
}

/* JSON for a value whose tag does not decide the form: by storage class. */
/* NULL text or bytes of a TEXT or BLOB value (even '' and x'' have a
** pointer) are a conversion or zeroblob expansion that ran out of memory;
** the length is taken first, as the failure leaves the value NULL. */
static int valueJsonByClass(sqlite3_str *pOut, sqlite3_value *pV) {
  switch (sqlite3_value_type(pV)) {
    case SQLITE_INTEGER:
      ednAppendInt(pOut, sqlite3_value_int64(pV));
      break;
    case SQLITE_FLOAT:
      ednJsonDouble(pOut, sqlite3_value_double(pV));
      break;
    case SQLITE_TEXT: {
      const char *z = (const char *)sqlite3_value_text(pV);
      if (z == NULL) return SQLITE_NOMEM;
      ednJsonString(pOut, z, sqlite3_value_bytes(pV));
      break;
    }
    case SQLITE_BLOB: {
      int n = sqlite3_value_bytes(pV);
      const unsigned char *a = sqlite3_value_blob(pV);
      if (a == NULL && n > 0) return SQLITE_NOMEM;
      valueAppendHex(pOut, a, a ? n : 0);
      break;
    }
    default:
      sqlite3_str_appendall(pOut, "null");
      break;
  }
  return SQLITE_OK;
}

int valueJsonFromStored(sqlite3_str *pOut, sqlite3_value *pV, int tag, int bPull) {
  int eType = sqlite3_value_type(pV);
  char aBuf[48];
  if (eType == SQLITE_NULL) {
    sqlite3_str_appendall(pOut, "null");
    return SQLITE_OK;
  }
  switch (tag) {
    case TAG_REF:
      if (eType != SQLITE_INTEGER) break;
      if (bPull) {
        sqlite3_str_appendall(pOut, "{\":db/id\":");
        ednAppendInt(pOut, sqlite3_value_int64(pV));
        sqlite3_str_appendchar(pOut, 1, '}');
      }
      else ednAppendInt(pOut, sqlite3_value_int64(pV));
      return SQLITE_OK;
    case TAG_BOOLEAN:
      if (eType != SQLITE_INTEGER) break;
      sqlite3_str_appendall(pOut, sqlite3_value_int64(pV) ? "true" : "false");
      return SQLITE_OK;
    case TAG_INSTANT:
      if (eType != SQLITE_INTEGER) break;
      if (bPull) {
        ednAppendInt(pOut, sqlite3_value_int64(pV));
      } else {
        ednFormatInstant(sqlite3_value_int64(pV), aBuf);
        sqlite3_str_appendf(pOut, "\"%s\"", aBuf);
      }
      return SQLITE_OK;
    case TAG_UUID:
      if (eType != SQLITE_BLOB || sqlite3_value_bytes(pV) != 16) break;
      if (sqlite3_value_blob(pV) == NULL) return SQLITE_NOMEM;
      ednFormatUuid(sqlite3_value_blob(pV), aBuf);
      sqlite3_str_appendf(pOut, "\"%s\"", aBuf);
      return SQLITE_OK;
    case TAG_TUPLE: {
      int rc;
      if (eType != SQLITE_BLOB) break;
      if (sqlite3_value_blob(pV) == NULL) return SQLITE_NOMEM;
      rc = valueTupleJson(pOut, sqlite3_value_blob(pV), sqlite3_value_bytes(pV), bPull);
      if (rc == SQLITE_ERROR) break;   /* not a tuple blob: printed as bytes */
      return rc;
    }
    case TAG_JSON:
      if (eType != SQLITE_TEXT) break;
      if (sqlite3_value_text(pV) == NULL) return SQLITE_NOMEM;
      sqlite3_str_append(pOut, (const char *)sqlite3_value_text(pV), sqlite3_value_bytes(pV));
      return SQLITE_OK;
    default:
      /* Numbers (tag 5: INTEGER long / REAL double), strings, keywords and
      ** bytes all follow their storage class. */
      break;
  }
  return valueJsonByClass(pOut, pV);
}

void valueResultFromStored(sqlite3_context *pCtx, sqlite3_value *pV, int tag) {
  int eType = sqlite3_value_type(pV);
  char aBuf[48];
  if (tag == TAG_INSTANT && eType == SQLITE_INTEGER) {
    ednFormatInstant(sqlite3_value_int64(pV), aBuf);
    sqlite3_result_text(pCtx, aBuf, -1, SQLITE_TRANSIENT);
  } else if (tag == TAG_UUID && eType == SQLITE_BLOB && sqlite3_value_bytes(pV) == 16) {
    if (sqlite3_value_blob(pV) == NULL) {
      sqlite3_result_error_nomem(pCtx);
      return;
    }
    ednFormatUuid(sqlite3_value_blob(pV), aBuf);
    sqlite3_result_text(pCtx, aBuf, -1, SQLITE_TRANSIENT);
  } else if (tag == TAG_BOOLEAN && eType == SQLITE_INTEGER) {
    sqlite3_result_int(pCtx, sqlite3_value_int64(pV) != 0);
  } else if (tag == TAG_TUPLE && eType == SQLITE_BLOB) {
    /* a tuple as its JSON array text */
    sqlite3_str *pStr = sqlite3_str_new(NULL);
    int rc = valueJsonFromStored(pStr, pV, tag, 0);
    char *z;
    if (rc == SQLITE_OK) rc = sqlite3_str_errcode(pStr);
    z = sqlite3_str_finish(pStr);
    if (rc != SQLITE_OK || z == NULL) {
      sqlite3_free(z);
      sqlite3_result_error_nomem(pCtx);
      return;
    }
    sqlite3_result_text(pCtx, z, -1, sqlite3_free);
  } else {
    /* ref, long, double, string, keyword, bytes: the stored value as is. */
    sqlite3_result_value(pCtx, pV);
  }
}
