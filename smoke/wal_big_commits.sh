#!/usr/bin/env bash
# smoke/wal_big_commits.sh — a wide cursor left open under commits of 8 MiB values keeps the WAL
# under MENTAT_WAL_RESTART_BYTES (smoke/wal_big_commits.py says what is checked). Used by
# `make smoke`; about 10 seconds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SO=${SO:-$HERE/../build/libmentat_sqlite.so}
exec "${PY:-/usr/bin/python3}" -u "$HERE/wal_big_commits.py" "$SO"
