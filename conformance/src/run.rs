//! Runs one scenario (conformance/FORMAT.md) through the C ABI and returns
//! its transcript `{"create": ..., "transcript": [...]}`.

use crate::abi::*;
use serde_json::{json, Map, Value};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, c_void, CString};
use std::ptr;
use std::rc::Rc;

/// The scenario clock's start: 2026-01-01T00:00:00Z.
pub const CLOCK_START: i64 = 1_767_225_600_000;

thread_local! {
    static CLOCK: Cell<i64> = const { Cell::new(CLOCK_START) };
    static REC: RefCell<Recorder> = RefCell::new(Recorder::default());
}

/// What callbacks record, read by the `events`, `policy_calls` and
/// `handler_calls` steps; and what they leave pending.
#[derive(Default)]
struct Recorder {
    events: Vec<Value>,
    policy_calls: Vec<Value>,
    handler_calls: Vec<Value>,
    policy_script: Vec<Value>,
    policy_index: usize,
    /// Deferred policy requests, oldest first.
    deferred_policies: VecDeque<usize>,
    /// Deferred handlers by invocation id.
    deferred_handlers: HashMap<String, usize>,
}

/// JSON text the library handed over, as deep as it accepts. Text the
/// runner cannot read ends the run loudly (exit status 3): a transcript
/// must never show `null` for an outcome that was not `null`.
fn parse(text: &str) -> Value {
    match crate::deep::parse(text) {
        Ok(v) => v,
        Err(e) => {
            let head: String = text.chars().take(200).collect();
            eprintln!("rcip-conformance: cannot read what the library returned as JSON ({e}): {head}");
            std::process::exit(3)
        }
    }
}

// ----- callbacks ------------------------------------------------------------

unsafe extern "C" fn clock_cb(_: *mut c_void) -> i64 {
    CLOCK.with(|c| c.get())
}

unsafe extern "C" fn event_cb(_: *mut c_void, json: *const c_char) {
    let v = parse(&read(json));
    REC.with(|r| r.borrow_mut().events.push(v));
}

struct BindingData {
    handler: Value,
    availability: Rc<RefCell<Value>>,
}

unsafe extern "C" fn free_binding_data(ud: *mut c_void) {
    drop(Box::from_raw(ud as *mut BindingData));
}

unsafe extern "C" fn handler_cb(ud: *mut c_void, inv: *mut Opaque) {
    let data = &*(ud as *const BindingData);
    let input_text = read(rcip_invocation_input(inv));
    let id = read(rcip_invocation_id(inv));
    let call = json!({
        "capabilityId": read(rcip_invocation_capability_id(inv)),
        "invocationId": id,
        "input": parse(&input_text),
        "semanticContext": parse(&read(rcip_invocation_semantic_context(inv))),
    });
    REC.with(|r| r.borrow_mut().handler_calls.push(call));
    match &data.handler {
        Value::String(s) if s == "defer" => {
            REC.with(|r| r.borrow_mut().deferred_handlers.insert(id, inv as usize));
            return;
        }
        Value::Object(m) => {
            if let Some(v) = m.get("return") {
                complete(inv, &v.to_string());
            } else if m.get("echo") == Some(&Value::Bool(true)) {
                complete(inv, &input_text);
            } else if let Some(Value::String(raw)) = m.get("returnRaw") {
                complete(inv, raw);
            } else if let Some(Value::String(kind)) = m.get("throw") {
                rcip_invocation_fail(inv, kind == "abort");
            } else {
                panic!("unknown handler script {}", data.handler);
            }
        }
        other => panic!("unknown handler script {other}"),
    }
    rcip_invocation_free(inv);
}

unsafe fn complete(inv: *mut Opaque, text: &str) {
    let c = cstr(text);
    let rc = rcip_invocation_complete(inv, c.as_ptr());
    assert_eq!(rc, OK, "complete: {}", last_error());
}

unsafe extern "C" fn availability_cb(ud: *mut c_void, sink: *mut Opaque) -> i32 {
    let data = &*(ud as *const BindingData);
    let script = data.availability.borrow().clone();
    match script {
        Value::Null => {
            rcip_availability_set(sink, true, ptr::null(), ptr::null());
            0
        }
        Value::String(s) if s == "throw" => 1,
        Value::Object(m) => {
            let available = m.get("available").and_then(Value::as_bool).unwrap_or(false);
            let code = m.get("reasonCode").and_then(Value::as_str).map(cstr);
            let reason = m.get("reason").and_then(Value::as_str).map(cstr);
            rcip_availability_set(
                sink,
                available,
                code.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                reason.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            );
            0
        }
        other => panic!("unknown availability script {other}"),
    }
}

unsafe extern "C" fn policy_cb(_: *mut c_void, req: *mut Opaque) {
    let ctx = parse(&read(rcip_policy_request_context(req)));
    let cap = &ctx["capability"];
    let call = json!({
        "capabilityId": cap["id"],
        "input": ctx["input"],
        "semanticContext": ctx["semanticContext"],
        "confirmed": ctx["confirmed"],
        "phase": ctx["phase"],
        "bound": cap["bound"],
        "available": cap["available"],
        "relevance": cap["relevance"],
    });
    let entry = REC.with(|r| {
        let mut r = r.borrow_mut();
        r.policy_calls.push(call);
        let i = r.policy_index.min(r.policy_script.len().saturating_sub(1));
        r.policy_index += 1;
        r.policy_script.get(i).cloned().unwrap_or(Value::Null)
    });
    if entry == Value::String("defer".into()) {
        REC.with(|r| r.borrow_mut().deferred_policies.push_back(req as usize));
        return;
    }
    settle_policy(req, &entry);
    rcip_policy_request_free(req);
}

/// Settles a policy request with a script entry (not `"defer"`).
unsafe fn settle_policy(req: *mut Opaque, entry: &Value) {
    let decision = match entry {
        Value::String(s) => s.clone(),
        Value::Object(m) => m.get("decision").and_then(Value::as_str).unwrap_or("").to_string(),
        other => panic!("unknown policy script entry {other}"),
    };
    match decision.as_str() {
        "throw" => {
            rcip_policy_request_fail(req);
        }
        "invalid" => {
            let c = cstr(r#"{"decision":"maybe"}"#);
            rcip_policy_request_decide(req, c.as_ptr());
        }
        "allow" | "deny" | "confirm" => {
            let mut m = Map::new();
            m.insert("decision".into(), Value::String(decision.clone()));
            if let Value::Object(o) = entry {
                if let Some(r) = o.get("reason") {
                    m.insert("reason".into(), r.clone());
                }
            }
            let c = cstr(&Value::Object(m).to_string());
            let rc = rcip_policy_request_decide(req, c.as_ptr());
            assert_eq!(rc, OK, "decide: {}", last_error());
        }
        other => panic!("unknown policy decision {other}"),
    }
}

/// Where an outcome or report of a call lands.
#[derive(Default)]
struct CallState {
    result: Option<Value>,
    error: Option<&'static str>,
    invocation_id: Option<String>,
    preflight: bool,
}

type CallRef = Rc<RefCell<CallState>>;

unsafe extern "C" fn outcome_cb(ud: *mut c_void, json: *const c_char) {
    let call = &*(ud as *const CallRef);
    let mut c = call.borrow_mut();
    assert!(c.result.is_none(), "a second outcome for one call");
    c.result = Some(parse(&read(json)));
}

unsafe extern "C" fn free_call(ud: *mut c_void) {
    drop(Box::from_raw(ud as *mut CallRef));
}

unsafe extern "C" fn subscriber_cb(ud: *mut c_void, _revision: u64) {
    let counter = &*(ud as *const Rc<Cell<u64>>);
    counter.set(counter.get() + 1);
}

unsafe extern "C" fn free_counter(ud: *mut c_void) {
    drop(Box::from_raw(ud as *mut Rc<Cell<u64>>));
}

// ----- the runner -----------------------------------------------------------

struct Runner {
    runtime: *mut Opaque,
    client: *const Opaque,
    host: *const Opaque,
    bindings: HashMap<String, (*mut Opaque, Rc<RefCell<Value>>)>,
    old_bindings: Vec<*mut Opaque>,
    subs: HashMap<String, (*mut Opaque, Rc<Cell<u64>>, u64)>,
    tokens: HashMap<String, *mut Opaque>,
    calls: HashMap<String, CallRef>,
}

/// Runs a scenario and returns `{"create", "transcript"}`.
pub fn run(scenario: &Value) -> Value {
    CLOCK.with(|c| c.set(CLOCK_START));
    REC.with(|r| *r.borrow_mut() = Recorder::default());
    let catalog_text = cstr(&scenario["catalog"].to_string());
    let mut catalog = ptr::null_mut();
    let rc = unsafe { rcip_catalog_new(catalog_text.as_ptr(), &mut catalog) };
    if rc != OK {
        eprintln!("catalog refused: {}", last_error());
        return json!({"create": {"error": kind(rc)}, "transcript": []});
    }
    let options = &scenario["options"];
    let runtime = unsafe { build_runtime(catalog, options) };
    unsafe { rcip_catalog_free(catalog) };
    let mut runner = Runner {
        runtime,
        client: unsafe { rcip_runtime_client(runtime) },
        host: unsafe { rcip_runtime_host(runtime) },
        bindings: HashMap::new(),
        old_bindings: Vec::new(),
        subs: HashMap::new(),
        tokens: HashMap::new(),
        calls: HashMap::new(),
    };
    let mut transcript = Vec::new();
    for step in scenario["steps"].as_array().into_iter().flatten() {
        transcript.push(unsafe { runner.step(step) });
    }
    unsafe { runner.teardown() };
    json!({"create": {"ok": true}, "transcript": transcript})
}

unsafe fn build_runtime(catalog: *mut Opaque, options: &Value) -> *mut Opaque {
    let mut builder = ptr::null_mut();
    assert_eq!(rcip_runtime_builder_new(catalog, &mut builder), OK);
    if let Some(ttl) = options.get("confirmationTtlMs").and_then(Value::as_u64) {
        assert_eq!(rcip_runtime_builder_set_confirmation_ttl_ms(builder, ttl), OK);
    }
    // **rcip** (FORMAT.md, `options.limits`): the payload limits; absent
    // fields keep the defaults.
    if let Some(limits) = options.get("limits").filter(|l| !l.is_null()) {
        let field = |name: &str| -> usize {
            match limits.get(name) {
                None | Some(Value::Null) => 0,
                Some(v) => v
                    .as_u64()
                    .filter(|n| *n > 0)
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or_else(|| panic!("options.limits.{name} must be a positive integer, not {v}")),
            }
        };
        assert_eq!(
            rcip_runtime_builder_set_limits(builder, field("maxPayloadLen"), field("maxDepth")),
            OK
        );
    }
    if let Some(Value::Array(script)) = options.get("policy") {
        REC.with(|r| r.borrow_mut().policy_script = script.clone());
        assert_eq!(
            rcip_runtime_builder_set_policy(builder, Some(policy_cb), ptr::null_mut(), None),
            OK
        );
    }
    assert_eq!(
        rcip_runtime_builder_add_event_observer(builder, Some(event_cb), ptr::null_mut(), None),
        OK
    );
    assert_eq!(
        rcip_runtime_builder_set_clock(builder, Some(clock_cb), ptr::null_mut(), None),
        OK
    );
    assert_eq!(rcip_runtime_builder_set_manual_timers(builder, true), OK);
    let mut runtime = ptr::null_mut();
    assert_eq!(
        rcip_runtime_builder_build(builder, &mut runtime),
        OK,
        "build: {}",
        last_error()
    );
    runtime
}

fn ok() -> Value {
    json!({"ok": true})
}

fn result_entry(rc: rcip_result) -> Value {
    if rc == OK {
        ok()
    } else {
        json!({"error": kind(rc)})
    }
}

impl Runner {
    fn token(&mut self, name: &str) -> *mut Opaque {
        *self.tokens.entry(name.to_string()).or_insert_with(|| {
            let mut t = ptr::null_mut();
            unsafe { assert_eq!(rcip_cancel_token_new(&mut t), OK) };
            t
        })
    }

    fn token_of(&mut self, step: &Value) -> *const Opaque {
        match step.get("cancel").and_then(Value::as_str) {
            Some(name) => self.token(name),
            None => ptr::null(),
        }
    }

    fn new_call(&mut self, name: Option<&str>, preflight: bool) -> CallRef {
        let call: CallRef = Rc::new(RefCell::new(CallState {
            preflight,
            ..Default::default()
        }));
        if let Some(name) = name {
            self.calls.insert(name.to_string(), call.clone());
        }
        call
    }

    fn call_entry(call: &CallRef) -> Value {
        let c = call.borrow();
        if let Some(e) = c.error {
            return json!({"error": e});
        }
        match (&c.result, c.preflight) {
            (Some(r), true) => json!({"report": r}),
            (Some(o), false) => json!({"outcome": o}),
            (None, _) => json!({"pending": true}),
        }
    }

    unsafe fn step(&mut self, step: &Value) -> Value {
        let op = step["op"].as_str().unwrap_or("");
        let s = |k: &str| step.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match op {
            "bind" => {
                let availability = Rc::new(RefCell::new(step.get("availability").cloned().unwrap_or(Value::Null)));
                let data = Box::into_raw(Box::new(BindingData {
                    handler: step["handler"].clone(),
                    availability: availability.clone(),
                }));
                let id = cstr(&s("capabilityId"));
                let mut binding = ptr::null_mut();
                let rc = rcip_host_bind(
                    self.host,
                    id.as_ptr(),
                    Some(handler_cb),
                    Some(availability_cb),
                    data as *mut c_void,
                    Some(free_binding_data),
                    &mut binding,
                );
                if rc != OK {
                    drop(Box::from_raw(data));
                    return result_entry(rc);
                }
                if let Some((old, _)) = self.bindings.insert(s("binding"), (binding, availability)) {
                    self.old_bindings.push(old);
                }
                ok()
            }
            "unbind" => {
                let (b, _) = self.bindings[&s("binding")];
                result_entry(rcip_binding_unbind(b))
            }
            "set_availability" => {
                let (_, script) = &self.bindings[&s("binding")];
                *script.borrow_mut() = step["availability"].clone();
                ok()
            }
            "set_context" => {
                let c = cstr(&step["context"].to_string());
                result_entry(rcip_host_set_context(self.host, c.as_ptr()))
            }
            "clear_context" => result_entry(rcip_host_clear_context(self.host)),
            "refresh" => result_entry(rcip_host_refresh(self.host)),
            "snapshot" => {
                let mut snap = ptr::null();
                assert_eq!(rcip_client_snapshot(self.client, &mut snap), OK);
                let v = parse(&read(rcip_snapshot_json(snap)));
                rcip_snapshot_free(snap);
                json!({"snapshot": v})
            }
            "list" => {
                let filter = cstr(&step.get("filter").cloned().unwrap_or(json!({})).to_string());
                let mut out = ptr::null_mut();
                let rc = rcip_client_list_capabilities(self.client, filter.as_ptr(), &mut out);
                if rc != OK {
                    return json!({"error": kind(rc)});
                }
                let list = parse(&take(out));
                let ids: Vec<Value> = list.as_array().into_iter().flatten().map(|c| c["id"].clone()).collect();
                json!({"ids": ids})
            }
            "subscribe" => {
                let counter = Rc::new(Cell::new(0u64));
                let ud = Box::into_raw(Box::new(counter.clone()));
                let mut sub = ptr::null_mut();
                let rc = rcip_client_subscribe(
                    self.client,
                    Some(subscriber_cb),
                    ud as *mut c_void,
                    Some(free_counter),
                    &mut sub,
                );
                assert_eq!(rc, OK);
                self.subs.insert(s("sub"), (sub, counter, 0));
                ok()
            }
            "unsubscribe" => {
                if let Some((sub, counter, seen)) = self.subs.get_mut(&s("sub")) {
                    if !sub.is_null() {
                        rcip_subscription_free(*sub);
                        *sub = ptr::null_mut();
                    }
                    let _ = (counter, seen);
                }
                ok()
            }
            "notifications" => {
                let (_, counter, seen) = self.subs.get_mut(&s("sub")).expect("known subscription");
                let n = counter.get() - *seen;
                *seen = counter.get();
                json!({"count": n})
            }
            "invoke" => {
                let request = &step["request"];
                let call = self.new_call(step.get("call").and_then(Value::as_str), false);
                let token = self.token_of(step);
                let capability = cstr(request["capabilityId"].as_str().unwrap_or(""));
                let input = match request.get("inputRaw") {
                    Some(Value::String(raw)) => raw.clone(),
                    _ => request.get("input").cloned().unwrap_or(Value::Null).to_string(),
                };
                let input = cstr(&input);
                let id = request.get("invocationId").and_then(Value::as_str).map(cstr);
                let ud = Box::into_raw(Box::new(call.clone()));
                let mut id_out = ptr::null_mut();
                let rc = rcip_client_invoke(
                    self.client,
                    capability.as_ptr(),
                    input.as_ptr(),
                    id.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                    token,
                    Some(outcome_cb),
                    ud as *mut c_void,
                    Some(free_call),
                    &mut id_out,
                );
                assert_eq!(rc, OK, "invoke: {}", last_error());
                call.borrow_mut().invocation_id = Some(take(id_out));
                Runner::call_entry(&call)
            }
            "confirm" => {
                let (confirmation_id, invocation_id) = match step.get("confirmationId").and_then(Value::as_str) {
                    Some(id) => (id.to_string(), None),
                    None => {
                        let of = self.calls[&s("of")].borrow();
                        let o = of.result.as_ref().expect("the call has an outcome");
                        (
                            o["confirmation"]["id"].as_str().unwrap_or("").to_string(),
                            o["invocationId"].as_str().map(str::to_string),
                        )
                    }
                };
                let call = self.new_call(step.get("call").and_then(Value::as_str), false);
                call.borrow_mut().invocation_id = invocation_id;
                let id = cstr(&confirmation_id);
                let approved = step["approved"].as_bool().unwrap_or(false);
                let ud = Box::into_raw(Box::new(call.clone()));
                let rc = rcip_host_resolve_confirmation(
                    self.host,
                    id.as_ptr(),
                    approved,
                    Some(outcome_cb),
                    ud as *mut c_void,
                    Some(free_call),
                );
                assert_eq!(rc, OK, "resolve: {}", last_error());
                Runner::call_entry(&call)
            }
            "await" => match self.calls.get(&s("call")) {
                Some(call) => Runner::call_entry(call),
                None => json!({"error": "UNKNOWN_CALL"}),
            },
            "policy" => {
                let req = REC
                    .with(|r| r.borrow_mut().deferred_policies.pop_front())
                    .expect("a deferred policy call");
                let req = req as *mut Opaque;
                let entry = if step.get("throw") == Some(&Value::Bool(true)) {
                    Value::String("throw".into())
                } else {
                    step["decision"].clone()
                };
                settle_policy(req, &entry);
                rcip_policy_request_free(req);
                ok()
            }
            "complete" | "fail" => {
                let id = self.calls[&s("call")]
                    .borrow()
                    .invocation_id
                    .clone()
                    .unwrap_or_default();
                let inv = REC
                    .with(|r| r.borrow_mut().deferred_handlers.remove(&id))
                    .expect("a deferred handler") as *mut Opaque;
                if op == "complete" {
                    let text = match step.get("outputRaw") {
                        Some(Value::String(raw)) => raw.clone(),
                        _ => step.get("output").cloned().unwrap_or(Value::Null).to_string(),
                    };
                    complete(inv, &text);
                } else {
                    let aborted = step.get("abort") == Some(&Value::Bool(true));
                    assert_eq!(rcip_invocation_fail(inv, aborted), OK);
                }
                rcip_invocation_free(inv);
                ok()
            }
            "cancel" => {
                let t = self.token(&s("token"));
                assert_eq!(rcip_cancel_token_cancel(t), OK);
                ok()
            }
            "advance" => {
                let ms = step["ms"].as_i64().unwrap_or(0);
                CLOCK.with(|c| c.set(c.get() + ms));
                assert_eq!(rcip_runtime_run_due_timers(self.runtime), OK);
                ok()
            }
            "events" => json!({"events": REC.with(|r| std::mem::take(&mut r.borrow_mut().events))}),
            "policy_calls" => json!({"calls": REC.with(|r| std::mem::take(&mut r.borrow_mut().policy_calls))}),
            "handler_calls" => json!({"calls": REC.with(|r| std::mem::take(&mut r.borrow_mut().handler_calls))}),
            "preflight" => {
                let call = self.new_call(step.get("call").and_then(Value::as_str), true);
                let token = self.token_of(step);
                let requests = step["requests"].as_array().cloned().unwrap_or_default();
                let ids: Vec<CString> = requests
                    .iter()
                    .map(|r| cstr(r["capabilityId"].as_str().unwrap_or("")))
                    .collect();
                let inputs: Vec<CString> = requests
                    .iter()
                    .map(|r| match r.get("inputRaw") {
                        Some(Value::String(raw)) => cstr(raw),
                        _ => cstr(&r.get("input").cloned().unwrap_or(Value::Null).to_string()),
                    })
                    .collect();
                let id_ptrs: Vec<*const c_char> = ids.iter().map(|c| c.as_ptr()).collect();
                let input_ptrs: Vec<*const c_char> = inputs.iter().map(|c| c.as_ptr()).collect();
                let ud = Box::into_raw(Box::new(call.clone()));
                let rc = rcip_client_preflight(
                    self.client,
                    if id_ptrs.is_empty() {
                        ptr::null()
                    } else {
                        id_ptrs.as_ptr()
                    },
                    if input_ptrs.is_empty() {
                        ptr::null()
                    } else {
                        input_ptrs.as_ptr()
                    },
                    requests.len(),
                    token,
                    Some(outcome_cb),
                    ud as *mut c_void,
                    Some(free_call),
                );
                if rc != OK {
                    // A refused call never calls back: the runner still owns ud.
                    drop(Box::from_raw(ud));
                    call.borrow_mut().error = Some(kind(rc));
                }
                Runner::call_entry(&call)
            }
            other => json!({"error": format!("UNKNOWN_OP {other}")}),
        }
    }

    unsafe fn teardown(&mut self) {
        rcip_runtime_free(self.runtime);
        let (policies, handlers) = REC.with(|r| {
            let mut r = r.borrow_mut();
            (
                std::mem::take(&mut r.deferred_policies),
                std::mem::take(&mut r.deferred_handlers),
            )
        });
        for p in policies {
            rcip_policy_request_free(p as *mut Opaque);
        }
        for (_, h) in handlers {
            rcip_invocation_free(h as *mut Opaque);
        }
        for (_, (b, _)) in self.bindings.drain() {
            rcip_binding_free(b);
        }
        for b in self.old_bindings.drain(..) {
            rcip_binding_free(b);
        }
        for (_, (s, _, _)) in self.subs.drain() {
            if !s.is_null() {
                rcip_subscription_free(s);
            }
        }
        for (_, t) in self.tokens.drain() {
            rcip_cancel_token_free(t);
        }
    }
}
