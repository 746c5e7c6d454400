//! Writes the results of `rcip::schema` on a schema corpus file (the shared
//! Ajv corpus layout) for `compare_schema.py`:
//! `cargo run --example schema_corpus_dump -- CORPUS.json RESULTS.json`.
//! With `--trace`, prints each entry id before running it.
use rcip::json::{parse_str, Limits};
use serde_json::Value;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let trace = args.iter().any(|a| a == "--trace");
    let files: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let text = std::fs::read_to_string(files[0]).expect("corpus file");
    let corpus = parse_str(&text, &Limits::UNLIMITED).expect("corpus is JSON");
    if trace {
        for e in corpus["entries"].as_array().unwrap() {
            eprintln!("{}", e["id"]);
            let one = serde_json::json!({"entries": [e]});
            rcip::schema::corpus_results(&one);
        }
    }
    let results: Value = rcip::schema::corpus_results(&corpus);
    std::fs::write(files[1], serde_json::to_string_pretty(&results).unwrap()).unwrap();
}
