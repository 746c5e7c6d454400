//! Random sequences of C ABI calls on one runtime: binds, unbinds and
//! rebinds, availability changes, context changes, refreshes, invokes with
//! inline and deferred handlers and policies settled later, cancellations,
//! confirmations approved, declined, resolved inline or left to expire
//! (manual clock and timers), preflights, subscriptions, snapshots, stats,
//! late settlements, and the runtime freed mid-sequence, from inside a
//! handler, or from the confirmation callback when it hears an approval.
//!
//! Invariants checked after every step (a ledger keyed by registration):
//! - no call returns PANIC, and each returns a code the header documents
//!   for that situation;
//! - every invoke and resolve that returned OK gets exactly one outcome,
//!   every preflight exactly one report, and each `user_data_free` runs
//!   exactly once after its callback (never for a refused registration);
//! - a failed / denied / succeeded / confirmation_required outcome comes
//!   after its lifecycle event with the same phase and code;
//! - each confirmation the confirmation callback heard open is closed
//!   exactly once, and all are closed once the runtime is freed;
//! - the stats agree with the ledger: pending invocations, pending
//!   confirmations, pending preflights, reserved ids = pending invocations
//!   + pending confirmations, bindings = installed bindings, receipts at
//!   most 256;
//! - no handler starts for an invocation whose token is already cancelled;
//! - snapshot revisions never go back and each subscriber hears strictly
//!   increasing revisions;
//! - a binding's user data is released once, never while one of its
//!   callbacks runs, and only after it was unbound or the runtime freed.
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use arbitrary::Arbitrary;
use common::*;
use libfuzzer_sys::fuzz_target;
use rcip_capi::binding::*;
use rcip_capi::cancel::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::policy::*;
use rcip_capi::result::rcip_result;
use rcip_capi::runtime::*;
use rcip_capi::sink::*;
use rcip_capi::snapshot::*;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::ptr;

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum HandlerMode {
    Complete,
    CompleteSchemaFail,
    CompleteNotJson,
    Fail,
    Abort,
    FreeUnsettled,
    Defer,
    UnbindSelfThenComplete,
    RefreshThenComplete,
    FreeRuntime,
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum AvailMode {
    None,
    Available,
    Unavailable,
    Fails,
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum PolicyMode {
    Allow,
    Deny,
    Confirm,
    Bad,
    Fail,
    FreeUndecided,
    Defer,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum TokenChoice {
    None,
    New,
    Existing(u8),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum SettleHow {
    Complete,
    CompleteSchemaFail,
    CompleteNotJson,
    Fail,
    Abort,
    Free,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum DecideHow {
    Allow,
    Deny,
    Confirm,
    Bad,
    NotJson,
    WrongShape,
    Fail,
    Free,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Bind {
        cap: u8,
        handler: HandlerMode,
        avail: AvailMode,
    },
    Unbind {
        slot: u8,
    },
    FreeBinding {
        slot: u8,
    },
    SetRevision {
        slot: u8,
        revision: u8,
    },
    SetAvailability {
        slot: u8,
        avail: AvailMode,
    },
    SetContext {
        which: u8,
    },
    ClearContext,
    Refresh,
    Invoke {
        cap: u8,
        input: u8,
        id: Option<u8>,
        token: TokenChoice,
        policy: PolicyMode,
    },
    Settle {
        index: u8,
        how: SettleHow,
    },
    Decide {
        index: u8,
        how: DecideHow,
    },
    Cancel {
        token: u8,
    },
    CloneToken {
        token: u8,
    },
    FreeToken {
        token: u8,
    },
    OnCancel {
        token: u8,
    },
    Resolve {
        confirmation: u8,
        approved: bool,
        policy: PolicyMode,
    },
    Advance {
        ms: u8,
    },
    Preflight {
        proposals: Vec<(u8, u8)>,
        token: TokenChoice,
        policy: PolicyMode,
    },
    Subscribe {
        refresh_inside: bool,
    },
    Unsubscribe {
        index: u8,
    },
    Snapshot,
    List {
        filter: u8,
    },
    Stats,
    FreeRuntime,
    /// `rcip_runtime_close`, the checks that the closed handle answers
    /// CLOSED, then the free.
    CloseThenFreeRuntime,
}

#[derive(Arbitrary, Debug)]
struct Config {
    host_policy: bool,
    ttl: u8,
    resolve_inline: Option<bool>,
    /// Below 16: the confirmation callback frees the runtime when it hears
    /// an approval (the re-run then finds it closed).
    free_on_approved: u8,
    ids: IdMode,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum IdMode {
    BuiltIn,
    Counter,
    Failing,
    Constant,
}

const CAPS: [&str; 6] = [
    "items.list",
    "items.write",
    "items.purge",
    "mail.send",
    "misc.any",
    "nope",
];
const CONTEXTS: [(&str, rcip_result); 6] = [
    (r#"{"activeScopeIds": []}"#, rcip_result::Ok),
    (r#"{"activeScopeIds": ["main"]}"#, rcip_result::Ok),
    (
        r#"{"activeScopeIds": ["other", "main", "other"], "primaryScopeId": "main"}"#,
        rcip_result::Ok,
    ),
    (
        r#"{"activeScopeIds": ["main.detail"], "primaryScopeId": ""}"#,
        rcip_result::Ok,
    ),
    (r#"{"activeScopeIds": ["nope"]}"#, rcip_result::UnknownScope),
    (
        r#"{"activeScopeIds": ["main"], "primaryScopeId": "other"}"#,
        rcip_result::PrimaryNotActive,
    ),
];
const FILTERS: [(&str, rcip_result); 5] = [
    (r#"{}"#, rcip_result::Ok),
    (r#"{"context": "current", "availableOnly": true}"#, rcip_result::Ok),
    (r#"{"scopeId": "main", "effect": "read"}"#, rcip_result::Ok),
    (r#"{"context": "mine"}"#, rcip_result::InvalidArgument),
    (r#"not json"#, rcip_result::InvalidJson),
];

fn input_for(cap: &str, choice: u8) -> &'static str {
    match choice % 6 {
        0 | 1 | 2 => match cap {
            "items.write" => r#"{"id": "a", "value": 1.5, "nested": {"x": 1}}"#,
            "mail.send" => r#"{"to": "ada"}"#,
            "items.list" => r#"{"n": 3, "q": "abc"}"#,
            _ => "{}",
        },
        3 => r#"{"n": -1, "id": "", "to": 5}"#,
        4 => "not json",
        _ => "[1, 2]",
    }
}

fn output_for(cap: &str) -> &'static str {
    match cap {
        "items.write" => r#"{"ok": true}"#,
        "mail.send" => r#"{"sent": 1}"#,
        _ => r#"{"done": true}"#,
    }
}

/// A registration of an outcome or report callback.
#[derive(Default)]
struct Entry {
    kind: &'static str,
    registered: bool,
    outcomes: Vec<String>,
    freed: u32,
    /// For resolves of an id that was pending: events must precede.
    check_events: bool,
}

/// A binding slot: its user data counts callbacks and releases.
struct BindingData {
    cap: &'static str,
    handler: HandlerMode,
    avail: Cell<AvailMode>,
    running: Cell<u32>,
    freed: Cell<u32>,
    released_ok: Cell<bool>,
    handle: Cell<*mut rcip_binding>,
}

struct SubData {
    last: Cell<u64>,
    freed: Cell<u32>,
    refresh_inside: bool,
}

struct OnCancelData {
    ran: Cell<u32>,
    freed: Cell<u32>,
}

#[derive(Default)]
struct World {
    runtime: usize,
    freed: bool,
    now: i64,
    policy_mode: Option<PolicyMode>,
    resolve_inline: Option<bool>,
    free_on_approved: bool,
    id_mode: Option<IdMode>,
    id_counter: u64,
    held_invocations: Vec<(usize, bool)>,
    held_policies: Vec<(usize, bool)>,
    /// invocation id -> last (phase, errorCode) event.
    last_event: HashMap<String, (String, Option<String>)>,
    open_confirmations: HashMap<String, String>,
    opened_total: u32,
    confirmation_ids: Vec<String>,
    refresh_budget: u32,
    last_revision: u64,
}

thread_local! {
    static W: RefCell<World> = RefCell::new(World::default());
}

fn w<R>(f: impl FnOnce(&mut World) -> R) -> R {
    W.with(|w| f(&mut w.borrow_mut()))
}

fn runtime() -> *mut rcip_runtime {
    w(|w| {
        if w.freed {
            ptr::null_mut()
        } else {
            w.runtime as *mut rcip_runtime
        }
    })
}

// ----- callbacks ------------------------------------------------------------

unsafe extern "C" fn clock(_: *mut c_void) -> i64 {
    // The clock may not call the runtime.
    let rt = w(|w| w.runtime as *const rcip_runtime);
    if !w(|w| w.freed) {
        let mut s = ptr::null_mut();
        assert_eq!(rcip_runtime_stats(rt, &mut s), rcip_result::WrongContext);
    }
    w(|w| w.now)
}

unsafe extern "C" fn ids(_: *mut c_void, prefix: *const c_char, sink: *mut rcip_string_sink) -> i32 {
    let prefix = borrowed(prefix).unwrap();
    assert!(prefix == "invocation" || prefix == "confirmation");
    match w(|w| w.id_mode).unwrap() {
        IdMode::BuiltIn => 1,
        IdMode::Failing => 7,
        IdMode::Constant => {
            let v = cstr(&format!("{prefix}-same"));
            assert_eq!(rcip_string_sink_set(sink, v.as_ptr().cast()), rcip_result::Ok);
            0
        }
        IdMode::Counter => {
            let n = w(|w| {
                w.id_counter += 1;
                w.id_counter
            });
            let v = cstr(&format!("{prefix}-{n}"));
            assert_eq!(rcip_string_sink_set(sink, v.as_ptr().cast()), rcip_result::Ok);
            0
        }
    }
}

unsafe extern "C" fn on_event(_: *mut c_void, json_text: *const c_char) {
    let e = json(&borrowed(json_text).unwrap());
    let id = e["invocationId"].as_str().expect("invocationId").to_string();
    let phase = e["phase"].as_str().expect("phase").to_string();
    assert!(
        [
            "requested",
            "started",
            "succeeded",
            "failed",
            "denied",
            "confirmation_requested",
            "confirmation_declined"
        ]
        .contains(&phase.as_str()),
        "{e}"
    );
    assert!(
        e.get("input").is_none() && e.get("output").is_none(),
        "events are redacted: {e}"
    );
    let code = e["errorCode"].as_str().map(str::to_string);
    w(|w| w.last_event.insert(id, (phase, code)));
}

unsafe extern "C" fn on_confirmation(_: *mut c_void, json_text: *const c_char) {
    let n = json(&borrowed(json_text).unwrap());
    match n["event"].as_str() {
        Some("opened") => {
            let id = n["confirmation"]["id"].as_str().unwrap().to_string();
            let inv = n["invocationId"].as_str().unwrap().to_string();
            let dup = w(|w| {
                w.opened_total += 1;
                w.confirmation_ids.push(id.clone());
                w.open_confirmations.insert(id.clone(), inv).is_some()
            });
            assert!(!dup, "two pending confirmations share the id {id}");
            if let Some(approved) = w(|w| w.resolve_inline) {
                let rt = runtime();
                if !rt.is_null() {
                    resolve(rt, &id, approved);
                }
            }
        }
        Some("closed") => {
            let id = n["confirmationId"].as_str().unwrap().to_string();
            let reason = n["reason"].as_str().unwrap();
            assert!(
                ["approved", "declined", "expired", "cancelled", "invalidated", "closed"].contains(&reason),
                "{n}"
            );
            let was = w(|w| w.open_confirmations.remove(&id));
            assert!(was.is_some(), "closed a confirmation that was not open: {n}");
            assert_eq!(was.as_deref(), n["invocationId"].as_str());
            if reason == "approved" && w(|w| w.free_on_approved) {
                let rt = runtime();
                if !rt.is_null() {
                    w(|w| w.freed = true);
                    rcip_runtime_free(rt);
                }
            }
        }
        _ => panic!("unknown confirmation notice {n}"),
    }
}

unsafe extern "C" fn on_outcome(ud: *mut c_void, json_text: *const c_char) {
    let entry = &mut *(ud as *mut Entry);
    let text = borrowed(json_text).unwrap();
    let o = json(&text);
    if entry.kind == "preflight" {
        let outcomes = o["outcomes"].as_array().expect("report outcomes");
        for p in outcomes {
            let status = p["status"].as_str().unwrap();
            assert!(["ready", "confirmation_required", "blocked"].contains(&status), "{o}");
        }
        assert_eq!(o["consistent"].is_boolean(), true);
    } else {
        check_outcome(&o, entry.check_events);
    }
    entry.outcomes.push(text);
    assert_eq!(entry.outcomes.len(), 1, "exactly one outcome per registration");
}

fn check_outcome(o: &Value, check_events: bool) {
    let status = o["status"].as_str().expect("status");
    let id = o["invocationId"].as_str().expect("invocationId").to_string();
    let code = o["error"]["code"].as_str();
    let want = match status {
        "succeeded" => Some(("succeeded".to_string(), None)),
        "confirmation_required" => {
            assert!(o["confirmation"]["id"].is_string(), "{o}");
            Some(("confirmation_requested".to_string(), None))
        }
        "failed" | "denied" => {
            let code = code.expect("error code");
            assert!(
                [
                    "INVOCATION_ALREADY_ACTIVE",
                    "INPUT_INVALID",
                    "CAPABILITY_NOT_FOUND",
                    "CAPABILITY_UNBOUND",
                    "CAPABILITY_UNAVAILABLE",
                    "POLICY_EVALUATION_FAILED",
                    "POLICY_DENIED",
                    "EXECUTION_ABORTED",
                    "EXECUTION_FAILED",
                    "OUTPUT_INVALID",
                    "CONFIRMATION_DECLINED",
                    "CONFIRMATION_EXPIRED",
                    "CONFIRMATION_NOT_FOUND"
                ]
                .contains(&code),
                "{o}"
            );
            let no_event = code == "INVOCATION_ALREADY_ACTIVE"
                || code == "CONFIRMATION_NOT_FOUND"
                || (code == "INPUT_INVALID" && o["error"].get("validationIssues").is_none());
            if no_event {
                None
            } else if code == "CONFIRMATION_DECLINED" {
                Some(("confirmation_declined".to_string(), Some(code.to_string())))
            } else {
                Some((status.to_string(), Some(code.to_string())))
            }
        }
        other => panic!("unknown status {other}: {o}"),
    };
    if let (true, Some(want)) = (check_events, want) {
        let got = w(|w| w.last_event.get(&id).cloned());
        assert_eq!(got.as_ref(), Some(&want), "the outcome's event came first: {o}");
    }
}

unsafe extern "C" fn free_entry(ud: *mut c_void) {
    let entry = &mut *(ud as *mut Entry);
    assert!(entry.registered, "user_data_free of a refused registration");
    assert_eq!(entry.outcomes.len(), 1, "user_data_free runs after the outcome");
    entry.freed += 1;
}

unsafe extern "C" fn handler(ud: *mut c_void, inv: *mut rcip_invocation) {
    let b = &*(ud as *const BindingData);
    assert_eq!(b.freed.get(), 0, "a callback after its user data was released");
    let token = rcip_invocation_cancel_token(inv);
    assert!(
        !rcip_cancel_token_is_cancelled(token),
        "a handler started for a cancelled invocation"
    );
    assert_eq!(borrowed(rcip_invocation_capability_id(inv)).unwrap(), b.cap);
    json(&borrowed(rcip_invocation_input(inv)).unwrap());
    json(&borrowed(rcip_invocation_semantic_context(inv)).unwrap());
    b.running.set(b.running.get() + 1);
    settle_in_handler(b, inv);
    b.running.set(b.running.get() - 1);
}

unsafe fn settle_in_handler(b: &BindingData, inv: *mut rcip_invocation) {
    let ok = |rc: rcip_result| assert_eq!(rc, rcip_result::Ok, "{:?}", last_error());
    let out = cstr(output_for(b.cap));
    match b.handler {
        HandlerMode::Complete => ok(rcip_invocation_complete(inv, out.as_ptr().cast())),
        HandlerMode::CompleteSchemaFail => ok(rcip_invocation_complete(
            inv,
            c"{\"ok\": \"no\", \"sent\": \"x\"}".as_ptr(),
        )),
        HandlerMode::CompleteNotJson => ok(rcip_invocation_complete(inv, c"{oops".as_ptr())),
        HandlerMode::Fail => ok(rcip_invocation_fail(inv, false)),
        HandlerMode::Abort => ok(rcip_invocation_fail(inv, true)),
        HandlerMode::FreeUnsettled => {}
        HandlerMode::Defer => {
            w(|w| w.held_invocations.push((inv as usize, false)));
            return;
        }
        HandlerMode::UnbindSelfThenComplete => {
            b.released_ok.set(true);
            let rc = rcip_binding_unbind(b.handle.get());
            assert!(rc == rcip_result::Ok || rc == rcip_result::Closed, "{rc:?}");
            ok(rcip_invocation_complete(inv, out.as_ptr().cast()));
        }
        HandlerMode::RefreshThenComplete => {
            let rt = runtime();
            if !rt.is_null() {
                ok(rcip_host_refresh(rcip_runtime_host(rt)));
            }
            ok(rcip_invocation_complete(inv, out.as_ptr().cast()));
        }
        HandlerMode::FreeRuntime => {
            let rt = runtime();
            if !rt.is_null() {
                w(|w| w.freed = true);
                rcip_runtime_free(rt);
            }
            ok(rcip_invocation_complete(inv, out.as_ptr().cast()));
        }
    }
    rcip_invocation_free(inv);
}

unsafe extern "C" fn availability(ud: *mut c_void, sink: *mut rcip_availability_sink) -> i32 {
    let b = &*(ud as *const BindingData);
    assert_eq!(b.freed.get(), 0, "a callback after its user data was released");
    match b.avail.get() {
        AvailMode::None | AvailMode::Available => {
            assert_eq!(
                rcip_availability_set(sink, true, ptr::null(), ptr::null()),
                rcip_result::Ok
            );
            0
        }
        AvailMode::Unavailable => {
            assert_eq!(
                rcip_availability_set(sink, false, c"OFF".as_ptr(), c"switched off".as_ptr()),
                rcip_result::Ok
            );
            0
        }
        AvailMode::Fails => 3,
    }
}

unsafe extern "C" fn free_binding_data(ud: *mut c_void) {
    let b = &*(ud as *const BindingData);
    assert_eq!(b.running.get(), 0, "binding user data released while its handler runs");
    assert!(
        b.released_ok.get() || w(|w| w.freed),
        "binding user data released while still bound"
    );
    b.freed.set(b.freed.get() + 1);
}

unsafe extern "C" fn policy(_: *mut c_void, req: *mut rcip_policy_request) {
    let ctx = json(&borrowed(rcip_policy_request_context(req)).unwrap());
    let phase = ctx["phase"].as_str().unwrap();
    assert_eq!(phase == "preflight", rcip_policy_request_invocation_id(req).is_null());
    let mode = w(|w| w.policy_mode).unwrap_or(PolicyMode::Allow);
    let decide = |text: &std::ffi::CStr| rcip_policy_request_decide(req, text.as_ptr());
    match mode {
        PolicyMode::Allow => assert_eq!(decide(cr#"{"decision": "allow"}"#), rcip_result::Ok),
        PolicyMode::Deny => assert_eq!(decide(cr#"{"decision": "deny", "reason": "no"}"#), rcip_result::Ok),
        PolicyMode::Confirm => assert_eq!(decide(cr#"{"decision": "confirm"}"#), rcip_result::Ok),
        PolicyMode::Bad => assert_eq!(decide(cr#"{"decision": "perhaps"}"#), rcip_result::InvalidArgument),
        PolicyMode::Fail => assert_eq!(rcip_policy_request_fail(req), rcip_result::Ok),
        PolicyMode::FreeUndecided => {}
        PolicyMode::Defer => {
            w(|w| w.held_policies.push((req as usize, false)));
            return;
        }
    }
    rcip_policy_request_free(req);
}

unsafe extern "C" fn subscriber(ud: *mut c_void, revision: u64) {
    let s = &*(ud as *const SubData);
    assert_eq!(s.freed.get(), 0);
    assert!(
        revision > s.last.get(),
        "revisions reach a subscriber in increasing order, once each"
    );
    s.last.set(revision);
    if s.refresh_inside && w(|w| w.refresh_budget > 0) {
        w(|w| w.refresh_budget -= 1);
        let rt = runtime();
        if !rt.is_null() {
            assert_eq!(rcip_host_refresh(rcip_runtime_host(rt)), rcip_result::Ok);
        }
    }
}

unsafe extern "C" fn free_sub(ud: *mut c_void) {
    let s = &*(ud as *const SubData);
    s.freed.set(s.freed.get() + 1);
}

unsafe extern "C" fn on_cancel(ud: *mut c_void) {
    let d = &*(ud as *const OnCancelData);
    assert_eq!(d.freed.get(), 0);
    d.ran.set(d.ran.get() + 1);
}

unsafe extern "C" fn free_on_cancel(ud: *mut c_void) {
    let d = &*(ud as *const OnCancelData);
    d.freed.set(d.freed.get() + 1);
}

// ----- the driver -----------------------------------------------------------

struct Driver {
    entries: Vec<Box<Entry>>,
    bindings: Vec<Box<BindingData>>,
    subs: Vec<(Box<SubData>, *mut rcip_subscription)>,
    tokens: Vec<*mut rcip_cancel_token>,
    on_cancels: Vec<(Box<OnCancelData>, usize)>,
}

unsafe fn resolve(rt: *mut rcip_runtime, id: &str, approved: bool) -> rcip_result {
    // Entries made inside callbacks are leaked on purpose (checked below
    // through the same ledger rules, kept in a global list).
    let pending = w(|w| w.open_confirmations.contains_key(id));
    let entry = Box::into_raw(Box::new(Entry {
        kind: "resolve",
        registered: true,
        check_events: pending,
        ..Default::default()
    }));
    INLINE_ENTRIES.with(|e| e.borrow_mut().push(entry as usize));
    let idc = cstr(id);
    let rc = rcip_host_resolve_confirmation(
        rcip_runtime_host(rt),
        idc.as_ptr().cast(),
        approved,
        Some(on_outcome),
        entry.cast(),
        Some(free_entry),
    );
    no_panic(rc, "resolve");
    if rc != rcip_result::Ok {
        assert_eq!(rc, rcip_result::Closed, "{:?}", last_error());
        (*entry).registered = false;
    }
    rc
}

thread_local! {
    static INLINE_ENTRIES: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

impl Driver {
    unsafe fn token(&mut self, choice: TokenChoice) -> *const rcip_cancel_token {
        match choice {
            TokenChoice::None => ptr::null(),
            TokenChoice::New => {
                let mut t = ptr::null_mut();
                assert_eq!(rcip_cancel_token_new(&mut t), rcip_result::Ok);
                self.tokens.push(t);
                t
            }
            TokenChoice::Existing(i) => {
                if self.tokens.is_empty() {
                    return ptr::null();
                }
                self.tokens[i as usize % self.tokens.len()]
            }
        }
    }

    fn binding(&self, slot: u8) -> Option<&BindingData> {
        if self.bindings.is_empty() {
            return None;
        }
        let b = &self.bindings[slot as usize % self.bindings.len()];
        (!b.handle.get().is_null()).then_some(&**b)
    }

    unsafe fn step(&mut self, op: &Op) {
        let rt = runtime();
        let alive = !rt.is_null();
        let host = rcip_runtime_host(rt);
        let client = rcip_runtime_client(rt);
        w(|w| w.refresh_budget = 3);
        match op {
            Op::Bind {
                cap,
                handler: mode,
                avail,
            } => {
                if !alive {
                    return;
                }
                let cap = CAPS[*cap as usize % CAPS.len()];
                let data = Box::new(BindingData {
                    cap,
                    handler: *mode,
                    avail: Cell::new(*avail),
                    running: Cell::new(0),
                    freed: Cell::new(0),
                    released_ok: Cell::new(false),
                    handle: Cell::new(ptr::null_mut()),
                });
                let ud = &*data as *const BindingData as *mut c_void;
                let avail_cb: rcip_capi::callback::rcip_availability_callback = if *avail == AvailMode::None {
                    None
                } else {
                    Some(availability)
                };
                let idc = cstr(cap);
                let installed_before = self.bindings.iter().any(|b| {
                    b.cap == cap && b.handle.get() != ptr::null_mut() && rcip_binding_is_installed(b.handle.get())
                });
                let mut out = ptr::null_mut();
                let rc = rcip_host_bind(
                    host,
                    idc.as_ptr().cast(),
                    Some(handler),
                    avail_cb,
                    ud,
                    Some(free_binding_data),
                    &mut out,
                );
                no_panic(rc, "bind");
                let want = if cap == "nope" {
                    rcip_result::NotInCatalog
                } else if installed_before {
                    rcip_result::AlreadyBound
                } else {
                    rcip_result::Ok
                };
                if runtime().is_null() {
                    // A subscriber freed the runtime during the bind's refresh.
                    assert!(rc == want || rc == rcip_result::Ok);
                } else {
                    assert_eq!(rc, want, "{:?}", last_error());
                }
                assert_eq!(out.is_null(), rc != rcip_result::Ok);
                if rc == rcip_result::Ok {
                    data.handle.set(out);
                    self.bindings.push(data);
                } else {
                    assert_eq!(data.freed.get(), 0, "a refused bind released the user data");
                }
            }
            Op::Unbind { slot } | Op::FreeBinding { slot } => {
                let Some(b) = self.binding(*slot) else { return };
                let h = b.handle.get();
                b.released_ok.set(true);
                if matches!(op, Op::Unbind { .. }) {
                    let rc = rcip_binding_unbind(h);
                    no_panic(rc, "unbind");
                    assert_eq!(rc, if alive { rcip_result::Ok } else { rcip_result::Closed });
                    assert!(!rcip_binding_is_installed(h));
                } else {
                    rcip_binding_free(h);
                    b.handle.set(ptr::null_mut());
                }
            }
            Op::SetRevision { slot, revision } => {
                let Some(b) = self.binding(*slot) else { return };
                let rc = rcip_binding_set_revision(b.handle.get(), *revision as u64);
                no_panic(rc, "set_revision");
                assert_eq!(rc, if alive { rcip_result::Ok } else { rcip_result::Closed });
            }
            Op::SetAvailability { slot, avail } => {
                if let Some(b) = self.binding(*slot) {
                    if b.avail.get() != AvailMode::None && *avail != AvailMode::None {
                        b.avail.set(*avail);
                    }
                }
            }
            Op::SetContext { which } => {
                if !alive {
                    return;
                }
                let (text, want) = CONTEXTS[*which as usize % CONTEXTS.len()];
                let t = cstr(text);
                let rc = rcip_host_set_context(host, t.as_ptr().cast());
                no_panic(rc, "set_context");
                if !runtime().is_null() {
                    assert_eq!(rc, want, "{:?}", last_error());
                }
            }
            Op::ClearContext => {
                if alive {
                    let rc = rcip_host_clear_context(host);
                    assert!(rc == rcip_result::Ok || runtime().is_null(), "{rc:?}");
                }
            }
            Op::Refresh => {
                if alive {
                    let rc = rcip_host_refresh(host);
                    assert!(rc == rcip_result::Ok || runtime().is_null(), "{rc:?}");
                }
            }
            Op::Invoke {
                cap,
                input,
                id,
                token,
                policy,
            } => {
                if !alive {
                    return;
                }
                let cap = CAPS[*cap as usize % CAPS.len()];
                let input = cstr(input_for(cap, *input));
                let capc = cstr(cap);
                let idc = id.map(|i| cstr(&format!("inv-{}", i % 4)));
                let t = self.token(*token);
                w(|w| w.policy_mode = Some(*policy));
                let mut entry = Box::new(Entry {
                    kind: "invoke",
                    registered: true,
                    check_events: true,
                    ..Default::default()
                });
                let ud = &mut *entry as *mut Entry as *mut c_void;
                let mut out_id = ptr::null_mut();
                let rc = rcip_client_invoke(
                    client,
                    capc.as_ptr().cast(),
                    input.as_ptr().cast(),
                    idc.as_ref().map_or(ptr::null(), |c| c.as_ptr().cast()),
                    t,
                    Some(on_outcome),
                    ud,
                    Some(free_entry),
                    &mut out_id,
                );
                no_panic(rc, "invoke");
                assert_eq!(rc, rcip_result::Ok, "{:?}", last_error());
                let got = take(out_id).expect("invocation id");
                if let Some(c) = &idc {
                    assert_eq!(got.as_bytes(), &c[..c.len() - 1]);
                }
                self.entries.push(entry);
            }
            Op::Settle { index, how } => {
                let held = w(|w| w.held_invocations.clone());
                if held.is_empty() {
                    return;
                }
                let i = *index as usize % held.len();
                let (p, settled) = held[i];
                let inv = p as *mut rcip_invocation;
                let cap = borrowed(rcip_invocation_capability_id(inv)).unwrap();
                let out = cstr(output_for(&cap));
                let rc = match how {
                    SettleHow::Complete => rcip_invocation_complete(inv, out.as_ptr().cast()),
                    SettleHow::CompleteSchemaFail => {
                        rcip_invocation_complete(inv, c"{\"ok\": 1, \"sent\": \"x\"}".as_ptr())
                    }
                    SettleHow::CompleteNotJson => rcip_invocation_complete(inv, c"\xff".as_ptr()),
                    SettleHow::Fail => rcip_invocation_fail(inv, false),
                    SettleHow::Abort => rcip_invocation_fail(inv, true),
                    SettleHow::Free => {
                        w(|w| w.held_invocations.remove(i));
                        rcip_invocation_free(inv);
                        return;
                    }
                };
                no_panic(rc, "settle");
                if settled {
                    assert_eq!(rc, rcip_result::AlreadyCompleted);
                } else {
                    assert_eq!(rc, rcip_result::Ok, "a first settle (late or not) is OK");
                    w(|w| {
                        if let Some(e) = w.held_invocations.iter_mut().find(|e| e.0 == p) {
                            e.1 = true;
                        }
                    });
                }
            }
            Op::Decide { index, how } => {
                let held = w(|w| w.held_policies.clone());
                if held.is_empty() {
                    return;
                }
                let i = *index as usize % held.len();
                let (p, settled) = held[i];
                let req = p as *mut rcip_policy_request;
                let (text, want): (&std::ffi::CStr, rcip_result) = match how {
                    DecideHow::Allow => (cr#"{"decision": "allow"}"#, rcip_result::Ok),
                    DecideHow::Deny => (cr#"{"decision": "deny"}"#, rcip_result::Ok),
                    DecideHow::Confirm => (cr#"{"decision": "confirm", "reason": "sure?"}"#, rcip_result::Ok),
                    DecideHow::Bad => (cr#"{"decision": 7}"#, rcip_result::InvalidArgument),
                    DecideHow::NotJson => (c"allow", rcip_result::InvalidJson),
                    DecideHow::WrongShape => (cr#"{"decision": "allow", "why": 1}"#, rcip_result::InvalidArgument),
                    DecideHow::Fail => (c"", rcip_result::Ok),
                    DecideHow::Free => {
                        w(|w| w.held_policies.remove(i));
                        rcip_policy_request_free(req);
                        return;
                    }
                };
                let rc = if matches!(how, DecideHow::Fail) {
                    rcip_policy_request_fail(req)
                } else {
                    rcip_policy_request_decide(req, text.as_ptr())
                };
                no_panic(rc, "decide");
                let parse_error = matches!(how, DecideHow::NotJson | DecideHow::WrongShape);
                if settled && !parse_error {
                    assert_eq!(rc, rcip_result::AlreadyCompleted);
                } else if settled {
                    assert!(rc == want || rc == rcip_result::AlreadyCompleted, "{rc:?}");
                } else {
                    assert_eq!(rc, want, "{:?}", last_error());
                    if !parse_error {
                        w(|w| {
                            if let Some(e) = w.held_policies.iter_mut().find(|e| e.0 == p) {
                                e.1 = true;
                            }
                        });
                    }
                }
            }
            Op::Cancel { token } => {
                if self.tokens.is_empty() {
                    return;
                }
                let t = self.tokens[*token as usize % self.tokens.len()];
                if !t.is_null() {
                    assert_eq!(rcip_cancel_token_cancel(t), rcip_result::Ok);
                    assert!(rcip_cancel_token_is_cancelled(t));
                }
            }
            Op::CloneToken { token } => {
                if self.tokens.is_empty() {
                    return;
                }
                let t = self.tokens[*token as usize % self.tokens.len()];
                if !t.is_null() {
                    let mut c = ptr::null_mut();
                    assert_eq!(rcip_cancel_token_clone(t, &mut c), rcip_result::Ok);
                    assert_eq!(rcip_cancel_token_is_cancelled(c), rcip_cancel_token_is_cancelled(t));
                    self.tokens.push(c);
                }
            }
            Op::FreeToken { token } => {
                if self.tokens.is_empty() {
                    return;
                }
                let i = *token as usize % self.tokens.len();
                rcip_cancel_token_free(self.tokens[i]);
                self.tokens[i] = ptr::null_mut();
            }
            Op::OnCancel { token } => {
                if self.tokens.is_empty() {
                    return;
                }
                let t = self.tokens[*token as usize % self.tokens.len()];
                if t.is_null() {
                    return;
                }
                let d = Box::new(OnCancelData {
                    ran: Cell::new(0),
                    freed: Cell::new(0),
                });
                let was = rcip_cancel_token_is_cancelled(t);
                let rc = rcip_cancel_token_on_cancel(
                    t,
                    Some(on_cancel),
                    &*d as *const _ as *mut c_void,
                    Some(free_on_cancel),
                );
                assert_eq!(rc, rcip_result::Ok);
                if was {
                    assert_eq!(
                        (d.ran.get(), d.freed.get()),
                        (1, 1),
                        "runs at once on a cancelled token"
                    );
                }
                self.on_cancels.push((d, t as usize));
            }
            Op::Resolve {
                confirmation,
                approved,
                policy,
            } => {
                if !alive {
                    return;
                }
                let known = w(|w| w.confirmation_ids.clone());
                let id = if known.is_empty() || *confirmation as usize % 8 == 7 {
                    "confirmation-unknown".to_string()
                } else {
                    known[*confirmation as usize % known.len()].clone()
                };
                w(|w| w.policy_mode = Some(*policy));
                resolve(rt, &id, *approved);
            }
            Op::Advance { ms } => {
                if !alive {
                    return;
                }
                w(|w| w.now += *ms as i64 * 4);
                let mut has = false;
                let mut at = 0;
                assert_eq!(rcip_runtime_next_deadline(rt, &mut has, &mut at), rcip_result::Ok);
                let now = w(|w| w.now);
                let rc = rcip_runtime_run_due_timers(rt);
                no_panic(rc, "run_due_timers");
                assert_eq!(rc, rcip_result::Ok);
                if !runtime().is_null() && has && at <= now {
                    // Everything due expired (unless a callback opened a new one).
                    let mut has2 = false;
                    let mut at2 = 0;
                    assert_eq!(rcip_runtime_next_deadline(rt, &mut has2, &mut at2), rcip_result::Ok);
                    assert!(!has2 || at2 > now, "a due confirmation survived run_due_timers");
                }
            }
            Op::Preflight {
                proposals,
                token,
                policy,
            } => {
                if !alive {
                    return;
                }
                let n = proposals.len().min(17);
                let caps: Vec<Vec<u8>> = proposals[..n]
                    .iter()
                    .map(|(c, _)| cstr(CAPS[*c as usize % CAPS.len()]))
                    .collect();
                let inputs: Vec<Vec<u8>> = proposals[..n]
                    .iter()
                    .map(|(c, i)| cstr(input_for(CAPS[*c as usize % CAPS.len()], *i)))
                    .collect();
                let cap_ptrs: Vec<*const c_char> = caps.iter().map(|c| c.as_ptr().cast()).collect();
                let input_ptrs: Vec<*const c_char> = inputs.iter().map(|c| c.as_ptr().cast()).collect();
                let t = self.token(*token);
                w(|w| w.policy_mode = Some(*policy));
                let mut entry = Box::new(Entry {
                    kind: "preflight",
                    registered: true,
                    ..Default::default()
                });
                let ud = &mut *entry as *mut Entry as *mut c_void;
                let rc = rcip_client_preflight(
                    client,
                    cap_ptrs.as_ptr(),
                    input_ptrs.as_ptr(),
                    n,
                    t,
                    Some(on_outcome),
                    ud,
                    Some(free_entry),
                );
                no_panic(rc, "preflight");
                if n == 0 || n > 16 {
                    assert_eq!(rc, rcip_result::PreflightBatchInvalid);
                    entry.registered = false;
                } else {
                    assert_eq!(rc, rcip_result::Ok, "{:?}", last_error());
                }
                self.entries.push(entry);
            }
            Op::Subscribe { refresh_inside } => {
                if !alive {
                    return;
                }
                let d = Box::new(SubData {
                    last: Cell::new(0),
                    freed: Cell::new(0),
                    refresh_inside: *refresh_inside,
                });
                let mut s = ptr::null_mut();
                let rc = rcip_client_subscribe(
                    client,
                    Some(subscriber),
                    &*d as *const _ as *mut c_void,
                    Some(free_sub),
                    &mut s,
                );
                assert_eq!(rc, rcip_result::Ok);
                self.subs.push((d, s));
            }
            Op::Unsubscribe { index } => {
                if self.subs.is_empty() {
                    return;
                }
                let i = *index as usize % self.subs.len();
                let s = std::mem::replace(&mut self.subs[i].1, ptr::null_mut());
                rcip_subscription_free(s);
            }
            Op::Snapshot => {
                if !alive {
                    return;
                }
                let mut s = ptr::null();
                assert_eq!(rcip_client_snapshot(client, &mut s), rcip_result::Ok);
                let rev = rcip_snapshot_revision(s);
                let v = json(&borrowed(rcip_snapshot_json(s)).unwrap());
                assert_eq!(v["revision"], rev);
                let mut s2 = ptr::null();
                assert_eq!(rcip_client_snapshot(client, &mut s2), rcip_result::Ok);
                assert_eq!(s, s2, "the same snapshot object between refreshes");
                rcip_snapshot_free(s2);
                rcip_snapshot_free(s);
                let last = w(|w| std::mem::replace(&mut w.last_revision, rev));
                assert!(rev >= last, "snapshot revisions never go back");
            }
            Op::List { filter } => {
                if !alive {
                    return;
                }
                let (text, want) = FILTERS[*filter as usize % FILTERS.len()];
                let t = cstr(text);
                let mut out = ptr::null_mut();
                let rc = rcip_client_list_capabilities(client, t.as_ptr().cast(), &mut out);
                assert_eq!(rc, want);
                if let Some(list) = take(out) {
                    assert!(json(&list).is_array());
                }
            }
            Op::Stats => {}
            Op::FreeRuntime => {
                if alive {
                    w(|w| w.freed = true);
                    rcip_runtime_free(rt);
                }
            }
            Op::CloseThenFreeRuntime => {
                if alive {
                    // From here on the model treats the runtime as gone, as
                    // for the free (callbacks during the close see that).
                    w(|w| w.freed = true);
                    let rc = rcip_runtime_close(rt);
                    no_panic(rc, "close");
                    assert_eq!(rc, rcip_result::Ok);
                    // Everything pending ended during the close; the handle
                    // stays valid and acting through it is CLOSED.
                    assert_eq!(rcip_runtime_close(rt), rcip_result::Ok);
                    assert_eq!(rcip_host_refresh(rcip_runtime_host(rt)), rcip_result::Closed);
                    let mut s = ptr::null_mut();
                    assert_eq!(rcip_runtime_stats(rt, &mut s), rcip_result::Ok);
                    let stats = json(&take(s).unwrap());
                    assert_eq!(stats["closed"], true, "{stats}");
                    assert_eq!(stats["pendingInvocations"], 0, "{stats}");
                    assert_eq!(stats["pendingConfirmations"], 0, "{stats}");
                    rcip_runtime_free(rt);
                }
            }
        }
    }

    /// The stats agree with the ledger (only between steps, nothing running).
    unsafe fn check_stats(&self) {
        let rt = runtime();
        if rt.is_null() {
            return;
        }
        let mut s = ptr::null_mut();
        assert_eq!(rcip_runtime_stats(rt, &mut s), rcip_result::Ok);
        let stats = json(&take(s).unwrap());
        let inline: Vec<&Entry> = INLINE_ENTRIES.with(|e| e.borrow().iter().map(|&p| &*(p as *const Entry)).collect());
        let all = self.entries.iter().map(|e| &**e).chain(inline);
        let (mut inv, mut pf) = (0u64, 0u64);
        for e in all {
            if e.registered && e.outcomes.is_empty() {
                if e.kind == "preflight" {
                    pf += 1;
                } else {
                    inv += 1;
                }
            }
        }
        let conf = w(|w| w.open_confirmations.len()) as u64;
        assert_eq!(stats["pendingInvocations"], inv, "{stats}");
        assert_eq!(stats["pendingPreflights"], pf, "{stats}");
        assert_eq!(stats["pendingConfirmations"], conf, "{stats}");
        assert_eq!(stats["reservedIds"], inv + conf, "{stats}");
        assert!(stats["receipts"].as_u64().unwrap() <= 256);
        let installed = self
            .bindings
            .iter()
            .filter(|b| !b.handle.get().is_null() && rcip_binding_is_installed(b.handle.get()))
            .count();
        assert_eq!(stats["bindings"], installed as u64, "{stats}");
        assert_eq!(stats["closed"], false);
    }
}

fuzz_target!(|cfg: Config| unsafe { run(cfg) });

unsafe fn run(cfg: Config) {
    W.with(|w| *w.borrow_mut() = World::default());
    INLINE_ENTRIES.with(|e| e.borrow_mut().clear());
    let mut builder = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_new(catalog(), &mut builder), rcip_result::Ok);
    assert_eq!(rcip_runtime_builder_set_manual_timers(builder, true), rcip_result::Ok);
    assert_eq!(
        rcip_runtime_builder_set_confirmation_ttl_ms(builder, 1 + cfg.ttl as u64 * 4),
        rcip_result::Ok
    );
    assert_eq!(
        rcip_runtime_builder_set_clock(builder, Some(clock), ptr::null_mut(), None),
        rcip_result::Ok
    );
    assert_eq!(
        rcip_runtime_builder_add_event_observer(builder, Some(on_event), ptr::null_mut(), None),
        rcip_result::Ok
    );
    assert_eq!(
        rcip_runtime_builder_set_confirmation_callback(builder, Some(on_confirmation), ptr::null_mut(), None),
        rcip_result::Ok
    );
    if cfg.host_policy {
        assert_eq!(
            rcip_runtime_builder_set_policy(builder, Some(policy), ptr::null_mut(), None),
            rcip_result::Ok
        );
    }
    if cfg.ids != IdMode::BuiltIn {
        assert_eq!(
            rcip_runtime_builder_set_id_generator(builder, Some(ids), ptr::null_mut(), None),
            rcip_result::Ok
        );
    }
    let mut rt = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_build(builder, &mut rt), rcip_result::Ok);
    w(|w| {
        w.runtime = rt as usize;
        w.now = 1_000_000;
        w.resolve_inline = cfg.resolve_inline;
        w.free_on_approved = cfg.free_on_approved < 16;
        w.id_mode = Some(cfg.ids);
    });
    let mut d = Driver {
        entries: Vec::new(),
        bindings: Vec::new(),
        subs: Vec::new(),
        tokens: Vec::new(),
        on_cancels: Vec::new(),
    };
    for op in cfg.ops.iter().take(64) {
        d.step(op);
        d.check_stats();
    }
    // Teardown: every pending registration gets its outcome during the free.
    if !runtime().is_null() {
        let rt = runtime();
        w(|w| w.freed = true);
        rcip_runtime_free(rt);
    }
    let inline: Vec<*mut Entry> = INLINE_ENTRIES.with(|e| e.borrow().iter().map(|&p| p as *mut Entry).collect());
    let check = |e: &Entry| {
        if e.registered {
            assert_eq!(e.outcomes.len(), 1, "a {} got {} outcomes", e.kind, e.outcomes.len());
            assert_eq!(e.freed, 1, "user data released once");
        } else {
            assert!(e.outcomes.is_empty() && e.freed == 0);
        }
    };
    for e in &d.entries {
        check(e);
    }
    for &e in &inline {
        check(&*e);
    }
    assert!(
        w(|w| w.open_confirmations.is_empty()),
        "every opened confirmation was closed"
    );
    // Late settlements are accepted and change nothing.
    let held = w(|w| std::mem::take(&mut w.held_invocations));
    for (p, settled) in held {
        let inv = p as *mut rcip_invocation;
        let rc = rcip_invocation_complete(inv, c"{}".as_ptr());
        assert_eq!(
            rc,
            if settled {
                rcip_result::AlreadyCompleted
            } else {
                rcip_result::Ok
            }
        );
        rcip_invocation_free(inv);
    }
    let held = w(|w| std::mem::take(&mut w.held_policies));
    for (p, _) in held {
        let req = p as *mut rcip_policy_request;
        let rc = rcip_policy_request_decide(req, cr#"{"decision": "allow"}"#.as_ptr());
        assert!(rc == rcip_result::Ok || rc == rcip_result::AlreadyCompleted, "{rc:?}");
        rcip_policy_request_free(req);
    }
    for e in &d.entries {
        check(e);
    }
    for &e in &inline {
        check(&*e);
        drop(Box::from_raw(e));
    }
    for b in &d.bindings {
        let h = b.handle.get();
        if !h.is_null() {
            assert_eq!(rcip_binding_unbind(h), rcip_result::Closed);
            assert_eq!(rcip_binding_set_revision(h, 99), rcip_result::Closed);
            assert!(!rcip_binding_is_installed(h));
            rcip_binding_free(h);
        }
    }
    for b in &d.bindings {
        assert_eq!(b.freed.get(), 1, "binding user data released exactly once");
    }
    for (s, h) in &d.subs {
        rcip_subscription_free(*h);
        assert_eq!(s.freed.get(), 1, "subscriber user data released exactly once");
    }
    for t in &d.tokens {
        rcip_cancel_token_free(*t);
    }
    for (c, _) in &d.on_cancels {
        assert_eq!(c.freed.get(), 1, "on-cancel user data released exactly once");
        assert!(c.ran.get() <= 1);
    }
}
