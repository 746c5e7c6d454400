//! The validation work budget (issue 17, item 4; PIPELINE.md section 8):
//! no real input comes within 10% of it, and exhausting it ends an
//! invocation with `INPUT_INVALID` / `OUTPUT_INVALID` and one `budget` issue.
//!
//! "Real inputs": every instance of the schema corpora (tests/data/
//! schema-corpus), every `input` / `output` value of the conformance
//! scenarios and of the dispatch desk's plan, each against every schema of
//! its catalog (a superset of the validations rcip runs on them).

use rcip::catalog::Catalog;
use rcip::json::{parse_str, Limits};
use rcip::runtime::{Invocation, RuntimeBuilder};
use rcip::schema::{Budget, Schema};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn load(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_str(&text, &Limits::UNLIMITED).expect("JSON")
}

/// The largest share of the budget any validation of `values` against
/// `schemas` spends, with what it was.
#[derive(Default)]
struct Worst {
    share: f64,
    what: String,
    count: usize,
}

impl Worst {
    fn measure(&mut self, schema: &Schema, value: &Value, what: impl Fn() -> String) {
        let cost = schema.validation_cost(value, Budget::default());
        assert!(!cost.exhausted, "{} exhausts the budget", what());
        let share = cost.spent as f64 / cost.limit as f64;
        self.count += 1;
        if share > self.share {
            self.share = share;
            self.what = what();
        }
    }
}

/// Every value under a key `input` or `output`, anywhere in `v`.
fn payloads<'v>(v: &'v Value, out: &mut Vec<&'v Value>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                if k == "input" || k == "output" {
                    out.push(x);
                }
                payloads(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| payloads(x, out)),
        _ => {}
    }
}

fn catalog_schemas(catalog: &Value) -> Vec<(String, Schema)> {
    let mut list = Vec::new();
    for cap in catalog["capabilities"].as_array().into_iter().flatten() {
        for key in ["inputSchema", "outputSchema"] {
            if let Some(Ok(s)) = cap.get(key).map(Schema::compile) {
                list.push((format!("{}/{key}", cap["id"]), s));
            }
        }
    }
    list
}

#[test]
fn no_corpus_entry_comes_within_ten_percent_of_the_budget() {
    let mut worst = Worst::default();
    for file in [
        "ajv2020-strict-suite.json",
        "ajv2020-strict-probes.json",
        "ajv2020-rcip-probes.json",
    ] {
        let corpus = load(root().join("tests/data/schema-corpus").join(file));
        for entry in corpus["entries"].as_array().unwrap() {
            let Ok(schema) = Schema::compile(&entry["schema"]) else {
                continue;
            };
            for (k, t) in entry["tests"].as_array().unwrap().iter().enumerate() {
                worst.measure(&schema, &t["data"], || format!("{file} {} test {k}", entry["id"]));
            }
        }
    }
    println!(
        "corpus: {} validations, worst {:.5}% ({})",
        worst.count,
        100.0 * worst.share,
        worst.what
    );
    assert!(worst.count > 700);
    assert!(
        worst.share < 0.9,
        "{} spends {:.1}% of its budget",
        worst.what,
        100.0 * worst.share
    );
}

#[test]
fn no_scenario_or_desk_input_comes_within_ten_percent_of_the_budget() {
    let mut worst = Worst::default();
    let dir = root().join("tests/conformance/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for path in files.iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
        let scenario = load(path.clone());
        let schemas = catalog_schemas(&scenario["catalog"]);
        let mut values = Vec::new();
        payloads(&scenario["steps"], &mut values);
        for (name, schema) in &schemas {
            for v in &values {
                worst.measure(schema, v, || format!("{} {name}", path.display()));
            }
        }
    }
    let desk = load(root().join("examples-c/dispatch/catalog.json"));
    let schemas = catalog_schemas(&desk);
    let plan = std::fs::read_to_string(root().join("examples-c/dispatch/plan.jsonl")).unwrap();
    for line in plan.lines().filter(|l| !l.trim().is_empty()) {
        let step = parse_str(line, &Limits::UNLIMITED).expect("plan line");
        let mut values = Vec::new();
        payloads(&step, &mut values);
        for (name, schema) in &schemas {
            for v in &values {
                worst.measure(schema, v, || format!("desk {name}: {line}"));
            }
        }
    }
    println!(
        "scenarios and desk: {} validations, worst {:.5}% ({})",
        worst.count,
        100.0 * worst.share,
        worst.what
    );
    assert!(worst.count > 500);
    assert!(
        worst.share < 0.9,
        "{} spends {:.1}% of its budget",
        worst.what,
        100.0 * worst.share
    );
}

fn hostile_catalog() -> Catalog {
    // A lookbehind keeps the pattern on the backtracking engine, where
    // `^(a+)+$` takes time exponential in the text.
    let pattern = "^(a+)+$(?<=a)";
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "desk", "name": "Desk", "description": "Test desk."},
        "scopes": [{"id": "visits", "title": "Visits", "description": "All visits."}],
        "capabilities": [
            {"id": "visits.lookup", "title": "Look up", "description": "Reads a visit.", "scopeIds": ["visits"],
             "effect": "read",
             "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}},
             "outputSchema": {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).expect("valid catalog")
}

fn invoke(builder_budget: Option<(u64, u64)>, input: &Value, output: Value) -> Value {
    let catalog = hostile_catalog();
    let mut b = RuntimeBuilder::new(&catalog);
    if let Some((floor, per_pair)) = builder_budget {
        b.validation_budget(floor, per_pair);
    }
    let runtime = b.build();
    let _binding = runtime
        .host()
        .bind(
            "visits.lookup",
            Arc::new(move |inv: Invocation| inv.complete(output.clone()).unwrap()),
            None,
        )
        .unwrap();
    let text = runtime
        .client()
        .invoke_blocking("visits.lookup", input.to_string().as_bytes(), None, None)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn budget_issue(outcome: &Value, code: &str) {
    assert_eq!(outcome["status"], "failed", "{outcome}");
    assert_eq!(outcome["error"]["code"], code, "{outcome}");
    let issues = outcome["error"]["validationIssues"].as_array().expect("issues");
    assert_eq!(issues.len(), 1, "{outcome}");
    assert_eq!(issues[0]["keyword"], "budget");
    assert_eq!(issues[0]["instancePath"], "");
}

#[test]
fn exhausting_the_budget_is_input_invalid_or_output_invalid_with_a_budget_issue() {
    let hostile = json!({"q": format!("{}!", "a".repeat(60))});
    let t = std::time::Instant::now();
    budget_issue(&invoke(None, &hostile, json!({})), "INPUT_INVALID");
    budget_issue(&invoke(None, &json!({}), hostile.clone()), "OUTPUT_INVALID");
    // The default budget ends each in well under a second (not a timing
    // target: the benchmark measures; this only catches a missing bound).
    assert!(t.elapsed() < std::time::Duration::from_secs(20));
    // A smaller budget set on the builder is the one that applies: a text
    // the default budget covers exceeds it.
    let modest = json!({"q": format!("{}!", "a".repeat(12))});
    assert_eq!(
        invoke(None, &modest, json!({}))["error"]["validationIssues"][0]["keyword"],
        "pattern"
    );
    budget_issue(&invoke(Some((50, 1)), &modest, json!({})), "INPUT_INVALID");
    // Valid values pass.
    assert_eq!(
        invoke(Some((50, 1)), &json!({"q": "aaa"}), json!({}))["status"],
        "succeeded"
    );
}

/// Issue 17 item 1 through the runtime: Ajv compares only the items of the
/// types `items` declares, so `[[1], [1]]` under `items: {type: string}`
/// has two `type` issues and no `uniqueItems` issue, in input, output and
/// preflight issue lists alike.
#[test]
fn unique_items_issue_lists_follow_ajv_in_input_output_and_preflight() {
    let schema = json!({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true,
        "items": {"type": "string"}}}});
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "desk", "name": "Desk", "description": "Test desk."},
        "scopes": [{"id": "visits", "title": "Visits", "description": "All visits."}],
        "capabilities": [{"id": "visits.tag", "title": "Tag", "description": "Tags a visit.", "scopeIds": ["visits"],
            "effect": "read", "inputSchema": schema, "outputSchema": schema}]
    });
    let catalog = Catalog::from_bytes(text.to_string().as_bytes()).unwrap();
    let runtime = RuntimeBuilder::new(&catalog).build();
    let bad = json!({"tags": [[1], [1]]});
    let out = bad.clone();
    let _binding = runtime
        .host()
        .bind(
            "visits.tag",
            Arc::new(move |inv: Invocation| inv.complete(out.clone()).unwrap()),
            None,
        )
        .unwrap();
    let pairs = |issues: &Value| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = issues
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["instancePath"].as_str().unwrap().into(),
                    i["keyword"].as_str().unwrap().into(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let want = vec![
        ("/tags/0".to_string(), "type".to_string()),
        ("/tags/1".to_string(), "type".to_string()),
    ];
    let client = runtime.client();
    let input: Value = serde_json::from_str(
        &client
            .invoke_blocking("visits.tag", bad.to_string().as_bytes(), None, None)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(input["error"]["code"], "INPUT_INVALID");
    assert_eq!(pairs(&input["error"]["validationIssues"]), want);
    let output: Value = serde_json::from_str(
        &client
            .invoke_blocking("visits.tag", br#"{"tags": ["a", "b"]}"#, None, None)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(output["error"]["code"], "OUTPUT_INVALID");
    assert_eq!(pairs(&output["error"]["validationIssues"]), want);
    let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = reports.clone();
    client
        .preflight(
            vec![("visits.tag".to_string(), bad.to_string().into_bytes())],
            None,
            Box::new(move |json: &str| sink.lock().unwrap().push(serde_json::from_str::<Value>(json).unwrap())),
        )
        .unwrap();
    let report = reports.lock().unwrap()[0].clone();
    let blocked = &report["outcomes"][0];
    assert_eq!(blocked["error"]["code"], "INPUT_INVALID", "{report}");
    assert_eq!(pairs(&blocked["error"]["validationIssues"]), want);
    // The same strings are duplicates.
    let dup: Value = serde_json::from_str(
        &client
            .invoke_blocking("visits.tag", br#"{"tags": ["a", "a"]}"#, None, None)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        pairs(&dup["error"]["validationIssues"]),
        [("/tags".to_string(), "uniqueItems".to_string())]
    );
}

/// The most issues, and issue bytes, one validation of `values` reports.
#[derive(Default)]
struct Largest {
    issues: usize,
    bytes: usize,
    what: String,
}

impl Largest {
    fn measure(&mut self, schema: &Schema, value: &Value, what: impl Fn() -> String) {
        let issues = schema.validate(value);
        let bytes = issues
            .iter()
            .map(|i| i.instance_path.len() + i.keyword.len() + i.message.len())
            .sum();
        if issues.len() > self.issues {
            self.issues = issues.len();
            self.what = what();
        }
        self.bytes = self.bytes.max(bytes);
    }
}

/// Issue 27, item 2: the default issue bound (1000 issues, 1 MiB) is far
/// above every issue list of the corpora, the scenarios and the desk, so
/// every one of them is reported whole.
#[test]
fn no_real_issue_list_comes_near_the_default_issue_limit() {
    let mut largest = Largest::default();
    for file in [
        "ajv2020-strict-suite.json",
        "ajv2020-strict-probes.json",
        "ajv2020-rcip-probes.json",
    ] {
        let corpus = load(root().join("tests/data/schema-corpus").join(file));
        for entry in corpus["entries"].as_array().unwrap() {
            let Ok(schema) = Schema::compile(&entry["schema"]) else {
                continue;
            };
            for (k, t) in entry["tests"].as_array().unwrap().iter().enumerate() {
                largest.measure(&schema, &t["data"], || format!("{file} {} test {k}", entry["id"]));
            }
        }
    }
    let dir = root().join("tests/conformance/scenarios");
    for path in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()) {
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let scenario = load(path.clone());
        let mut values = Vec::new();
        payloads(&scenario["steps"], &mut values);
        for (name, schema) in &catalog_schemas(&scenario["catalog"]) {
            for v in &values {
                largest.measure(schema, v, || format!("{} {name}", path.display()));
            }
        }
    }
    println!(
        "largest issue list: {} issues ({}), most bytes {}",
        largest.issues, largest.what, largest.bytes
    );
    let limit = rcip::schema::IssueLimit::default();
    assert!(largest.issues * 10 < limit.max_issues, "{} issues", largest.issues);
    assert!(largest.bytes * 10 < limit.max_bytes, "{} bytes", largest.bytes);
}

/// Issue 27, item 2, through the runtime: an outcome carries at most the
/// builder's bound of issues, says it was cut
/// (`error.validationIssuesTruncated: true`), and is otherwise the same
/// (`failed`, `INPUT_INVALID` / `OUTPUT_INVALID`, the first issues).
#[test]
fn an_outcome_with_too_many_issues_is_cut_and_says_so() {
    let schema = json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}});
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "desk", "name": "Desk", "description": "Test desk."},
        "scopes": [{"id": "visits", "title": "Visits", "description": "All visits."}],
        "capabilities": [{"id": "visits.tag", "title": "Tag", "description": "Tags a visit.", "scopeIds": ["visits"],
            "effect": "read", "inputSchema": schema, "outputSchema": schema}]
    });
    let catalog = Catalog::from_bytes(text.to_string().as_bytes()).unwrap();
    let bad = json!({"tags": (0..100).collect::<Vec<_>>()});
    let run = |limit: Option<(usize, usize)>, input: &Value| -> Value {
        let mut b = RuntimeBuilder::new(&catalog);
        if let Some((n, bytes)) = limit {
            b.validation_issue_limit(n, bytes);
        }
        let runtime = b.build();
        let out = bad.clone();
        let _binding = runtime
            .host()
            .bind(
                "visits.tag",
                Arc::new(move |inv: Invocation| inv.complete(out.clone()).unwrap()),
                None,
            )
            .unwrap();
        let text = runtime
            .client()
            .invoke_blocking("visits.tag", input.to_string().as_bytes(), None, None)
            .unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let whole = run(None, &bad);
    assert_eq!(whole["error"]["code"], "INPUT_INVALID");
    assert_eq!(whole["error"]["validationIssues"].as_array().unwrap().len(), 100);
    assert!(whole["error"].get("validationIssuesTruncated").is_none(), "{whole}");
    let cut = run(Some((10, 0)), &bad);
    assert_eq!(cut["status"], "failed");
    assert_eq!(cut["error"]["code"], "INPUT_INVALID");
    assert_eq!(cut["error"]["message"], whole["error"]["message"]);
    assert_eq!(
        cut["error"]["validationIssues"].as_array().unwrap()[..],
        whole["error"]["validationIssues"].as_array().unwrap()[..10]
    );
    assert_eq!(cut["error"]["validationIssuesTruncated"], true);
    let output = run(Some((10, 0)), &json!({"tags": []}));
    assert_eq!(output["error"]["code"], "OUTPUT_INVALID");
    assert_eq!(output["error"]["validationIssues"].as_array().unwrap().len(), 10);
    assert_eq!(output["error"]["validationIssuesTruncated"], true);
}
