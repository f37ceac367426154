# libmentat_sqlite — a SQLite loadable extension: Datomic-style Datalog on SQLite.
# Targets: all test smoke demo asan tsan valgrind bench fuzz clean deps
# Layout: ext/ (reader, transactor, query compiler, store), vtab/ (edn_q), test/ (Check),
# smoke/ (real hosts), bench/. Outputs go to build/ only.

CC      ?= cc
CFLAGS  ?= -O2 -g
PKGS     = libcjson
XCFLAGS  = -std=c11 -Wall -Wextra -Werror -fPIC -fvisibility=hidden -D_GNU_SOURCE \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS     = $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lcjson) -lpthread -lm
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)
PY      ?= /usr/bin/python3
SHARED  ?= ../shared

SRC      = $(wildcard ext/*.c) $(wildcard vtab/*.c)
HDR      = $(wildcard ext/*.h) $(wildcard vtab/*.h)
# B is the build folder: build/ for the normal build, build/asan for the sanitizer one.
B       ?= build
OBJ      = $(SRC:%.c=build/obj/%.o)
TOBJ     = $(SRC:%.c=$(B)/tobj/%.o)
TESTS    = $(patsubst test/%.c,$(B)/%,$(wildcard test/test_*.c))
SO       = build/libmentat_sqlite.so

.PHONY: all test unit smoke acceptance demo asan tsan valgrind bench fuzz clean deps
# Objects are not intermediates to throw away: keep them so rebuilds stay incremental.
.SECONDARY:
all: $(SO)

# Debian packages the build and the tests need; installed only when missing.
# asan and valgrind add their tools (make deps DEB_EXTRA="clang valgrind").
# The Go smoke host comes from Debian too; Node 20 does not (Debian 12 has 18), so the Node
# smoke host runs where the machine has it and says it skipped otherwise.
DEB_PKGS = libsqlite3-dev sqlite3 libcjson-dev check pkg-config gcc make binutils python3 \
           golang-go golang-github-mattn-go-sqlite3-dev $(DEB_EXTRA)
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing; fi

build/obj/%.o: %.c $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -Iext -c $< -o $@

$(SO): $(OBJ)
	$(CC) $(CFLAGS) -shared -o $@ $(OBJ) $(LIBS)

# Unit tests link the same sources straight against libsqlite3 (MENTAT_STATIC).
$(B)/tobj/%.o: %.c $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -DMENTAT_STATIC -Iext -c $< -o $@

$(B)/test_%: test/test_%.c test/testutil.h test/tuquery.h $(TOBJ)
	$(CC) $(CFLAGS) $(XCFLAGS) $(CHECK_CFLAGS) -DMENTAT_STATIC -Iext -Itest -o $@ $< $(TOBJ) \
	  -lsqlite3 $(LIBS) $(CHECK_LIBS)

# Every suite runs even when an earlier one fails; the target fails at the end.
unit: $(TESTS)
	@fail=0; for t in $(TESTS); do echo "== $$t"; $$t || fail=1; done; exit $$fail

# Every host runs even when an earlier one fails; the target fails at the end.
smoke: $(SO)
	@fail=0; for s in smoke/*.sh; do echo "== $$s"; SO=$(abspath $(SO)) SHARED=$(SHARED) bash $$s || fail=1; done; exit $$fail

acceptance: $(SO)
	$(PY) $(SHARED)/acceptance/run.py $(SO)

test: deps
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) smoke
	@if [ -f $(SHARED)/acceptance/run.py ]; then $(MAKE) acceptance; \
	 else echo "acceptance: $(SHARED)/acceptance/run.py not found, skipped"; fi

demo: deps
	$(MAKE) all
	@SO=$(abspath $(SO)) SHARED=$(SHARED) bash smoke/demo.sh

# Sanitizers: the unit tests built with ASan+UBSan (clang) in build/asan, no fork so
# LeakSanitizer sees every test's allocations.
asan:
	$(MAKE) deps DEB_EXTRA="clang libclang-rt-14-dev"
	CK_FORK=no $(MAKE) unit B=build/asan CC=clang \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

# ThreadSanitizer on the .so (built whole into build/tsan) in a threaded Python host: the
# store cache, cursors letting go of their snapshots for a writer's thread, deferred tuning.
# The instrumented .so is removed afterwards: loaded without libtsan it cannot run, and tools
# that look for the newest libmentat_sqlite.so under build/ must not pick it.
tsan:
	$(MAKE) deps DEB_EXTRA=libtsan2
	@mkdir -p build/tsan
	gcc -O1 -g -fsanitize=thread $(XCFLAGS) -Iext -shared -o build/tsan/libmentat_sqlite.so $(SRC) $(LIBS)
	@LD_PRELOAD=$$(gcc -print-file-name=libtsan.so) TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
	  $(PY) smoke/tsan.py $(abspath build/tsan/libmentat_sqlite.so); rc=$$?; \
	  rm -f build/tsan/libmentat_sqlite.so; exit $$rc

valgrind:
	$(MAKE) deps DEB_EXTRA=valgrind
	$(MAKE) all unit-bins
	@set -e; for t in $(TESTS); do echo "== valgrind $$t"; CK_FORK=no valgrind -q --error-exitcode=1 --leak-check=full \
	  --errors-for-leak-kinds=definite $$t; done
	@SO=$(abspath $(SO)) SHARED=$(SHARED) VALGRIND=1 bash smoke/valgrind.sh

unit-bins: $(TESTS)

bench: all
	$(MAKE) -C bench all SCALE=$(or $(SCALE),xs)

# libFuzzer on the EDN reader (FUZZ_SECONDS, default 60).
fuzz:
	bash fuzz/run.sh $(or $(FUZZ_SECONDS),60)

clean:
	rm -rf build
