//! rcip-hostile's MCP-over-HTTP cases (issue 26): hostile requests against
//! an in-process Streamable HTTP server (rcip-mcp's `McpHttpServer`, default
//! options, on 127.0.0.1), sent over raw sockets. Each case prints a figure
//! and a PASS/FAIL line against its target (BENCHMARKS.md, "Hostile input
//! over HTTP").

use crate::{COUNTING, LIVE};
use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, Runtime, RuntimeBuilder};
use rcip_mcp::http::{HttpOptions, McpHttpServer, SessionRequest};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// One HTTP case: a figure against a bound (smaller is better).
pub(crate) struct HttpCase {
    pub name: &'static str,
    /// What was measured, in `unit`.
    pub measured: f64,
    pub target: f64,
    pub unit: &'static str,
    pub detail: String,
}

impl HttpCase {
    pub fn passes(&self) -> bool {
        self.measured <= self.target
    }
}

fn catalog() -> Catalog {
    Catalog::from_bytes(
        json!({
            "protocolVersion": "1.0",
            "application": {"id": "desk", "name": "Desk", "description": "Hostile HTTP input."},
            "scopes": [{"id": "visits", "title": "Visits", "description": "All visits."}],
            "capabilities": [{"id": "visits.lookup", "title": "Look up", "description": "Reads a visit.",
                "scopeIds": ["visits"], "effect": "read",
                "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
                {"id": "visits.report", "title": "Report", "description": "A report of n bytes.",
                "scopeIds": ["visits"], "effect": "read",
                "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "outputSchema": {"type": "object"}}]
        })
        .to_string()
        .as_bytes(),
    )
    .expect("catalog")
}

fn server(options: HttpOptions) -> McpHttpServer<Runtime> {
    let catalog = catalog();
    let c = catalog.clone();
    let factory = move |_: &SessionRequest<'_>| -> Result<Runtime, String> {
        let runtime = RuntimeBuilder::new(&c).build();
        let binding = runtime
            .host()
            .bind(
                "visits.lookup",
                Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
                None,
            )
            .map_err(|e| e.to_string())?;
        let report = runtime
            .host()
            .bind(
                "visits.report",
                Arc::new(|inv: Invocation| {
                    let n = inv.input().get("n").and_then(Value::as_u64).unwrap_or(0) as usize;
                    inv.complete(json!({"text": "r".repeat(n)})).unwrap()
                }),
                None,
            )
            .map_err(|e| e.to_string())?;
        std::mem::forget((binding, report));
        Ok(runtime)
    };
    let server = McpHttpServer::bind(&catalog, "127.0.0.1:0", options, factory).expect("bind");
    server.start().expect("start");
    server
}

/// One POST of `body` to `/mcp` on a new connection; the status.
fn post(addr: SocketAddr, body: &[u8]) -> u16 {
    post_session(addr, None, body).0
}

/// One POST on a new connection, with `Mcp-Session-Id` when given; the
/// status, the session id the answer named and the answer's size.
fn post_session(addr: SocketAddr, session: Option<&str>, body: &[u8]) -> (u16, Option<String>, usize) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
    let sid = session.map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{sid}Content-Length: {}\r\nConnection: close\r\n\r\n",
        addr.port(),
        body.len()
    );
    s.write_all(head.as_bytes()).expect("write");
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let head_end = text.find("\r\n\r\n").unwrap_or(text.len());
    let issued = text[..head_end].lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case("mcp-session-id").then(|| v.trim().to_string())
    });
    (status, issued, out.len())
}

fn initialize(client_info: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}})
    .to_string()
    .into_bytes()
}

/// Heap bytes still live (counting allocator) after `f` and a pause for
/// the server's threads to let go of what was transient.
fn kept(f: impl FnOnce()) -> i64 {
    LIVE.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    f();
    std::thread::sleep(Duration::from_millis(400));
    COUNTING.store(false, Ordering::SeqCst);
    LIVE.load(Ordering::SeqCst) as i64
}

/// Item 1: the heap a session keeps after its `initialize`, for an honest
/// `clientInfo` and for one of 2 million zeros (just under the 4 MiB body
/// limit). Target: at most 64 KiB per idle session either way.
fn session_memory(cases: &mut Vec<HttpCase>) {
    let server = server(HttpOptions::default());
    let addr = server.local_addr();
    let honest = initialize(json!({"name": "bench", "version": "1.0"}));
    let hostile = initialize(json!({"name": "bench", "version": "1.0", "junk": vec![0u8; 2_000_000]}));
    // Warm up (the I/O threads, the workers, thread-local buffers).
    for _ in 0..3 {
        post(addr, &honest);
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut status = (0, 0);
    let small = kept(|| status.0 = post(addr, &honest));
    let big = kept(|| status.1 = post(addr, &hostile));
    cases.push(HttpCase {
        name: "HTTP session after an honest initialize: heap kept",
        measured: small as f64 / 1024.0,
        target: 64.0,
        unit: "KiB",
        detail: format!("status {}", status.0),
    });
    cases.push(HttpCase {
        name: "HTTP session after a 4 MB initialize (2M zeros in clientInfo): heap kept",
        measured: big as f64 / 1024.0,
        target: 64.0,
        unit: "KiB",
        detail: format!("status {}, {} sessions", status.1, server.sessions().len()),
    });
    server.shutdown(Duration::from_secs(5));
}

/// `post` on a connection from local address `from` (127.0.0.x: another
/// peer).
fn post_from(from: &str, addr: SocketAddr, body: &[u8]) -> u16 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let stream = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(format!("{from}:0").parse().expect("address"))?;
        socket.connect(addr).await
    });
    let Ok(stream) = stream else { return 0 };
    let Ok(mut s) = stream.into_std() else { return 0 };
    let _ = s.set_nonblocking(false);
    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        addr.port(),
        body.len()
    );
    if s.write_all(head.as_bytes()).is_err() || s.write_all(body).is_err() {
        return 0;
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out[..out.len().min(64)]).to_string();
    text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// Item 3: one peer opens sessions as fast as it can (1100 initializes,
/// one after the other), then another peer asks for one. Target: the
/// other peer gets its session (0 refusals).
fn session_flood(cases: &mut Vec<HttpCase>) {
    let server = server(HttpOptions::default());
    let addr = server.local_addr();
    let honest = initialize(json!({"name": "bench", "version": "1.0"}));
    let start = std::time::Instant::now();
    let won = (0..1100).filter(|_| post(addr, &honest) == 200).count();
    let flood = start.elapsed();
    let other = post_from("127.0.0.2", addr, &honest);
    cases.push(HttpCase {
        name: "another peer's initialize after one peer's flood of 1100 initializes: refused",
        measured: f64::from(u8::from(other != 200)),
        target: 0.0,
        unit: "times",
        detail: format!(
            "the flood got {won} sessions in {:.2} s; the other peer got status {other}",
            flood.as_secs_f64()
        ),
    });
    server.shutdown(Duration::from_secs(5));
}

/// Item 4: the heap one legacy session keeps after 64 `tools/call`
/// answered on SSE streams (kept for resumption), for answers of about
/// 9 KB and of about 64 KB. Target: within the default `resumptionBytes`
/// (1 MiB) plus 64 KiB of bookkeeping.
fn resumption_memory(cases: &mut Vec<HttpCase>) {
    for (name, n) in [
        (
            "HTTP session after 64 tools/call with answers of ~9 KB: heap kept",
            4_000usize,
        ),
        (
            "HTTP session after 64 tools/call with answers of ~64 KB: heap kept",
            30_000,
        ),
    ] {
        // A server of its own each: an ended session's memory goes later.
        let server = server(HttpOptions::default());
        let addr = server.local_addr();
        let (_, sid, _) = post_session(addr, None, &initialize(json!({"name": "bench", "version": "1.0"})));
        let sid = sid.expect("a session id");
        post_session(
            addr,
            Some(&sid),
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        let mut answer = 0;
        let mut ok = 0;
        let kept = kept(|| {
            for id in 1..=64 {
                let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "visits.report", "arguments": {"n": n}}})
                .to_string();
                let (status, _, size) = post_session(addr, Some(&sid), call.as_bytes());
                ok += usize::from(status == 200);
                answer = size;
            }
        });
        cases.push(HttpCase {
            name,
            measured: kept as f64 / 1024.0,
            target: 1024.0 + 64.0,
            unit: "KiB",
            detail: format!("{ok} of 64 answered, each answer {answer} bytes on the wire"),
        });
        server.shutdown(Duration::from_secs(5));
    }
}

/// Item 2: another session's `ping` (median over two seconds of pings
/// 10 ms apart, each on a new connection) while four clients without a
/// session post 4 MB bodies
/// (a `ping` with 2 million zeros in its params) as fast as they can.
/// Target: a median under 50 ms.
fn ping_under_big_bodies(cases: &mut Vec<HttpCase>) {
    let server = server(HttpOptions::default());
    let addr = server.local_addr();
    let (_, sid, _) = post_session(addr, None, &initialize(json!({"name": "bench", "version": "1.0"})));
    let sid = sid.expect("a session id");
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut quiet: Vec<f64> = (0..20)
        .map(|_| {
            let t = std::time::Instant::now();
            post_session(addr, Some(&sid), ping);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    quiet.sort_by(f64::total_cmp);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": vec![0u8; 2_000_000]}})
        .to_string()
        .into_bytes();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let attackers: Vec<_> = (0..4)
        .map(|_| {
            let (stop, sent, big) = (stop.clone(), sent.clone(), big.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    post(addr, &big);
                    sent.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // Pings for two seconds, 10 ms apart.
    let window = std::time::Instant::now();
    let before = sent.load(Ordering::SeqCst);
    let mut times = Vec::new();
    while window.elapsed() < Duration::from_secs(2) {
        let t = std::time::Instant::now();
        post_session(addr, Some(&sid), ping);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        std::thread::sleep(Duration::from_millis(10));
    }
    let during = sent.load(Ordering::SeqCst) - before;
    stop.store(true, Ordering::SeqCst);
    for a in attackers {
        let _ = a.join();
    }
    times.sort_by(f64::total_cmp);
    cases.push(HttpCase {
        name: "another session's ping while 4 sessionless clients post 4 MB bodies: median",
        measured: times[times.len() / 2],
        target: 50.0,
        unit: "ms",
        detail: format!(
            "{} pings in 2 s, max {:.1} ms; {during} big bodies answered in those 2 s; without them the median was {:.2} ms",
            times.len(),
            times[times.len() - 1],
            quiet[quiet.len() / 2]
        ),
    });
    server.shutdown(Duration::from_secs(5));
}

/// Every issue-26 case, in order.
pub(crate) fn cases() -> Vec<HttpCase> {
    let mut cases = Vec::new();
    session_memory(&mut cases);
    session_flood(&mut cases);
    resumption_memory(&mut cases);
    ping_under_big_bodies(&mut cases);
    cases
}
