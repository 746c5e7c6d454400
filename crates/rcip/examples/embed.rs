//! Embedding rcip in a Rust program: a catalog, a policy, handlers bound
//! as closures, lifecycle events, a preflight of a plan, a confirmation the
//! host approves, and a runtime per request from the compiled catalog;
//! every outcome, report, event and notice read as its Rust type.
//!
//! `cargo run -p rcip --example embed` (make test-rust runs it). It prints
//! what happens and exits 0, or panics naming the step that went wrong.

use rcip::catalog::{Catalog, Effect};
use rcip::runtime::{
    ConfirmationNotice, Decision, ErrorCode, Invocation, LifecycleEvent, Outcome, PolicyRequest, PreflightEntry,
    Runtime, RuntimeBuilder, WAIT_FOREVER,
};
use serde_json::json;
use std::sync::{Arc, Mutex};

const CATALOG: &str = r#"{
  "protocolVersion": "1.0",
  "application": {"id": "tickets", "name": "Tickets", "description": "A ticket tracker."},
  "scopes": [{"id": "queue", "title": "Queue", "description": "The open tickets."}],
  "capabilities": [
    {"id": "tickets.search", "title": "Search tickets", "description": "Finds tickets by text.",
     "scopeIds": ["queue"], "effect": "read",
     "inputSchema": {"type": "object", "required": ["query"], "additionalProperties": false,
                     "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 200}}},
     "outputSchema": {"type": "object", "required": ["ids"],
                      "properties": {"ids": {"type": "array", "items": {"type": "string"}}}}},
    {"id": "tickets.close", "title": "Close a ticket", "description": "Closes one ticket.",
     "scopeIds": ["queue"], "effect": "write",
     "inputSchema": {"type": "object", "required": ["ticketId"], "additionalProperties": false,
                     "properties": {"ticketId": {"type": "string", "pattern": "^T-[0-9]+$"}}},
     "outputSchema": {"type": "object"}}
  ]
}"#;

fn show(step: &str, outcome: &Outcome) {
    match outcome.error() {
        Some(e) => println!(
            "{step}: {} {} ({})",
            outcome.status().as_str(),
            e.code.as_str(),
            e.message
        ),
        None => println!("{step}: {}", outcome.status().as_str()),
    }
}

/// One runtime for a request of `user`: the handlers know who asks, the
/// policy confirms every write (and allows the approved re-run: a policy
/// that asks again is denied, since a confirmation is never asked twice).
fn runtime_for(catalog: &Catalog, user: &str, events: Arc<Mutex<Vec<String>>>) -> Runtime {
    let mut builder = RuntimeBuilder::new(catalog);
    builder.policy(Arc::new(|request: PolicyRequest| {
        let decision = match request.effect() {
            Effect::Read => Decision::Allow,
            _ if request.is_confirmed() => Decision::Allow,
            _ => Decision::Confirm {
                reason: Some("Close this ticket for good?".into()),
            },
        };
        request
            .decide(decision)
            .expect("the first decision settles the request");
    }));
    builder.event_observer(Arc::new(move |e: &LifecycleEvent| {
        events
            .lock()
            .unwrap()
            .push(format!("{} {}", e.capability_id, e.phase.as_str()));
    }));
    builder.on_confirmation_notice(|notice: ConfirmationNotice| {
        // A host shows opened confirmations to its user; here they are printed.
        if let ConfirmationNotice::Opened {
            confirmation, input, ..
        } = notice
        {
            println!(
                "  host asks its user: {} ({}) for {input}",
                confirmation.title, confirmation.description
            );
        }
    });
    let user = user.to_owned();
    builder
        .bind(
            "tickets.search",
            Arc::new(move |invocation: Invocation| {
                let query = invocation.input()["query"].as_str().unwrap_or_default();
                let ids = if query == "printer" { vec!["T-7"] } else { vec![] };
                invocation.complete(json!({ "ids": ids, "for": user })).unwrap();
            }),
            None,
        )
        .expect("tickets.search is in the catalog");
    builder
        .bind(
            "tickets.close",
            Arc::new(|invocation: Invocation| invocation.complete(json!({"closed": true})).unwrap()),
            None,
        )
        .expect("tickets.close is in the catalog");
    builder.build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let catalog = Catalog::from_bytes(CATALOG.as_bytes())?;
    let events = Arc::new(Mutex::new(Vec::new()));

    let runtime = runtime_for(&catalog, "alice", events.clone());
    let client = runtime.client();

    let found = client.invoke_outcome("tickets.search", br#"{"query": "printer"}"#, None, None)?;
    show("search", &found);
    let Outcome::Succeeded { output, .. } = &found else {
        panic!("search: {found:?}")
    };
    assert_eq!(output["ids"], json!(["T-7"]));

    let bad = client.invoke_outcome("tickets.close", br#"{"ticketId": "7"}"#, None, None)?;
    show("close with a bad id", &bad);
    assert_eq!(bad.error().map(|e| e.code), Some(ErrorCode::InputInvalid));
    for issue in bad
        .error()
        .and_then(|e| e.validation_issues.as_ref())
        .into_iter()
        .flatten()
    {
        println!("  {} {}: {}", issue.instance_path, issue.keyword, issue.message);
    }

    // What would a plan meet, before anything runs? One entry per proposal.
    let plan = vec![
        ("tickets.search".to_owned(), br#"{"query": "printer"}"#.to_vec()),
        ("tickets.close".to_owned(), br#"{"ticketId": "T-7"}"#.to_vec()),
    ];
    let report = client.preflight_pending(plan, None)?.wait_report(WAIT_FOREVER)?;
    for entry in &report.outcomes {
        let verdict = match entry {
            PreflightEntry::Ready { .. } => "ready".to_owned(),
            PreflightEntry::ConfirmationRequired { reason, .. } => format!("confirmation required ({reason})"),
            PreflightEntry::Blocked { error, .. } => format!("blocked {}", error.code.as_str()),
        };
        println!("preflight {}: {verdict}", entry.capability_id());
    }
    assert!(matches!(report.outcomes[0], PreflightEntry::Ready { .. }));
    assert!(matches!(
        report.outcomes[1],
        PreflightEntry::ConfirmationRequired { .. }
    ));

    let asked = client.invoke_outcome("tickets.close", br#"{"ticketId": "T-7"}"#, None, None)?;
    show("close", &asked);
    let Outcome::ConfirmationRequired { confirmation, .. } = &asked else {
        panic!("close: {asked:?}")
    };
    let approved = runtime
        .host()
        .resolve_confirmation_pending(&confirmation.id, true)?
        .wait_outcome(WAIT_FOREVER)?;
    show("approved", &approved);
    assert!(matches!(approved, Outcome::Succeeded { .. }));
    runtime.close();

    // Another request, another runtime: nothing of alice's is there.
    let runtime = runtime_for(&catalog, "bob", events.clone());
    let again = runtime
        .host()
        .resolve_confirmation_pending(&confirmation.id, true)?
        .wait_outcome(WAIT_FOREVER)?;
    show("bob's runtime resolving alice's confirmation", &again);
    assert_eq!(again.error().map(|e| e.code), Some(ErrorCode::ConfirmationNotFound));
    runtime.close();

    let events = events.lock().unwrap();
    println!(
        "{} lifecycle events, first {:?}, last {:?}",
        events.len(),
        events[0],
        events[events.len() - 1]
    );
    Ok(())
}
