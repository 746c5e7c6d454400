//! The protected `requestState` of MCP 2026-07-28 multi-round-trip
//! requests: how a stateless server carries a pending confirmation
//! through the client and gets it back intact.
//!
//! In MCP 2026-07-28 a server sends no requests to the client. To ask the
//! user to approve a confirmation, a `tools/call` answers an
//! `InputRequiredResult` with `inputRequests` and an opaque
//! `requestState` string; the client re-sends the original request (under
//! a new JSON-RPC id) with `inputResponses` and the same `requestState`.
//! That string comes back as attacker-controlled input, and here it
//! decides authorization (which confirmation an answer approves), so this
//! module seals it: [`seal`] turns a [`ConfirmationState`] into a token,
//! [`open`] checks a token and gives the state back. The answers a
//! handler's questions got in earlier rounds travel the same way
//! ([`AnswersState`], [`seal_answers`], [`open_any`]), with the same
//! checks and an expiry instead of a nonce.
//!
//! # Format
//!
//! A token is URL-safe base64 without padding (RFC 4648 §5) of
//!
//! ```text
//! version (1 byte, 0x01) || key id (4 bytes) || payload || tag (32 bytes)
//! ```
//!
//! - the key id names the [`StateKeys`] key that made the tag: the first
//!   4 bytes of SHA-256(`"rcip-request-state-key-id"` || key), so the
//!   verifier selects the key instead of trying every one;
//! - the payload is the compact JSON of the state (see
//!   [`ConfirmationState`] for its members);
//! - the tag is HMAC-SHA-256 under that key over version || key id ||
//!   payload.
//!
//! The payload is **signed, not encrypted**: the client can read the
//! principal, the ids, the expiry, the digest and the context (which it
//! sent itself). That is a decision: nothing secret is in a state, and an
//! opaque format would add a cipher and a nonce discipline for no
//! protection the MAC does not already give.
//!
//! # Checks, in order
//!
//! [`open`] stops at the first failure, each with its own [`StateError`]:
//! the token's length (at most [`MAX_TOKEN_CHARS`], before any decoding),
//! base64, the version byte, the key id, the tag (in constant time), the
//! payload (strict JSON: every member present and typed, no other), then
//! the principal, the method and the request digest the caller passes
//! from the re-sent request. Nothing after the tag is looked at before the
//! tag is verified.
//!
//! # Threat model
//!
//! - Tampering: any change fails the HMAC (or names no key or version);
//!   the payload is parsed only once its tag verifies.
//! - Replay: a random 128-bit nonce per state, consumed once by the caller.
//! - Cross-principal reuse: the state names its principal; any other (or
//!   none) is refused.
//! - Cross-request reuse: the method and a digest of the tool name and
//!   arguments; an approval of one call cannot authorize another.
//! - Key rotation: previous keys verify, only the current key signs.
//! - Size: tokens above [`MAX_TOKEN_CHARS`] are refused before decoding.
//!
//! # What the caller does
//!
//! [`open`] does not check the expiry: an expired confirmation is resumed
//! so the runtime answers `CONFIRMATION_EXPIRED` (the RCIP outcome), not a
//! protocol error. So the caller, after [`open`]:
//!
//! 1. compares [`ConfirmationState::expires_at_ms`] with its clock; an
//!    expired state is resumed only to be answered as expired (it can
//!    approve nothing, so it needs no single-use check);
//! 2. consumes the nonce of an unexpired state through a
//!    [`ConfirmationStore`] before the state approves anything:
//!    [`Consumed::Already`] is a replay and is refused, and a
//!    [`StoreError`] fails closed (refused too);
//! 3. counts what happened in [`StateCounters`] for metrics.
//!
//! ```
//! use rcip_mcp::state::{
//!     open, request_digest, seal, ConfirmationState, ConfirmationStore, Consumed,
//!     MemoryConfirmationStore, StateKeys,
//! };
//! use serde_json::json;
//!
//! let keys = StateKeys::generate()?;
//! let store = MemoryConfirmationStore::default();
//! // Asking: the state goes out as `requestState`.
//! let asked = request_digest("transfer", &json!({"to": "bob", "amount": 10}));
//! let state = ConfirmationState::new("tools/call", asked, "c-1", "i-1", "transfer", 1_900_000_000_000)?
//!     .with_principal(Some("alice".into()));
//! let token = seal(&keys, &state);
//!
//! // The re-sent request: the same tool and arguments (members in any order).
//! let again = request_digest("transfer", &json!({"amount": 10, "to": "bob"}));
//! let back = open(&keys, &token, Some("alice"), "tools/call", &again)?;
//! assert_eq!(back, state);
//! let now_ms = 1_800_000_000_000;
//! assert!(back.expires_at_ms > now_ms);
//! assert_eq!(store.consume(&back.nonce, back.expires_at_ms, now_ms)?, Consumed::First);
//! // The same token once more is a replay.
//! assert_eq!(store.consume(&back.nonce, back.expires_at_ms, now_ms)?, Consumed::Already);
//! // Another principal, or other arguments, cannot use it at all.
//! assert!(open(&keys, &token, Some("mallory"), "tools/call", &again).is_err());
//! let more = request_digest("transfer", &json!({"amount": 1000, "to": "bob"}));
//! assert!(open(&keys, &token, Some("alice"), "tools/call", &more).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The version byte of the token format this module writes and reads.
pub const STATE_VERSION: u8 = 1;

/// The largest token [`open`] decodes, in characters (bytes: the base64
/// alphabet is ASCII). A token of up to 4096 characters carries up to
/// 3072 bytes, so a state whose compact JSON is longer than 3035 bytes
/// seals to a token [`open`] refuses ([`StateError::TooLarge`]); the
/// context is the part that can grow.
pub const MAX_TOKEN_CHARS: usize = 65_536;

/// The shortest key [`StateKeys`] accepts, in bytes (256 bits, the
/// HMAC-SHA-256 output size, RFC 2104 §3).
pub const MIN_KEY_BYTES: usize = 32;

/// The most previous (verify-only) keys [`StateKeys`] holds.
pub const MAX_PREVIOUS_KEYS: usize = 8;

/// The domain-separation prefix of key ids: a key id is the first 4 bytes
/// of SHA-256(this || key).
const KEY_ID_PREFIX: &[u8] = b"rcip-request-state-key-id";

/// Bytes of the fixed parts of a decoded token: version, key id, tag.
const HEADER_BYTES: usize = 1 + 4;
const TAG_BYTES: usize = 32;

/// One key: its id and the HMAC keyed with it (the key's inner and outer
/// pad states; the raw bytes are not kept).
#[derive(Clone)]
struct Key {
    id: [u8; 4],
    mac: HmacSha256,
}

impl Key {
    fn new(bytes: &[u8]) -> Result<Key, StateError> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(StateError::WeakKey { len: bytes.len() });
        }
        let mut h = Sha256::new();
        h.update(KEY_ID_PREFIX);
        h.update(bytes);
        let hash = h.finalize();
        let mut id = [0u8; 4];
        id.copy_from_slice(&hash[..4]);
        // HMAC takes keys of any length (RFC 2104 §2): this cannot fail.
        let mac = HmacSha256::new_from_slice(bytes).map_err(|_| StateError::WeakKey { len: bytes.len() })?;
        Ok(Key { id, mac })
    }
}

/// The host's HMAC-SHA-256 keys for `requestState`: one current key that
/// signs and verifies, and up to [`MAX_PREVIOUS_KEYS`] previous keys that
/// only verify (rotation: a token sealed before the rotation still opens
/// until its confirmation expires; drop the previous key after the longest
/// confirmation expiry).
///
/// Every key is at least [`MIN_KEY_BYTES`] bytes and is known by its
/// 4-byte key id (see the [module](self) docs). A fleet of instances that
/// serve the same clients shares the same keys (from configuration:
/// [`StateKeys::from_base64`]); [`StateKeys::generate`] is for a single
/// instance.
///
/// The raw key bytes are not kept (only the HMAC's keyed state), and
/// `Debug` prints the key ids only. Cloning copies the keyed states.
/// `Send + Sync`: share one value between threads by reference or `Arc`.
#[derive(Clone)]
pub struct StateKeys {
    current: Key,
    previous: Vec<Key>,
}

impl StateKeys {
    /// Keys with `current` as the signing key and no previous key. The
    /// bytes are copied into the HMAC state; the caller keeps ownership of
    /// (and may wipe) its buffer.
    ///
    /// # Errors
    ///
    /// [`StateError::WeakKey`] when `current` is shorter than
    /// [`MIN_KEY_BYTES`].
    pub fn new(current: &[u8]) -> Result<StateKeys, StateError> {
        Ok(StateKeys {
            current: Key::new(current)?,
            previous: Vec::new(),
        })
    }

    /// These keys plus `key` as a previous key: it verifies tokens but
    /// never signs. Previous keys are tried in the order they were added,
    /// among those whose key id matches the token's.
    ///
    /// # Errors
    ///
    /// [`StateError::WeakKey`] when `key` is shorter than
    /// [`MIN_KEY_BYTES`]; [`StateError::TooManyKeys`] when there are
    /// already [`MAX_PREVIOUS_KEYS`] previous keys.
    pub fn with_previous(mut self, key: &[u8]) -> Result<Self, StateError> {
        let key = Key::new(key)?;
        if self.previous.len() >= MAX_PREVIOUS_KEYS {
            return Err(StateError::TooManyKeys);
        }
        self.previous.push(key);
        Ok(self)
    }

    /// A random current key of 32 bytes from the operating system's CSPRNG
    /// (`getrandom`), with no previous key.
    ///
    /// For a single instance only: the key lives in this process, so a
    /// token sealed here does not open on another instance of a fleet, nor
    /// after a restart (its confirmations then fail with
    /// [`StateError::UnknownKey`]). A fleet configures shared keys with
    /// [`StateKeys::from_base64`].
    ///
    /// # Errors
    ///
    /// The operating system's error when it has no randomness to give.
    pub fn generate() -> io::Result<StateKeys> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
        let keys = StateKeys::new(&bytes).map_err(io::Error::other);
        bytes.fill(0);
        keys
    }

    /// Keys from standard base64 (RFC 4648 §4, with padding, as C and JSON
    /// options carry them): `current` signs, each of `previous` (at most
    /// [`MAX_PREVIOUS_KEYS`]) only verifies. The strings are not trimmed.
    ///
    /// # Errors
    ///
    /// [`StateError::BadKeyEncoding`] when a string is not canonical
    /// standard base64, then as [`StateKeys::new`] and
    /// [`StateKeys::with_previous`]. The error names no key.
    pub fn from_base64(current: &str, previous: &[&str]) -> Result<StateKeys, StateError> {
        let decode = |s: &str| STANDARD.decode(s).map_err(|_| StateError::BadKeyEncoding);
        let mut keys = StateKeys::new(&decode(current)?)?;
        for p in previous {
            keys = keys.with_previous(&decode(p)?)?;
        }
        Ok(keys)
    }

    /// The current (signing) key's id.
    pub fn current_key_id(&self) -> [u8; 4] {
        self.current.id
    }

    /// The previous (verify-only) keys' ids, in the order they were added.
    pub fn previous_key_ids(&self) -> Vec<[u8; 4]> {
        self.previous.iter().map(|k| k.id).collect()
    }

    /// The keys whose id is `id`: the current key first, then previous
    /// keys (two different keys share an id with probability 2^-32; each
    /// is tried).
    fn candidates<'a>(&'a self, id: &'a [u8]) -> impl Iterator<Item = &'a Key> + 'a {
        std::iter::once(&self.current)
            .chain(self.previous.iter())
            .filter(move |k| k.id[..] == *id)
    }
}

struct KeyIdHex([u8; 4]);

impl fmt::Debug for KeyIdHex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for StateKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKeys")
            .field("current", &KeyIdHex(self.current.id))
            .field(
                "previous",
                &self.previous.iter().map(|k| KeyIdHex(k.id)).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A pending confirmation as it travels in `requestState`: what binds it
/// to its principal and request, what the runtime needs to resume it, and
/// the nonce that makes it single use.
///
/// Payload members (compact JSON, exactly these, [`open`] refuses any
/// other): `principal` (string or `null`), `method`, `digest` (URL-safe
/// base64 without padding of 32 bytes), `confirmationId`, `invocationId`,
/// `capabilityId`, `expiresAtMs` (integer), `context` (any JSON),
/// `nonce` (URL-safe base64 without padding of 16 bytes).
///
/// A plain value (owned strings and JSON), `Send + Sync`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfirmationState {
    /// The principal the request was made by (the host's authenticated
    /// identity for the caller), or `None` for an anonymous request.
    /// [`open`] refuses the state for any other principal.
    pub principal: Option<String>,
    /// The JSON-RPC method of the request, e.g. `"tools/call"`.
    pub method: String,
    /// [`request_digest`] of the request that was asked about.
    pub request_digest: [u8; 32],
    /// The runtime's confirmation id.
    pub confirmation_id: String,
    /// The id of the invocation the confirmation holds.
    pub invocation_id: String,
    /// The capability the invocation calls.
    pub capability_id: String,
    /// The confirmation's `expiresAt`: Unix time in milliseconds. Not
    /// checked by [`open`]; the caller compares it with its clock.
    pub expires_at_ms: i64,
    /// The semantic context the runtime compares when it resumes the
    /// confirmation, carried whole (the client can read it: it is the
    /// context the client's request established).
    pub context: Value,
    /// 16 random bytes: the key under which a [`ConfirmationStore`]
    /// records the state as used. Not the confirmation id, which a host's
    /// id generator may repeat across instances.
    pub nonce: [u8; 16],
}

impl ConfirmationState {
    /// A state with a fresh random nonce (16 bytes from the operating
    /// system's CSPRNG), no principal and a `null` context; set those with
    /// [`with_principal`](Self::with_principal) and
    /// [`with_context`](Self::with_context).
    ///
    /// # Errors
    ///
    /// The operating system's error when it has no randomness to give.
    pub fn new(
        method: impl Into<String>,
        request_digest: [u8; 32],
        confirmation_id: impl Into<String>,
        invocation_id: impl Into<String>,
        capability_id: impl Into<String>,
        expires_at_ms: i64,
    ) -> io::Result<ConfirmationState> {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).map_err(|e| io::Error::other(e.to_string()))?;
        Ok(ConfirmationState {
            principal: None,
            method: method.into(),
            request_digest,
            confirmation_id: confirmation_id.into(),
            invocation_id: invocation_id.into(),
            capability_id: capability_id.into(),
            expires_at_ms,
            context: Value::Null,
            nonce,
        })
    }

    /// This state bound to `principal` (`None`: anonymous).
    pub fn with_principal(mut self, principal: Option<String>) -> Self {
        self.principal = principal;
        self
    }

    /// This state carrying `context`.
    pub fn with_context(mut self, context: Value) -> Self {
        self.context = context;
        self
    }

    fn to_json(&self) -> Value {
        serde_json::json!({
            "principal": self.principal,
            "method": self.method,
            "digest": URL_SAFE_NO_PAD.encode(self.request_digest),
            "confirmationId": self.confirmation_id,
            "invocationId": self.invocation_id,
            "capabilityId": self.capability_id,
            "expiresAtMs": self.expires_at_ms,
            "context": self.context,
            "nonce": URL_SAFE_NO_PAD.encode(self.nonce),
        })
    }

    /// The strict parse: an object with exactly the nine members, each of
    /// its type.
    fn from_object(mut m: Map<String, Value>) -> Option<ConfirmationState> {
        if m.len() != 9 {
            return None;
        }
        fn string(m: &mut Map<String, Value>, k: &str) -> Option<String> {
            match m.remove(k)? {
                Value::String(s) => Some(s),
                _ => None,
            }
        }
        fn bytes<const N: usize>(m: &mut Map<String, Value>, k: &str) -> Option<[u8; N]> {
            let v = URL_SAFE_NO_PAD.decode(string(m, k)?).ok()?;
            v.try_into().ok()
        }
        let principal = match m.remove("principal")? {
            Value::Null => None,
            Value::String(s) => Some(s),
            _ => return None,
        };
        Some(ConfirmationState {
            principal,
            method: string(&mut m, "method")?,
            request_digest: bytes(&mut m, "digest")?,
            confirmation_id: string(&mut m, "confirmationId")?,
            invocation_id: string(&mut m, "invocationId")?,
            capability_id: string(&mut m, "capabilityId")?,
            expires_at_ms: m.remove("expiresAtMs")?.as_i64()?,
            context: m.remove("context")?,
            nonce: bytes(&mut m, "nonce")?,
        })
    }
}

/// The answers a handler's questions got so far, as they travel in
/// `requestState` between the rounds of one multi-round-trip request
/// (docs/MCP.md "Questions without sessions"): a handler that asked again
/// in a later round finds its earlier answers without the client sending
/// them twice.
///
/// Payload members (compact JSON, exactly these): `principal` (string or
/// `null`), `method`, `digest` (as in [`ConfirmationState`]),
/// `expiresAtMs` (integer) and `answers` (an object: question key → the
/// client's result, as it sent it). Not single use: a state of answers
/// approves nothing, so replaying it only replays answers the same
/// principal gave for the same request.
///
/// A plain value, `Send + Sync`.
#[derive(Clone, Debug, PartialEq)]
pub struct AnswersState {
    /// As [`ConfirmationState::principal`].
    pub principal: Option<String>,
    /// As [`ConfirmationState::method`].
    pub method: String,
    /// As [`ConfirmationState::request_digest`].
    pub request_digest: [u8; 32],
    /// Unix time in milliseconds after which the state is refused
    /// ([`StateError::Expired`], checked by the caller with its clock).
    pub expires_at_ms: i64,
    /// Question key → the client's result for it.
    pub answers: Map<String, Value>,
}

impl AnswersState {
    fn to_json(&self) -> Value {
        serde_json::json!({
            "principal": self.principal,
            "method": self.method,
            "digest": URL_SAFE_NO_PAD.encode(self.request_digest),
            "expiresAtMs": self.expires_at_ms,
            "answers": self.answers,
        })
    }

    /// The strict parse: exactly the five members, each of its type.
    fn from_object(mut m: Map<String, Value>) -> Option<AnswersState> {
        if m.len() != 5 {
            return None;
        }
        let principal = match m.remove("principal")? {
            Value::Null => None,
            Value::String(s) => Some(s),
            _ => return None,
        };
        let method = match m.remove("method")? {
            Value::String(s) => s,
            _ => return None,
        };
        let request_digest = match m.remove("digest")? {
            Value::String(s) => URL_SAFE_NO_PAD.decode(s).ok()?.try_into().ok()?,
            _ => return None,
        };
        let expires_at_ms = m.remove("expiresAtMs")?.as_i64()?;
        let Value::Object(answers) = m.remove("answers")? else {
            return None;
        };
        Some(AnswersState {
            principal,
            method,
            request_digest,
            expires_at_ms,
            answers,
        })
    }
}

/// What [`open_any`] found in a token.
#[derive(Clone, Debug, PartialEq)]
pub enum OpenedState {
    /// A pending confirmation ([`seal`]).
    Confirmation(ConfirmationState),
    /// A handler's answers so far ([`seal_answers`]).
    Answers(AnswersState),
}

/// The digest that binds a re-sent request to the one that was asked
/// about: SHA-256 over the tool name's length in bytes (8 bytes, big
/// endian), the tool name (UTF-8), then `arguments` in canonical JSON.
///
/// Canonical JSON: no whitespace; object members sorted by key in byte
/// order of their UTF-8 (which is code point order, not the UTF-16 order
/// of RFC 8785), recursively; strings and numbers as `serde_json` prints
/// them (so `1` and `1.0` differ, as their JSON texts do). Two argument
/// objects that differ only in member order have the same digest; any
/// other change changes it. Iterative, so any nesting depth is safe.
pub fn request_digest(tool_name: &str, arguments: &Value) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((tool_name.len() as u64).to_be_bytes());
    h.update(tool_name.as_bytes());
    write_canonical(&mut h, arguments);
    h.finalize().into()
}

/// What the canonical writer still has to write.
enum Step<'a> {
    Value(&'a Value),
    Key(&'a str),
    Raw(&'static [u8]),
}

fn write_canonical(h: &mut Sha256, root: &Value) {
    let mut stack = vec![Step::Value(root)];
    let mut scratch = Vec::new();
    let mut leaf = |h: &mut Sha256, v: &dyn LeafJson| {
        scratch.clear();
        v.write(&mut scratch);
        h.update(&scratch);
    };
    while let Some(step) = stack.pop() {
        match step {
            Step::Raw(b) => h.update(b),
            Step::Key(k) => leaf(h, &k),
            Step::Value(v) => match v {
                Value::Null => h.update(b"null"),
                Value::Bool(true) => h.update(b"true"),
                Value::Bool(false) => h.update(b"false"),
                Value::Number(n) => leaf(h, n),
                Value::String(s) => leaf(h, &s.as_str()),
                Value::Array(items) => {
                    h.update(b"[");
                    stack.push(Step::Raw(b"]"));
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push(Step::Value(item));
                        if i > 0 {
                            stack.push(Step::Raw(b","));
                        }
                    }
                }
                Value::Object(members) => {
                    h.update(b"{");
                    stack.push(Step::Raw(b"}"));
                    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
                    sorted.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                    for (i, (k, item)) in sorted.into_iter().enumerate().rev() {
                        stack.push(Step::Value(item));
                        stack.push(Step::Raw(b":"));
                        stack.push(Step::Key(k));
                        if i > 0 {
                            stack.push(Step::Raw(b","));
                        }
                    }
                }
            },
        }
    }
}

/// A JSON leaf (string or number) as `serde_json` prints it.
trait LeafJson {
    fn write(&self, out: &mut Vec<u8>);
}

impl LeafJson for &str {
    fn write(&self, out: &mut Vec<u8>) {
        // Writing a string into a Vec cannot fail.
        let _ = serde_json::to_writer(out, self);
    }
}

impl LeafJson for serde_json::Number {
    fn write(&self, out: &mut Vec<u8>) {
        let _ = serde_json::to_writer(out, self);
    }
}

/// `state` sealed under the current key of `keys`: the token to send as
/// `requestState` (format in the [module](self) docs). The payload is
/// signed, not encrypted: the client can read it.
///
/// A state whose token is longer than [`MAX_TOKEN_CHARS`] is sealed all
/// the same and refused by [`open`]; the caller keeps the context small or
/// checks the length.
pub fn seal(keys: &StateKeys, state: &ConfirmationState) -> String {
    // A Value always serializes.
    let payload = serde_json::to_vec(&state.to_json()).unwrap_or_default();
    seal_payload(&keys.current, &payload)
}

/// `state` as a token, signed with the current key of `keys`, as [`seal`]
/// does for a confirmation. A token longer than [`MAX_TOKEN_CHARS`] is
/// sealed all the same and refused by [`open_any`]: the caller checks the
/// length before sending it.
pub fn seal_answers(keys: &StateKeys, state: &AnswersState) -> String {
    let payload = serde_json::to_vec(&state.to_json()).unwrap_or_default();
    seal_payload(&keys.current, &payload)
}

fn seal_payload(key: &Key, payload: &[u8]) -> String {
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len() + TAG_BYTES);
    out.push(STATE_VERSION);
    out.extend_from_slice(&key.id);
    out.extend_from_slice(payload);
    let mut mac = key.mac.clone();
    mac.update(&out);
    out.extend_from_slice(&mac.finalize().into_bytes());
    URL_SAFE_NO_PAD.encode(out)
}

/// The state sealed in `token`, if it is intact and bound to this
/// request: `principal` as the host authenticated the re-sent request,
/// its `method`, and the [`request_digest`] of its tool name and
/// arguments.
///
/// # Errors
///
/// The first check that fails, in this order:
/// [`TooLarge`](StateError::TooLarge) (more than [`MAX_TOKEN_CHARS`]
/// bytes, before decoding), [`Malformed`](StateError::Malformed) (not
/// canonical URL-safe base64 without padding, or empty),
/// [`UnknownVersion`](StateError::UnknownVersion) (a version byte other
/// than [`STATE_VERSION`]), [`Malformed`](StateError::Malformed) (shorter
/// than version, key id and tag), [`UnknownKey`](StateError::UnknownKey)
/// (no key of `keys` has the token's key id),
/// [`BadSignature`](StateError::BadSignature) (the tag verifies under no
/// key with that id; compared in constant time),
/// [`Malformed`](StateError::Malformed) (the signed payload is not the
/// JSON of a confirmation state, strictly: a state of answers is
/// malformed here),
/// [`WrongPrincipal`](StateError::WrongPrincipal),
/// [`WrongMethod`](StateError::WrongMethod),
/// [`WrongRequest`](StateError::WrongRequest) (the digest differs).
///
/// The expiry is not checked (see the [module](self) docs), nor is the
/// nonce consumed: both are the caller's.
pub fn open(
    keys: &StateKeys,
    token: &str,
    principal: Option<&str>,
    method: &str,
    request_digest: &[u8; 32],
) -> Result<ConfirmationState, StateError> {
    let OpenedState::Confirmation(state) = open_payload(keys, token)? else {
        return Err(StateError::Malformed);
    };
    check_bindings(
        (state.principal.as_deref(), &state.method, &state.request_digest),
        principal,
        method,
        request_digest,
    )?;
    Ok(state)
}

/// The state sealed in `token`, a confirmation ([`seal`]) or answers
/// ([`seal_answers`]), with the checks of [`open`] in the same order; a
/// payload that is strictly neither is [`Malformed`](StateError::Malformed).
/// Neither expiry is checked (the caller's clock decides; see
/// [`AnswersState::expires_at_ms`]).
///
/// # Errors
///
/// As [`open`].
pub fn open_any(
    keys: &StateKeys,
    token: &str,
    principal: Option<&str>,
    method: &str,
    request_digest: &[u8; 32],
) -> Result<OpenedState, StateError> {
    let opened = open_payload(keys, token)?;
    let bound = match &opened {
        OpenedState::Confirmation(c) => (c.principal.as_deref(), c.method.as_str(), &c.request_digest),
        OpenedState::Answers(a) => (a.principal.as_deref(), a.method.as_str(), &a.request_digest),
    };
    check_bindings(bound, principal, method, request_digest)?;
    Ok(opened)
}

/// The state in `token`, verified ([`verify`]) and strictly parsed: a
/// payload with `answers` is an [`AnswersState`], any other a
/// [`ConfirmationState`].
fn open_payload(keys: &StateKeys, token: &str) -> Result<OpenedState, StateError> {
    let payload = verify(keys, token)?;
    let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&payload) else {
        return Err(StateError::Malformed);
    };
    if m.contains_key("answers") {
        AnswersState::from_object(m).map(OpenedState::Answers)
    } else {
        ConfirmationState::from_object(m).map(OpenedState::Confirmation)
    }
    .ok_or(StateError::Malformed)
}

/// The signed payload of `token`: length, encoding, version, key id and
/// tag, in that order (see [`open`]).
fn verify(keys: &StateKeys, token: &str) -> Result<Vec<u8>, StateError> {
    if token.len() > MAX_TOKEN_CHARS {
        return Err(StateError::TooLarge);
    }
    let mut raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| StateError::Malformed)?;
    match raw.first() {
        None => return Err(StateError::Malformed),
        Some(&STATE_VERSION) => {}
        Some(_) => return Err(StateError::UnknownVersion),
    }
    if raw.len() < HEADER_BYTES + TAG_BYTES {
        return Err(StateError::Malformed);
    }
    let (signed, tag) = raw.split_at(raw.len() - TAG_BYTES);
    let id = &signed[1..HEADER_BYTES];
    let mut known = false;
    let mut verified = false;
    for key in keys.candidates(id) {
        known = true;
        let mut mac = key.mac.clone();
        mac.update(signed);
        if mac.verify_slice(tag).is_ok() {
            verified = true;
            break;
        }
    }
    if !known {
        return Err(StateError::UnknownKey);
    }
    if !verified {
        return Err(StateError::BadSignature);
    }
    raw.truncate(raw.len() - TAG_BYTES);
    raw.drain(..HEADER_BYTES);
    Ok(raw)
}

/// The principal, method and digest a state names against the re-sent
/// request's, in that order.
fn check_bindings(
    (state_principal, state_method, state_digest): (Option<&str>, &str, &[u8; 32]),
    principal: Option<&str>,
    method: &str,
    request_digest: &[u8; 32],
) -> Result<(), StateError> {
    if state_principal != principal {
        return Err(StateError::WrongPrincipal);
    }
    if state_method != method {
        return Err(StateError::WrongMethod);
    }
    // Not secret (the client can read the payload): a plain comparison.
    if state_digest != request_digest {
        return Err(StateError::WrongRequest);
    }
    Ok(())
}

/// Why a token was refused or keys were not accepted. No variant carries
/// key material or the token; [`reason`](StateError::reason) is a stable
/// snake_case name for logs and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// The token is longer than [`MAX_TOKEN_CHARS`]; not decoded.
    TooLarge,
    /// Not canonical URL-safe base64 without padding, too short, or a
    /// signed payload that is not strictly the JSON of a state.
    Malformed,
    /// A version byte other than [`STATE_VERSION`].
    UnknownVersion,
    /// No key has the token's key id (a key rotated out, another
    /// instance's generated key, or tampering).
    UnknownKey,
    /// The tag does not verify: the token was changed or forged.
    BadSignature,
    /// The state belongs to another principal (or to none, or the request
    /// has none).
    WrongPrincipal,
    /// The state was issued for another JSON-RPC method.
    WrongMethod,
    /// The state was issued for another tool or other arguments.
    WrongRequest,
    /// A state of answers ([`AnswersState`]) past its expiry (the caller
    /// checks it after [`open_any`]; a confirmation's expiry is the
    /// runtime's to answer).
    Expired,
    /// A key shorter than [`MIN_KEY_BYTES`].
    WeakKey {
        /// The key's length in bytes.
        len: usize,
    },
    /// More than [`MAX_PREVIOUS_KEYS`] previous keys.
    TooManyKeys,
    /// A key string that is not canonical standard base64.
    BadKeyEncoding,
}

impl StateError {
    /// The stable snake_case reason: `too_large`, `malformed`,
    /// `unknown_version`, `unknown_key`, `bad_signature`,
    /// `wrong_principal`, `wrong_method`, `wrong_request`, `expired`, `weak_key`,
    /// `too_many_keys`, `bad_key_encoding`.
    pub fn reason(&self) -> &'static str {
        match self {
            StateError::TooLarge => "too_large",
            StateError::Malformed => "malformed",
            StateError::UnknownVersion => "unknown_version",
            StateError::UnknownKey => "unknown_key",
            StateError::BadSignature => "bad_signature",
            StateError::WrongPrincipal => "wrong_principal",
            StateError::WrongMethod => "wrong_method",
            StateError::WrongRequest => "wrong_request",
            StateError::Expired => "expired",
            StateError::WeakKey { .. } => "weak_key",
            StateError::TooManyKeys => "too_many_keys",
            StateError::BadKeyEncoding => "bad_key_encoding",
        }
    }
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::TooLarge => write!(f, "the request state is longer than {MAX_TOKEN_CHARS} characters"),
            StateError::Malformed => f.write_str("the request state is malformed"),
            StateError::UnknownVersion => f.write_str("the request state has an unknown format version"),
            StateError::UnknownKey => f.write_str("the request state was signed with a key this server does not have"),
            StateError::BadSignature => f.write_str("the request state's signature does not verify"),
            StateError::WrongPrincipal => f.write_str("the request state belongs to another principal"),
            StateError::WrongMethod => f.write_str("the request state was issued for another method"),
            StateError::WrongRequest => f.write_str("the request state was issued for another request"),
            StateError::Expired => f.write_str("the request state has expired (ask again from the start)"),
            StateError::WeakKey { len } => {
                write!(
                    f,
                    "a request-state key must be at least {MIN_KEY_BYTES} bytes, this one has {len}"
                )
            }
            StateError::TooManyKeys => write!(f, "at most {MAX_PREVIOUS_KEYS} previous request-state keys"),
            StateError::BadKeyEncoding => f.write_str("a request-state key is not standard base64"),
        }
    }
}

impl std::error::Error for StateError {}

/// The reasons [`StateCounters`] counts, in the order of its snapshot.
const REFUSALS: [StateError; 9] = [
    StateError::TooLarge,
    StateError::Malformed,
    StateError::UnknownVersion,
    StateError::UnknownKey,
    StateError::BadSignature,
    StateError::WrongPrincipal,
    StateError::WrongMethod,
    StateError::WrongRequest,
    StateError::Expired,
];

/// What the server counts of `requestState` for metrics: tokens sealed,
/// tokens opened, and refusals by [`reason`](StateError::reason).
///
/// Lock-free (relaxed `AtomicU64`s: each counter is exact, a snapshot is
/// not one instant across counters); `Send + Sync`, shared by reference
/// or `Arc`. Counters wrap at 2^64.
#[derive(Debug, Default)]
pub struct StateCounters {
    sealed: AtomicU64,
    opened: AtomicU64,
    refused: [AtomicU64; 9],
}

impl StateCounters {
    /// Counts one token sealed.
    pub fn record_sealed(&self) {
        self.sealed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one token opened (every check of [`open`] passed).
    pub fn record_opened(&self) {
        self.opened.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one refusal of [`open`] under its reason. Key errors
    /// (`weak_key`, `too_many_keys`, `bad_key_encoding`) are configuration
    /// errors, not refusals, and are not counted.
    pub fn record(&self, error: &StateError) {
        if let Some(i) = REFUSALS.iter().position(|r| r == error) {
            self.refused[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counters by name: `("sealed", n)`, `("opened", n)`, then one
    /// pair per refusal reason (`too_large` … `wrong_request`, in the order
    /// of [`open`]'s checks, then `expired`), zeros included.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let mut out = vec![
            ("sealed", self.sealed.load(Ordering::Relaxed)),
            ("opened", self.opened.load(Ordering::Relaxed)),
        ];
        out.extend(
            REFUSALS
                .iter()
                .zip(&self.refused)
                .map(|(r, n)| (r.reason(), n.load(Ordering::Relaxed))),
        );
        out
    }
}

/// What [`ConfirmationStore::consume`] says of a nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumed {
    /// The first use: the state may approve.
    First,
    /// Used before (or possibly used: see
    /// [`ConfirmationStore::consume`]): the caller refuses the state.
    Already,
}

/// Why a [`ConfirmationStore`] could not answer. The caller fails closed:
/// it refuses the state as if it were [`Consumed::Already`] (and may tell
/// the client to retry later).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The store holds as many unexpired nonces as it may.
    Full,
    /// The store's backend failed; the message says how (no nonce, no
    /// token in it).
    Unavailable(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Full => f.write_str("the confirmation store is full of unexpired confirmations"),
            StoreError::Unavailable(why) => write!(f, "the confirmation store is unavailable: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Where the server records used `requestState` nonces, so a state
/// approves at most once (the spec's "single use enforced by the
/// server").
///
/// [`consume`](Self::consume) records `nonce` as used until
/// `expires_at_ms`: the first call for a nonce answers
/// [`Consumed::First`], every later call [`Consumed::Already`], also under
/// concurrency. Entries whose expiry has passed may be dropped: the
/// caller refuses a state past its expiry (as expired) whatever the
/// store says, so forgetting its nonce cannot let it approve twice. A
/// store answers [`Consumed::Already`] for a nonce whose expiry has
/// already passed by the latest clock it has seen (it may have dropped
/// it, so it cannot tell a first use); a caller that checks the expiry
/// before consuming only sees that when clocks race.
///
/// One process uses [`MemoryConfirmationStore`]. A fleet behind a load
/// balancer implements this trait on shared storage, so a state opened on
/// one instance cannot be replayed on another (a Redis `SET nonce 1 NX PX
/// ttl` is the intended second implementation). On
/// [`StoreError::Full`] or [`StoreError::Unavailable`] the caller must
/// fail closed: refuse the state.
///
/// `Send + Sync`: one store is shared by every session and thread.
pub trait ConfirmationStore: Send + Sync {
    /// Records `nonce` as used until `expires_at_ms` (Unix time in
    /// milliseconds), `now_ms` being the caller's clock (same unit).
    ///
    /// # Errors
    ///
    /// [`StoreError::Full`] when the store cannot hold one more unexpired
    /// nonce, [`StoreError::Unavailable`] when its backend fails.
    fn consume(&self, nonce: &[u8; 16], expires_at_ms: i64, now_ms: i64) -> Result<Consumed, StoreError>;
}

/// A bounded in-process [`ConfirmationStore`]: at most `capacity`
/// unexpired nonces (default 65,536).
///
/// A `HashMap` from nonce to expiry plus a min-heap of (expiry, nonce)
/// under one `parking_lot` mutex. Each call first drops the entries whose
/// expiry is at or before the store's clock (the largest `now_ms` it has
/// been given, so a clock that steps back, or a thread with an older
/// reading, cannot revive a dropped nonce); it answers
/// [`StoreError::Full`] only when `capacity` unexpired nonces remain.
/// Cost: O(log n) for the heap push of a new nonce, each entry popped
/// once (amortised O(log n)), O(1) for a repeated nonce; memory about 64
/// bytes per entry.
///
/// Thread-safe: the check and the insert happen under the lock, so two
/// threads never both get [`Consumed::First`] for an unexpired nonce. A
/// store with capacity 0 answers `Full` to every new nonce.
#[derive(Debug)]
pub struct MemoryConfirmationStore {
    capacity: usize,
    inner: Mutex<MemoryInner>,
}

#[derive(Debug, Default)]
struct MemoryInner {
    used: HashMap<[u8; 16], i64>,
    by_expiry: BinaryHeap<Reverse<(i64, [u8; 16])>>,
    clock: i64,
}

impl MemoryConfirmationStore {
    /// The default capacity: 65,536 unexpired nonces (about 4 MiB).
    pub const DEFAULT_CAPACITY: usize = 65_536;

    /// An empty store that holds at most `capacity` unexpired nonces.
    /// Nothing is allocated until nonces arrive.
    pub fn new(capacity: usize) -> MemoryConfirmationStore {
        MemoryConfirmationStore {
            capacity,
            inner: Mutex::new(MemoryInner {
                clock: i64::MIN,
                ..Default::default()
            }),
        }
    }

    /// The nonces held now (unexpired as of the last call, plus any that
    /// expired since).
    pub fn len(&self) -> usize {
        self.inner.lock().used.len()
    }

    /// Whether the store holds no nonce.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for MemoryConfirmationStore {
    fn default() -> Self {
        MemoryConfirmationStore::new(Self::DEFAULT_CAPACITY)
    }
}

impl ConfirmationStore for MemoryConfirmationStore {
    fn consume(&self, nonce: &[u8; 16], expires_at_ms: i64, now_ms: i64) -> Result<Consumed, StoreError> {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        inner.clock = inner.clock.max(now_ms);
        while let Some(Reverse((expiry, n))) = inner.by_expiry.peek().copied() {
            if expiry > inner.clock {
                break;
            }
            inner.by_expiry.pop();
            if inner.used.get(&n) == Some(&expiry) {
                inner.used.remove(&n);
            }
        }
        if inner.used.contains_key(nonce) || expires_at_ms <= inner.clock {
            return Ok(Consumed::Already);
        }
        if inner.used.len() >= self.capacity {
            return Err(StoreError::Full);
        }
        inner.used.insert(*nonce, expires_at_ms);
        inner.by_expiry.push(Reverse((expires_at_ms, *nonce)));
        Ok(Consumed::First)
    }
}
