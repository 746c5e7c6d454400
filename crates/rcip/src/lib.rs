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
//!
//! # A tour
//!
//! Each example below runs as a doctest. They share one catalog: a read,
//! a write and a destructive capability of a small service desk.
//!
//! ```
//! # fn catalog() -> rcip::catalog::Catalog {
//! rcip::catalog::Catalog::from_bytes(br#"{
//!   "protocolVersion": "1.0",
//!   "application": {"id": "desk", "name": "Desk", "description": "A service desk."},
//!   "scopes": [{"id": "visits", "title": "Visits", "description": "Today's visits."}],
//!   "capabilities": [
//!     {"id": "visits.lookup", "title": "Look up a visit", "description": "Reads one visit.",
//!      "scopeIds": ["visits"], "effect": "read",
//!      "inputSchema": {"type": "object", "required": ["visit"], "additionalProperties": false,
//!                      "properties": {"visit": {"type": "string", "pattern": "^V-[0-9]+$"}}},
//!      "outputSchema": {"type": "object"}},
//!     {"id": "visits.note", "title": "Add a note", "description": "Writes a note on a visit.",
//!      "scopeIds": ["visits"], "effect": "write",
//!      "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
//!     {"id": "visits.purge", "title": "Purge visits", "description": "Removes every visit.",
//!      "scopeIds": ["visits"], "effect": "destructive",
//!      "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
//!   ]
//! }"#).expect("a valid catalog")
//! # }
//! # let _ = catalog();
//! ```
//!
//! ## Bind a closure and invoke it
//!
//! A handler receives an [`Invocation`](runtime::Invocation) and settles it
//! once, now or later from any thread. [`Client::invoke_outcome`](runtime::Client::invoke_outcome)
//! waits for the outcome and returns it as its Rust type,
//! [`Outcome`](runtime::Outcome); the schema refuses bad input before any
//! handler runs.
//!
//! ```
//! # fn catalog() -> rcip::catalog::Catalog { rcip::catalog::Catalog::from_bytes(br#"{"protocolVersion":"1.0","application":{"id":"desk","name":"Desk","description":"d"},"scopes":[{"id":"visits","title":"V","description":"d"}],"capabilities":[{"id":"visits.lookup","title":"L","description":"d","scopeIds":["visits"],"effect":"read","inputSchema":{"type":"object","required":["visit"],"additionalProperties":false,"properties":{"visit":{"type":"string","pattern":"^V-[0-9]+$"}}},"outputSchema":{"type":"object"}}]}"#).unwrap() }
//! use rcip::runtime::{ErrorCode, Invocation, Outcome, Runtime};
//! use std::sync::Arc;
//!
//! let runtime = Runtime::new(&catalog());
//! let _binding = runtime.host().bind(
//!     "visits.lookup",
//!     Arc::new(|invocation: Invocation| {
//!         let visit = invocation.input()["visit"].as_str().unwrap_or_default().to_owned();
//!         invocation.complete(serde_json::json!({"visit": visit, "status": "open"})).unwrap();
//!     }),
//!     None,
//! )?;
//!
//! let client = runtime.client();
//! match client.invoke_outcome("visits.lookup", br#"{"visit": "V-17"}"#, None, None)? {
//!     Outcome::Succeeded { output, .. } => assert_eq!(output["status"], "open"),
//!     other => panic!("{other:?}"),
//! }
//! let refused = client.invoke_outcome("visits.lookup", br#"{"visit": "17"}"#, None, None)?;
//! assert_eq!(refused.error().map(|e| e.code), Some(ErrorCode::InputInvalid));
//! # Ok::<(), rcip::runtime::HostError>(())
//! ```
//!
//! ## A host policy
//!
//! The policy decides every call after the schema and availability checks
//! (PIPELINE.md section 4): allow, deny with a reason the consumer sees
//! verbatim, or ask for a confirmation. Without one, rcip's default policy
//! allows reads, denies writes and external effects, and confirms
//! destructive ones.
//!
//! ```
//! # fn catalog() -> rcip::catalog::Catalog { rcip::catalog::Catalog::from_bytes(br#"{"protocolVersion":"1.0","application":{"id":"desk","name":"Desk","description":"d"},"scopes":[{"id":"visits","title":"V","description":"d"}],"capabilities":[{"id":"visits.note","title":"N","description":"d","scopeIds":["visits"],"effect":"write","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}]}"#).unwrap() }
//! use rcip::catalog::Effect;
//! use rcip::runtime::{Decision, ErrorCode, Invocation, Outcome, PolicyRequest, RuntimeBuilder};
//! use std::sync::Arc;
//!
//! let mut builder = RuntimeBuilder::new(&catalog());
//! builder.policy(Arc::new(|request: PolicyRequest| {
//!     // Notes are allowed only with a text.
//!     let has_text = request.input_json().contains("\"text\"");
//!     let decision = match request.effect() {
//!         Effect::Write if has_text => Decision::Allow,
//!         Effect::Read => Decision::Allow,
//!         _ => Decision::Deny { reason: Some("A note needs a text.".into()) },
//!     };
//!     request.decide(decision).unwrap();
//! }));
//! builder.bind("visits.note", Arc::new(|i: Invocation| i.complete(serde_json::json!({})).unwrap()), None)?;
//! let runtime = builder.build();
//!
//! let client = runtime.client();
//! let ok = client.invoke_outcome("visits.note", br#"{"text": "Called back."}"#, None, None)?;
//! assert!(matches!(ok, Outcome::Succeeded { .. }));
//! let denied = client.invoke_outcome("visits.note", b"{}", None, None)?;
//! let error = denied.error().unwrap();
//! assert_eq!((error.code, error.message.as_str()), (ErrorCode::PolicyDenied, "A note needs a text."));
//! # Ok::<(), rcip::runtime::HostError>(())
//! ```
//!
//! ## Confirmation by the host
//!
//! A `confirmation_required` outcome names a single-use, expiring
//! confirmation that only the host can resolve (PIPELINE.md section 5).
//! The host learns of it as a [`ConfirmationNotice`](runtime::ConfirmationNotice)
//! ([`RuntimeBuilder::on_confirmation_notice`](runtime::RuntimeBuilder::on_confirmation_notice),
//! with the input only the host sees). Approving it re-runs the
//! invocation; its outcome is the resolution's, read here with
//! [`Pending::wait_outcome`](runtime::Pending::wait_outcome).
//!
//! ```
//! # fn catalog() -> rcip::catalog::Catalog { rcip::catalog::Catalog::from_bytes(br#"{"protocolVersion":"1.0","application":{"id":"desk","name":"Desk","description":"d"},"scopes":[{"id":"visits","title":"V","description":"d"}],"capabilities":[{"id":"visits.purge","title":"P","description":"Removes every visit.","scopeIds":["visits"],"effect":"destructive","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}]}"#).unwrap() }
//! use rcip::runtime::{CloseReason, ConfirmationNotice, ErrorCode, Invocation, Outcome, RuntimeBuilder, WAIT_FOREVER};
//! use std::sync::{Arc, Mutex};
//!
//! let notices = Arc::new(Mutex::new(Vec::new()));
//! let mut builder = RuntimeBuilder::new(&catalog());
//! let told = notices.clone();
//! builder.on_confirmation_notice(move |notice: ConfirmationNotice| told.lock().unwrap().push(notice));
//! builder.bind("visits.purge", Arc::new(|i: Invocation| i.complete(serde_json::json!({"purged": 3})).unwrap()), None)?;
//! let runtime = builder.build();
//!
//! let asked = runtime.client().invoke_outcome("visits.purge", br#"{"before": "2026-01-01"}"#, None, None)?;
//! let Outcome::ConfirmationRequired { confirmation, .. } = asked else { panic!("{asked:?}") };
//! let opened = notices.lock().unwrap()[0].clone();
//! let ConfirmationNotice::Opened { input, .. } = opened else { panic!("{opened:?}") };
//! assert_eq!(input["before"], "2026-01-01");
//!
//! // The host shows `confirmation.title` and `description` to its user, who approves.
//! let approved = runtime.host().resolve_confirmation_pending(&confirmation.id, true)?.wait_outcome(WAIT_FOREVER)?;
//! assert!(matches!(approved, Outcome::Succeeded { .. }));
//! assert!(matches!(notices.lock().unwrap()[1], ConfirmationNotice::Closed { reason: CloseReason::Approved, .. }));
//!
//! // Single use: a second answer finds nothing.
//! let again = runtime.host().resolve_confirmation_pending(&confirmation.id, true)?.wait_outcome(WAIT_FOREVER)?;
//! assert_eq!(again.error().map(|e| e.code), Some(ErrorCode::ConfirmationNotFound));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Cancellation
//!
//! The consumer passes a [`CancelToken`](runtime::CancelToken); a handler
//! that stops on cancellation fails as an abort, and the outcome is
//! `failed EXECUTION_ABORTED` (PIPELINE.md section 4, rule 20).
//!
//! ```
//! # fn catalog() -> rcip::catalog::Catalog { rcip::catalog::Catalog::from_bytes(br#"{"protocolVersion":"1.0","application":{"id":"desk","name":"Desk","description":"d"},"scopes":[{"id":"visits","title":"V","description":"d"}],"capabilities":[{"id":"visits.lookup","title":"L","description":"d","scopeIds":["visits"],"effect":"read","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}]}"#).unwrap() }
//! use rcip::runtime::{CancelToken, ErrorCode, Invocation, Runtime, WAIT_FOREVER};
//! use std::sync::Arc;
//!
//! let runtime = Runtime::new(&catalog());
//! // A slow handler: it keeps the invocation and gives up when cancelled.
//! let _binding = runtime.host().bind(
//!     "visits.lookup",
//!     Arc::new(|invocation: Invocation| {
//!         let token = invocation.cancel_token();
//!         token.on_cancel(move || invocation.fail(true).unwrap());
//!     }),
//!     None,
//! )?;
//! let token = CancelToken::new();
//! let (_id, pending) = runtime.client().invoke_pending("visits.lookup", b"{}", None, Some(&token))?;
//! assert!(!pending.is_ready());
//! token.cancel();
//! let outcome = pending.wait_outcome(WAIT_FOREVER)?;
//! assert_eq!(outcome.error().map(|e| e.code), Some(ErrorCode::ExecutionAborted));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Preflight
//!
//! A consumer may ask what 1 to 16 calls would meet now without running
//! any (PIPELINE.md, "Preflight"): the report, a
//! [`PreflightReport`](runtime::PreflightReport), has one entry per
//! proposal, in order, read here with
//! [`Pending::wait_report`](runtime::Pending::wait_report).
//!
//! ```
//! # fn catalog() -> rcip::catalog::Catalog { rcip::catalog::Catalog::from_bytes(br#"{"protocolVersion":"1.0","application":{"id":"desk","name":"Desk","description":"d"},"scopes":[{"id":"visits","title":"V","description":"d"}],"capabilities":[{"id":"visits.lookup","title":"L","description":"d","scopeIds":["visits"],"effect":"read","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}},{"id":"visits.note","title":"N","description":"d","scopeIds":["visits"],"effect":"write","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}},{"id":"visits.purge","title":"P","description":"Removes every visit.","scopeIds":["visits"],"effect":"destructive","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}]}"#).unwrap() }
//! use rcip::runtime::{ErrorCode, Invocation, PreflightEntry, Runtime, WAIT_FOREVER};
//! use std::sync::Arc;
//!
//! let runtime = Runtime::new(&catalog());
//! let mut bindings = Vec::new();
//! for id in ["visits.lookup", "visits.purge"] {
//!     bindings.push(runtime.host().bind(id, Arc::new(|i: Invocation| i.complete(serde_json::json!({})).unwrap()), None)?);
//! }
//! let plan = vec![
//!     ("visits.lookup".to_owned(), b"{}".to_vec()),
//!     ("visits.purge".to_owned(), b"{}".to_vec()),
//!     ("visits.note".to_owned(), b"{}".to_vec()), // nothing is bound to it
//! ];
//! let report = runtime.client().preflight_pending(plan, None)?.wait_report(WAIT_FOREVER)?;
//! assert!(report.consistent);
//! assert!(matches!(report.outcomes[0], PreflightEntry::Ready { .. }));
//! // The default policy confirms destructive effects.
//! assert!(matches!(report.outcomes[1], PreflightEntry::ConfirmationRequired { .. }));
//! let PreflightEntry::Blocked { error, .. } = &report.outcomes[2] else { panic!("{report:?}") };
//! assert_eq!(error.code, ErrorCode::CapabilityUnbound);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## A runtime per request
//!
//! A server compiles the catalog once and builds a runtime per request
//! (the seed's "create a separate runtime per server request"): a
//! [`RuntimeBuilder`](runtime::RuntimeBuilder) binds server-owned
//! handlers before the first snapshot, so the request's runtime is ready
//! at revision 0, and nothing of one request (context, confirmations,
//! ids, events) is visible to another. `Catalog` clones are a reference
//! count; building such a runtime costs a few microseconds (BENCHMARKS.md).
//!
//! ```
//! # fn catalog() -> rcip::catalog::Catalog { rcip::catalog::Catalog::from_bytes(br#"{"protocolVersion":"1.0","application":{"id":"desk","name":"Desk","description":"d"},"scopes":[{"id":"visits","title":"V","description":"d"}],"capabilities":[{"id":"visits.lookup","title":"L","description":"d","scopeIds":["visits"],"effect":"read","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}]}"#).unwrap() }
//! use rcip::catalog::Catalog;
//! use rcip::runtime::{Invocation, Outcome, Runtime, RuntimeBuilder};
//! use std::sync::Arc;
//!
//! let compiled: Catalog = catalog(); // once, at start-up
//! let for_request = |user: &str| -> Runtime {
//!     let user = user.to_owned();
//!     let mut builder = RuntimeBuilder::new(&compiled);
//!     builder
//!         .bind(
//!             "visits.lookup",
//!             Arc::new(move |i: Invocation| i.complete(serde_json::json!({"for": user})).unwrap()),
//!             None,
//!         )
//!         .unwrap();
//!     builder.build()
//! };
//!
//! for user in ["alice", "bob"] {
//!     let runtime = for_request(user);
//!     let outcome = runtime.client().invoke_outcome("visits.lookup", b"{}", None, None)?;
//!     let Outcome::Succeeded { output, .. } = outcome else { panic!() };
//!     assert_eq!(output["for"], user);
//!     runtime.close(); // when the response is sent
//! }
//! # Ok::<(), rcip::runtime::HostError>(())
//! ```
//!
//! The crate's `examples/` directory has the same steps as programs
//! (`cargo run -p rcip --example embed`).

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
