//! The consumer surface: discovery, subscriptions, invocation, preflight.

use super::callback::{
    boxed_once_text, c_user_data, once_text, rcip_outcome_callback, rcip_report_callback, rcip_subscriber_callback,
    rcip_user_data_free_callback, CSubscriber,
};
use super::cancel::rcip_cancel_token;
use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, opt_str_arg, out_arg, str_arg, FfiError, FfiResult};
use super::handle::{free_owned, handle_kind, into_counted, into_owned, lent_arg, owned};
use super::result::rcip_result;
use super::runtime::rcip_client;
use super::snapshot::rcip_snapshot;
use super::string::into_c_string;
use rcip::runtime::{Client, Filter, Sink, Subscription};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

pub(crate) unsafe fn client_arg(client: *const rcip_client) -> FfiResult<Client> {
    Ok(lent_arg(client, "client")?.client())
}

/// A snapshot subscription.
///
/// Ownership: owned by the caller; `rcip_subscription_free` unsubscribes
/// and frees it. Its user data is released then, or when the runtime is
/// closed or freed, whichever comes first; in both cases only after a
/// notification running on another thread has returned.
/// Thread safety: synchronized.
/// Functions: `rcip_subscription_free`.
pub struct rcip_subscription {
    _opaque: [u8; 0],
}

// Dropping the subscription unsubscribes.
handle_kind!(owned rcip_subscription => Subscription);

/// The current snapshot.
///
/// Ownership: `*snapshot_out` is a new reference (free it with
/// `rcip_snapshot_free`); the pointer is the same for every call until the
/// revision changes. NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread, also inside callbacks. Discovery never calls
/// host code.
/// Rule: PIPELINE.md section 2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_client_snapshot(
    client: *const rcip_client,
    snapshot_out: *mut *const rcip_snapshot,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(snapshot_out, "snapshot_out")?;
        *out = std::ptr::null();
        let client = client_arg(client)?;
        *out = into_counted::<rcip_snapshot>(client.snapshot()?);
        Ok(())
    })
}

/// Lists the current snapshot's capabilities that pass a filter.
///
/// Shape: `filter_json` is NULL (no filter) or `{"context"?: "all" |
/// "current", "availableOnly"?: bool, "scopeId"?: scope id, "effect"?:
/// "read" | "write" | "external" | "destructive"}`; conditions combine with
/// AND; `""`, `false` and `"all"` filter nothing. `*capabilities_out` is a
/// JSON array of capability entries (as in the snapshot), in catalog order.
/// `scopeId` matches a capability's own `scopeIds` exactly (no parent or
/// child match); `context: "current"` keeps relevance `current` (relevance
/// filters discovery, it is not authorization).
/// Ownership: `filter_json` is borrowed; `*capabilities_out` is new (free
/// it with `rcip_string_free`); NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_JSON` (not
/// JSON, or not UTF-8),
/// `RCIP_RESULT_INVALID_ARGUMENT` (any other value or type, `null`, an
/// unknown key), `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread.
/// Rule: seed, "Scope relevance is not authorization"; PIPELINE.md section 2
/// (filters; rcip rejects wrong-shape filters).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_client_list_capabilities(
    client: *const rcip_client,
    filter_json: *const c_char,
    capabilities_out: *mut *mut c_char,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(capabilities_out, "capabilities_out")?;
        *out = std::ptr::null_mut();
        let client = client_arg(client)?;
        let list = if filter_json.is_null() {
            client.list_json(&Filter::default())?
        } else {
            client.list_json_filtered(bytes_arg(filter_json, "filter_json")?)?
        };
        *out = into_c_string(&list);
        Ok(())
    })
}

/// Subscribes to snapshot revisions: `callback(user_data, revision)` once
/// per refresh (bind, an unbind that removed the installed binding,
/// set/clear context, explicit refresh, a changed binding revision, every
/// successful invocation).
///
/// Ownership: `user_data` is kept until the subscription is freed (or the
/// runtime is freed); then `user_data_free` runs once. `*subscription_out`
/// is new (free it with `rcip_subscription_free`); NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED`,
/// `RCIP_RESULT_WRONG_CONTEXT`; on failure neither function is ever called.
/// Callbacks: see `rcip_subscriber_callback`.
/// Thread safety: any thread, also inside callbacks.
/// Rule: PIPELINE.md section 2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_client_subscribe(
    client: *const rcip_client,
    callback: rcip_subscriber_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
    subscription_out: *mut *mut rcip_subscription,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(subscription_out, "subscription_out")?;
        *out = std::ptr::null_mut();
        let client = client_arg(client)?;
        let cb = callback.ok_or_else(|| FfiError::null("callback"))?;
        let subscriber = Arc::new(CSubscriber {
            cb,
            user_data: c_user_data(user_data, user_data_free),
        });
        match client.subscribe(subscriber.clone()) {
            Ok(s) => {
                *out = into_owned::<rcip_subscription>(s);
                Ok(())
            }
            Err(e) => {
                subscriber.user_data.disarm();
                Err(e.into())
            }
        }
    })
}

/// Unsubscribes and frees the subscription.
///
/// Ownership: consumes `subscription`. NULL does nothing; freeing twice is
/// undefined.
/// Thread safety: any thread, also inside callbacks (a subscriber may free
/// its own subscription).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_subscription_free(subscription: *mut rcip_subscription) {
    ffi_guard_or!((), {
        free_owned(subscription);
    })
}

/// Invokes a capability. Exactly one outcome reaches `on_outcome`, possibly
/// before this returns (PIPELINE.md section 4, in order: id reservation,
/// input text, capability, binding, live availability, input schema, token,
/// policy, rechecks, confirmation, handler, output).
///
/// Shape: `input_json` is raw text: text that is not a JSON value (not
/// UTF-8, not JSON, a leading byte-order mark, a lone surrogate escape, a
/// number overflowing to infinity, beyond the size or depth limit) is the
/// outcome `failed INPUT_INVALID`, never an error code. The outcome is
/// `{"status": "succeeded", "invocationId", "capabilityId", "output"}`,
/// `{"status": "failed" | "denied", "invocationId", "capabilityId",
/// "error": {"code", "message", "validationIssues"?: [{"instancePath",
/// "keyword", "message"}]}}` or `{"status": "confirmation_required",
/// "invocationId", "capabilityId", "confirmation": {"id", "title",
/// "description", "effect", "expiresAt"}}`. An unknown capability id is the
/// outcome `failed CAPABILITY_NOT_FOUND`.
/// Ownership: `capability_id`, `input_json` and `invocation_id` are copied;
/// `cancel_token` is retained by the invocation as long as it needs it (the
/// caller may free its reference at once); `user_data` is kept until the
/// outcome was delivered, then `user_data_free` runs once;
/// `*invocation_id_out` (if not NULL) is new (free it with
/// `rcip_string_free`) and set to NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (client, capability_id, input_json,
/// on_outcome), `RCIP_RESULT_INVALID_UTF8` (capability_id, invocation_id),
/// `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`. On failure neither
/// function is ever called and no outcome exists.
/// Callbacks: `on_outcome` per `rcip_outcome_callback` (to wait for the
/// outcome instead: `rcip_client_invoke_pending`).
/// Thread safety: any thread, also inside callbacks.
/// Rule: PIPELINE.md sections 4 and 8; seed, "Invocation IDs are reserved
/// before policy begins" (`invocation_id` NULL: a generated id; an empty
/// string is an id).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the parameters are the C ABI; a struct would change the header
pub unsafe extern "C" fn rcip_client_invoke(
    client: *const rcip_client,
    capability_id: *const c_char,
    input_json: *const c_char,
    invocation_id: *const c_char,
    cancel_token: *const rcip_cancel_token,
    on_outcome: rcip_outcome_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
    invocation_id_out: *mut *mut c_char,
) -> rcip_result {
    ffi_guard!({
        if let Some(out) = invocation_id_out.as_mut() {
            *out = std::ptr::null_mut();
        }
        let client = client_arg(client)?;
        let capability_id = str_arg(capability_id, "capability_id")?;
        let input = bytes_arg(input_json, "input_json")?;
        let invocation_id = opt_str_arg(invocation_id, "invocation_id")?;
        let token = owned(cancel_token);
        let cb = on_outcome.ok_or_else(|| FfiError::null("on_outcome"))?;
        let sink = Sink::C(once_text(cb, user_data, user_data_free));
        match client.invoke_with(capability_id, input, invocation_id, token, sink) {
            Ok(id) => {
                if let Some(out) = invocation_id_out.as_mut() {
                    *out = into_c_string(&id);
                }
                Ok(())
            }
            // A refused call never calls back: the sink was disarmed.
            Err(e) => Err(e.into()),
        }
    })
}

/// Invokes and waits for the outcome (`rcip_client_invoke` without a
/// callback).
///
/// Shape: as `rcip_client_invoke`; `*outcome_json_out` is the outcome
/// record.
/// Ownership: as `rcip_client_invoke`; `*outcome_json_out` is new (free it
/// with `rcip_string_free`); NULL on failure.
/// Errors: as `rcip_client_invoke`.
/// Thread safety: any thread. It blocks until the outcome exists: do not
/// call it where the outcome needs work this thread would do (a deferred
/// policy or handler settled later by this same thread).
/// Rule: PIPELINE.md section 4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_client_invoke_blocking(
    client: *const rcip_client,
    capability_id: *const c_char,
    input_json: *const c_char,
    invocation_id: *const c_char,
    cancel_token: *const rcip_cancel_token,
    outcome_json_out: *mut *mut c_char,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(outcome_json_out, "outcome_json_out")?;
        *out = std::ptr::null_mut();
        let client = client_arg(client)?;
        let capability_id = str_arg(capability_id, "capability_id")?;
        let input = bytes_arg(input_json, "input_json")?;
        let invocation_id = opt_str_arg(invocation_id, "invocation_id")?;
        let token = owned(cancel_token);
        let outcome = client.invoke_blocking(capability_id, input, invocation_id, token)?;
        *out = into_c_string(&outcome);
        Ok(())
    })
}

/// Preflights 1 to 16 proposals: runs the invocation checks without
/// running anything, reserving ids, emitting events or notifying (policy
/// calls have `"phase": "preflight"`). Exactly one report reaches
/// `on_report`, possibly before this returns.
///
/// Shape: `capability_ids[i]` and `input_jsons[i]` (raw text, as for
/// invoke) for i < `count`. The report is `{"revision": the revision when
/// the preflight started, "checkedAt": clock when it settled, "consistent":
/// bool, "outcomes": [{"status": "ready", "capabilityId", "effect"} |
/// {"status": "confirmation_required", "capabilityId", "effect", "reason"}
/// | {"status": "blocked", "capabilityId", "error": {"code", "message",
/// "validationIssues"?}}]}`; when the revision moved meanwhile every entry
/// that was not blocked is blocked `PREFLIGHT_STALE`.
/// Units: `count` is a number of proposals.
/// Ownership: all strings are copied; `cancel_token` is retained while the
/// preflight runs; `user_data` is kept until the report was delivered.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (client, on_report), then
/// `RCIP_RESULT_PREFLIGHT_BATCH_INVALID` (count 0 or above 16, checked before
/// the arrays, so `(NULL, NULL, 0)` gives it; no report), then
/// `RCIP_RESULT_NULL_ARGUMENT` (either array, any capability id or input), `RCIP_RESULT_INVALID_UTF8` (a capability
/// id), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`; on failure
/// neither function is ever called.
/// Callbacks: `on_report` per `rcip_report_callback`.
/// Thread safety: any thread, also inside callbacks.
/// Rule: PIPELINE.md section 6.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the parameters are the C ABI; a struct would change the header
pub unsafe extern "C" fn rcip_client_preflight(
    client: *const rcip_client,
    capability_ids: *const *const c_char,
    input_jsons: *const *const c_char,
    count: usize,
    cancel_token: *const rcip_cancel_token,
    on_report: rcip_report_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let client = client_arg(client)?;
        let cb = on_report.ok_or_else(|| FfiError::null("on_report"))?;
        let proposals = proposals_arg(capability_ids, input_jsons, count)?;
        let token = owned(cancel_token);
        let sink = boxed_once_text(cb, user_data, user_data_free);
        match client.preflight(proposals, token, sink) {
            Ok(()) => Ok(()),
            // A refused call never calls back: the sink was disarmed.
            Err(e) => Err(e.into()),
        }
    })
}

/// The proposals of a preflight: the count first (PREFLIGHT_BATCH_INVALID),
/// then the arrays and each element.
pub(crate) unsafe fn proposals_arg(
    capability_ids: *const *const c_char,
    input_jsons: *const *const c_char,
    count: usize,
) -> FfiResult<Vec<(String, Vec<u8>)>> {
    if count == 0 || count > rcip::runtime::MAX_PREFLIGHT_PROPOSALS {
        return Err(rcip::runtime::HostError::PreflightBatchInvalid(count).into());
    }
    if capability_ids.is_null() {
        return Err(FfiError::null("capability_ids"));
    }
    if input_jsons.is_null() {
        return Err(FfiError::null("input_jsons"));
    }
    let ids = std::slice::from_raw_parts(capability_ids, count);
    let inputs = std::slice::from_raw_parts(input_jsons, count);
    let mut proposals = Vec::with_capacity(count);
    for i in 0..count {
        let id = str_arg(ids[i], &format!("capability_ids[{i}]"))?;
        let input = bytes_arg(inputs[i], &format!("input_jsons[{i}]"))?;
        proposals.push((id.to_string(), input.to_vec()));
    }
    Ok(proposals)
}

// Every handle shares the runtime across threads.
const _: () = {
    const fn is<T: Send + Sync>() {}
    is::<rcip::runtime::Runtime>();
};
