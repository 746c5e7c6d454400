//! Capability input text: `rcip_client_invoke` with arbitrary bytes as the
//! input (and, by the first byte's choice, as the handler's output).
//! Input: byte 0 picks the capability (low 3 bits) and the handler's
//! output (bit 3: echo its input copy, else complete with the same fuzz
//! text); the rest is the text.
//!
//! Invariants: the call returns OK and exactly one outcome arrives; text an
//! independent parser accepts (UTF-8, RFC 8259, no BOM, depth at most 1000)
//! is never refused as "not JSON", and text it refuses never passes; text
//! the payload parser keeps as canonical is what serde_json writes for its
//! value; the handler's input copy is serde_json's compact text and a fixed
//! point (invoking again with the copy gives the same copy), and an echoed
//! copy comes back unchanged as the output;
//! nothing stays reserved or pending afterwards.
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use common::*;
use libfuzzer_sys::fuzz_target;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::policy::*;
use rcip_capi::result::rcip_result;
use rcip_capi::runtime::*;
use serde_json::Value;
use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::ptr;

thread_local! {
    static ECHO: RefCell<bool> = const { RefCell::new(true) };
    static OUTPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static SEEN_INPUTS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

unsafe extern "C" fn handler(_: *mut c_void, inv: *mut rcip_invocation) {
    let input = borrowed(rcip_invocation_input(inv)).expect("input copy");
    json(&input);
    SEEN_INPUTS.with(|s| s.borrow_mut().push(input.clone()));
    let rc = if ECHO.with(|e| *e.borrow()) {
        let c = cstr(&input);
        rcip_invocation_complete(inv, c.as_ptr().cast())
    } else {
        let out = OUTPUT.with(|o| o.borrow().clone());
        rcip_invocation_complete(inv, out.as_ptr().cast())
    };
    assert_eq!(rc, rcip_result::Ok, "a payload problem is an outcome, not a code");
    rcip_invocation_free(inv);
}

unsafe extern "C" fn allow(_: *mut c_void, req: *mut rcip_policy_request) {
    assert_eq!(
        rcip_policy_request_decide(req, cr#"{"decision": "allow"}"#.as_ptr()),
        rcip_result::Ok
    );
    rcip_policy_request_free(req);
}

unsafe extern "C" fn keep(ud: *mut c_void, json: *const c_char) {
    (*(ud as *mut Vec<String>)).push(borrowed(json).unwrap());
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// The independent verdict: Some(true) JSON value, Some(false) not, None
/// when the text is too deep to ask serde safely.
fn oracle(text: &[u8]) -> Option<bool> {
    let brackets = text.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if brackets > 2000 {
        return None;
    }
    let Ok(s) = std::str::from_utf8(text) else {
        return Some(false);
    };
    if s.starts_with('\u{feff}') {
        return Some(false);
    }
    let mut de = serde_json::Deserializer::from_str(s);
    de.disable_recursion_limit();
    let v = <Value as serde::Deserialize>::deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    Some(v.is_ok_and(|v| depth(&v) <= 1000))
}

unsafe fn invoke(client: *const rcip_client, cap: &str, text: &[u8]) -> Value {
    let cap = cstr(cap);
    let input = cbytes(text);
    let mut outcomes: Vec<String> = Vec::new();
    let rc = rcip_client_invoke(
        client,
        cap.as_ptr().cast(),
        input.as_ptr().cast(),
        ptr::null(),
        ptr::null(),
        Some(keep),
        &mut outcomes as *mut _ as *mut c_void,
        None,
        ptr::null_mut(),
    );
    no_panic(rc, "rcip_client_invoke");
    assert_eq!(rc, rcip_result::Ok, "invalid input is an outcome, never a code");
    assert_eq!(outcomes.len(), 1, "exactly one outcome: {outcomes:?}");
    json(&outcomes[0])
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let cap = CAPABILITIES[(choice & 7) as usize % CAPABILITIES.len()];
    let echo = choice & 8 == 0;
    let text = &cbytes(rest)[..];
    let text = &text[..text.len() - 1];
    ECHO.with(|e| *e.borrow_mut() = echo);
    OUTPUT.with(|o| *o.borrow_mut() = cbytes(text));
    SEEN_INPUTS.with(|s| s.borrow_mut().clear());
    unsafe {
        let mut builder = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog(), &mut builder), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_set_policy(builder, Some(allow), ptr::null_mut(), None),
            rcip_result::Ok
        );
        assert_eq!(rcip_runtime_builder_set_manual_timers(builder, true), rcip_result::Ok);
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
        let host = rcip_runtime_host(runtime);
        let client = rcip_runtime_client(runtime);
        let mut bindings = Vec::new();
        for id in CAPABILITIES {
            let id = cstr(id);
            let mut b = ptr::null_mut();
            assert_eq!(
                rcip_host_bind(
                    host,
                    id.as_ptr().cast(),
                    Some(handler),
                    None,
                    ptr::null_mut(),
                    None,
                    &mut b
                ),
                rcip_result::Ok
            );
            bindings.push(b);
        }

        // The canonical test on its own: text kept as it is must be what
        // serde_json writes for the parsed value.
        if let Ok(p) = rcip::json::parse_payload(text, &rcip::json::Limits::default()) {
            if let Some(kept) = p.canonical {
                assert_eq!(kept, serde_json::to_string(&p.value).unwrap(), "kept as canonical");
            }
        }
        let outcome = invoke(client, cap, text);
        let code = outcome["error"]["code"].as_str().unwrap_or("");
        let not_json = code == "INPUT_INVALID" && outcome["error"].get("validationIssues").is_none();
        if let Some(is_json) = oracle(text) {
            assert_eq!(
                !not_json, is_json,
                "rcip and the oracle disagree on whether this is JSON: {outcome}"
            );
        }
        let seen = SEEN_INPUTS.with(|s| s.borrow().clone());
        assert!(seen.len() <= 1);
        if let Some(copy) = seen.first() {
            if echo && cap == "misc.any" {
                assert_eq!(outcome["status"], "succeeded", "{outcome}");
                assert_eq!(
                    outcome["output"],
                    json(copy),
                    "an echoed input comes back as the output"
                );
            }
            // The copy is what serde_json writes for it (so a text kept as
            // canonical had no whitespace, escape or duplicate key)...
            assert_eq!(
                copy,
                &serde_json::to_string(&json(copy)).unwrap(),
                "the input copy is serde_json's compact text"
            );
            // ...and a fixed point: invoking with it gives the same copy.
            ECHO.with(|e| *e.borrow_mut() = true);
            let again = invoke(client, cap, copy.as_bytes());
            let seen2 = SEEN_INPUTS.with(|s| s.borrow().clone());
            assert_eq!(seen2.len(), 2, "the copy passes validation again: {again}");
            assert_eq!(&seen2[1], copy, "the input copy is a fixed point");
        }
        let mut stats = ptr::null_mut();
        assert_eq!(rcip_runtime_stats(runtime, &mut stats), rcip_result::Ok);
        let stats = json(&take(stats).unwrap());
        assert_eq!(stats["pendingInvocations"], 0, "{stats}");
        assert_eq!(stats["reservedIds"], 0, "{stats}");
        for b in bindings {
            rcip_capi::binding::rcip_binding_free(b);
        }
        rcip_runtime_free(runtime);
    }
});
