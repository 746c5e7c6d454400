//! What a handler asks the client through its call, checked before it is
//! sent: the params of `sampling/createMessage` (`check_sampling_params`),
//! and the requested schema of an elicitation, checked against MCP's
//! elicitation schema rules (MCP 2025-11-25, client/elicitation,
//! "Requested Schema": `ElicitRequestFormParams.requestedSchema` and its
//! `PrimitiveSchemaDefinition`s) before the question is sent. Not RCIP's
//! strict mode: `format` and the legacy `enumNames` form are MCP's own and
//! allowed here.
//!
//! The rules: the schema is `{"type": "object", "properties": {name:
//! primitive}, "required"?: [names of properties]}` (also `"$schema"`,
//! `"title"`, `"description"`), with no nesting. A primitive is one of
//! - string: `type "string"`, `title`, `description`, `minLength`,
//!   `maxLength` (non-negative integers), `format` (`email`, `uri`, `date`,
//!   `date-time`), `default` (a string);
//! - number: `type "number" | "integer"`, `title`, `description`,
//!   `minimum`, `maximum` (numbers), `default` (a number; an integer for
//!   `integer`);
//! - boolean: `type "boolean"`, `title`, `description`, `default`;
//! - single-select enum: `type "string"` with `enum` (strings), or with
//!   `oneOf` (objects `{"const": string, "title": string}`), or with `enum`
//!   and the legacy `enumNames` (strings, as many as `enum`); `default` one
//!   of the values;
//! - multi-select enum: `type "array"`, `items` `{"type": "string", "enum":
//!   [strings]}` or `{"anyOf": [{"const", "title"}]}`, `minItems`,
//!   `maxItems`, `default` (an array of the values).
//!
//! Any other keyword is refused, so a client never gets a form it cannot
//! render.

use serde_json::{Map, Value};

/// Checks `schema`; the error names the first problem by its JSON pointer.
pub(crate) fn check_requested_schema(schema: &Value) -> Result<(), String> {
    let Value::Object(top) = schema else {
        return Err("the requested schema must be an object".into());
    };
    only(
        top,
        "",
        &["type", "properties", "required", "$schema", "title", "description"],
    )?;
    if top.get("type").and_then(Value::as_str) != Some("object") {
        return Err("/type of the requested schema must be \"object\"".into());
    }
    let properties = match top.get("properties") {
        Some(Value::Object(p)) => p,
        None => return Err("the requested schema needs \"properties\" (an object)".into()),
        Some(_) => return Err("/properties must be an object".into()),
    };
    for key in ["title", "description", "$schema"] {
        string_field(top, key, "")?;
    }
    for (name, property) in properties {
        check_primitive(property, &format!("/properties/{}", escape(name)))?;
    }
    if let Some(required) = top.get("required") {
        let Value::Array(names) = required else {
            return Err("/required must be an array of property names".into());
        };
        for (i, n) in names.iter().enumerate() {
            match n.as_str() {
                Some(s) if properties.contains_key(s) => {}
                Some(s) => return Err(format!("/required/{i}: \"{s}\" is not a property of the schema")),
                None => return Err(format!("/required/{i} must be a string")),
            }
        }
    }
    Ok(())
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Refuses keywords outside `allowed`.
fn only(m: &Map<String, Value>, at: &str, allowed: &[&str]) -> Result<(), String> {
    match m.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "{at}/{}: keyword not allowed in an MCP elicitation schema here (allowed: {})",
            escape(k),
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

fn string_field(m: &Map<String, Value>, key: &str, at: &str) -> Result<(), String> {
    match m.get(key) {
        None | Some(Value::String(_)) => Ok(()),
        Some(_) => Err(format!("{at}/{key} must be a string")),
    }
}

fn count_field(m: &Map<String, Value>, key: &str, at: &str) -> Result<(), String> {
    match m.get(key) {
        None => Ok(()),
        Some(v) if v.as_u64().is_some() => Ok(()),
        Some(_) => Err(format!("{at}/{key} must be a non-negative integer")),
    }
}

fn number_field(m: &Map<String, Value>, key: &str, at: &str) -> Result<(), String> {
    match m.get(key) {
        None | Some(Value::Number(_)) => Ok(()),
        Some(_) => Err(format!("{at}/{key} must be a number")),
    }
}

/// A non-empty array of strings, without duplicates.
fn strings<'a>(v: Option<&'a Value>, at: &str) -> Result<Vec<&'a str>, String> {
    let Some(Value::Array(items)) = v else {
        return Err(format!("{at} must be an array of strings"));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Some(s) = item.as_str() else {
            return Err(format!("{at}/{i} must be a string"));
        };
        if out.contains(&s) {
            return Err(format!("{at}/{i}: \"{s}\" appears twice"));
        }
        out.push(s);
    }
    if out.is_empty() {
        return Err(format!("{at} must hold at least one value"));
    }
    Ok(out)
}

/// `[{"const": string, "title": string}, ...]`: the values.
fn titled<'a>(v: Option<&'a Value>, at: &str) -> Result<Vec<&'a str>, String> {
    let Some(Value::Array(items)) = v else {
        return Err(format!("{at} must be an array of {{\"const\", \"title\"}} objects"));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(o) = item else {
            return Err(format!("{at}/{i} must be an object {{\"const\", \"title\"}}"));
        };
        only(o, &format!("{at}/{i}"), &["const", "title"])?;
        match (
            o.get("const").and_then(Value::as_str),
            o.get("title").and_then(Value::as_str),
        ) {
            (Some(c), Some(_)) if !out.contains(&c) => out.push(c),
            (Some(c), Some(_)) => return Err(format!("{at}/{i}: \"{c}\" appears twice")),
            _ => return Err(format!("{at}/{i} needs \"const\" and \"title\" (strings)")),
        }
    }
    if out.is_empty() {
        return Err(format!("{at} must hold at least one option"));
    }
    Ok(out)
}

fn check_primitive(property: &Value, at: &str) -> Result<(), String> {
    let Value::Object(p) = property else {
        return Err(format!("{at} must be an object (a primitive schema)"));
    };
    string_field(p, "title", at)?;
    string_field(p, "description", at)?;
    let default = p.get("default");
    match p.get("type").and_then(Value::as_str) {
        Some("string") if p.contains_key("enum") || p.contains_key("oneOf") => {
            let values = if p.contains_key("oneOf") {
                only(p, at, &["type", "title", "description", "oneOf", "default"])?;
                titled(p.get("oneOf"), &format!("{at}/oneOf"))?
            } else {
                only(p, at, &["type", "title", "description", "enum", "enumNames", "default"])?;
                let values = strings(p.get("enum"), &format!("{at}/enum"))?;
                if p.contains_key("enumNames") {
                    let Some(Value::Array(names)) = p.get("enumNames") else {
                        return Err(format!("{at}/enumNames must be an array of strings"));
                    };
                    if names.len() != values.len() || !names.iter().all(Value::is_string) {
                        return Err(format!(
                            "{at}/enumNames must hold one string per enum value ({})",
                            values.len()
                        ));
                    }
                }
                values
            };
            match default {
                None => Ok(()),
                Some(Value::String(d)) if values.contains(&d.as_str()) => Ok(()),
                Some(_) => Err(format!("{at}/default must be one of the enum's values")),
            }
        }
        Some("string") => {
            only(p, at, &["type", "title", "description", "minLength", "maxLength", "format", "default"])?;
            count_field(p, "minLength", at)?;
            count_field(p, "maxLength", at)?;
            match p.get("format") {
                None => {}
                Some(Value::String(f)) if ["email", "uri", "date", "date-time"].contains(&f.as_str()) => {}
                Some(_) => return Err(format!("{at}/format must be \"email\", \"uri\", \"date\" or \"date-time\"")),
            }
            string_field(p, "default", at)
        }
        Some(t @ ("number" | "integer")) => {
            only(p, at, &["type", "title", "description", "minimum", "maximum", "default"])?;
            number_field(p, "minimum", at)?;
            number_field(p, "maximum", at)?;
            match default {
                None => Ok(()),
                Some(Value::Number(n)) if t == "number" || n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) => Ok(()),
                Some(_) => Err(format!("{at}/default must be {}", if t == "number" { "a number" } else { "an integer" })),
            }
        }
        Some("boolean") => {
            only(p, at, &["type", "title", "description", "default"])?;
            match default {
                None | Some(Value::Bool(_)) => Ok(()),
                Some(_) => Err(format!("{at}/default must be a boolean")),
            }
        }
        Some("array") => {
            only(p, at, &["type", "title", "description", "items", "minItems", "maxItems", "default"])?;
            count_field(p, "minItems", at)?;
            count_field(p, "maxItems", at)?;
            let items_at = format!("{at}/items");
            let Some(Value::Object(items)) = p.get("items") else {
                return Err(format!("{items_at} must be an object (the options of a multi-select)"));
            };
            let values = if items.contains_key("anyOf") {
                only(items, &items_at, &["anyOf"])?;
                titled(items.get("anyOf"), &format!("{items_at}/anyOf"))?
            } else {
                only(items, &items_at, &["type", "enum"])?;
                if items.get("type").and_then(Value::as_str) != Some("string") {
                    return Err(format!("{items_at}/type must be \"string\""));
                }
                strings(items.get("enum"), &format!("{items_at}/enum"))?
            };
            match default {
                None => Ok(()),
                Some(Value::Array(d)) if d.iter().all(|v| v.as_str().is_some_and(|s| values.contains(&s))) => Ok(()),
                Some(_) => Err(format!("{at}/default must be an array of the options' values")),
            }
        }
        Some(other) => Err(format!(
            "{at}/type \"{other}\" is not an MCP elicitation type (string, number, integer, boolean, array of enum values)"
        )),
        None => Err(format!("{at} needs \"type\" (a string)")),
    }
}

/// Checks a handler's `sampling/createMessage` params against what MCP
/// 2025-11-25 (client/sampling, `CreateMessageRequestParams`) requires:
/// an object with `messages`, a non-empty array of `{"role": "user" |
/// "assistant", "content": object | array of objects}`, and `maxTokens`, a
/// positive integer. The other fields (`systemPrompt`, `modelPreferences`,
/// `temperature`, `stopSequences`, `includeContext`, `metadata`, `tools`,
/// ...) go to the client as they are; the client checks them.
pub(crate) fn check_sampling_params(params: &Value) -> Result<(), String> {
    let Value::Object(p) = params else {
        return Err("the sampling params must be an object".into());
    };
    let Some(Value::Array(messages)) = p.get("messages") else {
        return Err("the sampling params need \"messages\" (an array)".into());
    };
    if messages.is_empty() {
        return Err("/messages must hold at least one message".into());
    }
    for (i, m) in messages.iter().enumerate() {
        match m.get("role").and_then(Value::as_str) {
            Some("user" | "assistant") => {}
            _ => return Err(format!("/messages/{i}/role must be \"user\" or \"assistant\"")),
        }
        match m.get("content") {
            Some(Value::Object(_)) => {}
            Some(Value::Array(blocks)) if !blocks.is_empty() && blocks.iter().all(Value::is_object) => {}
            _ => {
                return Err(format!(
                    "/messages/{i}/content must be a content block or an array of them"
                ))
            }
        }
    }
    match p.get("maxTokens").and_then(Value::as_u64) {
        Some(n) if n >= 1 => Ok(()),
        _ => Err("/maxTokens must be a positive integer".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::check_requested_schema as check;

    #[test]
    fn sampling_params_need_messages_and_max_tokens() {
        use super::check_sampling_params as sampling;
        let good = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 100});
        sampling(&good).unwrap();
        for (params, place) in [
            (json!([]), "must be an object"),
            (json!({"maxTokens": 1}), "\"messages\""),
            (json!({"messages": [], "maxTokens": 1}), "/messages"),
            (
                json!({"messages": [{"role": "system", "content": {}}], "maxTokens": 1}),
                "/messages/0/role",
            ),
            (
                json!({"messages": [{"role": "user", "content": "hi"}], "maxTokens": 1}),
                "/messages/0/content",
            ),
            (
                json!({"messages": [{"role": "user", "content": {}}], "maxTokens": 0}),
                "/maxTokens",
            ),
        ] {
            let e = sampling(&params).expect_err(&params.to_string());
            assert!(e.contains(place), "{params}: {e}");
        }
    }
    use serde_json::json;

    #[test]
    fn the_conformance_schemas_pass() {
        // SEP-1034: defaults of every primitive type.
        check(&json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }}))
        .unwrap();
        // SEP-1330: the five enum forms, the legacy one included.
        check(&json!({"type": "object", "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"}]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2"], "enumNames": ["Option One", "Option Two"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"}]}}
        }}))
        .unwrap();
        check(&json!({"type": "object", "properties": {
            "email": {"type": "string", "format": "email", "minLength": 3}
        }, "required": ["email"]}))
        .unwrap();
    }

    #[test]
    fn what_mcp_does_not_allow_is_refused_with_its_place() {
        let cases = [
            (json!([]), "must be an object"),
            (json!({"type": "array", "properties": {}}), "/type"),
            (json!({"type": "object"}), "needs \"properties\""),
            (
                json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}),
                "/properties/a/type",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}),
                "/properties/a/pattern",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}),
                "/properties/a/format",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "integer", "default": 1.5}}}),
                "/properties/a/default",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "default": "y"}}}),
                "/properties/a/default",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x", "y"], "enumNames": ["X"]}}}),
                "/properties/a/enumNames",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "number"}}}}),
                "/properties/a/items",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["b"]}),
                "/required/0",
            ),
            (
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
                "/additionalProperties",
            ),
        ];
        for (schema, place) in cases {
            let e = check(&schema).expect_err(&schema.to_string());
            assert!(e.contains(place), "{schema}: {e}");
        }
    }
}
