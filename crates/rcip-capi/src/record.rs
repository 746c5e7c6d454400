//! Records without a JSON parser (**rcip**): a read-only view of an
//! outcome, preflight report, lifecycle event or confirmation notice.

use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, out_arg, FfiError};
use super::handle::{free_owned, handle_kind, into_owned, lend_owned, owned};
use super::result::rcip_result;
use rcip::runtime::{NulString, Record};
use std::ffi::c_char;

/// A read-only view of one record rcip handed over (**rcip**), made from
/// its JSON text by `rcip_record_parse`: the fields every host reads, as
/// small calls, so that a host needs no JSON parser; the JSON stays the
/// full record (read the rest from it). One type serves every record:
/// - an invocation outcome (`rcip_outcome_callback`, `rcip_pending_wait`):
///   status, invocation id, capability id, error code and message,
///   validation issues, confirmation id and expiry, output;
/// - a preflight report: its entries (`rcip_record_entry_count`,
///   `rcip_record_entry`), each with status, capability id, error code and
///   message, issues and reason;
/// - a lifecycle event (`rcip_event_callback`): phase, error code,
///   invocation id, capability id;
/// - a confirmation notice (`rcip_confirmation_callback`): notice kind
///   (`"opened"` / `"closed"`), confirmation id, expiry (opened), reason
///   (closed), invocation id, capability id.
///
/// Text fields are C strings, which cannot hold a NUL: a `\u0000` inside a
/// field's JSON text (a host reason, a refused property name in an issue
/// message) reads as U+FFFD, so the field is never cut short; the record's
/// JSON keeps it exactly.
///
/// A field the record does not have reads as NULL (a count as 0).
/// Ownership: owned by the caller (free with `rcip_record_free`). Every
/// string it lends is owned by the record and valid until
/// `rcip_record_free` of the record (for an entry: of the report it came
/// from); the record copies the text it was made from, so the callback's
/// text may go away first.
/// Thread safety: shared (immutable: any thread, concurrently).
/// Functions: `rcip_record_parse`, `rcip_record_status`,
/// `rcip_record_invocation_id`, `rcip_record_capability_id`,
/// `rcip_record_error_code`, `rcip_record_error_message`,
/// `rcip_record_issue_count`, `rcip_record_issue_path`,
/// `rcip_record_issue_keyword`, `rcip_record_issue_message`,
/// `rcip_record_confirmation_id`, `rcip_record_expires_at`,
/// `rcip_record_output`, `rcip_record_phase`, `rcip_record_notice_kind`,
/// `rcip_record_reason`, `rcip_record_entry_count`, `rcip_record_entry`,
/// `rcip_record_free`.
pub struct rcip_record {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_record => Record);

fn lend(text: Option<&NulString>) -> *const c_char {
    text.map_or(std::ptr::null(), |t| t.as_c_str().as_ptr())
}

/// Reads a record from the JSON text rcip handed over.
///
/// Shape: `record_json` is a JSON object: an outcome record, a preflight
/// report, a lifecycle event or a confirmation notice (shapes at
/// `rcip_client_invoke`, `rcip_client_preflight`, `rcip_event_callback`,
/// `rcip_confirmation_callback`). Any other object reads as a record whose
/// fields are absent.
/// Ownership: `record_json` is borrowed for the call (copied);
/// `*record_out` is new (free it with `rcip_record_free`), NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_INVALID_JSON` (not
/// JSON, not UTF-8, or nesting deeper than 100,000 levels of arrays and
/// objects; text rcip handed over nests at most as deep as the runtime's
/// `max_depth`, 1000 by default); `RCIP_RESULT_INVALID_ARGUMENT` (JSON
/// that is not an object).
/// Stack: any depth up to 100,000 levels reads, and `rcip_record_free`
/// frees, on a host thread with a small stack (64 KiB is tested, with
/// nested arrays, objects and preflight entries): the parser continues on
/// stack segments it allocates as it deepens, and the entries, the output
/// text and the freeing walk the record without recursion.
/// Thread safety: any thread, also inside callbacks (the usual place: read
/// the text a callback lends, then keep the record past the callback).
/// Rule: **rcip**; the fields are those of conformance/FORMAT.md's outcome
/// record and PIPELINE.md sections 4 to 6.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_parse(
    record_json: *const c_char,
    record_out: *mut *mut rcip_record,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(record_out, "record_out")?;
        *out = std::ptr::null_mut();
        let text = bytes_arg(record_json, "record_json")?;
        let record = Record::parse(text).map_err(|(not_json, m)| {
            FfiError::new(
                if not_json {
                    rcip_result::InvalidJson
                } else {
                    rcip_result::InvalidArgument
                },
                format!("record_json: {m}"),
            )
        })?;
        *out = into_owned::<rcip_record>(record);
        Ok(())
    })
}

/// The status: an outcome's `"succeeded"`, `"failed"`, `"denied"` or
/// `"confirmation_required"`; a preflight entry's `"ready"`,
/// `"confirmation_required"` or `"blocked"`.
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md sections 4 and 6 (outcome and entry statuses).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_status(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.status.as_ref()))
    })
}

/// The invocation id (`invocationId`) of an outcome, event or notice.
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 1.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_invocation_id(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.invocation_id.as_ref()))
    })
}

/// The capability id (`capabilityId`) of an outcome, preflight entry,
/// event or notice.
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_capability_id(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.capability_id.as_ref()))
    })
}

/// The RCIP error code: `error.code` of a failed or denied outcome or a
/// blocked preflight entry, `errorCode` of a `failed` / `denied` /
/// `confirmation_declined` event.
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 8 (error codes); section 4 (events).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_error_code(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.error_code.as_ref()))
    })
}

/// The error message (`error.message`) of a failed or denied outcome or
/// a blocked entry: the policy's reason for a `POLICY_DENIED` when it gave
/// one, the host's reason for `CAPABILITY_UNAVAILABLE`, else rcip's text.
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 steps 8 and 13.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_error_message(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.error_message.as_ref()))
    })
}

/// The confirmation id: `confirmation.id` of a `confirmation_required`
/// outcome or an `opened` notice, `confirmationId` of a `closed` notice.
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 5.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_confirmation_id(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.confirmation_id.as_ref()))
    })
}

/// The output of a `succeeded` outcome, as compact JSON text.
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 19.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_output(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.output.as_ref()))
    })
}

/// The phase of a lifecycle event: `"requested"`, `"started"`,
/// `"succeeded"`, `"failed"`, `"denied"`, `"confirmation_requested"` or
/// `"confirmation_declined"`.
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md sections 4 and 5 (events).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_phase(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.phase.as_ref()))
    })
}

/// The kind of a confirmation notice: `"opened"` or `"closed"` (its
/// `event` member).
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 5 (**rcip** notices).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_notice_kind(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.notice_kind.as_ref()))
    })
}

/// The reason: a `closed` notice's `"approved"`, `"declined"`,
/// `"expired"`, `"cancelled"`, `"invalidated"` or `"closed"`; a
/// `confirmation_required` preflight entry's reason (the policy's, else the
/// capability description).
///
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record`, or a record without the field, gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md sections 5 and 6.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_reason(record: *const rcip_record) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record).map_or(std::ptr::null(), |r| lend(r.reason.as_ref()))
    })
}

/// The number of validation issues (`error.validationIssues`) of an
/// `INPUT_INVALID` / `OUTPUT_INVALID` outcome or blocked entry; 0 when it
/// has none, and for NULL.
///
/// Units: a count of issues.
/// Ownership: `record` is borrowed for the call.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 steps 9 and 18.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_issue_count(record: *const rcip_record) -> usize {
    ffi_guard_or!(0, { owned(record).map_or(0, |r| r.issues.len()) })
}

/// The `instancePath` of validation issue `index`: the JSON pointer into the input or output (`""`: the root).
///
/// Units: `index` counts from 0.
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record` or an `index` at or past
/// `rcip_record_issue_count` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 9 (Ajv's issues: instancePath,
/// keyword, message).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_issue_path(record: *const rcip_record, index: usize) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record)
            .and_then(|r| r.issues.get(index))
            .map_or(std::ptr::null(), |issue| issue[0].as_c_str().as_ptr())
    })
}

/// The `keyword` of validation issue `index`: the schema keyword that failed (`"type"`, `"required"`, ...).
///
/// Units: `index` counts from 0.
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record` or an `index` at or past
/// `rcip_record_issue_count` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 9 (Ajv's issues: instancePath,
/// keyword, message).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_issue_keyword(record: *const rcip_record, index: usize) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record)
            .and_then(|r| r.issues.get(index))
            .map_or(std::ptr::null(), |issue| issue[1].as_c_str().as_ptr())
    })
}

/// The `message` of validation issue `index`: the issue's message.
///
/// Units: `index` counts from 0.
/// Ownership: owned by `record`; valid until `rcip_record_free`.
/// Errors: NULL `record` or an `index` at or past
/// `rcip_record_issue_count` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 9 (Ajv's issues: instancePath,
/// keyword, message).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_issue_message(record: *const rcip_record, index: usize) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        owned(record)
            .and_then(|r| r.issues.get(index))
            .map_or(std::ptr::null(), |issue| issue[2].as_c_str().as_ptr())
    })
}

/// The confirmation's `expiresAt` (of a `confirmation_required` outcome or
/// an `opened` notice): true and `*expires_at_ms_out` set when the record
/// has it; false (nothing written) when it has not, or when `record` or
/// `expires_at_ms_out` is NULL.
///
/// Units: epoch milliseconds.
/// Ownership: `record` is borrowed for the call; `expires_at_ms_out` is
/// written on success only.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 5 (`expiresAt` = opening time + TTL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_expires_at(record: *const rcip_record, expires_at_ms_out: *mut i64) -> bool {
    ffi_guard_or!(false, {
        match (owned(record).and_then(|r| r.expires_at), expires_at_ms_out.as_mut()) {
            (Some(at), Some(out)) => {
                *out = at;
                true
            }
            _ => false,
        }
    })
}

/// The number of entries (`outcomes`) of a preflight report; 0 for any
/// other record, and for NULL.
///
/// Units: a count of entries (one per proposal, in proposal order).
/// Ownership: `record` is borrowed for the call.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 6.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_entry_count(record: *const rcip_record) -> usize {
    ffi_guard_or!(0, { owned(record).map_or(0, |r| r.entries.len()) })
}

/// Entry `index` of a preflight report, as a record of its own (status,
/// capability id, error code and message, issues, reason).
///
/// Units: `index` counts from 0.
/// Ownership: borrowed from `record`: valid until `rcip_record_free` of
/// `record`; never free it.
/// Errors: NULL `record` or an `index` at or past
/// `rcip_record_entry_count` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 6.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_entry(record: *const rcip_record, index: usize) -> *const rcip_record {
    ffi_guard_or!(std::ptr::null(), {
        owned(record)
            .and_then(|r| r.entries.get(index))
            .map_or(std::ptr::null(), lend_owned::<rcip_record>)
    })
}

/// Frees a record made by `rcip_record_parse`; strings and entries
/// borrowed from it become invalid.
///
/// Ownership: consumes `record` (never an entry). NULL does nothing;
/// freeing twice is undefined. Entries nested in entries are freed one by
/// one, without recursion (any depth `rcip_record_parse` reads frees on a
/// 64 KiB stack).
/// Thread safety: any thread, once no other thread uses the record.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_record_free(record: *mut rcip_record) {
    ffi_guard_or!((), {
        free_owned(record);
    })
}
