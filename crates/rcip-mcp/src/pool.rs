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
    /// Worker threads still running.
    alive: usize,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Notified when a worker thread ends.
    ended: Condvar,
}

thread_local! {
    /// The pool whose worker this thread is (its `Shared` address), if any.
    static WORKER_OF: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
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
        f.debug_struct("WorkerPool")
            .field("threads", &self.handle.threads)
            .finish()
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
                alive: 0,
            }),
            ready: Condvar::new(),
            ended: Condvar::new(),
        });
        for _ in 0..threads {
            let s = shared.clone();
            shared.queue.lock().alive += 1;
            let started = std::thread::Builder::new()
                .name("rcip-mcp-worker".into())
                .spawn(move || run(&s));
            if let Err(e) = started {
                let mut q = shared.queue.lock();
                q.alive -= 1;
                q.closed = true;
                shared.ready.notify_all();
                return Err(e);
            }
        }
        Ok(WorkerPool {
            handle: Arc::new(Handle { shared, threads }),
        })
    }

    /// The number of threads.
    pub fn threads(&self) -> usize {
        self.handle.threads
    }

    /// Stops taking jobs once the queued ones ran, and waits up to
    /// `timeout` for the threads to end (at once when called on one of
    /// them). True when they all ended. Jobs queued later never run.
    ///
    /// A host that frees its session or server gets no library thread
    /// still running its code afterwards (a language runtime that stops
    /// its threads at exit, such as CPython, must not find one inside a
    /// callback).
    pub fn close_and_wait(&self, timeout: std::time::Duration) -> bool {
        let shared = &self.handle.shared;
        let mut q = shared.queue.lock();
        q.closed = true;
        shared.ready.notify_all();
        let own = WORKER_OF.with(|w| w.get()) == Arc::as_ptr(shared) as usize;
        let deadline = std::time::Instant::now() + timeout;
        let others = |q: &Queue| q.alive - usize::from(own);
        while others(&q) > 0 {
            if shared.ended.wait_until(&mut q, deadline).timed_out() {
                return others(&q) == 0;
            }
        }
        true
    }

    /// Queues `job`; it runs on a worker thread, in queue order. After
    /// [`close_and_wait`](Self::close_and_wait) ended the threads it is
    /// dropped unrun.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        {
            let mut q = self.handle.shared.queue.lock();
            if q.closed && q.alive == 0 {
                return; // nobody would run it (close_and_wait ended the threads)
            }
            q.jobs.push_back(Box::new(job));
        }
        self.handle.shared.ready.notify_one();
    }
}

fn run(shared: &Arc<Shared>) {
    WORKER_OF.with(|w| w.set(Arc::as_ptr(shared) as usize));
    loop {
        let job = {
            let mut q = shared.queue.lock();
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                if q.closed {
                    q.alive -= 1;
                    shared.ended.notify_all();
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
    fn close_and_wait_runs_the_queued_jobs_then_joins() {
        let pool = WorkerPool::new(2).unwrap();
        let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for _ in 0..20 {
            let r = ran.clone();
            pool.spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(5));
                r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        assert!(pool.close_and_wait(std::time::Duration::from_secs(10)));
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 20);
        // From a worker of its own pool it does not wait for itself.
        let pool = WorkerPool::new(1).unwrap();
        let (tx, rx) = mpsc::channel();
        let p = pool.clone();
        pool.spawn(move || tx.send(p.close_and_wait(std::time::Duration::from_secs(5))).unwrap());
        assert!(rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap());
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
