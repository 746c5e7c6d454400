"""Confirmations asked statelessly (MCP 2026-07-28 multi round-trip
requests; docs/MCP.md "Confirmations without sessions") against the real
`mcp` client package pinned to 2026-07-28, over stdio (one desk runtime
serves every request) and Streamable HTTP (a fresh runtime per request, so
the retry resumes the confirmation in another runtime than the one that
opened it).

The desk runs with `"confirmation": "elicit"`: `visits.close` needs a
confirmation, so the first `tools/call` is answered with an
`InputRequiredResult` (one `elicitation/create`, a sealed `requestState`),
the client asks its user through `elicitation_callback` and re-sends the
call with the answer. Replayed, tampered, re-targeted, late and unanswered states
are tried with the SDK's manual loop (`allow_input_required=True`)."""

from __future__ import annotations

import json
import re
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio
import mcp_types as types
import pytest
from conftest import Desk, desk_client, http_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
TRANSPORTS = ["stdio", "http"]
ELICIT = ("--mcp-options", json.dumps({"eras": "both", "confirmation": "elicit"}))
CLOSE = {"visitId": "V-1003", "resolution": "fixed", "summary": "Cooler repaired."}
KEY = "rcip/confirmation"


def outcome(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None, result
    return result.meta["rcip/outcome"]


@asynccontextmanager
async def modern(transport: str, http_desk: Any, *extra: str, **client_kwargs: Any) -> AsyncIterator[Desk]:
    if transport == "stdio":
        async with desk_client(*ELICIT, *extra, mode=MODERN, **client_kwargs) as desk:
            yield desk
    else:
        async with http_client(http_desk(*ELICIT, *extra), name="mrtr", mode=MODERN, **client_kwargs) as desk:
            yield desk


def answering(action: str) -> tuple[list[Any], Any]:
    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)

    return asked, elicit


async def open_visits(desk: Desk) -> list[str]:
    result = await desk.client.call_tool("board.listOpenVisits", {})
    return [v["id"] for v in result.structured_content["visits"]]


def handler_runs(desk: Desk) -> int:
    """How often the desk started visits.close (its transcript's events)."""
    return len(re.findall(r"event\s+started\s+visits\.close\s", desk.stderr.text()))


async def first_round(desk: Desk, arguments: dict[str, Any] = CLOSE) -> types.InputRequiredResult:
    first = await desk.client.session.call_tool("visits.close", arguments, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    assert first.result_type == "input_required"
    assert list(first.input_requests or {}) == [KEY], first.input_requests
    assert first.request_state and len(first.request_state) <= 4096
    return first


def accept() -> dict[str, Any]:
    return {KEY: types.ElicitResult(action="accept", content={})}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_accepted_question_runs_the_call_once(transport: str, http_desk: Any) -> None:
    asked, elicit = answering("accept")
    async with modern(transport, http_desk, elicitation_callback=elicit) as desk:
        assert desk.client.protocol_version == MODERN
        result = await desk.client.call_tool("visits.close", CLOSE)
        assert len(asked) == 1
        assert asked[0].mode == "form"
        assert "Close a visit" in asked[0].message and '"summary":"Cooler repaired."' in asked[0].message
        assert result.is_error is False, result
        assert outcome(result)["status"] == "succeeded"
        assert result.structured_content["status"] == "closed"
        assert handler_runs(desk) == 1
        assert "V-1003" not in await open_visits(desk)
        if transport == "http":
            calls = [r.body for r in desk.requests if r.body and r.body.get("method") == "tools/call"]  # type: ignore[attr-defined]
            first, retry = calls[0], calls[1]
            assert first["id"] != retry["id"], "a retry is a new request"
            assert "requestState" not in first["params"]
            assert retry["params"]["arguments"] == first["params"]["arguments"]
            assert retry["params"]["inputResponses"][KEY]["action"] == "accept"
            assert isinstance(retry["params"]["requestState"], str)
            assert desk.session_ids == [], "no session was opened"  # type: ignore[attr-defined]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_question_never_runs_the_handler(transport: str, action: str, http_desk: Any) -> None:
    asked, elicit = answering(action)
    async with modern(transport, http_desk, elicitation_callback=elicit) as desk:
        result = await desk.client.call_tool("visits.close", CLOSE)
        assert len(asked) == 1
        assert result.is_error is True
        o = outcome(result)
        assert (o["status"], o["error"]["code"]) == ("denied", "CONFIRMATION_DECLINED"), o
        assert handler_runs(desk) == 0
        assert "V-1003" in await open_visits(desk)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_client_without_elicitation_is_not_asked(transport: str, http_desk: Any) -> None:
    async with modern(transport, http_desk) as desk:
        result = await desk.client.call_tool("visits.close", CLOSE)
        assert outcome(result)["status"] == "confirmation_required"
        assert "did not declare form elicitation" in result.content[0].text  # type: ignore[union-attr]
        assert handler_runs(desk) == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_state_is_single_use(transport: str, http_desk: Any) -> None:
    _, elicit = answering("accept")
    async with modern(transport, http_desk, elicitation_callback=elicit) as desk:
        first = await first_round(desk)
        session = desk.client.session
        done = await session.call_tool(
            "visits.close", CLOSE, input_responses=accept(), request_state=first.request_state
        )
        assert outcome(done)["status"] == "succeeded"
        again = await session.call_tool(
            "visits.close", CLOSE, input_responses=accept(), request_state=first.request_state
        )
        o = outcome(again)
        # The confirmation ended: a fresh runtime does not know it (HTTP);
        # the runtime that resolved it answers its receipt (stdio). Never a
        # second run.
        assert handler_runs(desk) == 1, desk.stderr.text()
        if transport == "http":
            assert (o["status"], o["error"]["code"]) == ("failed", "CONFIRMATION_NOT_FOUND"), o


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tampered_or_retargeted_states_are_refused(transport: str, http_desk: Any) -> None:
    _, elicit = answering("accept")
    async with modern(transport, http_desk, elicitation_callback=elicit) as desk:
        first = await first_round(desk)
        state = first.request_state
        assert state is not None
        session = desk.client.session
        flipped = state[:20] + ("A" if state[20] != "A" else "B") + state[21:]
        other = dict(CLOSE, summary="Closed by someone else.")
        for request_state, arguments, reason in [
            (flipped, CLOSE, {"bad_signature", "unknown_key", "unknown_version", "malformed"}),
            (state[:-4], CLOSE, {"bad_signature", "malformed"}),
            ("x" * 70_000, CLOSE, {"too_large"}),  # over the 65,536 characters a state may have
            (state, other, {"wrong_request"}),
        ]:
            with pytest.raises(MCPError) as refused:
                await session.call_tool(
                    "visits.close", arguments, input_responses=accept(), request_state=request_state
                )
            assert refused.value.error.code == -32602, refused.value.error
            assert "requestState refused" in refused.value.error.message
            assert refused.value.error.data["reason"] in reason, refused.value.error
        assert handler_runs(desk) == 0
        # The untouched state still works afterwards: nothing was consumed.
        done = await session.call_tool("visits.close", CLOSE, input_responses=accept(), request_state=state)
        assert outcome(done)["status"] == "succeeded"
        assert handler_runs(desk) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_retry_without_the_answer_asks_again(transport: str, http_desk: Any) -> None:
    _, elicit = answering("accept")
    async with modern(transport, http_desk, elicitation_callback=elicit) as desk:
        first = await first_round(desk)
        again = await desk.client.session.call_tool(
            "visits.close", CLOSE, input_responses={}, request_state=first.request_state, allow_input_required=True
        )
        assert isinstance(again, types.InputRequiredResult), again
        assert list(again.input_requests or {}) == [KEY]
        assert again.request_state != first.request_state, "a new question, a new state"
        assert handler_runs(desk) == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_answer_after_the_expiry_is_confirmation_expired(transport: str, http_desk: Any) -> None:
    """Confirmations of 400 ms: the user answers after 700. Over stdio the
    desk's runtime expired it meanwhile; over HTTP the retry's fresh runtime
    finds `expiresAt` past. Either way the runtime's CONFIRMATION_EXPIRED,
    and nothing runs."""
    _, elicit = answering("accept")
    async with modern(transport, http_desk, "--ttl-ms", "400", elicitation_callback=elicit) as desk:
        first = await first_round(desk)
        await anyio.sleep(0.7)
        late = await desk.client.session.call_tool(
            "visits.close", CLOSE, input_responses=accept(), request_state=first.request_state
        )
        o = outcome(late)
        assert (o["status"], o["error"]["code"]) == ("failed", "CONFIRMATION_EXPIRED"), o
        assert handler_runs(desk) == 0
        assert "V-1003" in await open_visits(desk)
