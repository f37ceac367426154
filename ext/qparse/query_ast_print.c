/*
** query_ast_print.c — the canonical text of a parsed query or rule set
** (query_ast.h), for the parser's tests and for debugging: one token per
** node, e.g. "find=rel(?a,(count ?b)) in=($,?x,[?y ...]) where=(pat(?e
** :a ?v) ...)". Takes the AST, appends to an sqlite3_str; calls the EDN
** printer only.
*/
#include "query_ast.h"

static void qpPrintTerms(sqlite3_str *pOut, const EdnValue *const *a, int n) {
  int i;
  for (i = 0; i < n; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, ' ');
    ednPrint(pOut, a[i]);
  }
}

static void qpPrintBinding(sqlite3_str *pOut, const QBinding *pB) {
  switch (pB->kind) {
    case QB_SCALAR: qpPrintTerms(pOut, pB->aVar, 1); break;
    case QB_COLL:
      sqlite3_str_appendall(pOut, "[");
      qpPrintTerms(pOut, pB->aVar, 1);
      sqlite3_str_appendall(pOut, " ...]");
      break;
    case QB_TUPLE:
      sqlite3_str_appendall(pOut, "[");
      qpPrintTerms(pOut, pB->aVar, pB->nVar);
      sqlite3_str_appendall(pOut, "]");
      break;
    case QB_REL:
      sqlite3_str_appendall(pOut, "[[");
      qpPrintTerms(pOut, pB->aVar, pB->nVar);
      sqlite3_str_appendall(pOut, "]]");
      break;
  }
}

static void qpPrintClauses(sqlite3_str *pOut, QClause *const *a, int n);

static void qpPrintClause(sqlite3_str *pOut, const QClause *pC) {
  static const char *const azKind[] = {
    "pat", "pred", "fn", "rule", "not", "not-join", "or", "or-join", "and"
  };
  sqlite3_str_appendf(pOut, "%s(", azKind[pC->kind]);
  if (pC->pSrc) {
    ednPrint(pOut, pC->pSrc);
    sqlite3_str_appendchar(pOut, 1, ' ');
  }
  switch (pC->kind) {
    case QC_PATTERN:
      qpPrintTerms(pOut, pC->aArg, pC->nArg);
      break;
    case QC_PRED: case QC_RULE: case QC_FN:
      sqlite3_str_appendall(pOut, pC->zName);
      if (pC->nArg) sqlite3_str_appendchar(pOut, 1, ' ');
      qpPrintTerms(pOut, pC->aArg, pC->nArg);
      if (pC->kind == QC_FN) {
        sqlite3_str_appendall(pOut, " -> ");
        qpPrintBinding(pOut, &pC->bind);
      }
      break;
    default:
      if (pC->kind == QC_NOT_JOIN || pC->kind == QC_OR_JOIN) {
        sqlite3_str_appendall(pOut, "[");
        if (pC->nReq) {
          sqlite3_str_appendall(pOut, "[");
          qpPrintTerms(pOut, pC->aJoin, pC->nReq);
          sqlite3_str_appendall(pOut, "]");
          if (pC->nJoin > pC->nReq) sqlite3_str_appendchar(pOut, 1, ' ');
        }
        qpPrintTerms(pOut, pC->aJoin + pC->nReq, pC->nJoin - pC->nReq);
        sqlite3_str_appendall(pOut, "] ");
      }
      qpPrintClauses(pOut, pC->aSub, pC->nSub);
      break;
  }
  sqlite3_str_appendall(pOut, ")");
}

static void qpPrintClauses(sqlite3_str *pOut, QClause *const *a, int n) {
  int i;
  for (i = 0; i < n; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, ' ');
    qpPrintClause(pOut, a[i]);
  }
}

void qpPrint(sqlite3_str *pOut, const QQuery *p) {
  static const char *const azFind[] = { "rel", "coll", "tuple", "scalar" };
  static const char *const azKeys[] = { "", "keys", "strs", "syms" };
  int i;
  sqlite3_str_appendf(pOut, "find=%s(", azFind[p->eFind]);
  for (i = 0; i < p->nFind; i++) {
    if (i) sqlite3_str_appendchar(pOut, 1, ',');
    sqlite3_str_appendall(pOut, p->aFind[i].zName);
  }
  sqlite3_str_appendall(pOut, ")");
  if (p->eKeys != QK_NONE) {
    sqlite3_str_appendf(pOut, " %s=(", azKeys[p->eKeys]);
    for (i = 0; i < p->nKey; i++) {
      if (i) sqlite3_str_appendchar(pOut, 1, ',');
      sqlite3_str_appendall(pOut, p->azKey[i]);
    }
    sqlite3_str_appendall(pOut, ")");
  }
  if (p->nWith) {
    sqlite3_str_appendall(pOut, " with=(");
    qpPrintTerms(pOut, p->aWith, p->nWith);
    sqlite3_str_appendall(pOut, ")");
  }
  if (p->nIn) {
    sqlite3_str_appendall(pOut, " in=(");
    for (i = 0; i < p->nIn; i++) {
      if (i) sqlite3_str_appendchar(pOut, 1, ',');
      if (p->aIn[i].kind == QIN_BIND) qpPrintBinding(pOut, &p->aIn[i].bind);
      else ednPrint(pOut, p->aIn[i].pForm);
    }
    sqlite3_str_appendall(pOut, ")");
  }
  sqlite3_str_appendall(pOut, " where=(");
  qpPrintClauses(pOut, p->aWhere, p->nWhere);
  sqlite3_str_appendall(pOut, ")");
  if (p->nOrder) {
    sqlite3_str_appendall(pOut, " order=(");
    for (i = 0; i < p->nOrder; i++) {
      if (i) sqlite3_str_appendchar(pOut, 1, ',');
      sqlite3_str_appendf(pOut, "%s %s", p->aOrder[i].pVar->u.s.z,
                          p->aOrder[i].bDesc ? "desc" : "asc");
    }
    sqlite3_str_appendall(pOut, ")");
  }
  if (p->pLimit) {
    sqlite3_str_appendall(pOut, " limit=");
    ednPrint(pOut, p->pLimit);
  }
  if (p->pOffset) {
    sqlite3_str_appendall(pOut, " offset=");
    ednPrint(pOut, p->pOffset);
  }
}

void qpPrintRules(sqlite3_str *pOut, const QRuleSet *p) {
  int i, j;
  for (i = 0; i < p->nRule; i++) {
    const QRule *pR = p->aRule[i];
    if (i) sqlite3_str_appendchar(pOut, 1, ' ');
    sqlite3_str_appendf(pOut, "rule(%s", pR->zName);
    for (j = 0; j < pR->nHead; j++) {
      sqlite3_str_appendf(pOut, " %s%s", pR->abReq[j] ? "!" : "", pR->aHead[j]->u.s.z);
    }
    sqlite3_str_appendall(pOut, " : ");
    qpPrintClauses(pOut, pR->aClause, pR->nClause);
    sqlite3_str_appendall(pOut, ")");
  }
}
