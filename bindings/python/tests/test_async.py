"""asyncio hosts: coroutine handlers and policies, invoke_async, deferred
work, cancellation through tasks, and the deadlock guard."""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings

import pytest

import rcip
from rcip._handle import registry


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_coroutine_handler_with_invoke_async(catalog):
    async def main():
        runtime = rcip.Runtime(catalog)  # takes the running loop

        async def hello(inv: rcip.Invocation):
            await asyncio.sleep(0.01)
            return {"text": "hello " + inv.input["name"]}

        runtime.host.bind("greeting.say", hello)
        outcome = await runtime.client.invoke_async("greeting.say", {"name": "Ada"})
        runtime.close()
        return outcome

    outcome = run(main())
    assert outcome.output == {"text": "hello Ada"}


def test_coroutine_policy_deferred_through_asyncio(catalog):
    async def main():
        decisions = asyncio.Queue()

        async def policy(request: rcip.PolicyRequest):
            return await decisions.get()

        runtime = rcip.Runtime(catalog, policy=policy)
        runtime.host.bind("tickets.create", lambda inv: {"id": "T-1"})
        task = asyncio.ensure_future(runtime.client.invoke_async("tickets.create", {"title": "x"}))
        await asyncio.sleep(0.01)
        assert not task.done()  # the policy is pending
        await decisions.put(rcip.deny("not now"))
        denied = await task
        task = asyncio.ensure_future(runtime.client.invoke_async("tickets.create", {"title": "x"}))
        await decisions.put("allow")
        allowed = await task
        runtime.close()
        return denied, allowed

    denied, allowed = run(main())
    assert (denied.code, denied.error.message) == ("POLICY_DENIED", "not now")
    assert allowed.output == {"id": "T-1"}


def test_sync_handler_returning_an_awaitable_is_awaited(catalog):
    async def main():
        runtime = rcip.Runtime(catalog)

        async def later(name):
            await asyncio.sleep(0)
            return {"text": name}

        runtime.host.bind("greeting.say", lambda inv: later(inv.input["name"]))
        outcome = await runtime.client.invoke_async("greeting.say", {"name": "Bo"})
        runtime.close()
        return outcome

    assert run(main()).output == {"text": "Bo"}


def test_preflight_and_confirmation_async(catalog):
    async def main():
        async def policy(request):
            await asyncio.sleep(0)
            if request.confirmed:
                return "allow"
            return "confirm" if request.effect == "destructive" else "allow"

        runtime = rcip.Runtime(catalog, policy=policy)
        runtime.host.bind("tickets.purge", lambda inv: {"purged": 2})
        report = await runtime.client.preflight_async([("tickets.purge", {})])
        pending = await runtime.client.invoke_async("tickets.purge", {})
        approved = await runtime.host.resolve_confirmation_async(pending.confirmation.id, True)
        runtime.close()
        return report, approved

    report, approved = run(main())
    assert report.outcomes[0].status == "confirmation_required"
    assert approved.output == {"purged": 2}


def test_coroutine_observers_are_scheduled(catalog):
    async def main():
        seen = []

        async def on_event(event):
            seen.append(event.phase)

        async def on_confirmation(notice):
            if notice.event == "opened":
                seen.append("opened")
                await runtime.host.resolve_confirmation_async(notice.confirmation_id, False)

        async def subscriber(revision):
            seen.append(revision)

        runtime = rcip.Runtime(catalog, on_event=on_event, on_confirmation=on_confirmation)
        runtime.client.subscribe(subscriber)
        runtime.host.bind("tickets.purge", lambda inv: {})
        await runtime.client.invoke_async("tickets.purge", {})
        for _ in range(20):
            await asyncio.sleep(0.01)
        runtime.close()
        return seen

    seen = run(main())
    assert 1 in seen and "opened" in seen and "confirmation_requested" in seen and "confirmation_declined" in seen


def test_cancelling_the_awaiting_task_cancels_the_invocation(catalog):
    async def main():
        started = asyncio.Event()
        outcomes = []

        async def slow(inv: rcip.Invocation):
            started.set()
            try:
                await asyncio.sleep(30)
            finally:
                outcomes.append("handler saw cancellation" if inv.cancelled else "not cancelled")
            return {"text": "never"}

        runtime = rcip.Runtime(catalog)
        runtime.host.bind("greeting.say", slow)
        token = rcip.CancelToken()
        future = runtime.client.submit("greeting.say", {"name": "x"}, cancel=token)
        task = asyncio.ensure_future(runtime.client.invoke_async("greeting.say", {"name": "y"}))
        await started.wait()
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        token.cancel()  # the coroutine handler's task is cancelled: an abort
        outcome = await asyncio.wrap_future(future)
        for _ in range(10):
            await asyncio.sleep(0.01)
        runtime.close()
        return outcome, outcomes

    outcome, outcomes = run(main())
    assert outcome.code == "EXECUTION_ABORTED"
    assert outcomes == ["handler saw cancellation", "handler saw cancellation"]


def test_handler_that_catches_cancellation_may_still_succeed(catalog):
    async def main():
        async def stubborn(inv):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                return {"text": "finished anyway"}

        runtime = rcip.Runtime(catalog)
        runtime.host.bind("greeting.say", stubborn)
        token = rcip.CancelToken()
        future = runtime.client.submit("greeting.say", {"name": "x"}, cancel=token)
        await asyncio.sleep(0.01)
        token.cancel()
        outcome = await asyncio.wrap_future(future)
        runtime.close()
        return outcome

    assert run(main()).output == {"text": "finished anyway"}


def test_blocking_invoke_on_the_loop_thread_raises_instead_of_deadlocking(catalog):
    async def main():
        async def handler(inv):
            return {"text": "x"}

        runtime = rcip.Runtime(catalog)
        binding = runtime.host.bind("greeting.say", handler)
        with pytest.raises(rcip.DeadlockError):
            runtime.client.invoke("greeting.say", {"name": "x"})
        with pytest.raises(rcip.DeadlockError):
            runtime.client.preflight([("greeting.say", {"name": "x"})])
        with pytest.raises(rcip.DeadlockError):
            runtime.host.resolve_confirmation("c", True)
        # From another thread the blocking call is fine: the loop stays free.
        outcome = await asyncio.get_running_loop().run_in_executor(None, lambda: runtime.client.invoke("greeting.say", {"name": "x"}, timeout=10))
        binding.close()
        # Without coroutine callbacks the blocking call is allowed on the loop thread.
        runtime.host.bind("greeting.say", lambda inv: {"text": "sync"})
        sync = runtime.client.invoke("greeting.say", {"name": "x"})
        runtime.close()
        return outcome, sync

    outcome, sync = run(main())
    assert outcome.output == {"text": "x"} and sync.output == {"text": "sync"}


def test_runtime_with_a_loop_running_in_another_thread(catalog):
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        in_loop = []

        async def handler(inv):
            in_loop.append(threading.current_thread() is thread)
            await asyncio.sleep(0.01)
            return {"text": "from the loop"}

        async def policy(request):
            return "allow"

        runtime = rcip.Runtime(catalog, loop=loop, policy=policy)
        assert runtime.loop is loop
        runtime.host.bind("greeting.say", handler)
        outcomes = []
        threads = [threading.Thread(target=lambda: outcomes.append(runtime.client.invoke("greeting.say", {"name": "x"}, timeout=10))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [o.output for o in outcomes] == [{"text": "from the loop"}] * 4
        assert in_loop == [True] * 4
        runtime.close()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def test_coroutine_handler_finishing_before_its_cancel_hook_leaks_nothing(catalog, errors, monkeypatch):
    """The task can finish (and close the invocation) on the loop thread
    before the handler trampoline hooks cancellation to it: the hook then
    registers nothing and raises nothing."""
    original = rcip._runtime._RuntimeState.schedule

    def finishing_first(self, awaitable, done, where):
        finished = threading.Event()

        def done_then_signal(error, value):
            try:
                done(error, value)
            finally:
                finished.set()

        scheduled = original(self, awaitable, done_then_signal, where)
        assert finished.wait(5)
        return scheduled

    monkeypatch.setattr(rcip._runtime._RuntimeState, "schedule", finishing_first)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:

        async def handler(inv):
            return {"text": "fast"}

        runtime = rcip.Runtime(catalog, loop=loop, on_error=errors)
        runtime.host.bind("greeting.say", handler)
        baseline = len(registry)
        for _ in range(3):
            assert runtime.client.invoke("greeting.say", {"name": "x"}, timeout=10).output == {"text": "fast"}
        assert len(registry) == baseline
        assert errors == []
        runtime.close()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def test_cancel_hook_on_a_settled_or_closed_invocation_registers_nothing(catalog):
    held = []
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", lambda inv: held.append(inv) or {"text": "x"})
        runtime.host.bind("tickets.list", lambda inv: held.append(inv.defer()))
        runtime.client.invoke("greeting.say", {"name": "x"})
        future = runtime.client.submit("tickets.list", {})
        held[1].complete({"items": []})
        assert future.result(1).ok
        closed, settled = held
        assert closed.closed and settled.settled and not settled.closed
        baseline = len(registry)
        closed._on_cancel(lambda: None)
        settled._on_cancel(lambda: None)
        assert len(registry) == baseline
        settled.close()


def test_coroutine_callbacks_on_a_closed_loop_fail_cleanly(catalog, errors):
    loop = asyncio.new_event_loop()

    async def handler(inv):
        return {"text": "never runs"}

    runtime = rcip.Runtime(catalog, loop=loop, on_error=errors)
    runtime.host.bind("greeting.say", handler)
    loop.close()
    outcome = runtime.client.invoke("greeting.say", {"name": "x"}, timeout=5)
    assert outcome.code == "EXECUTION_FAILED"
    assert isinstance(errors[0][0], RuntimeError)
    runtime.close()


def test_coroutine_handler_without_a_loop_is_refused(catalog):
    async def handler(inv):
        return {}

    runtime = rcip.Runtime(catalog)
    with pytest.raises(ValueError):
        runtime.host.bind("greeting.say", handler)
    assert runtime.client.snapshot().capability("greeting.say")["bound"] is False

    async def availability():
        return True

    with pytest.raises(TypeError):
        runtime.host.bind("greeting.say", lambda inv: {}, availability=availability)
    runtime.close()


def test_coroutine_handler_cancelled_before_its_task_starts_is_closed(catalog):
    """A runtime closed while a coroutine handler's task is still queued on
    the loop: the task is cancelled before its first step and the handler's
    coroutine is closed, so no "coroutine ... was never awaited" warning."""
    loop = asyncio.new_event_loop()
    try:
        seen = []

        async def slow(inv):
            await asyncio.sleep(60)

        runtime = rcip.Runtime(catalog, loop=loop)
        runtime.host.bind("tickets.list", slow)
        runtime.client.submit("tickets.list", {}, on_outcome=lambda o: seen.append(o.code))
        runtime.close()  # before the loop ran the task's start
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loop.run_until_complete(asyncio.sleep(0.05))
            gc.collect()
        assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
        assert seen == ["EXECUTION_ABORTED"]
    finally:
        loop.close()
