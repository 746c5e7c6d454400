//! Handles the host holds: completion handles for handlers ([`Invocation`])
//! and policies ([`PolicyRequest`]), [`Binding`] and [`Subscription`].

use super::cancel::CancelToken;
use super::invoke::{HandlerResult, InvocationCore};
use super::policy::PolicyCore;
use super::shared::{in_restricted_callback, Shared};
use super::types::{Decision, DecisionParseError, Outcome, PolicyAnswer, SemanticContext};
use super::HostError;
use once_cell::sync::OnceCell;
use serde_json::Value;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// The completion handle a handler receives (one per handler call).
///
/// Settle it exactly once with [`complete`](Self::complete) /
/// [`complete_text`](Self::complete_text) or [`fail`](Self::fail), inline or
/// later from any thread; a second settle answers
/// [`HostError::AlreadyCompleted`]. Dropping it unsettled settles it as a
/// failure (`EXECUTION_FAILED`, or `EXECUTION_ABORTED` when the token was
/// cancelled). Settling after the runtime stopped waiting (it closed) is
/// accepted and ignored.
pub struct Invocation {
    core: Arc<InvocationCore>,
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation").field("id", &self.core.id).finish()
    }
}

impl Invocation {
    /// The handle of the one handler call `core` gets (its `settled` flag is
    /// this handle's).
    pub(crate) fn new(core: Arc<InvocationCore>) -> Invocation {
        Invocation { core }
    }

    /// The handle as a pointer that owns it, for a C handle: give it back
    /// with [`Invocation::from_raw`]. No allocation: the pointer is the
    /// shared invocation state's own.
    #[inline]
    pub fn into_raw(self) -> *const () {
        let raw = Arc::as_ptr(&self.core).cast::<()>();
        // The reference this handle held now belongs to the pointer.
        std::mem::forget(self);
        raw
    }

    /// Takes back a handle made by [`Invocation::into_raw`].
    ///
    /// # Safety
    /// `raw` came from `into_raw` and is given back once.
    #[inline]
    pub unsafe fn from_raw(raw: *const ()) -> Invocation {
        Invocation {
            core: Arc::from_raw(raw.cast::<InvocationCore>()),
        }
    }

    /// The invocation id as NUL-terminated text, made on first request
    /// and kept with the invocation state (so valid at least as long as
    /// this handle).
    #[inline]
    pub fn id_c_str(&self) -> &CStr {
        self.core.lent.id.get_or_init(|| nul_terminated(&self.core.id))
    }

    /// The capability id as NUL-terminated text (as [`Self::id_c_str`]).
    #[inline]
    pub fn capability_id_c_str(&self) -> &CStr {
        self.core
            .lent
            .capability_id
            .get_or_init(|| nul_terminated(&self.core.capability_id))
    }

    /// The handler's token kept with the invocation state at a fixed
    /// address (as [`Self::id_c_str`]), for a host that borrows it.
    #[inline]
    pub fn lent_cancel_token(&self) -> &CancelToken {
        self.core.lent.token.get_or_init(|| Box::new(self.core.handler_token()))
    }

    /// The invocation id.
    pub fn id(&self) -> &str {
        &self.core.id
    }

    /// The capability id.
    pub fn capability_id(&self) -> &str {
        &self.core.capability_id
    }

    /// The capability's index in catalog order (a handler is only called
    /// for a capability of the catalog), for a handler that serves several
    /// capabilities (the C builder bindings' shared record).
    #[inline]
    pub fn capability_index(&self) -> Option<usize> {
        self.core.capability
    }

    /// The input (the handler's own view; it cannot change the request).
    pub fn input(&self) -> &Value {
        &self.core.payload.as_ref().expect("parsed input").value
    }

    /// The input as compact JSON text.
    pub fn input_json(&self) -> &str {
        self.core.payload.as_ref().expect("parsed input").text()
    }

    /// The input as NUL-terminated JSON text, owned by the invocation.
    #[inline]
    pub fn input_c_str(&self) -> &CStr {
        self.core.payload.as_ref().expect("parsed input").nul_text().as_c_str()
    }

    /// The semantic context as NUL-terminated JSON text.
    #[inline]
    pub fn context_c_str(&self) -> &CStr {
        self.semantic_context().json_c_str()
    }

    /// The semantic context captured before the policy was asked.
    pub fn semantic_context(&self) -> &SemanticContext {
        self.core.context.get().expect("context captured")
    }

    /// A token cancelled when the consumer cancels the invocation or the
    /// runtime closes; poll it or register on it.
    pub fn cancel_token(&self) -> CancelToken {
        self.core.handler_token()
    }

    /// True once the consumer's token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.core.token.as_ref().is_some_and(|t| t.is_cancelled())
    }

    fn take(&self) -> Result<(), HostError> {
        if in_restricted_callback() {
            return Err(HostError::WrongContext);
        }
        if self.core.settled.swap(true, Ordering::SeqCst) {
            return Err(HostError::AlreadyCompleted);
        }
        Ok(())
    }

    /// Hands the result on: inside the handler callback on its thread it
    /// waits for the callback to return (the runtime is alive: the
    /// callback's caller holds it); elsewhere it goes on now if the runtime
    /// still exists (else it is ignored, as after a close).
    fn settle(&self, result: HandlerResult) {
        if let Some(result) = self.core.settle_inline(result) {
            if let Some(shared) = self.core.shared.upgrade() {
                shared.handler_settled(&self.core, result);
            }
        }
    }

    /// Completes with output text. Text that is not a JSON value (UTF-8,
    /// size and depth limits included) becomes `OUTPUT_INVALID`; this call
    /// still succeeds.
    pub fn complete_text(&self, output: &[u8]) -> Result<(), HostError> {
        self.take()?;
        // Canonical text goes into the succeeded record as it is; the record
        // is written now, while the text is borrowed (it is dropped unused
        // when step 18 finds the output invalid).
        let core = &self.core;
        let parsed = crate::json::parse_payload(output, &core.limits).map(|p| {
            let rendered = p
                .canonical
                .map(|text| Outcome::succeeded_json(&core.id, &core.capability_id, text));
            (p.value, rendered)
        });
        self.settle(HandlerResult::Output(parsed));
        Ok(())
    }

    /// Completes with an output value.
    pub fn complete(&self, mut output: Value) -> Result<(), HostError> {
        self.take()?;
        crate::json::normalize_numbers(&mut output);
        self.settle(HandlerResult::Output(Ok((output, None))));
        Ok(())
    }

    /// Fails; `aborted` marks an abort-style failure (`EXECUTION_ABORTED`).
    pub fn fail(&self, aborted: bool) -> Result<(), HostError> {
        self.take()?;
        self.settle(HandlerResult::Failed { aborted });
        Ok(())
    }

    /// True once settled.
    pub fn is_settled(&self) -> bool {
        self.core.settled.load(Ordering::SeqCst)
    }

    /// The runtime while this invocation may still report: not settled,
    /// runtime open.
    fn reporting(&self) -> Result<Arc<Shared>, HostError> {
        if in_restricted_callback() {
            return Err(HostError::WrongContext);
        }
        if self.core.settled.load(Ordering::SeqCst) {
            return Err(HostError::AlreadyCompleted);
        }
        match self.core.shared.upgrade() {
            Some(shared) if !shared.is_closed() => Ok(shared),
            _ => Err(HostError::Closed),
        }
    }

    /// Reports progress (**rcip**, docs/MCP.md "Progress"): to the
    /// consumer's channel when it gave one (an MCP session sends
    /// `notifications/progress` when the `tools/call` carried
    /// `_meta.progressToken`), then to the host's
    /// [`ProgressObserver`](super::ProgressObserver). An approved re-run has
    /// no channel: its progress reaches only the observer. Changes no
    /// outcome and emits no lifecycle event.
    ///
    /// `progress` must be finite and greater than this invocation's
    /// previous report; `total`, when given, finite; units are the
    /// handler's. A report that returns `Ok` was queued to the consumer
    /// before the invocation's outcome.
    ///
    /// Errors: [`HostError::InvalidArgument`] (not finite, not increasing;
    /// nothing is sent), [`HostError::AlreadyCompleted`] (the handle
    /// settled, or the consumer already answered), [`HostError::Closed`],
    /// [`HostError::WrongContext`].
    /// Thread safety: any thread, while the invocation is pending; reports
    /// from several threads are taken one at a time.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> Result<(), HostError> {
        let shared = self.reporting()?;
        if !progress.is_finite() {
            return Err(HostError::InvalidArgument(format!(
                "progress must be a finite number, not {progress}"
            )));
        }
        if let Some(t) = total.filter(|t| !t.is_finite()) {
            return Err(HostError::InvalidArgument(format!(
                "total must be a finite number, not {t}"
            )));
        }
        let report = super::ProgressReport {
            progress,
            total,
            message: message.map(str::to_string),
        };
        {
            let mut last = self.core.reports.lock();
            if self.core.settled.load(Ordering::SeqCst) {
                return Err(HostError::AlreadyCompleted);
            }
            if let Some(previous) = *last {
                if progress <= previous {
                    return Err(HostError::InvalidArgument(format!(
                        "progress must increase: {progress} is not greater than the previous report, {previous}"
                    )));
                }
            }
            if let Some(channel) = &self.core.channel {
                if !channel.progress(&report) {
                    return Err(HostError::AlreadyCompleted);
                }
            }
            *last = Some(progress);
        }
        if let Some(channel) = &self.core.channel {
            channel.flush();
        }
        if let Some(observer) = &shared.config.progress_observer {
            observer.on_progress(&report.observer_json(&self.core.id, &self.core.capability_id));
        }
        Ok(())
    }

    /// Sends a log message at `level` to the consumer's channel (**rcip**,
    /// docs/MCP.md "Logging"): an MCP session sends `notifications/message`
    /// to the client whose call this is, when `level` is at least the
    /// session's level (`info` until the client's `logging/setLevel`).
    /// Without a channel (an approved re-run, an in-process consumer) the
    /// message goes nowhere. `data` is any JSON value (a string, an object).
    ///
    /// Errors: [`HostError::AlreadyCompleted`] (settled, or the consumer
    /// already answered), [`HostError::Closed`], [`HostError::WrongContext`].
    /// Thread safety: any thread, while the invocation is pending.
    pub fn log(&self, level: super::LogLevel, logger: Option<&str>, data: &Value) -> Result<(), HostError> {
        self.reporting()?;
        {
            let _serial = self.core.reports.lock();
            if self.core.settled.load(Ordering::SeqCst) {
                return Err(HostError::AlreadyCompleted);
            }
            if let Some(channel) = &self.core.channel {
                if !channel.log(level, logger, data) {
                    return Err(HostError::AlreadyCompleted);
                }
            }
        }
        if let Some(channel) = &self.core.channel {
            channel.flush();
        }
        Ok(())
    }

    /// Asks the consumer's user for structured input (**rcip**, docs/MCP.md
    /// "Elicitation"): an MCP session sends `elicitation/create` (form mode)
    /// with `message` and `requested_schema` to the client whose call this
    /// is, and `answer` gets the user's answer once, on a session worker.
    /// Never blocks: wait for the answer from a deferred handler or another
    /// thread. Cancelling the invocation (or the consumer going away)
    /// answers [`ElicitAnswer::Cancel`](super::ElicitAnswer::Cancel) and
    /// withdraws the question.
    ///
    /// `requested_schema` must follow MCP's elicitation schema rules (a
    /// flat object of string, number, integer, boolean and enum
    /// properties), checked by the consumer before anything is sent; RCIP's
    /// strict mode does not apply.
    ///
    /// Errors (then `answer` is dropped uncalled):
    /// [`HostError::InvalidArgument`] (the schema breaks those rules),
    /// [`HostError::Unsupported`] (no channel, or a client without form
    /// elicitation), [`HostError::AlreadyCompleted`], [`HostError::Closed`],
    /// [`HostError::WrongContext`].
    /// Thread safety: any thread, while the invocation is pending; several
    /// questions may be open at once.
    pub fn elicit(&self, message: &str, requested_schema: &Value, answer: super::ElicitSink) -> Result<(), HostError> {
        self.reporting()?;
        let Some(channel) = &self.core.channel else {
            return Err(HostError::Unsupported(
                "this invocation has no consumer that can ask its user (an approved re-run, or a consumer without a channel)"
                    .into(),
            ));
        };
        channel.elicit(message, requested_schema, answer).map_err(refusal)
    }

    /// Asks the consumer's client to sample its language model (**rcip**,
    /// docs/MCP.md "Sampling"): an MCP session sends
    /// `sampling/createMessage` with `params` (MCP's
    /// `CreateMessageRequestParams`: `messages`, `maxTokens`, ...) to the
    /// client whose call this is, and `reply` gets its reply once, on a
    /// session worker. Never blocks; cancelling the invocation withdraws
    /// the request and replies [`ClientReply::Cancelled`](super::ClientReply::Cancelled).
    ///
    /// Errors (then `reply` is dropped uncalled):
    /// [`HostError::InvalidArgument`] (`params` without non-empty
    /// `messages` of `{"role": "user" | "assistant", "content"}` and a
    /// positive integer `maxTokens`), [`HostError::Unsupported`] (no
    /// channel, or a client that did not declare `sampling`),
    /// [`HostError::AlreadyCompleted`], [`HostError::Closed`],
    /// [`HostError::WrongContext`].
    /// Thread safety: any thread, while the invocation is pending.
    pub fn create_message(&self, params: &Value, reply: super::ReplySink) -> Result<(), HostError> {
        self.reporting()?;
        let Some(channel) = &self.core.channel else {
            return Err(HostError::Unsupported(
                "this invocation has no consumer that can ask its client to sample (an approved re-run, or a consumer without a channel)"
                    .into(),
            ));
        };
        channel.create_message(params, reply).map_err(refusal)
    }
}

impl Invocation {
    /// Sends the consumer's client the request `method` with `params` on
    /// the handler's behalf (**rcip**, docs/MCP.md "Progress, logging and
    /// elicitation"), the general form of [`elicit`](Self::elicit) and
    /// [`create_message`](Self::create_message): an MCP session takes
    /// `elicitation/create` (`params`: `{"message", "requestedSchema"}`,
    /// checked as for `elicit`; the reply's result is an `ElicitResult`),
    /// `sampling/createMessage` (checked as for `create_message`) and
    /// `roots/list` (`params`: an object, usually `{}`; the result is
    /// `{"roots": [{"uri", "name"?}]}`). `reply` gets the client's reply
    /// once, on a consumer thread, with no rcip lock held.
    ///
    /// `key` names the question (MCP 2026-07-28: the key of its input
    /// request and of its answer in the retry's `inputResponses`): 1 to 128
    /// characters, not starting with `rcip/` (rcip's own), unique within
    /// the invocation. `None` lets the consumer number the question
    /// (`rcip/ask/1`, `rcip/ask/2`, ... in the order asked), which is
    /// enough when the handler asks in the same order every time it runs.
    ///
    /// Errors (then `reply` is dropped uncalled):
    /// [`HostError::InvalidArgument`] (a bad key, a method the consumer
    /// does not send, params it refuses), [`HostError::Unsupported`] (no
    /// channel, or a client that did not declare the capability: check
    /// [`can_ask`](Self::can_ask) first when the question is optional),
    /// [`HostError::AlreadyCompleted`], [`HostError::Closed`],
    /// [`HostError::WrongContext`].
    /// Thread safety: any thread, while the invocation is pending.
    pub fn ask(
        &self,
        key: Option<&str>,
        method: &str,
        params: &Value,
        reply: super::ReplySink,
    ) -> Result<(), HostError> {
        self.reporting()?;
        if let Some(key) = key {
            check_question_key(key)?;
        }
        let Some(channel) = &self.core.channel else {
            return Err(HostError::Unsupported(format!(
                "this invocation has no consumer that can send its client {method} (an approved re-run, or a consumer without a channel)"
            )));
        };
        channel.ask(key, method, params, reply).map_err(refusal)
    }

    /// Whether [`ask`](Self::ask) with `method` would reach the client
    /// (**rcip**): the invocation has a channel whose client declared the
    /// capability `method` needs (`elicitation` in form mode, `sampling`,
    /// `roots`). False without a channel, after the invocation settled, or
    /// on another context. A handler with a fallback asks only when this
    /// is true (an MCP 2026-07-28 request that did not declare a
    /// capability a handler asks for is answered `-32021`).
    /// Thread safety: any thread.
    pub fn can_ask(&self, method: &str) -> bool {
        self.reporting().is_ok() && self.core.channel.as_ref().is_some_and(|c| c.can_ask(method))
    }
}

/// The longest question key [`Invocation::ask`] takes, in characters.
pub const MAX_QUESTION_KEY_CHARS: usize = 128;

/// [`Invocation::ask`]'s key rule: 1 to [`MAX_QUESTION_KEY_CHARS`]
/// characters, not starting with `rcip/`.
fn check_question_key(key: &str) -> Result<(), HostError> {
    let chars = key.chars().count();
    if chars == 0 || chars > MAX_QUESTION_KEY_CHARS {
        return Err(HostError::InvalidArgument(format!(
            "a question key has 1 to {MAX_QUESTION_KEY_CHARS} characters, this one {chars}"
        )));
    }
    if key.starts_with("rcip/") {
        return Err(HostError::InvalidArgument(format!(
            "question key {key:?}: keys starting with \"rcip/\" are rcip's own"
        )));
    }
    Ok(())
}

fn refusal(e: super::ElicitRefusal) -> HostError {
    match e {
        super::ElicitRefusal::Answered => HostError::AlreadyCompleted,
        super::ElicitRefusal::Unsupported(m) => HostError::Unsupported(m),
        super::ElicitRefusal::Invalid(m) => HostError::InvalidArgument(m),
    }
}

impl Drop for Invocation {
    fn drop(&mut self) {
        let settled = &self.core.settled;
        if !settled.load(Ordering::SeqCst) && !settled.swap(true, Ordering::SeqCst) {
            self.settle(HandlerResult::Failed { aborted: false });
        }
    }
}

/// The handle a host policy receives (one per policy call).
///
/// Decide exactly once, inline or later from any thread; a second settle
/// answers [`HostError::AlreadyCompleted`]. Dropping it undecided settles it
/// as a policy failure (`POLICY_EVALUATION_FAILED`). Deciding after the
/// runtime stopped waiting (cancelled, closed) is accepted and ignored.
pub struct PolicyRequest {
    core: Arc<PolicyCore>,
    settled: AtomicBool,
    /// The policy this request was handed to, kept (with its user data)
    /// until the request is dropped: a policy deciding on another thread
    /// after the runtime was freed still finds its data alive. Dropped
    /// after [`Drop::drop`] settled the request.
    _held_policy: Option<Arc<dyn super::callbacks::Policy>>,
}

impl std::fmt::Debug for PolicyRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyRequest")
            .field("capability", &self.core.capability_id())
            .finish()
    }
}

impl PolicyRequest {
    pub(crate) fn new(core: Arc<PolicyCore>) -> PolicyRequest {
        PolicyRequest {
            core,
            settled: AtomicBool::new(false),
            _held_policy: None,
        }
    }

    /// This request keeps `policy` (and its user data) alive until dropped.
    pub(crate) fn holding(mut self, policy: Arc<dyn super::callbacks::Policy>) -> PolicyRequest {
        self._held_policy = Some(policy);
        self
    }

    /// Who the runtime's consumer acts for, as JSON text, when the host
    /// (or the MCP server, from a validated access token) set it
    /// ([`Host::set_principal`](super::Host::set_principal), **rcip**):
    /// `{"issuer", "subject", "scopes", "claims", "expiresAt"}` from MCP;
    /// `None` when none is set. Read once, when first asked; borrowed from
    /// the request.
    pub fn principal_json(&self) -> Option<&str> {
        self.core.principal().map(super::types::NulString::as_str)
    }

    /// [`principal_json`](Self::principal_json) as NUL-terminated text.
    pub fn principal_c_str(&self) -> Option<&CStr> {
        self.core.principal().map(super::types::NulString::as_c_str)
    }

    /// The `RcipPolicyContext` as JSON text: `{"capability", "input",
    /// "semanticContext", "confirmed", "phase"}`.
    pub fn context_json(&self) -> &str {
        self.core.context_json()
    }

    /// The context as NUL-terminated JSON text.
    #[inline]
    pub fn context_c_str(&self) -> &CStr {
        self.core.nul_context_json().as_c_str()
    }

    /// The capability's declared effect.
    pub fn effect(&self) -> crate::catalog::Effect {
        self.core.effect()
    }

    /// True when this is an approved confirmation's re-run.
    pub fn is_confirmed(&self) -> bool {
        self.core.confirmed()
    }

    /// `"invoke"` (an invocation or a re-run) or `"preflight"`.
    pub fn phase(&self) -> &'static str {
        self.core.phase()
    }

    /// The semantic context captured before the policy was asked.
    pub fn semantic_context(&self) -> &SemanticContext {
        self.core.semantic_context()
    }

    /// The input as compact JSON text.
    pub fn input_json(&self) -> &str {
        self.core.nul_input_json().as_str()
    }

    /// As [`input_json`](Self::input_json), NUL-terminated (no copy).
    #[inline]
    pub fn input_c_str(&self) -> &CStr {
        self.core.nul_input_json().as_c_str()
    }

    /// The capability's live snapshot entry as JSON text.
    pub fn capability_json(&self) -> &str {
        self.core.nul_capability_json().as_str()
    }

    /// As [`capability_json`](Self::capability_json), NUL-terminated (no
    /// copy).
    #[inline]
    pub fn capability_c_str(&self) -> &CStr {
        self.core.nul_capability_json().as_c_str()
    }

    /// Settles the request with the default policy's decision (PIPELINE.md
    /// section 4: read → allow; confirmed → allow; destructive → confirm;
    /// write and external → deny), with no reason.
    pub fn decide_default(&self) -> Result<(), HostError> {
        self.decide(self.core.default_decision())
    }

    /// The invocation id (`None` for a preflight proposal).
    pub fn invocation_id(&self) -> Option<&str> {
        self.core.invocation_id.as_deref()
    }

    /// The capability id asked about.
    pub fn capability_id(&self) -> &str {
        self.core.capability_id()
    }

    fn take(&self) -> Result<(), HostError> {
        if in_restricted_callback() {
            return Err(HostError::WrongContext);
        }
        if self.settled.swap(true, Ordering::SeqCst) {
            return Err(HostError::AlreadyCompleted);
        }
        Ok(())
    }

    /// Decides.
    pub fn decide(&self, decision: Decision) -> Result<(), HostError> {
        self.take()?;
        self.core.settle(PolicyAnswer::Decision(decision));
        Ok(())
    }

    /// Decides from `{"decision": "allow"|"deny"|"confirm", "reason"?}`
    /// text. Text that is not JSON or has the wrong shape changes nothing
    /// (the handle stays undecided); a decision that is none of the three
    /// settles the request as a policy failure and answers
    /// [`HostError::InvalidArgument`].
    pub fn decide_json(&self, text: &[u8]) -> Result<(), HostError> {
        if in_restricted_callback() {
            return Err(HostError::WrongContext);
        }
        if self.settled.load(Ordering::SeqCst) {
            return Err(HostError::AlreadyCompleted);
        }
        // The compact texts of the three bare decisions (what most policies
        // answer) mean exactly what parsing them would give.
        match text {
            br#"{"decision":"allow"}"# => return self.decide(Decision::Allow),
            br#"{"decision":"deny"}"# => return self.decide(Decision::Deny { reason: None }),
            br#"{"decision":"confirm"}"# => return self.decide(Decision::Confirm { reason: None }),
            _ => {}
        }
        let value = crate::json::parse_bytes(text, &crate::json::Limits::default())
            .map_err(|e| HostError::InvalidJson(format!("decision: {e}")))?;
        match Decision::from_value(&value) {
            Ok(d) => self.decide(d),
            Err(DecisionParseError::WrongShape(m)) => Err(HostError::InvalidArgument(m)),
            Err(DecisionParseError::UnknownDecision(m)) => {
                self.take()?;
                self.core.settle(PolicyAnswer::Failed);
                Err(HostError::InvalidArgument(m))
            }
        }
    }

    /// Settles as a policy failure (`POLICY_EVALUATION_FAILED`).
    pub fn fail(&self) -> Result<(), HostError> {
        self.take()?;
        self.core.settle(PolicyAnswer::Failed);
        Ok(())
    }

    /// True once settled.
    pub fn is_settled(&self) -> bool {
        self.settled.load(Ordering::SeqCst)
    }
}

impl Drop for PolicyRequest {
    fn drop(&mut self) {
        if !self.settled.load(Ordering::SeqCst) && !self.settled.swap(true, Ordering::SeqCst) {
            self.core.settle(PolicyAnswer::Failed);
        }
    }
}

/// A binding returned by `Host::bind`. Dropping it unbinds (if it is still
/// the installed binding), like a React unmount; [`detach`](Self::detach)
/// keeps the binding installed without the handle.
pub struct Binding {
    pub(crate) shared: Weak<Shared>,
    pub(crate) id: u64,
    pub(crate) capability: usize,
    detached: bool,
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Binding").field("id", &self.id).finish()
    }
}

impl Binding {
    pub(crate) fn new(shared: &Arc<Shared>, id: u64, capability: usize) -> Binding {
        Binding {
            shared: Arc::downgrade(shared),
            id,
            capability,
            detached: false,
        }
    }

    fn shared(&self) -> Result<Arc<Shared>, HostError> {
        if in_restricted_callback() {
            return Err(HostError::WrongContext);
        }
        self.shared.upgrade().ok_or(HostError::Closed)
    }

    /// Removes this binding if it is still installed (then the snapshot
    /// refreshes). Returns whether it was installed; a stale binding changes
    /// nothing.
    pub fn unbind(&self) -> Result<bool, HostError> {
        self.shared()?.unbind(self.id, self.capability)
    }

    /// Sets the binding revision; a different value on an installed binding
    /// refreshes (the React `revision` primitive). Returns whether it
    /// refreshed.
    pub fn set_revision(&self, revision: u64) -> Result<bool, HostError> {
        self.shared()?.set_binding_revision(self.id, self.capability, revision)
    }

    /// True while this binding is the installed one.
    pub fn is_installed(&self) -> bool {
        self.shared.upgrade().is_some_and(|s| {
            s.state.lock().bindings.slots[self.capability]
                .as_ref()
                .is_some_and(|b| b.id == self.id)
        })
    }

    /// Drops the handle without unbinding.
    pub fn detach(mut self) {
        self.detached = true;
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        if !self.detached {
            if let Some(shared) = self.shared.upgrade() {
                let _ = shared.unbind(self.id, self.capability);
            }
        }
    }
}

/// A snapshot subscription. Dropping it unsubscribes; the subscriber is
/// released once any notification running on another thread returns.
pub struct Subscription {
    pub(crate) shared: Weak<Shared>,
    pub(crate) id: u64,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").field("id", &self.id).finish()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.unsubscribe(self.id);
        }
    }
}

/// What an invocation lends through its handle, made on first request and
/// kept with the invocation state (which a foreign handle is), so each stays
/// valid at least until that handle is given back. The handler path of a
/// Rust host never touches it.
#[derive(Default)]
pub(crate) struct Lent {
    id: OnceCell<CString>,
    capability_id: OnceCell<CString>,
    token: OnceCell<Box<CancelToken>>,
}

/// `s` as a C string; an id holding a NUL (which no identifier does) shows
/// it as `\0`.
fn nul_terminated(s: &str) -> CString {
    CString::new(s).unwrap_or_else(|_| CString::new(s.replace('\0', "\\0")).unwrap_or_default())
}
