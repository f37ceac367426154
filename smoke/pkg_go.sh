#!/usr/bin/env bash
# smoke/pkg_go.sh — go/mentat as README.md's "Installing" tells a newcomer to use it: the Go
# section's main.go and its shell lines (go mod init, go mod edit -require/-replace for
# go/mentat and Debian's mattn/go-sqlite3, GOPROXY=off go build, ./app SO), taken from the
# README itself and run in a scratch folder with M set to this clone, module mode and nothing
# downloaded; the program must print {"result":2}.
# Prints PASS/FAIL/SKIPPED lines and 'N passed, M failed'; exits non-zero on any failure.
set -uo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
fail() { echo "FAIL $1"; echo "0 passed, 1 failed"; exit 1; }
unavailable() {
  [ "${MENTAT_REQUIRE_HOSTS:-0}" = 1 ] && fail "host missing: $1 (.ci/run installs it)"
  echo "SKIPPED the README's Go example: $1"; exit 0
}
command -v go >/dev/null 2>&1 || unavailable "'go' is not installed"
[ -f /usr/share/gocode/src/github.com/mattn/go-sqlite3/sqlite3.go ] ||
  unavailable "mattn/go-sqlite3 (golang-github-mattn-go-sqlite3-dev)"
T=$(mktemp -d /tmp/mentat-gomod.XXXXXX)
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
# The first ```go and the first ```sh block after the README's "**Go.**" paragraph.
block() {
  awk -v lang="$1" '/^\*\*Go\.\*\*/ { go = 1 } go && !inb && $0 == "```" lang { inb = 1; next }
    inb && $0 == "```" { exit } inb { print }' "$TOP/README.md"
}
mkdir -p "$T/app"
block go > "$T/app/main.go"
block sh > "$T/steps.sh"
[ -s "$T/app/main.go" ] && grep -q '^M=' "$T/steps.sh" || fail "README.md: no Go example (main.go and the sh block after **Go.**)"
sed -i "s|^M=.*|M=$TOP|; s|\"\$M/build/libmentat_sqlite.so\"|\"$SO\"|" "$T/steps.sh"
out=$(cd "$T/app" && env -u GOFLAGS -u GO111MODULE GOPATH="$T/gopath" GOCACHE="$TOP/build/go/cache" \
        bash -e "$T/steps.sh" 2>&1)
rc=$?
last=$(printf '%s\n' "$out" | tail -n 1)
if [ "$rc" = 0 ] && [ "$last" = '{"result":2}' ]; then
  echo "PASS the README's Go example builds in module mode offline and prints {\"result\":2}"
  echo "1 passed, 0 failed"
else
  printf '%s\n' "$out" | sed 's/^/    /'
  echo "FAIL the README's Go example (exit $rc; last line: $last; want {\"result\":2})"
  echo "0 passed, 1 failed"; exit 1
fi
