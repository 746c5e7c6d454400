"""The dispatch desk served over MCP Streamable HTTP
(`build/dispatch_desk --mcp-http 127.0.0.1:0`), against the real `mcp`
client package's Streamable HTTP transport: the same checks as the stdio
tests (handshake, tools/list, calls and their RCIP outcomes, fail-closed
confirmation, the elicitation opt-in, cancellation, list_changed), plus what
only HTTP has: the GET stream, concurrent sessions with their own contexts,
session expiry and the HTTP-level refusals."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from conftest import CATALOG, http_client, write_control
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

CAPABILITIES = json.loads(CATALOG.read_text())["capabilities"]
IDS = [c["id"] for c in CAPABILITIES]
ELICIT = ["--mcp-options", json.dumps({"confirmation": "elicit"})]


def outcome(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None, result
    return result.meta["rcip/outcome"]


def text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text", result.content
    return result.content[0].text


async def open_visits(desk: Any) -> list[str]:
    result = await desk.client.call_tool("board.listOpenVisits", {})
    return [v["id"] for v in result.structured_content["visits"]]


# ---- the handshake and tools/list --------------------------------------


async def test_handshake_over_http(http_desk: Any) -> None:
    server = http_desk()
    async with http_client(server) as desk:
        assert desk.client.protocol_version == "2025-11-25"
        assert desk.client.server_info.name == "dispatchDesk"
        assert desk.client.server_capabilities.tools.list_changed is True
        assert desk.client.server_capabilities.resources is None
        assert "maintenance-dispatch board" in desk.client.instructions
        assert len(desk.session_ids) == 1, "one Mcp-Session-Id, issued at initialize"
        assert len(desk.session_ids[0]) >= 22, "long enough to be unguessable"
    # Exactly one line on stdout: the URL.
    assert server.stdout_lines == [f"rcip: serving MCP on {server.url}\n"]


async def test_tools_list_over_http(http_desk: Any) -> None:
    async with http_client(http_desk()) as desk:
        listing = await desk.client.list_tools()
        tools = {t.name: t for t in listing.tools}
        assert list(tools) == IDS, "one tool per capability, catalog order, name = id"
        by_id = {c["id"]: c for c in CAPABILITIES}
        for name, tool in tools.items():
            assert tool.input_schema == by_id[name]["inputSchema"]
            assert tool.meta["rcip/bound"] is True
            assert tool.meta["rcip/relevance"] == "other", "no --context-map: an empty context"
        destructive = tools["visits.close"].annotations
        assert (destructive.destructive_hint, destructive.open_world_hint) == (True, False)


# ---- tools/call ---------------------------------------------------------


async def test_a_successful_call_over_http(http_desk: Any) -> None:
    async with http_client(http_desk()) as desk:
        result = await desk.client.call_tool("board.listOpenVisits", {"unassignedOnly": True, "limit": 3})
        assert result.is_error is False
        visits = result.structured_content["visits"]
        assert len(visits) == 3 and all("technicianId" not in v for v in visits)
        assert json.loads(text(result)) == result.structured_content
        assert outcome(result)["status"] == "succeeded"


async def test_invalid_input_over_http_is_input_invalid_with_issues(http_desk: Any) -> None:
    async with http_client(http_desk()) as desk:
        result = await desk.client.call_tool("visits.assignTechnician", {"visitId": "V-12", "technician": "T-02"})
        assert result.is_error is True
        assert result.structured_content is None
        o = outcome(result)
        assert (o["status"], o["error"]["code"]) == ("failed", "INPUT_INVALID")
        keywords = {i["keyword"] for i in o["error"]["validationIssues"]}
        assert {"pattern", "required", "additionalProperties"} <= keywords, o
        assert "/visitId (pattern)" in text(result)


async def test_a_write_denied_by_policy_over_http(http_desk: Any) -> None:
    async with http_client(http_desk()) as desk:
        result = await desk.client.call_tool("visits.assignTechnician", {"visitId": "V-1003", "technicianId": "T-04"})
        assert result.is_error is True
        o = outcome(result)
        assert (o["status"], o["error"]["code"]) == ("denied", "POLICY_DENIED")
        assert "hvac" in o["error"]["message"]
        assert "V-1003" in await open_visits(desk)


async def test_an_unknown_tool_over_http_is_invalid_params(http_desk: Any) -> None:
    async with http_client(http_desk()) as desk:
        with pytest.raises(MCPError) as error:
            await desk.client.call_tool("visits.delete", {"visitId": "V-1003"})
        assert error.value.code == -32602


# ---- confirmation ---------------------------------------------------------


async def test_a_destructive_call_over_http_fails_closed(http_desk: Any) -> None:
    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={})

    server = http_desk()
    async with http_client(server, elicitation_callback=elicit) as desk:
        arguments = {"visitId": "V-1003", "resolution": "fixed", "summary": "Cooler repaired."}
        result = await desk.client.call_tool("visits.close", arguments)
        assert result.is_error is True
        o = outcome(result)
        assert o["status"] == "confirmation_required"
        confirmation = o["confirmation"]
        assert confirmation["effect"] == "destructive"
        assert "nothing sent over MCP can" in text(result)
        assert asked == [], "the host did not opt in to elicitation"
        assert "V-1003" in await open_visits(desk)
        await server.stderr.wait_for(f"opened {confirmation['id']}")
        # Nothing the client sends approves it; a retry is a new confirmation.
        again = await desk.client.call_tool("visits.close", arguments, meta={"confirmationId": confirmation["id"]})
        assert outcome(again)["status"] == "confirmation_required"
        assert outcome(again)["confirmation"]["id"] != confirmation["id"]
        assert "V-1003" in await open_visits(desk)
        assert "handler   visits.close" not in server.stderr.text()


async def test_the_elicitation_opt_in_accepted_over_http(http_desk: Any) -> None:
    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={})

    async with http_client(http_desk(*ELICIT), elicitation_callback=elicit) as desk:
        arguments = {"visitId": "V-1003", "resolution": "fixed", "summary": "Cooler repaired."}
        result = await desk.client.call_tool("visits.close", arguments)
        assert len(asked) == 1, "the question came on the call's SSE stream"
        assert asked[0].mode == "form"
        assert "V-1003" in asked[0].message
        assert result.is_error is False, text(result)
        assert result.structured_content["status"] == "closed"
        assert "V-1003" not in await open_visits(desk)


async def test_the_elicitation_opt_in_declined_over_http(http_desk: Any) -> None:
    answers: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        action = "decline" if not answers else "cancel"
        answers.append(action)
        return types.ElicitResult(action=action)

    async with http_client(http_desk(*ELICIT), elicitation_callback=elicit) as desk:
        for expected in ["decline", "cancel"]:
            result = await desk.client.call_tool(
                "visits.reschedule", {"visitId": "V-1003", "date": "2026-01-07", "window": "morning"}
            )
            assert answers[-1] == expected
            o = outcome(result)
            assert (o["status"], o["error"]["code"]) == ("denied", "CONFIRMATION_DECLINED"), o
        search = await desk.client.call_tool("visits.search", {"query": "Harbor Bakery"})
        assert search.structured_content["visits"][0]["date"] == "2026-01-05", "not rescheduled"


# ---- cancellation -----------------------------------------------------------


async def test_cancelling_a_slow_call_over_http(http_desk: Any) -> None:
    server = http_desk()
    async with http_client(server) as desk:
        with anyio.move_on_after(0.3) as scope:
            await desk.client.call_tool("visits.search", {"query": "cooler", "includeArchive": True})
        assert scope.cancelled_caught, "the archive search takes about 800 ms"
        # The client POSTed notifications/cancelled; the worker saw the token.
        transcript = await server.stderr.wait_for("archive search cancelled", timeout=5)
        assert "EXECUTION_ABORTED" in transcript
        result = await desk.client.call_tool("visits.search", {"query": "cooler"})
        assert result.is_error is False


# ---- list_changed on the GET stream ------------------------------------------


async def test_list_changed_over_the_get_stream(control_fifo: Any, http_desk: Any) -> None:
    changed = anyio.Event()
    count = 0

    async def on_message(message: Any) -> None:
        nonlocal count
        if isinstance(message, types.ToolListChangedNotification):
            count += 1
            changed.set()

    server = http_desk("--control", str(control_fifo))
    async with http_client(server, message_handler=on_message) as desk:
        before = {t.name: t for t in (await desk.client.list_tools(cache_mode="refresh")).tools}
        assert before["visits.addNote"].meta["rcip/available"] is True
        # A revision that changes nothing tools/list shows: no notification.
        await anyio.to_thread.run_sync(write_control, control_fifo, {"op": "snapshot"})
        await server.stderr.wait_for("1 step(s) done", count=1)
        await anyio.sleep(0.3)
        assert count == 0
        # The nightly sync makes the desk read-only: no call is open, so the
        # notification can only come on the GET stream.
        await anyio.to_thread.run_sync(write_control, control_fifo, {"op": "desk", "readOnly": True})
        with anyio.fail_after(5):
            await changed.wait()
        assert count == 1
        after = {t.name: t for t in (await desk.client.list_tools(cache_mode="refresh")).tools}
        note = after["visits.addNote"].meta
        assert note["rcip/available"] is False
        assert note["rcip/availability"]["reasonCode"] == "DESK_READ_ONLY"


# ---- sessions ------------------------------------------------------------------

CONTEXT_MAP = json.dumps(
    {
        "board-agent": {"activeScopeIds": ["board"], "primaryScopeId": "board"},
        "*": {"activeScopeIds": ["technicians"], "primaryScopeId": "technicians"},
    }
)


def relevance(listing: types.ListToolsResult) -> dict[str, str]:
    return {t.name: t.meta["rcip/relevance"] for t in listing.tools}


async def test_two_concurrent_sessions_keep_their_own_context_and_state(control_fifo: Any, http_desk: Any) -> None:
    changed = {"board-agent": 0, "roster-agent": 0}

    def counter(name: str) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed[name] += 1

        return on_message

    server = http_desk("--context-map", CONTEXT_MAP, "--control", str(control_fifo))
    async with (
        http_client(server, name="board-agent", message_handler=counter("board-agent")) as board,
        http_client(server, name="roster-agent", message_handler=counter("roster-agent")) as roster,
    ):
        assert board.session_ids != roster.session_ids
        # Each session's context comes from --context-map by clientInfo.name.
        b = relevance(await board.client.list_tools())
        r = relevance(await roster.client.list_tools())
        assert b["board.listOpenVisits"] == "current"
        assert r["board.listOpenVisits"] != "current"
        # A confirmation opened in one session is its own: the other session
        # asking for the same close gets a different confirmation, and neither
        # runs anything.
        arguments = {"visitId": "V-1003", "resolution": "fixed", "summary": "Done."}
        first = outcome(await board.client.call_tool("visits.close", arguments))
        second = outcome(await roster.client.call_tool("visits.close", arguments))
        assert first["status"] == second["status"] == "confirmation_required"
        assert first["confirmation"]["id"] != second["confirmation"]["id"]
        assert first["invocationId"] != second["invocationId"]
        # State: the board session's desk goes read-only; the roster's does not.
        await anyio.to_thread.run_sync(
            write_control, control_fifo, {"op": "desk", "readOnly": True, "session": board.session_ids[0]}
        )
        with anyio.fail_after(5):
            while changed["board-agent"] == 0:
                await anyio.sleep(0.02)
        await anyio.sleep(0.3)
        assert changed["roster-agent"] == 0, "the other session heard nothing"
        b = {t.name: t.meta for t in (await board.client.list_tools(cache_mode="refresh")).tools}
        r = {t.name: t.meta for t in (await roster.client.list_tools(cache_mode="refresh")).tools}
        assert b["visits.addNote"]["rcip/available"] is False
        assert r["visits.addNote"]["rcip/available"] is True
        # A control line without "session" reaches every live session.
        await anyio.to_thread.run_sync(
            write_control, control_fifo, {"op": "set_context", "context": {"activeScopeIds": ["visits"]}}
        )
        with anyio.fail_after(5):
            while changed["roster-agent"] == 0:
                await anyio.sleep(0.02)
        r = relevance(await roster.client.list_tools(cache_mode="refresh"))
        assert r["visits.search"] == "current"


def raw_initialize(http: httpx2.Client, url: str, name: str = "raw") -> str:
    response = http.post(
        url,
        headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": "0"}},
        },
    )
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    note = http.post(
        url,
        headers=session_headers(session),
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
    )
    assert note.status_code == 202
    return session


def session_headers(session: str) -> dict[str, str]:
    return {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": "2025-11-25",
    }


def ping(http: httpx2.Client, url: str, session: str) -> httpx2.Response:
    return http.post(url, headers=session_headers(session), json={"jsonrpc": "2.0", "id": 2, "method": "ping"})


def test_an_idle_session_expires(http_desk: Any) -> None:
    server = http_desk("--mcp-options", json.dumps({"idleTimeoutMs": 1000}))
    with httpx2.Client(timeout=10) as http:
        idle = raw_initialize(http, server.url)
        busy = raw_initialize(http, server.url)
        assert ping(http, server.url, idle).status_code == 200
        # busy keeps talking, idle says nothing for well over the timeout.
        for _ in range(12):
            time.sleep(0.2)
            assert ping(http, server.url, busy).status_code == 200
        assert ping(http, server.url, idle).status_code == 404, "expired: unknown session"
        assert ping(http, server.url, busy).status_code == 200
        # DELETE ends a session at once.
        assert http.delete(server.url, headers=session_headers(busy)).status_code in (200, 204)
        assert ping(http, server.url, busy).status_code == 404


def test_http_refusals(http_desk: Any) -> None:
    server = http_desk("--mcp-options", json.dumps({"maxBodyBytes": 1024 * 1024}))
    with httpx2.Client(timeout=10) as http:
        session = raw_initialize(http, server.url)
        # DNS rebinding: a foreign Origin or Host is refused.
        headers = session_headers(session) | {"Origin": "http://evil.example"}
        assert http.post(server.url, headers=headers, json={"jsonrpc": "2.0", "id": 3, "method": "ping"}).status_code == 403
        headers = session_headers(session) | {"Host": "evil.example"}
        assert http.post(server.url, headers=headers, json={"jsonrpc": "2.0", "id": 4, "method": "ping"}).status_code == 403
        # An unknown protocol revision header: 400; the older ones are accepted.
        for version, status in [("2024-01-01", 400), ("2025-03-26", 200), ("2025-06-18", 200)]:
            headers = session_headers(session) | {"MCP-Protocol-Version": version}
            response = http.post(server.url, headers=headers, json={"jsonrpc": "2.0", "id": 5, "method": "ping"})
            assert response.status_code == status, (version, response.text)
        # No session id on a request other than initialize: 400; an unknown one: 404.
        headers = {k: v for k, v in session_headers(session).items() if k != "Mcp-Session-Id"}
        assert http.post(server.url, headers=headers, json={"jsonrpc": "2.0", "id": 6, "method": "ping"}).status_code == 400
        assert ping(http, server.url, "0" * 32).status_code == 404
        # A body over the limit (maxBodyBytes): 413.
        big = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"' + b"x" * (2 * 1024 * 1024) + b'"}}'
        assert http.post(server.url, headers=session_headers(session), content=big).status_code == 413
        # The session still works.
        assert ping(http, server.url, session).status_code == 200
