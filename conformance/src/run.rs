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

/// The runtime a step acts on when it names none (**rcip**, FORMAT.md
/// "Several runtimes").
pub const FIRST_RUNTIME: &str = "a";

thread_local! {
    static CLOCK: Cell<i64> = const { Cell::new(CLOCK_START) };
    /// One recorder per runtime, by runtime name.
    static REC: RefCell<HashMap<String, Recorder>> = RefCell::new(HashMap::new());
    /// The policy script and the index of its next entry: one script for
    /// every runtime, consumed in call order (**rcip**, FORMAT.md "Several
    /// runtimes").
    static SCRIPT: RefCell<(Vec<Value>, usize)> = const { RefCell::new((Vec::new(), 0)) };
}

/// Runs `f` on the recorder of runtime `name` (created empty on first use).
fn rec<T>(name: &str, f: impl FnOnce(&mut Recorder) -> T) -> T {
    REC.with(|r| f(r.borrow_mut().entry(name.to_string()).or_default()))
}

/// The runtime name a callback's user data holds.
///
/// # Safety
/// `ud` is a `Box<String>` made by [`name_data`].
unsafe fn name_of<'a>(ud: *mut c_void) -> &'a str {
    &*(ud as *const String)
}

fn name_data(name: &str) -> *mut c_void {
    Box::into_raw(Box::new(name.to_string())) as *mut c_void
}

unsafe extern "C" fn free_name(ud: *mut c_void) {
    drop(Box::from_raw(ud as *mut String));
}

/// What callbacks record, read by the `events`, `policy_calls` and
/// `handler_calls` steps; and what they leave pending.
#[derive(Default)]
struct Recorder {
    events: Vec<Value>,
    policy_calls: Vec<Value>,
    handler_calls: Vec<Value>,
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

unsafe extern "C" fn event_cb(ud: *mut c_void, json: *const c_char) {
    let v = parse(&read(json));
    rec(name_of(ud), |r| r.events.push(v));
}

struct BindingData {
    /// The runtime the binding belongs to.
    runtime: String,
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
    rec(&data.runtime, |r| r.handler_calls.push(call));
    match &data.handler {
        Value::String(s) if s == "defer" => {
            rec(&data.runtime, |r| r.deferred_handlers.insert(id, inv as usize));
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

unsafe extern "C" fn policy_cb(ud: *mut c_void, req: *mut Opaque) {
    let runtime = name_of(ud);
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
    rec(runtime, |r| r.policy_calls.push(call));
    let entry = SCRIPT.with(|s| {
        let (script, index) = &mut *s.borrow_mut();
        let i = (*index).min(script.len().saturating_sub(1));
        *index += 1;
        script.get(i).cloned().unwrap_or(Value::Null)
    });
    if entry == Value::String("defer".into()) {
        rec(runtime, |r| r.deferred_policies.push_back(req as usize));
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
    /// The runtime the call was made on (its deferred handler lives there).
    runtime: String,
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

/// One runtime of the scenario and what the runner holds of it.
struct Rt {
    runtime: *mut Opaque,
    client: *const Opaque,
    host: *const Opaque,
    bindings: HashMap<String, (*mut Opaque, Rc<RefCell<Value>>)>,
    old_bindings: Vec<*mut Opaque>,
    subs: HashMap<String, (*mut Opaque, Rc<Cell<u64>>, u64)>,
}

struct Runner {
    catalog: *mut Opaque,
    options: Value,
    /// The runtimes by name, and their names in creation order.
    runtimes: HashMap<String, Rt>,
    order: Vec<String>,
    tokens: HashMap<String, *mut Opaque>,
    calls: HashMap<String, CallRef>,
    /// Carried confirmation records (`carry` steps), by the call they came
    /// from.
    carried: HashMap<String, String>,
}

/// Runs a scenario and returns `{"create", "transcript"}`.
pub fn run(scenario: &Value) -> Value {
    CLOCK.with(|c| c.set(CLOCK_START));
    REC.with(|r| r.borrow_mut().clear());
    SCRIPT.with(|s| *s.borrow_mut() = (Vec::new(), 0));
    let catalog_text = cstr(&scenario["catalog"].to_string());
    let mut catalog = ptr::null_mut();
    let rc = unsafe { rcip_catalog_new(catalog_text.as_ptr(), &mut catalog) };
    if rc != OK {
        eprintln!("catalog refused: {}", last_error());
        return json!({"create": {"error": kind(rc)}, "transcript": []});
    }
    let mut runner = Runner {
        catalog,
        options: scenario["options"].clone(),
        runtimes: HashMap::new(),
        order: Vec::new(),
        tokens: HashMap::new(),
        calls: HashMap::new(),
        carried: HashMap::new(),
    };
    unsafe { runner.runtime_named(FIRST_RUNTIME) };
    let mut transcript = Vec::new();
    for step in scenario["steps"].as_array().into_iter().flatten() {
        transcript.push(unsafe { runner.step(step) });
    }
    unsafe { runner.teardown() };
    json!({"create": {"ok": true}, "transcript": transcript})
}

unsafe fn build_runtime(catalog: *mut Opaque, options: &Value, name: &str) -> *mut Opaque {
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
        SCRIPT.with(|s| s.borrow_mut().0 = script.clone());
        assert_eq!(
            rcip_runtime_builder_set_policy(builder, Some(policy_cb), name_data(name), Some(free_name)),
            OK
        );
    }
    assert_eq!(
        rcip_runtime_builder_add_event_observer(builder, Some(event_cb), name_data(name), Some(free_name)),
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
    /// The runtime `name`, created from the scenario's catalog and options
    /// when first named (**rcip**, FORMAT.md "Several runtimes").
    unsafe fn runtime_named(&mut self, name: &str) -> &mut Rt {
        if !self.runtimes.contains_key(name) {
            let runtime = build_runtime(self.catalog, &self.options, name);
            self.runtimes.insert(
                name.to_string(),
                Rt {
                    runtime,
                    client: rcip_runtime_client(runtime),
                    host: rcip_runtime_host(runtime),
                    bindings: HashMap::new(),
                    old_bindings: Vec::new(),
                    subs: HashMap::new(),
                },
            );
            self.order.push(name.to_string());
        }
        self.runtimes.get_mut(name).expect("just made")
    }

    fn rt(&mut self, name: &str) -> &mut Rt {
        self.runtimes.get_mut(name).expect("a runtime of the scenario")
    }

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

    fn new_call(&mut self, name: Option<&str>, preflight: bool, runtime: &str) -> CallRef {
        let call: CallRef = Rc::new(RefCell::new(CallState {
            preflight,
            runtime: runtime.to_string(),
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
        let rt_name = step
            .get("runtime")
            .and_then(Value::as_str)
            .unwrap_or(FIRST_RUNTIME)
            .to_string();
        let rt_name = rt_name.as_str();
        let (client, host) = {
            let rt = self.runtime_named(rt_name);
            (rt.client, rt.host)
        };
        match op {
            "bind" => {
                let availability = Rc::new(RefCell::new(step.get("availability").cloned().unwrap_or(Value::Null)));
                let data = Box::into_raw(Box::new(BindingData {
                    runtime: rt_name.to_string(),
                    handler: step["handler"].clone(),
                    availability: availability.clone(),
                }));
                let id = cstr(&s("capabilityId"));
                let mut binding = ptr::null_mut();
                let rc = rcip_host_bind(
                    host,
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
                if let Some((old, _)) = self.rt(rt_name).bindings.insert(s("binding"), (binding, availability)) {
                    self.rt(rt_name).old_bindings.push(old);
                }
                ok()
            }
            "unbind" => {
                let (b, _) = self.rt(rt_name).bindings[&s("binding")];
                result_entry(rcip_binding_unbind(b))
            }
            "set_availability" => {
                let (_, script) = &self.rt(rt_name).bindings[&s("binding")];
                *script.borrow_mut() = step["availability"].clone();
                ok()
            }
            "set_context" => {
                let c = cstr(&step["context"].to_string());
                result_entry(rcip_host_set_context(host, c.as_ptr()))
            }
            "clear_context" => result_entry(rcip_host_clear_context(host)),
            "refresh" => result_entry(rcip_host_refresh(host)),
            "snapshot" => {
                let mut snap = ptr::null();
                assert_eq!(rcip_client_snapshot(client, &mut snap), OK);
                let v = parse(&read(rcip_snapshot_json(snap)));
                rcip_snapshot_free(snap);
                json!({"snapshot": v})
            }
            "list" => {
                let filter = cstr(&step.get("filter").cloned().unwrap_or(json!({})).to_string());
                let mut out = ptr::null_mut();
                let rc = rcip_client_list_capabilities(client, filter.as_ptr(), &mut out);
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
                    client,
                    Some(subscriber_cb),
                    ud as *mut c_void,
                    Some(free_counter),
                    &mut sub,
                );
                assert_eq!(rc, OK);
                self.rt(rt_name).subs.insert(s("sub"), (sub, counter, 0));
                ok()
            }
            "unsubscribe" => {
                if let Some((sub, counter, seen)) = self.rt(rt_name).subs.get_mut(&s("sub")) {
                    if !sub.is_null() {
                        rcip_subscription_free(*sub);
                        *sub = ptr::null_mut();
                    }
                    let _ = (counter, seen);
                }
                ok()
            }
            "notifications" => {
                let (_, counter, seen) = self.rt(rt_name).subs.get_mut(&s("sub")).expect("known subscription");
                let n = counter.get() - *seen;
                *seen = counter.get();
                json!({"count": n})
            }
            "invoke" => {
                let request = &step["request"];
                let call = self.new_call(step.get("call").and_then(Value::as_str), false, rt_name);
                let token = self.token_of(step);
                let capability = cstr(request["capabilityId"].as_str().unwrap_or(""));
                let input = cstr(&input_text(request));
                let id = request.get("invocationId").and_then(Value::as_str).map(cstr);
                let ud = Box::into_raw(Box::new(call.clone()));
                let mut id_out = ptr::null_mut();
                let rc = rcip_client_invoke(
                    client,
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
                let call = self.new_call(step.get("call").and_then(Value::as_str), false, rt_name);
                call.borrow_mut().invocation_id = invocation_id;
                let id = cstr(&confirmation_id);
                let approved = step["approved"].as_bool().unwrap_or(false);
                let ud = Box::into_raw(Box::new(call.clone()));
                let rc = rcip_host_resolve_confirmation(
                    host,
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
                let req = rec(rt_name, |r| r.deferred_policies.pop_front()).expect("a deferred policy call");
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
                let (id, runtime) = {
                    let c = self.calls[&s("call")].borrow();
                    (c.invocation_id.clone().unwrap_or_default(), c.runtime.clone())
                };
                let inv =
                    rec(&runtime, |r| r.deferred_handlers.remove(&id)).expect("a deferred handler") as *mut Opaque;
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
                // **rcip**: one clock for every runtime; each open one runs
                // its due timers, in creation order.
                for name in self.order.clone() {
                    let rc = rcip_runtime_run_due_timers(self.rt(&name).runtime);
                    assert!(rc == OK || rc == CLOSED, "run_due_timers: {}", last_error());
                }
                ok()
            }
            "events" => json!({"events": rec(rt_name, |r| std::mem::take(&mut r.events))}),
            "policy_calls" => json!({"calls": rec(rt_name, |r| std::mem::take(&mut r.policy_calls))}),
            "handler_calls" => json!({"calls": rec(rt_name, |r| std::mem::take(&mut r.handler_calls))}),
            // **rcip** (FORMAT.md "Several runtimes"): the pending
            // confirmation of a call, carried out of the step's runtime.
            "carry" => {
                let of = s("of");
                let confirmation_id = {
                    let c = self.calls[&of].borrow();
                    let o = c.result.as_ref().expect("the call has an outcome");
                    o["confirmation"]["id"].as_str().unwrap_or("").to_string()
                };
                let id = cstr(&confirmation_id);
                let mut out = ptr::null_mut();
                let rc = rcip_host_carry_confirmation(host, id.as_ptr(), &mut out);
                if rc != OK {
                    return json!({"error": kind(rc)});
                }
                self.carried.insert(of, take(out));
                json!({"carried": true})
            }
            // **rcip**: a carried confirmation answered in the step's
            // runtime, with the consumer's input again.
            "resume" => {
                let carried = self.carried.get(&s("of")).expect("a carried confirmation").clone();
                let invocation_id = parse(&carried)["invocationId"].as_str().map(str::to_string);
                let call = self.new_call(step.get("call").and_then(Value::as_str), false, rt_name);
                call.borrow_mut().invocation_id = invocation_id;
                let token = self.token_of(step);
                let request = &step["request"];
                let input = cstr(&input_text(request));
                let carried = cstr(&carried);
                let approved = step["approved"].as_bool().unwrap_or(false);
                start_call(&call, |ud| {
                    rcip_host_resume_confirmation(
                        host,
                        carried.as_ptr(),
                        approved,
                        input.as_ptr(),
                        token,
                        Some(outcome_cb),
                        ud,
                        Some(free_call),
                    )
                })
            }
            // **rcip**: closes the step's runtime (PIPELINE.md section 9);
            // the handle is freed at the end of the scenario.
            "close" => result_entry(rcip_runtime_close(self.rt(rt_name).runtime)),
            "preflight" => {
                let call = self.new_call(step.get("call").and_then(Value::as_str), true, rt_name);
                let token = self.token_of(step);
                let requests = step["requests"].as_array().cloned().unwrap_or_default();
                let ids: Vec<CString> = requests
                    .iter()
                    .map(|r| cstr(r["capabilityId"].as_str().unwrap_or("")))
                    .collect();
                let inputs: Vec<CString> = requests.iter().map(|r| cstr(&input_text(r))).collect();
                let id_ptrs: Vec<*const c_char> = ids.iter().map(|c| c.as_ptr()).collect();
                let input_ptrs: Vec<*const c_char> = inputs.iter().map(|c| c.as_ptr()).collect();
                start_call(&call, |ud| {
                    rcip_client_preflight(
                        client,
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
                        ud,
                        Some(free_call),
                    )
                })
            }
            other => json!({"error": format!("UNKNOWN_OP {other}")}),
        }
    }

    unsafe fn teardown(&mut self) {
        for name in self.order.clone() {
            rcip_runtime_free(self.rt(&name).runtime);
        }
        rcip_catalog_free(self.catalog);
        let recorders = REC.with(|r| std::mem::take(&mut *r.borrow_mut()));
        for (_, r) in recorders {
            for p in r.deferred_policies {
                rcip_policy_request_free(p as *mut Opaque);
            }
            for (_, h) in r.deferred_handlers {
                rcip_invocation_free(h as *mut Opaque);
            }
        }
        for (_, mut rt) in self.runtimes.drain() {
            for (_, (b, _)) in rt.bindings.drain() {
                rcip_binding_free(b);
            }
            for b in rt.old_bindings.drain(..) {
                rcip_binding_free(b);
            }
            for (_, (s, _, _)) in rt.subs.drain() {
                if !s.is_null() {
                    rcip_subscription_free(s);
                }
            }
        }
        for (_, t) in self.tokens.drain() {
            rcip_cancel_token_free(t);
        }
    }
}

/// A step request's input as the text the library gets: `inputRaw` as it
/// is, else `input` as JSON (`null` when absent).
fn input_text(request: &Value) -> String {
    match request.get("inputRaw") {
        Some(Value::String(raw)) => raw.clone(),
        _ => request.get("input").cloned().unwrap_or(Value::Null).to_string(),
    }
}

/// Starts `call` through the C ABI with the call as user data: `start`
/// makes the library call and returns its result code. A refused call
/// never calls back, so its user data is taken back here and the call
/// records the error kind. Returns the step's entry.
unsafe fn start_call(call: &CallRef, start: impl FnOnce(*mut c_void) -> rcip_result) -> Value {
    let ud = Box::into_raw(Box::new(call.clone()));
    let rc = start(ud as *mut c_void);
    if rc != OK {
        // Safety: refused, so the library never took ud.
        drop(Box::from_raw(ud));
        call.borrow_mut().error = Some(kind(rc));
    }
    Runner::call_entry(call)
}
