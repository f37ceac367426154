# libmentat_sqlite — a SQLite loadable extension: Datomic-style Datalog on SQLite.
# Targets: all test smoke demo asan valgrind bench fuzz clean deps
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
OBJ      = $(SRC:%.c=build/obj/%.o)
TOBJ     = $(SRC:%.c=build/tobj/%.o)
TESTS    = $(patsubst test/%.c,build/%,$(filter-out test/testutil.c,$(wildcard test/test_*.c)))
SO       = build/libmentat_sqlite.so

.PHONY: all test unit smoke acceptance demo asan valgrind bench fuzz clean deps
all: $(SO)

# Debian packages the build and the tests need; installed only when missing.
DEB_PKGS = libsqlite3-dev sqlite3 libcjson-dev check pkg-config
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
build/tobj/%.o: %.c $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -DMENTAT_STATIC -Iext -c $< -o $@

build/test_%: test/test_%.c test/testutil.h $(TOBJ)
	$(CC) $(CFLAGS) $(XCFLAGS) $(CHECK_CFLAGS) -DMENTAT_STATIC -Iext -Itest -o $@ $< $(TOBJ) \
	  -lsqlite3 $(LIBS) $(CHECK_LIBS)

unit: $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; $$t; done

smoke: $(SO)
	@set -e; for s in smoke/*.sh; do echo "== $$s"; SO=$(abspath $(SO)) SHARED=$(SHARED) bash $$s; done

acceptance: $(SO)
	$(PY) $(SHARED)/acceptance/run.py $(SO)

test: deps
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) smoke

demo: deps
	$(MAKE) all
	@SO=$(abspath $(SO)) SHARED=$(SHARED) bash smoke/demo.sh

# Sanitizers: the unit tests built with ASan+UBSan (clang), no fork so leaks show.
asan: deps
	$(MAKE) clean-build-tests
	$(MAKE) unit CC=clang CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  BUILDTAG=asan CK_FORK=no

valgrind: deps
	$(MAKE) all unit-bins
	@set -e; for t in $(TESTS); do echo "== valgrind $$t"; CK_FORK=no valgrind -q --error-exitcode=1 --leak-check=full \
	  --errors-for-leak-kinds=definite $$t; done
	@SO=$(abspath $(SO)) SHARED=$(SHARED) VALGRIND=1 bash smoke/valgrind.sh

unit-bins: $(TESTS)

clean-build-tests:
	rm -rf build/tobj build/test_*

bench: all
	$(MAKE) -C bench SCALE=$(or $(SCALE),xs)

clean:
	rm -rf build
