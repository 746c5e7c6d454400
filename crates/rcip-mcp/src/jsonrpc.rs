//! JSON-RPC 2.0 framing for the MCP session: classifying what arrives,
//! building what leaves. MCP (2025-11-25, "Base Protocol") narrows JSON-RPC:
//! request ids are strings or integers and never `null`, params are objects,
//! and batches are not part of the protocol.

use rcip::json::{JsonError, Limits};
use serde_json::{json, Map, Value};

/// Invalid JSON was received.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not offered.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (MCP: also an unknown tool).
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// Internal error (for example: the runtime is closed).
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// What one message turned out to be.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// A request: it gets exactly one response.
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    /// A notification: it never gets a response.
    Notification { method: String, params: Option<Value> },
    /// A response to a request this session sent: `Ok(result)` or
    /// `Err(error object)`.
    Response { id: Value, outcome: Result<Value, Value> },
    /// A message that is not valid JSON-RPC: answered with this error (the
    /// id is `null` when it could not be read).
    Invalid { id: Value, code: i64, message: String },
    /// Something that cannot be answered (a malformed response).
    Ignored,
}

/// A request id MCP accepts: a string or an integer.
fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        // Integers within 64 bits, exactly as sent (parse_bytes_exact);
        // a larger one reads as a double and is refused.
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Reads one message (one line of the stdio transport, without its
/// newline).
pub(crate) fn classify(bytes: &[u8], limits: &Limits) -> Incoming {
    // Exact integers: request ids are compared and echoed as sent.
    let value = match rcip::json::parse_bytes_exact(bytes, limits) {
        Ok(v) => v,
        Err(e) => {
            let message = match e {
                JsonError::NotUtf8 => "Parse error: the message is not UTF-8".to_string(),
                other => format!("Parse error: {other}"),
            };
            return Incoming::Invalid {
                id: Value::Null,
                code: PARSE_ERROR,
                message,
            };
        }
    };
    if let Some(key) = duplicate_envelope_key(bytes) {
        return duplicate_key_error(&key);
    }
    classify_value(value)
}

/// The answer to a message with a duplicate key in its envelope
/// ([`duplicate_envelope_key`]): `-32600` with id `null`. Not `-32700`:
/// the text is JSON (RFC 8259 only says names SHOULD be unique), but it is
/// no valid Request object, since readers disagree on which value counts
/// (a proxy that reads the first `method` or `name` and a server that
/// reads the last would act on different messages); and the id may be the
/// duplicate, so none is echoed.
pub(crate) fn duplicate_key_error(key: &str) -> Incoming {
    let shown: String = key.chars().take(64).collect();
    Incoming::Invalid {
        id: Value::Null,
        code: INVALID_REQUEST,
        message: format!("Invalid Request: the key \"{shown}\" appears twice in the message"),
    }
}

/// The first key that appears twice in the message object or in its
/// `params` object (keys compared after unescaping), if any. `text` must
/// be JSON text (parsed already); deeper objects (tool arguments and
/// other payloads) keep the RCIP rule, the last of duplicate keys wins.
/// One pass, linear in the text; only keys at those two levels are
/// decoded.
pub(crate) fn duplicate_envelope_key(text: &[u8]) -> Option<String> {
    use std::collections::HashSet;
    // The open containers, innermost last (b'{' or b'[').
    let mut stack: Vec<u8> = Vec::new();
    let mut expect_key = false;
    let mut top: HashSet<String> = HashSet::new();
    let mut params: HashSet<String> = HashSet::new();
    let mut last_top_key = String::new();
    // The object at depth 2 is the value of the top-level "params".
    let mut in_params = false;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                let start = i;
                let mut escaped = false;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    if text[i] == b'\\' {
                        escaped = true;
                        i += 1;
                    }
                    i += 1;
                }
                let depth = stack.len();
                if expect_key && (depth == 1 || (depth == 2 && in_params)) {
                    let raw = &text[start..=i.min(text.len() - 1)];
                    let key = if escaped {
                        serde_json::from_slice::<String>(raw).unwrap_or_default()
                    } else {
                        String::from_utf8_lossy(&raw[1..raw.len() - 1]).into_owned()
                    };
                    let set = if depth == 1 { &mut top } else { &mut params };
                    if set.contains(&key) {
                        return Some(key);
                    }
                    if depth == 1 {
                        last_top_key.clone_from(&key);
                    }
                    set.insert(key);
                }
                expect_key = false;
            }
            b'{' => {
                stack.push(b'{');
                expect_key = true;
                if stack.len() == 2 && last_top_key == "params" {
                    in_params = true;
                }
            }
            b'[' => {
                stack.push(b'[');
                expect_key = false;
            }
            b'}' | b']' => {
                stack.pop();
                if stack.len() < 2 {
                    in_params = false;
                }
                expect_key = false;
            }
            b',' => expect_key = stack.last() == Some(&b'{'),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Classifies one parsed message (parsed as [`classify`] parses: integers
/// exact).
pub(crate) fn classify_value(value: Value) -> Incoming {
    let Value::Object(mut map) = value else {
        let message = if value.is_array() {
            "Invalid Request: JSON-RPC batches are not part of MCP; send one message per line"
        } else {
            "Invalid Request: a message must be a JSON object"
        };
        return Incoming::Invalid {
            id: Value::Null,
            code: INVALID_REQUEST,
            message: message.into(),
        };
    };
    let id = map.remove("id");
    let id_ok = id.as_ref().is_some_and(valid_id);
    let reply_id = if id_ok {
        id.clone().unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let version_ok = map.get("jsonrpc").and_then(Value::as_str) == Some("2.0");

    match map.remove("method") {
        Some(Value::String(method)) => {
            let invalid = |message: &str| Incoming::Invalid {
                id: reply_id.clone(),
                code: INVALID_REQUEST,
                message: format!("Invalid Request: {message}"),
            };
            if !version_ok {
                return invalid("\"jsonrpc\" must be \"2.0\"");
            }
            if id.is_some() && !id_ok {
                return invalid("\"id\" must be a string or an integer (MCP: never null)");
            }
            let params = map.remove("params");
            // MCP: params are an object (JSON-RPC's by-position arrays are
            // not part of the protocol).
            if params.as_ref().is_some_and(|p| !p.is_object()) {
                return invalid("\"params\" must be an object");
            }
            match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            }
        }
        Some(_) => Incoming::Invalid {
            id: reply_id,
            code: INVALID_REQUEST,
            message: "Invalid Request: \"method\" must be a string".into(),
        },
        None => {
            let result = map.remove("result");
            let error = map.remove("error");
            match (result, error) {
                (Some(result), None) if id_ok && version_ok => Incoming::Response {
                    id: reply_id,
                    outcome: Ok(result),
                },
                (None, Some(error)) if id_ok && version_ok && error.is_object() => Incoming::Response {
                    id: reply_id,
                    outcome: Err(error),
                },
                // A malformed response: JSON-RPC never answers a response.
                (Some(_), _) | (_, Some(_)) => Incoming::Ignored,
                (None, None) => Incoming::Invalid {
                    id: reply_id,
                    code: INVALID_REQUEST,
                    message: "Invalid Request: neither a request (\"method\") nor a response (\"result\" or \"error\")"
                        .into(),
                },
            }
        }
    }
}

/// The key of a request id: its JSON text as serde_json writes it (a
/// string with its quotes, an integer exactly as sent), so `1` and `"1"`
/// are different ids and integers beyond 2^53 stay distinct.
pub(crate) fn id_key(id: &Value) -> String {
    id.to_string()
}

/// A success response.
pub(crate) fn response(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error response.
pub(crate) fn error_response(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// A request this session sends.
pub(crate) fn request(id: &Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification this session sends.
pub(crate) fn notification(method: &str, params: Option<Value>) -> String {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::String("2.0".into()));
    m.insert("method".into(), Value::String(method.into()));
    if let Some(p) = params {
        m.insert("params".into(), p);
    }
    Value::Object(m).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_in_the_envelope_are_found_and_payload_keys_are_not() {
        let dup = |t: &str| duplicate_envelope_key(t.as_bytes());
        assert_eq!(
            dup(r#"{"jsonrpc":"2.0","id":1,"method":"ping","id":2}"#),
            Some("id".into())
        );
        assert_eq!(
            dup(r#"{"jsonrpc":"2.0","id":1,"method":"a","\u006dethod":"b"}"#),
            Some("method".into())
        );
        assert_eq!(
            dup(r#"{"id":1,"method":"tools/call","params":{"name":"a","arguments":{},"name":"b"}}"#),
            Some("name".into())
        );
        // Payload keys, nested objects and strings that look like keys.
        assert_eq!(
            dup(r#"{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1,"x":2}}}"#),
            None
        );
        assert_eq!(
            dup(r#"{"id":"\",\"id\":","method":"m","params":{"_meta":{"k":[{"k":1}],"j":{"k":2}}}}"#),
            None
        );
        assert_eq!(
            dup(r#"{"a":{"b":1,"b":2},"params":{"x":[1,{"x":1}],"y":1},"c":[{"c":1}]}"#),
            None
        );
        assert_eq!(dup(r#"{"result":{"a":1},"error":{"a":1}}"#), None);
        assert_eq!(dup(r#"{"x":{"params":{"a":1,"a":2}}}"#), None);
        assert_eq!(dup("[1,2]"), None);
        // Through classify: -32600 with id null.
        let limits = Limits {
            max_bytes: 1 << 20,
            max_depth: 64,
        };
        match classify(
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}"#,
            &limits,
        ) {
            Incoming::Invalid { id, code, message } => {
                assert_eq!((id, code), (Value::Null, INVALID_REQUEST));
                assert!(message.contains("\"method\" appears twice"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// Issue 27: a message with a syntax error deep in its arguments, after
    /// long text, is refused (-32700) through the reader that tracks its
    /// position (over the slice, this 4 MB message took 14 s against 0.1 s
    /// valid in a debug build, one scan of the text per level on the way
    /// out of the error). The cost against the valid message is checked
    /// by `rcip-hostile` (make bench), not here.
    #[test]
    fn a_deep_parse_error_in_a_long_message_is_a_parse_error() {
        let limits = Limits {
            max_bytes: crate::MCP_DEFAULT_MAX_MESSAGE_BYTES,
            max_depth: crate::session::MESSAGE_MAX_DEPTH,
        };
        let d = crate::session::MESSAGE_MAX_DEPTH - 4;
        let pad = "a".repeat(4_000_000);
        let message = |bottom: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{"pad":"{pad}","q":{}{bottom}{}}}}}}}"#,
                "[".repeat(d),
                "]".repeat(d)
            )
        };
        let (valid, bad) = (message("1"), message("x"));
        assert!(matches!(classify(valid.as_bytes(), &limits), Incoming::Request { .. }));
        match classify(bad.as_bytes(), &limits) {
            Incoming::Invalid { id, code, message } => {
                assert_eq!((id, code), (Value::Null, PARSE_ERROR));
                assert!(message.starts_with("Parse error: the text is not JSON"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
