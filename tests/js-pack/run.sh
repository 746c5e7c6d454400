#!/bin/sh
# make test-js-pack: the JS package as a user gets it (bindings/js/README.md).
#
#   NODE=... NPM=... TSC=... sh tests/js-pack/run.sh OUT_DIR
#
# NODE is the pinned Node 22, NPM the npm the Makefile installs with, TSC the
# pinned TypeScript's bin/tsc (tests/js-types). After `make js`:
#   1. `npm pack` of bindings/js into OUT_DIR/tarball; the tarball must hold
#      exactly the files in tests/js-pack/tarball-files.txt (the .wasm among
#      them; no tests, tools, bench, target/), and its size is printed;
#   2. a fresh project OUT_DIR/app installs the tarball (npm install --offline:
#      the package has no dependencies, so nothing is fetched);
#   3. there, esm.mjs (import) and cjs.cjs (require) each create a runtime,
#      bind a capability and invoke it;
#   4. tsc --strict type-checks consumer.mts and consumer.cts against the
#      installed declarations (both files of the "types" conditions must be the
#      ones it read), and must refuse wrong-output.mts and wrong-output.cts
#      with TS2322.
# Exit status 1 on the first failure.
set -eu

: "${NODE:?NODE must name the pinned node}" "${NPM:?NPM must name npm}" "${TSC:?TSC must name the pinned tsc}"
[ $# -eq 1 ] || { echo "usage: NODE=... NPM=... TSC=... sh tests/js-pack/run.sh OUT_DIR" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
fail() { echo "test-js-pack: $*" >&2; exit 1; }
# The scripts run inside OUT_DIR/app: paths given relative to here must not
# change meaning there (a bare command name such as npm stays as it is).
case $NODE in /*) ;; */*) NODE=$(pwd)/$NODE ;; esac
case $TSC in /*) ;; *) TSC=$(pwd)/$TSC ;; esac
case $NPM in /*) ;; */*) NPM=$(pwd)/$NPM ;; esac

for f in pkg/rcip_wasm.js pkg/rcip_wasm_bg.wasm cjs/core.cjs cjs/core.d.cts; do
  [ -f "$root/bindings/js/$f" ] || fail "bindings/js/$f is missing: run make js first"
done

# 1. The tarball.
rm -rf "$out/tarball" "$out/app"
mkdir -p "$out/tarball" "$out/app"
(cd "$root/bindings/js" && "$NPM" pack --pack-destination "$out/tarball" --loglevel=error >/dev/null)
set -- "$out"/tarball/*.tgz
[ $# -eq 1 ] && [ -f "$1" ] || fail "npm pack did not write exactly one tarball into $out/tarball"
tgz=$1
tar -tzf "$tgz" | sort > "$out/tarball/files.txt"
if ! sort "$here/tarball-files.txt" | diff -u - "$out/tarball/files.txt" > "$out/tarball/files.diff"; then
  cat "$out/tarball/files.diff" >&2
  fail "the tarball's files differ from tests/js-pack/tarball-files.txt (- expected, + packed)"
fi
bytes=$(wc -c < "$tgz" | tr -d ' ')
wasm_bytes=$(tar -xzOf "$tgz" package/pkg/rcip_wasm_bg.wasm | wc -c | tr -d ' ')
unpacked=$(tar -xzOf "$tgz" | wc -c | tr -d ' ')
echo "test-js-pack: $(basename "$tgz"): $bytes bytes packed, $unpacked bytes unpacked ($(wc -l < "$out/tarball/files.txt" | tr -d ' ') files, the .wasm $wasm_bytes bytes)"

# 2. A fresh project installs it.
cp "$here/package.json" "$here/esm.mjs" "$here/cjs.cjs" "$here/tsconfig.json" \
  "$here/consumer.mts" "$here/consumer.cts" "$here/wrong-output.mts" "$here/wrong-output.cts" "$out/app/"
(cd "$out/app" && "$NPM" install --offline --no-audit --no-fund --loglevel=error "$tgz" >/dev/null)
[ -f "$out/app/node_modules/rcip/pkg/rcip_wasm_bg.wasm" ] && [ ! -L "$out/app/node_modules/rcip" ] \
  || fail "npm install did not extract the tarball into $out/app/node_modules/rcip"

# 3. ESM and CommonJS. The CommonJS entry must be strict code, as the ES
# module is (a write to a frozen object throws in one and not the other).
[ "$(head -n 1 "$out/app/node_modules/rcip/cjs/core.cjs")" = "'use strict';" ] \
  || fail "cjs/core.cjs does not start with 'use strict';"
(cd "$out/app" && "$NODE" esm.mjs) || fail "esm.mjs failed"
(cd "$out/app" && "$NODE" cjs.cjs) || fail "cjs.cjs failed"

# 4. Types.
(cd "$out/app" && "$NODE" "$TSC" -p tsconfig.json --listFiles) > "$out/tsc.log" 2>&1 || { cat "$out/tsc.log" >&2; fail "tsc refused consumer.mts / consumer.cts"; }
for d in node_modules/rcip/src/core.d.mts node_modules/rcip/cjs/core.d.cts; do
  grep -q "/app/$d\$" "$out/tsc.log" || { cat "$out/tsc.log" >&2; fail "tsc did not read $d"; }
done
echo "test-js-pack: tsc --strict accepted consumer.mts (src/core.d.mts) and consumer.cts (cjs/core.d.cts)"
for w in wrong-output.mts wrong-output.cts; do
  if (cd "$out/app" && "$NODE" "$TSC" --noEmit --strict --module nodenext --moduleResolution nodenext \
      --target es2022 --lib es2022,dom "$w") > "$out/tsc-$w.log" 2>&1; then
    fail "tsc accepted $w"
  fi
  grep -q 'error TS2322' "$out/tsc-$w.log" || { cat "$out/tsc-$w.log" >&2; fail "tsc refused $w, but not with TS2322"; }
done
echo "test-js-pack: tsc refused wrong-output.mts and wrong-output.cts with TS2322, as it must"
