//! The session state machine. Locking rule: the state lock is never held
//! while calling the runtime or the output (both may call back into the
//! session), so every method collects what it has to send and sends it
//! after releasing the lock.
//!
//! Split by flow: this file holds the state, receiving, dispatching and
//! answering requests of both eras; `serve.rs` the serving loop of a
//! message connection (stdio, a host's `Transport`); `listing.rs`
//! `tools/list`, tool names and `list_changed`; `calls.rs` a `tools/call`,
//! `channel.rs` a handler's side channel and questions, `confirm.rs`
//! confirmations asked in a session, `mrtr.rs` multi round-trip requests.

mod calls;
mod channel;
mod confirm;
mod listing;
mod mrtr;
mod serve;

use calls::*;
use channel::*;
use confirm::*;
#[cfg(feature = "http")]
pub(crate) use listing::check_tool_names;
use listing::*;

use super::content::{self, ContentSource};
use super::jsonrpc::{
    self, classify, error_response, id_key, Incoming, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
};
use super::modern::{
    self, RequestMeta, RequestRuntime, RequestRuntimes, RequestSetup, RpcError, META_SERVER_INFO,
    MISSING_REQUIRED_CLIENT_CAPABILITY, MODERN_TOO_MANY_IN_FLIGHT, MODERN_TTL_MS,
};
use super::outbox::{Kind, Outbox};
use super::pool::WorkerPool;
use super::state::OpenedState;
use super::tools::{self, Unwrapped};
use super::{
    tool_name_for, ConfirmationMode, McpOptions, McpOutput, RequestStateOptions, ToolNames, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_PENDING_CONFIRMATIONS, DEFAULT_MAX_QUEUED_MESSAGES, DEFAULT_WORKERS, MAX_TOOL_NAME_CHARS,
    MCP_DEFAULT_MAX_MESSAGE_BYTES, MCP_LEGACY_REVISIONS, MCP_PROTOCOL_REVISION,
};
use parking_lot::{Condvar, Mutex};
use rcip::catalog::Catalog;
use rcip::json::Limits;
use rcip::runtime::{
    CancelToken, Client, ClientReply, ElicitAnswer, ElicitRefusal, ElicitSink, Host, HostError, InvocationChannel,
    LogLevel, ProgressReport, ReplySink, Runtime, Snapshot, Subscriber, Subscription,
};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// JSON-RPC error code of a request refused because the session already
/// has its maximum of requests in flight (a server error code, -32000 to
/// -32099).
pub(crate) const TOO_MANY_IN_FLIGHT: i64 = -32000;

/// How long dropping a session waits for its own worker threads to end.
const POOL_JOIN_TIMEOUT: Duration = Duration::from_secs(5);

/// After the end of a transport's input, how long requests already read
/// may still be answered before the session closes.
const END_OF_INPUT_GRACE: Duration = Duration::from_secs(2);

/// How often an elicitation whose confirmation's `expiresAt` has passed
/// asks the runtime again whether the confirmation is still pending (a
/// runtime with manual timers or another clock expires it later).
const EXPIRY_RECHECK: Duration = Duration::from_millis(250);

/// Nesting depth accepted in a message: the default payload depth (1000)
/// plus the envelope (`params.arguments`) and a `{"input": ...}` wrapper.
pub(crate) const MESSAGE_MAX_DEPTH: usize = 1010;

/// An MCP server session over one runtime. See the [module](super) docs.
///
/// Thread safety: every method may be called from any thread, also
/// concurrently and from inside the output. Dropping the session closes it
/// ([`close`](Self::close)).
pub struct McpSession {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession").finish_non_exhaustive()
    }
}

struct Inner {
    client: Client,
    /// The one host control the session uses: resolving a confirmation
    /// with the user's answer ([`ConfirmationMode::Elicit`]), declining one
    /// beyond the session's cap, and reading whether one is still pending.
    /// No MCP method reaches it.
    host: Host,
    elicit: bool,
    catalog: Catalog,
    options: McpOptions,
    /// Tool names other than the capability ids: capability id → name and
    /// name → capability id; `None` when every tool is named by its id.
    names: Option<(HashMap<String, String>, HashMap<String, String>)>,
    application: String,
    server_info: Value,
    instructions: Option<String>,
    limits: Limits,
    max_in_flight: usize,
    max_pending_confirmations: usize,
    pool: Option<WorkerPool>,
    /// Cancellations: never behind a slow handler (else the pool).
    control: Option<WorkerPool>,
    /// The pools are the session's own (not a server's, shared).
    owns_pool: bool,
    outbox: Outbox,
    state: Mutex<State>,
    /// Notified when a request is answered (the stdio reader waits on it).
    answered: Condvar,
    subscription: Mutex<Option<Subscription>>,
    serving: AtomicBool,
    /// Content blocks by capability id ([`McpOptions::content`]), checked.
    content: HashMap<String, Vec<ContentSource>>,
    /// Content blocks replaced by a text note because the output property
    /// was not valid content.
    content_replaced: AtomicU64,
    /// The host's per-request runtime factory for modern requests; `None`:
    /// they use the session's runtime.
    request_runtimes: Mutex<Option<Arc<dyn RequestRuntimes>>>,
    /// [`McpOptions::request_state`] with its defaults filled in (keys and
    /// store are `Some`).
    request_state: RequestStateOptions,
    /// Who the session's requests run for ([`McpSession::set_principal`]).
    principal: Mutex<Option<String>>,
}

#[derive(Default)]
struct State {
    /// `initialize` was answered.
    initialized: bool,
    /// `notifications/initialized` arrived.
    ready: bool,
    /// The legacy revision `initialize` negotiated (one of
    /// [`MCP_LEGACY_REVISIONS`]; empty before `initialize`).
    protocol: &'static str,
    /// The client declared form-mode elicitation.
    elicitation: bool,
    /// The client declared sampling.
    sampling: bool,
    /// The client declared roots.
    roots: bool,
    /// Requests received and not answered yet, by [`id_key`].
    calls: HashMap<String, Call>,
    /// Elicitations sent and not answered yet, by [`id_key`] of our id.
    elicitations: HashMap<String, Elicitation>,
    /// Handlers' questions (`elicitation/create` on behalf of a handler,
    /// **rcip**) sent and not answered yet, by [`id_key`] of our id.
    asks: HashMap<String, Ask>,
    /// The least severe log level sent (`logging/setLevel`); `None` until
    /// it is called: `info`.
    log_level: Option<LogLevel>,
    next_request: u64,
    /// The snapshot tools/list was last compared at, with the text of what
    /// it returns (without the revision) once computed.
    tools_seen: Option<(Arc<Snapshot>, Option<String>)>,
    /// A change seen before `notifications/initialized`.
    list_changed_pending: bool,
    /// Answers taken out of `calls` and not queued yet (so `drain` does
    /// not mistake an answer on its way for no answer).
    replying: usize,
    closed: bool,
}

impl State {
    /// Whether the session's client (its `initialize`) declared what the
    /// handler's request `method` needs: form elicitation, sampling, roots.
    fn declares(&self, method: &str) -> bool {
        match method {
            "elicitation/create" => self.elicitation,
            "sampling/createMessage" => self.sampling,
            "roots/list" => self.roots,
            _ => false,
        }
    }
}

struct Call {
    id: Value,
    token: Option<CancelToken>,
    /// `notifications/cancelled` arrived: the request gets no response.
    cancelled: bool,
    /// Our elicitation request, while the user is being asked.
    elicitation: Option<Value>,
    /// Our request keys of the handler's questions still open.
    asks: Vec<String>,
    /// A modern (2026-07-28) request: what its `_meta` declared.
    modern: Option<Arc<RequestMeta>>,
    /// The modern request's own runtime (from the host's factory), closed
    /// when the request ends.
    runtime: Option<Box<dyn RequestRuntime>>,
    /// Client capabilities the handler needed and the modern request did
    /// not declare: the response is `-32021` naming them.
    missing: Option<Map<String, Value>>,
    /// A modern request's questions and answers (multi round-trip).
    questions: mrtr::Questions,
}

type Reply = Result<Value, (i64, String)>;

struct Watcher(Weak<Inner>);

impl Subscriber for Watcher {
    fn notify(&self, _revision: u64) {
        if let Some(inner) = self.0.upgrade() {
            inner.on_revision();
        }
    }
}

impl McpSession {
    /// A session over `runtime`, sending through `output`. It keeps the
    /// runtime's host view for one purpose: resolving confirmations (with
    /// the user's answer under [`ConfirmationMode::Elicit`], or declining
    /// one beyond [`McpOptions::max_pending_confirmations`]).
    ///
    /// The session keeps the runtime's core alive; after the runtime is
    /// closed, calls are answered with `-32603`.
    ///
    /// Errors: [`HostError::InvalidArgument`] when the tool naming gives two
    /// capabilities one name, a name longer than 64 characters, or maps an
    /// id the catalog does not have (the message names both ids);
    /// [`HostError::Closed`]; [`HostError::InvalidArgument`] also when the
    /// worker threads cannot be started.
    pub fn new(runtime: &Runtime, options: McpOptions, output: Arc<dyn McpOutput>) -> Result<McpSession, HostError> {
        let start = |n: usize| {
            WorkerPool::new(n)
                .map_err(|e| HostError::InvalidArgument(format!("the MCP worker threads could not start: {e}")))
        };
        let (pool, control) = match options.workers.unwrap_or(DEFAULT_WORKERS) {
            0 => (None, None),
            n => (Some(start(n)?), Some(start(1)?)),
        };
        Self::build(runtime, options, output, pool, control, true)
    }

    /// As [`new`](Self::new), with the pools given (shared with other
    /// sessions, as a Streamable HTTP server does) or none (everything runs
    /// on the calling thread); [`McpOptions::workers`] is not read.
    /// `control` runs what must never wait behind a slow handler:
    /// cancellations (a cancellation queued behind the handler it should
    /// stop could not stop it); without it they go to `pool`.
    pub fn with_pools(
        runtime: &Runtime,
        options: McpOptions,
        output: Arc<dyn McpOutput>,
        pool: Option<WorkerPool>,
        control: Option<WorkerPool>,
    ) -> Result<McpSession, HostError> {
        Self::build(runtime, options, output, pool, control, false)
    }

    fn build(
        runtime: &Runtime,
        options: McpOptions,
        output: Arc<dyn McpOutput>,
        pool: Option<WorkerPool>,
        control: Option<WorkerPool>,
        owns_pool: bool,
    ) -> Result<McpSession, HostError> {
        let catalog = runtime.catalog().clone();
        let names = tool_names(&catalog, &options.tool_names).map_err(HostError::InvalidArgument)?;
        content::check(&catalog, &options.content).map_err(HostError::InvalidArgument)?;
        let content_map: HashMap<String, Vec<ContentSource>> = options.content.iter().cloned().collect();
        let app = catalog.application();
        let app_str = |k: &str| app.get(k).and_then(Value::as_str).map(str::to_string);
        let application = app_str("name")
            .or_else(|| app_str("id"))
            .unwrap_or_else(|| "the application".into());
        let mut server_info = Map::new();
        server_info.insert(
            "name".into(),
            Value::String(
                options
                    .server_name
                    .clone()
                    .or_else(|| app_str("id"))
                    .unwrap_or_else(|| "rcip".into()),
            ),
        );
        if let Some(title) = app_str("name") {
            server_info.insert("title".into(), Value::String(title));
        }
        server_info.insert(
            "version".into(),
            Value::String(
                options
                    .server_version
                    .clone()
                    .or_else(|| app_str("version"))
                    .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string()),
            ),
        );
        let instructions = options.instructions.clone().or_else(|| app_str("description"));
        let request_state = options
            .request_state
            .resolved()
            .map_err(|e| HostError::InvalidArgument(format!("the request state keys could not be drawn: {e}")))?;
        let limits = Limits {
            max_bytes: options.max_message_bytes.unwrap_or(MCP_DEFAULT_MAX_MESSAGE_BYTES),
            max_depth: MESSAGE_MAX_DEPTH,
        };
        let inner = Arc::new(Inner {
            client: runtime.client(),
            host: runtime.host(),
            elicit: options.confirmation == ConfirmationMode::Elicit,
            catalog,
            names,
            application,
            server_info: Value::Object(server_info),
            instructions,
            limits,
            max_in_flight: options.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT),
            max_pending_confirmations: options
                .max_pending_confirmations
                .unwrap_or(DEFAULT_MAX_PENDING_CONFIRMATIONS),
            pool,
            control,
            owns_pool,
            outbox: Outbox::new(
                output,
                options.max_queued_messages.unwrap_or(DEFAULT_MAX_QUEUED_MESSAGES),
            ),
            options,
            state: Mutex::new(State::default()),
            answered: Condvar::new(),
            subscription: Mutex::new(None),
            serving: AtomicBool::new(false),
            content: content_map,
            content_replaced: AtomicU64::new(0),
            request_runtimes: Mutex::new(None),
            request_state,
            principal: Mutex::new(None),
        });
        let subscription = inner.client.subscribe(Arc::new(Watcher(Arc::downgrade(&inner))))?;
        *inner.subscription.lock() = Some(subscription);
        Ok(McpSession { inner })
    }

    /// The key of a request id, as [`MessageKind`](super::MessageKind)
    /// names requests: the id's exact JSON text.
    pub fn request_key(id: &Value) -> String {
        id_key(id)
    }

    /// The request-state counters of the session (shared with every
    /// session its [`McpOptions::request_state`] was cloned into, such as
    /// the sessions of one HTTP server): states sealed and opened, and
    /// refusals by reason ([`StateCounters`](crate::state::StateCounters)),
    /// for metrics.
    pub fn request_state_counters(&self) -> Arc<crate::state::StateCounters> {
        self.inner.request_state.counters.clone()
    }

    /// Names who the session's modern requests run for (`None`: nobody in
    /// particular, the default): the principal a stateless confirmation's
    /// `requestState` is bound to, so a state issued to one principal is
    /// refused for any other (**rcip**, docs/MCP.md "Confirmations without
    /// sessions"). A per-request runtime's own
    /// [`RequestRuntime::principal`] takes precedence. rcip's HTTP server
    /// sets it from [`SessionRuntime::principal`](crate::http::SessionRuntime::principal)
    /// for each stateless request; a host driving its own transport sets
    /// it from the credential it verified. Thread-safe; takes effect for
    /// requests answered after the call.
    pub fn set_principal(&self, principal: Option<String>) {
        *self.inner.principal.lock() = principal;
    }

    /// Gives the session a per-request runtime factory: from now on each
    /// modern (2026-07-28) `tools/list` and `tools/call` runs on a runtime
    /// of its own, built by `factory` and closed when its response is sent
    /// ([`RequestRuntimes`]). Without one, modern requests use the
    /// session's runtime. Legacy (`initialize`) requests always use the
    /// session's runtime. Replaces an earlier factory; requests already
    /// running keep theirs.
    /// The factory is dropped when the session is dropped or the factory
    /// replaced, once no request is building a runtime with it, never under
    /// a session lock.
    pub fn set_request_runtimes(&self, factory: Arc<dyn RequestRuntimes>) {
        let old = self.inner.request_runtimes.lock().replace(factory);
        // Outside the lock: dropping a host's factory may run host code
        // (the C ABI's user_data_free).
        drop(old);
    }

    /// Client requests received and not answered yet (including calls
    /// waiting for a confirmation answer).
    pub fn in_flight(&self) -> usize {
        self.inner.state.lock().calls.len()
    }

    /// The most requests in flight at once ([`McpOptions::max_in_flight`]).
    pub fn max_in_flight(&self) -> usize {
        self.inner.max_in_flight
    }

    /// Notifications dropped because the outgoing queue was full.
    pub fn dropped_notifications(&self) -> u64 {
        self.inner.outbox.dropped()
    }

    /// Content blocks this session replaced by a text note because an
    /// output property its `content` mapping names was not valid content
    /// (**rcip**; the results' outcomes stay `succeeded`).
    pub fn content_replaced(&self) -> u64 {
        self.inner.content_replaced.load(Ordering::Relaxed)
    }

    /// True once the session is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.state.lock().closed
    }

    /// Takes one JSON-RPC message (the bytes of one line, without the
    /// newline). Everything it makes the session send is sent before this
    /// returns, unless the output is busy on another thread (then that
    /// thread sends it) or the reply waits for a capability or the user.
    pub fn receive(&self, message: &[u8]) {
        self.inner.receive(message, &[]);
    }

    /// As [`receive`](Self::receive), for a transport of the host's own
    /// that carries headers (an HTTP server of its own): a modern
    /// (2026-07-28) request's per-request factory sees them in
    /// [`RequestSetup::headers`] (pass them with lower-case names). Legacy
    /// requests ignore them.
    pub fn receive_with_headers(&self, message: &[u8], headers: &[(String, String)]) {
        self.inner.receive(message, headers);
    }

    /// As [`receive`](Self::receive), for a message a transport already
    /// parsed and classified (`jsonrpc::classify_value`).
    #[cfg(feature = "http")]
    pub(crate) fn receive_incoming(&self, message: Incoming) {
        self.inner.receive_incoming(message, &[]);
    }

    /// Closes the session: every call in flight is cancelled (their tokens)
    /// and gets no response, nothing more is sent, the snapshot
    /// subscription ends. Idempotent.
    pub fn close(&self) {
        self.inner.close();
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        self.inner.close();
        // A pool of its own: its threads finish what is queued (the
        // close's cancellations) and end before the drop returns, so no
        // library thread runs host code after the host freed the session.
        if self.inner.owns_pool {
            for pool in self.inner.pool.iter().chain(&self.inner.control) {
                pool.close_and_wait(POOL_JOIN_TIMEOUT);
            }
        }
    }
}

fn params_object(params: Option<Value>) -> Result<Map<String, Value>, (i64, String)> {
    match params {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err((INVALID_PARAMS, "Invalid params: params must be an object".into())),
    }
}

impl Inner {
    fn send(&self, message: String, kind: Kind) {
        self.outbox.send(message, kind);
    }

    /// `logging/setLevel`: `{"level": "debug" | ... | "emergency"}`.
    fn set_log_level(&self, params: Option<Value>) -> Reply {
        let p = params_object(params)?;
        let level = p.get("level").and_then(Value::as_str).and_then(LogLevel::parse).ok_or_else(|| {
            (
                INVALID_PARAMS,
                "Invalid params: logging/setLevel needs \"level\": one of debug, info, notice, warning, error, critical, alert, emergency"
                    .to_string(),
            )
        })?;
        self.state.lock().log_level = Some(level);
        Ok(json!({}))
    }

    /// Runs `job` on the worker pool, or here when the session has none.
    fn dispatch(&self, job: impl FnOnce() + Send + 'static) {
        match &self.pool {
            Some(pool) => pool.spawn(job),
            None => job(),
        }
    }

    /// Runs a cancellation on the control pool (never behind a handler),
    /// else as [`dispatch`](Self::dispatch).
    fn dispatch_control(&self, job: impl FnOnce() + Send + 'static) {
        match &self.control {
            Some(pool) => pool.spawn(job),
            None => self.dispatch(job),
        }
    }

    /// Waits (for the stdio reader) until fewer than the maximum requests
    /// are in flight and the outgoing queue has room, or the session closed.
    fn wait_for_capacity(&self) {
        {
            let mut st = self.state.lock();
            while !st.closed && st.calls.len() >= self.max_in_flight {
                self.answered.wait_for(&mut st, Duration::from_millis(100));
            }
        }
        while !self.outbox.wait_for_room(Duration::from_millis(100)) {
            if self.state.lock().closed {
                return;
            }
        }
    }

    /// Waits until no request is in flight and every queued message went
    /// out, or `grace` passed.
    fn drain(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        {
            let mut st = self.state.lock();
            while !st.closed && (!st.calls.is_empty() || st.replying > 0) {
                if self.answered.wait_until(&mut st, deadline).timed_out() {
                    return;
                }
            }
        }
        self.outbox.wait_until_empty(deadline);
    }

    fn close(&self) {
        let (tokens, asks, runtimes): (Vec<CancelToken>, Vec<Ask>, Vec<Box<dyn RequestRuntime>>) = {
            let mut st = self.state.lock();
            if st.closed {
                return;
            }
            st.closed = true;
            st.elicitations.clear();
            let asks = st.asks.drain().map(|(_, a)| a).collect();
            let mut tokens = Vec::new();
            let mut runtimes = Vec::new();
            for (_, c) in st.calls.drain() {
                tokens.extend(c.token);
                runtimes.extend(c.runtime);
            }
            (tokens, asks, runtimes)
        };
        if !asks.is_empty() {
            // The handlers' questions: answered `cancel` on a worker.
            self.dispatch_control(move || {
                for a in asks {
                    a.answer.deliver(None);
                }
            });
        }
        self.answered.notify_all();
        self.outbox.close();
        let subscription = self.subscription.lock().take();
        drop(subscription);
        // Cancelling runs the tokens' on-cancel callbacks (host code): on
        // the pool, not on the transport's thread.
        if !tokens.is_empty() || !runtimes.is_empty() {
            self.dispatch_control(move || {
                for t in tokens {
                    t.cancel();
                }
                // Modern requests' own runtimes end with the session.
                for r in runtimes {
                    r.runtime().close();
                }
            });
        }
    }

    fn receive(self: &Arc<Self>, bytes: &[u8], headers: &[(String, String)]) {
        if self.state.lock().closed {
            return;
        }
        self.receive_incoming(classify(bytes, &self.limits), headers);
    }

    fn receive_incoming(self: &Arc<Self>, incoming: Incoming, headers: &[(String, String)]) {
        if self.state.lock().closed {
            return;
        }
        match incoming {
            Incoming::Invalid { id, code, message } => {
                let key = id_key(&id);
                self.send(error_response(&id, code, &message), Kind::Response(key))
            }
            Incoming::Ignored => {}
            Incoming::Response { id, outcome } => self.on_response(&id, outcome),
            Incoming::Notification { method, params } => self.on_notification(&method, params),
            Incoming::Request { id, method, params } => self.on_request(id, &method, params, headers),
        }
    }

    fn on_request(self: &Arc<Self>, id: Value, method: &str, params: Option<Value>, headers: &[(String, String)]) {
        let key = id_key(&id);
        // The era: a modern protocol version in `_meta` is served
        // statelessly (2026-07-28 "Versioning and Compatibility").
        let modern = match modern::read_meta(params.as_ref(), self.options.eras) {
            None => None,
            Some(Ok(mut meta)) => {
                meta.headers = headers.to_vec();
                Some(Arc::new(meta))
            }
            Some(Err(e)) => {
                if !self.state.lock().closed {
                    self.send(error_data_response(&id, &e), Kind::Response(key));
                }
                return;
            }
        };
        {
            let mut st = self.state.lock();
            if st.closed {
                return;
            }
            if st.calls.contains_key(&key) {
                drop(st);
                let text = format!("Invalid Request: request id {id} is already in flight");
                self.send(error_response(&id, INVALID_REQUEST, &text), Kind::Response(key));
                return;
            }
            if st.calls.len() >= self.max_in_flight {
                drop(st);
                let text = format!(
                    "Too many requests in flight: this session answers at most {} at once; retry after a response",
                    self.max_in_flight
                );
                let code = if modern.is_some() {
                    MODERN_TOO_MANY_IN_FLIGHT
                } else {
                    TOO_MANY_IN_FLIGHT
                };
                self.send(error_response(&id, code, &text), Kind::Response(key));
                return;
            }
            st.calls.insert(
                key.clone(),
                Call {
                    id,
                    token: None,
                    cancelled: false,
                    elicitation: None,
                    asks: Vec::new(),
                    modern: modern.clone(),
                    runtime: None,
                    missing: None,
                    questions: mrtr::Questions::default(),
                },
            );
        }
        if let Some(meta) = modern {
            return self.on_modern_request(key, method, params, meta);
        }
        let reply = match method {
            "initialize" => self.initialize(params),
            "ping" => Ok(json!({})),
            "logging/setLevel" => self.require_initialized().and_then(|()| self.set_log_level(params)),
            "tools/list" => self
                .require_initialized()
                .and_then(|()| self.tools_list(&self.client, params)),
            "tools/call" => match self.require_initialized().and_then(|()| params_object(params)) {
                Ok(p) => {
                    // Validation, policy and handler run on a worker.
                    let inner = self.clone();
                    self.dispatch(move || {
                        let client = inner.client.clone();
                        let host = inner.host.clone();
                        inner.tools_call(key, p, client, host)
                    });
                    return;
                }
                Err(e) => Err(e),
            },
            other => Err((METHOD_NOT_FOUND, format!("Method not found: {other}"))),
        };
        self.finish(&key, reply);
    }

    /// A modern (2026-07-28) request, already in `calls`: served from what
    /// it carries, never from the legacy session's state.
    fn on_modern_request(self: &Arc<Self>, key: String, method: &str, params: Option<Value>, meta: Arc<RequestMeta>) {
        let reply = match method {
            "server/discover" => Ok(self.discover()),
            "tools/list" | "tools/call" => match params_object(params) {
                Ok(p) => {
                    // The factory (host code) and the handler: on a worker.
                    let inner = self.clone();
                    let method = method.to_string();
                    self.dispatch(move || {
                        let (client, host) = match inner.request_runtime(&key, &method, &meta) {
                            Ok(Some(surfaces)) => surfaces,
                            Ok(None) => return, // ended meanwhile
                            Err(e) => return inner.finish(&key, Err(e)),
                        };
                        if method == "tools/call" {
                            inner.tools_call(key, p, client, host)
                        } else {
                            let reply = inner.tools_list(&client, Some(Value::Object(p)));
                            inner.finish(&key, reply)
                        }
                    });
                    return;
                }
                Err(e) => Err(e),
            },
            // Not methods of 2026-07-28 (its changelog: the `initialize`
            // handshake, `ping` and `logging/setLevel` are removed); an
            // `initialize` without the modern `_meta` opens a legacy
            // session as before.
            "initialize" => Err((
                METHOD_NOT_FOUND,
                format!(
                    "Method not found: initialize is not a method of MCP {}; send it without _meta[\"{}\"] to open a session of {}",
                    modern::MCP_MODERN_REVISION,
                    modern::META_PROTOCOL_VERSION,
                    super::MCP_LEGACY_REVISIONS.join(", ")
                ),
            )),
            other => Err((
                METHOD_NOT_FOUND,
                format!("Method not found: {other} (MCP {})", modern::MCP_MODERN_REVISION),
            )),
        };
        self.finish(&key, reply);
    }

    /// The client and host surfaces a modern request runs on: a fresh
    /// runtime from the host's factory, kept in the call until it ends, or
    /// the session's runtime when there is no factory. `Ok(None)`: the
    /// request ended meanwhile (cancelled, session closed).
    fn request_runtime(
        &self,
        key: &str,
        method: &str,
        meta: &RequestMeta,
    ) -> Result<Option<(Client, Host)>, (i64, String)> {
        let factory = self.request_runtimes.lock().clone();
        let Some(factory) = factory else {
            return Ok(Some((self.client.clone(), self.host.clone())));
        };
        let setup = RequestSetup {
            method,
            meta: &meta.meta,
            headers: &meta.headers,
        };
        let built = factory.request_runtime(&setup);
        // The factory goes before the session's state is locked below (its
        // last reference may be this one: a replaced factory).
        drop(factory);
        let runtime = built.map_err(|e| {
            (
                INTERNAL_ERROR,
                format!("Internal error: the request's runtime could not be built: {e}"),
            )
        })?;
        if !same_catalog(runtime.runtime().catalog(), &self.catalog) {
            // Its tools would be listed under names the session cannot
            // call (the session names tools from its own catalog).
            runtime.runtime().close();
            return Err((
                INTERNAL_ERROR,
                "Internal error: the request's runtime was built from another catalog than the session's (the per-request factory must build it from the session's compiled catalog)".into(),
            ));
        }
        let surfaces = (runtime.runtime().client(), runtime.runtime().host());
        let mut st = self.state.lock();
        let closed = st.closed;
        match st.calls.get_mut(key) {
            Some(call) if !closed && !call.cancelled => {
                call.runtime = Some(runtime);
                Ok(Some(surfaces))
            }
            _ => {
                drop(st);
                runtime.runtime().close();
                Ok(None)
            }
        }
    }

    /// `server/discover` (2026-07-28 "Discovery"): the revisions, the
    /// capabilities of a modern request, the server's identity (in
    /// `_meta`, added by [`finish`](Self::finish)) and the caching hints.
    fn discover(&self) -> Value {
        let mut result = Map::new();
        result.insert(
            "supportedVersions".into(),
            json!(modern::supported_versions(self.options.eras)),
        );
        // No `listChanged`: a modern client would get the change through
        // `subscriptions/listen`, which rcip does not implement yet.
        result.insert("capabilities".into(), json!({"tools": {}, "logging": {}}));
        if let Some(i) = &self.instructions {
            result.insert("instructions".into(), Value::String(i.clone()));
        }
        result.insert("ttlMs".into(), json!(self.options.ttl_ms.unwrap_or(MODERN_TTL_MS)));
        // The same for every caller.
        result.insert("cacheScope".into(), json!("public"));
        Value::Object(result)
    }

    /// Answers request `key` unless it was cancelled (then it gets no
    /// response) or already answered.
    fn finish(&self, key: &str, reply: Reply) {
        self.finish_rpc(key, reply.map_err(RpcError::from));
    }

    /// [`finish`](Self::finish) with an error that may carry `data`.
    fn finish_rpc(&self, key: &str, reply: Result<Value, RpcError>) {
        let (call, asks) = {
            let mut st = self.state.lock();
            if st.closed {
                return;
            }
            let call = st.calls.remove(key);
            if call.as_ref().is_some_and(|c| !c.cancelled) {
                st.replying += 1;
            }
            let asks = call.as_ref().map(|c| take_asks(&mut st, &c.asks)).unwrap_or_default();
            (call, asks)
        };
        // The handler settled with questions still open: withdrawn.
        self.withdraw(asks, "The tool call ended.");
        let Some(call) = call else {
            self.answered.notify_all();
            return;
        };
        if call.cancelled {
            // No response: the transport may let the request go.
            self.send(String::new(), Kind::Abandoned(key.to_string()));
        } else {
            let mut reply = reply;
            match &call.modern {
                Some(_) => self.shape_modern(&mut reply, call.missing.as_ref()),
                None => {
                    if let Ok(Value::Object(result)) = &mut reply {
                        if self.state.lock().protocol == "2025-03-26" {
                            // A 2025-03-26 client reads the output from
                            // `content` (the JSON text block): no
                            // structured content then.
                            result.remove("structuredContent");
                        }
                    }
                }
            }
            self.send(
                match reply {
                    Ok(result) => jsonrpc::response(&call.id, result),
                    Err(e) => error_data_response(&call.id, &e),
                },
                Kind::Response(key.to_string()),
            );
            self.state.lock().replying -= 1;
        }
        // A modern request's own runtime ends with its response (or with
        // the request, when it was cancelled).
        if let Some(runtime) = call.runtime {
            runtime.runtime().close();
        }
        self.answered.notify_all();
    }

    /// A modern request's reply as 2026-07-28 has it: a result carries
    /// `resultType: "complete"` ("Overview", "Result Responses": "The
    /// `result` MUST include a `resultType` field") and the server's
    /// identity in `_meta["io.modelcontextprotocol/serverInfo"]` (SHOULD,
    /// "Per-response protocol fields"). A handler that needed a client
    /// capability the request did not declare turns it into `-32021`.
    fn shape_modern(&self, reply: &mut Result<Value, RpcError>, missing: Option<&Map<String, Value>>) {
        if let Some(missing) = missing {
            let names: Vec<&str> = missing.keys().map(String::as_str).collect();
            *reply = Err(RpcError {
                code: MISSING_REQUIRED_CLIENT_CAPABILITY,
                message: format!(
                    "Missing required client capability: this call needs {} (declare it in _meta[\"{}\"])",
                    names.join(", "),
                    modern::META_CLIENT_CAPABILITIES
                ),
                data: Some(json!({"requiredCapabilities": missing})),
            });
            return;
        }
        if let Ok(Value::Object(result)) = reply {
            result
                .entry("resultType")
                .or_insert_with(|| Value::String("complete".into()));
            let meta = result.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = meta {
                m.insert(META_SERVER_INFO.into(), self.server_info.clone());
            }
        }
    }

    fn require_initialized(&self) -> Result<(), (i64, String)> {
        if self.state.lock().initialized {
            Ok(())
        } else {
            Err((
                INVALID_REQUEST,
                "Invalid Request: the session is not initialized (send initialize first)".into(),
            ))
        }
    }

    fn initialize(&self, params: Option<Value>) -> Reply {
        let p = params_object(params)?;
        if !p.get("protocolVersion").is_some_and(Value::is_string) {
            return Err((
                INVALID_PARAMS,
                "Invalid params: initialize needs \"protocolVersion\" (a string)".into(),
            ));
        }
        let capabilities = match p.get("capabilities") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                return Err((
                    INVALID_PARAMS,
                    "Invalid params: \"capabilities\" must be an object".into(),
                ))
            }
        };
        let elicitation = mrtr::declares_form(&capabilities);
        // MCP 2025-11-25, "Lifecycle" ("Version Negotiation"): the
        // requested revision when the session speaks it, else the latest.
        let requested = p.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        let protocol = MCP_LEGACY_REVISIONS
            .iter()
            .copied()
            .find(|v| *v == requested)
            .unwrap_or(MCP_PROTOCOL_REVISION);
        // Elicitation arrived in 2025-06-18: a 2025-03-26 client is never
        // asked, whatever it declared.
        let elicitation = elicitation && protocol != "2025-03-26";
        let baseline = self.client.snapshot().ok();
        {
            let mut st = self.state.lock();
            if st.initialized {
                return Err((
                    INVALID_REQUEST,
                    "Invalid Request: initialize was already answered".into(),
                ));
            }
            st.initialized = true;
            st.protocol = protocol;
            st.elicitation = elicitation;
            st.sampling = capabilities.get("sampling").is_some_and(Value::is_object);
            st.roots = capabilities.get("roots").is_some_and(Value::is_object);
            if let Some(snapshot) = baseline {
                st.tools_seen = Some((snapshot, None));
            }
        }
        let mut result = Map::new();
        result.insert("protocolVersion".into(), Value::String(protocol.into()));
        result.insert(
            "capabilities".into(),
            json!({"tools": {"listChanged": true}, "logging": {}}),
        );
        result.insert("serverInfo".into(), self.server_info.clone());
        if let Some(i) = &self.instructions {
            result.insert("instructions".into(), Value::String(i.clone()));
        }
        Ok(Value::Object(result))
    }

    fn on_notification(self: &Arc<Self>, method: &str, params: Option<Value>) {
        match method {
            "notifications/initialized" => {
                let send = {
                    let mut st = self.state.lock();
                    if !st.initialized || st.ready {
                        return;
                    }
                    st.ready = true;
                    std::mem::take(&mut st.list_changed_pending)
                };
                if send {
                    self.send(
                        jsonrpc::notification("notifications/tools/list_changed", None),
                        Kind::ListChanged,
                    );
                }
            }
            "notifications/cancelled" => {
                let Some(request_id) = params.as_ref().and_then(|p| p.get("requestId")) else {
                    return;
                };
                let key = id_key(request_id);
                let (token, elicitation, asks) = {
                    let mut st = self.state.lock();
                    let Some(call) = st.calls.get_mut(&key) else { return };
                    if call.cancelled {
                        return;
                    }
                    call.cancelled = true;
                    let token = call.token.clone();
                    let elicitation = call.elicitation.take();
                    let ask_keys = std::mem::take(&mut call.asks);
                    let asks = take_asks(&mut st, &ask_keys);
                    if let Some(e) = &elicitation {
                        // No outcome will come: the runtime ends the pending
                        // confirmation itself when the token is cancelled.
                        st.elicitations.remove(&id_key(e));
                        st.calls.remove(&key);
                    }
                    (token, elicitation, asks)
                };
                self.answered.notify_all();
                // Cancelling the call cancels its handler's questions.
                self.withdraw(asks, "The tool call was cancelled.");
                if let Some(e) = elicitation {
                    let params = json!({"requestId": e, "reason": "The tool call was cancelled."});
                    self.send(
                        jsonrpc::notification("notifications/cancelled", Some(params)),
                        Kind::Notification(Some(key.clone())),
                    );
                }
                // No response will come: the transport may end the request
                // now (the call stays in flight until its handler ends).
                self.send(String::new(), Kind::Abandoned(key.clone()));
                if let Some(t) = token {
                    // On-cancel callbacks and the outcome: on the control
                    // worker, never queued behind the handler to stop.
                    self.dispatch_control(move || t.cancel());
                }
            }
            // notifications/progress, notifications/roots/list_changed, and
            // anything unknown: notifications are never answered.
            _ => {}
        }
    }
}

/// The instant of epoch milliseconds `ms` on the system clock (now when it
/// has passed).
fn instant_of(ms: i64) -> Instant {
    Instant::now() + Duration::from_millis(ms.saturating_sub(wall_ms()).max(0) as u64)
}

/// Milliseconds since the Unix epoch on the system clock.
pub(crate) fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Whether a per-request runtime's catalog is the session's: the same
/// compiled catalog, or one compiled from a catalog with the same
/// application and the same capability ids in the same order (a host may
/// compile its catalog once per factory call; tool names come from the
/// session's catalog, so a catalog with other capabilities would list
/// tools no call can reach).
fn same_catalog(a: &Catalog, b: &Catalog) -> bool {
    Catalog::ptr_eq(a, b)
        || (a.application() == b.application()
            && a.capabilities().len() == b.capabilities().len()
            && a.capabilities().iter().zip(b.capabilities()).all(|(x, y)| x.id == y.id))
}

/// An error response with the error's `data` when it has one.
fn error_data_response(id: &Value, e: &RpcError) -> String {
    match &e.data {
        None => error_response(id, e.code, &e.message),
        Some(data) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message, "data": data}})
                .to_string()
        }
    }
}

fn internal(e: HostError) -> (i64, String) {
    (INTERNAL_ERROR, format!("Internal error: {e}"))
}
