#!/usr/bin/env bash
# smoke/dqlite/investigate.sh — reproduces the findings of NOTES.md: how
# dqlite treats writes made by a SQL function from inside a SELECT. Not part
# of `make smoke` (some cases abort the leader on purpose); run it by hand:
#
#   SO=$PWD/build/libmentat_sqlite.so bash smoke/dqlite/investigate.sh
#
# One 3-node cluster on loopback with the probe_* functions (node -probe).
# For each case: what the client got, how many of the case's rows each node's
# own copy of the database holds (dqlite's dump request), whether a plain
# INSERT afterwards works, and which nodes aborted (their log's assertion).
# Aborted nodes are restarted before the next case.
set -uo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUT=${DQLITE_OUT:-$TOP/build/dqlite}
export GOPATH=${GOPATH:-/usr/share/gocode} GO111MODULE=off GOCACHE=${GOCACHE:-$OUT/cache} \
  CGO_LDFLAGS_ALLOW='-Wl,-z,now'
mkdir -p "$OUT"
for prog in node client check; do
  (cd "$HERE/$prog" && go build -o "$OUT/$prog" .) || exit 1
done
W=$(mktemp -d /tmp/mentat-dqlite-inv.XXXXXX)
PIDS=()
STARTS=(0 0 0)
cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    [ -n "$p" ] && { kill -9 "$p" && wait "$p"; } 2>/dev/null
  done
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
base=$((21000 + ($$ * 11) % 20000))
ADDR=("127.0.0.1:$base" "127.0.0.1:$((base + 1))" "127.0.0.1:$((base + 2))")
ALL="${ADDR[0]},${ADDR[1]},${ADDR[2]}"
start() {
  local i=$1 join=""
  [ "$i" -ne 0 ] && join="-join ${ADDR[0]}"
  mkdir -p "$W/n$i"
  (cd "$W/n$i" && exec "$OUT/node" -dir "$W/n$i/data" -addr "${ADDR[$i]}" $join -ext "$SO" -probe \
    -latency 20ms >>"$W/n$i/log" 2>&1) &
  PIDS[$i]=$!
  STARTS[$i]=$((STARTS[$i] + 1))
  local t
  for t in $(seq 1 150); do
    [ "$(grep -c '^ready ' "$W/n$i/log")" -ge "${STARTS[$i]}" ] && return 0
    sleep 0.1
  done
  echo "node $i did not start"; cat "$W/n$i/log"; exit 1
}
alive() { kill -0 "${PIDS[$1]}" 2>/dev/null; }
revive() {
  local i t
  for i in 0 1 2; do alive "$i" || { wait "${PIDS[$i]}" 2>/dev/null; start "$i"; }; done
  for t in $(seq 1 100); do
    [ "$("$OUT/check" roles -cluster "$ALL" 2>/dev/null | grep -c ' voter$')" = 3 ] && return
    sleep 0.1
  done
}
C() { "$OUT/client" -cluster "$ALL" -db mentat "$@" 2>&1 | tr '\n' ' '; }
rows() { # rows TAG: the TAG rows in each node's own copy
  local i out=""
  for i in 0 1 2; do
    rm -rf "$W/d"
    if "$OUT/check" dump -node "${ADDR[$i]}" -db mentat -out "$W/d" 2>/dev/null; then
      out="$out n$i=$(sqlite3 "$W/d/mentat" "SELECT count(*) FROM probe WHERE v = '$1'" 2>&1 | tail -n 1)"
    else
      out="$out n$i=down"
    fi
  done
  echo "$out"
}
# aborted: sets ABORTED to the nodes that aborted since the last call.
aborted() {
  local i a
  ABORTED=""
  for i in 0 1 2; do
    a=$(grep -c 'Assertion' "$W/n$i/log")
    [ "$a" -gt "${SEEN[$i]}" ] &&
      ABORTED="$ABORTED n$i: $(grep 'Assertion' "$W/n$i/log" | tail -1 | sed 's/^node: //')"
    SEEN[$i]=$a
  done
  ABORTED=${ABORTED:- none}
}
SEEN=(0 0 0)
case_() { # case_ NAME TAG CLIENT-ARGS...
  local name=$1 tag=$2
  shift 2
  local L got after
  L=$("$OUT/check" leader -cluster "$ALL" 2>/dev/null)
  got=$(C "$@")
  sleep 0.5
  echo "$name"
  echo "  client:        $got"
  echo "  rows per node: $(rows "$tag")   (leader was $L)"
  after=$(C "INSERT INTO probe(v) VALUES('after')")
  sleep 0.3
  echo "  next INSERT:   $after"
  aborted
  echo "  aborted:      $ABORTED"
  revive
}

start 0
start 1
start 2
revive
C "CREATE TABLE probe(id INTEGER PRIMARY KEY, v TEXT)" >/dev/null
C "CREATE TABLE sink(x)" >/dev/null
echo "info: $(C "SELECT probe_info()")"
W1="SELECT probe_write('INSERT INTO probe(v) VALUES(?)', "
case_ "E1 SELECT f() as a query, autocommit" E1 -query "$W1'E1')"
case_ "E2 SELECT f() as an exec, autocommit" E2 -exec "$W1'E2')"
case_ "E3 SELECT f() as a query inside BEGIN ... COMMIT" E3 -tx -query "$W1'E3')"
case_ "E4 INSERT INTO sink SELECT f() as an exec, autocommit" E4 -exec "INSERT INTO sink $W1'E4')"
case_ "E5 SELECT f() as a query inside BEGIN ... ROLLBACK" E5 -tx -rollback -query "$W1'E5')"
case_ "E6 INSERT ... RETURNING as a query, autocommit" E6 -query "INSERT INTO probe(v) VALUES('E6') RETURNING id"
case_ "E7 INSERT ... RETURNING as a query inside BEGIN ... COMMIT" E7 -tx -query "INSERT INTO probe(v) VALUES('E7') RETURNING id"
case_ "E8 second connection through dqlite's VFS, inside BEGIN ... COMMIT" E8 -tx -query \
  "SELECT probe_write_vfs('INSERT INTO probe(v) VALUES(?)', 'E8')"
L=$("$OUT/check" leader -cluster "$ALL" 2>/dev/null)
echo "E9 second connection to a file (default VFS, today's file store), inside BEGIN ... COMMIT"
echo "  client:        $(C -tx -query "SELECT probe_write_file('side.db', 'CREATE TABLE IF NOT EXISTS side(v)')" \
  "SELECT probe_write_file('side.db', 'INSERT INTO side VALUES(?)', 'E9')")   (leader was $L)"
for i in 0 1 2; do
  if [ -f "$W/n$i/side.db" ]; then echo "  n$i: side.db holds $(sqlite3 "$W/n$i/side.db" "SELECT count(*) FROM side") row(s)"
  else echo "  n$i: no side.db"; fi
done
echo "  in the replicated database: $(C "SELECT count(*) FROM sqlite_master WHERE name = 'side'") table(s) named side"
