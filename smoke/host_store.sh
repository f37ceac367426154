#!/usr/bin/env bash
# smoke/host_store.sh — host stores (SPEC §3a) from Python: one transaction
# with the host, d/with, rollbacks leaving no cached trace, the host's own
# functions in queries, attached/temp databases, refusals. Used by `make smoke`.
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
exec "${PY:-/usr/bin/python3}" "$HERE/host_store.py" "$SO"
