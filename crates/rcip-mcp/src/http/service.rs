//! The HTTP side: accepting connections, checking each request (origin,
//! host, size, protocol version, session), and handing messages to the
//! sessions. Runs on the I/O threads and never calls host code: the
//! session factory and the ending of sessions go to the worker pool, and
//! the sessions themselves put `tools/call` work there.

use super::router::{parse_event_id, Router, SseBody, STANDALONE};
use super::{ResponseMode, ServerInner, SessionRuntime, RETRY_AFTER_SECONDS, SUPPORTED_PROTOCOL_VERSIONS};
use crate::jsonrpc;
use crate::server::{peer_of, ClientKey, Kind, PeerKind, Principal, Reservation};
use crate::McpSession;
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, ACCEPT, ALLOW, AUTHORIZATION, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE,
    HOST, ORIGIN, RETRY_AFTER, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rcip::json::Limits;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// The body of every response of the server (and of a mounted
/// [`McpService`]): a JSON text or an SSE stream, whose frames never fail.
pub type McpBody = UnsyncBoxBody<Bytes, Infallible>;
type Body = McpBody;

/// One HTTP session's entry in the registry: its router is its link.
type Session<O> = crate::server::Session<O, Router>;

// Header names as values, so a lookup hashes them as they are instead of
// parsing a string into a scratch buffer first.
const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_HEADER: HeaderName = HeaderName::from_static("last-event-id");
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
const ACCEL_BUFFERING_HEADER: HeaderName = HeaderName::from_static("x-accel-buffering");
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

fn empty() -> Body {
    Empty::new().boxed_unsync()
}

fn response(status: StatusCode, content_type: Option<&'static str>, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    if let Some(t) = content_type {
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(t));
    }
    // Every 503 and 429 says when to come back (RFC 9110 section 10.2.3).
    if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS {
        r.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
    }
    r
}

/// An HTTP error with a JSON-RPC error body (id `null`), so clients that
/// read the body learn why.
fn http_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}).to_string();
    response(status, Some("application/json"), full(body))
}

fn json_response(text: String) -> Response<Body> {
    response(StatusCode::OK, Some("application/json"), full(text))
}

fn sse_response(body: SseBody) -> Response<Body> {
    sse_boxed(body.boxed_unsync())
}

fn sse_boxed(body: Body) -> Response<Body> {
    let mut r = response(StatusCode::OK, Some("text/event-stream"), body);
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Reverse proxies (nginx) must not buffer the stream (2026-07-28
    // "Streamable HTTP", "Receiving Messages": SHOULD, for every SSE
    // response; harmless for the legacy revisions).
    r.headers_mut()
        .insert(ACCEL_BUFFERING_HEADER, HeaderValue::from_static("no"));
    r
}

pub(super) async fn accept_loop<O: SessionRuntime>(server: Arc<ServerInner<O>>, listener: tokio::net::TcpListener) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = server.stop.notified() => return,
        };
        if server.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok((stream, peer)) = accepted else {
            // Out of descriptors and the like: try again shortly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        if server.connections.load(Ordering::SeqCst) >= server.options.max_connections {
            drop(stream);
            continue;
        }
        let peer = peer_of(peer.ip());
        let Some(slot) = server.registry.peers.acquire(
            &ClientKey::Peer(peer),
            PeerKind::Connection,
            server.options.max_connections_per_peer,
        ) else {
            drop(stream); // this peer holds maxConnectionsPerPeer already
            continue;
        };
        let _ = stream.set_nodelay(true);
        server.connections.fetch_add(1, Ordering::SeqCst);
        let s = server.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service_server = s.clone();
            let service = hyper::service::service_fn(move |req| {
                let s = service_server.clone();
                async move { Ok::<_, Infallible>(handle_counted(s, req, peer).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_millis(s.options.header_timeout_ms))
                .keep_alive(true)
                // HttpOptions::half_close says what the end of input means.
                .half_close(s.options.half_close)
                .serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                () = s.stop.notified() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.as_mut().await;
                }
            }
            s.connections.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// Ends idle sessions, checking a few times per idle period.
pub(super) async fn reaper<O: SessionRuntime>(server: Arc<ServerInner<O>>) {
    let idle = Duration::from_millis(server.options.idle_timeout_ms);
    // A session with nothing after its initialize goes sooner; one whose
    // only activity is a standalone GET stream goes after its own bound.
    let unused = Duration::from_millis(server.options.initialize_timeout_ms).min(idle);
    let listening = Duration::from_millis(server.options.idle_stream_timeout_ms).max(idle);
    let period = (unused / 4).clamp(Duration::from_millis(25), Duration::from_secs(1));
    loop {
        tokio::select! {
            () = tokio::time::sleep(period) => {}
            () = server.stop.notified() => return,
        }
        if server.registry.reaping.swap(true, Ordering::SeqCst) {
            continue; // the last pass has not run yet
        }
        let s = server.clone();
        // Reading runtime counters is no host code, but ending a session
        // is: the whole pass runs on the control worker.
        server.registry.control.spawn(move || {
            s.registry.reap(idle, unused, listening);
            if let Some(auth) = &s.auth {
                auth.refresh();
            }
            s.registry.reaping.store(false, Ordering::SeqCst);
        });
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The host part of a `Host` header (`[::1]:8080` → `[::1]`).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        // `[v6]` or `[v6]:port`, nothing else after the bracket (anything
        // else is returned whole and matches no allowed name).
        return match host.find(']') {
            Some(i)
                if host[i + 1..].is_empty()
                    || host[i + 1..]
                        .strip_prefix(':')
                        .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())) =>
            {
                &host[..=i]
            }
            _ => host,
        };
    }
    host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    })
}

/// An origin without its port (`http://localhost:3000` →
/// `http://localhost`).
fn origin_without_port(origin: &str) -> &str {
    match origin.find("://") {
        Some(i) => {
            let rest = &origin[i + 3..];
            let host = host_name(rest);
            &origin[..i + 3 + host.len()]
        }
        None => origin,
    }
}

fn allowed(list: &[String], value: &str, base: &str) -> bool {
    list.iter()
        .any(|a| a == "*" || a.eq_ignore_ascii_case(value) || a.eq_ignore_ascii_case(base))
}

fn accepts(headers: &HeaderMap, kind: &str) -> bool {
    match header(headers, &ACCEPT) {
        None => true,
        Some(a) => a.split(',').map(|p| p.split(';').next().unwrap_or("").trim()).any(|t| {
            t.eq_ignore_ascii_case(kind)
                || t == "*/*"
                || t.eq_ignore_ascii_case(&format!("{}/*", kind.split('/').next().unwrap_or("")))
        }),
    }
}

/// [`handle`] with the request's metrics: in flight while handled, then
/// counted by method and status with the time until its answer started.
async fn handle_counted<O: SessionRuntime, B: RequestBody>(
    server: Arc<ServerInner<O>>,
    req: Request<B>,
    peer: std::net::IpAddr,
) -> Response<Body> {
    let started = std::time::Instant::now();
    let method = req.method().clone();
    let metrics = server.clone();
    // What an access record needs of the request, taken before it moves.
    let logging = server.access.active();
    let (path, forwarded_for) = if logging {
        let forwarded = server
            .options
            .trusted_proxies
            .contains(&peer)
            .then(|| header(req.headers(), &X_FORWARDED_FOR).map(super::ops::bounded))
            .flatten();
        (super::ops::bounded(req.uri().path()), forwarded)
    } else {
        (String::new(), None)
    };
    let mut note = Note::default();
    metrics.metrics.in_flight.inc();
    let answer = handle(server, req, peer, &mut note).await;
    metrics.metrics.in_flight.dec();
    let elapsed = started.elapsed();
    metrics
        .metrics
        .answered(&method, answer.status().as_u16(), elapsed.as_secs_f64());
    if logging {
        let time_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .saturating_sub(elapsed.as_millis() as u64);
        metrics.access.push(super::ops::AccessRecord {
            time_ms,
            peer,
            forwarded_for,
            subject: note.subject,
            era: note.era,
            http_method: super::ops::method_label(&method),
            path,
            rpc_method: note.rpc_method,
            tool: note.tool,
            status: answer.status().as_u16(),
            duration_us: elapsed.as_micros() as u64,
        });
    }
    answer
}

/// What a request turned out to be, for its access record.
#[derive(Default)]
struct Note {
    subject: Option<String>,
    era: Option<&'static str>,
    rpc_method: Option<String>,
    tool: Option<String>,
}

/// `GET` of a liveness or readiness path; `None` for any other request.
fn probe<O: SessionRuntime, B>(server: &ServerInner<O>, req: &Request<B>) -> Option<Response<Body>> {
    let path = req.uri().path();
    let o = &server.options;
    let health = o.health_path.as_deref() == Some(path);
    let ready = o.ready_path.as_deref() == Some(path);
    if !health && !ready {
        return None;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = http_error(StatusCode::METHOD_NOT_ALLOWED, -32000, "Method Not Allowed");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Some(r);
    }
    let text = |status: StatusCode, body: &'static str| {
        let mut r = response(status, Some("text/plain; charset=utf-8"), full(body));
        r.headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    };
    if health {
        return Some(text(StatusCode::OK, "ok\n"));
    }
    Some(
        if server.stopping.load(Ordering::SeqCst) || server.registry.stopping() {
            text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
        } else if server.registry.draining() {
            text(StatusCode::SERVICE_UNAVAILABLE, "draining\n")
        } else if server.registry.full() {
            text(StatusCode::SERVICE_UNAVAILABLE, "at capacity (maxSessions)\n")
        } else {
            text(StatusCode::OK, "ready\n")
        },
    )
}

/// `GET` of the metrics path, after the `Host`/`Origin` checks.
fn metrics<O: SessionRuntime>(server: &ServerInner<O>, method: &Method) -> Response<Body> {
    if method != Method::GET {
        let mut r = http_error(StatusCode::METHOD_NOT_ALLOWED, -32000, "Method Not Allowed");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET"));
        return r;
    }
    let (sessions, stateless) = server.registry.counts();
    let m = &server.metrics;
    m.sessions.set(sessions as i64);
    m.stateless.set(stateless as i64);
    let dropped: u64 = server.registry.infos().iter().map(|i| i.dropped_notifications).sum();
    m.dropped_notifications.set(i64::try_from(dropped).unwrap_or(i64::MAX));
    let mut r = response(StatusCode::OK, Some(super::ops::METRICS_CONTENT_TYPE), full(m.text()));
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

async fn handle<O: SessionRuntime, B: RequestBody>(
    server: Arc<ServerInner<O>>,
    req: Request<B>,
    peer: std::net::IpAddr,
    note: &mut Note,
) -> Response<Body> {
    // Held until the answer starts: one peer cannot fill the server with
    // requests (its bodies read, its answers awaited). With
    // authorization, only while the token is checked: then the
    // principal's own count replaces it.
    let Some(mut in_flight) = acquire_in_flight(&server, ClientKey::Peer(peer)) else {
        return too_many_in_flight(&server);
    };
    if let Some(r) = probe(&server, &req) {
        return r;
    }
    let metadata = server
        .auth
        .as_ref()
        .is_some_and(|a| a.is_metadata_path(req.uri().path()));
    let metrics_path = server.options.metrics_path.as_deref() == Some(req.uri().path());
    if req.uri().path() != server.options.endpoint && !metadata && !metrics_path {
        return http_error(
            StatusCode::NOT_FOUND,
            -32000,
            "Not Found: the MCP endpoint is elsewhere",
        );
    }
    let headers = req.headers();
    // RFC 9112 section 3.2: a request with more than one Host is 400. The
    // same for Origin (RFC 6454 gives one value): which of two values a
    // front end checked is unknown, so neither is trusted.
    for (name, shown) in [(&HOST, "Host"), (&ORIGIN, "Origin")] {
        if headers.get_all(name).iter().nth(1).is_some() {
            return http_error(
                StatusCode::BAD_REQUEST,
                -32000,
                &format!("Bad Request: more than one {shown} header"),
            );
        }
    }
    // DNS rebinding: a browser page of another site must not reach a
    // local server, so Host and Origin must be ours.
    if let Some(host) = header(headers, &HOST) {
        if !allowed(&server.allowed_hosts, host, host_name(host)) {
            return http_error(
                StatusCode::FORBIDDEN,
                -32000,
                &format!("Forbidden: Host \"{host}\" is not allowed (allowedHosts)"),
            );
        }
    } else if !server.allowed_hosts.iter().any(|h| h == "*") {
        return http_error(StatusCode::BAD_REQUEST, -32000, "Bad Request: no Host header");
    }
    if let Some(origin) = headers.get(ORIGIN) {
        let text = origin.to_str().unwrap_or("");
        if !allowed(&server.allowed_origins, text, origin_without_port(text)) {
            return http_error(
                StatusCode::FORBIDDEN,
                -32000,
                &format!("Forbidden: Origin \"{text}\" is not allowed (allowedOrigins)"),
            );
        }
    }
    if metadata {
        return protected_resource_metadata(&server, req.method());
    }
    if metrics_path {
        return metrics(&server, req.method());
    }
    // The access token, on every request of either era (MCP
    // "Authorization": "authorization MUST be included in every HTTP
    // request"); a session id is never a credential.
    let principal = match &server.auth {
        None => None,
        Some(auth) => {
            let values: Vec<&[u8]> = headers.get_all(AUTHORIZATION).iter().map(|v| v.as_bytes()).collect();
            let token = match auth.token(&values) {
                Ok(t) => t,
                Err(c) => return challenge(&server, c),
            };
            let checked = if auth.needs_worker() {
                // The host's verifier is host code: on the control worker.
                let (tx, rx) = oneshot::channel();
                let s = server.clone();
                let token = token.to_string();
                server.registry.control.spawn(move || {
                    if let Some(a) = &s.auth {
                        let _ = tx.send(a.verify(&token));
                    }
                });
                match rx.await {
                    Ok(r) => r,
                    Err(_) => {
                        return http_error(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            -32603,
                            "Internal error: the token was not checked",
                        )
                    }
                }
            } else {
                auth.verify(token)
            };
            let principal = match checked {
                Ok(p) => p,
                Err(c) => return challenge(&server, c),
            };
            if let Err(c) = auth.check_scopes(&principal, None) {
                return challenge(&server, c);
            }
            note.subject = Some(super::ops::bounded(&principal.subject));
            // The principal's count replaces the peer's.
            let key = ClientKey::Principal(principal.key().into());
            in_flight = match acquire_in_flight(&server, key) {
                Some(slot) => slot,
                None => return too_many_in_flight(&server),
            };
            Some(principal)
        }
    };
    let _in_flight = in_flight;
    let client = match &principal {
        Some(p) => ClientKey::Principal(p.key().into()),
        None => ClientKey::Peer(peer),
    };
    let eras = server.options.session.eras;
    let modern_get = eras == crate::Eras::Both && header(headers, &VERSION_HEADER) == Some(crate::MCP_MODERN_REVISION);
    if (eras == crate::Eras::Modern || modern_get) && *req.method() != Method::POST {
        // A modern-only server, or a GET or DELETE that names the modern
        // revision on a dual-era one: 2026-07-28 has no standalone stream
        // and no sessions to end ("Streamable HTTP", "Earlier Streamable
        // HTTP Revisions"); a legacy client's GET names its own revision.
        let mut r = http_error(
            StatusCode::METHOD_NOT_ALLOWED,
            jsonrpc::INVALID_REQUEST,
            &format!(
                "Method Not Allowed: MCP {} has no GET stream and no sessions to DELETE; POST each request",
                crate::MCP_MODERN_REVISION
            ),
        );
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    // With the legacy era only: before anything else, as it always was.
    // Serving the modern era, a POST's version header is checked against
    // its body (post): a stateless request has rules of its own.
    if *req.method() != Method::POST || server.options.session.eras == crate::Eras::Legacy {
        if let Some(r) = legacy_version_refusal(headers) {
            return r;
        }
    }
    let caller = Caller { client, principal };
    match *req.method() {
        Method::POST => post(server, req, caller, note).await,
        Method::GET => {
            note.era = Some("legacy");
            get(server, req, &caller)
        }
        Method::DELETE => {
            note.era = Some("legacy");
            delete(server, req, &caller).await
        }
        _ => {
            let mut r = http_error(StatusCode::METHOD_NOT_ALLOWED, -32000, "Method Not Allowed");
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            r
        }
    }
}

/// Who a request is from: the key of its limits, and its principal when
/// the server checks tokens.
struct Caller {
    client: ClientKey,
    principal: Option<Arc<Principal>>,
}

impl Caller {
    /// The principal's key, when the request was authenticated.
    fn principal_key(&self) -> Option<&str> {
        match &self.client {
            ClientKey::Principal(k) if self.principal.is_some() => Some(k),
            _ => None,
        }
    }
}

fn acquire_in_flight<O: SessionRuntime>(server: &ServerInner<O>, key: ClientKey) -> Option<crate::server::PeerSlot> {
    server
        .registry
        .peers
        .acquire(&key, PeerKind::InFlight, server.options.max_in_flight_per_peer)
}

fn too_many_in_flight<O: SessionRuntime>(server: &ServerInner<O>) -> Response<Body> {
    http_error(
        StatusCode::TOO_MANY_REQUESTS,
        -32000,
        &format!(
            "Too Many Requests: this client has {} requests in progress (maxInFlightPerPeer)",
            server.options.max_in_flight_per_peer
        ),
    )
}

/// The answer of a refused token: its status, `WWW-Authenticate` and a
/// JSON-RPC error body.
fn challenge<O: SessionRuntime>(server: &ServerInner<O>, c: super::auth::Challenge) -> Response<Body> {
    if let Some(auth) = &server.auth {
        auth.count_refusal(c.reason);
    }
    server.metrics.refused(c.reason);
    let status = StatusCode::from_u16(c.status).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut r = http_error(status, -32000, &c.message);
    if let Some(v) = c.www_authenticate.and_then(|v| HeaderValue::from_str(&v).ok()) {
        r.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    r
}

/// `GET` of the Protected Resource Metadata document (RFC 9728), which
/// needs no token.
fn protected_resource_metadata<O: SessionRuntime>(server: &ServerInner<O>, method: &Method) -> Response<Body> {
    let Some(auth) = &server.auth else {
        return http_error(StatusCode::NOT_FOUND, -32000, "Not Found");
    };
    if method != Method::GET {
        let mut r = http_error(StatusCode::METHOD_NOT_ALLOWED, -32000, "Method Not Allowed");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET"));
        return r;
    }
    let mut r = json_response(auth.metadata.clone());
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
    r
}

/// The legacy rule for `MCP-Protocol-Version`: absent (`2025-03-26`) or
/// one of [`SUPPORTED_PROTOCOL_VERSIONS`], else `400`.
fn legacy_version_refusal(headers: &HeaderMap) -> Option<Response<Body>> {
    let text = headers.get(&VERSION_HEADER)?.to_str().unwrap_or("");
    if SUPPORTED_PROTOCOL_VERSIONS.contains(&text) {
        return None;
    }
    Some(http_error(
        StatusCode::BAD_REQUEST,
        -32000,
        &format!(
            "Bad Request: unsupported MCP-Protocol-Version \"{text}\" (supported: {})",
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        ),
    ))
}

enum Found<O> {
    Session(Arc<Session<O>>),
    Missing(Response<Body>),
}

fn find_session<O: SessionRuntime>(server: &ServerInner<O>, headers: &HeaderMap, caller: &Caller) -> Found<O> {
    match header(headers, &SESSION_HEADER) {
        None => Found::Missing(http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: no Mcp-Session-Id header (send initialize first)",
        )),
        Some(id) => match server.registry.find(id, caller.principal_key()) {
            Some(s) => Found::Session(s),
            None => Found::Missing(http_error(
                StatusCode::NOT_FOUND,
                -32001,
                "Session not found: it ended or never existed; initialize a new one",
            )),
        },
    }
}

async fn read_body<B: RequestBody>(
    server: &ServerInner<impl SessionRuntime>,
    body: B,
) -> Result<Bytes, Response<Body>> {
    let mut body = Box::pin(body);
    let limit = server.options.max_body_bytes;
    let timeout = Duration::from_millis(server.options.body_timeout_ms);
    let mut buf = bytes::BytesMut::new();
    // Err(true): over the limit; Err(false): the body could not be read.
    let read = async {
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return Err(false) };
            if let Ok(data) = frame.into_data() {
                if buf.len() + bytes::Buf::remaining(&data) > limit {
                    return Err(true);
                }
                bytes::BufMut::put(&mut buf, data);
            }
        }
        Ok(())
    };
    let outcome = tokio::time::timeout(timeout, read).await;
    match outcome {
        Err(_) => Err(http_error(
            StatusCode::REQUEST_TIMEOUT,
            -32000,
            "Request Timeout: the body did not arrive in time",
        )),
        Ok(Err(true)) => {
            // The rest is read and dropped, as for a refused Content-Length.
            tokio::spawn(discard_body(body, DISCARD_MAX_BYTES, timeout));
            Err(http_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32000,
                &format!("Payload Too Large: the body exceeds {limit} bytes (maxBodyBytes)"),
            ))
        }
        Ok(Err(false)) => Err(http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: the body could not be read",
        )),
        Ok(Ok(())) => Ok(buf.freeze()),
    }
}

/// The most of a refused body (`413`) read and dropped, in bytes.
const DISCARD_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Reads and drops up to `max` bytes of `body` within `timeout`; nothing
/// is kept. Dropping the body beyond that closes the connection.
async fn discard_body<B: RequestBody>(mut body: std::pin::Pin<Box<B>>, max: u64, timeout: Duration) {
    let read = async {
        let mut seen = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, |d| bytes::Buf::remaining(d) as u64);
            if seen > max {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(timeout, read).await;
}

/// Bodies up to this many bytes are parsed on the I/O thread; larger
/// ones on a blocking thread of the runtime.
const PARSE_INLINE_BYTES: usize = 64 * 1024;

/// The blocking threads that parse large bodies, at most.
pub(super) const PARSE_THREADS: usize = 2;

/// Parses and classifies one POSTed message, as the session would: the
/// message, or the JSON-RPC error code and message of its `400` (a parse
/// error, not an object, a duplicate envelope key, an invalid message).
fn decode(bytes: &[u8], limits: &Limits) -> Result<jsonrpc::Incoming, (i64, String)> {
    let message = rcip::json::parse_bytes_exact(bytes, limits).map_err(|e| (-32700, format!("Parse error: {e}")))?;
    if !message.is_object() {
        return Err((
            -32600,
            "Invalid Request: POST one JSON-RPC message (an object); batches are not part of MCP".into(),
        ));
    }
    // A key twice in the envelope or its params: refused, not last-wins
    // (jsonrpc::duplicate_key_error says why -32600).
    if let Some(key) = jsonrpc::duplicate_envelope_key(bytes) {
        if let jsonrpc::Incoming::Invalid { code, message, .. } = jsonrpc::duplicate_key_error(&key) {
            return Err((code, message));
        }
    }
    // Classified once, as the session classifies: what it would refuse
    // is refused here with an HTTP error (MCP: input the server cannot
    // accept is an HTTP error), and nothing is routed, kept or created.
    match jsonrpc::classify_value(message) {
        jsonrpc::Incoming::Invalid { code, message, .. } => Err((code, message)),
        jsonrpc::Incoming::Ignored => Err((
            -32600,
            "Invalid Request: a response needs an id and a result or an error object".into(),
        )),
        other => Ok(other),
    }
}

async fn post<O: SessionRuntime, B: RequestBody>(
    server: Arc<ServerInner<O>>,
    req: Request<B>,
    caller: Caller,
    note: &mut Note,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let headers = parts.headers;
    let content_type = header(&headers, &CONTENT_TYPE).unwrap_or("");
    if !content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
    {
        return http_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32000,
            "Unsupported Media Type: POST a JSON-RPC message as application/json",
        );
    }
    let json_ok = accepts(&headers, "application/json");
    let sse_ok = accepts(&headers, "text/event-stream");
    if !json_ok && !sse_ok {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: the client must accept application/json or text/event-stream",
        );
    }
    let declared = header(&headers, &CONTENT_LENGTH).and_then(|l| l.parse::<u64>().ok());
    // Decided from the headers, before the body is read: serving only
    // sessions, a request naming a session that does not exist is 404
    // whatever its body (a modern request would ignore the header, so
    // not when that era is served). The body is dropped as for a 413.
    if server.options.session.eras == crate::Eras::Legacy {
        if let Some(id) = header(&headers, &SESSION_HEADER) {
            if !server.registry.contains(id, caller.principal_key()) {
                tokio::spawn(discard_body(
                    Box::pin(body),
                    declared.unwrap_or(DISCARD_MAX_BYTES).min(DISCARD_MAX_BYTES),
                    Duration::from_millis(server.options.body_timeout_ms),
                ));
                return http_error(
                    StatusCode::NOT_FOUND,
                    -32001,
                    "Session not found: it ended or never existed; initialize a new one",
                );
            }
        }
    }
    if let Some(len) = declared {
        if len > server.options.max_body_bytes as u64 {
            // Answered before the body is read; the body is still read
            // (and dropped) in the background, within bounds, so the
            // client, still sending, gets the 413 instead of a reset (a
            // socket closed with unread input sends RST, and the client's
            // system may then discard the answer before it is read).
            tokio::spawn(discard_body(
                Box::pin(body),
                len.min(DISCARD_MAX_BYTES),
                Duration::from_millis(server.options.body_timeout_ms),
            ));
            return http_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32000,
                &format!(
                    "Payload Too Large: the body exceeds {} bytes (maxBodyBytes)",
                    server.options.max_body_bytes
                ),
            );
        }
    }
    let bytes = match read_body(&server, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let limits = Limits {
        max_bytes: server.options.max_body_bytes,
        max_depth: crate::session::MESSAGE_MAX_DEPTH,
    };
    // A large body is parsed on a blocking thread of the runtime, not on
    // an I/O thread: the other connections' requests are not held up
    // behind its parse (at most PARSE_THREADS at once, the rest queue).
    let decoded = if bytes.len() > PARSE_INLINE_BYTES {
        match tokio::task::spawn_blocking(move || decode(&bytes, &limits)).await {
            Ok(d) => d,
            Err(_) => Err((-32603, "Internal error: the body could not be parsed".to_string())),
        }
    } else {
        decode(&bytes, &limits)
    };
    let incoming = match decoded {
        Ok(i) => i,
        Err((code, message)) => return http_error(StatusCode::BAD_REQUEST, code, &message),
    };
    let (id, method) = match &incoming {
        jsonrpc::Incoming::Request { id, method, .. } => (Some(id.clone()), Some(method.clone())),
        _ => (None, None),
    };
    let is_request = id.is_some();
    if let jsonrpc::Incoming::Request { method, params, .. } | jsonrpc::Incoming::Notification { method, params } =
        &incoming
    {
        note.rpc_method = Some(super::ops::bounded(method));
        if method == "tools/call" {
            note.tool = params
                .as_ref()
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .map(super::ops::bounded);
        }
        let modern = server.options.session.eras == crate::Eras::Modern
            || (server.options.session.eras == crate::Eras::Both && is_modern(&headers, params.as_ref()));
        note.era = Some(if modern { "stateless" } else { "legacy" });
    }
    // The scopes a tool needs beyond every request's (403 naming them all).
    if let (Some(auth), Some(principal), jsonrpc::Incoming::Request { method, params, .. }) =
        (&server.auth, &caller.principal, &incoming)
    {
        if method == "tools/call" {
            let tool = params.as_ref().and_then(|p| p.get("name")).and_then(Value::as_str);
            if let Err(c) = auth.check_scopes(principal, tool) {
                return challenge(&server, c);
            }
        }
    }
    let modern_only = server.options.session.eras == crate::Eras::Modern;
    let modern_notification = match &incoming {
        jsonrpc::Incoming::Notification { params, .. } => {
            server.options.session.eras == crate::Eras::Both && is_modern(&headers, params.as_ref())
        }
        _ => false,
    };
    if (modern_only && !is_request) || modern_notification {
        // 2026-07-28 has no client notifications (or responses) over
        // Streamable HTTP ("Sending Messages"; closing the stream is the
        // cancellation): one that cannot be accepted is an HTTP error.
        return http_error(
            StatusCode::BAD_REQUEST,
            jsonrpc::INVALID_REQUEST,
            &format!(
                "Invalid Request: MCP {} has no client notifications or responses over HTTP (close a request's response stream to cancel it)",
                crate::MCP_MODERN_REVISION
            ),
        );
    }
    if let jsonrpc::Incoming::Request { id, method, params } = &incoming {
        let eras = server.options.session.eras;
        if modern_only || (eras == crate::Eras::Both && is_modern(&headers, params.as_ref())) {
            // Stateless (2026-07-28): no session; an Mcp-Session-Id or
            // Last-Event-ID header is ignored ("Streamable HTTP",
            // "Earlier Streamable HTTP Revisions").
            if let Err(r) = check_modern(&headers, id, method, params.as_ref(), eras) {
                return *r;
            }
            let use_sse = sse_ok
                && match server.options.response_mode {
                    ResponseMode::Sse => true,
                    ResponseMode::SseCalls => method == "tools/call" || !json_ok,
                    ResponseMode::Json => !json_ok,
                };
            return stateless(server, &headers, incoming, use_sse, &caller).await;
        }
    }
    if let Some(r) = legacy_version_refusal(&headers) {
        return r;
    }
    if method.as_deref() == Some("initialize") && header(&headers, &SESSION_HEADER).is_none() {
        return initialize(server, &headers, incoming, &caller).await;
    }
    let session = match find_session(&server, &headers, &caller) {
        Found::Session(s) => s,
        Found::Missing(r) => return r,
    };
    session.touch();
    if !is_request {
        // A notification or a response (to our elicitation): nothing
        // comes back on this POST.
        session.mcp.receive_incoming(incoming);
        return response(StatusCode::ACCEPTED, None, empty());
    }
    if session.mcp.in_flight() >= session.mcp.max_in_flight() {
        return http_error(
            StatusCode::TOO_MANY_REQUESTS,
            crate::session::TOO_MANY_IN_FLIGHT,
            &format!(
                "Too Many Requests: this session answers at most {} requests at once (maxInFlight)",
                session.mcp.max_in_flight()
            ),
        );
    }
    let key = McpSession::request_key(id.as_ref().unwrap_or(&Value::Null));
    let in_flight = || {
        json_response(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600,
                "message": format!("Invalid Request: request id {key} is already in flight")}})
            .to_string(),
        )
    };
    let use_sse = sse_ok
        && match server.options.response_mode {
            ResponseMode::Sse => true,
            ResponseMode::SseCalls => method.as_deref() == Some("tools/call") || !json_ok,
            ResponseMode::Json => !json_ok,
        };
    if use_sse {
        let Some(sid) = session.link.open_stream(key.clone()) else {
            return in_flight();
        };
        let Some(body) = session.link.attach(sid, Some(0)) else {
            return ended();
        };
        session.mcp.receive_incoming(incoming);
        if let Some(ms) = server.options.poll_after_ms {
            let router = session.link.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                router.request_close(sid);
            });
        }
        return sse_response(
            body.with_retry(server.options.retry_ms)
                .with_keep_alive(server.options.keep_alive_ms),
        );
    }
    let Some(rx) = session.link.route_json(key.clone()) else {
        return in_flight();
    };
    session.mcp.receive_incoming(incoming);
    match rx.await {
        Ok(Some(text)) => json_response(text),
        // Cancelled (notifications/cancelled): no response is due.
        Ok(None) => response(StatusCode::ACCEPTED, None, empty()),
        Err(_) => ended(),
    }
}

/// A request of the stateless era: its `_meta` names a protocol version
/// that is not a legacy one, or (without one) its `MCP-Protocol-Version`
/// header names the modern revision.
fn is_modern(headers: &HeaderMap, params: Option<&Value>) -> bool {
    let body = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(crate::META_PROTOCOL_VERSION));
    match body {
        Some(v) => !v.as_str().is_some_and(|v| crate::MCP_LEGACY_REVISIONS.contains(&v)),
        None => header(headers, &VERSION_HEADER) == Some(crate::MCP_MODERN_REVISION),
    }
}

/// A modern error response (JSON-RPC error with the request's id) with an
/// HTTP status.
fn modern_error(status: StatusCode, id: &Value, code: i64, message: &str, data: Option<Value>) -> Box<Response<Body>> {
    let mut error = json!({"code": code, "message": message});
    if let Some(d) = data {
        error["data"] = d;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string();
    Box::new(response(status, Some("application/json"), full(body)))
}

/// The checks of a modern request before anything is created: its `_meta`
/// (`-32602`, `-32022`: 400, "Overview", "Per-request protocol fields"),
/// the headers mirrored from the body (`-32020` HeaderMismatch: 400,
/// "Streamable HTTP", "Protocol Version Header", "Standard Request
/// Headers", "Server Validation"), and the method (`-32601`: 404,
/// "Protocol Version Header").
fn check_modern(
    headers: &HeaderMap,
    id: &Value,
    method: &str,
    params: Option<&Value>,
    eras: crate::Eras,
) -> Result<(), Box<Response<Body>>> {
    let bad = StatusCode::BAD_REQUEST;
    let body_version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(crate::META_PROTOCOL_VERSION));
    let Some(body_version) = body_version else {
        return Err(modern_error(
            bad,
            id,
            jsonrpc::INVALID_PARAMS,
            &format!(
                "Invalid params: a {} request needs _meta[\"{}\"]",
                crate::MCP_MODERN_REVISION,
                crate::META_PROTOCOL_VERSION
            ),
            None,
        ));
    };
    let mismatch = |what: String| {
        Err(modern_error(
            bad,
            id,
            crate::HEADER_MISMATCH,
            &format!("Header mismatch: {what}"),
            None,
        ))
    };
    match header(headers, &VERSION_HEADER) {
        None => return mismatch("the MCP-Protocol-Version header is missing".into()),
        Some(h) if Some(h) != body_version.as_str() => {
            return mismatch(format!(
                "MCP-Protocol-Version header value '{h}' does not match body value {body_version}"
            ))
        }
        Some(_) => {}
    }
    match header(headers, &METHOD_HEADER) {
        None => return mismatch("the Mcp-Method header is missing".into()),
        Some(h) if h != method => {
            return mismatch(format!(
                "Mcp-Method header value '{h}' does not match body value '{method}'"
            ))
        }
        Some(_) => {}
    }
    if method == "tools/call" {
        let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
        match (
            headers.get(&NAME_HEADER).map(|v| decode_header_value(v.as_bytes())),
            name,
        ) {
            (None, _) => return mismatch("the Mcp-Name header is missing".into()),
            (Some(None), _) => return mismatch("the Mcp-Name header value is not valid".into()),
            (Some(Some(h)), Some(n)) if h != n => {
                return mismatch(format!("Mcp-Name header value '{h}' does not match body value '{n}'"))
            }
            (Some(Some(_)), _) => {}
        }
    }
    if let Some(Err(e)) = crate::modern::read_meta(params, eras) {
        return Err(modern_error(bad, id, e.code, &e.message, e.data));
    }
    if !matches!(method, "server/discover" | "tools/list" | "tools/call") {
        return Err(modern_error(
            StatusCode::NOT_FOUND,
            id,
            jsonrpc::METHOD_NOT_FOUND,
            &format!("Method not found: {method} (MCP {})", crate::MCP_MODERN_REVISION),
            None,
        ));
    }
    Ok(())
}

/// A mirrored header value as text: plain visible ASCII, or the Base64
/// sentinel `=?base64?<standard base64 of UTF-8>?=` ("Streamable HTTP",
/// "Value Encoding"); `None` when it is neither.
fn decode_header_value(bytes: &[u8]) -> Option<String> {
    use base64::Engine as _;
    let text = std::str::from_utf8(bytes).ok()?;
    if let Some(inner) = text.strip_prefix("=?base64?").and_then(|t| t.strip_suffix("?=")) {
        let decoded = base64::engine::general_purpose::STANDARD.decode(inner).ok()?;
        return String::from_utf8(decoded).ok();
    }
    text.bytes()
        .all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic())
        .then(|| text.to_string())
}

/// Ends a stateless request's session (its runtime first, so a pending
/// call is aborted and its handler's token cancelled) when the response
/// is done or its stream or connection went away: closing the response
/// stream is the cancellation of the request (2026-07-28 "Cancellation",
/// "Transport-Specific Cancellation").
struct StatelessGuard<O: SessionRuntime> {
    server: Arc<ServerInner<O>>,
    session: Arc<Session<O>>,
}

impl<O: SessionRuntime> Drop for StatelessGuard<O> {
    fn drop(&mut self) {
        let removed = self
            .server
            .registry
            .remove(Kind::Stateless, &self.session.info.session_id);
        if let Some(session) = removed {
            let server = self.server.clone();
            // The session first: a call still in flight has its token
            // cancelled (the handler learns the client went away) and gets
            // no answer; then the runtime closes. Host code: on a worker.
            self.server.registry.control.spawn(move || {
                session.mcp.close();
                server.registry.end(&session)
            });
        }
    }
}

/// An SSE body that ends its stateless request when it is dropped.
struct GuardedBody<O: SessionRuntime> {
    /// A frame read before the response started, sent first.
    first: Option<Bytes>,
    body: SseBody,
    _guard: StatelessGuard<O>,
}

impl<O: SessionRuntime> http_body::Body for GuardedBody<O> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        if let Some(first) = self.first.take() {
            return std::task::Poll::Ready(Some(Ok(http_body::Frame::data(first))));
        }
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The HTTP status of a modern JSON answer: 400 for the errors 2026-07-28
/// gives that status (-32020, -32021, -32022; the `_meta` -32602 is
/// answered before dispatch, and a -32602 such as an unknown tool stays a
/// 200 answer, so a dual-era client never mistakes it for a legacy
/// server's 400), 404 for -32601, else 200.
/// The JSON text of an SSE frame that holds exactly one event, else
/// `None` (several events, or none).
fn lone_sse_message(frame: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(frame).ok()?;
    let mut events = text.split("\n\n").filter(|e| !e.trim().is_empty());
    let event = events.next()?;
    if events.next().is_some() {
        return None;
    }
    let data: Vec<&str> = event.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    (!data.is_empty()).then(|| data.join("\n"))
}

fn modern_status(text: &str) -> StatusCode {
    // Only an error response has an HTTP status of its own, and every one
    // the session writes has this text: anything without it is a result
    // (200) and is not parsed again. With it (an error, or a result whose
    // content holds such an object), the parse decides.
    if !text.contains("\"error\":{\"code\":") {
        return StatusCode::OK;
    }
    let code = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.pointer("/error/code").and_then(Value::as_i64));
    match code {
        Some(crate::HEADER_MISMATCH)
        | Some(crate::MISSING_REQUIRED_CLIENT_CAPABILITY)
        | Some(crate::UNSUPPORTED_PROTOCOL_VERSION) => StatusCode::BAD_REQUEST,
        Some(jsonrpc::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// Serves one checked modern request: a runtime of its own from the
/// server's factory (on the control worker), an MCP session over it for
/// this request only, the answer as JSON or SSE, then the end of both.
async fn stateless<O: SessionRuntime>(
    server: Arc<ServerInner<O>>,
    headers: &HeaderMap,
    message: jsonrpc::Incoming,
    use_sse: bool,
    caller: &Caller,
) -> Response<Body> {
    let jsonrpc::Incoming::Request { id, .. } = &message else {
        return http_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            -32603,
            "Internal error: not a request",
        );
    };
    let id = id.clone();
    let reservation = match server.registry.reserve(Kind::Stateless, &caller.client) {
        Ok(r) => r,
        Err(message) => {
            return *modern_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &id,
                jsonrpc::INTERNAL_ERROR,
                &message,
                None,
            )
        }
    };
    let forwarded = forwarded_headers(&server, headers);
    let principal = caller.principal.clone();
    let (tx, rx) = oneshot::channel();
    let s = server.clone();
    // Only `_meta` goes to the factory: no copy of the arguments.
    let meta = match &message {
        jsonrpc::Incoming::Request { params, .. } => params.as_ref().and_then(|p| p.get("_meta")).cloned(),
        _ => None,
    };
    server.registry.control.spawn(move || {
        let result = create_stateless(&s, meta, &forwarded, principal.as_deref(), reservation);
        let _ = tx.send(result);
    });
    let session = match rx.await {
        Ok(Ok(session)) => session,
        Ok(Err(why)) => {
            return *modern_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &id,
                jsonrpc::INTERNAL_ERROR,
                &format!("Internal error: {why}"),
                None,
            )
        }
        Err(_) => return http_error(StatusCode::INTERNAL_SERVER_ERROR, -32603, "Internal error: no runtime"),
    };
    let guard = StatelessGuard {
        server: server.clone(),
        session: session.clone(),
    };
    let key = McpSession::request_key(&id);
    if use_sse {
        let body = session
            .link
            .open_stream(key)
            .and_then(|sid| session.link.attach(sid, Some(0)));
        let Some(body) = body else {
            return http_error(StatusCode::INTERNAL_SERVER_ERROR, -32603, "Internal error: no stream");
        };
        // A request without a progress token and without a log level gets
        // no notification, only its answer ("Progress", "Logging"): its
        // status line waits for that answer, so one with an HTTP status
        // of its own (`-32021` when a handler needed a capability the
        // request did not declare: 400) is sent with that status and a
        // JSON body, as a JSON answer would be. A request that may be
        // notified gets its stream at once (200), and such an error
        // travels in it (**rcip**, docs/MCP.md).
        let meta = match &message {
            jsonrpc::Incoming::Request { params, .. } => params.as_ref().and_then(|p| p.get("_meta")),
            _ => None,
        };
        let notified = meta.is_some_and(|m| m.get("progressToken").is_some() || m.get(crate::META_LOG_LEVEL).is_some());
        session.mcp.receive_incoming(message);
        let mut body = GuardedBody {
            first: None,
            body: body.without_priming().with_keep_alive(server.options.keep_alive_ms),
            _guard: guard,
        };
        if notified {
            return sse_boxed(body.boxed_unsync());
        }
        // A dropped connection drops this future, and the guard ends the
        // request (cancellation), as for a JSON answer.
        let Some(Ok(frame)) = body.frame().await else {
            return http_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                -32603,
                "Internal error: the request ended without an answer",
            );
        };
        let bytes = frame.into_data().unwrap_or_default();
        if let Some(text) = lone_sse_message(&bytes) {
            let status = modern_status(&text);
            if status != StatusCode::OK {
                let mut r = json_response(text);
                *r.status_mut() = status;
                return r;
            }
        }
        body.first = Some(bytes);
        return sse_boxed(body.boxed_unsync());
    }
    let Some(rx) = session.link.route_json(key) else {
        return http_error(StatusCode::INTERNAL_SERVER_ERROR, -32603, "Internal error: no route");
    };
    session.mcp.receive_incoming(message);
    // A dropped connection drops this future, and the guard ends the
    // request (cancellation).
    let answer = rx.await;
    drop(guard);
    match answer {
        Ok(Some(text)) => {
            let mut r = json_response(text.clone());
            *r.status_mut() = modern_status(&text);
            r
        }
        _ => http_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            -32603,
            "Internal error: the request ended without an answer",
        ),
    }
}

/// The headers [`HttpOptions::forward_headers`](super::HttpOptions::forward_headers)
/// names that the request has, as (lower-case name, value).
fn forwarded_headers<O: SessionRuntime>(server: &ServerInner<O>, headers: &HeaderMap) -> Vec<(String, String)> {
    server
        .forward_headers
        .iter()
        .filter_map(|name| header(headers, name).map(|v| (name.as_str().to_string(), v.to_string())))
        .collect()
}

/// Runs on a worker: the factory and a one-request MCP session over its
/// runtime ([`Registry::build`](crate::server::Registry::build) says what
/// the factory sees), made live.
fn create_stateless<O: SessionRuntime>(
    server: &Arc<ServerInner<O>>,
    meta: Option<Value>,
    forwarded: &[(String, String)],
    principal: Option<&Principal>,
    mut reservation: Reservation,
) -> Result<Arc<Session<O>>, String> {
    let router = Arc::new(Router::with_budget(
        server.options.replay_events,
        server.options.resumption_bytes,
    ));
    let session = server
        .registry
        .build(Kind::Stateless, &mut reservation, meta, forwarded, principal, router)?;
    server.registry.insert(Kind::Stateless, &session)?;
    Ok(session)
}

fn ended() -> Response<Body> {
    http_error(
        StatusCode::NOT_FOUND,
        -32001,
        "Session not found: the session ended before the request was answered",
    )
}

async fn initialize<O: SessionRuntime>(
    server: Arc<ServerInner<O>>,
    headers: &HeaderMap,
    message: jsonrpc::Incoming,
    caller: &Caller,
) -> Response<Body> {
    let reservation = match server.registry.reserve(Kind::Session, &caller.client) {
        Ok(r) => r,
        Err(message) => return http_error(StatusCode::SERVICE_UNAVAILABLE, -32000, &message),
    };
    let forwarded = forwarded_headers(&server, headers);
    let principal = caller.principal.clone();
    let (tx, rx) = oneshot::channel();
    let s = server.clone();
    // The factory is host code: on the control worker (never behind a
    // slow handler of another session).
    server.registry.control.spawn(move || {
        let result = create_session(&s, message, &forwarded, principal.as_deref(), reservation);
        let _ = tx.send(result);
    });
    match rx.await {
        Ok(Ok((session_id, text))) => {
            let mut r = json_response(text);
            if let Ok(v) = HeaderValue::from_str(&session_id) {
                r.headers_mut().insert(SESSION_HEADER, v);
            }
            r
        }
        Ok(Err(text)) => json_response(text),
        Err(_) => http_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            -32603,
            "Internal error: the session was not created",
        ),
    }
}

/// Runs on a worker: the factory, the session, and the `initialize`
/// answer's route. `Err` is a JSON-RPC error response for the client.
fn create_session<O: SessionRuntime>(
    server: &Arc<ServerInner<O>>,
    message: jsonrpc::Incoming,
    forwarded: &[(String, String)],
    principal: Option<&Principal>,
    mut reservation: Reservation,
) -> Result<(String, String), String> {
    let jsonrpc::Incoming::Request { id, params, .. } = &message else {
        return Err(http_text_internal("initialize is a request"));
    };
    let id = id.clone();
    let fail = |why: &str| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": format!("Internal error: {why}")}})
            .to_string()
    };
    let router = Arc::new(Router::with_budget(
        server.options.replay_events,
        server.options.resumption_bytes,
    ));
    let session = server
        .registry
        .build(
            Kind::Session,
            &mut reservation,
            params.clone(),
            forwarded,
            principal,
            router.clone(),
        )
        .map_err(|why| fail(&why))?;
    let key = McpSession::request_key(&id);
    let Some(mut rx) = router.route_json(key) else {
        server.registry.end(&session);
        return Err(fail("the session could not route its initialize"));
    };
    // initialize is answered inline (it runs no host code).
    session.mcp.receive_incoming(message);
    let answer = match rx.try_recv() {
        Ok(Some(text)) => text,
        _ => {
            server.registry.end(&session);
            return Err(fail("initialize was not answered"));
        }
    };
    if answer.contains("\"error\":{") && !answer.contains("\"result\":") {
        // A refused initialize (bad params) creates no session.
        server.registry.end(&session);
        return Err(answer);
    }
    server
        .registry
        .insert(Kind::Session, &session)
        .map_err(|why| fail(&why))?;
    Ok((session.info.session_id.clone(), answer))
}

/// A JSON-RPC internal error with id `null`.
fn http_text_internal(why: &str) -> String {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": format!("Internal error: {why}")}})
        .to_string()
}

fn get<O: SessionRuntime, B>(server: Arc<ServerInner<O>>, req: Request<B>, caller: &Caller) -> Response<Body> {
    let headers = req.headers();
    if !header(headers, &ACCEPT).is_some_and(|a| a.contains("text/event-stream") || a.contains("*/*")) {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: GET opens an SSE stream; accept text/event-stream",
        );
    }
    let session = match find_session(&server, headers, caller) {
        Found::Session(s) => s,
        Found::Missing(r) => return r,
    };
    session.touch();
    let (stream, after) = match header(headers, &LAST_EVENT_HEADER) {
        None => (STANDALONE, None),
        Some(text) => match parse_event_id(text) {
            Some((stream, seq)) => (stream, Some(seq)),
            None => {
                return http_error(
                    StatusCode::BAD_REQUEST,
                    -32000,
                    &format!("Bad Request: Last-Event-ID \"{text}\" is not an event id of this server"),
                )
            }
        },
    };
    match session.link.attach(stream, after) {
        Some(body) => sse_response(
            body.with_retry(server.options.retry_ms)
                .with_keep_alive(server.options.keep_alive_ms),
        ),
        // Not 404: that would tell the client its session is gone.
        None => http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: that stream is complete or unknown (its events were all delivered)",
        ),
    }
}

async fn delete<O: SessionRuntime, B>(server: Arc<ServerInner<O>>, req: Request<B>, caller: &Caller) -> Response<Body> {
    let session = match find_session(&server, req.headers(), caller) {
        Found::Session(s) => s,
        Found::Missing(r) => return r,
    };
    let removed = server.registry.remove(Kind::Session, &session.info.session_id);
    if let Some(s) = removed {
        let (tx, rx) = oneshot::channel();
        // Closing the runtime calls host code: on a worker.
        let srv = server.clone();
        server.registry.control.spawn(move || {
            srv.registry.end(&s);
            let _ = tx.send(());
        });
        let _ = rx.await;
    }
    response(StatusCode::OK, None, empty())
}

/// What the server needs of a request body: any `http_body::Body` whose
/// data and error cross threads (hyper's `Incoming`, axum's `Body`,
/// `Full<Bytes>`, ...).
pub trait RequestBody:
    http_body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + 'static
{
}

impl<B> RequestBody for B where
    B: http_body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + 'static
{
}

/// A [mounted](super::McpHttpServer::mountable) server as a service for
/// the host's own HTTP stack (**rcip**), from
/// [`McpHttpServer::service`](super::McpHttpServer::service).
///
/// It answers every request exactly as the built-in listener does (the
/// same checks, status codes and bodies), and never runs host code on the
/// calling task: the factory, tool calls and session endings run on the
/// server's worker threads. The returned futures need tokio's timer (they
/// run on the host's tokio runtime). Cloning is cheap; clones share the
/// server. The server's sessions live as long as the server, not the
/// service: dropping every service ends nothing.
pub struct McpService<O: SessionRuntime> {
    pub(super) inner: Arc<ServerInner<O>>,
    pub(super) peer: Option<std::net::IpAddr>,
}

impl<O: SessionRuntime> Clone for McpService<O> {
    fn clone(&self) -> Self {
        McpService {
            inner: self.inner.clone(),
            peer: self.peer,
        }
    }
}

impl<O: SessionRuntime> std::fmt::Debug for McpService<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

/// The future of one request of an [`McpService`].
pub type McpFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

impl<O: SessionRuntime> McpService<O> {
    /// This service with `peer` as the client's address for every request
    /// it serves (make one per connection from the accepted address); the
    /// per-peer limits count by it (IPv6 by its /64).
    pub fn with_peer(&self, peer: std::net::SocketAddr) -> McpService<O> {
        McpService {
            inner: self.inner.clone(),
            peer: Some(peer_of(peer.ip())),
        }
    }

    /// Serves one request (what both `Service` impls call).
    pub fn serve<B: RequestBody>(&self, req: Request<B>) -> McpFuture {
        let peer = self
            .peer
            .or_else(|| req.extensions().get::<std::net::SocketAddr>().map(|a| peer_of(a.ip())))
            .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
        let server = self.inner.clone();
        Box::pin(async move {
            if server.stopping.load(Ordering::SeqCst) {
                return Ok(http_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    -32000,
                    "Service Unavailable: the server is shutting down",
                ));
            }
            Ok(handle_counted(server, req, peer).await)
        })
    }
}

impl<O: SessionRuntime, B: RequestBody> hyper::service::Service<Request<B>> for McpService<O> {
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = McpFuture;

    fn call(&self, req: Request<B>) -> McpFuture {
        self.serve(req)
    }
}

impl<O: SessionRuntime, B: RequestBody> tower_service::Service<Request<B>> for McpService<O> {
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = McpFuture;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
        // Always ready: admission (limits, draining) is decided per
        // request, with an answer the client can read.
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> McpFuture {
        self.serve(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_origin_names() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:8080"), "[::1]");
        assert_eq!(host_name("example.com"), "example.com");
        assert_eq!(origin_without_port("http://localhost:3000"), "http://localhost");
        assert_eq!(origin_without_port("https://[::1]:1"), "https://[::1]");
        let list = vec!["localhost".to_string()];
        assert!(allowed(&list, "localhost:9", host_name("localhost:9")));
        assert!(!allowed(&list, "evil.example.com", host_name("evil.example.com")));
        let v6 = vec!["[::1]".to_string()];
        assert!(allowed(&v6, "[::1]:80", host_name("[::1]:80")));
        assert!(!allowed(&v6, "[::1]evil.example:80", host_name("[::1]evil.example:80")));
        assert!(!allowed(&v6, "[::1]@evil.example", host_name("[::1]@evil.example")));
        let origins = vec!["http://[::1]".to_string()];
        assert!(!allowed(
            &origins,
            "http://[::1]evil.example",
            origin_without_port("http://[::1]evil.example")
        ));
    }
}
