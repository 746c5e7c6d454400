//! The policy's completion handle.

use super::guard::{bytes_arg, ffi_guard, ffi_guard_or};
use super::handle::{free_owned, handle_kind, into_owned, owned, owned_arg};
use super::result::rcip_result;
use crate::runtime::PolicyRequest;
use once_cell::sync::OnceCell;
use std::ffi::{c_char, CString};

/// One question to the host policy: an invocation (`phase` `"invoke"`), an
/// approved confirmation's re-run (`confirmed` true) or a preflight proposal
/// (`phase` `"preflight"`).
///
/// Ownership: owned by the policy callback that received it; free it with
/// `rcip_policy_request_free` after (or instead of) deciding.
/// Thread safety: synchronized (any thread, concurrently).
/// Functions: `rcip_policy_request_context`,
/// `rcip_policy_request_invocation_id`, `rcip_policy_request_decide`,
/// `rcip_policy_request_fail`, `rcip_policy_request_is_settled`,
/// `rcip_policy_request_free`.
pub struct rcip_policy_request {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_policy_request => PolicyHandle);

/// What a policy request handle holds: the request and the invocation id
/// it lends as C text, made on first request.
pub(crate) struct PolicyHandle {
    inner: PolicyRequest,
    invocation_id: OnceCell<Option<CString>>,
}

impl rcip_policy_request {
    /// A new handle owning `inner`; the policy frees it.
    pub(crate) fn into_handle(inner: PolicyRequest) -> *mut rcip_policy_request {
        into_owned::<rcip_policy_request>(PolicyHandle {
            inner,
            invocation_id: OnceCell::new(),
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
