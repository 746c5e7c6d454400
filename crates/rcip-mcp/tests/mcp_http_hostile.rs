//! Hostile input over Streamable HTTP (issue 26), driven over raw sockets
//! on 127.0.0.1 so that the requests can be what no well-behaved client
//! library sends: duplicate headers, both framings, pipelined floods.
#![cfg(feature = "http")]

use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, Runtime, RuntimeBuilder};
use rcip_mcp::http::{HttpOptions, McpHttpServer, SessionRequest};

/// `rcip_mcp::http::CLIENT_TEXT_MAX_BYTES` as docs/MCP.md states it.
const CLIENT_TEXT_MAX_BYTES: usize = 256;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "clinic", "name": "Clinic", "description": "A clinic for tests.", "version": "1.0.0"},
        "scopes": [{"id": "ward", "title": "Ward", "description": "The ward."}],
        "capabilities": [
            {"id": "ward.list", "title": "List beds", "description": "Lists beds.", "scopeIds": ["ward"],
             "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).unwrap()
}

fn server(options: HttpOptions) -> McpHttpServer<Runtime> {
    let catalog = catalog();
    let c = catalog.clone();
    let factory = move |_: &SessionRequest<'_>| -> Result<Runtime, String> {
        let runtime = RuntimeBuilder::new(&c).build();
        let b = runtime
            .host()
            .bind(
                "ward.list",
                std::sync::Arc::new(|inv: Invocation| inv.complete(json!({"beds": 3})).unwrap()),
                None,
            )
            .unwrap();
        std::mem::forget(b);
        Ok(runtime)
    };
    let server = McpHttpServer::bind(&catalog, "127.0.0.1:0", options, factory).unwrap();
    server.start().unwrap();
    server
}

/// One HTTP exchange on a new connection: `head` is the request line and
/// headers without the blank line; `Content-Length` is added unless
/// `head` has a framing header. Returns (status, head, body) of the answer.
fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let lower = head.to_ascii_lowercase();
    let mut req = head.to_string();
    if !lower.contains("content-length:") && !lower.contains("transfer-encoding:") {
        req.push_str(&format!("\r\nContent-Length: {}", body.len()));
    }
    req.push_str("\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    // The server may answer (and close) before reading all of a refused body.
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let (h, b) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = h.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, h.to_string(), b.to_string())
}

fn post_head(addr: SocketAddr, extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream{extra}",
        addr.port()
    )
}

fn header_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn initialize_body(client_info: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}})
    .to_string()
    .into_bytes()
}

#[test]
fn a_session_keeps_only_bounded_client_info() {
    let server = server(HttpOptions::default());
    let addr = server.local_addr();
    let long = "é".repeat(300); // 600 bytes, two per character
    let junk: Vec<u8> = vec![0; 100_000];
    let (status, head, body) = exchange(
        addr,
        &post_head(addr, ""),
        &initialize_body(json!({"name": long, "version": "1.0", "title": 7, "junk": junk,
            "nested": {"deep": [1, 2, 3]}})),
    );
    assert_eq!(status, 200, "{body}");
    assert!(header_of(&head, "mcp-session-id").is_some());
    let sessions = server.sessions();
    assert_eq!(sessions.len(), 1);
    let info = &sessions[0].client_info;
    let kept = info.as_object().unwrap();
    assert_eq!(
        kept.keys().collect::<Vec<_>>(),
        ["name", "version"],
        "only name and version are kept"
    );
    let name = info["name"].as_str().unwrap();
    assert!(name.len() <= CLIENT_TEXT_MAX_BYTES && name.len() >= CLIENT_TEXT_MAX_BYTES - 1);
    assert!(long.starts_with(name));
    assert_eq!(info["version"], "1.0");
    assert!(info.get("title").is_none(), "a title that is not a string is not kept");
    assert!(info.get("junk").is_none());

    // A protocol version of 100 KB is kept at most as the bound.
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "9".repeat(100_000), "capabilities": {}}})
    .to_string();
    let (status, _, text) = exchange(addr, &post_head(addr, ""), body.as_bytes());
    assert_eq!(status, 200, "{text}");
    let sessions = server.sessions();
    assert_eq!(sessions.len(), 2);
    assert!(sessions
        .iter()
        .all(|s| s.protocol_version.len() <= CLIENT_TEXT_MAX_BYTES));
    assert!(sessions.iter().any(|s| s.client_info == json!({})));
}

/// A session id from a fresh `initialize`.
fn session(addr: SocketAddr) -> String {
    let (status, head, body) = exchange(addr, &post_head(addr, ""), &initialize_body(json!({"name": "t"})));
    assert_eq!(status, 200, "{body}");
    header_of(&head, "mcp-session-id").unwrap().to_string()
}

fn ping_body(id: u64) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
        .to_string()
        .into_bytes()
}

#[test]
fn duplicate_host_or_origin_headers_are_400() {
    let server = server(HttpOptions::default());
    let addr = server.local_addr();
    let sid = session(addr);
    let port = addr.port();
    let extra = format!("\r\nMcp-Session-Id: {sid}");
    // Both values allowed, still refused: which one a proxy checked is unknown.
    let twice_host = format!("{}{extra}\r\nHost: localhost:{port}", post_head(addr, ""));
    let (status, _, body) = exchange(addr, &twice_host, &ping_body(1));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Host"), "{body}");
    let origin = format!("\r\nOrigin: http://localhost:{port}");
    let twice_origin = format!("{}{extra}{origin}{origin}", post_head(addr, ""));
    let (status, _, body) = exchange(addr, &twice_origin, &ping_body(2));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Origin"), "{body}");
    // One of each is fine.
    let once = format!("{}{extra}{origin}", post_head(addr, ""));
    let (status, _, body) = exchange(addr, &once, &ping_body(3));
    assert_eq!(status, 200, "{body}");
}

#[test]
fn transfer_encoding_with_content_length_is_read_as_chunked_and_the_connection_closes() {
    // hyper (RFC 9112 section 6.1) reads such a request by its
    // Transfer-Encoding alone, drops the Content-Length and closes the
    // connection after the answer: bytes a front end would have framed
    // differently are never read as another request.
    let server = server(HttpOptions::default());
    let addr = server.local_addr();
    let sid = session(addr);
    let ping = ping_body(1);
    let smuggled = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nMcp-Session-Id: {sid}\r\nContent-Length: {}\r\n\r\n{}",
        addr.port(),
        ping_body(2).len(),
        String::from_utf8(ping_body(2)).unwrap()
    );
    let chunked = format!(
        "{:x}\r\n{}\r\n0\r\n\r\n",
        ping.len(),
        String::from_utf8(ping.clone()).unwrap()
    );
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
         Mcp-Session-Id: {sid}\r\nContent-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n{chunked}{smuggled}",
        addr.port(),
        ping.len()
    );
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out); // ends: the server closed the connection
    let text = String::from_utf8_lossy(&out);
    assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "one answer only: {text}");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains(r#""id":1"#) && !text.contains(r#""id":2"#), "{text}");
}

#[test]
fn duplicate_keys_in_the_envelope_are_invalid_requests() {
    let server = server(HttpOptions::default());
    let addr = server.local_addr();
    let sid = session(addr);
    let head = post_head(addr, &format!("\r\nMcp-Session-Id: {sid}"));
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ward.list","name":"ward.other","arguments":{}}}"#,
    ] {
        let (status, _, text) = exchange(addr, &head, body.as_bytes());
        assert_eq!(status, 400, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["code"], -32600, "{text}");
        assert_eq!(v["id"], Value::Null);
    }
    // Duplicate keys inside the arguments keep the RCIP rule (last wins).
    let body =
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ward.list","arguments":{"a":1,"a":2}}}"#;
    let head = post_head(addr, &format!("\r\nMcp-Session-Id: {sid}")).replace(", text/event-stream", "");
    let (status, _, text) = exchange(addr, &head, body.as_bytes());
    assert_eq!(status, 200, "{text}");
}

#[test]
fn a_half_closed_connection_gets_every_pipelined_answer() {
    // halfClose: by default the end of input drops the request in
    // progress (a disconnect cancels a stateless call; tests/mcp_http.rs).
    let server = server(HttpOptions {
        half_close: true,
        ..HttpOptions::default()
    });
    let addr = server.local_addr();
    let sid = session(addr);
    // 1000: on hyper's default (no half-close) the last answer was lost
    // from about here (600 passed, 1000 and 2000 lost one).
    let n = 1000;
    let mut all = Vec::new();
    for id in 0..n {
        let body = ping_body(id);
        all.extend_from_slice(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
                 Mcp-Session-Id: {sid}\r\nContent-Length: {}\r\n\r\n",
                addr.port(),
                body.len()
            )
            .as_bytes(),
        );
        all.extend_from_slice(&body);
    }
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut reader = s.try_clone().unwrap();
    let collect = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = reader.read_to_end(&mut out);
        out
    });
    s.write_all(&all).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let out = collect.join().unwrap();
    let text = String::from_utf8_lossy(&out);
    assert_eq!(text.matches("HTTP/1.1 200").count(), n as usize);
    assert!(text.contains(&format!(r#""id":{}"#, n - 1)), "the last answer arrived");
}

/// A connection to `addr` from the local address `from` (127.0.0.x: a
/// peer of its own).
fn connect_from(from: &str, addr: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        socket.connect(addr).await.unwrap()
    });
    let s = s.into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// `exchange` on a given connection.
fn exchange_on(mut s: TcpStream, head: &str, body: &[u8]) -> (u16, String, String) {
    let req = format!("{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let (h, b) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = h.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, h.to_string(), b.to_string())
}

#[test]
fn every_503_says_retry_after() {
    let server = server(HttpOptions {
        max_sessions: 1,
        ..HttpOptions::default()
    });
    let addr = server.local_addr();
    session(addr);
    let (status, head, body) = exchange(addr, &post_head(addr, ""), &initialize_body(json!({"name": "t"})));
    assert_eq!(status, 503, "{body}");
    assert_eq!(header_of(&head, "retry-after"), Some("5"), "{head}");
}

#[test]
fn one_peer_cannot_take_every_session() {
    let server = server(HttpOptions {
        max_sessions: 10,
        max_sessions_per_peer: 2,
        ..HttpOptions::default()
    });
    let addr = server.local_addr();
    let first = session(addr);
    session(addr);
    let (status, head, body) = exchange(addr, &post_head(addr, ""), &initialize_body(json!({"name": "t"})));
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("maxSessionsPerPeer"), "{body}");
    assert_eq!(header_of(&head, "retry-after"), Some("5"));
    // Another peer still gets a session.
    let other = connect_from("127.0.0.2", addr);
    let (status, _, body) = exchange_on(other, &post_head(addr, ""), &initialize_body(json!({"name": "t"})));
    assert_eq!(status, 200, "{body}");
    // A session that ends gives its place back.
    assert!(server.end_session(&first));
    let (status, _, body) = exchange(addr, &post_head(addr, ""), &initialize_body(json!({"name": "t"})));
    assert_eq!(status, 200, "{body}");
}

#[test]
fn one_peer_cannot_take_every_connection_or_request_slot() {
    let server = server(HttpOptions {
        max_connections_per_peer: 2,
        max_in_flight_per_peer: 1,
        ..HttpOptions::default()
    });
    let addr = server.local_addr();
    // A request whose body never comes is in flight (until bodyTimeoutMs).
    let mut slow = TcpStream::connect(addr).unwrap();
    let head = format!("{}\r\nContent-Length: 100\r\n\r\n{{", post_head(addr, ""));
    slow.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (status, head, body) = exchange(addr, &post_head(addr, ""), &initialize_body(json!({"name": "t"})));
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("maxInFlightPerPeer"), "{body}");
    assert_eq!(header_of(&head, "retry-after"), Some("5"));
    // Two connections held: a third from that peer is closed at once.
    std::thread::sleep(Duration::from_millis(200));
    let _second = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut third = TcpStream::connect(addr).unwrap();
    third.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 16];
    assert!(matches!(third.read(&mut buf), Ok(0) | Err(_)), "closed");
    // Another peer is served.
    let other = connect_from("127.0.0.3", addr);
    let (status, _, body) = exchange_on(other, &post_head(addr, ""), &initialize_body(json!({"name": "t"})));
    assert_eq!(status, 200, "{body}");
    drop(slow);
}

#[test]
fn an_initialize_alone_and_an_idle_get_do_not_hold_a_session() {
    let server = server(HttpOptions {
        idle_timeout_ms: 400,
        initialize_timeout_ms: 100,
        idle_stream_timeout_ms: 800,
        ..HttpOptions::default()
    });
    let addr = server.local_addr();
    // Nothing after the initialize: gone after initializeTimeoutMs.
    let alone = session(addr);
    // A session that holds a GET stream open and says nothing else.
    let listening = session(addr);
    let mut get = TcpStream::connect(addr).unwrap();
    get.write_all(
        format!(
            "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {listening}\r\n\r\n",
            addr.port()
        )
        .as_bytes(),
    )
    .unwrap();
    let ids = || server.sessions().into_iter().map(|s| s.session_id).collect::<Vec<_>>();
    std::thread::sleep(Duration::from_millis(350));
    let now = ids();
    assert!(!now.contains(&alone), "the unused session ended");
    assert!(now.contains(&listening), "the listening session is not idle yet");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !ids().contains(&listening),
        "an idle GET holds a session only for idleStreamTimeoutMs"
    );
    drop(get);
}

#[test]
fn a_body_over_the_limit_is_413_and_the_client_can_finish_sending() {
    let server = server(HttpOptions {
        max_body_bytes: 1024,
        ..HttpOptions::default()
    });
    let addr = server.local_addr();
    for _ in 0..5 {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let body = vec![b' '; 4 << 20];
        let head = format!("{}\r\nContent-Length: {}\r\n\r\n", post_head(addr, ""), body.len());
        s.write_all(head.as_bytes()).unwrap();
        // The whole body goes through: the server reads (and drops) it.
        s.write_all(&body).expect("the server kept reading the refused body");
        let mut buf = vec![0u8; 4096];
        let n = s.read(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    }
}

#[test]
fn a_large_body_is_not_parsed_on_the_io_thread() {
    // One I/O thread (the default). A 4 MB body (2 million zeros) takes
    // long to parse, more so in a debug build; a ping of another session
    // sent while it is parsed must not wait for that parse.
    let server = server(HttpOptions::default());
    let addr = server.local_addr();
    let sid = session(addr);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": vec![0u8; 2_000_000]}})
        .to_string()
        .into_bytes();
    let started = std::time::Instant::now();
    let attacker = std::thread::spawn(move || {
        let (status, _, _) = exchange(addr, &post_head(addr, ""), &big);
        assert_eq!(status, 400, "no session id");
    });
    // Once the body is sent (loopback: quickly), its parse is under way.
    std::thread::sleep(Duration::from_millis(100));
    let head = post_head(addr, &format!("\r\nMcp-Session-Id: {sid}"));
    let t = std::time::Instant::now();
    let (status, _, body) = exchange(addr, &head, &ping_body(2));
    let ping = t.elapsed();
    assert_eq!(status, 200, "{body}");
    attacker.join().unwrap();
    let whole = started.elapsed();
    if whole < Duration::from_millis(400) {
        return; // parsed too fast here to tell
    }
    assert!(
        ping * 3 < whole,
        "the ping took {ping:?} while the large body's request took {whole:?}"
    );
}

#[test]
fn an_unknown_session_is_404_before_its_body_is_read() {
    // Only when sessions alone are served: a modern request ignores the
    // session header, so with that era the body must be read first.
    let server = server(HttpOptions {
        session: rcip_mcp::McpOptions {
            eras: rcip_mcp::Eras::Legacy,
            ..rcip_mcp::McpOptions::default()
        },
        ..HttpOptions::default()
    });
    let addr = server.local_addr();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Headers only: the 4 MB body never comes (it would be read until
    // bodyTimeoutMs, 30 s, before the session was looked up).
    let head = format!(
        "{}\r\nMcp-Session-Id: {}\r\nContent-Length: 4000000\r\n\r\n",
        post_head(addr, ""),
        "0".repeat(32)
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).expect("answered before the body");
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 404"), "{text}");
    assert!(text.contains("-32001"), "{text}");
}

#[test]
fn a_chunked_body_over_the_limit_is_413_and_the_client_can_finish_sending() {
    let server = server(HttpOptions {
        max_body_bytes: 1024,
        ..HttpOptions::default()
    });
    let addr = server.local_addr();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!("{}\r\nTransfer-Encoding: chunked\r\n\r\n", post_head(addr, ""));
    s.write_all(head.as_bytes()).unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, " ".repeat(64 * 1024));
    for _ in 0..64 {
        s.write_all(chunk.as_bytes())
            .expect("the server kept reading the refused body");
    }
    s.write_all(b"0\r\n\r\n").unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
}
