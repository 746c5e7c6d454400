//! The server as an OAuth 2.1 resource server (MCP 2026-07-28
//! "Authorization", which the 2025 revisions share for HTTP): every
//! request of either era carries `Authorization: Bearer <token>`; the
//! token is checked on its own each time (a session id is never a
//! credential); the Protected Resource Metadata document (RFC 9728) tells
//! clients where to get one.
//!
//! - Missing token: `401` with `WWW-Authenticate: Bearer
//!   resource_metadata="…"` (and `scope` when requests need some). An
//!   invalid, expired, not yet valid, foreign (`aud`, `iss`) or unverifiable
//!   token: `401` with `error="invalid_token"` and a description. A
//!   malformed `Authorization` header: `400` `error="invalid_request"`.
//!   Scopes the operation needs that the token lacks: `403`
//!   `error="insufficient_scope"` naming every scope it needs
//!   (RFC 6750 section 3).
//! - JWT access tokens are validated here ([`JwtOptions`]): keys from a
//!   JWKS (file or text, reloadable), the algorithm allow-list (never
//!   `none`; a key is only used with its own family, so an HMAC algorithm
//!   is never verified with a public key's bytes), `iss`, `aud` equal to
//!   the resource (RFC 8707), `exp` and `nbf` with a small leeway. Opaque
//!   tokens go to the host's [`TokenVerifier`] (introspection), on a
//!   worker thread.

use super::HttpOptions;
use crate::server::Principal;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use parking_lot::{Mutex, RwLock};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The longest access token read, in bytes (**rcip**): a longer one is
/// refused as invalid before anything is decoded.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Tokens whose checks are remembered (by their SHA-256), at most; the
/// table is emptied when full (**rcip**). A remembered token is still
/// checked against its `exp` on every use.
pub const TOKEN_CACHE_ENTRIES: usize = 4096;

/// Default of [`JwtOptions::leeway_seconds`]: clock skew allowed on `exp`
/// and `nbf`.
pub const DEFAULT_LEEWAY_SECONDS: u64 = 30;

/// The JWT algorithms accepted unless [`JwtOptions::algorithms`] says
/// otherwise: the asymmetric ones an authorization server publishes keys
/// for (HMAC algorithms only when listed, and then only with `oct` keys).
pub const DEFAULT_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// Where the keys that sign access tokens come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JwksSource {
    /// A JWK Set document (`{"keys": [...]}`) in a file, read at start and
    /// again whenever its modification time changes (checked about once a
    /// second, on a worker thread), so keys rotate without a restart; a
    /// file that no longer parses keeps the last good keys.
    File(PathBuf),
    /// A JWK Set document as text ([`McpHttpServer::set_jwks`](super::McpHttpServer::set_jwks)
    /// replaces it at run time).
    Text(String),
}

/// How JWT access tokens are validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtOptions {
    /// The signing keys.
    pub jwks: JwksSource,
    /// Accepted `iss` values; `None`: the
    /// [`authorization_servers`](AuthOptions::authorization_servers).
    pub issuers: Option<Vec<String>>,
    /// Accepted `alg` values (default [`DEFAULT_ALGORITHMS`]); `none` is
    /// never accepted.
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds (default
    /// [`DEFAULT_LEEWAY_SECONDS`], at most 300).
    pub leeway_seconds: u64,
    /// Claims copied into [`Principal::claims`] when the token has them
    /// (for example a tenant id).
    pub claims: Vec<String>,
}

impl JwtOptions {
    /// Keys from `jwks`, the default algorithms and leeway, issuers from
    /// the authorization servers, no claims kept.
    pub fn new(jwks: JwksSource) -> JwtOptions {
        JwtOptions {
            jwks,
            issuers: None,
            algorithms: DEFAULT_ALGORITHMS.iter().map(|a| a.to_string()).collect(),
            leeway_seconds: DEFAULT_LEEWAY_SECONDS,
            claims: Vec::new(),
        }
    }
}

/// Why the host's [`TokenVerifier`] refused a token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenRefusal {
    /// The token is not valid for this resource (unknown, revoked,
    /// expired, another audience): `401` `invalid_token` with this
    /// description.
    Invalid(String),
    /// The token could not be checked now (the introspection endpoint is
    /// down): `503` with `Retry-After`.
    Unavailable(String),
}

/// The host's check of opaque access tokens (RFC 7662 introspection, a
/// session store): called for a token the server has not checked before
/// (results are remembered until the principal's `expires_at`, at most an
/// hour, or for 60 seconds when it has none; a token past its
/// `expires_at` is refused as expired), on the server's control thread,
/// never an I/O thread, one check at a time beside session creation and
/// endings: keep it short (answer [`TokenRefusal::Unavailable`] when a
/// remote check times out). It must establish that the token was issued
/// for this resource (its audience). A panic answers `503`.
pub trait TokenVerifier: Send + Sync + 'static {
    /// The principal the token stands for, or why it is refused.
    fn verify(&self, token: &str) -> Result<Principal, TokenRefusal>;
}

impl<F> TokenVerifier for F
where
    F: Fn(&str) -> Result<Principal, TokenRefusal> + Send + Sync + 'static,
{
    fn verify(&self, token: &str) -> Result<Principal, TokenRefusal> {
        self(token)
    }
}

/// The verifier of a server whose options ask for one (`"verifier":
/// true`) before the host gave it
/// ([`McpHttpServer::set_token_verifier`](super::McpHttpServer::set_token_verifier)):
/// every token is unavailable (`503`).
struct NoVerifierYet;

impl TokenVerifier for NoVerifierYet {
    fn verify(&self, _: &str) -> Result<Principal, TokenRefusal> {
        Err(TokenRefusal::Unavailable("no token verifier is set yet".into()))
    }
}

/// How tokens are checked.
#[derive(Clone)]
pub enum TokenCheck {
    /// JWT access tokens, validated by the server.
    Jwt(JwtOptions),
    /// Opaque tokens, checked by the host.
    Verifier(Arc<dyn TokenVerifier>),
}

impl std::fmt::Debug for TokenCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenCheck::Jwt(j) => f.debug_tuple("Jwt").field(j).finish(),
            TokenCheck::Verifier(_) => f.write_str("Verifier(..)"),
        }
    }
}

impl PartialEq for TokenCheck {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (TokenCheck::Jwt(a), TokenCheck::Jwt(b)) => a == b,
            (TokenCheck::Verifier(a), TokenCheck::Verifier(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The server as a protected resource ([`HttpOptions::auth`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AuthOptions {
    /// The resource identifier: the canonical URI of the MCP endpoint as
    /// clients reach it (`https://mcp.example.com/mcp`; no fragment). It
    /// is the metadata's `resource` and the audience (`aud`) every token
    /// must name (RFC 8707), compared exactly.
    pub resource: String,
    /// The authorization servers' issuer URLs (the metadata's
    /// `authorization_servers`; at least one).
    pub authorization_servers: Vec<String>,
    /// The metadata's `scopes_supported` (never `offline_access`: MCP
    /// says a resource should not ask for refresh tokens).
    pub scopes_supported: Vec<String>,
    /// Scopes every request needs (default none).
    pub required_scopes: Vec<String>,
    /// Scopes a `tools/call` of a tool needs beyond
    /// [`required_scopes`](Self::required_scopes), by tool name.
    pub tool_scopes: BTreeMap<String, Vec<String>>,
    /// Scope hierarchy beyond the prefix rule of [`Principal::covers`]: a
    /// granted scope covers the scopes listed for it.
    pub scope_implies: BTreeMap<String, Vec<String>>,
    /// The metadata's `resource_documentation`, if any.
    pub resource_documentation: Option<String>,
    /// How tokens are checked.
    pub tokens: TokenCheck,
}

impl AuthOptions {
    /// Parses the `"auth"` object of the server options: `"resource"`,
    /// `"authorizationServers"` (strings, at least one),
    /// `"scopesSupported"`, `"requiredScopes"` (strings), `"toolScopes"`,
    /// `"scopeImplies"` (objects of string arrays),
    /// `"resourceDocumentation"`, and either the JWT options: `"jwksFile"`
    /// (a path) or `"jwks"` (a JWK Set object), `"issuers"`, `"algorithms"`,
    /// `"claims"` (strings), `"leewaySeconds"` (0 to 300); or `"verifier":
    /// true`, opaque tokens checked by the host's verifier (given after the
    /// server is made: C `rcip_mcp_server_set_token_verifier`, Python
    /// `set_token_verifier`, Rust
    /// [`set_token_verifier`](super::McpHttpServer::set_token_verifier);
    /// until then every token is `503`). An unknown key or a wrong type is
    /// an error naming it.
    pub fn from_value(value: &Value) -> Result<AuthOptions, String> {
        let Value::Object(map) = value else {
            return Err("/auth must be a JSON object".into());
        };
        let strings = |key: &str, v: &Value| -> Result<Vec<String>, String> {
            v.as_array()
                .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect())
                .ok_or_else(|| format!("/auth/{key} must be an array of strings"))
        };
        let table = |key: &str, v: &Value| -> Result<BTreeMap<String, Vec<String>>, String> {
            let Value::Object(m) = v else {
                return Err(format!("/auth/{key} must be an object of string arrays"));
            };
            m.iter()
                .map(|(k, v)| Ok((k.clone(), strings(&format!("{key}/{k}"), v)?)))
                .collect()
        };
        let mut resource = None;
        let mut servers = Vec::new();
        let mut o = AuthOptions {
            resource: String::new(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            tool_scopes: BTreeMap::new(),
            scope_implies: BTreeMap::new(),
            resource_documentation: None,
            tokens: TokenCheck::Jwt(JwtOptions::new(JwksSource::Text(String::new()))),
        };
        let mut jwks = None;
        let mut host_verifier = false;
        let mut jwt = JwtOptions::new(JwksSource::Text(String::new()));
        for (key, v) in map {
            match key.as_str() {
                "resource" => resource = Some(v.as_str().ok_or("/auth/resource must be a string")?.to_string()),
                "authorizationServers" => servers = strings(key, v)?,
                "scopesSupported" => o.scopes_supported = strings(key, v)?,
                "requiredScopes" => o.required_scopes = strings(key, v)?,
                "toolScopes" => o.tool_scopes = table(key, v)?,
                "scopeImplies" => o.scope_implies = table(key, v)?,
                "resourceDocumentation" => {
                    o.resource_documentation = Some(
                        v.as_str()
                            .ok_or("/auth/resourceDocumentation must be a string")?
                            .to_string(),
                    )
                }
                "jwksFile" => {
                    jwks = Some(JwksSource::File(PathBuf::from(
                        v.as_str().ok_or("/auth/jwksFile must be a path")?,
                    )))
                }
                "jwks" => {
                    if !v.is_object() {
                        return Err("/auth/jwks must be a JWK Set object".into());
                    }
                    jwks = Some(JwksSource::Text(v.to_string()))
                }
                "verifier" => host_verifier = v.as_bool().ok_or("/auth/verifier must be a boolean")?,
                "issuers" => jwt.issuers = Some(strings(key, v)?),
                "algorithms" => jwt.algorithms = strings(key, v)?,
                "claims" => jwt.claims = strings(key, v)?,
                "leewaySeconds" => {
                    jwt.leeway_seconds = v
                        .as_u64()
                        .filter(|n| *n <= 300)
                        .ok_or("/auth/leewaySeconds must be an integer from 0 to 300")?
                }
                other => {
                    return Err(format!(
                        "the auth options have no field \"{other}\" (resource, authorizationServers, \
                         scopesSupported, requiredScopes, toolScopes, scopeImplies, resourceDocumentation, \
                         jwksFile, jwks, verifier, issuers, algorithms, claims, leewaySeconds)"
                    ))
                }
            }
        }
        o.resource = resource.ok_or("/auth/resource is required (the endpoint's canonical URI)")?;
        o.authorization_servers = servers;
        o.tokens =
            match (jwks, host_verifier) {
                (Some(_), true) => return Err("/auth: \"verifier\" (opaque tokens) and JWT keys do not combine".into()),
                (None, true) => TokenCheck::Verifier(Arc::new(NoVerifierYet)),
                (Some(j), false) => {
                    jwt.jwks = j;
                    TokenCheck::Jwt(jwt)
                }
                (None, false) => return Err(
                    "/auth needs \"jwksFile\" or \"jwks\" (the keys that sign access tokens), or \"verifier\": true"
                        .into(),
                ),
            };
        Ok(o)
    }

    /// The checks of [`McpHttpServer::bind`](super::McpHttpServer::bind).
    fn check(&self) -> Result<(), String> {
        let r = &self.resource;
        if !(r.starts_with("https://") || r.starts_with("http://")) || r.contains('#') {
            return Err(format!(
                "auth.resource \"{r}\" must be an absolute http(s) URI without a fragment"
            ));
        }
        if self.authorization_servers.is_empty() {
            return Err("auth.authorizationServers must name at least one authorization server".into());
        }
        if self.scopes_supported.iter().any(|s| s == "offline_access") {
            return Err(
                "auth.scopesSupported must not list offline_access (refresh tokens are no resource's requirement)"
                    .into(),
            );
        }
        for scope in self.all_scopes() {
            if scope.is_empty() || scope.contains([' ', '"', '\\']) || !scope.is_ascii() {
                return Err(format!(
                    "auth: \"{scope}\" is not a scope (printable ASCII, no space, quote or backslash)"
                ));
            }
        }
        if let TokenCheck::Jwt(j) = &self.tokens {
            for alg in &j.algorithms {
                if alg.eq_ignore_ascii_case("none") {
                    return Err("auth.algorithms must not list \"none\"".into());
                }
                alg.parse::<Algorithm>()
                    .map_err(|_| format!("auth.algorithms: \"{alg}\" is not a JWS algorithm rcip verifies"))?;
            }
            if j.algorithms.is_empty() {
                return Err("auth.algorithms must list at least one algorithm".into());
            }
        }
        Ok(())
    }

    fn all_scopes(&self) -> impl Iterator<Item = &String> {
        self.scopes_supported
            .iter()
            .chain(&self.required_scopes)
            .chain(self.tool_scopes.values().flatten())
            .chain(self.scope_implies.keys())
            .chain(self.scope_implies.values().flatten())
    }
}

/// A refusal of the token check, as its HTTP answer.
#[derive(Debug)]
pub(crate) struct Challenge {
    /// 400, 401, 403 or 503.
    pub(crate) status: u16,
    /// The `WWW-Authenticate` value (none for a 503).
    pub(crate) www_authenticate: Option<String>,
    /// The JSON-RPC error message of the body.
    pub(crate) message: String,
    /// The reason, for counters and logs: `missing`, `malformed`,
    /// `invalid`, `expired`, `not_yet_valid`, `audience`, `issuer`,
    /// `algorithm`, `signature`, `unknown_key`, `scope`, `unavailable`.
    pub(crate) reason: &'static str,
}

/// One signing key of the JWK Set.
struct Key {
    kid: Option<String>,
    family: AlgorithmFamily,
    /// The JWK's own `alg`, when it names one.
    alg: Option<Algorithm>,
    key: DecodingKey,
}

/// The checked keys.
struct Keys {
    keys: Vec<Key>,
}

/// What a remembered token check gave.
#[derive(Clone)]
struct Remembered {
    principal: Arc<Principal>,
    /// Seconds since the epoch after which it is checked again.
    until: u64,
}

/// A server's token check, built from [`AuthOptions`] at bind.
pub(crate) struct Auth {
    pub(crate) options: AuthOptions,
    /// `WWW-Authenticate`'s `resource_metadata` value.
    pub(crate) metadata_url: String,
    /// The metadata document.
    pub(crate) metadata: String,
    keys: RwLock<Arc<Keys>>,
    /// The JWKS file and its last modification time, and when it was last
    /// looked at.
    file: Mutex<Option<(PathBuf, Option<SystemTime>, Instant)>>,
    cache: Mutex<HashMap<[u8; 32], Remembered>>,
    algorithms: Vec<Algorithm>,
    issuers: Vec<String>,
    /// Refusals by reason ([`Challenge::reason`]).
    refusals: Mutex<BTreeMap<&'static str, u64>>,
    /// The host's verifier ([`TokenCheck::Verifier`]), replaceable.
    verifier: RwLock<Option<Arc<dyn TokenVerifier>>>,
}

fn now_s() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

/// Parses a JWK Set into keys; every key must be one rcip verifies with.
fn parse_keys(text: &str) -> Result<Keys, String> {
    let set: jsonwebtoken::jwk::JwkSet =
        serde_json::from_str(text).map_err(|e| format!("the JWK Set does not parse: {e}"))?;
    let mut keys = Vec::new();
    for (i, jwk) in set.keys.iter().enumerate() {
        if matches!(
            jwk.common.public_key_use,
            Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
        ) {
            continue;
        }
        use jsonwebtoken::jwk::AlgorithmParameters as P;
        let family = match &jwk.algorithm {
            P::RSA(_) => AlgorithmFamily::Rsa,
            P::EllipticCurve(_) => AlgorithmFamily::Ec,
            P::OctetKeyPair(_) => AlgorithmFamily::Ed,
            P::OctetKey(_) => AlgorithmFamily::Hmac,
            _ => return Err(format!("key {i} is of a type rcip does not verify with")),
        };
        let alg = match &jwk.common.key_algorithm {
            Some(a) => Some(
                a.to_string()
                    .parse::<Algorithm>()
                    .map_err(|_| format!("key {i}: its alg {a} is not one rcip verifies with"))?,
            ),
            None => None,
        };
        if alg.is_some_and(|a| a.family() != family) {
            return Err(format!("key {i}: its alg does not belong to its key type"));
        }
        let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("key {i} is not usable: {e}"))?;
        keys.push(Key {
            kid: jwk.common.key_id.clone(),
            family,
            alg,
            key,
        });
    }
    Ok(Keys { keys })
}

/// A `WWW-Authenticate` parameter value: `"` and `\` cannot occur (scopes
/// and descriptions are checked or written by rcip), so it is quoted as is.
/// `text` as an RFC 6750 quoted parameter value: `"` and `\\` become `'`,
/// and what the `error_description` syntax does not allow (controls,
/// non-ASCII) becomes `?`, so a host's refusal text cannot break the header.
fn quoted(text: &str) -> String {
    let inner: String = text
        .chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            ' '..='~' => c,
            _ => '?',
        })
        .collect();
    format!("\"{inner}\"")
}

/// A host's refusal or unavailability text, cut to 256 bytes (at a
/// character boundary) before it reaches a client.
fn host_text(why: &str) -> &str {
    let mut end = why.len().min(256);
    while !why.is_char_boundary(end) {
        end -= 1;
    }
    &why[..end]
}

impl Auth {
    /// Checks `options` and loads the keys.
    pub(crate) fn new(options: AuthOptions) -> Result<Auth, String> {
        options.check()?;
        let (origin, path) = split_resource(&options.resource);
        let metadata_url = format!("{origin}/.well-known/oauth-protected-resource{path}");
        let mut doc = Map::new();
        doc.insert("resource".into(), Value::String(options.resource.clone()));
        doc.insert(
            "authorization_servers".into(),
            Value::from(options.authorization_servers.clone()),
        );
        if !options.scopes_supported.is_empty() {
            doc.insert("scopes_supported".into(), Value::from(options.scopes_supported.clone()));
        }
        doc.insert("bearer_methods_supported".into(), Value::from(vec!["header"]));
        if let Some(d) = &options.resource_documentation {
            doc.insert("resource_documentation".into(), Value::String(d.clone()));
        }
        let (keys, file, algorithms, issuers) = match &options.tokens {
            TokenCheck::Jwt(j) => {
                let (text, file) = match &j.jwks {
                    JwksSource::Text(t) => (t.clone(), None),
                    JwksSource::File(p) => {
                        let modified = std::fs::metadata(p).and_then(|m| m.modified()).ok();
                        let t = std::fs::read_to_string(p)
                            .map_err(|e| format!("the JWKS file {} cannot be read: {e}", p.display()))?;
                        (t, Some((p.clone(), modified, Instant::now())))
                    }
                };
                let keys = parse_keys(&text)?;
                let algorithms: Vec<Algorithm> = j.algorithms.iter().filter_map(|a| a.parse().ok()).collect();
                let issuers = j
                    .issuers
                    .clone()
                    .unwrap_or_else(|| options.authorization_servers.clone());
                (keys, file, algorithms, issuers)
            }
            TokenCheck::Verifier(_) => (Keys { keys: Vec::new() }, None, Vec::new(), Vec::new()),
        };
        Ok(Auth {
            metadata_url,
            metadata: Value::Object(doc).to_string(),
            keys: RwLock::new(Arc::new(keys)),
            file: Mutex::new(file),
            cache: Mutex::new(HashMap::new()),
            algorithms,
            issuers,
            refusals: Mutex::new(BTreeMap::new()),
            verifier: RwLock::new(match &options.tokens {
                TokenCheck::Verifier(v) => Some(v.clone()),
                TokenCheck::Jwt(_) => None,
            }),
            options,
        })
    }

    /// Replaces the host's verifier (remembered checks are dropped);
    /// `Err` when tokens are JWTs.
    pub(crate) fn set_verifier(&self, verifier: Arc<dyn TokenVerifier>) -> Result<(), String> {
        let mut slot = self.verifier.write();
        let Some(current) = slot.as_mut() else {
            return Err("this server validates JWT access tokens; a token verifier needs \"verifier\": true".into());
        };
        *current = verifier;
        self.cache.lock().clear();
        Ok(())
    }

    /// Counts one refusal.
    pub(crate) fn count_refusal(&self, reason: &'static str) {
        *self.refusals.lock().entry(reason).or_default() += 1;
    }

    /// The refusals so far, by reason.
    pub(crate) fn refusals(&self) -> BTreeMap<&'static str, u64> {
        self.refusals.lock().clone()
    }

    /// Replaces the keys with a JWK Set's (remembered checks are dropped).
    pub(crate) fn set_keys(&self, text: &str) -> Result<(), String> {
        let keys = parse_keys(text)?;
        *self.keys.write() = Arc::new(keys);
        self.cache.lock().clear();
        Ok(())
    }

    /// Reads the JWKS file again when its modification time changed (at
    /// most once a second; on a worker). A file that does not parse keeps
    /// the keys in use.
    pub(crate) fn refresh(&self) {
        let path = {
            let mut file = self.file.lock();
            let Some((path, modified, checked)) = file.as_mut() else {
                return;
            };
            if checked.elapsed() < Duration::from_secs(1) {
                return;
            }
            *checked = Instant::now();
            let now = std::fs::metadata(&*path).and_then(|m| m.modified()).ok();
            if now == *modified {
                return;
            }
            *modified = now;
            path.clone()
        };
        if let Ok(text) = std::fs::read_to_string(&path) {
            let _ = self.set_keys(&text);
        }
    }

    /// The token of the request's `Authorization` header, or its refusal.
    pub(crate) fn token<'a>(&self, values: &[&'a [u8]]) -> Result<&'a str, Challenge> {
        let value = match values {
            [] => return Err(self.missing()),
            [one] => *one,
            _ => return Err(self.malformed("more than one Authorization header")),
        };
        let Ok(text) = std::str::from_utf8(value) else {
            return Err(self.malformed("the Authorization header is not text"));
        };
        let (scheme, rest) = text.split_once(' ').unwrap_or((text, ""));
        if !scheme.eq_ignore_ascii_case("bearer") {
            // Another scheme is no credential of this server.
            return Err(self.missing());
        }
        let token = rest.trim_matches(' ');
        if token.is_empty() || token.contains(' ') {
            return Err(self.malformed("the Authorization header is not \"Bearer <token>\""));
        }
        if token.len() > MAX_TOKEN_BYTES {
            return Err(self.invalid("invalid", "the access token is too long"));
        }
        Ok(token)
    }

    /// True when the host checks tokens (a worker runs the check).
    pub(crate) fn needs_worker(&self) -> bool {
        matches!(self.options.tokens, TokenCheck::Verifier(_))
    }

    /// Checks `token` (remembered checks first).
    pub(crate) fn verify(&self, token: &str) -> Result<Arc<Principal>, Challenge> {
        use sha2::Digest;
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        let now = now_s();
        if let Some(r) = self.cache.lock().get(&digest) {
            if now <= r.until {
                return Ok(r.principal.clone());
            }
        }
        let (principal, until) = match &self.options.tokens {
            TokenCheck::Jwt(j) => {
                let p = self.verify_jwt(token, j)?;
                let until = p.expires_at.unwrap_or(now).saturating_add(j.leeway_seconds);
                (p, until)
            }
            TokenCheck::Verifier(_) => {
                let Some(v) = self.verifier.read().clone() else {
                    return Err(unavailable("no token verifier is set"));
                };
                let p = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| v.verify(token))) {
                    Ok(Ok(p)) => p,
                    Ok(Err(TokenRefusal::Invalid(why))) => return Err(self.invalid("invalid", host_text(&why))),
                    Ok(Err(TokenRefusal::Unavailable(why))) => return Err(unavailable(host_text(&why))),
                    Err(_) => return Err(unavailable("the token verifier panicked")),
                };
                if p.expires_at.is_some_and(|e| e < now) {
                    return Err(self.invalid("expired", "the access token expired"));
                }
                let until = p.expires_at.unwrap_or(now + 60).min(now + 3600);
                (p, until)
            }
        };
        let principal = Arc::new(principal);
        let mut cache = self.cache.lock();
        if cache.len() >= TOKEN_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(
            digest,
            Remembered {
                principal: principal.clone(),
                until,
            },
        );
        Ok(principal)
    }

    fn verify_jwt(&self, token: &str, j: &JwtOptions) -> Result<Principal, Challenge> {
        use jsonwebtoken::errors::ErrorKind as K;
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| self.invalid("invalid", "the access token is not a JWT this server accepts"))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(self.invalid("algorithm", "the access token's algorithm is not accepted"));
        }
        let keys = self.keys.read().clone();
        let family = header.alg.family();
        let usable = |k: &&Key| k.family == family && k.alg.is_none_or(|a| a == header.alg);
        let key = match &header.kid {
            Some(kid) => keys.keys.iter().filter(usable).find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let mut candidates = keys.keys.iter().filter(usable);
                match (candidates.next(), candidates.next()) {
                    (Some(k), None) => Some(k),
                    _ => None,
                }
            }
        };
        let Some(key) = key else {
            return Err(self.invalid(
                "unknown_key",
                "the access token is signed by a key this server does not know",
            ));
        };
        let mut validation = jsonwebtoken::Validation::new(header.alg);
        validation.leeway = j.leeway_seconds;
        validation.validate_nbf = true;
        validation.validate_aud = true;
        validation.set_audience(&[&self.options.resource]);
        validation.set_issuer(&self.issuers);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation).map_err(|e| match e.kind() {
                K::ExpiredSignature => self.invalid("expired", "the access token expired"),
                K::ImmatureSignature => self.invalid("not_yet_valid", "the access token is not valid yet"),
                K::InvalidAudience => self.invalid("audience", "the access token was issued for another resource"),
                K::InvalidIssuer => self.invalid(
                    "issuer",
                    "the access token is from an issuer this server does not accept",
                ),
                K::InvalidSignature => self.invalid("signature", "the access token's signature does not verify"),
                K::InvalidAlgorithm => self.invalid("algorithm", "the access token's algorithm does not fit its key"),
                K::MissingRequiredClaim(c) => self.invalid("invalid", &format!("the access token has no {c} claim")),
                _ => self.invalid("invalid", "the access token is not valid"),
            })?;
        let claims = data.claims;
        let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_string);
        let issuer = text("iss").unwrap_or_default();
        let Some(subject) = text("sub").filter(|s| !s.is_empty()) else {
            return Err(self.invalid("invalid", "the access token's sub claim is not a string"));
        };
        let mut scopes: Vec<String> = Vec::new();
        let mut add = |s: &str| {
            if !s.is_empty() && !scopes.iter().any(|x| x == s) {
                scopes.push(s.to_string());
            }
        };
        match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(s)), _) => s.split(' ').for_each(&mut add),
            (_, Some(Value::String(s))) => s.split(' ').for_each(&mut add),
            (_, Some(Value::Array(a))) => a.iter().filter_map(Value::as_str).for_each(&mut add),
            _ => {}
        }
        let kept = j
            .claims
            .iter()
            .filter_map(|c| claims.get(c).map(|v| (c.clone(), v.clone())))
            .collect();
        Ok(Principal {
            issuer,
            subject,
            scopes,
            claims: kept,
            expires_at: claims.get("exp").and_then(Value::as_u64),
        })
    }

    /// The scopes an operation needs that `principal` lacks (all of them
    /// when it lacks any, so the challenge names every scope needed).
    pub(crate) fn check_scopes(&self, principal: &Principal, tool: Option<&str>) -> Result<(), Challenge> {
        let needed: Vec<&String> = self
            .options
            .required_scopes
            .iter()
            .chain(tool.and_then(|t| self.options.tool_scopes.get(t)).into_iter().flatten())
            .collect();
        if needed.iter().all(|s| principal.covers(s, &self.options.scope_implies)) {
            return Ok(());
        }
        let mut all: Vec<&str> = Vec::new();
        for s in needed {
            if !all.contains(&s.as_str()) {
                all.push(s);
            }
        }
        let scope = all.join(" ");
        let description = match tool {
            Some(t) => format!("calling {t} needs the scopes {scope}"),
            None => format!("this server needs the scopes {scope}"),
        };
        Err(Challenge {
            status: 403,
            www_authenticate: Some(format!(
                "Bearer error=\"insufficient_scope\", scope={}, resource_metadata={}, error_description={}",
                quoted(&scope),
                quoted(&self.metadata_url),
                quoted(&description)
            )),
            message: format!("Forbidden: {description} (insufficient_scope)"),
            reason: "scope",
        })
    }

    fn scope_param(&self) -> String {
        if self.options.required_scopes.is_empty() {
            String::new()
        } else {
            format!(", scope={}", quoted(&self.options.required_scopes.join(" ")))
        }
    }

    fn missing(&self) -> Challenge {
        Challenge {
            status: 401,
            www_authenticate: Some(format!(
                "Bearer resource_metadata={}{}",
                quoted(&self.metadata_url),
                self.scope_param()
            )),
            message: "Unauthorized: this server needs an access token (Authorization: Bearer <token>)".into(),
            reason: "missing",
        }
    }

    fn malformed(&self, why: &str) -> Challenge {
        Challenge {
            status: 400,
            www_authenticate: Some(format!(
                "Bearer error=\"invalid_request\", error_description={}, resource_metadata={}",
                quoted(why),
                quoted(&self.metadata_url)
            )),
            message: format!("Bad Request: {why}"),
            reason: "malformed",
        }
    }

    fn invalid(&self, reason: &'static str, why: &str) -> Challenge {
        Challenge {
            status: 401,
            www_authenticate: Some(format!(
                "Bearer error=\"invalid_token\", error_description={}, resource_metadata={}{}",
                quoted(why),
                quoted(&self.metadata_url),
                self.scope_param()
            )),
            message: format!("Unauthorized: {why}"),
            reason,
        }
    }

    /// The metadata paths this server answers: the path-inserted form of
    /// the resource (RFC 9728 section 3.1) and the root one.
    pub(crate) fn is_metadata_path(&self, path: &str) -> bool {
        let (_, resource_path) = split_resource(&self.options.resource);
        path == "/.well-known/oauth-protected-resource"
            || path.strip_prefix("/.well-known/oauth-protected-resource") == Some(resource_path)
    }
}

fn unavailable(why: &str) -> Challenge {
    Challenge {
        status: 503,
        www_authenticate: None,
        message: format!("Service Unavailable: the access token could not be checked ({why}); retry later"),
        reason: "unavailable",
    }
}

/// `https://host:port/path` → (`https://host:port`, `/path`); the path
/// without a trailing `/` (empty for the root).
fn split_resource(resource: &str) -> (&str, &str) {
    let after_scheme = resource.find("://").map_or(0, |i| i + 3);
    let path_start = resource[after_scheme..]
        .find(['/', '?'])
        .map_or(resource.len(), |i| after_scheme + i);
    let path = resource[path_start..].split('?').next().unwrap_or("");
    (&resource[..path_start], path.trim_end_matches('/'))
}

/// The checks of [`HttpOptions`] about authorization at bind: a server
/// reachable beyond loopback needs it unless
/// [`HttpOptions::allow_unauthenticated`] says so.
pub(crate) fn check_exposure(options: &HttpOptions, local: Option<std::net::SocketAddr>) -> Result<(), String> {
    let exposed = local.is_some_and(|a| !a.ip().is_loopback());
    if exposed && options.auth.is_none() && !options.allow_unauthenticated {
        return Err(format!(
            "refusing to serve MCP on {} without authorization: configure auth (an OAuth resource server: \
             docs/MCP.md, \"Authorization\"), bind a loopback address, or set allowUnauthenticated when \
             something in front already authenticates every request",
            local.map(|a| a.to_string()).unwrap_or_default()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_split_into_origin_and_path() {
        assert_eq!(
            split_resource("https://mcp.example.com/mcp"),
            ("https://mcp.example.com", "/mcp")
        );
        assert_eq!(
            split_resource("https://mcp.example.com"),
            ("https://mcp.example.com", "")
        );
        assert_eq!(
            split_resource("http://127.0.0.1:8080/a/b/"),
            ("http://127.0.0.1:8080", "/a/b")
        );
    }

    #[test]
    fn broader_scopes_cover_narrower_ones() {
        let p = Principal {
            issuer: "i".into(),
            subject: "s".into(),
            scopes: vec!["files".into(), "notes:read".into(), "admin".into()],
            claims: Map::new(),
            expires_at: None,
        };
        let mut implies = BTreeMap::new();
        assert!(p.covers("files:write", &implies));
        assert!(p.covers("files.read", &implies));
        assert!(p.covers("notes:read", &implies));
        assert!(!p.covers("notes:write", &implies));
        assert!(!p.covers("filesystem", &implies), "a prefix only counts at a boundary");
        assert!(!p.covers("tickets:write", &implies));
        implies.insert("admin".to_string(), vec!["tickets:write".to_string()]);
        assert!(p.covers("tickets:write", &implies));
        assert_eq!(p.key(), "i s");
    }
}
