//! What a host gives a server and gets from it, whatever the transport:
//! the [`SessionFactory`] that builds each session's runtime holder (a
//! [`SessionRuntime`]) from a [`SessionRequest`], and [`SessionInfo`], a
//! live session as the host sees it.

use rcip::runtime::Runtime;
use serde_json::{json, Value};

/// How long the server keeps an ended session's runtime holder after the
/// session ended, at least, in milliseconds: callbacks of the runtime that
/// were running when it ended may still reach it through the host's own
/// pointers (the C views). It goes then, on a worker, or with the server.
pub const SESSION_RETIRE_MS: u64 = 5000;

/// What a session's runtime is held by: the runtime, and what happens
/// when the session ends. The server closes the runtime when the session
/// ends (DELETE, idle expiry, shutdown), then calls
/// [`session_ended`](Self::session_ended) once, then drops its reference;
/// the value itself goes when the last reference does (a host thread may
/// still hold one from a server's `session` accessor: its calls then
/// answer `Closed`).
pub trait SessionRuntime: Send + Sync + 'static {
    /// The session's runtime (built from the server's catalog).
    fn runtime(&self) -> &Runtime;
    /// Called once after the runtime was closed, on a worker thread or the
    /// thread that shuts the server down, with no lock held.
    fn session_ended(&self) {}
    /// Who a stateless request's runtime serves, as the factory
    /// authenticated it from the forwarded headers (`None`, the default:
    /// nobody in particular): the principal its confirmations'
    /// `requestState` is bound to ([`McpSession::set_principal`](crate::McpSession::set_principal)). Called
    /// once per stateless request, after the factory built it.
    fn principal(&self) -> Option<String> {
        None
    }
}

impl SessionRuntime for Runtime {
    fn runtime(&self) -> &Runtime {
        self
    }
}

/// What the session factory is told about a new session, or about a
/// stateless (2026-07-28) request that gets a runtime of its own.
#[derive(Debug)]
pub struct SessionRequest<'a> {
    /// The id the session will have. For a stateless request:
    /// `stateless-` and 32 hex digits, an id internal to the server (never
    /// sent to the client, not in a server's session list); the runtime
    /// lives for that one request.
    pub session_id: &'a str,
    /// The `initialize` request's params (`protocolVersion`,
    /// `capabilities`, `clientInfo`, ...). For a stateless request they are
    /// made from its `_meta`: `{"protocolVersion": "2026-07-28",
    /// "capabilities": <clientCapabilities>, "clientInfo"?: <clientInfo>,
    /// "_meta": <the whole _meta>}`, so [`client_name`](Self::client_name)
    /// works for both.
    pub initialize_params: &'a Value,
    /// The request headers the transport forwards (HTTP:
    /// `HttpOptions::forward_headers`) that the request had, as
    /// (lower-case name, value).
    pub headers: &'a [(String, String)],
    /// Who the request acts for, when the server checks access tokens
    /// (`HttpOptions::auth`); `None` without authorization. A legacy
    /// session stays bound to it: a request of another principal (or of
    /// none) never reaches the session.
    pub principal: Option<&'a Principal>,
}

impl SessionRequest<'_> {
    /// `clientInfo.name` of the `initialize` params.
    pub fn client_name(&self) -> Option<&str> {
        self.initialize_params
            .pointer("/clientInfo/name")
            .and_then(Value::as_str)
    }

    /// The value of forwarded header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Builds each session's runtime. Called on a worker thread (never an
/// I/O thread), possibly concurrently with itself, once per `initialize`
/// without a session id and once per stateless request. An `Err` answers
/// that request with `-32603` (the message is included) and creates no
/// session.
pub trait SessionFactory<O>: Send + Sync + 'static {
    /// The session's runtime (or whatever `O` owns it), or the message of
    /// the refusal.
    fn create(&self, request: &SessionRequest<'_>) -> Result<O, String>;
}

impl<O, F> SessionFactory<O> for F
where
    F: Fn(&SessionRequest<'_>) -> Result<O, String> + Send + Sync + 'static,
{
    fn create(&self, request: &SessionRequest<'_>) -> Result<O, String> {
        self(request)
    }
}

/// The longest text the server keeps from a client for the life of a
/// session, in bytes: each of `clientInfo`'s `name`, `version` and
/// `title`, and the proposed protocol version, in [`SessionInfo`]
/// (**rcip**: MCP sets no bound; a client's text must not cost the server
/// memory beyond its request).
pub const CLIENT_TEXT_MAX_BYTES: usize = 256;

/// A live session as the host sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    /// The session id (`Mcp-Session-Id`) the server issued.
    pub session_id: String,
    /// `clientInfo` of its `initialize` as kept for the session's life:
    /// `{"name"?, "version"?, "title"?}`, the fields that were strings,
    /// each at most [`CLIENT_TEXT_MAX_BYTES`] (longer ones cut at a
    /// character boundary); `{}` when absent. The whole `initialize` params
    /// reach only the [`SessionFactory`] ([`SessionRequest`]), during the
    /// call.
    pub client_info: Value,
    /// The protocol revision its client proposed (at most
    /// [`CLIENT_TEXT_MAX_BYTES`], cut like `client_info`'s fields).
    pub protocol_version: String,
    /// Notifications dropped for this session because a queue or a replay
    /// buffer was full.
    pub dropped_notifications: u64,
    /// Content blocks replaced by a text note in this session's results
    /// (**rcip**, [`McpSession::content_replaced`](crate::McpSession::content_replaced)).
    pub content_replaced: u64,
}

impl SessionInfo {
    /// `{"sessionId", "clientInfo", "protocolVersion",
    /// "droppedNotifications", "contentReplaced"}`.
    pub fn to_value(&self) -> Value {
        json!({
            "sessionId": self.session_id,
            "clientInfo": self.client_info,
            "protocolVersion": self.protocol_version,
            "droppedNotifications": self.dropped_notifications,
            "contentReplaced": self.content_replaced,
        })
    }
}

/// Who an authenticated request acts for (**rcip** over MCP 2026-07-28
/// "Authorization"): what the server's token check (a JWT it validated,
/// or the host's verifier for opaque tokens) established. It reaches the
/// [`SessionFactory`] ([`SessionRequest::principal`]), binds a legacy
/// session to whoever opened it, and is the key of the per-principal
/// limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The token's issuer (`iss`).
    pub issuer: String,
    /// The subject (`sub`): who the client acts for.
    pub subject: String,
    /// The scopes the token grants (`scope`, space-separated, or `scp`),
    /// in the token's order, without duplicates.
    pub scopes: Vec<String>,
    /// The claims the server was told to keep (`claims` of the JWT
    /// options, e.g. a tenant), by name, as the token had them.
    pub claims: serde_json::Map<String, Value>,
    /// When the token expires (`exp`), in seconds since the Unix epoch;
    /// `None` when it does not say.
    pub expires_at: Option<u64>,
}

impl Principal {
    /// `{"issuer", "subject", "scopes": [...], "claims": {...},
    /// "expiresAt": <seconds since the epoch> | null}`: the shape the C
    /// ABI (`rcip_mcp_session_setup_principal`) and Python
    /// (`SessionSetup.principal`) give hosts.
    pub fn to_value(&self) -> Value {
        serde_json::json!({
            "issuer": self.issuer,
            "subject": self.subject,
            "scopes": self.scopes,
            "claims": self.claims,
            "expiresAt": self.expires_at,
        })
    }

    /// Reads a principal a host's token verifier gave as JSON (C
    /// `rcip_mcp_token_callback`, Python `token_verifier`): the shape of
    /// [`to_value`](Self::to_value), where `issuer` and `subject` are
    /// required non-empty strings without spaces or control characters
    /// (at most 1024 bytes each), and `scopes` (strings without spaces,
    /// duplicates dropped), `claims` (an object) and `expiresAt`
    /// (seconds since the Unix epoch, or null) may be left out. Another
    /// field is an error naming it, so a misspelt `expiresAt` does not
    /// make a token valid forever.
    pub fn from_value(value: &Value) -> Result<Principal, String> {
        let Value::Object(map) = value else {
            return Err("a principal is a JSON object {\"issuer\", \"subject\", ...}".into());
        };
        let name = |key: &str| -> Result<String, String> {
            match map.get(key) {
                Some(Value::String(s))
                    if !s.is_empty() && s.len() <= 1024 && !s.chars().any(|c| c == ' ' || c.is_control()) =>
                {
                    Ok(s.clone())
                }
                Some(_) => Err(format!(
                    "the principal's \"{key}\" must be a non-empty string of at most 1024 bytes without spaces or control characters"
                )),
                None => Err(format!("the principal needs \"{key}\"")),
            }
        };
        let mut p = Principal {
            issuer: name("issuer")?,
            subject: name("subject")?,
            scopes: Vec::new(),
            claims: serde_json::Map::new(),
            expires_at: None,
        };
        for (key, v) in map {
            match key.as_str() {
                "issuer" | "subject" => {}
                "scopes" => {
                    let Value::Array(items) = v else {
                        return Err("the principal's \"scopes\" must be an array of strings".into());
                    };
                    for item in items {
                        match item.as_str() {
                            Some(s) if !s.is_empty() && !s.chars().any(|c| c == ' ' || c.is_control()) => {
                                if !p.scopes.iter().any(|x| x == s) {
                                    p.scopes.push(s.to_string());
                                }
                            }
                            _ => return Err("each of the principal's \"scopes\" must be a non-empty string without spaces".into()),
                        }
                    }
                }
                "claims" => match v {
                    Value::Object(c) => p.claims = c.clone(),
                    _ => return Err("the principal's \"claims\" must be an object".into()),
                },
                "expiresAt" => {
                    p.expires_at = match v {
                        Value::Null => None,
                        v => Some(v.as_u64().ok_or("the principal's \"expiresAt\" must be seconds since the Unix epoch (an unsigned integer) or null")?),
                    }
                }
                other => {
                    return Err(format!(
                        "a principal has no field \"{other}\" (issuer, subject, scopes, claims, expiresAt)"
                    ))
                }
            }
        }
        Ok(p)
    }

    /// The principal's identity as one text, `<issuer> <subject>` (a
    /// space never occurs in an issuer URL): what a session and a
    /// request's `requestState` are bound to.
    pub fn key(&self) -> String {
        format!("{} {}", self.issuer, self.subject)
    }

    /// True when the granted scopes cover `scope`: the scope itself, or a
    /// broader one (MCP: "a broader scope implies narrower ones"). A
    /// broader scope is a prefix ending at a `:` or `.` boundary
    /// (`files` covers `files:read` and `files:read:own`; `files:read`
    /// does not cover `files:write`), or a scope that `implies` lists as
    /// covering it.
    pub fn covers(&self, scope: &str, implies: &std::collections::BTreeMap<String, Vec<String>>) -> bool {
        self.scopes.iter().any(|granted| {
            granted == scope
                || scope
                    .strip_prefix(granted.as_str())
                    .is_some_and(|rest| rest.starts_with([':', '.']))
                || implies
                    .get(granted)
                    .is_some_and(|narrower| narrower.iter().any(|n| n == scope))
        })
    }
}
