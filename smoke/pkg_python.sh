#!/usr/bin/env bash
# smoke/pkg_python.sh — the Python package as a user gets it: `make wheel`, a fresh venv
# (Debian's python3-venv), `pip install --no-index` of the wheel, then the README's first
# example (smoke/pkg/readme_example.py) through `mentat_sqlite.load(con)`, run with the
# system's libcjson hidden from the loader (smoke/pkg/hidden.sh), so it passes only when the
# wheel's own copies are used; and load()'s error in a Python whose sqlite3 cannot load
# extensions. Prints PASS/FAIL lines; exits non-zero on any failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
fail() { echo "FAIL $1"; echo "0 passed, 1 failed"; exit 1; }
/usr/bin/python3 -c 'import build, setuptools, wheel, venv' 2>/dev/null ||
  fail "host missing: python3-build, python3-setuptools, python3-wheel or python3-venv (.ci/run installs them)"
make -s -C "$TOP" wheel >"$TOP/build/wheel.log" 2>&1 || { tail -20 "$TOP/build/wheel.log"; fail "make wheel"; }
WHL=$(ls "$TOP"/build/dist/mentat_sqlite-*.whl)
V=$(mktemp -d /tmp/mentat-venv.XXXXXX)
trap 'rm -rf "$V"' EXIT
/usr/bin/python3 -m venv "$V" || fail "python3 -m venv"
"$V/bin/pip" install -q --no-index --disable-pip-version-check "$WHL" || fail "pip install --no-index $WHL"
echo "installed $(basename "$WHL") into a venv"
{ rc=0
bash "$HERE/pkg/hidden.sh" "$TOP/build/bundle" "$V/bin/python" "$HERE/pkg/readme_example.py" || rc=1
# A Python whose sqlite3 cannot load extensions gets load()'s own error: a stand-in connection
# here, and the real thing where a python3 on PATH (pyenv's) lacks enable_load_extension.
"$V/bin/python" "$HERE/pkg/no_load_ext.py" stand-in || rc=1
P3=$(command -v python3)
if [ -n "$P3" ] && [ "$P3" != /usr/bin/python3 ] &&
   "$P3" -c 'import sqlite3, sys; sys.exit(hasattr(sqlite3.Connection, "enable_load_extension"))' 2>/dev/null; then
  if "$P3" -m venv "$V/nx" >/dev/null 2>&1 &&
     "$V/nx/bin/pip" install -q --no-index --disable-pip-version-check "$WHL" >/dev/null 2>&1; then
    "$V/nx/bin/python" "$HERE/pkg/no_load_ext.py" || rc=1
  else
    echo "SKIPPED load() in $P3 (no extension loading): no venv with the wheel could be made from it"
  fi
else
  echo "SKIPPED load() in a real Python without extension loading (none on PATH)"
fi
exit $rc; } 2>&1 | tee "$V/out"
rc=${PIPESTATUS[0]}
echo "$(grep -c '^PASS ' "$V/out") passed, $(grep -c '^FAIL ' "$V/out") failed"
exit "$rc"
