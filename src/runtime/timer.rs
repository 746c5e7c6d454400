//! The real-time expiry timer: the only thread the library owns
//! (PIPELINE.md section 7). One process-wide thread serves every runtime
//! that is not in manual-timer mode; it holds runtimes weakly, so a freed
//! runtime's timers simply lapse. It starts when a wake-up is armed and
//! ends after it has had nothing to do for [`IDLE_EXIT`], so a process with
//! no pending confirmation has no rcip thread.

use super::shared::Shared;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

struct Due {
    at: Instant,
    seq: u64,
    runtime: Weak<Shared>,
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
    schedule_in(Arc::downgrade(runtime), Duration::from_millis(delay));
}

fn schedule_in(runtime: Weak<Shared>, delay: Duration) {
    let t = timer();
    let mut q = t.queue.lock().unwrap_or_else(|e| e.into_inner());
    q.seq += 1;
    let seq = q.seq;
    q.due.push(Reverse(Due {
        at: Instant::now() + delay,
        seq,
        runtime,
    }));
    if q.running {
        t.wake.notify_one();
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
                    Some(Reverse(first)) if first.at <= now => break q.due.pop().map(|Reverse(d)| d.runtime),
                    Some(Reverse(first)) => {
                        let wait = first.at - now;
                        q = t.wake.wait_timeout(q, wait).unwrap_or_else(|e| e.into_inner()).0;
                    }
                }
            }
        };
        let Some(runtime) = due.and_then(|w| w.upgrade()) else {
            continue;
        };
        // A closed runtime gets no more callbacks; a close that starts now
        // waits until this work is done.
        let Some(work) = runtime.timer_work() else { continue };
        // No panic may end the timer thread: expiries of other runtimes
        // depend on it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let now = runtime.now();
            runtime.expire_due(now);
            // A host clock may lag the wall clock: wake again for what is
            // still pending.
            if let Some(next) = runtime.next_deadline() {
                if !runtime.is_closed() {
                    let delay = next.saturating_sub(runtime.now()).max(1) as u64;
                    schedule_in(Arc::downgrade(&runtime), Duration::from_millis(delay));
                }
            }
        }));
        drop(work);
    }
}
