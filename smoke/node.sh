#!/usr/bin/env bash
# smoke/node.sh — `make smoke` entry for the Node host: runs
# smoke/node/run.sh (better-sqlite3 12, installed once into build/node).
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
exec bash "$(cd "$(dirname "$0")" && pwd)/node/run.sh"
