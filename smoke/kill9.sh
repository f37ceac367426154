#!/usr/bin/env bash
# smoke/kill9.sh — a transaction killed by SIGKILL changes nothing.
#
# For each trial a fresh store gets a schema and 20 small transactions; then a
# Python host (/usr/bin/python3 + the extension, smoke/kill9_tx.py) runs ONE
# edn_t of 100,000 datoms and this script kills it with SIGKILL in the middle:
#   early  — 0.3 s after it starts the call (expanding / resolving / writing)
#   wal    — as soon as the WAL grows by 64 KiB (the commit is writing frames)
#   late   — 0.8 s after the call starts
# (the whole call takes 0.5-2 s here; a timed trial whose transaction was
# already done, or committed as the kill landed, is retried with half the
# delay, up to three times)
# After each kill the store must pass PRAGMA integrity_check, hold none of the
# killed transaction's datoms or log rows and everything from before, and give
# the next edn_t the next fresh tx id (kill9_tx.py check). A trial whose
# transaction still finished before the kill after three tries fails: the
# kill proved nothing.
# Used by `make smoke` (SO = absolute path of the built .so). About 10-20 s.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SO=${SO:-$HERE/../build/libmentat_sqlite.so}
PY=${PY:-/usr/bin/python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kill9.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fsize() { stat -c %s "$1" 2>/dev/null || echo 0; }

trial() {
  local mode=$1 delay=${2:-0} db="$WORK/$1.db" pid base killed=0
  rm -f "$db" "$db-wal" "$db-shm" "$db.before.json"
  "$PY" "$HERE/kill9_tx.py" "$SO" "$db" setup || return 1
  base=$(fsize "$db-wal")
  "$PY" "$HERE/kill9_tx.py" "$SO" "$db" big > "$WORK/$mode.out" 2>&1 &
  pid=$!
  # wait for "go": the big edn_t call is about to start
  for _ in $(seq 1 500); do
    grep -q '^go' "$WORK/$mode.out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  case $mode in
    early|late) sleep "$delay" ;;
    wal)
      # a tight poll in one process (a stat per loop in bash forks, and the
      # commit writes its frames in 64 KiB pieces within a few ms)
      # (exit 0: it sent the kill; bash reaps the child at once, so the
      # check below must not ask kill -0)
      "$PY" - "$db-wal" "$base" "$pid" <<'PYEOF' && killed=1
import os, signal, sys, time
path, base, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t0 = time.monotonic()
while time.monotonic() - t0 < 20:
    try:
        if os.stat(path).st_size > base + 65536:
            os.kill(pid, signal.SIGKILL)
            sys.exit(0)
        os.kill(pid, 0)
    except FileNotFoundError:
        pass
    except ProcessLookupError:
        break
sys.exit(1)
PYEOF
      ;;
  esac
  if [ "${killed:-0}" = 0 ] && ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" || true
    echo "[$mode] the transaction ended before the kill: $(tr '\n' ' ' < "$WORK/$mode.out")"
    return 2
  fi
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if grep -q 'big finished' "$WORK/$mode.out"; then
    # the commit returned just before the kill landed: proved nothing, try earlier
    echo "[$mode] the transaction committed before the kill"
    return 2
  fi
  echo "[$mode] killed pid $pid (WAL $(fsize "$db-wal") bytes)"
  local r=0
  "$PY" "$HERE/kill9_tx.py" "$SO" "$db" check || r=$?
  # 3: the commit had completed before the kill landed: try earlier
  [ $r = 3 ] && return 2
  return $r
}

rc=0
for spec in early:0.3 wal:0 late:0.8; do
  mode=${spec%%:*} delay=${spec#*:} r=2
  for _ in 1 2 3; do
    r=0; trial "$mode" "$delay" || r=$?
    [ $r = 2 ] || break
    delay=$(awk -v d="$delay" 'BEGIN { print d / 2 }')
  done
  [ $r = 0 ] || { echo "FAIL [$mode]"; rc=1; }
done
[ $rc = 0 ] && echo "kill9: ok"
exit $rc
