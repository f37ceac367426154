#!/usr/bin/env bash
# smoke/host_store.sh — host stores (SPEC §3a) from Python: one transaction
# with the host, d/with, rollbacks leaving no cached trace, the host's own
# functions in queries, attached/temp databases, refusals; and a host-store
# transaction killed by SIGKILL leaving the database as before. Used by `make smoke`.
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
rc=0
"${PY:-/usr/bin/python3}" "$HERE/host_store.py" "$SO" || rc=1
echo "-- host_kill9.py"
"${PY:-/usr/bin/python3}" "$HERE/host_kill9.py" "$SO" || rc=1
exit $rc
