//! The library's one timer thread (`rcip-timer`, PIPELINE.md section 7).
//! One process-wide thread serves every runtime that is not in manual-timer
//! mode, and the jobs of [`crate::runtime::schedule_at`] (the MCP
//! sessions' elicitation deadlines: before, `rcip-mcp` ran a second timer
//! thread of its own with a copy of this queue). It holds runtimes weakly,
//! so a freed runtime's timers simply lapse. It starts when a wake-up or a
//! job is queued and ends after it has had nothing to do for
//! [`IDLE_EXIT`], so a process with nothing pending has no rcip thread.
//!
//! Contract: every function here may be called from any thread. No
//! callback and no job runs while the queue's lock (or a runtime's lock)
//! is held: a due entry is taken off the queue, the lock released, then it
//! is delivered. A runtime's wake-up runs that runtime's expiries here,
//! and with them the host callbacks an expiry makes runnable (the clock,
//! the confirmation observer, the expired invocation's outcome callback,
//! events), exactly as `run_due_timers` runs them on its caller's thread;
//! that is the one kind of host code this thread runs. A job must run no
//! host code and must not block: it hands its work to a worker of its own
//! (the MCP session's pool). Entries run in `(at, order queued)` order; a
//! panic in any of them is caught and the thread goes on.

use super::shared::{Shared, TimerGate, TimerWork};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// A job of [`crate::runtime::schedule_at`].
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// What a queued entry delivers.
enum Wake {
    /// A runtime's confirmation expiries.
    Runtime {
        runtime: Weak<Shared>,
        /// Passed before `runtime` is upgraded (see [`TimerGate`]).
        gate: Arc<TimerGate>,
    },
    /// A job of [`crate::runtime::schedule_at`].
    Job(Job),
}

struct Due {
    at: Instant,
    seq: u64,
    wake: Wake,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// How long the timer thread waits with nothing armed before it ends.
const IDLE_EXIT: Duration = Duration::from_secs(2);

struct Queue {
    due: BinaryHeap<Reverse<Due>>,
    seq: u64,
    running: bool,
}

struct Timer {
    queue: Mutex<Queue>,
    wake: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    TIMER.get_or_init(|| Timer {
        queue: Mutex::new(Queue {
            due: BinaryHeap::new(),
            seq: 0,
            running: false,
        }),
        wake: Condvar::new(),
    })
}

/// Arms a wake-up for `runtime` when its clock reaches `expires_at` (epoch
/// ms), measured from the runtime's clock now.
pub(crate) fn schedule(runtime: &Arc<Shared>, expires_at: i64) {
    let delay = expires_at.saturating_sub(runtime.now()).max(0) as u64;
    schedule_in(runtime, Duration::from_millis(delay));
}

/// Queues a wake-up for `runtime` after `delay`.
///
/// A runtime needs no wake-up later than one it has queued already: when
/// that one is delivered, `deliver` expires what is due and queues the
/// runtime's next deadline, which then includes every confirmation opened
/// before (each is registered before it is scheduled, and a wake-up is
/// taken off the queue under the same lock this check holds). So only a
/// deadline earlier than the runtime's queued one is pushed, and the thread
/// is woken only when the new wake-up is the first of the queue: it sleeps
/// until the first one anyway. (Before, every confirmation pushed an entry
/// and woke the thread, about 900 instructions and a futex round trip per
/// confirmation round trip; BENCHMARKS.md, target (f).)
fn schedule_in(runtime: &Arc<Shared>, delay: Duration) {
    let t = timer();
    let q = t.queue.lock().unwrap_or_else(|e| e.into_inner());
    let at = Instant::now() + delay;
    {
        let mut armed = runtime.timer_gate.armed.lock();
        // Without a running thread (its start failed), push and try again.
        if q.running && armed.is_some_and(|queued| queued <= at) {
            return;
        }
        *armed = Some(at);
    }
    let wake = Wake::Runtime {
        runtime: Arc::downgrade(runtime),
        gate: runtime.timer_gate.clone(),
    };
    push(t, q, at, wake);
}

/// Queues `job` to run on the timer thread at `at` (or soon after); see
/// [`crate::runtime::schedule_at`] for the contract.
pub(crate) fn schedule_job(at: Instant, job: Job) {
    let t = timer();
    let q = t.queue.lock().unwrap_or_else(|e| e.into_inner());
    push(t, q, at, Wake::Job(job));
}

/// Pushes one entry under the queue's lock (`q`), wakes the thread when the
/// entry is now the first (it sleeps until the first one anyway), and
/// starts the thread when none runs.
fn push(t: &'static Timer, mut q: std::sync::MutexGuard<'static, Queue>, at: Instant, wake: Wake) {
    q.seq += 1;
    let seq = q.seq;
    q.due.push(Reverse(Due { at, seq, wake }));
    if q.running {
        if q.due.peek().is_some_and(|Reverse(first)| first.seq == seq) {
            t.wake.notify_one();
        }
        return;
    }
    q.running = true;
    let spawned = std::thread::Builder::new().name("rcip-timer".into()).spawn(run);
    if spawned.is_err() {
        // No thread: the wake-ups stay queued for the next attempt, and
        // hosts can still expire confirmations with run_due_timers.
        q.running = false;
    }
}

fn run() {
    let t = timer();
    loop {
        let due = {
            let mut q = t.queue.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                let now = Instant::now();
                match q.due.peek() {
                    None => {
                        let (guard, timeout) = t.wake.wait_timeout(q, IDLE_EXIT).unwrap_or_else(|e| e.into_inner());
                        q = guard;
                        if timeout.timed_out() && q.due.is_empty() {
                            q.running = false;
                            return;
                        }
                    }
                    Some(Reverse(first)) if first.at <= now => {
                        break q.due.pop().map(|Reverse(d)| {
                            if let Wake::Runtime { gate, .. } = &d.wake {
                                // Off the queue: the runtime's next deadline
                                // is queued again by `deliver` or by a new
                                // confirmation, whichever comes first.
                                let mut armed = gate.armed.lock();
                                if *armed == Some(d.at) {
                                    *armed = None;
                                }
                            }
                            d.wake
                        });
                    }
                    Some(Reverse(first)) => {
                        let wait = first.at - now;
                        q = t.wake.wait_timeout(q, wait).unwrap_or_else(|e| e.into_inner()).0;
                    }
                }
            }
        };
        let (runtime, gate) = match due {
            Some(Wake::Runtime { runtime, gate }) => (runtime, gate),
            Some(Wake::Job(job)) => {
                // No panic may end the timer thread (as below).
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                continue;
            }
            None => continue,
        };
        // Admitted before the upgrade and released after every strong
        // reference is gone: a close either shuts the gate first (and this
        // expiry lapses) or waits here, so the runtime is never dropped on
        // this thread after its free returned.
        if !gate.enter() {
            continue;
        }
        // No panic may end the timer thread: expiries of other runtimes
        // depend on it. (The last reference to a runtime freed from its own
        // callback is dropped in `deliver`, and with it host user data.)
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| deliver(runtime)));
        gate.leave();
    }
}

/// Delivers one wake-up; every strong reference it takes is dropped when it
/// returns.
fn deliver(runtime: Weak<Shared>) {
    let Some(runtime) = runtime.upgrade() else { return };
    #[cfg(test)]
    if let Some(hook) = tests::AFTER_UPGRADE.lock().as_mut() {
        hook(&runtime);
    }
    // A closed runtime gets no more callbacks.
    if runtime.is_closed() {
        return;
    }
    let _work = TimerWork::begin(&runtime);
    // No panic may end the timer thread: expiries of other runtimes depend
    // on it.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let now = runtime.now();
        runtime.expire_due(now);
        // A host clock may lag the wall clock: wake again for what is still
        // pending.
        if let Some(next) = runtime.next_deadline() {
            if !runtime.is_closed() {
                let delay = next.saturating_sub(runtime.now()).max(1) as u64;
                schedule_in(&runtime, Duration::from_millis(delay));
            }
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::runtime::{Invocation, RuntimeBuilder};
    use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
    use std::sync::mpsc;

    /// Runs on the timer thread right after it upgraded a runtime's weak
    /// reference: the moment it holds a strong one.
    pub(super) type Hook = Box<dyn FnMut(&Arc<Shared>) + Send>;
    pub(super) static AFTER_UPGRADE: parking_lot::Mutex<Option<Hook>> = parking_lot::Mutex::new(None);

    struct Clock {
        now: Arc<AtomicI64>,
        released: Arc<AtomicBool>,
    }

    impl crate::runtime::callbacks::Clock for Clock {
        fn now_ms(&self) -> i64 {
            self.now.load(Ordering::SeqCst)
        }
    }

    impl Drop for Clock {
        fn drop(&mut self) {
            self.released.store(true, Ordering::SeqCst);
        }
    }

    /// A builder with a 50 ms confirmation TTL and a clock reading `now`
    /// that sets `released` when the runtime releases it.
    fn builder(catalog: &Catalog, now: &Arc<AtomicI64>, released: &Arc<AtomicBool>) -> RuntimeBuilder {
        let mut builder = RuntimeBuilder::new(catalog);
        builder.confirmation_ttl_ms(50).unwrap();
        builder.clock(Arc::new(Clock {
            now: now.clone(),
            released: released.clone(),
        }));
        builder
    }

    fn catalog() -> Catalog {
        Catalog::from_bytes(
            br#"{"protocolVersion": "1.0", "application": {"id": "a", "name": "A", "description": "A."},
                 "scopes": [], "capabilities": [
                   {"id": "visits.close", "title": "Close visit", "description": "Closes a visit.",
                    "scopeIds": [], "effect": "destructive",
                    "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#,
        )
        .unwrap()
    }

    /// Binds the destructive capability and invokes it: one confirmation
    /// pending, due 50 ms from the clock's now.
    fn open_confirmation(runtime: &crate::runtime::Runtime) {
        bind_close(runtime);
        invoke_close(runtime, "c1");
    }

    /// Binds the destructive capability with a handler that completes.
    fn bind_close(runtime: &crate::runtime::Runtime) {
        runtime
            .host()
            .bind(
                "visits.close",
                Arc::new(|inv: Invocation| inv.complete(serde_json::json!({})).unwrap()),
                None,
            )
            .unwrap()
            .detach();
    }

    /// Invokes the destructive capability as `id`; returns the id of the
    /// confirmation it opened.
    fn invoke_close(runtime: &crate::runtime::Runtime, id: &str) -> String {
        let outcome = Arc::new(parking_lot::Mutex::new(String::new()));
        let o = outcome.clone();
        runtime
            .client()
            .invoke(
                "visits.close",
                b"{}",
                Some(id),
                None,
                Box::new(move |json: &str| *o.lock() = json.to_string()),
            )
            .unwrap();
        assert!(outcome.lock().contains("confirmation_required"), "{}", outcome.lock());
        let v: serde_json::Value = serde_json::from_str(&outcome.lock()).unwrap();
        v["confirmation"]["id"].as_str().expect("a confirmation id").to_string()
    }

    /// `runtime::schedule_at`: jobs run on the one timer thread
    /// (`rcip-timer`), in order of their deadline, ties in the order they
    /// were queued, and a job that panics ends neither the thread nor the
    /// jobs behind it.
    #[test]
    fn jobs_run_on_the_timer_thread_in_deadline_order_past_a_panic() {
        let (tx, rx) = mpsc::channel::<(u32, Option<String>)>();
        let base = Instant::now() + Duration::from_millis(40);
        crate::runtime::schedule_at(base - Duration::from_millis(5), || panic!("a job that panics"));
        for (n, at) in [(3u32, base + Duration::from_millis(30)), (1, base), (2, base)] {
            let tx = parking_lot::Mutex::new(tx.clone());
            crate::runtime::schedule_at(at, move || {
                let name = std::thread::current().name().map(str::to_string);
                let _ = tx.lock().send((n, name));
            });
        }
        let got: Vec<(u32, Option<String>)> = (0..3)
            .map(|_| rx.recv_timeout(Duration::from_secs(5)).expect("every job ran"))
            .collect();
        assert!(Instant::now() >= base + Duration::from_millis(30), "no job ran early");
        let order: Vec<u32> = got.iter().map(|(n, _)| *n).collect();
        assert_eq!(order, vec![1, 2, 3]);
        for (_, name) in &got {
            assert_eq!(name.as_deref(), Some("rcip-timer"));
        }
    }

    /// A confirmation whose deadline is later than the runtime's queued
    /// wake-up queues none of its own (`schedule_in`); it must still expire
    /// on time when the confirmation that queued the wake-up was resolved
    /// before it: the wake-up then finds nothing due and queues the next
    /// deadline. Real clock, 40 ms TTL; a third runtime's later deadline in
    /// between checks that the skip is per runtime.
    #[test]
    fn a_later_deadline_expires_after_the_earlier_one_was_resolved() {
        let expired = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
        let make = |ttl: u64| {
            let e = expired.clone();
            let mut builder = RuntimeBuilder::new(&catalog());
            builder.confirmation_ttl_ms(ttl).unwrap();
            builder.confirmation_observer(Arc::new(move |json: &str| {
                if json.contains("\"reason\":\"expired\"") {
                    e.lock().push(json.to_string());
                }
            }));
            builder.build()
        };
        let runtime = make(40);
        let other = make(60_000);
        bind_close(&runtime);
        bind_close(&other);
        let first = invoke_close(&runtime, "first");
        invoke_close(&other, "other");
        std::thread::sleep(Duration::from_millis(10));
        let second = invoke_close(&runtime, "second");
        runtime
            .host()
            .resolve_confirmation(&first, true, Box::new(|_: &str| {}))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while expired.lock().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let got = expired.lock().clone();
        assert_eq!(got.len(), 1, "one expiry: {got:?}");
        assert!(got[0].contains(&second), "the second confirmation expired: {got:?}");
        assert!(!runtime.host().confirmation_pending(&second));
        assert!(other.host().confirmation_pending(&invoke_close(&other, "other-2")));
    }

    /// PIPELINE.md section 9: the runtime's user data is released before
    /// the free returns. The timer thread here holds a strong reference to
    /// the runtime (taken to deliver a due confirmation) when the free
    /// starts; the free must wait for it to let go, so that the runtime is
    /// not dropped on the timer thread afterwards. Before the gate, the free
    /// returned at once and the clock was released later, on the timer
    /// thread (found by stress-short).
    #[test]
    fn the_free_waits_for_the_timer_threads_reference() {
        let now = Arc::new(AtomicI64::new(1_000_000));
        let released = Arc::new(AtomicBool::new(false));
        let runtime = builder(&catalog(), &now, &released).build();
        open_confirmation(&runtime);

        let target = Arc::as_ptr(&runtime.shared) as usize;
        let (held_tx, held_rx) = mpsc::channel::<()>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        *AFTER_UPGRADE.lock() = Some(Box::new(move |rt: &Arc<Shared>| {
            if Arc::as_ptr(rt) as usize == target {
                let _ = held_tx.send(());
                // Long enough for a free that does not wait to return.
                let _ = go_rx.recv_timeout(Duration::from_millis(300));
            }
        }));
        now.fetch_add(50, Ordering::SeqCst);
        held_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the timer thread took the runtime to expire the confirmation");
        drop(runtime);
        let released_at_return = released.load(Ordering::SeqCst);
        let _ = go_tx.send(());
        *AFTER_UPGRADE.lock() = None;
        assert!(
            released_at_return,
            "the free returned while the timer thread still held the runtime"
        );
    }

    /// As above, when the runtime was closed before its free: a Rust host's
    /// `close` from a callback on the timer thread (which cannot wait for
    /// itself), then the drop on another thread while that callback still
    /// runs. The second close must wait for the timer thread too.
    #[test]
    fn a_free_after_a_close_on_the_timer_thread_waits_for_it() {
        use crate::runtime::Runtime;
        let now = Arc::new(AtomicI64::new(1_000_000));
        let released = Arc::new(AtomicBool::new(false));
        let slot: Arc<parking_lot::Mutex<Option<std::sync::Weak<Runtime>>>> = Arc::default();
        let (closed_tx, closed_rx) = mpsc::channel::<()>();
        let closed_tx = parking_lot::Mutex::new(closed_tx);
        let s2 = slot.clone();
        let mut builder = builder(&catalog(), &now, &released);
        builder.confirmation_observer(Arc::new(move |json: &str| {
            if json.contains("\"reason\":\"expired\"") {
                let runtime = s2.lock().as_ref().and_then(|w| w.upgrade());
                if let Some(runtime) = runtime {
                    runtime.close();
                }
                let _ = closed_tx.lock().send(());
                // Long enough for a free that does not wait to return.
                std::thread::sleep(Duration::from_millis(300));
            }
        }));
        let runtime = Arc::new(builder.build());
        *slot.lock() = Some(Arc::downgrade(&runtime));
        open_confirmation(&runtime);
        now.fetch_add(50, Ordering::SeqCst);
        closed_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the confirmation expired on the timer thread");
        drop(runtime);
        assert!(
            released.load(Ordering::SeqCst),
            "the free returned while the timer thread still held the runtime"
        );
    }
}
