//! The C ABI (`include/rcip.h` is generated from this module by build.rs).
//!
//! Only conversions live here: each export is one guard around argument
//! checks, a call into [`rcip::runtime`], and result conversion (docs/C-ABI.md,
//! "Layout"). Conventions: `rcip_result` codes with a per-thread message
//! (`rcip_last_error_message`); out-parameters last, named `*_out`, set to
//! NULL on failure; strings in are NUL-terminated UTF-8 (copied), strings
//! out are freed with `rcip_string_free`; every registration that keeps
//! `user_data` takes a `user_data_free` called exactly once.

#![allow(non_camel_case_types)] // the C names (rcip_runtime, rcip_result, ...) are the ABI's, copied by cbindgen
#![allow(clippy::missing_safety_doc)] // exports give their contract as the labels ffi_surface.rs checks, not `# Safety`

pub mod binding;
pub mod callback;
pub mod cancel;
pub mod catalog;
pub mod client;
pub(crate) mod guard;
pub(crate) mod handle;
pub mod host;
pub mod invocation;
pub mod mcp;
pub mod pending;
pub mod policy;
pub mod record;
pub mod report;
pub mod result;
pub mod runtime;
pub mod schema;
pub mod server;
pub mod sink;
pub mod snapshot;
pub mod string;

/// Default confirmation lifetime in milliseconds (two minutes).
pub const RCIP_DEFAULT_CONFIRMATION_TTL_MS: u64 = 120_000;
/// Default maximum size of capability input and handler output text, in
/// bytes (8 MiB).
pub const RCIP_DEFAULT_MAX_PAYLOAD_LEN: usize = 8 * 1024 * 1024;
/// Default maximum nesting depth of capability input and handler output.
pub const RCIP_DEFAULT_MAX_DEPTH: usize = 1000;
/// Most proposals in one preflight.
pub const RCIP_MAX_PREFLIGHT_PROPOSALS: usize = 16;
/// Receipts kept for expired and cancelled confirmations.
pub const RCIP_RECEIPT_CAPACITY: usize = 256;

const _: () = {
    assert!(RCIP_DEFAULT_CONFIRMATION_TTL_MS == rcip::runtime::DEFAULT_CONFIRMATION_TTL_MS);
    assert!(RCIP_DEFAULT_MAX_PAYLOAD_LEN == rcip::json::DEFAULT_MAX_BYTES);
    assert!(RCIP_DEFAULT_MAX_DEPTH == rcip::json::DEFAULT_MAX_DEPTH);
    assert!(RCIP_MAX_PREFLIGHT_PROPOSALS == rcip::runtime::MAX_PREFLIGHT_PROPOSALS);
    assert!(RCIP_RECEIPT_CAPACITY == rcip::runtime::RECEIPT_CAPACITY);
};
