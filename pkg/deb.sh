#!/usr/bin/env bash
# pkg/deb.sh SO OUTDIR — builds OUTDIR/libsqlite3-mod-mentat_<VERSION>-1_<arch>.deb with
# dpkg-deb: the extension where Debian keeps its SQLite modules (libsqlite3-mod-spatialite,
# libsqlite3-mod-impexp, ...: /usr/lib/<multiarch>/), so `.load libmentat_sqlite` finds it
# by bare name, with an ldconfig trigger, Depends computed by dpkg-shlibdeps from the
# libraries it links (libc6, libcjson1, ...) plus libsqlite3-0 (>= 3.30), the oldest SQLite
# it loads into (it calls SQLite only through the host's API table, so ELF does not show
# that need). Runs lintian on the result when it is installed and prints what it says.
set -euo pipefail
SO=$1 OUT=$2
TOP=$(cd "$(dirname "$0")/.." && pwd)
VER=$(cat "$TOP/VERSION")
PKG=libsqlite3-mod-mentat
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
MAINT=$(git -C "$TOP" log -1 --format='%an <%ae>' 2>/dev/null || true)
MAINT=${MAINT:-libmentat_sqlite maintainers <maintainers@localhost>}
W=$TOP/build/deb
rm -rf "$W"; mkdir -p "$W/root/DEBIAN" "$W/root/usr/lib/$MA" "$W/root/usr/share/doc/$PKG" "$OUT"
R=$W/root
install -m 644 "$SO" "$R/usr/lib/$MA/libmentat_sqlite.so"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$R/usr/lib/$MA/libmentat_sqlite.so"

D=$R/usr/share/doc/$PKG
gzip -9n < "$TOP/README.md" > "$D/README.md.gz"
DATE=$(git -C "$TOP" log -1 --format=%aD 2>/dev/null || date -R)
{ echo "$PKG ($VER-1) unstable; urgency=medium"; echo
  echo "  * Built from libmentat_sqlite $VER ($(git -C "$TOP" rev-parse --short=7 HEAD 2>/dev/null || echo unknown))."; echo
  echo " -- $MAINT  $DATE"; } | gzip -9n > "$D/changelog.Debian.gz"
cp "$TOP/pkg/copyright" "$D/copyright"
chmod 644 "$D"/*
# A loadable module is opened by name, never linked against: no versioned soname, no
# libNAME package naming (lintian says such objects should carry an override).
mkdir -p "$R/usr/share/lintian/overrides"
cat > "$R/usr/share/lintian/overrides/$PKG" <<OVR
# A SQLite loadable module: hosts dlopen it by name, no program links it.
$PKG: shared-library-lacks-version usr/lib/$MA/libmentat_sqlite.so libmentat_sqlite.so
$PKG: package-name-doesnt-match-sonames libmentat-sqlite
# Not uploaded to Debian: no ITP bug to close.
$PKG: initial-upload-closes-no-bugs [usr/share/doc/$PKG/changelog.Debian.gz:1]
OVR
chmod 644 "$R/usr/share/lintian/overrides/$PKG"

# dpkg-shlibdeps wants a debian/control naming the package.
mkdir -p "$W/src/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$PKG" "$PKG" > "$W/src/debian/control"
shl=$(cd "$W/src" && dpkg-shlibdeps -O "$R/usr/lib/$MA/libmentat_sqlite.so" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
DEPENDS="$shl, libsqlite3-0 (>= 3.30)"
SIZE=$(du -k -s --exclude=DEBIAN "$R" | cut -f1)
cat > "$R/DEBIAN/control" <<CTL
Package: $PKG
Version: $VER-1
Architecture: $ARCH
Multi-Arch: same
Maintainer: $MAINT
Installed-Size: $SIZE
Depends: $DEPENDS
Section: libs
Priority: optional
Description: SQLite extension for a Datomic-style Datalog store (libmentat_sqlite)
 libmentat_sqlite is a loadable extension that gives any SQLite host a
 Datomic-style Datalog store: edn_t transacts EDN, edn_q queries with
 Datalog (as a table-valued function or as one JSON document) and edn_pull
 pulls entities. A store is one SQLite file in Mozilla Mentat's layout.
 .
 Load it by name: ".load libmentat_sqlite" in the sqlite3 shell, or
 con.load_extension("libmentat_sqlite") in Python.
CTL
echo 'activate-noawait ldconfig' > "$R/DEBIAN/triggers"
(cd "$R" && find usr -type f -printf '%P\n' | sort | sed 's|^|usr/|' | xargs md5sum) > "$R/DEBIAN/md5sums"
chmod 644 "$R/DEBIAN/"*
DEB=$OUT/${PKG}_${VER}-1_${ARCH}.deb
dpkg-deb --root-owner-group -Zxz --build "$R" "$DEB" >/dev/null
echo "$DEB"; dpkg-deb -I "$DEB" | sed -n '/Package:/,/Description/p'; dpkg-deb -c "$DEB"
if command -v lintian >/dev/null 2>&1; then
  echo "-- lintian"; lintian --info "$DEB" || true
fi
