#!/bin/sh
# The README's "A short C example" as printed: extracts its ```json block
# (catalog.json) and its ```c block (hello.c), compiles the C with
# -std=c11 -Wall -Wextra -Wpedantic -Werror against include/ and the built
# library, runs `./hello catalog.json` and checks the outcome it prints
# (issue 18, item 7). Exits non-zero on any difference.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CC=${CC:-cc}
LIBDIR=${LIBDIR:-$ROOT/target/release}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

# block LANG: the first ```LANG block of the section.
block() {
    awk -v lang="$1" '
        /^## / { insec = ($0 == "## A short C example") ; next }
        insec && !done && $0 == "```" lang { inblk = 1; next }
        insec && inblk && $0 == "```" { inblk = 0; done = 1; next }
        insec && inblk { print }
    ' "$ROOT/README.md"
}

block json >"$TMP/catalog.json"
block c >"$TMP/hello.c"
test -s "$TMP/catalog.json" || { echo "FAIL no json block in the README's C example"; exit 1; }
test -s "$TMP/hello.c" || { echo "FAIL no c block in the README's C example"; exit 1; }

$CC -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$ROOT/include" "$TMP/hello.c" -o "$TMP/hello" \
    -L"$LIBDIR" -lrcip -Wl,-rpath,"$LIBDIR" || { echo "FAIL the README's C example does not compile as printed"; exit 1; }
(cd "$TMP" && ./hello catalog.json) >"$TMP/out" 2>&1 || { cat "$TMP/out"; echo "FAIL the README's C example exits non-zero"; exit 1; }
grep -q '"status":"succeeded"' "$TMP/out" && grep -q '"output":{"text":"hello"}' "$TMP/out" ||
    { cat "$TMP/out"; echo "FAIL the README's C example did not print the succeeded outcome"; exit 1; }
# A missing file is reported, not a crash.
if (cd "$TMP" && ./hello missing.json) >"$TMP/out2" 2>&1; then echo "FAIL a missing catalog file exits 0"; exit 1; fi
grep -q "cannot read missing.json" "$TMP/out2" || { cat "$TMP/out2"; echo "FAIL no message for a missing file"; exit 1; }
echo "ok   the README's C example compiles with -Wall -Wextra -Wpedantic -Werror and prints: $(cat "$TMP/out")"
