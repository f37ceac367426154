/*
** query_parse.c — Datalog query text → the AST of query_ast.h, and a rule
** set's EDN → its rules. Takes text or an EdnValue and an arena; gives
** nodes in that arena or "line L col C: ..." errors; calls the EDN reader
** only.
**
** HOW IT WORKS
** The text is read with ednReadOne (so malformed EDN reports the reader's
** line and column), then the vector form [:find ... :in ... :where ...] is
** cut into sections at its keywords, or the map form {:find [...] ...} is
** read key by key; both feed the same section parsers. Clauses are parsed
** by shape: a vector whose head is a list is a predicate or function
** expression, one whose head (after a source) is a plain symbol a rule call,
** other vectors are data patterns, lists are not/or/and or rule calls.
** Grammar follows Datomic's query grammar; Mentat's extras (`the`,
** :order, :limit, :offset, optional `$` in :in) are accepted.
** Recursion follows the nesting of the EDN form, which the reader already
** capped at EDN_MAX_DEPTH, and is guarded again here.
*/
#include <string.h>
#include <stdarg.h>
#include "query_ast.h"

/* Parsing state: the arena for nodes and the error slot. */
typedef struct QParse {
  EdnArena *pArena;
  char **pzErr;
  int rc;
} QParse;

const char *qpVarName(const EdnValue *p) {
  return ednIsVar(p) ? p->u.s.z : NULL;
}

int qpIsBlank(const EdnValue *p) {
  return p && p->type == EDN_SYMBOL && p->u.s.n == 1 && p->u.s.z[0] == '_';
}

int qpIsSrc(const EdnValue *p) {
  return p && p->type == EDN_SYMBOL && p->u.s.n >= 1 && p->u.s.z[0] == '$';
}

/* Records "line L col C: <msg>" for form p (or just msg without position)
** unless an error is already set. Returns SQLITE_ERROR. */
static int qpErr(QParse *pP, const EdnValue *p, const char *zFmt, ...) {
  va_list ap;
  if (pP->rc != SQLITE_OK) return pP->rc;
  va_start(ap, zFmt);
  pP->rc = ednErrorV(pP->pzErr, "", p ? p->line : 0, p ? p->col : 0, zFmt, ap);
  va_end(ap);
  return pP->rc;
}

static int qpNoMem(QParse *pP) {
  if (pP->rc == SQLITE_OK) pP->rc = SQLITE_NOMEM;
  return pP->rc;
}

static void *qpAlloc(QParse *pP, size_t n) {
  void *p;
  if (n == 0) n = 1;
  p = ednArenaAlloc(pP->pArena, n);
  if (p == NULL) qpNoMem(pP);
  else memset(p, 0, n);
  return p;
}

/* EDN text of p, truncated for messages, in the arena. */
static const char *qpText(QParse *pP, const EdnValue *p) {
  sqlite3_str *pStr = sqlite3_str_new(NULL);
  char *z;
  const char *zOut;
  ednPrint(pStr, p);
  z = sqlite3_str_finish(pStr);
  if (z == NULL) { qpNoMem(pP); return "?"; }
  zOut = ednArenaStrdup(pP->pArena, z, (int)strlen(z));
  sqlite3_free(z);
  if (zOut == NULL) { qpNoMem(pP); return "?"; }
  return zOut;
}

/* "a keyword :x", "a list (...)": how an unexpected form is described. */
static const char *qpDescribe(QParse *pP, const EdnValue *p) {
  const char *z = qpText(pP, p);
  const char *zKind;
  switch (p->type) {
    case EDN_SYMBOL: zKind = "symbol"; break;
    case EDN_KEYWORD: zKind = "keyword"; break;
    case EDN_LIST: zKind = "list"; break;
    case EDN_VECTOR: zKind = "vector"; break;
    case EDN_MAP: zKind = "map"; break;
    case EDN_STRING: zKind = "string"; break;
    default: zKind = "value"; break;
  }
  if (strlen(z) > 60) {
    char *zCut = ednArenaStrdup(pP->pArena, z, 60);
    if (zCut == NULL) { qpNoMem(pP); return "?"; }
    memcpy(zCut + 57, "...", 4);
    z = zCut;
  }
  {
    size_t n = strlen(zKind) + strlen(z) + 2;
    char *zOut = ednArenaAlloc(pP->pArena, n);
    if (zOut == NULL) { qpNoMem(pP); return "?"; }
    memcpy(zOut, zKind, strlen(zKind));
    zOut[strlen(zKind)] = ' ';
    memcpy(zOut + strlen(zKind) + 1, z, strlen(z) + 1);
    return zOut;
  }
}

static int qpIsSym(const EdnValue *p, const char *z) {
  return ednIsSymbol(p, z);
}

/* A variable, else an error "expected a variable, got ...". */
static int qpVar(QParse *pP, const EdnValue *p, const char *zWhere) {
  if (ednIsVar(p)) return SQLITE_OK;
  return qpErr(pP, p, "expected a variable%s, got %s", zWhere, qpDescribe(pP, p));
}

static int qpVarOrBlank(QParse *pP, const EdnValue *p, const char *zWhere) {
  if (ednIsVar(p) || qpIsBlank(p)) return SQLITE_OK;
  return qpErr(pP, p, "expected a variable or _%s, got %s", zWhere, qpDescribe(pP, p));
}

/* Binding forms: ?x | _ | [?a ?b] | [?x ...] | [[?a ?b]]. */
static int qpBinding(QParse *pP, const EdnValue *p, QBinding *pB, const char *zWhere) {
  int i;
  memset(pB, 0, sizeof *pB);
  if (p->type == EDN_SYMBOL) {
    if (qpVarOrBlank(pP, p, zWhere)) return pP->rc;
    pB->kind = QB_SCALAR;
    pB->nVar = 1;
    pB->aVar = qpAlloc(pP, sizeof(EdnValue*));
    if (pB->aVar == NULL) return pP->rc;
    pB->aVar[0] = p;
    return SQLITE_OK;
  }
  if (p->type != EDN_VECTOR || p->u.c.n == 0) {
    return qpErr(pP, p, "expected a binding form (?x, [?a ?b], [?x ...] or [[?a ?b]])%s, got %s",
                 zWhere, qpDescribe(pP, p));
  }
  if (p->u.c.n == 1 && p->u.c.a[0]->type == EDN_VECTOR) {
    const EdnValue *pIn = p->u.c.a[0];
    if (pIn->u.c.n == 0) return qpErr(pP, pIn, "empty relation binding%s", zWhere);
    pB->kind = QB_REL;
    pB->nVar = pIn->u.c.n;
    pB->aVar = qpAlloc(pP, sizeof(EdnValue*) * pIn->u.c.n);
    if (pB->aVar == NULL) return pP->rc;
    for (i = 0; i < pIn->u.c.n; i++) {
      if (qpVarOrBlank(pP, pIn->u.c.a[i], zWhere)) return pP->rc;
      pB->aVar[i] = pIn->u.c.a[i];
    }
    return SQLITE_OK;
  }
  if (p->u.c.n == 2 && qpIsSym(p->u.c.a[1], "...")) {
    if (qpVarOrBlank(pP, p->u.c.a[0], zWhere)) return pP->rc;
    pB->kind = QB_COLL;
    pB->nVar = 1;
    pB->aVar = qpAlloc(pP, sizeof(EdnValue*));
    if (pB->aVar == NULL) return pP->rc;
    pB->aVar[0] = p->u.c.a[0];
    return SQLITE_OK;
  }
  pB->kind = QB_TUPLE;
  pB->nVar = p->u.c.n;
  pB->aVar = qpAlloc(pP, sizeof(EdnValue*) * p->u.c.n);
  if (pB->aVar == NULL) return pP->rc;
  for (i = 0; i < p->u.c.n; i++) {
    if (qpVarOrBlank(pP, p->u.c.a[i], zWhere)) return pP->rc;
    pB->aVar[i] = p->u.c.a[i];
  }
  return SQLITE_OK;
}

/* ---------------------------------------------------------------- :find */

/* The aggregates of :find and the argument counts each takes: Datomic's
** documented forms (its "Aggregation" article: single values from min, max,
** count, count-distinct, sum, avg, median, variance, stddev and (rand ?x);
** collections from (distinct ?xs), (min n ?xs), (max n ?xs), (rand n ?xs),
** (sample n ?xs)) and Mentat's (the ?x). Any other count is an error: an
** argument the aggregate does not read must not pass silently. */
typedef struct QpAgg {
  const char *zName;
  unsigned char mArity;   /* bit 0: (f ?x), bit 1: (f n ?x) */
} QpAgg;

static const QpAgg aQpAgg[] = {
  { "count", 1 }, { "count-distinct", 1 }, { "sum", 1 }, { "avg", 1 }, { "median", 1 },
  { "variance", 1 }, { "stddev", 1 }, { "min", 3 }, { "max", 3 }, { "distinct", 1 },
  { "the", 1 }, { "sample", 2 }, { "rand", 3 }, { 0, 0 }
};

/* The error for aggregate pA given nArg arguments in form p. */
static int qpAggArity(QParse *pP, const EdnValue *p, const QpAgg *pA, int nArg) {
  const char *z = pA->zName;
  if (pA->mArity == 1) {
    return qpErr(pP, p, "aggregate %s takes one argument, (%s ?x), not %d", z, z, nArg);
  }
  if (pA->mArity == 2) {
    return qpErr(pP, p, "aggregate %s takes two arguments, (%s n ?x), not %d", z, z, nArg);
  }
  return qpErr(pP, p, "aggregate %s takes one or two arguments, (%s ?x) or (%s n ?x), not %d",
               z, z, z, nArg);
}

static int qpFindElem(QParse *pP, const EdnValue *p, QFindElem *pE) {
  memset(pE, 0, sizeof *pE);
  pE->pForm = p;
  if (p->type == EDN_SYMBOL) {
    if (qpVar(pP, p, " in :find")) return pP->rc;
    pE->kind = QFIND_VAR;
    pE->pVar = p;
    pE->zName = p->u.s.z;
    return SQLITE_OK;
  }
  if (p->type == EDN_LIST && p->u.c.n >= 1 && p->u.c.a[0]->type == EDN_SYMBOL) {
    const EdnValue *pHead = p->u.c.a[0];
    int n = p->u.c.n;
    pE->zName = qpText(pP, p);
    if (qpIsSym(pHead, "pull")) {
      int iVar = 1;
      if (n == 4 && qpIsSrc(p->u.c.a[1])) iVar = 2;
      if (n != iVar + 2) {
        return qpErr(pP, p, "pull in :find takes a variable and a pattern: (pull ?e [...])");
      }
      if (qpVar(pP, p->u.c.a[iVar], " in pull")) return pP->rc;
      pE->kind = QFIND_PULL;
      pE->pVar = p->u.c.a[iVar];
      pE->pPattern = p->u.c.a[iVar + 1];
      return SQLITE_OK;
    }
    {
      const QpAgg *pA = aQpAgg;
      while (pA->zName && !qpIsSym(pHead, pA->zName)) pA++;
      if (pA->zName == NULL) {
        return qpErr(pP, pHead, "unknown aggregate function %s in :find", pHead->u.s.z);
      }
      if (n < 2 || n > 3 || !(pA->mArity & (1u << (n - 2)))) return qpAggArity(pP, p, pA, n - 1);
    }
    pE->kind = QFIND_AGG;
    pE->zAgg = pHead->u.s.z;
    if (qpVar(pP, p->u.c.a[n - 1], " in aggregate")) return pP->rc;
    pE->pVar = p->u.c.a[n - 1];
    if (n == 3) {
      /* n is a positive integer or an :in variable ((max ?k ?x), Datomic's
      ** fn-arg; the run checks its value): (max 0 ?x) asks for nothing */
      const EdnValue *pN = p->u.c.a[1];
      if (!ednIsVar(pN) && (pN->type != EDN_INT || pN->u.i < 1)) {
        return qpErr(pP, pN, "(%s n ?x) takes a positive integer n or an :in variable, got %s",
                     pE->zAgg, qpDescribe(pP, pN));
      }
      pE->pAggN = pN;
    }
    return SQLITE_OK;
  }
  return qpErr(pP, p, "expected a variable, aggregate or pull in :find, got %s",
               qpDescribe(pP, p));
}

/* aForm[0..n) are the forms after :find (vector form) or the elements of the
** :find vector (map form). pAt positions the "nothing to find" error. */
static int qpFind(QParse *pP, QQuery *pQ, const EdnValue *pAt,
                  EdnValue *const *aForm, int n) {
  int i;
  EdnValue *const *aElem = aForm;
  int nElem = n;
  if (n == 0) return qpErr(pP, pAt, ":find with nothing to find");
  pQ->eFind = FIND_REL;
  if (n == 2 && qpIsSym(aForm[1], ".")) {
    pQ->eFind = FIND_SCALAR;
    nElem = 1;
  } else if (n == 1 && aForm[0]->type == EDN_VECTOR) {
    const EdnValue *pV = aForm[0];
    if (pV->u.c.n == 0) return qpErr(pP, pV, ":find with nothing to find");
    if (pV->u.c.n == 2 && qpIsSym(pV->u.c.a[1], "...")) {
      pQ->eFind = FIND_COLL;
      aElem = pV->u.c.a;
      nElem = 1;
    } else {
      pQ->eFind = FIND_TUPLE;
      aElem = pV->u.c.a;
      nElem = pV->u.c.n;
    }
  }
  pQ->nFind = nElem;
  pQ->aFind = qpAlloc(pP, sizeof(QFindElem) * nElem);
  if (pQ->aFind == NULL) return pP->rc;
  for (i = 0; i < nElem; i++) {
    if (qpIsSym(aElem[i], ".") || qpIsSym(aElem[i], "...")) {
      return qpErr(pP, aElem[i], "misplaced %s in :find", aElem[i]->u.s.z);
    }
    if (qpFindElem(pP, aElem[i], &pQ->aFind[i])) return pP->rc;
  }
  return SQLITE_OK;
}

static int qpKeys(QParse *pP, QQuery *pQ, const EdnValue *pAt, QKeysKind eKind,
                  EdnValue *const *aForm, int n) {
  int i;
  if (pQ->eKeys != QK_NONE) return qpErr(pP, pAt, "only one of :keys, :strs, :syms");
  pQ->eKeys = eKind;
  pQ->azKey = qpAlloc(pP, sizeof(char*) * (n ? n : 1));
  if (pQ->azKey == NULL) return pP->rc;
  for (i = 0; i < n; i++) {
    const EdnValue *p = aForm[i];
    if (p->type == EDN_SYMBOL) pQ->azKey[i] = p->u.s.z;
    else if (p->type == EDN_KEYWORD) pQ->azKey[i] = p->u.s.z + 1;
    else if (p->type == EDN_STRING) pQ->azKey[i] = p->u.s.z;
    else return qpErr(pP, p, "expected a key name, got %s", qpDescribe(pP, p));
    {
      int j;   /* each row becomes a map: a repeated name would repeat a key */
      for (j = 0; j < i; j++) {
        if (strcmp(pQ->azKey[j], pQ->azKey[i]) == 0) {
          return qpErr(pP, p, "duplicate key %s in %s", pQ->azKey[i], pAt->u.s.z);
        }
      }
    }
  }
  pQ->nKey = n;   /* checked against :find once every section is read */
  return n == 0 ? qpErr(pP, pAt, "%s with no names", pAt->u.s.z) : SQLITE_OK;
}

/* ------------------------------------------------------------------ :in */

static int qpIn(QParse *pP, QQuery *pQ, EdnValue *const *aForm, int n) {
  int i;
  pQ->nIn = n;
  pQ->aIn = qpAlloc(pP, sizeof(QIn) * (n ? n : 1));
  if (pQ->aIn == NULL) return pP->rc;
  for (i = 0; i < n; i++) {
    const EdnValue *p = aForm[i];
    QIn *pIn = &pQ->aIn[i];
    pIn->pForm = p;
    if (qpIsSrc(p)) {
      pIn->kind = QIN_SRC;
    } else if (qpIsSym(p, "%")) {
      pIn->kind = QIN_RULES;
    } else if (p->type == EDN_SYMBOL && !ednIsVar(p) && !qpIsBlank(p)) {
      pIn->kind = QIN_PATTERN;
    } else {
      pIn->kind = QIN_BIND;
      if (qpBinding(pP, p, &pIn->bind, " in :in")) return pP->rc;
    }
  }
  return SQLITE_OK;
}

/* --------------------------------------------------------------- :where */

static int qpClauses(QParse *pP, EdnValue *const *aForm, int n, QClause ***paOut,
                     int iDepth);

static int qpVarVector(QParse *pP, const EdnValue *p, QClause *pC, int bOrJoin) {
  int i, j, nTotal = 0;
  const char *zHead = bOrJoin ? "or-join" : "not-join";
  if (p->type != EDN_VECTOR || p->u.c.n == 0) {
    return qpErr(pP, p, "%s needs a vector of join variables, got %s", zHead, qpDescribe(pP, p));
  }
  for (i = 0; i < p->u.c.n; i++) {
    const EdnValue *pE = p->u.c.a[i];
    if (bOrJoin && i == 0 && pE->type == EDN_VECTOR) nTotal += pE->u.c.n;
    else nTotal++;
  }
  pC->aJoin = qpAlloc(pP, sizeof(EdnValue*) * nTotal);
  if (pC->aJoin == NULL) return pP->rc;
  for (i = 0; i < p->u.c.n; i++) {
    const EdnValue *pE = p->u.c.a[i];
    if (bOrJoin && i == 0 && pE->type == EDN_VECTOR) {
      for (j = 0; j < pE->u.c.n; j++) {
        if (qpVar(pP, pE->u.c.a[j], " in or-join")) return pP->rc;
        pC->aJoin[pC->nJoin++] = pE->u.c.a[j];
      }
      pC->nReq = pE->u.c.n;
    } else {
      if (qpVar(pP, pE, bOrJoin ? " in or-join" : " in not-join")) return pP->rc;
      pC->aJoin[pC->nJoin++] = pE;
    }
  }
  return SQLITE_OK;
}

/* Does constant p hold a symbol (a variable, _ or a name) at any depth? */
static int qpHasSymbol(const EdnValue *p, int iDepth) {
  int i;
  if (iDepth > EDN_MAX_DEPTH || p->type == EDN_SYMBOL) return 1;
  if (p->type == EDN_VECTOR) {
    for (i = 0; i < p->u.c.n; i++) if (qpHasSymbol(p->u.c.a[i], iDepth + 1)) return 1;
  }
  return 0;
}

/* A rule call a[0] a[1..n), a list or a vector with its source taken off.
** Datomic's rule-expr takes (variable | constant | '_')+: a vector with a
** variable or symbol inside ([?x], [:attr ?v]) is none of them, and neither
** is a list, map or set, so each is an error rather than data compared with
** the rule's values. */
static int qpRuleCall(QParse *pP, QClause *pC, EdnValue *const *a, int n) {
  int i;
  pC->kind = QC_RULE;
  pC->zName = a[0]->u.s.z;
  pC->nArg = n - 1;
  pC->aArg = (const EdnValue**)(a + 1);
  for (i = 1; i < n; i++) {
    const EdnValue *pT = a[i];
    if (pT->type == EDN_LIST || pT->type == EDN_MAP || pT->type == EDN_SET
        || (pT->type == EDN_SYMBOL && !ednIsVar(pT) && !qpIsBlank(pT))
        || (pT->type == EDN_VECTOR && qpHasSymbol(pT, 0))) {
      return qpErr(pP, pT, "unexpected %s in rule call", qpDescribe(pP, pT));
    }
  }
  return SQLITE_OK;
}

static int qpClause(QParse *pP, const EdnValue *p, QClause **ppC, int iDepth) {
  QClause *pC;
  int i;
  *ppC = NULL;
  if (iDepth > EDN_MAX_DEPTH) return qpErr(pP, p, "clauses nested too deep");
  pC = qpAlloc(pP, sizeof(QClause));
  if (pC == NULL) return pP->rc;
  pC->pForm = p;
  *ppC = pC;
  if (p->type == EDN_VECTOR) {
    EdnValue *const *a = p->u.c.a;
    int n = p->u.c.n;
    if (n >= 1 && a[0]->type == EDN_LIST) {
      const EdnValue *pCall = a[0];
      if (pCall->u.c.n == 0 || pCall->u.c.a[0]->type != EDN_SYMBOL) {
        return qpErr(pP, pCall, "expected a function name, got %s", qpDescribe(pP, pCall));
      }
      pC->zName = pCall->u.c.a[0]->u.s.z;
      pC->nArg = pCall->u.c.n - 1;
      pC->aArg = (const EdnValue**)(pCall->u.c.a + 1);
      for (i = 0; i < pC->nArg; i++) {
        /* Datalog does not evaluate arguments: a call-shaped list would be a
        ** list constant, silently compared or bound as data. */
        const EdnValue *pA = pC->aArg[i];
        if (pA->type == EDN_LIST && pA->u.c.n > 0 && pA->u.c.a[0]->type == EDN_SYMBOL
            && !qpIsSrc(pA->u.c.a[0]) && pA->u.c.a[0]->u.s.z[0] != '?') {
          const char *zCall = qpText(pP, pA);
          return qpErr(pP, pA, "%s: function calls do not nest; bind it first: [%s ?x]", zCall, zCall);
        }
      }
      if (n == 1) {
        pC->kind = QC_PRED;
      } else if (n == 2) {
        pC->kind = QC_FN;
        if (qpBinding(pP, a[1], &pC->bind, " in function binding")) return pP->rc;
      } else {
        return qpErr(pP, p, "a function expression takes one binding form");
      }
      return SQLITE_OK;
    }
    pC->kind = QC_PATTERN;
    if (n >= 1 && qpIsSrc(a[0])) {
      pC->pSrc = a[0];
      a++;
      n--;
    }
    if (n >= 1 && a[0]->type == EDN_SYMBOL && !ednIsVar(a[0]) && !qpIsBlank(a[0])) {
      /* [src? rule-name args...]: Datomic's grammar writes rule-expr with
      ** "[]" (list or vector), and a data pattern's first place is never a
      ** plain symbol; whether the rule exists is the compiler's question. */
      return qpRuleCall(pP, pC, a, n);
    }
    if (n < 1) return qpErr(pP, p, "empty data pattern");
    if (n > 5) return qpErr(pP, p, "a data pattern has at most 5 places [e a v tx added]");
    for (i = 0; i < n; i++) {
      const EdnValue *pT = a[i];
      if (pT->type == EDN_LIST || pT->type == EDN_MAP || pT->type == EDN_SET) {
        return qpErr(pP, pT, "unexpected %s in data pattern", qpDescribe(pP, pT));
      }
      if (pT->type == EDN_SYMBOL && !ednIsVar(pT) && !qpIsBlank(pT)) {
        return qpErr(pP, pT, "expected a variable, _ or a constant in data pattern, got %s",
                     qpDescribe(pP, pT));
      }
    }
    pC->nArg = n;
    pC->aArg = (const EdnValue**)a;
    return SQLITE_OK;
  }
  if (p->type == EDN_LIST) {
    EdnValue *const *a = p->u.c.a;
    int n = p->u.c.n;
    const EdnValue *pHead;
    if (n >= 1 && qpIsSrc(a[0])) {
      pC->pSrc = a[0];
      a++;
      n--;
    }
    if (n == 0 || a[0]->type != EDN_SYMBOL) {
      return qpErr(pP, p, "expected a clause, got %s", qpDescribe(pP, p));
    }
    pHead = a[0];
    if (qpIsSym(pHead, "not") || qpIsSym(pHead, "and") || qpIsSym(pHead, "or")) {
      pC->kind = qpIsSym(pHead, "not") ? QC_NOT : qpIsSym(pHead, "and") ? QC_AND : QC_OR;
      if (n < 2) return qpErr(pP, p, "(%s) needs at least one clause", pHead->u.s.z);
      pC->nSub = n - 1;
      return qpClauses(pP, a + 1, n - 1, &pC->aSub, iDepth + 1);
    }
    if (qpIsSym(pHead, "not-join") || qpIsSym(pHead, "or-join")) {
      int bOr = qpIsSym(pHead, "or-join");
      pC->kind = bOr ? QC_OR_JOIN : QC_NOT_JOIN;
      if (n < 3) return qpErr(pP, p, "(%s [vars] clause...) needs variables and a clause", pHead->u.s.z);
      if (qpVarVector(pP, a[1], pC, bOr)) return pP->rc;
      pC->nSub = n - 2;
      return qpClauses(pP, a + 2, n - 2, &pC->aSub, iDepth + 1);
    }
    if (ednIsVar(pHead) || qpIsBlank(pHead)) {
      return qpErr(pP, pHead, "expected a rule name, got %s", qpDescribe(pP, pHead));
    }
    return qpRuleCall(pP, pC, a, n);
  }
  return qpErr(pP, p, "expected a clause (a vector or a list), got %s", qpDescribe(pP, p));
}

static int qpClauses(QParse *pP, EdnValue *const *aForm, int n, QClause ***paOut,
                     int iDepth) {
  int i;
  *paOut = qpAlloc(pP, sizeof(QClause*) * (n ? n : 1));
  if (*paOut == NULL) return pP->rc;
  for (i = 0; i < n; i++) {
    if (qpClause(pP, aForm[i], &(*paOut)[i], iDepth)) return pP->rc;
    if ((*paOut)[i]->kind == QC_AND && iDepth == 0) {
      return qpErr(pP, aForm[i], "(and ...) is only allowed inside or");
    }
  }
  return SQLITE_OK;
}

/* --------------------------------------------------------- :order etc. */

static int qpOrderItem(QParse *pP, QQuery *pQ, const EdnValue *p, int iDepth) {
  QOrder *pO;
  if (p->type == EDN_VECTOR && iDepth == 0) {
    int i;
    for (i = 0; i < p->u.c.n; i++) {
      if (qpOrderItem(pP, pQ, p->u.c.a[i], 1)) return pP->rc;
    }
    return SQLITE_OK;
  }
  pO = &pQ->aOrder[pQ->nOrder];
  if (ednIsVar(p)) {
    pO->pVar = p;
  } else if (p->type == EDN_LIST && p->u.c.n == 2
             && (qpIsSym(p->u.c.a[0], "asc") || qpIsSym(p->u.c.a[0], "desc"))) {
    if (qpVar(pP, p->u.c.a[1], " in :order")) return pP->rc;
    pO->pVar = p->u.c.a[1];
    pO->bDesc = qpIsSym(p->u.c.a[0], "desc");
  } else {
    return qpErr(pP, p, "expected ?x, (asc ?x) or (desc ?x) in :order, got %s",
                 qpDescribe(pP, p));
  }
  {
    /* a second key of one variable never decides: (desc ?x) after ?x
    ** would pass silently as ascending */
    int i;
    for (i = 0; i < pQ->nOrder; i++) {
      if (strcmp(pQ->aOrder[i].pVar->u.s.z, pO->pVar->u.s.z) == 0) {
        return qpErr(pP, pO->pVar, "%s appears twice in :order", pO->pVar->u.s.z);
      }
    }
  }
  pQ->nOrder++;
  return SQLITE_OK;
}

static int qpOrder(QParse *pP, QQuery *pQ, const EdnValue *pAt, EdnValue *const *aForm, int n) {
  int i, nMax = 0;
  for (i = 0; i < n; i++) nMax += aForm[i]->type == EDN_VECTOR ? aForm[i]->u.c.n : 1;
  if (nMax == 0) return qpErr(pP, pAt, ":order with nothing to order by");
  pQ->aOrder = qpAlloc(pP, sizeof(QOrder) * nMax);
  if (pQ->aOrder == NULL) return pP->rc;
  for (i = 0; i < n; i++) {
    if (qpOrderItem(pP, pQ, aForm[i], 0)) return pP->rc;
  }
  return SQLITE_OK;
}

static int qpLimit(QParse *pP, const EdnValue *pAt, EdnValue *const *aForm, int n,
                   const EdnValue **ppOut) {
  if (n != 1) return qpErr(pP, pAt, "%s takes one value", pAt->u.s.z);
  if (aForm[0]->type == EDN_INT) {
    if (aForm[0]->u.i < 0) return qpErr(pP, aForm[0], "%s must not be negative", pAt->u.s.z);
  } else if (!ednIsVar(aForm[0])) {
    return qpErr(pP, aForm[0], "%s takes an integer or a variable, got %s", pAt->u.s.z,
                 qpDescribe(pP, aForm[0]));
  }
  *ppOut = aForm[0];
  return SQLITE_OK;
}

/* One section: keyword pKw followed by aForm[0..n). In the map form the
** value is a vector unpacked into aForm (except scalars for :limit etc.). */
static int qpSection(QParse *pP, QQuery *pQ, const EdnValue *pKw, EdnValue *const *aForm,
                     int n, unsigned *pmSeen) {
  static const char *const azKw[] = {
    ":find", ":keys", ":strs", ":syms", ":with", ":in", ":where", ":order", ":limit",
    ":offset", ":timeout", 0
  };
  int i, iKw = -1;
  for (i = 0; azKw[i]; i++) if (ednIsKeyword(pKw, azKw[i])) iKw = i;
  if (iKw < 0) {
    if (pKw->type == EDN_KEYWORD) {
      return qpErr(pP, pKw, "unknown keyword clause %s", pKw->u.s.z);
    }
    return qpErr(pP, pKw, "expected a keyword clause (:find, :in, :where ...), got %s",
                 qpDescribe(pP, pKw));
  }
  if (*pmSeen & (1u << iKw)) return qpErr(pP, pKw, "%s appears twice", pKw->u.s.z);
  *pmSeen |= 1u << iKw;
  switch (iKw) {
    case 0: return qpFind(pP, pQ, pKw, aForm, n);
    case 1: return qpKeys(pP, pQ, pKw, QK_KEYS, aForm, n);
    case 2: return qpKeys(pP, pQ, pKw, QK_STRS, aForm, n);
    case 3: return qpKeys(pP, pQ, pKw, QK_SYMS, aForm, n);
    case 4:
      pQ->nWith = n;
      pQ->aWith = (const EdnValue**)aForm;
      for (i = 0; i < n; i++) if (qpVar(pP, aForm[i], " in :with")) return pP->rc;
      return SQLITE_OK;
    case 5:
      if (n == 0) return qpErr(pP, pKw, ":in with no bindings");
      return qpIn(pP, pQ, aForm, n);
    case 6:
      pQ->nWhere = n;
      return qpClauses(pP, aForm, n, &pQ->aWhere, 0);
    case 7: return qpOrder(pP, pQ, pKw, aForm, n);
    case 8: return qpLimit(pP, pKw, aForm, n, &pQ->pLimit);
    case 9: return qpLimit(pP, pKw, aForm, n, &pQ->pOffset);
    default: return SQLITE_OK;   /* :timeout: the host interrupts instead */
  }
}

static int qpQuery(QParse *pP, QQuery *pQ, const EdnValue *pForm) {
  unsigned mSeen = 0;
  int i;
  if (pForm->type == EDN_VECTOR) {
    EdnValue *const *a = pForm->u.c.a;
    int n = pForm->u.c.n;
    i = 0;
    if (n == 0 || a[0]->type != EDN_KEYWORD) {
      return qpErr(pP, n ? a[0] : pForm, "a query starts with :find");
    }
    while (i < n) {
      int j = i + 1;
      while (j < n && a[j]->type != EDN_KEYWORD) j++;
      /* keywords inside :find/:where are never bare, so a keyword always
      ** starts a new section. */
      if (qpSection(pP, pQ, a[i], a + i + 1, j - i - 1, &mSeen)) return pP->rc;
      i = j;
    }
  } else if (pForm->type == EDN_MAP) {
    for (i = 0; i < pForm->u.c.n; i += 2) {
      const EdnValue *pK = pForm->u.c.a[i];
      EdnValue *const *pV = &pForm->u.c.a[i + 1];
      const EdnValue *pVal = *pV;
      int bScalar = ednIsKeyword(pK, ":limit") || ednIsKeyword(pK, ":offset")
                    || ednIsKeyword(pK, ":timeout");
      if (bScalar) {
        if (qpSection(pP, pQ, pK, pV, 1, &mSeen)) return pP->rc;
      } else if (ednIsKeyword(pK, ":order") && pVal->type == EDN_LIST) {
        if (qpSection(pP, pQ, pK, pV, 1, &mSeen)) return pP->rc;
      } else if (pVal->type == EDN_VECTOR || pVal->type == EDN_LIST) {
        if (qpSection(pP, pQ, pK, pVal->u.c.a, pVal->u.c.n, &mSeen)) return pP->rc;
      } else if (pK->type == EDN_KEYWORD) {
        if (qpSection(pP, pQ, pK, pV, 1, &mSeen)) return pP->rc;
      } else {
        return qpErr(pP, pK, "expected a keyword clause, got %s", qpDescribe(pP, pK));
      }
    }
  } else {
    return qpErr(pP, pForm, "a query is a vector [:find ...] or a map {:find [...]}, got %s",
                 qpDescribe(pP, pForm));
  }
  if (!(mSeen & 1u)) return qpErr(pP, pForm, "query has no :find");
  if (pQ->eKeys != QK_NONE) {
    if (pQ->eFind != FIND_REL) {
      return qpErr(pP, pForm, ":keys/:strs/:syms need a relation :find");
    }
    if (pQ->nKey != pQ->nFind) {
      return qpErr(pP, pForm, ":find has %d element(s) but %d key name(s)", pQ->nFind, pQ->nKey);
    }
  }
  return SQLITE_OK;
}

int qpParse(EdnArena *pArena, const char *zQuery, int nQuery, QQuery **ppQuery,
           char **pzErr) {
  QParse p;
  EdnValue *pForm = NULL;
  EdnError err;
  QQuery *pQ;
  int rc;
  *ppQuery = NULL;
  p.pArena = pArena;
  p.pzErr = pzErr;
  p.rc = SQLITE_OK;
  memset(&err, 0, sizeof err);
  rc = ednReadOne(pArena, zQuery, nQuery, &pForm, &err);
  if (rc == SQLITE_ERROR) {
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("line %d col %d: %s", err.line, err.col, err.zMsg);
    return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if (rc != SQLITE_OK) return rc;
  pQ = qpAlloc(&p, sizeof(QQuery));
  if (pQ == NULL) return p.rc;
  pQ->pForm = pForm;
  if (qpQuery(&p, pQ, pForm)) return p.rc;
  *ppQuery = pQ;
  return SQLITE_OK;
}

/* --------------------------------------------------------------- rules */

static int qpRule(QParse *pP, const EdnValue *p, QRule *pR) {
  const EdnValue *pHead;
  int i, j, nHead = 0;
  memset(pR, 0, sizeof *pR);
  pR->pForm = p;
  /* Datomic's grammar: rule = [rule-head clause+], rule-head = [rule-name
  ** rule-vars], where [] is a list or a vector. */
  if ((p->type != EDN_VECTOR && p->type != EDN_LIST) || p->u.c.n < 2
      || (p->u.c.a[0]->type != EDN_LIST && p->u.c.a[0]->type != EDN_VECTOR)) {
    return qpErr(pP, p, "expected a rule [(name ?a ...) clause ...], got %s", qpDescribe(pP, p));
  }
  pHead = p->u.c.a[0];
  if (pHead->u.c.n < 1 || pHead->u.c.a[0]->type != EDN_SYMBOL || ednIsVar(pHead->u.c.a[0])) {
    return qpErr(pP, pHead, "expected a rule name, got %s", qpDescribe(pP, pHead));
  }
  pR->zName = pHead->u.c.a[0]->u.s.z;
  for (i = 1; i < pHead->u.c.n; i++) {
    const EdnValue *pA = pHead->u.c.a[i];
    nHead += pA->type == EDN_VECTOR ? pA->u.c.n : 1;
  }
  pR->aHead = qpAlloc(pP, sizeof(EdnValue*) * (nHead ? nHead : 1));
  pR->abReq = qpAlloc(pP, nHead ? nHead : 1);
  if (pR->aHead == NULL || pR->abReq == NULL) return pP->rc;
  for (i = 1; i < pHead->u.c.n; i++) {
    const EdnValue *pA = pHead->u.c.a[i];
    if (pA->type == EDN_VECTOR) {
      /* rule-vars = [variable+ | ([variable+] variable*)] */
      if (i != 1 || pA->u.c.n == 0) {
        return qpErr(pP, pA, "rule %s: the required variables come first in its head, as one"
                     " vector of variables (name [?a ?b] ?c), got %s", pR->zName, qpDescribe(pP, pA));
      }
      for (j = 0; j < pA->u.c.n; j++) {
        if (qpVar(pP, pA->u.c.a[j], " in rule head")) return pP->rc;
        pR->abReq[pR->nHead] = 1;
        pR->aHead[pR->nHead++] = pA->u.c.a[j];
        pR->nReq++;
      }
    } else {
      if (qpVar(pP, pA, " in rule head")) return pP->rc;
      pR->aHead[pR->nHead++] = pA;
    }
  }
  /* DataScript's parser: "Rule variables should be distinct" (a head
  ** naming one twice would be an equality no call can see). */
  for (i = 1; i < pR->nHead; i++) {
    for (j = 0; j < i; j++) {
      if (strcmp(pR->aHead[i]->u.s.z, pR->aHead[j]->u.s.z) == 0) {
        return qpErr(pP, pR->aHead[i], "rule %s names %s twice in its head (rule variables must be"
                     " distinct)", pR->zName, pR->aHead[i]->u.s.z);
      }
    }
  }
  pR->nClause = p->u.c.n - 1;
  return qpClauses(pP, p->u.c.a + 1, p->u.c.n - 1, &pR->aClause, 1);
}

/* Every definition of one rule takes the same arguments, as many required
** ones first (DataScript's validate-arity: "Arity mismatch for rule"); a
** call of the wrong arity would otherwise use only the definitions that
** fit it. pR is the newest of pSet's rules. */
static int qpRuleArity(QParse *pP, const QRuleSet *pSet, const QRule *pR) {
  int i;
  for (i = 0; i < pSet->nRule; i++) {
    const QRule *pO = pSet->aRule[i];
    if (strcmp(pO->zName, pR->zName) || (pO->nHead == pR->nHead && pO->nReq == pR->nReq)) continue;
    if (pO->nReq == 0 && pR->nReq == 0) {
      return qpErr(pP, pR->pForm->u.c.a[0], "rule %s is defined with %d argument(s) and with %d: every"
                   " definition of a rule takes the same arguments", pR->zName, pO->nHead, pR->nHead);
    }
    return qpErr(pP, pR->pForm->u.c.a[0], "rule %s is defined with %d argument(s), %d required, and with"
                 " %d, %d required: every definition of a rule takes the same arguments",
                 pR->zName, pO->nHead, pO->nReq, pR->nHead, pR->nReq);
  }
  return SQLITE_OK;
}

int qpParseRules(EdnArena *pArena, const EdnValue *pForm, QRuleSet *pSet, char **pzErr) {
  QParse p;
  int i;
  p.pArena = pArena;
  p.pzErr = pzErr;
  p.rc = SQLITE_OK;
  memset(pSet, 0, sizeof *pSet);
  if (pForm->type != EDN_VECTOR && pForm->type != EDN_LIST) {
    qpErr(&p, pForm, "expected a vector of rules, got %s", qpDescribe(&p, pForm));
  } else {
    pSet->aRule = qpAlloc(&p, sizeof(QRule*) * (pForm->u.c.n ? pForm->u.c.n : 1));
    for (i = 0; p.rc == SQLITE_OK && i < pForm->u.c.n; i++) {
      QRule *pR = qpAlloc(&p, sizeof(QRule));
      if (pR == NULL) break;
      if (qpRule(&p, pForm->u.c.a[i], pR) || qpRuleArity(&p, pSet, pR)) break;
      pSet->aRule[pSet->nRule++] = pR;
    }
  }
  if (p.rc == SQLITE_ERROR && *pzErr) {
    char *z = sqlite3_mprintf("rules: %s", *pzErr);
    sqlite3_free(*pzErr);
    *pzErr = z;
    if (z == NULL) return SQLITE_NOMEM;
  }
  return p.rc;
}
