//! Bindings returned by `rcip_host_bind`.

use super::guard::{ffi_guard, ffi_guard_or};
use super::handle::{free_owned, handle_kind, owned, owned_arg};
use super::result::rcip_result;
use rcip::runtime::Binding;

/// One binding of a handler to a capability.
///
/// Ownership: owned by the caller; `rcip_binding_free` unbinds (if it is
/// still the installed binding) and frees the handle, like a React unmount.
/// The handle stays valid after `rcip_binding_unbind` and after the runtime
/// is freed (then it answers `RCIP_RESULT_CLOSED`).
/// Thread safety: synchronized.
/// Functions: `rcip_binding_unbind`, `rcip_binding_set_revision`,
/// `rcip_binding_is_installed`, `rcip_binding_free`.
pub struct rcip_binding {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_binding => Binding);

/// Removes this binding if it is still the installed one, then refreshes. A
/// stale binding (unbound, or replaced by a newer binding) changes nothing
/// and does not refresh. A running handler is not cancelled: it may still
/// complete (seed: "Unmounting removes future access but does not
/// automatically cancel an already-running handler").
///
/// Ownership: `binding` stays valid; free it with `rcip_binding_free`. The
/// binding's user data is released once its running callbacks return and
/// every invocation handed to its handler was freed (`rcip_host_bind`).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED` (runtime
/// freed), `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread, also inside callbacks (a handler may unbind
/// itself).
/// Rule: seed, "unbinding removes only the installed handler"; PIPELINE.md
/// section 3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_binding_unbind(binding: *const rcip_binding) -> rcip_result {
    ffi_guard!({
        owned_arg(binding, "binding")?.unbind()?;
        Ok(())
    })
}

/// Sets the binding revision: a different value on the installed binding
/// refreshes (new revision, availability sampled again); the same value, or
/// a binding no longer installed, changes nothing.
///
/// Units: an opaque counter chosen by the host, initially 0.
/// Ownership: `binding` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED`,
/// `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread, also inside callbacks.
/// Rule: seed, "Set binding revision to a primitive that changes when
/// availability changes"; PIPELINE.md section 3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_binding_set_revision(binding: *const rcip_binding, revision: u64) -> rcip_result {
    ffi_guard!({
        owned_arg(binding, "binding")?.set_revision(revision)?;
        Ok(())
    })
}

/// True while this binding is the installed binding of its capability;
/// false for NULL, after unbind, and after the runtime is freed.
///
/// Ownership: `binding` is borrowed for the call.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_binding_is_installed(binding: *const rcip_binding) -> bool {
    ffi_guard_or!(false, { owned(binding).is_some_and(|b| b.is_installed()) })
}

/// Unbinds (as `rcip_binding_unbind`, when still installed) and frees the
/// handle.
///
/// Ownership: consumes `binding`. NULL does nothing; freeing twice is
/// undefined.
/// Thread safety: any thread, also inside callbacks, except the runtime's
/// clock and id generator: there the unbind is refused
/// (`RCIP_RESULT_WRONG_CONTEXT`, which this function cannot report), so the
/// handle is freed and the binding stays installed until the runtime is
/// freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_binding_free(binding: *mut rcip_binding) {
    ffi_guard_or!((), {
        free_owned(binding);
    })
}
