//! Runtime builder, runtime, timers and stats.

use super::callback::{
    c_user_data, rcip_availability_callback, rcip_clock_callback, rcip_confirmation_callback, rcip_event_callback,
    rcip_handler_callback, rcip_id_generator_callback, rcip_policy_callback, rcip_user_data_free_callback, CBinding,
    CClock, CEvents, CIds, CPolicy, UserData,
};
use super::catalog::rcip_catalog;
use super::guard::{ffi_guard, ffi_guard_or, out_arg, str_arg, FfiError, FfiResult};
use super::handle::{free_owned, handle_kind, into_owned, owned_arg, owned_mut, take_owned, view_of};
use super::invocation::rcip_invocation;
use super::result::rcip_result;
use super::string::into_c_string;
use once_cell::sync::OnceCell;
use rcip::runtime::{Handler, Invocation, Runtime, RuntimeBuilder};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// Configures a runtime before it is built.
///
/// Ownership: owned by the caller; consumed (freed) by
/// `rcip_runtime_builder_build`, on success and failure alike, or freed
/// unbuilt with `rcip_runtime_builder_free`. Using a builder after either
/// is undefined (it is freed), so no function answers
/// `RCIP_RESULT_ALREADY_USED` for it.
/// Thread safety: one thread at a time.
/// Functions: `rcip_runtime_builder_new`,
/// `rcip_runtime_builder_set_confirmation_ttl_ms`,
/// `rcip_runtime_builder_set_limits`,
/// `rcip_runtime_builder_set_validation_budget`,
/// `rcip_runtime_builder_set_validation_issue_limit`,
/// `rcip_runtime_builder_set_policy`,
/// `rcip_runtime_builder_set_confirmation_callback`,
/// `rcip_runtime_builder_add_event_observer`,
/// `rcip_runtime_builder_set_clock`, `rcip_runtime_builder_set_id_generator`,
/// `rcip_runtime_builder_set_manual_timers`, `rcip_runtime_builder_bind`
/// (**rcip**), `rcip_runtime_builder_build`, `rcip_runtime_builder_free`.
pub struct rcip_runtime_builder {
    _opaque: [u8; 0],
}

/// What an `rcip_runtime_builder` holds: the builder (`None` once built;
/// the handle is freed then, see above) and the builder bindings without an
/// availability callback, which share one handler record (**rcip**,
/// `rcip_runtime_builder_bind`).
pub(crate) struct BuilderHandle {
    builder: Option<RuntimeBuilder>,
    table: Option<TableBuilder>,
}

handle_kind!(owned rcip_runtime_builder => BuilderHandle);

/// The shared record of a builder's C bindings that have no availability
/// callback: one handler object for all of them (every slot of the runtime
/// holds a reference to it), so a builder binding allocates nothing of its
/// own. The runtime asks an availability check without saying which
/// capability it is for, so a binding with one keeps its own record
/// (`CBinding`, as `rcip_host_bind` makes).
pub(crate) struct CBindingTable {
    /// Sorted by capability index; set by the build, before any handler
    /// can be called.
    entries: OnceCell<Vec<TableEntry>>,
}

struct TableEntry {
    capability: usize,
    handler: unsafe extern "C" fn(*mut c_void, *mut rcip_invocation),
    user_data: UserData,
}

/// A table being filled by `rcip_runtime_builder_bind`.
struct TableBuilder {
    table: Arc<CBindingTable>,
    pending: Vec<TableEntry>,
}

impl Handler for CBindingTable {
    fn call(&self, invocation: Invocation) {
        let entries = self.entries.get().map(Vec::as_slice).unwrap_or_default();
        let at = invocation.capability_index().and_then(|i| match entries.get(i) {
            // Every capability bound, in catalog order: the entry is at its
            // own index.
            Some(e) if e.capability == i => Some(e),
            _ => entries
                .binary_search_by_key(&i, |e| e.capability)
                .ok()
                .map(|k| &entries[k]),
        });
        // The runtime installs this record only for the capabilities it
        // holds an entry for; without one the handle is dropped, which
        // settles it as a failure.
        if let Some(e) = at {
            let handle = rcip_invocation::into_handle(invocation);
            // Safety: the host's function with the host's data; the handle
            // is now owned by the handler.
            unsafe { (e.handler)(e.user_data.ptr(), handle) };
        }
    }
}

/// A runtime: bindings, semantic context, snapshots, invocations,
/// confirmations and preflights over one catalog.
///
/// Ownership: owned by the caller; freed with `rcip_runtime_free`, which
/// closes it (PIPELINE.md section 9). `rcip_runtime_client` and
/// `rcip_runtime_host` lend views of it.
/// Thread safety: synchronized (any thread, concurrently, and from inside
/// its own callbacks except its clock and id generator).
/// Functions: `rcip_runtime_client`, `rcip_runtime_host`,
/// `rcip_runtime_next_deadline`, `rcip_runtime_run_due_timers`,
/// `rcip_runtime_stats`, `rcip_runtime_close`, `rcip_runtime_free`.
pub struct rcip_runtime {
    _opaque: [u8; 0],
}

handle_kind!(owned rcip_runtime => Runtime);

/// The consumer surface of a runtime (what an agent may do): snapshot,
/// list, subscribe, invoke, preflight.
///
/// Ownership: borrowed from its runtime (`rcip_runtime_client`); never
/// freed; invalid after `rcip_runtime_free`.
/// Thread safety: synchronized.
/// Functions: `rcip_client_snapshot`, `rcip_client_list_capabilities`,
/// `rcip_client_subscribe`, `rcip_client_invoke`,
/// `rcip_client_invoke_blocking`, `rcip_client_preflight`.
pub struct rcip_client {
    _opaque: [u8; 0],
}

handle_kind!(lent rcip_client => Runtime);

/// The trusted host surface of a runtime: bind, context, refresh,
/// confirmation resolution.
///
/// Ownership: borrowed from its runtime (`rcip_runtime_host`); never freed;
/// invalid after `rcip_runtime_free`.
/// Thread safety: synchronized.
/// Functions: `rcip_host_bind`, `rcip_host_set_context`,
/// `rcip_host_clear_context`, `rcip_host_refresh`,
/// `rcip_host_resolve_confirmation`.
pub struct rcip_host {
    _opaque: [u8; 0],
}

handle_kind!(lent rcip_host => Runtime);

pub(crate) unsafe fn builder_mut<'a>(builder: *mut rcip_runtime_builder) -> FfiResult<&'a mut BuilderHandle> {
    let b = owned_mut(builder).ok_or_else(|| FfiError::null("builder"))?;
    if b.builder.is_none() {
        return Err(FfiError::new(rcip_result::AlreadyUsed, "the builder was already built"));
    }
    Ok(b)
}

pub(crate) fn settings(b: &mut BuilderHandle) -> &mut RuntimeBuilder {
    b.builder.as_mut().expect("checked by builder_mut")
}

/// Starts configuring a runtime over `catalog`.
///
/// Ownership: `catalog` is borrowed (the builder and the runtime keep their
/// own reference); `*builder_out` is new: build it with
/// `rcip_runtime_builder_build` or free it with `rcip_runtime_builder_free`.
/// On failure `*builder_out` is NULL.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_new(
    catalog: *const rcip_catalog,
    builder_out: *mut *mut rcip_runtime_builder,
) -> rcip_result {
    ffi_guard!({
        let out = out_arg(builder_out, "builder_out")?;
        *out = std::ptr::null_mut();
        let catalog = owned_arg(catalog, "catalog")?;
        *out = into_owned::<rcip_runtime_builder>(BuilderHandle {
            builder: Some(RuntimeBuilder::new(catalog)),
            table: None,
        });
        Ok(())
    })
}

/// Sets how long a confirmation stays pending: `expiresAt` = the clock when
/// it opens + `ttl_ms`.
///
/// Units: milliseconds; default 120000 (two minutes).
/// Ownership: `builder` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_ARGUMENT` (0,
/// or above 2^62 = 4611686018427387904; 2^62 itself is accepted); the
/// setting is unchanged then. `expiresAt` saturates at the largest int64.
/// Thread safety: one thread at a time per builder.
/// Rule: seed, "Default expiry is two minutes"; PIPELINE.md section 5.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_confirmation_ttl_ms(
    builder: *mut rcip_runtime_builder,
    ttl_ms: u64,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        settings(b).confirmation_ttl_ms(ttl_ms)?;
        Ok(())
    })
}

/// Sets the payload limits for capability input and handler output text.
///
/// Units: `max_payload_len` in bytes (default 8388608, 8 MiB);
/// `max_depth` in nesting levels of arrays and objects (default 1000);
/// 0 keeps a value as it is. Deeper or larger text is not a JSON value
/// (`INPUT_INVALID` / `OUTPUT_INVALID`), found before parsing.
/// Ownership: `builder` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 8 (limits).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_limits(
    builder: *mut rcip_runtime_builder,
    max_payload_len: usize,
    max_depth: usize,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        settings(b).limits(max_payload_len, max_depth)?;
        Ok(())
    })
}

/// Sets the work budget of each schema validation (capability input and
/// handler output).
///
/// Units: work units (one per schema node or keyword evaluated, one per
/// regular-expression search plus one per 64 bytes searched, or one per
/// instruction on the backtracking engine). A validation pass may spend
/// `max(floor, per_pair * schema size * (instance values + 1))`, where the
/// schema size counts compiled subschemas and keywords. Defaults: `floor`
/// 1000000, `per_pair` 64; 0 keeps a value as it is. A validation that
/// exhausts its budget fails with `INPUT_INVALID` / `OUTPUT_INVALID` and one
/// issue `{"instancePath": "", "keyword": "budget", ...}`.
/// Ownership: `builder` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 8 (limits; **rcip**).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_validation_budget(
    builder: *mut rcip_runtime_builder,
    floor: u64,
    per_pair: u64,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        settings(b).validation_budget(floor, per_pair);
        Ok(())
    })
}

/// Sets the bound on the validation issues an outcome carries (input
/// validation, step 9, preflight too; and handler output).
///
/// Units: `max_issues` issues and `max_bytes` bytes of issue text (the
/// UTF-8 bytes of each issue's `instancePath`, `keyword` and `message`,
/// before JSON escaping). Defaults: 1000 issues, 1048576 bytes; 0 keeps a
/// value as it is. The first issue is always kept. The issues kept are the
/// first ones of the full list; an outcome that left some out carries
/// `"validationIssuesTruncated": true` in its `error` (**rcip**) and is
/// otherwise unchanged (`failed`, `INPUT_INVALID` / `OUTPUT_INVALID`).
/// Ownership: `builder` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 8 (issue bound; **rcip**).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_validation_issue_limit(
    builder: *mut rcip_runtime_builder,
    max_issues: usize,
    max_bytes: usize,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        settings(b).validation_issue_limit(max_issues, max_bytes);
        Ok(())
    })
}

/// Installs the host policy (replacing an earlier one, whose user data is
/// released). Without one, the default policy applies: read → allow;
/// confirmed → allow; destructive → confirm; write, external → deny.
///
/// Ownership: `user_data` is kept until the runtime is freed (or the
/// builder is freed unbuilt, or the policy is replaced) and every
/// `rcip_policy_request` handed to the policy was freed (a worker may
/// decide after the runtime was freed and still use `user_data`); then
/// `user_data_free(user_data)` runs once, on the thread that released the
/// last of them.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback). On failure
/// neither function is ever called.
/// Callbacks: see `rcip_policy_callback`.
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 4 step 11.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_policy(
    builder: *mut rcip_runtime_builder,
    callback: rcip_policy_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        let cb = callback.ok_or_else(|| FfiError::null("callback"))?;
        let policy = Arc::new(CPolicy {
            cb,
            user_data: c_user_data(user_data, user_data_free),
        });
        settings(b).policy(policy);
        Ok(())
    })
}

/// Installs the host's confirmation callback (replacing an earlier one),
/// told when a confirmation opens (with the captured input, for the
/// dialog) and when it ends.
///
/// Ownership: `user_data` is kept until the runtime is freed (or the
/// builder is freed unbuilt, or the callback is replaced: the earlier user
/// data is released at once); then `user_data_free` runs once.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
/// Callbacks: see `rcip_confirmation_callback`.
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 5 (rcip: opened and closed notices).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_confirmation_callback(
    builder: *mut rcip_runtime_builder,
    callback: rcip_confirmation_callback,
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
        settings(b).confirmation_observer(observer);
        Ok(())
    })
}

/// Adds a lifecycle event observer; observers are called in the order they
/// were added, each with its own user data.
///
/// Ownership: `user_data` is kept until the runtime is freed (or the
/// builder is freed unbuilt); then `user_data_free` runs once.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
/// Callbacks: see `rcip_event_callback`.
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 4 (events: requested, started, succeeded,
/// failed, denied, confirmation_requested, confirmation_declined).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_add_event_observer(
    builder: *mut rcip_runtime_builder,
    callback: rcip_event_callback,
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
        settings(b).event_observer(observer);
        Ok(())
    })
}

/// Installs the clock (default: the system clock).
///
/// Units: the callback returns epoch milliseconds.
/// Ownership: `user_data` is kept until the runtime is freed (or the
/// builder is freed unbuilt, or the clock is replaced: the earlier user data
/// is released at once); then `user_data_free` runs once.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
/// Callbacks: see `rcip_clock_callback` (no runtime calls from it).
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 7 (determinism: the clock and id generator
/// are the host's).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_clock(
    builder: *mut rcip_runtime_builder,
    callback: rcip_clock_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        let cb = callback.ok_or_else(|| FfiError::null("callback"))?;
        let clock = Arc::new(CClock {
            cb,
            user_data: c_user_data(user_data, user_data_free),
        });
        settings(b).clock(clock);
        Ok(())
    })
}

/// Installs the id generator for invocation and confirmation ids (default:
/// built in, `"<prefix>_<runtime salt>_<counter>"`).
///
/// Ownership: `user_data` is kept until the runtime is freed (or the
/// builder is freed unbuilt, or the generator is replaced: the earlier user
/// data is released at once); then `user_data_free` runs once.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
/// Callbacks: see `rcip_id_generator_callback` (no runtime calls from it).
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 7.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_id_generator(
    builder: *mut rcip_runtime_builder,
    callback: rcip_id_generator_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        let cb = callback.ok_or_else(|| FfiError::null("callback"))?;
        let ids = Arc::new(CIds {
            cb,
            user_data: c_user_data(user_data, user_data_free),
        });
        settings(b).id_generator(ids);
        Ok(())
    })
}

/// Chooses manual timers: no library thread; confirmations expire only when
/// the host calls `rcip_runtime_run_due_timers` (ask
/// `rcip_runtime_next_deadline` when). Default: false (a library timer
/// expires them at `expiresAt`).
///
/// Ownership: `builder` is borrowed for the call.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`.
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 7.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_set_manual_timers(
    builder: *mut rcip_runtime_builder,
    manual: bool,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        settings(b).manual_timers(manual);
        Ok(())
    })
}

/// Binds a handler (and an optional availability check) to a capability of
/// the catalog on the runtime to be built (**rcip**): the runtime starts
/// with it bound, already in the snapshot of revision 0. These are
/// server-owned bindings (the seed's "runtime per server request"), for a
/// runtime made per request with every handler bound; binding all 100
/// capabilities of a catalog this way costs a small part of what 100
/// `rcip_host_bind` calls do (no binding handle, no refresh per binding).
///
/// They have no `rcip_binding` handle: they stay installed until the
/// runtime is closed or freed, and cannot be unbound individually or given
/// a binding revision (use `rcip_host_bind` on the built runtime for a
/// binding that comes and goes). In everything else a builder binding is
/// the binding `rcip_host_bind` right after `rcip_runtime_builder_build`
/// would make: the same invocation outcomes, lifecycle events,
/// availability (in snapshots, at invocation and in the rechecks),
/// confirmations and preflights. Only the revision history differs: binding
/// k capabilities after the build gives revisions 1 to k (one refresh per
/// bind), while here the first snapshot, revision 0, already has them, and
/// the next refresh is revision 1.
///
/// Ownership: `builder` is borrowed for the call; `capability_id` is copied
/// (looked up now); `user_data` is shared by both callbacks and kept until
/// the runtime is freed (or closed) and every `rcip_invocation` handed to
/// `handler` was freed, or until the builder is freed unbuilt
/// (`rcip_runtime_builder_free`); then `user_data_free(user_data)` runs
/// once, on the thread that released the last of them. The handlers bound
/// on one builder without an availability callback share one record (what
/// keeps this call from allocating): their user data is released together,
/// in catalog order, once the runtime is freed and every invocation handed
/// to any of them was freed.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, capability_id, handler),
/// `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_NOT_IN_CATALOG` (an id the
/// catalog does not declare, as `rcip_host_bind`),
/// `RCIP_RESULT_ALREADY_BOUND` (the capability was bound on this builder
/// before: the duplicate is reported by this call, not by the build, which
/// never fails because of bindings). On failure the builder is unchanged
/// and neither callback nor `user_data_free` is ever called.
/// Callbacks: `handler` per `rcip_handler_callback`; `availability` (NULL:
/// always available) per `rcip_availability_callback`. The build asks each
/// availability callback once, on the building thread, for revision 0's
/// snapshot (the runtime does not exist yet: the callback cannot reach
/// it); afterwards they are called as for any binding.
/// Thread safety: one thread at a time per builder.
/// Rule: seed, "Duplicate live bindings for one ID throw" and "runtime per
/// server request"; PIPELINE.md section 3 (**rcip**, builder bindings).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_bind(
    builder: *mut rcip_runtime_builder,
    capability_id: *const c_char,
    handler: rcip_handler_callback,
    availability: rcip_availability_callback,
    user_data: *mut c_void,
    user_data_free: rcip_user_data_free_callback,
) -> rcip_result {
    ffi_guard!({
        let b = builder_mut(builder)?;
        let capability_id = str_arg(capability_id, "capability_id")?;
        let handler = handler.ok_or_else(|| FfiError::null("handler"))?;
        if availability.is_none() {
            // The common case: an entry in the builder's shared record.
            let runtime_builder = b.builder.as_mut().expect("checked by builder_mut");
            let tb = b.table.get_or_insert_with(|| TableBuilder {
                table: Arc::new(CBindingTable {
                    entries: OnceCell::new(),
                }),
                // Sized for every capability (a runtime per request binds
                // them all), as the runtime's own slots are: no regrowth.
                pending: Vec::with_capacity(runtime_builder.capability_count()),
            });
            let shared = tb.table.clone() as Arc<dyn Handler>;
            let capability = runtime_builder.bind_c(capability_id, shared, None, None)?;
            tb.pending.push(TableEntry {
                capability,
                handler,
                user_data: c_user_data(user_data, user_data_free),
            });
            return Ok(());
        }
        let user_data = c_user_data(user_data, user_data_free);
        CBinding::register(handler, availability, user_data, |handler, check, direct| {
            settings(b).bind_c(capability_id, handler, check, direct)
        })?;
        Ok(())
    })
}

/// Builds the runtime: revision 0, context `{"activeScopeIds": []}`,
/// everything unbound except the capabilities bound on the builder
/// (`rcip_runtime_builder_bind`, **rcip**), whose availability callbacks
/// are asked now, on this thread.
///
/// Ownership: consumes and frees `builder` on success and failure alike (do
/// not use or free it afterwards); `*runtime_out` is new (free it with
/// `rcip_runtime_free`). On failure `*runtime_out` is NULL.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder or runtime_out; a non-NULL
/// builder is freed even then).
/// Thread safety: one thread at a time per builder.
/// Rule: PIPELINE.md section 2 (the revision starts at 0 with the initial
/// snapshot) and section 3 (the context starts empty; builder bindings).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_build(
    builder: *mut rcip_runtime_builder,
    runtime_out: *mut *mut rcip_runtime,
) -> rcip_result {
    ffi_guard!({
        if builder.is_null() {
            if let Some(out) = runtime_out.as_mut() {
                *out = std::ptr::null_mut();
            }
            return Err(FfiError::null("builder"));
        }
        let owned = take_owned(builder).expect("not NULL");
        let out = out_arg(runtime_out, "runtime_out")?;
        *out = std::ptr::null_mut();
        let BuilderHandle { builder, table } = *owned;
        let inner = builder.ok_or_else(|| FfiError::new(rcip_result::AlreadyUsed, "the builder was already built"))?;
        if let Some(TableBuilder { table, mut pending }) = table {
            // Bound in catalog order, the usual case, this is one pass.
            pending.sort_by_key(|e| e.capability);
            let _ = table.entries.set(pending);
        }
        *out = into_owned::<rcip_runtime>(inner.build());
        Ok(())
    })
}

/// Frees a builder that was not built. Callbacks registered on it (builder
/// bindings included) have their user data released now.
///
/// Ownership: consumes `builder`. NULL does nothing; freeing twice is
/// undefined.
/// Thread safety: one thread at a time per builder.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_builder_free(builder: *mut rcip_runtime_builder) {
    ffi_guard_or!((), {
        free_owned(builder);
    })
}

/// The consumer view of `runtime`; NULL for NULL.
///
/// Ownership: borrowed from `runtime`; valid until `rcip_runtime_free`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_client(runtime: *const rcip_runtime) -> *const rcip_client {
    ffi_guard_or!(std::ptr::null(), { view_of(runtime) })
}

/// The host view of `runtime`; NULL for NULL.
///
/// Ownership: borrowed from `runtime`; valid until `rcip_runtime_free`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_host(runtime: *const rcip_runtime) -> *const rcip_host {
    ffi_guard_or!(std::ptr::null(), { view_of(runtime) })
}

/// The earliest `expiresAt` among pending confirmations, for hosts driving
/// manual timers from their event loop.
///
/// Units: `*deadline_ms_out` in epoch milliseconds of the runtime's clock.
/// Ownership: out-parameters written on success: `*has_deadline_out` false
/// (and `*deadline_ms_out` 0) when nothing is pending.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread.
/// Rule: PIPELINE.md section 7.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_next_deadline(
    runtime: *const rcip_runtime,
    has_deadline_out: *mut bool,
    deadline_ms_out: *mut i64,
) -> rcip_result {
    ffi_guard!({
        let r = owned_arg(runtime, "runtime")?;
        let has = out_arg(has_deadline_out, "has_deadline_out")?;
        let at = out_arg(deadline_ms_out, "deadline_ms_out")?;
        let next = r.next_deadline()?;
        *has = next.is_some();
        *at = next.unwrap_or(0);
        Ok(())
    })
}

/// Expires every confirmation whose `expiresAt` is at or before the clock's
/// now, in `expiresAt` order (ties in creation order): each gets a receipt
/// `failed CONFIRMATION_EXPIRED`, a `failed` event stamped `expiresAt`, and
/// the confirmation callback's `closed` notice, on this thread. Each
/// confirmation expires just before its own callbacks: when one of them
/// frees the runtime, the confirmations not yet expired end with the free
/// (their `closed` notices, reason `closed`, during it) and this call
/// returns OK. The library's timer thread expires the same way.
///
/// Ownership: `runtime` is borrowed for the call; it may be freed from a
/// callback this call runs.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread; also valid without manual timers.
/// Rule: PIPELINE.md section 5 (expiry), section 7.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_run_due_timers(runtime: *const rcip_runtime) -> rcip_result {
    ffi_guard!({
        let r = owned_arg(runtime, "runtime")?;
        r.run_due_timers()?;
        Ok(())
    })
}

/// Counters for diagnostics and tests.
///
/// Shape: `{"revision", "bindings", "subscribers", "pendingInvocations",
/// "pendingConfirmations", "pendingPreflights", "receipts", "reservedIds",
/// "closed"}` (numbers, and a boolean: true after `rcip_runtime_close`).
/// Ownership: `*stats_out` is new (free it with `rcip_string_free`); NULL on
/// failure.
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_WRONG_CONTEXT`.
/// Thread safety: any thread.
/// Rule: rcip's own (diagnostics; PIPELINE.md section 5 for the 256
/// receipts, section 4 step 3 for reserved ids).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_stats(runtime: *const rcip_runtime, stats_out: *mut *mut c_char) -> rcip_result {
    ffi_guard!({
        let out = out_arg(stats_out, "stats_out")?;
        *out = std::ptr::null_mut();
        let r = owned_arg(runtime, "runtime")?;
        *out = into_c_string(&r.stats_json()?);
        Ok(())
    })
}

/// Closes a runtime without freeing it: everything `rcip_runtime_free`
/// does during its call (pending invocations end `failed
/// EXECUTION_ABORTED`, pending preflights get their reports, pending
/// confirmations end without receipts, bindings and subscriptions are
/// released, no callback of the runtime starts afterwards, expiries being
/// delivered on the timer thread finish first), but the handle, its client
/// and host views stay valid. Later calls through them answer
/// `RCIP_RESULT_CLOSED`, except the reads `rcip_client_snapshot`,
/// `rcip_client_list_capabilities` (the last snapshot) and
/// `rcip_runtime_stats`; `rcip_runtime_free` then releases the handle and the runtime's own user
/// data (policy, confirmation callback, event observer, clock, id
/// generator).
///
/// For bindings whose objects are freed by a garbage collector or a
/// reference count: close at once, from any thread, even while other
/// threads are inside calls on the same runtime (they see the close), and
/// free when the last of those calls has returned.
///
/// Ownership: `runtime` is borrowed; it is still the caller's to free with
/// `rcip_runtime_free` (which, after a close, only releases).
/// Errors: `RCIP_RESULT_NULL_ARGUMENT`. Closing a closed runtime returns OK
/// and changes nothing (it still waits for the timer thread's expiries).
/// Thread safety: any thread, concurrently with any call on the runtime
/// except `rcip_runtime_free`, also from inside the runtime's own callbacks
/// (not its clock or id generator). As with the free, do not call it while
/// holding a lock that the confirmation callback, the event observer or the
/// clock takes.
/// Rule: PIPELINE.md section 9 (teardown).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_close(runtime: *const rcip_runtime) -> rcip_result {
    ffi_guard!({
        owned_arg(runtime, "runtime")?.close();
        Ok(())
    })
}

/// Closes and frees a runtime (PIPELINE.md section 9). During this call:
/// every pending invocation gets `failed EXECUTION_ABORTED` (with its
/// `failed` event), every pending preflight its report (undecided entries
/// blocked `EXECUTION_ABORTED`), pending confirmations end without receipts
/// (the confirmation callback hears `closed`), bindings and subscriptions
/// are released. No callback of the runtime starts afterwards; user data is
/// released once running callbacks return. "Starts" means the runtime's
/// decision to call: a callback that another thread had already decided to
/// call when the free began (it had passed the runtime's closed check) may
/// still be entering on that thread after the free returns. It counts as
/// started before the free, like a callback that entered just before it,
/// and keeps its user data until it returns. Expiries the library's timer
/// thread is delivering for this runtime finish first (the call waits for
/// their callbacks to return), so do not call it while holding a lock that
/// the confirmation callback, the event observer or the clock takes.
///
/// The runtime's own user data (policy, confirmation callback, event
/// observer, clock, id generator) is released before the call returns,
/// except while something else still uses the runtime's core: a call
/// running on another thread (released when it returns), the callback this
/// free is called from (when it returns), an MCP session (when it is
/// freed). The policy's user data also waits for every policy request
/// still held (released when the last one is freed), and a binding's for
/// every invocation handed to its handler (`rcip_host_bind`).
///
/// After `rcip_runtime_close` the close has happened already: the free then
/// only releases the runtime's own user data and the handle.
///
/// Ownership: consumes `runtime`; its client and host views become invalid.
/// Handles still held (completion handles, bindings, tokens, snapshots, the
/// catalog) stay valid until freed and answer `RCIP_RESULT_CLOSED` where
/// they would act on the runtime; a late completion returns OK and is
/// ignored. NULL does nothing; freeing twice is undefined.
/// Thread safety: any thread, also from inside the runtime's own callbacks
/// (not its clock or id generator).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rcip_runtime_free(runtime: *mut rcip_runtime) {
    ffi_guard_or!((), {
        free_owned(runtime);
    })
}
