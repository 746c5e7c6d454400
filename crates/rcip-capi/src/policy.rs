//! The policy's completion handle.

use super::guard::{bytes_arg, ffi_guard, ffi_guard_or, opt_str_arg};
use super::handle::{free_owned, handle_kind, into_owned, owned, owned_arg};
use super::result::rcip_result;
use once_cell::sync::OnceCell;
use rcip::runtime::{Decision, PolicyRequest};
use std::ffi::{c_char, CString};

/// One question to the host policy: an invocation (`phase` `"invoke"`), an
/// approved confirmation's re-run (`confirmed` true) or a preflight proposal
/// (`phase` `"preflight"`).
///
/// Ownership: owned by the policy callback that received it; free it with
/// `rcip_policy_request_free` after (or instead of) deciding.
/// Thread safety: synchronized (any thread, concurrently).
/// Functions: reading the question: `rcip_policy_request_capability_id`,
/// `rcip_policy_request_effect`, `rcip_policy_request_is_confirmed`,
/// `rcip_policy_request_phase`, `rcip_policy_request_invocation_id`,
/// `rcip_policy_request_scope_is_active`,
/// `rcip_policy_request_primary_scope_id`, `rcip_policy_request_input`,
/// `rcip_policy_request_capability`, `rcip_policy_request_context` (all of
/// it as one JSON text); answering it: `rcip_policy_request_allow`,
/// `rcip_policy_request_deny`, `rcip_policy_request_confirm`,
/// `rcip_policy_request_decide_default`, `rcip_policy_request_decide`
/// (JSON), `rcip_policy_request_fail`; then
/// `rcip_policy_request_is_settled`, `rcip_policy_request_free`. A host
/// needs no JSON parser to read or answer a request.
pub struct rcip_policy_request {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_policy_request => PolicyHandle);

/// What a policy request handle holds: the request and the invocation id
/// it lends as C text, made on first request.
pub(crate) struct PolicyHandle {
    inner: PolicyRequest,
    invocation_id: OnceCell<Option<CString>>,
    primary_scope_id: OnceCell<Option<CString>>,
    capability_id: OnceCell<CString>,
}

impl rcip_policy_request {
    /// A new handle owning `inner`; the policy frees it.
    pub(crate) fn into_handle(inner: PolicyRequest) -> *mut rcip_policy_request {
        into_owned::<rcip_policy_request>(PolicyHandle {
            inner,
            invocation_id: OnceCell::new(),
            primary_scope_id: OnceCell::new(),
            capability_id: OnceCell::new(),
        })
    }
}

/// What the policy is asked (`RcipPolicyContext`).
///
/// Shape: `{"capability": <the capability's live snapshot entry: id, title,
/// description, scopeIds, effect, inputSchema, outputSchema, tags, usage?,
/// bound, available, availability?, relevance>, "input": <the input>,
/// "semanticContext": {"activeScopeIds", "primaryScopeId"?}, "confirmed":
/// bool, "phase": "invoke" | "preflight"}`.
/// Ownership: owned by `request`; valid until `rcip_policy_request_free`.
/// Errors: NULL `request` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 11, section 6.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_context(request: *const rcip_policy_request) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match owned(request) {
            None => std::ptr::null(),
            Some(r) => r.inner.context_c_str().as_ptr(),
        }
    })
}

/// Who the runtime's consumer acts for, as JSON text, or NULL when none
/// is set (**rcip**; `rcip_host_set_principal`; from MCP with `auth`:
/// `{"issuer", "subject", "scopes", "claims", "expiresAt"}`).
///
/// Ownership: owned by `request`; valid until `rcip_policy_request_free`.
/// Errors: NULL `request` gives NULL.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_principal(request: *const rcip_policy_request) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match owned(request) {
            None => std::ptr::null(),
            Some(r) => r.inner.principal_c_str().map_or(std::ptr::null(), |p| p.as_ptr()),
        }
    })
}

/// The invocation id, or NULL for a preflight proposal (no id is reserved
/// by a preflight).
///
/// Ownership: owned by `request`; valid until `rcip_policy_request_free`.
/// Errors: NULL `request` gives NULL.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_invocation_id(request: *const rcip_policy_request) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match owned(request) {
            None => std::ptr::null(),
            Some(r) => match r
                .invocation_id
                .get_or_init(|| r.inner.invocation_id().map(|s| CString::new(s).unwrap_or_default()))
            {
                Some(s) => s.as_ptr(),
                None => std::ptr::null(),
            },
        }
    })
}

/// The id of the capability the policy is asked about.
///
/// Ownership: owned by `request`; valid until `rcip_policy_request_free`.
/// Errors: NULL `request` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 11 (`capability.id`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_capability_id(request: *const rcip_policy_request) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match owned(request) {
            None => std::ptr::null(),
            Some(r) => r
                .capability_id
                .get_or_init(|| CString::new(r.inner.capability_id()).unwrap_or_default())
                .as_ptr(),
        }
    })
}

/// The capability's declared effect: `"read"`, `"write"`, `"external"` or
/// `"destructive"`.
///
/// Ownership: static text; do not free.
/// Errors: NULL `request` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 1 (`effect`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_effect(request: *const rcip_policy_request) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match owned(request) {
            None => std::ptr::null(),
            Some(r) => static_c_str(r.inner.effect().as_str()),
        }
    })
}

/// True when the question is an approved confirmation's re-run
/// (`confirmed` of `RcipPolicyContext`); false for a first invocation, a
/// preflight proposal, or NULL.
///
/// Ownership: `request` is borrowed for the call.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 5, resolve step 5.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_is_confirmed(request: *const rcip_policy_request) -> bool {
    ffi_guard_or!(false, { owned(request).is_some_and(|r| r.inner.is_confirmed()) })
}

/// The phase: `"invoke"` (an invocation or an approved re-run) or
/// `"preflight"` (a preflight proposal, which has no invocation id).
///
/// Ownership: static text; do not free.
/// Errors: NULL `request` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 11, section 6.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_phase(request: *const rcip_policy_request) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match owned(request) {
            None => std::ptr::null(),
            Some(r) => static_c_str(r.inner.phase()),
        }
    })
}

/// True when `scope_id` is among the active scope ids of the semantic
/// context captured for this request (exact match; a parent scope is not
/// inherited, so a child's parent is not active unless listed).
///
/// Ownership: both arguments are borrowed for the call.
/// Errors: NULL `request`, NULL `scope_id` or a `scope_id` that is not
/// UTF-8 gives false.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 2 (relevance: parents are not inherited),
/// section 4 step 11 (`semanticContext`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_scope_is_active(
    request: *const rcip_policy_request,
    scope_id: *const c_char,
) -> bool {
    ffi_guard_or!(false, {
        match (owned(request), opt_str_arg(scope_id, "scope_id")) {
            (Some(r), Ok(Some(id))) => r.inner.semantic_context().active_scope_ids().iter().any(|a| a == id),
            _ => false,
        }
    })
}

/// The primary scope id of the captured semantic context, or NULL when the
/// context has none (an empty `primaryScopeId` is kept as given: `""`).
///
/// Ownership: owned by `request`; valid until `rcip_policy_request_free`.
/// Errors: NULL `request` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 3 (an empty `primaryScopeId` passes and is
/// kept).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_primary_scope_id(request: *const rcip_policy_request) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match owned(request) {
            None => std::ptr::null(),
            Some(r) => match r.primary_scope_id.get_or_init(|| {
                r.inner
                    .semantic_context()
                    .primary_scope_id()
                    .map(|s| CString::new(s).unwrap_or_default())
            }) {
                Some(s) => s.as_ptr(),
                None => std::ptr::null(),
            },
        }
    })
}

/// The input the policy is asked about, as compact JSON text.
///
/// Shape: the capability input (valid against its input schema), written
/// canonically (the last of duplicate keys, numbers as doubles): the
/// `input` member of `rcip_policy_request_context`.
/// Ownership: owned by `request`; valid until `rcip_policy_request_free`.
/// Errors: NULL `request` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 11 (`input`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_input(request: *const rcip_policy_request) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match owned(request) {
            None => std::ptr::null(),
            Some(r) => r.inner.input_c_str().as_ptr(),
        }
    })
}

/// The capability's live snapshot entry, as JSON text.
///
/// Shape: `{"id", "title", "description", "scopeIds", "effect",
/// "inputSchema", "outputSchema", "tags", "usage"?, "bound", "available",
/// "availability"?, "relevance"}` sampled when the policy was asked: the
/// `capability` member of `rcip_policy_request_context`.
/// Ownership: owned by `request`; valid until `rcip_policy_request_free`.
/// Errors: NULL `request` gives NULL.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 4 step 11 (`capability`), section 2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_capability(request: *const rcip_policy_request) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match owned(request) {
            None => std::ptr::null(),
            Some(r) => r.inner.capability_c_str().as_ptr(),
        }
    })
}

/// Decides `allow` (as `rcip_policy_request_decide` with
/// `{"decision": "allow"}`).
///
/// Ownership: `request` is borrowed for the call (free it separately).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_COMPLETED` on
/// a second settle, `RCIP_RESULT_WRONG_CONTEXT` (from a clock or id
/// generator). Deciding after the runtime stopped waiting returns OK and
/// changes nothing.
/// Thread safety: any thread; as `rcip_policy_request_decide`.
/// Rule: PIPELINE.md section 4 steps 11–16.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_allow(request: *const rcip_policy_request) -> rcip_result {
    ffi_guard!({
        owned_arg(request, "request")?.inner.decide(Decision::Allow)?;
        Ok(())
    })
}

/// Decides `deny`, with an optional reason in plain text: it becomes the
/// `POLICY_DENIED` outcome's message (rcip writes it into the JSON, so any
/// text is fine: quotes, newlines, non-ASCII).
///
/// Ownership: `reason` (NULL: no reason, rcip's own message) is copied.
/// An empty reason is a reason: the message is empty, as with
/// `{"decision": "deny", "reason": ""}` through `rcip_policy_request_decide`.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (request),
/// `RCIP_RESULT_INVALID_UTF8` (reason; the request stays undecided),
/// `RCIP_RESULT_ALREADY_COMPLETED`, `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread; as `rcip_policy_request_decide`.
/// Rule: PIPELINE.md section 4 step 13 (message = the policy's reason when
/// given).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_deny(
    request: *const rcip_policy_request,
    reason: *const c_char,
) -> rcip_result {
    ffi_guard!({
        let r = owned_arg(request, "request")?;
        let reason = opt_str_arg(reason, "reason")?.map(str::to_string);
        r.inner.decide(Decision::Deny { reason })?;
        Ok(())
    })
}

/// Decides `confirm`, with an optional reason in plain text: it becomes the
/// confirmation's `description` (a preflight entry's `reason`), even when
/// empty; NULL keeps the capability description.
///
/// Ownership: `reason` is copied.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (request),
/// `RCIP_RESULT_INVALID_UTF8` (reason; the request stays undecided),
/// `RCIP_RESULT_ALREADY_COMPLETED`, `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread; as `rcip_policy_request_decide`.
/// Rule: PIPELINE.md section 5 (opening: the description is the policy's
/// reason when given, even `""`), section 4 step 15 (a confirm on an
/// approved re-run is `denied POLICY_DENIED`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_confirm(
    request: *const rcip_policy_request,
    reason: *const c_char,
) -> rcip_result {
    ffi_guard!({
        let r = owned_arg(request, "request")?;
        let reason = opt_str_arg(reason, "reason")?.map(str::to_string);
        r.inner.decide(Decision::Confirm { reason })?;
        Ok(())
    })
}

/// Settles the request with the decision the built-in default policy
/// gives it, so a custom policy can handle some capabilities and hand back
/// the rest: `read` → allow; an approved re-run (`confirmed`) → allow;
/// `destructive` → confirm; `write` and `external` → deny (no reason in
/// each case, as the default policy).
///
/// Ownership: `request` is borrowed for the call (free it separately).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_COMPLETED`,
/// `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread; as `rcip_policy_request_decide`.
/// Rule: PIPELINE.md section 4, "The default policy".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_decide_default(request: *const rcip_policy_request) -> rcip_result {
    ffi_guard!({
        owned_arg(request, "request")?.inner.decide_default()?;
        Ok(())
    })
}

/// A static NUL-terminated copy of one of the protocol's fixed words.
fn static_c_str(word: &str) -> *const c_char {
    let c: &'static std::ffi::CStr = match word {
        "read" => c"read",
        "write" => c"write",
        "external" => c"external",
        "destructive" => c"destructive",
        "invoke" => c"invoke",
        "preflight" => c"preflight",
        _ => c"",
    };
    c.as_ptr()
}

/// Decides (`RcipPolicyDecision`).
///
/// Shape: `decision_json` is `{"decision": "allow" | "deny" | "confirm",
/// "reason"?: string}`. A deny reason becomes the `POLICY_DENIED` message; a
/// confirm reason becomes the confirmation's description.
/// Ownership: `decision_json` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_INVALID_JSON` (not
/// JSON, or not UTF-8) and `RCIP_RESULT_INVALID_ARGUMENT` (wrong shape: not an object, an
/// unknown key, a reason that is not a string, no decision) leave the
/// request undecided; a `decision` that is none of the three settles the
/// request as a policy failure (`POLICY_EVALUATION_FAILED`) and also returns
/// `RCIP_RESULT_INVALID_ARGUMENT` (`rcip_policy_request_is_settled` tells
/// the two apart); `RCIP_RESULT_ALREADY_COMPLETED` on a second
/// settle; `RCIP_RESULT_WRONG_CONTEXT`. Deciding after the runtime stopped
/// waiting (token cancelled, runtime freed) returns OK and changes nothing.
/// Thread safety: any thread; what the decision makes runnable (handler,
/// outcome, report) runs on this thread before the call returns. Two
/// exceptions: called on the policy callback's own thread while that
/// callback runs, it runs there after the callback returns; and a
/// preflight's rechecks wait until its thread has asked about every
/// proposal (PIPELINE.md section 6), then run on that thread.
/// Rule: PIPELINE.md section 4 steps 11–16, section 8.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_decide(
    request: *const rcip_policy_request,
    decision_json: *const c_char,
) -> rcip_result {
    ffi_guard!({
        let r = owned_arg(request, "request")?;
        let text = bytes_arg(decision_json, "decision_json")?;
        r.inner.decide_json(text)?;
        Ok(())
    })
}

/// Settles the request as a policy failure (`POLICY_EVALUATION_FAILED`).
///
/// Ownership: `request` is borrowed for the call (free it separately).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_COMPLETED`,
/// `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread; as `rcip_policy_request_decide`.
/// Rule: PIPELINE.md section 4 step 11.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_fail(request: *const rcip_policy_request) -> rcip_result {
    ffi_guard!({
        let r = owned_arg(request, "request")?;
        r.inner.fail()?;
        Ok(())
    })
}

/// True once the request was settled (decided, failed, or settled as a
/// failure by a decision that is none of the three); false for NULL.
///
/// Ownership: `request` is borrowed for the call.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_is_settled(request: *const rcip_policy_request) -> bool {
    ffi_guard_or!(false, { owned(request).is_some_and(|r| r.inner.is_settled()) })
}

/// Frees the handle; an undecided request is settled as a policy failure
/// first.
///
/// Ownership: consumes `request`; strings borrowed from it become invalid.
/// NULL does nothing; freeing twice is undefined.
/// Thread safety: any thread, once no other thread uses the handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_policy_request_free(request: *mut rcip_policy_request) {
    ffi_guard_or!((), {
        free_owned(request);
    })
}
