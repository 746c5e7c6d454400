"""Exceptions in every callback kind become the documented outcome, never a
crash; callbacks survive garbage collection; registrations are released."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
import weakref

import pytest
from conftest import CLOCK_START, HERE

import rcip
from rcip._handle import registry


class Boom(Exception):
    pass


# ----- exceptions in callbacks --------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc, code",
    [
        (Boom("handler bug"), "EXECUTION_FAILED"),
        (KeyboardInterrupt(), "EXECUTION_FAILED"),
        (SystemExit(3), "EXECUTION_FAILED"),
        (rcip.Aborted(), "EXECUTION_ABORTED"),
        (asyncio.CancelledError(), "EXECUTION_ABORTED"),
    ],
)
def test_handler_exceptions(catalog, errors, exc, code):
    def handler(inv):
        raise exc

    with rcip.Runtime(catalog, on_error=errors) as runtime:
        runtime.host.bind("greeting.say", handler)
        assert runtime.client.invoke("greeting.say", {"name": "x"}).code == code
    reported = [e for e, _ in errors]
    if code == "EXECUTION_FAILED":
        assert reported == [exc] and "greeting.say" in errors[0][1]
    else:
        assert reported == []  # an abort is not an error


@pytest.mark.parametrize("exc", [Boom("async bug"), KeyboardInterrupt()])
def test_coroutine_handler_exceptions(catalog, errors, exc):
    async def main():
        async def handler(inv):
            await asyncio.sleep(0)
            raise exc

        async def aborting(inv):
            raise rcip.Aborted()

        runtime = rcip.Runtime(catalog, on_error=errors)
        runtime.host.bind("greeting.say", handler)
        runtime.host.bind("tickets.list", aborting)
        failed = await runtime.client.invoke_async("greeting.say", {"name": "x"})
        aborted = await runtime.client.invoke_async("tickets.list", {})
        runtime.close()
        return failed, aborted

    failed, aborted = asyncio.run(main())
    assert failed.code == "EXECUTION_FAILED" and aborted.code == "EXECUTION_ABORTED"


@pytest.mark.parametrize("answer", [Boom("policy bug"), KeyboardInterrupt(), "maybe", 42, None, {"decision": "allow", "extra": 1}])
def test_policy_failures(catalog, errors, answer):
    def policy(request):
        if isinstance(answer, BaseException):
            raise answer
        return answer

    with rcip.Runtime(catalog, policy=policy, on_error=errors) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        assert runtime.client.invoke("greeting.say", {"name": "x"}).code == "POLICY_EVALUATION_FAILED"
        preflight = runtime.client.preflight([("greeting.say", {"name": "x"})])
        assert preflight.outcomes[0].error.code == "POLICY_EVALUATION_FAILED"
    assert errors  # reported, not swallowed silently


def test_coroutine_policy_failure(catalog, errors):
    async def main():
        async def policy(request):
            raise Boom("async policy bug")

        runtime = rcip.Runtime(catalog, policy=policy, on_error=errors)
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        outcome = await runtime.client.invoke_async("greeting.say", {"name": "x"})
        runtime.close()
        return outcome

    assert asyncio.run(main()).code == "POLICY_EVALUATION_FAILED"
    assert isinstance(errors[0][0], Boom)


@pytest.mark.parametrize("answer", [Boom("availability bug"), KeyboardInterrupt(), "yes", {"available": "yes"}, {"reason": "x"}])
def test_availability_failures(catalog, errors, answer):
    def availability():
        if isinstance(answer, BaseException):
            raise answer
        return answer

    with rcip.Runtime(catalog, on_error=errors) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"}, availability=availability)
        entry = runtime.client.snapshot().capability("greeting.say")
        assert entry["available"] is False
        assert entry["availability"]["reasonCode"] == "AVAILABILITY_CHECK_FAILED"
        assert runtime.client.invoke("greeting.say", {"name": "x"}).code == "CAPABILITY_UNAVAILABLE"
    assert errors


def test_clock_failure_falls_back_to_the_system_clock(catalog, errors):
    def clock():
        raise Boom("clock bug")

    events = []
    with rcip.Runtime(catalog, clock=clock, on_event=events.append, on_error=errors) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        assert runtime.client.invoke("greeting.say", {"name": "x"}).ok
    assert events[0].timestamp > CLOCK_START - 10**12  # a real time, not a crash
    assert isinstance(errors[0][0], Boom)


def test_id_generator_failure_falls_back(catalog, errors):
    def ids(prefix):
        raise Boom("id bug")

    with rcip.Runtime(catalog, id_generator=ids, on_error=errors) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        assert runtime.client.invoke("greeting.say", {"name": "x"}).invocation_id.startswith("invocation_")
    assert isinstance(errors[0][0], Boom)


def test_observer_failures_change_no_outcome(catalog, errors):
    def on_event(event):
        raise Boom("event bug")

    def on_confirmation(notice):
        raise KeyboardInterrupt

    with rcip.Runtime(catalog, on_event=on_event, on_confirmation=on_confirmation, on_error=errors) as runtime:
        sub = runtime.client.subscribe(lambda revision: 1 / 0)
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        runtime.host.bind("tickets.purge", lambda inv: {})
        assert runtime.client.invoke("greeting.say", {"name": "x"}).ok
        assert runtime.client.invoke("tickets.purge", {}).status == "confirmation_required"
        token = rcip.CancelToken()
        token.on_cancel(lambda: [][1])
        token.cancel()
        sub.close()
    kinds = {type(e) for e, _ in errors}
    assert {Boom, KeyboardInterrupt, ZeroDivisionError} <= kinds


def nested(depth: int) -> str:
    return '{"n": ' + "[" * depth + "]" * depth + "}"


# Deeper than the binding turns into Python objects (the library's default
# max_depth of 1000, and a little), within a max_depth the host raised.
DEPTH = 3000
DEEP_INPUT = nested(DEPTH)


def test_policy_request_too_deep_to_parse_fails_once(catalog, errors):
    """PolicyRequest parses its context (with the input) when it is adopted:
    a failure there frees the request once (no double free) and is reported."""
    with rcip.Runtime(catalog, policy=lambda request: "allow", on_error=errors, max_depth=5000) as runtime:
        runtime.host.bind("tickets.list", lambda inv: {"items": []})
        runtime.host.set_context(["tickets"])
        for _ in range(3):
            outcome = runtime.client.invoke("tickets.list", input_json=DEEP_INPUT)
            assert outcome.code == "POLICY_EVALUATION_FAILED"
        gc.collect()
        assert runtime.client.invoke("tickets.list", {}).ok
    assert [(type(e), where) for e, where in errors] == [(RecursionError, "the policy")] * 3


def test_payloads_as_deep_as_the_library_accepts_reach_python(catalog, errors):
    """Nesting 1000 deep is a JSON value by default (PIPELINE.md section 8).
    Python's json recursion stops short of that once the payload is wrapped
    in a record and called from a few frames down: a Python policy failed
    such input (POLICY_EVALUATION_FAILED) and invoke() raised RecursionError
    for such output. Both now reach Python."""
    seen = []

    def policy(request):
        seen.append(len(request.input["n"]))
        return "allow"

    with rcip.Runtime(catalog, policy=policy, on_error=errors) as runtime:
        runtime.host.bind("tickets.list", lambda inv: {"items": inv.input["n"]})
        runtime.host.set_context(["tickets"])
        for depth in (300, 998, 999):
            outcome = runtime.client.invoke("tickets.list", input_json=nested(depth))
            assert outcome.ok, outcome
            items = outcome.output["items"]
            for _ in range(depth - 1):
                (items,) = items if items else ([],)
            assert items == []
        # One level more than the library's limit is not JSON (INPUT_INVALID).
        assert runtime.client.invoke("tickets.list", input_json=nested(1000)).code == "INPUT_INVALID"
    assert seen == [1, 1, 1]
    assert errors == []


def test_invocation_adoption_failure_frees_once(catalog, errors, monkeypatch):
    """Any exception while the handler trampoline adopts the invocation (here
    a simulated signal) fails it once, reported, and later calls are fine."""
    original = rcip._lib.borrowed_string
    calls = []

    def interrupted(value):
        calls.append(value)
        if len(calls) == 2:
            raise KeyboardInterrupt("a signal while adopting")
        return original(value)

    with rcip.Runtime(catalog, on_error=errors) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": inv.capability_id})
        monkeypatch.setattr(rcip._lib, "borrowed_string", interrupted)
        assert runtime.client.invoke("greeting.say", {"name": "x"}).code == "EXECUTION_FAILED"
        gc.collect()
        for _ in range(3):
            assert runtime.client.invoke("greeting.say", {"name": "x"}).output == {"text": "greeting.say"}
    assert [(type(e), where) for e, where in errors] == [(KeyboardInterrupt, "the handler of greeting.say")]


def test_notice_with_an_input_too_deep_to_parse_is_delivered(catalog, errors):
    notices = []
    with rcip.Runtime(catalog, on_confirmation=notices.append, on_error=errors, max_depth=5000) as runtime:
        runtime.host.bind("tickets.purge", lambda inv: {})
        runtime.host.set_context(["admin"])
        outcome = runtime.client.invoke("tickets.purge", input_json=DEEP_INPUT)
        assert outcome.status == "confirmation_required"
        runtime.host.decline(outcome.confirmation.id)
    assert errors == []
    opened, closed = notices
    assert (opened.event, opened.confirmation_id, opened.invocation_id) == ("opened", outcome.confirmation.id, outcome.invocation_id)
    assert opened.confirmation == outcome.confirmation
    assert isinstance(opened.input, rcip.RawJson)  # kept as text, not parsed
    assert opened.input.text.replace(" ", "") == DEEP_INPUT.replace(" ", "")
    assert (closed.event, closed.reason) == ("closed", "declined")


def test_notices_and_events_that_cannot_be_parsed_are_reported(catalog, errors, monkeypatch):
    def unparsable(cls, text):
        raise Boom("cannot parse " + cls.__name__)

    monkeypatch.setattr(rcip.Event, "from_json", classmethod(unparsable))
    monkeypatch.setattr(rcip.ConfirmationNotice, "from_json", classmethod(unparsable))
    seen = []
    with rcip.Runtime(catalog, on_event=seen.append, on_confirmation=seen.append, on_error=errors) as runtime:
        runtime.host.bind("tickets.purge", lambda inv: {})
        assert runtime.client.invoke("tickets.purge", {}).status == "confirmation_required"
    assert seen == []
    wheres = {where for _, where in errors}
    assert wheres == {"on_event", "on_confirmation"}
    assert all(isinstance(e, Boom) for e, _ in errors)


def _async_handler_failing_bind(runtime):
    async def handler(inv):
        return {}

    runtime.host.bind("greeting.say\0", handler)


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda rt: rt.client.submit("greeting.say\0", {}), ValueError),
        (lambda rt: rt.client.submit(42, {}), TypeError),
        (lambda rt: rt.client.submit("greeting.say", {}, invocation_id="\ud800"), UnicodeEncodeError),
        (lambda rt: rt.client.submit("greeting.say", {}, cancel="token"), TypeError),
        (lambda rt: rt.client.submit("greeting.say", {}, cancel=_closed_token()), ValueError),
        (lambda rt: rt.client.invoke("greeting.say", {}, cancel=_closed_token()), ValueError),
        (lambda rt: rt.client.submit_preflight([("greeting.say", {})], cancel="token"), TypeError),
        (lambda rt: rt.host.bind("x\0", lambda inv: None), ValueError),
        (lambda rt: rt.host.submit_confirmation("c\0", True), ValueError),
        (_async_handler_failing_bind, ValueError),
        (lambda rt: _closed_token().on_cancel(lambda: None), ValueError),
    ],
)
def test_failed_registering_calls_leave_no_registration(catalog, call, exc):
    async def main():
        runtime = rcip.Runtime(catalog)
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        baseline = len(registry)
        with pytest.raises(exc):
            call(runtime)
        assert len(registry) == baseline
        # No coroutine callback is registered: a blocking call on the loop thread is no deadlock.
        assert runtime.client.invoke("greeting.say", {"name": "x"}, timeout=5).ok
        runtime.close()

    asyncio.run(main())


@pytest.mark.parametrize(
    "call",
    [
        lambda rt: rt.client.submit("greeting.say", {"name": "x"}),
        lambda rt: rt.client.subscribe(print),
        lambda rt: rt.client.submit_preflight([("greeting.say", {})]),
        lambda rt: rt.host.bind("greeting.say", print),
        lambda rt: rt.host.submit_confirmation("c", True),
    ],
)
def test_registering_calls_on_a_closed_runtime_leave_no_registration(catalog, call):
    runtime = rcip.Runtime(catalog)
    runtime.close()
    baseline = len(registry)
    with pytest.raises(ValueError):
        call(runtime)
    assert len(registry) == baseline


def _closed_token():
    token = rcip.CancelToken()
    token.close()
    return token


def test_errors_are_logged_without_on_error(catalog, caplog):
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", lambda inv: 1 / 0)
        with caplog.at_level("ERROR", logger="rcip"):
            assert runtime.client.invoke("greeting.say", {"name": "x"}).code == "EXECUTION_FAILED"
    assert "ZeroDivisionError" in caplog.text


def test_a_failing_on_error_is_contained(catalog):
    def on_error(exc, where):
        raise RuntimeError("on_error bug")

    with rcip.Runtime(catalog, on_error=on_error) as runtime:
        runtime.host.bind("greeting.say", lambda inv: 1 / 0)
        assert runtime.client.invoke("greeting.say", {"name": "x"}).code == "EXECUTION_FAILED"


# ----- lifetimes ----------------------------------------------------------------------------


def test_callbacks_registered_then_collected_still_fire(catalog):
    """Nothing but the library refers to these callables: gc must not free them."""
    seen = []
    baseline = len(registry)
    runtime = rcip.Runtime(
        catalog,
        policy=lambda request: (seen.append("policy"), "allow")[1],
        on_event=lambda event: seen.append(event.phase),
        on_confirmation=lambda notice: seen.append(notice.event),
        clock=lambda: CLOCK_START,
        id_generator=lambda prefix: None,
    )
    runtime.host.bind("greeting.say", lambda inv: {"text": "gc"}, availability=lambda: True)
    runtime.client.subscribe(lambda revision: seen.append(revision))
    token = rcip.CancelToken()
    token.on_cancel(lambda: seen.append("cancelled"))
    gc.collect()
    gc.collect()
    assert runtime.client.invoke("greeting.say", {"name": "x"}).output == {"text": "gc"}
    token.cancel()
    assert "policy" in seen and "succeeded" in seen and 2 in seen and "cancelled" in seen
    runtime.close()
    token.close()
    gc.collect()
    assert len(registry) == baseline  # every registration released


def test_registrations_are_released(catalog):
    baseline = len(registry)
    runtime = rcip.Runtime(catalog, policy=lambda r: "allow", on_event=lambda e: None)
    binding = runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
    sub = runtime.client.subscribe(lambda r: None)
    runtime.client.invoke("greeting.say", {"name": "x"})
    runtime.client.preflight([("greeting.say", {"name": "x"})])
    assert len(registry) == baseline + 4  # policy, observer, binding, subscriber
    binding.close()
    sub.close()
    assert len(registry) == baseline + 2
    runtime.close()
    assert len(registry) == baseline
    with pytest.raises(rcip.NotInCatalogError):
        rcip.Runtime(catalog).host.bind("nope.nothing", lambda inv: None)
    assert len(registry) == baseline  # a refused registration is undone


def test_runtime_collected_when_unreferenced(catalog):
    runtime = rcip.Runtime(catalog)
    runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
    ref = weakref.ref(runtime)
    del runtime
    gc.collect()
    assert ref() is None


def test_binding_kept_until_closed_even_when_dropped(catalog):
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "kept"})
        gc.collect()
        assert runtime.client.invoke("greeting.say", {"name": "x"}).ok


def test_builder_failure_releases_registrations(catalog):
    baseline = len(registry)
    with pytest.raises(rcip.InvalidArgumentError):
        rcip.Runtime(catalog, policy=lambda r: "allow", on_event=lambda e: None, confirmation_ttl_ms=2**63)
    assert len(registry) == baseline


EXIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, threading
    sys.path.insert(0, {tests!r})
    from conftest import CATALOG
    import rcip

    held = []
    runtime = rcip.Runtime(CATALOG, confirmation_ttl_ms=60000,
                           on_event=lambda e: None, on_confirmation=lambda n: None)
    runtime.host.bind("greeting.say", lambda inv: held.append(inv.defer()))
    runtime.host.bind("tickets.purge", lambda inv: {{}})
    runtime.client.subscribe(lambda r: None)
    pending = runtime.client.submit("greeting.say", {{"name": "x"}})    # a handler never settled
    runtime.client.invoke("tickets.purge", {{}})                        # a confirmation on the real timer
    token = rcip.CancelToken()
    token.on_cancel(lambda: None)

    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    async def slow(inv):
        await asyncio.sleep(60)
    arun = rcip.Runtime(CATALOG, loop=loop)
    arun.host.bind("tickets.list", slow)
    arun.client.submit("tickets.list", {{}})                          # a coroutine handler running
    schema = rcip.Schema({{"type": "object"}})
    catalog = rcip.Catalog(CATALOG)
    print("alive", flush=True)
    {exit}
    """
)


@pytest.mark.parametrize("how", ["pass", "sys.exit(0)", "raise SystemExit(0)"])
def test_exit_with_live_handles_prints_nothing(how):
    script = EXIT_SCRIPT.format(tests=HERE, exit=how)
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "alive\n"
    assert proc.stderr == ""


DEFERRED_AT_EXIT_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from conftest import CATALOG
    import rcip

    held = []
    runtime = rcip.Runtime(CATALOG)
    runtime.host.bind("greeting.say", lambda inv: held.append(inv.defer()))
    runtime.client.submit("greeting.say", {{"name": "x"}}, on_outcome=lambda o: print(o.code, flush=True))
    print("alive", flush=True)
    """
)


def test_deferred_invocation_held_at_exit_is_aborted():
    """The runtime closes before the held invocation's finalizer runs."""
    script = DEFERRED_AT_EXIT_SCRIPT.format(tests=HERE)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "alive\nEXECUTION_ABORTED\n"
    assert proc.stderr == ""


DAEMON_AT_EXIT_SCRIPT = textwrap.dedent(
    """
    import sys, threading, time
    sys.path.insert(0, {tests!r})
    from conftest import CATALOG
    import rcip

    runtime = rcip.Runtime(CATALOG, on_event=lambda e: None)
    runtime.host.bind("greeting.say", lambda inv: {{"text": "hi"}})
    started = threading.Event()

    def spin():
        started.set()
        try:
            while True:
                runtime.client.submit("greeting.say", {{"name": "x"}}, on_outcome=lambda o: None)
        except ValueError:
            pass  # the runtime closed at exit

    threading.Thread(target=spin, daemon=True).start()
    started.wait()
    time.sleep(0.05)
    """
)


def test_exit_while_a_daemon_thread_is_inside_calls():
    """A daemon thread in calls that call back into Python at exit: the
    runtime closes and the thread is kept out of the library, no abort."""
    script = DAEMON_AT_EXIT_SCRIPT.format(tests=HERE)
    for _ in range(10):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""


CLOSE_AT_EXIT_SCRIPT = textwrap.dedent(
    """
    import atexit, gc, sys, threading, time
    sys.path.insert(0, {tests!r})


    class Linger:
        # Garbage in a cycle: collected by the interpreter's last collection,
        # once it is finalizing. Its sleep gives the GIL away meanwhile.
        def __del__(self, sleep=time.sleep):  # the module's globals may be gone
            sleep(0.5)


    def leave_garbage():
        linger = Linger()
        linger.cycle = linger
        del linger
        gc.set_threshold(1000000)  # no collection before the last one


    atexit.register(leave_garbage)  # before rcip's exit hook: runs after it

    import conftest  # noqa: F401 - puts the package on the path
    import rcip

    inside = threading.Event()


    class Slow:
        # Dropped by the token's user_data_free trampoline, on the thread
        # that frees the token: Python code run from inside the library.
        def __call__(self):
            pass

        def __del__(self):
            inside.set()
            time.sleep(0.2)  # the GIL given away, the library on this stack


    token = rcip.CancelToken()
    token.on_cancel(Slow())
    threading.Thread(target=token.close, daemon=True).start()
    atexit.register(inside.wait)  # after rcip's exit hook: runs before it
    """
)


def test_exit_while_a_daemon_thread_is_closing_a_handle():
    """A daemon thread inside a handle's free (which calls back into Python)
    when the interpreter exits: the exit hook waits for the close as for any
    call, so the thread is not stopped with the library on its stack."""
    script = CLOSE_AT_EXIT_SCRIPT.format(tests=HERE)
    for _ in range(5):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
