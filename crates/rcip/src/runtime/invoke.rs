//! The invocation pipeline (PIPELINE.md section 4), driven by the calls
//! hosts and consumers make: the consumer's invoke runs it up to the policy
//! call; a deferred policy answer or handler result continues it on the
//! settling thread. Each invocation delivers exactly one outcome, after its
//! event (steps 2 and 4 emit none).

use super::callbacks::{AvailabilityCheck, Handler};
use super::callbacks::{OutcomeSink, Sink};
use super::cancel::{CancelToken, Registration};
use super::channel::InvocationChannel;
use super::handles::{Invocation, PolicyRequest};
use super::policy::{default_decision, PolicyCore, PolicyTarget};
use super::shared::{Shared, State};
use super::snapshot::Entry;
use super::types::{
    messages, ConfirmationRecord, Decision, ErrorCode, EventPhase, JsonText, NulString, Outcome, PolicyAnswer,
    RcipError, SemanticContext,
};
use super::HostError;
use crate::json::JsonError;
use once_cell::sync::OnceCell;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// The invocations part of the runtime's state (PIPELINE.md section 4).
///
/// Invariants: an id is a key of `ids` from step 2 until its outcome is
/// delivered, including while a confirmation it opened is pending (the
/// confirmation then holds it, and the entry holds no invocation); the
/// entry holds its running invocation until `finish` takes it, so closing
/// the runtime reaches every one. (One map for both: an invocation that
/// ends with nothing else to run releases its id and itself in one removal;
/// two maps cost about 130 instructions more per invocation.)
pub(crate) struct InvocationState {
    ids: HashMap<Arc<str>, Option<Arc<InvocationCore>>, ahash::RandomState>,
}

impl InvocationState {
    pub(crate) fn new() -> InvocationState {
        InvocationState {
            ids: HashMap::default(),
        }
    }

    pub(crate) fn is_reserved(&self, id: &str) -> bool {
        self.ids.contains_key(id)
    }

    /// Step 2: reserves `core`'s id, with `core` running under it.
    fn reserve(&mut self, core: Arc<InvocationCore>) {
        self.ids.insert(core.id.clone(), Some(core));
    }

    /// Releases a reserved id (and the invocation under it, if any).
    pub(crate) fn release(&mut self, id: &str) -> Option<Arc<InvocationCore>> {
        self.ids.remove(id).flatten()
    }

    /// Takes the invocation running under `id`, keeping the id reserved.
    fn take_running(&mut self, id: &str) -> Option<Arc<InvocationCore>> {
        self.ids.get_mut(id).and_then(Option::take)
    }

    /// Takes every running invocation (teardown), in start order; their
    /// ids stay reserved.
    pub(crate) fn take_all_running(&mut self) -> Vec<Arc<InvocationCore>> {
        let mut all: Vec<_> = self.ids.values_mut().filter_map(Option::take).collect();
        all.sort_by_key(|core| core.key);
        all
    }

    pub(crate) fn running_count(&self) -> usize {
        self.ids.values().filter(|c| c.is_some()).count()
    }

    pub(crate) fn reserved_count(&self) -> usize {
        self.ids.len()
    }
}

/// A parsed capability input, shared by the invocation, its policy request
/// and a pending confirmation; its JSON text is serialised once, on demand.
pub(crate) struct Payload {
    pub value: Value,
    text: OnceCell<NulString>,
    /// The length of the text it was parsed from: the serialised text is
    /// about as long.
    len_hint: usize,
}

impl Payload {
    pub(crate) fn new(value: Value, len_hint: usize) -> Arc<Payload> {
        Arc::new(Payload {
            value,
            text: OnceCell::new(),
            len_hint,
        })
    }

    /// A payload from parsed text: canonical text is kept as the payload's
    /// text instead of being serialised again later.
    pub(crate) fn from_parsed(parsed: crate::json::Parsed, len: usize) -> Arc<Payload> {
        let text = match parsed.canonical {
            Some(canonical) => OnceCell::with_value(NulString::copy_of(canonical)),
            None => OnceCell::new(),
        };
        Arc::new(Payload {
            value: parsed.value,
            text,
            len_hint: len,
        })
    }

    /// The input as compact JSON text (canonical: the last of duplicate keys
    /// only, numbers as the reference holds them).
    pub(crate) fn text(&self) -> &str {
        self.nul_text().as_str()
    }

    pub(crate) fn nul_text(&self) -> &NulString {
        self.text
            .get_or_init(|| NulString::from_value(&self.value, self.len_hint))
    }
}

/// What a handler settled with.
pub(crate) enum HandlerResult {
    /// The output value, and the succeeded record already written when
    /// the output text was canonical.
    Output(Result<(Value, Option<JsonText>), JsonError>),
    Failed {
        aborted: bool,
    },
}

pub(crate) enum Phase {
    /// The driver is between suspension points.
    Checking,
    /// The policy was asked and has not answered (or answered inside its
    /// callback, which has not returned yet). `in_callback`: the thread
    /// still inside the policy callback ([`thread_mark`]).
    Policy {
        in_callback: Option<usize>,
        answer: Option<PolicyAnswer>,
    },
    /// The handler was called and its result has not been taken up: it
    /// has not settled, or it settled inside its callback, which has not
    /// returned yet (the result then waits in the invocation's slot, see
    /// [`InvocationCore::calling`]), or the
    /// callback's thread took it and is finishing.
    Running,
    /// The outcome was delivered (or is being delivered).
    Done,
}

pub(crate) struct InvState {
    pub phase: Phase,
    sink: Option<Sink>,
    cancel_registration: Option<Registration>,
    handler_token: Option<CancelToken>,
}

/// One invocation between reservation and outcome.
pub(crate) struct InvocationCore {
    pub shared: Weak<Shared>,
    pub key: u64,
    pub id: Arc<str>,
    pub capability_id: Arc<str>,
    pub capability: Option<usize>,
    pub payload: Option<Arc<Payload>>,
    pub token: Option<CancelToken>,
    pub confirmed: bool,
    /// The consumer's side channel (**rcip**): none for an approved re-run.
    pub channel: Option<Arc<dyn InvocationChannel>>,
    /// Serializes the handler's reports and keeps the last progress value
    /// (reports must increase).
    pub reports: Mutex<Option<f64>>,
    /// The binding found at step 7 (set before the policy is asked).
    pub binding_id: std::sync::atomic::AtomicU64,
    pub context: OnceCell<Arc<SemanticContext>>,
    pub inner: Mutex<InvState>,
    /// Set once the handler's handle settled (completed, failed or dropped).
    pub settled: AtomicBool,
    /// The [`thread_mark`] of the thread inside this invocation's handler
    /// callback, 0 outside it. Only that thread stores its own mark and
    /// clears it (before the callback's frame ends), so a thread reads its
    /// own mark here exactly while it is inside the callback: a result it
    /// settles then waits in `inline` for the callback to return, with no
    /// lock (the phase lock twice per invocation before).
    calling: AtomicUsize,
    /// The result settled inside the handler callback (see `calling`).
    inline: InlineSlot,
    /// The handler step 17 called ([`HandlerSlot`]).
    handler: HandlerSlot,
    /// The runtime's payload limits (fixed at build), for parsing the
    /// handler's output without reaching the runtime.
    pub limits: crate::json::Limits,
    /// What a foreign handle of the handler lends out (the handle is this
    /// state).
    pub lent: super::handles::Lent,
}

impl InvocationCore {
    /// The token handed to the handler: cancelled when the consumer's token
    /// is, or when the runtime closes. Created on first request.
    pub(crate) fn handler_token(self: &Arc<Self>) -> CancelToken {
        let token = {
            let mut inner = self.inner.lock();
            if let Some(t) = &inner.handler_token {
                return t.clone();
            }
            let t = CancelToken::new();
            inner.handler_token = Some(t.clone());
            t
        };
        // A consumer cancellation after this point reaches the token through
        // `on_invocation_token_cancelled`, which reads the slot set above.
        let closed = self.shared.upgrade().map(|s| s.is_closed()).unwrap_or(true);
        if closed || self.token_cancelled() {
            token.cancel();
        }
        token
    }

    /// Inside this invocation's handler callback on its thread, keeps
    /// `result` for the callback's frame ([`InvocationCore::calling`]);
    /// elsewhere gives it back.
    pub(crate) fn settle_inline(self: &Arc<Self>, result: HandlerResult) -> Option<HandlerResult> {
        if self.calling.load(Ordering::Relaxed) != thread_mark() {
            return Some(result);
        }
        // Safety: this thread is inside the callback (see `calling`): the
        // slot is this thread's alone until the callback's frame has taken
        // it up.
        unsafe { *self.inline.0.get() = Some(result) };
        None
    }

    fn cancel_handler_token(&self) {
        let t = self.inner.lock().handler_token.clone();
        if let Some(t) = t {
            t.cancel();
        }
    }

    fn token_cancelled(&self) -> bool {
        self.token.as_ref().is_some_and(|t| t.is_cancelled())
    }
}

/// How an invocation ends.
pub(crate) struct Ending {
    pub outcome: Outcome,
    /// The outcome's JSON text, when it was rendered without the record.
    pub rendered: Option<JsonText>,
    /// The lifecycle event to emit first (none for steps 2 and 4, and none
    /// here for `confirmation_required`, whose event goes out before the
    /// confirmation is registered).
    pub event: Option<(EventPhase, Option<ErrorCode>)>,
    /// Keep the id reserved (a confirmation now holds it).
    pub keep_reservation: bool,
    /// Refresh between the event and the outcome (step 19).
    pub refresh: bool,
}

fn failed(core: &InvocationCore, error: RcipError) -> Ending {
    let code = error.code;
    Ending {
        outcome: Outcome::Failed {
            invocation_id: core.id.clone(),
            capability_id: core.capability_id.clone(),
            error,
        },
        rendered: None,
        event: Some((EventPhase::Failed, Some(code))),
        keep_reservation: false,
        refresh: false,
    }
}

fn denied(core: &InvocationCore, error: RcipError) -> Ending {
    let code = error.code;
    Ending {
        outcome: Outcome::Denied {
            invocation_id: core.id.clone(),
            capability_id: core.capability_id.clone(),
            error,
        },
        rendered: None,
        event: Some((EventPhase::Denied, Some(code))),
        keep_reservation: false,
        refresh: false,
    }
}

/// Step 7's reading: the binding (its id, availability check and handler)
/// and the context.
pub(crate) struct BindingRead {
    binding: Option<ReadBinding>,
    /// The context; taken by the invocation when it can be captured now
    /// (see [`Shared::run`]).
    context: Option<Arc<SemanticContext>>,
}

/// A binding as step 7 read it: its id, its availability check and (when
/// read early) its handler.
type ReadBinding = (u64, Option<Arc<dyn AvailabilityCheck>>, Option<Arc<dyn Handler>>);

/// What steps 6–10 found.
pub(crate) struct Prechecked {
    pub capability: usize,
    pub binding_id: u64,
    /// The availability sampled at step 8.
    pub entry: Entry,
    /// The context to capture at step 11; none when the invocation took
    /// it with step 7's early reading (no host code ran since).
    pub context: Option<Arc<SemanticContext>>,
    /// The binding's handler, when step 7 read it and no host code ran
    /// since (no availability check; see [`Shared::read_binding`]).
    pub handler: Option<Arc<dyn Handler>>,
}

/// Parsed arguments of an invoke.
pub(crate) struct Start {
    pub id: Arc<str>,
    pub capability_id: Arc<str>,
    pub capability: Option<usize>,
    pub input: Result<Arc<Payload>, JsonError>,
    pub token: Option<CancelToken>,
    pub confirmed: bool,
    pub channel: Option<Arc<dyn InvocationChannel>>,
}

impl Shared {
    /// Consumer invoke: steps 1–4, then the pipeline. Returns the
    /// invocation id. The outcome may be delivered before this returns.
    pub(crate) fn invoke(
        self: &Arc<Self>,
        capability_id: &str,
        input: &[u8],
        invocation_id: Option<&str>,
        token: Option<&CancelToken>,
        sink: Sink,
    ) -> Result<Arc<str>, HostError> {
        self.invoke_channel(capability_id, input, invocation_id, token, None, sink)
    }

    /// As [`Shared::invoke`], with the consumer's side channel.
    pub(crate) fn invoke_channel(
        self: &Arc<Self>,
        capability_id: &str,
        input: &[u8],
        invocation_id: Option<&str>,
        token: Option<&CancelToken>,
        channel: Option<Arc<dyn InvocationChannel>>,
        sink: Sink,
    ) -> Result<Arc<str>, HostError> {
        // 1. The supplied id (an empty string is an id), else a generated one.
        if let Err(e) = self.enter() {
            sink.refused();
            return Err(e);
        }
        let id: Arc<str> = match invocation_id {
            Some(id) => Arc::from(id),
            None => self.generate_id("invocation"),
        };
        // Parsing has no side effects, so it may precede the reservation
        // check; its failure is reported after it (step 4).
        let input =
            crate::json::parse_payload(input, &self.config.limits).map(|p| Payload::from_parsed(p, input.len()));
        let capability = self.catalog.capability_index(capability_id);
        let capability_id = match capability {
            Some(i) => self.capability_id(i),
            None => Arc::from(capability_id),
        };
        let start = Start {
            id: id.clone(),
            capability_id,
            capability,
            input,
            token: token.cloned(),
            confirmed: false,
            channel,
        };
        self.run(start, sink)?;
        Ok(id)
    }

    /// Steps 2–11 (and on, when the policy answers inline).
    pub(crate) fn run(self: &Arc<Self>, start: Start, sink: Sink) -> Result<(), HostError> {
        let capability = start.capability;
        let (payload, input_error) = match start.input {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e)),
        };
        // Without event observers, nothing outside the runtime runs between
        // the reservation and step 7 (step 5 emits to nobody), so step 7
        // reads the binding in the reservation's critical section.
        let read_early = payload.is_some() && self.config.observers.is_empty();
        // 2–3. Reservation.
        let (core, early) = {
            let mut st = self.state.lock();
            if st.closed {
                drop(st);
                sink.refused();
                return Err(HostError::Closed);
            }
            if st.invocations.is_reserved(&start.id) {
                drop(st);
                let outcome = Outcome::Failed {
                    invocation_id: start.id,
                    capability_id: start.capability_id,
                    error: RcipError::new(ErrorCode::InvocationAlreadyActive),
                };
                let _scope = super::shared::CallbackScope::enter(self);
                sink.deliver(&outcome.to_json_text());
                return Ok(());
            }
            let key = Shared::next_seq(&mut st);
            let mut early = read_early.then(|| Shared::read_binding(&st, capability, self.config.policy.is_none()));
            // Step 11 captures the context read here when no host code can
            // run before it (no availability check; see `precheck`): taken
            // now, it is set without the once-cell's initialisation later.
            let context = match early.as_mut() {
                Some(read) if read.binding.as_ref().is_some_and(|b| b.1.is_none()) => match read.context.take() {
                    Some(c) => OnceCell::with_value(c),
                    None => OnceCell::new(),
                },
                _ => OnceCell::new(),
            };
            let core = Arc::new(InvocationCore {
                shared: Arc::downgrade(self),
                key,
                id: start.id,
                capability_id: start.capability_id,
                capability,
                payload,
                token: start.token,
                confirmed: start.confirmed,
                channel: start.channel,
                reports: Mutex::new(None),
                binding_id: std::sync::atomic::AtomicU64::new(0),
                context,
                inner: Mutex::new(InvState {
                    phase: Phase::Checking,
                    sink: Some(sink),
                    cancel_registration: None,
                    handler_token: None,
                }),
                settled: AtomicBool::new(false),
                calling: AtomicUsize::new(0),
                inline: InlineSlot(std::cell::UnsafeCell::new(None)),
                handler: HandlerSlot(std::cell::UnsafeCell::new(None)),
                limits: self.config.limits,
                lent: Default::default(),
            });
            st.invocations.reserve(core.clone());
            (core, early)
        };
        // 4. Input text that is not a JSON value: no issues, no events.
        if let Some(e) = input_error {
            let outcome = Outcome::Failed {
                invocation_id: core.id.clone(),
                capability_id: core.capability_id.clone(),
                error: RcipError::with_message(
                    ErrorCode::InputInvalid,
                    format!("{} ({e}).", messages::INPUT_NOT_JSON.trim_end_matches('.')),
                ),
            };
            self.finish(
                &core,
                Ending {
                    outcome,
                    rendered: None,
                    event: None,
                    keep_reservation: false,
                    refresh: false,
                },
            );
            return Ok(());
        }
        // 5.
        self.emit(&core.id, &core.capability_id, EventPhase::Requested, None, None);
        self.checks_and_policy(&core, early);
        Ok(())
    }

    /// Step 7's reading of the binding of `capability` (none when step 6
    /// fails) and of the context, under the state lock; with the binding's
    /// handler when `with_handler` (no policy callback will run before the
    /// handler is called).
    fn read_binding(st: &State, capability: Option<usize>, with_handler: bool) -> BindingRead {
        BindingRead {
            binding: capability
                .and_then(|i| st.bindings.slots[i].as_ref())
                .map(|b| (b.id, b.availability.clone(), with_handler.then(|| b.handler.clone()))),
            context: Some(st.bindings.context.clone()),
        }
    }

    /// Steps 6–10, shared with preflight: the capability, its binding, live
    /// availability (the host's reason is the message), the input schema and
    /// the token. Returns the capability, the binding id, the sampled
    /// availability and the context to capture at step 11.
    ///
    /// `early` is step 7's reading when it was taken already (see
    /// [`Shared::read_binding`]). When the binding has no availability
    /// check, its handler from that reading is returned too: no host code
    /// ran since it was read.
    pub(crate) fn precheck(
        &self,
        capability: Option<usize>,
        payload: &Payload,
        token: Option<&CancelToken>,
        early: Option<BindingRead>,
    ) -> Result<Prechecked, RcipError> {
        // 6.
        let Some(capability) = capability else {
            return Err(RcipError::new(ErrorCode::CapabilityNotFound));
        };
        // 7.
        let (binding, context) = match early {
            Some(read) => (read.binding, read.context),
            None => {
                let st = self.state.lock();
                // Host code (an event observer) ran since the reservation and
                // may have closed the runtime, releasing its bindings: that is
                // the teardown outcome, not CAPABILITY_UNBOUND (PIPELINE.md
                // section 9), as in the rechecks.
                if st.closed {
                    return Err(RcipError::runtime_closed());
                }
                (
                    st.bindings.slots[capability]
                        .as_ref()
                        .map(|b| (b.id, b.availability.clone(), None)),
                    Some(st.bindings.context.clone()),
                )
            }
        };
        let Some((binding_id, check, handler)) = binding else {
            return Err(RcipError::new(ErrorCode::CapabilityUnbound));
        };
        let handler = if check.is_none() { handler } else { None };
        // 8.
        let entry = Shared::sample(check.as_ref());
        // Step 11 captures the context after the availability check: read it
        // again only if host code (the check) ran since it was read above.
        let context = match check {
            Some(check) => {
                drop(check);
                Some(self.context())
            }
            None => context,
        };
        if let Entry::Bound(a) = &entry {
            if !a.available {
                return Err(match &a.reason {
                    Some(reason) => RcipError::with_message(ErrorCode::CapabilityUnavailable, reason.clone()),
                    None => RcipError::new(ErrorCode::CapabilityUnavailable),
                });
            }
        }
        // 9.
        let found = self.catalog.capabilities()[capability].input.validate_limited(
            &payload.value,
            self.config.validation_budget,
            self.config.issue_limit,
        );
        if !found.issues.is_empty() {
            let mut error = RcipError::new(ErrorCode::InputInvalid);
            error.validation_issues = Some(found.issues);
            error.validation_issues_truncated = found.truncated;
            return Err(error);
        }
        // 10.
        if token.is_some_and(|t| t.is_cancelled()) {
            return Err(RcipError::new(ErrorCode::ExecutionAborted));
        }
        Ok(Prechecked {
            capability,
            binding_id,
            entry,
            context,
            handler,
        })
    }

    /// Steps 12, 14 and 16, shared with preflight: token, binding identity,
    /// context, live availability. A changed context is the one denial
    /// (`POLICY_DENIED`); the rest fail. With `want_handler`, returns the
    /// binding's handler to call.
    ///
    /// `read` is the handler of step 7's reading when nothing outside the
    /// runtime ran since and no event of the invocation was emitted (see
    /// [`Prechecked::handler`]): that reading is as live as a new one, for
    /// a concurrent change it misses could as well come after this step, so
    /// only the token and teardown are read again and `read` is returned.
    pub(crate) fn recheck(
        &self,
        token: Option<&CancelToken>,
        capability: usize,
        binding_id: u64,
        context: &Arc<SemanticContext>,
        want_handler: bool,
        read: Option<Arc<dyn Handler>>,
    ) -> Result<Option<Arc<dyn Handler>>, RcipError> {
        if token.is_some_and(|t| t.is_cancelled()) {
            return Err(RcipError::new(ErrorCode::ExecutionAborted));
        }
        if let Some(handler) = read {
            if self.is_closed() {
                return Err(RcipError::runtime_closed());
            }
            return Ok(Some(handler));
        }
        enum Found {
            Closed,
            Other,
            ContextChanged,
            Same(Option<Arc<dyn AvailabilityCheck>>, Option<Arc<dyn Handler>>),
        }
        let found = {
            let st = self.state.lock();
            match &st.bindings.slots[capability] {
                // A policy answer or handler result racing the free resumes
                // on a closing runtime, whose bindings are gone: that is the
                // teardown outcome, not CAPABILITY_UNBOUND (PIPELINE.md
                // section 9).
                _ if st.closed => Found::Closed,
                Some(b) if b.id == binding_id => {
                    if Arc::ptr_eq(&st.bindings.context, context) || *st.bindings.context == **context {
                        Found::Same(b.availability.clone(), want_handler.then(|| b.handler.clone()))
                    } else {
                        Found::ContextChanged
                    }
                }
                _ => Found::Other,
            }
        };
        let (check, handler) = match found {
            Found::Closed => return Err(RcipError::runtime_closed()),
            Found::Other => return Err(RcipError::new(ErrorCode::CapabilityUnbound)),
            Found::ContextChanged => {
                return Err(RcipError::with_message(
                    ErrorCode::PolicyDenied,
                    messages::CONTEXT_CHANGED,
                ))
            }
            Found::Same(check, handler) => (check, handler),
        };
        if !Shared::sample(check.as_ref()).is_available() {
            return Err(RcipError::with_message(
                ErrorCode::CapabilityUnavailable,
                messages::NO_LONGER_AVAILABLE,
            ));
        }
        Ok(handler)
    }

    // The error is the invocation's ending itself; boxing it would add an
    // allocation to every refused call for no gain.
    #[allow(clippy::result_large_err)]
    fn recheck_invocation(
        &self,
        core: &InvocationCore,
        capability: usize,
        binding_id: u64,
        context: &Arc<SemanticContext>,
        want_handler: bool,
        read: Option<Arc<dyn Handler>>,
    ) -> Result<Option<Arc<dyn Handler>>, Ending> {
        self.recheck(core.token.as_ref(), capability, binding_id, context, want_handler, read)
            .map_err(|e| {
                if e.code == ErrorCode::PolicyDenied {
                    denied(core, e)
                } else {
                    failed(core, e)
                }
            })
    }

    /// Steps 6–11.
    fn checks_and_policy(self: &Arc<Self>, core: &Arc<InvocationCore>, early: Option<BindingRead>) {
        let payload = core.payload.as_ref().expect("parsed input");
        let Prechecked {
            capability,
            binding_id,
            entry,
            context,
            handler,
        } = match self.precheck(core.capability, payload, core.token.as_ref(), early) {
            Ok(x) => x,
            Err(e) => return self.finish(core, failed(core, e)),
        };
        let def = &self.catalog.capabilities()[capability];
        // 11. Capture the context and the live capability snapshot.
        core.binding_id.store(binding_id, std::sync::atomic::Ordering::Relaxed);
        let policy = match &self.config.policy {
            None => {
                if let Some(context) = context {
                    let _ = core.context.set(context);
                }
                self.watch_token(core);
                let decision = default_decision(def.effect, core.confirmed);
                // No policy callback: still no host code since step 7.
                return self.after_policy(core, PolicyAnswer::Decision(decision), handler);
            }
            Some(p) => p.clone(),
        };
        debug_assert!(handler.is_none(), "step 7 reads the handler only without a policy");
        if let Some(context) = context {
            let _ = core.context.set(context);
        }
        let context = core.context.get().expect("context captured").clone();
        {
            let mut inner = core.inner.lock();
            if !matches!(inner.phase, Phase::Checking) {
                return;
            }
            inner.phase = Phase::Policy {
                in_callback: Some(thread_mark()),
                answer: None,
            };
        }
        // A token cancelled by now ends the invocation before the policy is
        // asked; later, cancelling releases the policy wait at once.
        self.watch_token(core);
        if matches!(core.inner.lock().phase, Phase::Done) {
            return;
        }
        let request = PolicyRequest::new(Arc::new(PolicyCore::new(
            PolicyTarget::Invocation(core.clone()),
            Some(core.id.clone()),
            self.catalog.clone(),
            capability,
            entry,
            payload.clone(),
            context,
            core.confirmed,
            "invoke",
        )))
        .holding(policy.clone());
        if self.is_closed() {
            // Teardown ends the invocation; no callback starts after close.
            return;
        }
        {
            let _scope = super::shared::CallbackScope::enter(self);
            policy.evaluate(request);
        }
        let answer = {
            let mut inner = core.inner.lock();
            match &mut inner.phase {
                Phase::Policy {
                    answer, in_callback, ..
                } => match answer.take() {
                    Some(a) => {
                        inner.phase = Phase::Checking;
                        Some(a)
                    }
                    None => {
                        *in_callback = None;
                        None
                    }
                },
                _ => None,
            }
        };
        if let Some(answer) = answer {
            self.after_policy(core, answer, None);
        }
    }

    /// Lets the consumer's token end a policy wait and reach the handler's
    /// token, until the invocation ends.
    fn watch_token(self: &Arc<Self>, core: &Arc<InvocationCore>) {
        let Some(token) = &core.token else { return };
        let weak = Arc::downgrade(core);
        let registration = token.on_cancel(move || {
            if let Some(core) = weak.upgrade() {
                if let Some(shared) = core.shared.upgrade() {
                    shared.on_invocation_token_cancelled(&core);
                }
            }
        });
        if let Some(r) = registration {
            let stale = {
                let mut inner = core.inner.lock();
                if matches!(inner.phase, Phase::Done) {
                    true
                } else {
                    inner.cancel_registration = Some(r);
                    false
                }
            };
            if stale {
                token.unregister(r);
            }
        }
    }

    /// A policy request for an invocation was settled. Inside the policy
    /// callback (on its thread) the answer waits for the callback to return;
    /// from any other thread, this thread goes on with the invocation at
    /// once (PIPELINE.md section 7), and the callback's thread finds nothing
    /// left to do when it returns.
    pub(crate) fn policy_settled(self: &Arc<Self>, core: &Arc<InvocationCore>, answer: PolicyAnswer) {
        let here = thread_mark();
        let go = {
            let mut inner = core.inner.lock();
            match &mut inner.phase {
                Phase::Policy {
                    answer: slot @ None,
                    in_callback: Some(t),
                } if *t == here => {
                    *slot = Some(answer);
                    return;
                }
                Phase::Policy { answer: None, .. } => {
                    inner.phase = Phase::Checking;
                    true
                }
                _ => false,
            }
        };
        if go {
            self.after_policy(core, answer, None);
        }
    }

    /// The consumer's token was cancelled.
    fn on_invocation_token_cancelled(self: &Arc<Self>, core: &Arc<InvocationCore>) {
        let waiting = matches!(core.inner.lock().phase, Phase::Policy { .. });
        if waiting {
            let ending = failed(core, RcipError::new(ErrorCode::ExecutionAborted));
            self.finish_if(core, |p| matches!(p, Phase::Policy { .. }), ending);
        } else {
            core.cancel_handler_token();
        }
    }

    /// Steps 12–17. `read` is the binding's handler when step 7 read it and
    /// no host code ran since (see [`Prechecked::handler`]).
    fn after_policy(
        self: &Arc<Self>,
        core: &Arc<InvocationCore>,
        answer: PolicyAnswer,
        read: Option<Arc<dyn Handler>>,
    ) {
        let capability = core.capability.expect("known capability");
        // Relaxed: the store happened before the policy was asked, which the
        // phase lock orders before this.
        let binding_id = core.binding_id.load(std::sync::atomic::Ordering::Relaxed);
        let context = core.context.get().expect("context captured");
        let decision = match answer {
            // 11. A failing policy or an answer that is not a decision.
            PolicyAnswer::Failed => {
                return self.finish(core, failed(core, RcipError::new(ErrorCode::PolicyEvaluationFailed)));
            }
            PolicyAnswer::Decision(d) => d,
        };
        // 12. (Steps 12 and 14 are the same check with no host code in
        // between, so one live reading serves both. Without event observers
        // no host code runs before step 16 either, and it serves that too.)
        let observed = !self.config.observers.is_empty();
        let read = read.filter(|_| !observed);
        let handler = match self.recheck_invocation(core, capability, binding_id, context, !observed, read) {
            Ok(h) => h,
            Err(e) => return self.finish(core, e),
        };
        // 13.
        if let Decision::Deny { reason } = &decision {
            let error = match reason {
                Some(r) => RcipError::with_message(ErrorCode::PolicyDenied, r.clone()),
                None => RcipError::new(ErrorCode::PolicyDenied),
            };
            return self.finish(core, denied(core, error));
        }
        // 15.
        if let Decision::Confirm { reason } = decision {
            if core.confirmed {
                return self.finish(
                    core,
                    denied(
                        core,
                        RcipError::with_message(ErrorCode::PolicyDenied, messages::CONFIRM_ON_CONFIRMED),
                    ),
                );
            }
            return self.open_confirmation(core, capability, binding_id, context.clone(), reason);
        }
        // 16.
        if self.is_closed() {
            return;
        }
        let handler = if observed {
            self.emit(&core.id, &core.capability_id, EventPhase::Started, None, None);
            match self.recheck_invocation(core, capability, binding_id, context, true, None) {
                Ok(h) => h,
                Err(e) => return self.finish(core, e),
            }
        } else {
            handler
        };
        let handler = handler.expect("the recheck returned the handler");
        // 17.
        {
            let mut inner = core.inner.lock();
            if !matches!(inner.phase, Phase::Checking) {
                return;
            }
            inner.phase = Phase::Running;
            // Safety: the phase moves to Running once per invocation, here,
            // so this is the slot's one write, and only this thread reads
            // it until the invocation state is dropped ([`HandlerSlot`]).
            unsafe { *core.handler.0.get() = Some(handler) };
        }
        if self.is_closed() {
            return;
        }
        // Safety: written above by this thread ([`HandlerSlot`]).
        let handler = unsafe { (*core.handler.0.get()).as_ref() }.expect("the handler just stored");
        let result = {
            let calling = Calling::enter(core);
            let _scope = super::shared::CallbackScope::enter(self);
            handler.call(Invocation::new(core.clone()));
            calling.take()
        };
        // Settled inside the callback: go on here. (A close meanwhile has
        // ended the invocation; `finish` then does nothing.)
        if let Some(result) = result {
            self.after_handler(core, result);
        }
    }

    /// A handler settled its invocation: as [`policy_settled`](Self::policy_settled),
    /// steps 18–20 wait for the handler callback to return only when this
    /// is its thread.
    pub(crate) fn handler_settled(self: &Arc<Self>, core: &Arc<InvocationCore>, result: HandlerResult) {
        // Inside the handler callback, on its thread: the callback's frame
        // takes the result when it returns.
        let Some(result) = core.settle_inline(result) else {
            return;
        };
        let go = {
            let mut inner = core.inner.lock();
            match inner.phase {
                Phase::Running => {
                    inner.phase = Phase::Checking;
                    true
                }
                _ => false,
            }
        };
        if go {
            self.after_handler(core, result);
        }
    }

    /// Steps 18–20.
    fn after_handler(self: &Arc<Self>, core: &Arc<InvocationCore>, result: HandlerResult) {
        let capability = core.capability.expect("known capability");
        let def = &self.catalog.capabilities()[capability];
        match result {
            HandlerResult::Output(Err(e)) => {
                let error = RcipError::with_message(
                    ErrorCode::OutputInvalid,
                    format!("{} ({e}).", messages::OUTPUT_NOT_JSON.trim_end_matches('.')),
                );
                self.finish(core, failed(core, error))
            }
            HandlerResult::Output(Ok((output, rendered))) => {
                let found =
                    def.output
                        .validate_limited(&output, self.config.validation_budget, self.config.issue_limit);
                if !found.issues.is_empty() {
                    let mut error = RcipError::new(ErrorCode::OutputInvalid);
                    error.validation_issues = Some(found.issues);
                    error.validation_issues_truncated = found.truncated;
                    return self.finish(core, failed(core, error));
                }
                let outcome = Outcome::Succeeded {
                    invocation_id: core.id.clone(),
                    capability_id: core.capability_id.clone(),
                    output,
                };
                self.finish(
                    core,
                    Ending {
                        outcome,
                        rendered,
                        event: Some((EventPhase::Succeeded, None)),
                        keep_reservation: false,
                        refresh: true,
                    },
                )
            }
            HandlerResult::Failed { aborted } => {
                let code = if aborted || core.token_cancelled() {
                    ErrorCode::ExecutionAborted
                } else {
                    ErrorCode::ExecutionFailed
                };
                self.finish(core, failed(core, RcipError::new(code)))
            }
        }
    }

    /// Step 15: opens a confirmation; the invocation ends for the consumer
    /// with `confirmation_required` while its id stays reserved.
    fn open_confirmation(
        self: &Arc<Self>,
        core: &Arc<InvocationCore>,
        capability: usize,
        binding_id: u64,
        context: Arc<SemanticContext>,
        reason: Option<String>,
    ) {
        let def = &self.catalog.capabilities()[capability];
        let confirmation_id = self.generate_id("confirmation").to_string();
        let expires_at = self.now().saturating_add(self.config.ttl_ms);
        let mut record = ConfirmationRecord {
            id: confirmation_id,
            title: def.title.clone(),
            description: reason.unwrap_or_else(|| def.description.clone()),
            effect: def.effect,
            expires_at,
        };
        let payload = core.payload.clone().expect("parsed input");
        let pending =
            self.new_pending_confirmation(core, capability, binding_id, context, payload.clone(), record.clone());
        let notices = pending.notices.clone();
        // The event goes out before the confirmation can be found: once it is
        // registered, another thread (the timer, a resolve, run_due_timers)
        // may end it, and its ending event must follow this one.
        self.emit(
            &core.id,
            &core.capability_id,
            EventPhase::ConfirmationRequested,
            None,
            None,
        );
        let Some(registered_id) = self.register_confirmation(core, pending) else {
            // Closed meanwhile: the close ends the invocation.
            return;
        };
        record.id = registered_id;
        let outcome = Outcome::ConfirmationRequired {
            invocation_id: core.id.clone(),
            capability_id: core.capability_id.clone(),
            confirmation: record.clone(),
        };
        self.finish(
            core,
            Ending {
                outcome,
                rendered: None,
                event: None,
                keep_reservation: true,
                refresh: false,
            },
        );
        self.after_confirmation_opened(core, &record, &payload, &notices);
    }

    /// Ends the invocation if it has not ended yet.
    pub(crate) fn finish(self: &Arc<Self>, core: &Arc<InvocationCore>, ending: Ending) {
        self.finish_if(core, |p| !matches!(p, Phase::Done), ending)
    }

    /// Ends the invocation if its phase satisfies `expect`: exactly one
    /// caller wins, then the event, the optional refresh and the outcome
    /// follow, with no lock held.
    pub(crate) fn finish_if(
        self: &Arc<Self>,
        core: &Arc<InvocationCore>,
        expect: impl FnOnce(&Phase) -> bool,
        ending: Ending,
    ) {
        let (sink, registration) = {
            let mut inner = core.inner.lock();
            if matches!(inner.phase, Phase::Done) || !expect(&inner.phase) {
                return;
            }
            inner.phase = Phase::Done;
            (inner.sink.take(), inner.cancel_registration.take())
        };
        // Without event observers nothing runs between the state update and
        // the refresh of step 19, so the refresh joins its critical section.
        let observed = ending.event.is_some() && !self.config.observers.is_empty();
        let join_refresh = ending.refresh && !observed && !self.refreshing_here();
        let (removed, refreshed, release_later) = {
            let mut st = self.state.lock();
            let refreshed =
                (join_refresh && st.bindings.checks.is_empty() && !st.closed).then(|| Shared::refresh_locked(&mut st));
            // The id stays reserved until the outcome (step 3): through the
            // event and the refresh's notifications, whose host code may
            // invoke with it. When no host code runs before the outcome,
            // releasing it here is the same and saves a second lock.
            let quiet = !observed
                && match &refreshed {
                    Some((_, subscribers, _)) => subscribers.is_empty(),
                    None => !ending.refresh,
                };
            let release = !ending.keep_reservation;
            let removed = if release && quiet {
                st.invocations.release(&core.id)
            } else {
                st.invocations.take_running(&core.id)
            };
            (removed, refreshed, release && !quiet)
        };
        drop(removed);
        if let (Some(token), Some(r)) = (&core.token, registration) {
            token.unregister(r);
        }
        if let Some((phase, code)) = ending.event {
            self.emit(&core.id, &core.capability_id, phase, code, None);
        }
        match refreshed {
            Some((revision, subscribers, retired)) => {
                drop(retired);
                self.notify_published(revision, subscribers);
            }
            None if ending.refresh => self.refresh(),
            None => {}
        }
        if release_later {
            let released = self.state.lock().invocations.release(&core.id);
            drop(released);
        }
        if let Some(sink) = sink {
            let _scope = super::shared::CallbackScope::enter(self);
            match &ending.rendered {
                Some(text) => sink.deliver(text),
                None => sink.deliver(&ending.outcome.to_json_text()),
            }
        }
    }

    /// Teardown of one pending invocation.
    pub(crate) fn abort_on_close(self: &Arc<Self>, core: &Arc<InvocationCore>) {
        let ending = failed(core, RcipError::runtime_closed());
        // Finish even though the runtime is closed: the event and outcome
        // are part of the free call.
        self.finish(core, ending);
        core.cancel_handler_token();
    }
}

/// A handler result settled inside the callback, read and written only by
/// the thread whose mark is in [`InvocationCore::calling`], while it is
/// there.
pub(crate) struct InlineSlot(std::cell::UnsafeCell<Option<HandlerResult>>);

// Safety: only one thread at a time reaches the cell (the one inside the
// handler callback, see `InvocationCore::calling`), and it hands nothing
// across threads through it; `HandlerResult` itself is `Send`.
unsafe impl Sync for InlineSlot {}

/// The handler an invocation was handed to (step 17), kept with the
/// invocation state, so the binding's user data lives until every handle of
/// the invocation is freed (the handle holds the state), even after an
/// unbind or the runtime's free (issue 18, item 4). It is released when the
/// state is dropped, which no code does under a lock (the runtime's maps
/// hand their references out of the critical section first).
///
/// Written once, by the thread that moves the phase to Running, in that
/// critical section; read only by that thread for the call, then only by
/// the state's drop. (A mutex-held copy cost two reference-count updates on
/// the binding's handler, a line that two threads sharing a runtime both
/// write, and a lock in the handle's drop.)
pub(crate) struct HandlerSlot(std::cell::UnsafeCell<Option<Arc<dyn Handler>>>);

// Safety: one write and the reads after it happen on one thread (above);
// the drop has the state to itself. `Arc<dyn Handler>` is `Send + Sync`.
unsafe impl Sync for HandlerSlot {}

/// Marks this thread as inside `core`'s handler callback
/// ([`InvocationCore::calling`]) while it lives; [`Calling::take`] takes up
/// what the callback settled.
struct Calling<'a>(&'a Arc<InvocationCore>);

impl<'a> Calling<'a> {
    fn enter(core: &'a Arc<InvocationCore>) -> Calling<'a> {
        core.calling.store(thread_mark(), Ordering::Relaxed);
        Calling(core)
    }

    /// The result settled inside the callback, if any (call it after the
    /// callback returned, while the mark is still set).
    fn take(&self) -> Option<HandlerResult> {
        // Safety: this thread set the mark and has not cleared it, so the
        // slot is its alone.
        unsafe { (*self.0.inline.0.get()).take() }
    }
}

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        self.0.calling.store(0, Ordering::Relaxed);
    }
}

/// This thread's identity while it lives: the address of a thread-local
/// (no two live threads share it; reading it costs no atomic operation).
fn thread_mark() -> usize {
    thread_local!(static MARK: u8 = const { 0 });
    MARK.with(|m| m as *const u8 as usize)
}

/// A sink that keeps the outcome for a blocking caller.
pub(crate) struct BlockingSlot {
    value: std::sync::Mutex<Option<String>>,
    ready: std::sync::Condvar,
}

impl BlockingSlot {
    pub(crate) fn new() -> Arc<BlockingSlot> {
        Arc::new(BlockingSlot {
            value: std::sync::Mutex::new(None),
            ready: std::sync::Condvar::new(),
        })
    }

    pub(crate) fn sink(self: &Arc<Self>) -> Box<dyn OutcomeSink> {
        let slot = self.clone();
        Box::new(move |json: &str| {
            let mut v = slot.value.lock().unwrap_or_else(|e| e.into_inner());
            *v = Some(json.to_string());
            slot.ready.notify_all();
        })
    }

    /// The outcome, if it has arrived (a platform without threads cannot
    /// wait for it).
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    pub(crate) fn take(&self) -> Option<String> {
        self.value.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    pub(crate) fn wait(&self) -> String {
        let mut v = self.value.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(s) = v.take() {
                return s;
            }
            v = self.ready.wait(v).unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::runtime::{Invocation, Runtime, RuntimeBuilder};
    use parking_lot::Mutex;
    use std::sync::{mpsc, Arc};

    fn runtime() -> Runtime {
        let catalog = Catalog::from_bytes(
            br#"{"protocolVersion": "1.0", "application": {"id": "a", "name": "A", "description": "A."},
                 "scopes": [], "capabilities": [
                   {"id": "outer", "title": "Outer", "description": "Outer.", "scopeIds": [], "effect": "read",
                    "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
                   {"id": "inner", "title": "Inner", "description": "Inner.", "scopeIds": [], "effect": "read",
                    "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#,
        )
        .unwrap();
        RuntimeBuilder::new(&catalog).build()
    }

    type Sink = Box<dyn crate::runtime::callbacks::OutcomeSink>;

    fn collect() -> (Arc<Mutex<Vec<String>>>, impl Fn() -> Sink) {
        let all = Arc::new(Mutex::new(Vec::new()));
        let a = all.clone();
        (all, move || {
            let a = a.clone();
            Box::new(move |json: &str| a.lock().push(json.to_string())) as Sink
        })
    }

    /// A handler that settles inside its callback after invoking another
    /// capability inline (whose handler settles inline too): each callback
    /// takes up its own result, whatever the order they were settled in.
    #[test]
    fn nested_inline_settles_each_find_their_own_result() {
        let rt = runtime();
        let client = rt.client();
        let (outcomes, sink) = collect();
        rt.host()
            .bind(
                "inner",
                Arc::new(|inv: Invocation| inv.complete(serde_json::json!({"from": "inner"})).unwrap()),
                None,
            )
            .unwrap()
            .detach();
        let c = client.clone();
        let inner_sink = Mutex::new(Some(sink()));
        rt.host()
            .bind(
                "outer",
                Arc::new(move |inv: Invocation| {
                    // Settled first, then the nested invocation settles
                    // inline on the same thread before this callback returns.
                    inv.complete(serde_json::json!({"from": "outer"})).unwrap();
                    let s = inner_sink.lock().take().unwrap();
                    c.invoke("inner", b"{}", Some("i1"), None, s).unwrap();
                }),
                None,
            )
            .unwrap()
            .detach();
        client.invoke("outer", b"{}", Some("o1"), None, sink()).unwrap();
        let got = outcomes.lock().clone();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].contains("\"invocationId\":\"i1\"") && got[0].contains("\"from\":\"inner\""),
            "{got:?}"
        );
        assert!(
            got[1].contains("\"invocationId\":\"o1\"") && got[1].contains("\"from\":\"outer\""),
            "{got:?}"
        );
    }

    /// A handler that settles and then panics: the runtime goes on
    /// serving, and the next invocation gets its own outcome.
    #[test]
    fn a_callback_that_unwinds_leaves_no_result_behind() {
        let rt = runtime();
        let client = rt.client();
        let (outcomes, sink) = collect();
        let first = Arc::new(std::sync::atomic::AtomicBool::new(true));
        rt.host()
            .bind(
                "outer",
                Arc::new(move |inv: Invocation| {
                    inv.complete(serde_json::json!({"n": 1})).unwrap();
                    if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                        panic!("handler panics after settling");
                    }
                }),
                None,
            )
            .unwrap()
            .detach();
        let s = sink();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            client.invoke("outer", b"{}", Some("p1"), None, s).unwrap();
        }));
        assert!(unwound.is_err());
        client.invoke("outer", b"{}", Some("p2"), None, sink()).unwrap();
        let got = outcomes.lock().clone();
        let last = got.last().expect("an outcome for p2");
        assert!(
            last.contains("\"invocationId\":\"p2\"") && last.contains("succeeded"),
            "{got:?}"
        );
    }

    /// Settled from another thread while the callback still runs: that
    /// thread delivers the outcome at once (PIPELINE.md section 7), before
    /// the callback returns.
    #[test]
    fn a_settle_from_another_thread_goes_on_at_once() {
        let rt = runtime();
        let client = rt.client();
        let (outcomes, sink) = collect();
        let seen = outcomes.clone();
        rt.host()
            .bind(
                "outer",
                Arc::new(move |inv: Invocation| {
                    let (tx, rx) = mpsc::channel();
                    std::thread::spawn(move || {
                        inv.complete(serde_json::json!({"n": 2})).unwrap();
                        tx.send(()).unwrap();
                    });
                    rx.recv().unwrap();
                    assert_eq!(seen.lock().len(), 1, "delivered before the callback returned");
                }),
                None,
            )
            .unwrap()
            .detach();
        client.invoke("outer", b"{}", Some("t1"), None, sink()).unwrap();
        assert_eq!(outcomes.lock().len(), 1);
    }
}
