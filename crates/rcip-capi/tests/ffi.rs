//! The C ABI called directly (docs/C-ABI.md, "Tests"): NULL arguments, invalid
//! UTF-8 and JSON, out-parameters on failure, double settles, user data
//! released exactly once (and never after a failed registration), and
//! every free order.

use rcip_capi::binding::*;
use rcip_capi::cancel::*;
use rcip_capi::catalog::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::policy::*;
use rcip_capi::result::*;
use rcip_capi::runtime::*;
use rcip_capi::schema::*;
use rcip_capi::snapshot::*;
use rcip_capi::string::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const CATALOG: &str = r#"{"protocolVersion": "1.0",
 "application": {"id": "app", "name": "App", "description": "Test."},
 "scopes": [{"id": "main", "title": "Main", "description": "Main view."}],
 "capabilities": [
  {"id": "items.list", "title": "List", "description": "Lists items.", "scopeIds": ["main"], "effect": "read",
   "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": false},
   "outputSchema": {"type": "object"}},
  {"id": "items.purge", "title": "Purge", "description": "Deletes items.", "scopeIds": [], "effect": "destructive",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#;

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn last_error() -> String {
    let p = rcip_last_error_message();
    if p.is_null() {
        String::new()
    } else {
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

unsafe fn take_string(p: *mut c_char) -> String {
    let s = CStr::from_ptr(p).to_string_lossy().into_owned();
    rcip_string_free(p);
    s
}

struct Fixture {
    catalog: *mut rcip_catalog,
    runtime: *mut rcip_runtime,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with(CATALOG, |_| {})
    }

    /// A runtime over `catalog`; `configure` sees the builder first.
    fn with(catalog: &str, configure: impl FnOnce(*mut rcip_runtime_builder)) -> Fixture {
        unsafe {
            let mut cat = ptr::null_mut();
            assert_eq!(rcip_catalog_new(c(catalog).as_ptr(), &mut cat), rcip_result::Ok);
            let mut builder = ptr::null_mut();
            assert_eq!(rcip_runtime_builder_new(cat, &mut builder), rcip_result::Ok);
            configure(builder);
            let mut runtime = ptr::null_mut();
            assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
            Fixture { catalog: cat, runtime }
        }
    }
    fn host(&self) -> *const rcip_host {
        // Safety: the fixture's runtime, alive until it is dropped.
        unsafe { rcip_runtime_host(self.runtime) }
    }
    fn client(&self) -> *const rcip_client {
        // Safety: the fixture's runtime, alive until it is dropped.
        unsafe { rcip_runtime_client(self.runtime) }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        unsafe {
            rcip_runtime_free(self.runtime);
            rcip_catalog_free(self.catalog);
        }
    }
}

// A handler that completes inline with `{}`.
unsafe extern "C" fn complete_inline(_: *mut c_void, inv: *mut rcip_invocation) {
    assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
    rcip_invocation_free(inv);
}

// A handler that keeps its handle for the test to settle (user data: a
// `Mutex<Vec<usize>>` of the test).
unsafe extern "C" fn hold(ud: *mut c_void, inv: *mut rcip_invocation) {
    (*(ud as *const Mutex<Vec<usize>>)).lock().unwrap().push(inv as usize);
}

unsafe extern "C" fn count_free(ud: *mut c_void) {
    (*(ud as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn store_outcome(ud: *mut c_void, json: *const c_char) {
    let slot = &*(ud as *const Mutex<Vec<String>>);
    slot.lock()
        .unwrap()
        .push(CStr::from_ptr(json).to_string_lossy().into_owned());
}

#[test]
fn null_arguments_give_null_argument_and_null_out_params() {
    let f = Fixture::new();
    unsafe {
        let mut catalog = std::ptr::dangling_mut::<rcip_catalog>();
        assert_eq!(rcip_catalog_new(ptr::null(), &mut catalog), rcip_result::NullArgument);
        assert!(catalog.is_null(), "out-parameter set to NULL on failure");
        assert!(last_error().contains("catalog_json"));
        assert_eq!(
            rcip_catalog_new(c(CATALOG).as_ptr(), ptr::null_mut()),
            rcip_result::NullArgument
        );

        let mut binding = std::ptr::dangling_mut::<rcip_binding>();
        assert_eq!(
            rcip_host_bind(
                ptr::null(),
                c"items.list".as_ptr(),
                Some(complete_inline),
                None,
                ptr::null_mut(),
                None,
                &mut binding
            ),
            rcip_result::NullArgument
        );
        assert!(binding.is_null());
        assert_eq!(
            rcip_host_bind(
                f.host(),
                ptr::null(),
                Some(complete_inline),
                None,
                ptr::null_mut(),
                None,
                &mut binding
            ),
            rcip_result::NullArgument
        );
        assert_eq!(
            rcip_host_bind(
                f.host(),
                c"items.list".as_ptr(),
                None,
                None,
                ptr::null_mut(),
                None,
                &mut binding
            ),
            rcip_result::NullArgument
        );
        assert_eq!(rcip_host_set_context(f.host(), ptr::null()), rcip_result::NullArgument);
        assert_eq!(rcip_host_refresh(ptr::null()), rcip_result::NullArgument);
        let mut out = std::ptr::dangling_mut::<c_char>();
        assert_eq!(
            rcip_client_list_capabilities(ptr::null(), ptr::null(), &mut out),
            rcip_result::NullArgument
        );
        assert!(out.is_null());
        assert_eq!(
            rcip_client_invoke(
                f.client(),
                c"items.list".as_ptr(),
                ptr::null(),
                ptr::null(),
                ptr::null(),
                Some(store_outcome),
                ptr::null_mut(),
                None,
                ptr::null_mut()
            ),
            rcip_result::NullArgument
        );
        assert_eq!(
            rcip_invocation_complete(ptr::null(), c"{}".as_ptr()),
            rcip_result::NullArgument
        );
        assert_eq!(
            rcip_policy_request_decide(ptr::null(), c"{}".as_ptr()),
            rcip_result::NullArgument
        );
        assert_eq!(rcip_cancel_token_cancel(ptr::null()), rcip_result::NullArgument);
        assert!(rcip_invocation_input(ptr::null()).is_null());
        assert!(rcip_snapshot_json(ptr::null()).is_null());
        assert_eq!(rcip_snapshot_revision(ptr::null()), 0);
        assert!(!rcip_cancel_token_is_cancelled(ptr::null()));
        // _free(NULL) does nothing.
        rcip_catalog_free(ptr::null_mut());
        rcip_runtime_free(ptr::null_mut());
        rcip_binding_free(ptr::null_mut());
        rcip_invocation_free(ptr::null_mut());
        rcip_policy_request_free(ptr::null_mut());
        rcip_cancel_token_free(ptr::null_mut());
        rcip_snapshot_free(ptr::null());
        rcip_string_free(ptr::null_mut());
        rcip_subscription_free(ptr::null_mut());
        rcip_schema_free(ptr::null_mut());
        rcip_runtime_builder_free(ptr::null_mut());
    }
}

#[test]
fn utf8_json_and_shape_errors_change_nothing() {
    let f = Fixture::new();
    unsafe {
        let bad = b"items.\xff\0";
        let mut binding = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                f.host(),
                bad.as_ptr().cast(),
                Some(complete_inline),
                None,
                ptr::null_mut(),
                None,
                &mut binding
            ),
            rcip_result::InvalidUtf8
        );
        assert!(last_error().contains("byte 6"), "{}", last_error());
        // Valid UTF-8 beyond ASCII passes the argument check (the ASCII
        // shortcut falls back to a full check) and is then not in the catalog.
        assert_eq!(
            rcip_host_bind(
                f.host(),
                c"items.caf\u{e9}".as_ptr(),
                Some(complete_inline),
                None,
                ptr::null_mut(),
                None,
                &mut binding
            ),
            rcip_result::NotInCatalog
        );
        assert!(binding.is_null());
        assert_eq!(
            rcip_host_set_context(f.host(), c"{not json".as_ptr()),
            rcip_result::InvalidJson
        );
        assert_eq!(
            rcip_host_set_context(f.host(), c"[]".as_ptr()),
            rcip_result::InvalidArgument
        );
        assert_eq!(
            rcip_host_set_context(f.host(), cr#"{"activeScopeIds": null}"#.as_ptr()),
            rcip_result::InvalidArgument
        );
        assert_eq!(
            rcip_host_set_context(f.host(), cr#"{"activeScopeIds": ["nope"]}"#.as_ptr()),
            rcip_result::UnknownScope
        );
        assert_eq!(
            rcip_host_set_context(
                f.host(),
                cr#"{"activeScopeIds": [], "primaryScopeId": "main"}"#.as_ptr()
            ),
            rcip_result::PrimaryNotActive
        );
        let mut snap = ptr::null();
        assert_eq!(rcip_client_snapshot(f.client(), &mut snap), rcip_result::Ok);
        assert_eq!(rcip_snapshot_revision(snap), 0, "failed calls changed nothing");
        rcip_snapshot_free(snap);
        let mut out = ptr::null_mut();
        assert_eq!(
            rcip_client_list_capabilities(f.client(), cr#"{"effect": "admin"}"#.as_ptr(), &mut out),
            rcip_result::InvalidArgument
        );
        assert!(last_error().contains("effect"));
        // Success clears the message.
        assert_eq!(
            rcip_client_list_capabilities(f.client(), ptr::null(), &mut out),
            rcip_result::Ok
        );
        assert!(rcip_last_error_message().is_null());
        assert_eq!(take_string(out).matches("\"id\"").count(), 2);
        // Invalid input text is an outcome, never a code.
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let bad_input = b"{\"n\": \"\xff\"}\0";
        assert_eq!(
            rcip_client_invoke(
                f.client(),
                c"items.list".as_ptr(),
                bad_input.as_ptr().cast(),
                ptr::null(),
                ptr::null(),
                Some(store_outcome),
                &outcomes as *const _ as *mut c_void,
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        assert!(outcomes.lock().unwrap()[0].contains("INPUT_INVALID"));
    }
}

#[test]
fn user_data_is_released_once_and_never_after_a_failed_registration() {
    let f = Fixture::new();
    unsafe {
        let freed = AtomicUsize::new(0);
        let ud = &freed as *const AtomicUsize as *mut c_void;
        let mut b1 = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                f.host(),
                c"items.list".as_ptr(),
                Some(complete_inline),
                None,
                ud,
                Some(count_free),
                &mut b1
            ),
            rcip_result::Ok
        );
        let mut b2 = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                f.host(),
                c"items.list".as_ptr(),
                Some(complete_inline),
                None,
                ud,
                Some(count_free),
                &mut b2
            ),
            rcip_result::AlreadyBound
        );
        assert_eq!(
            rcip_host_bind(
                f.host(),
                c"nope".as_ptr(),
                Some(complete_inline),
                None,
                ud,
                Some(count_free),
                &mut b2
            ),
            rcip_result::NotInCatalog
        );
        assert_eq!(
            freed.load(Ordering::SeqCst),
            0,
            "failed registrations never call user_data_free"
        );
        assert_eq!(rcip_binding_unbind(b1), rcip_result::Ok);
        assert_eq!(freed.load(Ordering::SeqCst), 1, "released once unbound");
        assert_eq!(rcip_binding_unbind(b1), rcip_result::Ok, "a stale unbind is a no-op");
        rcip_binding_free(b1);
        assert_eq!(freed.load(Ordering::SeqCst), 1);

        // Outcome callbacks: the user data is released after the one outcome.
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let out_freed = AtomicUsize::new(0);
        struct Both<'a>(&'a Mutex<Vec<String>>, &'a AtomicUsize);
        unsafe extern "C" fn on_outcome(ud: *mut c_void, json: *const c_char) {
            let b = &*(ud as *const Both);
            b.0.lock()
                .unwrap()
                .push(CStr::from_ptr(json).to_string_lossy().into_owned());
        }
        unsafe extern "C" fn on_free(ud: *mut c_void) {
            (*(ud as *const Both)).1.fetch_add(1, Ordering::SeqCst);
        }
        let both = Both(&outcomes, &out_freed);
        let ud = &both as *const Both as *mut c_void;
        let mut id = ptr::null_mut();
        assert_eq!(
            rcip_client_invoke(
                f.client(),
                c"items.list".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(on_outcome),
                ud,
                Some(on_free),
                &mut id
            ),
            rcip_result::Ok
        );
        let id = take_string(id);
        assert_eq!(outcomes.lock().unwrap().len(), 1);
        assert!(outcomes.lock().unwrap()[0].contains(&id));
        assert_eq!(out_freed.load(Ordering::SeqCst), 1);
        // A refused preflight keeps the user data with the caller.
        assert_eq!(
            rcip_client_preflight(
                f.client(),
                ptr::null(),
                ptr::null(),
                0,
                ptr::null(),
                Some(on_outcome),
                ud,
                Some(on_free)
            ),
            rcip_result::PreflightBatchInvalid
        );
        assert_eq!(out_freed.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn double_settle_is_already_completed_and_changes_nothing() {
    let f = Fixture::new();
    unsafe {
        let held: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let mut b = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                f.host(),
                c"items.list".as_ptr(),
                Some(hold),
                None,
                &held as *const _ as *mut c_void,
                None,
                &mut b
            ),
            rcip_result::Ok
        );
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let ud = &outcomes as *const _ as *mut c_void;
        assert_eq!(
            rcip_client_invoke(
                f.client(),
                c"items.list".as_ptr(),
                cr#"{"n": 2}"#.as_ptr(),
                c"inv-1".as_ptr(),
                ptr::null(),
                Some(store_outcome),
                ud,
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        let inv = held.lock().unwrap().pop().unwrap() as *mut rcip_invocation;
        assert_eq!(CStr::from_ptr(rcip_invocation_id(inv)).to_str().unwrap(), "inv-1");
        assert_eq!(
            CStr::from_ptr(rcip_invocation_input(inv)).to_str().unwrap(),
            r#"{"n":2}"#
        );
        assert_eq!(
            CStr::from_ptr(rcip_invocation_semantic_context(inv)).to_str().unwrap(),
            r#"{"activeScopeIds":[]}"#
        );
        let token = rcip_invocation_cancel_token(inv);
        assert!(!token.is_null() && !rcip_cancel_token_is_cancelled(token));
        // The id is reserved while the handler runs.
        assert_eq!(
            rcip_client_invoke(
                f.client(),
                c"items.list".as_ptr(),
                c"{}".as_ptr(),
                c"inv-1".as_ptr(),
                ptr::null(),
                Some(store_outcome),
                ud,
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        assert!(outcomes.lock().unwrap()[0].contains("INVOCATION_ALREADY_ACTIVE"));
        assert_eq!(rcip_invocation_complete(inv, cr#"{"a": 1}"#.as_ptr()), rcip_result::Ok);
        assert_eq!(
            rcip_invocation_complete(inv, c"{}".as_ptr()),
            rcip_result::AlreadyCompleted
        );
        assert_eq!(rcip_invocation_fail(inv, true), rcip_result::AlreadyCompleted);
        rcip_invocation_free(inv);
        let all = outcomes.lock().unwrap().clone();
        assert_eq!(all.len(), 2);
        assert!(all[1].contains("\"succeeded\"") && all[1].contains(r#""output":{"a":1}"#));
        rcip_binding_free(b);
    }
}

#[test]
fn free_orders_are_all_safe() {
    unsafe {
        // Catalog freed before the runtime; runtime freed before a held
        // invocation, a binding, a token and a snapshot.
        let f = Fixture::new();
        rcip_catalog_free(f.catalog);
        let held: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let mut b = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                f.host(),
                c"items.list".as_ptr(),
                Some(hold),
                None,
                &held as *const _ as *mut c_void,
                None,
                &mut b
            ),
            rcip_result::Ok
        );
        let mut token = ptr::null_mut();
        assert_eq!(rcip_cancel_token_new(&mut token), rcip_result::Ok);
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let ud = &outcomes as *const _ as *mut c_void;
        assert_eq!(
            rcip_client_invoke(
                f.client(),
                c"items.list".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                token,
                Some(store_outcome),
                ud,
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        // The consumer may free its token while the invocation runs.
        rcip_cancel_token_free(token);
        let mut snap = ptr::null();
        assert_eq!(rcip_client_snapshot(f.client(), &mut snap), rcip_result::Ok);
        let inv = held.lock().unwrap().pop().unwrap() as *mut rcip_invocation;
        let runtime = f.runtime;
        std::mem::forget(f);
        rcip_runtime_free(runtime);
        assert_eq!(outcomes.lock().unwrap().len(), 1);
        assert!(outcomes.lock().unwrap()[0].contains("EXECUTION_ABORTED"));
        assert!(rcip_cancel_token_is_cancelled(rcip_invocation_cancel_token(inv)));
        assert_eq!(
            rcip_invocation_complete(inv, c"{}".as_ptr()),
            rcip_result::Ok,
            "a late completion is accepted"
        );
        assert_eq!(outcomes.lock().unwrap().len(), 1, "and ignored");
        rcip_invocation_free(inv);
        assert_eq!(rcip_binding_unbind(b), rcip_result::Closed);
        assert_eq!(rcip_binding_set_revision(b, 3), rcip_result::Closed);
        assert!(!rcip_binding_is_installed(b));
        rcip_binding_free(b);
        assert!(CStr::from_ptr(rcip_snapshot_json(snap))
            .to_str()
            .unwrap()
            .contains("\"revision\":1"));
        rcip_snapshot_free(snap);
    }
}

unsafe extern "C" fn defer_policy(_: *mut c_void, req: *mut rcip_policy_request) {
    HELD_POLICIES.lock().unwrap().push(req as usize);
}
static HELD_POLICIES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

#[test]
fn policy_handles_decide_once_and_report_bad_decisions() {
    unsafe {
        let mut catalog = ptr::null_mut();
        assert_eq!(rcip_catalog_new(c(CATALOG).as_ptr(), &mut catalog), rcip_result::Ok);
        let mut builder = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog, &mut builder), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_set_policy(builder, None, ptr::null_mut(), None),
            rcip_result::NullArgument
        );
        assert_eq!(
            rcip_runtime_builder_set_policy(builder, Some(defer_policy), ptr::null_mut(), None),
            rcip_result::Ok
        );
        assert_eq!(
            rcip_runtime_builder_set_confirmation_ttl_ms(builder, 0),
            rcip_result::InvalidArgument
        );
        // The documented range is 1 to 2^62, both ends included.
        assert_eq!(
            rcip_runtime_builder_set_confirmation_ttl_ms(builder, (1 << 62) + 1),
            rcip_result::InvalidArgument
        );
        assert_eq!(
            rcip_runtime_builder_set_confirmation_ttl_ms(builder, 1 << 62),
            rcip_result::Ok
        );
        assert_eq!(
            rcip_runtime_builder_set_confirmation_ttl_ms(builder, 120_000),
            rcip_result::Ok
        );
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
        let host = rcip_runtime_host(runtime);
        let client = rcip_runtime_client(runtime);
        let mut b = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                host,
                c"items.list".as_ptr(),
                Some(complete_inline),
                None,
                ptr::null_mut(),
                None,
                &mut b
            ),
            rcip_result::Ok
        );
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let ud = &outcomes as *const _ as *mut c_void;
        for _ in 0..2 {
            assert_eq!(
                rcip_client_invoke(
                    client,
                    c"items.list".as_ptr(),
                    c"{}".as_ptr(),
                    ptr::null(),
                    ptr::null(),
                    Some(store_outcome),
                    ud,
                    None,
                    ptr::null_mut()
                ),
                rcip_result::Ok
            );
        }
        let (r1, r2) = {
            let mut held = HELD_POLICIES.lock().unwrap();
            let r2 = held.pop().unwrap() as *mut rcip_policy_request;
            let r1 = held.pop().unwrap() as *mut rcip_policy_request;
            (r1, r2)
        };
        let ctx = CStr::from_ptr(rcip_policy_request_context(r1))
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            ctx.contains(r#""phase":"invoke""#) && ctx.contains(r#""id":"items.list""#),
            "{ctx}"
        );
        assert!(!rcip_policy_request_invocation_id(r1).is_null());
        // Wrong shapes leave the request undecided.
        assert_eq!(
            rcip_policy_request_decide(r1, c"allow".as_ptr()),
            rcip_result::InvalidJson
        );
        assert_eq!(
            rcip_policy_request_decide(r1, cr#"{"decision": "allow", "extra": 1}"#.as_ptr()),
            rcip_result::InvalidArgument
        );
        assert!(outcomes.lock().unwrap().is_empty());
        assert_eq!(
            rcip_policy_request_decide(r1, cr#"{"decision": "allow"}"#.as_ptr()),
            rcip_result::Ok
        );
        assert_eq!(
            rcip_policy_request_decide(r1, cr#"{"decision": "deny"}"#.as_ptr()),
            rcip_result::AlreadyCompleted
        );
        // An unknown decision settles as a policy failure and is reported.
        assert_eq!(
            rcip_policy_request_decide(r2, cr#"{"decision": "maybe"}"#.as_ptr()),
            rcip_result::InvalidArgument
        );
        assert_eq!(rcip_policy_request_fail(r2), rcip_result::AlreadyCompleted);
        rcip_policy_request_free(r1);
        rcip_policy_request_free(r2);
        let all = outcomes.lock().unwrap().clone();
        assert!(all[0].contains("\"succeeded\""), "{all:?}");
        assert!(all[1].contains("POLICY_EVALUATION_FAILED"), "{all:?}");
        // Freeing an undecided request fails the policy.
        assert_eq!(
            rcip_client_invoke(
                client,
                c"items.list".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(store_outcome),
                ud,
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        let r3 = HELD_POLICIES.lock().unwrap().pop().unwrap() as *mut rcip_policy_request;
        rcip_policy_request_free(r3);
        assert!(outcomes.lock().unwrap()[2].contains("POLICY_EVALUATION_FAILED"));
        rcip_binding_free(b);
        rcip_runtime_free(runtime);
        rcip_catalog_free(catalog);
    }
}

#[test]
fn result_strings_and_schemas() {
    unsafe {
        for code in [
            0u32,
            100,
            101,
            102,
            103,
            200,
            201,
            202,
            203,
            204,
            300,
            301,
            302,
            303,
            304,
            900,
            7,
            u32::MAX,
        ] {
            assert!(!CStr::from_ptr(rcip_result_str(code)).to_str().unwrap().is_empty());
        }
        let mut schema = ptr::null_mut();
        assert_eq!(
            rcip_schema_new(cr#"{"type": "string", "format": "email"}"#.as_ptr(), &mut schema),
            rcip_result::InvalidArgument
        );
        assert!(schema.is_null() && last_error().contains("format"));
        assert_eq!(
            rcip_schema_new(cr#"{"type": "string", "minLength": 2}"#.as_ptr(), &mut schema),
            rcip_result::Ok
        );
        let mut out = ptr::null_mut();
        assert_eq!(
            rcip_schema_validate(schema, cr#""a""#.as_ptr(), &mut out),
            rcip_result::Ok
        );
        let result = take_string(out);
        assert!(
            result.contains(r#""valid":false"#) && result.contains("minLength"),
            "{result}"
        );
        assert_eq!(
            rcip_schema_validate(schema, c"nope".as_ptr(), &mut out),
            rcip_result::InvalidJson
        );
        rcip_schema_free(schema);
        let mut report = ptr::null_mut();
        assert_eq!(
            rcip_catalog_check(cr#"{"protocolVersion": "2.0"}"#.as_ptr(), &mut report),
            rcip_result::Ok
        );
        let report = take_string(report);
        assert!(
            report.contains(r#""ok":false"#) && report.contains("/protocolVersion") && report.contains("/application"),
            "{report}"
        );
    }
}

// A handler that frees its own runtime (user data: the runtime pointer
// slot), then completes.
unsafe extern "C" fn free_runtime_then_complete(ud: *mut c_void, inv: *mut rcip_invocation) {
    let slot = &*(ud as *const Mutex<usize>);
    let runtime = std::mem::take(&mut *slot.lock().unwrap()) as *mut rcip_runtime;
    rcip_runtime_free(runtime);
    assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
    rcip_invocation_free(inv);
}

#[test]
fn a_callback_may_free_its_own_runtime() {
    unsafe {
        let f = Fixture::new();
        let slot = Mutex::new(f.runtime as usize);
        let mut b = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                f.host(),
                c"items.list".as_ptr(),
                Some(free_runtime_then_complete),
                None,
                &slot as *const _ as *mut c_void,
                None,
                &mut b
            ),
            rcip_result::Ok
        );
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let client = f.client();
        let catalog = f.catalog;
        std::mem::forget(f);
        assert_eq!(
            rcip_client_invoke(
                client,
                c"items.list".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(store_outcome),
                &outcomes as *const _ as *mut c_void,
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        let all = outcomes.lock().unwrap().clone();
        assert_eq!(all.len(), 1, "{all:?}");
        assert!(all[0].contains("EXECUTION_ABORTED"), "{all:?}");
        rcip_binding_free(b);
        rcip_catalog_free(catalog);
    }
}

// Availability callbacks for the test below; user data: which answer.
unsafe extern "C" fn answer(ud: *mut c_void, sink: *mut rcip_capi::sink::rcip_availability_sink) -> i32 {
    use rcip_capi::sink::rcip_availability_set;
    match ud as usize {
        // Plainly available.
        0 => {
            rcip_availability_set(sink, true, ptr::null(), ptr::null());
            0
        }
        // Unavailable, with a reason code and a reason.
        1 => {
            rcip_availability_set(sink, false, c"OFFLINE".as_ptr(), c"The device is offline.".as_ptr());
            0
        }
        // Available with a reason (not plain: the reason shows).
        2 => {
            rcip_availability_set(sink, true, ptr::null(), c"Slow today.".as_ptr());
            0
        }
        // Answers, then reports failure: the check failed.
        3 => {
            rcip_availability_set(sink, true, ptr::null(), ptr::null());
            1
        }
        // Returns success without answering: the check failed.
        _ => 0,
    }
}

/// A refresh asks each binding's C availability callback once and shows
/// every kind of answer as given (PIPELINE.md section 2): plain, with
/// reasons, failed by its return value, and unanswered. (A refresh takes
/// the C callbacks from its list of checks, not from the binding records.)
#[test]
fn a_refresh_shows_each_kind_of_c_availability_answer() {
    const CATALOG5: &str = r#"{"protocolVersion": "1.0",
     "application": {"id": "app", "name": "App", "description": "Test."},
     "scopes": [],
     "capabilities": [
      {"id": "c.zero", "title": "Zero", "description": "Zero.", "scopeIds": [], "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
      {"id": "c.one", "title": "One", "description": "One.", "scopeIds": [], "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
      {"id": "c.two", "title": "Two", "description": "Two.", "scopeIds": [], "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
      {"id": "c.three", "title": "Three", "description": "Three.", "scopeIds": [], "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
      {"id": "c.four", "title": "Four", "description": "Four.", "scopeIds": [], "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#;
    let f = Fixture::with(CATALOG5, |_| {});
    let runtime = f.runtime;
    unsafe {
        let ids = ["c.zero", "c.one", "c.two", "c.three", "c.four"];
        let mut bindings = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            let mut b = ptr::null_mut();
            assert_eq!(
                rcip_host_bind(
                    rcip_runtime_host(runtime),
                    c(id).as_ptr(),
                    Some(complete_inline),
                    Some(answer),
                    i as *mut c_void,
                    None,
                    &mut b
                ),
                rcip_result::Ok
            );
            bindings.push(b);
        }
        assert_eq!(rcip_host_refresh(rcip_runtime_host(runtime)), rcip_result::Ok);
        let mut snapshot = ptr::null();
        assert_eq!(
            rcip_client_snapshot(rcip_runtime_client(runtime), &mut snapshot),
            rcip_result::Ok
        );
        let json: serde_json::Value =
            serde_json::from_str(CStr::from_ptr(rcip_snapshot_json(snapshot)).to_str().unwrap()).unwrap();
        rcip_snapshot_free(snapshot);
        let entry = |id: &str| {
            json["capabilities"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["id"] == id)
                .unwrap_or_else(|| panic!("{id} in {json}"))
                .clone()
        };
        assert_eq!(entry("c.zero")["available"], true);
        assert_eq!(entry("c.zero")["availability"], serde_json::json!({"available": true}));
        assert_eq!(
            entry("c.one")["availability"],
            serde_json::json!({"available": false, "reasonCode": "OFFLINE", "reason": "The device is offline."})
        );
        assert_eq!(
            entry("c.two")["availability"],
            serde_json::json!({"available": true, "reason": "Slow today."})
        );
        for failed in ["c.three", "c.four"] {
            assert_eq!(entry(failed)["available"], false, "{failed}");
            assert_eq!(
                entry(failed)["availability"]["reasonCode"],
                "AVAILABILITY_CHECK_FAILED",
                "{failed}"
            );
        }
        for b in bindings {
            rcip_binding_free(b);
        }
    }
}

// An availability callback that answers available, then makes a failing
// call (a NULL sink) and records whether that set the message. User data: an `AtomicUsize` counting messages seen.
unsafe extern "C" fn fail_then_answer(ud: *mut c_void, sink: *mut rcip_capi::sink::rcip_availability_sink) -> i32 {
    use rcip_capi::sink::rcip_availability_set;
    rcip_availability_set(sink, true, ptr::null(), ptr::null());
    let rc = rcip_availability_set(ptr::null_mut(), true, ptr::null(), ptr::null());
    assert_eq!(rc, rcip_result::NullArgument);
    if !rcip_last_error_message().is_null() {
        (*(ud as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst);
    }
    0
}

/// The last error message describes the call that returned last: a call
/// that succeeds clears it on the way out, even when a callback it ran made
/// a call that failed (which set the message inside the callback).
#[test]
fn a_successful_call_clears_the_message_a_callback_left() {
    let f = Fixture::new();
    let seen = AtomicUsize::new(0);
    unsafe {
        let mut b = ptr::null_mut();
        let rc = rcip_host_bind(
            f.host(),
            c"items.list".as_ptr(),
            Some(complete_inline),
            Some(fail_then_answer),
            &seen as *const AtomicUsize as *mut c_void,
            None,
            &mut b,
        );
        assert_eq!(rc, rcip_result::Ok);
        assert!(seen.load(Ordering::SeqCst) >= 1, "the bind's refresh ran the check");
        assert!(
            rcip_last_error_message().is_null(),
            "after an OK bind: {}",
            last_error()
        );
        let before = seen.load(Ordering::SeqCst);
        assert_eq!(rcip_host_refresh(f.host()), rcip_result::Ok);
        assert!(seen.load(Ordering::SeqCst) > before);
        assert!(
            rcip_last_error_message().is_null(),
            "after an OK refresh: {}",
            last_error()
        );
        rcip_binding_free(b);
    }
}

unsafe extern "C" fn allow_policy(_: *mut c_void, req: *mut rcip_policy_request) {
    assert_eq!(
        rcip_policy_request_decide(req, cr#"{"decision":"allow"}"#.as_ptr()),
        rcip_result::Ok
    );
    rcip_policy_request_free(req);
}

/// A runtime whose policy allows everything and counts the release of its
/// user data in `policy_freed`, with `items.list` bound to `hold`.
fn held_fixture(policy_freed: &AtomicUsize, held: &Mutex<Vec<usize>>) -> (Fixture, *mut rcip_binding) {
    let f = Fixture::with(CATALOG, |builder| unsafe {
        assert_eq!(
            rcip_runtime_builder_set_policy(
                builder,
                Some(allow_policy),
                policy_freed as *const AtomicUsize as *mut c_void,
                Some(count_free)
            ),
            rcip_result::Ok
        );
    });
    let mut binding = ptr::null_mut();
    unsafe {
        assert_eq!(
            rcip_host_bind(
                f.host(),
                c"items.list".as_ptr(),
                Some(hold),
                None,
                held as *const Mutex<Vec<usize>> as *mut c_void,
                None,
                &mut binding
            ),
            rcip_result::Ok
        );
    }
    (f, binding)
}

/// Invokes `items.list` with `{}`, storing the outcome in `outcomes`.
unsafe fn invoke_items_list(runtime: *mut rcip_runtime, outcomes: &Mutex<Vec<String>>) -> rcip_result {
    rcip_client_invoke(
        rcip_runtime_client(runtime),
        c"items.list".as_ptr(),
        c"{}".as_ptr(),
        ptr::null(),
        ptr::null(),
        Some(store_outcome),
        outcomes as *const Mutex<Vec<String>> as *mut c_void,
        None,
        ptr::null_mut(),
    )
}

/// The runtime's own user data (here the policy's) is released during
/// `rcip_runtime_free`, as the header promises, even while the host still
/// holds a handler's completion handle; the handle stays usable and its
/// late completion is ignored.
#[test]
fn runtime_user_data_is_released_at_free_even_while_a_completion_handle_is_held() {
    let policy_freed = AtomicUsize::new(0);
    let held: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    let (mut f, binding) = held_fixture(&policy_freed, &held);
    let runtime = f.runtime;
    unsafe {
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        assert_eq!(invoke_items_list(runtime, &outcomes), rcip_result::Ok);
        let inv = held.lock().unwrap()[0] as *mut rcip_invocation;
        assert_eq!(policy_freed.load(Ordering::SeqCst), 0);
        rcip_runtime_free(runtime);
        f.runtime = ptr::null_mut();
        assert_eq!(policy_freed.load(Ordering::SeqCst), 1, "released during the free");
        let got = outcomes.lock().unwrap().clone();
        assert_eq!(got.len(), 1);
        assert!(got[0].contains("EXECUTION_ABORTED"), "{}", got[0]);
        assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
        rcip_invocation_free(inv);
        assert_eq!(policy_freed.load(Ordering::SeqCst), 1);
        assert_eq!(outcomes.lock().unwrap().len(), 1);
        rcip_binding_free(binding);
    }
}

/// `rcip_runtime_close` ends pending work as the free does (outcome
/// `EXECUTION_ABORTED` during the call) but keeps the handle: later calls
/// through it answer `RCIP_RESULT_CLOSED`, a second close is OK, the last
/// snapshot stays readable, and the runtime's own user data is released
/// only by the free that follows.
#[test]
fn close_ends_pending_work_and_keeps_the_handle_until_the_free() {
    let policy_freed = AtomicUsize::new(0);
    let held: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    let (mut f, binding) = held_fixture(&policy_freed, &held);
    let runtime = f.runtime;
    unsafe {
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        assert_eq!(invoke_items_list(runtime, &outcomes), rcip_result::Ok);
        let inv = held.lock().unwrap()[0] as *mut rcip_invocation;
        let token = rcip_invocation_cancel_token(inv);
        assert!(!rcip_cancel_token_is_cancelled(token));

        assert_eq!(rcip_runtime_close(runtime), rcip_result::Ok);
        let got = outcomes.lock().unwrap().clone();
        assert_eq!(got.len(), 1, "the pending invocation ended during the close");
        assert!(got[0].contains("EXECUTION_ABORTED"), "{}", got[0]);
        assert!(
            rcip_cancel_token_is_cancelled(token),
            "the handler's token is cancelled"
        );
        assert_eq!(policy_freed.load(Ordering::SeqCst), 0, "kept until the free");

        // The handle and its views stay valid; acting on the runtime is CLOSED.
        assert_eq!(rcip_runtime_close(runtime), rcip_result::Ok, "idempotent");
        assert_eq!(invoke_items_list(runtime, &outcomes), rcip_result::Closed);
        assert_eq!(rcip_host_refresh(rcip_runtime_host(runtime)), rcip_result::Closed);
        let mut snapshot = ptr::null();
        assert_eq!(
            rcip_client_snapshot(rcip_runtime_client(runtime), &mut snapshot),
            rcip_result::Ok
        );
        rcip_snapshot_free(snapshot);
        let mut list = ptr::null_mut();
        assert_eq!(
            rcip_client_list_capabilities(rcip_runtime_client(runtime), ptr::null(), &mut list),
            rcip_result::Ok
        );
        rcip_string_free(list);
        let mut stats = ptr::null_mut();
        assert_eq!(rcip_runtime_stats(runtime, &mut stats), rcip_result::Ok);
        assert!(take_string(stats).contains("\"closed\":true"));
        assert_eq!(rcip_runtime_run_due_timers(runtime), rcip_result::Closed);
        assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
        rcip_invocation_free(inv);
        assert_eq!(outcomes.lock().unwrap().len(), 1, "nothing after the close");

        rcip_runtime_free(runtime);
        f.runtime = ptr::null_mut();
        assert_eq!(policy_freed.load(Ordering::SeqCst), 1, "released by the free");
        rcip_binding_free(binding);
    }
}
