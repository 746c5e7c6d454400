//! The C functions of librcip this runner uses, declared by hand from
//! include/rcip.h (tests/bindings.rs checks them against it), and the
//! result codes, generated from it (build.rs): the runner can only do what
//! a C host can.

#![allow(non_camel_case_types, dead_code)] // the header's C names; the whole code table, generated from the header by build.rs

use std::ffi::{c_char, c_void, CStr, CString};

pub type Opaque = c_void;
pub type rcip_result = u32;

pub type FreeFn = Option<unsafe extern "C" fn(*mut c_void)>;
pub type HandlerFn = Option<unsafe extern "C" fn(*mut c_void, *mut Opaque)>;
pub type AvailabilityFn = Option<unsafe extern "C" fn(*mut c_void, *mut Opaque) -> i32>;
pub type PolicyFn = Option<unsafe extern "C" fn(*mut c_void, *mut Opaque)>;
pub type JsonFn = Option<unsafe extern "C" fn(*mut c_void, *const c_char)>;
pub type SubscriberFn = Option<unsafe extern "C" fn(*mut c_void, u64)>;
pub type ClockFn = Option<unsafe extern "C" fn(*mut c_void) -> i64>;

// Every `rcip_result` code, generated from include/rcip.h by build.rs
// (`pub const NAME: rcip_result = VALUE;` per `RCIP_RESULT_NAME`).
include!(concat!(env!("OUT_DIR"), "/results.rs"));

extern "C" {
    pub fn rcip_catalog_new(json: *const c_char, out: *mut *mut Opaque) -> rcip_result;
    pub fn rcip_catalog_free(catalog: *mut Opaque);
    pub fn rcip_runtime_builder_new(catalog: *const Opaque, out: *mut *mut Opaque) -> rcip_result;
    pub fn rcip_runtime_builder_set_confirmation_ttl_ms(builder: *mut Opaque, ttl: u64) -> rcip_result;
    pub fn rcip_runtime_builder_set_limits(
        builder: *mut Opaque,
        max_payload_len: usize,
        max_depth: usize,
    ) -> rcip_result;
    pub fn rcip_runtime_builder_set_policy(
        builder: *mut Opaque,
        cb: PolicyFn,
        ud: *mut c_void,
        free: FreeFn,
    ) -> rcip_result;
    pub fn rcip_runtime_builder_add_event_observer(
        builder: *mut Opaque,
        cb: JsonFn,
        ud: *mut c_void,
        free: FreeFn,
    ) -> rcip_result;
    pub fn rcip_runtime_builder_set_clock(
        builder: *mut Opaque,
        cb: ClockFn,
        ud: *mut c_void,
        free: FreeFn,
    ) -> rcip_result;
    pub fn rcip_runtime_builder_set_manual_timers(builder: *mut Opaque, manual: bool) -> rcip_result;
    pub fn rcip_runtime_builder_build(builder: *mut Opaque, out: *mut *mut Opaque) -> rcip_result;
    pub fn rcip_runtime_free(runtime: *mut Opaque);
    pub fn rcip_runtime_close(runtime: *const Opaque) -> rcip_result;
    pub fn rcip_runtime_client(runtime: *const Opaque) -> *const Opaque;
    pub fn rcip_runtime_host(runtime: *const Opaque) -> *const Opaque;
    pub fn rcip_runtime_run_due_timers(runtime: *const Opaque) -> rcip_result;
    pub fn rcip_runtime_stats(runtime: *const Opaque, out: *mut *mut c_char) -> rcip_result;

    pub fn rcip_host_bind(
        host: *const Opaque,
        capability_id: *const c_char,
        handler: HandlerFn,
        availability: AvailabilityFn,
        ud: *mut c_void,
        free: FreeFn,
        out: *mut *mut Opaque,
    ) -> rcip_result;
    pub fn rcip_binding_unbind(binding: *const Opaque) -> rcip_result;
    pub fn rcip_binding_free(binding: *mut Opaque);
    pub fn rcip_host_set_context(host: *const Opaque, json: *const c_char) -> rcip_result;
    pub fn rcip_host_clear_context(host: *const Opaque) -> rcip_result;
    pub fn rcip_host_refresh(host: *const Opaque) -> rcip_result;
    pub fn rcip_host_resolve_confirmation(
        host: *const Opaque,
        id: *const c_char,
        approved: bool,
        cb: JsonFn,
        ud: *mut c_void,
        free: FreeFn,
    ) -> rcip_result;

    pub fn rcip_host_carry_confirmation(
        host: *const Opaque,
        confirmation_id: *const c_char,
        out: *mut *mut c_char,
    ) -> rcip_result;
    pub fn rcip_host_resume_confirmation(
        host: *const Opaque,
        carried: *const c_char,
        approved: bool,
        input: *const c_char,
        token: *const Opaque,
        cb: JsonFn,
        ud: *mut c_void,
        free: FreeFn,
    ) -> rcip_result;

    pub fn rcip_client_snapshot(client: *const Opaque, out: *mut *const Opaque) -> rcip_result;
    pub fn rcip_snapshot_json(snapshot: *const Opaque) -> *const c_char;
    pub fn rcip_snapshot_free(snapshot: *const Opaque);
    pub fn rcip_client_list_capabilities(
        client: *const Opaque,
        filter: *const c_char,
        out: *mut *mut c_char,
    ) -> rcip_result;
    pub fn rcip_client_subscribe(
        client: *const Opaque,
        cb: SubscriberFn,
        ud: *mut c_void,
        free: FreeFn,
        out: *mut *mut Opaque,
    ) -> rcip_result;
    pub fn rcip_subscription_free(subscription: *mut Opaque);
    pub fn rcip_client_invoke(
        client: *const Opaque,
        capability_id: *const c_char,
        input: *const c_char,
        invocation_id: *const c_char,
        token: *const Opaque,
        cb: JsonFn,
        ud: *mut c_void,
        free: FreeFn,
        id_out: *mut *mut c_char,
    ) -> rcip_result;
    pub fn rcip_client_preflight(
        client: *const Opaque,
        ids: *const *const c_char,
        inputs: *const *const c_char,
        count: usize,
        token: *const Opaque,
        cb: JsonFn,
        ud: *mut c_void,
        free: FreeFn,
    ) -> rcip_result;

    pub fn rcip_invocation_id(inv: *const Opaque) -> *const c_char;
    pub fn rcip_invocation_capability_id(inv: *const Opaque) -> *const c_char;
    pub fn rcip_invocation_input(inv: *const Opaque) -> *const c_char;
    pub fn rcip_invocation_semantic_context(inv: *const Opaque) -> *const c_char;
    pub fn rcip_invocation_complete(inv: *const Opaque, output: *const c_char) -> rcip_result;
    pub fn rcip_invocation_fail(inv: *const Opaque, aborted: bool) -> rcip_result;
    pub fn rcip_invocation_free(inv: *mut Opaque);

    pub fn rcip_policy_request_context(req: *const Opaque) -> *const c_char;
    pub fn rcip_policy_request_decide(req: *const Opaque, decision: *const c_char) -> rcip_result;
    pub fn rcip_policy_request_fail(req: *const Opaque) -> rcip_result;
    pub fn rcip_policy_request_free(req: *mut Opaque);

    pub fn rcip_availability_set(
        sink: *mut Opaque,
        available: bool,
        code: *const c_char,
        reason: *const c_char,
    ) -> rcip_result;

    pub fn rcip_cancel_token_new(out: *mut *mut Opaque) -> rcip_result;
    pub fn rcip_cancel_token_cancel(token: *const Opaque) -> rcip_result;
    pub fn rcip_cancel_token_free(token: *mut Opaque);

    pub fn rcip_schema_new(json: *const c_char, out: *mut *mut Opaque) -> rcip_result;
    pub fn rcip_schema_validate(schema: *const Opaque, instance: *const c_char, out: *mut *mut c_char) -> rcip_result;
    pub fn rcip_schema_free(schema: *mut Opaque);

    pub fn rcip_string_free(s: *mut c_char);
    pub fn rcip_last_error_message() -> *const c_char;
}

/// A Rust string as a C string (scenario text holds no NUL).
pub fn cstr(s: &str) -> CString {
    CString::new(s).expect("no NUL in scenario text")
}

/// Copies a borrowed C string.
///
/// # Safety
/// `p` is NULL or a valid NUL-terminated string.
pub unsafe fn read(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    CStr::from_ptr(p).to_string_lossy().into_owned()
}

/// Copies and frees a string the library returned.
///
/// # Safety
/// `p` is NULL or a string from librcip.
pub unsafe fn take(p: *mut c_char) -> String {
    let s = read(p);
    if !p.is_null() {
        rcip_string_free(p);
    }
    s
}

/// The thread's last error message.
pub fn last_error() -> String {
    unsafe { read(rcip_last_error_message()) }
}

/// The FORMAT.md host error kind of a result code.
pub fn kind(code: rcip_result) -> &'static str {
    match code {
        INVALID_CATALOG => "INVALID_CATALOG",
        NOT_IN_CATALOG => "NOT_IN_CATALOG",
        ALREADY_BOUND => "ALREADY_BOUND",
        UNKNOWN_SCOPE => "UNKNOWN_SCOPE",
        PRIMARY_NOT_ACTIVE => "PRIMARY_NOT_ACTIVE",
        INVALID_ARGUMENT | INVALID_JSON => "INVALID_ARGUMENT",
        PREFLIGHT_BATCH_INVALID => "PREFLIGHT_BATCH_INVALID",
        CLOSED => "CLOSED",
        NOT_FOUND => "NOT_FOUND",
        _ => "UNEXPECTED_RESULT",
    }
}
