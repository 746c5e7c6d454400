"""Cancellation at each stage of an invocation, a confirmation and a preflight."""

from __future__ import annotations

import threading

import pytest

import rcip


def deferring_policy(held):
    def policy(request: rcip.PolicyRequest):
        if request.confirmed:
            return "allow"
        held.append(request.defer())
        return None

    return policy


def test_token_basics():
    token = rcip.CancelToken()
    assert not token.cancelled
    clone = token.clone()
    fired = []
    token.on_cancel(lambda: fired.append("a"))
    clone.on_cancel(lambda: fired.append("b"))
    clone.close()
    token.cancel()
    token.cancel()  # idempotent
    assert token.cancelled and fired == ["a", "b"]
    token.on_cancel(lambda: fired.append("late"))  # already cancelled: at once
    assert fired == ["a", "b", "late"]
    token.close()
    with pytest.raises(ValueError):
        token.cancel()


def test_cancelled_before_invoke(catalog):
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "no"})
        token = rcip.CancelToken()
        token.cancel()
        assert runtime.client.invoke("greeting.say", {"name": "x"}, cancel=token).code == "EXECUTION_ABORTED"


def test_cancelled_while_the_policy_is_pending(catalog):
    held = []
    events = []
    with rcip.Runtime(catalog, policy=deferring_policy(held), on_event=events.append) as runtime:
        ran = []
        runtime.host.bind("greeting.say", lambda inv: ran.append(1) or {"text": "no"})
        token = rcip.CancelToken()
        future = runtime.client.submit("greeting.say", {"name": "x"}, cancel=token)
        assert not future.done()
        token.cancel()
        assert future.done() and future.result().code == "EXECUTION_ABORTED"  # at once
        held[0].allow()  # the late answer changes nothing
        held[0].close()
        assert ran == []
        assert events[-1].error_code == "EXECUTION_ABORTED"


def test_cancelled_while_the_handler_runs(catalog):
    with rcip.Runtime(catalog) as runtime:
        held = []
        runtime.host.bind("greeting.say", lambda inv: held.append(inv.defer()))
        token = rcip.CancelToken()
        future = runtime.client.submit("greeting.say", {"name": "x"}, cancel=token)
        observed = []
        held[0].cancel_token.on_cancel(lambda: observed.append("told"))
        token.cancel()
        assert observed == ["told"] and held[0].cancelled
        assert not future.done()  # a running handler is only told
        held[0].fail()  # a failure after cancellation is an abort
        assert future.result(1).code == "EXECUTION_ABORTED"
        held[0].close()

        token2 = rcip.CancelToken()
        future2 = runtime.client.submit("greeting.say", {"name": "x"}, cancel=token2)
        token2.cancel()
        held[1].complete({"text": "done anyway"})  # success after cancellation is success
        assert future2.result(1).output == {"text": "done anyway"}
        held[1].close()


def test_handler_raising_after_cancellation_is_aborted(catalog, errors):
    with rcip.Runtime(catalog, on_error=errors) as runtime:
        token = rcip.CancelToken()

        def handler(inv):
            token.cancel()
            raise RuntimeError("gave up")

        runtime.host.bind("greeting.say", handler)
        assert runtime.client.invoke("greeting.say", {"name": "x"}, cancel=token).code == "EXECUTION_ABORTED"


def test_cancelled_while_a_confirmation_is_pending(catalog, clock):
    notices = []
    with rcip.Runtime(catalog, on_confirmation=notices.append, clock=clock, manual_timers=True) as runtime:
        runtime.host.bind("tickets.purge", lambda inv: {})
        token = rcip.CancelToken()
        pending = runtime.client.invoke("tickets.purge", {}, cancel=token)
        assert pending.status == "confirmation_required"
        token.cancel()
        assert notices[-1].reason == "cancelled"
        receipt = runtime.host.approve(pending.confirmation.id)
        assert (receipt.code, receipt.invocation_id) == ("EXECUTION_ABORTED", pending.invocation_id)


def test_cancelled_during_the_approved_rerun(catalog):
    held = []
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("tickets.purge", lambda inv: held.append(inv.defer()))
        token = rcip.CancelToken()
        pending = runtime.client.invoke("tickets.purge", {}, cancel=token)
        future = runtime.host.submit_confirmation(pending.confirmation.id, True)
        assert not future.done() and len(held) == 1
        token.cancel()
        assert held[0].cancelled
        held[0].close()  # dropped unsettled after cancellation: an abort
        assert future.result(1).code == "EXECUTION_ABORTED"


def test_cancelled_during_a_preflight(catalog):
    held = []
    with rcip.Runtime(catalog, policy=deferring_policy(held)) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        token = rcip.CancelToken()
        future = runtime.client.submit_preflight([("greeting.say", {"name": "x"}), ("greeting.say", {"name": ""})], cancel=token)
        assert not future.done()
        token.cancel()
        report = future.result(1)
        assert [(o.status, o.error.code) for o in report.outcomes] == [("blocked", "EXECUTION_ABORTED"), ("blocked", "INPUT_INVALID")]
        for r in held:
            r.close()


def test_blocking_invoke_timeout_cancels(catalog):
    held = []
    with rcip.Runtime(catalog, policy=deferring_policy(held)) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        with pytest.raises(TimeoutError):
            runtime.client.invoke("greeting.say", {"name": "x"}, timeout=0.05)
        assert runtime.stats()["pendingInvocations"] == 0  # the timeout cancelled it
        held[0].close()


def test_timeout_error_names_the_invocation(catalog):
    held = []
    with rcip.Runtime(catalog, policy=deferring_policy(held)) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        with pytest.raises(TimeoutError) as caught:
            runtime.client.invoke("greeting.say", {"name": "x"}, timeout=0.05)
        message = str(caught.value)
        assert "greeting.say" in message
        assert held[0].invocation_id and held[0].invocation_id in message
        assert "0.05 s" in message
        with pytest.raises(TimeoutError, match="preflight.*0.05 s"):
            runtime.client.preflight([("greeting.say", {"name": "x"})], timeout=0.05)
        for request in held:
            request.close()


def test_keyboard_interrupt_while_waiting_cancels(catalog):
    held = []
    with rcip.Runtime(catalog, policy=deferring_policy(held)) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "x"})
        token = rcip.CancelToken()
        original = rcip.PendingOutcome.result

        def interrupted(self, timeout=None):
            raise KeyboardInterrupt

        rcip.PendingOutcome.result = interrupted
        try:
            with pytest.raises(KeyboardInterrupt):
                runtime.client.invoke("greeting.say", {"name": "x"}, cancel=token)
        finally:
            rcip.PendingOutcome.result = original
        assert token.cancelled
        held[0].close()


def test_cancel_from_another_thread(catalog):
    with rcip.Runtime(catalog) as runtime:
        started = threading.Event()

        def handler(inv):
            started.set()
            inv.cancel_token  # a reference of our own
            while not inv.cancelled:
                threading.Event().wait(0.001)
            raise rcip.Aborted()

        runtime.host.bind("greeting.say", handler)
        token = rcip.CancelToken()
        threading.Thread(target=lambda: (started.wait(5), token.cancel())).start()
        assert runtime.client.invoke("greeting.say", {"name": "x"}, cancel=token, timeout=10).code == "EXECUTION_ABORTED"
