//! Confirmations asked by elicitation in a session (2025 era, **rcip**
//! docs/MCP.md "Confirmation by elicitation"): `elicitation/create` for a
//! pending confirmation, its answer resolving it on the call's runtime, and
//! the deadline that ends the question with the confirmation. The stateless
//! form is in `mrtr.rs`.

use super::*;

pub(super) struct Elicitation {
    pub(super) call: String,
    pub(super) confirmation_id: String,
    pub(super) output_wrapped: bool,
    /// Our request id (the JSON value), for `notifications/cancelled`.
    pub(super) request: Value,
}

/// The pending confirmations of `host`'s runtime (0 if it cannot say).
pub(super) fn pending_confirmations(host: &Host) -> usize {
    host.stats_json()
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| v.get("pendingConfirmations").and_then(Value::as_u64))
        .map_or(0, |n| n as usize)
}

impl Inner {
    /// Resolves the confirmation of an elicitation (legacy calls only: on
    /// the session's runtime) with the user's answer.
    pub(super) fn resolve_elicited(self: &Arc<Self>, e: &Elicitation, approved: bool) {
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
    pub(super) fn resolve(self: &Arc<Self>, call: &CallContext, confirmation_id: &str, approved: bool) {
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
    pub(super) fn ask_user(
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
    pub(super) fn watch_expiry(self: &Arc<Self>, request_key: String, at: Instant) {
        let weak = Arc::downgrade(self);
        rcip::runtime::schedule_at(at, move || {
            let Some(inner) = weak.upgrade() else { return };
            let job_inner = inner.clone();
            inner.dispatch(move || job_inner.check_expiry(request_key));
        });
    }

    pub(super) fn check_expiry(self: &Arc<Self>, request_key: String) {
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
}
