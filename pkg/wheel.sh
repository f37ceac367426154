#!/usr/bin/env bash
# pkg/wheel.sh BUNDLE OUTDIR — the Python wheel: python/ staged in build/python with the
# self-contained extension folder BUNDLE (pkg/bundle.sh: the .so with an $ORIGIN run path and
# libcjson.so.1 etc. beside it) inside mentat_sqlite/, built with Debian's python3-build and
# setuptools (`python3 -m build --no-isolation`, no downloads). Prints the wheel's files.
set -euo pipefail
BUNDLE=$(cd "$1" && pwd) OUT=$(mkdir -p "$2" && cd "$2" && pwd)
TOP=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-/usr/bin/python3}
S=$TOP/build/python
rm -rf "$S"; mkdir -p "$S" "$OUT"
cp -r "$TOP/python/." "$S/"
rm -rf "$S/mentat_sqlite/__pycache__"
cp "$BUNDLE"/*.so* "$S/mentat_sqlite/"
cp "$TOP/VERSION" "$S/mentat_sqlite/VERSION"
rm -f "$OUT"/mentat_sqlite-*.whl
(cd "$S" && "$PY" -m build --no-isolation --wheel --outdir "$OUT" . >"$S/build.log" 2>&1) ||
  { tail -30 "$S/build.log"; exit 1; }
W=$(ls "$OUT"/mentat_sqlite-*.whl)
echo "$W"
"$PY" -m zipfile -l "$W"
