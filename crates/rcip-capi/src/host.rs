//! The trusted host surface: bindings, context, refresh, confirmations.

use super::binding::rcip_binding;
use super::callback::{
    boxed_once_text, c_user_data, rcip_availability_callback, rcip_handler_callback, rcip_outcome_callback,
    rcip_user_data_free_callback, CBinding,
};
use super::cancel::rcip_cancel_token;
use super::guard::{bytes_arg, ffi_guard, opt_str_arg, out_arg, str_arg, FfiError, FfiResult};
use super::handle::{into_owned, lent_arg, owned};
use super::result::rcip_result;
use super::runtime::rcip_host;
use super::string::into_c_string;
use rcip::runtime::{CarriedConfirmation, Host, SemanticContext};
use std::ffi::{c_char, c_void};

pub(crate) unsafe fn host_arg(host: *const rcip_host) -> FfiResult<Host> {
    Ok(lent_arg(host, "host")?.host())
}

/// Binds a handler (and an optional availability check) to a capability of
/// the catalog, then refreshes (new revision, subscribers notified).
///
/// Ownership: `capability_id` is copied; `user_data` is shared by both
/// callbacks and kept until the binding is released: after it is unbound
/// (`rcip_binding_unbind`, `rcip_binding_free`) or the runtime is freed,
/// once its running callbacks returned and every `rcip_invocation` handed
/// to its handler was freed (a worker may settle after the unbind and still
/// use `user_data`), `user_data_free(user_data)` runs once, on the thread
/// that released the last of them. `*binding_out` is new (free it with `rcip_binding_free`); NULL on
/// failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, capability_id, handler,
/// binding_out), `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_NOT_IN_CATALOG`
/// (an id the catalog does not declare), `RCIP_RESULT_ALREADY_BOUND` (a live
/// binding exists for it), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`.
/// On failure neither callback nor `user_data_free` is ever called.
/// Callbacks: `handler` per `rcip_handler_callback`; `availability` (NULL:
/// always available) per `rcip_availability_callback`.
/// Thread safety: any thread, also inside callbacks.
/// Rule: seed, "Duplicate live bindings for one ID throw"; PIPELINE.md
/// section 3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_host_bind(
    host: *const rcip_host,
    capability_id: *const c_char,
    handler: rcip_handler_callback,
    availability: rcip_availability_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
    binding_out: *mut *mut rcip_binding,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(binding_out, "binding_out")?;
        *out = std::ptr::null_mut();
        let host = host_arg(host)?;
        let capability_id = str_arg(capability_id, "capability_id")?;
        let handler = handler.ok_or_else(|| FfiError::null("handler"))?;
        let user_data = c_user_data(user_data, user_data_free);
        let binding = CBinding::register(handler, availability, user_data, |handler, check, direct| {
            host.bind_c(capability_id, handler, check, direct)
        })?;
        *out = into_owned::<rcip_binding>(binding);
        Ok(())
    })
}

/// Replaces the semantic context, then refreshes.
///
/// Shape: `context_json` is `{"activeScopeIds": [scope id...],
/// "primaryScopeId"?: scope id}`. Active ids are deduplicated keeping first
/// occurrences; an empty `primaryScopeId` is kept as given.
/// Ownership: `context_json` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_JSON` (not
/// JSON or not UTF-8), `RCIP_RESULT_INVALID_ARGUMENT` (wrong shape, unknown
/// key, `null`), `RCIP_RESULT_UNKNOWN_SCOPE` (an active id the catalog does
/// not declare), `RCIP_RESULT_PRIMARY_NOT_ACTIVE` (a non-empty primary not
/// among the active ids), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`.
/// On error nothing changes (no revision, no notification).
/// Thread safety: any thread, also inside callbacks. The context is one
/// value per runtime: the last set wins.
/// Rule: seed, "Context and availability"; PIPELINE.md section 3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_host_set_context(host: *const rcip_host, context_json: *const c_char) -> rcip_result {
    ffi_guard!({
        let host = host_arg(host)?;
        let text = bytes_arg(context_json, "context_json")?;
        host.set_context_json(text)?;
        Ok(())
    })
}

/// Sets who the runtime's consumer acts for (**rcip**), or clears it
/// (NULL): a JSON object every later policy request reads with
/// `rcip_policy_request_principal`. The MCP HTTP server with the `auth`
/// option sets it on each session's and stateless request's runtime from
/// the validated token (`{"issuer", "subject", "scopes", "claims",
/// "expiresAt"}`); a host may set its own. It changes no outcome by itself:
/// the policy decides with it.
///
/// Ownership: `principal_json` is borrowed for the call (copied).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (host), `RCIP_RESULT_INVALID_UTF8`,
/// `RCIP_RESULT_INVALID_JSON` (not JSON, or beyond the payload limits),
/// `RCIP_RESULT_INVALID_ARGUMENT` (not an object), `RCIP_RESULT_CLOSED`.
/// On error nothing changes.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_host_set_principal(host: *const rcip_host, principal_json: *const c_char) -> rcip_result {
    ffi_guard!({
        let host = host_arg(host)?;
        let text = opt_str_arg(principal_json, "principal_json")?;
        host.set_principal(text)?;
        Ok(())
    })
}

/// Sets the context to `{"activeScopeIds": []}`, then refreshes.
///
/// Ownership: `host` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED`,
/// `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread, also inside callbacks.
/// Rule: seed, "unmount clears it"; PIPELINE.md section 3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_host_clear_context(host: *const rcip_host) -> rcip_result {
    ffi_guard!({
        host_arg(host)?.clear_context()?;
        Ok(())
    })
}

/// Refreshes: increments the revision, samples the availability of every
/// bound capability, installs the new snapshot, notifies every subscriber
/// once (on this thread, before returning). A refresh requested from inside
/// a refresh on the same thread is queued behind it.
///
/// Ownership: `host` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED`,
/// `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread, also inside callbacks.
/// Rule: seed, "call runtime.host.refresh()"; PIPELINE.md section 2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_host_refresh(host: *const rcip_host) -> rcip_result {
    ffi_guard!({
        host_arg(host)?.refresh()?;
        Ok(())
    })
}

/// Resolves a pending confirmation (approve or decline). Exactly one
/// outcome reaches `on_outcome` (never a result code for an unknown id):
/// declined → `denied CONFIRMATION_DECLINED`; approved at or after
/// `expiresAt` → `failed CONFIRMATION_EXPIRED`; binding or context changed
/// → `denied POLICY_DENIED`; else the captured request runs again with
/// `confirmed` true (policy asked again, live rechecks), and its outcome is
/// delivered. An id that is no longer pending answers its expiry or
/// cancellation receipt once, then `failed CONFIRMATION_NOT_FOUND` (with
/// capabilityId `"unknown"` and a new invocation id).
///
/// Shape: the outcome record of `rcip_client_invoke` (a receipt:
/// `{"status": "failed"|"denied", "invocationId", "capabilityId", "error"}`
/// when the confirmation had expired, was cancelled or is unknown).
/// Ownership: `confirmation_id` is copied; `user_data` is kept until the
/// outcome was delivered, then `user_data_free` runs once.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, confirmation_id, on_outcome),
/// `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_CLOSED` (also when the runtime
/// is freed while an approved confirmation is about to run again, e.g. from
/// the confirmation callback's `approved` notice: the confirmation is gone),
/// `RCIP_RESULT_WRONG_CONTEXT`; on failure neither function is ever called.
/// Callbacks: `on_outcome` per `rcip_outcome_callback`, possibly before
/// this returns; an approval made before the confirmation's `opened` notice
/// returned runs (and delivers) once it has, on the thread that delivered
/// `opened` (the order rule at `rcip_confirmation_callback`).
/// Thread safety: any thread, also inside callbacks (the confirmation
/// callback may resolve inline). Only the host surface can approve.
/// Rule: seed, "Approval is single-use and rechecks policy and
/// availability"; PIPELINE.md section 5.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_host_resolve_confirmation(
    host: *const rcip_host,
    confirmation_id: *const c_char,
    approved: bool,
    on_outcome: rcip_outcome_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let host = host_arg(host)?;
        let id = str_arg(confirmation_id, "confirmation_id")?;
        let cb = on_outcome.ok_or_else(|| FfiError::null("on_outcome"))?;
        let sink = boxed_once_text(cb, user_data, user_data_free);
        match host.resolve_confirmation(id, approved, sink) {
            Ok(()) => Ok(()),
            // Refused before anything was delivered: the sink was disarmed
            // and the host keeps its data.
            Err(e) => Err(e.into()),
        }
    })
}

/// The members of a carried confirmation's JSON, in the order
/// `rcip_host_carry_confirmation` writes them.
const CARRIED_KEYS: [&str; 5] = ["confirmationId", "invocationId", "capabilityId", "expiresAt", "context"];

/// A carried confirmation as the JSON of `rcip_host_carry_confirmation`.
fn carried_json(c: &CarriedConfirmation) -> String {
    let context: serde_json::Value = serde_json::from_str(c.context.json()).expect("a context's JSON text is JSON");
    serde_json::json!({
        "confirmationId": c.confirmation_id,
        "invocationId": c.invocation_id,
        "capabilityId": c.capability_id,
        "expiresAt": c.expires_at,
        "context": context,
    })
    .to_string()
}

/// Reads `carried_json` strictly: exactly the five members, each of its
/// type (`expiresAt` an integer, `context` a context).
fn carried_from(text: &[u8]) -> FfiResult<CarriedConfirmation> {
    let value = rcip::json::parse_bytes(text, &rcip::json::Limits::default())
        .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("carried_json: {e}")))?;
    let bad = |m: String| FfiError::new(rcip_result::InvalidArgument, format!("carried_json: {m}"));
    let serde_json::Value::Object(map) = &value else {
        return Err(bad(
            "must be an object {\"confirmationId\", \"invocationId\", \"capabilityId\", \"expiresAt\", \"context\"}"
                .into(),
        ));
    };
    if let Some(key) = map.keys().find(|k| !CARRIED_KEYS.contains(&k.as_str())) {
        return Err(bad(format!(
            "has no member \"{key}\" (allowed: {})",
            CARRIED_KEYS.join(", ")
        )));
    }
    let text_of = |key: &str| -> FfiResult<String> {
        match map.get(key) {
            Some(serde_json::Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(bad(format!("\"{key}\" must be a string"))),
            None => Err(bad(format!("needs the member \"{key}\""))),
        }
    };
    let confirmation_id = text_of("confirmationId")?;
    let invocation_id = text_of("invocationId")?;
    let capability_id = text_of("capabilityId")?;
    let expires_at = match map.get("expiresAt") {
        Some(v @ serde_json::Value::Number(_)) => v
            .as_i64()
            .ok_or_else(|| bad("\"expiresAt\" must be an integer (Unix milliseconds)".into()))?,
        Some(_) => return Err(bad("\"expiresAt\" must be an integer (Unix milliseconds)".into())),
        None => return Err(bad("needs the member \"expiresAt\"".into())),
    };
    let context = match map.get("context") {
        Some(v) => SemanticContext::from_value(v).map_err(|e| bad(format!("\"context\": {e}")))?,
        None => return Err(bad("needs the member \"context\"".into())),
    };
    Ok(CarriedConfirmation {
        confirmation_id,
        invocation_id,
        capability_id,
        expires_at,
        context,
    })
}

/// The pending confirmation `confirmation_id` as another runtime of the
/// same catalog may resume it (`rcip_host_resume_confirmation`): its ids,
/// its `expiresAt` and the context it captured. Nothing else leaves the
/// runtime (no input, token or binding). Read it while the confirmation is
/// pending (for example from the consumer's `confirmation_required`
/// outcome callback): closing the runtime ends it `closed`.
///
/// Shape: `*carried_json_out` is `{"confirmationId", "invocationId",
/// "capabilityId", "expiresAt": Unix ms, "context": {"activeScopeIds":
/// [...], "primaryScopeId"?}}`.
/// Ownership: `confirmation_id` is borrowed for the call;
/// `*carried_json_out` is new (free it with `rcip_string_free`); NULL on
/// failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, confirmation_id,
/// carried_json_out), `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_NOT_FOUND`
/// (no confirmation of that id is pending here: never opened, or already
/// ended), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread, also inside callbacks.
/// Rule: rcip's own: PIPELINE.md section 5, "Confirmations that cross
/// runtimes" (carry).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_host_carry_confirmation(
    host: *const rcip_host,
    confirmation_id: *const c_char,
    carried_json_out: *mut *mut c_char,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(carried_json_out, "carried_json_out")?;
        *out = std::ptr::null_mut();
        let host = host_arg(host)?;
        let id = str_arg(confirmation_id, "confirmation_id")?;
        let carried = host.try_carry_confirmation(id)?.ok_or_else(|| {
            FfiError::new(
                rcip_result::NotFound,
                format!("no confirmation \"{id}\" is pending in this runtime"),
            )
        })?;
        *out = into_c_string(&carried_json(&carried));
        Ok(())
    })
}

/// Resumes a confirmation that another runtime of the same catalog opened
/// (its record from `rcip_host_carry_confirmation`), with the host's answer
/// and the consumer's input again. Exactly one outcome reaches
/// `on_outcome`: a confirmation still pending in this runtime is resolved
/// as `rcip_host_resolve_confirmation` would (the input given here is not
/// used); otherwise a capability this catalog lacks → `failed
/// CONFIRMATION_NOT_FOUND` (capabilityId `"unknown"`, a new invocation
/// id); declined → `denied CONFIRMATION_DECLINED`; the clock at or after
/// `expiresAt` → `failed CONFIRMATION_EXPIRED`; the capability not bound
/// here, or this runtime's context not the carried one → `denied
/// POLICY_DENIED`; else section 4 runs again from step 2 with the carried
/// invocation id, `input_json`, `confirmed` true and `cancel_token`
/// (input validated, policy asked, availability read again).
///
/// Shape: `carried_json` is the record of `rcip_host_carry_confirmation`,
/// read strictly (exactly its five members, of their types); `input_json`
/// is raw text as for `rcip_client_invoke` (text that is not a JSON value
/// is the outcome `failed INPUT_INVALID` of the re-run). The outcome is a
/// record of `rcip_client_invoke`.
/// Ownership: `carried_json` and `input_json` are copied; `cancel_token`
/// (NULL: none) is retained by the re-run as long as it needs it;
/// `user_data` is kept until the outcome was delivered, then
/// `user_data_free` runs once.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, carried_json, input_json,
/// on_outcome), `RCIP_RESULT_INVALID_JSON` (`carried_json` not JSON or not
/// UTF-8), `RCIP_RESULT_INVALID_ARGUMENT` (`carried_json` of another
/// shape), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`; on failure
/// neither function is ever called and no outcome exists.
/// Callbacks: `on_outcome` per `rcip_outcome_callback`, possibly before
/// this returns; the confirmation callback is told `closed` (never
/// `opened` here), as PIPELINE.md says.
/// Thread safety: any thread, also inside callbacks. Single use across
/// runtimes is the caller's: resume a carried record once.
/// Rule: rcip's own: PIPELINE.md section 5, "Confirmations that cross
/// runtimes" (resume).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the parameters are the C ABI; a struct would change the header
pub unsafe extern "C" fn rcip_host_resume_confirmation(
    host: *const rcip_host,
    carried_json: *const c_char,
    approved: bool,
    input_json: *const c_char,
    cancel_token: *const rcip_cancel_token,
    on_outcome: rcip_outcome_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let host = host_arg(host)?;
        let carried = carried_from(bytes_arg(carried_json, "carried_json")?)?;
        let input = bytes_arg(input_json, "input_json")?;
        let token = owned(cancel_token);
        let cb = on_outcome.ok_or_else(|| FfiError::null("on_outcome"))?;
        let sink = boxed_once_text(cb, user_data, user_data_free);
        match host.resume_confirmation(&carried, approved, input, token, sink) {
            Ok(()) => Ok(()),
            // Refused before anything was delivered: the sink was disarmed
            // and the host keeps its data.
            Err(e) => Err(e.into()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"confirmationId": "c1", "invocationId": "i1", "capabilityId": "a.b",
        "expiresAt": 1767225721500, "context": {"activeScopeIds": ["s"], "primaryScopeId": "s"}}"#;

    fn code(text: &str) -> rcip_result {
        carried_from(text.as_bytes()).err().map_or(rcip_result::Ok, |e| e.code)
    }

    #[test]
    fn a_carried_record_round_trips() {
        let c = carried_from(GOOD.as_bytes()).unwrap();
        assert_eq!(c.confirmation_id, "c1");
        assert_eq!(c.invocation_id, "i1");
        assert_eq!(c.capability_id, "a.b");
        assert_eq!(c.expires_at, 1_767_225_721_500);
        assert_eq!(c.context.json(), r#"{"activeScopeIds":["s"],"primaryScopeId":"s"}"#);
        assert_eq!(carried_from(carried_json(&c).as_bytes()).unwrap(), c);
    }

    #[test]
    fn a_carried_record_is_read_strictly() {
        let with = |from: &str, to: &str| GOOD.replacen(from, to, 1);
        assert_eq!(code("{not json"), rcip_result::InvalidJson);
        assert_eq!(code("[]"), rcip_result::InvalidArgument);
        for bad in [
            with(r#""confirmationId": "c1", "#, ""),
            with(r#""context""#, r#""extra": 1, "context""#),
            with(r#""c1""#, "1"),
            with(r#""i1""#, "null"),
            with(r#""a.b""#, "[]"),
            with("1767225721500", "1767225721500.5"),
            with("1767225721500", r#""1767225721500""#),
            with("1767225721500", "1e30"),
            with(r#""primaryScopeId": "s""#, r#""primaryScopeId": 1"#),
            with(r#"{"activeScopeIds": ["s"], "primaryScopeId": "s"}"#, "null"),
        ] {
            assert_eq!(code(&bad), rcip_result::InvalidArgument, "{bad}");
        }
    }
}
