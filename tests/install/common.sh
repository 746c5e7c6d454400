# Sourced by the install tests (native.sh, cmake.sh): the repository root,
# a temporary install prefix removed at exit, and the pass/fail counters.
# The caller prints "$passed passed, $failed failed" at its end.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RCIP_MAKE=${RCIP_MAKE:-make}
CC=${CC:-cc}
CXX=${CXX:-c++}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
PREFIX=$TMP/prefix
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
check() { # check NAME COMMAND...
    name=$1
    shift
    if "$@" >"$TMP/out" 2>&1; then ok "$name"; else fail "$name"; sed 's/^/     /' "$TMP/out"; fi
}
