//! Catalogs: checked and compiled once, shared by many runtimes.

use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, out_arg, FfiError};
use super::handle::{free_owned, handle_kind, into_owned};
use super::result::rcip_result;
use super::string::into_c_string;
use rcip::catalog::Catalog;
use serde_json::Value;
use std::ffi::c_char;

/// A checked, compiled catalog (`RcipApplicationDefinition` with every input
/// and output schema compiled).
///
/// Ownership: reference-counted; free each handle once with
/// `rcip_catalog_free`. A runtime keeps its own reference, so the catalog
/// may be freed right after building runtimes from it.
/// Thread safety: shared (immutable; any thread).
/// Functions: `rcip_catalog_new`, `rcip_catalog_check`, `rcip_catalog_free`.
pub struct rcip_catalog {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_catalog => Catalog);

/// Checks and compiles a catalog.
///
/// Shape: `catalog_json` is an `RcipApplicationDefinition`:
/// `{"protocolVersion": "1.0", "application": {"id", "name",
/// "description", "version"?}, "scopes": [{"id", "title", "description",
/// "parentId"?}], "capabilities": [{"id", "title", "description",
/// "scopeIds", "effect", "inputSchema", "outputSchema", "tags"?, "usage"?:
/// {"whenToUse", "examples"?: [{"description", "input"}]}}]}`.
/// Ownership: `catalog_json` is borrowed for the call; `*catalog_out` is
/// new (free it with `rcip_catalog_free`).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_INVALID_CATALOG` for
/// anything else wrong (not UTF-8, not JSON, nesting deeper than 1000, a
/// field of the wrong type or an unknown key, `null` anywhere in the
/// structure, a protocol version other than "1.0", an identifier not
/// matching `[a-z][A-Za-z0-9]*([._-][a-z][A-Za-z0-9]*)*`, a duplicate or
/// unknown scope or capability id, a blank `whenToUse` or example
/// description, an example failing its input schema, a schema that strict
/// JSON Schema 2020-12 refuses). The message names the id, field (JSON
/// pointer) and rule of the first problem; `rcip_catalog_check` lists all.
/// On failure `*catalog_out` is NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 1; every schema compiles at load (rcip).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_catalog_new(
    catalog_json: *const c_char,
    catalog_out: *mut *mut rcip_catalog,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(catalog_out, "catalog_out")?;
        *out = std::ptr::null_mut();
        let text = bytes_arg(catalog_json, "catalog_json")?;
        let catalog =
            Catalog::from_bytes(text).map_err(|e| FfiError::new(rcip_result::InvalidCatalog, e.to_string()))?;
        *out = into_owned::<rcip_catalog>(catalog);
        Ok(())
    })
}

/// Reports every problem of a catalog at once (the linter behind
/// `rcip check`).
///
/// Shape: `*report_out` is `{"ok": bool, "problems": [{"pointer": JSON
/// pointer into the catalog, "id"?: the application, scope or capability
/// id, "rule": short rule name, "message": sentence}]}`, problems in
/// document order; `ok` is true when there are none.
/// Ownership: `catalog_json` is borrowed; `*report_out` is new (free it with
/// `rcip_string_free`).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`. A bad catalog is not an error of
/// this call: it is the report. On failure `*report_out` is NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 1.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_catalog_check(catalog_json: *const c_char, report_out: *mut *mut c_char) -> rcip_result {
    ffi_guard!({
        let out = out_arg(report_out, "report_out")?;
        *out = std::ptr::null_mut();
        let text = bytes_arg(catalog_json, "catalog_json")?;
        let problems = Catalog::check_bytes(text);
        let report = serde_json::json!({
            "ok": problems.is_empty(),
            "problems": problems.iter().map(|p| p.to_json()).collect::<Vec<Value>>(),
        });
        *out = into_c_string(&report.to_string());
        Ok(())
    })
}

/// Frees this reference to the catalog.
///
/// Ownership: consumes `catalog`. NULL does nothing; freeing twice is
/// undefined. Runtimes built from it keep their own reference.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_catalog_free(catalog: *mut rcip_catalog) {
    ffi_guard_or!((), {
        free_owned(catalog);
    })
}
