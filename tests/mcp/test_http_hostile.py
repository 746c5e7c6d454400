"""Hostile input against `dispatch_desk --mcp-http` (issue 26): what the
desk itself prints, and the 413 a client still sending its body gets."""

from __future__ import annotations

import json
import socket
import subprocess

import httpx2
from conftest import CATALOG, DESK, REPO


def test_a_taken_port_is_named_io() -> None:
    """The desk names RCIP_RESULT_IO (the port is taken), never UNKNOWN."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        run = subprocess.run(
            [str(DESK), "--mcp-http", f"127.0.0.1:{port}", "--catalog", str(CATALOG), "--serve-seconds", "1"],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        taken.close()
    assert run.returncode != 0
    assert "failed: IO" in run.stderr, run.stderr
    assert "UNKNOWN" not in run.stderr, run.stderr


def test_every_body_over_the_limit_is_413(http_desk) -> None:  # type: ignore[no-untyped-def]
    """Twenty times in a row: the desk answers 413 from Content-Length and
    keeps reading the body, so the client, still sending, never sees a
    reset instead (the flaky 413 of test_http_refusals)."""
    server = http_desk("--mcp-options", json.dumps({"maxBodyBytes": 1024 * 1024}))
    big = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"' + b"x" * (2 * 1024 * 1024) + b'"}}'
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx2.Client(timeout=10) as http:
        for _ in range(20):
            assert http.post(server.url, headers=headers, content=big).status_code == 413
