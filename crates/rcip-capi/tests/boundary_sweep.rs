//! Boundary sweep (issue 5, item 5): the function list is read from
//! include/rcip.h at test time, and for every exported function the cases
//! are generated from its parameter list:
//! - `ok`: every argument good (the baseline);
//! - `P:null` for every pointer parameter (handles, strings, arrays,
//!   out-parameters, required callbacks; not `user_data`, which is opaque,
//!   nor `user_data_free`, which may be NULL by contract);
//! - `P:utf8` for every string parameter (invalid UTF-8), and `P:notjson`
//!   and `P:shape` (JSON of the wrong shape: `[]`) for every `*_json` one;
//!   arrays of strings get the same cases on their first element (`P[0]:`);
//! - `P:zero` and `P:max` for `uint64_t` / `size_t`, `P:max` for
//!   `uint32_t`, `P:nan` for `double`;
//! - `settled` when the first parameter is a handle that can be used up:
//!   a settled completion handle, a cancelled token, or a binding,
//!   subscription or snapshot whose runtime was freed.
//!
//! `EXPECTED` gives, for each function, what every generated case must
//! answer: the `rcip_result` name, or for functions without one `null`,
//! `nonnull`, `true`, `false`, `void` or a value; `/...` adds what followed
//! (the outcome's status or error code, a report's first entry; for a
//! completion handle, the outcome once the case's handle is freed, so an
//! unsettled handle shows its failure). It is
//! written from PIPELINE.md section 8 and the header, not computed from the
//! library. The test fails when the header has a function or a case that
//! `EXPECTED` does not cover, or `EXPECTED` names one the header lacks.
//!
//! Every failing call is also checked for the boundary conventions: each
//! pointer out-parameter is NULL afterwards, `user_data_free` was never
//! called, and `rcip_last_error_message()` says something.

use rcip_capi::binding::*;
use rcip_capi::cancel::*;
use rcip_capi::catalog::*;
use rcip_capi::client::*;
use rcip_capi::host::*;
use rcip_capi::invocation::*;
use rcip_capi::mcp::*;
use rcip_capi::pending::*;
use rcip_capi::policy::*;
use rcip_capi::record::*;
use rcip_capi::report::*;
use rcip_capi::result::*;
use rcip_capi::runtime::*;
use rcip_capi::schema::*;
use rcip_capi::server::*;
use rcip_capi::sink::*;
use rcip_capi::snapshot::*;
use rcip_capi::string::*;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;
use std::ptr;

const EXPECTED: &str = "
rcip_binding_unbind ok=OK binding:null=NULL_ARGUMENT settled=CLOSED
rcip_binding_set_revision ok=OK binding:null=NULL_ARGUMENT revision:zero=OK revision:max=OK settled=CLOSED
rcip_binding_is_installed ok=true binding:null=false settled=false
rcip_binding_free ok=void binding:null=void settled=void
rcip_cancel_token_new ok=OK token_out:null=NULL_ARGUMENT
rcip_cancel_token_clone ok=OK token:null=NULL_ARGUMENT token_out:null=NULL_ARGUMENT settled=OK/cancelled
rcip_cancel_token_cancel ok=OK token:null=NULL_ARGUMENT settled=OK
rcip_cancel_token_is_cancelled ok=false token:null=false settled=true
rcip_cancel_token_on_cancel ok=OK/waits token:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT settled=OK/ran
rcip_cancel_token_free ok=void token:null=void settled=void
rcip_catalog_new ok=OK catalog_json:null=NULL_ARGUMENT catalog_json:utf8=INVALID_CATALOG catalog_json:notjson=INVALID_CATALOG catalog_json:shape=INVALID_CATALOG catalog_out:null=NULL_ARGUMENT
rcip_catalog_check ok=OK/ok catalog_json:null=NULL_ARGUMENT catalog_json:utf8=OK/problems catalog_json:notjson=OK/problems catalog_json:shape=OK/problems report_out:null=NULL_ARGUMENT
rcip_catalog_free ok=void catalog:null=void
rcip_client_snapshot ok=OK client:null=NULL_ARGUMENT snapshot_out:null=NULL_ARGUMENT
rcip_client_list_capabilities ok=OK client:null=NULL_ARGUMENT filter_json:null=OK filter_json:utf8=INVALID_JSON filter_json:notjson=INVALID_JSON filter_json:shape=INVALID_ARGUMENT capabilities_out:null=NULL_ARGUMENT
rcip_client_subscribe ok=OK client:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT subscription_out:null=NULL_ARGUMENT
rcip_subscription_free ok=void subscription:null=void settled=void
rcip_client_invoke ok=OK/succeeded client:null=NULL_ARGUMENT capability_id:null=NULL_ARGUMENT capability_id:utf8=INVALID_UTF8 input_json:null=NULL_ARGUMENT input_json:utf8=OK/INPUT_INVALID input_json:notjson=OK/INPUT_INVALID input_json:shape=OK/INPUT_INVALID+issues invocation_id:null=OK/succeeded invocation_id:utf8=INVALID_UTF8 cancel_token:null=OK/succeeded on_outcome:null=NULL_ARGUMENT invocation_id_out:null=OK/succeeded
rcip_client_invoke_blocking ok=OK/succeeded client:null=NULL_ARGUMENT capability_id:null=NULL_ARGUMENT capability_id:utf8=INVALID_UTF8 input_json:null=NULL_ARGUMENT input_json:utf8=OK/INPUT_INVALID input_json:notjson=OK/INPUT_INVALID input_json:shape=OK/INPUT_INVALID+issues invocation_id:null=OK/succeeded invocation_id:utf8=INVALID_UTF8 cancel_token:null=OK/succeeded outcome_json_out:null=NULL_ARGUMENT
rcip_client_preflight ok=OK/ready client:null=NULL_ARGUMENT capability_ids:null=NULL_ARGUMENT capability_ids[0]:null=NULL_ARGUMENT capability_ids[0]:utf8=INVALID_UTF8 input_jsons:null=NULL_ARGUMENT input_jsons[0]:null=NULL_ARGUMENT input_jsons[0]:utf8=OK/INPUT_INVALID input_jsons[0]:notjson=OK/INPUT_INVALID input_jsons[0]:shape=OK/INPUT_INVALID+issues count:zero=PREFLIGHT_BATCH_INVALID count:max=PREFLIGHT_BATCH_INVALID cancel_token:null=OK/ready on_report:null=NULL_ARGUMENT
rcip_host_bind ok=OK host:null=NULL_ARGUMENT capability_id:null=NULL_ARGUMENT capability_id:utf8=INVALID_UTF8 handler:null=NULL_ARGUMENT availability:null=OK binding_out:null=NULL_ARGUMENT
rcip_host_set_principal ok=OK host:null=NULL_ARGUMENT principal_json:null=OK principal_json:utf8=INVALID_UTF8 principal_json:notjson=INVALID_JSON principal_json:shape=INVALID_ARGUMENT
rcip_host_set_context ok=OK host:null=NULL_ARGUMENT context_json:null=NULL_ARGUMENT context_json:utf8=INVALID_JSON context_json:notjson=INVALID_JSON context_json:shape=INVALID_ARGUMENT
rcip_host_clear_context ok=OK host:null=NULL_ARGUMENT
rcip_host_refresh ok=OK host:null=NULL_ARGUMENT
rcip_host_resolve_confirmation ok=OK/succeeded host:null=NULL_ARGUMENT confirmation_id:null=NULL_ARGUMENT confirmation_id:utf8=INVALID_UTF8 on_outcome:null=NULL_ARGUMENT
rcip_host_carry_confirmation ok=OK host:null=NULL_ARGUMENT confirmation_id:null=NULL_ARGUMENT confirmation_id:utf8=INVALID_UTF8 carried_json_out:null=NULL_ARGUMENT
rcip_host_resume_confirmation ok=OK/succeeded host:null=NULL_ARGUMENT carried_json:null=NULL_ARGUMENT carried_json:utf8=INVALID_JSON carried_json:notjson=INVALID_JSON carried_json:shape=INVALID_ARGUMENT input_json:null=NULL_ARGUMENT input_json:utf8=OK/INPUT_INVALID input_json:notjson=OK/INPUT_INVALID input_json:shape=OK/INPUT_INVALID+issues cancel_token:null=OK/succeeded on_outcome:null=NULL_ARGUMENT
rcip_invocation_id ok=nonnull/EXECUTION_FAILED invocation:null=null/EXECUTION_FAILED settled=nonnull/succeeded
rcip_invocation_capability_id ok=nonnull/EXECUTION_FAILED invocation:null=null/EXECUTION_FAILED settled=nonnull/succeeded
rcip_invocation_input ok=nonnull/EXECUTION_FAILED invocation:null=null/EXECUTION_FAILED settled=nonnull/succeeded
rcip_invocation_semantic_context ok=nonnull/EXECUTION_FAILED invocation:null=null/EXECUTION_FAILED settled=nonnull/succeeded
rcip_invocation_cancel_token ok=nonnull/EXECUTION_FAILED invocation:null=null/EXECUTION_FAILED settled=nonnull/succeeded
rcip_invocation_complete ok=OK/succeeded invocation:null=NULL_ARGUMENT/EXECUTION_FAILED output_json:null=NULL_ARGUMENT/EXECUTION_FAILED output_json:utf8=OK/OUTPUT_INVALID output_json:notjson=OK/OUTPUT_INVALID output_json:shape=OK/OUTPUT_INVALID+issues settled=ALREADY_COMPLETED/succeeded
rcip_invocation_fail ok=OK/EXECUTION_FAILED invocation:null=NULL_ARGUMENT/EXECUTION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_invocation_free ok=void/EXECUTION_FAILED invocation:null=void/EXECUTION_FAILED settled=void/succeeded
rcip_invocation_is_settled ok=false/EXECUTION_FAILED invocation:null=false/EXECUTION_FAILED settled=true/succeeded
rcip_invocation_report_progress ok=OK/EXECUTION_FAILED invocation:null=NULL_ARGUMENT/EXECUTION_FAILED progress:nan=INVALID_ARGUMENT/EXECUTION_FAILED total:nan=INVALID_ARGUMENT/EXECUTION_FAILED message:null=OK/EXECUTION_FAILED message:utf8=INVALID_UTF8/EXECUTION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_invocation_log ok=OK/EXECUTION_FAILED invocation:null=NULL_ARGUMENT/EXECUTION_FAILED level:null=NULL_ARGUMENT/EXECUTION_FAILED level:utf8=INVALID_UTF8/EXECUTION_FAILED logger:null=OK/EXECUTION_FAILED logger:utf8=INVALID_UTF8/EXECUTION_FAILED data_json:null=NULL_ARGUMENT/EXECUTION_FAILED data_json:utf8=INVALID_JSON/EXECUTION_FAILED data_json:notjson=INVALID_JSON/EXECUTION_FAILED data_json:shape=OK/EXECUTION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_invocation_create_message ok=UNSUPPORTED/EXECUTION_FAILED invocation:null=NULL_ARGUMENT/EXECUTION_FAILED params_json:null=NULL_ARGUMENT/EXECUTION_FAILED params_json:utf8=INVALID_JSON/EXECUTION_FAILED params_json:notjson=INVALID_JSON/EXECUTION_FAILED params_json:shape=UNSUPPORTED/EXECUTION_FAILED on_reply:null=NULL_ARGUMENT/EXECUTION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_invocation_ask ok=UNSUPPORTED/EXECUTION_FAILED invocation:null=NULL_ARGUMENT/EXECUTION_FAILED key:null=UNSUPPORTED/EXECUTION_FAILED key:utf8=INVALID_UTF8/EXECUTION_FAILED method:null=NULL_ARGUMENT/EXECUTION_FAILED method:utf8=INVALID_UTF8/EXECUTION_FAILED params_json:null=NULL_ARGUMENT/EXECUTION_FAILED params_json:utf8=INVALID_JSON/EXECUTION_FAILED params_json:notjson=INVALID_JSON/EXECUTION_FAILED params_json:shape=UNSUPPORTED/EXECUTION_FAILED on_reply:null=NULL_ARGUMENT/EXECUTION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_invocation_can_ask ok=false/EXECUTION_FAILED invocation:null=false/EXECUTION_FAILED method:null=false/EXECUTION_FAILED method:utf8=false/EXECUTION_FAILED settled=false/succeeded
rcip_invocation_elicit ok=UNSUPPORTED/EXECUTION_FAILED invocation:null=NULL_ARGUMENT/EXECUTION_FAILED message:null=NULL_ARGUMENT/EXECUTION_FAILED message:utf8=INVALID_UTF8/EXECUTION_FAILED requested_schema_json:null=NULL_ARGUMENT/EXECUTION_FAILED requested_schema_json:utf8=INVALID_JSON/EXECUTION_FAILED requested_schema_json:notjson=INVALID_JSON/EXECUTION_FAILED requested_schema_json:shape=UNSUPPORTED/EXECUTION_FAILED on_answer:null=NULL_ARGUMENT/EXECUTION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_policy_request_context ok=nonnull/POLICY_EVALUATION_FAILED request:null=null/POLICY_EVALUATION_FAILED settled=nonnull/succeeded
rcip_policy_request_principal ok=nonnull/POLICY_EVALUATION_FAILED request:null=null/POLICY_EVALUATION_FAILED settled=nonnull/succeeded
rcip_policy_request_invocation_id ok=nonnull/POLICY_EVALUATION_FAILED request:null=null/POLICY_EVALUATION_FAILED settled=nonnull/succeeded
rcip_policy_request_decide ok=OK/succeeded request:null=NULL_ARGUMENT/POLICY_EVALUATION_FAILED decision_json:null=NULL_ARGUMENT/POLICY_EVALUATION_FAILED decision_json:utf8=INVALID_JSON/POLICY_EVALUATION_FAILED decision_json:notjson=INVALID_JSON/POLICY_EVALUATION_FAILED decision_json:shape=INVALID_ARGUMENT/POLICY_EVALUATION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_policy_request_fail ok=OK/POLICY_EVALUATION_FAILED request:null=NULL_ARGUMENT/POLICY_EVALUATION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_policy_request_free ok=void/POLICY_EVALUATION_FAILED request:null=void/POLICY_EVALUATION_FAILED settled=void/succeeded
rcip_policy_request_capability_id ok=nonnull/POLICY_EVALUATION_FAILED request:null=null/POLICY_EVALUATION_FAILED settled=nonnull/succeeded
rcip_policy_request_effect ok=nonnull/POLICY_EVALUATION_FAILED request:null=null/POLICY_EVALUATION_FAILED settled=nonnull/succeeded
rcip_policy_request_is_confirmed ok=false/POLICY_EVALUATION_FAILED request:null=false/POLICY_EVALUATION_FAILED settled=false/succeeded
rcip_policy_request_phase ok=nonnull/POLICY_EVALUATION_FAILED request:null=null/POLICY_EVALUATION_FAILED settled=nonnull/succeeded
rcip_policy_request_scope_is_active ok=true/POLICY_EVALUATION_FAILED request:null=false/POLICY_EVALUATION_FAILED scope_id:null=false/POLICY_EVALUATION_FAILED scope_id:utf8=false/POLICY_EVALUATION_FAILED settled=true/succeeded
rcip_policy_request_primary_scope_id ok=nonnull/POLICY_EVALUATION_FAILED request:null=null/POLICY_EVALUATION_FAILED settled=nonnull/succeeded
rcip_policy_request_input ok=nonnull/POLICY_EVALUATION_FAILED request:null=null/POLICY_EVALUATION_FAILED settled=nonnull/succeeded
rcip_policy_request_capability ok=nonnull/POLICY_EVALUATION_FAILED request:null=null/POLICY_EVALUATION_FAILED settled=nonnull/succeeded
rcip_policy_request_allow ok=OK/succeeded request:null=NULL_ARGUMENT/POLICY_EVALUATION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_policy_request_deny ok=OK/POLICY_DENIED request:null=NULL_ARGUMENT/POLICY_EVALUATION_FAILED reason:null=OK/POLICY_DENIED reason:utf8=INVALID_UTF8/POLICY_EVALUATION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_policy_request_confirm ok=OK/confirmation_required request:null=NULL_ARGUMENT/POLICY_EVALUATION_FAILED reason:null=OK/confirmation_required reason:utf8=INVALID_UTF8/POLICY_EVALUATION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_policy_request_decide_default ok=OK/succeeded request:null=NULL_ARGUMENT/POLICY_EVALUATION_FAILED settled=ALREADY_COMPLETED/succeeded
rcip_client_invoke_pending ok=OK/succeeded client:null=NULL_ARGUMENT capability_id:null=NULL_ARGUMENT capability_id:utf8=INVALID_UTF8 input_json:null=NULL_ARGUMENT input_json:utf8=OK/INPUT_INVALID input_json:notjson=OK/INPUT_INVALID input_json:shape=OK/INPUT_INVALID+issues invocation_id:null=OK/succeeded invocation_id:utf8=INVALID_UTF8 cancel_token:null=OK/succeeded pending_out:null=NULL_ARGUMENT
rcip_host_resolve_confirmation_pending ok=OK/succeeded host:null=NULL_ARGUMENT confirmation_id:null=NULL_ARGUMENT confirmation_id:utf8=INVALID_UTF8 pending_out:null=NULL_ARGUMENT
rcip_client_preflight_pending ok=OK/ready client:null=NULL_ARGUMENT capability_ids:null=NULL_ARGUMENT capability_ids[0]:null=NULL_ARGUMENT capability_ids[0]:utf8=INVALID_UTF8 input_jsons:null=NULL_ARGUMENT input_jsons[0]:null=NULL_ARGUMENT input_jsons[0]:utf8=OK/INPUT_INVALID input_jsons[0]:notjson=OK/INPUT_INVALID input_jsons[0]:shape=OK/INPUT_INVALID+issues count:zero=PREFLIGHT_BATCH_INVALID count:max=PREFLIGHT_BATCH_INVALID cancel_token:null=OK/ready pending_out:null=NULL_ARGUMENT
rcip_pending_wait ok=OK/succeeded pending:null=NULL_ARGUMENT timeout_ms:zero=OK/succeeded timeout_ms:max=OK/succeeded outcome_json_out:null=NULL_ARGUMENT settled=ALREADY_USED
rcip_pending_is_ready ok=true pending:null=false settled=false
rcip_pending_on_ready ok=OK/succeeded pending:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT settled=ALREADY_USED
rcip_pending_free ok=void pending:null=void settled=void
rcip_record_parse ok=OK record_json:null=NULL_ARGUMENT record_json:utf8=INVALID_JSON record_json:notjson=INVALID_JSON record_json:shape=INVALID_ARGUMENT record_out:null=NULL_ARGUMENT
rcip_record_status ok=nonnull record:null=null
rcip_record_invocation_id ok=nonnull record:null=null
rcip_record_capability_id ok=nonnull record:null=null
rcip_record_error_code ok=nonnull record:null=null
rcip_record_error_message ok=nonnull record:null=null
rcip_record_confirmation_id ok=nonnull record:null=null
rcip_record_output ok=nonnull record:null=null
rcip_record_phase ok=nonnull record:null=null
rcip_record_notice_kind ok=nonnull record:null=null
rcip_record_reason ok=nonnull record:null=null
rcip_record_issue_count ok=1 record:null=0
rcip_record_issue_path ok=nonnull record:null=null index:zero=nonnull index:max=null
rcip_record_issue_keyword ok=nonnull record:null=null index:zero=nonnull index:max=null
rcip_record_issue_message ok=nonnull record:null=null index:zero=nonnull index:max=null
rcip_record_expires_at ok=true record:null=false expires_at_ms_out:null=false
rcip_record_entry_count ok=1 record:null=0
rcip_record_entry ok=nonnull record:null=null index:zero=nonnull index:max=null
rcip_record_free ok=void record:null=void
rcip_policy_request_is_settled ok=false/POLICY_EVALUATION_FAILED request:null=false/POLICY_EVALUATION_FAILED settled=true/succeeded
rcip_mcp_session_new ok=OK runtime:null=NULL_ARGUMENT options_json:null=OK options_json:utf8=INVALID_JSON options_json:notjson=INVALID_JSON options_json:shape=INVALID_ARGUMENT on_message:null=OK session_out:null=NULL_ARGUMENT
rcip_mcp_session_receive ok=OK session:null=NULL_ARGUMENT message_json:null=NULL_ARGUMENT message_json:utf8=OK message_json:notjson=OK message_json:shape=OK
rcip_mcp_session_serve_stdio ok=OK session:null=NULL_ARGUMENT
rcip_mcp_session_stats ok=OK session:null=NULL_ARGUMENT json_out:null=NULL_ARGUMENT
rcip_mcp_session_free ok=void session:null=void
rcip_mcp_session_receive_with_headers ok=OK session:null=NULL_ARGUMENT message_json:null=NULL_ARGUMENT message_json:utf8=OK message_json:notjson=OK message_json:shape=OK headers_json:null=OK headers_json:utf8=INVALID_JSON headers_json:notjson=INVALID_JSON headers_json:shape=INVALID_ARGUMENT
rcip_mcp_session_set_request_runtimes ok=OK session:null=NULL_ARGUMENT factory:null=NULL_ARGUMENT
rcip_mcp_request_setup_method ok=nonnull setup:null=null
rcip_mcp_request_setup_meta ok=nonnull setup:null=null
rcip_mcp_request_setup_headers ok=nonnull setup:null=null
rcip_mcp_request_setup_header ok=nonnull setup:null=null name:null=null name:utf8=null
rcip_mcp_request_setup_accept ok=OK setup:null=NULL_ARGUMENT runtime:null=NULL_ARGUMENT
rcip_mcp_session_setup_session_id ok=nonnull setup:null=null
rcip_mcp_session_setup_initialize_params ok=nonnull setup:null=null
rcip_mcp_session_setup_client_name ok=nonnull setup:null=null
rcip_mcp_session_setup_principal ok=null setup:null=null
rcip_mcp_session_setup_header ok=nonnull setup:null=null name:null=null name:utf8=null
rcip_mcp_session_setup_accept ok=OK setup:null=NULL_ARGUMENT runtime:null=NULL_ARGUMENT
rcip_mcp_server_new ok=OK catalog:null=NULL_ARGUMENT address:null=NULL_ARGUMENT address:utf8=INVALID_UTF8 options_json:null=OK options_json:utf8=INVALID_JSON options_json:notjson=INVALID_JSON options_json:shape=INVALID_ARGUMENT factory:null=NULL_ARGUMENT server_out:null=NULL_ARGUMENT
rcip_mcp_server_url ok=OK server:null=NULL_ARGUMENT url_out:null=NULL_ARGUMENT
rcip_mcp_server_start ok=OK server:null=NULL_ARGUMENT
rcip_mcp_server_serve ok=OK server:null=NULL_ARGUMENT
rcip_mcp_server_shutdown ok=OK server:null=NULL_ARGUMENT deadline_ms:zero=OK deadline_ms:max=OK
rcip_mcp_server_drain ok=OK server:null=NULL_ARGUMENT deadline_ms:zero=OK deadline_ms:max=OK
rcip_mcp_server_set_access_log ok=OK server:null=NULL_ARGUMENT callback:null=OK
rcip_mcp_server_access_log_dropped ok=0 server:null=0
rcip_mcp_server_set_token_verifier ok=OK server:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT
rcip_mcp_server_sessions ok=OK server:null=NULL_ARGUMENT json_out:null=NULL_ARGUMENT
rcip_mcp_server_session_find ok=OK server:null=NULL_ARGUMENT session_id:null=NULL_ARGUMENT session_id:utf8=INVALID_UTF8 session_out:null=NULL_ARGUMENT
rcip_mcp_server_session_host ok=nonnull session:null=null
rcip_mcp_server_session_client ok=nonnull session:null=null
rcip_mcp_server_session_user_data ok=nonnull session:null=null
rcip_mcp_server_session_free ok=void session:null=void
rcip_mcp_server_free ok=void server:null=void
rcip_result_str ok=nonnull code:max=unknown
rcip_last_error_message ok=nonnull
rcip_runtime_builder_new ok=OK catalog:null=NULL_ARGUMENT builder_out:null=NULL_ARGUMENT
rcip_runtime_builder_set_confirmation_ttl_ms ok=OK builder:null=NULL_ARGUMENT ttl_ms:zero=INVALID_ARGUMENT ttl_ms:max=INVALID_ARGUMENT
rcip_runtime_builder_set_limits ok=OK builder:null=NULL_ARGUMENT max_payload_len:zero=OK max_payload_len:max=OK max_depth:zero=OK max_depth:max=OK
rcip_runtime_builder_set_validation_budget ok=OK builder:null=NULL_ARGUMENT floor:zero=OK floor:max=OK per_pair:zero=OK per_pair:max=OK
rcip_runtime_builder_set_validation_issue_limit ok=OK builder:null=NULL_ARGUMENT max_issues:zero=OK max_issues:max=OK max_bytes:zero=OK max_bytes:max=OK
rcip_runtime_builder_set_policy ok=OK builder:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT
rcip_runtime_builder_set_confirmation_callback ok=OK builder:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT
rcip_runtime_builder_add_event_observer ok=OK builder:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT
rcip_runtime_builder_set_progress_observer ok=OK builder:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT
rcip_runtime_builder_set_clock ok=OK builder:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT
rcip_runtime_builder_set_id_generator ok=OK builder:null=NULL_ARGUMENT callback:null=NULL_ARGUMENT
rcip_runtime_builder_set_manual_timers ok=OK builder:null=NULL_ARGUMENT
rcip_runtime_builder_bind ok=OK builder:null=NULL_ARGUMENT capability_id:null=NULL_ARGUMENT capability_id:utf8=INVALID_UTF8 handler:null=NULL_ARGUMENT availability:null=OK
rcip_runtime_builder_build ok=OK builder:null=NULL_ARGUMENT runtime_out:null=NULL_ARGUMENT
rcip_runtime_builder_free ok=void builder:null=void
rcip_runtime_client ok=nonnull runtime:null=null
rcip_runtime_host ok=nonnull runtime:null=null
rcip_runtime_next_deadline ok=OK runtime:null=NULL_ARGUMENT has_deadline_out:null=NULL_ARGUMENT deadline_ms_out:null=NULL_ARGUMENT
rcip_runtime_run_due_timers ok=OK runtime:null=NULL_ARGUMENT
rcip_runtime_stats ok=OK runtime:null=NULL_ARGUMENT stats_out:null=NULL_ARGUMENT
rcip_runtime_close ok=OK runtime:null=NULL_ARGUMENT
rcip_runtime_free ok=void runtime:null=void
rcip_schema_new ok=OK schema_json:null=NULL_ARGUMENT schema_json:utf8=INVALID_JSON schema_json:notjson=INVALID_JSON schema_json:shape=INVALID_ARGUMENT schema_out:null=NULL_ARGUMENT
rcip_schema_validate ok=OK/valid schema:null=NULL_ARGUMENT instance_json:null=NULL_ARGUMENT instance_json:utf8=INVALID_JSON instance_json:notjson=INVALID_JSON instance_json:shape=OK/invalid result_out:null=NULL_ARGUMENT
rcip_schema_free ok=void schema:null=void
rcip_availability_set ok=OK sink:null=NULL_ARGUMENT reason_code:null=OK reason_code:utf8=INVALID_UTF8 reason:null=OK reason:utf8=INVALID_UTF8
rcip_string_sink_set ok=OK sink:null=NULL_ARGUMENT value:null=NULL_ARGUMENT value:utf8=INVALID_UTF8
rcip_snapshot_json ok=nonnull snapshot:null=null settled=nonnull
rcip_snapshot_revision ok=revision snapshot:null=0 settled=revision
rcip_snapshot_free ok=void snapshot:null=void settled=void
rcip_string_free ok=void string:null=void
rcip_abi_version ok=RCIP_ABI_VERSION
rcip_version ok=nonnull
";

// ----- the header -----------------------------------------------------------

#[derive(Debug)]
struct Param {
    ty: String,
    name: String,
}

#[derive(Debug)]
struct Func {
    name: String,
    params: Vec<Param>,
}

/// Every function declared in include/rcip.h (one declaration per line,
/// as cbindgen writes them).
fn header_functions() -> Vec<Func> {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("include/rcip.h");
    let header = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    for line in header.lines() {
        let line = line.trim();
        if line.starts_with('*') || line.starts_with("/*") || line.starts_with("typedef") || line.starts_with('#') {
            continue;
        }
        let Some(open) = line.find('(') else { continue };
        if !line.ends_with(");") {
            continue;
        }
        let before = &line[..open];
        let Some(name) = before.split([' ', '*']).next_back() else {
            continue;
        };
        if !name.starts_with("rcip_") {
            continue;
        }
        let inner = &line[open + 1..line.len() - 2];
        let params = if inner.trim() == "void" {
            Vec::new()
        } else {
            inner
                .split(',')
                .map(|p| {
                    let p = p.trim();
                    let split = p.rfind([' ', '*']).unwrap();
                    Param {
                        ty: p[..=split].trim().to_string(),
                        name: p[split + 1..].to_string(),
                    }
                })
                .collect()
        };
        out.push(Func {
            name: name.to_string(),
            params,
        });
    }
    out
}

const USED_UP_HANDLES: [&str; 7] = [
    "rcip_pending",
    "rcip_binding",
    "rcip_invocation",
    "rcip_policy_request",
    "rcip_subscription",
    "rcip_cancel_token",
    "rcip_snapshot",
];

/// The cases generated from a signature.
fn cases(f: &Func) -> Vec<String> {
    let mut out = vec!["ok".to_string()];
    for p in &f.params {
        let (ty, name) = (p.ty.as_str(), p.name.as_str());
        if name == "user_data" || ty == "rcip_user_data_free_callback" {
            continue;
        }
        if ty == "const char *const *" {
            out.push(format!("{name}:null"));
            out.push(format!("{name}[0]:null"));
            out.push(format!("{name}[0]:utf8"));
            if name.contains("json") {
                out.push(format!("{name}[0]:notjson"));
                out.push(format!("{name}[0]:shape"));
            }
        } else if ty == "const char *" {
            out.push(format!("{name}:null"));
            out.push(format!("{name}:utf8"));
            if name.ends_with("_json") {
                out.push(format!("{name}:notjson"));
                out.push(format!("{name}:shape"));
            }
        } else if ty.contains('*') || ty.ends_with("_callback") {
            out.push(format!("{name}:null"));
        } else if ty == "uint64_t" || ty == "size_t" {
            out.push(format!("{name}:zero"));
            out.push(format!("{name}:max"));
        } else if ty == "uint32_t" {
            out.push(format!("{name}:max"));
        } else if ty == "double" {
            out.push(format!("{name}:nan"));
        } else {
            assert_eq!(ty, "bool", "{}: no cases for parameter type {ty}", f.name);
        }
    }
    if let Some(first) = f.params.first() {
        if USED_UP_HANDLES
            .iter()
            .any(|h| first.ty.trim_start_matches("const ").trim_start_matches("struct ") == format!("{h} *"))
        {
            out.push("settled".to_string());
        }
    }
    out
}

fn expected() -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for line in EXPECTED.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let name = words.next().unwrap().to_string();
        let cells = words
            .map(|w| {
                let (case, want) = w.split_once('=').unwrap_or_else(|| panic!("{name}: bad cell {w}"));
                (case.to_string(), want.to_string())
            })
            .collect();
        assert!(out.insert(name.clone(), cells).is_none(), "{name} listed twice");
    }
    out
}

// ----- fixtures -------------------------------------------------------------

const CATALOG: &str = r#"{"protocolVersion": "1.0",
 "application": {"id": "app", "name": "App", "description": "Test."},
 "scopes": [{"id": "main", "title": "Main", "description": "Main view."}],
 "capabilities": [
  {"id": "items.list", "title": "List", "description": "Lists.", "scopeIds": ["main"], "effect": "read",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "items.hold", "title": "Hold", "description": "Held by its handler.", "scopeIds": [], "effect": "read",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
  {"id": "items.purge", "title": "Purge", "description": "Deletes.", "scopeIds": [], "effect": "destructive",
   "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}]}"#;

const BAD_UTF8: &[u8] = b"items.\xff\xfe\0";

fn catalog() -> *const rcip_catalog {
    static CAT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CAT.get_or_init(|| {
        let mut cat = ptr::null_mut();
        let text = CString::new(CATALOG).unwrap();
        assert_eq!(unsafe { rcip_catalog_new(text.as_ptr(), &mut cat) }, rcip_result::Ok);
        cat as usize
    }) as *const rcip_catalog
}

type SinkJob = Box<dyn FnOnce(*mut c_void)>;

thread_local! {
    /// Outcomes and reports delivered in the current case.
    static DELIVERED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    /// user_data_free calls in the current case.
    static RELEASED: Cell<u32> = const { Cell::new(0) };
    static HELD_POLICIES: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    static HELD_INVOCATIONS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    static HOLD_POLICY: Cell<bool> = const { Cell::new(false) };
    /// A job run inside the availability callback or id generator, with its sink.
    static SINK_JOB: RefCell<Option<SinkJob>> = const { RefCell::new(None) };
}

unsafe extern "C" fn deliver(_: *mut c_void, json: *const c_char) {
    let s = CStr::from_ptr(json).to_str().unwrap().to_string();
    DELIVERED.with(|d| d.borrow_mut().push(s));
}

unsafe extern "C" fn release(_: *mut c_void) {
    RELEASED.with(|r| r.set(r.get() + 1));
}

unsafe extern "C" fn complete(_: *mut c_void, inv: *mut rcip_invocation) {
    assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
    rcip_invocation_free(inv);
}

unsafe extern "C" fn hold(_: *mut c_void, inv: *mut rcip_invocation) {
    HELD_INVOCATIONS.with(|h| h.borrow_mut().push(inv as usize));
}

unsafe extern "C" fn policy(_: *mut c_void, req: *mut rcip_policy_request) {
    if HOLD_POLICY.with(|h| h.get()) {
        HELD_POLICIES.with(|h| h.borrow_mut().push(req as usize));
        return;
    }
    let ctx = CStr::from_ptr(rcip_policy_request_context(req)).to_str().unwrap();
    let d = if ctx.contains(r#""effect":"destructive""#) && ctx.contains(r#""confirmed":false"#) {
        cr#"{"decision": "confirm"}"#
    } else {
        cr#"{"decision": "allow"}"#
    };
    assert_eq!(rcip_policy_request_decide(req, d.as_ptr()), rcip_result::Ok);
    rcip_policy_request_free(req);
}

unsafe extern "C" fn availability(_: *mut c_void, sink: *mut rcip_availability_sink) -> i32 {
    if let Some(job) = SINK_JOB.with(|j| j.borrow_mut().take()) {
        job(sink.cast());
    }
    rcip_availability_set(sink, true, ptr::null(), ptr::null());
    0
}

unsafe extern "C" fn ids(_: *mut c_void, _: *const c_char, sink: *mut rcip_string_sink) -> i32 {
    if let Some(job) = SINK_JOB.with(|j| j.borrow_mut().take()) {
        job(sink.cast());
    }
    1
}

unsafe extern "C" fn noop_subscriber(_: *mut c_void, _: u64) {}
unsafe extern "C" fn noop_cancel(_: *mut c_void) {}
unsafe extern "C" fn noop_json(_: *mut c_void, _: *const c_char) {}
unsafe extern "C" fn noop_clock(_: *mut c_void) -> i64 {
    0
}

/// A runtime with a host policy (held on request), an id generator and an
/// availability check that run a sink job, `items.list` bound inline,
/// `items.hold` bound to a handler that keeps its invocation, `items.purge`
/// bound inline.
struct Fx {
    runtime: *mut rcip_runtime,
    bindings: Vec<*mut rcip_binding>,
}

impl Fx {
    unsafe fn new() -> Fx {
        let mut b = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_new(catalog(), &mut b), rcip_result::Ok);
        assert_eq!(rcip_runtime_builder_set_manual_timers(b, true), rcip_result::Ok);
        assert_eq!(
            rcip_runtime_builder_set_policy(b, Some(policy), ptr::null_mut(), None),
            rcip_result::Ok
        );
        assert_eq!(
            rcip_runtime_builder_set_id_generator(b, Some(ids), ptr::null_mut(), None),
            rcip_result::Ok
        );
        let mut runtime = ptr::null_mut();
        assert_eq!(rcip_runtime_builder_build(b, &mut runtime), rcip_result::Ok);
        let mut fx = Fx {
            runtime,
            bindings: Vec::new(),
        };
        for (cap, h, a) in [
            (
                c"items.list",
                complete as unsafe extern "C" fn(_, _),
                Some(availability as unsafe extern "C" fn(_, _) -> i32),
            ),
            (c"items.hold", hold, None),
            (c"items.purge", complete, None),
        ] {
            let mut out = ptr::null_mut();
            assert_eq!(
                rcip_host_bind(fx.host(), cap.as_ptr(), Some(h), a, ptr::null_mut(), None, &mut out),
                rcip_result::Ok
            );
            fx.bindings.push(out);
        }
        fx
    }
    fn host(&self) -> *const rcip_host {
        // Safety: the fixture's runtime, alive until it is dropped.
        unsafe { rcip_runtime_host(self.runtime) }
    }
    fn client(&self) -> *const rcip_client {
        // Safety: the fixture's runtime, alive until it is dropped.
        unsafe { rcip_runtime_client(self.runtime) }
    }
    /// A held policy request for an invocation of `items.list`.
    unsafe fn policy_request(&self) -> *mut rcip_policy_request {
        HOLD_POLICY.with(|h| h.set(true));
        assert_eq!(
            rcip_client_invoke(
                self.client(),
                c"items.list".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(deliver),
                ptr::null_mut(),
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        HOLD_POLICY.with(|h| h.set(false));
        HELD_POLICIES.with(|h| h.borrow_mut().pop()).unwrap() as *mut rcip_policy_request
    }
    /// A running invocation of `items.hold`.
    unsafe fn invocation(&self) -> *mut rcip_invocation {
        assert_eq!(
            rcip_client_invoke(
                self.client(),
                c"items.hold".as_ptr(),
                c"{\"a\": 1}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(deliver),
                ptr::null_mut(),
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        HELD_INVOCATIONS.with(|h| h.borrow_mut().pop()).unwrap() as *mut rcip_invocation
    }
    /// The id of a pending confirmation (of `items.purge`).
    unsafe fn pending_confirmation(&self) -> CString {
        assert_eq!(
            rcip_client_invoke(
                self.client(),
                c"items.purge".as_ptr(),
                c"{}".as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(deliver),
                ptr::null_mut(),
                None,
                ptr::null_mut()
            ),
            rcip_result::Ok
        );
        let o: serde_json::Value = serde_json::from_str(&DELIVERED.with(|d| d.borrow_mut().pop()).unwrap()).unwrap();
        CString::new(o["confirmation"]["id"].as_str().unwrap()).unwrap()
    }
    /// The runtime alone, for a consumer that takes it over (its bindings
    /// are released with it; their handles are freed here).
    unsafe fn runtime_only(self) -> *mut rcip_runtime {
        for b in self.bindings {
            rcip_binding_free(b);
        }
        self.runtime
    }
    unsafe fn free(self) {
        rcip_runtime_free(self.runtime);
        for b in self.bindings {
            rcip_binding_free(b);
        }
    }
}

/// Arguments of one case: each accessor gives the good value unless the
/// case targets that parameter.
struct Args<'a> {
    case: &'a str,
    keep: Vec<CString>,
    /// Pointer out-parameters, checked for NULL after a failing call.
    outs: Vec<*mut *mut c_void>,
}

impl<'a> Args<'a> {
    fn targets(&self, name: &str) -> Option<&'a str> {
        let (p, kind) = self.case.split_once(':')?;
        (p == name).then_some(kind)
    }
    fn null<T>(&self, name: &str, good: *const T) -> *const T {
        if self.targets(name) == Some("null") {
            ptr::null()
        } else {
            good
        }
    }
    fn null_mut<T>(&self, name: &str, good: *mut T) -> *mut T {
        if self.targets(name) == Some("null") {
            ptr::null_mut()
        } else {
            good
        }
    }
    fn cb<T>(&self, name: &str, good: T) -> Option<T> {
        if self.targets(name) == Some("null") {
            None
        } else {
            Some(good)
        }
    }
    /// A string: NULL, invalid UTF-8, not JSON, wrong shape, or `good`.
    fn text(&mut self, name: &str, good: &str) -> *const c_char {
        let v: Vec<u8> = match self.targets(name) {
            Some("null") => return ptr::null(),
            Some("utf8") => BAD_UTF8[..BAD_UTF8.len() - 1].to_vec(),
            Some("notjson") => b"{not json".to_vec(),
            Some("shape") => b"[]".to_vec(),
            _ => good.as_bytes().to_vec(),
        };
        let c = CString::new(v).unwrap();
        let p = c.as_ptr();
        self.keep.push(c);
        p
    }
    fn num64(&self, name: &str, good: u64) -> u64 {
        match self.targets(name) {
            Some("zero") => 0,
            Some("max") => u64::MAX,
            _ => good,
        }
    }
    fn real(&self, name: &str, good: f64) -> f64 {
        match self.targets(name) {
            Some("nan") => f64::NAN,
            _ => good,
        }
    }
    fn size(&self, name: &str, good: usize) -> usize {
        match self.targets(name) {
            Some("zero") => 0,
            Some("max") => usize::MAX,
            _ => good,
        }
    }
    /// A pointer out-parameter, pre-filled with a sentinel.
    fn out<T>(&mut self, name: &str) -> *mut *mut T {
        if self.targets(name) == Some("null") {
            return ptr::null_mut();
        }
        let slot: *mut *mut c_void = Box::into_raw(Box::new(ptr::dangling_mut::<c_void>()));
        self.outs.push(slot);
        slot.cast()
    }
    fn settled(&self) -> bool {
        self.case == "settled"
    }
}

// ---- the per-request runtime factory's drivers ----------------------------

type RequestJob = Box<dyn FnOnce(*mut rcip_mcp_request_setup) -> (Result<rcip_result, String>, bool)>;

thread_local! {
    /// A job run inside the request factory (the session has no workers:
    /// the factory runs on the sweep's thread), and its answer.
    static REQUEST_JOB: RefCell<Option<RequestJob>> = const { RefCell::new(None) };
    static REQUEST_ANSWER: RefCell<Option<Result<rcip_result, String>>> = const { RefCell::new(None) };
}

/// Runs the job set for it with the live setup, then accepts a runtime
/// unless the job did.
unsafe extern "C" fn run_request_job(_: *mut c_void, setup: *mut rcip_mcp_request_setup) -> i32 {
    let Some(job) = REQUEST_JOB.with(|j| j.borrow_mut().take()) else {
        return 1;
    };
    let (answer, accepted) = job(setup);
    REQUEST_ANSWER.with(|a| *a.borrow_mut() = Some(answer));
    if accepted {
        return 0;
    }
    let rc = rcip_mcp_request_setup_accept(setup, Fx::new().runtime_only(), ptr::null_mut(), None);
    i32::from(rc != rcip_result::Ok)
}

/// A session over `runtime` that serves the modern era inline (no
/// workers): every reply before `receive` returns.
unsafe fn modern_session(runtime: *const rcip_runtime) -> *mut rcip_mcp_session {
    let mut session = ptr::null_mut();
    assert_eq!(
        rcip_mcp_session_new(
            runtime,
            c"{\"workers\": 0, \"eras\": \"both\"}".as_ptr(),
            Some(noop_json),
            ptr::null_mut(),
            None,
            &mut session
        ),
        rcip_result::Ok
    );
    session
}

const MODERN_LIST: &CStr = c"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}";

/// Runs `job` inside a per-request factory with the live setup of a
/// modern `tools/list` that carries the header `x-sweep: 1`.
unsafe fn with_request_setup(
    runtime: *const rcip_runtime,
    job: impl FnOnce(*mut rcip_mcp_request_setup) -> (Result<rcip_result, String>, bool) + 'static,
) -> Result<rcip_result, String> {
    REQUEST_JOB.with(|j| *j.borrow_mut() = Some(Box::new(job)));
    let session = modern_session(runtime);
    assert_eq!(
        rcip_mcp_session_set_request_runtimes(session, Some(run_request_job), ptr::null_mut(), None),
        rcip_result::Ok
    );
    assert_eq!(
        rcip_mcp_session_receive_with_headers(session, MODERN_LIST.as_ptr(), c"{\"X-Sweep\": \"1\"}".as_ptr()),
        rcip_result::Ok
    );
    rcip_mcp_session_free(session);
    REQUEST_ANSWER.with(|a| a.borrow_mut().take()).expect("the factory ran")
}

// ---- the MCP HTTP server's drivers ------------------------------------

unsafe extern "C" fn refuse_sessions(_: *mut c_void, _: *mut rcip_mcp_session_setup) -> i32 {
    1
}

unsafe extern "C" fn sweep_access(_: *mut c_void, _: *const c_char) {}

unsafe extern "C" fn sweep_token(_: *mut c_void, _: *const c_char, _: *mut rcip_string_sink) -> i32 {
    2
}

type SetupJob = Box<dyn FnOnce(*mut rcip_mcp_session_setup) -> (Result<rcip_result, String>, bool) + Send>;

static SETUP_JOB: std::sync::Mutex<Option<SetupJob>> = std::sync::Mutex::new(None);
static SETUP_ANSWER: std::sync::Mutex<Option<(Result<rcip_result, String>, bool)>> = std::sync::Mutex::new(None);

/// Runs the job set for it with the live setup, then accepts a runtime
/// unless the job did.
unsafe extern "C" fn run_setup_job(_: *mut c_void, setup: *mut rcip_mcp_session_setup) -> i32 {
    let job = SETUP_JOB.lock().unwrap().take();
    let Some(job) = job else { return 1 };
    let (answer, accepted) = job(setup);
    *SETUP_ANSWER.lock().unwrap() = Some((answer, accepted));
    if accepted {
        return 0;
    }
    let rc = rcip_mcp_session_setup_accept(setup, Fx::new().runtime_only(), ptr::null_mut(), None);
    i32::from(rc != rcip_result::Ok)
}

unsafe fn new_server(
    factory: unsafe extern "C" fn(*mut c_void, *mut rcip_mcp_session_setup) -> i32,
) -> *mut rcip_mcp_server {
    let mut server = ptr::null_mut();
    assert_eq!(
        rcip_mcp_server_new(
            catalog(),
            c"127.0.0.1:0".as_ptr(),
            c"{\"forwardHeaders\": [\"x-sweep\"]}".as_ptr(),
            Some(factory),
            ptr::null_mut(),
            None,
            &mut server
        ),
        rcip_result::Ok
    );
    server
}

/// Sends an `initialize` to `server` and returns its session id, if any.
unsafe fn initialize(server: *mut rcip_mcp_server) -> Option<String> {
    use std::io::{Read, Write};
    let mut url = ptr::null_mut();
    assert_eq!(rcip_mcp_server_url(server, &mut url), rcip_result::Ok);
    let url_text = CStr::from_ptr(url).to_str().unwrap().to_string();
    rcip_string_free(url);
    let addr = url_text
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"sweep","version":"1"}}}"#;
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json\r\nX-Sweep: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .map(|s| s.trim().to_string())
}

/// Runs `job` inside a session factory with the live setup.
unsafe fn with_setup(
    job: impl FnOnce(*mut rcip_mcp_session_setup) -> (Result<rcip_result, String>, bool) + Send + 'static,
) -> (Result<rcip_result, String>, bool) {
    *SETUP_JOB.lock().unwrap() = Some(Box::new(job));
    let server = new_server(run_setup_job);
    assert_eq!(rcip_mcp_server_start(server), rcip_result::Ok);
    initialize(server);
    rcip_mcp_server_free(server);
    SETUP_ANSWER.lock().unwrap().take().expect("the factory ran")
}

unsafe extern "C" fn accept_session(_: *mut c_void, setup: *mut rcip_mcp_session_setup) -> i32 {
    let rc = rcip_mcp_session_setup_accept(setup, Fx::new().runtime_only(), ptr::dangling_mut::<c_void>(), None);
    i32::from(rc != rcip_result::Ok)
}

/// A started server with one live session, and a handle on it.
unsafe fn live_session() -> (*mut rcip_mcp_server, *mut rcip_mcp_server_session) {
    let server = new_server(accept_session);
    assert_eq!(rcip_mcp_server_start(server), rcip_result::Ok);
    let id = CString::new(initialize(server).expect("a session")).unwrap();
    let mut session = ptr::null_mut();
    assert_eq!(
        rcip_mcp_server_session_find(server, id.as_ptr(), &mut session),
        rcip_result::Ok
    );
    (server, session)
}

fn name(rc: rcip_result) -> String {
    format!("{rc:?}")
        .chars()
        .flat_map(|c| {
            if c.is_uppercase() {
                vec!['_', c]
            } else {
                vec![c.to_ascii_uppercase()]
            }
        })
        .collect::<String>()
        .trim_start_matches('_')
        .to_string()
        .replace("U_T_F8", "UTF8")
}

/// Runs `f` with standard input at its end (`/dev/null`), so a stdio
/// server loop returns at once.
fn with_stdin_at_end<T>(f: impl FnOnce() -> T) -> T {
    use std::os::fd::AsRawFd;
    let null = std::fs::File::open("/dev/null").unwrap();
    // Safety: plain descriptor duplication; fd 0 is restored below.
    let saved = unsafe { libc::dup(0) };
    assert!(saved >= 0);
    unsafe { libc::dup2(null.as_raw_fd(), 0) };
    let r = f();
    unsafe {
        libc::dup2(saved, 0);
        libc::close(saved);
    }
    r
}

/// A record with every field the record accessors read.
const SWEEP_RECORD: &CStr = cr#"{"status":"failed","invocationId":"i1","capabilityId":"items.list",
"error":{"code":"INPUT_INVALID","message":"m","validationIssues":[{"instancePath":"/a","keyword":"type","message":"x"}]},
"confirmation":{"id":"k","expiresAt":5},"output":{},"phase":"failed","event":"closed","reason":"approved",
"outcomes":[{"status":"ready","capabilityId":"items.list","effect":"read"}]}"#;

/// Takes the outcome a pending handle got (polling: the fixture settles
/// inline), as `delivered` describes it, and frees the handle.
unsafe fn take_pending(p: *mut rcip_pending) -> Option<String> {
    let mut json = ptr::null_mut();
    let rc = rcip_pending_wait(p, 0, &mut json);
    rcip_pending_free(p);
    if rc != rcip_result::Ok {
        return Some(name(rc));
    }
    DELIVERED.with(|d| d.borrow_mut().push(CStr::from_ptr(json).to_str().unwrap().into()));
    rcip_string_free(json);
    delivered()
}

unsafe fn ptr_res<T>(p: *const T) -> String {
    if p.is_null() { "null" } else { "nonnull" }.to_string()
}

/// The first delivered outcome's status or error code (`+issues` when it
/// has validation issues), or a report's first entry.
fn delivered() -> Option<String> {
    let d = DELIVERED.with(|d| std::mem::take(&mut *d.borrow_mut()));
    let first = d.first()?;
    let v: serde_json::Value = serde_json::from_str(first).unwrap();
    let v = if v.get("outcomes").is_some() {
        v["outcomes"][0].clone()
    } else {
        v
    };
    Some(describe(&v))
}

fn describe(v: &serde_json::Value) -> String {
    match v["error"]["code"].as_str() {
        Some(code) if v["error"].get("validationIssues").is_some() => format!("{code}+issues"),
        Some(code) => code.to_string(),
        None => v["status"].as_str().unwrap().to_string(),
    }
}

/// Runs one case of one function; returns what it answered (and what
/// followed), after checking the failure conventions.
unsafe fn run(f: &str, case: &str) -> String {
    DELIVERED.with(|d| d.borrow_mut().clear());
    RELEASED.with(|r| r.set(0));
    let mut a = Args {
        case,
        keep: Vec::new(),
        outs: Vec::new(),
    };
    let fx = Fx::new();
    let mut followed: Option<String> = None;
    let rc: Result<rcip_result, String> = match f {
        "rcip_binding_unbind" | "rcip_binding_set_revision" | "rcip_binding_is_installed" | "rcip_binding_free" => {
            let b = fx.bindings[0];
            if a.settled() {
                rcip_runtime_free(fx.runtime);
            }
            let b = a.null_mut("binding", b);
            let r = match f {
                "rcip_binding_unbind" => Ok(rcip_binding_unbind(b)),
                "rcip_binding_set_revision" => Ok(rcip_binding_set_revision(b, a.num64("revision", 5))),
                "rcip_binding_is_installed" => Err(rcip_binding_is_installed(b).to_string()),
                _ => {
                    rcip_binding_free(b);
                    Err("void".into())
                }
            };
            let mut fx = fx;
            if f == "rcip_binding_free" && !b.is_null() {
                fx.bindings.remove(0);
            }
            if a.settled() {
                for b in fx.bindings {
                    rcip_binding_free(b);
                }
                return finish(f, case, r, followed, &a);
            }
            let out = finish(f, case, r, followed, &a);
            fx.free();
            return out;
        }
        "rcip_cancel_token_new" => {
            let out = a.out::<rcip_cancel_token>("token_out");
            let rc = rcip_cancel_token_new(out);
            if !out.is_null() && rc == rcip_result::Ok {
                rcip_cancel_token_free(*out);
            }
            Ok(rc)
        }
        "rcip_cancel_token_clone"
        | "rcip_cancel_token_cancel"
        | "rcip_cancel_token_is_cancelled"
        | "rcip_cancel_token_on_cancel"
        | "rcip_cancel_token_free" => {
            let mut t = ptr::null_mut();
            assert_eq!(rcip_cancel_token_new(&mut t), rcip_result::Ok);
            if a.settled() {
                assert_eq!(rcip_cancel_token_cancel(t), rcip_result::Ok);
            }
            let tt = a.null_mut("token", t);
            let r = match f {
                "rcip_cancel_token_clone" => {
                    let out = a.out::<rcip_cancel_token>("token_out");
                    let rc = rcip_cancel_token_clone(tt, out);
                    if rc == rcip_result::Ok {
                        if rcip_cancel_token_is_cancelled(*out) {
                            followed = Some("cancelled".into());
                        }
                        rcip_cancel_token_free(*out);
                    }
                    Ok(rc)
                }
                "rcip_cancel_token_cancel" => Ok(rcip_cancel_token_cancel(tt)),
                "rcip_cancel_token_is_cancelled" => Err(rcip_cancel_token_is_cancelled(tt).to_string()),
                "rcip_cancel_token_on_cancel" => {
                    let rc = rcip_cancel_token_on_cancel(
                        tt,
                        a.cb("callback", noop_cancel as unsafe extern "C" fn(_)),
                        ptr::null_mut(),
                        Some(release),
                    );
                    if rc == rcip_result::Ok {
                        followed = Some(
                            if RELEASED.with(|r| r.get()) == 1 {
                                "ran"
                            } else {
                                "waits"
                            }
                            .into(),
                        );
                    }
                    Ok(rc)
                }
                _ => {
                    rcip_cancel_token_free(tt);
                    if !tt.is_null() {
                        t = ptr::null_mut();
                    }
                    Err("void".into())
                }
            };
            let out = finish(f, case, r, followed, &a);
            rcip_cancel_token_free(t);
            fx.free();
            return out;
        }
        "rcip_catalog_new" => {
            let text = a.text("catalog_json", CATALOG);
            let out = a.out::<rcip_catalog>("catalog_out");
            let rc = rcip_catalog_new(text, out);
            if rc == rcip_result::Ok {
                rcip_catalog_free(*out);
            }
            Ok(rc)
        }
        "rcip_catalog_check" => {
            let text = a.text("catalog_json", CATALOG);
            let out = a.out::<c_char>("report_out");
            let rc = rcip_catalog_check(text, out);
            if rc == rcip_result::Ok {
                let report = CStr::from_ptr(*out).to_str().unwrap().to_string();
                rcip_string_free(*out);
                followed = Some(
                    if report.contains(r#""ok":true"#) {
                        "ok"
                    } else {
                        "problems"
                    }
                    .into(),
                );
            }
            Ok(rc)
        }
        "rcip_catalog_free" => {
            let mut c = ptr::null_mut();
            let text = CString::new(CATALOG).unwrap();
            assert_eq!(rcip_catalog_new(text.as_ptr(), &mut c), rcip_result::Ok);
            rcip_catalog_free(a.null_mut("catalog", c));
            if a.targets("catalog").is_some() {
                rcip_catalog_free(c);
            }
            Err("void".into())
        }
        "rcip_client_snapshot" => {
            let out = a.out::<c_void>("snapshot_out");
            let rc = rcip_client_snapshot(a.null("client", fx.client()), out.cast());
            if rc == rcip_result::Ok {
                rcip_snapshot_free((*out).cast());
            }
            Ok(rc)
        }
        "rcip_client_list_capabilities" => {
            let filter = if a.targets("filter_json").is_some() {
                a.text("filter_json", "")
            } else {
                a.text("filter_json", r#"{"context": "all"}"#)
            };
            let out = a.out::<c_char>("capabilities_out");
            let rc = rcip_client_list_capabilities(a.null("client", fx.client()), filter, out);
            if rc == rcip_result::Ok {
                rcip_string_free(*out);
            }
            Ok(rc)
        }
        "rcip_client_subscribe" => {
            let out = a.out::<rcip_subscription>("subscription_out");
            let rc = rcip_client_subscribe(
                a.null("client", fx.client()),
                a.cb("callback", noop_subscriber as unsafe extern "C" fn(_, _)),
                ptr::null_mut(),
                Some(release),
                out,
            );
            if rc == rcip_result::Ok {
                rcip_subscription_free(*out);
                assert_eq!(RELEASED.with(|r| r.get()), 1);
                RELEASED.with(|r| r.set(0));
            }
            Ok(rc)
        }
        "rcip_subscription_free" => {
            let mut s = ptr::null_mut();
            assert_eq!(
                rcip_client_subscribe(fx.client(), Some(noop_subscriber), ptr::null_mut(), None, &mut s),
                rcip_result::Ok
            );
            if a.settled() {
                rcip_runtime_free(fx.runtime);
            }
            let target = a.null_mut("subscription", s);
            rcip_subscription_free(target);
            if target.is_null() {
                rcip_subscription_free(s);
            }
            let r = Err("void".into());
            let out = finish(f, case, r, followed, &a);
            if a.settled() {
                for b in fx.bindings {
                    rcip_binding_free(b);
                }
            } else {
                fx.free();
            }
            return out;
        }
        "rcip_client_invoke" | "rcip_client_invoke_blocking" => {
            let mut t = ptr::null_mut();
            assert_eq!(rcip_cancel_token_new(&mut t), rcip_result::Ok);
            let client = a.null("client", fx.client());
            let cap = if a.targets("capability_id") == Some("utf8") {
                BAD_UTF8.as_ptr().cast()
            } else {
                a.text("capability_id", "items.list")
            };
            let input = a.text("input_json", r#"{"n": 1}"#);
            let id = if a.targets("invocation_id") == Some("utf8") {
                BAD_UTF8.as_ptr().cast()
            } else {
                a.text("invocation_id", "inv-1")
            };
            let token = a.null("cancel_token", t as *const rcip_cancel_token);
            let rc = if f == "rcip_client_invoke" {
                let out = a.out::<c_char>("invocation_id_out");
                let rc = rcip_client_invoke(
                    client,
                    cap,
                    input,
                    id,
                    token,
                    a.cb("on_outcome", deliver as unsafe extern "C" fn(_, _)),
                    ptr::null_mut(),
                    Some(release),
                    out,
                );
                if rc == rcip_result::Ok {
                    if !out.is_null() {
                        rcip_string_free(*out);
                    }
                    followed = delivered();
                    assert_eq!(RELEASED.with(|r| r.get()), 1, "released after the outcome");
                    RELEASED.with(|r| r.set(0));
                }
                rc
            } else {
                let out = a.out::<c_char>("outcome_json_out");
                let rc = rcip_client_invoke_blocking(client, cap, input, id, token, out);
                if rc == rcip_result::Ok {
                    let v: serde_json::Value = serde_json::from_str(CStr::from_ptr(*out).to_str().unwrap()).unwrap();
                    rcip_string_free(*out);
                    followed = Some(describe(&v));
                }
                rc
            };
            rcip_cancel_token_free(t);
            Ok(rc)
        }
        "rcip_client_preflight" => {
            let first_cap: *const c_char = if a.case == "capability_ids[0]:utf8" {
                BAD_UTF8.as_ptr().cast()
            } else if a.case == "capability_ids[0]:null" {
                ptr::null()
            } else {
                c"items.list".as_ptr()
            };
            let first_input = match a.case {
                "input_jsons[0]:null" => None,
                "input_jsons[0]:utf8" => Some(&b"{\"a\": \"\xff\"}\0"[..]),
                "input_jsons[0]:notjson" => Some(&b"{not json\0"[..]),
                "input_jsons[0]:shape" => Some(&b"[]\0"[..]),
                _ => Some(&b"{}\0"[..]),
            };
            let caps = [first_cap, c"items.purge".as_ptr()];
            let inputs = [first_input.map_or(ptr::null(), |s| s.as_ptr().cast()), c"{}".as_ptr()];
            let mut t = ptr::null_mut();
            assert_eq!(rcip_cancel_token_new(&mut t), rcip_result::Ok);
            let rc = rcip_client_preflight(
                a.null("client", fx.client()),
                a.null("capability_ids", caps.as_ptr()),
                a.null("input_jsons", inputs.as_ptr()),
                a.size("count", 2),
                a.null("cancel_token", t as *const rcip_cancel_token),
                a.cb("on_report", deliver as unsafe extern "C" fn(_, _)),
                ptr::null_mut(),
                Some(release),
            );
            if rc == rcip_result::Ok {
                followed = delivered();
                assert_eq!(RELEASED.with(|r| r.get()), 1);
                RELEASED.with(|r| r.set(0));
            }
            rcip_cancel_token_free(t);
            Ok(rc)
        }
        "rcip_host_bind" => {
            // Bind a fresh capability: unbind items.purge first.
            assert_eq!(rcip_binding_unbind(fx.bindings[2]), rcip_result::Ok);
            let cap = if a.targets("capability_id") == Some("utf8") {
                BAD_UTF8.as_ptr().cast()
            } else {
                a.text("capability_id", "items.purge")
            };
            let out = a.out::<rcip_binding>("binding_out");
            let rc = rcip_host_bind(
                a.null("host", fx.host()),
                cap,
                a.cb("handler", complete as unsafe extern "C" fn(_, _)),
                a.cb("availability", availability as unsafe extern "C" fn(_, _) -> i32),
                ptr::null_mut(),
                Some(release),
                out,
            );
            if rc == rcip_result::Ok {
                rcip_binding_free(*out);
                assert_eq!(RELEASED.with(|r| r.get()), 1);
                RELEASED.with(|r| r.set(0));
            }
            Ok(rc)
        }
        "rcip_host_set_principal" => {
            let text = a.text(
                "principal_json",
                r#"{"issuer": "https://as.example", "subject": "alice"}"#,
            );
            Ok(rcip_host_set_principal(a.null("host", fx.host()), text))
        }
        "rcip_host_set_context" => {
            let text = a.text("context_json", r#"{"activeScopeIds": ["main"]}"#);
            Ok(rcip_host_set_context(a.null("host", fx.host()), text))
        }
        "rcip_host_clear_context" => Ok(rcip_host_clear_context(a.null("host", fx.host()))),
        "rcip_host_refresh" => Ok(rcip_host_refresh(a.null("host", fx.host()))),
        "rcip_host_resolve_confirmation" => {
            let id = fx.pending_confirmation();
            let idp = if a.targets("confirmation_id") == Some("utf8") {
                BAD_UTF8.as_ptr().cast()
            } else if a.targets("confirmation_id") == Some("null") {
                ptr::null()
            } else {
                id.as_ptr()
            };
            let rc = rcip_host_resolve_confirmation(
                a.null("host", fx.host()),
                idp,
                true,
                a.cb("on_outcome", deliver as unsafe extern "C" fn(_, _)),
                ptr::null_mut(),
                Some(release),
            );
            if rc == rcip_result::Ok {
                followed = delivered();
                assert_eq!(RELEASED.with(|r| r.get()), 1);
                RELEASED.with(|r| r.set(0));
            }
            Ok(rc)
        }
        "rcip_host_carry_confirmation" => {
            let id = fx.pending_confirmation();
            let idp = if a.targets("confirmation_id") == Some("utf8") {
                BAD_UTF8.as_ptr().cast()
            } else if a.targets("confirmation_id") == Some("null") {
                ptr::null()
            } else {
                id.as_ptr()
            };
            let out = a.out::<c_char>("carried_json_out");
            let rc = rcip_host_carry_confirmation(a.null("host", fx.host()), idp, out);
            if rc == rcip_result::Ok {
                let v: serde_json::Value = serde_json::from_str(CStr::from_ptr(*out).to_str().unwrap()).unwrap();
                assert_eq!(v["confirmationId"].as_str(), id.to_str().ok());
                assert_eq!(v["capabilityId"], "items.purge");
                assert_eq!(v["context"], serde_json::json!({"activeScopeIds": []}));
                rcip_string_free(*out);
            }
            Ok(rc)
        }
        "rcip_host_resume_confirmation" => {
            // Carried out of another runtime of the same catalog, resumed
            // in the case's runtime: the approved re-run (step 6).
            let other = Fx::new();
            let id = other.pending_confirmation();
            let mut carried = ptr::null_mut();
            assert_eq!(
                rcip_host_carry_confirmation(other.host(), id.as_ptr(), &mut carried),
                rcip_result::Ok
            );
            let carried_text = CStr::from_ptr(carried).to_str().unwrap().to_string();
            rcip_string_free(carried);
            other.free();
            let carried = a.text("carried_json", &carried_text);
            let input = a.text("input_json", "{}");
            let rc = rcip_host_resume_confirmation(
                a.null("host", fx.host()),
                carried,
                true,
                input,
                ptr::null(),
                a.cb("on_outcome", deliver as unsafe extern "C" fn(_, _)),
                ptr::null_mut(),
                Some(release),
            );
            if rc == rcip_result::Ok {
                followed = delivered();
                assert_eq!(RELEASED.with(|r| r.get()), 1);
                RELEASED.with(|r| r.set(0));
            }
            Ok(rc)
        }
        "rcip_invocation_id"
        | "rcip_invocation_capability_id"
        | "rcip_invocation_input"
        | "rcip_invocation_semantic_context"
        | "rcip_invocation_cancel_token"
        | "rcip_invocation_complete"
        | "rcip_invocation_fail"
        | "rcip_invocation_free"
        | "rcip_invocation_is_settled"
        | "rcip_invocation_report_progress"
        | "rcip_invocation_log"
        | "rcip_invocation_elicit"
        | "rcip_invocation_create_message"
        | "rcip_invocation_ask"
        | "rcip_invocation_can_ask" => {
            let inv = fx.invocation();
            if a.settled() {
                assert_eq!(rcip_invocation_complete(inv, c"{}".as_ptr()), rcip_result::Ok);
            }
            let h = a.null_mut("invocation", inv);
            let r = match f {
                "rcip_invocation_id" => Err(ptr_res(rcip_invocation_id(h))),
                "rcip_invocation_capability_id" => Err(ptr_res(rcip_invocation_capability_id(h))),
                "rcip_invocation_input" => Err(ptr_res(rcip_invocation_input(h))),
                "rcip_invocation_semantic_context" => Err(ptr_res(rcip_invocation_semantic_context(h))),
                "rcip_invocation_cancel_token" => Err(ptr_res(rcip_invocation_cancel_token(h))),
                "rcip_invocation_complete" => {
                    let text = a.text("output_json", r#"{"done": true}"#);
                    Ok(rcip_invocation_complete(h, text))
                }
                "rcip_invocation_fail" => Ok(rcip_invocation_fail(h, false)),
                "rcip_invocation_is_settled" => Err(rcip_invocation_is_settled(h).to_string()),
                "rcip_invocation_report_progress" => {
                    let message = a.text("message", "half way");
                    let (progress, total) = (a.real("progress", 1.0), a.real("total", 2.0));
                    Ok(rcip_invocation_report_progress(h, progress, true, total, message))
                }
                "rcip_invocation_log" => {
                    let level = a.text("level", "info");
                    let logger = a.text("logger", "sweep");
                    let data = a.text("data_json", r#"{"note": "x"}"#);
                    Ok(rcip_invocation_log(h, level, logger, data))
                }
                "rcip_invocation_elicit" => {
                    let message = a.text("message", "Your name?");
                    let schema = a.text(
                        "requested_schema_json",
                        r#"{"type": "object", "properties": {"name": {"type": "string"}}}"#,
                    );
                    Ok(rcip_invocation_elicit(
                        h,
                        message,
                        schema,
                        a.cb("on_answer", noop_json as unsafe extern "C" fn(_, _)),
                        ptr::null_mut(),
                        Some(release),
                    ))
                }
                "rcip_invocation_create_message" => {
                    let params = a.text(
                        "params_json",
                        r#"{"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}"#,
                    );
                    Ok(rcip_invocation_create_message(
                        h,
                        params,
                        a.cb("on_reply", noop_json as unsafe extern "C" fn(_, _)),
                        ptr::null_mut(),
                        Some(release),
                    ))
                }
                "rcip_invocation_ask" => {
                    let key = a.text("key", "capital");
                    let method = a.text("method", "roots/list");
                    let params = a.text("params_json", "{}");
                    Ok(rcip_invocation_ask(
                        h,
                        key,
                        method,
                        params,
                        a.cb("on_reply", noop_json as unsafe extern "C" fn(_, _)),
                        ptr::null_mut(),
                        Some(release),
                    ))
                }
                "rcip_invocation_can_ask" => {
                    let method = a.text("method", "elicitation/create");
                    Err(rcip_invocation_can_ask(h, method).to_string())
                }
                _ => {
                    rcip_invocation_free(h);
                    Err("void".into())
                }
            };
            if f != "rcip_invocation_free" || h.is_null() {
                rcip_invocation_free(inv);
            }
            followed = delivered();
            r
        }
        "rcip_policy_request_context"
        | "rcip_policy_request_principal"
        | "rcip_policy_request_invocation_id"
        | "rcip_policy_request_decide"
        | "rcip_policy_request_fail"
        | "rcip_policy_request_free"
        | "rcip_policy_request_is_settled"
        | "rcip_policy_request_capability_id"
        | "rcip_policy_request_effect"
        | "rcip_policy_request_is_confirmed"
        | "rcip_policy_request_phase"
        | "rcip_policy_request_scope_is_active"
        | "rcip_policy_request_primary_scope_id"
        | "rcip_policy_request_input"
        | "rcip_policy_request_capability"
        | "rcip_policy_request_allow"
        | "rcip_policy_request_deny"
        | "rcip_policy_request_confirm"
        | "rcip_policy_request_decide_default" => {
            // A context with a primary, for the scope accessors.
            let ctx = cr#"{"activeScopeIds": ["main"], "primaryScopeId": "main"}"#;
            assert_eq!(rcip_host_set_context(fx.host(), ctx.as_ptr()), rcip_result::Ok);
            let principal = cr#"{"subject": "alice"}"#;
            assert_eq!(rcip_host_set_principal(fx.host(), principal.as_ptr()), rcip_result::Ok);
            let req = fx.policy_request();
            if a.settled() {
                assert_eq!(
                    rcip_policy_request_decide(req, cr#"{"decision": "allow"}"#.as_ptr()),
                    rcip_result::Ok
                );
            }
            let h = a.null_mut("request", req);
            let r = match f {
                "rcip_policy_request_context" => Err(ptr_res(rcip_policy_request_context(h))),
                "rcip_policy_request_principal" => Err(ptr_res(rcip_policy_request_principal(h))),
                "rcip_policy_request_invocation_id" => Err(ptr_res(rcip_policy_request_invocation_id(h))),
                "rcip_policy_request_decide" => {
                    let text = a.text("decision_json", r#"{"decision": "allow"}"#);
                    Ok(rcip_policy_request_decide(h, text))
                }
                "rcip_policy_request_fail" => Ok(rcip_policy_request_fail(h)),
                "rcip_policy_request_is_settled" => Err(rcip_policy_request_is_settled(h).to_string()),
                "rcip_policy_request_capability_id" => Err(ptr_res(rcip_policy_request_capability_id(h))),
                "rcip_policy_request_effect" => Err(ptr_res(rcip_policy_request_effect(h))),
                "rcip_policy_request_is_confirmed" => Err(rcip_policy_request_is_confirmed(h).to_string()),
                "rcip_policy_request_phase" => Err(ptr_res(rcip_policy_request_phase(h))),
                "rcip_policy_request_scope_is_active" => {
                    let id = a.text("scope_id", "main");
                    Err(rcip_policy_request_scope_is_active(h, id).to_string())
                }
                "rcip_policy_request_primary_scope_id" => Err(ptr_res(rcip_policy_request_primary_scope_id(h))),
                "rcip_policy_request_input" => Err(ptr_res(rcip_policy_request_input(h))),
                "rcip_policy_request_capability" => Err(ptr_res(rcip_policy_request_capability(h))),
                "rcip_policy_request_allow" => Ok(rcip_policy_request_allow(h)),
                "rcip_policy_request_deny" => Ok(rcip_policy_request_deny(h, a.text("reason", "not now"))),
                "rcip_policy_request_confirm" => Ok(rcip_policy_request_confirm(h, a.text("reason", "sure?"))),
                "rcip_policy_request_decide_default" => Ok(rcip_policy_request_decide_default(h)),
                _ => {
                    rcip_policy_request_free(h);
                    Err("void".into())
                }
            };
            if f != "rcip_policy_request_free" || h.is_null() {
                rcip_policy_request_free(req);
            }
            followed = delivered();
            r
        }
        "rcip_client_invoke_pending" => {
            let cap = if a.targets("capability_id") == Some("utf8") {
                BAD_UTF8.as_ptr().cast()
            } else {
                a.null("capability_id", c"items.list".as_ptr())
            };
            let input = match a.targets("input_json") {
                Some("utf8") => c"{\"a\": \"\xff\"}".as_ptr().cast(),
                _ => a.text("input_json", "{}"),
            };
            let inv = if a.targets("invocation_id") == Some("utf8") {
                BAD_UTF8.as_ptr().cast()
            } else if a.targets("invocation_id") == Some("null") {
                ptr::null()
            } else {
                c"sweep-1".as_ptr()
            };
            let mut t = ptr::null_mut();
            assert_eq!(rcip_cancel_token_new(&mut t), rcip_result::Ok);
            let out = a.out::<rcip_pending>("pending_out");
            let rc = rcip_client_invoke_pending(
                a.null("client", fx.client()),
                cap,
                input,
                inv,
                a.null("cancel_token", t as *const rcip_cancel_token),
                out,
            );
            if rc == rcip_result::Ok {
                followed = take_pending(*out);
            }
            rcip_cancel_token_free(t);
            Ok(rc)
        }
        "rcip_host_resolve_confirmation_pending" => {
            let id = fx.pending_confirmation();
            let idp = if a.targets("confirmation_id") == Some("utf8") {
                BAD_UTF8.as_ptr().cast()
            } else {
                a.null("confirmation_id", id.as_ptr())
            };
            let out = a.out::<rcip_pending>("pending_out");
            let rc = rcip_host_resolve_confirmation_pending(a.null("host", fx.host()), idp, true, out);
            if rc == rcip_result::Ok {
                followed = take_pending(*out);
            }
            Ok(rc)
        }
        "rcip_client_preflight_pending" => {
            let first_cap: *const c_char = if a.case == "capability_ids[0]:utf8" {
                BAD_UTF8.as_ptr().cast()
            } else if a.case == "capability_ids[0]:null" {
                ptr::null()
            } else {
                c"items.list".as_ptr()
            };
            let first_input = match a.case {
                "input_jsons[0]:null" => None,
                "input_jsons[0]:utf8" => Some(&b"{\"a\": \"\xff\"}\0"[..]),
                "input_jsons[0]:notjson" => Some(&b"{not json\0"[..]),
                "input_jsons[0]:shape" => Some(&b"[]\0"[..]),
                _ => Some(&b"{}\0"[..]),
            };
            let caps = [first_cap, c"items.purge".as_ptr()];
            let inputs = [first_input.map_or(ptr::null(), |s| s.as_ptr().cast()), c"{}".as_ptr()];
            let mut t = ptr::null_mut();
            assert_eq!(rcip_cancel_token_new(&mut t), rcip_result::Ok);
            let out = a.out::<rcip_pending>("pending_out");
            let rc = rcip_client_preflight_pending(
                a.null("client", fx.client()),
                a.null("capability_ids", caps.as_ptr()),
                a.null("input_jsons", inputs.as_ptr()),
                a.size("count", 2),
                a.null("cancel_token", t as *const rcip_cancel_token),
                out,
            );
            if rc == rcip_result::Ok {
                followed = take_pending(*out);
            }
            rcip_cancel_token_free(t);
            Ok(rc)
        }
        "rcip_pending_wait" | "rcip_pending_is_ready" | "rcip_pending_on_ready" | "rcip_pending_free" => {
            let mut p = ptr::null_mut();
            assert_eq!(
                rcip_client_invoke_pending(
                    fx.client(),
                    c"items.list".as_ptr(),
                    c"{}".as_ptr(),
                    ptr::null(),
                    ptr::null(),
                    &mut p
                ),
                rcip_result::Ok
            );
            if a.settled() {
                let mut json = ptr::null_mut();
                assert_eq!(rcip_pending_wait(p, 0, &mut json), rcip_result::Ok);
                rcip_string_free(json);
            }
            let h = a.null_mut("pending", p);
            let r = match f {
                "rcip_pending_wait" => {
                    let out = a.out::<c_char>("outcome_json_out");
                    let rc = rcip_pending_wait(h, a.num64("timeout_ms", 1000), out);
                    if rc == rcip_result::Ok {
                        DELIVERED.with(|d| d.borrow_mut().push(CStr::from_ptr(*out).to_str().unwrap().into()));
                        rcip_string_free(*out);
                        followed = delivered();
                    }
                    Ok(rc)
                }
                "rcip_pending_is_ready" => Err(rcip_pending_is_ready(h).to_string()),
                "rcip_pending_on_ready" => {
                    let rc = rcip_pending_on_ready(
                        h,
                        a.cb("callback", deliver as unsafe extern "C" fn(_, _)),
                        ptr::null_mut(),
                        Some(release),
                    );
                    if rc == rcip_result::Ok {
                        followed = delivered();
                        assert_eq!(RELEASED.with(|r| r.get()), 1);
                        RELEASED.with(|r| r.set(0));
                    }
                    Ok(rc)
                }
                _ => {
                    rcip_pending_free(h);
                    Err("void".into())
                }
            };
            if f != "rcip_pending_free" || h.is_null() {
                rcip_pending_free(p);
            }
            r
        }
        f if f.starts_with("rcip_record_") => {
            let mut rec = ptr::null_mut();
            assert_eq!(rcip_record_parse(SWEEP_RECORD.as_ptr(), &mut rec), rcip_result::Ok);
            let h = a.null("record", rec as *const rcip_record);
            let r = match f {
                "rcip_record_parse" => {
                    let out = a.out::<rcip_record>("record_out");
                    let rc = rcip_record_parse(a.text("record_json", r#"{"status": "succeeded"}"#), out);
                    if rc == rcip_result::Ok {
                        rcip_record_free(*out);
                    }
                    Ok(rc)
                }
                "rcip_record_status" => Err(ptr_res(rcip_record_status(h))),
                "rcip_record_invocation_id" => Err(ptr_res(rcip_record_invocation_id(h))),
                "rcip_record_capability_id" => Err(ptr_res(rcip_record_capability_id(h))),
                "rcip_record_error_code" => Err(ptr_res(rcip_record_error_code(h))),
                "rcip_record_error_message" => Err(ptr_res(rcip_record_error_message(h))),
                "rcip_record_confirmation_id" => Err(ptr_res(rcip_record_confirmation_id(h))),
                "rcip_record_output" => Err(ptr_res(rcip_record_output(h))),
                "rcip_record_phase" => Err(ptr_res(rcip_record_phase(h))),
                "rcip_record_notice_kind" => Err(ptr_res(rcip_record_notice_kind(h))),
                "rcip_record_reason" => Err(ptr_res(rcip_record_reason(h))),
                "rcip_record_issue_count" => Err(rcip_record_issue_count(h).to_string()),
                "rcip_record_issue_path" => Err(ptr_res(rcip_record_issue_path(h, a.size("index", 0)))),
                "rcip_record_issue_keyword" => Err(ptr_res(rcip_record_issue_keyword(h, a.size("index", 0)))),
                "rcip_record_issue_message" => Err(ptr_res(rcip_record_issue_message(h, a.size("index", 0)))),
                "rcip_record_expires_at" => {
                    let mut at = 0i64;
                    let out = if a.targets("expires_at_ms_out") == Some("null") {
                        ptr::null_mut()
                    } else {
                        &mut at as *mut i64
                    };
                    let got = rcip_record_expires_at(h, out);
                    assert!(!got || at == 5, "expiresAt read as {at}");
                    Err(got.to_string())
                }
                "rcip_record_entry_count" => Err(rcip_record_entry_count(h).to_string()),
                "rcip_record_entry" => Err(ptr_res(rcip_record_entry(h, a.size("index", 0)))),
                "rcip_record_free" => {
                    rcip_record_free(h.cast_mut());
                    Err("void".into())
                }
                other => panic!("no driver for {other}"),
            };
            if f != "rcip_record_free" || h.is_null() {
                rcip_record_free(rec);
            }
            r
        }
        "rcip_result_str" => {
            let code = if a.targets("code") == Some("max") { u32::MAX } else { 0 };
            let s = CStr::from_ptr(rcip_result_str(code)).to_str().unwrap();
            Err(if s == "unknown rcip_result value" {
                "unknown".into()
            } else {
                ptr_res(s.as_ptr())
            })
        }
        "rcip_last_error_message" => {
            assert_eq!(rcip_host_refresh(ptr::null()), rcip_result::NullArgument);
            Err(ptr_res(rcip_last_error_message()))
        }
        "rcip_runtime_builder_new" => {
            let out = a.out::<rcip_runtime_builder>("builder_out");
            let rc = rcip_runtime_builder_new(a.null("catalog", catalog()), out);
            if rc == rcip_result::Ok {
                rcip_runtime_builder_free(*out);
            }
            Ok(rc)
        }
        f if f.starts_with("rcip_runtime_builder_") => {
            let mut b = ptr::null_mut();
            assert_eq!(rcip_runtime_builder_new(catalog(), &mut b), rcip_result::Ok);
            let bb = a.null_mut("builder", b);
            let rc = match f {
                "rcip_runtime_builder_set_confirmation_ttl_ms" => Ok(rcip_runtime_builder_set_confirmation_ttl_ms(
                    bb,
                    a.num64("ttl_ms", 1000),
                )),
                "rcip_runtime_builder_set_limits" => Ok(rcip_runtime_builder_set_limits(
                    bb,
                    a.size("max_payload_len", 1024),
                    a.size("max_depth", 10),
                )),
                "rcip_runtime_builder_set_validation_budget" => Ok(rcip_runtime_builder_set_validation_budget(
                    bb,
                    a.num64("floor", 1000),
                    a.num64("per_pair", 8),
                )),
                "rcip_runtime_builder_set_validation_issue_limit" => {
                    Ok(rcip_runtime_builder_set_validation_issue_limit(
                        bb,
                        a.size("max_issues", 10),
                        a.size("max_bytes", 4096),
                    ))
                }
                "rcip_runtime_builder_set_policy" => Ok(rcip_runtime_builder_set_policy(
                    bb,
                    a.cb("callback", policy as unsafe extern "C" fn(_, _)),
                    ptr::null_mut(),
                    Some(release),
                )),
                "rcip_runtime_builder_set_confirmation_callback" => Ok(rcip_runtime_builder_set_confirmation_callback(
                    bb,
                    a.cb("callback", noop_json as unsafe extern "C" fn(_, _)),
                    ptr::null_mut(),
                    Some(release),
                )),
                "rcip_runtime_builder_add_event_observer" => Ok(rcip_runtime_builder_add_event_observer(
                    bb,
                    a.cb("callback", noop_json as unsafe extern "C" fn(_, _)),
                    ptr::null_mut(),
                    Some(release),
                )),
                "rcip_runtime_builder_set_progress_observer" => Ok(rcip_runtime_builder_set_progress_observer(
                    bb,
                    a.cb("callback", noop_json as unsafe extern "C" fn(_, _)),
                    ptr::null_mut(),
                    Some(release),
                )),
                "rcip_runtime_builder_set_clock" => Ok(rcip_runtime_builder_set_clock(
                    bb,
                    a.cb("callback", noop_clock as unsafe extern "C" fn(_) -> i64),
                    ptr::null_mut(),
                    Some(release),
                )),
                "rcip_runtime_builder_set_id_generator" => Ok(rcip_runtime_builder_set_id_generator(
                    bb,
                    a.cb("callback", ids as unsafe extern "C" fn(_, _, _) -> i32),
                    ptr::null_mut(),
                    Some(release),
                )),
                "rcip_runtime_builder_set_manual_timers" => Ok(rcip_runtime_builder_set_manual_timers(bb, true)),
                "rcip_runtime_builder_bind" => {
                    let cap = if a.targets("capability_id") == Some("utf8") {
                        BAD_UTF8.as_ptr().cast()
                    } else {
                        a.text("capability_id", "items.purge")
                    };
                    let rc = rcip_runtime_builder_bind(
                        bb,
                        cap,
                        a.cb("handler", complete as unsafe extern "C" fn(_, _)),
                        a.cb("availability", availability as unsafe extern "C" fn(_, _) -> i32),
                        ptr::null_mut(),
                        Some(release),
                    );
                    if rc == rcip_result::Ok {
                        // Bound from the first snapshot; the user data goes
                        // with the runtime.
                        let mut rt = ptr::null_mut();
                        assert_eq!(rcip_runtime_builder_build(bb, &mut rt), rcip_result::Ok);
                        b = ptr::null_mut();
                        let mut stats = ptr::null_mut();
                        assert_eq!(rcip_runtime_stats(rt, &mut stats), rcip_result::Ok);
                        let text = CStr::from_ptr(stats).to_str().unwrap().to_string();
                        rcip_string_free(stats);
                        assert!(text.contains("\"revision\":0,\"bindings\":1,"), "{text}");
                        assert_eq!(RELEASED.with(|r| r.get()), 0);
                        rcip_runtime_free(rt);
                        assert_eq!(RELEASED.with(|r| r.get()), 1);
                        RELEASED.with(|r| r.set(0));
                    }
                    Ok(rc)
                }
                "rcip_runtime_builder_build" => {
                    let out = a.out::<rcip_runtime>("runtime_out");
                    let rc = rcip_runtime_builder_build(bb, out);
                    if rc == rcip_result::Ok {
                        rcip_runtime_free(*out);
                    }
                    b = ptr::null_mut(); // consumed on success and failure alike
                    Ok(rc)
                }
                "rcip_runtime_builder_free" => {
                    rcip_runtime_builder_free(bb);
                    if !bb.is_null() {
                        b = ptr::null_mut();
                    }
                    Err("void".into())
                }
                other => panic!("no driver for {other}"),
            };
            if rc.is_ok() && rc != Ok(rcip_result::Ok) {
                // A refused registration keeps the user data with the caller.
                assert_eq!(
                    RELEASED.with(|r| r.get()),
                    0,
                    "{f} {case}: user_data_free of a refused registration"
                );
            }
            rcip_runtime_builder_free(b);
            RELEASED.with(|r| r.set(0));
            rc
        }
        "rcip_runtime_client" => Err(ptr_res(rcip_runtime_client(a.null("runtime", fx.runtime)))),
        "rcip_runtime_host" => Err(ptr_res(rcip_runtime_host(a.null("runtime", fx.runtime)))),
        "rcip_runtime_next_deadline" => {
            let mut has = true;
            let mut at = 5i64;
            Ok(rcip_runtime_next_deadline(
                a.null("runtime", fx.runtime),
                a.null_mut("has_deadline_out", &mut has as *mut bool),
                a.null_mut("deadline_ms_out", &mut at as *mut i64),
            ))
        }
        "rcip_runtime_run_due_timers" => Ok(rcip_runtime_run_due_timers(a.null("runtime", fx.runtime))),
        "rcip_mcp_session_new" => {
            let out = a.out::<rcip_mcp_session>("session_out");
            let options = a.text("options_json", "{}");
            let on_message = a.cb("on_message", noop_json as unsafe extern "C" fn(_, _));
            let rc = rcip_mcp_session_new(
                a.null("runtime", fx.runtime),
                options,
                on_message,
                ptr::null_mut(),
                Some(release),
                out,
            );
            if rc == rcip_result::Ok {
                rcip_mcp_session_free(*out);
                assert_eq!(RELEASED.with(|r| r.get()), 1);
                RELEASED.with(|r| r.set(0));
            }
            Ok(rc)
        }
        "rcip_mcp_session_receive"
        | "rcip_mcp_session_serve_stdio"
        | "rcip_mcp_session_stats"
        | "rcip_mcp_session_free" => {
            let mut session = ptr::null_mut();
            assert_eq!(
                rcip_mcp_session_new(
                    fx.runtime,
                    ptr::null(),
                    Some(noop_json),
                    ptr::null_mut(),
                    None,
                    &mut session
                ),
                rcip_result::Ok
            );
            let target = a.null("session", session as *const rcip_mcp_session);
            let r = match f {
                "rcip_mcp_session_receive" => {
                    let message = a.text("message_json", r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#);
                    Ok(rcip_mcp_session_receive(target, message))
                }
                "rcip_mcp_session_serve_stdio" => Ok(with_stdin_at_end(|| rcip_mcp_session_serve_stdio(target))),
                "rcip_mcp_session_stats" => {
                    let out = a.out::<c_char>("json_out");
                    let rc = rcip_mcp_session_stats(target, out);
                    if rc == rcip_result::Ok {
                        assert_eq!(
                            CStr::from_ptr(*out).to_str().unwrap(),
                            r#"{"inFlight":0,"droppedNotifications":0,"contentReplaced":0}"#
                        );
                        rcip_string_free(*out);
                    }
                    Ok(rc)
                }
                _ => {
                    rcip_mcp_session_free(target.cast_mut());
                    Err("void".into())
                }
            };
            if f != "rcip_mcp_session_free" || target.is_null() {
                rcip_mcp_session_free(session);
            }
            r
        }
        "rcip_mcp_session_receive_with_headers" => {
            let session = modern_session(fx.runtime);
            let target = a.null("session", session as *const rcip_mcp_session);
            let message = a.text("message_json", r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#);
            let headers = a.text("headers_json", r#"{"x-sweep": "1"}"#);
            let rc = rcip_mcp_session_receive_with_headers(target, message, headers);
            rcip_mcp_session_free(session);
            Ok(rc)
        }
        "rcip_mcp_session_set_request_runtimes" => {
            let session = modern_session(fx.runtime);
            let target = a.null("session", session as *const rcip_mcp_session);
            let factory = a.cb("factory", run_request_job as unsafe extern "C" fn(_, _) -> i32);
            let rc = rcip_mcp_session_set_request_runtimes(target, factory, ptr::null_mut(), Some(release));
            rcip_mcp_session_free(session);
            if rc == rcip_result::Ok {
                assert_eq!(
                    RELEASED.with(|r| r.get()),
                    1,
                    "the factory's data released with the session"
                );
                RELEASED.with(|r| r.set(0));
            }
            Ok(rc)
        }
        "rcip_mcp_request_setup_method"
        | "rcip_mcp_request_setup_meta"
        | "rcip_mcp_request_setup_headers"
        | "rcip_mcp_request_setup_header"
        | "rcip_mcp_request_setup_accept" => {
            // A live setup exists only inside the factory: the case's
            // arguments are chosen here, the call made there.
            let setup_null = a.null("setup", ptr::dangling::<rcip_mcp_request_setup>()).is_null();
            let name = a.text("name", "x-sweep") as usize;
            let runtime_null = a.null("runtime", ptr::dangling::<rcip_runtime>()).is_null();
            let f = f.to_string();
            let job = move |setup: *mut rcip_mcp_request_setup| {
                let setup = if setup_null { ptr::null_mut() } else { setup };
                let text = |p: *const c_char| Err(if p.is_null() { "null" } else { "nonnull" }.to_string());
                match f.as_str() {
                    "rcip_mcp_request_setup_method" => (text(rcip_mcp_request_setup_method(setup)), false),
                    "rcip_mcp_request_setup_meta" => (text(rcip_mcp_request_setup_meta(setup)), false),
                    "rcip_mcp_request_setup_headers" => (text(rcip_mcp_request_setup_headers(setup)), false),
                    "rcip_mcp_request_setup_header" => {
                        (text(rcip_mcp_request_setup_header(setup, name as *const c_char)), false)
                    }
                    _ => {
                        let runtime = if runtime_null {
                            ptr::null_mut()
                        } else {
                            Fx::new().runtime_only()
                        };
                        let rc = rcip_mcp_request_setup_accept(setup, runtime, ptr::null_mut(), None);
                        (Ok(rc), rc == rcip_result::Ok)
                    }
                }
            };
            if setup_null {
                // No setup needed: the call runs here.
                job(ptr::null_mut()).0
            } else {
                let answer = with_request_setup(fx.runtime, job);
                if answer.as_ref().is_ok_and(|rc| *rc != rcip_result::Ok) {
                    // The failing call's message was cleared by the
                    // receive that ran it: the same failure again.
                    rcip_mcp_request_setup_accept(ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), None);
                }
                answer
            }
        }
        "rcip_mcp_session_setup_session_id"
        | "rcip_mcp_session_setup_initialize_params"
        | "rcip_mcp_session_setup_client_name"
        | "rcip_mcp_session_setup_principal"
        | "rcip_mcp_session_setup_header"
        | "rcip_mcp_session_setup_accept" => {
            // A live setup exists only inside the factory: the case's
            // arguments are chosen here, the call made there.
            let setup_null = a.null("setup", ptr::dangling::<rcip_mcp_session_setup>()).is_null();
            let name = a.text("name", "x-sweep") as usize;
            let runtime_null = a.null("runtime", ptr::dangling::<rcip_runtime>()).is_null();
            let f = f.to_string();
            let job = move |setup: *mut rcip_mcp_session_setup| {
                let setup = if setup_null { ptr::null_mut() } else { setup };
                let text = |p: *const c_char| Err(if p.is_null() { "null" } else { "nonnull" }.to_string());
                match f.as_str() {
                    "rcip_mcp_session_setup_session_id" => (text(rcip_mcp_session_setup_session_id(setup)), false),
                    "rcip_mcp_session_setup_initialize_params" => {
                        (text(rcip_mcp_session_setup_initialize_params(setup)), false)
                    }
                    "rcip_mcp_session_setup_client_name" => (text(rcip_mcp_session_setup_client_name(setup)), false),
                    // No auth option in the sweep's server: NULL.
                    "rcip_mcp_session_setup_principal" => (text(rcip_mcp_session_setup_principal(setup)), false),
                    "rcip_mcp_session_setup_header" => {
                        (text(rcip_mcp_session_setup_header(setup, name as *const c_char)), false)
                    }
                    _ => {
                        let runtime = if runtime_null {
                            ptr::null_mut()
                        } else {
                            Fx::new().runtime_only()
                        };
                        let rc = rcip_mcp_session_setup_accept(setup, runtime, ptr::null_mut(), None);
                        (Ok(rc), rc == rcip_result::Ok)
                    }
                }
            };
            if setup_null {
                // No setup needed: the call runs here, on the sweep's thread.
                job(ptr::null_mut()).0
            } else {
                let (answer, _) = with_setup(job);
                if answer.as_ref().is_ok_and(|rc| *rc != rcip_result::Ok) {
                    // The failing call ran on the factory's thread; the same
                    // failure here gives this thread's error message.
                    rcip_mcp_session_setup_accept(ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), None);
                }
                answer
            }
        }
        "rcip_mcp_server_new" => {
            let out = a.out::<rcip_mcp_server>("server_out");
            let address = a.text("address", "127.0.0.1:0");
            let options = a.text("options_json", "{}");
            let factory = a.cb("factory", refuse_sessions as unsafe extern "C" fn(_, _) -> i32);
            let rc = rcip_mcp_server_new(
                a.null("catalog", catalog()),
                address,
                options,
                factory,
                ptr::null_mut(),
                Some(release),
                out,
            );
            if rc == rcip_result::Ok {
                rcip_mcp_server_free(*out);
                assert_eq!(
                    RELEASED.with(|r| r.get()),
                    1,
                    "the factory's data released with the server"
                );
                RELEASED.with(|r| r.set(0));
            }
            Ok(rc)
        }
        "rcip_mcp_server_set_token_verifier" => {
            // A server that asks for the host's verifier.
            let mut server = ptr::null_mut();
            assert_eq!(
                rcip_mcp_server_new(
                    catalog(),
                    c"127.0.0.1:0".as_ptr(),
                    c"{\"auth\": {\"resource\": \"http://127.0.0.1/mcp\", \"authorizationServers\": [\"https://as.example\"], \"verifier\": true}}".as_ptr(),
                    Some(refuse_sessions),
                    ptr::null_mut(),
                    None,
                    &mut server
                ),
                rcip_result::Ok
            );
            RELEASED.with(|r| r.set(0));
            let rc = rcip_mcp_server_set_token_verifier(
                a.null("server", server as *const rcip_mcp_server),
                a.cb("callback", sweep_token as unsafe extern "C" fn(_, _, _) -> i32),
                ptr::null_mut(),
                Some(release),
            );
            if rc != rcip_result::Ok {
                assert_eq!(
                    RELEASED.with(|r| r.get()),
                    0,
                    "a failed registration never releases the data"
                );
            }
            RELEASED.with(|r| r.set(0));
            rcip_mcp_server_free(server);
            Ok(rc)
        }
        "rcip_mcp_server_url"
        | "rcip_mcp_server_start"
        | "rcip_mcp_server_serve"
        | "rcip_mcp_server_shutdown"
        | "rcip_mcp_server_drain"
        | "rcip_mcp_server_set_access_log"
        | "rcip_mcp_server_access_log_dropped"
        | "rcip_mcp_server_sessions"
        | "rcip_mcp_server_session_find"
        | "rcip_mcp_server_free" => {
            let server = new_server(refuse_sessions);
            let target = a.null("server", server as *const rcip_mcp_server);
            let r = match f {
                "rcip_mcp_server_url" => {
                    let out = a.out::<c_char>("url_out");
                    let rc = rcip_mcp_server_url(target, out);
                    if rc == rcip_result::Ok {
                        rcip_string_free(*out);
                    }
                    Ok(rc)
                }
                "rcip_mcp_server_start" => Ok(rcip_mcp_server_start(target)),
                "rcip_mcp_server_serve" => {
                    // Blocks until a shutdown from another thread.
                    let s = server as usize;
                    let stopper = std::thread::spawn(move || {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        rcip_mcp_server_shutdown(s as *const rcip_mcp_server, 1000)
                    });
                    let rc = rcip_mcp_server_serve(target);
                    assert_eq!(stopper.join().unwrap(), rcip_result::Ok);
                    Ok(rc)
                }
                "rcip_mcp_server_shutdown" => Ok(rcip_mcp_server_shutdown(target, a.num64("deadline_ms", 100))),
                "rcip_mcp_server_drain" => Ok(rcip_mcp_server_drain(target, a.num64("deadline_ms", 100))),
                "rcip_mcp_server_set_access_log" => Ok(rcip_mcp_server_set_access_log(
                    target,
                    a.cb("callback", sweep_access as unsafe extern "C" fn(_, _)),
                    ptr::null_mut(),
                    None,
                )),
                "rcip_mcp_server_access_log_dropped" => Err(rcip_mcp_server_access_log_dropped(target).to_string()),
                "rcip_mcp_server_sessions" => {
                    let out = a.out::<c_char>("json_out");
                    let rc = rcip_mcp_server_sessions(target, out);
                    if rc == rcip_result::Ok {
                        assert_eq!(CStr::from_ptr(*out).to_str().unwrap(), "[]");
                        rcip_string_free(*out);
                    }
                    Ok(rc)
                }
                "rcip_mcp_server_session_find" => {
                    let out = a.out::<rcip_mcp_server_session>("session_out");
                    let id = a.text("session_id", "0123456789abcdef0123456789abcdef");
                    let rc = rcip_mcp_server_session_find(target, id, out);
                    // No session is live: the good case is NOT_FOUND, with
                    // the out-parameter NULL like any failure.
                    if rc == rcip_result::NotFound {
                        assert!((*out).is_null());
                        Ok(rcip_result::Ok)
                    } else {
                        Ok(rc)
                    }
                }
                _ => {
                    rcip_mcp_server_free(target.cast_mut());
                    Err("void".into())
                }
            };
            if f != "rcip_mcp_server_free" || target.is_null() {
                rcip_mcp_server_free(server);
            }
            r
        }
        "rcip_mcp_server_session_host"
        | "rcip_mcp_server_session_client"
        | "rcip_mcp_server_session_user_data"
        | "rcip_mcp_server_session_free" => {
            let (server, session) = live_session();
            let target = a.null("session", session as *const rcip_mcp_server_session);
            let r = match f {
                "rcip_mcp_server_session_host" => Err(ptr_res(rcip_mcp_server_session_host(target))),
                "rcip_mcp_server_session_client" => Err(ptr_res(rcip_mcp_server_session_client(target))),
                "rcip_mcp_server_session_user_data" => Err(ptr_res(rcip_mcp_server_session_user_data(target))),
                _ => {
                    rcip_mcp_server_session_free(target.cast_mut());
                    Err("void".into())
                }
            };
            if f != "rcip_mcp_server_session_free" || target.is_null() {
                rcip_mcp_server_session_free(session);
            }
            rcip_mcp_server_free(server);
            r
        }
        "rcip_runtime_stats" => {
            let out = a.out::<c_char>("stats_out");
            let rc = rcip_runtime_stats(a.null("runtime", fx.runtime), out);
            if rc == rcip_result::Ok {
                rcip_string_free(*out);
            }
            Ok(rc)
        }
        "rcip_runtime_close" => {
            let other = Fx::new();
            let rc = rcip_runtime_close(a.null("runtime", other.runtime));
            rcip_runtime_free(other.runtime);
            for b in other.bindings {
                rcip_binding_free(b);
            }
            Ok(rc)
        }
        "rcip_runtime_free" => {
            let other = Fx::new();
            rcip_runtime_free(a.null_mut("runtime", other.runtime));
            if a.targets("runtime").is_some() {
                rcip_runtime_free(other.runtime);
            }
            for b in other.bindings {
                rcip_binding_free(b);
            }
            Err("void".into())
        }
        "rcip_schema_new" => {
            let text = a.text("schema_json", r#"{"type": "object"}"#);
            let out = a.out::<rcip_schema>("schema_out");
            let rc = rcip_schema_new(text, out);
            if rc == rcip_result::Ok {
                rcip_schema_free(*out);
            }
            Ok(rc)
        }
        "rcip_schema_validate" | "rcip_schema_free" => {
            let mut s = ptr::null_mut();
            assert_eq!(
                rcip_schema_new(cr#"{"type": "object"}"#.as_ptr(), &mut s),
                rcip_result::Ok
            );
            if f == "rcip_schema_free" {
                rcip_schema_free(a.null_mut("schema", s));
                if a.targets("schema").is_some() {
                    rcip_schema_free(s);
                }
                Err("void".into())
            } else {
                let text = a.text("instance_json", r#"{"a": 1}"#);
                let out = a.out::<c_char>("result_out");
                let rc = rcip_schema_validate(a.null("schema", s), text, out);
                if rc == rcip_result::Ok {
                    let r = CStr::from_ptr(*out).to_str().unwrap().to_string();
                    rcip_string_free(*out);
                    followed = Some(
                        if r.contains(r#""valid":true"#) {
                            "valid"
                        } else {
                            "invalid"
                        }
                        .into(),
                    );
                }
                rcip_schema_free(s);
                Ok(rc)
            }
        }
        "rcip_availability_set" | "rcip_string_sink_set" => {
            let result: std::rc::Rc<Cell<Option<rcip_result>>> = Default::default();
            let r2 = result.clone();
            let case_owned = case.to_string();
            let avail = f == "rcip_availability_set";
            SINK_JOB.with(|j| {
                *j.borrow_mut() = Some(Box::new(move |sink: *mut c_void| {
                    let mut a = Args {
                        case: &case_owned,
                        keep: Vec::new(),
                        outs: Vec::new(),
                    };
                    let utf8 = |a: &Args, n: &str, good: *const c_char| {
                        if a.targets(n) == Some("utf8") {
                            BAD_UTF8.as_ptr().cast()
                        } else {
                            good
                        }
                    };
                    let rc = if avail {
                        let code = utf8(&a, "reason_code", a.null("reason_code", c"OFF".as_ptr()));
                        let reason = utf8(&a, "reason", a.null("reason", c"switched off".as_ptr()));
                        rcip_availability_set(a.null_mut("sink", sink.cast()), false, code, reason)
                    } else {
                        let v = utf8(&a, "value", a.null("value", c"custom-id".as_ptr()));
                        rcip_string_sink_set(a.null_mut("sink", sink.cast()), v)
                    };
                    if rc != rcip_result::Ok {
                        // Read at once: the rest of the refresh or invoke
                        // makes rcip calls that replace the message.
                        let m = rcip_last_error_message();
                        assert!(!m.is_null(), "{case_owned}: no error message after {rc:?}");
                    }
                    let _ = a.text("", "");
                    r2.set(Some(rc));
                }))
            });
            if avail {
                assert_eq!(rcip_host_refresh(fx.host()), rcip_result::Ok);
            } else {
                assert_eq!(
                    rcip_client_invoke(
                        fx.client(),
                        c"items.list".as_ptr(),
                        c"{}".as_ptr(),
                        ptr::null(),
                        ptr::null(),
                        Some(deliver),
                        ptr::null_mut(),
                        None,
                        ptr::null_mut()
                    ),
                    rcip_result::Ok
                );
                DELIVERED.with(|d| d.borrow_mut().clear());
            }
            Ok(result.get().expect("the sink job ran"))
        }
        "rcip_snapshot_json" | "rcip_snapshot_revision" | "rcip_snapshot_free" => {
            let mut s = ptr::null();
            assert_eq!(rcip_client_snapshot(fx.client(), &mut s), rcip_result::Ok);
            let fx = if a.settled() {
                rcip_runtime_free(fx.runtime);
                for b in fx.bindings {
                    rcip_binding_free(b);
                }
                None
            } else {
                Some(fx)
            };
            let h = a.null("snapshot", s);
            let r = match f {
                "rcip_snapshot_json" => Err(ptr_res(rcip_snapshot_json(h))),
                "rcip_snapshot_revision" => {
                    let rev = rcip_snapshot_revision(h);
                    let json: serde_json::Value =
                        serde_json::from_str(CStr::from_ptr(rcip_snapshot_json(s)).to_str().unwrap()).unwrap();
                    Err(if !h.is_null() && json["revision"] == rev {
                        "revision".into()
                    } else {
                        rev.to_string()
                    })
                }
                _ => {
                    rcip_snapshot_free(h);
                    Err("void".into())
                }
            };
            if f != "rcip_snapshot_free" || h.is_null() {
                rcip_snapshot_free(s);
            }
            let out = finish(f, case, r, followed, &a);
            if let Some(fx) = fx {
                fx.free();
            }
            return out;
        }
        "rcip_string_free" => {
            let mut s = ptr::null_mut();
            assert_eq!(rcip_runtime_stats(fx.runtime, &mut s), rcip_result::Ok);
            rcip_string_free(a.null_mut("string", s));
            if a.targets("string").is_some() {
                rcip_string_free(s);
            }
            Err("void".into())
        }
        "rcip_abi_version" => Err(if rcip_abi_version() == 100 {
            "RCIP_ABI_VERSION".into()
        } else {
            rcip_abi_version().to_string()
        }),
        "rcip_version" => Err(ptr_res(rcip_version())),
        other => panic!("no driver for {other} (add one, and its line in EXPECTED)"),
    };
    let out = finish(f, case, rc, followed, &a);
    fx.free();
    out
}

/// Checks the failure conventions and renders the answer.
unsafe fn finish(f: &str, case: &str, rc: Result<rcip_result, String>, followed: Option<String>, a: &Args) -> String {
    let head = match rc {
        Ok(rc) => {
            if rc != rcip_result::Ok {
                for &slot in &a.outs {
                    assert!(
                        (*slot).is_null(),
                        "{f} {case}: a pointer out-parameter is not NULL after {rc:?}"
                    );
                }
                assert_eq!(
                    RELEASED.with(|r| r.get()),
                    0,
                    "{f} {case}: user_data_free ran for a refused registration"
                );
                if !f.ends_with("_sink_set") && f != "rcip_availability_set" {
                    let m = rcip_last_error_message();
                    assert!(
                        !m.is_null() && !CStr::from_ptr(m).to_bytes().is_empty(),
                        "{f} {case}: no error message after {rc:?}"
                    );
                }
            }
            name(rc)
        }
        Err(v) => v,
    };
    for &slot in &a.outs {
        drop(Box::from_raw(slot));
    }
    match followed {
        Some(x) => format!("{head}/{x}"),
        None => head,
    }
}

#[test]
fn every_header_function_is_swept_with_every_generated_case() {
    let funcs = header_functions();
    assert!(funcs.len() >= 68, "read only {} functions from the header", funcs.len());
    let expected = expected();
    let mut problems = Vec::new();
    let mut total = 0;
    for f in &funcs {
        let Some(want) = expected.get(&f.name) else {
            problems.push(format!("{}: not covered (add a line to EXPECTED and a driver)", f.name));
            continue;
        };
        let generated = cases(f);
        for case in &generated {
            let Some(w) = want.get(case) else {
                problems.push(format!(
                    "{} {case}: generated from the header but not in EXPECTED",
                    f.name
                ));
                continue;
            };
            let got = unsafe { run(&f.name, case) };
            total += 1;
            if &got != w {
                problems.push(format!("{} {case}: expected {w}, got {got}", f.name));
            }
        }
        for case in want.keys() {
            if !generated.contains(case) {
                problems.push(format!(
                    "{} {case}: in EXPECTED but the header has no such case",
                    f.name
                ));
            }
        }
    }
    for name in expected.keys() {
        if !funcs.iter().any(|f| &f.name == name) {
            problems.push(format!("{name}: in EXPECTED but not in the header"));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems in {total} cases:\n{}",
        problems.len(),
        problems.join("\n")
    );
    eprintln!("boundary sweep: {} functions, {total} cases", funcs.len());
}
