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
