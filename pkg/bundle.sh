#!/usr/bin/env bash
# pkg/bundle.sh SO — makes SO's folder self-contained, as auditwheel does for wheels: every
# shared library SO needs that is not glibc's (libcjson.so.1, libpcre2-8.so.0, ...) is copied
# beside it under its soname. SO must carry the run path $ORIGIN (the Makefile links
# build/bundle/libmentat_sqlite.so so). Fails when a copied library itself needs a non-glibc
# library (it has no $ORIGIN run path to find it), or when ldd does not resolve every
# non-glibc library to the folder. Strips SO. Prints the folder's files.
set -euo pipefail
SO=$1
DIR=$(cd "$(dirname "$SO")" && pwd)
# glibc's own libraries: every glibc system has them, and they must come from the host.
GLIBC='^(linux-vdso\.so|ld-linux.*|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so)'

readelf -d "$SO" | grep -q 'RUNPATH.*\$ORIGIN' || { echo "bundle: $SO has no \$ORIGIN run path" >&2; exit 1; }
# Packages ship it without debug sections (Debian policy; a third of the size).
strip --strip-unneeded "$SO"
find "$DIR" -maxdepth 1 -name '*.so.*' -delete
ldd "$SO" | awk '$2 == "=>" { print $1, $3 }' | while read -r name path; do
  [[ $name =~ $GLIBC ]] && continue
  [ -f "$path" ] || { echo "bundle: $name not found ($path)" >&2; exit 1; }
  # Resolve the system's symlink chain (libcjson.so.1 -> libcjson.so.1.7.15): one real file.
  cp -L "$path" "$DIR/$name"
  chmod 644 "$DIR/$name"
  readelf -d "$DIR/$name" | awk -F'[][]' '/NEEDED/ { print $2 }' | while read -r dep; do
    [[ $dep =~ $GLIBC ]] || { echo "bundle: $name needs $dep, which has no way to be found beside it" >&2; exit 1; }
  done
done
# Every non-glibc library must now resolve into the folder.
bad=$(ldd "$SO" | awk '$2 == "=>" { print $1, $3 }' | grep -Ev "$GLIBC" | grep -v " $DIR/" || true)
[ -z "$bad" ] || { echo "bundle: resolved outside $DIR: $bad" >&2; exit 1; }
ls -l "$DIR"
