//! An MCP server session over a runtime's consumer surface: the bridge that
//! lets any Model Context Protocol client (a desktop assistant, an IDE
//! agent, an agent framework) discover and invoke a host's capabilities,
//! without giving up an RCIP guarantee.
//!
//! The session is transport-agnostic: JSON-RPC 2.0 messages go in through
//! [`McpSession::receive`] and replies, requests and notifications come out
//! through an [`McpOutput`]; [`McpSession::serve`] and
//! [`McpSession::serve_stdio`] add the stdio transport (newline-delimited
//! messages). It implements MCP revision 2025-11-25:
//!
//! - lifecycle: `initialize` (any proposed revision is answered with
//!   2025-11-25; capabilities `{"tools": {"listChanged": true}}`),
//!   `notifications/initialized`, `ping`; any other method, such as a newer
//!   client's `server/discover`, is `-32601`, so such clients fall back;
//! - `tools/list` from the current snapshot (one tool per capability: name
//!   = capability id, annotations by effect, `_meta` with the RCIP effect,
//!   scopes, relevance, availability and snapshot revision), optionally
//!   filtered and paginated ([`McpOptions`]);
//! - `tools/call` through [`Client::invoke`](crate::runtime::Client::invoke)
//!   with the request's own cancellation token (`notifications/cancelled`
//!   cancels it); an unknown tool is `-32602`;
//! - `notifications/tools/list_changed` only when what `tools/list` returns
//!   changes, not on every revision;
//! - duplicate in-flight request ids are refused, malformed JSON-RPC gets
//!   the standard error codes.
//!
//! Only the consumer surface is used. No MCP method reaches the host
//! controls (binding, context, refresh, confirmation resolution): a
//! `confirmation_required` outcome becomes an error result naming the
//! confirmation and its expiry, which only the host can approve. As a host
//! opt-in ([`ConfirmationMode::Elicit`]) the session asks the MCP client's
//! user through `elicitation/create` and resolves the confirmation with the
//! answer through [`Host::resolve_confirmation`](crate::runtime::Host::resolve_confirmation);
//! a client that did not declare form elicitation never gets an approval.
//!
//! The mapping is documented in docs/MCP.md.

mod jsonrpc;
mod outbox;
mod session;
mod tools;

#[cfg(test)]
mod tests;

#[cfg(test)]
use jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
pub use session::McpSession;

use crate::runtime::Filter;
use serde_json::Value;

/// The MCP protocol revision the session implements.
pub const MCP_PROTOCOL_REVISION: &str = "2025-11-25";

/// The largest message the session reads, in bytes, unless
/// [`McpOptions::max_message_bytes`] says otherwise (16 MiB: the default
/// payload limit of 8 MiB plus room for the envelope and escapes). The C
/// ABI's `RCIP_MCP_DEFAULT_MAX_MESSAGE_BYTES`.
pub(crate) const MCP_DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Receives every message the session sends (responses, requests,
/// notifications), each a complete JSON-RPC message without a trailing
/// newline.
///
/// Called one message at a time (never concurrently), in order, on
/// whichever thread produced or is delivering messages, with no session
/// lock held. It may call [`McpSession::receive`] (that message's replies
/// are delivered after `send` returns).
pub trait McpOutput: Send + Sync {
    fn send(&self, message: &str);
}

impl<F: Fn(&str) + Send + Sync> McpOutput for F {
    fn send(&self, message: &str) {
        self(message)
    }
}

/// Who may approve a confirmation a tool call opens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConfirmationMode {
    /// Only the host (its own UI, through its host controller). The MCP
    /// client gets an error result naming the confirmation and its expiry.
    #[default]
    Host,
    /// Host opt-in: ask the MCP client's user with `elicitation/create`
    /// (form mode) and resolve the confirmation with the answer: accept
    /// approves, decline and cancel decline. A client without form
    /// elicitation is answered as in [`ConfirmationMode::Host`].
    Elicit,
}

/// How a session presents the runtime.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpOptions {
    /// Which capabilities `tools/list` offers (an `RcipCapabilityFilter`:
    /// `context: "current"` for the relevant ones, `availableOnly` for the
    /// available ones, `scopeId`, `effect`). Default: all. Calls are not
    /// filtered: the runtime decides, as for any consumer.
    pub filter: Filter,
    /// Who approves confirmations.
    pub confirmation: ConfirmationMode,
    /// Tools per `tools/list` page; `None` (default) lists all at once.
    pub page_size: Option<usize>,
    /// `serverInfo.name` (default: the catalog's application id).
    pub server_name: Option<String>,
    /// `serverInfo.version` (default: the application's version, else
    /// rcip's).
    pub server_version: Option<String>,
    /// `instructions` (default: the application's description).
    pub instructions: Option<String>,
    /// The largest message read, in bytes (default
    /// 16 MiB).
    pub max_message_bytes: Option<usize>,
}

impl McpOptions {
    /// Parses `{"filter"?: RcipCapabilityFilter, "confirmation"?: "host" |
    /// "elicit", "pageSize"?: 1..=1000, "serverName"?: string,
    /// "serverVersion"?: string, "instructions"?: string,
    /// "maxMessageBytes"?: integer >= 1024}`. An unknown key or a value of
    /// the wrong type is an error message.
    pub fn from_value(value: &Value) -> Result<McpOptions, String> {
        let Value::Object(map) = value else {
            return Err("the MCP options must be a JSON object".into());
        };
        let mut o = McpOptions::default();
        let string = |key: &str, v: &Value| -> Result<String, String> {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("/{key} must be a string"))
        };
        for (key, v) in map {
            match key.as_str() {
                "filter" => o.filter = Filter::from_value(v).map_err(|e| format!("/filter: {e}"))?,
                "confirmation" => {
                    o.confirmation = match v.as_str() {
                        Some("host") => ConfirmationMode::Host,
                        Some("elicit") => ConfirmationMode::Elicit,
                        _ => return Err("/confirmation must be \"host\" or \"elicit\"".into()),
                    }
                }
                "pageSize" => match v.as_u64() {
                    Some(n) if (1..=1000).contains(&n) => o.page_size = Some(n as usize),
                    _ => return Err("/pageSize must be an integer from 1 to 1000".into()),
                },
                "serverName" => o.server_name = Some(string(key, v)?),
                "serverVersion" => o.server_version = Some(string(key, v)?),
                "instructions" => o.instructions = Some(string(key, v)?),
                "maxMessageBytes" => match v.as_u64() {
                    Some(n) if n >= 1024 => o.max_message_bytes = Some(usize::try_from(n).unwrap_or(usize::MAX)),
                    _ => return Err("/maxMessageBytes must be an integer of at least 1024".into()),
                },
                other => {
                    return Err(format!(
                        "the MCP options have no field \"{other}\" (allowed: filter, confirmation, pageSize, \
                         serverName, serverVersion, instructions, maxMessageBytes)"
                    ))
                }
            }
        }
        Ok(o)
    }
}
