"""The dispatch desk over MCP, against the real `mcp` client package: the
handshake, tools/list, calls and their RCIP outcomes, fail-closed
confirmation, the elicitation opt-in, cancellation and list_changed."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import CATALOG, DESK, REPO, Stderr, desk_args, desk_client, write_control
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

CAPABILITIES = json.loads(CATALOG.read_text())["capabilities"]
IDS = [c["id"] for c in CAPABILITIES]


def outcome(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None, result
    return result.meta["rcip/outcome"]


def text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text", result.content
    return result.content[0].text


async def open_visits(desk: Any) -> list[str]:
    result = await desk.client.call_tool("board.listOpenVisits", {})
    return [v["id"] for v in result.structured_content["visits"]]


# ---- the handshake ----------------------------------------------------


async def test_handshake_falls_back_from_discover_and_negotiates_2025_11_25() -> None:
    # The client's default mode probes server/discover first (the 2026
    # revision); the session answers -32601 and the client falls back to
    # the initialize handshake.
    async with desk_client() as desk:
        assert desk.client.protocol_version == "2025-11-25"
        assert desk.client.server_info.name == "dispatchDesk"
        assert desk.client.server_info.version == "1.0.0"
        assert desk.client.server_capabilities.tools.list_changed is True
        assert desk.client.server_capabilities.resources is None
        assert "maintenance-dispatch board" in desk.client.instructions
        text = await desk.stderr.wait_for("serving over MCP")
        assert "rcip_mcp_session" not in text, "no rcip call failed"


async def test_an_unknown_revision_is_answered_with_2025_11_25() -> None:
    stderr = Stderr()
    params = StdioServerParameters(command=str(DESK), args=desk_args(), cwd=str(REPO))
    async with stdio_client(params, errlog=stderr.file) as (read, write):
        async with ClientSession(read, write) as session:
            result = await session.send_request(
                types.InitializeRequest(
                    params=types.InitializeRequestParams(
                        protocol_version="2031-04-01",
                        capabilities=types.ClientCapabilities(),
                        client_info=types.Implementation(name="future-client", version="9"),
                    )
                ),
                types.InitializeResult,
            )
            assert result.protocol_version == "2025-11-25"
            # server/discover is unknown: -32601, the code newer clients fall back on.
            with pytest.raises(MCPError) as error:
                await session.send_request(types.DiscoverRequest(), types.DiscoverResult)
            assert error.value.code == -32601


# ---- tools/list -------------------------------------------------------


async def test_tools_list_maps_every_capability_with_annotations() -> None:
    async with desk_client() as desk:
        listing = await desk.client.list_tools()
        assert listing.next_cursor is None
        tools = {t.name: t for t in listing.tools}
        assert list(tools) == IDS, "one tool per capability, catalog order, name = id"
        by_id = {c["id"]: c for c in CAPABILITIES}
        for name, tool in tools.items():
            cap = by_id[name]
            assert tool.title == cap["title"]
            assert tool.description == f"{cap['description']}\n\nWhen to use: {cap['usage']['whenToUse']}"
            assert tool.input_schema == cap["inputSchema"], "object schemas pass unchanged"
            assert tool.output_schema == cap["outputSchema"]
            assert tool.annotations.idempotent_hint is None
            meta = tool.meta
            assert meta["rcip/effect"] == cap["effect"]
            assert meta["rcip/scopeIds"] == cap["scopeIds"]
            assert meta["rcip/relevance"] == "other", "the desk starts with an empty context"
            assert meta["rcip/bound"] is True
            assert meta["rcip/availability"]["available"] is meta["rcip/available"]
            assert isinstance(meta["rcip/revision"], int)
        read = tools["board.listOpenVisits"].annotations
        assert (read.read_only_hint, read.destructive_hint, read.open_world_hint) == (True, None, False)
        write = tools["visits.assignTechnician"].annotations
        assert (write.read_only_hint, write.destructive_hint, write.open_world_hint) == (None, False, False)
        destructive = tools["visits.close"].annotations
        assert (destructive.read_only_hint, destructive.destructive_hint, destructive.open_world_hint) == (None, True, False)


# ---- tools/call -------------------------------------------------------


async def test_a_successful_call_returns_structured_content() -> None:
    async with desk_client() as desk:
        result = await desk.client.call_tool("board.listOpenVisits", {"unassignedOnly": True, "limit": 3})
        assert result.is_error is False
        # The client validated it against the tool's output schema.
        visits = result.structured_content["visits"]
        assert len(visits) == 3 and all("technicianId" not in v for v in visits)
        assert json.loads(text(result)) == result.structured_content
        assert outcome(result)["status"] == "succeeded"
        assert outcome(result)["capabilityId"] == "board.listOpenVisits"


async def test_invalid_input_is_an_error_result_with_input_invalid_and_issues() -> None:
    async with desk_client() as desk:
        result = await desk.client.call_tool("visits.assignTechnician", {"visitId": "V-12", "technician": "T-02"})
        assert result.is_error is True
        assert result.structured_content is None
        o = outcome(result)
        assert o["status"] == "failed"
        assert o["error"]["code"] == "INPUT_INVALID"
        keywords = {i["keyword"] for i in o["error"]["validationIssues"]}
        assert {"pattern", "required", "additionalProperties"} <= keywords, o
        assert text(result).startswith("visits.assignTechnician failed: INPUT_INVALID")
        assert "/visitId (pattern)" in text(result)


async def test_a_write_denied_by_policy() -> None:
    async with desk_client() as desk:
        # T-04 is a plumber; the walk-in cooler at V-1003 needs hvac.
        result = await desk.client.call_tool("visits.assignTechnician", {"visitId": "V-1003", "technicianId": "T-04"})
        assert result.is_error is True
        assert result.structured_content is None
        o = outcome(result)
        assert (o["status"], o["error"]["code"]) == ("denied", "POLICY_DENIED")
        assert "hvac" in o["error"]["message"]
        assert "POLICY_DENIED" in text(result)
        assert "V-1003" in await open_visits(desk)


async def test_an_unknown_tool_is_invalid_params() -> None:
    async with desk_client() as desk:
        with pytest.raises(MCPError) as error:
            await desk.client.call_tool("visits.delete", {"visitId": "V-1003"})
        assert error.value.code == -32602
        assert "visits.delete" in str(error.value)


# ---- confirmation -----------------------------------------------------


async def test_a_destructive_call_is_neither_run_nor_approved_by_default() -> None:
    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={})

    # Even a client that could elicit (and would accept) is not asked: the
    # host did not opt in.
    async with desk_client(elicitation_callback=elicit) as desk:
        arguments = {"visitId": "V-1003", "resolution": "fixed", "summary": "Cooler repaired."}
        result = await desk.client.call_tool("visits.close", arguments)
        assert result.is_error is True
        assert result.structured_content is None
        o = outcome(result)
        assert o["status"] == "confirmation_required"
        confirmation = o["confirmation"]
        assert confirmation["effect"] == "destructive"
        assert "cannot be reopened" in confirmation["description"]
        assert confirmation["id"] in text(result)
        assert str(confirmation["expiresAt"]) in text(result)
        assert "nothing sent over MCP can" in text(result)
        assert asked == []
        # Nothing ran: the visit is still open, and the dialog holds it for
        # the dispatcher.
        assert "V-1003" in await open_visits(desk)
        transcript = await desk.stderr.wait_for(f"opened {confirmation['id']}")
        assert "dispatcher: hold" in transcript
        # Nothing the MCP client sends approves it.
        for method in ["rcip/resolveConfirmation", "confirmations/approve"]:
            with pytest.raises(MCPError) as error:
                await desk.client.session.send_request(
                    types.Request[dict, str](method=method, params={"confirmationId": confirmation["id"], "approved": True}),
                    types.EmptyResult,
                )
            assert error.value.code == -32601
        again = await desk.client.call_tool("visits.close", arguments, meta={"confirmationId": confirmation["id"]})
        assert outcome(again)["status"] == "confirmation_required"
        assert outcome(again)["confirmation"]["id"] != confirmation["id"], "a new confirmation, not an approval"
        assert "V-1003" in await open_visits(desk)
        assert f"closed {confirmation['id']}" not in desk.stderr.text()
        assert "handler   visits.close" not in desk.stderr.text()


async def test_the_elicitation_opt_in_accepted_runs_the_call() -> None:
    asked: list[types.ElicitRequestFormParams] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={})

    async with desk_client("--mcp-elicit", elicitation_callback=elicit) as desk:
        arguments = {"visitId": "V-1003", "resolution": "fixed", "summary": "Cooler repaired."}
        result = await desk.client.call_tool("visits.close", arguments)
        assert len(asked) == 1
        assert asked[0].mode == "form"
        assert "Close a visit" in asked[0].message and "V-1003" in asked[0].message
        assert '"summary":"Cooler repaired."' in asked[0].message, "the user sees the exact input"
        assert result.is_error is False, text(result)
        assert result.structured_content["status"] == "closed"
        assert outcome(result)["status"] == "succeeded"
        assert "V-1003" not in await open_visits(desk)
        await desk.stderr.wait_for("approved")


async def test_the_elicitation_opt_in_declined_does_not_run() -> None:
    answers: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        action = "decline" if not answers else "cancel"
        answers.append(action)
        return types.ElicitResult(action=action)

    async with desk_client("--mcp-elicit", elicitation_callback=elicit) as desk:
        for expected in ["decline", "cancel"]:
            result = await desk.client.call_tool(
                "visits.reschedule", {"visitId": "V-1003", "date": "2026-01-07", "window": "morning"}
            )
            assert answers[-1] == expected
            assert result.is_error is True
            assert result.structured_content is None
            o = outcome(result)
            assert (o["status"], o["error"]["code"]) == ("denied", "CONFIRMATION_DECLINED"), o
        search = await desk.client.call_tool("visits.search", {"query": "Harbor Bakery"})
        assert search.structured_content["visits"][0]["date"] == "2026-01-05", "not rescheduled"


async def test_a_client_without_elicitation_never_gets_an_approval() -> None:
    async with desk_client("--mcp-elicit") as desk:
        result = await desk.client.call_tool(
            "visits.close", {"visitId": "V-1003", "resolution": "fixed", "summary": "Done."}
        )
        assert outcome(result)["status"] == "confirmation_required"
        assert "does not support form elicitation" in text(result)
        assert "V-1003" in await open_visits(desk)


# ---- cancellation -----------------------------------------------------


async def test_cancelling_a_slow_call_cancels_the_invocation() -> None:
    async with desk_client() as desk:
        with anyio.move_on_after(0.3) as scope:
            await desk.client.call_tool("visits.search", {"query": "cooler", "includeArchive": True})
        assert scope.cancelled_caught, "the archive search takes about 800 ms"
        # The client sent notifications/cancelled; the worker saw the token.
        transcript = await desk.stderr.wait_for("archive search cancelled", timeout=5)
        assert "EXECUTION_ABORTED" in transcript
        # The session goes on.
        result = await desk.client.call_tool("visits.search", {"query": "cooler"})
        assert result.is_error is False


# ---- list_changed -----------------------------------------------------


async def test_list_changed_after_the_desk_changes(control_fifo: Any) -> None:
    changed = anyio.Event()
    count = 0

    async def on_message(message: Any) -> None:
        nonlocal count
        if isinstance(message, types.ToolListChangedNotification):
            count += 1
            changed.set()

    async with desk_client("--control", str(control_fifo), message_handler=on_message) as desk:
        before = {t.name: t for t in (await desk.client.list_tools(cache_mode="refresh")).tools}
        assert before["visits.addNote"].meta["rcip/available"] is True
        # Revisions that change nothing tools/list shows: no notification.
        await desk.client.call_tool("board.listOpenVisits", {})
        await anyio.to_thread.run_sync(write_control, control_fifo, {"op": "snapshot"})
        await desk.stderr.wait_for("console: 1 step(s) done", count=1)
        await anyio.sleep(0.3)
        assert count == 0
        # The nightly sync makes the desk read-only.
        await anyio.to_thread.run_sync(write_control, control_fifo, {"op": "desk", "readOnly": True})
        with anyio.fail_after(5):
            await changed.wait()
        assert count == 1
        after = {t.name: t for t in (await desk.client.list_tools(cache_mode="refresh")).tools}
        note = after["visits.addNote"].meta
        assert note["rcip/available"] is False
        assert note["rcip/availability"]["reasonCode"] == "DESK_READ_ONLY"
        assert note["rcip/revision"] > before["visits.addNote"].meta["rcip/revision"]
        # The same state again: a new revision, nothing new to list.
        await anyio.to_thread.run_sync(write_control, control_fifo, {"op": "desk", "readOnly": True})
        await desk.stderr.wait_for("console: 1 step(s) done", count=3)
        await anyio.sleep(0.3)
        assert count == 1
        # The dispatcher moves to the board: relevance changes.
        changed = anyio.Event()
        await anyio.to_thread.run_sync(
            write_control, control_fifo, {"op": "set_context", "context": {"activeScopeIds": ["board"]}}
        )
        with anyio.fail_after(5):
            await changed.wait()
        tools = {t.name: t for t in (await desk.client.list_tools(cache_mode="refresh")).tools}
        assert tools["board.listOpenVisits"].meta["rcip/relevance"] == "current"
        assert count == 2


def test_elicit_flag_and_options_do_not_combine_silently() -> None:
    import subprocess

    for args in (["--mcp-elicit", "--mcp-options", "{}"], ["--mcp-options", "{}", "--mcp-elicit"]):
        done = subprocess.run([str(DESK), *args], cwd=REPO, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2
        assert "do not combine" in done.stderr, done.stderr
