//! rcip: the RCIP 1.0 capability runtime as a native library.
//!
//! Layers, top to bottom (DESIGN.md): [`ffi`] (the C ABI, only conversions),
//! [`mcp`] (an MCP server session over the consumer surface),
//! [`runtime`] (the state machine: bindings, context, snapshots, the
//! invocation pipeline, policy, confirmation, cancellation, timers, events),
//! [`schema`] (strict JSON Schema 2020-12), [`catalog`] (definitions,
//! identifier rules, the compiled immutable catalog) and [`json`] (payload
//! text limits and number semantics).
//!
//! A Rust host can use [`runtime`] directly; every other language goes
//! through the C header `include/rcip.h`.

pub mod catalog;
pub mod ffi;
pub mod json;
pub mod mcp;
pub mod runtime;
pub mod schema;
