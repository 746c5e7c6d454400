//! Teardown races made deterministic (PIPELINE.md section 9): regression
//! tests for what the randomized C test (tests/c/teardown.c) found. The
//! broad coverage (runtime, binding, token and catalog freed while work
//! runs on other threads) is in that C test, which also runs under the
//! sanitizers and valgrind.

use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{Availability, Decision, EventPhase, Invocation, LifecycleEvent, PolicyRequest, RuntimeBuilder};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

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
    runtime
        .host()
        .bind(
            "visits.note",
            Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
            Some(Arc::new(move || {
                if a2.swap(false, Ordering::SeqCst) {
                    free_now_tx.lock().send(()).unwrap();
                    let _ = x_aborted_rx.lock().recv_timeout(Duration::from_secs(5));
                }
                Ok::<_, rcip::runtime::CheckFailed>(Availability::available())
            })),
        )
        .unwrap()
        .detach();
    let outcomes = Outcomes::default();
    runtime
        .client()
        .invoke("visits.note", b"{}", Some("x"), None, outcomes.sink())
        .unwrap();
    runtime
        .client()
        .invoke("visits.note", b"{}", Some("y"), None, outcomes.sink())
        .unwrap();
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
    free_now_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("D reached its recheck");
    drop(runtime);
    d.join().unwrap();
    let all = outcomes.all();
    assert_eq!(all.len(), 2, "{all:?}");
    for o in &all {
        assert_eq!(o["error"]["code"], "EXECUTION_ABORTED", "{o}");
    }
}

/// Binds `visits.close` (destructive) and invokes it once per id: each
/// invocation leaves a confirmation pending.
fn open_confirmations(runtime: &rcip::runtime::Runtime, ids: &[&str]) -> Outcomes {
    runtime
        .host()
        .bind(
            "visits.close",
            Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
            None,
        )
        .unwrap()
        .detach();
    let outcomes = Outcomes::default();
    for id in ids {
        runtime
            .client()
            .invoke("visits.close", b"{}", Some(id), None, outcomes.sink())
            .unwrap();
    }
    outcomes
}

/// Expiries the library's timer thread is delivering when the runtime is
/// freed: every callback of them starts before `rcip_runtime_free`
/// returns (PIPELINE.md section 9: no callback starts afterwards). Before
/// the fix, the free returned while the timer thread still had the second
/// expiry's event and closed notice to deliver.
#[test]
fn no_timer_callback_starts_after_the_free_returned() {
    let now = Arc::new(AtomicI64::new(1_000_000));
    let starts: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
    let (delivering_tx, delivering_rx) = mpsc::channel::<()>();
    let delivering_tx = Mutex::new(Some(delivering_tx));
    let mut builder = RuntimeBuilder::new(&catalog());
    builder.confirmation_ttl_ms(50).unwrap();
    let n2 = now.clone();
    builder.clock(Arc::new(move || n2.load(Ordering::SeqCst)));
    let s1 = starts.clone();
    builder.event_observer(Arc::new(move |e: &LifecycleEvent| {
        s1.lock()
            .push((Instant::now(), format!("event {:?} {}", e.phase, e.invocation_id)));
    }));
    let s2 = starts.clone();
    builder.confirmation_observer(Arc::new(move |json: &str| {
        s2.lock().push((Instant::now(), json.to_string()));
        if json.contains("\"reason\":\"expired\"") {
            if let Some(tx) = delivering_tx.lock().take() {
                // The timer thread is inside its first expiry: free now.
                tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(300));
            }
        }
    }));
    let runtime = builder.build();
    let outcomes = open_confirmations(&runtime, &["c1", "c2"]);
    assert_eq!(outcomes.all().len(), 2);
    // Both fall due at once on the timer thread.
    now.fetch_add(50, Ordering::SeqCst);
    delivering_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the timer expired a confirmation");
    drop(runtime);
    let freed = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    let starts = starts.lock();
    let late: Vec<_> = starts
        .iter()
        .filter(|(t, _)| *t > freed)
        .map(|(_, what)| what.clone())
        .collect();
    assert!(late.is_empty(), "callbacks started after the free returned: {late:?}");
    let closed = starts
        .iter()
        .filter(|(_, what)| what.contains("\"event\":\"closed\""))
        .count();
    assert_eq!(closed, 2, "each confirmation closed once: {:?}", *starts);
}

/// A callback of one expiry frees the runtime while more confirmations fell
/// due at the same moment (PIPELINE.md section 9: no callback starts after
/// the free). The others end with the close: each hears `closed` (reason
/// `closed`) during the free, and no expiry event or notice follows it.
/// Before the fix the whole batch was taken at once, and the others' events
/// and notices came after the free had returned.
#[test]
fn a_free_from_an_expiry_callback_ends_the_rest_with_the_close() {
    let now = Arc::new(AtomicI64::new(1_000_000));
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let slot: Arc<Mutex<Option<Arc<rcip::runtime::Runtime>>>> = Arc::default();
    let mut builder = RuntimeBuilder::new(&catalog());
    builder.confirmation_ttl_ms(50).unwrap().manual_timers(true);
    let n2 = now.clone();
    builder.clock(Arc::new(move || n2.load(Ordering::SeqCst)));
    let l1 = log.clone();
    builder.event_observer(Arc::new(move |e: &LifecycleEvent| {
        l1.lock().push(format!("event {:?} {}", e.phase, e.invocation_id));
    }));
    let l2 = log.clone();
    let s2 = slot.clone();
    builder.confirmation_observer(Arc::new(move |json: &str| {
        let v: Value = serde_json::from_str(json).unwrap();
        if v["event"] == "closed" {
            l2.lock().push(format!(
                "closed {} {}",
                v["invocationId"].as_str().unwrap(),
                v["reason"].as_str().unwrap()
            ));
            if v["reason"] == "expired" {
                let runtime = s2.lock().take();
                if let Some(runtime) = runtime {
                    runtime.close();
                    l2.lock().push("free returned".into());
                }
            }
        }
    }));
    let runtime = Arc::new(builder.build());
    *slot.lock() = Some(runtime.clone());
    open_confirmations(&runtime, &["c1", "c2", "c3"]);
    log.lock().clear();
    now.fetch_add(50, Ordering::SeqCst);
    assert_eq!(runtime.run_due_timers().unwrap(), 1, "{:?}", log.lock());
    assert_eq!(
        *log.lock(),
        [
            "event Failed c1",
            "closed c1 expired",
            "closed c2 closed",
            "closed c3 closed",
            "free returned"
        ],
    );
}
