//! One process-wide timer thread (`rcip-mcp-timer`) for the MCP sessions'
//! own deadlines (an elicitation whose confirmation may have expired). It
//! runs no host code itself: each due job hands its work to the session's
//! worker pool, or runs it when the session has none.

use once_cell::sync::Lazy;
use parking_lot::{Condvar, Mutex};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

type Job = Box<dyn FnOnce() + Send>;

struct Entry {
    at: Instant,
    seq: u64,
    job: Job,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

struct Timer {
    heap: Mutex<(BinaryHeap<Reverse<Entry>>, u64, bool)>,
    wake: Condvar,
}

static TIMER: Lazy<Timer> = Lazy::new(|| Timer {
    heap: Mutex::new((BinaryHeap::new(), 0, false)),
    wake: Condvar::new(),
});

/// Runs `job` on the timer thread at `at` (or soon after). Jobs must be
/// short: they hand real work to a pool.
pub(crate) fn schedule(at: Instant, job: impl FnOnce() + Send + 'static) {
    let t = &*TIMER;
    let mut h = t.heap.lock();
    if !h.2 {
        h.2 = std::thread::Builder::new()
            .name("rcip-mcp-timer".into())
            .spawn(run)
            .is_ok();
    }
    h.1 += 1;
    let seq = h.1;
    h.0.push(Reverse(Entry {
        at,
        seq,
        job: Box::new(job),
    }));
    t.wake.notify_one();
}

fn run() {
    let t = &*TIMER;
    loop {
        let job = {
            let mut h = t.heap.lock();
            loop {
                let now = Instant::now();
                match h.0.peek() {
                    Some(Reverse(e)) if e.at <= now => break h.0.pop().map(|Reverse(e)| e.job),
                    Some(Reverse(e)) => {
                        let at = e.at;
                        t.wake.wait_until(&mut h, at);
                    }
                    None => t.wake.wait(&mut h),
                }
            }
        };
        if let Some(job) = job {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        }
    }
}
