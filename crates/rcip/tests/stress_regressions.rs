//! Regression tests for library bugs the stress program (stress/stress.c)
//! found, made deterministic.

use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{CancelToken, Decision, Invocation, PolicyRequest, RuntimeBuilder};
use serde_json::{json, Value};
use std::sync::Arc;

fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "desk", "name": "Desk", "description": "Test desk."},
        "scopes": [],
        "capabilities": [
            {"id": "visits.lookup", "title": "Look up", "description": "Reads a visit.", "scopeIds": [],
             "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).expect("valid catalog")
}

/// Binds `visits.lookup` to a handler that completes with `{}`.
fn bind_lookup(runtime: &rcip::runtime::Runtime) -> rcip::runtime::Binding {
    runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
            None,
        )
        .unwrap()
}

/// A preflight whose token is cancelled while the preflighting thread is
/// still between its proposals (here: by the policy, inline, when asked
/// about the first one; in the stress run: by another thread). The cancel
/// settles the report at once; the preflight call then indexed the
/// proposals the settled report had taken and panicked: the C ABI returned
/// RCIP_RESULT_PANIC although the report had been delivered.
#[test]
fn a_preflight_cancelled_between_its_proposals_settles_once_and_returns_ok() {
    let token = CancelToken::new();
    let t2 = token.clone();
    let mut builder = RuntimeBuilder::new(&catalog());
    builder.policy(Arc::new(move |r: PolicyRequest| {
        t2.cancel();
        r.decide(Decision::Allow).unwrap();
    }));
    let runtime = builder.build();
    let _b = bind_lookup(&runtime);
    let reports: Arc<Mutex<Vec<Value>>> = Arc::default();
    let r2 = reports.clone();
    let proposals = vec![("visits.lookup".to_string(), b"{}".to_vec()); 3];
    let sink = Box::new(move |json: &str| r2.lock().push(serde_json::from_str(json).unwrap()));
    assert_eq!(runtime.client().preflight(proposals, Some(&token), sink), Ok(()));
    let reports = reports.lock();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let outcomes = reports[0]["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 3);
    for o in outcomes {
        assert_eq!(o["status"], "blocked", "{o}");
        assert_eq!(o["error"]["code"], "EXECUTION_ABORTED", "{o}");
    }
    drop(reports);
    // The runtime keeps working.
    let stats: Value = serde_json::from_str(&runtime.stats_json().unwrap()).unwrap();
    assert_eq!(stats["pendingPreflights"], 0);
}

/// A preflight's report names the revision R0 it started at and is
/// "consistent" when that is still the revision when it settles
/// (PIPELINE.md section 6). Setting the context changed it in one critical
/// section and took the new revision in a second one, so a preflight on
/// another thread could start between the two, see the new context under
/// the old revision, and report "consistent" for a revision whose snapshot
/// holds the other context (found by a race hunt: about 1,000 to 11,000
/// such reports in 5 s). The change and its revision now share one
/// critical section. One thread toggles the context while another
/// preflights; every consistent report must name a revision whose context
/// is the one its policy call saw. Without the fix this found hundreds of
/// contradicting reports per second on a 2-core machine.
#[test]
fn a_consistent_preflight_names_a_revision_that_holds_the_context_it_checked() {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "desk", "name": "Desk", "description": "Test desk."},
        "scopes": [{"id": "visits", "title": "Visits", "description": "All visits."}],
        "capabilities": [
            {"id": "visits.lookup", "title": "Look up", "description": "Reads a visit.", "scopeIds": [],
             "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
        ]
    });
    let catalog = Catalog::from_bytes(text.to_string().as_bytes()).unwrap();
    // The context each policy call saw: "visits" active or not.
    let seen: Arc<Mutex<Vec<bool>>> = Arc::default();
    let s2 = seen.clone();
    let mut builder = RuntimeBuilder::new(&catalog);
    builder.policy(Arc::new(move |r: PolicyRequest| {
        let request: Value = serde_json::from_str(r.context_json()).unwrap();
        let active = request["semanticContext"]["activeScopeIds"].as_array().unwrap();
        s2.lock().push(!active.is_empty());
        r.decide(Decision::Allow).unwrap();
    }));
    let runtime = Arc::new(builder.build());
    let _b = bind_lookup(&runtime);
    // Each revision's context, recorded by the only refreshing thread.
    let contexts: Arc<Mutex<std::collections::HashMap<u64, bool>>> = Arc::default();
    let (c2, r2) = (contexts.clone(), runtime.clone());
    let _subscription = runtime
        .client()
        .subscribe(Arc::new(move |revision: u64| {
            let snapshot = r2.client().snapshot().unwrap();
            assert_eq!(snapshot.revision(), revision);
            c2.lock()
                .insert(revision, !snapshot.context().active_scope_ids().is_empty());
        }))
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (stop2, r3) = (stop.clone(), runtime.clone());
    let toggler = std::thread::spawn(move || {
        let mut on = false;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            on = !on;
            let ids = if on { vec!["visits".to_string()] } else { vec![] };
            r3.host()
                .set_context(rcip::runtime::SemanticContext::new(ids, None))
                .unwrap();
        }
    });
    let reports: Arc<Mutex<Vec<Value>>> = Arc::default();
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_millis(1500) {
        let r4 = reports.clone();
        let sink = Box::new(move |json: &str| r4.lock().push(serde_json::from_str(json).unwrap()));
        let proposals = vec![("visits.lookup".to_string(), b"{}".to_vec())];
        runtime.client().preflight(proposals, None, sink).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    toggler.join().unwrap();
    let (seen, reports, contexts) = (seen.lock(), reports.lock(), contexts.lock());
    assert_eq!(seen.len(), reports.len());
    let mut consistent = 0;
    let mut contradicting = 0;
    for (report, saw) in reports.iter().zip(seen.iter()) {
        if report["consistent"] != true {
            continue;
        }
        consistent += 1;
        let revision = report["revision"].as_u64().unwrap();
        // Revision 1 (the bind) was notified before the subscription.
        if let Some(held) = contexts.get(&revision) {
            if held != saw {
                contradicting += 1;
            }
        }
    }
    assert!(consistent > 0, "no consistent report in {} preflights", reports.len());
    assert_eq!(
        contradicting,
        0,
        "of {consistent} consistent reports ({} preflights)",
        reports.len()
    );
}
