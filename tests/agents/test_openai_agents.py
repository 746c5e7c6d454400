"""Client-safe tool names (issue 16, docs/MCP.md "Tool names") against the
OpenAI Agents SDK's MCP client: `MCPServerStdio` starts the dispatch desk
(`build/dispatch_desk --mcp`), the SDK lists its tools and converts them to
function tools, as an agent run would before its first model call. No model
is called: the function tool is invoked directly.

OpenAI's function calling (and several other clients) accept only names
matching ^[a-zA-Z0-9_-]{1,64}$; the desk's capability ids are dotted.

The last test reads content blocks (docs/MCP.md "Content blocks") from the
conformance host (build/mcp_conformance_host) through the SDK's Streamable
HTTP client.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunContextWrapper
from agents import FunctionTool
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from agents.tool_context import ToolContext

REPO = Path(__file__).resolve().parents[2]
DESK = Path(os.environ.get("RCIP_DISPATCH_DESK", REPO / "build" / "dispatch_desk"))
CATALOG = REPO / "examples-c" / "dispatch" / "catalog.json"
SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
CAPABILITY_IDS = [c["id"] for c in json.loads(CATALOG.read_text())["capabilities"]]


@pytest.fixture(scope="session", autouse=True)
def desk_is_built() -> None:
    if not DESK.exists():
        pytest.fail(f"{DESK} is missing: run `make build/dispatch_desk` (make test-agents does)")


def desk(options: dict[str, Any], outcomes: list[dict[str, Any]] | None = None) -> MCPServerStdio:
    """The desk as the SDK's stdio MCP server; `outcomes` collects each
    call's RCIP outcome (the result's `_meta["rcip/outcome"]`)."""

    def keep_outcome(ctx: Any) -> None:
        if outcomes is not None:
            outcomes.append({"tool": ctx.tool_name, **dict((ctx.result_meta or {}).get("rcip/outcome", {}))})
        return None

    return MCPServerStdio(
        params={
            "command": str(DESK),
            "args": ["--mcp", "--catalog", str(CATALOG), "--mcp-options", json.dumps(options)],
        },
        name="dispatch-desk",
        client_session_timeout_seconds=10,
        use_structured_content=True,
        custom_data_extractor=keep_outcome,
    )


async def function_tools(server: MCPServerStdio) -> list[Any]:
    """The agent's tools as a run collects them for the model (its MCP
    servers' tools converted to function tools)."""
    agent = Agent(name="dispatcher", mcp_servers=[server])
    return await agent.get_all_tools(RunContextWrapper(context=None))


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


def test_safe_names_convert_to_valid_function_tools_and_call_the_right_capability() -> None:
    outcomes: list[dict[str, Any]] = []

    async def scenario() -> tuple[list[str], str]:
        async with desk({"toolNames": "safe"}, outcomes) as server:
            listed = await server.list_tools()
            tools = await function_tools(server)
            assert all(isinstance(t, FunctionTool) for t in tools)
            names = [t.name for t in tools]
            # Each listed tool names its capability (a renamed one in _meta).
            by_capability = {(t.meta or {}).get("rcip/capabilityId", t.name): t.name for t in listed}
            assert sorted(by_capability) == sorted(CAPABILITY_IDS)
            search = next(t for t in tools if t.name == by_capability["visits.search"])
            arguments = json.dumps({"query": "pump"})
            context = ToolContext(
                context=None, tool_name=search.name, tool_call_id="call-1", tool_arguments=arguments
            )
            output = await search.on_invoke_tool(context, arguments)
            return names, output

    names, output = run(scenario())
    assert len(names) == len(CAPABILITY_IDS)
    bad = [n for n in names if not SAFE_NAME.match(n)]
    assert not bad, f"function tool names outside ^[a-zA-Z0-9_-]{{1,64}}$: {bad}"
    assert "visits_search" in names and "board_listOpenVisits" in names
    # The call reached visits.search (its outcome says so) and its result is
    # that capability's output.
    assert outcomes == [
        {"tool": "visits_search", "status": "succeeded", "capabilityId": "visits.search",
         "invocationId": outcomes[0].get("invocationId")}
    ], outcomes
    result = json.loads(output)
    assert result["total"] == len(result["visits"]) >= 1
    assert all("pump" in v["issue"].lower() or "pump" in v["site"].lower() for v in result["visits"])


def test_capability_ids_as_they_are_are_not_client_safe() -> None:
    """The default naming keeps the dotted ids, which these clients refuse:
    what the safe naming is for (and proof the check above can fail)."""

    async def scenario() -> list[str]:
        async with desk({}) as server:
            return [t.name for t in await function_tools(server)]

    names = run(scenario())
    assert sorted(names) == sorted(CAPABILITY_IDS)
    assert [n for n in names if not SAFE_NAME.match(n)], names


@pytest.mark.parametrize(
    "names, needles",
    [
        ({"visits.search": "board.listOpenVisits"}, ['"board.listOpenVisits"', '"visits.search"']),
        ({"visits.search": "visits_" + "x" * 58}, ['"visits.search"', "1 to 64 characters"]),
    ],
)
def test_a_naming_that_collides_or_is_too_long_is_refused_when_the_desk_starts(
    names: dict[str, str], needles: list[str]
) -> None:
    """The session is not created: the desk exits 2 with the message (both
    ids for a collision) before it reads anything, so the SDK's client
    cannot connect."""
    done = subprocess.run(
        [str(DESK), "--mcp", "--catalog", str(CATALOG), "--mcp-options", json.dumps({"toolNames": names})],
        input="", capture_output=True, text=True, timeout=10,
    )
    assert done.returncode == 2, done
    assert done.stdout == ""
    for needle in needles:
        assert needle in done.stderr, done.stderr

    async def connect() -> None:
        async with desk({"toolNames": names}) as server:
            await server.list_tools()

    with pytest.raises(Exception):
        run(connect())


HOST = Path(os.environ.get("RCIP_MCP_CONFORMANCE_HOST", REPO / "build" / "mcp_conformance_host"))
HOST_CATALOG = REPO / "tests" / "mcp-conformance" / "catalog.json"


def test_content_blocks_reach_the_sdk_as_image_and_text_outputs() -> None:
    """Content blocks (docs/MCP.md "Content blocks") through the SDK's
    Streamable HTTP client: the conformance host maps output properties to
    blocks; the SDK turns an image block into an image tool output (a data
    URL) and a text block into text, as it would hand them to the model."""
    if not HOST.exists():
        pytest.fail(f"{HOST} is missing: run `make build/mcp_conformance_host` (make test-agents does)")
    host = subprocess.Popen([str(HOST), str(HOST_CATALOG)], stdout=subprocess.PIPE, text=True)
    try:
        line = host.stdout.readline() if host.stdout else ""
        assert line.startswith("rcip: serving MCP on "), line
        url = line.split(" on ", 1)[1].strip()

        async def scenario() -> tuple[Any, Any]:
            async with MCPServerStreamableHttp(params={"url": url}, name="conformance-host") as server:
                tools = {t.name: t for t in await function_tools(server)}

                async def call(name: str) -> Any:
                    context = ToolContext(context=None, tool_name=name, tool_call_id="call-" + name, tool_arguments="{}")
                    return await tools[name].on_invoke_tool(context, "{}")

                return await call("test_image_content"), await call("test_multiple_content_types")

        image, mixed = run(scenario())
        assert image["type"] == "image", image
        assert image["image_url"].startswith("data:image/png;base64,iVBORw0KGgo"), image
        # text, image, resource: the SDK keeps the order; a resource it
        # passes on as the block's JSON text.
        assert [item["type"] for item in mixed] == ["text", "image", "text"], mixed
        assert mixed[0]["text"] == "Multiple content types test:"
        assert json.loads(mixed[2]["text"])["resource"]["uri"] == "test://mixed-content-resource"
    finally:
        host.terminate()
        assert host.wait(timeout=15) == 0
