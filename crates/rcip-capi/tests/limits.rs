//! Payload limits and bounded memory (issue 5, item 6; PIPELINE.md
//! section 8), through the C ABI in-process.
//!
//! - Input and output text is checked against the runtime's size and depth
//!   limits before it is parsed: depth 300 (and the default maximum, 1000)
//!   works by default; depth 100000 is `INPUT_INVALID` / `OUTPUT_INVALID`
//!   without building anything deep, and the runtime keeps working.
//! - `rcip_runtime_builder_set_limits` configures both limits exactly
//!   (the limit itself passes, one more byte or level does not).
//! - Every other JSON entry point (context, filter, decision, schema
//!   instance, catalog) refuses depth 100000 with an `rcip_result`.
//! - Creating and expiring 1,000,000 confirmations does not grow the heap:
//!   live bytes after 1,000,000 are at most live bytes after 10,000 plus
//!   64 KiB, with the receipts at 256.
//!
//! A counting global allocator measures live and peak heap bytes; the
//! tests of this file take one lock so that no other test allocates while
//! one measures.

use rcip_capi::binding::*;
use rcip_capi::catalog::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::policy::*;
use rcip_capi::result::*;
use rcip_capi::runtime::*;
use rcip_capi::schema::*;
use rcip_capi::string::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicI64, AtomicIsize, AtomicUsize, Ordering};
use std::sync::Mutex;

// ----- the counting allocator ------------------------------------------------

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(by: isize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout);
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = System.realloc(p, layout, new_size);
        if !q.is_null() {
            grew(new_size as isize - layout.size() as isize);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::SeqCst)
}

/// Peak live bytes above the current level while `f` runs.
fn peak_growth(f: impl FnOnce()) -> isize {
    let base = live();
    PEAK.store(base, Ordering::SeqCst);
    f();
    PEAK.load(Ordering::SeqCst) - base
}

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

// ----- a host over the C ABI ------------------------------------------------

const CATALOG: &str = r#"{"protocolVersion": "1.0",
 "application": {"id": "limits", "name": "Limits", "description": "Limit tests."},
 "scopes": [{"id": "main", "title": "Main", "description": "Main."}],
 "capabilities": [
  {"id": "deep.echo", "title": "Echo", "description": "Echoes its input, or the output it is told to give.",
   "scopeIds": [], "effect": "read",
   "inputSchema": {"type": "object", "properties": {"v": {}, "out": {"type": "string"}}, "additionalProperties": false},
   "outputSchema": {"type": "object"}},
  {"id": "deep.purge", "title": "Purge", "description": "Needs a confirmation.",
   "scopeIds": [], "effect": "destructive",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#;

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

unsafe fn take_string(p: *mut c_char) -> String {
    let s = CStr::from_ptr(p).to_string_lossy().into_owned();
    rcip_string_free(p);
    s
}

/// Output text a test wants the echo handler to give instead of its input
/// (made before a measurement, so that the handler allocates nothing).
static OUTPUT: Mutex<Option<CString>> = Mutex::new(None);

unsafe extern "C" fn echo(_: *mut c_void, inv: *mut rcip_invocation) {
    let out = OUTPUT.lock().unwrap();
    let text = match out.as_ref() {
        Some(t) => t.as_ptr(),
        None => rcip_invocation_input(inv),
    };
    assert_eq!(rcip_invocation_complete(inv, text), rcip_result::Ok);
    drop(out);
    rcip_invocation_free(inv);
}

unsafe extern "C" fn store_outcome(ud: *mut c_void, json: *const c_char) {
    let slot = &*(ud as *const Mutex<Vec<String>>);
    slot.lock()
        .unwrap()
        .push(CStr::from_ptr(json).to_string_lossy().into_owned());
}

static OUTCOMES_SEEN: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn count_outcome(_: *mut c_void, _json: *const c_char) {
    OUTCOMES_SEEN.fetch_add(1, Ordering::Relaxed);
}

static NOW: AtomicI64 = AtomicI64::new(1_000_000);
unsafe extern "C" fn manual_clock(_: *mut c_void) -> i64 {
    NOW.load(Ordering::SeqCst)
}

struct Host {
    catalog: *mut rcip_catalog,
    runtime: *mut rcip_runtime,
    binding: *mut rcip_binding,
}

impl Host {
    /// A runtime with `limits` (None: the defaults), the echo handler bound.
    fn new(limits: Option<(usize, usize)>) -> Host {
        unsafe {
            let mut catalog = ptr::null_mut();
            assert_eq!(rcip_catalog_new(c(CATALOG).as_ptr(), &mut catalog), rcip_result::Ok);
            let mut builder = ptr::null_mut();
            assert_eq!(rcip_runtime_builder_new(catalog, &mut builder), rcip_result::Ok);
            if let Some((bytes, depth)) = limits {
                assert_eq!(rcip_runtime_builder_set_limits(builder, bytes, depth), rcip_result::Ok);
            }
            let mut runtime = ptr::null_mut();
            assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
            let mut binding = ptr::null_mut();
            assert_eq!(
                rcip_host_bind(
                    rcip_runtime_host(runtime),
                    c"deep.echo".as_ptr(),
                    Some(echo),
                    None,
                    ptr::null_mut(),
                    None,
                    &mut binding
                ),
                rcip_result::Ok
            );
            Host {
                catalog,
                runtime,
                binding,
            }
        }
    }

    /// Invokes `deep.echo` with raw input bytes; returns the outcome.
    fn invoke(&self, input: &[u8]) -> String {
        self.invoke_c(&CString::new(input).unwrap())
    }

    fn invoke_c(&self, text: &CStr) -> String {
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        unsafe {
            assert_eq!(
                rcip_client_invoke(
                    rcip_runtime_client(self.runtime),
                    c"deep.echo".as_ptr(),
                    text.as_ptr(),
                    ptr::null(),
                    ptr::null(),
                    Some(store_outcome),
                    &outcomes as *const _ as *mut c_void,
                    None,
                    ptr::null_mut(),
                ),
                rcip_result::Ok
            );
        }
        let mut all = outcomes.into_inner().unwrap();
        assert_eq!(all.len(), 1, "exactly one outcome, delivered inline");
        all.pop().unwrap()
    }

    fn invoke_with_output(&self, input: &str, output: &str) -> String {
        let input = c(input);
        *OUTPUT.lock().unwrap() = Some(c(output));
        let outcome = self.invoke_c(&input);
        *OUTPUT.lock().unwrap() = None;
        outcome
    }

    fn stats(&self) -> serde_json::Value {
        unsafe {
            let mut out = ptr::null_mut();
            assert_eq!(rcip_runtime_stats(self.runtime, &mut out), rcip_result::Ok);
            serde_json::from_str(&take_string(out)).unwrap()
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        unsafe {
            rcip_binding_free(self.binding);
            rcip_runtime_free(self.runtime);
            rcip_catalog_free(self.catalog);
        }
    }
}

fn status(outcome: &str) -> String {
    let v = parse_deep(outcome);
    let s = match v["status"].as_str().unwrap() {
        "succeeded" => "succeeded".into(),
        s => format!("{s} {}", v["error"]["code"].as_str().unwrap_or("?")),
    };
    drop_deep(v);
    s
}

fn nested(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

/// `{"v": <depth - 1 nested arrays>}`: `depth` levels in all.
fn input_of_depth(depth: usize) -> String {
    format!("{{\"v\":{}}}", nested(depth - 1))
}

fn depth_of(v: &serde_json::Value) -> usize {
    // Iterative: the values of these tests are deep.
    let mut max = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            serde_json::Value::Array(items) => {
                max = max.max(d + 1);
                stack.extend(items.iter().map(|x| (x, d + 1)));
            }
            serde_json::Value::Object(m) => {
                max = max.max(d + 1);
                stack.extend(m.values().map(|x| (x, d + 1)));
            }
            _ => {}
        }
    }
    max
}

fn parse_deep(text: &str) -> serde_json::Value {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let stacker = serde_stacker::Deserializer::new(&mut de);
    <serde_json::Value as serde::Deserialize>::deserialize(stacker).unwrap()
}

/// Drops a deep value without recursing.
fn drop_deep(v: serde_json::Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(m) => stack.extend(m.into_iter().map(|(_, x)| x)),
            _ => {}
        }
    }
}

// ----- tests -------------------------------------------------------------------

#[test]
fn depth_300_and_the_default_maximum_work_by_default() {
    let _s = serial();
    let host = Host::new(None);
    for depth in [300, 1000] {
        // The input reaches the handler, and its echo comes back as the output.
        let outcome = host.invoke(input_of_depth(depth).as_bytes());
        assert_eq!(status(&outcome), "succeeded", "input depth {depth}");
        let v = parse_deep(&outcome);
        assert_eq!(depth_of(&v["output"]), depth, "the output keeps its depth");
        drop_deep(v);
    }
    // One level more than the default maximum is not a JSON value.
    assert_eq!(
        status(&host.invoke(input_of_depth(1001).as_bytes())),
        "failed INPUT_INVALID"
    );
    assert_eq!(
        status(&host.invoke_with_output("{}", &input_of_depth(1001))),
        "failed OUTPUT_INVALID"
    );
    assert_eq!(
        status(&host.invoke_with_output("{}", &input_of_depth(1000))),
        "succeeded"
    );
}

#[test]
fn depth_100000_is_refused_before_parsing_and_the_runtime_keeps_working() {
    let _s = serial();
    let host = Host::new(None);
    let deep = c(&nested(100_000));
    let deep_object = input_of_depth(100_000);
    // Parsing 100000 levels would build 100000 nested values (megabytes);
    // the check before parsing allocates next to nothing besides the
    // outcome (the text itself is 200 kB and is not copied).
    let mut outcome = String::new();
    let grown = peak_growth(|| outcome = host.invoke_c(&deep));
    assert_eq!(status(&outcome), "failed INPUT_INVALID");
    assert!(outcome.contains("nest deeper than the limit of 1000"), "{outcome}");
    eprintln!("refusing 100000-deep input: peak heap growth {grown} bytes");
    assert!(
        grown < 64 * 1024,
        "refusing the deep input grew the heap by {grown} bytes"
    );
    assert_eq!(status(&host.invoke(deep_object.as_bytes())), "failed INPUT_INVALID");
    let empty = c("{}");
    *OUTPUT.lock().unwrap() = Some(deep.clone());
    let grown = peak_growth(|| outcome = host.invoke_c(&empty));
    *OUTPUT.lock().unwrap() = None;
    assert_eq!(status(&outcome), "failed OUTPUT_INVALID");
    assert!(outcome.contains("nest deeper than the limit of 1000"), "{outcome}");
    eprintln!("refusing 100000-deep output: peak heap growth {grown} bytes");
    assert!(
        grown < 64 * 1024,
        "refusing the deep output grew the heap by {grown} bytes"
    );
    // Unbalanced: only opening brackets.
    assert_eq!(
        status(&host.invoke("[".repeat(100_000).as_bytes())),
        "failed INPUT_INVALID"
    );
    // Brackets inside a string are not nesting.
    let in_string = format!("{{\"v\":\"{}\"}}", "[".repeat(100_000));
    assert_eq!(status(&host.invoke(in_string.as_bytes())), "succeeded");
    // The runtime keeps working.
    for _ in 0..3 {
        assert_eq!(status(&host.invoke(b"{\"v\":[1,2,3]}")), "succeeded");
    }
    let stats = host.stats();
    assert_eq!(stats["pendingInvocations"], 0);
    assert_eq!(stats["reservedIds"], 0);
}

#[test]
fn configured_limits_apply_exactly_to_input_and_output() {
    let _s = serial();
    // 40 bytes, 3 levels.
    let host = Host::new(Some((40, 3)));
    let at_limit = r#"{"v":[[1]],"out":"xxxxxxxxxxxxxxxxxxxx"}"#;
    assert_eq!(at_limit.len(), 40);
    assert_eq!(status(&host.invoke(at_limit.as_bytes())), "succeeded");
    let over = r#"{"v":[[1]],"out":"xxxxxxxxxxxxxxxxxxxxx"}"#;
    assert_eq!(over.len(), 41);
    let outcome = host.invoke(over.as_bytes());
    assert_eq!(status(&outcome), "failed INPUT_INVALID");
    assert!(outcome.contains("41 bytes, above the limit of 40"), "{outcome}");
    assert_eq!(status(&host.invoke(br#"{"v":[[[1]]]}"#)), "failed INPUT_INVALID");
    // Output: the same limits.
    assert_eq!(status(&host.invoke_with_output("{}", r#"{"a":[[1]]}"#)), "succeeded");
    assert_eq!(
        status(&host.invoke_with_output("{}", r#"{"a":[[[1]]]}"#)),
        "failed OUTPUT_INVALID"
    );
    assert_eq!(
        status(&host.invoke_with_output("{}", &format!("{{\"a\":\"{}\"}}", "x".repeat(40)))),
        "failed OUTPUT_INVALID"
    );
    // Preflight applies them too.
    let reports: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let ids = [c"deep.echo".as_ptr(), c"deep.echo".as_ptr()];
    let good = c(r#"{"v":[[1]]}"#);
    let deep = c(r#"{"v":[[[1]]]}"#);
    let inputs = [good.as_ptr(), deep.as_ptr()];
    unsafe {
        assert_eq!(
            rcip_client_preflight(
                rcip_runtime_client(host.runtime),
                ids.as_ptr(),
                inputs.as_ptr(),
                2,
                ptr::null(),
                Some(store_outcome),
                &reports as *const _ as *mut c_void,
                None
            ),
            rcip_result::Ok
        );
    }
    let report: serde_json::Value = serde_json::from_str(&reports.lock().unwrap()[0]).unwrap();
    assert_eq!(report["outcomes"][0]["status"], "ready");
    assert_eq!(report["outcomes"][1]["error"]["code"], "INPUT_INVALID");
    // A zero keeps that limit as it is (here: the defaults).
    unsafe {
        let mut builder = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(host.catalog, &mut builder), rcip_result::Ok);
        assert_eq!(rcip_runtime_builder_set_limits(builder, 0, 10), rcip_result::Ok);
        assert_eq!(rcip_runtime_builder_set_limits(builder, 10, 0), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_set_limits(ptr::null_mut(), 10, 10),
            rcip_result::NullArgument
        );
        assert_eq!(
            rcip_runtime_builder_set_limits(builder, usize::MAX, usize::MAX),
            rcip_result::Ok
        );
        rcip_runtime_builder_free(builder);
    }
}

unsafe extern "C" fn decide_deep(ud: *mut c_void, req: *mut rcip_policy_request) {
    let text = &*(ud as *const CString);
    let rc = rcip_policy_request_decide(req, text.as_ptr());
    assert_eq!(rc, rcip_result::InvalidJson, "a deep decision is not JSON");
    assert_eq!(
        rcip_policy_request_decide(req, c"{\"decision\":\"allow\"}".as_ptr()),
        rcip_result::Ok
    );
    rcip_policy_request_free(req);
}

#[test]
fn every_json_entry_point_refuses_depth_100000() {
    let _s = serial();
    let deep = c(&nested(100_000));
    let deep_object = c(&format!("{{\"activeScopeIds\":{}}}", nested(99_999)));
    let host = Host::new(None);
    unsafe {
        let h = rcip_runtime_host(host.runtime);
        let cl = rcip_runtime_client(host.runtime);
        assert_eq!(rcip_host_set_context(h, deep_object.as_ptr()), rcip_result::InvalidJson);
        let mut out = ptr::null_mut();
        assert_eq!(
            rcip_client_list_capabilities(cl, deep.as_ptr(), &mut out),
            rcip_result::InvalidJson
        );
        assert!(out.is_null());
        let mut schema = ptr::null_mut();
        assert_eq!(rcip_schema_new(c"{}".as_ptr(), &mut schema), rcip_result::Ok);
        assert_eq!(
            rcip_schema_validate(schema, deep.as_ptr(), &mut out),
            rcip_result::InvalidJson
        );
        assert_eq!(
            rcip_schema_new(deep.as_ptr(), &mut ptr::null_mut()),
            rcip_result::InvalidJson
        );
        rcip_schema_free(schema);
        let mut catalog = ptr::null_mut();
        let deep_catalog =
            c(&CATALOG.replacen("\"v\": {}", &format!("\"v\": {{\"default\": {}}}", nested(100_000)), 1));
        assert_eq!(
            rcip_catalog_new(deep_catalog.as_ptr(), &mut catalog),
            rcip_result::InvalidCatalog
        );
        assert!(catalog.is_null());
    }
    // A policy decision.
    unsafe {
        let mut catalog = ptr::null_mut();
        assert_eq!(rcip_catalog_new(c(CATALOG).as_ptr(), &mut catalog), rcip_result::Ok);
        let mut builder = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog, &mut builder), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_set_policy(builder, Some(decide_deep), &deep as *const _ as *mut c_void, None),
            rcip_result::Ok
        );
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
        let mut binding = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                rcip_runtime_host(runtime),
                c"deep.echo".as_ptr(),
                Some(echo),
                None,
                ptr::null_mut(),
                None,
                &mut binding
            ),
            rcip_result::Ok
        );
        let outcomes: Mutex<Vec<String>> = Mutex::new(Vec::new());
        assert_eq!(
            rcip_client_invoke(
                rcip_runtime_client(runtime),
                c"deep.echo".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(store_outcome),
                &outcomes as *const _ as *mut c_void,
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        assert_eq!(status(&outcomes.lock().unwrap()[0]), "succeeded");
        rcip_binding_free(binding);
        rcip_runtime_free(runtime);
        rcip_catalog_free(catalog);
    }
    // Still working.
    assert_eq!(status(&host.invoke(b"{}")), "succeeded");
}

/// Opens `n` confirmations (batches of `batch`) and expires each batch by
/// moving the manual clock past the TTL and running due timers.
fn open_and_expire(runtime: *mut rcip_runtime, n: usize, batch: usize) {
    // Safety: the caller's runtime (NULL gives NULL).
    let client = unsafe { rcip_runtime_client(runtime) };
    let mut done = 0;
    while done < n {
        let k = batch.min(n - done);
        for _ in 0..k {
            unsafe {
                assert_eq!(
                    rcip_client_invoke(
                        client,
                        c"deep.purge".as_ptr(),
                        c"{}".as_ptr(),
                        ptr::null(),
                        ptr::null(),
                        Some(count_outcome),
                        ptr::null_mut(),
                        None,
                        ptr::null_mut()
                    ),
                    rcip_result::Ok
                );
            }
        }
        NOW.fetch_add(1_000, Ordering::SeqCst);
        unsafe {
            assert_eq!(rcip_runtime_run_due_timers(runtime), rcip_result::Ok);
        }
        done += k;
    }
}

#[test]
fn a_million_expired_confirmations_do_not_grow_the_heap() {
    let _s = serial();
    let n: usize = std::env::var("RCIP_LIMITS_CONFIRMATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    unsafe {
        let mut catalog = ptr::null_mut();
        assert_eq!(rcip_catalog_new(c(CATALOG).as_ptr(), &mut catalog), rcip_result::Ok);
        let mut builder = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog, &mut builder), rcip_result::Ok);
        assert_eq!(rcip_runtime_builder_set_manual_timers(builder, true), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_set_confirmation_ttl_ms(builder, 1_000),
            rcip_result::Ok
        );
        assert_eq!(
            rcip_runtime_builder_set_clock(builder, Some(manual_clock), ptr::null_mut(), None),
            rcip_result::Ok
        );
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(builder, &mut runtime), rcip_result::Ok);
        let mut binding = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                rcip_runtime_host(runtime),
                c"deep.purge".as_ptr(),
                Some(echo),
                None,
                ptr::null_mut(),
                None,
                &mut binding
            ),
            rcip_result::Ok
        );
        let stats = |runtime: *mut rcip_runtime| -> serde_json::Value {
            let mut out = ptr::null_mut();
            assert_eq!(rcip_runtime_stats(runtime, &mut out), rcip_result::Ok);
            serde_json::from_str(&take_string(out)).unwrap()
        };
        // 100 pending at a time. The runtime's tables are sized by the most
        // confirmations pending at once, not by how many there were: with
        // 1,000 pending at a time a hash table doubles once (about +400 kB,
        // tombstones) somewhere after 30,000 and stays there. What this
        // test looks for is memory kept per confirmation.
        const BATCH: usize = 100;
        OUTCOMES_SEEN.store(0, Ordering::SeqCst);
        open_and_expire(runtime, 10_000, BATCH);
        let after_10k = live();
        let s = stats(runtime);
        assert_eq!(s["receipts"], 256);
        assert_eq!(s["pendingConfirmations"], 0);
        open_and_expire(runtime, n - 10_000, BATCH);
        let after_all = live();
        let s = stats(runtime);
        assert_eq!(
            OUTCOMES_SEEN.load(Ordering::SeqCst),
            n,
            "one confirmation_required outcome each"
        );
        assert_eq!(s["receipts"], 256);
        assert_eq!(s["pendingConfirmations"], 0);
        assert_eq!(s["reservedIds"], 0);
        eprintln!(
            "live heap bytes: {after_10k} after 10,000 confirmations, {after_all} after {n} ({:+})",
            after_all - after_10k
        );
        assert!(
            after_all <= after_10k + 64 * 1024,
            "live heap grew from {after_10k} to {after_all} bytes between 10,000 and {n} expired confirmations"
        );
        rcip_binding_free(binding);
        rcip_runtime_free(runtime);
        rcip_catalog_free(catalog);
    }
}
