//! The MCP Streamable HTTP server over the C ABI (src/mcp/http): one
//! runtime per MCP session, built by the host's factory callback.

use super::callback::{
    c_user_data, rcip_mcp_access_callback, rcip_mcp_token_callback, rcip_user_data_free_callback, UserData,
};
use super::catalog::rcip_catalog;
use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, opt_str_arg, out_arg, str_arg, FfiError};
use super::handle::{
    free_owned, handle_kind, into_owned, lend_mut, lend_owned, lent_mut, owned, owned_arg, take_owned, view_of,
};
use super::result::rcip_result;
use super::runtime::{rcip_client, rcip_host, rcip_runtime};
use super::sink::rcip_string_sink;
use super::string::into_c_string;
use rcip::runtime::Runtime;
use rcip_mcp::http::{HttpOptions, McpHttpServer, SessionFactory, SessionRequest, SessionRuntime};
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;
use std::time::Duration;

/// How long an ended MCP session's runtime memory is kept after the session
/// ended, in milliseconds, at least (so callbacks still running when it
/// ended may use the runtime's views), unless the server is freed first
/// (which waits for its worker threads).
pub const RCIP_MCP_SESSION_RETIRE_MS: u64 = 5000;

const _: () = assert!(RCIP_MCP_SESSION_RETIRE_MS == rcip_mcp::http::SESSION_RETIRE_MS);

/// Builds the runtime of a new MCP session (`rcip_mcp_server_new`): the
/// host builds a runtime from the server's catalog
/// (`rcip_runtime_builder_new`), binds its handlers, sets its policy and
/// context, and hands it over with `rcip_mcp_session_setup_accept`.
///
/// Returns 0 after accepting; any other value fails the client's
/// `initialize` with JSON-RPC `-32603` and creates no session (a runtime
/// accepted before a non-zero return is closed and freed, and its
/// session user data released).
///
/// Called on a library worker thread (`rcip-mcp-worker`), never on an I/O
/// thread, once per `initialize` that carries no `Mcp-Session-Id`, and,
/// when the server serves MCP 2026-07-28 (option `eras` `"both"` or
/// `"modern"`), once per stateless request that needs a runtime
/// (`tools/list`, `tools/call`): its setup has the internal session id
/// `stateless-` and 32 hex digits (never sent to the client, not found by
/// `rcip_mcp_server_session_find`) and, as initialize params,
/// `{"protocolVersion": "2026-07-28", "capabilities", "clientInfo"?,
/// "_meta"}` from the request's `_meta`; that runtime ends with the
/// request (docs/MCP.md, "Over Streamable HTTP"). Possibly concurrently
/// with itself (two clients connecting at once).
/// `setup` and every string read from it are valid during the call only.
/// It may call any rcip function except `rcip_mcp_server_shutdown` and
/// `rcip_mcp_server_free` of its own server. `user_data` is the server's
/// (`rcip_mcp_server_new`).
pub type rcip_mcp_session_factory_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, setup: *mut rcip_mcp_session_setup) -> i32>;

/// What the session factory is told about a new session, and where it
/// hands over the session's runtime.
///
/// Ownership: borrowed by the factory callback for the call only; never
/// freed.
/// Thread safety: the factory's thread only.
/// Functions: `rcip_mcp_session_setup_session_id`,
/// `rcip_mcp_session_setup_initialize_params`,
/// `rcip_mcp_session_setup_client_name`, `rcip_mcp_session_setup_header`,
/// `rcip_mcp_session_setup_accept`.
pub struct rcip_mcp_session_setup {
    _opaque: [u8; 0],
}

handle_kind!(lent rcip_mcp_session_setup => Setup);

/// What a setup handle lends.
pub(crate) struct Setup {
    session_id: CString,
    params: CString,
    client_name: Option<CString>,
    headers: Vec<(String, CString)>,
    /// The authenticated principal as JSON, when the server checks tokens.
    principal: Option<CString>,
    accepted: Option<CSessionRuntime>,
}

/// A session's runtime and the host's per-session user data.
pub(crate) struct CSessionRuntime {
    /// The runtime stays in the block the host built it in: the views the
    /// factory took (`rcip_runtime_host`, `rcip_runtime_client`: the
    /// block's address) stay valid while the session lives.
    runtime: Box<Runtime>,
    user_data: UserData,
}

impl SessionRuntime for CSessionRuntime {
    fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    fn session_ended(&self) {
        // The release runs once, now (the runtime is closed already); the
        // memory stays until nothing can reach it.
        self.user_data.release();
    }
}

/// A Streamable HTTP MCP server (MCP 2025-11-25, "Transports") serving one
/// catalog, with one runtime per MCP session (docs/MCP.md, "Serving over
/// HTTP").
///
/// Ownership: owned by the caller; freed with `rcip_mcp_server_free`
/// (which shuts it down first).
/// Thread safety: synchronized (any thread, concurrently), except that
/// `rcip_mcp_server_shutdown` and `rcip_mcp_server_free` must not be
/// called from a callback of one of its sessions' runtimes or from the
/// factory.
/// Threads: the server's I/O threads (`rcip-http-io`) never run host code;
/// the factory, handlers, policies and availability checks reached through
/// MCP, cancellations and session endings run on its worker threads
/// (`rcip-mcp-worker`, option `workers`, default 2); a deferred handler
/// settles from any thread.
/// Functions: `rcip_mcp_server_new`, `rcip_mcp_server_url`,
/// `rcip_mcp_server_start`, `rcip_mcp_server_serve`,
/// `rcip_mcp_server_shutdown`, `rcip_mcp_server_sessions`,
/// `rcip_mcp_server_session_find`, `rcip_mcp_server_free`.
pub struct rcip_mcp_server {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_mcp_server => McpHttpServer<CSessionRuntime>);

/// A live session's runtime, held by the host (an approval UI, a context
/// change): its host and client views and its user data.
///
/// Ownership: owned by the caller (`rcip_mcp_server_session_find`); freed
/// with `rcip_mcp_server_session_free`. It keeps the session's runtime
/// memory alive: after the session ends, its runtime is closed and calls
/// through the views answer `RCIP_RESULT_CLOSED` (a late approval gets
/// its outcome, never a use after free).
/// Thread safety: synchronized.
/// Functions: `rcip_mcp_server_session_host`,
/// `rcip_mcp_server_session_client`, `rcip_mcp_server_session_user_data`,
/// `rcip_mcp_server_session_free`.
pub struct rcip_mcp_server_session {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_mcp_server_session => Arc<CSessionRuntime>);

struct CFactory {
    cb: unsafe extern "C" fn(*mut c_void, *mut rcip_mcp_session_setup) -> i32,
    user_data: Arc<UserData>,
}

// Safety: rcip_mcp_session_factory_callback's doc tells the host that the
// factory runs on worker threads, concurrently with itself.
unsafe impl Send for CFactory {}
unsafe impl Sync for CFactory {}

/// `text` as a C string (a NUL, which MCP text never holds, becomes U+FFFD).
pub(crate) fn c_text(text: &str) -> CString {
    CString::new(text.replace('\0', "\u{fffd}")).unwrap_or_default()
}

impl SessionFactory<CSessionRuntime> for CFactory {
    fn create(&self, request: &SessionRequest<'_>) -> Result<CSessionRuntime, String> {
        let mut setup = Setup {
            session_id: c_text(request.session_id),
            params: c_text(&request.initialize_params.to_string()),
            client_name: request.client_name().map(c_text),
            headers: request.headers.iter().map(|(n, v)| (n.clone(), c_text(v))).collect(),
            principal: request.principal.map(|p| c_text(&p.to_value().to_string())),
            accepted: None,
        };
        // Safety: the host's function with its data; `setup` lives across
        // the call.
        let rc = unsafe { (self.cb)(self.user_data.ptr(), lend_mut::<rcip_mcp_session_setup>(&mut setup)) };
        match (rc, setup.accepted.take()) {
            (0, Some(owner)) => Ok(owner),
            (0, None) => Err("the factory returned 0 without rcip_mcp_session_setup_accept".into()),
            (rc, accepted) => {
                if let Some(owner) = accepted {
                    owner.runtime.close();
                    owner.session_ended();
                }
                Err(format!("the factory returned {rc}"))
            }
        }
    }
}

/// The id of the session being created (32 hex digits, 128 random bits).
///
/// Ownership: borrowed from `setup`, valid during the factory call.
/// Thread safety: the factory's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_setup_session_id(setup: *const rcip_mcp_session_setup) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        // Safety: NULL or the setup lent to the factory.
        unsafe { super::handle::lent(setup) }.map_or(std::ptr::null(), |s| s.session_id.as_ptr())
    })
}

/// The client's `initialize` params as JSON text.
///
/// Shape: MCP `InitializeRequest.params`: `{"protocolVersion",
/// "capabilities", "clientInfo": {"name", "version", ...}, ...}`.
/// Ownership: borrowed from `setup`, valid during the factory call.
/// Thread safety: the factory's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_setup_initialize_params(
    setup: *const rcip_mcp_session_setup,
) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        // Safety: NULL or the setup lent to the factory.
        unsafe { super::handle::lent(setup) }.map_or(std::ptr::null(), |s| s.params.as_ptr())
    })
}

/// `clientInfo.name` of the client's `initialize`, or NULL when absent.
///
/// Ownership: borrowed from `setup`, valid during the factory call.
/// Thread safety: the factory's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_setup_client_name(setup: *const rcip_mcp_session_setup) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        // Safety: NULL or the setup lent to the factory.
        unsafe { super::handle::lent(setup) }
            .and_then(|s| s.client_name.as_ref())
            .map_or(std::ptr::null(), |n| n.as_ptr())
    })
}

/// Who the request acts for, as JSON text, when the server checks access
/// tokens (the `auth` server option, docs/MCP.md "Authorization"); NULL
/// without authorization.
///
/// Shape: `{"issuer", "subject", "scopes": [string...], "claims": {the
/// claims the `auth.claims` option lists that the token had},
/// "expiresAt": seconds since the Unix epoch | null}`. The session stays
/// bound to this principal: requests of another one never reach it. Use it
/// to build the runtime a tenant may use (its policy, its bindings).
/// Ownership: borrowed from `setup`, valid during the factory call.
/// Thread safety: the factory's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_setup_principal(setup: *const rcip_mcp_session_setup) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        // Safety: NULL or the setup lent to the factory.
        unsafe { super::handle::lent(setup) }
            .and_then(|s| s.principal.as_ref())
            .map_or(std::ptr::null(), |p| p.as_ptr())
    })
}

/// The value of request header `name` (any case) of the `initialize`
/// request, or NULL when the request had none or the server's
/// `forwardHeaders` option does not name it.
///
/// Ownership: `name` is borrowed for the call; the result is borrowed
/// from `setup`, valid during the factory call.
/// Thread safety: the factory's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_setup_header(
    setup: *const rcip_mcp_session_setup,
    name: *const c_char,
) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        let (Some(s), Ok(Some(name))) = (super::handle::lent(setup), opt_str_arg(name, "name")) else {
            return std::ptr::null();
        };
        crate::string::header_value(&s.headers, name)
    })
}

/// Hands the new session its runtime.
///
/// Ownership: consumes `runtime` (on success and on failure alike: on
/// failure it is closed and freed). Its views (`rcip_runtime_host`,
/// `rcip_runtime_client`) taken before stay valid while the session lives,
/// and after it ends for at least `RCIP_MCP_SESSION_RETIRE_MS` and until
/// no `rcip_mcp_server_session` handle holds it (its callbacks may use
/// them meanwhile; calls through them then answer `RCIP_RESULT_CLOSED`);
/// code that may use them later holds a handle
/// (`rcip_mcp_server_session_find`). The session closes it when the session
/// ends (DELETE, idle expiry, server shutdown), then calls
/// `user_data_free(user_data)` once (on a worker thread or the thread
/// shutting the server down), and frees it when no
/// `rcip_mcp_server_session` handle holds it any more. `user_data` (the
/// session's data) is what `rcip_mcp_server_session_user_data` returns.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (setup, runtime),
/// `RCIP_RESULT_ALREADY_USED` (a runtime was already accepted). On
/// failure `user_data_free` is never called. Build the runtime
/// from the server's catalog (the same `rcip_catalog`, so no session
/// compiles schemas again): a runtime over a catalog whose capabilities
/// do not fit the server's `toolNames` fails the `initialize` with
/// `-32603` when the factory returns.
/// Thread safety: the factory's thread, during the factory call.
/// Callbacks: `user_data_free` runs once, after the session ended and its
/// runtime was closed (no callback of that runtime starts afterwards), on
/// a library worker thread or the thread shutting the server down, with
/// no rcip lock held; it may call any rcip function but
/// `rcip_mcp_server_shutdown` and `rcip_mcp_server_free` of its server.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_setup_accept(
    setup: *mut rcip_mcp_session_setup,
    runtime: *mut rcip_runtime,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        // Consumed here, on failure too (a runtime from
        // rcip_runtime_builder_build).
        let Some(runtime) = take_owned(runtime) else {
            return Err(FfiError::null("runtime"));
        };
        let Some(setup) = lent_mut(setup) else {
            return Err(FfiError::null("setup"));
        };
        if setup.accepted.is_some() {
            return Err(FfiError::new(
                rcip_result::AlreadyUsed,
                "this session already has its runtime",
            ));
        }
        setup.accepted = Some(CSessionRuntime {
            runtime,
            user_data: c_user_data(user_data, user_data_free),
        });
        Ok(())
    })
}

fn io_error(e: std::io::Error) -> FfiError {
    match e.kind() {
        std::io::ErrorKind::InvalidInput => FfiError::new(rcip_result::InvalidArgument, e.to_string()),
        _ => FfiError::new(rcip_result::Io, e.to_string()),
    }
}

/// Creates a Streamable HTTP MCP server for `catalog` and binds `address`
/// (nothing is served until `rcip_mcp_server_start` or
/// `rcip_mcp_server_serve`).
///
/// Shape: `address` is `IP:PORT` (`127.0.0.1:0` picks a free port; read it
/// with `rcip_mcp_server_url`). `options_json` is NULL (defaults) or one
/// object with the MCP session options of `rcip_mcp_session_new` plus the
/// server's (docs/MCP.md, "Server options"): `"endpoint"` (default
/// `"/mcp"`), `"allowedHosts"`, `"allowedOrigins"` (default on loopback:
/// the localhost names and origins, any port; elsewhere any Host and no
/// Origin), `"maxBodyBytes"` (default 4194304), `"maxSessions"` (1024),
/// `"idleTimeoutMs"` (600000), `"maxInFlight"` (64 per session),
/// `"replayEvents"` (256 per stream), `"workers"` (2), `"ioThreads"` (1),
/// `"maxConnections"` (1024), `"forwardHeaders"` (header names handed to
/// the factory), `"retryMs"` (1000), `"pollAfterMs"` (none),
/// `"headerTimeoutMs"` (10000), `"bodyTimeoutMs"` (30000),
/// `"maxSessionsPerPeer"`, `"maxConnectionsPerPeer"`,
/// `"maxInFlightPerPeer"` (256 each), `"initializeTimeoutMs"` (30000),
/// `"idleStreamTimeoutMs"` (1800000), `"resumptionBytes"` (1048576),
/// `"halfClose"` (false),
/// `"responseMode"`: `"sse-calls"` (default) | `"sse"` | `"json"`, and
/// `"toolNames"`: `"ids"` | `"safe"` | `{capability id: tool name}`.
/// Units: `*Ms` in milliseconds, `*Bytes` in bytes.
/// Ownership: `catalog` is borrowed (the server keeps its own reference);
/// `address` and `options_json` are borrowed for the call; `user_data` is
/// kept until the server is freed, then `user_data_free` runs once.
/// `*server_out` is new (free it with `rcip_mcp_server_free`); NULL on
/// failure, and then neither callback is ever called.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (catalog, address, factory,
/// server_out), `RCIP_RESULT_INVALID_UTF8` (address),
/// `RCIP_RESULT_INVALID_JSON` (options_json not JSON, or not UTF-8),
/// `RCIP_RESULT_INVALID_ARGUMENT` (an address that is not `IP:PORT`, an
/// option of the wrong shape or unknown, a tool naming with collisions or
/// names over 64 characters), `RCIP_RESULT_IO` (the address cannot be
/// bound, threads cannot start).
/// Thread safety: any thread.
/// Callbacks: `factory` per `rcip_mcp_session_factory_callback`.
/// Rule: MCP 2025-11-25, "Transports" (Streamable HTTP), "Security Best
/// Practices" (DNS rebinding); the seed's server rule (a separate runtime
/// per server request, never a server singleton).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_new(
    catalog: *const rcip_catalog,
    address: *const c_char,
    options_json: *const c_char,
    factory: rcip_mcp_session_factory_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
    server_out: *mut *mut rcip_mcp_server,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(server_out, "server_out")?;
        *out = std::ptr::null_mut();
        let catalog = owned_arg(catalog, "catalog")?;
        let address = str_arg(address, "address")?;
        let cb = factory.ok_or_else(|| FfiError::null("factory"))?;
        let options = if options_json.is_null() {
            HttpOptions::default()
        } else {
            // JSON text that is not UTF-8 is INVALID_JSON (docs/C-ABI.md, "Errors").
            let text = bytes_arg(options_json, "options_json")?;
            let value = rcip::json::parse_bytes(text, &rcip::json::Limits::default())
                .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("options_json: {e}")))?;
            HttpOptions::from_value(&value).map_err(|e| FfiError::new(rcip_result::InvalidArgument, e))?
        };
        let user_data = Arc::new(c_user_data(user_data, user_data_free));
        let factory = CFactory {
            cb,
            user_data: user_data.clone(),
        };
        match McpHttpServer::bind(catalog, address, options, factory) {
            Ok(server) => {
                *out = into_owned::<rcip_mcp_server>(server);
                Ok(())
            }
            Err(e) => {
                // The host keeps its data: the release must never run.
                user_data.disarm();
                Err(io_error(e))
            }
        }
    })
}

/// The server's URL, `http://IP:PORT/ENDPOINT` (the bound port when
/// created with port 0).
///
/// Ownership: `*url_out` is new, freed with `rcip_string_free`; NULL on
/// failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_url(server: *const rcip_mcp_server, url_out: *mut *mut c_char) -> rcip_result {
    ffi_guard!({
        let out = out_arg(url_out, "url_out")?;
        *out = std::ptr::null_mut();
        let server = owned_arg(server, "server")?;
        *out = into_c_string(&server.url());
        Ok(())
    })
}

/// Starts serving in the background (the server's own threads) and
/// returns at once.
///
/// Ownership: `server` is borrowed for the call; it must stay alive while
/// it serves (free it with `rcip_mcp_server_free`, which shuts it down).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_USED` (started
/// or shut down before), `RCIP_RESULT_IO` (threads cannot start).
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_start(server: *const rcip_mcp_server) -> rcip_result {
    ffi_guard!({
        let server = owned_arg(server, "server")?;
        server.start().map_err(|e| match e.kind() {
            std::io::ErrorKind::Other => FfiError::new(rcip_result::AlreadyUsed, e.to_string()),
            _ => io_error(e),
        })
    })
}

/// Serves until `rcip_mcp_server_shutdown` (from another thread, a signal
/// handler's thread, or a callback) has finished; starts the server first
/// if needed.
///
/// Ownership: `server` is borrowed until this returns; do not free it
/// meanwhile (shut it down instead).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_IO`.
/// Thread safety: blocks the calling thread; any other call may run
/// meanwhile on other threads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_serve(server: *const rcip_mcp_server) -> rcip_result {
    ffi_guard!({
        let server = owned_arg(server, "server")?;
        server.serve().map_err(io_error)
    })
}

/// Shuts the server down: no new connections or sessions; every session
/// ends (its runtime closed: pending invocations end `failed
/// EXECUTION_ABORTED`, pending confirmations hear `closed`; then its
/// session user data is released); open connections get until the
/// deadline to finish, then are dropped. Returns when that is done;
/// `rcip_mcp_server_serve` then returns too. Idempotent.
///
/// Units: `deadline_ms` in milliseconds (a value beyond what the clock
/// holds waits without a deadline).
/// Ownership: `server` is borrowed for the call; it is still the caller's
/// to free.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: any thread except a callback of the server's sessions
/// or its factory (it waits for them).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_shutdown(server: *const rcip_mcp_server, deadline_ms: u64) -> rcip_result {
    ffi_guard!({
        let server = owned_arg(server, "server")?;
        server.shutdown(Duration::from_millis(deadline_ms));
        Ok(())
    })
}

/// Drains, then shuts down (**rcip**; for SIGTERM): readiness
/// (`/readyz`) fails at once, new sessions and stateless requests are
/// refused with `503` and `Retry-After`, and the requests already being
/// answered get until the deadline to finish (later requests of the live
/// sessions are still served meanwhile); then `rcip_mcp_server_shutdown`
/// with what is left of the deadline (at least 100 ms). Returns when the
/// server stopped; `rcip_mcp_server_serve` then returns too.
///
/// Units: `deadline_ms` in milliseconds.
/// Ownership: `server` is borrowed for the call; it is still the caller's
/// to free.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: any thread except a callback of the server's sessions
/// or its factory (it waits for them).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_drain(server: *const rcip_mcp_server, deadline_ms: u64) -> rcip_result {
    ffi_guard!({
        let server = owned_arg(server, "server")?;
        server.drain(Duration::from_millis(deadline_ms));
        Ok(())
    })
}

/// Sets the server's access log (**rcip**): one record per answered HTTP
/// request, as JSON, to `callback` (see `rcip_mcp_access_callback` for the
/// shape and thread); NULL `callback` removes it. A log set before is
/// released: its thread delivers what was queued for it, then its
/// `user_data_free` runs once.
///
/// Ownership: `user_data` is kept until the log is replaced or removed, or
/// the server shuts down; then `user_data_free(user_data)` runs once.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (server); `RCIP_RESULT_IO` (the
/// log's thread cannot start; `user_data` is released).
/// Callbacks: see `rcip_mcp_access_callback` (its own thread, one record
/// at a time).
/// Thread safety: any thread except the access callback itself.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_set_access_log(
    server: *const rcip_mcp_server,
    callback: rcip_mcp_access_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let server = owned_arg(server, "server")?;
        let user_data = c_user_data(user_data, user_data_free);
        let log: Option<Arc<dyn rcip_mcp::http::ops::AccessLog>> = callback.map(|cb| {
            let log: Arc<dyn rcip_mcp::http::ops::AccessLog> = Arc::new(CAccessLog { cb, user_data });
            log
        });
        server.set_access_log(log).map_err(io_error)
    })
}

/// The access records dropped so far because the log's queue was full
/// (0 for NULL).
///
/// Ownership: `server` is borrowed for the call.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_access_log_dropped(server: *const rcip_mcp_server) -> u64 {
    ffi_guard_or!(0, {
        // Safety: NULL or a live server handle.
        owned_arg(server, "server").map_or(0, |s| s.access_log_dropped())
    })
}

/// Gives the server the host's check of opaque access tokens (**rcip**
/// over MCP 2026-07-28 "Authorization"), for a server whose `auth` option
/// says `"verifier": true`; until one is given every token is answered
/// `503`. A verifier given before is released (its `user_data_free` runs
/// once, after any check it is running) and the checks remembered so far
/// are dropped.
///
/// Ownership: `user_data` is kept until the verifier is replaced or the
/// server is freed; then `user_data_free(user_data)` runs once. When this
/// call fails it never runs (the data stays the caller's).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (server, callback);
/// `RCIP_RESULT_INVALID_ARGUMENT` (the server has no `auth` option, or
/// validates JWTs: its `auth` names keys instead of `"verifier": true`).
/// Callbacks: see `rcip_mcp_token_callback` (the control thread, one check
/// at a time).
/// Thread safety: any thread except the token callback itself.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_set_token_verifier(
    server: *const rcip_mcp_server,
    callback: rcip_mcp_token_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let server = owned_arg(server, "server")?;
        let cb = callback.ok_or_else(|| FfiError::null("callback"))?;
        let verifier = Arc::new(CTokenVerifier {
            cb,
            user_data: c_user_data(user_data, user_data_free),
        });
        server.set_token_verifier(verifier.clone()).map_err(|e| {
            // Refused: the server did not keep it, and a failed
            // registration never calls user_data_free.
            verifier.user_data.disarm();
            FfiError::new(rcip_result::InvalidArgument, e)
        })
    })
}

/// A C token verifier.
struct CTokenVerifier {
    cb: unsafe extern "C" fn(*mut c_void, *const c_char, *mut rcip_string_sink) -> i32,
    user_data: UserData,
}

impl rcip_mcp::http::TokenVerifier for CTokenVerifier {
    fn verify(&self, token: &str) -> Result<rcip_mcp::server::Principal, rcip_mcp::http::TokenRefusal> {
        use rcip_mcp::http::TokenRefusal;
        let Ok(text) = CString::new(token) else {
            return Err(TokenRefusal::Invalid("the access token is not valid".into()));
        };
        let mut slot = None;
        // Safety: the host's function with its data; the token and the
        // answer slot live across the call.
        let rc = unsafe { (self.cb)(self.user_data.ptr(), text.as_ptr(), rcip_string_sink::lend(&mut slot)) };
        match rc {
            0 => {
                let Some(answer) = slot else {
                    return Err(TokenRefusal::Unavailable(
                        "the token verifier admitted it without a principal".into(),
                    ));
                };
                serde_json::from_str(&answer)
                    .map_err(|e| e.to_string())
                    .and_then(|v| rcip_mcp::server::Principal::from_value(&v))
                    .map_err(|e| TokenRefusal::Unavailable(format!("the token verifier's principal is not valid: {e}")))
            }
            1 => Err(TokenRefusal::Invalid(
                slot.unwrap_or_else(|| "the access token is not valid".into()),
            )),
            _ => Err(TokenRefusal::Unavailable(
                slot.unwrap_or_else(|| "the token verifier is unavailable".into()),
            )),
        }
    }
}

/// A C access log.
struct CAccessLog {
    cb: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: UserData,
}

impl rcip_mcp::http::ops::AccessLog for CAccessLog {
    fn record(&self, record: &rcip_mcp::http::ops::AccessRecord) {
        let text = c_text(&record.to_json());
        // Safety: the host's function with its data; the text lives across
        // the call.
        unsafe { (self.cb)(self.user_data.ptr(), text.as_ptr()) };
    }
}

/// The live sessions as JSON.
///
/// Shape: `[{"sessionId", "clientInfo", "protocolVersion",
/// "droppedNotifications", "contentReplaced"}]`, ordered by session id
/// (`droppedNotifications`: progress and log notifications dropped for a
/// client that did not keep up; `contentReplaced`: content blocks replaced
/// by a text note because an output property the `content` option names
/// was not valid content, **rcip**).
/// Ownership: `*json_out` is new, freed with `rcip_string_free`; NULL on
/// failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_sessions(
    server: *const rcip_mcp_server,
    json_out: *mut *mut c_char,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(json_out, "json_out")?;
        *out = std::ptr::null_mut();
        let server = owned_arg(server, "server")?;
        let list: Vec<_> = server.sessions().iter().map(|s| s.to_value()).collect();
        *out = into_c_string(&serde_json::Value::Array(list).to_string());
        Ok(())
    })
}

/// A handle on live session `session_id`'s runtime, so the host reaches
/// the right session's runtime (approvals, context).
///
/// Ownership: `session_id` is borrowed for the call; `*session_out` is new
/// (free it with `rcip_mcp_server_session_free`); NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_UTF8`,
/// `RCIP_RESULT_NOT_FOUND` (no live session has that id).
/// Thread safety: any thread, also inside callbacks.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_session_find(
    server: *const rcip_mcp_server,
    session_id: *const c_char,
    session_out: *mut *mut rcip_mcp_server_session,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(session_out, "session_out")?;
        *out = std::ptr::null_mut();
        let server = owned_arg(server, "server")?;
        let id = str_arg(session_id, "session_id")?;
        let owner = server.session(id).ok_or_else(|| {
            FfiError::new(
                rcip_result::NotFound,
                format!("no live MCP session has the id \"{id}\""),
            )
        })?;
        *out = into_owned::<rcip_mcp_server_session>(owner);
        Ok(())
    })
}

/// The runtime a session handle holds, lent as a runtime handle (whose
/// client and host views are the same address).
unsafe fn session_runtime(session: *const rcip_mcp_server_session) -> *const rcip_runtime {
    owned(session).map_or(std::ptr::null(), |s| lend_owned::<rcip_runtime>(&*s.runtime))
}

/// The host view of the session's runtime; NULL for NULL.
///
/// Ownership: borrowed from `session`; valid until
/// `rcip_mcp_server_session_free`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_session_host(session: *const rcip_mcp_server_session) -> *const rcip_host {
    ffi_guard_or!(std::ptr::null(), {
        view_of::<rcip_runtime, rcip_host>(session_runtime(session))
    })
}

/// The consumer view of the session's runtime; NULL for NULL.
///
/// Ownership: borrowed from `session`; valid until
/// `rcip_mcp_server_session_free`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_session_client(session: *const rcip_mcp_server_session) -> *const rcip_client {
    ffi_guard_or!(std::ptr::null(), {
        view_of::<rcip_runtime, rcip_client>(session_runtime(session))
    })
}

/// The session user data given to `rcip_mcp_session_setup_accept`; NULL
/// for NULL. After the session ended its release function has run: do
/// not use the data then.
///
/// Ownership: the host's.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_session_user_data(session: *const rcip_mcp_server_session) -> *mut c_void {
    ffi_guard_or!(std::ptr::null_mut(), {
        owned(session).map_or(std::ptr::null_mut(), |s| s.user_data.ptr())
    })
}

/// Releases a session handle; the runtime's memory goes with the last
/// holder (the server while the session lives).
///
/// Ownership: consumes `session`; its views become invalid. NULL does
/// nothing; freeing twice is undefined.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_session_free(session: *mut rcip_mcp_server_session) {
    ffi_guard_or!((), {
        free_owned(session);
    })
}

/// Shuts the server down (as `rcip_mcp_server_shutdown` with a 5000 ms
/// deadline, when still running) and frees it; then the factory's
/// `user_data_free` runs once.
///
/// Ownership: consumes `server`. NULL does nothing; freeing twice is
/// undefined. `rcip_mcp_server_session` handles stay valid.
/// Thread safety: any thread except a callback of the server's sessions or
/// its factory, and not while another thread is inside a call on it other
/// than `rcip_mcp_server_serve` (which returns).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_server_free(server: *mut rcip_mcp_server) {
    ffi_guard_or!((), {
        free_owned(server);
    })
}
