//! The stateless era of MCP (revision 2026-07-28): what a request carries
//! in its `params._meta` ("Overview", "General fields: `_meta`",
//! "Per-request protocol fields"), the errors the revision defines for it
//! ("Overview", "Error Codes"), and the per-request runtime factory a host
//! may give a session.
//!
//! A request is *modern* when its `_meta` has
//! `io.modelcontextprotocol/protocolVersion` with a value that is not one of
//! the legacy revisions ([`MCP_LEGACY_REVISIONS`]); it is served statelessly,
//! whether or not the session was initialized ("Versioning and
//! Compatibility", "Backward Compatibility with Initialization-Based
//! Versions": "A request carrying modern per-request `_meta` is served
//! statelessly"). Every other request is served by the legacy session as
//! before.

use super::jsonrpc::INVALID_PARAMS;
use super::MCP_LEGACY_REVISIONS;
use rcip::runtime::{LogLevel, Runtime};
use serde_json::{json, Map, Value};

/// The stateless MCP revision the session serves per request.
pub const MCP_MODERN_REVISION: &str = "2026-07-28";

/// `_meta` key of a request's protocol revision (required on modern
/// requests).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a request's client capabilities (required).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client's name and version (optional).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the least severe log level the request wants (optional;
/// without it no `notifications/message` is sent for the request).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the server's name and version in every modern result.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// `HeaderMismatch`: HTTP headers disagree with the body, or a required
/// header is missing or malformed (2026-07-28 "Overview", "Error Codes").
pub const HEADER_MISMATCH: i64 = -32020;
/// `MissingRequiredClientCapability`: the request needs a client capability
/// it did not declare; `data.requiredCapabilities` names it.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// `UnsupportedProtocolVersion`: `data.supported` and `data.requested`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The code a modern request gets when the session already has its maximum
/// of requests in flight. The legacy answer, `-32000`, lies in the range
/// 2026-07-28 tells new implementations not to use ("Error Codes":
/// `-32000` to `-32019`), and `-32020` to `-32099` belong to the
/// specification, so this is an application code outside the JSON-RPC
/// reserved range, as that section recommends (**rcip**).
pub const MODERN_TOO_MANY_IN_FLIGHT: i64 = -31000;

/// `ttlMs` of a modern `tools/list` and `server/discover` result: 0
/// (immediately stale). What `tools/list` offers follows the host's
/// context, bindings and availability, and a modern client has no
/// `notifications/tools/list_changed` from rcip yet, so no freshness is
/// promised ("Caching", "Time-to-live").
pub const MODERN_TTL_MS: u64 = 0;

/// Every revision a session speaks, for `server/discover`'s
/// `supportedVersions` and the `supported` of
/// [`UNSUPPORTED_PROTOCOL_VERSION`]: the modern one, then, when `eras` is
/// [`Eras::Both`], the legacy ones (which need `initialize`).
pub fn supported_versions(eras: Eras) -> Vec<&'static str> {
    let legacy = if eras == Eras::Both { MCP_LEGACY_REVISIONS } else { &[] };
    std::iter::once(MCP_MODERN_REVISION)
        .chain(legacy.iter().copied())
        .collect()
}

/// Which eras of MCP a session (or HTTP server) serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Eras {
    /// Legacy only: `initialize` sessions exactly as before this revision;
    /// `server/discover` and every request's `_meta` are not read as the
    /// modern era (`-32601`), so a dual-era client (the `mcp` Python SDK's
    /// `auto` mode probes `server/discover`) falls back to `initialize`.
    /// For hosts whose clients need what only sessions have in rcip today:
    /// `notifications/tools/list_changed` and elicitation (the confirmation
    /// opt-in, handlers' questions, sampling). docs/MCP.md, "The two eras".
    Legacy,
    /// Dual-era (the default): `initialize` opens a legacy session, a
    /// request with the modern `_meta` is served statelessly ("Versioning
    /// and Compatibility", "Backward Compatibility with
    /// Initialization-Based Versions").
    #[default]
    Both,
    /// Modern only: every request must carry the 2026-07-28 `_meta` (a
    /// request without it, `initialize` included, is `-32602` naming the
    /// version; a legacy revision in `_meta` is `-32022`), `initialize`
    /// opens nothing, and over HTTP `GET` and `DELETE` are `405`
    /// ("Streamable HTTP", "Earlier Streamable HTTP Revisions").
    Modern,
}

/// A JSON-RPC error with optional `data`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl From<(i64, String)> for RpcError {
    fn from((code, message): (i64, String)) -> Self {
        RpcError {
            code,
            message,
            data: None,
        }
    }
}

/// What a modern request declared in its `_meta`.
#[derive(Debug, Clone)]
pub(crate) struct RequestMeta {
    /// The whole `_meta` object, as the client sent it (for the factory).
    pub meta: Map<String, Value>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub capabilities: Map<String, Value>,
    /// `io.modelcontextprotocol/logLevel`, when present.
    pub log_level: Option<LogLevel>,
    /// The headers the transport gave with the request
    /// ([`McpSession::receive_with_headers`](crate::McpSession::receive_with_headers)).
    pub headers: Vec<(String, String)>,
}

/// Reads the era of a request from its params: `None` for a legacy request
/// (no modern protocol version in `_meta`, or a session of
/// [`Eras::Legacy`]), else its checked `_meta` or the
/// error to answer: `-32602` for a required field missing or of the wrong
/// type and for an unknown log level ("Per-request protocol fields";
/// "Logging", "Error Handling"), [`UNSUPPORTED_PROTOCOL_VERSION`] for a
/// revision the session does not serve statelessly ("Versioning and
/// Compatibility", "Protocol Version Negotiation").
pub(crate) fn read_meta(params: Option<&Value>, eras: Eras) -> Option<Result<RequestMeta, RpcError>> {
    if eras == Eras::Legacy {
        return None;
    }
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let Some(version) = meta.and_then(|m| m.get(META_PROTOCOL_VERSION)) else {
        if eras == Eras::Modern {
            // A modern-only server: a request without the modern `_meta`
            // is malformed ("Per-request protocol fields"); the message
            // names the revision for legacy clients, which have no other
            // diagnostic ("Backward Compatibility with Initialization-Based
            // Versions").
            return Some(Err(RpcError {
                code: INVALID_PARAMS,
                message: format!(
                    "Invalid params: this server speaks only MCP {MCP_MODERN_REVISION}: every request needs _meta[\"{META_PROTOCOL_VERSION}\"] and _meta[\"{META_CLIENT_CAPABILITIES}\"]"
                ),
                data: None,
            }));
        }
        return None;
    };
    let meta = meta?;
    let invalid = |message: String| {
        Some(Err(RpcError {
            code: INVALID_PARAMS,
            message,
            data: None,
        }))
    };
    let Some(version) = version.as_str() else {
        return invalid(format!(
            "Invalid params: _meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
        ));
    };
    if eras == Eras::Both && MCP_LEGACY_REVISIONS.contains(&version) {
        // A legacy revision named in `_meta`: the legacy session serves it
        // (it needs `initialize`).
        return None;
    }
    if version != MCP_MODERN_REVISION {
        return Some(Err(RpcError {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: format!(
                "Unsupported protocol version {version:?}: this server supports {}",
                supported_versions(eras).join(", ")
            ),
            data: Some(json!({"supported": supported_versions(eras), "requested": version})),
        }));
    }
    let capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
        Some(Value::Object(c)) => c.clone(),
        Some(_) => {
            return invalid(format!(
                "Invalid params: _meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object"
            ))
        }
        None => {
            return invalid(format!(
                "Invalid params: a {MCP_MODERN_REVISION} request needs _meta[\"{META_CLIENT_CAPABILITIES}\"] (an object; {{}} declares none)"
            ))
        }
    };
    if meta.get(META_CLIENT_INFO).is_some_and(|v| !v.is_object()) {
        return invalid(format!(
            "Invalid params: _meta[\"{META_CLIENT_INFO}\"] must be an object (name, version)"
        ));
    }
    let log_level = match meta.get(META_LOG_LEVEL) {
        None => None,
        Some(v) => match v.as_str().and_then(LogLevel::parse) {
            Some(l) => Some(l),
            None => {
                return invalid(format!(
                    "Invalid params: _meta[\"{META_LOG_LEVEL}\"] must be one of debug, info, notice, warning, error, critical, alert, emergency"
                ))
            }
        },
    };
    Some(Ok(RequestMeta {
        meta: meta.clone(),
        capabilities,
        log_level,
        headers: Vec::new(),
    }))
}

/// What a per-request runtime factory is told about the request it builds
/// a runtime for.
///
/// Borrowed for the duration of [`RequestRuntimes::runtime`] only.
#[derive(Debug, Clone, Copy)]
pub struct RequestSetup<'a> {
    /// The JSON-RPC method (`tools/list`, `tools/call`).
    pub method: &'a str,
    /// The request's whole `params._meta` object as the client sent it
    /// (protocol version, client capabilities, optional client info, log
    /// level, progress token, trace context). Self-reported: MCP says not
    /// to base security decisions on `clientInfo`.
    pub meta: &'a Map<String, Value>,
    /// The headers the host's transport passed with the request
    /// ([`McpSession::receive_with_headers`](crate::McpSession::receive_with_headers),
    /// names as the transport gave them); empty on stdio and through
    /// [`McpSession::receive`](crate::McpSession::receive). rcip's own
    /// HTTP server does not use this factory: its session factory
    /// (`http::SessionFactory`) builds each
    /// stateless request's runtime and sees the forwarded headers there.
    pub headers: &'a [(String, String)],
}

/// Builds a fresh runtime for each stateless (2026-07-28) request that
/// needs one (`tools/list`, `tools/call`), so nothing of one request
/// (context, confirmations, invocation ids, events) is visible to another
/// (**rcip**; MCP 2026-07-28 "Overview", "Statelessness").
///
/// The runtime must be built from the session's catalog (for example with
/// [`RuntimeBuilder::bind`](rcip::runtime::RuntimeBuilder::bind) over the
/// compiled catalog): one of another application, or with other
/// capability ids, answers the request `-32603` (its tools would be listed
/// under names no call reaches). The session owns it for the request and closes it
/// once the response is sent (or the request ends without one: cancelled,
/// or the session closed): a confirmation it opened ends `closed` then.
///
/// Called on a session worker (never on the transport's reading thread
/// when the session has workers), possibly on several at once: it must be
/// thread-safe. An `Err(message)` answers the request with `-32603` and
/// the message. Legacy (`initialize`) sessions never call it.
pub trait RequestRuntimes: Send + Sync {
    /// The runtime for one request.
    fn runtime(&self, request: &RequestSetup<'_>) -> Result<Runtime, String>;

    /// What the session calls: the runtime for one request, in a holder of
    /// the factory's choosing. The default boxes [`runtime`](Self::runtime)'s
    /// runtime. A factory whose runtime must stay at one address while the
    /// request runs (the C ABI's views of a runtime are the address of the
    /// block the host built it in) overrides it. The session closes the
    /// holder's runtime when the request ends, then drops the holder.
    fn request_runtime(&self, request: &RequestSetup<'_>) -> Result<Box<dyn RequestRuntime>, String> {
        self.runtime(request)
            .map(|runtime| Box::new(runtime) as Box<dyn RequestRuntime>)
    }
}

/// One stateless request's runtime as a [`RequestRuntimes`] factory hands
/// it to the session ([`RequestRuntimes::request_runtime`]); a [`Runtime`]
/// is one. The session closes [`runtime`](Self::runtime) when the request
/// ends, then drops the holder, on a session worker or the thread that
/// answers or closes, with no session lock held.
pub trait RequestRuntime: Send + Sync {
    /// The runtime the request runs on.
    fn runtime(&self) -> &Runtime;

    /// Who the request runs for, as the host authenticated it (`None`, the
    /// default: nobody in particular). A stateless confirmation's
    /// `requestState` is bound to it: the retry must run for the same
    /// principal, or the state is refused (**rcip**, docs/MCP.md
    /// "Confirmations without sessions"). Takes precedence over
    /// [`McpSession::set_principal`](crate::McpSession::set_principal).
    /// Called on a session worker, with no session lock held.
    fn principal(&self) -> Option<String> {
        None
    }
}

impl RequestRuntime for Runtime {
    fn runtime(&self) -> &Runtime {
        self
    }
}

impl<F: Fn(&RequestSetup<'_>) -> Result<Runtime, String> + Send + Sync> RequestRuntimes for F {
    fn runtime(&self, request: &RequestSetup<'_>) -> Result<Runtime, String> {
        self(request)
    }
}
