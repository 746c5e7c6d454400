//! rcip: the RCIP 1.0 capability runtime as a native library.
//!
//! Layers, top to bottom (DESIGN.md): [`ffi`] (the C ABI, only conversions),
//! [`mcp`] (an MCP server session over the consumer surface),
//! [`runtime`] (the state machine: bindings, context, snapshots, the
//! invocation pipeline, policy, confirmation, cancellation, timers, events),
//! [`schema`] (strict JSON Schema 2020-12), [`catalog`] (definitions,
//! identifier rules, the compiled immutable catalog) and [`json`] (payload
//! text limits and number semantics). Beside them, at the bottom, `foreign`
//! holds the neutral form of what a C host registers (user data, one-shot
//! callbacks) that the runtime keeps; it names no other module.
//!
//! A Rust host can use [`runtime`] directly; every other language goes
//! through the C header `include/rcip.h`.

pub mod catalog;
pub mod ffi;
mod foreign;
pub mod json;
pub mod mcp;
pub mod runtime;
pub mod schema;

/// The ABI version of this build: MAJOR * 10000 + MINOR * 100 + PATCH of the
/// package version (build.rs); `rcip_abi_version()` and the header's
/// `RCIP_ABI_VERSION` give the same number.
pub fn abi_version() -> u32 {
    env!("RCIP_ABI_VERSION").parse().unwrap_or(0)
}
