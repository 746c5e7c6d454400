//! The server layer every transport shares (**rcip** structure; MCP says
//! nothing of how a server is built).
//!
//! - **Message connections** (stdio, a pipe or socket of the host's, a
//!   WebSocket): one [`McpSession`](crate::McpSession) per connection. Its
//!   sending half is an [`McpOutput`](crate::McpOutput) given to
//!   [`McpSession::new`](crate::McpSession::new), its receiving half a
//!   [`Transport`] given to
//!   [`McpSession::serve_transport`](crate::McpSession::serve_transport),
//!   which reads with backpressure, answers an over-long message `-32700`,
//!   and on the end of input lets what was asked finish for a moment, then
//!   closes the session. [`LineTransport`] and [`LineOutput`] are the
//!   newline-delimited framing of stdio on any reader and writer. Both eras
//!   are served on one connection: a 2026-07-28 request carries its own
//!   `_meta` ([`RequestRuntimes`](crate::RequestRuntimes) gives each one a
//!   runtime of its own).
//! - **Request transports** (Streamable HTTP, built in as
//!   [`crate::http`]): a registry of sessions by id, each with a runtime
//!   from a [`SessionFactory`], and one runtime per stateless request; the
//!   limits on them (in all and per peer), idle expiry, the ending of a
//!   session and the [`SESSION_RETIRE_MS`] grace of its runtime holder.
//!   The registry (`registry.rs`, crate-private) knows no wire format: a
//!   transport gives each session a link that is its output and tells
//!   whether the session is busy, and runs the factory and the endings on
//!   the registry's worker threads, never its I/O threads.
//!
//! docs/ARCHITECTURE.md ("Add a transport") gives the route for a new one.

mod factory;
// The registry serves request transports; the built-in one is HTTP.
#[cfg(feature = "http")]
mod registry;
mod transport;

pub use factory::{
    Principal, SessionFactory, SessionInfo, SessionRequest, SessionRuntime, CLIENT_TEXT_MAX_BYTES, SESSION_RETIRE_MS,
};
#[cfg(feature = "http")]
pub(crate) use registry::{
    peer_of, ClientKey, Kind, PeerKind, PeerSlot, Registry, RegistryLimits, Reservation, Session, SessionLink,
};
pub use transport::{LineOutput, LineTransport, Received, Transport};
