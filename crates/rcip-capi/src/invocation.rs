//! The handler's completion handle.

use super::cancel::rcip_cancel_token;
use super::guard::{bytes_arg, ffi_guard, ffi_guard_or};
use super::handle::{counted, counted_arg, free_counted, handle_kind, into_counted, lend_owned, RawCount};
use super::result::rcip_result;
use rcip::runtime::Invocation;
use std::ffi::c_char;

/// The completion handle a handler receives: one running invocation.
///
/// Ownership: owned by the handler that received it; free it with
/// `rcip_invocation_free` after (or instead of) settling. The runtime keeps
/// its own reference, so settling and freeing are separate.
/// Thread safety: synchronized (any thread, concurrently).
/// Functions: `rcip_invocation_id`, `rcip_invocation_capability_id`,
/// `rcip_invocation_input`, `rcip_invocation_semantic_context`,
/// `rcip_invocation_cancel_token`, `rcip_invocation_complete`,
/// `rcip_invocation_fail`, `rcip_invocation_is_settled`,
/// `rcip_invocation_free`; while pending (**rcip**, src/ffi/report.rs):
/// `rcip_invocation_report_progress`, `rcip_invocation_log`,
/// `rcip_invocation_elicit`, `rcip_invocation_create_message`.
pub struct rcip_invocation {
    // Opaque: a handle is the shared invocation state itself (see
    // `Invocation::into_raw`), so handing one to a handler allocates nothing.
    _opaque: [u8; 0],
}

// An invocation handle is one reference of the shared invocation state.
unsafe impl RawCount for Invocation {
    type Pointee = ();
    fn into_raw(self) -> *const () {
        Invocation::into_raw(self)
    }
    unsafe fn from_raw(raw: *const ()) -> Invocation {
        Invocation::from_raw(raw)
    }
}

handle_kind!(counted rcip_invocation => Invocation);

impl rcip_invocation {
    /// A new C handle that owns `inner`; free it with `rcip_invocation_free`.
    pub(crate) fn into_handle(inner: Invocation) -> *mut rcip_invocation {
        into_counted(inner)
    }
}

/// Borrows the handle behind a pointer, for the length of one call.
///
/// # Safety
/// `invocation` is NULL or a live handle from `rcip_invocation::into_handle`.
unsafe fn borrow(invocation: *const rcip_invocation) -> Option<std::mem::ManuallyDrop<Invocation>> {
    counted(invocation)
}

/// The invocation id.
///
/// Ownership: owned by `invocation`; valid until `rcip_invocation_free`.
/// Errors: NULL `invocation` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 1.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_id(invocation: *const rcip_invocation) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match borrow(invocation) {
            None => std::ptr::null(),
            Some(h) => h.id_c_str().as_ptr(),
        }
    })
}

/// The capability id.
///
/// Ownership: owned by `invocation`; valid until `rcip_invocation_free`.
/// Errors: NULL `invocation` gives NULL.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_capability_id(invocation: *const rcip_invocation) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match borrow(invocation) {
            None => std::ptr::null(),
            Some(h) => h.capability_id_c_str().as_ptr(),
        }
    })
}

/// The handler's own copy of the input, as compact JSON text.
///
/// Shape: the capability's input (valid against its input schema), written
/// canonically: one value per key (the last of duplicate keys), numbers as
/// doubles. Changing a copy you make cannot change the request or a pending
/// confirmation.
/// Ownership: owned by `invocation`; valid until `rcip_invocation_free`.
/// Errors: NULL `invocation` gives NULL.
/// Thread safety: any thread.
/// Rule: seed, "A handler receives a detached input copy".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_input(invocation: *const rcip_invocation) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match borrow(invocation) {
            None => std::ptr::null(),
            Some(h) => h.input_c_str().as_ptr(),
        }
    })
}

/// The semantic context captured before the policy was asked.
///
/// Shape: `{"activeScopeIds": [...], "primaryScopeId"?: "..."}`.
/// Ownership: owned by `invocation`; valid until `rcip_invocation_free`.
/// Errors: NULL `invocation` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 steps 11 and 17.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_semantic_context(invocation: *const rcip_invocation) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match borrow(invocation) {
            None => std::ptr::null(),
            Some(h) => h.context_c_str().as_ptr(),
        }
    })
}

/// The invocation's own cancellation token (one per invocation, never the
/// consumer's token itself): cancelled when the consumer cancels the token
/// it passed to the invocation, or when the runtime is freed. Poll it with
/// `rcip_cancel_token_is_cancelled` or register with
/// `rcip_cancel_token_on_cancel`; registrations on it end with the
/// invocation's handle, so they never accumulate on a consumer token.
///
/// Ownership: borrowed from `invocation`; valid until
/// `rcip_invocation_free`. Do not free it; `rcip_cancel_token_clone` gives a
/// reference of your own.
/// Errors: NULL `invocation` gives NULL.
/// Thread safety: any thread.
/// Rule: seed, "the handler must cooperate with its signal".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_cancel_token(invocation: *const rcip_invocation) -> *const rcip_cancel_token {
    ffi_guard_or!(std::ptr::null(), {
        match borrow(invocation) {
            None => std::ptr::null(),
            Some(h) => lend_owned::<rcip_cancel_token>(h.lent_cancel_token()),
        }
    })
}

/// Completes the invocation with output text.
///
/// Shape: `output_json` is the capability output as JSON text. Text that is
/// not a JSON value (not UTF-8, not JSON, above the runtime's size or depth
/// limit) gives the outcome `failed OUTPUT_INVALID` without issues; a value
/// failing the output schema gives `failed OUTPUT_INVALID` with issues; else
/// `succeeded` (after the `succeeded` event and a refresh).
/// Ownership: `output_json` is borrowed for the call (copied).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_ALREADY_COMPLETED` on a
/// second settle (nothing changes); `RCIP_RESULT_WRONG_CONTEXT` from a
/// clock or id generator. Completing after the runtime stopped waiting
/// (freed) returns OK and changes nothing. A payload problem is an outcome,
/// not an error code. After the consumer cancelled the invocation's token
/// the runtime still waits for its handler (cancellation is cooperative):
/// completing then returns OK and the outcome is `succeeded` as usual;
/// `rcip_invocation_fail` then gives `failed EXECUTION_ABORTED`.
/// Thread safety: any thread; the outcome is delivered on this thread
/// before the call returns (called on the handler callback's own thread
/// while that callback runs: after it returns).
/// Rule: PIPELINE.md section 4 steps 18–20, section 8.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_complete(
    invocation: *const rcip_invocation,
    output_json: *const c_char,
) -> rcip_result {
    ffi_guard!({
        let h = counted_arg(invocation, "invocation")?;
        let output = bytes_arg(output_json, "output_json")?;
        h.complete_text(output)?;
        Ok(())
    })
}

/// Fails the invocation: `failed EXECUTION_ABORTED` when `aborted` is true
/// or the token was cancelled, else `failed EXECUTION_FAILED`. No error
/// text is taken: failure details stay with the host (redaction).
///
/// Ownership: `invocation` is borrowed for the call (free it separately).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_ALREADY_COMPLETED` on a
/// second settle; `RCIP_RESULT_WRONG_CONTEXT`. After the runtime stopped
/// waiting it returns OK and changes nothing.
/// Thread safety: any thread; as `rcip_invocation_complete`.
/// Rule: PIPELINE.md section 4 step 20; seed, "A thrown error after abort
/// is reported as EXECUTION_ABORTED".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_fail(invocation: *const rcip_invocation, aborted: bool) -> rcip_result {
    ffi_guard!({
        let h = counted_arg(invocation, "invocation")?;
        h.fail(aborted)?;
        Ok(())
    })
}

/// True once the handle was settled (completed or failed, by the host or
/// by freeing); false for NULL.
///
/// Ownership: `invocation` is borrowed for the call.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_is_settled(invocation: *const rcip_invocation) -> bool {
    ffi_guard_or!(false, { borrow(invocation).is_some_and(|h| h.is_settled()) })
}

/// Frees the handle. An unsettled handle is settled as a failure first
/// (as `rcip_invocation_fail(invocation, false)`).
///
/// Ownership: consumes `invocation`; strings and the token borrowed from it
/// become invalid. NULL does nothing; freeing twice is undefined. When its
/// binding was released meanwhile and this was the binding's last handle,
/// the binding's `user_data_free` runs here (`rcip_host_bind`).
/// Thread safety: any thread, once no other thread uses the handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_free(invocation: *mut rcip_invocation) {
    ffi_guard_or!((), {
        free_counted(invocation);
    })
}
