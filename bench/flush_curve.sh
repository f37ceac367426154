#!/bin/bash
# flush_curve.sh — writers that share commits against the flush's cost: 1 and 8 threads of
# one-datom edn_t (threads.c KINDS w) on a copy of a store in /dev/shm, with fsync/fdatasync
# made to take a fixed time by flush_shim.so, for each FLUSH_US given; ROUNDS rounds, the
# thread counts alternating. Prints one line per point and the 8/1 ratio per round.
# Usage: bench/flush_curve.sh EXT STORE NUSERS "100 300 1000 3000" [SECONDS] [ROUNDS]
# (make -C bench flushcurve SCALE=xs runs it on out/store-xs.db.)
set -u
EXT=$1 STORE=$2 NUSERS=$3 FLUSHES=$4 SECONDS_=${5:-3} ROUNDS=${6:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
THREADS=$HERE/../build/bench/threads SHIM=$HERE/../build/bench/flush_shim.so
D=/dev/shm/flush-curve-$$.db
trap 'rm -f $D $D-wal $D-shm' EXIT
for f in $FLUSHES; do
  for r in $(seq 1 "$ROUNDS"); do
    one=""
    for n in 1 8; do
      cp "$STORE" $D && rm -f $D-wal $D-shm
      line=$(FLUSH_US=$f LD_PRELOAD=$SHIM "$THREADS" "$EXT" $D $n "$SECONDS_" "$NUSERS" w)
      tps=$(printf '%s' "$line" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["tx_per_s"])')
      echo "flush_us=$f round=$r threads=$n $line"
      if [ $n = 1 ]; then one=$tps; else
        /usr/bin/python3 -c "print('flush_us=$f round=$r 8/1 = %.2f' % ($tps / $one))"; fi
    done
  done
done
