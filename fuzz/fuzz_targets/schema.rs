//! Schema compilation and validation: `rcip_schema_new` on arbitrary text,
//! then `rcip_schema_validate` of a second text. Input: schema text, a 0xFF
//! byte, instance text (no separator: the instance is the schema text
//! itself). Invariants: only the documented codes (never PANIC), out NULL
//! exactly on failure, `valid` exactly when there are no issues, every
//! issue has an instancePath (a JSON pointer), keyword and message, and
//! validating twice gives the same bytes (no hidden state).
//!
//! Schemas whose text has a repeated group with a quantifier or an
//! alternation inside (`(a+)*`, `(x|)+{5,}`) are compiled but not used to
//! validate: with such a `pattern`, the backtracking regex engine takes time
//! exponential or high-polynomial in the input, a known exposure without an
//! engine budget (docs/HARDENING.md, "Slow patterns"; regress issue #140)
//! that would otherwise end every long run on a timeout.
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use common::*;
use libfuzzer_sys::fuzz_target;
use rcip_capi::result::rcip_result;
use rcip_capi::schema::*;
use std::ptr;

fuzz_target!(|data: &[u8]| {
    let (schema_text, instance_text) = match data.iter().position(|&b| b == 0xff) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, data),
    };
    let schema_c = cbytes(schema_text);
    let instance_c = cbytes(instance_text);
    unsafe {
        let mut schema = 1 as *mut rcip_schema;
        let rc = rcip_schema_new(schema_c.as_ptr().cast(), &mut schema);
        no_panic(rc, "rcip_schema_new");
        assert!(
            matches!(
                rc,
                rcip_result::Ok | rcip_result::InvalidJson | rcip_result::InvalidArgument
            ),
            "undocumented code {rc:?}"
        );
        assert_eq!(schema.is_null(), rc != rcip_result::Ok);
        if schema.is_null() {
            return;
        }
        if ambiguous_repetition(schema_text) {
            rcip_schema_free(schema);
            return;
        }
        let mut first = None;
        for _ in 0..2 {
            let mut out = 1 as *mut std::ffi::c_char;
            let rc = rcip_schema_validate(schema, instance_c.as_ptr().cast(), &mut out);
            no_panic(rc, "rcip_schema_validate");
            assert!(
                matches!(rc, rcip_result::Ok | rcip_result::InvalidJson),
                "undocumented code {rc:?}"
            );
            assert_eq!(out.is_null(), rc != rcip_result::Ok);
            let Some(text) = take(out) else { break };
            let result = json(&text);
            let valid = result["valid"].as_bool().expect("valid");
            let issues = result["issues"].as_array().expect("issues");
            assert_eq!(valid, issues.is_empty(), "{result}");
            for i in issues {
                let p = i["instancePath"].as_str().expect("instancePath");
                assert!(p.is_empty() || p.starts_with('/'), "{i}");
                assert!(i["keyword"].as_str().is_some_and(|k| !k.is_empty()), "{i}");
                assert!(i["message"].is_string(), "{i}");
            }
            match &first {
                None => first = Some(text),
                Some(f) => assert_eq!(f, &text, "validation is deterministic"),
            }
        }
        rcip_schema_free(schema);
        let _ = ptr::null::<u8>();
    }
});

/// True when some group followed by `*`, `+` or `{` contains a quantifier
/// or an alternation: the shape of catastrophic backtracking. Read on the
/// raw text, escapes included, so it also catches some harmless patterns.
fn ambiguous_repetition(text: &[u8]) -> bool {
    (1..text.len()).any(|end| {
        if text[end - 1] != b')' || !matches!(text[end], b'*' | b'+' | b'{') {
            return false;
        }
        let mut depth = 0usize;
        for start in (0..end - 1).rev() {
            match text[start] {
                b')' => depth += 1,
                b'(' if depth == 0 => {
                    let mut inner = &text[start + 1..end - 1];
                    // `(?:`, `(?=`, `(?<name>`: the `?` is syntax.
                    if inner.first() == Some(&b'?') {
                        inner = &inner[inner.len().min(2)..];
                    }
                    return inner.iter().any(|b| matches!(b, b'*' | b'+' | b'?' | b'{' | b'|'));
                }
                b'(' => depth -= 1,
                _ => {}
            }
        }
        false
    })
}
