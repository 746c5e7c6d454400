//! The session state machine. Locking rule: the state lock is never held
//! while calling the runtime or the output (both may call back into the
//! session), so every method collects what it has to send and sends it
//! after releasing the lock.

mod mrtr;

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

/// A handler's question to the client's user (**rcip**).
struct Ask {
    /// The call (request key) whose handler asked.
    call: String,
    /// Our request id (the JSON value), for `notifications/cancelled`.
    request: Value,
    answer: AskSink,
}

/// Who gets the answer to a handler's request.
enum AskSink {
    /// `elicitation/create`, answered as an [`ElicitAnswer`].
    Elicit(ElicitSink),
    /// Any request, answered as the client's [`ClientReply`].
    Reply(ReplySink),
}

impl AskSink {
    /// Delivers the client's answer (`None`: withdrawn, no answer).
    fn deliver(self, outcome: Option<&Result<Value, Value>>) {
        match self {
            AskSink::Elicit(sink) => sink(outcome.map_or(ElicitAnswer::Cancel, elicit_answer)),
            AskSink::Reply(sink) => sink(match outcome {
                Some(Ok(result)) => ClientReply::Result(result.clone()),
                Some(Err(error)) => ClientReply::Error(error.clone()),
                None => ClientReply::Cancelled,
            }),
        }
    }
}

/// The side channel of one `tools/call`: the handler's progress, log
/// messages and questions become messages related to that request (on the
/// Streamable HTTP transport, on the call's SSE stream).
struct CallChannel {
    inner: Weak<Inner>,
    key: String,
    /// The request's `_meta.progressToken`: without one, progress is not
    /// sent (MCP progress, "Progress Flow").
    progress_token: Option<Value>,
}

impl InvocationChannel for CallChannel {
    fn progress(&self, report: &ProgressReport) -> bool {
        let Some(inner) = self.inner.upgrade() else {
            return false;
        };
        let message = self.progress_token.as_ref().map(|token| {
            let mut params = Map::new();
            params.insert("progressToken".into(), token.clone());
            params.insert("progress".into(), number(report.progress));
            if let Some(t) = report.total {
                params.insert("total".into(), number(t));
            }
            if let Some(m) = &report.message {
                params.insert("message".into(), Value::String(m.clone()));
            }
            jsonrpc::notification("notifications/progress", Some(Value::Object(params)))
        });
        inner.queue_for_call(&self.key, None, message)
    }

    fn log(&self, level: LogLevel, logger: Option<&str>, data: &Value) -> bool {
        let Some(inner) = self.inner.upgrade() else {
            return false;
        };
        let mut params = Map::new();
        params.insert("level".into(), Value::String(level.as_str().into()));
        if let Some(l) = logger {
            params.insert("logger".into(), Value::String(l.into()));
        }
        params.insert("data".into(), data.clone());
        let message = jsonrpc::notification("notifications/message", Some(Value::Object(params)));
        inner.queue_for_call(&self.key, Some(level), Some(message))
    }

    fn flush(&self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.outbox.deliver();
        }
    }

    fn elicit(&self, message: &str, requested_schema: &Value, answer: ElicitSink) -> Result<(), ElicitRefusal> {
        let Some(inner) = self.inner.upgrade() else {
            return Err(ElicitRefusal::Answered);
        };
        super::elicit::check_requested_schema(requested_schema).map_err(ElicitRefusal::Invalid)?;
        let params = json!({"mode": "form", "message": message, "requestedSchema": requested_schema});
        inner.ask(&self.key, None, "elicitation/create", params, AskSink::Elicit(answer))
    }

    fn create_message(&self, params: &Value, reply: ReplySink) -> Result<(), ElicitRefusal> {
        let Some(inner) = self.inner.upgrade() else {
            return Err(ElicitRefusal::Answered);
        };
        super::elicit::check_sampling_params(params).map_err(ElicitRefusal::Invalid)?;
        inner.ask(
            &self.key,
            None,
            "sampling/createMessage",
            params.clone(),
            AskSink::Reply(reply),
        )
    }

    fn ask(&self, key: Option<&str>, method: &str, params: &Value, reply: ReplySink) -> Result<(), ElicitRefusal> {
        let Some(inner) = self.inner.upgrade() else {
            return Err(ElicitRefusal::Answered);
        };
        let params = match method {
            "elicitation/create" => {
                let (Some(Value::String(message)), Some(schema)) =
                    (params.get("message"), params.get("requestedSchema"))
                else {
                    return Err(ElicitRefusal::Invalid(
                        "elicitation/create params need \"message\" (a string) and \"requestedSchema\"".into(),
                    ));
                };
                super::elicit::check_requested_schema(schema).map_err(ElicitRefusal::Invalid)?;
                json!({"mode": "form", "message": message, "requestedSchema": schema})
            }
            "sampling/createMessage" => {
                super::elicit::check_sampling_params(params).map_err(ElicitRefusal::Invalid)?;
                params.clone()
            }
            "roots/list" => match params {
                Value::Object(_) => params.clone(),
                Value::Null => json!({}),
                _ => return Err(ElicitRefusal::Invalid("roots/list params must be an object".into())),
            },
            _ => {
                return Err(ElicitRefusal::Invalid(format!(
                    "an MCP client is asked elicitation/create, sampling/createMessage or roots/list, not {method:?}"
                )))
            }
        };
        inner.ask(&self.key, key, method, params, AskSink::Reply(reply))
    }

    fn can_ask(&self, method: &str) -> bool {
        self.inner
            .upgrade()
            .is_some_and(|inner| inner.can_ask(&self.key, method))
    }
}

/// A progress value as JSON: an integer when it is one (`50`, not `50.0`).
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

struct Elicitation {
    call: String,
    confirmation_id: String,
    output_wrapped: bool,
    /// Our request id (the JSON value), for `notifications/cancelled`.
    request: Value,
}

/// What a tools/call needs when its outcome arrives.
#[derive(Clone)]
struct CallContext {
    key: String,
    /// The capability the call invokes (empty for a resolution).
    tool: String,
    output_wrapped: bool,
    input: Arc<Value>,
    /// The user was already asked (a second confirmation is not asked).
    asked: bool,
    /// The host surface of the runtime the call runs on (the session's,
    /// or a modern request's own).
    host: Host,
    /// A modern request that declared form elicitation (its user may be
    /// asked statelessly).
    form_elicitation: bool,
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

    /// An output that writes each message as one line to the process's
    /// standard output and flushes it (the MCP stdio transport). Write
    /// errors (the client went away) are ignored.
    pub fn stdout_output() -> Arc<dyn McpOutput> {
        Arc::new(|message: &str| {
            let mut out = std::io::stdout().lock();
            let _ = out
                .write_all(message.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
        })
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

    /// Reads newline-delimited messages from `input` until it ends, passing
    /// each to [`receive`](Self::receive); blank lines are skipped, a line
    /// longer than the message limit is answered with `-32700`. Then closes
    /// the session (the client is gone). A second concurrent call returns
    /// an `AlreadyExists` error at once.
    pub fn serve<R: BufRead>(&self, input: R) -> std::io::Result<()> {
        self.claim_serving()?;
        self.serve_claimed(input)
    }

    /// Marks the session as serving; `AlreadyExists` if it already is.
    fn claim_serving(&self) -> std::io::Result<()> {
        if self.inner.serving.swap(true, Ordering::SeqCst) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the session is already serving",
            ));
        }
        Ok(())
    }

    /// The loop of [`serve`](Self::serve), after the claim.
    fn serve_claimed<R: BufRead>(&self, mut input: R) -> std::io::Result<()> {
        let max = self.inner.limits.max_bytes;
        let mut line = Vec::new();
        let result = loop {
            // Backpressure: a client that stops reading (or floods the
            // session) is not read from until requests are answered and
            // the outgoing queue has room.
            self.inner.wait_for_capacity();
            line.clear();
            match read_line(&mut input, &mut line, max) {
                Ok(Line::End) => break Ok(()),
                Ok(Line::TooLong) => {
                    let text = format!("Parse error: the message is longer than {max} bytes");
                    self.inner.outbox.send(
                        error_response(&Value::Null, jsonrpc::PARSE_ERROR, &text),
                        Kind::Response("null".into()),
                    );
                }
                Ok(Line::Text) => {
                    let text = line.strip_suffix(b"\r").unwrap_or(&line);
                    if !text.iter().all(u8::is_ascii_whitespace) {
                        self.inner.receive(text, &[]);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(e),
            }
        };
        // The client closed its input: what it already asked for still
        // gets answered, for a moment (a call waiting for the user or a
        // stuck handler does not hold the close up longer).
        self.inner.drain(END_OF_INPUT_GRACE);
        self.inner.close();
        self.inner.serving.store(false, Ordering::SeqCst);
        result
    }

    /// [`serve`](Self::serve) on the process's standard input. Pair it with
    /// [`stdout_output`](Self::stdout_output); the host must write nothing
    /// else to standard output.
    pub fn serve_stdio(&self) -> std::io::Result<()> {
        // Claimed before standard input is locked: a second call must fail
        // at once, not wait for the first one's lock of standard input.
        self.claim_serving()?;
        self.serve_claimed(std::io::stdin().lock())
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

enum Line {
    Text,
    TooLong,
    End,
}

/// Reads one line (up to `\n`, not included) into `line`, keeping at most
/// `max` bytes; the rest of a longer line is read and dropped.
fn read_line<R: BufRead>(input: &mut R, line: &mut Vec<u8>, max: usize) -> std::io::Result<Line> {
    let mut too_long = false;
    let mut any = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if any {
                Line::Text
            } else {
                Line::End
            });
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Text });
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

    /// Queues `message` (progress, a log message at `level`) as a
    /// notification related to the call `key`, while the call is waiting
    /// for its response: under the state lock, so it is queued before the
    /// response, which [`finish`](Self::finish) queues after taking the
    /// call out. False when the call was answered (or the session closed).
    /// A cancelled call takes nothing more (true: the handler is told by
    /// its token, not by a failing report); a level below the session's
    /// is filtered (true). Delivery is the caller's
    /// ([`Outbox::deliver`]).
    fn queue_for_call(&self, key: &str, level: Option<LogLevel>, message: Option<String>) -> bool {
        let st = self.state.lock();
        if st.closed {
            return false;
        }
        let Some(call) = st.calls.get(key) else { return false };
        // A modern request gets log messages only when its `_meta` asked
        // for them, at its own level ("Logging", "Per-request log level");
        // a legacy one at the session's (`logging/setLevel`).
        let filtered = level.is_some_and(|l| match &call.modern {
            Some(m) => m.log_level.is_none_or(|min| l < min),
            None => l < st.log_level.unwrap_or(LogLevel::Info),
        });
        if let Some(m) = message.filter(|_| !call.cancelled && !filtered) {
            self.outbox.queue(m, Kind::Notification(Some(key.to_string())));
        }
        true
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

    /// Sends a handler's request `method` (already checked) for the call
    /// `key` (**rcip**): only to a client that declared the capability it
    /// needs (form elicitation, sampling, roots), while the call waits for
    /// its response. On a modern call the question is collected for the
    /// call's `InputRequiredResult` instead, or answered from the retry
    /// ([`mrtr::Questions`]); `question` is the handler's key for it.
    fn ask(
        &self,
        key: &str,
        question: Option<&str>,
        method: &str,
        params: Value,
        answer: AskSink,
    ) -> Result<(), ElicitRefusal> {
        {
            let mut st = self.state.lock();
            if st.closed {
                return Err(ElicitRefusal::Answered);
            }
            let capability = mrtr::capability_of(method);
            if let Some(call) = st.calls.get_mut(key) {
                if call.cancelled {
                    return Err(ElicitRefusal::Answered);
                }
                if let Some(meta) = &call.modern {
                    // 2026-07-28 has no server-to-client requests: the
                    // question becomes an input request of the response.
                    // A request that did not declare the capability gets
                    // -32021 naming it ("MissingRequiredClientCapability").
                    if !mrtr::declares_for(&meta.capabilities, method) {
                        call.missing
                            .get_or_insert_with(Map::new)
                            .insert(capability.into(), json!({}));
                        return Err(ElicitRefusal::Unsupported(format!(
                            "this {} request did not declare {capability} in its client capabilities, so it cannot be asked {method}",
                            modern::MCP_MODERN_REVISION
                        )));
                    }
                    let reply = call.questions.ask(question, method, params)?;
                    drop(st);
                    self.deliver_apart(move || answer.deliver(reply.as_ref()));
                    return Ok(());
                }
            }
            let declared = match method {
                "sampling/createMessage" => st.sampling,
                "roots/list" => st.roots,
                _ => st.elicitation,
            };
            if !declared {
                return Err(ElicitRefusal::Unsupported(match method {
                    "elicitation/create" => {
                        "this MCP client did not declare form elicitation, so its user cannot be asked".into()
                    }
                    "sampling/createMessage" => {
                        "this MCP client did not declare sampling, so it cannot be asked to sample".into()
                    }
                    _ => format!("this MCP client did not declare {capability}, so it cannot be asked {method}"),
                }));
            }
            st.next_request += 1;
            let prefix = match method {
                "sampling/createMessage" => "rcip-sampling",
                "roots/list" => "rcip-roots",
                _ => "rcip-elicitation",
            };
            let id = Value::String(format!("{prefix}-{}", st.next_request));
            let request_key = id_key(&id);
            match st.calls.get_mut(key) {
                Some(call) if !call.cancelled => call.asks.push(request_key.clone()),
                _ => return Err(ElicitRefusal::Answered),
            }
            let request = jsonrpc::request(&id, method, params);
            st.asks.insert(
                request_key,
                Ask {
                    call: key.to_string(),
                    request: id,
                    answer,
                },
            );
            // Queued under the lock: before the call's response.
            self.outbox.queue(request, Kind::Request(Some(key.to_string())));
        }
        self.outbox.deliver();
        Ok(())
    }

    /// Whether the call `key` may ask `method` ([`InvocationChannel::can_ask`]):
    /// the modern request, or else the session's client, declared the
    /// capability, and the call is still open.
    fn can_ask(&self, key: &str, method: &str) -> bool {
        let st = self.state.lock();
        match st.calls.get(key) {
            None => false,
            Some(call) if call.cancelled || st.closed => false,
            Some(Call { modern: Some(meta), .. }) => mrtr::declares_for(&meta.capabilities, method),
            Some(_) => match method {
                "elicitation/create" => st.elicitation,
                "sampling/createMessage" => st.sampling,
                "roots/list" => st.roots,
                _ => false,
            },
        }
    }

    /// Withdraws handlers' questions: `notifications/cancelled` to the
    /// client for each, and `cancel` to each handler (on a worker).
    fn withdraw(&self, asks: Vec<Ask>, reason: &str) {
        if asks.is_empty() {
            return;
        }
        let mut answers = Vec::with_capacity(asks.len());
        for a in asks {
            let params = json!({"requestId": a.request, "reason": reason});
            self.send(
                jsonrpc::notification("notifications/cancelled", Some(params)),
                Kind::Notification(Some(a.call.clone())),
            );
            answers.push(a.answer);
        }
        self.dispatch_control(move || {
            for answer in answers {
                answer.deliver(None);
            }
        });
    }

    /// Runs `job` on the control pool, never on the calling thread and
    /// never under a lock: a handler's answer that is known at once (a
    /// modern call's question) reaches it as a client's answer would. A
    /// session without workers runs it on a thread of its own
    /// (`rcip-mcp-answer`), so the handler is not re-entered inside its ask.
    fn deliver_apart(&self, job: impl FnOnce() + Send + 'static) {
        if self.control.is_some() || self.pool.is_some() {
            return self.dispatch_control(job);
        }
        let slot = Arc::new(Mutex::new(Some(job)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("rcip-mcp-answer".into())
            .spawn(move || {
                if let Some(job) = theirs.lock().take() {
                    job()
                }
            });
        if spawned.is_err() {
            // No thread to be had: answered here rather than never.
            if let Some(job) = slot.lock().take() {
                job()
            }
        }
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

    /// The tool name of a capability.
    fn tool_name<'a>(&'a self, capability_id: &'a str) -> &'a str {
        match &self.names {
            Some((to_tool, _)) => to_tool.get(capability_id).map_or(capability_id, String::as_str),
            None => capability_id,
        }
    }

    /// The capability a tool name calls.
    fn capability_of<'a>(&'a self, tool: &'a str) -> Option<&'a str> {
        match &self.names {
            Some((_, to_capability)) => to_capability.get(tool).map(String::as_str),
            None => Some(tool),
        }
    }

    /// The tools of `snapshot` that pass the session's filter.
    fn tools_of(&self, snapshot: &Snapshot, with_revision: bool) -> Vec<Value> {
        let list = snapshot.list_json(&self.options.filter);
        let entries = rcip::json::parse_str(&list, &Limits::UNLIMITED).unwrap_or(Value::Array(Vec::new()));
        let revision = with_revision.then(|| snapshot.revision());
        match entries {
            Value::Array(items) => items
                .iter()
                .map(|e| {
                    let mut tool = tools::tool_from_entry(e, revision);
                    if self.names.is_some() {
                        let id = e.get("id").and_then(Value::as_str).unwrap_or_default();
                        let name = self.tool_name(id);
                        if name != id {
                            tool["name"] = Value::String(name.to_string());
                            tool["_meta"]["rcip/capabilityId"] = Value::String(id.to_string());
                        }
                    }
                    tool
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// What tools/list returns at `snapshot`, without the revision, as
    /// text.
    fn tools_text(&self, snapshot: &Snapshot) -> String {
        Value::Array(self.tools_of(snapshot, false)).to_string()
    }

    fn tools_list(&self, client: &Client, params: Option<Value>) -> Reply {
        let mut p = params_object(params)?;
        let modern = p.remove("_meta").is_some_and(|m| {
            m.get(modern::META_PROTOCOL_VERSION).and_then(Value::as_str) == Some(modern::MCP_MODERN_REVISION)
        });
        // The last snapshot of a closed runtime stays readable, but offering
        // its tools (some still marked bound) would invite calls that fail.
        if client.is_closed() {
            return Err(internal(HostError::Closed));
        }
        let snapshot = client.snapshot().map_err(internal)?;
        let mut tools = self.tools_of(&snapshot, true);
        if !modern && self.state.lock().protocol == "2025-03-26" {
            // 2025-03-26 has no structured tool output ("Tools": no
            // outputSchema, no structuredContent).
            for t in &mut tools {
                if let Value::Object(m) = t {
                    m.remove("outputSchema");
                }
            }
        }
        let start = match p.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => match (
                self.options.page_size,
                c.strip_prefix("rcip-").and_then(|n| n.parse::<usize>().ok()),
            ) {
                (Some(_), Some(n)) if n <= tools.len() => n,
                _ => return Err((INVALID_PARAMS, format!("Invalid params: unknown cursor {c:?}"))),
            },
            Some(_) => return Err((INVALID_PARAMS, "Invalid params: \"cursor\" must be a string".into())),
        };
        let mut result = Map::new();
        match self.options.page_size {
            Some(size) => {
                let end = (start + size).min(tools.len());
                result.insert("tools".into(), Value::Array(tools[start..end].to_vec()));
                if end < tools.len() {
                    result.insert("nextCursor".into(), Value::String(format!("rcip-{end}")));
                }
            }
            None => {
                result.insert("tools".into(), Value::Array(tools));
            }
        }
        if modern {
            // 2026-07-28 "Caching": every `tools/list` page carries
            // `ttlMs` and the same `cacheScope` (options `ttlMs` and
            // `cacheScope`; private by default, because a host's
            // per-request runtime may offer different tools to different
            // callers). Tools come in catalog order on every page
            // ("Tools": deterministic order).
            result.insert("ttlMs".into(), json!(self.options.ttl_ms.unwrap_or(MODERN_TTL_MS)));
            result.insert("cacheScope".into(), json!(self.options.cache_scope.as_str()));
        }
        Ok(Value::Object(result))
    }

    fn tools_call(self: &Arc<Self>, key: String, mut p: Map<String, Value>, client: Client, host: Host) {
        let modern = self.state.lock().calls.get(&key).and_then(|c| c.modern.clone());
        // MRTR (2026-07-28): a retry carries the state of our question.
        let retry = match &modern {
            Some(_) => match mrtr::Retry::take(&mut p) {
                Ok(r) => r,
                Err(e) => return self.finish(&key, Err(e)),
            },
            None => None,
        };
        let form_elicitation = modern.as_ref().is_some_and(|m| mrtr::declares_form(&m.capabilities));
        let name = match p.remove("name") {
            Some(Value::String(n)) => n,
            _ => {
                return self.finish(
                    &key,
                    Err((
                        INVALID_PARAMS,
                        "Invalid params: tools/call needs \"name\" (a string)".into(),
                    )),
                )
            }
        };
        let arguments = match p.remove("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v,
            Some(_) => {
                return self.finish(
                    &key,
                    Err((INVALID_PARAMS, "Invalid params: \"arguments\" must be an object".into())),
                )
            }
        };
        // MCP progress: a string or integer token asks for notifications.
        let progress_token = p
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        let Some(capability) = self.capability_of(&name).and_then(|id| self.catalog.capability(id)) else {
            return self.finish(&key, Err((INVALID_PARAMS, format!("Unknown tool: {name}"))));
        };
        let name = capability.id.to_string();
        let output_wrapped = !tools::is_object_schema(&capability.output_schema);
        let input = match tools::unwrap_arguments(arguments, &capability.input_schema) {
            Unwrapped::Input(v) => v,
            Unwrapped::Invalid { keyword, message } => {
                let outcome = tools::unwrap_failure(&name, keyword, &message);
                let result = tools::call_result(&outcome, output_wrapped, &self.application, None);
                return self.finish(&key, Ok(result));
            }
        };
        let text = input.to_string();
        let token = CancelToken::new();
        let cancelled = {
            let mut st = self.state.lock();
            match st.calls.get_mut(&key) {
                Some(call) => {
                    call.token = Some(token.clone());
                    call.cancelled
                }
                None => return, // closed meanwhile
            }
        };
        if cancelled {
            // notifications/cancelled overtook the call on another thread.
            token.cancel();
        }
        let context = CallContext {
            key: key.clone(),
            tool: name.clone(),
            output_wrapped,
            input: Arc::new(input),
            asked: false,
            host,
            form_elicitation,
        };
        if let Some(mrtr::Retry { state, responses }) = retry {
            let sealed = match state.map(|t| self.open_retry(&key, &name, &context.input, &t)) {
                None => Map::new(),
                Some(Err(e)) => return self.finish_rpc(&key, Err(e)),
                Some(Ok(OpenedState::Answers(a))) => a.answers,
                Some(Ok(OpenedState::Confirmation(c))) => {
                    let again = CallContext {
                        asked: true,
                        ..context.clone()
                    };
                    match self.resume_statelessly(again, c, responses.as_ref(), &text, &token, form_elicitation) {
                        Ok(true) => return,
                        // No answer to the question: the call runs again (and asks again).
                        Ok(false) => Map::new(),
                        Err(e) => return self.finish_rpc(&key, Err(e)),
                    }
                }
            };
            // The handler's questions find these answers (mrtr::Questions).
            if let Some(call) = self.state.lock().calls.get_mut(&key) {
                call.questions.seed(sealed, responses);
            }
        }
        let sink = self.outcome_sink(context);
        let channel = Arc::new(CallChannel {
            inner: Arc::downgrade(self),
            key: key.clone(),
            progress_token,
        });
        if let Err(e) = client.invoke_with_channel(&name, text.as_bytes(), None, Some(&token), channel, sink) {
            self.finish(&key, Err(internal(e)));
        }
    }

    /// The sink that answers `context`'s call with the outcome it gets.
    fn outcome_sink(self: &Arc<Self>, context: CallContext) -> Box<dyn rcip::runtime::OutcomeSink> {
        let weak = Arc::downgrade(self);
        Box::new(move |outcome: &str| {
            if let Some(inner) = weak.upgrade() {
                inner.on_outcome(context, outcome);
            }
        })
    }

    fn on_outcome(self: &Arc<Self>, context: CallContext, outcome_text: &str) {
        // A modern call whose handler asked what the retry did not answer:
        // the outcome is set aside, the client is asked (MRTR).
        if let Some(reply) = self.input_required(&context) {
            return self.finish_rpc(&context.key, reply);
        }
        let outcome = rcip::json::parse_str(outcome_text, &Limits::UNLIMITED).unwrap_or(Value::Null);
        let status = outcome.get("status").and_then(Value::as_str).unwrap_or("");
        let mut note = None;
        if status == "confirmation_required" && !context.asked {
            let confirmation_id = outcome
                .pointer("/confirmation/id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if pending_confirmations(&context.host) > self.max_pending_confirmations {
                // rcip: beyond the cap, declined through the host at once.
                return self.resolve(&context, &confirmation_id, false);
            }
            let modern = self
                .state
                .lock()
                .calls
                .get(&context.key)
                .is_some_and(|c| c.modern.is_some());
            if self.elicit && modern {
                match self.ask_statelessly(&context, &outcome, &confirmation_id, context.form_elicitation) {
                    Ok(()) => return,
                    Err(why) => note = Some(why),
                }
            } else if self.elicit {
                match self.ask_user(&context, &outcome, &confirmation_id) {
                    Ok(()) => return,
                    Err(why) => note = Some(why),
                }
            }
        }
        let mut result = tools::call_result(&outcome, context.output_wrapped, &self.application, note);
        self.map_content(&outcome, &mut result);
        self.finish(&context.key, Ok(result));
    }

    /// A succeeded result of a capability with a `content` mapping: its
    /// content is the mapped blocks; invalid values become text notes,
    /// counted in the session and in `_meta["rcip/contentReplaced"]`.
    /// `structuredContent` and the outcome are unchanged.
    fn map_content(&self, outcome: &Value, result: &mut Value) {
        if self.content.is_empty() || outcome.get("status").and_then(Value::as_str) != Some("succeeded") {
            return;
        }
        let capability = outcome.get("capabilityId").and_then(Value::as_str).unwrap_or_default();
        let Some(sources) = self.content.get(capability) else {
            return;
        };
        let blocks = content::blocks(sources, &result["structuredContent"]);
        result["content"] = Value::Array(blocks.content);
        if blocks.replaced > 0 {
            self.content_replaced.fetch_add(blocks.replaced, Ordering::Relaxed);
            result["_meta"]["rcip/contentReplaced"] = Value::from(blocks.replaced);
        }
    }

    /// Resolves the confirmation of an elicitation (legacy calls only: on
    /// the session's runtime) with the user's answer.
    fn resolve_elicited(self: &Arc<Self>, e: &Elicitation, approved: bool) {
        let context = CallContext {
            key: e.call.clone(),
            tool: String::new(),
            output_wrapped: e.output_wrapped,
            input: Arc::new(Value::Null),
            asked: true,
            host: self.host.clone(),
            form_elicitation: false,
        };
        self.resolve(&context, &e.confirmation_id, approved);
    }

    /// Resolves `confirmation_id` on the call's runtime and answers the
    /// call with the outcome (the user is not asked again).
    fn resolve(self: &Arc<Self>, call: &CallContext, confirmation_id: &str, approved: bool) {
        let key = call.key.as_str();
        let host = call.host.clone();
        let context = CallContext {
            key: key.to_string(),
            tool: String::new(),
            output_wrapped: call.output_wrapped,
            input: Arc::new(Value::Null),
            asked: true,
            host: host.clone(),
            form_elicitation: false,
        };
        let weak = Arc::downgrade(self);
        let sink = move |outcome: &str| {
            if let Some(inner) = weak.upgrade() {
                inner.on_outcome(context, outcome);
            }
        };
        if let Err(e) = host.resolve_confirmation(confirmation_id, approved, Box::new(sink)) {
            self.finish(key, Err(internal(e)));
        }
    }

    /// Sends `elicitation/create` for the confirmation of `outcome`; the
    /// answer resolves it. `Err` (with a note for the result) when the
    /// client cannot be asked.
    fn ask_user(
        self: &Arc<Self>,
        context: &CallContext,
        outcome: &Value,
        confirmation_id: &str,
    ) -> Result<(), &'static str> {
        let (request, request_key) = {
            let mut st = self.state.lock();
            if st.closed {
                return Err("The session is closed.");
            }
            if !st.elicitation {
                return Err("This MCP client does not support form elicitation, so its user cannot be asked here.");
            }
            if !st.ready {
                return Err("The MCP client has not finished initialization, so its user cannot be asked yet.");
            }
            st.next_request += 1;
            let id = Value::String(format!("rcip-elicitation-{}", st.next_request));
            match st.calls.get_mut(&context.key) {
                Some(call) if !call.cancelled => call.elicitation = Some(id.clone()),
                _ => return Err("The call was cancelled."),
            }
            let request_key = id_key(&id);
            st.elicitations.insert(
                request_key.clone(),
                Elicitation {
                    call: context.key.clone(),
                    confirmation_id: confirmation_id.to_string(),
                    output_wrapped: context.output_wrapped,
                    request: id.clone(),
                },
            );
            let request = jsonrpc::request(
                &id,
                "elicitation/create",
                tools::elicitation_params(outcome, &context.input, &self.application),
            );
            (request, request_key)
        };
        self.send(request, Kind::Request(Some(context.key.clone())));
        // At expiry the question is withdrawn and the call answered with
        // the runtime's CONFIRMATION_EXPIRED.
        let expires_at = outcome
            .pointer("/confirmation/expiresAt")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        self.watch_expiry(request_key, instant_of(expires_at));
        Ok(())
    }

    /// At `at`, and then every [`EXPIRY_RECHECK`] while the elicitation
    /// `request_key` is still unanswered: once the runtime no longer has
    /// its confirmation pending (it expired, was cancelled or closed), the
    /// elicitation is cancelled and the call answered with the runtime's
    /// own outcome for it (a resolve of an ended confirmation returns its
    /// receipt: `failed CONFIRMATION_EXPIRED` after an expiry).
    ///
    /// The deadline is queued on the core's timer thread
    /// ([`rcip::runtime::schedule_at`]), which also delivers the runtimes'
    /// expiries: the job only hands the check to the session's pool. With
    /// `workers: 0` there is no pool, and the check (its output callback and
    /// resolve) runs on the timer thread, outside every lock.
    fn watch_expiry(self: &Arc<Self>, request_key: String, at: Instant) {
        let weak = Arc::downgrade(self);
        rcip::runtime::schedule_at(at, move || {
            let Some(inner) = weak.upgrade() else { return };
            let job_inner = inner.clone();
            inner.dispatch(move || job_inner.check_expiry(request_key));
        });
    }

    fn check_expiry(self: &Arc<Self>, request_key: String) {
        let confirmation_id = match self.state.lock().elicitations.get(&request_key) {
            Some(e) => e.confirmation_id.clone(),
            None => return, // answered, cancelled or closed
        };
        if self.host.confirmation_pending(&confirmation_id) && !self.host.is_closed() {
            return self.watch_expiry(request_key, Instant::now() + EXPIRY_RECHECK);
        }
        let elicitation = {
            let mut st = self.state.lock();
            let Some(e) = st.elicitations.remove(&request_key) else {
                return;
            };
            match st.calls.get_mut(&e.call) {
                Some(call) if !call.cancelled => call.elicitation = None,
                _ => return,
            }
            e
        };
        let params = json!({"requestId": elicitation.request, "reason": "The confirmation expired."});
        self.send(
            jsonrpc::notification("notifications/cancelled", Some(params)),
            Kind::Notification(Some(elicitation.call.clone())),
        );
        self.resolve_elicited(&elicitation, false);
    }

    fn on_response(self: &Arc<Self>, id: &Value, outcome: Result<Value, Value>) {
        let ask = {
            let mut st = self.state.lock();
            let ask = st.asks.remove(&id_key(id));
            if let Some(a) = &ask {
                let key = id_key(&a.request);
                if let Some(call) = st.calls.get_mut(&a.call) {
                    call.asks.retain(|k| *k != key);
                }
            }
            ask
        };
        if let Some(ask) = ask {
            // The handler's code: on a worker, never on the transport's
            // thread; on the control pool, so that handlers blocked waiting
            // for answers cannot keep their answers from running.
            let deliver = ask.answer;
            return self.dispatch_control(move || deliver.deliver(Some(&outcome)));
        }
        let (elicitation, approved) = {
            let mut st = self.state.lock();
            let Some(e) = st.elicitations.remove(&id_key(id)) else {
                return;
            };
            match st.calls.get_mut(&e.call) {
                Some(call) if !call.cancelled => call.elicitation = None,
                _ => return,
            }
            // Only an explicit accept approves; decline, cancel, an error
            // or anything malformed declines.
            let approved = matches!(&outcome, Ok(r) if r.get("action").and_then(Value::as_str) == Some("accept"));
            (e, approved)
        };
        // An approval re-runs the capability: on a worker.
        let inner = self.clone();
        self.dispatch(move || inner.resolve_elicited(&elicitation, approved));
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

    /// A snapshot revision: tells the client when what tools/list returns
    /// changed. Decided from what changed: a revision whose live state
    /// (context, bindings, availability) equals the last one compared costs
    /// no rendering, whatever the catalog's size; only a changed state
    /// renders the tool list to compare it (**rcip**).
    fn on_revision(&self) {
        let Ok(snapshot) = self.client.snapshot() else {
            return;
        };
        let seen = {
            let mut st = self.state.lock();
            if st.closed || !st.initialized {
                return;
            }
            match &mut st.tools_seen {
                Some((seen, _)) if seen.revision() >= snapshot.revision() => return,
                Some((seen, _)) if seen.same_live_state(&snapshot) => {
                    *seen = snapshot;
                    return;
                }
                Some((seen, text)) => (seen.clone(), text.clone()),
                None => {
                    st.tools_seen = Some((snapshot, None));
                    return;
                }
            }
        };
        let (seen, seen_text) = seen;
        let old = seen_text.unwrap_or_else(|| self.tools_text(&seen));
        let new = self.tools_text(&snapshot);
        let changed = old != new;
        let send = {
            let mut st = self.state.lock();
            if st.closed {
                return;
            }
            // Another thread may have compared a newer revision meanwhile.
            if st
                .tools_seen
                .as_ref()
                .is_some_and(|(s, _)| s.revision() >= snapshot.revision())
            {
                return;
            }
            st.tools_seen = Some((snapshot, Some(new)));
            if !changed {
                return;
            }
            if st.ready {
                true
            } else {
                st.list_changed_pending = true;
                false
            }
        };
        if send {
            self.send(
                jsonrpc::notification("notifications/tools/list_changed", None),
                Kind::ListChanged,
            );
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

/// Checks `naming` against `catalog` as a session would (for a server,
/// before any session exists).
#[cfg(feature = "http")]
pub(crate) fn check_tool_names(catalog: &Catalog, naming: &ToolNames) -> Result<(), String> {
    tool_names(catalog, naming).map(|_| ())
}

/// The two maps of a naming other than the capability ids: capability id
/// to tool name (only the ids it renames), and tool name to capability id.
type ToolNameMaps = (HashMap<String, String>, HashMap<String, String>);

/// The tool names other than the capability ids for `naming`, checked:
/// no two capabilities share a name, no name is longer than
/// [`MAX_TOOL_NAME_CHARS`] (in the `safe` and map namings) or empty, and a
/// map names only capabilities of the catalog.
fn tool_names(catalog: &Catalog, naming: &ToolNames) -> Result<Option<ToolNameMaps>, String> {
    if *naming == ToolNames::Ids {
        return Ok(None);
    }
    if let ToolNames::Map(map) = naming {
        if let Some((id, _)) = map.iter().find(|(id, _)| catalog.capability(id).is_none()) {
            return Err(format!(
                "toolNames maps \"{id}\", which is not a capability of the catalog"
            ));
        }
    }
    let mut to_tool = HashMap::new();
    let mut to_capability: HashMap<String, String> = HashMap::new();
    for c in catalog.capabilities() {
        let name = tool_name_for(naming, &c.id).into_owned();
        if name.is_empty() || name.chars().count() > MAX_TOOL_NAME_CHARS {
            return Err(format!(
                "the tool name of capability \"{}\" (\"{name}\") must have 1 to {MAX_TOOL_NAME_CHARS} characters",
                c.id
            ));
        }
        if let Some(other) = to_capability.get(&name) {
            return Err(format!(
                "capabilities \"{other}\" and \"{}\" would both be the tool \"{name}\"",
                c.id
            ));
        }
        to_capability.insert(name.clone(), c.id.clone());
        if name != c.id {
            to_tool.insert(c.id.clone(), name);
        }
    }
    // A name that equals another capability's id is that capability's
    // name only: the reverse map decides, and ids renamed away are no
    // tool names.
    Ok(Some((to_tool, to_capability)))
}

/// Takes the handler questions `keys` out of the session's open ones.
fn take_asks(st: &mut State, keys: &[String]) -> Vec<Ask> {
    keys.iter().filter_map(|k| st.asks.remove(k)).collect()
}

/// The handler's answer from the client's response to `elicitation/create`:
/// accept (with its `content` object, `{}` when there is none), decline, and
/// anything else (cancel, an error, a malformed result) as cancel.
fn elicit_answer(outcome: &Result<Value, Value>) -> ElicitAnswer {
    let Ok(result) = outcome else {
        return ElicitAnswer::Cancel;
    };
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitAnswer::Accept(match result.get("content") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        }),
        Some("decline") => ElicitAnswer::Decline,
        _ => ElicitAnswer::Cancel,
    }
}

/// The pending confirmations of `host`'s runtime (0 if it cannot say).
fn pending_confirmations(host: &Host) -> usize {
    host.stats_json()
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| v.get("pendingConfirmations").and_then(Value::as_u64))
        .map_or(0, |n| n as usize)
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
