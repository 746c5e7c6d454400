"""``python -m rcip`` (check, serve), Ctrl-C stopping serve_stdio and
serve_stdio_async, and plain callbacks kept off the event loop's thread
under invoke_async."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

import pytest
from conftest import CATALOG, HERE, ROOT

import rcip

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}

APP_MODULE = '''
import asyncio, sys
import rcip

app = rcip.App("served", name="Served", description="A served app.")

@app.capability(effect="read")
def echo(text: str) -> str:
    """Echo

    Returns the text."""
    return text

async_app = rcip.App("servedAsync", name="Served", description="A served app with a coroutine handler.")

@async_app.capability(effect="read")
async def shout(text: str) -> str:
    """Shout

    Returns the text in capitals."""
    await asyncio.sleep(0)
    return text.upper()

if __name__ == "__main__":
    mode = sys.argv[1]
    runtime = app.runtime()
    session = rcip.McpSession(runtime)
    try:
        if mode == "sync":
            session.serve_stdio()
        else:
            asyncio.run(session.serve_stdio_async())
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        print("stopped by %s, session closed: %s" % (type(exc).__name__, session.closed), file=sys.stderr)
        sys.exit(130)
'''


def env() -> Dict[str, str]:
    e = dict(os.environ)
    if e.get("RCIP_TEST_INSTALLED") != "1":
        e["PYTHONPATH"] = os.path.join(HERE, "..")
    return e


def converse(cmd: List[str], messages: List[Dict[str, Any]], replies: int, cwd: str) -> List[Dict[str, Any]]:
    """Sends the messages, reads ``replies`` lines, then ends the input."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(), cwd=cwd)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        proc.stdin.flush()
        got = [json.loads(proc.stdout.readline()) for _ in range(replies)]
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        return got
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def rcip_cli(*args: str, **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rcip", *args], capture_output=True, text=True, timeout=60, env=env(), **kw)


def test_check_reports_like_the_rcip_binary(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(CATALOG))
    bad_catalog = json.loads(json.dumps(CATALOG))
    bad_catalog["capabilities"][0]["id"] = "Bad"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bad_catalog))
    ok = rcip_cli("check", str(good))
    assert ok.returncode == 0 and ok.stdout == "%s: ok\n" % good
    both = rcip_cli("check", str(good), str(bad))
    assert both.returncode == 1
    lines = both.stdout.splitlines()
    assert lines[0] == "%s: ok" % good
    assert lines[1].startswith("%s: /capabilities/0/id" % bad) and lines[-1] == "%s: 1 problem" % bad
    as_json = rcip_cli("check", "--json", str(bad))
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and report["ok"] is False and report["problems"][0]["pointer"] == "/capabilities/0/id"
    assert rcip_cli("check", str(tmp_path / "missing.json")).returncode == 2
    assert rcip_cli("check").returncode == 2
    version = rcip_cli("version")
    assert version.returncode == 0 and version.stdout == "rcip %s (ABI %d)\n" % (rcip.library_version(), rcip.abi_version())


@pytest.mark.skipif(sys.version_info < (3, 10), reason="the desk example needs Python 3.10 (kw_only)")
def test_check_accepts_the_declared_desk_catalog(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, %r); import dispatch_desk; print(dispatch_desk.app.to_json())" % os.path.join(HERE, "..", "examples")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env(),
    )
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "desk.json"
    path.write_text(proc.stdout)
    assert rcip_cli("check", str(path)).returncode == 0


def test_serve_answers_an_mcp_client_over_stdio(tmp_path):
    module = tmp_path / "served_app.py"
    module.write_text(APP_MODULE)
    messages = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}]
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    for target in ("served_app:app", str(module) + ":app"):
        proc = subprocess.run([sys.executable, "-m", "rcip", "serve", target], input=stdin, capture_output=True, text=True, timeout=60, env=env(), cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr
        replies = [json.loads(line) for line in proc.stdout.splitlines()]
        assert [r["id"] for r in replies] == [1, 2]
        assert replies[1]["result"]["structuredContent"] == {"result": "hi"}
        assert replies[0]["result"]["serverInfo"]["name"] == "served"
    # A coroutine handler answers from the loop: keep the input open until
    # the reply came (at the end of input the session cancels what is in flight).
    shout = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shout", "arguments": {"text": "hi"}}}
    replies = converse([sys.executable, "-m", "rcip", "serve", "served_app:async_app"], [INITIALIZE, messages[1], shout], 2, cwd=str(tmp_path))
    assert replies[1]["result"]["structuredContent"] == {"result": "HI"}
    missing = rcip_cli("serve", "served_app:nothing", cwd=str(tmp_path))
    assert missing.returncode == 2 and "has no attribute 'nothing'" in missing.stderr
    # --http serves over Streamable HTTP: tests/test_http.py.


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_ctrl_c_stops_serving_without_waiting_for_input(tmp_path, mode):
    module = tmp_path / "served_app.py"
    module.write_text(APP_MODULE)
    proc = subprocess.Popen([sys.executable, str(module), mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=10)
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert rc == 130, stderr
    # Standard input stays open: without the interrupt ending the loop the
    # process would block reading it until the 10 s wait above gives up.
    # The bound is loose on purpose (a loaded CI machine once took 1.03 s
    # for the whole interpreter exit); how fast is not a unit test's call.
    assert elapsed < 5.0, elapsed
    assert "session closed: True" in stderr
    assert proc.stdout.read() == b""  # nothing more was sent


# The interrupt lands while the loop is being started: the loop may answer
# before Thread.start returns, so Ctrl-C right after the first reply used to
# escape before serve_stdio's try and leave the session open (seen once in
# a fresh-clone run: "session closed: False").
INTERRUPTED_AT_START = """
import rcip._mcp as _mcp
_begin = _mcp._StdioServing.begin
def _interrupted(self):
    _begin(self)
    raise KeyboardInterrupt
_mcp._StdioServing.begin = _interrupted
"""


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_interrupt_while_the_loop_starts_still_closes_the_session(tmp_path, mode):
    module = tmp_path / "served_app.py"
    module.write_text(APP_MODULE.replace('if __name__ == "__main__":', INTERRUPTED_AT_START + '\nif __name__ == "__main__":'))
    proc = subprocess.Popen([sys.executable, str(module), mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    try:
        rc = proc.wait(timeout=30)  # standard input stays open: no end of input closes it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert rc == 130, stderr
    assert "session closed: True" in stderr, stderr


def test_serve_stdio_returns_at_the_end_of_input_and_puts_descriptor_0_back(tmp_path):
    script = (
        "import os, sys, rcip\n"
        "app = rcip.App('x', name='X', description='X.')\n"
        "before = os.fstat(0).st_ino\n"
        "rt = app.runtime(); s = rcip.McpSession(rt); s.serve_stdio()\n"
        "print('restored' if os.fstat(0).st_ino == before else 'changed', s.closed, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], input=json.dumps(INITIALIZE) + "\n", capture_output=True, text=True, timeout=60, env=env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["id"] == 1
    assert proc.stderr.strip() == "restored True"


# ----- plain callbacks under asyncio --------------------------------------------------------


def test_a_plain_handler_and_policy_under_invoke_async_run_off_the_loop_thread(catalog_dict):
    threads: Dict[str, int] = {}

    def handler(inv: rcip.Invocation) -> Dict[str, str]:
        threads["handler"] = threading.get_ident()
        time.sleep(0.3)  # would freeze the loop if it ran on its thread
        return {"text": "hello " + inv.input["name"]}

    def policy(request: rcip.PolicyRequest) -> str:
        threads["policy"] = threading.get_ident()
        return "allow"

    async def main() -> List[Any]:
        threads["loop"] = threading.get_ident()
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        with rcip.Runtime(catalog_dict, policy=policy) as runtime:
            runtime.host.bind("greeting.say", handler)
            task = asyncio.ensure_future(ticker())
            outcome = await runtime.client.invoke_async("greeting.say", {"name": "Ada"})
            task.cancel()
            return [outcome, ticks]

    outcome, ticks = asyncio.run(main())
    assert outcome.ok and outcome.output == {"text": "hello Ada"}
    assert threads["handler"] != threads["loop"]
    assert threads["policy"] != threads["loop"]
    assert ticks >= 3  # the loop ran while the handler slept (nominally 30 ticks)


def test_a_plain_handler_on_an_ordinary_thread_still_runs_inline(catalog_dict):
    seen: List[int] = []
    with rcip.Runtime(catalog_dict) as runtime:
        runtime.host.bind("greeting.say", lambda inv: seen.append(threading.get_ident()) or {"text": "x"})
        assert runtime.client.invoke("greeting.say", {"name": "A"}).ok
    assert seen == [threading.get_ident()]


def test_a_plain_policy_under_preflight_async_runs_off_the_loop_thread(catalog_dict):
    threads: List[int] = []

    def policy(request: rcip.PolicyRequest) -> str:
        threads.append(threading.get_ident())
        return "allow"

    async def main() -> Any:
        with rcip.Runtime(catalog_dict, policy=policy) as runtime:
            runtime.host.bind("tickets.create", lambda inv: {})
            runtime.host.set_context(["tickets"])
            return threading.get_ident(), await runtime.client.preflight_async([("tickets.create", {"title": "x"})])

    loop_thread, report = asyncio.run(main())
    assert report.outcomes[0].status == rcip.PreflightStatus.READY
    assert threads and loop_thread not in threads


@pytest.mark.skipif(sys.version_info < (3, 10), reason="the desk example needs Python 3.10 (kw_only)")
def test_the_desk_served_over_mcp_keeps_standard_output_for_the_protocol(tmp_path):
    desk = os.path.join(HERE, "..", "examples", "dispatch_desk.py")
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "visits.assignTechnician", "arguments": {"visitId": "V-1003", "technicianId": "T-02"}}}
    listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    replies = converse([sys.executable, "-m", "rcip", "serve", desk + ":app"], [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call, listing], 3, cwd=str(tmp_path))
    # The call runs on a worker: the listing may be answered first.
    replies.sort(key=lambda r: r["id"])
    assert [r["id"] for r in replies] == [1, 2, 3]
    info = replies[0]["result"]["serverInfo"]
    assert (info["name"], info["version"]) == ("dispatchDesk", "1.0.0")
    assert replies[1]["result"]["structuredContent"]["technicianName"]
    assert [t["name"] for t in replies[2]["result"]["tools"]][:2] == ["board.listOpenVisits", "visits.search"]
