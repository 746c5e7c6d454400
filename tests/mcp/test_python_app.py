"""A Python application with no serving code (tests/mcp/tickets_app.py:
`@app.capability` declarations and a runtime policy), served by `python -m
rcip serve --http 127.0.0.1:0 --confirm elicit`, against the real `mcp`
client package over Streamable HTTP: the tools are listed, `tickets.close`
is approved by the client's user through elicitation, `tickets.delete` is
refused by the policy that reads the decoded arguments, and a slow search
(a coroutine handler on the server's own loop) reports progress and is
cancelled."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import anyio
import mcp_types as types
import pytest
from conftest import REPO, Stderr, http_client

pytestmark = pytest.mark.anyio

APP = Path(__file__).resolve().parent / "tickets_app.py"


class PythonServer:
    """`python -m rcip serve tickets_app.py:app --http ...` as a subprocess
    (the binding from the source tree, the library `make lib` built)."""

    def __init__(self, *flags: str) -> None:
        self.stderr = Stderr()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "bindings" / "python"), env.get("PYTHONPATH", "")])
        env.setdefault("RCIP_LIBRARY", str(REPO / "target" / "release" / "librcip.so"))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rcip", "serve", f"{APP}:app", *flags],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.stderr.file,
            text=True,
            env=env,
        )
        lines: queue.Queue[str] = queue.Queue()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                lines.put(line)
            lines.put("")

        threading.Thread(target=read, daemon=True).start()
        try:
            line = lines.get(timeout=30)
        except queue.Empty:
            line = ""
        if not line.startswith("rcip: serving MCP on http://127.0.0.1:"):
            self.stop()
            raise AssertionError(f"the server printed {line!r}; standard error:\n{self.stderr.text()}")
        self.url = line.split(" on ", 1)[1].strip()

    def stop(self, timeout: float = 10.0) -> int:
        """Ctrl-C: the server shuts down, exit status 130."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def tickets_server() -> Iterator[PythonServer]:
    server = PythonServer("--http", "127.0.0.1:0", "--confirm", "elicit", "--ttl-ms", "60000")
    try:
        yield server
    finally:
        code = server.stop()
        print(server.stderr.text())
    assert code == 130, f"exit status after Ctrl-C: {code}"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_declared_python_app_served_over_http(tickets_server: PythonServer, mode: str) -> None:
    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={})

    # The legacy era: the initialize handshake (protocol 2025-11-25); the
    # modern one: stateless requests, the approval by a multi round-trip
    # request (docs/MCP.md "Confirmations without sessions").
    async with http_client(tickets_server, elicitation_callback=elicit, mode=mode) as desk:
        client = desk.client
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        if mode == "legacy":
            assert client.server_info.name == "ticketTracker"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["tickets.close", "tickets.delete", "tickets.search"]
        assert tools["tickets.close"].input_schema["required"] == ["ticketId", "resolution"]

        # A read, on the server's loop (the handler is a coroutine).
        found = await client.call_tool("tickets.search", {"query": "printer"})
        assert found.is_error is False
        assert [t["ticketId"] for t in found.structured_content["tickets"]] == [1, 2]
        if mode != "legacy":
            # Every modern result names the server (2026-07-28 "Per-response protocol fields").
            assert found.meta["io.modelcontextprotocol/serverInfo"]["name"] == "ticketTracker"

        # A write that needs approval: the client's user approves it.
        closed = await client.call_tool("tickets.close", {"ticketId": 1, "resolution": "Paper removed."})
        assert len(asked) == 1 and asked[0].mode == "form", asked
        assert closed.is_error is False, closed.content
        assert closed.structured_content == {"ticketId": 1, "title": "Printer jam on floor 2", "status": "closed"}
        assert "tickets_app: closed 1: Paper removed." in tickets_server.stderr.text()

        # A delete the policy refuses from the decoded ticket id; no question.
        refused = await client.call_tool("tickets.delete", {"ticketId": 2})
        assert refused.is_error is True
        outcome = refused.meta["rcip/outcome"]
        assert outcome["status"] == "denied", outcome
        assert "ticket 2 is still open: close it first" in str(outcome), outcome
        assert len(asked) == 1

        # A slow search reports progress and is cancelled by the client.
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        with anyio.move_on_after(0.8) as scope:
            await client.call_tool("tickets.search", {"query": "printer", "archive": True}, progress_callback=on_progress)
        assert scope.cancelled_caught, "the archive search takes about 2 s"
        assert progress and progress[0] == 0, progress
        await tickets_server.stderr.wait_for("tickets_app: archive search cancelled", timeout=5)

        # The session goes on.
        again = await client.call_tool("tickets.search", {"query": "coffee"})
        assert [t["status"] for t in again.structured_content["tickets"]] == ["closed"]
