//! Runtime behaviour through the safe Rust API: re-entrancy, threads,
//! teardown and the rules the scenarios do not reach.

use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{
    Availability, CancelToken, Decision, HostError, Invocation, LifecycleEvent, PolicyRequest, Runtime, RuntimeBuilder,
    SemanticContext,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "desk", "name": "Desk", "description": "Test desk."},
        "scopes": [
            {"id": "visits", "title": "Visits", "description": "All visits."},
            {"id": "visits.detail", "title": "Visit", "description": "One visit.", "parentId": "visits"}
        ],
        "capabilities": [
            {"id": "visits.lookup", "title": "Look up", "description": "Reads a visit.", "scopeIds": ["visits"],
             "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
            {"id": "visits.close", "title": "Close visit", "description": "Closes a visit.", "scopeIds": ["visits.detail"],
             "effect": "destructive", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
            {"id": "visits.note", "title": "Add note", "description": "Adds a note.", "scopeIds": ["visits.detail"],
             "effect": "write", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).expect("valid catalog")
}

/// Collects outcomes delivered to sinks.
#[derive(Clone, Default)]
struct Outcomes(Arc<Mutex<Vec<Value>>>);

impl Outcomes {
    fn sink(&self) -> Box<dyn rcip::runtime::OutcomeSink> {
        let list = self.0.clone();
        Box::new(move |json: &str| list.lock().push(serde_json::from_str(json).unwrap()))
    }
    fn all(&self) -> Vec<Value> {
        self.0.lock().clone()
    }
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn policy_that_sets_context_on_its_own_runtime_is_denied_without_deadlock() {
    let rt: Arc<Mutex<Option<Arc<Runtime>>>> = Arc::new(Mutex::new(None));
    let rt2 = rt.clone();
    let mut b = RuntimeBuilder::new(&catalog());
    b.policy(Arc::new(move |req: PolicyRequest| {
        let runtime = rt2.lock().clone().unwrap();
        // Re-entrant call from inside the policy callback.
        runtime
            .host()
            .set_context(SemanticContext::new(vec!["visits".into()], None))
            .unwrap();
        req.decide(Decision::Allow).unwrap();
    }));
    let runtime = Arc::new(b.build());
    *rt.lock() = Some(runtime.clone());
    let handled = Arc::new(AtomicUsize::new(0));
    let h = handled.clone();
    let _binding = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(move |inv: Invocation| {
                h.fetch_add(1, Ordering::SeqCst);
                inv.complete(json!({})).unwrap();
            }),
            None,
        )
        .unwrap();
    let outcomes = Outcomes::default();
    runtime
        .client()
        .invoke("visits.lookup", b"{}", None, None, outcomes.sink())
        .unwrap();
    let all = outcomes.all();
    assert_eq!(all.len(), 1);
    // Step 12: the context changed while the policy ran → denied POLICY_DENIED.
    assert_eq!(all[0]["status"], "denied");
    assert_eq!(code(&all[0]), "POLICY_DENIED");
    assert_eq!(handled.load(Ordering::SeqCst), 0);
    *rt.lock() = None;
}

#[test]
fn handler_that_unbinds_itself_still_succeeds_and_later_calls_are_unbound() {
    let runtime = Arc::new(Runtime::new(&catalog()));
    let slot: Arc<Mutex<Option<rcip::runtime::Binding>>> = Arc::new(Mutex::new(None));
    let slot2 = slot.clone();
    let binding = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(move |inv: Invocation| {
                let b = slot2.lock().take().expect("binding stored");
                assert_eq!(b.unbind(), Ok(true));
                inv.complete(json!({"ok": true})).unwrap();
                drop(b);
            }),
            None,
        )
        .unwrap();
    *slot.lock() = Some(binding);
    let outcomes = Outcomes::default();
    runtime
        .client()
        .invoke("visits.lookup", b"{}", None, None, outcomes.sink())
        .unwrap();
    runtime
        .client()
        .invoke("visits.lookup", b"{}", None, None, outcomes.sink())
        .unwrap();
    let all = outcomes.all();
    assert_eq!(all[0]["status"], "succeeded", "{:?}", all[0]);
    assert_eq!(all[0]["output"], json!({"ok": true}));
    assert_eq!(code(&all[1]), "CAPABILITY_UNBOUND");
}

#[test]
fn deferred_handler_completed_from_another_thread_delivers_exactly_one_outcome() {
    let runtime = Runtime::new(&catalog());
    let (tx, rx) = mpsc::channel::<Invocation>();
    let tx = Mutex::new(tx);
    let _binding = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(move |inv: Invocation| tx.lock().send(inv).unwrap()),
            None,
        )
        .unwrap();
    let outcomes = Outcomes::default();
    for _ in 0..50 {
        runtime
            .client()
            .invoke("visits.lookup", b"{\"n\": 1}", None, None, outcomes.sink())
            .unwrap();
    }
    assert!(outcomes.all().is_empty(), "handlers are deferred");
    let worker = std::thread::spawn(move || {
        let mut results = Vec::new();
        for inv in rx.iter().take(50) {
            results.push(inv.complete_text(inv.input_json().as_bytes()));
            // A second settle is refused and changes nothing.
            assert_eq!(inv.complete(json!({"second": true})), Err(HostError::AlreadyCompleted));
        }
        results
    });
    let results = worker.join().unwrap();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 50);
    let all = outcomes.all();
    assert_eq!(all.len(), 50);
    let mut ids: Vec<&str> = all.iter().map(|o| o["invocationId"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 50, "one outcome per invocation");
    assert!(all
        .iter()
        .all(|o| o["status"] == "succeeded" && o["output"] == json!({"n": 1})));
    assert_eq!(
        serde_json::from_str::<Value>(&runtime.stats_json().unwrap()).unwrap()["pendingInvocations"],
        0
    );
}

#[test]
fn dropping_an_unsettled_handle_fails_the_invocation() {
    let runtime = Runtime::new(&catalog());
    let _b = runtime
        .host()
        .bind("visits.lookup", Arc::new(|inv: Invocation| drop(inv)), None)
        .unwrap();
    let outcomes = Outcomes::default();
    runtime
        .client()
        .invoke("visits.lookup", b"{}", None, None, outcomes.sink())
        .unwrap();
    assert_eq!(code(&outcomes.all()[0]), "EXECUTION_FAILED");
}

#[test]
fn cancel_releases_a_pending_policy_at_once_and_the_late_answer_changes_nothing() {
    let pending: Arc<Mutex<Vec<PolicyRequest>>> = Arc::default();
    let p2 = pending.clone();
    let mut b = RuntimeBuilder::new(&catalog());
    b.policy(Arc::new(move |req: PolicyRequest| p2.lock().push(req)));
    let runtime = b.build();
    let handled = Arc::new(AtomicUsize::new(0));
    let h = handled.clone();
    let _binding = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(move |inv: Invocation| {
                h.fetch_add(1, Ordering::SeqCst);
                inv.complete(json!({})).unwrap();
            }),
            None,
        )
        .unwrap();
    let token = CancelToken::new();
    let outcomes = Outcomes::default();
    runtime
        .client()
        .invoke("visits.lookup", b"{}", Some("i-1"), Some(&token), outcomes.sink())
        .unwrap();
    assert!(outcomes.all().is_empty());
    token.cancel();
    assert_eq!(code(&outcomes.all()[0]), "EXECUTION_ABORTED");
    // The id is free again, the late allow runs nothing.
    let req = pending.lock().pop().unwrap();
    assert_eq!(req.decide(Decision::Allow), Ok(()));
    assert_eq!(handled.load(Ordering::SeqCst), 0);
    assert_eq!(outcomes.all().len(), 1);
    assert_eq!(
        token.pending_callbacks(),
        0,
        "the invocation's registration was removed"
    );
}

#[test]
fn clock_and_id_generator_cannot_call_the_runtime() {
    let rt: Arc<Mutex<Option<Arc<Runtime>>>> = Arc::default();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (r1, s1) = (rt.clone(), seen.clone());
    let (r2, s2) = (rt.clone(), seen.clone());
    let mut b = RuntimeBuilder::new(&catalog());
    b.clock(Arc::new(move || {
        if let Some(r) = r1.lock().clone() {
            s1.lock().push(format!("clock:{:?}", r.host().refresh().err()));
        }
        1_000
    }));
    b.id_generator(Arc::new(move |prefix: &str| {
        if let Some(r) = r2.lock().clone() {
            s2.lock().push(format!("ids:{:?}", r.client().snapshot().err()));
        }
        Some(format!("{prefix}-x"))
    }));
    b.event_observer(Arc::new(|_: &rcip::runtime::LifecycleEvent| {}));
    let runtime = Arc::new(b.build());
    *rt.lock() = Some(runtime.clone());
    let _bind = bind_empty(&runtime, "visits.lookup", None);
    let outcomes = Outcomes::default();
    runtime
        .client()
        .invoke("visits.lookup", b"{}", None, None, outcomes.sink())
        .unwrap();
    assert_eq!(outcomes.all()[0]["invocationId"], "invocation-x");
    let seen = seen.lock().clone();
    assert!(seen.contains(&"clock:Some(WrongContext)".to_string()), "{seen:?}");
    assert!(seen.contains(&"ids:Some(WrongContext)".to_string()), "{seen:?}");
    *rt.lock() = None;
}

/// Binds `capability` to a handler that completes with `{}`, with an
/// optional availability check.
fn bind_empty(
    runtime: &Runtime,
    capability: &str,
    availability: Option<Arc<dyn rcip::runtime::AvailabilityCheck>>,
) -> rcip::runtime::Binding {
    runtime
        .host()
        .bind(
            capability,
            Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
            availability,
        )
        .unwrap()
}

/// Binds `visits.close` (destructive; its handler completes with `{}`) and
/// makes its scope active, so that invoking it asks for confirmation.
fn bind_close(runtime: &Runtime) -> rcip::runtime::Binding {
    let binding = bind_empty(runtime, "visits.close", None);
    runtime
        .host()
        .set_context(SemanticContext::new(vec!["visits.detail".into()], None))
        .unwrap();
    binding
}

#[test]
fn real_time_timer_expires_a_confirmation_without_any_call() {
    let mut b = RuntimeBuilder::new(&catalog());
    b.confirmation_ttl_ms(30).unwrap();
    let notices: Arc<Mutex<Vec<Value>>> = Arc::default();
    let n2 = notices.clone();
    b.confirmation_observer(Arc::new(move |json: &str| {
        n2.lock().push(serde_json::from_str(json).unwrap())
    }));
    let runtime = b.build();
    let _bind = bind_close(&runtime);
    let outcomes = Outcomes::default();
    runtime
        .client()
        .invoke("visits.close", b"{\"id\": 7}", None, None, outcomes.sink())
        .unwrap();
    let confirmation = outcomes.all()[0]["confirmation"]["id"].as_str().unwrap().to_string();
    assert_eq!(notices.lock()[0]["event"], "opened");
    assert_eq!(notices.lock()[0]["input"], json!({"id": 7}));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while notices.lock().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(notices.lock()[1]["reason"], "expired");
    runtime
        .host()
        .resolve_confirmation(&confirmation, true, outcomes.sink())
        .unwrap();
    assert_eq!(code(&outcomes.all()[1]), "CONFIRMATION_EXPIRED");
}

#[test]
fn teardown_aborts_pending_work_and_late_completions_are_ignored() {
    let held: Arc<Mutex<Vec<Invocation>>> = Arc::default();
    let h2 = held.clone();
    let runtime = Runtime::new(&catalog());
    let _bind = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(move |inv: Invocation| h2.lock().push(inv)),
            None,
        )
        .unwrap();
    let outcomes = Outcomes::default();
    runtime
        .client()
        .invoke("visits.lookup", b"{}", None, None, outcomes.sink())
        .unwrap();
    let inv = held.lock().pop().unwrap();
    let token = inv.cancel_token();
    assert!(!token.is_cancelled());
    drop(runtime);
    assert_eq!(outcomes.all().len(), 1);
    assert_eq!(code(&outcomes.all()[0]), "EXECUTION_ABORTED");
    assert!(token.is_cancelled(), "the handler is told");
    assert_eq!(inv.complete(json!({})), Ok(()));
    assert_eq!(outcomes.all().len(), 1);
}

#[test]
fn availability_checks_run_without_locks_and_may_refresh() {
    let rt: Arc<Mutex<Option<Arc<Runtime>>>> = Arc::default();
    let r2 = rt.clone();
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let runtime = Arc::new(Runtime::new(&catalog()));
    *rt.lock() = Some(runtime.clone());
    let _b = bind_empty(
        &runtime,
        "visits.lookup",
        Some(Arc::new(move || {
            // A refresh from inside a refresh is queued, not recursive.
            if c2.fetch_add(1, Ordering::SeqCst) == 0 {
                r2.lock().clone().unwrap().host().refresh().unwrap();
            }
            Ok(Availability::available())
        })),
    );
    // bind refreshed (revision 1), its availability check asked for one more (2).
    assert_eq!(runtime.client().snapshot().unwrap().revision(), 2);
    *rt.lock() = None;
}

#[test]
fn snapshot_is_the_same_object_until_the_revision_changes() {
    let runtime = Runtime::new(&catalog());
    let a = runtime.client().snapshot().unwrap();
    let b = runtime.client().snapshot().unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(a.json().as_ptr(), b.json().as_ptr());
    runtime.host().refresh().unwrap();
    let c = runtime.client().snapshot().unwrap();
    assert_eq!(c.revision(), 1);
    assert!(!Arc::ptr_eq(&a, &c));
}

#[test]
fn concurrent_invocations_on_one_runtime_settle_once_each() {
    let runtime = Arc::new(Runtime::new(&catalog()));
    let _b = bind_empty(&runtime, "visits.lookup", None);
    let count = Arc::new(AtomicI64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let runtime = runtime.clone();
            let count = count.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let c = count.clone();
                    runtime
                        .client()
                        .invoke(
                            "visits.lookup",
                            b"{}",
                            None,
                            None,
                            Box::new(move |_: &str| {
                                c.fetch_add(1, Ordering::SeqCst);
                            }),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(count.load(Ordering::SeqCst), 800);
    assert_eq!(runtime.client().snapshot().unwrap().revision(), 801);
}

#[test]
fn the_closed_notice_never_comes_before_the_opened_one() {
    // The consumer's outcome callback resolves the confirmation at once,
    // before the runtime has told the host that it opened.
    let notices: Arc<Mutex<Vec<Value>>> = Arc::default();
    let n2 = notices.clone();
    let mut b = RuntimeBuilder::new(&catalog());
    b.confirmation_observer(Arc::new(move |json: &str| {
        n2.lock().push(serde_json::from_str(json).unwrap())
    }));
    let runtime = Arc::new(b.build());
    let _bind = bind_close(&runtime);
    let resolved = Outcomes::default();
    let (rt, res) = (runtime.clone(), resolved.clone());
    runtime
        .client()
        .invoke(
            "visits.close",
            b"{}",
            None,
            None,
            Box::new(move |json: &str| {
                let o: Value = serde_json::from_str(json).unwrap();
                let id = o["confirmation"]["id"].as_str().unwrap().to_string();
                rt.host().resolve_confirmation(&id, true, res.sink()).unwrap();
            }),
        )
        .unwrap();
    assert_eq!(resolved.all()[0]["status"], "succeeded");
    let events: Vec<String> = notices
        .lock()
        .iter()
        .map(|n| n["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, ["opened", "closed"]);
    assert_eq!(notices.lock()[1]["reason"], "approved");
}

#[test]
fn bare_decision_texts_mean_what_their_parsed_forms_mean() {
    // decide_json has a shortcut for the three compact bare decisions; each
    // must end the invocation exactly as the same decision written with
    // spaces (which goes through the parser) does.
    let run = |text: &'static str| -> Value {
        let mut b = RuntimeBuilder::new(&catalog());
        b.policy(Arc::new(move |req: PolicyRequest| {
            req.decide_json(text.as_bytes()).unwrap()
        }));
        let runtime = b.build();
        let _binding = runtime
            .host()
            .bind(
                "visits.lookup",
                Arc::new(|inv: Invocation| inv.complete(json!({"ok": true})).unwrap()),
                None,
            )
            .unwrap();
        let outcomes = Outcomes::default();
        runtime
            .client()
            .invoke("visits.lookup", b"{}", None, None, outcomes.sink())
            .unwrap();
        let mut all = outcomes.all();
        assert_eq!(all.len(), 1, "{text}");
        let mut outcome = all.remove(0);
        // Ids differ per runtime only by counter; compare the rest.
        outcome.as_object_mut().unwrap().remove("invocationId");
        if let Some(c) = outcome.get_mut("confirmation").and_then(Value::as_object_mut) {
            c.remove("id");
            c.remove("expiresAt");
        }
        outcome
    };
    for (compact, spaced, status) in [
        (r#"{"decision":"allow"}"#, r#"{ "decision" : "allow" }"#, "succeeded"),
        (r#"{"decision":"deny"}"#, r#"{ "decision" : "deny" }"#, "denied"),
        (
            r#"{"decision":"confirm"}"#,
            r#"{ "decision" : "confirm" }"#,
            "confirmation_required",
        ),
    ] {
        let fast = run(compact);
        assert_eq!(fast["status"], status, "{compact}: {fast}");
        assert_eq!(fast, run(spaced), "{compact}");
    }
}

/// Due expiries run one after another (PIPELINE.md sections 5 and 7): a
/// callback of the first sees the others due at the same moment still
/// pending. Approving one there is an approval at or after `expiresAt`
/// (`failed CONFIRMATION_EXPIRED`, with its `failed` event); declining one
/// is a decline (`denied CONFIRMATION_DECLINED`). Only the first is
/// expired by the timer run.
#[test]
fn a_callback_of_one_expiry_sees_the_others_still_pending() {
    let now = Arc::new(AtomicI64::new(1_000_000));
    let opened: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let host: Arc<Mutex<Option<rcip::runtime::Host>>> = Arc::default();
    let answers = Outcomes::default();
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut b = RuntimeBuilder::new(&catalog());
    b.confirmation_ttl_ms(50).unwrap().manual_timers(true);
    let n2 = now.clone();
    b.clock(Arc::new(move || n2.load(Ordering::SeqCst)));
    let e2 = events.clone();
    b.event_observer(Arc::new(move |e: &LifecycleEvent| {
        e2.lock().push(format!("{:?} {}", e.phase, e.invocation_id));
    }));
    let (o2, h2, a2) = (opened.clone(), host.clone(), answers.clone());
    b.confirmation_observer(Arc::new(move |json: &str| {
        let n: Value = serde_json::from_str(json).unwrap();
        let invocation = n["invocationId"].as_str().unwrap().to_string();
        if n["event"] == "opened" {
            let id = n["confirmation"]["id"].as_str().unwrap().to_string();
            o2.lock().push((invocation, id));
        } else if n["reason"] == "expired" && invocation == "c1" {
            let host = h2.lock().clone().unwrap();
            let ids = o2.lock().clone();
            host.resolve_confirmation(&ids[1].1, true, a2.sink()).unwrap();
            host.resolve_confirmation(&ids[2].1, false, a2.sink()).unwrap();
        }
    }));
    let runtime = b.build();
    *host.lock() = Some(runtime.host());
    let _bind = bind_close(&runtime);
    let outcomes = Outcomes::default();
    for id in ["c1", "c2", "c3"] {
        runtime
            .client()
            .invoke("visits.close", b"{}", Some(id), None, outcomes.sink())
            .unwrap();
    }
    assert!(outcomes.all().iter().all(|o| o["status"] == "confirmation_required"));
    events.lock().clear();
    now.fetch_add(50, Ordering::SeqCst);
    assert_eq!(runtime.run_due_timers().unwrap(), 1);
    let answers = answers.all();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(
        (
            answers[0]["invocationId"].as_str(),
            answers[0]["status"].as_str(),
            answers[0]["error"]["code"].as_str()
        ),
        (Some("c2"), Some("failed"), Some("CONFIRMATION_EXPIRED")),
        "{answers:?}"
    );
    assert_eq!(
        (
            answers[1]["invocationId"].as_str(),
            answers[1]["status"].as_str(),
            answers[1]["error"]["code"].as_str()
        ),
        (Some("c3"), Some("denied"), Some("CONFIRMATION_DECLINED")),
        "{answers:?}"
    );
    assert_eq!(*events.lock(), ["Failed c1", "Failed c2", "ConfirmationDeclined c3"],);
}

/// Reports of a preflight, parsed.
fn preflight_report(runtime: &Runtime, proposals: &[(&str, &str)], token: Option<&CancelToken>) -> Value {
    let reports = Outcomes::default();
    let proposals = proposals
        .iter()
        .map(|(id, input)| (id.to_string(), input.as_bytes().to_vec()))
        .collect();
    runtime.client().preflight(proposals, token, reports.sink()).unwrap();
    let reports = reports.all();
    assert_eq!(reports.len(), 1, "{reports:?}");
    reports[0].clone()
}

fn statuses(report: &Value) -> Vec<String> {
    report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| match o["status"].as_str().unwrap() {
            "blocked" => code(o).to_string(),
            status => status.to_string(),
        })
        .collect()
}

/// PIPELINE.md section 6: each proposal runs section 4 steps 6–11, so a
/// cancelled token blocks a proposal at step 10, after the capability,
/// binding, availability and schema checks have had their say, whether it
/// was cancelled before the preflight or by the policy asked about an
/// earlier proposal. Before, the cancellation blocked every proposal not
/// yet decided with EXECUTION_ABORTED.
#[test]
fn a_cancelled_preflight_still_checks_each_proposal_up_to_step_10() {
    let token = CancelToken::new();
    let t2 = token.clone();
    let mut b = RuntimeBuilder::new(&catalog());
    b.policy(Arc::new(move |r: PolicyRequest| {
        t2.cancel();
        r.decide(Decision::Allow).unwrap();
    }));
    let runtime = b.build();
    let _lookup = bind_empty(&runtime, "visits.lookup", None);
    let _close = bind_empty(
        &runtime,
        "visits.close",
        Some(Arc::new(|| {
            Ok(Availability {
                available: false,
                reason_code: Some("LOCKED".into()),
                reason: Some("Locked.".into()),
            })
        })),
    );
    let proposals = [
        ("visits.lookup", "{}"),
        ("visits.missing", "{}"),
        ("visits.note", "{}"),
        ("visits.close", "{}"),
        ("visits.lookup", "[]"),
        ("visits.lookup", "{}"),
    ];
    // Cancelled by the policy asked about the first proposal.
    let report = preflight_report(&runtime, &proposals, Some(&token));
    let expected = [
        "EXECUTION_ABORTED",
        "CAPABILITY_NOT_FOUND",
        "CAPABILITY_UNBOUND",
        "CAPABILITY_UNAVAILABLE",
        "INPUT_INVALID",
        "EXECUTION_ABORTED",
    ];
    assert_eq!(statuses(&report), expected, "{report}");
    assert_eq!(report["outcomes"][3]["error"]["message"], "Locked.", "{report}");
    // Cancelled before the preflight: the same, with no policy call.
    let report = preflight_report(&runtime, &proposals, Some(&token));
    assert_eq!(statuses(&report), expected, "{report}");
}

/// PIPELINE.md section 6: "With the default policy: steps 6–13 per
/// proposal, in order." The second proposal's availability check makes the
/// first capability unavailable; the first was decided before that check
/// ran, so it is ready. Before, steps 12–13 of every proposal ran after all
/// the proposals' steps 6–11, and the first came out CAPABILITY_UNAVAILABLE.
#[test]
fn with_the_default_policy_each_proposal_is_decided_before_the_next_is_checked() {
    let runtime = Runtime::new(&catalog());
    let lookup_open = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (l1, l2) = (lookup_open.clone(), lookup_open.clone());
    let _lookup = bind_empty(
        &runtime,
        "visits.lookup",
        Some(Arc::new(move || {
            Ok(if l1.load(Ordering::SeqCst) {
                Availability::available()
            } else {
                Availability {
                    available: false,
                    reason_code: None,
                    reason: None,
                }
            })
        })),
    );
    let _close = bind_empty(
        &runtime,
        "visits.close",
        Some(Arc::new(move || {
            l2.store(false, Ordering::SeqCst);
            Ok(Availability::available())
        })),
    );
    lookup_open.store(true, Ordering::SeqCst);
    let report = preflight_report(&runtime, &[("visits.lookup", "{}"), ("visits.close", "{}")], None);
    assert_eq!(statuses(&report), ["ready", "confirmation_required"], "{report}");
}

/// PIPELINE.md section 4 step 3: the id is "held until the outcome". The
/// final event's observers and the step-19 refresh's subscribers run before
/// the outcome, so reusing the id there is INVOCATION_ALREADY_ACTIVE; from
/// the outcome itself the id is free again. Before, the id was released
/// before the final event.
#[test]
fn the_invocation_id_stays_reserved_until_the_outcome_is_delivered() {
    let rt: Arc<Mutex<Option<Arc<Runtime>>>> = Arc::default();
    let nested = Outcomes::default();
    let (r2, n2) = (rt.clone(), nested.clone());
    // Bounded, so that a reuse that is wrongly accepted fails the assertion
    // below instead of recursing without end.
    let reuses = Arc::new(AtomicUsize::new(0));
    let reuses2 = reuses.clone();
    let mut b = RuntimeBuilder::new(&catalog());
    b.event_observer(Arc::new(move |e: &LifecycleEvent| {
        if matches!(
            e.phase,
            rcip::runtime::EventPhase::Succeeded | rcip::runtime::EventPhase::Failed
        ) && reuses.fetch_add(1, Ordering::SeqCst) < 4
        {
            let runtime = r2.lock().clone().unwrap();
            runtime
                .client()
                .invoke("visits.lookup", b"{}", Some(&e.invocation_id), None, n2.sink())
                .unwrap();
        }
    }));
    let runtime = Arc::new(b.build());
    *rt.lock() = Some(runtime.clone());
    let _lookup = bind_empty(&runtime, "visits.lookup", None);
    let (r3, n3) = (rt.clone(), nested.clone());
    let _subscription = runtime
        .client()
        .subscribe(Arc::new(move |_revision: u64| {
            if reuses2.fetch_add(1, Ordering::SeqCst) >= 4 {
                return;
            }
            let runtime = r3.lock().clone().unwrap();
            runtime
                .client()
                .invoke("visits.lookup", b"{}", Some("i1"), None, n3.sink())
                .unwrap();
        }))
        .unwrap();
    let outer = Outcomes::default();
    let o2 = outer.clone();
    let (r4, n4) = (rt.clone(), nested.clone());
    let after: Box<dyn rcip::runtime::OutcomeSink> = Box::new(move |json: &str| {
        o2.0.lock().push(serde_json::from_str(json).unwrap());
        // From the outcome, the id is free: this one succeeds (its own
        // event and refresh reuse it in turn, refused).
        let runtime = r4.lock().clone().unwrap();
        runtime
            .client()
            .invoke("visits.missing", b"{}", Some("i1"), None, n4.sink())
            .unwrap();
    });
    runtime
        .client()
        .invoke("visits.lookup", b"{}", Some("i1"), None, after)
        .unwrap();
    assert_eq!(outer.all().len(), 1);
    assert_eq!(outer.all()[0]["status"], "succeeded", "{:?}", outer.all());
    let nested: Vec<(String, String)> = nested
        .all()
        .iter()
        .map(|o| (o["capabilityId"].as_str().unwrap().to_string(), code(o).to_string()))
        .collect();
    // From the `succeeded` observer, then from the subscriber: refused;
    // then, from the outcome, a call that fails CAPABILITY_NOT_FOUND,
    // whose `failed` observer is refused in turn.
    assert_eq!(
        nested,
        [
            ("visits.lookup", "INVOCATION_ALREADY_ACTIVE"),
            ("visits.lookup", "INVOCATION_ALREADY_ACTIVE"),
            ("visits.lookup", "INVOCATION_ALREADY_ACTIVE"),
            ("visits.missing", "CAPABILITY_NOT_FOUND"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string())),
    );
    *rt.lock() = None;
}

/// The header's event sequence: `requested`, `confirmation_requested`,
/// then how the confirmation ends. Another thread could end a confirmation
/// between its registration and its `confirmation_requested` event (found
/// by a race hunt with 1 ms TTLs: the library timer, run_due_timers on
/// another thread, or a resolve). Made deterministic here: every clock
/// read on the invoking thread has a second thread run the due timers
/// with a clock past every deadline, and waits for it.
#[test]
fn no_thread_can_end_a_confirmation_before_its_confirmation_requested_event() {
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let invoking = Arc::new(Mutex::new(None::<std::thread::ThreadId>));
    let rt: Arc<Mutex<Option<Arc<Runtime>>>> = Arc::default();
    let (ask, asked) = mpsc::channel::<mpsc::Sender<()>>();
    let mut b = RuntimeBuilder::new(&catalog());
    b.manual_timers(true);
    let i2 = invoking.clone();
    b.clock(Arc::new(move || {
        if *i2.lock() != Some(std::thread::current().id()) {
            // The timer thread of this test: past every deadline.
            return 10_000_000_000;
        }
        let (done, wait) = mpsc::channel();
        ask.send(done).unwrap();
        wait.recv().unwrap();
        1_000_000
    }));
    let e2 = events.clone();
    b.event_observer(Arc::new(move |e: &LifecycleEvent| {
        e2.lock().push(format!("{:?}", e.phase));
    }));
    let runtime = Arc::new(b.build());
    *rt.lock() = Some(runtime.clone());
    let r2 = rt.clone();
    let timers = std::thread::spawn(move || {
        while let Ok(done) = asked.recv() {
            if let Some(runtime) = r2.lock().clone() {
                runtime.run_due_timers().unwrap();
            }
            done.send(()).unwrap();
        }
    });
    let _bind = bind_close(&runtime);
    let outcomes = Outcomes::default();
    *invoking.lock() = Some(std::thread::current().id());
    runtime
        .client()
        .invoke("visits.close", b"{}", Some("c1"), None, outcomes.sink())
        .unwrap();
    *invoking.lock() = None;
    assert_eq!(outcomes.all()[0]["status"], "confirmation_required");
    // Now past the deadline on this thread too.
    runtime.run_due_timers().unwrap();
    assert_eq!(*events.lock(), ["Requested", "ConfirmationRequested", "Failed"]);
    *rt.lock() = None;
    drop(runtime);
    timers.join().unwrap();
}

/// PIPELINE.md section 7: the work a call makes runnable runs on the
/// calling thread before the call returns. A decision or completion from
/// another thread while the policy or handler callback still runs used to
/// wait for that callback to return and then run on the callback's thread,
/// so a callback that waits for the outcome (a synchronous bridge) never
/// got it. Only a settle on the callback's own thread waits for it.
#[test]
fn a_settle_from_another_thread_runs_there_while_the_callback_still_runs() {
    type Outcome = (String, std::thread::ThreadId);
    for settle_in in ["policy", "handler"] {
        let (to_settler, settler_inbox) = mpsc::channel::<Box<dyn FnOnce() + Send>>();
        let settler = std::thread::spawn(move || {
            while let Ok(job) = settler_inbox.recv() {
                job();
            }
            std::thread::current().id()
        });
        let (outcome_tx, outcome_rx) = mpsc::channel::<Outcome>();
        let outcome_rx = Arc::new(std::sync::Mutex::new(outcome_rx));
        let seen_inside: Arc<Mutex<Option<Outcome>>> = Arc::default();
        let mut b = RuntimeBuilder::new(&catalog());
        let (rx, seen) = (outcome_rx.clone(), seen_inside.clone());
        let wait_inside = move || {
            *seen.lock() = rx.lock().unwrap().recv_timeout(Duration::from_secs(10)).ok();
        };
        let wait_in_policy = wait_inside.clone();
        if settle_in == "policy" {
            let tx = to_settler.clone();
            b.policy(Arc::new(move |req: PolicyRequest| {
                tx.send(Box::new(move || req.decide(Decision::Allow).unwrap())).unwrap();
                wait_in_policy();
            }));
        }
        let runtime = b.build();
        let tx = to_settler.clone();
        let _b = runtime
            .host()
            .bind(
                "visits.lookup",
                Arc::new(move |inv: Invocation| {
                    if settle_in == "handler" {
                        tx.send(Box::new(move || inv.complete(json!({})).unwrap())).unwrap();
                        wait_inside();
                    } else {
                        inv.complete(json!({})).unwrap();
                    }
                }),
                None,
            )
            .unwrap();
        let sink: Box<dyn rcip::runtime::OutcomeSink> = Box::new(move |json: &str| {
            let v: Value = serde_json::from_str(json).unwrap();
            let status = v["status"].as_str().unwrap().to_string();
            outcome_tx.send((status, std::thread::current().id())).unwrap();
        });
        runtime
            .client()
            .invoke("visits.lookup", b"{}", None, None, sink)
            .unwrap();
        // The settler ends when the last sender goes: with the runtime.
        drop((_b, runtime, to_settler));
        let settler_id = settler.join().unwrap();
        let seen = seen_inside.lock().clone();
        assert_eq!(seen, Some(("succeeded".to_string(), settler_id)), "{settle_in}");
    }
}
