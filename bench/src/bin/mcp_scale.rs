//! How a successful `tools/call` over an MCP session scales with the size
//! of the catalog (issue 14, item 2): every call ends with a refresh
//! (PIPELINE.md section 4, step 19), and the session decides whether to
//! send `notifications/tools/list_changed` from what changed (the
//! snapshot's live state) instead of rendering the whole tool list.
//!
//! For catalogs of 10, 1,000, 10,000 and 50,000 capabilities (one bound),
//! it times `tools/call` through `McpSession::receive` with no worker pool
//! (the call runs on this thread, so the time is the session's and the
//! runtime's, not a thread hand-off) and prints the median and minimum per
//! call. Target: 50,000 capabilities within 2x of 10 (median over runs).
//! Loopback-free, bounded: a few thousand calls in all.

use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, Runtime};
use rcip_mcp::{McpOptions, McpSession};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn catalog(n: usize) -> Catalog {
    let caps: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("tools.t{i}"), "title": format!("Tool {i}"), "description": "A tool.",
                   "scopeIds": [], "effect": "read",
                   "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": false},
                   "outputSchema": {"type": "object"}})
        })
        .collect();
    let text = json!({"protocolVersion": "1.0",
        "application": {"id": "scale", "name": "Scale", "description": "Many tools."},
        "scopes": [], "capabilities": caps});
    Catalog::from_bytes(text.to_string().as_bytes()).expect("a valid catalog")
}

/// Median and minimum per call, in microseconds.
fn measure(n: usize, calls: usize, runs: usize) -> (f64, f64) {
    let runtime = Runtime::new(&catalog(n));
    let _binding = runtime
        .host()
        .bind(
            "tools.t0",
            Arc::new(|inv: Invocation| inv.complete(json!({"ok": true})).unwrap()),
            None,
        )
        .unwrap();
    let answered = Arc::new(AtomicUsize::new(0));
    let a = answered.clone();
    let options = McpOptions {
        workers: Some(0),
        ..McpOptions::default()
    };
    let session = McpSession::new(
        &runtime,
        options,
        Arc::new(move |m: &str| {
            if m.contains("\"result\"") {
                a.fetch_add(1, Ordering::Relaxed);
            }
        }),
    )
    .unwrap();
    session.receive(br#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#);
    session.receive(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let messages: Vec<Vec<u8>> = (0..calls)
        .map(|i| {
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"tools.t0","arguments":{{"q":"x"}}}}}}"#)
                .into_bytes()
        })
        .collect();
    let mut per_call = Vec::new();
    for _ in 0..runs {
        let before = answered.load(Ordering::Relaxed);
        let start = Instant::now();
        for m in &messages {
            session.receive(m);
        }
        let elapsed = start.elapsed();
        assert_eq!(answered.load(Ordering::Relaxed) - before, calls, "every call answered");
        per_call.push(elapsed.as_secs_f64() * 1e6 / calls as f64);
    }
    per_call.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (per_call[per_call.len() / 2], per_call[0])
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (calls, runs) = if quick { (200, 3) } else { (500, 7) };
    let started = Instant::now();
    let mut results = Vec::new();
    measure(10, calls, 1); // warm-up: caches, allocator, page faults
    for n in [10, 1_000, 10_000, 50_000] {
        let (median, min) = measure(n, calls, runs);
        println!("mcp tools/call at {n:>6} capabilities: median {median:8.2} us, min {min:8.2} us per call");
        results.push((n, median));
    }
    let small = results[0].1;
    let large = results[results.len() - 1].1;
    let ratio = large / small;
    println!(
        "{} mcp-call-scale: 50,000 capabilities cost {ratio:.2}x of 10 (target <= 2x)",
        if ratio <= 2.0 { "PASS" } else { "FAIL" }
    );
    assert!(started.elapsed() < Duration::from_secs(600));
    if ratio > 2.0 {
        std::process::exit(1);
    }
}
