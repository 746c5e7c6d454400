//! Preflight (PIPELINE.md section 6): 1 to 16 proposals checked without
//! running anything, reserving anything, emitting events or notifying.

use super::callbacks::OutcomeSink;
use super::cancel::{CancelToken, Registration};
use super::handles::PolicyRequest;
use super::invoke::{Payload, Prechecked};
use super::policy::{default_decision, PolicyCore, PolicyTarget};
use super::shared::Shared;
use super::types::{messages, push_json_str, Decision, ErrorCode, JsonText, PolicyAnswer, RcipError, SemanticContext};
use super::HostError;
use crate::catalog::Effect;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Weak};

/// The preflights part of the runtime's state (PIPELINE.md section 6).
///
/// Invariant: a preflight is in `active` under its sequence key while any
/// of its proposals waits for a policy answer; the one that settles the
/// last proposal removes it and delivers the report.
pub(crate) struct PreflightState {
    pub active: HashMap<u64, Arc<PreflightCore>, ahash::RandomState>,
}

/// Most proposals in one preflight.
pub const MAX_PREFLIGHT_PROPOSALS: usize = 16;

enum Verdict {
    Blocked(RcipError),
    Ready(Effect),
    ConfirmationRequired(Effect, String),
}

enum Slot {
    /// Not checked yet.
    Waiting,
    /// Asked the policy; the answer may be here.
    Asked {
        capability: usize,
        binding_id: u64,
        context: Arc<SemanticContext>,
        answer: Option<PolicyAnswer>,
    },
    /// Steps 12–13 are running on some thread.
    Processing,
    Final(Verdict),
}

struct PfState {
    slots: Vec<Slot>,
    sink: Option<Box<dyn OutcomeSink>>,
    registration: Option<Registration>,
    /// Every policy call was made (or the runtime closed).
    all_asked: bool,
    closed: bool,
    done: bool,
}

pub(crate) struct PreflightCore {
    pub shared: Weak<Shared>,
    pub key: u64,
    revision: u64,
    capability_ids: Vec<String>,
    payloads: Vec<Option<Arc<Payload>>>,
    token: Option<CancelToken>,
    inner: Mutex<PfState>,
}

impl Shared {
    /// Starts a preflight; the report may be delivered before this returns.
    pub(crate) fn preflight(
        self: &Arc<Self>,
        proposals: Vec<(String, Vec<u8>)>,
        token: Option<&CancelToken>,
        sink: Box<dyn OutcomeSink>,
    ) -> Result<(), HostError> {
        if let Err(e) = self.enter() {
            sink.refused();
            return Err(e);
        }
        if proposals.is_empty() || proposals.len() > MAX_PREFLIGHT_PROPOSALS {
            sink.refused();
            return Err(HostError::PreflightBatchInvalid(proposals.len()));
        }
        let mut capability_ids = Vec::with_capacity(proposals.len());
        let mut payloads = Vec::with_capacity(proposals.len());
        let mut slots = Vec::with_capacity(proposals.len());
        for (id, text) in proposals {
            capability_ids.push(id);
            match crate::json::parse_bytes(&text, &self.config.limits) {
                Ok(v) => {
                    payloads.push(Some(Payload::new(v, text.len())));
                    slots.push(Slot::Waiting);
                }
                Err(e) => {
                    payloads.push(None);
                    slots.push(Slot::Final(Verdict::Blocked(RcipError::with_message(
                        ErrorCode::InputInvalid,
                        format!("{} ({e}).", messages::INPUT_NOT_JSON.trim_end_matches('.')),
                    ))));
                }
            }
        }
        let core = {
            let mut st = self.state.lock();
            if st.closed {
                drop(st);
                sink.refused();
                return Err(HostError::Closed);
            }
            let key = Shared::next_seq(&mut st);
            let core = Arc::new(PreflightCore {
                shared: Arc::downgrade(self),
                key,
                revision: st.bindings.revision,
                capability_ids,
                payloads,
                token: token.cloned(),
                inner: Mutex::new(PfState {
                    slots,
                    sink: Some(sink),
                    registration: None,
                    all_asked: false,
                    closed: false,
                    done: false,
                }),
            });
            st.preflights.active.insert(key, core.clone());
            core
        };
        if let Some(token) = &core.token {
            let weak = Arc::downgrade(&core);
            let registration = token.on_cancel(move || {
                if let Some(core) = weak.upgrade() {
                    if let Some(shared) = core.shared.upgrade() {
                        shared.cancel_preflight(&core);
                    }
                }
            });
            if let Some(r) = registration {
                let mut inner = core.inner.lock();
                if inner.done {
                    drop(inner);
                    token.unregister(r);
                } else {
                    inner.registration = Some(r);
                }
            }
        }
        // Steps 6–11 for each proposal, in order (with the default policy,
        // 6–13). A cancellation ends the proposals already asked; the rest
        // still run steps 6–10, where step 10 blocks those that pass 6–9. A
        // close may settle the report meanwhile, which takes the slots:
        // check `done` before indexing them.
        for i in 0..core.capability_ids.len() {
            let waiting = {
                let inner = core.inner.lock();
                !inner.done && matches!(inner.slots[i], Slot::Waiting)
            };
            if !waiting || self.is_closed() {
                continue;
            }
            self.preflight_ask(&core, i);
        }
        core.inner.lock().all_asked = true;
        // Then steps 12–13 for each answered proposal, in proposal order.
        for i in 0..core.capability_ids.len() {
            let taken = {
                let mut inner = core.inner.lock();
                if inner.done {
                    break;
                }
                take_answer(&mut inner.slots[i])
            };
            if let Some(t) = taken {
                self.preflight_decide(&core, i, t);
            }
        }
        self.maybe_settle_preflight(&core);
        Ok(())
    }

    fn preflight_ask(self: &Arc<Self>, core: &Arc<PreflightCore>, i: usize) {
        let payload = core.payloads[i].clone().expect("parsed input");
        let capability = self.catalog.capability_index(&core.capability_ids[i]);
        let Prechecked {
            capability,
            binding_id,
            entry,
            context,
            ..
        } = match self.precheck(capability, &payload, core.token.as_ref(), None) {
            Ok(x) => x,
            Err(e) => {
                set_if_open(core, i, Slot::Final(Verdict::Blocked(e)));
                return;
            }
        };
        // Without an early reading, the precheck reads the context itself.
        let context = context.expect("the context the precheck read");
        let effect = self.catalog.capabilities()[capability].effect;
        let Some(policy) = self.config.policy.clone() else {
            // The default policy answers at once: steps 12–13 follow before
            // the next proposal's step 6.
            if set_if_open(core, i, Slot::Processing) {
                let answer = PolicyAnswer::Decision(default_decision(effect, false));
                self.preflight_decide(
                    core,
                    i,
                    Taken {
                        capability,
                        binding_id,
                        context,
                        answer,
                    },
                );
            }
            return;
        };
        if !set_if_open(
            core,
            i,
            Slot::Asked {
                capability,
                binding_id,
                context: context.clone(),
                answer: None,
            },
        ) {
            return;
        }
        // A cancellation after step 10 but before the slot was marked asked
        // found nothing to end: end it now, before the policy is asked.
        if core.token.as_ref().is_some_and(CancelToken::is_cancelled) {
            return self.cancel_preflight(core);
        }
        let request = PolicyRequest::new(Arc::new(PolicyCore::new(
            PolicyTarget::Preflight(core.clone(), i),
            None,
            self.catalog.clone(),
            capability,
            entry,
            payload,
            context,
            false,
            "preflight",
        )))
        .holding(policy.clone());
        let _scope = super::shared::CallbackScope::enter(self);
        policy.evaluate(request);
    }

    /// A policy request of a preflight proposal was settled.
    pub(crate) fn preflight_policy_settled(
        self: &Arc<Self>,
        core: &Arc<PreflightCore>,
        i: usize,
        answer: PolicyAnswer,
    ) {
        let taken = {
            let mut inner = core.inner.lock();
            if inner.done {
                return;
            }
            let all_asked = inner.all_asked;
            match &mut inner.slots[i] {
                Slot::Asked {
                    answer: slot @ None, ..
                } => {
                    *slot = Some(answer);
                }
                _ => return,
            }
            if !all_asked {
                return;
            }
            take_answer(&mut inner.slots[i])
        };
        if let Some(t) = taken {
            self.preflight_decide(core, i, t);
            self.maybe_settle_preflight(core);
        }
    }

    /// Steps 11 (a failed policy), 12 and 13 for one answered proposal.
    fn preflight_decide(&self, core: &PreflightCore, i: usize, taken: Taken) {
        let def = &self.catalog.capabilities()[taken.capability];
        let verdict = match taken.answer {
            PolicyAnswer::Failed => Verdict::Blocked(RcipError::new(ErrorCode::PolicyEvaluationFailed)),
            PolicyAnswer::Decision(decision) => {
                match self.recheck(
                    core.token.as_ref(),
                    taken.capability,
                    taken.binding_id,
                    &taken.context,
                    false,
                    None,
                ) {
                    Err(e) => Verdict::Blocked(e),
                    Ok(_) => match decision {
                        Decision::Allow => Verdict::Ready(def.effect),
                        Decision::Deny { reason } => Verdict::Blocked(match reason {
                            Some(r) => RcipError::with_message(ErrorCode::PolicyDenied, r),
                            None => RcipError::new(ErrorCode::PolicyDenied),
                        }),
                        Decision::Confirm { reason } => {
                            Verdict::ConfirmationRequired(def.effect, reason.unwrap_or_else(|| def.description.clone()))
                        }
                    },
                }
            }
        };
        let mut inner = core.inner.lock();
        if !inner.done && matches!(inner.slots[i], Slot::Processing) {
            inner.slots[i] = Slot::Final(verdict);
        }
    }

    /// Token cancelled: every proposal whose policy was asked ends `failed
    /// EXECUTION_ABORTED` at once, its late answer ignored (step 11). Those
    /// not reached yet meet the cancellation at their own step 10, after
    /// steps 6–9; those in steps 12–13 meet it in the recheck.
    fn cancel_preflight(self: &Arc<Self>, core: &Arc<PreflightCore>) {
        {
            let mut inner = core.inner.lock();
            if inner.done {
                return;
            }
            for slot in inner.slots.iter_mut() {
                if matches!(slot, Slot::Asked { .. }) {
                    *slot = Slot::Final(Verdict::Blocked(RcipError::new(ErrorCode::ExecutionAborted)));
                }
            }
        }
        self.maybe_settle_preflight(core);
    }

    /// Runtime closing: every undecided proposal is blocked with the
    /// teardown outcome, then the report settles.
    pub(crate) fn abort_preflight_on_close(self: &Arc<Self>, core: &Arc<PreflightCore>) {
        {
            let mut inner = core.inner.lock();
            if inner.done {
                return;
            }
            inner.closed = true;
            inner.all_asked = true;
            for slot in inner.slots.iter_mut() {
                if !matches!(slot, Slot::Final(_)) {
                    *slot = Slot::Final(Verdict::Blocked(RcipError::runtime_closed()));
                }
            }
        }
        self.maybe_settle_preflight(core);
    }

    /// Delivers the report once every proposal is final.
    fn maybe_settle_preflight(self: &Arc<Self>, core: &Arc<PreflightCore>) {
        let (sink, registration, verdicts) = {
            let mut inner = core.inner.lock();
            if inner.done || !inner.all_asked || !inner.slots.iter().all(|s| matches!(s, Slot::Final(_))) {
                return;
            }
            inner.done = true;
            let verdicts: Vec<Slot> = std::mem::take(&mut inner.slots);
            (inner.sink.take(), inner.registration.take(), verdicts)
        };
        let revision = {
            let mut st = self.state.lock();
            st.preflights.active.remove(&core.key);
            st.bindings.revision
        };
        if let (Some(token), Some(r)) = (&core.token, registration) {
            token.unregister(r);
        }
        let consistent = revision == core.revision;
        let checked_at = self.now();
        let mut out = String::with_capacity(128 + 96 * verdicts.len());
        let _ = write!(
            out,
            "{{\"revision\":{},\"checkedAt\":{},\"consistent\":{},\"outcomes\":[",
            core.revision, checked_at, consistent
        );
        let stale = RcipError::new(ErrorCode::PreflightStale);
        for (i, slot) in verdicts.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let Slot::Final(verdict) = slot else { continue };
            let verdict = match verdict {
                Verdict::Blocked(_) => verdict,
                _ if !consistent => &Verdict::Blocked(stale.clone()),
                _ => verdict,
            };
            let capability_id = &core.capability_ids[i];
            match verdict {
                Verdict::Blocked(error) => {
                    out.push_str("{\"status\":\"blocked\",\"capabilityId\":");
                    push_json_str(&mut out, capability_id);
                    out.push_str(",\"error\":");
                    error.write_json(&mut out);
                    out.push('}');
                }
                Verdict::Ready(effect) => {
                    out.push_str("{\"status\":\"ready\",\"capabilityId\":");
                    push_json_str(&mut out, capability_id);
                    let _ = write!(out, ",\"effect\":\"{}\"}}", effect.as_str());
                }
                Verdict::ConfirmationRequired(effect, reason) => {
                    out.push_str("{\"status\":\"confirmation_required\",\"capabilityId\":");
                    push_json_str(&mut out, capability_id);
                    let _ = write!(out, ",\"effect\":\"{}\",\"reason\":", effect.as_str());
                    push_json_str(&mut out, reason);
                    out.push('}');
                }
            }
        }
        out.push_str("]}");
        if let Some(sink) = sink {
            let _scope = super::shared::CallbackScope::enter(self);
            sink.deliver(&JsonText::from_json(out));
        }
    }
}

struct Taken {
    capability: usize,
    binding_id: u64,
    context: Arc<SemanticContext>,
    answer: PolicyAnswer,
}

/// Takes an answered slot for processing.
fn take_answer(slot: &mut Slot) -> Option<Taken> {
    if !matches!(slot, Slot::Asked { answer: Some(_), .. }) {
        return None;
    }
    match std::mem::replace(slot, Slot::Processing) {
        Slot::Asked {
            capability,
            binding_id,
            context,
            answer: Some(answer),
        } => Some(Taken {
            capability,
            binding_id,
            context,
            answer,
        }),
        _ => None,
    }
}

/// Sets a slot unless the runtime closed or the report settled; true when
/// set.
fn set_if_open(core: &PreflightCore, i: usize, slot: Slot) -> bool {
    let mut inner = core.inner.lock();
    if inner.done || inner.closed {
        return false;
    }
    inner.slots[i] = slot;
    true
}
