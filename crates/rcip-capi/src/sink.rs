//! Answer slots lent to availability callbacks and id generators.

use super::guard::{ffi_guard, opt_str_arg, str_arg, FfiError};
use super::handle::{handle_kind, lend_mut, lent_mut};
use super::result::rcip_result;
use rcip::runtime::{Availability, AvailabilitySlot};
use std::ffi::c_char;

/// Where an availability callback writes its answer. Borrowed: valid only
/// during the `rcip_availability_callback` call that received it; never
/// freed by the host.
///
/// Thread safety: the callback's thread, during the callback.
/// Functions: `rcip_availability_set`.
pub struct rcip_availability_sink {
    _opaque: [u8; 0],
}

handle_kind!(lent rcip_availability_sink => AvailabilitySlot);

impl rcip_availability_sink {
    /// Lends `slot` to a callback for the length of the call.
    pub(crate) fn lend(slot: &mut AvailabilitySlot) -> *mut rcip_availability_sink {
        lend_mut(slot)
    }
}

/// Where an id generator writes the id. Borrowed: valid only during the
/// `rcip_id_generator_callback` call that received it.
///
/// Thread safety: the callback's thread, during the callback.
/// Functions: `rcip_string_sink_set`.
pub struct rcip_string_sink {
    _opaque: [u8; 0],
}

// The answer slot: the id, once set.
handle_kind!(lent rcip_string_sink => Option<String>);

impl rcip_string_sink {
    /// Lends `slot` to a callback for the length of the call.
    pub(crate) fn lend(slot: &mut Option<String>) -> *mut rcip_string_sink {
        lend_mut(slot)
    }
}

/// Answers an availability check (`RcipAvailability`).
///
/// Shape: the answer becomes `{"available": available, "reasonCode"?:
/// reason_code, "reason"?: reason}`; NULL leaves a field out. A later call
/// replaces an earlier one.
/// Ownership: `sink` is borrowed from the callback; `reason_code` and
/// `reason` are copied.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (sink), `RCIP_RESULT_INVALID_UTF8`;
/// the answer is unchanged then.
/// Thread safety: the callback's thread, during the callback.
/// Rule: PIPELINE.md section 2 (availability); the reason is the message
/// of a `CAPABILITY_UNAVAILABLE` outcome at invoke step 8.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_availability_set(
    sink: *mut rcip_availability_sink,
    available: bool,
    reason_code: *const c_char,
    reason: *const c_char,
) -> rcip_result {
    ffi_guard!({
        let sink = lent_mut(sink).ok_or_else(|| FfiError::null("sink"))?;
        if available && reason_code.is_null() && reason.is_null() {
            // The common answer, without building one (a refresh asks
            // hundreds of checks).
            sink.set_plain_available();
            return Ok(());
        }
        let reason_code = opt_str_arg(reason_code, "reason_code")?.map(str::to_string);
        let reason = opt_str_arg(reason, "reason")?.map(str::to_string);
        sink.set(Availability {
            available,
            reason_code,
            reason,
        });
        Ok(())
    })
}

/// Answers an id generator call.
///
/// Ownership: `sink` is borrowed from the callback; `value` is copied.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_UTF8`.
/// Thread safety: the callback's thread, during the callback.
/// Rule: PIPELINE.md section 7 (one generator serves both prefixes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_string_sink_set(sink: *mut rcip_string_sink, value: *const c_char) -> rcip_result {
    ffi_guard!({
        let sink = lent_mut(sink).ok_or_else(|| FfiError::null("sink"))?;
        *sink = Some(str_arg(value, "value")?.to_string());
        Ok(())
    })
}
