//! The WebAssembly smoke test of the core (docs/ARCHITECTURE.md,
//! "Platforms"): a cdylib for `wasm32-unknown-unknown` that compiles a
//! catalog, builds a runtime over a clock imported from JavaScript with
//! manual timers, and runs invocations, a confirmation approval and a
//! confirmation expiry inside the module. `tests/wasm/smoke.mjs` drives it
//! under Node and asserts every outcome; `make test-wasm` builds and runs
//! both. Not the C ABI (`crates/rcip-capi` is): these exports exist for
//! that script only.
//!
//! Protocol with the script. Every `smoke_*` export writes one JSON report
//! into a buffer the module owns and returns its length in bytes; the
//! report's address is [`smoke_report_ptr`], valid until the next export
//! call. The steps, in order: [`smoke_setup`], [`smoke_run`], then
//! [`smoke_run_due_timers`] after the script moved its clock (as often as
//! it likes), [`smoke_after_expiry`], and [`smoke_close`]. A step called
//! out of order reports `{"error": ...}`.
//!
//! Imports (module `env`): `now_ms() -> f64`, the host clock in epoch
//! milliseconds (an integer value); `random_fill(ptr, len) -> i32`, which
//! fills `len` bytes at `ptr` with random bytes and returns 0 (the hash
//! seed: getrandom's custom backend, built with
//! `--cfg getrandom_backend="custom"`); `panic_message(ptr, len)`, told
//! the UTF-8 text of a panic before the module traps.
//!
//! On native targets the same exports run over a clock in a static, so the
//! unit test below runs the same steps under `cargo test`.

use rcip::catalog::{Catalog, Effect};
use rcip::runtime::{Decision, Invocation, PolicyRequest, Runtime, RuntimeBuilder};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// A read capability, a write capability (the host policy below asks for a
/// confirmation before a write; the default policy denies writes) and a
/// read whose handler settles later, as a host's event loop would.
const CATALOG: &str = r#"{
  "protocolVersion": "1.0",
  "application": {"id": "wasmSmoke", "name": "Wasm smoke", "description": "Notes, read and written inside WebAssembly."},
  "scopes": [{"id": "notes", "title": "Notes", "description": "The note list."}],
  "capabilities": [
    {"id": "notes.list", "title": "List notes", "description": "Lists the notes, newest first.",
     "scopeIds": ["notes"], "effect": "read",
     "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 10}},
                     "additionalProperties": false},
     "outputSchema": {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
                      "required": ["notes"]}},
    {"id": "notes.add", "title": "Add note", "description": "Adds a note.",
     "scopeIds": ["notes"], "effect": "write",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "minLength": 1}},
                     "required": ["text"], "additionalProperties": false},
     "outputSchema": {"type": "object", "properties": {"saved": {"type": "boolean"}}, "required": ["saved"]}},
    {"id": "notes.sync", "title": "Sync notes", "description": "Syncs the notes; settles later, from the host's event loop.",
     "scopeIds": ["notes"], "effect": "read",
     "inputSchema": {"type": "object"},
     "outputSchema": {"type": "object", "properties": {"synced": {"type": "integer"}}, "required": ["synced"]}}
  ]
}"#;

/// Confirmation lifetime of the smoke runtime, in milliseconds.
pub const TTL_MS: u64 = 30_000;

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
mod host {
    #[link(wasm_import_module = "env")]
    unsafe extern "C" {
        #[link_name = "now_ms"]
        fn js_now_ms() -> f64;
        #[link_name = "random_fill"]
        fn js_random_fill(ptr: *mut u8, len: usize) -> i32;
        #[link_name = "panic_message"]
        fn js_panic_message(ptr: *const u8, len: usize);
    }

    /// The JavaScript clock.
    pub fn now_ms() -> i64 {
        // Safety: an import without arguments.
        unsafe { js_now_ms() as i64 }
    }

    /// Tells the script the panic's text (the module then traps).
    pub fn panic_message(text: &str) {
        // Safety: the text is valid for the call.
        unsafe { js_panic_message(text.as_ptr(), text.len()) }
    }

    /// getrandom's custom backend (`--cfg getrandom_backend="custom"`):
    /// the hash seeds of the core and its dependencies come from the
    /// script's `crypto.getRandomValues`.
    #[unsafe(no_mangle)]
    unsafe extern "Rust" fn __getrandom_v03_custom(dest: *mut u8, len: usize) -> Result<(), getrandom::Error> {
        // Safety: getrandom passes `len` writable bytes at `dest`.
        if unsafe { js_random_fill(dest, len) } == 0 {
            Ok(())
        } else {
            Err(getrandom::Error::new_custom(1))
        }
    }
}

#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
mod host {
    use std::sync::atomic::{AtomicI64, Ordering};

    /// The native stand-in for the script's clock.
    pub static NOW: AtomicI64 = AtomicI64::new(1_700_000_000_000);

    pub fn now_ms() -> i64 {
        NOW.load(Ordering::SeqCst)
    }

    pub fn panic_message(_text: &str) {}
}

/// What the steps share: the runtime, the two confirmations and what the
/// observers saw since the last report.
struct Smoke {
    runtime: Runtime,
    approved: Option<String>,
    expiring: Option<String>,
    seen: Arc<Mutex<Seen>>,
}

#[derive(Default)]
struct Seen {
    events: Vec<Value>,
    confirmations: Vec<Value>,
    handled: Vec<String>,
    /// Invocations of `notes.sync`, settled by `smoke_after_expiry`.
    deferred: Vec<Invocation>,
}

static SMOKE: Mutex<Option<Smoke>> = Mutex::new(None);
static REPORT: Mutex<Vec<u8>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stores `report` for the script and returns its length.
fn publish(report: Value) -> usize {
    let text = report.to_string().into_bytes();
    let len = text.len();
    *lock(&REPORT) = text;
    len
}

/// The address of the last report (see the module documentation).
#[unsafe(no_mangle)]
pub extern "C" fn smoke_report_ptr() -> *const u8 {
    lock(&REPORT).as_ptr()
}

fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| host::panic_message(&info.to_string())));
}

/// Invokes and returns the outcome, which the synchronous handlers here
/// deliver before the call returns.
fn invoke(runtime: &Runtime, capability: &str, input: &[u8], id: &str) -> Value {
    let got: Arc<Mutex<Option<String>>> = Arc::default();
    let g = got.clone();
    let result = runtime.client().invoke(
        capability,
        input,
        Some(id),
        None,
        Box::new(move |json: &str| *lock(&g) = Some(json.to_string())),
    );
    if let Err(e) = result {
        return json!({"hostError": e.to_string()});
    }
    let text = lock(&got).take();
    match text {
        Some(text) => serde_json::from_str(&text).unwrap_or_else(|e| json!({"unparsed": e.to_string()})),
        None => json!({"noOutcome": true}),
    }
}

fn resolve(runtime: &Runtime, confirmation: &str, approved: bool) -> Value {
    let got: Arc<Mutex<Option<String>>> = Arc::default();
    let g = got.clone();
    let result = runtime.host().resolve_confirmation(
        confirmation,
        approved,
        Box::new(move |json: &str| *lock(&g) = Some(json.to_string())),
    );
    if let Err(e) = result {
        return json!({"hostError": e.to_string()});
    }
    let text = lock(&got).take();
    match text {
        Some(text) => serde_json::from_str(&text).unwrap_or_else(|e| json!({"unparsed": e.to_string()})),
        None => json!({"noOutcome": true}),
    }
}

/// Drains what the observers saw.
fn drain(seen: &Mutex<Seen>) -> Value {
    let mut s = lock(seen);
    json!({
        "events": std::mem::take(&mut s.events),
        "confirmations": std::mem::take(&mut s.confirmations),
        "handled": std::mem::take(&mut s.handled),
    })
}

fn builder(catalog: &Catalog, seen: &Arc<Mutex<Seen>>) -> RuntimeBuilder {
    let mut b = RuntimeBuilder::new(catalog);
    b.confirmation_ttl_ms(TTL_MS).expect("a valid TTL");
    b.clock(Arc::new(host::now_ms));
    b.manual_timers(true);
    b.policy(Arc::new(|request: PolicyRequest| {
        let _ = if request.effect() == Effect::Write && !request.is_confirmed() {
            request.decide(Decision::Confirm {
                reason: Some("Adding a note needs the user's approval.".into()),
            })
        } else {
            request.decide_default()
        };
    }));
    let s = seen.clone();
    b.event_observer(Arc::new(move |event: &rcip::runtime::LifecycleEvent| {
        let v = serde_json::from_str(&event.to_json()).unwrap_or(Value::Null);
        lock(&s).events.push(v);
    }));
    let s = seen.clone();
    b.confirmation_observer(Arc::new(move |text: &str| {
        let v = serde_json::from_str(text).unwrap_or(Value::Null);
        lock(&s).confirmations.push(v);
    }));
    let s = seen.clone();
    b.bind(
        "notes.list",
        Arc::new(move |inv: Invocation| {
            lock(&s).handled.push(inv.id().to_string());
            let _ = inv.complete(json!({"notes": ["second", "first"]}));
        }),
        None,
    )
    .expect("notes.list is in the catalog");
    let s = seen.clone();
    b.bind(
        "notes.add",
        Arc::new(move |inv: Invocation| {
            lock(&s).handled.push(inv.id().to_string());
            let _ = inv.complete(json!({"saved": true}));
        }),
        None,
    )
    .expect("notes.add is in the catalog");
    let s = seen.clone();
    b.bind(
        "notes.sync",
        Arc::new(move |inv: Invocation| {
            let mut s = lock(&s);
            s.handled.push(inv.id().to_string());
            s.deferred.push(inv);
        }),
        None,
    )
    .expect("notes.sync is in the catalog");
    b
}

/// Step 1: compiles the catalog; a builder without a clock (refused by
/// `try_build` where the platform has no clock; `build` falls back without
/// panicking); then the smoke runtime (host clock, manual timers, policy,
/// observers, both capabilities bound on the builder).
#[unsafe(no_mangle)]
pub extern "C" fn smoke_setup() -> usize {
    install_panic_hook();
    let catalog = match Catalog::from_bytes(CATALOG.as_bytes()) {
        Ok(c) => c,
        Err(e) => return publish(json!({"error": format!("catalog refused: {e}")})),
    };
    let without_clock = match RuntimeBuilder::new(&catalog).try_build() {
        Ok(_) => Value::Null,
        Err(e) => json!(e.to_string()),
    };
    let fallback = RuntimeBuilder::new(&catalog).build();
    let fallback_deadline = fallback.next_deadline().ok().flatten();
    drop(fallback);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let runtime = match builder(&catalog, &seen).try_build() {
        Ok(r) => r,
        Err(e) => return publish(json!({"error": format!("try_build refused the smoke runtime: {e}")})),
    };
    let snapshot = runtime.client().snapshot().expect("a snapshot");
    let listed: Value = runtime
        .client()
        .list_json(&Default::default())
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let report = json!({
        "platform": {"threads": rcip::platform::THREADS, "systemClock": rcip::platform::SYSTEM_CLOCK},
        "tryBuildWithoutClock": without_clock,
        "fallbackBuilt": true,
        "fallbackNextDeadline": fallback_deadline,
        "revision": snapshot.revision(),
        "listed": listed,
    });
    *lock(&SMOKE) = Some(Smoke {
        runtime,
        approved: None,
        expiring: None,
        seen,
    });
    publish(report)
}

/// Step 2: a valid read, an invalid read (schema), a read whose input is
/// not JSON, two writes (each opens a confirmation), the approval of the
/// first (its re-run succeeds), and the next deadline (the second's).
#[unsafe(no_mangle)]
pub extern "C" fn smoke_run() -> usize {
    let mut guard = lock(&SMOKE);
    let Some(smoke) = guard.as_mut() else {
        return publish(json!({"error": "smoke_setup first"}));
    };
    let rt = &smoke.runtime;
    let read = invoke(rt, "notes.list", br#"{"limit": 2}"#, "read-1");
    let invalid = invoke(rt, "notes.list", br#"{"limit": 0, "extra": true}"#, "read-2");
    let not_json = invoke(rt, "notes.list", b"{\"limit\": ", "read-3");
    let write1 = invoke(rt, "notes.add", br#"{"text": "approved note"}"#, "write-1");
    let write2 = invoke(rt, "notes.add", br#"{"text": "expiring note"}"#, "write-2");
    let c1 = write1["confirmation"]["id"].as_str().map(str::to_string);
    let c2 = write2["confirmation"]["id"].as_str().map(str::to_string);
    let approved = match &c1 {
        Some(c) => resolve(rt, c, true),
        None => json!({"error": "write-1 opened no confirmation"}),
    };
    let deadline = rt.next_deadline().map_err(|e| e.to_string());
    smoke.approved = c1;
    smoke.expiring = c2.clone();
    let pending = c2.as_deref().is_some_and(|c| rt.host().confirmation_pending(c));
    let report = json!({
        "now": host::now_ms(),
        "read": read,
        "invalid": invalid,
        "notJson": not_json,
        "write1": write1,
        "write2": write2,
        "approved": approved,
        "nextDeadline": deadline.as_ref().ok(),
        "nextDeadlineError": deadline.as_ref().err(),
        "expiringPending": pending,
        "seen": drain(&smoke.seen),
    });
    publish(report)
}

/// Step 3 (any number of times): runs the manual timers at the script's
/// clock; reports how many confirmations expired and the next deadline.
#[unsafe(no_mangle)]
pub extern "C" fn smoke_run_due_timers() -> usize {
    let guard = lock(&SMOKE);
    let Some(smoke) = guard.as_ref() else {
        return publish(json!({"error": "smoke_setup first"}));
    };
    let rt = &smoke.runtime;
    let expired = rt.run_due_timers().map_err(|e| e.to_string());
    let pending = smoke
        .expiring
        .as_deref()
        .is_some_and(|c| rt.host().confirmation_pending(c));
    let report = json!({
        "now": host::now_ms(),
        "expired": expired.as_ref().ok(),
        "error": expired.as_ref().err(),
        "nextDeadline": rt.next_deadline().ok().flatten(),
        "expiringPending": pending,
        "seen": drain(&smoke.seen),
    });
    publish(report)
}

/// Step 4: approving the expired confirmation returns its receipt
/// (`CONFIRMATION_EXPIRED`) once, then `CONFIRMATION_NOT_FOUND`; approving
/// the approved one again is `CONFIRMATION_NOT_FOUND`; a blocking invoke
/// of a synchronous handler works without threads, and a wait for an
/// outcome that cannot arrive answers instead of blocking.
#[unsafe(no_mangle)]
pub extern "C" fn smoke_after_expiry() -> usize {
    let guard = lock(&SMOKE);
    let Some(smoke) = guard.as_ref() else {
        return publish(json!({"error": "smoke_setup first"}));
    };
    let rt = &smoke.runtime;
    let (Some(c1), Some(c2)) = (smoke.approved.as_deref(), smoke.expiring.as_deref()) else {
        return publish(json!({"error": "smoke_run opened no confirmations"}));
    };
    let receipt = resolve(rt, c2, true);
    let receipt_again = resolve(rt, c2, true);
    let approved_again = resolve(rt, c1, true);
    let blocking = rt
        .client()
        .invoke_blocking("notes.list", b"{}", Some("read-4"), None)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()));
    let pending = rt
        .client()
        .invoke_pending("notes.list", b"{}", Some("read-5"), None)
        .map_err(|e| e.to_string());
    let waited = match &pending {
        Ok((_, p)) => match p.wait(1000) {
            Ok(t) => serde_json::from_str::<Value>(t.as_str()).unwrap_or(Value::Null),
            Err(e) => json!(format!("{e:?}")),
        },
        Err(e) => json!(e),
    };
    // An outcome that arrives later: a wait cannot block without threads,
    // and a blocking invoke says so instead of waiting.
    let sync = rt
        .client()
        .invoke_pending("notes.sync", b"{}", Some("sync-1"), None)
        .map_err(|e| e.to_string());
    // (Natively a wait would block until its timeout, and the blocking
    // invoke for good: only without threads.)
    let threads = rcip::platform::THREADS;
    let (sync_wait, sync_poll) = match &sync {
        Ok(_) if threads => (Value::Null, Value::Null),
        Ok((_, p)) => (
            json!(p.wait(1000).err().map(|e| format!("{e:?}"))),
            json!(p.wait(0).err().map(|e| format!("{e:?}"))),
        ),
        Err(e) => (json!(e), json!(e)),
    };
    let sync_blocking = if threads {
        None
    } else {
        rt.client()
            .invoke_blocking("notes.sync", b"{}", Some("sync-2"), None)
            .err()
            .map(|e| e.to_string())
    };
    // The host's event loop settles them (outside every lock: settling
    // calls the observers).
    let deferred = std::mem::take(&mut lock(&smoke.seen).deferred);
    let settled = deferred.len();
    for inv in deferred {
        let _ = inv.complete(json!({"synced": 2}));
    }
    let sync_after = match &sync {
        Ok((_, p)) => match p.wait(1000) {
            Ok(t) => serde_json::from_str::<Value>(t.as_str()).unwrap_or(Value::Null),
            Err(e) => json!(format!("{e:?}")),
        },
        Err(e) => json!(e),
    };
    let report = json!({
        "syncWait": sync_wait,
        "syncPoll": sync_poll,
        "syncBlockingError": sync_blocking,
        "settled": settled,
        "syncAfter": sync_after,
        "receipt": receipt,
        "receiptAgain": receipt_again,
        "approvedAgain": approved_again,
        "blocking": blocking.as_ref().ok(),
        "blockingError": blocking.as_ref().err(),
        "waited": waited,
        "stats": rt.stats_json().ok().and_then(|t| serde_json::from_str::<Value>(&t).ok()),
        "seen": drain(&smoke.seen),
    });
    publish(report)
}

/// Step 5: closes the runtime (drops it) and reports its last counters.
#[unsafe(no_mangle)]
pub extern "C" fn smoke_close() -> usize {
    let Some(smoke) = lock(&SMOKE).take() else {
        return publish(json!({"error": "smoke_setup first"}));
    };
    let host = smoke.runtime.host();
    drop(smoke.runtime);
    let report = json!({
        "closed": host.is_closed(),
        "stats": host.stats_json().ok().and_then(|t| serde_json::from_str::<Value>(&t).ok()),
    });
    publish(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    fn report(len: usize) -> Value {
        let text = lock(&REPORT).clone();
        assert_eq!(text.len(), len);
        serde_json::from_slice(&text).unwrap()
    }

    /// The steps the Node script runs, natively (the script asserts more).
    #[test]
    fn the_smoke_steps_run_natively() {
        let setup = report(smoke_setup());
        assert!(setup.get("error").is_none(), "{setup}");
        assert_eq!(
            setup["tryBuildWithoutClock"],
            Value::Null,
            "native has a clock: {setup}"
        );
        let run = report(smoke_run());
        assert_eq!(run["read"]["status"], "succeeded", "{run}");
        assert_eq!(run["invalid"]["error"]["code"], "INPUT_INVALID", "{run}");
        assert_eq!(run["notJson"]["error"]["code"], "INPUT_INVALID", "{run}");
        assert_eq!(run["write2"]["status"], "confirmation_required", "{run}");
        assert_eq!(run["approved"]["status"], "succeeded", "{run}");
        let deadline = run["nextDeadline"].as_i64().unwrap();
        host::NOW.store(deadline, Ordering::SeqCst);
        let due = report(smoke_run_due_timers());
        assert_eq!(due["expired"], 1, "{due}");
        let after = report(smoke_after_expiry());
        assert_eq!(after["receipt"]["error"]["code"], "CONFIRMATION_EXPIRED", "{after}");
        let closed = report(smoke_close());
        assert_eq!(closed["closed"], true, "{closed}");
    }
}
