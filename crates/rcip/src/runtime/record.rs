//! A read-only view of a record rcip hands to the host (**rcip**): an
//! invocation outcome, a preflight report and its entries, a lifecycle
//! event, a confirmation notice. It holds the fields every host reads as
//! NUL-terminated text, taken from the JSON once, so that a host needs no
//! JSON parser of its own; the JSON stays the full record. A NUL inside a
//! field's text becomes U+FFFD ([`NulString::lossy`]), so a C string is
//! never cut short.

use super::types::NulString;
use serde_json::Value;

/// The fields of one record (absent fields are `None`), each the text of
/// the record's JSON member of that name (the C ABI's `rcip_record_*`
/// accessors lend them). Immutable once parsed; shared by any thread.
#[derive(Debug, Default)]
pub struct Record {
    /// `status`: `succeeded`, `failed`, `denied`, `confirmation_required`
    /// (an outcome or report entry), or an event's status.
    pub status: Option<NulString>,
    /// `invocationId`.
    pub invocation_id: Option<NulString>,
    /// `capabilityId`.
    pub capability_id: Option<NulString>,
    /// `error.code`: an RCIP error code (PIPELINE.md section 8).
    pub error_code: Option<NulString>,
    /// `error.message`.
    pub error_message: Option<NulString>,
    /// (instancePath, keyword, message) of each validation issue.
    pub issues: Vec<[NulString; 3]>,
    /// `confirmation.id` of a `confirmation_required` outcome, or a
    /// notice's confirmation id.
    pub confirmation_id: Option<NulString>,
    /// `confirmation.expiresAt`, epoch milliseconds of the runtime's clock.
    pub expires_at: Option<i64>,
    /// `output` of a `succeeded` outcome, as compact JSON text.
    pub output: Option<NulString>,
    /// An event's `phase`.
    pub phase: Option<NulString>,
    /// A confirmation notice's `event` (`opened`, `closed`).
    pub notice_kind: Option<NulString>,
    /// A closed notice's `reason`.
    pub reason: Option<NulString>,
    /// A preflight report's entries, in proposal order.
    pub entries: Vec<Record>,
}

/// The deepest record text [`Record::parse`] reads, in nesting levels of
/// arrays and objects (the payload default is 1000; a runtime may raise it).
pub const RECORD_MAX_DEPTH: usize = 100_000;

/// Stack reserved per nesting level when a deep record is read.
const STACK_PER_LEVEL: usize = 1024;

fn text_at(v: &Value, pointer: &str) -> Option<NulString> {
    v.pointer(pointer).and_then(Value::as_str).map(NulString::lossy)
}

impl Record {
    /// Reads a record from JSON text: `Err((true, message))` when the text
    /// is not JSON, `Err((false, message))` when it is not an object.
    ///
    /// Text nesting deeper than `RECORD_MAX_DEPTH` (100 000 levels) is
    /// refused as not JSON (hostile text, never an outcome rcip produced).
    /// Text nesting deeper than the payload default of 1000 levels (a
    /// runtime whose limits were raised) is read, copied and dropped on a
    /// stack grown to its depth, so no host thread's stack overflows.
    pub fn parse(text: &[u8]) -> Result<Record, (bool, String)> {
        // One scan decides both the refusal and the stack; text no longer
        // than 1000 bytes cannot nest deeper than 1000 levels.
        let depth = if text.len() <= crate::json::DEFAULT_MAX_DEPTH {
            0
        } else {
            crate::json::nesting_depth(text, RECORD_MAX_DEPTH)
        };
        if depth > RECORD_MAX_DEPTH {
            return Err((
                true,
                crate::json::JsonError::TooDeep { max: RECORD_MAX_DEPTH }.to_string(),
            ));
        }
        let read = || {
            let value =
                crate::json::parse_bytes(text, &crate::json::Limits::UNLIMITED).map_err(|e| (true, e.to_string()))?;
            if !value.is_object() {
                return Err((
                    false,
                    "a record is a JSON object (an outcome, report, event or notice)".into(),
                ));
            }
            Ok(Record::from_value(&value))
        };
        if depth <= crate::json::DEFAULT_MAX_DEPTH {
            read()
        } else {
            // Parsing grows its own stack; copying the output text and
            // dropping the value recurse once per level (well under
            // STACK_PER_LEVEL bytes each).
            stacker::grow(depth.saturating_add(64) * STACK_PER_LEVEL, read)
        }
    }

    fn from_value(v: &Value) -> Record {
        let issues = v
            .pointer("/error/validationIssues")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .map(|i| {
                        let field = |k: &str| NulString::lossy(i.get(k).and_then(Value::as_str).unwrap_or(""));
                        [field("instancePath"), field("keyword"), field("message")]
                    })
                    .collect()
            })
            .unwrap_or_default();
        let entries = v
            .get("outcomes")
            .and_then(Value::as_array)
            .map(|list| list.iter().map(Record::from_value).collect())
            .unwrap_or_default();
        // A notice's `event` ("opened" / "closed"); a lifecycle event's
        // `phase`. Every other record has neither.
        Record {
            status: text_at(v, "/status"),
            invocation_id: text_at(v, "/invocationId"),
            capability_id: text_at(v, "/capabilityId"),
            error_code: text_at(v, "/error/code").or_else(|| text_at(v, "/errorCode")),
            error_message: text_at(v, "/error/message"),
            issues,
            confirmation_id: text_at(v, "/confirmation/id").or_else(|| text_at(v, "/confirmationId")),
            expires_at: v
                .pointer("/confirmation/expiresAt")
                .and_then(Value::as_f64)
                .map(|f| f as i64),
            output: v.get("output").map(|o| NulString::from_value(o, 64)),
            phase: text_at(v, "/phase"),
            notice_kind: text_at(v, "/event"),
            reason: text_at(v, "/reason"),
            entries,
        }
    }
}
