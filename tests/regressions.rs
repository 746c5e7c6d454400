//! Regression tests for library bugs the fuzz targets found (issue 5,
//! item 7), each through the C ABI as the target saw it.

use rcip::ffi::cancel::*;
use rcip::ffi::catalog::*;
use rcip::ffi::client::*;
use rcip::ffi::host::*;
use rcip::ffi::invocation::*;
use rcip::ffi::result::*;
use rcip::ffi::runtime::*;
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

unsafe extern "C" fn keep(ud: *mut c_void, json: *const c_char) {
    (*(ud as *const Mutex<Vec<String>>)).lock().unwrap().push(CStr::from_ptr(json).to_str().unwrap().to_string());
}

/// abi_sequence: a preflight whose token is already cancelled settles its
/// report while registering on the token, before the proposals are asked;
/// the ask loop then indexed the emptied proposal slots and panicked
/// (RCIP_RESULT_PANIC, after the report had been delivered).
#[test]
fn a_preflight_with_an_already_cancelled_token_reports_every_proposal_aborted() {
    unsafe {
        let (cat, rt) = runtime();
        let mut b = ptr::null_mut();
        assert_eq!(rcip_host_bind(rcip_runtime_host(rt), c"items.list".as_ptr(), Some(complete), None, ptr::null_mut(), None, &mut b), rcip_result::Ok);
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
        for o in report["outcomes"].as_array().unwrap() {
            assert_eq!(o["status"], "blocked", "{report}");
            assert_eq!(o["error"]["code"], "EXECUTION_ABORTED", "{report}");
        }
        let mut stats = ptr::null_mut();
        assert_eq!(rcip_runtime_stats(rt, &mut stats), rcip_result::Ok);
        assert!(CStr::from_ptr(stats).to_str().unwrap().contains("\"pendingPreflights\":0"));
        rcip::ffi::string::rcip_string_free(stats);
        rcip_cancel_token_free(token);
        rcip::ffi::binding::rcip_binding_free(b);
        rcip_runtime_free(rt);
        rcip_catalog_free(cat);
    }
}
