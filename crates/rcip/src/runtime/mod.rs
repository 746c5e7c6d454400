//! The runtime: bindings, semantic context, snapshots, the invocation
//! pipeline, policy and confirmation, cancellation, timers and lifecycle
//! events (PIPELINE.md). This is the safe Rust API; the C ABI in
//! C ABI (`src/ffi`) only converts to and from it; nothing here names it.
//!
//! A [`Runtime`] is built from a compiled [`Catalog`] with a
//! [`RuntimeBuilder`]. Its trusted surface is [`Host`] (bind, context,
//! refresh, confirmation resolution) and its consumer surface is [`Client`]
//! (snapshot, list, subscribe, invoke, preflight). Both are borrowed views.
//! Every method may be called from any thread and from inside any callback
//! of the same runtime, except from its clock and id generator
//! ([`HostError::WrongContext`]). Work a call makes runnable (outcomes,
//! events, notifications) happens on the calling thread before it returns.

mod bindings;
mod callbacks;
mod cancel;
mod channel;
mod confirm;
mod handles;
mod invoke;
mod pending;
mod policy;
mod preflight;
mod record;
mod shared;
mod snapshot;
mod subscribers;
// The real-time timer is a library thread: none on a platform without
// threads (`crate::platform`).
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
pub(crate) mod timer;
mod types;

/// Runs `job` once on the library's timer thread (`rcip-timer`) at `at`, or
/// soon after (**rcip**). Only on platforms with threads ([`THREADS`](crate::platform::THREADS)).
///
/// This is the thread that delivers every real-time runtime's confirmation
/// expiries, offered to crates layered on the core so that a process runs
/// one timer thread, not one per crate: `rcip-mcp` queues its sessions'
/// elicitation deadlines here.
///
/// Contract:
/// - Thread-safe: may be called from any thread, also from a job or a
///   callback; it never blocks beyond the queue's short lock and never runs
///   `job` on the calling thread.
/// - Order: entries (jobs and runtime expiries) run one at a time in order
///   of `at`, ties in the order they were queued. An `at` in the past runs
///   at once.
/// - No job runs under a lock of the timer's or of any runtime's.
/// - The thread also runs the host callbacks of the expiries it delivers
///   (the clock, the confirmation observer, the expired invocation's
///   outcome callback, events), so a job may be delayed by them, and a job
///   delays every entry behind it. A job should therefore be short, must
///   not block, and should hand host code to a worker of the caller's
///   (what `rcip-mcp` does with its session pool). A caller with no worker
///   may run host code in the job, as a runtime's expiry does (an MCP
///   session with `workers: 0`); that code then runs on this thread, never
///   under a lock.
/// - A panic in `job` is caught (the thread goes on); `job` is dropped on
///   the timer thread after it ran.
/// - The thread is started on demand and ends after about two seconds with
///   nothing queued. If it cannot be started, `job` stays queued and the
///   next call (or the next confirmation) tries again.
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
pub fn schedule_at(at: std::time::Instant, job: impl FnOnce() + Send + 'static) {
    timer::schedule_job(at, Box::new(job));
}

pub use callbacks::{
    AvailabilityCheck, CheckFailed, Clock, ConfirmationObserver, EventObserver, Handler, IdGenerator, OutcomeSink,
    Policy, Subscriber,
};
pub use callbacks::{AvailabilitySlot, DirectCheck, Sink};
pub use cancel::{CancelToken, Registration};
pub use channel::{
    ClientReply, ElicitAnswer, ElicitRefusal, ElicitSink, InvocationChannel, LogLevel, ProgressObserver,
    ProgressReport, ReplySink,
};
pub use confirm::CarriedConfirmation;
pub use handles::{Binding, Invocation, PolicyRequest, Subscription, MAX_QUESTION_KEY_CHARS};
pub use pending::WAIT_FOREVER;
pub use pending::{Pending, ReadyCallback, RecordWaitError, WaitError};
pub use preflight::MAX_PREFLIGHT_PROPOSALS;
pub use record::Record;
pub use shared::{DEFAULT_CONFIRMATION_TTL_MS, RECEIPT_CAPACITY};
pub use snapshot::{Filter, Snapshot};
pub use types::NulString;
pub use types::{
    Availability, CloseReason, ConfirmationNotice, ConfirmationRecord, Decision, ErrorCode, EventPhase, JsonText,
    LifecycleEvent, Outcome, OutcomeStatus, PreflightEntry, PreflightReport, RcipError, SemanticContext,
};

use crate::catalog::{Catalog, CatalogError};
use crate::json::Limits;
use shared::{Config, Shared};
use std::fmt;
use std::sync::Arc;

/// Host misuse and configuration errors (the `rcip_result` channel).
/// Protocol results are outcomes, never these.
#[derive(Clone, Debug, PartialEq)]
pub enum HostError {
    /// Text that is not JSON where JSON is required (context, filter,
    /// decision envelope).
    InvalidJson(String),
    /// A value of the wrong shape or out of range.
    InvalidArgument(String),
    /// The catalog was refused.
    InvalidCatalog(String),
    /// Binding a capability id the catalog does not declare.
    NotInCatalog(String),
    /// The capability already has a live binding.
    AlreadyBound(String),
    /// A context names a scope the catalog does not declare.
    UnknownScope(String),
    /// A context's primary scope is not among its active scopes.
    PrimaryNotActive(String),
    /// A completion handle was settled before.
    AlreadyCompleted,
    /// The runtime is closed (freed).
    Closed,
    /// A preflight with a number of proposals outside 1..=16.
    PreflightBatchInvalid(usize),
    /// A runtime call from inside the runtime's clock or id generator.
    WrongContext,
    /// The consumer of an invocation cannot do what the handler asked: an
    /// elicitation without a consumer that can ask its user (**rcip**).
    /// Also the platform cannot run what a builder asks
    /// ([`RuntimeBuilder::try_build`], [`crate::platform`]).
    Unsupported(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::InvalidJson(m) => write!(f, "not JSON: {m}"),
            HostError::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            HostError::InvalidCatalog(m) => write!(f, "{m}"),
            HostError::NotInCatalog(id) => {
                write!(f, "capability \"{id}\" is not declared in the catalog")
            }
            HostError::AlreadyBound(id) => {
                write!(f, "capability \"{id}\" already has a live binding; unbind it first (seed: duplicate live bindings throw)")
            }
            HostError::UnknownScope(id) => {
                write!(f, "scope \"{id}\" is not declared in the catalog")
            }
            HostError::PrimaryNotActive(id) => {
                write!(f, "primaryScopeId \"{id}\" is not among the context's activeScopeIds")
            }
            HostError::AlreadyCompleted => write!(f, "this completion handle was already settled"),
            HostError::Closed => write!(f, "the runtime is closed"),
            HostError::PreflightBatchInvalid(n) => {
                write!(f, "a preflight takes 1 to {MAX_PREFLIGHT_PROPOSALS} proposals, not {n}")
            }
            HostError::WrongContext => {
                write!(
                    f,
                    "a runtime call from inside the runtime's clock or id generator is not allowed"
                )
            }
            HostError::Unsupported(m) => write!(f, "not supported: {m}"),
        }
    }
}

impl std::error::Error for HostError {}

impl From<CatalogError> for HostError {
    fn from(e: CatalogError) -> Self {
        HostError::InvalidCatalog(e.to_string())
    }
}

/// Configures a [`Runtime`]. Used from one thread at a time.
pub struct RuntimeBuilder {
    catalog: Catalog,
    config: Config,
    /// Bindings the build installs (**rcip**, [`RuntimeBuilder::bind`]).
    staged: Option<bindings::Staged>,
}

impl RuntimeBuilder {
    /// A builder over a compiled catalog (shared, not copied).
    pub fn new(catalog: &Catalog) -> RuntimeBuilder {
        RuntimeBuilder {
            catalog: catalog.clone(),
            config: Config {
                ttl_ms: DEFAULT_CONFIRMATION_TTL_MS as i64,
                limits: Limits::default(),
                // Real-time timers where the platform has threads.
                manual_timers: !crate::platform::THREADS,
                policy: None,
                confirmation_observer: None,
                observers: Vec::new(),
                clock: None,
                id_generator: None,
                progress_observer: None,
                validation_budget: crate::schema::Budget::default(),
                issue_limit: crate::schema::IssueLimit::default(),
            },
            staged: None,
        }
    }

    /// Confirmation lifetime in milliseconds (default 120000; 1 to 2^62).
    pub fn confirmation_ttl_ms(&mut self, ttl_ms: u64) -> Result<&mut RuntimeBuilder, HostError> {
        if ttl_ms == 0 || ttl_ms > 1 << 62 {
            return Err(HostError::InvalidArgument(format!(
                "confirmation TTL must be 1 to 2^62 ms, not {ttl_ms}"
            )));
        }
        self.config.ttl_ms = ttl_ms as i64;
        Ok(self)
    }

    /// Payload limits: maximum text size in bytes and nesting depth
    /// (defaults 8 MiB and 1000); 0 keeps a value as it is.
    pub fn limits(&mut self, max_bytes: usize, max_depth: usize) -> Result<&mut RuntimeBuilder, HostError> {
        if max_bytes != 0 {
            self.config.limits.max_bytes = max_bytes;
        }
        if max_depth != 0 {
            self.config.limits.max_depth = max_depth;
        }
        Ok(self)
    }

    /// The work budget of each schema validation (input and output):
    /// `max(floor, per_pair × schema size × (instance nodes + 1))` units
    /// (defaults 10^6 and 64; see [`crate::schema::Budget`]); 0 keeps a
    /// value as it is. A validation that exhausts it fails with
    /// `INPUT_INVALID` / `OUTPUT_INVALID` and one `budget` issue (**rcip**,
    /// PIPELINE.md section 8).
    pub fn validation_budget(&mut self, floor: u64, per_pair: u64) -> &mut RuntimeBuilder {
        if floor != 0 {
            self.config.validation_budget.floor = floor;
        }
        if per_pair != 0 {
            self.config.validation_budget.per_pair = per_pair;
        }
        self
    }

    /// The bound on the validation issues an outcome carries (input and
    /// output): at most `max_issues` issues and `max_bytes` bytes of issue
    /// text (defaults 1000 and 1 MiB; see [`crate::schema::IssueLimit`]);
    /// 0 keeps a value as it is. An outcome whose list was cut says so
    /// with `error.validationIssuesTruncated: true`; it is otherwise
    /// unchanged (`failed`, `INPUT_INVALID` / `OUTPUT_INVALID`; **rcip**,
    /// PIPELINE.md section 8).
    pub fn validation_issue_limit(&mut self, max_issues: usize, max_bytes: usize) -> &mut RuntimeBuilder {
        if max_issues != 0 {
            self.config.issue_limit.max_issues = max_issues;
        }
        if max_bytes != 0 {
            self.config.issue_limit.max_bytes = max_bytes;
        }
        self
    }

    /// The host policy (default: PIPELINE.md section 4's default policy).
    pub fn policy(&mut self, policy: Arc<dyn Policy>) -> &mut RuntimeBuilder {
        self.config.policy = Some(policy);
        self
    }

    /// The host's confirmation callback, told each notice as JSON text
    /// (PIPELINE.md section 5). Replaces an earlier one, also one set with
    /// [`on_confirmation_notice`](Self::on_confirmation_notice).
    pub fn confirmation_observer(&mut self, observer: Arc<dyn ConfirmationObserver>) -> &mut RuntimeBuilder {
        self.config.confirmation_observer = Some(observer);
        self
    }

    /// The host's confirmation callback over the notices' Rust type
    /// (**rcip**): `notice` receives each [`ConfirmationNotice`] (`Opened`
    /// when a confirmation opens, `Closed` when it ends), owned, on the
    /// thread and in the order [`confirmation_observer`](Self::confirmation_observer)
    /// would be told the JSON text, under the same rules (never under a
    /// runtime lock; it may call back into the runtime, and an approved
    /// re-run waits until the `Opened` call returns). It is the text
    /// observer with the text read by [`ConfirmationNotice::from_json`]:
    /// one read per notice, and the runtime's writer is tested to produce
    /// exactly that type (tests/records.rs), so every notice reads. Replaces
    /// an earlier confirmation observer.
    pub fn on_confirmation_notice(
        &mut self,
        notice: impl Fn(ConfirmationNotice) + Send + Sync + 'static,
    ) -> &mut RuntimeBuilder {
        self.confirmation_observer(Arc::new(move |json: &str| match ConfirmationNotice::from_json(json) {
            Ok(read) => notice(read),
            // Unreachable while the writer and the type agree (tested).
            Err(e) => {
                if cfg!(debug_assertions) {
                    panic!("a notice rcip wrote does not read as its type: {e}: {json}")
                }
            }
        }))
    }

    /// Adds a lifecycle event observer (called in registration order).
    pub fn event_observer(&mut self, observer: Arc<dyn EventObserver>) -> &mut RuntimeBuilder {
        self.config.observers.push(observer);
        self
    }

    /// The progress observer (**rcip**): every progress report of the
    /// runtime's handlers, also of approved re-runs, which have no
    /// consumer's channel (see [`ProgressObserver`]). Replaces an earlier
    /// one.
    pub fn progress_observer(&mut self, observer: Arc<dyn ProgressObserver>) -> &mut RuntimeBuilder {
        self.config.progress_observer = Some(observer);
        self
    }

    /// The clock (default: the system clock). On a platform without one
    /// (`wasm32-unknown-unknown`, [`crate::platform::SYSTEM_CLOCK`]) the
    /// host must set it: [`try_build`](Self::try_build) refuses a runtime
    /// without it, and [`build`](Self::build) falls back to a clock that
    /// stands still at [`crate::platform::FALLBACK_NOW_MS`].
    pub fn clock(&mut self, clock: Arc<dyn Clock>) -> &mut RuntimeBuilder {
        self.config.clock = Some(clock);
        self
    }

    /// The id generator (default: built in).
    pub fn id_generator(&mut self, generator: Arc<dyn IdGenerator>) -> &mut RuntimeBuilder {
        self.config.id_generator = Some(generator);
        self
    }

    /// Manual timers: no library thread; the host asks
    /// [`Runtime::next_deadline`] and calls [`Runtime::run_due_timers`].
    /// Default: false (real-time timers on the library's thread), except on
    /// a platform without threads (`wasm32-unknown-unknown`,
    /// [`crate::platform::THREADS`]), where it is true and `false` cannot
    /// be had: [`try_build`](Self::try_build) refuses it, and
    /// [`build`](Self::build) builds with manual timers anyway.
    pub fn manual_timers(&mut self, manual: bool) -> &mut RuntimeBuilder {
        self.config.manual_timers = manual;
        self
    }

    /// Binds a handler (and an optional availability check) to a capability
    /// of the catalog on the runtime to be built (**rcip**, PIPELINE.md
    /// section 3, "Builder bindings"): the runtime starts with it bound, in
    /// the snapshot of revision 0. Server-owned bindings (the seed's
    /// runtime per request): no [`Binding`] handle; they stay installed
    /// until the runtime closes, and cannot be unbound or given a binding
    /// revision. For everything else a builder binding is what
    /// [`Host::bind`] right after the build would make: the same
    /// invocation outcomes, events, availability and rechecks, binding ids
    /// 1, 2, ... in binding order; only the revision history differs (the
    /// first snapshot, revision 0, already has them, where binding after
    /// the build would give revisions 1 to k).
    ///
    /// The availability check is asked once by [`build`](Self::build), on
    /// the building thread, for revision 0's snapshot, and then as for any
    /// binding. The handler and check (and what they own) are dropped when
    /// the runtime closes and every [`Invocation`] handed to the handler
    /// was dropped, or with the builder when it is dropped unbuilt.
    ///
    /// Errors: [`HostError::NotInCatalog`] (an id the catalog does not
    /// declare), [`HostError::AlreadyBound`] (the capability was bound on
    /// this builder before); nothing changes then, and the build is not
    /// affected (it never fails).
    /// Cost: one catalog lookup and a slot write; the first bind allocates
    /// the runtime's slot vector (one entry per catalog capability).
    pub fn bind(
        &mut self,
        capability_id: &str,
        handler: Arc<dyn Handler>,
        availability: Option<Arc<dyn AvailabilityCheck>>,
    ) -> Result<&mut RuntimeBuilder, HostError> {
        self.bind_c(capability_id, handler, availability, None)?;
        Ok(self)
    }

    /// As [`bind`](Self::bind), for a C binding: `direct` is its
    /// availability callback in the form a refresh calls without the
    /// binding record. Returns the capability's index in catalog order.
    pub fn bind_c(
        &mut self,
        capability_id: &str,
        handler: Arc<dyn Handler>,
        availability: Option<Arc<dyn AvailabilityCheck>>,
        direct: Option<DirectCheck>,
    ) -> Result<usize, HostError> {
        // A host binding in catalog order (a runtime per request binding
        // every handler from a list) names the capability after the last
        // one bound: one comparison instead of the catalog's hash lookup.
        let capabilities = self.catalog.capabilities();
        let next = self.staged.as_ref().map_or(0, bindings::Staged::next_in_order);
        let capability = match capabilities.get(next) {
            Some(c) if c.id == capability_id => next,
            _ => match self.catalog.capability_index(capability_id) {
                Some(i) => i,
                None => return Err(HostError::NotInCatalog(capability_id.to_string())),
            },
        };
        let n = capabilities.len();
        bindings::Staged::bind(
            &mut self.staged,
            n,
            capability,
            capability_id,
            handler,
            availability,
            direct,
        )?;
        Ok(capability)
    }

    /// The number of capabilities the catalog declares.
    #[inline]
    pub fn capability_count(&self) -> usize {
        self.catalog.capabilities().len()
    }

    /// Builds the runtime: revision 0, empty context, everything unbound
    /// except what was bound on the builder ([`bind`](Self::bind), whose
    /// availability checks are asked now).
    ///
    /// It never fails. On a platform that lacks what the configuration
    /// asks for ([`crate::platform`]: `wasm32-unknown-unknown`, with no
    /// clock or with real-time timers), it builds with the documented
    /// fallbacks instead: manual timers, and a clock standing still at
    /// [`crate::platform::FALLBACK_NOW_MS`]. [`try_build`](Self::try_build)
    /// says so instead of building.
    pub fn build(mut self) -> Runtime {
        if !crate::platform::THREADS {
            self.config.manual_timers = true;
        }
        Runtime {
            shared: Shared::new(self.catalog, self.config, self.staged),
        }
    }

    /// As [`build`](Self::build), but refuses a configuration the platform
    /// cannot run as asked, instead of falling back: on a platform without
    /// a wall clock ([`crate::platform::SYSTEM_CLOCK`] false:
    /// `wasm32-unknown-unknown`), a builder without a
    /// [`clock`](Self::clock); on a platform without threads
    /// ([`crate::platform::THREADS`] false), real-time timers
    /// (`manual_timers(false)`). Both are [`HostError::Unsupported`], with
    /// the setter to call in the message; the builder (and what it holds:
    /// bindings, callbacks) is dropped then. On native targets it never
    /// fails and is `Ok(build())`.
    pub fn try_build(self) -> Result<Runtime, HostError> {
        if !crate::platform::SYSTEM_CLOCK && self.config.clock.is_none() {
            return Err(HostError::Unsupported(
                "this platform has no wall clock: give the runtime one with RuntimeBuilder::clock".into(),
            ));
        }
        if !crate::platform::THREADS && !self.config.manual_timers {
            return Err(HostError::Unsupported(
                "this platform has no threads for real-time timers: use RuntimeBuilder::manual_timers(true) and drive them with next_deadline and run_due_timers".into(),
            ));
        }
        Ok(self.build())
    }
}

/// A runtime. Dropping it closes it (PIPELINE.md section 9).
pub struct Runtime {
    shared: Arc<Shared>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

impl Runtime {
    /// A runtime with the default configuration.
    pub fn new(catalog: &Catalog) -> Runtime {
        RuntimeBuilder::new(catalog).build()
    }

    /// The consumer surface. The view keeps the runtime's core alive while
    /// a call runs, so a callback may free the runtime mid-call.
    pub fn client(&self) -> Client {
        Client {
            shared: self.shared.clone(),
        }
    }

    /// The trusted host surface (see [`client`](Self::client)).
    pub fn host(&self) -> Host {
        Host {
            shared: self.shared.clone(),
        }
    }

    /// The catalog the runtime was built from.
    pub fn catalog(&self) -> &Catalog {
        &self.shared.catalog
    }

    /// The earliest pending confirmation `expiresAt` (epoch ms), if any.
    pub fn next_deadline(&self) -> Result<Option<i64>, HostError> {
        let shared = self.shared.clone();
        shared.enter()?;
        shared.note_manual_timer_thread();
        Ok(shared.next_deadline())
    }

    /// Expires every confirmation due at the clock's now, in `expiresAt`
    /// order; returns how many expired.
    pub fn run_due_timers(&self) -> Result<usize, HostError> {
        // A callback run by an expiry may free the runtime: work on a clone.
        let shared = self.shared.clone();
        shared.enter()?;
        shared.note_manual_timer_thread();
        let now = shared.now();
        Ok(shared.expire_due(now))
    }

    /// Counters as JSON text: `{"revision", "bindings", "subscribers",
    /// "pendingInvocations", "pendingConfirmations", "pendingPreflights",
    /// "receipts", "reservedIds", "closed"}`.
    pub fn stats_json(&self) -> Result<String, HostError> {
        if shared::in_restricted_callback() {
            return Err(HostError::WrongContext);
        }
        Ok(self.shared.stats_json())
    }

    /// Closes the runtime now (also done by drop).
    pub fn close(&self) {
        self.shared.clone().close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Natively the platform has a clock and threads: `try_build` is
    /// `build`, and the default timers are real-time (`crate::platform`).
    #[test]
    fn try_build_never_fails_natively() {
        let catalog = Catalog::from_bytes(
            br#"{"protocolVersion": "1.0", "application": {"id": "a", "name": "A", "description": "A."},
                 "scopes": [], "capabilities": []}"#,
        )
        .unwrap();
        const { assert!(crate::platform::THREADS && crate::platform::SYSTEM_CLOCK) };
        assert!(crate::platform::system_now_ms().is_some_and(|t| t > 1_600_000_000_000));
        let builder = RuntimeBuilder::new(&catalog);
        assert!(!builder.config.manual_timers);
        let runtime = builder.try_build().expect("nothing missing natively");
        assert_eq!(runtime.next_deadline(), Ok(None));
        let mut manual = RuntimeBuilder::new(&catalog);
        manual.manual_timers(true);
        assert!(manual.try_build().is_ok());
    }

    #[test]
    fn a_zero_limit_keeps_the_current_value() {
        let catalog = Catalog::from_bytes(
            br#"{"protocolVersion": "1.0", "application": {"id": "a", "name": "A", "description": "A."},
                 "scopes": [], "capabilities": []}"#,
        )
        .unwrap();
        let mut b = RuntimeBuilder::new(&catalog);
        b.limits(40, 3).unwrap();
        b.limits(0, 10).unwrap();
        assert_eq!(
            b.config.limits,
            Limits {
                max_bytes: 40,
                max_depth: 10
            }
        );
        b.limits(7, 0).unwrap();
        assert_eq!(
            b.config.limits,
            Limits {
                max_bytes: 7,
                max_depth: 10
            }
        );
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shared.clone().close();
    }
}

/// The trusted host surface of a runtime.
#[derive(Clone)]
pub struct Host {
    shared: Arc<Shared>,
}

impl Host {
    /// Binds a handler (and an optional availability check) to a capability
    /// of the catalog, then refreshes.
    pub fn bind(
        &self,
        capability_id: &str,
        handler: Arc<dyn Handler>,
        availability: Option<Arc<dyn AvailabilityCheck>>,
    ) -> Result<Binding, HostError> {
        let (id, capability) = self.shared.bind(capability_id, handler, availability, None)?;
        Ok(Binding::new(&self.shared, id, capability))
    }

    /// As [`bind`](Self::bind), for a C binding: `direct` is its
    /// availability callback in the form a refresh calls without the
    /// binding record.
    pub fn bind_c(
        &self,
        capability_id: &str,
        handler: Arc<dyn Handler>,
        availability: Option<Arc<dyn AvailabilityCheck>>,
        direct: Option<DirectCheck>,
    ) -> Result<Binding, HostError> {
        let (id, capability) = self.shared.bind(capability_id, handler, availability, direct)?;
        Ok(Binding::new(&self.shared, id, capability))
    }

    /// Replaces the semantic context (dedupes, validates), then refreshes.
    pub fn set_context(&self, context: SemanticContext) -> Result<(), HostError> {
        self.shared.set_context(context)
    }

    /// Parses and sets a context from JSON text.
    pub fn set_context_json(&self, text: &[u8]) -> Result<(), HostError> {
        self.shared.enter()?;
        let value = crate::json::parse_bytes(text, &Limits::default())
            .map_err(|e| HostError::InvalidJson(format!("context: {e}")))?;
        let context = SemanticContext::from_value(&value).map_err(HostError::InvalidArgument)?;
        self.shared.set_context(context)
    }

    /// Sets who this runtime's consumer acts for (**rcip**): a JSON object
    /// the host (or the MCP server, from a validated access token:
    /// `{"issuer", "subject", "scopes", "claims", "expiresAt"}`) gives, that
    /// every later policy request reads as
    /// [`PolicyRequest::principal_json`]; `None` clears it. It changes no
    /// RCIP outcome by itself: the policy decides with it (tenants,
    /// records), as PIPELINE.md section 4 leaves authorization to the host.
    /// A runtime per principal (per MCP session or stateless request) is
    /// what makes it exact.
    ///
    /// Errors: `InvalidJson` (not JSON, or deeper or longer than the payload
    /// limits), `InvalidArgument` (not an object), `Closed`.
    pub fn set_principal(&self, principal_json: Option<&str>) -> Result<(), HostError> {
        self.shared.enter()?;
        let text = match principal_json {
            None => None,
            Some(t) => {
                let value = crate::json::parse_str(t, &self.shared.config.limits)
                    .map_err(|e| HostError::InvalidJson(format!("principal: {e}")))?;
                if !value.is_object() {
                    return Err(HostError::InvalidArgument("principal: must be a JSON object".into()));
                }
                Some(Arc::new(NulString::new(value.to_string())))
            }
        };
        *self.shared.principal.lock() = text;
        Ok(())
    }

    /// Sets the context to `{"activeScopeIds": []}`.
    pub fn clear_context(&self) -> Result<(), HostError> {
        self.shared.set_context(SemanticContext::empty())
    }

    /// Refreshes the snapshot (new revision, availability sampled,
    /// subscribers notified).
    pub fn refresh(&self) -> Result<(), HostError> {
        self.shared.enter()?;
        self.shared.refresh();
        Ok(())
    }

    /// Resolves a confirmation; exactly one outcome reaches `sink`.
    pub fn resolve_confirmation(
        &self,
        confirmation_id: &str,
        approved: bool,
        sink: Box<dyn OutcomeSink>,
    ) -> Result<(), HostError> {
        self.shared.resolve(confirmation_id, approved, sink)
    }

    /// The pending confirmation `confirmation_id` as another runtime of the
    /// same catalog may resume it ([`Host::resume_confirmation`]); `None`
    /// when no confirmation of that id is pending here (**rcip**,
    /// PIPELINE.md section 5, "Confirmations that cross runtimes").
    ///
    /// Read it while the confirmation is pending, for example from the
    /// consumer's `confirmation_required` outcome callback, before this
    /// runtime closes (teardown ends the confirmation `closed`).
    pub fn carry_confirmation(&self, confirmation_id: &str) -> Option<CarriedConfirmation> {
        self.shared.carry(confirmation_id)
    }

    /// [`Host::carry_confirmation`] that refuses where a runtime call must
    /// not be made: [`HostError::WrongContext`] inside the clock or id
    /// generator, [`HostError::Closed`] on a closed runtime (for the C ABI's
    /// `rcip_host_carry_confirmation`).
    pub fn try_carry_confirmation(&self, confirmation_id: &str) -> Result<Option<CarriedConfirmation>, HostError> {
        self.shared.enter()?;
        Ok(self.shared.carry(confirmation_id))
    }

    /// Resumes a confirmation that another runtime of the same catalog
    /// opened, with the consumer's input again and the host's answer
    /// (**rcip**, PIPELINE.md section 5, "Confirmations that cross
    /// runtimes"). Exactly one outcome reaches `sink`, possibly before this
    /// returns: a confirmation still pending in this runtime is resolved as
    /// [`Host::resolve_confirmation`] would; otherwise a capability this
    /// catalog lacks is `failed CONFIRMATION_NOT_FOUND`, a decline `denied
    /// CONFIRMATION_DECLINED`, a resume at or after `expiresAt` `failed
    /// CONFIRMATION_EXPIRED`, an unbound capability or another context
    /// `denied POLICY_DENIED`, and an approval re-runs section 4 from step 2
    /// with the carried invocation id, `input` and `confirmed` true (policy,
    /// availability and validation again; `token` cancels it).
    ///
    /// Single use is the caller's duty across runtimes: resume a carried
    /// confirmation once (a consumed-id store), and answer a second attempt
    /// as an unknown id ([`Host::resolve_confirmation`] of an id this
    /// runtime never had is `failed CONFIRMATION_NOT_FOUND`).
    ///
    /// Errors: [`HostError::Closed`] (no outcome; `sink` is told
    /// `refused`), [`HostError::WrongContext`] inside a restricted callback.
    pub fn resume_confirmation(
        &self,
        carried: &CarriedConfirmation,
        approved: bool,
        input: &[u8],
        token: Option<&CancelToken>,
        sink: Box<dyn OutcomeSink>,
    ) -> Result<(), HostError> {
        self.shared.resume(carried, approved, input, token, sink)
    }

    /// [`Host::resume_confirmation`] with the outcome in the returned
    /// [`Pending`].
    pub fn resume_confirmation_pending(
        &self,
        carried: &CarriedConfirmation,
        approved: bool,
        input: &[u8],
        token: Option<&CancelToken>,
    ) -> Result<Pending, HostError> {
        let (pending, sink) = Pending::new(&self.shared);
        self.shared.resume(carried, approved, input, token, sink)?;
        Ok(pending)
    }

    /// Resolves a confirmation; its outcome goes to the returned
    /// [`Pending`].
    pub fn resolve_confirmation_pending(&self, confirmation_id: &str, approved: bool) -> Result<Pending, HostError> {
        let (pending, sink) = Pending::new(&self.shared);
        self.shared.resolve(confirmation_id, approved, sink)?;
        Ok(pending)
    }

    /// The runtime's counters, as [`Runtime::stats_json`] (for code that
    /// holds the host view only, such as an MCP server session deciding
    /// whether a session is idle).
    pub fn stats_json(&self) -> Result<String, HostError> {
        if shared::in_restricted_callback() {
            return Err(HostError::WrongContext);
        }
        Ok(self.shared.stats_json())
    }

    /// True once the runtime is closed.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// True while the confirmation `confirmation_id` is pending (opened,
    /// not yet approved, declined, expired, cancelled or closed). For
    /// code that must learn of an expiry from the runtime itself, whatever
    /// clock or timer mode it runs with (the MCP session cancels its
    /// elicitation then).
    pub fn confirmation_pending(&self, confirmation_id: &str) -> bool {
        self.shared.confirmation_pending(confirmation_id)
    }
}

/// The consumer surface of a runtime.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

impl Client {
    /// The current snapshot: the same `Arc` until the revision changes.
    pub fn snapshot(&self) -> Result<Arc<Snapshot>, HostError> {
        if shared::in_restricted_callback() {
            return Err(HostError::WrongContext);
        }
        Ok(self.shared.snapshot())
    }

    /// True once the runtime is closed (its last snapshot stays readable).
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Capabilities of the current snapshot that pass the filter, as a JSON
    /// array.
    pub fn list_json(&self, filter: &Filter) -> Result<String, HostError> {
        Ok(self.snapshot()?.list_json(filter))
    }

    /// Parses a filter from JSON text and lists.
    pub fn list_json_filtered(&self, filter: &[u8]) -> Result<String, HostError> {
        let value = crate::json::parse_bytes(filter, &Limits::default())
            .map_err(|e| HostError::InvalidJson(format!("filter: {e}")))?;
        let filter = Filter::from_value(&value).map_err(HostError::InvalidArgument)?;
        self.list_json(&filter)
    }

    /// Subscribes to snapshot revisions.
    pub fn subscribe(&self, subscriber: Arc<dyn Subscriber>) -> Result<Subscription, HostError> {
        let id = self.shared.subscribe(subscriber)?;
        Ok(Subscription {
            shared: Arc::downgrade(&self.shared),
            id,
        })
    }

    /// Invokes a capability with raw input text. Returns the invocation id;
    /// the outcome reaches `sink` exactly once, possibly before this returns.
    pub fn invoke(
        &self,
        capability_id: &str,
        input: &[u8],
        invocation_id: Option<&str>,
        token: Option<&CancelToken>,
        sink: Box<dyn OutcomeSink>,
    ) -> Result<Arc<str>, HostError> {
        self.shared
            .invoke(capability_id, input, invocation_id, token, sink.into())
    }

    /// As [`invoke`](Self::invoke), with `channel` as the invocation's side
    /// channel (**rcip**): the handler's progress reports, log messages and
    /// elicitations reach the consumer through it (an MCP session passes
    /// one per `tools/call`). An approved re-run of a confirmation the
    /// invocation opens has no channel.
    pub fn invoke_with_channel(
        &self,
        capability_id: &str,
        input: &[u8],
        invocation_id: Option<&str>,
        token: Option<&CancelToken>,
        channel: Arc<dyn InvocationChannel>,
        sink: Box<dyn OutcomeSink>,
    ) -> Result<Arc<str>, HostError> {
        self.shared
            .invoke_channel(capability_id, input, invocation_id, token, Some(channel), sink.into())
    }

    /// As [`invoke`](Self::invoke), with the sink kept inline.
    pub fn invoke_with(
        &self,
        capability_id: &str,
        input: &[u8],
        invocation_id: Option<&str>,
        token: Option<&CancelToken>,
        sink: Sink,
    ) -> Result<Arc<str>, HostError> {
        self.shared.invoke(capability_id, input, invocation_id, token, sink)
    }

    /// Invokes and waits for the outcome JSON. Must not be called where the
    /// outcome depends on work this thread would have to do. On a platform
    /// without threads (`wasm32-unknown-unknown`, [`crate::platform`])
    /// nothing else could deliver it: when the outcome has not arrived by
    /// the time the invocation call returns, this answers
    /// [`HostError::Unsupported`] instead of waiting (the invocation goes
    /// on; its outcome then goes to nobody).
    pub fn invoke_blocking(
        &self,
        capability_id: &str,
        input: &[u8],
        invocation_id: Option<&str>,
        token: Option<&CancelToken>,
    ) -> Result<String, HostError> {
        let slot = invoke::BlockingSlot::new();
        self.shared
            .invoke(capability_id, input, invocation_id, token, slot.sink().into())?;
        #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
        return Ok(slot.wait());
        #[cfg(all(target_family = "wasm", target_os = "unknown"))]
        return slot.take().ok_or_else(|| {
            HostError::Unsupported(
                "this platform has no threads to wait on: the outcome had not arrived when the invocation call returned (use invoke or invoke_pending)".into(),
            )
        });
    }

    /// As [`invoke_blocking`](Self::invoke_blocking), with the outcome read
    /// into its Rust type ([`Outcome`]) instead of JSON text.
    ///
    /// # Errors
    ///
    /// What `invoke_blocking` answers. An outcome text its own type does
    /// not read would be a bug in rcip; it is reported as
    /// [`HostError::InvalidJson`] rather than a panic.
    pub fn invoke_outcome(
        &self,
        capability_id: &str,
        input: &[u8],
        invocation_id: Option<&str>,
        token: Option<&CancelToken>,
    ) -> Result<Outcome, HostError> {
        let text = self.invoke_blocking(capability_id, input, invocation_id, token)?;
        Outcome::from_json(&text)
            .map_err(|e| HostError::InvalidJson(format!("rcip wrote an outcome its type does not read: {e}")))
    }

    /// Invokes; the outcome goes to the returned [`Pending`] (with the
    /// invocation id).
    pub fn invoke_pending(
        &self,
        capability_id: &str,
        input: &[u8],
        invocation_id: Option<&str>,
        token: Option<&CancelToken>,
    ) -> Result<(Arc<str>, Pending), HostError> {
        let (pending, sink) = Pending::new(&self.shared);
        let id = self
            .shared
            .invoke(capability_id, input, invocation_id, token, sink.into())?;
        Ok((id, pending))
    }

    /// Preflights; the report goes to the returned [`Pending`].
    pub fn preflight_pending(
        &self,
        proposals: Vec<(String, Vec<u8>)>,
        token: Option<&CancelToken>,
    ) -> Result<Pending, HostError> {
        let (pending, sink) = Pending::new(&self.shared);
        self.shared.preflight(proposals, token, sink)?;
        Ok(pending)
    }

    /// Preflights 1 to 16 proposals (capability id, input text); the report
    /// reaches `sink` once, possibly before this returns.
    pub fn preflight(
        &self,
        proposals: Vec<(String, Vec<u8>)>,
        token: Option<&CancelToken>,
        sink: Box<dyn OutcomeSink>,
    ) -> Result<(), HostError> {
        self.shared.preflight(proposals, token, sink)
    }
}
