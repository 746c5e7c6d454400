"""Runs a conformance scenario (tests/conformance/scenarios, format in the
conformance FORMAT.md) through the Python binding, and compares transcripts.

    python conformance_runner.py SCENARIO.json      print the transcript
    python conformance_runner.py check DIR|FILE...  run, compare, "N passed, M failed"

Each step maps onto the public ``rcip`` API the way conformance/src/run.rs
maps it onto the C ABI: a manual clock starting at 1767225600000, manual
timers, a scripted policy, scripted handlers and availability checks.
The comparison rules are those of the shared compare.py, ported here so the
repository does not depend on files outside it.
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Tuple

import rcip

CLOCK_START = 1767225600000

_ERROR_KINDS = {
    rcip.Result.INVALID_CATALOG: "INVALID_CATALOG",
    rcip.Result.NOT_IN_CATALOG: "NOT_IN_CATALOG",
    rcip.Result.ALREADY_BOUND: "ALREADY_BOUND",
    rcip.Result.UNKNOWN_SCOPE: "UNKNOWN_SCOPE",
    rcip.Result.PRIMARY_NOT_ACTIVE: "PRIMARY_NOT_ACTIVE",
    rcip.Result.INVALID_ARGUMENT: "INVALID_ARGUMENT",
    rcip.Result.INVALID_JSON: "INVALID_ARGUMENT",
    rcip.Result.PREFLIGHT_BATCH_INVALID: "PREFLIGHT_BATCH_INVALID",
}


def kind(error: rcip.RcipError) -> str:
    return _ERROR_KINDS.get(error.code, "UNEXPECTED_RESULT")


class _Throw(Exception):
    """A scripted callback failure."""


class _Call:
    def __init__(self, future: Optional[rcip.PendingOutcome], preflight: bool, invocation_id: Optional[str] = None) -> None:
        self.future = future
        self.preflight = preflight
        self.invocation_id = invocation_id
        self.error: Optional[str] = None

    def entry(self) -> Dict[str, Any]:
        if self.error is not None:
            return {"error": self.error}
        if self.future is None or not self.future.done():
            return {"pending": True}
        result = self.future.result()
        return {"report": result.to_dict()} if self.preflight else {"outcome": result.to_dict()}


class Runner:
    def __init__(self, scenario: Dict[str, Any]) -> None:
        self.scenario = scenario
        self.clock = rcip.ManualClock(CLOCK_START)
        self.events: List[Dict[str, Any]] = []
        self.policy_calls: List[Dict[str, Any]] = []
        self.handler_calls: List[Dict[str, Any]] = []
        self.policy_script: List[Any] = []
        self.policy_index = 0
        self.deferred_policies: Deque[rcip.PolicyRequest] = deque()
        self.deferred_handlers: Dict[str, rcip.Invocation] = {}
        self.bindings: Dict[str, Tuple[rcip.Binding, List[Any]]] = {}
        self.old_bindings: List[rcip.Binding] = []
        self.subs: Dict[str, List[Any]] = {}  # name -> [subscription, count, seen]
        self.tokens: Dict[str, rcip.CancelToken] = {}
        self.calls: Dict[str, _Call] = {}
        self.runtime: Optional[rcip.Runtime] = None

    # ----- callbacks -----------------------------------------------------------

    def on_event(self, event: rcip.Event) -> None:
        self.events.append(event.to_dict())

    def policy(self, request: rcip.PolicyRequest) -> Any:
        ctx = request.context
        cap = ctx["capability"]
        self.policy_calls.append(
            {
                "capabilityId": cap["id"],
                "input": ctx["input"],
                "semanticContext": ctx["semanticContext"],
                "confirmed": ctx["confirmed"],
                "phase": ctx["phase"],
                "bound": cap["bound"],
                "available": cap["available"],
                "relevance": cap["relevance"],
            }
        )
        i = min(self.policy_index, len(self.policy_script) - 1)
        self.policy_index += 1
        entry = self.policy_script[i]
        if entry == "defer":
            self.deferred_policies.append(request.defer())
            return None
        return self.settle_policy(request, entry)

    @staticmethod
    def settle_policy(request: rcip.PolicyRequest, entry: Any) -> Any:
        decision = entry if isinstance(entry, str) else entry.get("decision")
        if decision == "throw":
            raise _Throw("scripted policy failure")
        if decision == "invalid":
            return {"decision": "maybe"}
        body = {"decision": decision}
        if isinstance(entry, dict) and "reason" in entry:
            body["reason"] = entry["reason"]
        return body

    def make_handler(self, script: Any):
        def handler(inv: rcip.Invocation) -> Any:
            self.handler_calls.append(
                {
                    "capabilityId": inv.capability_id,
                    "invocationId": inv.id,
                    "input": inv.input,
                    "semanticContext": inv.semantic_context,
                }
            )
            if script == "defer":
                self.deferred_handlers[inv.id] = inv.defer()
                return None
            if "return" in script:
                return script["return"]
            if script.get("echo") is True:
                return rcip.RawJson(inv.input_json)
            if "returnRaw" in script:
                return rcip.RawJson(script["returnRaw"])
            if "throw" in script:
                if script["throw"] == "abort":
                    raise rcip.Aborted()
                raise _Throw("scripted handler failure")
            raise AssertionError("unknown handler script %r" % (script,))

        return handler

    @staticmethod
    def make_availability(cell: List[Any]):
        def availability() -> Any:
            script = cell[0]
            if script is None:
                return True
            if script == "throw":
                raise _Throw("scripted availability failure")
            return {
                "available": bool(script.get("available", False)),
                **({"reasonCode": script["reasonCode"]} if "reasonCode" in script else {}),
                **({"reason": script["reason"]} if "reason" in script else {}),
            }

        return availability

    # ----- the run ---------------------------------------------------------------

    def run(self) -> Dict[str, Any]:
        try:
            catalog = rcip.Catalog(self.scenario["catalog"])
        except rcip.RcipError as e:
            return {"create": {"error": kind(e)}, "transcript": []}
        options = self.scenario.get("options") or {}
        policy = options.get("policy")
        if isinstance(policy, list):
            self.policy_script = policy
        ttl = options.get("confirmationTtlMs")
        self.runtime = rcip.Runtime(
            catalog,
            policy=self.policy if isinstance(policy, list) else None,
            on_event=self.on_event,
            clock=self.clock,
            manual_timers=True,
            confirmation_ttl_ms=ttl,
            on_error=lambda exc, where: None,  # scripted failures are expected
        )
        catalog.close()
        transcript = []
        try:
            for step in self.scenario.get("steps", []):
                transcript.append(self.step(step))
        finally:
            self.teardown()
        return {"create": {"ok": True}, "transcript": transcript}

    def token(self, name: str) -> rcip.CancelToken:
        if name not in self.tokens:
            self.tokens[name] = rcip.CancelToken()
        return self.tokens[name]

    def token_of(self, step: Dict[str, Any]) -> Optional[rcip.CancelToken]:
        name = step.get("cancel")
        return self.token(name) if isinstance(name, str) else None

    def step(self, step: Dict[str, Any]) -> Dict[str, Any]:
        assert self.runtime is not None
        client, host = self.runtime.client, self.runtime.host
        op = step.get("op")
        ok = {"ok": True}
        if op == "bind":
            cell = [step.get("availability")]
            try:
                binding = host.bind(step["capabilityId"], self.make_handler(step["handler"]), self.make_availability(cell))
            except rcip.RcipError as e:
                return {"error": kind(e)}
            old = self.bindings.get(step["binding"])
            if old is not None:
                self.old_bindings.append(old[0])
            self.bindings[step["binding"]] = (binding, cell)
            return ok
        if op == "unbind":
            self.bindings[step["binding"]][0].unbind()
            return ok
        if op == "set_availability":
            self.bindings[step["binding"]][1][0] = step.get("availability")
            return ok
        if op == "set_context":
            try:
                host.set_context(step["context"])
            except rcip.RcipError as e:
                return {"error": kind(e)}
            return ok
        if op == "clear_context":
            host.clear_context()
            return ok
        if op == "refresh":
            host.refresh()
            return ok
        if op == "snapshot":
            return {"snapshot": client.snapshot().to_dict()}
        if op == "list":
            try:
                listed = client.list_capabilities(step.get("filter", {}))
            except rcip.RcipError as e:
                return {"error": kind(e)}
            return {"ids": [c["id"] for c in listed]}
        if op == "subscribe":
            counter = [None, 0, 0]

            def notified(_revision: int, counter: List[Any] = counter) -> None:
                counter[1] += 1

            counter[0] = client.subscribe(notified)
            self.subs[step["sub"]] = counter
            return ok
        if op == "unsubscribe":
            sub = self.subs.get(step["sub"])
            if sub is not None and sub[0] is not None:
                sub[0].close()
                sub[0] = None
            return ok
        if op == "notifications":
            sub = self.subs[step["sub"]]
            n = sub[1] - sub[2]
            sub[2] = sub[1]
            return {"count": n}
        if op == "invoke":
            request = step["request"]
            raw = request.get("inputRaw")
            future = client.submit(
                request.get("capabilityId", ""),
                request.get("input"),
                input_json=raw if isinstance(raw, str) else None,
                invocation_id=request.get("invocationId"),
                cancel=self.token_of(step),
            )
            call = _Call(future, False, future.invocation_id)
            if isinstance(step.get("call"), str):
                self.calls[step["call"]] = call
            return call.entry()
        if op == "confirm":
            if isinstance(step.get("confirmationId"), str):
                confirmation_id, invocation_id = step["confirmationId"], None
            else:
                outcome = self.calls[step["of"]].future.result()  # type: ignore[union-attr]
                confirmation_id = outcome.confirmation.id
                invocation_id = outcome.invocation_id
            future = host.submit_confirmation(confirmation_id, bool(step.get("approved")))
            call = _Call(future, False, invocation_id)
            if isinstance(step.get("call"), str):
                self.calls[step["call"]] = call
            return call.entry()
        if op == "await":
            call = self.calls.get(step.get("call", ""))
            return call.entry() if call is not None else {"error": "UNKNOWN_CALL"}
        if op == "policy":
            request = self.deferred_policies.popleft()
            entry = "throw" if step.get("throw") is True else step.get("decision")
            try:
                decision = self.settle_policy(request, entry)
                request.decide(decision)
            except _Throw:
                request.fail()
            except rcip.InvalidArgumentError:
                pass  # "invalid": the library settled it as a policy failure
            request.close()
            return ok
        if op in ("complete", "fail"):
            invocation_id = self.calls[step["call"]].invocation_id
            inv = self.deferred_handlers.pop(invocation_id or "")
            if op == "complete":
                if isinstance(step.get("outputRaw"), str):
                    inv.complete_json(step["outputRaw"])
                else:
                    inv.complete(step.get("output"))
            else:
                inv.fail(aborted=step.get("abort") is True)
            inv.close()
            return ok
        if op == "cancel":
            self.token(step["token"]).cancel()
            return ok
        if op == "advance":
            self.clock.advance(int(step.get("ms", 0)))
            self.runtime.run_due_timers()
            return ok
        if op == "events":
            out, self.events = self.events, []
            return {"events": out}
        if op == "policy_calls":
            out, self.policy_calls = self.policy_calls, []
            return {"calls": out}
        if op == "handler_calls":
            out, self.handler_calls = self.handler_calls, []
            return {"calls": out}
        if op == "preflight":
            proposals = [
                rcip.Proposal(r.get("capabilityId", ""), r.get("input"), r.get("inputRaw") if isinstance(r.get("inputRaw"), str) else None)
                for r in step.get("requests", [])
            ]
            try:
                call = _Call(client.submit_preflight(proposals, cancel=self.token_of(step)), True)
            except rcip.RcipError as e:
                call = _Call(None, True)
                call.error = kind(e)
            if isinstance(step.get("call"), str):
                self.calls[step["call"]] = call
            return call.entry()
        return {"error": "UNKNOWN_OP %s" % op}

    def teardown(self) -> None:
        if self.runtime is not None:
            self.runtime.close()
        for request in self.deferred_policies:
            request.close()
        for inv in self.deferred_handlers.values():
            inv.close()
        for binding, _ in self.bindings.values():
            binding.close()
        for binding in self.old_bindings:
            binding.close()
        for sub in self.subs.values():
            if sub[0] is not None:
                sub[0].close()
        for token in self.tokens.values():
            token.close()


def run(scenario: Dict[str, Any]) -> Dict[str, Any]:
    return Runner(scenario).run()


# ----- comparison (the rules of the shared compare.py) ---------------------------------------

ID_KINDS = ("invocation", "confirmation")


def normalise_ids(value: Any, maps: Dict[str, Dict[str, str]], parent_key: Optional[str] = None) -> Any:
    if isinstance(value, list):
        return [normalise_ids(v, maps, parent_key) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key in sorted(value):
        v = value[key]
        id_kind = None
        if key == "invocationId":
            id_kind = "invocation"
        elif key == "id" and parent_key == "confirmation":
            id_kind = "confirmation"
        if id_kind and isinstance(v, str):
            seen = maps[id_kind]
            seen.setdefault(v, "<%s#%d>" % (id_kind, len(seen) + 1))
            out[key] = seen[v]
        else:
            out[key] = normalise_ids(v, maps, key)
    return out


def host_reasons(scenario: Dict[str, Any]) -> set:
    found = set()

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "reason" and isinstance(x, str):
                    found.add(x)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk((scenario.get("options") or {}).get("policy"))
    walk(scenario.get("steps"))
    return found


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _same_double(a: Any, b: Any) -> bool:
    try:
        return float(a) == float(b)
    except OverflowError:
        return a == b


def _show(v: Any) -> str:
    return json.dumps(v, sort_keys=True)[:300]


def diff(actual: Any, expected: Any, path: str, reasons: set, in_error: bool = False) -> Optional[str]:
    if _is_number(actual) and _is_number(expected):
        return None if _same_double(actual, expected) else "%s: expected %s, got %s" % (path, _show(expected), _show(actual))
    if type(actual) is not type(expected):
        return "%s: expected %s, got %s" % (path, _show(expected), _show(actual))
    if isinstance(expected, dict):
        missing = sorted(set(expected) - set(actual))
        if missing:
            return "%s: missing key %r (expected %s)" % (path, missing[0], _show(expected[missing[0]]))
        extra = sorted(set(actual) - set(expected))
        if extra:
            return "%s: unexpected key %r (got %s)" % (path, extra[0], _show(actual[extra[0]]))
        for key in sorted(expected):
            sub = "%s.%s" % (path, key)
            a, e = actual[key], expected[key]
            if in_error and key == "message":
                if not isinstance(a, str):
                    return "%s: expected a message string, got %s" % (sub, _show(a))
                if e in reasons and a != e:
                    return "%s: expected host-supplied text %s, got %s" % (sub, _show(e), _show(a))
                continue
            if key == "reason" and expected.get("reasonCode") == "AVAILABILITY_CHECK_FAILED":
                if not isinstance(a, str) or not a:
                    return "%s: expected a reason string, got %s" % (sub, _show(a))
                continue
            if in_error and key == "validationIssues":
                problem = _diff_issues(a, e, sub)
            else:
                problem = diff(a, e, sub, reasons, key == "error")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if len(actual) != len(expected):
            return "%s: expected %d items, got %d (expected %s, got %s)" % (path, len(expected), len(actual), _show(expected), _show(actual))
        for i, (a, e) in enumerate(zip(actual, expected)):
            problem = diff(a, e, "%s[%d]" % (path, i), reasons)
            if problem:
                return problem
        return None
    return None if actual == expected else "%s: expected %s, got %s" % (path, _show(expected), _show(actual))


def _diff_issues(actual: Any, expected: Any, path: str) -> Optional[str]:
    def keys(issues: Any) -> Optional[List[Tuple[str, str]]]:
        if not isinstance(issues, list) or not all(isinstance(i, dict) for i in issues):
            return None
        return sorted((str(i.get("instancePath")), str(i.get("keyword"))) for i in issues)

    a, e = keys(actual), keys(expected)
    if a is None:
        return "%s: expected a list of issues, got %s" % (path, _show(actual))
    if a != e:
        return "%s: expected issues %s, got %s" % (path, e, a)
    return None


def compare(output: Any, scenario: Dict[str, Any]) -> Optional[str]:
    expected = scenario["expected"]
    if not isinstance(output, dict):
        return "$: runner output is not an object"
    reasons = host_reasons(scenario)
    for key in ("create", "transcript"):
        if key not in output:
            return "$: runner output has no %r" % key
        a = normalise_ids(output[key], {k: {} for k in ID_KINDS})
        e = normalise_ids(expected[key], {k: {} for k in ID_KINDS})
        problem = diff(a, e, "$." + key, reasons)
        if problem:
            return problem
    return None


def scenario_files(paths: List[str]) -> List[str]:
    files: List[str] = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, n) for n in os.listdir(p) if n.endswith(".json"))
        else:
            files.append(p)
    return files


def main(argv: List[str]) -> int:
    if len(argv) >= 2 and argv[0] == "check":
        passed = failed = 0
        for path in scenario_files(argv[1:]):
            with open(path, encoding="utf-8") as f:
                scenario = json.load(f)
            try:
                problem = compare(run(scenario), scenario)
            except Exception as exc:  # noqa: BLE001 - one scenario fails, not the run
                problem = "%s: %s" % (type(exc).__name__, exc)
            if problem:
                failed += 1
                print("FAIL %s\n     %s" % (path, problem))
            else:
                passed += 1
        print("%d passed, %d failed" % (passed, failed))
        return 1 if failed else 0
    if len(argv) == 1:
        with open(argv[0], encoding="utf-8") as f:
            print(json.dumps(run(json.load(f))))
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
