#!/usr/bin/env bash
# smoke/go/run.sh — builds smoke/go/main.go against Debian's mattn/go-sqlite3
# (GOPATH=/usr/share/gocode, GO111MODULE=off, build tag libsqlite3: Debian's
# package drops the bundled amalgamation and links the system libsqlite3)
# into build/go, then runs it on the built extension.
#
# Usage: SO=/abs/path/libmentat_sqlite.so bash smoke/go/run.sh
# Prints name=value facts and PASS/FAIL lines, ends with 'N passed, M
# failed'; exits non-zero on any failure, and when go or the go-sqlite3
# sources are missing.
set -uo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUT=${GO_OUT:-$TOP/build/go}
export GOPATH=${GOPATH:-/usr/share/gocode} GO111MODULE=off GOCACHE=${GOCACHE:-$OUT/cache}

missing() {
  echo "FAIL host missing: $1 (Debian: apt-get install golang-go golang-github-mattn-go-sqlite3-dev; .ci/run installs them)"
  echo "0 passed, 1 failed"
  exit 1
}
command -v go >/dev/null 2>&1 || missing "'go' is not installed"
[ -f "$GOPATH/src/github.com/mattn/go-sqlite3/sqlite3.go" ] ||
  missing "github.com/mattn/go-sqlite3 is not under $GOPATH/src"

mkdir -p "$OUT"
if ! (cd "$HERE" && go build -tags libsqlite3 -o "$OUT/smoke" .) >"$OUT/build.log" 2>&1; then
  cat "$OUT/build.log"
  echo "FAIL go build of smoke/go (log: $OUT/build.log)"
  echo "0 passed, 1 failed"
  exit 1
fi

LOG=$(mktemp /tmp/mentat-go-out.XXXXXX)
trap 'rm -f "$LOG"' EXIT
"$OUT/smoke" "$SO" 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
if [ "$rc" -gt 128 ] || ! tail -n 1 "$LOG" | grep -q ' passed, '; then
  # A crash inside the extension (a signal, or a Go panic from cgo) ends the
  # program before its tally.
  pass=$(grep -c '^PASS ' "$LOG")
  fail=$(grep -c '^FAIL ' "$LOG")
  echo "FAIL the Go program died (exit $rc) after the last check above"
  echo "$pass passed, $((fail + 1)) failed"
  [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
