//! A server mounted in the host's own HTTP stack (`McpHttpServer::mountable`
//! and `service`): the host's hyper server on 127.0.0.1 with its own
//! routes and its own authentication in front, rcip answering the MCP
//! endpoint behind them, for a legacy session and a stateless request;
//! the tower `Service` impl; and the errors of the wrong uses.
#![cfg(feature = "http")]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, Runtime, RuntimeBuilder};
use rcip_mcp::http::{HttpOptions, McpBody, McpHttpServer, SessionRequest};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "mount", "name": "Mount", "description": "A mounted server.", "version": "1.0.0"},
        "scopes": [{"id": "desk", "title": "Desk", "description": "The desk."}],
        "capabilities": [
            {"id": "desk.count", "title": "Count", "description": "Counts.", "scopeIds": ["desk"],
             "effect": "read", "inputSchema": {"type": "object", "additionalProperties": false},
             "outputSchema": {"type": "object"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).unwrap()
}

fn server(created: Arc<AtomicUsize>) -> McpHttpServer {
    let catalog = catalog();
    let c = catalog.clone();
    let factory = move |req: &SessionRequest<'_>| -> Result<Runtime, String> {
        created.fetch_add(1, Ordering::SeqCst);
        let runtime = RuntimeBuilder::new(&c).build();
        // The host's own authentication put the tenant in a header it
        // forwards; the runtime answers with it.
        let tenant = req.header("x-tenant").unwrap_or("none").to_string();
        let binding = runtime
            .host()
            .bind(
                "desk.count",
                Arc::new(move |inv: Invocation| inv.complete(json!({"count": 7, "tenant": tenant})).unwrap()),
                None,
            )
            .unwrap();
        std::mem::forget(binding);
        Ok(runtime)
    };
    let options = HttpOptions {
        forward_headers: vec!["x-tenant".into()],
        ..HttpOptions::default()
    };
    McpHttpServer::mountable(&catalog, options, factory).unwrap()
}

type HostBody = http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>;

/// The host's own stack: `/health` is its own, `/mcp` needs its API key
/// (it sets `x-tenant` from it), everything else is rcip's answer.
async fn host_route(
    mcp: rcip_mcp::http::McpService<Runtime>,
    mut req: Request<Incoming>,
) -> Result<Response<HostBody>, Infallible> {
    if req.uri().path() == "/health" {
        return Ok(Response::new(Full::new(Bytes::from_static(b"ok")).boxed_unsync()));
    }
    match req.headers().get("x-api-key").map(|v| v.as_bytes()) {
        Some(b"key-of-acme") => {
            req.headers_mut().insert("x-tenant", "acme".parse().unwrap());
        }
        _ => {
            let mut r = Response::new(Full::new(Bytes::from_static(b"no key")).boxed_unsync());
            *r.status_mut() = StatusCode::UNAUTHORIZED;
            return Ok(r);
        }
    }
    let answer: Response<McpBody> = mcp.serve(req).await?;
    Ok(answer)
}

/// Serves the host's stack on 127.0.0.1 for `connections` connections.
async fn host_server(mcp: rcip_mcp::http::McpService<Runtime>, connections: usize) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..connections {
            let Ok(Ok((stream, peer))) = tokio::time::timeout(Duration::from_secs(20), listener.accept()).await else {
                return;
            };
            let mcp = mcp.with_peer(peer);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| host_route(mcp.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

async fn post(
    addr: SocketAddr,
    key: Option<&str>,
    headers: &[(&str, &str)],
    body: Value,
) -> (StatusCode, hyper::HeaderMap, String) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut b = Request::post("/mcp")
        .header("host", format!("localhost:{}", addr.port()))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(k) = key {
        b = b.header("x-api-key", k);
    }
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    let req = b.body(Full::new(Bytes::from(body.to_string()))).unwrap();
    let res = tokio::time::timeout(Duration::from_secs(10), sender.send_request(req))
        .await
        .unwrap()
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = tokio::time::timeout(Duration::from_secs(10), res.into_body().collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    (status, headers, String::from_utf8_lossy(&bytes).into_owned())
}

/// The JSON-RPC message of a JSON or single-event SSE answer.
fn message(text: &str) -> Value {
    let data: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect::<Vec<_>>()
        .join("\n");
    serde_json::from_str(if data.is_empty() { text } else { &data }).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_server_serves_sessions_and_stateless_requests_behind_the_hosts_stack() {
    let created = Arc::new(AtomicUsize::new(0));
    let server = server(created.clone());
    assert!(server.start().is_err(), "a mounted server has no listener to start");
    let addr = host_server(server.service().unwrap(), 16).await;

    // The host's own route and the host's own refusal: rcip never sees them.
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let health = sender
        .send_request(Request::get("/health").body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let (status, _, body) = post(addr, None, &[], json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
    assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, "no key"));
    assert_eq!(created.load(Ordering::SeqCst), 0);

    // A legacy session through the host's stack.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mounted", "version": "1"}}});
    let (status, headers, body) = post(addr, Some("key-of-acme"), &[], init).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let sid = headers["mcp-session-id"].to_str().unwrap().to_string();
    assert_eq!(message(&body)["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(server.sessions().len(), 1);
    assert_eq!(
        server.sessions()[0].client_info,
        json!({"name": "mounted", "version": "1"})
    );
    let session_headers = [("mcp-session-id", sid.as_str()), ("mcp-protocol-version", "2025-11-25")];
    let (status, _, _) = post(
        addr,
        Some("key-of-acme"),
        &session_headers,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "desk.count", "arguments": {}}});
    let (status, _, body) = post(addr, Some("key-of-acme"), &session_headers, call).await;
    assert_eq!(status, StatusCode::OK);
    let answer = message(&body);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"count": 7, "tenant": "acme"}),
        "{answer}"
    );

    // A stateless (2026-07-28) request: a runtime of its own, gone after.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "1"}});
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "desk.count", "arguments": {}, "_meta": meta}});
    let modern_headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "desk.count"),
    ];
    let (status, _, body) = post(addr, Some("key-of-acme"), &modern_headers, call).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let answer = message(&body);
    assert_eq!(answer["result"]["structuredContent"]["tenant"], "acme", "{answer}");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(created.load(Ordering::SeqCst), 2);
    assert_eq!(server.sessions().len(), 1, "the stateless request left no session");

    // rcip's own checks still hold behind the host's stack.
    let (status, _, body) = post(
        addr,
        Some("key-of-acme"),
        &[("origin", "https://evil.example")],
        json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    server.shutdown(Duration::from_secs(2));
    assert!(server.sessions().is_empty());
    assert!(server.service().is_err(), "a shut-down server gives no service");
}

#[tokio::test(flavor = "current_thread")]
async fn the_tower_service_answers_as_the_hyper_one() {
    let server = server(Arc::default());
    let mut service = server.service().unwrap();
    let peer: SocketAddr = "127.0.0.1:4000".parse().unwrap();
    let mut req = Request::post("/elsewhere")
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))
        .unwrap();
    req.extensions_mut().insert(peer);
    std::future::poll_fn(|cx| tower_service::Service::<Request<Full<Bytes>>>::poll_ready(&mut service, cx))
        .await
        .unwrap();
    let res = tower_service::Service::call(&mut service, req).await.unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let req = Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}}})
            .to_string(),
        )))
        .unwrap();
    let res = tower_service::Service::call(&mut service, req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers().contains_key("mcp-session-id"));
    // Off the runtime so the shutdown's waits do not block the test's one
    // thread while the server's futures need it.
    tokio::task::spawn_blocking(move || server.shutdown(Duration::from_secs(2)))
        .await
        .unwrap();
}

#[test]
fn service_needs_a_tokio_runtime_and_a_mountable_server() {
    let server = server(Arc::default());
    let e = server.service().unwrap_err();
    assert!(e.to_string().contains("tokio runtime"), "{e}");
    let bound = McpHttpServer::bind(
        &catalog(),
        "127.0.0.1:0",
        HttpOptions::default(),
        |_: &SessionRequest<'_>| Ok(RuntimeBuilder::new(&catalog()).build()),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _enter = rt.enter();
    let e = bound.service().unwrap_err();
    assert!(e.to_string().contains("own listener"), "{e}");
}

async fn get_text(
    service: &rcip_mcp::http::McpService<Runtime>,
    path: &str,
    host: Option<&str>,
) -> (StatusCode, String) {
    let mut b = Request::get(path);
    if let Some(h) = host {
        b = b.header("host", h);
    }
    let res = service.serve(b.body(Full::new(Bytes::new())).unwrap()).await.unwrap();
    let status = res.status();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics() {
    let catalog = catalog();
    let c = catalog.clone();
    let options = HttpOptions {
        max_sessions: 1,
        metrics_path: Some("/metrics".into()),
        ..HttpOptions::default()
    };
    let server = McpHttpServer::mountable(&catalog, options, move |_: &SessionRequest<'_>| {
        Ok(RuntimeBuilder::new(&c).build())
    })
    .unwrap();
    let service = server.service().unwrap();
    // Probes need no Host header (a load balancer's check may send none).
    assert_eq!(
        get_text(&service, "/healthz", None).await,
        (StatusCode::OK, "ok\n".into())
    );
    assert_eq!(
        get_text(&service, "/readyz", None).await,
        (StatusCode::OK, "ready\n".into())
    );
    // Metrics do: they answer after the Host check.
    assert_eq!(get_text(&service, "/metrics", None).await.0, StatusCode::BAD_REQUEST);
    let init = Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}}})
            .to_string(),
        )))
        .unwrap();
    assert_eq!(service.serve(init).await.unwrap().status(), StatusCode::OK);
    // One session of at most one: not ready for more.
    let (status, body) = get_text(&service, "/readyz", None).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "at capacity (maxSessions)\n")
    );
    let (status, text) = get_text(&service, "/metrics", Some("localhost")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        text.contains("rcip_mcp_http_requests_total{method=\"POST\",status=\"200\"} 1"),
        "{text}"
    );
    assert!(text.contains("rcip_mcp_sessions 1"), "{text}");
    assert!(
        text.contains("rcip_mcp_http_request_duration_seconds_count{method=\"POST\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("rcip_mcp_http_requests_in_flight 1"),
        "the scrape itself is in flight: {text}"
    );
    let svc = service.clone();
    tokio::task::spawn_blocking(move || server.shutdown(Duration::from_secs(2)))
        .await
        .unwrap();
    // A shut-down server answers nothing but 503, its probes included.
    assert_eq!(get_text(&svc, "/readyz", None).await.0, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        get_text(&svc, "/healthz", None).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[test]
fn operations_paths_are_checked() {
    let bad = |o: HttpOptions| {
        McpHttpServer::mountable(&catalog(), o, |_: &SessionRequest<'_>| {
            Ok(RuntimeBuilder::new(&catalog()).build())
        })
        .unwrap_err()
        .to_string()
    };
    assert!(bad(HttpOptions {
        health_path: Some("/mcp".into()),
        ..HttpOptions::default()
    })
    .contains("endpoint"));
    assert!(bad(HttpOptions {
        metrics_path: Some("/readyz".into()),
        ..HttpOptions::default()
    })
    .contains("another"));
    assert!(bad(HttpOptions {
        ready_path: Some("readyz".into()),
        ..HttpOptions::default()
    })
    .contains("starting"));
    let o = HttpOptions::from_value(&json!({"healthPath": null, "metricsPath": "/m"})).unwrap();
    assert_eq!((o.health_path, o.metrics_path), (None, Some("/m".to_string())));
}
