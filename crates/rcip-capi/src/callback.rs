//! Callback types, user data, and the trampolines that implement the
//! runtime's callback traits over C function pointers (docs/C-ABI.md, "Callbacks and user data").
//!
//! Every registration that keeps `user_data` takes a `user_data_free`
//! called exactly once, on the releasing thread with no lock held, after the
//! last callback of that registration has returned. If the registering call
//! fails, neither function is ever called.

use super::invocation::rcip_invocation;
use super::policy::rcip_policy_request;
use super::sink::{rcip_availability_sink, rcip_string_sink};
use rcip::foreign::{Code, Release};
pub(crate) use rcip::foreign::{OnceText, UserData};
use rcip::runtime::{
    Availability, AvailabilityCheck, AvailabilitySlot, CheckFailed, Clock, ConfirmationObserver, DirectCheck,
    EventObserver, Handler, IdGenerator, Invocation, LifecycleEvent, Policy, PolicyRequest, Subscriber,
};
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

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
/// settles it as a policy failure). The request is read through its
/// accessors (`rcip_policy_request_capability_id`, `_effect`,
/// `_scope_is_active`, ...) and answered with `rcip_policy_request_allow`,
/// `_deny`, `_confirm` or `_decide_default`; no JSON is needed.
pub type rcip_policy_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, request: *mut rcip_policy_request)>;

/// Receives one invocation outcome (`rcip_client_invoke`,
/// `rcip_host_resolve_confirmation`).
///
/// Called exactly once, possibly before the registering call returns, on the
/// thread that settles the invocation, with no rcip lock held; then
/// `user_data_free` runs. `outcome_json` (the outcome record, shapes at
/// `rcip_client_invoke`) is valid during the call only; `rcip_record_parse`
/// reads its fields into a record that may be kept past the call.
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
/// `requested`. `rcip_record_parse` reads the phase, error code and ids
/// without a JSON parser.
/// Rule: PIPELINE.md sections 4 and 5.
pub type rcip_event_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, event_json: *const c_char)>;

/// Receives one access record of an MCP HTTP server
/// (`rcip_mcp_server_set_access_log`), as JSON text: `{"time" (RFC 3339
/// UTC with milliseconds), "peer", "forwardedFor"? (only from a peer in the
/// `trustedProxies` option), "subject"? (with `auth`), "era"? (`"legacy"`
/// or `"stateless"`), "httpMethod", "path", "rpcMethod"?, "tool"?,
/// "status", "durationUs"}`; texts a client sent are cut to 256 bytes.
///
/// Called on the server's access-log thread (`rcip-mcp-log`), never an I/O
/// or worker thread, one record at a time, in the order answered; while it
/// runs, at most 4096 more records wait (then they are dropped and counted
/// in `rcip_mcp_server_access_log_dropped`). `record_json` is valid during
/// the call. It may call any rcip function but `rcip_mcp_server_shutdown`,
/// `rcip_mcp_server_drain`, `rcip_mcp_server_set_access_log` and
/// `rcip_mcp_server_free` of its server.
pub type rcip_mcp_access_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, record_json: *const c_char)>;

/// Checks one opaque access token for an MCP HTTP server whose `auth`
/// option says `"verifier": true` (`rcip_mcp_server_set_token_verifier`;
/// docs/MCP.md "Authorization"): RFC 7662 introspection or a lookup in the
/// host's own store. It must establish that the token was issued for this
/// server (its audience).
///
/// Answers, by return value:
/// - `0`, admitted: `rcip_string_sink_set(answer, principal_json)` with
///   `{"issuer", "subject", "scopes"?: [...], "claims"?: {...},
///   "expiresAt"?: <seconds since the Unix epoch> | null}` (issuer and
///   subject non-empty, without spaces; another field is refused). A
///   missing or malformed principal answers the client `503` and the
///   server counts it as `unavailable`.
/// - `1`, refused: `401` `invalid_token`; the answer, if set, is the
///   `error_description` (cut to 256 bytes, quotes and controls replaced).
/// - any other value, unavailable (the introspection endpoint is down):
///   `503` with `Retry-After`; the answer, if set, is part of the message.
///
/// The result is remembered for the token until `expiresAt` (at most an
/// hour) or 60 seconds without it; a token past its `expiresAt` is refused
/// as expired. Called on the server's control thread, never an I/O
/// thread, one check at a time beside session creation and endings, with
/// no rcip lock held: keep it short (return 2 when a remote check times
/// out). `token` and `answer` are valid during the call only. It may call
/// any rcip function but `rcip_mcp_server_shutdown`,
/// `rcip_mcp_server_drain`, `rcip_mcp_server_set_token_verifier` and
/// `rcip_mcp_server_free` of its server.
pub type rcip_mcp_token_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, token: *const c_char, answer: *mut rcip_string_sink) -> i32>;

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
/// by the approved re-run (its events and its outcome).
/// One rule for an ending that starts before `opened` returned (resolved or
/// cancelled inline from the `opened` notice, from the consumer's outcome
/// callback, or on another thread): nothing of the ending reaches this
/// callback while `opened` runs. Its `closed` notice is held back and
/// delivered right after `opened` returns, on the thread that delivered
/// `opened`; an approval's re-run (policy, handler, events, outcome) waits
/// with it and runs there right after that `closed` notice, so the resolving
/// call returns OK before the approved outcome exists (do not block on that
/// outcome inside `opened`). A decline's event and outcome come inside the
/// resolving call, as usual; a token cancelled inside `opened` ends the
/// confirmation once `opened` returned. If the runtime closes before the
/// held re-run starts, the re-run ends `failed EXECUTION_ABORTED` (after its
/// `failed` event), the resolving call's one outcome.
/// Called on the thread where it happens (the timer thread for real-time
/// expiry), with no rcip lock held; it may resolve the confirmation inline
/// (but not block in `rcip_pending_wait` there: `RCIP_RESULT_WRONG_CONTEXT`).
/// `rcip_record_parse` reads the notice kind, confirmation id, expiry and
/// reason without a JSON parser.
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

impl CBinding {
    /// Makes the record of a C binding and hands `register` the views the
    /// runtime keeps of it (the handler, the availability check if there is
    /// one, and its direct form). When `register` fails, the record's
    /// `user_data_free` is disarmed: a failed registration never calls it
    /// (header, `rcip_host_bind`).
    pub(crate) fn register<T, E>(
        handler: unsafe extern "C" fn(*mut c_void, *mut rcip_invocation),
        availability: Option<unsafe extern "C" fn(*mut c_void, *mut rcip_availability_sink) -> i32>,
        user_data: UserData,
        register: impl FnOnce(Arc<dyn Handler>, Option<Arc<dyn AvailabilityCheck>>, Option<DirectCheck>) -> Result<T, E>,
    ) -> Result<T, E> {
        let callbacks = Arc::new(CBinding {
            handler,
            availability,
            user_data,
        });
        let check = availability.map(|_| callbacks.clone() as Arc<dyn AvailabilityCheck>);
        let direct = callbacks.direct_check();
        let result = register(callbacks.clone() as Arc<dyn Handler>, check, direct);
        if result.is_err() {
            callbacks.user_data.disarm();
        }
        result
    }

    /// The availability callback in the form the runtime keeps in its list
    /// of checks (a refresh calls it without the trait object); the binding
    /// record, which owns the user data, outlives it.
    pub(crate) fn direct_check(&self) -> Option<DirectCheck> {
        self.availability.map(|cb| {
            // Safety: the header tells the host that user_data is used from
            // any thread; the binding record keeps it alive (see above); the
            // trampoline is the one for this function's type.
            unsafe { DirectCheck::new(cb as Code, call_availability, self.user_data.ptr()) }
        })
    }
}

impl AvailabilityCheck for CBinding {
    fn check(&self) -> Result<Availability, CheckFailed> {
        let Some(cb) = self.availability else {
            return Ok(Availability::available());
        };
        let mut slot = AvailabilitySlot::default();
        // Safety: the sink lives across the call, as documented.
        let rc = unsafe { cb(self.user_data.ptr(), rcip_availability_sink::lend(&mut slot)) };
        if rc != 0 {
            return Err(CheckFailed);
        }
        slot.take().ok_or(CheckFailed)
    }
}

pub(crate) struct CPolicy {
    pub cb: unsafe extern "C" fn(*mut c_void, *mut rcip_policy_request),
    pub user_data: UserData,
}

impl Policy for CPolicy {
    fn evaluate(&self, request: PolicyRequest) {
        let handle = rcip_policy_request::into_handle(request);
        // Safety: the handle is now owned by the policy.
        unsafe { (self.cb)(self.user_data.ptr(), handle) };
    }
}

/// A one-shot outcome or report callback (`rcip_outcome_callback`,
/// `rcip_report_callback`) in the runtime's neutral form.
pub(crate) fn once_text(
    cb: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> OnceText {
    // Safety: the header tells the host that the callback and its data are
    // used from any thread; the trampoline is the one for this type.
    unsafe { OnceText::new(cb as Code, call_text, c_user_data(user_data, user_data_free)) }
}

/// Host data with its C release function, in the runtime's neutral form.
pub(crate) fn c_user_data(user_data: *mut c_void, user_data_free: rcip_user_data_free_callback) -> UserData {
    // Safety: the header tells the host that the release function is called
    // once, from any thread; the trampoline is the one for its type.
    let free = user_data_free.map(|f| unsafe { Release::new(f as Code, call_release) });
    UserData::new(user_data, free)
}

// The trampolines the runtime calls foreign functions through
// (rcip::foreign): each turns the erased pointer back into the exported
// callback type it was made from.

/// Safety: `code` is an `rcip_user_data_free_callback` function.
unsafe fn call_release(code: Code, user_data: *mut c_void) {
    let f = std::mem::transmute::<Code, unsafe extern "C" fn(*mut c_void)>(code);
    f(user_data)
}

/// Safety: `code` is an `rcip_outcome_callback` / `rcip_report_callback`.
unsafe fn call_text(code: Code, user_data: *mut c_void, text: *const c_char) {
    let f = std::mem::transmute::<Code, unsafe extern "C" fn(*mut c_void, *const c_char)>(code);
    f(user_data, text)
}

/// Safety: `code` is an `rcip_availability_callback`. The runtime lends an
/// `AvailabilitySlot`, which the header's `rcip_availability_sink *` names
/// (sink.rs).
unsafe fn call_availability(code: Code, user_data: *mut c_void, slot: *mut AvailabilitySlot) -> i32 {
    let f = std::mem::transmute::<Code, unsafe extern "C" fn(*mut c_void, *mut rcip_availability_sink) -> i32>(code);
    f(user_data, slot.cast())
}

/// As [`once_text`], boxed as an [`OutcomeSink`].
pub(crate) fn boxed_once_text(
    cb: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> Box<OnceText> {
    Box::new(once_text(cb, user_data, user_data_free))
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
        let mut slot = None;
        // Safety: prefix and sink live across the call.
        let rc = unsafe { (self.cb)(self.user_data.ptr(), prefix.as_ptr(), rcip_string_sink::lend(&mut slot)) };
        if rc != 0 {
            return None;
        }
        slot
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
