#![warn(missing_docs)]
//! rcip: the RCIP 1.0 capability runtime.
//!
//! Modules, top to bottom: [`runtime`] (the state machine: bindings,
//! context, snapshots, the invocation pipeline, policy, confirmation,
//! cancellation, timers, events), [`schema`] (strict JSON Schema 2020-12
//! with Ajv's issues), [`catalog`] (definitions, identifier rules, the
//! compiled immutable catalog) and [`json`] (payload text limits and number
//! semantics). Beside them, at the bottom, [`foreign`] holds the neutral form
//! of what a language binding registers (user data, one-shot callbacks)
//! that the runtime keeps; it names no other module. [`platform`] is the
//! one place that reads the machine's clock, starts a thread or decides
//! whether a wait may block (native and `wasm32-unknown-unknown` defaults).
//!
//! This crate is the core of the workspace (docs/ARCHITECTURE.md,
//! "Crates"): it has no C exports, no MCP and no I/O. The MCP server is the
//! `rcip-mcp` crate, the C ABI (`librcip`, `include/rcip.h`) the
//! `rcip-capi` crate; both use only this crate's public API.

pub mod catalog;
pub mod foreign;
pub mod json;
pub mod platform;
pub mod runtime;
pub mod schema;

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The ABI version of this build: MAJOR * 10000 + MINOR * 100 + PATCH of the
/// package version. The C ABI crate derives the header's `RCIP_ABI_VERSION`
/// from the same version (the workspace has one), and `rcip_abi_version()`
/// returns this number; a test compares them.
pub const fn abi_version() -> u32 {
    const fn parse(s: &str) -> u32 {
        let b = s.as_bytes();
        let mut i = 0;
        let mut n = 0u32;
        while i < b.len() {
            n = n * 10 + (b[i] - b'0') as u32;
            i += 1;
        }
        n
    }
    parse(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
        + parse(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + parse(env!("CARGO_PKG_VERSION_PATCH"))
}
