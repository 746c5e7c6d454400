"""The two MCP eras against the real `mcp` client package in its default
`auto` mode (it probes `server/discover`): the desk serves both eras by
default, so the client stays modern (2026-07-28) and lists and calls tools
without a session, over stdio and over Streamable HTTP; with
`{"eras": "legacy"}` the client falls back to `initialize` (docs/MCP.md,
"The two eras")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import desk_client, http_client

pytestmark = pytest.mark.anyio

LEGACY = ("--mcp-options", json.dumps({"eras": "legacy"}))
AUTO = {"mode": "auto"}


async def list_and_call(desk: Any) -> None:
    tools = await desk.client.list_tools()
    assert [t.name for t in tools.tools][:2] == ["board.listOpenVisits", "visits.search"]
    result = await desk.client.call_tool("board.listOpenVisits", {})
    assert result.is_error is False
    assert result.meta["rcip/outcome"]["status"] == "succeeded"
    assert "visits" in result.structured_content


async def test_with_legacy_eras_the_client_falls_back_to_a_session() -> None:
    async with desk_client(*LEGACY, **AUTO) as desk:
        assert desk.client.session.discover_result is None
        assert desk.client.protocol_version == "2025-11-25"
        await list_and_call(desk)


async def test_by_default_the_client_stays_modern_over_stdio() -> None:
    async with desk_client(**AUTO) as desk:
        discovered = desk.client.session.discover_result
        assert discovered is not None
        assert "2026-07-28" in discovered.supported_versions
        assert desk.client.protocol_version == "2026-07-28"
        await list_and_call(desk)


async def test_by_default_the_client_stays_modern_over_http(http_desk: Any) -> None:
    server = http_desk()
    async with http_client(server, name="modern", **AUTO) as desk:
        assert desk.client.session.discover_result is not None
        await list_and_call(desk)
        # Stateless: no Mcp-Session-Id was issued, and each request's
        # runtime came from the desk's factory and ended with its answer.
        assert desk.session_ids == []
    transcript = server.stderr.text()
    assert "MCP session stateless-" in transcript
    assert "ended: its runtime is closed" in transcript
