//! What a handler reports on its invocation besides its outcome (**rcip**,
//! docs/MCP.md "Progress, logging and elicitation"): progress, log
//! messages, questions to the MCP client's user; and the host's progress
//! observer.

use super::callback::c_user_data;
use super::callback::{c_json, once_text, rcip_user_data_free_callback, CEvents};
use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, opt_str_arg, str_arg, FfiError};
use super::handle::counted_arg;
use super::invocation::rcip_invocation;
use super::result::rcip_result;
use super::runtime::{builder_mut, rcip_runtime_builder, settings};
use parking_lot::Mutex;
use rcip::runtime::{ClientReply, ElicitAnswer, LogLevel, ProgressObserver};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// Receives the user's answer to `rcip_invocation_elicit`.
///
/// `answer_json` is `{"action": "accept", "content": {...}}` (the object the
/// client sent, not validated against the requested schema),
/// `{"action": "decline"}` or `{"action": "cancel"}` (also when the call was
/// cancelled, the handler settled first, the client answered with an error,
/// or the session ended), valid during the call only. Called exactly once,
/// on a session worker thread, never on the thread that called
/// `rcip_invocation_elicit`, with no rcip lock held; then `user_data_free`
/// runs. Keep it short (it runs where cancellations run): hand the answer to
/// the thread that waits for it, or settle the invocation.
pub type rcip_elicit_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, answer_json: *const c_char)>;

/// Receives the MCP client's reply to `rcip_invocation_create_message`.
///
/// `reply_json` is `{"result": <CreateMessageResult: {"role", "content",
/// "model", "stopReason"?}>}` as the client sent it, `{"error": {"code",
/// "message", "data"?}}` (the client's JSON-RPC error, e.g. the user
/// rejected the request), or `{"cancelled": true}` (the call was cancelled,
/// the handler settled first, or the session ended); valid during the call
/// only. Called exactly once, on a session worker thread, with no rcip lock
/// held; then `user_data_free` runs. Keep it short, as
/// `rcip_elicit_callback`.
pub type rcip_sampling_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, reply_json: *const c_char)>;

/// Receives the MCP client's reply to `rcip_invocation_ask`.
///
/// `reply_json` is `{"result": <the client's result>}` (for
/// `elicitation/create` an `ElicitResult` `{"action", "content"?}`, for
/// `sampling/createMessage` a `CreateMessageResult`, for `roots/list`
/// `{"roots": [{"uri", "name"?}]}`), `{"error": {"code", "message",
/// "data"?}}` (the client's JSON-RPC error), or `{"cancelled": true}` (the
/// call was cancelled, the handler settled first, the session ended, or,
/// on an MCP 2026-07-28 request, the question travels to the client in
/// this round's `InputRequiredResult` and the handler runs again with the
/// answer); valid during the call only. Called exactly once, on a session
/// worker thread, never on the thread that called `rcip_invocation_ask`,
/// with no rcip lock held; then `user_data_free` runs. Keep it short, as
/// `rcip_elicit_callback`.
pub type rcip_ask_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, reply_json: *const c_char)>;

/// Receives every progress report of the runtime's handlers
/// (`rcip_runtime_builder_set_progress_observer`).
///
/// `report_json` is `{"invocationId", "capabilityId", "progress", "total"?,
/// "message"?}`, valid during the call only. Called on the reporting thread
/// after the report was queued to the MCP client (if any), with no rcip lock
/// held; reports of one invocation from several threads at once may arrive
/// in any order. Also approved re-runs' reports, which reach no MCP client.
/// Progress is never a lifecycle event.
pub type rcip_progress_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, report_json: *const c_char)>;

impl ProgressObserver for CEvents {
    fn on_progress(&self, report_json: &str) {
        let text = c_json(report_json);
        // Safety: the host's function with the host's data.
        unsafe { (self.cb)(self.user_data.ptr(), text.as_ptr()) };
    }
}

/// Reports progress on a pending invocation (**rcip**).
///
/// Units: the handler's own (items, bytes, percent); `progress` must be
/// finite and greater than the invocation's previous report, `total` (read
/// only when `has_total`) finite. `message` is optional (NULL: none).
/// Sent to the MCP client as `notifications/progress` when its `tools/call`
/// carried `_meta.progressToken` (before the response: a report that
/// returned OK is queued first), and to the progress observer. An approved
/// re-run has no request, so its reports reach only the observer. Changes
/// no outcome; no lifecycle event.
/// Ownership: `invocation` and `message` are borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation);
/// `RCIP_RESULT_INVALID_UTF8` (message); `RCIP_RESULT_INVALID_ARGUMENT`
/// (not finite, not increasing: nothing is sent);
/// `RCIP_RESULT_ALREADY_COMPLETED` (settled, or the call was answered);
/// `RCIP_RESULT_CLOSED`; `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread while the invocation is pending; concurrent
/// reports are taken one at a time.
/// Rule: **rcip** (the seed prescribes no progress); MCP 2025-11-25,
/// basic/utilities/progress.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_report_progress(
    invocation: *const rcip_invocation,
    progress: f64,
    has_total: bool,
    total: f64,
    message: *const c_char,
) -> rcip_result {
    ffi_guard!({
        let h = counted_arg(invocation, "invocation")?;
        let message = opt_str_arg(message, "message")?;
        h.report_progress(progress, has_total.then_some(total), message)?;
        Ok(())
    })
}

/// Sends a log message to the MCP client whose call the invocation serves
/// (**rcip**): `notifications/message` with `level`, `logger` and `data`,
/// when `level` is at least the session's level (`info` until the client's
/// `logging/setLevel`). Without an MCP call (an approved re-run, an
/// in-process consumer) it goes nowhere.
///
/// Shape: `level` is `"debug"`, `"info"`, `"notice"`, `"warning"`,
/// `"error"`, `"critical"`, `"alert"` or `"emergency"`; `logger` is
/// optional (NULL: none); `data_json` is any JSON value as text (a string
/// `"\"text\""`, an object).
/// Ownership: the arguments are borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation, level, data_json);
/// `RCIP_RESULT_INVALID_UTF8`; `RCIP_RESULT_INVALID_JSON` (data_json);
/// `RCIP_RESULT_INVALID_ARGUMENT` (an unknown level);
/// `RCIP_RESULT_ALREADY_COMPLETED`; `RCIP_RESULT_CLOSED`;
/// `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread while the invocation is pending.
/// Rule: **rcip**; MCP 2025-11-25, server/utilities/logging.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_log(
    invocation: *const rcip_invocation,
    level: *const c_char,
    logger: *const c_char,
    data_json: *const c_char,
) -> rcip_result {
    ffi_guard!({
        let h = counted_arg(invocation, "invocation")?;
        let level_name = str_arg(level, "level")?;
        let logger = opt_str_arg(logger, "logger")?;
        let data = bytes_arg(data_json, "data_json")?;
        let level = LogLevel::parse(level_name).ok_or_else(|| {
            FfiError::new(
                rcip_result::InvalidArgument,
                format!(
                    "level \"{level_name}\" is not one of debug, info, notice, warning, error, critical, alert, emergency"
                ),
            )
        })?;
        let data = rcip::json::parse_bytes(data, &rcip::json::Limits::default())
            .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("data_json: {e}")))?;
        h.log(level, logger, &data)?;
        Ok(())
    })
}

/// Asks the MCP client's user for structured input (**rcip**): sends
/// `elicitation/create` (form mode) with `message` and the requested schema
/// to the client whose call the invocation serves; the answer reaches
/// `on_answer` once, later, on a session worker. Never blocks: return from
/// the handler without settling (deferred) and settle in `on_answer`, or
/// wait on another thread. Cancelling the call (or the session ending)
/// withdraws the question and answers `cancel`.
///
/// Shape: `requested_schema_json` follows MCP's elicitation schema rules
/// (checked before anything is sent; RCIP's strict mode does not apply):
/// `{"type": "object", "properties": {name: primitive}, "required"?: [...]}`
/// with string (`minLength`, `maxLength`, `format`: email, uri, date,
/// date-time), number / integer (`minimum`, `maximum`), boolean, enum
/// (`enum`, `oneOf` of `{const, title}`, legacy `enumNames`) and
/// multi-select (`type: "array"`, `items` with `enum` or `anyOf`)
/// properties, each with an optional `default`; no nesting, no other
/// keyword. The answer's shape is at `rcip_elicit_callback`.
/// Ownership: `message` and `requested_schema_json` are borrowed (copied).
/// `user_data` is kept until the answer was delivered, then
/// `user_data_free` runs once; when this call fails, neither callback runs
/// and the host keeps its data.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation, message, schema,
/// on_answer); `RCIP_RESULT_INVALID_UTF8`; `RCIP_RESULT_INVALID_JSON`;
/// `RCIP_RESULT_INVALID_ARGUMENT` (the schema breaks the rules; the message
/// names the place); `RCIP_RESULT_UNSUPPORTED` (no MCP call to ask
/// through: an approved re-run or an in-process consumer; or a client that
/// did not declare form elicitation); `RCIP_RESULT_ALREADY_COMPLETED`
/// (settled, or the call was answered or cancelled); `RCIP_RESULT_CLOSED`;
/// `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread while the invocation is pending; several
/// questions may be open at once.
/// Callbacks: see `rcip_elicit_callback`.
/// Rule: **rcip**; MCP 2025-11-25, client/elicitation (form mode).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_elicit(
    invocation: *const rcip_invocation,
    message: *const c_char,
    requested_schema_json: *const c_char,
    on_answer: rcip_elicit_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let h = counted_arg(invocation, "invocation")?;
        let message = str_arg(message, "message")?;
        let schema = bytes_arg(requested_schema_json, "requested_schema_json")?;
        let cb = on_answer.ok_or_else(|| FfiError::null("on_answer"))?;
        let schema = rcip::json::parse_bytes(schema, &rcip::json::Limits::default())
            .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("requested_schema_json: {e}")))?;
        ask_once(cb, user_data, user_data_free, ElicitAnswer::to_json, |answer| {
            h.elicit(message, &schema, answer)
        })
    })
}

/// Asks the MCP client whose call the invocation serves to sample its
/// language model (**rcip**): sends `sampling/createMessage` with
/// `params_json`; the reply reaches `on_reply` once, later, on a session
/// worker. Never blocks (as `rcip_invocation_elicit`). Cancelling the call
/// (or the session ending) withdraws the request and replies
/// `{"cancelled": true}`.
///
/// Shape: `params_json` is MCP's `CreateMessageRequestParams`: `messages`
/// (a non-empty array of `{"role": "user" | "assistant", "content"}`, the
/// content a block or an array of blocks) and `maxTokens` (a positive
/// integer) are checked; `systemPrompt`, `modelPreferences`, `temperature`,
/// `stopSequences`, `metadata` ... go to the client as they are. The
/// reply's shape is at `rcip_sampling_callback`.
/// Ownership: `params_json` is borrowed (copied). `user_data` is kept until
/// the reply was delivered, then `user_data_free` runs once; when this call
/// fails, neither callback runs and the host keeps its data.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation, params_json, on_reply);
/// `RCIP_RESULT_INVALID_JSON`; `RCIP_RESULT_INVALID_ARGUMENT` (the params
/// lack what is checked; the message names it); `RCIP_RESULT_UNSUPPORTED`
/// (no MCP call, or a client that did not declare `sampling`);
/// `RCIP_RESULT_ALREADY_COMPLETED`; `RCIP_RESULT_CLOSED`;
/// `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread while the invocation is pending.
/// Callbacks: see `rcip_sampling_callback`.
/// Rule: **rcip**; MCP 2025-11-25, client/sampling.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_create_message(
    invocation: *const rcip_invocation,
    params_json: *const c_char,
    on_reply: rcip_sampling_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let h = counted_arg(invocation, "invocation")?;
        let params = bytes_arg(params_json, "params_json")?;
        let cb = on_reply.ok_or_else(|| FfiError::null("on_reply"))?;
        let params = rcip::json::parse_bytes(params, &rcip::json::Limits::default())
            .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("params_json: {e}")))?;
        ask_once(cb, user_data, user_data_free, ClientReply::to_json, |reply| {
            h.create_message(&params, reply)
        })
    })
}

/// Sends the MCP client whose call the invocation serves the request
/// `method` on the handler's behalf (**rcip**, docs/MCP.md "Questions
/// without sessions"): the general form of `rcip_invocation_elicit` and
/// `rcip_invocation_create_message`, with a key for the question. The
/// reply reaches `on_reply` once, later, on a session worker; never blocks.
/// In a session the request is sent to the client; on an MCP 2026-07-28
/// request the question is answered from the retry's `inputResponses[key]`
/// when it has a well-formed answer, and otherwise collected into the
/// call's `InputRequiredResult` (the reply is then `{"cancelled": true}`,
/// the handler's outcome is set aside, and the handler runs again when the
/// client re-sends the call with the answer: ask before doing anything
/// irreversible).
///
/// Shape: `key` is the question's name (1 to 128 characters, not starting
/// with `rcip/`, unique within the invocation), or NULL: rcip numbers the
/// question (`rcip/ask/1`, `rcip/ask/2`, ... in the order asked).
/// `method` is `elicitation/create` (`params_json` `{"message",
/// "requestedSchema"}`, the schema checked as for `rcip_invocation_elicit`),
/// `sampling/createMessage` (checked as for
/// `rcip_invocation_create_message`) or `roots/list` (`params_json` an
/// object, usually `{}`). The reply's shape is at `rcip_ask_callback`.
/// Ownership: `key`, `method` and `params_json` are borrowed (copied).
/// `user_data` is kept until the reply was delivered, then
/// `user_data_free` runs once; when this call fails, neither callback runs
/// and the host keeps its data.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation, method, params_json,
/// on_reply); `RCIP_RESULT_INVALID_UTF8` (key, method);
/// `RCIP_RESULT_INVALID_JSON`; `RCIP_RESULT_INVALID_ARGUMENT` (a bad key,
/// a key asked twice, another method, params that fail the checks, more
/// than 64 questions in one call); `RCIP_RESULT_UNSUPPORTED` (no MCP call,
/// or a client or request that did not declare the capability: see
/// `rcip_invocation_can_ask`); `RCIP_RESULT_ALREADY_COMPLETED`;
/// `RCIP_RESULT_CLOSED`; `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread while the invocation is pending; several
/// questions may be open at once.
/// Callbacks: see `rcip_ask_callback`.
/// Rule: **rcip**; MCP 2025-11-25 client/elicitation, client/sampling,
/// client/roots; MCP 2026-07-28 "Multi Round-Trip Requests".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_ask(
    invocation: *const rcip_invocation,
    key: *const c_char,
    method: *const c_char,
    params_json: *const c_char,
    on_reply: rcip_ask_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let h = counted_arg(invocation, "invocation")?;
        let key = opt_str_arg(key, "key")?;
        let method = str_arg(method, "method")?;
        let params = bytes_arg(params_json, "params_json")?;
        let cb = on_reply.ok_or_else(|| FfiError::null("on_reply"))?;
        let params = rcip::json::parse_bytes(params, &rcip::json::Limits::default())
            .map_err(|e| FfiError::new(rcip_result::InvalidJson, format!("params_json: {e}")))?;
        ask_once(cb, user_data, user_data_free, ClientReply::to_json, |reply| {
            h.ask(key, method, &params, reply)
        })
    })
}

/// True when `rcip_invocation_ask` with `method` would reach the client
/// (**rcip**): the invocation serves an MCP call whose client (a session's
/// `initialize`, or a 2026-07-28 request's own `_meta`) declared what
/// `method` needs (form elicitation, `sampling`, `roots`) and is still
/// pending. False for NULL, invalid UTF-8, an unknown method, no MCP call
/// (an approved re-run, an in-process consumer), or a settled invocation.
/// A handler with a fallback asks only when this is true: a 2026-07-28
/// request that did not declare a capability the handler asks for is
/// answered `-32021` whatever the handler does next.
///
/// Ownership: both arguments are borrowed for the call.
/// Thread safety: any thread.
/// Rule: **rcip**; MCP 2026-07-28 "Per-request protocol fields".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_invocation_can_ask(invocation: *const rcip_invocation, method: *const c_char) -> bool {
    ffi_guard_or!(false, {
        let (Ok(h), Ok(method)) = (counted_arg(invocation, "invocation"), str_arg(method, "method")) else {
            return false;
        };
        h.can_ask(method)
    })
}

/// Starts a question with a sink that hands the answer, as the JSON text
/// `to_json` writes, to the host's `cb` once (then `user_data_free` runs).
/// When `start` refuses the question the sink is dropped uncalled and the
/// host keeps its data: the callback is disarmed, not released (the
/// exports' "when this call fails, neither callback runs").
fn ask_once<T: 'static>(
    cb: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
    to_json: fn(&T) -> String,
    start: impl FnOnce(Box<dyn FnOnce(T) + Send>) -> Result<(), rcip::runtime::HostError>,
) -> Result<(), FfiError> {
    // Shared with the sink: a refused question gives the data back.
    let slot = Arc::new(Mutex::new(Some(once_text(cb, user_data, user_data_free))));
    let answer_slot = slot.clone();
    let sink = Box::new(move |answer: T| {
        if let Some(once) = answer_slot.lock().take() {
            once.call(&c_json(&to_json(&answer)));
        }
    });
    if let Err(e) = start(sink) {
        if let Some(once) = slot.lock().take() {
            once.disarm();
        }
        return Err(e.into());
    }
    Ok(())
}

/// Installs the progress observer (**rcip**): every progress report of the
/// runtime's handlers, also of approved re-runs (which reach no MCP client).
///
/// Ownership: `user_data` is kept until the runtime is freed (or the
/// builder is freed unbuilt, or the observer is replaced: the earlier user
/// data is released at once); then `user_data_free` runs once.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
/// Thread safety: one thread at a time per builder.
/// Callbacks: see `rcip_progress_callback`.
/// Rule: **rcip** (progress is never a lifecycle event).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_progress_observer(
    builder: *mut rcip_runtime_builder,
    callback: rcip_progress_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        let cb = callback.ok_or_else(|| FfiError::null("callback"))?;
        let observer = Arc::new(CEvents {
            cb,
            user_data: c_user_data(user_data, user_data_free),
        });
        settings(b).progress_observer(observer);
        Ok(())
    })
}
