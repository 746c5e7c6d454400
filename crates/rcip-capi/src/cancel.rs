//! Cancellation tokens.

use super::callback::{c_user_data, rcip_cancel_callback, rcip_user_data_free_callback};
use super::guard::{ffi_guard, ffi_guard_or, out_arg, FfiError, FfiResult};
use super::handle::{clone_owned, free_owned, handle_kind, into_owned, owned};
use super::result::rcip_result;
use rcip::runtime::CancelToken;
use std::ffi::c_void;

/// A cancellation token (the seed's `AbortSignal`).
///
/// Ownership: reference-counted; each handle from `rcip_cancel_token_new` or
/// `rcip_cancel_token_clone` is freed once with `rcip_cancel_token_free`.
/// An invocation, confirmation or preflight keeps its own reference, so the
/// consumer may free its token at any time.
/// Thread safety: synchronized (any thread, concurrently).
/// Functions: `rcip_cancel_token_new`, `rcip_cancel_token_clone`,
/// `rcip_cancel_token_cancel`, `rcip_cancel_token_is_cancelled`,
/// `rcip_cancel_token_on_cancel`, `rcip_cancel_token_free`.
pub struct rcip_cancel_token {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_cancel_token => CancelToken);

/// A required token argument.
///
/// # Safety
/// `token` is NULL or a live token handle.
pub(crate) unsafe fn token_arg<'a>(token: *const rcip_cancel_token) -> FfiResult<&'a CancelToken> {
    owned(token).ok_or_else(|| FfiError::null("token"))
}

/// Creates a token that is not cancelled.
///
/// Ownership: `*token_out` is new; free it with `rcip_cancel_token_free`.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (token_out).
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_cancel_token_new(token_out: *mut *mut rcip_cancel_token) -> rcip_result {
    ffi_guard!({
        let out = out_arg(token_out, "token_out")?;
        *out = into_owned::<rcip_cancel_token>(CancelToken::new());
        Ok(())
    })
}

/// Another reference to the same token.
///
/// Ownership: `token` is borrowed; `*token_out` is new; free it with
/// `rcip_cancel_token_free`. On failure `*token_out` is NULL.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_cancel_token_clone(
    token: *const rcip_cancel_token,
    token_out: *mut *mut rcip_cancel_token,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(token_out, "token_out")?;
        *out = std::ptr::null_mut();
        *out = clone_owned(token).ok_or_else(|| FfiError::null("token"))?;
        Ok(())
    })
}

/// Signals cancellation. Idempotent. Registered callbacks run now, on this
/// thread; what they make runnable (an invocation ending with
/// `EXECUTION_ABORTED` while its policy is pending, a pending confirmation
/// ending with a receipt, a preflight report) happens before this returns.
/// A running handler is only told (it must cooperate).
///
/// Ownership: `token` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: any thread, also inside callbacks.
/// Rule: seed, "Cancellation and effects"; PIPELINE.md sections 4 (steps 10,
/// 11, 12, 20), 5 and 6.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_cancel_token_cancel(token: *const rcip_cancel_token) -> rcip_result {
    ffi_guard!({
        token_arg(token)?.cancel();
        Ok(())
    })
}

/// True once the token was cancelled; false for NULL.
///
/// Ownership: `token` is borrowed for the call.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_cancel_token_is_cancelled(token: *const rcip_cancel_token) -> bool {
    ffi_guard_or!(false, { owned(token).is_some_and(|t| t.is_cancelled()) })
}

/// Registers `callback` to run once on cancellation: at once, on this
/// thread, when the token is already cancelled; else on the cancelling
/// thread.
///
/// Ownership: `user_data` is kept until the callback ran (then
/// `user_data_free` runs) or, if it never runs, until the last reference to
/// the token is freed.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (token, callback); on failure
/// neither function is ever called.
/// Callbacks: `callback` runs once with no rcip lock held and may call any
/// rcip function; `user_data_free` runs once after it.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_cancel_token_on_cancel(
    token: *const rcip_cancel_token,
    callback: rcip_cancel_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let t = token_arg(token)?;
        let cb = callback.ok_or_else(|| FfiError::null("callback"))?;
        let data = c_user_data(user_data, user_data_free);
        t.on_cancel(move || {
            // Safety: the host's callback with its data; `data` drops
            // (user_data_free) after it.
            unsafe { cb(data.ptr()) };
            drop(data);
        });
        Ok(())
    })
}

/// Frees this reference to the token.
///
/// Ownership: consumes `token`. NULL does nothing; freeing twice is
/// undefined. Other references (clones, running operations) keep the token
/// alive.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_cancel_token_free(token: *mut rcip_cancel_token) {
    ffi_guard_or!((), {
        free_owned(token);
    })
}
