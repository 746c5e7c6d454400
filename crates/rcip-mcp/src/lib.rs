#![warn(missing_docs)]
//! An MCP server session over a runtime's consumer surface: the bridge that
//! lets any Model Context Protocol client (a desktop assistant, an IDE
//! agent, an agent framework) discover and invoke a host's capabilities,
//! without giving up an RCIP guarantee.
//!
//! The session is transport-agnostic: JSON-RPC 2.0 messages go in through
//! [`McpSession::receive`] and replies, requests and notifications come out
//! through an [`McpOutput`]; [`McpSession::serve`] and
//! [`McpSession::serve_stdio`] add the stdio transport (newline-delimited
//! messages). It implements MCP revision 2025-11-25:
//!
//! - lifecycle: `initialize` (the requested revision when it is one of
//!   [`MCP_LEGACY_REVISIONS`], else 2025-11-25; capabilities `{"tools": {"listChanged": true}, "logging":
//!   {}}`), `notifications/initialized`, `ping`, `logging/setLevel`; any
//!   other method, such as `server/discover` without the modern `_meta`,
//!   is `-32601`;
//! - the stateless era (MCP 2026-07-28) beside it, when
//!   [`McpOptions::eras`] is [`Eras::Both`] (the default) or
//!   [`Eras::Modern`] ([`Eras::Legacy`] serves sessions only): a request whose
//!   `params._meta` names protocol version [`MCP_MODERN_REVISION`] is
//!   served from what it carries, with or without `initialize`:
//!   `server/discover`, `tools/list` and `tools/call`, `resultType` and
//!   the server's identity on every result, the caching hints, the
//!   revision's errors (`-32602` for bad `_meta`,
//!   [`UNSUPPORTED_PROTOCOL_VERSION`],
//!   [`MISSING_REQUIRED_CLIENT_CAPABILITY`]), log messages only at the
//!   request's own `logLevel`, and optionally a runtime per request
//!   ([`RequestRuntimes`], [`McpSession::set_request_runtimes`]);
//! - `tools/list` from the current snapshot (one tool per capability: name
//!   = capability id, annotations by effect, `_meta` with the RCIP effect,
//!   scopes, relevance, availability and snapshot revision), optionally
//!   filtered and paginated ([`McpOptions`]);
//! - `tools/call` through [`Client::invoke`](rcip::runtime::Client::invoke)
//!   with the request's own cancellation token (`notifications/cancelled`
//!   cancels it); an unknown tool is `-32602`;
//! - `notifications/tools/list_changed` only when what `tools/list` returns
//!   changes, not on every revision;
//! - a handler's side channel (**rcip**, docs/MCP.md "Progress, logging and
//!   elicitation"): its progress reports become `notifications/progress`
//!   (when the call carried `_meta.progressToken`), its log messages
//!   `notifications/message` (filtered by `logging/setLevel`, `info` by
//!   default), its questions `elicitation/create` (clients that declared
//!   form elicitation; schemas checked against MCP's rules), its sampling
//!   requests `sampling/createMessage` (clients that declared sampling),
//!   each related to the call and queued before its response;
//! - duplicate in-flight request ids are refused, malformed JSON-RPC gets
//!   the standard error codes.
//!
//! Only the consumer surface is used. No MCP method reaches the host
//! controls (binding, context, refresh, confirmation resolution): a
//! `confirmation_required` outcome becomes an error result naming the
//! confirmation and its expiry, which only the host can approve. As a host
//! opt-in ([`ConfirmationMode::Elicit`]) the session asks the MCP client's
//! user through `elicitation/create` and resolves the confirmation with the
//! answer through [`Host::resolve_confirmation`](rcip::runtime::Host::resolve_confirmation);
//! a client that did not declare form elicitation never gets an approval.
//!
//! The mapping is documented in docs/MCP.md.

mod content;
mod elicit;
// Streamable HTTP: its dependencies come with the feature.
#[cfg(feature = "http")]
pub mod http;
mod jsonrpc;
mod modern;
mod outbox;
mod pool;
pub mod server;
mod session;
pub mod state;
mod tools;

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(test)]
mod content_tests;
#[cfg(test)]
mod mrtr_tests;
#[cfg(test)]
mod naming_tests;
#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod tests;

pub use content::{ContentMap, ContentSource};
#[cfg(test)]
use jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
pub use modern::{
    supported_versions, Eras, RequestRuntime, RequestRuntimes, RequestSetup, HEADER_MISMATCH, MCP_MODERN_REVISION,
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION, META_SERVER_INFO,
    MISSING_REQUIRED_CLIENT_CAPABILITY, MODERN_TOO_MANY_IN_FLIGHT, MODERN_TTL_MS, UNSUPPORTED_PROTOCOL_VERSION,
};
pub use pool::WorkerPool;
pub use session::McpSession;
pub use state::{ConfirmationStore, MemoryConfirmationStore, StateKeys};

use rcip::runtime::Filter;
use serde_json::Value;

/// The newest legacy (`initialize`-based) MCP revision the session
/// implements: what `initialize` answers when the client asks for a
/// revision the session does not speak.
pub const MCP_PROTOCOL_REVISION: &str = "2025-11-25";

/// The legacy MCP revisions `initialize` negotiates, newest first. A client
/// that asks for one of them gets it; any other request gets
/// [`MCP_PROTOCOL_REVISION`] (MCP 2025-11-25, "Lifecycle": "If the server
/// supports the requested protocol version, it MUST respond with the same
/// version. Otherwise, [...] the latest version supported by the server").
/// What a session sends depends on the negotiated one: `2025-03-26` has no
/// `outputSchema` on tools, no `structuredContent` on results and no
/// elicitation (docs/MCP.md, "Protocol revisions").
pub const MCP_LEGACY_REVISIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The largest message the session reads, in bytes, unless
/// [`McpOptions::max_message_bytes`] says otherwise (16 MiB: the default
/// payload limit of 8 MiB plus room for the envelope and escapes). The C
/// ABI's `RCIP_MCP_DEFAULT_MAX_MESSAGE_BYTES`.
pub const MCP_DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// What a message the session sends is, so a transport can route it
/// (Streamable HTTP sends a response on the stream of its request).
///
/// `id` and `related` are request id keys: the exact JSON text of a
/// client request's id (`7`, `"abc"`), as [`McpSession::request_key`]
/// computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind<'a> {
    /// The response to the client's request `id`.
    Response {
        /// The request id key.
        id: &'a str,
    },
    /// A request the session sends (`elicitation/create`), on behalf of
    /// the client's request `related` when there is one.
    Request {
        /// The client request it is on behalf of.
        related: Option<&'a str>,
    },
    /// A notification; `related` is the client's request it belongs to
    /// (progress, log messages), `None` for session-wide ones
    /// (`notifications/tools/list_changed`).
    Notification {
        /// The client request it belongs to.
        related: Option<&'a str>,
    },
    /// No message: the client's request `id` ends without a response (it
    /// was cancelled). The message text is empty; a transport that keeps
    /// something per request lets it go.
    Abandoned {
        /// The request id key.
        id: &'a str,
    },
}

/// Receives every message the session sends (responses, requests,
/// notifications), each a complete JSON-RPC message without a trailing
/// newline.
///
/// Called one message at a time (never concurrently), in order, on
/// whichever thread produced or is delivering messages, with no session
/// lock held. It may call [`McpSession::receive`] (that message's replies
/// are delivered after `send` returns).
pub trait McpOutput: Send + Sync {
    /// One message, lent for the call.
    fn send(&self, message: &str);

    /// As [`send`](Self::send), with what the message is; the default
    /// ignores the kind.
    fn send_message(&self, message: &str, kind: MessageKind<'_>) {
        if !matches!(kind, MessageKind::Abandoned { .. }) {
            self.send(message)
        }
    }
}

impl<F: Fn(&str) + Send + Sync> McpOutput for F {
    fn send(&self, message: &str) {
        self(message)
    }
}

/// Who may approve a confirmation a tool call opens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConfirmationMode {
    /// Only the host (its own UI, through its host controller). The MCP
    /// client gets an error result naming the confirmation and its expiry.
    #[default]
    Host,
    /// Host opt-in: ask the MCP client's user with `elicitation/create`
    /// (form mode) and resolve the confirmation with the answer: accept
    /// approves, decline and cancel decline. A client without form
    /// elicitation is answered as in [`ConfirmationMode::Host`].
    Elicit,
}

/// How tools are named (**rcip**, docs/MCP.md "Tool names").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolNames {
    /// The capability id as it is (default).
    #[default]
    Ids,
    /// The capability id with every character outside `[A-Za-z0-9_-]`
    /// replaced by `_`, for clients that accept only such names
    /// (`^[a-zA-Z0-9_-]{1,64}$`).
    Safe,
    /// An explicit name for some capabilities (capability id → tool name);
    /// the others keep their id.
    Map(Vec<(String, String)>),
}

/// The longest tool name the `safe` and map namings allow, in characters.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// Default of [`McpOptions::workers`].
pub const DEFAULT_WORKERS: usize = 2;
/// Default of [`McpOptions::max_in_flight`].
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
/// Default of [`McpOptions::max_queued_messages`].
pub const DEFAULT_MAX_QUEUED_MESSAGES: usize = 256;
/// Default of [`McpOptions::max_pending_confirmations`].
pub const DEFAULT_MAX_PENDING_CONFIRMATIONS: usize = 16;

/// How a session presents the runtime.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpOptions {
    /// Which capabilities `tools/list` offers (an `RcipCapabilityFilter`:
    /// `context: "current"` for the relevant ones, `availableOnly` for the
    /// available ones, `scopeId`, `effect`). Default: all. Calls are not
    /// filtered: the runtime decides, as for any consumer.
    pub filter: Filter,
    /// Who approves confirmations.
    pub confirmation: ConfirmationMode,
    /// Tools per `tools/list` page; `None` (default) lists all at once.
    pub page_size: Option<usize>,
    /// `serverInfo.name` (default: the catalog's application id).
    pub server_name: Option<String>,
    /// `serverInfo.version` (default: the application's version, else
    /// rcip's).
    pub server_version: Option<String>,
    /// `instructions` (default: the application's description).
    pub instructions: Option<String>,
    /// The largest message read, in bytes (default
    /// 16 MiB).
    pub max_message_bytes: Option<usize>,
    /// How tools are named (default: capability ids).
    pub tool_names: ToolNames,
    /// Worker threads that run `tools/call` (validation, policy, handler),
    /// cancellations and confirmation answers, so that the thread that
    /// reads the transport never runs host code (**rcip**). `None`: the
    /// default, [`DEFAULT_WORKERS`]; `Some(0)`: no pool, everything runs on
    /// the thread that calls [`McpSession::receive`] (for hosts that drive
    /// the session from their own threads). A Streamable HTTP server shares
    /// one pool among its sessions.
    pub workers: Option<usize>,
    /// Client requests in flight at once (default
    /// [`DEFAULT_MAX_IN_FLIGHT`]); one more is answered `-32000`, and the
    /// stdio transport stops reading until one is answered.
    pub max_in_flight: Option<usize>,
    /// Outgoing messages that may wait for delivery (default
    /// [`DEFAULT_MAX_QUEUED_MESSAGES`]); beyond it progress and log
    /// notifications are dropped and counted, `list_changed` is coalesced,
    /// responses are always kept, and the stdio transport stops reading.
    pub max_queued_messages: Option<usize>,
    /// Pending confirmations of the session's runtime (default
    /// [`DEFAULT_MAX_PENDING_CONFIRMATIONS`]); a call that would open one
    /// more gets it declined through the host at once (`denied`,
    /// `CONFIRMATION_DECLINED`, **rcip**).
    pub max_pending_confirmations: Option<usize>,
    /// Content blocks from output properties (**rcip**, docs/MCP.md
    /// "Content blocks"): for each capability named, the blocks of its
    /// succeeded results in order; the others get the structured content
    /// as one text block. Checked against the catalog when the session is
    /// created.
    pub content: ContentMap,
    /// Which MCP eras are served: legacy `initialize` sessions only, both
    /// (the default: sessions and stateless 2026-07-28 requests), or
    /// only the stateless one (docs/MCP.md, "The two eras").
    pub eras: Eras,
    /// `ttlMs` of modern `tools/list` and `server/discover` results, in
    /// milliseconds: how long a client may reuse them without asking again
    /// (2026-07-28 "Caching"). `None` (default): [`MODERN_TTL_MS`] (0,
    /// immediately stale), because what `tools/list` offers follows the
    /// host's context, bindings and availability and rcip sends modern
    /// clients no change notification. A host whose tool list is fixed may
    /// promise more (at most [`MAX_TTL_MS`]).
    pub ttl_ms: Option<u64>,
    /// `cacheScope` of modern `tools/list` results (`server/discover` is
    /// always `"public"`: it is the same for every caller). Default
    /// [`CacheScope::Private`].
    pub cache_scope: CacheScope,
    /// How the `requestState` of a confirmation asked statelessly is
    /// protected and kept single-use (**rcip**, docs/MCP.md "Confirmations
    /// without sessions"): the HMAC keys and the store of used states.
    /// Default: keys drawn when the session (or HTTP server) is created and
    /// a store in its memory, right for one instance; a fleet gives every
    /// instance the same keys and a shared store.
    pub request_state: RequestStateOptions,
}

/// The protection of stateless confirmations' `requestState`
/// ([`McpOptions::request_state`], **rcip**): the keys that sign it and the
/// store that makes each one single-use. Cloning shares both (an
/// [`Arc`](std::sync::Arc)); two options are equal when they share the same
/// keys and store, or both leave them to the default.
///
/// Thread-safe (`Send + Sync`). The keys never appear in `Debug` output.
#[derive(Clone, Default)]
pub struct RequestStateOptions {
    /// The HMAC-SHA-256 keys ([`state::StateKeys`]: sign with the current,
    /// verify with it and up to 8 previous). `None`: drawn from the
    /// operating system's CSPRNG when the session or HTTP server is
    /// created, so a state is honoured only by the instance that issued it.
    pub keys: Option<std::sync::Arc<state::StateKeys>>,
    /// Where used states are recorded ([`state::ConfirmationStore`]).
    /// `None`: a [`state::MemoryConfirmationStore`] of the default capacity,
    /// shared by the sessions of one HTTP server.
    pub store: Option<std::sync::Arc<dyn state::ConfirmationStore>>,
    /// Refusals by reason, sealed and opened states: shared by every
    /// session these options were cloned into.
    pub counters: std::sync::Arc<state::StateCounters>,
}

impl std::fmt::Debug for RequestStateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStateOptions")
            .field("keys", &self.keys)
            .field("store", &self.store.as_ref().map(|_| "host store"))
            .finish_non_exhaustive()
    }
}

impl PartialEq for RequestStateOptions {
    fn eq(&self, other: &Self) -> bool {
        let keys = match (&self.keys, &other.keys) {
            (None, None) => true,
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
            _ => false,
        };
        let store = match (&self.store, &other.store) {
            (None, None) => true,
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
            _ => false,
        };
        keys && store
    }
}

impl RequestStateOptions {
    /// These options with the defaults filled in: keys drawn now and a
    /// memory store, so every clone shares them (what a session does when
    /// it is created, and an HTTP server once for all its sessions).
    ///
    /// # Errors
    /// The operating system's random source failed (no keys could be
    /// drawn).
    pub fn resolved(&self) -> Result<RequestStateOptions, String> {
        let keys = match &self.keys {
            Some(k) => k.clone(),
            None => std::sync::Arc::new(state::StateKeys::generate().map_err(|e| e.to_string())?),
        };
        let store = match &self.store {
            Some(s) => s.clone(),
            None => std::sync::Arc::new(state::MemoryConfirmationStore::default()),
        };
        Ok(RequestStateOptions {
            keys: Some(keys),
            store: Some(store),
            counters: self.counters.clone(),
        })
    }
}

/// The largest [`McpOptions::ttl_ms`]: one day, in milliseconds.
pub const MAX_TTL_MS: u64 = 86_400_000;

/// Who may reuse a cached modern `tools/list` result (2026-07-28
/// "Caching", `cacheScope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheScope {
    /// `"private"` (default): only the client that asked, because a
    /// per-request runtime (and so the list) may differ per caller.
    #[default]
    Private,
    /// `"public"`: any client of the server may be given the same list
    /// (for hosts that list the same tools to everyone).
    Public,
}

impl CacheScope {
    /// The wire name: `"private"` or `"public"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Private => "private",
            CacheScope::Public => "public",
        }
    }
}

/// The keys [`McpOptions::from_value`] reads.
pub(crate) const SESSION_OPTION_KEYS: &[&str] = &[
    "filter",
    "confirmation",
    "pageSize",
    "serverName",
    "serverVersion",
    "instructions",
    "maxMessageBytes",
    "toolNames",
    "workers",
    "maxInFlight",
    "maxQueuedMessages",
    "maxPendingConfirmations",
    "content",
    "eras",
    "ttlMs",
    "cacheScope",
    "requestStateKeys",
];

impl McpOptions {
    /// Parses `{"filter"?: RcipCapabilityFilter, "confirmation"?: "host" |
    /// "elicit", "pageSize"?: 1..=1000, "serverName"?: string,
    /// "serverVersion"?: string, "instructions"?: string,
    /// "maxMessageBytes"?: integer >= 1024, "toolNames"?: "ids" | "safe" |
    /// {capability id: tool name}, "workers"?: 0..=64, "maxInFlight"?:
    /// 1..=65536, "maxQueuedMessages"?: 1..=1048576,
    /// "maxPendingConfirmations"?: 1..=65536, "content"?: {capability id:
    /// [{"type": "json" | "text" | "image" | "audio" | "resource",
    /// "property"?: output property}]}, "eras"?: "legacy" | "both" |
    /// "modern", "ttlMs"?: 0..=86400000, "cacheScope"?: "private" |
    /// "public", "requestStateKeys"?: [current, previous...]` (1 to 9
    /// standard-base64 keys of at least 32 bytes each,
    /// [`RequestStateOptions::keys`]). An unknown key or a value of the
    /// wrong type is an error message (never containing a key).
    pub fn from_value(value: &Value) -> Result<McpOptions, String> {
        let Value::Object(map) = value else {
            return Err("the MCP options must be a JSON object".into());
        };
        let mut o = McpOptions::default();
        let string = |key: &str, v: &Value| -> Result<String, String> {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("/{key} must be a string"))
        };
        let count = |key: &str, v: &Value, min: u64, max: u64| -> Result<usize, String> {
            match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(n as usize),
                _ => Err(format!("/{key} must be an integer from {min} to {max}")),
            }
        };
        for (key, v) in map {
            match key.as_str() {
                "filter" => o.filter = Filter::from_value(v).map_err(|e| format!("/filter: {e}"))?,
                "confirmation" => {
                    o.confirmation = match v.as_str() {
                        Some("host") => ConfirmationMode::Host,
                        Some("elicit") => ConfirmationMode::Elicit,
                        _ => return Err("/confirmation must be \"host\" or \"elicit\"".into()),
                    }
                }
                "pageSize" => o.page_size = Some(count(key, v, 1, 1000)?),
                "serverName" => o.server_name = Some(string(key, v)?),
                "serverVersion" => o.server_version = Some(string(key, v)?),
                "instructions" => o.instructions = Some(string(key, v)?),
                "maxMessageBytes" => match v.as_u64() {
                    Some(n) if n >= 1024 => o.max_message_bytes = Some(usize::try_from(n).unwrap_or(usize::MAX)),
                    _ => return Err("/maxMessageBytes must be an integer of at least 1024".into()),
                },
                "toolNames" => {
                    o.tool_names = match v {
                        Value::String(s) if s == "ids" => ToolNames::Ids,
                        Value::String(s) if s == "safe" => ToolNames::Safe,
                        Value::Object(m) => ToolNames::Map(
                            m.iter()
                                .map(|(id, name)| match name.as_str() {
                                    Some(n) => Ok((id.clone(), n.to_string())),
                                    None => Err(format!("/toolNames/{id} must be a string (the tool name)")),
                                })
                                .collect::<Result<_, _>>()?,
                        ),
                        _ => {
                            return Err(
                                "/toolNames must be \"ids\", \"safe\" or an object of capability id to tool name"
                                    .into(),
                            )
                        }
                    }
                }
                "workers" => o.workers = Some(count(key, v, 0, 64)?),
                "maxInFlight" => o.max_in_flight = Some(count(key, v, 1, 65536)?),
                "maxQueuedMessages" => o.max_queued_messages = Some(count(key, v, 1, 1 << 20)?),
                "maxPendingConfirmations" => o.max_pending_confirmations = Some(count(key, v, 1, 65536)?),
                "content" => o.content = content::parse(v)?,
                "eras" => {
                    o.eras = match v.as_str() {
                        Some("legacy") => Eras::Legacy,
                        Some("both") => Eras::Both,
                        Some("modern") => Eras::Modern,
                        _ => return Err("/eras must be \"legacy\", \"both\" or \"modern\"".into()),
                    }
                }
                "ttlMs" => match v.as_u64() {
                    Some(n) if n <= MAX_TTL_MS => o.ttl_ms = Some(n),
                    _ => {
                        return Err(format!(
                            "/ttlMs must be an integer from 0 to {MAX_TTL_MS} (milliseconds)"
                        ))
                    }
                },
                "requestStateKeys" => {
                    let keys: Vec<&str> = match v {
                        Value::Array(items) if (1..=9).contains(&items.len()) => items
                            .iter()
                            .map(Value::as_str)
                            .collect::<Option<_>>()
                            .ok_or("/requestStateKeys must hold strings (standard base64 keys)")?,
                        _ => {
                            return Err("/requestStateKeys must be an array of 1 to 9 base64 keys (the current first, then previous ones)".into())
                        }
                    };
                    let parsed = state::StateKeys::from_base64(keys[0], &keys[1..])
                        .map_err(|e| format!("/requestStateKeys: {e}"))?;
                    o.request_state.keys = Some(std::sync::Arc::new(parsed));
                }
                "cacheScope" => {
                    o.cache_scope = match v.as_str() {
                        Some("private") => CacheScope::Private,
                        Some("public") => CacheScope::Public,
                        _ => return Err("/cacheScope must be \"private\" or \"public\"".into()),
                    }
                }
                other => {
                    return Err(format!(
                        "the MCP options have no field \"{other}\" (allowed: {})",
                        SESSION_OPTION_KEYS.join(", ")
                    ))
                }
            }
        }
        Ok(o)
    }
}

/// The tool name a capability gets under `naming` (before collision
/// checks): the id, the id with unsafe characters replaced, or the mapped
/// name.
pub(crate) fn tool_name_for<'a>(naming: &'a ToolNames, capability_id: &'a str) -> std::borrow::Cow<'a, str> {
    match naming {
        ToolNames::Ids => capability_id.into(),
        ToolNames::Safe => capability_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
            .into(),
        ToolNames::Map(map) => map
            .iter()
            .find(|(id, _)| id == capability_id)
            .map_or(capability_id.into(), |(_, name)| name.as_str().into()),
    }
}
