//! Confirmations that cross runtimes (**rcip**, PIPELINE.md section 5): a
//! confirmation opened in one runtime (a stateless request's) and resumed in
//! another of the same catalog, as the MCP server does for 2026-07-28
//! requests.

use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{CarriedConfirmation, Invocation, LifecycleEvent, Runtime, RuntimeBuilder, SemanticContext};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

const T0: i64 = 1_767_225_600_000;

fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "desk", "name": "Desk", "description": "Test desk."},
        "scopes": [
            {"id": "visits", "title": "Visits", "description": "All visits."},
            {"id": "visits.detail", "title": "Visit", "description": "One visit.", "parentId": "visits"}
        ],
        "capabilities": [
            {"id": "visits.close", "title": "Close visit", "description": "Closes a visit.", "scopeIds": ["visits.detail"],
             "effect": "destructive", "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
             "outputSchema": {"type": "object"}},
            {"id": "visits.lookup", "title": "Look up", "description": "Reads a visit.", "scopeIds": ["visits"],
             "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).expect("valid catalog")
}

/// One request's runtime as a per-request factory builds it: builder
/// bindings, a context, a shared clock, and what it reports.
struct Request {
    runtime: Runtime,
    events: Arc<Mutex<Vec<Value>>>,
    notices: Arc<Mutex<Vec<Value>>>,
    handled: Arc<Mutex<Vec<Value>>>,
    policy: Arc<Mutex<Vec<Value>>>,
}

fn request(catalog: &Catalog, clock: &Arc<AtomicI64>, context: &[&str], bind: bool) -> Request {
    let mut b = RuntimeBuilder::new(catalog);
    let now = clock.clone();
    b.clock(Arc::new(move || now.load(Ordering::SeqCst)));
    b.manual_timers(true);
    let (events, notices, handled, policy) = (Arc::default(), Arc::default(), Arc::default(), Arc::default());
    let e: Arc<Mutex<Vec<Value>>> = Arc::clone(&events);
    b.event_observer(Arc::new(move |ev: &LifecycleEvent| {
        e.lock().push(serde_json::from_str(&ev.to_json()).unwrap())
    }));
    let n: Arc<Mutex<Vec<Value>>> = Arc::clone(&notices);
    b.confirmation_observer(Arc::new(move |json: &str| {
        n.lock().push(serde_json::from_str(json).unwrap())
    }));
    let p: Arc<Mutex<Vec<Value>>> = Arc::clone(&policy);
    b.policy(Arc::new(move |req: rcip::runtime::PolicyRequest| {
        p.lock().push(
            json!({"confirmed": req.is_confirmed(), "input": serde_json::from_str::<Value>(req.input_json()).unwrap()}),
        );
        req.decide_default().unwrap();
    }));
    if bind {
        let h: Arc<Mutex<Vec<Value>>> = Arc::clone(&handled);
        b.bind(
            "visits.close",
            Arc::new(move |inv: Invocation| {
                h.lock().push(json!({"id": inv.id(), "input": inv.input()}));
                inv.complete(json!({"closed": true})).unwrap()
            }),
            None,
        )
        .unwrap();
    }
    let runtime = b.build();
    let ids = context.iter().map(|s| s.to_string()).collect();
    runtime.host().set_context(SemanticContext::new(ids, None)).unwrap();
    Request {
        runtime,
        events,
        notices,
        handled,
        policy,
    }
}

fn phases(events: &Mutex<Vec<Value>>) -> Vec<String> {
    events
        .lock()
        .iter()
        .map(|e| match e.get("errorCode") {
            Some(code) => format!("{} {}", e["phase"].as_str().unwrap(), code.as_str().unwrap()),
            None => e["phase"].as_str().unwrap().to_string(),
        })
        .collect()
}

/// Opens a confirmation of `visits.close {"id": 7}` in a first request's
/// runtime, carries it, and closes that runtime (its response is sent).
fn open(catalog: &Catalog, clock: &Arc<AtomicI64>) -> (CarriedConfirmation, Value, Request) {
    let first = request(catalog, clock, &["visits.detail"], true);
    let outcome = first
        .runtime
        .client()
        .invoke_blocking("visits.close", br#"{"id": 7}"#, None, None)
        .unwrap();
    let outcome: Value = serde_json::from_str(&outcome).unwrap();
    assert_eq!(outcome["status"], "confirmation_required", "{outcome}");
    let id = outcome["confirmation"]["id"].as_str().unwrap();
    let carried = first.runtime.host().carry_confirmation(id).expect("pending");
    first.runtime.close();
    (carried, outcome, first)
}

fn resume(r: &Request, carried: &CarriedConfirmation, approved: bool, input: &[u8]) -> Value {
    let pending = r
        .runtime
        .host()
        .resume_confirmation_pending(carried, approved, input, None)
        .unwrap();
    serde_json::from_str(&pending.wait(rcip::runtime::WAIT_FOREVER).unwrap()).unwrap()
}

#[test]
fn carry_reports_what_the_confirmation_captured_and_teardown_closes_it() {
    let catalog = catalog();
    let clock = Arc::new(AtomicI64::new(T0));
    let (carried, outcome, first) = open(&catalog, &clock);
    assert_eq!(carried.confirmation_id, outcome["confirmation"]["id"].as_str().unwrap());
    assert_eq!(carried.invocation_id, outcome["invocationId"].as_str().unwrap());
    assert_eq!(carried.capability_id, "visits.close");
    assert_eq!(carried.expires_at, T0 + 120_000);
    assert_eq!(
        carried.context,
        SemanticContext::new(vec!["visits.detail".into()], None)
    );
    let reasons: Vec<Value> = first.notices.lock().iter().map(|n| n["event"].clone()).collect();
    assert_eq!(reasons, [json!("opened"), json!("closed")]);
    assert_eq!(first.notices.lock()[1]["reason"], "closed");
    assert!(first
        .runtime
        .host()
        .carry_confirmation(&carried.confirmation_id)
        .is_none());
}

#[test]
fn an_approval_in_another_runtime_reruns_there_with_the_carried_id_and_confirmed_policy() {
    let catalog = catalog();
    let clock = Arc::new(AtomicI64::new(T0));
    let (carried, _, _first) = open(&catalog, &clock);
    clock.store(T0 + 5_000, Ordering::SeqCst);
    let second = request(&catalog, &clock, &["visits.detail"], true);
    let outcome = resume(&second, &carried, true, br#"{"id": 7}"#);
    assert_eq!(outcome["status"], "succeeded", "{outcome}");
    assert_eq!(outcome["invocationId"], carried.invocation_id.as_str());
    assert_eq!(outcome["output"], json!({"closed": true}));
    assert_eq!(phases(&second.events), ["requested", "started", "succeeded"]);
    assert_eq!(*second.policy.lock(), [json!({"confirmed": true, "input": {"id": 7}})]);
    assert_eq!(
        *second.handled.lock(),
        [json!({"id": carried.invocation_id, "input": {"id": 7}})]
    );
    let notices = second.notices.lock().clone();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["event"], "closed");
    assert_eq!(notices[0]["reason"], "approved");
    assert_eq!(notices[0]["confirmationId"], carried.confirmation_id.as_str());
}

#[test]
fn the_approved_rerun_validates_the_input_again() {
    let catalog = catalog();
    let clock = Arc::new(AtomicI64::new(T0));
    let (carried, _, _first) = open(&catalog, &clock);
    let second = request(&catalog, &clock, &["visits.detail"], true);
    let outcome = resume(&second, &carried, true, br#"{"id": "seven"}"#);
    assert_eq!(outcome["status"], "failed");
    assert_eq!(outcome["error"]["code"], "INPUT_INVALID");
    assert_eq!(phases(&second.events), ["requested", "failed INPUT_INVALID"]);
    assert!(second.handled.lock().is_empty());
}

#[test]
fn a_decline_expiry_unbound_capability_or_other_context_never_runs_the_handler() {
    let catalog = catalog();
    let clock = Arc::new(AtomicI64::new(T0));
    let (carried, _, _first) = open(&catalog, &clock);
    // (approved, ms after opening, bind in the second runtime, its context,
    //  expected status, code, closed reason)
    type Case<'a> = (bool, i64, bool, &'a [&'a str], &'a str, &'a str, &'a str);
    let cases: [Case; 5] = [
        (
            false,
            1,
            true,
            &["visits.detail"],
            "denied",
            "CONFIRMATION_DECLINED",
            "declined",
        ),
        // At expiresAt exactly: expired (PIPELINE.md section 5).
        (
            true,
            120_000,
            true,
            &["visits.detail"],
            "failed",
            "CONFIRMATION_EXPIRED",
            "expired",
        ),
        (
            true,
            1,
            false,
            &["visits.detail"],
            "denied",
            "POLICY_DENIED",
            "invalidated",
        ),
        (true, 1, true, &["visits"], "denied", "POLICY_DENIED", "invalidated"),
        // A decline wins over expiry, as for a pending confirmation.
        (
            false,
            200_000,
            true,
            &["visits.detail"],
            "denied",
            "CONFIRMATION_DECLINED",
            "declined",
        ),
    ];
    for (approved, after, bind, context, status, code, reason) in cases {
        clock.store(T0 + after, Ordering::SeqCst);
        let second = request(&catalog, &clock, context, bind);
        let outcome = resume(&second, &carried, approved, br#"{"id": 7}"#);
        let case = format!("approved={approved} after={after} bind={bind} context={context:?}");
        assert_eq!(outcome["status"], status, "{case}: {outcome}");
        assert_eq!(outcome["error"]["code"], code, "{case}");
        assert_eq!(outcome["invocationId"], carried.invocation_id.as_str(), "{case}");
        let phase = match code {
            "CONFIRMATION_DECLINED" => "confirmation_declined CONFIRMATION_DECLINED".to_string(),
            _ => format!("{status} {code}"),
        };
        assert_eq!(phases(&second.events), [phase], "{case}");
        assert_eq!(second.notices.lock()[0]["reason"], reason, "{case}");
        assert!(second.handled.lock().is_empty(), "{case}");
        assert!(second.policy.lock().is_empty(), "{case}");
    }
}

#[test]
fn a_confirmation_still_pending_in_the_resuming_runtime_follows_the_single_runtime_rule() {
    let catalog = catalog();
    let clock = Arc::new(AtomicI64::new(T0));
    let one = request(&catalog, &clock, &["visits.detail"], true);
    let outcome = one
        .runtime
        .client()
        .invoke_blocking("visits.close", br#"{"id": 7}"#, None, None)
        .unwrap();
    let outcome: Value = serde_json::from_str(&outcome).unwrap();
    let carried = one
        .runtime
        .host()
        .carry_confirmation(outcome["confirmation"]["id"].as_str().unwrap())
        .unwrap();
    // The captured input runs, not the one given again.
    let done = resume(&one, &carried, true, br#"{"id": 8}"#);
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(one.handled.lock()[0]["input"], json!({"id": 7}));
    // Consumed: a second resume of it is an unknown confirmation there
    // (this runtime's bindings and context are unchanged, so only single
    // use stops it).
    assert!(!one.runtime.host().confirmation_pending(&carried.confirmation_id));
    let again = one
        .runtime
        .host()
        .resolve_confirmation_pending(&carried.confirmation_id, true)
        .unwrap();
    let again: Value = serde_json::from_str(&again.wait(rcip::runtime::WAIT_FOREVER).unwrap()).unwrap();
    assert_eq!(again["error"]["code"], "CONFIRMATION_NOT_FOUND");
}

#[test]
fn a_carried_invocation_id_already_running_here_is_refused_as_step_two_says() {
    let catalog = catalog();
    let clock = Arc::new(AtomicI64::new(T0));
    let (carried, _, _first) = open(&catalog, &clock);
    // The resuming runtime has a deferred handler running under that id.
    let mut b = RuntimeBuilder::new(&catalog);
    let now = clock.clone();
    b.clock(Arc::new(move || now.load(Ordering::SeqCst)));
    let held: Arc<Mutex<Vec<Invocation>>> = Arc::default();
    let h = held.clone();
    b.bind(
        "visits.lookup",
        Arc::new(move |inv: Invocation| h.lock().push(inv)),
        None,
    )
    .unwrap();
    b.bind(
        "visits.close",
        Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
        None,
    )
    .unwrap();
    let runtime = b.build();
    runtime
        .host()
        .set_context(SemanticContext::new(vec!["visits.detail".into()], None))
        .unwrap();
    let running = runtime
        .client()
        .invoke_pending("visits.lookup", b"{}", Some(&carried.invocation_id), None)
        .unwrap();
    let pending = runtime
        .host()
        .resume_confirmation_pending(&carried, true, br#"{"id": 7}"#, None)
        .unwrap();
    let outcome: Value = serde_json::from_str(&pending.wait(rcip::runtime::WAIT_FOREVER).unwrap()).unwrap();
    assert_eq!(outcome["error"]["code"], "INVOCATION_ALREADY_ACTIVE", "{outcome}");
    held.lock().pop().unwrap().complete(json!({})).unwrap();
    assert!(running
        .1
        .wait(rcip::runtime::WAIT_FOREVER)
        .unwrap()
        .contains("succeeded"));
}

#[test]
fn a_capability_the_catalog_lacks_is_an_unknown_confirmation() {
    let catalog = catalog();
    let clock = Arc::new(AtomicI64::new(T0));
    let (mut carried, _, _first) = open(&catalog, &clock);
    carried.capability_id = "visits.gone".into();
    let second = request(&catalog, &clock, &["visits.detail"], true);
    let outcome = resume(&second, &carried, true, br#"{"id": 7}"#);
    assert_eq!(outcome["error"]["code"], "CONFIRMATION_NOT_FOUND");
    assert_eq!(outcome["capabilityId"], "unknown");
    assert_ne!(outcome["invocationId"], carried.invocation_id.as_str());
    assert!(second.events.lock().is_empty());
    assert!(second.notices.lock().is_empty());
}

#[test]
fn a_closed_runtime_refuses_to_resume() {
    let catalog = catalog();
    let clock = Arc::new(AtomicI64::new(T0));
    let (carried, _, first) = open(&catalog, &clock);
    let err = first
        .runtime
        .host()
        .resume_confirmation_pending(&carried, true, br#"{"id": 7}"#, None)
        .err();
    assert_eq!(err, Some(rcip::runtime::HostError::Closed));
}
