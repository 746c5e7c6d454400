//! Confirmation (PIPELINE.md section 5): single-use, expiring at
//! `expiresAt`, cancelled with its token, rechecked on approval; receipts
//! for the latest 256 expiries and cancellations; the host's confirmation
//! callback told when one opens and how it ends.

use super::callbacks::{OutcomeSink, Sink};
use super::cancel::{CancelToken, Registration};
use super::invoke::{InvocationCore, Payload, Start};
use super::shared::{Shared, RECEIPT_CAPACITY};
use super::types::{
    messages, push_json_str, CloseReason, ConfirmationRecord, ErrorCode, EventPhase, Outcome, RcipError,
    SemanticContext,
};
use super::HostError;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

/// The confirmations part of the runtime's state (PIPELINE.md section 5).
///
/// Invariants: `deadlines` holds exactly one `(expiresAt, seq, id)` per
/// entry of `pending`; a confirmation leaves both in one critical section
/// (approved, declined, expired, cancelled, invalidated or closed); an
/// expired or cancelled one leaves a receipt, and `receipts` keeps the
/// latest `RECEIPT_CAPACITY` of them, oldest first.
pub(crate) struct ConfirmationState {
    /// Keyed with the randomly seeded `ahash` (ids may come from a consumer
    /// through the host); SipHash cost about 400 instructions per round trip.
    pub pending: HashMap<String, PendingConfirmation, ahash::RandomState>,
    /// Pending confirmation deadlines: (expiresAt, creation sequence, id).
    pub deadlines: BTreeSet<(i64, u64, String)>,
    pub receipts: VecDeque<Receipt>,
}

/// A confirmation waiting for the host.
pub(crate) struct PendingConfirmation {
    pub id: String,
    pub invocation_id: Arc<str>,
    pub capability_id: Arc<str>,
    pub capability: usize,
    pub payload: Arc<Payload>,
    pub token: Option<CancelToken>,
    pub registration: Option<Registration>,
    pub binding_id: u64,
    pub context: Arc<SemanticContext>,
    pub expires_at: i64,
    pub seq: u64,
    /// Orders the host's notices: `closed` never before `opened`.
    pub notices: Arc<NoticeGate>,
}

/// Holds back what a confirmation's ending produces before the opening
/// thread has told the host that the confirmation opened (an inline resolve
/// from the `opened` notice or the consumer's outcome callback, or another
/// thread): the `closed` notice, and for an approval the re-run. The opening
/// thread delivers them, in that order, once `opened` returned (issue 18,
/// item 5).
#[derive(Default)]
pub(crate) struct NoticeGate(parking_lot::Mutex<GateState>);

#[derive(Default)]
struct GateState {
    /// The `opened` notice returned (or will never be sent).
    opened: bool,
    closed: Option<String>,
    /// An approved confirmation's re-run, waiting for `opened` to return.
    rerun: Option<(Start, Box<dyn OutcomeSink>)>,
}

/// The sink of a re-run held back by a [`NoticeGate`]: its resolve call
/// already returned OK, so a runtime that closed meanwhile still owes it
/// its one outcome (`failed EXECUTION_ABORTED` after its `failed` event, as
/// the close gives every pending invocation).
struct HeldRerunSink {
    sink: Box<dyn OutcomeSink>,
    shared: std::sync::Weak<Shared>,
    invocation_id: Arc<str>,
    capability_id: Arc<str>,
}

impl OutcomeSink for HeldRerunSink {
    fn deliver(self: Box<Self>, json: &super::types::JsonText) {
        self.sink.deliver(json)
    }

    fn refused(self: Box<Self>) {
        if let Some(shared) = self.shared.upgrade() {
            shared.emit(
                &self.invocation_id,
                &self.capability_id,
                EventPhase::Failed,
                Some(ErrorCode::ExecutionAborted),
                None,
            );
        }
        let outcome = Outcome::Failed {
            invocation_id: self.invocation_id.clone(),
            capability_id: self.capability_id.clone(),
            error: RcipError::new(ErrorCode::ExecutionAborted),
        };
        self.sink.deliver(&outcome.to_json_text());
    }
}

/// What is kept of an expired or cancelled confirmation (no payload).
pub(crate) struct Receipt {
    pub confirmation_id: String,
    pub invocation_id: Arc<str>,
    pub capability_id: Arc<str>,
    pub code: ErrorCode,
}

fn closed_json(c: &PendingConfirmation, reason: CloseReason) -> String {
    closed_notice(&c.id, &c.invocation_id, &c.capability_id, reason)
}

/// The end of an answered confirmation: the event phase, the error code,
/// its message and the reason the confirmation observer hears.
type Ending = (EventPhase, ErrorCode, Option<&'static str>, CloseReason);

/// How an answered confirmation ends before its re-run, in the order of
/// PIPELINE.md section 5: declined (step 2), then expired at or after
/// `expiresAt` (step 3), then the binding, then the context changed (step
/// 4); `None`: the approved re-run goes ahead. One rule for a pending
/// confirmation ([`Shared::resolve`]) and a carried one
/// ([`Shared::resume`]).
fn ending(approved: bool, expired: bool, binding_same: bool, context_same: bool) -> Option<Ending> {
    if !approved {
        Some((
            EventPhase::ConfirmationDeclined,
            ErrorCode::ConfirmationDeclined,
            None,
            CloseReason::Declined,
        ))
    } else if expired {
        Some((
            EventPhase::Failed,
            ErrorCode::ConfirmationExpired,
            None,
            CloseReason::Expired,
        ))
    } else if !binding_same {
        Some((
            EventPhase::Denied,
            ErrorCode::PolicyDenied,
            Some(messages::BINDING_CHANGED),
            CloseReason::Invalidated,
        ))
    } else if !context_same {
        Some((
            EventPhase::Denied,
            ErrorCode::PolicyDenied,
            Some(messages::CONTEXT_CHANGED),
            CloseReason::Invalidated,
        ))
    } else {
        None
    }
}

/// The host's `closed` notice of a confirmation (PIPELINE.md section 5).
fn closed_notice(confirmation_id: &str, invocation_id: &str, capability_id: &str, reason: CloseReason) -> String {
    let mut out = String::from("{\"event\":\"closed\",\"confirmationId\":");
    push_json_str(&mut out, confirmation_id);
    out.push_str(",\"invocationId\":");
    push_json_str(&mut out, invocation_id);
    out.push_str(",\"capabilityId\":");
    push_json_str(&mut out, capability_id);
    out.push_str(",\"reason\":\"");
    out.push_str(reason.as_str());
    out.push_str("\"}");
    out
}

impl Shared {
    /// True while confirmation `id` is pending.
    pub(crate) fn confirmation_pending(&self, id: &str) -> bool {
        self.state.lock().confirmations.pending.contains_key(id)
    }

    pub(crate) fn new_pending_confirmation(
        &self,
        core: &InvocationCore,
        capability: usize,
        binding_id: u64,
        context: Arc<SemanticContext>,
        payload: Arc<Payload>,
        record: ConfirmationRecord,
    ) -> PendingConfirmation {
        PendingConfirmation {
            id: record.id,
            invocation_id: core.id.clone(),
            capability_id: core.capability_id.clone(),
            capability,
            payload,
            token: core.token.clone(),
            registration: None,
            binding_id,
            context,
            expires_at: record.expires_at,
            seq: 0,
            notices: Arc::new(NoticeGate::default()),
        }
    }

    /// Tells the host's confirmation callback that `c` ended, after its
    /// `opened` notice (held back until that notice was delivered).
    fn notify_closed(&self, c: &PendingConfirmation, reason: CloseReason) {
        if self.config.confirmation_observer.is_none() {
            return;
        }
        let json = closed_json(c, reason);
        {
            let mut gate = c.notices.0.lock();
            if !gate.opened {
                gate.closed = Some(json);
                return;
            }
        }
        self.notify_confirmation(|| json);
    }

    /// Runs a re-run held back by a [`NoticeGate`] (its resolve returned).
    fn run_held_rerun(self: &Arc<Self>, start: Start, sink: Box<dyn OutcomeSink>) {
        let sink = Box::new(HeldRerunSink {
            sink,
            shared: Arc::downgrade(self),
            invocation_id: start.id.clone(),
            capability_id: start.capability_id.clone(),
        });
        // A refusal (closed) delivers through the sink's `refused`.
        let _ = self.run(start, Sink::Boxed(sink));
    }

    /// Stores a new confirmation and returns its id; None when the runtime
    /// closed meanwhile. A host id generator may repeat itself: an id a
    /// pending confirmation already has is replaced by a built-in one (the
    /// new confirmation would otherwise replace the pending one, whose
    /// invocation id then stayed reserved and which never ended).
    pub(crate) fn register_confirmation(
        &self,
        _core: &InvocationCore,
        mut pending: PendingConfirmation,
    ) -> Option<String> {
        let mut st = self.state.lock();
        if st.closed {
            return None;
        }
        while st.confirmations.pending.contains_key(&pending.id) {
            pending.id = self.builtin_id("confirmation").to_string();
        }
        let id = pending.id.clone();
        pending.seq = Shared::next_seq(&mut st);
        st.confirmations
            .deadlines
            .insert((pending.expires_at, pending.seq, pending.id.clone()));
        st.confirmations.pending.insert(pending.id.clone(), pending);
        Some(id)
    }

    /// After the `confirmation_required` outcome: tell the host, arm the
    /// timer, and let the token cancel the confirmation.
    pub(crate) fn after_confirmation_opened(
        self: &Arc<Self>,
        core: &Arc<InvocationCore>,
        record: &ConfirmationRecord,
        payload: &Payload,
        notices: &NoticeGate,
    ) {
        if self.is_closed() {
            // No `opened` notice now; a re-run already held back still gets
            // its outcome (a later resolve finds the runtime closed).
            let rerun = {
                let mut gate = notices.0.lock();
                gate.opened = true;
                gate.rerun.take()
            };
            if let Some((start, sink)) = rerun {
                self.run_held_rerun(start, sink);
            }
            return;
        }
        self.notify_confirmation(|| {
            let mut out = String::from("{\"event\":\"opened\",\"confirmation\":");
            record.write_json(&mut out);
            out.push_str(",\"invocationId\":");
            push_json_str(&mut out, &core.id);
            out.push_str(",\"capabilityId\":");
            push_json_str(&mut out, &core.capability_id);
            out.push_str(",\"input\":");
            out.push_str(payload.text());
            out.push('}');
            out
        });
        let (closed, rerun) = {
            let mut gate = notices.0.lock();
            gate.opened = true;
            (gate.closed.take(), gate.rerun.take())
        };
        if let Some(closed) = closed {
            self.notify_confirmation(|| closed);
        }
        if let Some((start, sink)) = rerun {
            self.run_held_rerun(start, sink);
        }
        // No timer thread on a platform without threads (`crate::platform`):
        // the runtime's timers are manual there.
        #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
        if !self.config.manual_timers {
            super::timer::schedule(self, record.expires_at);
        }
        if let Some(token) = &core.token {
            let weak = Arc::downgrade(self);
            let id = record.id.clone();
            let registration = token.on_cancel(move || {
                if let Some(shared) = weak.upgrade() {
                    shared.cancel_confirmation(&id);
                }
            });
            if let Some(r) = registration {
                let stale = {
                    let mut st = self.state.lock();
                    match st.confirmations.pending.get_mut(&record.id) {
                        Some(c) => {
                            c.registration = Some(r);
                            false
                        }
                        None => true,
                    }
                };
                if stale {
                    token.unregister(r);
                }
            }
        }
    }

    fn push_receipt(st: &mut super::shared::State, c: &PendingConfirmation, code: ErrorCode) {
        st.confirmations.receipts.push_back(Receipt {
            confirmation_id: c.id.clone(),
            invocation_id: c.invocation_id.clone(),
            capability_id: c.capability_id.clone(),
            code,
        });
        while st.confirmations.receipts.len() > RECEIPT_CAPACITY {
            st.confirmations.receipts.pop_front();
        }
    }

    fn unregister_confirmation_token(c: &mut PendingConfirmation) {
        if let (Some(token), Some(r)) = (&c.token, c.registration.take()) {
            token.unregister(r);
        }
    }

    /// The token of a pending confirmation was cancelled.
    pub(crate) fn cancel_confirmation(self: &Arc<Self>, id: &str) {
        let removed = {
            let mut st = self.state.lock();
            match st.confirmations.pending.remove(id) {
                None => None,
                Some(c) => {
                    st.confirmations.deadlines.remove(&(c.expires_at, c.seq, c.id.clone()));
                    let _ = st.invocations.release(&c.invocation_id);
                    Shared::push_receipt(&mut st, &c, ErrorCode::ExecutionAborted);
                    Some(c)
                }
            }
        };
        let Some(mut c) = removed else { return };
        c.registration = None; // it is running now
        self.emit(
            &c.invocation_id,
            &c.capability_id,
            EventPhase::Failed,
            Some(ErrorCode::ExecutionAborted),
            None,
        );
        self.notify_closed(&c, CloseReason::Cancelled);
    }

    /// Expires every confirmation due at `now`, in `expiresAt` order (ties in
    /// creation order). Returns how many expired.
    ///
    /// One at a time, each taken under the lock just before its callbacks:
    /// when a callback of one expiry frees the runtime, the confirmations
    /// still pending end with the close (their `closed` notices during the
    /// free), not with more expiry callbacks after the free returned.
    pub(crate) fn expire_due(self: &Arc<Self>, now: i64) -> usize {
        let mut n = 0;
        loop {
            let mut c = {
                let mut st = self.state.lock();
                if st.closed {
                    return n;
                }
                let Some(first) = st.confirmations.deadlines.first().cloned() else {
                    return n;
                };
                if first.0 > now {
                    return n;
                }
                st.confirmations.deadlines.remove(&first);
                let Some(c) = st.confirmations.pending.remove(&first.2) else {
                    continue;
                };
                let _ = st.invocations.release(&c.invocation_id);
                Shared::push_receipt(&mut st, &c, ErrorCode::ConfirmationExpired);
                c
            };
            n += 1;
            Shared::unregister_confirmation_token(&mut c);
            self.emit(
                &c.invocation_id,
                &c.capability_id,
                EventPhase::Failed,
                Some(ErrorCode::ConfirmationExpired),
                Some(c.expires_at),
            );
            self.notify_closed(&c, CloseReason::Expired);
        }
    }

    /// The earliest pending `expiresAt`.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.state.lock().confirmations.deadlines.first().map(|d| d.0)
    }

    /// Teardown: the confirmation ends without a receipt.
    pub(crate) fn close_confirmation_on_teardown(self: &Arc<Self>, mut c: PendingConfirmation) {
        Shared::unregister_confirmation_token(&mut c);
        self.notify_closed(&c, CloseReason::Closed);
    }

    /// The host resolves a confirmation: always one outcome, through `sink`.
    pub(crate) fn resolve(
        self: &Arc<Self>,
        confirmation_id: &str,
        approved: bool,
        sink: Box<dyn OutcomeSink>,
    ) -> Result<(), HostError> {
        if let Err(e) = self.enter() {
            sink.refused();
            return Err(e);
        }
        let now = self.now();
        enum Found {
            Pending(PendingConfirmation, bool, bool),
            Receipt(Receipt),
            Nothing,
        }
        let found = {
            let mut st = self.state.lock();
            if st.closed {
                drop(st);
                sink.refused();
                return Err(HostError::Closed);
            }
            // 1. Pending → remove it and release its id.
            if let Some(c) = st.confirmations.pending.remove(confirmation_id) {
                st.confirmations.deadlines.remove(&(c.expires_at, c.seq, c.id.clone()));
                let _ = st.invocations.release(&c.invocation_id);
                let binding_same = st.bindings.slots[c.capability]
                    .as_ref()
                    .is_some_and(|b| b.id == c.binding_id);
                let context_same = *st.bindings.context == *c.context;
                Found::Pending(c, binding_same, context_same)
            } else if let Some(i) = st
                .confirmations
                .receipts
                .iter()
                .position(|r| r.confirmation_id == confirmation_id)
            {
                // A receipt answers once, then is forgotten.
                Found::Receipt(st.confirmations.receipts.remove(i).expect("index in range"))
            } else {
                Found::Nothing
            }
        };
        let (mut c, binding_same, context_same) = match found {
            Found::Receipt(r) => {
                let outcome = Outcome::Failed {
                    invocation_id: r.invocation_id,
                    capability_id: r.capability_id,
                    error: RcipError::new(r.code),
                };
                let _scope = super::shared::CallbackScope::enter(self);
                sink.deliver(&outcome.to_json_text());
                return Ok(());
            }
            Found::Nothing => {
                let outcome = Outcome::Failed {
                    invocation_id: self.generate_id("invocation"),
                    capability_id: Arc::from("unknown"),
                    error: RcipError::new(ErrorCode::ConfirmationNotFound),
                };
                let _scope = super::shared::CallbackScope::enter(self);
                sink.deliver(&outcome.to_json_text());
                return Ok(());
            }
            Found::Pending(c, b, x) => (c, b, x),
        };
        Shared::unregister_confirmation_token(&mut c);
        let ending = ending(approved, now >= c.expires_at, binding_same, context_same);
        if let Some((phase, code, message, reason)) = ending {
            let error = match message {
                Some(m) => RcipError::with_message(code, m),
                None => RcipError::new(code),
            };
            let (invocation_id, capability_id) = (c.invocation_id.clone(), c.capability_id.clone());
            let outcome = if phase == EventPhase::Failed {
                Outcome::Failed {
                    invocation_id,
                    capability_id,
                    error,
                }
            } else {
                Outcome::Denied {
                    invocation_id,
                    capability_id,
                    error,
                }
            };
            self.emit(&c.invocation_id, &c.capability_id, phase, Some(code), None);
            {
                let _scope = super::shared::CallbackScope::enter(self);
                sink.deliver(&outcome.to_json_text());
            }
            self.notify_closed(&c, reason);
            return Ok(());
        }
        // 5. Re-run from step 2 with the captured request, confirmed.
        let start = Start {
            id: c.invocation_id.clone(),
            capability_id: c.capability_id.clone(),
            capability: Some(c.capability),
            input: Ok(c.payload.clone()),
            token: c.token.clone(),
            confirmed: true,
            // No request to attach to: progress reaches only the observer.
            channel: None,
        };
        if self.config.confirmation_observer.is_some() {
            let json = closed_json(&c, CloseReason::Approved);
            {
                let mut gate = c.notices.0.lock();
                if !gate.opened {
                    // Resolved before `opened` returned: `closed`, then the
                    // re-run, once it has (on the opening thread).
                    gate.closed = Some(json);
                    gate.rerun = Some((start, sink));
                    return Ok(());
                }
            }
            self.notify_confirmation(|| json);
        }
        // The runtime may have closed since the checks above (the `approved`
        // notice may free it, or another thread): then the re-run refuses
        // before it delivers anything, and so must this call (CLOSED, no
        // outcome, the caller keeps its user data), or the outcome is lost.
        self.run(start, sink.into())
    }
}

/// What another runtime of the same catalog needs to resume a confirmation
/// this runtime opened (**rcip**, PIPELINE.md section 5, "Confirmations that
/// cross runtimes"): its id, the invocation id it reserved, its capability,
/// its `expiresAt` and the context C it captured. No input: the resuming
/// caller supplies the consumer's input again (the MCP server checks it is
/// the same by a digest it protects).
///
/// Read with [`Host::carry_confirmation`](super::Host::carry_confirmation)
/// while the confirmation is pending; given to
/// [`Host::resume_confirmation`](super::Host::resume_confirmation) of the
/// runtime that answers. Plain data: `Send`, `Sync`, cloned freely. It is
/// not a credential by itself: whoever stores or sends it must protect its
/// integrity and enforce single use (the runtime cannot, across runtimes).
#[derive(Clone, Debug, PartialEq)]
pub struct CarriedConfirmation {
    /// The confirmation id (`confirmation.id` of the outcome).
    pub confirmation_id: String,
    /// The invocation id the confirmation reserved; the approved re-run
    /// uses it.
    pub invocation_id: String,
    /// The capability the confirmation is for.
    pub capability_id: String,
    /// `expiresAt`, Unix milliseconds: resuming at or after it is expired.
    pub expires_at: i64,
    /// The context captured at section 4 step 11; the resuming runtime's
    /// context must equal it (PIPELINE.md section 3 equality).
    pub context: SemanticContext,
}

impl Shared {
    /// The pending confirmation `id` as another runtime may resume it.
    pub(crate) fn carry(&self, id: &str) -> Option<CarriedConfirmation> {
        let st = self.state.lock();
        let c = st.confirmations.pending.get(id)?;
        Some(CarriedConfirmation {
            confirmation_id: c.id.clone(),
            invocation_id: c.invocation_id.to_string(),
            capability_id: c.capability_id.to_string(),
            expires_at: c.expires_at,
            context: (*c.context).clone(),
        })
    }

    /// Resumes a confirmation opened by another runtime (or by this one):
    /// PIPELINE.md section 5, "Confirmations that cross runtimes". Always
    /// one outcome through `sink`, as [`Shared::resolve`].
    pub(crate) fn resume(
        self: &Arc<Self>,
        carried: &CarriedConfirmation,
        approved: bool,
        input: &[u8],
        token: Option<&CancelToken>,
        sink: Box<dyn OutcomeSink>,
    ) -> Result<(), HostError> {
        if let Err(e) = self.enter() {
            sink.refused();
            return Err(e);
        }
        // 1. Still pending here: the single-runtime rule, on the captured
        // request.
        if self.confirmation_pending(&carried.confirmation_id) {
            return self.resolve(&carried.confirmation_id, approved, sink);
        }
        let now = self.now();
        // 2. A capability this catalog does not have: an unknown
        // confirmation.
        let Some(capability) = self.catalog.capability_index(&carried.capability_id) else {
            let outcome = Outcome::Failed {
                invocation_id: self.generate_id("invocation"),
                capability_id: Arc::from("unknown"),
                error: RcipError::new(ErrorCode::ConfirmationNotFound),
            };
            let _scope = super::shared::CallbackScope::enter(self);
            sink.deliver(&outcome.to_json_text());
            return Ok(());
        };
        let capability_id = self.capability_id(capability);
        let invocation_id: Arc<str> = Arc::from(carried.invocation_id.as_str());
        let (bound, context_same) = {
            let st = self.state.lock();
            if st.closed {
                drop(st);
                sink.refused();
                return Err(HostError::Closed);
            }
            (
                st.bindings.slots[capability].is_some(),
                *st.bindings.context == carried.context,
            )
        };
        // 3.–5. Declined, expired, binding or context changed: as a
        // pending confirmation's steps 2–4.
        let ending = ending(approved, now >= carried.expires_at, bound, context_same);
        let notice = |reason| closed_notice(&carried.confirmation_id, &invocation_id, &capability_id, reason);
        if let Some((phase, code, message, reason)) = ending {
            let error = match message {
                Some(m) => RcipError::with_message(code, m),
                None => RcipError::new(code),
            };
            let (i, c) = (invocation_id.clone(), capability_id.clone());
            let outcome = if phase == EventPhase::Failed {
                Outcome::Failed {
                    invocation_id: i,
                    capability_id: c,
                    error,
                }
            } else {
                Outcome::Denied {
                    invocation_id: i,
                    capability_id: c,
                    error,
                }
            };
            self.emit(&invocation_id, &capability_id, phase, Some(code), None);
            {
                let _scope = super::shared::CallbackScope::enter(self);
                sink.deliver(&outcome.to_json_text());
            }
            self.notify_confirmation(|| notice(reason));
            return Ok(());
        }
        // 6. The approved re-run: section 4 from step 2 with the carried
        // invocation id, the supplied input and `confirmed` true.
        let input =
            crate::json::parse_payload(input, &self.config.limits).map(|p| Payload::from_parsed(p, input.len()));
        let start = Start {
            id: invocation_id.clone(),
            capability_id: capability_id.clone(),
            capability: Some(capability),
            input,
            token: token.cloned(),
            confirmed: true,
            channel: None,
        };
        self.notify_confirmation(|| notice(CloseReason::Approved));
        self.run(start, sink.into())
    }
}
