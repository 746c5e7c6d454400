//! The runtime's shared core: configuration, the state behind the one lock
//! (its parts live with their flows: `bindings.rs`, `subscribers.rs`,
//! `invoke.rs`, `confirm.rs`, `preflight.rs`), ids, time, events, stats and
//! teardown.
//!
//! Locking discipline: `Shared::state` and each invocation's or
//! preflight's own mutex are held only for short reads and writes; no host
//! code (callbacks) ever runs while one is held, and nothing that owns host
//! user data is dropped while one is held (user-data release is host code).

use super::bindings::{BindingState, Staged};
use super::callbacks::{Clock, ConfirmationObserver, EventObserver, IdGenerator, Policy};
use super::confirm::ConfirmationState;
use super::invoke::InvocationState;
use super::preflight::PreflightState;
use super::subscribers::SubscriberState;
use super::types::{ErrorCode, EventPhase, LifecycleEvent};
use super::HostError;
use crate::catalog::Catalog;
use crate::json::Limits;
use crossbeam_utils::CachePadded;
use once_cell::sync::OnceCell;
use parking_lot::{Condvar, Mutex};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, VecDeque};
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
    /// Receives every progress report (**rcip**, `channel.rs`).
    pub progress_observer: Option<Arc<dyn super::channel::ProgressObserver>>,
    /// The work budget of each schema validation.
    pub validation_budget: crate::schema::Budget,
    /// The bound on the issues each validation keeps.
    pub issue_limit: crate::schema::IssueLimit,
}

/// Everything behind the runtime's lock, by flow. One lock serves all
/// flows (an invocation reads bindings, context and its reservation in one
/// critical section); each part's type says what it keeps and which
/// invariants hold while the lock is released.
pub(crate) struct State {
    /// Set once by `close`; every flow refuses new work after it.
    pub closed: bool,
    /// Bindings, context, revisions and the installed snapshot
    /// (`bindings.rs`).
    pub bindings: BindingState,
    /// Snapshot subscribers (`subscribers.rs`).
    pub subscribers: SubscriberState,
    /// Reserved invocation ids and running invocations (`invoke.rs`).
    pub invocations: InvocationState,
    /// Pending confirmations, their deadlines and receipts (`confirm.rs`).
    pub confirmations: ConfirmationState,
    /// Preflights waiting for policy answers (`preflight.rs`).
    pub preflights: PreflightState,
    /// One sequence for the keys of invocations and preflights and the
    /// creation order of confirmations.
    pub next_seq: u64,
}

/// Two threads invoking on one runtime both write its lock (and the state
/// behind it), its id counter and its reference counts; the fields they
/// only read (catalog, configuration, `closed`) sit on other cache lines, so
/// those writes do not also evict them (BENCHMARKS.md, target (g)). The
/// alignment of `state` makes the whole struct cache-line aligned, which
/// also puts the `Arc`'s counts on a line of their own.
pub(crate) struct Shared {
    pub catalog: Catalog,
    pub config: Config,
    pub state: CachePadded<Mutex<State>>,
    pub closed: AtomicBool,
    /// Each capability's id, shared by this runtime's invocations, outcomes
    /// and events (per runtime, so that runtimes sharing a catalog do not
    /// contend on one reference count); made on first use.
    capability_ids: Box<[OnceCell<Arc<str>>]>,
    /// Keeps generated ids of different runtimes apart; made on first use.
    id_salt: OnceCell<String>,
    id_counter: CachePadded<AtomicU64>,
    /// The library's timer thread passes this gate before it takes a strong
    /// reference to the runtime and leaves it after dropping it; closing
    /// shuts it and waits (no callback starts, and no user data is released
    /// on the timer thread, after the free returned).
    pub(crate) timer_gate: Arc<TimerGate>,
    /// With manual timers: the thread that last ran them (or asked for the
    /// next deadline), where waiting for an outcome is refused (WRONG_CONTEXT).
    pub(crate) manual_timer_thread: Mutex<Option<std::thread::ThreadId>>,
    /// Who the runtime's consumer acts for, as compact JSON text
    /// ([`Host::set_principal`](super::Host::set_principal), **rcip**): read
    /// by a policy request only when the policy asks, so it costs the
    /// invocation path nothing.
    pub(crate) principal: Mutex<Option<Arc<super::types::NulString>>>,
}

thread_local! {
    /// Depth of clock / id-generator calls on this thread: runtime calls
    /// made from them answer WRONG_CONTEXT (PIPELINE.md section 7).
    static RESTRICTED: Cell<u32> = const { Cell::new(0) };
    /// Runtimes this thread is refreshing, with the number of refreshes
    /// queued behind the current one (PIPELINE.md section 2).
    pub(super) static REFRESHING: RefCell<Vec<(usize, u32)>> = const { RefCell::new(Vec::new()) };
    /// The runtime whose expiries this (timer) thread is delivering.
    static TIMER_WORK: Cell<usize> = const { Cell::new(0) };
    /// The runtimes whose host callbacks this thread is inside, innermost
    /// last: a wait for an outcome from there answers WRONG_CONTEXT.
    static IN_CALLBACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Marks this thread as running a host callback of one runtime for as long
/// as the guard lives (see [`in_callback_of`]).
pub(crate) struct CallbackScope(());

impl CallbackScope {
    #[inline]
    pub(crate) fn enter(runtime: &Shared) -> CallbackScope {
        let key = runtime as *const Shared as usize;
        IN_CALLBACK.with(|c| c.borrow_mut().push(key));
        CallbackScope(())
    }
}

impl Drop for CallbackScope {
    #[inline]
    fn drop(&mut self) {
        IN_CALLBACK.with(|c| {
            c.borrow_mut().pop();
        });
    }
}

/// True while this thread is inside a host callback (handler, policy,
/// outcome, report, event, confirmation or subscriber callback) of the
/// runtime at `runtime` (`Arc::as_ptr` of its shared state).
#[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
pub(crate) fn in_callback_of(runtime: usize) -> bool {
    IN_CALLBACK.with(|c| c.borrow().contains(&runtime))
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
// No timer thread without threads (`crate::platform`).
#[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
pub(crate) struct TimerGate {
    /// (timer threads inside, shut).
    state: Mutex<(u32, bool)>,
    idle: Condvar,
    /// The earliest wake-up queued for this runtime on the timer thread and
    /// not yet taken off the queue; read and written only under the timer
    /// queue's lock (`timer.rs`, which explains why a later deadline needs
    /// no wake-up of its own).
    pub(crate) armed: Mutex<Option<std::time::Instant>>,
}

impl TimerGate {
    fn new() -> Self {
        TimerGate {
            state: Mutex::new((0, false)),
            idle: Condvar::new(),
            armed: Mutex::new(None),
        }
    }

    /// Admits the timer thread; false once the runtime is closing.
    #[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
    pub(crate) fn enter(&self) -> bool {
        let mut st = self.state.lock();
        if st.1 {
            return false;
        }
        st.0 += 1;
        true
    }

    /// The timer thread has dropped its strong references to the runtime.
    #[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
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
#[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
pub(crate) struct TimerWork(());

#[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
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

/// The clock of a runtime built without one: the platform's wall clock,
/// else the documented fallback (`crate::platform`).
#[inline]
pub(crate) fn system_now_ms() -> i64 {
    crate::platform::default_now_ms()
}

impl Shared {
    pub(crate) fn new(catalog: Catalog, config: Config, staged: Option<Staged>) -> Arc<Shared> {
        let n = catalog.capabilities().len();
        Arc::new(Shared {
            catalog,
            config,
            state: CachePadded::new(Mutex::new(State {
                closed: false,
                bindings: BindingState::initial(n, staged),
                subscribers: SubscriberState {
                    list: Vec::new(),
                    next_id: 1,
                },
                invocations: InvocationState::new(),
                confirmations: ConfirmationState {
                    pending: HashMap::default(),
                    deadlines: BTreeSet::new(),
                    receipts: VecDeque::new(),
                },
                preflights: PreflightState {
                    active: HashMap::default(),
                },
                next_seq: 1,
            })),
            closed: AtomicBool::new(false),
            capability_ids: (0..n).map(|_| OnceCell::new()).collect(),
            id_salt: OnceCell::new(),
            id_counter: CachePadded::new(AtomicU64::new(0)),
            timer_gate: Arc::new(TimerGate::new()),
            manual_timer_thread: Mutex::new(None),
            principal: Mutex::new(None),
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

    /// Remembers the calling thread as the one that runs this runtime's
    /// manual timers (no effect in real-time mode).
    pub(crate) fn note_manual_timer_thread(&self) {
        if self.config.manual_timers {
            let me = std::thread::current().id();
            let mut t = self.manual_timer_thread.lock();
            if *t != Some(me) {
                *t = Some(me);
            }
        }
    }

    /// True when the calling thread is the one that last ran this
    /// runtime's manual timers.
    #[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
    pub(crate) fn is_manual_timer_thread(&self) -> bool {
        self.config.manual_timers && *self.manual_timer_thread.lock() == Some(std::thread::current().id())
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
            // The wall clock, never the host's: this may run under the
            // runtime's lock (`register_confirmation`), where no host code
            // runs. Without one (`crate::platform`) the time part is 0 and
            // `std`'s per-call keys still keep runtimes apart.
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
        // Safety: the bytes are the UTF-8 `prefix`, ASCII `_`, the ASCII
        // salt (base 36), ASCII `_` and ASCII digits, so they are UTF-8 (a
        // checked conversion cost about 100 instructions per invocation).
        Arc::from(unsafe { std::str::from_utf8_unchecked(&buf[..len]) })
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
        let _scope = CallbackScope::enter(self);
        for observer in &self.config.observers {
            observer.on_event(&event);
        }
    }

    /// Tells the host's confirmation callback, if any.
    pub(crate) fn notify_confirmation(&self, json: impl FnOnce() -> String) {
        if let Some(observer) = &self.config.confirmation_observer {
            let _scope = CallbackScope::enter(self);
            observer.on_confirmation(&json());
        }
    }

    pub(crate) fn next_seq(state: &mut State) -> u64 {
        let s = state.next_seq;
        state.next_seq += 1;
        s
    }

    // ----- stats and teardown -----------------------------------------------------

    /// Counters for diagnostics and tests, as JSON text.
    pub(crate) fn stats_json(&self) -> String {
        let st = self.state.lock();
        format!(
            "{{\"revision\":{},\"bindings\":{},\"subscribers\":{},\"pendingInvocations\":{},\"pendingConfirmations\":{},\"pendingPreflights\":{},\"receipts\":{},\"reservedIds\":{},\"closed\":{}}}",
            st.bindings.revision,
            st.bindings.bound_count,
            st.subscribers.list.len(),
            st.invocations.running_count(),
            st.confirmations.pending.len(),
            st.preflights.active.len(),
            st.confirmations.receipts.len(),
            st.invocations.reserved_count(),
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
            let invocations = st.invocations.take_all_running();
            let mut confirmations: Vec<_> = st.confirmations.pending.drain().map(|(_, c)| c).collect();
            confirmations.sort_by_key(|c| c.seq);
            st.confirmations.deadlines.clear();
            let mut preflights: Vec<_> = st.preflights.active.drain().collect();
            preflights.sort_by_key(|(k, _)| *k);
            // Sized up front: collecting from `filter_map` grows the vector
            // by doubling (six reallocations for 100 bindings; BENCHMARKS.md,
            // change 11).
            let mut bindings = Vec::with_capacity(st.bindings.bound_count);
            bindings.extend(st.bindings.slots.iter_mut().filter_map(Option::take));
            st.bindings.bound_count = 0;
            let checks = std::mem::take(&mut st.bindings.checks);
            let subscribers = std::mem::take(&mut st.subscribers.list);
            (invocations, confirmations, preflights, (bindings, checks), subscribers)
        };
        for core in invocations {
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
