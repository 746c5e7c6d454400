//! The mapping between RCIP and MCP tools (2025-11-25, "Tools"): a snapshot
//! capability entry becomes a tool, an RCIP outcome becomes a
//! `CallToolResult`. Pure functions over JSON values, so every rule has a
//! unit test (src/mcp/tests.rs).

use serde_json::{json, Map, Value};

/// The property a non-object input schema is offered under.
pub(crate) const INPUT_KEY: &str = "input";
/// The property a non-object output is returned under.
pub(crate) const RESULT_KEY: &str = "result";

/// True when MCP can take the schema as it is: a JSON object whose `type`
/// is exactly `"object"` (MCP 2025-11-25 requires `type: "object"` at the
/// root of `inputSchema` and `outputSchema`).
pub(crate) fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// `{"type": "object", "properties": {key: inner}, "required": [key],
/// "additionalProperties": false}`. An inner schema that is an object and
/// has no `$id` gets one (`urn:rcip:<capability>:<key>`), so the JSON
/// pointers of its own `$ref`s (`#/$defs/...`) keep resolving against it
/// and not against the wrapper.
pub(crate) fn wrap_schema(inner: &Value, capability_id: &str, key: &str) -> Value {
    let mut inner = inner.clone();
    if let Value::Object(map) = &mut inner {
        if !map.contains_key("$id") {
            let mut with_id = Map::new();
            with_id.insert("$id".into(), Value::String(format!("urn:rcip:{capability_id}:{key}")));
            with_id.extend(std::mem::take(map));
            *map = with_id;
        }
    }
    json!({
        "type": "object",
        "properties": { key: inner },
        "required": [key],
        "additionalProperties": false
    })
}

/// Tool annotations by effect: read → `readOnlyHint: true`; destructive →
/// `destructiveHint: true`; write and external → `destructiveHint: false`;
/// external → `openWorldHint: true`, and the other effects
/// `openWorldHint: false` (MCP reads a missing hint as true, which would
/// claim that every application capability reaches the outside world).
/// `idempotentHint` is never set: RCIP does not say whether a capability is
/// idempotent.
pub(crate) fn annotations(effect: &str) -> Value {
    match effect {
        "read" => json!({"readOnlyHint": true, "openWorldHint": false}),
        "destructive" => json!({"destructiveHint": true, "openWorldHint": false}),
        "write" => json!({"destructiveHint": false, "openWorldHint": false}),
        "external" => json!({"destructiveHint": false, "openWorldHint": true}),
        _ => json!({}),
    }
}

/// The tool for one capability entry of a snapshot (`{"id", "title",
/// "description", "scopeIds", "effect", "inputSchema", "outputSchema",
/// "tags", "usage"?, "bound", "available", "availability"?, "relevance"}`).
/// `revision` is the snapshot revision, or `None` to leave it out (for
/// comparing what tools/list returns across revisions).
pub(crate) fn tool_from_entry(entry: &Value, revision: Option<u64>) -> Value {
    let id = entry.get("id").and_then(Value::as_str).unwrap_or_default();
    let effect = entry.get("effect").and_then(Value::as_str).unwrap_or_default();
    let mut description = entry
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(when) = entry.pointer("/usage/whenToUse").and_then(Value::as_str) {
        if !description.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str("When to use: ");
        description.push_str(when);
    }
    let input = entry.get("inputSchema").cloned().unwrap_or(Value::Bool(true));
    let output = entry.get("outputSchema").cloned().unwrap_or(Value::Bool(true));
    let input_wrapped = !is_object_schema(&input);
    let output_wrapped = !is_object_schema(&output);

    let mut meta = Map::new();
    meta.insert("rcip/effect".into(), Value::String(effect.into()));
    meta.insert(
        "rcip/scopeIds".into(),
        entry.get("scopeIds").cloned().unwrap_or_else(|| json!([])),
    );
    meta.insert(
        "rcip/tags".into(),
        entry.get("tags").cloned().unwrap_or_else(|| json!([])),
    );
    meta.insert(
        "rcip/relevance".into(),
        entry.get("relevance").cloned().unwrap_or(Value::Null),
    );
    meta.insert(
        "rcip/bound".into(),
        entry.get("bound").cloned().unwrap_or(Value::Bool(false)),
    );
    meta.insert(
        "rcip/available".into(),
        entry.get("available").cloned().unwrap_or(Value::Bool(false)),
    );
    if let Some(a) = entry.get("availability") {
        meta.insert("rcip/availability".into(), a.clone());
    }
    if input_wrapped {
        meta.insert("rcip/inputWrapped".into(), Value::Bool(true));
    }
    if output_wrapped {
        meta.insert("rcip/outputWrapped".into(), Value::Bool(true));
    }
    if let Some(r) = revision {
        meta.insert("rcip/revision".into(), Value::from(r));
    }

    let mut tool = Map::new();
    tool.insert("name".into(), Value::String(id.into()));
    if let Some(t) = entry.get("title") {
        tool.insert("title".into(), t.clone());
    }
    tool.insert("description".into(), Value::String(description));
    tool.insert(
        "inputSchema".into(),
        if input_wrapped {
            wrap_schema(&input, id, INPUT_KEY)
        } else {
            input
        },
    );
    tool.insert(
        "outputSchema".into(),
        if output_wrapped {
            wrap_schema(&output, id, RESULT_KEY)
        } else {
            output
        },
    );
    tool.insert("annotations".into(), annotations(effect));
    tool.insert("_meta".into(), Value::Object(meta));
    Value::Object(tool)
}

/// How a tools/call's arguments become the capability input.
#[derive(Debug, PartialEq)]
pub(crate) enum Unwrapped {
    /// The capability input.
    Input(Value),
    /// The arguments do not have the wrapper's shape: this message for an
    /// `INPUT_INVALID` result, with the issue it found.
    Invalid { keyword: &'static str, message: String },
}

/// The capability input of a call: the arguments themselves for an object
/// input schema, else the `input` property of `{"input": ...}` and nothing
/// else.
pub(crate) fn unwrap_arguments(arguments: Value, input_schema: &Value) -> Unwrapped {
    if is_object_schema(input_schema) {
        return Unwrapped::Input(arguments);
    }
    let Value::Object(mut map) = arguments else {
        return Unwrapped::Invalid {
            keyword: "type",
            message: "must be object".into(),
        };
    };
    if let Some(extra) = map.keys().find(|k| *k != INPUT_KEY) {
        return Unwrapped::Invalid {
            keyword: "additionalProperties",
            message: format!("must NOT have additional properties (\"{extra}\"); the input goes in \"{INPUT_KEY}\""),
        };
    }
    match map.remove(INPUT_KEY) {
        Some(v) => Unwrapped::Input(v),
        None => Unwrapped::Invalid {
            keyword: "required",
            message: format!("must have required property '{INPUT_KEY}'"),
        },
    }
}

/// The RCIP outcome record of an `INPUT_INVALID` found while unwrapping
/// the arguments (no invocation ran: no id, no events).
pub(crate) fn unwrap_failure(capability_id: &str, keyword: &str, message: &str) -> Value {
    json!({
        "status": "failed",
        "capabilityId": capability_id,
        "error": {
            "code": "INPUT_INVALID",
            "message": "The tool arguments must be {\"input\": <the capability input>}.",
            "validationIssues": [{"instancePath": "", "keyword": keyword, "message": message}]
        }
    })
}

/// Epoch milliseconds as an RFC 3339 UTC time (`2026-01-05T09:30:00.000Z`).
pub(crate) fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The text content of a result.
fn text_content(text: String) -> Value {
    json!([{"type": "text", "text": text}])
}

/// What an MCP client is told about a confirmation it cannot approve.
fn confirmation_text(outcome: &Value, application: &str, note: Option<&str>) -> String {
    let capability = outcome.get("capabilityId").and_then(Value::as_str).unwrap_or("?");
    let c = outcome.get("confirmation").cloned().unwrap_or(Value::Null);
    let id = c.get("id").and_then(Value::as_str).unwrap_or("?");
    let title = c.get("title").and_then(Value::as_str).unwrap_or("?");
    let description = c.get("description").and_then(Value::as_str).unwrap_or("");
    let expires = c.get("expiresAt").and_then(Value::as_i64).unwrap_or(0);
    let mut text = format!(
        "{capability} did not run: it needs the user's confirmation in {application}.\n\
         Confirmation {id} \"{title}\": {description}\n\
         It expires at {} (expiresAt {expires}). Only {application} itself can approve it; \
         nothing sent over MCP can. Ask the user to approve it there, then check the result.",
        rfc3339(expires)
    );
    if let Some(n) = note {
        text.push('\n');
        text.push_str(n);
    }
    text
}

/// The text of a failed or denied outcome.
fn error_text(outcome: &Value) -> String {
    let capability = outcome.get("capabilityId").and_then(Value::as_str).unwrap_or("?");
    let status = outcome.get("status").and_then(Value::as_str).unwrap_or("failed");
    let code = outcome.pointer("/error/code").and_then(Value::as_str).unwrap_or("?");
    let message = outcome.pointer("/error/message").and_then(Value::as_str).unwrap_or("");
    let mut text = format!("{capability} {status}: {code}: {message}");
    if let Some(issues) = outcome.pointer("/error/validationIssues").and_then(Value::as_array) {
        text.push_str("\nValidation issues:");
        for issue in issues {
            let path = issue.get("instancePath").and_then(Value::as_str).unwrap_or("");
            let keyword = issue.get("keyword").and_then(Value::as_str).unwrap_or("?");
            let m = issue.get("message").and_then(Value::as_str).unwrap_or("");
            text.push_str(&format!(
                "\n- {} ({keyword}): {m}",
                if path.is_empty() { "(input)" } else { path }
            ));
        }
    }
    text
}

/// The `CallToolResult` of an RCIP outcome record.
///
/// - `succeeded`: `structuredContent` is the output (`{"result": output}`
///   when the output schema is not an object schema) and the text is that
///   structured content serialized, as MCP asks for backwards
///   compatibility.
/// - `failed`, `denied`, `confirmation_required`: `isError: true`, a text
///   for the model, and no `structuredContent` (it would have to match the
///   output schema).
///
/// Every result carries the outcome under `_meta["rcip/outcome"]` (a
/// succeeded one without its output, which is the structured content).
pub(crate) fn call_result(mut outcome: Value, output_wrapped: bool, application: &str, note: Option<&str>) -> Value {
    // The outcome is taken, not copied: its output moves into
    // `structuredContent`, the rest is `_meta["rcip/outcome"]`.
    let output = match &mut outcome {
        Value::Object(m) => m.remove("output"),
        _ => None,
    };
    let status = outcome.get("status").and_then(Value::as_str).unwrap_or("");
    match status {
        "succeeded" => {
            let output = output.unwrap_or(Value::Null);
            let structured = if output_wrapped {
                json!({RESULT_KEY: output})
            } else {
                output
            };
            json!({
                "content": text_content(structured.to_string()),
                "structuredContent": structured,
                "isError": false,
                "_meta": {"rcip/outcome": outcome}
            })
        }
        "confirmation_required" => json!({
            "content": text_content(confirmation_text(&outcome, application, note)),
            "isError": true,
            "_meta": {"rcip/outcome": outcome}
        }),
        _ => json!({
            "content": text_content(error_text(&outcome)),
            "isError": true,
            "_meta": {"rcip/outcome": outcome}
        }),
    }
}

/// The `elicitation/create` params that ask the MCP client's user to
/// approve a confirmation (form mode, no fields: accept approves, decline
/// and cancel decline).
pub(crate) fn elicitation_params(outcome: &Value, input: &Value, application: &str) -> Value {
    let capability = outcome.get("capabilityId").and_then(Value::as_str).unwrap_or("?");
    let c = outcome.get("confirmation").cloned().unwrap_or(Value::Null);
    let title = c.get("title").and_then(Value::as_str).unwrap_or("?");
    let description = c.get("description").and_then(Value::as_str).unwrap_or("");
    let effect = c.get("effect").and_then(Value::as_str).unwrap_or("?");
    let expires = c.get("expiresAt").and_then(Value::as_i64).unwrap_or(0);
    let message = format!(
        "{application} asks you to confirm \"{title}\" ({capability}, effect {effect}).\n{description}\n\
         Input: {input}\n\
         Accept to run it now, decline to refuse. This request expires at {}.",
        rfc3339(expires)
    );
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {}}
    })
}
