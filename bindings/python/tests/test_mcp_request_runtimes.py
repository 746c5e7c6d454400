"""McpSession.set_request_runtimes: a runtime per stateless (MCP
2026-07-28) request (issue 25, item 3). The session semantics are tested in
the library (crates/rcip-mcp); here the Python binding: the factory sees a
RequestSetup, each request runs on the runtime it returned, a refusing
factory answers -32603, and the factory is released."""

from __future__ import annotations

import gc
import json
import threading
import time
from typing import Any, Dict, List

import rcip
from rcip._handle import registry

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern_call(id: int, **meta: Any) -> Dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "greeting.say", "arguments": {"name": "Ada"}, "_meta": dict(MODERN_META, **meta)},
    }


def echo_context(inv: rcip.Invocation) -> Dict[str, Any]:
    return {"text": json.dumps(inv.semantic_context, sort_keys=True)}


class Answers:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_id: Dict[Any, Dict[str, Any]] = {}

    def __call__(self, text: str) -> None:
        message = json.loads(text)
        with self.lock:
            self.by_id[message.get("id")] = message

    def context_of(self, id: Any) -> Dict[str, Any]:
        result = self.by_id[id]["result"]
        assert result["resultType"] == "complete", result
        context: Dict[str, Any] = json.loads(result["structuredContent"]["text"])
        return context


def test_each_request_gets_its_own_runtime(catalog):
    answers = Answers()
    seen: List[rcip.RequestSetup] = []

    def factory(setup: rcip.RequestSetup) -> rcip.Runtime:
        seen.append(setup)
        runtime = rcip.Runtime(catalog)
        runtime.host.bind("greeting.say", echo_context)
        # This request's context, from its own _meta only.
        if setup.meta.get("test/scope"):
            runtime.host.set_context([setup.meta["test/scope"]])
        return runtime

    before = len(registry)
    with rcip.Runtime(catalog) as runtime:
        with rcip.McpSession(runtime, on_message=answers, workers=0, options={"eras": "both"}) as session:
            session.set_request_runtimes(factory)
            gc.collect()  # the factory is the library's now, not garbage
            session.receive(modern_call(1, **{"test/scope": "tickets"}), headers={"X-Tenant": "t1"})
            session.receive(modern_call(2))
            assert answers.context_of(1) == {"activeScopeIds": ["tickets"]}
            assert answers.context_of(2) == {"activeScopeIds": []}, "request 1's context is not seen by request 2"
            assert [s.method for s in seen] == ["tools/call", "tools/call"]
            assert seen[0].meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
            assert seen[0].headers == {"x-tenant": "t1"}
            assert seen[0].header("X-TENANT") == "t1"
            assert seen[1].headers == {} and seen[1].header("x-tenant") is None
            # Each request's runtime entry went with its request; the
            # factory's stays while it is registered.
            assert len(registry) == before + 2  # the message callback and the factory
            # The session's own runtime serves legacy requests.
            session.receive({"jsonrpc": "2.0", "id": 3, "method": "initialize",
                             "params": {"protocolVersion": "2025-11-25", "capabilities": {}}})
            assert answers.by_id[3]["result"]["protocolVersion"] == "2025-11-25"
            assert len(seen) == 2

            # A refusing factory: -32603, the exception kept.
            def refuse(setup: rcip.RequestSetup) -> rcip.Runtime:
                raise PermissionError("no token")

            session.set_request_runtimes(refuse)
            assert len(registry) == before + 2, "the replaced factory was released"
            session.receive(modern_call(4))
            assert answers.by_id[4]["error"]["code"] == -32603
            assert [type(e) for e in session.request_factory_errors] == [PermissionError]

            # Something else than a Runtime: -32603 too.
            session.set_request_runtimes(lambda setup: "not a runtime")  # type: ignore[arg-type,return-value]
            session.receive(modern_call(5))
            assert answers.by_id[5]["error"]["code"] == -32603
            assert isinstance(session.request_factory_errors[0], TypeError)
    assert len(registry) == before, "everything released with the session"


def test_request_runtimes_on_worker_threads(catalog):
    answers = Answers()
    threads: List[str] = []

    def factory(setup: rcip.RequestSetup) -> rcip.Runtime:
        threads.append(threading.current_thread().name)
        runtime = rcip.Runtime(catalog)
        runtime.host.bind("greeting.say", echo_context)
        if setup.meta.get("test/scope"):
            runtime.host.set_context([setup.meta["test/scope"]])
        return runtime

    with rcip.Runtime(catalog) as runtime:
        with rcip.McpSession(runtime, on_message=answers, workers=2, options={"eras": "modern"}) as session:
            session.set_request_runtimes(factory)
            for id in range(1, 9):
                session.receive(modern_call(id, **({"test/scope": "tickets"} if id % 2 else {})))
            deadline = time.monotonic() + 10
            while len(answers.by_id) < 8 and time.monotonic() < deadline:
                time.sleep(0.01)
            for id in range(1, 9):
                expected = ["tickets"] if id % 2 else []
                assert answers.context_of(id) == {"activeScopeIds": expected}, id
    assert len(threads) == 8
    assert threading.current_thread().name not in threads, "the factory ran on the session's workers"


def test_headers_must_be_strings(catalog):
    with rcip.Runtime(catalog) as runtime:
        with rcip.McpSession(runtime, on_message=lambda text: None, workers=0) as session:
            try:
                session.receive(modern_call(1), headers={"x": 1})  # type: ignore[dict-item]
            except TypeError:
                pass
            else:
                raise AssertionError("a header value that is not a string was accepted")
