#!/usr/bin/env bash
# smoke/cases.sh — the cases of test/cases/*.test (also run in-process by
# build/test_cases) against the built .so in the system Python. Used by
# `make smoke`; then again with every store a host store (--host).
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
rc=0
"${PY:-/usr/bin/python3}" "$HERE/cases.py" "$SO" || rc=1
# The same cases with every store a host store (db_path ':main', SPEC §3a).
echo "-- host stores"
"${PY:-/usr/bin/python3}" "$HERE/cases.py" --host "$SO" || rc=1
exit $rc
