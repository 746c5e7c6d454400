#!/bin/sh
# `pip install ./bindings/python` in a fresh virtual environment (in a
# temporary directory) must build librcip with cargo and bundle it in the
# package: then `import rcip` works from anywhere with no RCIP_LIBRARY, and
# the binding's test suite passes against the installed package.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PYTHON=${PYTHON:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
VENV=$TMP/venv

"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$ROOT/bindings/python"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check 'pytest>=7'

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
