//! The Streamable HTTP server (src/mcp/http) driven over real sockets on
//! 127.0.0.1 with hyper's client: sessions as runtimes, the security
//! defaults, resumption, polling, idle expiry, limits and shutdown.
#![cfg(feature = "http")]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, LifecycleEvent, Runtime, RuntimeBuilder};
use rcip_mcp::http::{HttpOptions, McpHttpServer, ResponseMode, SessionRequest, SessionRuntime};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "clinic", "name": "Clinic", "description": "A clinic for tests.", "version": "1.0.0"},
        "scopes": [
            {"id": "ward", "title": "Ward", "description": "The ward."},
            {"id": "desk", "title": "Desk", "description": "The front desk."}
        ],
        "capabilities": [
            {"id": "ward.list", "title": "List beds", "description": "Lists beds.", "scopeIds": ["ward"],
             "effect": "read", "inputSchema": {"type": "object", "additionalProperties": false},
             "outputSchema": {"type": "object"}},
            {"id": "ward.slow", "title": "Slow report", "description": "Reports slowly.", "scopeIds": ["ward"],
             "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
            {"id": "ward.discharge", "title": "Discharge", "description": "Discharges a patient.",
             "scopeIds": ["ward"], "effect": "destructive", "inputSchema": {"type": "object"},
             "outputSchema": {"type": "object"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).unwrap()
}

/// What a session's runtime is held by in these tests.
struct Held {
    runtime: Runtime,
    ended: Arc<AtomicUsize>,
}

impl SessionRuntime for Held {
    fn runtime(&self) -> &Runtime {
        &self.runtime
    }
    fn session_ended(&self) {
        self.ended.fetch_add(1, Ordering::SeqCst);
    }
}

struct Fixture {
    server: McpHttpServer<Held>,
    addr: SocketAddr,
    /// Invocations of `ward.slow`, settled by the test.
    slow: Arc<Mutex<Vec<Invocation>>>,
    ended: Arc<AtomicUsize>,
    created: Arc<AtomicUsize>,
    events: Arc<Mutex<Vec<String>>>,
}

fn fixture(options: HttpOptions) -> Fixture {
    let catalog = catalog();
    let slow: Arc<Mutex<Vec<Invocation>>> = Arc::default();
    let ended = Arc::new(AtomicUsize::new(0));
    let created = Arc::new(AtomicUsize::new(0));
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let (c, s, e, n, ev) = (
        catalog.clone(),
        slow.clone(),
        ended.clone(),
        created.clone(),
        events.clone(),
    );
    let factory = move |req: &SessionRequest<'_>| -> Result<Held, String> {
        if req.client_name() == Some("refused") {
            return Err("this client is not welcome".into());
        }
        let mut b = RuntimeBuilder::new(&c);
        let ev = ev.clone();
        b.event_observer(Arc::new(move |e: &LifecycleEvent| ev.lock().push(e.to_json())));
        let runtime = b.build();
        let host = runtime.host();
        let list = host
            .bind(
                "ward.list",
                Arc::new(|inv: Invocation| inv.complete(json!({"beds": 3})).unwrap()),
                None,
            )
            .unwrap();
        let s = s.clone();
        let slow_binding = host
            .bind("ward.slow", Arc::new(move |inv: Invocation| s.lock().push(inv)), None)
            .unwrap();
        let discharge = host
            .bind(
                "ward.discharge",
                Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
                None,
            )
            .unwrap();
        // The bindings live as long as the runtime.
        std::mem::forget((list, slow_binding, discharge));
        if req.client_name() == Some("ward-agent") {
            host.set_context_json(br#"{"activeScopeIds": ["ward"], "primaryScopeId": "ward"}"#)
                .unwrap();
        }
        n.fetch_add(1, Ordering::SeqCst);
        Ok(Held {
            runtime,
            ended: e.clone(),
        })
    };
    let server = McpHttpServer::bind(&catalog, "127.0.0.1:0", options, factory).unwrap();
    server.start().unwrap();
    let addr = server.local_addr();
    Fixture {
        server,
        addr,
        slow,
        ended,
        created,
        events,
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn send(addr: SocketAddr, req: Request<Full<Bytes>>) -> Response<Incoming> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender.send_request(req).await.unwrap()
}

fn request(addr: SocketAddr, method: &str, session: Option<&str>, body: &str) -> hyper::http::request::Builder {
    let mut b = Request::builder()
        .method(method)
        .uri(format!("http://{addr}/mcp"))
        .header("host", format!("127.0.0.1:{}", addr.port()))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(s) = session {
        b = b.header("mcp-session-id", s);
    }
    let _ = body;
    b
}

async fn post(addr: SocketAddr, session: Option<&str>, body: Value) -> (StatusCode, Option<String>, String) {
    let text = body.to_string();
    let req = request(addr, "POST", session, &text)
        .body(Full::new(Bytes::from(text)))
        .unwrap();
    let resp = send(addr, req).await;
    let status = resp.status();
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, sid, String::from_utf8(body.to_vec()).unwrap())
}

/// The JSON-RPC messages of an SSE body (the data lines).
fn sse_messages(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| {
            let data: String = e
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect::<Vec<_>>()
                .join("\n");
            serde_json::from_str(&data).ok()
        })
        .collect()
}

/// The one JSON-RPC answer of a POST, whether JSON or SSE.
fn answer(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|_| sse_messages(body).pop().expect("an SSE message"))
}

async fn initialize(addr: SocketAddr, client: &str) -> String {
    let (status, sid, body) = post(
        addr,
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(answer(&body)["result"]["protocolVersion"], "2025-11-25");
    let sid = sid.expect("a session id");
    let (status, _, _) = post(
        addr,
        Some(&sid),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    sid
}

fn call(id: u64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}})
}

#[test]
fn each_session_is_a_runtime_of_its_own() {
    let f = fixture(HttpOptions::default());
    rt().block_on(async {
        let a = initialize(f.addr, "ward-agent").await;
        let b = initialize(f.addr, "desk-agent").await;
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert_eq!(f.created.load(Ordering::SeqCst), 2);
        // Each session's tools/list reflects its own context.
        let list = |sid: String| async move {
            let (_, _, body) = post(
                f.addr,
                Some(&sid),
                json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
            )
            .await;
            answer(&body)["result"]["tools"][0]["_meta"]["rcip/relevance"].clone()
        };
        assert_eq!(list(a.clone()).await, "current");
        assert_eq!(list(b.clone()).await, "other");
        // A call answered as SSE; invocation ids are per runtime.
        let (status, _, body) = post(f.addr, Some(&a), call(6, "ward.list")).await;
        assert_eq!(status, StatusCode::OK);
        let messages = sse_messages(&body);
        assert_eq!(messages.len(), 1, "{body}");
        assert_eq!(messages[0]["result"]["structuredContent"], json!({"beds": 3}));
        assert!(body.starts_with("id: "), "a priming event first: {body}");
        // The host reaches each session's runtime by id.
        let ids: Vec<_> = f.server.sessions().into_iter().map(|s| s.session_id).collect();
        assert!(ids.contains(&a) && ids.contains(&b));
        let host_b = f.server.session_host(&b).unwrap();
        host_b.set_context_json(br#"{"activeScopeIds": ["desk"]}"#).unwrap();
        assert_eq!(list(a.clone()).await, "current", "a's context is untouched");
        // DELETE ends b: 404 afterwards, its runtime closed, the host told once.
        let req = request(f.addr, "DELETE", Some(&b), "")
            .body(Full::new(Bytes::new()))
            .unwrap();
        assert_eq!(send(f.addr, req).await.status(), StatusCode::OK);
        let (status, _, _) = post(f.addr, Some(&b), json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(f.ended.load(Ordering::SeqCst), 1);
        // A late host call on the ended session answers Closed, not a crash.
        assert!(host_b.set_context_json(br#"{"activeScopeIds": []}"#).is_err());
    });
}

#[test]
fn security_defaults_refuse_with_clear_http_errors() {
    let options = HttpOptions {
        max_body_bytes: 2048,
        ..HttpOptions::default()
    };
    let f = fixture(options);
    rt().block_on(async {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
        .to_string();
        let with = |name: &str, value: &str| {
            request(f.addr, "POST", None, "")
                .header(name, value)
                .body(Full::new(Bytes::from(init.clone())))
                .unwrap()
        };
        // DNS rebinding: another site's Host or Origin.
        assert_eq!(
            send(f.addr, with("origin", "http://evil.example.com")).await.status(),
            StatusCode::FORBIDDEN
        );
        let mut req = with("x-any", "1");
        req.headers_mut().insert("host", "evil.example.com".parse().unwrap());
        assert_eq!(send(f.addr, req).await.status(), StatusCode::FORBIDDEN);
        // A localhost origin on any port is fine.
        assert_eq!(
            send(f.addr, with("origin", "http://localhost:5173")).await.status(),
            StatusCode::OK
        );
        // An unknown protocol version.
        assert_eq!(
            send(f.addr, with("mcp-protocol-version", "1999-01-01")).await.status(),
            StatusCode::BAD_REQUEST
        );
        // Too large.
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{{\"p\":\"{}\"}}}}",
            "a".repeat(4096)
        );
        let req = request(f.addr, "POST", None, "")
            .body(Full::new(Bytes::from(big)))
            .unwrap();
        assert_eq!(send(f.addr, req).await.status(), StatusCode::PAYLOAD_TOO_LARGE);
        // No session / unknown session.
        let (status, _, _) = post(f.addr, None, json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let (status, _, _) = post(
            f.addr,
            Some("nope"),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        // Not JSON; a batch; another method.
        let req = request(f.addr, "POST", None, "")
            .body(Full::new(Bytes::from("{oops")))
            .unwrap();
        assert_eq!(send(f.addr, req).await.status(), StatusCode::BAD_REQUEST);
        let req = request(f.addr, "PUT", None, "").body(Full::new(Bytes::new())).unwrap();
        assert_eq!(send(f.addr, req).await.status(), StatusCode::METHOD_NOT_ALLOWED);
        // Accepted versions on any session, including an older one.
        let sid = initialize(f.addr, "y").await;
        for v in ["2025-03-26", "2025-06-18", "2025-11-25"] {
            let req = request(f.addr, "POST", Some(&sid), "")
                .header("mcp-protocol-version", v)
                .body(Full::new(Bytes::from(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#)))
                .unwrap();
            assert_eq!(send(f.addr, req).await.status(), StatusCode::OK, "{v}");
        }
    });
}

#[test]
fn a_dropped_stream_does_not_cancel_and_the_answer_waits_for_resumption() {
    let f = fixture(HttpOptions::default());
    rt().block_on(async {
        let sid = initialize(f.addr, "a").await;
        let text = call(11, "ward.slow").to_string();
        let req = request(f.addr, "POST", Some(&sid), "")
            .body(Full::new(Bytes::from(text)))
            .unwrap();
        let resp = send(f.addr, req).await;
        let mut body = resp.into_body();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        let first = String::from_utf8(first.to_vec()).unwrap();
        let last_id = first.lines().next().unwrap().strip_prefix("id: ").unwrap().to_string();
        drop(body); // the client loses the connection
                    // The call goes on: the handler has it, not cancelled.
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.slow.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let inv = f.slow.lock().pop().expect("the handler got the call");
        assert!(!inv.is_cancelled());
        inv.complete(json!({"report": "done"})).unwrap();
        // Resumed with Last-Event-ID: the answer is there.
        let req = request(f.addr, "GET", Some(&sid), "")
            .header("last-event-id", last_id)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = send(f.addr, req).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let text = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
        let m = sse_messages(&text);
        assert_eq!(m.last().unwrap()["id"], 11, "{text}");
        assert_eq!(m.last().unwrap()["result"]["structuredContent"]["report"], "done");
    });
}

#[test]
fn poll_after_closes_a_pending_call_stream_with_a_retry() {
    let options = HttpOptions {
        poll_after_ms: Some(50),
        retry_ms: 300,
        ..HttpOptions::default()
    };
    let f = fixture(options);
    rt().block_on(async {
        let sid = initialize(f.addr, "a").await;
        let (status, _, body) = post(f.addr, Some(&sid), call(12, "ward.slow")).await;
        assert_eq!(status, StatusCode::OK);
        // The stream closed without the answer, after the priming event.
        assert!(body.contains("retry: 300"), "{body}");
        assert!(sse_messages(&body).is_empty(), "{body}");
        let last_id = body.lines().next().unwrap().strip_prefix("id: ").unwrap().to_string();
        f.slow.lock().pop().unwrap().complete(json!({"n": 1})).unwrap();
        let req = request(f.addr, "GET", Some(&sid), "")
            .header("last-event-id", last_id)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let text = String::from_utf8(
            send(f.addr, req)
                .await
                .into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .to_vec(),
        )
        .unwrap();
        assert_eq!(sse_messages(&text).last().unwrap()["id"], 12, "{text}");
    });
}

#[test]
fn idle_sessions_end_but_not_while_a_call_is_pending() {
    let options = HttpOptions {
        idle_timeout_ms: 150,
        response_mode: ResponseMode::Json,
        ..HttpOptions::default()
    };
    let f = fixture(options);
    rt().block_on(async {
        let idle = initialize(f.addr, "idle").await;
        let busy = initialize(f.addr, "busy").await;
        // busy has a call pending in its handler (answered as JSON: the
        // POST waits).
        let addr = f.addr;
        let b = busy.clone();
        let pending = tokio::spawn(async move { post(addr, Some(&b), call(13, "ward.slow")).await });
        tokio::time::sleep(Duration::from_millis(700)).await;
        let (status, _, _) = post(
            f.addr,
            Some(&idle),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "the idle session expired");
        assert!(f.server.session(&busy).is_some(), "the busy one did not");
        assert_eq!(f.ended.load(Ordering::SeqCst), 1);
        f.slow.lock().pop().unwrap().complete(json!({})).unwrap();
        let (status, _, body) = pending.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(answer(&body)["id"], 13);
    });
}

#[test]
fn a_failing_factory_answers_internal_error_and_creates_nothing() {
    let f = fixture(HttpOptions::default());
    rt().block_on(async {
        let (status, sid, body) = post(
            f.addr,
            None,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "refused", "version": "1"}}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert!(sid.is_none());
        let v = answer(&body);
        assert_eq!(v["error"]["code"], -32603);
        assert!(v["error"]["message"].as_str().unwrap().contains("not welcome"));
        assert!(f.server.sessions().is_empty());
    });
}

#[test]
fn limits_on_sessions_and_in_flight_requests() {
    let options = HttpOptions {
        max_sessions: 1,
        max_in_flight: 1,
        response_mode: ResponseMode::Json,
        ..HttpOptions::default()
    };
    let f = fixture(options);
    rt().block_on(async {
        let sid = initialize(f.addr, "one").await;
        let (status, _, _) = post(
            f.addr,
            None,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
        )
        .await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        let addr = f.addr;
        let s = sid.clone();
        let pending = tokio::spawn(async move { post(addr, Some(&s), call(20, "ward.slow")).await });
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.slow.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (status, _, _) = post(
            f.addr,
            Some(&sid),
            json!({"jsonrpc": "2.0", "id": 21, "method": "ping"}),
        )
        .await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        f.slow.lock().pop().unwrap().complete(json!({})).unwrap();
        assert_eq!(pending.await.unwrap().0, StatusCode::OK);
    });
}

#[test]
fn shutdown_ends_every_session_and_aborts_pending_calls() {
    let f = fixture(HttpOptions::default());
    let sid = rt().block_on(async {
        let sid = initialize(f.addr, "a").await;
        let addr = f.addr;
        let s = sid.clone();
        // The SSE answer never comes; the connection stays open.
        tokio::spawn(async move {
            let _ = post(addr, Some(&s), call(30, "ward.slow")).await;
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.slow.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        sid
    });
    let started = Instant::now();
    f.server.shutdown(Duration::from_millis(2000));
    // The held call never ends: shutdown returned because of its bound
    // (loose, for a loaded machine).
    assert!(started.elapsed() < Duration::from_secs(6), "{:?}", started.elapsed());
    assert_eq!(f.ended.load(Ordering::SeqCst), 1);
    assert!(f.server.session(&sid).is_none());
    let events = f.events.lock().join("\n");
    assert!(events.contains("EXECUTION_ABORTED"), "{events}");
    // The late completion of the aborted call is harmless.
    let _ = f.slow.lock().pop().unwrap().complete(json!({}));
    // No new connections.
    assert!(std::net::TcpStream::connect_timeout(&f.addr, Duration::from_millis(200)).is_err());
}

// ---- found by a cold review (each failed before its fix) ----------------

#[test]
fn invalid_ids_and_invalid_messages_are_refused_without_a_trace() {
    let options = HttpOptions {
        max_sessions: 2,
        ..HttpOptions::default()
    };
    let f = fixture(options);
    rt().block_on(async {
        // An id MCP refuses: 400 at once, no session, nothing routed.
        for id in [json!(1.5), json!(true), json!({"k": 1})] {
            let (status, sid, _) = post(
                f.addr,
                None,
                json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
            )
            .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{id}");
            assert!(sid.is_none());
        }
        // An initialize the session refuses (no protocolVersion) creates none.
        let (status, sid, body) = post(f.addr, None, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})).await;
        assert_eq!(status, StatusCode::OK);
        assert!(sid.is_none(), "{body}");
        assert_eq!(answer(&body)["error"]["code"], -32602);
        assert!(f.server.sessions().is_empty());
        let sid = initialize(f.addr, "a").await;
        for bad in [json!({}), json!({"jsonrpc": "2.0", "id": true, "method": "ping"}), json!({"jsonrpc": "2.0", "id": 3})] {
            let (status, _, _) = post(f.addr, Some(&sid), bad.clone()).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        }
        // A ping still works, and the session can go idle later (nothing pinned).
        let (status, _, _) = post(f.addr, Some(&sid), json!({"jsonrpc": "2.0", "id": 4, "method": "ping"})).await;
        assert_eq!(status, StatusCode::OK);
    });
}

#[test]
fn a_cancelled_call_ends_its_request_and_frees_its_id() {
    let options = HttpOptions {
        response_mode: ResponseMode::Json,
        ..HttpOptions::default()
    };
    let f = fixture(options);
    rt().block_on(async {
        let sid = initialize(f.addr, "a").await;
        let addr = f.addr;
        let s = sid.clone();
        let pending = tokio::spawn(async move { post(addr, Some(&s), call(42, "ward.slow")).await });
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.slow.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (status, _, _) = post(
            f.addr,
            Some(&sid),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}}),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED);
        // The request ends at once, though the handler has not ended yet.
        let (status, _, body) = tokio::time::timeout(Duration::from_secs(5), pending)
            .await
            .expect("answered")
            .unwrap();
        assert_eq!(status, StatusCode::ACCEPTED, "no response is due: {body}");
        let inv = f.slow.lock().pop().unwrap();
        // The cancellation reaches the token on the session's control
        // worker, which may run just after the response was written.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !inv.is_cancelled() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert!(inv.is_cancelled());
        inv.fail(true).unwrap();
        // Once the handler ended, the id is free again.
        let (status, _, body) = post(f.addr, Some(&sid), call(42, "ward.list")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(answer(&body)["result"]["isError"], false, "{body}");
    });
}

#[test]
fn a_closed_stream_restarts_the_idle_clock_and_a_stale_stream_is_not_404() {
    let options = HttpOptions {
        idle_timeout_ms: 400,
        ..HttpOptions::default()
    };
    let f = fixture(options);
    rt().block_on(async {
        let sid = initialize(f.addr, "a").await;
        let req = request(f.addr, "GET", Some(&sid), "")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = send(f.addr, req).await;
        assert_eq!(resp.status(), StatusCode::OK);
        tokio::time::sleep(Duration::from_millis(1200)).await; // held open: not idle
        drop(resp);
        tokio::time::sleep(Duration::from_millis(150)).await;
        let (status, _, _) = post(f.addr, Some(&sid), json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
        assert_eq!(status, StatusCode::OK, "the idle clock starts when the stream closes");
        let req = request(f.addr, "GET", Some(&sid), "")
            .header("last-event-id", "999-1")
            .body(Full::new(Bytes::new()))
            .unwrap();
        assert_eq!(send(f.addr, req).await.status(), StatusCode::BAD_REQUEST);
    });
}

#[test]
fn a_call_pending_at_shutdown_gets_its_aborted_outcome_on_its_stream() {
    let f = fixture(HttpOptions::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let runtime = rt();
    runtime.block_on(async {
        let sid = initialize(f.addr, "a").await;
        let addr = f.addr;
        tokio::spawn(async move {
            let got = post(addr, Some(&sid), call(50, "ward.slow")).await;
            let _ = tx.send(got);
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.slow.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let server = &f.server;
    std::thread::scope(|s| {
        s.spawn(|| server.shutdown(Duration::from_millis(2000)));
        // Keep the client's runtime running while the server shuts down.
        runtime.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });
    });
    let (_, _, body) = rx.recv_timeout(Duration::from_secs(5)).expect("the stream ended");
    let last = sse_messages(&body).pop().expect("an answer on the stream");
    assert_eq!(last["id"], 50);
    assert_eq!(
        last["result"]["_meta"]["rcip/outcome"]["error"]["code"], "EXECUTION_ABORTED",
        "{body}"
    );
}

#[test]
fn a_cancellation_is_never_queued_behind_the_handlers_it_should_stop() {
    let catalog = catalog();
    let c = catalog.clone();
    let stopped = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let (st, run) = (stopped.clone(), running.clone());
    let factory = move |_: &SessionRequest<'_>| -> Result<Held, String> {
        let runtime = Runtime::new(&c);
        let (st, run) = (st.clone(), run.clone());
        // Busy handlers that poll their token: they occupy both workers.
        let b = runtime
            .host()
            .bind(
                "ward.slow",
                Arc::new(move |inv: Invocation| {
                    run.fetch_add(1, Ordering::SeqCst);
                    let deadline = Instant::now() + Duration::from_secs(8);
                    while !inv.is_cancelled() && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    if inv.is_cancelled() {
                        st.fetch_add(1, Ordering::SeqCst);
                    }
                    let _ = inv.fail(true);
                }),
                None,
            )
            .unwrap();
        std::mem::forget(b);
        Ok(Held {
            runtime,
            ended: Arc::new(AtomicUsize::new(0)),
        })
    };
    let server = McpHttpServer::bind(&catalog, "127.0.0.1:0", HttpOptions::default(), factory).unwrap();
    server.start().unwrap();
    let addr = server.local_addr();
    rt().block_on(async {
        let sid = initialize(addr, "a").await;
        for id in [1, 2] {
            let s = sid.clone();
            tokio::spawn(async move {
                let _ = post(addr, Some(&s), call(id, "ward.slow")).await;
            });
        }
        // Both handlers hold both workers before the cancellations are sent.
        let deadline = Instant::now() + Duration::from_secs(5);
        while running.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(running.load(Ordering::SeqCst), 2);
        let started = Instant::now();
        for id in [1, 2] {
            post(
                addr,
                Some(&sid),
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}),
            )
            .await;
        }
        // Another session's initialize does not wait for them either.
        initialize(addr, "b").await;
        while stopped.load(Ordering::SeqCst) < 2 && started.elapsed() < Duration::from_secs(8) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Queued behind them, the cancellations would arrive after the
        // handlers gave up at their 8 s deadline, uncancelled.
        assert_eq!(stopped.load(Ordering::SeqCst), 2, "{:?}", started.elapsed());
    });
}

#[test]
fn a_loopback_bind_other_than_127_0_0_1_accepts_its_own_url() {
    let catalog = catalog();
    let c = catalog.clone();
    let server = McpHttpServer::bind(
        &catalog,
        "127.0.0.2:0",
        HttpOptions::default(),
        move |_: &SessionRequest<'_>| {
            Ok(Held {
                runtime: Runtime::new(&c),
                ended: Arc::new(AtomicUsize::new(0)),
            })
        },
    );
    let Ok(server) = server else { return }; // no 127.0.0.2 here: nothing to check
    server.start().unwrap();
    let addr = server.local_addr();
    rt().block_on(async {
        let text =
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
                .to_string();
        let req = Request::builder()
            .method("POST")
            .uri(format!("http://{addr}/mcp"))
            .header("host", addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(text)))
            .unwrap();
        assert_eq!(send(addr, req).await.status(), StatusCode::OK);
    });
}

// ---- stateless requests (MCP 2026-07-28) -------------------------------

/// Dual-era options (the default serves the legacy era only).
fn dual() -> HttpOptions {
    HttpOptions::from_value(&json!({"eras": "both"})).unwrap()
}

#[test]
fn by_default_both_eras_are_served() {
    let f = fixture(HttpOptions::default());
    rt().block_on(async {
        let d = modern_body(1, "server/discover", json!({}), "a");
        let (status, _, body) = modern_post(f.addr, &d).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(answer(&body)["result"]["supportedVersions"][0], "2026-07-28");
        // And a legacy client still opens a session.
        assert_eq!(initialize(f.addr, "old").await.len(), 32);
    });
}

#[test]
fn with_legacy_eras_a_stateless_post_is_a_legacy_one() {
    let f = fixture(HttpOptions::from_value(&json!({"eras": "legacy"})).unwrap());
    rt().block_on(async {
        let d = modern_body(1, "server/discover", json!({}), "a");
        let (status, _, body) = modern_post(f.addr, &d).await;
        // The legacy answer: 400 for the unknown version header.
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_ne!(answer(&body)["error"]["code"], -32020);
        assert_eq!(f.created.load(Ordering::SeqCst), 0);
    });
}

fn modern_meta(client: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"}
    })
}

fn modern_body(id: u64, method: &str, mut params: Value, client: &str) -> Value {
    params["_meta"] = modern_meta(client);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// POSTs `body` with the given extra headers (name, value); returns the
/// status, every response header and the body.
async fn post_with(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> (StatusCode, hyper::HeaderMap, String) {
    let text = body.to_string();
    let mut b = request(addr, "POST", None, &text);
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    let resp = send(addr, b.body(Full::new(Bytes::from(text))).unwrap()).await;
    let status = resp.status();
    let h = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, h, String::from_utf8(body.to_vec()).unwrap())
}

/// The headers a conforming modern client sends for `body`.
fn mirrored(body: &Value) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("mcp-protocol-version", "2026-07-28".to_string()),
        ("mcp-method", body["method"].as_str().unwrap().to_string()),
    ];
    if let Some(name) = body.pointer("/params/name").and_then(Value::as_str) {
        h.push(("mcp-name", name.to_string()));
    }
    h
}

async fn modern_post(addr: SocketAddr, body: &Value) -> (StatusCode, hyper::HeaderMap, String) {
    let h = mirrored(body);
    let refs: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
    post_with(addr, &refs, body).await
}

#[test]
fn stateless_requests_need_no_session_and_get_a_runtime_each() {
    let f = fixture(dual());
    rt().block_on(async {
        let discover = modern_body(1, "server/discover", json!({}), "ward-agent");
        let (status, headers, body) = modern_post(f.addr, &discover).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(headers.get("mcp-session-id").is_none(), "no session id minted");
        let r = answer(&body);
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(r["result"]["supportedVersions"][0], "2026-07-28");
        assert_eq!(
            r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "clinic"
        );
        // Each request's runtime comes from the factory, with the
        // request's clientInfo (the ward agent's context), and ends with
        // the response; an inbound Mcp-Session-Id is ignored.
        let list = modern_body(2, "tools/list", json!({}), "ward-agent");
        let mut h = mirrored(&list);
        h.push(("mcp-session-id", "0123456789abcdef0123456789abcdef".into()));
        let refs: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let (status, _, body) = post_with(f.addr, &refs, &list).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let r = answer(&body);
        assert_eq!(r["result"]["tools"][0]["_meta"]["rcip/relevance"], "current");
        assert_eq!(r["result"]["cacheScope"], "private");
        let other = modern_body(3, "tools/list", json!({}), "desk-agent");
        let (_, _, body) = modern_post(f.addr, &other).await;
        assert_eq!(answer(&body)["result"]["tools"][0]["_meta"]["rcip/relevance"], "other");
        // A call answered as SSE: no priming event, no buffering by proxies.
        let c = modern_body(4, "tools/call", json!({"name": "ward.list", "arguments": {}}), "a");
        let (status, headers, body) = modern_post(f.addr, &c).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers.get("content-type").unwrap(), "text/event-stream");
        assert_eq!(headers.get("x-accel-buffering").unwrap(), "no");
        let messages = sse_messages(&body);
        assert_eq!(messages.len(), 1, "{body}");
        assert_eq!(messages[0]["result"]["structuredContent"], json!({"beds": 3}));
        assert!(!body.contains("data: \n"), "no priming event: {body}");
        assert_eq!(f.created.load(Ordering::SeqCst), 4);
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.ended.load(Ordering::SeqCst) < 4 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(f.ended.load(Ordering::SeqCst), 4, "every request's runtime ended");
        assert!(f.server.sessions().is_empty(), "no session was created");
    });
}

#[test]
fn stateless_requests_are_checked_against_their_headers() {
    let f = fixture(dual());
    rt().block_on(async {
        let c = modern_body(1, "tools/call", json!({"name": "ward.list", "arguments": {}}), "a");
        let code = |body: &str| answer(body)["error"]["code"].clone();
        // Header missing, or not what the body says: 400 HeaderMismatch.
        for headers in [
            vec![("mcp-method", "tools/call"), ("mcp-name", "ward.list")],
            vec![
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "ward.list"),
            ],
            vec![("mcp-protocol-version", "2026-07-28"), ("mcp-name", "ward.list")],
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
                ("mcp-name", "ward.list"),
            ],
            vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")],
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "ward.slow"),
            ],
        ] {
            let (status, _, body) = post_with(f.addr, &headers, &c).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{headers:?}: {body}");
            assert_eq!(code(&body), -32020, "{headers:?}: {body}");
            assert_eq!(answer(&body)["id"], 1);
        }
        // The Base64 sentinel form of Mcp-Name is decoded first.
        let (status, _, body) = post_with(
            f.addr,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "=?base64?d2FyZC5saXN0?="),
            ],
            &c,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // An unsupported version: 400 with the supported ones.
        let mut old = c.clone();
        old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
        let (status, _, body) = post_with(
            f.addr,
            &[
                ("mcp-protocol-version", "1900-01-01"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "ward.list"),
            ],
            &old,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(code(&body), -32022);
        assert_eq!(answer(&body)["error"]["data"]["requested"], "1900-01-01");
        // Required _meta missing: 400 -32602.
        let mut bare = c.clone();
        bare["params"]["_meta"]
            .as_object_mut()
            .unwrap()
            .remove("io.modelcontextprotocol/clientCapabilities");
        let (status, _, body) = modern_post(f.addr, &bare).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, json!(-32602)),
            "{body}"
        );
        // A method the revision does not have: 404 -32601.
        let ping = modern_body(2, "ping", json!({}), "a");
        let (status, _, body) = modern_post(f.addr, &ping).await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, json!(-32601)), "{body}");
        // Nothing was built for any of them but the one good call.
        assert_eq!(f.created.load(Ordering::SeqCst), 1);
        // Legacy sessions are untouched: initialize still opens one.
        let sid = initialize(f.addr, "legacy").await;
        assert_eq!(sid.len(), 32);
    });
}

#[test]
fn closing_a_stateless_response_stream_cancels_the_call() {
    let f = fixture(dual());
    rt().block_on(async {
        // With a progress token, so the stream starts at once.
        let mut c = modern_body(1, "tools/call", json!({"name": "ward.slow", "arguments": {}}), "a");
        c["params"]["_meta"]["progressToken"] = json!("p");
        let text = c.to_string();
        let mut b = request(f.addr, "POST", None, &text);
        for (n, v) in mirrored(&c) {
            b = b.header(n, v);
        }
        let stream = tokio::net::TcpStream::connect(f.addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        let conn = tokio::spawn(conn);
        let resp = sender
            .send_request(b.body(Full::new(Bytes::from(text))).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.slow.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let inv = f.slow.lock().pop().expect("the handler ran");
        assert!(!inv.is_cancelled());
        // The client goes away: the connection closes.
        drop(resp);
        drop(sender);
        conn.abort();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !inv.is_cancelled() && Instant::now() < deadline {
            // A report makes the server write, so it sees the closed socket.
            let _ = inv.report_progress(1.0 + deadline.elapsed().as_secs_f64(), None, None);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            inv.is_cancelled(),
            "closing the stream cancelled the call (ended: {})",
            f.ended.load(Ordering::SeqCst)
        );
        while f.ended.load(Ordering::SeqCst) < 1 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(f.ended.load(Ordering::SeqCst), 1, "its runtime ended");
    });
}

#[test]
fn stateless_json_answers_keep_200_for_call_errors_and_400_for_a_missing_capability() {
    let options = HttpOptions {
        response_mode: ResponseMode::Json,
        ..dual()
    };
    let f = fixture(options);
    rt().block_on(async {
        // An unknown tool is a -32602 answer, not a refused request.
        let c = modern_body(1, "tools/call", json!({"name": "ward.nope", "arguments": {}}), "a");
        let (status, headers, body) = modern_post(f.addr, &c).await;
        assert_eq!(headers.get("content-type").unwrap(), "application/json");
        assert_eq!(
            (status, answer(&body)["error"]["code"].clone()),
            (StatusCode::OK, json!(-32602)),
            "{body}"
        );
        // A handler that needs elicitation the request did not declare.
        let addr = f.addr;
        let slow = modern_body(2, "tools/call", json!({"name": "ward.slow", "arguments": {}}), "a");
        let pending = tokio::spawn(async move { modern_post(addr, &slow).await });
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.slow.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let inv = f.slow.lock().pop().expect("the handler ran");
        let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
        assert!(inv.elicit("ok?", &schema, Box::new(|_| {})).is_err());
        inv.complete(json!({})).unwrap();
        let (status, _, body) = pending.await.unwrap();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer(&body)["error"]["code"], -32021);
        assert_eq!(
            answer(&body)["error"]["data"]["requiredCapabilities"],
            json!({"elicitation": {}})
        );
    });
}

/// Runs `ward.slow` statelessly as SSE; the handler reports progress first
/// when `progress` is set, then asks for elicitation the request did not
/// declare. Returns the HTTP answer.
async fn undeclared_elicitation_over_sse(f: &Fixture, progress: bool) -> (StatusCode, hyper::HeaderMap, String) {
    let addr = f.addr;
    let mut slow = modern_body(1, "tools/call", json!({"name": "ward.slow", "arguments": {}}), "a");
    if progress {
        slow["params"]["_meta"]["progressToken"] = json!("p1");
    }
    let pending = tokio::spawn(async move { modern_post(addr, &slow).await });
    let deadline = Instant::now() + Duration::from_secs(5);
    while f.slow.lock().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let inv = f.slow.lock().pop().expect("the handler ran");
    if progress {
        inv.report_progress(1.0, None, None).unwrap();
        // Let the progress reach the stream before the answer.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    assert!(inv.elicit("ok?", &schema, Box::new(|_| {})).is_err());
    inv.complete(json!({})).unwrap();
    pending.await.unwrap()
}

#[test]
fn a_missing_capability_is_400_even_when_streaming_unless_the_request_may_be_notified() {
    let f = fixture(HttpOptions {
        response_mode: ResponseMode::Sse,
        ..dual()
    });
    rt().block_on(async {
        let (status, headers, body) = undeclared_elicitation_over_sse(&f, false).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(headers.get("content-type").unwrap(), "application/json");
        assert_eq!(answer(&body)["error"]["code"], -32021);
        // A request that may be notified has its stream at once: 200, the
        // error in it.
        let (status, headers, body) = undeclared_elicitation_over_sse(&f, true).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(headers.get("content-type").unwrap(), "text/event-stream");
        let messages = sse_messages(&body);
        assert_eq!(messages[0]["method"], "notifications/progress", "{body}");
        assert_eq!(messages.last().unwrap()["error"]["code"], -32021);
    });
}

#[test]
fn closing_the_connection_of_a_stateless_json_request_cancels_the_call() {
    let options = HttpOptions {
        response_mode: ResponseMode::Json,
        ..dual()
    };
    let f = fixture(options);
    rt().block_on(async {
        let c = modern_body(1, "tools/call", json!({"name": "ward.slow", "arguments": {}}), "a");
        let text = c.to_string();
        let mut b = request(f.addr, "POST", None, &text);
        for (n, v) in mirrored(&c) {
            b = b.header(n, v);
        }
        let stream = tokio::net::TcpStream::connect(f.addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        let conn = tokio::spawn(conn);
        let pending = tokio::spawn(async move {
            let _ = sender.send_request(b.body(Full::new(Bytes::from(text))).unwrap()).await;
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.slow.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let inv = f.slow.lock().pop().expect("the handler ran");
        pending.abort();
        conn.abort();
        while !inv.is_cancelled() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(inv.is_cancelled(), "the connection closed: the call is cancelled");
    });
}

#[test]
fn a_dual_era_server_answers_a_modern_get_or_delete_405_and_keeps_legacy_ones() {
    let f = fixture(dual());
    rt().block_on(async {
        let sid = initialize(f.addr, "old").await;
        for method in ["GET", "DELETE"] {
            let req = request(f.addr, method, Some(&sid), "")
                .header("mcp-protocol-version", "2026-07-28")
                .body(Full::new(Bytes::new()))
                .unwrap();
            let resp = send(f.addr, req).await;
            assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
            assert_eq!(resp.headers().get("allow").unwrap(), "POST");
        }
        // A modern notification: 400 (2026-07-28 has none over HTTP).
        let mut n = modern_body(9, "notifications/cancelled", json!({"requestId": 1}), "a");
        n.as_object_mut().unwrap().remove("id");
        let (status, _, body) = modern_post(f.addr, &n).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer(&body)["error"]["code"], -32600);
        assert!(body.contains("no client notifications"), "{body}");
        // The legacy session's own DELETE still ends it.
        let req = request(f.addr, "DELETE", Some(&sid), "")
            .header("mcp-protocol-version", "2025-11-25")
            .body(Full::new(Bytes::new()))
            .unwrap();
        assert_eq!(send(f.addr, req).await.status(), StatusCode::OK);
    });
}

#[test]
fn a_modern_only_server_answers_get_and_delete_405_and_refuses_legacy_posts() {
    let options = HttpOptions::from_value(&json!({"eras": "modern"})).unwrap();
    let f = fixture(options);
    rt().block_on(async {
        for method in ["GET", "DELETE"] {
            let req = request(f.addr, method, Some("0123456789abcdef0123456789abcdef"), "")
                .header("mcp-protocol-version", "2026-07-28")
                .body(Full::new(Bytes::new()))
                .unwrap();
            let resp = send(f.addr, req).await;
            assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
            assert_eq!(resp.headers().get("allow").unwrap(), "POST");
        }
        // A legacy client's initialize: 400, naming the revision spoken.
        let (status, sid, body) = post(
            f.addr,
            None,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(sid.is_none());
        assert!(body.contains("2026-07-28"), "{body}");
        // A notification: 400.
        let (status, _, _) = post(
            f.addr,
            None,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // A modern request is served.
        let d = modern_body(1, "server/discover", json!({}), "a");
        let (status, _, body) = modern_post(f.addr, &d).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(answer(&body)["result"]["supportedVersions"], json!(["2026-07-28"]));
        assert_eq!(f.created.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn shutdown_ends_stateless_requests_in_flight_and_aborts_their_calls() {
    let f = fixture(dual());
    // The client's runtime outlives the shutdown: its connection stays
    // open, so it is the shutdown that ends the request.
    let client = rt();
    client.block_on(async {
        let addr = f.addr;
        tokio::spawn(async move {
            let c = modern_body(1, "tools/call", json!({"name": "ward.slow", "arguments": {}}), "a");
            let _ = modern_post(addr, &c).await;
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while f.slow.lock().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    assert_eq!(f.slow.lock().len(), 1, "the handler ran");
    assert_eq!(f.ended.load(Ordering::SeqCst), 0, "still in flight");
    let started = Instant::now();
    f.server.shutdown(Duration::from_millis(2000));
    assert!(started.elapsed() < Duration::from_secs(6), "{:?}", started.elapsed());
    assert_eq!(f.ended.load(Ordering::SeqCst), 1, "the request's runtime ended once");
    let events = f.events.lock().join("\n");
    assert!(events.contains("EXECUTION_ABORTED"), "{events}");
    let _ = f.slow.lock().pop().unwrap().complete(json!({}));
    drop(client);
}

#[test]
fn an_idle_call_stream_gets_keep_alive_comments_until_its_answer() {
    let f = fixture(HttpOptions {
        keep_alive_ms: 100,
        ..HttpOptions::default()
    });
    rt().block_on(async {
        let sid = initialize(f.addr, "a").await;
        let req = request(f.addr, "POST", Some(&sid), "")
            .body(Full::new(Bytes::from(call(21, "ward.slow").to_string())))
            .unwrap();
        let mut body = send(f.addr, req).await.into_body();
        let priming = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(priming.starts_with(b"id: "), "the priming event first");
        // Nothing happens for a while: comments keep the stream alive.
        let mut comments = 0;
        let started = Instant::now();
        while comments < 3 {
            let frame = tokio::time::timeout(Duration::from_secs(2), body.frame())
                .await
                .expect("a comment within the period")
                .unwrap()
                .unwrap()
                .into_data()
                .unwrap();
            assert_eq!(&frame[..], b": keep-alive\n\n");
            comments += 1;
        }
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "one per period, not more"
        );
        let inv = f.slow.lock().pop().expect("the handler got the call");
        inv.complete(json!({"report": "late"})).unwrap();
        let mut rest = String::new();
        while let Some(Ok(frame)) = body.frame().await {
            rest.push_str(std::str::from_utf8(frame.data_ref().unwrap()).unwrap());
        }
        let m = sse_messages(&rest);
        assert_eq!(
            m.last().unwrap()["result"]["structuredContent"]["report"],
            "late",
            "{rest}"
        );
    });
}

#[test]
fn drain_refuses_new_work_lets_calls_finish_then_stops() {
    let f = fixture(HttpOptions::default());
    let addr = f.addr;
    let sid = rt().block_on(initialize(addr, "a"));
    // A call in flight when the drain starts.
    let slow =
        std::thread::spawn(move || rt().block_on(async move { post(addr, Some(&sid), call(31, "ward.slow")).await }));
    let deadline = Instant::now() + Duration::from_secs(5);
    while f.slow.lock().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(f.slow.lock().len(), 1);
    std::thread::scope(|scope| {
        let drained = scope.spawn(|| {
            let started = Instant::now();
            f.server.drain(Duration::from_secs(10));
            started.elapsed()
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while !f.server.is_draining() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        rt().block_on(async {
            // Not ready, and a new session is refused with Retry-After.
            let req = request(addr, "GET", None, "")
                .uri(format!("http://{addr}/readyz"))
                .body(Full::new(Bytes::new()))
                .unwrap();
            let resp = send(addr, req).await;
            assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert!(resp.headers().contains_key("retry-after"));
            let text = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&text[..], b"draining\n");
            let (status, sid, body) = post(
                addr,
                None,
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}}}),
            )
            .await;
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
            assert!(sid.is_none() && body.contains("draining"), "{body}");
        });
        // The call in flight finishes; then the drain ends the server.
        std::thread::sleep(Duration::from_millis(100));
        assert!(!drained.is_finished(), "the drain waits for the call in flight");
        f.slow
            .lock()
            .pop()
            .unwrap()
            .complete(json!({"report": "in time"}))
            .unwrap();
        let took = drained.join().unwrap();
        assert!(
            took < Duration::from_secs(5),
            "it stops once the call is answered: {took:?}"
        );
    });
    let (status, _, body) = slow.join().unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        answer(&body)["result"]["structuredContent"]["report"],
        "in time",
        "{body}"
    );
    assert!(f.server.sessions().is_empty());
    assert_eq!(f.ended.load(Ordering::SeqCst), 1);
}

#[test]
fn every_answered_request_gets_one_access_record() {
    let f = fixture(HttpOptions {
        trusted_proxies: vec!["127.0.0.1".parse().unwrap()],
        ..HttpOptions::default()
    });
    let records: Arc<Mutex<Vec<rcip_mcp::http::ops::AccessRecord>>> = Arc::default();
    let r = records.clone();
    f.server
        .set_access_log(Some(Arc::new(move |rec: &rcip_mcp::http::ops::AccessRecord| {
            assert_eq!(std::thread::current().name(), Some("rcip-mcp-log"));
            r.lock().push(rec.clone())
        })))
        .unwrap();
    rt().block_on(async {
        let sid = initialize(f.addr, "logged").await;
        let req = request(f.addr, "POST", Some(&sid), "")
            .header("x-forwarded-for", "203.0.113.7")
            .body(Full::new(Bytes::from(call(41, "ward.list").to_string())))
            .unwrap();
        let resp = send(f.addr, req).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let _ = resp.into_body().collect().await;
        let req = request(f.addr, "GET", None, "")
            .uri(format!("http://{}/elsewhere", f.addr))
            .body(Full::new(Bytes::new()))
            .unwrap();
        assert_eq!(send(f.addr, req).await.status(), StatusCode::NOT_FOUND);
    });
    f.server.shutdown(Duration::from_secs(2));
    let records = records.lock();
    let summary: Vec<_> = records
        .iter()
        .map(|r| {
            (
                r.http_method,
                r.path.as_str(),
                r.rpc_method.as_deref(),
                r.tool.as_deref(),
                r.era,
                r.status,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("POST", "/mcp", Some("initialize"), None, Some("legacy"), 200),
            (
                "POST",
                "/mcp",
                Some("notifications/initialized"),
                None,
                Some("legacy"),
                202
            ),
            (
                "POST",
                "/mcp",
                Some("tools/call"),
                Some("ward.list"),
                Some("legacy"),
                200
            ),
            ("GET", "/elsewhere", None, None, None, 404),
        ]
    );
    assert_eq!(
        records[2].forwarded_for.as_deref(),
        Some("203.0.113.7"),
        "from a trusted proxy"
    );
    assert_eq!(records[0].forwarded_for, None);
    assert!(records.iter().all(|r| r.peer.is_loopback() && r.subject.is_none()));
    let json: Value = serde_json::from_str(&records[2].to_json()).unwrap();
    assert_eq!(json["tool"], "ward.list");
    assert_eq!(json["forwardedFor"], "203.0.113.7");
    assert!(json["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(f.server.access_log_dropped(), 0);
}
