#!/usr/bin/env bash
# smoke/meta.sh — the metamorphic checks of edn_q and edn_pull (smoke/meta.py)
# with the system Python: a fixed set of seeds, a few seconds. Used by
# `make smoke`; `make meta` runs many more seeds (META_SEEDS, META_QUERIES).
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
exec "${PY:-/usr/bin/python3}" "$HERE/meta.py" "$SO"
