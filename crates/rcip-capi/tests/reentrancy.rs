//! Reentrancy (issue 5, item 2; PIPELINE.md section 7): every callback kind
//! calls every host and client function on its own runtime, through the C
//! ABI. The expected result of each cell is written in `MATRIX` below (not
//! computed from the library); each cell runs on its own thread and fails
//! if it has not finished within `CELL_TIMEOUT` (a deadlock).
//!
//! Rows (callback kinds) and how each is made to run once, armed:
//! - policy: the host policy, for an invoke of `items.list`;
//! - handler: the `items.list` handler;
//! - availability: the `items.list` availability check, during a refresh;
//! - event: the lifecycle event observer, at the `requested` event;
//! - subscriber: a snapshot subscriber, during a refresh;
//! - confirmation: the confirmation callback, at the `opened` notice of an
//!   `items.purge` confirmation;
//! - on_cancel: a token's on-cancel callback, when it is cancelled;
//! - clock and id_generator: the runtime's clock and id generator during an
//!   invoke (every runtime call from them answers WRONG_CONTEXT).
//!
//! Columns (what the armed callback calls, on the same runtime): bind,
//! unbind, set revision, set context, clear context, refresh, resolve a
//! pending confirmation, snapshot, list, subscribe, unsubscribe, invoke,
//! invoke blocking, preflight, stats, next deadline, run due timers, cancel a
//! token, free a binding, free the runtime.
//!
//! Each cell then checks what the call promised when it answered OK (the
//! nested outcome, report or notification arrived before the call
//! returned, the binding is installed, ...) or that a refused call changed
//! nothing, and that the triggering operation still delivered exactly one
//! outcome. After the runtime is freed, every registration's user data has
//! been released exactly once.

use rcip_capi::binding::*;
use rcip_capi::callback::rcip_availability_callback;
use rcip_capi::cancel::*;
use rcip_capi::catalog::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::policy::*;
use rcip_capi::result::*;
use rcip_capi::runtime::*;
use rcip_capi::sink::*;
use rcip_capi::snapshot::*;
use rcip_capi::string::*;
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::time::Duration;

const CELL_TIMEOUT: Duration = Duration::from_secs(20);

const CATALOG: &str = r#"{"protocolVersion": "1.0",
 "application": {"id": "app", "name": "App", "description": "Test."},
 "scopes": [{"id": "main", "title": "Main", "description": "Main view."}],
 "capabilities": [
  {"id": "items.list", "title": "List", "description": "Lists.", "scopeIds": ["main"], "effect": "read",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "items.write", "title": "Write", "description": "Writes.", "scopeIds": ["main"], "effect": "write",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "items.purge", "title": "Purge", "description": "Deletes.", "scopeIds": [], "effect": "destructive",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "mail.send", "title": "Send", "description": "Sends.", "scopeIds": [], "effect": "external",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "misc.any", "title": "Any", "description": "Anything.", "scopeIds": [], "effect": "read",
   "inputSchema": true, "outputSchema": true}]}"#;

/// What a cell's call answers: an `rcip_result`, or nothing (a void
/// function, which must simply return).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Res {
    Code(rcip_result),
    Void,
    /// Not allowed by the header (the runtime may not be freed from its own
    /// clock or id generator): the cell is not run.
    NotAllowed,
}

const CALLS: [&str; 20] = [
    "bind",
    "unbind",
    "setrev",
    "setctx",
    "clrctx",
    "refresh",
    "resolve",
    "snap",
    "list",
    "subscr",
    "unsub",
    "invoke",
    "blocking",
    "preflight",
    "stats",
    "deadline",
    "rundue",
    "cancel",
    "bfree",
    "rtfree",
];

/// The expected result of each cell. `OK`: RCIP_RESULT_OK; `WC`:
/// RCIP_RESULT_WRONG_CONTEXT; `void`: a void function that returns; `n/a`:
/// not allowed by the header, not run. Written by hand from PIPELINE.md
/// section 7 and the header: every callback may call every function on its
/// own runtime, except the clock and the id generator, whose runtime calls
/// answer WRONG_CONTEXT (cancelling a token is not a runtime call).
const MATRIX: &str = "
kind          bind unbind setrev setctx clrctx refresh resolve snap list subscr unsub invoke blocking preflight stats deadline rundue cancel bfree rtfree
policy        OK   OK     OK     OK     OK     OK      OK      OK   OK   OK     void  OK     OK       OK        OK    OK       OK     OK     void  void
handler       OK   OK     OK     OK     OK     OK      OK      OK   OK   OK     void  OK     OK       OK        OK    OK       OK     OK     void  void
availability  OK   OK     OK     OK     OK     OK      OK      OK   OK   OK     void  OK     OK       OK        OK    OK       OK     OK     void  void
event         OK   OK     OK     OK     OK     OK      OK      OK   OK   OK     void  OK     OK       OK        OK    OK       OK     OK     void  void
subscriber    OK   OK     OK     OK     OK     OK      OK      OK   OK   OK     void  OK     OK       OK        OK    OK       OK     OK     void  void
confirmation  OK   OK     OK     OK     OK     OK      OK      OK   OK   OK     void  OK     OK       OK        OK    OK       OK     OK     void  void
on_cancel     OK   OK     OK     OK     OK     OK      OK      OK   OK   OK     void  OK     OK       OK        OK    OK       OK     OK     void  void
clock         WC   WC     WC     WC     WC     WC      WC      WC   WC   WC     void  WC     WC       WC        WC    WC       WC     OK     void  n/a
id_generator  WC   WC     WC     WC     WC     WC      WC      WC   WC   WC     void  WC     WC       WC        WC    WC       WC     OK     void  n/a
";

fn parse_matrix() -> Vec<(String, Vec<(String, Res)>)> {
    let mut lines = MATRIX.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().skip(1).collect();
    assert_eq!(header, CALLS, "the matrix columns");
    lines
        .map(|l| {
            let mut cols = l.split_whitespace();
            let kind = cols.next().unwrap().to_string();
            let cells: Vec<(String, Res)> = cols
                .zip(CALLS)
                .map(|(c, call)| {
                    let r = match c {
                        "OK" => Res::Code(rcip_result::Ok),
                        "WC" => Res::Code(rcip_result::WrongContext),
                        "void" => Res::Void,
                        "n/a" => Res::NotAllowed,
                        other => panic!("unknown cell {other}"),
                    };
                    (call.to_string(), r)
                })
                .collect();
            assert_eq!(cells.len(), CALLS.len(), "row {kind} has a cell per column");
            (kind, cells)
        })
        .collect()
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

unsafe fn text(p: *const c_char) -> String {
    CStr::from_ptr(p).to_str().unwrap().to_string()
}

unsafe fn take_string(p: *mut c_char) -> String {
    let s = text(p);
    rcip_string_free(p);
    s
}

fn catalog() -> *const rcip_catalog {
    static CAT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CAT.get_or_init(|| {
        let mut cat = ptr::null_mut();
        assert_eq!(
            unsafe { rcip_catalog_new(c(CATALOG).as_ptr(), &mut cat) },
            rcip_result::Ok
        );
        cat as usize
    }) as *const rcip_catalog
}

/// The state of the cell running on this thread (every callback of a cell
/// runs on its thread: manual timers, no library thread).
#[derive(Default)]
struct Cell_ {
    kind: String,
    call: String,
    armed: bool,
    result: Option<Res>,
    /// What the armed call did, checked after the trigger.
    effect: Vec<String>,
    runtime: usize,
    runtime_freed: bool,
    clock_now: i64,
    mail_binding: usize,
    spare_binding: usize,
    new_binding: usize,
    victim_subscription: usize,
    new_subscription: usize,
    pending_confirmation: String,
    token: usize,
    held: Vec<usize>,
    outcomes: Vec<String>,
    nested_outcomes: Vec<String>,
    notifications: Vec<u64>,
    released: Vec<String>,
}

thread_local! {
    static CELL: RefCell<Cell_> = RefCell::new(Cell_::default());
}

fn st<R>(f: impl FnOnce(&mut Cell_) -> R) -> R {
    CELL.with(|c| f(&mut c.borrow_mut()))
}

/// True (once) when the callback of `kind` is the armed one.
fn fire(kind: &str) -> bool {
    st(|c| {
        if c.armed && c.kind == kind {
            c.armed = false;
            true
        } else {
            false
        }
    })
}

fn runtime() -> *mut rcip_runtime {
    st(|c| {
        if c.runtime_freed {
            ptr::null_mut()
        } else {
            c.runtime as *mut rcip_runtime
        }
    })
}

// ----- callbacks ----------------------------------------------------------

unsafe extern "C" fn release(ud: *mut c_void) {
    let name = text(ud as *const c_char);
    st(|c| c.released.push(name));
}

unsafe extern "C" fn policy(_: *mut c_void, req: *mut rcip_policy_request) {
    if fire("policy") {
        perform();
    }
    let ctx = text(rcip_policy_request_context(req));
    // Destructive capabilities ask for confirmation unless confirmed.
    let decision = if ctx.contains(r#""effect":"destructive""#) && ctx.contains(r#""confirmed":false"#) {
        cr#"{"decision": "confirm"}"#
    } else {
        cr#"{"decision": "allow"}"#
    };
    assert_eq!(rcip_policy_request_decide(req, decision.as_ptr()), rcip_result::Ok);
    rcip_policy_request_free(req);
}

unsafe extern "C" fn list_handler(_: *mut c_void, inv: *mut rcip_invocation) {
    if fire("handler") {
        perform();
    }
    assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
    rcip_invocation_free(inv);
}

unsafe extern "C" fn inline_handler(_: *mut c_void, inv: *mut rcip_invocation) {
    assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
    rcip_invocation_free(inv);
}

unsafe extern "C" fn deferring_handler(_: *mut c_void, inv: *mut rcip_invocation) {
    st(|c| c.held.push(inv as usize));
}

unsafe extern "C" fn availability(_: *mut c_void, sink: *mut rcip_availability_sink) -> i32 {
    if fire("availability") {
        perform();
    }
    assert_eq!(
        rcip_availability_set(sink, true, ptr::null(), ptr::null()),
        rcip_result::Ok
    );
    0
}

unsafe extern "C" fn on_event(_: *mut c_void, event: *const c_char) {
    let event = text(event);
    if event.contains(r#""phase":"requested""#) && fire("event") {
        perform();
    }
}

unsafe extern "C" fn subscriber(_: *mut c_void, revision: u64) {
    st(|c| c.notifications.push(revision));
    if fire("subscriber") {
        perform();
    }
}

unsafe extern "C" fn quiet_subscriber(_: *mut c_void, _: u64) {}

unsafe extern "C" fn on_confirmation(_: *mut c_void, notice: *const c_char) {
    let notice = text(notice);
    if notice.contains(r#""event":"opened""#) && fire("confirmation") {
        perform();
    }
}

unsafe extern "C" fn on_cancel(_: *mut c_void) {
    if fire("on_cancel") {
        perform();
    }
}

unsafe extern "C" fn clock(_: *mut c_void) -> i64 {
    if fire("clock") {
        perform();
    }
    st(|c| c.clock_now)
}

unsafe extern "C" fn ids(_: *mut c_void, _prefix: *const c_char, _sink: *mut rcip_string_sink) -> i32 {
    if fire("id_generator") {
        perform();
    }
    1 // fall back to the built-in generator
}

unsafe extern "C" fn trigger_outcome(_: *mut c_void, json: *const c_char) {
    let json = text(json);
    st(|c| c.outcomes.push(json));
}

unsafe extern "C" fn nested_outcome(_: *mut c_void, json: *const c_char) {
    let json = text(json);
    st(|c| c.nested_outcomes.push(json));
}

// ----- the armed call -----------------------------------------------------

/// Performs the cell's call from inside the armed callback and records its
/// result and effect.
unsafe fn perform() {
    let call = st(|c| c.call.clone());
    let rt = runtime();
    assert!(!rt.is_null(), "the armed callback runs on a live runtime");
    let host = rcip_runtime_host(rt);
    let client = rcip_runtime_client(rt);
    let effect = |e: String| st(|c| c.effect.push(e));
    let res = match call.as_str() {
        "bind" => {
            let mut b = ptr::dangling_mut::<rcip_binding>();
            let rc = rcip_host_bind(
                host,
                c"items.write".as_ptr(),
                Some(inline_handler),
                None,
                c"new binding".as_ptr() as *mut c_void,
                Some(release),
                &mut b,
            );
            effect(format!("binding {}", if b.is_null() { "null" } else { "set" }));
            if !b.is_null() {
                effect(format!("installed {}", rcip_binding_is_installed(b)));
                st(|c| c.new_binding = b as usize);
            }
            Res::Code(rc)
        }
        "unbind" => {
            let b = st(|c| c.spare_binding) as *const rcip_binding;
            let rc = rcip_binding_unbind(b);
            effect(format!("installed {}", rcip_binding_is_installed(b)));
            Res::Code(rc)
        }
        "setrev" => {
            let b = st(|c| c.spare_binding) as *const rcip_binding;
            Res::Code(rcip_binding_set_revision(b, 7))
        }
        "setctx" => Res::Code(rcip_host_set_context(host, cr#"{"activeScopeIds": []}"#.as_ptr())),
        "clrctx" => Res::Code(rcip_host_clear_context(host)),
        "refresh" => Res::Code(rcip_host_refresh(host)),
        "resolve" => {
            let id = c(&st(|c| c.pending_confirmation.clone()));
            let before = st(|c| c.nested_outcomes.len());
            let rc = rcip_host_resolve_confirmation(
                host,
                id.as_ptr(),
                false,
                Some(nested_outcome),
                c"resolve outcome".as_ptr() as *mut c_void,
                Some(release),
            );
            effect(format!("nested outcomes {}", st(|c| c.nested_outcomes.len()) - before));
            Res::Code(rc)
        }
        "snap" => {
            let mut s = ptr::dangling::<rcip_snapshot>();
            let rc = rcip_client_snapshot(client, &mut s);
            effect(format!("snapshot {}", if s.is_null() { "null" } else { "set" }));
            rcip_snapshot_free(s);
            Res::Code(rc)
        }
        "list" => {
            let mut out = ptr::dangling_mut::<c_char>();
            let rc = rcip_client_list_capabilities(client, ptr::null(), &mut out);
            effect(format!(
                "list {}",
                if out.is_null() {
                    "null".to_string()
                } else {
                    (take_string(out).matches("\"id\"").count()).to_string()
                }
            ));
            Res::Code(rc)
        }
        "subscr" => {
            let mut s = ptr::dangling_mut::<rcip_subscription>();
            let rc = rcip_client_subscribe(
                client,
                Some(quiet_subscriber),
                c"new subscription".as_ptr() as *mut c_void,
                Some(release),
                &mut s,
            );
            effect(format!("subscription {}", if s.is_null() { "null" } else { "set" }));
            st(|c| c.new_subscription = s as usize);
            Res::Code(rc)
        }
        "unsub" => {
            let s = st(|c| std::mem::take(&mut c.victim_subscription)) as *mut rcip_subscription;
            rcip_subscription_free(s);
            Res::Void
        }
        "invoke" => {
            let before = st(|c| c.nested_outcomes.len());
            let mut id = ptr::dangling_mut::<c_char>();
            let rc = rcip_client_invoke(
                client,
                c"misc.any".as_ptr(),
                c"{\"nested\": true}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(nested_outcome),
                c"invoke outcome".as_ptr() as *mut c_void,
                Some(release),
                &mut id,
            );
            effect(format!("nested outcomes {}", st(|c| c.nested_outcomes.len()) - before));
            effect(format!("id {}", if id.is_null() { "null" } else { "set" }));
            if !id.is_null() {
                rcip_string_free(id);
            }
            Res::Code(rc)
        }
        "blocking" => {
            let mut out = ptr::dangling_mut::<c_char>();
            let rc = rcip_client_invoke_blocking(
                client,
                c"misc.any".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                ptr::null(),
                &mut out,
            );
            effect(format!(
                "blocking {}",
                if out.is_null() {
                    "null".to_string()
                } else {
                    take_string(out).contains("\"succeeded\"").to_string()
                }
            ));
            Res::Code(rc)
        }
        "preflight" => {
            let before = st(|c| c.nested_outcomes.len());
            let ids = [c"items.list".as_ptr(), c"misc.any".as_ptr()];
            let inputs = [c"{}".as_ptr(), c"[]".as_ptr()];
            let rc = rcip_client_preflight(
                client,
                ids.as_ptr(),
                inputs.as_ptr(),
                2,
                ptr::null(),
                Some(nested_outcome),
                c"preflight report".as_ptr() as *mut c_void,
                Some(release),
            );
            effect(format!("nested outcomes {}", st(|c| c.nested_outcomes.len()) - before));
            Res::Code(rc)
        }
        "stats" => {
            let mut out = ptr::dangling_mut::<c_char>();
            let rc = rcip_runtime_stats(rt, &mut out);
            effect(format!("stats {}", if out.is_null() { "null" } else { "set" }));
            if !out.is_null() {
                rcip_string_free(out);
            }
            Res::Code(rc)
        }
        "deadline" => {
            let mut has = false;
            let mut at = 0i64;
            let rc = rcip_runtime_next_deadline(rt, &mut has, &mut at);
            if rc == rcip_result::Ok {
                effect(format!("deadline {has}"));
            }
            Res::Code(rc)
        }
        "rundue" => Res::Code(rcip_runtime_run_due_timers(rt)),
        "cancel" => {
            let t = st(|c| c.token) as *const rcip_cancel_token;
            let rc = rcip_cancel_token_cancel(t);
            effect(format!("cancelled {}", rcip_cancel_token_is_cancelled(t)));
            Res::Code(rc)
        }
        "bfree" => {
            let b = st(|c| std::mem::take(&mut c.spare_binding)) as *mut rcip_binding;
            rcip_binding_free(b);
            Res::Void
        }
        "rtfree" => {
            st(|c| c.runtime_freed = true);
            rcip_runtime_free(rt);
            Res::Void
        }
        other => panic!("unknown call {other}"),
    };
    st(|c| c.result = Some(res));
}

// ----- one cell -------------------------------------------------------------

unsafe fn stats(rt: *const rcip_runtime) -> serde_json::Value {
    let mut out = ptr::null_mut();
    assert_eq!(rcip_runtime_stats(rt, &mut out), rcip_result::Ok);
    serde_json::from_str(&take_string(out)).unwrap()
}

/// Runs one cell on this thread; returns what the armed call answered.
unsafe fn run_cell(kind: &str, call: &str, expected: Res) {
    let label = format!("[{kind} x {call}]");
    CELL.with(|c| {
        *c.borrow_mut() = Cell_ {
            kind: kind.into(),
            call: call.into(),
            clock_now: 1_000_000,
            ..Default::default()
        }
    });
    let mut b = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_new(catalog(), &mut b), rcip_result::Ok);
    assert_eq!(rcip_runtime_builder_set_manual_timers(b, true), rcip_result::Ok);
    assert_eq!(
        rcip_runtime_builder_set_policy(b, Some(policy), c"policy".as_ptr() as *mut c_void, Some(release)),
        rcip_result::Ok
    );
    assert_eq!(
        rcip_runtime_builder_set_confirmation_callback(
            b,
            Some(on_confirmation),
            c"confirmation".as_ptr() as *mut c_void,
            Some(release)
        ),
        rcip_result::Ok
    );
    assert_eq!(
        rcip_runtime_builder_add_event_observer(b, Some(on_event), c"event".as_ptr() as *mut c_void, Some(release)),
        rcip_result::Ok
    );
    assert_eq!(
        rcip_runtime_builder_set_clock(b, Some(clock), c"clock".as_ptr() as *mut c_void, Some(release)),
        rcip_result::Ok
    );
    assert_eq!(
        rcip_runtime_builder_set_id_generator(b, Some(ids), c"ids".as_ptr() as *mut c_void, Some(release)),
        rcip_result::Ok
    );
    let mut rt = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_build(b, &mut rt), rcip_result::Ok);
    st(|c| c.runtime = rt as usize);
    let host = rcip_runtime_host(rt);
    let client = rcip_runtime_client(rt);

    // Setup: four bindings, two subscriptions, a context, an invocation
    // whose handler is still running (with a token), a pending confirmation.
    let bind = |cap: &CStr,
                h: unsafe extern "C" fn(*mut c_void, *mut rcip_invocation),
                a: rcip_availability_callback,
                name: &'static CStr| {
        let mut out = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                host,
                cap.as_ptr(),
                Some(h),
                a,
                name.as_ptr() as *mut c_void,
                Some(release),
                &mut out
            ),
            rcip_result::Ok
        );
        out
    };
    let list_binding = bind(c"items.list", list_handler, Some(availability), c"list binding");
    let any_binding = bind(c"misc.any", inline_handler, None, c"any binding");
    let purge_binding = bind(c"items.purge", inline_handler, None, c"purge binding");
    let mail_binding = bind(c"mail.send", deferring_handler, None, c"mail binding");
    st(|c| {
        c.mail_binding = mail_binding as usize;
        c.spare_binding = mail_binding as usize;
    });
    let mut sub = ptr::null_mut();
    assert_eq!(
        rcip_client_subscribe(
            client,
            Some(subscriber),
            c"subscriber".as_ptr() as *mut c_void,
            Some(release),
            &mut sub
        ),
        rcip_result::Ok
    );
    let mut victim = ptr::null_mut();
    assert_eq!(
        rcip_client_subscribe(
            client,
            Some(quiet_subscriber),
            c"victim subscription".as_ptr() as *mut c_void,
            Some(release),
            &mut victim
        ),
        rcip_result::Ok
    );
    st(|c| c.victim_subscription = victim as usize);
    assert_eq!(
        rcip_host_set_context(host, cr#"{"activeScopeIds": ["main"]}"#.as_ptr()),
        rcip_result::Ok
    );
    let mut token = ptr::null_mut();
    assert_eq!(rcip_cancel_token_new(&mut token), rcip_result::Ok);
    st(|c| c.token = token as usize);
    let invoke = |cap: &CStr, t: *const rcip_cancel_token, name: &'static CStr| {
        assert_eq!(
            rcip_client_invoke(
                client,
                cap.as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                t,
                Some(trigger_outcome),
                name.as_ptr() as *mut c_void,
                Some(release),
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
    };
    invoke(c"mail.send", token, c"mail outcome");
    assert_eq!(
        st(|c| c.held.len()),
        1,
        "{label} the mail.send handler holds its invocation"
    );
    invoke(c"items.purge", ptr::null(), c"purge outcome");
    let opened = st(|c| c.outcomes.pop()).expect("confirmation_required");
    let opened: serde_json::Value = serde_json::from_str(&opened).unwrap();
    assert_eq!(opened["status"], "confirmation_required");
    st(|c| c.pending_confirmation = opened["confirmation"]["id"].as_str().unwrap().to_string());
    let before = stats(rt);
    assert_eq!(before["pendingInvocations"], 1);
    assert_eq!(before["pendingConfirmations"], 1);
    let rev_before = before["revision"].as_u64().unwrap();
    st(|c| c.notifications.clear());

    // Trigger the armed callback.
    st(|c| c.armed = true);
    let mut extra_token = ptr::null_mut();
    match kind {
        "policy" | "handler" | "event" | "clock" | "id_generator" => {
            invoke(c"items.list", ptr::null(), c"trigger outcome")
        }
        "availability" | "subscriber" => assert_eq!(rcip_host_refresh(host), rcip_result::Ok, "{label}"),
        "confirmation" => invoke(c"items.purge", ptr::null(), c"trigger outcome"),
        "on_cancel" => {
            assert_eq!(rcip_cancel_token_new(&mut extra_token), rcip_result::Ok);
            assert_eq!(
                rcip_cancel_token_on_cancel(
                    extra_token,
                    Some(on_cancel),
                    c"on-cancel".as_ptr() as *mut c_void,
                    Some(release)
                ),
                rcip_result::Ok
            );
            assert_eq!(rcip_cancel_token_cancel(extra_token), rcip_result::Ok);
        }
        other => panic!("unknown kind {other}"),
    }
    assert!(!st(|c| c.armed), "{label} the armed callback ran");
    let got = st(|c| c.result).expect("the call was made");
    assert_eq!(
        got,
        expected,
        "{label} answered {got:?}, the matrix says {expected:?} ({:?})",
        {
            let m = rcip_last_error_message();
            if m.is_null() {
                String::new()
            } else {
                text(m)
            }
        }
    );

    // What the call promised.
    let effect = st(|c| c.effect.clone());
    let freed = st(|c| c.runtime_freed);
    let ok = expected == Res::Code(rcip_result::Ok);
    let refused = expected == Res::Code(rcip_result::WrongContext);
    let has = |e: &str| effect.iter().any(|x| x == e);
    match call {
        "bind" if ok => assert!(has("binding set") && has("installed true"), "{label} {effect:?}"),
        "bind" if refused => assert!(has("binding null"), "{label} {effect:?}"),
        "unbind" if ok => assert!(has("installed false"), "{label} {effect:?}"),
        "unbind" if refused => assert!(has("installed true"), "{label} {effect:?}"),
        "resolve" | "invoke" | "preflight" if ok => {
            assert!(
                has("nested outcomes 1"),
                "{label} the nested outcome arrived before the call returned: {effect:?}"
            )
        }
        "resolve" | "invoke" | "preflight" if refused => assert!(has("nested outcomes 0"), "{label} {effect:?}"),
        "invoke" if refused => assert!(has("id null")),
        "blocking" if ok => assert!(has("blocking true"), "{label} {effect:?}"),
        "blocking" | "snap" | "list" | "stats" | "subscr" if refused => {
            assert!(
                effect.iter().any(|e| e.ends_with(" null")),
                "{label} out-parameter NULL on refusal: {effect:?}"
            )
        }
        "snap" if ok => assert!(has("snapshot set")),
        "list" if ok => assert!(has("list 5"), "{label} {effect:?}"),
        "subscr" if ok => assert!(has("subscription set")),
        "stats" if ok => assert!(has("stats set")),
        "cancel" => assert!(has("cancelled true")),
        _ => {}
    }
    if call == "bfree" && !freed {
        // Freeing a binding unbinds it, except from the clock or id
        // generator: there the unbind answers WRONG_CONTEXT, which a void
        // function cannot report, so the handle is freed and the binding
        // stays installed until the runtime is freed (header:
        // rcip_binding_free, rcip_clock_callback).
        let now = stats(rt)["bindings"].as_u64().unwrap();
        let restricted = kind == "clock" || kind == "id_generator";
        let was = before["bindings"].as_u64().unwrap();
        assert_eq!(now, if restricted { was } else { was - 1 }, "{label}");
    }
    if call == "unsub" && !freed {
        // Unsubscribing is never refused, not even from the clock or id
        // generator (it only removes the subscriber; nothing runs).
        let now = stats(rt)["subscribers"].as_u64().unwrap();
        assert_eq!(now, before["subscribers"].as_u64().unwrap() - 1, "{label}");
    }
    if refused {
        // A refused call changed nothing.
        let now = stats(rt);
        assert_eq!(now["bindings"], before["bindings"], "{label}");
        assert_eq!(now["subscribers"], before["subscribers"], "{label}");
    }
    // The triggering operation delivered exactly one outcome (the refresh
    // and cancel triggers have none).
    // (The setup's mail.send invocation ends only when the runtime is freed.)
    let outcomes: Vec<String> = st(|c| c.outcomes.clone())
        .into_iter()
        .filter(|o| !o.contains(r#""capabilityId":"mail.send""#))
        .collect();
    let trigger_outcomes = outcomes.len();
    match kind {
        "availability" | "subscriber" | "on_cancel" => assert_eq!(trigger_outcomes, 0, "{label} {outcomes:?}"),
        _ => assert_eq!(
            trigger_outcomes, 1,
            "{label} exactly one outcome for the trigger: {outcomes:?}"
        ),
    }
    if kind == "subscriber" && !freed {
        // Notifications: once per revision, increasing; a refresh the
        // subscriber caused was queued and ran before the trigger returned.
        let n = st(|c| c.notifications.clone());
        assert!(n.windows(2).all(|w| w[0] < w[1]), "{label} {n:?}");
        let after = stats(rt)["revision"].as_u64().unwrap();
        assert_eq!(
            n.last().copied(),
            Some(after),
            "{label} the last revision was announced before refresh returned"
        );
        assert!(after > rev_before);
    }

    // Teardown: settle what is held, free everything, check user data.
    let held = st(|c| std::mem::take(&mut c.held));
    for h in held {
        let inv = h as *mut rcip_invocation;
        assert_eq!(
            rcip_invocation_complete(inv, c"{}".as_ptr()),
            rcip_result::Ok,
            "{label}"
        );
        rcip_invocation_free(inv);
    }
    let rt = runtime();
    if !rt.is_null() {
        let s = stats(rt);
        assert_eq!(s["pendingInvocations"], 0, "{label} {s}");
        st(|c| c.runtime_freed = true);
        rcip_runtime_free(rt);
    }
    for b in [list_binding, any_binding, purge_binding] {
        assert!(!rcip_binding_is_installed(b));
        rcip_binding_free(b);
    }
    let spare = st(|c| c.spare_binding) as *mut rcip_binding;
    rcip_binding_free(spare);
    rcip_binding_free(st(|c| c.new_binding) as *mut rcip_binding);
    rcip_subscription_free(sub);
    rcip_subscription_free(st(|c| c.victim_subscription) as *mut rcip_subscription);
    rcip_subscription_free(st(|c| c.new_subscription) as *mut rcip_subscription);
    rcip_cancel_token_free(token);
    rcip_cancel_token_free(extra_token);
    let mut released = st(|c| c.released.clone());
    released.sort();
    let mut want = vec![
        "any binding",
        "clock",
        "confirmation",
        "event",
        "ids",
        "list binding",
        "mail binding",
        "mail outcome",
        "policy",
        "purge binding",
        "purge outcome",
        "subscriber",
        "trigger outcome",
        "victim subscription",
    ];
    if kind == "on_cancel" {
        want.retain(|w| *w != "trigger outcome");
        want.push("on-cancel");
    }
    if kind == "availability" || kind == "subscriber" {
        want.retain(|w| *w != "trigger outcome");
    }
    if ok || expected == Res::Void {
        match call {
            "bind" => want.push("new binding"),
            "subscr" => want.push("new subscription"),
            "resolve" => want.push("resolve outcome"),
            "invoke" => want.push("invoke outcome"),
            "preflight" => want.push("preflight report"),
            _ => {}
        }
    }
    want.sort();
    assert_eq!(
        released, want,
        "{label} every registration's user data released exactly once, refused ones never"
    );
}

#[test]
fn every_callback_may_call_every_function_on_its_runtime() {
    let matrix = parse_matrix();
    let kinds: Vec<&str> = matrix.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "policy",
            "handler",
            "availability",
            "event",
            "subscriber",
            "confirmation",
            "on_cancel",
            "clock",
            "id_generator"
        ]
    );
    let mut ran = 0;
    let mut failures = Vec::new();
    for (kind, cells) in &matrix {
        for (call, expected) in cells {
            if *expected == Res::NotAllowed {
                continue;
            }
            let (kind, call, expected) = (kind.clone(), call.clone(), *expected);
            let (tx, rx) = std::sync::mpsc::channel();
            let label = format!("[{kind} x {call}]");
            std::thread::Builder::new()
                .name(label.clone())
                .spawn(move || {
                    let r = std::panic::catch_unwind(|| unsafe { run_cell(&kind, &call, expected) });
                    let _ = tx.send(r.map_err(|e| {
                        e.downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default()
                    }));
                })
                .unwrap();
            match rx.recv_timeout(CELL_TIMEOUT) {
                Ok(Ok(())) => ran += 1,
                Ok(Err(msg)) => failures.push(msg),
                Err(_) => failures.push(format!("{label} did not finish within {CELL_TIMEOUT:?}: deadlock")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cells failed:\n{}",
        failures.len(),
        ran + failures.len(),
        failures.join("\n")
    );
    assert_eq!(ran, 9 * 20 - 2, "every cell ran");
}

// ----- user-data release callbacks ------------------------------------------

/// What a release callback saw of its runtime.
#[derive(Default)]
struct Seen {
    runtime: usize,
    log: Vec<String>,
    rebinding: usize,
}

thread_local! {
    static SEEN: RefCell<Seen> = RefCell::new(Seen::default());
}

fn seen<R>(f: impl FnOnce(&mut Seen) -> R) -> R {
    SEEN.with(|s| f(&mut s.borrow_mut()))
}

unsafe extern "C" fn release_binding(_: *mut c_void) {
    // The registration is gone: the stats no longer count it, and the same
    // capability can be bound again from here.
    let rt = seen(|s| s.runtime) as *const rcip_runtime;
    let s = stats(rt);
    let mut b = ptr::null_mut();
    let rc = rcip_host_bind(
        rcip_runtime_host(rt),
        c"items.list".as_ptr(),
        Some(inline_handler),
        None,
        ptr::null_mut(),
        None,
        &mut b,
    );
    seen(|x| {
        x.log
            .push(format!("binding released: bindings {}, rebind {:?}", s["bindings"], rc));
        x.rebinding = b as usize;
    });
}

unsafe extern "C" fn release_subscription(_: *mut c_void) {
    let rt = seen(|s| s.runtime) as *const rcip_runtime;
    let s = stats(rt);
    // A refresh from here does not reach the released subscriber.
    assert_eq!(rcip_host_refresh(rcip_runtime_host(rt)), rcip_result::Ok);
    seen(|x| {
        x.log
            .push(format!("subscription released: subscribers {}", s["subscribers"]))
    });
}

unsafe extern "C" fn counting_subscriber(_: *mut c_void, revision: u64) {
    seen(|x| x.log.push(format!("notified {revision}")));
}

unsafe extern "C" fn outcome_seen(_: *mut c_void, json: *const c_char) {
    let status = if text(json).contains("INVOCATION_ALREADY_ACTIVE") {
        "already active"
    } else {
        "outcome"
    };
    seen(|x| x.log.push(status.to_string()));
}

unsafe extern "C" fn release_outcome(_: *mut c_void) {
    // The invocation is over: its id is no longer reserved, so invoking
    // again with the same id from here runs (no INVOCATION_ALREADY_ACTIVE).
    let rt = seen(|s| s.runtime) as *const rcip_runtime;
    let s = stats(rt);
    seen(|x| {
        x.log.push(format!(
            "outcome released: pending {}, reserved {}",
            s["pendingInvocations"], s["reservedIds"]
        ))
    });
    let rc = rcip_client_invoke(
        rcip_runtime_client(rt),
        c"misc.any".as_ptr(),
        c"{}".as_ptr(),
        c"same-id".as_ptr(),
        ptr::null(),
        Some(outcome_seen),
        ptr::null_mut(),
        None,
        ptr::null_mut(),
    );
    assert_eq!(rc, rcip_result::Ok);
}

unsafe extern "C" fn cancel_seen(_: *mut c_void) {
    seen(|x| x.log.push("on-cancel ran".into()));
}

unsafe extern "C" fn release_cancel(_: *mut c_void) {
    seen(|x| x.log.push("on-cancel released".into()));
}

#[test]
fn a_user_data_release_callback_never_sees_its_own_registration() {
    unsafe {
        let mut b = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog(), &mut b), rcip_result::Ok);
        assert_eq!(rcip_runtime_builder_set_manual_timers(b, true), rcip_result::Ok);
        let mut rt = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(b, &mut rt), rcip_result::Ok);
        seen(|s| s.runtime = rt as usize);
        let host = rcip_runtime_host(rt);
        let client = rcip_runtime_client(rt);

        let mut binding = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                host,
                c"items.list".as_ptr(),
                Some(inline_handler),
                None,
                ptr::null_mut(),
                Some(release_binding),
                &mut binding
            ),
            rcip_result::Ok
        );
        assert_eq!(rcip_binding_unbind(binding), rcip_result::Ok);
        let log = seen(|s| std::mem::take(&mut s.log));
        assert_eq!(log, ["binding released: bindings 0, rebind Ok"]);
        let rebinding = seen(|s| s.rebinding) as *mut rcip_binding;
        assert!(rcip_binding_is_installed(rebinding) && !rcip_binding_is_installed(binding));
        rcip_binding_free(binding);
        rcip_binding_free(rebinding);

        let mut sub = ptr::null_mut();
        assert_eq!(
            rcip_client_subscribe(
                client,
                Some(counting_subscriber),
                ptr::null_mut(),
                Some(release_subscription),
                &mut sub
            ),
            rcip_result::Ok
        );
        assert_eq!(rcip_host_refresh(host), rcip_result::Ok);
        let rev = stats(rt)["revision"].as_u64().unwrap();
        rcip_subscription_free(sub);
        let log = seen(|s| std::mem::take(&mut s.log));
        assert_eq!(
            log,
            [
                format!("notified {rev}"),
                "subscription released: subscribers 0".to_string()
            ]
        );
        assert_eq!(
            stats(rt)["revision"].as_u64().unwrap(),
            rev + 1,
            "the refresh ran, unheard"
        );

        let mut any = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                host,
                c"misc.any".as_ptr(),
                Some(inline_handler),
                None,
                ptr::null_mut(),
                None,
                &mut any
            ),
            rcip_result::Ok
        );
        assert_eq!(
            rcip_client_invoke(
                client,
                c"misc.any".as_ptr(),
                c"{}".as_ptr(),
                c"same-id".as_ptr(),
                ptr::null(),
                Some(outcome_seen),
                ptr::null_mut(),
                Some(release_outcome),
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        let log = seen(|s| std::mem::take(&mut s.log));
        assert_eq!(log, ["outcome", "outcome released: pending 0, reserved 0", "outcome"]);

        let mut token = ptr::null_mut();
        assert_eq!(rcip_cancel_token_new(&mut token), rcip_result::Ok);
        assert_eq!(
            rcip_cancel_token_on_cancel(token, Some(cancel_seen), ptr::null_mut(), Some(release_cancel)),
            rcip_result::Ok
        );
        assert_eq!(rcip_cancel_token_cancel(token), rcip_result::Ok);
        assert_eq!(
            seen(|s| std::mem::take(&mut s.log)),
            ["on-cancel ran", "on-cancel released"]
        );
        rcip_cancel_token_free(token);

        rcip_binding_free(any);
        rcip_runtime_free(rt);
    }
}
