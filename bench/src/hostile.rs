//! rcip-hostile: validation that no input can make slow (issue 17). Each
//! case is a hostile consumer input against a schema an honest catalog may
//! hold; each prints its time (the best of several runs, wall clock) and a
//! PASS/FAIL line against its target. Part of `make bench`, after
//! rcip-bench (whose output is unchanged).
//!
//!   rcip-hostile [--runs N]
//!
//! Exits 1 when a target fails. The MCP end-to-end case (a `tools/call`
//! with the backtracking input, then a `ping`) is not here: see
//! BENCHMARKS.md.

use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, RuntimeBuilder};
use rcip::schema::Schema;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Case {
    name: &'static str,
    target: Duration,
    best: Duration,
    detail: String,
}

fn best_of(runs: usize, mut f: impl FnMut() -> String) -> (Duration, String) {
    let mut best = Duration::MAX;
    let mut detail = String::new();
    for _ in 0..runs {
        let t = Instant::now();
        detail = f();
        best = best.min(t.elapsed());
    }
    (best, detail)
}

fn compile(schema: Value) -> Schema {
    Schema::compile(&schema).unwrap_or_else(|e| panic!("{schema}: {e:?}"))
}

/// What a validation answered: "valid" or the keywords of its issues.
fn verdict(schema: &Schema, instance: &Value) -> String {
    let issues = schema.validate(instance);
    if issues.is_empty() {
        return "valid".to_string();
    }
    let mut kws: Vec<&str> = issues.iter().map(|i| i.keyword.as_str()).collect();
    kws.dedup();
    format!("{} issue(s): {}", issues.len(), kws.join(","))
}

fn fan_out(levels: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..levels {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(format!("d{i}"), json!({"allOf": [{"$ref": next}, {"$ref": next}]}));
    }
    defs.insert(format!("d{levels}"), json!({"type": "string"}));
    json!({"$ref": "#/$defs/d0", "$defs": defs})
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(5usize)
        .max(1);
    let ms = Duration::from_millis;
    let mut cases: Vec<Case> = Vec::new();
    let mut add = |name, target, (best, detail): (Duration, String)| {
        cases.push(Case {
            name,
            target,
            best,
            detail,
        })
    };

    // 1. uniqueItems.
    let unique = compile(json!({"type": "array", "uniqueItems": true}));
    let ints = Value::Array((0..1_000_000).map(|i| json!(i)).collect());
    add(
        "uniqueItems, 1M distinct integers",
        ms(1000),
        best_of(runs, || verdict(&unique, &ints)),
    );
    let objects = Value::Array(
        (0..100_000)
            .map(|i| json!({"id": i, "name": format!("n{i}")}))
            .collect(),
    );
    add(
        "uniqueItems, 100k distinct objects",
        ms(1000),
        best_of(runs, || verdict(&unique, &objects)),
    );

    // 2. Patterns.
    let pattern = compile(json!({"type": "string", "pattern": "^(a+)+$"}));
    let short = json!(format!("{}!", "a".repeat(50)));
    add(
        "pattern ^(a+)+$, 50 a's and !",
        ms(1),
        best_of(runs.max(20), || verdict(&pattern, &short)),
    );
    let mega = json!(format!("{}!", "a".repeat(1 << 20)));
    add(
        "pattern ^(a+)+$, 1 MB of a's and !",
        ms(100),
        best_of(runs, || verdict(&pattern, &mega)),
    );
    // The same through a runtime: JSON text in, INPUT_INVALID out.
    let catalog = Catalog::from_bytes(
        json!({
            "protocolVersion": "1.0",
            "application": {"id": "desk", "name": "Desk", "description": "Hostile inputs."},
            "scopes": [{"id": "visits", "title": "Visits", "description": "All visits."}],
            "capabilities": [{"id": "visits.lookup", "title": "Look up", "description": "Reads a visit.",
                "scopeIds": ["visits"], "effect": "read",
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "pattern": "^(a+)+$"},
                    "r": {"type": "string", "pattern": "^(a+)+$(?<=a)"}}},
                "outputSchema": {"type": "object"}}]
        })
        .to_string()
        .as_bytes(),
    )
    .expect("catalog");
    let runtime = RuntimeBuilder::new(&catalog).build();
    let _binding = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()),
            None,
        )
        .unwrap();
    let client = runtime.client();
    let invoke = |input: &Value| {
        let text = client
            .invoke_blocking("visits.lookup", input.to_string().as_bytes(), None, None)
            .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        format!(
            "{} {} ({})",
            v["status"], v["error"]["code"], v["error"]["validationIssues"][0]["keyword"]
        )
    };
    let mega_input = json!({"q": mega});
    add(
        "invoke with ^(a+)+$ on 1 MB (runtime, INPUT_INVALID)",
        ms(100),
        best_of(runs, || invoke(&mega_input)),
    );
    // A pattern that stays on the backtracking engine: the budget ends it.
    let hostile = json!({"r": format!("{}!", "a".repeat(60))});
    add(
        "invoke with a backtracking pattern, 60 a's and ! (budget issue)",
        ms(100),
        best_of(runs, || invoke(&hostile)),
    );

    // The MCP end-to-end case: a tools/call with the backtracking input on
    // a session (workers: the default two), and a ping sent right after
    // it. The call is answered within the budget (INPUT_INVALID, budget),
    // and the ping at once: the call runs on a worker, not on the thread
    // that reads the transport.
    let times = std::sync::Mutex::new(Vec::<(String, Instant)>::new());
    let times = Arc::new(times);
    let t = times.clone();
    let session = rcip_mcp::McpSession::new(
        &runtime,
        rcip_mcp::McpOptions::default(),
        Arc::new(move |m: &str| {
            let v: Value = serde_json::from_str(m).unwrap_or(Value::Null);
            let id = v["id"].to_string();
            let code = v["result"]["_meta"]["rcip/outcome"]["error"]["code"].to_string();
            t.lock().unwrap().push((format!("{id} {code}"), Instant::now()));
        }),
    )
    .expect("session");
    session.receive(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "visits.lookup", "arguments": hostile}})
    .to_string();
    let mut call_best = Duration::MAX;
    let mut ping_best = Duration::MAX;
    let mut detail = String::new();
    for _ in 0..runs {
        times.lock().unwrap().clear();
        let start = Instant::now();
        session.receive(call.as_bytes());
        session.receive(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
        let deadline = start + Duration::from_secs(10);
        while times.lock().unwrap().len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        let got = times.lock().unwrap().clone();
        let at = |prefix: &str| {
            got.iter()
                .find(|(k, _)| k.starts_with(prefix))
                .map(|(k, t)| (k.clone(), *t))
        };
        if let (Some((k, c)), Some((_, p))) = (at("1 "), at("2 ")) {
            call_best = call_best.min(c.duration_since(start));
            ping_best = ping_best.min(p.duration_since(start));
            detail = format!("call answered {k}, ping before it: {}", p <= c);
        }
    }
    add(
        "MCP tools/call with the backtracking input (session, workers)",
        ms(100),
        (call_best, detail.clone()),
    );
    add("MCP ping sent right after it", ms(5), (ping_best, detail));
    drop(session);

    // 3. References that fan out.
    let fan = compile(fan_out(30));
    add(
        "30-level reference fan-out, valid instance",
        ms(10),
        best_of(runs, || verdict(&fan, &json!("x"))),
    );
    add(
        "30-level reference fan-out, invalid instance",
        ms(10),
        best_of(runs, || verdict(&fan, &json!(1))),
    );

    let mut failed = 0;
    println!("rcip-hostile: best of {runs} runs (wall clock)");
    for c in &cases {
        let ok = c.best <= c.target;
        failed += usize::from(!ok);
        println!(
            "{} {}: {:.3} ms (target <= {} ms) -> {}",
            if ok { "PASS" } else { "FAIL" },
            c.name,
            c.best.as_secs_f64() * 1e3,
            c.target.as_millis(),
            c.detail
        );
    }
    if failed > 0 {
        std::process::exit(1);
    }
}
