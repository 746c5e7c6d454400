//! Waitable outcomes (**rcip**): a [`Pending`] receives the one outcome of
//! an invocation, a confirmation resolution or a preflight (its report),
//! and hands it over exactly once: to [`Pending::wait`] (from any thread,
//! with a timeout) or to a callback attached with [`Pending::on_ready`].
//! Dropping it before that keeps every guarantee: the outcome still
//! arrives, at nobody, and nothing leaks.

use super::callbacks::OutcomeSink;
use super::shared::{in_callback_of, Shared};
use super::types::{JsonText, Outcome, PreflightReport};
use parking_lot::{Condvar, Mutex};
use std::sync::{Arc, Weak};

/// A timeout that never ends (`u64::MAX` milliseconds).
pub const WAIT_FOREVER: u64 = u64::MAX;

/// Where [`Pending::on_ready`] sends the outcome.
pub type ReadyCallback = Box<dyn OutcomeSink>;

enum State {
    /// No outcome yet, nobody to hand it to but a waiter.
    Waiting,
    /// The outcome, not handed over yet.
    Ready(JsonText),
    /// A callback will receive it.
    Callback(ReadyCallback),
    /// Handed over (to a waiter or a callback), or the handle was dropped.
    Done,
}

struct Slot {
    state: Mutex<State>,
    ready: Condvar,
    /// The runtime's shared state, for the context checks.
    #[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
    runtime: Weak<Shared>,
    #[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
    runtime_key: usize,
}

/// Why [`Pending::wait`] gave no outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitError {
    /// The timeout passed first; the outcome may still come.
    TimedOut,
    /// The outcome was already handed over (to a wait or a callback), or a
    /// callback is attached.
    AlreadyUsed,
    /// Waiting here could deadlock: inside a callback of the same runtime,
    /// or on the thread that runs its manual timers.
    WrongContext,
}

impl std::fmt::Display for WaitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WaitError::TimedOut => "no outcome yet: the wait's timeout passed first",
            WaitError::AlreadyUsed => "the outcome was already taken, or a callback is attached",
            WaitError::WrongContext => {
                "waiting here could deadlock (inside a callback of the same runtime, or on its manual-timer thread)"
            }
        })
    }
}

impl std::error::Error for WaitError {}

/// Why a typed wait ([`Pending::wait_outcome`], [`Pending::wait_report`])
/// gave no record.
#[derive(Debug)]
pub enum RecordWaitError {
    /// [`Pending::wait`] gave nothing (timed out, already used, wrong
    /// context); the record, if it comes, can still be taken when this is
    /// [`WaitError::TimedOut`].
    Wait(WaitError),
    /// The record arrived but is not the type asked for: a preflight
    /// report waited for as an outcome, or the reverse (a record rcip
    /// wrote that its own type does not read would be a bug in rcip). The
    /// record was taken: `text` is the delivered JSON, so nothing is lost,
    /// and `error` is serde_json's reason.
    Unreadable {
        /// The delivered JSON text, as [`Pending::wait`] would have given it.
        text: JsonText,
        /// Why it does not read as the type asked for.
        error: serde_json::Error,
    },
}

impl std::fmt::Display for RecordWaitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordWaitError::Wait(e) => e.fmt(f),
            RecordWaitError::Unreadable { error, .. } => {
                write!(f, "the delivered record is not the type asked for: {error}")
            }
        }
    }
}

impl std::error::Error for RecordWaitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordWaitError::Wait(e) => Some(e),
            RecordWaitError::Unreadable { error, .. } => Some(error),
        }
    }
}

impl From<WaitError> for RecordWaitError {
    fn from(e: WaitError) -> RecordWaitError {
        RecordWaitError::Wait(e)
    }
}

/// The pending outcome of one invoke, resolve or preflight call.
pub struct Pending {
    slot: Arc<Slot>,
}

struct PendingSink {
    slot: Arc<Slot>,
}

impl OutcomeSink for PendingSink {
    fn deliver(self: Box<Self>, json: &JsonText) {
        let slot = &self.slot;
        let mut st = slot.state.lock();
        match std::mem::replace(&mut *st, State::Done) {
            State::Waiting => {
                *st = State::Ready(json.clone());
                drop(st);
                slot.ready.notify_all();
            }
            State::Callback(cb) => {
                // Never call host code under the slot's lock.
                drop(st);
                cb.deliver(json);
            }
            // Dropped before the outcome came: it goes to nobody.
            other => *st = other,
        }
    }
}

impl Pending {
    /// A new pending outcome for a call on `runtime`, and the sink to pass
    /// to that call.
    pub(crate) fn new(runtime: &Arc<Shared>) -> (Pending, Box<dyn OutcomeSink>) {
        let slot = Arc::new(Slot {
            state: Mutex::new(State::Waiting),
            ready: Condvar::new(),
            runtime: Arc::downgrade(runtime),
            runtime_key: Arc::as_ptr(runtime) as usize,
        });
        let sink = Box::new(PendingSink { slot: slot.clone() });
        (Pending { slot }, sink)
    }

    /// True when the outcome has arrived and was not handed over yet.
    pub fn is_ready(&self) -> bool {
        matches!(*self.slot.state.lock(), State::Ready(_))
    }

    /// True when waiting on this thread could deadlock (without threads a
    /// wait never blocks, so it is not asked).
    #[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
    fn wrong_context(&self) -> bool {
        if in_callback_of(self.slot.runtime_key) {
            return true;
        }
        self.slot.runtime.upgrade().is_some_and(|r| r.is_manual_timer_thread())
    }

    /// Waits up to `timeout_ms` milliseconds ([`WAIT_FOREVER`]: no limit;
    /// 0: a poll that never blocks) and takes the outcome.
    ///
    /// On a platform without threads (`wasm32-unknown-unknown`,
    /// [`crate::platform`]) nothing could deliver the outcome while this
    /// thread waits: a wait with a timeout for an outcome that has not
    /// arrived answers [`WaitError::WrongContext`] at once (a poll still
    /// answers `TimedOut`).
    pub fn wait(&self, timeout_ms: u64) -> Result<JsonText, WaitError> {
        #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
        return self.wait_blocking(timeout_ms);
        #[cfg(all(target_family = "wasm", target_os = "unknown"))]
        return self.take_without_waiting(timeout_ms);
    }

    /// [`wait`](Self::wait) for an invocation's (or a confirmation
    /// resolution's) outcome, read into its Rust type, [`Outcome`]: the
    /// same timeout, the same one hand-over, and on the same threads.
    ///
    /// # Errors
    ///
    /// [`RecordWaitError::Wait`] with what `wait` answers;
    /// [`RecordWaitError::Unreadable`] (with the text) when this pending
    /// holds a preflight report.
    pub fn wait_outcome(&self, timeout_ms: u64) -> Result<Outcome, RecordWaitError> {
        let text = self.wait(timeout_ms)?;
        Outcome::from_json(text.as_str()).map_err(|error| RecordWaitError::Unreadable { text, error })
    }

    /// [`wait`](Self::wait) for a preflight's report, read into its Rust
    /// type, [`PreflightReport`] (as [`wait_outcome`](Self::wait_outcome)
    /// for outcomes).
    ///
    /// # Errors
    ///
    /// [`RecordWaitError::Wait`] with what `wait` answers;
    /// [`RecordWaitError::Unreadable`] (with the text) when this pending
    /// holds an invocation outcome.
    pub fn wait_report(&self, timeout_ms: u64) -> Result<PreflightReport, RecordWaitError> {
        let text = self.wait(timeout_ms)?;
        PreflightReport::from_json(text.as_str()).map_err(|error| RecordWaitError::Unreadable { text, error })
    }

    /// [`wait`](Self::wait) without threads: takes what is there.
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    fn take_without_waiting(&self, timeout_ms: u64) -> Result<JsonText, WaitError> {
        let mut st = self.slot.state.lock();
        match std::mem::replace(&mut *st, State::Done) {
            State::Ready(json) => Ok(json),
            State::Waiting => {
                *st = State::Waiting;
                Err(if timeout_ms == 0 {
                    WaitError::TimedOut
                } else {
                    WaitError::WrongContext
                })
            }
            other => {
                *st = other;
                Err(WaitError::AlreadyUsed)
            }
        }
    }

    /// [`wait`](Self::wait) where the platform has threads.
    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    fn wait_blocking(&self, timeout_ms: u64) -> Result<JsonText, WaitError> {
        if timeout_ms > 0 && !self.is_ready() && self.wrong_context() {
            return Err(WaitError::WrongContext);
        }
        let deadline = if timeout_ms == WAIT_FOREVER {
            None
        } else {
            crate::platform::wait_deadline(timeout_ms)
        };
        let mut st = self.slot.state.lock();
        loop {
            match std::mem::replace(&mut *st, State::Done) {
                State::Ready(json) => return Ok(json),
                State::Waiting => *st = State::Waiting,
                other => {
                    *st = other;
                    return Err(WaitError::AlreadyUsed);
                }
            }
            if timeout_ms == 0 {
                return Err(WaitError::TimedOut);
            }
            match deadline {
                None => self.slot.ready.wait(&mut st),
                Some(at) => {
                    if self.slot.ready.wait_until(&mut st, at).timed_out() {
                        if let State::Ready(_) = &*st {
                            continue;
                        }
                        return Err(WaitError::TimedOut);
                    }
                }
            }
        }
    }

    /// Hands the outcome to `callback` instead: at once on this thread when
    /// it has arrived, else on the thread that delivers it. The callback
    /// keeps its claim when the handle is dropped afterwards. Fails (and
    /// tells `callback` it was refused) when the outcome was already handed
    /// over or a callback is attached.
    pub fn on_ready(&self, callback: ReadyCallback) -> Result<(), WaitError> {
        let mut st = self.slot.state.lock();
        match std::mem::replace(&mut *st, State::Done) {
            State::Waiting => {
                *st = State::Callback(callback);
                drop(st);
                // A wait blocked on another thread now answers AlreadyUsed.
                self.slot.ready.notify_all();
                Ok(())
            }
            State::Ready(json) => {
                drop(st);
                callback.deliver(&json);
                Ok(())
            }
            other => {
                *st = other;
                drop(st);
                callback.refused();
                Err(WaitError::AlreadyUsed)
            }
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // An unread outcome is released; an attached callback keeps its
        // claim; a later outcome goes to nobody.
        let old = {
            let mut st = self.slot.state.lock();
            match &*st {
                State::Callback(_) => None,
                _ => Some(std::mem::replace(&mut *st, State::Done)),
            }
        };
        drop(old);
    }
}
