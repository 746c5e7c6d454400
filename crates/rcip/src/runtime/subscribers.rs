//! Snapshot subscribers (PIPELINE.md section 2): their part of the state,
//! subscribing, unsubscribing and notification.

use super::callbacks::Subscriber;
use super::shared::{Shared, State};
use super::HostError;
use std::sync::Arc;

/// The subscribers part of the runtime's state.
///
/// Invariants: ids (`next_id`) are never reused; a subscriber is notified
/// with the lock released, from a copy of `list` taken when a revision was
/// installed, so one removed meanwhile may get that one last notification
/// and is released (its user data) only after it returns.
pub(crate) struct SubscriberState {
    pub list: Vec<(u64, Arc<dyn Subscriber>)>,
    pub next_id: u64,
}

impl Shared {
    pub(super) fn subscribers_of(st: &State) -> Vec<Arc<dyn Subscriber>> {
        if st.subscribers.list.is_empty() {
            Vec::new()
        } else {
            st.subscribers.list.iter().map(|(_, s)| s.clone()).collect()
        }
    }

    pub(crate) fn notify(&self, revision: u64, subscribers: Vec<Arc<dyn Subscriber>>) {
        for s in subscribers {
            if self.is_closed() {
                break;
            }
            let _scope = super::shared::CallbackScope::enter(self);
            s.notify(revision);
        }
    }

    // ----- subscriptions -----------------------------------------------------

    pub(crate) fn subscribe(&self, subscriber: Arc<dyn Subscriber>) -> Result<u64, HostError> {
        self.enter()?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(HostError::Closed);
        }
        let id = st.subscribers.next_id;
        st.subscribers.next_id += 1;
        st.subscribers.list.push((id, subscriber));
        Ok(id)
    }

    pub(crate) fn unsubscribe(&self, id: u64) {
        let removed = {
            let mut st = self.state.lock();
            st.subscribers
                .list
                .iter()
                .position(|(s, _)| *s == id)
                .map(|i| st.subscribers.list.remove(i))
        };
        drop(removed);
    }
}
