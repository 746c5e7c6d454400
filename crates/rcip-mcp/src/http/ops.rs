//! Operations endpoints (**rcip**): liveness, readiness and Prometheus
//! metrics of a Streamable HTTP server, for load balancers and monitoring.
//!
//! - `GET` [`HttpOptions::health_path`] (default `/healthz`): `200 ok`
//!   while the server serves at all.
//! - `GET` [`HttpOptions::ready_path`] (default `/readyz`): `200 ready`,
//!   or `503` with `Retry-After` and the reason while draining
//!   ([`McpHttpServer::drain`](super::McpHttpServer::drain)), shutting down
//!   or at capacity ([`HttpOptions::max_sessions`] sessions and stateless
//!   requests live).
//! - `GET` [`HttpOptions::metrics_path`] (default none: off): the Prometheus
//!   text format (version 0.0.4) through `prometheus-client`.
//!
//! Health and readiness answer before the `Host`/`Origin` checks and the
//! token check (a load balancer's probe may send neither), and say nothing
//! but the state; metrics answer after the `Host`/`Origin` checks and
//! without a token (a scraper has none): serve them on a path the edge does
//! not expose, or leave them off.

use super::HttpOptions;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The labels of a request's metrics: `method`, and `status` (the HTTP
/// status code).
type RequestLabels = Vec<(&'static str, String)>;

/// A server's metrics.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<Vec<(&'static str, &'static str)>, Histogram>,
    pub(crate) in_flight: Gauge,
    pub(crate) sessions: Gauge,
    pub(crate) stateless: Gauge,
    pub(crate) dropped_notifications: Gauge,
    auth_refusals: Family<Vec<(&'static str, &'static str)>, Counter>,
}

/// `GET`, `POST`, `DELETE` or `other`: the method label (bounded).
pub(crate) fn method_label(method: &hyper::Method) -> &'static str {
    match *method {
        hyper::Method::GET => "GET",
        hyper::Method::POST => "POST",
        hyper::Method::DELETE => "DELETE",
        _ => "other",
    }
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("rcip_mcp");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by method and status code",
            requests.clone(),
        );
        let durations = Family::<Vec<(&'static str, &'static str)>, Histogram>::new_with_constructor(|| {
            // 100 µs to about 26 s.
            Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
                0.0001, 4.0, 10,
            ))
        });
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's headers until its answer starts, in seconds, by method",
            durations.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "http_requests_in_flight",
            "Requests being handled now",
            in_flight.clone(),
        );
        let sessions = Gauge::default();
        registry.register("sessions", "Live MCP sessions (2025 revisions)", sessions.clone());
        let stateless = Gauge::default();
        registry.register(
            "stateless_requests",
            "Stateless (2026-07-28) requests being served, each with a runtime of its own",
            stateless.clone(),
        );
        let dropped_notifications = Gauge::default();
        registry.register(
            "dropped_notifications",
            "Notifications dropped so far by the live sessions (full queues or replay buffers)",
            dropped_notifications.clone(),
        );
        let auth_refusals = Family::<Vec<(&'static str, &'static str)>, Counter>::default();
        registry.register(
            "auth_refusals",
            "Requests refused by the access-token check, by reason",
            auth_refusals.clone(),
        );
        Metrics {
            registry,
            requests,
            durations,
            in_flight,
            sessions,
            stateless,
            dropped_notifications,
            auth_refusals,
        }
    }

    /// Counts one answered request.
    pub(crate) fn answered(&self, method: &hyper::Method, status: u16, seconds: f64) {
        let method = method_label(method);
        self.requests
            .get_or_create(&vec![("method", method.to_string()), ("status", status.to_string())])
            .inc();
        self.durations.get_or_create(&vec![("method", method)]).observe(seconds);
    }

    /// Counts one refusal of the token check.
    pub(crate) fn refused(&self, reason: &'static str) {
        self.auth_refusals.get_or_create(&vec![("reason", reason)]).inc();
    }

    /// The metrics as Prometheus text.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

/// The content type of [`Metrics::text`].
pub(crate) const METRICS_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The checks of the paths at bind: absolute, distinct, not the endpoint.
pub(crate) fn check_paths(options: &HttpOptions) -> Result<(), String> {
    let paths = [
        ("healthPath", &options.health_path),
        ("readyPath", &options.ready_path),
        ("metricsPath", &options.metrics_path),
    ];
    for (i, (name, path)) in paths.iter().enumerate() {
        let Some(p) = path else { continue };
        if !p.starts_with('/') || p.contains(['?', '#']) {
            return Err(format!("{name} \"{p}\" must be a path starting with \"/\""));
        }
        if *p == options.endpoint {
            return Err(format!("{name} \"{p}\" is the MCP endpoint"));
        }
        if paths[..i].iter().any(|(_, q)| q.as_deref() == Some(p.as_str())) {
            return Err(format!("{name} \"{p}\" is another operations path too"));
        }
    }
    Ok(())
}

/// The longest text an [`AccessRecord`] keeps of what a client sent (a
/// path, a JSON-RPC method, a tool name, an `X-Forwarded-For`), in bytes.
pub const ACCESS_TEXT_MAX_BYTES: usize = 256;

/// Records waiting for the access log's thread, at most; beyond, records
/// are dropped and counted ([`McpHttpServer::access_log_dropped`](super::McpHttpServer::access_log_dropped)).
pub const ACCESS_LOG_QUEUE: usize = 4096;

/// One answered HTTP request, for an access log (**rcip**).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRecord {
    /// When the request's headers arrived, in milliseconds since the Unix
    /// epoch.
    pub time_ms: u64,
    /// The address the connection came from (for a mounted server, the
    /// peer its host gave, else the unspecified address).
    pub peer: std::net::IpAddr,
    /// The `X-Forwarded-For` header, only when the peer is one of
    /// [`HttpOptions::trusted_proxies`] (otherwise anyone could write it);
    /// at most [`ACCESS_TEXT_MAX_BYTES`].
    pub forwarded_for: Option<String>,
    /// The authenticated subject (`sub`), with [`HttpOptions::auth`].
    pub subject: Option<String>,
    /// `"legacy"` (a 2025 session or its `initialize`) or `"stateless"`
    /// (2026-07-28), when the request reached MCP.
    pub era: Option<&'static str>,
    /// `GET`, `POST`, `DELETE` or `other`.
    pub http_method: &'static str,
    /// The request's path (at most [`ACCESS_TEXT_MAX_BYTES`]).
    pub path: String,
    /// The JSON-RPC method of a `POST`ed message (at most
    /// [`ACCESS_TEXT_MAX_BYTES`]).
    pub rpc_method: Option<String>,
    /// The tool of a `tools/call` (at most [`ACCESS_TEXT_MAX_BYTES`]).
    pub tool: Option<String>,
    /// The HTTP status.
    pub status: u16,
    /// From the headers until the answer started, in microseconds (an SSE
    /// stream's later events are not counted).
    pub duration_us: u64,
}

impl AccessRecord {
    /// One JSON object: `{"time", "peer", "forwardedFor"?, "subject"?,
    /// "era"?, "httpMethod", "path", "rpcMethod"?, "tool"?, "status",
    /// "durationUs"}` (`time` in RFC 3339 UTC with milliseconds).
    pub fn to_json(&self) -> String {
        let mut m = serde_json::Map::new();
        m.insert("time".into(), serde_json::Value::String(rfc3339_ms(self.time_ms)));
        m.insert("peer".into(), serde_json::Value::String(self.peer.to_string()));
        let mut opt = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                m.insert(k.into(), serde_json::Value::String(v.clone()));
            }
        };
        opt("forwardedFor", &self.forwarded_for);
        opt("subject", &self.subject);
        opt("era", &self.era.map(str::to_string));
        m.insert("httpMethod".into(), self.http_method.into());
        m.insert("path".into(), self.path.clone().into());
        let mut opt = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                m.insert(k.into(), serde_json::Value::String(v.clone()));
            }
        };
        opt("rpcMethod", &self.rpc_method);
        opt("tool", &self.tool);
        m.insert("status".into(), self.status.into());
        m.insert("durationUs".into(), self.duration_us.into());
        serde_json::Value::Object(m).to_string()
    }
}

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn rfc3339_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// Receives every [`AccessRecord`], one at a time, in the order answered,
/// on the server's access-log thread (`rcip-mcp-log`), never an I/O or
/// worker thread: a slow log delays only other records (beyond
/// [`ACCESS_LOG_QUEUE`] waiting, records are dropped and counted).
pub trait AccessLog: Send + Sync + 'static {
    /// One record, lent for the call.
    fn record(&self, record: &AccessRecord);
}

impl<F: Fn(&AccessRecord) + Send + Sync + 'static> AccessLog for F {
    fn record(&self, record: &AccessRecord) {
        self(record)
    }
}

/// The access log's queue and thread.
pub(crate) struct AccessLogger {
    tx: parking_lot::Mutex<Option<std::sync::mpsc::SyncSender<AccessRecord>>>,
    thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
    pub(crate) dropped: std::sync::atomic::AtomicU64,
}

impl AccessLogger {
    pub(crate) fn new() -> AccessLogger {
        AccessLogger {
            tx: parking_lot::Mutex::new(None),
            thread: parking_lot::Mutex::new(None),
            dropped: Default::default(),
        }
    }

    /// True when a log is set (records are worth making).
    pub(crate) fn active(&self) -> bool {
        self.tx.lock().is_some()
    }

    /// Replaces the log (the earlier one's thread delivers what it has,
    /// then ends).
    pub(crate) fn set(&self, log: Option<std::sync::Arc<dyn AccessLog>>) -> std::io::Result<()> {
        let previous = self.thread.lock().take();
        *self.tx.lock() = None;
        if let Some(t) = previous {
            let _ = t.join();
        }
        let Some(log) = log else { return Ok(()) };
        let (tx, rx) = std::sync::mpsc::sync_channel::<AccessRecord>(ACCESS_LOG_QUEUE);
        let thread = std::thread::Builder::new().name("rcip-mcp-log".into()).spawn(move || {
            while let Ok(record) = rx.recv() {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| log.record(&record)));
            }
        })?;
        *self.tx.lock() = Some(tx);
        *self.thread.lock() = Some(thread);
        Ok(())
    }

    /// Queues a record (dropped and counted when the queue is full).
    pub(crate) fn push(&self, record: AccessRecord) {
        if let Some(tx) = &*self.tx.lock() {
            if tx.try_send(record).is_err() {
                self.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Delivers what is queued and ends the thread.
    pub(crate) fn close(&self) {
        let _ = self.set(None);
    }
}

/// `text` cut to at most [`ACCESS_TEXT_MAX_BYTES`] at a character boundary.
pub(crate) fn bounded(text: &str) -> String {
    let mut end = text.len().min(ACCESS_TEXT_MAX_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_764_820_800_123), "2025-12-04T04:00:00.123Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
