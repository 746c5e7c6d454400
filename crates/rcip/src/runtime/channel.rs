//! The side channel of a running invocation (**rcip**, docs/MCP.md
//! "Progress, logging and elicitation"): what a handler reports on its
//! invocation while it runs, besides its one outcome. The seed prescribes
//! none of it, and none of it changes an RCIP outcome or a lifecycle event.
//!
//! - **Progress** ([`Invocation::report_progress`](super::Invocation::report_progress)):
//!   to the consumer that started the invocation, when it gave a channel
//!   ([`Client::invoke_with_channel`](super::Client::invoke_with_channel);
//!   an MCP session sends `notifications/progress`), and to the host's
//!   [`ProgressObserver`]. An approved re-run has no channel (no request to
//!   attach to), so its progress reaches only the observer.
//! - **Log messages** ([`Invocation::log`](super::Invocation::log)): to the
//!   consumer's channel only (an MCP session sends `notifications/message`,
//!   filtered by the client's `logging/setLevel`).
//! - **Elicitation** ([`Invocation::elicit`](super::Invocation::elicit)):
//!   the consumer asks its user (an MCP session sends `elicitation/create`)
//!   and the answer comes back once, on another thread.
//!
//! The runtime knows nothing of MCP: the channel is a trait a consumer
//! implements (the MCP session does).

use serde_json::{json, Map, Value};

/// The level of a log message, in increasing severity (the syslog levels of
/// RFC 5424, as MCP names them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`: detail for whoever debugs the handler.
    Debug,
    /// `info`: normal progress worth a line.
    Info,
    /// `notice`: normal but significant.
    Notice,
    /// `warning`: something unexpected the handler worked around.
    Warning,
    /// `error`: something failed.
    Error,
    /// `critical`: a component is unusable.
    Critical,
    /// `alert`: action needed now.
    Alert,
    /// `emergency`: the system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name: `"debug"`, `"info"`, `"notice"`, `"warning"`,
    /// `"error"`, `"critical"`, `"alert"`, `"emergency"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level named `name` (exactly one of [`as_str`](Self::as_str)'s
    /// names).
    pub fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

/// One progress report of a running invocation.
///
/// `progress` is finite and greater than the invocation's previous report;
/// `total`, when given, is finite. Units are the handler's (items, bytes,
/// percent); nothing relates `progress` to `total`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressReport {
    /// How far the work is, in the handler's units.
    pub progress: f64,
    /// The amount `progress` runs toward, when known.
    pub total: Option<f64>,
    /// A short human-readable status line.
    pub message: Option<String>,
}

impl ProgressReport {
    /// The report as the host observer sees it: `{"invocationId",
    /// "capabilityId", "progress", "total"?, "message"?}`.
    pub(crate) fn observer_json(&self, invocation_id: &str, capability_id: &str) -> String {
        let mut m = Map::new();
        m.insert("invocationId".into(), Value::String(invocation_id.into()));
        m.insert("capabilityId".into(), Value::String(capability_id.into()));
        m.insert("progress".into(), json!(self.progress));
        if let Some(t) = self.total {
            m.insert("total".into(), json!(t));
        }
        if let Some(msg) = &self.message {
            m.insert("message".into(), Value::String(msg.clone()));
        }
        Value::Object(m).to_string()
    }
}

/// The user's answer to an elicitation.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitAnswer {
    /// The user submitted the form: `content` is the object the client
    /// sent (not validated against the requested schema: check what you
    /// use).
    Accept(Map<String, Value>),
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the question, the client answered with an error
    /// or something that is not an answer, the invocation was cancelled,
    /// or the consumer went away. Also the answer of a question the
    /// consumer collects for a later round (an MCP 2026-07-28 request:
    /// the handler runs again with the answer; docs/MCP.md "Questions
    /// without sessions").
    Cancel,
}

impl ElicitAnswer {
    /// `{"action": "accept", "content": {...}}`, `{"action": "decline"}` or
    /// `{"action": "cancel"}` (MCP's `ElicitResult` shape).
    pub fn to_json(&self) -> String {
        match self {
            ElicitAnswer::Accept(content) => json!({"action": "accept", "content": content}).to_string(),
            ElicitAnswer::Decline => r#"{"action":"decline"}"#.to_string(),
            ElicitAnswer::Cancel => r#"{"action":"cancel"}"#.to_string(),
        }
    }
}

/// Receives the answer to one elicitation, exactly once, on a thread of the
/// consumer's (an MCP session's worker), with no rcip lock held.
pub type ElicitSink = Box<dyn FnOnce(ElicitAnswer) + Send>;

/// The client's reply to a request a handler made through its consumer
/// (`sampling/createMessage`).
#[derive(Clone, Debug, PartialEq)]
pub enum ClientReply {
    /// The client's result (for sampling, MCP's `CreateMessageResult`:
    /// `{"role", "content", "model", "stopReason"?}`), as it sent it.
    Result(Value),
    /// The client's JSON-RPC error object (`{"code", "message", "data"?}`),
    /// e.g. the user rejected the request.
    Error(Value),
    /// No reply will come: the invocation was cancelled, the handler
    /// settled first, the consumer went away, or the consumer collects
    /// the question for a later round (an MCP 2026-07-28 request: the
    /// handler runs again with the reply).
    Cancelled,
}

impl ClientReply {
    /// `{"result": ...}`, `{"error": ...}` or `{"cancelled": true}`.
    pub fn to_json(&self) -> String {
        match self {
            ClientReply::Result(v) => json!({"result": v}).to_string(),
            ClientReply::Error(e) => json!({"error": e}).to_string(),
            ClientReply::Cancelled => r#"{"cancelled":true}"#.to_string(),
        }
    }
}

/// Receives the client's reply to one request, exactly once, as
/// [`ElicitSink`] does.
pub type ReplySink = Box<dyn FnOnce(ClientReply) + Send>;

/// Why a channel refused an elicitation (or a sampling request).
#[derive(Debug)]
pub enum ElicitRefusal {
    /// The consumer already answered the request (it no longer takes
    /// anything for this invocation).
    Answered,
    /// The consumer cannot ask its user (an MCP client that did not declare
    /// form elicitation); the message says why.
    Unsupported(String),
    /// The question is not one the consumer can ask (a requested schema
    /// outside MCP's elicitation rules); the message says what is wrong.
    Invalid(String),
}

/// The consumer's side of an invocation's channel (see the module docs).
///
/// Thread safety: called from any thread, also concurrently for
/// elicitations. [`progress`](Self::progress) and [`log`](Self::log) are
/// called one at a time per invocation, in the order the handler's reports
/// were accepted, **with that invocation's report lock held**: they must
/// only queue (no host code, no blocking, no reporting on the same
/// invocation); [`flush`](Self::flush) follows each with no lock held and
/// may deliver. Returning false refuses the report because the consumer
/// already answered the request: the handler's call then fails with
/// [`HostError::AlreadyCompleted`](super::HostError::AlreadyCompleted), so a
/// report that was accepted is queued before the response.
pub trait InvocationChannel: Send + Sync {
    /// Queues a progress report (see the trait docs).
    fn progress(&self, report: &ProgressReport) -> bool;
    /// Queues a log message (see the trait docs); filtering by level is the
    /// consumer's (a filtered message returns true).
    fn log(&self, level: LogLevel, logger: Option<&str>, data: &Value) -> bool;
    /// Delivers what [`progress`](Self::progress) and [`log`](Self::log)
    /// queued. Called with no lock held.
    fn flush(&self) {}
    /// Asks the consumer's user; `answer` is called exactly once when
    /// `Ok` is returned, and dropped uncalled when `Err` is. Called with no
    /// lock held; must not wait for the answer.
    fn elicit(&self, message: &str, requested_schema: &Value, answer: ElicitSink) -> Result<(), ElicitRefusal>;

    /// Asks the consumer's client to sample its language model
    /// (`sampling/createMessage` with `params`), as
    /// [`elicit`](Self::elicit) asks its user. The default refuses
    /// (unsupported).
    fn create_message(&self, params: &Value, reply: ReplySink) -> Result<(), ElicitRefusal> {
        let _ = (params, reply);
        Err(ElicitRefusal::Unsupported(
            "this consumer cannot ask its client to sample".into(),
        ))
    }

    /// Sends the consumer's client the request `method` with `params` on
    /// the handler's behalf, under the question key `key` (the handler's
    /// name for it, or `None`: the consumer numbers it), as
    /// [`create_message`](Self::create_message) does; `reply` gets the
    /// client's result, error or [`ClientReply::Cancelled`] once. The
    /// methods are the consumer's (an MCP session: `elicitation/create`,
    /// `sampling/createMessage`, `roots/list`). The default refuses
    /// (unsupported).
    fn ask(&self, key: Option<&str>, method: &str, params: &Value, reply: ReplySink) -> Result<(), ElicitRefusal> {
        let _ = (key, params, reply);
        Err(ElicitRefusal::Unsupported(format!(
            "this consumer cannot send its client {method}"
        )))
    }

    /// Whether [`ask`](Self::ask) with `method` can reach the client now
    /// (an MCP client declared the capability the method needs). Called
    /// with no lock held; the default says no.
    fn can_ask(&self, method: &str) -> bool {
        let _ = method;
        false
    }
}

/// Receives every progress report the runtime's handlers make, also those of
/// approved re-runs and of invocations without a channel (**rcip**).
///
/// `report_json` is `{"invocationId", "capabilityId", "progress", "total"?,
/// "message"?}`. Called on the reporting thread after the report was
/// queued to the consumer's channel, with no rcip lock held; reports of one
/// invocation from several threads at once may arrive in any order.
/// Progress is never a lifecycle event.
pub trait ProgressObserver: Send + Sync {
    /// One report, as JSON text lent for the call.
    fn on_progress(&self, report_json: &str);
}

impl<F: Fn(&str) + Send + Sync> ProgressObserver for F {
    fn on_progress(&self, report_json: &str) {
        self(report_json)
    }
}
