//! `tools/call`: from the request's params to the runtime's invocation
//! (validation, policy and handler run there), and from its outcome to the
//! call's result, or to an `InputRequiredResult` when the handler or the
//! policy needs the client's input first.

use super::*;

/// What a tools/call needs when its outcome arrives.
#[derive(Clone)]
pub(super) struct CallContext {
    pub(super) key: String,
    /// The capability the call invokes (empty for a resolution).
    pub(super) tool: String,
    pub(super) output_wrapped: bool,
    pub(super) input: Arc<Value>,
    /// The user was already asked (a second confirmation is not asked).
    pub(super) asked: bool,
    /// The host surface of the runtime the call runs on (the session's,
    /// or a modern request's own).
    pub(super) host: Host,
    /// A modern request that declared form elicitation (its user may be
    /// asked statelessly).
    pub(super) form_elicitation: bool,
}

impl Inner {
    pub(super) fn tools_call(self: &Arc<Self>, key: String, mut p: Map<String, Value>, client: Client, host: Host) {
        let modern = self.state.lock().calls.get(&key).and_then(|c| c.modern.clone());
        // MRTR (2026-07-28): a retry carries the state of our question.
        let retry = match &modern {
            Some(_) => match mrtr::Retry::take(&mut p) {
                Ok(r) => r,
                Err(e) => return self.finish(&key, Err(e)),
            },
            None => None,
        };
        let form_elicitation = modern.as_ref().is_some_and(|m| mrtr::declares_form(&m.capabilities));
        let name = match p.remove("name") {
            Some(Value::String(n)) => n,
            _ => {
                return self.finish(
                    &key,
                    Err((
                        INVALID_PARAMS,
                        "Invalid params: tools/call needs \"name\" (a string)".into(),
                    )),
                )
            }
        };
        let arguments = match p.remove("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v,
            Some(_) => {
                return self.finish(
                    &key,
                    Err((INVALID_PARAMS, "Invalid params: \"arguments\" must be an object".into())),
                )
            }
        };
        // MCP progress: a string or integer token asks for notifications.
        let progress_token = p
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        let Some(capability) = self.capability_of(&name).and_then(|id| self.catalog.capability(id)) else {
            return self.finish(&key, Err((INVALID_PARAMS, format!("Unknown tool: {name}"))));
        };
        let name = capability.id.to_string();
        let output_wrapped = !tools::is_object_schema(&capability.output_schema);
        let input = match tools::unwrap_arguments(arguments, &capability.input_schema) {
            Unwrapped::Input(v) => v,
            Unwrapped::Invalid { keyword, message } => {
                let outcome = tools::unwrap_failure(&name, keyword, &message);
                let result = tools::call_result(outcome, output_wrapped, &self.application, None);
                return self.finish(&key, Ok(result));
            }
        };
        let text = input.to_string();
        let token = CancelToken::new();
        let cancelled = {
            let mut st = self.state.lock();
            match st.calls.get_mut(&key) {
                Some(call) => {
                    call.token = Some(token.clone());
                    call.cancelled
                }
                None => return, // closed meanwhile
            }
        };
        if cancelled {
            // notifications/cancelled overtook the call on another thread.
            token.cancel();
        }
        let context = CallContext {
            key: key.clone(),
            tool: name.clone(),
            output_wrapped,
            input: Arc::new(input),
            asked: false,
            host,
            form_elicitation,
        };
        if let Some(mrtr::Retry { state, responses }) = retry {
            let sealed = match state.map(|t| self.open_retry(&key, &name, &context.input, &t)) {
                None => Map::new(),
                Some(Err(e)) => return self.finish_rpc(&key, Err(e)),
                Some(Ok(OpenedState::Answers(a))) => a.answers,
                Some(Ok(OpenedState::Confirmation(c))) => {
                    let again = CallContext {
                        asked: true,
                        ..context.clone()
                    };
                    match self.resume_statelessly(again, c, responses.as_ref(), &text, &token, form_elicitation) {
                        Ok(true) => return,
                        // No answer to the question: the call runs again (and asks again).
                        Ok(false) => Map::new(),
                        Err(e) => return self.finish_rpc(&key, Err(e)),
                    }
                }
            };
            // The handler's questions find these answers (mrtr::Questions).
            if let Some(call) = self.state.lock().calls.get_mut(&key) {
                call.questions.seed(sealed, responses);
            }
        }
        let sink = self.outcome_sink(context);
        let channel = Arc::new(CallChannel {
            inner: Arc::downgrade(self),
            key: key.clone(),
            progress_token,
        });
        if let Err(e) = client.invoke_with_channel(&name, text.as_bytes(), None, Some(&token), channel, sink) {
            self.finish(&key, Err(internal(e)));
        }
    }

    /// The sink that answers `context`'s call with the outcome it gets.
    pub(super) fn outcome_sink(self: &Arc<Self>, context: CallContext) -> Box<dyn rcip::runtime::OutcomeSink> {
        let weak = Arc::downgrade(self);
        Box::new(move |outcome: &str| {
            if let Some(inner) = weak.upgrade() {
                inner.on_outcome(context, outcome);
            }
        })
    }

    pub(super) fn on_outcome(self: &Arc<Self>, context: CallContext, outcome_text: &str) {
        // A modern call whose handler asked what the retry did not answer:
        // the outcome is set aside, the client is asked (MRTR).
        if let Some(reply) = self.input_required(&context) {
            return self.finish_rpc(&context.key, reply);
        }
        let outcome = rcip::json::parse_str(outcome_text, &Limits::UNLIMITED).unwrap_or(Value::Null);
        let status = outcome.get("status").and_then(Value::as_str).unwrap_or("");
        let mut note = None;
        if status == "confirmation_required" && !context.asked {
            let confirmation_id = outcome
                .pointer("/confirmation/id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if pending_confirmations(&context.host) > self.max_pending_confirmations {
                // rcip: beyond the cap, declined through the host at once.
                return self.resolve(&context, &confirmation_id, false);
            }
            let modern = self
                .state
                .lock()
                .calls
                .get(&context.key)
                .is_some_and(|c| c.modern.is_some());
            if self.elicit && modern {
                match self.ask_statelessly(&context, &outcome, &confirmation_id, context.form_elicitation) {
                    Ok(()) => return,
                    Err(why) => note = Some(why),
                }
            } else if self.elicit {
                match self.ask_user(&context, &outcome, &confirmation_id) {
                    Ok(()) => return,
                    Err(why) => note = Some(why),
                }
            }
        }
        // What the content mapping needs, before the outcome moves into
        // the result.
        let mapped = match status {
            "succeeded" if !self.content.is_empty() => outcome
                .get("capabilityId")
                .and_then(Value::as_str)
                .filter(|c| self.content.contains_key(*c))
                .map(str::to_string),
            _ => None,
        };
        let mut result = tools::call_result(outcome, context.output_wrapped, &self.application, note);
        if let Some(sources) = mapped.and_then(|c| self.content.get(&c)) {
            self.map_content(sources, &mut result);
        }
        self.finish(&context.key, Ok(result));
    }

    /// A succeeded result of a capability with a `content` mapping
    /// (`sources`): its content is the mapped blocks; invalid values become
    /// text notes, counted in the session and in
    /// `_meta["rcip/contentReplaced"]`. `structuredContent` and the outcome
    /// are unchanged.
    pub(super) fn map_content(&self, sources: &[ContentSource], result: &mut Value) {
        let blocks = content::blocks(sources, &result["structuredContent"]);
        result["content"] = Value::Array(blocks.content);
        if blocks.replaced > 0 {
            self.content_replaced.fetch_add(blocks.replaced, Ordering::Relaxed);
            result["_meta"]["rcip/contentReplaced"] = Value::from(blocks.replaced);
        }
    }
}
