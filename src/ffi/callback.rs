//! Callback types, user data, and the trampolines that implement the
//! runtime's callback traits over C function pointers (STYLE.md section 5).
//!
//! Every registration that keeps `user_data` takes a `user_data_free`
//! called exactly once, on the releasing thread with no lock held, after the
//! last callback of that registration has returned. If the registering call
//! fails, neither function is ever called.

use super::invocation::rcip_invocation;
use super::policy::rcip_policy_request;
use super::sink::{rcip_availability_sink, rcip_string_sink};
use crate::runtime::{
    Availability, AvailabilityCheck, CheckFailed, Clock, ConfirmationObserver, EventObserver, Handler, IdGenerator,
    Invocation, JsonText, LifecycleEvent, OutcomeSink, Policy, PolicyRequest, Subscriber,
};
use std::ffi::{c_char, c_void, CString};

/// Releases host data registered with a callback. Called exactly once, on
/// the thread that releases the registration, after its last callback
/// returned, with no rcip lock held. It must not use the object being
/// released (the binding, subscription, token or runtime).
pub type rcip_user_data_free_callback = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// Runs a capability (`rcip_host_bind`).
///
/// Called on the thread that drives the invocation (the consumer's invoke,
/// a policy decision, or a confirmation approval), once per invocation that
/// reaches execution, with no rcip lock held. `invocation` is owned by the
/// handler from now on: settle it exactly once (`rcip_invocation_complete`
/// or `rcip_invocation_fail`), before returning or later from any thread,
/// and free it with `rcip_invocation_free` (freeing it unsettled settles it
/// as a failure). The handler may call any rcip function, including on the
/// same runtime.
pub type rcip_handler_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, invocation: *mut rcip_invocation)>;

/// Answers whether a bound capability is available now (`rcip_host_bind`).
///
/// Answer through `rcip_availability_set(sink, ...)` and return 0; a
/// non-zero return (or no answer) means the check failed, shown as
/// `{"available": false, "reasonCode": "AVAILABILITY_CHECK_FAILED"}`.
/// `sink` is valid during the call only. Called on any thread that
/// refreshes or invokes, possibly concurrently, with no rcip lock held; it
/// may call rcip functions (a refresh it causes is queued behind the current
/// one).
pub type rcip_availability_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, sink: *mut rcip_availability_sink) -> i32>;

/// The host policy (`rcip_runtime_builder_set_policy`).
///
/// Called once per policy question (an invocation, an approved
/// confirmation's re-run, or a preflight proposal), on the thread driving
/// it, with no rcip lock held. `request` is owned by the policy from now
/// on: decide exactly once (`rcip_policy_request_decide` or
/// `rcip_policy_request_fail`), before returning or later from any thread,
/// and free it with `rcip_policy_request_free` (freeing it undecided
/// settles it as a policy failure).
pub type rcip_policy_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, request: *mut rcip_policy_request)>;

/// Receives one invocation outcome (`rcip_client_invoke`,
/// `rcip_host_resolve_confirmation`).
///
/// Called exactly once, possibly before the registering call returns, on the
/// thread that settles the invocation, with no rcip lock held; then
/// `user_data_free` runs. `outcome_json` (the outcome record, shapes at
/// `rcip_client_invoke`) is valid during the call only.
pub type rcip_outcome_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, outcome_json: *const c_char)>;

/// Receives one preflight report (`rcip_client_preflight`).
///
/// Called exactly once, possibly before `rcip_client_preflight` returns, on
/// the thread that settles the last proposal, with no rcip lock held; then
/// `user_data_free` runs. `report_json` is valid during the call only.
pub type rcip_report_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, report_json: *const c_char)>;

/// Receives each lifecycle event (`rcip_runtime_builder_add_event_observer`).
///
/// `event_json` is `{"timestamp", "invocationId", "capabilityId", "phase",
/// "errorCode"?}` (redacted: no input, output or message), valid during the
/// call only. Called on the thread where the event happens, possibly
/// concurrently, with no rcip lock held.
///
/// Sequences per invocation id: `requested`; then `failed` or `denied`
/// (a check before the handler failed: unknown, unbound or unavailable
/// capability, invalid input, policy), or `started` followed by
/// `succeeded` / `failed`, or `confirmation_requested`. A pending
/// confirmation then ends in `confirmation_declined`, `failed` (expired,
/// cancelled), `denied` (binding or context changed), or, when approved, a
/// re-run of the same invocation id that starts with `requested` again.
/// An invocation rejected before `requested` (id already active, input not
/// JSON) has no events. Count invocations by their last event, not by
/// `requested`.
/// Rule: PIPELINE.md sections 4 and 5.
pub type rcip_event_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, event_json: *const c_char)>;

/// Told when a confirmation opens and when it ends
/// (`rcip_runtime_builder_set_confirmation_callback`).
///
/// `notice_json` is `{"event": "opened", "confirmation": {"id", "title",
/// "description", "effect", "expiresAt"}, "invocationId", "capabilityId",
/// "input"}` or `{"event": "closed", "confirmationId", "invocationId",
/// "capabilityId", "reason": "approved" | "declined" | "expired" |
/// "cancelled" | "invalidated" | "closed"}`, valid during the call only.
/// Order: `opened` comes after the consumer's `confirmation_required`
/// outcome; `closed` comes after the confirmation's event and the resolving
/// call's outcome, except for `approved`, which comes first and is followed
/// by the approved re-run (its events and its outcome). A `closed` notice
/// never comes before its `opened` one: when the confirmation ends (on
/// another thread, or from inside the consumer's outcome callback) before
/// `opened` was delivered, `closed` is held back and delivered right after
/// it, on the thread that delivered `opened`.
/// Called on the thread where it happens (the timer thread for real-time
/// expiry), with no rcip lock held; it may resolve the confirmation inline.
pub type rcip_confirmation_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, notice_json: *const c_char)>;

/// Notified once per snapshot revision (`rcip_client_subscribe`).
///
/// Called on the refreshing thread after the snapshot of `revision` is
/// installed, with no rcip lock held; across threads the order is not
/// promised.
pub type rcip_subscriber_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, revision: u64)>;

/// The runtime's clock (`rcip_runtime_builder_set_clock`): epoch
/// milliseconds. Called from any thread; it must not call rcip functions on
/// the runtime (they answer `RCIP_RESULT_WRONG_CONTEXT`; `rcip_binding_free`
/// from here frees the handle without unbinding).
pub type rcip_clock_callback = Option<unsafe extern "C" fn(user_data: *mut c_void) -> i64>;

/// Generates an id for `prefix` (`"invocation"` or `"confirmation"`)
/// (`rcip_runtime_builder_set_id_generator`).
///
/// Answer with `rcip_string_sink_set(sink, id)` and return 0; a non-zero
/// return or no answer falls back to the built-in generator. `prefix` and
/// `sink` are valid during the call only. Called from any thread; it must
/// not call rcip functions on the runtime (`RCIP_RESULT_WRONG_CONTEXT`;
/// `rcip_binding_free` from here frees the handle without unbinding).
pub type rcip_id_generator_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, prefix: *const c_char, sink: *mut rcip_string_sink) -> i32>;

/// Runs once when a token is cancelled (`rcip_cancel_token_on_cancel`): on
/// the cancelling thread, or at once on the registering thread when the
/// token is already cancelled; no rcip lock held.
pub type rcip_cancel_callback = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// Host data and its release function.
pub(crate) struct UserData {
    ptr: *mut c_void,
    free: rcip_user_data_free_callback,
    armed: std::sync::atomic::AtomicBool,
}

// Safety: the header (rcip_user_data_free_callback and each callback type)
// tells the host that user_data is used from any thread, concurrently for
// callbacks documented so; honouring that is the host's obligation.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

impl UserData {
    pub(crate) fn new(ptr: *mut c_void, free: rcip_user_data_free_callback) -> UserData {
        UserData {
            ptr,
            free,
            armed: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// After a failed registration: the host keeps its data, so
    /// `user_data_free` must never run.
    pub(crate) fn disarm(&self) {
        self.armed.store(false, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn ptr(&self) -> *mut c_void {
        self.ptr
    }

    /// Releases the data now (once; the drop then does nothing), for data
    /// whose registration ends before its holder goes.
    pub(crate) fn release(&self) {
        if self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            if let Some(free) = self.free {
                // Safety: the host registered this pair; it is called once.
                unsafe { free(self.ptr) };
            }
        }
    }
}

impl Drop for UserData {
    fn drop(&mut self) {
        if !self.armed.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        if let Some(free) = self.free {
            // Safety: the host registered this pair; it is called once.
            unsafe { free(self.ptr) };
        }
    }
}

/// JSON text as a C string (JSON never holds a raw NUL).
pub(crate) fn c_json(json: &str) -> CString {
    let mut bytes = Vec::with_capacity(json.len() + 1);
    bytes.extend_from_slice(json.as_bytes());
    bytes.push(0);
    CString::from_vec_with_nul(bytes)
        .unwrap_or_else(|_| CString::new(json.replace('\0', "\\u0000")).unwrap_or_default())
}

/// A binding's two callbacks and their shared user data.
pub(crate) struct CBinding {
    pub handler: unsafe extern "C" fn(*mut c_void, *mut rcip_invocation),
    pub availability: Option<unsafe extern "C" fn(*mut c_void, *mut rcip_availability_sink) -> i32>,
    pub user_data: UserData,
}

// One allocation serves as the binding's handler and availability check.
impl Handler for CBinding {
    fn call(&self, invocation: Invocation) {
        let handle = rcip_invocation::into_handle(invocation);
        // Safety: the host's function with the host's data; the handle is
        // now owned by the handler.
        unsafe { (self.handler)(self.user_data.ptr(), handle) };
    }
}

/// A binding's C availability callback and its user data, kept in the
/// runtime's list of checks next to the binding (which keeps the user data
/// alive), so that a refresh calls it without going through the binding.
#[derive(Clone, Copy)]
pub(crate) struct DirectCheck {
    cb: unsafe extern "C" fn(*mut c_void, *mut rcip_availability_sink) -> i32,
    user_data: *mut c_void,
}

// Safety: as `UserData`: the host is told user_data is used from any thread.
unsafe impl Send for DirectCheck {}
unsafe impl Sync for DirectCheck {}

impl DirectCheck {
    pub(crate) fn of(binding: &CBinding) -> Option<DirectCheck> {
        binding.availability.map(|cb| DirectCheck {
            cb,
            user_data: binding.user_data.ptr(),
        })
    }

    /// As `CBinding::check`, except that the common answer, plainly
    /// available, is `None`: only a byte travels back then, not the whole
    /// answer (a refresh asks hundreds of checks).
    pub(crate) fn check_unless_plain(self) -> Option<Availability> {
        let mut sink = rcip_availability_sink::new();
        // Safety: the sink lives across the call, as documented.
        let rc = unsafe { (self.cb)(self.user_data, &mut sink) };
        if rc != 0 {
            return Some(Availability::check_failed());
        }
        match sink.peek() {
            Some(answer) if answer.is_plain_available() => None,
            Some(_) => sink.take(),
            None => Some(Availability::check_failed()),
        }
    }
}

impl AvailabilityCheck for CBinding {
    fn check(&self) -> Result<Availability, CheckFailed> {
        let Some(cb) = self.availability else {
            return Ok(Availability::available());
        };
        let mut sink = rcip_availability_sink::new();
        // Safety: the sink lives across the call, as documented.
        let rc = unsafe { cb(self.user_data.ptr(), &mut sink) };
        if rc != 0 {
            return Err(CheckFailed);
        }
        sink.take().ok_or(CheckFailed)
    }
}

pub(crate) struct CPolicy {
    pub cb: unsafe extern "C" fn(*mut c_void, *mut rcip_policy_request),
    pub user_data: UserData,
}

impl Policy for CPolicy {
    fn evaluate(&self, request: PolicyRequest) {
        let handle = Box::into_raw(Box::new(rcip_policy_request::new(request)));
        // Safety: the handle is now owned by the policy.
        unsafe { (self.cb)(self.user_data.ptr(), handle) };
    }
}

/// A one-shot JSON callback (outcome or report).
pub(crate) struct COnce {
    cb: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: UserData,
}

impl COnce {
    pub(crate) fn new(
        cb: unsafe extern "C" fn(*mut c_void, *const c_char),
        user_data: *mut c_void,
        user_data_free: rcip_user_data_free_callback,
    ) -> Box<COnce> {
        Box::new(COnce::inline(cb, user_data, user_data_free))
    }

    /// As `new`, unboxed (an invocation keeps it inline: `Sink::C`).
    pub(crate) fn inline(
        cb: unsafe extern "C" fn(*mut c_void, *const c_char),
        user_data: *mut c_void,
        user_data_free: rcip_user_data_free_callback,
    ) -> COnce {
        COnce {
            cb,
            user_data: UserData::new(user_data, user_data_free),
        }
    }

    /// Calls the callback with `json`, then releases the user data.
    pub(crate) fn call(self, json: &JsonText) {
        // Safety: the NUL-terminated text lives across the call.
        unsafe { (self.cb)(self.user_data.ptr(), json.as_c_ptr()) };
        // `self` drops here: user_data_free runs after the callback.
    }

    /// The registering call failed: the host keeps its data.
    pub(crate) fn disarm(self) {
        self.user_data.disarm();
    }
}

impl OutcomeSink for COnce {
    fn deliver(self: Box<Self>, json: &JsonText) {
        (*self).call(json)
    }

    fn refused(self: Box<Self>) {
        (*self).disarm()
    }
}

pub(crate) struct CEvents {
    pub cb: unsafe extern "C" fn(*mut c_void, *const c_char),
    pub user_data: UserData,
}

impl EventObserver for CEvents {
    fn on_event(&self, event: &LifecycleEvent) {
        let text = c_json(&event.to_json());
        // Safety: as above.
        unsafe { (self.cb)(self.user_data.ptr(), text.as_ptr()) };
    }
}

impl ConfirmationObserver for CEvents {
    fn on_confirmation(&self, json: &str) {
        let text = c_json(json);
        // Safety: as above.
        unsafe { (self.cb)(self.user_data.ptr(), text.as_ptr()) };
    }
}

pub(crate) struct CClock {
    pub cb: unsafe extern "C" fn(*mut c_void) -> i64,
    pub user_data: UserData,
}

impl Clock for CClock {
    fn now_ms(&self) -> i64 {
        // Safety: the host's function with the host's data.
        unsafe { (self.cb)(self.user_data.ptr()) }
    }
}

pub(crate) struct CIds {
    pub cb: unsafe extern "C" fn(*mut c_void, *const c_char, *mut rcip_string_sink) -> i32,
    pub user_data: UserData,
}

impl IdGenerator for CIds {
    fn generate(&self, prefix: &str) -> Option<String> {
        let prefix = CString::new(prefix).ok()?;
        let mut sink = rcip_string_sink::new();
        // Safety: prefix and sink live across the call.
        let rc = unsafe { (self.cb)(self.user_data.ptr(), prefix.as_ptr(), &mut sink) };
        if rc != 0 {
            return None;
        }
        sink.take()
    }
}

pub(crate) struct CSubscriber {
    pub cb: unsafe extern "C" fn(*mut c_void, u64),
    pub user_data: UserData,
}

impl Subscriber for CSubscriber {
    fn notify(&self, revision: u64) {
        // Safety: the host's function with the host's data.
        unsafe { (self.cb)(self.user_data.ptr(), revision) };
    }
}
