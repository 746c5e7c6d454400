#!/bin/sh
# `pip install ./bindings/python` in a fresh virtual environment (in a
# temporary directory) must build librcip with cargo and bundle it in the
# package: then `import rcip` works from anywhere with no RCIP_LIBRARY, and
# the binding's test suite passes against the installed package. Also:
# the build shows no setuptools deprecation warning, a build without cargo
# stops with a message saying what to do, and `pip install -e` gives a
# package that loads its library.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PYTHON=${PYTHON:-python3}
TMP=$(mktemp -d)
LINK="$ROOT/bindings/python/rcip/librcip.so"
trap 'rm -rf "$TMP"; [ -L "$LINK" ] && rm -f "$LINK"; true' EXIT INT TERM
VENV=$TMP/venv

"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --verbose --disable-pip-version-check "$ROOT/bindings/python" > "$TMP/build.log" 2>&1 || { cat "$TMP/build.log"; exit 1; }
if grep -i 'deprecat' "$TMP/build.log"; then
  echo "python.sh: the package build printed a deprecation warning (above)"; exit 1
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check 'pytest>=7'

# Without cargo: a clear message, not a traceback from subprocess.
if env -u RCIP_PREBUILT_LIBRARY CARGO="$TMP/no-such-cargo" "$VENV/bin/python" -m pip install --disable-pip-version-check \
     --force-reinstall --no-deps "$ROOT/bindings/python" > "$TMP/nocargo.log" 2>&1; then
  echo "python.sh: the build without cargo succeeded"; exit 1
fi
grep -q 'building it needs cargo, which was not found' "$TMP/nocargo.log" || { cat "$TMP/nocargo.log"; exit 1; }
grep -q 'RCIP_PREBUILT_LIBRARY=/path/to/librcip.so' "$TMP/nocargo.log" || { cat "$TMP/nocargo.log"; exit 1; }

# Editable: the source tree's package, with its library linked in.
"$PYTHON" -m venv "$TMP/editable"
"$TMP/editable/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT/bindings/python"
(cd "$TMP" && env -u RCIP_LIBRARY "$TMP/editable/bin/python" -c '
import os, sys, rcip
assert os.path.realpath(os.path.dirname(rcip.__file__)) == os.path.realpath(sys.argv[1]), rcip.__file__
assert rcip.abi_version() == rcip.EXPECTED_ABI_VERSION
print("editable rcip from", os.path.dirname(rcip.__file__), "library", os.path.realpath(rcip.library_path()))
' "$ROOT/bindings/python/rcip")

cd "$TMP"
env -u RCIP_LIBRARY "$VENV/bin/python" - <<'PY'
import os
import rcip

package = os.path.dirname(rcip.__file__)
assert package.startswith(os.environ.get("VIRTUAL_ENV", os.path.dirname(os.path.dirname(package)))), package
assert os.path.dirname(rcip.library_path()) == package, (rcip.library_path(), package)
assert os.path.isfile(os.path.join(package, "py.typed"))
assert rcip.abi_version() == rcip.EXPECTED_ABI_VERSION
catalog = {
    "protocolVersion": "1.0",
    "application": {"id": "installed", "name": "Installed", "description": "Install test."},
    "scopes": [],
    "capabilities": [{"id": "ping", "title": "Ping", "description": "Answers pong.", "scopeIds": [], "effect": "read",
                      "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}],
}
with rcip.Runtime(catalog) as runtime:
    runtime.host.bind("ping", lambda inv: {"pong": True})
    outcome = runtime.client.invoke("ping", {})
    assert outcome.output == {"pong": True}, outcome
print("installed rcip %s from %s" % (rcip.library_version(), rcip.library_path()))
PY

# The whole suite, against the installed package (not the source tree).
cp -R "$ROOT/bindings/python/tests" "$TMP/tests"
cp -R "$ROOT/bindings/python/examples" "$TMP/examples"
env -u RCIP_LIBRARY RCIP_TEST_INSTALLED=1 RCIP_REPO_ROOT="$ROOT" "$VENV/bin/pytest" -q -p no:cacheprovider "$TMP/tests"
