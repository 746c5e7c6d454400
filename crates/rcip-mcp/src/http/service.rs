//! The HTTP side: accepting connections, checking each request (origin,
//! host, size, protocol version, session), and handing messages to the
//! sessions. Runs on the I/O threads and never calls host code: the
//! session factory and the ending of sessions go to the worker pool, and
//! the sessions themselves put `tools/call` work there.

use super::router::{parse_event_id, Router, SseBody, STANDALONE};
use super::{
    ResponseMode, ServerInner, Session, SessionInfo, SessionRequest, SessionRuntime, SUPPORTED_PROTOCOL_VERSIONS,
};
use crate::jsonrpc;
use crate::McpSession;
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, ACCEPT, ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rcip::json::Limits;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

type Body = UnsyncBoxBody<Bytes, Infallible>;

// Header names as values, so a lookup hashes them as they are instead of
// parsing a string into a scratch buffer first.
const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_HEADER: HeaderName = HeaderName::from_static("last-event-id");

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
    let mut r = response(StatusCode::OK, Some("text/event-stream"), body.boxed_unsync());
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
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
        let Ok((stream, _peer)) = accepted else {
            // Out of descriptors and the like: try again shortly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        if server.connections.load(Ordering::SeqCst) >= server.options.max_connections {
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        server.connections.fetch_add(1, Ordering::SeqCst);
        let s = server.clone();
        tokio::spawn(async move {
            let service_server = s.clone();
            let service = hyper::service::service_fn(move |req| {
                let s = service_server.clone();
                async move { Ok::<_, Infallible>(handle(s, req).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_millis(s.options.header_timeout_ms))
                .keep_alive(true)
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
    let period = (idle / 4).clamp(Duration::from_millis(25), Duration::from_secs(1));
    loop {
        tokio::select! {
            () = tokio::time::sleep(period) => {}
            () = server.stop.notified() => return,
        }
        if server.reaping.swap(true, Ordering::SeqCst) {
            continue; // the last pass has not run yet
        }
        let s = server.clone();
        // Reading runtime counters is no host code, but ending a session
        // is: the whole pass runs on the control worker.
        server.control.spawn(move || {
            let now = Instant::now();
            let candidates: Vec<_> = s
                .sessions
                .lock()
                .values()
                .filter(|x| now.duration_since(x.router.last_active()) >= idle)
                .cloned()
                .collect();
            for session in candidates {
                if session.router.busy() || session.mcp.in_flight() > 0 || has_pending(&*session.owner) {
                    continue;
                }
                let removed = s.sessions.lock().remove(&session.info.session_id);
                if let Some(x) = removed {
                    s.end(&x);
                }
            }
            s.drop_retired();
            s.reaping.store(false, Ordering::SeqCst);
        });
    }
}

/// True while the runtime has pending invocations or confirmations (the
/// host may still approve one: the session is not idle).
fn has_pending<O: SessionRuntime>(owner: &O) -> bool {
    let Ok(text) = owner.runtime().stats_json() else {
        return false;
    };
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    n("pendingInvocations") > 0 || n("pendingConfirmations") > 0
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

async fn handle<O: SessionRuntime>(server: Arc<ServerInner<O>>, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() != server.options.endpoint {
        return http_error(
            StatusCode::NOT_FOUND,
            -32000,
            "Not Found: the MCP endpoint is elsewhere",
        );
    }
    let headers = req.headers();
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
    if let Some(v) = headers.get(&VERSION_HEADER) {
        let text = v.to_str().unwrap_or("");
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&text) {
            return http_error(
                StatusCode::BAD_REQUEST,
                -32000,
                &format!(
                    "Bad Request: unsupported MCP-Protocol-Version \"{text}\" (supported: {})",
                    SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                ),
            );
        }
    }
    match *req.method() {
        Method::POST => post(server, req).await,
        Method::GET => get(server, req),
        Method::DELETE => delete(server, req).await,
        _ => {
            let mut r = http_error(StatusCode::METHOD_NOT_ALLOWED, -32000, "Method Not Allowed");
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            r
        }
    }
}

enum Found<O> {
    Session(Arc<Session<O>>),
    Missing(Response<Body>),
}

fn find_session<O: SessionRuntime>(server: &ServerInner<O>, headers: &HeaderMap) -> Found<O> {
    match header(headers, &SESSION_HEADER) {
        None => Found::Missing(http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: no Mcp-Session-Id header (send initialize first)",
        )),
        Some(id) => match server.sessions.lock().get(id) {
            Some(s) => Found::Session(s.clone()),
            None => Found::Missing(http_error(
                StatusCode::NOT_FOUND,
                -32001,
                "Session not found: it ended or never existed; initialize a new one",
            )),
        },
    }
}

async fn read_body(server: &ServerInner<impl SessionRuntime>, body: Incoming) -> Result<Bytes, Response<Body>> {
    let limit = server.options.max_body_bytes;
    let timeout = Duration::from_millis(server.options.body_timeout_ms);
    match tokio::time::timeout(timeout, Limited::new(body, limit).collect()).await {
        Err(_) => Err(http_error(
            StatusCode::REQUEST_TIMEOUT,
            -32000,
            "Request Timeout: the body did not arrive in time",
        )),
        Ok(Err(e)) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                Err(http_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    -32000,
                    &format!("Payload Too Large: the body exceeds {limit} bytes (maxBodyBytes)"),
                ))
            } else {
                Err(http_error(
                    StatusCode::BAD_REQUEST,
                    -32000,
                    "Bad Request: the body could not be read",
                ))
            }
        }
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

async fn post<O: SessionRuntime>(server: Arc<ServerInner<O>>, req: Request<Incoming>) -> Response<Body> {
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
    if let Some(len) = header(&headers, &CONTENT_LENGTH).and_then(|l| l.parse::<u64>().ok()) {
        if len > server.options.max_body_bytes as u64 {
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
    let message = match rcip::json::parse_bytes_exact(&bytes, &limits) {
        Ok(v) => v,
        Err(e) => {
            return http_error(StatusCode::BAD_REQUEST, -32700, &format!("Parse error: {e}"));
        }
    };
    if !message.is_object() {
        return http_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "Invalid Request: POST one JSON-RPC message (an object); batches are not part of MCP",
        );
    }
    // Classified once, as the session classifies: what it would refuse
    // is refused here with an HTTP error (MCP: input the server cannot
    // accept is an HTTP error), and nothing is routed, kept or created.
    let incoming = jsonrpc::classify_value(message);
    let (id, method) = match &incoming {
        jsonrpc::Incoming::Invalid { code, message, .. } => {
            return http_error(StatusCode::BAD_REQUEST, *code, message);
        }
        jsonrpc::Incoming::Ignored => {
            return http_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "Invalid Request: a response needs an id and a result or an error object",
            );
        }
        jsonrpc::Incoming::Request { id, method, .. } => (Some(id.clone()), Some(method.clone())),
        jsonrpc::Incoming::Notification { .. } | jsonrpc::Incoming::Response { .. } => (None, None),
    };
    let is_request = id.is_some();
    if method.as_deref() == Some("initialize") && header(&headers, &SESSION_HEADER).is_none() {
        return initialize(server, &headers, incoming).await;
    }
    let session = match find_session(&server, &headers) {
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
        let Some(sid) = session.router.open_stream(key.clone()) else {
            return in_flight();
        };
        let Some(body) = session.router.attach(sid, Some(0)) else {
            return ended();
        };
        session.mcp.receive_incoming(incoming);
        if let Some(ms) = server.options.poll_after_ms {
            let router = session.router.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                router.request_close(sid);
            });
        }
        return sse_response(body.with_retry(server.options.retry_ms));
    }
    let Some(rx) = session.router.route_json(key.clone()) else {
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
) -> Response<Body> {
    let reserved = server.creating.fetch_add(1, Ordering::SeqCst) + 1;
    let live = server.sessions.lock().len();
    if live + reserved > server.options.max_sessions || server.stopping.load(Ordering::SeqCst) {
        server.creating.fetch_sub(1, Ordering::SeqCst);
        return http_error(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            &format!(
                "Service Unavailable: this server holds at most {} sessions (maxSessions); end one or retry later",
                server.options.max_sessions
            ),
        );
    }
    let forwarded: Vec<(String, String)> = server
        .forward_headers
        .iter()
        .filter_map(|name| header(headers, name).map(|v| (name.as_str().to_string(), v.to_string())))
        .collect();
    let (tx, rx) = oneshot::channel();
    let s = server.clone();
    // The factory is host code: on the control worker (never behind a
    // slow handler of another session).
    server.control.spawn(move || {
        let result = create_session(&s, message, &forwarded);
        s.creating.fetch_sub(1, Ordering::SeqCst);
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
) -> Result<(String, String), String> {
    let jsonrpc::Incoming::Request { id, params, .. } = &message else {
        return Err(http_text_internal("initialize is a request"));
    };
    let id = id.clone();
    let fail = |why: &str| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": format!("Internal error: {why}")}})
            .to_string()
    };
    let session_id = new_session_id().map_err(|e| fail(&format!("no session id could be drawn: {e}")))?;
    let params = params.clone().unwrap_or(Value::Null);
    let request = SessionRequest {
        session_id: &session_id,
        initialize_params: &params,
        headers: forwarded,
    };
    let owner = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.factory.create(&request))) {
        Ok(Ok(o)) => Arc::new(o),
        Ok(Err(why)) => return Err(fail(&format!("the session factory failed: {why}"))),
        Err(_) => return Err(fail("the session factory panicked")),
    };
    let end_owner = |o: &Arc<O>| {
        o.runtime().close();
        o.session_ended();
    };
    let router = Arc::new(Router::new(server.options.replay_events));
    let mut session_options = server.options.session.clone();
    session_options.max_in_flight = Some(server.options.max_in_flight);
    let mcp = match McpSession::with_pools(
        owner.runtime(),
        session_options,
        router.clone(),
        Some(server.pool.clone()),
        Some(server.control.clone()),
    ) {
        Ok(m) => m,
        Err(e) => {
            end_owner(&owner);
            return Err(fail(&format!("the session could not start: {e}")));
        }
    };
    let info = SessionInfo {
        session_id: session_id.clone(),
        client_info: params.get("clientInfo").cloned().unwrap_or_else(|| json!({})),
        protocol_version: params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        dropped_notifications: 0,
        content_replaced: 0,
    };
    let session = Arc::new(Session {
        info,
        owner,
        mcp,
        router: router.clone(),
        ended: Default::default(),
    });
    let key = McpSession::request_key(&id);
    let Some(mut rx) = router.route_json(key) else {
        server.end(&session);
        return Err(fail("the session could not route its initialize"));
    };
    // initialize is answered inline (it runs no host code).
    session.mcp.receive_incoming(message);
    let answer = match rx.try_recv() {
        Ok(Some(text)) => text,
        _ => {
            server.end(&session);
            return Err(fail("initialize was not answered"));
        }
    };
    if answer.contains("\"error\":{") && !answer.contains("\"result\":") {
        // A refused initialize (bad params) creates no session.
        server.end(&session);
        return Err(answer);
    }
    {
        let mut sessions = server.sessions.lock();
        if server.stopping.load(Ordering::SeqCst) {
            drop(sessions);
            server.end(&session);
            return Err(fail("the server is shutting down"));
        }
        sessions.insert(session_id.clone(), session.clone());
    }
    Ok((session_id, answer))
}

/// A JSON-RPC internal error with id `null`.
fn http_text_internal(why: &str) -> String {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": format!("Internal error: {why}")}})
        .to_string()
}

/// 128 bits from the operating system's CSPRNG, as 32 hex digits.
fn new_session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn get<O: SessionRuntime>(server: Arc<ServerInner<O>>, req: Request<Incoming>) -> Response<Body> {
    let headers = req.headers();
    if !header(headers, &ACCEPT).is_some_and(|a| a.contains("text/event-stream") || a.contains("*/*")) {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: GET opens an SSE stream; accept text/event-stream",
        );
    }
    let session = match find_session(&server, headers) {
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
    match session.router.attach(stream, after) {
        Some(body) => sse_response(body.with_retry(server.options.retry_ms)),
        // Not 404: that would tell the client its session is gone.
        None => http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: that stream is complete or unknown (its events were all delivered)",
        ),
    }
}

async fn delete<O: SessionRuntime>(server: Arc<ServerInner<O>>, req: Request<Incoming>) -> Response<Body> {
    let session = match find_session(&server, req.headers()) {
        Found::Session(s) => s,
        Found::Missing(r) => return r,
    };
    let removed = server.sessions.lock().remove(&session.info.session_id);
    if let Some(s) = removed {
        let (tx, rx) = oneshot::channel();
        // Closing the runtime calls host code: on a worker.
        let srv = server.clone();
        server.control.spawn(move || {
            srv.end(&s);
            let _ = tx.send(());
        });
        let _ = rx.await;
    }
    response(StatusCode::OK, None, empty())
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
        assert_eq!(new_session_id().unwrap().len(), 32);
        assert_ne!(new_session_id().unwrap(), new_session_id().unwrap());
    }
}
