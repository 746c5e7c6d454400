//! The rcip core in WebAssembly for JavaScript (issue 33,
//! bindings/js/README.md): `#[wasm_bindgen]` exports over the core's Rust
//! API (`rcip::catalog::Catalog`, `rcip::runtime`) for
//! `wasm32-unknown-unknown`. Not the C ABI (`crates/rcip-capi` is).
//!
//! **What this layer is.** A thin one: every RCIP rule, code and message
//! comes from the core, unchanged (docs/PIPELINE.md); this crate only
//! carries values across the boundary. JSON crosses it as strings (UTF-8
//! text the core parses with its own limits and strictness, and text the
//! core wrote), never as JavaScript objects converted field by field. The
//! JavaScript module `bindings/js/src/core.mjs` builds the reference's API
//! (`createRcipRuntime`, Promises, `AbortSignal`) over these exports.
//!
//! **Threads.** One: `wasm32-unknown-unknown` without the `atomics` target
//! feature has a single thread, the JavaScript event loop's (a build with
//! `atomics` is refused at compile time). JavaScript functions the host
//! passes in are called on that thread, synchronously, from inside the call
//! into the module that triggers them (a handler from `invoke`, a
//! subscriber from `refresh`, ...), never under a runtime lock, and each may
//! call back into the module (PIPELINE.md section 7), except the clock.
//! Timers are manual (`crate::platform` of the core): the host reads
//! `WasmRuntime::nextDeadline` and calls `WasmRuntime::runDueTimers`
//! (the JavaScript layer does so from `setTimeout`).
//!
//! **Errors.** A host misuse or configuration error
//! (the core's `HostError`, or a refused catalog) is thrown as a
//! JavaScript `Error` whose `code` property names it as the C ABI's result
//! names do (`INVALID_CATALOG`, `NOT_IN_CATALOG`, `ALREADY_BOUND`,
//! `UNKNOWN_SCOPE`, `PRIMARY_NOT_ACTIVE`, `INVALID_JSON`,
//! `INVALID_ARGUMENT`, `ALREADY_COMPLETED`, `CLOSED`,
//! `PREFLIGHT_BATCH_INVALID`, `WRONG_CONTEXT`, `UNSUPPORTED`) and whose
//! message is the core's. Protocol results (denials, validation failures,
//! cancellations) are outcomes, never thrown.
//!
//! **Ownership.** Each exported struct is owned by the JavaScript object
//! wasm-bindgen makes for it and released by its `free()` method. Freeing a
//! `WasmBinding` unbinds, freeing a `WasmSubscription` unsubscribes,
//! freeing an unsettled `WasmInvocation` or `WasmPolicyRequest` settles
//! it as a failure, and freeing a `WasmRuntime` closes it.
//!
//! **Hash seed.** getrandom 0.3's `wasm_js` backend (`crypto.getRandomValues`
//! through wasm-bindgen), selected by its feature alone since getrandom
//! 0.3.4; no `--cfg getrandom_backend` is needed (the core's
//! `rcip::platform` module documentation, "Hash seed").
//!
//! On native targets this crate is empty: it exists for
//! `wasm32-unknown-unknown` only (`make js` builds it).

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
mod js;

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub use js::*;
