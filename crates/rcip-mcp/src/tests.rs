//! Unit tests of the bridge: every mapping of docs/MCP.md, driven through
//! the session with a collecting output.

use super::tools;
use super::*;
use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{
    Availability, Binding, Decision, ElicitAnswer, HostError, Invocation, PolicyRequest, Runtime, RuntimeBuilder,
    SemanticContext,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

pub(super) fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "notebook", "name": "Notebook", "description": "A notebook for tests.", "version": "2.1.0"},
        "scopes": [
            {"id": "notes", "title": "Notes", "description": "The notes."},
            {"id": "mail", "title": "Mail", "description": "Outgoing mail."}
        ],
        "capabilities": [
            {"id": "notes.list", "title": "List notes", "description": "Lists notes.", "scopeIds": ["notes"],
             "effect": "read", "tags": ["notes"],
             "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1}},
                             "additionalProperties": false},
             "outputSchema": {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
                              "required": ["notes"]},
             "usage": {"whenToUse": "To see what is written down."}},
            {"id": "notes.add", "title": "Add note", "description": "Adds a note.", "scopeIds": ["notes"],
             "effect": "write",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
             "outputSchema": {"type": "object"}},
            {"id": "notes.purge", "title": "Purge notes", "description": "Deletes every note.", "scopeIds": ["notes"],
             "effect": "destructive", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
            {"id": "mail.send", "title": "Send mail", "description": "Mails a note.", "scopeIds": ["mail"],
             "effect": "external", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
            {"id": "notes.count", "title": "Count notes", "description": "Counts notes matching a word.", "scopeIds": [],
             "effect": "read",
             "inputSchema": {"$ref": "#/$defs/word", "$defs": {"word": {"type": "string", "minLength": 1}}},
             "outputSchema": {"type": "integer", "minimum": 0}},
            {"id": "notes.slow", "title": "Slow search", "description": "Searches slowly.", "scopeIds": ["notes"],
             "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
            {"id": "notes.unbound", "title": "Not bound", "description": "Never bound.", "scopeIds": ["notes"],
             "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).expect("valid catalog")
}

/// A runtime with bindings, a session over it and everything it sent.
pub(super) struct Harness {
    pub(super) runtime: Runtime,
    pub(super) session: McpSession,
    sent: Arc<Mutex<Vec<Value>>>,
    pub(super) slow: Arc<Mutex<Vec<Invocation>>>,
    notes: Arc<Mutex<Vec<String>>>,
    pub(super) purged: Arc<AtomicBool>,
    mail_available: Arc<AtomicBool>,
    bindings: Mutex<Vec<Binding>>,
}

pub(super) fn policy(request: PolicyRequest) {
    let ctx: Value = serde_json::from_str(request.context_json()).unwrap();
    let effect = ctx["capability"]["effect"].as_str().unwrap_or("");
    let decision = if ctx["confirmed"] == json!(true) {
        Decision::Allow
    } else if effect == "destructive" {
        Decision::Confirm {
            reason: Some("Delete every note? This cannot be undone.".into()),
        }
    } else if ctx["input"]["text"] == json!("forbidden") {
        Decision::Deny {
            reason: Some("That text is not allowed.".into()),
        }
    } else {
        Decision::Allow
    };
    request.decide(decision).unwrap();
}

pub(super) fn harness(mut options: McpOptions) -> Harness {
    // Deterministic transcripts: without workers, everything a message
    // causes is sent before receive returns (the pooled mode has tests of
    // its own).
    if options.workers.is_none() {
        options.workers = Some(0);
    }
    let mut builder = RuntimeBuilder::new(&catalog());
    builder.policy(Arc::new(policy));
    builder.manual_timers(true);
    let runtime = builder.build();
    let host = runtime.host();
    let notes = Arc::new(Mutex::new(vec!["first".to_string()]));
    let purged = Arc::new(AtomicBool::new(false));
    let slow = Arc::new(Mutex::new(Vec::new()));
    let mail_available = Arc::new(AtomicBool::new(true));
    let mut bindings = Vec::new();
    let n = notes.clone();
    bindings.push(
        host.bind(
            "notes.list",
            Arc::new(move |inv: Invocation| inv.complete(json!({"notes": *n.lock()})).unwrap()),
            None,
        )
        .unwrap(),
    );
    let n = notes.clone();
    bindings.push(
        host.bind(
            "notes.add",
            Arc::new(move |inv: Invocation| {
                n.lock().push(inv.input()["text"].as_str().unwrap().to_string());
                inv.complete(json!({"count": n.lock().len()})).unwrap()
            }),
            None,
        )
        .unwrap(),
    );
    let p = purged.clone();
    bindings.push(
        host.bind(
            "notes.purge",
            Arc::new(move |inv: Invocation| {
                p.store(true, Ordering::SeqCst);
                inv.complete(json!({"purged": true})).unwrap()
            }),
            None,
        )
        .unwrap(),
    );
    let m = mail_available.clone();
    bindings.push(
        host.bind(
            "mail.send",
            Arc::new(|inv: Invocation| inv.complete(json!({"sent": true})).unwrap()),
            Some(Arc::new(move || {
                Ok(if m.load(Ordering::SeqCst) {
                    Availability::available()
                } else {
                    Availability {
                        available: false,
                        reason_code: Some("OFFLINE".into()),
                        reason: Some("The mail server is offline.".into()),
                    }
                })
            })),
        )
        .unwrap(),
    );
    let n = notes.clone();
    bindings.push(
        host.bind(
            "notes.count",
            Arc::new(move |inv: Invocation| {
                let word = inv.input().as_str().unwrap().to_string();
                let count = n.lock().iter().filter(|t| t.contains(&word)).count();
                inv.complete(json!(count)).unwrap()
            }),
            None,
        )
        .unwrap(),
    );
    let s = slow.clone();
    bindings.push(
        host.bind("notes.slow", Arc::new(move |inv: Invocation| s.lock().push(inv)), None)
            .unwrap(),
    );

    let sent = Arc::new(Mutex::new(Vec::new()));
    let out = sent.clone();
    let output: Arc<dyn McpOutput> =
        Arc::new(move |m: &str| out.lock().push(serde_json::from_str::<Value>(m).unwrap()));
    let session = McpSession::new(&runtime, options, output).unwrap();
    Harness {
        runtime,
        session,
        sent,
        slow,
        notes,
        purged,
        mail_available,
        bindings: Mutex::new(bindings),
    }
}

impl Harness {
    fn raw(&self, text: &str) {
        self.session.receive(text.as_bytes());
    }

    pub(super) fn send(&self, message: Value) {
        self.raw(&message.to_string());
    }

    /// Everything sent since the last call.
    pub(super) fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.sent.lock())
    }

    /// Sends a request and returns its response (every other message sent
    /// meanwhile stays queued for `take`).
    pub(super) fn request(&self, id: Value, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut sent = self.sent.lock();
        let i = sent
            .iter()
            .position(|m| m.get("id") == Some(&id) && m.get("method").is_none());
        let Some(i) = i else {
            panic!("no response to {id}: {sent:?}")
        };
        sent.remove(i)
    }

    pub(super) fn init(&self, capabilities: Value) -> Value {
        let r = self.request(
            json!(0),
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    fn call(&self, id: i64, name: &str, arguments: Value) -> Value {
        self.request(json!(id), "tools/call", json!({"name": name, "arguments": arguments}))
    }

    fn tools(&self) -> Vec<Value> {
        let r = self.request(json!("list"), "tools/list", json!({}));
        r["result"]["tools"].as_array().unwrap().clone()
    }

    fn stats(&self) -> Value {
        serde_json::from_str(&self.runtime.stats_json().unwrap()).unwrap()
    }
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

pub(super) fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

// ---- lifecycle -------------------------------------------------------

#[test]
fn initialize_answers_the_latest_revision_to_an_unknown_one_and_declares_list_changed() {
    let h = harness(McpOptions::default());
    let r = h.request(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2099-01-01", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}),
    );
    assert_eq!(r["jsonrpc"], "2.0");
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        r["result"]["capabilities"],
        json!({"tools": {"listChanged": true}, "logging": {}})
    );
    assert_eq!(
        r["result"]["serverInfo"],
        json!({"name": "notebook", "title": "Notebook", "version": "2.1.0"})
    );
    assert_eq!(r["result"]["instructions"], "A notebook for tests.");
    // A second initialize is refused.
    let again = h.request(
        json!(2),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
    );
    assert_eq!(error_code(&again), INVALID_REQUEST);
    // Missing protocolVersion.
    let h = harness(McpOptions::default());
    assert_eq!(
        error_code(&h.request(json!(1), "initialize", json!({"capabilities": {}}))),
        INVALID_PARAMS
    );
}

#[test]
fn initialize_answers_the_requested_legacy_revision_when_supported() {
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("nonsense", "2025-11-25"),
    ] {
        let h = harness(McpOptions::default());
        let r = h.request(
            json!(1),
            "initialize",
            json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}),
        );
        assert_eq!(r["result"]["protocolVersion"], answered, "asked {asked}");
    }
}

/// An initialized session at `revision` with `capabilities`.
fn legacy_at(revision: &str, capabilities: Value) -> Harness {
    let h = harness(McpOptions::from_value(&json!({"confirmation": "elicit", "eras": "both"})).unwrap());
    let r = h.request(
        json!(0),
        "initialize",
        json!({"protocolVersion": revision, "capabilities": capabilities}),
    );
    assert_eq!(r["result"]["protocolVersion"], revision);
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    h.take();
    h
}

#[test]
fn a_2025_03_26_session_gets_no_structured_output_and_no_elicitation() {
    let h = legacy_at("2025-03-26", json!({"elicitation": {}}));
    let tools = h.tools();
    assert!(tools.iter().all(|t| t.get("outputSchema").is_none()), "{tools:?}");
    // A modern request on the same stream owes nothing to that session.
    let modern = h.request(json!("m"), "tools/list", modern_params(json!({}), json!({})));
    assert!(tool(modern["result"]["tools"].as_array().unwrap(), "notes.list")
        .get("outputSchema")
        .is_some());
    let modern = h.request(
        json!("c"),
        "tools/call",
        modern_params(json!({"name": "notes.list", "arguments": {}}), json!({})),
    );
    assert_eq!(modern["result"]["structuredContent"], json!({"notes": ["first"]}));
    assert!(tools.iter().all(|t| t.get("inputSchema").is_some()));
    let r = h.call(1, "notes.list", json!({}));
    assert!(r["result"].get("structuredContent").is_none(), "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"notes": ["first"]})
    );
    // The confirmation opt-in does not ask a 2025-03-26 client (its
    // revision has no elicitation): the call fails closed.
    let r = h.call(2, "notes.purge", json!({}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(h.take().iter().all(|m| m["method"] != "elicitation/create"));
}

#[test]
fn a_2025_06_18_session_keeps_structured_output_and_elicitation() {
    let h = legacy_at("2025-06-18", json!({"elicitation": {}}));
    assert!(tool(&h.tools(), "notes.list").get("outputSchema").is_some());
    let r = h.call(1, "notes.list", json!({}));
    assert_eq!(r["result"]["structuredContent"], json!({"notes": ["first"]}));
    h.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "notes.purge", "arguments": {}}}),
    );
    assert!(h.take().iter().any(|m| m["method"] == "elicitation/create"));
}

#[test]
fn server_info_and_instructions_come_from_options() {
    let o = McpOptions::from_value(&json!({"serverName": "desk", "serverVersion": "9", "instructions": "Be nice."}))
        .unwrap();
    let h = harness(o);
    let r = h.init(json!({}));
    assert_eq!(r["result"]["serverInfo"]["name"], "desk");
    assert_eq!(r["result"]["serverInfo"]["version"], "9");
    assert_eq!(r["result"]["instructions"], "Be nice.");
}

#[test]
fn unknown_methods_are_method_not_found_so_newer_clients_fall_back() {
    let h = harness(McpOptions::default());
    for method in [
        "server/discover",
        "resources/list",
        "prompts/list",
        "rcip/resolveConfirmation",
    ] {
        assert_eq!(
            error_code(&h.request(json!(method), method, json!({}))),
            METHOD_NOT_FOUND,
            "{method}"
        );
    }
    h.init(json!({}));
    for method in [
        "server/discover",
        "tasks/list",
        "completion/complete",
        "rcip/resolveConfirmation",
        "host/bind",
    ] {
        assert_eq!(
            error_code(&h.request(json!(method), method, json!({}))),
            METHOD_NOT_FOUND,
            "{method}"
        );
    }
}

#[test]
fn ping_works_before_initialize_but_tools_do_not() {
    let h = harness(McpOptions::default());
    assert_eq!(h.request(json!(1), "ping", json!({}))["result"], json!({}));
    assert_eq!(
        error_code(&h.request(json!(2), "tools/list", json!({}))),
        INVALID_REQUEST
    );
    assert_eq!(
        error_code(&h.request(json!(3), "tools/call", json!({"name": "notes.list"}))),
        INVALID_REQUEST
    );
    // The ping without params works too.
    h.raw(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#);
    assert_eq!(h.take(), vec![json!({"jsonrpc": "2.0", "id": 4, "result": {}})]);
}

// ---- JSON-RPC framing ---------------------------------------------------

#[test]
fn malformed_messages_get_the_standard_codes() {
    let h = harness(McpOptions::default());
    let cases: Vec<(&str, i64, Value)> = vec![
        ("{not json", PARSE_ERROR, Value::Null),
        ("", PARSE_ERROR, Value::Null),
        ("\u{feff}{}", PARSE_ERROR, Value::Null),
        ("[]", INVALID_REQUEST, Value::Null),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            INVALID_REQUEST,
            Value::Null,
        ),
        ("42", INVALID_REQUEST, Value::Null),
        (r#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#, INVALID_REQUEST, json!(5)),
        (r#"{"id":6,"method":"ping"}"#, INVALID_REQUEST, json!(6)),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            INVALID_REQUEST,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            INVALID_REQUEST,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            INVALID_REQUEST,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","id":7,"method":3}"#, INVALID_REQUEST, json!(7)),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"ping","params":"x"}"#,
            INVALID_REQUEST,
            json!(8),
        ),
        (r#"{"jsonrpc":"2.0","id":9}"#, INVALID_REQUEST, json!(9)),
        (
            r#"{"jsonrpc":"2.0","method":"ping","params":5}"#,
            INVALID_REQUEST,
            Value::Null,
        ),
    ];
    for (text, code, id) in cases {
        h.raw(text);
        let sent = h.take();
        assert_eq!(sent.len(), 1, "{text}: {sent:?}");
        assert_eq!(sent[0]["error"]["code"], code, "{text}: {sent:?}");
        assert_eq!(sent[0]["id"], id, "{text}");
        assert_eq!(sent[0]["jsonrpc"], "2.0");
    }
    h.session.receive(&[0xff, 0xfe]);
    assert_eq!(h.take()[0]["error"]["code"], PARSE_ERROR);
    // Array params (JSON-RPC by-position), on any method: MCP params are
    // objects, so the message is not a valid request (docs/MCP.md).
    assert_eq!(
        error_code(&h.request(json!(10), "initialize", json!([]))),
        INVALID_REQUEST
    );
    assert_eq!(
        error_code(&h.request(json!(11), "ping", json!([1, 2]))),
        INVALID_REQUEST
    );
    // Responses that match nothing, malformed responses and unknown
    // notifications are never answered.
    for text in [
        r#"{"jsonrpc":"2.0","id":"nobody","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"nobody","error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":"x","result":{},"error":{}}"#,
        r#"{"jsonrpc":"2.0","result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"none"}}"#,
    ] {
        h.raw(text);
        assert!(h.take().is_empty(), "{text}");
    }
}

#[test]
fn string_and_integer_ids_are_distinct_and_echoed() {
    let h = harness(McpOptions::default());
    assert_eq!(h.request(json!("1"), "ping", json!({}))["id"], json!("1"));
    assert_eq!(h.request(json!(1), "ping", json!({}))["id"], json!(1));
    assert_ne!(super::jsonrpc::id_key(&json!(1)), super::jsonrpc::id_key(&json!("1")));
}

#[test]
fn in_flight_duplicate_request_ids_are_refused() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    h.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "notes.slow"}}));
    assert!(h.take().is_empty(), "the slow call is in flight");
    assert_eq!(h.slow.lock().len(), 1);
    // The same id again, for any method, while the first is in flight.
    h.send(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    h.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "notes.list"}}));
    let sent = h.take();
    assert_eq!(sent.len(), 2);
    for m in &sent {
        assert_eq!(m["id"], 7);
        assert_eq!(m["error"]["code"], INVALID_REQUEST);
        assert!(m["error"]["message"].as_str().unwrap().contains("in flight"));
    }
    assert_eq!(h.slow.lock().len(), 1, "the duplicate did not run");
    // The first completes and gets its response; then the id is free again.
    let inv = h.slow.lock().pop().unwrap();
    inv.complete(json!({"done": true})).unwrap();
    let sent = h.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["result"]["structuredContent"], json!({"done": true}));
    assert_eq!(h.request(json!(7), "ping", json!({}))["result"], json!({}));
}

// ---- tools/list ---------------------------------------------------------

#[test]
fn tools_map_capabilities_one_to_one() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let tools = h.tools();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "notes.list",
            "notes.add",
            "notes.purge",
            "mail.send",
            "notes.count",
            "notes.slow",
            "notes.unbound"
        ]
    );
    let list = tool(&tools, "notes.list");
    assert_eq!(list["title"], "List notes");
    assert_eq!(
        list["description"],
        "Lists notes.\n\nWhen to use: To see what is written down."
    );
    assert_eq!(tool(&tools, "notes.add")["description"], "Adds a note.");
    // Object schemas pass unchanged.
    assert_eq!(
        list["inputSchema"],
        json!({"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1}}, "additionalProperties": false})
    );
    assert_eq!(list["outputSchema"]["required"], json!(["notes"]));
    let revision = h.stats()["revision"].clone();
    assert_eq!(
        list["_meta"],
        json!({
            "rcip/effect": "read", "rcip/scopeIds": ["notes"], "rcip/tags": ["notes"], "rcip/relevance": "other",
            "rcip/bound": true, "rcip/available": true, "rcip/availability": {"available": true},
            "rcip/revision": revision
        })
    );
    let unbound = tool(&tools, "notes.unbound");
    assert_eq!(unbound["_meta"]["rcip/bound"], false);
    assert_eq!(unbound["_meta"]["rcip/available"], false);
    assert!(unbound["_meta"].get("rcip/availability").is_none());
    // Empty scopeIds: always relevant.
    assert_eq!(tool(&tools, "notes.count")["_meta"]["rcip/relevance"], "current");
    // Every tool: the keys MCP 2025-11-25 defines, nothing else.
    for t in &tools {
        let keys: Vec<&String> = t.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "name",
                "title",
                "description",
                "inputSchema",
                "outputSchema",
                "annotations",
                "_meta"
            ]
        );
        assert_eq!(t["inputSchema"]["type"], "object");
        assert_eq!(t["outputSchema"]["type"], "object");
        assert!(t["annotations"].get("idempotentHint").is_none());
    }
}

#[test]
fn annotations_follow_the_effect() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let tools = h.tools();
    assert_eq!(
        tool(&tools, "notes.list")["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(
        tool(&tools, "notes.add")["annotations"],
        json!({"destructiveHint": false, "openWorldHint": false})
    );
    assert_eq!(
        tool(&tools, "notes.purge")["annotations"],
        json!({"destructiveHint": true, "openWorldHint": false})
    );
    assert_eq!(
        tool(&tools, "mail.send")["annotations"],
        json!({"destructiveHint": false, "openWorldHint": true})
    );
    assert_eq!(tools::annotations("bogus"), json!({}));
}

#[test]
fn non_object_schemas_are_wrapped_and_keep_their_refs() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let tools = h.tools();
    let count = tool(&tools, "notes.count");
    assert_eq!(
        count["inputSchema"],
        json!({
            "type": "object",
            "properties": {"input": {"$id": "urn:rcip:notes.count:input", "$ref": "#/$defs/word",
                                     "$defs": {"word": {"type": "string", "minLength": 1}}}},
            "required": ["input"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        count["outputSchema"],
        json!({
            "type": "object",
            "properties": {"result": {"$id": "urn:rcip:notes.count:result", "type": "integer", "minimum": 0}},
            "required": ["result"],
            "additionalProperties": false
        })
    );
    assert_eq!(count["_meta"]["rcip/inputWrapped"], true);
    assert_eq!(count["_meta"]["rcip/outputWrapped"], true);
    assert!(tool(&tools, "notes.list")["_meta"].get("rcip/inputWrapped").is_none());
    // A schema with its own $id keeps it; boolean schemas are wrapped as is.
    assert_eq!(
        tools::wrap_schema(&json!({"$id": "urn:x", "type": "string"}), "a", "input")["properties"]["input"]["$id"],
        "urn:x"
    );
    assert_eq!(
        tools::wrap_schema(&json!(true), "a", "input")["properties"]["input"],
        json!(true)
    );
    assert!(!tools::is_object_schema(&json!({"type": ["object", "null"]})));
    assert!(!tools::is_object_schema(&json!({"properties": {}})));
    assert!(!tools::is_object_schema(&json!(true)));
    assert!(tools::is_object_schema(&json!({"type": "object"})));
}

#[test]
fn the_filter_option_lists_only_relevant_or_available_capabilities() {
    let o = McpOptions::from_value(&json!({"filter": {"context": "current"}})).unwrap();
    let h = harness(o);
    h.init(json!({}));
    // Empty context: only capabilities without scopes are relevant.
    let names = |tools: Vec<Value>| {
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(h.tools()), ["notes.count"]);
    h.runtime
        .host()
        .set_context(SemanticContext::new(vec!["mail".into()], None))
        .unwrap();
    assert_eq!(names(h.tools()), ["mail.send", "notes.count"]);
    // A filtered-out capability can still be called: relevance is not
    // authorization, the runtime decides.
    let r = h.call(1, "notes.list", json!({}));
    assert_eq!(r["result"]["isError"], false);

    let o = McpOptions::from_value(&json!({"filter": {"availableOnly": true}})).unwrap();
    let h = harness(o);
    h.init(json!({}));
    assert!(!names(h.tools()).contains(&"notes.unbound".to_string()));
    assert!(names(h.tools()).contains(&"mail.send".to_string()));
    h.mail_available.store(false, Ordering::SeqCst);
    h.runtime.host().refresh().unwrap();
    assert!(!names(h.tools()).contains(&"mail.send".to_string()));
}

#[test]
fn tools_list_paginates_with_opaque_cursors() {
    let h = harness(McpOptions::from_value(&json!({"pageSize": 3})).unwrap());
    h.init(json!({}));
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    for page in 0.. {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let r = h.request(json!(format!("p{page}")), "tools/list", params);
        for t in r["result"]["tools"].as_array().unwrap() {
            names.push(t["name"].as_str().unwrap().to_string());
        }
        cursor = r["result"].get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(names.len(), 7);
    assert_eq!(
        error_code(&h.request(json!("bad"), "tools/list", json!({"cursor": "nope"}))),
        INVALID_PARAMS
    );
    assert_eq!(
        error_code(&h.request(json!("big"), "tools/list", json!({"cursor": "rcip-99"}))),
        INVALID_PARAMS
    );
    assert_eq!(
        error_code(&h.request(json!("num"), "tools/list", json!({"cursor": 3}))),
        INVALID_PARAMS
    );
    // Without pagination every cursor is unknown.
    let h = harness(McpOptions::default());
    h.init(json!({}));
    assert_eq!(
        error_code(&h.request(json!(1), "tools/list", json!({"cursor": "rcip-0"}))),
        INVALID_PARAMS
    );
    assert!(h.request(json!(2), "tools/list", json!({}))["result"]
        .get("nextCursor")
        .is_none());
}

// ---- tools/call ---------------------------------------------------------

#[test]
fn a_successful_call_returns_structured_content_and_its_text() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let r = h.call(1, "notes.add", json!({"text": "milk"}));
    let result = &r["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"], json!({"count": 2}));
    assert_eq!(result["content"], json!([{"type": "text", "text": "{\"count\":2}"}]));
    let outcome = &result["_meta"]["rcip/outcome"];
    assert_eq!(outcome["status"], "succeeded");
    assert_eq!(outcome["capabilityId"], "notes.add");
    assert!(outcome["invocationId"].is_string());
    assert!(outcome.get("output").is_none(), "the output is the structured content");
    assert_eq!(*h.notes.lock(), ["first", "milk"]);
    // Arguments may be omitted for an object schema.
    let r = h.request(json!(2), "tools/call", json!({"name": "notes.list"}));
    assert_eq!(r["result"]["structuredContent"], json!({"notes": ["first", "milk"]}));
}

#[test]
fn wrapped_input_is_unwrapped_and_wrapped_output_is_result() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let r = h.call(1, "notes.count", json!({"input": "fir"}));
    assert_eq!(r["result"]["structuredContent"], json!({"result": 1}));
    assert_eq!(r["result"]["content"][0]["text"], "{\"result\":1}");
    // The wrapper's shape is checked before anything runs.
    for (args, keyword) in [
        (json!({}), "required"),
        (json!({"input": "a", "word": "a"}), "additionalProperties"),
    ] {
        let r = h.call(2, "notes.count", args);
        let result = &r["result"];
        assert_eq!(result["isError"], true);
        assert!(result.get("structuredContent").is_none());
        let outcome = &result["_meta"]["rcip/outcome"];
        assert_eq!(outcome["status"], "failed");
        assert_eq!(outcome["error"]["code"], "INPUT_INVALID");
        assert_eq!(outcome["error"]["validationIssues"][0]["keyword"], keyword);
    }
    // The unwrapped input is validated by the runtime against its schema.
    let r = h.call(3, "notes.count", json!({"input": ""}));
    let outcome = &r["result"]["_meta"]["rcip/outcome"];
    assert_eq!(outcome["error"]["code"], "INPUT_INVALID");
    assert_eq!(outcome["error"]["validationIssues"][0]["keyword"], "minLength");
    assert_eq!(
        tools::unwrap_arguments(json!({"input": [1]}), &json!({"type": "array"})),
        tools::Unwrapped::Input(json!([1]))
    );
}

#[test]
fn invalid_input_is_an_error_result_with_its_issues() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let r = h.call(1, "notes.list", json!({"limit": 0, "extra": true}));
    let result = &r["result"];
    assert_eq!(result["isError"], true);
    assert!(result.get("structuredContent").is_none());
    let outcome = &result["_meta"]["rcip/outcome"];
    assert_eq!(outcome["status"], "failed");
    assert_eq!(outcome["error"]["code"], "INPUT_INVALID");
    let issues = outcome["error"]["validationIssues"].as_array().unwrap();
    assert_eq!(issues.len(), 2);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("notes.list failed: INPUT_INVALID: "), "{text}");
    assert!(text.contains("/limit (minimum)"), "{text}");
    assert!(text.contains("(input) (additionalProperties)"), "{text}");
}

#[test]
fn denied_and_failed_outcomes_are_error_results() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let r = h.call(1, "notes.add", json!({"text": "forbidden"}));
    let result = &r["result"];
    assert_eq!(result["isError"], true);
    assert!(result.get("structuredContent").is_none());
    assert_eq!(result["_meta"]["rcip/outcome"]["status"], "denied");
    assert_eq!(result["_meta"]["rcip/outcome"]["error"]["code"], "POLICY_DENIED");
    assert_eq!(
        result["_meta"]["rcip/outcome"]["error"]["message"],
        "That text is not allowed."
    );
    assert_eq!(
        result["content"][0]["text"],
        "notes.add denied: POLICY_DENIED: That text is not allowed."
    );
    let r = h.call(2, "notes.unbound", json!({}));
    assert_eq!(
        r["result"]["_meta"]["rcip/outcome"]["error"]["code"],
        "CAPABILITY_UNBOUND"
    );
    h.mail_available.store(false, Ordering::SeqCst);
    let r = h.call(3, "mail.send", json!({}));
    assert_eq!(
        r["result"]["_meta"]["rcip/outcome"]["error"]["code"],
        "CAPABILITY_UNAVAILABLE"
    );
    assert_eq!(
        r["result"]["_meta"]["rcip/outcome"]["error"]["message"],
        "The mail server is offline."
    );
}

#[test]
fn bad_calls_are_protocol_errors() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let r = h.call(1, "notes.nope", json!({}));
    assert_eq!(error_code(&r), INVALID_PARAMS);
    assert!(r["error"]["message"].as_str().unwrap().contains("notes.nope"));
    assert_eq!(
        error_code(&h.request(json!(2), "tools/call", json!({}))),
        INVALID_PARAMS
    );
    assert_eq!(
        error_code(&h.request(json!(3), "tools/call", json!({"name": 5}))),
        INVALID_PARAMS
    );
    assert_eq!(
        error_code(&h.request(json!(4), "tools/call", json!({"name": "notes.list", "arguments": [1]}))),
        INVALID_PARAMS
    );
    assert_eq!(
        error_code(&h.request(json!(5), "tools/call", json!([]))),
        INVALID_REQUEST
    );
}

#[test]
fn a_closed_runtime_is_an_internal_error() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    h.runtime.close();
    assert_eq!(error_code(&h.call(1, "notes.list", json!({}))), INTERNAL_ERROR);
    assert_eq!(
        error_code(&h.request(json!(2), "tools/list", json!({}))),
        INTERNAL_ERROR,
        "no stale tool list from a closed runtime"
    );
}

// ---- confirmation -------------------------------------------------------

#[test]
fn confirmation_is_fail_closed_by_default() {
    let h = harness(McpOptions::default());
    // Even a client that can elicit is not asked without the host opt-in.
    h.init(json!({"elicitation": {"form": {}}}));
    let r = h.call(1, "notes.purge", json!({}));
    let result = &r["result"];
    assert_eq!(result["isError"], true);
    assert!(result.get("structuredContent").is_none());
    let outcome = &result["_meta"]["rcip/outcome"];
    assert_eq!(outcome["status"], "confirmation_required");
    let id = outcome["confirmation"]["id"].as_str().unwrap();
    let expires = outcome["confirmation"]["expiresAt"].as_i64().unwrap();
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(id), "{text}");
    assert!(text.contains(&tools::rfc3339(expires)), "{text}");
    assert!(text.contains("Delete every note?"), "{text}");
    assert!(
        h.take().iter().all(|m| m["method"] != "elicitation/create"),
        "nobody was asked"
    );
    assert!(!h.purged.load(Ordering::SeqCst), "nothing ran");
    assert_eq!(h.stats()["pendingConfirmations"], 1, "only the host can resolve it");

    // Nothing an MCP client sends approves it: a made-up elicitation
    // answer, an approval-shaped call, a host method.
    h.send(json!({"jsonrpc": "2.0", "id": "rcip-elicitation-1", "result": {"action": "accept"}}));
    h.send(json!({"jsonrpc": "2.0", "id": 1, "result": {"action": "accept"}}));
    let r = h.request(
        json!(2),
        "rcip/resolveConfirmation",
        json!({"confirmationId": id, "approved": true}),
    );
    assert_eq!(error_code(&r), METHOD_NOT_FOUND);
    let r = h.request(
        json!(3),
        "tools/call",
        json!({"name": "notes.purge", "arguments": {}, "_meta": {"confirmationId": id, "approved": true}}),
    );
    assert_eq!(r["result"]["_meta"]["rcip/outcome"]["status"], "confirmation_required");
    assert_ne!(r["result"]["_meta"]["rcip/outcome"]["confirmation"]["id"], id);
    assert!(!h.purged.load(Ordering::SeqCst));
    // The host approves through its own controller.
    h.runtime
        .host()
        .resolve_confirmation(id, true, Box::new(|_: &str| {}))
        .unwrap();
    assert!(h.purged.load(Ordering::SeqCst));
}

pub(super) fn elicit() -> McpOptions {
    McpOptions::from_value(&json!({"confirmation": "elicit"})).unwrap()
}

/// Calls notes.purge and returns the elicitation request sent for it.
fn purge_and_get_elicitation(h: &Harness, id: i64) -> Value {
    h.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "notes.purge", "arguments": {"why": "spring"}}}));
    let sent = h.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let request = sent[0].clone();
    assert_eq!(request["method"], "elicitation/create");
    request
}

#[test]
fn the_elicitation_opt_in_asks_the_user_and_accept_approves() {
    let h = harness(elicit());
    h.init(json!({"elicitation": {"form": {}, "url": {}}}));
    let request = purge_and_get_elicitation(&h, 1);
    let params = &request["params"];
    assert_eq!(params["mode"], "form");
    assert_eq!(params["requestedSchema"], json!({"type": "object", "properties": {}}));
    let message = params["message"].as_str().unwrap();
    assert!(
        message.contains("Purge notes") && message.contains("notes.purge"),
        "{message}"
    );
    assert!(message.contains("Delete every note?"), "{message}");
    assert!(
        message.contains("{\"why\":\"spring\"}"),
        "the user sees the exact input: {message}"
    );
    assert!(!h.purged.load(Ordering::SeqCst));
    h.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {}}}));
    let sent = h.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["id"], 1);
    assert_eq!(sent[0]["result"]["isError"], false);
    assert_eq!(sent[0]["result"]["structuredContent"], json!({"purged": true}));
    assert!(h.purged.load(Ordering::SeqCst));
    assert_eq!(h.stats()["pendingConfirmations"], 0);
    // The answer is used once: answering again changes nothing.
    h.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept"}}));
    assert!(h.take().is_empty());
}

#[test]
fn decline_cancel_and_errors_decline() {
    let answers = [
        json!({"result": {"action": "decline"}}),
        json!({"result": {"action": "cancel"}}),
        json!({"result": {"action": "ACCEPT"}}),
        json!({"result": {}}),
        json!({"error": {"code": -32601, "message": "no"}}),
    ];
    for answer in answers {
        let h = harness(elicit());
        h.init(json!({"elicitation": {}}));
        let request = purge_and_get_elicitation(&h, 1);
        let mut response = answer.clone();
        response["jsonrpc"] = json!("2.0");
        response["id"] = request["id"].clone();
        h.send(response);
        let sent = h.take();
        assert_eq!(sent.len(), 1, "{answer}");
        let outcome = &sent[0]["result"]["_meta"]["rcip/outcome"];
        assert_eq!(sent[0]["result"]["isError"], true);
        assert_eq!(outcome["status"], "denied", "{answer}");
        assert_eq!(outcome["error"]["code"], "CONFIRMATION_DECLINED", "{answer}");
        assert!(!h.purged.load(Ordering::SeqCst));
        assert_eq!(h.stats()["pendingConfirmations"], 0);
    }
}

#[test]
fn a_client_without_form_elicitation_never_gets_an_approval() {
    for capabilities in [
        json!({}),
        json!({"elicitation": {"url": {}}}),
        json!({"elicitation": true}),
    ] {
        let h = harness(elicit());
        h.init(capabilities.clone());
        let r = h.call(1, "notes.purge", json!({}));
        assert_eq!(
            r["result"]["_meta"]["rcip/outcome"]["status"], "confirmation_required",
            "{capabilities}"
        );
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("does not support form elicitation"), "{text}");
        assert!(h.take().is_empty());
        assert!(!h.purged.load(Ordering::SeqCst));
        assert_eq!(h.stats()["pendingConfirmations"], 1);
    }
    // Nor a client that has not sent notifications/initialized yet.
    let h = harness(elicit());
    h.request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}),
    );
    let r = h.call(1, "notes.purge", json!({}));
    assert_eq!(r["result"]["_meta"]["rcip/outcome"]["status"], "confirmation_required");
}

#[test]
fn cancelling_a_call_that_waits_for_the_user_withdraws_the_question() {
    let h = harness(elicit());
    h.init(json!({"elicitation": {}}));
    let request = purge_and_get_elicitation(&h, 1);
    h.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "user"}}),
    );
    let sent = h.take();
    assert_eq!(
        sent,
        vec![json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": request["id"], "reason": "The tool call was cancelled."}})]
    );
    assert_eq!(
        h.stats()["pendingConfirmations"],
        0,
        "the confirmation ended with the token"
    );
    // A late accept approves nothing.
    h.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept"}}));
    assert!(h.take().is_empty());
    assert!(!h.purged.load(Ordering::SeqCst));
    // The id is free again.
    assert_eq!(h.request(json!(1), "ping", json!({}))["result"], json!({}));
}

// ---- cancellation -------------------------------------------------------

#[test]
fn notifications_cancelled_cancels_the_invocation_token() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    h.send(json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": {"name": "notes.slow", "arguments": {}}}));
    let inv = h.slow.lock().pop().unwrap();
    let token = inv.cancel_token();
    assert!(!token.is_cancelled());
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}}));
    assert!(token.is_cancelled());
    // The handler cooperates; the cancelled request gets no response.
    inv.fail(true).unwrap();
    assert!(h.take().is_empty());
    assert_eq!(h.stats()["pendingInvocations"], 0);
    // Cancelling again, or a finished request, does nothing.
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}}));
    assert!(h.take().is_empty());
    // A handler that ignores the cancellation and succeeds: still no
    // response to the cancelled request.
    h.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "notes.slow"}}));
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}));
    h.slow.lock().pop().unwrap().complete(json!({})).unwrap();
    assert!(h.take().iter().all(|m| m.get("id") != Some(&json!(9))));
}

#[test]
fn closing_cancels_calls_in_flight_and_stops_output() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    h.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "notes.slow"}}));
    let inv = h.slow.lock().pop().unwrap();
    h.session.close();
    assert!(inv.cancel_token().is_cancelled());
    inv.fail(true).unwrap();
    h.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    h.runtime
        .host()
        .set_context(SemanticContext::new(vec!["notes".into()], None))
        .unwrap();
    assert!(h.take().is_empty());
    assert_eq!(h.stats()["subscribers"], 0);
}

// ---- list_changed -------------------------------------------------------

fn list_changed_count(sent: &[Value]) -> usize {
    sent.iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .count()
}

#[test]
fn list_changed_only_when_tools_list_changes() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    h.take();
    // Revisions that change nothing tools/list shows (but the revision).
    h.runtime.host().refresh().unwrap();
    h.call(1, "notes.list", json!({}));
    assert_eq!(list_changed_count(&h.take()), 0);
    // Relevance changes with the context.
    h.runtime
        .host()
        .set_context(SemanticContext::new(vec!["notes".into()], None))
        .unwrap();
    assert_eq!(list_changed_count(&h.take()), 1);
    // The same context again: no revision, no notification.
    h.runtime
        .host()
        .set_context(SemanticContext::new(vec!["notes".into()], None))
        .unwrap();
    assert_eq!(list_changed_count(&h.take()), 0);
    // Availability changes show after the host's refresh.
    h.mail_available.store(false, Ordering::SeqCst);
    assert_eq!(list_changed_count(&h.take()), 0);
    h.runtime.host().refresh().unwrap();
    assert_eq!(list_changed_count(&h.take()), 1);
    h.runtime.host().refresh().unwrap();
    assert_eq!(list_changed_count(&h.take()), 0);
    // Unbinding changes `bound`.
    h.bindings.lock().clear();
    assert!(list_changed_count(&h.take()) >= 1);
}

#[test]
fn list_changed_respects_the_filter_and_the_lifecycle() {
    // With availableOnly, a relevance change is invisible.
    let h = harness(McpOptions::from_value(&json!({"filter": {"availableOnly": true, "effect": "read"}})).unwrap());
    h.init(json!({}));
    h.take();
    h.runtime
        .host()
        .set_context(SemanticContext::new(vec!["mail".into()], None))
        .unwrap();
    // notes.* relevance changed from other to other, notes.count stays current: nothing visible changed.
    assert_eq!(list_changed_count(&h.take()), 0);
    h.runtime
        .host()
        .set_context(SemanticContext::new(vec!["notes".into()], None))
        .unwrap();
    assert_eq!(list_changed_count(&h.take()), 1);

    // Nothing before initialize; a change between the initialize response
    // and notifications/initialized is sent when that arrives.
    let h = harness(McpOptions::default());
    h.runtime
        .host()
        .set_context(SemanticContext::new(vec!["notes".into()], None))
        .unwrap();
    assert!(h.take().is_empty());
    h.request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
    );
    h.runtime
        .host()
        .set_context(SemanticContext::new(vec!["mail".into()], None))
        .unwrap();
    assert!(h.take().is_empty());
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(list_changed_count(&h.take()), 1);
}

// ---- transport ----------------------------------------------------------

#[test]
fn serve_reads_lines_until_the_input_ends() {
    let h = harness(McpOptions::from_value(&json!({"maxMessageBytes": 1024})).unwrap());
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(2000)
    );
    let input = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}\r\n\n   \n{long}\n{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}}"
    );
    h.session.serve(std::io::Cursor::new(input)).unwrap();
    let sent = h.take();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert_eq!(sent[1]["error"]["code"], PARSE_ERROR);
    assert_eq!(
        sent[2],
        json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
        "the last line needs no newline"
    );
    // The input ended: the session is closed.
    h.send(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
    assert!(h.take().is_empty());
}

/// A message transport of the host's own, as a WebSocket would be: whole
/// messages (no framing to parse) from a channel, then its end or an error.
struct ChannelTransport {
    messages: std::sync::mpsc::Receiver<Result<Vec<u8>, std::io::ErrorKind>>,
    closed: Arc<AtomicBool>,
}

impl crate::server::Transport for ChannelTransport {
    fn receive(&mut self, buf: &mut Vec<u8>, max_bytes: usize) -> std::io::Result<crate::server::Received> {
        match self.messages.recv() {
            Err(_) => Ok(crate::server::Received::End),
            Ok(Err(kind)) => Err(kind.into()),
            Ok(Ok(m)) if m.len() > max_bytes => Ok(crate::server::Received::TooLong),
            Ok(Ok(m)) => {
                buf.extend_from_slice(&m);
                Ok(crate::server::Received::Message)
            }
        }
    }

    fn close(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

#[test]
fn serve_transport_serves_a_hosts_own_message_connection() {
    let h = harness(McpOptions::from_value(&json!({"maxMessageBytes": 1024})).unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let closed = Arc::new(AtomicBool::new(false));
    let mut transport = ChannelTransport {
        messages: rx,
        closed: closed.clone(),
    };
    for m in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "notes.list", "arguments": {}}}),
    ] {
        tx.send(Ok(m.to_string().into_bytes())).unwrap();
    }
    tx.send(Ok(vec![b' '; 8])).unwrap();
    tx.send(Ok(vec![b'x'; 2000])).unwrap();
    tx.send(Err(std::io::ErrorKind::Interrupted)).unwrap();
    tx.send(Ok(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#.to_vec()))
        .unwrap();
    tx.send(Err(std::io::ErrorKind::ConnectionReset)).unwrap();
    let e = h.session.serve_transport(&mut transport).unwrap_err();
    assert_eq!(
        e.kind(),
        std::io::ErrorKind::ConnectionReset,
        "the transport's error is returned"
    );
    let sent = h.take();
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert_eq!(sent[0]["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(sent[1]["result"]["structuredContent"], json!({"notes": ["first"]}));
    assert_eq!(
        sent[2]["error"]["code"], PARSE_ERROR,
        "too long: -32700, and reading goes on"
    );
    assert_eq!(sent[3], json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    assert!(closed.load(Ordering::SeqCst), "the transport is closed at the end");
    assert!(h.session.is_closed());
    // One serving loop at a time, and none after the session closed.
    let (_tx2, rx2) = std::sync::mpsc::channel();
    let mut again = ChannelTransport {
        messages: rx2,
        closed: Arc::default(),
    };
    drop(_tx2);
    h.session.serve_transport(&mut again).unwrap();
    assert!(h.take().is_empty());
}

#[test]
fn an_output_may_send_back_into_the_session() {
    let mut builder = RuntimeBuilder::new(&catalog());
    builder.manual_timers(true);
    let runtime = builder.build();
    let log = Arc::new(Mutex::new(Vec::<Value>::new()));
    let slot: Arc<Mutex<Option<Arc<McpSession>>>> = Arc::new(Mutex::new(None));
    let (l, s) = (log.clone(), slot.clone());
    let depth = Arc::new(AtomicUsize::new(0));
    let output: Arc<dyn McpOutput> = Arc::new(move |m: &str| {
        assert_eq!(depth.fetch_add(1, Ordering::SeqCst), 0, "never re-entered");
        let v: Value = serde_json::from_str(m).unwrap();
        l.lock().push(v.clone());
        // Answer the response to id 1 with another request, from inside.
        if v["id"] == 1 {
            let session = s.lock().clone().unwrap();
            session.receive(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
        }
        depth.fetch_sub(1, Ordering::SeqCst);
    });
    let session = Arc::new(McpSession::new(&runtime, McpOptions::default(), output).unwrap());
    *slot.lock() = Some(session.clone());
    session.receive(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let ids: Vec<Value> = log.lock().iter().map(|m| m["id"].clone()).collect();
    assert_eq!(ids, [json!(1), json!(2)]);
    *slot.lock() = None;
}

// ---- options and helpers ------------------------------------------------

#[test]
fn options_parse_strictly() {
    let o = McpOptions::from_value(&json!({
        "filter": {"context": "current", "availableOnly": true},
        "confirmation": "elicit", "pageSize": 10, "maxMessageBytes": 4096
    }))
    .unwrap();
    assert!(o.filter.current_only && o.filter.available_only);
    assert_eq!(o.confirmation, ConfirmationMode::Elicit);
    assert_eq!(o.page_size, Some(10));
    assert_eq!(o.max_message_bytes, Some(4096));
    assert_eq!(McpOptions::from_value(&json!({})).unwrap(), McpOptions::default());
    for bad in [
        json!([]),
        json!({"confirmation": "client"}),
        json!({"confirmation": true}),
        json!({"pageSize": 0}),
        json!({"pageSize": 1001}),
        json!({"pageSize": "5"}),
        json!({"filter": {"context": "mine"}}),
        json!({"serverName": 1}),
        json!({"maxMessageBytes": 10}),
        json!({"approve": true}),
    ] {
        assert!(McpOptions::from_value(&bad).is_err(), "{bad}");
    }
}

#[test]
fn times_are_rfc3339_utc() {
    assert_eq!(tools::rfc3339(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(tools::rfc3339(1_767_605_400_123), "2026-01-05T09:30:00.123Z");
    assert_eq!(tools::rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    assert_eq!(tools::rfc3339(-1), "1969-12-31T23:59:59.999Z");
}

#[test]
fn results_never_carry_structured_content_for_errors() {
    for status in ["failed", "denied", "confirmation_required"] {
        let outcome = json!({"status": status, "invocationId": "i", "capabilityId": "c",
                             "error": {"code": "EXECUTION_FAILED", "message": "m"},
                             "confirmation": {"id": "k", "title": "t", "description": "d", "effect": "destructive", "expiresAt": 0}});
        let r = tools::call_result(outcome.clone(), false, "App", None);
        assert_eq!(r["isError"], true);
        assert!(r.get("structuredContent").is_none());
        assert_eq!(r["_meta"]["rcip/outcome"]["status"], status);
    }
}

// ---- hostile and heavy clients (issue 14, item 2) ----------------------

#[test]
fn request_ids_beyond_2_53_are_echoed_exactly_and_never_collide() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    // Two ids a double cannot tell apart, both in flight at once.
    h.raw(r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"notes.slow"}}"#);
    h.raw(r#"{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/call","params":{"name":"notes.slow"}}"#);
    assert!(h.take().is_empty(), "neither refused as a duplicate");
    for inv in h.slow.lock().drain(..) {
        inv.complete(json!({})).unwrap();
    }
    let ids: Vec<u64> = h.take().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![9007199254740993, 9007199254740992]);
    // Beyond 64 bits: refused, never rounded onto another id.
    h.raw(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#);
    assert_eq!(error_code(&h.take()[0]), INVALID_REQUEST);
}

#[test]
fn an_elicitation_whose_confirmation_expires_is_withdrawn_and_the_call_answered() {
    let mut builder = RuntimeBuilder::new(&catalog());
    builder.policy(Arc::new(policy));
    builder.confirmation_ttl_ms(100).unwrap();
    let runtime = builder.build();
    let purged = Arc::new(AtomicBool::new(false));
    let p = purged.clone();
    let _binding = runtime
        .host()
        .bind(
            "notes.purge",
            Arc::new(move |inv: Invocation| {
                p.store(true, Ordering::SeqCst);
                inv.complete(json!({})).unwrap()
            }),
            None,
        )
        .unwrap();
    let sent = Arc::new(Mutex::new(Vec::<Value>::new()));
    let out = sent.clone();
    let mut options = elicit();
    options.workers = Some(1);
    let session = McpSession::new(
        &runtime,
        options,
        Arc::new(move |m: &str| out.lock().push(serde_json::from_str(m).unwrap())),
    )
    .unwrap();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}}}}"#;
    session.receive(init.as_bytes());
    session.receive(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    session.receive(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes.purge"}}"#);
    // The question, then (the user never answers) its withdrawal and the
    // call's answer: the runtime's CONFIRMATION_EXPIRED.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while sent.lock().iter().all(|m| m.get("id") != Some(&json!(1))) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let sent = sent.lock().clone();
    let question = sent
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .expect("asked");
    let withdrawn = sent
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("the question is withdrawn");
    assert_eq!(withdrawn["params"]["requestId"], question["id"]);
    let answer = sent
        .iter()
        .find(|m| m.get("id") == Some(&json!(1)))
        .expect("the call is answered");
    assert_eq!(answer["result"]["isError"], true);
    assert_eq!(
        answer["result"]["_meta"]["rcip/outcome"]["error"]["code"], "CONFIRMATION_EXPIRED",
        "{answer}"
    );
    // The deadline was watched on the core's timer thread: the process
    // runs no timer thread of the MCP crate's own.
    #[cfg(target_os = "linux")]
    {
        let names: Vec<String> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|n| n.trim().to_string())
            .collect();
        assert!(!names.iter().any(|n| n == "rcip-mcp-timer"), "{names:?}");
    }
    // A late accept approves nothing.
    let late = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept"}});
    session.receive(late.to_string().as_bytes());
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(!purged.load(Ordering::SeqCst));
}

#[test]
fn confirmations_beyond_the_cap_are_declined_through_the_host() {
    let h = harness(McpOptions::from_value(&json!({"maxPendingConfirmations": 1})).unwrap());
    h.init(json!({}));
    let first = h.call(1, "notes.purge", json!({}));
    assert_eq!(
        first["result"]["_meta"]["rcip/outcome"]["status"],
        "confirmation_required"
    );
    let second = h.call(2, "notes.purge", json!({}));
    let outcome = &second["result"]["_meta"]["rcip/outcome"];
    assert_eq!(outcome["status"], "denied", "{second}");
    assert_eq!(outcome["error"]["code"], "CONFIRMATION_DECLINED");
    assert_eq!(h.stats()["pendingConfirmations"], 1);
    assert!(!h.purged.load(Ordering::SeqCst));
}

#[test]
fn tool_names_safe_or_mapped_call_back_exactly() {
    let h = harness(McpOptions::from_value(&json!({"toolNames": "safe"})).unwrap());
    h.init(json!({}));
    let tools = h.tools();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names
        .iter()
        .all(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')));
    assert_eq!(tool(&tools, "notes_list")["_meta"]["rcip/capabilityId"], "notes.list");
    assert_eq!(h.call(1, "notes_list", json!({}))["result"]["isError"], false);
    assert_eq!(error_code(&h.call(2, "notes.list", json!({}))), INVALID_PARAMS);

    let mapped =
        harness(McpOptions::from_value(&json!({"toolNames": {"notes.list": "json_schema_2020_12_tool"}})).unwrap());
    mapped.init(json!({}));
    let tools = mapped.tools();
    assert!(tools.iter().any(|t| t["name"] == "json_schema_2020_12_tool"));
    assert!(tools.iter().any(|t| t["name"] == "notes.add"), "unmapped keep their id");
    assert_eq!(
        mapped.call(1, "json_schema_2020_12_tool", json!({}))["result"]["isError"],
        false
    );

    // Collisions and long names are refused when the session is created.
    let runtime = Runtime::new(&catalog());
    let collide = McpOptions::from_value(&json!({"toolNames": {"notes.list": "notes.add"}})).unwrap();
    let e = McpSession::new(&runtime, collide, Arc::new(|_: &str| {}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("notes.list") && e.contains("notes.add"), "{e}");
    let long = McpOptions::from_value(&json!({"toolNames": {"notes.list": "x".repeat(65)}})).unwrap();
    assert!(McpSession::new(&runtime, long, Arc::new(|_: &str| {})).is_err());
    let unknown = McpOptions::from_value(&json!({"toolNames": {"no.such": "x"}})).unwrap();
    assert!(McpSession::new(&runtime, unknown, Arc::new(|_: &str| {})).is_err());
}

#[test]
fn with_workers_a_slow_handler_never_delays_a_ping() {
    // The handler holds its worker until the test lets it go, so "the ping
    // did not wait" is checked by order, not by a clock.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let held = Mutex::new(held);
    let runtime = Runtime::new(&catalog());
    let _binding = runtime
        .host()
        .bind(
            "notes.list",
            Arc::new(move |inv: Invocation| {
                let _ = held.lock().recv_timeout(std::time::Duration::from_secs(10));
                inv.complete(json!({"notes": []})).unwrap()
            }),
            None,
        )
        .unwrap();
    let sent = Arc::new(Mutex::new(Vec::<Value>::new()));
    let out = sent.clone();
    let session = McpSession::new(
        &runtime,
        McpOptions::default(), // two workers
        Arc::new(move |m: &str| out.lock().push(serde_json::from_str(m).unwrap())),
    )
    .unwrap();
    session.receive(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#);
    session.receive(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes.list"}}"#);
    // receive returned while the handler is still held.
    session.receive(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    {
        let sent = sent.lock();
        assert!(sent.iter().any(|m| m["id"] == 2), "ping answered at once: {sent:?}");
        assert!(sent.iter().all(|m| m["id"] != 1), "the call is still held: {sent:?}");
    }
    release.send(()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while sent.lock().iter().all(|m| m["id"] != 1) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let sent = sent.lock();
    let order: Vec<&Value> = sent.iter().map(|m| &m["id"]).collect();
    assert_eq!(
        order,
        [&json!(0), &json!(2), &json!(1)],
        "the ping did not wait for the call"
    );
}

/// A reader of `n` tools/call lines that counts how many bytes were read.
struct Flood {
    line: Vec<u8>,
    left: usize,
    pos: usize,
    read: Arc<AtomicUsize>,
}

impl std::io::Read for Flood {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let n = (self.line.len() - self.pos).min(buf.len());
        buf[..n].copy_from_slice(&self.line[self.pos..self.pos + n]);
        self.pos += n;
        if self.pos == self.line.len() {
            self.pos = 0;
            self.left -= 1;
        }
        self.read.fetch_add(n, Ordering::SeqCst);
        Ok(n)
    }
}

#[test]
fn a_client_that_stops_reading_stops_being_read() {
    let runtime = Runtime::new(&catalog());
    // Replies of about 4.9 KB each, from a worker thread.
    let notes: Vec<String> = (0..100).map(|i| format!("note number {i} of the flood test")).collect();
    let _binding = runtime
        .host()
        .bind(
            "notes.list",
            Arc::new(move |inv: Invocation| inv.complete(json!({"notes": notes})).unwrap()),
            None,
        )
        .unwrap();
    // The client stops reading: the output blocks until released.
    let gate = Arc::new((parking_lot::Mutex::new(false), parking_lot::Condvar::new()));
    let delivered = Arc::new(AtomicUsize::new(0));
    let (g, d) = (gate.clone(), delivered.clone());
    let session = Arc::new(
        McpSession::new(
            &runtime,
            McpOptions::from_value(&json!({"maxInFlight": 16, "maxQueuedMessages": 32})).unwrap(),
            Arc::new(move |_: &str| {
                let mut open = g.0.lock();
                while !*open {
                    g.1.wait(&mut open);
                }
                d.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap(),
    );
    let init = br#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
    let line = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"notes.list\"}}\n";
    let read = Arc::new(AtomicUsize::new(0));
    let requests = 2_000;
    let s = session.clone();
    let r = read.clone();
    let mut text = init.to_vec();
    text.push(b'\n');
    let serving = std::thread::spawn(move || {
        let init = std::io::Cursor::new(text);
        // Each call has a distinct id so none is refused as a duplicate.
        let mut n = 0u64;
        let flood = Flood {
            line: line.to_vec(),
            left: requests,
            pos: 0,
            read: r,
        };
        let numbered = std::io::BufReader::new(std::io::Read::chain(init, flood));
        let lines = std::io::BufRead::split(numbered, b'\n').map(move |l| {
            n += 1;
            let l = l.unwrap();
            String::from_utf8(l)
                .unwrap()
                .replace("\"id\":7", &format!("\"id\":{n}"))
                + "\n"
        });
        let joined = IterRead {
            lines: Box::new(lines),
            buf: Vec::new(),
            pos: 0,
        };
        s.serve(std::io::BufReader::new(joined)).unwrap();
    });
    std::thread::sleep(std::time::Duration::from_millis(600));
    let consumed = read.load(Ordering::SeqCst) / line.len();
    // Bounded by what may be in flight plus what may wait (and the
    // reader's buffer), not by the 40,000 offered.
    assert!(consumed < 200, "read {consumed} requests while the client read nothing");
    let rss = rss_kb();
    // Released: everything is answered.
    *gate.0.lock() = true;
    gate.1.notify_all();
    serving.join().unwrap();
    // The input's end closes the session (the client is gone): the calls
    // still in flight then get no answer, every other one got its answer.
    let answered = delivered.load(Ordering::SeqCst);
    // The calls and the initialize.
    let all = requests + 1;
    assert!(answered + 16 + 32 >= all && answered <= all, "{answered}");
    assert!(rss_kb() < rss + 64 * 1024, "RSS stays flat");
}

/// Lines as one reader.
struct IterRead {
    lines: Box<dyn Iterator<Item = String> + Send>,
    buf: Vec<u8>,
    pos: usize,
}

impl std::io::Read for IterRead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.buf.len() {
            match self.lines.next() {
                Some(l) => {
                    self.buf = l.into_bytes();
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = (self.buf.len() - self.pos).min(out.len());
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn rss_kb() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn calls_read_before_the_input_ends_are_still_answered() {
    let options = McpOptions {
        workers: Some(2),
        ..McpOptions::default()
    };
    let h = harness(options);
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notes.list"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"notes.slow"}}"#,
        "\n"
    );
    let started = std::time::Instant::now();
    h.session.serve(std::io::Cursor::new(input)).unwrap();
    // The quick call was answered after the input ended; the stuck one
    // held the close up for the grace period only.
    let waited = started.elapsed();
    assert!(waited >= std::time::Duration::from_millis(1500) && waited < std::time::Duration::from_secs(10));
    let ids: Vec<Value> = h.take().iter().map(|m| m["id"].clone()).collect();
    assert_eq!(ids, vec![json!(1), json!(2)]);
    assert!(h.session.is_closed());
}

// ---- the handler's side channel (progress, logging, elicitation; rcip) -----

/// Calls notes.slow with `meta` and returns the handler's invocation.
fn slow_call(h: &Harness, id: i64, meta: Value) -> Invocation {
    h.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                  "params": {"name": "notes.slow", "arguments": {}, "_meta": meta}}));
    h.slow.lock().pop().expect("the handler ran")
}

#[test]
fn progress_goes_out_before_the_response_and_is_refused_after_it() {
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let inv = slow_call(&h, 1, json!({"progressToken": "t-1"}));
    inv.report_progress(0.0, Some(2.0), Some("starting")).unwrap();
    inv.report_progress(1.5, None, None).unwrap();
    assert!(matches!(
        inv.report_progress(1.5, None, None),
        Err(HostError::InvalidArgument(_))
    ));
    assert!(matches!(
        inv.report_progress(f64::NAN, None, None),
        Err(HostError::InvalidArgument(_))
    ));
    assert!(matches!(
        inv.report_progress(3.0, Some(f64::INFINITY), None),
        Err(HostError::InvalidArgument(_))
    ));
    inv.complete(json!({})).unwrap();
    assert_eq!(inv.report_progress(4.0, None, None), Err(HostError::AlreadyCompleted));
    let sent = h.take();
    assert_eq!(
        sent[..2],
        [
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "t-1", "progress": 0, "total": 2, "message": "starting"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "t-1", "progress": 1.5}}),
        ]
    );
    assert_eq!(sent[2]["id"], 1);
    assert_eq!(sent.len(), 3);
    // Without a progressToken nothing is sent, but the report is taken.
    let inv = slow_call(&h, 2, json!({}));
    inv.report_progress(1.0, None, None).unwrap();
    inv.complete(json!({})).unwrap();
    let sent = h.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
}

#[test]
fn a_report_racing_the_response_is_sent_before_it_or_refused() {
    for round in 0..50 {
        let h = harness(McpOptions::default());
        h.init(json!({}));
        let inv = Arc::new(slow_call(&h, 1, json!({"progressToken": round})));
        let reporter = {
            let inv = inv.clone();
            std::thread::spawn(move || {
                let mut accepted = 0;
                for i in 0..10_000 {
                    match inv.report_progress(i as f64, None, None) {
                        Ok(()) => accepted += 1,
                        Err(HostError::AlreadyCompleted) => return accepted,
                        Err(e) => panic!("{e}"),
                    }
                }
                accepted
            })
        };
        std::thread::yield_now();
        inv.complete(json!({})).unwrap();
        let accepted = reporter.join().unwrap();
        let sent = h.take();
        let response = sent.iter().position(|m| m["id"] == 1).expect("the response");
        assert_eq!(response, sent.len() - 1, "nothing after the response (round {round})");
        assert_eq!(response, accepted, "every accepted report, and only those, before it");
        let values: Vec<f64> = sent[..response]
            .iter()
            .map(|m| m["params"]["progress"].as_f64().unwrap())
            .collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "increasing");
    }
}

#[test]
fn an_approved_rerun_reports_only_to_the_observer() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut builder = RuntimeBuilder::new(&catalog());
    builder.policy(Arc::new(policy));
    builder.manual_timers(true);
    let s = seen.clone();
    builder.progress_observer(Arc::new(move |json: &str| s.lock().push(json.to_string())));
    let runtime = builder.build();
    let _binding = runtime
        .host()
        .bind(
            "notes.purge",
            Arc::new(|inv: Invocation| {
                inv.report_progress(1.0, Some(1.0), None).unwrap();
                inv.log(rcip::runtime::LogLevel::Error, None, &json!("purged")).unwrap();
                inv.complete(json!({"purged": true})).unwrap()
            }),
            None,
        )
        .unwrap();
    let sent = Arc::new(Mutex::new(Vec::<Value>::new()));
    let out = sent.clone();
    let output: Arc<dyn McpOutput> = Arc::new(move |m: &str| out.lock().push(serde_json::from_str(m).unwrap()));
    let mut options = elicit();
    options.workers = Some(0);
    let session = McpSession::new(&runtime, options, output).unwrap();
    let send = |v: Value| session.receive(v.to_string().as_bytes());
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}}));
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "notes.purge", "arguments": {}, "_meta": {"progressToken": 5}}}));
    let ask = sent.lock().last().unwrap().clone();
    assert_eq!(ask["method"], "elicitation/create");
    send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}}));
    let last = sent.lock().last().unwrap().clone();
    assert_eq!(last["result"]["structuredContent"], json!({"purged": true}));
    assert!(
        sent.lock()
            .iter()
            .all(|m| m["method"] != "notifications/progress" && m["method"] != "notifications/message"),
        "the re-run has no request to attach to: {:?}",
        sent.lock()
    );
    let seen = seen.lock();
    assert_eq!(seen.len(), 1);
    let report: Value = serde_json::from_str(&seen[0]).unwrap();
    assert_eq!(report["capabilityId"], "notes.purge");
    assert_eq!(
        (report["progress"].as_f64(), report["total"].as_f64()),
        (Some(1.0), Some(1.0))
    );
}

#[test]
fn log_messages_follow_the_level_and_set_level_checks_its_argument() {
    use rcip::runtime::LogLevel;
    let h = harness(McpOptions::default());
    let init = h.init(json!({}));
    assert_eq!(init["result"]["capabilities"]["logging"], json!({}));
    let inv = slow_call(&h, 1, json!({}));
    inv.log(LogLevel::Debug, None, &json!("quiet")).unwrap();
    inv.log(LogLevel::Info, Some("notebook"), &json!({"k": 1})).unwrap();
    assert_eq!(
        h.take(),
        [json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "logger": "notebook", "data": {"k": 1}}})]
    );
    assert_eq!(
        h.request(json!(2), "logging/setLevel", json!({"level": "error"}))["result"],
        json!({})
    );
    inv.log(LogLevel::Warning, None, &json!("filtered")).unwrap();
    inv.log(LogLevel::Emergency, None, &json!("sent")).unwrap();
    assert_eq!(h.take().len(), 1);
    for bad in [json!({}), json!({"level": "INFO"}), json!({"level": 3})] {
        assert_eq!(error_code(&h.request(json!(3), "logging/setLevel", bad)), -32602);
    }
    inv.complete(json!({})).unwrap();
    h.take();
    assert_eq!(
        inv.log(LogLevel::Info, None, &json!("late")),
        Err(HostError::AlreadyCompleted)
    );
}

#[test]
fn handler_elicitation_is_asked_answered_and_withdrawn() {
    use rcip::runtime::ElicitAnswer;
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer", "default": 2}}});
    let answers = Arc::new(Mutex::new(Vec::<ElicitAnswer>::new()));
    let sink = |a: &Arc<Mutex<Vec<ElicitAnswer>>>| {
        let a = a.clone();
        Box::new(move |answer: ElicitAnswer| a.lock().push(answer)) as rcip::runtime::ElicitSink
    };
    // A client without elicitation: unsupported, nothing sent.
    let h = harness(McpOptions::default());
    h.init(json!({}));
    let inv = slow_call(&h, 1, json!({}));
    assert!(matches!(
        inv.elicit("n?", &schema, sink(&answers)),
        Err(HostError::Unsupported(_))
    ));
    assert!(h.take().is_empty());
    inv.complete(json!({})).unwrap();

    let h = harness(McpOptions::default());
    h.init(json!({"elicitation": {"form": {}}}));
    let inv = slow_call(&h, 1, json!({}));
    // A schema outside MCP's rules is refused before anything is sent.
    let nested = json!({"type": "object", "properties": {"n": {"type": "object"}}});
    assert!(matches!(
        inv.elicit("n?", &nested, sink(&answers)),
        Err(HostError::InvalidArgument(_))
    ));
    assert!(h.take().is_empty());
    inv.elicit("n?", &schema, sink(&answers)).unwrap();
    let ask = h.take().pop().unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(
        ask["params"],
        json!({"mode": "form", "message": "n?", "requestedSchema": schema})
    );
    h.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"n": 3}}}));
    assert_eq!(
        answers.lock().pop(),
        Some(ElicitAnswer::Accept(json!({"n": 3}).as_object().unwrap().clone()))
    );
    // Open when the handler settles: withdrawn before the response, cancel.
    inv.elicit("again?", &schema, sink(&answers)).unwrap();
    let ask = h.take().pop().unwrap();
    inv.complete(json!({})).unwrap();
    let sent = h.take();
    assert_eq!(sent[0]["method"], "notifications/cancelled");
    assert_eq!(sent[0]["params"]["requestId"], ask["id"]);
    assert_eq!(sent[1]["id"], 1);
    assert_eq!(answers.lock().pop(), Some(ElicitAnswer::Cancel));
    assert_eq!(
        inv.elicit("late?", &schema, sink(&answers)),
        Err(HostError::AlreadyCompleted)
    );
    // Cancelling the call cancels the wait.
    let inv = slow_call(&h, 2, json!({}));
    inv.elicit("n?", &schema, sink(&answers)).unwrap();
    let ask = h.take().pop().unwrap();
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}));
    assert_eq!(answers.lock().pop(), Some(ElicitAnswer::Cancel));
    assert!(h
        .take()
        .iter()
        .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == ask["id"]));
    // A late answer reaches nobody.
    h.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {}}}));
    assert!(answers.lock().is_empty());
    // Closing the session answers what is still open.
    let inv = slow_call(&h, 3, json!({}));
    inv.elicit("n?", &schema, sink(&answers)).unwrap();
    h.session.close();
    assert_eq!(answers.lock().pop(), Some(ElicitAnswer::Cancel));
}

#[test]
fn handler_sampling_needs_the_capability_and_is_withdrawn_on_cancel() {
    use rcip::runtime::ClientReply;
    let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5});
    let replies = Arc::new(Mutex::new(Vec::<ClientReply>::new()));
    let sink = |r: &Arc<Mutex<Vec<ClientReply>>>| {
        let r = r.clone();
        Box::new(move |reply: ClientReply| r.lock().push(reply)) as rcip::runtime::ReplySink
    };
    // Elicitation declared, sampling not: unsupported.
    let h = harness(McpOptions::default());
    h.init(json!({"elicitation": {}}));
    let inv = slow_call(&h, 1, json!({}));
    assert!(matches!(
        inv.create_message(&params, sink(&replies)),
        Err(HostError::Unsupported(_))
    ));
    inv.complete(json!({})).unwrap();

    let h = harness(McpOptions::default());
    h.init(json!({"sampling": {}}));
    let inv = slow_call(&h, 1, json!({}));
    assert!(matches!(
        inv.create_message(&json!({"messages": [], "maxTokens": 5}), sink(&replies)),
        Err(HostError::InvalidArgument(_))
    ));
    inv.create_message(&params, sink(&replies)).unwrap();
    let ask = h.take().pop().unwrap();
    assert_eq!(
        (ask["method"].as_str(), &ask["params"]),
        (Some("sampling/createMessage"), &params)
    );
    h.send(json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -1, "message": "User rejected"}}));
    assert_eq!(
        replies.lock().pop(),
        Some(ClientReply::Error(json!({"code": -1, "message": "User rejected"})))
    );
    inv.create_message(&params, sink(&replies)).unwrap();
    let ask = h.take().pop().unwrap();
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}));
    assert_eq!(replies.lock().pop(), Some(ClientReply::Cancelled));
    assert!(h
        .take()
        .iter()
        .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == ask["id"]));
}

// ---- the stateless era (MCP 2026-07-28) -------------------------------

/// The `_meta` of a modern request declaring `capabilities`.
pub(super) fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "1"}
    })
}

/// `params` with a modern `_meta` (its own entries, such as a progress
/// token or a log level, added to the required ones).
pub(super) fn modern_params(mut params: Value, extra_meta: Value) -> Value {
    let mut meta = modern_meta(json!({}));
    if let Value::Object(extra) = extra_meta {
        for (k, v) in extra {
            meta[k] = v;
        }
    }
    params["_meta"] = meta;
    params
}

/// Dual-era options (the default serves the legacy era only).
fn dual() -> McpOptions {
    McpOptions {
        eras: Eras::Both,
        ..McpOptions::default()
    }
}

#[test]
fn by_default_both_eras_are_served() {
    let h = harness(McpOptions::default());
    let r = h.request(json!(1), "server/discover", json!({"_meta": modern_meta(json!({}))}));
    assert_eq!(r["result"]["supportedVersions"][0], "2026-07-28");
    // Without the modern `_meta`, still the legacy method table.
    let r = h.request(json!(2), "server/discover", json!({}));
    assert_eq!(error_code(&r), METHOD_NOT_FOUND);
    h.init(json!({}));
    let r = h.request(json!(3), "tools/list", json!({"_meta": modern_meta(json!({}))}));
    assert_eq!(r["result"]["resultType"], "complete");
}

#[test]
fn with_legacy_eras_the_modern_meta_is_not_read_so_dual_era_clients_fall_back() {
    let h = harness(McpOptions::from_value(&json!({"eras": "legacy"})).unwrap());
    let r = h.request(json!(1), "server/discover", json!({"_meta": modern_meta(json!({}))}));
    assert_eq!(error_code(&r), METHOD_NOT_FOUND);
    let mut meta = modern_meta(json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let r = h.request(json!(2), "tools/list", json!({"_meta": meta}));
    assert_eq!(error_code(&r), INVALID_REQUEST, "not initialized, not -32022");
    h.init(json!({}));
    let r = h.request(json!(3), "tools/list", json!({"_meta": modern_meta(json!({}))}));
    assert!(r["result"].get("resultType").is_none());
}

fn server_info() -> Value {
    json!({"name": "notebook", "title": "Notebook", "version": "2.1.0"})
}

#[test]
fn modern_discover_needs_no_initialize_and_carries_result_type_server_info_and_caching() {
    let h = harness(dual());
    let r = h.request(json!(1), "server/discover", json!({"_meta": modern_meta(json!({}))}));
    assert_eq!(
        r["result"],
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
            "capabilities": {"tools": {}, "logging": {}},
            "instructions": "A notebook for tests.",
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()}
        })
    );
    // Without the modern `_meta` it is no legacy method (the stdio probe
    // of a dual-era client gets an error and falls back, or uses modern).
    assert_eq!(
        error_code(&h.request(json!(2), "server/discover", json!({}))),
        METHOD_NOT_FOUND
    );
}

#[test]
fn modern_requests_with_bad_meta_are_invalid_params() {
    let h = harness(dual());
    let v = "io.modelcontextprotocol/protocolVersion";
    for meta in [
        json!({v: "2026-07-28"}),
        json!({v: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": []}),
        json!({v: 20260728, "io.modelcontextprotocol/clientCapabilities": {}}),
        json!({v: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/logLevel": "loud"}),
        json!({v: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": "me"}),
    ] {
        for method in ["server/discover", "tools/list", "tools/call"] {
            let r = h.request(json!(1), method, json!({"name": "notes.list", "_meta": meta}));
            assert_eq!(error_code(&r), INVALID_PARAMS, "{method} {meta}");
        }
    }
    assert_eq!(h.session.in_flight(), 0);
}

#[test]
fn an_unsupported_version_lists_the_supported_ones() {
    let h = harness(dual());
    let mut meta = modern_meta(json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let r = h.request(json!(1), "tools/list", json!({"_meta": meta}));
    assert_eq!(r["error"]["code"], UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(r["error"]["code"], -32022);
    assert_eq!(
        r["error"]["data"],
        json!({"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"], "requested": "1900-01-01"})
    );
}

#[test]
fn methods_of_the_legacy_era_are_not_found_on_modern_requests() {
    let h = harness(dual());
    let p =
        json!({"_meta": modern_meta(json!({})), "protocolVersion": "2025-11-25", "capabilities": {}, "level": "debug"});
    for method in ["initialize", "ping", "logging/setLevel", "resources/list"] {
        assert_eq!(
            error_code(&h.request(json!(method), method, p.clone())),
            METHOD_NOT_FOUND,
            "{method}"
        );
    }
    // The modern initialize opened no session: tools need one on legacy
    // requests, and an initialize without the modern _meta opens it.
    assert_eq!(
        error_code(&h.request(json!(2), "tools/list", json!({}))),
        INVALID_REQUEST
    );
    assert_eq!(h.init(json!({}))["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(h.request(json!(3), "ping", json!({}))["result"], json!({}));
}

#[test]
fn a_legacy_revision_in_meta_is_served_by_the_legacy_session() {
    let h = harness(dual());
    let mut meta = modern_meta(json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    // Not initialized: the legacy rule applies, not -32022.
    assert_eq!(
        error_code(&h.request(json!(1), "tools/list", json!({"_meta": meta}))),
        INVALID_REQUEST
    );
}

#[test]
fn caching_hints_follow_the_ttl_and_scope_options() {
    let h = harness(McpOptions::from_value(&json!({"ttlMs": 60000, "cacheScope": "public"})).unwrap());
    let list = h.request(json!(1), "tools/list", modern_params(json!({}), json!({})))["result"].clone();
    assert_eq!(list["ttlMs"], 60000);
    assert_eq!(list["cacheScope"], "public");
    let discover = h.request(json!(2), "server/discover", modern_params(json!({}), json!({})))["result"].clone();
    assert_eq!(discover["ttlMs"], 60000);
    assert_eq!(discover["cacheScope"], "public");
    assert!(McpOptions::from_value(&json!({"ttlMs": -1})).is_err());
    assert!(McpOptions::from_value(&json!({"ttlMs": MAX_TTL_MS + 1})).is_err());
    assert!(McpOptions::from_value(&json!({"cacheScope": "shared"})).is_err());
    assert_eq!(McpOptions::default().ttl_ms, None);
    assert_eq!(McpOptions::default().cache_scope, CacheScope::Private);
}

#[test]
fn modern_tools_list_is_deterministic_with_caching_hints_and_needs_no_session() {
    let h = harness(McpOptions::from_value(&json!({"pageSize": 4, "eras": "both"})).unwrap());
    let page = |id: i64, cursor: Option<&str>| {
        let mut p = modern_params(json!({}), json!({}));
        if let Some(c) = cursor {
            p["cursor"] = json!(c);
        }
        h.request(json!(id), "tools/list", p)["result"].clone()
    };
    let first = page(1, None);
    assert_eq!(first["resultType"], "complete");
    assert_eq!(first["ttlMs"], 0);
    assert_eq!(first["cacheScope"], "private");
    assert_eq!(first["_meta"]["io.modelcontextprotocol/serverInfo"], server_info());
    let second = page(2, first["nextCursor"].as_str());
    assert_eq!(second["cacheScope"], "private");
    assert!(second.get("nextCursor").is_none());
    let names: Vec<Value> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["tools"].as_array().unwrap())
        .map(|t| t["name"].clone())
        .collect();
    let catalog_order: Vec<Value> = catalog().capabilities().iter().map(|c| json!(c.id)).collect();
    assert_eq!(names, catalog_order);
    assert_eq!(page(3, None), first);
    // A legacy tools/list (after initialize) has no modern fields.
    h.init(json!({}));
    let legacy = h.request(json!(4), "tools/list", json!({}));
    assert!(legacy["result"].get("resultType").is_none());
    assert!(legacy["result"].get("ttlMs").is_none());
}

#[test]
fn a_modern_call_is_complete_with_server_info_next_to_the_outcome() {
    let h = harness(dual());
    let r = h.request(
        json!(1),
        "tools/call",
        modern_params(json!({"name": "notes.list", "arguments": {}}), json!({})),
    );
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["structuredContent"], json!({"notes": ["first"]}));
    assert_eq!(result["_meta"]["rcip/outcome"]["status"], "succeeded");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"], server_info());
    // An unknown tool is still -32602.
    let r = h.request(
        json!(2),
        "tools/call",
        modern_params(json!({"name": "nope"}), json!({})),
    );
    assert_eq!(error_code(&r), INVALID_PARAMS);
    // A legacy call result has no resultType.
    h.init(json!({}));
    assert!(h.call(3, "notes.list", json!({}))["result"].get("resultType").is_none());
}

#[test]
fn modern_log_messages_only_with_the_requests_log_level() {
    use rcip::runtime::LogLevel;
    let h = harness(dual());
    let call = |id: i64, extra: Value| {
        h.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": modern_params(json!({"name": "notes.slow", "arguments": {}}), extra)}));
        h.slow.lock().pop().expect("the handler ran")
    };
    // No logLevel: nothing, whatever the level (MUST NOT).
    let inv = call(1, json!({}));
    inv.log(LogLevel::Emergency, None, &json!("x")).unwrap();
    inv.complete(json!({})).unwrap();
    let sent = h.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["id"], 1);
    // logLevel warning: warning and above, before the response.
    let inv = call(2, json!({"io.modelcontextprotocol/logLevel": "warning"}));
    inv.log(LogLevel::Info, None, &json!("filtered")).unwrap();
    inv.log(LogLevel::Warning, Some("nb"), &json!("sent")).unwrap();
    inv.complete(json!({})).unwrap();
    let sent = h.take();
    assert_eq!(
        sent[0],
        json!({"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "warning", "logger": "nb", "data": "sent"}})
    );
    assert_eq!(sent[1]["id"], 2);
    assert_eq!(sent.len(), 2);
}

#[test]
fn modern_progress_only_for_the_requests_own_token() {
    let h = harness(dual());
    h.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({"progressToken": 7}))}));
    let a = h.slow.lock().pop().unwrap();
    h.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({}))}));
    let b = h.slow.lock().pop().unwrap();
    b.report_progress(1.0, None, None).unwrap();
    a.report_progress(1.0, Some(2.0), None).unwrap();
    b.complete(json!({})).unwrap();
    a.complete(json!({})).unwrap();
    let sent = h.take();
    assert_eq!(
        sent[0],
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 7, "progress": 1, "total": 2}})
    );
    assert_eq!((sent[1]["id"].clone(), sent[2]["id"].clone()), (json!(2), json!(1)));
    assert_eq!(sent.len(), 3, "{sent:?}");
}

#[test]
fn cancelling_a_modern_call_cancels_it_and_sends_nothing_more() {
    let h = harness(dual());
    h.send(json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call",
                  "params": modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({"progressToken": "p"}))}));
    let inv = h.slow.lock().pop().unwrap();
    assert!(!inv.is_cancelled());
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}}));
    assert!(inv.is_cancelled());
    inv.report_progress(1.0, None, None).unwrap();
    let _ = inv.complete(json!({}));
    assert!(h.take().is_empty());
    assert_eq!(h.session.in_flight(), 0);
}

#[test]
fn a_handler_needing_an_undeclared_capability_answers_missing_required_client_capability() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let h = harness(dual());
    // Declared in a legacy session: a modern request must not rely on it.
    h.init(json!({"elicitation": {"form": {}}, "sampling": {}}));
    h.take();
    h.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({}))}));
    let inv = h.slow.lock().pop().unwrap();
    assert!(!inv.can_ask("elicitation/create") && !inv.can_ask("sampling/createMessage"));
    assert!(matches!(
        inv.elicit("n?", &schema, Box::new(|_| {})),
        Err(HostError::Unsupported(_))
    ));
    inv.complete(json!({})).unwrap();
    let sent = h.take();
    assert_eq!(sent.len(), 1, "no server-to-client request: {sent:?}");
    assert_eq!(sent[0]["error"]["code"], MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(sent[0]["error"]["code"], -32021);
    assert_eq!(
        sent[0]["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {}}})
    );
    // Declared on the request: still no request to the client; the
    // question becomes an input request of the response (mrtr_tests).
    let mut p = modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({}));
    p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}, "sampling": {}});
    h.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": p}));
    let inv = h.slow.lock().pop().unwrap();
    assert!(inv.can_ask("elicitation/create") && !inv.can_ask("roots/list"));
    let (tx, rx) = std::sync::mpsc::channel();
    inv.elicit("n?", &schema, Box::new(move |a| tx.send(a).unwrap()))
        .unwrap();
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(),
        ElicitAnswer::Cancel
    );
    inv.complete(json!({"ok": true})).unwrap();
    let sent = h.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["result"]["resultType"], "input_required", "{sent:?}");
    assert_eq!(
        sent[0]["result"]["inputRequests"]["rcip/ask/1"]["method"],
        "elicitation/create"
    );
}

#[test]
fn each_modern_request_gets_a_fresh_runtime_closed_with_its_response() {
    let h = harness(dual());
    type Built = (String, Value, rcip::runtime::Client, Binding);
    let built: Arc<Mutex<Vec<Built>>> = Arc::new(Mutex::new(Vec::new()));
    let b = built.clone();
    let factory = move |setup: &RequestSetup<'_>| -> Result<Runtime, String> {
        // Each request's runtime: its own binding and its own state.
        let runtime = RuntimeBuilder::new(&catalog()).build();
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let binding = runtime
            .host()
            .bind(
                "notes.list",
                Arc::new(move |inv: Invocation| {
                    let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                    inv.complete(json!({"notes": [format!("call {n} of this runtime")]}))
                        .unwrap()
                }),
                None,
            )
            .unwrap();
        let client = setup.meta["io.modelcontextprotocol/clientInfo"]["name"].clone();
        b.lock()
            .push((setup.method.to_string(), client, runtime.client(), binding));
        Ok(runtime)
    };
    h.session.set_request_runtimes(Arc::new(factory));
    for id in 1..=2 {
        let r = h.request(
            json!(id),
            "tools/call",
            modern_params(json!({"name": "notes.list", "arguments": {}}), json!({})),
        );
        // Nothing of the first request is seen by the second.
        assert_eq!(
            r["result"]["structuredContent"],
            json!({"notes": ["call 1 of this runtime"]})
        );
    }
    let list = h.request(json!(3), "tools/list", modern_params(json!({}), json!({})));
    assert_eq!(list["result"]["resultType"], "complete");
    {
        let built = built.lock();
        assert_eq!(built.len(), 3);
        assert_eq!(built[0].0, "tools/call");
        assert_eq!(built[2].0, "tools/list");
        assert_eq!(built[0].1, "modern");
        assert!(
            built.iter().all(|(_, _, r, _)| r.is_closed()),
            "closed with the response"
        );
    }
    // discover needs no runtime; legacy requests use the session's.
    h.request(json!(4), "server/discover", modern_params(json!({}), json!({})));
    h.init(json!({}));
    assert_eq!(
        h.call(5, "notes.list", json!({}))["result"]["structuredContent"],
        json!({"notes": ["first"]})
    );
    assert_eq!(built.lock().len(), 3);
    // A factory that refuses: -32603 with its message.
    h.session
        .set_request_runtimes(Arc::new(|_: &RequestSetup<'_>| -> Result<Runtime, String> {
            Err("no token".into())
        }));
    let r = h.request(json!(6), "tools/list", modern_params(json!({}), json!({})));
    assert_eq!(error_code(&r), INTERNAL_ERROR);
    assert!(r["error"]["message"].as_str().unwrap().contains("no token"));
    // A runtime of another catalog: refused, and closed.
    let other: Arc<Mutex<Vec<rcip::runtime::Client>>> = Arc::new(Mutex::new(Vec::new()));
    let o = other.clone();
    h.session
        .set_request_runtimes(Arc::new(move |_: &RequestSetup<'_>| -> Result<Runtime, String> {
            let text = json!({
                "protocolVersion": "1.0",
                "application": {"id": "elsewhere", "name": "Elsewhere", "description": "Another app.", "version": "1.0.0"},
                "scopes": [],
                "capabilities": []
            });
            let runtime = RuntimeBuilder::new(&Catalog::from_value(&text).unwrap()).build();
            o.lock().push(runtime.client());
            Ok(runtime)
        }));
    let r = h.request(json!(7), "tools/list", modern_params(json!({}), json!({})));
    assert_eq!(error_code(&r), INTERNAL_ERROR);
    assert!(
        r["error"]["message"].as_str().unwrap().contains("another catalog"),
        "{r}"
    );
    assert!(other.lock()[0].is_closed());
}

#[test]
fn a_cancelled_modern_request_closes_its_runtime_when_its_handler_ends() {
    let h = harness(dual());
    let built: Arc<Mutex<Vec<(rcip::runtime::Client, Binding)>>> = Arc::new(Mutex::new(Vec::new()));
    let slow: Arc<Mutex<Vec<Invocation>>> = Arc::new(Mutex::new(Vec::new()));
    let (b, s) = (built.clone(), slow.clone());
    h.session
        .set_request_runtimes(Arc::new(move |_: &RequestSetup<'_>| -> Result<Runtime, String> {
            let runtime = RuntimeBuilder::new(&catalog()).build();
            let s = s.clone();
            let binding = runtime
                .host()
                .bind("notes.slow", Arc::new(move |inv: Invocation| s.lock().push(inv)), None)
                .unwrap();
            b.lock().push((runtime.client(), binding));
            Ok(runtime)
        }));
    h.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": modern_params(json!({"name": "notes.slow", "arguments": {}}), json!({}))}));
    let inv = slow.lock().pop().unwrap();
    assert!(!built.lock()[0].0.is_closed());
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}));
    assert!(inv.is_cancelled());
    let _ = inv.complete(json!({}));
    assert!(built.lock()[0].0.is_closed());
    assert!(h.take().is_empty());
}

#[test]
fn stdio_serves_both_eras_on_one_stream_with_workers() {
    // Workers: the factory and the handlers run off the reading thread.
    let h = harness(McpOptions::from_value(&json!({"workers": 2, "eras": "both"})).unwrap());
    let builds = Arc::new(AtomicUsize::new(0));
    let kept: Arc<Mutex<Vec<Binding>>> = Arc::new(Mutex::new(Vec::new()));
    let (b, k) = (builds.clone(), kept.clone());
    h.session
        .set_request_runtimes(Arc::new(move |_: &RequestSetup<'_>| -> Result<Runtime, String> {
            b.fetch_add(1, Ordering::SeqCst);
            let runtime = RuntimeBuilder::new(&catalog()).build();
            let binding = runtime
                .host()
                .bind(
                    "notes.list",
                    Arc::new(|inv: Invocation| inv.complete(json!({"notes": ["per request"]})).unwrap()),
                    None,
                )
                .unwrap();
            k.lock().push(binding);
            Ok(runtime)
        }));
    let line = |v: Value| format!("{v}\n");
    let mut input = String::new();
    input += &line(json!({"jsonrpc": "2.0", "id": "d", "method": "server/discover",
                          "params": {"_meta": modern_meta(json!({}))}}));
    input += &line(json!({"jsonrpc": "2.0", "id": "m", "method": "tools/call",
                          "params": modern_params(json!({"name": "notes.list", "arguments": {}}), json!({}))}));
    input += &line(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}));
    input += &line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    input += &line(json!({"jsonrpc": "2.0", "id": "l", "method": "tools/call",
                          "params": {"name": "notes.list", "arguments": {}}}));
    h.session.serve(std::io::Cursor::new(input)).unwrap();
    let sent = h.take();
    let by_id = |id: Value| {
        sent.iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {sent:?}"))
    };
    assert_eq!(by_id(json!("d"))["result"]["resultType"], "complete");
    assert_eq!(
        by_id(json!("m"))["result"]["structuredContent"],
        json!({"notes": ["per request"]})
    );
    assert_eq!(by_id(json!(0))["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        by_id(json!("l"))["result"]["structuredContent"],
        json!({"notes": ["first"]})
    );
    assert!(by_id(json!("l"))["result"].get("resultType").is_none());
    assert_eq!(builds.load(Ordering::SeqCst), 1);
    assert_eq!(sent.len(), 4, "{sent:?}");
}

#[test]
fn a_hosts_transport_passes_headers_to_the_request_factory() {
    let h = harness(dual());
    type Headers = Vec<(String, String)>;
    let seen: Arc<Mutex<Vec<Headers>>> = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    h.session
        .set_request_runtimes(Arc::new(move |setup: &RequestSetup<'_>| -> Result<Runtime, String> {
            s.lock().push(setup.headers.to_vec());
            Ok(RuntimeBuilder::new(&catalog()).build())
        }));
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": modern_params(json!({}), json!({}))});
    let headers = vec![("authorization".to_string(), "Bearer t".to_string())];
    h.session.receive_with_headers(body.to_string().as_bytes(), &headers);
    h.session
        .receive(body.to_string().replace("\"id\":1", "\"id\":2").as_bytes());
    assert_eq!(*seen.lock(), vec![headers, Vec::new()]);
    assert_eq!(h.take().len(), 2);
}

#[test]
fn a_modern_only_session_refuses_the_legacy_era_naming_its_version() {
    let h = harness(McpOptions::from_value(&json!({"eras": "modern"})).unwrap());
    // initialize (and any request without the modern _meta): -32602 that
    // names the one revision spoken; no session opens.
    let r = h.request(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
    );
    assert_eq!(error_code(&r), INVALID_PARAMS);
    assert!(r["error"]["message"].as_str().unwrap().contains("2026-07-28"), "{r}");
    h.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(
        error_code(&h.request(json!(2), "tools/list", json!({}))),
        INVALID_PARAMS
    );
    // A legacy revision in _meta is unsupported here.
    let mut meta = modern_meta(json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let r = h.request(json!(3), "tools/list", json!({"_meta": meta}));
    assert_eq!(r["error"]["code"], UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(r["error"]["data"]["supported"], json!(["2026-07-28"]));
    // Modern requests work; discover lists only the modern revision.
    let d = h.request(json!(4), "server/discover", modern_params(json!({}), json!({})));
    assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]));
    let c = h.request(
        json!(5),
        "tools/call",
        modern_params(json!({"name": "notes.list", "arguments": {}}), json!({})),
    );
    assert_eq!(c["result"]["structuredContent"], json!({"notes": ["first"]}));
    assert!(McpOptions::from_value(&json!({"eras": "stateless"})).is_err());
    assert_eq!(McpOptions::default().eras, Eras::Both);
}
