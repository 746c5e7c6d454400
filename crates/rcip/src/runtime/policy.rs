//! Policy requests: what the host policy is asked (`RcipPolicyContext`) and
//! where its answer goes (an invocation or a preflight entry).

use super::invoke::{InvocationCore, Payload};
use super::preflight::PreflightCore;
use super::snapshot::Entry;
use super::types::{Decision, NulString, PolicyAnswer, SemanticContext};
use crate::catalog::{Catalog, Effect};
use once_cell::sync::OnceCell;
use std::sync::Arc;

/// The default policy (PIPELINE.md section 4): read → allow; confirmed →
/// allow; destructive → confirm; write and external → deny.
pub(crate) fn default_decision(effect: Effect, confirmed: bool) -> Decision {
    match effect {
        Effect::Read => Decision::Allow,
        _ if confirmed => Decision::Allow,
        Effect::Destructive => Decision::Confirm { reason: None },
        Effect::Write | Effect::External => Decision::Deny { reason: None },
    }
}

pub(crate) enum PolicyTarget {
    Invocation(Arc<InvocationCore>),
    Preflight(Arc<PreflightCore>, usize),
}

/// One question to the host policy.
pub(crate) struct PolicyCore {
    pub target: PolicyTarget,
    pub invocation_id: Option<Arc<str>>,
    catalog: Catalog,
    capability: usize,
    entry: Entry,
    payload: Arc<Payload>,
    context: Arc<SemanticContext>,
    confirmed: bool,
    phase: &'static str,
    context_json: OnceCell<NulString>,
    capability_json: OnceCell<NulString>,
    /// The runtime's principal, read on the first ask.
    principal: OnceCell<Option<Arc<NulString>>>,
}

impl PolicyCore {
    #[allow(clippy::too_many_arguments)] // one argument per field of the PolicyCore it builds
    pub(crate) fn new(
        target: PolicyTarget,
        invocation_id: Option<Arc<str>>,
        catalog: Catalog,
        capability: usize,
        entry: Entry,
        payload: Arc<Payload>,
        context: Arc<SemanticContext>,
        confirmed: bool,
        phase: &'static str,
    ) -> PolicyCore {
        PolicyCore {
            target,
            invocation_id,
            catalog,
            capability,
            entry,
            payload,
            context,
            confirmed,
            phase,
            context_json: OnceCell::new(),
            capability_json: OnceCell::new(),
            principal: OnceCell::new(),
        }
    }

    /// The runtime's principal as NUL-terminated JSON text
    /// ([`Host::set_principal`](super::Host::set_principal)), as it was when
    /// first asked; `None` when none is set (or the runtime is gone).
    pub(crate) fn principal(&self) -> Option<&NulString> {
        self.principal
            .get_or_init(|| {
                let shared = match &self.target {
                    PolicyTarget::Invocation(core) => core.shared.upgrade(),
                    PolicyTarget::Preflight(core, _) => core.shared.upgrade(),
                };
                shared.and_then(|s| s.principal.lock().clone())
            })
            .as_deref()
    }

    /// The capability id asked about.
    pub(crate) fn capability_id(&self) -> &str {
        &self.catalog.capabilities()[self.capability].id
    }

    /// The capability's declared effect.
    pub(crate) fn effect(&self) -> Effect {
        self.catalog.capabilities()[self.capability].effect
    }

    /// True for an approved confirmation's re-run.
    pub(crate) fn confirmed(&self) -> bool {
        self.confirmed
    }

    /// `"invoke"` or `"preflight"`.
    pub(crate) fn phase(&self) -> &'static str {
        self.phase
    }

    /// The semantic context captured before the policy was asked.
    pub(crate) fn semantic_context(&self) -> &SemanticContext {
        &self.context
    }

    /// The input as compact NUL-terminated JSON text.
    pub(crate) fn nul_input_json(&self) -> &NulString {
        self.payload.nul_text()
    }

    /// The capability's live snapshot entry as JSON text (the `capability`
    /// member of [`context_json`](Self::context_json)), built on first
    /// request.
    pub(crate) fn nul_capability_json(&self) -> &NulString {
        self.capability_json.get_or_init(|| {
            let def = &self.catalog.capabilities()[self.capability];
            let mut out = String::with_capacity(def.snapshot_prefix.len() + 170);
            out.push_str(&def.snapshot_prefix);
            self.entry
                .write_live_fields(self.context.is_current(&def.scope_ids), &mut out);
            NulString::new(out)
        })
    }

    /// The decision the default policy gives this request.
    pub(crate) fn default_decision(&self) -> Decision {
        default_decision(self.effect(), self.confirmed)
    }

    /// `{"capability": <live capability snapshot>, "input", "semanticContext",
    /// "confirmed", "phase"}` as JSON text, built on first request.
    pub(crate) fn context_json(&self) -> &str {
        self.nul_context_json().as_str()
    }

    pub(crate) fn nul_context_json(&self) -> &NulString {
        self.context_json.get_or_init(|| {
            let def = &self.catalog.capabilities()[self.capability];
            // Sized for the whole text, so that a large input does not make
            // the buffer grow: the fixed keys and the live fields without
            // an availability reason take at most 170 bytes, and the rest of
            // the 256 spare is room for a short reason.
            let text = self.payload.text();
            let context = self.context.json();
            let mut out = String::with_capacity(def.snapshot_prefix.len() + text.len() + context.len() + 256);
            out.push_str("{\"capability\":");
            out.push_str(&def.snapshot_prefix);
            self.entry
                .write_live_fields(self.context.is_current(&def.scope_ids), &mut out);
            out.push_str(",\"input\":");
            out.push_str(text);
            out.push_str(",\"semanticContext\":");
            out.push_str(context);
            out.push_str(if self.confirmed {
                ",\"confirmed\":true"
            } else {
                ",\"confirmed\":false"
            });
            out.push_str(",\"phase\":\"");
            out.push_str(self.phase);
            out.push_str("\"}");
            NulString::new(out)
        })
    }

    /// Delivers the answer to its target.
    pub(crate) fn settle(&self, answer: PolicyAnswer) {
        match &self.target {
            PolicyTarget::Invocation(core) => {
                if let Some(shared) = core.shared.upgrade() {
                    shared.policy_settled(core, answer);
                }
            }
            PolicyTarget::Preflight(core, index) => {
                if let Some(shared) = core.shared.upgrade() {
                    shared.preflight_policy_settled(core, *index, answer);
                }
            }
        }
    }
}
