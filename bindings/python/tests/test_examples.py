"""The examples shipped with the binding run as documented."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import HERE


def test_quickstart_runs():
    script = os.path.join(HERE, "..", "examples", "quickstart.py")
    env = dict(os.environ)
    if env.get("RCIP_TEST_INSTALLED") != "1":  # else the installed package
        env["PYTHONPATH"] = os.path.join(HERE, "..")
    proc = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    assert "good input  -> succeeded {'text': 'hello, Ada'}" in out
    assert "bad input   -> failed INPUT_INVALID ['/name']" in out
    assert "after unbind -> CAPABILITY_UNBOUND" in out
    assert "raising     -> EXECUTION_FAILED" in out
    assert "asyncio     -> succeeded" in out


def readme_example(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index("```python\n") + len("```python\n")
    return text[start : text.index("```", start)]


def test_the_binding_readme_example_runs_as_shown():
    from conftest import ROOT

    code = readme_example(os.path.join(ROOT, "bindings", "python", "README.md"))
    env = dict(os.environ)
    if env.get("RCIP_TEST_INSTALLED") != "1":
        env["PYTHONPATH"] = os.path.join(HERE, "..")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "{'id': 1, 'title': 'Printer jam', 'priority': 'low'}\nsucceeded\n"


# Prepended to the README's McpHttpServer block: prints the URL once the
# server listens (the block itself prints nothing), without touching how
# serve() waits and handles Ctrl-C.
URL_PRELUDE = """
import rcip as _rcip
_start = _rcip.McpHttpServer.start
def _start_and_say(self):
    started = _start(self)
    print(self.url, flush=True)
    return started
_rcip.McpHttpServer.start = _start_and_say
"""


def test_the_readme_http_server_example_stops_on_ctrl_c_as_shown():
    """The README's ``McpHttpServer.serve()`` block, run as shown: it
    serves a session, and Ctrl-C stops it (the session ended, the
    interrupt caught as the block catches it): exit 0, nothing on stderr."""
    import json
    import signal

    from conftest import ROOT
    from test_http import _answer, _initialize, _post

    from test_typing import readme_python_blocks

    blocks = [b for b in readme_python_blocks(os.path.join(ROOT, "bindings", "python", "README.md")) if "server.serve()" in b]
    assert len(blocks) == 1, "the README's McpHttpServer.serve() example is gone"
    env = dict(os.environ)
    if env.get("RCIP_TEST_INSTALLED") != "1":
        env["PYTHONPATH"] = os.path.join(HERE, "..")
    proc = subprocess.Popen(
        [sys.executable, "-c", URL_PRELUDE + blocks[0]],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.stderr else "")
        sid = _initialize(url, "readme")
        status, _, text = _post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "board.listOpenVisits", "arguments": {}}}, sid)
        assert status == 200, text
        assert _answer(text)["result"]["structuredContent"] == {"visits": [], "total": 0}, json.dumps(_answer(text))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0 and err == "", (proc.returncode, err)
