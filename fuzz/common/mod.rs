//! Helpers shared by the fuzz targets: C strings from fuzz bytes, owned
//! strings back from rcip, and a small catalog with one capability per
//! effect. Every target drives the C ABI (the product's real boundary).
#![allow(dead_code)] // each target includes this module and uses only some of its helpers

use rcip_capi::catalog::*;
use rcip_capi::result::rcip_result;
use rcip_capi::string::rcip_string_free;
use serde_json::Value;
use std::ffi::{c_char, CStr};
use std::sync::OnceLock;

/// Fuzz bytes as a NUL-terminated C string: cut at the first NUL (a C
/// caller cannot pass one), then terminated.
pub fn cbytes(data: &[u8]) -> Vec<u8> {
    let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let mut v = data[..end].to_vec();
    v.push(0);
    v
}

pub fn cstr(s: &str) -> Vec<u8> {
    cbytes(s.as_bytes())
}

/// Takes (and frees) a string rcip returned through a `char **`.
///
/// # Safety
/// `p` is NULL or a string from rcip not yet freed.
pub unsafe fn take(p: *mut c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    let s = CStr::from_ptr(p).to_str().expect("rcip returns UTF-8").to_string();
    rcip_string_free(p);
    Some(s)
}

/// Reads a borrowed C string.
///
/// # Safety
/// `p` is NULL or a live NUL-terminated string.
pub unsafe fn borrowed(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(CStr::from_ptr(p).to_str().expect("rcip lends UTF-8").to_string())
    }
}

/// JSON text rcip produced: must parse.
pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("rcip produced text that is not JSON ({e}): {text}"))
}

/// Fails on a caught panic: the guard turned a library bug into PANIC.
pub fn no_panic(rc: rcip_result, what: &str) {
    assert_ne!(
        rc,
        rcip_result::Panic,
        "{what} panicked inside rcip: {:?}",
        last_error()
    );
}

pub fn last_error() -> Option<String> {
    unsafe { borrowed(rcip_capi::result::rcip_last_error_message()) }
}

/// One capability per effect, scopes with a parent, schemas that exercise
/// validation (required, enums, nested objects, arrays, numbers).
pub const CATALOG: &str = r#"{"protocolVersion": "1.0",
 "application": {"id": "fuzz", "name": "Fuzz", "description": "Fuzzing host."},
 "scopes": [
  {"id": "main", "title": "Main", "description": "Main view."},
  {"id": "main.detail", "title": "Detail", "description": "Detail view.", "parentId": "main"},
  {"id": "other", "title": "Other", "description": "Other view."}],
 "capabilities": [
  {"id": "items.list", "title": "List", "description": "Lists items.", "scopeIds": ["main"], "effect": "read",
   "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 100},
     "q": {"type": "string", "maxLength": 20, "pattern": "^[a-z]*$"}, "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}},
     "additionalProperties": false},
   "outputSchema": {"type": "object"}},
  {"id": "items.write", "title": "Write", "description": "Writes an item.", "scopeIds": ["main.detail"], "effect": "write",
   "inputSchema": {"type": "object", "properties": {"id": {"type": "string", "minLength": 1}, "value": {"type": "number"},
     "mode": {"enum": ["a", "b", null]}, "nested": {"type": "object", "properties": {"x": {"const": 1}}, "required": ["x"]}},
     "required": ["id"]},
   "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}},
  {"id": "items.purge", "title": "Purge", "description": "Deletes items.", "scopeIds": [], "effect": "destructive",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "mail.send", "title": "Send", "description": "Sends mail.", "scopeIds": ["other", "main"], "effect": "external",
   "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"], "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"sent": {"type": "integer"}}}},
  {"id": "misc.any", "title": "Any", "description": "Takes anything.", "scopeIds": ["other"], "effect": "read",
   "inputSchema": true, "outputSchema": true}]}"#;

pub const CAPABILITIES: [&str; 5] = ["items.list", "items.write", "items.purge", "mail.send", "misc.any"];

/// The catalog, compiled once per process (shared by every runtime).
pub fn catalog() -> *const rcip_catalog {
    static CAT: OnceLock<usize> = OnceLock::new();
    *CAT.get_or_init(|| {
        let mut c = std::ptr::null_mut();
        let text = cstr(CATALOG);
        assert_eq!(
            unsafe { rcip_catalog_new(text.as_ptr().cast(), &mut c) },
            rcip_result::Ok,
            "{:?}",
            last_error()
        );
        c as usize
    }) as *const rcip_catalog
}
