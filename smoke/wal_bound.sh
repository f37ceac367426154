#!/usr/bin/env bash
# smoke/wal_bound.sh — the WAL bound (SPEC §3, README "Limits and settings": MENTAT_WAL_RESTART_BYTES)
# holds with writers in several processes: bench/soak.py's 4 processes x 4 threads of reads,
# edn_t and :db/cas for 8 s with a 16 MiB bound. The RESTART checkpoint must win the write
# lock that the other processes' writers take back between commits (store_context.c's short
# polls); with SQLite's own busy sleeps it timed out and the WAL passed 45 MiB. Used by
# `make smoke`; about 10 seconds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SO=${SO:-$HERE/../build/libmentat_sqlite.so}
MENTAT_WAL_RESTART_BYTES=16777216 SOAK_SECONDS=8 \
  exec "${PY:-/usr/bin/python3}" -u "$HERE/../bench/soak.py" "$SO" /dev/null
