//! Policy decision JSON: a host policy answers with arbitrary text through
//! `rcip_policy_request_decide`, inline or after its callback returned.
//! Input: byte 0 picks the capability (low 3 bits) and inline/deferred
//! (bit 3); the rest is the decision text.
//!
//! Invariants, from the header's `rcip_policy_request_decide`: text that is
//! not JSON gives INVALID_JSON and a wrong-shape envelope INVALID_ARGUMENT,
//! both leaving the request undecided (freeing it then fails the policy);
//! a `decision` that is none of allow/deny/confirm gives INVALID_ARGUMENT
//! and settles as POLICY_EVALUATION_FAILED (a second decide answers
//! ALREADY_COMPLETED); a good decision gives OK and its outcome (a deny
//! reason is the message, a confirm reason the description). Exactly one
//! outcome either way.
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
    static DECISION: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static INLINE: RefCell<bool> = const { RefCell::new(true) };
    static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    static RESULTS: RefCell<Vec<rcip_result>> = const { RefCell::new(Vec::new()) };
}

unsafe extern "C" fn handler(_: *mut c_void, inv: *mut rcip_invocation) {
    let out = if borrowed(rcip_invocation_capability_id(inv)).unwrap() == "items.write" {
        c"{\"ok\": true}"
    } else {
        c"{}"
    };
    assert_eq!(rcip_invocation_complete(inv, out.as_ptr()), rcip_result::Ok);
    rcip_invocation_free(inv);
}

unsafe fn decide(req: *mut rcip_policy_request) {
    let text = DECISION.with(|d| d.borrow().clone());
    let rc = rcip_policy_request_decide(req, text.as_ptr().cast());
    no_panic(rc, "rcip_policy_request_decide");
    RESULTS.with(|r| r.borrow_mut().push(rc));
    if rc == rcip_result::InvalidArgument || rc == rcip_result::Ok {
        // Settled or not, a second decide of a good decision either
        // succeeds (the first left it undecided) or is ALREADY_COMPLETED.
    }
    let again = rcip_policy_request_decide(req, cr#"{"decision": "allow"}"#.as_ptr());
    RESULTS.with(|r| r.borrow_mut().push(again));
    rcip_policy_request_free(req);
}

unsafe extern "C" fn policy(_: *mut c_void, req: *mut rcip_policy_request) {
    let ctx = json(&borrowed(rcip_policy_request_context(req)).unwrap());
    assert_eq!(ctx["phase"], "invoke");
    if INLINE.with(|i| *i.borrow()) {
        decide(req);
    } else {
        HELD.with(|h| h.borrow_mut().push(req as usize));
    }
}

unsafe extern "C" fn keep(ud: *mut c_void, json: *const c_char) {
    (*(ud as *mut Vec<String>)).push(borrowed(json).unwrap());
}

enum Expect {
    Skip,
    NotJson,
    WrongShape,
    Unknown,
    Allow,
    Deny(Option<String>),
    Confirm(Option<String>),
}

fn expect(text: &[u8]) -> Expect {
    let Ok(s) = std::str::from_utf8(text) else {
        return Expect::NotJson;
    };
    if s.starts_with('\u{feff}') {
        return Expect::NotJson;
    }
    if text.iter().filter(|&&b| b == b'[' || b == b'{').count() > 100 {
        // Deeper than serde's default limit (rcip's is 1000): no oracle.
        return Expect::Skip;
    }
    let Ok(v) = serde_json::from_str::<Value>(s) else {
        return Expect::NotJson;
    };
    let Value::Object(m) = v else { return Expect::WrongShape };
    if m.keys().any(|k| k != "decision" && k != "reason") {
        return Expect::WrongShape;
    }
    let reason = match m.get("reason") {
        None => None,
        Some(Value::String(r)) => Some(r.clone()),
        Some(_) => return Expect::WrongShape,
    };
    match m.get("decision") {
        None => Expect::WrongShape,
        Some(Value::String(d)) if d == "allow" => Expect::Allow,
        Some(Value::String(d)) if d == "deny" => Expect::Deny(reason),
        Some(Value::String(d)) if d == "confirm" => Expect::Confirm(reason),
        Some(_) => Expect::Unknown,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let cap = CAPABILITIES[(choice & 7) as usize % CAPABILITIES.len()];
    let inline = choice & 8 == 0;
    let text = cbytes(rest);
    let expected = expect(&text[..text.len() - 1]);
    DECISION.with(|d| *d.borrow_mut() = text.clone());
    INLINE.with(|i| *i.borrow_mut() = inline);
    RESULTS.with(|r| r.borrow_mut().clear());
    unsafe {
        let mut builder = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog(), &mut builder), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_set_policy(builder, Some(policy), ptr::null_mut(), None),
            rcip_result::Ok
        );
        assert_eq!(rcip_runtime_builder_set_manual_timers(builder, true), rcip_result::Ok);
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
        let host = rcip_runtime_host(runtime);
        let client = rcip_runtime_client(runtime);
        let id = cstr(cap);
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
        let input = if cap == "items.write" {
            c"{\"id\": \"x\"}"
        } else if cap == "mail.send" {
            c"{\"to\": \"x\"}"
        } else {
            c"{}"
        };
        let mut outcomes: Vec<String> = Vec::new();
        let rc = rcip_client_invoke(
            client,
            id.as_ptr().cast(),
            input.as_ptr(),
            ptr::null(),
            ptr::null(),
            Some(keep),
            &mut outcomes as *mut _ as *mut c_void,
            None,
            ptr::null_mut(),
        );
        assert_eq!(rc, rcip_result::Ok);
        if !inline {
            assert!(outcomes.is_empty(), "the outcome waits for the policy");
            let held = HELD.with(|h| std::mem::take(&mut *h.borrow_mut()));
            assert_eq!(held.len(), 1);
            decide(held[0] as *mut rcip_policy_request);
        }
        assert_eq!(outcomes.len(), 1, "exactly one outcome: {outcomes:?}");
        let o = json(&outcomes[0]);
        let results = RESULTS.with(|r| r.borrow().clone());
        assert_eq!(results.len(), 2);
        let code = o["error"]["code"].as_str().unwrap_or("");
        match expected {
            Expect::NotJson => {
                assert_eq!(results[0], rcip_result::InvalidJson);
                // Undecided: the second (good) decide goes through.
                assert_eq!(results[1], rcip_result::Ok);
            }
            Expect::Skip => {}
            Expect::WrongShape => {
                assert_eq!(results[0], rcip_result::InvalidArgument, "{o}");
                assert_eq!(
                    results[1],
                    rcip_result::Ok,
                    "a wrong shape leaves the request undecided"
                );
            }
            Expect::Unknown => {
                assert_eq!(results[0], rcip_result::InvalidArgument);
                assert_eq!(
                    results[1],
                    rcip_result::AlreadyCompleted,
                    "an unknown decision settles the request"
                );
                assert_eq!(code, "POLICY_EVALUATION_FAILED", "{o}");
            }
            Expect::Allow => {
                assert_eq!(results, [rcip_result::Ok, rcip_result::AlreadyCompleted]);
                assert_eq!(o["status"], "succeeded", "{o}");
            }
            Expect::Deny(reason) => {
                assert_eq!(results, [rcip_result::Ok, rcip_result::AlreadyCompleted]);
                assert_eq!(o["status"], "denied", "{o}");
                assert_eq!(code, "POLICY_DENIED");
                if let Some(r) = reason {
                    assert_eq!(o["error"]["message"], r.as_str(), "a deny reason is the message");
                }
            }
            Expect::Confirm(reason) => {
                assert_eq!(results, [rcip_result::Ok, rcip_result::AlreadyCompleted]);
                assert_eq!(o["status"], "confirmation_required", "{o}");
                if let Some(r) = reason {
                    assert_eq!(
                        o["confirmation"]["description"],
                        r.as_str(),
                        "a confirm reason is the description"
                    );
                }
            }
        }
        rcip_capi::binding::rcip_binding_free(b);
        rcip_runtime_free(runtime);
    }
});
