#!/usr/bin/env bash
# smoke/pkg_install.sh — `make install` and the .deb as README.md's "Installing" describes them:
#   - `make install DESTDIR=<scratch>` lays out exactly the README's files, `make uninstall`
#     with the same DESTDIR removes them;
#   - `make deb` holds the same library under /usr/lib/<multiarch>/, Depends names libcjson1
#     and libsqlite3-0 (>= 3.30), and lintian reports no errors or warnings;
#   - where the machine may be changed (MENTAT_REQUIRE_HOSTS=1, CI, or MENTAT_INSTALL_TEST=1;
#     as root or with password-less sudo): `make install` then `dpkg -i`, each followed by
#     `.load libmentat_sqlite` by bare name in the sqlite3 shell and /usr/bin/python3, and
#     go/mentat's Auto() in the Go host of smoke/hosts.sh, then uninstalled again. Elsewhere that part says it skipped.
# Prints PASS/FAIL/SKIPPED lines and 'N passed, M failed'; exits non-zero on any failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
VER=$(cat "$TOP/VERSION")
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
T=$(mktemp -d /tmp/mentat-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 failed=0
check() {  # check NAME GOT WANT
  if [ "$2" = "$3" ]; then echo "PASS $1"; pass=$((pass + 1))
  else printf 'FAIL %s:\n  got:  %s\n  want: %s\n' "$1" "$2" "$3"; failed=$((failed + 1)); fi
}
files() { (cd "$1" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' '); }

make -s -C "$TOP" install DESTDIR="$T/d" >/dev/null
check "make install DESTDIR layout" "$(files "$T/d")" \
  "usr/local/lib/libmentat_sqlite.so usr/local/share/doc/libmentat_sqlite/README.md usr/local/share/doc/libmentat_sqlite/VERSION "
make -s -C "$TOP" install DESTDIR="$T/e" PREFIX=/opt/m LIBDIR=/opt/m/lib64 >/dev/null
check "make install PREFIX LIBDIR" "$(files "$T/e")" \
  "opt/m/lib64/libmentat_sqlite.so opt/m/share/doc/libmentat_sqlite/README.md opt/m/share/doc/libmentat_sqlite/VERSION "
make -s -C "$TOP" uninstall DESTDIR="$T/d" >/dev/null
check "make uninstall DESTDIR" "$(files "$T/d")" ""

make -s -C "$TOP" deb >"$T/deb.log" 2>&1 || { cat "$T/deb.log"; check "make deb" failed ok; }
DEB=$(ls "$TOP"/build/libsqlite3-mod-mentat_"$VER"-1_*.deb 2>/dev/null)
if [ -n "$DEB" ]; then
  check "deb files" "$(dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ { sub(/^\.\//, "", $6); print $6 }' | sort | tr '\n' ' ')" \
    "usr/lib/$MA/libmentat_sqlite.so usr/share/doc/libsqlite3-mod-mentat/README.md.gz usr/share/doc/libsqlite3-mod-mentat/changelog.Debian.gz usr/share/doc/libsqlite3-mod-mentat/copyright usr/share/lintian/overrides/libsqlite3-mod-mentat "
  dep=$(dpkg-deb -f "$DEB" Depends)
  check "deb Depends" "$(echo "$dep" | grep -o 'libcjson1[^,]*\|libsqlite3-0 (>= 3.30)' | sed 's/ (.*//' | tr '\n' ' ')" "libcjson1 libsqlite3-0 "
  echo "   Depends: $dep"
  if command -v lintian >/dev/null 2>&1; then
    lintian "$DEB" >"$T/lintian.log" 2>&1
    check "lintian: no errors or warnings" "$(grep -E '^[EW]: ' "$T/lintian.log" | tr '\n' ' ')" ""
  else
    check "lintian installed" "no" "yes"
  fi
fi

# bare NAME: .load libmentat_sqlite by bare name in the sqlite3 shell and /usr/bin/python3.
bare() {
  local a b
  a=$(cd "$T" && sqlite3 :memory: '.load libmentat_sqlite' "SELECT json_extract(mentat_version('json'), '\$.version')" 2>&1)
  b=$(cd "$T" && /usr/bin/python3 -c 'import sqlite3; c = sqlite3.connect(":memory:"); c.enable_load_extension(True); c.load_extension("libmentat_sqlite"); print(c.execute("SELECT json_extract(mentat_version(%s), %s)" % (chr(39)+"json"+chr(39), chr(39)+"$.version"+chr(39))).fetchone()[0])' 2>&1)
  check "$1: bare-name load in sqlite3 and python3" "$a $b" "$VER $VER"
  if [ -x "$TOP/build/go/hosts" ]; then
    check "$1: go/mentat Auto() finds it" "$("$TOP/build/go/hosts" auto "$T/go.db" "$HERE/hosts/script.txt" 2>&1 | grep '^version=')" "version=$VER"
    rm -f "$T"/go.db*
  else
    check "$1: go/mentat Auto() (build/go/hosts, built by smoke/hosts.sh)" "missing" "built"
  fi
}
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo -n"
if [ "${MENTAT_REQUIRE_HOSTS:-0}" = 1 ] || [ "${MENTAT_INSTALL_TEST:-0}" = 1 ]; then
  if [ -n "$SUDO" ] && ! sudo -n true 2>/dev/null; then
    check "root or password-less sudo for the real install" "neither" "either"
  elif [ -e /usr/local/lib/libmentat_sqlite.so ] || dpkg -s libsqlite3-mod-mentat >/dev/null 2>&1; then
    check "no earlier install on this machine" "installed" "none"
  else
    $SUDO make -s -C "$TOP" install >/dev/null && bare "make install"
    $SUDO make -s -C "$TOP" uninstall >/dev/null
    left=""
    for f in /usr/local/lib/libmentat_sqlite.so /usr/local/share/doc/libmentat_sqlite; do [ -e "$f" ] && left+="$f "; done
    check "make uninstall leaves nothing" "$left" ""
    if [ -n "$DEB" ]; then
      $SUDO dpkg -i "$DEB" >"$T/dpkg.log" 2>&1 || cat "$T/dpkg.log"
      bare "dpkg -i"
      $SUDO dpkg -r libsqlite3-mod-mentat >/dev/null 2>&1
    fi
  fi
else
  echo "SKIPPED the real make install and dpkg -i (they change the machine: MENTAT_INSTALL_TEST=1, or MENTAT_REQUIRE_HOSTS=1 in CI)"
fi
echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
