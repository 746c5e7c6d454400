//! The runtime's shared core: configuration, the locked state, ids, time,
//! events, bindings, context, refresh and teardown.
//!
//! Locking discipline: `Shared::state` and each invocation's or
//! preflight's own mutex are held only for short reads and writes; no host
//! code (callbacks) ever runs while one is held, and nothing that owns host
//! user data is dropped while one is held (user-data release is host code).

use super::callbacks::{
    AvailabilityCheck, Clock, ConfirmationObserver, EventObserver, Handler, IdGenerator, Policy, Subscriber,
};
use super::confirm::{PendingConfirmation, Receipt};
use super::invoke::InvocationCore;
use super::preflight::PreflightCore;
use super::snapshot::{BoundSet, Entry, Snapshot};
use super::types::{Availability, ErrorCode, EventPhase, LifecycleEvent, SemanticContext};
use super::HostError;
use crate::catalog::Catalog;
use crate::ffi::callback::DirectCheck;
use crate::json::Limits;
use once_cell::sync::OnceCell;
use parking_lot::{Condvar, Mutex};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Default confirmation lifetime: two minutes (seed, "Default expiry is two
/// minutes").
pub const DEFAULT_CONFIRMATION_TTL_MS: u64 = 120_000;
/// Receipts kept for expired and cancelled confirmations (seed: "the latest
/// 256").
pub const RECEIPT_CAPACITY: usize = 256;

/// Everything the host configured through the builder. Immutable.
pub(crate) struct Config {
    pub ttl_ms: i64,
    pub limits: Limits,
    pub manual_timers: bool,
    pub policy: Option<Arc<dyn Policy>>,
    pub confirmation_observer: Option<Arc<dyn ConfirmationObserver>>,
    pub observers: Vec<Arc<dyn EventObserver>>,
    pub clock: Option<Arc<dyn Clock>>,
    pub id_generator: Option<Arc<dyn IdGenerator>>,
    /// The work budget of each schema validation.
    pub validation_budget: crate::schema::Budget,
}

/// One installed binding (kept inline in [`State::bindings`]: binding
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
enum Begun {
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
    fn ask_unless_plain(&self) -> Option<Availability> {
        match self.direct {
            Some(direct) => direct.check_unless_plain(),
            None => Some(Shared::ask(&self.check)).filter(|a| !a.is_plain_available()),
        }
    }
}

pub(crate) struct State {
    pub closed: bool,
    pub bindings: Vec<Option<BindingCore>>,
    pub bound_count: usize,
    /// Bound capabilities, shared with snapshots (copied on write).
    pub bound: Arc<BoundSet>,
    /// An empty set, to stand in for a recipe's set about to be replaced.
    pub no_bound: Arc<BoundSet>,
    /// Checks to sample on refresh, sorted by index (copied on write).
    pub checks: Arc<Checks>,
    pub next_binding_id: u64,
    pub context: Arc<SemanticContext>,
    /// The latest revision handed out (the installed snapshot may lag while
    /// a refresh samples availability).
    pub revision: u64,
    /// What the snapshot of the latest installed revision holds.
    pub published: Published,
    /// That snapshot, built on first read.
    pub snapshot: Option<Arc<Snapshot>>,
    pub subscribers: Vec<(u64, Arc<dyn Subscriber>)>,
    pub next_subscriber_id: u64,
    pub reserved: HashSet<Arc<str>, ahash::RandomState>,
    pub invocations: HashMap<u64, Arc<InvocationCore>, ahash::RandomState>,
    pub confirmations: HashMap<String, PendingConfirmation>,
    /// Pending confirmation deadlines: (expiresAt, creation sequence, id).
    pub deadlines: BTreeSet<(i64, u64, String)>,
    pub receipts: VecDeque<Receipt>,
    pub preflights: HashMap<u64, Arc<PreflightCore>>,
    pub next_seq: u64,
}

pub(crate) struct Shared {
    pub catalog: Catalog,
    pub config: Config,
    pub state: Mutex<State>,
    pub closed: AtomicBool,
    /// Each capability's id, shared by this runtime's invocations, outcomes
    /// and events (per runtime, so that runtimes sharing a catalog do not
    /// contend on one reference count); made on first use.
    capability_ids: Box<[OnceCell<Arc<str>>]>,
    /// Keeps generated ids of different runtimes apart; made on first use.
    id_salt: OnceCell<String>,
    id_counter: AtomicU64,
    /// The library's timer thread passes this gate before it takes a strong
    /// reference to the runtime and leaves it after dropping it; closing
    /// shuts it and waits (no callback starts, and no user data is released
    /// on the timer thread, after the free returned).
    pub(crate) timer_gate: Arc<TimerGate>,
}

thread_local! {
    /// Depth of clock / id-generator calls on this thread: runtime calls
    /// made from them answer WRONG_CONTEXT (PIPELINE.md section 7).
    static RESTRICTED: Cell<u32> = const { Cell::new(0) };
    /// Runtimes this thread is refreshing, with the number of refreshes
    /// queued behind the current one (PIPELINE.md section 2).
    static REFRESHING: RefCell<Vec<(usize, u32)>> = const { RefCell::new(Vec::new()) };
    /// The runtime whose expiries this (timer) thread is delivering.
    static TIMER_WORK: Cell<usize> = const { Cell::new(0) };
}

/// Admission of the library's timer thread to one runtime (PIPELINE.md
/// section 9: no callback starts after the free returned).
///
/// It lives in its own allocation, which the timer's queue entries share
/// next to their weak reference to the runtime, so that the timer thread
/// can be admitted *before* it upgrades that reference and let go only
/// *after* it dropped every strong reference. A close shuts the gate and
/// waits for the timer thread to leave, so the runtime is never dropped
/// (and its policy, observer and clock user data never released) on the
/// timer thread after `rcip_runtime_free` returned.
pub(crate) struct TimerGate {
    /// (timer threads inside, shut).
    state: Mutex<(u32, bool)>,
    idle: Condvar,
}

impl TimerGate {
    fn new() -> Self {
        TimerGate {
            state: Mutex::new((0, false)),
            idle: Condvar::new(),
        }
    }

    /// Admits the timer thread; false once the runtime is closing.
    pub(crate) fn enter(&self) -> bool {
        let mut st = self.state.lock();
        if st.1 {
            return false;
        }
        st.0 += 1;
        true
    }

    /// The timer thread has dropped its strong references to the runtime.
    pub(crate) fn leave(&self) {
        let mut st = self.state.lock();
        st.0 -= 1;
        if st.0 == 0 {
            self.idle.notify_all();
        }
    }

    /// Shuts the gate, then (when `wait`) waits until no timer thread is
    /// inside. `wait` is false on the timer thread itself, closing from one
    /// of the callbacks it delivers.
    fn shut(&self, wait: bool) {
        let mut st = self.state.lock();
        st.1 = true;
        if wait {
            while st.0 > 0 {
                self.idle.wait(&mut st);
            }
        }
    }
}

/// Marks this thread as the timer thread delivering `runtime`'s expiries
/// for as long as the guard lives: a close from one of those callbacks must
/// not wait for the delivery it is part of.
pub(crate) struct TimerWork(());

impl TimerWork {
    pub(crate) fn begin(runtime: &Arc<Shared>) -> TimerWork {
        TIMER_WORK.with(|t| t.set(Arc::as_ptr(runtime) as usize));
        TimerWork(())
    }
}

impl Drop for TimerWork {
    fn drop(&mut self) {
        TIMER_WORK.with(|t| t.set(0));
    }
}

/// True while this thread runs a clock or id-generator callback.
pub(crate) fn in_restricted_callback() -> bool {
    RESTRICTED.with(|r| r.get() > 0)
}

struct RestrictedGuard;
impl RestrictedGuard {
    fn enter() -> RestrictedGuard {
        RESTRICTED.with(|r| r.set(r.get() + 1));
        RestrictedGuard
    }
}
impl Drop for RestrictedGuard {
    fn drop(&mut self) {
        RESTRICTED.with(|r| r.set(r.get() - 1));
    }
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

pub(crate) fn system_now_ms() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

impl Shared {
    pub(crate) fn new(catalog: Catalog, config: Config) -> Arc<Shared> {
        let n = catalog.capabilities().len();
        let context = Arc::new(SemanticContext::empty());
        let bound = Arc::new(BoundSet::new(n));
        let published = Published {
            revision: 0,
            context: context.clone(),
            bound: bound.clone(),
            samples: None,
        };
        Arc::new(Shared {
            catalog,
            config,
            state: Mutex::new(State {
                closed: false,
                bindings: (0..n).map(|_| None).collect(),
                bound_count: 0,
                bound,
                no_bound: Arc::new(BoundSet::default()),
                checks: Arc::new(Vec::new()),
                next_binding_id: 1,
                context,
                revision: 0,
                published,
                snapshot: None,
                subscribers: Vec::new(),
                next_subscriber_id: 1,
                reserved: HashSet::default(),
                invocations: HashMap::default(),
                confirmations: HashMap::new(),
                deadlines: BTreeSet::new(),
                receipts: VecDeque::new(),
                preflights: HashMap::new(),
                next_seq: 1,
            }),
            closed: AtomicBool::new(false),
            capability_ids: (0..n).map(|_| OnceCell::new()).collect(),
            id_salt: OnceCell::new(),
            id_counter: AtomicU64::new(0),
            timer_gate: Arc::new(TimerGate::new()),
        })
    }

    /// Refuses runtime calls from a clock or id generator, and on a closed
    /// runtime.
    pub(crate) fn enter(&self) -> Result<(), HostError> {
        if in_restricted_callback() {
            return Err(HostError::WrongContext);
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(HostError::Closed);
        }
        Ok(())
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// The runtime's clock, in epoch milliseconds.
    pub(crate) fn now(&self) -> i64 {
        match &self.config.clock {
            Some(clock) => {
                let _g = RestrictedGuard::enter();
                clock.now_ms()
            }
            None => system_now_ms(),
        }
    }

    /// The id of capability `i`, as this runtime shares it.
    pub(crate) fn capability_id(&self, i: usize) -> Arc<str> {
        self.capability_ids[i]
            .get_or_init(|| Arc::from(self.catalog.capabilities()[i].id.as_str()))
            .clone()
    }

    /// A new id for `prefix` (`invocation` or `confirmation`): the host's
    /// generator, else (or when it fails) the built-in one.
    pub(crate) fn generate_id(&self, prefix: &str) -> Arc<str> {
        if let Some(generator) = &self.config.id_generator {
            let got = {
                let _g = RestrictedGuard::enter();
                generator.generate(prefix)
            };
            if let Some(id) = got {
                return Arc::from(id);
            }
        }
        self.builtin_id(prefix)
    }

    /// An id from the built-in generator: unique within this runtime.
    /// The form is `{prefix}_{salt}_{n}`, where the salt (the runtime's
    /// creation time and a random part, in base 36) keeps the ids of
    /// different runtimes apart and `n` counts up from 1.
    pub(crate) fn builtin_id(&self, prefix: &str) -> Arc<str> {
        let n = self.id_counter.fetch_add(1, Ordering::Relaxed) + 1;
        let salt = self.id_salt.get_or_init(|| {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(system_now_ms() as u64);
            format!(
                "{}{}",
                base36(system_now_ms().max(0) as u64),
                base36(h.finish() % 36u64.pow(6))
            )
        });
        // Assembled on the stack (this runs once per invocation), then one
        // allocation; the text is checked as UTF-8 once, digits included.
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(n);
        let mut buf = [0u8; 96];
        let len = prefix.len() + salt.len() + digits.len() + 2;
        let Some(dst) = buf.get_mut(..len) else {
            // A long prefix: allocate.
            return Arc::from(format!("{prefix}_{salt}_{n}"));
        };
        let (p, rest) = dst.split_at_mut(prefix.len());
        p.copy_from_slice(prefix.as_bytes());
        let (u, rest) = rest.split_at_mut(1);
        u[0] = b'_';
        let (sl, rest) = rest.split_at_mut(salt.len());
        sl.copy_from_slice(salt.as_bytes());
        let (u, rest) = rest.split_at_mut(1);
        u[0] = b'_';
        rest.copy_from_slice(digits.as_bytes());
        Arc::from(std::str::from_utf8(&buf[..len]).unwrap_or(prefix))
    }

    /// Emits a lifecycle event to every observer, in registration order.
    pub(crate) fn emit(
        &self,
        invocation_id: &str,
        capability_id: &str,
        phase: EventPhase,
        error_code: Option<ErrorCode>,
        timestamp: Option<i64>,
    ) {
        if self.config.observers.is_empty() {
            return;
        }
        let event = LifecycleEvent {
            timestamp: timestamp.unwrap_or_else(|| self.now()),
            invocation_id: invocation_id.to_string(),
            capability_id: capability_id.to_string(),
            phase,
            error_code,
        };
        for observer in &self.config.observers {
            observer.on_event(&event);
        }
    }

    /// Tells the host's confirmation callback, if any.
    pub(crate) fn notify_confirmation(&self, json: impl FnOnce() -> String) {
        if let Some(observer) = &self.config.confirmation_observer {
            observer.on_confirmation(&json());
        }
    }

    pub(crate) fn next_seq(state: &mut State) -> u64 {
        let s = state.next_seq;
        state.next_seq += 1;
        s
    }

    // ----- availability -------------------------------------------------

    /// Samples a binding's availability callback (none: available).
    pub(crate) fn sample(check: Option<&Arc<dyn AvailabilityCheck>>) -> Entry {
        match check {
            None => Entry::BoundAvailable,
            Some(cb) => Entry::Bound(Shared::ask(cb)),
        }
    }

    fn ask(check: &Arc<dyn AvailabilityCheck>) -> Availability {
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
        if st.bindings[capability].is_some() {
            return Err(HostError::AlreadyBound(capability_id.to_string()));
        }
        let id = st.next_binding_id;
        st.next_binding_id += 1;
        let inline = inline && st.checks.is_empty() && availability.is_none();
        if inline {
            Shared::release_published_bound(&mut st);
        }
        Arc::make_mut(&mut st.bound).set(capability, true);
        if let Some(check) = &availability {
            let checks = Arc::make_mut(&mut st.checks);
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
        st.bindings[capability] = Some(BindingCore {
            id,
            handler,
            availability,
            revision: AtomicU64::new(0),
        });
        st.bound_count += 1;
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
    fn release_published_bound(st: &mut State) {
        st.published.bound = st.no_bound.clone();
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
    fn finish_change(self: &Arc<Self>, mut st: parking_lot::MutexGuard<'_, State>, inline: bool) {
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
        let installed = st.bindings[capability]
            .as_ref()
            .map(|b| (b.id, b.availability.is_some()));
        let Some((installed_id, has_check)) = installed else {
            return Ok(false);
        };
        if installed_id != id {
            return Ok(false);
        }
        st.bound_count -= 1;
        let check = if has_check {
            let checks = Arc::make_mut(&mut st.checks);
            checks
                .iter()
                .position(|e| e.index as usize == capability)
                .map(|p| checks.remove(p))
        } else {
            None
        };
        let inline = inline && st.checks.is_empty();
        if inline {
            Shared::release_published_bound(&mut st);
        }
        Arc::make_mut(&mut st.bound).set(capability, false);
        let removed = st.bindings[capability].take();
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
        let changed = match &st.bindings[capability] {
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
        st.context = Arc::new(context);
        self.finish_change(st, false);
        Ok(())
    }

    pub(crate) fn context(&self) -> Arc<SemanticContext> {
        self.state.lock().context.clone()
    }

    // ----- snapshots and refresh ---------------------------------------------

    /// The installed snapshot.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        let mut st = self.state.lock();
        if let Some(s) = &st.snapshot {
            return s.clone();
        }
        let p = &st.published;
        let s = Arc::new(Snapshot::new(
            p.revision,
            self.catalog.clone(),
            p.context.clone(),
            p.bound.clone(),
            p.samples.clone(),
        ));
        st.snapshot = Some(s.clone());
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
    fn as_refresh(self: &Arc<Self>, first: impl FnOnce()) {
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

    fn refresh_once(self: &Arc<Self>) {
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
    fn begin_refresh(st: &mut State) -> Begun {
        if st.checks.is_empty() {
            let (revision, subscribers, replaced) = Shared::refresh_locked(st);
            return Begun::Published(revision, subscribers, replaced);
        }
        st.revision += 1;
        Begun::Sample {
            revision: st.revision,
            context: st.context.clone(),
            bound: st.bound.clone(),
            checks: st.checks.clone(),
        }
    }

    /// The rest of a refresh, with no lock held: sample availability,
    /// publish (unless a newer revision was published meanwhile), notify.
    fn complete_refresh(self: &Arc<Self>, begun: Begun) {
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
        debug_assert!(st.checks.is_empty());
        st.revision += 1;
        let revision = st.revision;
        let p = &mut st.published;
        if p.samples.is_none() && Arc::ptr_eq(&p.context, &st.context) && Arc::ptr_eq(&p.bound, &st.bound) {
            // Same state, new revision: renumber the recipe in place.
            p.revision = revision;
            let retired = Retired {
                _recipe: None,
                _snapshot: st.snapshot.take(),
            };
            return (revision, Shared::subscribers_of(st), retired);
        }
        let published = Published {
            revision,
            context: st.context.clone(),
            bound: st.bound.clone(),
            samples: None,
        };
        let (subscribers, replaced) = Shared::publish(st, published);
        (revision, subscribers, replaced)
    }

    fn subscribers_of(st: &State) -> Vec<Arc<dyn Subscriber>> {
        if st.subscribers.is_empty() {
            Vec::new()
        } else {
            st.subscribers.iter().map(|(_, s)| s.clone()).collect()
        }
    }

    /// Installs a newer recipe (a late, older one is dropped); returns the
    /// subscribers to notify and what to drop once the lock is released.
    fn publish(st: &mut State, published: Published) -> (Vec<Arc<dyn Subscriber>>, Retired) {
        let replaced = if st.published.revision < published.revision {
            Retired {
                _recipe: Some(std::mem::replace(&mut st.published, published)),
                _snapshot: st.snapshot.take(),
            }
        } else {
            Retired {
                _recipe: Some(published),
                _snapshot: None,
            }
        };
        (Shared::subscribers_of(st), replaced)
    }

    pub(crate) fn notify(&self, revision: u64, subscribers: Vec<Arc<dyn Subscriber>>) {
        for s in subscribers {
            if self.is_closed() {
                break;
            }
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
        let id = st.next_subscriber_id;
        st.next_subscriber_id += 1;
        st.subscribers.push((id, subscriber));
        Ok(id)
    }

    pub(crate) fn unsubscribe(&self, id: u64) {
        let removed = {
            let mut st = self.state.lock();
            st.subscribers
                .iter()
                .position(|(s, _)| *s == id)
                .map(|i| st.subscribers.remove(i))
        };
        drop(removed);
    }

    // ----- stats and teardown -----------------------------------------------------

    /// Counters for diagnostics and tests, as JSON text.
    pub(crate) fn stats_json(&self) -> String {
        let st = self.state.lock();
        format!(
            "{{\"revision\":{},\"bindings\":{},\"subscribers\":{},\"pendingInvocations\":{},\"pendingConfirmations\":{},\"pendingPreflights\":{},\"receipts\":{},\"reservedIds\":{},\"closed\":{}}}",
            st.revision,
            st.bound_count,
            st.subscribers.len(),
            st.invocations.len(),
            st.confirmations.len(),
            st.preflights.len(),
            st.receipts.len(),
            st.reserved.len(),
            st.closed
        )
    }

    /// Closes the runtime (PIPELINE.md section 9): every pending invocation
    /// gets `failed EXECUTION_ABORTED` with its event, every pending
    /// preflight its report, pending confirmations end without receipts;
    /// bindings and subscribers are released. Idempotent.
    pub(crate) fn close(self: &Arc<Self>) {
        let (invocations, confirmations, preflights, bindings, subscribers) = {
            let mut st = self.state.lock();
            if st.closed {
                // Closed before (a Rust host's explicit `close`, perhaps
                // from a callback on the timer thread): this call, the free
                // in that case, still waits for the timer thread.
                drop(st);
                self.shut_timer_gate();
                return;
            }
            st.closed = true;
            self.closed.store(true, Ordering::SeqCst);
            let mut invocations: Vec<_> = st.invocations.drain().collect();
            invocations.sort_by_key(|(k, _)| *k);
            let mut confirmations: Vec<_> = st.confirmations.drain().map(|(_, c)| c).collect();
            confirmations.sort_by_key(|c| c.seq);
            st.deadlines.clear();
            let mut preflights: Vec<_> = st.preflights.drain().collect();
            preflights.sort_by_key(|(k, _)| *k);
            // Sized up front: collecting from `filter_map` grows the vector
            // by doubling (six reallocations for 100 bindings; BENCHMARKS.md,
            // change 11).
            let mut bindings = Vec::with_capacity(st.bound_count);
            bindings.extend(st.bindings.iter_mut().filter_map(Option::take));
            st.bound_count = 0;
            let checks = std::mem::take(&mut st.checks);
            let subscribers = std::mem::take(&mut st.subscribers);
            (invocations, confirmations, preflights, (bindings, checks), subscribers)
        };
        for (_, core) in invocations {
            self.abort_on_close(&core);
        }
        for c in confirmations {
            self.close_confirmation_on_teardown(c);
        }
        for (_, p) in preflights {
            self.abort_preflight_on_close(&p);
        }
        drop(bindings);
        drop(subscribers);
        self.shut_timer_gate();
    }

    /// Expiries the timer thread took before the close finish delivering,
    /// and it drops its references to the runtime, before the close returns
    /// (unless this is the timer thread, closing from one of those
    /// callbacks). No lock is held while they run.
    fn shut_timer_gate(self: &Arc<Self>) {
        let on_timer_thread = TIMER_WORK.with(|t| t.get()) == Arc::as_ptr(self) as usize;
        self.timer_gate.shut(!on_timer_thread);
    }
}
