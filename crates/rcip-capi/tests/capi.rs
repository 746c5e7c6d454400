//! Issue 18, items 1 to 3: a C host without a JSON parser of its own.
//! Policy requests read and answered through plain calls (and the default
//! policy's decision on request), records read through accessors, and
//! waitable outcomes (pending handles) with their context rules.

use rcip_capi::binding::*;
use rcip_capi::catalog::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::pending::*;
use rcip_capi::policy::*;
use rcip_capi::record::*;
use rcip_capi::result::*;
use rcip_capi::runtime::*;
use rcip_capi::string::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const CATALOG: &str = r#"{"protocolVersion": "1.0",
 "application": {"id": "clinic", "name": "Clinic", "description": "Test."},
 "scopes": [{"id": "ward", "title": "Ward", "description": "A ward."},
            {"id": "bed", "title": "Bed", "description": "A bed.", "parentId": "ward"}],
 "capabilities": [
  {"id": "patients.list", "title": "List", "description": "Lists patients.", "scopeIds": ["ward"], "effect": "read",
   "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": false},
   "outputSchema": {"type": "object"}},
  {"id": "patients.edit", "title": "Edit", "description": "Edits.", "scopeIds": [], "effect": "write",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "patients.notify", "title": "Notify", "description": "Sends a message.", "scopeIds": [], "effect": "external",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "patients.discharge", "title": "Discharge", "description": "Discharges a patient.", "scopeIds": ["bed"],
   "effect": "destructive", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "patients.scan", "title": "Scan", "description": "Held by its handler.", "scopeIds": [], "effect": "read",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#;

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

unsafe fn text(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| CStr::from_ptr(p).to_str().unwrap().to_string())
}

unsafe fn take(p: *mut c_char) -> String {
    let s = CStr::from_ptr(p).to_str().unwrap().to_string();
    rcip_string_free(p);
    s
}

unsafe extern "C" fn complete(_: *mut c_void, inv: *mut rcip_invocation) {
    assert_eq!(
        rcip_invocation_complete(inv, c"{\"ok\": true}".as_ptr()),
        rcip_result::Ok
    );
    rcip_invocation_free(inv);
}

unsafe extern "C" fn hold(ud: *mut c_void, inv: *mut rcip_invocation) {
    (*(ud as *const Mutex<Vec<usize>>)).lock().unwrap().push(inv as usize);
}

struct Rt {
    catalog: *mut rcip_catalog,
    runtime: *mut rcip_runtime,
    bindings: Vec<*mut rcip_binding>,
    held: Box<Mutex<Vec<usize>>>,
}

// Safety: the test hands the handles between threads deliberately; every
// rcip handle used here is documented as synchronized.
unsafe impl Send for Rt {}
unsafe impl Sync for Rt {}

impl Rt {
    unsafe fn new(configure: impl FnOnce(*mut rcip_runtime_builder)) -> Rt {
        let mut cat = ptr::null_mut();
        assert_eq!(rcip_catalog_new(c(CATALOG).as_ptr(), &mut cat), rcip_result::Ok);
        let mut b = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(cat, &mut b), rcip_result::Ok);
        configure(b);
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(b, &mut runtime), rcip_result::Ok);
        let mut rt = Rt {
            catalog: cat,
            runtime,
            bindings: Vec::new(),
            held: Box::new(Mutex::new(Vec::new())),
        };
        let ud = &*rt.held as *const _ as *mut c_void;
        for cap in [
            "patients.list",
            "patients.edit",
            "patients.notify",
            "patients.discharge",
        ] {
            let mut out = ptr::null_mut();
            let cap = c(cap);
            assert_eq!(
                rcip_host_bind(
                    rt.host(),
                    cap.as_ptr(),
                    Some(complete),
                    None,
                    ptr::null_mut(),
                    None,
                    &mut out
                ),
                rcip_result::Ok
            );
            rt.bindings.push(out);
        }
        let mut out = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                rt.host(),
                c"patients.scan".as_ptr(),
                Some(hold),
                None,
                ud,
                None,
                &mut out
            ),
            rcip_result::Ok
        );
        rt.bindings.push(out);
        rt
    }
    fn host(&self) -> *const rcip_host {
        // Safety: the fixture's runtime, alive until it is dropped.
        unsafe { rcip_runtime_host(self.runtime) }
    }
    fn client(&self) -> *const rcip_client {
        // Safety: the fixture's runtime, alive until it is dropped.
        unsafe { rcip_runtime_client(self.runtime) }
    }
    unsafe fn invoke(&self, cap: &str, input: &str) -> *mut rcip_pending {
        let mut p = ptr::null_mut();
        let (cap, input) = (c(cap), c(input));
        assert_eq!(
            rcip_client_invoke_pending(
                self.client(),
                cap.as_ptr(),
                input.as_ptr(),
                ptr::null(),
                ptr::null(),
                &mut p
            ),
            rcip_result::Ok
        );
        p
    }
    fn held_invocation(&self) -> *mut rcip_invocation {
        self.held.lock().unwrap().pop().expect("a held invocation") as *mut rcip_invocation
    }
}

impl Drop for Rt {
    fn drop(&mut self) {
        unsafe {
            rcip_runtime_free(self.runtime);
            for b in self.bindings.drain(..) {
                rcip_binding_free(b);
            }
            rcip_catalog_free(self.catalog);
        }
    }
}

/// Takes a ready outcome (poll) and reads it as a record.
unsafe fn outcome(p: *mut rcip_pending) -> (String, *mut rcip_record) {
    let mut json = ptr::null_mut();
    assert_eq!(rcip_pending_wait(p, 0, &mut json), rcip_result::Ok);
    rcip_pending_free(p);
    let json = take(json);
    let mut rec = ptr::null_mut();
    assert_eq!(
        rcip_record_parse(c(&json).as_ptr(), &mut rec),
        rcip_result::Ok,
        "{json}"
    );
    (json, rec)
}

// ----- item 1: policy requests without JSON --------------------------------

#[derive(Debug, Default, Clone, PartialEq)]
struct Seen {
    capability_id: Option<String>,
    effect: Option<String>,
    confirmed: bool,
    phase: Option<String>,
    invocation_id: Option<String>,
    ward_active: bool,
    bed_active: bool,
    primary: Option<String>,
    input: Option<String>,
    capability: Option<String>,
}

static SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

/// A clinic policy: `patients.edit` is denied with a reason that needs
/// escaping, `patients.notify` asks for confirmation with a reason, the
/// rest goes to the default policy.
unsafe extern "C" fn clinic_policy(_: *mut c_void, req: *mut rcip_policy_request) {
    let seen = Seen {
        capability_id: text(rcip_policy_request_capability_id(req)),
        effect: text(rcip_policy_request_effect(req)),
        confirmed: rcip_policy_request_is_confirmed(req),
        phase: text(rcip_policy_request_phase(req)),
        invocation_id: text(rcip_policy_request_invocation_id(req)),
        ward_active: rcip_policy_request_scope_is_active(req, c"ward".as_ptr()),
        bed_active: rcip_policy_request_scope_is_active(req, c"bed".as_ptr()),
        primary: text(rcip_policy_request_primary_scope_id(req)),
        input: text(rcip_policy_request_input(req)),
        capability: text(rcip_policy_request_capability(req)),
    };
    let cap = seen.capability_id.clone().unwrap();
    SEEN.lock().unwrap().push(seen);
    let rc = match cap.as_str() {
        "patients.edit" => rcip_policy_request_deny(req, c"ward \"B\" is locked\nuntil 9:00 \u{e9}".as_ptr()),
        "patients.notify" if !rcip_policy_request_is_confirmed(req) => {
            rcip_policy_request_confirm(req, c"Send \"reminder\"?".as_ptr())
        }
        _ => rcip_policy_request_decide_default(req),
    };
    assert_eq!(rc, rcip_result::Ok);
    // A decided request answers a second decision with ALREADY_COMPLETED.
    assert_eq!(rcip_policy_request_allow(req), rcip_result::AlreadyCompleted);
    rcip_policy_request_free(req);
}

#[test]
fn a_policy_reads_its_request_and_answers_with_plain_calls() {
    unsafe {
        SEEN.lock().unwrap().clear();
        let rt = Rt::new(|b| {
            assert_eq!(
                rcip_runtime_builder_set_policy(b, Some(clinic_policy), ptr::null_mut(), None),
                rcip_result::Ok
            );
        });
        let ctx = c(r#"{"activeScopeIds": ["bed"], "primaryScopeId": "bed"}"#);
        assert_eq!(rcip_host_set_context(rt.host(), ctx.as_ptr()), rcip_result::Ok);

        // read → default allow; every accessor answers without JSON.
        let (json, rec) = outcome(rt.invoke("patients.list", r#"{"n": 2, "n": 3}"#));
        assert_eq!(text(rcip_record_status(rec)).as_deref(), Some("succeeded"), "{json}");
        rcip_record_free(rec);
        let seen = SEEN.lock().unwrap().pop().unwrap();
        assert_eq!(seen.capability_id.as_deref(), Some("patients.list"));
        assert_eq!(seen.effect.as_deref(), Some("read"));
        assert!(!seen.confirmed);
        assert_eq!(seen.phase.as_deref(), Some("invoke"));
        assert!(seen.invocation_id.is_some());
        // Relevance is not inherited: "bed" names "ward" as its parent,
        // but only "bed" is active.
        assert!(seen.bed_active && !seen.ward_active);
        assert_eq!(seen.primary.as_deref(), Some("bed"));
        assert_eq!(seen.input.as_deref(), Some(r#"{"n":3}"#));
        let cap: serde_json::Value = serde_json::from_str(seen.capability.as_deref().unwrap()).unwrap();
        assert_eq!(cap["id"], "patients.list");
        assert_eq!(cap["relevance"], "other");
        assert_eq!(cap["bound"], true);

        // write → the host's deny, its reason escaped by rcip.
        let (json, rec) = outcome(rt.invoke("patients.edit", "{}"));
        assert_eq!(text(rcip_record_status(rec)).as_deref(), Some("denied"));
        assert_eq!(text(rcip_record_error_code(rec)).as_deref(), Some("POLICY_DENIED"));
        assert_eq!(
            text(rcip_record_error_message(rec)).as_deref(),
            Some("ward \"B\" is locked\nuntil 9:00 \u{e9}"),
            "{json}"
        );
        rcip_record_free(rec);

        // external → confirm with the host's reason; approving re-runs it
        // with confirmed true, which the default policy allows.
        let (json, rec) = outcome(rt.invoke("patients.notify", "{}"));
        assert_eq!(text(rcip_record_status(rec)).as_deref(), Some("confirmation_required"));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["confirmation"]["description"], "Send \"reminder\"?");
        let cid = text(rcip_record_confirmation_id(rec)).unwrap();
        rcip_record_free(rec);
        let mut p = ptr::null_mut();
        assert_eq!(
            rcip_host_resolve_confirmation_pending(rt.host(), c(&cid).as_ptr(), true, &mut p),
            rcip_result::Ok
        );
        let (_, rec) = outcome(p);
        assert_eq!(text(rcip_record_status(rec)).as_deref(), Some("succeeded"));
        rcip_record_free(rec);
        let seen = SEEN.lock().unwrap().pop().unwrap();
        assert_eq!(seen.capability_id.as_deref(), Some("patients.notify"));
        assert!(seen.confirmed);

        // destructive → the default policy's confirm, with the capability
        // description (no reason).
        let (json, rec) = outcome(rt.invoke("patients.discharge", "{}"));
        assert_eq!(text(rcip_record_status(rec)).as_deref(), Some("confirmation_required"));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["confirmation"]["description"], "Discharges a patient.");
        rcip_record_free(rec);

        // Preflight: phase "preflight" and no invocation id.
        SEEN.lock().unwrap().clear();
        let ids = [c"patients.list".as_ptr()];
        let inputs = [c"{}".as_ptr()];
        let mut p = ptr::null_mut();
        assert_eq!(
            rcip_client_preflight_pending(rt.client(), ids.as_ptr(), inputs.as_ptr(), 1, ptr::null(), &mut p),
            rcip_result::Ok
        );
        let (_, rec) = outcome(p);
        assert_eq!(rcip_record_entry_count(rec), 1);
        assert_eq!(
            text(rcip_record_status(rcip_record_entry(rec, 0))).as_deref(),
            Some("ready")
        );
        rcip_record_free(rec);
        let seen = SEEN.lock().unwrap().pop().unwrap();
        assert_eq!(seen.phase.as_deref(), Some("preflight"));
        assert_eq!(seen.invocation_id, None);
    }
}

unsafe extern "C" fn default_only(_: *mut c_void, req: *mut rcip_policy_request) {
    assert_eq!(rcip_policy_request_decide_default(req), rcip_result::Ok);
    rcip_policy_request_free(req);
}

/// The default policy's table, through the delegation call, gives what a
/// runtime without a host policy gives, for every effect and both values
/// of `confirmed`.
#[test]
fn delegating_to_the_default_policy_matches_the_runtime_without_a_policy() {
    unsafe {
        let delegating = Rt::new(|b| {
            assert_eq!(
                rcip_runtime_builder_set_policy(b, Some(default_only), ptr::null_mut(), None),
                rcip_result::Ok
            );
        });
        let plain = Rt::new(|_| {});
        let mut answers = Vec::new();
        for rt in [&delegating, &plain] {
            let mut row = Vec::new();
            for cap in [
                "patients.list",
                "patients.edit",
                "patients.notify",
                "patients.discharge",
            ] {
                let (_, rec) = outcome(rt.invoke(cap, "{}"));
                let status = text(rcip_record_status(rec)).unwrap();
                let code = text(rcip_record_error_code(rec));
                row.push((cap, status.clone(), code));
                if status == "confirmation_required" {
                    // confirmed → allow.
                    let cid = text(rcip_record_confirmation_id(rec)).unwrap();
                    let mut p = ptr::null_mut();
                    assert_eq!(
                        rcip_host_resolve_confirmation_pending(rt.host(), c(&cid).as_ptr(), true, &mut p),
                        rcip_result::Ok
                    );
                    let (_, again) = outcome(p);
                    row.push((cap, text(rcip_record_status(again)).unwrap(), None));
                    rcip_record_free(again);
                }
                rcip_record_free(rec);
            }
            answers.push(row);
        }
        assert_eq!(answers[0], answers[1]);
        let want: Vec<(&str, String, Option<String>)> = vec![
            ("patients.list", "succeeded".into(), None),
            ("patients.edit", "denied".into(), Some("POLICY_DENIED".into())),
            ("patients.notify", "denied".into(), Some("POLICY_DENIED".into())),
            ("patients.discharge", "confirmation_required".into(), None),
            ("patients.discharge", "succeeded".into(), None),
        ];
        assert_eq!(answers[0], want);
    }
}

#[test]
fn a_bad_reason_leaves_the_request_undecided() {
    unsafe {
        static HELD_REQ: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        unsafe extern "C" fn keep(_: *mut c_void, req: *mut rcip_policy_request) {
            HELD_REQ.lock().unwrap().push(req as usize);
        }
        let rt = Rt::new(|b| {
            assert_eq!(
                rcip_runtime_builder_set_policy(b, Some(keep), ptr::null_mut(), None),
                rcip_result::Ok
            );
        });
        let p = rt.invoke("patients.edit", "{}");
        let req = HELD_REQ.lock().unwrap().pop().unwrap() as *mut rcip_policy_request;
        let bad = b"no\xff\0";
        assert_eq!(
            rcip_policy_request_deny(req, bad.as_ptr().cast()),
            rcip_result::InvalidUtf8
        );
        assert_eq!(
            rcip_policy_request_confirm(req, bad.as_ptr().cast()),
            rcip_result::InvalidUtf8
        );
        assert!(!rcip_policy_request_is_settled(req));
        assert!(!rcip_pending_is_ready(p));
        // No reason: rcip's own message.
        assert_eq!(rcip_policy_request_deny(req, ptr::null()), rcip_result::Ok);
        rcip_policy_request_free(req);
        let (_, rec) = outcome(p);
        assert_eq!(text(rcip_record_error_code(rec)).as_deref(), Some("POLICY_DENIED"));
        assert!(!text(rcip_record_error_message(rec)).unwrap().is_empty());
        rcip_record_free(rec);
    }
}

// ----- item 2: records without JSON -----------------------------------------

static EVENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static NOTICES: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_event(_: *mut c_void, json: *const c_char) {
    EVENTS.lock().unwrap().push(text(json).unwrap());
}

unsafe extern "C" fn on_notice(_: *mut c_void, json: *const c_char) {
    NOTICES.lock().unwrap().push(text(json).unwrap());
}

unsafe fn parse(json: &str) -> *mut rcip_record {
    let mut rec = ptr::null_mut();
    assert_eq!(rcip_record_parse(c(json).as_ptr(), &mut rec), rcip_result::Ok, "{json}");
    rec
}

/// Every field the header lists, read through the accessors, equals what
/// the JSON record holds (the JSON read here with serde, the host's side
/// without).
#[test]
fn records_give_the_fields_every_host_reads() {
    unsafe {
        EVENTS.lock().unwrap().clear();
        NOTICES.lock().unwrap().clear();
        let rt = Rt::new(|b| {
            assert_eq!(
                rcip_runtime_builder_add_event_observer(b, Some(on_event), ptr::null_mut(), None),
                rcip_result::Ok
            );
            assert_eq!(
                rcip_runtime_builder_set_confirmation_callback(b, Some(on_notice), ptr::null_mut(), None),
                rcip_result::Ok
            );
        });
        // INPUT_INVALID with two issues.
        let (json, rec) = outcome(rt.invoke("patients.list", r#"{"n": "x", "extra": 1}"#));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(text(rcip_record_status(rec)).as_deref(), Some("failed"));
        assert_eq!(text(rcip_record_error_code(rec)).as_deref(), Some("INPUT_INVALID"));
        assert_eq!(
            text(rcip_record_error_message(rec)).as_deref(),
            v["error"]["message"].as_str()
        );
        assert_eq!(
            text(rcip_record_invocation_id(rec)).as_deref(),
            v["invocationId"].as_str()
        );
        assert_eq!(text(rcip_record_capability_id(rec)).as_deref(), Some("patients.list"));
        let issues = v["error"]["validationIssues"].as_array().unwrap();
        assert_eq!(issues.len(), 2);
        assert_eq!(rcip_record_issue_count(rec), 2);
        for (i, issue) in issues.iter().enumerate() {
            assert_eq!(
                text(rcip_record_issue_path(rec, i)).as_deref(),
                issue["instancePath"].as_str()
            );
            assert_eq!(
                text(rcip_record_issue_keyword(rec, i)).as_deref(),
                issue["keyword"].as_str()
            );
            assert_eq!(
                text(rcip_record_issue_message(rec, i)).as_deref(),
                issue["message"].as_str()
            );
        }
        assert!(rcip_record_issue_path(rec, 2).is_null());
        assert!(rcip_record_output(rec).is_null());
        assert!(rcip_record_confirmation_id(rec).is_null());
        rcip_record_free(rec);

        // succeeded: the output as JSON text.
        let (_, rec) = outcome(rt.invoke("patients.list", "{}"));
        assert_eq!(text(rcip_record_output(rec)).as_deref(), Some(r#"{"ok":true}"#));
        assert!(rcip_record_error_code(rec).is_null());
        assert_eq!(rcip_record_issue_count(rec), 0);
        rcip_record_free(rec);

        // confirmation_required: id and expiry.
        let (json, rec) = outcome(rt.invoke("patients.discharge", "{}"));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            text(rcip_record_confirmation_id(rec)).as_deref(),
            v["confirmation"]["id"].as_str()
        );
        let mut at = 0i64;
        assert!(rcip_record_expires_at(rec, &mut at));
        assert_eq!(at, v["confirmation"]["expiresAt"].as_i64().unwrap());
        let cid = text(rcip_record_confirmation_id(rec)).unwrap();
        rcip_record_free(rec);
        let mut p = ptr::null_mut();
        assert_eq!(
            rcip_host_resolve_confirmation_pending(rt.host(), c(&cid).as_ptr(), false, &mut p),
            rcip_result::Ok
        );
        let (_, rec) = outcome(p);
        assert_eq!(
            text(rcip_record_error_code(rec)).as_deref(),
            Some("CONFIRMATION_DECLINED")
        );
        rcip_record_free(rec);

        // Notices: opened (kind, confirmation id, expiry), closed (reason).
        let notices = NOTICES.lock().unwrap().clone();
        assert_eq!(notices.len(), 2, "{notices:?}");
        let opened = parse(&notices[0]);
        assert_eq!(text(rcip_record_notice_kind(opened)).as_deref(), Some("opened"));
        assert_eq!(text(rcip_record_confirmation_id(opened)).as_deref(), Some(cid.as_str()));
        assert!(rcip_record_expires_at(opened, &mut at));
        assert_eq!(
            text(rcip_record_capability_id(opened)).as_deref(),
            Some("patients.discharge")
        );
        rcip_record_free(opened);
        let closed = parse(&notices[1]);
        assert_eq!(text(rcip_record_notice_kind(closed)).as_deref(), Some("closed"));
        assert_eq!(text(rcip_record_confirmation_id(closed)).as_deref(), Some(cid.as_str()));
        assert_eq!(text(rcip_record_reason(closed)).as_deref(), Some("declined"));
        assert!(!rcip_record_expires_at(closed, &mut at));
        rcip_record_free(closed);

        // Events: phase and error code.
        let events = EVENTS.lock().unwrap().clone();
        let mut phases = Vec::new();
        for e in &events {
            let v: serde_json::Value = serde_json::from_str(e).unwrap();
            let rec = parse(e);
            assert_eq!(text(rcip_record_phase(rec)).as_deref(), v["phase"].as_str());
            assert_eq!(text(rcip_record_error_code(rec)).as_deref(), v["errorCode"].as_str());
            assert_eq!(
                text(rcip_record_invocation_id(rec)).as_deref(),
                v["invocationId"].as_str()
            );
            phases.push((text(rcip_record_phase(rec)).unwrap(), text(rcip_record_error_code(rec))));
            rcip_record_free(rec);
        }
        assert_eq!(phases[1], ("failed".to_string(), Some("INPUT_INVALID".to_string())));
        assert!(phases.contains(&(
            "confirmation_declined".to_string(),
            Some("CONFIRMATION_DECLINED".to_string())
        )));

        // A preflight report's entries, each a record of its own, valid
        // until the report is freed.
        let ids = [
            c"patients.list".as_ptr(),
            c"patients.discharge".as_ptr(),
            c"patients.list".as_ptr(),
        ];
        let inputs = [c"{}".as_ptr(), c"{}".as_ptr(), c"{\"n\": 1.5}".as_ptr()];
        let mut p = ptr::null_mut();
        assert_eq!(
            rcip_client_preflight_pending(rt.client(), ids.as_ptr(), inputs.as_ptr(), 3, ptr::null(), &mut p),
            rcip_result::Ok
        );
        let (_, rep) = outcome(p);
        assert_eq!(rcip_record_entry_count(rep), 3);
        let e: Vec<_> = (0..3).map(|i| rcip_record_entry(rep, i)).collect();
        assert!(rcip_record_entry(rep, 3).is_null());
        assert_eq!(text(rcip_record_status(e[0])).as_deref(), Some("ready"));
        assert_eq!(text(rcip_record_status(e[1])).as_deref(), Some("confirmation_required"));
        assert_eq!(text(rcip_record_reason(e[1])).as_deref(), Some("Discharges a patient."));
        assert_eq!(text(rcip_record_status(e[2])).as_deref(), Some("blocked"));
        assert_eq!(text(rcip_record_error_code(e[2])).as_deref(), Some("INPUT_INVALID"));
        assert_eq!(text(rcip_record_issue_keyword(e[2], 0)).as_deref(), Some("type"));
        assert_eq!(text(rcip_record_capability_id(e[2])).as_deref(), Some("patients.list"));
        rcip_record_free(rep);
    }
}

#[test]
fn a_record_copies_its_text_and_refuses_what_is_not_a_record() {
    unsafe {
        let mut rec = ptr::null_mut();
        assert_eq!(
            rcip_record_parse(c"[1]".as_ptr(), &mut rec),
            rcip_result::InvalidArgument
        );
        assert!(rec.is_null());
        assert_eq!(
            rcip_record_parse(c"{\"a\"".as_ptr(), &mut rec),
            rcip_result::InvalidJson
        );
        // The text may go away at once.
        let owned = c(r#"{"status": "denied", "error": {"code": "POLICY_DENIED", "message": "x\u0041"}}"#);
        assert_eq!(rcip_record_parse(owned.as_ptr(), &mut rec), rcip_result::Ok);
        drop(owned);
        assert_eq!(text(rcip_record_error_message(rec)).as_deref(), Some("xA"));
        assert!(rcip_record_phase(rec).is_null());
        assert_eq!(rcip_record_entry_count(rec), 0);
        rcip_record_free(rec);
        // Depth beyond the payload default still reads (a runtime may raise
        // its limits).
        let deep = format!(
            r#"{{"status": "succeeded", "output": {}1{}}}"#,
            "[".repeat(1500),
            "]".repeat(1500)
        );
        let rec = parse(&deep);
        assert_eq!(text(rcip_record_output(rec)).unwrap().len(), 3001);
        rcip_record_free(rec);
        // Deep text on a host thread with a small stack: read up to 100,000
        // levels (the stack overflowed when the value was dropped), refused
        // beyond, never a crash.
        let nested = |n: usize| {
            c(&format!(
                r#"{{"status": "succeeded", "output": {}1{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            ))
        };
        let (ok, too_deep) = (nested(20_000), nested(200_000));
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let mut rec = ptr::null_mut();
                assert_eq!(rcip_record_parse(ok.as_ptr(), &mut rec), rcip_result::Ok);
                assert_eq!(text(rcip_record_output(rec)).unwrap().len(), 40_001);
                rcip_record_free(rec);
                assert_eq!(rcip_record_parse(too_deep.as_ptr(), &mut rec), rcip_result::InvalidJson);
                assert!(rec.is_null());
            })
            .unwrap()
            .join()
            .unwrap();
    }
}

// ----- item 3: waitable outcomes ----------------------------------------------

/// A wait times out, then receives the outcome a worker thread settles
/// while it blocks; the outcome is handed over once.
#[test]
fn a_pending_outcome_is_waited_for_from_another_thread_and_handed_over_once() {
    unsafe {
        let rt = Rt::new(|_| {});
        let p = rt.invoke("patients.scan", "{}");
        let mut json = ptr::null_mut();
        let t0 = Instant::now();
        assert_eq!(rcip_pending_wait(p, 30, &mut json), rcip_result::TimedOut);
        assert!(t0.elapsed() >= Duration::from_millis(30));
        assert!(json.is_null());
        assert_eq!(rcip_pending_wait(p, 0, &mut json), rcip_result::TimedOut);
        assert!(!rcip_pending_is_ready(p));
        let inv = rt.held_invocation() as usize;
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let inv = inv as *mut rcip_invocation;
            assert_eq!(rcip_invocation_complete(inv, c"{\"n\": 1}".as_ptr()), rcip_result::Ok);
            rcip_invocation_free(inv);
        });
        assert_eq!(rcip_pending_wait(p, RCIP_WAIT_FOREVER, &mut json), rcip_result::Ok);
        worker.join().unwrap();
        let v: serde_json::Value = serde_json::from_str(&take(json)).unwrap();
        assert_eq!(v["status"], "succeeded");
        assert_eq!(v["output"]["n"], 1.0);
        assert!(!rcip_pending_is_ready(p));
        assert_eq!(rcip_pending_wait(p, 0, &mut json), rcip_result::AlreadyUsed);
        assert_eq!(rcip_pending_wait(p, 10, &mut json), rcip_result::AlreadyUsed);
        assert!(json.is_null());
        rcip_pending_free(p);
    }
}

static READY: Mutex<Vec<(String, std::thread::ThreadId)>> = Mutex::new(Vec::new());
static READY_FREED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn ready(_: *mut c_void, json: *const c_char) {
    READY
        .lock()
        .unwrap()
        .push((text(json).unwrap(), std::thread::current().id()));
}

unsafe extern "C" fn ready_freed(_: *mut c_void) {
    READY_FREED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// A callback gets the outcome once: at once when it is there, else on the
/// settling thread, even after the handle was freed; a second registration
/// or a wait afterwards is ALREADY_USED and never calls its functions.
#[test]
fn a_ready_callback_receives_the_outcome_once_and_outlives_the_handle() {
    unsafe {
        READY.lock().unwrap().clear();
        let rt = Rt::new(|_| {});
        // Already there: runs before on_ready returns, on this thread.
        let p = rt.invoke("patients.list", "{}");
        assert!(rcip_pending_is_ready(p));
        assert_eq!(
            rcip_pending_on_ready(p, Some(ready), ptr::null_mut(), Some(ready_freed)),
            rcip_result::Ok
        );
        assert_eq!(READY.lock().unwrap().len(), 1);
        assert_eq!(READY_FREED.load(std::sync::atomic::Ordering::SeqCst), 1);
        let mut json = ptr::null_mut();
        assert_eq!(rcip_pending_wait(p, 0, &mut json), rcip_result::AlreadyUsed);
        assert_eq!(
            rcip_pending_on_ready(p, Some(ready), ptr::null_mut(), Some(ready_freed)),
            rcip_result::AlreadyUsed
        );
        assert_eq!(READY_FREED.load(std::sync::atomic::Ordering::SeqCst), 1);
        rcip_pending_free(p);

        // Not there yet: runs on the worker that settles, after the free.
        let p = rt.invoke("patients.scan", "{}");
        assert_eq!(
            rcip_pending_on_ready(p, Some(ready), ptr::null_mut(), Some(ready_freed)),
            rcip_result::Ok
        );
        assert_eq!(rcip_pending_wait(p, 0, &mut json), rcip_result::AlreadyUsed);
        rcip_pending_free(p);
        let inv = rt.held_invocation() as usize;
        let worker = std::thread::spawn(move || {
            let inv = inv as *mut rcip_invocation;
            assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
            rcip_invocation_free(inv);
            std::thread::current().id()
        });
        let worker_id = worker.join().unwrap();
        let got = READY.lock().unwrap().clone();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].1, worker_id);
        assert!(got[1].0.contains("\"succeeded\""));
        assert_eq!(READY_FREED.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}

/// Freed before the outcome: the outcome goes to nobody, the invocation
/// still ends normally and nothing stays pending.
#[test]
fn a_pending_freed_early_lets_the_outcome_go_to_nobody() {
    unsafe {
        let rt = Rt::new(|_| {});
        let p = rt.invoke("patients.scan", "{}");
        rcip_pending_free(p);
        let inv = rt.held_invocation();
        assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
        rcip_invocation_free(inv);
        let mut stats = ptr::null_mut();
        assert_eq!(rcip_runtime_stats(rt.runtime, &mut stats), rcip_result::Ok);
        let v: serde_json::Value = serde_json::from_str(&take(stats)).unwrap();
        assert_eq!(v["pendingInvocations"], 0, "{v}");
        assert_eq!(v["reservedIds"], 0, "{v}");
        // Freed with the outcome unread, and a runtime freed while a
        // pending handle is alive: the handle stays valid and gets the
        // teardown outcome.
        let p = rt.invoke("patients.list", "{}");
        rcip_pending_free(p);
        let q = rt.invoke("patients.scan", "{}");
        let _held = rt.held_invocation();
        drop(rt);
        let mut json = ptr::null_mut();
        assert_eq!(rcip_pending_wait(q, 1000, &mut json), rcip_result::Ok);
        assert!(take(json).contains("EXECUTION_ABORTED"));
        rcip_pending_free(q);
        rcip_invocation_free(_held);
    }
}

/// What a wait inside a callback answered.
static INSIDE: Mutex<Vec<(rcip_result, rcip_result)>> = Mutex::new(Vec::new());
/// A pending of the runtime the test waits on from inside callbacks.
static TARGET: Mutex<usize> = Mutex::new(0);

unsafe fn wait_on_target() -> (rcip_result, rcip_result) {
    let p = *TARGET.lock().unwrap() as *const rcip_pending;
    let mut json = ptr::null_mut();
    let blocking = rcip_pending_wait(p, 50, &mut json);
    let poll = rcip_pending_wait(p, 0, &mut json);
    (blocking, poll)
}

unsafe extern "C" fn handler_that_waits(_: *mut c_void, inv: *mut rcip_invocation) {
    INSIDE.lock().unwrap().push(wait_on_target());
    assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
    rcip_invocation_free(inv);
}

unsafe extern "C" fn outcome_that_waits(_: *mut c_void, _: *const c_char) {
    INSIDE.lock().unwrap().push(wait_on_target());
}

unsafe extern "C" fn policy_that_waits(_: *mut c_void, req: *mut rcip_policy_request) {
    INSIDE.lock().unwrap().push(wait_on_target());
    assert_eq!(rcip_policy_request_decide_default(req), rcip_result::Ok);
    rcip_policy_request_free(req);
}

/// Waiting inside a callback of the same runtime answers WRONG_CONTEXT at
/// once (a poll is allowed); inside a callback of another runtime it is an
/// ordinary wait (here: a timeout, the target's handler being held).
#[test]
fn waiting_inside_a_callback_of_the_same_runtime_is_wrong_context() {
    unsafe {
        INSIDE.lock().unwrap().clear();
        let rt = Rt::new(|b| {
            assert_eq!(
                rcip_runtime_builder_set_policy(b, Some(policy_that_waits), ptr::null_mut(), None),
                rcip_result::Ok
            );
        });
        // The target: a held invocation of `rt`.
        let target = rt.invoke("patients.scan", "{}");
        *TARGET.lock().unwrap() = target as usize;
        INSIDE.lock().unwrap().clear(); // the target's own policy call
                                        // A handler of `rt` waits on it; an outcome callback of `rt` too.
        assert_eq!(rcip_binding_unbind(rt.bindings[0]), rcip_result::Ok);
        let mut b = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                rt.host(),
                c"patients.list".as_ptr(),
                Some(handler_that_waits),
                None,
                ptr::null_mut(),
                None,
                &mut b
            ),
            rcip_result::Ok
        );
        let t0 = Instant::now();
        assert_eq!(
            rcip_client_invoke(
                rt.client(),
                c"patients.list".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(outcome_that_waits),
                ptr::null_mut(),
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        assert!(t0.elapsed() < Duration::from_millis(50), "no wait blocked");
        let wrong = (rcip_result::WrongContext, rcip_result::TimedOut);
        assert_eq!(
            *INSIDE.lock().unwrap(),
            vec![wrong, wrong, wrong],
            "policy, handler, outcome"
        );

        // Another runtime's callbacks may wait on it.
        INSIDE.lock().unwrap().clear();
        let other = Rt::new(|_| {});
        assert_eq!(rcip_binding_unbind(other.bindings[0]), rcip_result::Ok);
        let mut b2 = ptr::null_mut();
        assert_eq!(
            rcip_host_bind(
                other.host(),
                c"patients.list".as_ptr(),
                Some(handler_that_waits),
                None,
                ptr::null_mut(),
                None,
                &mut b2
            ),
            rcip_result::Ok
        );
        let (_, rec) = outcome(other.invoke("patients.list", "{}"));
        rcip_record_free(rec);
        assert_eq!(
            *INSIDE.lock().unwrap(),
            vec![(rcip_result::TimedOut, rcip_result::TimedOut)]
        );

        // Outside any callback, the ready target is taken.
        let inv = rt.held_invocation();
        assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
        rcip_invocation_free(inv);
        let mut json = ptr::null_mut();
        assert_eq!(rcip_pending_wait(target, 50, &mut json), rcip_result::Ok);
        rcip_string_free(json);
        rcip_pending_free(target);
        rcip_binding_free(b);
        rcip_binding_free(b2);
    }
}

/// With manual timers, the thread that runs them may not block on an
/// outcome of that runtime (it may poll); any other thread may.
#[test]
fn the_manual_timer_thread_may_not_block_on_its_runtime() {
    unsafe {
        let rt = Rt::new(|b| {
            assert_eq!(rcip_runtime_builder_set_manual_timers(b, true), rcip_result::Ok);
        });
        let p = rt.invoke("patients.scan", "{}");
        let mut json = ptr::null_mut();
        // Before this thread ran the timers, it is an ordinary thread.
        assert_eq!(rcip_pending_wait(p, 5, &mut json), rcip_result::TimedOut);
        assert_eq!(rcip_runtime_run_due_timers(rt.runtime), rcip_result::Ok);
        assert_eq!(rcip_pending_wait(p, 5, &mut json), rcip_result::WrongContext);
        assert_eq!(rcip_pending_wait(p, 0, &mut json), rcip_result::TimedOut);
        let pp = p as usize;
        let other = std::thread::spawn(move || {
            let mut json = ptr::null_mut();
            rcip_pending_wait(pp as *const rcip_pending, 5, &mut json)
        });
        assert_eq!(other.join().unwrap(), rcip_result::TimedOut);
        // Once the outcome is there, taking it is no wait at all.
        let inv = rt.held_invocation();
        assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
        rcip_invocation_free(inv);
        assert_eq!(rcip_pending_wait(p, 5, &mut json), rcip_result::Ok);
        rcip_string_free(json);
        rcip_pending_free(p);
    }
}

static HELD_REQUESTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

unsafe extern "C" fn defer(_: *mut c_void, req: *mut rcip_policy_request) {
    HELD_REQUESTS.lock().unwrap().push(req as usize);
}

/// A preflight whose policy answers from a worker thread: the main thread
/// waits for the report.
#[test]
fn a_preflight_report_is_waited_for_while_a_worker_decides() {
    unsafe {
        let rt = Rt::new(|b| {
            assert_eq!(
                rcip_runtime_builder_set_policy(b, Some(defer), ptr::null_mut(), None),
                rcip_result::Ok
            );
        });
        let ids = [c"patients.list".as_ptr(), c"patients.edit".as_ptr()];
        let inputs = [c"{}".as_ptr(), c"{}".as_ptr()];
        let mut p = ptr::null_mut();
        assert_eq!(
            rcip_client_preflight_pending(rt.client(), ids.as_ptr(), inputs.as_ptr(), 2, ptr::null(), &mut p),
            rcip_result::Ok
        );
        let reqs: Vec<usize> = std::mem::take(&mut *HELD_REQUESTS.lock().unwrap());
        assert_eq!(reqs.len(), 2);
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            for r in reqs {
                let r = r as *mut rcip_policy_request;
                assert_eq!(rcip_policy_request_decide_default(r), rcip_result::Ok);
                rcip_policy_request_free(r);
            }
        });
        let mut json = ptr::null_mut();
        assert_eq!(rcip_pending_wait(p, 10_000, &mut json), rcip_result::Ok);
        worker.join().unwrap();
        let rep = parse(&take(json));
        assert_eq!(
            text(rcip_record_status(rcip_record_entry(rep, 0))).as_deref(),
            Some("ready")
        );
        assert_eq!(
            text(rcip_record_error_code(rcip_record_entry(rep, 1))).as_deref(),
            Some("POLICY_DENIED")
        );
        rcip_record_free(rep);
        rcip_pending_free(p);
    }
}

/// Races between the settling worker, two waiters and a callback: each
/// outcome goes to exactly one of them, and no waiter is left blocked.
#[test]
fn racing_waiters_and_callbacks_share_one_outcome() {
    unsafe {
        let rt = Rt::new(|_| {});
        let mut callback_wins = 0;
        for round in 0..200 {
            let p = rt.invoke("patients.scan", "{}") as usize;
            let inv = rt.held_invocation() as usize;
            let with_callback = round % 2 == 1;
            let settle = std::thread::spawn(move || {
                let inv = inv as *mut rcip_invocation;
                assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
                rcip_invocation_free(inv);
            });
            let waiters: Vec<_> = (0..2)
                .map(|i| {
                    std::thread::spawn(move || {
                        let p = p as *const rcip_pending;
                        if with_callback && i == 1 {
                            return rcip_pending_on_ready(p, Some(ready_count), ptr::null_mut(), None);
                        }
                        let mut json = ptr::null_mut();
                        let rc = rcip_pending_wait(p, RCIP_WAIT_FOREVER, &mut json);
                        if rc == rcip_result::Ok {
                            rcip_string_free(json);
                        }
                        rc
                    })
                })
                .collect();
            settle.join().unwrap();
            let got: Vec<rcip_result> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
            // One party gets the outcome (a wait's OK, or the callback's
            // registration OK and then its call), the other is refused.
            let taken = got.iter().filter(|r| **r == rcip_result::Ok).count();
            let refused = got.iter().filter(|r| **r == rcip_result::AlreadyUsed).count();
            assert_eq!((taken, refused), (1, 1), "round {round}: {got:?}");
            if with_callback && got[1] == rcip_result::Ok {
                callback_wins += 1;
            }
            rcip_pending_free(p as *mut rcip_pending);
        }
        // Each callback that won ran exactly once.
        assert_eq!(READY_COUNT.load(std::sync::atomic::Ordering::SeqCst), callback_wins);
    }
}

static READY_COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn ready_count(_: *mut c_void, _: *const c_char) {
    READY_COUNT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// A callback attached while another thread is blocked waiting: the waiter
/// is told at once (ALREADY_USED), not left waiting for an outcome that
/// goes to the callback.
#[test]
fn attaching_a_callback_releases_a_blocked_waiter() {
    unsafe {
        let rt = Rt::new(|_| {});
        let p = rt.invoke("patients.scan", "{}") as usize;
        let waiter = std::thread::spawn(move || {
            let mut json = ptr::null_mut();
            let t0 = Instant::now();
            let rc = rcip_pending_wait(p as *const rcip_pending, 5000, &mut json);
            (rc, t0.elapsed())
        });
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            rcip_pending_on_ready(p as *const rcip_pending, Some(ignore_outcome), ptr::null_mut(), None),
            rcip_result::Ok
        );
        let (rc, waited) = waiter.join().unwrap();
        assert_eq!(rc, rcip_result::AlreadyUsed);
        assert!(waited < Duration::from_millis(4000), "{waited:?}");
        let inv = rt.held_invocation();
        assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
        rcip_invocation_free(inv);
        rcip_pending_free(p as *mut rcip_pending);
    }
}

unsafe extern "C" fn ignore_outcome(_: *mut c_void, _: *const c_char) {}

/// Issue 27, item 2: `rcip_runtime_builder_set_validation_issue_limit`
/// bounds the issues of an outcome; a cut list says so
/// (`error.validationIssuesTruncated`) and the record holds the issues kept.
#[test]
fn the_issue_limit_set_on_the_builder_cuts_the_issue_list() {
    unsafe {
        let input = r#"{"n": "x", "a": 1, "b": 2, "c": 3}"#;
        let whole = Rt::new(|_| {});
        let (json, rec) = outcome(whole.invoke("patients.list", input));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(rcip_record_issue_count(rec), 4);
        assert!(v["error"].get("validationIssuesTruncated").is_none(), "{json}");
        rcip_record_free(rec);
        let cut = Rt::new(|b| {
            assert_eq!(
                rcip_runtime_builder_set_validation_issue_limit(b, 2, 0),
                rcip_result::Ok
            );
        });
        let (json, rec) = outcome(cut.invoke("patients.list", input));
        let w: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(text(rcip_record_error_code(rec)).as_deref(), Some("INPUT_INVALID"));
        assert_eq!(rcip_record_issue_count(rec), 2);
        assert_eq!(w["error"]["validationIssuesTruncated"], true);
        assert_eq!(
            w["error"]["validationIssues"].as_array().unwrap()[..],
            v["error"]["validationIssues"].as_array().unwrap()[..2]
        );
        rcip_record_free(rec);
    }
}
