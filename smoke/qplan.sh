#!/usr/bin/env bash
# smoke/qplan.sh — EXPLAIN QUERY PLAN of every public acceptance query (test_qlang's
# "qplan" case compiles each on a store loaded with the case's schema and tx), summarised
# by smoke/qplan.py: no full scan of datoms where an attribute is a constant, no automatic
# index over datoms; counts the plans joined in the compiler's order and those sorting for DISTINCT.
# Skipped when the acceptance cases are not beside the clone (SHARED, default ../shared),
# saying SKIPPED; under MENTAT_REQUIRE_HOSTS=1 (CI) that is a failure.
# Usage: SHARED=/path/to/shared bash smoke/qplan.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
case "$SHARED" in /*) ;; *) SHARED=$ROOT/$SHARED ;; esac
if [ ! -f "$SHARED/acceptance/cases.jsonl" ]; then
  if [ "${MENTAT_REQUIRE_HOSTS:-0}" = 1 ]; then
    echo "qplan.sh: FAILED: $SHARED/acceptance/cases.jsonl not found (MENTAT_REQUIRE_HOSTS=1)" >&2
    exit 1
  fi
  echo "qplan.sh: SKIPPED: $SHARED/acceptance/cases.jsonl not found"
  exit 0
fi
make -s -C "$ROOT" build/test_qlang >/dev/null
cd "$ROOT"
QPLAN_REPORT=1 CK_RUN_CASE=qplan SHARED="$SHARED" build/test_qlang > build/qplan.txt 2>&1 || {
  tail -20 build/qplan.txt; echo "qplan.sh: test_qlang qplan failed" >&2; exit 1; }
/usr/bin/python3 "$HERE/qplan.py" < build/qplan.txt
