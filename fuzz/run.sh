#!/bin/sh
# fuzz/run.sh — build the libFuzzer harness for the EDN reader and printers
# (fuzz_edn.c) with ASan+UBSan and run it for SECONDS (default 120).
# Outputs stay in build/fuzz/; fuzz/corpus/ holds the hand-written seeds.
# Usage (from the project root): sh fuzz/run.sh [SECONDS]
set -e
secs=${1:-120}
out=build/fuzz
mkdir -p "$out/corpus"
cp fuzz/corpus/* "$out/corpus/"
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -D_GNU_SOURCE -DMENTAT_STATIC -Iext -Iext/edn fuzz/fuzz_edn.c ext/edn/edn_*.c -lsqlite3 -lm \
  -o "$out/fuzz_edn"
cd "$out"
./fuzz_edn -max_total_time="$secs" -max_len=4096 corpus
