//! The MCP bridge over the C ABI: a session that serves a runtime's
//! capabilities to any Model Context Protocol client (src/mcp).

use super::callback::{c_json, c_user_data, rcip_user_data_free_callback, UserData};
use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, opt_str_arg, out_arg, FfiError};
use super::handle::{free_owned, handle_kind, into_owned, lend_mut, lent, lent_mut, owned_arg, take_owned};
use super::result::rcip_result;
use super::runtime::rcip_runtime;
use super::server::{c_text, RCIP_MCP_SESSION_RETIRE_MS};
use super::string::into_c_string;
use parking_lot::Mutex;
use rcip::runtime::Runtime;
use rcip_mcp::{McpOptions, McpOutput, McpSession, RequestRuntime, RequestRuntimes, RequestSetup};
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest message an MCP session reads unless its `maxMessageBytes`
/// option says otherwise, in bytes (16 MiB).
pub const RCIP_MCP_DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

const _: () = assert!(RCIP_MCP_DEFAULT_MAX_MESSAGE_BYTES == rcip_mcp::MCP_DEFAULT_MAX_MESSAGE_BYTES);

/// Receives each message an MCP session sends (`rcip_mcp_session_new`):
/// responses, server requests (`elicitation/create`) and notifications
/// (`notifications/tools/list_changed`, `notifications/cancelled`).
///
/// `message_json` is one complete JSON-RPC 2.0 message, UTF-8, without a
/// trailing newline (the stdio transport writes it followed by `\n`), valid
/// during the call only. Called one message at a time, never concurrently,
/// in order, on whichever thread produced or is delivering messages (the
/// thread of `rcip_mcp_session_receive`, or a thread that settles an
/// invocation), with no rcip lock held. It may call any rcip function,
/// including `rcip_mcp_session_receive` on the same session (that
/// message's replies follow after this call returns); it must not free
/// the session.
pub type rcip_mcp_message_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, message_json: *const c_char)>;

/// An MCP server session (MCP revision 2025-11-25) over a runtime's
/// consumer surface: `initialize`, `ping`, `tools/list`, `tools/call`,
/// cancellation and `notifications/tools/list_changed`; see docs/MCP.md
/// for the mapping.
///
/// Ownership: owned by the caller; freed with `rcip_mcp_session_free`. The
/// session keeps the runtime's core alive; after `rcip_runtime_free` its
/// tool calls are answered with a JSON-RPC internal error.
/// Thread safety: synchronized (any thread, concurrently).
/// Functions: `rcip_mcp_session_new`, `rcip_mcp_session_receive`,
/// `rcip_mcp_session_receive_with_headers`,
/// `rcip_mcp_session_set_request_runtimes`, `rcip_mcp_session_serve_stdio`,
/// `rcip_mcp_session_stats`, `rcip_mcp_session_free`.
pub struct rcip_mcp_session {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_mcp_session => McpSession);

/// The host's message callback and its user data; `user_data_free` runs
/// once when the last reference goes, only if the session was created.
struct CMessages {
    cb: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: *mut c_void,
    free: rcip_user_data_free_callback,
    armed: AtomicBool,
}

// Safety: rcip_mcp_message_callback's doc tells the host that the callback
// and user_data are used from any thread (never concurrently), and
// rcip_user_data_free_callback's that the release runs on any thread.
unsafe impl Send for CMessages {}
unsafe impl Sync for CMessages {}

impl McpOutput for CMessages {
    fn send(&self, message: &str) {
        let text = c_json(message);
        // Safety: the host's function with the host's data; the text lives
        // across the call.
        unsafe { (self.cb)(self.user_data, text.as_ptr()) };
    }
}

impl Drop for CMessages {
    fn drop(&mut self) {
        if self.armed.load(Ordering::SeqCst) {
            if let Some(free) = self.free {
                // Safety: registered by the host; called once, after the
                // last message.
                unsafe { free(self.user_data) };
            }
        }
    }
}

/// Creates an MCP session over `runtime`.
///
/// Shape: `options_json` is NULL (defaults) or `{"filter"?:
/// RcipCapabilityFilter (which capabilities tools/list offers: e.g.
/// `{"context": "current"}` or `{"availableOnly": true}`; calls are not
/// filtered), "confirmation"?: "host" (default: a `confirmation_required`
/// outcome is an error result naming the confirmation and its expiry; only
/// the host approves) | "elicit" (host opt-in: ask the MCP client's user
/// with `elicitation/create` and resolve the confirmation with the answer;
/// a client without form elicitation is answered as with "host"),
/// "pageSize"?: 1..1000 (tools per tools/list page; default all),
/// "serverName"?: string, "serverVersion"?: string, "instructions"?:
/// string (defaults: the application's id, version and description),
/// "maxMessageBytes"?: integer >= 1024 (default 16 MiB), "toolNames"?:
/// "ids" (default) | "safe" | {capability id: tool name}, "workers"?:
/// 0..64 (threads that run tool calls; default 2; 0: none),
/// "maxInFlight"?: 1..65536 (default 64), "maxQueuedMessages"?: 1..1048576
/// (default 256), "maxPendingConfirmations"?: 1..65536 (default 16),
/// "content"?: {capability id: [{"type": "json" | "text" | "image" |
/// "audio" | "resource", "property"?: output property}]} (**rcip**: which
/// output properties become the content blocks of a succeeded result;
/// docs/MCP.md, "Content blocks"), "eras"?: "both" (default: `initialize`
/// sessions and stateless MCP 2026-07-28 requests) | "legacy" (sessions
/// only) | "modern" (2026-07-28 only), "ttlMs"?: 0..86400000 (the `ttlMs`
/// of modern tools/list and server/discover results, in milliseconds;
/// default 0), "cacheScope"?: "private" (default) | "public" (of modern
/// tools/list results)}` (docs/MCP.md, "Session options" and "The two
/// eras"). Messages are JSON-RPC 2.0 text.
/// Ownership: `runtime` is borrowed (the session keeps its own reference to
/// the runtime's core); `options_json` is borrowed for the call;
/// `user_data` is kept until the session is freed and its last message
/// delivered, then `user_data_free` runs once (with a NULL `on_message`,
/// before this returns). `*session_out` is new (free
/// it with `rcip_mcp_session_free`); NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (runtime, session_out),
/// `RCIP_RESULT_INVALID_JSON` (options not JSON),
/// `RCIP_RESULT_INVALID_ARGUMENT` (options of the wrong shape or an unknown
/// key; a tool naming under which two capabilities share a name, naming
/// both ids, or a name is longer than 64 characters; a content mapping
/// that names a capability or output property the catalog does not
/// have), `RCIP_RESULT_CLOSED` (the runtime is closed),
/// `RCIP_RESULT_WRONG_CONTEXT`. On failure neither `on_message` nor
/// `user_data_free` is ever called.
/// Thread safety: any thread, also inside callbacks.
/// Callbacks: `on_message` per `rcip_mcp_message_callback`; NULL writes
/// each message to the process's standard output as one line and flushes
/// it (the MCP stdio transport, for `rcip_mcp_session_serve_stdio`): the
/// host must then write nothing else to standard output, and should ignore
/// `SIGPIPE`.
/// Rule: MCP 2025-11-25 (lifecycle, tools, cancellation, elicitation); the
/// session uses only the consumer surface, plus, with "elicit", the host's
/// confirmation resolution.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_new(
    runtime: *const rcip_runtime,
    options_json: *const c_char,
    on_message: rcip_mcp_message_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
    session_out: *mut *mut rcip_mcp_session,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(session_out, "session_out")?;
        *out = std::ptr::null_mut();
        let runtime = owned_arg(runtime, "runtime")?;
        let options = if options_json.is_null() {
            McpOptions::default()
        } else {
            let text = bytes_arg(options_json, "options_json")?;
            let value = rcip::json::parse_bytes(text, &rcip::json::Limits::default())
                .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("options_json: {e}")))?;
            McpOptions::from_value(&value).map_err(|e| FfiError::new(rcip_result::InvalidArgument, e))?
        };
        let messages = on_message.map(|cb| {
            Arc::new(CMessages {
                cb,
                user_data,
                free: user_data_free,
                armed: AtomicBool::new(false),
            })
        });
        let output: Arc<dyn McpOutput> = match &messages {
            Some(m) => m.clone(),
            None => McpSession::stdout_output(),
        };
        let session = McpSession::new(runtime, options, output)?;
        match messages {
            Some(m) => m.armed.store(true, Ordering::SeqCst),
            None => {
                // No callback keeps the data: release it now, once.
                if let Some(free) = user_data_free {
                    free(user_data);
                }
            }
        }
        *out = into_owned::<rcip_mcp_session>(session);
        Ok(())
    })
}

/// Passes one message from the MCP client to the session.
///
/// Shape: `message_json` is one JSON-RPC 2.0 message (a request,
/// notification or response to the session's own request), without the
/// newline. Text that is not JSON or not valid JSON-RPC is answered through
/// the message callback with the standard error (`-32700` parse error,
/// `-32600` invalid request, with id `null` when it could not be read),
/// never with an `rcip_result`; an unknown method is `-32601`, an unknown
/// tool or bad params `-32602`, a request id already in flight `-32600`.
/// Ownership: `message_json` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (session, message_json). A closed
/// session (after standard input ended in `rcip_mcp_session_serve_stdio`)
/// ignores messages.
/// Thread safety: any thread, concurrently, also inside callbacks
/// (including the session's message callback). With workers (the
/// default), this returns before a `tools/call` is handled: its
/// validation, policy, availability check and handler run on one of the
/// session's worker threads (`rcip-mcp-worker`), and so do cancellations
/// (`notifications/cancelled`) and the answer to a confirmation question;
/// the other replies (`initialize`, `ping`, `tools/list`, errors) are sent
/// before this returns, unless another thread is delivering messages.
/// With `"workers": 0` everything runs on the calling thread, and every
/// reply that waits for neither a deferred handler nor the user is sent
/// before this returns.
/// Rule: JSON-RPC 2.0; MCP 2025-11-25 base protocol; the worker pool is
/// **rcip** (docs/PIPELINE.md section 7).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_receive(
    session: *const rcip_mcp_session,
    message_json: *const c_char,
) -> rcip_result {
    ffi_guard!({
        let session = owned_arg(session, "session")?;
        let message = bytes_arg(message_json, "message_json")?;
        session.receive(message);
        Ok(())
    })
}

/// Serves the session over standard input and output (the MCP stdio
/// transport): reads newline-delimited messages from standard input and
/// passes each to the session until standard input ends, then closes the
/// session (calls in flight are cancelled; nothing more is sent).
///
/// Shape: each input line is one JSON-RPC message (UTF-8; `\r\n` accepted;
/// blank lines skipped); a line longer than `maxMessageBytes` is answered
/// with `-32700`. The session's messages go where `rcip_mcp_session_new`
/// sent them (NULL callback: standard output, one line each).
/// Ownership: `session` is borrowed until this returns; do not free it
/// meanwhile.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_USED` (the
/// session is already serving on another thread). A read error ends the
/// loop like the end of input (the client is gone) and returns OK.
/// Thread safety: blocks the calling thread; other threads may use the
/// session and the runtime meanwhile (outcomes settled elsewhere are sent
/// from there).
/// Rule: MCP 2025-11-25, transports, "stdio".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_serve_stdio(session: *const rcip_mcp_session) -> rcip_result {
    ffi_guard!({
        let session = owned_arg(session, "session")?;
        match session.serve_stdio() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(FfiError::new(
                rcip_result::AlreadyUsed,
                "the session is already serving standard input",
            )),
            _ => Ok(()),
        }
    })
}

/// The session's counters as JSON, for a host that watches its MCP
/// clients (**rcip**).
///
/// Shape: `{"inFlight": requests received and not answered yet,
/// "droppedNotifications": notifications dropped because the outgoing
/// queue was full, "contentReplaced": content blocks replaced by a text
/// note because an output property the `content` option names was not
/// valid content (docs/MCP.md, "Content blocks"; those results stay
/// `succeeded`)}`; counts since the session was created.
/// Ownership: `session` is borrowed; `*json_out` is new, freed with
/// `rcip_string_free`; NULL on failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (session, json_out).
/// Thread safety: any thread, also inside callbacks.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_stats(
    session: *const rcip_mcp_session,
    json_out: *mut *mut c_char,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(json_out, "json_out")?;
        *out = std::ptr::null_mut();
        let session = owned_arg(session, "session")?;
        let stats = serde_json::json!({
            "inFlight": session.in_flight(),
            "droppedNotifications": session.dropped_notifications(),
            "contentReplaced": session.content_replaced(),
        });
        *out = into_c_string(&stats.to_string());
        Ok(())
    })
}

/// Passes one message from the MCP client to the session, with the
/// headers the host's own transport received it with (an HTTP server of
/// the host's own): a stateless (MCP 2026-07-28) request's per-request
/// factory reads them (`rcip_mcp_request_setup_headers`,
/// `rcip_mcp_request_setup_header`); legacy requests ignore them.
/// Otherwise as `rcip_mcp_session_receive`.
///
/// Shape: `message_json` as for `rcip_mcp_session_receive`; `headers_json`
/// is NULL (no headers: the same as `rcip_mcp_session_receive`) or a JSON
/// object `{header name: value string}`; names are handed to the factory
/// in lower case (ASCII).
/// Ownership: `message_json` and `headers_json` are borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (session, message_json),
/// `RCIP_RESULT_INVALID_JSON` (headers_json not JSON or not UTF-8),
/// `RCIP_RESULT_INVALID_ARGUMENT` (headers_json not an object of
/// strings). The message is not received when an error is returned.
/// Thread safety: as `rcip_mcp_session_receive`.
/// Rule: **rcip** (MCP 2026-07-28 leaves a request's headers to the
/// transport).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_receive_with_headers(
    session: *const rcip_mcp_session,
    message_json: *const c_char,
    headers_json: *const c_char,
) -> rcip_result {
    ffi_guard!({
        let session = owned_arg(session, "session")?;
        let message = bytes_arg(message_json, "message_json")?;
        let mut headers = Vec::new();
        if !headers_json.is_null() {
            let text = bytes_arg(headers_json, "headers_json")?;
            let value = rcip::json::parse_bytes(text, &rcip::json::Limits::default())
                .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("headers_json: {e}")))?;
            let serde_json::Value::Object(map) = value else {
                return Err(FfiError::new(
                    rcip_result::InvalidArgument,
                    "headers_json: must be an object {header name: value string}",
                ));
            };
            for (name, value) in map {
                let serde_json::Value::String(value) = value else {
                    return Err(FfiError::new(
                        rcip_result::InvalidArgument,
                        format!("headers_json/{name}: a header value must be a string"),
                    ));
                };
                headers.push((name.to_ascii_lowercase(), value));
            }
        }
        session.receive_with_headers(message, &headers);
        Ok(())
    })
}

/// Builds the runtime of one stateless (MCP 2026-07-28) request
/// (`rcip_mcp_session_set_request_runtimes`): the host builds a runtime
/// from the session's catalog (`rcip_runtime_builder_new`, its handlers
/// bound with `rcip_runtime_builder_bind`), sets its policy and context
/// for this request (from `rcip_mcp_request_setup_meta` and the headers),
/// and hands it over with `rcip_mcp_request_setup_accept`.
///
/// Returns 0 after accepting; any other value (or 0 without accepting)
/// answers the request with JSON-RPC `-32603` (a runtime accepted before
/// a non-zero return is closed, and its request user data released).
///
/// Called once per modern `tools/list` and `tools/call` the session
/// serves (never for `server/discover`, never for a legacy session's
/// requests), on a session worker thread (`rcip-mcp-worker`), or on the
/// thread of `rcip_mcp_session_receive` when the session has `"workers":
/// 0`; possibly concurrently with itself (two requests at once); never
/// under an rcip lock. `setup` and every string read from it are valid
/// during the call only. It may call any rcip function except
/// `rcip_mcp_session_free` of its own session. `user_data` is the
/// registration's (`rcip_mcp_session_set_request_runtimes`).
pub type rcip_mcp_request_factory_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, setup: *mut rcip_mcp_request_setup) -> i32>;

/// What the per-request factory is told about the stateless request it
/// builds a runtime for, and where it hands the runtime over.
///
/// Ownership: borrowed by the factory callback for the call only; never
/// freed.
/// Thread safety: the factory's thread only.
/// Functions: `rcip_mcp_request_setup_method`,
/// `rcip_mcp_request_setup_meta`, `rcip_mcp_request_setup_headers`,
/// `rcip_mcp_request_setup_header`, `rcip_mcp_request_setup_accept`.
pub struct rcip_mcp_request_setup {
    _opaque: [u8; 0],
}

handle_kind!(lent rcip_mcp_request_setup => RequestSetupHandle);

/// What a request setup handle lends.
pub(crate) struct RequestSetupHandle {
    method: CString,
    meta: CString,
    headers_json: CString,
    headers: Vec<(String, CString)>,
    accepted: Option<CRequestRuntime>,
    retired: Arc<Retired>,
}

/// Ended requests' runtimes, kept (closed) at their addresses for at least
/// `RCIP_MCP_SESSION_RETIRE_MS`, so a host callback still running when its
/// request ended may use the views it took; shared by a factory and the
/// runtimes it built, dropped with the last of them.
#[derive(Default)]
struct Retired {
    runtimes: Mutex<Vec<(Instant, Box<Runtime>)>>,
}

impl Retired {
    fn keep(&self, runtime: Box<Runtime>) {
        let now = Instant::now();
        let grace = Duration::from_millis(RCIP_MCP_SESSION_RETIRE_MS);
        let expired: Vec<Box<Runtime>> = {
            let mut kept = self.runtimes.lock();
            let (old, young): (Vec<_>, Vec<_>) = kept.drain(..).partition(|(t, _)| now.duration_since(*t) >= grace);
            *kept = young;
            kept.push((now, runtime));
            old.into_iter().map(|(_, r)| r).collect()
        };
        // Outside the lock: a runtime's drop releases its own user data
        // (host code).
        drop(expired);
    }
}

/// One request's runtime as the session holds it, in the block the host
/// built it in (its views are that block's address).
struct CRequestRuntime {
    runtime: Option<Box<Runtime>>,
    user_data: UserData,
    retired: Arc<Retired>,
}

impl RequestRuntime for CRequestRuntime {
    fn runtime(&self) -> &Runtime {
        self.runtime.as_deref().expect("present until dropped")
    }
}

impl Drop for CRequestRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Closed by the session already (a no-op then); closed here
            // for a runtime accepted by a factory that then refused.
            runtime.close();
            // No callback of the runtime starts any more: the request's
            // data goes now, its memory after the grace period.
            self.user_data.release();
            self.retired.keep(runtime);
        }
    }
}

struct CRequestFactory {
    cb: unsafe extern "C" fn(*mut c_void, *mut rcip_mcp_request_setup) -> i32,
    user_data: UserData,
    retired: Arc<Retired>,
}

// Safety: rcip_mcp_request_factory_callback's doc tells the host that the
// factory runs on worker threads, concurrently with itself, and
// rcip_user_data_free_callback's that the release runs on any thread.
unsafe impl Send for CRequestFactory {}
unsafe impl Sync for CRequestFactory {}

impl RequestRuntimes for CRequestFactory {
    fn runtime(&self, _request: &RequestSetup<'_>) -> Result<Runtime, String> {
        // The session calls request_runtime: a C runtime never leaves the
        // block its views point into.
        Err("a C request factory hands its runtimes over in place (request_runtime)".into())
    }

    fn request_runtime(&self, request: &RequestSetup<'_>) -> Result<Box<dyn RequestRuntime>, String> {
        let mut headers_object = serde_json::Map::new();
        for (name, value) in request.headers {
            headers_object.insert(name.clone(), serde_json::Value::String(value.clone()));
        }
        let mut setup = RequestSetupHandle {
            method: c_text(request.method),
            meta: c_json(&serde_json::Value::Object(request.meta.clone()).to_string()),
            headers_json: c_json(&serde_json::Value::Object(headers_object).to_string()),
            headers: request.headers.iter().map(|(n, v)| (n.clone(), c_text(v))).collect(),
            accepted: None,
            retired: self.retired.clone(),
        };
        // Safety: the host's function with its data; `setup` lives across
        // the call.
        let rc = unsafe { (self.cb)(self.user_data.ptr(), lend_mut::<rcip_mcp_request_setup>(&mut setup)) };
        match (rc, setup.accepted.take()) {
            (0, Some(owner)) => Ok(Box::new(owner)),
            (0, None) => Err("the factory returned 0 without rcip_mcp_request_setup_accept".into()),
            (rc, accepted) => {
                // Closed, its data released, now (before the answer).
                drop(accepted);
                Err(format!("the factory returned {rc}"))
            }
        }
    }
}

/// Gives the session a per-request runtime factory (**rcip**): from now
/// on each stateless (MCP 2026-07-28) `tools/list` and `tools/call` runs
/// on a runtime of its own that `factory` builds, so nothing of one
/// request (context, confirmations, invocation ids, events) is visible to
/// another; the session closes that runtime when the request's response
/// is sent, or when the request ends without one (cancelled, session
/// closed). Without a factory, stateless requests use the session's
/// runtime; legacy (`initialize`) sessions always do. Stateless requests
/// are served only when the session option `eras` is `"both"` or
/// `"modern"` (docs/MCP.md, "The two eras"). Replaces an earlier factory;
/// requests already running keep the runtimes it built.
///
/// Ownership: `session` is borrowed for the call; `user_data` is kept
/// until the session is freed or the factory replaced (and no request is
/// still being built by it), then `user_data_free` runs once.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (session, factory). On failure
/// neither `factory` nor `user_data_free` is ever called, and an earlier
/// factory stays.
/// Thread safety: any thread, concurrently, also inside callbacks
/// (including the factory itself).
/// Callbacks: `factory` per `rcip_mcp_request_factory_callback`.
/// `user_data_free` runs once, after the factory's last call returned,
/// on the thread that frees the session or replaces the factory (or the
/// worker whose factory call was the last), with no rcip lock held.
/// Rule: MCP 2026-07-28 "Overview" (stateless requests); the seed's
/// server rule (a separate runtime per server request).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_set_request_runtimes(
    session: *const rcip_mcp_session,
    factory: rcip_mcp_request_factory_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let session = owned_arg(session, "session")?;
        let cb = factory.ok_or_else(|| FfiError::null("factory"))?;
        session.set_request_runtimes(Arc::new(CRequestFactory {
            cb,
            user_data: c_user_data(user_data, user_data_free),
            retired: Arc::default(),
        }));
        Ok(())
    })
}

/// The request's JSON-RPC method: `tools/list` or `tools/call`.
///
/// Ownership: borrowed from `setup`, valid during the factory call; NULL
/// for NULL.
/// Thread safety: the factory's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_request_setup_method(setup: *const rcip_mcp_request_setup) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        // Safety: NULL or the setup lent to the factory.
        unsafe { lent(setup) }.map_or(std::ptr::null(), |s| s.method.as_ptr())
    })
}

/// The request's whole `params._meta` object as JSON text, as the client
/// sent it.
///
/// Shape: `{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
/// "io.modelcontextprotocol/clientCapabilities": {...},
/// "io.modelcontextprotocol/clientInfo"?: {"name", "version", ...},
/// "io.modelcontextprotocol/logLevel"?, "progressToken"?, ...}` (MCP
/// 2026-07-28, "Per-request protocol fields"; checked before the factory
/// runs). Self-reported by the client: MCP says not to base security
/// decisions on `clientInfo`.
/// Ownership: borrowed from `setup`, valid during the factory call; NULL
/// for NULL.
/// Thread safety: the factory's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_request_setup_meta(setup: *const rcip_mcp_request_setup) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        // Safety: NULL or the setup lent to the factory.
        unsafe { lent(setup) }.map_or(std::ptr::null(), |s| s.meta.as_ptr())
    })
}

/// The headers the host's transport passed with the request
/// (`rcip_mcp_session_receive_with_headers`) as JSON text; `{}` for a
/// request received without them (`rcip_mcp_session_receive`, stdio).
///
/// Shape: `{lower-case header name: value string}`.
/// Ownership: borrowed from `setup`, valid during the factory call; NULL
/// for NULL.
/// Thread safety: the factory's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_request_setup_headers(setup: *const rcip_mcp_request_setup) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        // Safety: NULL or the setup lent to the factory.
        unsafe { lent(setup) }.map_or(std::ptr::null(), |s| s.headers_json.as_ptr())
    })
}

/// The value of header `name` (any case) passed with the request, or NULL
/// when it had none (or for a NULL argument, or a name that is not UTF-8).
///
/// Ownership: `name` is borrowed for the call; the result is borrowed
/// from `setup`, valid during the factory call.
/// Thread safety: the factory's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_request_setup_header(
    setup: *const rcip_mcp_request_setup,
    name: *const c_char,
) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        // Safety: NULL or the setup lent to the factory.
        let (Some(s), Ok(Some(name))) = (unsafe { lent(setup) }, opt_str_arg(name, "name")) else {
            return std::ptr::null();
        };
        crate::string::header_value(&s.headers, name)
    })
}

/// Hands the request its runtime.
///
/// Ownership: consumes `runtime` (on success and on failure alike: on
/// failure it is closed and freed). Its views (`rcip_runtime_host`,
/// `rcip_runtime_client`) taken before stay valid while the request runs
/// and, after it ended, for at least `RCIP_MCP_SESSION_RETIRE_MS` (calls
/// through them then answer `RCIP_RESULT_CLOSED`), unless the session is
/// freed or its factory replaced first. The session closes the runtime
/// when the request ends (its response sent, or the request cancelled or
/// the session closed; a confirmation it opened ends `closed`), then calls
/// `user_data_free(user_data)` once, then keeps the closed runtime's
/// memory as said and frees it (the runtime's own user data, its policy's
/// for example, goes then). Build the runtime from the session's catalog
/// (the same `rcip_catalog`, so no request compiles schemas again).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (setup, runtime),
/// `RCIP_RESULT_ALREADY_USED` (a runtime was already accepted). On
/// failure `user_data_free` is never called.
/// Thread safety: the factory's thread, during the factory call.
/// Callbacks: `user_data_free` runs once, after the request ended and its
/// runtime was closed (no callback of that runtime starts afterwards), on
/// a session worker or the thread that answered, cancelled or closed, with
/// no rcip lock held; it may call any rcip function but
/// `rcip_mcp_session_free` of its session.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_request_setup_accept(
    setup: *mut rcip_mcp_request_setup,
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
                "this request already has its runtime",
            ));
        }
        setup.accepted = Some(CRequestRuntime {
            runtime: Some(runtime),
            user_data: c_user_data(user_data, user_data_free),
            retired: setup.retired.clone(),
        });
        Ok(())
    })
}

/// Closes and frees the session: calls in flight are cancelled and get no
/// response, nothing more is sent, the snapshot subscription ends. The
/// session's worker threads finish what is queued (the cancellations) and
/// end before this returns (it waits up to 5 s for a handler that does not
/// return), so no library thread runs host code for the session
/// afterwards. A message being delivered on another thread completes;
/// `user_data_free` runs after it, on the thread that releases the last
/// reference.
///
/// Ownership: consumes `session`. NULL does nothing; freeing twice is
/// undefined, and so is freeing it while `rcip_mcp_session_serve_stdio`
/// runs.
/// Thread safety: any thread, except from inside the session's own
/// message callback.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_mcp_session_free(session: *mut rcip_mcp_session) {
    ffi_guard_or!((), {
        free_owned(session);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::rcip_catalog;
    use std::ffi::{CStr, CString};
    use std::sync::atomic::AtomicUsize;

    /// The user data of the tests: what was sent and how often it was freed.
    #[derive(Default)]
    struct Seen {
        messages: parking_lot::Mutex<Vec<String>>,
        freed: AtomicUsize,
    }

    unsafe extern "C" fn collect(user_data: *mut c_void, message: *const c_char) {
        let seen = &*(user_data as *const Seen);
        seen.messages
            .lock()
            .push(CStr::from_ptr(message).to_str().unwrap().to_string());
    }

    unsafe extern "C" fn count_free(user_data: *mut c_void) {
        (*(user_data as *const Seen)).freed.fetch_add(1, Ordering::SeqCst);
    }

    fn runtime() -> *mut rcip_runtime {
        let catalog = serde_json::json!({
            "protocolVersion": "1.0",
            "application": {"id": "app", "name": "App", "description": "Test."},
            "scopes": [],
            "capabilities": [{"id": "a.read", "title": "Read", "description": "Reads.", "scopeIds": [],
                "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]
        })
        .to_string();
        let text = CString::new(catalog).unwrap();
        let mut c: *mut rcip_catalog = std::ptr::null_mut();
        unsafe {
            assert_eq!(crate::catalog::rcip_catalog_new(text.as_ptr(), &mut c), rcip_result::Ok);
            let mut b = std::ptr::null_mut();
            assert_eq!(crate::runtime::rcip_runtime_builder_new(c, &mut b), rcip_result::Ok);
            let mut r = std::ptr::null_mut();
            assert_eq!(crate::runtime::rcip_runtime_builder_build(b, &mut r), rcip_result::Ok);
            crate::catalog::rcip_catalog_free(c);
            r
        }
    }

    #[test]
    fn messages_in_and_out_and_user_data_freed_once() {
        let rt = runtime();
        let seen = Seen::default();
        let data = &seen as *const Seen as *mut c_void;
        let mut session = std::ptr::null_mut();
        // Without workers: every reply is sent before receive returns.
        let options = CString::new(r#"{"workers": 0}"#).unwrap();
        unsafe {
            assert_eq!(
                rcip_mcp_session_new(
                    rt,
                    options.as_ptr(),
                    Some(collect),
                    data,
                    Some(count_free),
                    &mut session
                ),
                rcip_result::Ok
            );
            let ping = CString::new(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
            assert_eq!(rcip_mcp_session_receive(session, ping.as_ptr()), rcip_result::Ok);
            let bad = CString::new("{oops").unwrap();
            assert_eq!(rcip_mcp_session_receive(session, bad.as_ptr()), rcip_result::Ok);
            assert_eq!(
                rcip_mcp_session_receive(session, std::ptr::null()),
                rcip_result::NullArgument
            );
            assert_eq!(
                rcip_mcp_session_receive(std::ptr::null(), ping.as_ptr()),
                rcip_result::NullArgument
            );
            assert_eq!(
                rcip_mcp_session_serve_stdio(std::ptr::null()),
                rcip_result::NullArgument
            );
            // The runtime may go first: the session answers internal errors.
            crate::runtime::rcip_runtime_free(rt);
            let init = CString::new(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#).unwrap();
            assert_eq!(rcip_mcp_session_receive(session, init.as_ptr()), rcip_result::Ok);
            let call =
                CString::new(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a.read"}}"#).unwrap();
            assert_eq!(rcip_mcp_session_receive(session, call.as_ptr()), rcip_result::Ok);
            assert_eq!(seen.freed.load(Ordering::SeqCst), 0);
            rcip_mcp_session_free(session);
            rcip_mcp_session_free(std::ptr::null_mut());
        }
        assert_eq!(seen.freed.load(Ordering::SeqCst), 1);
        let got = seen.messages.lock().clone();
        assert_eq!(got[0], r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(got[1].contains("-32700"), "{}", got[1]);
        assert!(got[3].contains("-32603"), "{}", got[3]);
    }

    #[test]
    fn bad_options_fail_without_calling_back() {
        let rt = runtime();
        let seen = Seen::default();
        let data = &seen as *const Seen as *mut c_void;
        for (options, code) in [
            ("not json", rcip_result::InvalidJson),
            (r#"{"confirmation":"anyone"}"#, rcip_result::InvalidArgument),
            (r#"{"nope":1}"#, rcip_result::InvalidArgument),
        ] {
            let text = CString::new(options).unwrap();
            let mut session = std::ptr::NonNull::dangling().as_ptr();
            let rc =
                unsafe { rcip_mcp_session_new(rt, text.as_ptr(), Some(collect), data, Some(count_free), &mut session) };
            assert_eq!(rc, code, "{options}");
            assert!(session.is_null(), "the out-param is NULL on failure");
        }
        let mut session = std::ptr::null_mut();
        let rc = unsafe {
            rcip_mcp_session_new(
                std::ptr::null(),
                std::ptr::null(),
                None,
                data,
                Some(count_free),
                &mut session,
            )
        };
        assert_eq!(rc, rcip_result::NullArgument);
        let rc =
            unsafe { rcip_mcp_session_new(rt, std::ptr::null(), None, data, Some(count_free), std::ptr::null_mut()) };
        assert_eq!(rc, rcip_result::NullArgument);
        // A closed runtime refuses a new session.
        unsafe { crate::handle::owned(rt).unwrap().close() };
        let rc = unsafe {
            rcip_mcp_session_new(
                rt,
                std::ptr::null(),
                Some(collect),
                data,
                Some(count_free),
                &mut session,
            )
        };
        assert_eq!(rc, rcip_result::Closed);
        assert_eq!(
            seen.freed.load(Ordering::SeqCst),
            0,
            "user_data_free never runs after a failed registration"
        );
        assert!(seen.messages.lock().is_empty());
        unsafe { crate::runtime::rcip_runtime_free(rt) };
    }

    #[test]
    fn without_a_callback_the_user_data_is_released_at_once() {
        let rt = runtime();
        let seen = Seen::default();
        let data = &seen as *const Seen as *mut c_void;
        let mut session = std::ptr::null_mut();
        unsafe {
            assert_eq!(
                rcip_mcp_session_new(rt, std::ptr::null(), None, data, Some(count_free), &mut session),
                rcip_result::Ok
            );
            assert_eq!(seen.freed.load(Ordering::SeqCst), 1);
            rcip_mcp_session_free(session);
            crate::runtime::rcip_runtime_free(rt);
        }
        assert_eq!(seen.freed.load(Ordering::SeqCst), 1);
    }

    /// What the request factory of the tests saw and did.
    #[derive(Default)]
    struct Requests {
        methods: parking_lot::Mutex<Vec<String>>,
        metas: parking_lot::Mutex<Vec<serde_json::Value>>,
        headers: parking_lot::Mutex<Vec<(String, Option<String>)>>,
        refuse: AtomicBool,
        built: AtomicUsize,
        request_data_freed: AtomicUsize,
        factory_freed: AtomicUsize,
    }

    fn scoped_catalog() -> *mut rcip_catalog {
        let catalog = serde_json::json!({
            "protocolVersion": "1.0",
            "application": {"id": "app", "name": "App", "description": "Test."},
            "scopes": [{"id": "notes", "title": "Notes", "description": "The notes."}],
            "capabilities": [{"id": "ctx.read", "title": "Read", "description": "Reads the context.", "scopeIds": [],
                "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]
        })
        .to_string();
        let text = CString::new(catalog).unwrap();
        let mut c: *mut rcip_catalog = std::ptr::null_mut();
        assert_eq!(
            unsafe { crate::catalog::rcip_catalog_new(text.as_ptr(), &mut c) },
            rcip_result::Ok
        );
        c
    }

    /// The handler: answers with the semantic context its runtime had.
    unsafe extern "C" fn echo_context(_: *mut c_void, invocation: *mut crate::invocation::rcip_invocation) {
        let context = CStr::from_ptr(crate::invocation::rcip_invocation_semantic_context(invocation))
            .to_str()
            .unwrap()
            .to_string();
        let output = CString::new(format!(r#"{{"context": {context}}}"#)).unwrap();
        assert_eq!(
            crate::invocation::rcip_invocation_complete(invocation, output.as_ptr()),
            rcip_result::Ok
        );
        crate::invocation::rcip_invocation_free(invocation);
    }

    unsafe extern "C" fn request_data_free(user_data: *mut c_void) {
        (*(user_data as *const Requests))
            .request_data_freed
            .fetch_add(1, Ordering::SeqCst);
    }

    unsafe extern "C" fn factory_free(user_data: *mut c_void) {
        (*(user_data as *const Requests))
            .factory_freed
            .fetch_add(1, Ordering::SeqCst);
    }

    // The catalog rides in a thread-local: the factory's user data is the
    // `Requests`.
    thread_local! {
        static CATALOG: std::cell::Cell<*mut rcip_catalog> = const { std::cell::Cell::new(std::ptr::null_mut()) };
    }

    unsafe extern "C" fn build_request_runtime(user_data: *mut c_void, setup: *mut rcip_mcp_request_setup) -> i32 {
        let seen = &*(user_data as *const Requests);
        let text = |p: *const c_char| (!p.is_null()).then(|| CStr::from_ptr(p).to_str().unwrap().to_string());
        seen.methods
            .lock()
            .push(text(rcip_mcp_request_setup_method(setup)).unwrap());
        let meta: serde_json::Value = serde_json::from_str(&text(rcip_mcp_request_setup_meta(setup)).unwrap()).unwrap();
        let name = CString::new("AUTHORIZATION").unwrap();
        seen.headers.lock().push((
            text(rcip_mcp_request_setup_headers(setup)).unwrap(),
            text(rcip_mcp_request_setup_header(setup, name.as_ptr())),
        ));
        if seen.refuse.load(Ordering::SeqCst) {
            seen.metas.lock().push(meta);
            return 7;
        }
        let mut b = std::ptr::null_mut();
        assert_eq!(
            crate::runtime::rcip_runtime_builder_new(CATALOG.with(|c| c.get()), &mut b),
            rcip_result::Ok
        );
        let id = CString::new("ctx.read").unwrap();
        assert_eq!(
            crate::runtime::rcip_runtime_builder_bind(
                b,
                id.as_ptr(),
                Some(echo_context),
                None,
                std::ptr::null_mut(),
                None
            ),
            rcip_result::Ok
        );
        let mut rt = std::ptr::null_mut();
        assert_eq!(crate::runtime::rcip_runtime_builder_build(b, &mut rt), rcip_result::Ok);
        // This request's context, from its own _meta only.
        if meta.get("test/scope").is_some() {
            let context = CString::new(r#"{"activeScopeIds": ["notes"]}"#).unwrap();
            assert_eq!(
                crate::host::rcip_host_set_context(crate::runtime::rcip_runtime_host(rt), context.as_ptr()),
                rcip_result::Ok
            );
        }
        seen.metas.lock().push(meta);
        seen.built.fetch_add(1, Ordering::SeqCst);
        let rc = rcip_mcp_request_setup_accept(setup, rt, user_data, Some(request_data_free));
        assert_eq!(rc, rcip_result::Ok);
        // A second accept is refused and consumes (frees) its runtime.
        let mut b2 = std::ptr::null_mut();
        crate::runtime::rcip_runtime_builder_new(CATALOG.with(|c| c.get()), &mut b2);
        let mut rt2 = std::ptr::null_mut();
        crate::runtime::rcip_runtime_builder_build(b2, &mut rt2);
        assert_eq!(
            rcip_mcp_request_setup_accept(setup, rt2, user_data, Some(request_data_free)),
            rcip_result::AlreadyUsed
        );
        0
    }

    fn modern_call(id: u32, extra_meta: &str) -> CString {
        CString::new(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ctx.read","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}{extra_meta}}}}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn each_modern_request_gets_its_own_runtime_from_the_c_factory() {
        let catalog = scoped_catalog();
        CATALOG.with(|c| c.set(catalog));
        let mut b = std::ptr::null_mut();
        let rt = unsafe {
            assert_eq!(
                crate::runtime::rcip_runtime_builder_new(catalog, &mut b),
                rcip_result::Ok
            );
            let mut r = std::ptr::null_mut();
            assert_eq!(crate::runtime::rcip_runtime_builder_build(b, &mut r), rcip_result::Ok);
            r
        };
        let seen = Seen::default();
        let requests = Requests::default();
        let data = &requests as *const Requests as *mut c_void;
        let mut session = std::ptr::null_mut();
        let options = CString::new(r#"{"workers": 0, "eras": "both"}"#).unwrap();
        unsafe {
            assert_eq!(
                rcip_mcp_session_new(
                    rt,
                    options.as_ptr(),
                    Some(collect),
                    &seen as *const Seen as *mut c_void,
                    None,
                    &mut session
                ),
                rcip_result::Ok
            );
            // Misuse: nothing registered, nothing freed.
            assert_eq!(
                rcip_mcp_session_set_request_runtimes(session, None, data, Some(factory_free)),
                rcip_result::NullArgument
            );
            assert_eq!(
                rcip_mcp_session_set_request_runtimes(
                    std::ptr::null(),
                    Some(build_request_runtime),
                    data,
                    Some(factory_free)
                ),
                rcip_result::NullArgument
            );
            assert_eq!(requests.factory_freed.load(Ordering::SeqCst), 0);
            assert_eq!(
                rcip_mcp_session_set_request_runtimes(session, Some(build_request_runtime), data, Some(factory_free)),
                rcip_result::Ok
            );
            // The accessors answer NULL for NULL, never crash.
            assert!(rcip_mcp_request_setup_method(std::ptr::null()).is_null());
            assert!(rcip_mcp_request_setup_meta(std::ptr::null()).is_null());
            assert!(rcip_mcp_request_setup_headers(std::ptr::null()).is_null());
            assert!(rcip_mcp_request_setup_header(std::ptr::null(), std::ptr::null()).is_null());
            assert_eq!(
                rcip_mcp_request_setup_accept(std::ptr::null_mut(), std::ptr::null_mut(), data, None),
                rcip_result::NullArgument
            );

            // Request 1: headers, and a context its factory sets.
            let headers = CString::new(r#"{"Authorization": "Bearer t"}"#).unwrap();
            let first = modern_call(1, r#","test/scope":"notes""#);
            assert_eq!(
                rcip_mcp_session_receive_with_headers(session, first.as_ptr(), headers.as_ptr()),
                rcip_result::Ok
            );
            // Request 2: no headers, no context of its own.
            assert_eq!(
                rcip_mcp_session_receive(session, modern_call(2, "").as_ptr()),
                rcip_result::Ok
            );
            // A legacy session's request uses the session's runtime.
            let init = CString::new(r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#).unwrap();
            assert_eq!(rcip_mcp_session_receive(session, init.as_ptr()), rcip_result::Ok);
            // Headers of the wrong shape: refused, the message not received.
            for (bad, code) in [
                ("nope", rcip_result::InvalidJson),
                ("[]", rcip_result::InvalidArgument),
                (r#"{"a": 1}"#, rcip_result::InvalidArgument),
            ] {
                let bad = CString::new(bad).unwrap();
                assert_eq!(
                    rcip_mcp_session_receive_with_headers(session, modern_call(9, "").as_ptr(), bad.as_ptr()),
                    code
                );
            }
        }
        assert_eq!(requests.built.load(Ordering::SeqCst), 2);
        assert_eq!(*requests.methods.lock(), ["tools/call", "tools/call"]);
        assert_eq!(requests.metas.lock()[0]["test/scope"], "notes");
        assert_eq!(
            requests.metas.lock()[1]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            *requests.headers.lock(),
            [
                (
                    r#"{"authorization":"Bearer t"}"#.to_string(),
                    Some("Bearer t".to_string())
                ),
                ("{}".to_string(), None)
            ]
        );
        // Each request's runtime closed with its response: its data freed.
        assert_eq!(requests.request_data_freed.load(Ordering::SeqCst), 2);
        let got: Vec<serde_json::Value> = seen
            .messages
            .lock()
            .iter()
            .map(|m| serde_json::from_str(m).unwrap())
            .collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(
            got[0]["result"]["structuredContent"]["context"]["activeScopeIds"],
            serde_json::json!(["notes"])
        );
        assert_eq!(
            got[1]["result"]["structuredContent"]["context"]["activeScopeIds"],
            serde_json::json!([]),
            "the first request's context is not seen by the second"
        );
        assert_eq!(got[2]["id"], 3);

        // Replacing the factory releases the old one's data, once.
        unsafe {
            assert_eq!(
                rcip_mcp_session_set_request_runtimes(session, Some(build_request_runtime), data, Some(factory_free)),
                rcip_result::Ok
            );
        }
        assert_eq!(requests.factory_freed.load(Ordering::SeqCst), 1);
        // A refusing factory: -32603.
        requests.refuse.store(true, Ordering::SeqCst);
        unsafe {
            assert_eq!(
                rcip_mcp_session_receive(session, modern_call(4, "").as_ptr()),
                rcip_result::Ok
            );
        }
        let last: serde_json::Value = serde_json::from_str(seen.messages.lock().last().unwrap()).unwrap();
        assert_eq!(last["id"], 4);
        assert_eq!(last["error"]["code"], -32603, "{last}");
        assert!(
            last["error"]["message"].as_str().unwrap().contains("returned 7"),
            "{last}"
        );
        assert_eq!(requests.built.load(Ordering::SeqCst), 2);
        unsafe {
            rcip_mcp_session_free(session);
            crate::runtime::rcip_runtime_free(rt);
            crate::catalog::rcip_catalog_free(catalog);
        }
        assert_eq!(requests.factory_freed.load(Ordering::SeqCst), 2);
        assert_eq!(requests.request_data_freed.load(Ordering::SeqCst), 2);
    }
}
