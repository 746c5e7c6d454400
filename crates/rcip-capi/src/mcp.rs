//! The MCP bridge over the C ABI: a session that serves a runtime's
//! capabilities to any Model Context Protocol client (src/mcp).

use super::callback::{c_json, rcip_user_data_free_callback};
use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, out_arg, FfiError};
use super::handle::{free_owned, handle_kind, into_owned, owned_arg};
use super::result::rcip_result;
use super::runtime::rcip_runtime;
use super::string::into_c_string;
use rcip_mcp::{McpOptions, McpOutput, McpSession};
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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
/// `rcip_mcp_session_serve_stdio`, `rcip_mcp_session_free`.
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
/// docs/MCP.md, "Content blocks")}` (docs/MCP.md, "Session options"). Messages are JSON-RPC 2.0 text.
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
}
