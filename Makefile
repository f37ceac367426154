# libmentat_sqlite — a SQLite loadable extension: Datomic-style Datalog on SQLite.
# Targets: all test unit faults layering smoke meta demo asan tsan valgrind bench fuzz clean deps
#          install uninstall deb wheel npm packages (see "Installing" in README.md)
# Layout: ext/<stage>/ (edn, qparse, qfunc, schema, store, tx, pull, query), vtab/ (the SQL boundary), test/ (Check),
# smoke/ (real hosts), bench/. Outputs go to build/ only.

CC      ?= cc
CFLAGS  ?= -O2 -g
PKGS     = libcjson libpcre2-8
XCFLAGS  = -std=c11 -Wall -Wextra -Werror -fPIC -fvisibility=hidden -D_GNU_SOURCE \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS     = $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lcjson -lpcre2-8) -lpthread -lm
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)
PY      ?= /usr/bin/python3
SHARED  ?= ../shared

# The pipeline, lowest stage first. Each stage folder builds into its own archive; a stage
# may call only the stages before it, and `make layering` proves it (see "How it is built").
# ext/ itself holds what every stage includes (sqlite_api.h, config).
STAGES   = base edn qparse qfunc schema store tx pull query vtab
stage_dir = $(if $(filter base,$(1)),ext,$(if $(filter vtab,$(1)),vtab,ext/$(1)))
stage_src = $(wildcard $(call stage_dir,$(1))/*.c)
SRC      = $(foreach s,$(STAGES),$(call stage_src,$(s)))
INC      = -Iext $(foreach s,edn qparse qfunc schema store tx pull query,-Iext/$(s)) -Ivtab
# An object sees the headers of its own stage and of the stages before it only, so an
# #include of a later stage's header (quotes or angle brackets) fails to compile.
stage_of  = $(strip $(foreach s,$(STAGES),$(if $(filter $(call stage_dir,$(s))/,$(dir $(1))),$(s))))
stage_inc = -Iext $(foreach s,$(filter-out base,$(call stages_upto,$(1),$(STAGES))),-I$(call stage_dir,$(s)))
OBJ_INC   = $(call stage_inc,$(call stage_of,$<))
# B is the build folder: build/ for the normal build, build/asan for the sanitizer one.
B       ?= build
OBJ      = $(SRC:%.c=build/obj/%.o)
TOBJ     = $(SRC:%.c=$(B)/tobj/%.o)
# A stage's archive for the unit tests, and the archives of it and every stage before it,
# highest first (the order the linker needs).
stage_lib  = $(B)/lib/lib$(1).a
stages_upto = $(if $(filter $(1),$(firstword $(2))),$(firstword $(2)),$(firstword $(2)) $(call stages_upto,$(1),$(wordlist 2,99,$(2))))
libs_upto  = $(foreach s,$(call reverse,$(call stages_upto,$(1),$(STAGES))),$(call stage_lib,$(s)))
reverse    = $(if $(1),$(call reverse,$(wordlist 2,99,$(1))) $(firstword $(1)))
TESTS    = $(patsubst test/%.c,$(B)/%,$(wildcard test/test_*.c))
SO       = build/libmentat_sqlite.so

.PHONY: all test unit faults unit-runs fault-runs layering smoke meta acceptance demo asan tsan valgrind bench soak fuzz fuzz-bins clean deps \
        install uninstall deb wheel npm packages FORCE
# Objects are not intermediates to throw away: keep them so rebuilds stay incremental.
.SECONDARY:
all: $(SO)

# Debian packages the build and the tests need; installed only when missing.
# asan and valgrind add their tools (make deps DEB_EXTRA="clang valgrind").
# The Go smoke host comes from Debian too; Node 20 does not (Debian 12 has 18), so the Node
# smoke host runs where the machine has it and says it skipped otherwise.
DEB_PKGS = libsqlite3-dev sqlite3 libcjson-dev libpcre2-dev check pkg-config gcc make binutils python3 \
           golang-go golang-github-mattn-go-sqlite3-dev $(DEB_EXTRA)
# make test adds what the packages (make deb/wheel/npm), the other smoke hosts
# (smoke/hosts.sh) and the dqlite cluster (smoke/dqlite.sh) need; make demo does without them.
DEB_HOSTS = dpkg-dev lintian python3-build python3-venv python3-setuptools python3-wheel \
           python3-pip tcl libsqlite3-tcl libdbd-sqlite3-perl ruby ruby-sqlite3 php-cli \
           php-sqlite3 sqlite-utils util-linux mount libdqlite-dev golang-github-canonical-go-dqlite-dev
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing; fi

# The .so's objects get glibc's fortified string and memory calls when optimizing (Debian's
# hardening; the unit tests' objects stay as they are, -O0 builds too). Header dependencies
# come from the compiler (-MMD), so a changed header rebuilds only the objects that include it.
build/obj/%.o: XCFLAGS += $(if $(filter -O1 -O2 -O3 -Os,$(CFLAGS)),-D_FORTIFY_SOURCE=2)
build/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -MMD -MP $(OBJ_INC) -c $< -o $@

# The soname is the file name: ldconfig then caches it, so an installed copy loads by bare
# name (.load libmentat_sqlite).
$(SO): $(OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libmentat_sqlite.so -Wl,-z,relro,-z,now -o $@ $(OBJ) $(LIBS)

# mentat_version(): the VERSION file and the git commit ("-dirty" when tracked files differ
# from it), compiled into mentat_version.c only. The stamp changes only when they do, so a new
# commit rebuilds one object.
VERSION_NUM := $(shell cat VERSION)
GIT_COMMIT  := $(shell c=$$(git rev-parse --short=7 HEAD 2>/dev/null) || c=unknown; \
                 [ $$c = unknown ] || git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c)
build/version.stamp: FORCE
	@mkdir -p build; v='$(VERSION_NUM) $(GIT_COMMIT)'; \
	  [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
VERSION_OBJ = build/obj/vtab/mentat_version.o $(B)/tobj/vtab/mentat_version.o
$(VERSION_OBJ): build/version.stamp
$(VERSION_OBJ): XCFLAGS += -DMENTAT_VERSION='"$(VERSION_NUM)"' -DMENTAT_COMMIT='"$(GIT_COMMIT)"'

# Unit tests link the same sources straight against libsqlite3 (MENTAT_STATIC), one archive
# per stage.
$(B)/tobj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -MMD -MP -DMENTAT_STATIC $(OBJ_INC) -c $< -o $@
define stage_archive
$(call stage_lib,$(1)): $(patsubst %.c,$(B)/tobj/%.o,$(call stage_src,$(1)))
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	ar rcs $$@ $$^
endef
$(foreach s,$(STAGES),$(eval $(call stage_archive,$(s))))

# Each test program links the archives of the stage it tests and of the stages before it,
# nothing above: a call that runs up the pipeline fails to link.
TEST_STAGE_edn = edn
TEST_STAGE_value = edn
TEST_STAGE_schema = schema
TEST_STAGE_store = store
TEST_STAGE_tx = tx
TEST_STAGE_group = tx
TEST_STAGE_pull = pull
TEST_STAGE_qparse = qparse
TEST_STAGE_qcompile = query
TEST_STAGE_qlang = query
TEST_STAGE_opts = query
TEST_STAGE_qgrowth = query
TEST_STAGE_surface = vtab
TEST_STAGE_rerun = vtab
TEST_STAGE_cases = vtab
TEST_STAGE_oom = vtab
TEST_STAGE_host = vtab
TEST_STAGE_host_undo = vtab
TEST_STAGE_host_last = vtab
TEST_STAGE_host_fn = vtab
TEST_STAGE_iofault = vtab
TEST_STAGE_with = vtab
TEST_STAGE_view = vtab
TEST_STAGE_sources = vtab
TEST_STAGE_rawidx = vtab
TEST_STAGE_interrupt = vtab
TEST_STAGE_limit = vtab
test_stage = $(or $(TEST_STAGE_$(1)),$(error test/test_$(1).c: add TEST_STAGE_$(1) to the Makefile))
.SECONDEXPANSION:
$(B)/test_%: test/test_%.c $$(call libs_upto,$$(call test_stage,$$*))
	@mkdir -p $(B)/tdep
	$(CC) $(CFLAGS) $(XCFLAGS) $(CHECK_CFLAGS) -MMD -MP -MF $(B)/tdep/$(notdir $@).d -DMENTAT_STATIC \
	  $(call stage_inc,$(call test_stage,$*)) -Itest -o $@ $< \
	  $(call libs_upto,$(call test_stage,$*)) -lsqlite3 $(LIBS) $(CHECK_LIBS)

-include $(OBJ:.o=.d) $(TOBJ:.o=.d) $(patsubst $(B)/%,$(B)/tdep/%.d,$(TESTS))

# Every suite runs even when an earlier one fails; the target fails at the end. make unit runs
# UNIT_JOBS suites at a time by itself (a make -jN of the caller's wins), each one's output kept
# together. A run is a program, or one Check tcase of it (program@tcase, CK_RUN_CASE), so a long
# program spreads over the cores; runs start longest first (by wall time on an idle machine,
# their waits for locks and busy timeouts included), so no core ends waiting for one of them.
# The allocation- and I/O-failure sweeps (the tcases tagged "faults", testutil.h tuFaultCase)
# are make faults, not make unit; make test runs both.
UNIT_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
run_jobs   = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(UNIT_JOBS))
UNIT_FIRST = test_cases test_store test_tx test_qlang test_group test_rawidx test_host test_surface \
  test_qcompile test_qgrowth test_pull test_view
UNIT_RUNS  = $(addprefix $(B)/run/unit/,$(filter $(TESTS:$(B)/%=%),$(UNIT_FIRST)) \
  $(filter-out $(UNIT_FIRST) $(FAULT_ONLY),$(TESTS:$(B)/%=%)))
# the programs that are sweeps alone, and every run of make faults
FAULT_ONLY  = test_iofault test_oom
FAULT_RUNS  = $(addprefix $(B)/run/faults/,test_iofault@wal test_tx test_iofault@errors test_view \
  test_qlang test_oom@tuples test_oom@movies test_store test_iofault@power test_qcompile test_pull \
  test_surface test_host_undo)
unit:
	@$(MAKE) --no-print-directory $(run_jobs) unit-runs
faults:
	@$(MAKE) --no-print-directory $(run_jobs) fault-runs
unit-runs: $(UNIT_RUNS)
	@fail=0; for t in $^; do if [ -f $$t.fail ]; then echo "FAILED: $$t"; fail=1; fi; done; exit $$fail
fault-runs: $(FAULT_RUNS)
	@fail=0; for t in $^; do if [ -f $$t.fail ]; then echo "FAILED: $$t"; fail=1; fi; done; exit $$fail
run_prog = $(B)/$(firstword $(subst @, ,$(1)))
run_case = $(if $(word 2,$(subst @, ,$(1))),CK_RUN_CASE=$(word 2,$(subst @, ,$(1))))
# one run: its output in a log, printed whole when it ends, with its wall time
run_one = mkdir -p $(dir $@); rm -f $@.fail; t0=$$(date +%s%N); \
  $(1) $(call run_case,$*) $< > $@.log 2>&1 || touch $@.fail; \
  echo "== $<$(2) $(call run_case,$*) ($$(( ($$(date +%s%N) - t0) / 1000000 )) ms)"; cat $@.log
$(B)/run/unit/%: $$(call run_prog,$$*) FORCE
	@$(call run_one,CK_EXCLUDE_TAGS=faults,)
$(B)/run/faults/%: $$(call run_prog,$$*) FORCE
	@$(call run_one,CK_INCLUDE_TAGS=faults, faults)

# Layering: every stage's archive, whole, must link against the stages before it alone
# (ld --no-undefined), and every #include must name a header of the same or an earlier
# stage (scripts/layering.py).
layering: $(foreach s,$(STAGES),$(call stage_lib,$(s)))
	@set -e; for s in $(STAGES); do \
	  libs="$(foreach t,$(STAGES),$(call stage_lib,$(t)))"; \
	  below=""; for t in $(STAGES); do [ $$t = $$s ] && break; below="$(B)/lib/lib$$t.a $$below"; done; \
	  $(CC) -shared -o $(B)/layer-$$s.so -Wl,--no-undefined -Wl,--whole-archive $(B)/lib/lib$$s.a \
	    -Wl,--no-whole-archive $$below -lsqlite3 $(LIBS) || { echo "layering: stage $$s calls a later stage"; exit 1; }; \
	  rm -f $(B)/layer-$$s.so; echo "layering: $$s links against the stages before it only"; done
	$(PY) scripts/layering.py --lib $(B)/lib $(STAGES)

# Every host runs even when an earlier one fails; the target fails at the end.
smoke: $(SO)
	@fail=0; for s in smoke/*.sh; do echo "== $$s"; SO=$(abspath $(SO)) SHARED=$(SHARED) bash $$s || fail=1; done; exit $$fail

# The metamorphic checks (smoke/meta.py) over many seeds: random stores and queries that
# must agree with themselves (clause order, duplicates, forms, asOf/since, pull, rules).
# make smoke runs the fixed short set; META_SEEDS, META_FIRST, META_QUERIES set the long one.
META_SEEDS ?= 400
meta: $(SO)
	META_SEEDS=$(META_SEEDS) META_QUERIES=$(or $(META_QUERIES),40) META_FIRST=$(or $(META_FIRST),1) \
	  $(PY) smoke/meta.py $(abspath $(SO))

# The public cases on file stores, then on a host store (db_path ':main', SPEC §3a).
acceptance: $(SO)
	$(PY) $(SHARED)/acceptance/run.py $(SO)
	$(PY) smoke/acceptance_host.py $(SO) $(SHARED)/acceptance/run.py

test:
	$(MAKE) deps DEB_EXTRA="$(DEB_HOSTS) $(DEB_EXTRA)"
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) faults
	$(MAKE) layering
	$(MAKE) smoke
	@if [ -f $(SHARED)/acceptance/run.py ]; then $(MAKE) acceptance; \
	 else echo "acceptance: $(SHARED)/acceptance/run.py not found, skipped"; fi

demo: deps
	$(MAKE) all
	@SO=$(abspath $(SO)) SHARED=$(SHARED) bash smoke/demo.sh

# Sanitizers: the unit tests and the fault sweeps built with ASan+UBSan (clang) in build/asan, no fork so
# LeakSanitizer sees every test's allocations.
asan:
	$(MAKE) deps DEB_EXTRA="clang libclang-rt-14-dev"
	CK_FORK=no $(MAKE) unit faults B=build/asan CC=clang \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

# ThreadSanitizer on the .so (built whole into build/tsan) in a threaded Python host: the
# store cache, cursors letting go of their snapshots for a writer's thread, deferred tuning.
# The instrumented .so is removed afterwards: loaded without libtsan it cannot run, and tools
# that look for the newest libmentat_sqlite.so under build/ must not pick it.
tsan:
	$(MAKE) deps DEB_EXTRA=libtsan2
	@mkdir -p build/tsan
	gcc -O1 -g -fsanitize=thread $(XCFLAGS) $(INC) -shared -o build/tsan/libmentat_sqlite.so $(SRC) $(LIBS)
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

# Soak (bench/soak.py: 4 processes x 4 threads of reads, edn_t and :db/cas for SOAK_SECONDS,
# default 600, checked as it goes and at the end), then overload (bench/overload.py: 64
# writers on one store, refused after 200 ms); never part of `make test`.
soak: all
	SOAK_SECONDS=$(or $(SOAK_SECONDS),600) $(PY) bench/soak.py $(SO) build/soak.json
	MENTAT_BUSY_TIMEOUT_MS=200 $(PY) bench/overload.py $(SO) build/overload.json

# libFuzzer harnesses (fuzz/fuzz_*.c: the EDN reader, the query path, the transactor) built
# with clang, ASan and UBSan from the unit tests' stage archives in build/fuzz, each linking
# the stages it drives (as the test programs do), then each run for FUZZ_SECONDS (default 60)
# by fuzz/run.sh.
FUZZ_CFLAGS = -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
              -fno-omit-frame-pointer
FUZZERS     = $(patsubst fuzz/%.c,$(B)/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_STAGE_edn = edn
FUZZ_STAGE_query = vtab
FUZZ_STAGE_tx = vtab
fuzz_stage = $(or $(FUZZ_STAGE_$(1)),$(error fuzz/fuzz_$(1).c: add FUZZ_STAGE_$(1) to the Makefile))
fuzz:
	$(MAKE) deps DEB_EXTRA="clang libclang-rt-14-dev"
	$(MAKE) fuzz-bins B=build/fuzz CC=clang CFLAGS="$(FUZZ_CFLAGS)"
	SHARED=$(SHARED) sh fuzz/run.sh $(or $(FUZZ_SECONDS),60)

fuzz-bins: $(FUZZERS)

$(B)/fuzz_%: fuzz/fuzz_%.c $(wildcard fuzz/*.h) $$(call libs_upto,$$(call fuzz_stage,$$*))
	$(CC) $(CFLAGS) -fsanitize=fuzzer $(XCFLAGS) -DMENTAT_STATIC $(call stage_inc,$(call fuzz_stage,$*)) -Ifuzz -o $@ $< \
	  $(call libs_upto,$(call fuzz_stage,$*)) -lsqlite3 $(LIBS)

# Installing. PREFIX, LIBDIR and DESTDIR as usual; after a root install into a directory
# ld.so knows (/usr/local/lib on Debian), ldconfig makes the bare name load.
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
DOCDIR  ?= $(PREFIX)/share/doc/libmentat_sqlite
install: $(SO)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DOCDIR)
	install -m 644 $(SO) $(DESTDIR)$(LIBDIR)/libmentat_sqlite.so
	install -m 644 README.md VERSION $(DESTDIR)$(DOCDIR)/
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi
uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libmentat_sqlite.so
	rm -f $(DESTDIR)$(DOCDIR)/README.md $(DESTDIR)$(DOCDIR)/VERSION
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

# Packages (pkg/): the .deb for Debian's libsqlite3-mod-* place, and the self-contained
# builds for Python and npm, which carry the .so's non-glibc libraries (libcjson.so.1, ...)
# beside it with an $$ORIGIN run path. The .deb goes to build/ (`dpkg -i build/*.deb`), the
# wheel and npm tarballs to build/dist.
BUNDLE = build/bundle/libmentat_sqlite.so
$(BUNDLE): $(OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libmentat_sqlite.so -Wl,-z,relro,-z,now -Wl,-rpath,'$$ORIGIN' \
	  -Wl,--enable-new-dtags -o $@ $(OBJ) $(LIBS)
	bash pkg/bundle.sh $@
deb: $(SO)
	@$(MAKE) -s deps DEB_EXTRA="dpkg-dev lintian"
	bash pkg/deb.sh $(SO) build
wheel: $(BUNDLE)
	@$(MAKE) -s deps DEB_EXTRA="python3-build python3-setuptools python3-wheel"
	bash pkg/wheel.sh build/bundle build/dist
npm: $(BUNDLE)
	bash pkg/npm.sh build/bundle build/dist
packages: deb wheel npm

clean:
	rm -rf build
