//! `rcip`: the command-line companion of librcip.
//!
//!   rcip check [--json] [--strict-performance] CATALOG.json...
//!                       report every problem of each catalog, and warn about
//!                       schemas whose validation can be slow
//!   rcip version        print the library and ABI versions
//!
//! `check` exits 0 when every catalog is valid, 1 when any problem exists,
//! 2 on usage or I/O errors: run it in CI before shipping contracts.
//! Warnings (a pattern that needs the backtracking engine, references that
//! fan out; each with its pointer) do not fail the check unless
//! `--strict-performance` is given. With `--json`, each report also has
//! `"warnings": [{"pointer", "capabilityId", "rule", "message"}]`.

use rcip::catalog::Catalog;
use serde_json::json;
use std::process::ExitCode;

const USAGE: &str = "usage: rcip check [--json] [--strict-performance] CATALOG.json...\n       rcip version";

/// A performance warning of one capability schema of a valid catalog.
struct Warning {
    pointer: String,
    capability: String,
    rule: &'static str,
    message: String,
}

/// The performance warnings of a catalog's schemas (none when it does not
/// compile: its problems come first).
fn warnings(text: &[u8]) -> Vec<Warning> {
    let Ok(catalog) = Catalog::from_bytes(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, cap) in catalog.capabilities().iter().enumerate() {
        for (key, schema) in [("inputSchema", &cap.input), ("outputSchema", &cap.output)] {
            for w in schema.performance_warnings() {
                out.push(Warning {
                    pointer: format!("/capabilities/{i}/{key}{}", w.pointer),
                    capability: cap.id.clone(),
                    rule: w.rule,
                    message: w.message.clone(),
                });
            }
        }
    }
    out
}

fn check(args: &[String]) -> ExitCode {
    let json_output = args.iter().any(|a| a == "--json");
    let strict_performance = args.iter().any(|a| a == "--strict-performance");
    let files: Vec<&String> = args
        .iter()
        .filter(|a| *a != "--json" && *a != "--strict-performance")
        .collect();
    if files.is_empty() || files.iter().any(|f| f.starts_with("--")) {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let mut any_problem = false;
    let mut reports = Vec::new();
    for file in files {
        let text = match std::fs::read(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("rcip check: {file}: {e}");
                return ExitCode::from(2);
            }
        };
        let problems = Catalog::check_bytes(&text);
        let warnings = if problems.is_empty() {
            warnings(&text)
        } else {
            Vec::new()
        };
        any_problem |= !problems.is_empty() || (strict_performance && !warnings.is_empty());
        if json_output {
            reports.push(json!({
                "file": file,
                "ok": problems.is_empty(),
                "problems": problems.iter().map(|p| p.to_json()).collect::<Vec<_>>(),
                "warnings": warnings.iter().map(|w| json!({
                    "pointer": w.pointer,
                    "capabilityId": w.capability,
                    "rule": w.rule,
                    "message": w.message,
                })).collect::<Vec<_>>(),
            }));
        } else if problems.is_empty() {
            for w in &warnings {
                println!(
                    "{file}: warning: {} at \"{}\" ({}): {}",
                    w.rule, w.pointer, w.capability, w.message
                );
            }
            match (warnings.len(), strict_performance) {
                (0, _) => println!("{file}: ok"),
                (n, false) => println!("{file}: ok, {n} warning{}", if n == 1 { "" } else { "s" }),
                (n, true) => println!(
                    "{file}: {n} warning{} (failing: --strict-performance)",
                    if n == 1 { "" } else { "s" }
                ),
            }
        } else {
            for p in &problems {
                println!("{file}: {p}");
            }
            let n = problems.len();
            println!("{file}: {n} problem{}", if n == 1 { "" } else { "s" });
        }
    }
    if json_output {
        let out = if reports.len() == 1 {
            reports.remove(0)
        } else {
            json!(reports)
        };
        println!("{out}");
    }
    if any_problem {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("check") => check(&args[1..]),
        Some("version") => {
            println!("rcip {} (ABI {})", env!("CARGO_PKG_VERSION"), rcip::abi_version());
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
