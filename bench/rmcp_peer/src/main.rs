//! rcip-rmcp-peer: the official Rust MCP SDK (rmcp) serving the dispatch
//! desk's bench tool, for `rcip-mcp-cost` (BENCHMARKS.md, "Cost per call
//! against the Rust SDK (issue 29)").
//!
//!   rcip-rmcp-peer --mode stateless|sessions [--addr 127.0.0.1:0]
//!                  [--catalog FILE] [--serve-seconds N] [--max-calls N]
//!
//! One tool, `board.listOpenVisits`, advertised with the desk's own input and
//! output schemas (read from the catalog), answering the same three visits as
//! bench/mcp/python_server.py. rmcp's `StreamableHttpService` under axum,
//! every accepted connection with TCP_NODELAY, on a tokio runtime with one
//! worker per CPU this process may run on (one under `taskset -c 0`).
//!
//! - `--mode stateless`: `legacy_session_mode: false` with
//!   `NeverSessionManager` and `json_response: true`: every POST is served
//!   on its own, answered as `application/json`.
//! - `--mode sessions`: the default configuration (`LocalSessionManager`,
//!   `initialize` opens a session, SSE answers). rmcp serves a request that
//!   names 2026-07-28 in its `_meta` statelessly in this mode too.
//!
//! Prints `rmcp: serving MCP on http://ADDR/mcp` once listening. Stops by
//! itself after `--serve-seconds` (default 900) or once `--max-calls` tool
//! calls (default 5,000,000) were answered, and on SIGTERM or SIGINT.
//! Loopback only: an address that is not a loopback one is refused.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::{Deserialize, Serialize};

const TOOL: &str = "board.listOpenVisits";

// ----- the tool ------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Priority {
    Low,
    Normal,
    Urgent,
}

/// The tool's arguments as the desk's input schema has them (every field
/// optional, no other field). Checked here as an rmcp tool would check its
/// typed parameters: by deserializing them, plus the two constraints serde
/// does not express (the technician id's pattern, the limit's range).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Arguments {
    priority: Option<Priority>,
    technician_id: Option<String>,
    unassigned_only: Option<bool>,
    limit: Option<u32>,
}

#[derive(Serialize, Clone)]
struct Visit {
    id: &'static str,
    site: &'static str,
    issue: &'static str,
    skill: &'static str,
    priority: &'static str,
    status: &'static str,
    #[serde(rename = "technicianId", skip_serializing_if = "Option::is_none")]
    technician_id: Option<&'static str>,
    date: &'static str,
    window: &'static str,
    notes: u32,
}

#[derive(Serialize)]
struct Answer<'a> {
    visits: Vec<&'a Visit>,
    total: u32,
}

/// The desk's first three unassigned open visits (what the desk answers to
/// `{"unassignedOnly": true, "limit": 3}` on a fresh board), as in
/// bench/mcp/python_server.py.
fn board() -> Vec<Visit> {
    let visit = |id, site, issue, skill, priority, date, window, notes| Visit {
        id,
        site,
        issue,
        skill,
        priority,
        status: "new",
        technician_id: None,
        date,
        window,
        notes,
    };
    vec![
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
    ]
}

fn technician_id_ok(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() == 4 && b.starts_with(b"T-") && b[2].is_ascii_digit() && b[3].is_ascii_digit()
}

struct Shared {
    tool: Tool,
    board: Vec<Visit>,
    calls: AtomicU64,
    max_calls: u64,
    done: tokio::sync::Notify,
}

/// The handler: one per session in `sessions` mode, one per request in
/// `stateless` mode (rmcp calls the factory each time), so it is an `Arc`.
#[derive(Clone)]
struct Desk(Arc<Shared>);

impl Desk {
    fn list(&self, arguments: Option<JsonObject>) -> Result<CallToolResult, ErrorData> {
        let arguments = serde_json::Value::Object(arguments.unwrap_or_default());
        let args: Arguments = serde_json::from_value(arguments)
            .map_err(|e| ErrorData::invalid_params(format!("invalid arguments: {e}"), None))?;
        if args.limit.is_some_and(|l| !(1..=24).contains(&l)) {
            return Err(ErrorData::invalid_params("limit: 1 to 24", None));
        }
        if args.technician_id.as_deref().is_some_and(|t| !technician_id_ok(t)) {
            return Err(ErrorData::invalid_params("technicianId: ^T-[0-9]{2}$", None));
        }
        let wanted = |v: &&Visit| {
            let priority_ok = match &args.priority {
                None => true,
                Some(Priority::Low) => v.priority == "low",
                Some(Priority::Normal) => v.priority == "normal",
                Some(Priority::Urgent) => v.priority == "urgent",
            };
            let technician_ok = args.technician_id.as_deref().is_none_or(|t| v.technician_id == Some(t));
            let unassigned_ok = args.unassigned_only != Some(true) || v.technician_id.is_none();
            priority_ok && technician_ok && unassigned_ok
        };
        let limit = args.limit.map(|l| l as usize).unwrap_or(usize::MAX);
        let visits: Vec<&Visit> = self.0.board.iter().filter(wanted).take(limit).collect();
        let answer = Answer { visits, total: 10 };
        let value = serde_json::to_value(&answer).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(CallToolResult::structured(value))
    }
}

impl ServerHandler for Desk {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("dispatchDesk", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.0.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL).then(|| self.0.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {}", request.name),
                None,
            ));
        }
        let result = self.list(request.arguments)?;
        if self.0.calls.fetch_add(1, Ordering::Relaxed) + 1 >= self.0.max_calls {
            self.0.done.notify_one();
        }
        Ok(result.into())
    }
}

// ----- command line and serving ----------------------------------------------------

struct Args {
    stateless: bool,
    addr: SocketAddr,
    catalog: PathBuf,
    serve_seconds: u64,
    max_calls: u64,
}

fn usage(message: &str) -> ! {
    if !message.is_empty() {
        eprintln!("rcip-rmcp-peer: {message}");
    }
    eprintln!(
        "usage: rcip-rmcp-peer --mode stateless|sessions [--addr 127.0.0.1:0] [--catalog FILE]\n\
         \x20                     [--serve-seconds N] [--max-calls N]"
    );
    std::process::exit(2);
}

fn parse_args() -> Args {
    let mut args = Args {
        stateless: true,
        addr: "127.0.0.1:0".parse().expect("address"),
        catalog: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples-c/dispatch/catalog.json"),
        serve_seconds: 900,
        max_calls: 5_000_000,
    };
    let mut mode = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--mode" => mode = Some(value()),
            "--addr" => args.addr = value().parse().unwrap_or_else(|_| usage("--addr IP:PORT")),
            "--catalog" => args.catalog = value().into(),
            "--serve-seconds" => args.serve_seconds = value().parse().unwrap_or_else(|_| usage("--serve-seconds N")),
            "--max-calls" => args.max_calls = value().parse().unwrap_or_else(|_| usage("--max-calls N")),
            "-h" | "--help" => usage(""),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    args.stateless = match mode.as_deref() {
        Some("stateless") => true,
        Some("sessions") => false,
        _ => usage("--mode stateless|sessions"),
    };
    if !args.addr.ip().is_loopback() {
        usage("--addr must be a loopback address");
    }
    if args.serve_seconds == 0 || args.serve_seconds > 3600 || args.max_calls == 0 {
        usage("--serve-seconds 1..3600, --max-calls >= 1");
    }
    args
}

/// The tool as the catalog describes it: the same name, title, description,
/// input and output schema as the desk advertises.
fn tool_from_catalog(path: &PathBuf) -> Tool {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| usage(&format!("cannot read {}: {e}", path.display())));
    let catalog: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| usage(&format!("{}: {e}", path.display())));
    let capability = catalog["capabilities"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == TOOL))
        .unwrap_or_else(|| usage(&format!("{}: no capability {TOOL}", path.display())));
    let object = |key: &str| -> JsonObject {
        capability[key]
            .as_object()
            .cloned()
            .unwrap_or_else(|| usage(&format!("{TOOL}: no {key}")))
    };
    let text_of = |key: &str| capability[key].as_str().unwrap_or_default().to_string();
    Tool::new(TOOL, text_of("description"), object("inputSchema"))
        .with_title(text_of("title"))
        .with_raw_output_schema(Arc::new(object("outputSchema")))
}

fn router<M: SessionManager>(shared: Arc<Shared>, manager: M, config: StreamableHttpServerConfig) -> axum::Router {
    let service = StreamableHttpService::new(move || Ok(Desk(shared.clone())), Arc::new(manager), config);
    axum::Router::new().route_service("/mcp", service)
}

#[tokio::main]
async fn main() {
    let args = parse_args();
    let shared = Arc::new(Shared {
        tool: tool_from_catalog(&args.catalog),
        board: board(),
        calls: AtomicU64::new(0),
        max_calls: args.max_calls,
        done: tokio::sync::Notify::new(),
    });
    let cancel = tokio_util::sync::CancellationToken::new();
    let config = StreamableHttpServerConfig::default().with_cancellation_token(cancel.clone());
    let app = if args.stateless {
        let config = config.with_legacy_session_mode(false).with_json_response(true);
        router(shared.clone(), NeverSessionManager::default(), config)
    } else {
        router(shared.clone(), LocalSessionManager::default(), config)
    };

    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .unwrap_or_else(|e| usage(&format!("cannot listen on {}: {e}", args.addr)));
    let local = listener.local_addr().expect("local address");
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    println!("rmcp: serving MCP on http://{local}/mcp");
    use std::io::Write;
    let _ = std::io::stdout().flush();

    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM");
    let server = axum::serve(listener, app);
    tokio::select! {
        r = server => {
            if let Err(e) = r {
                eprintln!("rcip-rmcp-peer: {e}");
            }
        }
        _ = tokio::time::sleep(Duration::from_secs(args.serve_seconds)) => {}
        _ = shared.done.notified() => {}
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    cancel.cancel();
    eprintln!(
        "rcip-rmcp-peer: stopping after {} tool calls",
        shared.calls.load(Ordering::Relaxed)
    );
    // Open SSE streams and sessions end with the process.
    std::process::exit(0);
}
