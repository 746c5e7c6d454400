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

.PHONY: all lib cli header conformance demo test test-rust test-conformance test-c test-python test-cpp test-install test-mcp install-cpp-header valgrind install clean

all: lib

# The shared and static library (SONAME librcip.so.$(ABI_MAJOR)).
lib:
	$(CARGO) build --release --lib
	ln -sf librcip.so $(LIBDIR)/librcip.so.$(ABI_MAJOR)

# Copies the header build.rs generated into include/ (commit the result).
header: lib
	cp "$$(ls -t $(LIBDIR)/build/rcip-*/out/rcip.h | head -n 1)" include/rcip.h

conformance: lib
	$(CARGO) build --release -p rcip-conformance

# The catalog linter (`rcip check CATALOG.json`).
cli:
	$(CARGO) build --release --bin rcip

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

test: test-rust test-conformance test-c test-python test-cpp test-install test-mcp

test-rust:
	$(CARGO) build --lib   # the conformance crate links the shared library
	$(CARGO) test --workspace

test-conformance: conformance
	$(LIBDIR)/rcip-conformance check tests/conformance/scenarios

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

# No memory error and no definitely lost bytes in the C hosts. (jsonschema's
# process-lifetime caches show as "possibly lost"; they are not leaks.)
VALGRIND := valgrind --leak-check=full --errors-for-leak-kinds=definite --show-possibly-lost=no --error-exitcode=1 -q
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

# ----- bindings: Python (ctypes) and C++ (header-only), and the install tests

PYTHON ?= python3
VENV   := $(BUILD)/venv
VENV_PY := $(VENV)/bin/python

CXXFLAGS_STRICT := -std=c++17 -Wall -Wextra -Wpedantic -Werror -pthread -g
# Sanitizers when the toolchain links them (the Rust side stays uninstrumented);
# `make test-cpp CPP_SANITIZE=` turns them off.
CPP_SANITIZE ?= $(shell printf 'int main(){return 0;}\n' | $(CXX) -x c++ -fsanitize=address,undefined - -o /dev/null 2>/dev/null && echo -fsanitize=address,undefined -fno-sanitize-recover=undefined)

BINDINGS_SUBMAKE := $(MAKE) --no-print-directory -f Makefile

.PHONY: test-python test-cpp test-install install-cpp-header

$(VENV)/.pytest-installed:
	$(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check 'pytest>=7' 'mypy>=1.5'
	touch $@

# The C dispatch desk is built too: the Python port must print the same outcome codes.
test-python: lib $(VENV)/.pytest-installed $(BUILD)/dispatch_desk
	cd bindings/python && RCIP_LIBRARY=$(CURDIR)/$(LIBDIR)/librcip.so RCIP_C_DEMO=$(CURDIR)/$(BUILD)/dispatch_desk \
	  $(CURDIR)/$(VENV_PY) -m pytest -q tests
	cd bindings/python && $(CURDIR)/$(VENV_PY) -m mypy rcip

$(BUILD)/test_rcip_cpp: bindings/cpp/tests/test_rcip.cpp bindings/cpp/include/rcip/rcip.hpp include/rcip.h lib | $(BUILD)
	$(CXX) $(CXXFLAGS_STRICT) $(CPP_SANITIZE) -Iinclude -Ibindings/cpp/include $< -o $@ $(LINK_RCIP)

$(BUILD)/quickstart_cpp: bindings/cpp/examples/quickstart.cpp bindings/cpp/include/rcip/rcip.hpp include/rcip.h lib | $(BUILD)
	$(CXX) $(CXXFLAGS_STRICT) $(CPP_SANITIZE) -Iinclude -Ibindings/cpp/include $< -o $@ $(LINK_RCIP)

test-cpp: $(BUILD)/test_rcip_cpp $(BUILD)/quickstart_cpp
	$(BUILD)/test_rcip_cpp
	$(BUILD)/quickstart_cpp

test-install:
	RCIP_MAKE='$(BINDINGS_SUBMAKE)' CC='$(CC)' CXX='$(CXX)' sh tests/install/native.sh
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

clean:
	$(CARGO) clean
	rm -rf $(BUILD)
