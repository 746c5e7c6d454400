"""Every public API of the package, as a type checker sees it: `mypy --strict`
checks this module (tests/test_typing.py, `make test-python`), and each
``assert_type`` fails when a public annotation regresses (to ``Any``
included: ``assert_type`` wants the exact type). Nothing here runs at import;
``exercise()`` runs it all (tests/test_typing.py calls it too, so the
annotations are also true at run time)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
from dataclasses import dataclass
from typing import Annotated, Any, Dict, List, Literal, Mapping, Optional, Union

if sys.version_info >= (3, 11):
    from typing import assert_type
else:  # pragma: no cover
    from typing_extensions import assert_type

import rcip

CATALOG: Dict[str, Any] = {
    "protocolVersion": "1.0",
    "application": {"id": "typed", "name": "Typed", "description": "Type checks."},
    "scopes": [{"id": "main", "title": "Main", "description": "The main scope."}],
    "capabilities": [
        {
            "id": "echo",
            "title": "Echo",
            "description": "Echoes.",
            "scopeIds": ["main"],
            "effect": "destructive",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object"},
        }
    ],
}


@dataclass
class Echoed:
    text: str
    count: Optional[int] = None


def handler(invocation: rcip.Invocation) -> Dict[str, Any]:
    assert_type(invocation.id, str)
    assert_type(invocation.capability_id, str)
    assert_type(invocation.input_json, str)
    assert_type(invocation.semantic_context, Dict[str, Any])
    assert_type(invocation.cancelled, bool)
    assert_type(invocation.cancel_token, rcip.CancelToken)
    assert_type(invocation.settled, bool)
    assert_type(invocation.exception, Optional[BaseException])
    return {"echo": invocation.input}


def deferring(invocation: rcip.Invocation) -> None:
    later = invocation.defer()
    assert_type(later, rcip.Invocation)
    later.complete({"x": 1})
    later.complete_json("{}")
    later.fail(aborted=True)
    later.close()


def policy(request: rcip.PolicyRequest) -> rcip.PolicyAnswer:
    assert_type(request.capability_id, str)
    assert_type(request.capability, Dict[str, Any])
    assert_type(request.effect, rcip.Effect)
    assert_type(request.confirmed, bool)
    assert_type(request.phase, Literal["invoke", "preflight"])
    assert_type(request.invocation_id, Optional[str])
    assert_type(request.semantic_context, Dict[str, Any])
    assert_type(request.context, Dict[str, Any])
    assert_type(request.arguments, Dict[str, Any])
    if "text" in request.arguments:
        assert_type(request.argument("text", str), str)
    if request.effect == rcip.Effect.READ:
        return rcip.allow()
    if request.confirmed:
        return "allow"
    return rcip.confirm("Sure?")


async def async_policy(request: rcip.PolicyRequest) -> rcip.Decision:
    await asyncio.sleep(0)
    return rcip.deny("no")


def available() -> rcip.Availability:
    return rcip.Availability(True)


def on_event(event: rcip.Event) -> None:
    assert_type(event.phase, rcip.Phase)
    assert_type(event.error_code, Optional[str])
    assert_type(event.to_dict(), Dict[str, Any])


def on_confirmation(notice: rcip.ConfirmationNotice) -> None:
    assert_type(notice.event, Literal["opened", "closed"])
    assert_type(notice.reason, Optional[rcip.CloseReason])
    assert_type(notice.confirmation, Optional[rcip.Confirmation])
    if notice.confirmation is not None:
        assert_type(notice.confirmation.effect, rcip.Effect)
        assert_type(notice.confirmation.expires_at, int)


app = rcip.App("typedApp", name="Typed", description="Typed.", version="1.0.0", names="camelCase")
scope = app.scope("main", title="Main", description="Main.")
assert_type(scope, rcip.Scope)


@app.capability(scopes=[scope], effect=rcip.Effect.WRITE, needs_approval=True, when_to_use="Always.", examples=[rcip.Example("One", {"text": "a"})])
def echo(text: Annotated[str, rcip.Field(min_length=1)], count: Optional[int] = None) -> Echoed:
    """Echo

    Echoes the text."""
    return Echoed(text, count)


def approval(request: rcip.PolicyRequest) -> Union[bool, str]:
    return "Echo it?" if request.confirmed is False else False


@app.capability(id="echo.twice", needs_approval=approval)
async def echo_twice(text: str, invocation: rcip.Invocation) -> List[str]:
    """Echo twice

    Echoes the text twice."""
    return [text, text]


def exercise() -> None:
    assert_type(rcip.abi_version(), int)
    assert_type(rcip.library_version(), str)
    assert_type(rcip.library_path(), str)
    assert_type(rcip.result_str(0), str)

    # declarations
    assert_type(echo("a"), Echoed)  # the decorated function is unchanged
    assert_type(app.definition(), Dict[str, Any])
    assert_type(app.to_json(), str)
    assert_type(app.capabilities, List[rcip.Capability])
    assert_type(app.get("echo").input_schema, Dict[str, Any])
    assert_type(app.policy(policy), rcip.Policy)
    assert_type(app.policy(), rcip.Policy)
    serve = rcip.ServeOptions(confirmation="elicit", tool_names="safe", confirmation_ttl_ms=1000, workers=1, options={"maxSessions": 2})
    assert_type(serve.confirmation, Optional[Literal["host", "elicit"]])
    assert_type(serve.workers, Optional[int])
    idle_loop = asyncio.new_event_loop()  # the app has a coroutine handler; nothing runs here
    options: rcip.RuntimeOptions = {"confirmation_ttl_ms": 1000, "on_progress": lambda progress: None, "loop": idle_loop}
    with app.runtime(**options) as configured:
        assert_type(configured, rcip.Runtime)
    idle_loop.close()
    assert_type(rcip.to_json(Echoed("a")), rcip.JsonValue)
    with app.catalog() as declared:
        assert_type(declared, rcip.Catalog)

    # catalogs and schemas
    report = rcip.Catalog.check(CATALOG)
    assert_type(report, rcip.CatalogReport)
    assert_type(report.problems, tuple[rcip.CatalogProblem, ...])
    with rcip.Schema({"type": "string"}) as schema:
        assert_type(schema, rcip.Schema)
        result = schema.validate("x")
        assert_type(result, rcip.ValidationResult)
        assert_type(result.issues, tuple[rcip.ValidationIssue, ...])

    clock = rcip.ManualClock(0)
    with rcip.Runtime(
        CATALOG, policy=policy, on_event=on_event, on_confirmation=on_confirmation, clock=clock, manual_timers=True, confirmation_ttl_ms=1000
    ) as runtime:
        assert_type(runtime, rcip.Runtime)
        assert_type(runtime.client, rcip.Client)
        assert_type(runtime.host, rcip.Host)
        assert_type(runtime.stats(), Dict[str, Any])
        assert_type(runtime.next_deadline(), Optional[int])
        runtime.run_due_timers()
        host = runtime.host
        host.set_context(["main"], "main")
        host.set_context({"activeScopeIds": ["main"]})
        with host.bind("echo", handler, available) as binding:
            assert_type(binding, rcip.Binding)
            assert_type(binding.installed, bool)
            binding.set_revision(2)
            snapshot = runtime.client.snapshot()
            assert_type(snapshot, rcip.Snapshot)
            assert_type(snapshot.revision, int)
            assert_type(snapshot.capability("echo"), Optional[Dict[str, Any]])
            assert_type(runtime.client.list_capabilities(available_only=True), List[Dict[str, Any]])
            with runtime.client.subscribe(lambda revision: None) as subscription:
                assert_type(subscription, rcip.Subscription)
            outcome = runtime.client.invoke("echo", {"a": 1}, timeout=5)
            assert_type(outcome, rcip.Outcome)
            assert_type(outcome.status, rcip.Status)
            assert_type(outcome.ok, bool)
            assert_type(outcome.code, Optional[str])
            assert_type(outcome.error, Optional[rcip.OutcomeError])
            assert_type(outcome.confirmation, Optional[rcip.Confirmation])
            pending = runtime.client.submit("echo", {"a": 1}, on_outcome=lambda o: None)
            assert_type(pending, rcip.PendingOutcome[rcip.Outcome])
            assert_type(pending.result(5), rcip.Outcome)
            assert_type(pending.invocation_id, Optional[str])
            assert isinstance(pending, concurrent.futures.Future)
            if outcome.confirmation is not None:
                assert_type(host.approve(outcome.confirmation.id), rcip.Outcome)
                assert_type(host.submit_confirmation(outcome.confirmation.id, False), rcip.PendingOutcome[rcip.Outcome])
            preflight = runtime.client.preflight([("echo", {}), rcip.Proposal("echo", {})])
            assert_type(preflight, rcip.PreflightReport)
            assert_type(preflight.outcomes[0].status, rcip.PreflightStatus)
            assert_type(preflight.outcomes[0].effect, Optional[rcip.Effect])
            assert_type(runtime.client.submit_preflight([("echo", {})]), rcip.PendingOutcome[rcip.PreflightReport])
        token = rcip.CancelToken()
        assert_type(token.clone(), rcip.CancelToken)
        assert_type(token.cancelled, bool)
        token.on_cancel(lambda: None)
        token.cancel()
        token.close()
        host.clear_context()
        host.refresh()
        with rcip.McpSession(runtime, on_message=lambda text: None, confirmation="host") as session:
            assert_type(session, rcip.McpSession)
            session.receive({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert_type(session.stats(), Dict[str, int])

            def per_request(setup: rcip.RequestSetup) -> rcip.Runtime:
                assert_type(setup.method, str)
                assert_type(setup.meta, Dict[str, Any])
                assert_type(setup.headers, Dict[str, str])
                assert_type(setup.header("authorization"), Optional[str])
                return rcip.Runtime(CATALOG)

            session.set_request_runtimes(per_request)
            session.receive({"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers={"authorization": "Bearer t"})
            assert_type(session.request_factory_errors, List[BaseException])
        with rcip.McpSession(
            runtime,
            on_message=lambda text: None,
            tool_names="safe",
            content={"echo": [{"type": "json"}]},
        ) as named:
            assert_type(named, rcip.McpSession)

    async def main() -> None:
        with app.runtime(policy=policy) as bound:  # inside the loop: echo.twice is a coroutine
            assert_type(bound, rcip.Runtime)
            assert_type(await bound.client.invoke_async("echo.twice", {"text": "a"}), rcip.Outcome)

        async with rcip.Runtime(CATALOG, policy=async_policy) as runtime:
            assert_type(runtime, rcip.Runtime)
            runtime.host.bind("echo", handler)
            outcome = await runtime.client.invoke_async("echo", {})
            assert_type(outcome, rcip.Outcome)
            report = await runtime.client.preflight_async([("echo", {})])
            assert_type(report, rcip.PreflightReport)

    asyncio.run(main())

    decision = rcip.Decision("allow")
    assert_type(decision.decision, rcip.DecisionName)
    assert_type(rcip.deny("x"), rcip.Decision)
    checked: Mapping[str, rcip.Policy] = {"sync": policy, "async": async_policy}
    assert len(checked) == 2
    try:
        rcip.Catalog({})
    except rcip.InvalidCatalogError as error:
        assert_type(error, rcip.InvalidCatalogError)
        assert_type(error.message, str)
        assert_type(error.code, int)
