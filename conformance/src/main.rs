//! rcip-conformance: drives librcip through its C ABI only.
//!
//!   rcip-conformance SCENARIO.json     print the scenario's transcript (FORMAT.md)
//!   rcip-conformance check DIR|FILE... run every scenario, compare with its
//!                                      expected transcript, print failures and
//!                                      "N passed, M failed"; exit 1 on any failure
//!   rcip-conformance schema CORPUS.json compile each corpus schema and validate
//!                                      its instances through rcip_schema_*,
//!                                      printing the corpus layout with rcip's
//!                                      results (for compare_schema.py)

// Links the library's C functions (see Cargo.toml); nothing else of it is
// named.
use rcip_capi as _;

mod abi;
mod compare;
mod deep;
mod run;
mod schema;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn load(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    deep::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn scenario_files(args: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for a in args {
        let p = PathBuf::from(a);
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(&p)
                .map_err(|e| format!("{a}: {e}"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(p);
        }
    }
    Ok(files)
}

/// Runs each scenario in a child process (a crash fails one scenario, not
/// the run) and compares it.
fn check(args: &[String]) -> ExitCode {
    let files = match scenario_files(args) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let me = std::env::current_exe().expect("current executable");
    let (mut passed, mut failed) = (0, 0);
    for file in files {
        let problem = match Command::new(&me).arg(&file).output() {
            Err(e) => Some(format!("could not start the runner: {e}")),
            Ok(out) if !out.status.success() => Some(format!(
                "runner exited {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Ok(out) => match (deep::parse_bytes(&out.stdout), load(&file)) {
                (Ok(output), Ok(scenario)) => compare::compare(&output, &scenario),
                (Err(e), _) => Some(format!("runner printed no JSON: {e}")),
                (_, Err(e)) => Some(e),
            },
        };
        match problem {
            None => passed += 1,
            Some(p) => {
                failed += 1;
                println!("FAIL {}\n     {p}", file.display());
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs on a thread with a large stack: printing, comparing and dropping a
/// JSON value recurse once per nesting level, and a scenario may raise the
/// depth limit far above the default 1000 (`options.limits.maxDepth`).
fn main() -> ExitCode {
    std::thread::Builder::new()
        .name("rcip-conformance".into())
        .stack_size(deep::STACK_BYTES)
        .spawn(real_main)
        .expect("the runner thread starts")
        .join()
        .unwrap_or(ExitCode::from(101))
}

fn real_main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("check") if args.len() > 1 => check(&args[1..]),
        Some("schema") if args.len() == 2 => match load(Path::new(&args[1])) {
            Ok(corpus) => {
                println!("{}", schema::run(&corpus));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Some(path) if args.len() == 1 && path != "--help" => match load(Path::new(path)) {
            Ok(scenario) => {
                let out = run::run(&scenario);
                println!("{out}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!("usage: rcip-conformance SCENARIO.json | check DIR|FILE... | schema CORPUS.json");
            ExitCode::from(2)
        }
    }
}
