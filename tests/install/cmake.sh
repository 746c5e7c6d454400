#!/bin/sh
# The CMake package (issue 18, item 10): `make install PREFIX=...` into a
# temporary prefix, then a C project that uses `find_package(rcip CONFIG)`
# is configured with cmake against that prefix, built and run, with the
# shared (rcip::rcip) and the static (rcip::rcip_static) imported target;
# the version file refuses an incompatible version. cmake comes from the
# Debian packages (apt-get, when it is missing and we are root).
#
# RCIP_MAKE: the make command to use (default: make). Prints
# "N passed, M failed" and exits non-zero on any failure.
set -eu

. "$(dirname "$0")/common.sh"

if ! command -v cmake >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing cmake from the Debian packages"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q cmake >"$TMP/apt.log" 2>&1 ||
            { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q cmake >"$TMP/apt.log" 2>&1; } ||
            { cat "$TMP/apt.log"; echo "FAIL cannot install cmake"; exit 1; }
    else
        echo "FAIL cmake is not installed (apt-get install cmake)"
        exit 1
    fi
fi

(cd "$ROOT" && $RCIP_MAKE install PREFIX="$PREFIX") >"$TMP/install.log" 2>&1 || { cat "$TMP/install.log"; echo "FAIL make install"; exit 1; }
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n 1)
MAJOR=${VERSION%%.*}
MINOR=$(echo "$VERSION" | cut -d. -f2)

for f in lib/cmake/rcip/rcipConfig.cmake lib/cmake/rcip/rcipConfigVersion.cmake; do
    check "installed $f" test -e "$PREFIX/$f"
done

# A project as a user writes it.
mkdir -p "$TMP/app"
cp "$ROOT/tests/install/hello.c" "$TMP/app/hello.c"
cat >"$TMP/app/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(rcip_cmake_app C)
set(CMAKE_C_STANDARD 11)
find_package(rcip $MAJOR.$MINOR CONFIG REQUIRED)
add_executable(hello hello.c)
target_compile_options(hello PRIVATE -Wall -Wextra -Wpedantic -Werror)
target_link_libraries(hello PRIVATE rcip::rcip)
add_executable(hello_static hello.c)
target_link_libraries(hello_static PRIVATE rcip::rcip_static)
if(NOT EXISTS "\${rcip_SUPPRESSIONS}")
  message(FATAL_ERROR "rcip_SUPPRESSIONS names no file: \${rcip_SUPPRESSIONS}")
endif()
message(STATUS "rcip \${rcip_VERSION} from \${rcip_DIR}")
CMAKE

check "cmake configures against the prefix (find_package(rcip $MAJOR.$MINOR CONFIG))" \
    cmake -S "$TMP/app" -B "$TMP/build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_C_COMPILER="$CC"
cp "$TMP/out" "$TMP/configure.log"
check "cmake found rcip $VERSION in the prefix" grep -q "rcip $VERSION from $PREFIX/lib/cmake/rcip" "$TMP/configure.log"
check "cmake builds both programs (-Werror)" cmake --build "$TMP/build"
check "the rcip::rcip program runs" "$TMP/build/hello"
check "the rcip::rcip program needs librcip.so.$MAJOR" sh -c "readelf -d '$TMP/build/hello' | grep -q 'NEEDED.*\[librcip.so.$MAJOR\]'"
check "the rcip::rcip_static program runs" "$TMP/build/hello_static"
check "the rcip::rcip_static program does not need librcip.so" sh -c "! readelf -d '$TMP/build/hello_static' | grep -q 'librcip'"

# The version file: a newer or another major version is refused.
sed "s/find_package(rcip $MAJOR.$MINOR CONFIG REQUIRED)/find_package(rcip $((MAJOR + 1)).0 CONFIG REQUIRED)/" \
    "$TMP/app/CMakeLists.txt" >"$TMP/app/CMakeLists.new" && mv "$TMP/app/CMakeLists.new" "$TMP/app/CMakeLists.txt"
check "find_package(rcip $((MAJOR + 1)).0) is refused" sh -c "! cmake -S '$TMP/app' -B '$TMP/build2' -DCMAKE_PREFIX_PATH='$PREFIX'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
