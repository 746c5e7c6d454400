//! A handler's side channel on an MCP call (**rcip**, docs/MCP.md
//! "Progress, logging and elicitation"): progress and log messages queued
//! for the call, the handler's questions to the client (sent in a session;
//! answered from the retry or collected into an `InputRequiredResult` on a
//! 2026-07-28 request, [`super::mrtr::Questions`]), the client's responses
//! to them, and their withdrawal.

use super::*;

/// A handler's question to the client's user (**rcip**).
pub(super) struct Ask {
    /// The call (request key) whose handler asked.
    pub(super) call: String,
    /// Our request id (the JSON value), for `notifications/cancelled`.
    pub(super) request: Value,
    pub(super) answer: AskSink,
}

/// Who gets the answer to a handler's request.
pub(super) enum AskSink {
    /// `elicitation/create`, answered as an [`ElicitAnswer`].
    Elicit(ElicitSink),
    /// Any request, answered as the client's [`ClientReply`].
    Reply(ReplySink),
}

impl AskSink {
    /// Delivers the client's answer (`None`: withdrawn, no answer).
    pub(super) fn deliver(self, outcome: Option<&Result<Value, Value>>) {
        match self {
            AskSink::Elicit(sink) => sink(outcome.map_or(ElicitAnswer::Cancel, elicit_answer)),
            AskSink::Reply(sink) => sink(match outcome {
                Some(Ok(result)) => ClientReply::Result(result.clone()),
                Some(Err(error)) => ClientReply::Error(error.clone()),
                None => ClientReply::Cancelled,
            }),
        }
    }
}

/// The side channel of one `tools/call`: the handler's progress, log
/// messages and questions become messages related to that request (on the
/// Streamable HTTP transport, on the call's SSE stream).
pub(super) struct CallChannel {
    pub(super) inner: Weak<Inner>,
    pub(super) key: String,
    /// The request's `_meta.progressToken`: without one, progress is not
    /// sent (MCP progress, "Progress Flow").
    pub(super) progress_token: Option<Value>,
}

impl InvocationChannel for CallChannel {
    fn progress(&self, report: &ProgressReport) -> bool {
        let Some(inner) = self.inner.upgrade() else {
            return false;
        };
        let message = self.progress_token.as_ref().map(|token| {
            let mut params = Map::new();
            params.insert("progressToken".into(), token.clone());
            params.insert("progress".into(), number(report.progress));
            if let Some(t) = report.total {
                params.insert("total".into(), number(t));
            }
            if let Some(m) = &report.message {
                params.insert("message".into(), Value::String(m.clone()));
            }
            jsonrpc::notification("notifications/progress", Some(Value::Object(params)))
        });
        inner.queue_for_call(&self.key, None, message)
    }

    fn log(&self, level: LogLevel, logger: Option<&str>, data: &Value) -> bool {
        let Some(inner) = self.inner.upgrade() else {
            return false;
        };
        let mut params = Map::new();
        params.insert("level".into(), Value::String(level.as_str().into()));
        if let Some(l) = logger {
            params.insert("logger".into(), Value::String(l.into()));
        }
        params.insert("data".into(), data.clone());
        let message = jsonrpc::notification("notifications/message", Some(Value::Object(params)));
        inner.queue_for_call(&self.key, Some(level), Some(message))
    }

    fn flush(&self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.outbox.deliver();
        }
    }

    fn elicit(&self, message: &str, requested_schema: &Value, answer: ElicitSink) -> Result<(), ElicitRefusal> {
        let Some(inner) = self.inner.upgrade() else {
            return Err(ElicitRefusal::Answered);
        };
        crate::elicit::check_requested_schema(requested_schema).map_err(ElicitRefusal::Invalid)?;
        let params = json!({"mode": "form", "message": message, "requestedSchema": requested_schema});
        inner.ask(&self.key, None, "elicitation/create", params, AskSink::Elicit(answer))
    }

    fn create_message(&self, params: &Value, reply: ReplySink) -> Result<(), ElicitRefusal> {
        let Some(inner) = self.inner.upgrade() else {
            return Err(ElicitRefusal::Answered);
        };
        crate::elicit::check_sampling_params(params).map_err(ElicitRefusal::Invalid)?;
        inner.ask(
            &self.key,
            None,
            "sampling/createMessage",
            params.clone(),
            AskSink::Reply(reply),
        )
    }

    fn ask(&self, key: Option<&str>, method: &str, params: &Value, reply: ReplySink) -> Result<(), ElicitRefusal> {
        let Some(inner) = self.inner.upgrade() else {
            return Err(ElicitRefusal::Answered);
        };
        let params = match method {
            "elicitation/create" => {
                let (Some(Value::String(message)), Some(schema)) =
                    (params.get("message"), params.get("requestedSchema"))
                else {
                    return Err(ElicitRefusal::Invalid(
                        "elicitation/create params need \"message\" (a string) and \"requestedSchema\"".into(),
                    ));
                };
                crate::elicit::check_requested_schema(schema).map_err(ElicitRefusal::Invalid)?;
                json!({"mode": "form", "message": message, "requestedSchema": schema})
            }
            "sampling/createMessage" => {
                crate::elicit::check_sampling_params(params).map_err(ElicitRefusal::Invalid)?;
                params.clone()
            }
            "roots/list" => match params {
                Value::Object(_) => params.clone(),
                Value::Null => json!({}),
                _ => return Err(ElicitRefusal::Invalid("roots/list params must be an object".into())),
            },
            _ => {
                return Err(ElicitRefusal::Invalid(format!(
                    "an MCP client is asked elicitation/create, sampling/createMessage or roots/list, not {method:?}"
                )))
            }
        };
        inner.ask(&self.key, key, method, params, AskSink::Reply(reply))
    }

    fn can_ask(&self, method: &str) -> bool {
        self.inner
            .upgrade()
            .is_some_and(|inner| inner.can_ask(&self.key, method))
    }
}

/// A progress value as JSON: an integer when it is one (`50`, not `50.0`).
pub(super) fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// Takes the handler questions `keys` out of the session's open ones.
pub(super) fn take_asks(st: &mut State, keys: &[String]) -> Vec<Ask> {
    keys.iter().filter_map(|k| st.asks.remove(k)).collect()
}

/// The handler's answer from the client's response to `elicitation/create`:
/// accept (with its `content` object, `{}` when there is none), decline, and
/// anything else (cancel, an error, a malformed result) as cancel.
pub(super) fn elicit_answer(outcome: &Result<Value, Value>) -> ElicitAnswer {
    let Ok(result) = outcome else {
        return ElicitAnswer::Cancel;
    };
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitAnswer::Accept(match result.get("content") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        }),
        Some("decline") => ElicitAnswer::Decline,
        _ => ElicitAnswer::Cancel,
    }
}

impl Inner {
    /// Queues `message` (progress, a log message at `level`) as a
    /// notification related to the call `key`, while the call is waiting
    /// for its response: under the state lock, so it is queued before the
    /// response, which [`finish`](Self::finish) queues after taking the
    /// call out. False when the call was answered (or the session closed).
    /// A cancelled call takes nothing more (true: the handler is told by
    /// its token, not by a failing report); a level below the session's
    /// is filtered (true). Delivery is the caller's
    /// ([`Outbox::deliver`]).
    pub(super) fn queue_for_call(&self, key: &str, level: Option<LogLevel>, message: Option<String>) -> bool {
        let st = self.state.lock();
        if st.closed {
            return false;
        }
        let Some(call) = st.calls.get(key) else { return false };
        // A modern request gets log messages only when its `_meta` asked
        // for them, at its own level ("Logging", "Per-request log level");
        // a legacy one at the session's (`logging/setLevel`).
        let filtered = level.is_some_and(|l| match &call.modern {
            Some(m) => m.log_level.is_none_or(|min| l < min),
            None => l < st.log_level.unwrap_or(LogLevel::Info),
        });
        if let Some(m) = message.filter(|_| !call.cancelled && !filtered) {
            self.outbox.queue(m, Kind::Notification(Some(key.to_string())));
        }
        true
    }

    /// Sends a handler's request `method` (already checked) for the call
    /// `key` (**rcip**): only to a client that declared the capability it
    /// needs (form elicitation, sampling, roots), while the call waits for
    /// its response. On a modern call the question is collected for the
    /// call's `InputRequiredResult` instead, or answered from the retry
    /// ([`mrtr::Questions`]); `question` is the handler's key for it.
    pub(super) fn ask(
        &self,
        key: &str,
        question: Option<&str>,
        method: &str,
        params: Value,
        answer: AskSink,
    ) -> Result<(), ElicitRefusal> {
        {
            let mut st = self.state.lock();
            if st.closed {
                return Err(ElicitRefusal::Answered);
            }
            let capability = mrtr::capability_of(method);
            if let Some(call) = st.calls.get_mut(key) {
                if call.cancelled {
                    return Err(ElicitRefusal::Answered);
                }
                if let Some(meta) = &call.modern {
                    // 2026-07-28 has no server-to-client requests: the
                    // question becomes an input request of the response.
                    // A request that did not declare the capability gets
                    // -32021 naming it ("MissingRequiredClientCapability").
                    if !mrtr::declares_for(&meta.capabilities, method) {
                        call.missing
                            .get_or_insert_with(Map::new)
                            .insert(capability.into(), json!({}));
                        return Err(ElicitRefusal::Unsupported(format!(
                            "this {} request did not declare {capability} in its client capabilities, so it cannot be asked {method}",
                            modern::MCP_MODERN_REVISION
                        )));
                    }
                    let reply = call.questions.ask(question, method, params)?;
                    drop(st);
                    self.deliver_apart(move || answer.deliver(reply.as_ref()));
                    return Ok(());
                }
            }
            if !st.declares(method) {
                return Err(ElicitRefusal::Unsupported(match method {
                    "elicitation/create" => {
                        "this MCP client did not declare form elicitation, so its user cannot be asked".into()
                    }
                    "sampling/createMessage" => {
                        "this MCP client did not declare sampling, so it cannot be asked to sample".into()
                    }
                    _ => format!("this MCP client did not declare {capability}, so it cannot be asked {method}"),
                }));
            }
            st.next_request += 1;
            let id = Value::String(format!("rcip-{capability}-{}", st.next_request));
            let request_key = id_key(&id);
            match st.calls.get_mut(key) {
                Some(call) if !call.cancelled => call.asks.push(request_key.clone()),
                _ => return Err(ElicitRefusal::Answered),
            }
            let request = jsonrpc::request(&id, method, params);
            st.asks.insert(
                request_key,
                Ask {
                    call: key.to_string(),
                    request: id,
                    answer,
                },
            );
            // Queued under the lock: before the call's response.
            self.outbox.queue(request, Kind::Request(Some(key.to_string())));
        }
        self.outbox.deliver();
        Ok(())
    }

    /// Whether the call `key` may ask `method` ([`InvocationChannel::can_ask`]):
    /// the modern request, or else the session's client, declared the
    /// capability, and the call is still open.
    pub(super) fn can_ask(&self, key: &str, method: &str) -> bool {
        let st = self.state.lock();
        match st.calls.get(key) {
            None => false,
            Some(call) if call.cancelled || st.closed => false,
            Some(Call { modern: Some(meta), .. }) => mrtr::declares_for(&meta.capabilities, method),
            Some(_) => st.declares(method),
        }
    }

    /// Withdraws handlers' questions: `notifications/cancelled` to the
    /// client for each, and `cancel` to each handler (on a worker).
    pub(super) fn withdraw(&self, asks: Vec<Ask>, reason: &str) {
        if asks.is_empty() {
            return;
        }
        let mut answers = Vec::with_capacity(asks.len());
        for a in asks {
            let params = json!({"requestId": a.request, "reason": reason});
            self.send(
                jsonrpc::notification("notifications/cancelled", Some(params)),
                Kind::Notification(Some(a.call.clone())),
            );
            answers.push(a.answer);
        }
        self.dispatch_control(move || {
            for answer in answers {
                answer.deliver(None);
            }
        });
    }

    /// Runs `job` on the control pool, never on the calling thread and
    /// never under a lock: a handler's answer that is known at once (a
    /// modern call's question) reaches it as a client's answer would. A
    /// session without workers runs it on a thread of its own
    /// (`rcip-mcp-answer`), so the handler is not re-entered inside its ask.
    pub(super) fn deliver_apart(&self, job: impl FnOnce() + Send + 'static) {
        if self.control.is_some() || self.pool.is_some() {
            return self.dispatch_control(job);
        }
        let slot = Arc::new(Mutex::new(Some(job)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("rcip-mcp-answer".into())
            .spawn(move || {
                if let Some(job) = theirs.lock().take() {
                    job()
                }
            });
        if spawned.is_err() {
            // No thread to be had: answered here rather than never.
            if let Some(job) = slot.lock().take() {
                job()
            }
        }
    }

    pub(super) fn on_response(self: &Arc<Self>, id: &Value, outcome: Result<Value, Value>) {
        let ask = {
            let mut st = self.state.lock();
            let ask = st.asks.remove(&id_key(id));
            if let Some(a) = &ask {
                let key = id_key(&a.request);
                if let Some(call) = st.calls.get_mut(&a.call) {
                    call.asks.retain(|k| *k != key);
                }
            }
            ask
        };
        if let Some(ask) = ask {
            // The handler's code: on a worker, never on the transport's
            // thread; on the control pool, so that handlers blocked waiting
            // for answers cannot keep their answers from running.
            let deliver = ask.answer;
            return self.dispatch_control(move || deliver.deliver(Some(&outcome)));
        }
        let (elicitation, approved) = {
            let mut st = self.state.lock();
            let Some(e) = st.elicitations.remove(&id_key(id)) else {
                return;
            };
            match st.calls.get_mut(&e.call) {
                Some(call) if !call.cancelled => call.elicitation = None,
                _ => return,
            }
            // Only an explicit accept approves; decline, cancel, an error
            // or anything malformed declines.
            let approved = matches!(&outcome, Ok(r) if r.get("action").and_then(Value::as_str) == Some("accept"));
            (e, approved)
        };
        // An approval re-runs the capability: on a worker.
        let inner = self.clone();
        self.dispatch(move || inner.resolve_elicited(&elicitation, approved));
    }
}
