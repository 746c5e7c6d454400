/*
 * rcip.h: the C ABI of rcip, the RCIP 1.0 capability runtime.
 *
 * Generated from crates/rcip-capi/src by build.rs (cbindgen); do not edit by hand.
 * Regenerate with `make header`; a test fails when this copy is stale.
 *
 * Conventions that hold for every function:
 * - Strings, in and out, are NUL-terminated UTF-8 (`const char *`, no
 *   length arguments). A string the library returns is either borrowed for
 *   a documented time or new (free it with `rcip_string_free`).
 * - JSON numbers are IEEE 754 doubles, as in JavaScript: an integer beyond
 *   2^53 reaches handlers and outcomes rounded. Send large ids as strings.
 * - Times (`timestamp`, `expiresAt`, `checkedAt`) are epoch milliseconds of
 *   the runtime's clock; durations are milliseconds; sizes are bytes.
 * - Every `user_data_free` may be NULL (then nothing is called). When one is
 *   given, it runs exactly once, on whatever thread releases the last use,
 *   and never after a registration that failed.
 * - Callbacks must return normally: no C++ exception, longjmp, thread
 *   cancellation or pthread_exit may leave a callback through rcip's frames
 *   (undefined behaviour). A language runtime that ends threads by
 *   unwinding (CPython at interpreter exit ends daemon threads so) must
 *   stop calling into rcip first: close the runtimes (`rcip_runtime_close`)
 *   before it does.
 * - No function is async-signal-safe.
 * - A handle handed to another thread belongs to that thread: once you
 *   pass a completion handle (`rcip_invocation`, `rcip_policy_request`) or
 *   any owned handle to a worker, do not touch it on the handing thread
 *   again (not even to read its id or free it), unless your own lock orders
 *   the two threads. Read what you need before handing it over.
 * - Under valgrind, pass the suppression file `make install` installs:
 *   `valgrind --leak-check=full --error-exitcode=1
 *   --suppressions=PREFIX/share/rcip/rcip.supp ./host` (it hides only the
 *   "possibly lost" process-lifetime data inside librcip; README.md,
 *   "Checking for leaks").
 *
 * Callbacks at a glance (each typedef below has the details). No callback
 * runs under an rcip lock. "Itself": whether two calls of the same
 * registration can overlap (on different threads). "Released": when its
 * `user_data_free` runs, always after its last call returned.
 *
 *   callback (registered by)      thread                        itself  may call            released
 *   handler (host_bind)           driving the invocation: the   yes     any rcip function   unbound/binding freed/runtime
 *                                 invoke, a deferred policy                                 freed, and every invocation
 *                                 answer, an approval                                       handed to it freed
 *   availability (host_bind)      any refreshing or invoking    yes     any (its refresh    with the handler (shared
 *                                 thread                                is queued)          user data)
 *   policy (builder_set_policy)   driving the invocation,       yes     any                 runtime freed
 *                                 re-run or preflight
 *   outcome, report (invoke,      the settling thread, maybe    no,     any                 right after its one call
 *   resolve, preflight)           before the call returns       once
 *   event observer                where the event happens       yes     any                 runtime freed
 *   confirmation callback         where it happens (the timer   yes     any; may resolve    runtime freed
 *                                 thread for real-time expiry)          inline
 *   subscriber (subscribe)        the refreshing thread         yes     any                 unsubscribed/runtime freed
 *   clock, id generator           any thread                    yes     nothing on this     runtime freed
 *                                                                       runtime (WRONG_CONTEXT)
 *   on_cancel (token_on_cancel)   the cancelling thread, or     no,     any                 after its call, or with
 *                                 the registering one if the    once                        the token's last reference
 *                                 token is cancelled already
 *
 * Each item documents its JSON shapes, units, ownership, thread safety and
 * errors. Its "Rule:" line names where the behaviour comes from: "seed"
 * quotes the RCIP 1.0 lifecycle rules, and "PIPELINE.md section N" is
 * docs/PIPELINE.md of the rcip repository, the same rules in order with
 * rcip's own decisions marked. Outcome records and lifecycle events have
 * the shapes given at rcip_client_invoke and rcip_event_callback; the
 * conformance scenarios that pin them are described in
 * tests/conformance/FORMAT.md. A host reads the fields it needs from any of
 * them with rcip_record_parse and the rcip_record_* accessors, without a
 * JSON parser of its own; rcip_pending waits for an outcome instead of a
 * callback.
 */

#ifndef RCIP_H
#define RCIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Library version, from Cargo.toml. */
#define RCIP_VERSION_MAJOR 0
#define RCIP_VERSION_MINOR 1
#define RCIP_VERSION_PATCH 0
/** ABI version: MAJOR * 10000 + MINOR * 100 + PATCH; equals rcip_abi_version() of a matching library. */
#define RCIP_ABI_VERSION 100


/**
 * Default confirmation lifetime in milliseconds (two minutes).
 */
#define RCIP_DEFAULT_CONFIRMATION_TTL_MS 120000

/**
 * Default maximum size of capability input and handler output text, in
 * bytes (8 MiB).
 */
#define RCIP_DEFAULT_MAX_PAYLOAD_LEN ((8 * 1024) * 1024)

/**
 * Default maximum nesting depth of capability input and handler output.
 */
#define RCIP_DEFAULT_MAX_DEPTH 1000

/**
 * Most proposals in one preflight.
 */
#define RCIP_MAX_PREFLIGHT_PROPOSALS 16

/**
 * Receipts kept for expired and cancelled confirmations.
 */
#define RCIP_RECEIPT_CAPACITY 256

/**
 * The largest message an MCP session reads unless its `maxMessageBytes`
 * option says otherwise, in bytes (16 MiB).
 */
#define RCIP_MCP_DEFAULT_MAX_MESSAGE_BYTES ((16 * 1024) * 1024)

/**
 * Wait without a time limit (`rcip_pending_wait`): `UINT64_MAX`
 * milliseconds.
 */
#define RCIP_WAIT_FOREVER UINT64_MAX

/**
 * How long an ended MCP session's runtime memory is kept after the session
 * ended, in milliseconds, at least (so callbacks still running when it
 * ended may use the runtime's views), unless the server is freed first
 * (which waits for its worker threads).
 */
#define RCIP_MCP_SESSION_RETIRE_MS 5000

/**
 * The result of every fallible rcip function. `RCIP_RESULT_OK` is 0, so
 * `if (rc)` tests for failure. Values are grouped and never renumbered:
 * 1xx argument errors, 2xx host configuration, 3xx state, 9xx internal.
 *
 * Protocol results (denied, failed, validation issues, RCIP error codes)
 * never appear here: they are outcome JSON delivered to outcome callbacks.
 * After a failing call, `rcip_last_error_message()` says what was wrong.
 */
enum rcip_result
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * Success.
     */
    RCIP_RESULT_OK = 0,
    /**
     * A required pointer argument was NULL.
     */
    RCIP_RESULT_NULL_ARGUMENT = 100,
    /**
     * An identifier or text argument (capability id, invocation id,
     * confirmation id, reason, availability reason) is not valid UTF-8. A
     * JSON argument that is not UTF-8 is `RCIP_RESULT_INVALID_JSON`
     * instead (a catalog: `RCIP_RESULT_INVALID_CATALOG`); capability input
     * and handler output that are not UTF-8 are protocol outcomes
     * (`INPUT_INVALID`, `OUTPUT_INVALID`), not result codes.
     */
    RCIP_RESULT_INVALID_UTF8 = 101,
    /**
     * A JSON argument (context, filter, decision, schema, instance, MCP
     * options) is not JSON text, or not UTF-8.
     */
    RCIP_RESULT_INVALID_JSON = 102,
    /**
     * An argument has the wrong shape or is out of range.
     */
    RCIP_RESULT_INVALID_ARGUMENT = 103,
    /**
     * The catalog text is not a valid `RcipApplicationDefinition` (PIPELINE.md
     * section 1), or a schema in it does not compile.
     */
    RCIP_RESULT_INVALID_CATALOG = 200,
    /**
     * The capability id is not declared in the catalog.
     */
    RCIP_RESULT_NOT_IN_CATALOG = 201,
    /**
     * The capability already has a live binding.
     */
    RCIP_RESULT_ALREADY_BOUND = 202,
    /**
     * A context names a scope the catalog does not declare.
     */
    RCIP_RESULT_UNKNOWN_SCOPE = 203,
    /**
     * A context's `primaryScopeId` is not among its `activeScopeIds`.
     */
    RCIP_RESULT_PRIMARY_NOT_ACTIVE = 204,
    /**
     * The object is already in use or used up: an MCP session already
     * serving standard input (`rcip_mcp_session_serve_stdio` called while
     * another thread serves it); a pending outcome already handed over, or
     * with a ready callback attached (`rcip_pending_wait`,
     * `rcip_pending_on_ready`). A built builder is freed, so using it
     * again is undefined rather than this code.
     */
    RCIP_RESULT_ALREADY_USED = 300,
    /**
     * The completion handle was settled before.
     */
    RCIP_RESULT_ALREADY_COMPLETED = 301,
    /**
     * The runtime is closed (`rcip_runtime_close`, or freed while this
     * handle lives); the handle can no longer act on it.
     */
    RCIP_RESULT_CLOSED = 302,
    /**
     * A preflight batch does not hold 1 to 16 proposals.
     */
    RCIP_RESULT_PREFLIGHT_BATCH_INVALID = 303,
    /**
     * A runtime call from inside the runtime's clock or id generator; or a
     * blocking wait for a pending outcome (`rcip_pending_wait`) where it
     * could deadlock: inside a callback of the same runtime, or on the
     * thread that runs its manual timers.
     */
    RCIP_RESULT_WRONG_CONTEXT = 304,
    /**
     * No live object has that id: an MCP server session that ended (or
     * never existed); a confirmation that is not pending in the runtime
     * (`rcip_host_carry_confirmation`).
     */
    RCIP_RESULT_NOT_FOUND = 305,
    /**
     * The operating system refused: an address that cannot be bound (in
     * use, not local, no permission), or threads that cannot be started.
     */
    RCIP_RESULT_IO = 306,
    /**
     * A wait ended at its timeout before the outcome arrived
     * (`rcip_pending_wait`); the outcome may still come.
     */
    RCIP_RESULT_TIMED_OUT = 307,
    /**
     * The consumer of the invocation cannot do what the handler asked
     * (**rcip**): `rcip_invocation_elicit` / `rcip_invocation_create_message`
     * without an MCP client request (an approved re-run, an in-process
     * consumer) or with a client that did not declare form elicitation /
     * sampling.
     */
    RCIP_RESULT_UNSUPPORTED = 310,
    /**
     * An internal error (a caught panic). The call had no effect, or its
     * effect is reported through the usual outcome. Any function returning
     * `rcip_result` may return it, though no Errors list repeats it; a
     * function returning a value returns its empty value then (NULL, false,
     * 0), and one returning nothing just returns.
     */
    RCIP_RESULT_PANIC = 900,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum rcip_result rcip_result;
#else
typedef uint32_t rcip_result;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Where an availability callback writes its answer. Borrowed: valid only
 * during the `rcip_availability_callback` call that received it; never
 * freed by the host.
 *
 * Thread safety: the callback's thread, during the callback.
 * Functions: `rcip_availability_set`.
 */
typedef struct rcip_availability_sink rcip_availability_sink;

/**
 * One binding of a handler to a capability.
 *
 * Ownership: owned by the caller; `rcip_binding_free` unbinds (if it is
 * still the installed binding) and frees the handle, like a React unmount.
 * The handle stays valid after `rcip_binding_unbind` and after the runtime
 * is freed (then it answers `RCIP_RESULT_CLOSED`).
 * Thread safety: synchronized.
 * Functions: `rcip_binding_unbind`, `rcip_binding_set_revision`,
 * `rcip_binding_is_installed`, `rcip_binding_free`.
 */
typedef struct rcip_binding rcip_binding;

/**
 * A cancellation token (the seed's `AbortSignal`).
 *
 * Ownership: reference-counted; each handle from `rcip_cancel_token_new` or
 * `rcip_cancel_token_clone` is freed once with `rcip_cancel_token_free`.
 * An invocation, confirmation or preflight keeps its own reference, so the
 * consumer may free its token at any time.
 * Thread safety: synchronized (any thread, concurrently).
 * Functions: `rcip_cancel_token_new`, `rcip_cancel_token_clone`,
 * `rcip_cancel_token_cancel`, `rcip_cancel_token_is_cancelled`,
 * `rcip_cancel_token_on_cancel`, `rcip_cancel_token_free`.
 */
typedef struct rcip_cancel_token rcip_cancel_token;

/**
 * A checked, compiled catalog (`RcipApplicationDefinition` with every input
 * and output schema compiled).
 *
 * Ownership: reference-counted; free each handle once with
 * `rcip_catalog_free`. A runtime keeps its own reference, so the catalog
 * may be freed right after building runtimes from it.
 * Thread safety: shared (immutable; any thread).
 * Functions: `rcip_catalog_new`, `rcip_catalog_check`, `rcip_catalog_free`.
 */
typedef struct rcip_catalog rcip_catalog;

/**
 * The consumer surface of a runtime (what an agent may do): snapshot,
 * list, subscribe, invoke, preflight.
 *
 * Ownership: borrowed from its runtime (`rcip_runtime_client`); never
 * freed; invalid after `rcip_runtime_free`.
 * Thread safety: synchronized.
 * Functions: `rcip_client_snapshot`, `rcip_client_list_capabilities`,
 * `rcip_client_subscribe`, `rcip_client_invoke`,
 * `rcip_client_invoke_blocking`, `rcip_client_preflight`.
 */
typedef struct rcip_client rcip_client;

/**
 * The trusted host surface of a runtime: bind, context, refresh,
 * confirmation resolution.
 *
 * Ownership: borrowed from its runtime (`rcip_runtime_host`); never freed;
 * invalid after `rcip_runtime_free`.
 * Thread safety: synchronized.
 * Functions: `rcip_host_bind`, `rcip_host_set_context`,
 * `rcip_host_clear_context`, `rcip_host_refresh`,
 * `rcip_host_resolve_confirmation`.
 */
typedef struct rcip_host rcip_host;

/**
 * The completion handle a handler receives: one running invocation.
 *
 * Ownership: owned by the handler that received it; free it with
 * `rcip_invocation_free` after (or instead of) settling. The runtime keeps
 * its own reference, so settling and freeing are separate.
 * Thread safety: synchronized (any thread, concurrently).
 * Functions: `rcip_invocation_id`, `rcip_invocation_capability_id`,
 * `rcip_invocation_input`, `rcip_invocation_semantic_context`,
 * `rcip_invocation_cancel_token`, `rcip_invocation_complete`,
 * `rcip_invocation_fail`, `rcip_invocation_is_settled`,
 * `rcip_invocation_free`; while pending (**rcip**, src/ffi/report.rs):
 * `rcip_invocation_report_progress`, `rcip_invocation_log`,
 * `rcip_invocation_elicit`, `rcip_invocation_create_message`.
 */
typedef struct rcip_invocation rcip_invocation;

/**
 * What the per-request factory is told about the stateless request it
 * builds a runtime for, and where it hands the runtime over.
 *
 * Ownership: borrowed by the factory callback for the call only; never
 * freed.
 * Thread safety: the factory's thread only.
 * Functions: `rcip_mcp_request_setup_method`,
 * `rcip_mcp_request_setup_meta`, `rcip_mcp_request_setup_headers`,
 * `rcip_mcp_request_setup_header`, `rcip_mcp_request_setup_accept`.
 */
typedef struct rcip_mcp_request_setup rcip_mcp_request_setup;

/**
 * A Streamable HTTP MCP server (MCP 2025-11-25, "Transports") serving one
 * catalog, with one runtime per MCP session (docs/MCP.md, "Serving over
 * HTTP").
 *
 * Ownership: owned by the caller; freed with `rcip_mcp_server_free`
 * (which shuts it down first).
 * Thread safety: synchronized (any thread, concurrently), except that
 * `rcip_mcp_server_shutdown` and `rcip_mcp_server_free` must not be
 * called from a callback of one of its sessions' runtimes or from the
 * factory.
 * Threads: the server's I/O threads (`rcip-http-io`) never run host code;
 * the factory, handlers, policies and availability checks reached through
 * MCP, cancellations and session endings run on its worker threads
 * (`rcip-mcp-worker`, option `workers`, default 2); a deferred handler
 * settles from any thread.
 * Functions: `rcip_mcp_server_new`, `rcip_mcp_server_url`,
 * `rcip_mcp_server_start`, `rcip_mcp_server_serve`,
 * `rcip_mcp_server_shutdown`, `rcip_mcp_server_sessions`,
 * `rcip_mcp_server_session_find`, `rcip_mcp_server_free`.
 */
typedef struct rcip_mcp_server rcip_mcp_server;

/**
 * A live session's runtime, held by the host (an approval UI, a context
 * change): its host and client views and its user data.
 *
 * Ownership: owned by the caller (`rcip_mcp_server_session_find`); freed
 * with `rcip_mcp_server_session_free`. It keeps the session's runtime
 * memory alive: after the session ends, its runtime is closed and calls
 * through the views answer `RCIP_RESULT_CLOSED` (a late approval gets
 * its outcome, never a use after free).
 * Thread safety: synchronized.
 * Functions: `rcip_mcp_server_session_host`,
 * `rcip_mcp_server_session_client`, `rcip_mcp_server_session_user_data`,
 * `rcip_mcp_server_session_free`.
 */
typedef struct rcip_mcp_server_session rcip_mcp_server_session;

/**
 * An MCP server session (MCP revision 2025-11-25) over a runtime's
 * consumer surface: `initialize`, `ping`, `tools/list`, `tools/call`,
 * cancellation and `notifications/tools/list_changed`; see docs/MCP.md
 * for the mapping.
 *
 * Ownership: owned by the caller; freed with `rcip_mcp_session_free`. The
 * session keeps the runtime's core alive; after `rcip_runtime_free` its
 * tool calls are answered with a JSON-RPC internal error.
 * Thread safety: synchronized (any thread, concurrently).
 * Functions: `rcip_mcp_session_new`, `rcip_mcp_session_receive`,
 * `rcip_mcp_session_receive_with_headers`,
 * `rcip_mcp_session_set_request_runtimes`, `rcip_mcp_session_serve_stdio`,
 * `rcip_mcp_session_stats`, `rcip_mcp_session_free`.
 */
typedef struct rcip_mcp_session rcip_mcp_session;

/**
 * What the session factory is told about a new session, and where it
 * hands over the session's runtime.
 *
 * Ownership: borrowed by the factory callback for the call only; never
 * freed.
 * Thread safety: the factory's thread only.
 * Functions: `rcip_mcp_session_setup_session_id`,
 * `rcip_mcp_session_setup_initialize_params`,
 * `rcip_mcp_session_setup_client_name`, `rcip_mcp_session_setup_header`,
 * `rcip_mcp_session_setup_accept`.
 */
typedef struct rcip_mcp_session_setup rcip_mcp_session_setup;

/**
 * The pending outcome of one invoke, confirmation resolution or preflight
 * (**rcip**): the host waits for it (`rcip_pending_wait`, with a timeout,
 * from any thread), polls it (`rcip_pending_is_ready`, or a wait with
 * timeout 0), or attaches a callback (`rcip_pending_on_ready`). The
 * outcome is handed over exactly once: to one wait or to the callback.
 *
 * Ownership: owned by the caller that received it; free it with
 * `rcip_pending_free` (at any time: freed before the outcome arrived, the
 * outcome goes to nobody and nothing leaks; an attached callback still
 * receives it).
 * Thread safety: synchronized (any thread, concurrently; a second waiter
 * gets the outcome only if the first timed out).
 * Functions: `rcip_client_invoke_pending`,
 * `rcip_host_resolve_confirmation_pending`,
 * `rcip_client_preflight_pending`, `rcip_pending_wait`,
 * `rcip_pending_is_ready`, `rcip_pending_on_ready`, `rcip_pending_free`.
 */
typedef struct rcip_pending rcip_pending;

/**
 * One question to the host policy: an invocation (`phase` `"invoke"`), an
 * approved confirmation's re-run (`confirmed` true) or a preflight proposal
 * (`phase` `"preflight"`).
 *
 * Ownership: owned by the policy callback that received it; free it with
 * `rcip_policy_request_free` after (or instead of) deciding.
 * Thread safety: synchronized (any thread, concurrently).
 * Functions: reading the question: `rcip_policy_request_capability_id`,
 * `rcip_policy_request_effect`, `rcip_policy_request_is_confirmed`,
 * `rcip_policy_request_phase`, `rcip_policy_request_invocation_id`,
 * `rcip_policy_request_scope_is_active`,
 * `rcip_policy_request_primary_scope_id`, `rcip_policy_request_input`,
 * `rcip_policy_request_capability`, `rcip_policy_request_context` (all of
 * it as one JSON text); answering it: `rcip_policy_request_allow`,
 * `rcip_policy_request_deny`, `rcip_policy_request_confirm`,
 * `rcip_policy_request_decide_default`, `rcip_policy_request_decide`
 * (JSON), `rcip_policy_request_fail`; then
 * `rcip_policy_request_is_settled`, `rcip_policy_request_free`. A host
 * needs no JSON parser to read or answer a request.
 */
typedef struct rcip_policy_request rcip_policy_request;

/**
 * A read-only view of one record rcip handed over (**rcip**), made from
 * its JSON text by `rcip_record_parse`: the fields every host reads, as
 * small calls, so that a host needs no JSON parser; the JSON stays the
 * full record (read the rest from it). One type serves every record:
 * - an invocation outcome (`rcip_outcome_callback`, `rcip_pending_wait`):
 *   status, invocation id, capability id, error code and message,
 *   validation issues, confirmation id and expiry, output;
 * - a preflight report: its entries (`rcip_record_entry_count`,
 *   `rcip_record_entry`), each with status, capability id, error code and
 *   message, issues and reason;
 * - a lifecycle event (`rcip_event_callback`): phase, error code,
 *   invocation id, capability id;
 * - a confirmation notice (`rcip_confirmation_callback`): notice kind
 *   (`"opened"` / `"closed"`), confirmation id, expiry (opened), reason
 *   (closed), invocation id, capability id.
 *
 * Text fields are C strings, which cannot hold a NUL: a `\u0000` inside a
 * field's JSON text (a host reason, a refused property name in an issue
 * message) reads as U+FFFD, so the field is never cut short; the record's
 * JSON keeps it exactly.
 *
 * A field the record does not have reads as NULL (a count as 0).
 * Ownership: owned by the caller (free with `rcip_record_free`). Every
 * string it lends is owned by the record and valid until
 * `rcip_record_free` of the record (for an entry: of the report it came
 * from); the record copies the text it was made from, so the callback's
 * text may go away first.
 * Thread safety: shared (immutable: any thread, concurrently).
 * Functions: `rcip_record_parse`, `rcip_record_status`,
 * `rcip_record_invocation_id`, `rcip_record_capability_id`,
 * `rcip_record_error_code`, `rcip_record_error_message`,
 * `rcip_record_issue_count`, `rcip_record_issue_path`,
 * `rcip_record_issue_keyword`, `rcip_record_issue_message`,
 * `rcip_record_confirmation_id`, `rcip_record_expires_at`,
 * `rcip_record_output`, `rcip_record_phase`, `rcip_record_notice_kind`,
 * `rcip_record_reason`, `rcip_record_entry_count`, `rcip_record_entry`,
 * `rcip_record_free`.
 */
typedef struct rcip_record rcip_record;

/**
 * A runtime: bindings, semantic context, snapshots, invocations,
 * confirmations and preflights over one catalog.
 *
 * Ownership: owned by the caller; freed with `rcip_runtime_free`, which
 * closes it (PIPELINE.md section 9). `rcip_runtime_client` and
 * `rcip_runtime_host` lend views of it.
 * Thread safety: synchronized (any thread, concurrently, and from inside
 * its own callbacks except its clock and id generator).
 * Functions: `rcip_runtime_client`, `rcip_runtime_host`,
 * `rcip_runtime_next_deadline`, `rcip_runtime_run_due_timers`,
 * `rcip_runtime_stats`, `rcip_runtime_close`, `rcip_runtime_free`.
 */
typedef struct rcip_runtime rcip_runtime;

/**
 * Configures a runtime before it is built.
 *
 * Ownership: owned by the caller; consumed (freed) by
 * `rcip_runtime_builder_build`, on success and failure alike, or freed
 * unbuilt with `rcip_runtime_builder_free`. Using a builder after either
 * is undefined (it is freed), so no function answers
 * `RCIP_RESULT_ALREADY_USED` for it.
 * Thread safety: one thread at a time.
 * Functions: `rcip_runtime_builder_new`,
 * `rcip_runtime_builder_set_confirmation_ttl_ms`,
 * `rcip_runtime_builder_set_limits`,
 * `rcip_runtime_builder_set_validation_budget`,
 * `rcip_runtime_builder_set_validation_issue_limit`,
 * `rcip_runtime_builder_set_policy`,
 * `rcip_runtime_builder_set_confirmation_callback`,
 * `rcip_runtime_builder_add_event_observer`,
 * `rcip_runtime_builder_set_clock`, `rcip_runtime_builder_set_id_generator`,
 * `rcip_runtime_builder_set_manual_timers`, `rcip_runtime_builder_bind`
 * (**rcip**), `rcip_runtime_builder_build`, `rcip_runtime_builder_free`.
 */
typedef struct rcip_runtime_builder rcip_runtime_builder;

/**
 * A compiled schema (strict JSON Schema 2020-12, as capability contracts
 * are compiled).
 *
 * Ownership: owned by the caller; free it with `rcip_schema_free`.
 * Thread safety: shared (immutable; any thread).
 * Functions: `rcip_schema_new`, `rcip_schema_validate`, `rcip_schema_free`.
 */
typedef struct rcip_schema rcip_schema;

/**
 * An immutable snapshot of one revision (`RcipApplicationSnapshot`).
 *
 * Ownership: reference-counted; `rcip_client_snapshot` returns the same
 * pointer until the revision changes, and each returned reference is freed
 * once with `rcip_snapshot_free`.
 * Thread safety: shared (immutable; any thread).
 * Functions: `rcip_snapshot_json`, `rcip_snapshot_revision`,
 * `rcip_snapshot_free`.
 */
typedef struct rcip_snapshot rcip_snapshot;

/**
 * Where an id generator writes the id. Borrowed: valid only during the
 * `rcip_id_generator_callback` call that received it.
 *
 * Thread safety: the callback's thread, during the callback.
 * Functions: `rcip_string_sink_set`.
 */
typedef struct rcip_string_sink rcip_string_sink;

/**
 * A snapshot subscription.
 *
 * Ownership: owned by the caller; `rcip_subscription_free` unsubscribes
 * and frees it. Its user data is released then, or when the runtime is
 * closed or freed, whichever comes first; in both cases only after a
 * notification running on another thread has returned.
 * Thread safety: synchronized.
 * Functions: `rcip_subscription_free`.
 */
typedef struct rcip_subscription rcip_subscription;

/**
 * Runs once when a token is cancelled (`rcip_cancel_token_on_cancel`): on
 * the cancelling thread, or at once on the registering thread when the
 * token is already cancelled; no rcip lock held.
 */
typedef void (*rcip_cancel_callback)(void *user_data);

/**
 * Releases host data registered with a callback. Called exactly once, on
 * the thread that releases the registration, after its last callback
 * returned, with no rcip lock held. It must not use the object being
 * released (the binding, subscription, token or runtime).
 */
typedef void (*rcip_user_data_free_callback)(void *user_data);

/**
 * Notified once per snapshot revision (`rcip_client_subscribe`).
 *
 * Called on the refreshing thread after the snapshot of `revision` is
 * installed, with no rcip lock held; across threads the order is not
 * promised.
 */
typedef void (*rcip_subscriber_callback)(void *user_data, uint64_t revision);

/**
 * Receives one invocation outcome (`rcip_client_invoke`,
 * `rcip_host_resolve_confirmation`).
 *
 * Called exactly once, possibly before the registering call returns, on the
 * thread that settles the invocation, with no rcip lock held; then
 * `user_data_free` runs. `outcome_json` (the outcome record, shapes at
 * `rcip_client_invoke`) is valid during the call only; `rcip_record_parse`
 * reads its fields into a record that may be kept past the call.
 */
typedef void (*rcip_outcome_callback)(void *user_data, const char *outcome_json);

/**
 * Receives one preflight report (`rcip_client_preflight`).
 *
 * Called exactly once, possibly before `rcip_client_preflight` returns, on
 * the thread that settles the last proposal, with no rcip lock held; then
 * `user_data_free` runs. `report_json` is valid during the call only.
 */
typedef void (*rcip_report_callback)(void *user_data, const char *report_json);

/**
 * Runs a capability (`rcip_host_bind`).
 *
 * Called on the thread that drives the invocation (the consumer's invoke,
 * a policy decision, or a confirmation approval), once per invocation that
 * reaches execution, with no rcip lock held. `invocation` is owned by the
 * handler from now on: settle it exactly once (`rcip_invocation_complete`
 * or `rcip_invocation_fail`), before returning or later from any thread,
 * and free it with `rcip_invocation_free` (freeing it unsettled settles it
 * as a failure). The handler may call any rcip function, including on the
 * same runtime.
 */
typedef void (*rcip_handler_callback)(void *user_data, struct rcip_invocation *invocation);

/**
 * Answers whether a bound capability is available now (`rcip_host_bind`).
 *
 * Answer through `rcip_availability_set(sink, ...)` and return 0; a
 * non-zero return (or no answer) means the check failed, shown as
 * `{"available": false, "reasonCode": "AVAILABILITY_CHECK_FAILED"}`.
 * `sink` is valid during the call only. Called on any thread that
 * refreshes or invokes, possibly concurrently, with no rcip lock held; it
 * may call rcip functions (a refresh it causes is queued behind the current
 * one).
 */
typedef int32_t (*rcip_availability_callback)(void *user_data, struct rcip_availability_sink *sink);

/**
 * Receives each message an MCP session sends (`rcip_mcp_session_new`):
 * responses, server requests (`elicitation/create`) and notifications
 * (`notifications/tools/list_changed`, `notifications/cancelled`).
 *
 * `message_json` is one complete JSON-RPC 2.0 message, UTF-8, without a
 * trailing newline (the stdio transport writes it followed by `\n`), valid
 * during the call only. Called one message at a time, never concurrently,
 * in order, on whichever thread produced or is delivering messages (the
 * thread of `rcip_mcp_session_receive`, or a thread that settles an
 * invocation), with no rcip lock held. It may call any rcip function,
 * including `rcip_mcp_session_receive` on the same session (that
 * message's replies follow after this call returns); it must not free
 * the session.
 */
typedef void (*rcip_mcp_message_callback)(void *user_data, const char *message_json);

/**
 * Builds the runtime of one stateless (MCP 2026-07-28) request
 * (`rcip_mcp_session_set_request_runtimes`): the host builds a runtime
 * from the session's catalog (`rcip_runtime_builder_new`, its handlers
 * bound with `rcip_runtime_builder_bind`), sets its policy and context
 * for this request (from `rcip_mcp_request_setup_meta` and the headers),
 * and hands it over with `rcip_mcp_request_setup_accept`.
 *
 * Returns 0 after accepting; any other value (or 0 without accepting)
 * answers the request with JSON-RPC `-32603` (a runtime accepted before
 * a non-zero return is closed, and its request user data released).
 *
 * Called once per modern `tools/list` and `tools/call` the session
 * serves (never for `server/discover`, never for a legacy session's
 * requests), on a session worker thread (`rcip-mcp-worker`), or on the
 * thread of `rcip_mcp_session_receive` when the session has `"workers":
 * 0`; possibly concurrently with itself (two requests at once); never
 * under an rcip lock. `setup` and every string read from it are valid
 * during the call only. It may call any rcip function except
 * `rcip_mcp_session_free` of its own session. `user_data` is the
 * registration's (`rcip_mcp_session_set_request_runtimes`).
 */
typedef int32_t (*rcip_mcp_request_factory_callback)(void *user_data, struct rcip_mcp_request_setup *setup);

/**
 * Receives the user's answer to `rcip_invocation_elicit`.
 *
 * `answer_json` is `{"action": "accept", "content": {...}}` (the object the
 * client sent, not validated against the requested schema),
 * `{"action": "decline"}` or `{"action": "cancel"}` (also when the call was
 * cancelled, the handler settled first, the client answered with an error,
 * or the session ended), valid during the call only. Called exactly once,
 * on a session worker thread, never on the thread that called
 * `rcip_invocation_elicit`, with no rcip lock held; then `user_data_free`
 * runs. Keep it short (it runs where cancellations run): hand the answer to
 * the thread that waits for it, or settle the invocation.
 */
typedef void (*rcip_elicit_callback)(void *user_data, const char *answer_json);

/**
 * Receives the MCP client's reply to `rcip_invocation_create_message`.
 *
 * `reply_json` is `{"result": <CreateMessageResult: {"role", "content",
 * "model", "stopReason"?}>}` as the client sent it, `{"error": {"code",
 * "message", "data"?}}` (the client's JSON-RPC error, e.g. the user
 * rejected the request), or `{"cancelled": true}` (the call was cancelled,
 * the handler settled first, or the session ended); valid during the call
 * only. Called exactly once, on a session worker thread, with no rcip lock
 * held; then `user_data_free` runs. Keep it short, as
 * `rcip_elicit_callback`.
 */
typedef void (*rcip_sampling_callback)(void *user_data, const char *reply_json);

/**
 * Receives the MCP client's reply to `rcip_invocation_ask`.
 *
 * `reply_json` is `{"result": <the client's result>}` (for
 * `elicitation/create` an `ElicitResult` `{"action", "content"?}`, for
 * `sampling/createMessage` a `CreateMessageResult`, for `roots/list`
 * `{"roots": [{"uri", "name"?}]}`), `{"error": {"code", "message",
 * "data"?}}` (the client's JSON-RPC error), or `{"cancelled": true}` (the
 * call was cancelled, the handler settled first, the session ended, or,
 * on an MCP 2026-07-28 request, the question travels to the client in
 * this round's `InputRequiredResult` and the handler runs again with the
 * answer); valid during the call only. Called exactly once, on a session
 * worker thread, never on the thread that called `rcip_invocation_ask`,
 * with no rcip lock held; then `user_data_free` runs. Keep it short, as
 * `rcip_elicit_callback`.
 */
typedef void (*rcip_ask_callback)(void *user_data, const char *reply_json);

/**
 * Receives every progress report of the runtime's handlers
 * (`rcip_runtime_builder_set_progress_observer`).
 *
 * `report_json` is `{"invocationId", "capabilityId", "progress", "total"?,
 * "message"?}`, valid during the call only. Called on the reporting thread
 * after the report was queued to the MCP client (if any), with no rcip lock
 * held; reports of one invocation from several threads at once may arrive
 * in any order. Also approved re-runs' reports, which reach no MCP client.
 * Progress is never a lifecycle event.
 */
typedef void (*rcip_progress_callback)(void *user_data, const char *report_json);

/**
 * The host policy (`rcip_runtime_builder_set_policy`).
 *
 * Called once per policy question (an invocation, an approved
 * confirmation's re-run, or a preflight proposal), on the thread driving
 * it, with no rcip lock held. `request` is owned by the policy from now
 * on: decide exactly once (`rcip_policy_request_decide` or
 * `rcip_policy_request_fail`), before returning or later from any thread,
 * and free it with `rcip_policy_request_free` (freeing it undecided
 * settles it as a policy failure). The request is read through its
 * accessors (`rcip_policy_request_capability_id`, `_effect`,
 * `_scope_is_active`, ...) and answered with `rcip_policy_request_allow`,
 * `_deny`, `_confirm` or `_decide_default`; no JSON is needed.
 */
typedef void (*rcip_policy_callback)(void *user_data, struct rcip_policy_request *request);

/**
 * Told when a confirmation opens and when it ends
 * (`rcip_runtime_builder_set_confirmation_callback`).
 *
 * `notice_json` is `{"event": "opened", "confirmation": {"id", "title",
 * "description", "effect", "expiresAt"}, "invocationId", "capabilityId",
 * "input"}` or `{"event": "closed", "confirmationId", "invocationId",
 * "capabilityId", "reason": "approved" | "declined" | "expired" |
 * "cancelled" | "invalidated" | "closed"}`, valid during the call only.
 * Order: `opened` comes after the consumer's `confirmation_required`
 * outcome; `closed` comes after the confirmation's event and the resolving
 * call's outcome, except for `approved`, which comes first and is followed
 * by the approved re-run (its events and its outcome).
 * One rule for an ending that starts before `opened` returned (resolved or
 * cancelled inline from the `opened` notice, from the consumer's outcome
 * callback, or on another thread): nothing of the ending reaches this
 * callback while `opened` runs. Its `closed` notice is held back and
 * delivered right after `opened` returns, on the thread that delivered
 * `opened`; an approval's re-run (policy, handler, events, outcome) waits
 * with it and runs there right after that `closed` notice, so the resolving
 * call returns OK before the approved outcome exists (do not block on that
 * outcome inside `opened`). A decline's event and outcome come inside the
 * resolving call, as usual; a token cancelled inside `opened` ends the
 * confirmation once `opened` returned. If the runtime closes before the
 * held re-run starts, the re-run ends `failed EXECUTION_ABORTED` (after its
 * `failed` event), the resolving call's one outcome.
 * Called on the thread where it happens (the timer thread for real-time
 * expiry), with no rcip lock held; it may resolve the confirmation inline
 * (but not block in `rcip_pending_wait` there: `RCIP_RESULT_WRONG_CONTEXT`).
 * `rcip_record_parse` reads the notice kind, confirmation id, expiry and
 * reason without a JSON parser.
 */
typedef void (*rcip_confirmation_callback)(void *user_data, const char *notice_json);

/**
 * Receives each lifecycle event (`rcip_runtime_builder_add_event_observer`).
 *
 * `event_json` is `{"timestamp", "invocationId", "capabilityId", "phase",
 * "errorCode"?}` (redacted: no input, output or message), valid during the
 * call only. Called on the thread where the event happens, possibly
 * concurrently, with no rcip lock held.
 *
 * Sequences per invocation id: `requested`; then `failed` or `denied`
 * (a check before the handler failed: unknown, unbound or unavailable
 * capability, invalid input, policy), or `started` followed by
 * `succeeded` / `failed`, or `confirmation_requested`. A pending
 * confirmation then ends in `confirmation_declined`, `failed` (expired,
 * cancelled), `denied` (binding or context changed), or, when approved, a
 * re-run of the same invocation id that starts with `requested` again.
 * An invocation rejected before `requested` (id already active, input not
 * JSON) has no events. Count invocations by their last event, not by
 * `requested`. `rcip_record_parse` reads the phase, error code and ids
 * without a JSON parser.
 * Rule: PIPELINE.md sections 4 and 5.
 */
typedef void (*rcip_event_callback)(void *user_data, const char *event_json);

/**
 * The runtime's clock (`rcip_runtime_builder_set_clock`): epoch
 * milliseconds. Called from any thread; it must not call rcip functions on
 * the runtime (they answer `RCIP_RESULT_WRONG_CONTEXT`; `rcip_binding_free`
 * from here frees the handle without unbinding).
 */
typedef int64_t (*rcip_clock_callback)(void *user_data);

/**
 * Generates an id for `prefix` (`"invocation"` or `"confirmation"`)
 * (`rcip_runtime_builder_set_id_generator`).
 *
 * Answer with `rcip_string_sink_set(sink, id)` and return 0; a non-zero
 * return or no answer falls back to the built-in generator. `prefix` and
 * `sink` are valid during the call only. Called from any thread; it must
 * not call rcip functions on the runtime (`RCIP_RESULT_WRONG_CONTEXT`;
 * `rcip_binding_free` from here frees the handle without unbinding).
 */
typedef int32_t (*rcip_id_generator_callback)(void *user_data, const char *prefix, struct rcip_string_sink *sink);

/**
 * Builds the runtime of a new MCP session (`rcip_mcp_server_new`): the
 * host builds a runtime from the server's catalog
 * (`rcip_runtime_builder_new`), binds its handlers, sets its policy and
 * context, and hands it over with `rcip_mcp_session_setup_accept`.
 *
 * Returns 0 after accepting; any other value fails the client's
 * `initialize` with JSON-RPC `-32603` and creates no session (a runtime
 * accepted before a non-zero return is closed and freed, and its
 * session user data released).
 *
 * Called on a library worker thread (`rcip-mcp-worker`), never on an I/O
 * thread, once per `initialize` that carries no `Mcp-Session-Id`, and,
 * when the server serves MCP 2026-07-28 (option `eras` `"both"` or
 * `"modern"`), once per stateless request that needs a runtime
 * (`tools/list`, `tools/call`): its setup has the internal session id
 * `stateless-` and 32 hex digits (never sent to the client, not found by
 * `rcip_mcp_server_session_find`) and, as initialize params,
 * `{"protocolVersion": "2026-07-28", "capabilities", "clientInfo"?,
 * "_meta"}` from the request's `_meta`; that runtime ends with the
 * request (docs/MCP.md, "Over Streamable HTTP"). Possibly concurrently
 * with itself (two clients connecting at once).
 * `setup` and every string read from it are valid during the call only.
 * It may call any rcip function except `rcip_mcp_server_shutdown` and
 * `rcip_mcp_server_free` of its own server. `user_data` is the server's
 * (`rcip_mcp_server_new`).
 */
typedef int32_t (*rcip_mcp_session_factory_callback)(void *user_data, struct rcip_mcp_session_setup *setup);

/**
 * Receives one access record of an MCP HTTP server
 * (`rcip_mcp_server_set_access_log`), as JSON text: `{"time" (RFC 3339
 * UTC with milliseconds), "peer", "forwardedFor"? (only from a peer in the
 * `trustedProxies` option), "subject"? (with `auth`), "era"? (`"legacy"`
 * or `"stateless"`), "httpMethod", "path", "rpcMethod"?, "tool"?,
 * "status", "durationUs"}`; texts a client sent are cut to 256 bytes.
 *
 * Called on the server's access-log thread (`rcip-mcp-log`), never an I/O
 * or worker thread, one record at a time, in the order answered; while it
 * runs, at most 4096 more records wait (then they are dropped and counted
 * in `rcip_mcp_server_access_log_dropped`). `record_json` is valid during
 * the call. It may call any rcip function but `rcip_mcp_server_shutdown`,
 * `rcip_mcp_server_drain`, `rcip_mcp_server_set_access_log` and
 * `rcip_mcp_server_free` of its server.
 */
typedef void (*rcip_mcp_access_callback)(void *user_data, const char *record_json);

/**
 * Checks one opaque access token for an MCP HTTP server whose `auth`
 * option says `"verifier": true` (`rcip_mcp_server_set_token_verifier`;
 * docs/MCP.md "Authorization"): RFC 7662 introspection or a lookup in the
 * host's own store. It must establish that the token was issued for this
 * server (its audience).
 *
 * Answers, by return value:
 * - `0`, admitted: `rcip_string_sink_set(answer, principal_json)` with
 *   `{"issuer", "subject", "scopes"?: [...], "claims"?: {...},
 *   "expiresAt"?: <seconds since the Unix epoch> | null}` (issuer and
 *   subject non-empty, without spaces; another field is refused). A
 *   missing or malformed principal answers the client `503` and the
 *   server counts it as `unavailable`.
 * - `1`, refused: `401` `invalid_token`; the answer, if set, is the
 *   `error_description` (cut to 256 bytes, quotes and controls replaced).
 * - any other value, unavailable (the introspection endpoint is down):
 *   `503` with `Retry-After`; the answer, if set, is part of the message.
 *
 * The result is remembered for the token until `expiresAt` (at most an
 * hour) or 60 seconds without it; a token past its `expiresAt` is refused
 * as expired. Called on the server's control thread, never an I/O
 * thread, one check at a time beside session creation and endings, with
 * no rcip lock held: keep it short (return 2 when a remote check times
 * out). `token` and `answer` are valid during the call only. It may call
 * any rcip function but `rcip_mcp_server_shutdown`,
 * `rcip_mcp_server_drain`, `rcip_mcp_server_set_token_verifier` and
 * `rcip_mcp_server_free` of its server.
 */
typedef int32_t (*rcip_mcp_token_callback)(void *user_data, const char *token, struct rcip_string_sink *answer);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * Removes this binding if it is still the installed one, then refreshes. A
 * stale binding (unbound, or replaced by a newer binding) changes nothing
 * and does not refresh. A running handler is not cancelled: it may still
 * complete (seed: "Unmounting removes future access but does not
 * automatically cancel an already-running handler").
 *
 * Ownership: `binding` stays valid; free it with `rcip_binding_free`. The
 * binding's user data is released once its running callbacks return and
 * every invocation handed to its handler was freed (`rcip_host_bind`).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED` (runtime
 * freed), `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread, also inside callbacks (a handler may unbind
 * itself).
 * Rule: seed, "unbinding removes only the installed handler"; PIPELINE.md
 * section 3.
 */
rcip_result rcip_binding_unbind(const struct rcip_binding *binding);

/**
 * Sets the binding revision: a different value on the installed binding
 * refreshes (new revision, availability sampled again); the same value, or
 * a binding no longer installed, changes nothing.
 *
 * Units: an opaque counter chosen by the host, initially 0.
 * Ownership: `binding` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED`,
 * `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread, also inside callbacks.
 * Rule: seed, "Set binding revision to a primitive that changes when
 * availability changes"; PIPELINE.md section 3.
 */
rcip_result rcip_binding_set_revision(const struct rcip_binding *binding, uint64_t revision);

/**
 * True while this binding is the installed binding of its capability;
 * false for NULL, after unbind, and after the runtime is freed.
 *
 * Ownership: `binding` is borrowed for the call.
 * Thread safety: any thread.
 */
bool rcip_binding_is_installed(const struct rcip_binding *binding);

/**
 * Unbinds (as `rcip_binding_unbind`, when still installed) and frees the
 * handle.
 *
 * Ownership: consumes `binding`. NULL does nothing; freeing twice is
 * undefined.
 * Thread safety: any thread, also inside callbacks, except the runtime's
 * clock and id generator: there the unbind is refused
 * (`RCIP_RESULT_WRONG_CONTEXT`, which this function cannot report), so the
 * handle is freed and the binding stays installed until the runtime is
 * freed.
 */
void rcip_binding_free(struct rcip_binding *binding);

/**
 * Creates a token that is not cancelled.
 *
 * Ownership: `*token_out` is new; free it with `rcip_cancel_token_free`.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (token_out).
 * Thread safety: any thread.
 */
rcip_result rcip_cancel_token_new(struct rcip_cancel_token **token_out);

/**
 * Another reference to the same token.
 *
 * Ownership: `token` is borrowed; `*token_out` is new; free it with
 * `rcip_cancel_token_free`. On failure `*token_out` is NULL.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: any thread.
 */
rcip_result rcip_cancel_token_clone(const struct rcip_cancel_token *token, struct rcip_cancel_token **token_out);

/**
 * Signals cancellation. Idempotent. Registered callbacks run now, on this
 * thread; what they make runnable (an invocation ending with
 * `EXECUTION_ABORTED` while its policy is pending, a pending confirmation
 * ending with a receipt, a preflight report) happens before this returns.
 * A running handler is only told (it must cooperate).
 *
 * Ownership: `token` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: any thread, also inside callbacks.
 * Rule: seed, "Cancellation and effects"; PIPELINE.md sections 4 (steps 10,
 * 11, 12, 20), 5 and 6.
 */
rcip_result rcip_cancel_token_cancel(const struct rcip_cancel_token *token);

/**
 * True once the token was cancelled; false for NULL.
 *
 * Ownership: `token` is borrowed for the call.
 * Thread safety: any thread.
 */
bool rcip_cancel_token_is_cancelled(const struct rcip_cancel_token *token);

/**
 * Registers `callback` to run once on cancellation: at once, on this
 * thread, when the token is already cancelled; else on the cancelling
 * thread.
 *
 * Ownership: `user_data` is kept until the callback ran (then
 * `user_data_free` runs) or, if it never runs, until the last reference to
 * the token is freed.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (token, callback); on failure
 * neither function is ever called.
 * Callbacks: `callback` runs once with no rcip lock held and may call any
 * rcip function; `user_data_free` runs once after it.
 * Thread safety: any thread.
 */
rcip_result rcip_cancel_token_on_cancel(const struct rcip_cancel_token *token, rcip_cancel_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Frees this reference to the token.
 *
 * Ownership: consumes `token`. NULL does nothing; freeing twice is
 * undefined. Other references (clones, running operations) keep the token
 * alive.
 * Thread safety: any thread.
 */
void rcip_cancel_token_free(struct rcip_cancel_token *token);

/**
 * Checks and compiles a catalog.
 *
 * Shape: `catalog_json` is an `RcipApplicationDefinition`:
 * `{"protocolVersion": "1.0", "application": {"id", "name",
 * "description", "version"?}, "scopes": [{"id", "title", "description",
 * "parentId"?}], "capabilities": [{"id", "title", "description",
 * "scopeIds", "effect", "inputSchema", "outputSchema", "tags"?, "usage"?:
 * {"whenToUse", "examples"?: [{"description", "input"}]}}]}`.
 * Ownership: `catalog_json` is borrowed for the call; `*catalog_out` is
 * new (free it with `rcip_catalog_free`).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_INVALID_CATALOG` for
 * anything else wrong (not UTF-8, not JSON, nesting deeper than 1000, a
 * field of the wrong type or an unknown key, `null` anywhere in the
 * structure, a protocol version other than "1.0", an identifier not
 * matching `[a-z][A-Za-z0-9]*([._-][a-z][A-Za-z0-9]*)*`, a duplicate or
 * unknown scope or capability id, a blank `whenToUse` or example
 * description, an example failing its input schema, a schema that strict
 * JSON Schema 2020-12 refuses). The message names the id, field (JSON
 * pointer) and rule of the first problem; `rcip_catalog_check` lists all.
 * On failure `*catalog_out` is NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 1; every schema compiles at load (rcip).
 */
rcip_result rcip_catalog_new(const char *catalog_json, struct rcip_catalog **catalog_out);

/**
 * Reports every problem of a catalog at once (the linter behind
 * `rcip check`).
 *
 * Shape: `*report_out` is `{"ok": bool, "problems": [{"pointer": JSON
 * pointer into the catalog, "id"?: the application, scope or capability
 * id, "rule": short rule name, "message": sentence}]}`, problems in
 * document order; `ok` is true when there are none.
 * Ownership: `catalog_json` is borrowed; `*report_out` is new (free it with
 * `rcip_string_free`).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`. A bad catalog is not an error of
 * this call: it is the report. On failure `*report_out` is NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 1.
 */
rcip_result rcip_catalog_check(const char *catalog_json, char **report_out);

/**
 * Frees this reference to the catalog.
 *
 * Ownership: consumes `catalog`. NULL does nothing; freeing twice is
 * undefined. Runtimes built from it keep their own reference.
 * Thread safety: any thread.
 */
void rcip_catalog_free(struct rcip_catalog *catalog);

/**
 * The current snapshot.
 *
 * Ownership: `*snapshot_out` is a new reference (free it with
 * `rcip_snapshot_free`); the pointer is the same for every call until the
 * revision changes. NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread, also inside callbacks. Discovery never calls
 * host code.
 * Rule: PIPELINE.md section 2.
 */
rcip_result rcip_client_snapshot(const struct rcip_client *client, const struct rcip_snapshot **snapshot_out);

/**
 * Lists the current snapshot's capabilities that pass a filter.
 *
 * Shape: `filter_json` is NULL (no filter) or `{"context"?: "all" |
 * "current", "availableOnly"?: bool, "scopeId"?: scope id, "effect"?:
 * "read" | "write" | "external" | "destructive"}`; conditions combine with
 * AND; `""`, `false` and `"all"` filter nothing. `*capabilities_out` is a
 * JSON array of capability entries (as in the snapshot), in catalog order.
 * `scopeId` matches a capability's own `scopeIds` exactly (no parent or
 * child match); `context: "current"` keeps relevance `current` (relevance
 * filters discovery, it is not authorization).
 * Ownership: `filter_json` is borrowed; `*capabilities_out` is new (free
 * it with `rcip_string_free`); NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_JSON` (not
 * JSON, or not UTF-8),
 * `RCIP_RESULT_INVALID_ARGUMENT` (any other value or type, `null`, an
 * unknown key), `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread.
 * Rule: seed, "Scope relevance is not authorization"; PIPELINE.md section 2
 * (filters; rcip rejects wrong-shape filters).
 */
rcip_result rcip_client_list_capabilities(const struct rcip_client *client, const char *filter_json, char **capabilities_out);

/**
 * Subscribes to snapshot revisions: `callback(user_data, revision)` once
 * per refresh (bind, an unbind that removed the installed binding,
 * set/clear context, explicit refresh, a changed binding revision, every
 * successful invocation).
 *
 * Ownership: `user_data` is kept until the subscription is freed (or the
 * runtime is freed); then `user_data_free` runs once. `*subscription_out`
 * is new (free it with `rcip_subscription_free`); NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED`,
 * `RCIP_RESULT_WRONG_CONTEXT`; on failure neither function is ever called.
 * Callbacks: see `rcip_subscriber_callback`.
 * Thread safety: any thread, also inside callbacks.
 * Rule: PIPELINE.md section 2.
 */
rcip_result rcip_client_subscribe(const struct rcip_client *client, rcip_subscriber_callback callback, void *user_data, rcip_user_data_free_callback user_data_free, struct rcip_subscription **subscription_out);

/**
 * Unsubscribes and frees the subscription.
 *
 * Ownership: consumes `subscription`. NULL does nothing; freeing twice is
 * undefined.
 * Thread safety: any thread, also inside callbacks (a subscriber may free
 * its own subscription).
 */
void rcip_subscription_free(struct rcip_subscription *subscription);

/**
 * Invokes a capability. Exactly one outcome reaches `on_outcome`, possibly
 * before this returns (PIPELINE.md section 4, in order: id reservation,
 * input text, capability, binding, live availability, input schema, token,
 * policy, rechecks, confirmation, handler, output).
 *
 * Shape: `input_json` is raw text: text that is not a JSON value (not
 * UTF-8, not JSON, a leading byte-order mark, a lone surrogate escape, a
 * number overflowing to infinity, beyond the size or depth limit) is the
 * outcome `failed INPUT_INVALID`, never an error code. The outcome is
 * `{"status": "succeeded", "invocationId", "capabilityId", "output"}`,
 * `{"status": "failed" | "denied", "invocationId", "capabilityId",
 * "error": {"code", "message", "validationIssues"?: [{"instancePath",
 * "keyword", "message"}]}}` or `{"status": "confirmation_required",
 * "invocationId", "capabilityId", "confirmation": {"id", "title",
 * "description", "effect", "expiresAt"}}`. An unknown capability id is the
 * outcome `failed CAPABILITY_NOT_FOUND`.
 * Ownership: `capability_id`, `input_json` and `invocation_id` are copied;
 * `cancel_token` is retained by the invocation as long as it needs it (the
 * caller may free its reference at once); `user_data` is kept until the
 * outcome was delivered, then `user_data_free` runs once;
 * `*invocation_id_out` (if not NULL) is new (free it with
 * `rcip_string_free`) and set to NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (client, capability_id, input_json,
 * on_outcome), `RCIP_RESULT_INVALID_UTF8` (capability_id, invocation_id),
 * `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`. On failure neither
 * function is ever called and no outcome exists.
 * Callbacks: `on_outcome` per `rcip_outcome_callback` (to wait for the
 * outcome instead: `rcip_client_invoke_pending`).
 * Thread safety: any thread, also inside callbacks.
 * Rule: PIPELINE.md sections 4 and 8; seed, "Invocation IDs are reserved
 * before policy begins" (`invocation_id` NULL: a generated id; an empty
 * string is an id).
 */
rcip_result rcip_client_invoke(const struct rcip_client *client, const char *capability_id, const char *input_json, const char *invocation_id, const struct rcip_cancel_token *cancel_token, rcip_outcome_callback on_outcome, void *user_data, rcip_user_data_free_callback user_data_free, char **invocation_id_out);

/**
 * Invokes and waits for the outcome (`rcip_client_invoke` without a
 * callback).
 *
 * Shape: as `rcip_client_invoke`; `*outcome_json_out` is the outcome
 * record.
 * Ownership: as `rcip_client_invoke`; `*outcome_json_out` is new (free it
 * with `rcip_string_free`); NULL on failure.
 * Errors: as `rcip_client_invoke`.
 * Thread safety: any thread. It blocks until the outcome exists: do not
 * call it where the outcome needs work this thread would do (a deferred
 * policy or handler settled later by this same thread).
 * Rule: PIPELINE.md section 4.
 */
rcip_result rcip_client_invoke_blocking(const struct rcip_client *client, const char *capability_id, const char *input_json, const char *invocation_id, const struct rcip_cancel_token *cancel_token, char **outcome_json_out);

/**
 * Preflights 1 to 16 proposals: runs the invocation checks without
 * running anything, reserving ids, emitting events or notifying (policy
 * calls have `"phase": "preflight"`). Exactly one report reaches
 * `on_report`, possibly before this returns.
 *
 * Shape: `capability_ids[i]` and `input_jsons[i]` (raw text, as for
 * invoke) for i < `count`. The report is `{"revision": the revision when
 * the preflight started, "checkedAt": clock when it settled, "consistent":
 * bool, "outcomes": [{"status": "ready", "capabilityId", "effect"} |
 * {"status": "confirmation_required", "capabilityId", "effect", "reason"}
 * | {"status": "blocked", "capabilityId", "error": {"code", "message",
 * "validationIssues"?}}]}`; when the revision moved meanwhile every entry
 * that was not blocked is blocked `PREFLIGHT_STALE`.
 * Units: `count` is a number of proposals.
 * Ownership: all strings are copied; `cancel_token` is retained while the
 * preflight runs; `user_data` is kept until the report was delivered.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (client, on_report), then
 * `RCIP_RESULT_PREFLIGHT_BATCH_INVALID` (count 0 or above 16, checked before
 * the arrays, so `(NULL, NULL, 0)` gives it; no report), then
 * `RCIP_RESULT_NULL_ARGUMENT` (either array, any capability id or input), `RCIP_RESULT_INVALID_UTF8` (a capability
 * id), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`; on failure
 * neither function is ever called.
 * Callbacks: `on_report` per `rcip_report_callback`.
 * Thread safety: any thread, also inside callbacks.
 * Rule: PIPELINE.md section 6.
 */
rcip_result rcip_client_preflight(const struct rcip_client *client, const char *const *capability_ids, const char *const *input_jsons, size_t count, const struct rcip_cancel_token *cancel_token, rcip_report_callback on_report, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Binds a handler (and an optional availability check) to a capability of
 * the catalog, then refreshes (new revision, subscribers notified).
 *
 * Ownership: `capability_id` is copied; `user_data` is shared by both
 * callbacks and kept until the binding is released: after it is unbound
 * (`rcip_binding_unbind`, `rcip_binding_free`) or the runtime is freed,
 * once its running callbacks returned and every `rcip_invocation` handed
 * to its handler was freed (a worker may settle after the unbind and still
 * use `user_data`), `user_data_free(user_data)` runs once, on the thread
 * that released the last of them. `*binding_out` is new (free it with `rcip_binding_free`); NULL on
 * failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, capability_id, handler,
 * binding_out), `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_NOT_IN_CATALOG`
 * (an id the catalog does not declare), `RCIP_RESULT_ALREADY_BOUND` (a live
 * binding exists for it), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`.
 * On failure neither callback nor `user_data_free` is ever called.
 * Callbacks: `handler` per `rcip_handler_callback`; `availability` (NULL:
 * always available) per `rcip_availability_callback`.
 * Thread safety: any thread, also inside callbacks.
 * Rule: seed, "Duplicate live bindings for one ID throw"; PIPELINE.md
 * section 3.
 */
rcip_result rcip_host_bind(const struct rcip_host *host, const char *capability_id, rcip_handler_callback handler, rcip_availability_callback availability, void *user_data, rcip_user_data_free_callback user_data_free, struct rcip_binding **binding_out);

/**
 * Replaces the semantic context, then refreshes.
 *
 * Shape: `context_json` is `{"activeScopeIds": [scope id...],
 * "primaryScopeId"?: scope id}`. Active ids are deduplicated keeping first
 * occurrences; an empty `primaryScopeId` is kept as given.
 * Ownership: `context_json` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_JSON` (not
 * JSON or not UTF-8), `RCIP_RESULT_INVALID_ARGUMENT` (wrong shape, unknown
 * key, `null`), `RCIP_RESULT_UNKNOWN_SCOPE` (an active id the catalog does
 * not declare), `RCIP_RESULT_PRIMARY_NOT_ACTIVE` (a non-empty primary not
 * among the active ids), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`.
 * On error nothing changes (no revision, no notification).
 * Thread safety: any thread, also inside callbacks. The context is one
 * value per runtime: the last set wins.
 * Rule: seed, "Context and availability"; PIPELINE.md section 3.
 */
rcip_result rcip_host_set_context(const struct rcip_host *host, const char *context_json);

/**
 * Sets who the runtime's consumer acts for (**rcip**), or clears it
 * (NULL): a JSON object every later policy request reads with
 * `rcip_policy_request_principal`. The MCP HTTP server with the `auth`
 * option sets it on each session's and stateless request's runtime from
 * the validated token (`{"issuer", "subject", "scopes", "claims",
 * "expiresAt"}`); a host may set its own. It changes no outcome by itself:
 * the policy decides with it.
 *
 * Ownership: `principal_json` is borrowed for the call (copied).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (host), `RCIP_RESULT_INVALID_UTF8`,
 * `RCIP_RESULT_INVALID_JSON` (not JSON, or beyond the payload limits),
 * `RCIP_RESULT_INVALID_ARGUMENT` (not an object), `RCIP_RESULT_CLOSED`.
 * On error nothing changes.
 * Thread safety: any thread.
 */
rcip_result rcip_host_set_principal(const struct rcip_host *host, const char *principal_json);

/**
 * Sets the context to `{"activeScopeIds": []}`, then refreshes.
 *
 * Ownership: `host` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED`,
 * `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread, also inside callbacks.
 * Rule: seed, "unmount clears it"; PIPELINE.md section 3.
 */
rcip_result rcip_host_clear_context(const struct rcip_host *host);

/**
 * Refreshes: increments the revision, samples the availability of every
 * bound capability, installs the new snapshot, notifies every subscriber
 * once (on this thread, before returning). A refresh requested from inside
 * a refresh on the same thread is queued behind it.
 *
 * Ownership: `host` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_CLOSED`,
 * `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread, also inside callbacks.
 * Rule: seed, "call runtime.host.refresh()"; PIPELINE.md section 2.
 */
rcip_result rcip_host_refresh(const struct rcip_host *host);

/**
 * Resolves a pending confirmation (approve or decline). Exactly one
 * outcome reaches `on_outcome` (never a result code for an unknown id):
 * declined → `denied CONFIRMATION_DECLINED`; approved at or after
 * `expiresAt` → `failed CONFIRMATION_EXPIRED`; binding or context changed
 * → `denied POLICY_DENIED`; else the captured request runs again with
 * `confirmed` true (policy asked again, live rechecks), and its outcome is
 * delivered. An id that is no longer pending answers its expiry or
 * cancellation receipt once, then `failed CONFIRMATION_NOT_FOUND` (with
 * capabilityId `"unknown"` and a new invocation id).
 *
 * Shape: the outcome record of `rcip_client_invoke` (a receipt:
 * `{"status": "failed"|"denied", "invocationId", "capabilityId", "error"}`
 * when the confirmation had expired, was cancelled or is unknown).
 * Ownership: `confirmation_id` is copied; `user_data` is kept until the
 * outcome was delivered, then `user_data_free` runs once.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, confirmation_id, on_outcome),
 * `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_CLOSED` (also when the runtime
 * is freed while an approved confirmation is about to run again, e.g. from
 * the confirmation callback's `approved` notice: the confirmation is gone),
 * `RCIP_RESULT_WRONG_CONTEXT`; on failure neither function is ever called.
 * Callbacks: `on_outcome` per `rcip_outcome_callback`, possibly before
 * this returns; an approval made before the confirmation's `opened` notice
 * returned runs (and delivers) once it has, on the thread that delivered
 * `opened` (the order rule at `rcip_confirmation_callback`).
 * Thread safety: any thread, also inside callbacks (the confirmation
 * callback may resolve inline). Only the host surface can approve.
 * Rule: seed, "Approval is single-use and rechecks policy and
 * availability"; PIPELINE.md section 5.
 */
rcip_result rcip_host_resolve_confirmation(const struct rcip_host *host, const char *confirmation_id, bool approved, rcip_outcome_callback on_outcome, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * The pending confirmation `confirmation_id` as another runtime of the
 * same catalog may resume it (`rcip_host_resume_confirmation`): its ids,
 * its `expiresAt` and the context it captured. Nothing else leaves the
 * runtime (no input, token or binding). Read it while the confirmation is
 * pending (for example from the consumer's `confirmation_required`
 * outcome callback): closing the runtime ends it `closed`.
 *
 * Shape: `*carried_json_out` is `{"confirmationId", "invocationId",
 * "capabilityId", "expiresAt": Unix ms, "context": {"activeScopeIds":
 * [...], "primaryScopeId"?}}`.
 * Ownership: `confirmation_id` is borrowed for the call;
 * `*carried_json_out` is new (free it with `rcip_string_free`); NULL on
 * failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, confirmation_id,
 * carried_json_out), `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_NOT_FOUND`
 * (no confirmation of that id is pending here: never opened, or already
 * ended), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread, also inside callbacks.
 * Rule: rcip's own: PIPELINE.md section 5, "Confirmations that cross
 * runtimes" (carry).
 */
rcip_result rcip_host_carry_confirmation(const struct rcip_host *host, const char *confirmation_id, char **carried_json_out);

/**
 * Resumes a confirmation that another runtime of the same catalog opened
 * (its record from `rcip_host_carry_confirmation`), with the host's answer
 * and the consumer's input again. Exactly one outcome reaches
 * `on_outcome`: a confirmation still pending in this runtime is resolved
 * as `rcip_host_resolve_confirmation` would (the input given here is not
 * used); otherwise a capability this catalog lacks → `failed
 * CONFIRMATION_NOT_FOUND` (capabilityId `"unknown"`, a new invocation
 * id); declined → `denied CONFIRMATION_DECLINED`; the clock at or after
 * `expiresAt` → `failed CONFIRMATION_EXPIRED`; the capability not bound
 * here, or this runtime's context not the carried one → `denied
 * POLICY_DENIED`; else section 4 runs again from step 2 with the carried
 * invocation id, `input_json`, `confirmed` true and `cancel_token`
 * (input validated, policy asked, availability read again).
 *
 * Shape: `carried_json` is the record of `rcip_host_carry_confirmation`,
 * read strictly (exactly its five members, of their types); `input_json`
 * is raw text as for `rcip_client_invoke` (text that is not a JSON value
 * is the outcome `failed INPUT_INVALID` of the re-run). The outcome is a
 * record of `rcip_client_invoke`.
 * Ownership: `carried_json` and `input_json` are copied; `cancel_token`
 * (NULL: none) is retained by the re-run as long as it needs it;
 * `user_data` is kept until the outcome was delivered, then
 * `user_data_free` runs once.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, carried_json, input_json,
 * on_outcome), `RCIP_RESULT_INVALID_JSON` (`carried_json` not JSON or not
 * UTF-8), `RCIP_RESULT_INVALID_ARGUMENT` (`carried_json` of another
 * shape), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`; on failure
 * neither function is ever called and no outcome exists.
 * Callbacks: `on_outcome` per `rcip_outcome_callback`, possibly before
 * this returns; the confirmation callback is told `closed` (never
 * `opened` here), as PIPELINE.md says.
 * Thread safety: any thread, also inside callbacks. Single use across
 * runtimes is the caller's: resume a carried record once.
 * Rule: rcip's own: PIPELINE.md section 5, "Confirmations that cross
 * runtimes" (resume).
 */
rcip_result rcip_host_resume_confirmation(const struct rcip_host *host, const char *carried_json, bool approved, const char *input_json, const struct rcip_cancel_token *cancel_token, rcip_outcome_callback on_outcome, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * The invocation id.
 *
 * Ownership: owned by `invocation`; valid until `rcip_invocation_free`.
 * Errors: NULL `invocation` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 1.
 */
const char *rcip_invocation_id(const struct rcip_invocation *invocation);

/**
 * The capability id.
 *
 * Ownership: owned by `invocation`; valid until `rcip_invocation_free`.
 * Errors: NULL `invocation` gives NULL.
 * Thread safety: any thread.
 */
const char *rcip_invocation_capability_id(const struct rcip_invocation *invocation);

/**
 * The handler's own copy of the input, as compact JSON text.
 *
 * Shape: the capability's input (valid against its input schema), written
 * canonically: one value per key (the last of duplicate keys), numbers as
 * doubles. Changing a copy you make cannot change the request or a pending
 * confirmation.
 * Ownership: owned by `invocation`; valid until `rcip_invocation_free`.
 * Errors: NULL `invocation` gives NULL.
 * Thread safety: any thread.
 * Rule: seed, "A handler receives a detached input copy".
 */
const char *rcip_invocation_input(const struct rcip_invocation *invocation);

/**
 * The semantic context captured before the policy was asked.
 *
 * Shape: `{"activeScopeIds": [...], "primaryScopeId"?: "..."}`.
 * Ownership: owned by `invocation`; valid until `rcip_invocation_free`.
 * Errors: NULL `invocation` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 steps 11 and 17.
 */
const char *rcip_invocation_semantic_context(const struct rcip_invocation *invocation);

/**
 * The invocation's own cancellation token (one per invocation, never the
 * consumer's token itself): cancelled when the consumer cancels the token
 * it passed to the invocation, or when the runtime is freed. Poll it with
 * `rcip_cancel_token_is_cancelled` or register with
 * `rcip_cancel_token_on_cancel`; registrations on it end with the
 * invocation's handle, so they never accumulate on a consumer token.
 *
 * Ownership: borrowed from `invocation`; valid until
 * `rcip_invocation_free`. Do not free it; `rcip_cancel_token_clone` gives a
 * reference of your own.
 * Errors: NULL `invocation` gives NULL.
 * Thread safety: any thread.
 * Rule: seed, "the handler must cooperate with its signal".
 */
const struct rcip_cancel_token *rcip_invocation_cancel_token(const struct rcip_invocation *invocation);

/**
 * Completes the invocation with output text.
 *
 * Shape: `output_json` is the capability output as JSON text. Text that is
 * not a JSON value (not UTF-8, not JSON, above the runtime's size or depth
 * limit) gives the outcome `failed OUTPUT_INVALID` without issues; a value
 * failing the output schema gives `failed OUTPUT_INVALID` with issues; else
 * `succeeded` (after the `succeeded` event and a refresh).
 * Ownership: `output_json` is borrowed for the call (copied).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_ALREADY_COMPLETED` on a
 * second settle (nothing changes); `RCIP_RESULT_WRONG_CONTEXT` from a
 * clock or id generator. Completing after the runtime stopped waiting
 * (freed) returns OK and changes nothing. A payload problem is an outcome,
 * not an error code. After the consumer cancelled the invocation's token
 * the runtime still waits for its handler (cancellation is cooperative):
 * completing then returns OK and the outcome is `succeeded` as usual;
 * `rcip_invocation_fail` then gives `failed EXECUTION_ABORTED`.
 * Thread safety: any thread; the outcome is delivered on this thread
 * before the call returns (called on the handler callback's own thread
 * while that callback runs: after it returns).
 * Rule: PIPELINE.md section 4 steps 18–20, section 8.
 */
rcip_result rcip_invocation_complete(const struct rcip_invocation *invocation, const char *output_json);

/**
 * Fails the invocation: `failed EXECUTION_ABORTED` when `aborted` is true
 * or the token was cancelled, else `failed EXECUTION_FAILED`. No error
 * text is taken: failure details stay with the host (redaction).
 *
 * Ownership: `invocation` is borrowed for the call (free it separately).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_ALREADY_COMPLETED` on a
 * second settle; `RCIP_RESULT_WRONG_CONTEXT`. After the runtime stopped
 * waiting it returns OK and changes nothing.
 * Thread safety: any thread; as `rcip_invocation_complete`.
 * Rule: PIPELINE.md section 4 step 20; seed, "A thrown error after abort
 * is reported as EXECUTION_ABORTED".
 */
rcip_result rcip_invocation_fail(const struct rcip_invocation *invocation, bool aborted);

/**
 * True once the handle was settled (completed or failed, by the host or
 * by freeing); false for NULL.
 *
 * Ownership: `invocation` is borrowed for the call.
 * Thread safety: any thread.
 */
bool rcip_invocation_is_settled(const struct rcip_invocation *invocation);

/**
 * Frees the handle. An unsettled handle is settled as a failure first
 * (as `rcip_invocation_fail(invocation, false)`).
 *
 * Ownership: consumes `invocation`; strings and the token borrowed from it
 * become invalid. NULL does nothing; freeing twice is undefined. When its
 * binding was released meanwhile and this was the binding's last handle,
 * the binding's `user_data_free` runs here (`rcip_host_bind`).
 * Thread safety: any thread, once no other thread uses the handle.
 */
void rcip_invocation_free(struct rcip_invocation *invocation);

/**
 * Creates an MCP session over `runtime`.
 *
 * Shape: `options_json` is NULL (defaults) or `{"filter"?:
 * RcipCapabilityFilter (which capabilities tools/list offers: e.g.
 * `{"context": "current"}` or `{"availableOnly": true}`; calls are not
 * filtered), "confirmation"?: "host" (default: a `confirmation_required`
 * outcome is an error result naming the confirmation and its expiry; only
 * the host approves) | "elicit" (host opt-in: ask the MCP client's user
 * with `elicitation/create` and resolve the confirmation with the answer;
 * a client without form elicitation is answered as with "host"),
 * "pageSize"?: 1..1000 (tools per tools/list page; default all),
 * "serverName"?: string, "serverVersion"?: string, "instructions"?:
 * string (defaults: the application's id, version and description),
 * "maxMessageBytes"?: integer >= 1024 (default 16 MiB), "toolNames"?:
 * "ids" (default) | "safe" | {capability id: tool name}, "workers"?:
 * 0..64 (threads that run tool calls; default 2; 0: none),
 * "maxInFlight"?: 1..65536 (default 64), "maxQueuedMessages"?: 1..1048576
 * (default 256), "maxPendingConfirmations"?: 1..65536 (default 16),
 * "content"?: {capability id: [{"type": "json" | "text" | "image" |
 * "audio" | "resource", "property"?: output property}]} (**rcip**: which
 * output properties become the content blocks of a succeeded result;
 * docs/MCP.md, "Content blocks"), "eras"?: "both" (default: `initialize`
 * sessions and stateless MCP 2026-07-28 requests) | "legacy" (sessions
 * only) | "modern" (2026-07-28 only), "ttlMs"?: 0..86400000 (the `ttlMs`
 * of modern tools/list and server/discover results, in milliseconds;
 * default 0), "cacheScope"?: "private" (default) | "public" (of modern
 * tools/list results)}` (docs/MCP.md, "Session options" and "The two
 * eras"). Messages are JSON-RPC 2.0 text.
 * Ownership: `runtime` is borrowed (the session keeps its own reference to
 * the runtime's core); `options_json` is borrowed for the call;
 * `user_data` is kept until the session is freed and its last message
 * delivered, then `user_data_free` runs once (with a NULL `on_message`,
 * before this returns). `*session_out` is new (free
 * it with `rcip_mcp_session_free`); NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (runtime, session_out),
 * `RCIP_RESULT_INVALID_JSON` (options not JSON),
 * `RCIP_RESULT_INVALID_ARGUMENT` (options of the wrong shape or an unknown
 * key; a tool naming under which two capabilities share a name, naming
 * both ids, or a name is longer than 64 characters; a content mapping
 * that names a capability or output property the catalog does not
 * have), `RCIP_RESULT_CLOSED` (the runtime is closed),
 * `RCIP_RESULT_WRONG_CONTEXT`. On failure neither `on_message` nor
 * `user_data_free` is ever called.
 * Thread safety: any thread, also inside callbacks.
 * Callbacks: `on_message` per `rcip_mcp_message_callback`; NULL writes
 * each message to the process's standard output as one line and flushes
 * it (the MCP stdio transport, for `rcip_mcp_session_serve_stdio`): the
 * host must then write nothing else to standard output, and should ignore
 * `SIGPIPE`.
 * Rule: MCP 2025-11-25 (lifecycle, tools, cancellation, elicitation); the
 * session uses only the consumer surface, plus, with "elicit", the host's
 * confirmation resolution.
 */
rcip_result rcip_mcp_session_new(const struct rcip_runtime *runtime, const char *options_json, rcip_mcp_message_callback on_message, void *user_data, rcip_user_data_free_callback user_data_free, struct rcip_mcp_session **session_out);

/**
 * Passes one message from the MCP client to the session.
 *
 * Shape: `message_json` is one JSON-RPC 2.0 message (a request,
 * notification or response to the session's own request), without the
 * newline. Text that is not JSON or not valid JSON-RPC is answered through
 * the message callback with the standard error (`-32700` parse error,
 * `-32600` invalid request, with id `null` when it could not be read),
 * never with an `rcip_result`; an unknown method is `-32601`, an unknown
 * tool or bad params `-32602`, a request id already in flight `-32600`.
 * Ownership: `message_json` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (session, message_json). A closed
 * session (after standard input ended in `rcip_mcp_session_serve_stdio`)
 * ignores messages.
 * Thread safety: any thread, concurrently, also inside callbacks
 * (including the session's message callback). With workers (the
 * default), this returns before a `tools/call` is handled: its
 * validation, policy, availability check and handler run on one of the
 * session's worker threads (`rcip-mcp-worker`), and so do cancellations
 * (`notifications/cancelled`) and the answer to a confirmation question;
 * the other replies (`initialize`, `ping`, `tools/list`, errors) are sent
 * before this returns, unless another thread is delivering messages.
 * With `"workers": 0` everything runs on the calling thread, and every
 * reply that waits for neither a deferred handler nor the user is sent
 * before this returns.
 * Rule: JSON-RPC 2.0; MCP 2025-11-25 base protocol; the worker pool is
 * **rcip** (docs/PIPELINE.md section 7).
 */
rcip_result rcip_mcp_session_receive(const struct rcip_mcp_session *session, const char *message_json);

/**
 * Serves the session over standard input and output (the MCP stdio
 * transport): reads newline-delimited messages from standard input and
 * passes each to the session until standard input ends, then closes the
 * session (calls in flight are cancelled; nothing more is sent).
 *
 * Shape: each input line is one JSON-RPC message (UTF-8; `\r\n` accepted;
 * blank lines skipped); a line longer than `maxMessageBytes` is answered
 * with `-32700`. The session's messages go where `rcip_mcp_session_new`
 * sent them (NULL callback: standard output, one line each).
 * Ownership: `session` is borrowed until this returns; do not free it
 * meanwhile.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_USED` (the
 * session is already serving on another thread). A read error ends the
 * loop like the end of input (the client is gone) and returns OK.
 * Thread safety: blocks the calling thread; other threads may use the
 * session and the runtime meanwhile (outcomes settled elsewhere are sent
 * from there).
 * Rule: MCP 2025-11-25, transports, "stdio".
 */
rcip_result rcip_mcp_session_serve_stdio(const struct rcip_mcp_session *session);

/**
 * The session's counters as JSON, for a host that watches its MCP
 * clients (**rcip**).
 *
 * Shape: `{"inFlight": requests received and not answered yet,
 * "droppedNotifications": notifications dropped because the outgoing
 * queue was full, "contentReplaced": content blocks replaced by a text
 * note because an output property the `content` option names was not
 * valid content (docs/MCP.md, "Content blocks"; those results stay
 * `succeeded`)}`; counts since the session was created.
 * Ownership: `session` is borrowed; `*json_out` is new, freed with
 * `rcip_string_free`; NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (session, json_out).
 * Thread safety: any thread, also inside callbacks.
 */
rcip_result rcip_mcp_session_stats(const struct rcip_mcp_session *session, char **json_out);

/**
 * Passes one message from the MCP client to the session, with the
 * headers the host's own transport received it with (an HTTP server of
 * the host's own): a stateless (MCP 2026-07-28) request's per-request
 * factory reads them (`rcip_mcp_request_setup_headers`,
 * `rcip_mcp_request_setup_header`); legacy requests ignore them.
 * Otherwise as `rcip_mcp_session_receive`.
 *
 * Shape: `message_json` as for `rcip_mcp_session_receive`; `headers_json`
 * is NULL (no headers: the same as `rcip_mcp_session_receive`) or a JSON
 * object `{header name: value string}`; names are handed to the factory
 * in lower case (ASCII).
 * Ownership: `message_json` and `headers_json` are borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (session, message_json),
 * `RCIP_RESULT_INVALID_JSON` (headers_json not JSON or not UTF-8),
 * `RCIP_RESULT_INVALID_ARGUMENT` (headers_json not an object of
 * strings). The message is not received when an error is returned.
 * Thread safety: as `rcip_mcp_session_receive`.
 * Rule: **rcip** (MCP 2026-07-28 leaves a request's headers to the
 * transport).
 */
rcip_result rcip_mcp_session_receive_with_headers(const struct rcip_mcp_session *session, const char *message_json, const char *headers_json);

/**
 * Gives the session a per-request runtime factory (**rcip**): from now
 * on each stateless (MCP 2026-07-28) `tools/list` and `tools/call` runs
 * on a runtime of its own that `factory` builds, so nothing of one
 * request (context, confirmations, invocation ids, events) is visible to
 * another; the session closes that runtime when the request's response
 * is sent, or when the request ends without one (cancelled, session
 * closed). Without a factory, stateless requests use the session's
 * runtime; legacy (`initialize`) sessions always do. Stateless requests
 * are served only when the session option `eras` is `"both"` or
 * `"modern"` (docs/MCP.md, "The two eras"). Replaces an earlier factory;
 * requests already running keep the runtimes it built.
 *
 * Ownership: `session` is borrowed for the call; `user_data` is kept
 * until the session is freed or the factory replaced (and no request is
 * still being built by it), then `user_data_free` runs once.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (session, factory). On failure
 * neither `factory` nor `user_data_free` is ever called, and an earlier
 * factory stays.
 * Thread safety: any thread, concurrently, also inside callbacks
 * (including the factory itself).
 * Callbacks: `factory` per `rcip_mcp_request_factory_callback`.
 * `user_data_free` runs once, after the factory's last call returned,
 * on the thread that frees the session or replaces the factory (or the
 * worker whose factory call was the last), with no rcip lock held.
 * Rule: MCP 2026-07-28 "Overview" (stateless requests); the seed's
 * server rule (a separate runtime per server request).
 */
rcip_result rcip_mcp_session_set_request_runtimes(const struct rcip_mcp_session *session, rcip_mcp_request_factory_callback factory, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * The request's JSON-RPC method: `tools/list` or `tools/call`.
 *
 * Ownership: borrowed from `setup`, valid during the factory call; NULL
 * for NULL.
 * Thread safety: the factory's thread.
 */
const char *rcip_mcp_request_setup_method(const struct rcip_mcp_request_setup *setup);

/**
 * The request's whole `params._meta` object as JSON text, as the client
 * sent it.
 *
 * Shape: `{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
 * "io.modelcontextprotocol/clientCapabilities": {...},
 * "io.modelcontextprotocol/clientInfo"?: {"name", "version", ...},
 * "io.modelcontextprotocol/logLevel"?, "progressToken"?, ...}` (MCP
 * 2026-07-28, "Per-request protocol fields"; checked before the factory
 * runs). Self-reported by the client: MCP says not to base security
 * decisions on `clientInfo`.
 * Ownership: borrowed from `setup`, valid during the factory call; NULL
 * for NULL.
 * Thread safety: the factory's thread.
 */
const char *rcip_mcp_request_setup_meta(const struct rcip_mcp_request_setup *setup);

/**
 * The headers the host's transport passed with the request
 * (`rcip_mcp_session_receive_with_headers`) as JSON text; `{}` for a
 * request received without them (`rcip_mcp_session_receive`, stdio).
 *
 * Shape: `{lower-case header name: value string}`.
 * Ownership: borrowed from `setup`, valid during the factory call; NULL
 * for NULL.
 * Thread safety: the factory's thread.
 */
const char *rcip_mcp_request_setup_headers(const struct rcip_mcp_request_setup *setup);

/**
 * The value of header `name` (any case) passed with the request, or NULL
 * when it had none (or for a NULL argument, or a name that is not UTF-8).
 *
 * Ownership: `name` is borrowed for the call; the result is borrowed
 * from `setup`, valid during the factory call.
 * Thread safety: the factory's thread.
 */
const char *rcip_mcp_request_setup_header(const struct rcip_mcp_request_setup *setup, const char *name);

/**
 * Hands the request its runtime.
 *
 * Ownership: consumes `runtime` (on success and on failure alike: on
 * failure it is closed and freed). Its views (`rcip_runtime_host`,
 * `rcip_runtime_client`) taken before stay valid while the request runs
 * and, after it ended, for at least `RCIP_MCP_SESSION_RETIRE_MS` (calls
 * through them then answer `RCIP_RESULT_CLOSED`), unless the session is
 * freed or its factory replaced first. The session closes the runtime
 * when the request ends (its response sent, or the request cancelled or
 * the session closed; a confirmation it opened ends `closed`), then calls
 * `user_data_free(user_data)` once, then keeps the closed runtime's
 * memory as said and frees it (the runtime's own user data, its policy's
 * for example, goes then). Build the runtime from the session's catalog
 * (the same `rcip_catalog`, so no request compiles schemas again).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (setup, runtime),
 * `RCIP_RESULT_ALREADY_USED` (a runtime was already accepted). On
 * failure `user_data_free` is never called.
 * Thread safety: the factory's thread, during the factory call.
 * Callbacks: `user_data_free` runs once, after the request ended and its
 * runtime was closed (no callback of that runtime starts afterwards), on
 * a session worker or the thread that answered, cancelled or closed, with
 * no rcip lock held; it may call any rcip function but
 * `rcip_mcp_session_free` of its session.
 */
rcip_result rcip_mcp_request_setup_accept(struct rcip_mcp_request_setup *setup, struct rcip_runtime *runtime, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Closes and frees the session: calls in flight are cancelled and get no
 * response, nothing more is sent, the snapshot subscription ends. The
 * session's worker threads finish what is queued (the cancellations) and
 * end before this returns (it waits up to 5 s for a handler that does not
 * return), so no library thread runs host code for the session
 * afterwards. A message being delivered on another thread completes;
 * `user_data_free` runs after it, on the thread that releases the last
 * reference.
 *
 * Ownership: consumes `session`. NULL does nothing; freeing twice is
 * undefined, and so is freeing it while `rcip_mcp_session_serve_stdio`
 * runs.
 * Thread safety: any thread, except from inside the session's own
 * message callback.
 */
void rcip_mcp_session_free(struct rcip_mcp_session *session);

/**
 * Invokes a capability, as `rcip_client_invoke`, with the outcome going to
 * a new pending handle instead of a callback.
 *
 * Shape: as `rcip_client_invoke` (the outcome record).
 * Ownership: `capability_id`, `input_json` and `invocation_id` are copied;
 * `cancel_token` is retained by the invocation as long as it needs it;
 * `*pending_out` is new (free it with `rcip_pending_free`), NULL on
 * failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (client, capability_id, input_json,
 * pending_out), `RCIP_RESULT_INVALID_UTF8` (capability_id,
 * invocation_id), `RCIP_RESULT_CLOSED`, `RCIP_RESULT_WRONG_CONTEXT`. On
 * failure no outcome exists.
 * Thread safety: any thread, also inside callbacks (but see
 * `rcip_pending_wait` for where waiting is refused). The outcome may be
 * ready before this returns (a synchronous handler).
 * Rule: PIPELINE.md section 4; the waitable form is **rcip**.
 */
rcip_result rcip_client_invoke_pending(const struct rcip_client *client, const char *capability_id, const char *input_json, const char *invocation_id, const struct rcip_cancel_token *cancel_token, struct rcip_pending **pending_out);

/**
 * Resolves a pending confirmation, as `rcip_host_resolve_confirmation`,
 * with the outcome going to a new pending handle instead of a callback.
 *
 * Shape: as `rcip_host_resolve_confirmation` (the outcome record).
 * Ownership: `confirmation_id` is copied; `*pending_out` is new (free it
 * with `rcip_pending_free`), NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (host, confirmation_id,
 * pending_out), `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_CLOSED`,
 * `RCIP_RESULT_WRONG_CONTEXT`; on failure no outcome exists.
 * Thread safety: any thread, also inside callbacks (the confirmation
 * callback may resolve inline; it must not wait there, see
 * `rcip_pending_wait`).
 * Rule: PIPELINE.md section 5; the waitable form is **rcip**.
 */
rcip_result rcip_host_resolve_confirmation_pending(const struct rcip_host *host, const char *confirmation_id, bool approved, struct rcip_pending **pending_out);

/**
 * Preflights 1 to 16 proposals, as `rcip_client_preflight`, with the
 * report going to a new pending handle instead of a callback.
 *
 * Shape: as `rcip_client_preflight` (the report).
 * Units: `count` is a number of proposals.
 * Ownership: all strings are copied; `cancel_token` is retained while the
 * preflight runs; `*pending_out` is new (free it with
 * `rcip_pending_free`), NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (client, pending_out), then
 * `RCIP_RESULT_PREFLIGHT_BATCH_INVALID` (count 0 or above 16), then
 * `RCIP_RESULT_NULL_ARGUMENT` (either array, any element),
 * `RCIP_RESULT_INVALID_UTF8` (a capability id), `RCIP_RESULT_CLOSED`,
 * `RCIP_RESULT_WRONG_CONTEXT`; on failure no report exists.
 * Thread safety: any thread, also inside callbacks.
 * Rule: PIPELINE.md section 6; the waitable form is **rcip**.
 */
rcip_result rcip_client_preflight_pending(const struct rcip_client *client, const char *const *capability_ids, const char *const *input_jsons, size_t count, const struct rcip_cancel_token *cancel_token, struct rcip_pending **pending_out);

/**
 * Waits up to `timeout_ms` for the outcome and takes it.
 *
 * Shape: `*outcome_json_out` is the outcome record (or the preflight
 * report) the call that made `pending` documents.
 * Units: `timeout_ms` in milliseconds; 0 polls (never blocks, never
 * `RCIP_RESULT_WRONG_CONTEXT`); `RCIP_WAIT_FOREVER` (`UINT64_MAX`) has no
 * limit.
 * Ownership: `pending` is borrowed; `*outcome_json_out` is new (free it
 * with `rcip_string_free`), NULL on failure. The outcome is handed over
 * once: a later wait answers `RCIP_RESULT_ALREADY_USED`.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (pending, outcome_json_out);
 * `RCIP_RESULT_TIMED_OUT` (the timeout passed first; wait again later);
 * `RCIP_RESULT_ALREADY_USED` (the outcome was taken by an earlier wait,
 * or a callback is attached); `RCIP_RESULT_WRONG_CONTEXT` when the
 * outcome has not arrived and blocking here could deadlock: on a thread
 * inside a callback of the same runtime (handler, policy, outcome,
 * report, event, confirmation, subscriber or ready callback: the work
 * that settles the outcome may be queued behind that callback), or, with
 * manual timers, on the thread that last called
 * `rcip_runtime_run_due_timers` or `rcip_runtime_next_deadline`.
 * `RCIP_RESULT_WRONG_CONTEXT` cancels nothing: the work goes on and the
 * outcome stays in `pending` for a later wait or a ready callback (an
 * approval made inside `opened` still runs once `opened` returns). A
 * single-threaded host with manual timers never blocks here: it polls
 * (`timeout_ms` 0) or attaches a ready callback, and sleeps until
 * `rcip_runtime_next_deadline` itself before running its due timers.
 * Thread safety: any thread; no rcip lock is held while it blocks.
 * Rule: **rcip** (PIPELINE.md section 7: work runs on the thread that
 * made it runnable, so a thread may not wait for work queued behind it).
 */
rcip_result rcip_pending_wait(const struct rcip_pending *pending, uint64_t timeout_ms, char **outcome_json_out);

/**
 * True when the outcome has arrived and was not handed over yet; false
 * for NULL.
 *
 * Ownership: `pending` is borrowed for the call.
 * Thread safety: any thread.
 */
bool rcip_pending_is_ready(const struct rcip_pending *pending);

/**
 * Hands the outcome to `callback` instead of a wait: at once on this
 * thread when it has arrived, else on the thread that settles it.
 *
 * Shape: `callback` receives the outcome record (or report) as
 * `rcip_outcome_callback` does.
 * Ownership: `user_data` is kept until the callback ran, then
 * `user_data_free` runs once. The registration outlives the handle:
 * freeing `pending` afterwards does not stop the callback. If the
 * runtime is freed first, the callback still runs during that free (the
 * ending outcome, as for every pending invocation).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (pending, callback);
 * `RCIP_RESULT_ALREADY_USED` (the outcome was taken by a wait, or a
 * callback is attached); on failure neither function is ever called.
 * Callbacks: `callback` runs exactly once, with no rcip lock held,
 * possibly before this returns; the text is valid during the call only.
 * Thread safety: any thread, also inside callbacks.
 * Rule: **rcip**.
 */
rcip_result rcip_pending_on_ready(const struct rcip_pending *pending, rcip_outcome_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Frees the handle. An outcome not handed over yet goes to nobody (it is
 * released, now or when it arrives); an attached callback still receives
 * it.
 *
 * Ownership: consumes `pending`. NULL does nothing; freeing twice is
 * undefined.
 * Thread safety: any thread, once no other thread uses the handle.
 */
void rcip_pending_free(struct rcip_pending *pending);

/**
 * What the policy is asked (`RcipPolicyContext`).
 *
 * Shape: `{"capability": <the capability's live snapshot entry: id, title,
 * description, scopeIds, effect, inputSchema, outputSchema, tags, usage?,
 * bound, available, availability?, relevance>, "input": <the input>,
 * "semanticContext": {"activeScopeIds", "primaryScopeId"?}, "confirmed":
 * bool, "phase": "invoke" | "preflight"}`.
 * Ownership: owned by `request`; valid until `rcip_policy_request_free`.
 * Errors: NULL `request` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 11, section 6.
 */
const char *rcip_policy_request_context(const struct rcip_policy_request *request);

/**
 * Who the runtime's consumer acts for, as JSON text, or NULL when none
 * is set (**rcip**; `rcip_host_set_principal`; from MCP with `auth`:
 * `{"issuer", "subject", "scopes", "claims", "expiresAt"}`).
 *
 * Ownership: owned by `request`; valid until `rcip_policy_request_free`.
 * Errors: NULL `request` gives NULL.
 * Thread safety: any thread.
 */
const char *rcip_policy_request_principal(const struct rcip_policy_request *request);

/**
 * The invocation id, or NULL for a preflight proposal (no id is reserved
 * by a preflight).
 *
 * Ownership: owned by `request`; valid until `rcip_policy_request_free`.
 * Errors: NULL `request` gives NULL.
 * Thread safety: any thread.
 */
const char *rcip_policy_request_invocation_id(const struct rcip_policy_request *request);

/**
 * The id of the capability the policy is asked about.
 *
 * Ownership: owned by `request`; valid until `rcip_policy_request_free`.
 * Errors: NULL `request` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 11 (`capability.id`).
 */
const char *rcip_policy_request_capability_id(const struct rcip_policy_request *request);

/**
 * The capability's declared effect: `"read"`, `"write"`, `"external"` or
 * `"destructive"`.
 *
 * Ownership: static text; do not free.
 * Errors: NULL `request` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 1 (`effect`).
 */
const char *rcip_policy_request_effect(const struct rcip_policy_request *request);

/**
 * True when the question is an approved confirmation's re-run
 * (`confirmed` of `RcipPolicyContext`); false for a first invocation, a
 * preflight proposal, or NULL.
 *
 * Ownership: `request` is borrowed for the call.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 5, resolve step 5.
 */
bool rcip_policy_request_is_confirmed(const struct rcip_policy_request *request);

/**
 * The phase: `"invoke"` (an invocation or an approved re-run) or
 * `"preflight"` (a preflight proposal, which has no invocation id).
 *
 * Ownership: static text; do not free.
 * Errors: NULL `request` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 11, section 6.
 */
const char *rcip_policy_request_phase(const struct rcip_policy_request *request);

/**
 * True when `scope_id` is among the active scope ids of the semantic
 * context captured for this request (exact match; a parent scope is not
 * inherited, so a child's parent is not active unless listed).
 *
 * Ownership: both arguments are borrowed for the call.
 * Errors: NULL `request`, NULL `scope_id` or a `scope_id` that is not
 * UTF-8 gives false.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 2 (relevance: parents are not inherited),
 * section 4 step 11 (`semanticContext`).
 */
bool rcip_policy_request_scope_is_active(const struct rcip_policy_request *request, const char *scope_id);

/**
 * The primary scope id of the captured semantic context, or NULL when the
 * context has none (an empty `primaryScopeId` is kept as given: `""`).
 *
 * Ownership: owned by `request`; valid until `rcip_policy_request_free`.
 * Errors: NULL `request` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 3 (an empty `primaryScopeId` passes and is
 * kept).
 */
const char *rcip_policy_request_primary_scope_id(const struct rcip_policy_request *request);

/**
 * The input the policy is asked about, as compact JSON text.
 *
 * Shape: the capability input (valid against its input schema), written
 * canonically (the last of duplicate keys, numbers as doubles): the
 * `input` member of `rcip_policy_request_context`.
 * Ownership: owned by `request`; valid until `rcip_policy_request_free`.
 * Errors: NULL `request` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 11 (`input`).
 */
const char *rcip_policy_request_input(const struct rcip_policy_request *request);

/**
 * The capability's live snapshot entry, as JSON text.
 *
 * Shape: `{"id", "title", "description", "scopeIds", "effect",
 * "inputSchema", "outputSchema", "tags", "usage"?, "bound", "available",
 * "availability"?, "relevance"}` sampled when the policy was asked: the
 * `capability` member of `rcip_policy_request_context`.
 * Ownership: owned by `request`; valid until `rcip_policy_request_free`.
 * Errors: NULL `request` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 11 (`capability`), section 2.
 */
const char *rcip_policy_request_capability(const struct rcip_policy_request *request);

/**
 * Decides `allow` (as `rcip_policy_request_decide` with
 * `{"decision": "allow"}`).
 *
 * Ownership: `request` is borrowed for the call (free it separately).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_COMPLETED` on
 * a second settle, `RCIP_RESULT_WRONG_CONTEXT` (from a clock or id
 * generator). Deciding after the runtime stopped waiting returns OK and
 * changes nothing.
 * Thread safety: any thread; as `rcip_policy_request_decide`.
 * Rule: PIPELINE.md section 4 steps 11–16.
 */
rcip_result rcip_policy_request_allow(const struct rcip_policy_request *request);

/**
 * Decides `deny`, with an optional reason in plain text: it becomes the
 * `POLICY_DENIED` outcome's message (rcip writes it into the JSON, so any
 * text is fine: quotes, newlines, non-ASCII).
 *
 * Ownership: `reason` (NULL: no reason, rcip's own message) is copied.
 * An empty reason is a reason: the message is empty, as with
 * `{"decision": "deny", "reason": ""}` through `rcip_policy_request_decide`.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (request),
 * `RCIP_RESULT_INVALID_UTF8` (reason; the request stays undecided),
 * `RCIP_RESULT_ALREADY_COMPLETED`, `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread; as `rcip_policy_request_decide`.
 * Rule: PIPELINE.md section 4 step 13 (message = the policy's reason when
 * given).
 */
rcip_result rcip_policy_request_deny(const struct rcip_policy_request *request, const char *reason);

/**
 * Decides `confirm`, with an optional reason in plain text: it becomes the
 * confirmation's `description` (a preflight entry's `reason`), even when
 * empty; NULL keeps the capability description.
 *
 * Ownership: `reason` is copied.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (request),
 * `RCIP_RESULT_INVALID_UTF8` (reason; the request stays undecided),
 * `RCIP_RESULT_ALREADY_COMPLETED`, `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread; as `rcip_policy_request_decide`.
 * Rule: PIPELINE.md section 5 (opening: the description is the policy's
 * reason when given, even `""`), section 4 step 15 (a confirm on an
 * approved re-run is `denied POLICY_DENIED`).
 */
rcip_result rcip_policy_request_confirm(const struct rcip_policy_request *request, const char *reason);

/**
 * Settles the request with the decision the built-in default policy
 * gives it, so a custom policy can handle some capabilities and hand back
 * the rest: `read` → allow; an approved re-run (`confirmed`) → allow;
 * `destructive` → confirm; `write` and `external` → deny (no reason in
 * each case, as the default policy).
 *
 * Ownership: `request` is borrowed for the call (free it separately).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_COMPLETED`,
 * `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread; as `rcip_policy_request_decide`.
 * Rule: PIPELINE.md section 4, "The default policy".
 */
rcip_result rcip_policy_request_decide_default(const struct rcip_policy_request *request);

/**
 * Decides (`RcipPolicyDecision`).
 *
 * Shape: `decision_json` is `{"decision": "allow" | "deny" | "confirm",
 * "reason"?: string}`. A deny reason becomes the `POLICY_DENIED` message; a
 * confirm reason becomes the confirmation's description.
 * Ownership: `decision_json` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_INVALID_JSON` (not
 * JSON, or not UTF-8) and `RCIP_RESULT_INVALID_ARGUMENT` (wrong shape: not an object, an
 * unknown key, a reason that is not a string, no decision) leave the
 * request undecided; a `decision` that is none of the three settles the
 * request as a policy failure (`POLICY_EVALUATION_FAILED`) and also returns
 * `RCIP_RESULT_INVALID_ARGUMENT` (`rcip_policy_request_is_settled` tells
 * the two apart); `RCIP_RESULT_ALREADY_COMPLETED` on a second
 * settle; `RCIP_RESULT_WRONG_CONTEXT`. Deciding after the runtime stopped
 * waiting (token cancelled, runtime freed) returns OK and changes nothing.
 * Thread safety: any thread; what the decision makes runnable (handler,
 * outcome, report) runs on this thread before the call returns. Two
 * exceptions: called on the policy callback's own thread while that
 * callback runs, it runs there after the callback returns; and a
 * preflight's rechecks wait until its thread has asked about every
 * proposal (PIPELINE.md section 6), then run on that thread.
 * Rule: PIPELINE.md section 4 steps 11–16, section 8.
 */
rcip_result rcip_policy_request_decide(const struct rcip_policy_request *request, const char *decision_json);

/**
 * Settles the request as a policy failure (`POLICY_EVALUATION_FAILED`).
 *
 * Ownership: `request` is borrowed for the call (free it separately).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_COMPLETED`,
 * `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread; as `rcip_policy_request_decide`.
 * Rule: PIPELINE.md section 4 step 11.
 */
rcip_result rcip_policy_request_fail(const struct rcip_policy_request *request);

/**
 * True once the request was settled (decided, failed, or settled as a
 * failure by a decision that is none of the three); false for NULL.
 *
 * Ownership: `request` is borrowed for the call.
 * Thread safety: any thread.
 */
bool rcip_policy_request_is_settled(const struct rcip_policy_request *request);

/**
 * Frees the handle; an undecided request is settled as a policy failure
 * first.
 *
 * Ownership: consumes `request`; strings borrowed from it become invalid.
 * NULL does nothing; freeing twice is undefined.
 * Thread safety: any thread, once no other thread uses the handle.
 */
void rcip_policy_request_free(struct rcip_policy_request *request);

/**
 * Reads a record from the JSON text rcip handed over.
 *
 * Shape: `record_json` is a JSON object: an outcome record, a preflight
 * report, a lifecycle event or a confirmation notice (shapes at
 * `rcip_client_invoke`, `rcip_client_preflight`, `rcip_event_callback`,
 * `rcip_confirmation_callback`). Any other object reads as a record whose
 * fields are absent.
 * Ownership: `record_json` is borrowed for the call (copied);
 * `*record_out` is new (free it with `rcip_record_free`), NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`; `RCIP_RESULT_INVALID_JSON` (not
 * JSON, not UTF-8, or nesting deeper than 100,000 levels of arrays and
 * objects; text rcip handed over nests at most as deep as the runtime's
 * `max_depth`, 1000 by default); `RCIP_RESULT_INVALID_ARGUMENT` (JSON
 * that is not an object).
 * Stack: any depth up to 100,000 levels reads, and `rcip_record_free`
 * frees, on a host thread with a small stack (64 KiB is tested, with
 * nested arrays, objects and preflight entries): the parser continues on
 * stack segments it allocates as it deepens, and the entries, the output
 * text and the freeing walk the record without recursion.
 * Thread safety: any thread, also inside callbacks (the usual place: read
 * the text a callback lends, then keep the record past the callback).
 * Rule: **rcip**; the fields are those of conformance/FORMAT.md's outcome
 * record and PIPELINE.md sections 4 to 6.
 */
rcip_result rcip_record_parse(const char *record_json, struct rcip_record **record_out);

/**
 * The status: an outcome's `"succeeded"`, `"failed"`, `"denied"` or
 * `"confirmation_required"`; a preflight entry's `"ready"`,
 * `"confirmation_required"` or `"blocked"`.
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md sections 4 and 6 (outcome and entry statuses).
 */
const char *rcip_record_status(const struct rcip_record *record);

/**
 * The invocation id (`invocationId`) of an outcome, event or notice.
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 1.
 */
const char *rcip_record_invocation_id(const struct rcip_record *record);

/**
 * The capability id (`capabilityId`) of an outcome, preflight entry,
 * event or notice.
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4.
 */
const char *rcip_record_capability_id(const struct rcip_record *record);

/**
 * The RCIP error code: `error.code` of a failed or denied outcome or a
 * blocked preflight entry, `errorCode` of a `failed` / `denied` /
 * `confirmation_declined` event.
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 8 (error codes); section 4 (events).
 */
const char *rcip_record_error_code(const struct rcip_record *record);

/**
 * The error message (`error.message`) of a failed or denied outcome or
 * a blocked entry: the policy's reason for a `POLICY_DENIED` when it gave
 * one, the host's reason for `CAPABILITY_UNAVAILABLE`, else rcip's text.
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 steps 8 and 13.
 */
const char *rcip_record_error_message(const struct rcip_record *record);

/**
 * The confirmation id: `confirmation.id` of a `confirmation_required`
 * outcome or an `opened` notice, `confirmationId` of a `closed` notice.
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 5.
 */
const char *rcip_record_confirmation_id(const struct rcip_record *record);

/**
 * The output of a `succeeded` outcome, as compact JSON text.
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 19.
 */
const char *rcip_record_output(const struct rcip_record *record);

/**
 * The phase of a lifecycle event: `"requested"`, `"started"`,
 * `"succeeded"`, `"failed"`, `"denied"`, `"confirmation_requested"` or
 * `"confirmation_declined"`.
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md sections 4 and 5 (events).
 */
const char *rcip_record_phase(const struct rcip_record *record);

/**
 * The kind of a confirmation notice: `"opened"` or `"closed"` (its
 * `event` member).
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 5 (**rcip** notices).
 */
const char *rcip_record_notice_kind(const struct rcip_record *record);

/**
 * The reason: a `closed` notice's `"approved"`, `"declined"`,
 * `"expired"`, `"cancelled"`, `"invalidated"` or `"closed"`; a
 * `confirmation_required` preflight entry's reason (the policy's, else the
 * capability description).
 *
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record`, or a record without the field, gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md sections 5 and 6.
 */
const char *rcip_record_reason(const struct rcip_record *record);

/**
 * The number of validation issues (`error.validationIssues`) of an
 * `INPUT_INVALID` / `OUTPUT_INVALID` outcome or blocked entry; 0 when it
 * has none, and for NULL.
 *
 * Units: a count of issues.
 * Ownership: `record` is borrowed for the call.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 steps 9 and 18.
 */
size_t rcip_record_issue_count(const struct rcip_record *record);

/**
 * The `instancePath` of validation issue `index`: the JSON pointer into the input or output (`""`: the root).
 *
 * Units: `index` counts from 0.
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record` or an `index` at or past
 * `rcip_record_issue_count` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 9 (Ajv's issues: instancePath,
 * keyword, message).
 */
const char *rcip_record_issue_path(const struct rcip_record *record, size_t index);

/**
 * The `keyword` of validation issue `index`: the schema keyword that failed (`"type"`, `"required"`, ...).
 *
 * Units: `index` counts from 0.
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record` or an `index` at or past
 * `rcip_record_issue_count` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 9 (Ajv's issues: instancePath,
 * keyword, message).
 */
const char *rcip_record_issue_keyword(const struct rcip_record *record, size_t index);

/**
 * The `message` of validation issue `index`: the issue's message.
 *
 * Units: `index` counts from 0.
 * Ownership: owned by `record`; valid until `rcip_record_free`.
 * Errors: NULL `record` or an `index` at or past
 * `rcip_record_issue_count` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 4 step 9 (Ajv's issues: instancePath,
 * keyword, message).
 */
const char *rcip_record_issue_message(const struct rcip_record *record, size_t index);

/**
 * The confirmation's `expiresAt` (of a `confirmation_required` outcome or
 * an `opened` notice): true and `*expires_at_ms_out` set when the record
 * has it; false (nothing written) when it has not, or when `record` or
 * `expires_at_ms_out` is NULL.
 *
 * Units: epoch milliseconds.
 * Ownership: `record` is borrowed for the call; `expires_at_ms_out` is
 * written on success only.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 5 (`expiresAt` = opening time + TTL).
 */
bool rcip_record_expires_at(const struct rcip_record *record, int64_t *expires_at_ms_out);

/**
 * The number of entries (`outcomes`) of a preflight report; 0 for any
 * other record, and for NULL.
 *
 * Units: a count of entries (one per proposal, in proposal order).
 * Ownership: `record` is borrowed for the call.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 6.
 */
size_t rcip_record_entry_count(const struct rcip_record *record);

/**
 * Entry `index` of a preflight report, as a record of its own (status,
 * capability id, error code and message, issues, reason).
 *
 * Units: `index` counts from 0.
 * Ownership: borrowed from `record`: valid until `rcip_record_free` of
 * `record`; never free it.
 * Errors: NULL `record` or an `index` at or past
 * `rcip_record_entry_count` gives NULL.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 6.
 */
const struct rcip_record *rcip_record_entry(const struct rcip_record *record, size_t index);

/**
 * Frees a record made by `rcip_record_parse`; strings and entries
 * borrowed from it become invalid.
 *
 * Ownership: consumes `record` (never an entry). NULL does nothing;
 * freeing twice is undefined. Entries nested in entries are freed one by
 * one, without recursion (any depth `rcip_record_parse` reads frees on a
 * 64 KiB stack).
 * Thread safety: any thread, once no other thread uses the record.
 */
void rcip_record_free(struct rcip_record *record);

/**
 * Reports progress on a pending invocation (**rcip**).
 *
 * Units: the handler's own (items, bytes, percent); `progress` must be
 * finite and greater than the invocation's previous report, `total` (read
 * only when `has_total`) finite. `message` is optional (NULL: none).
 * Sent to the MCP client as `notifications/progress` when its `tools/call`
 * carried `_meta.progressToken` (before the response: a report that
 * returned OK is queued first), and to the progress observer. An approved
 * re-run has no request, so its reports reach only the observer. Changes
 * no outcome; no lifecycle event.
 * Ownership: `invocation` and `message` are borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation);
 * `RCIP_RESULT_INVALID_UTF8` (message); `RCIP_RESULT_INVALID_ARGUMENT`
 * (not finite, not increasing: nothing is sent);
 * `RCIP_RESULT_ALREADY_COMPLETED` (settled, or the call was answered);
 * `RCIP_RESULT_CLOSED`; `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread while the invocation is pending; concurrent
 * reports are taken one at a time.
 * Rule: **rcip** (the seed prescribes no progress); MCP 2025-11-25,
 * basic/utilities/progress.
 */
rcip_result rcip_invocation_report_progress(const struct rcip_invocation *invocation, double progress, bool has_total, double total, const char *message);

/**
 * Sends a log message to the MCP client whose call the invocation serves
 * (**rcip**): `notifications/message` with `level`, `logger` and `data`,
 * when `level` is at least the session's level (`info` until the client's
 * `logging/setLevel`). Without an MCP call (an approved re-run, an
 * in-process consumer) it goes nowhere.
 *
 * Shape: `level` is `"debug"`, `"info"`, `"notice"`, `"warning"`,
 * `"error"`, `"critical"`, `"alert"` or `"emergency"`; `logger` is
 * optional (NULL: none); `data_json` is any JSON value as text (a string
 * `"\"text\""`, an object).
 * Ownership: the arguments are borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation, level, data_json);
 * `RCIP_RESULT_INVALID_UTF8`; `RCIP_RESULT_INVALID_JSON` (data_json);
 * `RCIP_RESULT_INVALID_ARGUMENT` (an unknown level);
 * `RCIP_RESULT_ALREADY_COMPLETED`; `RCIP_RESULT_CLOSED`;
 * `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread while the invocation is pending.
 * Rule: **rcip**; MCP 2025-11-25, server/utilities/logging.
 */
rcip_result rcip_invocation_log(const struct rcip_invocation *invocation, const char *level, const char *logger, const char *data_json);

/**
 * Asks the MCP client's user for structured input (**rcip**): sends
 * `elicitation/create` (form mode) with `message` and the requested schema
 * to the client whose call the invocation serves; the answer reaches
 * `on_answer` once, later, on a session worker. Never blocks: return from
 * the handler without settling (deferred) and settle in `on_answer`, or
 * wait on another thread. Cancelling the call (or the session ending)
 * withdraws the question and answers `cancel`.
 *
 * Shape: `requested_schema_json` follows MCP's elicitation schema rules
 * (checked before anything is sent; RCIP's strict mode does not apply):
 * `{"type": "object", "properties": {name: primitive}, "required"?: [...]}`
 * with string (`minLength`, `maxLength`, `format`: email, uri, date,
 * date-time), number / integer (`minimum`, `maximum`), boolean, enum
 * (`enum`, `oneOf` of `{const, title}`, legacy `enumNames`) and
 * multi-select (`type: "array"`, `items` with `enum` or `anyOf`)
 * properties, each with an optional `default`; no nesting, no other
 * keyword. The answer's shape is at `rcip_elicit_callback`.
 * Ownership: `message` and `requested_schema_json` are borrowed (copied).
 * `user_data` is kept until the answer was delivered, then
 * `user_data_free` runs once; when this call fails, neither callback runs
 * and the host keeps its data.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation, message, schema,
 * on_answer); `RCIP_RESULT_INVALID_UTF8`; `RCIP_RESULT_INVALID_JSON`;
 * `RCIP_RESULT_INVALID_ARGUMENT` (the schema breaks the rules; the message
 * names the place); `RCIP_RESULT_UNSUPPORTED` (no MCP call to ask
 * through: an approved re-run or an in-process consumer; or a client that
 * did not declare form elicitation); `RCIP_RESULT_ALREADY_COMPLETED`
 * (settled, or the call was answered or cancelled); `RCIP_RESULT_CLOSED`;
 * `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread while the invocation is pending; several
 * questions may be open at once.
 * Callbacks: see `rcip_elicit_callback`.
 * Rule: **rcip**; MCP 2025-11-25, client/elicitation (form mode).
 */
rcip_result rcip_invocation_elicit(const struct rcip_invocation *invocation, const char *message, const char *requested_schema_json, rcip_elicit_callback on_answer, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Asks the MCP client whose call the invocation serves to sample its
 * language model (**rcip**): sends `sampling/createMessage` with
 * `params_json`; the reply reaches `on_reply` once, later, on a session
 * worker. Never blocks (as `rcip_invocation_elicit`). Cancelling the call
 * (or the session ending) withdraws the request and replies
 * `{"cancelled": true}`.
 *
 * Shape: `params_json` is MCP's `CreateMessageRequestParams`: `messages`
 * (a non-empty array of `{"role": "user" | "assistant", "content"}`, the
 * content a block or an array of blocks) and `maxTokens` (a positive
 * integer) are checked; `systemPrompt`, `modelPreferences`, `temperature`,
 * `stopSequences`, `metadata` ... go to the client as they are. The
 * reply's shape is at `rcip_sampling_callback`.
 * Ownership: `params_json` is borrowed (copied). `user_data` is kept until
 * the reply was delivered, then `user_data_free` runs once; when this call
 * fails, neither callback runs and the host keeps its data.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation, params_json, on_reply);
 * `RCIP_RESULT_INVALID_JSON`; `RCIP_RESULT_INVALID_ARGUMENT` (the params
 * lack what is checked; the message names it); `RCIP_RESULT_UNSUPPORTED`
 * (no MCP call, or a client that did not declare `sampling`);
 * `RCIP_RESULT_ALREADY_COMPLETED`; `RCIP_RESULT_CLOSED`;
 * `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread while the invocation is pending.
 * Callbacks: see `rcip_sampling_callback`.
 * Rule: **rcip**; MCP 2025-11-25, client/sampling.
 */
rcip_result rcip_invocation_create_message(const struct rcip_invocation *invocation, const char *params_json, rcip_sampling_callback on_reply, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Sends the MCP client whose call the invocation serves the request
 * `method` on the handler's behalf (**rcip**, docs/MCP.md "Questions
 * without sessions"): the general form of `rcip_invocation_elicit` and
 * `rcip_invocation_create_message`, with a key for the question. The
 * reply reaches `on_reply` once, later, on a session worker; never blocks.
 * In a session the request is sent to the client; on an MCP 2026-07-28
 * request the question is answered from the retry's `inputResponses[key]`
 * when it has a well-formed answer, and otherwise collected into the
 * call's `InputRequiredResult` (the reply is then `{"cancelled": true}`,
 * the handler's outcome is set aside, and the handler runs again when the
 * client re-sends the call with the answer: ask before doing anything
 * irreversible).
 *
 * Shape: `key` is the question's name (1 to 128 characters, not starting
 * with `rcip/`, unique within the invocation), or NULL: rcip numbers the
 * question (`rcip/ask/1`, `rcip/ask/2`, ... in the order asked).
 * `method` is `elicitation/create` (`params_json` `{"message",
 * "requestedSchema"}`, the schema checked as for `rcip_invocation_elicit`),
 * `sampling/createMessage` (checked as for
 * `rcip_invocation_create_message`) or `roots/list` (`params_json` an
 * object, usually `{}`). The reply's shape is at `rcip_ask_callback`.
 * Ownership: `key`, `method` and `params_json` are borrowed (copied).
 * `user_data` is kept until the reply was delivered, then
 * `user_data_free` runs once; when this call fails, neither callback runs
 * and the host keeps its data.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (invocation, method, params_json,
 * on_reply); `RCIP_RESULT_INVALID_UTF8` (key, method);
 * `RCIP_RESULT_INVALID_JSON`; `RCIP_RESULT_INVALID_ARGUMENT` (a bad key,
 * a key asked twice, another method, params that fail the checks, more
 * than 64 questions in one call); `RCIP_RESULT_UNSUPPORTED` (no MCP call,
 * or a client or request that did not declare the capability: see
 * `rcip_invocation_can_ask`); `RCIP_RESULT_ALREADY_COMPLETED`;
 * `RCIP_RESULT_CLOSED`; `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread while the invocation is pending; several
 * questions may be open at once.
 * Callbacks: see `rcip_ask_callback`.
 * Rule: **rcip**; MCP 2025-11-25 client/elicitation, client/sampling,
 * client/roots; MCP 2026-07-28 "Multi Round-Trip Requests".
 */
rcip_result rcip_invocation_ask(const struct rcip_invocation *invocation, const char *key, const char *method, const char *params_json, rcip_ask_callback on_reply, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * True when `rcip_invocation_ask` with `method` would reach the client
 * (**rcip**): the invocation serves an MCP call whose client (a session's
 * `initialize`, or a 2026-07-28 request's own `_meta`) declared what
 * `method` needs (form elicitation, `sampling`, `roots`) and is still
 * pending. False for NULL, invalid UTF-8, an unknown method, no MCP call
 * (an approved re-run, an in-process consumer), or a settled invocation.
 * A handler with a fallback asks only when this is true: a 2026-07-28
 * request that did not declare a capability the handler asks for is
 * answered `-32021` whatever the handler does next.
 *
 * Ownership: both arguments are borrowed for the call.
 * Thread safety: any thread.
 * Rule: **rcip**; MCP 2026-07-28 "Per-request protocol fields".
 */
bool rcip_invocation_can_ask(const struct rcip_invocation *invocation, const char *method);

/**
 * Installs the progress observer (**rcip**): every progress report of the
 * runtime's handlers, also of approved re-runs (which reach no MCP client).
 *
 * Ownership: `user_data` is kept until the runtime is freed (or the
 * builder is freed unbuilt, or the observer is replaced: the earlier user
 * data is released at once); then `user_data_free` runs once.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
 * Thread safety: one thread at a time per builder.
 * Callbacks: see `rcip_progress_callback`.
 * Rule: **rcip** (progress is never a lifecycle event).
 */
rcip_result rcip_runtime_builder_set_progress_observer(struct rcip_runtime_builder *builder, rcip_progress_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Static text describing a result code.
 *
 * Shape: one English sentence, never NULL; an unknown value gives
 * "unknown rcip_result value".
 * Ownership: the returned string is static; do not free it.
 * Thread safety: any thread.
 */
const char *rcip_result_str(uint32_t code);

/**
 * The message of the latest failing rcip call on this thread.
 *
 * Shape: one sentence naming the argument, JSON pointer or rule that
 * failed (never payload values or secrets); NULL when the rcip function
 * returning `rcip_result` that returned last on this thread returned
 * `RCIP_RESULT_OK`, also when callbacks it ran made calls that failed.
 * Ownership: owned by the library; valid until an rcip function that
 * returns `rcip_result` next starts or returns on this thread (each clears
 * or sets it; functions returning a value or nothing, `_free` included,
 * leave it as it was). Copy it if you need it longer; do not free it.
 * Thread safety: per OS thread (thread-local storage). A binding whose
 * language moves its tasks between OS threads (Go goroutines, async
 * runtimes) must read it on the thread of the failing call, before that
 * thread makes another call (Go: `runtime.LockOSThread` around both). A
 * failing call made inside a callback sets it until the call that ran the
 * callback returns, so read it right after the failing call.
 */
const char *rcip_last_error_message(void);

/**
 * Starts configuring a runtime over `catalog`.
 *
 * Ownership: `catalog` is borrowed (the builder and the runtime keep their
 * own reference); `*builder_out` is new: build it with
 * `rcip_runtime_builder_build` or free it with `rcip_runtime_builder_free`.
 * On failure `*builder_out` is NULL.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: any thread.
 */
rcip_result rcip_runtime_builder_new(const struct rcip_catalog *catalog, struct rcip_runtime_builder **builder_out);

/**
 * Sets how long a confirmation stays pending: `expiresAt` = the clock when
 * it opens + `ttl_ms`.
 *
 * Units: milliseconds; default 120000 (two minutes).
 * Ownership: `builder` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_ARGUMENT` (0,
 * or above 2^62 = 4611686018427387904; 2^62 itself is accepted); the
 * setting is unchanged then. `expiresAt` saturates at the largest int64.
 * Thread safety: one thread at a time per builder.
 * Rule: seed, "Default expiry is two minutes"; PIPELINE.md section 5.
 */
rcip_result rcip_runtime_builder_set_confirmation_ttl_ms(struct rcip_runtime_builder *builder, uint64_t ttl_ms);

/**
 * Sets the payload limits for capability input and handler output text.
 *
 * Units: `max_payload_len` in bytes (default 8388608, 8 MiB);
 * `max_depth` in nesting levels of arrays and objects (default 1000);
 * 0 keeps a value as it is. Deeper or larger text is not a JSON value
 * (`INPUT_INVALID` / `OUTPUT_INVALID`), found before parsing.
 * Ownership: `builder` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 8 (limits).
 */
rcip_result rcip_runtime_builder_set_limits(struct rcip_runtime_builder *builder, size_t max_payload_len, size_t max_depth);

/**
 * Sets the work budget of each schema validation (capability input and
 * handler output).
 *
 * Units: work units (one per schema node or keyword evaluated, one per
 * regular-expression search plus one per 64 bytes searched, or one per
 * instruction on the backtracking engine). A validation pass may spend
 * `max(floor, per_pair * schema size * (instance values + 1))`, where the
 * schema size counts compiled subschemas and keywords. Defaults: `floor`
 * 1000000, `per_pair` 64; 0 keeps a value as it is. A validation that
 * exhausts its budget fails with `INPUT_INVALID` / `OUTPUT_INVALID` and one
 * issue `{"instancePath": "", "keyword": "budget", ...}`.
 * Ownership: `builder` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 8 (limits; **rcip**).
 */
rcip_result rcip_runtime_builder_set_validation_budget(struct rcip_runtime_builder *builder, uint64_t floor, uint64_t per_pair);

/**
 * Sets the bound on the validation issues an outcome carries (input
 * validation, step 9, preflight too; and handler output).
 *
 * Units: `max_issues` issues and `max_bytes` bytes of issue text (the
 * UTF-8 bytes of each issue's `instancePath`, `keyword` and `message`,
 * before JSON escaping). Defaults: 1000 issues, 1048576 bytes; 0 keeps a
 * value as it is. The first issue is always kept. The issues kept are the
 * first ones of the full list; an outcome that left some out carries
 * `"validationIssuesTruncated": true` in its `error` (**rcip**) and is
 * otherwise unchanged (`failed`, `INPUT_INVALID` / `OUTPUT_INVALID`).
 * Ownership: `builder` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 8 (issue bound; **rcip**).
 */
rcip_result rcip_runtime_builder_set_validation_issue_limit(struct rcip_runtime_builder *builder, size_t max_issues, size_t max_bytes);

/**
 * Installs the host policy (replacing an earlier one, whose user data is
 * released). Without one, the default policy applies: read → allow;
 * confirmed → allow; destructive → confirm; write, external → deny.
 *
 * Ownership: `user_data` is kept until the runtime is freed (or the
 * builder is freed unbuilt, or the policy is replaced) and every
 * `rcip_policy_request` handed to the policy was freed (a worker may
 * decide after the runtime was freed and still use `user_data`); then
 * `user_data_free(user_data)` runs once, on the thread that released the
 * last of them.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback). On failure
 * neither function is ever called.
 * Callbacks: see `rcip_policy_callback`.
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 4 step 11.
 */
rcip_result rcip_runtime_builder_set_policy(struct rcip_runtime_builder *builder, rcip_policy_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Installs the host's confirmation callback (replacing an earlier one),
 * told when a confirmation opens (with the captured input, for the
 * dialog) and when it ends.
 *
 * Ownership: `user_data` is kept until the runtime is freed (or the
 * builder is freed unbuilt, or the callback is replaced: the earlier user
 * data is released at once); then `user_data_free` runs once.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
 * Callbacks: see `rcip_confirmation_callback`.
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 5 (rcip: opened and closed notices).
 */
rcip_result rcip_runtime_builder_set_confirmation_callback(struct rcip_runtime_builder *builder, rcip_confirmation_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Adds a lifecycle event observer; observers are called in the order they
 * were added, each with its own user data.
 *
 * Ownership: `user_data` is kept until the runtime is freed (or the
 * builder is freed unbuilt); then `user_data_free` runs once.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
 * Callbacks: see `rcip_event_callback`.
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 4 (events: requested, started, succeeded,
 * failed, denied, confirmation_requested, confirmation_declined).
 */
rcip_result rcip_runtime_builder_add_event_observer(struct rcip_runtime_builder *builder, rcip_event_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Installs the clock (default: the system clock).
 *
 * Units: the callback returns epoch milliseconds.
 * Ownership: `user_data` is kept until the runtime is freed (or the
 * builder is freed unbuilt, or the clock is replaced: the earlier user data
 * is released at once); then `user_data_free` runs once.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
 * Callbacks: see `rcip_clock_callback` (no runtime calls from it).
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 7 (determinism: the clock and id generator
 * are the host's).
 */
rcip_result rcip_runtime_builder_set_clock(struct rcip_runtime_builder *builder, rcip_clock_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Installs the id generator for invocation and confirmation ids (default:
 * built in, `"<prefix>_<runtime salt>_<counter>"`).
 *
 * Ownership: `user_data` is kept until the runtime is freed (or the
 * builder is freed unbuilt, or the generator is replaced: the earlier user
 * data is released at once); then `user_data_free` runs once.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, callback).
 * Callbacks: see `rcip_id_generator_callback` (no runtime calls from it).
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 7.
 */
rcip_result rcip_runtime_builder_set_id_generator(struct rcip_runtime_builder *builder, rcip_id_generator_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Chooses manual timers: no library thread; confirmations expire only when
 * the host calls `rcip_runtime_run_due_timers` (ask
 * `rcip_runtime_next_deadline` when). Default: false (a library timer
 * expires them at `expiresAt`).
 *
 * Ownership: `builder` is borrowed for the call.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 7.
 */
rcip_result rcip_runtime_builder_set_manual_timers(struct rcip_runtime_builder *builder, bool manual);

/**
 * Binds a handler (and an optional availability check) to a capability of
 * the catalog on the runtime to be built (**rcip**): the runtime starts
 * with it bound, already in the snapshot of revision 0. These are
 * server-owned bindings (the seed's "runtime per server request"), for a
 * runtime made per request with every handler bound; binding all 100
 * capabilities of a catalog this way costs a small part of what 100
 * `rcip_host_bind` calls do (no binding handle, no refresh per binding).
 *
 * They have no `rcip_binding` handle: they stay installed until the
 * runtime is closed or freed, and cannot be unbound individually or given
 * a binding revision (use `rcip_host_bind` on the built runtime for a
 * binding that comes and goes). In everything else a builder binding is
 * the binding `rcip_host_bind` right after `rcip_runtime_builder_build`
 * would make: the same invocation outcomes, lifecycle events,
 * availability (in snapshots, at invocation and in the rechecks),
 * confirmations and preflights. Only the revision history differs: binding
 * k capabilities after the build gives revisions 1 to k (one refresh per
 * bind), while here the first snapshot, revision 0, already has them, and
 * the next refresh is revision 1.
 *
 * Ownership: `builder` is borrowed for the call; `capability_id` is copied
 * (looked up now); `user_data` is shared by both callbacks and kept until
 * the runtime is freed (or closed) and every `rcip_invocation` handed to
 * `handler` was freed, or until the builder is freed unbuilt
 * (`rcip_runtime_builder_free`); then `user_data_free(user_data)` runs
 * once, on the thread that released the last of them. The handlers bound
 * on one builder without an availability callback share one record (what
 * keeps this call from allocating): their user data is released together,
 * in catalog order, once the runtime is freed and every invocation handed
 * to any of them was freed.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder, capability_id, handler),
 * `RCIP_RESULT_INVALID_UTF8`, `RCIP_RESULT_NOT_IN_CATALOG` (an id the
 * catalog does not declare, as `rcip_host_bind`),
 * `RCIP_RESULT_ALREADY_BOUND` (the capability was bound on this builder
 * before: the duplicate is reported by this call, not by the build, which
 * never fails because of bindings). On failure the builder is unchanged
 * and neither callback nor `user_data_free` is ever called.
 * Callbacks: `handler` per `rcip_handler_callback`; `availability` (NULL:
 * always available) per `rcip_availability_callback`. The build asks each
 * availability callback once, on the building thread, for revision 0's
 * snapshot (the runtime does not exist yet: the callback cannot reach
 * it); afterwards they are called as for any binding.
 * Thread safety: one thread at a time per builder.
 * Rule: seed, "Duplicate live bindings for one ID throw" and "runtime per
 * server request"; PIPELINE.md section 3 (**rcip**, builder bindings).
 */
rcip_result rcip_runtime_builder_bind(struct rcip_runtime_builder *builder, const char *capability_id, rcip_handler_callback handler, rcip_availability_callback availability, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Builds the runtime: revision 0, context `{"activeScopeIds": []}`,
 * everything unbound except the capabilities bound on the builder
 * (`rcip_runtime_builder_bind`, **rcip**), whose availability callbacks
 * are asked now, on this thread.
 *
 * Ownership: consumes and frees `builder` on success and failure alike (do
 * not use or free it afterwards); `*runtime_out` is new (free it with
 * `rcip_runtime_free`). On failure `*runtime_out` is NULL.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (builder or runtime_out; a non-NULL
 * builder is freed even then).
 * Thread safety: one thread at a time per builder.
 * Rule: PIPELINE.md section 2 (the revision starts at 0 with the initial
 * snapshot) and section 3 (the context starts empty; builder bindings).
 */
rcip_result rcip_runtime_builder_build(struct rcip_runtime_builder *builder, struct rcip_runtime **runtime_out);

/**
 * Frees a builder that was not built. Callbacks registered on it (builder
 * bindings included) have their user data released now.
 *
 * Ownership: consumes `builder`. NULL does nothing; freeing twice is
 * undefined.
 * Thread safety: one thread at a time per builder.
 */
void rcip_runtime_builder_free(struct rcip_runtime_builder *builder);

/**
 * The consumer view of `runtime`; NULL for NULL.
 *
 * Ownership: borrowed from `runtime`; valid until `rcip_runtime_free`.
 * Thread safety: any thread.
 */
const struct rcip_client *rcip_runtime_client(const struct rcip_runtime *runtime);

/**
 * The host view of `runtime`; NULL for NULL.
 *
 * Ownership: borrowed from `runtime`; valid until `rcip_runtime_free`.
 * Thread safety: any thread.
 */
const struct rcip_host *rcip_runtime_host(const struct rcip_runtime *runtime);

/**
 * The earliest `expiresAt` among pending confirmations, for hosts driving
 * manual timers from their event loop.
 *
 * Units: `*deadline_ms_out` in epoch milliseconds of the runtime's clock.
 * Ownership: out-parameters written on success: `*has_deadline_out` false
 * (and `*deadline_ms_out` 0) when nothing is pending.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread.
 * Rule: PIPELINE.md section 7.
 */
rcip_result rcip_runtime_next_deadline(const struct rcip_runtime *runtime, bool *has_deadline_out, int64_t *deadline_ms_out);

/**
 * Expires every confirmation whose `expiresAt` is at or before the clock's
 * now, in `expiresAt` order (ties in creation order): each gets a receipt
 * `failed CONFIRMATION_EXPIRED`, a `failed` event stamped `expiresAt`, and
 * the confirmation callback's `closed` notice, on this thread. Each
 * confirmation expires just before its own callbacks: when one of them
 * frees the runtime, the confirmations not yet expired end with the free
 * (their `closed` notices, reason `closed`, during it) and this call
 * returns OK. The library's timer thread expires the same way.
 *
 * Ownership: `runtime` is borrowed for the call; it may be freed from a
 * callback this call runs.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread; also valid without manual timers.
 * Rule: PIPELINE.md section 5 (expiry), section 7.
 */
rcip_result rcip_runtime_run_due_timers(const struct rcip_runtime *runtime);

/**
 * Counters for diagnostics and tests.
 *
 * Shape: `{"revision", "bindings", "subscribers", "pendingInvocations",
 * "pendingConfirmations", "pendingPreflights", "receipts", "reservedIds",
 * "closed"}` (numbers, and a boolean: true after `rcip_runtime_close`).
 * Ownership: `*stats_out` is new (free it with `rcip_string_free`); NULL on
 * failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_WRONG_CONTEXT`.
 * Thread safety: any thread.
 * Rule: rcip's own (diagnostics; PIPELINE.md section 5 for the 256
 * receipts, section 4 step 3 for reserved ids).
 */
rcip_result rcip_runtime_stats(const struct rcip_runtime *runtime, char **stats_out);

/**
 * Closes a runtime without freeing it: everything `rcip_runtime_free`
 * does during its call (pending invocations end `failed
 * EXECUTION_ABORTED`, pending preflights get their reports, pending
 * confirmations end without receipts, bindings and subscriptions are
 * released, no callback of the runtime starts afterwards, expiries being
 * delivered on the timer thread finish first), but the handle, its client
 * and host views stay valid. Later calls through them answer
 * `RCIP_RESULT_CLOSED`, except the reads `rcip_client_snapshot`,
 * `rcip_client_list_capabilities` (the last snapshot) and
 * `rcip_runtime_stats`; `rcip_runtime_free` then releases the handle and the runtime's own user
 * data (policy, confirmation callback, event observer, clock, id
 * generator).
 *
 * For bindings whose objects are freed by a garbage collector or a
 * reference count: close at once, from any thread, even while other
 * threads are inside calls on the same runtime (they see the close), and
 * free when the last of those calls has returned.
 *
 * Ownership: `runtime` is borrowed; it is still the caller's to free with
 * `rcip_runtime_free` (which, after a close, only releases).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`. Closing a closed runtime returns OK
 * and changes nothing (it still waits for the timer thread's expiries).
 * Thread safety: any thread, concurrently with any call on the runtime
 * except `rcip_runtime_free`, also from inside the runtime's own callbacks
 * (not its clock or id generator). As with the free, do not call it while
 * holding a lock that the confirmation callback, the event observer or the
 * clock takes.
 * Rule: PIPELINE.md section 9 (teardown).
 */
rcip_result rcip_runtime_close(const struct rcip_runtime *runtime);

/**
 * Closes and frees a runtime (PIPELINE.md section 9). During this call:
 * every pending invocation gets `failed EXECUTION_ABORTED` (with its
 * `failed` event), every pending preflight its report (undecided entries
 * blocked `EXECUTION_ABORTED`), pending confirmations end without receipts
 * (the confirmation callback hears `closed`), bindings and subscriptions
 * are released. No callback of the runtime starts afterwards; user data is
 * released once running callbacks return. "Starts" means the runtime's
 * decision to call: a callback that another thread had already decided to
 * call when the free began (it had passed the runtime's closed check) may
 * still be entering on that thread after the free returns. It counts as
 * started before the free, like a callback that entered just before it,
 * and keeps its user data until it returns. Expiries the library's timer
 * thread is delivering for this runtime finish first (the call waits for
 * their callbacks to return), so do not call it while holding a lock that
 * the confirmation callback, the event observer or the clock takes.
 *
 * The runtime's own user data (policy, confirmation callback, event
 * observer, clock, id generator) is released before the call returns,
 * except while something else still uses the runtime's core: a call
 * running on another thread (released when it returns), the callback this
 * free is called from (when it returns), an MCP session (when it is
 * freed). The policy's user data also waits for every policy request
 * still held (released when the last one is freed), and a binding's for
 * every invocation handed to its handler (`rcip_host_bind`).
 *
 * After `rcip_runtime_close` the close has happened already: the free then
 * only releases the runtime's own user data and the handle.
 *
 * Ownership: consumes `runtime`; its client and host views become invalid.
 * Handles still held (completion handles, bindings, tokens, snapshots, the
 * catalog) stay valid until freed and answer `RCIP_RESULT_CLOSED` where
 * they would act on the runtime; a late completion returns OK and is
 * ignored. NULL does nothing; freeing twice is undefined.
 * Thread safety: any thread, also from inside the runtime's own callbacks
 * (not its clock or id generator).
 */
void rcip_runtime_free(struct rcip_runtime *runtime);

/**
 * Compiles a schema the way the catalog compiles capability schemas (Ajv 8
 * `Ajv2020` with `strict: true`: unknown keywords, `format`, references
 * leaving the document and the other strict rules are refused).
 *
 * Shape: `schema_json` is a JSON Schema (an object or a boolean).
 * Ownership: `schema_json` is borrowed; `*schema_out` is new (free it with
 * `rcip_schema_free`); NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_JSON` (not
 * JSON, or not UTF-8), `RCIP_RESULT_INVALID_ARGUMENT` (the schema does
 * not compile, `[]` for instance; the
 * message names the JSON pointer and the rule).
 * Thread safety: any thread.
 * Rule: seed, "JSON Schema support".
 */
rcip_result rcip_schema_new(const char *schema_json, struct rcip_schema **schema_out);

/**
 * Validates an instance.
 *
 * Shape: `instance_json` is JSON text (numbers read as doubles, as the
 * reference does); `*result_out` is `{"valid": bool, "issues":
 * [{"instancePath", "keyword", "message"}]}` (all issues, Ajv's
 * `allErrors` semantics).
 * Ownership: `instance_json` is borrowed; `*result_out` is new (free it
 * with `rcip_string_free`); NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_JSON` (not a
 * JSON value: not UTF-8, not JSON, or beyond the default limits of 8 MiB
 * and depth 1000).
 * Thread safety: any thread.
 * Rule: JSON Schema 2020-12 as Ajv 8 validates it in strict mode with
 * `allErrors` (the schema corpus of tests/schema_corpus.rs;
 * docs/SCHEMA-DISAGREEMENTS.md lists where it differs).
 */
rcip_result rcip_schema_validate(const struct rcip_schema *schema, const char *instance_json, char **result_out);

/**
 * Frees a schema.
 *
 * Ownership: consumes `schema`. NULL does nothing; freeing twice is
 * undefined.
 * Thread safety: any thread.
 */
void rcip_schema_free(struct rcip_schema *schema);

/**
 * The id of the session being created (32 hex digits, 128 random bits).
 *
 * Ownership: borrowed from `setup`, valid during the factory call.
 * Thread safety: the factory's thread.
 */
const char *rcip_mcp_session_setup_session_id(const struct rcip_mcp_session_setup *setup);

/**
 * The client's `initialize` params as JSON text.
 *
 * Shape: MCP `InitializeRequest.params`: `{"protocolVersion",
 * "capabilities", "clientInfo": {"name", "version", ...}, ...}`.
 * Ownership: borrowed from `setup`, valid during the factory call.
 * Thread safety: the factory's thread.
 */
const char *rcip_mcp_session_setup_initialize_params(const struct rcip_mcp_session_setup *setup);

/**
 * `clientInfo.name` of the client's `initialize`, or NULL when absent.
 *
 * Ownership: borrowed from `setup`, valid during the factory call.
 * Thread safety: the factory's thread.
 */
const char *rcip_mcp_session_setup_client_name(const struct rcip_mcp_session_setup *setup);

/**
 * Who the request acts for, as JSON text, when the server checks access
 * tokens (the `auth` server option, docs/MCP.md "Authorization"); NULL
 * without authorization.
 *
 * Shape: `{"issuer", "subject", "scopes": [string...], "claims": {the
 * claims the `auth.claims` option lists that the token had},
 * "expiresAt": seconds since the Unix epoch | null}`. The session stays
 * bound to this principal: requests of another one never reach it. Use it
 * to build the runtime a tenant may use (its policy, its bindings).
 * Ownership: borrowed from `setup`, valid during the factory call.
 * Thread safety: the factory's thread.
 */
const char *rcip_mcp_session_setup_principal(const struct rcip_mcp_session_setup *setup);

/**
 * The value of request header `name` (any case) of the `initialize`
 * request, or NULL when the request had none or the server's
 * `forwardHeaders` option does not name it.
 *
 * Ownership: `name` is borrowed for the call; the result is borrowed
 * from `setup`, valid during the factory call.
 * Thread safety: the factory's thread.
 */
const char *rcip_mcp_session_setup_header(const struct rcip_mcp_session_setup *setup, const char *name);

/**
 * Hands the new session its runtime.
 *
 * Ownership: consumes `runtime` (on success and on failure alike: on
 * failure it is closed and freed). Its views (`rcip_runtime_host`,
 * `rcip_runtime_client`) taken before stay valid while the session lives,
 * and after it ends for at least `RCIP_MCP_SESSION_RETIRE_MS` and until
 * no `rcip_mcp_server_session` handle holds it (its callbacks may use
 * them meanwhile; calls through them then answer `RCIP_RESULT_CLOSED`);
 * code that may use them later holds a handle
 * (`rcip_mcp_server_session_find`). The session closes it when the session
 * ends (DELETE, idle expiry, server shutdown), then calls
 * `user_data_free(user_data)` once (on a worker thread or the thread
 * shutting the server down), and frees it when no
 * `rcip_mcp_server_session` handle holds it any more. `user_data` (the
 * session's data) is what `rcip_mcp_server_session_user_data` returns.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (setup, runtime),
 * `RCIP_RESULT_ALREADY_USED` (a runtime was already accepted). On
 * failure `user_data_free` is never called. Build the runtime
 * from the server's catalog (the same `rcip_catalog`, so no session
 * compiles schemas again): a runtime over a catalog whose capabilities
 * do not fit the server's `toolNames` fails the `initialize` with
 * `-32603` when the factory returns.
 * Thread safety: the factory's thread, during the factory call.
 * Callbacks: `user_data_free` runs once, after the session ended and its
 * runtime was closed (no callback of that runtime starts afterwards), on
 * a library worker thread or the thread shutting the server down, with
 * no rcip lock held; it may call any rcip function but
 * `rcip_mcp_server_shutdown` and `rcip_mcp_server_free` of its server.
 */
rcip_result rcip_mcp_session_setup_accept(struct rcip_mcp_session_setup *setup, struct rcip_runtime *runtime, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * Creates a Streamable HTTP MCP server for `catalog` and binds `address`
 * (nothing is served until `rcip_mcp_server_start` or
 * `rcip_mcp_server_serve`).
 *
 * Shape: `address` is `IP:PORT` (`127.0.0.1:0` picks a free port; read it
 * with `rcip_mcp_server_url`). `options_json` is NULL (defaults) or one
 * object with the MCP session options of `rcip_mcp_session_new` plus the
 * server's (docs/MCP.md, "Server options"): `"endpoint"` (default
 * `"/mcp"`), `"allowedHosts"`, `"allowedOrigins"` (default on loopback:
 * the localhost names and origins, any port; elsewhere any Host and no
 * Origin), `"maxBodyBytes"` (default 4194304), `"maxSessions"` (1024),
 * `"idleTimeoutMs"` (600000), `"maxInFlight"` (64 per session),
 * `"replayEvents"` (256 per stream), `"workers"` (2), `"ioThreads"` (1),
 * `"maxConnections"` (1024), `"forwardHeaders"` (header names handed to
 * the factory), `"retryMs"` (1000), `"pollAfterMs"` (none),
 * `"headerTimeoutMs"` (10000), `"bodyTimeoutMs"` (30000),
 * `"maxSessionsPerPeer"`, `"maxConnectionsPerPeer"`,
 * `"maxInFlightPerPeer"` (256 each), `"initializeTimeoutMs"` (30000),
 * `"idleStreamTimeoutMs"` (1800000), `"resumptionBytes"` (1048576),
 * `"halfClose"` (false),
 * `"responseMode"`: `"sse-calls"` (default) | `"sse"` | `"json"`, and
 * `"toolNames"`: `"ids"` | `"safe"` | `{capability id: tool name}`.
 * Units: `*Ms` in milliseconds, `*Bytes` in bytes.
 * Ownership: `catalog` is borrowed (the server keeps its own reference);
 * `address` and `options_json` are borrowed for the call; `user_data` is
 * kept until the server is freed, then `user_data_free` runs once.
 * `*server_out` is new (free it with `rcip_mcp_server_free`); NULL on
 * failure, and then neither callback is ever called.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (catalog, address, factory,
 * server_out), `RCIP_RESULT_INVALID_UTF8` (address),
 * `RCIP_RESULT_INVALID_JSON` (options_json not JSON, or not UTF-8),
 * `RCIP_RESULT_INVALID_ARGUMENT` (an address that is not `IP:PORT`, an
 * option of the wrong shape or unknown, a tool naming with collisions or
 * names over 64 characters), `RCIP_RESULT_IO` (the address cannot be
 * bound, threads cannot start).
 * Thread safety: any thread.
 * Callbacks: `factory` per `rcip_mcp_session_factory_callback`.
 * Rule: MCP 2025-11-25, "Transports" (Streamable HTTP), "Security Best
 * Practices" (DNS rebinding); the seed's server rule (a separate runtime
 * per server request, never a server singleton).
 */
rcip_result rcip_mcp_server_new(const struct rcip_catalog *catalog, const char *address, const char *options_json, rcip_mcp_session_factory_callback factory, void *user_data, rcip_user_data_free_callback user_data_free, struct rcip_mcp_server **server_out);

/**
 * The server's URL, `http://IP:PORT/ENDPOINT` (the bound port when
 * created with port 0).
 *
 * Ownership: `*url_out` is new, freed with `rcip_string_free`; NULL on
 * failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: any thread.
 */
rcip_result rcip_mcp_server_url(const struct rcip_mcp_server *server, char **url_out);

/**
 * Starts serving in the background (the server's own threads) and
 * returns at once.
 *
 * Ownership: `server` is borrowed for the call; it must stay alive while
 * it serves (free it with `rcip_mcp_server_free`, which shuts it down).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_ALREADY_USED` (started
 * or shut down before), `RCIP_RESULT_IO` (threads cannot start).
 * Thread safety: any thread.
 */
rcip_result rcip_mcp_server_start(const struct rcip_mcp_server *server);

/**
 * Serves until `rcip_mcp_server_shutdown` (from another thread, a signal
 * handler's thread, or a callback) has finished; starts the server first
 * if needed.
 *
 * Ownership: `server` is borrowed until this returns; do not free it
 * meanwhile (shut it down instead).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_IO`.
 * Thread safety: blocks the calling thread; any other call may run
 * meanwhile on other threads.
 */
rcip_result rcip_mcp_server_serve(const struct rcip_mcp_server *server);

/**
 * Shuts the server down: no new connections or sessions; every session
 * ends (its runtime closed: pending invocations end `failed
 * EXECUTION_ABORTED`, pending confirmations hear `closed`; then its
 * session user data is released); open connections get until the
 * deadline to finish, then are dropped. Returns when that is done;
 * `rcip_mcp_server_serve` then returns too. Idempotent.
 *
 * Units: `deadline_ms` in milliseconds (a value beyond what the clock
 * holds waits without a deadline).
 * Ownership: `server` is borrowed for the call; it is still the caller's
 * to free.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: any thread except a callback of the server's sessions
 * or its factory (it waits for them).
 */
rcip_result rcip_mcp_server_shutdown(const struct rcip_mcp_server *server, uint64_t deadline_ms);

/**
 * Drains, then shuts down (**rcip**; for SIGTERM): readiness
 * (`/readyz`) fails at once, new sessions and stateless requests are
 * refused with `503` and `Retry-After`, and the requests already being
 * answered get until the deadline to finish (later requests of the live
 * sessions are still served meanwhile); then `rcip_mcp_server_shutdown`
 * with what is left of the deadline (at least 100 ms). Returns when the
 * server stopped; `rcip_mcp_server_serve` then returns too.
 *
 * Units: `deadline_ms` in milliseconds.
 * Ownership: `server` is borrowed for the call; it is still the caller's
 * to free.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: any thread except a callback of the server's sessions
 * or its factory (it waits for them).
 */
rcip_result rcip_mcp_server_drain(const struct rcip_mcp_server *server, uint64_t deadline_ms);

/**
 * Sets the server's access log (**rcip**): one record per answered HTTP
 * request, as JSON, to `callback` (see `rcip_mcp_access_callback` for the
 * shape and thread); NULL `callback` removes it. A log set before is
 * released: its thread delivers what was queued for it, then its
 * `user_data_free` runs once.
 *
 * Ownership: `user_data` is kept until the log is replaced or removed, or
 * the server shuts down; then `user_data_free(user_data)` runs once.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (server); `RCIP_RESULT_IO` (the
 * log's thread cannot start; `user_data` is released).
 * Callbacks: see `rcip_mcp_access_callback` (its own thread, one record
 * at a time).
 * Thread safety: any thread except the access callback itself.
 */
rcip_result rcip_mcp_server_set_access_log(const struct rcip_mcp_server *server, rcip_mcp_access_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * The access records dropped so far because the log's queue was full
 * (0 for NULL).
 *
 * Ownership: `server` is borrowed for the call.
 * Thread safety: any thread.
 */
uint64_t rcip_mcp_server_access_log_dropped(const struct rcip_mcp_server *server);

/**
 * Gives the server the host's check of opaque access tokens (**rcip**
 * over MCP 2026-07-28 "Authorization"), for a server whose `auth` option
 * says `"verifier": true`; until one is given every token is answered
 * `503`. A verifier given before is released (its `user_data_free` runs
 * once, after any check it is running) and the checks remembered so far
 * are dropped.
 *
 * Ownership: `user_data` is kept until the verifier is replaced or the
 * server is freed; then `user_data_free(user_data)` runs once. When this
 * call fails it never runs (the data stays the caller's).
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (server, callback);
 * `RCIP_RESULT_INVALID_ARGUMENT` (the server has no `auth` option, or
 * validates JWTs: its `auth` names keys instead of `"verifier": true`).
 * Callbacks: see `rcip_mcp_token_callback` (the control thread, one check
 * at a time).
 * Thread safety: any thread except the token callback itself.
 */
rcip_result rcip_mcp_server_set_token_verifier(const struct rcip_mcp_server *server, rcip_mcp_token_callback callback, void *user_data, rcip_user_data_free_callback user_data_free);

/**
 * The live sessions as JSON.
 *
 * Shape: `[{"sessionId", "clientInfo", "protocolVersion",
 * "droppedNotifications", "contentReplaced"}]`, ordered by session id
 * (`droppedNotifications`: progress and log notifications dropped for a
 * client that did not keep up; `contentReplaced`: content blocks replaced
 * by a text note because an output property the `content` option names
 * was not valid content, **rcip**).
 * Ownership: `*json_out` is new, freed with `rcip_string_free`; NULL on
 * failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`.
 * Thread safety: any thread.
 */
rcip_result rcip_mcp_server_sessions(const struct rcip_mcp_server *server, char **json_out);

/**
 * A handle on live session `session_id`'s runtime, so the host reaches
 * the right session's runtime (approvals, context).
 *
 * Ownership: `session_id` is borrowed for the call; `*session_out` is new
 * (free it with `rcip_mcp_server_session_free`); NULL on failure.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_UTF8`,
 * `RCIP_RESULT_NOT_FOUND` (no live session has that id).
 * Thread safety: any thread, also inside callbacks.
 */
rcip_result rcip_mcp_server_session_find(const struct rcip_mcp_server *server, const char *session_id, struct rcip_mcp_server_session **session_out);

/**
 * The host view of the session's runtime; NULL for NULL.
 *
 * Ownership: borrowed from `session`; valid until
 * `rcip_mcp_server_session_free`.
 * Thread safety: any thread.
 */
const struct rcip_host *rcip_mcp_server_session_host(const struct rcip_mcp_server_session *session);

/**
 * The consumer view of the session's runtime; NULL for NULL.
 *
 * Ownership: borrowed from `session`; valid until
 * `rcip_mcp_server_session_free`.
 * Thread safety: any thread.
 */
const struct rcip_client *rcip_mcp_server_session_client(const struct rcip_mcp_server_session *session);

/**
 * The session user data given to `rcip_mcp_session_setup_accept`; NULL
 * for NULL. After the session ended its release function has run: do
 * not use the data then.
 *
 * Ownership: the host's.
 * Thread safety: any thread.
 */
void *rcip_mcp_server_session_user_data(const struct rcip_mcp_server_session *session);

/**
 * Releases a session handle; the runtime's memory goes with the last
 * holder (the server while the session lives).
 *
 * Ownership: consumes `session`; its views become invalid. NULL does
 * nothing; freeing twice is undefined.
 * Thread safety: any thread.
 */
void rcip_mcp_server_session_free(struct rcip_mcp_server_session *session);

/**
 * Shuts the server down (as `rcip_mcp_server_shutdown` with a 5000 ms
 * deadline, when still running) and frees it; then the factory's
 * `user_data_free` runs once.
 *
 * Ownership: consumes `server`. NULL does nothing; freeing twice is
 * undefined. `rcip_mcp_server_session` handles stay valid.
 * Thread safety: any thread except a callback of the server's sessions or
 * its factory, and not while another thread is inside a call on it other
 * than `rcip_mcp_server_serve` (which returns).
 */
void rcip_mcp_server_free(struct rcip_mcp_server *server);

/**
 * Answers an availability check (`RcipAvailability`).
 *
 * Shape: the answer becomes `{"available": available, "reasonCode"?:
 * reason_code, "reason"?: reason}`; NULL leaves a field out. A later call
 * replaces an earlier one.
 * Ownership: `sink` is borrowed from the callback; `reason_code` and
 * `reason` are copied.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT` (sink), `RCIP_RESULT_INVALID_UTF8`;
 * the answer is unchanged then.
 * Thread safety: the callback's thread, during the callback.
 * Rule: PIPELINE.md section 2 (availability); the reason is the message
 * of a `CAPABILITY_UNAVAILABLE` outcome at invoke step 8.
 */
rcip_result rcip_availability_set(struct rcip_availability_sink *sink, bool available, const char *reason_code, const char *reason);

/**
 * Answers an id generator call.
 *
 * Ownership: `sink` is borrowed from the callback; `value` is copied.
 * Errors: `RCIP_RESULT_NULL_ARGUMENT`, `RCIP_RESULT_INVALID_UTF8`.
 * Thread safety: the callback's thread, during the callback.
 * Rule: PIPELINE.md section 7 (one generator serves both prefixes).
 */
rcip_result rcip_string_sink_set(struct rcip_string_sink *sink, const char *value);

/**
 * The snapshot as JSON text.
 *
 * Shape: `{"protocolVersion": "1.0", "revision", "application",
 * "scopes", "context": {"activeScopeIds", "primaryScopeId"?},
 * "capabilities": [{"id", "title", "description", "scopeIds", "effect",
 * "inputSchema", "outputSchema", "tags", "usage"?, "bound", "available",
 * "availability"? (only when bound), "relevance": "current" | "other"}]}`,
 * capabilities in catalog order. Built on first request, then cached: the
 * same bytes for every reader.
 * `availability` is `{"available": bool, "reasonCode"?: string, "reason"?:
 * string}`: the binding's availability check's answer as it was given to
 * `rcip_availability_set` at the latest refresh (NULL fields left out);
 * `{"available": true}` for a binding without a check; `{"available":
 * false, "reasonCode": "AVAILABILITY_CHECK_FAILED", "reason": <rcip's
 * text>}` when the check failed or gave no answer. Absent when unbound
 * (`"bound": false, "available": false`). `available` at the entry's top
 * level is `bound` and `availability.available`.
 * `relevance` is `"current"` when the capability's `scopeIds` is empty or
 * shares an id with the context's `activeScopeIds`, else `"other"`. Only
 * the ids listed in `activeScopeIds` count: a scope's `parentId` does not
 * make its child scopes (or its parent) current; activate every scope
 * that should count. `primaryScopeId` does not change relevance.
 * Relevance orders discovery; it is not authorization (any bound
 * capability can be invoked).
 * Ownership: owned by `snapshot`; valid until its last reference is freed.
 * Errors: NULL `snapshot` gives NULL.
 * Thread safety: any thread.
 * Rule: seed, "getSnapshot() returns the same deeply immutable object
 * until its revision changes"; PIPELINE.md section 2.
 */
const char *rcip_snapshot_json(const struct rcip_snapshot *snapshot);

/**
 * The snapshot's revision (0 for NULL).
 *
 * Units: a counter starting at 0 with the runtime's first snapshot and
 * incremented by every refresh.
 * Ownership: `snapshot` is borrowed for the call.
 * Thread safety: any thread.
 */
uint64_t rcip_snapshot_revision(const struct rcip_snapshot *snapshot);

/**
 * Frees one reference to the snapshot.
 *
 * Ownership: consumes this reference. NULL does nothing; freeing a
 * reference twice is undefined.
 * Thread safety: any thread.
 */
void rcip_snapshot_free(const struct rcip_snapshot *snapshot);

/**
 * Frees a string the library returned through a `char **` out-parameter.
 *
 * Ownership: consumes `string`; use only on strings from rcip (never
 * `free()`: another allocator). NULL does nothing; freeing twice is
 * undefined. Strings returned as `const char *` are never freed.
 * Thread safety: any thread.
 */
void rcip_string_free(char *string);

/**
 * The ABI version of this library: MAJOR * 10000 + MINOR * 100 + PATCH.
 * Equals `RCIP_ABI_VERSION` of the header it was built with; a host can
 * compare the two at startup.
 *
 * Thread safety: any thread.
 */
uint32_t rcip_abi_version(void);

/**
 * The library version as text (`"MAJOR.MINOR.PATCH"`).
 *
 * Ownership: static; do not free.
 * Thread safety: any thread.
 */
const char *rcip_version(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* RCIP_H */
