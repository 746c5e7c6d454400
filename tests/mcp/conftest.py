"""Fixtures for the MCP bridge tests: the dispatch desk served over MCP
(`build/dispatch_desk --mcp`), driven by the real `mcp` client package
(pinned in requirements.txt) or, for framing checks, by raw JSON lines."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[2]
DESK = Path(os.environ.get("RCIP_DISPATCH_DESK", REPO / "build" / "dispatch_desk"))
CATALOG = REPO / "examples-c" / "dispatch" / "catalog.json"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def desk_is_built() -> None:
    if not DESK.exists():
        pytest.fail(f"{DESK} is missing: run `make build/dispatch_desk` (make test-mcp does)")


def desk_args(*extra: str) -> list[str]:
    return ["--mcp", "--catalog", str(CATALOG), *extra]


class Seen:
    """Progress reports and log messages one client received, in arrival
    order (its `progress` and `log` methods are the client's callbacks)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.events.append(("progress", (progress, total, message)))

    async def log(self, params: Any) -> None:
        self.events.append(("log", (params.level, params.logger, params.data)))

    def of(self, kind: str) -> list[Any]:
        return [v for k, v in self.events if k == kind]


class Stderr:
    """The desk's transcript (standard error), captured in a file."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile(mode="w+", encoding="utf-8")

    def text(self) -> str:
        self.file.flush()
        self.file.seek(0)
        return self.file.read()

    async def wait_for(self, needle: str, timeout: float = 5.0, count: int = 1) -> str:
        """Waits until `needle` occurs `count` times; returns the transcript."""
        with anyio.fail_after(timeout):
            while (text := self.text()).count(needle) < count:
                await anyio.sleep(0.02)
        return text


class Desk:
    """A connected client and the desk's transcript."""

    def __init__(self, client: Client, stderr: Stderr, notifications: list[Any], stream_errors: list[Any]):
        self.client = client
        self.stderr = stderr
        self.notifications = notifications
        self.stream_errors = stream_errors


# The desk serves both eras (the default), so the `mcp` client's own
# default, `auto`, would stay on 2026-07-28. Most suites here test what a
# legacy session does (initialize, list_changed, elicitation, the GET
# stream), so the client helpers below open one (`mode="legacy"`) unless a
# test names another mode (test_eras.py tests the modern era and `auto`).
DEFAULT_CLIENT_MODE = "legacy"


@asynccontextmanager
async def desk_client(*extra: str, **client_kwargs: Any) -> AsyncIterator[Desk]:
    """`build/dispatch_desk --mcp ...` as a subprocess, through the mcp
    package's stdio client. Every notification and every transport error
    (a stdout line that is not a protocol message) is recorded. The
    client's `mode` defaults to DEFAULT_CLIENT_MODE."""
    client_kwargs.setdefault("mode", DEFAULT_CLIENT_MODE)
    stderr = Stderr()
    notifications: list[Any] = []
    stream_errors: list[Any] = []
    user_handler: Callable[[Any], Any] | None = client_kwargs.pop("message_handler", None)

    async def handler(message: Any) -> None:
        if isinstance(message, Exception):
            stream_errors.append(message)
        else:
            notifications.append(message)
        if user_handler is not None:
            await user_handler(message)

    params = StdioServerParameters(command=str(DESK), args=desk_args(*extra), cwd=str(REPO))
    transport = stdio_client(params, errlog=stderr.file)
    try:
        async with Client(transport, message_handler=handler, read_timeout_seconds=30, **client_kwargs) as client:
            yield Desk(client, stderr, notifications, stream_errors)
    finally:
        # Keep the transcript for a failing test's report.
        print(stderr.text())
    assert not stream_errors, f"transport errors: {stream_errors}"


class RawDesk:
    """The desk over plain pipes, for what a polite client never sends."""

    def __init__(self, *extra: str):
        self.stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self.proc = subprocess.Popen(
            [str(DESK), *desk_args(*extra)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stdout: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def send_text(self, text: str | bytes) -> None:
        assert self.proc.stdin is not None
        data = text.encode() if isinstance(text, str) else text
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_text(json.dumps(message))

    def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        assert line is not None, "the desk closed standard output"
        return json.loads(line)

    def request(self, id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.recv()

    def expect_silence(self, seconds: float) -> None:
        try:
            line = self.lines.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected message: {line!r}")

    def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.request(
            0,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": capabilities or {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return response

    def close(self, timeout: float = 10.0) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self.reader.join(timeout)
        return code

    def transcript(self) -> str:
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read()


@pytest.fixture
def raw_desk() -> Any:
    desks: list[RawDesk] = []

    def start(*extra: str) -> RawDesk:
        desk = RawDesk(*extra)
        desks.append(desk)
        return desk

    yield start
    for desk in desks:
        if desk.proc.poll() is None:
            desk.proc.kill()
            desk.proc.wait()


@pytest.fixture
def control_fifo() -> Any:
    directory = tempfile.mkdtemp(prefix="rcip-mcp-")
    path = Path(directory) / "dispatcher"
    os.mkfifo(path)
    yield path
    path.unlink()
    os.rmdir(directory)


def write_control(path: Path, *steps: dict[str, Any]) -> None:
    """One batch for the dispatcher's console: open, write, close."""
    deadline = time.monotonic() + 10
    while True:
        try:
            # Non-blocking open fails (ENXIO) until the console listens.
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    with os.fdopen(fd, "w") as f:
        os.set_blocking(fd, True)
        for step in steps:
            f.write(json.dumps(step) + "\n")


# ---- the desk over Streamable HTTP (test_http.py) ----------------------


class HttpDesk:
    """`build/dispatch_desk --mcp-http 127.0.0.1:0 ...`: one desk process
    serving MCP over Streamable HTTP, one desk runtime per session. The
    desk prints exactly one line on stdout once listening (the URL); its
    transcript goes to a file."""

    def __init__(self, *extra: str):
        self.stderr = Stderr()
        self.proc = subprocess.Popen(
            [str(DESK), "--mcp-http", "127.0.0.1:0", "--catalog", str(CATALOG), *extra],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.stderr.file,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        self.stdout_lines: list[str] = []

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.stdout_lines.append(line)
                lines.put(line)
            lines.put("")

        threading.Thread(target=read, daemon=True).start()
        try:
            line = lines.get(timeout=20)
        except queue.Empty:
            line = ""
        if not line.startswith("rcip: serving MCP on http://127.0.0.1:"):
            self.stop()
            raise AssertionError(f"the desk printed {line!r}; transcript:\n{self.stderr.text()}")
        self.url = line.split(" on ", 1)[1].strip()

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM: a graceful shutdown, exit status 0."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def http_desk() -> Any:
    """Starts desks; each is stopped after the test (and must exit 0).
    A test that also uses `control_fifo` names it first, so the desk stops
    while its console FIFO still exists (fixtures end in reverse order)."""
    desks: list[HttpDesk] = []

    def start(*extra: str) -> HttpDesk:
        desk = HttpDesk(*extra)
        desks.append(desk)
        return desk

    yield start
    codes = []
    for desk in desks:
        codes.append(desk.stop())
        print(desk.stderr.text())
    assert codes == [0] * len(codes), f"the desk's exit status after SIGTERM: {codes}"


class Sent:
    """One HTTP request as the client sent it: the method, the headers
    (lower-case names) and the JSON body (None without one)."""

    def __init__(self, method: str, headers: dict[str, str], body: Any):
        self.method = method
        self.headers = headers
        self.body = body

    def __repr__(self) -> str:
        return f"Sent({self.method}, {self.headers}, {self.body})"


@asynccontextmanager
async def http_client(server: HttpDesk, name: str = "pytest", **client_kwargs: Any) -> AsyncIterator[Desk]:
    """The `mcp` package's Client over its Streamable HTTP transport
    (`streamable_http_client`, the 2.x name of `streamablehttp_client`).
    `Desk.session_ids` records the Mcp-Session-Id the server issued,
    `Desk.requests` every HTTP request the client sent (`Sent`). The
    client's `mode` defaults to DEFAULT_CLIENT_MODE."""
    client_kwargs.setdefault("mode", DEFAULT_CLIENT_MODE)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    import mcp_types as types

    notifications: list[Any] = []
    stream_errors: list[Any] = []
    session_ids: list[str] = []
    user_handler: Callable[[Any], Any] | None = client_kwargs.pop("message_handler", None)

    async def handler(message: Any) -> None:
        if isinstance(message, Exception):
            stream_errors.append(message)
        else:
            notifications.append(message)
        if user_handler is not None:
            await user_handler(message)

    requests: list[Sent] = []

    async def record_session(response: Any) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid and sid not in session_ids:
            session_ids.append(sid)

    async def record_request(request: Any) -> None:
        body = json.loads(request.content) if request.content else None
        requests.append(Sent(request.method, {k.lower(): v for k, v in request.headers.items()}, body))

    http = create_mcp_http_client()
    http.event_hooks["request"].append(record_request)
    http.event_hooks["response"].append(record_session)
    async with http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(
            transport,
            message_handler=handler,
            read_timeout_seconds=30,
            client_info=types.Implementation(name=name, version="1.0.0"),
            **client_kwargs,
        ) as client:
            desk = Desk(client, server.stderr, notifications, stream_errors)
            desk.session_ids = session_ids  # type: ignore[attr-defined]
            desk.requests = requests  # type: ignore[attr-defined]
            yield desk
    assert not stream_errors, f"transport errors: {stream_errors}"
