"""The C ABI of include/rcip.h as ctypes declarations: GENERATED, do not edit.

Written by bindings/python/tools/gen_abi.py from the header (`make header`
runs it; `make test-abi` checks it). _lib.py applies PROTOTYPES to the
loaded library and re-exports the callback types; errors.py re-exports
Result.
"""

from __future__ import annotations

import enum
from ctypes import (
    CFUNCTYPE,
    POINTER,
    c_bool,
    c_char_p,
    c_double,
    c_int32,
    c_int64,
    c_size_t,
    c_uint32,
    c_uint64,
    c_void_p,
)

# Callback types, in the header's order.
CANCEL_CALLBACK = CFUNCTYPE(None, c_void_p)
USER_DATA_FREE_CALLBACK = CFUNCTYPE(None, c_void_p)
SUBSCRIBER_CALLBACK = CFUNCTYPE(None, c_void_p, c_uint64)
OUTCOME_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
REPORT_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
HANDLER_CALLBACK = CFUNCTYPE(None, c_void_p, c_void_p)
AVAILABILITY_CALLBACK = CFUNCTYPE(c_int32, c_void_p, c_void_p)
MCP_MESSAGE_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
MCP_REQUEST_FACTORY_CALLBACK = CFUNCTYPE(c_int32, c_void_p, c_void_p)
ELICIT_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
SAMPLING_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
ASK_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
PROGRESS_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
POLICY_CALLBACK = CFUNCTYPE(None, c_void_p, c_void_p)
CONFIRMATION_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
EVENT_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
CLOCK_CALLBACK = CFUNCTYPE(c_int64, c_void_p)
ID_GENERATOR_CALLBACK = CFUNCTYPE(c_int32, c_void_p, c_char_p, c_void_p)
MCP_SESSION_FACTORY_CALLBACK = CFUNCTYPE(c_int32, c_void_p, c_void_p)
MCP_ACCESS_CALLBACK = CFUNCTYPE(None, c_void_p, c_char_p)
MCP_TOKEN_CALLBACK = CFUNCTYPE(c_int32, c_void_p, c_char_p, c_void_p)

# Every export, in the header's order: name -> (restype, [argtypes]).
PROTOTYPES = {
    "rcip_binding_unbind": (c_uint32, [c_void_p]),
    "rcip_binding_set_revision": (c_uint32, [c_void_p, c_uint64]),
    "rcip_binding_is_installed": (c_bool, [c_void_p]),
    "rcip_binding_free": (None, [c_void_p]),
    "rcip_cancel_token_new": (c_uint32, [POINTER(c_void_p)]),
    "rcip_cancel_token_clone": (c_uint32, [c_void_p, POINTER(c_void_p)]),
    "rcip_cancel_token_cancel": (c_uint32, [c_void_p]),
    "rcip_cancel_token_is_cancelled": (c_bool, [c_void_p]),
    "rcip_cancel_token_on_cancel": (c_uint32, [c_void_p, CANCEL_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_cancel_token_free": (None, [c_void_p]),
    "rcip_catalog_new": (c_uint32, [c_char_p, POINTER(c_void_p)]),
    "rcip_catalog_check": (c_uint32, [c_char_p, POINTER(c_void_p)]),
    "rcip_catalog_free": (None, [c_void_p]),
    "rcip_client_snapshot": (c_uint32, [c_void_p, POINTER(c_void_p)]),
    "rcip_client_list_capabilities": (c_uint32, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "rcip_client_subscribe": (c_uint32, [c_void_p, SUBSCRIBER_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK, POINTER(c_void_p)]),
    "rcip_subscription_free": (None, [c_void_p]),
    "rcip_client_invoke": (c_uint32, [c_void_p, c_char_p, c_char_p, c_char_p, c_void_p, OUTCOME_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK, POINTER(c_void_p)]),
    "rcip_client_invoke_blocking": (c_uint32, [c_void_p, c_char_p, c_char_p, c_char_p, c_void_p, POINTER(c_void_p)]),
    "rcip_client_preflight": (c_uint32, [c_void_p, POINTER(c_char_p), POINTER(c_char_p), c_size_t, c_void_p, REPORT_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_host_bind": (c_uint32, [c_void_p, c_char_p, HANDLER_CALLBACK, AVAILABILITY_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK, POINTER(c_void_p)]),
    "rcip_host_set_context": (c_uint32, [c_void_p, c_char_p]),
    "rcip_host_set_principal": (c_uint32, [c_void_p, c_char_p]),
    "rcip_host_clear_context": (c_uint32, [c_void_p]),
    "rcip_host_refresh": (c_uint32, [c_void_p]),
    "rcip_host_resolve_confirmation": (c_uint32, [c_void_p, c_char_p, c_bool, OUTCOME_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_host_carry_confirmation": (c_uint32, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "rcip_host_resume_confirmation": (c_uint32, [c_void_p, c_char_p, c_bool, c_char_p, c_void_p, OUTCOME_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_invocation_id": (c_char_p, [c_void_p]),
    "rcip_invocation_capability_id": (c_char_p, [c_void_p]),
    "rcip_invocation_input": (c_char_p, [c_void_p]),
    "rcip_invocation_semantic_context": (c_char_p, [c_void_p]),
    "rcip_invocation_cancel_token": (c_void_p, [c_void_p]),
    "rcip_invocation_complete": (c_uint32, [c_void_p, c_char_p]),
    "rcip_invocation_fail": (c_uint32, [c_void_p, c_bool]),
    "rcip_invocation_is_settled": (c_bool, [c_void_p]),
    "rcip_invocation_free": (None, [c_void_p]),
    "rcip_mcp_session_new": (c_uint32, [c_void_p, c_char_p, MCP_MESSAGE_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK, POINTER(c_void_p)]),
    "rcip_mcp_session_receive": (c_uint32, [c_void_p, c_char_p]),
    "rcip_mcp_session_serve_stdio": (c_uint32, [c_void_p]),
    "rcip_mcp_session_stats": (c_uint32, [c_void_p, POINTER(c_void_p)]),
    "rcip_mcp_session_receive_with_headers": (c_uint32, [c_void_p, c_char_p, c_char_p]),
    "rcip_mcp_session_set_request_runtimes": (c_uint32, [c_void_p, MCP_REQUEST_FACTORY_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_mcp_request_setup_method": (c_char_p, [c_void_p]),
    "rcip_mcp_request_setup_meta": (c_char_p, [c_void_p]),
    "rcip_mcp_request_setup_headers": (c_char_p, [c_void_p]),
    "rcip_mcp_request_setup_header": (c_char_p, [c_void_p, c_char_p]),
    "rcip_mcp_request_setup_accept": (c_uint32, [c_void_p, c_void_p, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_mcp_session_free": (None, [c_void_p]),
    "rcip_client_invoke_pending": (c_uint32, [c_void_p, c_char_p, c_char_p, c_char_p, c_void_p, POINTER(c_void_p)]),
    "rcip_host_resolve_confirmation_pending": (c_uint32, [c_void_p, c_char_p, c_bool, POINTER(c_void_p)]),
    "rcip_client_preflight_pending": (c_uint32, [c_void_p, POINTER(c_char_p), POINTER(c_char_p), c_size_t, c_void_p, POINTER(c_void_p)]),
    "rcip_pending_wait": (c_uint32, [c_void_p, c_uint64, POINTER(c_void_p)]),
    "rcip_pending_is_ready": (c_bool, [c_void_p]),
    "rcip_pending_on_ready": (c_uint32, [c_void_p, OUTCOME_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_pending_free": (None, [c_void_p]),
    "rcip_policy_request_context": (c_char_p, [c_void_p]),
    "rcip_policy_request_principal": (c_char_p, [c_void_p]),
    "rcip_policy_request_invocation_id": (c_char_p, [c_void_p]),
    "rcip_policy_request_capability_id": (c_char_p, [c_void_p]),
    "rcip_policy_request_effect": (c_char_p, [c_void_p]),
    "rcip_policy_request_is_confirmed": (c_bool, [c_void_p]),
    "rcip_policy_request_phase": (c_char_p, [c_void_p]),
    "rcip_policy_request_scope_is_active": (c_bool, [c_void_p, c_char_p]),
    "rcip_policy_request_primary_scope_id": (c_char_p, [c_void_p]),
    "rcip_policy_request_input": (c_char_p, [c_void_p]),
    "rcip_policy_request_capability": (c_char_p, [c_void_p]),
    "rcip_policy_request_allow": (c_uint32, [c_void_p]),
    "rcip_policy_request_deny": (c_uint32, [c_void_p, c_char_p]),
    "rcip_policy_request_confirm": (c_uint32, [c_void_p, c_char_p]),
    "rcip_policy_request_decide_default": (c_uint32, [c_void_p]),
    "rcip_policy_request_decide": (c_uint32, [c_void_p, c_char_p]),
    "rcip_policy_request_fail": (c_uint32, [c_void_p]),
    "rcip_policy_request_is_settled": (c_bool, [c_void_p]),
    "rcip_policy_request_free": (None, [c_void_p]),
    "rcip_record_parse": (c_uint32, [c_char_p, POINTER(c_void_p)]),
    "rcip_record_status": (c_char_p, [c_void_p]),
    "rcip_record_invocation_id": (c_char_p, [c_void_p]),
    "rcip_record_capability_id": (c_char_p, [c_void_p]),
    "rcip_record_error_code": (c_char_p, [c_void_p]),
    "rcip_record_error_message": (c_char_p, [c_void_p]),
    "rcip_record_confirmation_id": (c_char_p, [c_void_p]),
    "rcip_record_output": (c_char_p, [c_void_p]),
    "rcip_record_phase": (c_char_p, [c_void_p]),
    "rcip_record_notice_kind": (c_char_p, [c_void_p]),
    "rcip_record_reason": (c_char_p, [c_void_p]),
    "rcip_record_issue_count": (c_size_t, [c_void_p]),
    "rcip_record_issue_path": (c_char_p, [c_void_p, c_size_t]),
    "rcip_record_issue_keyword": (c_char_p, [c_void_p, c_size_t]),
    "rcip_record_issue_message": (c_char_p, [c_void_p, c_size_t]),
    "rcip_record_expires_at": (c_bool, [c_void_p, POINTER(c_int64)]),
    "rcip_record_entry_count": (c_size_t, [c_void_p]),
    "rcip_record_entry": (c_void_p, [c_void_p, c_size_t]),
    "rcip_record_free": (None, [c_void_p]),
    "rcip_invocation_report_progress": (c_uint32, [c_void_p, c_double, c_bool, c_double, c_char_p]),
    "rcip_invocation_log": (c_uint32, [c_void_p, c_char_p, c_char_p, c_char_p]),
    "rcip_invocation_elicit": (c_uint32, [c_void_p, c_char_p, c_char_p, ELICIT_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_invocation_create_message": (c_uint32, [c_void_p, c_char_p, SAMPLING_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_invocation_ask": (c_uint32, [c_void_p, c_char_p, c_char_p, c_char_p, ASK_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_invocation_can_ask": (c_bool, [c_void_p, c_char_p]),
    "rcip_runtime_builder_set_progress_observer": (c_uint32, [c_void_p, PROGRESS_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_result_str": (c_char_p, [c_uint32]),
    "rcip_last_error_message": (c_char_p, []),
    "rcip_runtime_builder_new": (c_uint32, [c_void_p, POINTER(c_void_p)]),
    "rcip_runtime_builder_set_confirmation_ttl_ms": (c_uint32, [c_void_p, c_uint64]),
    "rcip_runtime_builder_set_limits": (c_uint32, [c_void_p, c_size_t, c_size_t]),
    "rcip_runtime_builder_set_validation_budget": (c_uint32, [c_void_p, c_uint64, c_uint64]),
    "rcip_runtime_builder_set_validation_issue_limit": (c_uint32, [c_void_p, c_size_t, c_size_t]),
    "rcip_runtime_builder_set_policy": (c_uint32, [c_void_p, POLICY_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_set_confirmation_callback": (c_uint32, [c_void_p, CONFIRMATION_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_add_event_observer": (c_uint32, [c_void_p, EVENT_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_set_clock": (c_uint32, [c_void_p, CLOCK_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_set_id_generator": (c_uint32, [c_void_p, ID_GENERATOR_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_set_manual_timers": (c_uint32, [c_void_p, c_bool]),
    "rcip_runtime_builder_bind": (c_uint32, [c_void_p, c_char_p, HANDLER_CALLBACK, AVAILABILITY_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_runtime_builder_build": (c_uint32, [c_void_p, POINTER(c_void_p)]),
    "rcip_runtime_builder_free": (None, [c_void_p]),
    "rcip_runtime_client": (c_void_p, [c_void_p]),
    "rcip_runtime_host": (c_void_p, [c_void_p]),
    "rcip_runtime_next_deadline": (c_uint32, [c_void_p, POINTER(c_bool), POINTER(c_int64)]),
    "rcip_runtime_run_due_timers": (c_uint32, [c_void_p]),
    "rcip_runtime_stats": (c_uint32, [c_void_p, POINTER(c_void_p)]),
    "rcip_runtime_close": (c_uint32, [c_void_p]),
    "rcip_runtime_free": (None, [c_void_p]),
    "rcip_schema_new": (c_uint32, [c_char_p, POINTER(c_void_p)]),
    "rcip_schema_validate": (c_uint32, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "rcip_schema_free": (None, [c_void_p]),
    "rcip_mcp_session_setup_session_id": (c_char_p, [c_void_p]),
    "rcip_mcp_session_setup_initialize_params": (c_char_p, [c_void_p]),
    "rcip_mcp_session_setup_client_name": (c_char_p, [c_void_p]),
    "rcip_mcp_session_setup_principal": (c_char_p, [c_void_p]),
    "rcip_mcp_session_setup_header": (c_char_p, [c_void_p, c_char_p]),
    "rcip_mcp_session_setup_accept": (c_uint32, [c_void_p, c_void_p, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_mcp_server_new": (c_uint32, [c_void_p, c_char_p, c_char_p, MCP_SESSION_FACTORY_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK, POINTER(c_void_p)]),
    "rcip_mcp_server_url": (c_uint32, [c_void_p, POINTER(c_void_p)]),
    "rcip_mcp_server_start": (c_uint32, [c_void_p]),
    "rcip_mcp_server_serve": (c_uint32, [c_void_p]),
    "rcip_mcp_server_shutdown": (c_uint32, [c_void_p, c_uint64]),
    "rcip_mcp_server_drain": (c_uint32, [c_void_p, c_uint64]),
    "rcip_mcp_server_set_access_log": (c_uint32, [c_void_p, MCP_ACCESS_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_mcp_server_access_log_dropped": (c_uint64, [c_void_p]),
    "rcip_mcp_server_set_token_verifier": (c_uint32, [c_void_p, MCP_TOKEN_CALLBACK, c_void_p, USER_DATA_FREE_CALLBACK]),
    "rcip_mcp_server_sessions": (c_uint32, [c_void_p, POINTER(c_void_p)]),
    "rcip_mcp_server_session_find": (c_uint32, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "rcip_mcp_server_session_host": (c_void_p, [c_void_p]),
    "rcip_mcp_server_session_client": (c_void_p, [c_void_p]),
    "rcip_mcp_server_session_user_data": (c_void_p, [c_void_p]),
    "rcip_mcp_server_session_free": (None, [c_void_p]),
    "rcip_mcp_server_free": (None, [c_void_p]),
    "rcip_availability_set": (c_uint32, [c_void_p, c_bool, c_char_p, c_char_p]),
    "rcip_string_sink_set": (c_uint32, [c_void_p, c_char_p]),
    "rcip_snapshot_json": (c_char_p, [c_void_p]),
    "rcip_snapshot_revision": (c_uint64, [c_void_p]),
    "rcip_snapshot_free": (None, [c_void_p]),
    "rcip_string_free": (None, [c_void_p]),
    "rcip_abi_version": (c_uint32, []),
    "rcip_version": (c_char_p, []),
}


__all__ = [
    "CANCEL_CALLBACK",
    "USER_DATA_FREE_CALLBACK",
    "SUBSCRIBER_CALLBACK",
    "OUTCOME_CALLBACK",
    "REPORT_CALLBACK",
    "HANDLER_CALLBACK",
    "AVAILABILITY_CALLBACK",
    "MCP_MESSAGE_CALLBACK",
    "MCP_REQUEST_FACTORY_CALLBACK",
    "ELICIT_CALLBACK",
    "SAMPLING_CALLBACK",
    "ASK_CALLBACK",
    "PROGRESS_CALLBACK",
    "POLICY_CALLBACK",
    "CONFIRMATION_CALLBACK",
    "EVENT_CALLBACK",
    "CLOCK_CALLBACK",
    "ID_GENERATOR_CALLBACK",
    "MCP_SESSION_FACTORY_CALLBACK",
    "MCP_ACCESS_CALLBACK",
    "MCP_TOKEN_CALLBACK",
    "PROTOTYPES",
    "Result",
]


class Result(enum.IntEnum):
    """``rcip_result`` values (include/rcip.h), in its order; never renumbered."""

    OK = 0
    NULL_ARGUMENT = 100
    INVALID_UTF8 = 101
    INVALID_JSON = 102
    INVALID_ARGUMENT = 103
    INVALID_CATALOG = 200
    NOT_IN_CATALOG = 201
    ALREADY_BOUND = 202
    UNKNOWN_SCOPE = 203
    PRIMARY_NOT_ACTIVE = 204
    ALREADY_USED = 300
    ALREADY_COMPLETED = 301
    CLOSED = 302
    PREFLIGHT_BATCH_INVALID = 303
    WRONG_CONTEXT = 304
    NOT_FOUND = 305
    IO = 306
    TIMED_OUT = 307
    UNSUPPORTED = 310
    PANIC = 900
