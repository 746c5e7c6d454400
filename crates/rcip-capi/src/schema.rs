//! Standalone strict JSON Schema validation, as the runtime does it.

use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, out_arg, FfiError};
use super::handle::{free_owned, handle_kind, into_owned, owned_arg};
use super::result::rcip_result;
use super::string::into_c_string;
use rcip::schema::Schema;
use serde_json::{json, Value};
use std::ffi::c_char;

/// A compiled schema (strict JSON Schema 2020-12, as capability contracts
/// are compiled).
///
/// Ownership: owned by the caller; free it with `rcip_schema_free`.
/// Thread safety: shared (immutable; any thread).
/// Functions: `rcip_schema_new`, `rcip_schema_validate`, `rcip_schema_free`.
pub struct rcip_schema {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_schema => Schema);

/// Compiles a schema the way the catalog compiles capability schemas (Ajv 8
/// `Ajv2020` with `strict: true`: unknown keywords, `format`, references
/// leaving the document and the other strict rules are refused).
///
/// Shape: `schema_json` is a JSON Schema (an object or a boolean).
/// Ownership: `schema_json` is borrowed; `*schema_out` is new (free it with
/// `rcip_schema_free`); NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_JSON` (not
/// JSON, or not UTF-8), `RCIP_RESULT_INVALID_ARGUMENT` (the schema does
/// not compile, `[]` for instance; the
/// message names the JSON pointer and the rule).
/// Thread safety: any thread.
/// Rule: seed, "JSON Schema support".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_schema_new(schema_json: *const c_char, schema_out: *mut *mut rcip_schema) -> rcip_result {
    ffi_guard!({
        let out = out_arg(schema_out, "schema_out")?;
        *out = std::ptr::null_mut();
        let text = bytes_arg(schema_json, "schema_json")?;
        let value = rcip::json::parse_bytes(
            text,
            &rcip::json::Limits {
                max_bytes: usize::MAX,
                max_depth: rcip::catalog::CATALOG_MAX_DEPTH,
            },
        )
        .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("schema_json: {e}")))?;
        let schema = Schema::compile(&value).map_err(|errors| {
            let list: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            FfiError::new(
                rcip_result::InvalidArgument,
                format!("the schema does not compile: {}", list.join("; ")),
            )
        })?;
        *out = into_owned::<rcip_schema>(schema);
        Ok(())
    })
}

/// Validates an instance.
///
/// Shape: `instance_json` is JSON text (numbers read as doubles, as the
/// reference does); `*result_out` is `{"valid": bool, "issues":
/// [{"instancePath", "keyword", "message"}]}` (all issues, Ajv's
/// `allErrors` semantics).
/// Ownership: `instance_json` is borrowed; `*result_out` is new (free it
/// with `rcip_string_free`); NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_JSON` (not a
/// JSON value: not UTF-8, not JSON, or beyond the default limits of 8 MiB
/// and depth 1000).
/// Thread safety: any thread.
/// Rule: JSON Schema 2020-12 as Ajv 8 validates it in strict mode with
/// `allErrors` (the schema corpus of tests/schema_corpus.rs;
/// docs/SCHEMA-DISAGREEMENTS.md lists where it differs).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_schema_validate(
    schema: *const rcip_schema,
    instance_json: *const c_char,
    result_out: *mut *mut c_char,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(result_out, "result_out")?;
        *out = std::ptr::null_mut();
        let schema = owned_arg(schema, "schema")?;
        let text = bytes_arg(instance_json, "instance_json")?;
        let value = rcip::json::parse_bytes(text, &rcip::json::Limits::default())
            .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("instance_json: {e}")))?;
        let issues = schema.validate(&value);
        let result = json!({
            "valid": issues.is_empty(),
            "issues": issues.iter().map(|i| json!({"instancePath": i.instance_path, "keyword": i.keyword, "message": i.message})).collect::<Vec<Value>>(),
        });
        *out = into_c_string(&result.to_string());
        Ok(())
    })
}

/// Frees a schema.
///
/// Ownership: consumes `schema`. NULL does nothing; freeing twice is
/// undefined.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_schema_free(schema: *mut rcip_schema) {
    ffi_guard_or!((), {
        free_owned(schema);
    })
}
