//! `rcip`: the command-line companion of librcip.
//!
//!   rcip check [--json] CATALOG.json...   report every problem of each catalog
//!   rcip version                          print the library and ABI versions
//!
//! `check` exits 0 when every catalog is valid, 1 when any problem exists,
//! 2 on usage or I/O errors: run it in CI before shipping contracts.

use rcip::catalog::Catalog;
use serde_json::json;
use std::process::ExitCode;

const USAGE: &str = "usage: rcip check [--json] CATALOG.json...\n       rcip version";

fn check(args: &[String]) -> ExitCode {
    let json_output = args.iter().any(|a| a == "--json");
    let files: Vec<&String> = args.iter().filter(|a| *a != "--json").collect();
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
        any_problem |= !problems.is_empty();
        if json_output {
            reports.push(json!({
                "file": file,
                "ok": problems.is_empty(),
                "problems": problems.iter().map(|p| p.to_json()).collect::<Vec<_>>(),
            }));
        } else if problems.is_empty() {
            println!("{file}: ok");
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
