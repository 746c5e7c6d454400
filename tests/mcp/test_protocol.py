"""The desk's MCP framing with raw JSON lines: what a polite client never
sends (malformed JSON-RPC, duplicate ids, unknown methods), and that
standard output carries nothing but protocol messages."""

from __future__ import annotations

import json
import time
from typing import Any


def is_protocol_message(line: bytes) -> bool:
    """One JSON-RPC 2.0 message on one line: a response (id + result or
    error) or a request / notification (method)."""
    if not line.endswith(b"\n") or b"\n" in line[:-1]:
        return False
    try:
        m = json.loads(line)
    except ValueError:
        return False
    if not isinstance(m, dict) or m.get("jsonrpc") != "2.0":
        return False
    if "method" in m:
        return isinstance(m["method"], str)
    return "id" in m and (("result" in m) != ("error" in m))


def test_stdout_carries_nothing_but_protocol_messages(raw_desk: Any) -> None:
    desk = raw_desk()
    desk.initialize({"elicitation": {}})
    desk.request(1, "tools/list", {})
    desk.request(2, "tools/call", {"name": "board.listOpenVisits", "arguments": {"limit": 2}})
    desk.request(3, "tools/call", {"name": "visits.assignTechnician", "arguments": {"visitId": "x"}})
    desk.request(4, "tools/call", {"name": "visits.close", "arguments": {"visitId": "V-1003", "resolution": "fixed", "summary": "s"}})
    desk.send_text("this is not JSON")
    desk.recv()
    # A slow call with its workers and log lines, cancelled.
    desk.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "visits.search", "arguments": {"query": "cooler", "includeArchive": True}}})
    desk.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    desk.request(6, "ping")
    assert desk.close() == 0
    assert desk.stdout, "the desk answered"
    for line in desk.stdout:
        assert is_protocol_message(line), line
    # Everything else (the transcript) went to standard error.
    transcript = desk.transcript()
    assert "serving over MCP" in transcript
    assert "policy" in transcript and "event" in transcript


def test_malformed_json_rpc_gets_the_standard_codes(raw_desk: Any) -> None:
    desk = raw_desk()
    cases: list[tuple[str, int, Any]] = [
        ("{not json", -32700, None),
        ('{"jsonrpc":"2.0","id":1,"method":"ping"', -32700, None),
        ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, None),
        ('"ping"', -32600, None),
        ('{"jsonrpc":"1.0","id":2,"method":"ping"}', -32600, 2),
        ('{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, None),
        ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600, None),
        ('{"jsonrpc":"2.0","id":3,"method":["ping"]}', -32600, 3),
        ('{"jsonrpc":"2.0","id":4,"method":"ping","params":1}', -32600, 4),
        ('{"jsonrpc":"2.0","id":5}', -32600, 5),
    ]
    for text, code, id in cases:
        desk.send_text(text)
        reply = desk.recv()
        assert reply["jsonrpc"] == "2.0", text
        assert reply["error"]["code"] == code, (text, reply)
        assert reply["id"] == id, (text, reply)
    desk.send_text(b"\xff\xfe{}")
    assert desk.recv()["error"]["code"] == -32700
    # Notifications and stray responses are never answered.
    desk.send({"jsonrpc": "2.0", "method": "notifications/unknown"})
    desk.send({"jsonrpc": "2.0", "id": "stray", "result": {}})
    desk.expect_silence(0.3)
    # Before initialize: ping works, tools do not; unknown methods are -32601.
    assert desk.request(6, "ping") == {"jsonrpc": "2.0", "id": 6, "result": {}}
    assert desk.request(7, "tools/list", {})["error"]["code"] == -32600
    assert desk.request(8, "server/discover", {})["error"]["code"] == -32601
    response = desk.initialize()
    assert response["result"]["protocolVersion"] == "2025-11-25"
    for method in ["server/discover", "resources/list", "prompts/list", "rcip/resolveConfirmation", "host/setContext"]:
        assert desk.request(method, method, {})["error"]["code"] == -32601, method
    reply = desk.request(9, "tools/call", {"name": "no.such"})
    assert reply["error"]["code"] == -32602
    reply = desk.request(10, "tools/call", {"name": "board.listOpenVisits", "arguments": "all"})
    assert reply["error"]["code"] == -32602
    assert desk.close() == 0


def test_duplicate_in_flight_ids_are_refused_and_cancelled_calls_get_no_response(raw_desk: Any) -> None:
    desk = raw_desk()
    desk.initialize()
    # The archive search's info log messages would interleave with the
    # replies this test reads line by line (tests/mcp/test_side_channel.py
    # checks them): this session takes only emergencies.
    assert desk.request(9, "logging/setLevel", {"level": "emergency"})["result"] == {}
    slow = {"name": "visits.search", "arguments": {"query": "cooler", "includeArchive": True}}
    desk.send({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": slow})
    # The same id while the archive search runs (about 800 ms).
    duplicate = desk.request("a", "tools/call", {"name": "board.listOpenVisits", "arguments": {}})
    assert duplicate["id"] == "a"
    assert duplicate["error"]["code"] == -32600
    assert "in flight" in duplicate["error"]["message"]
    # The first call still completes, once.
    first = desk.recv(timeout=10)
    assert first["id"] == "a"
    assert first["result"]["isError"] is False
    assert "archive" in first["result"]["structuredContent"]
    # A cancelled call: the worker aborts and the request gets no response.
    desk.send({"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": slow})
    # The call runs on a session worker: wait until its handler has handed
    # the search to the desk's worker thread, so the cancellation reaches a
    # running handler (cancelled earlier, the runtime aborts it before the
    # handler runs: the same outcome, without the worker's log line).
    deadline = time.monotonic() + 10
    while desk.transcript().count("archive search handed to a worker thread") < 2:
        assert time.monotonic() < deadline, desk.transcript()
        time.sleep(0.01)
    desk.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "b", "reason": "user"}})
    desk.expect_silence(1.5)
    assert desk.request("b", "ping") == {"jsonrpc": "2.0", "id": "b", "result": {}}, "the id is free again"
    assert desk.close() == 0
    transcript = desk.transcript()
    assert "archive search cancelled" in transcript
    assert "EXECUTION_ABORTED" in transcript
