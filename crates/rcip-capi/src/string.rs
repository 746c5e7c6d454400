//! Strings the library returns, and version queries.

use super::guard::ffi_guard_or;
use std::ffi::{c_char, CString};

/// Turns text into a library-owned C string (freed with `rcip_string_free`).
pub(crate) fn into_c_string(text: &str) -> *mut c_char {
    super::callback::c_json(text).into_raw()
}

/// Frees a string the library returned through a `char **` out-parameter.
///
/// Ownership: consumes `string`; use only on strings from rcip (never
/// `free()`: another allocator). NULL does nothing; freeing twice is
/// undefined. Strings returned as `const char *` are never freed.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_string_free(string: *mut c_char) {
    ffi_guard_or!((), {
        if !string.is_null() {
            drop(CString::from_raw(string));
        }
    })
}

/// The ABI version of this library: MAJOR * 10000 + MINOR * 100 + PATCH.
/// Equals `RCIP_ABI_VERSION` of the header it was built with; a host can
/// compare the two at startup.
///
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub extern "C" fn rcip_abi_version() -> u32 {
    ffi_guard_or!(0, { rcip::abi_version() })
}

/// The library version as text (`"MAJOR.MINOR.PATCH"`).
///
/// Ownership: static; do not free.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub extern "C" fn rcip_version() -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    })
}

/// The value of header `name` (ASCII case-insensitive) among `headers`
/// (lower-case names, as the setup handles keep them), borrowed from
/// `headers`; NULL when absent. The one lookup behind
/// `rcip_mcp_session_setup_header` and `rcip_mcp_request_setup_header`.
pub(crate) fn header_value(headers: &[(String, std::ffi::CString)], name: &str) -> *const c_char {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map_or(std::ptr::null(), |(_, v)| v.as_ptr())
}
