//! The catalog's two readers on generated catalogs (issue 35, item 4): the
//! input bytes drive a generator of catalog texts around every rule the
//! fast reader (`crates/rcip/src/catalog/fast.rs`) applies itself:
//! capability ids valid, invalid and repeated; declared and undeclared
//! scopes; the four effects and others; schemas that compile, that do not,
//! that are not schemas, shared by text and written differently; tags and
//! `usage`; unknown and repeated keys, keys written with escapes, members
//! in any order, any whitespace. Every text goes through
//! `rcip::catalog::compare_readers`: the fast reader may accept only what
//! the general reader accepts, and must then build exactly its catalog.
//! (The `catalog` target drives the C ABI, where the fast reader runs
//! first, so it cannot tell the two apart.)
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rcip::catalog::compare_readers;
use serde_json::{json, Map, Value};

const IDS: &[&str] = &[
    "notes.list",
    "notes.add",
    "a",
    "b.c-d_e",
    "Notes",
    "1x",
    "",
    "notes..x",
    "x.y",
];
const SCOPES: &[&str] = &["main", "side", "other", "Bad"];
const EFFECTS: &[&str] = &["read", "write", "external", "destructive", "delete", "Read", ""];
const TAGS: &[&str] = &["a", "b", ""];

fn pick<'a>(u: &mut Unstructured<'_>, from: &[&'a str]) -> Result<&'a str> {
    Ok(from[u.choose_index(from.len())?])
}

fn schema(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=9)? {
        0 => json!({"type": "object", "properties": {}, "additionalProperties": false}),
        1 => {
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"], "additionalProperties": false})
        }
        2 => json!({"additionalProperties": false, "properties": {}, "type": "object"}),
        3 => json!(true),
        4 => json!(false),
        5 => json!({"type": "string", "maxLength": 3}),
        // Does not compile: strict mode refuses unknown keywords and bad types.
        6 => json!({"type": "object", "nope": 1}),
        7 => json!({"type": "integer", "minimum": "0"}),
        // Not a schema at all.
        8 => json!(["type"]),
        _ => json!(7),
    })
}

fn usage(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=3)? {
        0 => json!({"whenToUse": "When asked."}),
        1 => json!({"whenToUse": "When asked.", "examples": [{"description": "Nothing given", "input": {}}]}),
        2 => json!({"whenToUse": 3}),
        _ => json!({"other": true}),
    })
}

fn capability(u: &mut Unstructured<'_>) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    let fields: [(&str, u8); 9] = [
        ("id", 0),
        ("title", 1),
        ("description", 2),
        ("scopeIds", 3),
        ("effect", 4),
        ("inputSchema", 5),
        ("outputSchema", 6),
        ("tags", 7),
        ("usage", 8),
    ];
    for (key, kind) in fields {
        // Optional members sometimes absent; required ones rarely.
        let keep = match kind {
            7 | 8 => u.ratio(1, 2)?,
            _ => !u.ratio(1, 24)?,
        };
        if !keep {
            continue;
        }
        let value = match kind {
            0 => json!(pick(u, IDS)?),
            1 => {
                if u.ratio(1, 16)? {
                    json!(1)
                } else {
                    json!("Title")
                }
            }
            2 => json!(if u.ratio(1, 16)? { "" } else { "What it does." }),
            3 => {
                let n = u.int_in_range(0..=2)?;
                let mut list = Vec::new();
                for _ in 0..n {
                    list.push(json!(pick(u, SCOPES)?));
                }
                if u.ratio(1, 20)? {
                    list.push(json!(5));
                }
                Value::Array(list)
            }
            4 => json!(pick(u, EFFECTS)?),
            5 | 6 => schema(u)?,
            7 => {
                let n = u.int_in_range(0..=2)?;
                let mut list = Vec::new();
                for _ in 0..n {
                    list.push(json!(pick(u, TAGS)?));
                }
                Value::Array(list)
            }
            _ => usage(u)?,
        };
        m.insert(key.to_string(), value);
    }
    if u.ratio(1, 20)? {
        m.insert("extra".into(), json!(1));
    }
    Ok(m)
}

/// `value` as text: compact or spaced, and sometimes one member written
/// twice or a key written with an escape (both left to the general path,
/// which must then be the one that decides).
fn write(u: &mut Unstructured<'_>, value: &Value) -> Result<String> {
    let mut text = if u.ratio(1, 3)? {
        serde_json::to_string_pretty(value).unwrap_or_default()
    } else {
        value.to_string()
    };
    match u.int_in_range(0..=9)? {
        0 => text = text.replacen("\"id\":", "\"i\\u0064\":", 1),
        1 => text = text.replacen("\"effect\":\"read\"", "\"effect\":\"read\",\"effect\":\"read\"", 1),
        2 => text = text.replacen(",", " ,\n\t", 3),
        _ => {}
    }
    Ok(text)
}

fn catalog(u: &mut Unstructured<'_>) -> Result<String> {
    let mut root = Map::new();
    let mut order = vec!["protocolVersion", "application", "scopes", "capabilities"];
    if u.ratio(1, 3)? {
        order.reverse();
    }
    let n_caps = u.int_in_range(0..=5)?;
    let mut caps = Vec::new();
    for _ in 0..n_caps {
        caps.push(Value::Object(capability(u)?));
    }
    for key in order {
        let value = match key {
            "protocolVersion" => json!(if u.ratio(1, 20)? { "2.0" } else { "1.0" }),
            "application" => json!({"id": "app", "name": "App", "description": "An application.", "version": "1.0.0"}),
            "scopes" => {
                let mut scopes = vec![json!({"id": "main", "title": "Main", "description": "The main view."})];
                if u.ratio(1, 2)? {
                    scopes.push(
                        json!({"id": "side", "title": "Side", "description": "A side view.", "parentId": "main"}),
                    );
                }
                Value::Array(scopes)
            }
            _ => Value::Array(std::mem::take(&mut caps)),
        };
        if !u.ratio(1, 40)? {
            root.insert(key.to_string(), value);
        }
    }
    write(u, &Value::Object(root))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(text) = catalog(&mut u) else {
        return;
    };
    if let Err(e) = compare_readers(&text) {
        panic!("the catalog readers disagree: {e}\n{text}");
    }
});
