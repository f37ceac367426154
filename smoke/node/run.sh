#!/usr/bin/env bash
# smoke/node/run.sh — runs smoke/node/node.js (the extension in Node through
# better-sqlite3 12) after installing better-sqlite3 from the npm registry
# into build/node once (package.json and package-lock.json from this folder;
# reinstalled only when they change). The first install compiles
# better-sqlite3's bundled SQLite when no prebuilt binary can be fetched,
# which takes about two minutes on two cores; later runs take seconds.
#
# Usage: SO=/abs/path/libmentat_sqlite.so bash smoke/node/run.sh
# Prints PASS/FAIL lines and 'N passed, M failed'; exits non-zero on any
# failure and when node itself crashes (the tally then counts the crash as one
# more failure). Without Node 20+ and npm it skips, unless
# MENTAT_REQUIRE_HOSTS=1 (CI), where that is a failure.
set -uo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
NODE_DIR=${NODE_DIR:-$TOP/build/node}

# A machine without a usable Node skips this host with a clear line (a plain
# Debian 12 has no Node 20); CI sets MENTAT_REQUIRE_HOSTS=1, where it fails.
unavailable() {
  if [ "${MENTAT_REQUIRE_HOSTS:-0}" = 1 ]; then
    echo "FAIL $1"; echo "0 passed, 1 failed"; exit 1
  fi
  echo "SKIPPED node host: $1"; exit 0
}

for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 ||
    unavailable "host missing: '$tool' is not installed (needs Node 20+ with npm; .ci/run's image has it)"
done

# better-sqlite3 12 supports Node 20 and later (package.json "engines");
# Debian 12's own nodejs is 18.
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then
  unavailable "host too old: node $(node --version 2>/dev/null) (better-sqlite3 12 needs Node 20 or later)"
fi

# Install (or reinstall) when the pinned manifest changed since the last one.
if ! cmp -s "$HERE/package.json" "$NODE_DIR/package.json" ||
   ! cmp -s "$HERE/package-lock.json" "$NODE_DIR/package-lock.json.pinned" ||
   [ ! -f "$NODE_DIR/node_modules/better-sqlite3/package.json" ]; then
  echo "installing better-sqlite3 into $NODE_DIR (once)"
  mkdir -p "$NODE_DIR"
  rm -f "$NODE_DIR/package.json"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$NODE_DIR/"
  if ! (cd "$NODE_DIR" && npm ci --no-audit --no-fund --cache "$NODE_DIR/.npm-cache" >npm.log 2>&1); then
    tail -20 "$NODE_DIR/npm.log"
    rm -f "$NODE_DIR/package.json"
    echo "FAIL npm ci of better-sqlite3 (log: $NODE_DIR/npm.log)"
    echo "0 passed, 1 failed"
    exit 1
  fi
  cp "$HERE/package-lock.json" "$NODE_DIR/package-lock.json.pinned"
fi

OUT=$(mktemp /tmp/mentat-node-out.XXXXXX)
trap 'rm -f "$OUT"' EXIT
NODE_PATH="$NODE_DIR/node_modules" node "$HERE/node.js" "$SO" 2>&1 | tee "$OUT"
rc=${PIPESTATUS[0]}
if [ "$rc" -gt 128 ]; then
  # A crash inside the extension kills node before it prints the tally.
  pass=$(grep -c '^PASS ' "$OUT")
  fail=$(grep -c '^FAIL ' "$OUT")
  echo "FAIL node crashed with signal $((rc - 128)) after the last check above"
  echo "$pass passed, $((fail + 1)) failed"
fi
exit "$rc"
