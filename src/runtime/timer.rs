//! The real-time expiry timer: the only thread the library owns
//! (PIPELINE.md section 7). One process-wide thread, started on first use,
//! serves every runtime that is not in manual-timer mode; it holds runtimes
//! weakly, so a freed runtime's timers simply lapse.

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

struct Timer {
    queue: Mutex<(BinaryHeap<Reverse<Due>>, u64)>,
    wake: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    static STARTED: OnceLock<()> = OnceLock::new();
    let t = TIMER.get_or_init(|| Timer { queue: Mutex::new((BinaryHeap::new(), 0)), wake: Condvar::new() });
    STARTED.get_or_init(|| {
        std::thread::Builder::new()
            .name("rcip-timer".into())
            .spawn(run)
            .expect("spawn the rcip timer thread");
    });
    t
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
    q.1 += 1;
    let seq = q.1;
    q.0.push(Reverse(Due { at: Instant::now() + delay, seq, runtime }));
    t.wake.notify_one();
}

fn run() {
    let t = timer();
    loop {
        let due = {
            let mut q = t.queue.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                let now = Instant::now();
                match q.0.peek() {
                    None => q = t.wake.wait(q).unwrap_or_else(|e| e.into_inner()),
                    Some(Reverse(first)) if first.at <= now => break q.0.pop().map(|Reverse(d)| d.runtime),
                    Some(Reverse(first)) => {
                        let wait = first.at - now;
                        q = t.wake.wait_timeout(q, wait).unwrap_or_else(|e| e.into_inner()).0;
                    }
                }
            }
        };
        let Some(runtime) = due.and_then(|w| w.upgrade()) else { continue };
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
    }
}
