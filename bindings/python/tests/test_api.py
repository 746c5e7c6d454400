"""Every public method of the synchronous API."""

from __future__ import annotations

import ctypes
import json
import os
import threading
import time

import pytest
from conftest import CLOCK_START, allow_all

import rcip
from rcip._handle import registry


def hello(inv: rcip.Invocation):
    return {"text": "hello " + inv.input["name"]}


# ----- module -------------------------------------------------------------------------


def test_versions_and_library_path():
    assert rcip.abi_version() == rcip.EXPECTED_ABI_VERSION
    assert rcip.library_version() == "0.1.0"
    assert rcip.__version__ == "0.1.0"
    assert os.path.exists(rcip.library_path())
    assert "NULL" in rcip.result_str(rcip.Result.NULL_ARGUMENT) or rcip.result_str(100)


# ----- catalog and schema ---------------------------------------------------------------


def test_catalog_from_dict_text_bytes_and_file(catalog_dict, tmp_path):
    rcip.Catalog(catalog_dict).close()
    rcip.Catalog(json.dumps(catalog_dict)).close()
    rcip.Catalog(json.dumps(catalog_dict).encode()).close()
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(catalog_dict))
    with rcip.Catalog.from_file(str(path)) as c:
        assert not c.closed
    assert c.closed


def test_invalid_catalog_raises_with_code_and_message(catalog_dict):
    catalog_dict["capabilities"][0]["scopeIDs"] = []  # an unknown key (typo)
    with pytest.raises(rcip.InvalidCatalogError) as info:
        rcip.Catalog(catalog_dict)
    assert info.value.code == rcip.Result.INVALID_CATALOG
    assert info.value.message
    assert isinstance(info.value, rcip.RcipError)


def test_catalog_check_reports_every_problem(catalog_dict):
    assert rcip.Catalog.check(catalog_dict).ok
    catalog_dict["capabilities"][0]["id"] = "Bad"
    catalog_dict["capabilities"][1]["scopeIds"] = ["nope"]
    report = rcip.Catalog.check(catalog_dict)
    assert not report.ok
    assert len(report.problems) >= 2
    assert all(p.pointer.startswith("/") for p in report.problems)
    assert rcip.Catalog.check("{not json").ok is False


def test_catalog_use_after_close_raises_value_error(catalog):
    catalog.close()
    catalog.close()  # idempotent
    with pytest.raises(ValueError):
        rcip.Runtime(catalog)


def test_schema_validate():
    schema = rcip.Schema({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert schema.validate({"n": 1}).valid
    result = schema.validate({"n": "x"})
    assert not result.valid
    assert [(i.instance_path, i.keyword) for i in result.issues] == [("/n", "type")]
    assert not schema.validate(rcip.RawJson("[]")).valid
    with pytest.raises(rcip.InvalidJsonError):
        schema.validate(rcip.RawJson("{nope"))
    with pytest.raises(rcip.InvalidArgumentError):
        rcip.Schema({"type": "object", "frobnicate": 1})  # strict mode refuses unknown keywords
    assert rcip.Schema(True).validate(5).valid
    schema.close()
    with pytest.raises(ValueError):
        schema.validate({})


# ----- runtime with the default policy ---------------------------------------------------


def test_invoke_succeeds_and_outcome_is_typed(catalog):
    runtime = rcip.Runtime(catalog)
    with runtime.host.bind("greeting.say", hello):
        outcome = runtime.client.invoke("greeting.say", {"name": "Ada"})
    assert outcome.ok and outcome.status == rcip.Status.SUCCEEDED and outcome.status == "succeeded"
    assert outcome.output == {"text": "hello Ada"}
    assert outcome.error is None and outcome.code is None
    assert outcome.capability_id == "greeting.say"
    assert outcome.invocation_id
    d = outcome.to_dict()
    assert d == {"status": "succeeded", "invocationId": outcome.invocation_id, "capabilityId": "greeting.say", "output": {"text": "hello Ada"}}
    d["output"] = None
    assert outcome.to_dict()["output"] == {"text": "hello Ada"}  # a fresh copy each time
    runtime.close()


def test_default_policy_outcomes(catalog):
    with rcip.Runtime(catalog) as runtime:
        for cap in ("tickets.create", "tickets.purge", "mail.send"):
            runtime.host.bind(cap, lambda inv: {})
        assert runtime.client.invoke("tickets.create", {"title": "x"}).code == "POLICY_DENIED"
        assert runtime.client.invoke("mail.send", {}).code == "POLICY_DENIED"
        outcome = runtime.client.invoke("tickets.purge", {})
        assert outcome.status == rcip.Status.CONFIRMATION_REQUIRED
        assert outcome.confirmation is not None
        assert outcome.confirmation.title == "Purge tickets"
        assert outcome.confirmation.effect == "destructive"
        assert outcome.confirmation.expires_at > 0


def test_invoke_failures_are_outcomes_not_exceptions(catalog):
    with rcip.Runtime(catalog) as runtime:
        client = runtime.client
        assert client.invoke("nope.nothing", {}).code == "CAPABILITY_NOT_FOUND"
        assert client.invoke("greeting.say", {"name": "Ada"}).code == "CAPABILITY_UNBOUND"
        binding = runtime.host.bind("greeting.say", hello)
        bad = client.invoke("greeting.say", {"name": ""})
        assert bad.code == "INPUT_INVALID"
        assert [(i.instance_path, i.keyword) for i in bad.error.validation_issues] == [("/name", "minLength")]
        raw = client.invoke("greeting.say", input_json="{not json")
        assert raw.code == "INPUT_INVALID" and raw.error.validation_issues == ()
        assert client.invoke("greeting.say", input_json=b"\xff\xfe").code == "INPUT_INVALID"
        assert client.invoke("greeting.say", input_json="{\"name\": \"a\u0000b\"}").code == "INPUT_INVALID"
        assert client.invoke("greeting.say", rcip.RawJson('{"name": "Raw"}')).output == {"text": "hello Raw"}
        assert client.invoke("greeting.say", float("nan")).code == "INPUT_INVALID"
        binding.close()


def test_the_issue_bound_is_set_on_the_runtime_and_read_on_the_outcome(catalog):
    """Issue 27: an outcome the issue bound cut short says so
    (``validationIssuesTruncated``), and the bound is a runtime option."""
    bad = {"a": 1, "b": 2, "c": 3}  # required name, three additional properties
    with rcip.Runtime(catalog) as runtime, runtime.host.bind("greeting.say", hello):
        full = runtime.client.invoke("greeting.say", bad)
        assert full.code == "INPUT_INVALID" and len(full.error.validation_issues) == 4
        assert full.error.validation_issues_truncated is False
    with rcip.Runtime(catalog, max_issues=2) as runtime, runtime.host.bind("greeting.say", hello):
        cut = runtime.client.invoke("greeting.say", bad)
        assert cut.code == "INPUT_INVALID"
        assert cut.error.validation_issues == full.error.validation_issues[:2]
        assert cut.error.validation_issues_truncated is True
        assert cut.to_dict()["error"]["validationIssuesTruncated"] is True
        report = runtime.client.preflight([rcip.Proposal("greeting.say", bad)])
        assert report.outcomes[0].error.validation_issues_truncated is True
        assert len(report.outcomes[0].error.validation_issues) == 2
    with rcip.Runtime(catalog, max_issue_bytes=1) as runtime, runtime.host.bind("greeting.say", hello):
        one = runtime.client.invoke("greeting.say", bad)
        assert len(one.error.validation_issues) == 1 and one.error.validation_issues_truncated
    with pytest.raises(rcip.InvalidArgumentError):
        rcip.Runtime(catalog, max_issues=0)


def test_handler_output_forms(catalog):
    with rcip.Runtime(catalog) as runtime:
        outputs = iter([rcip.RawJson('{"text": "raw"}'), {"text": 5}, rcip.RawJson("NaN"), object()])
        errors = []
        runtime._state.on_error = lambda exc, where: errors.append(exc)
        runtime.host.bind("greeting.say", lambda inv: next(outputs))
        invoke = lambda: runtime.client.invoke("greeting.say", {"name": "x"})  # noqa: E731
        assert invoke().output == {"text": "raw"}
        invalid = invoke()
        assert invalid.code == "OUTPUT_INVALID" and invalid.error.validation_issues
        assert invoke().code == "OUTPUT_INVALID"
        assert invoke().code == "EXECUTION_FAILED"  # not JSON-serialisable: a handler failure
        assert isinstance(errors[0], TypeError)


def test_invocation_properties(catalog):
    seen = {}

    def handler(inv: rcip.Invocation):
        seen["id"] = inv.id
        seen["capability_id"] = inv.capability_id
        seen["input"] = inv.input
        seen["input_json"] = inv.input_json
        seen["context"] = inv.semantic_context
        seen["cancelled"] = inv.cancelled
        seen["token_cancelled"] = inv.cancel_token.cancelled
        seen["settled_before"] = inv.settled
        inv.complete({"text": "done"})
        seen["settled_after"] = inv.settled
        with pytest.raises(rcip.AlreadyCompletedError):
            inv.complete({"text": "again"})
        with pytest.raises(rcip.AlreadyCompletedError):
            inv.fail()
        return {"text": "ignored: settled already"}

    with rcip.Runtime(catalog) as runtime:
        runtime.host.set_context(["tickets"], "tickets")
        runtime.host.bind("greeting.say", handler)
        outcome = runtime.client.invoke("greeting.say", {"name": "Ada", "name": "Bo"}, invocation_id="inv-1")  # noqa: F601
    assert outcome.output == {"text": "done"}
    assert outcome.invocation_id == "inv-1" == seen["id"]
    assert seen["capability_id"] == "greeting.say"
    assert seen["input"] == {"name": "Bo"}
    assert json.loads(seen["input_json"]) == {"name": "Bo"}
    assert seen["context"] == {"activeScopeIds": ["tickets"], "primaryScopeId": "tickets"}
    assert seen["cancelled"] is False and seen["token_cancelled"] is False
    assert seen["settled_before"] is False and seen["settled_after"] is True


def test_invocation_id_reuse_while_active(catalog):
    with rcip.Runtime(catalog) as runtime:
        held = []
        runtime.host.bind("greeting.say", lambda inv: held.append(inv.defer()))
        first = runtime.client.submit("greeting.say", {"name": "a"}, invocation_id="same")
        assert not first.done() and first.invocation_id == "same"
        assert runtime.client.invoke("greeting.say", {"name": "b"}, invocation_id="same").code == "INVOCATION_ALREADY_ACTIVE"
        held[0].complete({"text": "ok"})
        assert first.result(1).output == {"text": "ok"}
        held[0].close()


def test_deferred_handler_completed_from_another_thread(catalog):
    with rcip.Runtime(catalog) as runtime:

        def handler(inv: rcip.Invocation):
            inv.defer()
            threading.Thread(target=lambda: (inv.complete({"text": "later"}), inv.close())).start()

        runtime.host.bind("greeting.say", handler)
        assert runtime.client.invoke("greeting.say", {"name": "x"}, timeout=10).output == {"text": "later"}


def test_deferred_handler_dropped_unsettled_fails(catalog):
    import gc

    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", lambda inv: inv.defer() and None)
        future = runtime.client.submit("greeting.say", {"name": "x"})
        gc.collect()  # nobody holds the invocation: its finalizer frees it unsettled
        assert future.result(5).code == "EXECUTION_FAILED"


def test_submit_and_pending_outcome(catalog):
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", hello)
        future = runtime.client.submit("greeting.say", {"name": "Ada"})
        assert future.done()  # settled inline by a synchronous handler
        assert future.result().output == {"text": "hello Ada"}
        assert future.invocation_id == future.result().invocation_id
        assert not future.cancel()


def test_invoke_argument_errors(catalog):
    with rcip.Runtime(catalog) as runtime:
        with pytest.raises(TypeError):
            runtime.client.invoke(5, {})  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            runtime.client.invoke("a\0b", {})
        with pytest.raises(TypeError):
            runtime.client.invoke("greeting.say", {}, cancel="token")  # type: ignore[arg-type]


# ----- snapshot, list, subscribe ---------------------------------------------------------------


def test_snapshot_is_shared_until_revision_changes(catalog):
    with rcip.Runtime(catalog) as runtime:
        first = runtime.client.snapshot()
        assert first.revision == 0
        assert runtime.client.snapshot() is first
        data = first.to_dict()
        assert data["protocolVersion"] == "1.0"
        assert [c["id"] for c in first.capabilities] == [c["id"] for c in catalog_ids()]
        assert first.context == {"activeScopeIds": []}
        assert first.capability("greeting.say")["bound"] is False
        assert first.capability("nope") is None
        runtime.host.bind("greeting.say", hello)
        second = runtime.client.snapshot()
        assert second is not first and second.revision == 1
        assert second.capability("greeting.say")["bound"] is True
        assert second.capability("greeting.say")["availability"] == {"available": True}
        assert json.loads(second.json)["revision"] == 1
        assert "revision=1" in repr(second)


def catalog_ids():
    from conftest import CATALOG

    return CATALOG["capabilities"]


def test_list_capabilities_filters(catalog):
    with rcip.Runtime(catalog) as runtime:
        ids = lambda items: [c["id"] for c in items]  # noqa: E731
        assert len(runtime.client.list_capabilities()) == 5
        assert ids(runtime.client.list_capabilities({"effect": "read"})) == ["greeting.say", "tickets.list"]
        assert ids(runtime.client.list_capabilities(effect="destructive")) == ["tickets.purge"]
        assert ids(runtime.client.list_capabilities(scope_id="tickets")) == ["tickets.list", "tickets.create"]
        runtime.host.bind("tickets.list", lambda inv: {"items": []})
        assert ids(runtime.client.list_capabilities(available_only=True)) == ["tickets.list"]
        runtime.host.set_context(["admin"])
        assert ids(runtime.client.list_capabilities(context="current")) == ["greeting.say", "tickets.purge", "mail.send"]
        assert ids(runtime.client.list_capabilities('{"effect": "write"}')) == ["tickets.create"]
        with pytest.raises(rcip.InvalidArgumentError):
            runtime.client.list_capabilities({"effect": "explode"})
        with pytest.raises(rcip.InvalidArgumentError):
            runtime.client.list_capabilities({"unknown": 1})
        with pytest.raises(rcip.InvalidJsonError):
            runtime.client.list_capabilities("{nope")


def test_subscribe_counts_revisions_until_closed(catalog):
    with rcip.Runtime(catalog) as runtime:
        revisions = []
        sub = runtime.client.subscribe(revisions.append)
        runtime.host.refresh()
        binding = runtime.host.bind("greeting.say", hello)
        runtime.client.invoke("greeting.say", {"name": "x"})  # a success refreshes
        runtime.client.invoke("greeting.say", {"name": ""})  # a failure does not
        binding.set_revision(7)
        binding.set_revision(7)  # unchanged: no refresh
        assert revisions == [1, 2, 3, 4]
        sub.close()
        runtime.host.refresh()
        assert revisions == [1, 2, 3, 4]
        with runtime.client.subscribe(revisions.append):
            runtime.host.refresh()
        runtime.host.refresh()
        assert revisions == [1, 2, 3, 4, 6]


# ----- host ---------------------------------------------------------------------------------


def test_context_set_clear_and_errors(catalog):
    with rcip.Runtime(catalog) as runtime:
        host = runtime.host
        host.set_context(["tickets", "admin", "tickets"], "admin")
        assert runtime.client.snapshot().context == {"activeScopeIds": ["tickets", "admin"], "primaryScopeId": "admin"}
        host.set_context({"activeScopeIds": ["admin"]})
        assert runtime.client.snapshot().context == {"activeScopeIds": ["admin"]}
        with pytest.raises(rcip.UnknownScopeError):
            host.set_context(["nope"])
        with pytest.raises(rcip.PrimaryNotActiveError):
            host.set_context(["tickets"], "admin")
        with pytest.raises(rcip.InvalidArgumentError):
            host.set_context({"activeScopeIds": "tickets"})
        with pytest.raises(rcip.InvalidJsonError):
            host.set_context("{oops")
        with pytest.raises(TypeError):
            host.set_context({"activeScopeIds": []}, "x")
        assert runtime.client.snapshot().context == {"activeScopeIds": ["admin"]}  # errors changed nothing
        host.clear_context()
        assert runtime.client.snapshot().context == {"activeScopeIds": []}


def test_refresh_samples_availability(catalog):
    with rcip.Runtime(catalog) as runtime:
        state = {"up": True}
        runtime.host.bind("greeting.say", hello, availability=lambda: state["up"])
        assert runtime.client.snapshot().capability("greeting.say")["available"] is True
        state["up"] = False
        assert runtime.client.snapshot().capability("greeting.say")["available"] is True  # not until a refresh
        runtime.host.refresh()
        assert runtime.client.snapshot().capability("greeting.say")["available"] is False


def test_availability_answer_forms(catalog):
    with rcip.Runtime(catalog) as runtime:
        answers = iter(
            [
                rcip.Availability(False, "MAINTENANCE", "Back at noon."),
                {"available": False, "reason": "Busy."},
                False,
                {"available": True},
            ]
        )
        current = {}

        def availability():
            return current["a"]

        runtime.host.bind("greeting.say", hello, availability=availability)
        current["a"] = next(answers)
        o = runtime.client.invoke("greeting.say", {"name": "x"})
        assert (o.code, o.error.message) == ("CAPABILITY_UNAVAILABLE", "Back at noon.")
        runtime.host.refresh()
        entry = runtime.client.snapshot().capability("greeting.say")
        assert entry["availability"] == {"available": False, "reasonCode": "MAINTENANCE", "reason": "Back at noon."}
        current["a"] = next(answers)
        assert runtime.client.invoke("greeting.say", {"name": "x"}).error.message == "Busy."
        current["a"] = next(answers)
        assert runtime.client.invoke("greeting.say", {"name": "x"}).code == "CAPABILITY_UNAVAILABLE"
        current["a"] = next(answers)
        assert runtime.client.invoke("greeting.say", {"name": "x"}).ok


def test_bind_errors_and_binding_lifecycle(catalog):
    with rcip.Runtime(catalog) as runtime:
        host = runtime.host
        with pytest.raises(rcip.NotInCatalogError):
            host.bind("nope.nothing", hello)
        with pytest.raises(TypeError):
            host.bind("greeting.say", "not callable")  # type: ignore[arg-type]
        with host.bind("greeting.say", hello) as binding:
            assert binding.installed
            assert binding.capability_id == "greeting.say"
            assert "installed=True" in repr(binding)
            with pytest.raises(rcip.AlreadyBoundError):
                host.bind("greeting.say", hello)
        assert binding.closed and not binding.installed
        assert runtime.client.invoke("greeting.say", {"name": "x"}).code == "CAPABILITY_UNBOUND"
        # A stale binding's unbind changes nothing.
        old = host.bind("greeting.say", hello)
        old.unbind()
        assert not old.installed
        new = host.bind("greeting.say", hello)
        revision = runtime.client.snapshot().revision
        old.unbind()
        assert new.installed and runtime.client.snapshot().revision == revision
        old.close()
        assert new.installed
        new.close()


def test_bindings_on_the_builder(catalog):
    """Handlers bound at creation (**rcip**, ``bindings=``): bound from the
    first snapshot, the outcomes of ``host.bind``, an unknown id refused,
    the handlers released with the runtime."""
    gate = rcip.Availability(False, "GATE_CLOSED", "closed for the test")
    with rcip.Runtime(catalog, bindings={"greeting.say": hello, "tickets.list": (lambda inv: {"items": []}, lambda: gate)}) as runtime:
        snapshot = runtime.client.snapshot()
        assert snapshot.revision == 0 and runtime.stats()["bindings"] == 2
        by_id = {c["id"]: c for c in snapshot.to_dict()["capabilities"]}
        assert by_id["greeting.say"]["bound"] and by_id["greeting.say"]["available"]
        assert by_id["tickets.list"]["bound"] and by_id["tickets.list"]["availability"]["reasonCode"] == "GATE_CLOSED"
        assert not by_id["tickets.create"]["bound"]
        built = [
            runtime.client.invoke("greeting.say", {"name": "x"}, invocation_id="a"),
            runtime.client.invoke("greeting.say", {"name": ""}, invocation_id="b"),
            runtime.client.invoke("tickets.list", {}, invocation_id="c"),
        ]
        with pytest.raises(rcip.AlreadyBoundError):
            runtime.host.bind("greeting.say", hello)
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", hello)
        runtime.host.bind("tickets.list", lambda inv: {"items": []}, lambda: gate)
        assert runtime.client.snapshot().revision == 2
        hosted = [
            runtime.client.invoke("greeting.say", {"name": "x"}, invocation_id="a"),
            runtime.client.invoke("greeting.say", {"name": ""}, invocation_id="b"),
            runtime.client.invoke("tickets.list", {}, invocation_id="c"),
        ]
    assert [o.to_dict() for o in built] == [o.to_dict() for o in hosted]
    assert built[0].output == {"text": "hello x"} and built[1].code == "INPUT_INVALID"
    assert built[2].code == "CAPABILITY_UNAVAILABLE"
    before = len(registry)
    with pytest.raises(rcip.NotInCatalogError):
        rcip.Runtime(catalog, bindings={"greeting.say": hello, "nope.nothing": hello})
    assert len(registry) == before, "a refused builder releases what it registered"


def test_confirmation_approve_decline_and_notices(catalog):
    notices = []
    with rcip.Runtime(catalog, on_confirmation=notices.append) as runtime:
        runtime.host.bind("tickets.purge", lambda inv: {"purged": 3})
        pending = runtime.client.invoke("tickets.purge", {"before": "2026"})
        cid = pending.confirmation.id
        opened = notices[-1]
        assert opened.event == "opened" and opened.confirmation_id == cid
        assert opened.input == {"before": "2026"} and opened.capability_id == "tickets.purge"
        assert opened.invocation_id == pending.invocation_id
        assert opened.to_dict()["event"] == "opened"
        approved = runtime.host.approve(cid)
        assert approved.output == {"purged": 3} and approved.invocation_id == pending.invocation_id
        assert (notices[-1].event, notices[-1].reason) == ("closed", "approved")

        declined = runtime.host.decline(runtime.client.invoke("tickets.purge", {}).confirmation.id)
        assert (declined.status, declined.code) == ("denied", "CONFIRMATION_DECLINED")
        assert notices[-1].reason == "declined"

        missing = runtime.host.resolve_confirmation("confirmation-nope", True)
        assert (missing.code, missing.capability_id) == ("CONFIRMATION_NOT_FOUND", "unknown")


def test_confirmation_resolved_inline_by_the_notice_callback(catalog):
    results = []

    def on_confirmation(notice: rcip.ConfirmationNotice):
        if notice.event == "opened":
            runtime.host.submit_confirmation(notice.confirmation_id, True).add_done_callback(lambda f: results.append(f.result()))

    runtime = rcip.Runtime(catalog, on_confirmation=on_confirmation)
    runtime.host.bind("tickets.purge", lambda inv: {"purged": 1})
    assert runtime.client.invoke("tickets.purge", {}).status == "confirmation_required"
    assert results[0].output == {"purged": 1}
    runtime.close()


def test_a_blocking_approval_inside_the_opened_notice_raises_instead_of_hanging(catalog):
    # The approved run starts once the opened notice returned (include/rcip.h):
    # waiting for it there would never end. A decline is delivered inline.
    seen = []

    def on_confirmation(notice: rcip.ConfirmationNotice):
        seen.append((notice.event, notice.reason))
        if notice.event == "opened" and len(seen) == 1:
            try:
                runtime.host.approve(notice.confirmation_id, timeout=5)
            except rcip.DeadlockError as e:
                seen.append(("raised", "submit_confirmation" in str(e)))
            runtime.host.submit_confirmation(notice.confirmation_id, True).add_done_callback(lambda f: seen.append(("outcome", f.result().status)))
        elif notice.event == "opened":
            seen.append(("declined", runtime.host.decline(notice.confirmation_id, timeout=5).code))

    runtime = rcip.Runtime(catalog, on_confirmation=on_confirmation)
    runtime.host.bind("tickets.purge", lambda inv: {"purged": 1})
    runtime.client.invoke("tickets.purge", {})
    assert seen == [("opened", None), ("raised", True), ("closed", "approved"), ("outcome", "succeeded")]
    seen.clear()
    seen.append(("second", None))
    runtime.client.invoke("tickets.purge", {})
    assert seen[1:] == [("opened", None), ("declined", "CONFIRMATION_DECLINED"), ("closed", "declined")]
    runtime.close()


def test_confirmation_expiry_with_a_manual_clock(catalog, clock):
    events = []
    notices = []
    runtime = rcip.Runtime(
        catalog, clock=clock, manual_timers=True, confirmation_ttl_ms=1000, on_event=events.append, on_confirmation=notices.append
    )
    runtime.host.bind("tickets.purge", lambda inv: {})
    assert runtime.next_deadline() is None
    pending = runtime.client.invoke("tickets.purge", {})
    assert pending.confirmation.expires_at == CLOCK_START + 1000
    assert runtime.next_deadline() == CLOCK_START + 1000
    clock.advance(999)
    runtime.run_due_timers()
    assert runtime.stats()["pendingConfirmations"] == 1
    clock.advance(1)
    runtime.run_due_timers()
    assert runtime.stats()["pendingConfirmations"] == 0
    assert runtime.next_deadline() is None
    assert (events[-1].phase, events[-1].error_code, events[-1].timestamp) == ("failed", "CONFIRMATION_EXPIRED", CLOCK_START + 1000)
    assert notices[-1].reason == "expired"
    receipt = runtime.host.approve(pending.confirmation.id)
    assert receipt.code == "CONFIRMATION_EXPIRED" and receipt.invocation_id == pending.invocation_id
    assert runtime.host.approve(pending.confirmation.id).code == "CONFIRMATION_NOT_FOUND"  # a receipt answers once
    runtime.close()


def test_approval_after_expires_at_is_expired_even_before_the_timer(catalog, clock):
    runtime = rcip.Runtime(catalog, clock=clock, manual_timers=True, confirmation_ttl_ms=10)
    runtime.host.bind("tickets.purge", lambda inv: {})
    cid = runtime.client.invoke("tickets.purge", {}).confirmation.id
    clock.advance(10)
    assert runtime.host.approve(cid).code == "CONFIRMATION_EXPIRED"
    runtime.close()


def test_real_timer_expires_a_confirmation(catalog):
    notices = []
    done = threading.Event()

    def on_confirmation(notice):
        notices.append(notice)
        if notice.event == "closed":
            done.set()

    runtime = rcip.Runtime(catalog, confirmation_ttl_ms=50, on_confirmation=on_confirmation)
    runtime.host.bind("tickets.purge", lambda inv: {})
    runtime.client.invoke("tickets.purge", {})
    assert done.wait(10)
    assert notices[-1].reason == "expired"
    runtime.close()


# ----- policies, events, ids, stats ------------------------------------------------------------------


def test_policy_request_fields_and_decisions(catalog):
    asked = []

    def policy(request: rcip.PolicyRequest):
        asked.append(request)
        assert not request.settled
        if request.confirmed:
            return "allow"  # asking for confirmation again would deny the approved re-run
        return {"tickets.create": rcip.deny("Read-only today."), "tickets.list": "allow", "mail.send": rcip.confirm("Really send?")}.get(
            request.capability_id, rcip.allow()
        )

    with rcip.Runtime(catalog, policy=policy) as runtime:
        for cap in ("tickets.create", "tickets.list", "mail.send"):
            runtime.host.bind(cap, lambda inv: {"items": []})
        runtime.host.set_context(["tickets"])
        denied = runtime.client.invoke("tickets.create", {"title": "t"})
        assert (denied.status, denied.code, denied.error.message) == ("denied", "POLICY_DENIED", "Read-only today.")
        assert runtime.client.invoke("tickets.list", {}).ok
        pending = runtime.client.invoke("mail.send", {"to": "x"})
        assert pending.confirmation.description == "Really send?"
        assert runtime.host.approve(pending.confirmation.id).ok
    first = asked[0]
    assert first.capability["id"] == "tickets.create" and first.effect == "write"
    assert first.input == {"title": "t"}
    assert first.semantic_context == {"activeScopeIds": ["tickets"]}
    assert first.confirmed is False and first.phase == "invoke"
    assert first.invocation_id == denied.invocation_id
    assert json.loads(first.context_json)["capability"]["relevance"] == "current"
    assert asked[-1].confirmed is True  # the approved re-run asks again
    assert "mail.send" in repr(asked[-1])


def test_policy_decides_through_methods_and_defers(catalog):
    held = []

    def policy(request: rcip.PolicyRequest):
        if request.capability_id == "tickets.create":
            request.deny("by method")
            return None
        held.append(request.defer())
        return None

    with rcip.Runtime(catalog, policy=policy) as runtime:
        runtime.host.bind("tickets.create", lambda inv: {})
        runtime.host.bind("mail.send", lambda inv: {"sent": True})
        assert runtime.client.invoke("tickets.create", {"title": "x"}).error.message == "by method"
        future = runtime.client.submit("mail.send", {})
        assert not future.done()
        threading.Thread(target=lambda: (held[0].allow(), held[0].close())).start()
        assert future.result(10).output == {"sent": True}
        with pytest.raises(rcip.AlreadyCompletedError):
            held[0].fail() if not held[0].closed else (_ for _ in ()).throw(rcip.AlreadyCompletedError(301, "closed"))


def test_policy_hands_back_to_the_default_policy(catalog):
    def policy(request: rcip.PolicyRequest):
        if request.capability_id == "mail.send":
            request.allow()
        else:
            request.decide_default()
        assert request.settled

    with rcip.Runtime(catalog, policy=policy) as runtime:
        for cap in ("tickets.create", "tickets.purge", "mail.send"):
            runtime.host.bind(cap, lambda inv: {})
        assert runtime.client.invoke("mail.send", {}).status == rcip.Status.SUCCEEDED
        assert runtime.client.invoke("tickets.create", {"title": "x"}).code == "POLICY_DENIED"
        purge = runtime.client.invoke("tickets.purge", {})
        assert purge.status == rcip.Status.CONFIRMATION_REQUIRED
        assert purge.confirmation.description == "Deletes every closed ticket."


def test_events_are_redacted_and_ordered(catalog, clock):
    events = []
    with rcip.Runtime(catalog, on_event=events.append, clock=clock) as runtime:
        runtime.host.bind("greeting.say", hello)
        runtime.client.invoke("greeting.say", {"name": "Ada"}, invocation_id="i1")
        runtime.client.invoke("greeting.say", {"name": ""}, invocation_id="i2")
    assert [(e.invocation_id, e.phase, e.error_code) for e in events] == [
        ("i1", "requested", None),
        ("i1", "started", None),
        ("i1", "succeeded", None),
        ("i2", "requested", None),
        ("i2", "failed", "INPUT_INVALID"),
    ]
    assert events[0].to_dict() == {"timestamp": CLOCK_START, "invocationId": "i1", "capabilityId": "greeting.say", "phase": "requested"}
    assert events[-1].to_dict()["errorCode"] == "INPUT_INVALID"


def test_coroutine_observers_without_a_loop_are_refused(catalog):
    async def on_event(event):
        pass

    with pytest.raises(ValueError):
        rcip.Runtime(catalog, on_event=on_event)


def test_id_generator_and_fallback(catalog):
    counter = {"n": 0}

    def ids(prefix: str):
        counter["n"] += 1
        return None if counter["n"] == 2 else "%s-%d" % (prefix, counter["n"])

    with rcip.Runtime(catalog, id_generator=ids) as runtime:
        runtime.host.bind("greeting.say", hello)
        runtime.host.bind("tickets.purge", lambda inv: {})
        assert runtime.client.invoke("greeting.say", {"name": "x"}).invocation_id == "invocation-1"
        assert runtime.client.invoke("greeting.say", {"name": "x"}).invocation_id.startswith("invocation_")  # built-in
        assert runtime.client.invoke("tickets.purge", {}).confirmation.id.startswith("confirmation-")


def test_stats_and_limits(catalog):
    with rcip.Runtime(catalog, max_payload_len=64, max_depth=3) as runtime:
        stats = runtime.stats()
        assert stats["revision"] == 0 and stats["bindings"] == 0 and stats["closed"] is False
        runtime.host.bind("tickets.list", lambda inv: {"items": []})
        assert runtime.stats()["bindings"] == 1
        assert runtime.client.invoke("tickets.list", {"a": "x" * 100}).code == "INPUT_INVALID"
        assert runtime.client.invoke("tickets.list", {"a": {"b": {"c": {}}}}).code == "INPUT_INVALID"
        assert runtime.client.invoke("tickets.list", {"a": {"b": 1}}).ok
    with pytest.raises(rcip.InvalidArgumentError):
        rcip.Runtime(catalog, max_depth=0)
    with pytest.raises(rcip.InvalidArgumentError):
        rcip.Runtime(catalog, confirmation_ttl_ms=0)


# ----- preflight ---------------------------------------------------------------------------------------------


def test_preflight_reports(catalog):
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", hello)
        runtime.host.bind("tickets.purge", lambda inv: {})
        runtime.host.bind("tickets.create", lambda inv: {})
        report = runtime.client.preflight(
            [
                ("greeting.say", {"name": "Ada"}),
                rcip.Proposal("tickets.purge", {}),
                {"capabilityId": "tickets.create", "input": {"title": "x"}},
                {"capability_id": "greeting.say", "input_json": "{nope"},
                rcip.Proposal("nope.nothing", {}),
            ]
        )
        assert report.consistent and report.revision == runtime.client.snapshot().revision
        assert [(o.status, o.error.code if o.error else None) for o in report.outcomes] == [
            ("ready", None),
            ("confirmation_required", None),
            ("blocked", "POLICY_DENIED"),
            ("blocked", "INPUT_INVALID"),
            ("blocked", "CAPABILITY_NOT_FOUND"),
        ]
        assert report.outcomes[0].effect == "read"
        assert report.outcomes[1].reason == "Deletes every closed ticket."
        assert report.to_dict()["outcomes"][0]["status"] == "ready"
        assert runtime.stats()["reservedIds"] == 0
        with pytest.raises(rcip.PreflightBatchInvalidError):
            runtime.client.preflight([])
        with pytest.raises(rcip.PreflightBatchInvalidError):
            runtime.client.preflight([("greeting.say", {"name": "x"})] * 17)
        with pytest.raises(TypeError):
            runtime.client.preflight([42])  # type: ignore[list-item]


def test_preflight_policy_phase(catalog):
    phases = []

    def policy(request):
        phases.append((request.phase, request.invocation_id))
        return "allow"

    with rcip.Runtime(catalog, policy=policy) as runtime:
        runtime.host.bind("tickets.create", lambda inv: {})
        report = runtime.client.preflight([("tickets.create", {"title": "x"})])
        assert report.outcomes[0].status == "ready"
    assert phases == [("preflight", None)]


# ----- closing --------------------------------------------------------------------------------------------


def test_close_aborts_pending_and_views_refuse_use(catalog):
    held = []
    runtime = rcip.Runtime(catalog, policy=allow_all)
    binding = runtime.host.bind("greeting.say", lambda inv: held.append(inv.defer()))
    future = runtime.client.submit("greeting.say", {"name": "x"})
    client, host = runtime.client, runtime.host
    runtime.close()
    assert runtime.closed
    assert future.result(1).code == "EXECUTION_ABORTED"
    assert held[0].cancelled  # the runtime closing cancels the handler's token
    held[0].complete({"text": "late"})  # a late completion is ignored (OK)
    held[0].close()
    for call in (
        lambda: client.invoke("greeting.say", {"name": "x"}),
        lambda: client.snapshot(),
        lambda: host.refresh(),
        lambda: host.bind("greeting.say", hello),
        lambda: runtime.stats(),
    ):
        with pytest.raises(ValueError):
            call()
    assert not binding.installed
    with pytest.raises(rcip.ClosedError):
        binding.unbind()
    binding.close()
    runtime.close()  # idempotent


def test_close_from_inside_a_handler(catalog):
    runtime = rcip.Runtime(catalog)
    seen = []

    def handler(inv):
        runtime.close()  # at once; only the free waits for the invoke call in progress
        seen.append(inv.cancelled)
        with pytest.raises(ValueError):
            runtime.host.refresh()
        return {"text": "closing"}

    runtime.host.bind("greeting.say", handler)
    future = runtime.client.submit("greeting.say", {"name": "x"})
    assert runtime.closed
    assert seen == [True]
    assert future.result(1).code == "EXECUTION_ABORTED"


def test_close_from_another_thread_aborts_a_running_handler(catalog):
    baseline = len(registry)
    runtime = rcip.Runtime(catalog)
    started = threading.Event()
    seen = []

    def handler(inv):
        started.set()
        deadline = time.monotonic() + 5
        while not inv.cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        seen.append(inv.cancelled)
        return {"text": "finished"}

    runtime.host.bind("greeting.say", handler)
    outcomes = []
    thread = threading.Thread(target=lambda: outcomes.append(runtime.client.invoke("greeting.say", {"name": "x"})))
    thread.start()
    assert started.wait(5)
    runtime.close()  # the invoke call in progress is not waited for
    assert runtime.closed
    with pytest.raises(ValueError):
        runtime.client.invoke("greeting.say", {"name": "x"})
    thread.join(10)
    assert seen == [True]
    assert outcomes[0].code == "EXECUTION_ABORTED"
    assert len(registry) == baseline  # freed when the invoke call returned


def test_calls_that_began_before_close_raise_value_error(catalog):
    """A call already past the closed check when another thread closes the
    runtime gets the library's CLOSED: the same ValueError as after close()."""
    runtime = rcip.Runtime(catalog)
    binding = runtime.host.bind("greeting.say", hello)
    with runtime._handle.use() as ptr:
        assert rcip._lib.lib.rcip_runtime_close(ctypes.c_void_p(ptr)) == 0  # as another thread's close() would
    baseline = len(registry)
    for call in (
        lambda: runtime.client.invoke("greeting.say", {"name": "x"}),
        lambda: runtime.client.submit_preflight([("greeting.say", {"name": "x"})]),
        lambda: runtime.client.subscribe(print),
        lambda: runtime.host.bind("tickets.list", hello),
        lambda: runtime.host.set_context(["tickets"]),
        lambda: runtime.host.refresh(),
        lambda: runtime.host.submit_confirmation("c", True),
        lambda: runtime.run_due_timers(),
    ):
        with pytest.raises(ValueError, match="the runtime is closed"):
            call()
    assert len(registry) == baseline
    assert not binding.installed
    runtime.close()


def test_on_outcome_callbacks_run_as_the_library_delivers(catalog):
    order = []
    with rcip.Runtime(catalog, on_event=lambda e: order.append(e.phase)) as runtime:
        runtime.host.bind("greeting.say", hello)
        runtime.host.bind("tickets.purge", lambda inv: {})
        future = runtime.client.submit("greeting.say", {"name": "x"}, on_outcome=lambda o: order.append(o.status))
        assert future.done() and order == ["requested", "started", "succeeded", "succeeded"]
        report = runtime.client.submit_preflight([("greeting.say", {"name": "x"})], on_report=lambda r: order.append("report"))
        assert report.done() and order[-1] == "report"
        cid = runtime.client.invoke("tickets.purge", {}).confirmation.id
        runtime.host.submit_confirmation(cid, False, on_outcome=lambda o: order.append(o.code))
        assert order[-1] == "CONFIRMATION_DECLINED"
        errors = []
        runtime._state.on_error = lambda exc, where: errors.append(where)
        assert runtime.client.submit("greeting.say", {"name": "x"}, on_outcome=lambda o: 1 / 0).result().ok  # contained
        assert errors == ["an outcome callback"]
        with pytest.raises(TypeError):
            runtime.client.submit("greeting.say", {"name": "x"}, on_outcome="nope")  # type: ignore[arg-type]


def test_a_confirmation_carried_to_another_runtime(catalog):
    """PIPELINE.md section 5, "Confirmations that cross runtimes": carried
    out of the runtime that opened it, answered in another of the same
    catalog (rcip)."""
    ran = []
    with rcip.Runtime(catalog) as opening:
        opening.host.bind("tickets.purge", lambda inv: {"purged": 1})
        pending = opening.client.invoke("tickets.purge", {"before": "2026"})
        carried = opening.host.carry_confirmation(pending.confirmation.id)
        assert set(carried) == {"confirmationId", "invocationId", "capabilityId", "expiresAt", "context"}
        assert carried["invocationId"] == pending.invocation_id
        with pytest.raises(rcip.NotFoundError):
            opening.host.carry_confirmation("confirmation-nope")
    with rcip.Runtime(catalog) as other:
        # Not bound here: the approval is denied, as a changed binding is.
        unbound = other.host.resume_confirmation(carried, True, {"before": "2026"})
        assert (unbound.status, unbound.code) == ("denied", "POLICY_DENIED")
        other.host.bind("tickets.purge", lambda inv: ran.append(inv.input) or {"purged": 2})
        declined = other.host.resume_confirmation(carried, False, {"before": "2026"})
        assert (declined.status, declined.code) == ("denied", "CONFIRMATION_DECLINED")
        approved = other.host.resume_confirmation(carried, True, {"before": "2026"})
        assert approved.status == "succeeded" and approved.output == {"purged": 2}
        assert approved.invocation_id == pending.invocation_id
        assert ran == [{"before": "2026"}]
        with pytest.raises(rcip.InvalidArgumentError):
            other.host.resume_confirmation(dict(carried, expiresAt="soon"), True, {})
