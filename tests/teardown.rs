//! Teardown races made deterministic (PIPELINE.md section 9): regression
//! tests for what the randomized C test (tests/c/teardown.c) found. The
//! broad coverage (runtime, binding, token and catalog freed while work
//! runs on other threads) is in that C test, which also runs under the
//! sanitizers and valgrind.

use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{Availability, Decision, EventPhase, Invocation, LifecycleEvent, PolicyRequest, RuntimeBuilder};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "desk", "name": "Desk", "description": "Test desk."},
        "scopes": [],
        "capabilities": [
            {"id": "visits.note", "title": "Add note", "description": "Adds a note.", "scopeIds": [],
             "effect": "write", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
            {"id": "visits.close", "title": "Close visit", "description": "Closes a visit.", "scopeIds": [],
             "effect": "destructive", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).expect("valid catalog")
}

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

/// A policy answer racing `rcip_runtime_free`: the pipeline it resumes must
/// end with the teardown outcome (`EXECUTION_ABORTED`), not with an error
/// that describes a state the host never created. Before the fix, the
/// recheck after the policy read the bindings the closing runtime had just
/// released and answered `CAPABILITY_UNBOUND`.
///
/// Order forced here: thread D decides for `y`; during D's step-12 recheck
/// (inside the availability check) the main thread frees the runtime; the
/// free aborts `x` first, and its `failed` event holds the free until D has
/// finished `y` (step 14 runs on the closed runtime).
#[test]
fn a_decision_racing_the_free_ends_aborted() {
    let (req_tx, req_rx) = mpsc::channel::<PolicyRequest>();
    let req_tx = Mutex::new(req_tx);
    let (free_now_tx, free_now_rx) = mpsc::channel::<()>();
    let (x_aborted_tx, x_aborted_rx) = mpsc::channel::<()>();
    let (y_done_tx, y_done_rx) = mpsc::channel::<()>();
    let free_now_tx = Mutex::new(free_now_tx);
    let x_aborted_tx = Mutex::new(x_aborted_tx);
    let x_aborted_rx = Mutex::new(x_aborted_rx);
    let y_done_rx = Mutex::new(y_done_rx);
    let armed = Arc::new(AtomicBool::new(false));

    let mut builder = RuntimeBuilder::new(&catalog());
    builder.policy(Arc::new(move |r: PolicyRequest| req_tx.lock().send(r).unwrap()));
    builder.event_observer(Arc::new(move |e: &LifecycleEvent| {
        if e.invocation_id == "x" && e.phase == EventPhase::Failed {
            // The free is aborting x: let D finish y meanwhile.
            x_aborted_tx.lock().send(()).unwrap();
            let _ = y_done_rx.lock().recv_timeout(Duration::from_secs(5));
        }
    }));
    let runtime = builder.build();
    let a2 = armed.clone();
    let _binding = runtime
        .host()
        .bind(
            "visits.note",
            Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
            Some(Arc::new(move || {
                if a2.swap(false, Ordering::SeqCst) {
                    free_now_tx.lock().send(()).unwrap();
                    let _ = x_aborted_rx.lock().recv_timeout(Duration::from_secs(5));
                }
                Ok::<_, ()>(Availability::available())
            })),
        )
        .unwrap()
        .detach();
    let outcomes = Outcomes::default();
    runtime.client().invoke("visits.note", b"{}", Some("x"), None, outcomes.sink()).unwrap();
    runtime.client().invoke("visits.note", b"{}", Some("y"), None, outcomes.sink()).unwrap();
    let _x_request = req_rx.recv().unwrap();
    let y_request = req_rx.recv().unwrap();
    assert_eq!(y_request.invocation_id(), Some("y"));
    let armed_d = armed.clone();
    let d = std::thread::spawn(move || {
        armed_d.store(true, Ordering::SeqCst);
        assert_eq!(y_request.decide(Decision::Allow), Ok(()));
        y_done_tx.send(()).unwrap();
        drop(y_request);
    });
    free_now_rx.recv_timeout(Duration::from_secs(5)).expect("D reached its recheck");
    drop(runtime);
    d.join().unwrap();
    let all = outcomes.all();
    assert_eq!(all.len(), 2, "{all:?}");
    for o in &all {
        assert_eq!(o["error"]["code"], "EXECUTION_ABORTED", "{o}");
    }
}
