#!/usr/bin/env bash
# smoke/python.sh — runs the Python host checks (smoke/python.py), the change
# feed (smoke/follow_log.py) and the peer-fault checks (smoke/peer_faults.py)
# with the system Python, the one whose sqlite3 module can load extensions.
# Used by `make smoke`; fails if any fails, after running all.
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-/usr/bin/python3}
rc=0
echo "-- python.py"
"$PY" "$HERE/python.py" "$SO" || rc=1
echo "-- follow_log.py"
"$PY" "$HERE/follow_log.py" "$SO" || rc=1
echo "-- peer_faults.py"
"$PY" "$HERE/peer_faults.py" "$SO" || rc=1
exit $rc
