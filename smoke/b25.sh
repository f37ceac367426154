#!/usr/bin/env bash
# smoke/b25.sh — peer fault B25: a host cursor left open does not pin the store's WAL
# (smoke/b25_cursor.py says what is checked). Used by `make smoke`; a few seconds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SO=${SO:-$HERE/../build/libmentat_sqlite.so}
exec "${PY:-/usr/bin/python3}" -u "$HERE/b25_cursor.py" "$SO"
