//! Waitable outcomes (**rcip**): invoke, resolve and preflight variants
//! that return a pending handle instead of taking a callback.

use super::callback::{boxed_once_text, rcip_outcome_callback, rcip_user_data_free_callback};
use super::cancel::rcip_cancel_token;
use super::client::client_arg;
use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, opt_str_arg, out_arg, str_arg, FfiError};
use super::handle::{free_owned, handle_kind, into_owned, owned, owned_arg};
use super::host::host_arg;
use super::result::rcip_result;
use super::runtime::{rcip_client, rcip_host};
use super::string::into_c_string;
use rcip::runtime::{Pending, WaitError};
use std::ffi::{c_char, c_void};

/// Wait without a time limit (`rcip_pending_wait`): `UINT64_MAX`
/// milliseconds.
pub const RCIP_WAIT_FOREVER: u64 = u64::MAX;

const _: () = assert!(RCIP_WAIT_FOREVER == rcip::runtime::WAIT_FOREVER);

/// The pending outcome of one invoke, confirmation resolution or preflight
/// (**rcip**): the host waits for it (`rcip_pending_wait`, with a timeout,
/// from any thread), polls it (`rcip_pending_is_ready`, or a wait with
/// timeout 0), or attaches a callback (`rcip_pending_on_ready`). The
/// outcome is handed over exactly once: to one wait or to the callback.
///
/// Ownership: owned by the caller that received it; free it with
/// `rcip_pending_free` (at any time: freed before the outcome arrived, the
/// outcome goes to nobody and nothing leaks; an attached callback still
/// receives it).
/// Thread safety: synchronized (any thread, concurrently; a second waiter
/// gets the outcome only if the first timed out).
/// Functions: `rcip_client_invoke_pending`,
/// `rcip_host_resolve_confirmation_pending`,
/// `rcip_client_preflight_pending`, `rcip_pending_wait`,
/// `rcip_pending_is_ready`, `rcip_pending_on_ready`, `rcip_pending_free`.
pub struct rcip_pending {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_pending => Pending);

/// Invokes a capability, as `rcip_client_invoke`, with the outcome going to
/// a new pending handle instead of a callback.
///
/// Shape: as `rcip_client_invoke` (the outcome record).
/// Ownership: `capability_id`, `input_json` and `invocation_id` are copied;
/// `cancel_token` is retained by the invocation as long as it needs it;
/// `*pending_out` is new (free it with `rcip_pending_free`), NULL on
/// failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (client, capability_id, input_json,
/// pending_out), `RCIP_RESULT_INVALID_UTF8` (capability_id,
/// invocation_id), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`. On
/// failure no outcome exists.
/// Thread safety: any thread, also inside callbacks (but see
/// `rcip_pending_wait` for where waiting is refused). The outcome may be
/// ready before this returns (a synchronous handler).
/// Rule: PIPELINE.md section 4; the waitable form is **rcip**.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_client_invoke_pending(
    client: *const rcip_client,
    capability_id: *const c_char,
    input_json: *const c_char,
    invocation_id: *const c_char,
    cancel_token: *const rcip_cancel_token,
    pending_out: *mut *mut rcip_pending,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(pending_out, "pending_out")?;
        *out = std::ptr::null_mut();
        let client = client_arg(client)?;
        let capability_id = str_arg(capability_id, "capability_id")?;
        let input = bytes_arg(input_json, "input_json")?;
        let invocation_id = opt_str_arg(invocation_id, "invocation_id")?;
        let token = owned(cancel_token);
        let (_id, pending) = client.invoke_pending(capability_id, input, invocation_id, token)?;
        *out = into_owned::<rcip_pending>(pending);
        Ok(())
    })
}

/// Resolves a pending confirmation, as `rcip_host_resolve_confirmation`,
/// with the outcome going to a new pending handle instead of a callback.
///
/// Shape: as `rcip_host_resolve_confirmation` (the outcome record).
/// Ownership: `confirmation_id` is copied; `*pending_out` is new (free it
/// with `rcip_pending_free`), NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, confirmation_id,
/// pending_out), `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_CLOSED`,
/// `RCIP_RESULT_WRONG_CONTEXT`; on failure no outcome exists.
/// Thread safety: any thread, also inside callbacks (the confirmation
/// callback may resolve inline; it must not wait there, see
/// `rcip_pending_wait`).
/// Rule: PIPELINE.md section 5; the waitable form is **rcip**.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_host_resolve_confirmation_pending(
    host: *const rcip_host,
    confirmation_id: *const c_char,
    approved: bool,
    pending_out: *mut *mut rcip_pending,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(pending_out, "pending_out")?;
        *out = std::ptr::null_mut();
        let host = host_arg(host)?;
        let id = str_arg(confirmation_id, "confirmation_id")?;
        let pending = host.resolve_confirmation_pending(id, approved)?;
        *out = into_owned::<rcip_pending>(pending);
        Ok(())
    })
}

/// Preflights 1 to 16 proposals, as `rcip_client_preflight`, with the
/// report going to a new pending handle instead of a callback.
///
/// Shape: as `rcip_client_preflight` (the report).
/// Units: `count` is a number of proposals.
/// Ownership: all strings are copied; `cancel_token` is retained while the
/// preflight runs; `*pending_out` is new (free it with
/// `rcip_pending_free`), NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (client, pending_out), then
/// `RCIP_RESULT_PREFLIGHT_BATCH_INVALID` (count 0 or above 16), then
/// `RCIP_RESULT_NULL_ARGUMENT` (either array, any element),
/// `RCIP_RESULT_INVALID_UTF8` (a capability id), `RCIP_RESULT_CLOSED`,
/// `RCIP_RESULT_WRONG_CONTEXT`; on failure no report exists.
/// Thread safety: any thread, also inside callbacks.
/// Rule: PIPELINE.md section 6; the waitable form is **rcip**.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_client_preflight_pending(
    client: *const rcip_client,
    capability_ids: *const *const c_char,
    input_jsons: *const *const c_char,
    count: usize,
    cancel_token: *const rcip_cancel_token,
    pending_out: *mut *mut rcip_pending,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(pending_out, "pending_out")?;
        *out = std::ptr::null_mut();
        let client = client_arg(client)?;
        let proposals = super::client::proposals_arg(capability_ids, input_jsons, count)?;
        let token = owned(cancel_token);
        let pending = client.preflight_pending(proposals, token)?;
        *out = into_owned::<rcip_pending>(pending);
        Ok(())
    })
}

/// Waits up to `timeout_ms` for the outcome and takes it.
///
/// Shape: `*outcome_json_out` is the outcome record (or the preflight
/// report) the call that made `pending` documents.
/// Units: `timeout_ms` in milliseconds; 0 polls (never blocks, never
/// `RCIP_RESULT_WRONG_CONTEXT`); `RCIP_WAIT_FOREVER` (`UINT64_MAX`) has no
/// limit.
/// Ownership: `pending` is borrowed; `*outcome_json_out` is new (free it
/// with `rcip_string_free`), NULL on failure. The outcome is handed over
/// once: a later wait answers `RCIP_RESULT_ALREADY_USED`.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (pending, outcome_json_out);
/// `RCIP_RESULT_TIMED_OUT` (the timeout passed first; wait again later);
/// `RCIP_RESULT_ALREADY_USED` (the outcome was taken by an earlier wait,
/// or a callback is attached); `RCIP_RESULT_WRONG_CONTEXT` when the
/// outcome has not arrived and blocking here could deadlock: on a thread
/// inside a callback of the same runtime (handler, policy, outcome,
/// report, event, confirmation, subscriber or ready callback: the work
/// that settles the outcome may be queued behind that callback), or, with
/// manual timers, on the thread that last called
/// `rcip_runtime_run_due_timers` or `rcip_runtime_next_deadline`.
/// `RCIP_RESULT_WRONG_CONTEXT` cancels nothing: the work goes on and the
/// outcome stays in `pending` for a later wait or a ready callback (an
/// approval made inside `opened` still runs once `opened` returns). A
/// single-threaded host with manual timers never blocks here: it polls
/// (`timeout_ms` 0) or attaches a ready callback, and sleeps until
/// `rcip_runtime_next_deadline` itself before running its due timers.
/// Thread safety: any thread; no rcip lock is held while it blocks.
/// Rule: **rcip** (PIPELINE.md section 7: work runs on the thread that
/// made it runnable, so a thread may not wait for work queued behind it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_pending_wait(
    pending: *const rcip_pending,
    timeout_ms: u64,
    outcome_json_out: *mut *mut c_char,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(outcome_json_out, "outcome_json_out")?;
        *out = std::ptr::null_mut();
        let pending = owned_arg(pending, "pending")?;
        match pending.wait(timeout_ms) {
            Ok(json) => {
                *out = into_c_string(json.as_str());
                Ok(())
            }
            Err(WaitError::TimedOut) => Err(FfiError::new(
                rcip_result::TimedOut,
                format!("no outcome within {timeout_ms} ms"),
            )),
            Err(WaitError::AlreadyUsed) => Err(FfiError::new(
                rcip_result::AlreadyUsed,
                "the outcome was already handed over (a wait took it, or a callback is attached)",
            )),
            Err(WaitError::WrongContext) => Err(FfiError::new(
                rcip_result::WrongContext,
                "waiting here could deadlock: inside a callback of the same runtime, or on the thread \
                 that runs its manual timers (attach a callback with rcip_pending_on_ready instead)",
            )),
        }
    })
}

/// True when the outcome has arrived and was not handed over yet; false
/// for NULL.
///
/// Ownership: `pending` is borrowed for the call.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_pending_is_ready(pending: *const rcip_pending) -> bool {
    ffi_guard_or!(false, { owned(pending).is_some_and(|p| p.is_ready()) })
}

/// Hands the outcome to `callback` instead of a wait: at once on this
/// thread when it has arrived, else on the thread that settles it.
///
/// Shape: `callback` receives the outcome record (or report) as
/// `rcip_outcome_callback` does.
/// Ownership: `user_data` is kept until the callback ran, then
/// `user_data_free` runs once. The registration outlives the handle:
/// freeing `pending` afterwards does not stop the callback. If the
/// runtime is freed first, the callback still runs during that free (the
/// ending outcome, as for every pending invocation).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (pending, callback);
/// `RCIP_RESULT_ALREADY_USED` (the outcome was taken by a wait, or a
/// callback is attached); on failure neither function is ever called.
/// Callbacks: `callback` runs exactly once, with no rcip lock held,
/// possibly before this returns; the text is valid during the call only.
/// Thread safety: any thread, also inside callbacks.
/// Rule: **rcip**.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_pending_on_ready(
    pending: *const rcip_pending,
    callback: rcip_outcome_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let pending = owned_arg(pending, "pending")?;
        let cb = callback.ok_or_else(|| FfiError::null("callback"))?;
        // A refused registration disarms the sink: the host keeps its data.
        match pending.on_ready(boxed_once_text(cb, user_data, user_data_free)) {
            Ok(()) => Ok(()),
            Err(_) => Err(FfiError::new(
                rcip_result::AlreadyUsed,
                "the outcome was already handed over (a wait took it, or a callback is attached)",
            )),
        }
    })
}

/// Frees the handle. An outcome not handed over yet goes to nobody (it is
/// released, now or when it arrives); an attached callback still receives
/// it.
///
/// Ownership: consumes `pending`. NULL does nothing; freeing twice is
/// undefined.
/// Thread safety: any thread, once no other thread uses the handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_pending_free(pending: *mut rcip_pending) {
    ffi_guard_or!((), {
        free_owned(pending);
    })
}
