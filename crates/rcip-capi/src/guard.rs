//! The panic guard every export runs in, and argument checks (docs/C-ABI.md,
//! "Panics, NULL, UTF-8, threads"): NULL pointers, UTF-8, and slices checked before use.

use super::result::{clear_last_error, rcip_result, restore_last_error, save_last_error, set_last_error};
use rcip::runtime::HostError;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// An export's failure: a code and a message for `rcip_last_error_message`.
#[derive(Debug)]
pub(crate) struct FfiError {
    pub code: rcip_result,
    pub message: String,
}

impl FfiError {
    pub(crate) fn new(code: rcip_result, message: impl Into<String>) -> FfiError {
        FfiError {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn null(name: &str) -> FfiError {
        FfiError::new(rcip_result::NullArgument, format!("{name} is NULL"))
    }
}

impl From<HostError> for FfiError {
    fn from(e: HostError) -> FfiError {
        let code = match &e {
            HostError::InvalidJson(_) => rcip_result::InvalidJson,
            HostError::InvalidArgument(_) => rcip_result::InvalidArgument,
            HostError::InvalidCatalog(_) => rcip_result::InvalidCatalog,
            HostError::NotInCatalog(_) => rcip_result::NotInCatalog,
            HostError::AlreadyBound(_) => rcip_result::AlreadyBound,
            HostError::UnknownScope(_) => rcip_result::UnknownScope,
            HostError::PrimaryNotActive(_) => rcip_result::PrimaryNotActive,
            HostError::AlreadyCompleted => rcip_result::AlreadyCompleted,
            HostError::Closed => rcip_result::Closed,
            HostError::PreflightBatchInvalid(_) => rcip_result::PreflightBatchInvalid,
            HostError::WrongContext => rcip_result::WrongContext,
            HostError::Unsupported(_) => rcip_result::Unsupported,
        };
        FfiError::new(code, e.to_string())
    }
}

pub(crate) type FfiResult<T = ()> = Result<T, FfiError>;

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs an export body that returns `rcip_result`: clears the last error,
/// catches panics (`RCIP_RESULT_PANIC`), records failures. A success clears
/// it again on the way out: a callback the body ran may have made a call
/// that failed, and the message describes the call that returned last.
pub(crate) fn run(body: impl FnOnce() -> FfiResult) -> rcip_result {
    clear_last_error();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => {
            clear_last_error();
            rcip_result::Ok
        }
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.code
        }
        Err(payload) => {
            set_last_error(&format!("internal error: {}", panic_text(&*payload)));
            rcip_result::Panic
        }
    }
}

/// Runs an export body that returns a plain value; a panic gives `default`.
/// Such exports report no error, so the thread's last error message is the
/// same after the call as before it, even when the call ran callbacks that
/// made fallible calls (a `_free` that unbinds, say).
pub(crate) fn run_or<T>(default: T, body: impl FnOnce() -> T) -> T {
    let saved = save_last_error();
    let result = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(_) => default,
    };
    restore_last_error(saved);
    result
}

/// The guard every `rcip_result` export's body is: `ffi_guard!({ ... })`.
macro_rules! ffi_guard {
    ($body:block) => {
        $crate::guard::run(move || -> $crate::guard::FfiResult { $body })
    };
}

/// The guard of an export that returns a plain value:
/// `ffi_guard_or!(default, { ... })`.
macro_rules! ffi_guard_or {
    ($default:expr, $body:block) => {
        $crate::guard::run_or($default, move || $body)
    };
}

pub(crate) use ffi_guard;
pub(crate) use ffi_guard_or;

/// A required NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string valid for the call.
pub(crate) unsafe fn str_arg<'a>(ptr: *const c_char, name: &str) -> FfiResult<&'a str> {
    if ptr.is_null() {
        return Err(FfiError::null(name));
    }
    rcip::json::utf8(CStr::from_ptr(ptr).to_bytes()).map_err(|e| {
        FfiError::new(
            rcip_result::InvalidUtf8,
            format!("{name} is not valid UTF-8 (byte {})", e.valid_up_to()),
        )
    })
}

/// An optional string argument (NULL = none).
///
/// # Safety
/// As [`str_arg`].
pub(crate) unsafe fn opt_str_arg<'a>(ptr: *const c_char, name: &str) -> FfiResult<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        str_arg(ptr, name).map(Some)
    }
}

/// The bytes of a required NUL-terminated payload string (UTF-8 is checked
/// later, as part of the payload rules).
///
/// # Safety
/// As [`str_arg`].
pub(crate) unsafe fn bytes_arg<'a>(ptr: *const c_char, name: &str) -> FfiResult<&'a [u8]> {
    if ptr.is_null() {
        return Err(FfiError::null(name));
    }
    Ok(CStr::from_ptr(ptr).to_bytes())
}

/// A required out-parameter.
///
/// # Safety
/// `ptr` is NULL or points to writable storage for a `T`.
pub(crate) unsafe fn out_arg<'a, T>(ptr: *mut T, name: &str) -> FfiResult<&'a mut T> {
    ptr.as_mut().ok_or_else(|| FfiError::null(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::rcip_last_error_message;

    #[test]
    fn a_panic_comes_back_as_panic_with_a_message() {
        let rc = run(|| panic!("boom"));
        assert_eq!(rc, rcip_result::Panic);
        let msg = unsafe { CStr::from_ptr(rcip_last_error_message()) }
            .to_str()
            .unwrap()
            .to_string();
        assert!(msg.contains("boom"), "{msg}");
        assert_eq!(run_or(7, || -> i32 { panic!("again") }), 7);
        // A plain-value export keeps the message, even if it made calls.
        let kept = unsafe { CStr::from_ptr(rcip_last_error_message()) }
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(kept, msg);
        run_or((), || {
            let _ = run(|| Ok(()));
        });
        assert_eq!(
            unsafe { CStr::from_ptr(rcip_last_error_message()) }.to_str().unwrap(),
            msg
        );
        assert_eq!(run(|| Ok(())), rcip_result::Ok);
        assert!(rcip_last_error_message().is_null(), "success clears the message");
        assert_eq!(run(|| Err(FfiError::null("thing"))), rcip_result::NullArgument);
    }
}
