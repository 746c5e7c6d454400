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
fn method_label(method: &hyper::Method) -> &'static str {
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
