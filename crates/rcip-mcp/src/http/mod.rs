//! MCP over Streamable HTTP (MCP 2025-11-25, "Transports"): an rcip host
//! as a remote MCP server, with one runtime per MCP session.
//!
//! Built on hyper 1 (HTTP/1.1) and a tokio runtime the server owns (the
//! only async code in the crate). Its I/O threads (`rcip-http-io`) parse
//! HTTP, route messages and write streams; they never run host code (a
//! body over 64 KiB is parsed on one of two blocking threads of the same
//! runtime, so it does not hold up other connections). The
//! session factory, the MCP sessions' `tools/call` work (validation,
//! policy, handlers), cancellations and the ending of sessions run on the
//! server's worker pool (`rcip-mcp-worker`, [`HttpOptions::workers`]).
//!
//! - One endpoint ([`HttpOptions::endpoint`], default `/mcp`): `POST`
//!   carries one client message and is answered as `application/json` or
//!   as a `text/event-stream` ([`ResponseMode`]); notifications and
//!   responses get `202`. `GET` opens the standalone SSE stream
//!   (`notifications/tools/list_changed`, requests not tied to a call) or,
//!   with `Last-Event-ID`, resumes a stream. `DELETE` ends a session.
//! - Sessions: `initialize` without `Mcp-Session-Id` creates one (an id of
//!   128 random bits from the operating system); the [`SessionFactory`]
//!   builds its runtime from the server's catalog. An unknown or ended id
//!   is `404`; a session idle for [`HttpOptions::idle_timeout_ms`] (no open
//!   stream, no request or invocation in flight, no pending confirmation)
//!   ends; at most [`HttpOptions::max_sessions`] live at once (`503`).
//! - `MCP-Protocol-Version`: `2025-03-26` (also when absent), `2025-06-18`
//!   and `2025-11-25` on any session; anything else is `400`.
//! - Stateless requests (MCP 2026-07-28, beside the sessions on the same
//!   endpoint, when the session option `eras` is `both` or `modern`): a
//!   `POST` whose request `_meta` names the modern revision needs no
//!   session. Its `MCP-Protocol-Version`, `Mcp-Method` and (for
//!   `tools/call`) `Mcp-Name` headers must match the body (`400`,
//!   `-32020`); bad `_meta` is `400` (`-32602`, `-32022`), a method the
//!   revision lacks `404` (`-32601`). The [`SessionFactory`] builds a
//!   runtime for the one request (its [`SessionRequest`] has an internal
//!   id, never sent, and the request's `_meta` as `initialize_params`);
//!   it ends when the answer is written, or when the client closes the
//!   response stream (the call is cancelled). `Mcp-Session-Id` and
//!   `Last-Event-ID` are ignored on such requests; SSE answers carry no
//!   priming event. Every SSE response has `X-Accel-Buffering: no`.
//! - Security defaults: bound to loopback unless told otherwise; `Host`
//!   and `Origin` checked against allow-lists (default on loopback: the
//!   localhost names, any port), `403` otherwise (DNS rebinding); bodies
//!   limited ([`HttpOptions::max_body_bytes`], `413`); header and body read
//!   timeouts (slow clients); per-session in-flight requests capped
//!   (`429`); per-stream replay buffers bounded (router.rs).
//! - A dropped stream never cancels a call: its messages wait for the
//!   client to resume with `Last-Event-ID`. Only `notifications/cancelled`,
//!   `DELETE`, idle expiry and shutdown cancel.
//!
//! docs/MCP.md ("Serving over HTTP") has the whole mapping.

mod router;
mod service;

use crate::{McpOptions, McpSession, WorkerPool, SESSION_OPTION_KEYS};
use parking_lot::{Condvar, Mutex};
use rcip::catalog::Catalog;
use rcip::runtime::{Client, Host, Runtime};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The protocol revisions a client may name in `MCP-Protocol-Version` on
/// a request of a session (legacy); a stateless request names
/// [`MCP_MODERN_REVISION`](crate::MCP_MODERN_REVISION), checked against
/// its body.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &["2025-03-26", "2025-06-18", "2025-11-25"];

/// Which requests are answered as an SSE stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResponseMode {
    /// `tools/call` as `text/event-stream` (so progress and elicitation
    /// can flow on it), every other request as `application/json`
    /// (default).
    #[default]
    SseCalls,
    /// Every request (but `initialize`) as `text/event-stream`.
    Sse,
    /// Every request as `application/json`; server requests and
    /// notifications go to the standalone `GET` stream.
    Json,
}

/// Options of a Streamable HTTP server (the MCP session options are in
/// [`HttpOptions::session`]). Defaults are the `DEFAULT_*` constants.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpOptions {
    /// Options of every session (filter, confirmation, tool names, ...).
    pub session: McpOptions,
    /// The endpoint's path (default `/mcp`).
    pub endpoint: String,
    /// Accepted `Host` header names (without port; `*` accepts any).
    /// `None`: the localhost names when bound to loopback, any otherwise.
    pub allowed_hosts: Option<Vec<String>>,
    /// Accepted `Origin` values (`scheme://host[:port]`; `*` accepts any).
    /// `None`: the localhost origins (any port) when bound to loopback,
    /// none otherwise. A request without `Origin` is never refused for it.
    pub allowed_origins: Option<Vec<String>>,
    /// The largest request body, in bytes (default 4 MiB).
    pub max_body_bytes: usize,
    /// Live sessions at once (default 1024).
    pub max_sessions: usize,
    /// A session with nothing going on ends after this long, in
    /// milliseconds (default 600000, ten minutes).
    pub idle_timeout_ms: u64,
    /// Client requests in flight per session (default 64): `429` beyond.
    /// It replaces [`McpOptions::max_in_flight`] of `session`.
    pub max_in_flight: usize,
    /// Events kept per SSE stream for resumption (default 256).
    pub replay_events: usize,
    /// Worker threads shared by all sessions (default 2).
    pub workers: usize,
    /// I/O threads (default 1).
    pub io_threads: usize,
    /// Open connections at once (default 1024); more are closed at once.
    pub max_connections: usize,
    /// Request headers handed to the session factory, by lower-case name
    /// (default none), e.g. `authorization`.
    pub forward_headers: Vec<String>,
    /// The SSE `retry` field, in milliseconds (default 1000).
    pub retry_ms: u64,
    /// Ends the SSE connection of a request still unanswered after this
    /// many milliseconds, so the client polls back with `Last-Event-ID`
    /// (SEP-1699); `None` (default) keeps it open.
    pub poll_after_ms: Option<u64>,
    /// Which requests are answered as SSE.
    pub response_mode: ResponseMode,
    /// Time to read a request's headers, in milliseconds (default 10000).
    pub header_timeout_ms: u64,
    /// Time to read a request's body, in milliseconds (default 30000).
    pub body_timeout_ms: u64,
    /// Live sessions one peer may hold at once (default 256, a quarter
    /// of the default [`max_sessions`](Self::max_sessions)): `503` with
    /// `Retry-After` beyond, so one client cannot take every slot
    /// (**rcip**). A peer is the client's IP address (IPv6: its /64);
    /// behind a reverse proxy every client is the proxy, so raise it to
    /// `max_sessions` there.
    pub max_sessions_per_peer: usize,
    /// Open connections one peer may hold at once (default 256): more are
    /// closed at once (**rcip**).
    pub max_connections_per_peer: usize,
    /// Requests of one peer being handled at once, over all its sessions
    /// and stateless requests (default 256): `429` with `Retry-After`
    /// beyond (**rcip**). A request counts from its headers until its
    /// answer starts (a JSON answer: until it is written; an SSE answer:
    /// until the stream opens).
    pub max_in_flight_per_peer: usize,
    /// A session that got no request after its `initialize` ends after
    /// this long, in milliseconds (default 30000; at most
    /// [`idle_timeout_ms`](Self::idle_timeout_ms)) (**rcip**).
    pub initialize_timeout_ms: u64,
    /// A session whose only activity is an open standalone `GET` stream
    /// counts as idle once no request came for this long, in milliseconds
    /// (default 1800000, thirty minutes; at least
    /// [`idle_timeout_ms`](Self::idle_timeout_ms)); the stream then ends
    /// with the session (**rcip**).
    pub idle_stream_timeout_ms: u64,
    /// The bytes of events a session keeps in its finished call streams
    /// for resumption, together (default 1 MiB): the oldest finished
    /// streams go first; the newest is kept whatever its size, and at most
    /// 64 are kept (**rcip**). Counted as the events' data plus their
    /// bookkeeping.
    pub resumption_bytes: usize,
    /// Serve a connection whose client shut its write side until every
    /// request read from it is answered (default false) (**rcip**). A
    /// read that ends cannot tell a half close from a client that went
    /// away: with false, the end of input drops the request in progress
    /// (a client that pipelines requests and then shuts its write side
    /// loses the last answer), which is what makes closing the connection
    /// of a stateless request cancel its call; with true every answer is
    /// written, and a client that went away is noticed only when its
    /// answer or stream is written (a stateless JSON request is then not
    /// cancelled by a disconnect).
    pub half_close: bool,
}

/// Default of [`HttpOptions::max_body_bytes`] (4 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default of [`HttpOptions::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 1024;
/// Default of [`HttpOptions::idle_timeout_ms`] (ten minutes).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 600_000;
/// Default of [`HttpOptions::replay_events`].
pub const DEFAULT_REPLAY_EVENTS: usize = 256;
/// Default of [`HttpOptions::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default of [`HttpOptions::max_sessions_per_peer`].
pub const DEFAULT_MAX_SESSIONS_PER_PEER: usize = 256;
/// Default of [`HttpOptions::max_connections_per_peer`].
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 256;
/// Default of [`HttpOptions::max_in_flight_per_peer`].
pub const DEFAULT_MAX_IN_FLIGHT_PER_PEER: usize = 256;
/// Default of [`HttpOptions::initialize_timeout_ms`] (30 s).
pub const DEFAULT_INITIALIZE_TIMEOUT_MS: u64 = 30_000;
/// Default of [`HttpOptions::idle_stream_timeout_ms`] (thirty minutes).
pub const DEFAULT_IDLE_STREAM_TIMEOUT_MS: u64 = 1_800_000;
/// Default of [`HttpOptions::resumption_bytes`] (1 MiB).
pub const DEFAULT_RESUMPTION_BYTES: usize = 1024 * 1024;
/// The `Retry-After` of every `503` and `429`, in seconds (**rcip**).
pub const RETRY_AFTER_SECONDS: u64 = 5;
/// Default of [`HttpOptions::retry_ms`].
pub const DEFAULT_RETRY_MS: u64 = 1000;
/// Default shutdown deadline of [`McpHttpServer`]'s drop, in milliseconds.
pub const DEFAULT_SHUTDOWN_MS: u64 = 5000;
/// How long the server keeps an ended session's runtime holder after the
/// session ended, at least, in milliseconds: callbacks of the runtime that
/// were running when it ended may still reach it through the host's own
/// pointers (the C views). It goes then, on a worker, or with the server.
pub const SESSION_RETIRE_MS: u64 = 5000;

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            session: McpOptions::default(),
            endpoint: "/mcp".into(),
            allowed_hosts: None,
            allowed_origins: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            max_in_flight: crate::DEFAULT_MAX_IN_FLIGHT,
            replay_events: DEFAULT_REPLAY_EVENTS,
            workers: crate::DEFAULT_WORKERS,
            io_threads: 1,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            forward_headers: Vec::new(),
            retry_ms: DEFAULT_RETRY_MS,
            poll_after_ms: None,
            response_mode: ResponseMode::SseCalls,
            header_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            max_sessions_per_peer: DEFAULT_MAX_SESSIONS_PER_PEER,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            max_in_flight_per_peer: DEFAULT_MAX_IN_FLIGHT_PER_PEER,
            initialize_timeout_ms: DEFAULT_INITIALIZE_TIMEOUT_MS,
            idle_stream_timeout_ms: DEFAULT_IDLE_STREAM_TIMEOUT_MS,
            resumption_bytes: DEFAULT_RESUMPTION_BYTES,
            half_close: false,
        }
    }
}

impl HttpOptions {
    /// Parses one JSON object holding the session options
    /// ([`McpOptions::from_value`]'s keys) and these: `"endpoint"`: a path
    /// starting with `/`; `"allowedHosts"`, `"allowedOrigins"`,
    /// `"forwardHeaders"`: arrays of strings; `"maxBodyBytes"` (>= 1024),
    /// `"maxSessions"` (>= 1), `"idleTimeoutMs"` (>= 100),
    /// `"replayEvents"` (>= 1), `"ioThreads"` (1..=16), `"maxConnections"`
    /// (>= 1), `"retryMs"`, `"pollAfterMs"`, `"headerTimeoutMs"` (>= 100),
    /// `"bodyTimeoutMs"` (>= 100), `"maxSessionsPerPeer"`,
    /// `"maxConnectionsPerPeer"`, `"maxInFlightPerPeer"` (>= 1),
    /// `"initializeTimeoutMs"`, `"idleStreamTimeoutMs"` (>= 100),
    /// `"resumptionBytes"` (>= 1024): integers; `"halfClose"`: a boolean;
    /// `"responseMode"`:
    /// `"sse-calls"` | `"sse"` | `"json"`. `"workers"` (1..=64) and
    /// `"maxInFlight"` apply to the server's pool and to every session. An
    /// unknown key or a wrong type is an error message naming it.
    pub fn from_value(value: &Value) -> Result<HttpOptions, String> {
        let Value::Object(map) = value else {
            return Err("the server options must be a JSON object".into());
        };
        let mut o = HttpOptions::default();
        let mut session = Map::new();
        let int = |key: &str, v: &Value, min: u64, max: u64| -> Result<u64, String> {
            match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(format!("/{key} must be an integer from {min} to {max}")),
            }
        };
        let strings = |key: &str, v: &Value| -> Result<Vec<String>, String> {
            v.as_array()
                .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect())
                .ok_or_else(|| format!("/{key} must be an array of strings"))
        };
        for (key, v) in map {
            match key.as_str() {
                "endpoint" => match v.as_str() {
                    Some(p) if p.starts_with('/') && !p.contains(['?', '#']) => o.endpoint = p.to_string(),
                    _ => return Err("/endpoint must be a path starting with \"/\"".into()),
                },
                "allowedHosts" => o.allowed_hosts = Some(strings(key, v)?),
                "allowedOrigins" => o.allowed_origins = Some(strings(key, v)?),
                "forwardHeaders" => {
                    o.forward_headers = strings(key, v)?.into_iter().map(|h| h.to_ascii_lowercase()).collect()
                }
                "maxBodyBytes" => o.max_body_bytes = int(key, v, 1024, 1 << 34)? as usize,
                "maxSessions" => o.max_sessions = int(key, v, 1, 1 << 20)? as usize,
                "idleTimeoutMs" => o.idle_timeout_ms = int(key, v, 100, u64::MAX / 2)?,
                "replayEvents" => o.replay_events = int(key, v, 1, 1 << 20)? as usize,
                "ioThreads" => o.io_threads = int(key, v, 1, 16)? as usize,
                "maxConnections" => o.max_connections = int(key, v, 1, 1 << 20)? as usize,
                "retryMs" => o.retry_ms = int(key, v, 0, 3_600_000)?,
                "pollAfterMs" => o.poll_after_ms = Some(int(key, v, 0, 3_600_000)?),
                "headerTimeoutMs" => o.header_timeout_ms = int(key, v, 100, 3_600_000)?,
                "bodyTimeoutMs" => o.body_timeout_ms = int(key, v, 100, 3_600_000)?,
                "maxSessionsPerPeer" => o.max_sessions_per_peer = int(key, v, 1, 1 << 20)? as usize,
                "maxConnectionsPerPeer" => o.max_connections_per_peer = int(key, v, 1, 1 << 20)? as usize,
                "maxInFlightPerPeer" => o.max_in_flight_per_peer = int(key, v, 1, 1 << 20)? as usize,
                "initializeTimeoutMs" => o.initialize_timeout_ms = int(key, v, 100, u64::MAX / 2)?,
                "idleStreamTimeoutMs" => o.idle_stream_timeout_ms = int(key, v, 100, u64::MAX / 2)?,
                "resumptionBytes" => o.resumption_bytes = int(key, v, 1024, 1 << 40)? as usize,
                "halfClose" => o.half_close = v.as_bool().ok_or_else(|| "/halfClose must be a boolean".to_string())?,
                "responseMode" => {
                    o.response_mode = match v.as_str() {
                        Some("sse-calls") => ResponseMode::SseCalls,
                        Some("sse") => ResponseMode::Sse,
                        Some("json") => ResponseMode::Json,
                        _ => return Err("/responseMode must be \"sse-calls\", \"sse\" or \"json\"".into()),
                    }
                }
                "workers" => {
                    o.workers = int(key, v, 1, 64)? as usize;
                }
                "maxInFlight" => o.max_in_flight = int(key, v, 1, 65536)? as usize,
                k if SESSION_OPTION_KEYS.contains(&k) => {
                    session.insert(key.clone(), v.clone());
                }
                other => {
                    return Err(format!(
                        "the server options have no field \"{other}\" (server: endpoint, allowedHosts, \
                         allowedOrigins, forwardHeaders, maxBodyBytes, maxSessions, idleTimeoutMs, replayEvents, \
                         workers, ioThreads, maxConnections, retryMs, pollAfterMs, headerTimeoutMs, bodyTimeoutMs, \
                         responseMode, maxSessionsPerPeer, maxConnectionsPerPeer, maxInFlightPerPeer, \
                         initializeTimeoutMs, idleStreamTimeoutMs, resumptionBytes, halfClose; session: {})",
                        SESSION_OPTION_KEYS.join(", ")
                    ))
                }
            }
        }
        o.session = McpOptions::from_value(&Value::Object(session))?;
        Ok(o)
    }
}

/// What a session's runtime is held by: the runtime, and what happens
/// when the session ends. The server closes the runtime when the session
/// ends (DELETE, idle expiry, shutdown), then calls
/// [`session_ended`](Self::session_ended) once, then drops its reference;
/// the value itself goes when the last reference does (a host thread may
/// still hold one from [`McpHttpServer::session`]: its calls then answer
/// `Closed`).
pub trait SessionRuntime: Send + Sync + 'static {
    /// The session's runtime (built from the server's catalog).
    fn runtime(&self) -> &Runtime;
    /// Called once after the runtime was closed, on a worker thread or the
    /// thread that shuts the server down, with no lock held.
    fn session_ended(&self) {}
    /// Who a stateless request's runtime serves, as the factory
    /// authenticated it from the forwarded headers (`None`, the default:
    /// nobody in particular): the principal its confirmations'
    /// `requestState` is bound to ([`McpSession::set_principal`]). Called
    /// once per stateless request, after the factory built it.
    fn principal(&self) -> Option<String> {
        None
    }
}

impl SessionRuntime for Runtime {
    fn runtime(&self) -> &Runtime {
        self
    }
}

/// What the session factory is told about a new session, or about a
/// stateless (2026-07-28) request that gets a runtime of its own.
#[derive(Debug)]
pub struct SessionRequest<'a> {
    /// The id the session will have. For a stateless request:
    /// `stateless-` and 32 hex digits, an id internal to the server (never
    /// sent to the client, not in [`McpHttpServer::sessions`]); the
    /// runtime lives for that one request.
    pub session_id: &'a str,
    /// The `initialize` request's params (`protocolVersion`,
    /// `capabilities`, `clientInfo`, ...). For a stateless request they are
    /// made from its `_meta`: `{"protocolVersion": "2026-07-28",
    /// "capabilities": <clientCapabilities>, "clientInfo"?: <clientInfo>,
    /// "_meta": <the whole _meta>}`, so [`client_name`](Self::client_name)
    /// works for both.
    pub initialize_params: &'a Value,
    /// The request headers named in [`HttpOptions::forward_headers`] that
    /// the request had, as (lower-case name, value).
    pub headers: &'a [(String, String)],
}

impl SessionRequest<'_> {
    /// `clientInfo.name` of the `initialize` params.
    pub fn client_name(&self) -> Option<&str> {
        self.initialize_params
            .pointer("/clientInfo/name")
            .and_then(Value::as_str)
    }

    /// The value of forwarded header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Builds each session's runtime. Called on a worker thread (never an
/// I/O thread), possibly concurrently with itself, once per `initialize`
/// without a session id. An `Err` answers that `initialize` with `-32603`
/// (the message is included) and creates no session.
pub trait SessionFactory<O>: Send + Sync + 'static {
    /// The session's runtime (or whatever `O` owns it), or the message of
    /// the refusal.
    fn create(&self, request: &SessionRequest<'_>) -> Result<O, String>;
}

impl<O, F> SessionFactory<O> for F
where
    F: Fn(&SessionRequest<'_>) -> Result<O, String> + Send + Sync + 'static,
{
    fn create(&self, request: &SessionRequest<'_>) -> Result<O, String> {
        self(request)
    }
}

/// The longest text the server keeps from a client for the life of a
/// session, in bytes: each of `clientInfo`'s `name`, `version` and
/// `title`, and the proposed protocol version, in [`SessionInfo`]
/// (**rcip**: MCP sets no bound; a client's text must not cost the server
/// memory beyond its request).
pub const CLIENT_TEXT_MAX_BYTES: usize = 256;

/// The `clientInfo` fields kept for a session's life: `name`, `version`
/// and `title` when they are strings, each cut to at most
/// [`CLIENT_TEXT_MAX_BYTES`] (at a character boundary); every other field,
/// and a field of another type, is not kept. `{}` when `info` is absent or
/// not an object.
pub(crate) fn kept_client_info(info: Option<&Value>) -> Value {
    let mut kept = Map::new();
    if let Some(Value::Object(map)) = info {
        for key in ["name", "version", "title"] {
            if let Some(Value::String(text)) = map.get(key) {
                kept.insert(key.into(), Value::String(bounded_text(text).into()));
            }
        }
    }
    Value::Object(kept)
}

/// `text` cut to at most [`CLIENT_TEXT_MAX_BYTES`] at a character
/// boundary.
pub(crate) fn bounded_text(text: &str) -> &str {
    if text.len() <= CLIENT_TEXT_MAX_BYTES {
        return text;
    }
    let mut end = CLIENT_TEXT_MAX_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A live session as the host sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    /// The session id (`Mcp-Session-Id`) the server issued.
    pub session_id: String,
    /// `clientInfo` of its `initialize` as kept for the session's life:
    /// `{"name"?, "version"?, "title"?}`, the fields that were strings,
    /// each at most [`CLIENT_TEXT_MAX_BYTES`] (longer ones cut at a
    /// character boundary); `{}` when absent. The whole `initialize` params
    /// reach only the [`SessionFactory`] ([`SessionRequest`]), during the
    /// call.
    pub client_info: Value,
    /// The protocol revision its client proposed (at most
    /// [`CLIENT_TEXT_MAX_BYTES`], cut like `client_info`'s fields).
    pub protocol_version: String,
    /// Notifications dropped for this session because a queue or a replay
    /// buffer was full.
    pub dropped_notifications: u64,
    /// Content blocks replaced by a text note in this session's results
    /// (**rcip**, [`McpSession::content_replaced`]).
    pub content_replaced: u64,
}

impl SessionInfo {
    /// `{"sessionId", "clientInfo", "protocolVersion",
    /// "droppedNotifications", "contentReplaced"}`.
    pub fn to_value(&self) -> Value {
        serde_json::json!({
            "sessionId": self.session_id,
            "clientInfo": self.client_info,
            "protocolVersion": self.protocol_version,
            "droppedNotifications": self.dropped_notifications,
            "contentReplaced": self.content_replaced,
        })
    }
}

/// One live session.
pub(crate) struct Session<O> {
    info: SessionInfo,
    owner: Arc<O>,
    mcp: McpSession,
    router: Arc<router::Router>,
    ended: AtomicBool,
    /// A request named the session after its `initialize`.
    used: AtomicBool,
    /// The session's place in its peer's count, given back when it ends.
    peer_slot: Mutex<Option<PeerSlot>>,
}

/// What one peer holds: [connections, sessions, requests in flight].
#[derive(Default)]
pub(crate) struct PeerTable {
    counts: Mutex<HashMap<IpAddr, [usize; 3]>>,
}

/// What a [`PeerSlot`] counts.
#[derive(Clone, Copy)]
pub(crate) enum PeerKind {
    Connection = 0,
    Session = 1,
    InFlight = 2,
}

/// One place in a peer's count; given back when dropped.
pub(crate) struct PeerSlot {
    table: Arc<PeerTable>,
    peer: IpAddr,
    kind: PeerKind,
}

/// The peer of an address: the IP address, IPv6 addresses by their /64
/// (one host usually holds a whole /64), IPv4-mapped IPv6 as IPv4.
pub(crate) fn peer_of(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(_) => addr,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl PeerTable {
    /// A place of `kind` for `peer` when it holds fewer than `max`.
    pub(crate) fn acquire(self: &Arc<Self>, peer: IpAddr, kind: PeerKind, max: usize) -> Option<PeerSlot> {
        let mut counts = self.counts.lock();
        let c = counts.entry(peer).or_default();
        if c[kind as usize] >= max {
            if c.iter().all(|n| *n == 0) {
                counts.remove(&peer);
            }
            return None;
        }
        c[kind as usize] += 1;
        Some(PeerSlot {
            table: self.clone(),
            peer,
            kind,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut counts = self.table.counts.lock();
        if let Some(c) = counts.get_mut(&self.peer) {
            c[self.kind as usize] = c[self.kind as usize].saturating_sub(1);
            if c.iter().all(|n| *n == 0) {
                counts.remove(&self.peer);
            }
        }
    }
}

impl<O: SessionRuntime> Session<O> {
    fn touch(&self) {
        self.router.touch();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Bound,
    Running,
    Stopping,
    Stopped,
}

pub(crate) struct ServerInner<O> {
    options: HttpOptions,
    catalog: Catalog,
    factory: Box<dyn SessionFactory<O>>,
    /// Tool calls (validation, policy, handlers) and confirmation answers.
    pool: WorkerPool,
    /// The factory, cancellations, session endings and the reaper: never
    /// queued behind a slow handler.
    control: WorkerPool,
    /// A reaper pass is queued or running.
    reaping: AtomicBool,
    sessions: Mutex<HashMap<String, Arc<Session<O>>>>,
    /// Stateless (2026-07-28) requests being served, each with a runtime
    /// and a one-request MCP session of its own, by internal id.
    stateless: Mutex<HashMap<String, Arc<Session<O>>>>,
    /// Sessions being created (counted against the maximum).
    creating: AtomicUsize,
    connections: AtomicUsize,
    local_addr: SocketAddr,
    listener: Mutex<Option<std::net::TcpListener>>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    phase: Mutex<Phase>,
    phase_changed: Condvar,
    stop: tokio::sync::Notify,
    stopping: AtomicBool,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    /// Ended sessions' runtime holders, with when they ended (kept for
    /// [`SESSION_RETIRE_MS`]).
    retired: Mutex<Vec<(Instant, Arc<O>)>>,
    /// [`HttpOptions::forward_headers`] as header names.
    forward_headers: Vec<hyper::header::HeaderName>,
    /// What each peer holds (the per-peer limits).
    peers: Arc<PeerTable>,
}

/// A Streamable HTTP MCP server. See the [module](self) docs.
///
/// Thread safety: every method may be called from any thread, also
/// concurrently; [`shutdown`](Self::shutdown) must not be called from a
/// host callback of one of its sessions (it waits for them). Dropping the
/// server shuts it down with [`DEFAULT_SHUTDOWN_MS`].
pub struct McpHttpServer<O: SessionRuntime = Runtime> {
    inner: Arc<ServerInner<O>>,
}

impl<O: SessionRuntime> std::fmt::Debug for McpHttpServer<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpServer")
            .field("local_addr", &self.inner.local_addr)
            .finish_non_exhaustive()
    }
}

/// Asks the C allocator to give the pages that ended sessions freed back
/// to the operating system. A server's sessions are spread over several
/// threads, and glibc keeps what each thread's arena freed for reuse, so
/// without this the resident size after a burst of sessions stays near its
/// peak (about 10 MiB above the start after 64 sessions of the desk, see
/// BENCHMARKS.md). Only free memory is released; nothing else changes.
///
/// Why it runs for every host, unasked: `malloc_trim` is thread-safe (glibc
/// locks each arena in turn), touches no live allocation and changes no
/// allocator setting; an allocator interposed in glibc's place either
/// defines `malloc_trim` with the same meaning or leaves glibc's, which
/// then finds its own heap almost empty. Its cost is a walk of glibc's arenas, paid on
/// the control worker (never an I/O thread), at most once per reaper pass
/// (every 25 ms to 1 s) and only when a pass dropped an ended session, so a
/// host's other threads may wait on an arena lock for that walk at most.
///
/// Why it is here and not in `rcip::platform`: it is the only caller, the
/// HTTP server is what ends sessions in bursts, and the core neither needs
/// it nor depends on `libc` (it also builds for `wasm32-unknown-unknown`,
/// and `rcip::platform` is what the core takes from the machine, not a
/// home for services of crates above it).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // Safety: malloc_trim only returns unused pages of the allocator's own
    // heaps to the system; it may be called at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn loopback_hosts() -> Vec<String> {
    vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()]
}

fn loopback_origins() -> Vec<String> {
    let mut v = Vec::new();
    for scheme in ["http", "https"] {
        for host in loopback_hosts() {
            v.push(format!("{scheme}://{host}"));
        }
    }
    v
}

impl<O: SessionRuntime> McpHttpServer<O> {
    /// Binds `address` (for example `127.0.0.1:0`; port 0 picks a free
    /// port, [`local_addr`](Self::local_addr) tells which) and prepares a
    /// server whose sessions `factory` builds over `catalog`. Nothing is
    /// served until [`start`](Self::start) or [`serve`](Self::serve).
    ///
    /// Errors: the address does not parse or cannot be bound; a worker
    /// thread cannot start; the tool naming of `options.session` is invalid
    /// for `catalog` (collisions, lengths, unknown ids; checked here, so a
    /// session cannot fail on it later).
    pub fn bind(
        catalog: &Catalog,
        address: &str,
        mut options: HttpOptions,
        factory: impl SessionFactory<O>,
    ) -> std::io::Result<McpHttpServer<O>> {
        let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
        // One set of request-state keys and one store for every session and
        // stateless request of the server: a retry reaches another
        // request's session.
        options.session.request_state = options
            .session
            .request_state
            .resolved()
            .map_err(|e| std::io::Error::other(format!("the request state keys could not be drawn: {e}")))?;
        let addr: SocketAddr = address.parse().map_err(|_| {
            invalid(format!(
                "\"{address}\" is not an IP address and port (e.g. 127.0.0.1:8080)"
            ))
        })?;
        crate::session::check_tool_names(catalog, &options.session.tool_names).map_err(invalid)?;
        crate::content::check(catalog, &options.session.content).map_err(invalid)?;
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let local_addr = listener.local_addr()?;
        let loopback = local_addr.ip().is_loopback();
        // On loopback: the localhost names and the bound address itself
        // (a 127.0.0.2 bind accepts its own URL).
        let bound = match local_addr.ip() {
            std::net::IpAddr::V4(ip) => ip.to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        };
        let allowed_hosts = options.allowed_hosts.clone().unwrap_or_else(|| {
            if loopback {
                let mut h = loopback_hosts();
                h.push(bound.clone());
                h
            } else {
                vec!["*".into()]
            }
        });
        let allowed_origins = options.allowed_origins.clone().unwrap_or_else(|| {
            if loopback {
                let mut o = loopback_origins();
                o.push(format!("http://{bound}"));
                o.push(format!("https://{bound}"));
                o
            } else {
                Vec::new()
            }
        });
        let forward_headers = options
            .forward_headers
            .iter()
            .map(|h| {
                hyper::header::HeaderName::from_bytes(h.as_bytes())
                    .map_err(|_| invalid(format!("forwardHeaders: \"{h}\" is not a header name")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let pool = WorkerPool::new(options.workers)?;
        let control = WorkerPool::new(1)?;
        Ok(McpHttpServer {
            inner: Arc::new(ServerInner {
                options,
                catalog: catalog.clone(),
                factory: Box::new(factory),
                pool,
                control,
                reaping: AtomicBool::new(false),
                sessions: Mutex::new(HashMap::new()),
                stateless: Mutex::new(HashMap::new()),
                creating: AtomicUsize::new(0),
                connections: AtomicUsize::new(0),
                local_addr,
                listener: Mutex::new(Some(listener)),
                runtime: Mutex::new(None),
                phase: Mutex::new(Phase::Bound),
                phase_changed: Condvar::new(),
                stop: tokio::sync::Notify::new(),
                stopping: AtomicBool::new(false),
                allowed_hosts,
                allowed_origins,
                retired: Mutex::new(Vec::new()),
                forward_headers,
                peers: Arc::default(),
            }),
        })
    }

    /// The server's catalog: build each session's runtime from it, so no
    /// session compiles schemas again.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr
    }

    /// `http://<address><endpoint>`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.inner.local_addr, self.inner.options.endpoint)
    }

    /// Starts serving in the background (the I/O threads). Errors when it
    /// was started before or is shut down.
    pub fn start(&self) -> std::io::Result<()> {
        let mut phase = self.inner.phase.lock();
        if *phase != Phase::Bound {
            return Err(std::io::Error::other("the server was already started"));
        }
        let listener = self
            .inner
            .listener
            .lock()
            .take()
            .ok_or_else(|| std::io::Error::other("the server was already started"))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.inner.options.io_threads)
            .thread_name("rcip-http-io")
            .max_blocking_threads(service::PARSE_THREADS)
            .enable_io()
            .enable_time()
            .build()?;
        let listener = {
            let _enter = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        runtime.spawn(service::accept_loop(self.inner.clone(), listener));
        runtime.spawn(service::reaper(self.inner.clone()));
        *self.inner.runtime.lock() = Some(runtime);
        *phase = Phase::Running;
        self.inner.phase_changed.notify_all();
        Ok(())
    }

    /// Serves on the calling thread until [`shutdown`](Self::shutdown)
    /// (from another thread) has finished. Starts the server if needed.
    pub fn serve(&self) -> std::io::Result<()> {
        if *self.inner.phase.lock() == Phase::Bound {
            self.start()?;
        }
        // Its own reference: the server may be dropped (its shutdown
        // wakes this) while this thread still waits.
        let inner = self.inner.clone();
        let mut phase = inner.phase.lock();
        while *phase != Phase::Stopped {
            inner.phase_changed.wait(&mut phase);
        }
        Ok(())
    }

    /// Shuts down: no new connections or sessions; every session ends (its
    /// runtime closed: pending invocations end `EXECUTION_ABORTED`, pending
    /// confirmations hear `closed`; then its
    /// [`session_ended`](SessionRuntime::session_ended)); open connections
    /// get until `deadline` to finish, then are dropped. Returns when all
    /// of that is done. Idempotent; a second call returns at once.
    pub fn shutdown(&self, deadline: Duration) {
        self.inner.shutdown(deadline);
    }

    /// The live sessions.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        let mut v: Vec<SessionInfo> = self
            .inner
            .sessions
            .lock()
            .values()
            .map(|s| SessionInfo {
                dropped_notifications: s.router.dropped() + s.mcp.dropped_notifications(),
                content_replaced: s.mcp.content_replaced(),
                ..s.info.clone()
            })
            .collect();
        v.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        v
    }

    /// The runtime holder of live session `session_id`, for the host's
    /// controls (an approval UI, a context change). It stays valid after
    /// the session ends (its runtime then answers `Closed`).
    pub fn session(&self, session_id: &str) -> Option<Arc<O>> {
        self.inner.sessions.lock().get(session_id).map(|s| s.owner.clone())
    }

    /// The host view of live session `session_id`'s runtime.
    pub fn session_host(&self, session_id: &str) -> Option<Host> {
        self.session(session_id).map(|o| o.runtime().host())
    }

    /// The consumer view of live session `session_id`'s runtime.
    pub fn session_client(&self, session_id: &str) -> Option<Client> {
        self.session(session_id).map(|o| o.runtime().client())
    }

    /// Ends session `session_id` as a `DELETE` would; false when it is
    /// not live.
    pub fn end_session(&self, session_id: &str) -> bool {
        let session = self.inner.sessions.lock().remove(session_id);
        match session {
            Some(s) => {
                self.inner.end(&s);
                true
            }
            None => false,
        }
    }
}

impl<O: SessionRuntime> Drop for McpHttpServer<O> {
    fn drop(&mut self) {
        self.inner.shutdown(Duration::from_millis(DEFAULT_SHUTDOWN_MS));
    }
}

impl<O: SessionRuntime> ServerInner<O> {
    /// Ends a session removed from the table: no more messages, its calls
    /// cancelled, its runtime closed, then the host told.
    fn end(&self, session: &Arc<Session<O>>) {
        if session.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        // The runtime first: its pending calls end EXECUTION_ABORTED and
        // those outcomes reach the client's streams; then the session and
        // its streams close (what is queued still goes out).
        session.owner.runtime().close();
        session.mcp.close();
        session.router.close();
        session.peer_slot.lock().take();
        session.owner.session_ended();
        self.retired.lock().push((Instant::now(), session.owner.clone()));
    }

    /// Drops the holders of sessions that ended long enough ago (on a
    /// worker: dropping a runtime releases its user data, host code).
    fn drop_retired(&self) {
        let grace = Duration::from_millis(SESSION_RETIRE_MS);
        let now = Instant::now();
        let old: Vec<_> = {
            let mut r = self.retired.lock();
            let (old, keep): (Vec<_>, Vec<_>) = r.drain(..).partition(|(at, _)| now.duration_since(*at) >= grace);
            *r = keep;
            old
        };
        if old.is_empty() {
            return;
        }
        drop(old);
        release_free_memory();
    }

    fn shutdown(&self, deadline: Duration) {
        {
            let mut phase = self.phase.lock();
            match *phase {
                Phase::Stopped => return,
                Phase::Stopping => {
                    while *phase != Phase::Stopped {
                        self.phase_changed.wait(&mut phase);
                    }
                    return;
                }
                Phase::Bound | Phase::Running => *phase = Phase::Stopping,
            }
        }
        self.stopping.store(true, Ordering::SeqCst);
        self.stop.notify_waiters();
        self.listener.lock().take();
        let mut sessions: Vec<_> = self.sessions.lock().drain().map(|(_, s)| s).collect();
        sessions.extend(self.stateless.lock().drain().map(|(_, s)| s));
        for s in &sessions {
            self.end(s);
        }
        // A deadline beyond what the clock holds is no deadline.
        let end = Instant::now()
            .checked_add(deadline)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
        while self.connections.load(Ordering::SeqCst) > 0 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(rt) = self.runtime.lock().take() {
            rt.shutdown_timeout(end.saturating_duration_since(Instant::now()));
        }
        // The workers finish what the endings queued, then end: no library
        // thread runs host code after shutdown returns.
        let left = end
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100));
        self.pool.close_and_wait(left);
        self.control.close_and_wait(left);
        // No worker runs host code any more: the retired holders go now.
        self.retired.lock().clear();
        *self.phase.lock() = Phase::Stopped;
        self.phase_changed.notify_all();
    }
}
