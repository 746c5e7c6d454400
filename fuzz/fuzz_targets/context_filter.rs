//! Context and filter JSON: `rcip_host_set_context` and
//! `rcip_client_list_capabilities` with arbitrary text. Input: context
//! text, a 0xFF byte, filter text (no separator: both are the same text).
//!
//! Invariants, from the header and PIPELINE.md sections 2, 3 and 8: only the
//! documented codes; the code is the one an independent reading of the text
//! gives (not JSON, wrong shape, unknown scope, primary not active); on any
//! error nothing changes (same revision, same context, no notification); on
//! success the revision moves by one, subscribers hear it once, and the
//! snapshot's context is the deduplicated one; a listed filter returns
//! exactly the snapshot's capabilities that pass it, in catalog order.
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use common::*;
use libfuzzer_sys::fuzz_target;
use rcip_capi::binding::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::result::rcip_result;
use rcip_capi::runtime::*;
use rcip_capi::sink::*;
use rcip_capi::snapshot::*;
use serde_json::{json, Value};
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

const SCOPES: [&str; 3] = ["main", "main.detail", "other"];

unsafe extern "C" fn handler(_: *mut c_void, inv: *mut rcip_invocation) {
    rcip_invocation_free(inv);
}
unsafe extern "C" fn unavailable(_: *mut c_void, sink: *mut rcip_availability_sink) -> i32 {
    assert_eq!(
        rcip_availability_set(sink, false, c"OFF".as_ptr(), c"switched off".as_ptr()),
        rcip_result::Ok
    );
    0
}
unsafe extern "C" fn failing(_: *mut c_void, _: *mut rcip_availability_sink) -> i32 {
    1
}
unsafe extern "C" fn count(ud: *mut c_void, revision: u64) {
    let n = &*(ud as *const AtomicU64);
    n.fetch_add(1, Ordering::SeqCst);
    assert!(revision > 0);
}

#[derive(Debug, PartialEq)]
enum Ctx {
    Skip,
    NotJson,
    Shape,
    UnknownScope,
    PrimaryNotActive,
    Ok(Vec<String>, Option<String>),
}

fn parse(text: &[u8]) -> Result<Value, bool> {
    let s = std::str::from_utf8(text).map_err(|_| true)?;
    if s.starts_with('\u{feff}') {
        return Err(true);
    }
    if text.iter().filter(|&&b| b == b'[' || b == b'{').count() > 100 {
        return Err(false); // deeper than serde's default limit: no oracle
    }
    serde_json::from_str(s).map_err(|_| true)
}

fn expect_context(text: &[u8]) -> Ctx {
    let v = match parse(text) {
        Ok(v) => v,
        Err(true) => return Ctx::NotJson,
        Err(false) => return Ctx::Skip,
    };
    let Value::Object(m) = v else { return Ctx::Shape };
    if m.keys().any(|k| k != "activeScopeIds" && k != "primaryScopeId") {
        return Ctx::Shape;
    }
    let Some(Value::Array(items)) = m.get("activeScopeIds") else {
        return Ctx::Shape;
    };
    let mut active = Vec::new();
    for i in items {
        let Value::String(s) = i else { return Ctx::Shape };
        if !active.contains(s) {
            active.push(s.clone());
        }
    }
    let primary = match m.get("primaryScopeId") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Ctx::Shape,
    };
    if active.iter().any(|a| !SCOPES.contains(&a.as_str())) {
        return Ctx::UnknownScope;
    }
    if let Some(p) = &primary {
        if !p.is_empty() && !active.contains(p) {
            return Ctx::PrimaryNotActive;
        }
    }
    Ctx::Ok(active, primary)
}

/// The ids a filter keeps from the snapshot, or the code it must get.
fn expect_list(text: &[u8], snapshot: &Value) -> Result<Option<Vec<Value>>, rcip_result> {
    let v = match parse(text) {
        Ok(v) => v,
        Err(true) => return Err(rcip_result::InvalidJson),
        Err(false) => return Ok(None),
    };
    let Value::Object(m) = v else {
        return Err(rcip_result::InvalidArgument);
    };
    let (mut current, mut available, mut scope, mut effect) = (false, false, String::new(), String::new());
    for (k, v) in &m {
        match (k.as_str(), v) {
            ("context", Value::String(s)) if s == "current" => current = true,
            ("context", Value::String(s)) if s == "all" || s.is_empty() => current = false,
            ("availableOnly", Value::Bool(b)) => available = *b,
            ("scopeId", Value::String(s)) => scope = s.clone(),
            ("effect", Value::String(s)) if ["", "read", "write", "external", "destructive"].contains(&s.as_str()) => {
                effect = s.clone()
            }
            _ => return Err(rcip_result::InvalidArgument),
        }
    }
    let kept = snapshot["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !current || c["relevance"] == "current")
        .filter(|c| !available || c["available"] == true)
        .filter(|c| scope.is_empty() || c["scopeIds"].as_array().unwrap().iter().any(|s| s == scope.as_str()))
        .filter(|c| effect.is_empty() || c["effect"] == effect.as_str())
        .map(|c| c["id"].clone())
        .collect();
    Ok(Some(kept))
}

unsafe fn snapshot(client: *const rcip_client) -> Value {
    let mut snap = ptr::null();
    assert_eq!(rcip_client_snapshot(client, &mut snap), rcip_result::Ok);
    let v = json(&borrowed(rcip_snapshot_json(snap)).unwrap());
    assert_eq!(v["revision"], rcip_snapshot_revision(snap));
    rcip_snapshot_free(snap);
    v
}

fuzz_target!(|data: &[u8]| {
    let (ctx_text, filter_text) = match data.iter().position(|&b| b == 0xff) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, data),
    };
    let ctx_c = cbytes(ctx_text);
    let filter_c = cbytes(filter_text);
    unsafe {
        let mut builder = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog(), &mut builder), rcip_result::Ok);
        assert_eq!(rcip_runtime_builder_set_manual_timers(builder, true), rcip_result::Ok);
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
        let host = rcip_runtime_host(runtime);
        let client = rcip_runtime_client(runtime);
        let mut bindings = Vec::new();
        for (id, avail) in [
            ("items.list", None),
            ("mail.send", Some(unavailable as _)),
            ("misc.any", Some(failing as _)),
            ("items.purge", None),
        ] {
            let id = cstr(id);
            let mut b = ptr::null_mut();
            assert_eq!(
                rcip_host_bind(
                    host,
                    id.as_ptr().cast(),
                    Some(handler),
                    avail,
                    ptr::null_mut(),
                    None,
                    &mut b
                ),
                rcip_result::Ok
            );
            bindings.push(b);
        }
        // Start from a non-empty context, so that "nothing changes" shows.
        assert_eq!(
            rcip_host_set_context(
                host,
                cr#"{"activeScopeIds": ["other"], "primaryScopeId": "other"}"#.as_ptr()
            ),
            rcip_result::Ok
        );
        let notified = AtomicU64::new(0);
        let mut sub = ptr::null_mut();
        assert_eq!(
            rcip_client_subscribe(
                client,
                Some(count),
                &notified as *const _ as *mut c_void,
                None,
                &mut sub
            ),
            rcip_result::Ok
        );

        let before = snapshot(client);
        let rc = rcip_host_set_context(host, ctx_c.as_ptr().cast());
        no_panic(rc, "rcip_host_set_context");
        let after = snapshot(client);
        let expected = expect_context(&ctx_c[..ctx_c.len() - 1]);
        let want = match &expected {
            Ctx::Skip => None,
            Ctx::NotJson => Some(rcip_result::InvalidJson),
            Ctx::Shape => Some(rcip_result::InvalidArgument),
            Ctx::UnknownScope => Some(rcip_result::UnknownScope),
            Ctx::PrimaryNotActive => Some(rcip_result::PrimaryNotActive),
            Ctx::Ok(..) => Some(rcip_result::Ok),
        };
        if let Some(w) = want {
            assert_eq!(rc, w, "set_context code ({expected:?}): {:?}", last_error());
        }
        if rc == rcip_result::Ok {
            assert_eq!(after["revision"], before["revision"].as_u64().unwrap() + 1);
            assert_eq!(notified.load(Ordering::SeqCst), 1, "one notification per refresh");
            if let Ctx::Ok(active, primary) = expected {
                let mut want = json!({"activeScopeIds": active});
                if let Some(p) = primary {
                    want["primaryScopeId"] = json!(p);
                }
                assert_eq!(after["context"], want);
            }
        } else {
            assert!(
                matches!(
                    rc,
                    rcip_result::InvalidJson
                        | rcip_result::InvalidArgument
                        | rcip_result::UnknownScope
                        | rcip_result::PrimaryNotActive
                ),
                "undocumented code {rc:?}"
            );
            assert_eq!(after, before, "on error nothing changes");
            assert_eq!(notified.load(Ordering::SeqCst), 0);
        }

        let mut out = 1 as *mut std::ffi::c_char;
        let rc = rcip_client_list_capabilities(client, filter_c.as_ptr().cast(), &mut out);
        no_panic(rc, "rcip_client_list_capabilities");
        assert_eq!(out.is_null(), rc != rcip_result::Ok);
        match expect_list(&filter_c[..filter_c.len() - 1], &after) {
            Err(code) => assert_eq!(rc, code, "list code: {:?}", last_error()),
            Ok(want) => {
                if want.is_some() {
                    assert_eq!(rc, rcip_result::Ok, "{:?}", last_error());
                }
                if let Some(list) = take(out) {
                    let list = json(&list);
                    let ids: Vec<Value> = list.as_array().unwrap().iter().map(|c| c["id"].clone()).collect();
                    if let Some(want) = want {
                        assert_eq!(ids, want, "the filter keeps exactly the matching capabilities");
                    }
                }
            }
        }
        rcip_subscription_free(sub);
        for b in bindings {
            rcip_binding_free(b);
        }
        rcip_runtime_free(runtime);
    }
});
