/*
** query_compile_exists.c — data patterns that share no variable with what
** a query returns become one existence check. Takes the parsed query
** before its :where is compiled; rewrites pQ->aWhere in place (memory from
** the plan's arena), each such group of patterns replaced by a clause the
** or compiler makes an uncorrelated EXISTS (an or-join of no variables and
** one branch, which the parser never gives).
**
** WHY: set semantics. A group of patterns whose variables are neither
** found, :with, inputs nor mentioned by any other clause says only whether
** some datoms exist: the query's set of results is the same with the
** group as a condition. Joined as written, every row of the group repeats
** every row of the rest, which the result's DISTINCT then removes one by
** one; rows that carry a large value are copied for each repeat (issue
** 19 F4: an 8 MiB string and 300 unrelated entities, 1.2 s for a one-row
** answer). As an EXISTS the group is asked once and stops at its first
** row.
**
** Only when nothing in the :where can fail at run time (no function or
** predicate qcfMayFail names, no rule call, whose body may hold one): a
** failing function sees exactly the rows of the clauses before it
** (issue 14), and an EXISTS would stop before rows that make it fail.
** Patterns of a named source ($2) stay where they are.
*/
#include <stdlib.h>
#include <string.h>
#include "query_compile_scope.h"

/* Variables per clause past which the rewrite is not tried. */
#define QCX_MAX_VARS 64

typedef struct QcxName { const char *z; int iClause; } QcxName;

static int qcxCmpName(const void *pA, const void *pB) {
  const QcxName *a = (const QcxName *)pA, *b = (const QcxName *)pB;
  int c = strcmp(a->z, b->z);
  return c ? c : a->iClause - b->iClause;
}

/* Can clause p, or a clause nested in it, fail at run time or call a rule? */
static int qcxMayFail(const QClause *p) {
  int i;
  if (p->kind == QC_RULE) return 1;
  if ((p->kind == QC_FN || p->kind == QC_PRED) && qcfMayFail(p->zName)) return 1;
  for (i = 0; i < p->nSub; i++) if (qcxMayFail(p->aSub[i])) return 1;
  return 0;
}

static int qcxRoot(int *aUp, int i) {
  while (aUp[i] != i) {
    aUp[i] = aUp[aUp[i]];
    i = aUp[i];
  }
  return i;
}

/* Is z a variable the query returns, keeps (:with) or takes as an input? */
static int qcxKept(const QQuery *pQ, const char *z) {
  int i, j;
  for (i = 0; i < pQ->nFind; i++) {
    const QFindElem *pE = &pQ->aFind[i];
    if (pE->pVar && ednIsVar(pE->pVar) && strcmp(pE->pVar->u.s.z, z) == 0) return 1;
    if (pE->pAggN && ednIsVar(pE->pAggN) && strcmp(pE->pAggN->u.s.z, z) == 0) return 1;
  }
  for (i = 0; i < pQ->nWith; i++) {
    if (ednIsVar(pQ->aWith[i]) && strcmp(pQ->aWith[i]->u.s.z, z) == 0) return 1;
  }
  for (i = 0; i < pQ->nIn; i++) {
    const QIn *pIn = &pQ->aIn[i];
    if (pIn->kind == QIN_PATTERN && pIn->pForm && ednIsVar(pIn->pForm) && strcmp(pIn->pForm->u.s.z, z) == 0) {
      return 1;
    }
    if (pIn->kind != QIN_BIND) continue;
    for (j = 0; j < pIn->bind.nVar; j++) {
      if (ednIsVar(pIn->bind.aVar[j]) && strcmp(pIn->bind.aVar[j]->u.s.z, z) == 0) return 1;
    }
  }
  for (i = 0; i < pQ->nOrder; i++) {
    if (ednIsVar(pQ->aOrder[i].pVar) && strcmp(pQ->aOrder[i].pVar->u.s.z, z) == 0) return 1;
  }
  if (pQ->pLimit && ednIsVar(pQ->pLimit) && strcmp(pQ->pLimit->u.s.z, z) == 0) return 1;
  if (pQ->pOffset && ednIsVar(pQ->pOffset) && strcmp(pQ->pOffset->u.s.z, z) == 0) return 1;
  return 0;
}

/* The groups of clauses that share variables (aUp, a union-find over
** clause indexes), from every (name, clause) pair sorted by name; *pbOk 0
** when a clause has too many variables to list. */
static int qcxGroups(QComp *pC, const QQuery *pQ, int *aUp, unsigned char *abKept, int *pbOk) {
  const char *az[QCX_MAX_VARS];
  QcxName *aName = NULL;
  int nName = 0, nAlloc = 0, i, j;
  *pbOk = 1;
  for (i = 0; i < pQ->nWhere; i++) aUp[i] = i;
  for (i = 0; i < pQ->nWhere; i++) {
    int nV = qcClauseVars(pQ->aWhere[i], az, QCX_MAX_VARS, 0);
    if (nV > QCX_MAX_VARS) { *pbOk = 0; break; }
    if (nName + nV > nAlloc) {
      int nNew = (nName + nV) * 2 + 16;
      QcxName *aNew = sqlite3_realloc64(aName, sizeof(QcxName) * (sqlite3_uint64)nNew);
      if (aNew == NULL) { sqlite3_free(aName); return qcNoMem(pC); }
      aName = aNew;
      nAlloc = nNew;
    }
    for (j = 0; j < nV; j++) {
      aName[nName].z = az[j];
      aName[nName++].iClause = i;
      if (qcxKept(pQ, az[j])) abKept[i] = 1;
    }
  }
  if (*pbOk && nName > 1) {
    qsort(aName, (size_t)nName, sizeof(QcxName), qcxCmpName);
    for (i = 1; i < nName; i++) {
      if (strcmp(aName[i].z, aName[i - 1].z) == 0) {
        int a = qcxRoot(aUp, aName[i].iClause), b = qcxRoot(aUp, aName[i - 1].iClause);
        if (a != b) aUp[a] = b;
      }
    }
  }
  sqlite3_free(aName);
  return SQLITE_OK;
}

/* The clause that stands for group g (the clauses of root g, in their
** order; nIn of them): an or-join of no variables whose one branch holds
** them, which the or compiler makes an uncorrelated EXISTS. */
static QClause *qcxFold(QComp *pC, const QQuery *pQ, int *aUp, int g, int nIn) {
  /* [0] the or-join, [1] its (and ...) branch when the group has several clauses */
  QClause *a = ednArenaAlloc(pC->pArena, sizeof(QClause) * 2);
  QClause **aSub = ednArenaAlloc(pC->pArena, sizeof(QClause *) * (size_t)(nIn + 1));
  int i, n = 0;
  if (a == NULL || aSub == NULL) {
    qcNoMem(pC);
    return NULL;
  }
  memset(a, 0, sizeof(QClause) * 2);
  for (i = 0; i < pQ->nWhere && n < nIn; i++) {
    if (qcxRoot(aUp, i) == g) aSub[1 + n++] = pQ->aWhere[i];
  }
  a[1].kind = QC_AND;
  a[1].pForm = aSub[1]->pForm;
  a[1].nSub = n;
  a[1].aSub = aSub + 1;
  aSub[0] = n == 1 ? aSub[1] : &a[1];
  a[0].kind = QC_OR_JOIN;
  a[0].pForm = aSub[1]->pForm;
  a[0].nSub = 1;
  a[0].aSub = aSub;
  return &a[0];
}

int qcxExists(QComp *pC, QQuery *pQ) {
  int *aUp = NULL, *aSize, i, n, bOk, rc = SQLITE_OK, nFold = 0;
  unsigned char *abKept = NULL, *abFold;
  QClause **aNew;
  if (pQ->nWhere < 2) return SQLITE_OK;
  for (i = 0; i < pQ->nWhere; i++) if (qcxMayFail(pQ->aWhere[i])) return SQLITE_OK;
  aUp = sqlite3_malloc64(sizeof(int) * 2 * (sqlite3_uint64)pQ->nWhere);
  abKept = sqlite3_malloc64(2 * (sqlite3_uint64)pQ->nWhere);
  if (aUp == NULL || abKept == NULL) { rc = qcNoMem(pC); goto done; }
  aSize = aUp + pQ->nWhere;
  abFold = abKept + pQ->nWhere;
  memset(abKept, 0, 2 * (size_t)pQ->nWhere);
  rc = qcxGroups(pC, pQ, aUp, abKept, &bOk);
  if (rc != SQLITE_OK || !bOk) goto done;
  /* a group folds when each of its clauses is a data pattern of the
  ** query's own source that names a variable, none of them kept, and it
  ** is not the whole :where */
  for (i = 0; i < pQ->nWhere; i++) { abFold[i] = 1; aSize[i] = 0; }
  for (i = 0; i < pQ->nWhere; i++) {
    const QClause *p = pQ->aWhere[i];
    const char *az[1];
    int g = qcxRoot(aUp, i);
    aSize[g]++;
    if (p->kind != QC_PATTERN || p->pSrc != NULL || abKept[i] || qcClauseVars(p, az, 1, 0) == 0) abFold[g] = 0;
  }
  for (i = 0; i < pQ->nWhere; i++) {
    if (qcxRoot(aUp, i) == i && abFold[i] && aSize[i] < pQ->nWhere) nFold++;
    else if (qcxRoot(aUp, i) == i) abFold[i] = 0;
  }
  if (nFold == 0) goto done;
  aNew = ednArenaAlloc(pC->pArena, sizeof(QClause *) * (size_t)pQ->nWhere);
  if (aNew == NULL) { rc = qcNoMem(pC); goto done; }
  for (i = 0, n = 0; i < pQ->nWhere; i++) {
    int g = qcxRoot(aUp, i);
    if (!abFold[g]) {
      aNew[n++] = pQ->aWhere[i];
    } else if (aSize[g] > 0) {
      /* the group's first clause: the fold takes its place, once */
      aNew[n] = qcxFold(pC, pQ, aUp, g, aSize[g]);
      if (aNew[n++] == NULL) { rc = pC->rc; goto done; }
      aSize[g] = 0;
    }
  }
  pQ->aWhere = aNew;
  pQ->nWhere = n;
done:
  sqlite3_free(aUp);
  sqlite3_free(abKept);
  return rc;
}
