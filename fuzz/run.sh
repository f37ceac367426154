#!/bin/sh
# fuzz/run.sh — runs each libFuzzer harness built by `make fuzz` (build/fuzz/fuzz_*,
# ASan+UBSan) for SECONDS (default 60), one after another, from seeds written now by
# fuzz/seeds.py (the acceptance cases in SHARED and test/cases) plus the committed
# fuzz/corpus/<name>/, with the dictionary fuzz/<name>.dict. Everything it writes stays in
# build/fuzz/: corpus-<name>/ (grows as it runs), <name>-crash-* etc. (reproducers; run one
# with `build/fuzz/fuzz_<name> FILE`). Every fuzzer runs even when an earlier one fails; the
# script fails at the end. FUZZERS="query tx" picks some.
# Usage (from the project root): sh fuzz/run.sh [SECONDS]
secs=${1:-60}
out=build/fuzz
shared=${SHARED:-../shared}
python3 fuzz/seeds.py "$shared" "$out" || exit 1
fail=0
for name in ${FUZZERS:-edn query tx}; do
  echo "== fuzz_$name for ${secs}s"
  # -timeout (FUZZ_TIMEOUT, default 30 s): fuzz_query interrupts a call after 200 ms, so only
  # work that ignores sqlite3_interrupt, or a loaded machine, takes this long.
  "$out/fuzz_$name" -max_total_time="$secs" -max_len=4096 -timeout=${FUZZ_TIMEOUT:-30} -rss_limit_mb=2048 \
    -dict="fuzz/$name.dict" -artifact_prefix="$out/$name-" -print_final_stats=1 \
    "$out/corpus-$name" || { echo "fuzz_$name: FAILED (reproducer in $out/$name-*)"; fail=1; }
done
exit $fail
