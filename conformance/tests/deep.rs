//! rcip-conformance reads scenario payloads and the library's outcomes as
//! deep as the library accepts (issue 18, item 8): the default depth limit
//! of 1000 levels, and a limit a scenario raises (`options.limits`), and it
//! never prints `null` for an outcome it could not read.

use serde_json::{json, Value};
use std::process::Command;

const RUNNER: &str = env!("CARGO_BIN_EXE_rcip-conformance");

/// `depth` nested arrays: depth 1 is `[]`.
fn nested(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

/// A scenario whose one capability echoes its input, invoked with `input`
/// (JSON text spliced in as it is: serde_json's own parser could not build
/// the value here).
fn scenario(input: &str, limits: Option<Value>) -> String {
    let mut options = json!({"confirmationTtlMs": null, "policy": null});
    if let Some(l) = limits {
        options["limits"] = l;
    }
    let catalog = json!({
        "protocolVersion": "1.0",
        "application": {"id": "deep", "name": "Deep", "description": "Deep payloads."},
        "scopes": [],
        "capabilities": [{"id": "deep.echo", "title": "Echo", "description": "Echoes its input.",
            "scopeIds": [], "effect": "read",
            "inputSchema": {"type": "array"}, "outputSchema": {"type": "array"}}]
    });
    format!(
        r#"{{"name": "deep", "covers": [], "catalog": {catalog}, "options": {options},
           "steps": [{{"op": "bind", "capabilityId": "deep.echo", "binding": "b", "handler": {{"echo": true}}}},
                     {{"op": "invoke", "call": "c", "request": {{"capabilityId": "deep.echo", "input": {input}}}}}]}}"#
    )
}

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rcip-conformance-deep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs one scenario; returns (the invoke step's outcome, the raw output).
fn run(name: &str, text: &str) -> (Value, String) {
    let path = write(name, text);
    let out = Command::new(RUNNER).arg(&path).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{name}: runner exited {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // Read the transcript as the runner does (the test's own serde_json
    // would refuse the depth).
    let mut de = serde_json::Deserializer::from_str(&stdout);
    de.disable_recursion_limit();
    let v: Value = serde::Deserialize::deserialize(serde_stacker::Deserializer::new(&mut de)).unwrap();
    // Only the shallow fields: cloning or dropping the deep value recurses
    // per level, and a test thread's stack is small.
    let o = &v["transcript"][1]["outcome"];
    let outcome = json!({"status": o["status"], "error": {"code": o["error"]["code"]}});
    std::mem::forget(v);
    (outcome, stdout)
}

/// The depth of the nested arrays that `text` holds after `"output":`.
fn output_depth(stdout: &str) -> usize {
    let at = stdout.find("\"output\":").expect("an output") + "\"output\":".len();
    stdout[at..].bytes().take_while(|b| *b == b'[').count()
}

#[test]
fn reads_and_prints_outcomes_at_the_default_depth_limit() {
    // The input is one level inside the request; the library counts the
    // payload's own levels: 1000 is accepted, 1001 is not.
    let (outcome, stdout) = run("d1000.json", &scenario(&nested(1000), None));
    assert_eq!(outcome["status"], "succeeded", "{}", &stdout[..stdout.len().min(400)]);
    assert_eq!(output_depth(&stdout), 1000);
    let (outcome, _) = run("d1001.json", &scenario(&nested(1001), None));
    assert_eq!(outcome["status"], "failed");
    assert_eq!(outcome["error"]["code"], "INPUT_INVALID");
}

#[test]
fn reads_deeper_payloads_when_the_scenario_raises_the_limit() {
    let (outcome, stdout) = run(
        "d20000.json",
        &scenario(&nested(20_000), Some(json!({"maxDepth": 20_000}))),
    );
    assert_eq!(outcome["status"], "succeeded");
    assert_eq!(output_depth(&stdout), 20_000);
    let (outcome, _) = run(
        "d20001.json",
        &scenario(&nested(20_001), Some(json!({"maxDepth": 20_000}))),
    );
    assert_eq!(outcome["error"]["code"], "INPUT_INVALID");
}

#[test]
fn check_compares_deep_transcripts() {
    // The transcript the runner printed, as the expected one: `check` must
    // read both files and find them equal.
    let text = scenario(&nested(1000), None);
    let (_, stdout) = run("c1000.json", &text);
    let with_expected = format!(
        "{},\"expected\":{}}}",
        text.trim_end().strip_suffix('}').unwrap(),
        stdout.trim()
    );
    let path = write("c1000-expected.json", &with_expected);
    let out = Command::new(RUNNER).arg("check").arg(&path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
}

#[test]
fn a_bad_limit_fails_loudly() {
    let out = Command::new(RUNNER)
        .arg(write("bad-limit.json", &scenario("[]", Some(json!({"maxDepth": -1})))))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty());
}
