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
    let _b = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
            None,
        )
        .unwrap();
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
