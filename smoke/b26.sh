#!/usr/bin/env bash
# smoke/b26.sh — peer fault B26: 4 processes x 250 upserts (read, then write) on one
# store while a 5th process counts in a loop; every upsert succeeds, one entity with
# 1000 values, tx ids distinct and rising, the reader's counts only go up and never show
# part of a transaction (smoke/b26_upserts.py checks each). Used by `make smoke`
# (SO = absolute path of the built .so). A few seconds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SO=${SO:-$HERE/../build/libmentat_sqlite.so}
PY=${PY:-/usr/bin/python3}
exec "$PY" "$HERE/b26_upserts.py" "$SO"
