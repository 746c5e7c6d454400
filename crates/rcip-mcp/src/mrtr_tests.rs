//! Confirmations asked statelessly (MCP 2026-07-28 multi round-trip
//! requests): the first call's `InputRequiredResult`, the retry that
//! resumes it on the same or another runtime, and every refusal of a state
//! (docs/MCP.md "Confirmations without sessions").

use super::tests::{catalog, elicit, error_code, harness, modern_params, policy, Harness};
use super::*;
use parking_lot::Mutex;
use rcip::runtime::{
    Binding, ClientReply, Host, HostError, Invocation, Runtime, RuntimeBuilder, DEFAULT_CONFIRMATION_TTL_MS,
};
use serde_json::{json, Map, Value};
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
            // Three bytes fewer, the end (and its canonical padding bits) kept.
            json!(format!("{}{}", &text[..40], &text[44..])),
            json!({"why": "spring"}),
            "bad_signature",
        ),
        (
            json!("!".repeat(state::MAX_TOKEN_CHARS + 1)),
            json!({"why": "spring"}),
            "too_large",
        ),
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
    // The host-approval mode issues no confirmation state and accepts
    // none, also one sealed with its own keys (by an instance that asks).
    let keys = Arc::new(state::StateKeys::generate().unwrap());
    let asking = harness(McpOptions {
        request_state: RequestStateOptions {
            keys: Some(keys.clone()),
            ..RequestStateOptions::default()
        },
        ..options()
    });
    let host = harness(McpOptions {
        eras: Eras::Both,
        request_state: RequestStateOptions {
            keys: Some(keys),
            ..RequestStateOptions::default()
        },
        ..McpOptions::default()
    });
    let r = purge(&host, 1, json!({"why": "spring"}), json!({}));
    assert_eq!(outcome(&r)["status"], "confirmation_required");
    let r = purge(&host, 2, json!({"why": "spring"}), accept(&ask(&asking, 1)));
    assert_eq!(r["error"]["data"]["reason"], "not_asked", "{r}");
    // Another server's state names a key this one does not have.
    let r = purge(&host, 3, json!({"why": "spring"}), accept(&state));
    assert_eq!(r["error"]["data"]["reason"], "unknown_key", "{r}");
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

/// A modern notes.slow call (a deferred handler the test settles) from a
/// client that declared `capabilities`, with `extra` params.
fn slow(h: &Harness, id: i64, capabilities: Value, extra: Value) -> Invocation {
    let mut p = modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({}));
    p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            p[k] = v;
        }
    }
    h.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": p}));
    h.slow.lock().pop().expect("the handler runs")
}

/// `inv.ask(..)`'s reply, waited for.
fn asked(inv: &Invocation, key: Option<&str>, method: &str, params: Value) -> ClientReply {
    let (tx, rx) = std::sync::mpsc::channel();
    inv.ask(key, method, &params, Box::new(move |r| tx.send(r).unwrap()))
        .unwrap();
    rx.recv_timeout(std::time::Duration::from_secs(10)).expect("answered")
}

fn name_question() -> Value {
    json!({"message": "Your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}})
}

fn sampling_question() -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}], "maxTokens": 10})
}

/// The one response the test's last settle sent.
fn response(h: &Harness) -> Value {
    let sent = h.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].get("method").is_none(), "no server-to-client request: {sent:?}");
    sent[0].clone()
}

const ALL: fn() -> Value = || json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}});

#[test]
fn handler_questions_travel_as_input_requests_and_the_rerun_finds_every_answer() {
    let h = harness(options());
    // Round 1: nothing answered. The handler hears `cancelled` (it runs
    // again later), its outcome is set aside, the client is asked.
    let inv = slow(&h, 1, ALL(), json!({}));
    assert!(inv.can_ask("elicitation/create") && inv.can_ask("sampling/createMessage") && inv.can_ask("roots/list"));
    assert!(!inv.can_ask("tools/call"));
    assert_eq!(
        asked(&inv, Some("name"), "elicitation/create", name_question()),
        ClientReply::Cancelled
    );
    assert_eq!(
        asked(&inv, Some("roots"), "roots/list", json!({})),
        ClientReply::Cancelled
    );
    inv.complete(json!({"ignored": true})).unwrap();
    let r = response(&h);
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    assert_eq!(
        result["inputRequests"],
        json!({
            "name": {"method": "elicitation/create", "params": {"mode": "form", "message": "Your name?",
                     "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}},
            "roots": {"method": "roots/list", "params": {}}
        })
    );
    assert!(result.get("structuredContent").is_none() && result.get("content").is_none());
    assert!(result["_meta"][META_SERVER_INFO].is_object());
    let state1 = result["requestState"].clone();

    // Round 2: both answered (one more key the server never asked for);
    // the handler asks a third, unkeyed question.
    let accept = json!({"action": "accept", "content": {"name": "Ada"}});
    let roots = json!({"roots": [{"uri": "file:///home/ada", "name": "home"}]});
    let inv = slow(
        &h,
        2,
        ALL(),
        json!({"requestState": state1, "inputResponses": {"name": accept, "roots": roots, "extra": 1}}),
    );
    assert_eq!(
        asked(&inv, Some("name"), "elicitation/create", name_question()),
        ClientReply::Result(accept.clone())
    );
    assert_eq!(
        asked(&inv, Some("roots"), "roots/list", json!({})),
        ClientReply::Result(roots.clone())
    );
    assert_eq!(
        asked(&inv, None, "sampling/createMessage", sampling_question()),
        ClientReply::Cancelled
    );
    inv.complete(json!({})).unwrap();
    let r = response(&h);
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert_eq!(
        r["result"]["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["rcip/ask/1"]
    );
    assert_eq!(
        r["result"]["inputRequests"]["rcip/ask/1"]["params"],
        sampling_question()
    );
    let state2 = r["result"]["requestState"].clone();

    // Round 3: only the newest answer is sent; the earlier ones come from
    // the state. The call completes with the handler's own result.
    let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"});
    let inv = slow(
        &h,
        3,
        ALL(),
        json!({"requestState": state2, "inputResponses": {"rcip/ask/1": sampled}}),
    );
    assert_eq!(
        asked(&inv, Some("name"), "elicitation/create", name_question()),
        ClientReply::Result(accept)
    );
    assert_eq!(
        asked(&inv, Some("roots"), "roots/list", json!({})),
        ClientReply::Result(roots)
    );
    assert_eq!(
        asked(&inv, None, "sampling/createMessage", sampling_question()),
        ClientReply::Result(sampled)
    );
    inv.complete(json!({"ok": true})).unwrap();
    let r = response(&h);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["structuredContent"], json!({"ok": true}));
    let counts: std::collections::HashMap<_, _> = h.session.request_state_counters().snapshot().into_iter().collect();
    assert_eq!((counts["sealed"], counts["opened"]), (2, 2));
}

#[test]
fn answers_without_a_state_are_used_and_malformed_ones_are_asked_again() {
    let h = harness(options());
    // No requestState: the answers are the client's word, as any answer is.
    let accept = json!({"action": "accept", "content": {"name": "Ada"}});
    let inv = slow(
        &h,
        1,
        ALL(),
        json!({"inputResponses": {"name": accept, "other": {"x": 1}}}),
    );
    assert_eq!(
        asked(&inv, Some("name"), "elicitation/create", name_question()),
        ClientReply::Result(accept)
    );
    inv.complete(json!({"ok": true})).unwrap();
    assert_eq!(response(&h)["result"]["resultType"], "complete");
    // Not an answer of the question's shape: asked again.
    for (i, bad) in [
        json!(12345),
        json!({"action": "maybe"}),
        json!({"action": "accept", "content": 3}),
    ]
    .into_iter()
    .enumerate()
    {
        let inv = slow(&h, 10 + i as i64, ALL(), json!({"inputResponses": {"name": bad}}));
        assert_eq!(
            asked(&inv, Some("name"), "elicitation/create", name_question()),
            ClientReply::Cancelled
        );
        inv.complete(json!({})).unwrap();
        let r = response(&h);
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        assert!(r["result"]["inputRequests"]["name"].is_object());
    }
    let inv = slow(
        &h,
        20,
        ALL(),
        json!({"inputResponses": {"rcip/ask/1": {"role": "user"}}}),
    );
    assert_eq!(
        asked(&inv, None, "sampling/createMessage", sampling_question()),
        ClientReply::Cancelled
    );
    inv.complete(json!({})).unwrap();
    assert_eq!(response(&h)["result"]["resultType"], "input_required");
    // inputResponses that are not a map: a protocol error, nothing runs.
    for (i, bad) in [json!(null), json!([]), json!("x")].into_iter().enumerate() {
        let mut p = modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({}));
        p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = ALL();
        p["inputResponses"] = bad;
        let r = h.request(json!(30 + i), "tools/call", p);
        assert_eq!(error_code(&r), INVALID_PARAMS, "{r}");
    }
    assert!(h.slow.lock().is_empty());
}

#[test]
fn a_bad_question_is_refused_and_an_undeclared_one_wins_over_the_rest() {
    let h = harness(options());
    let inv = slow(&h, 1, json!({"elicitation": {"form": {}}}), json!({}));
    let refuse = |key: Option<&str>, method: &str, params: Value| {
        inv.ask(
            key,
            method,
            &params,
            Box::new(|_| panic!("a refused question is never answered")),
        )
    };
    assert!(matches!(
        refuse(Some("rcip/confirmation"), "elicitation/create", name_question()),
        Err(HostError::InvalidArgument(_))
    ));
    assert!(matches!(
        refuse(Some(""), "elicitation/create", name_question()),
        Err(HostError::InvalidArgument(_))
    ));
    assert!(matches!(
        refuse(Some(&"k".repeat(129)), "elicitation/create", name_question()),
        Err(HostError::InvalidArgument(_))
    ));
    assert!(matches!(
        refuse(Some("x"), "tools/list", json!({})),
        Err(HostError::InvalidArgument(_))
    ));
    assert!(matches!(
        refuse(Some("x"), "elicitation/create", json!({"message": "m"})),
        Err(HostError::InvalidArgument(_))
    ));
    assert_eq!(
        asked(&inv, Some("name"), "elicitation/create", name_question()),
        ClientReply::Cancelled
    );
    assert!(
        matches!(
            refuse(Some("name"), "elicitation/create", name_question()),
            Err(HostError::InvalidArgument(_))
        ),
        "asked twice"
    );
    // Sampling was not declared: refused, and the response is -32021
    // naming it even though another question is open.
    assert!(!inv.can_ask("sampling/createMessage"));
    assert!(matches!(
        refuse(None, "sampling/createMessage", sampling_question()),
        Err(HostError::Unsupported(_))
    ));
    inv.complete(json!({})).unwrap();
    let r = response(&h);
    assert_eq!(error_code(&r), -32021, "{r}");
    assert_eq!(r["error"]["data"], json!({"requiredCapabilities": {"sampling": {}}}));
    // A session (2025) client is sent the request itself, roots included.
    let legacy = harness(options());
    legacy.init(json!({"roots": {}}));
    legacy.take();
    legacy.send(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "notes.slow", "arguments": {}}}),
    );
    let inv = legacy.slow.lock().pop().unwrap();
    assert!(inv.can_ask("roots/list") && !inv.can_ask("sampling/createMessage"));
    let (tx, rx) = std::sync::mpsc::channel();
    inv.ask(
        Some("ignored"),
        "roots/list",
        &json!({}),
        Box::new(move |r| tx.send(r).unwrap()),
    )
    .unwrap();
    let sent = legacy.take();
    assert_eq!(sent[0]["method"], "roots/list", "{sent:?}");
    legacy.send(json!({"jsonrpc": "2.0", "id": sent[0]["id"], "result": {"roots": []}}));
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(),
        ClientReply::Result(json!({"roots": []}))
    );
    inv.complete(json!({})).unwrap();
}

#[test]
fn answer_states_are_bound_protected_and_expire() {
    let keys = Arc::new(state::StateKeys::generate().unwrap());
    let h = harness(McpOptions {
        request_state: RequestStateOptions {
            keys: Some(keys.clone()),
            ..RequestStateOptions::default()
        },
        ..options()
    });
    let inv = slow(&h, 1, ALL(), json!({}));
    asked(&inv, Some("name"), "elicitation/create", name_question());
    inv.complete(json!({})).unwrap();
    let state = response(&h)["result"]["requestState"].as_str().unwrap().to_string();
    let retry = |id: i64, token: Value| {
        let mut p = modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({}));
        p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = ALL();
        p["requestState"] = token;
        p["inputResponses"] = json!({"name": {"action": "decline"}});
        h.request(json!(id), "tools/call", p)
    };
    let digest = state::request_digest("notes.slow", &json!({}));
    let sealed = |principal: Option<&str>, digest: [u8; 32], expires_at_ms: i64| {
        json!(state::seal_answers(
            &keys,
            &state::AnswersState {
                principal: principal.map(str::to_string),
                method: "tools/call".into(),
                request_digest: digest,
                expires_at_ms,
                answers: Map::new(),
            }
        ))
    };
    let later = session::wall_ms() + 60_000;
    let cases = [
        (
            json!(format!(
                "{}{}{}",
                &state[..40],
                if &state[40..41] == "Q" { "R" } else { "Q" },
                &state[41..]
            )),
            "bad_signature",
        ),
        // Three bytes fewer, the end (and its canonical padding bits) kept.
        (json!(format!("{}{}", &state[..40], &state[44..])), "bad_signature"),
        (sealed(Some("mallory"), digest, later), "wrong_principal"),
        (
            sealed(None, state::request_digest("notes.list", &json!({})), later),
            "wrong_request",
        ),
        (sealed(None, digest, session::wall_ms() - 1), "expired"),
    ];
    for (i, (token, reason)) in cases.into_iter().enumerate() {
        let r = retry(10 + i as i64, token);
        assert_eq!(error_code(&r), INVALID_PARAMS, "{reason}: {r}");
        assert_eq!(r["error"]["data"]["reason"], reason, "{r}");
    }
    assert!(h.slow.lock().is_empty(), "a refused state runs nothing");
    let counts: std::collections::HashMap<_, _> = h.session.request_state_counters().snapshot().into_iter().collect();
    assert_eq!(counts["expired"], 1);
    // The genuine state, also twice (answers approve nothing: not single use).
    for id in [20, 21] {
        let mut p = modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({}));
        p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = ALL();
        p["requestState"] = json!(state);
        p["inputResponses"] = json!({"name": {"action": "decline"}});
        h.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": p}));
        let inv = h.slow.lock().pop().unwrap();
        assert_eq!(
            asked(&inv, Some("name"), "elicitation/create", name_question()),
            ClientReply::Result(json!({"action": "decline"}))
        );
        inv.complete(json!({})).unwrap();
        assert_eq!(response(&h)["result"]["resultType"], "complete");
    }
}

#[test]
fn answers_too_large_to_carry_are_the_clients_error() {
    let h = harness(options());
    let big = json!({"action": "accept", "content": {"name": "x".repeat(state::MAX_TOKEN_CHARS)}});
    let inv = slow(&h, 1, ALL(), json!({"inputResponses": {"name": big}}));
    assert!(matches!(
        asked(&inv, Some("name"), "elicitation/create", name_question()),
        ClientReply::Result(_)
    ));
    // A second question without an answer needs a state carrying the first.
    assert_eq!(
        asked(&inv, Some("more"), "roots/list", json!({})),
        ClientReply::Cancelled
    );
    inv.complete(json!({})).unwrap();
    let r = response(&h);
    assert_eq!(error_code(&r), INVALID_PARAMS, "{r}");
    assert_eq!(r["error"]["data"]["reason"], "answers_too_large");
}
