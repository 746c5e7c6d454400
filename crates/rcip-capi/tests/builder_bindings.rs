//! Builder bindings (**rcip**, issue 20 item 2; PIPELINE.md section 3,
//! "Builder bindings"): handlers bound on the runtime builder are there
//! from the first snapshot (revision 0), a duplicate is ALREADY_BOUND and an
//! unknown id NOT_IN_CATALOG at the bind call, the user data is released
//! exactly once, after the runtime and every invocation handed to the
//! handler are gone, and every outcome is the one binding the same handlers
//! with `rcip_host_bind` right after the build gives.

use rcip::runtime::{HostError, Invocation, RuntimeBuilder};
use rcip_capi::binding::*;
use rcip_capi::catalog::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::result::*;
use rcip_capi::runtime::*;
use rcip_capi::sink::*;
use rcip_capi::snapshot::*;
use rcip_capi::string::*;
use serde_json::{json, Value};
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const CATALOG: &str = r#"{"protocolVersion": "1.0",
 "application": {"id": "b", "name": "B", "description": "Builder bindings."},
 "scopes": [{"id": "main", "title": "Main", "description": "Main."}],
 "capabilities": [
  {"id": "items.read", "title": "Read", "description": "Reads.", "scopeIds": ["main"], "effect": "read",
   "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}, "bad": {"type": "boolean"}}, "required": ["n"],
                   "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
  {"id": "items.held", "title": "Held", "description": "Held by its handler.", "scopeIds": [], "effect": "read",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "items.gated", "title": "Gated", "description": "Has an availability check.", "scopeIds": [],
   "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "items.write", "title": "Write", "description": "Writes.", "scopeIds": [], "effect": "write",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "items.spare", "title": "Spare", "description": "Never bound.", "scopeIds": [], "effect": "read",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#;

/// Releases per user-data tag (the tag is the pointer value, 1 to 7).
static RELEASED: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];
/// Invocations the `hold` handler keeps (freed by the test).
static HELD: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Serializes the tests (they share the counters above).
static SERIAL: Mutex<()> = Mutex::new(());

fn released(tag: usize) -> usize {
    RELEASED[tag].load(Ordering::SeqCst)
}

fn reset() {
    for r in &RELEASED {
        r.store(0, Ordering::SeqCst);
    }
    HELD.lock().unwrap().clear();
}

unsafe extern "C" fn release(user_data: *mut c_void) {
    RELEASED[user_data as usize].fetch_add(1, Ordering::SeqCst);
}

/// Completes with the input, unless it has `"bad": true` (an output the
/// schema refuses).
unsafe extern "C" fn echo(_: *mut c_void, inv: *mut rcip_invocation) {
    let input = CStr::from_ptr(rcip_invocation_input(inv)).to_str().unwrap();
    if input.contains("\"bad\":true") {
        rcip_invocation_complete(inv, c"{\"n\": \"x\"}".as_ptr());
    } else {
        rcip_invocation_complete(inv, rcip_invocation_input(inv));
    }
    rcip_invocation_free(inv);
}

unsafe extern "C" fn fail(_: *mut c_void, inv: *mut rcip_invocation) {
    rcip_invocation_fail(inv, false);
    rcip_invocation_free(inv);
}

unsafe extern "C" fn hold(_: *mut c_void, inv: *mut rcip_invocation) {
    HELD.lock().unwrap().push(inv as usize);
}

/// Unavailable, with a reason.
unsafe extern "C" fn closed_gate(_: *mut c_void, sink: *mut rcip_availability_sink) -> i32 {
    rcip_availability_set(sink, false, c"GATE_CLOSED".as_ptr(), c"the gate is closed".as_ptr());
    0
}

unsafe fn catalog() -> *mut rcip_catalog {
    let text = CString::new(CATALOG).unwrap();
    let mut cat = ptr::null_mut();
    assert_eq!(rcip_catalog_new(text.as_ptr(), &mut cat), rcip_result::Ok);
    cat
}

type HandlerFn = unsafe extern "C" fn(*mut c_void, *mut rcip_invocation);
type CheckFn = unsafe extern "C" fn(*mut c_void, *mut rcip_availability_sink) -> i32;

/// The bindings both runtimes get: capability, handler, check, tag.
fn plan() -> Vec<(&'static CStr, HandlerFn, Option<CheckFn>, usize)> {
    vec![
        (c"items.read", echo as HandlerFn, None, 1),
        (c"items.held", hold as HandlerFn, None, 2),
        (c"items.gated", echo as HandlerFn, Some(closed_gate as CheckFn), 3),
        (c"items.write", fail as HandlerFn, None, 4),
    ]
}

/// A runtime with the plan bound on its builder.
unsafe fn builder_bound(cat: *const rcip_catalog) -> *mut rcip_runtime {
    let mut b = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_new(cat, &mut b), rcip_result::Ok);
    for (id, h, check, tag) in plan() {
        assert_eq!(
            rcip_runtime_builder_bind(b, id.as_ptr(), Some(h), check, tag as *mut c_void, Some(release)),
            rcip_result::Ok
        );
    }
    let mut rt = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_build(b, &mut rt), rcip_result::Ok);
    rt
}

/// A runtime with the plan bound by `rcip_host_bind` right after the build.
unsafe fn host_bound(cat: *const rcip_catalog) -> (*mut rcip_runtime, Vec<*mut rcip_binding>) {
    let mut b = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_new(cat, &mut b), rcip_result::Ok);
    let mut rt = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_build(b, &mut rt), rcip_result::Ok);
    let host = rcip_runtime_host(rt);
    let mut bindings = Vec::new();
    for (id, h, check, tag) in plan() {
        let mut binding = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                host,
                id.as_ptr(),
                Some(h),
                check,
                tag as *mut c_void,
                Some(release),
                &mut binding
            ),
            rcip_result::Ok
        );
        bindings.push(binding);
    }
    (rt, bindings)
}

unsafe fn take(p: *mut c_char) -> String {
    let s = CStr::from_ptr(p).to_str().unwrap().to_string();
    rcip_string_free(p);
    s
}

unsafe fn stats(rt: *const rcip_runtime) -> Value {
    let mut out = ptr::null_mut();
    assert_eq!(rcip_runtime_stats(rt, &mut out), rcip_result::Ok);
    serde_json::from_str(&take(out)).unwrap()
}

unsafe fn snapshot(rt: *const rcip_runtime) -> Value {
    let mut s = ptr::null();
    assert_eq!(rcip_client_snapshot(rcip_runtime_client(rt), &mut s), rcip_result::Ok);
    let v: Value = serde_json::from_str(CStr::from_ptr(rcip_snapshot_json(s)).to_str().unwrap()).unwrap();
    rcip_snapshot_free(s);
    v
}

unsafe fn invoke(rt: *const rcip_runtime, capability: &str, input: &str, id: &str) -> String {
    let (capability, input, id) = (
        CString::new(capability).unwrap(),
        CString::new(input).unwrap(),
        CString::new(id).unwrap(),
    );
    let mut out = ptr::null_mut();
    assert_eq!(
        rcip_client_invoke_blocking(
            rcip_runtime_client(rt),
            capability.as_ptr(),
            input.as_ptr(),
            id.as_ptr(),
            ptr::null(),
            &mut out
        ),
        rcip_result::Ok
    );
    take(out)
}

/// Outcomes of one invocation of every kind (fixed ids: the two runtimes'
/// texts must be equal byte for byte).
unsafe fn outcomes(rt: *const rcip_runtime) -> Vec<String> {
    vec![
        invoke(rt, "items.read", r#"{"n": 3}"#, "i1"),
        invoke(rt, "items.read", r#"{"n": "three"}"#, "i2"),
        invoke(rt, "items.read", r#"{"n": 1, "bad": true}"#, "i3"),
        invoke(rt, "items.gated", "{}", "i4"),
        invoke(rt, "items.write", "{}", "i5"),
        invoke(rt, "items.spare", "{}", "i6"),
        invoke(rt, "items.nowhere", "{}", "i7"),
    ]
}

#[test]
fn bound_from_the_first_snapshot_with_the_outcomes_of_host_bindings() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    reset();
    unsafe {
        let cat = catalog();
        let built = builder_bound(cat);
        let (hosted, bindings) = host_bound(cat);

        // Revision 0 already has the four bindings (availability sampled by
        // the build); binding after the build took revisions 1 to 4.
        let s = stats(built);
        assert_eq!(
            (s["revision"].as_u64(), s["bindings"].as_u64()),
            (Some(0), Some(4)),
            "{s}"
        );
        assert_eq!(stats(hosted)["revision"], 4);
        let (mut a, mut b) = (snapshot(built), snapshot(hosted));
        assert_eq!(a["revision"], 0);
        let gated = &a["capabilities"][2];
        assert_eq!(gated["bound"], true);
        assert_eq!(gated["available"], false);
        assert_eq!(gated["availability"]["reasonCode"], "GATE_CLOSED");
        assert_eq!(a["capabilities"][4]["bound"], false);
        a["revision"] = json!(null);
        b["revision"] = json!(null);
        assert_eq!(a, b, "the same snapshot, but for the revision");

        // The same outcomes, byte for byte.
        let (x, y) = (outcomes(built), outcomes(hosted));
        assert_eq!(x, y);
        assert!(x[0].contains("\"status\":\"succeeded\""), "{}", x[0]);
        assert!(x[1].contains("INPUT_INVALID"), "{}", x[1]);
        assert!(x[2].contains("OUTPUT_INVALID"), "{}", x[2]);
        assert!(
            x[3].contains("CAPABILITY_UNAVAILABLE") && x[3].contains("the gate is closed"),
            "{}",
            x[3]
        );
        assert!(x[4].contains("POLICY_DENIED"), "{}", x[4]);
        assert!(x[5].contains("CAPABILITY_UNBOUND"), "{}", x[5]);
        assert!(x[6].contains("CAPABILITY_NOT_FOUND"), "{}", x[6]);
        // A successful invocation refreshed both: revisions 1 and 5.
        assert_eq!(stats(built)["revision"], 1);
        assert_eq!(stats(hosted)["revision"], 5);

        // The builder's bindings cannot be unbound, but a host binding of
        // another capability comes and goes as usual; binding one of them
        // again is ALREADY_BOUND.
        let host = rcip_runtime_host(built);
        let mut spare = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                host,
                c"items.spare".as_ptr(),
                Some(echo),
                None,
                ptr::null_mut(),
                None,
                &mut spare
            ),
            rcip_result::Ok
        );
        rcip_binding_free(spare);
        let mut again = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                host,
                c"items.read".as_ptr(),
                Some(echo),
                None,
                ptr::null_mut(),
                None,
                &mut again
            ),
            rcip_result::AlreadyBound
        );
        assert!(again.is_null());

        rcip_runtime_free(built);
        rcip_runtime_free(hosted);
        for binding in bindings {
            rcip_binding_free(binding);
        }
        // Every user data twice (once per runtime), the held invocation
        // aside: none was held (no invocation of items.held).
        for tag in 1..=4 {
            assert_eq!(released(tag), 2, "tag {tag}");
        }
        rcip_catalog_free(cat);
    }
}

#[test]
fn a_duplicate_or_an_unknown_id_is_refused_by_the_bind_call() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    reset();
    unsafe {
        let cat = catalog();
        let mut b = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(cat, &mut b), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_bind(
                b,
                c"items.read".as_ptr(),
                Some(echo),
                None,
                ptr::without_provenance_mut(1),
                Some(release)
            ),
            rcip_result::Ok
        );
        // A duplicate, with or without an availability callback.
        assert_eq!(
            rcip_runtime_builder_bind(
                b,
                c"items.read".as_ptr(),
                Some(echo),
                None,
                2 as *mut c_void,
                Some(release)
            ),
            rcip_result::AlreadyBound
        );
        let message = CStr::from_ptr(rcip_last_error_message()).to_str().unwrap();
        assert!(message.contains("items.read"), "{message}");
        assert_eq!(
            rcip_runtime_builder_bind(
                b,
                c"items.read".as_ptr(),
                Some(echo),
                Some(closed_gate),
                3 as *mut c_void,
                Some(release)
            ),
            rcip_result::AlreadyBound
        );
        // The error rcip_host_bind gives for an unknown id.
        for check in [None, Some(closed_gate as CheckFn)] {
            assert_eq!(
                rcip_runtime_builder_bind(
                    b,
                    c"items.nowhere".as_ptr(),
                    Some(echo),
                    check,
                    4 as *mut c_void,
                    Some(release)
                ),
                rcip_result::NotInCatalog
            );
        }
        // Refused registrations never release the user data.
        for tag in 2..=4 {
            assert_eq!(released(tag), 0);
        }
        // The build is not affected: one binding.
        let mut rt = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(b, &mut rt), rcip_result::Ok);
        assert_eq!(stats(rt)["bindings"], 1);
        assert!(invoke(rt, "items.read", r#"{"n": 1}"#, "x").contains("succeeded"));
        // A built builder's handle is gone; a bind on a live runtime is the
        // host's.
        let host = rcip_runtime_host(rt);
        let mut binding = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                host,
                c"items.nowhere".as_ptr(),
                Some(echo),
                None,
                ptr::null_mut(),
                None,
                &mut binding
            ),
            rcip_result::NotInCatalog
        );
        assert_eq!(released(1), 0);
        rcip_runtime_free(rt);
        assert_eq!(released(1), 1);
        for tag in 2..=4 {
            assert_eq!(released(tag), 0);
        }
        rcip_catalog_free(cat);
    }
}

#[test]
fn user_data_outlives_the_runtime_until_the_held_invocations_are_freed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    reset();
    unsafe {
        let cat = catalog();
        let rt = builder_bound(cat);
        // Two invocations held by their handler.
        let client = rcip_runtime_client(rt);
        for id in [c"h1", c"h2"] {
            assert_eq!(
                rcip_client_invoke(
                    client,
                    c"items.held".as_ptr(),
                    c"{}".as_ptr(),
                    id.as_ptr(),
                    ptr::null(),
                    Some(noop_outcome),
                    ptr::null_mut(),
                    None,
                    ptr::null_mut()
                ),
                rcip_result::Ok
            );
        }
        assert_eq!(HELD.lock().unwrap().len(), 2);
        rcip_runtime_free(rt);
        // The gated binding has a record of its own: released with the
        // runtime. The others share one record with the held handler's:
        // kept while an invocation handed to it lives.
        assert_eq!(released(3), 1);
        for tag in [1, 2, 4] {
            assert_eq!(released(tag), 0, "tag {tag}");
        }
        let held: Vec<usize> = HELD.lock().unwrap().drain(..).collect();
        // A late completion is accepted and ignored.
        assert_eq!(
            rcip_invocation_complete(held[0] as *mut rcip_invocation, c"{}".as_ptr()),
            rcip_result::Ok
        );
        rcip_invocation_free(held[0] as *mut rcip_invocation);
        for tag in [1, 2, 4] {
            assert_eq!(released(tag), 0, "tag {tag}");
        }
        rcip_invocation_free(held[1] as *mut rcip_invocation);
        for tag in 1..=4 {
            assert_eq!(released(tag), 1, "tag {tag}");
        }
        rcip_catalog_free(cat);
    }
}

unsafe extern "C" fn noop_outcome(_: *mut c_void, _: *const c_char) {}

#[test]
fn a_builder_freed_unbuilt_releases_its_bindings_user_data() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    reset();
    unsafe {
        let cat = catalog();
        let mut b = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(cat, &mut b), rcip_result::Ok);
        for (id, h, check, tag) in plan() {
            assert_eq!(
                rcip_runtime_builder_bind(b, id.as_ptr(), Some(h), check, tag as *mut c_void, Some(release)),
                rcip_result::Ok
            );
        }
        for tag in 1..=4 {
            assert_eq!(released(tag), 0);
        }
        rcip_runtime_builder_free(b);
        for tag in 1..=4 {
            assert_eq!(released(tag), 1, "tag {tag}");
        }
        // A build that fails (no out-parameter) frees the builder too.
        let mut b = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(cat, &mut b), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_bind(
                b,
                c"items.read".as_ptr(),
                Some(echo),
                None,
                5 as *mut c_void,
                Some(release)
            ),
            rcip_result::Ok
        );
        assert_eq!(
            rcip_runtime_builder_build(b, ptr::null_mut()),
            rcip_result::NullArgument
        );
        assert_eq!(released(5), 1);
        rcip_catalog_free(cat);
    }
}

#[test]
fn the_rust_builder_binds_with_the_same_rules() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let catalog = rcip::catalog::Catalog::from_bytes(CATALOG.as_bytes()).unwrap();
    let handler = Arc::new(|inv: Invocation| {
        let n = inv.input()["n"].clone();
        inv.complete(json!({ "n": n })).unwrap();
    });
    let mut builder = RuntimeBuilder::new(&catalog);
    builder.bind("items.read", handler.clone(), None).unwrap();
    assert_eq!(
        builder.bind("items.read", handler.clone(), None).err(),
        Some(HostError::AlreadyBound("items.read".into()))
    );
    assert_eq!(
        builder.bind("items.nowhere", handler.clone(), None).err(),
        Some(HostError::NotInCatalog("items.nowhere".into()))
    );
    // One reference in the builder (the refused binds dropped theirs).
    assert_eq!(Arc::strong_count(&handler), 2);
    let runtime = builder.build();
    let snapshot = runtime.client().snapshot().unwrap();
    assert_eq!(snapshot.revision(), 0);
    let out = runtime
        .client()
        .invoke_blocking("items.read", br#"{"n": 7}"#, Some("r1"), None)
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"status": "succeeded", "invocationId": "r1", "capabilityId": "items.read", "output": {"n": 7}})
    );
    drop(runtime);
    assert_eq!(Arc::strong_count(&handler), 1, "the runtime let its handler go");
}
