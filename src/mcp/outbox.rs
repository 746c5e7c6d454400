//! Serialized delivery of outgoing messages.
//!
//! Messages may be produced on any thread (an outcome settled by a worker,
//! a snapshot refresh on another consumer's thread). The output receives
//! them one at a time, in the order they were queued, and never while a
//! session lock is held: the first thread that finds nobody delivering
//! becomes the deliverer and drains the queue, so an output that sends a
//! message back into the session from inside `send` queues it instead of
//! recursing.

use super::McpOutput;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

struct Queue {
    messages: VecDeque<String>,
    delivering: bool,
    closed: bool,
}

pub(crate) struct Outbox {
    queue: Mutex<Queue>,
    output: Arc<dyn McpOutput>,
}

/// Clears `delivering` if the output panics, so later messages still go out.
struct Delivering<'a>(&'a Outbox);

impl Drop for Delivering<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.queue.lock().delivering = false;
        }
    }
}

impl Outbox {
    pub(crate) fn new(output: Arc<dyn McpOutput>) -> Outbox {
        Outbox {
            queue: Mutex::new(Queue {
                messages: VecDeque::new(),
                delivering: false,
                closed: false,
            }),
            output,
        }
    }

    /// Queues `message` and, unless another call is delivering, delivers
    /// everything queued. Must not be called with a session lock held.
    pub(crate) fn send(&self, message: String) {
        {
            let mut q = self.queue.lock();
            if q.closed {
                return;
            }
            q.messages.push_back(message);
            if q.delivering {
                return;
            }
            q.delivering = true;
        }
        let _guard = Delivering(self);
        loop {
            let next = {
                let mut q = self.queue.lock();
                if q.closed {
                    q.messages.clear();
                }
                match q.messages.pop_front() {
                    Some(m) => m,
                    None => {
                        q.delivering = false;
                        return;
                    }
                }
            };
            self.output.send(&next);
        }
    }

    /// Stops delivery: queued messages are dropped, later ones refused. A
    /// message being delivered on another thread completes.
    pub(crate) fn close(&self) {
        let mut q = self.queue.lock();
        q.closed = true;
        q.messages.clear();
    }
}
