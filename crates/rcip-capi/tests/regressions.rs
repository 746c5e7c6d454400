//! Regression tests for library bugs the fuzz targets found (issue 5,
//! item 7), each through the C ABI as the target saw it.

use rcip_capi::cancel::*;
use rcip_capi::catalog::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::result::*;
use rcip_capi::runtime::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::sync::Mutex;

const CATALOG: &str = r#"{"protocolVersion": "1.0",
 "application": {"id": "app", "name": "App", "description": "Test."},
 "scopes": [],
 "capabilities": [
  {"id": "items.list", "title": "List", "description": "Lists.", "scopeIds": [], "effect": "read",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "items.purge", "title": "Purge", "description": "Deletes.", "scopeIds": [], "effect": "destructive",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#;

unsafe fn runtime() -> (*mut rcip_catalog, *mut rcip_runtime) {
    let mut cat = ptr::null_mut();
    let text = CString::new(CATALOG).unwrap();
    assert_eq!(rcip_catalog_new(text.as_ptr(), &mut cat), rcip_result::Ok);
    let mut b = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_new(cat, &mut b), rcip_result::Ok);
    assert_eq!(rcip_runtime_builder_set_manual_timers(b, true), rcip_result::Ok);
    let mut rt = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_build(b, &mut rt), rcip_result::Ok);
    (cat, rt)
}

unsafe extern "C" fn complete(_: *mut c_void, inv: *mut rcip_invocation) {
    assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
    rcip_invocation_free(inv);
}

/// Binds `capability_id` to [`complete`]; the binding must be accepted.
unsafe fn bind(rt: *mut rcip_runtime, capability_id: &CStr) -> *mut rcip_capi::binding::rcip_binding {
    let mut binding = ptr::null_mut();
    assert_eq!(
        rcip_host_bind(
            rcip_runtime_host(rt),
            capability_id.as_ptr(),
            Some(complete),
            None,
            ptr::null_mut(),
            None,
            &mut binding
        ),
        rcip_result::Ok
    );
    binding
}

unsafe extern "C" fn keep(ud: *mut c_void, json: *const c_char) {
    (*(ud as *const Mutex<Vec<String>>))
        .lock()
        .unwrap()
        .push(CStr::from_ptr(json).to_str().unwrap().to_string());
}

/// abi_sequence: a preflight whose token is already cancelled settles its
/// report while registering on the token, before the proposals are asked;
/// the ask loop then indexed the emptied proposal slots and panicked
/// (RCIP_RESULT_PANIC, after the report had been delivered). Each proposal
/// still runs section 4 steps 6–10 (PIPELINE.md section 6): the bound one
/// is blocked at step 10, the unbound one at step 7.
#[test]
fn a_preflight_with_an_already_cancelled_token_reports_once_and_blocks_each_proposal_at_its_step() {
    unsafe {
        let (cat, rt) = runtime();
        let b = bind(rt, c"items.list");
        let mut token = ptr::null_mut();
        assert_eq!(rcip_cancel_token_new(&mut token), rcip_result::Ok);
        assert_eq!(rcip_cancel_token_cancel(token), rcip_result::Ok);
        let reports: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let ids = [c"items.list".as_ptr(), c"items.purge".as_ptr()];
        let inputs = [c"{}".as_ptr(), c"{}".as_ptr()];
        let rc = rcip_client_preflight(
            rcip_runtime_client(rt),
            ids.as_ptr(),
            inputs.as_ptr(),
            2,
            token,
            Some(keep),
            &reports as *const _ as *mut c_void,
            None,
        );
        assert_eq!(rc, rcip_result::Ok);
        let reports = reports.into_inner().unwrap();
        assert_eq!(reports.len(), 1, "exactly one report");
        let report: serde_json::Value = serde_json::from_str(&reports[0]).unwrap();
        let codes: Vec<_> = report["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["status"].as_str(), o["error"]["code"].as_str()))
            .collect();
        assert_eq!(
            codes,
            [
                (Some("blocked"), Some("EXECUTION_ABORTED")),
                (Some("blocked"), Some("CAPABILITY_UNBOUND"))
            ],
            "{report}"
        );
        let mut stats = ptr::null_mut();
        assert_eq!(rcip_runtime_stats(rt, &mut stats), rcip_result::Ok);
        assert!(CStr::from_ptr(stats)
            .to_str()
            .unwrap()
            .contains("\"pendingPreflights\":0"));
        rcip_capi::string::rcip_string_free(stats);
        rcip_cancel_token_free(token);
        rcip_capi::binding::rcip_binding_free(b);
        rcip_runtime_free(rt);
        rcip_catalog_free(cat);
    }
}

unsafe extern "C" fn same_id(
    _: *mut c_void,
    prefix: *const c_char,
    sink: *mut rcip_capi::sink::rcip_string_sink,
) -> i32 {
    let id = CString::new(format!("{}-same", CStr::from_ptr(prefix).to_str().unwrap())).unwrap();
    assert_eq!(
        rcip_capi::sink::rcip_string_sink_set(sink, id.as_ptr()),
        rcip_result::Ok
    );
    0
}

unsafe extern "C" fn notices(ud: *mut c_void, json: *const c_char) {
    keep(ud, json);
}

/// An id generator that repeats itself must not make two pending
/// confirmations share an id: the second would replace the first, whose
/// invocation id then stayed reserved forever and which never closed.
#[test]
fn a_repeating_id_generator_cannot_make_two_pending_confirmations_share_an_id() {
    unsafe {
        let mut cat = ptr::null_mut();
        let text = CString::new(CATALOG).unwrap();
        assert_eq!(rcip_catalog_new(text.as_ptr(), &mut cat), rcip_result::Ok);
        let mut b = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(cat, &mut b), rcip_result::Ok);
        assert_eq!(rcip_runtime_builder_set_manual_timers(b, true), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_set_id_generator(b, Some(same_id), ptr::null_mut(), None),
            rcip_result::Ok
        );
        let seen: Mutex<Vec<String>> = Mutex::new(Vec::new());
        assert_eq!(
            rcip_runtime_builder_set_confirmation_callback(b, Some(notices), &seen as *const _ as *mut c_void, None),
            rcip_result::Ok
        );
        let mut rt = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(b, &mut rt), rcip_result::Ok);
        let binding = bind(rt, c"items.purge");
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        for id in [c"first", c"second"] {
            assert_eq!(
                rcip_client_invoke(
                    rcip_runtime_client(rt),
                    c"items.purge".as_ptr(),
                    c"{}".as_ptr(),
                    id.as_ptr(),
                    ptr::null(),
                    Some(keep),
                    &outcomes as *const _ as *mut c_void,
                    None,
                    ptr::null_mut()
                ),
                rcip_result::Ok
            );
        }
        let ids: Vec<String> = outcomes
            .lock()
            .unwrap()
            .iter()
            .map(|o| {
                serde_json::from_str::<serde_json::Value>(o).unwrap()["confirmation"]["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1], "two pending confirmations got the same id");
        let mut stats = ptr::null_mut();
        assert_eq!(rcip_runtime_stats(rt, &mut stats), rcip_result::Ok);
        let s = CStr::from_ptr(stats).to_str().unwrap().to_string();
        rcip_capi::string::rcip_string_free(stats);
        assert!(
            s.contains("\"pendingConfirmations\":2") && s.contains("\"reservedIds\":2"),
            "{s}"
        );
        // Both can be resolved, each exactly once.
        for id in &ids {
            let id = CString::new(id.as_str()).unwrap();
            assert_eq!(
                rcip_host_resolve_confirmation(
                    rcip_runtime_host(rt),
                    id.as_ptr(),
                    false,
                    Some(keep),
                    &outcomes as *const _ as *mut c_void,
                    None
                ),
                rcip_result::Ok
            );
        }
        let all = outcomes.lock().unwrap().clone();
        assert!(
            all[2].contains("CONFIRMATION_DECLINED") && all[3].contains("CONFIRMATION_DECLINED"),
            "{all:?}"
        );
        let closed = seen.lock().unwrap().iter().filter(|n| n.contains("\"closed\"")).count();
        assert_eq!(closed, 2, "each confirmation closed once");
        rcip_capi::binding::rcip_binding_free(binding);
        rcip_runtime_free(rt);
        rcip_catalog_free(cat);
    }
}

thread_local! {
    static TO_FREE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    static RESOLVE_LOG: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

unsafe extern "C" fn free_runtime_when_approved(_: *mut c_void, json: *const c_char) {
    if CStr::from_ptr(json)
        .to_str()
        .unwrap()
        .contains(r#""reason":"approved""#)
    {
        let rt = TO_FREE.with(|t| t.replace(0)) as *mut rcip_runtime;
        rcip_runtime_free(rt);
    }
}

unsafe extern "C" fn log_outcome(_: *mut c_void, json: *const c_char) {
    RESOLVE_LOG.with(|l| l.borrow_mut().push(CStr::from_ptr(json).to_str().unwrap().to_string()));
}

unsafe extern "C" fn log_release(_: *mut c_void) {
    RESOLVE_LOG.with(|l| l.borrow_mut().push("released".into()));
}

/// An approval whose re-run finds the runtime closed (here the confirmation
/// callback frees it on the `approved` notice; another thread freeing it
/// gives the same race) answered OK, delivered no outcome and still
/// released the caller's user data: the approval's outcome was lost.
/// Now the call answers RCIP_RESULT_CLOSED and, as the header says for a
/// failing call, calls neither function (as an invoke racing a free does).
#[test]
fn an_approval_that_finds_the_runtime_closed_answers_closed_instead_of_losing_its_outcome() {
    unsafe {
        let mut cat = ptr::null_mut();
        let text = CString::new(CATALOG).unwrap();
        assert_eq!(rcip_catalog_new(text.as_ptr(), &mut cat), rcip_result::Ok);
        let mut b = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(cat, &mut b), rcip_result::Ok);
        assert_eq!(rcip_runtime_builder_set_manual_timers(b, true), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_set_confirmation_callback(b, Some(free_runtime_when_approved), ptr::null_mut(), None),
            rcip_result::Ok
        );
        let mut rt = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(b, &mut rt), rcip_result::Ok);
        let binding = bind(rt, c"items.purge");
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        assert_eq!(
            rcip_client_invoke(
                rcip_runtime_client(rt),
                c"items.purge".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(keep),
                &outcomes as *const _ as *mut c_void,
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        let o: serde_json::Value = serde_json::from_str(&outcomes.lock().unwrap()[0]).unwrap();
        let id = CString::new(o["confirmation"]["id"].as_str().unwrap()).unwrap();
        TO_FREE.with(|t| t.set(rt as usize));
        let host = rcip_runtime_host(rt);
        let rc = rcip_host_resolve_confirmation(
            host,
            id.as_ptr(),
            true,
            Some(log_outcome),
            ptr::null_mut(),
            Some(log_release),
        );
        let log = RESOLVE_LOG.with(|l| l.borrow().clone());
        assert_eq!(TO_FREE.with(|t| t.get()), 0, "the runtime was freed inside the call");
        if rc == rcip_result::Ok {
            assert_eq!(log.len(), 2, "OK means exactly one outcome, then the release: {log:?}");
            assert_ne!(log[0], "released", "{log:?}");
        } else {
            assert_eq!(rc, rcip_result::Closed);
            assert!(log.is_empty(), "a failing call calls neither function: {log:?}");
        }
        rcip_capi::binding::rcip_binding_free(binding);
        rcip_catalog_free(cat);
    }
}

/// What the subscribers of the test below heard: (subscriber, revision,
/// notifications running on this thread at the time).
struct Heard {
    log: Mutex<Vec<(u8, u64, u32)>>,
    runtime: std::sync::atomic::AtomicPtr<rcip_runtime>,
    refreshes_left: std::sync::atomic::AtomicU32,
}

thread_local! {
    static NOTIFYING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

unsafe fn heard(ud: *mut c_void, who: u8, revision: u64) {
    use std::sync::atomic::Ordering::SeqCst;
    let h = &*(ud as *const Heard);
    let depth = NOTIFYING.with(|d| {
        d.set(d.get() + 1);
        d.get()
    });
    h.log.lock().unwrap().push((who, revision, depth));
    if who == 0 && h.refreshes_left.load(SeqCst) > 0 {
        h.refreshes_left.fetch_sub(1, SeqCst);
        let rt = h.runtime.load(SeqCst);
        assert_eq!(rcip_host_refresh(rcip_runtime_host(rt)), rcip_result::Ok);
    }
    NOTIFYING.with(|d| d.set(d.get() - 1));
}

unsafe extern "C" fn first_subscriber(ud: *mut c_void, revision: u64) {
    heard(ud, 0, revision)
}

unsafe extern "C" fn second_subscriber(ud: *mut c_void, revision: u64) {
    heard(ud, 1, revision)
}

/// abi_sequence: a bind, an unbind and a successful invocation publish
/// their refresh inside their own critical section. Their notifications
/// did not count as a refresh in progress, so a refresh the first
/// subscriber asked for ran nested: the second subscriber heard the newer
/// revision, then the older one. A refresh from a subscriber is queued
/// behind the current notifications (PIPELINE.md section 2).
#[test]
fn a_refresh_asked_by_a_subscriber_of_a_bind_unbind_or_invocation_is_queued() {
    use std::sync::atomic::Ordering::SeqCst;
    unsafe {
        let (cat, rt) = runtime();
        let h = Heard {
            log: Mutex::new(Vec::new()),
            runtime: std::sync::atomic::AtomicPtr::new(rt),
            refreshes_left: std::sync::atomic::AtomicU32::new(0),
        };
        let ud = &h as *const Heard as *mut c_void;
        let client = rcip_runtime_client(rt);
        let (mut s1, mut s2) = (ptr::null_mut(), ptr::null_mut());
        assert_eq!(
            rcip_client_subscribe(client, Some(first_subscriber), ud, None, &mut s1),
            rcip_result::Ok
        );
        assert_eq!(
            rcip_client_subscribe(client, Some(second_subscriber), ud, None, &mut s2),
            rcip_result::Ok
        );
        let mut binding = ptr::null_mut();
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let mut revision = 0;
        for trigger in ["bind", "invoke", "unbind"] {
            h.log.lock().unwrap().clear();
            h.refreshes_left.store(1, SeqCst);
            match trigger {
                "bind" => binding = bind(rt, c"items.list"),
                "invoke" => assert_eq!(
                    rcip_client_invoke(
                        client,
                        c"items.list".as_ptr(),
                        c"{}".as_ptr(),
                        ptr::null(),
                        ptr::null(),
                        Some(keep),
                        &outcomes as *const _ as *mut c_void,
                        None,
                        ptr::null_mut()
                    ),
                    rcip_result::Ok
                ),
                _ => rcip_capi::binding::rcip_binding_free(binding),
            }
            // The trigger's revision, then the queued one, each heard by both
            // subscribers in order and none inside another notification.
            let expected: Vec<(u8, u64, u32)> = vec![
                (0, revision + 1, 1),
                (1, revision + 1, 1),
                (0, revision + 2, 1),
                (1, revision + 2, 1),
            ];
            assert_eq!(*h.log.lock().unwrap(), expected, "{trigger}");
            revision += 2;
        }
        assert_eq!(outcomes.lock().unwrap().len(), 1);
        assert!(outcomes.lock().unwrap()[0].contains(r#""status":"succeeded""#));
        rcip_capi::client::rcip_subscription_free(s1);
        rcip_capi::client::rcip_subscription_free(s2);
        rcip_runtime_free(rt);
        rcip_catalog_free(cat);
    }
}
