//! The exports (see the crate documentation for threads, errors and
//! ownership). Names on the JavaScript side are camelCase (`js_name`).

use js_sys::{Function, Reflect};
use rcip::catalog::Catalog;
use rcip::runtime::{
    Availability, Binding, CancelToken, CheckFailed, HostError, Invocation, LifecycleEvent, OutcomeSink, PolicyRequest,
    Runtime, RuntimeBuilder, Subscription,
};
use std::rc::Rc;
use std::sync::Arc;
use wasm_bindgen::prelude::*;

#[cfg(target_feature = "atomics")]
compile_error!("rcip-wasm assumes one thread: build wasm32-unknown-unknown without the atomics target feature");

/// A JavaScript value (or a value holding one) that the core's `Send +
/// Sync` callback bounds accept.
///
/// Safety: `wasm32-unknown-unknown` without `atomics` (refused above) runs
/// one thread, so no value is ever sent to or shared with another; the
/// bounds are met vacuously.
struct Local<T>(T);

// SAFETY: see `Local`: there is no second thread on this target.
unsafe impl<T> Send for Local<T> {}
// SAFETY: see `Local`: there is no second thread on this target.
unsafe impl<T> Sync for Local<T> {}

impl Local<Function> {
    /// Calls the function with one argument; what it returns or throws.
    fn call1(&self, arg: &JsValue) -> Result<JsValue, JsValue> {
        self.0.call1(&JsValue::NULL, arg)
    }

    /// Calls the function with JSON text; a throw is ignored (observers
    /// and sinks have no one to report to).
    fn tell(&self, text: &str) {
        let _ = self.call1(&JsValue::from_str(text));
    }
}

/// The C ABI's result name for a host error.
fn code_of(e: &HostError) -> &'static str {
    match e {
        HostError::InvalidJson(_) => "INVALID_JSON",
        HostError::InvalidArgument(_) => "INVALID_ARGUMENT",
        HostError::InvalidCatalog(_) => "INVALID_CATALOG",
        HostError::NotInCatalog(_) => "NOT_IN_CATALOG",
        HostError::AlreadyBound(_) => "ALREADY_BOUND",
        HostError::UnknownScope(_) => "UNKNOWN_SCOPE",
        HostError::PrimaryNotActive(_) => "PRIMARY_NOT_ACTIVE",
        HostError::AlreadyCompleted => "ALREADY_COMPLETED",
        HostError::Closed => "CLOSED",
        HostError::PreflightBatchInvalid(_) => "PREFLIGHT_BATCH_INVALID",
        HostError::WrongContext => "WRONG_CONTEXT",
        HostError::Unsupported(_) => "UNSUPPORTED",
    }
}

/// A JavaScript `Error` with the core's message and a `code` property.
fn thrown(code: &str, message: &str) -> JsValue {
    let error = js_sys::Error::new(message);
    let _ = Reflect::set(&error, &JsValue::from_str("code"), &JsValue::from_str(code));
    error.into()
}

fn host_error(e: HostError) -> JsValue {
    thrown(code_of(&e), &e.to_string())
}

/// A JavaScript number as a non-negative integer count (`usize`): NaN,
/// negatives and fractions are refused with `INVALID_ARGUMENT`.
fn count(value: f64, what: &str) -> Result<usize, JsValue> {
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= usize::MAX as f64 {
        Ok(value as usize)
    } else {
        Err(thrown(
            "INVALID_ARGUMENT",
            &format!("invalid argument: {what} must be a non-negative integer, not {value}"),
        ))
    }
}

// ----- catalog ---------------------------------------------------------------

/// A compiled catalog (RCIP 1.0 catalog rules, docs/PIPELINE.md section 1,
/// checked by the core). Immutable; build any number of runtimes from it.
#[wasm_bindgen]
pub struct WasmCatalog {
    inner: Catalog,
}

#[wasm_bindgen]
impl WasmCatalog {
    /// Checks and compiles catalog JSON text. Throws `INVALID_CATALOG` with
    /// the first problem's sentence (and how many more there are); the
    /// error's `problems` property then holds every problem as JSON text,
    /// `[{"pointer", "id"?, "rule", "message"}]`.
    #[wasm_bindgen(constructor)]
    pub fn new(text: &str) -> Result<WasmCatalog, JsValue> {
        match Catalog::from_bytes(text.as_bytes()) {
            Ok(inner) => Ok(WasmCatalog { inner }),
            Err(e) => {
                let error = thrown("INVALID_CATALOG", &e.to_string());
                let problems: Vec<serde_json::Value> = e.problems.iter().map(|p| p.to_json()).collect();
                let text = serde_json::Value::Array(problems).to_string();
                let _ = Reflect::set(&error, &JsValue::from_str("problems"), &JsValue::from_str(&text));
                Err(error)
            }
        }
    }
}

// ----- builder ---------------------------------------------------------------

/// Configures a runtime over a catalog; [`build`](Self::build) consumes the
/// configuration (a second `build` throws `INVALID_ARGUMENT`).
#[wasm_bindgen]
pub struct WasmRuntimeBuilder {
    inner: Option<RuntimeBuilder>,
    clock: bool,
}

#[wasm_bindgen]
impl WasmRuntimeBuilder {
    /// A builder with the core's defaults (confirmation TTL 120 000 ms,
    /// payload limits 8 MiB and depth 1000, the default policy, the clock
    /// `Date.now()`), manual timers.
    #[wasm_bindgen(constructor)]
    pub fn new(catalog: &WasmCatalog) -> WasmRuntimeBuilder {
        let mut inner = RuntimeBuilder::new(&catalog.inner);
        inner.manual_timers(true);
        WasmRuntimeBuilder {
            inner: Some(inner),
            clock: false,
        }
    }

    fn builder(&mut self) -> Result<&mut RuntimeBuilder, JsValue> {
        self.inner
            .as_mut()
            .ok_or_else(|| thrown("INVALID_ARGUMENT", "invalid argument: this builder was already built"))
    }

    /// The confirmation lifetime in milliseconds (a positive integer; the
    /// core refuses others with `INVALID_ARGUMENT`).
    #[wasm_bindgen(js_name = confirmationTtlMs)]
    pub fn confirmation_ttl_ms(&mut self, ttl_ms: f64) -> Result<(), JsValue> {
        let ttl = count(ttl_ms, "confirmationTtlMs")? as u64;
        self.builder()?.confirmation_ttl_ms(ttl).map_err(host_error)?;
        Ok(())
    }

    /// Payload limits: maximum JSON text size in bytes and nesting depth;
    /// 0 keeps a value as it is (docs/PIPELINE.md section 8).
    pub fn limits(&mut self, max_bytes: f64, max_depth: f64) -> Result<(), JsValue> {
        let (b, d) = (count(max_bytes, "maxPayloadLen")?, count(max_depth, "maxDepth")?);
        self.builder()?.limits(b, d).map_err(host_error)?;
        Ok(())
    }

    /// The clock: a function returning epoch milliseconds (a number; a
    /// non-number or a throw reads as 0). Called by the runtime, never
    /// re-entrantly: its calls into the runtime throw `WRONG_CONTEXT`.
    pub fn clock(&mut self, now: Function) -> Result<(), JsValue> {
        let now = Local(now);
        self.builder()?.clock(Arc::new(move || -> i64 {
            now.0.call0(&JsValue::NULL).ok().and_then(|v| v.as_f64()).unwrap_or(0.0) as i64
        }));
        self.clock = true;
        Ok(())
    }

    /// The host policy: `policy(request)` receives a [`WasmPolicyRequest`]
    /// and settles it once, now or later (docs/PIPELINE.md section 4). A
    /// synchronous throw settles it as a policy failure
    /// (`POLICY_EVALUATION_FAILED`), as does freeing it unsettled.
    pub fn policy(&mut self, policy: Function) -> Result<(), JsValue> {
        let policy = Local(policy);
        self.builder()?.policy(Arc::new(move |request: PolicyRequest| {
            let request = Rc::new(request);
            let handle = WasmPolicyRequest { inner: request.clone() };
            if policy.call1(&handle.into()).is_err() {
                let _ = request.fail();
            }
        }));
        Ok(())
    }

    /// Adds a lifecycle event observer: `onEvent(json)` receives each event
    /// as JSON text (redacted: no input, output or message), in the order
    /// the runtime emits them. A throw is ignored.
    #[wasm_bindgen(js_name = onEvent)]
    pub fn on_event(&mut self, observer: Function) -> Result<(), JsValue> {
        let observer = Local(observer);
        self.builder()?
            .event_observer(Arc::new(move |event: &LifecycleEvent| observer.tell(&event.to_json())));
        Ok(())
    }

    /// Sets the confirmation observer: `onConfirmation(json)` receives each
    /// notice (`{"event": "opened", ...}`, `{"event": "closed", ...}`,
    /// docs/PIPELINE.md section 5) as JSON text. A throw is ignored.
    #[wasm_bindgen(js_name = onConfirmation)]
    pub fn on_confirmation(&mut self, observer: Function) -> Result<(), JsValue> {
        let observer = Local(observer);
        self.builder()?
            .confirmation_observer(Arc::new(move |text: &str| observer.tell(text)));
        Ok(())
    }

    /// Builds the runtime (manual timers; the clock `Date.now()` unless
    /// [`clock`](Self::clock) set one).
    pub fn build(&mut self) -> Result<WasmRuntime, JsValue> {
        let clock = self.clock;
        let mut builder = self
            .inner
            .take()
            .ok_or_else(|| thrown("INVALID_ARGUMENT", "invalid argument: this builder was already built"))?;
        if !clock {
            builder.clock(Arc::new(|| js_sys::Date::now() as i64));
        }
        let runtime = builder.try_build().map_err(host_error)?;
        Ok(WasmRuntime { runtime })
    }
}

// ----- runtime ---------------------------------------------------------------

/// A runtime: the host surface (bind, context, refresh, confirmations) and
/// the client surface (snapshot, list, subscribe, invoke, preflight) in one
/// object. Every method takes the runtime shared, so a callback may call
/// any method but `free()` re-entrantly. After [`close`](Self::close) (or
/// `free()`) calls throw `CLOSED`, except the last snapshot's reads.
#[wasm_bindgen]
pub struct WasmRuntime {
    runtime: Runtime,
}

/// The outcome sink of a call: `done(json)` is called exactly once with the
/// outcome (or preflight report) JSON text.
fn sink(done: Function) -> Box<dyn OutcomeSink> {
    let done = Local(done);
    Box::new(move |json: &str| done.tell(json))
}

#[wasm_bindgen]
impl WasmRuntime {
    /// Binds `handler` (and an optional availability check) to a catalog
    /// capability, then refreshes. `handler(invocation)` receives a
    /// [`WasmInvocation`] and settles it once, now or later; a synchronous
    /// throw fails it. `availability()` returns `{available: boolean,
    /// reasonCode?: string, reason?: string}`; a throw, or a value of
    /// another shape, shows `AVAILABILITY_CHECK_FAILED` (docs/PIPELINE.md
    /// section 2). Throws `NOT_IN_CATALOG`, `ALREADY_BOUND`, `CLOSED`.
    pub fn bind(
        &self,
        capability_id: &str,
        handler: Function,
        availability: Option<Function>,
    ) -> Result<WasmBinding, JsValue> {
        let handler = Local(handler);
        let handler = Arc::new(move |invocation: Invocation| {
            let invocation = Rc::new(invocation);
            let handle = WasmInvocation {
                inner: invocation.clone(),
            };
            if handler.call1(&handle.into()).is_err() {
                let _ = invocation.fail(false);
            }
        });
        let check = availability.map(|f| {
            let f = Local(f);
            Arc::new(move || read_availability(f.0.call0(&JsValue::NULL))) as Arc<dyn rcip::runtime::AvailabilityCheck>
        });
        let inner = self
            .runtime
            .host()
            .bind(capability_id, handler, check)
            .map_err(host_error)?;
        Ok(WasmBinding { inner })
    }

    /// Replaces the semantic context from JSON text (`{"activeScopeIds":
    /// [...], "primaryScopeId"?}`), then refreshes. Throws `INVALID_JSON`,
    /// `INVALID_ARGUMENT`, `UNKNOWN_SCOPE`, `PRIMARY_NOT_ACTIVE`, `CLOSED`.
    #[wasm_bindgen(js_name = setContextJson)]
    pub fn set_context_json(&self, text: &str) -> Result<(), JsValue> {
        self.runtime
            .host()
            .set_context_json(text.as_bytes())
            .map_err(host_error)
    }

    /// Sets the context to `{"activeScopeIds": []}`, then refreshes.
    #[wasm_bindgen(js_name = clearContext)]
    pub fn clear_context(&self) -> Result<(), JsValue> {
        self.runtime.host().clear_context().map_err(host_error)
    }

    /// Refreshes: a new revision, availability sampled, subscribers
    /// notified.
    pub fn refresh(&self) -> Result<(), JsValue> {
        self.runtime.host().refresh().map_err(host_error)
    }

    /// The current snapshot as JSON text (`RcipSnapshot`); the same text
    /// until the revision changes.
    #[wasm_bindgen(js_name = snapshotJson)]
    pub fn snapshot_json(&self) -> Result<String, JsValue> {
        Ok(self.runtime.client().snapshot().map_err(host_error)?.json().to_string())
    }

    /// The current snapshot's revision (exact below 2^53).
    pub fn revision(&self) -> Result<f64, JsValue> {
        Ok(self.runtime.client().snapshot().map_err(host_error)?.revision() as f64)
    }

    /// The capabilities of the current snapshot that pass the filter (JSON
    /// text, `{}` for all), as a JSON array text. Throws `INVALID_JSON`,
    /// `INVALID_ARGUMENT`.
    #[wasm_bindgen(js_name = listJson)]
    pub fn list_json(&self, filter: &str) -> Result<String, JsValue> {
        self.runtime
            .client()
            .list_json_filtered(filter.as_bytes())
            .map_err(host_error)
    }

    /// Subscribes `notify(revision)` to snapshot revisions (one call per
    /// revision); freeing or [`unsubscribe`](WasmSubscription::unsubscribe)
    /// on the result ends it.
    pub fn subscribe(&self, notify: Function) -> Result<WasmSubscription, JsValue> {
        let notify = Local(notify);
        let inner = self
            .runtime
            .client()
            .subscribe(Arc::new(move |revision: u64| {
                let _ = notify.call1(&JsValue::from_f64(revision as f64));
            }))
            .map_err(host_error)?;
        Ok(WasmSubscription { inner: Some(inner) })
    }

    /// Invokes a capability with input JSON text and an optional invocation
    /// id; returns the invocation id. `done(outcomeJson)` is called exactly
    /// once, possibly before this returns (the pipeline of
    /// docs/PIPELINE.md section 4 decides everything else). Throws only on
    /// host misuse (`CLOSED`, `INVALID_ARGUMENT`).
    pub fn invoke(
        &self,
        capability_id: &str,
        input: &str,
        invocation_id: Option<String>,
        done: Function,
    ) -> Result<String, JsValue> {
        self.invoke_inner(capability_id, input, invocation_id, None, done)
    }

    /// As [`invoke`](Self::invoke), cancellable through `token`.
    #[wasm_bindgen(js_name = invokeWithToken)]
    pub fn invoke_with_token(
        &self,
        capability_id: &str,
        input: &str,
        invocation_id: Option<String>,
        token: &WasmCancelToken,
        done: Function,
    ) -> Result<String, JsValue> {
        self.invoke_inner(capability_id, input, invocation_id, Some(&token.inner), done)
    }

    fn invoke_inner(
        &self,
        capability_id: &str,
        input: &str,
        invocation_id: Option<String>,
        token: Option<&CancelToken>,
        done: Function,
    ) -> Result<String, JsValue> {
        let id = self
            .runtime
            .client()
            .invoke(
                capability_id,
                input.as_bytes(),
                invocation_id.as_deref(),
                token,
                sink(done),
            )
            .map_err(host_error)?;
        Ok(id.to_string())
    }

    /// Preflights 1 to 16 proposals: `capabilityIds[i]` with input JSON
    /// text `inputs[i]` (the arrays of equal length). `done(reportJson)` is
    /// called once, possibly before this returns. Throws
    /// `PREFLIGHT_BATCH_INVALID` for another count, `INVALID_ARGUMENT` for
    /// arrays of different lengths, `CLOSED`.
    pub fn preflight(&self, capability_ids: Vec<String>, inputs: Vec<String>, done: Function) -> Result<(), JsValue> {
        self.preflight_inner(capability_ids, inputs, None, done)
    }

    /// As [`preflight`](Self::preflight), cancellable through `token`.
    #[wasm_bindgen(js_name = preflightWithToken)]
    pub fn preflight_with_token(
        &self,
        capability_ids: Vec<String>,
        inputs: Vec<String>,
        token: &WasmCancelToken,
        done: Function,
    ) -> Result<(), JsValue> {
        self.preflight_inner(capability_ids, inputs, Some(&token.inner), done)
    }

    fn preflight_inner(
        &self,
        capability_ids: Vec<String>,
        inputs: Vec<String>,
        token: Option<&CancelToken>,
        done: Function,
    ) -> Result<(), JsValue> {
        if capability_ids.len() != inputs.len() {
            return Err(thrown(
                "INVALID_ARGUMENT",
                "invalid argument: a preflight takes as many inputs as capability ids",
            ));
        }
        let proposals = capability_ids
            .into_iter()
            .zip(inputs)
            .map(|(id, input)| (id, input.into_bytes()))
            .collect();
        self.runtime
            .client()
            .preflight(proposals, token, sink(done))
            .map_err(host_error)
    }

    /// Resolves a pending confirmation (approved or declined);
    /// `done(outcomeJson)` is called exactly once, possibly before this
    /// returns (docs/PIPELINE.md section 5). Throws only on host misuse.
    #[wasm_bindgen(js_name = resolveConfirmation)]
    pub fn resolve_confirmation(&self, confirmation_id: &str, approved: bool, done: Function) -> Result<(), JsValue> {
        self.runtime
            .host()
            .resolve_confirmation(confirmation_id, approved, sink(done))
            .map_err(host_error)
    }

    /// The earliest pending timer deadline in the clock's epoch
    /// milliseconds, or `undefined` when none is pending: when to call
    /// [`run_due_timers`](Self::run_due_timers) next.
    #[wasm_bindgen(js_name = nextDeadline)]
    pub fn next_deadline(&self) -> Result<Option<f64>, JsValue> {
        Ok(self.runtime.next_deadline().map_err(host_error)?.map(|ms| ms as f64))
    }

    /// Runs the timers due at the clock's now (confirmation expiry);
    /// returns how many ran.
    #[wasm_bindgen(js_name = runDueTimers)]
    pub fn run_due_timers(&self) -> Result<u32, JsValue> {
        Ok(self.runtime.run_due_timers().map_err(host_error)? as u32)
    }

    /// The runtime's counters as JSON text (`{"revision", "bindings",
    /// "subscribers", "pendingInvocations", "pendingConfirmations",
    /// "pendingPreflights", "receipts", "reservedIds", "closed"}`).
    #[wasm_bindgen(js_name = statsJson)]
    pub fn stats_json(&self) -> Result<String, JsValue> {
        self.runtime.stats_json().map_err(host_error)
    }

    /// Closes the runtime now: pending work settles as the core closes it;
    /// later calls throw `CLOSED`.
    pub fn close(&self) {
        self.runtime.close();
    }
}

/// What an availability function returned, read as an availability
/// answer: `{available: boolean, reasonCode?: string, reason?: string}`.
fn read_availability(result: Result<JsValue, JsValue>) -> Result<Availability, CheckFailed> {
    let value = result.map_err(|_| CheckFailed)?;
    if !value.is_object() {
        return Err(CheckFailed);
    }
    let field = |name: &str| Reflect::get(&value, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED);
    let available = field("available").as_bool().ok_or(CheckFailed)?;
    let text = |name: &str| -> Result<Option<String>, CheckFailed> {
        let v = field(name);
        if v.is_undefined() || v.is_null() {
            Ok(None)
        } else {
            v.as_string().map(Some).ok_or(CheckFailed)
        }
    };
    Ok(Availability {
        available,
        reason_code: text("reasonCode")?,
        reason: text("reason")?,
    })
}

// ----- handles ---------------------------------------------------------------

/// A live binding. [`unbind`](Self::unbind) (or `free()`) removes it; a
/// stale handle (the capability rebound since) unbinds nothing.
#[wasm_bindgen]
pub struct WasmBinding {
    inner: Binding,
}

#[wasm_bindgen]
impl WasmBinding {
    /// Removes the binding and refreshes; true when it was still installed.
    pub fn unbind(&self) -> Result<bool, JsValue> {
        self.inner.unbind().map_err(host_error)
    }
}

/// A snapshot subscription.
#[wasm_bindgen]
pub struct WasmSubscription {
    inner: Option<Subscription>,
}

#[wasm_bindgen]
impl WasmSubscription {
    /// Ends the subscription (idempotent).
    pub fn unsubscribe(&mut self) {
        self.inner = None;
    }
}

/// A cancellation token: cancelling it cancels every invocation and
/// preflight it was passed to that has not settled (docs/PIPELINE.md
/// section 6). The JavaScript layer ties one to an `AbortSignal`.
#[wasm_bindgen]
pub struct WasmCancelToken {
    inner: CancelToken,
}

#[wasm_bindgen]
impl WasmCancelToken {
    /// A token that is not cancelled.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::new_without_default)] // reason: wasm-bindgen constructors take no Default
    pub fn new() -> WasmCancelToken {
        WasmCancelToken {
            inner: CancelToken::new(),
        }
    }

    /// Cancels (idempotent).
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// True once cancelled.
    #[wasm_bindgen(getter)]
    pub fn cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }
}

/// One invocation that reached its handler. Settle it once with
/// [`complete`](Self::complete) or [`fail`](Self::fail); `free()` it after.
#[wasm_bindgen]
pub struct WasmInvocation {
    inner: Rc<Invocation>,
}

#[wasm_bindgen]
impl WasmInvocation {
    /// The invocation id.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_string()
    }

    /// The capability id.
    #[wasm_bindgen(getter, js_name = capabilityId)]
    pub fn capability_id(&self) -> String {
        self.inner.capability_id().to_string()
    }

    /// The validated input as JSON text.
    #[wasm_bindgen(getter, js_name = inputJson)]
    pub fn input_json(&self) -> String {
        self.inner.input_json().to_string()
    }

    /// The semantic context the invocation runs under, as JSON text.
    #[wasm_bindgen(getter, js_name = contextJson)]
    pub fn context_json(&self) -> String {
        self.inner.semantic_context().json().to_string()
    }

    /// True once the invocation was cancelled.
    #[wasm_bindgen(getter)]
    pub fn cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }

    /// Calls `f()` once when the invocation is cancelled (now, when it
    /// already is).
    #[wasm_bindgen(js_name = onCancel)]
    pub fn on_cancel(&self, f: Function) {
        let f = Local(f);
        let _ = self.inner.cancel_token().on_cancel(move || {
            let _ = f.0.call0(&JsValue::NULL);
        });
    }

    /// Completes with output JSON text, which the core checks against the
    /// output schema (`OUTPUT_INVALID` otherwise). Throws
    /// `ALREADY_COMPLETED` when settled before.
    pub fn complete(&self, output: &str) -> Result<(), JsValue> {
        self.inner.complete_text(output.as_bytes()).map_err(host_error)
    }

    /// Fails (`HANDLER_FAILED`), or as aborted (`CANCELLED`) when `aborted`.
    /// Throws `ALREADY_COMPLETED` when settled before.
    pub fn fail(&self, aborted: bool) -> Result<(), JsValue> {
        self.inner.fail(aborted).map_err(host_error)
    }
}

/// One policy request. Settle it once with [`decide_json`](Self::decide_json),
/// [`decide_default`](Self::decide_default) or [`fail`](Self::fail);
/// `free()` it after.
#[wasm_bindgen]
pub struct WasmPolicyRequest {
    inner: Rc<PolicyRequest>,
}

#[wasm_bindgen]
impl WasmPolicyRequest {
    /// What the policy decides on, as JSON text (`{"capability",
    /// "input", "semanticContext", "confirmed", "phase", ...}`).
    #[wasm_bindgen(getter, js_name = contextJson)]
    pub fn context_json(&self) -> String {
        self.inner.context_json().to_string()
    }

    /// Decides with decision JSON text (`{"decision": "allow" | "deny" |
    /// "confirm", "reason"?}`); an envelope the core cannot read settles as
    /// a policy failure. Throws `ALREADY_COMPLETED` when settled before,
    /// `INVALID_JSON` for text that is not JSON.
    #[wasm_bindgen(js_name = decideJson)]
    pub fn decide_json(&self, decision: &str) -> Result<(), JsValue> {
        self.inner.decide_json(decision.as_bytes()).map_err(host_error)
    }

    /// Decides as the default policy would.
    #[wasm_bindgen(js_name = decideDefault)]
    pub fn decide_default(&self) -> Result<(), JsValue> {
        self.inner.decide_default().map_err(host_error)
    }

    /// Settles as a policy failure (`POLICY_EVALUATION_FAILED`).
    pub fn fail(&self) -> Result<(), JsValue> {
        self.inner.fail().map_err(host_error)
    }
}
