#!/bin/sh
# Installs rcip into a temporary prefix (`make install install-cpp-header
# PREFIX=...`), then checks what a C or C++ project gets from it: the files,
# the SONAME carrying the ABI major version, a C program and a C++ program
# built with `pkg-config --cflags --libs rcip` (the C one also under valgrind
# with the installed suppression file), a static link against
# librcip.a, and the `rcip check` CLI; then `make install-strip` into a
# second prefix (no debug sections, smaller, still links and runs).
#
# RCIP_MAKE: the make command to use (default: make). Prints
# "N passed, M failed" and exits non-zero on any failure.
set -eu

. "$(dirname "$0")/common.sh"

(cd "$ROOT" && $RCIP_MAKE install install-cpp-header PREFIX="$PREFIX")

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n 1)
MAJOR=${VERSION%%.*}

for f in bin/rcip "lib/librcip.so.$VERSION" "lib/librcip.so.$MAJOR" lib/librcip.so lib/librcip.a include/rcip.h \
    include/rcip/rcip.hpp lib/pkgconfig/rcip.pc share/rcip/rcip.supp; do
    check "installed $f" test -e "$PREFIX/$f"
done
check "librcip.so.$MAJOR is a symlink" test -L "$PREFIX/lib/librcip.so.$MAJOR"
check "SONAME is librcip.so.$MAJOR" sh -c "readelf -d '$PREFIX/lib/librcip.so.$VERSION' | grep -q 'SONAME.*\[librcip.so.$MAJOR\]'"

export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
check "pkg-config knows rcip $VERSION" sh -c "test \"\$(pkg-config --modversion rcip)\" = '$VERSION'"
CFLAGS_RCIP=$(pkg-config --cflags rcip)
LIBS_RCIP=$(pkg-config --libs rcip)

check "C program compiles with pkg-config" \
    sh -c "$CC -std=c11 -Wall -Wextra -Wpedantic -Werror $CFLAGS_RCIP '$ROOT/tests/install/hello.c' -o '$TMP/hello' $LIBS_RCIP -Wl,-rpath,'$PREFIX/lib'"
check "C program needs librcip.so.$MAJOR" sh -c "readelf -d '$TMP/hello' | grep -q 'NEEDED.*\[librcip.so.$MAJOR\]'"
check "C program runs" "$TMP/hello"
# The plain valgrind command a user runs, with the installed suppression
# file (README.md, "Checking for leaks"): the program loads a catalog with
# schemas, so librcip's process-lifetime data is there to be suppressed.
check "valgrind --leak-check=full --error-exitcode=1 with share/rcip/rcip.supp passes" \
    valgrind -q --leak-check=full --error-exitcode=1 --suppressions="$PREFIX/share/rcip/rcip.supp" "$TMP/hello"
check "C program runs through LD_LIBRARY_PATH" sh -c "$CC -std=c11 $CFLAGS_RCIP '$ROOT/tests/install/hello.c' -o '$TMP/hello2' $LIBS_RCIP && LD_LIBRARY_PATH='$PREFIX/lib' '$TMP/hello2'"

# Static: the archive itself, plus the Libs.private that pkg-config --static adds.
STATIC_DEPS=$(pkg-config --static --libs-only-l rcip | sed 's/-lrcip\b//')
check "C program links librcip.a statically (Libs.private: $STATIC_DEPS)" \
    sh -c "$CC -std=c11 $CFLAGS_RCIP '$ROOT/tests/install/hello.c' -o '$TMP/hello_static' '$PREFIX/lib/librcip.a' $STATIC_DEPS && '$TMP/hello_static'"
check "static program does not need librcip.so" sh -c "! readelf -d '$TMP/hello_static' | grep -q 'librcip'"

check "C++ example compiles with pkg-config (-Werror)" \
    sh -c "$CXX -std=c++17 -Wall -Wextra -Wpedantic -Werror -pthread $CFLAGS_RCIP '$ROOT/bindings/cpp/examples/quickstart.cpp' -o '$TMP/quickstart' $LIBS_RCIP -Wl,-rpath,'$PREFIX/lib'"
check "C++ example runs" "$TMP/quickstart"

printf '{"protocolVersion": "1.0", "application": {"id": "x", "name": "X", "description": "X."}, "scopes": [], "capabilities": []}' >"$TMP/catalog.json"
check "rcip check accepts a catalog" "$PREFIX/bin/rcip" check "$TMP/catalog.json"
printf '{"protocolVersion": "2.0"}' >"$TMP/bad.json"
check "rcip check refuses a bad catalog" sh -c "! '$PREFIX/bin/rcip' check '$TMP/bad.json'"

# install-strip: the same files without debug information, still usable.
SPREFIX=$TMP/stripped
(cd "$ROOT" && $RCIP_MAKE install-strip PREFIX="$SPREFIX") >"$TMP/out" 2>&1 || { fail "make install-strip"; sed 's/^/     /' "$TMP/out"; }
check "install-strip: no debug information in librcip.so" sh -c "! readelf -S '$SPREFIX/lib/librcip.so.$VERSION' | grep -q '\.debug_'"
check "install-strip: librcip.so is smaller" sh -c "test \$(wc -c <'$SPREFIX/lib/librcip.so.$VERSION') -lt \$(wc -c <'$PREFIX/lib/librcip.so.$VERSION')"
check "install-strip: a C program links and runs (shared and static)" \
    sh -c "$CC -std=c11 -I'$SPREFIX/include' '$ROOT/tests/install/hello.c' -o '$TMP/hello_s' -L'$SPREFIX/lib' -lrcip -Wl,-rpath,'$SPREFIX/lib' && '$TMP/hello_s' && $CC -std=c11 -I'$SPREFIX/include' '$ROOT/tests/install/hello.c' -o '$TMP/hello_ss' '$SPREFIX/lib/librcip.a' $STATIC_DEPS && '$TMP/hello_ss'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
