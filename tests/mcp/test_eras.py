"""The two MCP eras against the real `mcp` client package in its default
`auto` mode (it probes `server/discover`): the desk serves both eras by
default, so the client stays modern (2026-07-28) and lists and calls tools
without a session, over stdio and over Streamable HTTP; with
`{"eras": "legacy"}` the client falls back to `initialize` (docs/MCP.md,
"The two eras"). Then a client pinned to 2026-07-28 (`mode="2026-07-28"`) and one
in `auto` mode, over both transports: tools, progress, log messages only
with `logLevel`, cancellation that stops the desk's worker, and no
Mcp-Session-Id, `initialize` or GET on the wire."""

from __future__ import annotations

import json
import re
import tempfile
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio
import mcp_types as types
import pytest
from conftest import DESK, REPO, Desk, Seen, desk_args, desk_client, http_client
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.anyio

BOTH = ("--mcp-options", json.dumps({"eras": "both"}))


async def list_and_call(desk: Any) -> None:
    tools = await desk.client.list_tools()
    assert [t.name for t in tools.tools][:2] == ["board.listOpenVisits", "visits.search"]
    result = await desk.client.call_tool("board.listOpenVisits", {})
    assert result.is_error is False
    assert result.meta["rcip/outcome"]["status"] == "succeeded"
    assert "visits" in result.structured_content


LEGACY = ("--mcp-options", json.dumps({"eras": "legacy"}))


async def test_with_legacy_eras_the_client_falls_back_to_a_session() -> None:
    async with desk_client(*LEGACY, mode="auto") as desk:
        assert desk.client.session.discover_result is None
        assert desk.client.protocol_version == "2025-11-25"
        await list_and_call(desk)


async def test_by_default_the_client_stays_modern_over_stdio() -> None:
    async with desk_client(mode="auto") as desk:
        discovered = desk.client.session.discover_result
        assert discovered is not None
        assert "2026-07-28" in discovered.supported_versions
        assert desk.client.protocol_version == "2026-07-28"
        await list_and_call(desk)


async def test_by_default_the_client_stays_modern_over_http(http_desk: Any) -> None:
    server = http_desk()
    async with http_client(server, name="modern", mode="auto") as desk:
        assert desk.client.session.discover_result is not None
        await list_and_call(desk)
        # Stateless: no Mcp-Session-Id was issued, and each request's
        # runtime came from the desk's factory and ended with its answer.
        assert desk.session_ids == []
    transcript = server.stderr.text()
    assert "MCP session stateless-" in transcript
    assert "ended: its runtime is closed" in transcript


# ---- 2026-07-28 clients, pinned and `auto`, over both transports ----------------
# `Client(..., mode="2026-07-28")` adopts the revision without a probe;
# `mode="auto"` probes `server/discover` and stays modern. Both are run
# over stdio and Streamable HTTP against the desk with `"eras": "both"`.

MODES = ["2026-07-28", "auto"]
TRANSPORTS = ["stdio", "http"]
ARCHIVE = {"query": "cooler", "includeArchive": True}
MODERN = "2026-07-28"


@asynccontextmanager
async def modern_desk(transport: str, mode: str, http_desk: Any, **client_kwargs: Any) -> AsyncIterator[Desk]:
    """The desk serving both eras, with a client in `mode`; over HTTP the
    desk's transcript is the server's, and `desk.requests` what was sent."""
    if transport == "stdio":
        async with desk_client(*BOTH, mode=mode, **client_kwargs) as desk:
            yield desk
    else:
        async with http_client(http_desk(*BOTH), name="modern", mode=mode, **client_kwargs) as desk:
            yield desk


def check_modern_requests(desk: Desk, mode: str) -> list[str]:
    """Over HTTP: every request was a POST of a 2026-07-28 request, none
    carried (and no response issued) an Mcp-Session-Id, and the client
    never opened a session (`initialize`) or a GET stream. Returns the
    methods in the order sent."""
    sent = desk.requests  # type: ignore[attr-defined]
    assert sent, "the client sent nothing"
    assert desk.session_ids == [], "the server issued an Mcp-Session-Id"  # type: ignore[attr-defined]
    methods = []
    for request in sent:
        assert request.method == "POST", request
        assert "mcp-session-id" not in request.headers, request
        assert request.headers.get("mcp-protocol-version") == MODERN, request
        body = request.body
        assert isinstance(body, dict) and "id" in body, request
        assert body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN, request
        assert request.headers.get("mcp-method") == body["method"], request
        methods.append(body["method"])
    assert "initialize" not in methods, methods
    if mode == "auto":
        assert methods[0] == "server/discover", methods
    else:
        assert "server/discover" not in methods, methods
    return methods


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
async def test_a_modern_client_lists_and_calls_tools(mode: str, transport: str, http_desk: Any) -> None:
    async with modern_desk(transport, mode, http_desk) as desk:
        assert desk.client.protocol_version == MODERN
        if mode == "auto":
            discovered = desk.client.session.discover_result
            assert discovered is not None and MODERN in discovered.supported_versions
        await list_and_call(desk)
        # Invalid input is still an RCIP outcome, not a protocol error.
        bad = await desk.client.call_tool("visits.search", {"query": 7})
        assert bad.is_error is True
        assert bad.meta["rcip/outcome"]["error"]["code"] == "INPUT_INVALID"
        if transport == "http":
            methods = check_modern_requests(desk, mode)
            assert methods[-3:] == ["tools/list", "tools/call", "tools/call"], methods


async def test_the_client_takes_a_url_or_server_parameters(http_desk: Any) -> None:
    """`Client` given the URL string itself (its own Streamable HTTP
    transport) and given `StdioServerParameters` (its own stdio client)."""
    server = http_desk(*BOTH)
    async with Client(server.url, mode=MODERN, read_timeout_seconds=30) as client:
        assert client.protocol_version == MODERN
        assert "board.listOpenVisits" in [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("board.listOpenVisits", {})
        assert result.meta["rcip/outcome"]["status"] == "succeeded"
    assert "MCP session stateless-" in server.stderr.text()
    params = StdioServerParameters(command=str(DESK), args=desk_args(*BOTH), cwd=str(REPO))
    with tempfile.TemporaryFile(mode="w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="auto", read_timeout_seconds=30) as client:
            assert client.session.discover_result is not None
            result = await client.call_tool("board.listOpenVisits", {})
            assert result.meta["rcip/outcome"]["status"] == "succeeded"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
async def test_progress_reaches_a_modern_client(mode: str, transport: str, http_desk: Any) -> None:
    """The archive search reports every 100 ms of its 800: the request's
    own `progressToken` gets them (over HTTP on the POST's own stream: the
    client opens no other), and log messages come only to a client whose
    requests carry `logLevel`."""
    for log_level in [None, "info"]:
        seen = Seen()
        async with modern_desk(transport, mode, http_desk, logging_callback=seen.log, log_level=log_level) as desk:
            result = await desk.client.call_tool("visits.search", ARCHIVE, progress_callback=seen.progress)
            assert result.is_error is False and result.structured_content["archive"]
            progress = seen.of("progress")
            values = [p for p, _, _ in progress]
            assert values == sorted(set(values)), values
            assert values[0] == 0 and values[-1] == 800 and len(values) >= 5, values
            assert all(total == 800 for _, total, _ in progress)
            assert progress[-1][2] == "Archive searched"
            if log_level is None:
                assert seen.of("log") == []
            else:
                assert seen.of("log") == [
                    ("info", "dispatch_desk", "Searching the archive"),
                    ("info", "dispatch_desk", "Archive search done"),
                ]
            # Without a progress callback the request has no token: no progress.
            seen.events.clear()
            await desk.client.call_tool("visits.search", ARCHIVE)
            assert seen.of("progress") == []
            if transport == "http":
                check_modern_requests(desk, mode)
                sent = [r.body for r in desk.requests if r.body["method"] == "tools/call"]  # type: ignore[attr-defined]
                assert "progressToken" in sent[0]["params"]["_meta"]
                assert "progressToken" not in sent[1]["params"]["_meta"]
                assert (sent[0]["params"]["_meta"].get("io.modelcontextprotocol/logLevel")) == log_level


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
async def test_a_modern_client_cancels_a_slow_call(mode: str, transport: str, http_desk: Any) -> None:
    """The client gives up on the 800 ms archive search after 300 ms: over
    stdio it sends `notifications/cancelled`, over HTTP it closes the
    call's response stream (and POSTs nothing). The desk's worker must see
    the cancellation and stop scanning (it fails the invocation as
    aborted and never completes it), and the desk keeps serving."""
    async with modern_desk(transport, mode, http_desk) as desk:
        with anyio.move_on_after(0.3) as scope:
            await desk.client.call_tool("visits.search", ARCHIVE)
        assert scope.cancelled_caught, "the archive search takes about 800 ms"
        transcript = await desk.stderr.wait_for("archive search cancelled", timeout=5)
        scanned = int(re.search(r"archive search cancelled after about (\d+) ms", transcript).group(1))
        assert scanned < 800 and "EXECUTION_ABORTED" in transcript, transcript
        result = await desk.client.call_tool("visits.search", {"query": "cooler"})
        assert result.is_error is False
        # Long past the scan's end: the cancelled search never completed.
        await anyio.sleep(1.0)
        assert "archive search done" not in desk.stderr.text()
        if transport == "http":
            methods = check_modern_requests(desk, mode)
            assert "notifications/cancelled" not in methods
    if transport == "http":
        # Each stateless request's runtime ended with it, the cancelled one too.
        transcript = desk.stderr.text()
        started = re.findall(r"MCP session (stateless-[0-9a-f]+) for ", transcript)
        ended = re.findall(r"MCP session (stateless-[0-9a-f]+) ended: its runtime is closed", transcript)
        assert len(started) >= 2 and sorted(started) == sorted(ended), transcript
