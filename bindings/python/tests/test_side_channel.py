"""A handler's side channel from Python (**rcip**): Invocation.report_progress,
Invocation.log and Invocation.elicit through an MCP session, and the
runtime's on_progress observer. The session runs without workers, so every
message a call makes is sent before receive() returns."""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, List

import pytest
from test_mcp import Wire

import rcip


def methods(wire: Wire) -> List[str]:
    return [m.get("method", "response:%s" % m.get("id")) for m in wire.received]


def test_progress_goes_to_the_client_before_the_response_and_to_the_observer(catalog):
    seen: List[rcip.Progress] = []

    def handler(inv: rcip.Invocation) -> Dict[str, Any]:
        inv.report_progress(1, 3, "one")
        inv.report_progress(2.5, 3)
        with pytest.raises(rcip.InvalidArgumentError):
            inv.report_progress(2.5)  # not increasing: refused, nothing sent
        with pytest.raises(rcip.InvalidArgumentError):
            inv.report_progress(float("nan"))
        return {"text": "hello"}

    wire = Wire()
    with rcip.Runtime(catalog, on_progress=seen.append) as runtime:
        runtime.host.bind("greeting.say", handler)
        with rcip.McpSession(runtime, on_message=wire, workers=0) as session:
            wire.session = session
            wire.initialize()
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Ada"}, "_meta": {"progressToken": "p1"}}})
            assert methods(wire) == ["notifications/progress", "notifications/progress", "response:1"]
            assert wire.received[0]["params"] == {"progressToken": "p1", "progress": 1, "total": 3, "message": "one"}
            assert wire.received[1]["params"] == {"progressToken": "p1", "progress": 2.5, "total": 3}
            # Without a token the client gets none; the observer still does.
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Bo"}}})
            assert methods(wire) == ["response:2"]
    assert [(p.capability_id, p.progress, p.total, p.message) for p in seen] == [
        ("greeting.say", 1, 3, "one"),
        ("greeting.say", 2.5, 3, None),
    ] * 2


def test_a_report_after_settling_is_already_completed(catalog):
    kept: List[rcip.Invocation] = []

    def handler(inv: rcip.Invocation) -> None:
        kept.append(inv.defer())
        inv.complete({"text": "done"})

    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", handler)
        assert runtime.client.invoke("greeting.say", {"name": "Ada"}).status.value == "succeeded"
        with pytest.raises(rcip.AlreadyCompletedError):
            kept[0].report_progress(1)
        with pytest.raises(rcip.AlreadyCompletedError):
            kept[0].log("info", "late")
        kept[0].close()


def test_log_messages_follow_the_clients_level(catalog):
    def handler(inv: rcip.Invocation) -> Dict[str, Any]:
        inv.log("debug", "hidden until debug", logger="greeter")
        inv.log("warning", {"note": "shown"})
        with pytest.raises(rcip.InvalidArgumentError):
            inv.log("loud", "no such level")
        return {"text": "hi"}

    wire = Wire()
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", handler)
        with rcip.McpSession(runtime, on_message=wire, workers=0) as session:
            wire.session = session
            init = wire.initialize()
            assert init["result"]["capabilities"]["logging"] == {}
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Ada"}}})
            assert methods(wire) == ["notifications/message", "response:1"]
            assert wire.received[0]["params"] == {"level": "warning", "data": {"note": "shown"}}
            assert wire.request(2, "logging/setLevel", {"level": "debug"})["result"] == {}
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Ada"}}})
            assert methods(wire) == ["notifications/message", "notifications/message", "response:3"]
            assert wire.received[0]["params"] == {"level": "debug", "logger": "greeter", "data": "hidden until debug"}
            assert wire.request(4, "logging/setLevel", {"level": "verbose"})["error"]["code"] == -32602


def test_elicit_from_a_deferred_handler(catalog):
    schema = {"type": "object", "properties": {"tone": {"type": "string", "enum": ["warm", "dry"], "default": "warm"}}, "required": ["tone"]}
    answers: List[rcip.ElicitResult] = []

    def handler(inv: rcip.Invocation) -> None:
        inv.defer()
        future = inv.elicit("Which tone?", schema)

        def done(f: Any) -> None:
            answer = f.result()
            answers.append(answer)
            tone = answer.content["tone"] if answer.accepted else "none"
            inv.complete({"text": "hello (%s)" % tone})
            inv.close()

        future.add_done_callback(done)

    wire = Wire()
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", handler)
        with rcip.McpSession(runtime, on_message=wire, workers=0) as session:
            wire.session = session
            wire.initialize({"elicitation": {"form": {}}})
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Ada"}}})
            (ask,) = wire.received
            assert ask["method"] == "elicitation/create"
            assert ask["params"] == {"mode": "form", "message": "Which tone?", "requestedSchema": schema}
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"tone": "dry"}}})
            (response,) = wire.received
            assert response["result"]["structuredContent"] == {"text": "hello (dry)"}
            # Cancelling the call withdraws the question and answers cancel.
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Bo"}}})
            (ask2,) = wire.received
            session.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
            assert {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": ask2["id"], "reason": "The tool call was cancelled."}} in wire.received
    assert [a.action for a in answers] == ["accept", "cancel"]
    assert answers[0].content == {"tone": "dry"}


def test_elicit_refusals(catalog):
    errors: List[BaseException] = []

    def handler(inv: rcip.Invocation) -> Dict[str, Any]:
        for schema in ({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}, {"type": "object", "properties": {}}):
            try:
                inv.elicit("?", schema)
            except rcip.RcipError as e:
                errors.append(e)
        return {"text": "hi"}

    wire = Wire()
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", handler)
        # A client that did not declare elicitation.
        with rcip.McpSession(runtime, on_message=wire, workers=0) as session:
            wire.session = session
            wire.initialize()
            assert wire.request(1, "tools/call", {"name": "greeting.say", "arguments": {"name": "Ada"}})["result"]["isError"] is False
        # No MCP call at all: an in-process consumer.
        runtime.client.invoke("greeting.say", {"name": "Bo"})
    # Without an MCP call nothing can be asked, whatever the schema.
    assert [type(e) for e in errors] == [rcip.InvalidArgumentError, rcip.UnsupportedError, rcip.UnsupportedError, rcip.UnsupportedError]
    assert "/properties/a/type" in str(errors[0])


def test_sampling_from_a_deferred_handler(catalog):
    replies: List[Dict[str, Any]] = []
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}], "maxTokens": 20}

    def handler(inv: rcip.Invocation) -> None:
        inv.defer()
        with pytest.raises(rcip.InvalidArgumentError):
            inv.create_message({"messages": [], "maxTokens": 20})

        def done(f: Any) -> None:
            replies.append(f.result())
            inv.complete({"text": f.result()["result"]["content"]["text"]})
            inv.close()

        inv.create_message(params).add_done_callback(done)

    wire = Wire()
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", handler)
        with rcip.McpSession(runtime, on_message=wire, workers=0) as session:
            wire.session = session
            wire.initialize({"sampling": {}})
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Ada"}}})
            (ask,) = wire.received
            assert ask["method"] == "sampling/createMessage" and ask["params"] == params
            wire.received.clear()
            result = {"role": "assistant", "content": {"type": "text", "text": "hi!"}, "model": "m", "stopReason": "endTurn"}
            session.receive({"jsonrpc": "2.0", "id": ask["id"], "result": result})
            (response,) = wire.received
            assert response["result"]["structuredContent"] == {"text": "hi!"}
    assert replies == [{"result": result}]


def test_ask_under_a_key_and_can_ask(catalog):
    seen: List[Any] = []
    replies: List[Dict[str, Any]] = []

    def handler(inv: rcip.Invocation) -> None:
        inv.defer()
        seen.append((inv.can_ask("roots/list"), inv.can_ask("sampling/createMessage")))
        for key in ("", "rcip/mine"):
            with pytest.raises(rcip.InvalidArgumentError):
                inv.ask("roots/list", {}, key=key)
        with pytest.raises(rcip.UnsupportedError):
            inv.ask("sampling/createMessage", {"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}], "maxTokens": 5})

        def done(f: Any) -> None:
            replies.append(f.result())
            inv.complete({"text": f.result()["result"]["roots"][0]["uri"]})
            inv.close()

        inv.ask("roots/list", {}, key="where").add_done_callback(done)

    wire = Wire()
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", handler)
        with rcip.McpSession(runtime, on_message=wire, workers=0) as session:
            wire.session = session
            wire.initialize({"roots": {}})
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Ada"}}})
            (ask,) = wire.received
            assert ask["method"] == "roots/list" and ask["params"] == {}
            wire.received.clear()
            session.receive({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": "file:///srv"}]}})
            (response,) = wire.received
            assert response["result"]["structuredContent"] == {"text": "file:///srv"}
    assert seen == [(True, False)]
    assert replies == [{"result": {"roots": [{"uri": "file:///srv"}]}}]
