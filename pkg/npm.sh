#!/usr/bin/env bash
# pkg/npm.sh BUNDLE OUTDIR — the two npm packages, staged in build/npm with the version from
# VERSION and packed with `npm pack` into OUTDIR: mentat-sqlite (getLoadablePath(), load(db);
# CommonJS, ESM and .d.ts) and mentat-sqlite-linux-x64 (os/cpu fields; lib/ holds the
# self-contained BUNDLE folder from pkg/bundle.sh). Prints each tarball's files.
set -euo pipefail
BUNDLE=$(cd "$1" && pwd) OUT=$(mkdir -p "$2" && cd "$2" && pwd)
TOP=$(cd "$(dirname "$0")/.." && pwd)
VER=$(cat "$TOP/VERSION")
S=$TOP/build/npm
rm -rf "$S"; mkdir -p "$S"
cp -r "$TOP/npm/mentat-sqlite" "$TOP/npm/mentat-sqlite-linux-x64" "$S/"
mkdir -p "$S/mentat-sqlite-linux-x64/lib"
cp "$BUNDLE"/*.so* "$S/mentat-sqlite-linux-x64/lib/"
for p in mentat-sqlite mentat-sqlite-linux-x64; do
  node -e '
    const fs = require("fs"), f = process.argv[1] + "/package.json", v = process.argv[2];
    const j = JSON.parse(fs.readFileSync(f, "utf8"));
    j.version = v;
    if (j.optionalDependencies) for (const k of Object.keys(j.optionalDependencies)) j.optionalDependencies[k] = v;
    fs.writeFileSync(f, JSON.stringify(j, null, 2) + "\n");' "$S/$p" "$VER"
  rm -f "$OUT/$p-"[0-9]*.tgz
  (cd "$S/$p" && npm pack --pack-destination "$OUT" --cache "$TOP/build/hosts-node/.npm-cache" >/dev/null 2>&1)
  echo "$OUT/$p-$VER.tgz"
  tar tvzf "$OUT/$p-$VER.tgz"
done
