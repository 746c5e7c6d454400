//! Content blocks from output properties (**rcip**, docs/MCP.md "Content
//! blocks"): an opt-in, per-capability mapping in the session options
//! (`"content"`) names output properties whose values become MCP content
//! blocks (text, image, audio, embedded resource) of a succeeded call's
//! `CallToolResult`, while `structuredContent` stays the output that
//! matched the output schema. The output schema is the contract: a mapping
//! may only name properties the capability's output schema declares, and
//! is checked when the session (or server) is created.
//!
//! A value that is not a valid block (wrong type, base64 that is not
//! canonical standard base64, a missing or malformed MIME type, ...) never
//! changes the RCIP outcome: the block is replaced by a text note saying
//! why, and counted ([`Blocks::replaced`]).

use base64::Engine as _;
use serde_json::{json, Map, Value};

use rcip::catalog::Catalog;

/// What one content entry of a mapping makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContentSource {
    /// The structured content serialized as one text block (what a
    /// capability without a mapping gets; MCP asks for it for clients that
    /// do not read `structuredContent`).
    Json,
    /// The property's string value as a text block.
    Text(String),
    /// The property's value `{"data": base64, "mimeType": "image/..."}` as
    /// an image block.
    Image(String),
    /// The property's value `{"data": base64, "mimeType": "audio/..."}` as
    /// an audio block.
    Audio(String),
    /// The property's value `{"uri", "mimeType", "text" | "blob"}` as an
    /// embedded resource block.
    Resource(String),
}

impl ContentSource {
    fn property(&self) -> Option<&str> {
        match self {
            ContentSource::Json => None,
            ContentSource::Text(p) | ContentSource::Image(p) | ContentSource::Audio(p) | ContentSource::Resource(p) => {
                Some(p)
            }
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ContentSource::Json => "json",
            ContentSource::Text(_) => "text",
            ContentSource::Image(_) => "image",
            ContentSource::Audio(_) => "audio",
            ContentSource::Resource(_) => "resource",
        }
    }
}

/// The `"content"` session option: for each capability id, the blocks of
/// its succeeded results, in order.
pub type ContentMap = Vec<(String, Vec<ContentSource>)>;

/// Parses `{"<capability id>": [{"type": "json"} | {"type": "text" |
/// "image" | "audio" | "resource", "property": "<output property>"}, ...]}`.
pub(crate) fn parse(value: &Value) -> Result<ContentMap, String> {
    let Value::Object(map) = value else {
        return Err("/content must be an object of capability id to an array of content entries".into());
    };
    let mut out = Vec::with_capacity(map.len());
    for (id, entries) in map {
        let Value::Array(entries) = entries else {
            return Err(format!("/content/{id} must be an array of content entries"));
        };
        let mut sources = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("/content/{id}/{i}");
            let Value::Object(e) = entry else {
                return Err(format!("{at} must be an object {{\"type\", \"property\"?}}"));
            };
            if let Some(k) = e.keys().find(|k| *k != "type" && *k != "property") {
                return Err(format!("{at} has no field \"{k}\" (allowed: type, property)"));
            }
            let property = match e.get("property") {
                None => None,
                Some(Value::String(p)) => Some(p.clone()),
                Some(_) => return Err(format!("{at}/property must be a string (an output property)")),
            };
            let kind = e.get("type").and_then(Value::as_str).unwrap_or_default();
            let source = match (kind, property) {
                ("json", None) => ContentSource::Json,
                ("json", Some(_)) => return Err(format!("{at}: a \"json\" entry takes no property")),
                ("text" | "image" | "audio" | "resource", None) => {
                    return Err(format!("{at}: a \"{kind}\" entry needs \"property\""))
                }
                ("text", Some(p)) => ContentSource::Text(p),
                ("image", Some(p)) => ContentSource::Image(p),
                ("audio", Some(p)) => ContentSource::Audio(p),
                ("resource", Some(p)) => ContentSource::Resource(p),
                _ => {
                    return Err(format!(
                        "{at}/type must be \"json\", \"text\", \"image\", \"audio\" or \"resource\""
                    ))
                }
            };
            sources.push(source);
        }
        out.push((id.clone(), sources));
    }
    Ok(out)
}

/// Checks `mapping` against `catalog`: every id is a capability whose
/// output schema is an object schema (`"type": "object"`, so its output is
/// the structured content itself), and every property is one its
/// `properties` declares.
pub(crate) fn check(catalog: &Catalog, mapping: &ContentMap) -> Result<(), String> {
    for (id, sources) in mapping {
        let Some(capability) = catalog.capability(id) else {
            return Err(format!(
                "content maps \"{id}\", which is not a capability of the catalog"
            ));
        };
        let schema = &capability.output_schema;
        if !super::tools::is_object_schema(schema) {
            return Err(format!(
                "content maps \"{id}\", whose output schema is not an object schema (\"type\": \"object\")"
            ));
        }
        for p in sources.iter().filter_map(ContentSource::property) {
            if schema.get("properties").and_then(|props| props.get(p)).is_none() {
                return Err(format!(
                    "content of \"{id}\" names the output property \"{p}\", which its output schema does not declare"
                ));
            }
        }
    }
    Ok(())
}

/// The content blocks of one result.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Blocks {
    pub content: Vec<Value>,
    /// Blocks replaced by a text note because the value was not valid.
    pub replaced: u64,
}

/// The content blocks of a succeeded output (`structured` is the
/// `structuredContent`, an object for a mapped capability). An absent or
/// `null` property gives no block; an array gives one block per element.
pub(crate) fn blocks(sources: &[ContentSource], structured: &Value) -> Blocks {
    let mut b = Blocks::default();
    for source in sources {
        let Some(property) = source.property() else {
            b.content.push(json!({"type": "text", "text": structured.to_string()}));
            continue;
        };
        let values: Vec<&Value> = match structured.get(property) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().collect(),
            Some(v) => vec![v],
        };
        for value in values {
            match block(source, value) {
                Ok(block) => b.content.push(block),
                Err(why) => {
                    b.replaced += 1;
                    b.content.push(json!({
                        "type": "text",
                        "text": format!(
                            "[rcip: the output property \"{property}\" is not valid {} content ({why}); \
                             the block was left out, structuredContent has the whole output]",
                            source.kind()
                        )
                    }));
                }
            }
        }
    }
    b
}

/// One block from one value, or why the value is not one.
fn block(source: &ContentSource, value: &Value) -> Result<Value, String> {
    match source {
        ContentSource::Json => Ok(json!({"type": "text", "text": value.to_string()})),
        ContentSource::Text(_) => match value {
            Value::String(s) => Ok(json!({"type": "text", "text": s})),
            _ => Err("not a string".into()),
        },
        ContentSource::Image(_) | ContentSource::Audio(_) => {
            let kind = source.kind();
            let o = object(value)?;
            let data = base64_field(o, "data")?;
            let mime = mime_field(o)?;
            if !mime.to_ascii_lowercase().starts_with(&format!("{kind}/")) {
                return Err(format!("mimeType \"{mime}\" is not an {kind}/ type"));
            }
            Ok(json!({"type": kind, "data": data, "mimeType": mime}))
        }
        ContentSource::Resource(_) => {
            let o = object(value)?;
            let uri = match o.get("uri") {
                Some(Value::String(u)) if !u.is_empty() => u,
                _ => return Err("\"uri\" must be a non-empty string".into()),
            };
            let mime = mime_field(o)?;
            let mut resource = Map::new();
            resource.insert("uri".into(), Value::String(uri.clone()));
            resource.insert("mimeType".into(), Value::String(mime.to_string()));
            match (o.get("text"), o.get("blob")) {
                (Some(Value::String(t)), None) => {
                    resource.insert("text".into(), Value::String(t.clone()));
                }
                (None, Some(_)) => {
                    resource.insert("blob".into(), Value::String(base64_field(o, "blob")?.to_string()));
                }
                (Some(_), Some(_)) => return Err("it has both \"text\" and \"blob\"".into()),
                (Some(_), None) => return Err("\"text\" must be a string".into()),
                (None, None) => return Err("it needs \"text\" or \"blob\"".into()),
            }
            Ok(json!({"type": "resource", "resource": resource}))
        }
    }
}

fn object(value: &Value) -> Result<&Map<String, Value>, String> {
    value.as_object().ok_or_else(|| "not an object".to_string())
}

/// A non-empty field of canonical standard base64 (RFC 4648 section 4,
/// with padding), as MCP's `data` and `blob` are.
fn base64_field<'a>(o: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match o.get(key) {
        Some(Value::String(s)) if !s.is_empty() => match base64::engine::general_purpose::STANDARD.decode(s) {
            Ok(_) => Ok(s),
            Err(e) => Err(format!("\"{key}\" is not base64: {e}")),
        },
        Some(Value::String(_)) => Err(format!("\"{key}\" is empty")),
        _ => Err(format!("\"{key}\" must be a base64 string")),
    }
}

/// The required `mimeType`: `type/subtype` (RFC 6838 section 4.2 names,
/// optional parameters after `;`).
fn mime_field(o: &Map<String, Value>) -> Result<&str, String> {
    let Some(Value::String(mime)) = o.get("mimeType") else {
        return Err("\"mimeType\" is required (a string such as \"image/png\")".into());
    };
    let essence = mime.split(';').next().unwrap_or_default().trim();
    let name = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && s.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&c))
    };
    match essence.split_once('/') {
        Some((t, s)) if name(t) && name(s) => Ok(mime),
        _ => Err(format!("mimeType \"{mime}\" is not a MIME type (type/subtype)")),
    }
}
