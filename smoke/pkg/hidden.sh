#!/usr/bin/env bash
# smoke/pkg/hidden.sh BUNDLE_DIR CMD... — runs CMD the way a machine without the system's
# copies of the bundled libraries would: a fresh scratch directory as the working directory,
# an empty environment but PATH and HOME (LD_LIBRARY_PATH empty), and, in a private mount
# namespace (unshare -m, root only), /dev/null bound over the system's files of every
# library BUNDLE_DIR carries beside libmentat_sqlite.so (libcjson.so.1, ...), so the loader
# cannot find them. First it proves the hiding works: the system-linked build/.so must then
# fail to load. Without unshare (no privilege) it says so and falls back to checking with ldd
# that each bundled library resolves into BUNDLE_DIR; under MENTAT_REQUIRE_HOSTS=1 that
# fallback is a failure.
set -uo pipefail
B=$(cd "$1" && pwd); shift
TOP=$(cd "$(dirname "$0")/../.." && pwd)
hide=()
for f in "$B"/*.so.*; do
  n=$(basename "$f")
  p=$(ldconfig -p | awk -v n="$n" '$1 == n { print $NF; exit }')
  [ -n "$p" ] && hide+=("$(readlink -f "$p")")
done
SCRATCH=$(mktemp -d /tmp/mentat-hidden.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  inner='set -e; mount --make-rprivate / 2>/dev/null || true
for h in '"${hide[*]:-}"'; do mount --bind /dev/null "$h"; done
cd "$1"; shift
if /usr/bin/python3 -c "import sqlite3,sys; c=sqlite3.connect(\":memory:\"); c.enable_load_extension(True); c.load_extension(sys.argv[1])" "$1" 2>/dev/null; then
  echo "FAIL hiding: the system-linked build still loads, the system libraries are not hidden"; exit 1
fi
echo "PASS hiding: the system-linked build no longer loads (hidden: '"${hide[*]:-none}"')"
shift; exec "$@"'
  env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$SCRATCH" LD_LIBRARY_PATH= \
    unshare -m bash -c "$inner" hidden "$SCRATCH" "$TOP/build/libmentat_sqlite.so" "$@"
  exit $?
fi
echo "unshare is not available: checking with ldd only"
bad=$(ldd "$B/libmentat_sqlite.so" | awk '$2 == "=>" { print $1, $3 }' | while read -r n p; do
  [ -f "$B/$n" ] && [ "$p" != "$B/$n" ] && echo "$n=>$p"; done)
if [ -n "$bad" ]; then echo "FAIL bundled libraries resolve elsewhere: $bad"; exit 1; fi
if [ "${MENTAT_REQUIRE_HOSTS:-0}" = 1 ]; then echo "FAIL no mount namespace for the hidden-library check"; exit 1; fi
cd "$SCRATCH" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$SCRATCH" LD_LIBRARY_PATH= "$@"
