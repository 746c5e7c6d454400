//! Tests of the `requestState` seal (src/state.rs): the format, each
//! check of `open` and its order, the keys, the counters and the memory
//! store.

use std::sync::{Arc, Barrier};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::state::{
    open, request_digest, seal, ConfirmationState, ConfirmationStore, Consumed, MemoryConfirmationStore, StateCounters,
    StateError, StateKeys, StoreError, MAX_TOKEN_CHARS,
};

const KEY_A: [u8; 32] = [0xA5; 32];
const KEY_B: [u8; 32] = *b"0123456789abcdef0123456789ABCDEF";

fn keys_a() -> StateKeys {
    StateKeys::new(&KEY_A).unwrap()
}

fn digest() -> [u8; 32] {
    request_digest("transfer", &json!({"amount": 10, "to": "bob"}))
}

fn state() -> ConfirmationState {
    ConfirmationState::new("tools/call", digest(), "c-1", "i-1", "transfer", 1_700_000_060_000)
        .unwrap()
        .with_principal(Some("alice".into()))
        .with_context(json!({"tenant": "t1", "roles": ["payer"]}))
}

fn open_alice(keys: &StateKeys, token: &str) -> Result<ConfirmationState, StateError> {
    open(keys, token, Some("alice"), "tools/call", &digest())
}

/// The key id as the module docs define it, computed independently.
fn key_id(key: &[u8]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(b"rcip-request-state-key-id");
    h.update(key);
    h.finalize()[..4].try_into().unwrap()
}

/// A token around any payload, correctly signed with `key`: version ||
/// key id || payload || HMAC-SHA-256.
fn sign_raw(key: &[u8], payload: &[u8]) -> String {
    let mut out = vec![1u8];
    out.extend_from_slice(&key_id(key));
    out.extend_from_slice(payload);
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(&out);
    out.extend_from_slice(&mac.finalize().into_bytes());
    URL_SAFE_NO_PAD.encode(out)
}

/// The payload JSON of the test state, as an object to edit.
fn payload_of(s: &ConfirmationState) -> serde_json::Map<String, Value> {
    let raw = URL_SAFE_NO_PAD.decode(seal(&keys_a(), s)).unwrap();
    let payload = &raw[5..raw.len() - 32];
    match serde_json::from_slice(payload).unwrap() {
        Value::Object(m) => m,
        other => panic!("payload is not an object: {other}"),
    }
}

#[test]
fn state_round_trip() {
    let s = state();
    let token = seal(&keys_a(), &s);
    assert!(
        !token.contains('=') && !token.contains('+') && !token.contains('/'),
        "URL-safe, no padding: {token}"
    );
    assert_eq!(open_alice(&keys_a(), &token), Ok(s.clone()));
    // The format: version 1, the key id, the JSON payload, a 32-byte tag.
    let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
    assert_eq!(raw[0], 1);
    assert_eq!(raw[1..5], key_id(&KEY_A));
    assert_eq!(keys_a().current_key_id(), key_id(&KEY_A));
    let m = payload_of(&s);
    assert_eq!(m["principal"], "alice");
    assert_eq!(m["expiresAtMs"], 1_700_000_060_000i64);
    assert_eq!(m["context"], s.context);
    // Anonymous states round-trip too, and nonces are fresh.
    let anon = state().with_principal(None);
    assert_ne!(anon.nonce, s.nonce);
    assert_eq!(
        open(&keys_a(), &seal(&keys_a(), &anon), None, "tools/call", &digest()),
        Ok(anon)
    );
}

#[test]
fn state_rotated_key_opens_and_unknown_key_is_refused() {
    let old = keys_a();
    let token = seal(&old, &state());
    let rotated = StateKeys::new(&KEY_B).unwrap().with_previous(&KEY_A).unwrap();
    assert_eq!(rotated.previous_key_ids(), vec![key_id(&KEY_A)]);
    assert_eq!(open_alice(&rotated, &token), Ok(state_with_nonce(&token)));
    // The rotated keys sign with the new key only.
    let fresh = seal(&rotated, &state());
    assert_eq!(URL_SAFE_NO_PAD.decode(&fresh).unwrap()[1..5], key_id(&KEY_B));
    assert!(open_alice(&rotated, &fresh).is_ok());
    // Without the old key, its tokens name an unknown key.
    let only_b = StateKeys::new(&KEY_B).unwrap();
    assert_eq!(open_alice(&only_b, &token), Err(StateError::UnknownKey));
    assert_eq!(open_alice(&old, &fresh), Err(StateError::UnknownKey));
}

/// The state sealed in `token` (for comparing a state across keys).
fn state_with_nonce(token: &str) -> ConfirmationState {
    open_alice(&keys_a(), token).unwrap()
}

#[test]
fn state_every_flipped_byte_is_refused() {
    let token = seal(&keys_a(), &state());
    let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..raw.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = raw.clone();
            bad[i] ^= bit;
            let got = open_alice(&keys_a(), &URL_SAFE_NO_PAD.encode(&bad));
            match got {
                Err(
                    e @ (StateError::BadSignature
                    | StateError::UnknownVersion
                    | StateError::UnknownKey
                    | StateError::Malformed),
                ) => {
                    seen.insert(e.reason());
                }
                other => panic!("byte {i} ^ {bit:#x}: {other:?}"),
            }
        }
    }
    // Each part of the format is reached: version, key id, payload and tag.
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        vec!["bad_signature", "unknown_key", "unknown_version"],
        "a flipped byte is refused by the check of its part"
    );
}

#[test]
fn state_truncated_and_garbage_tokens_are_refused() {
    let token = seal(&keys_a(), &state());
    for n in 0..token.len() {
        let got = open_alice(&keys_a(), &token[..n]);
        assert!(
            matches!(
                got,
                Err(StateError::Malformed | StateError::BadSignature | StateError::UnknownKey)
            ),
            "truncated to {n}: {got:?}"
        );
    }
    assert_eq!(open_alice(&keys_a(), ""), Err(StateError::Malformed));
    // Standard (not URL-safe) base64, padding and spaces are not the format.
    let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
    let std = STANDARD.encode(&raw);
    assert_ne!(std, token, "the test state's token has padding or + or /");
    assert_eq!(open_alice(&keys_a(), &std), Err(StateError::Malformed));
    assert_eq!(open_alice(&keys_a(), &format!("{token}=")), Err(StateError::Malformed));
    assert_eq!(open_alice(&keys_a(), &format!("{token} ")), Err(StateError::Malformed));
    // A well-formed token of another version is UnknownVersion even if short.
    assert_eq!(
        open_alice(&keys_a(), &URL_SAFE_NO_PAD.encode([2u8, 0, 0])),
        Err(StateError::UnknownVersion)
    );
    // Version 1 but shorter than header and tag.
    assert_eq!(
        open_alice(&keys_a(), &URL_SAFE_NO_PAD.encode([1u8; 36])),
        Err(StateError::Malformed)
    );
}

#[test]
fn state_too_large_is_refused_before_decoding() {
    // Not base64 at all: TooLarge proves the length is checked first.
    let junk = "*".repeat(MAX_TOKEN_CHARS + 1);
    assert_eq!(open_alice(&keys_a(), &junk), Err(StateError::TooLarge));
    assert_eq!(
        open_alice(&keys_a(), &junk[..MAX_TOKEN_CHARS]),
        Err(StateError::Malformed)
    );
    // A genuine token over the limit (a large context) is refused too...
    let big = state().with_context(json!({"blob": "x".repeat(MAX_TOKEN_CHARS)}));
    let token = seal(&keys_a(), &big);
    assert!(token.len() > MAX_TOKEN_CHARS);
    assert_eq!(open_alice(&keys_a(), &token), Err(StateError::TooLarge));
    // ...and one at the limit opens.
    let mut fit = state().with_context(json!(""));
    let base = seal(&keys_a(), &fit).len();
    // Each context byte adds 4/3 characters: fill up to the limit.
    fit.context = json!("y".repeat((MAX_TOKEN_CHARS - base) * 3 / 4));
    let token = seal(&keys_a(), &fit);
    assert!(
        token.len() <= MAX_TOKEN_CHARS && token.len() > MAX_TOKEN_CHARS - 4,
        "{}",
        token.len()
    );
    assert_eq!(open_alice(&keys_a(), &token), Ok(fit));
}

#[test]
fn state_binding_is_checked_principal_method_request() {
    let keys = keys_a();
    let token = seal(&keys, &state());
    let d = digest();
    assert_eq!(
        open(&keys, &token, None, "tools/call", &d),
        Err(StateError::WrongPrincipal)
    );
    assert_eq!(
        open(&keys, &token, Some("mallory"), "tools/call", &d),
        Err(StateError::WrongPrincipal)
    );
    assert_eq!(
        open(&keys, &token, Some("Alice"), "tools/call", &d),
        Err(StateError::WrongPrincipal)
    );
    let anon = seal(&keys, &state().with_principal(None));
    assert_eq!(
        open(&keys, &anon, Some("alice"), "tools/call", &d),
        Err(StateError::WrongPrincipal)
    );
    assert_eq!(
        open(&keys, &token, Some("alice"), "tools/list", &d),
        Err(StateError::WrongMethod)
    );
    let other = request_digest("transfer", &json!({"amount": 1000, "to": "bob"}));
    assert_eq!(
        open(&keys, &token, Some("alice"), "tools/call", &other),
        Err(StateError::WrongRequest)
    );
    // The order: principal before method before request.
    assert_eq!(
        open(&keys, &token, Some("mallory"), "tools/list", &other),
        Err(StateError::WrongPrincipal)
    );
    assert_eq!(
        open(&keys, &token, Some("alice"), "tools/list", &other),
        Err(StateError::WrongMethod)
    );
    // The signature before the binding: a tampered token is BadSignature
    // even for the wrong principal.
    let mut raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
    let last = raw.len() - 1;
    raw[last] ^= 1;
    assert_eq!(
        open(&keys, &URL_SAFE_NO_PAD.encode(&raw), Some("mallory"), "tools/call", &d),
        Err(StateError::BadSignature)
    );
}

#[test]
fn state_signed_payload_with_extra_or_missing_member_is_malformed() {
    let good = payload_of(&state());
    // The helper itself makes tokens that open (so the refusals below are
    // about the payload, not the helper).
    let exact = sign_raw(&KEY_A, &serde_json::to_vec(&good).unwrap());
    assert!(open_alice(&keys_a(), &exact).is_ok());
    let mut cases: Vec<(String, serde_json::Map<String, Value>)> = Vec::new();
    let mut extra = good.clone();
    extra.insert("admin".into(), json!(true));
    cases.push(("extra member".into(), extra));
    for k in good.keys() {
        let mut missing = good.clone();
        missing.remove(k);
        cases.push((format!("missing {k}"), missing));
    }
    let retype = |k: &str, v: Value| {
        let mut m = good.clone();
        m.insert(k.into(), v);
        (format!("{k} retyped"), m)
    };
    cases.push(retype("principal", json!(7)));
    cases.push(retype("method", json!(null)));
    cases.push(retype("expiresAtMs", json!(1.5)));
    cases.push(retype("expiresAtMs", json!("1700000060000")));
    cases.push(retype("digest", json!(URL_SAFE_NO_PAD.encode([0u8; 31]))));
    cases.push(retype("nonce", json!(URL_SAFE_NO_PAD.encode([0u8; 17]))));
    cases.push(retype("nonce", json!("not base64!")));
    for (what, m) in cases {
        let token = sign_raw(&KEY_A, &serde_json::to_vec(&m).unwrap());
        assert_eq!(open_alice(&keys_a(), &token), Err(StateError::Malformed), "{what}");
    }
    for payload in [&b"[]"[..], b"", b"{", b"null"] {
        assert_eq!(
            open_alice(&keys_a(), &sign_raw(&KEY_A, payload)),
            Err(StateError::Malformed)
        );
    }
}

#[test]
fn state_request_digest_ignores_member_order_only() {
    let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": null}}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{"a": {"x": null, "y": [1, {"p": 3, "q": 2}]}, "b": 1}"#).unwrap();
    assert_eq!(request_digest("t", &a), request_digest("t", &b));
    // A known vector: the canonical text is hashed after the length-prefixed name.
    let mut h = Sha256::new();
    h.update(1u64.to_be_bytes());
    h.update(b"t");
    h.update(br#"{"a":{"x":null,"y":[1,{"p":3,"q":2}]},"b":1}"#);
    assert_eq!(request_digest("t", &a), <[u8; 32]>::from(h.finalize()));
    let base = request_digest("t", &a);
    let changed: Vec<Value> = vec![
        json!({"b": 2, "a": {"y": [1, {"q": 2, "p": 3}], "x": null}}),
        json!({"b": 1.0, "a": {"y": [1, {"q": 2, "p": 3}], "x": null}}),
        json!({"b": "1", "a": {"y": [1, {"q": 2, "p": 3}], "x": null}}),
        json!({"b": 1, "a": {"y": [{"q": 2, "p": 3}, 1], "x": null}}),
        json!({"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": false}}),
        json!({"b": 1, "a": {"y": [1, {"q": 2, "p": 3}]}}),
        json!({"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": null, "z": null}}),
        json!({"B": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": null}}),
    ];
    for c in &changed {
        assert_ne!(request_digest("t", c), base, "{c}");
    }
    assert_ne!(request_digest("u", &a), base, "the tool name is bound");
    // The length prefix separates name from arguments.
    assert_ne!(request_digest("ab", &json!("c")), request_digest("a", &json!("bc")));
    // Byte order of keys: "Z" (0x5A) sorts before "a" (0x61) before "é".
    let mut h = Sha256::new();
    h.update(1u64.to_be_bytes());
    h.update(b"t");
    h.update("{\"Z\":1,\"a\":2,\"\u{e9}\":3}".as_bytes());
    assert_eq!(
        request_digest("t", &json!({"é": 3, "a": 2, "Z": 1})),
        <[u8; 32]>::from(h.finalize())
    );
    // Deep nesting is fine (iterative).
    let mut deep = json!(0);
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let d = request_digest("t", &deep);
    assert_ne!(d, base);
    // serde_json's own drop of a deep value recurses: leak it on purpose.
    std::mem::forget(deep);
}

#[test]
fn state_keys_are_checked_and_debug_shows_ids_only() {
    assert_eq!(StateKeys::new(&[7u8; 31]).err(), Some(StateError::WeakKey { len: 31 }));
    assert_eq!(StateKeys::new(&[]).err().map(|e| e.reason()), Some("weak_key"));
    assert!(StateKeys::new(&[7u8; 32]).is_ok());
    assert_eq!(
        keys_a().with_previous(&[1u8; 16]).err(),
        Some(StateError::WeakKey { len: 16 })
    );
    let mut keys = keys_a();
    for i in 0..8u8 {
        keys = keys.with_previous(&[i; 40]).unwrap();
    }
    assert_eq!(keys.previous_key_ids().len(), 8);
    assert_eq!(
        keys.clone().with_previous(&[9u8; 40]).err(),
        Some(StateError::TooManyKeys)
    );
    let nine: Vec<String> = (0..9u8).map(|i| STANDARD.encode([i; 32])).collect();
    let nine: Vec<&str> = nine.iter().map(String::as_str).collect();
    let cur = STANDARD.encode(KEY_B);
    assert_eq!(StateKeys::from_base64(&cur, &nine).err(), Some(StateError::TooManyKeys));
    assert!(StateKeys::from_base64(&cur, &nine[..8]).is_ok());
    assert_eq!(
        StateKeys::from_base64(&URL_SAFE_NO_PAD.encode(KEY_B), &[]).err(),
        Some(StateError::BadKeyEncoding)
    );
    assert_eq!(
        StateKeys::from_base64(&STANDARD.encode([1u8; 8]), &[]).err(),
        Some(StateError::WeakKey { len: 8 })
    );
    // from_base64 keys are the same keys as from bytes.
    let b64 = StateKeys::from_base64(&cur, &[&STANDARD.encode(KEY_A)]).unwrap();
    assert_eq!(b64.current_key_id(), key_id(&KEY_B));
    assert!(open_alice(&b64, &seal(&keys_a(), &state())).is_ok());

    let dbg = format!("{b64:?} {:#?}", b64);
    for key in [&KEY_A[..], &KEY_B[..]] {
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let bytes = format!("{key:?}");
        for secret in [
            hex,
            STANDARD.encode(key),
            URL_SAFE_NO_PAD.encode(key),
            bytes,
            String::from_utf8_lossy(key).into(),
        ] {
            let head: String = secret.chars().take(16).collect();
            assert!(!dbg.contains(&head), "{dbg} contains {secret}");
        }
    }
    let id: String = key_id(&KEY_B).iter().map(|b| format!("{b:02x}")).collect();
    assert!(dbg.contains(&id), "{dbg} names the key id {id}");

    let generated = StateKeys::generate().unwrap();
    assert_ne!(
        generated.current_key_id(),
        StateKeys::generate().unwrap().current_key_id()
    );
    assert!(open(
        &generated,
        &seal(&generated, &state()),
        Some("alice"),
        "tools/call",
        &digest()
    )
    .is_ok());
    fn send_sync<T: Send + Sync + Clone>() {}
    send_sync::<StateKeys>();
}

#[test]
fn state_errors_have_stable_reasons_and_no_secrets() {
    let all = [
        (StateError::TooLarge, "too_large"),
        (StateError::Malformed, "malformed"),
        (StateError::UnknownVersion, "unknown_version"),
        (StateError::UnknownKey, "unknown_key"),
        (StateError::BadSignature, "bad_signature"),
        (StateError::WrongPrincipal, "wrong_principal"),
        (StateError::WrongMethod, "wrong_method"),
        (StateError::WrongRequest, "wrong_request"),
        (StateError::WeakKey { len: 3 }, "weak_key"),
        (StateError::TooManyKeys, "too_many_keys"),
        (StateError::BadKeyEncoding, "bad_key_encoding"),
    ];
    for (e, reason) in all {
        assert_eq!(e.reason(), reason);
        let text = e.to_string();
        assert!(text.len() > 20 && !text.contains('_'), "{text}");
    }
    assert_eq!(
        StoreError::Full.to_string(),
        "the confirmation store is full of unexpired confirmations"
    );
    assert!(StoreError::Unavailable("redis down".into())
        .to_string()
        .ends_with("redis down"));
    let _: &dyn std::error::Error = &StoreError::Full;
    let _: &dyn std::error::Error = &StateError::Malformed;
}

#[test]
fn state_counters_count_by_reason() {
    let c = StateCounters::default();
    let keys = keys_a();
    let token = seal(&keys, &state());
    c.record_sealed();
    for (t, p) in [
        (&token[..], Some("alice")),
        (&token[..], Some("bob")),
        (&token[..], None),
        ("%", Some("alice")),
    ] {
        match open(&keys, t, p, "tools/call", &digest()) {
            Ok(_) => c.record_opened(),
            Err(e) => c.record(&e),
        }
    }
    c.record(&StateError::TooManyKeys);
    let snap = c.snapshot();
    let get = |name: &str| snap.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    assert_eq!(get("sealed"), Some(1));
    assert_eq!(get("opened"), Some(1));
    assert_eq!(get("wrong_principal"), Some(2));
    assert_eq!(get("malformed"), Some(1));
    assert_eq!(get("bad_signature"), Some(0));
    assert_eq!(get("too_many_keys"), None, "configuration errors are not refusals");
    assert_eq!(snap.len(), 11);
    assert_eq!(snap.iter().map(|(_, v)| v).sum::<u64>(), 5);
}

#[test]
fn state_store_first_then_already() {
    let store = MemoryConfirmationStore::default();
    let n = [1u8; 16];
    assert_eq!(store.consume(&n, 1_000, 0), Ok(Consumed::First));
    assert_eq!(store.consume(&n, 1_000, 1), Ok(Consumed::Already));
    assert_eq!(
        store.consume(&n, 5_000, 999),
        Ok(Consumed::Already),
        "a later expiry does not renew it"
    );
    assert_eq!(store.consume(&[2u8; 16], 1_000, 999), Ok(Consumed::First));
    assert_eq!(store.len(), 2);
    // Past its expiry, a nonce is answered Already whatever: it may have
    // been dropped, so the store cannot prove a first use.
    assert_eq!(store.consume(&[3u8; 16], 1_000, 1_000), Ok(Consumed::Already));
    assert_eq!(store.len(), 0, "both expired at 1000 and are dropped");
    // A clock that steps back does not revive a dropped nonce.
    assert_eq!(store.consume(&n, 1_000, 10), Ok(Consumed::Already));
    assert_eq!(store.consume(&[4u8; 16], 1_500, 10), Ok(Consumed::First));
}

#[test]
fn state_store_purges_expired_and_refuses_when_full() {
    let store = MemoryConfirmationStore::new(3);
    for i in 0..3u8 {
        assert_eq!(store.consume(&[i; 16], 100 + i64::from(i), 0), Ok(Consumed::First));
    }
    assert_eq!(store.consume(&[9u8; 16], 1_000, 50), Err(StoreError::Full));
    // A known nonce is still answered when full.
    assert_eq!(store.consume(&[0u8; 16], 100, 50), Ok(Consumed::Already));
    // At 100 the first has expired: its room is reused.
    assert_eq!(store.consume(&[9u8; 16], 1_000, 100), Ok(Consumed::First));
    assert_eq!(store.consume(&[8u8; 16], 1_000, 100), Err(StoreError::Full));
    assert_eq!(store.len(), 3);
    // Later, all but the two long ones expire.
    assert_eq!(store.consume(&[8u8; 16], 1_000, 500), Ok(Consumed::First));
    assert_eq!(store.consume(&[7u8; 16], 1_000, 500), Ok(Consumed::First));
    assert_eq!(store.len(), 3);
    assert_eq!(store.consume(&[9u8; 16], 1_000, 999), Ok(Consumed::Already));
    assert_eq!(
        MemoryConfirmationStore::new(0).consume(&[0u8; 16], 10, 0),
        Err(StoreError::Full)
    );
}

#[test]
fn state_store_many_nonces_stay_bounded() {
    let store = MemoryConfirmationStore::new(1_000);
    // 100,000 nonces, each living 500 ms, arriving one per millisecond:
    // never more than 500 unexpired, so never Full.
    for i in 0..100_000u32 {
        let mut n = [0u8; 16];
        n[..4].copy_from_slice(&i.to_be_bytes());
        let now = i64::from(i);
        assert_eq!(store.consume(&n, now + 500, now), Ok(Consumed::First), "nonce {i}");
    }
    assert!(store.len() <= 501, "{}", store.len());
}

#[test]
fn state_store_racing_threads_get_one_first() {
    for round in 0..50u8 {
        let store = Arc::new(MemoryConfirmationStore::new(16));
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let store = Arc::clone(&store);
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    store.consume(&[round; 16], 10_000, 0).unwrap()
                })
            })
            .collect();
        let got: Vec<Consumed> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(
            got.iter().filter(|c| **c == Consumed::First).count(),
            1,
            "round {round}: {got:?}"
        );
    }
    // Behind a trait object, as a session holds it.
    let shared: Arc<dyn ConfirmationStore> = Arc::new(MemoryConfirmationStore::default());
    assert_eq!(shared.consume(&[0u8; 16], 1, 0), Ok(Consumed::First));
}
