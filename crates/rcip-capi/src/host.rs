//! The trusted host surface: bindings, context, refresh, confirmations.

use super::binding::rcip_binding;
use super::callback::{
    boxed_once_text, c_user_data, rcip_availability_callback, rcip_handler_callback, rcip_outcome_callback,
    rcip_user_data_free_callback, CBinding,
};
use super::guard::{bytes_arg, ffi_guard, out_arg, str_arg, FfiError, FfiResult};
use super::handle::{into_owned, lent_arg};
use super::result::rcip_result;
use super::runtime::rcip_host;
use rcip::runtime::Host;
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
