//! What the host plugs into a runtime. Each trait has a blanket
//! implementation for closures, so a Rust host can pass a closure; the C ABI
//! implements them with trampolines over function pointers and user data.
//!
//! No callback is ever called while a runtime lock is held, and each may call
//! back into the runtime (PIPELINE.md section 7), except the clock and the
//! id generator, whose calls into a runtime fail with
//! [`HostError::WrongContext`](super::HostError::WrongContext).

use super::handles::{Invocation, PolicyRequest};
use super::types::{Availability, JsonText, LifecycleEvent};
use crate::foreign::{OnceText, SlotFn};

/// Runs a capability. It receives the completion handle and settles it
/// (complete or fail) exactly once, before returning or later from any
/// thread. Dropping the handle unsettled settles it as a failure.
pub trait Handler: Send + Sync {
    /// Runs one invocation; called once per invocation that reaches the
    /// handler (PIPELINE.md section 4), never under a runtime lock.
    fn call(&self, invocation: Invocation);
}

impl<F: Fn(Invocation) + Send + Sync> Handler for F {
    fn call(&self, invocation: Invocation) {
        self(invocation)
    }
}

/// An availability check that could not answer (an error return or no
/// answer written). The capability is then shown unavailable with
/// `AVAILABILITY_CHECK_FAILED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckFailed;

/// Answers whether a bound capability is available now. `Err(CheckFailed)`
/// means the check failed (shown as `AVAILABILITY_CHECK_FAILED`).
pub trait AvailabilityCheck: Send + Sync {
    /// The availability now (PIPELINE.md section 2); called during a
    /// refresh and before a handler runs, never under a runtime lock.
    fn check(&self) -> Result<Availability, CheckFailed>;
}

impl<F: Fn() -> Result<Availability, CheckFailed> + Send + Sync> AvailabilityCheck for F {
    fn check(&self) -> Result<Availability, CheckFailed> {
        self()
    }
}

/// The host policy. It receives a request handle and decides exactly once,
/// before returning or later from any thread. Dropping the handle undecided
/// settles it as a policy failure.
pub trait Policy: Send + Sync {
    /// Decides one request (`allow`, `deny`, `confirm`: PIPELINE.md
    /// section 4), never under a runtime lock.
    fn evaluate(&self, request: PolicyRequest);
}

impl<F: Fn(PolicyRequest) + Send + Sync> Policy for F {
    fn evaluate(&self, request: PolicyRequest) {
        self(request)
    }
}

/// Receives each lifecycle event (redacted: no input, output or message).
pub trait EventObserver: Send + Sync {
    /// One event, in the order the runtime emits them; `event` is lent for
    /// the call.
    fn on_event(&self, event: &LifecycleEvent);
}

impl<F: Fn(&LifecycleEvent) + Send + Sync> EventObserver for F {
    fn on_event(&self, event: &LifecycleEvent) {
        self(event)
    }
}

/// Told when a confirmation opens and when it ends, as JSON text
/// (PIPELINE.md section 5: `{"event": "opened", ...}` and
/// `{"event": "closed", ...}`).
pub trait ConfirmationObserver: Send + Sync {
    /// One notice as JSON text, lent for the call.
    fn on_confirmation(&self, json: &str);
}

impl<F: Fn(&str) + Send + Sync> ConfirmationObserver for F {
    fn on_confirmation(&self, json: &str) {
        self(json)
    }
}

/// The time source, in epoch milliseconds.
pub trait Clock: Send + Sync {
    /// Now, in epoch milliseconds. Calls into the runtime from here
    /// answer `WrongContext`.
    fn now_ms(&self) -> i64;
}

impl<F: Fn() -> i64 + Send + Sync> Clock for F {
    fn now_ms(&self) -> i64 {
        self()
    }
}

/// Generates invocation and confirmation ids for a prefix (`invocation`,
/// `confirmation`). `None` falls back to the built-in generator.
pub trait IdGenerator: Send + Sync {
    /// A new id for `prefix`, unique within the runtime; `None` uses the
    /// built-in generator. Calls into the runtime from here answer
    /// `WrongContext`.
    fn generate(&self, prefix: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String> + Send + Sync> IdGenerator for F {
    fn generate(&self, prefix: &str) -> Option<String> {
        self(prefix)
    }
}

/// Notified once per snapshot revision.
pub trait Subscriber: Send + Sync {
    /// The snapshot's new revision.
    fn notify(&self, revision: u64);
}

impl<F: Fn(u64) + Send + Sync> Subscriber for F {
    fn notify(&self, revision: u64) {
        self(revision)
    }
}

/// Receives one invocation outcome (or one preflight report) as JSON text.
/// `deliver` is called exactly once, unless the runtime refuses the call
/// that registered the sink (closed runtime, wrong context): then it calls
/// `refused` instead, and never `deliver`.
pub trait OutcomeSink: Send {
    /// The outcome (or report) as JSON text, lent for the call.
    fn deliver(self: Box<Self>, json: &JsonText);

    /// The registering call was refused; nothing will be delivered.
    fn refused(self: Box<Self>) {}
}

impl<F: FnOnce(&str) + Send> OutcomeSink for F {
    fn deliver(self: Box<Self>, json: &JsonText) {
        (*self)(json.as_str())
    }
}

/// Where an invocation's outcome goes: a boxed [`OutcomeSink`], or a C
/// callback kept inline, so that the C path allocates no box for it. Same
/// contract as `OutcomeSink`: one `deliver`, or one `refused`.
pub enum Sink {
    /// A Rust sink.
    Boxed(Box<dyn OutcomeSink>),
    /// A language binding's one-shot text callback (`rcip::foreign`).
    C(OnceText),
}

impl Sink {
    /// Delivers the outcome (the one call the sink gets).
    #[inline]
    pub fn deliver(self, json: &JsonText) {
        match self {
            Sink::Boxed(sink) => sink.deliver(json),
            Sink::C(sink) => sink.call(json.as_c_str()),
        }
    }

    /// The registering call was refused: nothing is delivered, and a
    /// binding's user data stays the binding's.
    #[inline]
    pub fn refused(self) {
        match self {
            Sink::Boxed(sink) => sink.refused(),
            Sink::C(sink) => sink.disarm(),
        }
    }
}

/// A foreign one-shot text callback as a boxed sink (preflight reports and
/// the other registrations that take an [`OutcomeSink`]).
impl OutcomeSink for OnceText {
    fn deliver(self: Box<Self>, json: &JsonText) {
        (*self).call(json.as_c_str())
    }

    fn refused(self: Box<Self>) {
        (*self).disarm()
    }
}

impl From<Box<dyn OutcomeSink>> for Sink {
    fn from(sink: Box<dyn OutcomeSink>) -> Sink {
        Sink::Boxed(sink)
    }
}

/// Where a foreign availability check writes its answer during the call
/// (the C ABI lends it as `rcip_availability_sink`). Valid for one call.
///
/// The common answer, plainly available (no reason), is a flag of its own
/// ([`AvailabilitySlot::set_plain_available`]), so a refresh asking
/// hundreds of checks writes and reads one byte per check (BENCHMARKS.md,
/// (h2)).
#[derive(Default)]
pub struct AvailabilitySlot {
    answer: Option<Availability>,
    plain: bool,
}

impl AvailabilitySlot {
    /// Records the answer; a later one replaces an earlier one.
    #[inline]
    pub fn set(&mut self, answer: Availability) {
        self.answer = Some(answer);
        self.plain = false;
    }

    /// Records "available, no reason" (the same answer as `set` with
    /// [`Availability::available`]); a later answer replaces it.
    #[inline]
    pub fn set_plain_available(&mut self) {
        self.answer = None;
        self.plain = true;
    }

    /// The answer, if the check gave one.
    #[inline]
    pub fn take(&mut self) -> Option<Availability> {
        if std::mem::take(&mut self.plain) {
            return Some(Availability::available());
        }
        self.answer.take()
    }
}

/// A binding's foreign availability check, kept in the runtime's list of
/// checks next to the binding (whose record keeps the user data alive), so
/// that a refresh calls it without the trait object.
pub type DirectCheck = SlotFn<AvailabilitySlot>;

/// Asks a foreign check. The common answer, plainly available, is `None`:
/// only a byte travels back then, not the whole answer (a refresh asks
/// hundreds of checks: BENCHMARKS.md, (h2)). A non-zero return or no answer
/// is a failed check.
#[inline]
pub fn check_unless_plain(check: DirectCheck) -> Option<Availability> {
    let mut slot = AvailabilitySlot::default();
    if check.call(&mut slot) != 0 {
        return Some(Availability::check_failed());
    }
    if slot.plain {
        return None;
    }
    match slot.answer {
        Some(answer) if answer.is_plain_available() => None,
        Some(answer) => Some(answer),
        None => Some(Availability::check_failed()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(code: &str) -> Availability {
        Availability {
            available: false,
            reason_code: Some(code.to_string()),
            reason: None,
        }
    }

    /// The plain flag and the full answer replace each other in call order,
    /// and both read back as the same answers `set` alone gives.
    #[test]
    fn a_later_answer_replaces_an_earlier_one() {
        let mut slot = AvailabilitySlot::default();
        assert_eq!(slot.take(), None);
        slot.set_plain_available();
        assert_eq!(slot.take(), Some(Availability::available()));
        assert_eq!(slot.take(), None, "take empties the slot");

        slot.set_plain_available();
        slot.set(reason("OFFLINE"));
        assert_eq!(slot.take(), Some(reason("OFFLINE")));

        slot.set(reason("OFFLINE"));
        slot.set_plain_available();
        assert_eq!(slot.take(), Some(Availability::available()));
        assert_eq!(slot.take(), None);
    }

    /// A foreign check's answer as a refresh reads it: plain is `None`
    /// whichever way it was written; a reason is kept; no answer or a
    /// non-zero return is a failed check.
    #[test]
    fn check_unless_plain_reads_each_kind_of_answer() {
        unsafe fn call(code: crate::foreign::Code, _: *mut std::ffi::c_void, slot: *mut AvailabilitySlot) -> i32 {
            let slot = &mut *slot;
            match code as usize {
                1 => slot.set_plain_available(),
                2 => slot.set(Availability::available()),
                3 => slot.set(reason("OFFLINE")),
                4 => {}
                _ => return 1,
            }
            0
        }
        let ask = |n: usize| {
            // Safety: `call` reads no user data.
            let check = unsafe { DirectCheck::new(n as crate::foreign::Code, call, std::ptr::null_mut()) };
            check_unless_plain(check)
        };
        assert_eq!(ask(1), None);
        assert_eq!(ask(2), None);
        assert_eq!(ask(3), Some(reason("OFFLINE")));
        assert_eq!(ask(4), Some(Availability::check_failed()));
        assert_eq!(ask(5), Some(Availability::check_failed()));
    }
}
