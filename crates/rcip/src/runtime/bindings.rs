//! Bindings, semantic context, refresh and snapshot installation
//! (PIPELINE.md sections 2 and 3): their part of the state and the code that
//! changes it.

use super::callbacks::{check_unless_plain, AvailabilityCheck, DirectCheck, Handler, Subscriber};
use super::shared::{Shared, State, REFRESHING};
use super::snapshot::{BoundSet, Entry, Snapshot};
use super::types::{Availability, SemanticContext};
use super::HostError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The bindings-and-refresh part of the runtime's state.
///
/// Invariants, whenever the lock is released:
/// - `slots[i]` is the live binding of capability `i`, if any, and
///   `bound_count` counts the `Some`s;
/// - `bound` is the set of `i` with a binding and `checks` holds one entry
///   per binding with an availability check, sorted by index; both are
///   copied on write, because installed snapshots and running refreshes
///   share them;
/// - `revision` is the latest revision handed out; `published` and
///   `snapshot` describe the latest installed one, which lags `revision`
///   only while a refresh samples availability outside the lock;
/// - binding ids (`next_id`) are never reused, so a stale handle never
///   unbinds a newer binding.
pub(crate) struct BindingState {
    pub slots: Vec<Option<BindingCore>>,
    pub bound_count: usize,
    /// Bound capabilities, shared with snapshots (copied on write).
    pub bound: Arc<BoundSet>,
    /// An empty set, to stand in for a recipe's set about to be replaced.
    pub no_bound: Arc<BoundSet>,
    /// Checks to sample on refresh, sorted by index (copied on write).
    pub checks: Arc<Checks>,
    pub next_id: u64,
    pub context: Arc<SemanticContext>,
    /// The latest revision handed out (the installed snapshot may lag while
    /// a refresh samples availability).
    pub revision: u64,
    /// What the snapshot of the latest installed revision holds.
    pub published: Published,
    /// That snapshot, built on first read.
    pub snapshot: Option<Arc<Snapshot>>,
}

/// One installed binding (kept inline in [`BindingState::slots`]: binding
/// allocates no block of its own).
pub(crate) struct BindingCore {
    pub id: u64,
    pub handler: Arc<dyn Handler>,
    pub availability: Option<Arc<dyn AvailabilityCheck>>,
    pub revision: AtomicU64,
}

/// The recipe of a snapshot: cheap to record on every refresh; the
/// snapshot object is made from it when someone reads it.
pub(crate) struct Published {
    pub revision: u64,
    pub context: Arc<SemanticContext>,
    pub bound: Arc<BoundSet>,
    pub samples: Option<Arc<Vec<(u32, Availability)>>>,
}

/// What a refresh replaced, dropped once the lock is released.
#[derive(Default)]
pub(crate) struct Retired {
    _recipe: Option<Published>,
    _snapshot: Option<Arc<Snapshot>>,
}

/// A refresh whose revision was taken under the state lock: already
/// published (nothing to sample), or the state to sample and publish.
pub(super) enum Begun {
    Published(u64, Vec<Arc<dyn Subscriber>>, Retired),
    Sample {
        revision: u64,
        context: Arc<SemanticContext>,
        bound: Arc<BoundSet>,
        checks: Arc<Checks>,
    },
}

/// The availability checks of installed bindings, sorted by capability
/// index.
pub(crate) type Checks = Vec<CheckEntry>;

/// One installed availability check. A C check's function and data are
/// also kept here (`direct`): a refresh calls it without the trait object,
/// and its common answer, plainly available, comes back as `None` rather
/// than as a whole `Availability` moved through a `Result`. With hundreds
/// of checks per refresh that halved the refresh (BENCHMARKS.md, (h2)).
#[derive(Clone)]
pub(crate) struct CheckEntry {
    pub index: u32,
    pub check: Arc<dyn AvailabilityCheck>,
    pub direct: Option<DirectCheck>,
}

impl CheckEntry {
    /// Asks the check; `None` when the answer is plainly available (what a
    /// refresh does not record).
    pub(super) fn ask_unless_plain(&self) -> Option<Availability> {
        match self.direct {
            Some(direct) => check_unless_plain(direct),
            None => Some(Shared::ask(&self.check)).filter(|a| !a.is_plain_available()),
        }
    }
}

/// Bindings made on a [`super::RuntimeBuilder`] (**rcip**): installed by
/// the build, so the runtime starts with them bound (PIPELINE.md section 3,
/// "Builder bindings").
///
/// `slots` is the runtime's own slot vector, allocated on the first bind
/// (one allocation for every binding; a duplicate is a filled slot), and
/// handed to the runtime as it is; `checks` are the availability checks in
/// the order they were bound (sorted by the build).
pub(crate) struct Staged {
    slots: Vec<Option<BindingCore>>,
    count: usize,
    checks: Checks,
    /// The index after the capability bound last.
    next: usize,
}

impl Staged {
    /// The capability a host binding in catalog order binds next.
    pub(crate) fn next_in_order(&self) -> usize {
        self.next
    }

    /// Stages a binding of capability `capability` (a catalog index; `n`
    /// capabilities in all). A capability staged before is
    /// [`HostError::AlreadyBound`] (with `capability_id` in its message) and
    /// nothing changes.
    pub(crate) fn bind(
        staged: &mut Option<Staged>,
        n: usize,
        capability: usize,
        capability_id: &str,
        handler: Arc<dyn Handler>,
        availability: Option<Arc<dyn AvailabilityCheck>>,
        direct: Option<DirectCheck>,
    ) -> Result<(), HostError> {
        let st = staged.get_or_insert_with(|| Staged {
            slots: (0..n).map(|_| None).collect(),
            count: 0,
            checks: Vec::new(),
            next: 0,
        });
        let slot = &mut st.slots[capability];
        if slot.is_some() {
            return Err(HostError::AlreadyBound(capability_id.to_string()));
        }
        if let Some(check) = &availability {
            st.checks.push(CheckEntry {
                index: capability as u32,
                check: check.clone(),
                direct,
            });
        }
        st.count += 1;
        st.next = capability + 1;
        // Ids in binding order, as binds right after the build would get.
        *slot = Some(BindingCore {
            id: st.count as u64,
            handler,
            availability,
            revision: AtomicU64::new(0),
        });
        Ok(())
    }
}

impl BindingState {
    /// The state of a new runtime over `n` capabilities: revision 0, the
    /// empty context, and the builder's bindings (none without `staged`),
    /// whose availability checks are asked here, once each, for revision
    /// 0's snapshot (host code: the runtime does not exist yet, so no lock
    /// is held and no call can reach it).
    pub(crate) fn initial(n: usize, staged: Option<Staged>) -> BindingState {
        let context = Arc::new(SemanticContext::empty());
        let mut bound = BoundSet::new(n);
        let (slots, bound_count, checks, samples) = match staged {
            None => ((0..n).map(|_| None).collect(), 0, Vec::new(), None),
            Some(mut st) => {
                for (i, slot) in st.slots.iter().enumerate() {
                    if slot.is_some() {
                        bound.set(i, true);
                    }
                }
                st.checks.sort_by_key(|e| e.index);
                let samples: Vec<(u32, Availability)> = st
                    .checks
                    .iter()
                    .filter_map(|e| e.ask_unless_plain().map(|a| (e.index, a)))
                    .collect();
                let samples = (!samples.is_empty()).then(|| Arc::new(samples));
                (st.slots, st.count, st.checks, samples)
            }
        };
        let bound = Arc::new(bound);
        BindingState {
            slots,
            bound_count,
            bound: bound.clone(),
            no_bound: Arc::new(BoundSet::default()),
            checks: Arc::new(checks),
            next_id: bound_count as u64 + 1,
            context: context.clone(),
            revision: 0,
            published: Published {
                revision: 0,
                context,
                bound,
                samples,
            },
            snapshot: None,
        }
    }
}

impl Shared {
    // ----- availability -------------------------------------------------

    /// Samples a binding's availability callback (none: available).
    pub(crate) fn sample(check: Option<&Arc<dyn AvailabilityCheck>>) -> Entry {
        match check {
            None => Entry::BoundAvailable,
            Some(cb) => Entry::Bound(Shared::ask(cb)),
        }
    }

    pub(super) fn ask(check: &Arc<dyn AvailabilityCheck>) -> Availability {
        check.check().unwrap_or_else(|_failed| Availability::check_failed())
    }

    // ----- bindings -------------------------------------------------------

    /// Binds; `direct` is the C form of `availability`, if it has one.
    pub(crate) fn bind(
        self: &Arc<Self>,
        capability_id: &str,
        handler: Arc<dyn Handler>,
        availability: Option<Arc<dyn AvailabilityCheck>>,
        direct: Option<DirectCheck>,
    ) -> Result<(u64, usize), HostError> {
        self.enter()?;
        let Some(capability) = self.catalog.capability_index(capability_id) else {
            return Err(HostError::NotInCatalog(capability_id.to_string()));
        };
        let inline = !self.refreshing_here();
        let mut st = self.state.lock();
        if st.closed {
            return Err(HostError::Closed);
        }
        if st.bindings.slots[capability].is_some() {
            return Err(HostError::AlreadyBound(capability_id.to_string()));
        }
        let id = st.bindings.next_id;
        st.bindings.next_id += 1;
        let inline = inline && st.bindings.checks.is_empty() && availability.is_none();
        if inline {
            Shared::release_published_bound(&mut st);
        }
        Arc::make_mut(&mut st.bindings.bound).set(capability, true);
        if let Some(check) = &availability {
            let checks = Arc::make_mut(&mut st.bindings.checks);
            let at = checks.partition_point(|e| (e.index as usize) < capability);
            checks.insert(
                at,
                CheckEntry {
                    index: capability as u32,
                    check: check.clone(),
                    direct,
                },
            );
        }
        st.bindings.slots[capability] = Some(BindingCore {
            id,
            handler,
            availability,
            revision: AtomicU64::new(0),
        });
        st.bindings.bound_count += 1;
        self.finish_change(st, inline);
        Ok((id, capability))
    }

    /// True while this thread is inside a refresh of this runtime (a new
    /// refresh would be queued behind it).
    pub(crate) fn refreshing_here(self: &Arc<Self>) -> bool {
        let key = Arc::as_ptr(self) as usize;
        REFRESHING.with(|r| r.borrow().iter().any(|e| e.0 == key))
    }

    /// Before an inline change of the bound set: the published recipe is
    /// replaced in the same critical section, so its reference to the set
    /// is let go first and the set is changed in place (unless a snapshot
    /// someone read still holds it).
    pub(super) fn release_published_bound(st: &mut State) {
        st.bindings.published.bound = st.bindings.no_bound.clone();
    }

    /// After a change of the state made under `st`: its refresh takes its
    /// revision in the same critical section, so that no reader (a
    /// preflight's R0 on another thread) sees the change under the revision
    /// before it. With nothing to sample the new recipe is published there
    /// too (`inline` says so for a bind or unbind, which then skip a copy of
    /// the bound set); else availability is sampled after the lock is
    /// released. Inside a refresh of this runtime on this thread the whole
    /// refresh is queued behind the current one, as PIPELINE.md section 2
    /// (rcip) says, and takes its revision when it runs.
    pub(super) fn finish_change(self: &Arc<Self>, mut st: parking_lot::MutexGuard<'_, State>, inline: bool) {
        if inline {
            let (revision, subscribers, replaced) = Shared::refresh_locked(&mut st);
            drop(st);
            drop(replaced);
            return self.notify_published(revision, subscribers);
        }
        if self.refreshing_here() {
            drop(st);
            return self.refresh();
        }
        let begun = Shared::begin_refresh(&mut st);
        drop(st);
        self.as_refresh(|| self.complete_refresh(begun));
    }

    /// Removes the binding `id` if it is still installed; refreshes then.
    pub(crate) fn unbind(self: &Arc<Self>, id: u64, capability: usize) -> Result<bool, HostError> {
        self.enter()?;
        let inline = !self.refreshing_here();
        let mut st = self.state.lock();
        if st.closed {
            return Err(HostError::Closed);
        }
        let installed = st.bindings.slots[capability]
            .as_ref()
            .map(|b| (b.id, b.availability.is_some()));
        let Some((installed_id, has_check)) = installed else {
            return Ok(false);
        };
        if installed_id != id {
            return Ok(false);
        }
        st.bindings.bound_count -= 1;
        let check = if has_check {
            let checks = Arc::make_mut(&mut st.bindings.checks);
            checks
                .iter()
                .position(|e| e.index as usize == capability)
                .map(|p| checks.remove(p))
        } else {
            None
        };
        let inline = inline && st.bindings.checks.is_empty();
        if inline {
            Shared::release_published_bound(&mut st);
        }
        Arc::make_mut(&mut st.bindings.bound).set(capability, false);
        let removed = st.bindings.slots[capability].take();
        // Notifying subscribers and dropping the binding (which may release
        // host user data) happen with no lock held.
        self.finish_change(st, inline);
        drop((removed, check));
        Ok(true)
    }

    /// Sets a binding's revision; refreshes when it changed on an installed
    /// binding.
    pub(crate) fn set_binding_revision(
        self: &Arc<Self>,
        id: u64,
        capability: usize,
        revision: u64,
    ) -> Result<bool, HostError> {
        self.enter()?;
        let st = self.state.lock();
        if st.closed {
            return Err(HostError::Closed);
        }
        let changed = match &st.bindings.slots[capability] {
            Some(b) if b.id == id => b.revision.swap(revision, Ordering::SeqCst) != revision,
            _ => false,
        };
        if changed {
            self.finish_change(st, false);
        }
        Ok(changed)
    }

    // ----- context ----------------------------------------------------------

    /// Sets the semantic context (PIPELINE.md section 3).
    pub(crate) fn set_context(self: &Arc<Self>, context: SemanticContext) -> Result<(), HostError> {
        self.enter()?;
        for id in context.active_scope_ids() {
            if !self.catalog.has_scope(id) {
                return Err(HostError::UnknownScope(id.clone()));
            }
        }
        if let Some(primary) = context.primary_scope_id() {
            if !primary.is_empty() && !context.active_scope_ids().iter().any(|a| a == primary) {
                return Err(HostError::PrimaryNotActive(primary.to_string()));
            }
        }
        let mut st = self.state.lock();
        if st.closed {
            return Err(HostError::Closed);
        }
        st.bindings.context = Arc::new(context);
        self.finish_change(st, false);
        Ok(())
    }

    pub(crate) fn context(&self) -> Arc<SemanticContext> {
        self.state.lock().bindings.context.clone()
    }

    // ----- snapshots and refresh ---------------------------------------------

    /// The installed snapshot.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        let mut st = self.state.lock();
        if let Some(s) = &st.bindings.snapshot {
            return s.clone();
        }
        let p = &st.bindings.published;
        let s = Arc::new(Snapshot::new(
            p.revision,
            self.catalog.clone(),
            p.context.clone(),
            p.bound.clone(),
            p.samples.clone(),
        ));
        st.bindings.snapshot = Some(s.clone());
        s
    }

    /// Increments the revision, samples availability, installs the new
    /// snapshot and notifies subscribers. A refresh requested on a thread
    /// that is already refreshing this runtime is queued behind it.
    pub(crate) fn refresh(self: &Arc<Self>) {
        let key = Arc::as_ptr(self) as usize;
        let queued = REFRESHING.with(|r| match r.borrow_mut().iter_mut().find(|e| e.0 == key) {
            Some(e) => {
                e.1 += 1;
                true
            }
            None => false,
        });
        if !queued {
            self.as_refresh(|| self.refresh_once());
        }
    }

    /// Notifies the subscribers of a refresh that was published inside
    /// another call's critical section (a bind, an unbind, step 19). Their
    /// notifications are that refresh's, so a refresh a subscriber asks for
    /// meanwhile is queued behind them, as for any refresh (PIPELINE.md
    /// section 2): otherwise a later subscriber would hear the nested
    /// revision before the earlier one.
    pub(crate) fn notify_published(self: &Arc<Self>, revision: u64, subscribers: Vec<Arc<dyn Subscriber>>) {
        if subscribers.is_empty() {
            return;
        }
        // Inline publication is chosen only outside a refresh of this runtime.
        debug_assert!(!self.refreshing_here());
        self.as_refresh(|| self.notify(revision, subscribers));
    }

    /// Runs `first` as this thread's refresh of this runtime, then every
    /// refresh queued meanwhile, each with its own revision. The thread must
    /// not be refreshing this runtime already.
    pub(super) fn as_refresh(self: &Arc<Self>, first: impl FnOnce()) {
        let key = Arc::as_ptr(self) as usize;
        REFRESHING.with(|r| r.borrow_mut().push((key, 0)));
        struct Pop(usize);
        impl Drop for Pop {
            fn drop(&mut self) {
                REFRESHING.with(|r| r.borrow_mut().retain(|e| e.0 != self.0));
            }
        }
        let _pop = Pop(key);
        first();
        loop {
            let again = REFRESHING.with(|r| match r.borrow_mut().iter_mut().find(|e| e.0 == key) {
                Some(e) if e.1 > 0 => {
                    e.1 -= 1;
                    true
                }
                _ => false,
            });
            if !again {
                break;
            }
            self.refresh_once();
        }
    }

    pub(super) fn refresh_once(self: &Arc<Self>) {
        let begun = {
            let mut st = self.state.lock();
            if st.closed {
                return;
            }
            Shared::begin_refresh(&mut st)
        };
        self.complete_refresh(begun);
    }

    /// The part of a refresh under the state lock: a new revision for the
    /// current state. With nothing to sample it is also published here.
    pub(super) fn begin_refresh(st: &mut State) -> Begun {
        if st.bindings.checks.is_empty() {
            let (revision, subscribers, replaced) = Shared::refresh_locked(st);
            return Begun::Published(revision, subscribers, replaced);
        }
        st.bindings.revision += 1;
        Begun::Sample {
            revision: st.bindings.revision,
            context: st.bindings.context.clone(),
            bound: st.bindings.bound.clone(),
            checks: st.bindings.checks.clone(),
        }
    }

    /// The rest of a refresh, with no lock held: sample availability,
    /// publish (unless a newer revision was published meanwhile), notify.
    pub(super) fn complete_refresh(self: &Arc<Self>, begun: Begun) {
        let (revision, context, bound, checks) = match begun {
            Begun::Published(revision, subscribers, replaced) => {
                drop(replaced);
                return self.notify(revision, subscribers);
            }
            Begun::Sample {
                revision,
                context,
                bound,
                checks,
            } => (revision, context, bound, checks),
        };
        // Host code: no lock held.
        let samples: Vec<(u32, Availability)> = checks
            .iter()
            .filter_map(|e| e.ask_unless_plain().map(|a| (e.index, a)))
            .collect();
        drop(checks);
        let samples = if samples.is_empty() {
            None
        } else {
            Some(Arc::new(samples))
        };
        let (subscribers, replaced) = {
            let mut st = self.state.lock();
            if st.closed {
                return;
            }
            Shared::publish(
                &mut st,
                Published {
                    revision,
                    context,
                    bound,
                    samples,
                },
            )
        };
        drop(replaced);
        self.notify(revision, subscribers);
    }

    /// A whole refresh under the state lock, for when no availability check
    /// is installed: a new revision whose recipe is the current state.
    /// Returns the revision, the subscribers to notify and what to drop once
    /// the lock is released.
    pub(crate) fn refresh_locked(st: &mut State) -> (u64, Vec<Arc<dyn Subscriber>>, Retired) {
        debug_assert!(st.bindings.checks.is_empty());
        st.bindings.revision += 1;
        let revision = st.bindings.revision;
        let p = &mut st.bindings.published;
        if p.samples.is_none()
            && Arc::ptr_eq(&p.context, &st.bindings.context)
            && Arc::ptr_eq(&p.bound, &st.bindings.bound)
        {
            // Same state, new revision: renumber the recipe in place.
            p.revision = revision;
            let retired = Retired {
                _recipe: None,
                _snapshot: st.bindings.snapshot.take(),
            };
            return (revision, Shared::subscribers_of(st), retired);
        }
        let published = Published {
            revision,
            context: st.bindings.context.clone(),
            bound: st.bindings.bound.clone(),
            samples: None,
        };
        let (subscribers, replaced) = Shared::publish(st, published);
        (revision, subscribers, replaced)
    }

    /// Installs a newer recipe (a late, older one is dropped); returns the
    /// subscribers to notify and what to drop once the lock is released.
    pub(super) fn publish(st: &mut State, published: Published) -> (Vec<Arc<dyn Subscriber>>, Retired) {
        let replaced = if st.bindings.published.revision < published.revision {
            Retired {
                _recipe: Some(std::mem::replace(&mut st.bindings.published, published)),
                _snapshot: st.bindings.snapshot.take(),
            }
        } else {
            Retired {
                _recipe: Some(published),
                _snapshot: None,
            }
        };
        (Shared::subscribers_of(st), replaced)
    }
}
