//! Confirmations asked statelessly (MCP 2026-07-28 multi round-trip
//! requests): the first call's `InputRequiredResult`, the retry that
//! resumes it on the same or another runtime, and every refusal of a state
//! (docs/MCP.md "Confirmations without sessions").

use super::tests::{catalog, elicit, error_code, harness, modern_params, policy, Harness};
use super::*;
use parking_lot::Mutex;
use rcip::runtime::{Binding, Host, Invocation, Runtime, RuntimeBuilder, DEFAULT_CONFIRMATION_TTL_MS};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

const KEY: &str = "rcip/confirmation";

fn options() -> McpOptions {
    McpOptions {
        eras: Eras::Both,
        ..elicit()
    }
}

/// A modern `tools/call` of notes.purge from a client that declared form
/// elicitation, with `extra` params (a retry's state and answers).
fn purge(h: &Harness, id: i64, arguments: Value, extra: Value) -> Value {
    let mut p = modern_params(json!({"name": "notes.purge", "arguments": arguments}), json!({}));
    p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            p[k] = v;
        }
    }
    h.request(json!(id), "tools/call", p)
}

fn accept(state: &Value) -> Value {
    json!({"requestState": state, "inputResponses": {KEY: {"action": "accept", "content": {}}}})
}

/// The first round: the `InputRequiredResult` and its state.
fn ask(h: &Harness, id: i64) -> Value {
    let r = purge(h, id, json!({"why": "spring"}), json!({}));
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), [KEY]);
    assert_eq!(requests[KEY]["method"], "elicitation/create");
    assert_eq!(requests[KEY]["params"]["mode"], "form");
    let message = requests[KEY]["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("Purge notes") && message.contains("{\"why\":\"spring\"}"),
        "{message}"
    );
    assert!(result["_meta"][META_SERVER_INFO].is_object(), "the server's identity");
    assert!(result.get("isError").is_none() && result.get("content").is_none());
    assert!(
        h.take().iter().all(|m| m.get("method").is_none()),
        "no server-to-client request"
    );
    assert!(!h.purged.load(Ordering::SeqCst));
    result["requestState"].clone()
}

fn outcome(r: &Value) -> &Value {
    &r["result"]["_meta"]["rcip/outcome"]
}

#[test]
fn an_accepted_answer_runs_the_confirmed_call_once() {
    let h = harness(options());
    let state = ask(&h, 1);
    assert!(state.as_str().unwrap().len() <= state::MAX_TOKEN_CHARS);
    let r = purge(&h, 2, json!({"why": "spring"}), accept(&state));
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(outcome(&r)["status"], "succeeded", "{r}");
    assert!(h.purged.load(Ordering::SeqCst));
    // Replayed: the store knows it; the runtime answers the ended
    // confirmation's receipt and nothing runs again.
    h.purged.store(false, Ordering::SeqCst);
    let again = purge(&h, 3, json!({"why": "spring"}), accept(&state));
    assert!(again.get("result").is_some(), "{again}");
    assert!(
        !h.purged.load(Ordering::SeqCst),
        "a replay never runs the handler: {again}"
    );
    let counts: std::collections::HashMap<_, _> = h.session.request_state_counters().snapshot().into_iter().collect();
    assert_eq!(counts["sealed"], 1);
    assert_eq!(counts["opened"], 2);
}

#[test]
fn a_declined_or_cancelled_answer_denies_and_is_single_use_too() {
    for action in ["decline", "cancel"] {
        let h = harness(options());
        let state = ask(&h, 1);
        let answer = json!({"requestState": state, "inputResponses": {KEY: {"action": action}}});
        let r = purge(&h, 2, json!({"why": "spring"}), answer);
        assert_eq!(outcome(&r)["status"], "denied", "{r}");
        assert_eq!(outcome(&r)["error"]["code"], "CONFIRMATION_DECLINED");
        // The same state, now claiming an approval: refused as used.
        let r = purge(&h, 3, json!({"why": "spring"}), accept(&state));
        assert_ne!(outcome(&r)["status"], "succeeded", "{r}");
        assert!(!h.purged.load(Ordering::SeqCst), "{action}");
    }
}

#[test]
fn tampered_retargeted_or_foreign_states_are_refused_with_their_reason() {
    let h = harness(options());
    let state = ask(&h, 1);
    let text = state.as_str().unwrap();
    let mut flipped = text.to_string().into_bytes();
    flipped[30] = if flipped[30] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    let other_keys = {
        let o = harness(options());
        ask(&o, 1)
    };
    let cases = [
        (json!(flipped), json!({"why": "spring"}), "bad_signature"),
        (
            json!(&text[..text.len() - 4]),
            json!({"why": "spring"}),
            "bad_signature",
        ),
        (json!("!".repeat(5000)), json!({"why": "spring"}), "too_large"),
        (json!("not base64 at all!"), json!({"why": "spring"}), "malformed"),
        (state.clone(), json!({"why": "autumn"}), "wrong_request"),
        (other_keys, json!({"why": "spring"}), "unknown_key"),
    ];
    for (i, (request_state, arguments, reason)) in cases.into_iter().enumerate() {
        let r = purge(&h, 10 + i as i64, arguments, accept(&request_state));
        assert_eq!(error_code(&r), INVALID_PARAMS, "{reason}: {r}");
        assert_eq!(r["error"]["data"]["reason"], reason, "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("requestState refused"));
    }
    // Another principal: refused, also for a principal-less state.
    h.session.set_principal(Some("mallory".into()));
    let r = purge(&h, 20, json!({"why": "spring"}), accept(&state));
    assert_eq!(r["error"]["data"]["reason"], "wrong_principal", "{r}");
    h.session.set_principal(None);
    // The wrong types are protocol errors too.
    let r = purge(&h, 21, json!({"why": "spring"}), json!({"requestState": 7}));
    assert_eq!(error_code(&r), INVALID_PARAMS);
    let r = purge(
        &h,
        22,
        json!({"why": "spring"}),
        json!({"requestState": state, "inputResponses": []}),
    );
    assert_eq!(error_code(&r), INVALID_PARAMS);
    let r = purge(
        &h,
        23,
        json!({"why": "spring"}),
        json!({"requestState": state, "inputResponses": {KEY: {"action": "maybe"}}}),
    );
    assert_eq!(r["error"]["data"]["reason"], "malformed_response", "{r}");
    assert!(!h.purged.load(Ordering::SeqCst));
    let counts: std::collections::HashMap<_, _> = h.session.request_state_counters().snapshot().into_iter().collect();
    assert_eq!(counts["bad_signature"], 2);
    assert_eq!(counts["wrong_principal"], 1);
    // The untouched state still approves: no refusal consumed it.
    let r = purge(&h, 30, json!({"why": "spring"}), accept(&state));
    assert_eq!(outcome(&r)["status"], "succeeded", "{r}");
}

#[test]
fn a_retry_without_the_answer_asks_again_and_no_elicitation_is_not_asked() {
    let h = harness(options());
    let state = ask(&h, 1);
    let r = purge(
        &h,
        2,
        json!({"why": "spring"}),
        json!({"requestState": state, "inputResponses": {}}),
    );
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert_ne!(r["result"]["requestState"], state, "a new question, a new state");
    // A request that did not declare elicitation: the ordinary result.
    let p = modern_params(json!({"name": "notes.purge", "arguments": {}}), json!({}));
    let r = h.request(json!(3), "tools/call", p);
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(outcome(&r)["status"], "confirmation_required");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("did not declare form elicitation"), "{text}");
    // The host-approval mode issues no state and accepts none.
    let host = harness(McpOptions {
        eras: Eras::Both,
        ..McpOptions::default()
    });
    let r = purge(&host, 1, json!({"why": "spring"}), json!({}));
    assert_eq!(outcome(&r)["status"], "confirmation_required");
    let r = purge(&host, 2, json!({"why": "spring"}), accept(&state));
    assert_eq!(r["error"]["data"]["reason"], "not_asked", "{r}");
}

/// Runtimes built per request over the test catalog, with a clock the test
/// moves, each with its own purge handler (counted across all of them).
struct Fleet {
    now: Arc<AtomicI64>,
    purges: Arc<AtomicUsize>,
    /// Each request's runtime (its host surface) and binding.
    built: Arc<Mutex<Vec<(Host, Binding)>>>,
}

fn fleet(h: &Harness) -> Fleet {
    let now = Arc::new(AtomicI64::new(1_900_000_000_000));
    let purges = Arc::new(AtomicUsize::new(0));
    let built = Arc::new(Mutex::new(Vec::new()));
    let (n, p, b) = (now.clone(), purges.clone(), built.clone());
    let factory = move |_: &RequestSetup<'_>| -> Result<Runtime, String> {
        let mut builder = RuntimeBuilder::new(&catalog());
        builder.policy(Arc::new(policy));
        builder.manual_timers(true);
        let clock = n.clone();
        builder.clock(Arc::new(move || clock.load(Ordering::SeqCst)));
        let runtime = builder.build();
        let count = p.clone();
        let binding = runtime
            .host()
            .bind(
                "notes.purge",
                Arc::new(move |inv: Invocation| {
                    count.fetch_add(1, Ordering::SeqCst);
                    inv.complete(json!({"purged": true})).unwrap()
                }),
                None,
            )
            .unwrap();
        b.lock().push((runtime.host(), binding));
        Ok(runtime)
    };
    h.session.set_request_runtimes(Arc::new(factory));
    Fleet { now, purges, built }
}

#[test]
fn the_retry_resumes_the_confirmation_in_another_runtime() {
    let h = harness(options());
    let f = fleet(&h);
    let state = ask(&h, 1);
    assert!(
        f.built.lock()[0].0.is_closed(),
        "the first runtime ended with its response"
    );
    f.now.fetch_add(1_000, Ordering::SeqCst);
    let r = purge(&h, 2, json!({"why": "spring"}), accept(&state));
    assert_eq!(outcome(&r)["status"], "succeeded", "{r}");
    assert_eq!(f.purges.load(Ordering::SeqCst), 1);
    assert_eq!(f.built.lock().len(), 2);
    // Replayed on a third runtime: it has no such confirmation.
    let r = purge(&h, 3, json!({"why": "spring"}), accept(&state));
    assert_eq!(outcome(&r)["status"], "failed", "{r}");
    assert_eq!(outcome(&r)["error"]["code"], "CONFIRMATION_NOT_FOUND");
    assert_eq!(f.purges.load(Ordering::SeqCst), 1);
}

#[test]
fn a_retry_at_the_expiry_is_the_runtimes_confirmation_expired() {
    let h = harness(options());
    let f = fleet(&h);
    let first = purge(&h, 1, json!({}), json!({}));
    let state = first["result"]["requestState"].clone();
    assert!(state.is_string(), "{first}");
    let opened = f.now.load(Ordering::SeqCst);
    // At expiresAt exactly: expired (PIPELINE.md section 5).
    f.now
        .store(opened + DEFAULT_CONFIRMATION_TTL_MS as i64, Ordering::SeqCst);
    let r = purge(&h, 2, json!({}), accept(&state));
    assert_eq!(outcome(&r)["status"], "failed", "{r}");
    assert_eq!(outcome(&r)["error"]["code"], "CONFIRMATION_EXPIRED");
    assert_eq!(f.purges.load(Ordering::SeqCst), 0);
}

#[test]
fn request_state_keys_come_from_the_json_options_and_rotate() {
    use base64::Engine;
    let b64 = |k: &[u8]| base64::engine::general_purpose::STANDARD.encode(k);
    let (old, new) = ([7u8; 32], [9u8; 32]);
    let first =
        McpOptions::from_value(&json!({"eras": "both", "confirmation": "elicit", "requestStateKeys": [b64(&old)]}))
            .unwrap();
    let h = harness(first);
    let state = ask(&h, 1);
    // The next instance signs with a new key and still verifies the old.
    let rotated = McpOptions::from_value(
        &json!({"eras": "both", "confirmation": "elicit", "requestStateKeys": [b64(&new), b64(&old)]}),
    )
    .unwrap();
    let fresh = harness(rotated);
    let r = purge(&fresh, 2, json!({"why": "spring"}), accept(&state));
    assert_eq!(outcome(&r)["status"], "succeeded", "{r}");
    // Without the old key it is unknown.
    let dropped = harness(
        McpOptions::from_value(&json!({"eras": "both", "confirmation": "elicit", "requestStateKeys": [b64(&new)]}))
            .unwrap(),
    );
    let r = purge(&dropped, 3, json!({"why": "spring"}), accept(&state));
    assert_eq!(r["error"]["data"]["reason"], "unknown_key", "{r}");
    for bad in [json!([]), json!(["c2hvcnQ="]), json!("key"), json!([7])] {
        let e = McpOptions::from_value(&json!({"requestStateKeys": bad})).unwrap_err();
        assert!(e.starts_with("/requestStateKeys"), "{e}");
        assert!(!e.contains("c2hvcnQ"), "no key material in errors: {e}");
    }
}
