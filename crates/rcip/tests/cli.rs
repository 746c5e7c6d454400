//! `rcip check`, the catalog linter (issue 3, item 4).

use std::process::Command;

fn rcip(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rcip"))
        .args(args)
        .output()
        .expect("run rcip");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/catalogs");

#[test]
fn a_valid_catalog_passes() {
    let (code, out) = rcip(&["check", &format!("{DATA}/dispatch-small.json")]);
    assert_eq!(code, 0, "{out}");
    assert!(out.trim_end().ends_with(": ok"), "{out}");
}

#[test]
fn every_problem_is_reported_at_once() {
    // A misspelled keyword, a format, a union type and a bad identifier.
    let (code, out) = rcip(&["check", &format!("{DATA}/four-problems.json")]);
    assert_eq!(code, 1, "{out}");
    for needle in ["unknown keyword", "format", "union type", "identifier", "4 problems"] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    assert!(out.contains("/capabilities/1/inputSchema/properties/visitId/patern"));
    assert!(out.contains("/capabilities/1/outputSchema/properties/status/type"));
    assert!(out.contains("/capabilities/2/id (Visits.reschedule)"));
}

#[test]
fn json_output_lists_problems_with_pointers_and_rules() {
    let (code, out) = rcip(&["check", "--json", &format!("{DATA}/four-problems.json")]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(report["ok"], false);
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 4);
    let rules: Vec<&str> = problems.iter().map(|p| p["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, ["unknown keyword", "format", "union type", "identifier"]);
    assert!(problems
        .iter()
        .all(|p| p["pointer"].as_str().unwrap().starts_with("/capabilities/")));
}

#[test]
fn usage_and_io_errors_exit_2() {
    assert_eq!(rcip(&["check"]).0, 2);
    assert_eq!(rcip(&["check", "/nonexistent/catalog.json"]).0, 2);
    assert_eq!(rcip(&["frobnicate"]).0, 2);
}

#[test]
fn the_demo_catalog_passes() {
    let (code, out) = rcip(&[
        "check",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples-c/dispatch/catalog.json"),
    ]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn performance_warnings_do_not_fail_the_check_unless_strict() {
    let file = format!("{DATA}/slow-schemas.json");
    let (code, out) = rcip(&["check", &file]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("warning: backtracking pattern at \"/capabilities/0/inputSchema/properties/code/pattern\""),
        "{out}"
    );
    assert!(
        out.contains("warning: reference fan-out at \"/capabilities/1/inputSchema/$defs/"),
        "{out}"
    );
    assert!(out.contains("ok, 2 warnings"), "{out}");
    let (code, out) = rcip(&["check", "--strict-performance", &file]);
    assert_eq!(code, 1, "{out}");
    let (code, out) = rcip(&["check", "--json", &file]);
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(report["ok"], true);
    let rules: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["backtracking pattern", "reference fan-out"]);
    assert_eq!(report["warnings"][0]["capabilityId"], "visits.search");
    // The dispatch desk has neither.
    let (code, out) = rcip(&[
        "check",
        "--strict-performance",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples-c/dispatch/catalog.json"),
    ]);
    assert_eq!(code, 0, "{out}");
}
