"""The two MCP eras against the real `mcp` client package (its default
`auto` mode probes `server/discover`): by default the desk serves sessions
only and the client falls back to `initialize`; with `{"eras": "both"}`
the client stays modern (2026-07-28) and lists and calls tools without a
session, over stdio and over Streamable HTTP (docs/MCP.md, "The two
eras")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import desk_client, http_client

pytestmark = pytest.mark.anyio

BOTH = ("--mcp-options", json.dumps({"eras": "both"}))


async def list_and_call(desk: Any) -> None:
    tools = await desk.client.list_tools()
    assert [t.name for t in tools.tools][:2] == ["board.listOpenVisits", "visits.search"]
    result = await desk.client.call_tool("board.listOpenVisits", {})
    assert result.is_error is False
    assert result.meta["rcip/outcome"]["status"] == "succeeded"
    assert "visits" in result.structured_content


async def test_by_default_the_client_falls_back_to_a_session() -> None:
    async with desk_client() as desk:
        assert desk.client.session.discover_result is None
        assert desk.client.protocol_version == "2025-11-25"
        await list_and_call(desk)


async def test_with_both_eras_the_client_stays_modern_over_stdio() -> None:
    async with desk_client(*BOTH) as desk:
        discovered = desk.client.session.discover_result
        assert discovered is not None
        assert "2026-07-28" in discovered.supported_versions
        assert desk.client.protocol_version == "2026-07-28"
        await list_and_call(desk)


async def test_with_both_eras_the_client_stays_modern_over_http(http_desk: Any) -> None:
    server = http_desk(*BOTH)
    async with http_client(server, name="modern") as desk:
        assert desk.client.session.discover_result is not None
        await list_and_call(desk)
        # Stateless: no Mcp-Session-Id was issued, and each request's
        # runtime came from the desk's factory and ended with its answer.
        assert desk.session_ids == []
    transcript = server.stderr.text()
    assert "MCP session stateless-" in transcript
    assert "ended: its runtime is closed" in transcript
