//! rcip-mcp-load: the load and fault benchmark of MCP over Streamable HTTP
//! (issue 14, item 5; BENCHMARKS.md, "MCP over HTTP").
//!
//!   rcip-mcp-load [--desk PATH] [--python PATH] [--sessions N] [--calls N]
//!                 [--only rcip|python] [--deadline-s N] [--json]
//!
//! Starts each server as one process on 127.0.0.1 (port 0): the dispatch
//! desk (`dispatch_desk --mcp-http`, one desk runtime per session) and the
//! official Python SDK's server (`bench/mcp/python_server.py`, MCPServer over
//! Streamable HTTP) serving the same tool, `board.listOpenVisits`, with the
//! same input schema. Both get the same run, one after the other:
//!
//! 1. load: N concurrent sessions (default 64), each on its own connection,
//!    `initialize`, `notifications/initialized`, then M sequential
//!    `tools/call` (default 500) answered as SSE streams, then DELETE. Every
//!    response is matched by its JSON-RPC id: lost (no response),
//!    duplicated (a second response to one id) and foreign (an id never
//!    sent) are counted. Throughput (calls/s over the whole load phase),
//!    p50/p99 latency per call, the server's RSS before, at its peak
//!    (VmHWM) and after every session ended, and the CPU time of the load
//!    generator against the server's.
//! 2. faults, each checked by its answer, with the server still serving a
//!    probe session afterwards: clients that disconnect mid-call, partial
//!    requests that stall (slowloris), 10 MB bodies, invalid session ids, a
//!    wrong Origin, and a client that never reads its SSE streams.
//!
//! The load generator is native (hyper 1's HTTP/1 client on a
//! single-threaded tokio runtime), drives both servers alike, and reports
//! its own CPU share. Loopback only; every phase is bounded by a count and
//! by a deadline (`--deadline-s`, default 300 s per server). Exit status 1
//! when a target fails.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOOL: &str = "board.listOpenVisits";
const ACCEPT: &str = "application/json, text/event-stream";
const PROTOCOL: &str = "2025-11-25";

// ----- command line ----------------------------------------------------------

struct Args {
    desk: PathBuf,
    catalog: PathBuf,
    python: PathBuf,
    python_server: PathBuf,
    sessions: usize,
    calls: usize,
    only: Option<String>,
    deadline: Duration,
    rounds: usize,
    json: bool,
}

fn parse_args() -> Args {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut args = Args {
        desk: repo.join("build/dispatch_desk"),
        catalog: repo.join("examples-c/dispatch/catalog.json"),
        python: repo.join("build/mcp-venv/bin/python"),
        python_server: repo.join("bench/mcp/python_server.py"),
        sessions: 64,
        calls: 500,
        only: None,
        deadline: Duration::from_secs(300),
        rounds: 2,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--desk" => args.desk = value().into(),
            "--catalog" => args.catalog = value().into(),
            "--python" => args.python = value().into(),
            "--python-server" => args.python_server = value().into(),
            "--sessions" => args.sessions = value().parse().unwrap_or_else(|_| usage("--sessions N")),
            "--calls" => args.calls = value().parse().unwrap_or_else(|_| usage("--calls N")),
            "--only" => args.only = Some(value()),
            "--deadline-s" => {
                args.deadline = Duration::from_secs(value().parse().unwrap_or_else(|_| usage("--deadline-s N")))
            }
            "--rounds" => args.rounds = value().parse().unwrap_or_else(|_| usage("--rounds N")),
            "--json" => args.json = true,
            "-h" | "--help" => usage(""),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    if args.sessions == 0
        || args.sessions > 1000
        || args.calls == 0
        || args.calls > 100_000
        || !(1..=5).contains(&args.rounds)
    {
        usage("--sessions 1..1000, --calls 1..100000, --rounds 1..5");
    }
    args
}

fn usage(message: &str) -> ! {
    if !message.is_empty() {
        eprintln!("rcip-mcp-load: {message}");
    }
    eprintln!(
        "usage: rcip-mcp-load [--desk PATH] [--catalog FILE] [--python PYTHON] [--python-server SCRIPT]\n\
         \x20                    [--sessions N] [--calls N] [--rounds N] [--only rcip|python] [--deadline-s N] [--json]"
    );
    std::process::exit(2);
}

// ----- the server process ----------------------------------------------------

struct Server {
    name: &'static str,
    child: Child,
    addr: SocketAddr,
    host: String,
    path: String,
}

impl Server {
    /// Starts the server and waits for its one "serving MCP on URL" line.
    fn start(name: &'static str, mut command: Command) -> Server {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap_or_else(|e| panic!("{name}: cannot start: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            for _ in lines {} // drain
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{name}: no 'serving MCP on' line within 30 s"));
        let url = line
            .split(" on ")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: unexpected line {line:?}"))
            .trim();
        let rest = url
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("{name}: not an http URL: {url}"));
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let addr: SocketAddr = host.parse().unwrap_or_else(|_| panic!("{name}: bad address {host}"));
        assert!(addr.ip().is_loopback(), "{name}: not on loopback: {addr}");
        Server {
            name,
            child,
            addr,
            host: host.to_string(),
            path: if path.is_empty() { "/".into() } else { path.into() },
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stop(mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// VmRSS and VmHWM (peak) of a process, in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU time (user + system) of a process, in seconds.
fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the ")" that ends the command name: state is field 3, utime 14, stime 15.
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(14) + ticks(15)) as f64 / hz
}

/// CPU time (user + system) of this process, in seconds.
fn cpu_self() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

// ----- the HTTP client ---------------------------------------------------------

#[derive(Clone)]
struct Target {
    addr: SocketAddr,
    host: String,
    path: String,
}

struct Reply {
    status: StatusCode,
    session: Option<String>,
    content_type: String,
    body: Bytes,
}

/// What the load phase reads of an answer: its id, and whether it is a
/// successful tool result with structured content. Everything else is
/// skipped without being built (the generator must stay cheap).
#[derive(serde::Deserialize)]
struct Answer {
    id: Option<serde_json::Number>,
    result: Option<AnswerResult>,
    error: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct AnswerResult {
    #[serde(rename = "isError")]
    is_error: Option<bool>,
    #[serde(rename = "structuredContent")]
    structured: Option<serde::de::IgnoredAny>,
}

impl Reply {
    /// The data of each SSE event (events without data, such as a priming
    /// event, are skipped), or the whole body when it is JSON.
    fn payloads(&self) -> Vec<&[u8]> {
        let body: &[u8] = &self.body;
        if !self.content_type.contains("text/event-stream") {
            return if body.is_empty() { Vec::new() } else { vec![body] };
        }
        let mut out = Vec::new();
        for line in body.split(|b| *b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(data) = line.strip_prefix(b"data:") {
                let data = data.strip_prefix(b" ").unwrap_or(data);
                if !data.iter().all(u8::is_ascii_whitespace) {
                    // One data line per event: servers here send each message on one line.
                    out.push(data);
                }
            }
        }
        out
    }

    /// The JSON-RPC messages, fully parsed (for the fault checks).
    fn messages(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for p in self.payloads() {
            match serde_json::from_slice::<Value>(p) {
                Ok(Value::Array(items)) => out.extend(items),
                Ok(v) => out.push(v),
                Err(_) => {}
            }
        }
        out
    }

    /// The answers (messages with a numeric id and a result or an error).
    fn answers(&self) -> Vec<(u64, bool)> {
        self.payloads()
            .into_iter()
            .filter_map(|p| serde_json::from_slice::<Answer>(p).ok())
            .filter(|a| a.result.is_some() || a.error.is_some())
            .filter_map(|a| {
                let ok = a
                    .result
                    .as_ref()
                    .is_some_and(|r| r.is_error == Some(false) && r.structured.is_some());
                a.id.and_then(|n| n.as_u64()).map(|id| (id, ok))
            })
            .collect()
    }
}

struct Conn {
    sender: SendRequest<Full<Bytes>>,
    target: Target,
}

impl Conn {
    async fn open(target: &Target) -> Result<Conn, String> {
        let stream = TcpStream::connect(target.addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn {
            sender,
            target: target.clone(),
        })
    }

    async fn send(
        &mut self,
        method: Method,
        session: Option<&str>,
        extra: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, String> {
        self.sender.ready().await.map_err(|e| format!("connection: {e}"))?;
        let mut request = Request::builder()
            .method(method)
            .uri(self.target.path.as_str())
            .header("host", self.target.host.as_str())
            .header("accept", ACCEPT)
            .header("content-type", "application/json");
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", PROTOCOL);
        }
        for (k, v) in extra {
            request = request.header(*k, *v);
        }
        let request = request.body(Full::new(body)).map_err(|e| e.to_string())?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| format!("request: {e}"))?;
        let (parts, body) = response.into_parts();
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let body = body.collect().await.map_err(|e| format!("body: {e}"))?.to_bytes();
        Ok(Reply {
            status: parts.status,
            session: header("mcp-session-id"),
            content_type: header("content-type").unwrap_or_default(),
            body,
        })
    }

    async fn post(&mut self, session: Option<&str>, message: &Value) -> Result<Reply, String> {
        self.send(Method::POST, session, &[], Bytes::from(message.to_string()))
            .await
    }
}

fn initialize_message(client: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": client, "version": "1.0.0"}}})
}

fn call_message(id: u64) -> Value {
    serde_json::from_slice(&call_body(id)).expect("call body")
}

/// The load phase's request body, written without building a JSON tree.
fn call_body(id: u64) -> Bytes {
    Bytes::from(format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{TOOL}\",\"arguments\":{{\"unassignedOnly\":true,\"limit\":3}}}}}}"
    ))
}

/// Opens a session on a fresh connection: initialize, then initialized.
async fn open_session(target: &Target, client: &str) -> Result<(Conn, String), String> {
    let mut conn = Conn::open(target).await?;
    let reply = conn.post(None, &initialize_message(client)).await?;
    if reply.status != StatusCode::OK {
        return Err(format!("initialize: HTTP {}", reply.status));
    }
    let session = reply.session.clone().ok_or("initialize: no Mcp-Session-Id")?;
    let ok = reply
        .messages()
        .iter()
        .any(|m| m["id"] == json!(0) && m.get("result").is_some());
    if !ok {
        return Err(format!(
            "initialize: no result in {:?}",
            String::from_utf8_lossy(&reply.body)
        ));
    }
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let reply = conn.post(Some(&session), &initialized).await?;
    if reply.status != StatusCode::ACCEPTED {
        return Err(format!(
            "notifications/initialized: HTTP {} (202 expected)",
            reply.status
        ));
    }
    Ok((conn, session))
}

async fn close_session(conn: &mut Conn, session: &str) -> Result<(), String> {
    let reply = conn.send(Method::DELETE, Some(session), &[], Bytes::new()).await?;
    if reply.status.is_success() {
        Ok(())
    } else {
        Err(format!("DELETE: HTTP {}", reply.status))
    }
}

// ----- load ----------------------------------------------------------------------

#[derive(Default)]
struct SessionResult {
    latencies_us: Vec<u64>,
    sent: u64,
    answered: u64,
    lost: u64,
    duplicated: u64,
    foreign: u64,
    errors: Vec<String>,
    sse_answers: u64,
}

/// One session: `calls` sequential calls, each answer matched by id.
async fn run_session(target: Target, index: usize, calls: usize, deadline: Instant) -> SessionResult {
    let mut result = SessionResult::default();
    let (mut conn, session) = match open_session(&target, &format!("load-{index}")).await {
        Ok(s) => s,
        Err(e) => {
            result.errors.push(e);
            result.lost = calls as u64;
            result.sent = calls as u64;
            return result;
        }
    };
    let base = (index as u64 + 1) * 1_000_000;
    let mut seen: HashMap<u64, u32> = HashMap::with_capacity(calls);
    for i in 0..calls as u64 {
        if Instant::now() > deadline {
            result.errors.push("deadline passed".into());
            break;
        }
        let id = base + i;
        result.sent += 1;
        let started = Instant::now();
        let reply = match conn.send(Method::POST, Some(&session), &[], call_body(id)).await {
            Ok(r) => r,
            Err(e) => {
                result.errors.push(format!("call {id}: {e}"));
                match Conn::open(&target).await {
                    Ok(c) => conn = c,
                    Err(e) => {
                        result.errors.push(e);
                        break;
                    }
                }
                continue;
            }
        };
        let elapsed = started.elapsed();
        if reply.status != StatusCode::OK {
            result.errors.push(format!("call {id}: HTTP {}", reply.status));
            continue;
        }
        if reply.content_type.contains("text/event-stream") {
            result.sse_answers += 1;
        }
        let mut answered = false;
        for (rid, ok) in reply.answers() {
            if !(base..base + calls as u64).contains(&rid) {
                result.foreign += 1;
                continue;
            }
            *seen.entry(rid).or_default() += 1;
            if rid == id {
                if !ok {
                    result.errors.push(format!(
                        "call {id}: not a successful result: {}",
                        String::from_utf8_lossy(&reply.body)
                    ));
                }
                answered = true;
            }
        }
        if answered {
            result.latencies_us.push(elapsed.as_micros() as u64);
        }
    }
    for i in 0..result.sent {
        match seen.get(&(base + i)).copied().unwrap_or(0) {
            0 => result.lost += 1,
            n => {
                result.answered += 1;
                result.duplicated += (n - 1) as u64;
            }
        }
    }
    if let Err(e) = close_session(&mut conn, &session).await {
        result.errors.push(e);
    }
    result
}

struct LoadReport {
    sessions: usize,
    calls_per_session: usize,
    sent: u64,
    answered: u64,
    lost: u64,
    duplicated: u64,
    foreign: u64,
    sse_answers: u64,
    errors: Vec<String>,
    seconds: f64,
    throughput: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    generator_cpu_s: f64,
    server_cpu_s: f64,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

async fn load(target: &Target, pid: u32, sessions: usize, calls: usize, deadline: Instant) -> LoadReport {
    let cpu0 = cpu_self();
    let server_cpu0 = cpu_of(pid);
    let started = Instant::now();
    let tasks: Vec<_> = (0..sessions)
        .map(|i| tokio::spawn(run_session(target.clone(), i, calls, deadline)))
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap_or_else(|e| SessionResult {
            errors: vec![format!("task: {e}")],
            ..Default::default()
        }));
    }
    let seconds = started.elapsed().as_secs_f64();
    let generator_cpu_s = cpu_self() - cpu0;
    let server_cpu_s = cpu_of(pid) - server_cpu0;
    let mut latencies: Vec<u64> = results.iter().flat_map(|r| r.latencies_us.iter().copied()).collect();
    latencies.sort_unstable();
    let sum = |f: fn(&SessionResult) -> u64| results.iter().map(f).sum::<u64>();
    let answered = sum(|r| r.answered);
    let mut errors: Vec<String> = results.iter().flat_map(|r| r.errors.iter().cloned()).collect();
    let error_count = errors.len();
    errors.truncate(10);
    if error_count > 10 {
        errors.push(format!("... {} more", error_count - 10));
    }
    LoadReport {
        sessions,
        calls_per_session: calls,
        sent: sum(|r| r.sent),
        answered,
        lost: sum(|r| r.lost) + (sessions * calls) as u64 - sum(|r| r.sent),
        duplicated: sum(|r| r.duplicated),
        foreign: sum(|r| r.foreign),
        sse_answers: sum(|r| r.sse_answers),
        errors,
        seconds,
        throughput: answered as f64 / seconds,
        p50_ms: percentile(&latencies, 50.0),
        p99_ms: percentile(&latencies, 99.0),
        max_ms: latencies.last().map(|v| *v as f64 / 1000.0).unwrap_or(f64::NAN),
        generator_cpu_s,
        server_cpu_s,
    }
}

// ----- faults ----------------------------------------------------------------------

struct Fault {
    name: &'static str,
    ok: bool,
    detail: String,
}

fn raw_request(target: &Target, method: &str, session: Option<&str>, extra: &str, body: &str) -> String {
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nAccept: {ACCEPT}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        target.path,
        target.host,
        body.len()
    );
    if let Some(id) = session {
        head.push_str(&format!("Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: {PROTOCOL}\r\n"));
    }
    head.push_str(extra);
    head.push_str("\r\n");
    head.push_str(body);
    head
}

/// Writes `request` (a large one) while reading the answer's status line;
/// Err when the connection ends without one.
async fn big_post(target: &Target, request: Vec<u8>) -> Result<u16, String> {
    let stream = TcpStream::connect(target.addr).await.map_err(|e| e.to_string())?;
    let (mut rd, mut wr) = stream.into_split();
    let writer = tokio::spawn(async move {
        let _ = wr.write_all(&request).await;
        wr
    });
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let status = loop {
        match tokio::time::timeout(Duration::from_secs(30), rd.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break Err("closed without an answer".to_string()),
            Ok(Ok(n)) => {
                head.extend_from_slice(&buf[..n]);
                if let Some(line_end) = head.windows(2).position(|w| w == b"\r\n") {
                    let line = String::from_utf8_lossy(&head[..line_end]).to_string();
                    break line.split(' ').nth(1).and_then(|c| c.parse().ok()).ok_or(line);
                }
            }
        }
    };
    writer.abort();
    status
}

/// A probe session: `calls` calls must all be answered.
async fn probe(target: &Target, calls: usize) -> Result<f64, String> {
    let r = run_session(
        target.clone(),
        900 + calls,
        calls,
        Instant::now() + Duration::from_secs(60),
    )
    .await;
    if r.answered == calls as u64 && r.lost == 0 && r.duplicated == 0 && r.errors.is_empty() {
        let mut l = r.latencies_us.clone();
        l.sort_unstable();
        Ok(percentile(&l, 99.0))
    } else {
        Err(format!(
            "answered {}/{calls}, errors {:?}",
            r.answered,
            r.errors.first()
        ))
    }
}

async fn status_of(target: &Target, session: Option<&str>, extra: &[(&str, &str)], body: Bytes) -> String {
    match Conn::open(target).await {
        Ok(mut c) => match c.send(Method::POST, session, extra, body).await {
            Ok(r) => r.status.as_u16().to_string(),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

async fn faults(target: &Target, pid: u32, desk: bool) -> Vec<Fault> {
    let mut out = Vec::new();

    // Invalid session ids: 404, on any method.
    {
        let mut statuses = Vec::new();
        for id in ["0", "not-a-session", "ffffffffffffffffffffffffffffffff"] {
            statuses.push(status_of(target, Some(id), &[], Bytes::from(call_message(1).to_string())).await);
        }
        let ok = statuses.iter().all(|s| s == "404");
        out.push(Fault {
            name: "invalid session ids",
            ok,
            detail: format!("HTTP {} (404 expected)", statuses.join(", ")),
        });
    }

    // A wrong Origin: 403, and no session created.
    {
        let body = Bytes::from(initialize_message("evil").to_string());
        let s = status_of(target, None, &[("origin", "http://evil.example")], body).await;
        out.push(Fault {
            name: "wrong Origin",
            ok: s == "403",
            detail: format!("HTTP {s} (403 expected)"),
        });
    }

    // 10 MB bodies, 20 of them, on a valid session: refused. The server may
    // answer 413 before it reads the body and close the connection; a reset
    // that reaches the client first can discard that answer, so a reset
    // before the body was taken counts as refused too, and is reported.
    {
        let (rss0, _) = rss_kib(pid);
        let session = open_session(target, "big").await.ok();
        let filler = "x".repeat(10 * 1024 * 1024);
        let (mut refused_413, mut reset, mut other) = (0, 0, Vec::new());
        for i in 0..20u64 {
            let body = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"{TOOL}\",\"arguments\":{{\"priority\":\"{filler}\"}}}}}}"
            );
            let request = raw_request(target, "POST", session.as_ref().map(|(_, s)| s.as_str()), "", &body);
            match big_post(target, request.into_bytes()).await {
                Ok(413) => refused_413 += 1,
                Ok(status) => other.push(status.to_string()),
                Err(_) => reset += 1,
            }
        }
        if let Some((mut c, s)) = session {
            let _ = close_session(&mut c, &s).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (rss1, _) = rss_kib(pid);
        out.push(Fault {
            name: "10 MB bodies (x20)",
            ok: other.is_empty(),
            detail: format!(
                "413: {refused_413}, reset before the body was taken: {reset}, other: [{}]; RSS {} -> {} MiB",
                other.join(", "),
                rss0 / 1024,
                rss1 / 1024
            ),
        });
    }

    // Slowloris: 32 connections that send part of a request and stall; a
    // probe session is served meanwhile; then how many the server closed.
    {
        let mut stalled = Vec::new();
        for i in 0..32 {
            if let Ok(mut s) = TcpStream::connect(target.addr).await {
                let partial = if i % 2 == 0 {
                    // headers never finished
                    format!(
                        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: appl",
                        target.path, target.host
                    )
                } else {
                    // body shorter than its Content-Length
                    let r = raw_request(target, "POST", None, "", &initialize_message("slow").to_string());
                    r[..r.len() - 20].to_string()
                };
                let _ = s.write_all(partial.as_bytes()).await;
                stalled.push(s);
            }
        }
        let probe_result = probe(target, 50).await;
        // Up to 35 s for the server to drop them.
        let mut closed = 0;
        let until = Instant::now() + Duration::from_secs(35);
        for s in stalled.iter_mut() {
            let left = until.saturating_duration_since(Instant::now());
            let mut buf = [0u8; 1024];
            loop {
                match tokio::time::timeout(left, s.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => {
                        closed += 1;
                        break;
                    }
                    Ok(Ok(_)) => continue, // e.g. a 408 before closing
                    Err(_) => break,
                }
            }
        }
        let ok = probe_result.is_ok();
        out.push(Fault {
            name: "slowloris (32 stalled requests)",
            ok,
            detail: format!(
                "probe session meanwhile: {}; server closed {closed}/32 within 35 s",
                match &probe_result {
                    Ok(p99) => format!("50/50 answered, p99 {p99:.1} ms"),
                    Err(e) => e.clone(),
                }
            ),
        });
        drop(stalled);
    }

    // Clients that disconnect mid-call: 32 sessions send a call and hang up
    // before the answer; the server goes on serving.
    {
        let mut sessions = Vec::new();
        for i in 0..32 {
            if let Ok((c, s)) = open_session(target, &format!("drop-{i}")).await {
                sessions.push((c, s));
            }
        }
        let opened = sessions.len();
        for (i, (_, s)) in sessions.iter().enumerate() {
            if let Ok(mut raw) = TcpStream::connect(target.addr).await {
                let message = if desk && i % 2 == 1 {
                    // the desk's archive search takes ~800 ms: the hang-up is mid-handler
                    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                           "params": {"name": "visits.search", "arguments": {"query": "cooler", "includeArchive": true}}})
                } else {
                    call_message(7)
                };
                let _ = raw
                    .write_all(raw_request(target, "POST", Some(s), "", &message.to_string()).as_bytes())
                    .await;
                // read at most the response head, then hang up
                let mut buf = [0u8; 64];
                let _ = tokio::time::timeout(Duration::from_millis(20), raw.read(&mut buf)).await;
                drop(raw);
            }
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let probe_result = probe(target, 50).await;
        let mut deleted = 0;
        for (mut c, s) in sessions {
            if close_session(&mut c, &s).await.is_ok() {
                deleted += 1;
            }
        }
        out.push(Fault {
            name: "disconnect mid-call (32)",
            ok: probe_result.is_ok() && opened == 32 && deleted == 32,
            detail: format!(
                "{opened} sessions, {deleted} deleted afterwards; probe: {}",
                match &probe_result {
                    Ok(p99) => format!("50/50 answered, p99 {p99:.1} ms"),
                    Err(e) => e.clone(),
                }
            ),
        });
    }

    // A client that never reads its SSE streams: a GET stream and 2,000
    // pipelined calls on one connection with a 4 KiB receive buffer, never
    // read; the server must not buffer without bound and keeps serving.
    {
        let (rss0, _) = rss_kib(pid);
        let mut held = Vec::new();
        let mut written = 0usize;
        if let Ok((mut c, s)) = open_session(target, "never-reads").await {
            for kind in 0..2 {
                let sock = match tokio::net::TcpSocket::new_v4() {
                    Ok(s) => s,
                    Err(_) => continue,
                };
                let _ = sock.set_recv_buffer_size(4096);
                let Ok(mut stream) = sock.connect(target.addr).await else {
                    continue;
                };
                if kind == 0 {
                    let get = format!(
                        "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {s}\r\nMcp-Protocol-Version: {PROTOCOL}\r\n\r\n",
                        target.path, target.host
                    );
                    let _ = stream.write_all(get.as_bytes()).await;
                } else {
                    let until = Instant::now() + Duration::from_secs(5);
                    for i in 0..2000u64 {
                        let req = raw_request(target, "POST", Some(&s), "", &call_message(10_000 + i).to_string());
                        match tokio::time::timeout(
                            until.saturating_duration_since(Instant::now()),
                            stream.write_all(req.as_bytes()),
                        )
                        .await
                        {
                            Ok(Ok(())) => written += 1,
                            _ => break,
                        }
                    }
                }
                held.push(stream);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            let (rss1, _) = rss_kib(pid);
            let probe_result = probe(target, 50).await;
            drop(held);
            let _ = close_session(&mut c, &s).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            let (rss2, _) = rss_kib(pid);
            out.push(Fault {
                name: "never reads its SSE streams",
                ok: probe_result.is_ok(),
                detail: format!(
                    "{written}/2000 pipelined calls written on a connection never read; RSS {} -> {} (held) -> {} MiB; probe: {}",
                    rss0 / 1024,
                    rss1 / 1024,
                    rss2 / 1024,
                    match &probe_result {
                        Ok(p99) => format!("50/50 answered, p99 {p99:.1} ms"),
                        Err(e) => e.clone(),
                    }
                ),
            });
        } else {
            out.push(Fault {
                name: "never reads its SSE streams",
                ok: false,
                detail: "no session".into(),
            });
        }
    }
    out
}

// ----- the run -----------------------------------------------------------------------

struct ServerReport {
    name: &'static str,
    load: LoadReport,
    rss_before_kib: u64,
    rss_peak_kib: u64,
    rss_after_kib: u64,
    rss_after_faults_kib: u64,
    /// Per later round: lost + duplicated + foreign, calls/s, RSS after it (KiB).
    later_rounds: Vec<(u64, f64, u64)>,
    faults: Vec<Fault>,
}

fn run_server(rt: &tokio::runtime::Runtime, server: Server, args: &Args, desk: bool) -> ServerReport {
    let target = Target {
        addr: server.addr,
        host: server.host.clone(),
        path: server.path.clone(),
    };
    let pid = server.pid();
    std::thread::sleep(Duration::from_millis(300));
    let (rss_before, _) = rss_kib(pid);
    let deadline = Instant::now() + args.deadline;
    eprintln!(
        "rcip-mcp-load: {}: {} sessions x {} calls ...",
        server.name, args.sessions, args.calls
    );
    let load = rt.block_on(load(&target, pid, args.sessions, args.calls, deadline));
    let (_, rss_peak) = rss_kib(pid);
    // rcip keeps an ended session's runtime for 5 s (SESSION_RETIRE_MS:
    // callbacks still running when it ended may reach it), so "after all
    // sessions ended" is read once that has passed.
    std::thread::sleep(Duration::from_millis(6000));
    let (rss_after, _) = rss_kib(pid);
    // Further rounds in the same process: RSS that keeps growing round
    // after round is a leak; RSS that stays where the first round left it is
    // the allocator keeping its high-water mark.
    let mut later_rounds = Vec::new();
    for round in 2..=args.rounds {
        eprintln!("rcip-mcp-load: {}: round {round} ...", server.name);
        let again = rt.block_on(self::load(
            &target,
            pid,
            args.sessions,
            args.calls,
            Instant::now() + args.deadline,
        ));
        std::thread::sleep(Duration::from_millis(1000));
        later_rounds.push((
            again.lost + again.duplicated + again.foreign,
            again.throughput,
            rss_kib(pid).0,
        ));
    }
    eprintln!("rcip-mcp-load: {}: faults ...", server.name);
    let faults = rt.block_on(faults(&target, pid, desk));
    std::thread::sleep(Duration::from_millis(1000));
    let (rss_after_faults, _) = rss_kib(pid);
    let name = server.name;
    server.stop();
    ServerReport {
        name,
        load,
        rss_before_kib: rss_before,
        rss_peak_kib: rss_peak,
        rss_after_kib: rss_after,
        rss_after_faults_kib: rss_after_faults,
        later_rounds,
        faults,
    }
}

fn report_json(r: &ServerReport) -> Value {
    let l = &r.load;
    json!({
        "server": r.name,
        "sessions": l.sessions, "callsPerSession": l.calls_per_session,
        "sent": l.sent, "answered": l.answered, "lost": l.lost, "duplicated": l.duplicated, "foreign": l.foreign,
        "sseAnswers": l.sse_answers, "errors": l.errors,
        "seconds": l.seconds, "callsPerSecond": l.throughput, "p50Ms": l.p50_ms, "p99Ms": l.p99_ms, "maxMs": l.max_ms,
        "generatorCpuS": l.generator_cpu_s, "serverCpuS": l.server_cpu_s,
        "generatorCpuShare": l.generator_cpu_s / (l.generator_cpu_s + l.server_cpu_s),
        "rssBeforeKiB": r.rss_before_kib, "rssPeakKiB": r.rss_peak_kib, "rssAfterKiB": r.rss_after_kib,
        "rssAfterFaultsKiB": r.rss_after_faults_kib,
        "laterRounds": r.later_rounds.iter().map(|(bad, tput, rss)| json!({"lostOrDuplicated": bad, "callsPerSecond": tput, "rssAfterKiB": rss})).collect::<Vec<_>>(),
        "faults": r.faults.iter().map(|f| json!({"name": f.name, "ok": f.ok, "detail": f.detail})).collect::<Vec<_>>(),
    })
}

fn print_report(r: &ServerReport) {
    let l = &r.load;
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "== {} ({} sessions x {} calls)",
        r.name, l.sessions, l.calls_per_session
    );
    println!(
        "  answered {}/{} ({} as SSE), lost {}, duplicated {}, foreign {}",
        l.answered,
        l.sessions * l.calls_per_session,
        l.sse_answers,
        l.lost,
        l.duplicated,
        l.foreign
    );
    println!(
        "  {:.0} calls/s over {:.2} s; latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        l.throughput, l.seconds, l.p50_ms, l.p99_ms, l.max_ms
    );
    println!(
        "  CPU: server {:.2} s, load generator {:.2} s (share {:.1}%)",
        l.server_cpu_s,
        l.generator_cpu_s,
        100.0 * l.generator_cpu_s / (l.generator_cpu_s + l.server_cpu_s)
    );
    println!(
        "  RSS: before {:.1} MiB, peak {:.1} MiB, after all sessions ended {:.1} MiB, after the faults {:.1} MiB",
        mib(r.rss_before_kib),
        mib(r.rss_peak_kib),
        mib(r.rss_after_kib),
        mib(r.rss_after_faults_kib)
    );
    for (i, (bad, tput, rss)) in r.later_rounds.iter().enumerate() {
        println!(
            "  round {}: {tput:.0} calls/s, lost or duplicated {bad}, RSS after it {:.1} MiB",
            i + 2,
            mib(*rss)
        );
    }
    for e in &l.errors {
        println!("  error: {e}");
    }
    for f in &r.faults {
        println!(
            "  fault {:<34} {}  {}",
            f.name,
            if f.ok { "ok  " } else { "FAIL" },
            f.detail
        );
    }
}

fn main() {
    let args = parse_args();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut reports = Vec::new();
    if args.only.as_deref() != Some("python") {
        let mut command = Command::new(&args.desk);
        command
            .arg("--mcp-http")
            .arg("127.0.0.1:0")
            .arg("--catalog")
            .arg(&args.catalog)
            .arg("--mcp-options")
            .arg(json!({"maxSessions": args.sessions + 100}).to_string());
        reports.push(run_server(
            &rt,
            Server::start("rcip (dispatch_desk --mcp-http)", command),
            &args,
            true,
        ));
    }
    if args.only.as_deref() != Some("rcip") {
        let mut command = Command::new(&args.python);
        command
            .arg(&args.python_server)
            .arg("--max-sessions")
            .arg((args.sessions + 100).to_string());
        reports.push(run_server(
            &rt,
            Server::start("python (mcp 2.3.0 MCPServer)", command),
            &args,
            false,
        ));
    }

    let mut failed = Vec::new();
    for r in &reports {
        let l = &r.load;
        let share = l.generator_cpu_s / (l.generator_cpu_s + l.server_cpu_s);
        let json_mode = args.json;
        let mut check = |ok: bool, what: String| {
            // With --json, stdout is the JSON document only.
            let line = format!("{} {}: {what}", if ok { "PASS" } else { "FAIL" }, r.name);
            if json_mode {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
            if !ok {
                failed.push(format!("{}: {what}", r.name));
            }
        };
        let later_bad: u64 = r.later_rounds.iter().map(|x| x.0).sum();
        check(
            later_bad == 0,
            format!("later rounds: 0 lost, 0 duplicated ({later_bad})"),
        );
        check(
            l.lost == 0 && l.duplicated == 0 && l.foreign == 0,
            format!(
                "0 lost, 0 duplicated (lost {}, duplicated {}, foreign {})",
                l.lost, l.duplicated, l.foreign
            ),
        );
        check(
            share < 0.30,
            format!("load generator CPU share below 30% ({:.1}%)", share * 100.0),
        );
        if r.name.starts_with("rcip") {
            check(
                r.rss_after_kib <= r.rss_before_kib + 10 * 1024,
                format!(
                    "RSS after all sessions end at most 10 MB above before (+{:.1} MiB)",
                    (r.rss_after_kib as f64 - r.rss_before_kib as f64) / 1024.0
                ),
            );
            for f in &r.faults {
                check(f.ok, format!("fault: {}", f.name));
            }
        }
    }
    let ratio = match (
        reports.iter().find(|r| r.name.starts_with("rcip")),
        reports.iter().find(|r| r.name.starts_with("python")),
    ) {
        (Some(a), Some(b)) => Some(a.load.throughput / b.load.throughput),
        _ => None,
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"servers": reports.iter().map(report_json).collect::<Vec<_>>(), "throughputRatio": ratio})
            )
            .unwrap()
        );
    } else {
        for r in &reports {
            print_report(r);
        }
    }
    if let Some(ratio) = ratio {
        let ok = ratio >= 10.0;
        eprintln!(
            "{} throughput rcip / python: {ratio:.1}x (target >= 10x)",
            if ok { "PASS" } else { "FAIL" }
        );
        if !ok {
            failed.push("throughput ratio".into());
        }
    }
    eprintln!("{} failed", failed.len());
    std::process::exit(if failed.is_empty() { 0 } else { 1 });
}
