//! Catalog loading: `rcip_catalog_new` and `rcip_catalog_check` on arbitrary
//! text. Invariants: only OK or INVALID_CATALOG (never PANIC), the
//! out-parameter is NULL exactly on failure, the linter's report agrees
//! with the loader (`ok` exactly when the catalog loads, with no problems
//! then and at least one otherwise), and a loaded catalog gives a runtime
//! whose snapshot lists every capability, where each usage example (already
//! checked against its input schema at load) passes input validation when
//! invoked.
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use common::*;
use libfuzzer_sys::fuzz_target;
use rcip_capi::catalog::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::result::rcip_result;
use rcip_capi::runtime::*;
use rcip_capi::snapshot::*;
use std::ffi::{c_char, c_void};
use std::ptr;

unsafe extern "C" fn complete_empty(_: *mut c_void, inv: *mut rcip_invocation) {
    assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
    rcip_invocation_free(inv);
}

unsafe extern "C" fn keep_outcome(ud: *mut c_void, json: *const c_char) {
    let slot = &mut *(ud as *mut Vec<String>);
    slot.push(borrowed(json).unwrap());
}

fuzz_target!(|data: &[u8]| {
    let text = cbytes(data);
    unsafe {
        let mut catalog = 1 as *mut rcip_catalog;
        let rc = rcip_catalog_new(text.as_ptr().cast(), &mut catalog);
        no_panic(rc, "rcip_catalog_new");
        assert!(
            rc == rcip_result::Ok || rc == rcip_result::InvalidCatalog,
            "unexpected code {rc:?}"
        );
        assert_eq!(
            catalog.is_null(),
            rc != rcip_result::Ok,
            "out-parameter NULL exactly on failure"
        );
        if rc != rcip_result::Ok {
            assert!(
                last_error().is_some_and(|m| !m.is_empty()),
                "a refused catalog has a message"
            );
        }

        let mut report = ptr::null_mut();
        let rc2 = rcip_catalog_check(text.as_ptr().cast(), &mut report);
        assert_eq!(rc2, rcip_result::Ok, "a bad catalog is a report, not an error code");
        let report = json(&take(report).unwrap());
        let ok = report["ok"].as_bool().expect("report.ok is a boolean");
        let problems = report["problems"].as_array().expect("report.problems is an array");
        assert_eq!(
            ok,
            problems.is_empty(),
            "ok exactly when there are no problems: {report}"
        );
        assert_eq!(
            ok,
            rc == rcip_result::Ok,
            "rcip_catalog_check and rcip_catalog_new disagree: {report}"
        );
        for p in problems {
            let pointer = p["pointer"].as_str().expect("pointer");
            assert!(
                pointer.is_empty() || pointer.starts_with('/'),
                "JSON pointer: {pointer}"
            );
            assert!(p["rule"].as_str().is_some_and(|r| !r.is_empty()), "rule: {p}");
            assert!(p["message"].as_str().is_some_and(|m| !m.is_empty()), "message: {p}");
        }
        if catalog.is_null() {
            return;
        }

        let definition = json(std::str::from_utf8(&text[..text.len() - 1]).unwrap());
        let mut builder = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog, &mut builder), rcip_result::Ok);
        assert_eq!(rcip_runtime_builder_set_manual_timers(builder, true), rcip_result::Ok);
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
        rcip_catalog_free(catalog); // the runtime keeps its own reference
        let client = rcip_runtime_client(runtime);
        let host = rcip_runtime_host(runtime);

        let mut snap = ptr::null();
        assert_eq!(rcip_client_snapshot(client, &mut snap), rcip_result::Ok);
        let snapshot = json(&borrowed(rcip_snapshot_json(snap)).unwrap());
        rcip_snapshot_free(snap);
        let caps = snapshot["capabilities"].as_array().expect("capabilities");
        let declared = definition["capabilities"]
            .as_array()
            .expect("a loaded catalog has capabilities");
        assert_eq!(caps.len(), declared.len());
        for (c, d) in caps.iter().zip(declared) {
            assert_eq!(c["id"], d["id"], "catalog order");
            assert_eq!(c["bound"], false);
        }

        // Usage examples passed their input schema at load: they must pass
        // it again when invoked.
        let mut bindings = Vec::new();
        for d in declared.iter().take(8) {
            let Some(examples) = d["usage"]["examples"].as_array() else {
                continue;
            };
            let id = cstr(d["id"].as_str().unwrap());
            let mut b = ptr::null_mut();
            let rc = rcip_host_bind(
                host,
                id.as_ptr().cast(),
                Some(complete_empty),
                None,
                ptr::null_mut(),
                None,
                &mut b,
            );
            assert_eq!(rc, rcip_result::Ok, "{:?}", last_error());
            bindings.push(b);
            for ex in examples.iter().take(4) {
                let input = cstr(&ex["input"].to_string());
                let mut outcomes: Vec<String> = Vec::new();
                let rc = rcip_client_invoke(
                    client,
                    id.as_ptr().cast(),
                    input.as_ptr().cast(),
                    ptr::null(),
                    ptr::null(),
                    Some(keep_outcome),
                    &mut outcomes as *mut _ as *mut c_void,
                    None,
                    ptr::null_mut(),
                );
                assert_eq!(rc, rcip_result::Ok);
                // Destructive capabilities stop at a pending confirmation;
                // every other path has delivered by now.
                assert_eq!(outcomes.len(), 1, "exactly one outcome");
                let o = json(&outcomes[0]);
                assert_ne!(
                    o["error"]["code"], "INPUT_INVALID",
                    "a usage example failed its own input schema at invoke: {o}"
                );
            }
        }
        for b in bindings {
            rcip_capi::binding::rcip_binding_free(b);
        }
        rcip_runtime_free(runtime);
    }
});
