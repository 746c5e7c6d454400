//! Confirmations asked statelessly (MCP 2026-07-28 "Multi Round-Trip
//! Requests", **rcip** docs/MCP.md "Confirmations without sessions").
//!
//! A modern `tools/call` whose policy answers `confirm`, under
//! [`ConfirmationMode::Elicit`](crate::ConfirmationMode::Elicit) and from a
//! client that declared form elicitation, is answered with an
//! `InputRequiredResult`: one `elicitation/create` input request (key
//! [`CONFIRMATION_INPUT`]) and a sealed `requestState`
//! ([`crate::state`]). The runtime that opened the confirmation ends with
//! the response; the client's retry (a new request id, the same tool and
//! arguments, `inputResponses` and the `requestState`) may reach any
//! runtime of the same catalog, which resumes the confirmation
//! ([`Host::resume_confirmation`]) after the state was verified and
//! consumed:
//!
//! 1. the state is opened: size, encoding, version, key, signature,
//!    payload, principal, method and the digest of the tool and its input,
//!    in that order ([`state::open`]); a refusal is `-32602` with
//!    `data.reason`, counted;
//! 2. no answer under [`CONFIRMATION_INPUT`]: the call runs again from the
//!    start, so the user is asked again (MRTR "Error Handling": a new
//!    `InputRequiredResult` for missing input); an answer that is not an
//!    `ElicitResult` is `-32602`;
//! 3. the state's nonce is consumed in the store until the confirmation's
//!    expiry plus [`RETENTION_SLACK_MS`]: a state seen before is resolved
//!    as an ended confirmation (on a fresh runtime `failed
//!    CONFIRMATION_NOT_FOUND`; on the runtime that still knows it, its
//!    receipt), and a store that is full or unavailable fails the call
//!    closed (`-32603`, nothing runs);
//! 4. the confirmation is resumed with the answer: accept approves,
//!    decline and cancel decline; the core checks decline, expiry, binding
//!    and context in the order of a pending confirmation (PIPELINE.md
//!    section 5, "Confirmations that cross runtimes").

use super::{CallContext, Inner};
use crate::jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS};
use crate::modern::RpcError;
use crate::state::{self, ConfirmationState, Consumed};
use crate::tools;
use rcip::runtime::{CancelToken, CarriedConfirmation, Host, SemanticContext};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The key of the one input request a stateless confirmation sends.
pub(crate) const CONFIRMATION_INPUT: &str = "rcip/confirmation";

/// How long past a confirmation's expiry its used state stays recorded,
/// in milliseconds: covers a runtime clock behind the server's wall clock
/// (a state replayed after the wall-clock expiry but before the runtime's
/// is still refused as used).
pub(crate) const RETENTION_SLACK_MS: i64 = 300_000;

/// The JSON-RPC method the states of this module are bound to.
const METHOD: &str = "tools/call";

/// What a re-sent modern `tools/call` carried.
pub(crate) struct Retry {
    /// `params.requestState` as sent.
    pub state: String,
    /// `params.inputResponses`, when present.
    pub responses: Option<Value>,
}

impl Retry {
    /// Takes `requestState` and `inputResponses` out of a modern call's
    /// params: `Ok(None)` when there is no state (a first call; answers
    /// without a state are ignored, as unrequested input), `Err` for a
    /// state or answers of the wrong type.
    pub(crate) fn take(p: &mut Map<String, Value>) -> Result<Option<Retry>, (i64, String)> {
        let responses = p.remove("inputResponses");
        let state = match p.remove("requestState") {
            None => return Ok(None),
            Some(Value::String(s)) => s,
            Some(_) => {
                return Err((
                    INVALID_PARAMS,
                    "Invalid params: \"requestState\" must be a string".into(),
                ))
            }
        };
        match &responses {
            None | Some(Value::Object(_)) => Ok(Some(Retry { state, responses })),
            Some(_) => Err((
                INVALID_PARAMS,
                "Invalid params: \"inputResponses\" must be an object (request key -> the client's result)".into(),
            )),
        }
    }
}

impl Inner {
    /// The principal a modern request runs for: its per-request runtime's
    /// ([`RequestRuntime::principal`](crate::RequestRuntime::principal)),
    /// else the session's ([`McpSession::set_principal`](crate::McpSession::set_principal)).
    pub(super) fn principal_of(&self, key: &str) -> Option<String> {
        let from_runtime = self
            .state
            .lock()
            .calls
            .get(key)
            .and_then(|c| c.runtime.as_ref())
            .and_then(|r| r.principal());
        from_runtime.or_else(|| self.principal.lock().clone())
    }

    /// Answers a modern call's `confirmation_required` outcome with an
    /// `InputRequiredResult` asking the user. `Err` (the note for the
    /// ordinary result) when it cannot: the request did not declare form
    /// elicitation, or the confirmation is no longer pending.
    pub(super) fn ask_statelessly(
        self: &Arc<Self>,
        context: &CallContext,
        outcome: &Value,
        confirmation_id: &str,
        form_elicitation: bool,
    ) -> Result<(), &'static str> {
        if !form_elicitation {
            return Err("This request did not declare form elicitation in its client capabilities, so its user cannot be asked here.");
        }
        let Some(carried) = context.host.carry_confirmation(confirmation_id) else {
            return Err("The confirmation ended before its user could be asked.");
        };
        let context_json = rcip::json::parse_str(carried.context.json(), &rcip::json::Limits::UNLIMITED)
            .unwrap_or_else(|_| json!({"activeScopeIds": []}));
        let sealed = ConfirmationState::new(
            METHOD,
            state::request_digest(&carried.capability_id, &context.input),
            carried.confirmation_id.clone(),
            carried.invocation_id.clone(),
            carried.capability_id.clone(),
            carried.expires_at,
        )
        .map_err(|_| "No request state could be drawn (the random source failed).")?
        .with_principal(self.principal_of(&context.key))
        .with_context(context_json);
        let keys = self.request_state.keys.as_ref().expect("resolved at build");
        let token = state::seal(keys, &sealed);
        if token.len() > state::MAX_TOKEN_CHARS {
            // Its context is too large to travel in a request state.
            return Err("The request's context is too large to carry in a request state, so its user cannot be asked statelessly.");
        }
        self.request_state.counters.record_sealed();
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {
                CONFIRMATION_INPUT: {
                    "method": "elicitation/create",
                    "params": tools::elicitation_params(outcome, &context.input, &self.application),
                }
            },
            "requestState": token,
        });
        self.finish(&context.key, Ok(result));
        Ok(())
    }

    /// A re-sent call with a `requestState`: verified, consumed and resumed
    /// on this request's runtime (module docs). `Ok(false)`: no answer to
    /// our question, the call is to run from the start.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resume_statelessly(
        self: &Arc<Self>,
        context: CallContext,
        retry: &Retry,
        capability_id: &str,
        input_text: &str,
        token: &CancelToken,
        form_elicitation: bool,
    ) -> Result<bool, RpcError> {
        let refused = |reason: &'static str, message: String| RpcError {
            code: INVALID_PARAMS,
            message,
            data: Some(json!({"reason": reason})),
        };
        if !self.elicit {
            return Err(refused(
                "not_asked",
                "Invalid params: requestState: this server asks its users nothing (its confirmations are approved by the host), so no request state of it exists".into(),
            ));
        }
        let keys = self.request_state.keys.as_ref().expect("resolved at build");
        let digest = state::request_digest(capability_id, &context.input);
        let principal = self.principal_of(&context.key);
        let opened = match state::open(keys, &retry.state, principal.as_deref(), METHOD, &digest) {
            Ok(s) => s,
            Err(e) => {
                self.request_state.counters.record(&e);
                return Err(refused(
                    e.reason(),
                    format!("Invalid params: requestState refused: {e}"),
                ));
            }
        };
        self.request_state.counters.record_opened();
        let answer = retry.responses.as_ref().and_then(|r| r.get(CONFIRMATION_INPUT));
        let Some(answer) = answer else {
            return Ok(false);
        };
        let approved = match answer.get("action").and_then(Value::as_str) {
            Some("accept") => true,
            Some("decline") | Some("cancel") => false,
            _ => {
                return Err(refused(
                    "malformed_response",
                    format!("Invalid params: inputResponses[\"{CONFIRMATION_INPUT}\"] must be an ElicitResult (\"action\": \"accept\", \"decline\" or \"cancel\")"),
                ))
            }
        };
        // A form answer only approves when the request still declares form
        // elicitation (what it was asked through).
        let approved = approved && form_elicitation;
        let carried = CarriedConfirmation {
            confirmation_id: opened.confirmation_id.clone(),
            invocation_id: opened.invocation_id.clone(),
            capability_id: opened.capability_id.clone(),
            expires_at: opened.expires_at_ms,
            context: SemanticContext::from_value(&opened.context).map_err(|e| RpcError {
                code: INTERNAL_ERROR,
                message: format!("Internal error: the request state's context is not a context: {e}"),
                data: None,
            })?,
        };
        let store = self.request_state.store.as_ref().expect("resolved at build");
        let retain_until = opened.expires_at_ms.saturating_add(RETENTION_SLACK_MS);
        let host: Host = context.host.clone();
        let sink = self.outcome_sink(context);
        match store.consume(&opened.nonce, retain_until, super::wall_ms()) {
            Ok(Consumed::First) => {
                host.resume_confirmation(&carried, approved, input_text.as_bytes(), Some(token), sink)
            }
            // Used before: an ended confirmation, as the runtime answers one.
            Ok(Consumed::Already) => host.resolve_confirmation(&carried.confirmation_id, approved, sink),
            Err(e) => {
                return Err(RpcError {
                    code: INTERNAL_ERROR,
                    message: format!(
                        "Internal error: the confirmation could not be checked for reuse ({e}); nothing ran"
                    ),
                    data: None,
                })
            }
        }
        .map_err(|e| RpcError::from(super::internal(e)))?;
        Ok(true)
    }
}

/// Whether client capabilities (`initialize`'s, or a modern request's
/// `_meta`) declare form elicitation: `{"form": {...}}`, or an empty
/// object (the 2025-11-25 backwards-compatible spelling of form support).
pub(super) fn declares_form(capabilities: &Map<String, Value>) -> bool {
    match capabilities.get("elicitation") {
        Some(Value::Object(e)) => e.is_empty() || e.get("form").is_some_and(Value::is_object),
        _ => false,
    }
}
