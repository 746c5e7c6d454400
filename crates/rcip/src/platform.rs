//! The platform interface (**rcip**, docs/ARCHITECTURE.md, "Platforms"):
//! everything the core takes from the machine it runs on, in one place. The
//! runtime reads the wall clock and decides whether a wait may block only
//! through this module; the one module that starts a thread and reads
//! `Instant` on its own, the real-time timer (`runtime/timer.rs`), is
//! compiled only where [`THREADS`] holds.
//!
//! The core needs four things from its platform:
//!
//! | need | native (every target with `std` threads and time) | `wasm32-unknown-unknown` (no OS) |
//! |------|------|------|
//! | wall clock, epoch ms | `SystemTime::now` | none: the host's [`Clock`](crate::runtime::Clock) (else the documented fallback, [`FALLBACK_NOW_MS`]) |
//! | confirmation expiry | one library thread (real-time timers) | none: manual timers, driven by the host ([`Runtime::next_deadline`](crate::runtime::Runtime::next_deadline), [`Runtime::run_due_timers`](crate::runtime::Runtime::run_due_timers)) |
//! | blocking waits | condition variables | none: a wait that would block answers `WrongContext` instead |
//! | hash seed | the OS (`getrandom`) | `getrandom`'s wasm backend, which the host provides (below) |
//!
//! Which column applies is decided at compile time by
//! `cfg(all(target_family = "wasm", target_os = "unknown"))` (the bare
//! WebAssembly targets, which have `std` but whose clock, thread and wait
//! functions panic or fail at run time); other WebAssembly targets with an
//! OS layer (WASI) use the native column, where a thread that cannot start
//! leaves the timers to the host as before. Nothing here is consulted on
//! the invocation or snapshot paths: the runtime reads the platform when it
//! is built ([`RuntimeBuilder`](crate::runtime::RuntimeBuilder)) and where
//! it already read the clock.
//!
//! **Hash seed.** The core's hash maps (and those of its `jsonschema`
//! dependency, which the core cannot configure) are keyed with `ahash`,
//! seeded once per process from `getrandom`: the OS's generator on native
//! targets, so hashing stays DoS-resistant there exactly as before. On
//! `wasm32-unknown-unknown` there is no OS generator, and the seed comes
//! from the host through `getrandom`'s backend selection: with
//! wasm-bindgen's JavaScript glue, its `wasm_js` backend (enabled in the
//! tree by `jsonschema`) asks `crypto.getRandomValues`; a host without
//! wasm-bindgen builds with `RUSTFLAGS='--cfg getrandom_backend="custom"'`
//! and exports the seed from its own entropy (the smoke test,
//! `crates/rcip-wasm-smoke`, imports `crypto.getRandomValues` from
//! JavaScript). The core defines no entropy symbol of its own, so a host's
//! choice never collides with it.
//!
//! One limit on `wasm32-unknown-unknown` that the core cannot lift: `std`'s
//! own `RandomState` has no entropy there (its keys are the same in every
//! instance of a module), and `serde_json` keys the maps of parsed JSON
//! objects with it (its `preserve_order` map), so the hashing of payload
//! object keys is not DoS-resistant on that target. The payload size limit
//! ([`RuntimeBuilder::limits`](crate::runtime::RuntimeBuilder::limits))
//! bounds the work; a module exposed to hostile payloads should keep it
//! small. Native targets seed `std` from the OS as before.

/// True when this build's platform runs the confirmation expiry timer on a
/// library thread (real-time timers, the native default). False on
/// `wasm32-unknown-unknown`: there every runtime uses manual timers.
pub const THREADS: bool = !cfg!(all(target_family = "wasm", target_os = "unknown"));

/// True when this build's platform has a wall clock the runtime may read
/// when the host gives none. False on `wasm32-unknown-unknown`: there a
/// runtime needs the host's [`Clock`](crate::runtime::Clock), and
/// [`RuntimeBuilder::try_build`](crate::runtime::RuntimeBuilder::try_build)
/// refuses to build one without it.
pub const SYSTEM_CLOCK: bool = !cfg!(all(target_family = "wasm", target_os = "unknown"));

/// What the clock reads, in epoch milliseconds, on a platform without a
/// wall clock ([`SYSTEM_CLOCK`] false) when the host set no
/// [`Clock`](crate::runtime::Clock) and built with
/// [`RuntimeBuilder::build`](crate::runtime::RuntimeBuilder::build): the
/// epoch, and it stands still. Every timestamp is then 0 and every
/// confirmation's `expiresAt` is its TTL, so nothing expires by itself, but
/// nothing panics either. Use `try_build` to be told instead.
pub const FALLBACK_NOW_MS: i64 = 0;

/// The platform's wall clock in epoch milliseconds (negative before 1970),
/// or `None` on a platform without one ([`SYSTEM_CLOCK`] false). Thread-safe;
/// reads the OS clock once per call on native targets.
#[inline]
pub fn system_now_ms() -> Option<i64> {
    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    {
        Some(
            match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => d.as_millis() as i64,
                Err(e) => -(e.duration().as_millis() as i64),
            },
        )
    }
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    {
        None
    }
}

/// The clock the runtime reads when the host set none: the platform's wall
/// clock, else [`FALLBACK_NOW_MS`].
#[inline]
pub(crate) fn default_now_ms() -> i64 {
    system_now_ms().unwrap_or(FALLBACK_NOW_MS)
}

/// A monotonic deadline `timeout_ms` from now for a blocking wait, or
/// `None` when it does not fit (a wait without end). Only on platforms
/// with threads: nothing else may block.
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
#[inline]
pub(crate) fn wait_deadline(timeout_ms: u64) -> Option<std::time::Instant> {
    std::time::Instant::now().checked_add(std::time::Duration::from_millis(timeout_ms))
}
