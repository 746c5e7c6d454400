"""Loads librcip once and declares every C function (docs/C-ABI.md, "Bindings").

The library comes from the ``RCIP_LIBRARY`` environment variable when it is
set, else from the file shipped beside this package (``pip install`` puts it
there). There is no ``find_library`` fallback: a library picked up from some
other place could be another version.

Every function gets ``argtypes`` and ``restype`` here, at import: ctypes
would otherwise assume ``int`` and truncate 64-bit pointers. Handles are
``c_void_p``; strings the library returns through ``char **`` are read as
``c_void_p`` (so the pointer is not lost) and freed with ``rcip_string_free``.
``CDLL`` releases the GIL during every call, so a call that waits for a
callback running on another Python thread cannot deadlock on the GIL.
"""

from __future__ import annotations

import ctypes
import os
import sys
from ctypes import (
    CFUNCTYPE,
    POINTER,
    c_bool,
    c_double,
    c_char_p,
    c_int32,
    c_int64,
    c_size_t,
    c_uint32,
    c_uint64,
    c_void_p,
)

# The ABI this package was written against (include/rcip.h RCIP_ABI_VERSION).
EXPECTED_ABI_VERSION = 100


def _library_file_name() -> str:
    if sys.platform == "darwin":
        return "librcip.dylib"
    if sys.platform == "win32":
        return "rcip.dll"
    return "librcip.so"


def _library_path() -> str:
    configured = os.environ.get("RCIP_LIBRARY")
    if configured:
        return configured
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _library_file_name())


def _compatible(found: int, expected: int) -> bool:
    """Same major version; while the major is 0, the minor is the breaking
    part (0.x semantics). A newer patch (or, from 1.0, a newer minor) is
    compatible."""
    if expected // 10000 == 0:
        return found // 100 == expected // 100 and found >= expected
    return found // 10000 == expected // 10000 and found >= expected


LIBRARY_PATH = _library_path()
try:
    lib = ctypes.CDLL(LIBRARY_PATH)
except OSError as exc:  # pragma: no cover - exercised by packaging mistakes
    raise ImportError(
        "rcip: cannot load the native library %r (%s). Set RCIP_LIBRARY to the path of "
        "librcip, or install the package with `pip install bindings/python`, which builds "
        "and bundles it." % (LIBRARY_PATH, exc)
    ) from exc

# ----- callback types (include/rcip.h typedefs) ------------------------------
# Every callback's first argument is the user data: an integer key into the
# registry (_registry.py), passed as a void pointer.

CANCEL_CALLBACK = CFUNCTYPE(None, c_void_p)
USER_DATA_FREE_CALLBACK = CFUNCTYPE(None, c_void_p)
SUBSCRIBER_CALLBACK = CFUNCTYPE(None, c_void_p, c_uint64)
OUTCOME_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
REPORT_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
HANDLER_CALLBACK = CFUNCTYPE(None, c_void_p, c_void_p)
AVAILABILITY_CALLBACK = CFUNCTYPE(c_int32, c_void_p, c_void_p)
POLICY_CALLBACK = CFUNCTYPE(None, c_void_p, c_void_p)
CONFIRMATION_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
EVENT_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
MCP_ACCESS_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
PROGRESS_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
ELICIT_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
SAMPLING_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
ASK_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
CLOCK_CALLBACK = CFUNCTYPE(c_int64, c_void_p)
ID_GENERATOR_CALLBACK = CFUNCTYPE(c_int32, c_void_p, c_char_p, c_void_p)
MCP_MESSAGE_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
MCP_SESSION_FACTORY_CALLBACK = CFUNCTYPE(c_int32, c_void_p, c_void_p)
MCP_REQUEST_FACTORY_CALLBACK = CFUNCTYPE(c_int32, c_void_p, c_void_p)

_R = c_uint32  # rcip_result
_P = c_void_p  # any handle
_PP = POINTER(c_void_p)  # handle out-parameter / char ** out-parameter

# Every export of include/rcip.h, with its ctypes signature; tests/bindings.rs
# (part of `make test`) fails when this table and the header disagree.
_PROTOTYPES = {
    # binding
    "rcip_binding_unbind": (_R, [_P]),
    "rcip_binding_set_revision": (_R, [_P, c_uint64]),
    "rcip_binding_is_installed": (c_bool, [_P]),
    "rcip_binding_free": (None, [_P]),
    # cancel token
    "rcip_cancel_token_new": (_R, [_PP]),
    "rcip_cancel_token_clone": (_R, [_P, _PP]),
    "rcip_cancel_token_cancel": (_R, [_P]),
    "rcip_cancel_token_is_cancelled": (c_bool, [_P]),
    "rcip_cancel_token_on_cancel": (_R, [_P, CANCEL_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_cancel_token_free": (None, [_P]),
    # catalog
    "rcip_catalog_new": (_R, [c_char_p, _PP]),
    "rcip_catalog_check": (_R, [c_char_p, _PP]),
    "rcip_catalog_free": (None, [_P]),
    # client
    "rcip_client_snapshot": (_R, [_P, _PP]),
    "rcip_client_list_capabilities": (_R, [_P, c_char_p, _PP]),
    "rcip_client_subscribe": (_R, [_P, SUBSCRIBER_CALLBACK, _P, USER_DATA_FREE_CALLBACK, _PP]),
    "rcip_subscription_free": (None, [_P]),
    "rcip_client_invoke": (
        _R,
        [_P, c_char_p, c_char_p, c_char_p, _P, OUTCOME_CALLBACK, _P, USER_DATA_FREE_CALLBACK, _PP],
    ),
    "rcip_client_invoke_blocking": (_R, [_P, c_char_p, c_char_p, c_char_p, _P, _PP]),
    "rcip_client_preflight": (
        _R,
        [_P, POINTER(c_char_p), POINTER(c_char_p), c_size_t, _P, REPORT_CALLBACK, _P, USER_DATA_FREE_CALLBACK],
    ),
    # host
    "rcip_host_bind": (
        _R,
        [_P, c_char_p, HANDLER_CALLBACK, AVAILABILITY_CALLBACK, _P, USER_DATA_FREE_CALLBACK, _PP],
    ),
    "rcip_host_set_context": (_R, [_P, c_char_p]),
    "rcip_host_clear_context": (_R, [_P]),
    "rcip_host_refresh": (_R, [_P]),
    "rcip_host_resolve_confirmation": (
        _R,
        [_P, c_char_p, c_bool, OUTCOME_CALLBACK, _P, USER_DATA_FREE_CALLBACK],
    ),
    "rcip_host_carry_confirmation": (_R, [_P, c_char_p, _PP]),
    "rcip_host_resume_confirmation": (
        _R,
        [_P, c_char_p, c_bool, c_char_p, _P, OUTCOME_CALLBACK, _P, USER_DATA_FREE_CALLBACK],
    ),
    # invocation (completion handle of a handler)
    "rcip_invocation_id": (c_char_p, [_P]),
    "rcip_invocation_capability_id": (c_char_p, [_P]),
    "rcip_invocation_input": (c_char_p, [_P]),
    "rcip_invocation_semantic_context": (c_char_p, [_P]),
    "rcip_invocation_cancel_token": (_P, [_P]),
    "rcip_invocation_complete": (_R, [_P, c_char_p]),
    "rcip_invocation_fail": (_R, [_P, c_bool]),
    "rcip_invocation_report_progress": (_R, [_P, c_double, c_bool, c_double, c_char_p]),
    "rcip_invocation_log": (_R, [_P, c_char_p, c_char_p, c_char_p]),
    "rcip_invocation_elicit": (_R, [_P, c_char_p, c_char_p, ELICIT_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_invocation_create_message": (_R, [_P, c_char_p, SAMPLING_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_invocation_ask": (_R, [_P, c_char_p, c_char_p, c_char_p, ASK_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_invocation_can_ask": (c_bool, [_P, c_char_p]),
    "rcip_invocation_is_settled": (c_bool, [_P]),
    "rcip_invocation_free": (None, [_P]),
    # MCP session (the bridge to Model Context Protocol clients)
    "rcip_mcp_session_new": (_R, [_P, c_char_p, MCP_MESSAGE_CALLBACK, _P, USER_DATA_FREE_CALLBACK, _PP]),
    "rcip_mcp_session_receive": (_R, [_P, c_char_p]),
    "rcip_mcp_session_serve_stdio": (_R, [_P]),
    "rcip_mcp_session_stats": (_R, [_P, _PP]),
    "rcip_mcp_session_free": (None, [_P]),
    # MCP session: a runtime per stateless (2026-07-28) request
    "rcip_mcp_session_receive_with_headers": (_R, [_P, c_char_p, c_char_p]),
    "rcip_mcp_session_set_request_runtimes": (_R, [_P, MCP_REQUEST_FACTORY_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_mcp_request_setup_method": (c_char_p, [_P]),
    "rcip_mcp_request_setup_meta": (c_char_p, [_P]),
    "rcip_mcp_request_setup_headers": (c_char_p, [_P]),
    "rcip_mcp_request_setup_header": (c_char_p, [_P, c_char_p]),
    "rcip_mcp_request_setup_accept": (_R, [_P, _P, _P, USER_DATA_FREE_CALLBACK]),
    # MCP Streamable HTTP server (one runtime per MCP session)
    "rcip_mcp_session_setup_session_id": (c_char_p, [_P]),
    "rcip_mcp_session_setup_initialize_params": (c_char_p, [_P]),
    "rcip_mcp_session_setup_client_name": (c_char_p, [_P]),
    "rcip_mcp_session_setup_principal": (c_char_p, [_P]),
    "rcip_mcp_session_setup_header": (c_char_p, [_P, c_char_p]),
    "rcip_mcp_session_setup_accept": (_R, [_P, _P, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_mcp_server_new": (
        _R,
        [_P, c_char_p, c_char_p, MCP_SESSION_FACTORY_CALLBACK, _P, USER_DATA_FREE_CALLBACK, _PP],
    ),
    "rcip_mcp_server_url": (_R, [_P, _PP]),
    "rcip_mcp_server_start": (_R, [_P]),
    "rcip_mcp_server_serve": (_R, [_P]),
    "rcip_mcp_server_shutdown": (_R, [_P, c_uint64]),
    "rcip_mcp_server_drain": (_R, [_P, c_uint64]),
    "rcip_host_set_principal": (_R, [_P, c_char_p]),
    "rcip_policy_request_principal": (c_char_p, [_P]),
    "rcip_mcp_server_set_access_log": (_R, [_P, MCP_ACCESS_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_mcp_server_access_log_dropped": (c_uint64, [_P]),
    "rcip_mcp_server_sessions": (_R, [_P, _PP]),
    "rcip_mcp_server_session_find": (_R, [_P, c_char_p, _PP]),
    "rcip_mcp_server_session_host": (_P, [_P]),
    "rcip_mcp_server_session_client": (_P, [_P]),
    "rcip_mcp_server_session_user_data": (_P, [_P]),
    "rcip_mcp_server_session_free": (None, [_P]),
    "rcip_mcp_server_free": (None, [_P]),
    # policy request (completion handle of a policy)
    "rcip_policy_request_context": (c_char_p, [_P]),
    "rcip_policy_request_invocation_id": (c_char_p, [_P]),
    "rcip_policy_request_decide": (_R, [_P, c_char_p]),
    "rcip_policy_request_fail": (_R, [_P]),
    "rcip_policy_request_is_settled": (c_bool, [_P]),
    "rcip_policy_request_free": (None, [_P]),
    "rcip_policy_request_capability_id": (c_char_p, [_P]),
    "rcip_policy_request_effect": (c_char_p, [_P]),
    "rcip_policy_request_is_confirmed": (c_bool, [_P]),
    "rcip_policy_request_phase": (c_char_p, [_P]),
    "rcip_policy_request_scope_is_active": (c_bool, [_P, c_char_p]),
    "rcip_policy_request_primary_scope_id": (c_char_p, [_P]),
    "rcip_policy_request_input": (c_char_p, [_P]),
    "rcip_policy_request_capability": (c_char_p, [_P]),
    "rcip_policy_request_allow": (_R, [_P]),
    "rcip_policy_request_deny": (_R, [_P, c_char_p]),
    "rcip_policy_request_confirm": (_R, [_P, c_char_p]),
    "rcip_policy_request_decide_default": (_R, [_P]),
    # pending outcomes (the Python binding has futures; prototypes only)
    "rcip_client_invoke_pending": (_R, [_P, c_char_p, c_char_p, c_char_p, _P, _PP]),
    "rcip_host_resolve_confirmation_pending": (_R, [_P, c_char_p, c_bool, _PP]),
    "rcip_client_preflight_pending": (_R, [_P, POINTER(c_char_p), POINTER(c_char_p), c_size_t, _P, _PP]),
    "rcip_pending_wait": (_R, [_P, c_uint64, _PP]),
    "rcip_pending_is_ready": (c_bool, [_P]),
    "rcip_pending_on_ready": (_R, [_P, OUTCOME_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_pending_free": (None, [_P]),
    # records (prototypes only: Python reads the JSON)
    "rcip_record_parse": (_R, [c_char_p, _PP]),
    "rcip_record_status": (c_char_p, [_P]),
    "rcip_record_invocation_id": (c_char_p, [_P]),
    "rcip_record_capability_id": (c_char_p, [_P]),
    "rcip_record_error_code": (c_char_p, [_P]),
    "rcip_record_error_message": (c_char_p, [_P]),
    "rcip_record_confirmation_id": (c_char_p, [_P]),
    "rcip_record_output": (c_char_p, [_P]),
    "rcip_record_phase": (c_char_p, [_P]),
    "rcip_record_notice_kind": (c_char_p, [_P]),
    "rcip_record_reason": (c_char_p, [_P]),
    "rcip_record_issue_count": (c_size_t, [_P]),
    "rcip_record_issue_path": (c_char_p, [_P, c_size_t]),
    "rcip_record_issue_keyword": (c_char_p, [_P, c_size_t]),
    "rcip_record_issue_message": (c_char_p, [_P, c_size_t]),
    "rcip_record_expires_at": (c_bool, [_P, POINTER(c_int64)]),
    "rcip_record_entry_count": (c_size_t, [_P]),
    "rcip_record_entry": (_P, [_P, c_size_t]),
    "rcip_record_free": (None, [_P]),
    # results
    "rcip_result_str": (c_char_p, [c_uint32]),
    "rcip_last_error_message": (c_char_p, []),
    # runtime builder and runtime
    "rcip_runtime_builder_new": (_R, [_P, _PP]),
    "rcip_runtime_builder_set_confirmation_ttl_ms": (_R, [_P, c_uint64]),
    "rcip_runtime_builder_set_limits": (_R, [_P, c_size_t, c_size_t]),
    "rcip_runtime_builder_set_validation_budget": (_R, [_P, c_uint64, c_uint64]),
    "rcip_runtime_builder_set_validation_issue_limit": (_R, [_P, c_size_t, c_size_t]),
    "rcip_runtime_builder_set_policy": (_R, [_P, POLICY_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_set_confirmation_callback": (
        _R,
        [_P, CONFIRMATION_CALLBACK, _P, USER_DATA_FREE_CALLBACK],
    ),
    "rcip_runtime_builder_add_event_observer": (_R, [_P, EVENT_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_set_progress_observer": (_R, [_P, PROGRESS_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_set_clock": (_R, [_P, CLOCK_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_set_id_generator": (_R, [_P, ID_GENERATOR_CALLBACK, _P, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_set_manual_timers": (_R, [_P, c_bool]),
    "rcip_runtime_builder_bind": (
        _R,
        [_P, c_char_p, HANDLER_CALLBACK, AVAILABILITY_CALLBACK, _P, USER_DATA_FREE_CALLBACK],
    ),
    "rcip_runtime_builder_build": (_R, [_P, _PP]),
    "rcip_runtime_builder_free": (None, [_P]),
    "rcip_runtime_client": (_P, [_P]),
    "rcip_runtime_host": (_P, [_P]),
    "rcip_runtime_next_deadline": (_R, [_P, POINTER(c_bool), POINTER(c_int64)]),
    "rcip_runtime_run_due_timers": (_R, [_P]),
    "rcip_runtime_stats": (_R, [_P, _PP]),
    "rcip_runtime_close": (_R, [_P]),
    "rcip_runtime_free": (None, [_P]),
    # schema
    "rcip_schema_new": (_R, [c_char_p, _PP]),
    "rcip_schema_validate": (_R, [_P, c_char_p, _PP]),
    "rcip_schema_free": (None, [_P]),
    # sinks
    "rcip_availability_set": (_R, [_P, c_bool, c_char_p, c_char_p]),
    "rcip_string_sink_set": (_R, [_P, c_char_p]),
    # snapshot
    "rcip_snapshot_json": (c_char_p, [_P]),
    "rcip_snapshot_revision": (c_uint64, [_P]),
    "rcip_snapshot_free": (None, [_P]),
    # strings and versions
    "rcip_string_free": (None, [_P]),
    "rcip_abi_version": (c_uint32, []),
    "rcip_version": (c_char_p, []),
}

for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    try:
        _fn = getattr(lib, _name)
    except AttributeError as exc:
        raise ImportError("rcip: %s has no function %s (an older library?)" % (LIBRARY_PATH, _name)) from exc
    _fn.restype = _restype
    _fn.argtypes = _argtypes

ABI_VERSION = int(lib.rcip_abi_version())
if not _compatible(ABI_VERSION, EXPECTED_ABI_VERSION):
    raise ImportError(
        "rcip: %s has ABI version %d, this package needs %d (same major%s)"
        % (
            LIBRARY_PATH,
            ABI_VERSION,
            EXPECTED_ABI_VERSION,
            ", and same minor while the major is 0" if EXPECTED_ABI_VERSION < 10000 else "",
        )
    )

LIBRARY_VERSION = lib.rcip_version().decode("utf-8")


def take_string(pointer: c_void_p) -> str | None:
    """Reads a string the library returned through ``char **`` and frees it
    (``rcip_string_free``), even when decoding fails."""
    address = pointer.value
    if not address:
        return None
    try:
        return ctypes.string_at(address).decode("utf-8")
    finally:
        lib.rcip_string_free(address)


def borrowed_string(value: bytes | None) -> str | None:
    """A ``const char *`` owned by the library (c_char_p restype gives bytes)."""
    return None if value is None else value.decode("utf-8")
