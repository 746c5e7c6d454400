//! Protocol records: error codes, outcomes, availability, semantic context,
//! lifecycle events, policy decisions, and their JSON shapes (FORMAT.md
//! "Record shapes").

use crate::catalog::Effect;
use crate::schema::ValidationIssue;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt::Write as _;
use std::sync::Arc;

/// The RCIP error codes an outcome can carry (PIPELINE.md sections 4–6);
/// serde reads and writes the protocol's name (`"INPUT_INVALID"`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// `INVOCATION_ALREADY_ACTIVE`: the caller's invocation id is in use by
    /// an unsettled invocation (`failed`).
    InvocationAlreadyActive,
    /// `INPUT_INVALID`: the input is not JSON or does not match the input
    /// schema; `validationIssues` say where (`failed`).
    InputInvalid,
    /// `CAPABILITY_NOT_FOUND`: no capability of the catalog has the id
    /// (`failed`).
    CapabilityNotFound,
    /// `CAPABILITY_UNBOUND`: the capability has no live binding (`failed`).
    CapabilityUnbound,
    /// `CAPABILITY_UNAVAILABLE`: the availability check said no, or failed
    /// (`failed`).
    CapabilityUnavailable,
    /// `POLICY_EVALUATION_FAILED`: the policy failed or answered no
    /// decision (`failed`).
    PolicyEvaluationFailed,
    /// `POLICY_DENIED`: the policy denied the call (`denied`).
    PolicyDenied,
    /// `EXECUTION_ABORTED`: cancelled, or overtaken by the runtime's close
    /// (`failed`).
    ExecutionAborted,
    /// `EXECUTION_FAILED`: the handler failed, the context changed, or the
    /// binding changed (`failed`).
    ExecutionFailed,
    /// `OUTPUT_INVALID`: the handler's output is not JSON or does not match
    /// the output schema (`failed`).
    OutputInvalid,
    /// `CONFIRMATION_NOT_FOUND`: no open confirmation has the id (`failed`).
    ConfirmationNotFound,
    /// `CONFIRMATION_EXPIRED`: the confirmation expired before it was
    /// approved (`failed`).
    ConfirmationExpired,
    /// `CONFIRMATION_DECLINED`: the host declined the confirmation
    /// (`denied`).
    ConfirmationDeclined,
    /// `PREFLIGHT_STALE`: discovery changed while a preflight ran (in a
    /// preflight report entry).
    PreflightStale,
}

impl ErrorCode {
    /// The protocol's name of the code.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvocationAlreadyActive => "INVOCATION_ALREADY_ACTIVE",
            ErrorCode::InputInvalid => "INPUT_INVALID",
            ErrorCode::CapabilityNotFound => "CAPABILITY_NOT_FOUND",
            ErrorCode::CapabilityUnbound => "CAPABILITY_UNBOUND",
            ErrorCode::CapabilityUnavailable => "CAPABILITY_UNAVAILABLE",
            ErrorCode::PolicyEvaluationFailed => "POLICY_EVALUATION_FAILED",
            ErrorCode::PolicyDenied => "POLICY_DENIED",
            ErrorCode::ExecutionAborted => "EXECUTION_ABORTED",
            ErrorCode::ExecutionFailed => "EXECUTION_FAILED",
            ErrorCode::OutputInvalid => "OUTPUT_INVALID",
            ErrorCode::ConfirmationNotFound => "CONFIRMATION_NOT_FOUND",
            ErrorCode::ConfirmationExpired => "CONFIRMATION_EXPIRED",
            ErrorCode::ConfirmationDeclined => "CONFIRMATION_DECLINED",
            ErrorCode::PreflightStale => "PREFLIGHT_STALE",
        }
    }

    /// rcip's default message for the code.
    pub fn default_message(self) -> &'static str {
        match self {
            ErrorCode::InvocationAlreadyActive => "An invocation with this id is already active.",
            ErrorCode::InputInvalid => "The capability input does not match its declared schema.",
            ErrorCode::CapabilityNotFound => "The requested capability is not part of the application catalog.",
            ErrorCode::CapabilityUnbound => "The requested capability has no live application binding.",
            ErrorCode::CapabilityUnavailable => "The capability is not available right now.",
            ErrorCode::PolicyEvaluationFailed => "The host policy could not evaluate the request.",
            ErrorCode::PolicyDenied => "The host policy denied the operation.",
            ErrorCode::ExecutionAborted => "The capability invocation was cancelled.",
            ErrorCode::ExecutionFailed => "The application could not complete the capability.",
            ErrorCode::OutputInvalid => "The capability output does not match its declared schema.",
            ErrorCode::ConfirmationNotFound => "The confirmation request no longer exists.",
            ErrorCode::ConfirmationExpired => "The confirmation request expired.",
            ErrorCode::ConfirmationDeclined => "The confirmation request was declined.",
            ErrorCode::PreflightStale => {
                "Application discovery changed during preflight. Check the current state again."
            }
        }
    }
}

/// Messages rcip uses where the pipeline names a specific situation.
pub(crate) mod messages {
    pub const INPUT_NOT_JSON: &str = "The capability input is not a JSON value.";
    pub const OUTPUT_NOT_JSON: &str = "The capability output is not a JSON value.";
    pub const CONTEXT_CHANGED: &str = "Application context changed. Request the operation again.";
    pub const NO_LONGER_AVAILABLE: &str = "The capability is no longer available.";
    pub const BINDING_CHANGED: &str = "The capability binding changed. Request the operation again.";
    pub const CONFIRM_ON_CONFIRMED: &str =
        "The host policy asked for confirmation again after approval; the operation is denied.";
    pub const AVAILABILITY_CHECK_FAILED: &str = "The availability check of the capability failed.";
    pub const RUNTIME_CLOSED: &str = "The runtime was closed before the invocation finished.";
}

/// An error inside an outcome: `{"code", "message", "validationIssues"?,
/// "validationIssuesTruncated"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RcipError {
    /// The stable code consumers branch on.
    pub code: ErrorCode,
    /// A human-readable sentence: the code's default message, a message
    /// naming the situation, or host text (a policy's deny reason, an
    /// availability reason) passed on verbatim.
    pub message: String,
    /// `validationIssues` of an `INPUT_INVALID` or `OUTPUT_INVALID` error
    /// (Ajv's shape; `None` on every other code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_issues: Option<Vec<ValidationIssue>>,
    /// The runtime's issue bound left issues out of `validation_issues`
    /// (**rcip**, PIPELINE.md section 8): written as
    /// `"validationIssuesTruncated": true`, and absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub validation_issues_truncated: bool,
}

impl RcipError {
    /// An error with the code's default message.
    pub fn new(code: ErrorCode) -> RcipError {
        RcipError {
            code,
            message: code.default_message().to_string(),
            validation_issues: None,
            validation_issues_truncated: false,
        }
    }

    /// The teardown outcome of work the runtime's close overtook:
    /// `EXECUTION_ABORTED` (PIPELINE.md section 9).
    pub fn runtime_closed() -> RcipError {
        RcipError::with_message(ErrorCode::ExecutionAborted, messages::RUNTIME_CLOSED)
    }

    /// An error with its own message.
    pub fn with_message(code: ErrorCode, message: impl Into<String>) -> RcipError {
        RcipError {
            code,
            message: message.into(),
            validation_issues: None,
            validation_issues_truncated: false,
        }
    }

    pub(crate) fn write_json(&self, out: &mut String) {
        out.push_str("{\"code\":\"");
        out.push_str(self.code.as_str());
        out.push_str("\",\"message\":");
        push_json_str(out, &self.message);
        if let Some(issues) = &self.validation_issues {
            out.push_str(",\"validationIssues\":[");
            for (i, issue) in issues.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"instancePath\":");
                push_json_str(out, &issue.instance_path);
                out.push_str(",\"keyword\":");
                push_json_str(out, &issue.keyword);
                out.push_str(",\"message\":");
                push_json_str(out, &issue.message);
                out.push('}');
            }
            out.push(']');
        }
        if self.validation_issues_truncated {
            out.push_str(",\"validationIssuesTruncated\":true");
        }
        out.push('}');
    }

    /// The error as a JSON value.
    pub fn to_value(&self) -> Value {
        let mut s = String::new();
        self.write_json(&mut s);
        serde_json::from_str(&s).unwrap_or(Value::Null)
    }
}

/// The status of an outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    /// `succeeded`: the handler's output passed the output schema.
    Succeeded,
    /// `failed`: the call could not run or complete; see the error code.
    Failed,
    /// `denied`: the policy or the host's confirmation answer refused it.
    Denied,
    /// `confirmation_required`: the policy asked for a confirmation that
    /// only the host can approve.
    ConfirmationRequired,
}

impl OutcomeStatus {
    /// The protocol's name.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeStatus::Succeeded => "succeeded",
            OutcomeStatus::Failed => "failed",
            OutcomeStatus::Denied => "denied",
            OutcomeStatus::ConfirmationRequired => "confirmation_required",
        }
    }
}

/// The confirmation record of a `confirmation_required` outcome
/// (`{"id", "title", "description", "effect", "expiresAt"}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmationRecord {
    /// The confirmation id the host approves or declines (single use).
    pub id: String,
    /// The capability's title.
    pub title: String,
    /// The capability's description, or the policy's confirm reason.
    pub description: String,
    /// The capability's effect.
    pub effect: Effect,
    /// Epoch milliseconds.
    pub expires_at: i64,
}

impl ConfirmationRecord {
    pub(crate) fn write_json(&self, out: &mut String) {
        out.push_str("{\"id\":");
        push_json_str(out, &self.id);
        out.push_str(",\"title\":");
        push_json_str(out, &self.title);
        out.push_str(",\"description\":");
        push_json_str(out, &self.description);
        out.push_str(",\"effect\":\"");
        out.push_str(self.effect.as_str());
        let _ = write!(out, "\",\"expiresAt\":{}}}", self.expires_at);
    }
}

/// The result of an invocation (`RcipInvocationOutcome`), FORMAT.md shape
/// O: `{"status", "invocationId", "capabilityId", "output" | "error" |
/// "confirmation"}`.
///
/// This type is the record's description in Rust: serde reads and writes
/// exactly the JSON the runtime delivers to outcome sinks (a test compares
/// the runtime's own writer with it), so a Rust host reads a delivered
/// outcome with [`Outcome::from_json`] or gets one from
/// [`Client::invoke_outcome`](super::Client::invoke_outcome). Unknown
/// members are ignored when reading, so a reader keeps working when a later
/// version adds a field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Outcome {
    /// `succeeded`.
    Succeeded {
        /// The invocation id (the caller's, or one rcip generated).
        invocation_id: Arc<str>,
        /// The capability invoked.
        capability_id: Arc<str>,
        /// The handler's output, valid against the output schema.
        output: Value,
    },
    /// `failed`.
    Failed {
        /// The invocation id.
        invocation_id: Arc<str>,
        /// The capability invoked (`"unknown"` for `CONFIRMATION_NOT_FOUND`).
        capability_id: Arc<str>,
        /// Why.
        error: RcipError,
    },
    /// `denied`.
    Denied {
        /// The invocation id.
        invocation_id: Arc<str>,
        /// The capability invoked.
        capability_id: Arc<str>,
        /// `POLICY_DENIED` or `CONFIRMATION_DECLINED`.
        error: RcipError,
    },
    /// `confirmation_required`.
    ConfirmationRequired {
        /// The invocation id.
        invocation_id: Arc<str>,
        /// The capability invoked.
        capability_id: Arc<str>,
        /// The confirmation the host may approve or decline.
        confirmation: ConfirmationRecord,
    },
}

impl Outcome {
    /// The outcome's status.
    pub fn status(&self) -> OutcomeStatus {
        match self {
            Outcome::Succeeded { .. } => OutcomeStatus::Succeeded,
            Outcome::Failed { .. } => OutcomeStatus::Failed,
            Outcome::Denied { .. } => OutcomeStatus::Denied,
            Outcome::ConfirmationRequired { .. } => OutcomeStatus::ConfirmationRequired,
        }
    }

    /// The invocation id.
    pub fn invocation_id(&self) -> &str {
        match self {
            Outcome::Succeeded { invocation_id, .. }
            | Outcome::Failed { invocation_id, .. }
            | Outcome::Denied { invocation_id, .. }
            | Outcome::ConfirmationRequired { invocation_id, .. } => invocation_id,
        }
    }

    /// The capability id (`"unknown"` for CONFIRMATION_NOT_FOUND).
    pub fn capability_id(&self) -> &str {
        match self {
            Outcome::Succeeded { capability_id, .. }
            | Outcome::Failed { capability_id, .. }
            | Outcome::Denied { capability_id, .. }
            | Outcome::ConfirmationRequired { capability_id, .. } => capability_id,
        }
    }

    /// The error, for `failed` and `denied`.
    pub fn error(&self) -> Option<&RcipError> {
        match self {
            Outcome::Failed { error, .. } | Outcome::Denied { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The outcome record as JSON text (FORMAT.md shape O).
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(192);
        self.write_json(&mut out);
        out
    }

    /// The `succeeded` record with `output_text` (canonical JSON of the
    /// output) embedded as it is. `capability_id` is a catalog id (only a
    /// capability of the catalog succeeds): an identifier, which never
    /// needs escaping.
    pub(crate) fn succeeded_json(invocation_id: &str, capability_id: &str, output_text: &str) -> JsonText {
        debug_assert!(crate::catalog::is_identifier(capability_id));
        // 69 bytes of keys and punctuation, quotes included, and the NUL.
        let mut out = String::with_capacity(80 + invocation_id.len() + capability_id.len() + output_text.len());
        out.push_str("{\"status\":\"succeeded\",\"invocationId\":");
        push_json_str(&mut out, invocation_id);
        out.push_str(",\"capabilityId\":\"");
        out.push_str(capability_id);
        out.push_str("\",\"output\":");
        out.push_str(output_text);
        out.push('}');
        JsonText::from_json(out)
    }

    /// The outcome record as delivered to sinks.
    pub(crate) fn to_json_text(&self) -> JsonText {
        let mut out = String::with_capacity(192);
        self.write_json(&mut out);
        JsonText::from_json(out)
    }

    fn write_json(&self, out: &mut String) {
        out.push_str("{\"status\":\"");
        out.push_str(self.status().as_str());
        out.push_str("\",\"invocationId\":");
        push_json_str(out, self.invocation_id());
        out.push_str(",\"capabilityId\":");
        push_json_str(out, self.capability_id());
        match self {
            Outcome::Succeeded { output, .. } => {
                out.push_str(",\"output\":");
                push_json_value(out, output);
            }
            Outcome::Failed { error, .. } | Outcome::Denied { error, .. } => {
                out.push_str(",\"error\":");
                error.write_json(out);
            }
            Outcome::ConfirmationRequired { confirmation, .. } => {
                out.push_str(",\"confirmation\":");
                confirmation.write_json(out);
            }
        }
        out.push('}');
    }
}

/// An availability answer (`RcipAvailability`:
/// `{"available", "reasonCode"?, "reason"?}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Availability {
    /// Whether the capability may be invoked now.
    pub available: bool,
    /// `reasonCode`: a host-chosen machine-readable reason (an unavailable
    /// answer usually has one).
    pub reason_code: Option<String>,
    /// `reason`: host text for consumers, passed on verbatim.
    pub reason: Option<String>,
}

impl Availability {
    /// `{"available": true}`.
    pub fn available() -> Availability {
        Availability {
            available: true,
            reason_code: None,
            reason: None,
        }
    }

    /// True for `{"available": true}` with no reason: what a binding without
    /// a check shows too.
    pub fn is_plain_available(&self) -> bool {
        self.available && self.reason_code.is_none() && self.reason.is_none()
    }

    /// What a failing availability check shows (PIPELINE.md section 2).
    pub fn check_failed() -> Availability {
        Availability {
            available: false,
            reason_code: Some("AVAILABILITY_CHECK_FAILED".to_string()),
            reason: Some(messages::AVAILABILITY_CHECK_FAILED.to_string()),
        }
    }

    pub(crate) fn write_json(&self, out: &mut String) {
        out.push_str(if self.available {
            "{\"available\":true"
        } else {
            "{\"available\":false"
        });
        if let Some(code) = &self.reason_code {
            out.push_str(",\"reasonCode\":");
            push_json_str(out, code);
        }
        if let Some(reason) = &self.reason {
            out.push_str(",\"reason\":");
            push_json_str(out, reason);
        }
        out.push('}');
    }
}

/// The semantic context (`RcipSemanticContext`:
/// `{"activeScopeIds": [...], "primaryScopeId"?}`), with its JSON text.
#[derive(Clone, Debug)]
pub struct SemanticContext {
    active_scope_ids: Vec<String>,
    primary_scope_id: Option<String>,
    json: NulString,
}

impl PartialEq for SemanticContext {
    /// Equal when the deduplicated active lists are equal in order and the
    /// primaries are equal (absent differs from `""`); PIPELINE.md section 3.
    fn eq(&self, other: &Self) -> bool {
        self.active_scope_ids == other.active_scope_ids && self.primary_scope_id == other.primary_scope_id
    }
}

impl SemanticContext {
    /// Builds a context; `active_scope_ids` is deduplicated, keeping first
    /// occurrences. No catalog check here (see `Host::set_context`).
    pub fn new(active_scope_ids: Vec<String>, primary_scope_id: Option<String>) -> SemanticContext {
        let mut deduped: Vec<String> = Vec::with_capacity(active_scope_ids.len());
        for id in active_scope_ids {
            if !deduped.contains(&id) {
                deduped.push(id);
            }
        }
        let mut json = String::from("{\"activeScopeIds\":[");
        for (i, id) in deduped.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            push_json_str(&mut json, id);
        }
        json.push(']');
        if let Some(p) = &primary_scope_id {
            json.push_str(",\"primaryScopeId\":");
            push_json_str(&mut json, p);
        }
        json.push('}');
        SemanticContext {
            active_scope_ids: deduped,
            primary_scope_id,
            json: NulString::new(json),
        }
    }

    /// The empty context `{"activeScopeIds": []}`.
    pub fn empty() -> SemanticContext {
        // What `new(Vec::new(), None)` writes, in one allocation (every
        // runtime starts with it).
        SemanticContext {
            active_scope_ids: Vec::new(),
            primary_scope_id: None,
            json: NulString::copy_of("{\"activeScopeIds\":[]}"),
        }
    }

    /// Active scope ids, deduplicated, in order.
    pub fn active_scope_ids(&self) -> &[String] {
        &self.active_scope_ids
    }

    /// The primary scope id, when set.
    pub fn primary_scope_id(&self) -> Option<&str> {
        self.primary_scope_id.as_deref()
    }

    /// The context as JSON text.
    pub fn json(&self) -> &str {
        self.json.as_str()
    }

    /// The context as NUL-terminated JSON text.
    #[inline]
    pub fn json_c_str(&self) -> &std::ffi::CStr {
        self.json.as_c_str()
    }

    /// Parses `{"activeScopeIds": [string...], "primaryScopeId"?: string}`;
    /// any other shape is an error message (PIPELINE.md section 8).
    pub fn from_value(value: &Value) -> Result<SemanticContext, String> {
        let Value::Object(map) = value else {
            return Err(
                "the context must be a JSON object {\"activeScopeIds\": [...], \"primaryScopeId\"?: \"...\"}".into(),
            );
        };
        for key in map.keys() {
            if key != "activeScopeIds" && key != "primaryScopeId" {
                return Err(format!(
                    "the context has no field \"{key}\" (allowed: activeScopeIds, primaryScopeId)"
                ));
            }
        }
        let active = match map.get("activeScopeIds") {
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        _ => return Err(format!("/activeScopeIds/{i} must be a string")),
                    }
                }
                out
            }
            Some(_) => return Err("/activeScopeIds must be an array of scope ids".into()),
            None => return Err("the context needs the field \"activeScopeIds\"".into()),
        };
        let primary = match map.get("primaryScopeId") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("/primaryScopeId must be a string".into()),
        };
        Ok(SemanticContext::new(active, primary))
    }

    /// True when the capability with these scope ids is relevant (`current`):
    /// no scopes, or one shared with the active ids (PIPELINE.md section 2).
    pub fn is_current(&self, scope_ids: &[String]) -> bool {
        scope_ids.is_empty() || scope_ids.iter().any(|s| self.active_scope_ids.iter().any(|a| a == s))
    }
}

/// The phase of a lifecycle event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventPhase {
    /// `requested`: the invocation was accepted for the pipeline.
    Requested,
    /// `started`: the handler was called.
    Started,
    /// `succeeded`: the outcome is `succeeded`.
    Succeeded,
    /// `failed`: the outcome is `failed` (with its `errorCode`).
    Failed,
    /// `denied`: the outcome is `denied` (with its `errorCode`).
    Denied,
    /// `confirmation_requested`: the policy asked for a confirmation.
    ConfirmationRequested,
    /// `confirmation_declined`: the host declined it.
    ConfirmationDeclined,
}

impl EventPhase {
    /// The protocol's name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventPhase::Requested => "requested",
            EventPhase::Started => "started",
            EventPhase::Succeeded => "succeeded",
            EventPhase::Failed => "failed",
            EventPhase::Denied => "denied",
            EventPhase::ConfirmationRequested => "confirmation_requested",
            EventPhase::ConfirmationDeclined => "confirmation_declined",
        }
    }
}

/// A redacted lifecycle event (`{"timestamp", "invocationId",
/// "capabilityId", "phase", "errorCode"?}`): no input, output or message.
/// serde reads and writes that shape ([`LifecycleEvent::from_json`] reads
/// what an [`EventObserver`](super::EventObserver) receives).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleEvent {
    /// Epoch milliseconds.
    pub timestamp: i64,
    /// The invocation the event belongs to.
    pub invocation_id: String,
    /// The capability invoked.
    pub capability_id: String,
    /// Where in the lifecycle the invocation is.
    pub phase: EventPhase,
    /// The outcome's error code, on `failed` and `denied` phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<ErrorCode>,
}

impl LifecycleEvent {
    /// The event as JSON text.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(128);
        let _ = write!(out, "{{\"timestamp\":{},\"invocationId\":", self.timestamp);
        push_json_str(&mut out, &self.invocation_id);
        out.push_str(",\"capabilityId\":");
        push_json_str(&mut out, &self.capability_id);
        out.push_str(",\"phase\":\"");
        out.push_str(self.phase.as_str());
        out.push('"');
        if let Some(code) = self.error_code {
            out.push_str(",\"errorCode\":\"");
            out.push_str(code.as_str());
            out.push('"');
        }
        out.push('}');
        out
    }
}

/// A policy decision (`RcipPolicyDecision`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run the handler.
    Allow,
    /// Refuse: the outcome is `denied` with `POLICY_DENIED`.
    Deny {
        /// The message consumers see, verbatim (the code's default message
        /// when absent).
        reason: Option<String>,
    },
    /// Ask the host: the outcome is `confirmation_required` (on the
    /// approved re-run of a confirmation, `denied` with `POLICY_DENIED`:
    /// a confirmation is never asked twice).
    Confirm {
        /// The confirmation's description (the capability's when absent).
        reason: Option<String>,
    },
}

/// What a policy handle was settled with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyAnswer {
    Decision(Decision),
    /// The policy failed, or answered something that is not a decision.
    Failed,
}

/// Why a decision envelope was refused without settling the handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecisionParseError {
    /// The text is not JSON, or the envelope has the wrong shape.
    WrongShape(String),
    /// A well-formed envelope whose decision is none of the three: the
    /// handle settles as a policy failure.
    UnknownDecision(String),
}

impl Decision {
    /// Parses `{"decision": "allow"|"deny"|"confirm", "reason"?: string}`.
    pub fn from_value(value: &Value) -> Result<Decision, DecisionParseError> {
        let Value::Object(map) = value else {
            return Err(DecisionParseError::WrongShape(
                "the decision must be a JSON object {\"decision\": ..., \"reason\"?: ...}".into(),
            ));
        };
        for key in map.keys() {
            if key != "decision" && key != "reason" {
                return Err(DecisionParseError::WrongShape(format!(
                    "the decision has no field \"{key}\" (allowed: decision, reason)"
                )));
            }
        }
        let reason = match map.get("reason") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(DecisionParseError::WrongShape("/reason must be a string".into())),
        };
        match map.get("decision") {
            Some(Value::String(d)) => match d.as_str() {
                "allow" => Ok(Decision::Allow),
                "deny" => Ok(Decision::Deny { reason }),
                "confirm" => Ok(Decision::Confirm { reason }),
                other => Err(DecisionParseError::UnknownDecision(format!(
                    "\"{other}\" is not a decision (allow, deny or confirm)"
                ))),
            },
            Some(_) => Err(DecisionParseError::UnknownDecision(
                "/decision must be \"allow\", \"deny\" or \"confirm\"".into(),
            )),
            None => Err(DecisionParseError::WrongShape(
                "the decision needs the field \"decision\"".into(),
            )),
        }
    }
}

/// JSON text delivered to outcome and report sinks. It is stored with a
/// trailing NUL so that the C ABI lends it to callbacks without a copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonText(NulString);

impl JsonText {
    /// The JSON text.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The JSON text, NUL-terminated (lent to C callbacks without a copy).
    #[inline]
    pub fn as_c_str(&self) -> &std::ffi::CStr {
        self.0.as_c_str()
    }
}

impl JsonText {
    /// JSON text the crate wrote (no raw NUL: JSON escapes it), taken as
    /// it is.
    pub(crate) fn from_json(text: String) -> JsonText {
        JsonText(NulString::new(text))
    }
}

/// Any text; a raw NUL in it (which JSON text never holds) becomes
/// `\u0000`, so the NUL-terminated form lent to C ends where the text does.
impl From<String> for JsonText {
    fn from(text: String) -> JsonText {
        if text.as_bytes().contains(&0) {
            JsonText::from_json(text.replace('\0', "\\u0000"))
        } else {
            JsonText::from_json(text)
        }
    }
}

impl std::ops::Deref for JsonText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text stored with a trailing NUL, so the C ABI can lend it without a
/// copy. JSON text never holds a raw NUL (it is escaped as `\u0000`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NulString(String);

impl NulString {
    /// Takes `text`, which must hold no NUL, and appends the terminator.
    #[inline]
    pub fn new(mut text: String) -> NulString {
        debug_assert!(!text.contains('\0'));
        text.push('\0');
        NulString(text)
    }

    /// A copy of `text` with its NUL, in one allocation. `text` must hold
    /// no NUL (text rcip wrote as JSON never does); for text that may, use
    /// [`NulString::lossy`].
    #[inline]
    pub fn copy_of(text: &str) -> NulString {
        debug_assert!(!text.contains('\0'));
        let mut s = String::with_capacity(text.len() + 1);
        s.push_str(text);
        s.push('\0');
        NulString(s)
    }

    /// A copy of any text, for handing to C: a C string ends at its first
    /// NUL, so each NUL inside `text` becomes U+FFFD (the replacement
    /// character) instead of cutting the text short (**rcip**). Record
    /// fields are read with this: a host reason, an instance path or a
    /// message may carry `\u0000` from JSON, and the record's JSON keeps it
    /// exactly.
    pub fn lossy(text: &str) -> NulString {
        if text.contains('\0') {
            NulString::new(text.replace('\0', "\u{FFFD}"))
        } else {
            NulString::copy_of(text)
        }
    }

    /// A JSON value as compact text; `len_hint` sizes the buffer.
    pub fn from_value(value: &Value, len_hint: usize) -> NulString {
        let mut buf = Vec::with_capacity(len_hint + 1);
        if serde_json::to_writer(&mut buf, value).is_err() {
            buf.clear();
            buf.extend_from_slice(b"null");
        }
        buf.push(0);
        // serde_json writes UTF-8.
        NulString(String::from_utf8(buf).unwrap_or_else(|_| "null\0".to_string()))
    }

    /// The text without the NUL.
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.0[..self.0.len() - 1]
    }

    /// The NUL-terminated text. No copy and no scan: every constructor
    /// ends the text with its one NUL, and the text is JSON the crate wrote
    /// (serde_json escapes a NUL as `\u0000`), so it holds no other.
    #[inline]
    pub fn as_c_str(&self) -> &std::ffi::CStr {
        // Safety: exactly one NUL, at the end (see above).
        unsafe { std::ffi::CStr::from_bytes_with_nul_unchecked(self.0.as_bytes()) }
    }
}

/// Appends `s` as a JSON string literal.
pub(crate) fn push_json_str(out: &mut String, s: &str) {
    // Most strings (ids, names) need no escape: copy them whole.
    // A fold without an early exit: the compiler vectorises it.
    if !s
        .bytes()
        .fold(false, |esc, b| esc | (b < 0x20) | (b == b'"') | (b == b'\\'))
    {
        out.reserve(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
        return;
    }
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{:04x}", b);
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Appends a JSON value as compact text.
pub(crate) fn push_json_value(out: &mut String, value: &Value) {
    // Writing into a String cannot fail.
    let _ = serde_json::to_writer(string_writer(out), value);
}

/// An `io::Write` over a `String` that only ever receives UTF-8 from
/// serde_json.
fn string_writer(out: &mut String) -> impl std::io::Write + '_ {
    struct W<'a>(&'a mut String);
    impl std::io::Write for W<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            // serde_json writes whole UTF-8 sequences per call.
            match std::str::from_utf8(buf) {
                Ok(s) => {
                    self.0.push_str(s);
                    Ok(buf.len())
                }
                Err(_) => Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8")),
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    W(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_empty_context_is_what_new_builds_from_nothing() {
        let (a, b) = (SemanticContext::empty(), SemanticContext::new(Vec::new(), None));
        assert_eq!(a, b);
        assert_eq!(a.json(), b.json());
        assert_eq!(a.json_c_str(), b.json_c_str());
    }

    #[test]
    fn json_strings_escape_like_serde() {
        for s in [
            "plain",
            "quote \" and \\",
            "ctl \u{1}\u{1f}\n\t\r\u{8}\u{c}",
            "ünïcødé 😀",
            "\u{2028}",
        ] {
            let mut out = String::new();
            push_json_str(&mut out, s);
            assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s);
        }
    }

    #[test]
    fn text_lent_to_c_ends_where_the_text_does() {
        // A raw NUL (which JSON text never holds) cannot cut the C string
        // short: the public conversion escapes it.
        let t = JsonText::from("{\"a\":\"x\0y\"}".to_string());
        assert_eq!(t.as_str(), "{\"a\":\"x\\u0000y\"}");
        assert_eq!(t.as_c_str().to_bytes(), t.as_str().as_bytes());
        let plain = JsonText::from_json("[1,2]".to_string());
        assert_eq!(plain.as_c_str().to_bytes_with_nul(), b"[1,2]\0");
        let ctx = SemanticContext::new(vec!["s\0".into()], None);
        assert_eq!(ctx.json_c_str().to_bytes(), ctx.json().as_bytes());
    }

    #[test]
    fn outcome_shapes() {
        let o = Outcome::Failed {
            invocation_id: Arc::from("i1"),
            capability_id: Arc::from("a.b"),
            error: RcipError {
                code: ErrorCode::InputInvalid,
                message: "m".into(),
                validation_issues: Some(vec![ValidationIssue {
                    instance_path: "/x".into(),
                    keyword: "type".into(),
                    message: "must be string".into(),
                }]),
                validation_issues_truncated: false,
            },
        };
        let v: Value = serde_json::from_str(&o.to_json()).unwrap();
        assert_eq!(
            v,
            json!({"status": "failed", "invocationId": "i1", "capabilityId": "a.b",
                "error": {"code": "INPUT_INVALID", "message": "m",
                    "validationIssues": [{"instancePath": "/x", "keyword": "type", "message": "must be string"}]}})
        );
        let mut truncated = RcipError::new(ErrorCode::InputInvalid);
        truncated.validation_issues = Some(Vec::new());
        truncated.validation_issues_truncated = true;
        assert_eq!(truncated.to_value()["validationIssuesTruncated"], true);
        let e = LifecycleEvent {
            timestamp: 5,
            invocation_id: "i".into(),
            capability_id: "c".into(),
            phase: EventPhase::Failed,
            error_code: Some(ErrorCode::PolicyDenied),
        };
        assert_eq!(
            serde_json::from_str::<Value>(&e.to_json()).unwrap(),
            json!({"timestamp": 5, "invocationId": "i", "capabilityId": "c", "phase": "failed", "errorCode": "POLICY_DENIED"})
        );
    }

    #[test]
    fn the_succeeded_record_from_text_equals_the_serialised_one() {
        let text = r#"{"a":[1,"x",{"b":null}]}"#;
        let o = Outcome::Succeeded {
            invocation_id: Arc::from("i\"1"),
            capability_id: Arc::from("c.d"),
            output: serde_json::from_str(text).unwrap(),
        };
        assert_eq!(Outcome::succeeded_json("i\"1", "c.d", text).as_str(), o.to_json());
    }

    #[test]
    fn decisions() {
        assert_eq!(Decision::from_value(&json!({"decision": "allow"})), Ok(Decision::Allow));
        assert_eq!(
            Decision::from_value(&json!({"decision": "deny", "reason": "r"})),
            Ok(Decision::Deny {
                reason: Some("r".into())
            })
        );
        assert!(matches!(
            Decision::from_value(&json!({"decision": "maybe"})),
            Err(DecisionParseError::UnknownDecision(_))
        ));
        assert!(matches!(
            Decision::from_value(&json!("allow")),
            Err(DecisionParseError::WrongShape(_))
        ));
        assert!(matches!(
            Decision::from_value(&json!({"decision": "allow", "x": 1})),
            Err(DecisionParseError::WrongShape(_))
        ));
        assert!(matches!(
            Decision::from_value(&json!({"decision": "deny", "reason": 3})),
            Err(DecisionParseError::WrongShape(_))
        ));
    }

    #[test]
    fn context_dedupes_and_compares() {
        let a = SemanticContext::new(vec!["x".into(), "y".into(), "x".into()], Some("y".into()));
        assert_eq!(a.active_scope_ids(), ["x", "y"]);
        assert_eq!(a.json(), r#"{"activeScopeIds":["x","y"],"primaryScopeId":"y"}"#);
        let b = SemanticContext::new(vec!["x".into(), "y".into()], Some("y".into()));
        assert_eq!(a, b);
        let c = SemanticContext::new(vec!["y".into(), "x".into()], Some("y".into()));
        assert_ne!(a, c);
        let d = SemanticContext::new(vec!["x".into(), "y".into()], Some(String::new()));
        let e = SemanticContext::new(vec!["x".into(), "y".into()], None);
        assert_ne!(d, e);
    }
}

/// Reading a record the runtime delivered back into its Rust type.
///
/// Every record type here reads the exact JSON the runtime writes (the
/// description is the type's serde attributes; the runtime's writers are
/// tested against it) and ignores members it does not know.
macro_rules! from_json {
    ($($ty:ty => $what:literal),* $(,)?) => {$(
        impl $ty {
            #[doc = concat!("Reads ", $what, " from the JSON text rcip delivered.")]
            ///
            /// # Errors
            ///
            /// serde_json's error when the text is not JSON or not this
            /// record's shape (a member missing or of the wrong type, an
            /// unknown status, phase, code or effect).
            pub fn from_json(text: &str) -> Result<$ty, serde_json::Error> {
                serde_json::from_str(text)
            }
        }
    )*};
}

from_json! {
    Outcome => "an invocation outcome (an outcome sink's text)",
    LifecycleEvent => "a lifecycle event (an event observer's text)",
    PreflightReport => "a preflight report (a preflight sink's text)",
    ConfirmationNotice => "a confirmation notice (a confirmation observer's text)",
}

/// A preflight report, FORMAT.md shape R: `{"revision", "checkedAt",
/// "consistent", "outcomes"}` (PIPELINE.md, "Preflight").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreflightReport {
    /// The snapshot revision when the preflight started.
    pub revision: u64,
    /// The runtime clock when it settled, epoch milliseconds.
    pub checked_at: i64,
    /// Whether discovery was unchanged while it ran; when false, every
    /// entry that would have been ready or confirmation-required is
    /// blocked with `PREFLIGHT_STALE`.
    pub consistent: bool,
    /// One entry per proposal, in proposal order.
    pub outcomes: Vec<PreflightEntry>,
}

/// One proposal's verdict in a [`PreflightReport`]: `{"status",
/// "capabilityId", "effect"?, "reason"?, "error"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum PreflightEntry {
    /// `ready`: invoking it now would reach the handler.
    Ready {
        /// The proposal's capability.
        capability_id: String,
        /// The capability's effect.
        effect: Effect,
    },
    /// `confirmation_required`: the policy would ask for a confirmation.
    ConfirmationRequired {
        /// The proposal's capability.
        capability_id: String,
        /// The capability's effect.
        effect: Effect,
        /// The policy's confirm reason, or the capability's description.
        reason: String,
    },
    /// `blocked`: invoking it now would not reach the handler.
    Blocked {
        /// The proposal's capability, as proposed.
        capability_id: String,
        /// Why, with the code the invocation would fail or be denied with.
        error: RcipError,
    },
}

impl PreflightEntry {
    /// The proposal's capability id.
    pub fn capability_id(&self) -> &str {
        match self {
            PreflightEntry::Ready { capability_id, .. }
            | PreflightEntry::ConfirmationRequired { capability_id, .. }
            | PreflightEntry::Blocked { capability_id, .. } => capability_id,
        }
    }
}

/// How a confirmation ended, in a closed [`ConfirmationNotice`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseReason {
    /// The host approved it; the invocation re-runs.
    Approved,
    /// The host declined it.
    Declined,
    /// Its time to live ran out.
    Expired,
    /// The invocation's cancellation token fired while it was pending.
    Cancelled,
    /// Approval found the capability unbound, unavailable, rebound or out
    /// of context.
    Invalidated,
    /// The runtime closed.
    Closed,
}

impl CloseReason {
    /// The protocol's name.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::Approved => "approved",
            CloseReason::Declined => "declined",
            CloseReason::Expired => "expired",
            CloseReason::Cancelled => "cancelled",
            CloseReason::Invalidated => "invalidated",
            CloseReason::Closed => "closed",
        }
    }
}

/// What a [`ConfirmationObserver`](super::ConfirmationObserver) is told
/// (**rcip**): `{"event": "opened", "confirmation", "invocationId",
/// "capabilityId", "input"}` when a confirmation opens, `{"event":
/// "closed", "confirmationId", "invocationId", "capabilityId", "reason"}`
/// when it ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum ConfirmationNotice {
    /// A confirmation opened; only the host sees the input.
    Opened {
        /// The record the consumer's outcome carries.
        confirmation: ConfirmationRecord,
        /// The invocation that asked.
        invocation_id: String,
        /// Its capability.
        capability_id: String,
        /// The input the invocation would run with.
        input: Value,
    },
    /// A confirmation ended.
    Closed {
        /// Its id.
        confirmation_id: String,
        /// The invocation that asked.
        invocation_id: String,
        /// Its capability.
        capability_id: String,
        /// How it ended.
        reason: CloseReason,
    },
}
