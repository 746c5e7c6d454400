//! The session registry: who builds a session's runtime (the
//! [`SessionFactory`]), the live sessions and stateless requests by id, the
//! limits on them (in all, per peer), how a session ends, and the holders
//! of ended sessions kept for [`SESSION_RETIRE_MS`].
//!
//! Nothing here knows a wire format. A transport gives each session a
//! link ([`SessionLink`]): the session's [`McpOutput`] plus what the
//! registry asks of it (activity, whether something is still being
//! delivered, dropped messages, close). Streamable HTTP's link is its
//! router (`http/router.rs`). Every method that calls host code (the
//! factory, ending a session) must run on a worker thread; the others take
//! a registry lock only for a table lookup.

use super::factory::{
    Principal, SessionFactory, SessionInfo, SessionRequest, SessionRuntime, CLIENT_TEXT_MAX_BYTES, SESSION_RETIRE_MS,
};
use crate::{McpOptions, McpOutput, McpSession, WorkerPool};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `clientInfo` fields kept for a session's life: `name`, `version`
/// and `title` when they are strings, each cut to at most
/// [`CLIENT_TEXT_MAX_BYTES`] (at a character boundary); every other field,
/// and a field of another type, is not kept. `{}` when `info` is absent or
/// not an object.
pub(crate) fn kept_client_info(info: Option<&Value>) -> Value {
    let mut kept = Map::new();
    if let Some(Value::Object(map)) = info {
        for key in ["name", "version", "title"] {
            if let Some(Value::String(text)) = map.get(key) {
                kept.insert(key.into(), Value::String(bounded_text(text).into()));
            }
        }
    }
    Value::Object(kept)
}

/// `text` cut to at most [`CLIENT_TEXT_MAX_BYTES`] at a character
/// boundary.
pub(crate) fn bounded_text(text: &str) -> &str {
    if text.len() <= CLIENT_TEXT_MAX_BYTES {
        return text;
    }
    let mut end = CLIENT_TEXT_MAX_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What a transport keeps per session, as the registry sees it: the
/// session's output, and what decides whether the session is idle.
pub(crate) trait SessionLink: McpOutput + 'static {
    /// Restarts the idle clock (a request named the session).
    fn touch(&self);
    /// When the session was last active.
    fn last_active(&self) -> Instant;
    /// True while something is being delivered or a connection waits on
    /// the session; with `listening_counts` false a connection that only
    /// listens (HTTP's standalone `GET`) does not count.
    fn busy(&self, listening_counts: bool) -> bool;
    /// Messages dropped because a buffer of the link was full.
    fn dropped(&self) -> u64;
    /// Ends every delivery; later messages are dropped.
    fn close(&self);
}

/// One live session (or one stateless request's one-request session).
pub(crate) struct Session<O, L> {
    pub(crate) info: SessionInfo,
    pub(crate) owner: Arc<O>,
    pub(crate) mcp: McpSession,
    pub(crate) link: Arc<L>,
    ended: AtomicBool,
    /// A request named the session after its `initialize`.
    pub(crate) used: AtomicBool,
    /// The session's place in its peer's count, given back when it ends.
    peer_slot: Mutex<Option<PeerSlot>>,
    /// Who opened it ([`Principal::key`]), when requests are authenticated:
    /// only that principal's requests find it.
    principal: Option<String>,
}

impl<O, L: SessionLink> Session<O, L> {
    /// Restarts the session's idle clock.
    pub(crate) fn touch(&self) {
        self.link.touch();
    }
}

/// Who a limit counts: a peer (the client's address), or an
/// authenticated principal ([`Principal::key`]), which replaces the peer
/// where it is known (behind a proxy every client is one peer).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    Peer(IpAddr),
    Principal(Arc<str>),
}

/// What one client holds: [connections, sessions, requests in flight].
#[derive(Default)]
pub(crate) struct PeerTable {
    counts: Mutex<HashMap<ClientKey, [usize; 3]>>,
}

/// What a [`PeerSlot`] counts.
#[derive(Clone, Copy)]
pub(crate) enum PeerKind {
    Connection = 0,
    Session = 1,
    InFlight = 2,
}

/// One place in a peer's count; given back when dropped.
pub(crate) struct PeerSlot {
    table: Arc<PeerTable>,
    peer: ClientKey,
    kind: PeerKind,
}

/// The peer of an address: the IP address, IPv6 addresses by their /64
/// (one host usually holds a whole /64), IPv4-mapped IPv6 as IPv4.
pub(crate) fn peer_of(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(_) => addr,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl PeerTable {
    /// A place of `kind` for `peer` when it holds fewer than `max`.
    pub(crate) fn acquire(self: &Arc<Self>, peer: &ClientKey, kind: PeerKind, max: usize) -> Option<PeerSlot> {
        let mut counts = self.counts.lock();
        let c = counts.entry(peer.clone()).or_default();
        if c[kind as usize] >= max {
            if c.iter().all(|n| *n == 0) {
                counts.remove(peer);
            }
            return None;
        }
        c[kind as usize] += 1;
        Some(PeerSlot {
            table: self.clone(),
            peer: peer.clone(),
            kind,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut counts = self.table.counts.lock();
        if let Some(c) = counts.get_mut(&self.peer) {
            c[self.kind as usize] = c[self.kind as usize].saturating_sub(1);
            if c.iter().all(|n| *n == 0) {
                counts.remove(&self.peer);
            }
        }
    }
}

/// Which kind of session a [`Registry`] builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A legacy session, opened by `initialize`, named by its id.
    Session,
    /// One stateless (2026-07-28) request, with a runtime of its own.
    Stateless,
}

/// The limits a registry keeps.
#[derive(Clone, Debug)]
pub(crate) struct RegistryLimits {
    /// Live sessions at once; stateless requests count with them.
    pub(crate) max_sessions: usize,
    /// Live sessions and stateless requests of one peer at once.
    pub(crate) max_sessions_per_peer: usize,
    /// Client requests in flight per legacy session.
    pub(crate) max_in_flight: usize,
}

/// A place for a session being built: its peer's slot and one count of
/// the sessions being created (given back when dropped).
pub(crate) struct Reservation {
    slot: Option<PeerSlot>,
    creating: Arc<AtomicUsize>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.creating.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The sessions of one server, whatever carries their messages.
pub(crate) struct Registry<O, L> {
    factory: Box<dyn SessionFactory<O>>,
    /// Options of every session (the request-state keys resolved).
    session_options: McpOptions,
    limits: RegistryLimits,
    /// Tool calls (validation, policy, handlers) and confirmation answers.
    pub(crate) pool: WorkerPool,
    /// The factory, cancellations, session endings and the reaper: never
    /// queued behind a slow handler.
    pub(crate) control: WorkerPool,
    /// A reaper pass is queued or running.
    pub(crate) reaping: AtomicBool,
    sessions: Mutex<HashMap<String, Arc<Session<O, L>>>>,
    /// Stateless (2026-07-28) requests being served, each with a runtime
    /// and a one-request MCP session of its own, by internal id.
    stateless: Mutex<HashMap<String, Arc<Session<O, L>>>>,
    /// Sessions being created (counted against the maximum).
    creating: Arc<AtomicUsize>,
    /// Set once by [`end_all`](Self::end_all): nothing new is admitted.
    stopping: AtomicBool,
    /// Set by [`drain`](Self::drain): no new session or stateless request;
    /// the live sessions go on.
    draining: AtomicBool,
    /// Ended sessions' runtime holders, with when they ended (kept for
    /// [`SESSION_RETIRE_MS`]).
    retired: Mutex<Vec<(Instant, Arc<O>)>>,
    /// What each peer holds (the per-peer limits).
    pub(crate) peers: Arc<PeerTable>,
}

/// The messages of a refused reservation.
fn full_message(kind: Kind, max: usize) -> String {
    match kind {
        Kind::Session => format!(
            "Service Unavailable: this server holds at most {max} sessions (maxSessions); end one or retry later"
        ),
        Kind::Stateless => format!(
            "Service Unavailable: this server serves at most {max} sessions and stateless requests at once (maxSessions); retry later"
        ),
    }
}

impl<O: SessionRuntime, L: SessionLink> Registry<O, L> {
    /// A registry whose sessions `factory` builds, with `workers` worker
    /// threads for their calls and one control thread.
    pub(crate) fn new(
        factory: Box<dyn SessionFactory<O>>,
        session_options: McpOptions,
        limits: RegistryLimits,
        workers: usize,
    ) -> std::io::Result<Registry<O, L>> {
        Ok(Registry {
            factory,
            session_options,
            limits,
            pool: WorkerPool::new(workers)?,
            control: WorkerPool::new(1)?,
            reaping: AtomicBool::new(false),
            sessions: Mutex::new(HashMap::new()),
            stateless: Mutex::new(HashMap::new()),
            creating: Arc::new(AtomicUsize::new(0)),
            stopping: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            retired: Mutex::new(Vec::new()),
            peers: Arc::default(),
        })
    }

    /// True once the registry is shutting down.
    pub(crate) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Admits no new session or stateless request from now on; what is
    /// live goes on.
    pub(crate) fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// True once [`drain`](Self::drain) was called.
    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// True while a request is being answered: a call in flight in a
    /// session, a stateless request, or a session being created.
    pub(crate) fn busy(&self) -> bool {
        self.creating.load(Ordering::SeqCst) > 0
            || !self.stateless.lock().is_empty()
            || self.sessions.lock().values().any(|s| s.mcp.in_flight() > 0)
    }

    /// A place for a new session of `kind` for `peer`, or the message of
    /// the refusal (the peer holds its most, the server is full or
    /// shutting down): both are `503` over HTTP.
    pub(crate) fn reserve(&self, kind: Kind, peer: &ClientKey) -> Result<Reservation, String> {
        let Some(slot) = self
            .peers
            .acquire(peer, PeerKind::Session, self.limits.max_sessions_per_peer)
        else {
            return Err(format!(
                "Service Unavailable: this client holds {} sessions already (maxSessionsPerPeer); end one or retry later",
                self.limits.max_sessions_per_peer
            ));
        };
        let reserved = self.creating.fetch_add(1, Ordering::SeqCst) + 1;
        let reservation = Reservation {
            slot: Some(slot),
            creating: self.creating.clone(),
        };
        let live = match kind {
            Kind::Session => self.sessions.lock().len(),
            Kind::Stateless => self.sessions.lock().len() + self.stateless.lock().len(),
        };
        if self.draining() && !self.stopping() {
            return Err("Service Unavailable: this server is draining (shutting down soon); retry, another instance will answer".into());
        }
        if live + reserved > self.limits.max_sessions || self.stopping() {
            return Err(full_message(kind, self.limits.max_sessions));
        }
        Ok(reservation)
    }

    /// Builds a session of `kind` on its reservation: an id, the factory's
    /// runtime holder (host code: call on a worker), and an MCP session
    /// over it whose output is `link`. Not yet live ([`insert`](Self::insert)).
    /// For a stateless request `params` is its `_meta` (the factory sees
    /// the params [`SessionRequest::initialize_params`] documents); for a
    /// session, the `initialize` params. `Err` is the reason, for an
    /// `Internal error: ...` answer.
    pub(crate) fn build(
        &self,
        kind: Kind,
        reservation: &mut Reservation,
        params: Option<Value>,
        forwarded: &[(String, String)],
        principal: Option<&Principal>,
        link: Arc<L>,
    ) -> Result<Arc<Session<O, L>>, String> {
        let params = match kind {
            Kind::Session => params.unwrap_or(Value::Null),
            Kind::Stateless => {
                let meta = params.unwrap_or(Value::Null);
                let mut init = json!({
                    "protocolVersion": crate::MCP_MODERN_REVISION,
                    "capabilities": meta.get(crate::META_CLIENT_CAPABILITIES).cloned().unwrap_or_else(|| json!({})),
                    "_meta": meta,
                });
                if let Some(info) = init["_meta"].get(crate::META_CLIENT_INFO).cloned() {
                    init["clientInfo"] = info;
                }
                init
            }
        };
        let session_id = match (kind, new_session_id()) {
            (Kind::Session, Ok(id)) => id,
            (Kind::Stateless, Ok(id)) => format!("stateless-{id}"),
            (Kind::Session, Err(e)) => return Err(format!("no session id could be drawn: {e}")),
            (Kind::Stateless, Err(e)) => return Err(format!("no request id could be drawn: {e}")),
        };
        let request = SessionRequest {
            session_id: &session_id,
            initialize_params: &params,
            headers: forwarded,
            principal,
        };
        let owner = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.factory.create(&request))) {
            Ok(Ok(o)) => Arc::new(o),
            Ok(Err(why)) if kind == Kind::Session => return Err(format!("the session factory failed: {why}")),
            Ok(Err(why)) => return Err(format!("the request's runtime could not be built: {why}")),
            Err(_) => return Err("the session factory panicked".into()),
        };
        // The runtime's policy sees who the token names
        // (`PolicyRequest::principal_json`).
        if let Some(p) = principal {
            if let Err(e) = owner.runtime().host().set_principal(Some(&p.to_value().to_string())) {
                owner.runtime().close();
                owner.session_ended();
                return Err(format!("the principal could not be given to the runtime: {e}"));
            }
        }
        let mut options = self.session_options.clone();
        options.max_in_flight = Some(match kind {
            Kind::Session => self.limits.max_in_flight,
            Kind::Stateless => 1,
        });
        let output: Arc<dyn McpOutput> = link.clone();
        let mcp = match McpSession::with_pools(
            owner.runtime(),
            options,
            output,
            Some(self.pool.clone()),
            Some(self.control.clone()),
        ) {
            Ok(m) => m,
            Err(e) => {
                owner.runtime().close();
                owner.session_ended();
                return Err(match kind {
                    Kind::Session => format!("the session could not start: {e}"),
                    Kind::Stateless => format!("the request could not be served: {e}"),
                });
            }
        };
        if kind == Kind::Stateless {
            // The authenticated principal, when there is one: a request
            // state is bound to who the token says, not to what the host
            // derived.
            mcp.set_principal(principal.map(Principal::key).or_else(|| owner.principal()));
        }
        let info = SessionInfo {
            session_id,
            // Only bounded fields outlive the initialize (the params go
            // with it): what a client sends must not cost memory for the
            // session's life.
            client_info: kept_client_info(params.get("clientInfo")),
            protocol_version: match kind {
                Kind::Session => bounded_text(
                    params
                        .get("protocolVersion")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                )
                .to_string(),
                Kind::Stateless => crate::MCP_MODERN_REVISION.into(),
            },
            dropped_notifications: 0,
            content_replaced: 0,
        };
        Ok(Arc::new(Session {
            info,
            owner,
            mcp,
            link,
            ended: AtomicBool::new(false),
            used: AtomicBool::new(kind == Kind::Stateless),
            peer_slot: Mutex::new(reservation.slot.take()),
            principal: principal.map(Principal::key),
        }))
    }

    /// Makes a built session live (findable by its id). When the registry
    /// is shutting down the session is ended instead (host code: on a
    /// worker) and the reason returned.
    pub(crate) fn insert(&self, kind: Kind, session: &Arc<Session<O, L>>) -> Result<(), String> {
        let table = match kind {
            Kind::Session => &self.sessions,
            Kind::Stateless => &self.stateless,
        };
        let mut table = table.lock();
        if self.stopping() {
            drop(table);
            self.end(session);
            return Err("the server is shutting down".into());
        }
        table.insert(session.info.session_id.clone(), session.clone());
        Ok(())
    }

    /// Live session `id` of `principal` (`None` without authentication),
    /// marked as used. Another principal's session is not found: nothing
    /// tells a client that an id it guessed or stole exists.
    pub(crate) fn find(&self, id: &str, principal: Option<&str>) -> Option<Arc<Session<O, L>>> {
        let found = self
            .sessions
            .lock()
            .get(id)
            .filter(|s| s.principal.as_deref() == principal)
            .cloned();
        if let Some(s) = &found {
            s.used.store(true, Ordering::SeqCst);
        }
        found
    }

    /// True when session `id` is live and `principal`'s (nothing is
    /// marked).
    pub(crate) fn contains(&self, id: &str, principal: Option<&str>) -> bool {
        self.sessions
            .lock()
            .get(id)
            .is_some_and(|s| s.principal.as_deref() == principal)
    }

    /// Takes session or stateless request `id` out of its table.
    pub(crate) fn remove(&self, kind: Kind, id: &str) -> Option<Arc<Session<O, L>>> {
        match kind {
            Kind::Session => self.sessions.lock().remove(id),
            Kind::Stateless => self.stateless.lock().remove(id),
        }
    }

    /// How many sessions and stateless requests are live now.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.sessions.lock().len(), self.stateless.lock().len())
    }

    /// True when a new session or stateless request would be refused for
    /// the total ([`RegistryLimits::max_sessions`]) or because the
    /// registry is shutting down.
    pub(crate) fn full(&self) -> bool {
        let (sessions, stateless) = self.counts();
        self.stopping() || sessions + stateless + self.creating.load(Ordering::SeqCst) >= self.limits.max_sessions
    }

    /// The live sessions, by id.
    pub(crate) fn infos(&self) -> Vec<SessionInfo> {
        let mut v: Vec<SessionInfo> = self
            .sessions
            .lock()
            .values()
            .map(|s| SessionInfo {
                dropped_notifications: s.link.dropped() + s.mcp.dropped_notifications(),
                content_replaced: s.mcp.content_replaced(),
                ..s.info.clone()
            })
            .collect();
        v.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        v
    }

    /// The runtime holder of live session `id`.
    pub(crate) fn owner(&self, id: &str) -> Option<Arc<O>> {
        self.sessions.lock().get(id).map(|s| s.owner.clone())
    }

    /// Ends a session taken out of its table: no more messages, its calls
    /// cancelled, its runtime closed, then the host told. Host code: call
    /// on a worker (or the thread that shuts down). Idempotent.
    pub(crate) fn end(&self, session: &Arc<Session<O, L>>) {
        if session.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        // The runtime first: its pending calls end EXECUTION_ABORTED and
        // those outcomes reach the client's streams; then the session and
        // its link close (what is queued still goes out).
        session.owner.runtime().close();
        session.mcp.close();
        session.link.close();
        session.peer_slot.lock().take();
        session.owner.session_ended();
        self.retired.lock().push((Instant::now(), session.owner.clone()));
    }

    /// One pass of idle expiry, on a worker: a session unused since its
    /// `initialize` for `unused`, or idle for `idle` (for `listening` when
    /// only a listening connection is open), with nothing in flight and
    /// nothing pending in its runtime, ends. Then the retired holders that
    /// are old enough go.
    pub(crate) fn reap(&self, idle: Duration, unused: Duration, listening: Duration) {
        let now = Instant::now();
        let candidates: Vec<_> = self
            .sessions
            .lock()
            .values()
            .filter(|x| {
                let limit = if x.used.load(Ordering::SeqCst) { idle } else { unused };
                now.duration_since(x.link.last_active()) >= limit
            })
            .cloned()
            .collect();
        for session in candidates {
            let quiet = now.duration_since(session.link.last_active());
            let busy = session.link.busy(quiet < listening);
            if busy || session.mcp.in_flight() > 0 || has_pending(&*session.owner) {
                continue;
            }
            if let Some(x) = self.remove(Kind::Session, &session.info.session_id) {
                self.end(&x);
            }
        }
        self.drop_retired();
    }

    /// Drops the holders of sessions that ended long enough ago (on a
    /// worker: dropping a runtime releases its user data, host code).
    fn drop_retired(&self) {
        let grace = Duration::from_millis(SESSION_RETIRE_MS);
        let now = Instant::now();
        let old: Vec<_> = {
            let mut r = self.retired.lock();
            let (old, keep): (Vec<_>, Vec<_>) = r.drain(..).partition(|(at, _)| now.duration_since(*at) >= grace);
            *r = keep;
            old
        };
        if old.is_empty() {
            return;
        }
        drop(old);
        release_free_memory();
    }

    /// Stops admitting sessions and ends every live one (host code).
    pub(crate) fn end_all(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let mut sessions: Vec<_> = self.sessions.lock().drain().map(|(_, s)| s).collect();
        sessions.extend(self.stateless.lock().drain().map(|(_, s)| s));
        for s in &sessions {
            self.end(s);
        }
    }

    /// After [`end_all`](Self::end_all): the workers finish what the
    /// endings queued (up to `left`) and end, then the retired holders go,
    /// so no library thread runs host code after this returns.
    pub(crate) fn finish(&self, left: Duration) {
        self.pool.close_and_wait(left);
        self.control.close_and_wait(left);
        self.retired.lock().clear();
    }
}

/// True while the runtime has pending invocations or confirmations (the
/// host may still approve one: the session is not idle).
fn has_pending<O: SessionRuntime>(owner: &O) -> bool {
    let Ok(text) = owner.runtime().stats_json() else {
        return false;
    };
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    n("pendingInvocations") > 0 || n("pendingConfirmations") > 0
}

/// 128 bits from the operating system's CSPRNG, as 32 hex digits.
pub(crate) fn new_session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Asks the C allocator to give the pages that ended sessions freed back
/// to the operating system. A server's sessions are spread over several
/// threads, and glibc keeps what each thread's arena freed for reuse, so
/// without this the resident size after a burst of sessions stays near its
/// peak (about 10 MiB above the start after 64 sessions of the desk, see
/// BENCHMARKS.md). Only free memory is released; nothing else changes.
///
/// Why it runs for every host, unasked: `malloc_trim` is thread-safe (glibc
/// locks each arena in turn), touches no live allocation and changes no
/// allocator setting; an allocator interposed in glibc's place either
/// defines `malloc_trim` with the same meaning or leaves glibc's, which
/// then finds its own heap almost empty. Its cost is a walk of glibc's
/// arenas, paid on the control worker (never an I/O thread), at most once
/// per reaper pass (every 25 ms to 1 s) and only when a pass dropped an
/// ended session, so a host's other threads may wait on an arena lock for
/// that walk at most.
///
/// Why it is here and not in `rcip::platform`: the registry is the only
/// caller, servers end sessions in bursts, and the core neither needs it
/// nor depends on `libc` (it also builds for `wasm32-unknown-unknown`, and
/// `rcip::platform` is what the core takes from the machine, not a home
/// for services of crates above it).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // Safety: malloc_trim only returns unused pages of the allocator's own
    // heaps to the system; it may be called at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_fresh() {
        assert_eq!(new_session_id().unwrap().len(), 32);
        assert_ne!(new_session_id().unwrap(), new_session_id().unwrap());
    }

    #[test]
    fn client_text_is_bounded_at_a_character_boundary() {
        let long = "é".repeat(CLIENT_TEXT_MAX_BYTES);
        let cut = bounded_text(&long);
        assert!(cut.len() <= CLIENT_TEXT_MAX_BYTES && cut.len() >= CLIENT_TEXT_MAX_BYTES - 1);
        let kept = kept_client_info(Some(&json!({"name": "a", "version": 1, "extra": "x"})));
        assert_eq!(kept, json!({"name": "a"}));
    }
}
