//! Session tests of the `safe` tool naming (**rcip**, docs/MCP.md "Tool
//! names") on catalogs whose ids collide or grow too long once replaced;
//! the map naming is covered in tests.rs.

use super::*;
use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, Runtime};
use serde_json::{json, Value};
use std::sync::Arc;

fn catalog(ids: &[&str]) -> Catalog {
    let capabilities: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"id": id, "title": id, "description": "A test capability.", "scopeIds": [], "effect": "read",
                   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}})
        })
        .collect();
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "names", "name": "Names", "description": "Tool names.", "version": "1.0.0"},
        "scopes": [],
        "capabilities": capabilities
    });
    Catalog::from_bytes(text.to_string().as_bytes()).expect("valid catalog")
}

fn session(runtime: &Runtime, naming: Value) -> Result<McpSession, String> {
    let options = McpOptions::from_value(&json!({"workers": 0, "toolNames": naming}))?;
    McpSession::new(runtime, options, Arc::new(|_: &str| {})).map_err(|e| e.to_string())
}

#[test]
fn safe_names_that_collide_are_refused_naming_both_ids() {
    let runtime = Runtime::new(&catalog(&["notes.list", "notes_list", "notes-add"]));
    let e = session(&runtime, json!("safe")).unwrap_err();
    assert!(
        e.contains("capabilities \"notes.list\" and \"notes_list\" would both be the tool \"notes_list\""),
        "{e}"
    );
    // The ids as they are do not collide.
    assert!(session(&runtime, json!("ids")).is_ok());
    // A map that renames one of them away resolves it.
    assert!(session(&runtime, json!({"notes_list": "notes_list2"})).is_ok());
}

#[test]
fn safe_names_over_64_characters_are_refused() {
    let long = format!("a.{}", "b".repeat(63)); // 65 characters
    let runtime = Runtime::new(&catalog(&[&long, "short.one"]));
    let e = session(&runtime, json!("safe")).unwrap_err();
    assert!(
        e.contains(&format!("\"{long}\"")) && e.contains("1 to 64 characters"),
        "{e}"
    );
    // 64 is fine.
    let fits = format!("a.{}", "b".repeat(62));
    assert!(session(&Runtime::new(&catalog(&[&fits])), json!("safe")).is_ok());
}

#[test]
fn safe_names_call_back_exactly() {
    let runtime = Runtime::new(&catalog(&["board.list-open", "board.listOpen"]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut bindings = Vec::new();
    for id in ["board.list-open", "board.listOpen"] {
        let s = seen.clone();
        bindings.push(
            runtime
                .host()
                .bind(
                    id,
                    Arc::new(move |inv: Invocation| {
                        s.lock().push(inv.capability_id().to_string());
                        inv.complete(json!({})).unwrap()
                    }),
                    None,
                )
                .unwrap(),
        );
    }
    let sent = Arc::new(Mutex::new(Vec::<Value>::new()));
    let out = sent.clone();
    let options = McpOptions::from_value(&json!({"workers": 0, "toolNames": "safe"})).unwrap();
    let session = McpSession::new(
        &runtime,
        options,
        Arc::new(move |m: &str| out.lock().push(serde_json::from_str(m).unwrap())),
    )
    .unwrap();
    session.receive(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#);
    for (i, name) in ["board_list-open", "board_listOpen", "board.listOpen"]
        .iter()
        .enumerate()
    {
        let call = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": name}});
        session.receive(call.to_string().as_bytes());
    }
    assert_eq!(*seen.lock(), ["board.list-open", "board.listOpen"]);
    let sent = sent.lock();
    let answer = |id: usize| sent.iter().find(|m| m["id"] == id).unwrap().clone();
    assert_eq!(
        answer(1)["result"]["_meta"]["rcip/outcome"]["capabilityId"],
        "board.list-open"
    );
    assert_eq!(
        answer(2)["result"]["_meta"]["rcip/outcome"]["capabilityId"],
        "board.listOpen"
    );
    // The id itself is not a tool name under the safe naming.
    assert_eq!(answer(3)["error"]["code"], -32602);
}
