//! Cancellation tokens (the seed's `AbortSignal`).
//!
//! A token is shared (cloning is a reference count) and synchronized: any
//! thread may cancel, poll or register. `cancel` is idempotent; each
//! registered callback runs exactly once, on the cancelling thread with no
//! lock held, or at once on the registering thread when the token is already
//! cancelled. Cancellation changes an outcome, never removes it.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

type Callback = Box<dyn FnOnce() + Send>;

struct TokenState {
    next_id: u64,
    callbacks: Vec<(u64, Callback)>,
}

struct TokenInner {
    cancelled: AtomicBool,
    state: Mutex<TokenState>,
}

/// A cancellation token. Clones share one state.
#[derive(Clone)]
pub struct CancelToken {
    inner: Arc<TokenInner>,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken::new()
    }
}

/// Identifies a callback registered with [`CancelToken::on_cancel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration(u64);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> CancelToken {
        CancelToken {
            inner: Arc::new(TokenInner {
                cancelled: AtomicBool::new(false),
                state: Mutex::new(TokenState {
                    next_id: 0,
                    callbacks: Vec::new(),
                }),
            }),
        }
    }

    /// Signals cancellation. The first call runs every registered callback
    /// on this thread, in registration order; later calls do nothing.
    pub fn cancel(&self) {
        let callbacks = {
            let mut st = self.inner.state.lock();
            if self.inner.cancelled.swap(true, Ordering::SeqCst) {
                return;
            }
            std::mem::take(&mut st.callbacks)
        };
        for (_, cb) in callbacks {
            cb();
        }
    }

    /// True once [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Registers `f` to run once on cancellation. When the token is already
    /// cancelled, `f` runs now, on this thread, and `None` is returned.
    pub fn on_cancel(&self, f: impl FnOnce() + Send + 'static) -> Option<Registration> {
        self.on_cancel_boxed(Box::new(f))
    }

    pub(crate) fn on_cancel_boxed(&self, f: Callback) -> Option<Registration> {
        {
            let mut st = self.inner.state.lock();
            if !self.inner.cancelled.load(Ordering::SeqCst) {
                let id = st.next_id;
                st.next_id += 1;
                st.callbacks.push((id, f));
                return Some(Registration(id));
            }
        }
        f();
        None
    }

    /// Removes a registered callback that has not run; it is dropped (not
    /// called) on this thread, after the token's lock is released.
    pub fn unregister(&self, registration: Registration) {
        let removed = {
            let mut st = self.inner.state.lock();
            st.callbacks
                .iter()
                .position(|(id, _)| *id == registration.0)
                .map(|i| st.callbacks.remove(i))
        };
        drop(removed);
    }

    /// Number of callbacks waiting for cancellation.
    pub fn pending_callbacks(&self) -> usize {
        self.inner.state.lock().callbacks.len()
    }

    /// True when both handles share one token.
    pub fn ptr_eq(a: &CancelToken, b: &CancelToken) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn callbacks_run_once_in_order() {
        let t = CancelToken::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        for i in 0..3 {
            let log = log.clone();
            t.on_cancel(move || log.lock().push(i));
        }
        let removed = {
            let log = log.clone();
            t.on_cancel(move || log.lock().push(99)).unwrap()
        };
        t.unregister(removed);
        assert_eq!(t.pending_callbacks(), 3);
        t.cancel();
        t.cancel();
        assert_eq!(*log.lock(), vec![0, 1, 2]);
        assert!(t.is_cancelled());
        // Registering after cancellation runs at once.
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = n.clone();
        assert!(t
            .on_cancel(move || {
                n2.fetch_add(1, Ordering::SeqCst);
            })
            .is_none());
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_callback_may_use_its_token() {
        let t = CancelToken::new();
        let t2 = t.clone();
        let seen = Arc::new(AtomicBool::new(false));
        let s2 = seen.clone();
        t.on_cancel(move || {
            t2.cancel();
            let s3 = s2.clone();
            t2.on_cancel(move || s3.store(true, Ordering::SeqCst));
        });
        t.cancel();
        assert!(seen.load(Ordering::SeqCst));
    }
}
