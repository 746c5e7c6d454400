//! rcip-hostile: validation that no input can make slow (issue 17). Each
//! case is a hostile consumer input against a schema an honest catalog may
//! hold; each prints its time (the best of several runs, wall clock) and a
//! PASS/FAIL line against its target. Part of `make bench`, after
//! rcip-bench (whose output is unchanged).
//!
//!   rcip-hostile [--runs N] [--http-only]
//!
//! Exits 1 when a target fails. The MCP end-to-end case (a `tools/call`
//! with the backtracking input, then a `ping`) is not here: see
//! BENCHMARKS.md.
//!
//! Issue 27 (items 1 to 3) adds cases measured against a valid control:
//! each hostile input and its control (same size, same schema family) go
//! through one runtime as JSON text (`invoke_blocking`), and the program
//! prints the CPU time (process CPU clock, best of the runs) and the peak
//! heap above the start of the call (a counting allocator) of both. The
//! target: the case's CPU time and peak memory each at most twice its
//! control's (plus 2 ms and 256 KiB, so that noise on tiny figures does
//! not decide); the case may be refused with a clear error (a `budget`
//! issue), but within the same bounds.
//!
//! Issue 26 adds hostile requests over MCP Streamable HTTP against an
//! in-process server (hostile_http.rs): each prints its figure (memory a
//! session keeps, ...) and a PASS/FAIL line against its target.

mod hostile_http;

use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, RuntimeBuilder};
use rcip::schema::Schema;
use serde_json::{json, Value};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

// ----- counting allocator (peak heap of one call) ----------------------------

struct Counting;

pub(crate) static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
/// Counting is on only while a call is measured.
pub(crate) static COUNTING: AtomicBool = AtomicBool::new(false);

fn grew(by: isize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            grew(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout);
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            grew(layout.size() as isize);
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = System.realloc(p, layout, new_size);
        if !q.is_null() && COUNTING.load(Ordering::Relaxed) {
            grew(new_size as isize - layout.size() as isize);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn cpu_seconds() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // Safety: a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// CPU seconds (best of `runs`) and peak heap bytes above the start (the
/// largest of the runs) of `f`, and what its last run answered.
fn measure(runs: usize, mut f: impl FnMut() -> String) -> (f64, u64, String) {
    let mut cpu = f64::MAX;
    let mut peak = 0u64;
    let mut detail = String::new();
    for _ in 0..runs {
        LIVE.store(0, Ordering::SeqCst);
        PEAK.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        let t = cpu_seconds();
        detail = f();
        let spent = cpu_seconds() - t;
        COUNTING.store(false, Ordering::SeqCst);
        cpu = cpu.min(spent);
        peak = peak.max(PEAK.load(Ordering::SeqCst).max(0) as u64);
    }
    (cpu, peak, detail)
}

/// One issue-27 case and its control.
struct Paired {
    name: &'static str,
    case: (f64, u64, String),
    control: (f64, u64, String),
}

impl Paired {
    /// Within twice the control's CPU time and peak memory (plus the noise
    /// allowances), whatever the answer (a refusal too must come that fast).
    fn passes(&self) -> bool {
        let cpu = self.case.0 <= 2.0 * self.control.0 + 0.002;
        let mem = self.case.1 <= 2 * self.control.1 + 256 * 1024;
        cpu && mem
    }
}

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
    // `--http-only`: the issue-26 cases alone (a quick check of the server).
    let http_only = args.iter().any(|a| a == "--http-only");
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

    if http_only {
        return report(&[], &[], &hostile_http::cases());
    }

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

    let paired = issue27(runs.min(3));
    let http = hostile_http::cases();
    println!("rcip-hostile: best of {runs} runs (wall clock)");
    report(&cases, &paired, &http);
}

/// Prints every PASS/FAIL line; exits 1 when one failed.
fn report(cases: &[Case], paired: &[Paired], http: &[hostile_http::HttpCase]) {
    let mut failed = 0;
    for c in cases {
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
    if !paired.is_empty() {
        println!("rcip-hostile, issue 27: CPU time and peak heap of the call, case against its valid control");
    }
    for p in paired {
        let ok = p.passes();
        failed += usize::from(!ok);
        println!(
            "{} {}: {:.1} ms CPU, {:.1} MiB peak (control {:.1} ms, {:.1} MiB) -> {} | control: {}",
            if ok { "PASS" } else { "FAIL" },
            p.name,
            p.case.0 * 1e3,
            p.case.1 as f64 / 1048576.0,
            p.control.0 * 1e3,
            p.control.1 as f64 / 1048576.0,
            p.case.2,
            p.control.2
        );
    }
    println!("rcip-hostile, issue 26: hostile requests over MCP Streamable HTTP (in-process server, default options)");
    for c in http {
        let ok = c.passes();
        failed += usize::from(!ok);
        println!(
            "{} {}: {:.1} {} (target <= {} {}) -> {}",
            if ok { "PASS" } else { "FAIL" },
            c.name,
            c.measured,
            c.unit,
            c.target,
            c.unit,
            c.detail
        );
    }
    if failed > 0 {
        std::process::exit(1);
    }
}

/// A chain `{"a": {"a": ... leaf}}` of `depth` objects.
fn chain(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |inner, _| json!({ "a": inner }))
}

/// The issue-27 cases (items 1 to 3), each against its valid control,
/// through one runtime: JSON text in, the outcome out.
fn issue27(runs: usize) -> Vec<Paired> {
    // Enum members 40 objects deep that differ only at the bottom (every
    // comparison walks the whole chain), and the control's, which differ
    // at the top (a comparison stops at the first key).
    let deep: Vec<Value> = (0..1000).map(|i| chain(40, json!(i))).collect();
    let shallow: Vec<Value> = (0..1000)
        .map(|i| json!({ format!("m{i}"): chain(39, json!(i)) }))
        .collect();
    let strings: Vec<Value> = (0..10_000).map(|i| json!(format!("s{i:05}"))).collect();
    let backtracking = "^(a+)+$(?<=a)";
    let caps = [
        (
            "hostile.unevaluated",
            json!({"type": "object",
            "patternProperties": {"^k": {"type": "integer"}}, "unevaluatedProperties": false}),
        ),
        (
            "hostile.additional",
            json!({"type": "object",
            "patternProperties": {"^k": {"type": "integer"}}, "additionalProperties": false}),
        ),
        ("hostile.deep_enum", json!({"type": "array", "items": {"enum": deep}})),
        (
            "hostile.shallow_enum",
            json!({"type": "array", "items": {"enum": shallow}}),
        ),
        (
            "hostile.string_enum",
            json!({"type": "array", "items": {"enum": strings}}),
        ),
        ("hostile.strings", json!({"type": "array", "items": {"type": "string"}})),
        ("hostile.object", json!({"type": "object"})),
        (
            "hostile.pattern",
            json!({"type": "object", "properties": {
            "r": {"type": "string", "pattern": backtracking}, "junk": {"type": "array"}}}),
        ),
    ];
    let capabilities: Vec<Value> = caps
        .iter()
        .map(|(id, schema)| {
            json!({"id": id, "title": "Hostile", "description": "An honest schema.", "scopeIds": ["visits"],
                "effect": "read", "inputSchema": schema, "outputSchema": {"type": "object"}})
        })
        .collect();
    let catalog = Catalog::from_bytes(
        json!({
            "protocolVersion": "1.0",
            "application": {"id": "desk", "name": "Desk", "description": "Hostile inputs, issue 27."},
            "scopes": [{"id": "visits", "title": "Visits", "description": "All visits."}],
            "capabilities": capabilities
        })
        .to_string()
        .as_bytes(),
    )
    .expect("catalog");
    let runtime = RuntimeBuilder::new(&catalog).build();
    let _bindings: Vec<_> = caps
        .iter()
        .map(|(id, _)| {
            runtime
                .host()
                .bind(id, Arc::new(|inv: Invocation| inv.complete(json!({})).unwrap()), None)
                .unwrap()
        })
        .collect();
    let client = runtime.client();
    let call = |id: &str, text: &str| -> String {
        let out = client.invoke_blocking(id, text.as_bytes(), None, None).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let issues = v["error"]["validationIssues"].as_array().map_or(0, Vec::len);
        format!(
            "{} {} ({} issue(s), first {}, {} bytes)",
            v["status"],
            v["error"]["code"],
            issues,
            v["error"]["validationIssues"][0]["keyword"],
            out.len()
        )
    };
    let mut out = Vec::new();
    let mut pair = |name, (id, text): (&str, String), (cid, ctext): (&str, String)| {
        out.push(Paired {
            name,
            case: measure(runs, || call(id, &text)),
            control: measure(runs, || call(cid, &ctext)),
        })
    };

    // 1. unevaluatedProperties after patternProperties, 100k valid keys;
    // control: the same object under additionalProperties: false.
    let keys: serde_json::Map<String, Value> = (0..100_000).map(|i| (format!("k{i}"), json!(i))).collect();
    let keys = Value::Object(keys).to_string();
    pair(
        "unevaluatedProperties: false, 100k keys (valid)",
        ("hostile.unevaluated", keys.clone()),
        ("hostile.additional", keys),
    );
    // 1. enum of 1000 objects 40 deep, 12k items equal to the last member;
    // control: members that differ at the top, items equal to the last.
    let items = |v: &Value, n: usize| Value::Array(vec![v.clone(); n]).to_string();
    pair(
        "enum of 1000 objects 40 deep, 12k items (valid)",
        ("hostile.deep_enum", items(&deep[999], 12_000)),
        ("hostile.shallow_enum", items(&shallow[999], 12_000)),
    );
    // 1. enum of 10k strings, 300k items equal to the last member;
    // control: 300k items equal to the first.
    pair(
        "enum of 10k strings, 300k items (valid)",
        ("hostile.string_enum", items(&strings[9_999], 300_000)),
        ("hostile.string_enum", items(&strings[0], 300_000)),
    );
    // 2. 1M failing items (integers under items: string); control: 1M
    // strings.
    pair(
        "1M failing items, items: {type: string}",
        ("hostile.strings", items(&json!(0), 1_000_000)),
        ("hostile.strings", items(&json!(""), 1_000_000)),
    );
    // 3. A backtracking pattern on 31 characters beside 2M junk values;
    // control: a matching string of the same length beside the same junk.
    let junk = Value::Array(vec![json!(0); 2_000_000]);
    pair(
        "^(a+)+$(?<=a) on 31 characters beside 2M junk values",
        (
            "hostile.pattern",
            json!({"r": format!("{}!", "a".repeat(30)), "junk": junk}).to_string(),
        ),
        (
            "hostile.pattern",
            json!({"r": "a".repeat(31), "junk": junk}).to_string(),
        ),
    );
    // Payload text: 8 MB (a long string, then arrays 998 levels deep) with
    // a syntax error at the bottom, refused as not JSON; control: the same
    // text valid. Over the slice parser the error cost a scan of the text
    // per level on the way out.
    let d = rcip::json::DEFAULT_MAX_DEPTH - 2;
    let pad = "a".repeat(8_000_000 - 2 * d - 20);
    let deep = |bottom: &str| format!(r#"{{"pad":"{pad}","q":{}{bottom}{}}}"#, "[".repeat(d), "]".repeat(d));
    pair(
        "8 MB payload text, syntax error 998 levels deep",
        ("hostile.object", deep("x")),
        ("hostile.object", deep("1")),
    );
    out
}
