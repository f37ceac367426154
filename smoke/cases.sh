#!/usr/bin/env bash
# smoke/cases.sh — the cases of test/cases/*.test (also run in-process by
# build/test_cases) against the built .so in the system Python. Used by
# `make smoke`.
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
exec "${PY:-/usr/bin/python3}" "$HERE/cases.py" "$SO"
