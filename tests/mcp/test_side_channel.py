"""A handler's side channel (**rcip**, docs/MCP.md "Progress, logging and
elicitation") against the real `mcp` client package, over stdio and
Streamable HTTP: the desk's archive search (`includeArchive: true`) reports
progress and sends log messages; tests/mcp/ask_host.py's handler asks the
client's user (`Invocation.elicit` in the Python binding) and its model
(`Invocation.create_message`)."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import mcp_types as types
import pytest
from conftest import DEFAULT_CLIENT_MODE, REPO, Desk, Seen, Stderr, desk_client, http_client
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

ASK_HOST = Path(__file__).resolve().parent / "ask_host.py"
ARCHIVE = {"query": "cooler", "includeArchive": True}


def check_archive_search(seen: Seen, result: types.CallToolResult, logs: bool) -> None:
    assert result.is_error is False
    assert result.structured_content["archive"], "the archive part is there"
    progress = seen.of("progress")
    values = [p for p, _, _ in progress]
    # Every 100 ms of the 800 ms scan, then the end: increasing, of 800.
    assert values == sorted(set(values)), values
    assert values[0] == 0 and values[-1] == 800 and len(values) >= 5, values
    assert all(total == 800 for _, total, _ in progress)
    assert progress[-1][2] == "Archive searched"
    if logs:
        assert seen.of("log") == [
            ("info", "dispatch_desk", "Searching the archive"),
            ("info", "dispatch_desk", "Archive search done"),
        ]
        # The first message precedes the first report, the last follows the last.
        kinds = [k for k, _ in seen.events]
        assert kinds[0] == "log" and kinds[-1] == "log", kinds
    else:
        assert seen.of("log") == []


async def archive_search(desk: Desk, seen: Seen) -> types.CallToolResult:
    return await desk.client.call_tool("visits.search", ARCHIVE, progress_callback=seen.progress)


async def test_progress_and_log_messages_over_stdio() -> None:
    seen = Seen()
    async with desk_client(logging_callback=seen.log) as desk:
        assert desk.client.server_capabilities.logging is not None, "the session declares logging"
        check_archive_search(seen, await archive_search(desk, seen), logs=True)
        # logging/setLevel filters the session's messages; progress stays.
        await desk.client.set_logging_level("warning")
        seen.events.clear()
        check_archive_search(seen, await archive_search(desk, seen), logs=False)
        # No progressToken: no progress notifications.
        seen.events.clear()
        await desk.client.set_logging_level("info")
        result = await desk.client.call_tool("visits.search", ARCHIVE)
        assert result.is_error is False and seen.of("progress") == []
        assert len(seen.of("log")) == 2


async def test_progress_and_log_messages_over_http(http_desk: Any) -> None:
    seen = Seen()
    async with http_client(http_desk(), logging_callback=seen.log) as desk:
        check_archive_search(seen, await archive_search(desk, seen), logs=True)
        await desk.client.set_logging_level("error")
        seen.events.clear()
        check_archive_search(seen, await archive_search(desk, seen), logs=False)


# ---- handler elicitation (ask_host.py) ------------------------------------------


def answering(*answers: types.ElicitResult) -> tuple[list[Any], Any]:
    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return answers[min(len(asked), len(answers)) - 1]

    return asked, elicit


def check_question(params: Any) -> None:
    assert params.mode == "form"
    assert params.message == "Who are you, and how should I sound?"
    schema = params.requested_schema
    assert schema["properties"]["name"]["default"] == "Ada"
    assert [o["const"] for o in schema["properties"]["tone"]["oneOf"]] == ["warm", "dry"]


@asynccontextmanager
async def ask_stdio(**client_kwargs: Any) -> AsyncIterator[Desk]:
    # A session by default; mode="2026-07-28" for multi round-trip requests.
    client_kwargs.setdefault("mode", DEFAULT_CLIENT_MODE)
    stderr = Stderr()
    params = StdioServerParameters(command=sys.executable, args=[str(ASK_HOST), "stdio"], cwd=str(REPO))
    try:
        async with Client(stdio_client(params, errlog=stderr.file), read_timeout_seconds=30, **client_kwargs) as client:
            yield Desk(client, stderr, [], [])
    finally:
        print(stderr.text())


class AskHttp:
    """ask_host.py serving Streamable HTTP (HttpDesk's interface)."""

    def __init__(self) -> None:
        self.stderr = Stderr()
        self.proc = subprocess.Popen(
            [sys.executable, str(ASK_HOST), "http"], cwd=REPO, stdout=subprocess.PIPE, stderr=self.stderr.file, text=True
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.proc.stdout or []], daemon=True).start()
        line = lines.get(timeout=20)
        assert line.startswith("rcip: serving MCP on http://127.0.0.1:"), line
        self.url = line.split(" on ", 1)[1].strip()

    def stop(self) -> int:
        """Ctrl-C: McpHttpServer.serve() shuts down, exit status 0."""
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=10)


async def test_handler_elicitation_over_stdio() -> None:
    asked, elicit = answering(
        types.ElicitResult(action="accept", content={"name": "Grace", "tone": "dry"}),
        types.ElicitResult(action="decline"),
    )
    async with ask_stdio(elicitation_callback=elicit) as host:
        first = await host.client.call_tool("profile.ask", {})
        assert first.structured_content == {"action": "accept", "content": {"name": "Grace", "tone": "dry"}}
        second = await host.client.call_tool("profile.ask", {})
        assert second.structured_content == {"action": "decline"}
    assert len(asked) == 2
    check_question(asked[0])


async def test_handler_elicitation_needs_a_client_that_declared_it() -> None:
    async with ask_stdio() as host:
        result = await host.client.call_tool("profile.ask", {})
        assert result.is_error is True
        assert result.meta["rcip/outcome"]["error"]["code"] == "EXECUTION_FAILED"
        text = await host.stderr.wait_for("cannot ask")
        assert "did not declare form elicitation" in text


async def test_handler_elicitation_over_http() -> None:
    server = AskHttp()
    try:
        asked, elicit = answering(types.ElicitResult(action="accept", content={"tone": "warm"}))
        async with http_client(server, elicitation_callback=elicit) as host:  # type: ignore[arg-type]
            result = await host.client.call_tool("profile.ask", {})
            assert result.structured_content == {"action": "accept", "content": {"tone": "warm"}}
        assert len(asked) == 1, "the question came on the call's SSE stream"
        check_question(asked[0])
    finally:
        assert server.stop() == 0
        print(server.stderr.text())


async def test_handler_sampling_over_stdio() -> None:
    asked: list[Any] = []

    async def sample(context: Any, params: Any) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Dear customer"), model="test-model"
        )

    async with ask_stdio(sampling_callback=sample) as host:
        result = await host.client.call_tool("reply.draft", {"prompt": "Draft a reply"})
        assert result.is_error is False
        reply = result.structured_content["result"]
        assert reply["content"] == {"type": "text", "text": "Dear customer"} and reply["model"] == "test-model"
    assert len(asked) == 1
    assert asked[0].max_tokens == 50
    assert asked[0].messages[0].content.text == "Draft a reply"


# ---- the same handlers on stateless 2026-07-28 requests (multi round-trip) ----

MODERN = "2026-07-28"


async def test_handler_questions_by_multi_round_trip_requests_over_stdio() -> None:
    """The handler's elicit and create_message become input requests of an
    InputRequiredResult; the client answers through its callbacks and
    re-sends the call, and the handler runs again with the answers."""
    asked, elicit = answering(types.ElicitResult(action="accept", content={"name": "Grace", "tone": "dry"}))
    sampled: list[Any] = []

    async def sample(context: Any, params: Any) -> types.CreateMessageResult:
        sampled.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Dear customer"), model="test-model"
        )

    async with ask_stdio(mode=MODERN, elicitation_callback=elicit, sampling_callback=sample) as host:
        first = await host.client.call_tool("profile.ask", {})
        assert first.structured_content == {"action": "accept", "content": {"name": "Grace", "tone": "dry"}}
        reply = await host.client.call_tool("reply.draft", {"prompt": "Draft a reply"})
        assert reply.is_error is False
        assert reply.structured_content["result"]["content"] == {"type": "text", "text": "Dear customer"}
    assert len(asked) == 1, "asked once, answered from the retry"
    check_question(asked[0])
    assert len(sampled) == 1 and sampled[0].messages[0].content.text == "Draft a reply"


async def test_handler_questions_by_multi_round_trip_requests_over_http() -> None:
    server = AskHttp()
    try:
        asked, elicit = answering(types.ElicitResult(action="decline"))
        async with http_client(server, mode=MODERN, elicitation_callback=elicit) as host:  # type: ignore[arg-type]
            result = await host.client.call_tool("profile.ask", {})
            assert result.structured_content == {"action": "decline"}
        # Not declared by the request: -32021, and nothing was asked.
        async with http_client(server, mode=MODERN) as bare:  # type: ignore[arg-type]
            with pytest.raises(MCPError) as refused:
                await bare.client.call_tool("profile.ask", {})
            assert refused.value.error.code == -32021, refused.value
            assert refused.value.error.data == {"requiredCapabilities": {"elicitation": {}}}
        assert len(asked) == 1
    finally:
        assert server.stop() == 0
        print(server.stderr.text())
