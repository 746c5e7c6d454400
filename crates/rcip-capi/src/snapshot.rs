//! Snapshots handed to consumers.

use super::guard::ffi_guard_or;
use super::handle::{counted, free_counted, handle_kind};
use rcip::runtime::Snapshot;
use std::ffi::c_char;
use std::sync::Arc;

/// An immutable snapshot of one revision (`RcipApplicationSnapshot`).
///
/// Ownership: reference-counted; `rcip_client_snapshot` returns the same
/// pointer until the revision changes, and each returned reference is freed
/// once with `rcip_snapshot_free`.
/// Thread safety: shared (immutable; any thread).
/// Functions: `rcip_snapshot_json`, `rcip_snapshot_revision`,
/// `rcip_snapshot_free`.
pub struct rcip_snapshot {
    _opaque: [u8; 0],
}

handle_kind!(counted rcip_snapshot => Arc<Snapshot>);

/// The snapshot as JSON text.
///
/// Shape: `{"protocolVersion": "1.0", "revision", "application",
/// "scopes", "context": {"activeScopeIds", "primaryScopeId"?},
/// "capabilities": [{"id", "title", "description", "scopeIds", "effect",
/// "inputSchema", "outputSchema", "tags", "usage"?, "bound", "available",
/// "availability"? (only when bound), "relevance": "current" | "other"}]}`,
/// capabilities in catalog order. Built on first request, then cached: the
/// same bytes for every reader.
/// `availability` is `{"available": bool, "reasonCode"?: string, "reason"?:
/// string}`: the binding's availability check's answer as it was given to
/// `rcip_availability_set` at the latest refresh (NULL fields left out);
/// `{"available": true}` for a binding without a check; `{"available":
/// false, "reasonCode": "AVAILABILITY_CHECK_FAILED", "reason": <rcip's
/// text>}` when the check failed or gave no answer. Absent when unbound
/// (`"bound": false, "available": false`). `available` at the entry's top
/// level is `bound` and `availability.available`.
/// `relevance` is `"current"` when the capability's `scopeIds` is empty or
/// shares an id with the context's `activeScopeIds`, else `"other"`. Only
/// the ids listed in `activeScopeIds` count: a scope's `parentId` does not
/// make its child scopes (or its parent) current; activate every scope
/// that should count. `primaryScopeId` does not change relevance.
/// Relevance orders discovery; it is not authorization (any bound
/// capability can be invoked).
/// Ownership: owned by `snapshot`; valid until its last reference is freed.
/// Errors: NULL `snapshot` gives NULL.
/// Thread safety: any thread.
/// Rule: seed, "getSnapshot() returns the same deeply immutable object
/// until its revision changes"; PIPELINE.md section 2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_snapshot_json(snapshot: *const rcip_snapshot) -> *const c_char {
    ffi_guard_or!(std::ptr::null(), {
        match counted(snapshot) {
            None => std::ptr::null(),
            // The text lives in the snapshot, which this handle keeps.
            Some(s) => s.json_c_str().as_ptr(),
        }
    })
}

/// The snapshot's revision (0 for NULL).
///
/// Units: a counter starting at 0 with the runtime's first snapshot and
/// incremented by every refresh.
/// Ownership: `snapshot` is borrowed for the call.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_snapshot_revision(snapshot: *const rcip_snapshot) -> u64 {
    ffi_guard_or!(0, { counted(snapshot).map(|s| s.revision()).unwrap_or(0) })
}

/// Frees one reference to the snapshot.
///
/// Ownership: consumes this reference. NULL does nothing; freeing a
/// reference twice is undefined.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_snapshot_free(snapshot: *const rcip_snapshot) {
    ffi_guard_or!((), {
        free_counted(snapshot);
    })
}
