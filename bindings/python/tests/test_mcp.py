"""rcip.McpSession: the MCP bridge from Python (messages in and out, the
elicitation opt-in, the stdio server loop). The mapping itself is tested in
the library (src/mcp) and against the real mcp client (tests/mcp)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
from typing import Any, Dict, List

import pytest
from conftest import HERE

import rcip
from rcip._handle import registry


class Wire:
    """A client's end of the session: what it received, and requests."""

    def __init__(self) -> None:
        self.received: List[Dict[str, Any]] = []
        self.session: Any = None

    def __call__(self, text: str) -> None:
        assert "\n" not in text
        self.received.append(json.loads(text))

    def request(self, id: Any, method: str, params: Any = None) -> Dict[str, Any]:
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        self.session.receive(message)
        for i, m in enumerate(self.received):
            if m.get("id") == id and "method" not in m:
                return self.received.pop(i)
        raise AssertionError("no response to %r: %r" % (id, self.received))

    def initialize(self, capabilities: Any = None) -> Dict[str, Any]:
        r = self.request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities or {}, "clientInfo": {"name": "py", "version": "0"}})
        self.session.receive('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        return r


def greet(inv: rcip.Invocation) -> Dict[str, Any]:
    return {"text": "hello " + inv.input["name"]}


def test_messages_in_and_out(catalog):
    wire = Wire()
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", greet)
        runtime.host.bind("tickets.purge", lambda inv: {})
        # No workers: every reply is sent before receive() returns.
        with rcip.McpSession(runtime, on_message=wire, workers=0) as session:
            wire.session = session
            init = wire.initialize()
            assert init["result"]["protocolVersion"] == "2025-11-25"
            assert init["result"]["serverInfo"]["name"] == "desk"
            tools = wire.request(1, "tools/list", {})["result"]["tools"]
            names = [t["name"] for t in tools]
            assert names[0] == "greeting.say"
            by_name = {t["name"]: t for t in tools}
            assert by_name["greeting.say"]["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
            assert by_name["tickets.purge"]["annotations"] == {"destructiveHint": True, "openWorldHint": False}
            assert by_name["mail.send"]["annotations"] == {"destructiveHint": False, "openWorldHint": True}
            ok = wire.request(2, "tools/call", {"name": "greeting.say", "arguments": {"name": "Ada"}})["result"]
            assert ok["structuredContent"] == {"text": "hello Ada"}
            assert ok["isError"] is False
            bad = wire.request(3, "tools/call", {"name": "greeting.say", "arguments": {"name": ""}})["result"]
            assert bad["isError"] is True and bad["_meta"]["rcip/outcome"]["error"]["code"] == "INPUT_INVALID"
            # Fail-closed: a confirmation is an error result, nothing ran.
            purge = wire.request(4, "tools/call", {"name": "tickets.purge"})["result"]
            assert purge["_meta"]["rcip/outcome"]["status"] == "confirmation_required"
            assert runtime.stats()["pendingConfirmations"] == 1
            assert wire.request(5, "tools/call", {"name": "nope"})["error"]["code"] == -32602
            assert wire.request(6, "server/discover")["error"]["code"] == -32601
            session.receive("{not json")
            assert wire.received.pop()["error"]["code"] == -32700
            session.receive(b"[]")
            assert wire.received.pop()["error"]["code"] == -32600
            # list_changed when relevance changes.
            runtime.host.set_context({"activeScopeIds": ["tickets"]})
            assert wire.received == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
        assert session.closed
        with pytest.raises(ValueError):
            session.receive({"jsonrpc": "2.0", "id": 7, "method": "ping"})


def test_the_elicitation_opt_in_from_inside_on_message(catalog):
    purged = threading.Event()
    session_box: List[rcip.McpSession] = []
    received: List[Dict[str, Any]] = []

    def on_message(text: str) -> None:
        message = json.loads(text)
        received.append(message)
        if message.get("method") == "elicitation/create":
            assert "Purge tickets" in message["params"]["message"]
            # Answer from inside the callback: the reply is queued, not recursed.
            session_box[0].receive({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept"}})

    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("tickets.purge", lambda inv: purged.set() or {"purged": 3})
        session = rcip.McpSession(runtime, on_message=on_message, confirmation="elicit", workers=0)
        session_box.append(session)
        session.receive({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}})
        session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
        session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "tickets.purge"}})
        assert purged.is_set()
        methods = [m.get("method") for m in received]
        assert methods == [None, "elicitation/create", None]
        assert received[-1]["result"]["structuredContent"] == {"purged": 3}
        session.close()


def test_options_and_registrations(catalog, errors):
    before = len(registry)
    with rcip.Runtime(catalog, on_error=errors) as runtime:
        with pytest.raises(rcip.InvalidArgumentError):
            rcip.McpSession(runtime, on_message=lambda t: None, confirmation="anyone")
        with pytest.raises(rcip.InvalidArgumentError):
            rcip.McpSession(runtime, options={"nope": 1})
        assert len(registry) == before, "a refused session releases its callback"

        async def coroutine(text: str) -> None:
            pass

        with pytest.raises(TypeError):
            rcip.McpSession(runtime, on_message=coroutine)

        def raising(text: str) -> None:
            raise RuntimeError("transport down")

        session = rcip.McpSession(runtime, on_message=raising, filter={"availableOnly": True}, page_size=2)
        session.receive({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert [str(e) for e, _ in errors] == ["transport down"]
        assert len(registry) == before + 1
        errors.clear()  # the traceback's frames reach the session
        del session
        gc.collect()
        assert len(registry) == before, "the finalizer frees the session and its callback"


def test_serve_stdio_in_a_subprocess(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from conftest import CATALOG  # picks the package under test, as the tests do
            import rcip

            runtime = rcip.Runtime(CATALOG)
            runtime.host.bind("greeting.say", lambda inv: {"text": "hi " + inv.input["name"]})
            print("serving", file=sys.stderr)
            rcip.McpSession(runtime).serve_stdio()
            print("done", file=sys.stderr)
            """
        )
    )
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2031-01-01", "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Bo"}}},
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in messages) + "not json\n"
    env = dict(os.environ, PYTHONPATH=HERE)
    proc = subprocess.run([sys.executable, str(script)], input=stdin, capture_output=True, text=True, timeout=60, env=env, cwd=HERE)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    replies = [json.loads(line) for line in lines]
    # The call runs on a worker: its reply may come after the parse error's.
    by_id = {r.get("id"): r for r in replies}
    assert len(replies) == 3 and set(by_id) == {1, 2, None}
    assert replies[0]["id"] == 1 and by_id[1]["result"]["protocolVersion"] == "2025-11-25"
    assert by_id[2]["result"]["structuredContent"] == {"text": "hi Bo"}
    assert by_id[None]["error"]["code"] == -32700
    assert proc.stderr.splitlines() == ["serving", "done"]
