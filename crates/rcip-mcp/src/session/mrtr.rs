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
use crate::state::{self, AnswersState, ConfirmationState, Consumed, OpenedState, StateError};
use crate::tools;
use rcip::runtime::{CancelToken, CarriedConfirmation, ElicitRefusal, Host, SemanticContext};
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

/// How long a state of answers ([`state::AnswersState`]) is honoured
/// after it was issued, in milliseconds (10 minutes): long enough for a
/// user to answer a form, short enough that a state read off a log soon
/// stops replaying anything.
pub(crate) const ANSWERS_TTL_MS: i64 = 600_000;

/// The most questions one run of a handler asks (answered and new
/// together); a handler asking more is refused (`INVALID_ARGUMENT`).
pub(crate) const MAX_QUESTIONS: usize = 64;

/// What a re-sent modern `tools/call` carried.
pub(crate) struct Retry {
    /// `params.requestState` as sent.
    pub state: Option<String>,
    /// `params.inputResponses`, when present: question key → the client's
    /// result.
    pub responses: Option<Map<String, Value>>,
}

impl Retry {
    /// Takes `requestState` and `inputResponses` out of a modern call's
    /// params: `Ok(None)` when there is neither (a first call), `Err` for a
    /// state that is not a string or answers that are not an object
    /// (`null` included: MRTR's `inputResponses` is a map).
    pub(crate) fn take(p: &mut Map<String, Value>) -> Result<Option<Retry>, (i64, String)> {
        let responses = match p.remove("inputResponses") {
            None => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => {
                return Err((
                    INVALID_PARAMS,
                    "Invalid params: \"inputResponses\" must be an object (request key -> the client's result)".into(),
                ))
            }
        };
        let state = match p.remove("requestState") {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => {
                return Err((
                    INVALID_PARAMS,
                    "Invalid params: \"requestState\" must be a string".into(),
                ))
            }
        };
        if state.is_none() && responses.is_none() {
            return Ok(None);
        }
        Ok(Some(Retry { state, responses }))
    }
}

/// A modern call's questions (**rcip**, docs/MCP.md "Questions without
/// sessions"): the answers the retry brought, which of them the handler
/// used in this run, and the questions still without an answer.
#[derive(Default)]
pub(crate) struct Questions {
    /// Question key → the client's result: the verified state's answers,
    /// then the retry's `inputResponses` for the other keys.
    answers: Map<String, Value>,
    /// The answers this run's questions used (the next state carries them).
    used: Map<String, Value>,
    /// Question key → `{"method", "params"}`: this run's questions without
    /// a usable answer, the next `InputRequiredResult`'s `inputRequests`.
    inputs: Map<String, Value>,
    /// Unkeyed questions so far (`rcip/ask/N`).
    numbered: u32,
}

impl Questions {
    /// Seeds the answers: `sealed` (a verified state's) first, then
    /// `responses` for keys `sealed` has not.
    pub(super) fn seed(&mut self, sealed: Map<String, Value>, responses: Option<Map<String, Value>>) {
        self.answers = sealed;
        for (k, v) in responses.into_iter().flatten() {
            self.answers.entry(k).or_insert(v);
        }
    }

    /// A handler's question: `Ok(Some(answer))` when the retry answered
    /// it in the shape `method` returns, `Ok(None)` when it becomes an
    /// input request (the handler hears `cancel`/`cancelled` and runs again
    /// with the answer), `Err` for a key asked twice or too many questions.
    pub(super) fn ask(
        &mut self,
        question: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Option<Result<Value, Value>>, ElicitRefusal> {
        if self.used.len() + self.inputs.len() >= MAX_QUESTIONS {
            return Err(ElicitRefusal::Invalid(format!(
                "a handler asks at most {MAX_QUESTIONS} questions in one call"
            )));
        }
        let key = match question {
            Some(k) => k.to_string(),
            None => {
                self.numbered += 1;
                format!("rcip/ask/{}", self.numbered)
            }
        };
        if self.used.contains_key(&key) || self.inputs.contains_key(&key) {
            return Err(ElicitRefusal::Invalid(format!(
                "question key {key:?} was already asked in this call"
            )));
        }
        match self.answers.get(&key) {
            Some(answer) if answer_fits(method, answer) => {
                self.used.insert(key, answer.clone());
                Ok(Some(Ok(answer.clone())))
            }
            // Missing, or not an answer to this question: asked again
            // (MRTR "Error Handling").
            _ => {
                self.inputs.insert(key, json!({"method": method, "params": params}));
                Ok(None)
            }
        }
    }

    /// The questions without an answer and the answers used, when this
    /// run asked anything it has no answer for.
    pub(super) fn take_open(&mut self) -> Option<(Map<String, Value>, Map<String, Value>)> {
        if self.inputs.is_empty() {
            return None;
        }
        Some((std::mem::take(&mut self.inputs), std::mem::take(&mut self.used)))
    }
}

/// Whether `answer` has the shape of the client's result for `method`:
/// an `ElicitResult` (`action` accept, decline or cancel; an accept's
/// `content` an object when present), a `CreateMessageResult` (`role` a
/// string, `content` a block or an array of blocks), a `ListRootsResult`
/// (`roots` an array).
fn answer_fits(method: &str, answer: &Value) -> bool {
    let Value::Object(m) = answer else {
        return false;
    };
    match method {
        "elicitation/create" => match m.get("action").and_then(Value::as_str) {
            Some("accept") => m.get("content").is_none_or(Value::is_object),
            Some("decline") | Some("cancel") => true,
            _ => false,
        },
        "sampling/createMessage" => {
            m.get("role").is_some_and(Value::is_string)
                && m.get("content").is_some_and(|c| c.is_object() || c.is_array())
        }
        "roots/list" => m.get("roots").is_some_and(Value::is_array),
        _ => false,
    }
}

/// The client capability a handler's request needs: `elicitation`,
/// `sampling` or `roots`.
pub(super) fn capability_of(method: &str) -> &'static str {
    match method {
        "sampling/createMessage" => "sampling",
        "roots/list" => "roots",
        _ => "elicitation",
    }
}

/// Whether `capabilities` declare what `method` needs (form elicitation,
/// sampling, roots).
pub(super) fn declares_for(capabilities: &Map<String, Value>, method: &str) -> bool {
    match method {
        "elicitation/create" => declares_form(capabilities),
        "sampling/createMessage" | "roots/list" => {
            capabilities.get(capability_of(method)).is_some_and(Value::is_object)
        }
        _ => false,
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

    /// Opens a retry's `requestState` for the call `key` of
    /// `capability_id` with `input` (module docs, step 1): a confirmation,
    /// or a handler's answers so far (refused once past their expiry).
    /// Refusals are `-32602` with `data.reason`, counted.
    pub(super) fn open_retry(
        &self,
        key: &str,
        capability_id: &str,
        input: &Value,
        token: &str,
    ) -> Result<OpenedState, RpcError> {
        let keys = self.request_state.keys.as_ref().expect("resolved at build");
        let digest = state::request_digest(capability_id, input);
        let principal = self.principal_of(key);
        let refuse = |e: StateError| {
            self.request_state.counters.record(&e);
            RpcError {
                code: INVALID_PARAMS,
                message: format!("Invalid params: requestState refused: {e}"),
                data: Some(json!({"reason": e.reason()})),
            }
        };
        let opened = state::open_any(keys, token, principal.as_deref(), METHOD, &digest).map_err(refuse)?;
        if let OpenedState::Answers(a) = &opened {
            if a.expires_at_ms <= super::wall_ms() {
                return Err(refuse(StateError::Expired));
            }
        }
        self.request_state.counters.record_opened();
        Ok(opened)
    }

    /// A handler's questions this run could not answer, as the call's
    /// `InputRequiredResult` (module docs, "Questions"): `None` when there
    /// are none (or the call is answered `-32021` for an undeclared
    /// capability instead).
    pub(super) fn input_required(&self, context: &CallContext) -> Option<Result<Value, RpcError>> {
        let (inputs, used) = {
            let mut st = self.state.lock();
            let call = st.calls.get_mut(&context.key)?;
            if call.missing.is_some() {
                return None;
            }
            call.questions.take_open()?
        };
        let answers = AnswersState {
            principal: self.principal_of(&context.key),
            method: METHOD.into(),
            request_digest: state::request_digest(&context.tool, &context.input),
            expires_at_ms: super::wall_ms().saturating_add(ANSWERS_TTL_MS),
            answers: used,
        };
        let keys = self.request_state.keys.as_ref().expect("resolved at build");
        let token = state::seal_answers(keys, &answers);
        if token.len() > state::MAX_TOKEN_CHARS {
            // The answers are the client's: too large to carry is its error.
            return Some(Err(RpcError {
                code: INVALID_PARAMS,
                message: format!(
                    "Invalid params: the answers this call's questions got so far need {} characters of request state, more than the {} one carries; the call cannot ask more",
                    token.len(),
                    state::MAX_TOKEN_CHARS
                ),
                data: Some(json!({"reason": "answers_too_large"})),
            }));
        }
        self.request_state.counters.record_sealed();
        Some(Ok(json!({
            "resultType": "input_required",
            "inputRequests": inputs,
            "requestState": token,
        })))
    }

    /// A re-sent call whose `requestState` holds a confirmation: consumed
    /// and resumed on this request's runtime (module docs). `Ok(false)`:
    /// no answer to our question, the call is to run from the start.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resume_statelessly(
        self: &Arc<Self>,
        context: CallContext,
        opened: ConfirmationState,
        responses: Option<&Map<String, Value>>,
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
                "Invalid params: requestState: this server asks its users nothing (its confirmations are approved by the host), so no confirmation state of it exists".into(),
            ));
        }
        let answer = responses.and_then(|r| r.get(CONFIRMATION_INPUT));
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
