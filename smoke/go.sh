#!/usr/bin/env bash
# smoke/go.sh — `make smoke` entry for the Go host: runs smoke/go/run.sh
# (database/sql with mattn/go-sqlite3, built into build/go).
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
exec bash "$(cd "$(dirname "$0")" && pwd)/go/run.sh"
