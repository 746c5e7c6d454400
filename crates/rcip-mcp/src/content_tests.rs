//! Session tests of content blocks from output properties (**rcip**,
//! src/mcp/content.rs, docs/MCP.md "Content blocks"): a capability whose
//! handler returns the output its input names, so each test picks the
//! values.

use super::*;
use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, Runtime};
use serde_json::{json, Value};
use std::sync::Arc;

/// A 1x1 PNG, standard base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "studio", "name": "Studio", "description": "Renders media.", "version": "1.0.0"},
        "scopes": [],
        "capabilities": [
            {"id": "media.render", "title": "Render", "description": "Returns the output it is given.", "scopeIds": [],
             "effect": "read",
             "inputSchema": {"type": "object", "properties": {"output": {"type": "object"}}, "required": ["output"]},
             "outputSchema": {"type": "object", "properties": {
                 "caption": {}, "chart": {}, "clip": {}, "doc": {}, "gallery": {"type": "array"},
                 "count": {"type": "integer"}}}},
            {"id": "media.count", "title": "Count", "description": "A number.", "scopeIds": [], "effect": "read",
             "inputSchema": {"type": "object"}, "outputSchema": {"type": "integer"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).expect("valid catalog")
}

struct Studio {
    _runtime: Runtime,
    _binding: rcip::runtime::Binding,
    session: McpSession,
    sent: Arc<Mutex<Vec<Value>>>,
}

fn studio(content: Value) -> Result<Studio, String> {
    let runtime = Runtime::new(&catalog());
    let binding = runtime
        .host()
        .bind(
            "media.render",
            Arc::new(|inv: Invocation| {
                let output = inv.input()["output"].clone();
                inv.complete(output).unwrap()
            }),
            None,
        )
        .unwrap();
    let options = McpOptions::from_value(&json!({"workers": 0, "content": content}))?;
    let sent = Arc::new(Mutex::new(Vec::new()));
    let s = sent.clone();
    let session = McpSession::new(
        &runtime,
        options,
        Arc::new(move |m: &str| s.lock().push(serde_json::from_str(m).unwrap())),
    )
    .map_err(|e| e.to_string())?;
    session.receive(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#);
    session.receive(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    Ok(Studio {
        _runtime: runtime,
        _binding: binding,
        session,
        sent,
    })
}

impl Studio {
    fn render(&self, output: Value) -> Value {
        self.sent.lock().clear();
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "media.render", "arguments": {"output": output}}});
        self.session.receive(call.to_string().as_bytes());
        let sent = self.sent.lock();
        sent.iter().find(|m| m["id"] == 1).cloned().expect("answered")["result"].clone()
    }
}

fn all_blocks() -> Value {
    json!({"media.render": [
        {"type": "text", "property": "caption"},
        {"type": "image", "property": "chart"},
        {"type": "audio", "property": "clip"},
        {"type": "resource", "property": "doc"},
        {"type": "json"}
    ]})
}

#[test]
fn mapped_properties_become_blocks_and_structured_content_stays_the_output() {
    let s = studio(all_blocks()).unwrap();
    let output = json!({
        "caption": "Weekly load",
        "chart": {"data": PNG, "mimeType": "image/png"},
        "clip": {"data": "UklGRiQAAABXQVZF", "mimeType": "audio/wav"},
        "doc": {"uri": "studio://report/7", "mimeType": "text/plain", "text": "seven"}
    });
    let r = s.render(output.clone());
    assert_eq!(r["isError"], false);
    assert_eq!(r["structuredContent"], output);
    assert_eq!(
        r["content"],
        json!([
            {"type": "text", "text": "Weekly load"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRiQAAABXQVZF", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "studio://report/7", "mimeType": "text/plain", "text": "seven"}},
            {"type": "text", "text": output.to_string()}
        ])
    );
    assert_eq!(r["_meta"]["rcip/outcome"]["status"], "succeeded");
    assert!(r["_meta"].get("rcip/contentReplaced").is_none());
    assert_eq!(s.session.content_replaced(), 0);
}

#[test]
fn absent_properties_give_no_block_and_arrays_one_per_item() {
    let s = studio(json!({"media.render": [
        {"type": "image", "property": "gallery"}, {"type": "text", "property": "caption"}]}))
    .unwrap();
    let r =
        s.render(json!({"gallery": [{"data": PNG, "mimeType": "image/png"}, {"data": PNG, "mimeType": "image/gif"}]}));
    let types: Vec<&str> = r["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["image", "image"]);
    assert_eq!(r["content"][1]["mimeType"], "image/gif");
    // Nothing mapped is present: an empty content array, still succeeded.
    let r = s.render(json!({"count": 3}));
    assert_eq!(r["content"], json!([]));
    assert_eq!(r["structuredContent"], json!({"count": 3}));
}

#[test]
fn invalid_values_become_counted_notes_and_never_change_the_outcome() {
    let s = studio(all_blocks()).unwrap();
    let cases = [
        ("caption", json!(7), "not a string"),
        (
            "chart",
            json!({"data": "not base64!", "mimeType": "image/png"}),
            "is not base64",
        ),
        (
            "chart",
            json!({"data": "iVBORw0KGgo", "mimeType": "image/png"}),
            "is not base64",
        ), // no padding
        ("chart", json!({"data": PNG}), "\"mimeType\" is required"),
        ("chart", json!({"data": PNG, "mimeType": "png"}), "is not a MIME type"),
        (
            "chart",
            json!({"data": PNG, "mimeType": "audio/wav"}),
            "is not an image/ type",
        ),
        (
            "chart",
            json!({"data": "", "mimeType": "image/png"}),
            "\"data\" is empty",
        ),
        ("clip", json!("UklGRiQAAABXQVZF"), "not an object"),
        (
            "doc",
            json!({"uri": "studio://r", "mimeType": "text/plain"}),
            "needs \"text\" or \"blob\"",
        ),
        (
            "doc",
            json!({"uri": "studio://r", "text": "x"}),
            "\"mimeType\" is required",
        ),
        (
            "doc",
            json!({"uri": "studio://r", "mimeType": "application/pdf", "blob": "%%%"}),
            "\"blob\" is not base64",
        ),
        ("doc", json!({"mimeType": "text/plain", "text": "x"}), "\"uri\" must be"),
    ];
    for (i, (property, value, why)) in cases.iter().enumerate() {
        let output = json!({ *property: value });
        let r = s.render(output.clone());
        assert_eq!(r["isError"], false, "{property}: {r}");
        assert_eq!(r["_meta"]["rcip/outcome"]["status"], "succeeded");
        assert_eq!(r["structuredContent"], output);
        assert_eq!(r["_meta"]["rcip/contentReplaced"], 1, "{property}: {r}");
        let note = r["content"][0]["text"].as_str().unwrap();
        assert_eq!(r["content"][0]["type"], "text");
        assert!(
            note.starts_with(&format!("[rcip: the output property \"{property}\"")),
            "{note}"
        );
        assert!(note.contains(why), "{why} not in {note}");
        // The json entry still follows.
        assert_eq!(r["content"][1]["text"], output.to_string());
        assert_eq!(s.session.content_replaced(), i as u64 + 1);
    }
    // A blob resource that is valid.
    let r = s.render(json!({"doc": {"uri": "studio://r", "mimeType": "application/pdf", "blob": "JVBERi0="}}));
    assert_eq!(r["content"][0]["resource"]["blob"], "JVBERi0=");
    assert_eq!(s.session.content_replaced(), cases.len() as u64);
}

#[test]
fn mappings_are_checked_against_the_output_schema_when_the_session_is_created() {
    let refused = |content: Value, needle: &str| {
        let e = studio(content).err().expect("refused");
        assert!(e.contains(needle), "{needle} not in {e}");
    };
    refused(
        json!({"no.such": [{"type": "json"}]}),
        "\"no.such\", which is not a capability",
    );
    refused(json!({"media.count": [{"type": "json"}]}), "not an object schema");
    refused(
        json!({"media.render": [{"type": "image", "property": "poster"}]}),
        "\"poster\"",
    );
    refused(json!({"media.render": [{"type": "image"}]}), "needs \"property\"");
    refused(
        json!({"media.render": [{"type": "video", "property": "clip"}]}),
        "/content/media.render/0/type",
    );
    refused(
        json!({"media.render": [{"type": "json", "property": "clip"}]}),
        "takes no property",
    );
    refused(
        json!({"media.render": [{"type": "text", "property": "caption", "as": 1}]}),
        "no field \"as\"",
    );
    refused(json!({"media.render": {"type": "json"}}), "must be an array");
    refused(json!([]), "/content must be an object");
}

#[test]
fn unmapped_capabilities_and_failures_keep_the_json_text() {
    let s = studio(json!({})).unwrap();
    let output = json!({"caption": "plain"});
    let r = s.render(output.clone());
    assert_eq!(r["content"], json!([{"type": "text", "text": output.to_string()}]));
}

#[test]
#[cfg(feature = "http")]
fn a_server_checks_the_mapping_before_it_listens() {
    let options =
        http::HttpOptions::from_value(&json!({"content": {"media.render": [{"type": "audio", "property": "poster"}]}}))
            .unwrap();
    let bound = http::McpHttpServer::bind(&catalog(), "127.0.0.1:0", options, |_: &http::SessionRequest<'_>| {
        Ok::<Runtime, String>(Runtime::new(&catalog()))
    });
    let Err(e) = bound else {
        panic!("a mapping of an undeclared property was accepted")
    };
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("\"poster\""), "{e}");
}
