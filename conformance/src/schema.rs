//! The schema corpus runner: each entry's schema is compiled with
//! `rcip_schema_new` and each instance validated with `rcip_schema_validate`,
//! through the C ABI only. Output keeps the corpus layout
//! (schema-corpus/README.md) with rcip's `compile`, `valid` and `issues`.

use crate::abi::*;
use serde_json::{json, Value};
use std::ptr;

pub fn run(corpus: &Value) -> Value {
    let mut entries = Vec::new();
    for entry in corpus["entries"].as_array().into_iter().flatten() {
        let text = cstr(&entry["schema"].to_string());
        let mut schema = ptr::null_mut();
        let rc = unsafe { rcip_schema_new(text.as_ptr(), &mut schema) };
        if rc != OK {
            entries.push(json!({
                "id": entry["id"],
                "compile": "error",
                "compileMessage": last_error(),
                "tests": [],
            }));
            continue;
        }
        let mut tests = Vec::new();
        for test in entry["tests"].as_array().into_iter().flatten() {
            let data = cstr(&test["data"].to_string());
            let mut out = ptr::null_mut();
            let rc = unsafe { rcip_schema_validate(schema, data.as_ptr(), &mut out) };
            if rc != OK {
                tests.push(json!({"valid": Value::Null, "runtimeError": last_error()}));
                continue;
            }
            let text = unsafe { take(out) };
            let result: Value = crate::deep::parse(&text).unwrap_or_else(|e| {
                eprintln!("rcip-conformance: cannot read a validation result as JSON ({e}): {text}");
                std::process::exit(3)
            });
            tests.push(json!({"valid": result["valid"], "issues": result["issues"]}));
        }
        unsafe { rcip_schema_free(schema) };
        entries.push(json!({"id": entry["id"], "compile": "ok", "tests": tests}));
    }
    json!({"entries": entries})
}
