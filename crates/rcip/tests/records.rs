//! The record types are the description of the records rcip delivers
//! (issue 36): every outcome, report, event and notice the runtime writes
//! reads back into its Rust type, and that type writes the very same bytes.
//! A writer that drifts from the description (a renamed member, a new
//! field, another escape or member order) fails here.

use rcip::catalog::Catalog;
use rcip::runtime::{
    CloseReason, ConfirmationNotice, ErrorCode, EventPhase, Invocation, LifecycleEvent, Outcome, PreflightEntry,
    PreflightReport, Runtime, RuntimeBuilder, WAIT_FOREVER,
};
use serde::Serialize;
use std::sync::{Arc, Mutex};

const CATALOG: &str = r#"{
  "protocolVersion": "1.0",
  "application": {"id": "desk", "name": "Desk", "description": "A service desk."},
  "scopes": [{"id": "visits", "title": "Visits", "description": "Today's visits."}],
  "capabilities": [
    {"id": "visits.lookup", "title": "Look up", "description": "Reads one visit.",
     "scopeIds": ["visits"], "effect": "read",
     "inputSchema": {"type": "object", "required": ["visit"], "additionalProperties": false,
                     "properties": {"visit": {"type": "string", "pattern": "^V-[0-9]+$"}}},
     "outputSchema": {"type": "object"}},
    {"id": "visits.note", "title": "Add a note", "description": "Writes a note.",
     "scopeIds": ["visits"], "effect": "write",
     "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
    {"id": "visits.purge", "title": "Purge \"all\" visits", "description": "Removes every visit.\n\u2028Irreversible.",
     "scopeIds": ["visits"], "effect": "destructive",
     "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
  ]
}"#;

/// `text` reads as `T`, and `T` writes exactly `text` again.
fn same_bytes<T: Serialize>(text: &str, read: fn(&str) -> Result<T, serde_json::Error>) -> T {
    let value = read(text).unwrap_or_else(|e| panic!("{text}\ndoes not read: {e}"));
    assert_eq!(
        serde_json::to_string(&value).unwrap(),
        text,
        "the writer and the description differ"
    );
    value
}

#[test]
fn every_record_the_runtime_writes_is_its_type_byte_for_byte() {
    let catalog = Catalog::from_bytes(CATALOG.as_bytes()).unwrap();
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let notices = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut builder = RuntimeBuilder::new(&catalog);
    let seen = events.clone();
    builder.event_observer(Arc::new(move |e: &LifecycleEvent| {
        seen.lock().unwrap().push(e.to_json())
    }));
    let told = notices.clone();
    builder.confirmation_observer(Arc::new(move |n: &str| told.lock().unwrap().push(n.to_owned())));
    // Output with what escaping and numbers can differ on: quotes,
    // controls, U+2028, astral characters, a float, a big integer, nesting.
    let output = r#"{"note":"a \"b\"\n\t\u0001\u2028 😀 é","n":1.5,"big":12345678901234567890,"neg":-0.0,"list":[true,null,{"x":[]}]}"#;
    let handler = move |inv: Invocation| {
        inv.complete_text(output.as_bytes()).unwrap();
    };
    for id in ["visits.lookup", "visits.note", "visits.purge"] {
        builder.bind(id, Arc::new(handler), None).unwrap();
    }
    let runtime: Runtime = builder.build();
    let client = runtime.client();

    let mut outcomes = Vec::new();
    for (capability, input) in [
        ("visits.lookup", r#"{"visit":"V-17"}"#),
        ("visits.lookup", r#"{"visit":"17","extra":["\u0000"]}"#),
        ("visits.note", "{}"),
        ("visits.purge", "{}"),
        ("visits.purge", "{}"),
        ("no.such", "{}"),
        ("visits.lookup", "not json"),
    ] {
        let text = client
            .invoke_blocking(capability, input.as_bytes(), None, None)
            .unwrap();
        outcomes.push(same_bytes(&text, Outcome::from_json));
    }
    assert!(matches!(&outcomes[0], Outcome::Succeeded { output, .. } if output["n"] == 1.5));
    let issues = outcomes[1].error().unwrap().validation_issues.as_ref().unwrap();
    assert_eq!(outcomes[1].error().unwrap().code, ErrorCode::InputInvalid);
    assert!(!issues.is_empty());
    assert_eq!(outcomes[2].error().unwrap().code, ErrorCode::PolicyDenied);
    assert_eq!(outcomes[5].error().unwrap().code, ErrorCode::CapabilityNotFound);
    let confirmations: Vec<String> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::ConfirmationRequired { confirmation, .. } => Some(confirmation.id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(confirmations.len(), 2);

    // Approve one, decline the other, and resolve one that no longer exists.
    let host = runtime.host();
    for (id, approved) in [
        (&confirmations[0], true),
        (&confirmations[1], false),
        (&confirmations[1], true),
    ] {
        let text = host
            .resolve_confirmation_pending(id, approved)
            .unwrap()
            .wait(WAIT_FOREVER)
            .unwrap();
        outcomes.push(same_bytes(text.as_str(), Outcome::from_json));
    }
    assert!(matches!(outcomes[7], Outcome::Succeeded { .. }));
    assert_eq!(outcomes[8].error().unwrap().code, ErrorCode::ConfirmationDeclined);
    assert_eq!(outcomes[9].error().unwrap().code, ErrorCode::ConfirmationNotFound);

    // A preflight with every kind of entry.
    let proposals = [
        ("visits.lookup", "{\"visit\":\"V-1\"}"),
        ("visits.note", "{}"),
        ("visits.purge", "{}"),
        ("no.such", "{}"),
    ]
    .iter()
    .map(|(c, i)| (c.to_string(), i.as_bytes().to_vec()))
    .collect();
    let text = client
        .preflight_pending(proposals, None)
        .unwrap()
        .wait(WAIT_FOREVER)
        .unwrap();
    let report = same_bytes(text.as_str(), PreflightReport::from_json);
    assert!(report.consistent);
    assert!(matches!(report.outcomes[0], PreflightEntry::Ready { .. }));
    assert!(matches!(report.outcomes[1], PreflightEntry::Blocked { .. }));
    assert!(matches!(
        report.outcomes[2],
        PreflightEntry::ConfirmationRequired { .. }
    ));
    assert_eq!(report.outcomes[3].capability_id(), "no.such");

    let events = events.lock().unwrap();
    let phases: Vec<EventPhase> = events
        .iter()
        .map(|e| same_bytes(e, LifecycleEvent::from_json).phase)
        .collect();
    for phase in [
        EventPhase::Requested,
        EventPhase::Started,
        EventPhase::Succeeded,
        EventPhase::Failed,
        EventPhase::Denied,
        EventPhase::ConfirmationRequested,
        EventPhase::ConfirmationDeclined,
    ] {
        assert!(phases.contains(&phase), "no {phase:?} event among {phases:?}");
    }

    let notices = notices.lock().unwrap();
    let reasons: Vec<Option<CloseReason>> = notices
        .iter()
        .map(|n| match same_bytes(n, ConfirmationNotice::from_json) {
            ConfirmationNotice::Opened { .. } => None,
            ConfirmationNotice::Closed { reason, .. } => Some(reason),
        })
        .collect();
    assert_eq!(reasons.iter().filter(|r| r.is_none()).count(), 2);
    assert!(reasons.contains(&Some(CloseReason::Approved)));
    assert!(reasons.contains(&Some(CloseReason::Declined)));
    runtime.close();
}

#[test]
fn invoke_outcome_answers_the_typed_record() {
    let catalog = Catalog::from_bytes(CATALOG.as_bytes()).unwrap();
    let runtime = Runtime::new(&catalog);
    let _binding = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(|inv: Invocation| inv.complete(serde_json::json!({"open": true})).unwrap()),
            None,
        )
        .unwrap();
    let outcome = runtime
        .client()
        .invoke_outcome("visits.lookup", br#"{"visit":"V-3"}"#, Some("call-1"), None)
        .unwrap();
    assert_eq!(outcome.invocation_id(), "call-1");
    match outcome {
        Outcome::Succeeded { output, .. } => assert_eq!(output, serde_json::json!({"open": true})),
        other => panic!("{other:?}"),
    }
}

/// A runtime of the desk with a fixed clock and ids, the handlers bound,
/// and `observe` given the builder (to set a confirmation observer).
fn fixed_desk(observe: impl FnOnce(&mut RuntimeBuilder)) -> Runtime {
    let catalog = Catalog::from_bytes(CATALOG.as_bytes()).unwrap();
    let mut builder = RuntimeBuilder::new(&catalog);
    builder.clock(Arc::new(|| 1_000_i64));
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    builder.id_generator(Arc::new(move |prefix: &str| {
        Some(format!(
            "{prefix}-{}",
            next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ))
    }));
    observe(&mut builder);
    for id in ["visits.lookup", "visits.purge"] {
        builder
            .bind(
                id,
                Arc::new(|inv: Invocation| inv.complete(serde_json::json!({})).unwrap()),
                None,
            )
            .unwrap();
    }
    builder.build()
}

/// Opens a confirmation of visits.purge, then approves it: the notices
/// `opened` and `closed approved`.
fn open_and_approve(runtime: &Runtime) {
    let asked = runtime
        .client()
        .invoke_outcome("visits.purge", br#"{"all":true}"#, None, None)
        .unwrap();
    let Outcome::ConfirmationRequired { confirmation, .. } = asked else {
        panic!("{asked:?}")
    };
    let approved = runtime
        .host()
        .resolve_confirmation_pending(&confirmation.id, true)
        .unwrap()
        .wait_outcome(WAIT_FOREVER)
        .unwrap();
    assert!(matches!(approved, Outcome::Succeeded { .. }), "{approved:?}");
}

#[test]
fn the_typed_confirmation_observer_gets_what_the_text_observer_is_told() {
    let texts = Arc::new(Mutex::new(Vec::<String>::new()));
    let told = texts.clone();
    let runtime = fixed_desk(|b| {
        b.confirmation_observer(Arc::new(move |n: &str| told.lock().unwrap().push(n.to_owned())));
    });
    open_and_approve(&runtime);
    let typed = Arc::new(Mutex::new(Vec::<ConfirmationNotice>::new()));
    let seen = typed.clone();
    let runtime = fixed_desk(|b| {
        b.on_confirmation_notice(move |n| seen.lock().unwrap().push(n));
    });
    open_and_approve(&runtime);
    let expected: Vec<ConfirmationNotice> = texts
        .lock()
        .unwrap()
        .iter()
        .map(|t| ConfirmationNotice::from_json(t).unwrap())
        .collect();
    assert_eq!(*typed.lock().unwrap(), expected);
    assert_eq!(expected.len(), 2);
    assert!(matches!(&expected[0], ConfirmationNotice::Opened { input, .. } if input["all"] == true));
    assert!(matches!(
        expected[1],
        ConfirmationNotice::Closed {
            reason: CloseReason::Approved,
            ..
        }
    ));
}

#[test]
fn typed_waits_read_their_record_and_keep_the_text_of_another() {
    use rcip::runtime::{RecordWaitError, WaitError};
    let runtime = fixed_desk(|_| {});
    let client = runtime.client();

    let (id, pending) = client
        .invoke_pending("visits.lookup", br#"{"visit":"V-1"}"#, None, None)
        .unwrap();
    let outcome = pending.wait_outcome(WAIT_FOREVER).unwrap();
    assert_eq!(outcome.invocation_id(), &*id);
    assert!(matches!(outcome, Outcome::Succeeded { .. }));
    // One hand-over, typed or not.
    assert!(matches!(
        pending.wait_outcome(0),
        Err(RecordWaitError::Wait(WaitError::AlreadyUsed))
    ));

    let proposals = vec![
        ("visits.lookup".to_owned(), br#"{"visit":"V-1"}"#.to_vec()),
        ("visits.note".to_owned(), b"{}".to_vec()),
    ];
    let report = client
        .preflight_pending(proposals.clone(), None)
        .unwrap()
        .wait_report(WAIT_FOREVER)
        .unwrap();
    assert!(report.consistent);
    assert!(matches!(report.outcomes[0], PreflightEntry::Ready { .. }));
    assert!(
        matches!(&report.outcomes[1], PreflightEntry::Blocked { error, .. } if error.code == ErrorCode::CapabilityUnbound)
    );

    // A report waited for as an outcome: the text is kept, and reads as
    // the report it is.
    let pending = client.preflight_pending(proposals, None).unwrap();
    match pending.wait_outcome(WAIT_FOREVER) {
        Err(RecordWaitError::Unreadable { text, .. }) => {
            assert_eq!(PreflightReport::from_json(text.as_str()).unwrap(), report)
        }
        other => panic!("{other:?}"),
    }
    // An outcome waited for as a report, likewise.
    let (_, pending) = client.invoke_pending("visits.lookup", b"{}", None, None).unwrap();
    match pending.wait_report(WAIT_FOREVER) {
        Err(RecordWaitError::Unreadable { text, error }) => {
            assert!(Outcome::from_json(text.as_str()).is_ok());
            assert!(!error.to_string().is_empty());
        }
        other => panic!("{other:?}"),
    }

    // A poll before the outcome: timed out, and the outcome still comes
    // (a policy that allows the write).
    let runtime = fixed_desk(|b| {
        b.policy(Arc::new(|r: rcip::runtime::PolicyRequest| {
            r.decide(rcip::runtime::Decision::Allow).unwrap()
        }));
    });
    let client = runtime.client();
    let slow: Arc<Mutex<Vec<Invocation>>> = Arc::default();
    let kept = slow.clone();
    let _slow_binding = runtime
        .host()
        .bind(
            "visits.note",
            Arc::new(move |inv: Invocation| kept.lock().unwrap().push(inv)),
            None,
        )
        .unwrap();
    let (_, pending) = client.invoke_pending("visits.note", b"{}", None, None).unwrap();
    assert!(matches!(
        pending.wait_outcome(0),
        Err(RecordWaitError::Wait(WaitError::TimedOut))
    ));
    slow.lock()
        .unwrap()
        .pop()
        .unwrap()
        .complete(serde_json::json!({"n": 1}))
        .unwrap();
    assert!(matches!(pending.wait_outcome(0).unwrap(), Outcome::Succeeded { output, .. } if output["n"] == 1));
}

#[test]
fn the_readme_rust_example_is_the_crate_readme_example() {
    // README.md's Rust section shows crates/rcip/README.md's example, which
    // runs as a doctest; this keeps the unrun copy equal to it.
    fn first_rust_block(text: &str, after: &str) -> String {
        let from = text.find(after).unwrap_or_else(|| panic!("no {after:?}"));
        let rest = &text[from..];
        let start = rest.find("```rust\n").expect("a rust block") + "```rust\n".len();
        let len = rest[start..].find("```").expect("the block's end");
        rest[start..start + len].to_owned()
    }
    let dir = env!("CARGO_MANIFEST_DIR");
    let crate_readme = std::fs::read_to_string(format!("{dir}/README.md")).unwrap();
    let top_readme = std::fs::read_to_string(format!("{dir}/../../README.md")).unwrap();
    let example = first_rust_block(&crate_readme, "## Example");
    assert!(example.contains("invoke_outcome"));
    assert_eq!(first_rust_block(&top_readme, "## Rust\n"), example);
}

#[test]
fn readers_ignore_members_they_do_not_know_and_refuse_wrong_shapes() {
    let text = r#"{"status":"failed","invocationId":"i","capabilityId":"c","error":{"code":"EXECUTION_FAILED","message":"m","later":1},"addedLater":true}"#;
    let outcome = Outcome::from_json(text).unwrap();
    assert_eq!(outcome.error().unwrap().code, ErrorCode::ExecutionFailed);
    assert!(Outcome::from_json(r#"{"status":"maybe","invocationId":"i","capabilityId":"c"}"#).is_err());
    assert!(Outcome::from_json(
        r#"{"status":"failed","invocationId":"i","capabilityId":"c","error":{"code":"NOPE","message":"m"}}"#
    )
    .is_err());
    assert!(
        LifecycleEvent::from_json(r#"{"timestamp":"1","invocationId":"i","capabilityId":"c","phase":"started"}"#)
            .is_err()
    );
}

#[test]
fn a_nul_inside_a_record_field_reaches_c_visible_not_cut_short() {
    use rcip::runtime::{Decision, PolicyRequest, Record};
    // A host reason with a NUL (JSON allows `\u0000`), and an input key with
    // one, which reaches a validation issue's instance path.
    let catalog = Catalog::from_bytes(CATALOG.as_bytes()).unwrap();
    let mut builder = RuntimeBuilder::new(&catalog);
    builder.policy(Arc::new(|request: PolicyRequest| {
        request
            .decide(Decision::Deny {
                reason: Some("succeeded\0denied".into()),
            })
            .unwrap()
    }));
    let runtime = builder.build();
    let _b = runtime
        .host()
        .bind(
            "visits.note",
            Arc::new(|i: Invocation| i.complete(serde_json::json!({})).unwrap()),
            None,
        )
        .unwrap();
    let client = runtime.client();
    let denied = client.invoke_blocking("visits.note", b"{}", None, None).unwrap();
    assert!(denied.contains(r#""message":"succeeded\u0000denied""#), "{denied}");
    let record = Record::parse(denied.as_bytes()).unwrap();
    let message = record.error_message.as_ref().unwrap();
    assert_eq!(message.as_c_str().to_str().unwrap(), "succeeded\u{FFFD}denied");
    assert_eq!(message.as_c_str().to_bytes().len(), message.as_str().len());

    let _l = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(|i: Invocation| i.complete(serde_json::json!({})).unwrap()),
            None,
        )
        .unwrap();
    let invalid = client
        .invoke_blocking("visits.lookup", br#"{"visit":"V-1","a\u0000b":1}"#, None, None)
        .unwrap();
    let record = Record::parse(invalid.as_bytes()).unwrap();
    // The message names the refused key, NUL included.
    let [_, keyword, message] = &record.issues[0];
    assert_eq!(keyword.as_str(), "additionalProperties");
    assert_eq!(
        message.as_c_str().to_str().unwrap(),
        "property \"a\u{FFFD}b\" is not allowed"
    );
    for [path, keyword, message] in &record.issues {
        for field in [path, keyword, message] {
            assert_eq!(
                field.as_c_str().to_bytes().len(),
                field.as_str().len(),
                "a field cut short: {field:?}"
            );
        }
    }
    runtime.close();
}

#[test]
fn serde_names_are_the_protocol_names_the_writers_use() {
    use rcip::catalog::Effect;
    use rcip::runtime::OutcomeStatus;
    fn same<T: Serialize>(values: &[T], name: fn(&T) -> &'static str) {
        for v in values {
            assert_eq!(serde_json::to_string(v).unwrap(), format!("\"{}\"", name(v)));
        }
    }
    use ErrorCode::*;
    same(
        &[
            InvocationAlreadyActive,
            InputInvalid,
            CapabilityNotFound,
            CapabilityUnbound,
            CapabilityUnavailable,
            PolicyEvaluationFailed,
            PolicyDenied,
            ExecutionAborted,
            ExecutionFailed,
            OutputInvalid,
            ConfirmationNotFound,
            ConfirmationExpired,
            ConfirmationDeclined,
            PreflightStale,
        ],
        |c| c.as_str(),
    );
    use EventPhase as P;
    same(
        &[
            P::Requested,
            P::Started,
            P::Succeeded,
            P::Failed,
            P::Denied,
            P::ConfirmationRequested,
            P::ConfirmationDeclined,
        ],
        |p| p.as_str(),
    );
    use OutcomeStatus as S;
    same(&[S::Succeeded, S::Failed, S::Denied, S::ConfirmationRequired], |s| {
        s.as_str()
    });
    same(
        &[Effect::Read, Effect::Write, Effect::External, Effect::Destructive],
        |e| e.as_str(),
    );
    use CloseReason as R;
    same(
        &[
            R::Approved,
            R::Declined,
            R::Expired,
            R::Cancelled,
            R::Invalidated,
            R::Closed,
        ],
        |r| r.as_str(),
    );
}
