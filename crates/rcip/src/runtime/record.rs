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

fn text_at(v: &Value, pointer: &str) -> Option<NulString> {
    v.pointer(pointer).and_then(Value::as_str).map(NulString::lossy)
}

impl Record {
    /// Reads a record from JSON text: `Err((true, message))` when the text
    /// is not JSON, `Err((false, message))` when it is not an object.
    ///
    /// Text nesting deeper than `RECORD_MAX_DEPTH` (100 000 levels) is
    /// refused as not JSON (hostile text, never an outcome rcip produced).
    /// Any depth up to that bound reads on a small host stack (64 KiB is
    /// tested): the parser grows its stack on the heap as it deepens
    /// (`serde_stacker`, as every payload parse does), and the rest (the
    /// entries read, the output written, the parsed value dropped) walks the
    /// value with a heap stack of its own, so nothing recurses once per
    /// level on the caller's stack. Dropping a record is iterative too.
    pub fn parse(text: &[u8]) -> Result<Record, (bool, String)> {
        // Text no longer than the payload default cannot nest deeper than it.
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
        // Up to READER_DEPTH levels the slice reader (an error costs at
        // most that many scans of the text); deeper, a reader whose error
        // path costs no scan per level.
        let value = if depth <= crate::json::READER_DEPTH {
            crate::json::parse_bytes(text, &crate::json::Limits::UNLIMITED)
        } else {
            crate::json::parse_deep(text)
        }
        .map_err(|e| (true, e.to_string()))?;
        let record = if value.is_object() {
            Ok(Record::from_value(&value))
        } else {
            Err((
                false,
                "a record is a JSON object (an outcome, report, event or notice)".into(),
            ))
        };
        drop_flat(value);
        record
    }

    /// The record of `root` and of every entry below it, built without
    /// recursion: records are made parent first (so a child's index is
    /// above its parent's), then moved into their parents' entry slots from
    /// the last made to the first.
    fn from_value(root: &Value) -> Record {
        // (record, parent's index, slot in the parent's entries)
        let mut made: Vec<(Record, usize, usize)> = Vec::new();
        let mut todo: Vec<(&Value, usize, usize)> = vec![(root, usize::MAX, 0)];
        while let Some((v, parent, slot)) = todo.pop() {
            let me = made.len();
            let mut record = Record::fields(v);
            if let Some(list) = v.get("outcomes").and_then(Value::as_array) {
                record.entries = list.iter().map(|_| Record::default()).collect();
                todo.extend(list.iter().enumerate().map(|(i, entry)| (entry, me, i)));
            }
            made.push((record, parent, slot));
        }
        while made.len() > 1 {
            let Some((record, parent, slot)) = made.pop() else {
                break;
            };
            made[parent].0.entries[slot] = record;
        }
        made.pop().map(|(record, _, _)| record).unwrap_or_default()
    }

    /// The fields of `v` itself (its entries are left empty).
    fn fields(v: &Value) -> Record {
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
            output: v.get("output").map(compact),
            phase: text_at(v, "/phase"),
            notice_kind: text_at(v, "/event"),
            reason: text_at(v, "/reason"),
            entries: Vec::new(),
        }
    }
}

impl Drop for Record {
    /// Frees the entries below this record one by one (a report nested in
    /// its entries 50,000 deep would otherwise be dropped by recursion, one
    /// frame per level).
    fn drop(&mut self) {
        let mut below = std::mem::take(&mut self.entries);
        while let Some(mut entry) = below.pop() {
            below.append(&mut entry.entries);
        }
    }
}

/// Drops a value without recursion (serde_json's drop recurses once per
/// nesting level).
fn drop_flat(value: Value) {
    let mut below = vec![value];
    while let Some(v) = below.pop() {
        match v {
            Value::Array(items) => below.extend(items.into_iter().filter(is_container)),
            Value::Object(map) => below.extend(map.into_iter().map(|(_, v)| v).filter(is_container)),
            _ => {}
        }
    }
}

fn is_container(v: &Value) -> bool {
    matches!(v, Value::Array(_) | Value::Object(_))
}

/// A value as compact JSON text, exactly as `serde_json::to_writer` writes
/// it, without recursion: containers are walked with a heap stack, and each
/// scalar and key is written by serde_json itself.
fn compact(value: &Value) -> NulString {
    enum Open<'a> {
        Array(std::slice::Iter<'a, Value>),
        Object(serde_json::map::Iter<'a>),
    }
    let mut buf: Vec<u8> = Vec::with_capacity(64);
    let mut open: Vec<(Open<'_>, bool)> = Vec::new();
    let mut next = Some(value);
    loop {
        match next.take() {
            Some(Value::Array(items)) => {
                buf.push(b'[');
                open.push((Open::Array(items.iter()), true));
            }
            Some(Value::Object(map)) => {
                buf.push(b'{');
                open.push((Open::Object(map.iter()), true));
            }
            // Writing to a Vec fails only for a non-string key, which a
            // Value cannot hold.
            Some(scalar) => drop(serde_json::to_writer(&mut buf, scalar)),
            None => {}
        }
        let Some((container, first)) = open.last_mut() else {
            break;
        };
        match container {
            Open::Array(items) => match items.next() {
                Some(item) => {
                    if !std::mem::take(first) {
                        buf.push(b',');
                    }
                    next = Some(item);
                }
                None => {
                    buf.push(b']');
                    open.pop();
                }
            },
            Open::Object(entries) => match entries.next() {
                Some((key, item)) => {
                    if !std::mem::take(first) {
                        buf.push(b',');
                    }
                    drop(serde_json::to_writer(&mut buf, key));
                    buf.push(b':');
                    next = Some(item);
                }
                None => {
                    buf.push(b'}');
                    open.pop();
                }
            },
        }
    }
    // serde_json writes UTF-8 and escapes a NUL.
    NulString::new(String::from_utf8(buf).unwrap_or_else(|_| "null".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The iterative writer writes what serde_json writes, on values of
    /// every kind (escapes, numbers, nesting, key order, empty containers).
    #[test]
    fn compact_text_is_what_serde_json_writes() {
        let texts = [
            r#"null"#,
            r#"[]"#,
            r#"{}"#,
            r#"[[],{},[[]],{"a":{}}]"#,
            r#"{"z": 1, "a": [1, 2.5, -0.0, 1e300, 18446744073709551615, -9223372036854775808], "q\"\u0000\n": "\u2028\ud83d\ude00\t\u001f"}"#,
            r#"[true, false, null, "x", {"k": [{"k": [0]}]}]"#,
        ];
        for t in texts {
            let v: Value = serde_json::from_str(t).unwrap();
            assert_eq!(compact(&v).as_str(), serde_json::to_string(&v).unwrap(), "{t}");
        }
        let deep: Value = serde_json::from_str(&format!("{}1{}", "[{\"a\":".repeat(50), "}]".repeat(50))).unwrap();
        assert_eq!(compact(&deep).as_str(), serde_json::to_string(&deep).unwrap());
    }
}
