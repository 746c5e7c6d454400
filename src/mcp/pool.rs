//! The worker pool of MCP sessions and servers (**rcip**, docs/PIPELINE.md
//! section 7): validation, policies and handlers of `tools/call` run on
//! these threads, never on the thread that reads the transport, so one slow
//! call never delays a `ping` or another session's I/O.
//!
//! A fixed number of threads (named `rcip-mcp-worker`) take jobs from one
//! FIFO queue. The queue has no bound of its own: what feeds it is bounded
//! (the in-flight requests of each session, [`super::McpOptions::max_in_flight`]).
//! The threads end when the last handle to the pool is dropped and the
//! queue is empty; a job running then finishes first.

use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::Arc;

type Job = Box<dyn FnOnce() + Send>;

struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// A fixed pool of worker threads. Cheap to clone (a shared handle); the
/// threads stop once every handle is dropped and the queued jobs ran.
#[derive(Clone)]
pub struct WorkerPool {
    handle: Arc<Handle>,
}

/// Closes the queue when the last [`WorkerPool`] handle goes.
struct Handle {
    shared: Arc<Shared>,
    threads: usize,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.queue.lock().closed = true;
        self.shared.ready.notify_all();
    }
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool").field("threads", &self.handle.threads).finish()
    }
}

impl WorkerPool {
    /// Starts `threads` worker threads (at least one).
    pub fn new(threads: usize) -> std::io::Result<WorkerPool> {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        });
        for _ in 0..threads {
            let s = shared.clone();
            std::thread::Builder::new()
                .name("rcip-mcp-worker".into())
                .spawn(move || run(&s))?;
        }
        Ok(WorkerPool {
            handle: Arc::new(Handle { shared, threads }),
        })
    }

    /// The number of threads.
    pub fn threads(&self) -> usize {
        self.handle.threads
    }

    /// Queues `job`; it runs on a worker thread, in queue order.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        self.handle.shared.queue.lock().jobs.push_back(Box::new(job));
        self.handle.shared.ready.notify_one();
    }
}

fn run(shared: &Shared) {
    loop {
        let job = {
            let mut q = shared.queue.lock();
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                if q.closed {
                    return;
                }
                shared.ready.wait(&mut q);
            }
        };
        // A panicking job (a bug: host callbacks are guarded where they
        // are called) must not take the worker with it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn jobs_run_on_named_worker_threads_and_survive_a_panic() {
        let pool = WorkerPool::new(2).unwrap();
        let (tx, rx) = mpsc::channel();
        pool.spawn(|| panic!("a bug in a job"));
        for i in 0..10 {
            let tx = tx.clone();
            pool.spawn(move || {
                tx.send((i, std::thread::current().name().map(str::to_string))).unwrap();
            });
        }
        let mut seen: Vec<_> = (0..10).map(|_| rx.recv().unwrap()).collect();
        seen.sort_by_key(|s| s.0);
        assert_eq!(seen.len(), 10);
        assert!(seen.iter().all(|(_, name)| name.as_deref() == Some("rcip-mcp-worker")));
    }

    #[test]
    fn threads_end_after_the_last_handle_and_the_queued_jobs() {
        let pool = WorkerPool::new(1).unwrap();
        let (tx, rx) = mpsc::channel();
        let gate = Arc::new(parking_lot::Mutex::new(()));
        let held = gate.lock();
        let g = gate.clone();
        pool.spawn(move || drop(g.lock()));
        pool.spawn(move || tx.send(()).unwrap());
        drop(pool);
        drop(held);
        // The second job still runs after the handle is gone.
        rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
    }
}
