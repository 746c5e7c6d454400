//! MCP over Streamable HTTP (MCP 2025-11-25 and 2026-07-28, "Transports"):
//! an rcip host as a remote MCP server, with one runtime per MCP session
//! and per stateless request.
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
//! - Mountable (**rcip**): [`McpHttpServer::mountable`] opens no listener;
//!   [`McpHttpServer::service`] is an [`McpService`], a hyper and tower
//!   `Service` the host mounts in its own HTTP stack (its TLS,
//!   authentication, routing), answering exactly as the built-in listener.
//!
//! The sessions themselves (factory, limits, endings, idle expiry) are the
//! transport-neutral [`crate::server`] layer's.
//!
//! docs/MCP.md ("Serving over HTTP") has the whole mapping.

pub mod auth;
pub mod ops;
mod router;
mod service;

pub use crate::server::{
    Principal, SessionFactory, SessionInfo, SessionRequest, SessionRuntime, CLIENT_TEXT_MAX_BYTES, SESSION_RETIRE_MS,
};
pub use auth::{AuthOptions, JwksSource, JwtOptions, TokenCheck, TokenRefusal, TokenVerifier};
pub use service::{McpBody, McpFuture, McpService, RequestBody};

use crate::server::{Kind, Registry, RegistryLimits};
use crate::{McpOptions, SESSION_OPTION_KEYS};
use parking_lot::{Condvar, Mutex};
use rcip::catalog::Catalog;
use rcip::runtime::{Client, Host, Runtime};
use serde_json::{Map, Value};
use std::net::SocketAddr;
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
    /// The server as an OAuth 2.1 resource server (MCP "Authorization"):
    /// every request needs a valid access token, checked on its own
    /// ([`auth`] module). `None` (default): no authorization, which
    /// [`bind`](McpHttpServer::bind) accepts only on a loopback address
    /// unless [`allow_unauthenticated`](Self::allow_unauthenticated).
    pub auth: Option<AuthOptions>,
    /// Serve a non-loopback address without [`auth`](Self::auth)
    /// (default false): for a server whose every request is authenticated
    /// by something in front of it (**rcip**).
    pub allow_unauthenticated: bool,
    /// The liveness path (**rcip**, [`ops`]): `GET` answers `200 ok`
    /// (default `/healthz`; `None`: none).
    pub health_path: Option<String>,
    /// The readiness path (**rcip**, [`ops`]): `GET` answers `200 ready`,
    /// or `503` while shutting down or at capacity (default `/readyz`;
    /// `None`: none).
    pub ready_path: Option<String>,
    /// The Prometheus metrics path (**rcip**, [`ops`]; default `None`: no
    /// metrics endpoint).
    pub metrics_path: Option<String>,
    /// An SSE comment (`: keep-alive`) on every open stream after this
    /// many milliseconds without an event (default 15000; 0: none)
    /// (**rcip**): a proxy with a read timeout shorter than a call keeps
    /// its stream open. SSE readers ignore comments.
    pub keep_alive_ms: u64,
    /// Peers whose `X-Forwarded-For` header is believed (default none):
    /// only for them does an [`ops::AccessRecord`] carry it (**rcip**).
    pub trusted_proxies: Vec<std::net::IpAddr>,
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
/// Default of [`HttpOptions::keep_alive_ms`] (15 s).
pub const DEFAULT_KEEP_ALIVE_MS: u64 = 15_000;
/// Default of [`HttpOptions::retry_ms`].
pub const DEFAULT_RETRY_MS: u64 = 1000;
/// Default shutdown deadline of [`McpHttpServer`]'s drop, in milliseconds.
pub const DEFAULT_SHUTDOWN_MS: u64 = 5000;
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
            auth: None,
            allow_unauthenticated: false,
            health_path: Some("/healthz".into()),
            ready_path: Some("/readyz".into()),
            metrics_path: None,
            keep_alive_ms: DEFAULT_KEEP_ALIVE_MS,
            trusted_proxies: Vec::new(),
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
                "keepAliveMs" => o.keep_alive_ms = int(key, v, 0, 3_600_000)?,
                "trustedProxies" => {
                    o.trusted_proxies = strings(key, v)?
                        .iter()
                        .map(|a| {
                            a.parse::<std::net::IpAddr>()
                                .map_err(|_| format!("/trustedProxies: \"{a}\" is not an IP address"))
                        })
                        .collect::<Result<_, _>>()?
                }
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
                "auth" => o.auth = Some(AuthOptions::from_value(v)?),
                "healthPath" | "readyPath" | "metricsPath" => {
                    let path = match v {
                        Value::Null => None,
                        Value::String(p) => Some(p.clone()),
                        _ => return Err(format!("/{key} must be a path or null")),
                    };
                    match key.as_str() {
                        "healthPath" => o.health_path = path,
                        "readyPath" => o.ready_path = path,
                        _ => o.metrics_path = path,
                    }
                }
                "allowUnauthenticated" => {
                    o.allow_unauthenticated = v
                        .as_bool()
                        .ok_or_else(|| "/allowUnauthenticated must be a boolean".to_string())?
                }
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
                         initializeTimeoutMs, idleStreamTimeoutMs, resumptionBytes, halfClose, auth, \
                         allowUnauthenticated, healthPath, readyPath, metricsPath, \
                         keepAliveMs, trustedProxies; session: {})",
                        SESSION_OPTION_KEYS.join(", ")
                    ))
                }
            }
        }
        o.session = McpOptions::from_value(&Value::Object(session))?;
        Ok(o)
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
    /// The sessions and stateless requests, the factory, the workers.
    registry: Registry<O, router::Router>,
    connections: AtomicUsize,
    /// The bound address; `None` for a server mounted in a host's own
    /// HTTP stack ([`McpHttpServer::mountable`]).
    local_addr: Option<SocketAddr>,
    listener: Mutex<Option<std::net::TcpListener>>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    phase: Mutex<Phase>,
    phase_changed: Condvar,
    stop: tokio::sync::Notify,
    stopping: AtomicBool,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    /// [`HttpOptions::forward_headers`] as header names.
    forward_headers: Vec<hyper::header::HeaderName>,
    /// The token check ([`HttpOptions::auth`]).
    auth: Option<auth::Auth>,
    /// The Prometheus metrics ([`ops`]).
    metrics: ops::Metrics,
    /// The access log ([`McpHttpServer::set_access_log`]).
    access: ops::AccessLogger,
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
        options: HttpOptions,
        factory: impl SessionFactory<O>,
    ) -> std::io::Result<McpHttpServer<O>> {
        let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
        let addr: SocketAddr = address.parse().map_err(|_| {
            invalid(format!(
                "\"{address}\" is not an IP address and port (e.g. 127.0.0.1:8080)"
            ))
        })?;
        // Before anything listens: an exposed address needs authorization.
        auth::check_exposure(&options, Some(addr)).map_err(invalid)?;
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let local_addr = listener.local_addr()?;
        Self::build(catalog, Some(listener), Some(local_addr), options, Box::new(factory))
    }

    /// Prepares a server to be mounted in the host's own HTTP stack
    /// (**rcip**): no listener and no I/O threads of its own; the host
    /// routes requests for the endpoint to [`service`](Self::service) from
    /// its own hyper (or tower-based) server, behind its own TLS,
    /// authentication and routing. Everything else is as for
    /// [`bind`](Self::bind): the same checks, sessions, limits and worker
    /// threads. [`HttpOptions::max_connections`], `max_connections_per_peer`,
    /// `io_threads`, `header_timeout_ms` and `half_close` are the host
    /// server's business and unused here.
    ///
    /// `Host` and `Origin` are still checked: with `allowed_hosts` or
    /// `allowed_origins` left `None` only the localhost names (any port)
    /// are accepted, as for a loopback bind. A server reachable under
    /// other names must list them.
    ///
    /// Errors: a worker thread cannot start; the tool naming or content
    /// map of `options.session` is invalid for `catalog`.
    pub fn mountable(
        catalog: &Catalog,
        options: HttpOptions,
        factory: impl SessionFactory<O>,
    ) -> std::io::Result<McpHttpServer<O>> {
        Self::build(catalog, None, None, options, Box::new(factory))
    }

    fn build(
        catalog: &Catalog,
        listener: Option<std::net::TcpListener>,
        local_addr: Option<SocketAddr>,
        mut options: HttpOptions,
        factory: Box<dyn SessionFactory<O>>,
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
        crate::session::check_tool_names(catalog, &options.session.tool_names).map_err(invalid)?;
        crate::content::check(catalog, &options.session.content).map_err(invalid)?;
        auth::check_exposure(&options, local_addr).map_err(invalid)?;
        ops::check_paths(&options).map_err(invalid)?;
        let auth = options.auth.clone().map(auth::Auth::new).transpose().map_err(invalid)?;
        // Mounted, the address is the host's: the localhost defaults.
        let loopback = local_addr.is_none_or(|a| a.ip().is_loopback());
        // On loopback: the localhost names and the bound address itself
        // (a 127.0.0.2 bind accepts its own URL).
        let bound = local_addr.map(|a| match a.ip() {
            std::net::IpAddr::V4(ip) => ip.to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        });
        let allowed_hosts = options.allowed_hosts.clone().unwrap_or_else(|| {
            if loopback {
                let mut h = loopback_hosts();
                h.extend(bound.clone());
                h
            } else {
                vec!["*".into()]
            }
        });
        let allowed_origins = options.allowed_origins.clone().unwrap_or_else(|| {
            if loopback {
                let mut o = loopback_origins();
                if let Some(b) = &bound {
                    o.push(format!("http://{b}"));
                    o.push(format!("https://{b}"));
                }
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
        let registry = Registry::new(
            factory,
            options.session.clone(),
            RegistryLimits {
                max_sessions: options.max_sessions,
                max_sessions_per_peer: options.max_sessions_per_peer,
                max_in_flight: options.max_in_flight,
            },
            options.workers,
        )?;
        Ok(McpHttpServer {
            inner: Arc::new(ServerInner {
                options,
                catalog: catalog.clone(),
                registry,
                connections: AtomicUsize::new(0),
                local_addr,
                listener: Mutex::new(listener),
                runtime: Mutex::new(None),
                phase: Mutex::new(Phase::Bound),
                phase_changed: Condvar::new(),
                stop: tokio::sync::Notify::new(),
                stopping: AtomicBool::new(false),
                allowed_hosts,
                allowed_origins,
                forward_headers,
                auth,
                metrics: ops::Metrics::new(),
                access: ops::AccessLogger::new(),
            }),
        })
    }

    /// The server's catalog: build each session's runtime from it, so no
    /// session compiles schemas again.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The bound address; for a [mounted](Self::mountable) server the
    /// unspecified address `0.0.0.0:0` (the host's server knows its own).
    pub fn local_addr(&self) -> SocketAddr {
        self.inner
            .local_addr
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// `http://<address><endpoint>`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local_addr(), self.inner.options.endpoint)
    }

    /// Starts serving in the background (the I/O threads). Errors when it
    /// was started before, is shut down, or is [mounted](Self::mountable)
    /// (its host serves it).
    pub fn start(&self) -> std::io::Result<()> {
        let mut phase = self.inner.phase.lock();
        if *phase != Phase::Bound {
            return Err(std::io::Error::other("the server was already started"));
        }
        if self.inner.local_addr.is_none() {
            return Err(std::io::Error::other(
                "a mounted server has no listener: the host's HTTP server serves McpHttpServer::service()",
            ));
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

    /// The server as a service for the host's own HTTP stack (**rcip**):
    /// a [`hyper::service::Service`] and a [`tower_service::Service`] over
    /// `http::Request<B>` for any request body `B` (hyper's `Incoming`,
    /// axum's `Body`, ...), answering `http::Response<`[`McpBody`]`>`;
    /// cheap to clone (one per connection is fine). Mount it at
    /// [`HttpOptions::endpoint`] (another path is `404`).
    ///
    /// The peer of a request (for the per-peer limits) is
    /// [`McpService::with_peer`]'s address, else a
    /// [`std::net::SocketAddr`] in the request's extensions, else the
    /// unspecified address (all such requests then count as one peer).
    ///
    /// Must be called within a tokio runtime (the host's): the first call
    /// starts the idle-session reaper on it; the requests' futures also
    /// use tokio's timers. Errors when there is none, or the server was
    /// shut down or serves its own listener.
    pub fn service(&self) -> std::io::Result<McpService<O>> {
        let mut phase = self.inner.phase.lock();
        match *phase {
            Phase::Bound if self.inner.local_addr.is_none() => {
                let handle = tokio::runtime::Handle::try_current().map_err(|_| {
                    std::io::Error::other("McpHttpServer::service must be called within a tokio runtime")
                })?;
                handle.spawn(service::reaper(self.inner.clone()));
                *phase = Phase::Running;
                self.inner.phase_changed.notify_all();
            }
            Phase::Running if self.inner.local_addr.is_none() => {}
            Phase::Bound | Phase::Running => {
                return Err(std::io::Error::other(
                    "this server serves its own listener; McpHttpServer::mountable makes one to mount",
                ))
            }
            Phase::Stopping | Phase::Stopped => return Err(std::io::Error::other("the server was shut down")),
        }
        Ok(McpService {
            inner: self.inner.clone(),
            peer: None,
        })
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
    /// of that is done. Idempotent; a second call returns at once. A
    /// mounted server's requests still in the host's hands are answered
    /// as their sessions ended.
    pub fn shutdown(&self, deadline: Duration) {
        self.inner.shutdown(deadline);
    }

    /// Sets the access log (**rcip**): one [`ops::AccessRecord`] per
    /// answered HTTP request, delivered on a thread of its own
    /// (`rcip-mcp-log`; [`ops::AccessLog`] says how). `None` removes it.
    /// Replacing it lets the earlier log receive what was queued for it.
    /// Errors: the thread cannot start.
    pub fn set_access_log(&self, log: Option<Arc<dyn ops::AccessLog>>) -> std::io::Result<()> {
        self.inner.access.set(log)
    }

    /// Access records dropped because the log's queue was full.
    pub fn access_log_dropped(&self) -> u64 {
        self.inner.access.dropped.load(Ordering::Relaxed)
    }

    /// Gives (or replaces) the host's verifier of opaque access tokens,
    /// for a server whose `auth` options say `"verifier": true` (or that
    /// was made with [`TokenCheck::Verifier`]); checks remembered so far are
    /// dropped. Until one is given, every token is answered `503`.
    /// Errors: the server has no `auth`, or validates JWTs.
    pub fn set_token_verifier(&self, verifier: Arc<dyn TokenVerifier>) -> Result<(), String> {
        match &self.inner.auth {
            Some(a) => a.set_verifier(verifier),
            None => Err("this server has no authorization (HttpOptions::auth)".into()),
        }
    }

    /// Requests refused by the token check so far, by reason (**rcip**):
    /// `missing`, `malformed`, `invalid`, `expired`, `not_yet_valid`,
    /// `audience`, `issuer`, `algorithm`, `signature`, `unknown_key`,
    /// `scope`, `unavailable`. Empty without [`HttpOptions::auth`].
    pub fn auth_refusals(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.inner.auth.as_ref().map(|a| a.refusals()).unwrap_or_default()
    }

    /// Replaces the keys that sign access tokens with those of a JWK Set
    /// (`{"keys": [...]}`), at once and for every later request; tokens
    /// already checked are checked again. Errors when the server has no
    /// JWT authorization or the set does not parse (the keys in use stay).
    pub fn set_jwks(&self, jwks: &str) -> Result<(), String> {
        match &self.inner.auth {
            Some(a) if matches!(a.options.tokens, TokenCheck::Jwt(_)) => a.set_keys(jwks),
            _ => Err("this server does not validate JWT access tokens (HttpOptions::auth)".into()),
        }
    }

    /// Drains, then shuts down (**rcip**; what an orchestrator's SIGTERM
    /// asks for): readiness fails at once (`503 draining`), new sessions
    /// and stateless requests are refused with `503` and `Retry-After` (a
    /// load balancer retries them elsewhere), and the requests already
    /// being answered (calls in flight in the sessions, stateless
    /// requests) get until `deadline` to finish; then
    /// [`shutdown`](Self::shutdown) with what is left of `deadline` (at
    /// least its own 100 ms). Later requests of the live sessions are still
    /// served while it waits. Returns when the server stopped; a second
    /// call waits for the first. Must not be called from a host callback.
    pub fn drain(&self, deadline: Duration) {
        self.inner.registry.drain();
        let end = Instant::now()
            .checked_add(deadline)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
        while self.inner.registry.busy() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.inner.shutdown(
            end.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(100)),
        );
    }

    /// True once [`drain`](Self::drain) or [`shutdown`](Self::shutdown)
    /// began.
    pub fn is_draining(&self) -> bool {
        self.inner.registry.draining() || self.inner.stopping.load(Ordering::SeqCst)
    }

    /// The live sessions.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.inner.registry.infos()
    }

    /// The runtime holder of live session `session_id`, for the host's
    /// controls (an approval UI, a context change). It stays valid after
    /// the session ends (its runtime then answers `Closed`).
    pub fn session(&self, session_id: &str) -> Option<Arc<O>> {
        self.inner.registry.owner(session_id)
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
        match self.inner.registry.remove(Kind::Session, session_id) {
            Some(s) => {
                self.inner.registry.end(&s);
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
        self.registry.end_all();
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
        self.registry.finish(left);
        // The last records are delivered, then the log's thread ends.
        self.access.close();
        *self.phase.lock() = Phase::Stopped;
        self.phase_changed.notify_all();
    }
}
