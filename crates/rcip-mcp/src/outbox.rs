//! Serialized, bounded delivery of outgoing messages.
//!
//! Messages may be produced on any thread (an outcome settled by a worker,
//! a snapshot refresh on another consumer's thread). The output receives
//! them one at a time, in the order they were queued, and never while a
//! session lock is held: the first thread that finds nobody delivering
//! becomes the deliverer and drains the queue, so an output that sends a
//! message back into the session from inside `send` queues it instead of
//! recursing.
//!
//! The queue is bounded without losing what must not be lost (**rcip**,
//! docs/MCP.md "Limits"): responses and server requests are always queued
//! (their number is bounded by the session's in-flight requests), a
//! `notifications/tools/list_changed` already waiting absorbs the next one,
//! and other notifications beyond the bound are dropped and counted. A
//! producer never waits; the transport's reader waits for room
//! ([`Outbox::wait_for_room`]) before it reads the next request, which is
//! the backpressure a client that stops reading meets.

use super::{McpOutput, MessageKind};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a queued message is, for routing and for the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The response to the client's request with this id key.
    Response(String),
    /// A request of the session's, on behalf of a client request.
    Request(Option<String>),
    /// `notifications/tools/list_changed`: coalesced.
    ListChanged,
    /// Any other notification, on behalf of a client request; dropped
    /// beyond the bound.
    Notification(Option<String>),
    /// The client's request with this id key ends without a response.
    Abandoned(String),
}

impl Kind {
    fn as_message_kind(&self) -> MessageKind<'_> {
        match self {
            Kind::Response(id) => MessageKind::Response { id },
            Kind::Request(related) => MessageKind::Request {
                related: related.as_deref(),
            },
            Kind::ListChanged => MessageKind::Notification { related: None },
            Kind::Notification(related) => MessageKind::Notification {
                related: related.as_deref(),
            },
            Kind::Abandoned(id) => MessageKind::Abandoned { id },
        }
    }
}

struct Queue {
    messages: VecDeque<(String, Kind)>,
    delivering: bool,
    closed: bool,
    dropped: u64,
}

pub(crate) struct Outbox {
    queue: Mutex<Queue>,
    room: Condvar,
    output: Arc<dyn McpOutput>,
    bound: usize,
}

/// Clears `delivering` if the output panics, so later messages still go out.
struct Delivering<'a>(&'a Outbox);

impl Drop for Delivering<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.queue.lock().delivering = false;
            self.0.room.notify_all();
        }
    }
}

impl Outbox {
    /// An outbox of `output` that keeps at most `bound` droppable messages
    /// waiting (at least 1).
    pub(crate) fn new(output: Arc<dyn McpOutput>, bound: usize) -> Outbox {
        Outbox {
            queue: Mutex::new(Queue {
                messages: VecDeque::new(),
                delivering: false,
                closed: false,
                dropped: 0,
            }),
            room: Condvar::new(),
            output,
            bound: bound.max(1),
        }
    }

    /// Queues `message` and, unless another call is delivering, delivers
    /// everything queued. Must not be called with a session lock held.
    pub(crate) fn send(&self, message: String, kind: Kind) {
        self.queue(message, kind);
        self.deliver();
    }

    /// Queues `message` without delivering it (no output call: may be
    /// called with a session lock held, which keeps its order against
    /// what that lock orders); [`deliver`](Self::deliver) sends it.
    pub(crate) fn queue(&self, message: String, kind: Kind) {
        let mut q = self.queue.lock();
        if q.closed {
            return;
        }
        match kind {
            Kind::ListChanged if q.messages.iter().any(|(_, k)| *k == Kind::ListChanged) => return,
            Kind::Notification(_) if q.messages.len() >= self.bound => {
                q.dropped += 1;
                return;
            }
            _ => {}
        }
        q.messages.push_back((message, kind));
    }

    /// Unless another call is delivering, delivers everything queued. Must
    /// not be called with a session lock held.
    pub(crate) fn deliver(&self) {
        {
            let mut q = self.queue.lock();
            if q.delivering || q.messages.is_empty() {
                return;
            }
            q.delivering = true;
        }
        let _guard = Delivering(self);
        loop {
            let (next, kind) = {
                let mut q = self.queue.lock();
                if q.closed {
                    q.messages.clear();
                }
                match q.messages.pop_front() {
                    Some(m) => {
                        if q.messages.len() < self.bound {
                            self.room.notify_all();
                        }
                        m
                    }
                    None => {
                        q.delivering = false;
                        self.room.notify_all();
                        return;
                    }
                }
            };
            self.output.send_message(&next, kind.as_message_kind());
        }
    }

    /// Waits until fewer than the bound messages wait, the outbox is
    /// closed, or `timeout` passes; true when there is room.
    pub(crate) fn wait_for_room(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut q = self.queue.lock();
        while !q.closed && q.messages.len() >= self.bound {
            if self.room.wait_until(&mut q, deadline).timed_out() {
                break;
            }
        }
        q.closed || q.messages.len() < self.bound
    }

    /// Waits until nothing is queued or being delivered, the outbox is
    /// closed, or `deadline` passes.
    pub(crate) fn wait_until_empty(&self, deadline: Instant) {
        let mut q = self.queue.lock();
        while !q.closed && (q.delivering || !q.messages.is_empty()) {
            if self.room.wait_until(&mut q, deadline).timed_out() {
                return;
            }
        }
    }

    /// Notifications dropped because the queue was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.queue.lock().dropped
    }

    /// Stops delivery: queued messages are dropped, later ones refused. A
    /// message being delivered on another thread completes.
    pub(crate) fn close(&self) {
        let mut q = self.queue.lock();
        q.closed = true;
        q.messages.clear();
        self.room.notify_all();
    }
}
